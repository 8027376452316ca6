//! File-system access for the storage engine.
//!
//! The engine needs only a handful of operations: create a file and append to it, read any
//! range of a finished file, rename atomically, delete, list a directory, and make all of it
//! durable (`fdatasync` on files, `fsync` on directories so renames and creations survive a
//! crash). Keeping the surface this small keeps fault-injecting and simulated
//! implementations honest.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::Path;
use std::sync::Arc;

use crate::direct::{AlignedBuf, DirectWritable, ALIGN};

/// A file being written from start to end.
pub trait WritableFile: Send + Sync {
    /// Appends all of `buf`. On error some prefix of `buf` may have reached the file.
    fn append(&mut self, buf: &[u8]) -> io::Result<()>;
    /// Makes every appended byte durable (`fdatasync`).
    fn sync_data(&mut self) -> io::Result<()>;
    /// Bytes appended so far.
    fn len(&self) -> u64;
    /// Whether nothing was appended yet.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A finished file read at arbitrary offsets, shared by many readers.
pub trait RandomAccessFile: Send + Sync {
    /// Fills `buf` from `offset`; a read past the end is an `UnexpectedEof` error.
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()>;
    /// The file's length in bytes.
    fn len(&self) -> u64;
    /// Whether the file is empty.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The file-system operations the engine uses.
pub trait Fs: Send + Sync + 'static {
    /// Creates (or truncates) a file for appending.
    fn create(&self, path: &Path) -> io::Result<Box<dyn WritableFile>>;
    /// Creates (or truncates) a file for appending with O_DIRECT where the file system
    /// supports it: appends bypass the page cache (see `direct`); elsewhere, and by
    /// default, the same as [`Fs::create`].
    fn create_direct(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        self.create(path)
    }
    /// Opens a file for random reads; `direct` asks for O_DIRECT where the file system
    /// supports it (reads then bypass the page cache), and silently falls back otherwise.
    fn open_read(&self, path: &Path, direct: bool) -> io::Result<Arc<dyn RandomAccessFile>>;
    /// Reads a whole (small) file.
    fn read_all(&self, path: &Path) -> io::Result<Vec<u8>>;
    /// Atomically renames `from` to `to`, replacing `to`.
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()>;
    /// Deletes a file.
    fn remove(&self, path: &Path) -> io::Result<()>;
    /// Names (not paths) of the entries of a directory.
    fn list(&self, dir: &Path) -> io::Result<Vec<String>>;
    /// Creates a directory and its parents.
    fn create_dir_all(&self, dir: &Path) -> io::Result<()>;
    /// Makes a directory's entries (creations, renames, deletions) durable.
    fn sync_dir(&self, dir: &Path) -> io::Result<()>;
    /// Whether a path exists.
    fn exists(&self, path: &Path) -> bool;
    /// Takes an exclusive advisory lock on `path` (created if absent), held until the
    /// returned guard drops; fails if another process or handle holds it.
    fn lock(&self, path: &Path) -> io::Result<Box<dyn std::any::Any + Send + Sync>>;
    /// Makes `to` a second name of the file `from` (a hard link: no bytes are copied, and
    /// the content lives until both names are gone). The default refuses.
    fn hard_link(&self, from: &Path, to: &Path) -> io::Result<()> {
        let _ = (from, to);
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "this file system has no hard links",
        ))
    }
}

/// Replaces `path` with `bytes` atomically and durably: `<path>.tmp` is written and synced,
/// renamed over `path`, and the directory synced. A crash leaves the old file or the new
/// one (and perhaps the temporary, for the owner to remove at its next open). The error
/// names the step that failed.
pub fn write_atomically(fs: &dyn Fs, path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut tmp = path.as_os_str().to_os_string();
    tmp.push(".tmp");
    let tmp = std::path::PathBuf::from(tmp);
    let step = |what: &str, p: &Path, e: io::Error| {
        io::Error::new(e.kind(), format!("{what} {}: {e}", p.display()))
    };
    let mut f = fs.create(&tmp).map_err(|e| step("creating", &tmp, e))?;
    f.append(bytes)
        .and_then(|()| f.sync_data())
        .map_err(|e| step("writing", &tmp, e))?;
    drop(f);
    fs.rename(&tmp, path)
        .map_err(|e| step("renaming", &tmp, e))?;
    let dir = path.parent().unwrap_or(Path::new("."));
    fs.sync_dir(dir).map_err(|e| step("syncing", dir, e))
}

/// Removes `path` if it exists and syncs its directory, so the removal survives a power
/// loss.
pub fn remove_durably(fs: &dyn Fs, path: &Path) -> io::Result<()> {
    if !fs.exists(path) {
        return Ok(());
    }
    fs.remove(path)
        .map_err(|e| io::Error::new(e.kind(), format!("removing {}: {e}", path.display())))?;
    let dir = path.parent().unwrap_or(Path::new("."));
    fs.sync_dir(dir)
        .map_err(|e| io::Error::new(e.kind(), format!("syncing {}: {e}", dir.display())))
}

/// The real file system.
#[derive(Debug, Default, Clone, Copy)]
pub struct RealFs;

struct RealWritable {
    file: File,
    len: u64,
}

impl WritableFile for RealWritable {
    fn append(&mut self, buf: &[u8]) -> io::Result<()> {
        // Count what reached the file even on error: a partial append is visible on disk.
        let mut rest = buf;
        while !rest.is_empty() {
            match self.file.write(rest) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => {
                    self.len += n as u64;
                    rest = rest.get(n..).unwrap_or_default();
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    fn sync_data(&mut self) -> io::Result<()> {
        self.file.sync_data()
    }

    fn len(&self) -> u64 {
        self.len
    }
}

/// A [`WritableFile`] that gathers appends in memory and hands them to the file `cap`
/// bytes at a time (and at every sync): a table written block by block then costs one
/// `write` per `cap` bytes instead of one or two per 4 KiB block (RocksDB's
/// `writable_file_max_buffer_size`). Appends not yet handed on are lost with the process,
/// as unsynced bytes are anyway; [`WritableFile::len`] counts them.
pub struct BufferedWritable {
    inner: Box<dyn WritableFile>,
    buf: Vec<u8>,
    cap: usize,
}

impl BufferedWritable {
    /// Buffers appends to `inner` up to `cap` bytes.
    pub fn new(inner: Box<dyn WritableFile>, cap: usize) -> Self {
        BufferedWritable {
            inner,
            buf: Vec::new(),
            cap,
        }
    }

    fn drain(&mut self) -> io::Result<()> {
        if !self.buf.is_empty() {
            let result = self.inner.append(&self.buf);
            // Whatever happened, the bytes are the file's now (or lost with its error).
            self.buf.clear();
            result?;
        }
        Ok(())
    }
}

impl WritableFile for BufferedWritable {
    fn append(&mut self, data: &[u8]) -> io::Result<()> {
        if self.buf.len() + data.len() > self.cap {
            self.drain()?;
        }
        if data.len() >= self.cap {
            return self.inner.append(data);
        }
        if self.buf.capacity() == 0 {
            self.buf.reserve_exact(self.cap);
        }
        self.buf.extend_from_slice(data);
        Ok(())
    }

    fn sync_data(&mut self) -> io::Result<()> {
        self.drain()?;
        self.inner.sync_data()
    }

    fn len(&self) -> u64 {
        self.inner.len() + self.buf.len() as u64
    }
}

const DIRECT_ALIGN: u64 = ALIGN as u64;

struct RealReadable {
    file: File,
    len: u64,
    direct: bool,
}

impl RandomAccessFile for RealReadable {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        let end = offset
            .checked_add(buf.len() as u64)
            .filter(|end| *end <= self.len)
            .ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    format!(
                        "read of {} bytes at {offset} past end {}",
                        buf.len(),
                        self.len
                    ),
                )
            })?;
        if !self.direct {
            return self.file.read_exact_at(buf, offset);
        }
        // O_DIRECT needs offset, length and memory aligned to the logical block size.
        let start = offset - offset % DIRECT_ALIGN;
        let aligned_end = end.div_ceil(DIRECT_ALIGN) * DIRECT_ALIGN;
        let span = (aligned_end - start) as usize;
        let mut raw = AlignedBuf::zeroed(span);
        let aligned = raw.as_mut_slice()?;
        // The last block of the file may be short: read what is there.
        let mut got = 0usize;
        while got < span {
            let n = self.file.read_at(
                aligned.get_mut(got..).unwrap_or_default(),
                start + got as u64,
            )?;
            if n == 0 {
                break;
            }
            got += n;
        }
        let from = (offset - start) as usize;
        let src = aligned
            .get(from..from + buf.len())
            .filter(|_| from + buf.len() <= got)
            .ok_or_else(|| io::Error::from(io::ErrorKind::UnexpectedEof))?;
        buf.copy_from_slice(src);
        Ok(())
    }

    fn len(&self) -> u64 {
        self.len
    }
}

struct LockGuard {
    _file: File,
}

impl Fs for RealFs {
    fn create(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        let file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)?;
        Ok(Box::new(RealWritable { file, len: 0 }))
    }

    fn create_direct(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        if let Ok(file) = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .custom_flags(libc::O_DIRECT)
            .open(path)
        {
            if DirectWritable::probe(&file) {
                return Ok(Box::new(DirectWritable::new(file)));
            }
        }
        self.create(path)
    }

    fn open_read(&self, path: &Path, direct: bool) -> io::Result<Arc<dyn RandomAccessFile>> {
        if direct {
            if let Ok(file) = OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_DIRECT)
                .open(path)
            {
                let len = file.metadata()?.len();
                // Probe once: some file systems (tmpfs) accept the flag but fail reads.
                let reader = RealReadable {
                    file,
                    len,
                    direct: true,
                };
                let mut probe = [0u8; 1];
                if len == 0 || reader.read_exact_at(&mut probe, 0).is_ok() {
                    return Ok(Arc::new(reader));
                }
            }
        }
        let file = File::open(path)?;
        let len = file.metadata()?.len();
        Ok(Arc::new(RealReadable {
            file,
            len,
            direct: false,
        }))
    }

    fn read_all(&self, path: &Path) -> io::Result<Vec<u8>> {
        std::fs::read(path)
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        std::fs::rename(from, to)
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        std::fs::remove_file(path)
    }

    fn list(&self, dir: &Path) -> io::Result<Vec<String>> {
        let mut names = Vec::new();
        for entry in std::fs::read_dir(dir)? {
            if let Some(name) = entry?.file_name().to_str() {
                names.push(name.to_owned());
            }
        }
        names.sort();
        Ok(names)
    }

    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        std::fs::create_dir_all(dir)
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        File::open(dir)?.sync_all()
    }

    fn exists(&self, path: &Path) -> bool {
        path.exists()
    }

    fn hard_link(&self, from: &Path, to: &Path) -> io::Result<()> {
        std::fs::hard_link(from, to)
    }

    fn lock(&self, path: &Path) -> io::Result<Box<dyn std::any::Any + Send + Sync>> {
        use std::os::fd::AsRawFd;
        let file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)?;
        // SAFETY: flock on a valid, owned descriptor has no memory-safety requirements.
        let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
        if rc != 0 {
            let err = io::Error::last_os_error();
            return Err(io::Error::new(
                err.kind(),
                format!("{} is locked by another process: {err}", path.display()),
            ));
        }
        Ok(Box::new(LockGuard { _file: file }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Records every append it receives; refuses appends past `space` bytes.
    struct Recording {
        appends: Arc<parking_lot::Mutex<Vec<usize>>>,
        len: u64,
        space: u64,
    }

    impl WritableFile for Recording {
        fn append(&mut self, buf: &[u8]) -> io::Result<()> {
            if self.len + buf.len() as u64 > self.space {
                return Err(io::Error::other("no space"));
            }
            self.appends.lock().push(buf.len());
            self.len += buf.len() as u64;
            Ok(())
        }
        fn sync_data(&mut self) -> io::Result<()> {
            Ok(())
        }
        fn len(&self) -> u64 {
            self.len
        }
    }

    #[test]
    fn a_buffered_file_hands_on_whole_buffers_and_everything_at_a_sync() {
        let appends = Arc::new(parking_lot::Mutex::new(Vec::new()));
        let inner = Recording {
            appends: Arc::clone(&appends),
            len: 0,
            space: u64::MAX,
        };
        let mut f = BufferedWritable::new(Box::new(inner), 100);
        for _ in 0..25 {
            f.append(&[1; 10]).unwrap();
        }
        // Ten appends of 10 fill a buffer; the 25th's bytes wait.
        assert_eq!(*appends.lock(), vec![100, 100]);
        assert_eq!(f.len(), 250);
        // An append as large as the buffer goes straight through, after what waits.
        f.append(&[2; 300]).unwrap();
        assert_eq!(*appends.lock(), vec![100, 100, 50, 300]);
        f.append(&[3; 7]).unwrap();
        f.sync_data().unwrap();
        assert_eq!(*appends.lock(), vec![100, 100, 50, 300, 7]);
        assert_eq!(f.len(), 557);
    }

    #[test]
    fn a_buffered_file_reports_the_error_of_the_append_that_reaches_a_full_file() {
        let inner = Recording {
            appends: Arc::default(),
            len: 0,
            space: 150,
        };
        let mut f = BufferedWritable::new(Box::new(inner), 100);
        for _ in 0..10 {
            f.append(&[1; 10]).unwrap();
        }
        f.append(&[1; 10]).unwrap();
        for _ in 0..9 {
            f.append(&[1; 10]).unwrap();
        }
        assert!(
            f.append(&[1; 10]).is_err(),
            "the second buffer does not fit"
        );
        f.append(&[1; 10]).unwrap();
        assert!(f.sync_data().is_ok(), "10 more bytes fit");
    }

    #[test]
    fn direct_reads_match_buffered_reads_at_unaligned_offsets() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let data: Vec<u8> = (0..20_000u32).map(|i| (i % 251) as u8).collect();
        let mut w = RealFs.create(&path).unwrap();
        w.append(&data).unwrap();
        w.sync_data().unwrap();
        let direct = RealFs.open_read(&path, true).unwrap();
        let plain = RealFs.open_read(&path, false).unwrap();
        for (off, len) in [(0u64, 1usize), (4095, 2), (5000, 9000), (19_990, 10)] {
            let mut a = vec![0; len];
            let mut b = vec![0; len];
            direct.read_exact_at(&mut a, off).unwrap();
            plain.read_exact_at(&mut b, off).unwrap();
            assert_eq!(a, b);
            assert_eq!(&a[..], &data[off as usize..off as usize + len]);
        }
        let mut past = vec![0; 11];
        assert!(direct.read_exact_at(&mut past, 19_990).is_err());
    }

    #[test]
    fn a_second_lock_on_the_same_file_fails() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("LOCK");
        let held = RealFs.lock(&path).unwrap();
        assert!(RealFs.lock(&path).is_err());
        drop(held);
        assert!(RealFs.lock(&path).is_ok());
    }
}
