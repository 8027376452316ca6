//! Last-write-wins merge of fragments, as Cassandra reconciles rows.
//!
//! Rules (Cassandra 4.x `Cells.reconcile`, `LivenessInfo.supersedes`,
//! `DeletionTime.supersedes`):
//! - per cell, the higher timestamp wins; on a tie a tombstone or expiring cell beats a
//!   plain live cell, a tombstone beats an expiring cell, then the later local deletion or
//!   expiration time wins, then the larger value; and finally (our addition, so that the
//!   merge is a total order and therefore commutative) the larger TTL;
//! - row markers: the higher timestamp, then expiring over non-expiring, then the later
//!   expiration, then the larger TTL;
//! - deletions: the higher `marked_for_delete_at`, then the later local deletion time;
//! - a deletion shadows the marker and every cell with a timestamp `<=` its own;
//! - a multi-cell column's elements merge per path by the cell rule, its column deletion by
//!   the deletion rule; the column deletion shadows the column's elements like a row
//!   deletion, and a row deletion shadows both.
//!
//! Each rule picks the maximum of a total order, and shadowing only removes what the final
//! deletion would remove anyway, so merging is commutative and associative: compaction
//! may merge any subset of versions first and reads merge the rest, with the same result.
//!
//! Whole-key engine kinds are honoured too: a `Put` fragment replaces every older version
//! and a `Delete` removes them; the merge of newer `Merge` fragments over either becomes a
//! `Put`, so a partial merge inside compaction never lets older versions reappear.
//!
//! Purging (compaction): expired TTL cells become tombstones (as Cassandra does), and at
//! the bottom of the tree tombstones older than the grace period are dropped. Partition and
//! range deletions are never purged here: they shadow rows stored under *other* keys, which
//! may still sit in the bottom level next to them, and this operator sees one key at a time.

use std::cmp::Ordering;

use mosaic_lsm::merge::lww_winner;
use mosaic_lsm::{MergeOperator, PurgeContext, Resolved, ValueKind, Version};
use mosaic_types::{secs_from_micros, Timestamp, MICROS_PER_SEC};

use crate::fragment::{
    Cell, ComplexColumn, DeletionTime, Expiry, Fragment, FragmentKind, Liveness,
};

/// Cassandra's reconciliation order of two cells of one column: `Greater` if `a` wins.
pub fn compare_cells(a: &Cell, b: &Cell) -> Ordering {
    // (timestamp, expiring-or-tombstone, tombstone, local deletion/expiration time)
    fn rank(c: &Cell) -> (Timestamp, bool, bool, i64) {
        match c {
            Cell::Live {
                ts, expiry: None, ..
            } => (*ts, false, false, i64::MIN),
            Cell::Live {
                ts,
                expiry: Some(e),
                ..
            } => (*ts, true, false, e.local_expiration_secs),
            Cell::Tombstone {
                ts,
                local_deletion_secs,
            } => (*ts, true, true, *local_deletion_secs),
        }
    }
    fn value(c: &Cell) -> &[u8] {
        match c {
            Cell::Live { value, .. } => value,
            Cell::Tombstone { .. } => &[],
        }
    }
    fn ttl(c: &Cell) -> u32 {
        match c {
            Cell::Live {
                expiry: Some(e), ..
            } => e.ttl_secs,
            _ => 0,
        }
    }
    rank(a)
        .cmp(&rank(b))
        .then_with(|| value(a).cmp(value(b)))
        .then_with(|| ttl(a).cmp(&ttl(b)))
}

/// Cassandra's `LivenessInfo.supersedes` as an order: `Greater` if `a` wins.
pub fn compare_liveness(a: &Liveness, b: &Liveness) -> Ordering {
    fn rank(l: &Liveness) -> (Timestamp, bool, i64, u32) {
        match l.expiry {
            None => (l.ts, false, i64::MIN, 0),
            Some(Expiry {
                ttl_secs,
                local_expiration_secs,
            }) => (l.ts, true, local_expiration_secs, ttl_secs),
        }
    }
    rank(a).cmp(&rank(b))
}

/// Cassandra's `DeletionTime.supersedes` as an order: `Greater` if `a` wins.
pub fn compare_deletions(a: &DeletionTime, b: &DeletionTime) -> Ordering {
    (a.marked_for_delete_at, a.local_deletion_secs)
        .cmp(&(b.marked_for_delete_at, b.local_deletion_secs))
}

fn max_by<T>(a: Option<T>, b: Option<T>, cmp: impl Fn(&T, &T) -> Ordering) -> Option<T> {
    match (a, b) {
        (Some(a), Some(b)) => Some(if cmp(&b, &a) == Ordering::Greater {
            b
        } else {
            a
        }),
        (a, b) => a.or(b),
    }
}

/// Merges `other` into `acc` (commutative and associative over fragments).
pub fn merge_into(acc: &mut Fragment, other: Fragment) {
    acc.kind = acc.kind.max(other.kind);
    acc.deletion = max_by(acc.deletion, other.deletion, compare_deletions);
    acc.liveness = max_by(acc.liveness, other.liveness, compare_liveness);
    for (id, cell) in other.cells {
        merge_cell(&mut acc.cells, id, cell);
    }
    for (id, column) in other.complex {
        let into = acc.complex.entry(id).or_default();
        into.deletion = max_by(into.deletion, column.deletion, compare_deletions);
        for (path, cell) in column.cells {
            merge_cell(&mut into.cells, path, cell);
        }
    }
    apply_row_deletion(acc);
}

/// Drops the marker and cells shadowed by the fragment's own deletion.
/// Keeps the newer of `cell` and the cell already at `key`.
fn merge_cell<K: Ord>(cells: &mut std::collections::BTreeMap<K, Cell>, key: K, cell: Cell) {
    match cells.get_mut(&key) {
        Some(existing) => {
            if compare_cells(&cell, existing) == Ordering::Greater {
                *existing = cell;
            }
        }
        None => {
            cells.insert(key, cell);
        }
    }
}

fn apply_row_deletion(f: &mut Fragment) {
    if let Some(d) = f.deletion {
        if f.liveness.is_some_and(|l| d.deletes(l.ts)) {
            f.liveness = None;
        }
        f.cells.retain(|_, c| !d.deletes(c.ts()));
    }
    let row = f.deletion;
    f.complex.retain(|_, column| {
        apply_column_deletion(column, row);
        !column.is_empty()
    });
}

/// Drops a multi-cell column's elements (and its own deletion) shadowed by its deletion or
/// by `outer` (the row's).
fn apply_column_deletion(column: &mut ComplexColumn, outer: Option<DeletionTime>) {
    if let (Some(own), Some(outer)) = (column.deletion, outer) {
        if outer.deletes(own.marked_for_delete_at) {
            column.deletion = None;
        }
    }
    let shadow = max_by(column.deletion, outer, compare_deletions);
    if let Some(d) = shadow {
        column.cells.retain(|_, c| !d.deletes(c.ts()));
    }
}

/// The merge of two fragments.
pub fn merge_fragments(a: &Fragment, b: &Fragment) -> Fragment {
    let mut acc = a.clone();
    merge_into(&mut acc, b.clone());
    acc
}

/// Whether a tombstone deleted at local time `local_secs` may be forgotten.
fn purgeable(ctx: &PurgeContext, local_secs: i64) -> bool {
    ctx.bottommost
        && i128::from(local_secs) * i128::from(MICROS_PER_SEC) + i128::from(ctx.gc_grace_micros)
            < i128::from(ctx.now_micros)
}

/// Applies compaction's purge rules to a fragment in place; returns whether it changed.
pub fn purge_fragment(f: &mut Fragment, ctx: &PurgeContext) -> bool {
    if matches!(
        f.kind,
        FragmentKind::Partition | FragmentKind::RangeTombstone
    ) {
        return false; // see the module documentation
    }
    let now_secs = secs_from_micros(ctx.now_micros);
    let before = f.clone();
    if f.deletion
        .is_some_and(|d| purgeable(ctx, d.local_deletion_secs))
    {
        f.deletion = None;
    }
    if let Some(Liveness {
        expiry: Some(e), ..
    }) = f.liveness
    {
        if e.is_expired(now_secs) && purgeable(ctx, e.local_expiration_secs) {
            f.liveness = None;
        }
    }
    f.cells
        .retain(|_, cell| keep_after_purge(cell, ctx, now_secs));
    f.complex.retain(|_, column| {
        if column
            .deletion
            .is_some_and(|d| purgeable(ctx, d.local_deletion_secs))
        {
            column.deletion = None;
        }
        column
            .cells
            .retain(|_, cell| keep_after_purge(cell, ctx, now_secs));
        !column.is_empty()
    });
    *f != before
}

/// The row layer's [`MergeOperator`]: last-write-wins per cell, as Cassandra.
/// Turns an expired cell into the tombstone it now is; whether the cell survives the purge.
fn keep_after_purge(cell: &mut Cell, ctx: &PurgeContext, now_secs: i64) -> bool {
    if let Cell::Live {
        ts,
        expiry: Some(e),
        ..
    } = cell
    {
        if e.is_expired(now_secs) {
            *cell = Cell::Tombstone {
                ts: *ts,
                local_deletion_secs: e.local_expiration_secs - i64::from(e.ttl_secs),
            };
        }
    }
    match cell {
        Cell::Tombstone {
            local_deletion_secs,
            ..
        } => !purgeable(ctx, *local_deletion_secs),
        Cell::Live { .. } => true,
    }
}

#[derive(Clone, Copy, Debug, Default)]
pub struct RowMerge;

impl RowMerge {
    /// The operator's stable name.
    pub const NAME: &'static str = "mosaic.rows.lww";
}

impl MergeOperator for RowMerge {
    fn name(&self) -> &str {
        Self::NAME
    }

    /// Merges versions newest first until a `Put` or `Delete` (which hides everything
    /// older). Undecodable bytes fall back to the engine's whole-value last-write-wins, so
    /// the newest bytes survive and reads report the corruption instead of a merge
    /// silently dropping it.
    fn merge(&self, user_key: &[u8], versions: &[Version<'_>]) -> Resolved {
        if let [v] = versions {
            if self.passes_through(user_key, v) {
                return Resolved {
                    ts: v.ts,
                    kind: v.kind,
                    value: v.value.to_vec(),
                };
            }
        }
        merge_versions(versions)
    }

    /// A lone `Put` or `Merge` without a deletion merges to itself, so reads need not decode
    /// and re-encode it: if its bytes do not decode, the fallback keeps them whole; if they
    /// do, no deletion means nothing is shadowed, and the encoding is canonical
    /// (`encode(decode(b)) == b`); the timestamp is its own and the kind stays (`Put` is
    /// its own barrier, a lone `Merge` has none).
    fn passes_through(&self, _user_key: &[u8], version: &Version<'_>) -> bool {
        version.kind != ValueKind::Delete && !Fragment::may_carry_deletion(version.value)
    }

    fn purge(&self, _user_key: &[u8], resolved: Resolved, ctx: &PurgeContext) -> Option<Resolved> {
        if resolved.kind == ValueKind::Delete {
            return (!ctx.tombstone_expired(resolved.ts)).then_some(resolved);
        }
        let Ok(mut f) = Fragment::decode(&resolved.value) else {
            return Some(resolved); // never drop what we cannot read
        };
        if !purge_fragment(&mut f, ctx) {
            return Some(resolved);
        }
        if f.is_empty() {
            // An empty `Put` still hides older versions unless none can exist below.
            return (resolved.kind == ValueKind::Put && !ctx.bottommost).then_some(Resolved {
                ts: resolved.ts,
                kind: ValueKind::Delete,
                value: Vec::new(),
            });
        }
        Some(Resolved {
            value: f.encode(),
            ..resolved
        })
    }
}

/// [`RowMerge::merge`] the long way: decode, merge and re-encode.
fn merge_versions(versions: &[Version<'_>]) -> Resolved {
    let mut acc: Option<Fragment> = None;
    let mut barrier = None;
    let mut ts = 0;
    for v in versions {
        ts = ts.max(v.ts);
        if v.kind == ValueKind::Delete {
            barrier = Some(ValueKind::Delete);
            break;
        }
        let Ok(fragment) = Fragment::decode(v.value) else {
            return fallback(versions);
        };
        match &mut acc {
            Some(acc) => merge_into(acc, fragment),
            None => {
                let mut f = fragment;
                apply_row_deletion(&mut f);
                acc = Some(f);
            }
        }
        if v.kind == ValueKind::Put {
            barrier = Some(ValueKind::Put);
            break;
        }
    }
    match (acc, barrier) {
        (None, _) => Resolved {
            ts,
            kind: ValueKind::Delete,
            value: Vec::new(),
        },
        (Some(f), None) => Resolved {
            ts,
            kind: ValueKind::Merge,
            value: f.encode(),
        },
        (Some(f), Some(_)) => Resolved {
            ts,
            kind: ValueKind::Put,
            value: f.encode(),
        },
    }
}

fn fallback(versions: &[Version<'_>]) -> Resolved {
    match lww_winner(versions) {
        Some(v) => Resolved {
            ts: v.ts,
            kind: v.kind,
            value: v.value.to_vec(),
        },
        None => Resolved {
            ts: 0,
            kind: ValueKind::Delete,
            value: Vec::new(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fragment::{ColumnId, FORMAT_VERSION};

    fn live(ts: i64, value: &[u8]) -> Cell {
        Cell::Live {
            ts: Timestamp(ts),
            value: value.to_vec(),
            expiry: None,
        }
    }

    fn expiring(ts: i64, value: &[u8], ttl: u32, exp: i64) -> Cell {
        Cell::Live {
            ts: Timestamp(ts),
            value: value.to_vec(),
            expiry: Some(Expiry {
                ttl_secs: ttl,
                local_expiration_secs: exp,
            }),
        }
    }

    fn tomb(ts: i64, ldt: i64) -> Cell {
        Cell::Tombstone {
            ts: Timestamp(ts),
            local_deletion_secs: ldt,
        }
    }

    fn winner(a: &Cell, b: &Cell) -> Cell {
        let mut fa = Fragment::new(FragmentKind::Row);
        fa.cells.insert(ColumnId(1), a.clone());
        let mut fb = Fragment::new(FragmentKind::Row);
        fb.cells.insert(ColumnId(1), b.clone());
        let ab = merge_fragments(&fa, &fb);
        assert_eq!(ab, merge_fragments(&fb, &fa));
        ab.cells[&ColumnId(1)].clone()
    }

    #[test]
    fn cells_reconcile_as_cassandra() {
        // Newer timestamp wins, whatever the kinds.
        assert_eq!(winner(&live(2, b"a"), &tomb(1, 99)), live(2, b"a"));
        // Tie: tombstone and expiring beat plain live cells, even with a smaller value.
        assert_eq!(winner(&live(1, b"z"), &tomb(1, 0)), tomb(1, 0));
        assert_eq!(
            winner(&live(1, b"z"), &expiring(1, b"a", 10, 5)),
            expiring(1, b"a", 10, 5)
        );
        // Tie: tombstone beats expiring, whatever the local times.
        assert_eq!(winner(&expiring(1, b"a", 10, 500), &tomb(1, 0)), tomb(1, 0));
        // Tie between tombstones (or between expiring cells): later local time wins.
        assert_eq!(winner(&tomb(1, 5), &tomb(1, 6)), tomb(1, 6));
        assert_eq!(
            winner(&expiring(1, b"z", 10, 5), &expiring(1, b"a", 10, 6)),
            expiring(1, b"a", 10, 6)
        );
        // Tie between plain cells: larger value wins.
        assert_eq!(winner(&live(1, b"a"), &live(1, b"b")), live(1, b"b"));
    }

    #[test]
    fn row_deletion_shadows_older_and_equal_cells() {
        let mut row = Fragment::new(FragmentKind::Row);
        row.cells.insert(ColumnId(1), live(5, b"old"));
        row.cells.insert(ColumnId(2), live(6, b"new"));
        row.liveness = Some(Liveness {
            ts: Timestamp(5),
            expiry: None,
        });
        let mut del = Fragment::new(FragmentKind::Row);
        del.deletion = Some(DeletionTime {
            marked_for_delete_at: Timestamp(5),
            local_deletion_secs: 0,
        });
        let merged = merge_fragments(&row, &del);
        assert_eq!(merged.liveness, None);
        assert_eq!(merged.cells.len(), 1);
        assert_eq!(merged.cells[&ColumnId(2)], live(6, b"new"));
    }

    fn version(ts: u64, kind: ValueKind, value: &[u8]) -> Version<'_> {
        Version { ts, kind, value }
    }

    #[test]
    fn puts_and_deletes_hide_older_versions() {
        let one = |id: u32, ts: i64| {
            let mut f = Fragment::new(FragmentKind::Row);
            f.cells.insert(ColumnId(id), live(ts, b"v"));
            f.encode()
        };
        let (newer, put, older) = (one(1, 3), one(2, 2), one(3, 1));
        let r = RowMerge.merge(
            b"k",
            &[
                version(3, ValueKind::Merge, &newer),
                version(2, ValueKind::Put, &put),
                version(1, ValueKind::Merge, &older),
            ],
        );
        assert_eq!(r.kind, ValueKind::Put);
        assert_eq!(r.ts, 3);
        let f = Fragment::decode(&r.value).unwrap();
        assert_eq!(
            f.cells.keys().copied().collect::<Vec<_>>(),
            [ColumnId(1), ColumnId(2)]
        );

        let r = RowMerge.merge(
            b"k",
            &[
                version(2, ValueKind::Delete, b""),
                version(1, ValueKind::Merge, &older),
            ],
        );
        assert_eq!((r.kind, r.ts), (ValueKind::Delete, 2));
        let r = RowMerge.merge(
            b"k",
            &[
                version(3, ValueKind::Merge, &newer),
                version(2, ValueKind::Delete, b""),
            ],
        );
        assert_eq!(r.kind, ValueKind::Put);
    }

    /// The lone-version shortcut answers exactly what the long way does.
    fn assert_lone_version_agrees(kind: ValueKind, value: &[u8]) {
        let v = version(7, kind, value);
        assert_eq!(
            RowMerge.merge(b"k", &[v]),
            merge_versions(&[v]),
            "{kind:?} {value:?}"
        );
        if RowMerge.passes_through(b"k", &v) {
            assert_eq!(
                merge_versions(&[v]),
                Resolved {
                    ts: 7,
                    kind,
                    value: value.to_vec()
                }
            );
        }
    }

    #[test]
    fn lone_versions_without_deletion_pass_through_unchanged() {
        let mut plain = Fragment::new(FragmentKind::Row);
        plain.liveness = Some(Liveness {
            ts: Timestamp(5),
            expiry: None,
        });
        plain.cells.insert(ColumnId(1), live(5, b"a"));
        plain.cells.insert(ColumnId(4), expiring(6, b"b", 10, 100));
        plain.cells.insert(ColumnId(9), tomb(3, 50));
        let mut deleting = plain.clone();
        deleting.deletion = Some(DeletionTime {
            marked_for_delete_at: Timestamp(5),
            local_deletion_secs: 40,
        });
        let fragments = [
            plain.encode(),
            deleting.encode(),
            Fragment::new(FragmentKind::Static).encode(),
            Fragment::partition_deletion(DeletionTime {
                marked_for_delete_at: Timestamp(9),
                local_deletion_secs: 1,
            })
            .encode(),
            b"\xffgarbage".to_vec(),
            vec![1, 0],
            Vec::new(),
        ];
        for f in &fragments {
            for kind in [ValueKind::Put, ValueKind::Merge, ValueKind::Delete] {
                assert_lone_version_agrees(kind, f);
            }
        }
        assert!(RowMerge.passes_through(b"k", &version(7, ValueKind::Put, &fragments[0])));
        assert!(!RowMerge.passes_through(b"k", &version(7, ValueKind::Put, &fragments[1])));
    }

    proptest::proptest! {
        #[test]
        fn lone_arbitrary_bytes_agree_with_the_long_way(
            value in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..24),
            flags in 0u8..8,
            put in proptest::prelude::any::<bool>(),
        ) {
            // Mostly well-formed heads, so the decoder gets past the first bytes.
            let mut bytes = vec![FORMAT_VERSION, FragmentKind::Row as u8, flags];
            bytes.extend(value);
            let kind = if put { ValueKind::Put } else { ValueKind::Merge };
            assert_lone_version_agrees(kind, &bytes);
        }
    }

    #[test]
    fn corrupt_versions_fall_back_to_whole_value_lww() {
        let good = Fragment::new(FragmentKind::Row).encode();
        let r = RowMerge.merge(
            b"k",
            &[
                version(5, ValueKind::Merge, b"\xffgarbage"),
                version(4, ValueKind::Merge, &good),
            ],
        );
        assert_eq!(r.value, b"\xffgarbage");
    }

    fn ctx(bottommost: bool, now_secs: u64, grace_secs: u64) -> PurgeContext {
        PurgeContext {
            bottommost,
            now_micros: now_secs * 1_000_000,
            gc_grace_micros: grace_secs * 1_000_000,
        }
    }

    #[test]
    fn expired_cells_become_tombstones_then_go_after_grace() {
        let mut f = Fragment::new(FragmentKind::Row);
        f.cells.insert(ColumnId(1), expiring(7, b"v", 10, 110)); // written at 100
        f.cells.insert(ColumnId(2), live(7, b"w"));
        let resolved = Resolved {
            ts: 7,
            kind: ValueKind::Merge,
            value: f.encode(),
        };
        // Not expired yet: unchanged.
        let same = RowMerge
            .purge(b"k", resolved.clone(), &ctx(true, 105, 0))
            .unwrap();
        assert_eq!(same, resolved);
        // Expired, not past grace: a tombstone dated at the write.
        let r = RowMerge
            .purge(b"k", resolved.clone(), &ctx(true, 120, 50))
            .unwrap();
        let g = Fragment::decode(&r.value).unwrap();
        assert_eq!(g.cells[&ColumnId(1)], tomb(7, 100));
        // Past grace at the bottom: gone.
        let r = RowMerge
            .purge(b"k", resolved.clone(), &ctx(true, 200, 50))
            .unwrap();
        let g = Fragment::decode(&r.value).unwrap();
        assert_eq!(g.cells.len(), 1);
        // Past grace but not at the bottom: still a tombstone.
        let r = RowMerge
            .purge(b"k", resolved, &ctx(false, 200, 50))
            .unwrap();
        let g = Fragment::decode(&r.value).unwrap();
        assert_eq!(g.cells[&ColumnId(1)], tomb(7, 100));
    }

    #[test]
    fn an_emptied_fragment_is_dropped_but_partition_deletions_stay() {
        let mut f = Fragment::new(FragmentKind::Row);
        f.cells.insert(ColumnId(1), tomb(7, 10));
        let merge = Resolved {
            ts: 7,
            kind: ValueKind::Merge,
            value: f.encode(),
        };
        assert_eq!(
            RowMerge.purge(b"k", merge.clone(), &ctx(true, 100, 10)),
            None
        );
        let put = Resolved {
            kind: ValueKind::Put,
            ..merge.clone()
        };
        // Not at the bottom nothing is purged, so the `Put` stays as it is.
        assert_eq!(
            RowMerge.purge(b"k", put.clone(), &ctx(false, 100, 10)),
            Some(put)
        );
        let pd = Fragment::partition_deletion(DeletionTime {
            marked_for_delete_at: Timestamp(7),
            local_deletion_secs: 10,
        });
        let pd = Resolved {
            ts: 7,
            kind: ValueKind::Merge,
            value: pd.encode(),
        };
        assert_eq!(
            RowMerge.purge(b"k", pd.clone(), &ctx(true, 100, 10)),
            Some(pd)
        );
    }
}
