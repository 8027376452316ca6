//! A partition of the node engine: the public [`Db`] handle, the state it shares with the
//! engine's workers, and the types it hands out ([`Entry`], [`Snapshot`], [`Scan`],
//! [`LevelInfo`], [`RecoveryReport`]).
//!
//! Each partition keeps its own memtables, levels (or two-layer log), manifest, snapshots
//! and counters; the WAL, the group commit, the flush and compaction workers, the memtable
//! budget and the block cache belong to the node's [`crate::Engine`] (see
//! [`crate::engine`]). Readers take an atomic snapshot of (memtable, frozen memtables,
//! version) under the state lock and then read without locks. Each flush or compaction is
//! recorded in the partition's manifest before it becomes visible, and the files it
//! replaces are deleted only when the last reader lets go of them.
//!
//! A two-layer log ([`crate::LogOptions`], DEPART's store of redundant replicas) is the same
//! partition with another shape of version: flushes append global-log segments to level 0,
//! and instead of leveled compaction the splitter ([`crate::split`]) moves segments into
//! range groups' sorted runs (level `1 + group`), merge-sorting a group when it would
//! exceed its run bound. The memtable, manifest, recovery and counters are shared, so
//! a split or merge-sort is crash-safe exactly as a compaction is: one manifest edit.
//! A `LOG` marker file keeps such a directory from being opened as a leveled tree.
//!
//! Failures: a failed fsync or a failed non-`ENOSPC` write poisons the partition (or, for
//! the WAL, the engine): writes are refused until reopen. `ENOSPC` refuses writes with
//! [`Error::NoSpace`] and clears by itself once a retried flush or compaction succeeds.
//!
//! The work is split by role, each submodule an `impl` block on the shared state:
//! `recovery` (open), `write` (admission, stalls and slowdowns, memtable switching),
//! `read` (gets and scans), `background` (flush and compaction jobs), `output` (writing
//! tables from a merged input, deciding which versions survive), `install` (recording
//! version edits in the manifest and making them visible) and `props` (the table
//! properties the engine writes and reads back).

mod background;
mod ingest;
mod install;
mod lifecycle;
mod output;
mod props;
mod read;
mod recovery;
#[cfg(test)]
mod tests;
mod write;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::{Condvar, Mutex};

use mosaic_env::Fs;

use crate::engine::{Engine, Shared};
use crate::error::{Error, Result};
use crate::iter::MergingIter;
use crate::key::{Seqno, ValueKind};
use crate::memtable::Memtable;
use crate::merge::Version as KeyVersion;
use crate::options::Options;
use crate::stats::{CounterSnapshot, Counters};
use crate::table::BlockCache;
use crate::version::{ManifestWriter, Version};
use crate::wal::{WalDrop, WriteBatch};

pub use ingest::Ingested;

/// Upper bound on one wait of a stalled writer (or a caller waiting on background work)
/// before it re-checks the state.
const STALL_WAIT: Duration = Duration::from_millis(100);

/// The empty version of an engine with `opts`.
fn empty_version(opts: &Options) -> Version {
    if opts.log.is_some() {
        Version::new_log()
    } else {
        Version::new(opts.levels_max)
    }
}

/// One version of a key as owned bytes: `(ts, seqno, kind, value)`.
type OwnedVersion = (u64, Seqno, ValueKind, Vec<u8>);

/// Borrowed views of owned versions, for resolution.
fn views_of<'a>(versions: impl Iterator<Item = &'a OwnedVersion>) -> Vec<KeyVersion<'a>> {
    versions
        .map(|(ts, _, kind, value)| KeyVersion {
            ts: *ts,
            kind: *kind,
            value,
        })
        .collect()
}

/// A value as read: the winning version's timestamp and bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// The caller's timestamp of the winning version.
    pub ts: u64,
    /// The value.
    pub value: Vec<u8>,
}

/// What recovery found when the database was opened.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RecoveryReport {
    /// WAL files replayed.
    pub wal_files_replayed: usize,
    /// WAL records (write groups) replayed.
    pub records_replayed: u64,
    /// Torn or corrupt WAL tails that were dropped (never acknowledged under `PerWrite` or
    /// `Batch` sync, since a record is synced before its writes are acknowledged).
    pub dropped: Vec<WalDrop>,
    /// Orphaned files (from an interrupted flush or compaction) removed.
    pub orphans_removed: usize,
    /// Damaged WAL files skipped by the operator's choice (`ignore_wal_corruption`), where
    /// they are now kept.
    pub kept: Vec<std::path::PathBuf>,
}

/// One table as listed by [`Db::levels`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TableInfo {
    /// Table id.
    pub id: u64,
    /// File size.
    pub size_bytes: u64,
    /// Entries.
    pub entries: u64,
    /// Smallest user key.
    pub smallest_key: Vec<u8>,
    /// Largest user key.
    pub largest_key: Vec<u8>,
    /// Smallest caller timestamp.
    pub min_ts: u64,
    /// Largest caller timestamp.
    pub max_ts: u64,
    /// Creation time, microseconds since the epoch.
    pub created_micros: u64,
    /// Reads served since the table was opened (hotness).
    pub reads: u64,
    /// Where the data lives (empty: the local file).
    pub location: String,
    /// Bytes on local disk: `size_bytes`, or a relocated table's metadata sidecar.
    pub local_bytes: u64,
}

/// The tables of one level.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LevelInfo {
    /// Level number.
    pub level: usize,
    /// Tables, in level order.
    pub tables: Vec<TableInfo>,
}

/// A consistent point-in-time view for [`Db::get_at`] and [`Db::scan_at`]; released on drop.
pub struct Snapshot {
    seqno: Seqno,
    inner: Arc<Inner>,
}

impl Snapshot {
    /// The sequence number the snapshot sees up to.
    pub fn seqno(&self) -> Seqno {
        self.seqno
    }
}

impl Drop for Snapshot {
    fn drop(&mut self) {
        let mut snaps = self.inner.snapshots.lock();
        if let Some(n) = snaps.get_mut(&self.seqno.0) {
            *n -= 1;
            if *n == 0 {
                snaps.remove(&self.seqno.0);
            }
        }
    }
}

/// The memtables and version a reader sees, swapped as a unit.
struct SuperVersion {
    mem: Arc<Memtable>,
    imm: Vec<Arc<Memtable>>,
    version: Arc<Version>,
}

/// What the engine's threads share under `Inner::state`; whoever waits on `state_cv`
/// re-checks it after every wake-up.
struct State {
    /// Cached reader view; `None` after any change to `mem`, `imm` or `version`.
    sv: Option<Arc<SuperVersion>>,
    /// The memtable writes go to.
    mem: Arc<Memtable>,
    /// Frozen memtables waiting for flush, oldest first.
    imm: Vec<Arc<Memtable>>,
    /// The live tables.
    version: Arc<Version>,
    /// The next unused file id (WALs, tables and manifests share one sequence).
    next_file_id: u64,
    /// Per-table WALs (the format before the node engine) numbered below this are
    /// superseded by the manifest.
    log_number: u64,
    /// The largest sequence number of a write in a table: the shared WAL's replay into
    /// this partition starts after it.
    flushed_seqno: u64,
    /// Tables claimed by a running compaction or split.
    busy: HashSet<u64>,
    /// Each running compaction's or split's output level and the user-key span of its
    /// inputs (its outputs fall within it), keyed by its smallest input table id: an
    /// ingest may not place a table there.
    running: HashMap<u64, (usize, Vec<u8>, Vec<u8>)>,
    /// Levels and user-key spans reserved by ingests being installed: the compaction
    /// picker sees them as busy tables, so no job writes into them meanwhile.
    ingesting: Vec<(usize, Vec<u8>, Vec<u8>)>,
    /// Per level, the largest key of the last table compacted out of it.
    cursors: Vec<Vec<u8>>,
    /// The version changed since the compaction picker last found nothing to do.
    maybe_work: bool,
    /// After a failed job, background work waits until this (monotonic) time.
    retry_at: u64,
    /// The flush thread is writing a memtable.
    flushing: bool,
    /// Compactions and splits running, a manual one included.
    compactions_running: usize,
    /// A manual compaction holds (or waits for) every table; the picker stands aside.
    manual_compaction: bool,
    /// The last background job found the disk full: writes are refused until one succeeds.
    no_space: Option<Error>,
    /// Why writes are refused until reopen (a failed fsync or write).
    poisoned: Option<String>,
    /// The partition is closed (or dropped): workers leave it alone, writes fail.
    closing: bool,
}

/// The directory lock, held while the engine is open.
type DirLock = Box<dyn std::any::Any + Send + Sync>;

/// Everything the [`Db`] handles, the engine's workers, snapshots and scans share.
pub(crate) struct Inner {
    dir: PathBuf,
    opts: Options,
    fs: Arc<dyn Fs>,
    counters: Arc<Counters>,
    cache: Option<Arc<BlockCache>>,
    /// The node engine this is a partition of.
    engine: Arc<Shared>,
    /// This partition's id in the engine's catalog (tags its WAL records).
    pid: u32,
    state: Mutex<State>,
    /// Wakes waiters on `state`: stalled writers, `flush` and `wait_for_compactions`
    /// callers, a closing partition waiting for its jobs.
    state_cv: Condvar,
    /// The manifest being appended to; `None` while opening or after a failed append (the
    /// next install writes a new one). Its lock serialises installs.
    manifest: Mutex<Option<ManifestWriter>>,
    /// The newest sequence number readers may see.
    visible_seqno: AtomicU64,
    /// Live snapshots: sequence number → how many.
    snapshots: Mutex<BTreeMap<u64, usize>>,
    /// What recovery found at open.
    recovery: RecoveryReport,
    /// The directory lock, released at close even while snapshots or scans live on.
    lock: Mutex<Option<DirLock>>,
}

/// Closes the partition when the last [`Db`] handle goes away.
struct Closer {
    inner: Arc<Inner>,
    engine: Engine,
    /// The engine was opened for this database alone: it closes with it.
    private: bool,
}

impl Closer {
    /// Takes the partition out of service: waits for its running jobs, hands its
    /// unflushed memtables to the engine (their writes stay in the WAL) and releases the
    /// directory lock; a private engine shuts down too. Idempotent: `Db::close` and the
    /// last drop both call it.
    fn shutdown(&self) {
        self.inner.mark_closing();
        self.inner.wait_for_jobs();
        self.inner.engine.detach(&self.inner);
        // Writes are refused from now on, so another process (or handle) may open the
        // directory; live scans keep reading their pinned files.
        self.inner.unlock();
        if self.private {
            self.engine.shutdown();
        }
    }
}

impl Drop for Closer {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// An open database. Cheap to clone; the engine shuts down when the last clone drops (or at
/// [`Db::close`]).
#[derive(Clone)]
pub struct Db {
    inner: Arc<Inner>,
    closer: Arc<Closer>,
}

impl std::fmt::Debug for Db {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Db")
            .field("dir", &self.inner.dir)
            .finish_non_exhaustive()
    }
}

impl Db {
    /// Opens (creating if needed) the database in `path`, recovering from the manifest and
    /// replaying write-ahead logs.
    pub fn open(path: impl AsRef<Path>, opts: Options) -> Result<Db> {
        recovery::open(path.as_ref(), opts)
    }

    /// What recovery found at open.
    pub fn recovery_report(&self) -> RecoveryReport {
        self.inner.recovery.clone()
    }

    /// The database directory.
    pub fn path(&self) -> &Path {
        &self.inner.dir
    }

    /// Sets `key` to `value` as of timestamp `ts`.
    pub fn put(&self, key: &[u8], ts: u64, value: &[u8]) -> Result<()> {
        let mut b = WriteBatch::new();
        b.put(key, ts, value);
        self.write(b)
    }

    /// Deletes `key` as of timestamp `ts` (a tombstone).
    pub fn delete(&self, key: &[u8], ts: u64) -> Result<()> {
        let mut b = WriteBatch::new();
        b.delete(key, ts);
        self.write(b)
    }

    /// Adds a merge operand for `key` at `ts`.
    pub fn merge(&self, key: &[u8], ts: u64, operand: &[u8]) -> Result<()> {
        let mut b = WriteBatch::new();
        b.merge(key, ts, operand);
        self.write(b)
    }

    /// Applies a batch atomically. When this returns `Ok`, the batch is durable per the
    /// engine's sync mode.
    pub fn write(&self, batch: WriteBatch) -> Result<()> {
        self.inner.commit(batch)
    }

    /// The newest version of `key`, or `None` if absent or deleted.
    pub fn get(&self, key: &[u8]) -> Result<Option<Entry>> {
        let seqno = Seqno(self.inner.visible_seqno.load(Ordering::SeqCst));
        self.inner.get(key, seqno)
    }

    /// A consistent view of the database as of now.
    pub fn snapshot(&self) -> Snapshot {
        // Register under the snapshot lock so compaction never misses a snapshot being taken.
        let mut snaps = self.inner.snapshots.lock();
        let seqno = self.inner.visible_seqno.load(Ordering::SeqCst);
        *snaps.entry(seqno).or_insert(0) += 1;
        Snapshot {
            seqno: Seqno(seqno),
            inner: self.inner.clone(),
        }
    }

    /// `key` as of `snapshot`.
    pub fn get_at(&self, key: &[u8], snapshot: &Snapshot) -> Result<Option<Entry>> {
        self.inner.get(key, snapshot.seqno)
    }

    /// Live keys in `[start, end)` bounds, ascending, as of now.
    pub fn scan(&self, start: Bound<&[u8]>, end: Bound<&[u8]>) -> Result<Scan> {
        let seqno = Seqno(self.inner.visible_seqno.load(Ordering::SeqCst));
        self.inner.scan(seqno, start, end)
    }

    /// Live keys in the bounds as of `snapshot`.
    pub fn scan_at(
        &self,
        snapshot: &Snapshot,
        start: Bound<&[u8]>,
        end: Bound<&[u8]>,
    ) -> Result<Scan> {
        self.inner.scan(snapshot.seqno, start, end)
    }

    /// Flushes the memtable to a level-0 table and waits until every frozen memtable is
    /// flushed.
    pub fn flush(&self) -> Result<()> {
        self.inner.freeze_as_leader()?;
        self.inner.wait_for_flushes()
    }

    /// Compacts everything into the bottom level and waits for it.
    pub fn compact(&self) -> Result<()> {
        self.flush()?;
        self.inner.manual_compaction()
    }

    /// Waits until background compaction has nothing left to do.
    pub fn wait_for_compactions(&self) -> Result<()> {
        self.inner.wait_for_idle()
    }

    /// The engine's counters.
    pub fn counters(&self) -> CounterSnapshot {
        self.inner.counters.snapshot()
    }

    /// The live tables per level, with size, key range, creation time and read count.
    pub fn levels(&self) -> Vec<LevelInfo> {
        let version = self.inner.state.lock().version.clone();
        version
            .levels
            .iter()
            .enumerate()
            .map(|(level, tables)| LevelInfo {
                level,
                tables: tables
                    .iter()
                    .map(|t| {
                        let m = t.meta();
                        TableInfo {
                            id: m.id,
                            size_bytes: m.size_bytes,
                            entries: m.entries,
                            smallest_key: m.smallest_user_key().to_vec(),
                            largest_key: m.largest_user_key().to_vec(),
                            min_ts: m.min_ts,
                            max_ts: m.max_ts,
                            created_micros: m.created_micros,
                            reads: t.reads(),
                            location: m.location.clone(),
                            local_bytes: t.local_bytes(),
                        }
                    })
                    .collect(),
            })
            .collect()
    }

    /// The local file of table `id` (whether or not it is live).
    pub fn table_file_path(&self, id: u64) -> PathBuf {
        self.inner.dir.join(crate::version::table_file_name(id))
    }

    /// Bytes held by the memtables (active and frozen).
    pub fn memtable_bytes(&self) -> usize {
        let st = self.inner.state.lock();
        st.mem.size_bytes() + st.imm.iter().map(|m| m.size_bytes()).sum::<usize>()
    }

    /// Bytes held by the block cache (the node's, when shared).
    pub fn block_cache_bytes(&self) -> u64 {
        self.inner.cache.as_ref().map_or(0, |c| c.usage_bytes())
    }

    /// Records that table `id`'s data now lives at `location` (understood by the configured
    /// [`crate::TableStore`]) and removes the local data file. The caller must have copied the
    /// file's bytes there first; reads switch to the new location immediately.
    pub fn relocate_table(&self, id: u64, location: &str) -> Result<()> {
        self.inner.relocate_table(id, location)
    }

    /// The node engine this database is a partition of.
    pub fn engine(&self) -> &Engine {
        &self.closer.engine
    }

    /// Stops background work on this database and syncs the WAL. Data not yet flushed
    /// stays in the WAL and is replayed at the next open.
    pub fn close(self) -> Result<()> {
        let synced = self.inner.engine.sync_wal();
        self.closer.shutdown();
        synced
    }
}

/// A consistent, ascending iterator over live keys; yields `(key, entry)`.
pub struct Scan {
    iter: MergingIter,
    seqno: Seqno,
    end: Bound<Vec<u8>>,
    skip: Option<Vec<u8>>,
    inner: Arc<Inner>,
    done: bool,
    versions: Vec<OwnedVersion>,
}
