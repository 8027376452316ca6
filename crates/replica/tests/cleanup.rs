#![allow(clippy::unwrap_used, clippy::indexing_slicing)]
#![allow(clippy::disallowed_methods)] // Writes are stamped by the wall clock, as clients stamp them, so compaction keeps tombstones.
//! Cleanup under every layout: a store holding copies of ranges in roles it no longer
//! has (a range it lost, a range whose role changed from a redundant copy to primary)
//! drops exactly those from each structure — gone from the tables, tombstones included —
//! while every entry it still owns reads back under its role.

use std::collections::BTreeMap;
use std::sync::Arc;

use mosaic_lsm::{Options, RealFs, WriteBatch};
use mosaic_replica::{
    KeyOrders, Layout, LogSettings, Ownership, ReplicaStore, RingRanges, Role, SourceId, Structure,
};
use mosaic_rows::key::encode_token;
use mosaic_rows::{KeyRange, KeySchema, Order, Permutation};
use mosaic_types::{CqlType, CqlValue, Token};

#[path = "common/ring.rs"]
mod ring;
use ring::{A, B, RING};

fn copy_of(source: SourceId, index: u8) -> Role {
    Role::Redundant { source, index }
}

/// The roles the node stored each ring group's keys under before the change: group 0 (and
/// 4, the wrap-around) as primary; group 1 as A's copy and, re-homed, as primary; group 2
/// as B's second copy; group 3 as A's copy.
fn roles_before(g: usize) -> Vec<Role> {
    match g {
        1 => vec![copy_of(A, 1), Role::Primary],
        2 => vec![copy_of(B, 2)],
        3 => vec![copy_of(A, 1)],
        _ => vec![Role::Primary],
    }
}

/// Its role now: group 2 is no longer this node's.
fn role_now(g: usize) -> Option<Role> {
    match g {
        2 => None,
        3 => Some(copy_of(A, 1)),
        _ => Some(Role::Primary),
    }
}

fn group_of(key: &[u8]) -> usize {
    let t = mosaic_rows::decode_token(key).unwrap();
    RING.partition_point(|r| *r < t.0)
}

/// Group `g`'s keys: `[after RING[g-1], after RING[g])`.
fn group_range(g: usize) -> KeyRange {
    let after = |t: i64| encode_token(Token(t + 1)).to_vec();
    KeyRange {
        start: g.checked_sub(1).map(|p| after(RING[p])).unwrap_or_default(),
        end: RING.get(g).map(|t| after(*t)),
    }
}

fn schema() -> KeySchema {
    KeySchema::new(
        vec![CqlType::Int],
        vec![(CqlType::Int, Order::Asc), (CqlType::Int, Order::Desc)],
    )
    .unwrap()
}

fn engine() -> Options {
    Options {
        fs: Arc::new(RealFs),
        memtable_size_bytes: 16 << 10,
        level0_compaction_trigger: 2,
        level0_stall_tables: 8,
        level1_size_bytes: 32 << 10,
        table_size_bytes: 8 << 10,
        ..Options::default()
    }
}

fn open(dir: &std::path::Path, layout: Layout) -> ReplicaStore {
    let log = LogSettings {
        split_segments: 2,
        runs_max: 3,
        ring: RingRanges::new(RING.map(Token)),
    };
    let keys = KeyOrders {
        schema: schema(),
        orders: vec![
            Permutation::new(vec![0, 1]).unwrap(),
            Permutation::new(vec![1, 0]).unwrap(),
            Permutation::new(vec![1, 0]).unwrap(),
        ],
    };
    ReplicaStore::open_with_keys(dir, layout, engine(), log, Some(keys)).unwrap()
}

fn now() -> u64 {
    let since = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap();
    u64::try_from(since.as_micros()).unwrap()
}

/// Rows of 60 partitions (a tombstone among each partition's rows), by key: whether it is
/// a live row.
fn data() -> BTreeMap<Vec<u8>, bool> {
    let s = schema();
    let mut out = BTreeMap::new();
    for p in 0..60 {
        let prefix = s.partition_prefix(&[CqlValue::Int(p)]).unwrap();
        for c in 0..6 {
            let key = s
                .row_key(&prefix, &[CqlValue::Int(c), CqlValue::Int(-c)])
                .unwrap();
            out.insert(key, c != 5);
        }
    }
    out
}

/// The structures of `layout` with the keys each should hold after the cleanup.
fn expected(layout: Layout, data: &BTreeMap<Vec<u8>, bool>) -> BTreeMap<Structure, u64> {
    let mut out = BTreeMap::new();
    for key in data.keys() {
        let Some(role) = role_now(group_of(key)) else {
            continue;
        };
        let structure = match (layout, role) {
            (Layout::Uniform, _) => Structure::Shared,
            (Layout::Heterogeneous, role) => Structure::Replica(role.index()),
            (_, Role::Primary) => Structure::Primary,
            (Layout::Decoupled, _) => Structure::Log,
            (_, Role::Redundant { source, .. }) => Structure::Source(source),
        };
        *out.entry(structure).or_default() += 1;
    }
    out
}

#[test]
fn cleanup_drops_what_each_structure_no_longer_owns_under_every_layout() {
    let data = data();
    for layout in Layout::ALL {
        let tmp = tempfile::tempdir().unwrap();
        let store = open(tmp.path(), layout);
        let ts = now();
        for (key, live) in &data {
            for role in roles_before(group_of(key)) {
                let mut b = WriteBatch::new();
                if *live {
                    b.put(key, ts, &[b'v'; 200]);
                } else {
                    b.delete(key, ts);
                }
                store.write(role, b).unwrap();
            }
        }
        store.flush().unwrap();
        let ownership =
            Ownership::new((0..=RING.len()).filter_map(|g| Some((group_range(g), role_now(g)?))));
        let report = store.cleanup(ownership).unwrap();
        assert!(report.dropped_versions > 0, "{layout}: {report:?}");
        assert!(
            report.bytes_after() < report.bytes_before(),
            "{layout}: {report:?}"
        );

        // Physically: each structure's tables hold exactly the keys it owns (one version
        // each, tombstones counted), and a structure owning nothing is empty.
        let want = expected(layout, &data);
        for st in store.structures() {
            let entries: u64 = st
                .levels
                .iter()
                .flat_map(|l| &l.tables)
                .map(|t| t.entries)
                .sum();
            let bytes: u64 = st
                .levels
                .iter()
                .flat_map(|l| &l.tables)
                .map(|t| t.size_bytes)
                .sum();
            let owned = want.get(&st.structure).copied().unwrap_or(0);
            assert_eq!(entries, owned, "{layout} {:?}", st.structure);
            if owned == 0 {
                assert_eq!(bytes, 0, "{layout} {:?}", st.structure);
            }
        }
        // A layout with a structure per source or replica index had one of a role the
        // node no longer has at all (B's copies, the third replica).
        let emptied = store
            .structures()
            .iter()
            .any(|st| !want.contains_key(&st.structure));
        let per_role = !matches!(layout, Layout::Uniform | Layout::Decoupled);
        assert_eq!(emptied, per_role, "{layout}");

        // Everything owned reads back under its role; what is not is gone.
        for (key, live) in &data {
            let g = group_of(key);
            match role_now(g) {
                Some(role) => {
                    let got = store.get(role, key).unwrap();
                    if *live {
                        assert_eq!(got.map(|e| e.value), Some(vec![b'v'; 200]), "{layout}");
                    }
                }
                None => {
                    for role in roles_before(g) {
                        assert!(store.get(role, key).unwrap().is_none(), "{layout}");
                    }
                }
            }
        }
        // The old copy of group 1 is gone from A's copies; group 2 from everywhere.
        for (g, role) in [(1, copy_of(A, 1)), (2, copy_of(B, 2))] {
            if layout == Layout::Uniform {
                continue;
            }
            let left = store
                .scan_stored(role, &group_range(g), None)
                .unwrap()
                .count();
            assert_eq!(left, 0, "{layout}: group {g} under {role:?}");
        }

        // A cleanup with nothing to drop changes nothing, and a reopened store still
        // holds what the cleanup kept.
        let again =
            Ownership::new((0..=RING.len()).filter_map(|g| Some((group_range(g), role_now(g)?))));
        assert_eq!(
            store.cleanup(again).unwrap().dropped_versions,
            0,
            "{layout}"
        );
        store.close().unwrap();
        let store = open(tmp.path(), layout);
        let key = data.keys().find(|k| group_of(k) == 3).unwrap();
        assert!(store.get(copy_of(A, 1), key).unwrap().is_some(), "{layout}");
        store.close().unwrap();
    }
}
