#![allow(clippy::unwrap_used, clippy::indexing_slicing)]
#![allow(clippy::disallowed_methods)] // Tests run real threads and measure real time; the seam binds the code under test.
//! The conformance suite: every layout stores, reads, scans, overwrites, deletes and
//! reopens alike under mixed roles, and agrees with a `BTreeMap` model per role over
//! random operations. The decoupled layout runs with tiny memtables and a small log
//! (2 segments per split, S = 3) so flushes, splits and merge-sorts happen.
//!
//! As in the cluster, a key's role follows from its token: a fixed ring of four tokens,
//! owned by this node, A, B and A, gives each ring range one role, and reads over a range
//! are made one role's range at a time.

use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::Arc;

use mosaic_lsm::{Entry, Options, RealFs, WriteBatch};
use mosaic_replica::{Layout, LogSettings, ReplicaStore, RingRanges, Role, SourceId, Structure};
use mosaic_rows::key::encode_token;
use mosaic_types::Token;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// The layouts that store any byte keys. The heterogeneous layout re-keys rows by their
/// clustering columns, so it needs row-layer keys: `tests/heterogeneous.rs` checks it
/// against the declared order.
const BYTE_KEY_LAYOUTS: [Layout; 4] = [
    Layout::Uniform,
    Layout::MultiLsm,
    Layout::Decoupled,
    Layout::ErasureTiered,
];

#[path = "common/ring.rs"]
mod ring;
use ring::{A, B, RING};
/// The role of each ring range `(RING[i-1], RING[i]]`; the wrap-around (two key ranges,
/// groups 0 and 4) belongs to `RING[0]`'s owner.
const OWNERS: [Option<SourceId>; 4] = [None, Some(A), Some(B), Some(A)];

fn role_of_group(g: usize) -> Role {
    match OWNERS[g % RING.len()] {
        None => Role::Primary,
        Some(source) => Role::Redundant { source, index: 1 },
    }
}

fn group_of_token(t: i64) -> usize {
    RING.partition_point(|r| *r < t)
}

fn role_of_key(key: &[u8]) -> Role {
    let t = mosaic_rows::key::decode_token(key).unwrap();
    role_of_group(group_of_token(t.0))
}

/// The key range of ring group `g`: `[start, end)`.
fn group_bounds(g: usize) -> (Bound<Vec<u8>>, Bound<Vec<u8>>) {
    let after = |t: i64| encode_token(Token(t + 1)).to_vec();
    let start = match g {
        0 => Bound::Unbounded,
        g => Bound::Included(after(RING[g - 1])),
    };
    let end = match RING.get(g) {
        Some(t) => Bound::Excluded(after(*t)),
        None => Bound::Unbounded,
    };
    (start, end)
}

fn key(token: i64, suffix: &str) -> Vec<u8> {
    let mut k = encode_token(Token(token)).to_vec();
    k.extend_from_slice(suffix.as_bytes());
    k
}

fn engine() -> Options {
    Options {
        fs: Arc::new(RealFs),
        memtable_size_bytes: 4 << 10,
        block_cache_bytes: 64 << 10,
        level0_compaction_trigger: 2,
        level0_stall_tables: 8,
        level1_size_bytes: 16 << 10,
        table_size_bytes: 8 << 10,
        ..Options::default()
    }
}

fn log_settings() -> LogSettings {
    LogSettings {
        split_segments: 2,
        runs_max: 3,
        ring: RingRanges::new(RING.map(Token)),
    }
}

fn open(dir: &std::path::Path, layout: Layout) -> ReplicaStore {
    ReplicaStore::open(dir, layout, engine(), log_settings())
        .unwrap_or_else(|e| panic!("opening {layout}: {e}"))
}

/// Microseconds since the epoch: writes stamped near now, as clients stamp them, so
/// compaction keeps tombstones (it purges those older than gc grace by the wall clock).
fn now() -> u64 {
    static NOW: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *NOW.get_or_init(|| {
        let since = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap();
        u64::try_from(since.as_micros()).unwrap()
    })
}

/// Writes `value` at `now() + ts`.
fn put(store: &ReplicaStore, key: &[u8], ts: u64, value: &[u8]) {
    let mut b = WriteBatch::new();
    b.put(key, now() + ts, value);
    store.write(role_of_key(key), b).unwrap();
}

/// Deletes at `now() + ts`.
fn delete(store: &ReplicaStore, key: &[u8], ts: u64) {
    let mut b = WriteBatch::new();
    b.delete(key, now() + ts);
    store.write(role_of_key(key), b).unwrap();
}

fn get(store: &ReplicaStore, key: &[u8]) -> Option<Vec<u8>> {
    store
        .get(role_of_key(key), key)
        .unwrap()
        .map(|e: Entry| e.value)
}

/// Every live entry of ring group `g`, read under its role.
fn scan_group(store: &ReplicaStore, g: usize) -> Vec<(Vec<u8>, Vec<u8>)> {
    let (start, end) = group_bounds(g);
    let as_ref = |b: &Bound<Vec<u8>>| match b {
        Bound::Included(k) => Bound::Included(k.clone()),
        Bound::Excluded(k) => Bound::Excluded(k.clone()),
        Bound::Unbounded => Bound::Unbounded,
    };
    let (start, end) = (as_ref(&start), as_ref(&end));
    store
        .scan(
            role_of_group(g),
            start.as_ref().map(|k| k.as_slice()),
            end.as_ref().map(|k| k.as_slice()),
        )
        .unwrap()
        .map(|r| r.map(|(k, e)| (k, e.value)).unwrap())
        .collect()
}

/// Every live entry, group by group.
fn scan_all(store: &ReplicaStore) -> Vec<(Vec<u8>, Vec<u8>)> {
    (0..=RING.len())
        .flat_map(|g| scan_group(store, g))
        .collect()
}

/// Keys spread over every ring group (and so every role).
fn spread_keys(n: usize) -> Vec<Vec<u8>> {
    let step = u64::MAX / n as u64;
    (0..n)
        .map(|i| {
            key(
                i64::MIN.wrapping_add((step * i as u64) as i64) + 1,
                &format!("k{i}"),
            )
        })
        .collect()
}

#[test]
fn mixed_roles_read_back_under_their_role() {
    for layout in BYTE_KEY_LAYOUTS {
        let dir = tempfile::tempdir().unwrap();
        let store = open(dir.path(), layout);
        let keys = spread_keys(400);
        for (i, k) in keys.iter().enumerate() {
            put(
                &store,
                k,
                1,
                format!("value-{i}-{}", "x".repeat(i % 50)).as_bytes(),
            );
        }
        for (i, k) in keys.iter().enumerate() {
            let want = format!("value-{i}-{}", "x".repeat(i % 50));
            assert_eq!(get(&store, k).as_deref(), Some(want.as_bytes()), "{layout}");
        }
        assert_eq!(get(&store, &key(5, "absent")), None, "{layout}");
        assert!(
            store.counters().flushes > 0,
            "{layout}: tiny memtables must flush"
        );
        store.close().unwrap();
    }
}

#[test]
fn scans_read_each_role_range_in_order() {
    for layout in BYTE_KEY_LAYOUTS {
        let dir = tempfile::tempdir().unwrap();
        let store = open(dir.path(), layout);
        let mut keys = spread_keys(300);
        for k in &keys {
            put(&store, k, 7, k);
        }
        keys.sort();
        let got = scan_all(&store);
        let want: Vec<(Vec<u8>, Vec<u8>)> = keys.iter().map(|k| (k.clone(), k.clone())).collect();
        assert_eq!(got, want, "{layout}");
        // A bounded scan inside one group.
        let g2: Vec<&Vec<u8>> = keys
            .iter()
            .filter(|k| role_of_key(k) == role_of_group(2))
            .collect();
        let (lo, hi) = (g2[3], g2[10]);
        let part: Vec<Vec<u8>> = store
            .scan(role_of_key(lo), Bound::Included(lo), Bound::Excluded(hi))
            .unwrap()
            .map(|r| r.unwrap().0)
            .collect();
        assert_eq!(
            part,
            g2[3..10].iter().map(|k| (*k).clone()).collect::<Vec<_>>(),
            "{layout}"
        );
        store.close().unwrap();
    }
}

#[test]
fn overwrites_resolve_last_write_wins_by_timestamp() {
    for layout in BYTE_KEY_LAYOUTS {
        let dir = tempfile::tempdir().unwrap();
        let store = open(dir.path(), layout);
        let keys = spread_keys(50);
        for k in &keys {
            put(&store, k, 20, b"newest");
        }
        store.flush().unwrap();
        for k in &keys {
            put(&store, k, 10, b"older, arrived later");
        }
        for (i, k) in keys.iter().enumerate() {
            if i % 2 == 0 {
                put(&store, k, 30, b"newer still");
            }
        }
        for (i, k) in keys.iter().enumerate() {
            let want: &[u8] = if i % 2 == 0 {
                b"newer still"
            } else {
                b"newest"
            };
            assert_eq!(get(&store, k).as_deref(), Some(want), "{layout}");
        }
        store.compact().unwrap();
        for (i, k) in keys.iter().enumerate() {
            let want: &[u8] = if i % 2 == 0 {
                b"newer still"
            } else {
                b"newest"
            };
            assert_eq!(
                get(&store, k).as_deref(),
                Some(want),
                "{layout} after compaction"
            );
        }
        store.close().unwrap();
    }
}

#[test]
fn deletes_hide_older_versions_only() {
    for layout in BYTE_KEY_LAYOUTS {
        let dir = tempfile::tempdir().unwrap();
        let store = open(dir.path(), layout);
        let keys = spread_keys(60);
        for k in &keys {
            put(&store, k, 10, b"v");
        }
        store.flush().unwrap();
        for (i, k) in keys.iter().enumerate() {
            // Every third delete is older than the value, so it changes nothing.
            delete(&store, k, if i % 3 == 0 { 5 } else { 15 });
        }
        for (i, k) in keys.iter().enumerate() {
            let want: Option<&[u8]> = if i % 3 == 0 { Some(b"v") } else { None };
            assert_eq!(get(&store, k).as_deref(), want, "{layout}");
        }
        assert_eq!(scan_all(&store).len(), keys.len().div_ceil(3), "{layout}");
        store.close().unwrap();
    }
}

#[test]
fn reopening_keeps_everything_flushed_or_not() {
    for layout in BYTE_KEY_LAYOUTS {
        let dir = tempfile::tempdir().unwrap();
        let keys = spread_keys(500);
        let store = open(dir.path(), layout);
        for (i, k) in keys.iter().enumerate() {
            put(&store, k, 1, format!("{i}").as_bytes());
        }
        let before = scan_all(&store);
        assert!(
            store.memtable_bytes() > 0,
            "{layout}: some writes only in the WAL"
        );
        store.close().unwrap();
        let store = open(dir.path(), layout);
        assert_eq!(scan_all(&store), before, "{layout}");
        for (i, k) in keys.iter().enumerate() {
            assert_eq!(
                get(&store, k),
                Some(format!("{i}").into_bytes()),
                "{layout}"
            );
        }
        store.close().unwrap();
    }
}

#[test]
fn a_directory_keeps_its_layout() {
    for layout in BYTE_KEY_LAYOUTS {
        let dir = tempfile::tempdir().unwrap();
        let store = open(dir.path(), layout);
        put(&store, &key(1, "a"), 1, b"x");
        store.close().unwrap();
        for other in BYTE_KEY_LAYOUTS.into_iter().filter(|l| *l != layout) {
            let e = ReplicaStore::open(dir.path(), other, engine(), log_settings()).unwrap_err();
            assert!(
                e.to_string().contains(layout.name()),
                "{other} over {layout}: {e}"
            );
        }
        let store = open(dir.path(), layout);
        assert_eq!(store.layout(), layout);
        assert_eq!(get(&store, &key(1, "a")), Some(b"x".to_vec()));
        store.close().unwrap();
    }
}

#[test]
fn uniform_opens_an_engine_directory_written_before_layouts() {
    let dir = tempfile::tempdir().unwrap();
    let db = mosaic_lsm::Db::open(dir.path(), engine()).unwrap();
    db.put(&key(3, "old"), 1, b"kept").unwrap();
    db.close().unwrap();
    let store = open(dir.path(), Layout::Uniform);
    assert_eq!(get(&store, &key(3, "old")), Some(b"kept".to_vec()));
    store.close().unwrap();
}

#[test]
fn multi_lsm_keeps_a_tree_per_source() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path(), Layout::MultiLsm);
    let keys = spread_keys(100);
    for k in &keys {
        put(&store, k, 1, b"v");
    }
    let names: Vec<Structure> = store.structures().iter().map(|s| s.structure).collect();
    assert_eq!(
        names,
        [
            Structure::Primary,
            Structure::Source(A),
            Structure::Source(B)
        ]
    );
    assert!(dir.path().join("primary").is_dir());
    assert!(dir.path().join(format!("src-{A}")).is_dir());
    // A role with no tree reads nothing; another role's tree is not consulted.
    let c = SourceId([0xcc; 16]);
    let k = &keys[50];
    assert_eq!(
        store
            .get(
                Role::Redundant {
                    source: c,
                    index: 1
                },
                k
            )
            .unwrap(),
        None
    );
    assert_eq!(
        store
            .scan(
                Role::Redundant {
                    source: c,
                    index: 1
                },
                Bound::Unbounded,
                Bound::Unbounded
            )
            .unwrap()
            .count(),
        0
    );
    assert!(!dir.path().join(format!("src-{c}")).exists());
    store.close().unwrap();
    let store = open(dir.path(), Layout::MultiLsm);
    assert_eq!(store.structures().len(), 3);
    store.close().unwrap();
}

#[test]
fn decoupled_sends_redundant_copies_to_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path(), Layout::Decoupled);
    let keys = spread_keys(1000);
    for k in &keys {
        put(&store, k, 1, &[7u8; 100]);
    }
    store.flush().unwrap();
    let stats = store.structures();
    assert_eq!(
        stats.iter().map(|s| s.structure).collect::<Vec<_>>(),
        [Structure::Primary, Structure::Log]
    );
    let primary_keys = keys
        .iter()
        .filter(|k| role_of_key(k) == Role::Primary)
        .count() as u64;
    let user = |s: &Structure| {
        stats
            .iter()
            .find(|x| x.structure == *s)
            .map(|x| x.counters.user_bytes_written)
            .unwrap()
    };
    assert!(user(&Structure::Primary) > 0 && user(&Structure::Log) > 0);
    // About a third of the token space is this node's primary ranges.
    assert!(user(&Structure::Log) > user(&Structure::Primary));
    assert!(primary_keys > 0);
    assert!(dir.path().join("log").is_dir() && dir.path().join("primary").is_dir());
    let total = store.counters();
    assert_eq!(
        total.user_bytes_written,
        user(&Structure::Primary) + user(&Structure::Log)
    );
    assert!(stats.iter().all(|s| s.counters.flushes > 0));
    // ~70 KiB of redundant copies through 4 KiB memtables: the log split its segments
    // into range groups and merge-sorted groups that reached S runs.
    store.wait_for_compactions().unwrap();
    let log = stats
        .iter()
        .find(|s| s.structure == Structure::Log)
        .unwrap();
    let log = store
        .structures()
        .into_iter()
        .find(|s| s.structure == log.structure)
        .unwrap();
    assert!(log.counters.splits > 0, "{:?}", log.counters);
    assert!(log.counters.merge_sorts > 0, "{:?}", log.counters);
    assert_eq!(log.counters.compaction_bytes_written, 0);
    for k in &keys {
        assert_eq!(get(&store, k), Some(vec![7u8; 100]));
    }
    store.close().unwrap();
}

/// The model: per role, key → (timestamp, value or tombstone).
type Model = BTreeMap<String, BTreeMap<Vec<u8>, (u64, Option<Vec<u8>>)>>;

fn role_name(role: Role) -> String {
    match role {
        Role::Primary => "primary".into(),
        Role::Redundant { source, .. } => source.to_string(),
    }
}

fn model_get(model: &Model, key: &[u8]) -> Option<Vec<u8>> {
    model
        .get(&role_name(role_of_key(key)))
        .and_then(|m| m.get(key))
        .and_then(|(_, v)| v.clone())
}

fn model_apply(model: &mut Model, key: &[u8], ts: u64, value: Option<Vec<u8>>) {
    let m = model.entry(role_name(role_of_key(key))).or_default();
    match m.get(key) {
        Some((old, _)) if *old > ts => {}
        _ => {
            m.insert(key.to_vec(), (ts, value));
        }
    }
}

fn model_scan_group(model: &Model, g: usize) -> Vec<(Vec<u8>, Vec<u8>)> {
    let (start, end) = group_bounds(g);
    let Some(m) = model.get(&role_name(role_of_group(g))) else {
        return Vec::new();
    };
    m.range::<Vec<u8>, _>((start, end))
        .filter_map(|(k, (_, v))| v.clone().map(|v| (k.clone(), v)))
        .collect()
}

#[test]
fn random_operations_agree_with_a_model_per_role() {
    let seed: u64 = std::env::var("MOSAIC_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(rand::random);
    eprintln!("seed {seed} (rerun with MOSAIC_SEED={seed})");
    for layout in BYTE_KEY_LAYOUTS {
        let mut rng = StdRng::seed_from_u64(seed);
        let dir = tempfile::tempdir().unwrap();
        let mut store = open(dir.path(), layout);
        let mut model = Model::new();
        let pool: Vec<Vec<u8>> = (0..300).map(|i| key(rng.gen(), &format!("p{i}"))).collect();
        for step in 0..4000u64 {
            // Unique timestamps in random order, so arrival order never decides; near now,
            // as compaction purges tombstones older than gc grace by the wall clock.
            let ts = now() + rng.gen_range(0..1u64 << 30) * 4096 + step;
            let k = pool[rng.gen_range(0..pool.len())].clone();
            let at = format!("{layout}, seed {seed}, step {step}");
            match rng.gen_range(0..100) {
                0..=49 => {
                    let len = rng.gen_range(1..200);
                    let v: Vec<u8> = (0..len).map(|_| rng.gen()).collect();
                    put(&store, &k, ts - now(), &v);
                    model_apply(&mut model, &k, ts, Some(v));
                }
                50..=64 => {
                    delete(&store, &k, ts - now());
                    model_apply(&mut model, &k, ts, None);
                }
                65..=69 => {
                    // A batch of several keys of one role.
                    let role = role_of_key(&k);
                    let mut b = WriteBatch::new();
                    for other in pool.iter().filter(|o| role_of_key(o) == role).take(5) {
                        b.put(other, ts, b"batch");
                        model_apply(&mut model, other, ts, Some(b"batch".to_vec()));
                    }
                    store.write(role, b).unwrap();
                }
                70..=89 => assert_eq!(get(&store, &k), model_get(&model, &k), "{at}"),
                90..=95 => {
                    let g = rng.gen_range(0..=RING.len());
                    assert_eq!(scan_group(&store, g), model_scan_group(&model, g), "{at}");
                }
                96..=97 => store.flush().unwrap(),
                _ => {
                    store.close().unwrap();
                    store = open(dir.path(), layout);
                }
            }
        }
        for k in &pool {
            assert_eq!(
                get(&store, k),
                model_get(&model, k),
                "{layout}, seed {seed}, end"
            );
        }
        for g in 0..=RING.len() {
            assert_eq!(
                scan_group(&store, g),
                model_scan_group(&model, g),
                "{layout}, end"
            );
        }
        store.close().unwrap();
    }
}
