//! Ingesting sorted entries as tables: what a node streams in when it joins the ring.
//!
//! A bootstrap receives each range it gains in key order, page after page. Written
//! through the ordinary path, every streamed byte would go through the WAL and the
//! memtable, be flushed to level 0 and then rewritten by every compaction on its way
//! down — two thirds of a joining node's CPU went there (BENCHMARKS.md, "Bootstrap").
//! [`Db::ingest`] writes such a batch directly as tables (synced) and places them, in one
//! manifest edit, in the deepest level where no table overlaps their key span — as
//! RocksDB's `IngestExternalFile` and Cassandra's streamed SSTables do — so the data is
//! written once and compaction has nothing to do for it.
//!
//! Why any level will do: versions are ordered by their timestamps, not by the level
//! they sit in (see [`crate::merge`]), so a table placed under newer data, or over older
//! data, reads the same. What must hold is the leveled invariant (tables of one level
//! below level 0 do not overlap), also against compactions running meanwhile: a level
//! is skipped where a running job's inputs span the key range (its outputs fall in that
//! span), and until the edit is installed the chosen span is reserved — the compaction
//! picker sees it as a busy table — so no job claimed meanwhile writes into it. A
//! manual compaction waits for reservations; one already running sends ingests to
//! level 0. Every version is written at sequence number 0: older than every snapshot,
//! so snapshots see it as they would see data already there.
//!
//! Durability is the table files' and the manifest's: once [`Db::ingest`] returns, the
//! data survives a crash without a WAL record; a crash before the edit leaves orphan
//! files that the next open removes.

use std::sync::Arc;

use crate::error::Result;
use crate::stats::Counters;
use crate::version::{TableHandle, VersionEdit};
use crate::wal::WriteBatch;

use super::{Db, Inner, State};

/// How [`Db::ingest`] stored a batch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ingested {
    /// Written as `tables` new tables of `bytes` bytes placed at `level`.
    Tables {
        /// The level the tables went to (0 when every deeper level overlapped).
        level: usize,
        /// How many tables.
        tables: usize,
        /// Their size on disk.
        bytes: u64,
    },
    /// Written through the ordinary write path instead: the batch's keys were not
    /// ascending and distinct, or this partition is a two-layer log (whose runs follow
    /// its range groups). Also the answer for an empty batch, which writes nothing.
    Written,
}

impl Db {
    /// Stores `batch` as new tables, bypassing the WAL and the memtable (see the module
    /// doc), when its keys are ascending and distinct; otherwise writes it as
    /// [`Db::write`] does. When this returns `Ok`, the batch is durable.
    pub fn ingest(&self, batch: WriteBatch) -> Result<Ingested> {
        self.inner.ingest(batch)
    }
}

impl Inner {
    fn ingest(self: &Arc<Self>, batch: WriteBatch) -> Result<Ingested> {
        let ops = batch.ops();
        let ascending = ops.windows(2).all(|w| matches!(w, [a, b] if a.key < b.key));
        let (Some(first), Some(last)) = (ops.first(), ops.last()) else {
            return Ok(Ingested::Written);
        };
        if !ascending || self.opts.log.is_some() {
            self.commit(batch)?;
            return Ok(Ingested::Written);
        }
        let (lo, hi) = (first.key.clone(), last.key.clone());
        self.check_writable(&self.state.lock())?;
        let outputs = self.write_sorted(ops)?;
        let level = {
            let mut st = self.state.lock();
            let level = ingest_level(&st, &lo, &hi);
            if level > 0 {
                st.ingesting.push((level, lo.clone(), hi.clone()));
            }
            level
        };
        let edit = VersionEdit {
            added: outputs
                .iter()
                .map(|h| (level as u32, h.meta().clone()))
                .collect(),
            ..VersionEdit::default()
        };
        let unreserve = |st: &mut State| {
            if let Some(i) = st
                .ingesting
                .iter()
                .position(|(l, a, b)| *l == level && *a == lo && *b == hi)
            {
                st.ingesting.swap_remove(i);
            }
        };
        let installed = self.install(edit, &outputs, unreserve);
        if let Err(e) = installed {
            unreserve(&mut self.state.lock());
            self.discard_outputs(&outputs);
            self.state_cv.notify_all();
            return Err(e);
        }
        self.state_cv.notify_all();
        self.engine.signal_work();
        let bytes: u64 = outputs.iter().map(|h| h.meta().size_bytes).sum();
        Counters::add(&self.counters.ingest_bytes_written, bytes);
        Counters::add(&self.counters.ingested_tables, outputs.len() as u64);
        Ok(Ingested::Tables {
            level,
            tables: outputs.len(),
            bytes,
        })
    }
}

/// The deepest level below 0 where tables spanning `lo..=hi` keep the level's tables
/// apart: none of its tables, no running job writing into it and no other ingest's
/// reservation overlaps the span. Level 0 (where tables may overlap) when there is none,
/// or while a manual compaction runs.
fn ingest_level(st: &State, lo: &[u8], hi: &[u8]) -> usize {
    if st.manual_compaction {
        return 0;
    }
    let spans = |level: usize| {
        st.running
            .values()
            .chain(st.ingesting.iter())
            .filter(move |(l, _, _)| *l == level)
    };
    let levels = &st.version.levels;
    (1..levels.len())
        .rev()
        .find(|&level| {
            let tables_clear = levels.get(level).is_some_and(|tables| {
                !tables
                    .iter()
                    .any(|t: &Arc<TableHandle>| t.meta().overlaps_user_range(lo, hi))
            });
            tables_clear && !spans(level).any(|(_, a, b)| a.as_slice() <= hi && b.as_slice() >= lo)
        })
        .unwrap_or(0)
}
