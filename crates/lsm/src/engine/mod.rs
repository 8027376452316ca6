//! The node engine: one storage engine per node, every table (and every structure of a
//! table's layout) a *partition* of it — the shape of RocksDB's column families or
//! Cassandra's shared commit log.
//!
//! What partitions share, and what each keeps:
//!
//! - **One write-ahead log** (`<root>/wal/<id>.wal`), appended by one group commit for all
//!   partitions: a record carries the batches of several partitions, each tagged with its
//!   partition id, and is synced once per the [`SyncMode`]. Each partition keeps its own
//!   memtables, levels (or two-layer log), manifest and counters in its own directory, and
//!   its manifest records the highest sequence number flushed to its tables; recovery
//!   replays a WAL record into a partition only past that point. A WAL file is deleted once
//!   no memtable (of any partition) holds a write it logged.
//! - **One pool of workers**: `flush_threads` threads flush frozen memtables (the
//!   partition holding the most frozen memory first) and `compaction_threads` threads run
//!   compactions and log splits (the partition with the most level-0 tables first), so the
//!   thread count does not grow with the number of tables. Compaction output is throttled
//!   by one node-wide rate limit (`compaction_bytes_per_sec`).
//! - **Global budgets**: all memtables together may hold `memtable_space_bytes`; when the
//!   memory not yet being flushed passes `memtable_cleanup_threshold` of it, the largest
//!   memtable is frozen and flushed (as Cassandra's `memtable_cleanup_threshold` does), and a
//!   writer waits only when the node as a whole is out of memtable space. One block cache
//!   serves every partition.
//! - **A catalog** (`PARTITIONS`) mapping partition ids to directories; dropping a
//!   partition removes it from the catalog (so its WAL records are never replayed) and
//!   deletes its files.
//!
//! A partition is opened with [`crate::Db::open`] and [`crate::Options::engine`] set to the
//! node's [`Engine`]; without it, `Db::open` opens a private engine in the database's own
//! directory, so a standalone database is simply an engine with one partition.
//!
//! A directory written by the per-table engines that preceded the node engine (each table
//! with its own WAL files) is migrated when the partition is first opened: its WAL is
//! replayed into level-0 tables, recorded in a fresh manifest, and deleted.

mod catalog;
mod commit;
mod workers;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use parking_lot::{Condvar, Mutex};

use mosaic_env::{Fs, RealFs};

use crate::db::{Inner, RecoveryReport};
use crate::error::{Error, Result};
use crate::key::{Seqno, ValueKind};
use crate::memtable::Memtable;
use crate::options::Options;
use crate::table::BlockCache;
use crate::wal::SyncMode;

use catalog::Catalog;
pub(crate) use catalog::{partition_dir, partition_name};
pub(crate) use commit::batch_charge;
use commit::{WalState, WriterQueue};
pub use workers::BackgroundWork;
use workers::RateLimiter;
pub(crate) use workers::MANUAL_JOBS_MAX;

/// The directory of the shared WAL, under the engine's root.
const WAL_DIR: &str = "wal";

/// Node-wide settings of an [`Engine`].
#[derive(Clone)]
pub struct EngineOptions {
    /// File system (the real one, or a fault-injecting one in tests).
    pub fs: Arc<dyn Fs>,
    /// When the shared WAL is synced.
    pub sync_mode: SyncMode,
    /// Bytes all memtables together may hold (0: no node-wide limit).
    pub memtable_space_bytes: usize,
    /// Fraction of `memtable_space_bytes` the memtables not yet being flushed may hold
    /// before the largest is frozen and flushed (Cassandra's `memtable_cleanup_threshold`).
    pub memtable_cleanup_threshold: f64,
    /// The node's block cache, shared by every partition (0 disables it).
    pub block_cache_bytes: u64,
    /// Keep tables' index blocks and Bloom filters in the block cache — charged to
    /// `block_cache_bytes`, evicted and read back like data blocks — instead of pinned in
    /// memory, outside any budget, while the table is open (RocksDB's
    /// `cache_index_and_filter_blocks`). Off by default, as in RocksDB and Cassandra: pinned
    /// metadata costs two cache lookups less per table probed, and is about 1% of the data
    /// with 4 KiB blocks and 10 Bloom bits per key. On when that 1% does not fit in memory
    /// beside the cache, so metadata competes for the cache by use. Ignored without a
    /// block cache (metadata is then pinned).
    pub cache_index_and_filter_blocks: bool,
    /// Data blocks larger than this are read past the block cache, never inserted (0: no
    /// limit). A block that large holds one large value: caching it would evict hundreds
    /// of small blocks for a single item, so a workload mixing small and large items keeps
    /// its small ones cached (the hits per cached byte of a 1 MiB value are a 256th of a
    /// 4 KiB block's at the same access rate).
    pub block_cache_max_block_bytes: u64,
    /// Threads flushing memtables, for the whole node. Both this and `compaction_threads`
    /// 0: manual mode, no background threads at all (see [`Engine::run_background_work`]).
    pub flush_threads: usize,
    /// Threads running compactions and log splits, for the whole node.
    pub compaction_threads: usize,
    /// Node-wide limit on the bytes compactions write per second (0: unlimited).
    pub compaction_bytes_per_sec: u64,
    /// A WAL file is closed and a new one started past this size.
    pub wal_file_bytes: u64,
    /// When the WAL files together pass this size, partitions whose memtables keep the
    /// oldest one alive are flushed (0: no limit).
    pub wal_space_bytes: u64,
    /// Open even when the WAL is damaged before its end (acknowledged writes from the
    /// damage on are lost; the damaged file is kept in `wal/damaged/`). Off: such damage
    /// fails the open with an error naming the file and offset (Cassandra's
    /// `cassandra.commitlog.ignorereplayerrors`).
    pub ignore_wal_corruption: bool,
    /// How long a write may wait in a stall (the node out of memtable space, or a
    /// partition's frozen memtables or level-0 tables piled up) before it is refused with
    /// [`Error::WriteStalled`]; `None` waits as long as it
    /// takes. A server sets its write timeout here, so a stalled write fails in time
    /// instead of queueing without bound.
    pub write_stall_timeout: Option<Duration>,
}

impl Default for EngineOptions {
    fn default() -> Self {
        Self {
            fs: Arc::new(RealFs),
            sync_mode: SyncMode::default(),
            memtable_space_bytes: 256 << 20,
            memtable_cleanup_threshold: 0.33,
            block_cache_bytes: 128 << 20,
            cache_index_and_filter_blocks: false,
            block_cache_max_block_bytes: 0,
            flush_threads: 2,
            compaction_threads: 2,
            compaction_bytes_per_sec: 0,
            wal_file_bytes: 64 << 20,
            wal_space_bytes: 1 << 30,
            ignore_wal_corruption: false,
            write_stall_timeout: None,
        }
    }
}

impl std::fmt::Debug for EngineOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EngineOptions")
            .field("sync_mode", &self.sync_mode)
            .field("memtable_space_bytes", &self.memtable_space_bytes)
            .field("block_cache_bytes", &self.block_cache_bytes)
            .field(
                "cache_index_and_filter_blocks",
                &self.cache_index_and_filter_blocks,
            )
            .field(
                "block_cache_max_block_bytes",
                &self.block_cache_max_block_bytes,
            )
            .field("flush_threads", &self.flush_threads)
            .field("compaction_threads", &self.compaction_threads)
            .field("write_stall_timeout", &self.write_stall_timeout)
            .finish_non_exhaustive()
    }
}

impl EngineOptions {
    /// The engine a standalone database opens for itself: its own sync mode, cache and
    /// compaction threads, no node-wide memtable limit (its per-memtable limits apply).
    pub fn private_for(opts: &Options) -> EngineOptions {
        EngineOptions {
            fs: opts.fs.clone(),
            sync_mode: opts.sync_mode,
            memtable_space_bytes: 0,
            block_cache_bytes: opts.block_cache_bytes,
            cache_index_and_filter_blocks: opts.cache_index_and_filter_blocks,
            flush_threads: 1,
            compaction_threads: opts.compaction_threads,
            wal_space_bytes: 0,
            ignore_wal_corruption: opts.ignore_wal_corruption,
            ..EngineOptions::default()
        }
    }

    /// Checks the options for values the engine cannot work with.
    pub fn validate(&self) -> Result<()> {
        let bad = |what: &str| Err(Error::InvalidArgument(what.to_owned()));
        if (self.flush_threads == 0) != (self.compaction_threads == 0) {
            return bad(
                "flush_threads and compaction_threads must be at least 1 (or both 0: manual mode)",
            );
        }
        if !(0.05..=0.95).contains(&self.memtable_cleanup_threshold) {
            return bad("memtable_cleanup_threshold must be between 0.05 and 0.95");
        }
        if self.memtable_space_bytes != 0 && self.memtable_space_bytes < 64 << 10 {
            return bad("memtable_space_bytes must be 0 (unlimited) or at least 64 KiB");
        }
        if self.wal_file_bytes < 4096 {
            return bad("wal_file_bytes must be at least 4 KiB");
        }
        if let SyncMode::Periodic { interval_ms: 0 } = self.sync_mode {
            return bad("periodic sync interval must be at least 1 ms");
        }
        Ok(())
    }
}

/// One operation replayed from the WAL for a partition not opened yet.
pub(crate) struct OwnedOp {
    pub seqno: Seqno,
    pub kind: ValueKind,
    pub ts: u64,
    pub key: Vec<u8>,
    pub value: Vec<u8>,
}

/// Replayed writes waiting for their partition to be opened.
#[derive(Default)]
pub(crate) struct PendingWrites {
    ops: Vec<OwnedOp>,
    /// The oldest WAL file holding one of them.
    oldest_wal: u64,
}

/// The partitions the engine knows of.
#[derive(Default)]
struct Registry {
    catalog: Catalog,
    /// Open partitions.
    open: BTreeMap<u32, Arc<Inner>>,
    /// Memtables of closed partitions, still unflushed (their WAL files stay), handed
    /// back when the partition is opened again.
    parked: BTreeMap<u32, Vec<Arc<Memtable>>>,
    /// Writes replayed at open for partitions not opened since.
    pending: BTreeMap<u32, PendingWrites>,
}

/// Memtable memory, node-wide.
#[derive(Default, Debug)]
pub(crate) struct Budget {
    /// Bytes held by every memtable (active, frozen, of closed partitions).
    pub used: usize,
    /// Bytes admitted writers are about to insert.
    pub reserved: usize,
    /// Of `used`, the bytes in frozen memtables (being flushed, or waiting to be).
    pub frozen: usize,
}

/// Wakes the workers: a generation counter, so a signal between a worker's look for work
/// and its wait is never lost.
#[derive(Default)]
struct WorkSignal {
    closing: bool,
    generation: u64,
}

/// The directory lock, held while the engine is open.
type DirLock = Box<dyn std::any::Any + Send + Sync>;

/// What the engine shares with its partitions and workers.
pub(crate) struct Shared {
    root: PathBuf,
    wal_dir: PathBuf,
    pub(crate) opts: EngineOptions,
    pub(crate) cache: Option<Arc<BlockCache>>,
    writers: Mutex<WriterQueue>,
    writers_cv: Condvar,
    wal: Mutex<WalState>,
    /// Held by whoever syncs the WAL, so a sync returns only after every file closed
    /// before it began is durable, even while another sync is still syncing it.
    wal_sync: Mutex<()>,
    frame_scratch: Mutex<Vec<u8>>,
    /// The newest sequence number handed out.
    last_seqno: AtomicU64,
    /// Why writes are refused until reopen (a failed WAL write or sync).
    poisoned: Mutex<Option<String>>,
    pub(crate) budget: Mutex<Budget>,
    pub(crate) budget_cv: Condvar,
    /// Some writer is freezing the largest memtable to free memory.
    relieving: AtomicBool,
    /// Writers waiting in a stall right now (see [`Engine::is_stalling`]).
    pub(crate) stalled_writers: AtomicUsize,
    /// When a writer last waited in a stall (monotonic µs; 0: never).
    pub(crate) last_stall_micros: AtomicU64,
    registry: Mutex<Registry>,
    work: Mutex<WorkSignal>,
    work_cv: Condvar,
    limiter: Option<RateLimiter>,
    closing: AtomicBool,
    lock: Mutex<Option<DirLock>>,
    recovery: RecoveryReport,
}

/// Stops the workers when the last [`Engine`] handle (or partition of it) goes away.
struct EngineCloser {
    shared: Arc<Shared>,
    threads: Mutex<Vec<JoinHandle<()>>>,
}

impl EngineCloser {
    fn shutdown(&self) {
        self.shared.closing.store(true, Ordering::SeqCst);
        {
            let mut w = self.shared.work.lock();
            w.closing = true;
        }
        self.shared.work_cv.notify_all();
        self.shared.budget_cv.notify_all();
        for t in self.threads.lock().drain(..) {
            let _ = t.join();
        }
        let _ = self.shared.sync_wal();
        // Partitions still open keep their memtables (their writes stay in the WAL).
        let open: Vec<Arc<Inner>> = {
            let mut reg = self.shared.registry.lock();
            std::mem::take(&mut reg.open).into_values().collect()
        };
        for p in open {
            p.mark_closing();
        }
        self.shared.lock.lock().take();
    }
}

impl Drop for EngineCloser {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// A node's storage engine. Cheap to clone; it shuts down when the last handle and the
/// last of its partitions' [`crate::Db`] handles are gone, or at [`Engine::close`].
#[derive(Clone)]
pub struct Engine {
    pub(crate) shared: Arc<Shared>,
    closer: Arc<EngineCloser>,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("root", &self.shared.root)
            .finish_non_exhaustive()
    }
}

impl Engine {
    /// Opens (creating if needed) the engine rooted at `dir`: reads its partition catalog,
    /// finishes interrupted drops, replays the shared WAL (holding each partition's
    /// writes until it is opened) and starts the workers.
    pub fn open(dir: impl AsRef<Path>, opts: EngineOptions) -> Result<Engine> {
        opts.validate()?;
        let root = dir.as_ref().to_path_buf();
        let fs = opts.fs.clone();
        let wal_dir = root.join(WAL_DIR);
        fs.create_dir_all(&wal_dir)
            .map_err(|e| Error::io("creating directory", &wal_dir, e))?;
        let lock_path = wal_dir.join("LOCK");
        let lock = fs
            .lock(&lock_path)
            .map_err(|e| Error::io("locking", &lock_path, e))?;
        let mut catalog = Catalog::read(&fs, &root)?;
        finish_drops(&fs, &root, &mut catalog)?;
        let mut replay = commit::replay(&fs, &wal_dir, &catalog, opts.ignore_wal_corruption)?;
        let mut wal = WalState::start(&fs, &wal_dir, replay.files, replay.next_wal_id)?;
        if !replay.report.dropped.is_empty() {
            replay.report.kept =
                wal.rewrite_pending(&fs, &wal_dir, &mut replay.pending, &replay.damaged)?;
        }
        let cache = (opts.block_cache_bytes > 0).then(|| {
            BlockCache::with_metadata(opts.block_cache_bytes, opts.cache_index_and_filter_blocks)
                .admitting_up_to(opts.block_cache_max_block_bytes)
        });
        let limiter = (opts.compaction_bytes_per_sec > 0)
            .then(|| RateLimiter::new(opts.compaction_bytes_per_sec));
        let shared = Arc::new(Shared {
            root,
            wal_dir,
            cache,
            writers: Mutex::new(WriterQueue::default()),
            writers_cv: Condvar::new(),
            wal: Mutex::new(wal),
            frame_scratch: Mutex::new(Vec::new()),
            wal_sync: Mutex::new(()),
            last_seqno: AtomicU64::new(replay.max_seqno),
            poisoned: Mutex::new(None),
            budget: Mutex::new(Budget::default()),
            budget_cv: Condvar::new(),
            relieving: AtomicBool::new(false),
            stalled_writers: AtomicUsize::new(0),
            last_stall_micros: AtomicU64::new(0),
            registry: Mutex::new(Registry {
                catalog,
                pending: replay.pending,
                ..Registry::default()
            }),
            work: Mutex::new(WorkSignal::default()),
            work_cv: Condvar::new(),
            limiter,
            closing: AtomicBool::new(false),
            lock: Mutex::new(Some(lock)),
            recovery: replay.report,
            opts,
        });
        shared.retire_wals();
        let threads = workers::start(&shared)?;
        Ok(Engine {
            closer: Arc::new(EngineCloser {
                shared: shared.clone(),
                threads: Mutex::new(threads),
            }),
            shared,
        })
    }

    /// The engine's root directory.
    pub fn path(&self) -> &Path {
        &self.shared.root
    }

    /// What replaying the shared WAL found at open.
    pub fn recovery_report(&self) -> RecoveryReport {
        self.shared.recovery.clone()
    }

    /// The directories of the partitions the catalog lists.
    pub fn partitions(&self) -> Vec<PathBuf> {
        let reg = self.shared.registry.lock();
        reg.catalog
            .live
            .values()
            .map(|n| partition_dir(&self.shared.root, n))
            .collect()
    }

    /// Bytes held by every memtable of every partition.
    pub fn memtable_bytes(&self) -> usize {
        self.shared.budget.lock().used
    }

    /// Whether a write might wait now: some writer is stalled, or was within the last
    /// second. Two atomic loads, no lock: a server asks before every write, runs it on its
    /// network thread only while this is false, and hands it to a blocking thread
    /// otherwise.
    pub fn is_stalling(&self) -> bool {
        if self.shared.stalled_writers.load(Ordering::Relaxed) > 0 {
            return true;
        }
        let last = self.shared.last_stall_micros.load(Ordering::Relaxed);
        last != 0 && mosaic_env::monotonic_micros().saturating_sub(last) < 1_000_000
    }

    /// The flushes and compactions every open partition has running or due now (see
    /// [`BackgroundWork::is_idle`]).
    pub fn background_work(&self) -> BackgroundWork {
        self.shared.background_work()
    }

    /// Bytes held by the node's block cache.
    pub fn block_cache_bytes(&self) -> u64 {
        self.shared.cache.as_ref().map_or(0, |c| c.usage_bytes())
    }

    /// Bytes in the shared WAL's files.
    pub fn wal_bytes(&self) -> u64 {
        self.shared.wal.lock().total_bytes()
    }

    /// The node-wide settings the engine runs with.
    pub fn options(&self) -> &EngineOptions {
        &self.shared.opts
    }

    /// Syncs the shared WAL.
    pub fn sync_wal(&self) -> Result<()> {
        self.shared.sync_wal()
    }

    /// Runs the flushes and compactions due now on the calling thread, until none is due;
    /// returns how many ran. The only way background work happens in manual mode
    /// (`flush_threads` and `compaction_threads` both 0) besides writers that would
    /// otherwise stall; with workers it merely helps them.
    pub fn run_background_work(&self) -> usize {
        self.shared.run_due_jobs(workers::MANUAL_JOBS_MAX)
    }

    /// Drops every partition whose directory is `dir` or below it: they are closed (their
    /// handles refuse further use), removed from the catalog — so no WAL record of theirs
    /// is ever replayed — and their files deleted (the directories themselves stay, for the
    /// caller to remove). Returns how many were dropped.
    pub fn drop_partitions_under(&self, dir: impl AsRef<Path>) -> Result<usize> {
        self.shared.drop_partitions_under(dir.as_ref())
    }

    /// Stops the workers and releases the directory (idempotent).
    pub(crate) fn shutdown(&self) {
        self.closer.shutdown();
    }

    /// Stops the workers and syncs the WAL. Partitions still open refuse writes from now
    /// on; their unflushed writes stay in the WAL and are replayed at the next open.
    pub fn close(self) -> Result<()> {
        let synced = self.shared.sync_wal();
        self.closer.shutdown();
        synced
    }
}

/// Deletes the files of partitions whose drop was interrupted, then forgets them.
fn finish_drops(fs: &Arc<dyn Fs>, root: &Path, catalog: &mut Catalog) -> Result<()> {
    if catalog.dropping.is_empty() {
        return Ok(());
    }
    for name in &catalog.dropping {
        remove_partition_files(fs, &partition_dir(root, name))?;
    }
    catalog.dropping.clear();
    catalog.write(fs, root)
}

/// Deletes the files of a partition's directory (not the directory, nor subdirectories).
fn remove_partition_files(fs: &Arc<dyn Fs>, dir: &Path) -> Result<()> {
    if !fs.exists(dir) {
        return Ok(());
    }
    for name in fs.list(dir).map_err(|e| Error::io("listing", dir, e))? {
        let p = dir.join(&name);
        let partition_file = name.ends_with(".sst")
            || name.ends_with(".wal")
            || name.starts_with("MANIFEST-")
            || name.starts_with("CURRENT")
            || name == "LOG"
            || name == "LOCK";
        if partition_file {
            fs.remove(&p).map_err(|e| Error::io("removing", &p, e))?;
        }
    }
    fs.sync_dir(dir)
        .map_err(|e| Error::io("syncing directory", dir, e))
}

impl Shared {
    /// Whether the engine is shutting down.
    pub(crate) fn is_closing(&self) -> bool {
        self.closing.load(Ordering::SeqCst)
    }

    /// The engine's root directory.
    pub(crate) fn root(&self) -> &Path {
        &self.root
    }

    /// Why writes are refused, if they are.
    pub(crate) fn poisoned(&self) -> Option<Error> {
        self.poisoned
            .lock()
            .as_ref()
            .map(|c| Error::Poisoned { cause: c.clone() })
    }

    fn poison(&self, e: &Error) {
        let mut p = self.poisoned.lock();
        if p.is_none() {
            *p = Some(e.to_string());
        }
    }

    /// Wakes the workers: some partition may have work.
    pub(crate) fn signal_work(&self) {
        self.work.lock().generation += 1;
        self.work_cv.notify_all();
    }

    /// Throttles compaction output to the node-wide rate.
    pub(crate) fn throttle_compaction(&self, bytes: u64) {
        if let Some(l) = &self.limiter {
            l.request(bytes, &self.closing);
        }
    }

    /// The catalog id of partition `name`, registering it (durably) if new.
    pub(crate) fn register(&self, name: &str) -> Result<u32> {
        let mut reg = self.registry.lock();
        if let Some(id) = reg.catalog.id_of(name) {
            if reg.open.contains_key(&id) {
                return Err(Error::InvalidArgument(format!(
                    "partition {name} is already open"
                )));
            }
            return Ok(id);
        }
        let mut catalog = reg.catalog.clone();
        let id = catalog.next_id;
        catalog.next_id = id
            .checked_add(1)
            .ok_or_else(|| Error::InvalidArgument("partition ids exhausted".into()))?;
        catalog.live.insert(id, name.to_owned());
        catalog.write(&self.opts.fs, &self.root)?;
        reg.catalog = catalog;
        Ok(id)
    }

    /// Makes the recovered partition `inner` live: no sequence number it holds is handed
    /// out again, the writes the WAL replay held for it (past what its tables hold) and the
    /// memtables it left when last closed become its frozen memtables, and the workers
    /// start serving it.
    pub(crate) fn attach(&self, inner: &Arc<Inner>, flushed_seqno: u64) -> Result<()> {
        self.with_leadership(|| {
            let mut reg = self.registry.lock();
            let pid = inner.pid();
            let parked = reg.parked.remove(&pid).unwrap_or_default();
            let pending = reg.pending.remove(&pid);
            let mut memtables = parked;
            let mut added = 0usize;
            if let Some(p) = pending {
                let mut mem = inner.new_memtable();
                for op in p.ops.iter().filter(|op| op.seqno.0 > flushed_seqno) {
                    mem.note_wal(p.oldest_wal);
                    added += mem.insert(&op.key, op.ts, op.seqno, op.kind, &op.value);
                    if mem.size_bytes() >= inner.memtable_size_bytes() {
                        memtables.push(std::mem::replace(&mut mem, inner.new_memtable()));
                    }
                }
                if !mem.is_empty() {
                    memtables.push(mem);
                }
            }
            if added > 0 {
                let mut b = self.budget.lock();
                b.used += added;
                b.frozen += added;
            }
            let max_seqno = inner.adopt_frozen(memtables);
            self.last_seqno.fetch_max(max_seqno, Ordering::SeqCst);
            if self.is_closing() {
                return Err(Error::Closed);
            }
            reg.open.insert(pid, inner.clone());
            Ok(())
        })?;
        self.signal_work();
        Ok(())
    }

    /// Takes closed partition `inner` out of service, keeping its unflushed memtables for
    /// when it is opened again.
    pub(crate) fn detach(&self, inner: &Arc<Inner>) {
        self.with_leadership(|| {
            let mut reg = self.registry.lock();
            let pid = inner.pid();
            if reg.open.get(&pid).is_some_and(|p| Arc::ptr_eq(p, inner)) {
                reg.open.remove(&pid);
                let (memtables, active_bytes) = inner.take_memtables();
                self.budget.lock().frozen += active_bytes;
                if !memtables.is_empty() {
                    reg.parked.insert(pid, memtables);
                }
            }
        });
    }

    fn drop_partitions_under(&self, dir: &Path) -> Result<usize> {
        // 1. Out of the catalog (durably) and out of service.
        let dropped = self.with_leadership(|| -> Result<Vec<(Option<Arc<Inner>>, String)>> {
            let mut reg = self.registry.lock();
            let names: Vec<(u32, String)> = reg
                .catalog
                .live
                .iter()
                .filter(|(_, n)| partition_dir(&self.root, n).starts_with(dir))
                .map(|(id, n)| (*id, n.clone()))
                .collect();
            if names.is_empty() {
                return Ok(Vec::new());
            }
            let mut catalog = reg.catalog.clone();
            for (id, name) in &names {
                catalog.live.remove(id);
                catalog.dropping.push(name.clone());
            }
            catalog.write(&self.opts.fs, &self.root)?;
            reg.catalog = catalog;
            let mut freed = 0usize;
            let mut out = Vec::new();
            for (id, name) in names {
                let open = reg.open.remove(&id);
                if let Some(p) = &open {
                    p.mark_closing();
                }
                for m in reg.parked.remove(&id).unwrap_or_default() {
                    freed += m.size_bytes();
                }
                reg.pending.remove(&id);
                out.push((open, name));
            }
            self.release_memory(freed, freed);
            Ok(out)
        })?;
        // 2. Their running jobs finish; their memtables are discarded; their files go.
        for (open, name) in &dropped {
            if let Some(p) = open {
                p.wait_for_jobs();
                self.with_leadership(|| {
                    let (memtables, active_bytes) = p.take_memtables();
                    let bytes: usize = memtables.iter().map(|m| m.size_bytes()).sum();
                    self.release_memory(bytes, bytes - active_bytes);
                });
                p.unlock();
            }
            remove_partition_files(&self.opts.fs, &partition_dir(&self.root, name))?;
        }
        // 3. The drops are complete.
        if !dropped.is_empty() {
            let mut reg = self.registry.lock();
            let mut catalog = reg.catalog.clone();
            catalog
                .dropping
                .retain(|n| !dropped.iter().any(|(_, d)| d == n));
            catalog.write(&self.opts.fs, &self.root)?;
            reg.catalog = catalog;
        }
        self.retire_wals();
        Ok(dropped.len())
    }

    /// Returns `used` bytes of memtable memory (`frozen` of them frozen) to the budget.
    fn release_memory(&self, used: usize, frozen: usize) {
        {
            let mut b = self.budget.lock();
            b.used = b.used.saturating_sub(used);
            b.frozen = b.frozen.saturating_sub(frozen);
        }
        self.budget_cv.notify_all();
    }

    /// Called after a partition flushed memtable `bytes`: frees its memory and the WAL
    /// files nothing needs any more.
    pub(crate) fn flushed(&self, bytes: usize) {
        self.release_memory(bytes, bytes);
        self.retire_wals();
    }

    /// Accounts for a memtable of `bytes` frozen by a partition.
    pub(crate) fn froze(&self, bytes: usize) {
        self.budget.lock().frozen += bytes;
    }
}

/// How long a waiting writer sleeps before re-checking.
pub(crate) const WAIT_STEP: Duration = Duration::from_millis(100);
