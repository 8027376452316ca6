//! Mosaic's node-local LSM-tree storage engine.
//!
//! Owns: the write-ahead log, memtables, SSTables (the reusable sorted-run format), leveled
//! compaction, the manifest and crash recovery, merging iterators and the counters that
//! measure amplification. Knows nothing of clusters, rows or CQL: keys and values are bytes,
//! versioned by a caller-supplied timestamp. Reaches the disk and clock only through
//! `mosaic-env`, so tests inject full disks and failed fsyncs.
#![deny(clippy::unwrap_used)]

pub mod error;
pub mod key;
pub mod merge;
pub mod stats;
pub mod table;

pub use error::{Error, Result};
pub use key::{KeyOrder, Seqno, ValueKind};
pub use merge::{MergeOperator, PurgeContext, Resolved, Version};
pub use stats::{CounterSnapshot, Counters, ReadPurpose};
