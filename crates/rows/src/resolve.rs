//! Read-time resolution: from one partition's merged entries to its live rows.
//!
//! The engine hands over a partition's entries in key order, each already merged into one
//! fragment. Because of the key layout ([`crate::key`]) the partition deletion comes first,
//! then every range tombstone, then the static row, then clustering rows in clustering
//! order — so one forward pass can drop everything deleted (by the partition deletion, a
//! covering range tombstone or the row's own deletion), drop expired values, and yield live
//! rows as it goes. A row is live if its marker is live or any of its cells is, as in
//! Cassandra. Building CQL result rows (column selection, nulls, static columns on every
//! row) is the statement layer's job.

use std::collections::BTreeMap;

use mosaic_types::{CqlValue, Timestamp, Token};

use crate::error::ResolveError;
use crate::fragment::{Cell, ColumnId, DeletionTime, Expiry, Fragment, FragmentKind, Liveness};
use crate::key::{KeyEntry, KeySchema};
use crate::merge::compare_deletions;

/// A cell with a value at read time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LiveCell {
    /// The value's native-protocol serialization.
    pub value: Vec<u8>,
    /// Its write timestamp (`WRITETIME()`).
    pub ts: Timestamp,
    /// Its TTL and expiration time, if written with one (`TTL()`).
    pub expiry: Option<Expiry>,
}

/// A row with live data at read time.
#[derive(Clone, Debug, PartialEq)]
pub struct LiveRow {
    /// The clustering values (empty for the static row and for tables without clustering
    /// columns).
    pub clustering: Vec<CqlValue>,
    /// The row marker, if it is live.
    pub liveness: Option<Liveness>,
    /// The live cells.
    pub cells: BTreeMap<ColumnId, LiveCell>,
    /// The live elements of multi-cell columns, in path order (columns with none left
    /// are absent).
    pub complex: BTreeMap<ColumnId, Vec<(Vec<u8>, LiveCell)>>,
}

/// A partition's live content.
#[derive(Clone, Debug, PartialEq)]
pub struct ResolvedPartition {
    /// The partition's token.
    pub token: Token,
    /// Its partition key values.
    pub partition_key: Vec<CqlValue>,
    /// The partition deletion, if any.
    pub deletion: Option<DeletionTime>,
    /// The static row, if it has live cells.
    pub static_row: Option<LiveRow>,
    /// The live clustering rows, in clustering order.
    pub rows: Vec<LiveRow>,
}

/// The tombstones of one fragment (see [`PartitionResolver::tombstones`]).
fn tombstones_in(fragment: &Fragment, now_secs: i64) -> u64 {
    let dead = |cells: &mut dyn Iterator<Item = &Cell>| {
        cells.filter(|c| !c.is_live(now_secs)).count() as u64
    };
    u64::from(fragment.deletion.is_some())
        + dead(&mut fragment.cells.values())
        + fragment
            .complex
            .values()
            .map(|c| u64::from(c.deletion.is_some()) + dead(&mut c.cells.values()))
            .sum::<u64>()
}

struct RangeDeletion {
    /// Encoded start bound (the bytes after the partition prefix and tag).
    start: Vec<u8>,
    /// Encoded end bound.
    end: Vec<u8>,
    deletion: DeletionTime,
}

/// Streams one partition's entries into live rows; see [`resolve_partition`].
pub struct PartitionResolver<'s> {
    schema: &'s KeySchema,
    now_secs: i64,
    partition: Option<(Vec<u8>, Token, Vec<CqlValue>)>,
    last_key: Option<Vec<u8>>,
    deletion: Option<DeletionTime>,
    range_deletions: Vec<RangeDeletion>,
    static_row: Option<LiveRow>,
    tombstones: u64,
}

impl<'s> PartitionResolver<'s> {
    /// A resolver for entries of `schema`'s table, at local time `now_secs`.
    pub fn new(schema: &'s KeySchema, now_secs: i64) -> Self {
        PartitionResolver {
            schema,
            now_secs,
            partition: None,
            last_key: None,
            deletion: None,
            range_deletions: Vec::new(),
            static_row: None,
            tombstones: 0,
        }
    }

    /// Tombstones fed so far (what Cassandra's `tombstone_warn_threshold` and
    /// `tombstone_failure_threshold` count): each deletion of a partition, range or row,
    /// each deleted or expired cell, each deletion of a multi-cell column and each deleted
    /// or expired element of one.
    pub fn tombstones(&self) -> u64 {
        self.tombstones
    }

    /// Feeds the next entry (in ascending key order); returns the clustering row it holds
    /// if that row is live. Partition deletions, range tombstones and the static row are
    /// absorbed and shape what follows.
    pub fn push(&mut self, key: &[u8], value: &[u8]) -> Result<Option<LiveRow>, ResolveError> {
        if self.last_key.as_deref().is_some_and(|last| key <= last) {
            return Err(ResolveError::OutOfOrder);
        }
        let (decoded, spans) = self.schema.decode_key_spans(key)?;
        let prefix = key.get(..spans.partition_len).unwrap_or_default();
        match &self.partition {
            Some((p, _, _)) if p.as_slice() != prefix => return Err(ResolveError::OtherPartition),
            Some(_) => {}
            None => {
                self.partition = Some((prefix.to_vec(), decoded.token, decoded.partition_key));
            }
        }
        self.last_key = Some(key.to_vec());
        let fragment = Fragment::decode(value)?;
        self.tombstones += tombstones_in(&fragment, self.now_secs);
        let expected = match &decoded.entry {
            KeyEntry::PartitionHeader => FragmentKind::Partition,
            KeyEntry::RangeTombstone { .. } => FragmentKind::RangeTombstone,
            KeyEntry::Static => FragmentKind::Static,
            KeyEntry::Row(_) => FragmentKind::Row,
            KeyEntry::Bound(_) | KeyEntry::PartitionEnd => {
                return Err(ResolveError::UnexpectedBound)
            }
        };
        if fragment.kind != expected {
            return Err(ResolveError::KindMismatch {
                kind: fragment.kind.name(),
            });
        }
        let clustering_bytes = key.get(spans.partition_len..).unwrap_or_default();
        match decoded.entry {
            KeyEntry::PartitionHeader => {
                self.deletion = newer(self.deletion, fragment.deletion);
                Ok(None)
            }
            KeyEntry::RangeTombstone { .. } => {
                if let (Some(deletion), Some(end_at)) = (fragment.deletion, spans.tombstone_end_at)
                {
                    let start_at = spans.partition_len + 1;
                    self.range_deletions.push(RangeDeletion {
                        start: key.get(start_at..end_at).unwrap_or_default().to_vec(),
                        end: key.get(end_at..).unwrap_or_default().to_vec(),
                        deletion,
                    });
                }
                Ok(None)
            }
            KeyEntry::Static => {
                self.static_row = self.live_row(Vec::new(), fragment, self.deletion);
                Ok(None)
            }
            KeyEntry::Row(clustering) => {
                let covering = self
                    .range_deletions
                    .iter()
                    .filter(|rt| {
                        rt.start.as_slice() < clustering_bytes
                            && clustering_bytes < rt.end.as_slice()
                    })
                    .fold(self.deletion, |acc, rt| newer(acc, Some(rt.deletion)));
                Ok(self.live_row(clustering, fragment, covering))
            }
            KeyEntry::Bound(_) | KeyEntry::PartitionEnd => Err(ResolveError::UnexpectedBound),
        }
    }

    /// The partition deletion seen so far.
    pub fn partition_deletion(&self) -> Option<DeletionTime> {
        self.deletion
    }

    /// The live static row, once its entry has been fed.
    pub fn static_row(&self) -> Option<&LiveRow> {
        self.static_row.as_ref()
    }

    fn live_row(
        &self,
        clustering: Vec<CqlValue>,
        fragment: Fragment,
        outer: Option<DeletionTime>,
    ) -> Option<LiveRow> {
        let deletion = newer(outer, fragment.deletion);
        let shadowed = |ts: Timestamp| deletion.is_some_and(|d| d.deletes(ts));
        let liveness = fragment
            .liveness
            .filter(|l| !shadowed(l.ts) && l.is_live(self.now_secs));
        let now_secs = self.now_secs;
        let live = move |c: Cell| match c {
            Cell::Live { ts, value, expiry } if c_is_live(expiry, now_secs) => {
                Some(LiveCell { value, ts, expiry })
            }
            _ => None,
        };
        let cells: BTreeMap<ColumnId, LiveCell> = fragment
            .cells
            .into_iter()
            .filter(|(_, c)| !shadowed(c.ts()))
            .filter_map(|(id, c)| Some((id, live(c)?)))
            .collect();
        let complex: BTreeMap<ColumnId, Vec<(Vec<u8>, LiveCell)>> = fragment
            .complex
            .into_iter()
            .filter_map(|(id, column)| {
                let own = newer(deletion, column.deletion);
                let elements: Vec<(Vec<u8>, LiveCell)> = column
                    .cells
                    .into_iter()
                    .filter(|(_, c)| !own.is_some_and(|d| d.deletes(c.ts())))
                    .filter_map(|(path, c)| Some((path, live(c)?)))
                    .collect();
                (!elements.is_empty()).then_some((id, elements))
            })
            .collect();
        (liveness.is_some() || !cells.is_empty() || !complex.is_empty()).then_some(LiveRow {
            clustering,
            liveness,
            cells,
            complex,
        })
    }

    /// Finishes with the rows yielded so far.
    fn finish(self, rows: Vec<LiveRow>) -> Option<ResolvedPartition> {
        let (_, token, partition_key) = self.partition?;
        Some(ResolvedPartition {
            token,
            partition_key,
            deletion: self.deletion,
            static_row: self.static_row,
            rows,
        })
    }
}

/// Whether a live cell with `expiry` is still live at `now_secs`.
fn c_is_live(expiry: Option<Expiry>, now_secs: i64) -> bool {
    expiry.is_none_or(|e| !e.is_expired(now_secs))
}

fn newer(a: Option<DeletionTime>, b: Option<DeletionTime>) -> Option<DeletionTime> {
    match (a, b) {
        (Some(a), Some(b)) => Some(if compare_deletions(&b, &a).is_gt() {
            b
        } else {
            a
        }),
        (a, b) => a.or(b),
    }
}

/// Resolves the entries of one partition — `(key, merged fragment bytes)` in ascending key
/// order, as read from the engine — into its live content at local time `now_secs`.
/// Returns `None` for no entries.
pub fn resolve_partition<I, K, V>(
    schema: &KeySchema,
    entries: I,
    now_secs: i64,
) -> Result<Option<ResolvedPartition>, ResolveError>
where
    I: IntoIterator<Item = (K, V)>,
    K: AsRef<[u8]>,
    V: AsRef<[u8]>,
{
    let mut resolver = PartitionResolver::new(schema, now_secs);
    let mut rows = Vec::new();
    for (key, value) in entries {
        if let Some(row) = resolver.push(key.as_ref(), value.as_ref())? {
            rows.push(row);
        }
    }
    Ok(resolver.finish(rows))
}
