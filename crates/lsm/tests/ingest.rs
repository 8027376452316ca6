#![allow(clippy::unwrap_used, clippy::indexing_slicing)]
#![allow(clippy::disallowed_methods)] // Tests run real threads; the seam binds the code under test.
//! Ingesting sorted batches as tables (`Db::ingest`, what a joining node does with the
//! ranges it streams): where the tables land, that timestamps still decide between an
//! ingested version and the others wherever they sit, that nothing goes through the WAL
//! yet everything survives a reopen, and that ingests racing compactions keep every level
//! below 0 free of overlapping tables.

use std::ops::Bound;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use mosaic_lsm::{Db, Ingested, LogOptions, Options, SyncMode, WriteBatch};

fn small() -> Options {
    Options {
        memtable_size_bytes: 16 << 10,
        table_size_bytes: 16 << 10,
        level1_size_bytes: 64 << 10,
        level0_compaction_trigger: 2,
        level0_stall_tables: 16,
        levels_max: 4,
        sync_mode: SyncMode::Batch,
        ..Options::default()
    }
}

fn key(i: u32) -> Vec<u8> {
    format!("key{i:06}").into_bytes()
}

fn batch(keys: impl Iterator<Item = u32>, ts: u64, tag: &str) -> WriteBatch {
    let mut b = WriteBatch::new();
    for i in keys {
        b.put(&key(i), ts, format!("{tag}{i}").as_bytes());
    }
    b
}

fn value(db: &Db, i: u32) -> Option<String> {
    db.get(&key(i))
        .unwrap()
        .map(|e| String::from_utf8(e.value).unwrap())
}

/// Every level below 0 keeps its tables apart.
fn assert_levels_disjoint(db: &Db) {
    for level in db.levels().iter().skip(1) {
        for pair in level.tables.windows(2) {
            assert!(
                pair[0].largest_key < pair[1].smallest_key,
                "level {} overlaps: {:?}..{:?} and {:?}..{:?}",
                level.level,
                String::from_utf8_lossy(&pair[0].smallest_key),
                String::from_utf8_lossy(&pair[0].largest_key),
                String::from_utf8_lossy(&pair[1].smallest_key),
                String::from_utf8_lossy(&pair[1].largest_key),
            );
        }
    }
}

#[test]
fn ingested_tables_land_in_the_deepest_free_level_and_timestamps_decide() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), small()).unwrap();
    let last = small().levels_max - 1;

    // Into an empty tree: the bottom level, in tables of about table_size_bytes.
    let got = db.ingest(batch(0..1000, 10, "a")).unwrap();
    let Ingested::Tables {
        level,
        tables,
        bytes,
    } = got
    else {
        panic!("not ingested: {got:?}")
    };
    assert_eq!(level, last);
    assert!(tables > 1 && bytes > 0, "{got:?}");
    let c = db.counters();
    assert_eq!(c.wal_bytes_written, 0, "an ingest writes no WAL: {c:?}");
    assert_eq!(c.ingest_bytes_written, bytes);
    assert_eq!(c.ingested_tables, tables as u64);

    // A span that overlaps the bottom level lands one level up.
    let got = db.ingest(batch(500..700, 5, "b")).unwrap();
    assert!(
        matches!(got, Ingested::Tables { level, .. } if level == last - 1),
        "{got:?}"
    );
    // A disjoint span still reaches the bottom.
    let got = db.ingest(batch(2000..2100, 10, "c")).unwrap();
    assert!(
        matches!(got, Ingested::Tables { level, .. } if level == last),
        "{got:?}"
    );

    // Newer memtable writes win over older ingested versions, and newer ingested versions
    // over older writes, whichever level each sits in.
    db.put(&key(1), 20, b"new").unwrap();
    db.put(&key(2), 1, b"old").unwrap();
    db.delete(&key(3), 20).unwrap();
    assert_eq!(value(&db, 1).as_deref(), Some("new"));
    assert_eq!(value(&db, 2).as_deref(), Some("a2"));
    assert_eq!(value(&db, 3), None);
    // The upper ingest (ts 5) lost to the bottom one (ts 10) though it sits above it.
    assert_eq!(value(&db, 600).as_deref(), Some("a600"));
    db.flush().unwrap();
    db.wait_for_compactions().unwrap();
    assert_levels_disjoint(&db);

    let check = |db: &Db| {
        let scanned: Vec<Vec<u8>> = db
            .scan(Bound::Unbounded, Bound::Unbounded)
            .unwrap()
            .map(|r| r.unwrap().0)
            .collect();
        let expected: Vec<Vec<u8>> = (0..1000)
            .chain(2000..2100)
            .filter(|i| *i != 3)
            .map(key)
            .collect();
        assert_eq!(scanned, expected);
        assert_eq!(value(db, 1).as_deref(), Some("new"));
        assert_eq!(value(db, 2).as_deref(), Some("a2"));
        assert_eq!(value(db, 2050).as_deref(), Some("c2050"));
    };
    check(&db);
    db.close().unwrap();
    let db = Db::open(dir.path(), small()).unwrap();
    check(&db);
    db.compact().unwrap();
    check(&db);
    assert_levels_disjoint(&db);
}

#[test]
fn batches_that_are_not_sorted_and_logs_are_written_as_usual() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), small()).unwrap();
    let mut b = batch(10..20, 1, "x");
    b.put(&key(5), 1, b"x5");
    assert_eq!(db.ingest(b).unwrap(), Ingested::Written);
    let mut dup = batch(30..32, 1, "y");
    dup.put(&key(31), 2, b"y31b");
    assert_eq!(db.ingest(dup).unwrap(), Ingested::Written);
    assert_eq!(value(&db, 5).as_deref(), Some("x5"));
    assert_eq!(value(&db, 31).as_deref(), Some("y31b"));
    assert!(db.counters().wal_bytes_written > 0);
    assert_eq!(db.counters().ingested_tables, 0);
    db.close().unwrap();

    let log_dir = tempfile::tempdir().unwrap();
    let opts = Options {
        log: Some(LogOptions::new(Arc::new(|k: &[u8]| {
            u32::from(k.last().copied().unwrap_or(0) % 2)
        }))),
        ..small()
    };
    let log = Db::open(log_dir.path(), opts).unwrap();
    assert_eq!(log.ingest(batch(0..50, 1, "l")).unwrap(), Ingested::Written);
    assert_eq!(value(&log, 7).as_deref(), Some("l7"));
    log.close().unwrap();
}

const ROUNDS: u32 = 600;

fn span_start(round: u32) -> u32 {
    (round * 4_999) % 19_960
}

#[test]
fn ingests_racing_writes_and_compactions_keep_levels_disjoint() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), small()).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    // A writer over every key, at timestamps below the ingests' and above them, while
    // flushes and compactions run.
    let writer = {
        let (db, stop) = (db.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut n = 0u32;
            while !stop.load(Ordering::Relaxed) {
                let i = (n * 7919) % 20_000;
                let ts = if n.is_multiple_of(2) { 1 } else { 1_000 };
                db.put(&key(i), ts, format!("w{ts}-{i}").as_bytes())
                    .unwrap();
                n += 1;
            }
            n
        })
    };
    let mut levels_seen = std::collections::BTreeSet::new();
    for round in 0..ROUNDS {
        // Spans scattered over the key space, so some fit deep and some do not.
        let start = span_start(round);
        let got = db.ingest(batch(start..start + 40, 100, "i")).unwrap();
        if let Ingested::Tables { level, .. } = got {
            levels_seen.insert(level);
        }
        assert_levels_disjoint(&db);
    }
    stop.store(true, Ordering::Relaxed);
    let writes = writer.join().unwrap();
    db.flush().unwrap();
    db.wait_for_compactions().unwrap();
    assert_levels_disjoint(&db);
    assert!(
        writes > 0 && levels_seen.len() > 1,
        "{writes} writes, levels {levels_seen:?}"
    );
    // Every ingested key holds the ingest's version (ts 100) or a newer write (ts 1,000).
    for round in 0..ROUNDS {
        let start = span_start(round);
        for i in start..start + 40 {
            let v = value(&db, i).unwrap();
            assert!(
                v == format!("i{i}") || v == format!("w1000-{i}"),
                "key {i}: {v}"
            );
        }
    }
    db.close().unwrap();
}
