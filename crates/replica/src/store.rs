//! [`ReplicaStore`]: one table's storage under one layout.
//!
//! Every operation names the [`Role`] it acts under, and the layout picks the structure:
//!
//! | layout | primary | redundant copy of source S |
//! |---|---|---|
//! | uniform | the one tree (`DIR`) | the one tree (`DIR`) |
//! | multi-lsm | `DIR/primary/` | `DIR/src-<S>/` |
//! | decoupled | `DIR/primary/` | `DIR/log/` (two-layer log) |
//! | erasure-tiered | `DIR/primary/` | `DIR/src-<S>/` (ELECT's per-source trees) |
//! | heterogeneous | `DIR/replica-0-<order>/` | `DIR/replica-<i>-<order>/` (i: the node's position in the replica list) |
//!
//! Reads under a role see what was written under that role (uniform: everything). A key's
//! role follows from its token, so the caller splits a range read where the role changes
//! and reads each piece under its role.
//!
//! A layout other than uniform writes `DIR/LAYOUT` (its name) when it creates the
//! directory, and opening a directory under another layout than the one it holds fails
//! rather than reading an empty table: the uniform tree lives in `DIR` itself (so data
//! written before layouts existed opens as uniform), and a uniform directory is recognized
//! by its engine's `CURRENT` file.

use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use mosaic_lsm::{CounterSnapshot, Db, Entry, Error, LevelInfo, Options, Result, Scan, WriteBatch};
use mosaic_rows::{ClusteringFilter, KeyRange, KeySchema, Permutation};

use crate::decoupled::Decoupled;
use crate::elect::Elect;
use crate::heterogeneous::{Heterogeneous, KeyOrders, PermutedScan};
use crate::multi_lsm::MultiLsm;
use crate::parity::GroupId;
use crate::ranges::LogSettings;
use crate::role::{Layout, Role, SourceId};
use crate::stored::StoredScan;

mod cleanup;
mod ec;

pub use cleanup::{CleanupReport, StructureCleanup};

/// The primary tree's directory name (multi-lsm and decoupled).
pub const PRIMARY_DIR: &str = "primary";
/// The file naming the layout of a directory that is not uniform.
pub const LAYOUT_FILE: &str = "LAYOUT";
/// The engine file whose presence marks a uniform directory.
const ENGINE_CURRENT: &str = "CURRENT";

/// One engine of a store, for statistics.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Structure {
    /// Uniform's single tree, holding every replica.
    Shared,
    /// The tree of primary copies.
    Primary,
    /// Multi-LSM's tree of one source's redundant copies.
    Source(SourceId),
    /// Decoupled's two-layer log of redundant copies.
    Log,
    /// Heterogeneous's tree of one replica index (in that index's order).
    Replica(usize),
}

impl Structure {
    /// A short name for reports and metric labels: `shared`, `primary`, `src-<hex>`, `log`.
    pub fn name(&self) -> String {
        match self {
            Structure::Shared => "shared".to_owned(),
            Structure::Primary => "primary".to_owned(),
            Structure::Source(s) => crate::multi_lsm::source_dir_name(*s),
            Structure::Log => "log".to_owned(),
            Structure::Replica(i) => format!("replica-{i}"),
        }
    }
}

/// One engine's statistics.
#[derive(Clone, Debug)]
pub struct StructureStats {
    /// Which engine.
    pub structure: Structure,
    /// Its counters.
    pub counters: CounterSnapshot,
    /// Bytes in its memtables.
    pub memtable_bytes: usize,
    /// Its tables per level (for the log: level 0 is the global log).
    pub levels: Vec<LevelInfo>,
}

enum Engines {
    Uniform(Db),
    MultiLsm(Box<MultiLsm>),
    Decoupled(Decoupled),
    ErasureTiered(Box<MultiLsm>, Box<Elect>),
    Heterogeneous(Box<Heterogeneous>),
}

/// One table's storage under one layout (see the module doc).
pub struct ReplicaStore {
    dir: PathBuf,
    layout: Layout,
    engines: Engines,
    /// The engines' clock (hotness decays by it).
    clock: Arc<dyn mosaic_env::Clock>,
    /// The table's key columns, when the opener gave them: reads can then be filtered.
    schema: Option<KeySchema>,
    /// Every engine's filter of what a cleanup drops ([`crate::cleanup`]).
    cleanup: Arc<crate::cleanup::CleanupGate>,
}

impl std::fmt::Debug for ReplicaStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReplicaStore")
            .field("dir", &self.dir)
            .field("layout", &self.layout)
            .finish_non_exhaustive()
    }
}

/// An ascending iterator over live keys of one role; yields `(key, entry)` like
/// [`mosaic_lsm::Scan`], keys canonical (a heterogeneous tree's rows re-keyed), and only
/// rows passing the read's filter.
pub struct ReplicaScan {
    kind: ScanKind,
    /// Counts the rows an engine scan examines (heterogeneous trees' statistics).
    counters: Option<Arc<crate::heterogeneous::ReadCounters>>,
}

enum ScanKind {
    Empty,
    Engine {
        scan: Box<Scan>,
        filter: Option<Box<(KeySchema, ClusteringFilter)>>,
    },
    Permuted(Box<PermutedScan>),
}

impl ReplicaScan {
    /// A scan finding nothing.
    pub(crate) fn empty() -> ReplicaScan {
        ReplicaScan {
            kind: ScanKind::Empty,
            counters: None,
        }
    }

    /// An engine scan whose rows are checked against `filter` (with the table's schema).
    pub(crate) fn filtered(
        scan: Scan,
        filter: Option<(KeySchema, ClusteringFilter)>,
    ) -> ReplicaScan {
        let filter = filter.filter(|(_, f)| !f.is_trivial()).map(Box::new);
        ReplicaScan {
            kind: ScanKind::Engine {
                scan: Box::new(scan),
                filter,
            },
            counters: None,
        }
    }

    /// The scan, counting the entries it examines in `counters`.
    pub(crate) fn counting(self, counters: Arc<crate::heterogeneous::ReadCounters>) -> ReplicaScan {
        ReplicaScan {
            counters: Some(counters),
            ..self
        }
    }

    /// A heterogeneous tree's scan in another order than the declared one.
    pub(crate) fn permuted(scan: PermutedScan) -> ReplicaScan {
        ReplicaScan {
            kind: ScanKind::Permuted(Box::new(scan)),
            counters: None,
        }
    }
}

impl Iterator for ReplicaScan {
    type Item = Result<(Vec<u8>, Entry)>;

    fn next(&mut self) -> Option<Self::Item> {
        match &mut self.kind {
            ScanKind::Empty => None,
            ScanKind::Engine { scan, filter: None } => {
                let item = scan.next()?;
                if let Some(c) = &self.counters {
                    c.rows_scanned
                        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                }
                Some(item)
            }
            ScanKind::Engine {
                scan,
                filter: Some(f),
            } => loop {
                let (schema, filter) = &**f;
                let item = scan.next()?;
                if let Some(c) = &self.counters {
                    c.rows_scanned
                        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                }
                match item {
                    // A key that does not decode passes: the reader reports it.
                    Ok((key, entry)) if !filter.passes(schema, &key).unwrap_or(true) => {
                        let _ = entry;
                        continue;
                    }
                    other => return Some(other),
                }
            },
            ScanKind::Permuted(p) => p.next(),
        }
    }
}

/// A key range as scan bounds: `[start, end)`, unbounded without an end.
pub(crate) fn range_bounds(range: &KeyRange) -> (Bound<&[u8]>, Bound<&[u8]>) {
    let end = match &range.end {
        Some(e) => Bound::Excluded(e.as_slice()),
        None => Bound::Unbounded,
    };
    (Bound::Included(range.start.as_slice()), end)
}

/// The last level of a tree of `levels`: its deepest non-empty level below level 0.
pub(crate) fn last_level(levels: &[LevelInfo]) -> Option<&LevelInfo> {
    levels
        .iter()
        .rev()
        .find(|l| l.level > 0 && !l.tables.is_empty())
}

/// Bytes in the tables of `level`.
fn level_bytes(level: &LevelInfo) -> u64 {
    level.tables.iter().map(|t| t.size_bytes).sum()
}

/// The α plan (ELECT Eqs. (4)–(6)) for a primary tree of `levels`, in bytes: everything
/// it holds, and its deepest non-empty level as the last level.
fn alpha_plan(
    levels: &[LevelInfo],
    code: mosaic_types::ErasureCode,
    r: u32,
) -> mosaic_erasure::Plan {
    let all: u64 = levels.iter().map(level_bytes).sum();
    let last = last_level(levels).map_or(0, level_bytes);
    mosaic_erasure::target::plan(
        code.alpha,
        r,
        code.k,
        code.n,
        mosaic_erasure::Counts {
            all: all as f64,
            last: last as f64,
        },
    )
}

/// Whether table `t`'s keys overlap `[lo, hi]`.
fn overlaps(t: &mosaic_lsm::TableInfo, lo: &[u8], hi: &[u8]) -> bool {
    t.smallest_key.as_slice() <= hi && t.largest_key.as_slice() >= lo
}

/// The live tables of `levels` holding rows of listed coded table `id` (key range `range`)
/// that no coding protects yet: neither coded nor with their own key list acknowledged.
/// While there are any, `id`'s slot is the only redundancy of those rows.
fn unprotected_holders(
    elect: &Elect,
    levels: &[LevelInfo],
    id: u64,
    range: &crate::elect::KeyRange,
    coded: &std::collections::BTreeMap<u64, crate::elect::CodedTable>,
    listed: &std::collections::BTreeMap<u64, crate::elect::Listing>,
) -> Result<Vec<u64>> {
    let lineage = elect.lineage();
    // Listed before lineage watched it (or the watch raced a compaction): watched now.
    if lineage.heirs(id).is_none() {
        lineage.watch(id, range.clone(), || levels.to_vec())?;
    }
    let holders = lineage.heirs(id).map(|h| h.holders).unwrap_or_default();
    let (lo, hi) = range;
    Ok(levels
        .iter()
        .flat_map(|l| &l.tables)
        .filter(|t| t.id != id && holders.contains(&t.id) && overlaps(t, lo, hi))
        .filter(|t| !(coded.contains_key(&t.id) && listed.get(&t.id).is_some_and(|l| l.acked)))
        .map(|t| t.id)
        .collect())
}

/// The layout a directory holds by its marker, `None` when it has none.
fn stored_layout(engine: &Options, dir: &Path) -> Result<Option<String>> {
    let path = dir.join(LAYOUT_FILE);
    let Some(bytes) = crate::sealed::read_optional(&*engine.fs, &path)? else {
        return Ok(None);
    };
    let name = String::from_utf8(bytes)
        .map_err(|_| Error::corruption(&path, 0, "layout marker is not UTF-8"))?;
    Ok(Some(name.trim().to_owned()))
}

/// Checks that `dir` holds `layout` (or nothing yet) and marks a new non-uniform one.
fn check_and_mark(engine: &Options, dir: &Path, layout: Layout) -> Result<()> {
    let fs = &engine.fs;
    let mismatch = |held: &str| {
        Err(Error::InvalidArgument(format!(
            "{} holds a table stored in the {held} layout, not {layout}; a table keeps its \
             layout for life",
            dir.display()
        )))
    };
    let held = stored_layout(engine, dir)?;
    let uniform_data = fs.exists(&dir.join(ENGINE_CURRENT));
    match (layout, held) {
        (Layout::Uniform, Some(held)) => mismatch(&held),
        (Layout::Uniform, None) => Ok(()),
        (_, Some(held)) if held == layout.name() => Ok(()),
        (_, Some(held)) => mismatch(&held),
        (_, None) if uniform_data => mismatch(Layout::Uniform.name()),
        (_, None) => {
            fs.create_dir_all(dir)
                .map_err(|e| Error::io("creating directory", dir, e))?;
            let path = dir.join(LAYOUT_FILE);
            mosaic_lsm::write_atomically(&**fs, &path, layout.name().as_bytes())
                .map_err(|e| Error::io("writing", &path, e))?;
            if let Some(parent) = dir.parent() {
                fs.sync_dir(parent)
                    .map_err(|e| Error::io("syncing", parent, e))?;
            }
            Ok(())
        }
    }
}

impl ReplicaStore {
    /// Opens (creating) the storage of a table in `dir` under `layout`. `engine` configures
    /// every engine of the store (its `log` field is ignored: only the decoupled layout's
    /// log runs in log mode, shaped by `log`). Fails if `dir` holds another layout.
    pub fn open(
        dir: impl AsRef<Path>,
        layout: Layout,
        engine: Options,
        log: LogSettings,
    ) -> Result<ReplicaStore> {
        Self::open_with_keys(dir, layout, engine, log, None)
    }

    /// [`ReplicaStore::open`] given the table's key columns and replica orders: needed by
    /// the heterogeneous layout (which re-keys rows), and letting every layout filter reads
    /// by clustering restrictions ([`ReplicaStore::scan_filtered`]).
    pub fn open_with_keys(
        dir: impl AsRef<Path>,
        layout: Layout,
        engine: Options,
        log: LogSettings,
        keys: Option<KeyOrders>,
    ) -> Result<ReplicaStore> {
        let dir = dir.as_ref().to_path_buf();
        let schema = keys.as_ref().map(|k| k.schema.clone());
        let engine = Options {
            log: None,
            ..engine
        };
        check_and_mark(&engine, &dir, layout)?;
        let clock = engine.clock.clone();
        let gate = Arc::new(crate::cleanup::CleanupGate::default());
        let engines = match layout {
            Layout::Uniform => {
                Engines::Uniform(Db::open(&dir, gate.options(&engine, Structure::Shared))?)
            }
            Layout::MultiLsm => {
                Engines::MultiLsm(Box::new(MultiLsm::open(&dir, engine, &gate, None, None)?))
            }
            Layout::ErasureTiered => {
                // The coding state deletes offloaded coded tables; the trees must not.
                let elect = Elect::open(engine.fs.clone(), &dir, engine.table_store.clone())?;
                let engine = Options {
                    table_store: engine.table_store.clone().map(|s| {
                        Arc::new(crate::elect::GhostAwareStore::new(s, &dir))
                            as Arc<dyn mosaic_lsm::TableStore>
                    }),
                    ..engine
                };
                let covered = elect.covered().clone();
                let filter: crate::multi_lsm::SourceFilter =
                    std::sync::Arc::new(move |source| covered.source(source) as _);
                let listener = crate::lineage::LineageListener::new(
                    elect.lineage().clone(),
                    engine.compaction_listener.clone(),
                );
                let listener = Some(Arc::new(listener) as Arc<dyn mosaic_lsm::CompactionListener>);
                let trees = MultiLsm::open(&dir, engine, &gate, Some(filter), listener)?;
                elect.recover_lineage(|| trees.primary().levels())?;
                Engines::ErasureTiered(Box::new(trees), Box::new(elect))
            }
            Layout::Decoupled => Engines::Decoupled(Decoupled::open(&dir, engine, &gate, &log)?),
            Layout::Heterogeneous => {
                let Some(keys) = keys else {
                    return Err(Error::InvalidArgument(
                        "the heterogeneous layout needs the table's key columns".into(),
                    ));
                };
                Engines::Heterogeneous(Box::new(Heterogeneous::open(&dir, engine, &gate, keys)?))
            }
        };
        Ok(ReplicaStore {
            dir,
            layout,
            engines,
            clock,
            schema,
            cleanup: gate,
        })
    }

    /// The store's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The store's layout.
    pub fn layout(&self) -> Layout {
        self.layout
    }

    /// Applies a batch of writes under `role`, atomically.
    pub fn write(&self, role: Role, batch: WriteBatch) -> Result<()> {
        if batch.is_empty() {
            return Ok(());
        }
        match &self.engines {
            Engines::Uniform(db) => db.write(batch),
            Engines::MultiLsm(m) | Engines::ErasureTiered(m, _) => {
                m.tree_or_create(role)?.write(batch)
            }
            Engines::Decoupled(d) => d.engine(role).write(batch),
            Engines::Heterogeneous(h) => h.write(role, batch),
        }
    }

    /// Stores a batch of streamed entries under `role` (ascending, distinct keys: a range
    /// a joining node pulls) as tables placed straight into the structure's levels
    /// ([`Db::ingest`]: no WAL, memtable or compaction) where the structure is a leveled
    /// tree of its own: `uniform`'s, `multi-lsm`'s source trees, `decoupled`'s primary
    /// tree. Elsewhere — `decoupled`'s log, an `erasure-tiered` table (whose trees carry
    /// coding state), a `heterogeneous` one (which re-keys rows per tree) — and for a batch
    /// out of order, it is written as [`ReplicaStore::write`] writes it. Durable on `Ok`.
    pub fn ingest(&self, role: Role, batch: WriteBatch) -> Result<mosaic_lsm::Ingested> {
        match &self.engines {
            Engines::Uniform(db) => db.ingest(batch),
            Engines::MultiLsm(m) => m.tree_or_create(role)?.ingest(batch),
            Engines::Decoupled(d) => d.engine(role).ingest(batch),
            Engines::ErasureTiered(..) | Engines::Heterogeneous(_) => self
                .write(role, batch)
                .map(|()| mosaic_lsm::Ingested::Written),
        }
    }

    /// The newest version of `key` stored under `role`, or `None`.
    pub fn get(&self, role: Role, key: &[u8]) -> Result<Option<Entry>> {
        match &self.engines {
            Engines::Uniform(db) => db.get(key),
            Engines::MultiLsm(m) | Engines::ErasureTiered(m, _) => match m.tree(role) {
                Some(db) => db.get(key),
                None => Ok(None),
            },
            Engines::Decoupled(d) => d.engine(role).get(key),
            Engines::Heterogeneous(h) => h.get(role, key),
        }
    }

    /// Live keys stored under `role` within the bounds, ascending.
    pub fn scan(&self, role: Role, start: Bound<&[u8]>, end: Bound<&[u8]>) -> Result<ReplicaScan> {
        let range = KeyRange {
            start: match start {
                Bound::Included(s) => s.to_vec(),
                Bound::Excluded(s) => {
                    let mut s = s.to_vec();
                    s.push(0);
                    s
                }
                Bound::Unbounded => Vec::new(),
            },
            end: match end {
                Bound::Excluded(e) => Some(e.to_vec()),
                Bound::Included(e) => {
                    let mut e = e.to_vec();
                    e.push(0);
                    Some(e)
                }
                Bound::Unbounded => None,
            },
        };
        self.scan_filtered(role, &range, None)
    }

    /// Live entries of canonical `range` stored under `role`, ascending, with the rows
    /// `filter` rejects left out (a filter needs the key columns given at open; without
    /// them it is not applied, which only means more rows for the caller to check).
    pub fn scan_filtered(
        &self,
        role: Role,
        range: &KeyRange,
        filter: Option<&ClusteringFilter>,
    ) -> Result<ReplicaScan> {
        if let Engines::Heterogeneous(h) = &self.engines {
            return h.scan(role, range, filter);
        }
        let (start, end) = range_bounds(range);
        let Some(db) = self.engine_of(role) else {
            return Ok(ReplicaScan::empty());
        };
        let filter = match (&self.schema, filter) {
            (Some(schema), Some(f)) => Some((schema.clone(), f.clone())),
            _ => None,
        };
        Ok(ReplicaScan::filtered(db.scan(start, end)?, filter))
    }

    /// Live entries of canonical `range` stored under `role`, in the order they are stored
    /// (canonical order but for a heterogeneous tree in another order), keys canonical,
    /// after stored key `after`: what repair hashes and streams ([`crate::stored`]).
    pub fn scan_stored(
        &self,
        role: Role,
        range: &KeyRange,
        after: Option<&[u8]>,
    ) -> Result<StoredScan> {
        if let Engines::Heterogeneous(h) = &self.engines {
            return h.scan_stored(role, range, after);
        }
        match self.engine_of(role) {
            Some(db) => StoredScan::plain(&db, range, after),
            None => Ok(StoredScan::empty()),
        }
    }

    /// The engine holding `role`'s entries with canonical keys, if any (a heterogeneous
    /// store's trees are reached through it, which knows their orders).
    fn engine_of(&self, role: Role) -> Option<Db> {
        match &self.engines {
            Engines::Uniform(db) => Some(db.clone()),
            Engines::MultiLsm(m) | Engines::ErasureTiered(m, _) => m.tree(role),
            Engines::Decoupled(d) => Some(d.engine(role).clone()),
            Engines::Heterogeneous(_) => None,
        }
    }

    /// Gives a heterogeneous store its table's new replica orders, starting a re-layout of
    /// every index whose tree is in another order; no write may be in flight. Other
    /// layouts ignore it.
    pub fn set_orders(&self, orders: Vec<Permutation>) -> Result<()> {
        match &self.engines {
            Engines::Heterogeneous(h) => h.set_orders(orders),
            _ => Ok(()),
        }
    }

    /// Copies up to `max_entries` entries of a re-layout under way (reads and writes go on
    /// meanwhile); whether any copying is left.
    pub fn relayout_step(&self, max_entries: usize) -> Result<bool> {
        match &self.engines {
            Engines::Heterogeneous(h) => h.relayout_step(max_entries),
            _ => Ok(false),
        }
    }

    /// Switches the re-layouts whose copy completed to their new trees and drops the old
    /// ones; no read or write may be in flight. How many finished.
    pub fn relayout_finish(&self) -> Result<usize> {
        match &self.engines {
            Engines::Heterogeneous(h) => h.relayout_finish(),
            _ => Ok(0),
        }
    }

    /// The re-layouts under way (heterogeneous).
    pub fn relayout_status(&self) -> Vec<crate::heterogeneous::RelayoutStatus> {
        match &self.engines {
            Engines::Heterogeneous(h) => h.relayout_status(),
            _ => Vec::new(),
        }
    }

    /// A heterogeneous store's trees: each replica index's order and read counters (empty
    /// for other layouts).
    pub fn heterogeneous_stats(&self) -> Vec<crate::heterogeneous::TreeStats> {
        match &self.engines {
            Engines::Heterogeneous(h) => h.stats(),
            _ => Vec::new(),
        }
    }

    /// The coding state of an `erasure-tiered` table.
    pub fn elect(&self) -> Option<&Elect> {
        match &self.engines {
            Engines::ErasureTiered(_, e) => Some(e),
            _ => None,
        }
    }

    /// The tree of primary copies (every layout but uniform).
    fn primary(&self) -> Option<Db> {
        match &self.engines {
            Engines::Uniform(_) => None,
            Engines::MultiLsm(m) | Engines::ErasureTiered(m, _) => m.tree(Role::Primary),
            Engines::Decoupled(d) => Some(d.engine(Role::Primary).clone()),
            Engines::Heterogeneous(h) => h.tree(Role::Primary).map(|t| t.db),
        }
    }

    /// Every engine of the store with its structure.
    fn engines(&self) -> Vec<(Structure, Db)> {
        match &self.engines {
            Engines::Uniform(db) => vec![(Structure::Shared, db.clone())],
            Engines::MultiLsm(m) | Engines::ErasureTiered(m, _) => m.trees(),
            Engines::Decoupled(d) => d.engines(),
            Engines::Heterogeneous(h) => h
                .trees()
                .into_iter()
                .map(|(i, t)| (Structure::Replica(i), t.db))
                .collect(),
        }
    }

    /// Runs `op` on every engine; the first failure is returned after all were tried.
    fn each(&self, op: impl Fn(&Db) -> Result<()>) -> Result<()> {
        let mut first = None;
        for (_, db) in self.engines() {
            if let Err(e) = op(&db) {
                first.get_or_insert(e);
            }
        }
        first.map_or(Ok(()), Err)
    }

    /// Flushes every engine's memtables.
    pub fn flush(&self) -> Result<()> {
        self.each(Db::flush)
    }

    /// Compacts every engine fully.
    pub fn compact(&self) -> Result<()> {
        self.each(Db::compact)
    }

    /// Waits until no engine has background work left.
    pub fn wait_for_compactions(&self) -> Result<()> {
        self.each(Db::wait_for_compactions)
    }

    /// Every engine's counters summed.
    pub fn counters(&self) -> CounterSnapshot {
        let mut sum = CounterSnapshot::default();
        for (_, db) in self.engines() {
            sum = sum.plus(&db.counters());
        }
        sum
    }

    /// Per-engine statistics: uniform's shared tree; multi-lsm's primary then each source
    /// tree; decoupled's primary then the log.
    pub fn structures(&self) -> Vec<StructureStats> {
        self.engines()
            .into_iter()
            .map(|(structure, db)| StructureStats {
                structure,
                counters: db.counters(),
                memtable_bytes: db.memtable_bytes(),
                levels: db.levels(),
            })
            .collect()
    }

    /// Bytes held by every engine's memtables.
    pub fn memtable_bytes(&self) -> usize {
        self.engines()
            .iter()
            .map(|(_, db)| db.memtable_bytes())
            .sum()
    }

    /// Bytes in every engine's tables (the node's load, as gossiped).
    pub fn load_bytes(&self) -> u64 {
        self.engines()
            .iter()
            .flat_map(|(_, db)| db.levels())
            .flat_map(|l| l.tables)
            .map(|t| t.size_bytes)
            .sum()
    }

    /// Stops background work and syncs every engine's WAL; the first failure is returned
    /// after every engine was closed.
    pub fn close(self) -> Result<()> {
        match self.engines {
            Engines::Uniform(db) => db.close(),
            Engines::MultiLsm(m) | Engines::ErasureTiered(m, _) => (*m).close(),
            Engines::Decoupled(d) => d.close(),
            Engines::Heterogeneous(h) => (*h).close(),
        }
    }
}
