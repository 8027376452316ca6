//! The seam between Mosaic's core crates and the operating system.
//!
//! Core crates (`lsm`, `replica`, `cluster`, `cql`) reach the disk, the clocks, threads and
//! randomness only through this crate, so tests can swap in a [`fault::FaultyFs`] that fails
//! writes with `ENOSPC` or fails `fsync`, a [`CrashFs`] that keeps, at a simulated power
//! loss, only what was made durable, a [`ManualClock`] that moves only when told, and a
//! simulator can replay a run from one seed ([`rng::SplitMix64`]). `clippy.toml` forbids the
//! direct calls (`Instant::now`, `SystemTime::now`, `thread::spawn`, `rand::random`, …)
//! everywhere else, so determinism cannot be lost silently. [`proc`] is the one reader of
//! `/proc` for the tools that measure processes.
//!
//! This crate depends on nothing of Mosaic and knows nothing of LSM-trees, rows or clusters.

pub mod clock;
pub mod crash;
mod direct;
pub mod fault;
pub mod fs;
pub mod proc;
pub mod rng;
pub mod thread;

pub use clock::{monotonic_micros, Clock, ManualClock, SystemClock};
pub use crash::CrashFs;
pub use fs::{
    remove_durably, write_atomically, BufferedWritable, Fs, RandomAccessFile, RealFs, WritableFile,
};
pub use rng::SplitMix64;
