//! Disk traffic of server processes from the operating system: `/proc/PID/io` before and
//! after a phase, one yardstick for Mosaic and Cassandra alike.
//!
//! `write_bytes` is charged when a page is dirtied (so it counts WAL, flush and compaction
//! writes even if writeback happens later); `read_bytes` counts reads that reached the
//! block device (page-cache hits are not in it; `rchar` counts every byte through `read`).
//! The parser is `mosaic_env::proc`, shared with the engine benchmark and the launcher.

pub use mosaic_env::proc::ProcIo as IoCounters;

/// Reads a pid from a pid file (Mosaic's `DIR/nodeN/pid`, Cassandra's `-p` file).
pub fn pid_from_file(path: &std::path::Path) -> anyhow::Result<u32> {
    Ok(mosaic_env::proc::pid_from_file(path)?)
}
