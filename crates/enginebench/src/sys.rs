//! The yardstick both engines are measured with: this process's I/O and CPU counters.

use std::fs::File;
use std::path::Path;

use anyhow::{Context, Result};

/// `/proc/self/io` for the whole process (all threads, including the engines' own).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ProcIo {
    /// Bytes passed to read-like syscalls (page-cache hits included).
    pub rchar: u64,
    /// Bytes passed to write-like syscalls.
    pub wchar: u64,
    /// Bytes fetched from the block device.
    pub read_bytes: u64,
    /// Bytes this process caused to be sent to the block device (counted when dirtied).
    pub write_bytes: u64,
    /// Dirty bytes that were never written because their file was truncated or deleted.
    pub cancelled_write_bytes: u64,
}

impl ProcIo {
    /// Reads the counters now; all zero where `/proc/self/io` is unavailable.
    pub fn now() -> ProcIo {
        let Ok(text) = std::fs::read_to_string("/proc/self/io") else {
            return ProcIo::default();
        };
        let mut io = ProcIo::default();
        for line in text.lines() {
            let Some((name, value)) = line.split_once(':') else {
                continue;
            };
            let Ok(value) = value.trim().parse::<u64>() else {
                continue;
            };
            match name {
                "rchar" => io.rchar = value,
                "wchar" => io.wchar = value,
                "read_bytes" => io.read_bytes = value,
                "write_bytes" => io.write_bytes = value,
                "cancelled_write_bytes" => io.cancelled_write_bytes = value,
                _ => {}
            }
        }
        io
    }

    /// Whether the counters are available at all.
    pub fn available() -> bool {
        std::fs::read_to_string("/proc/self/io").is_ok()
    }

    /// Counter-by-counter `self - earlier`.
    pub fn since(&self, earlier: &ProcIo) -> ProcIo {
        ProcIo {
            rchar: self.rchar.saturating_sub(earlier.rchar),
            wchar: self.wchar.saturating_sub(earlier.wchar),
            read_bytes: self.read_bytes.saturating_sub(earlier.read_bytes),
            write_bytes: self.write_bytes.saturating_sub(earlier.write_bytes),
            cancelled_write_bytes: self
                .cancelled_write_bytes
                .saturating_sub(earlier.cancelled_write_bytes),
        }
    }
}

/// CPU seconds (user + system) used by every thread of this process so far.
pub fn cpu_seconds() -> f64 {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: `getrusage` fills the struct it is given; on failure we read zeros.
    let usage = unsafe {
        libc::getrusage(libc::RUSAGE_SELF, usage.as_mut_ptr());
        usage.assume_init()
    };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(usage.ru_utime) + tv(usage.ru_stime)
}

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

/// A one-line description of this machine (CPU model, cores, memory).
pub fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, m)| m.trim().to_owned())
        })
        .unwrap_or_else(|| "unknown CPU".to_owned());
    let cores = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(0);
    let mem_gib = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("MemTotal:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<u64>().ok())
        })
        .map(|kb| kb as f64 / (1u64 << 20) as f64)
        .unwrap_or(0.0);
    format!("{cpu}, {cores} cores, {mem_gib:.1} GiB RAM")
}
