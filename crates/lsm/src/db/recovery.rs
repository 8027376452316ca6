//! Opening a partition: crash recovery, step by step, then attaching it to its engine.
//!
//! Recovery trusts only what is durable: the manifest names the live tables and the
//! highest sequence number flushed into them. A directory written by a per-table engine
//! (the format before the node engine) still holds its own WALs: they are replayed into
//! level-0 tables — migrated — and superseded by a fresh manifest holding the whole state.
//! Every file the manifest does not name — leftovers of an interrupted flush or compaction,
//! migrated WALs — is removed. Finally the engine hands over the writes its shared WAL
//! holds for this partition past the flushed point, as frozen memtables. Each step is its
//! own function below, in the order [`open`] runs them.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::{Condvar, Mutex};

use mosaic_env::Fs;

use crate::engine::{partition_name, Engine, EngineOptions, Shared};
use crate::error::{Error, Result};
use crate::memtable::Memtable;
use crate::options::Options;
use crate::stats::Counters;
use crate::version::{
    current_manifest, manifest_file_name, read_manifest, wal_file_name, ManifestWriter, TableMeta,
    VersionEdit, LOG_LEVELS_MAX,
};
use crate::wal::{decode_batches, keep_damaged, Records};

use super::{empty_version, Closer, Db, DirLock, Inner, RecoveryReport, State};

/// The file that marks a directory as a two-layer log.
const LOG_MARKER: &str = "LOG";

/// Backs [`Db::open`]: recovers the partition in `dir` — of `opts.engine`, or of a private
/// engine opened in `dir` — and attaches it to its engine.
pub(super) fn open(dir: &Path, opts: Options) -> Result<Db> {
    opts.validate()?;
    let dir = dir.to_path_buf();
    let (engine, private) = match &opts.engine {
        Some(e) => (e.clone(), false),
        None => (Engine::open(&dir, EngineOptions::private_for(&opts))?, true),
    };
    // The partition must not hold its engine's handle (the engine holds the partition).
    let opts = Options {
        engine: None,
        ..opts
    };
    let shared = engine.shared.clone();
    if shared.is_closing() {
        return Err(Error::Closed);
    }
    let name = partition_name(shared.root(), &dir)?;
    let fs = opts.fs.clone();
    let lock = lock_and_check_marker(&fs, &dir, &opts)?;
    let manifest = RecoveredManifest::read(&fs, &dir)?;
    let names = fs.list(&dir).map_err(|e| Error::io("listing", &dir, e))?;
    let next_file_id = next_file_id_after(&names, manifest.next_file_id);
    let pid = shared.register(&name)?;
    let mut inner = new_inner(
        dir,
        opts,
        lock,
        &manifest,
        next_file_id,
        shared.clone(),
        pid,
    );
    inner.open_live_tables(&manifest)?;
    let mut report = inner.migrate_wals(&names, manifest.log_number, manifest.last_seqno)?;
    let manifest_id = inner.start_fresh_manifest()?;
    inner.remove_obsolete_files(manifest_id, &mut report)?;
    if private {
        let r = engine.recovery_report();
        report.wal_files_replayed += r.wal_files_replayed;
        report.records_replayed += r.records_replayed;
        report.dropped.extend(r.dropped);
        report.kept.extend(r.kept);
    }
    inner.recovery = report;
    let inner = Arc::new(inner);
    shared.attach(&inner, manifest.flushed_seqno)?;
    let closer = Arc::new(Closer {
        inner: inner.clone(),
        engine,
        private,
    });
    Ok(Db { inner, closer })
}

/// Step 1: creates the directory if needed, takes its lock (one opener at a time), and
/// checks the `LOG` marker against the options: a two-layer log is never opened as a
/// leveled tree, and a new log gets its marker (synced) before anything else is written.
fn lock_and_check_marker(fs: &Arc<dyn Fs>, dir: &Path, opts: &Options) -> Result<DirLock> {
    fs.create_dir_all(dir)
        .map_err(|e| Error::io("creating directory", dir, e))?;
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
            fs.sync_dir(dir)
                .map_err(|e| Error::io("syncing directory", dir, e))?;
        }
        _ => {}
    }
    Ok(lock)
}

/// What the manifest says once its edits are replayed in order.
struct RecoveredManifest {
    /// The manifest read; `None` for a new database.
    path: Option<PathBuf>,
    /// Per-table WALs numbered below this are superseded.
    log_number: u64,
    /// The largest sequence number of a write in a table.
    flushed_seqno: u64,
    /// The next unused file id the manifest knows of.
    next_file_id: u64,
    /// The largest sequence number written to a table.
    last_seqno: u64,
    /// Live tables by id, with their level.
    tables: BTreeMap<u64, (u32, TableMeta)>,
}

impl RecoveredManifest {
    /// Step 2: reads the current manifest (if any) and replays its edits.
    fn read(fs: &Arc<dyn Fs>, dir: &Path) -> Result<Self> {
        let mut m = RecoveredManifest {
            path: current_manifest(fs, dir)?,
            log_number: 0,
            flushed_seqno: 0,
            next_file_id: 1,
            last_seqno: 0,
            tables: BTreeMap::new(),
        };
        if let Some(manifest) = &m.path {
            for edit in read_manifest(fs, manifest)? {
                if let Some(n) = edit.log_number {
                    m.log_number = n;
                }
                if let Some(n) = edit.next_file_id {
                    m.next_file_id = m.next_file_id.max(n);
                }
                if let Some(n) = edit.last_seqno {
                    m.last_seqno = m.last_seqno.max(n);
                }
                if let Some(n) = edit.flushed_seqno {
                    m.flushed_seqno = m.flushed_seqno.max(n);
                }
                for (_, id) in &edit.deleted {
                    m.tables.remove(id);
                }
                for (level, meta) in edit.added {
                    m.tables.insert(meta.id, (level, meta));
                }
            }
        }
        Ok(m)
    }
}

/// Step 3: the next file id, past every file in the directory (`names`) as well as the
/// manifest's own count — a crash may leave files the manifest never heard of.
fn next_file_id_after(names: &[String], mut next_file_id: u64) -> u64 {
    for name in names {
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
    next_file_id
}

/// The id and extension of a file named `<id>.<ext>`.
fn file_id(name: &str) -> Option<(u64, &str)> {
    let (stem, ext) = name.split_once('.')?;
    Some((stem.parse().ok()?, ext))
}

/// The partition's state as recovery starts: an empty version and memtable, no manifest
/// writer yet.
fn new_inner(
    dir: PathBuf,
    opts: Options,
    lock: DirLock,
    manifest: &RecoveredManifest,
    next_file_id: u64,
    engine: Arc<Shared>,
    pid: u32,
) -> Inner {
    let counters = Arc::new(Counters::default());
    Inner {
        fs: opts.fs.clone(),
        dir,
        counters,
        cache: engine.cache.clone(),
        engine,
        pid,
        state: Mutex::new(State {
            sv: None,
            mem: Arc::new(
                Memtable::with_merge(opts.merge_operator.clone())
                    .with_prefix_filter(opts.table.filter_prefix_bytes),
            ),
            imm: Vec::new(),
            version: Arc::new(empty_version(&opts)),
            next_file_id,
            log_number: manifest.log_number,
            flushed_seqno: manifest.flushed_seqno,
            busy: HashSet::new(),
            running: HashMap::new(),
            ingesting: Vec::new(),
            cursors: vec![Vec::new(); opts.levels_max],
            maybe_work: true,
            retry_at: 0,
            flushing: false,
            compactions_running: 0,
            manual_compaction: false,
            no_space: None,
            poisoned: None,
            closing: false,
        }),
        opts,
        state_cv: Condvar::new(),
        manifest: Mutex::new(None),
        visible_seqno: AtomicU64::new(manifest.last_seqno),
        snapshots: Mutex::new(BTreeMap::new()),
        recovery: RecoveryReport::default(),
        lock: Mutex::new(Some(lock)),
    }
}

impl Inner {
    /// Step 4: opens every table the manifest lists, on its level.
    fn open_live_tables(&mut self, manifest: &RecoveredManifest) -> Result<()> {
        let mut version = empty_version(&self.opts);
        for (level, meta) in manifest.tables.values() {
            let handle = self.open_table(meta.clone())?;
            let level_index = *level as usize;
            if version.log && level_index < LOG_LEVELS_MAX && level_index >= version.levels.len() {
                version.levels.resize(level_index + 1, Vec::new());
            }
            version
                .levels
                .get_mut(*level as usize)
                .ok_or_else(|| {
                    Error::corruption(
                        manifest.path.clone().unwrap_or_default(),
                        0,
                        format!("table {} on level {level}, beyond levels_max", meta.id),
                    )
                })?
                .push(Arc::new(handle));
        }
        let version = version.apply(&VersionEdit::default(), &[])?;
        self.state.get_mut().version = Arc::new(version);
        Ok(())
    }

    /// Step 5 (only for a directory written by a per-table engine): replays its WALs
    /// numbered `log_number` and up (listed in `names`), in order, into memtables flushed
    /// as level-0 tables whenever they fill up and at the end. A record that fails to
    /// decode ends its file's replay, as a torn tail does; both are reported.
    fn migrate_wals(
        &mut self,
        names: &[String],
        log_number: u64,
        last_seqno: u64,
    ) -> Result<RecoveryReport> {
        let mut wal_ids: Vec<u64> = names
            .iter()
            .filter_map(|n| file_id(n))
            .filter(|(id, ext)| *ext == "wal" && *id >= log_number)
            .map(|(id, _)| id)
            .collect();
        wal_ids.sort_unstable();
        let mut report = RecoveryReport::default();
        let mut mem = self.new_memtable();
        let mut max_seqno = last_seqno;
        let newest = wal_ids.last().copied();
        for id in &wal_ids {
            let path = self.dir.join(wal_file_name(*id));
            let data = self
                .fs
                .read_all(&path)
                .map_err(|e| Error::io("reading", &path, e))?;
            let mut records = Records::new(&data, &path);
            report.wal_files_replayed += 1;
            while let Some((offset, payload)) = records.next() {
                let Some(ops) = decode_batches(payload) else {
                    records.stop_at(
                        offset,
                        "malformed batch in a record with a valid checksum".into(),
                    );
                    break;
                };
                report.records_replayed += 1;
                for op in ops {
                    mem.insert(op.key, op.ts, op.seqno, op.kind, op.value);
                    max_seqno = max_seqno.max(op.seqno.0);
                }
                if mem.size_bytes() >= self.opts.memtable_size_bytes {
                    self.recover_flush(&mem, max_seqno)?;
                    mem = self.new_memtable();
                }
            }
            if let Some(d) = records.dropped() {
                report.dropped.push(d.clone());
                if !d.tolerable(Some(*id) == newest) {
                    if !self.opts.ignore_wal_corruption {
                        return Err(d.refusal());
                    }
                    // Kept aside instead of removed with the other old WALs, once its
                    // surviving writes are in tables the new manifest names.
                    report.kept.push(path.clone());
                }
            }
        }
        if !mem.is_empty() {
            self.recover_flush(&mem, max_seqno)?;
        }
        self.visible_seqno.store(max_seqno, Ordering::SeqCst);
        Ok(report)
    }

    /// Within step 5: writes a replayed memtable as a level-0 table (no WAL to retire yet;
    /// the new manifest written at the end of open supersedes the old logs).
    fn recover_flush(&mut self, mem: &Arc<Memtable>, max_seqno: u64) -> Result<()> {
        self.visible_seqno.store(max_seqno, Ordering::SeqCst);
        let outputs = self.write_memtable(mem)?;
        let st = self.state.get_mut();
        let edit = VersionEdit {
            added: outputs.iter().map(|h| (0, h.meta().clone())).collect(),
            ..VersionEdit::default()
        };
        st.version = Arc::new(st.version.apply(&edit, &outputs)?);
        st.sv = None;
        Ok(())
    }

    /// Step 6: writes a fresh manifest holding the whole recovered state; from here on
    /// the old manifests, and any per-table WALs, are superseded. Returns its id.
    fn start_fresh_manifest(&mut self) -> Result<u64> {
        {
            let st = self.state.get_mut();
            st.log_number = st.next_file_id;
        }
        let manifest_id = self.alloc_file_id();
        let snapshot = self.snapshot_edit();
        let writer = ManifestWriter::create(&self.fs, &self.dir, manifest_id, &snapshot)?;
        *self.manifest.get_mut() = Some(writer);
        Ok(manifest_id)
    }

    /// Step 7: removes what the new manifest does not need — tables it does not name
    /// (counted as orphans in `report`), per-table WALs, older manifests, a half-written
    /// `CURRENT.tmp` — and syncs the directory.
    fn remove_obsolete_files(
        &mut self,
        manifest_id: u64,
        report: &mut RecoveryReport,
    ) -> Result<()> {
        let (fs, dir) = (&self.fs, &self.dir);
        let version = &self.state.get_mut().version;
        let live: HashSet<u64> = version.all_tables().map(|t| t.meta().id).collect();
        let relocated: HashSet<u64> = version
            .all_tables()
            .filter(|t| !t.meta().location.is_empty())
            .map(|t| t.meta().id)
            .collect();
        let keep_manifest = manifest_file_name(manifest_id);
        for name in fs.list(dir).map_err(|e| Error::io("listing", dir, e))? {
            let obsolete = match file_id(&name) {
                Some((id, "sst")) => !live.contains(&id) || relocated.contains(&id),
                Some((id, "meta")) => !relocated.contains(&id),
                Some((_, "wal")) => true,
                Some((_, "meta.tmp")) => true,
                _ => {
                    name.starts_with("MANIFEST-") && name != keep_manifest || name == "CURRENT.tmp"
                }
            };
            if obsolete {
                let p = dir.join(&name);
                if let Some(kept) = report.kept.iter_mut().find(|k| **k == p) {
                    *kept = keep_damaged(&**fs, &p)?;
                    continue;
                }
                fs.remove(&p).map_err(|e| Error::io("removing", &p, e))?;
                if name.ends_with(".sst") {
                    report.orphans_removed += 1;
                }
            }
        }
        fs.sync_dir(dir)
            .map_err(|e| Error::io("syncing directory", dir, e))
    }
}
