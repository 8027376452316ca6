//! Secondary indexes on this node (see `mosaic_cql::index` for what an entry is and why
//! stale entries are harmless): each index of a table is one more partition of the node
//! engine, in `TABLE_DIR/indexes/<name>.<target>/` (escaped), so it shares the table's
//! WAL and goes with the table's directory when the table is dropped or truncated.
//!
//! - **Writes**: every write applied to a table (a client's, a hint's, read repair's,
//!   repair's) adds its index entries first, then the rows: the shared WAL orders them, so
//!   a crash never keeps a row whose entry was lost.
//! - **Builds**: an index created on a table with data is built in the background from
//!   what this node stores, a chunk at a time, while writes keep indexing themselves; a
//!   `BUILT` file then marks it (`system."IndexInfo"`). Until it is built, reads through
//!   it read the range whole (correct, only slower); a restart resumes an unfinished
//!   build from the start.
//! - **Reads** (`index_read`): a read through an index scans the term's entries in the
//!   range, reads each row (or partition) they point at with its partition's head, and
//!   drops and deletes the entries the row no longer matches.
//! - **Sweeps**: entries are never removed at write time (that would read before every
//!   write), so stale ones are dropped when the index compacts ([`StaleEntries`], the
//!   index partition's compaction filter): each entry version is checked against its base
//!   row as this node stores it, and dropped when the row proves it superseded
//!   ([`IndexPlan::proves_stale`]; see `index_sweep`). Updates of an indexed column
//!   therefore leave the index about as large as the live rows, not the writes, whether or
//!   not reads meet the old entries. Flushes skip the check (it costs a base read per
//!   entry), so it runs off the write path, on the compaction workers.

use super::*;

use mosaic_cql::index::{entry_key, split_entry_key, IndexPlan};
use mosaic_cql::schema::IndexMeta;

use super::index_stats::{IndexStats, OPEN_SAMPLE_ENTRIES};
use super::index_sweep::StaleEntries;
pub(super) use super::index_sweep::{SharedRoles, SweepSource};
use mosaic_lsm::Db;
use mosaic_rows::Fragment;

/// The directory of a table's indexes, inside the table's.
const INDEXES_DIR: &str = "indexes";
/// Marks an index whose build finished.
const BUILT_FILE: &str = "BUILT";
/// Base entries an index build reads per step.
const BUILD_CHUNK: usize = 1000;

/// Where this node reads the roles of a table's tokens for an index build: the cluster
/// store's ring once it is set, every token primary before.
pub type RolesSource = Arc<dyn Fn(TableId) -> Box<dyn Roles> + Send + Sync>;

/// What an index on this node has done since it was opened.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct IndexCounters {
    /// Reads through it.
    pub reads: u64,
    /// Entry versions its compactions dropped as stale.
    pub swept: u64,
    /// Its estimated mean rows per indexed value.
    pub mean_rows: Option<f64>,
}

/// One index of a table on this node.
pub(super) struct IndexSlot {
    pub(super) meta: IndexMeta,
    pub(super) plan: IndexPlan,
    dir: PathBuf,
    /// `None` once dropped or closed.
    pub(super) db: RwLock<Option<Db>>,
    built: AtomicBool,
    /// Set while a build runs (one at a time).
    building: AtomicBool,
    /// Entry versions its compactions dropped as stale since it was opened.
    swept: Arc<AtomicU64>,
    /// Its selectivity, for choosing among indexes.
    stats: IndexStats,
    /// Reads through it since it was opened.
    pub(super) reads: AtomicU64,
}

impl IndexSlot {
    /// Whether reads may go through it.
    pub(super) fn is_built(&self) -> bool {
        self.built.load(Ordering::SeqCst)
    }
}

/// A table's indexes: replaced whole when the schema changes them.
pub(super) type IndexList = RwLock<Arc<Vec<Arc<IndexSlot>>>>;

/// The directory of `index` of the table stored in `table_dir`: named by the index and
/// its target, so an index dropped and created again on another column never reads the
/// old one's entries.
fn index_dir(table_dir: &Path, index: &IndexMeta) -> PathBuf {
    table_dir
        .join(INDEXES_DIR)
        .join(tables::path_component(&format!(
            "{}.{}",
            index.name, index.target
        )))
}

/// Opens (creating) the storage of `index` of `table`, swept against `source`.
fn open_index(
    engine: &Options,
    table_dir: &Path,
    table: &TableMeta,
    index: &IndexMeta,
    source: &SweepSource,
) -> mosaic_lsm::Result<IndexSlot> {
    let plan = IndexPlan::new(table, index).ok_or_else(|| {
        mosaic_lsm::Error::InvalidArgument(format!(
            "index {} names a column {} is missing",
            index.name, table.name
        ))
    })?;
    let dir = index_dir(table_dir, index);
    let mut options = engine.clone();
    options.table.filter_prefix_bytes = 0;
    let swept = Arc::new(AtomicU64::new(0));
    options.compaction_filter = Some(Arc::new(StaleEntries::new(
        plan.clone(),
        table.id,
        source.clone(),
        swept.clone(),
    )));
    let db = Db::open(&dir, options)?;
    let built = dir.join(BUILT_FILE).exists();
    let stats = IndexStats::default();
    // A bounded sample of what the index holds (best effort: writes teach it too).
    let mut sample = Vec::new();
    if let Ok(scan) = db.scan(std::ops::Bound::Unbounded, std::ops::Bound::Unbounded) {
        sample.extend(
            scan.take(OPEN_SAMPLE_ENTRIES)
                .map_while(|item| item.ok().map(|(key, _)| key)),
        );
    }
    stats.add(
        sample
            .iter()
            .filter_map(|k| split_entry_key(k).map(|(term, _)| term)),
    );
    Ok(IndexSlot {
        meta: index.clone(),
        plan,
        dir,
        db: RwLock::new(Some(db)),
        built: AtomicBool::new(built),
        building: AtomicBool::new(false),
        swept,
        stats,
        reads: AtomicU64::new(0),
    })
}

/// Opens every index of `table` (at start or when the table is created).
pub(super) fn open_indexes(
    engine: &Options,
    table_dir: &Path,
    table: &TableMeta,
    source: &SweepSource,
) -> mosaic_lsm::Result<Vec<Arc<IndexSlot>>> {
    table
        .indexes
        .values()
        .map(|i| open_index(engine, table_dir, table, i, source).map(Arc::new))
        .collect()
}

/// Closes an index's storage (logging a failure: its entries can always be rebuilt).
fn close_index(index: &IndexSlot) {
    if let Some(db) = index.db.write().take() {
        if let Err(e) = db.close() {
            tracing::warn!(target: "mosaic::storage", index = index.meta.name, error = %e, "closing an index failed");
        }
    }
}

/// Closes every index of a table (before its directory is deleted, or at shutdown).
pub(super) fn close_indexes(list: &IndexList) {
    for index in list.read().iter() {
        close_index(index);
    }
}

/// Reopens a truncated table's indexes: empty, and so built.
pub(super) fn reopen_after_truncate(
    engine: &Options,
    table_dir: &Path,
    table: &TableMeta,
    list: &IndexList,
    source: &SweepSource,
) -> mosaic_lsm::Result<()> {
    let reopened = open_indexes(engine, table_dir, table, source)?;
    for index in &reopened {
        mark_built(index)?;
    }
    *list.write() = Arc::new(reopened);
    Ok(())
}

fn mark_built(index: &IndexSlot) -> mosaic_lsm::Result<()> {
    write_atomic(&index.dir.join(BUILT_FILE), b"built\n")
        .map_err(|e| mosaic_lsm::Error::io("marking built", &index.dir, e))?;
    index.built.store(true, Ordering::SeqCst);
    Ok(())
}

/// Adds the index entries of a table's writes to each of its indexes (before the rows are
/// written: see the module doc).
pub(super) fn index_writes(
    indexes: &[Arc<IndexSlot>],
    schema: &KeySchema,
    batches: &[(Role, WriteBatch)],
) -> mosaic_lsm::Result<()> {
    let mut entries = Vec::new();
    for index in indexes {
        let mut batch = WriteBatch::new();
        for (_, b) in batches {
            for op in b.ops() {
                let Ok(fragment) = Fragment::decode(&op.value) else {
                    continue;
                };
                entries.clear();
                index
                    .plan
                    .entries_for(schema, &op.key, &fragment, &mut entries);
                for e in entries.drain(..) {
                    batch.merge_owned(entry_key(&e.term, &e.base), e.ts.to_engine(), e.fragment());
                }
            }
        }
        if batch.is_empty() {
            continue;
        }
        index.stats.add(
            batch
                .ops()
                .iter()
                .filter_map(|op| split_entry_key(&op.key).map(|(term, _)| term)),
        );
        if let Some(db) = index.db.read().as_ref() {
            db.write(batch)?;
        }
    }
    Ok(())
}

/// The index slot of `name` among a table's, if it is built.
pub(super) fn built_index(list: &IndexList, name: &str) -> Option<Arc<IndexSlot>> {
    list.read()
        .iter()
        .find(|i| i.meta.name == name && i.is_built())
        .cloned()
}

/// Builds `index` of the table in `slot` from what this node stores (see the module doc).
pub(super) async fn build(slot: Arc<TableSlot>, index: Arc<IndexSlot>, roles: Box<dyn Roles>) {
    let started = std::time::Instant::now();
    let full = KeyRange {
        start: Vec::new(),
        end: None,
    };
    let mut indexed: u64 = 0;
    for (range, role) in roles.pieces(full) {
        let mut after: Option<Vec<u8>> = None;
        loop {
            let guard = slot.db.clone().read_owned().await;
            if guard.is_none() || index.db.read().is_none() {
                return;
            }
            let schema = slot.keys.read().schema.clone();
            let index2 = index.clone();
            let range2 = range.clone();
            let step = tokio::task::spawn_blocking(
                move || -> mosaic_lsm::Result<(usize, Option<Vec<u8>>)> {
                    let Some(store) = guard.as_ref() else {
                        return Ok((0, None));
                    };
                    let mut batch = WriteBatch::new();
                    let mut last = None;
                    let mut n = 0;
                    for item in store.scan_stored(role, &range2, after.as_deref())? {
                        let item = item?;
                        batch.merge_owned(item.key, 0, item.entry.value);
                        last = Some(item.stored);
                        n += 1;
                        if n >= BUILD_CHUNK {
                            break;
                        }
                    }
                    index_writes(&[index2], &schema, &[(role, batch)])?;
                    Ok((n, if n >= BUILD_CHUNK { last } else { None }))
                },
            )
            .await;
            match step {
                Ok(Ok((n, next))) => {
                    indexed += n as u64;
                    match next {
                        Some(next) => after = Some(next),
                        None => break,
                    }
                }
                Ok(Err(e)) => {
                    tracing::warn!(target: "mosaic::storage", table = slot.name, index = index.meta.name, error = %e, "building an index failed; reads go without it until the next start");
                    return;
                }
                Err(e) => {
                    tracing::warn!(target: "mosaic::storage", table = slot.name, index = index.meta.name, error = %e, "an index build task failed");
                    return;
                }
            }
        }
    }
    let index2 = index.clone();
    let marked = tokio::task::spawn_blocking(move || mark_built(&index2)).await;
    match marked {
        Ok(Ok(())) => tracing::info!(
            target: "mosaic::storage",
            table = slot.name,
            index = index.meta.name,
            entries = indexed,
            ms = started.elapsed().as_millis() as u64,
            "index built"
        ),
        Ok(Err(e)) => {
            tracing::warn!(target: "mosaic::storage", index = index.meta.name, error = %e, "marking an index built failed")
        }
        Err(e) => {
            tracing::warn!(target: "mosaic::storage", index = index.meta.name, error = %e, "marking an index built failed")
        }
    }
}

impl LocalCoordinator {
    /// Sets where index builds read roles (the cluster store's ring) and starts the builds
    /// of every index not yet built (left unfinished by the last run).
    pub fn set_roles_source(&self, source: RolesSource) {
        *self.roles_source.write() = source;
        self.start_index_builds();
    }

    /// Starts a build for every index of every table that is neither built nor building.
    /// Needs a tokio runtime.
    pub fn start_index_builds(&self) {
        let slots: Vec<(TableId, Arc<TableSlot>)> = self
            .tables
            .read()
            .iter()
            .map(|(id, s)| (*id, s.clone()))
            .collect();
        for (id, slot) in slots {
            let list = slot.indexes.read().clone();
            for index in list.iter() {
                self.start_build(id, &slot, index);
            }
        }
    }

    fn start_build(&self, table: TableId, slot: &Arc<TableSlot>, index: &Arc<IndexSlot>) {
        if index.is_built() || index.building.swap(true, Ordering::SeqCst) {
            return;
        }
        let roles = (self.roles_source.read())(table);
        let (slot, index) = (slot.clone(), index.clone());
        let running = self.builds_running.clone();
        running.fetch_add(1, Ordering::SeqCst);
        tokio::spawn(async move {
            build(slot, index.clone(), roles).await;
            index.building.store(false, Ordering::SeqCst);
            drop(index);
            running.fetch_sub(1, Ordering::SeqCst);
        });
    }

    /// Runs `op` on the storage of every open index of every table, named
    /// `keyspace.table.index` (the admin API's flush and compaction, and tests).
    pub async fn each_index<T: Send + 'static>(
        &self,
        op: impl Fn(&Db) -> mosaic_lsm::Result<T> + Send + Sync + Clone + 'static,
    ) -> Vec<(String, Result<T, String>)> {
        let mut dbs: Vec<(String, Db)> = Vec::new();
        for slot in self.tables.read().values() {
            for index in slot.indexes.read().iter() {
                if let Some(db) = index.db.read().as_ref() {
                    dbs.push((format!("{}.{}", slot.name, index.meta.name), db.clone()));
                }
            }
        }
        dbs.sort_by(|a, b| a.0.cmp(&b.0));
        let mut out = Vec::with_capacity(dbs.len());
        for (name, db) in dbs {
            let op = op.clone();
            let result = tokio::task::spawn_blocking(move || op(&db).map_err(|e| e.to_string()))
                .await
                .unwrap_or_else(|e| Err(e.to_string()));
            out.push((name, result));
        }
        out
    }

    /// The estimated mean rows per indexed value of index `name` of `table` on this node
    /// (see `index_stats`), `None` when unknown.
    pub fn index_mean_rows(&self, table: TableId, name: &str) -> Option<f64> {
        let slot = self.tables.read().get(&table)?.clone();
        let list = slot.indexes.read().clone();
        list.iter()
            .find(|i| i.meta.name == name)?
            .stats
            .mean_rows_per_term()
    }

    /// Every open index's counters, by `keyspace.table.index` (the metrics).
    pub fn index_counters(&self) -> Vec<(String, IndexCounters)> {
        let mut out = Vec::new();
        for slot in self.tables.read().values() {
            for index in slot.indexes.read().iter() {
                out.push((
                    format!("{}.{}", slot.name, index.meta.name),
                    IndexCounters {
                        reads: index.reads.load(Ordering::Relaxed),
                        swept: index.swept.load(Ordering::Relaxed),
                        mean_rows: index.stats.mean_rows_per_term(),
                    },
                ));
            }
        }
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out
    }

    /// `(keyspace, index)` of every index this node has built (`system."IndexInfo"`).
    pub fn built_index_names(&self) -> Vec<(String, String)> {
        let catalog = self.current_catalog();
        let tables = self.tables.read();
        let mut out = Vec::new();
        for t in catalog.tables() {
            let Some(slot) = tables.get(&t.id) else {
                continue;
            };
            for index in slot.indexes.read().iter() {
                if index.is_built() {
                    out.push((t.keyspace.clone(), index.meta.name.clone()));
                }
            }
        }
        out
    }

    /// Brings each table's indexes on this node in line with `catalog` (after a schema
    /// change): opens the new ones — built at once for a table `created` by this change,
    /// which is empty, else built in the background — and closes and deletes the dropped
    /// ones.
    pub(super) async fn sync_indexes(&self, catalog: &Catalog, created: &[TableId]) {
        let slots: Vec<(Arc<TableMeta>, Arc<TableSlot>)> = {
            let tables = self.tables.read();
            catalog
                .tables()
                .filter_map(|t| Some((t.clone(), tables.get(&t.id)?.clone())))
                .collect()
        };
        for (table, slot) in slots {
            let current = slot.indexes.read().clone();
            let unchanged = current.len() == table.indexes.len()
                && current
                    .iter()
                    .all(|i| table.indexes.get(&i.meta.name) == Some(&i.meta));
            let is_new = created.contains(&table.id);
            if unchanged {
                // A table this change created opened its indexes with it: empty, built.
                for index in current.iter().filter(|_| is_new) {
                    let index = index.clone();
                    let marked = tokio::task::spawn_blocking(move || mark_built(&index)).await;
                    if !matches!(marked, Ok(Ok(()))) {
                        tracing::warn!(target: "mosaic::storage", table = slot.name, "marking a new table's index built failed");
                    }
                }
                for index in current.iter() {
                    self.start_build(table.id, &slot, index);
                }
                continue;
            }
            let engine = self.engine.clone();
            let source = SweepSource {
                store: slot.db.clone(),
                roles: self.roles_source.clone(),
            };
            let (table2, slot2) = (table.clone(), slot.clone());
            let opened = tokio::task::spawn_blocking(move || -> Vec<Arc<IndexSlot>> {
                let mut kept = Vec::new();
                for index in current.iter() {
                    if table2.indexes.get(&index.meta.name) == Some(&index.meta) {
                        kept.push(index.clone());
                        continue;
                    }
                    close_index(index);
                    if let Err(e) = tables::delete_dir(&slot2.node_engine, &index.dir) {
                        tracing::warn!(target: "mosaic::storage", index = index.meta.name, error = %e, "deleting a dropped index failed");
                    }
                }
                for meta in table2.indexes.values() {
                    if kept.iter().any(|i| i.meta == *meta) {
                        continue;
                    }
                    match open_index(&engine, &slot2.dir, &table2, meta, &source) {
                        Ok(index) => {
                            if is_new {
                                if let Err(e) = mark_built(&index) {
                                    tracing::warn!(target: "mosaic::storage", index = meta.name, error = %e, "marking an index built failed");
                                }
                            }
                            kept.push(Arc::new(index));
                        }
                        Err(e) => {
                            tracing::warn!(target: "mosaic::storage", index = meta.name, error = %e, "opening an index failed; reads go without it");
                        }
                    }
                }
                *slot2.indexes.write() = Arc::new(kept.clone());
                kept
            })
            .await;
            match opened {
                Ok(list) => {
                    for index in &list {
                        self.start_build(table.id, &slot, index);
                    }
                }
                Err(e) => {
                    tracing::warn!(target: "mosaic::storage", table = slot.name, error = %e, "updating a table's indexes failed");
                }
            }
        }
    }
}
