//! Disk traffic of server processes from the operating system: `/proc/PID/io` before and
//! after a phase, one yardstick for Mosaic and Cassandra alike.
//!
//! `write_bytes` is charged when a page is dirtied (so it counts WAL, flush and compaction
//! writes even if writeback happens later); `read_bytes` counts reads that reached the
//! block device (page-cache hits are not in it; `rchar` counts every byte through `read`).

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{anyhow, Context};

/// The counters of one `/proc/PID/io`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IoCounters {
    /// Bytes passed to read-like syscalls.
    pub rchar: u64,
    /// Bytes passed to write-like syscalls.
    pub wchar: u64,
    /// Bytes fetched from the block device.
    pub read_bytes: u64,
    /// Bytes of dirtied pages bound for the block device.
    pub write_bytes: u64,
}

impl IoCounters {
    /// Parses the text of `/proc/PID/io` (`key: value` lines; unknown keys ignored).
    pub fn parse(text: &str) -> anyhow::Result<IoCounters> {
        let fields: BTreeMap<&str, u64> = text
            .lines()
            .filter_map(|l| {
                let (k, v) = l.split_once(':')?;
                Some((k.trim(), v.trim().parse().ok()?))
            })
            .collect();
        let get = |k: &str| {
            fields
                .get(k)
                .copied()
                .ok_or_else(|| anyhow!("no `{k}` in /proc/PID/io"))
        };
        Ok(IoCounters {
            rchar: get("rchar")?,
            wchar: get("wchar")?,
            read_bytes: get("read_bytes")?,
            write_bytes: get("write_bytes")?,
        })
    }

    /// Reads `/proc/PID/io` of `pid` (the same user, or root, may read it).
    pub fn of_pid(pid: u32) -> anyhow::Result<IoCounters> {
        let path = format!("/proc/{pid}/io");
        let text = std::fs::read_to_string(&path).with_context(|| format!("reading {path}"))?;
        IoCounters::parse(&text)
    }

    /// The sum of `/proc/PID/io` over `pids`.
    pub fn of_pids(pids: &[u32]) -> anyhow::Result<IoCounters> {
        pids.iter().try_fold(IoCounters::default(), |sum, pid| {
            Ok(sum.plus(&IoCounters::of_pid(*pid)?))
        })
    }

    fn plus(&self, o: &IoCounters) -> IoCounters {
        IoCounters {
            rchar: self.rchar + o.rchar,
            wchar: self.wchar + o.wchar,
            read_bytes: self.read_bytes + o.read_bytes,
            write_bytes: self.write_bytes + o.write_bytes,
        }
    }

    /// `self - earlier`, saturating (a restarted process would otherwise underflow).
    pub fn since(&self, earlier: &IoCounters) -> IoCounters {
        IoCounters {
            rchar: self.rchar.saturating_sub(earlier.rchar),
            wchar: self.wchar.saturating_sub(earlier.wchar),
            read_bytes: self.read_bytes.saturating_sub(earlier.read_bytes),
            write_bytes: self.write_bytes.saturating_sub(earlier.write_bytes),
        }
    }
}

/// Reads a pid from a pid file (Mosaic's `DIR/nodeN/pid`, Cassandra's `-p` file).
pub fn pid_from_file(path: &Path) -> anyhow::Result<u32> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    text.trim()
        .parse()
        .with_context(|| format!("{} does not hold a pid", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_proc_io() {
        let text = "rchar: 10\nwchar: 20\nsyscr: 1\nsyscw: 2\nread_bytes: 4096\nwrite_bytes: 8192\ncancelled_write_bytes: 0\n";
        let io = IoCounters::parse(text).unwrap();
        assert_eq!(
            io,
            IoCounters {
                rchar: 10,
                wchar: 20,
                read_bytes: 4096,
                write_bytes: 8192
            }
        );
        assert!(IoCounters::parse("rchar: 1\n").is_err());
    }

    #[test]
    fn reads_this_process() {
        let before = IoCounters::of_pids(&[std::process::id()]).unwrap();
        let after = IoCounters::of_pid(std::process::id()).unwrap();
        assert!(
            after.rchar > before.rchar,
            "reading /proc/self/io counts in rchar"
        );
        assert_eq!(before.since(&after).rchar, 0);
    }
}
