#![allow(clippy::unwrap_used, clippy::indexing_slicing)]
//! Scenario: the data node of an `erasure-tiered` table under steady overwrites, playing
//! ELECT's whole cycle each round: code the last level's tables (a one-table group each),
//! send their key lists (so secondaries drop those rows), and empty the slots of coded
//! tables that compaction replaced as soon as the store allows it.
//!
//! What a user relies on: a row whose secondary copies were dropped stays decodable. After
//! every round, each key whose newest version at the primary is at or below a timestamp
//! some key list named (its secondaries dropped that version) must be held, at that
//! version, by a table still coded. Compaction moves rows into tables of any level, not
//! only the deepest, and a slot emptied too early leaves such rows with one copy.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use mosaic_lsm::{Options, RealFs, StaticLevels, WriteBatch};
use mosaic_replica::{Layout, LogSettings, ReplicaStore, RingRanges, Role, Structure};
use mosaic_types::{ErasureCode, Token};
use rand::{Rng, SeedableRng};

mod common;
use common::group_of;

fn open(dir: &std::path::Path) -> ReplicaStore {
    let engine = Options {
        fs: Arc::new(RealFs),
        memtable_size_bytes: 8 << 10,
        level0_compaction_trigger: 2,
        level1_size_bytes: 16 << 10,
        level_size_ratio: 4,
        // Classic sizing grows the tree downward, so coded tables of what was the deepest
        // level are later rewritten into upper levels (dynamic sizing keeps the bottom).
        level_policy: Arc::new(StaticLevels),
        table_size_bytes: 4 << 10,
        ..Options::default()
    };
    let log = LogSettings {
        split_segments: 2,
        runs_max: 3,
        ring: RingRanges::new([Token(0)]),
    };
    ReplicaStore::open(dir, Layout::ErasureTiered, engine, log).unwrap()
}

fn key(i: u32) -> Vec<u8> {
    format!("key{i:06}").into_bytes()
}

/// One ELECT round on the data node; returns how many slots were emptied.
fn round(store: &ReplicaStore, listed: &mut HashMap<Vec<u8>, u64>) -> usize {
    let elect = store.elect().unwrap();
    let code = ErasureCode {
        k: 2,
        n: 3,
        alpha: 1.0,
    };
    for (id, content) in store.ec_pick(code, 3, u64::MAX, 64).unwrap() {
        elect.mark_coded(id, 0, &group_of(id, &content)).unwrap();
    }
    for (id, _shard, keys) in store.ec_unlisted().unwrap() {
        let (Some(first), Some(last)) = (keys.first(), keys.last()) else {
            continue;
        };
        store
            .ec_listing(id, first.0.clone(), last.0.clone())
            .unwrap();
        // The secondaries drop every version at or below these timestamps.
        for (k, ts) in keys {
            let at = listed.entry(k).or_default();
            *at = (*at).max(ts);
        }
        store.ec_listed(id).unwrap();
    }
    let replaced = store.ec_replaced().unwrap();
    for r in &replaced {
        elect.cleared(r.id).unwrap();
    }
    replaced.len()
}

/// Every key the secondaries no longer hold at its newest version is in a coded table.
fn check(store: &ReplicaStore, listed: &HashMap<Vec<u8>, u64>, keys: u32, round: usize) {
    let elect = store.elect().unwrap();
    let mut coded_keys: BTreeMap<Vec<u8>, u64> = BTreeMap::new();
    for id in elect.coded().keys() {
        for (k, ts) in elect.key_list(*id).unwrap().unwrap() {
            let at = coded_keys.entry(k).or_default();
            *at = (*at).max(ts);
        }
    }
    for i in 0..keys {
        let k = key(i);
        let Some(newest) = store.get(Role::Primary, &k).unwrap() else {
            continue;
        };
        let dropped = listed.get(&k).is_some_and(|ts| *ts >= newest.ts);
        if dropped {
            assert!(
                coded_keys.get(&k).is_some_and(|ts| *ts >= newest.ts),
                "round {round}: key{i:06} at ts {} lost its secondary copies and no coded \
                 table holds it",
                newest.ts
            );
        }
    }
}

#[test]
fn rows_whose_secondaries_dropped_them_stay_coded_through_compaction() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = open(dir.path());
    let mut rng = rand::rngs::StdRng::seed_from_u64(17);
    let keys = 3000;
    let mut listed = HashMap::new();
    let mut ts = 0u64;
    let mut emptied = 0;
    let mut upper_holders = 0;
    for r in 0..120 {
        // Overwrites of a skewed key range: some rounds hit the whole range, most a
        // narrow band, so compactions of upper levels keep rewriting coded tables' rows.
        let (lo, hi) = if r % 5 == 0 {
            (0, keys)
        } else {
            let lo = rng.gen_range(0..keys - 200);
            (lo, lo + 200)
        };
        let mut batch = WriteBatch::new();
        for _ in 0..150 {
            ts += 1;
            let i = rng.gen_range(lo..hi);
            batch.put(
                &key(i),
                ts,
                format!("v{ts:08}-{}", "x".repeat(40)).as_bytes(),
            );
        }
        store.write(Role::Primary, batch).unwrap();
        if r % 3 == 0 {
            store.flush().unwrap();
        }
        store.wait_for_compactions().unwrap();
        emptied += round(&store, &mut listed);
        check(&store, &listed, keys, r);
        // How often a replaced listed table's rows sat above the deepest level: the case
        // the deepest level alone cannot answer for.
        let elect = store.elect().unwrap();
        let levels = store
            .structures()
            .into_iter()
            .find(|s| s.structure == Structure::Primary)
            .unwrap()
            .levels;
        let deepest = levels
            .iter()
            .rev()
            .find(|l| !l.tables.is_empty())
            .map_or(0, |l| l.level);
        for id in elect.lineage().watched() {
            if let Some(h) = elect.lineage().heirs(id) {
                if levels
                    .iter()
                    .filter(|l| l.level < deepest)
                    .flat_map(|l| &l.tables)
                    .any(|t| t.id != id && h.holders.contains(&t.id))
                {
                    upper_holders += 1;
                }
            }
        }
        if r % 40 == 39 {
            // A restart keeps what was coded, listed and followed.
            drop(store);
            store = open(dir.path());
            check(&store, &listed, keys, r);
        }
    }
    assert!(emptied > 0, "no replaced slot was ever emptied");
    assert!(
        upper_holders > 0,
        "the scenario never put a coded table's rows above the deepest level"
    );
}
