#![allow(clippy::unwrap_used, clippy::indexing_slicing)]
#![allow(clippy::disallowed_methods)] // Tests run real threads; the seam binds the code under test.
//! Scenario: power losses at seeded file-system calls while a `heterogeneous` store takes
//! writes (synced one by one) under two replica indexes and goes through three re-layouts —
//! `set_orders` to new orders, `relayout_step` batches between writes, `relayout_finish` —
//! on `mosaic_env::CrashFs`, which keeps only fsynced bytes and directory entries (the
//! `RELAYOUT-<i>` markers, both trees, the old tree's directory moved aside).
//!
//! After each crash the store reopens on the image with the orders the table had then,
//! and must hold every acknowledged write (or a later one of the same key) and nothing
//! never written, in canonical order through `get` and `scan`; the re-layout then finishes
//! (the trees end in the table's orders), and reads before and after agree, and after
//! another reopen. `MOSAIC_CRASH_SEEDS` (60 by default) and `MOSAIC_SEED` as in
//! `mosaic-lsm`'s `crash_image.rs`.

use std::collections::{BTreeMap, HashMap};
use std::ops::Bound;
use std::path::Path;
use std::sync::atomic::Ordering;

#[path = "common/crash.rs"]
mod crash;
use crash::options;
use mosaic_env::{CrashFs, SplitMix64};
use mosaic_lsm::WriteBatch;
use mosaic_replica::{KeyOrders, Layout, LogSettings, ReplicaStore, Role, SourceId};
use mosaic_rows::{KeySchema, Order, Permutation};
use mosaic_types::{CqlType, CqlValue};

const WRITES: usize = 360;
const KEYS: u64 = 120;
const CRASHES_PER_SEED: usize = 6;
/// Entries a re-layout step copies.
const STEP: usize = 16;
/// Writes after which the table's orders change (`set_orders`).
const ALTERS: [usize; 3] = [50, 150, 250];

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

/// The table's orders after `alters` order changes: index 0 leaves the declared order,
/// index 1 moves back and forth (so a tree is dropped where one of its order was before).
fn orders(alters: usize) -> Vec<Permutation> {
    let p = |o: [usize; 3]| Permutation::new(o.to_vec()).unwrap();
    match alters {
        0 => vec![p([0, 1, 2]), p([2, 0, 1])],
        1 => vec![p([1, 2, 0]), p([1, 0, 2])],
        2 => vec![p([1, 2, 0]), p([2, 0, 1])],
        _ => vec![p([1, 2, 0]), p([1, 0, 2])],
    }
}

fn open(fs: &CrashFs, alters: usize) -> mosaic_lsm::Result<ReplicaStore> {
    ReplicaStore::open_with_keys(
        Path::new("/h"),
        Layout::Heterogeneous,
        options(fs),
        LogSettings::default(),
        Some(KeyOrders {
            schema: schema(),
            orders: orders(alters),
        }),
    )
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

/// Key `k`: a row of one of three partitions, all clustering columns varying.
fn key(s: &KeySchema, k: u64) -> Vec<u8> {
    let texts = ["a", "bb", "c", ""];
    let prefix = s
        .partition_prefix(&[CqlValue::Int((k % 3) as i32)])
        .unwrap();
    s.row_key(
        &prefix,
        &[
            CqlValue::Int(((k / 3) % 5) as i32),
            CqlValue::Text(texts[((k / 15) % 4) as usize].into()),
            CqlValue::Int((k / 60) as i32 - 1),
        ],
    )
    .unwrap()
}

fn value(i: usize) -> Vec<u8> {
    let mut v = format!("{i:08}|").into_bytes();
    v.resize(60, b'.');
    v
}

fn seeds() -> Vec<u64> {
    mosaic_env::crash::crash_seeds(60, 0x4e1a_7047)
}

/// The mark of a crash point: writes acknowledged, and order changes begun (a crash
/// inside `set_orders` comes after the table's schema changed).
fn mark(acked: usize, alters: usize) -> u64 {
    (acked as u64) << 8 | alters as u64
}

/// Every entry of index `index`, through `scan` (canonical keys, checked ascending)
/// and `get` (checked to agree).
fn read_all(store: &ReplicaStore, index: u8, ctx: &str) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut last: Option<Vec<u8>> = None;
    let scan = store
        .scan(role(index), Bound::Unbounded, Bound::Unbounded)
        .unwrap_or_else(|e| panic!("{ctx}: scanning index {index}: {e}"));
    for item in scan {
        let (k, entry) = item.unwrap_or_else(|e| panic!("{ctx}: scanning index {index}: {e}"));
        assert!(
            last.as_ref().is_none_or(|l| *l < k),
            "{ctx}: index {index} scans out of canonical order"
        );
        last = Some(k.clone());
        out.insert(k, entry.value);
    }
    for (k, v) in &out {
        let got = store
            .get(role(index), k)
            .unwrap_or_else(|e| panic!("{ctx}: reading index {index}: {e}"));
        assert_eq!(
            got.map(|e| e.value).as_ref(),
            Some(v),
            "{ctx}: index {index}: get and scan disagree"
        );
    }
    out
}

/// What the whole run wrote: `(index, key)` of write i.
type Log = Vec<(u8, u64)>;

/// Checks index `index`'s entries against the first `acked` writes of `log`.
fn check(
    s: &KeySchema,
    got: &BTreeMap<Vec<u8>, Vec<u8>>,
    log: &Log,
    acked: usize,
    index: u8,
    ctx: &str,
) {
    let mut floor: HashMap<u64, usize> = HashMap::new();
    for (i, (x, k)) in log.iter().enumerate().take(acked) {
        if *x == index {
            floor.insert(*k, i);
        }
    }
    let by_key: HashMap<Vec<u8>, u64> = (0..KEYS).map(|k| (key(s, k), k)).collect();
    for (stored, v) in got {
        let k = by_key
            .get(stored)
            .unwrap_or_else(|| panic!("{ctx}: index {index} holds a key never written"));
        let j: usize = std::str::from_utf8(&v[..8]).unwrap().parse().unwrap();
        assert!(
            j < log.len() && log[j] == (index, *k),
            "{ctx}: index {index} key {k} holds write {j}, never written to it"
        );
        assert_eq!(*v, value(j), "{ctx}: index {index} key {k}: value damaged");
        if let Some(i) = floor.get(k) {
            assert!(
                j >= *i,
                "{ctx}: index {index} key {k} went back from write {i} to {j}"
            );
        }
    }
    for (k, i) in &floor {
        assert!(
            got.contains_key(&key(s, *k)),
            "{ctx}: index {index} key {k} lost acknowledged write {i}"
        );
    }
}

/// One run: writes with three re-layouts among them; returns the images checked.
fn run(seed: u64) -> usize {
    let s = schema();
    let mut rng = SplitMix64::new(seed);
    // A run makes some 1,450 file-system calls: points spread over them.
    let (fs, marker) =
        CrashFs::with_crash_points(&mut rng, Path::new("/h"), CRASHES_PER_SEED, 1480).unwrap();
    let store = open(&fs, 0).unwrap();
    let mut log: Log = Vec::with_capacity(WRITES);
    let mut alters = 0;
    let mut copying = false;
    for i in 0..WRITES {
        if ALTERS.get(alters) == Some(&i) {
            alters += 1;
            marker.store(mark(i, alters), Ordering::SeqCst);
            store.set_orders(orders(alters)).unwrap();
            copying = true;
        }
        let index = rng.below(2) as u8;
        let k = rng.below(KEYS);
        let mut batch = WriteBatch::new();
        batch.put(&key(&s, k), i as u64 + 1, &value(i));
        store.write(role(index), batch).unwrap();
        log.push((index, k));
        marker.store(mark(i + 1, alters), Ordering::SeqCst);
        if copying && rng.below(3) == 0 {
            copying = store.relayout_step(STEP).unwrap();
            if !copying {
                assert!(store.relayout_finish().unwrap() > 0, "MOSAIC_SEED={seed}");
            }
        }
    }
    assert!(
        !copying,
        "MOSAIC_SEED={seed}: the run ended before its re-layouts"
    );
    store.close().unwrap();
    let images = fs.take_images();
    for (op, mark, image) in &images {
        let (acked, alters) = ((mark >> 8) as usize, (mark & 0xff) as usize);
        let ctx = format!(
            "MOSAIC_SEED={seed}: crash at file-system call {op}, {acked} writes acknowledged, \
             {alters} order changes begun"
        );
        let store = open(image, alters)
            .unwrap_or_else(|e| panic!("{ctx}: the store does not reopen after the crash: {e}"));
        let before: Vec<_> = (0..2).map(|x| read_all(&store, x, &ctx)).collect();
        for (x, got) in before.iter().enumerate() {
            check(&s, got, &log, acked, x as u8, &ctx);
        }
        // Resume whatever re-layout is under way, then switch.
        let mut steps = 0;
        while store
            .relayout_step(STEP)
            .unwrap_or_else(|e| panic!("{ctx}: resuming the re-layout: {e}"))
        {
            steps += 1;
            assert!(steps < 10_000, "{ctx}: the re-layout never completes");
        }
        for x in 0..2 {
            assert_eq!(
                read_all(&store, x, &ctx),
                before[x as usize],
                "{ctx}: index {x}: reads changed while copying"
            );
        }
        store
            .relayout_finish()
            .unwrap_or_else(|e| panic!("{ctx}: finishing the re-layout: {e}"));
        assert!(
            store.relayout_status().is_empty(),
            "{ctx}: a re-layout is left after finishing"
        );
        let check_orders = |store: &ReplicaStore, when: &str| {
            for t in store.heterogeneous_stats() {
                assert_eq!(
                    t.order,
                    orders(alters)[t.index].positions(),
                    "{ctx}: {when}, index {} is not in the table's order",
                    t.index
                );
            }
        };
        check_orders(&store, "after finishing");
        for x in 0..2 {
            let after = read_all(&store, x, &ctx);
            assert_eq!(
                after, before[x as usize],
                "{ctx}: index {x}: reads changed by the switch"
            );
        }
        store.close().unwrap();
        let store = open(image, alters)
            .unwrap_or_else(|e| panic!("{ctx}: the store does not reopen after the switch: {e}"));
        check_orders(&store, "after reopening");
        for x in 0..2 {
            assert_eq!(
                read_all(&store, x, &ctx),
                before[x as usize],
                "{ctx}: index {x}: reads changed by a reopen after the switch"
            );
        }
        store.close().unwrap();
    }
    images.len()
}

#[test]
fn a_relayout_interrupted_by_power_losses_resumes_and_keeps_every_acknowledged_write() {
    let mut images = 0;
    for seed in seeds() {
        images += run(seed);
    }
    assert!(images > 0, "no crash point was reached");
}
