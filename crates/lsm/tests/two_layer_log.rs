#![allow(clippy::unwrap_used, clippy::indexing_slicing)]
//! Scenario: a two-layer log (DEPART's store of redundant replicas) under a write-heavy
//! workload keeps its shape and its promises:
//! - splits move global-log segments into range groups and a group never holds more than
//!   S runs (merge-sorts happen when it would);
//! - every key reads back (get and scan) through splits, merge-sorts and reopen, and a
//!   point lookup probes only the key's range group;
//! - the ordering knob trades writes for reads: a small S rewrites more bytes and probes
//!   fewer runs per lookup than a large S (DEPART Exp#8, measured by the counters);
//! - a directory holding a log cannot be opened as a leveled tree by mistake;
//! - a damaged run is reported as corruption, never as a wrong value.

mod common;
use common::scratch;

use std::ops::Bound;
use std::sync::Arc;

use mosaic_lsm::{CounterSnapshot, Db, Error, LogOptions, Options, TableOptions};

const GROUPS: u32 = 8;
const KEYS: u32 = 4_000;

fn key(i: u32) -> Vec<u8> {
    format!("k{i:06}").into_bytes()
}

/// Groups: eighths of the key space, contiguous in key order.
fn group_of(k: &[u8]) -> u32 {
    let i: u32 = std::str::from_utf8(k.get(1..).unwrap_or_default())
        .ok()
        .and_then(|d| d.parse().ok())
        .unwrap_or(0);
    (i * GROUPS / KEYS).min(GROUPS - 1)
}

fn value(i: u32, round: u32) -> Vec<u8> {
    let mut v = format!("v{i}-r{round}-").into_bytes();
    v.resize(100, b'x');
    v
}

fn options(runs_max: usize) -> Options {
    Options {
        memtable_size_bytes: 16 << 10,
        level0_stall_tables: 12,
        block_cache_bytes: 0,
        table: TableOptions {
            block_size_bytes: 1024,
            ..TableOptions::default()
        },
        log: Some(LogOptions {
            split_segments: 2,
            runs_max,
            group_of: Arc::new(group_of),
        }),
        ..Options::default()
    }
}

/// Writes `rounds` overwrites of every key (a shuffled order per round), waits for the
/// splitter, and returns the counters of the write phase and of a read phase.
fn load_and_read(db: &Db, rounds: u32, runs_max: usize) -> (CounterSnapshot, CounterSnapshot) {
    let before = db.counters();
    for round in 0..rounds {
        for n in 0..KEYS {
            // A stride co-prime with KEYS visits every key once per round, out of order.
            let i = (n * 1_237 + round * 17) % KEYS;
            db.put(&key(i), u64::from(round * KEYS + n + 1), &value(i, round))
                .unwrap();
        }
        db.flush().unwrap();
        db.wait_for_compactions().unwrap();
        check_shape(db, runs_max);
    }
    let written = db.counters().since(&before);
    let before = db.counters();
    for i in 0..KEYS {
        let e = db.get(&key(i)).unwrap().unwrap();
        assert_eq!(e.value, value(i, rounds - 1), "key {i}");
    }
    (written, db.counters().since(&before))
}

fn check_shape(db: &Db, runs_max: usize) {
    for level in db.levels() {
        if level.level >= 1 {
            assert!(
                level.tables.len() <= runs_max,
                "group {} holds {} runs (S = {runs_max})",
                level.level - 1,
                level.tables.len()
            );
            for t in &level.tables {
                assert_eq!(
                    group_of(&t.smallest_key),
                    group_of(&t.largest_key),
                    "a run spans two groups"
                );
                assert_eq!(group_of(&t.smallest_key) as usize, level.level - 1);
            }
        }
    }
}

#[test]
fn splits_and_merge_sorts_keep_every_key_and_the_run_bound() {
    let dir = scratch();
    let db = Db::open(dir.path(), options(3)).unwrap();
    let (written, read) = load_and_read(&db, 6, 3);
    assert!(written.splits > 0, "no split ran: {written:?}");
    assert!(written.merge_sorts > 0, "no merge-sort ran: {written:?}");
    assert!(written.split_bytes_written > 0 && written.merge_sort_bytes_written > 0);
    assert_eq!(
        written.compaction_bytes_written, 0,
        "a log never runs leveled compaction"
    );
    // One group's runs and the global log's segments, nothing else: ≤ S + segments.
    let segments = db.levels()[0].tables.len() as f64;
    assert!(
        read.tables_probed_per_get() <= 3.0 + segments,
        "{} tables probed per get",
        read.tables_probed_per_get()
    );

    // Scans see every key once, in order, with its newest value.
    let scanned: Vec<(Vec<u8>, Vec<u8>)> = db
        .scan(Bound::Unbounded, Bound::Unbounded)
        .unwrap()
        .map(|r| {
            let (k, e) = r.unwrap();
            (k, e.value)
        })
        .collect();
    assert_eq!(scanned.len(), KEYS as usize);
    for (n, (k, v)) in scanned.iter().enumerate() {
        assert_eq!(k, &key(n as u32));
        assert_eq!(v, &value(n as u32, 5));
    }
    // A range inside one group and across a group boundary.
    let from = key(KEYS / GROUPS - 10);
    let to = key(KEYS / GROUPS + 10);
    let n = db
        .scan(Bound::Included(&from[..]), Bound::Excluded(&to[..]))
        .unwrap()
        .count();
    assert_eq!(n, 20);

    // Deletes, then reopen: the log's shape and contents survive.
    for i in (0..KEYS).step_by(3) {
        db.delete(&key(i), u64::from(100 * KEYS + i)).unwrap();
    }
    db.close().unwrap();
    let db = Db::open(dir.path(), options(3)).unwrap();
    check_shape(&db, 3);
    for i in 0..KEYS {
        let got = db.get(&key(i)).unwrap();
        if i % 3 == 0 {
            assert_eq!(got, None, "deleted key {i} reappeared");
        } else {
            assert_eq!(got.unwrap().value, value(i, 5));
        }
    }
    // The log's full compaction: nothing left in the global log, one run per group.
    db.compact().unwrap();
    let levels = db.levels();
    assert!(levels[0].tables.is_empty());
    assert!(levels.iter().skip(1).all(|l| l.tables.len() <= 1));
    assert_eq!(
        db.scan(Bound::Unbounded, Bound::Unbounded).unwrap().count(),
        (KEYS - KEYS.div_ceil(3)) as usize
    );
}

#[test]
fn the_run_bound_trades_write_amplification_for_read_cost() {
    let mut results = Vec::new();
    for runs_max in [1usize, 4, 1_000] {
        let dir = scratch();
        let db = Db::open(dir.path(), options(runs_max)).unwrap();
        let (written, read) = load_and_read(&db, 8, runs_max);
        results.push((runs_max, written, read));
        db.close().unwrap();
    }
    let rewritten: Vec<u64> = results
        .iter()
        .map(|(_, w, _)| w.split_bytes_written + w.merge_sort_bytes_written)
        .collect();
    let probed: Vec<f64> = results
        .iter()
        .map(|(_, _, r)| r.tables_probed_per_get())
        .collect();
    println!("S = 1, 4, 1000: bytes rewritten {rewritten:?}, tables probed per get {probed:?}");
    // Writes: S = 1 rewrites whole groups at every split, an unbounded S never does.
    assert!(
        rewritten[0] > rewritten[1] && rewritten[1] > rewritten[2],
        "bytes rewritten by S = 1, 4, 1000: {rewritten:?}"
    );
    assert_eq!(
        results[2].1.merge_sorts, 0,
        "S = 1000 never reaches its bound"
    );
    // Reads: more runs per group, more probes per lookup.
    assert!(
        probed[0] < probed[1] && probed[1] < probed[2],
        "tables probed per get with S = 1, 4, 1000: {probed:?}"
    );
}

#[test]
fn a_log_directory_is_not_opened_as_a_tree() {
    let dir = scratch();
    let db = Db::open(dir.path(), options(3)).unwrap();
    db.put(b"k000001", 1, b"v").unwrap();
    db.close().unwrap();
    let err = Db::open(dir.path(), Options::default()).unwrap_err();
    assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
    let db = Db::open(dir.path(), options(3)).unwrap();
    assert_eq!(db.get(b"k000001").unwrap().unwrap().value, b"v");
}

#[test]
fn a_damaged_run_is_reported_as_corruption() {
    let dir = scratch();
    let db = Db::open(dir.path(), options(2)).unwrap();
    load_and_read(&db, 3, 2);
    db.compact().unwrap();
    db.close().unwrap();
    // Flip a byte in the middle of every run's data.
    for entry in std::fs::read_dir(dir.path()).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "sst") {
            let mut bytes = std::fs::read(&path).unwrap();
            let mid = bytes.len() / 3;
            bytes[mid] ^= 0x5A;
            std::fs::write(&path, bytes).unwrap();
        }
    }
    let db = match Db::open(dir.path(), options(2)) {
        Ok(db) => db,
        Err(e) => {
            assert!(
                e.is_corruption(),
                "open failed without a corruption error: {e}"
            );
            return;
        }
    };
    let mut corruption = 0;
    for i in 0..KEYS {
        match db.get(&key(i)) {
            Ok(Some(e)) => assert_eq!(e.value, value(i, 2), "wrong value for key {i}"),
            Ok(None) => panic!("key {i} silently lost"),
            Err(e) => {
                assert!(e.is_corruption(), "{e}");
                corruption += 1;
            }
        }
    }
    assert!(corruption > 0, "no damaged run was noticed");
}

#[test]
fn without_a_global_log_flushes_write_straight_into_the_range_groups() {
    let no_global_log = |runs_max| {
        let mut opts = options(runs_max);
        if let Some(log) = opts.log.as_mut() {
            log.split_segments = 0;
        }
        opts
    };
    let dir = scratch();
    let db = Db::open(dir.path(), no_global_log(3)).unwrap();
    let (written, read) = load_and_read(&db, 4, 3);
    assert!(db.levels()[0].tables.is_empty(), "no global log");
    assert_eq!(written.split_bytes_written, 0, "{written:?}");
    assert!(written.merge_sorts > 0, "no merge-sort ran: {written:?}");
    // Only the key's group is probed.
    assert!(read.tables_probed_per_get() <= 3.0, "{read:?}");
    // Deletes and a reopen keep every answer.
    for i in (0..KEYS).step_by(5) {
        db.delete(&key(i), u64::from(100 * KEYS + i)).unwrap();
    }
    db.close().unwrap();
    let db = Db::open(dir.path(), no_global_log(3)).unwrap();
    db.wait_for_compactions().unwrap();
    check_shape(&db, 3);
    for i in 0..KEYS {
        let got = db.get(&key(i)).unwrap();
        if i % 5 == 0 {
            assert_eq!(got, None, "deleted key {i} reappeared");
        } else {
            assert_eq!(got.unwrap().value, value(i, 3), "key {i}");
        }
    }
    db.close().unwrap();

    // With merge-sorts out of the way (a large S), the log writes each redundant byte once
    // instead of twice (flush, then split).
    let written = |opts: Options| {
        let dir = scratch();
        let db = Db::open(dir.path(), opts).unwrap();
        let (w, _) = load_and_read(&db, 2, 1000);
        w.flush_bytes_written + w.split_bytes_written + w.merge_sort_bytes_written
    };
    let (direct, through_log) = (written(no_global_log(1000)), written(options(1000)));
    assert!(
        (direct as f64) < 0.6 * through_log as f64,
        "bytes written: {direct} without a global log, {through_log} with one"
    );
}

/// `Db::compact` over a log holding more runs than one pass may read
/// (`split::INPUTS_MAX`) merges them in bounded passes: one run per group after it, every
/// key intact.
#[test]
fn a_full_compaction_of_a_large_log_runs_in_bounded_passes() {
    let dir = scratch();
    let mut opts = options(64);
    if let Some(log) = &mut opts.log {
        log.split_segments = 0;
    }
    let db = Db::open(dir.path(), opts).unwrap();
    for i in 0..KEYS {
        db.put(&key(i), u64::from(i + 1), &value(i, 0)).unwrap();
    }
    db.flush().unwrap();
    db.wait_for_compactions().unwrap();
    let runs: usize = db.levels().iter().skip(1).map(|l| l.tables.len()).sum();
    assert!(
        runs > mosaic_lsm::split::INPUTS_MAX,
        "only {runs} runs: the test needs several passes"
    );
    db.compact().unwrap();
    let levels = db.levels();
    assert!(levels[0].tables.is_empty());
    assert!(levels.iter().skip(1).all(|l| l.tables.len() == 1));
    for i in 0..KEYS {
        assert_eq!(db.get(&key(i)).unwrap().unwrap().value, value(i, 0));
    }
}
