//! Counter columns on the cell model.
//!
//! A counter column is a multi-cell column ([`crate::ComplexColumn`]) holding one *shard*
//! per node that has led an increment of it, as Cassandra's counter context holds one
//! shard per counter id:
//!
//! - the cell's path is the leading node's 16-byte host id;
//! - the cell's timestamp is the shard's *clock*: microseconds on the leader, strictly
//!   above the shard's previous clock and every deletion the leader saw covering it;
//! - the cell's value is that node's running total, a big-endian `i64` (a `bigint`).
//!
//! The ordinary merge (last write wins per path) then keeps each node's newest shard —
//! Cassandra's "highest clock wins" — and the counter's value is the sum of the live
//! shards. Only the leader writes its own shard, reading its previous value from its own
//! storage under a per-counter lock ([`next_shard`]), so replicas converge by merging and
//! a retried increment is the only way to count twice (Cassandra's caveat). A deletion
//! shadows the shards written before it; the next increment led by a node then starts
//! from zero, so a deleted counter counts again from zero once every node that led
//! increments before the deletion has led one after it (until then, shards written before
//! the deletion stay shadowed and count nothing).

use std::collections::BTreeMap;

use mosaic_types::Timestamp;

use crate::error::ResolveError;
use crate::fragment::{Cell, ColumnId, Fragment, FragmentKind};
use crate::key::{KeyEntry, KeySchema};
use crate::resolve::{LiveCell, PartitionResolver};

/// Bytes of a shard's path (a host id).
pub const SHARD_PATH_LEN: usize = 16;

/// A shard's value: the total as a `bigint`.
pub fn shard_value(total: i64) -> Vec<u8> {
    total.to_be_bytes().to_vec()
}

/// The total a shard's value holds (`None` when it is not 8 bytes).
pub fn shard_total(value: &[u8]) -> Option<i64> {
    Some(i64::from_be_bytes(value.try_into().ok()?))
}

/// A counter's value: the sum of its live shards (wrapping, as Cassandra's `long` adds).
/// Shards of another length are skipped.
pub fn counter_total<'a>(shards: impl IntoIterator<Item = &'a LiveCell>) -> i64 {
    shards
        .into_iter()
        .filter_map(|c| shard_total(&c.value))
        .fold(0i64, i64::wrapping_add)
}

/// The leader's new shard after adding `delta`: `visible` is its shard as a read sees it
/// (`None` when absent or shadowed by a deletion: the total starts from zero), `floor`
/// the highest timestamp the new clock must exceed (the shard's stored clock, shadowed
/// or not, and every deletion the leader saw in the partition), `now_micros` the leader's
/// clock.
pub fn next_shard(
    visible: Option<&LiveCell>,
    floor: Timestamp,
    now_micros: i64,
    delta: i64,
) -> Cell {
    let previous = visible.and_then(|c| shard_total(&c.value)).unwrap_or(0);
    let clock = now_micros
        .max(floor.0.saturating_add(1))
        .max(visible.map_or(i64::MIN, |c| c.ts.0.saturating_add(1)));
    Cell::Live {
        ts: Timestamp(clock),
        value: shard_value(previous.wrapping_add(delta)),
        expiry: None,
    }
}

/// The kind of fragment a counter's key holds (a clustering row or the static row);
/// `None` for any other key.
pub fn counter_key_kind(schema: &KeySchema, key: &[u8]) -> Option<FragmentKind> {
    match schema.decode_key(key).ok()?.entry {
        KeyEntry::Static => Some(FragmentKind::Static),
        KeyEntry::Row(_) => Some(FragmentKind::Row),
        _ => None,
    }
}

/// The shard of `host` in counter `column` of the row `key`, from `entries` (the row's
/// partition head — [`KeySchema::head_range_of_key`] — then the row, in key order, merged;
/// an entry repeating the one before it is skipped)
/// at local time `now_secs`: the shard as a read sees it (`None` when absent or deleted),
/// and the floor [`next_shard`] needs (the stored shard's clock and every deletion seen).
pub fn stored_shard(
    schema: &KeySchema,
    entries: &[(Vec<u8>, Vec<u8>)],
    key: &[u8],
    column: ColumnId,
    host: &[u8],
    now_secs: i64,
) -> Result<(Option<LiveCell>, Timestamp), ResolveError> {
    let mut floor = Timestamp(i64::MIN);
    let mut resolver = PartitionResolver::new(schema, now_secs);
    let mut live = None;
    let mut last: Option<&[u8]> = None;
    for (k, v) in entries {
        // A static row's key is inside its partition's head: a caller reading the head and
        // then the row gets it twice.
        if last == Some(k.as_slice()) {
            continue;
        }
        last = Some(k);
        let fragment = Fragment::decode(v)?;
        let complex = fragment.complex.get(&column);
        let deletions = fragment
            .deletion
            .iter()
            .chain(complex.and_then(|c| c.deletion.as_ref()));
        for d in deletions {
            floor = floor.max(d.marked_for_delete_at);
        }
        if let Some(cell) = complex.and_then(|c| c.cells.get(host)) {
            floor = floor.max(cell.ts());
        }
        let row = resolver.push(k, v)?;
        if k.as_slice() == key {
            live = row;
        }
    }
    if live.is_none() && counter_key_kind(schema, key) == Some(FragmentKind::Static) {
        live = resolver.static_row().cloned();
    }
    let visible = live.and_then(|row| {
        row.complex
            .get(&column)?
            .iter()
            .find(|(path, _)| path.as_slice() == host)
            .map(|(_, cell)| cell.clone())
    });
    Ok((visible, floor))
}

/// The new shards of a batch of increments one node leads, by row.
#[derive(Debug)]
pub struct LeaderBatch {
    host: Vec<u8>,
    rows: BTreeMap<Vec<u8>, Fragment>,
}

impl LeaderBatch {
    /// An empty batch led by the node whose host id is `host`.
    pub fn new(host: &[u8]) -> LeaderBatch {
        LeaderBatch {
            host: host.to_vec(),
            rows: BTreeMap::new(),
        }
    }

    /// The leader's host id (its shards' path).
    pub fn host(&self) -> &[u8] {
        &self.host
    }

    /// The shard this batch already gives counter `column` of row `key`, as
    /// [`Self::add`] takes it (a second increment of a counter adds to the first, not to
    /// what is stored).
    pub fn pending(&self, key: &[u8], column: ColumnId) -> Option<(Option<LiveCell>, Timestamp)> {
        match self
            .rows
            .get(key)?
            .complex
            .get(&column)?
            .cells
            .get(&self.host)?
        {
            Cell::Live { ts, value, .. } => Some((
                Some(LiveCell {
                    value: value.clone(),
                    ts: *ts,
                    expiry: None,
                }),
                *ts,
            )),
            Cell::Tombstone { .. } => None,
        }
    }

    /// Adds `delta` to counter `column` of row `key` (a `kind` row), whose shard here is
    /// `visible` with `floor` ([`stored_shard`], or [`Self::pending`]).
    pub fn add(
        &mut self,
        key: &[u8],
        kind: FragmentKind,
        column: ColumnId,
        (visible, floor): (Option<LiveCell>, Timestamp),
        now_micros: i64,
        delta: i64,
    ) {
        let shard = next_shard(visible.as_ref(), floor, now_micros, delta);
        self.rows
            .entry(key.to_vec())
            .or_insert_with(|| Fragment::new(kind))
            .complex
            .entry(column)
            .or_default()
            .cells
            .insert(self.host.clone(), shard);
    }

    /// The writes carrying the shards: `(key, engine timestamp, encoded fragment)`.
    pub fn into_writes(self) -> Vec<(Vec<u8>, u64, Vec<u8>)> {
        self.rows
            .into_iter()
            .map(|(key, f)| {
                let ts = f.max_timestamp().map_or(0, Timestamp::to_engine);
                (key, ts, f.encode())
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn live(ts: i64, total: i64) -> LiveCell {
        LiveCell {
            value: shard_value(total),
            ts: Timestamp(ts),
            expiry: None,
        }
    }

    #[test]
    fn a_shard_adds_to_its_visible_total_with_a_clock_above_everything_seen() {
        let cell = next_shard(Some(&live(100, 5)), Timestamp(90), 50, 3);
        assert_eq!(
            cell,
            Cell::Live {
                ts: Timestamp(101),
                value: shard_value(8),
                expiry: None
            }
        );
        // A deletion newer than the shard: it counts from zero, above the deletion.
        let cell = next_shard(None, Timestamp(200), 150, -2);
        assert_eq!(cell.ts(), Timestamp(201));
        assert_eq!(
            cell,
            Cell::Live {
                ts: Timestamp(201),
                value: shard_value(-2),
                expiry: None
            }
        );
        // The clock runs ahead of everything stored.
        assert_eq!(
            next_shard(Some(&live(100, 5)), Timestamp(0), 1_000, 1).ts(),
            Timestamp(1_000)
        );
    }

    #[test]
    fn the_value_is_the_sum_of_shards_wrapping() {
        assert_eq!(counter_total([&live(1, 5), &live(2, -7), &live(3, 10)]), 8);
        assert_eq!(counter_total([&live(1, i64::MAX), &live(2, 1)]), i64::MIN);
        let odd = LiveCell {
            value: vec![1, 2, 3],
            ts: Timestamp(1),
            expiry: None,
        };
        assert_eq!(counter_total([&odd, &live(1, 4)]), 4);
        assert_eq!(shard_total(&[0; 7]), None);
    }
}
