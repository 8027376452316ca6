//! Reads through a secondary index on this node (see `indexes` for how entries are kept):
//! the term's entries in the range, the rows or partitions they point at with their
//! partitions' heads, entries found stale dropped and deleted; each answer bounded in
//! entries, bytes and time as an ordinary read's is (`answer`).

use super::*;

use mosaic_cql::index::{base_key, deletion_fragment, entry_key, term_range, HitScope, IndexPlan};
use mosaic_rows::Fragment;
use mosaic_types::Timestamp;

use super::answer::Budget;
use super::indexes::IndexSlot;
use super::tables::engine_error;

/// What a read through an index returns (see the module doc): up to `limit` entries of
/// `pieces` (each read under its role), in key order, and whether the range is done.
///
/// Bounded as an ordinary read is (`answer`): the answer stops once it
/// holds `limit` entries or `budget`'s bytes, a whole partition an index entry points at
/// included (the answer then ends inside it, and the next read, starting there, reads the
/// rest of it); and every index entry and base entry scanned counts towards `budget`'s
/// deadline. Storage errors are reported against table `name`.
#[allow(clippy::too_many_arguments)] // One read's inputs and bounds, each used once.
pub(super) fn read_through(
    store: &ReplicaStore,
    index: &IndexSlot,
    schema: &KeySchema,
    term: &[u8],
    pieces: &[(KeyRange, Role)],
    limit: usize,
    now_secs: i64,
    budget: &mut Budget,
    name: &str,
) -> Result<ReadResult, ErrorResponse> {
    let engine = |e| engine_error(name, e);
    let guard = index.db.read();
    let Some(db) = guard.as_ref() else {
        return Err(engine(mosaic_lsm::Error::Closed));
    };
    index.reads.fetch_add(1, Ordering::Relaxed);
    let mut out = Vec::with_capacity(limit.min(1024));
    let mut stale = WriteBatch::new();
    let mut last_partition: Option<Vec<u8>> = None;
    let unclustered = schema.clustering_columns().is_empty();
    let mut done = true;
    let whole_partitions = index.plan.scope() == HitScope::Partition;
    'pieces: for (range, role) in pieces {
        let mut entries = term_range(term, range);
        if whole_partitions {
            // A range that starts inside a partition (the previous page or chunk ended
            // there) still wants the rest of it, whose entry sorts before the range.
            if let Some(prefix) = schema
                .partition_prefix_len(&range.start)
                .ok()
                .and_then(|len| range.start.get(..len))
            {
                entries.start = entry_key(term, prefix);
            }
        }
        let (start, end) = scan_bounds(&entries);
        for item in db.scan(start, end).map_err(engine)? {
            budget.tick()?;
            let (key, entry) = item.map_err(engine)?;
            let Some(base) = base_key(term, &key) else {
                continue;
            };
            let Some(marker) = live_marker(&entry.value, now_secs) else {
                continue;
            };
            let Ok(prefix_len) = schema.partition_prefix_len(base) else {
                continue;
            };
            let prefix = base.get(..prefix_len).unwrap_or_default();
            let new_partition = last_partition.as_deref() != Some(prefix);
            if !new_partition && index.plan.scope() == HitScope::Partition {
                continue;
            }
            let mut hit = Vec::new();
            // Whether the hit stops inside its partition, the answer being full.
            let mut cut = false;
            if whole_partitions {
                let whole = partition_range(prefix, mosaic_rows::key::tag::PARTITION_END);
                let room = Room {
                    entries: limit.saturating_sub(out.len()),
                    bytes: budget.bytes_left(),
                };
                cut = read_range(
                    store,
                    *role,
                    &clip(&whole, range),
                    &mut hit,
                    budget,
                    Some(room),
                )
                .map_err(|e| e.into_response(name))?;
                // An entry before the range: only the rest of its partition is read, so
                // the check reads the static row alone and a partition key's entry is
                // taken as it is (a later read of the whole partition judges it).
                let before_range = !range.contains(base);
                let holds = match hit.iter().find(|(k, _)| k.as_slice() == base) {
                    _ if before_range && !index.plan.points_at_row() => true,
                    _ if !index.plan.points_at_row() => !hit.is_empty(),
                    Some((_, value)) => row_holds(&index.plan, schema, base, value, term),
                    // Not among the entries read: before the range, or past where the hit
                    // was cut; its row is read alone.
                    None if before_range || cut => store
                        .get(*role, base)
                        .map_err(engine)?
                        .is_some_and(|row| row_holds(&index.plan, schema, base, &row.value, term)),
                    None => false,
                };
                if !holds {
                    drop_stale(&mut stale, &key, marker, now_secs);
                    continue;
                }
            } else if unclustered && new_partition {
                // The partition is its head and this one row: one scan reads both.
                let mut end = base.to_vec();
                end.push(0);
                let whole = KeyRange {
                    start: prefix.to_vec(),
                    end: Some(end),
                };
                read_range(store, *role, &clip(&whole, range), &mut hit, budget, None)
                    .map_err(|e| e.into_response(name))?;
                let holds = matches!(hit.last(), Some((k, v)) if k.as_slice() == base
                    && row_holds(&index.plan, schema, base, v, term));
                if !holds {
                    drop_stale(&mut stale, &key, marker, now_secs);
                    continue;
                }
            } else {
                let Some(row) = store.get(*role, base).map_err(engine)? else {
                    drop_stale(&mut stale, &key, marker, now_secs);
                    continue;
                };
                if !row_holds(&index.plan, schema, base, &row.value, term) {
                    drop_stale(&mut stale, &key, marker, now_secs);
                    continue;
                }
                if new_partition {
                    let head = partition_range(prefix, mosaic_rows::key::tag::BEFORE);
                    read_range(store, *role, &clip(&head, range), &mut hit, budget, None)
                        .map_err(|e| e.into_response(name))?;
                }
                if range.contains(base) {
                    hit.push((base.to_vec(), row.value));
                }
            }
            // One hit past the limit (or the bytes): not done.
            if !out.is_empty() && (out.len() + hit.len() > limit || budget.bytes_left() == 0) {
                done = false;
                break 'pieces;
            }
            last_partition = Some(prefix.to_vec());
            for (key, value) in &hit {
                budget.add(key, value);
            }
            out.extend(hit);
            if cut {
                done = false;
                break 'pieces;
            }
        }
    }
    if !stale.is_empty() {
        // Best effort: an entry not deleted now is found stale again by a later read.
        if let Err(e) = db.write(stale) {
            tracing::debug!(target: "mosaic::storage", index = index.meta.name, error = %e, "deleting stale index entries failed");
        }
    }
    Ok(ReadResult::one_copy(out, done))
}

/// Adds the deletion of stale index entry `key` (marked at `marker`) to `stale`.
fn drop_stale(stale: &mut WriteBatch, key: &[u8], marker: Timestamp, now_secs: i64) {
    stale.merge_owned(
        key.to_vec(),
        marker.to_engine(),
        deletion_fragment(marker, now_secs),
    );
}

/// The timestamp of an index entry's marker, if the entry is live at `now_secs`.
fn live_marker(value: &[u8], now_secs: i64) -> Option<Timestamp> {
    let fragment = Fragment::decode(value).ok()?;
    let marker = fragment.liveness?;
    if fragment.deletion.is_some_and(|d| d.deletes(marker.ts)) || !marker.is_live(now_secs) {
        return None;
    }
    Some(marker.ts)
}

/// Whether the stored row `value` (at `key`) still holds `term` in the indexed column.
fn row_holds(plan: &IndexPlan, schema: &KeySchema, key: &[u8], value: &[u8], term: &[u8]) -> bool {
    let Ok(fragment) = Fragment::decode(value) else {
        // Unreadable here: let the coordinator's reading of it decide.
        return true;
    };
    let mut entries = Vec::new();
    plan.entries_for(schema, key, &fragment, &mut entries);
    entries.iter().any(|e| e.term == term)
}

/// The keys of a partition from its first key to `prefix ‖ tag`.
fn partition_range(prefix: &[u8], tag: u8) -> KeyRange {
    let mut end = prefix.to_vec();
    end.push(tag);
    KeyRange {
        start: prefix.to_vec(),
        end: Some(end),
    }
}

/// `a` ∩ `b`.
fn clip(a: &KeyRange, b: &KeyRange) -> KeyRange {
    let start = a.start.clone().max(b.start.clone());
    let end = match (&a.end, &b.end) {
        (Some(x), Some(y)) => Some(x.clone().min(y.clone())),
        (Some(x), None) | (None, Some(x)) => Some(x.clone()),
        (None, None) => None,
    };
    KeyRange { start, end }
}

/// How much more a read through an index may add to its answer.
#[derive(Clone, Copy, Debug)]
struct Room {
    entries: usize,
    bytes: usize,
}

/// Why [`read_range`] failed.
enum RangeError {
    Engine(mosaic_lsm::Error),
    /// The read's time passed.
    Deadline(ErrorResponse),
}

impl RangeError {
    fn into_response(self, table: &str) -> ErrorResponse {
        match self {
            RangeError::Engine(e) => engine_error(table, e),
            RangeError::Deadline(e) => e,
        }
    }
}

impl From<mosaic_lsm::Error> for RangeError {
    fn from(e: mosaic_lsm::Error) -> RangeError {
        RangeError::Engine(e)
    }
}

/// Appends the entries of `range` stored under `role`, each scanned one counted towards
/// `budget`'s deadline; with `room`, at most its entries and bytes (at least one entry).
/// Whether it stopped before the range's end.
fn read_range(
    store: &ReplicaStore,
    role: Role,
    range: &KeyRange,
    out: &mut Vec<(Vec<u8>, Vec<u8>)>,
    budget: &mut Budget,
    room: Option<Room>,
) -> Result<bool, RangeError> {
    if range.is_empty() {
        return Ok(false);
    }
    let (mut entries, mut bytes) = (0usize, 0usize);
    for item in store.scan_filtered(role, range, None)? {
        budget.tick().map_err(RangeError::Deadline)?;
        let (key, entry) = item?;
        if room.is_some_and(|r| entries > 0 && (entries >= r.entries || bytes >= r.bytes)) {
            return Ok(true);
        }
        entries += 1;
        bytes = bytes.saturating_add(key.len() + entry.value.len());
        out.push((key, entry.value));
    }
    Ok(false)
}
