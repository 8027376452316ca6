//! The multi-LSM layout (DEPART's "mLSM"): one LSM-tree per replica source.
//!
//! ```text
//! DIR/LAYOUT              "multi-lsm" (see crate::store)
//! DIR/primary/            the tree of the copies this node is primary for
//! DIR/src-<host id hex>/  the tree of redundant copies of one source node's data
//! ```
//!
//! A source's tree is created by the first write under its role and found again at open
//! by listing `DIR`; a read under a role with no tree finds nothing. Each tree is a whole
//! engine (memtable, WAL, block cache, compaction thread), so a node at replication factor
//! k runs about k engines per table: the layout's price, which DEPART measures.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use mosaic_lsm::{Db, Error, Options, Result};
use parking_lot::RwLock;

use crate::cleanup::CleanupGate;
use crate::role::{Role, SourceId};
use crate::store::{Structure, PRIMARY_DIR};

/// Prefix of a source tree's directory name.
pub const SOURCE_DIR_PREFIX: &str = "src-";

/// The directory name of `source`'s tree.
pub fn source_dir_name(source: SourceId) -> String {
    format!("{SOURCE_DIR_PREFIX}{source}")
}

/// The compaction filter of a source's tree (erasure-tiered: the versions coding covers).
pub(crate) type SourceFilter = std::sync::Arc<
    dyn Fn(SourceId) -> std::sync::Arc<dyn mosaic_lsm::CompactionFilter> + Send + Sync,
>;

/// The options of `source`'s tree: `filter`'s for its source, and the cleanup gate's.
fn source_options(
    engine: &Options,
    gate: &Arc<CleanupGate>,
    filter: Option<&SourceFilter>,
    source: SourceId,
) -> Options {
    let engine = Options {
        compaction_filter: filter.map(|f| f(source)),
        ..engine.clone()
    };
    gate.options(&engine, Structure::Source(source))
}

/// The trees of one table.
pub(crate) struct MultiLsm {
    dir: PathBuf,
    engine: Options,
    gate: Arc<CleanupGate>,
    filter: Option<SourceFilter>,
    primary: Db,
    /// Source trees; a `Db` is a cheap handle, cloned out so no lock is held during I/O.
    sources: RwLock<BTreeMap<SourceId, Db>>,
}

impl MultiLsm {
    /// Opens the primary tree and every source tree found in `dir`; each source tree
    /// filters its compactions by `filter`'s answer for its source, and the primary tree
    /// reports its compactions to `primary_listener` when given (instead of `engine`'s);
    /// every tree's filter also asks `gate`.
    pub(crate) fn open(
        dir: &Path,
        engine: Options,
        gate: &Arc<CleanupGate>,
        filter: Option<SourceFilter>,
        primary_listener: Option<std::sync::Arc<dyn mosaic_lsm::CompactionListener>>,
    ) -> Result<MultiLsm> {
        let primary_opts = Options {
            compaction_listener: primary_listener.or_else(|| engine.compaction_listener.clone()),
            ..engine.clone()
        };
        let primary = Db::open(
            dir.join(PRIMARY_DIR),
            gate.options(&primary_opts, Structure::Primary),
        )?;
        let names = engine
            .fs
            .list(dir)
            .map_err(|e| Error::io("listing", dir, e))?;
        let mut sources = BTreeMap::new();
        for name in names {
            let Some(source) = name
                .strip_prefix(SOURCE_DIR_PREFIX)
                .and_then(SourceId::from_hex)
            else {
                continue;
            };
            // Two spellings of one id (upper and lower case) would be two trees of one
            // source; only the canonical one is ever created.
            if name != source_dir_name(source) {
                continue;
            }
            let opts = source_options(&engine, gate, filter.as_ref(), source);
            sources.insert(source, Db::open(dir.join(&name), opts)?);
        }
        Ok(MultiLsm {
            dir: dir.to_path_buf(),
            engine,
            gate: gate.clone(),
            filter,
            primary,
            sources: RwLock::new(sources),
        })
    }

    /// The merge operator every tree resolves versions with.
    pub(crate) fn merge_operator(&self) -> Option<&dyn mosaic_lsm::MergeOperator> {
        self.engine.merge_operator.as_deref()
    }

    /// The primary tree.
    pub(crate) fn primary(&self) -> &Db {
        &self.primary
    }

    /// The tree of `role`, if it exists.
    pub(crate) fn tree(&self, role: Role) -> Option<Db> {
        match role {
            Role::Primary => Some(self.primary.clone()),
            Role::Redundant { source, .. } => self.sources.read().get(&source).cloned(),
        }
    }

    /// The tree of `role`, created if needed.
    pub(crate) fn tree_or_create(&self, role: Role) -> Result<Db> {
        let source = match role {
            Role::Primary => return Ok(self.primary.clone()),
            Role::Redundant { source, .. } => source,
        };
        if let Some(db) = self.sources.read().get(&source) {
            return Ok(db.clone());
        }
        let mut sources = self.sources.write();
        if let Some(db) = sources.get(&source) {
            return Ok(db.clone());
        }
        let db = Db::open(
            self.dir.join(source_dir_name(source)),
            source_options(&self.engine, &self.gate, self.filter.as_ref(), source),
        )?;
        // The new directory's entry must survive a crash, or its WAL would be lost with it.
        self.engine
            .fs
            .sync_dir(&self.dir)
            .map_err(|e| Error::io("syncing", &self.dir, e))?;
        sources.insert(source, db.clone());
        Ok(db)
    }

    /// Every tree with its structure, primary first.
    pub(crate) fn trees(&self) -> Vec<(Structure, Db)> {
        let mut out = vec![(Structure::Primary, self.primary.clone())];
        out.extend(
            self.sources
                .read()
                .iter()
                .map(|(s, db)| (Structure::Source(*s), db.clone())),
        );
        out
    }

    /// Closes every tree; the first failure is returned after all were tried.
    pub(crate) fn close(self) -> Result<()> {
        let mut first = self.primary.close().err();
        for (_, db) in self.sources.into_inner() {
            if let Err(e) = db.close() {
                first.get_or_insert(e);
            }
        }
        first.map_or(Ok(()), Err)
    }
}
