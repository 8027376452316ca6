//! [`ReplicaStore::cleanup`]: dropping the entries of the tokens each structure no longer
//! owns (see [`crate::cleanup`]).

use super::*;

use crate::cleanup::Ownership;

/// What a cleanup did to one structure of a store.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StructureCleanup {
    /// Which engine.
    pub structure: Structure,
    /// Bytes in its tables before (its memtables flushed) and after.
    pub bytes_before: u64,
    /// Bytes in its tables after the cleanup's compaction.
    pub bytes_after: u64,
    /// Entries in its tables before.
    pub entries_before: u64,
    /// Entries in its tables after (fewer by the versions dropped, and by whatever the
    /// compaction merged or purged besides).
    pub entries_after: u64,
}

/// What a cleanup did to a store.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CleanupReport {
    /// Per structure, in [`ReplicaStore::structures`]' order.
    pub structures: Vec<StructureCleanup>,
    /// Versions the cleanup dropped as not owned (by any compaction or flush while it ran).
    pub dropped_versions: u64,
}

impl CleanupReport {
    /// Bytes in the store's tables before.
    pub fn bytes_before(&self) -> u64 {
        self.structures.iter().map(|s| s.bytes_before).sum()
    }

    /// Bytes in the store's tables after.
    pub fn bytes_after(&self) -> u64 {
        self.structures.iter().map(|s| s.bytes_after).sum()
    }
}

/// Bytes and entries in `db`'s tables.
fn table_totals(db: &Db) -> (u64, u64) {
    db.levels()
        .iter()
        .flat_map(|l| &l.tables)
        .fold((0, 0), |(b, e), t| (b + t.size_bytes, e + t.entries))
}

impl ReplicaStore {
    /// Drops from every structure the entries of the tokens `ownership` says it does not
    /// hold (every version: rows, tombstones, counters), by compacting each structure
    /// fully while its compaction filter drops them. Writes and reads go on meanwhile; a
    /// second cleanup of the store waits for this one. The first failure is returned
    /// after every structure was tried. An `erasure-tiered` store's trees are cleaned; the
    /// parity and coding state it keeps are not.
    pub fn cleanup(&self, ownership: Ownership) -> Result<CleanupReport> {
        // Flushed first (before the cleanup starts dropping), so the totals before count
        // what the memtables held.
        self.flush()?;
        let engines: Vec<(Structure, Db, (u64, u64))> = self
            .engines()
            .into_iter()
            .map(|(s, db)| {
                let totals = table_totals(&db);
                (s, db, totals)
            })
            .collect();
        let before_dropped = self.cleanup.dropped();
        let (structures, result) = self.cleanup.with_ownership(ownership, || {
            let mut out = Vec::new();
            let mut first = None;
            for (structure, db, (bytes_before, entries_before)) in engines {
                if let Err(e) = db.compact() {
                    first.get_or_insert(e);
                }
                let (bytes_after, entries_after) = table_totals(&db);
                out.push(StructureCleanup {
                    structure,
                    bytes_before,
                    bytes_after,
                    entries_before,
                    entries_after,
                });
            }
            (out, first.map_or(Ok(()), Err))
        });
        result?;
        Ok(CleanupReport {
            structures,
            dropped_versions: self.cleanup.dropped().saturating_sub(before_dropped),
        })
    }
}
