//! The yardstick both engines are measured with: this process's I/O and CPU counters
//! (`mosaic_env::proc`, shared with every other benchmark) and file-system checks.

use std::fs::File;
use std::path::Path;

use anyhow::{Context, Result};

pub use mosaic_env::proc::{cpu_seconds, machine, ProcIo};

/// Syncs the file system holding `dir`, so that the phase's writes are on disk.
pub fn sync_fs(dir: &Path) -> Result<()> {
    let f = File::open(dir).with_context(|| format!("opening {dir:?} to sync it"))?;
    // SAFETY: `f` is an open descriptor for the duration of the call.
    let rc = unsafe { libc::syncfs(std::os::fd::AsRawFd::as_raw_fd(&f)) };
    if rc != 0 {
        return Err(std::io::Error::last_os_error()).context("syncfs");
    }
    Ok(())
}

/// The file system type of `dir` if it is one whose writes never reach a disk.
pub fn memory_fs(dir: &Path) -> Option<&'static str> {
    use std::os::unix::ffi::OsStrExt;
    let path = std::ffi::CString::new(dir.as_os_str().as_bytes()).ok()?;
    let mut st = std::mem::MaybeUninit::<libc::statfs>::zeroed();
    // SAFETY: `path` is NUL-terminated and `st` is a valid out-pointer.
    let rc = unsafe { libc::statfs(path.as_ptr(), st.as_mut_ptr()) };
    if rc != 0 {
        return None;
    }
    // SAFETY: `statfs` succeeded, so the struct is initialised.
    let st = unsafe { st.assume_init() };
    const TMPFS_MAGIC: i64 = 0x0102_1994;
    const RAMFS_MAGIC: i64 = 0x8584_58f6;
    #[allow(clippy::unnecessary_cast)]
    match st.f_type as i64 {
        TMPFS_MAGIC => Some("tmpfs"),
        RAMFS_MAGIC => Some("ramfs"),
        _ => None,
    }
}
