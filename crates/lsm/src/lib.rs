//! Mosaic's node-local LSM-tree storage engine.
//!
//! Owns: the write-ahead log, memtables, SSTables (the reusable sorted-run format), leveled
//! compaction, the manifest and crash recovery, merging iterators and the counters that
//! measure amplification. Knows nothing of clusters, rows or CQL: keys and values are bytes,
//! versioned by a caller-supplied timestamp. Reaches the disk and clock only through
//! `mosaic-env`, so tests inject full disks and failed fsyncs.
//!
//! The same engine is DEPART's two-layer log when opened with [`Options::log`]: flushed
//! segments in a global log, split into range groups of at most S sorted runs each
//! ([`split`], [`LogOptions`]).
//!
//! Start at [`Db`]: `Db::open(dir, Options::default())`, then `put`/`delete`/`merge`/`write`
//! with a timestamp, `get`, `scan`, `snapshot`, `flush`, `compact`, `counters`, `levels`.
#![deny(clippy::unwrap_used)]

pub mod compaction;
pub mod db;
pub mod error;
pub mod iter;
pub mod key;
pub mod memtable;
pub mod merge;
pub mod options;
pub mod split;
pub mod stats;
pub mod table;
pub mod version;
pub mod wal;

pub use db::{Db, Entry, LevelInfo, RecoveryReport, Scan, Snapshot, TableInfo};
pub use error::{Error, Result};
pub use key::{KeyOrder, Seqno, ValueKind};
pub use merge::{MergeOperator, PurgeContext, Resolved, Version};
pub use mosaic_env::fault::{Faults, FaultyFs};
pub use mosaic_env::{Clock, Fs, ManualClock, RealFs, SystemClock};
pub use options::{
    CompactionEvent, CompactionListener, DynamicLevels, GroupOf, LevelPolicy, LogOptions, Options,
    StaticLevels, TableStore,
};
pub use stats::{CounterSnapshot, Counters, ReadPurpose};
pub use table::{BlockCache, Compression, TableOptions, TableReader, TableWriter};
pub use wal::{SyncMode, WalDrop, WriteBatch};
