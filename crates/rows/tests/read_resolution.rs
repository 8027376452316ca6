//! Scenario: writes and deletions of every granularity (cell, row, clustering range,
//! partition), arriving in any timestamp order and partly compacted, read back through the
//! key layout, the merge operator and the resolver, give what Cassandra's semantics say —
//! checked against a naive model, for whole partitions and for clustering slices.

// Test code: a panic is the failure report.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use std::collections::BTreeMap;

use mosaic_lsm::{MergeOperator, PurgeContext, ValueKind, Version};
use mosaic_rows::{
    resolve_partition, Cell, ClusteringBound, ColumnId, DeletionTime, Expiry, Fragment,
    FragmentKind, KeyRange, KeySchema, Liveness, Order, PartitionPrefix, ResolveError, RowMerge,
    SliceOp,
};
use mosaic_types::{CqlType, CqlValue, Timestamp};
use proptest::prelude::*;

const C1: [i32; 3] = [0, 1, 2];
const C2: [&str; 3] = ["", "a", "b"];
const STATIC_COL: ColumnId = ColumnId(10);

fn schema() -> KeySchema {
    KeySchema::new(
        vec![CqlType::Text],
        vec![(CqlType::Int, Order::Asc), (CqlType::Text, Order::Desc)],
    )
    .unwrap()
}

fn pk(name: &str) -> Vec<CqlValue> {
    vec![CqlValue::Text(name.to_owned())]
}

fn clustering(c1: i32, c2: &str) -> Vec<CqlValue> {
    vec![CqlValue::Int(c1), CqlValue::Text(c2.to_owned())]
}

/// A slice condition: `c1 = x` (and `c2 op y`), or `c1 op x`.
#[derive(Clone, Debug)]
struct Slice {
    c1: i32,
    c2: Option<&'static str>,
    op: SliceOp,
}

impl Slice {
    fn prefix(&self) -> Vec<CqlValue> {
        match self.c2 {
            Some(c2) => clustering(self.c1, c2),
            None => vec![CqlValue::Int(self.c1)],
        }
    }

    fn matches(&self, c1: i32, c2: &str) -> bool {
        let test = |ord: std::cmp::Ordering| match self.op {
            SliceOp::Eq => ord.is_eq(),
            SliceOp::Lt => ord.is_lt(),
            SliceOp::Le => ord.is_le(),
            SliceOp::Gt => ord.is_gt(),
            SliceOp::Ge => ord.is_ge(),
        };
        match self.c2 {
            Some(v) => c1 == self.c1 && test(c2.cmp(v)),
            None => test(c1.cmp(&self.c1)),
        }
    }
}

#[derive(Clone, Debug)]
enum Op {
    Insert {
        c1: i32,
        c2: &'static str,
        cells: Vec<(u32, i32)>,
    },
    Update {
        c1: i32,
        c2: &'static str,
        col: u32,
        value: i32,
    },
    DeleteCell {
        c1: i32,
        c2: &'static str,
        col: u32,
    },
    DeleteRow {
        c1: i32,
        c2: &'static str,
    },
    DeleteSlice(Slice),
    DeletePartition,
    SetStatic(i32),
}

fn slice() -> impl Strategy<Value = Slice> {
    let op = prop_oneof![
        Just(SliceOp::Eq),
        Just(SliceOp::Lt),
        Just(SliceOp::Le),
        Just(SliceOp::Gt),
        Just(SliceOp::Ge)
    ];
    (
        prop::sample::select(&C1[..]),
        proptest::option::of(prop::sample::select(&C2[..])),
        op,
    )
        .prop_map(|(c1, c2, op)| Slice { c1, c2, op })
}

fn op() -> impl Strategy<Value = Op> {
    let c1 = prop::sample::select(&C1[..]);
    let c2 = prop::sample::select(&C2[..]);
    let col = 1u32..3;
    prop_oneof![
        4 => (c1.clone(), c2.clone(), proptest::collection::vec((col.clone(), 0i32..3), 0..3))
            .prop_map(|(c1, c2, cells)| Op::Insert { c1, c2, cells }),
        4 => (c1.clone(), c2.clone(), col.clone(), 0i32..3)
            .prop_map(|(c1, c2, col, value)| Op::Update { c1, c2, col, value }),
        1 => (c1.clone(), c2.clone(), col).prop_map(|(c1, c2, col)| Op::DeleteCell { c1, c2, col }),
        1 => (c1, c2).prop_map(|(c1, c2)| Op::DeleteRow { c1, c2 }),
        1 => slice().prop_map(Op::DeleteSlice),
        1 => Just(Op::DeletePartition),
        1 => (0i32..3).prop_map(Op::SetStatic),
    ]
}

/// Engine model: versions per key; compaction merges some keys' versions into one.
/// One stored version: engine timestamp, kind, value.
type Stored = (u64, ValueKind, Vec<u8>);

#[derive(Default)]
struct Engine {
    versions: BTreeMap<Vec<u8>, Vec<Stored>>,
}

impl Engine {
    fn put(&mut self, key: Vec<u8>, ts: i64, fragment: &Fragment) {
        self.versions.entry(key).or_default().push((
            ts as u64,
            ValueKind::Merge,
            fragment.encode(),
        ));
    }

    fn merged(&self, versions: &[Stored]) -> mosaic_lsm::Resolved {
        let mut sorted: Vec<_> = versions.iter().collect();
        sorted.sort_by_key(|v| std::cmp::Reverse(v.0));
        let vs: Vec<Version<'_>> = sorted
            .iter()
            .map(|(ts, kind, value)| Version {
                ts: *ts,
                kind: *kind,
                value,
            })
            .collect();
        RowMerge.merge(b"", &vs)
    }

    /// Merges the versions of every key whose hash picks it, purging as an upper level.
    fn compact(&mut self, seed: u64) {
        let ctx = PurgeContext {
            bottommost: false,
            now_micros: 0,
            gc_grace_micros: 0,
        };
        let keys: Vec<Vec<u8>> = self.versions.keys().cloned().collect();
        for (i, key) in keys.into_iter().enumerate() {
            if (seed >> (i % 64)) & 1 == 0 {
                continue;
            }
            let versions = &self.versions[&key];
            if let Some(r) = RowMerge.purge(&key, self.merged(versions), &ctx) {
                self.versions.insert(key, vec![(r.ts, r.kind, r.value)]);
            }
        }
    }

    fn read(&self, ranges: &[KeyRange]) -> Vec<(Vec<u8>, Vec<u8>)> {
        self.versions
            .iter()
            .filter(|(k, _)| ranges.iter().any(|r| r.contains(k)))
            .map(|(k, v)| (k.clone(), self.merged(v)))
            .filter(|(_, r)| r.kind != ValueKind::Delete)
            .map(|(k, r)| (k, r.value))
            .collect()
    }
}

fn deletion(ts: i64) -> DeletionTime {
    DeletionTime {
        marked_for_delete_at: Timestamp(ts),
        local_deletion_secs: 0,
    }
}

fn live(ts: i64, value: i32) -> Cell {
    Cell::Live {
        ts: Timestamp(ts),
        value: value.to_be_bytes().to_vec(),
        expiry: None,
    }
}

fn apply(engine: &mut Engine, schema: &KeySchema, p: &PartitionPrefix, op: &Op, ts: i64) {
    let row_key = |c1: i32, c2: &str| schema.row_key(p, &clustering(c1, c2)).unwrap();
    match op {
        Op::Insert { c1, c2, cells } => {
            let mut f = Fragment::new(FragmentKind::Row);
            f.liveness = Some(Liveness {
                ts: Timestamp(ts),
                expiry: None,
            });
            for (col, value) in cells {
                f.cells.insert(ColumnId(*col), live(ts, *value));
            }
            engine.put(row_key(*c1, c2), ts, &f);
        }
        Op::Update { c1, c2, col, value } => {
            let mut f = Fragment::new(FragmentKind::Row);
            f.cells.insert(ColumnId(*col), live(ts, *value));
            engine.put(row_key(*c1, c2), ts, &f);
        }
        Op::DeleteCell { c1, c2, col } => {
            let mut f = Fragment::new(FragmentKind::Row);
            f.cells.insert(
                ColumnId(*col),
                Cell::Tombstone {
                    ts: Timestamp(ts),
                    local_deletion_secs: 0,
                },
            );
            engine.put(row_key(*c1, c2), ts, &f);
        }
        Op::DeleteRow { c1, c2 } => {
            let mut f = Fragment::new(FragmentKind::Row);
            f.deletion = Some(deletion(ts));
            engine.put(row_key(*c1, c2), ts, &f);
        }
        Op::DeleteSlice(slice) => {
            let (start, end) = schema.slice_bounds(&slice.prefix(), slice.op).unwrap();
            // A slice selecting nothing (e.g. `c2 < ''`) writes no tombstone.
            if let Ok(key) = schema.range_tombstone_key(p, &start, &end) {
                engine.put(key, ts, &Fragment::range_deletion(deletion(ts)));
            }
        }
        Op::DeletePartition => {
            engine.put(
                schema.partition_header_key(p),
                ts,
                &Fragment::partition_deletion(deletion(ts)),
            );
        }
        Op::SetStatic(value) => {
            let mut f = Fragment::new(FragmentKind::Static);
            f.cells.insert(STATIC_COL, live(ts, *value));
            engine.put(schema.static_key(p), ts, &f);
        }
    }
}

type ModelRow = (i32, String, bool, BTreeMap<u32, i32>);

/// Cassandra's semantics, computed directly (timestamps are unique, so no ties).
fn model(ops: &[(Op, i64)], filter: Option<&Slice>) -> (Option<i32>, Vec<ModelRow>) {
    let partition_deleted = ops
        .iter()
        .filter(|(op, _)| matches!(op, Op::DeletePartition))
        .map(|(_, ts)| *ts)
        .max()
        .unwrap_or(0);
    let static_value = ops
        .iter()
        .filter_map(|(op, ts)| match op {
            Op::SetStatic(v) => Some((*ts, *v)),
            _ => None,
        })
        .max()
        .filter(|(ts, _)| *ts > partition_deleted)
        .map(|(_, v)| v);
    let mut rows = Vec::new();
    for c1 in C1 {
        // Descending second column.
        for c2 in C2.iter().rev() {
            if filter.is_some_and(|s| !s.matches(c1, c2)) {
                continue;
            }
            let deleted = ops
                .iter()
                .filter(|(op, _)| match op {
                    Op::DeleteRow { c1: a, c2: b } => *a == c1 && b == c2,
                    Op::DeleteSlice(s) => s.matches(c1, c2),
                    Op::DeletePartition => true,
                    _ => false,
                })
                .map(|(_, ts)| *ts)
                .max()
                .unwrap_or(0);
            let marker = ops
                .iter()
                .filter(|(op, ts)| {
                    *ts > deleted
                        && matches!(op, Op::Insert { c1: a, c2: b, .. } if *a == c1 && b == c2)
                })
                .count()
                > 0;
            let mut cells = BTreeMap::new();
            for col in 1u32..3 {
                let latest = ops
                    .iter()
                    .filter_map(|(op, ts)| match op {
                        Op::Insert {
                            c1: a,
                            c2: b,
                            cells,
                        } if *a == c1 && b == c2 => cells
                            .iter()
                            .rev()
                            .find(|(c, _)| *c == col)
                            .map(|(_, v)| (*ts, Some(*v))),
                        Op::Update {
                            c1: a,
                            c2: b,
                            col: c,
                            value,
                        } if *a == c1 && b == c2 && *c == col => Some((*ts, Some(*value))),
                        Op::DeleteCell {
                            c1: a,
                            c2: b,
                            col: c,
                        } if *a == c1 && b == c2 && *c == col => Some((*ts, None)),
                        _ => None,
                    })
                    .max();
                if let Some((ts, Some(v))) = latest {
                    if ts > deleted {
                        cells.insert(col, v);
                    }
                }
            }
            if marker || !cells.is_empty() {
                rows.push((c1, c2.to_string(), marker, cells));
            }
        }
    }
    (static_value, rows)
}

fn observed(entries: Vec<(Vec<u8>, Vec<u8>)>) -> (Option<i32>, Vec<ModelRow>) {
    let Some(part) = resolve_partition(&schema(), entries, 0).unwrap() else {
        return (None, Vec::new());
    };
    let int = |b: &[u8]| i32::from_be_bytes(b.try_into().unwrap());
    let static_value = part
        .static_row
        .as_ref()
        .and_then(|r| r.cells.get(&STATIC_COL))
        .map(|c| int(&c.value));
    let rows = part
        .rows
        .into_iter()
        .map(|r| {
            let (CqlValue::Int(c1), CqlValue::Text(c2)) = (&r.clustering[0], &r.clustering[1])
            else {
                panic!("unexpected clustering {:?}", r.clustering);
            };
            let cells = r
                .cells
                .iter()
                .map(|(id, c)| (id.0, int(&c.value)))
                .collect();
            (*c1, c2.clone(), r.liveness.is_some(), cells)
        })
        .collect();
    (static_value, rows)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn reads_match_the_model(
        (ops, stamps) in proptest::collection::vec((op(), any::<bool>()), 1..25)
            .prop_flat_map(|ops| {
                let n = ops.len() as i64;
                (Just(ops), Just((1..=n).collect::<Vec<_>>()).prop_shuffle())
            }),
        compaction_seeds in proptest::collection::vec(any::<u64>(), 0..3),
        read_slice in slice(),
    ) {
        let schema = schema();
        let p = schema.partition_prefix(&pk("p")).unwrap();
        let q = schema.partition_prefix(&pk("q")).unwrap();
        let mut engine = Engine::default();
        let mut applied = Vec::new();
        for (i, ((op, other_partition), ts)) in ops.iter().zip(&stamps).enumerate() {
            if *other_partition {
                apply(&mut engine, &schema, &q, op, *ts);
            } else {
                apply(&mut engine, &schema, &p, op, *ts);
                applied.push((op.clone(), *ts));
            }
            if let Some(seed) = compaction_seeds.get(i % 8) {
                engine.compact(seed.rotate_left(i as u32));
            }
        }

        let whole = engine.read(&[schema.partition_range(&p)]);
        prop_assert_eq!(observed(whole), model(&applied, None));

        let slice_range = schema.clustering_slice(&p, &read_slice.prefix(), read_slice.op).unwrap();
        let sliced = engine.read(&[schema.partition_head_range(&p), slice_range]);
        prop_assert_eq!(observed(sliced), model(&applied, Some(&read_slice)));
    }
}

fn entry(key: Vec<u8>, f: &Fragment) -> (Vec<u8>, Vec<u8>) {
    (key, f.encode())
}

#[test]
fn ttl_expiry_hides_cells_and_markers_but_not_the_rest_of_the_row() {
    let schema = schema();
    let p = schema.partition_prefix(&pk("p")).unwrap();
    let expiry = |at| {
        Some(Expiry {
            ttl_secs: 10,
            local_expiration_secs: at,
        })
    };
    let mut a = Fragment::new(FragmentKind::Row);
    a.liveness = Some(Liveness {
        ts: Timestamp(1),
        expiry: expiry(100),
    });
    a.cells.insert(
        ColumnId(1),
        Cell::Live {
            ts: Timestamp(1),
            value: vec![1],
            expiry: expiry(100),
        },
    );
    a.cells.insert(ColumnId(2), live(1, 7));
    let mut b = Fragment::new(FragmentKind::Row);
    b.liveness = Some(Liveness {
        ts: Timestamp(1),
        expiry: expiry(100),
    });
    let entries = vec![
        entry(schema.row_key(&p, &clustering(0, "a")).unwrap(), &a),
        entry(schema.row_key(&p, &clustering(0, "")).unwrap(), &b),
    ];
    // Before expiry both rows are there.
    let before = resolve_partition(&schema, entries.clone(), 99)
        .unwrap()
        .unwrap();
    assert_eq!(before.rows.len(), 2);
    assert_eq!(before.rows[0].cells.len(), 2);
    // At expiry: row a keeps its non-TTL cell (so it is still live, without marker); row b
    // had only an expiring marker and is gone.
    let after = resolve_partition(&schema, entries, 100).unwrap().unwrap();
    assert_eq!(after.rows.len(), 1);
    assert_eq!(after.rows[0].clustering, clustering(0, "a"));
    assert_eq!(after.rows[0].liveness, None);
    assert_eq!(
        after.rows[0].cells.keys().copied().collect::<Vec<_>>(),
        [ColumnId(2)]
    );
}

#[test]
fn a_tombstone_opened_before_the_slice_still_applies() {
    // DELETE WHERE c1 >= 0 AND c1 <= 2 covers the slice c1 = 1 entirely; neither of its
    // bounds falls inside the slice, yet the slice read sees it through the partition head.
    let schema = schema();
    let p = schema.partition_prefix(&pk("p")).unwrap();
    let rt = schema
        .range_tombstone_key(
            &p,
            &ClusteringBound::inclusive_start(vec![CqlValue::Int(0)]),
            &ClusteringBound::inclusive_end(vec![CqlValue::Int(2)]),
        )
        .unwrap();
    let mut engine = Engine::default();
    engine.put(rt, 5, &Fragment::range_deletion(deletion(5)));
    let mut old = Fragment::new(FragmentKind::Row);
    old.cells.insert(ColumnId(1), live(4, 1));
    engine.put(schema.row_key(&p, &clustering(1, "a")).unwrap(), 4, &old);
    let mut new = Fragment::new(FragmentKind::Row);
    new.cells.insert(ColumnId(1), live(6, 2));
    engine.put(schema.row_key(&p, &clustering(1, "b")).unwrap(), 6, &new);

    let slice = schema
        .clustering_slice(&p, &[CqlValue::Int(1)], SliceOp::Eq)
        .unwrap();
    let (_, rows) = observed(engine.read(&[schema.partition_head_range(&p), slice]));
    assert_eq!(
        rows,
        vec![(1, "b".to_owned(), false, BTreeMap::from([(1, 2)]))]
    );
}

#[test]
fn malformed_entry_streams_are_errors() {
    let schema = schema();
    let p = schema.partition_prefix(&pk("p")).unwrap();
    let q = schema.partition_prefix(&pk("q")).unwrap();
    let row = Fragment::new(FragmentKind::Row);
    let k1 = schema.row_key(&p, &clustering(0, "a")).unwrap();
    let k2 = schema.row_key(&p, &clustering(1, "a")).unwrap();
    let out_of_order = vec![entry(k2.clone(), &row), entry(k1.clone(), &row)];
    assert_eq!(
        resolve_partition(&schema, out_of_order, 0),
        Err(ResolveError::OutOfOrder)
    );
    let kq = schema.row_key(&q, &clustering(0, "a")).unwrap();
    let mut two = vec![entry(k1.clone(), &row), entry(kq, &row)];
    two.sort();
    assert_eq!(
        resolve_partition(&schema, two, 0),
        Err(ResolveError::OtherPartition)
    );
    let wrong_kind = vec![entry(k1, &Fragment::partition_deletion(deletion(1)))];
    assert!(matches!(
        resolve_partition(&schema, wrong_kind, 0),
        Err(ResolveError::KindMismatch { .. })
    ));
    let bound = schema.bound_key(&p, &ClusteringBound::bottom()).unwrap();
    assert_eq!(
        resolve_partition(&schema, vec![entry(bound, &row)], 0),
        Err(ResolveError::UnexpectedBound)
    );
    assert_eq!(
        resolve_partition(&schema, Vec::<(Vec<u8>, Vec<u8>)>::new(), 0),
        Ok(None)
    );
}
