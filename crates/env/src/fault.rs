//! A file system that fails on command, for tests of the engine's failure behaviour.
//!
//! Faults are injected only where the engine claims to survive them: a full disk (appends
//! and creations fail with `ENOSPC`, possibly after a partial write), failed `fsync`, and a
//! disk too slow to take new files of one kind (their creation waits until released, so
//! e.g. flushes never finish while writes keep arriving).
//! Space is modelled as a byte budget shared by all files; deleting a file gives its bytes
//! back, as on a real disk.

use std::io;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};

use crate::fs::{Fs, RandomAccessFile, WritableFile};

/// Shared switches of a [`FaultyFs`]; clone the `Arc` to flip them from a test.
#[derive(Debug)]
pub struct Faults {
    /// Bytes that may still be appended before appends fail with `ENOSPC`.
    space_bytes: AtomicU64,
    /// Whether `sync_data` and `sync_dir` fail with `EIO`.
    fail_sync: AtomicBool,
    /// Number of `ENOSPC` errors returned so far.
    no_space_errors: AtomicU64,
    /// Files whose names end with this wait in `create` until it is cleared.
    held_suffix: Mutex<Option<String>>,
    held_cv: Condvar,
}

impl Default for Faults {
    fn default() -> Self {
        Self {
            space_bytes: AtomicU64::new(u64::MAX),
            fail_sync: AtomicBool::new(false),
            no_space_errors: AtomicU64::new(0),
            held_suffix: Mutex::new(None),
            held_cv: Condvar::new(),
        }
    }
}

impl Faults {
    /// Sets the free space, in bytes.
    pub fn set_space_bytes(&self, bytes: u64) {
        self.space_bytes.store(bytes, Ordering::SeqCst);
    }

    /// Makes the disk effectively unlimited again.
    pub fn unlimited_space(&self) {
        self.set_space_bytes(u64::MAX);
    }

    /// Makes every later sync fail (or succeed again).
    pub fn set_fail_sync(&self, fail: bool) {
        self.fail_sync.store(fail, Ordering::SeqCst);
    }

    /// Makes the creation of files whose names end with `suffix` wait until
    /// [`Faults::release_creates`] (one suffix at a time).
    pub fn hold_creates(&self, suffix: &str) {
        *self.held_suffix.lock().unwrap_or_else(|e| e.into_inner()) = Some(suffix.to_owned());
    }

    /// Lets held and later creations through.
    pub fn release_creates(&self) {
        *self.held_suffix.lock().unwrap_or_else(|e| e.into_inner()) = None;
        self.held_cv.notify_all();
    }

    /// Waits while creations of `path` are held.
    fn wait_for_create(&self, path: &Path) {
        let name = path.to_string_lossy();
        let mut held = self.held_suffix.lock().unwrap_or_else(|e| e.into_inner());
        while held.as_deref().is_some_and(|s| name.ends_with(s)) {
            held = self.held_cv.wait(held).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// How many `ENOSPC` errors were returned.
    pub fn no_space_errors(&self) -> u64 {
        self.no_space_errors.load(Ordering::SeqCst)
    }

    /// Takes up to `want` bytes of space; returns how many were granted.
    fn take(&self, want: u64) -> u64 {
        let mut cur = self.space_bytes.load(Ordering::SeqCst);
        loop {
            let grant = want.min(cur);
            match self.space_bytes.compare_exchange(
                cur,
                cur - grant,
                Ordering::SeqCst,
                Ordering::SeqCst,
            ) {
                Ok(_) => return grant,
                Err(now) => cur = now,
            }
        }
    }

    fn give_back(&self, bytes: u64) {
        let _ = self
            .space_bytes
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |cur| {
                Some(cur.saturating_add(bytes))
            });
    }

    fn no_space(&self) -> io::Error {
        self.no_space_errors.fetch_add(1, Ordering::SeqCst);
        io::Error::from_raw_os_error(libc::ENOSPC)
    }

    fn sync_error(&self) -> Option<io::Error> {
        self.fail_sync
            .load(Ordering::SeqCst)
            .then(|| io::Error::other("injected fsync failure (EIO)"))
    }
}

/// Wraps a file system and injects the faults of a shared [`Faults`].
pub struct FaultyFs {
    inner: Arc<dyn Fs>,
    faults: Arc<Faults>,
}

impl FaultyFs {
    /// Wraps `inner`; flip faults through `faults`.
    pub fn new(inner: Arc<dyn Fs>, faults: Arc<Faults>) -> Self {
        Self { inner, faults }
    }

    /// Creates `path` on the inner file system (with O_DIRECT if `direct`), its writes
    /// subject to the faults.
    fn faulty_create(&self, path: &Path, direct: bool) -> io::Result<Box<dyn WritableFile>> {
        self.faults.wait_for_create(path);
        if self.faults.space_bytes.load(Ordering::SeqCst) == 0 {
            return Err(self.faults.no_space());
        }
        let inner = if direct {
            self.inner.create_direct(path)?
        } else {
            self.inner.create(path)?
        };
        Ok(Box::new(FaultyWritable {
            inner,
            faults: self.faults.clone(),
        }))
    }
}

struct FaultyWritable {
    inner: Box<dyn WritableFile>,
    faults: Arc<Faults>,
}

impl WritableFile for FaultyWritable {
    fn append(&mut self, buf: &[u8]) -> io::Result<()> {
        let granted = self.faults.take(buf.len() as u64) as usize;
        if granted < buf.len() {
            // A full disk accepts what fits, then refuses the rest.
            self.inner.append(buf.get(..granted).unwrap_or_default())?;
            return Err(self.faults.no_space());
        }
        self.inner.append(buf)
    }

    fn sync_data(&mut self) -> io::Result<()> {
        if let Some(e) = self.faults.sync_error() {
            return Err(e);
        }
        self.inner.sync_data()
    }

    fn len(&self) -> u64 {
        self.inner.len()
    }
}

impl Fs for FaultyFs {
    fn create(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        self.faulty_create(path, false)
    }

    fn create_direct(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        self.faulty_create(path, true)
    }

    fn open_read(&self, path: &Path, direct: bool) -> io::Result<Arc<dyn RandomAccessFile>> {
        self.inner.open_read(path, direct)
    }

    fn read_all(&self, path: &Path) -> io::Result<Vec<u8>> {
        self.inner.read_all(path)
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        if let Ok(old) = self.inner.open_read(to, false) {
            self.faults.give_back(old.len());
        }
        self.inner.rename(from, to)
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        let len = self
            .inner
            .open_read(path, false)
            .map(|f| f.len())
            .unwrap_or(0);
        self.inner.remove(path)?;
        self.faults.give_back(len);
        Ok(())
    }

    fn list(&self, dir: &Path) -> io::Result<Vec<String>> {
        self.inner.list(dir)
    }

    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        self.inner.create_dir_all(dir)
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        if let Some(e) = self.faults.sync_error() {
            return Err(e);
        }
        self.inner.sync_dir(dir)
    }

    fn exists(&self, path: &Path) -> bool {
        self.inner.exists(path)
    }

    fn hard_link(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.inner.hard_link(from, to)
    }

    fn lock(&self, path: &Path) -> io::Result<Box<dyn std::any::Any + Send + Sync>> {
        self.inner.lock(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::RealFs;

    #[test]
    fn a_full_disk_writes_what_fits_and_space_returns_on_delete() {
        let dir = tempfile::tempdir().unwrap();
        let faults = Arc::new(Faults::default());
        let fs = FaultyFs::new(Arc::new(RealFs), faults.clone());
        faults.set_space_bytes(10);
        let path = dir.path().join("a");
        let mut f = fs.create(&path).unwrap();
        let err = f.append(&[7u8; 16]).unwrap_err();
        assert_eq!(err.raw_os_error(), Some(libc::ENOSPC));
        assert_eq!(f.len(), 10);
        drop(f);
        fs.remove(&path).unwrap();
        let mut g = fs.create(&dir.path().join("b")).unwrap();
        g.append(&[1u8; 10]).unwrap();
        assert_eq!(faults.no_space_errors(), 1);
    }

    #[test]
    fn injected_sync_failures_reach_the_caller() {
        let dir = tempfile::tempdir().unwrap();
        let faults = Arc::new(Faults::default());
        let fs = FaultyFs::new(Arc::new(RealFs), faults.clone());
        let mut f = fs.create(&dir.path().join("a")).unwrap();
        f.append(b"x").unwrap();
        faults.set_fail_sync(true);
        assert!(f.sync_data().is_err());
        faults.set_fail_sync(false);
        assert!(f.sync_data().is_ok());
    }
}
