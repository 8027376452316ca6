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

use std::collections::{BTreeMap, VecDeque};
use std::ops::Bound;
use std::path::{Path, PathBuf};

use mosaic_lsm::{Db, Entry, Error, Options, Result, WriteBatch};
use mosaic_rows::{key::tag, ClusteringFilter, KeyRange, KeySchema, Permutation};
use parking_lot::RwLock;

use crate::role::Role;

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
}

/// The trees of one table.
pub(crate) struct Heterogeneous {
    dir: PathBuf,
    engine: Options,
    keys: RwLock<KeyOrders>,
    trees: RwLock<BTreeMap<usize, Tree>>,
}

impl Heterogeneous {
    /// Opens every tree found in `dir`; trees of indexes not found yet are created in their
    /// order of `keys` by the first write.
    pub(crate) fn open(dir: &Path, engine: Options, keys: KeyOrders) -> Result<Heterogeneous> {
        let names = engine
            .fs
            .list(dir)
            .map_err(|e| Error::io("listing", dir, e))?;
        let columns = keys.schema.clustering_columns().len();
        let mut trees = BTreeMap::new();
        for name in names {
            let Some((index, perm)) = parse_tree_dir(&name) else {
                continue;
            };
            if perm.len() != columns {
                return Err(Error::InvalidArgument(format!(
                    "{} orders {} clustering columns; the table has {columns}",
                    dir.join(&name).display(),
                    perm.len()
                )));
            }
            if trees.contains_key(&index) {
                // Two trees of one index: the one in the table's order wins.
                if perm != keys.order(index) {
                    continue;
                }
            }
            let db = Db::open(dir.join(&name), engine.clone())?;
            if let Some(old) = trees.insert(index, Tree { perm, db }) {
                old.db.close()?;
            }
        }
        Ok(Heterogeneous {
            dir: dir.to_path_buf(),
            engine,
            keys: RwLock::new(keys),
            trees: RwLock::new(trees),
        })
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
            self.engine.clone(),
        )?;
        // The new directory's entry must survive a crash, or its WAL would be lost with it.
        self.engine
            .fs
            .sync_dir(&self.dir)
            .map_err(|e| Error::io("syncing", &self.dir, e))?;
        let tree = Tree { perm, db };
        trees.insert(index, tree.clone());
        Ok(tree)
    }

    /// Applies a batch of canonical writes under `role`, re-keyed into its tree's order.
    pub(crate) fn write(&self, role: Role, batch: WriteBatch) -> Result<()> {
        let tree = self.tree_or_create(role)?;
        if tree.perm.is_identity() {
            return tree.db.write(batch);
        }
        let schema = self.schema();
        let batch = batch.map_keys(|key| {
            schema
                .permute_key(key, &tree.perm)
                .map_err(|e| Error::InvalidArgument(format!("not a key of this table: {e}")))
        })?;
        tree.db.write(batch)
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
            .schema()
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
        if tree.perm.is_identity() {
            let (start, end) = crate::store::range_bounds(range);
            let scan = tree.db.scan(start, end)?;
            return Ok(crate::store::ReplicaScan::filtered(
                scan,
                filter.cloned().map(|f| (schema, f)),
            ));
        }
        // A range may start or end inside a partition, whose rows sort differently
        // here: partitions are found from the start's whole partition to the end's.
        let partition_of = |key: &[u8], tail: Option<u8>| {
            let len = schema.partition_prefix_len(key).ok()?;
            let mut p = key.get(..len)?.to_vec();
            p.extend(tail);
            Some(p)
        };
        let cursor = partition_of(&range.start, None).unwrap_or_else(|| range.start.clone());
        let scan_end = range.end.as_ref().map(|e| {
            partition_of(e, Some(tag::PARTITION_END))
                .filter(|p| p > e)
                .unwrap_or_else(|| e.clone())
        });
        Ok(crate::store::ReplicaScan::permuted(PermutedScan {
            db: tree.db,
            perm: tree.perm,
            schema,
            filter: filter.cloned().unwrap_or_default(),
            range: range.clone(),
            scan_end,
            cursor: Some(cursor),
            ready: VecDeque::new(),
        }))
    }

    /// Every tree, by replica index.
    pub(crate) fn trees(&self) -> Vec<(usize, Tree)> {
        self.trees
            .read()
            .iter()
            .map(|(i, t)| (*i, t.clone()))
            .collect()
    }

    /// Closes every tree; the first failure is returned after all were tried.
    pub(crate) fn close(self) -> Result<()> {
        let mut first = None;
        for (_, tree) in self.trees.into_inner() {
            if let Err(e) = tree.db.close() {
                first.get_or_insert(e);
            }
        }
        first.map_or(Ok(()), Err)
    }
}

/// A read of a canonical key range from a tree in another order: one partition at a time,
/// its head as stored, its rows from the planned ranges, filtered, re-keyed canonically and
/// sorted (see the module doc).
pub(crate) struct PermutedScan {
    db: Db,
    perm: Permutation,
    schema: KeySchema,
    filter: ClusteringFilter,
    range: KeyRange,
    /// Where partitions are looked for up to: past the end of the range's last partition.
    scan_end: Option<Vec<u8>>,
    /// Where the next partition is looked for; `None` when the range is done.
    cursor: Option<Vec<u8>>,
    /// The current partition's entries, canonical and sorted.
    ready: VecDeque<(Vec<u8>, Entry)>,
}

impl PermutedScan {
    /// Reads the next partition of the range into `ready`; `false` when none is left.
    fn fill(&mut self) -> Result<bool> {
        let Some(cursor) = self.cursor.take() else {
            return Ok(false);
        };
        let end = match &self.scan_end {
            Some(e) => Bound::Excluded(e.as_slice()),
            None => Bound::Unbounded,
        };
        let first = match self.db.scan(Bound::Included(&cursor), end)?.next() {
            Some(item) => item?.0,
            None => return Ok(false),
        };
        let corrupt = |e: mosaic_rows::KeyError| {
            Error::corruption(
                PathBuf::new(),
                0,
                format!("a stored key does not decode: {e}"),
            )
        };
        let prefix_len = self.schema.partition_prefix_len(&first).map_err(corrupt)?;
        let prefix = first.get(..prefix_len).unwrap_or_default().to_vec();
        let mut partition_end = prefix.clone();
        partition_end.push(tag::PARTITION_END);
        // Rows outside the range's ends are possible only in its first or last partition.
        let partial = self.range.start.as_slice() > prefix.as_slice()
            || self
                .range
                .end
                .as_deref()
                .is_some_and(|e| e < partition_end.as_slice());
        // The head: header, range tombstones, static row, stored canonically.
        let mut head_end = prefix.clone();
        head_end.push(tag::BEFORE);
        let head_start = self.range.start.clone().max(prefix.clone());
        let head_end = match &self.range.end {
            Some(e) if *e < head_end => e.clone(),
            _ => head_end,
        };
        if head_start < head_end {
            for item in self
                .db
                .scan(Bound::Included(&head_start), Bound::Excluded(&head_end))?
            {
                let (key, entry) = item?;
                self.ready.push_back((key, entry));
            }
        }
        let mut rows = Vec::new();
        for (lo, hi) in self
            .schema
            .permuted_ranges(&prefix, &self.filter, &self.perm)
        {
            for item in self.db.scan(Bound::Included(&lo), Bound::Excluded(&hi))? {
                let (key, entry) = item?;
                let Some(spans) = self.schema.row_spans(&key, &self.perm).map_err(corrupt)? else {
                    continue;
                };
                let passes =
                    spans
                        .components
                        .iter()
                        .zip(self.perm.positions())
                        .all(|(span, declared)| {
                            self.filter
                                .column(*declared)
                                .matches(key.get(span.clone()).unwrap_or_default())
                        });
                if !passes {
                    continue;
                }
                let canonical = self
                    .schema
                    .canonical_key(&key, &self.perm)
                    .map_err(corrupt)?;
                if partial && !self.range.contains(&canonical) {
                    continue;
                }
                rows.push((canonical, entry));
            }
        }
        rows.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        self.ready.extend(rows);
        if self.scan_end.as_ref().is_none_or(|e| partition_end < *e) {
            self.cursor = Some(partition_end);
        }
        Ok(true)
    }
}

impl Iterator for PermutedScan {
    type Item = Result<(Vec<u8>, Entry)>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(item) = self.ready.pop_front() {
                return Some(Ok(item));
            }
            match self.fill() {
                Ok(true) => continue,
                Ok(false) => return None,
                Err(e) => {
                    self.cursor = None;
                    return Some(Err(e));
                }
            }
        }
    }
}
