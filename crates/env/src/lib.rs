//! The seam between Mosaic's core crates and the operating system.
//!
//! Core crates (the storage engine first) reach the disk and the clock only through the
//! traits here, so tests can swap in a [`fault::FaultyFs`] that fails writes with `ENOSPC`
//! or fails `fsync`, and a simulator can later swap in a deterministic clock. This crate
//! depends on nothing of Mosaic and knows nothing of LSM-trees, rows or clusters.

pub mod clock;
pub mod fault;
pub mod fs;

pub use clock::{Clock, ManualClock, SystemClock};
pub use fs::{Fs, RandomAccessFile, RealFs, WritableFile};
