#![allow(clippy::unwrap_used, clippy::indexing_slicing)]
//! The heterogeneous layout answers every read exactly as a store in the declared order
//! does — same entries, canonical keys, canonical order — whatever the replica index's
//! order, the filter, the range (whole table, one partition, part of one) and after a
//! reopen; and it stores each index's rows in that index's order.

use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::Arc;

use mosaic_lsm::{Options, RealFs, WriteBatch};
use mosaic_replica::{KeyOrders, Layout, LogSettings, ReplicaStore, Role, SourceId, Structure};
use mosaic_rows::key::tag;
use mosaic_rows::{
    ClusteringBound, ClusteringFilter, ColumnFilter, KeyRange, KeySchema, Order, Permutation,
};
use mosaic_types::{CqlType, CqlValue};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

fn schema() -> KeySchema {
    KeySchema::new(
        vec![CqlType::Int],
        vec![
            (CqlType::Int, Order::Asc),
            (CqlType::Text, Order::Desc),
            (CqlType::Int, Order::Asc),
        ],
    )
    .unwrap()
}

fn orders() -> Vec<Permutation> {
    vec![
        Permutation::new(vec![1, 2, 0]).unwrap(),
        Permutation::new(vec![2, 0, 1]).unwrap(),
    ]
}

fn engine() -> Options {
    Options {
        fs: Arc::new(RealFs),
        memtable_size_bytes: 8 << 10,
        level0_compaction_trigger: 2,
        table_size_bytes: 8 << 10,
        ..Options::default()
    }
}

fn open(dir: &std::path::Path, layout: Layout) -> ReplicaStore {
    ReplicaStore::open_with_keys(
        dir,
        layout,
        engine(),
        LogSettings::default(),
        Some(KeyOrders {
            schema: schema(),
            orders: orders(),
        }),
    )
    .unwrap()
}

fn role(index: u8) -> Role {
    match index {
        0 => Role::Primary,
        index => Role::Redundant {
            source: SourceId([7; 16]),
            index,
        },
    }
}

fn row(s: &KeySchema, p: i32, a: i32, b: &str, c: i32) -> Vec<u8> {
    let prefix = s.partition_prefix(&[CqlValue::Int(p)]).unwrap();
    s.row_key(
        &prefix,
        &[CqlValue::Int(a), CqlValue::Text(b.into()), CqlValue::Int(c)],
    )
    .unwrap()
}

/// Random rows, static rows, headers and range tombstones over a few partitions.
fn data(seed: u64) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let s = schema();
    let mut rng = StdRng::seed_from_u64(seed);
    let mut out = BTreeMap::new();
    let texts = ["a", "b", "bb", "c", ""];
    for _ in 0..400 {
        let p = rng.gen_range(0..4);
        let k = row(
            &s,
            p,
            rng.gen_range(0..5),
            texts[rng.gen_range(0..texts.len())],
            rng.gen_range(-3..3),
        );
        out.insert(k, format!("v{}", rng.gen::<u16>()).into_bytes());
    }
    for p in 0..4 {
        let prefix = s.partition_prefix(&[CqlValue::Int(p)]).unwrap();
        out.insert(s.static_key(&prefix), b"static".to_vec());
        out.insert(s.partition_header_key(&prefix), b"header".to_vec());
        let rt = s
            .range_tombstone_key(
                &prefix,
                &ClusteringBound::inclusive_start(vec![CqlValue::Int(1)]),
                &ClusteringBound::inclusive_end(vec![CqlValue::Int(1)]),
            )
            .unwrap();
        out.insert(rt, b"tombstone".to_vec());
    }
    out
}

fn random_filter(s: &KeySchema, rng: &mut StdRng) -> Option<ClusteringFilter> {
    if rng.gen_bool(0.2) {
        return None;
    }
    let mut columns = Vec::new();
    for col in 0..3 {
        let value = |rng: &mut StdRng| match col {
            1 => CqlValue::Text(["a", "b", "bb", "c", ""][rng.gen_range(0..5)].into()),
            0 => CqlValue::Int(rng.gen_range(0..5)),
            _ => CqlValue::Int(rng.gen_range(-3..3)),
        };
        columns.push(match rng.gen_range(0..3) {
            0 => ColumnFilter::Any,
            1 => {
                let n = rng.gen_range(1..3);
                let values: Vec<CqlValue> = (0..n).map(|_| value(rng)).collect();
                s.column_values_filter(col, &values).unwrap()
            }
            _ => {
                let lo = rng.gen_bool(0.7).then(|| (value(rng), rng.gen_bool(0.5)));
                let hi = rng.gen_bool(0.7).then(|| (value(rng), rng.gen_bool(0.5)));
                s.column_range_filter(
                    col,
                    lo.as_ref().map(|(v, i)| (v, *i)),
                    hi.as_ref().map(|(v, i)| (v, *i)),
                )
                .unwrap()
            }
        });
    }
    Some(ClusteringFilter { columns })
}

fn random_range(keys: &[Vec<u8>], rng: &mut StdRng) -> KeyRange {
    let pick = |rng: &mut StdRng| keys[rng.gen_range(0..keys.len())].clone();
    match rng.gen_range(0..4) {
        0 => KeyRange {
            start: Vec::new(),
            end: None,
        },
        1 => {
            // One partition.
            let k = pick(rng);
            let len = schema().partition_prefix_len(&k).unwrap();
            let mut end = k[..len].to_vec();
            end.push(tag::PARTITION_END);
            KeyRange {
                start: k[..len].to_vec(),
                end: Some(end),
            }
        }
        _ => {
            let (a, b) = (pick(rng), pick(rng));
            KeyRange {
                start: a.clone().min(b.clone()),
                end: Some(a.max(b)),
            }
        }
    }
}

fn read(
    store: &ReplicaStore,
    index: u8,
    range: &KeyRange,
    filter: Option<&ClusteringFilter>,
) -> Vec<(Vec<u8>, Vec<u8>)> {
    store
        .scan_filtered(role(index), range, filter)
        .unwrap()
        .map(|r| {
            let (k, e) = r.unwrap();
            (k, e.value)
        })
        .collect()
}

#[test]
fn every_order_answers_like_the_declared_one() {
    let dir = tempfile::tempdir().unwrap();
    let reference_dir = tempfile::tempdir().unwrap();
    let s = schema();
    let rows = data(1);
    let mut store = open(dir.path(), Layout::Heterogeneous);
    let reference = open(reference_dir.path(), Layout::Uniform);
    // Index 0 and 1 in their orders, index 2 in the declared order: three replicas in one
    // store, as a node holding three replica indexes of different ranges would.
    for index in 0..3u8 {
        let mut batch = WriteBatch::new();
        for (k, v) in &rows {
            batch.put(k, 1, v);
        }
        store.write(role(index), batch).unwrap();
    }
    let mut batch = WriteBatch::new();
    for (k, v) in &rows {
        batch.put(k, 1, v);
    }
    reference.write(Role::Primary, batch).unwrap();
    let structures: Vec<Structure> = store.structures().iter().map(|s| s.structure).collect();
    assert_eq!(
        structures,
        [
            Structure::Replica(0),
            Structure::Replica(1),
            Structure::Replica(2)
        ]
    );
    let keys: Vec<Vec<u8>> = rows.keys().cloned().collect();
    let mut rng = StdRng::seed_from_u64(2);
    for round in 0..300 {
        if round == 150 {
            store.flush().unwrap();
            store.close().unwrap();
            store = open(dir.path(), Layout::Heterogeneous);
        }
        let filter = random_filter(&s, &mut rng);
        let range = random_range(&keys, &mut rng);
        let expected = read(&reference, 0, &range, filter.as_ref());
        // The reference's filtered answer is the model's.
        let model: Vec<(Vec<u8>, Vec<u8>)> = rows
            .iter()
            .filter(|(k, _)| range.contains(k))
            .filter(|(k, _)| filter.as_ref().is_none_or(|f| f.passes(&s, k).unwrap()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        assert_eq!(expected, model, "reference, round {round}");
        for index in 0..3u8 {
            assert_eq!(
                read(&store, index, &range, filter.as_ref()),
                expected,
                "index {index}, round {round}, {filter:?}, {range:?}"
            );
        }
        // A point read of a row finds it under every index.
        let k = &keys[rng.gen_range(0..keys.len())];
        for index in 0..3u8 {
            assert_eq!(
                store.get(role(index), k).unwrap().map(|e| e.value),
                rows.get(k).cloned()
            );
        }
    }
    store.close().unwrap();
}

#[test]
fn each_index_stores_rows_in_its_order() {
    let dir = tempfile::tempdir().unwrap();
    let s = schema();
    let store = open(dir.path(), Layout::Heterogeneous);
    let mut batch = WriteBatch::new();
    batch.put(&row(&s, 1, 0, "b", 5), 1, b"x");
    batch.put(&row(&s, 1, 1, "a", 4), 1, b"y");
    store.write(role(1), batch).unwrap();
    store.flush().unwrap();
    store.close().unwrap();
    // Index 1 sorts by (c, a, b): the row with c = 4 is stored first, and its tree's
    // directory names the order.
    let tree = dir.path().join("replica-1-2.0.1");
    assert!(
        tree.is_dir(),
        "{:?}",
        std::fs::read_dir(dir.path()).unwrap().collect::<Vec<_>>()
    );
    let raw = mosaic_lsm::Db::open(&tree, engine()).unwrap();
    let stored: Vec<Vec<u8>> = raw
        .scan(Bound::Unbounded, Bound::Unbounded)
        .unwrap()
        .map(|r| r.unwrap().0)
        .collect();
    let perm = Permutation::new(vec![2, 0, 1]).unwrap();
    assert_eq!(
        stored,
        [
            s.permute_key(&row(&s, 1, 1, "a", 4), &perm).unwrap(),
            s.permute_key(&row(&s, 1, 0, "b", 5), &perm).unwrap()
        ]
    );
    raw.close().unwrap();
}

fn open_with(dir: &std::path::Path, orders: Vec<Permutation>) -> ReplicaStore {
    ReplicaStore::open_with_keys(
        dir,
        Layout::Heterogeneous,
        engine(),
        LogSettings::default(),
        Some(KeyOrders {
            schema: schema(),
            orders,
        }),
    )
    .unwrap()
}

fn all(store: &ReplicaStore, index: u8) -> Vec<(Vec<u8>, Vec<u8>)> {
    let whole = KeyRange {
        start: Vec::new(),
        end: None,
    };
    read(store, index, &whole, None)
}

#[test]
fn a_relayout_moves_an_index_to_its_new_order_while_writes_go_on_and_survives_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    let rows = data(3);
    let store = open(dir.path(), Layout::Heterogeneous);
    let mut batch = WriteBatch::new();
    for (k, v) in &rows {
        batch.put(k, 1, v);
    }
    store.write(role(1), batch).unwrap();
    let before = all(&store, 1);
    assert_eq!(before.len(), rows.len());
    // Index 1 moves from (2, 0, 1) to (1, 0, 2).
    let new_orders = vec![
        orders()[0].clone(),
        Permutation::new(vec![1, 0, 2]).unwrap(),
    ];
    store.set_orders(new_orders.clone()).unwrap();
    assert_eq!(store.relayout_status().len(), 1);
    assert!(dir.path().join("RELAYOUT-1").exists());
    // A few steps, then a write (to both trees), then a crash.
    assert!(store.relayout_step(50).unwrap());
    let s = schema();
    let extra = row(&s, 9, 4, "zz", 2);
    let mut batch = WriteBatch::new();
    batch.put(&extra, 2, b"late");
    store.write(role(1), batch).unwrap();
    assert_eq!(all(&store, 1).len(), rows.len() + 1);
    store.close().unwrap();

    let store = open_with(dir.path(), new_orders.clone());
    assert_eq!(store.relayout_status().len(), 1, "resumed from the marker");
    while store.relayout_step(64).unwrap() {}
    // Reads are served by the old tree until the switch.
    let expected = all(&store, 1);
    assert_eq!(expected.len(), rows.len() + 1);
    assert_eq!(store.relayout_finish().unwrap(), 1);
    assert!(store.relayout_status().is_empty());
    assert_eq!(all(&store, 1), expected);
    assert!(dir.path().join("replica-1-1.0.2").is_dir());
    assert!(!dir.path().join("replica-1-2.0.1").exists());
    assert!(!dir.path().join("RELAYOUT-1").exists());
    store.close().unwrap();
    let store = open_with(dir.path(), new_orders);
    assert_eq!(all(&store, 1), expected);
    let stats = store.heterogeneous_stats();
    assert_eq!(stats.len(), 1);
    assert_eq!(stats[0].order, vec![1, 0, 2]);
    store.close().unwrap();
}

/// A random value of a column of type `ty` from a small domain (so filters match rows).
fn value(ty: CqlType, rng: &mut StdRng) -> CqlValue {
    match ty {
        CqlType::Int => CqlValue::Int(rng.gen_range(-3..4)),
        CqlType::BigInt => CqlValue::BigInt(rng.gen_range(-2..3) * 1_000_000_007),
        _ => CqlValue::Text(["", "a", "ab", "b", "zz"][rng.gen_range(0..5)].into()),
    }
}

#[test]
fn random_schemas_orders_and_filters_answer_like_a_model() {
    for seed in 0..16u64 {
        let mut rng = StdRng::seed_from_u64(seed);
        let n = rng.gen_range(1..=4);
        let types: Vec<CqlType> = (0..n)
            .map(|_| [CqlType::Int, CqlType::Text, CqlType::BigInt][rng.gen_range(0..3)])
            .collect();
        let columns: Vec<(CqlType, Order)> = types
            .iter()
            .map(|t| {
                (
                    *t,
                    if rng.gen_bool(0.5) {
                        Order::Asc
                    } else {
                        Order::Desc
                    },
                )
            })
            .collect();
        let s = KeySchema::new(vec![CqlType::Int], columns).unwrap();
        let orders: Vec<Permutation> = (0..3)
            .map(|_| {
                let mut p: Vec<usize> = (0..n).collect();
                for i in (1..n).rev() {
                    p.swap(i, rng.gen_range(0..=i));
                }
                Permutation::new(p).unwrap()
            })
            .collect();
        let dir = tempfile::tempdir().unwrap();
        let store = ReplicaStore::open_with_keys(
            dir.path(),
            Layout::Heterogeneous,
            engine(),
            LogSettings::default(),
            Some(KeyOrders {
                schema: s.clone(),
                orders: orders.clone(),
            }),
        )
        .unwrap();
        let mut model = BTreeMap::new();
        for _ in 0..rng.gen_range(1..300) {
            let prefix = s
                .partition_prefix(&[CqlValue::Int(rng.gen_range(0..3))])
                .unwrap();
            let values: Vec<CqlValue> = types.iter().map(|t| value(*t, &mut rng)).collect();
            model.insert(s.row_key(&prefix, &values).unwrap(), vec![rng.gen::<u8>()]);
        }
        // Indexes 0–2 in their orders, 3 in the declared one; half flushed.
        for index in 0..4u8 {
            let mut batch = WriteBatch::new();
            for (k, v) in &model {
                batch.put(k, 1, v);
            }
            store.write(role(index), batch).unwrap();
        }
        store.flush().unwrap();
        let keys: Vec<Vec<u8>> = model.keys().cloned().collect();
        for round in 0..60 {
            let filter = ClusteringFilter {
                columns: (0..n)
                    .map(|col| match rng.gen_range(0..3) {
                        0 => ColumnFilter::Any,
                        1 => {
                            let vs: Vec<CqlValue> = (0..rng.gen_range(1..4))
                                .map(|_| value(types[col], &mut rng))
                                .collect();
                            s.column_values_filter(col, &vs).unwrap()
                        }
                        _ => {
                            let lo = rng
                                .gen_bool(0.7)
                                .then(|| (value(types[col], &mut rng), rng.gen_bool(0.5)));
                            let hi = rng
                                .gen_bool(0.7)
                                .then(|| (value(types[col], &mut rng), rng.gen_bool(0.5)));
                            s.column_range_filter(
                                col,
                                lo.as_ref().map(|(v, i)| (v, *i)),
                                hi.as_ref().map(|(v, i)| (v, *i)),
                            )
                            .unwrap()
                        }
                    })
                    .collect(),
            };
            let range = if rng.gen_bool(0.3) {
                KeyRange {
                    start: Vec::new(),
                    end: None,
                }
            } else {
                let (a, b) = (
                    keys[rng.gen_range(0..keys.len())].clone(),
                    keys[rng.gen_range(0..keys.len())].clone(),
                );
                KeyRange {
                    start: a.clone().min(b.clone()),
                    end: Some(a.max(b)),
                }
            };
            let expected: Vec<(Vec<u8>, Vec<u8>)> = model
                .iter()
                .filter(|(k, _)| range.contains(k))
                .filter(|(k, _)| filter.passes(&s, k).unwrap())
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            for index in 0..4u8 {
                assert_eq!(
                    read(&store, index, &range, Some(&filter)),
                    expected,
                    "seed {seed} round {round} index {index} orders {orders:?} {filter:?}"
                );
            }
        }
        store.close().unwrap();
    }
}

/// Pages of `limit` entries through `range` under `index`, each continuing after the last
/// key of the one before, as a coordinator pages; between pages, `between` may write.
fn paged(
    store: &ReplicaStore,
    index: u8,
    range: &KeyRange,
    limit: usize,
    mut between: impl FnMut(usize),
) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut out: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
    let mut start = range.start.clone();
    for page in 0.. {
        let piece = KeyRange {
            start: start.clone(),
            end: range.end.clone(),
        };
        // As a replica answers: it stops reading at the page's last entry.
        let taken: Vec<(Vec<u8>, Vec<u8>)> = store
            .scan_filtered(role(index), &piece, None)
            .unwrap()
            .take(limit)
            .map(|r| {
                let (k, e) = r.unwrap();
                (k, e.value)
            })
            .collect();
        let done = taken.len() < limit;
        if let Some((k, _)) = taken.last() {
            start = k.clone();
            start.push(0);
        }
        out.extend(taken);
        if done {
            break;
        }
        between(page);
    }
    out
}

#[test]
fn paging_a_large_partition_sorts_it_once_and_sees_writes_between_pages() {
    let dir = tempfile::tempdir().unwrap();
    let s = schema();
    let store = open(dir.path(), Layout::Heterogeneous);
    let mut rows = BTreeMap::new();
    let mut batch = WriteBatch::new();
    for i in 0..3000 {
        let k = row(&s, 5, i % 17, &format!("t{}", i % 13), i);
        batch.put(&k, 1, b"v");
        rows.insert(k, b"v".to_vec());
    }
    store.write(role(1), batch).unwrap();
    let prefix = s.partition_prefix(&[CqlValue::Int(5)]).unwrap();
    let range = s.partition_range(&prefix);
    let scanned = |store: &ReplicaStore| {
        store
            .heterogeneous_stats()
            .iter()
            .find(|t| t.index == 1)
            .map_or(0, |t| t.rows_scanned)
    };
    let before = scanned(&store);
    let all = paged(&store, 1, &range, 100, |_| {});
    assert_eq!(all.len(), rows.len());
    assert_eq!(all, rows.clone().into_iter().collect::<Vec<_>>());
    // 30 pages: the partition is sorted once (3,000 rows) and each page reads its own
    // rows (3,000 in all) — not 30 sorts of 3,000.
    let cost = scanned(&store) - before;
    assert!(cost <= 3 * 3000, "{cost} rows examined for 30 pages");

    // A write between pages makes the remembered order stale: pages after it see it.
    let late = row(&s, 5, 16, "zz", 99_999);
    let all = paged(&store, 1, &range, 100, |page| {
        if page == 3 {
            let mut b = WriteBatch::new();
            b.put(&late, 2, b"late");
            store.write(role(1), b).unwrap();
        }
    });
    rows.insert(late, b"late".to_vec());
    assert_eq!(all, rows.into_iter().collect::<Vec<_>>());
    store.close().unwrap();
}

/// `range` of index `index`'s tree read with `scan_stored`, `page` entries at a time, each
/// page resumed after the stored key the previous one ended with: `(key, stored key, value)`.
fn stored_pages(
    store: &ReplicaStore,
    index: u8,
    range: &KeyRange,
    page: usize,
) -> Vec<(Vec<u8>, Vec<u8>, Vec<u8>)> {
    let mut out: Vec<(Vec<u8>, Vec<u8>, Vec<u8>)> = Vec::new();
    loop {
        let after = out.last().map(|(_, stored, _)| stored.clone());
        let got: Vec<_> = store
            .scan_stored(role(index), range, after.as_deref())
            .unwrap()
            .take(page)
            .map(|r| {
                let e = r.unwrap();
                (e.key, e.stored, e.entry.value)
            })
            .collect();
        let done = got.len() < page;
        out.extend(got);
        if done {
            return out;
        }
    }
}

#[test]
fn stored_order_scans_page_through_the_same_entries_in_each_trees_order() {
    let dir = tempfile::tempdir().unwrap();
    let s = schema();
    let rows = data(3);
    let mut store = open(dir.path(), Layout::Heterogeneous);
    for index in 0..3u8 {
        let mut batch = WriteBatch::new();
        for (k, v) in &rows {
            batch.put(k, 1, v);
        }
        store.write(role(index), batch).unwrap();
    }
    let keys: Vec<Vec<u8>> = rows.keys().cloned().collect();
    let mut rng = StdRng::seed_from_u64(4);
    for round in 0..200 {
        if round == 100 {
            store.flush().unwrap();
            store.close().unwrap();
            store = open(dir.path(), Layout::Heterogeneous);
        }
        let range = random_range(&keys, &mut rng);
        let model: Vec<(Vec<u8>, Vec<u8>)> = rows
            .iter()
            .filter(|(k, _)| range.contains(k))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let page = rng.gen_range(1..40);
        for index in 0..3u8 {
            let got = stored_pages(&store, index, &range, page);
            let what = format!("index {index}, round {round}, page {page}, {range:?}");
            // In the tree's order: stored keys ascending, each the row's key in that order.
            let perm = match index {
                0 | 1 => orders()[usize::from(index)].clone(),
                _ => Permutation::identity(3),
            };
            assert!(got.windows(2).all(|w| w[0].1 < w[1].1), "{what}");
            for (key, stored, _) in &got {
                assert_eq!(*stored, s.permute_key(key, &perm).unwrap(), "{what}");
            }
            // The same entries as the model's, once each.
            let mut entries: Vec<(Vec<u8>, Vec<u8>)> =
                got.into_iter().map(|(k, _, v)| (k, v)).collect();
            entries.sort();
            assert_eq!(entries, model, "{what}");
        }
    }
    store.close().unwrap();
}
