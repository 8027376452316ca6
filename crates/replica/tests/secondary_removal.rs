#![allow(clippy::unwrap_used, clippy::indexing_slicing)]
//! Scenario: ELECT's secondary removal on the node holding a source's redundant copies.
//! A key list from the source (its coded table's keys, each with the newest timestamp the
//! table holds) is recorded durably; the node then reports those keys as covered (it must
//! answer for them together with the primary), and a purge drops exactly the versions at
//! or below the listed timestamps from the source's tree: newer versions, other keys and
//! other sources stay. Lists survive a restart, a covered version arriving late (repair, a
//! hint) is dropped again by the next flush, and layouts that do not code refuse lists.

use std::ops::Bound;
use std::sync::Arc;

use mosaic_erasure::meta::ShardMeta;
use mosaic_erasure::EcMeta;
use mosaic_lsm::{Options, RealFs, WriteBatch};
use mosaic_replica::covered::Shard;
use mosaic_replica::{Layout, LogSettings, ReplicaStore, RingRanges, Role, SourceId, Structure};
use mosaic_rows::key::encode_token;
use mosaic_types::{HostId, Token};

const A: SourceId = SourceId([0xaa; 16]);
const B: SourceId = SourceId([0xbb; 16]);

fn key(i: i64) -> Vec<u8> {
    let mut k = encode_token(Token(i * 1_000_003)).to_vec();
    k.extend_from_slice(format!("row{i:05}").as_bytes());
    k
}

fn open(dir: &std::path::Path, layout: Layout) -> ReplicaStore {
    let engine = Options {
        fs: Arc::new(RealFs),
        memtable_size_bytes: 8 << 10,
        level0_compaction_trigger: 2,
        level1_size_bytes: 32 << 10,
        table_size_bytes: 16 << 10,
        ..Options::default()
    };
    let log = LogSettings {
        split_segments: 2,
        runs_max: 3,
        ring: RingRanges::new([Token(0)]),
    };
    ReplicaStore::open(dir, layout, engine, log).unwrap()
}

/// Slot 0 of a (3, 2) group with empty shards (the lists' group; not decoded here).
fn shard() -> Shard {
    let meta = EcMeta {
        group: [9; 16],
        epoch: 1,
        k: 2,
        n: 3,
        stripe_bytes: 1 << 16,
        coded_len: 0,
        shards: (0..3u8)
            .map(|i| ShardMeta {
                hash: EcMeta::content_hash(&[]),
                size: 0,
                node: HostId([i; 16]),
                position: i,
            })
            .collect(),
    };
    Shard { meta, slot: 0 }
}

fn put(store: &ReplicaStore, source: SourceId, i: i64, ts: u64, value: &str) {
    let mut b = WriteBatch::new();
    b.put(&key(i), ts, value.as_bytes());
    store
        .write(Role::Redundant { source, index: 1 }, b)
        .unwrap();
}

fn get(store: &ReplicaStore, source: SourceId, i: i64) -> Option<String> {
    store
        .get(Role::Redundant { source, index: 1 }, &key(i))
        .unwrap()
        .map(|e| String::from_utf8(e.value).unwrap())
}

fn entries_of(store: &ReplicaStore, source: SourceId) -> u64 {
    store
        .structures()
        .iter()
        .filter(|s| s.structure == Structure::Source(source))
        .flat_map(|s| &s.levels)
        .flat_map(|l| &l.tables)
        .map(|t| t.entries)
        .sum()
}

#[test]
fn a_key_list_drops_covered_versions_and_keeps_newer_ones() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path(), Layout::ErasureTiered);
    for i in 0..300 {
        put(&store, A, i, 10, &format!("a{i}"));
        put(&store, B, i, 10, &format!("b{i}"));
    }
    store.flush().unwrap();
    // Written after the source coded its table: newer than the list says.
    for i in (0..300).step_by(10) {
        put(&store, A, i, 30, &format!("a{i}-new"));
    }
    // The source's table 7 holds keys 0..200 at ts 20 (they were overwritten there).
    let list: Vec<(Vec<u8>, u64)> = (0..200).map(|i| (key(i), 20)).collect();
    assert!(store.ec_cover(A, 7, shard(), &list).unwrap());
    assert!(
        !store.ec_cover(A, 7, shard(), &list).unwrap(),
        "a resent list is no news"
    );
    let covers = |store: &ReplicaStore, source, i: i64| {
        store.ec_covers(
            Role::Redundant { source, index: 1 },
            Bound::Included(&key(i)),
            Bound::Included(&key(i)),
        )
    };
    assert!(covers(&store, A, 5));
    assert!(!covers(&store, A, 250));
    assert!(
        !covers(&store, B, 5),
        "another source's rows are not covered"
    );
    assert!(!store.ec_covers(Role::Primary, Bound::Unbounded, Bound::Unbounded));
    assert_eq!(store.ec_covered_keys(), 200);

    assert_eq!(store.ec_purge().unwrap(), 1);
    assert_eq!(store.ec_purge().unwrap(), 0, "nothing new to purge");
    let check = |store: &ReplicaStore| {
        for i in 0..300 {
            let want = match i {
                _ if i % 10 == 0 => Some(format!("a{i}-new")),
                _ if i < 200 => None,
                _ => Some(format!("a{i}")),
            };
            assert_eq!(get(store, A, i), want, "key {i}");
            assert_eq!(get(store, B, i), Some(format!("b{i}")));
        }
    };
    check(&store);
    // One entry per readable key: 20 rewritten covered keys, 100 uncovered ones.
    assert_eq!(entries_of(&store, A), 20 + 100);

    // A covered version arriving late (a repair's write) does not come back.
    put(&store, A, 3, 15, "late");
    store.flush().unwrap();
    assert_eq!(get(&store, A, 3), None);

    store.close().unwrap();
    let store = open(dir.path(), Layout::ErasureTiered);
    assert!(covers(&store, A, 5), "lists survive a restart");
    check(&store);
    put(&store, A, 4, 12, "late again");
    store.compact().unwrap();
    assert_eq!(get(&store, A, 4), None);
    store.close().unwrap();
}

#[test]
fn layouts_that_do_not_code_refuse_key_lists() {
    for layout in [Layout::Uniform, Layout::MultiLsm, Layout::Decoupled] {
        let dir = tempfile::tempdir().unwrap();
        let store = open(dir.path(), layout);
        let err = store
            .ec_cover(A, 1, shard(), &vec![(key(1), 5)])
            .unwrap_err();
        assert!(
            err.to_string().contains("erasure-tiered"),
            "{layout}: {err}"
        );
        assert!(!store.ec_covers(
            Role::Redundant {
                source: A,
                index: 1
            },
            Bound::Unbounded,
            Bound::Unbounded
        ));
        store.close().unwrap();
    }
}
