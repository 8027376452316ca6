//! The heterogeneous layout: each replica index of a range keeps its rows sorted by its own
//! permutation of the clustering columns (heterogeneous replicas).
//!
//! ```text
//! DIR/LAYOUT                 "heterogeneous" (see crate::store)
//! DIR/replica-<i>-<order>/   the tree of the ranges this node is replica index i for,
//!                            rows keyed in <order> (declared positions joined by '.')
//! ```
//!
//! Writes arrive in canonical form (keys in the declared order); the tree of the write's
//! replica index re-encodes each row key into its order ([`KeySchema::permute_key`]) and
//! keeps every other entry — partition header, range tombstones, static row — as it is, so
//! deletions and static rows read the same in every order. Reads ask for a canonical key
//! range (and optionally a [`ClusteringFilter`]): a tree in the declared order scans it; a
//! tree in another order walks the range partition by partition, scans the narrowest
//! ranges its order allows ([`KeySchema::permuted_ranges`]), checks the rest of the filter
//! row by row, and answers the rows with canonical keys in canonical order — so replicas in
//! different orders answer the same entries for the same read (digests, read repair and
//! Merkle repair compare them directly), and only the work differs.
//!
//! A tree's order is in its directory name, so a tree is always read in the order it was
//! written in, whatever the table's options say now.
//!
//! **Re-layout.** When the table's orders change ([`crate::ReplicaStore::set_orders`], after an
//! `ALTER TABLE`), each index whose tree is in another order gets a second tree in the new
//! order, named by a marker `DIR/RELAYOUT-<i>` written (durably) first. From then on writes
//! of that index go to both trees, and [`crate::ReplicaStore::relayout_step`] copies the old
//! tree's entries into the new one through the ordinary write path, a bounded batch at a
//! time, while reads keep using the old tree. When the copy is complete,
//! [`crate::ReplicaStore::relayout_finish`] (run with no read or write in flight) makes the new
//! tree the index's, drops the old one's partition, moves its directory aside and removes
//! the marker. A crash at any point resumes: with the marker and both trees present the
//! copy starts over (copying is idempotent: entries keep their timestamps and merge); with
//! the old tree gone, only the marker's removal was left. A write goes to the old tree
//! before the new one, so the new tree never holds what the old one lacks. Opening with
//! orders a tree is not in, and no marker, starts its re-layout (a crash may have come
//! before `set_orders` made the marker durable).

use std::collections::BTreeMap;
use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use mosaic_lsm::{Db, Entry, Error, Options, Result, WriteBatch};
use mosaic_rows::{key::tag, ClusteringFilter, KeyRange, KeySchema, Permutation};
use parking_lot::RwLock;

use crate::cleanup::CleanupGate;
use crate::role::Role;
use crate::stored::StoredScan;

mod scan;

pub(crate) use scan::PermutedScan;
pub use scan::CACHE_BYTES_MAX;

/// Prefix of a tree's directory name.
pub const TREE_DIR_PREFIX: &str = "replica-";

/// The directory name of replica index `index`'s tree in order `perm`.
pub fn tree_dir_name(index: usize, perm: &Permutation) -> String {
    let order: Vec<String> = perm.positions().iter().map(|p| p.to_string()).collect();
    format!("{TREE_DIR_PREFIX}{index}-{}", order.join("."))
}

/// Parses [`tree_dir_name`]'s names.
fn parse_tree_dir(name: &str) -> Option<(usize, Permutation)> {
    let rest = name.strip_prefix(TREE_DIR_PREFIX)?;
    let (index, order) = rest.split_once('-')?;
    let index = index.parse().ok()?;
    let positions = if order.is_empty() {
        Vec::new()
    } else {
        order
            .split('.')
            .map(|p| p.parse().ok())
            .collect::<Option<Vec<usize>>>()?
    };
    let perm = Permutation::new(positions)?;
    (tree_dir_name(index, &perm) == name).then_some((index, perm))
}

/// The stored keys a tree in another order than the declared one holds canonical `range`'s
/// rows between: a range may start or end inside a partition, whose rows sort differently
/// there, so from the start's whole partition to past the end's.
fn partition_bounds(schema: &KeySchema, range: &KeyRange) -> (Vec<u8>, Option<Vec<u8>>) {
    let partition_of = |key: &[u8], tail: Option<u8>| {
        let len = schema.partition_prefix_len(key).ok()?;
        let mut p = key.get(..len)?.to_vec();
        p.extend(tail);
        Some(p)
    };
    let first = partition_of(&range.start, None).unwrap_or_else(|| range.start.clone());
    let scan_end = range.end.as_ref().map(|e| {
        partition_of(e, Some(tag::PARTITION_END))
            .filter(|p| p > e)
            .unwrap_or_else(|| e.clone())
    });
    (first, scan_end)
}

/// What a heterogeneous table's store needs of its schema: how keys are built, and the
/// order of each replica index (indexes past the list keep the declared order).
#[derive(Clone, Debug)]
pub struct KeyOrders {
    /// The table's key columns.
    pub schema: KeySchema,
    /// Replica index i's order, for the first indexes.
    pub orders: Vec<Permutation>,
}

impl KeyOrders {
    /// The order of replica index `index`.
    pub fn order(&self, index: usize) -> Permutation {
        self.orders
            .get(index)
            .cloned()
            .unwrap_or_else(|| Permutation::identity(self.schema.clustering_columns().len()))
    }
}

/// One replica index's tree and the order its keys are in.
#[derive(Clone)]
pub(crate) struct Tree {
    pub(crate) perm: Permutation,
    pub(crate) db: Db,
    pub(crate) counters: Arc<ReadCounters>,
    /// Its write counters and remembered sorted partition (see [`scan`]).
    state: Arc<scan::TreeState>,
}

impl Tree {
    fn new(perm: Permutation, db: Db) -> Tree {
        Tree {
            perm,
            db,
            counters: Arc::default(),
            state: Arc::default(),
        }
    }

    /// Writes `batch` (keys already in this tree's order).
    fn write(&self, batch: WriteBatch) -> Result<()> {
        self.state.write(|| self.db.write(batch))
    }
}

/// What one tree's reads cost since the node started: what routing is judged by.
#[derive(Debug, Default)]
pub struct ReadCounters {
    /// Reads (scans) served.
    pub reads: AtomicU64,
    /// Rows examined to serve them (passing the filter or not).
    pub rows_scanned: AtomicU64,
}

/// One tree of a heterogeneous store, for statistics.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TreeStats {
    /// The replica index it serves.
    pub index: usize,
    /// Its order (declared clustering positions).
    pub order: Vec<usize>,
    /// Reads served.
    pub reads: u64,
    /// Rows examined.
    pub rows_scanned: u64,
}

/// The trees of one table.
pub(crate) struct Heterogeneous {
    dir: PathBuf,
    engine: Options,
    /// The cleanup gate every tree's filter asks ([`crate::cleanup`]).
    gate: Arc<CleanupGate>,
    keys: RwLock<KeyOrders>,
    trees: RwLock<BTreeMap<usize, Tree>>,
    /// Re-layouts under way, by replica index.
    relayouts: RwLock<BTreeMap<usize, Relayout>>,
}

/// An index's tree being rebuilt in a new order.
#[derive(Clone)]
struct Relayout {
    /// The tree in the new order.
    next: Tree,
    /// The next key of the old tree to copy; `None` once everything was copied.
    cursor: Option<Vec<u8>>,
}

/// Names tried for a dropped tree's directory moved aside (a rename onto one taken
/// fails, naming it).
const ASIDE_NAMES_MAX: usize = 1000;

/// Prefix of the marker naming an index's re-layout target.
const RELAYOUT_PREFIX: &str = "RELAYOUT-";

/// The re-layout markers among `names` (the entries of `dir`): each index's target order.
fn read_markers(
    engine: &Options,
    dir: &Path,
    names: &[String],
) -> Result<BTreeMap<usize, Permutation>> {
    let mut out = BTreeMap::new();
    for name in names {
        let Some(index) = name
            .strip_prefix(RELAYOUT_PREFIX)
            .and_then(|i| i.parse::<usize>().ok())
        else {
            continue;
        };
        let path = dir.join(name);
        let target = crate::sealed::read_optional(&*engine.fs, &path)?.unwrap_or_default();
        let target = String::from_utf8_lossy(&target).trim().to_owned();
        let Some((i, perm)) = parse_tree_dir(&target).filter(|(i, _)| *i == index) else {
            return Err(Error::corruption(&path, 0, "not a re-layout marker"));
        };
        out.insert(i, perm);
    }
    Ok(out)
}

/// The options of replica index `index`'s trees: `engine`'s, filtered by `gate` too.
fn tree_options(engine: &Options, gate: &Arc<CleanupGate>, index: usize) -> Options {
    gate.options(engine, crate::store::Structure::Replica(index))
}

/// Where a re-layout stands, for statistics.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RelayoutStatus {
    /// The replica index being re-laid out.
    pub index: usize,
    /// Its new order.
    pub order: Vec<usize>,
    /// Whether every entry was copied (only the switch is left).
    pub copied: bool,
}

impl Heterogeneous {
    /// Opens every tree found in `dir`; trees of indexes not found yet are created in their
    /// order of `keys` by the first write.
    pub(crate) fn open(
        dir: &Path,
        engine: Options,
        gate: &Arc<CleanupGate>,
        keys: KeyOrders,
    ) -> Result<Heterogeneous> {
        let names = engine
            .fs
            .list(dir)
            .map_err(|e| Error::io("listing", dir, e))?;
        let markers = read_markers(&engine, dir, &names)?;
        let columns = keys.schema.clustering_columns().len();
        let mut trees = BTreeMap::new();
        for name in &names {
            let Some((index, perm)) = parse_tree_dir(name) else {
                continue;
            };
            if perm.len() != columns {
                return Err(Error::InvalidArgument(format!(
                    "{} orders {} clustering columns; the table has {columns}",
                    dir.join(name).display(),
                    perm.len()
                )));
            }
            // A re-layout's target is not the index's tree until the switch.
            if markers.get(&index) == Some(&perm) {
                continue;
            }
            if trees.contains_key(&index) && perm != keys.order(index) {
                continue;
            }
            let db = Db::open(dir.join(name), tree_options(&engine, gate, index))?;
            if let Some(old) = trees.insert(index, Tree::new(perm, db)) {
                old.db.close()?;
            }
        }
        let store = Heterogeneous {
            dir: dir.to_path_buf(),
            engine,
            gate: gate.clone(),
            keys: RwLock::new(keys),
            trees: RwLock::new(trees),
            relayouts: RwLock::new(BTreeMap::new()),
        };
        store.resume_relayouts(markers)?;
        // A tree in an order the table no longer has and no marker naming a re-layout
        // (a crash before `set_orders` made its marker durable, or a `set_orders` that
        // failed) starts its re-layout now: otherwise nothing would ever start it again.
        let orders = store.keys.read().orders.clone();
        store.set_orders(orders)?;
        Ok(store)
    }

    /// The options of replica index `index`'s trees.
    fn options(&self, index: usize) -> Options {
        tree_options(&self.engine, &self.gate, index)
    }

    /// Picks up the re-layouts the markers name (see the module doc).
    fn resume_relayouts(&self, markers: BTreeMap<usize, Permutation>) -> Result<()> {
        for (index, perm) in markers {
            let current = self.trees.read().get(&index).cloned();
            match current {
                // The old tree is still there: copy again into the new one.
                Some(old) if old.perm != perm => {
                    let name = tree_dir_name(index, &perm);
                    let db = Db::open(self.dir.join(name), self.options(index))?;
                    self.relayouts.write().insert(
                        index,
                        Relayout {
                            next: Tree::new(perm, db),
                            cursor: Some(Vec::new()),
                        },
                    );
                }
                // Only the new tree is left: the switch completed but for the marker.
                _ => {
                    let name = tree_dir_name(index, &perm);
                    if self.engine.fs.exists(&self.dir.join(&name)) {
                        let db = Db::open(self.dir.join(name), self.options(index))?;
                        self.trees.write().insert(index, Tree::new(perm, db));
                    }
                    self.remove_marker(index)?;
                }
            }
        }
        Ok(())
    }

    fn marker_path(&self, index: usize) -> PathBuf {
        self.dir.join(format!("{RELAYOUT_PREFIX}{index}"))
    }

    fn remove_marker(&self, index: usize) -> Result<()> {
        let path = self.marker_path(index);
        let fs = &self.engine.fs;
        if fs.exists(&path) {
            fs.remove(&path)
                .map_err(|e| Error::io("removing", &path, e))?;
        }
        fs.sync_dir(&self.dir)
            .map_err(|e| Error::io("syncing", &self.dir, e))
    }

    /// Takes the table's new orders: every index whose tree is in another order starts a
    /// re-layout (see the module doc); a re-layout towards an order no longer wanted is
    /// abandoned. The caller guarantees no write of the store is in flight (a write that
    /// started before would miss the new tree).
    pub(crate) fn set_orders(&self, orders: Vec<Permutation>) -> Result<()> {
        self.keys.write().orders = orders;
        let keys = self.keys.read().clone();
        let trees = self.trees();
        for (index, tree) in trees {
            let target = keys.order(index);
            let pending = self
                .relayouts
                .read()
                .get(&index)
                .map(|r| r.next.perm.clone());
            if pending.as_ref() == Some(&target) {
                continue;
            }
            if let Some(old_target) = pending {
                if let Some(r) = self.relayouts.write().remove(&index) {
                    self.drop_tree(index, &old_target, r.next.db)?;
                }
                self.remove_marker(index)?;
            }
            if tree.perm == target {
                continue;
            }
            let name = tree_dir_name(index, &target);
            let marker = self.marker_path(index);
            mosaic_lsm::write_atomically(&*self.engine.fs, &marker, name.as_bytes())
                .map_err(|e| Error::io("writing", &marker, e))?;
            self.engine
                .fs
                .sync_dir(&self.dir)
                .map_err(|e| Error::io("syncing", &self.dir, e))?;
            let next = Tree::new(target, Db::open(self.dir.join(&name), self.options(index))?);
            self.relayouts.write().insert(
                index,
                Relayout {
                    next,
                    cursor: Some(Vec::new()),
                },
            );
        }
        Ok(())
    }

    /// Closes and drops the tree of `index` in order `perm` (its partition, then its
    /// directory, moved aside first so it is never opened as a tree again).
    fn drop_tree(&self, index: usize, perm: &Permutation, db: Db) -> Result<()> {
        let dir = self.dir.join(tree_dir_name(index, perm));
        db.close()?;
        let fs = &self.engine.fs;
        if let Some(engine) = &self.engine.engine {
            engine.drop_partitions_under(&dir)?;
        }
        // A tree of this order dropped before left its directory aside (not empty: its
        // subdirectories stay, and a crash brings back removed files): take a new name.
        let name = tree_dir_name(index, perm);
        let mut aside = self.dir.join(format!("dropped-{name}"));
        for n in 1..=ASIDE_NAMES_MAX {
            if !fs.exists(&aside) {
                break;
            }
            aside = self.dir.join(format!("dropped-{name}-{n}"));
        }
        if fs.exists(&dir) {
            fs.rename(&dir, &aside)
                .map_err(|e| Error::io("renaming", &dir, e))?;
            fs.sync_dir(&self.dir)
                .map_err(|e| Error::io("syncing", &self.dir, e))?;
        }
        if fs.exists(&aside) {
            for name in fs
                .list(&aside)
                .map_err(|e| Error::io("listing", &aside, e))?
            {
                let _ = fs.remove(&aside.join(name));
            }
        }
        Ok(())
    }

    /// Copies up to `max_entries` entries of one pending re-layout into its new tree.
    /// Returns whether any re-layout still has entries to copy.
    pub(crate) fn relayout_step(&self, max_entries: usize) -> Result<bool> {
        let Some((index, relayout)) = self
            .relayouts
            .read()
            .iter()
            .find(|(_, r)| r.cursor.is_some())
            .map(|(i, r)| (*i, r.clone()))
        else {
            return Ok(false);
        };
        let Some(cursor) = relayout.cursor.clone() else {
            return Ok(false);
        };
        let Some(old) = self.trees.read().get(&index).cloned() else {
            return Ok(false);
        };
        let schema = self.schema();
        let corrupt = |e: mosaic_rows::KeyError| {
            Error::corruption(
                PathBuf::new(),
                0,
                format!("a stored key does not decode: {e}"),
            )
        };
        let mut batch = WriteBatch::new();
        let mut last = None;
        for item in old.db.scan(Bound::Included(&cursor), Bound::Unbounded)? {
            let (key, entry) = item?;
            let canonical = schema.canonical_key(&key, &old.perm).map_err(corrupt)?;
            let target = schema
                .permute_key(&canonical, &relayout.next.perm)
                .map_err(corrupt)?;
            batch.merge_owned(target, entry.ts, entry.value);
            last = Some(key);
            if batch.len() >= max_entries.max(1) {
                break;
            }
        }
        let done = batch.len() < max_entries.max(1);
        relayout.next.write(batch)?;
        let next_cursor = if done {
            None
        } else {
            last.map(|mut k| {
                k.push(0);
                k
            })
        };
        if let Some(r) = self.relayouts.write().get_mut(&index) {
            if r.next.perm == relayout.next.perm {
                r.cursor = next_cursor;
            }
        }
        Ok(self.relayouts.read().values().any(|r| r.cursor.is_some()))
    }

    /// Switches every index whose copy is complete to its new tree and drops the old one.
    /// The caller guarantees no read or write of the store is in flight. Returns how many
    /// re-layouts finished.
    pub(crate) fn relayout_finish(&self) -> Result<usize> {
        let done: Vec<(usize, Relayout)> = self
            .relayouts
            .read()
            .iter()
            .filter(|(_, r)| r.cursor.is_none())
            .map(|(i, r)| (*i, r.clone()))
            .collect();
        for (index, relayout) in &done {
            // Every copied entry is in the new tree's memtable or tables, logged in the
            // WAL: durable before the old tree goes.
            relayout.next.db.flush()?;
            let old = self.trees.write().insert(*index, relayout.next.clone());
            self.relayouts.write().remove(index);
            if let Some(old) = old {
                self.drop_tree(*index, &old.perm, old.db)?;
            }
            self.remove_marker(*index)?;
        }
        Ok(done.len())
    }

    /// The re-layouts under way.
    pub(crate) fn relayout_status(&self) -> Vec<RelayoutStatus> {
        self.relayouts
            .read()
            .iter()
            .map(|(i, r)| RelayoutStatus {
                index: *i,
                order: r.next.perm.positions().to_vec(),
                copied: r.cursor.is_none(),
            })
            .collect()
    }

    /// The table's key schema.
    pub(crate) fn schema(&self) -> KeySchema {
        self.keys.read().schema.clone()
    }

    /// The tree of `role`'s replica index, if it exists.
    pub(crate) fn tree(&self, role: Role) -> Option<Tree> {
        self.trees.read().get(&role.index()).cloned()
    }

    /// The tree of `role`'s replica index, created in its order if needed.
    pub(crate) fn tree_or_create(&self, role: Role) -> Result<Tree> {
        let index = role.index();
        if let Some(t) = self.trees.read().get(&index) {
            return Ok(t.clone());
        }
        let mut trees = self.trees.write();
        if let Some(t) = trees.get(&index) {
            return Ok(t.clone());
        }
        let perm = self.keys.read().order(index);
        let db = Db::open(
            self.dir.join(tree_dir_name(index, &perm)),
            self.options(index),
        )?;
        // The new directory's entry must survive a crash, or its WAL would be lost with it.
        self.engine
            .fs
            .sync_dir(&self.dir)
            .map_err(|e| Error::io("syncing", &self.dir, e))?;
        let tree = Tree::new(perm, db);
        trees.insert(index, tree.clone());
        Ok(tree)
    }

    /// Applies a batch of canonical writes under `role`, re-keyed into its tree's order.
    pub(crate) fn write(&self, role: Role, batch: WriteBatch) -> Result<()> {
        let tree = self.tree_or_create(role)?;
        // A re-layout under way gets every write too, in its order — after the old tree:
        // a crash between the two leaves the write in the old tree only, which the
        // resumed copy carries over, never in the new tree only, where it would appear
        // only once the switch makes reads use that tree.
        let next = self
            .relayouts
            .read()
            .get(&role.index())
            .map(|r| r.next.clone());
        if let Some(next) = next {
            self.write_in(&tree, batch.clone())?;
            return self.write_in(&next, batch);
        }
        self.write_in(&tree, batch)
    }

    fn write_in(&self, tree: &Tree, batch: WriteBatch) -> Result<()> {
        if tree.perm.is_identity() {
            return tree.write(batch);
        }
        let keys = self.keys.read();
        let batch = batch.map_keys(|key| {
            keys.schema
                .permute_key(key, &tree.perm)
                .map_err(|e| Error::InvalidArgument(format!("not a key of this table: {e}")))
        })?;
        drop(keys);
        tree.write(batch)
    }

    /// The newest version of canonical `key` under `role`.
    pub(crate) fn get(&self, role: Role, key: &[u8]) -> Result<Option<Entry>> {
        let Some(tree) = self.tree(role) else {
            return Ok(None);
        };
        if tree.perm.is_identity() {
            return tree.db.get(key);
        }
        let key = self
            .keys
            .read()
            .schema
            .permute_key(key, &tree.perm)
            .map_err(|e| Error::InvalidArgument(format!("not a key of this table: {e}")))?;
        tree.db.get(&key)
    }

    /// Entries of canonical `range` under `role` passing `filter`, in canonical order.
    pub(crate) fn scan(
        &self,
        role: Role,
        range: &KeyRange,
        filter: Option<&ClusteringFilter>,
    ) -> Result<crate::store::ReplicaScan> {
        let Some(tree) = self.tree(role) else {
            return Ok(crate::store::ReplicaScan::empty());
        };
        let schema = self.schema();
        tree.counters.reads.fetch_add(1, Ordering::Relaxed);
        if tree.perm.is_identity() {
            let (start, end) = crate::store::range_bounds(range);
            let scan = tree.db.scan(start, end)?;
            return Ok(crate::store::ReplicaScan::filtered(
                scan,
                filter.cloned().map(|f| (schema, f)),
            )
            .counting(tree.counters.clone()));
        }
        let (cursor, scan_end) = partition_bounds(&schema, range);
        Ok(crate::store::ReplicaScan::permuted(PermutedScan::new(
            tree.counters.clone(),
            tree.state.clone(),
            tree.db,
            tree.perm,
            schema,
            filter.cloned().unwrap_or_default(),
            range.clone(),
            scan_end,
            cursor,
        )))
    }

    /// Entries of canonical `range` under `role` in the order its tree stores them, after
    /// stored key `after` (see [`crate::stored`]).
    pub(crate) fn scan_stored(
        &self,
        role: Role,
        range: &KeyRange,
        after: Option<&[u8]>,
    ) -> Result<StoredScan> {
        let Some(tree) = self.tree(role) else {
            return Ok(StoredScan::empty());
        };
        if tree.perm.is_identity() {
            return StoredScan::plain(&tree.db, range, after);
        }
        let schema = self.schema();
        let (first, scan_end) = partition_bounds(&schema, range);
        StoredScan::permuted(&tree.db, schema, tree.perm, range, first, scan_end, after)
    }

    /// Every tree, by replica index.
    pub(crate) fn trees(&self) -> Vec<(usize, Tree)> {
        self.trees
            .read()
            .iter()
            .map(|(i, t)| (*i, t.clone()))
            .collect()
    }

    /// Each tree's order and read counters, by replica index.
    pub(crate) fn stats(&self) -> Vec<TreeStats> {
        self.trees
            .read()
            .iter()
            .map(|(i, t)| TreeStats {
                index: *i,
                order: t.perm.positions().to_vec(),
                reads: t.counters.reads.load(Ordering::Relaxed),
                rows_scanned: t.counters.rows_scanned.load(Ordering::Relaxed),
            })
            .collect()
    }

    /// Closes every tree; the first failure is returned after all were tried.
    pub(crate) fn close(self) -> Result<()> {
        let mut first = None;
        let pending = self.relayouts.into_inner().into_values().map(|r| r.next);
        for tree in self.trees.into_inner().into_values().chain(pending) {
            if let Err(e) = tree.db.close() {
                first.get_or_insert(e);
            }
        }
        first.map_or(Ok(()), Err)
    }
}
