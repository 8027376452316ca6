//! The engine: write path with group commit, memtable switching and write stalls, background
//! flush and compaction, point gets and consistent scans, crash recovery.
//!
//! Concurrency: one *leader* writer at a time appends a group of batches to the WAL, syncs
//! per the sync mode, and applies them to the memtable; readers take an atomic snapshot of
//! (memtable, frozen memtables, version) under the state lock and then read without locks.
//! Background threads flush frozen memtables and run compactions; each result is recorded
//! in the manifest before it becomes visible, and the files it replaces are deleted only
//! when the last reader lets go of them.
//!
//! A two-layer log ([`crate::LogOptions`], DEPART's store of redundant replicas) is the same
//! engine with another shape of version: flushes append global-log segments to level 0,
//! and instead of leveled compaction the splitter ([`crate::split`]) moves segments into
//! range groups' sorted runs (level `1 + group`), merge-sorting a group when it would
//! exceed its run bound. The WAL, memtable, manifest, recovery and counters are shared, so
//! a split or merge-sort is crash-safe exactly as a compaction is: one manifest edit.
//! A `LOG` marker file keeps such a directory from being opened as a leveled tree.
//!
//! Failures: a failed fsync or a failed non-`ENOSPC` write poisons the engine (writes are
//! refused until reopen). `ENOSPC` refuses writes with [`Error::NoSpace`] and clears by itself
//! once a retried flush or compaction (or a WAL switch) succeeds.

use std::collections::{BTreeMap, HashSet};
use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use parking_lot::{Condvar, Mutex};

use mosaic_env::Fs;

use crate::compaction::{self, TableView, Task};
use crate::error::{Error, Result};
use crate::iter::{InternalIter, LevelIter, MergingIter};
use crate::key::{encode_internal, parse_internal, seek_key, user_key, Seqno, ValueKind};
use crate::memtable::{FrozenIter, MemIter, Memtable};
use crate::merge::{lww_beats, PurgeContext, Resolved, Version as KeyVersion};
use crate::options::{CompactionEvent, GroupOf, Options};
use crate::split;
use crate::stats::{CounterSnapshot, Counters, ReadPurpose};
use crate::table::{BlockCache, TableReader, TableWriter};
use crate::version::{
    current_manifest, manifest_file_name, read_manifest, table_file_name, wal_file_name,
    ManifestWriter, TableHandle, TableMeta, Version, VersionEdit, LOG_LEVELS_MAX,
};
use crate::wal::{
    decode_batches, encode_batches, frame_with, Records, SyncMode, WalDrop, WalWriter, WriteBatch,
};

/// How long background threads wait before retrying after a full disk.
const NO_SPACE_RETRY: Duration = Duration::from_millis(200);
/// Upper bound on one wait of a stalled writer before it re-checks the state.
const STALL_WAIT: Duration = Duration::from_millis(100);
/// Bytes of batches one leader takes into a group commit.
const GROUP_BYTES_MAX: usize = 4 << 20;
/// The file that marks a directory as a two-layer log.
const LOG_MARKER: &str = "LOG";

/// The empty version of an engine with `opts`.
fn empty_version(opts: &Options) -> Version {
    if opts.log.is_some() {
        Version::new_log()
    } else {
        Version::new(opts.levels_max)
    }
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

struct State {
    /// Cached reader view; `None` after any change to `mem`, `imm` or `version`.
    sv: Option<Arc<SuperVersion>>,
    mem: Arc<Memtable>,
    imm: Vec<Arc<Memtable>>,
    version: Arc<Version>,
    next_file_id: u64,
    log_number: u64,
    busy: HashSet<u64>,
    cursors: Vec<Vec<u8>>,
    wal_broken: bool,
    flushing: bool,
    compactions_running: usize,
    manual_compaction: bool,
    no_space: Option<Error>,
    poisoned: Option<String>,
    closing: bool,
}

#[derive(Default)]
struct WriterQueue {
    queue: std::collections::VecDeque<(u64, WriteBatch)>,
    results: std::collections::HashMap<u64, Result<()>>,
    next_ticket: u64,
    leader: bool,
}

struct Inner {
    dir: PathBuf,
    opts: Options,
    fs: Arc<dyn Fs>,
    counters: Arc<Counters>,
    cache: Option<Arc<BlockCache>>,
    state: Mutex<State>,
    state_cv: Condvar,
    writers: Mutex<WriterQueue>,
    writers_cv: Condvar,
    wal: Mutex<Option<WalWriter>>,
    /// The leader writer's reusable buffer for framed WAL records.
    frame_scratch: Mutex<Vec<u8>>,
    manifest: Mutex<Option<ManifestWriter>>,
    visible_seqno: AtomicU64,
    snapshots: Mutex<BTreeMap<u64, usize>>,
    recovery: RecoveryReport,
    /// The directory lock, released at close even while snapshots or scans live on.
    lock: Mutex<Option<Box<dyn std::any::Any + Send + Sync>>>,
}

/// Stops the background threads when the last [`Db`] handle goes away.
struct Closer {
    inner: Arc<Inner>,
    threads: Mutex<Vec<JoinHandle<()>>>,
}

impl Closer {
    fn shutdown(&self) {
        self.inner.state.lock().closing = true;
        self.inner.state_cv.notify_all();
        for t in self.threads.lock().drain(..) {
            let _ = t.join();
        }
        if let Some(w) = self.inner.wal.lock().as_mut() {
            // Best effort here; `Db::close` syncs first and reports a failure.
            let _ = w.sync();
        }
        // Writes are refused from now on, so another process (or handle) may open the
        // directory; live scans keep reading their pinned files.
        self.inner.lock.lock().take();
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

fn file_id(name: &str) -> Option<(u64, &str)> {
    let (stem, ext) = name.split_once('.')?;
    Some((stem.parse().ok()?, ext))
}

impl Db {
    /// Opens (creating if needed) the database in `path`, recovering from the manifest and
    /// replaying write-ahead logs.
    pub fn open(path: impl AsRef<Path>, opts: Options) -> Result<Db> {
        opts.validate()?;
        let dir = path.as_ref().to_path_buf();
        let fs = opts.fs.clone();
        fs.create_dir_all(&dir)
            .map_err(|e| Error::io("creating directory", &dir, e))?;
        let lock_path = dir.join("LOCK");
        let lock = fs
            .lock(&lock_path)
            .map_err(|e| Error::io("locking", &lock_path, e))?;
        let marker = dir.join(LOG_MARKER);
        match (opts.log.is_some(), fs.exists(&marker)) {
            (false, true) => {
                return Err(Error::InvalidArgument(format!(
                    "{} holds a two-layer log; open it with LogOptions",
                    dir.display()
                )))
            }
            (true, false) => {
                let mut f = fs
                    .create(&marker)
                    .map_err(|e| Error::io("creating", &marker, e))?;
                f.sync_data()
                    .map_err(|e| Error::io("syncing", &marker, e))?;
                fs.sync_dir(&dir)
                    .map_err(|e| Error::io("syncing directory", &dir, e))?;
            }
            _ => {}
        }
        let counters = Arc::new(Counters::default());
        let cache = (opts.block_cache_bytes > 0).then(|| BlockCache::new(opts.block_cache_bytes));

        // 1. The manifest: which tables are live, which WALs still matter.
        let mut log_number = 0;
        let mut next_file_id = 1;
        let mut last_seqno = 0;
        let mut metas: BTreeMap<u64, (u32, TableMeta)> = BTreeMap::new();
        let old_manifest = current_manifest(&fs, &dir)?;
        if let Some(manifest) = &old_manifest {
            for edit in read_manifest(&fs, manifest)? {
                if let Some(n) = edit.log_number {
                    log_number = n;
                }
                if let Some(n) = edit.next_file_id {
                    next_file_id = next_file_id.max(n);
                }
                if let Some(n) = edit.last_seqno {
                    last_seqno = last_seqno.max(n);
                }
                for (_, id) in &edit.deleted {
                    metas.remove(id);
                }
                for (level, meta) in edit.added {
                    metas.insert(meta.id, (level, meta));
                }
            }
        }
        let names = fs.list(&dir).map_err(|e| Error::io("listing", &dir, e))?;
        for name in &names {
            if let Some((id, _)) = file_id(name) {
                next_file_id = next_file_id.max(id + 1);
            }
            if let Some(id) = name
                .strip_prefix("MANIFEST-")
                .and_then(|s| s.parse::<u64>().ok())
            {
                next_file_id = next_file_id.max(id + 1);
            }
        }

        let mut inner = Inner {
            dir: dir.clone(),
            fs: fs.clone(),
            counters,
            cache,
            state: Mutex::new(State {
                sv: None,
                mem: Arc::new(Memtable::new(0)),
                imm: Vec::new(),
                version: Arc::new(empty_version(&opts)),
                next_file_id,
                log_number,
                busy: HashSet::new(),
                cursors: vec![Vec::new(); opts.levels_max],
                wal_broken: false,
                flushing: false,
                compactions_running: 0,
                manual_compaction: false,
                no_space: None,
                poisoned: None,
                closing: false,
            }),
            opts,
            state_cv: Condvar::new(),
            writers: Mutex::new(WriterQueue::default()),
            writers_cv: Condvar::new(),
            wal: Mutex::new(None),
            frame_scratch: Mutex::new(Vec::new()),
            manifest: Mutex::new(None),
            visible_seqno: AtomicU64::new(last_seqno),
            snapshots: Mutex::new(BTreeMap::new()),
            recovery: RecoveryReport::default(),
            lock: Mutex::new(Some(lock)),
        };

        // 2. Open every live table.
        let mut version = empty_version(&inner.opts);
        for (level, meta) in metas.values() {
            let handle = inner.open_table(meta.clone())?;
            let level_index = *level as usize;
            if version.log && level_index < LOG_LEVELS_MAX && level_index >= version.levels.len() {
                version.levels.resize(level_index + 1, Vec::new());
            }
            version
                .levels
                .get_mut(*level as usize)
                .ok_or_else(|| {
                    Error::corruption(
                        old_manifest.clone().unwrap_or_default(),
                        0,
                        format!("table {} on level {level}, beyond levels_max", meta.id),
                    )
                })?
                .push(Arc::new(handle));
        }
        let version = version.apply(&VersionEdit::default(), &[])?;
        inner.state.get_mut().version = Arc::new(version);

        // 3. Replay WALs newer than the manifest's log number into L0 tables.
        let mut wal_ids: Vec<u64> = names
            .iter()
            .filter_map(|n| file_id(n))
            .filter(|(id, ext)| *ext == "wal" && *id >= log_number)
            .map(|(id, _)| id)
            .collect();
        wal_ids.sort_unstable();
        let mut report = RecoveryReport::default();
        let mut mem = Arc::new(Memtable::new(0));
        let mut max_seqno = last_seqno;
        for id in &wal_ids {
            let path = dir.join(wal_file_name(*id));
            let data = fs
                .read_all(&path)
                .map_err(|e| Error::io("reading", &path, e))?;
            let mut records = Records::new(&data, &path);
            report.wal_files_replayed += 1;
            for (offset, payload) in records.by_ref() {
                let Some(ops) = decode_batches(payload) else {
                    report.dropped.push(WalDrop {
                        file: path.clone(),
                        offset,
                        bytes: data.len() as u64 - offset,
                        reason: "malformed batch in a record with a valid checksum".into(),
                    });
                    break;
                };
                report.records_replayed += 1;
                for op in ops {
                    mem.insert(op.key, op.ts, op.seqno, op.kind, op.value);
                    max_seqno = max_seqno.max(op.seqno.0);
                }
                if mem.size_bytes() >= inner.opts.memtable_size_bytes {
                    inner.recover_flush(&mem, max_seqno)?;
                    mem = Arc::new(Memtable::new(0));
                }
            }
            if let Some(d) = records.dropped() {
                report.dropped.push(d.clone());
            }
        }
        if !mem.is_empty() {
            inner.recover_flush(&mem, max_seqno)?;
        }
        inner.visible_seqno.store(max_seqno, Ordering::SeqCst);

        // 4. A fresh WAL and a fresh manifest holding the whole state; then clean up.
        let wal_id = inner.alloc_file_id();
        let wal_path = dir.join(wal_file_name(wal_id));
        let wal_file = fs
            .create(&wal_path)
            .map_err(|e| Error::io("creating", &wal_path, e))?;
        *inner.wal.get_mut() = Some(WalWriter::new(wal_file, wal_path));
        {
            let st = inner.state.get_mut();
            st.mem = Arc::new(Memtable::new(wal_id));
            st.sv = None;
            st.log_number = wal_id;
        }
        let manifest_id = inner.alloc_file_id();
        let snapshot = inner.snapshot_edit();
        let writer = ManifestWriter::create(&fs, &dir, manifest_id, &snapshot)?;
        *inner.manifest.get_mut() = Some(writer);

        let live: HashSet<u64> = inner
            .state
            .get_mut()
            .version
            .all_tables()
            .map(|t| t.meta().id)
            .collect();
        let keep_manifest = manifest_file_name(manifest_id);
        for name in fs.list(&dir).map_err(|e| Error::io("listing", &dir, e))? {
            let obsolete = match file_id(&name) {
                Some((id, "sst")) => !live.contains(&id),
                Some((id, "wal")) => id < wal_id,
                _ => {
                    name.starts_with("MANIFEST-") && name != keep_manifest || name == "CURRENT.tmp"
                }
            };
            if obsolete {
                let p = dir.join(&name);
                fs.remove(&p).map_err(|e| Error::io("removing", &p, e))?;
                if name.ends_with(".sst") {
                    report.orphans_removed += 1;
                }
            }
        }
        fs.sync_dir(&dir)
            .map_err(|e| Error::io("syncing directory", &dir, e))?;
        inner.recovery = report;

        // 5. Background threads.
        let inner = Arc::new(inner);
        let mut threads = Vec::new();
        let spawn = |name: String, f: Box<dyn FnOnce() + Send>| {
            mosaic_env::thread::spawn_named(name, f)
                .map_err(|e| Error::io("spawning a thread for", &dir, e))
        };
        let i = inner.clone();
        threads.push(spawn(
            "mosaic-flush".into(),
            Box::new(move || i.flush_loop()),
        )?);
        for n in 0..inner.opts.compaction_threads {
            let i = inner.clone();
            threads.push(spawn(
                format!("mosaic-compact-{n}"),
                Box::new(move || i.compaction_loop()),
            )?);
        }
        if let SyncMode::Periodic { interval_ms } = inner.opts.sync_mode {
            let i = inner.clone();
            threads.push(spawn(
                "mosaic-wal-sync".into(),
                Box::new(move || i.periodic_sync_loop(Duration::from_millis(interval_ms))),
            )?);
        }
        inner.state_cv.notify_all();
        let closer = Arc::new(Closer {
            inner: inner.clone(),
            threads: Mutex::new(threads),
        });
        Ok(Db { inner, closer })
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

    /// Applies a batch atomically. When this returns `Ok`, the batch is durable per the sync
    /// mode.
    pub fn write(&self, batch: WriteBatch) -> Result<()> {
        if batch.is_empty() {
            return Ok(());
        }
        for op in batch.ops() {
            if op.key.len() > u32::MAX as usize / 2 || op.value.len() > u32::MAX as usize / 2 {
                return Err(Error::InvalidArgument(
                    "key or value larger than 2 GiB".into(),
                ));
            }
        }
        let inner = &self.inner;
        let mut q = inner.writers.lock();
        let ticket = q.next_ticket;
        q.next_ticket += 1;
        q.queue.push_back((ticket, batch));
        loop {
            if let Some(r) = q.results.remove(&ticket) {
                return r;
            }
            if q.leader {
                inner.writers_cv.wait(&mut q);
                continue;
            }
            q.leader = true;
            let mut group = Vec::new();
            let mut bytes = 0;
            while let Some((t, b)) = q.queue.pop_front() {
                bytes += b.size_bytes();
                group.push((t, b));
                if inner.opts.sync_mode == SyncMode::PerWrite || bytes >= GROUP_BYTES_MAX {
                    break;
                }
            }
            drop(q);
            let result = inner.write_group(group.iter().map(|(_, b)| b));
            q = inner.writers.lock();
            for (t, _) in &group {
                let r = match &result {
                    Ok(()) => Ok(()),
                    Err(e) => Err(e.duplicate()),
                };
                q.results.insert(*t, r);
            }
            q.leader = false;
            inner.writers_cv.notify_all();
        }
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
        let inner = &self.inner;
        {
            // Freeze the memtable through the write path so it is ordered with writers.
            let mut q = inner.writers.lock();
            while q.leader {
                inner.writers_cv.wait(&mut q);
            }
            q.leader = true;
            drop(q);
            let r = inner.freeze_memtable();
            let mut q = inner.writers.lock();
            q.leader = false;
            inner.writers_cv.notify_all();
            drop(q);
            r?;
        }
        let mut st = inner.state.lock();
        loop {
            if let Some(p) = &st.poisoned {
                return Err(Error::Poisoned { cause: p.clone() });
            }
            if st.imm.is_empty() {
                return Ok(());
            }
            if let Some(e) = &st.no_space {
                return Err(e.duplicate());
            }
            if st.closing {
                return Err(Error::Closed);
            }
            inner.state_cv.wait_for(&mut st, STALL_WAIT);
        }
    }

    /// Compacts everything into the bottom level and waits for it.
    pub fn compact(&self) -> Result<()> {
        self.flush()?;
        self.inner.manual_compaction()
    }

    /// Waits until background compaction has nothing left to do.
    pub fn wait_for_compactions(&self) -> Result<()> {
        let inner = &self.inner;
        let mut st = inner.state.lock();
        loop {
            if let Some(p) = &st.poisoned {
                return Err(Error::Poisoned { cause: p.clone() });
            }
            if let Some(e) = &st.no_space {
                return Err(e.duplicate());
            }
            if st.closing {
                return Err(Error::Closed);
            }
            let idle = st.imm.is_empty()
                && !st.flushing
                && st.compactions_running == 0
                && inner.pick_task(&st).is_none();
            if idle {
                return Ok(());
            }
            inner.state_cv.wait_for(&mut st, STALL_WAIT);
        }
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
                        }
                    })
                    .collect(),
            })
            .collect()
    }

    /// Bytes held by the memtables (active and frozen).
    pub fn memtable_bytes(&self) -> usize {
        let st = self.inner.state.lock();
        st.mem.size_bytes() + st.imm.iter().map(|m| m.size_bytes()).sum::<usize>()
    }

    /// Bytes held by the block cache.
    pub fn block_cache_bytes(&self) -> u64 {
        self.inner.cache.as_ref().map_or(0, |c| c.usage_bytes())
    }

    /// Records that table `id`'s data now lives at `location` (understood by the configured
    /// [`crate::TableStore`]) and removes the local data file. The caller must have copied the
    /// file's bytes there first; reads switch to the new location immediately.
    pub fn relocate_table(&self, id: u64, location: &str) -> Result<()> {
        let inner = &self.inner;
        if location.is_empty() {
            return Err(Error::InvalidArgument("location must not be empty".into()));
        }
        let found = {
            let st = inner.state.lock();
            st.version
                .levels
                .iter()
                .enumerate()
                .find_map(|(level, tables)| {
                    tables
                        .iter()
                        .find(|t| t.meta().id == id)
                        .map(|t| (level, t.clone()))
                })
        };
        let (level, old) = found.ok_or_else(|| Error::InvalidArgument(format!("no table {id}")))?;
        let mut meta = old.meta().clone();
        meta.location = location.to_owned();
        let handle = Arc::new(inner.open_table(meta.clone())?);
        let edit = VersionEdit {
            deleted: vec![(level as u32, id)],
            added: vec![(level as u32, meta)],
            ..VersionEdit::default()
        };
        inner.install(edit, &[handle], |_| {})?;
        old.mark_obsolete();
        Ok(())
    }

    /// Stops background work and syncs the WAL. Data not yet flushed stays in the WAL and is
    /// replayed at the next open.
    pub fn close(self) -> Result<()> {
        let synced = match self.inner.wal.lock().as_mut() {
            Some(w) => w.sync(),
            None => Ok(()),
        };
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
    versions: Vec<(u64, Seqno, ValueKind, Vec<u8>)>,
}

impl Iterator for Scan {
    type Item = Result<(Vec<u8>, Entry)>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        match self.advance() {
            Ok(Some(item)) => Some(Ok(item)),
            Ok(None) => {
                self.done = true;
                None
            }
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
        }
    }
}

impl Scan {
    fn advance(&mut self) -> Result<Option<(Vec<u8>, Entry)>> {
        loop {
            if !self.iter.valid() {
                return Ok(None);
            }
            let key = user_key(self.iter.key()).to_vec();
            let past_end = match &self.end {
                Bound::Included(e) => key.as_slice() > e.as_slice(),
                Bound::Excluded(e) => key.as_slice() >= e.as_slice(),
                Bound::Unbounded => false,
            };
            if past_end {
                return Ok(None);
            }
            self.versions.clear();
            while self.iter.valid() && user_key(self.iter.key()) == key.as_slice() {
                let p = parse_internal(self.iter.key()).ok_or_else(|| {
                    Error::corruption(&self.inner.dir, 0, "malformed internal key in scan")
                })?;
                if p.seqno <= self.seqno {
                    self.versions
                        .push((p.ts, p.seqno, p.kind, self.iter.value().to_vec()));
                }
                self.iter.next()?;
            }
            if self.skip.as_deref() == Some(key.as_slice()) {
                continue;
            }
            // The common case: one visible version that resolves to itself (always so
            // without a merge operator), handed over without another copy.
            let lone = match (&self.inner.opts.merge_operator, self.versions.as_slice()) {
                (None, [_]) => true,
                (Some(op), [(ts, _, kind, value)]) => op.passes_through(
                    &key,
                    &KeyVersion {
                        ts: *ts,
                        kind: *kind,
                        value,
                    },
                ),
                _ => false,
            };
            if lone {
                if let Some((ts, _, kind, value)) = self.versions.pop() {
                    if kind == ValueKind::Delete {
                        continue;
                    }
                    return Ok(Some((key, Entry { ts, value })));
                }
            }
            let views = views_of(self.versions.iter());
            if let Some(entry) = self.inner.resolve_for_read(&key, &views) {
                return Ok(Some((key, entry)));
            }
        }
    }
}

impl Inner {
    fn alloc_file_id(&self) -> u64 {
        let mut st = self.state.lock();
        let id = st.next_file_id;
        st.next_file_id += 1;
        id
    }

    fn open_table(&self, meta: TableMeta) -> Result<TableHandle> {
        let path = self.dir.join(table_file_name(meta.id));
        let file = if meta.location.is_empty() {
            self.fs
                .open_read(&path, self.opts.direct_io)
                .map_err(|e| Error::io("opening", &path, e))?
        } else {
            let store = self.opts.table_store.as_ref().ok_or_else(|| {
                Error::InvalidArgument(format!(
                    "table {} lives at {:?} but no table store is configured",
                    meta.id, meta.location
                ))
            })?;
            store
                .open(&meta.location)
                .map_err(|e| Error::io("opening", &meta.location, e))?
        };
        let reader = TableReader::open(
            file,
            path.clone(),
            meta.id,
            self.cache.clone(),
            self.counters.clone(),
        )?;
        Ok(TableHandle::new(
            meta,
            Arc::new(reader),
            self.fs.clone(),
            path,
        ))
    }

    /// The whole current state as one edit (the first record of a new manifest).
    fn snapshot_edit(&self) -> VersionEdit {
        let st = self.state.lock();
        let mut edit = VersionEdit {
            log_number: Some(st.log_number),
            next_file_id: Some(st.next_file_id),
            last_seqno: Some(self.visible_seqno.load(Ordering::SeqCst)),
            ..VersionEdit::default()
        };
        for (level, tables) in st.version.levels.iter().enumerate() {
            for t in tables {
                edit.added.push((level as u32, t.meta().clone()));
            }
        }
        edit
    }

    /// Records `edit` in the manifest, then makes it visible (with `also` applied to the
    /// state in the same critical section). The caller holds the install lock.
    fn install(
        &self,
        mut edit: VersionEdit,
        added: &[Arc<TableHandle>],
        also: impl FnOnce(&mut State),
    ) -> Result<()> {
        let mut manifest = self.manifest.lock();
        let new_version = {
            let st = self.state.lock();
            edit.next_file_id = Some(st.next_file_id);
            edit.last_seqno = Some(self.visible_seqno.load(Ordering::SeqCst));
            st.version.apply(&edit, added)?
        };
        let appended = match manifest.as_mut() {
            Some(w) => w.append(&edit),
            None => Err(Error::InvalidArgument("manifest must be rewritten".into())),
        };
        if let Err(e) = appended {
            // The manifest's tail is unknown now: never append to it again. Write a new one
            // holding the whole state (with this edit applied) instead.
            *manifest = None;
            if !(e.is_no_space() || matches!(e, Error::InvalidArgument(_))) {
                self.poison(&e);
                return Err(e);
            }
            let id = self.alloc_file_id();
            let mut snap = {
                let st = self.state.lock();
                VersionEdit {
                    log_number: Some(edit.log_number.unwrap_or(st.log_number)),
                    next_file_id: Some(st.next_file_id),
                    last_seqno: edit.last_seqno,
                    ..VersionEdit::default()
                }
            };
            for (level, tables) in new_version.levels.iter().enumerate() {
                for t in tables {
                    snap.added.push((level as u32, t.meta().clone()));
                }
            }
            match ManifestWriter::create(&self.fs, &self.dir, id, &snap) {
                Ok(w) => *manifest = Some(w),
                Err(e2) => {
                    let _ = self.fs.remove(&self.dir.join(manifest_file_name(id)));
                    if !e2.is_no_space() {
                        self.poison(&e2);
                    }
                    return Err(e2);
                }
            }
            self.remove_old_manifests(id);
        }
        let mut st = self.state.lock();
        if let Some(n) = edit.log_number {
            st.log_number = n;
        }
        st.version = Arc::new(new_version);
        also(&mut st);
        st.sv = None;
        Ok(())
    }

    /// Deletes the files of a job whose manifest edit failed, unless the failure poisoned
    /// the engine: then the edit may have reached the manifest (a failed sync says nothing
    /// about what the file holds), so the files stay, and the next open keeps them if the
    /// manifest names them and removes them as orphans otherwise.
    fn discard_outputs(&self, outputs: &[Arc<TableHandle>]) {
        if self.state.lock().poisoned.is_some() {
            return;
        }
        for h in outputs {
            h.mark_obsolete();
        }
    }

    fn remove_old_manifests(&self, keep: u64) {
        let keep = manifest_file_name(keep);
        if let Ok(names) = self.fs.list(&self.dir) {
            for n in names {
                if n.starts_with("MANIFEST-") && n != keep {
                    let _ = self.fs.remove(&self.dir.join(n));
                }
            }
        }
    }

    fn poison(&self, e: &Error) {
        let mut st = self.state.lock();
        if st.poisoned.is_none() {
            st.poisoned = Some(e.to_string());
        }
        drop(st);
        self.state_cv.notify_all();
    }

    // ---------------------------------------------------------------- write path

    fn write_group<'a>(&self, batches: impl Iterator<Item = &'a WriteBatch> + Clone) -> Result<()> {
        let mem = self.make_room()?;
        let count: u64 = batches.clone().map(|b| b.len() as u64).sum();
        let first = Seqno(self.visible_seqno.load(Ordering::SeqCst) + 1);
        if first.0 + count > crate::key::SEQNO_MAX {
            return Err(Error::InvalidArgument("sequence numbers exhausted".into()));
        }
        let mut framed = std::mem::take(&mut *self.frame_scratch.lock());
        framed.clear();
        frame_with(&mut framed, |out| {
            encode_batches(out, first, batches.clone())
        });
        {
            let mut wal = self.wal.lock();
            let w = wal.as_mut().ok_or_else(|| Error::Poisoned {
                cause: "no WAL".into(),
            })?;
            if let Err(e) = w.append_framed(&framed) {
                drop(wal);
                // Never append after a failed write: the next write switches to a new WAL.
                self.state.lock().wal_broken = true;
                if !e.is_no_space() {
                    self.poison(&e);
                }
                return Err(e);
            }
            Counters::add(&self.counters.wal_bytes_written, framed.len() as u64);
            if !matches!(self.opts.sync_mode, SyncMode::Periodic { .. }) {
                if let Err(e) = w.sync() {
                    drop(wal);
                    self.poison(&e);
                    return Err(e);
                }
                Counters::inc(&self.counters.wal_syncs);
            }
        }
        // Keep the buffer for the next group, unless one huge batch made it large.
        if framed.capacity() <= 2 * GROUP_BYTES_MAX {
            *self.frame_scratch.lock() = framed;
        }
        let mut seqno = first.0;
        let mut user_bytes = 0u64;
        for op in batches.flat_map(|b| b.ops()) {
            mem.insert(&op.key, op.ts, Seqno(seqno), op.kind, &op.value);
            user_bytes += (op.key.len() + op.value.len()) as u64;
            seqno += 1;
        }
        Counters::add(&self.counters.user_bytes_written, user_bytes);
        self.visible_seqno.store(seqno - 1, Ordering::SeqCst);
        Ok(())
    }

    /// Returns the memtable to write into, switching memtables and stalling as needed.
    /// Called only by the leader writer.
    fn make_room(&self) -> Result<Arc<Memtable>> {
        let mut st = self.state.lock();
        // Real monotonic time: a stall is a real wait on a condvar, whatever the engine's clock.
        let mut stall_start: Option<u64> = None;
        loop {
            if let Some(p) = &st.poisoned {
                return Err(Error::Poisoned { cause: p.clone() });
            }
            if st.closing {
                return Err(Error::Closed);
            }
            if let Some(e) = &st.no_space {
                return Err(e.duplicate());
            }
            let l0 = st.version.levels.first().map_or(0, Vec::len);
            let full = st.mem.size_bytes() >= self.opts.memtable_size_bytes;
            let must_wait = (full && st.imm.len() >= self.opts.immutable_memtables_max)
                || l0 >= self.opts.level0_stall_tables;
            if must_wait && !st.wal_broken {
                if stall_start.is_none() {
                    stall_start = Some(mosaic_env::monotonic_micros());
                    Counters::inc(&self.counters.write_stalls);
                }
                self.state_cv.notify_all();
                self.state_cv.wait_for(&mut st, STALL_WAIT);
                continue;
            }
            if full || st.wal_broken {
                self.switch_memtable(&mut st)?;
                continue;
            }
            if let Some(t) = stall_start {
                Counters::add(
                    &self.counters.write_stall_micros,
                    mosaic_env::monotonic_micros().saturating_sub(t),
                );
            }
            return Ok(st.mem.clone());
        }
    }

    /// Freezes the memtable (if not empty) and starts a new WAL.
    fn switch_memtable(&self, st: &mut State) -> Result<()> {
        let id = st.next_file_id;
        let path = self.dir.join(wal_file_name(id));
        let file = match self.fs.create(&path) {
            Ok(f) => f,
            Err(e) => {
                let e = Error::io("creating", &path, e);
                if e.is_no_space() {
                    st.wal_broken = true;
                    return Err(e);
                }
                st.poisoned = Some(e.to_string());
                return Err(e);
            }
        };
        st.next_file_id += 1;
        let new_wal = WalWriter::new(file, path);
        let old_wal = self.wal.lock().replace(new_wal);
        if let Some(mut old) = old_wal {
            // Even after a failed append the acknowledged prefix must become durable (it may
            // be unsynced in periodic mode); the torn tail after it is dropped at recovery.
            if let Err(e) = old.sync() {
                st.poisoned = Some(e.to_string());
                return Err(e);
            }
        }
        let old = std::mem::replace(&mut st.mem, Arc::new(Memtable::new(id)));
        if old.is_empty() {
            // Nothing acknowledged lives in that WAL (at most a torn record).
            let _ = self.fs.remove(&self.dir.join(wal_file_name(old.wal_id())));
        } else {
            st.imm.push(old);
        }
        st.sv = None;
        st.wal_broken = false;
        self.state_cv.notify_all();
        Ok(())
    }

    fn freeze_memtable(&self) -> Result<()> {
        let mut st = self.state.lock();
        if let Some(p) = &st.poisoned {
            return Err(Error::Poisoned { cause: p.clone() });
        }
        if st.mem.is_empty() && !st.wal_broken {
            return Ok(());
        }
        self.switch_memtable(&mut st)
    }

    fn periodic_sync_loop(&self, interval: Duration) {
        loop {
            {
                // The condvar is shared with other events: wait out the whole interval (real
                // monotonic time, as the condvar waits in it).
                let deadline = mosaic_env::monotonic_micros() + interval.as_micros() as u64;
                let mut st = self.state.lock();
                loop {
                    if st.closing {
                        return;
                    }
                    let now = mosaic_env::monotonic_micros();
                    if now >= deadline {
                        break;
                    }
                    self.state_cv
                        .wait_for(&mut st, Duration::from_micros(deadline - now));
                }
            }
            let mut wal = self.wal.lock();
            if let Some(w) = wal.as_mut() {
                match w.sync() {
                    Ok(()) => Counters::inc(&self.counters.wal_syncs),
                    Err(e) => {
                        drop(wal);
                        self.poison(&e);
                    }
                }
            }
        }
    }

    // ---------------------------------------------------------------- read path

    /// What a reader needs, taken atomically: one `Arc` clone in the common case.
    fn super_version(&self) -> Arc<SuperVersion> {
        let mut st = self.state.lock();
        if let Some(sv) = &st.sv {
            return sv.clone();
        }
        let sv = Arc::new(SuperVersion {
            mem: st.mem.clone(),
            imm: st.imm.clone(),
            version: st.version.clone(),
        });
        st.sv = Some(sv.clone());
        sv
    }

    fn get(&self, key: &[u8], seqno: Seqno) -> Result<Option<Entry>> {
        Counters::inc(&self.counters.gets);
        let sv = self.super_version();
        let (mem, imm, version) = (&sv.mem, &sv.imm, &sv.version);
        let lww = self.opts.merge_operator.is_none();
        let mut c = Collector {
            lww,
            best: None,
            found: Vec::new(),
        };
        let mut mem_versions = Vec::new();
        for m in std::iter::once(mem).chain(imm.iter().rev()) {
            mem_versions.clear();
            m.get(key, seqno, &mut mem_versions);
            for v in &mem_versions {
                c.consider(v.ts, v.kind, &v.value);
            }
        }
        let seek = seek_key(key);
        // A log probes its global log, then only the range groups whose interval holds
        // the key (each group's runs newest first); a tree probes every level.
        let tree = (!version.log).then_some(0..version.levels.len());
        let log = version
            .log
            .then(|| std::iter::once(0).chain(version.groups_holding(key)));
        for level in tree.into_iter().flatten().chain(log.into_iter().flatten()) {
            let Some(tables) = version.levels.get(level) else {
                continue;
            };
            let candidates: &[Arc<TableHandle>] = if level == 0 || version.log {
                tables
            } else {
                let i = tables.partition_point(|t| t.meta().largest_user_key() < key);
                tables.get(i..(i + 1).min(tables.len())).unwrap_or_default()
            };
            for t in candidates {
                let m = t.meta();
                if key < m.smallest_user_key() || key > m.largest_user_key() {
                    continue;
                }
                if lww {
                    // Versions are ordered by timestamp, not by level: a table can only
                    // matter if it may hold a timestamp at least as new as the best so far.
                    if c.best.as_ref().is_some_and(|(bts, _, _)| m.max_ts < *bts) {
                        continue;
                    }
                }
                if !t.reader().may_contain(filter_probe(t, key)) {
                    Counters::inc(&self.counters.bloom_negatives);
                    continue;
                }
                Counters::inc(&self.counters.get_tables_probed);
                t.note_read();
                let unique = table_has_unique_keys(t);
                let mut it = t.reader().iter(ReadPurpose::Get, true);
                it.seek(&seek)?;
                let mut any = false;
                while it.valid() {
                    let p = parse_internal(it.key()).ok_or_else(|| {
                        Error::corruption(t.reader().path(), 0, "malformed internal key")
                    })?;
                    if p.user_key != key {
                        break;
                    }
                    any = true;
                    if p.seqno <= seqno {
                        c.consider(p.ts, p.kind, it.value());
                        if unique {
                            break;
                        }
                    }
                    it.next()?;
                }
                Counters::inc(if any {
                    &self.counters.bloom_true_positives
                } else {
                    &self.counters.bloom_false_positives
                });
            }
        }
        if lww {
            return Ok(c.best.and_then(|(ts, kind, value)| {
                (kind != ValueKind::Delete).then_some(Entry { ts, value })
            }));
        }
        // Newest timestamp first, as the merge operator expects.
        c.found.sort_by_key(|v| std::cmp::Reverse(v.0));
        let views: Vec<KeyVersion<'_>> = c
            .found
            .iter()
            .map(|(ts, kind, value)| KeyVersion {
                ts: *ts,
                kind: *kind,
                value,
            })
            .collect();
        Ok(self.resolve_for_read(key, &views))
    }

    /// Resolves the visible versions of one key (newest timestamp first) for a read.
    fn resolve_for_read(&self, key: &[u8], versions: &[KeyVersion<'_>]) -> Option<Entry> {
        if versions.is_empty() {
            return None;
        }
        let r = self.resolve(key, versions);
        (r.kind != ValueKind::Delete).then_some(Entry {
            ts: r.ts,
            value: r.value,
        })
    }

    fn resolve(&self, key: &[u8], versions: &[KeyVersion<'_>]) -> Resolved {
        match &self.opts.merge_operator {
            Some(op) => op.merge(key, versions),
            None => {
                let w = crate::merge::lww_winner(versions).unwrap_or(KeyVersion {
                    ts: 0,
                    kind: ValueKind::Delete,
                    value: &[],
                });
                Resolved {
                    ts: w.ts,
                    kind: w.kind,
                    value: w.value.to_vec(),
                }
            }
        }
    }

    fn scan(
        self: &Arc<Self>,
        seqno: Seqno,
        start: Bound<&[u8]>,
        end: Bound<&[u8]>,
    ) -> Result<Scan> {
        let sv = self.super_version();
        let (mem, imm, version) = (&sv.mem, &sv.imm, &sv.version);
        let mut children: Vec<Box<dyn InternalIter>> = Vec::new();
        children.push(Box::new(MemIter::new(mem.clone())));
        for m in imm.iter().rev() {
            children.push(Box::new(MemIter::new(m.clone())));
        }
        let lo = match start {
            Bound::Included(k) | Bound::Excluded(k) => Some(k),
            Bound::Unbounded => None,
        };
        let hi = match end {
            Bound::Included(k) | Bound::Excluded(k) => Some(k),
            Bound::Unbounded => None,
        };
        // A scan confined to one filter prefix (a partition) consults the tables' prefix
        // filters, as a point lookup does, and is counted as one.
        let prefix = shared_prefix(lo, hi, self.opts.table.filter_prefix_bytes);
        // Its disk reads count as a lookup's too.
        let purpose = if prefix.is_some() {
            ReadPurpose::Get
        } else {
            ReadPurpose::Scan
        };
        let (mut probed, mut filtered) = (0u64, 0u64);
        let mut wanted = |t: &Arc<TableHandle>| {
            let m = t.meta();
            if lo.is_some_and(|lo| m.largest_user_key() < lo)
                || hi.is_some_and(|hi| m.smallest_user_key() > hi)
            {
                return false;
            }
            if let Some(p) = prefix {
                if !table_may_hold_prefix(t, p) {
                    filtered += 1;
                    return false;
                }
                probed += 1;
            }
            true
        };
        if version.log {
            // The global log, then the runs of the groups the range meets.
            for level in std::iter::once(0).chain(version.groups_meeting(lo, hi)) {
                for t in version.levels.get(level).into_iter().flatten() {
                    if wanted(t) {
                        t.note_read();
                        children.push(Box::new(t.reader().iter(purpose, true)));
                    }
                }
            }
        } else {
            for (level, tables) in version.levels.iter().enumerate() {
                if level == 0 {
                    for t in tables {
                        if wanted(t) {
                            t.note_read();
                            children.push(Box::new(t.reader().iter(purpose, true)));
                        }
                    }
                } else {
                    let kept: Vec<Arc<TableHandle>> =
                        tables.iter().filter(|t| wanted(t)).cloned().collect();
                    if !kept.is_empty() {
                        children.push(Box::new(LevelIter::new(kept, purpose, true)));
                    }
                }
            }
        }
        if prefix.is_some() {
            Counters::inc(&self.counters.gets);
            Counters::add(&self.counters.get_tables_probed, probed);
            Counters::add(&self.counters.bloom_negatives, filtered);
        }
        let mut iter = MergingIter::new(children);
        let skip = match start {
            Bound::Included(k) => {
                iter.seek(&seek_key(k))?;
                None
            }
            Bound::Excluded(k) => {
                iter.seek(&seek_key(k))?;
                Some(k.to_vec())
            }
            Bound::Unbounded => {
                iter.seek_to_first()?;
                None
            }
        };
        Ok(Scan {
            iter,
            seqno,
            end: end.map(<[u8]>::to_vec),
            skip,
            inner: self.clone(),
            done: false,
            versions: Vec::new(),
        })
    }

    // ---------------------------------------------------------------- flush

    fn flush_loop(&self) {
        loop {
            let mem = {
                let mut st = self.state.lock();
                loop {
                    if st.closing {
                        return;
                    }
                    if st.poisoned.is_none() && !st.imm.is_empty() {
                        break;
                    }
                    self.state_cv.wait_for(&mut st, NO_SPACE_RETRY);
                }
                st.flushing = true;
                st.imm.first().cloned()
            };
            let Some(mem) = mem else { continue };
            let result = self.flush_memtable(&mem);
            let mut st = self.state.lock();
            st.flushing = false;
            self.after_background_job(&mut st, result);
            if st.no_space.is_some() {
                // Give the disk a moment before retrying.
                self.state_cv.wait_for(&mut st, NO_SPACE_RETRY);
            }
        }
    }

    fn after_background_job(&self, st: &mut State, result: Result<()>) {
        match result {
            Ok(()) => st.no_space = None,
            Err(e) if e.is_no_space() => st.no_space = Some(e),
            Err(e) => {
                if st.poisoned.is_none() {
                    st.poisoned = Some(e.to_string());
                }
            }
        }
        self.state_cv.notify_all();
    }

    /// Writes the oldest frozen memtable as a level-0 table and retires its WAL.
    fn flush_memtable(&self, mem: &Arc<Memtable>) -> Result<()> {
        let ctx = self.output_context(&[], Some(mem));
        let mut it = FrozenIter::new(mem);
        it.seek_to_first()?;
        let outputs = self.write_tables(&mut it, &ctx, u64::MAX, &[], None)?.0;
        // The oldest WAL still needed once this memtable is flushed.
        let next_log = {
            let st = self.state.lock();
            st.imm.get(1).map_or(st.mem.wal_id(), |m| m.wal_id())
        };
        let edit = VersionEdit {
            log_number: Some(next_log),
            added: outputs.iter().map(|h| (0, h.meta().clone())).collect(),
            ..VersionEdit::default()
        };
        let bytes: u64 = outputs.iter().map(|h| h.meta().size_bytes).sum();
        let mem_id = mem.wal_id();
        let installed = self.install(edit, &outputs, |st| {
            st.imm.retain(|m| !Arc::ptr_eq(m, mem));
        });
        if let Err(e) = installed {
            self.discard_outputs(&outputs);
            return Err(e);
        }
        Counters::add(&self.counters.flush_bytes_written, bytes);
        Counters::inc(&self.counters.flushes);
        let wal = self.dir.join(wal_file_name(mem_id));
        let _ = self.fs.remove(&wal);
        Ok(())
    }

    /// During open: writes a replayed memtable as a level-0 table (no WAL to retire yet;
    /// the new manifest written at the end of open supersedes the old logs).
    fn recover_flush(&mut self, mem: &Arc<Memtable>, max_seqno: u64) -> Result<()> {
        self.visible_seqno.store(max_seqno, Ordering::SeqCst);
        let ctx = self.output_context(&[], Some(mem));
        let mut it = FrozenIter::new(mem);
        it.seek_to_first()?;
        let outputs = self.write_tables(&mut it, &ctx, u64::MAX, &[], None)?.0;
        let st = self.state.get_mut();
        let edit = VersionEdit {
            added: outputs.iter().map(|h| (0, h.meta().clone())).collect(),
            ..VersionEdit::default()
        };
        st.version = Arc::new(st.version.apply(&edit, &outputs)?);
        st.sv = None;
        Ok(())
    }

    // ---------------------------------------------------------------- compaction

    fn table_views(st: &State) -> Vec<Vec<TableView>> {
        st.version
            .levels
            .iter()
            .map(|tables| {
                tables
                    .iter()
                    .map(|t| TableView {
                        id: t.meta().id,
                        size_bytes: t.meta().size_bytes,
                        smallest: t.meta().smallest_user_key().to_vec(),
                        largest: t.meta().largest_user_key().to_vec(),
                        busy: st.busy.contains(&t.meta().id),
                    })
                    .collect()
            })
            .collect()
    }

    fn pick_task(&self, st: &State) -> Option<Task> {
        if st.manual_compaction {
            return None;
        }
        if let Some(log) = &self.opts.log {
            return split::pick(&Self::table_views(st), log, false);
        }
        compaction::pick(&Self::table_views(st), &self.opts, &st.cursors)
    }

    fn compaction_loop(&self) {
        loop {
            let task = {
                let mut st = self.state.lock();
                loop {
                    if st.closing {
                        return;
                    }
                    if st.poisoned.is_none() {
                        if let Some(task) = self.pick_task(&st) {
                            for id in task.upper.iter().chain(&task.lower) {
                                st.busy.insert(*id);
                            }
                            st.compactions_running += 1;
                            break task;
                        }
                    }
                    self.state_cv.wait_for(&mut st, NO_SPACE_RETRY);
                }
            };
            let result = self.run_compaction(&task);
            let mut st = self.state.lock();
            for id in task.upper.iter().chain(&task.lower) {
                st.busy.remove(id);
            }
            st.compactions_running -= 1;
            let failed = result.is_err();
            self.after_background_job(&mut st, result);
            if failed {
                self.state_cv.wait_for(&mut st, NO_SPACE_RETRY);
            }
        }
    }

    fn manual_compaction(&self) -> Result<()> {
        // Wait for running compactions, then claim every table.
        let task = {
            let mut st = self.state.lock();
            while st.manual_compaction {
                self.state_cv.wait_for(&mut st, STALL_WAIT);
            }
            st.manual_compaction = true;
            loop {
                if st.closing {
                    st.manual_compaction = false;
                    return Err(Error::Closed);
                }
                if st.compactions_running == 0 {
                    break;
                }
                self.state_cv.wait_for(&mut st, STALL_WAIT);
            }
            let last = self.opts.levels_max - 1;
            let mut upper = Vec::new();
            let mut lower = Vec::new();
            if let Some(log) = &self.opts.log {
                // Everything split, every group merge-sorted into one run.
                let task = split::pick(&Self::table_views(&st), log, true);
                if let Some(task) = &task {
                    upper.clone_from(&task.upper);
                    lower.clone_from(&task.lower);
                }
            }
            for (level, tables) in st.version.levels.iter().enumerate() {
                if self.opts.log.is_some() {
                    break;
                }
                for t in tables {
                    if level == last {
                        lower.push(t.meta().id);
                    } else {
                        upper.push(t.meta().id);
                    }
                }
            }
            for id in upper.iter().chain(&lower) {
                st.busy.insert(*id);
            }
            st.compactions_running += 1;
            Task {
                level: 0,
                output_level: last,
                upper,
                lower,
                trivial_move: false,
                split: self.opts.log.is_some(),
            }
        };
        // Even a lone bottom table is rewritten: that is where expired tombstones go.
        let result = if task.upper.is_empty() && task.lower.is_empty() {
            Ok(())
        } else {
            self.run_compaction(&task)
        };
        let mut st = self.state.lock();
        for id in task.upper.iter().chain(&task.lower) {
            st.busy.remove(id);
        }
        st.compactions_running -= 1;
        st.manual_compaction = false;
        match result {
            // A full disk during a manual compaction is the caller's to retry; background
            // work is unaffected, so writes are not refused for it.
            Err(e) if e.is_no_space() => {
                self.state_cv.notify_all();
                Err(e)
            }
            result => {
                let out = result.as_ref().map(|_| ()).map_err(Error::duplicate);
                self.after_background_job(&mut st, result);
                out
            }
        }
    }

    /// What compaction output needs to decide which versions to keep.
    fn output_context(&self, inputs: &[u64], flushing: Option<&Arc<Memtable>>) -> OutputContext {
        let smallest_snapshot = self
            .snapshots
            .lock()
            .keys()
            .next()
            .copied()
            .unwrap_or(u64::MAX);
        // A tombstone may be dropped only if nothing outside this job could hold an older
        // version of its key: every other memtable and table must be strictly newer.
        let sv = self.super_version();
        let (mem, imm, version) = (&sv.mem, &sv.imm, &sv.version);
        let mut min_ts_elsewhere = u64::MAX;
        for m in std::iter::once(mem).chain(imm.iter()) {
            if flushing.is_some_and(|f| Arc::ptr_eq(f, m)) {
                continue;
            }
            min_ts_elsewhere = min_ts_elsewhere.min(m.min_ts());
        }
        let in_inputs = |t: &Arc<TableHandle>| inputs.contains(&t.meta().id);
        let range = version.all_tables().filter(|t| in_inputs(t)).fold(
            None::<(Vec<u8>, Vec<u8>)>,
            |acc, t| {
                let (lo, hi) = (t.meta().smallest_user_key(), t.meta().largest_user_key());
                Some(match acc {
                    None => (lo.to_vec(), hi.to_vec()),
                    Some((a, b)) => (a.min(lo.to_vec()), b.max(hi.to_vec())),
                })
            },
        );
        for t in version.all_tables() {
            let overlaps = range
                .as_ref()
                .is_none_or(|(lo, hi)| t.meta().overlaps_user_range(lo, hi));
            if !in_inputs(t) && overlaps {
                min_ts_elsewhere = min_ts_elsewhere.min(t.meta().min_ts);
            }
        }
        OutputContext {
            smallest_snapshot,
            min_ts_elsewhere,
            purge: flushing.is_none(),
            now_micros: self.opts.clock.now_micros(),
        }
    }

    fn run_compaction(&self, task: &Task) -> Result<()> {
        if task.split {
            return self.run_split(task);
        }
        let version = self.state.lock().version.clone();
        let find = |level: usize, ids: &[u64]| -> Vec<Arc<TableHandle>> {
            version
                .levels
                .get(level)
                .map(|ts| {
                    ts.iter()
                        .filter(|t| ids.contains(&t.meta().id))
                        .cloned()
                        .collect()
                })
                .unwrap_or_default()
        };
        let mut upper: Vec<(usize, Arc<TableHandle>)> = Vec::new();
        for (level, tables) in version.levels.iter().enumerate() {
            for t in tables {
                if task.upper.contains(&t.meta().id) {
                    upper.push((level, t.clone()));
                }
            }
        }
        let lower = find(task.output_level, &task.lower);
        if upper.len() + lower.len() != task.upper.len() + task.lower.len() {
            // The version changed under the picker (cannot happen while tables are busy).
            return Err(Error::InvalidArgument("compaction inputs vanished".into()));
        }
        let mut event = CompactionEvent {
            level: task.level,
            output_level: task.output_level,
            inputs: task.upper.iter().chain(&task.lower).copied().collect(),
            outputs: Vec::new(),
            trivial_move: task.trivial_move,
        };
        if task.trivial_move {
            let mut edit = VersionEdit::default();
            let mut handles = Vec::new();
            for (level, t) in &upper {
                edit.deleted.push((*level as u32, t.meta().id));
                edit.added
                    .push((task.output_level as u32, t.meta().clone()));
                handles.push(t.clone());
            }
            let cursor = upper
                .iter()
                .map(|(_, t)| t.meta().largest_user_key().to_vec())
                .max();
            self.install(edit, &handles, |st| {
                if let (Some(c), Some(slot)) = (cursor, st.cursors.get_mut(task.level)) {
                    *slot = c;
                }
            })?;
            event.outputs = task.upper.clone();
            Counters::inc(&self.counters.compactions);
            if let Some(l) = &self.opts.compaction_listener {
                l.on_compaction(&event);
            }
            return Ok(());
        }
        let ids: Vec<u64> = event.inputs.clone();
        let ctx = self.output_context(&ids, None);
        let mut children: Vec<Box<dyn InternalIter>> = Vec::new();
        for (_, t) in &upper {
            children.push(Box::new(t.reader().iter(ReadPurpose::Compaction, false)));
        }
        if !lower.is_empty() {
            children.push(Box::new(LevelIter::new(
                lower.clone(),
                ReadPurpose::Compaction,
                false,
            )));
        }
        let mut it = MergingIter::new(children);
        it.seek_to_first()?;
        let grandparents: Vec<Vec<u8>> = version
            .levels
            .get(task.output_level + 1)
            .map(|ts| {
                ts.iter()
                    .map(|t| t.meta().largest_user_key().to_vec())
                    .collect()
            })
            .unwrap_or_default();
        let outputs = self
            .write_tables(
                &mut it,
                &ctx,
                self.opts.table_size_bytes,
                &grandparents,
                None,
            )?
            .0;
        let mut edit = VersionEdit::default();
        for (level, t) in &upper {
            edit.deleted.push((*level as u32, t.meta().id));
        }
        for t in &lower {
            edit.deleted.push((task.output_level as u32, t.meta().id));
        }
        for h in &outputs {
            edit.added
                .push((task.output_level as u32, h.meta().clone()));
        }
        let cursor = upper
            .iter()
            .map(|(_, t)| t.meta().largest_user_key().to_vec())
            .max();
        let written: u64 = outputs.iter().map(|h| h.meta().size_bytes).sum();
        let installed = self.install(edit, &outputs, |st| {
            if let (Some(c), Some(slot)) = (cursor, st.cursors.get_mut(task.level)) {
                *slot = c;
            }
        });
        if let Err(e) = installed {
            self.discard_outputs(&outputs);
            return Err(e);
        }
        for (_, t) in &upper {
            t.mark_obsolete();
        }
        for t in &lower {
            t.mark_obsolete();
        }
        Counters::add(&self.counters.compaction_bytes_written, written);
        Counters::inc(&self.counters.compactions);
        event.outputs = outputs.iter().map(|h| h.meta().id).collect();
        if let Some(l) = &self.opts.compaction_listener {
            l.on_compaction(&event);
        }
        Ok(())
    }

    /// Writes the entries of `input` (positioned at its first entry) into tables of at most
    /// about `split_bytes` each, keeping only the versions readers can still need. With
    /// `route`, a table also ends where the range group changes, and the second result
    /// holds each table's group. On error every file written is removed.
    fn write_tables(
        &self,
        input: &mut dyn InternalIter,
        ctx: &OutputContext,
        split_bytes: u64,
        grandparents: &[Vec<u8>],
        route: Option<&GroupOf>,
    ) -> Result<(Vec<Arc<TableHandle>>, Vec<u32>)> {
        let mut outputs: Vec<Arc<TableHandle>> = Vec::new();
        let mut groups: Vec<u32> = Vec::new();
        let mut created: Vec<PathBuf> = Vec::new();
        let result = self.write_tables_inner(
            input,
            ctx,
            (split_bytes, grandparents, route),
            (&mut outputs, &mut groups),
            &mut created,
        );
        match result {
            Ok(()) => Ok((outputs, groups)),
            Err(e) => {
                drop(outputs);
                for p in created {
                    let _ = self.fs.remove(&p);
                }
                Err(e)
            }
        }
    }

    fn write_tables_inner(
        &self,
        input: &mut dyn InternalIter,
        ctx: &OutputContext,
        (split_bytes, grandparents, route): (u64, &[Vec<u8>], Option<&GroupOf>),
        (outputs, groups): (&mut Vec<Arc<TableHandle>>, &mut Vec<u32>),
        created: &mut Vec<PathBuf>,
    ) -> Result<()> {
        let mut out: Option<OpenOutput> = None;
        let mut out_group: Option<u32> = None;
        // Cutting output files where the next level's tables end keeps each output's overlap
        // with that level small, so its own later compaction rewrites little of the level
        // below (RocksDB does the same): past an eighth of the target size, a file ends at
        // the next such boundary.
        let mut grandparent = 0usize;
        let mut crossed_boundary = false;
        // Buffers reused across keys: compaction copies each entry once and allocates
        // nothing per entry in the common case.
        let mut group: Vec<(u64, Seqno, ValueKind, Vec<u8>)> = Vec::new();
        let mut key: Vec<u8> = Vec::new();
        let mut key_buf = Vec::new();
        let mut emit: Vec<(u64, Seqno, ValueKind, Vec<u8>)> = Vec::new();
        let lww = self.opts.merge_operator.is_none();
        while input.valid() {
            key.clear();
            key.extend_from_slice(user_key(input.key()));
            let mut n = 0;
            while input.valid() && user_key(input.key()) == key.as_slice() {
                let p = parse_internal(input.key())
                    .ok_or_else(|| Error::corruption(&self.dir, 0, "malformed internal key"))?;
                if group.len() == n {
                    group.push((0, Seqno(0), ValueKind::Put, Vec::new()));
                }
                if let Some(slot) = group.get_mut(n) {
                    slot.0 = p.ts;
                    slot.1 = p.seqno;
                    slot.2 = p.kind;
                    slot.3.clear();
                    slot.3.extend_from_slice(input.value());
                }
                n += 1;
                input.next()?;
            }
            let versions = group.get(..n).unwrap_or_default();
            emit.clear();
            let single = match versions {
                // One version and nothing to purge: it goes through as it is.
                [only] if (lww && only.2 != ValueKind::Delete) || (!lww && !ctx.purge) => {
                    Some(only)
                }
                _ => {
                    self.resolve_for_output(&key, versions, ctx, &mut emit);
                    None
                }
            };
            if single.is_none() && emit.is_empty() {
                continue;
            }
            while grandparents
                .get(grandparent)
                .is_some_and(|end| key.as_slice() > end.as_slice())
            {
                grandparent += 1;
                crossed_boundary = true;
            }
            // Split only between user keys, so a key's versions stay in one table.
            let size = out.as_ref().map_or(0, |o| o.writer.estimated_size_bytes());
            let key_group = route.map(|r| r(&key).min(LOG_LEVELS_MAX as u32 - 2));
            let new_group = key_group.is_some() && key_group != out_group;
            if out.is_some()
                && (new_group
                    || size >= split_bytes
                    || (crossed_boundary && size >= split_bytes / 8))
            {
                if let Some(o) = out.take() {
                    outputs.push(Arc::new(self.finish_output(o)?));
                    groups.push(out_group.unwrap_or(0));
                }
            }
            out_group = key_group;
            if out.is_none() {
                crossed_boundary = false;
                let id = self.alloc_file_id();
                let path = self.dir.join(table_file_name(id));
                let file = self
                    .fs
                    .create(&path)
                    .map_err(|e| Error::io("creating", &path, e))?;
                created.push(path.clone());
                out = Some(OpenOutput {
                    id,
                    writer: TableWriter::new(file, path, self.opts.table.clone()),
                    min_ts: u64::MAX,
                    max_ts: 0,
                    max_seqno: 0,
                    multi_version: false,
                });
            }
            if let Some(o) = out.as_mut() {
                o.multi_version |= single.is_none() && emit.len() > 1;
                for (ts, seqno, kind, value) in single.into_iter().chain(emit.iter()) {
                    key_buf.clear();
                    encode_internal(&mut key_buf, &key, *ts, *seqno, *kind);
                    o.writer.add(&key_buf, value)?;
                    o.min_ts = o.min_ts.min(*ts);
                    o.max_ts = o.max_ts.max(*ts);
                    o.max_seqno = o.max_seqno.max(seqno.0);
                }
            }
        }
        if let Some(o) = out.take() {
            outputs.push(Arc::new(self.finish_output(o)?));
            groups.push(out_group.unwrap_or(0));
        }
        Ok(())
    }

    /// Runs a two-layer log's split (see [`crate::split`]): merges the segments and the
    /// runs of the groups being merge-sorted, writes one run per range group met, and
    /// swaps inputs for outputs in one manifest edit.
    fn run_split(&self, task: &Task) -> Result<()> {
        let Some(log) = &self.opts.log else {
            return Err(Error::InvalidArgument(
                "a split needs a two-layer log".into(),
            ));
        };
        let version = self.state.lock().version.clone();
        let mut inputs: Vec<(usize, Arc<TableHandle>)> = Vec::new();
        for (level, tables) in version.levels.iter().enumerate() {
            for t in tables {
                let id = t.meta().id;
                if task.upper.contains(&id) || task.lower.contains(&id) {
                    inputs.push((level, t.clone()));
                }
            }
        }
        if inputs.len() != task.upper.len() + task.lower.len() {
            return Err(Error::InvalidArgument("split inputs vanished".into()));
        }
        let merge_sorted: HashSet<usize> = inputs
            .iter()
            .filter(|(level, _)| *level > 0)
            .map(|(level, _)| *level)
            .collect();
        let ids: Vec<u64> = inputs.iter().map(|(_, t)| t.meta().id).collect();
        let ctx = self.output_context(&ids, None);
        let children: Vec<Box<dyn InternalIter>> = inputs
            .iter()
            .map(|(_, t)| {
                Box::new(t.reader().iter(ReadPurpose::Compaction, false)) as Box<dyn InternalIter>
            })
            .collect();
        let mut it = MergingIter::new(children);
        it.seek_to_first()?;
        let (outputs, groups) =
            self.write_tables(&mut it, &ctx, u64::MAX, &[], Some(&log.group_of))?;
        let mut edit = VersionEdit::default();
        for (level, t) in &inputs {
            edit.deleted.push((*level as u32, t.meta().id));
        }
        let (mut split_bytes, mut merge_sort_bytes) = (0u64, 0u64);
        for (h, g) in outputs.iter().zip(&groups) {
            let level = *g as usize + 1;
            if merge_sorted.contains(&level) {
                merge_sort_bytes += h.meta().size_bytes;
            } else {
                split_bytes += h.meta().size_bytes;
            }
            edit.added.push((level as u32, h.meta().clone()));
        }
        if let Err(e) = self.install(edit, &outputs, |_| {}) {
            self.discard_outputs(&outputs);
            return Err(e);
        }
        for (_, t) in &inputs {
            t.mark_obsolete();
        }
        Counters::add(&self.counters.split_bytes_written, split_bytes);
        Counters::add(&self.counters.merge_sort_bytes_written, merge_sort_bytes);
        if !task.upper.is_empty() {
            Counters::inc(&self.counters.splits);
        }
        Counters::add(&self.counters.merge_sorts, merge_sorted.len() as u64);
        Ok(())
    }

    fn finish_output(&self, o: OpenOutput) -> Result<TableHandle> {
        let mut flags = if o.multi_version {
            0
        } else {
            TABLE_FLAG_UNIQUE_KEYS
        };
        let prefix = self.opts.table.filter_prefix_bytes;
        let props = match u8::try_from(prefix) {
            Ok(n) if n > 0 => {
                flags |= TABLE_FLAG_PREFIX_FILTER;
                vec![TABLE_PROPS_V1, flags, n]
            }
            _ => vec![TABLE_PROPS_V1, flags],
        };
        let summary = o.writer.finish(&props)?;
        let meta = TableMeta {
            id: o.id,
            size_bytes: summary.size_bytes,
            entries: summary.entries,
            smallest: summary.smallest_key,
            largest: summary.largest_key,
            min_ts: o.min_ts,
            max_ts: o.max_ts,
            max_seqno: o.max_seqno,
            created_micros: self.opts.clock.now_micros(),
            location: String::new(),
        };
        self.open_table(meta)
    }

    /// Decides which versions of one key (in internal order) survive into the output.
    fn resolve_for_output(
        &self,
        key: &[u8],
        group: &[(u64, Seqno, ValueKind, Vec<u8>)],
        ctx: &OutputContext,
        emit: &mut Vec<(u64, Seqno, ValueKind, Vec<u8>)>,
    ) {
        // Versions newer than the oldest snapshot are kept as they are: some snapshot may
        // see some of them but not others. The rest are resolved into one version.
        let mut old: Vec<&(u64, Seqno, ValueKind, Vec<u8>)> = Vec::new();
        for v in group {
            if v.1 .0 > ctx.smallest_snapshot {
                emit.push(v.clone());
            } else {
                old.push(v);
            }
        }
        if old.is_empty() {
            return;
        }
        let max_seqno = old.iter().map(|v| v.1).max().unwrap_or_default();
        let purge_ctx = |ts: u64| PurgeContext {
            bottommost: ctx.purge && ts < ctx.min_ts_elsewhere,
            now_micros: ctx.now_micros,
            gc_grace_micros: self.opts.gc_grace_micros,
        };
        let views = views_of(old.iter().copied());
        let survivor = match &self.opts.merge_operator {
            None => crate::merge::lww_winner(&views).and_then(|w| {
                let expired =
                    w.kind == ValueKind::Delete && purge_ctx(w.ts).tombstone_expired(w.ts);
                let idx = views.iter().position(|v| v == &w).unwrap_or(0);
                if expired {
                    None
                } else {
                    old.get(idx).map(|src| (*src).clone())
                }
            }),
            Some(_) if old.len() == 1 && !ctx.purge => old.first().map(|v| (*v).clone()),
            Some(op) => {
                let mut sorted = views.clone();
                sorted.sort_by_key(|v| std::cmp::Reverse(v.ts));
                let merged = op.merge(key, &sorted);
                let merged = if ctx.purge {
                    op.purge(key, merged, &purge_ctx(merged_ts(&sorted)))
                } else {
                    Some(merged)
                };
                merged.map(|r| (r.ts, max_seqno, r.kind, r.value))
            }
        };
        emit.extend(survivor);
        // Keep internal order: newer snapshot-visible versions first, by (ts desc, seq desc).
        emit.sort_by(|a, b| b.0.cmp(&a.0).then(b.1.cmp(&a.1)));
    }
}

/// Borrowed views of owned versions `(ts, seqno, kind, value)`, for resolution.
fn views_of<'a>(
    versions: impl Iterator<Item = &'a (u64, Seqno, ValueKind, Vec<u8>)>,
) -> Vec<KeyVersion<'a>> {
    versions
        .map(|(ts, _, kind, value)| KeyVersion {
            ts: *ts,
            kind: *kind,
            value,
        })
        .collect()
}

/// Gathers the versions a point lookup finds: only the best one under last-write-wins.
struct Collector {
    lww: bool,
    best: Option<(u64, ValueKind, Vec<u8>)>,
    found: Vec<(u64, ValueKind, Vec<u8>)>,
}

impl Collector {
    fn consider(&mut self, ts: u64, kind: ValueKind, value: &[u8]) {
        if !self.lww {
            self.found.push((ts, kind, value.to_vec()));
            return;
        }
        let better = match &self.best {
            None => true,
            Some((bts, bkind, bval)) => lww_beats(
                &KeyVersion { ts, kind, value },
                &KeyVersion {
                    ts: *bts,
                    kind: *bkind,
                    value: bval,
                },
            ),
        };
        if better {
            self.best = Some((ts, kind, value.to_vec()));
        }
    }
}

fn merged_ts(sorted: &[KeyVersion<'_>]) -> u64 {
    sorted.first().map_or(0, |v| v.ts)
}

struct OutputContext {
    smallest_snapshot: u64,
    min_ts_elsewhere: u64,
    purge: bool,
    now_micros: u64,
}

struct OpenOutput {
    id: u64,
    writer: TableWriter,
    min_ts: u64,
    max_ts: u64,
    max_seqno: u64,
    /// Whether some user key got more than one version (kept for a snapshot).
    multi_version: bool,
}

/// Version of the engine's table properties block: `[1, flags]`.
const TABLE_PROPS_V1: u8 = 1;
/// Property flag: every user key has exactly one version in the table, so a point lookup
/// can stop at the first match instead of reading on (perhaps into the next block).
const TABLE_FLAG_UNIQUE_KEYS: u8 = 1;

/// Property flag: the Bloom filter covers only a prefix of each key, whose length is the
/// next property byte.
const TABLE_FLAG_PREFIX_FILTER: u8 = 2;

/// The length of the key prefix `t`'s filter covers, if it is a prefix filter.
fn filter_prefix_of(t: &TableHandle) -> Option<usize> {
    match t.reader().properties() {
        [TABLE_PROPS_V1, flags, n, ..] if flags & TABLE_FLAG_PREFIX_FILTER != 0 => {
            Some(usize::from(*n))
        }
        _ => None,
    }
}

/// What to probe `t`'s filter with for a lookup of `key`.
fn filter_probe<'k>(t: &TableHandle, key: &'k [u8]) -> &'k [u8] {
    match filter_prefix_of(t) {
        Some(n) => crate::table::filter_prefix(key, n),
        None => key,
    }
}

/// Whether `t` may hold a key starting with `prefix` (a table whose filter is not over
/// prefixes of that length may).
fn table_may_hold_prefix(t: &TableHandle, prefix: &[u8]) -> bool {
    filter_prefix_of(t) != Some(prefix.len()) || t.reader().may_contain(prefix)
}

/// The filter prefix every key between `lo` and `hi` shares, if both bounds are at least a
/// prefix long and agree on it.
fn shared_prefix<'k>(lo: Option<&'k [u8]>, hi: Option<&[u8]>, n: usize) -> Option<&'k [u8]> {
    let lo = lo?.get(..n)?;
    (n > 0 && hi?.get(..n)? == lo).then_some(lo)
}

fn table_has_unique_keys(t: &TableHandle) -> bool {
    matches!(t.reader().properties(), [TABLE_PROPS_V1, flags, ..] if flags & TABLE_FLAG_UNIQUE_KEYS != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn small() -> Options {
        Options {
            memtable_size_bytes: 8 << 10,
            table_size_bytes: 16 << 10,
            level1_size_bytes: 32 << 10,
            level0_compaction_trigger: 2,
            level0_stall_tables: 8,
            sync_mode: SyncMode::Batch,
            ..Options::default()
        }
    }

    fn key(i: u32) -> Vec<u8> {
        format!("key{i:06}").into_bytes()
    }

    #[test]
    fn writes_survive_flush_compaction_and_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path(), small()).unwrap();
        for i in 0..2000u32 {
            db.put(&key(i), u64::from(i) + 1, &[i as u8; 100]).unwrap();
        }
        for i in (0..2000u32).step_by(3) {
            db.delete(&key(i), 10_000).unwrap();
        }
        // An older write arriving late loses to the newer one.
        db.put(&key(1), 1, b"stale").unwrap();
        db.wait_for_compactions().unwrap();
        let check = |db: &Db| {
            for i in 0..2000u32 {
                let got = db.get(&key(i)).unwrap();
                if i % 3 == 0 {
                    assert_eq!(got, None, "key {i}");
                } else {
                    assert_eq!(got.unwrap().value, vec![i as u8; 100], "key {i}");
                }
            }
            let scanned: Vec<_> = db
                .scan(Bound::Unbounded, Bound::Unbounded)
                .unwrap()
                .map(|r| r.unwrap().0)
                .collect();
            let expected: Vec<_> = (0..2000u32).filter(|i| i % 3 != 0).map(key).collect();
            assert_eq!(scanned, expected);
        };
        check(&db);
        assert!(db.levels().iter().skip(1).any(|l| !l.tables.is_empty()));
        let c = db.counters();
        assert!(c.flushes > 0 && c.compactions > 0, "{c:?}");
        assert!(c.write_amplification() > 1.0, "{c:?}");
        db.close().unwrap();
        let db = Db::open(dir.path(), small()).unwrap();
        check(&db);
        db.compact().unwrap();
        check(&db);
        let levels = db.levels();
        let last = levels.last().unwrap();
        assert!(!last.tables.is_empty());
        assert!(levels[..levels.len() - 1]
            .iter()
            .all(|l| l.tables.is_empty()));
    }

    #[test]
    fn unflushed_writes_are_replayed_from_the_wal() {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path(), Options::default()).unwrap();
        db.put(b"a", 5, b"1").unwrap();
        db.put(b"b", 6, b"2").unwrap();
        db.close().unwrap();
        let db = Db::open(dir.path(), Options::default()).unwrap();
        assert_eq!(db.recovery_report().records_replayed, 2);
        assert_eq!(db.get(b"a").unwrap().unwrap().value, b"1");
        assert_eq!(db.get(b"b").unwrap().unwrap().ts, 6);
    }

    #[test]
    fn snapshots_see_the_past_even_after_compaction() {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path(), small()).unwrap();
        db.put(b"k", 1, b"old").unwrap();
        let snap = db.snapshot();
        db.put(b"k", 2, b"new").unwrap();
        db.compact().unwrap();
        assert_eq!(db.get_at(b"k", &snap).unwrap().unwrap().value, b"old");
        assert_eq!(db.get(b"k").unwrap().unwrap().value, b"new");
        let scan: Vec<_> = db
            .scan_at(&snap, Bound::Unbounded, Bound::Unbounded)
            .unwrap()
            .collect();
        assert_eq!(scan.len(), 1);
        assert_eq!(scan[0].as_ref().unwrap().1.value, b"old");
    }
}

#[cfg(test)]
mod relocation_tests {
    use super::*;
    use crate::options::TableStore;
    use mosaic_env::{RandomAccessFile, RealFs};

    /// A "cold tier" that is just another directory.
    struct DirStore(PathBuf);

    impl TableStore for DirStore {
        fn open(&self, location: &str) -> std::io::Result<Arc<dyn RandomAccessFile>> {
            RealFs.open_read(&self.0.join(location), false)
        }
    }

    #[test]
    fn a_relocated_table_is_read_from_its_new_location_across_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let cold = tempfile::tempdir().unwrap();
        let opts = Options {
            table_store: Some(Arc::new(DirStore(cold.path().to_path_buf()))),
            ..Options::default()
        };
        let db = Db::open(dir.path(), opts.clone()).unwrap();
        for i in 0..100u32 {
            db.put(format!("k{i:03}").as_bytes(), 1, &i.to_le_bytes())
                .unwrap();
        }
        db.flush().unwrap();
        let table = db
            .levels()
            .into_iter()
            .flat_map(|l| l.tables)
            .next()
            .unwrap();
        let local = dir.path().join(table_file_name(table.id));
        std::fs::copy(&local, cold.path().join("obj-1")).unwrap();
        db.relocate_table(table.id, "obj-1").unwrap();
        assert!(
            !local.exists(),
            "the local data file is removed once relocated"
        );
        assert_eq!(db.get(b"k042").unwrap().unwrap().value, 42u32.to_le_bytes());
        db.close().unwrap();
        let db = Db::open(dir.path(), opts).unwrap();
        let t = db
            .levels()
            .into_iter()
            .flat_map(|l| l.tables)
            .next()
            .unwrap();
        assert_eq!(t.location, "obj-1");
        assert_eq!(db.get(b"k099").unwrap().unwrap().value, 99u32.to_le_bytes());
        // Without a table store, a relocated table cannot be opened: a clear error.
        drop(db);
        let err = Db::open(dir.path(), Options::default()).unwrap_err();
        assert!(err.to_string().contains("no table store"), "{err}");
    }
}

#[cfg(test)]
mod close_tests {
    use super::*;

    #[test]
    fn close_releases_the_directory_while_a_scan_lives_on() {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path(), Options::default()).unwrap();
        db.put(b"a", 1, b"x").unwrap();
        let scan = db.scan(Bound::Unbounded, Bound::Unbounded).unwrap();
        let clone = db.clone();
        db.close().unwrap();
        assert!(matches!(clone.put(b"b", 2, b"y"), Err(Error::Closed)));
        let reopened = Db::open(dir.path(), Options::default()).unwrap();
        assert_eq!(reopened.get(b"a").unwrap().unwrap().value, b"x");
        let items: Vec<_> = scan.map(|r| r.unwrap().0).collect();
        assert_eq!(items, vec![b"a".to_vec()]);
        // Two live openers of one directory are refused.
        assert!(Db::open(dir.path(), Options::default()).is_err());
    }
}

#[cfg(test)]
mod lookup_cost_tests {
    use super::*;

    #[test]
    fn a_point_lookup_reads_one_data_block_when_keys_are_unique() {
        let dir = tempfile::tempdir().unwrap();
        let opts = Options {
            block_cache_bytes: 0,
            ..Options::default()
        };
        let db = Db::open(dir.path(), opts).unwrap();
        for i in 0..2000u32 {
            db.put(format!("key{i:08}").as_bytes(), 1, &[7u8; 1000])
                .unwrap();
        }
        db.flush().unwrap();
        let before = db.counters();
        for i in 0..2000u32 {
            assert!(db.get(format!("key{i:08}").as_bytes()).unwrap().is_some());
        }
        let c = db.counters().since(&before);
        // One ~4 KiB block per lookup; reading on into the next block would add ~25%.
        let per_get = c.get_bytes_read as f64 / c.gets as f64;
        assert!(per_get < 4096.0 * 1.1, "{per_get} bytes per get");
    }
}
