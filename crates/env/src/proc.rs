//! What the operating system reports about processes and this machine (`/proc`): disk
//! traffic per process, liveness, command lines, CPU time and a one-line machine summary.
//!
//! One parser for every reader — the benchmark clients measure Mosaic and Cassandra with it,
//! the engine benchmark measures itself with it, and the local launcher checks its pid files
//! with it — so every figure in `BENCHMARKS.md` comes from the same yardstick.
//!
//! `write_bytes` is charged when a page is dirtied (so it counts WAL, flush and compaction
//! writes even if writeback happens later); `read_bytes` counts reads that reached the
//! block device (page-cache hits are not in it; `rchar` counts every byte through `read`).

use std::collections::BTreeMap;
use std::io;
use std::path::Path;

/// The counters of one `/proc/PID/io`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ProcIo {
    /// Bytes passed to read-like syscalls (page-cache hits included).
    pub rchar: u64,
    /// Bytes passed to write-like syscalls.
    pub wchar: u64,
    /// Bytes fetched from the block device.
    pub read_bytes: u64,
    /// Bytes of dirtied pages bound for the block device.
    pub write_bytes: u64,
    /// Dirty bytes never written because their file was truncated or deleted.
    pub cancelled_write_bytes: u64,
}

impl ProcIo {
    /// Parses the text of `/proc/PID/io` (`key: value` lines; unknown keys ignored; the four
    /// byte counters must be present, `cancelled_write_bytes` defaults to 0).
    pub fn parse(text: &str) -> io::Result<ProcIo> {
        let fields: BTreeMap<&str, u64> = text
            .lines()
            .filter_map(|l| {
                let (k, v) = l.split_once(':')?;
                Some((k.trim(), v.trim().parse().ok()?))
            })
            .collect();
        let get = |k: &str| {
            fields.get(k).copied().ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("no `{k}` in /proc/PID/io"),
                )
            })
        };
        Ok(ProcIo {
            rchar: get("rchar")?,
            wchar: get("wchar")?,
            read_bytes: get("read_bytes")?,
            write_bytes: get("write_bytes")?,
            cancelled_write_bytes: get("cancelled_write_bytes").unwrap_or(0),
        })
    }

    /// Reads `/proc/PID/io` of `pid` (the same user, or root, may read it).
    pub fn of_pid(pid: u32) -> io::Result<ProcIo> {
        ProcIo::read(&format!("/proc/{pid}/io"))
    }

    /// Reads this process's counters (every thread's).
    pub fn of_self() -> io::Result<ProcIo> {
        ProcIo::read("/proc/self/io")
    }

    fn read(path: &str) -> io::Result<ProcIo> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| io::Error::new(e.kind(), format!("reading {path}: {e}")))?;
        ProcIo::parse(&text)
    }

    /// The sum of `/proc/PID/io` over `pids`.
    pub fn of_pids(pids: &[u32]) -> io::Result<ProcIo> {
        pids.iter().try_fold(ProcIo::default(), |sum, pid| {
            Ok(sum.plus(&ProcIo::of_pid(*pid)?))
        })
    }

    /// Counter-by-counter sum.
    pub fn plus(&self, o: &ProcIo) -> ProcIo {
        ProcIo {
            rchar: self.rchar + o.rchar,
            wchar: self.wchar + o.wchar,
            read_bytes: self.read_bytes + o.read_bytes,
            write_bytes: self.write_bytes + o.write_bytes,
            cancelled_write_bytes: self.cancelled_write_bytes + o.cancelled_write_bytes,
        }
    }

    /// `self - earlier`, saturating (a restarted process would otherwise underflow).
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

/// Whether `pid` is a live process (a zombie has exited).
pub fn process_alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the parenthesised command name (which may itself hold ')').
        Ok(stat) => stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|state| state != "Z" && state != "X"),
        Err(_) => false,
    }
}

/// The command line of `pid`, one entry per argument; `None` if it cannot be read.
pub fn cmdline(pid: u32) -> Option<Vec<Vec<u8>>> {
    let raw = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    Some(
        raw.split(|&b| b == 0)
            .filter(|a| !a.is_empty())
            .map(<[u8]>::to_vec)
            .collect(),
    )
}

/// Reads a pid from a pid file (Mosaic's `DIR/nodeN/pid`, Cassandra's `-p` file).
pub fn pid_from_file(path: &Path) -> io::Result<u32> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| io::Error::new(e.kind(), format!("reading {}: {e}", path.display())))?;
    text.trim().parse().map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{} does not hold a pid", path.display()),
        )
    })
}

/// CPU seconds (user + system) used by every thread of this process so far.
pub fn cpu_seconds() -> f64 {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: `getrusage` fills the struct it is given; on failure we read the zeros.
    let usage = unsafe {
        libc::getrusage(libc::RUSAGE_SELF, usage.as_mut_ptr());
        usage.assume_init()
    };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(usage.ru_utime) + tv(usage.ru_stime)
}

/// CPU seconds (user + system) every thread of `pid` has used so far, from
/// `/proc/PID/stat` (the same yardstick for Mosaic and Cassandra nodes).
pub fn cpu_seconds_of_pid(pid: u32) -> io::Result<f64> {
    let path = format!("/proc/{pid}/stat");
    let stat = std::fs::read_to_string(&path)
        .map_err(|e| io::Error::new(e.kind(), format!("reading {path}: {e}")))?;
    parse_stat_cpu_ticks(&stat)
        .map(|ticks| ticks as f64 / clock_ticks_per_second())
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, format!("{path}: no CPU times")))
}

/// `utime + stime` (fields 14 and 15) of a `/proc/PID/stat` line, in clock ticks. The fields
/// are counted after the parenthesised command name, which may itself hold spaces and ')'.
fn parse_stat_cpu_ticks(stat: &str) -> Option<u64> {
    let (_, rest) = stat.rsplit_once(')')?;
    // `rest` starts at field 3 (the state): utime is field 14, i.e. the 12th after it.
    let mut fields = rest.split_whitespace().skip(11);
    let utime: u64 = fields.next()?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    Some(utime + stime)
}

/// The kernel's clock ticks per second (`_SC_CLK_TCK`, 100 on Linux unless configured).
fn clock_ticks_per_second() -> f64 {
    // SAFETY: `sysconf` reads a constant of the running system.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if ticks > 0 {
        ticks as f64
    } else {
        100.0
    }
}

/// A one-line description of this machine (CPU model, cores, memory), for benchmark
/// reports.
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_proc_io() {
        let text = "rchar: 10\nwchar: 20\nsyscr: 1\nsyscw: 2\nread_bytes: 4096\nwrite_bytes: 8192\ncancelled_write_bytes: 7\n";
        let io = ProcIo::parse(text).unwrap();
        assert_eq!(
            io,
            ProcIo {
                rchar: 10,
                wchar: 20,
                read_bytes: 4096,
                write_bytes: 8192,
                cancelled_write_bytes: 7,
            }
        );
        assert!(ProcIo::parse("rchar: 1\n").is_err());
    }

    #[test]
    fn parses_cpu_ticks_past_odd_command_names() {
        let stat = "42 (a b) c) S 1 42 42 0 -1 4194560 100 0 0 0 250 30 0 0 20 0 3 0 1 2 3";
        assert_eq!(parse_stat_cpu_ticks(stat), Some(280));
        assert_eq!(parse_stat_cpu_ticks("42 (x) S 1 2"), None);
        // This process has used some CPU by the time it reads its own stat.
        let spin: u64 = (0..2_000_000u64).fold(0, |a, b| a ^ b.wrapping_mul(31));
        assert!(spin != 1);
        assert!(cpu_seconds_of_pid(std::process::id()).unwrap() >= 0.0);
        assert!(cpu_seconds_of_pid(u32::MAX).is_err());
    }

    #[test]
    fn reads_this_process() {
        let me = std::process::id();
        let before = ProcIo::of_pids(&[me]).unwrap();
        let after = ProcIo::of_self().unwrap();
        assert!(
            after.rchar > before.rchar,
            "reading /proc/self/io counts in rchar"
        );
        assert_eq!(before.since(&after).rchar, 0);
        assert!(process_alive(me));
        let args = cmdline(me).unwrap();
        assert!(!args.is_empty());
        assert!(cpu_seconds() >= 0.0);
        assert!(machine().contains("cores"));
    }
}
