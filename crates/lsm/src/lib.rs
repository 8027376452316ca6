//! Mosaic's node-local LSM-tree storage engine.
//!
//! Owns: the write-ahead log, memtables, SSTables (the reusable sorted-run format), leveled
//! compaction, the manifest and crash recovery, merging iterators and the counters that
//! measure amplification. Keys and values are bytes, versioned by a caller-supplied
//! timestamp; same-key versions resolve by last-write-wins or a [`MergeOperator`].
//!
//! Must not depend on: anything of clusters, replicas, rows or CQL (those crates build on
//! this one, never the reverse), nor on tokio. The disk, the clocks and threads are
//! reached only through `mosaic-env` ([`Fs`], [`Clock`], `mosaic_env::thread`), so tests
//! inject full disks and failed fsyncs, and `clippy.toml` forbids the direct calls.
//!
//! Reads of one key prefix (a partition, with [`TableOptions::filter_prefix_bytes`] set)
//! consult Bloom filters over prefixes in every SSTable and every memtable ([`memfilter`])
//! and skip what cannot hold the prefix.
//!
//! The same engine is DEPART's two-layer log when opened with [`Options::log`]: flushed
//! segments in a global log, split into range groups of at most S sorted runs each
//! ([`split`], [`LogOptions`]).
//!
//! A node runs one [`Engine`] ([`engine`]): one shared WAL and group commit, one pool of
//! flush and compaction workers, one memtable budget and one block cache (holding tables'
//! index and filter blocks too with [`EngineOptions::cache_index_and_filter_blocks`],
//! otherwise they are pinned while a table is open); every table is a
//! partition of it, opened as a [`Db`] with [`Options::engine`] set. Without an engine,
//! `Db::open(dir, Options::default())` opens a private one with a single partition. Then
//! `put`/`delete`/`merge`/`write` with a timestamp, `get`, `scan`, `snapshot`, `flush`,
//! `compact`, `counters`, `levels` — and `ingest`, which stores a sorted batch (a range a
//! joining node streams in) as tables placed straight into the levels, without the WAL,
//! memtable or compaction.
//!
//! # Invariants
//!
//! - **What is durable when.** A write is acknowledged once its WAL record is appended and,
//!   per [`SyncMode`]: `PerWrite`, synced on its own; `Batch`, synced once with the writes
//!   that arrived alongside it (group commit); `Periodic` (the default), left in the OS
//!   and synced every interval, at a WAL switch and at [`Db::close`] — a process crash
//!   loses nothing, a power loss up to one interval. Flushed and compacted tables are
//!   synced and recorded in the manifest (itself synced) before readers see them — so is
//!   an ingested batch, acknowledged once that edit is durable, with no WAL record — and a
//!   WAL is deleted only once the manifest no longer needs it. Recovery replays what is
//!   durable and reports any torn WAL tail it drops ([`RecoveryReport`]).
//! - **Who may block.** Writers, and only writers: behind the group-commit leader, in a
//!   write stall while frozen memtables or level-0 tables pile up beyond
//!   [`Options::immutable_memtables_max`] or [`Options::level0_stall_tables`], in the
//!   slowdown from [`Options::level0_slowdown_tables`], and while the node is out of
//!   memtable space ([`EngineOptions::memtable_space_bytes`]); each waits on a condition
//!   with a bounded wait, never spins, and ends in an error if the engine is poisoned,
//!   closing or out of space, or — past [`EngineOptions::write_stall_timeout`] — with
//!   [`Error::WriteStalled`], the write not applied. `flush`, `compact` and
//!   `wait_for_compactions` wait for background work by design. Reads take one short
//!   critical section and then never wait on writers or background work.
//! - **Poisoning.** A failed fsync, or a failed write other than a full disk, poisons the
//!   engine: the kernel may have dropped the dirty pages, so the state on disk is unknown
//!   and every later write fails with [`Error::Poisoned`] — even once fsync works again —
//!   until the database is reopened, which recovers from what is durable. A full disk
//!   instead refuses writes with [`Error::NoSpace`] and clears by itself once space returns.
#![deny(clippy::unwrap_used)]

pub mod compaction;
pub mod db;
pub mod engine;
pub mod error;
pub mod iter;
pub mod key;
pub mod memfilter;
pub mod memtable;
pub mod merge;
pub mod options;
pub mod split;
pub mod stats;
pub mod table;
pub mod version;
pub mod wal;

pub use db::{Db, Entry, Ingested, LevelInfo, RecoveryReport, Scan, Snapshot, TableInfo};
pub use engine::{BackgroundWork, Engine, EngineOptions};
pub use error::{Error, Result};
pub use key::{KeyOrder, Seqno, ValueKind};
pub use merge::{MergeOperator, PurgeContext, Resolved, Version};
pub use mosaic_env::fault::{Faults, FaultyFs};
pub use mosaic_env::{
    remove_durably, write_atomically, Clock, Fs, ManualClock, RealFs, SystemClock,
};
pub use options::{
    CompactionEvent, CompactionFilter, CompactionListener, DynamicLevels, GroupOf, LevelPolicy,
    LogOptions, Options, StaticLevels, TableStore,
};
pub use stats::{BlockKind, CounterSnapshot, Counters, ReadPurpose};
pub use table::{BlockCache, Compression, TableOptions, TableReader, TableWriter};
pub use wal::{Damage, SyncMode, WalDrop, WriteBatch, DAMAGED_DIR};
