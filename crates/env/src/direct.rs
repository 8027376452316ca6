//! Appending to a file with O_DIRECT (RocksDB's `use_direct_io_for_flush_and_compaction`):
//! the bytes go from an aligned buffer straight to the device, so writing a table neither
//! fills the OS page cache with pages nobody will read soon nor leaves them dirty for
//! writeback to flush later, in bursts, while foreground reads and the commit log wait.
//!
//! O_DIRECT needs every write's offset, length and memory aligned to the device's logical
//! block size ([`ALIGN`] covers every common one). Appends collect in the buffer; each full
//! buffer is written at once. [`WritableFile::sync_data`] writes the partial tail padded
//! with zeros, cuts the file back to its real length and syncs; the tail stays in the
//! buffer, so a later append rewrites that block whole. Nothing appended since the last
//! full buffer is on disk before `sync_data` — as with a buffered file, whose bytes are
//! not durable before it either — and a writer dropped without syncing writes its tail
//! on the way out (best effort), so a reader of the file sees every appended byte.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;

use crate::fs::WritableFile;

/// The alignment of offsets, lengths and memory (the largest logical block size of
/// common devices).
pub(crate) const ALIGN: usize = 4096;

/// Bytes collected before a write: large enough that the device sees big sequential
/// writes, small enough to keep per table being written.
const BUFFER_BYTES: usize = 1 << 20;

/// Zeroed memory whose first byte is aligned to [`ALIGN`], as O_DIRECT needs.
pub(crate) struct AlignedBuf {
    /// Backing memory; the aligned window is `[shift, shift + len)`.
    raw: Vec<u8>,
    shift: usize,
    len: usize,
}

impl AlignedBuf {
    /// `len` zero bytes, aligned.
    pub(crate) fn zeroed(len: usize) -> AlignedBuf {
        let raw = vec![0u8; len + ALIGN];
        let shift = raw.as_ptr().align_offset(ALIGN);
        AlignedBuf { raw, shift, len }
    }

    pub(crate) fn as_slice(&self) -> io::Result<&[u8]> {
        self.raw
            .get(self.shift..self.shift + self.len)
            .ok_or_else(|| io::Error::other("direct I/O buffer alignment failed"))
    }

    pub(crate) fn as_mut_slice(&mut self) -> io::Result<&mut [u8]> {
        self.raw
            .get_mut(self.shift..self.shift + self.len)
            .ok_or_else(|| io::Error::other("direct I/O buffer alignment failed"))
    }
}

/// A file appended to with O_DIRECT; see the module documentation.
pub(crate) struct DirectWritable {
    file: File,
    /// [`BUFFER_BYTES`] of aligned memory.
    buf: AlignedBuf,
    /// Bytes of the buffer holding appended data.
    buffered: usize,
    /// File offset of the buffer's first byte (a multiple of [`ALIGN`]).
    base: u64,
    /// Bytes appended in total.
    len: u64,
    /// Whether the file's bytes on disk match everything appended (nothing to write).
    clean: bool,
}

impl DirectWritable {
    /// Wraps `file`, opened with O_DIRECT and empty.
    pub(crate) fn new(file: File) -> DirectWritable {
        DirectWritable {
            file,
            buf: AlignedBuf::zeroed(BUFFER_BYTES),
            buffered: 0,
            base: 0,
            len: 0,
            clean: true,
        }
    }

    /// Writes the buffer's first `padded` bytes (a multiple of [`ALIGN`]) at `base`.
    fn write_out(&self, padded: usize) -> io::Result<()> {
        let block = self
            .buf
            .as_slice()?
            .get(..padded)
            .ok_or_else(|| io::Error::other("direct I/O write past the buffer"))?;
        self.file.write_all_at(block, self.base)
    }

    /// Whether O_DIRECT writes work on `file` (some file systems accept the flag at open
    /// and refuse the writes): one zero block written at the start, then cut away.
    pub(crate) fn probe(file: &File) -> bool {
        let block = AlignedBuf::zeroed(ALIGN);
        block
            .as_slice()
            .and_then(|b| file.write_all_at(b, 0))
            .and_then(|()| file.set_len(0))
            .is_ok()
    }

    /// Writes the partial tail, zero-padded to a whole block, and cuts the file back to
    /// the bytes appended.
    fn write_tail(&mut self) -> io::Result<()> {
        if self.clean {
            return Ok(());
        }
        let buffered = self.buffered;
        let padded = buffered.div_ceil(ALIGN) * ALIGN;
        if let Some(pad) = self.buf.as_mut_slice()?.get_mut(buffered..padded) {
            pad.fill(0);
        }
        self.write_out(padded)?;
        self.file.set_len(self.len)?;
        self.clean = true;
        Ok(())
    }
}

impl WritableFile for DirectWritable {
    fn append(&mut self, mut buf: &[u8]) -> io::Result<()> {
        while !buf.is_empty() {
            let at = self.buffered;
            let room = BUFFER_BYTES - at;
            let n = room.min(buf.len());
            let (now, rest) = buf.split_at(n);
            self.buf
                .as_mut_slice()?
                .get_mut(at..at + n)
                .ok_or_else(|| io::Error::other("direct I/O append past the buffer"))?
                .copy_from_slice(now);
            self.buffered += n;
            self.len += n as u64;
            self.clean = false;
            buf = rest;
            if self.buffered == BUFFER_BYTES {
                self.write_out(BUFFER_BYTES)?;
                self.base += BUFFER_BYTES as u64;
                self.buffered = 0;
                self.clean = true;
            }
        }
        Ok(())
    }

    fn sync_data(&mut self) -> io::Result<()> {
        self.write_tail()?;
        self.file.sync_data()
    }

    fn len(&self) -> u64 {
        self.len
    }
}

impl Drop for DirectWritable {
    fn drop(&mut self) {
        // Best effort: whoever reads the file next sees every appended byte, or (if this
        // fails) a short file, which readers report as such.
        let _ = self.write_tail();
    }
}

#[cfg(test)]
mod tests {
    use std::fs::OpenOptions;
    use std::os::unix::fs::OpenOptionsExt;

    use super::*;
    use crate::fs::{Fs, RealFs};

    fn pattern(len: usize, seed: u8) -> Vec<u8> {
        (0..len)
            .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
            .collect()
    }

    /// Opens `path` with O_DIRECT, as `RealFs::create_direct` does; `None` where the file
    /// system refuses it (then `create_direct` falls back to buffered writes).
    fn open_direct(path: &std::path::Path) -> Option<File> {
        let file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .custom_flags(libc::O_DIRECT)
            .open(path)
            .ok()?;
        DirectWritable::probe(&file).then_some(file)
    }

    #[test]
    fn appends_of_every_size_read_back_whole_across_syncs_and_drops() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t");
        let Some(file) = open_direct(&path) else {
            // tmpfs and a few others: nothing direct to check here (the fallback is the
            // buffered writer, tested with RealFs).
            eprintln!("O_DIRECT writes unsupported under {}", dir.path().display());
            return;
        };
        let mut w = DirectWritable::new(file);
        let mut expect = Vec::new();
        // Odd sizes, a few larger than the buffer, with syncs between some of them: each
        // sync writes a padded tail that a later append must rewrite in place.
        for (i, len) in [
            1,
            4095,
            4097,
            70_000,
            BUFFER_BYTES,
            3 * BUFFER_BYTES + 17,
            5,
            0,
            1 << 16,
        ]
        .into_iter()
        .enumerate()
        {
            let bytes = pattern(len, i as u8);
            w.append(&bytes).unwrap();
            expect.extend_from_slice(&bytes);
            assert_eq!(w.len(), expect.len() as u64);
            if i % 2 == 1 {
                w.sync_data().unwrap();
                assert_eq!(std::fs::read(&path).unwrap(), expect, "after sync {i}");
            }
        }
        w.sync_data().unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), expect);
        // Appends not synced reach the file when the writer is dropped.
        let tail = pattern(12_345, 99);
        w.append(&tail).unwrap();
        expect.extend_from_slice(&tail);
        drop(w);
        assert_eq!(std::fs::read(&path).unwrap(), expect);
    }

    #[test]
    fn real_fs_creates_direct_files_that_read_back_as_written() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("table");
        let mut w = RealFs.create_direct(&path).unwrap();
        let bytes = pattern(2 * BUFFER_BYTES + 1234, 7);
        w.append(&bytes).unwrap();
        w.sync_data().unwrap();
        drop(w);
        let r = RealFs.open_read(&path, true).unwrap();
        assert_eq!(r.len(), bytes.len() as u64);
        let mut back = vec![0u8; bytes.len()];
        r.read_exact_at(&mut back, 0).unwrap();
        assert_eq!(back, bytes);
        // Recreating truncates, as `create` does.
        let mut w = RealFs.create_direct(&path).unwrap();
        w.append(b"short").unwrap();
        w.sync_data().unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"short");
    }
}
