#![allow(clippy::unwrap_used, clippy::indexing_slicing)]
//! Scenario: a compaction filter makes flushes and compactions forget exactly the versions
//! it names (a key's versions at or below a covered timestamp), whether they sit in the
//! memtable, in upper levels or at the bottom, and keeps newer versions of the same keys
//! whole: with a merge operator, a dropped version's content does not survive inside a
//! merged one.

mod common;
use common::scratch;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use mosaic_lsm::{
    CompactionFilter, Db, MergeOperator, Options, Resolved, SyncMode, ValueKind, Version,
};

/// Drops versions of listed keys at or below their listed timestamp.
#[derive(Default)]
struct Covered(Mutex<BTreeMap<Vec<u8>, u64>>);

impl CompactionFilter for Covered {
    fn drops(&self, key: &[u8], ts: u64) -> bool {
        self.0.lock().unwrap().get(key).is_some_and(|t| ts <= *t)
    }
}

/// Concatenates the values of every version, oldest first.
struct Concat;

impl MergeOperator for Concat {
    fn name(&self) -> &str {
        "concat"
    }

    fn merge(&self, _key: &[u8], versions: &[Version<'_>]) -> Resolved {
        let mut value = Vec::new();
        for v in versions.iter().rev() {
            value.extend_from_slice(v.value);
        }
        Resolved {
            ts: versions.first().map_or(0, |v| v.ts),
            kind: ValueKind::Put,
            value,
        }
    }
}

fn options(filter: Arc<Covered>, merge: bool) -> Options {
    Options {
        sync_mode: SyncMode::Periodic { interval_ms: 1_000 },
        memtable_size_bytes: 16 << 10,
        level0_compaction_trigger: 2,
        level1_size_bytes: 32 << 10,
        table_size_bytes: 8 << 10,
        levels_max: 4,
        compaction_filter: Some(filter as Arc<dyn CompactionFilter>),
        merge_operator: merge.then(|| Arc::new(Concat) as Arc<dyn MergeOperator>),
        ..Options::default()
    }
}

fn key(i: usize) -> Vec<u8> {
    format!("key{i:05}").into_bytes()
}

#[test]
fn covered_versions_go_and_newer_ones_stay() {
    let dir = scratch();
    let filter = Arc::new(Covered::default());
    let db = Db::open(dir.path(), options(filter.clone(), false)).unwrap();
    // Versions at ts 10 reach the bottom; ts 20 stays in upper levels; ts 30 in the memtable.
    for i in 0..400 {
        db.put(&key(i), 10, format!("old{i}").as_bytes()).unwrap();
    }
    db.compact().unwrap();
    for i in 0..400 {
        if i % 2 == 0 {
            db.put(&key(i), 20, format!("mid{i}").as_bytes()).unwrap();
        }
    }
    db.flush().unwrap();
    for i in 0..400 {
        if i % 4 == 0 {
            db.put(&key(i), 30, format!("new{i}").as_bytes()).unwrap();
        }
    }
    // Keys 0..200 covered up to ts 20: their ts-10 and ts-20 versions go, ts-30 stays.
    // Keys 200..300 covered up to ts 10 only. Keys 300.. are not covered.
    {
        let mut c = filter.0.lock().unwrap();
        for i in 0..200 {
            c.insert(key(i), 20);
        }
        for i in 200..300 {
            c.insert(key(i), 10);
        }
    }
    db.compact().unwrap();
    let mut live = 0;
    for i in 0..400 {
        let got = db.get(&key(i)).unwrap().map(|e| e.value);
        let want = match i {
            _ if i % 4 == 0 => Some(format!("new{i}")),
            _ if i < 200 => None,
            _ if i % 2 == 0 => Some(format!("mid{i}")),
            _ if i < 300 => None,
            _ => Some(format!("old{i}")),
        };
        live += usize::from(want.is_some());
        assert_eq!(got, want.map(String::into_bytes), "key {i}");
    }
    // Covered versions are gone from disk, not merely hidden: the tables hold one entry
    // per key still readable.
    let entries: u64 = db
        .levels()
        .iter()
        .flat_map(|l| &l.tables)
        .map(|t| t.entries)
        .sum();
    assert_eq!(entries, live as u64);
    db.close().unwrap();
}

#[test]
fn a_merged_version_never_carries_a_dropped_ones_content() {
    let dir = scratch();
    let filter = Arc::new(Covered::default());
    let db = Db::open(dir.path(), options(filter.clone(), true)).unwrap();
    for i in 0..100 {
        db.merge(&key(i), 5, b"a").unwrap();
    }
    db.flush().unwrap();
    for i in 0..100 {
        db.merge(&key(i), 9, b"b").unwrap();
    }
    filter
        .0
        .lock()
        .unwrap()
        .extend((0..50).map(|i| (key(i), 5)));
    db.compact().unwrap();
    for i in 0..100 {
        let got = db.get(&key(i)).unwrap().unwrap();
        let want: &[u8] = if i < 50 { b"b" } else { b"ab" };
        assert_eq!(got.value, want, "key {i}");
        assert_eq!(got.ts, 9);
    }
    // Flushing drops too: a covered version written after the list arrived is forgotten.
    filter.0.lock().unwrap().insert(key(7), 100);
    db.merge(&key(7), 50, b"c").unwrap();
    db.flush().unwrap();
    db.compact().unwrap();
    assert_eq!(db.get(&key(7)).unwrap(), None);
    db.close().unwrap();
}

/// Drops every version, but only when compactions ask (`at_flush` false).
struct CompactionsOnly;

impl CompactionFilter for CompactionsOnly {
    fn drops(&self, _key: &[u8], _ts: u64) -> bool {
        true
    }

    fn at_flush(&self) -> bool {
        false
    }
}

#[test]
fn a_filter_that_declines_flushes_is_asked_only_by_compactions() {
    let dir = scratch();
    let opts = Options {
        compaction_filter: Some(Arc::new(CompactionsOnly) as Arc<dyn CompactionFilter>),
        // No automatic compaction: only the explicit one below.
        level0_compaction_trigger: 1_000,
        level0_slowdown_tables: 2_000,
        level0_stall_tables: 3_000,
        ..options(Arc::new(Covered::default()), false)
    };
    let db = Db::open(dir.path(), opts).unwrap();
    for i in 0..50 {
        db.put(&key(i), 10, b"v").unwrap();
    }
    db.flush().unwrap();
    for i in 0..50 {
        assert!(db.get(&key(i)).unwrap().is_some(), "flushed whole: {i}");
    }
    db.compact().unwrap();
    for i in 0..50 {
        assert!(
            db.get(&key(i)).unwrap().is_none(),
            "dropped by compaction: {i}"
        );
    }
}
