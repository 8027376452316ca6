#![allow(clippy::unwrap_used, clippy::indexing_slicing)]
//! Scenario: Bloom filters over key prefixes (`TableOptions::filter_prefix_bytes`), as the
//! row layer uses them (a partition's keys share their 8 token bytes):
//! - a scan confined to one prefix probes only the tables that may hold it, and is counted
//!   as a point lookup, in a leveled tree and in a two-layer log;
//! - tables written before prefix filters were turned on (whole-key filters) are still
//!   read: their filters are never asked about prefixes.

mod common;
use common::scratch;

use std::ops::Bound;
use std::sync::Arc;

use mosaic_lsm::{Db, LogOptions, Options, TableOptions};

/// Partition `p`'s row `r`: an 8-byte prefix, then the row.
fn key(p: u32, r: u32) -> Vec<u8> {
    let mut k = format!("{p:08}").into_bytes();
    k.extend_from_slice(format!("/row{r:03}").as_bytes());
    k
}

fn options(prefix: usize, log: bool) -> Options {
    Options {
        // One table per `fill` round: ten of them stay in level 0 (or the global log).
        memtable_size_bytes: 1 << 20,
        level0_stall_tables: 30,
        level0_compaction_trigger: 20,
        table: TableOptions {
            filter_prefix_bytes: prefix,
            ..TableOptions::default()
        },
        log: log.then(|| LogOptions {
            split_segments: 20,
            runs_max: 20,
            group_of: Arc::new(|_| 0),
        }),
        ..Options::default()
    }
}

/// The rows of partition `p`, scanned over its key range.
fn partition(db: &Db, p: u32) -> Vec<Vec<u8>> {
    let lo = key(p, 0);
    let hi = key(p, 999);
    db.scan(Bound::Included(&lo[..]), Bound::Included(&hi[..]))
        .unwrap()
        .map(|r| r.unwrap().0)
        .collect()
}

/// Ten flushed tables, each holding rows of its own ten partitions.
fn fill(db: &Db, first_partition: u32) {
    for t in 0..10 {
        for p in 0..10 {
            for r in 0..5 {
                let p = first_partition + t * 10 + p;
                db.put(&key(p, r), 1, &[7u8; 100]).unwrap();
            }
        }
        db.flush().unwrap();
    }
}

#[test]
fn a_partition_scan_probes_only_tables_that_may_hold_it() {
    for log in [false, true] {
        let dir = scratch();
        let db = Db::open(dir.path(), options(8, log)).unwrap();
        fill(&db, 0);
        let levels: Vec<usize> = db.levels().iter().map(|l| l.tables.len()).collect();
        assert!(levels[0] >= 10, "log {log}: tables per level {levels:?}");
        let before = db.counters();
        for p in 0..100 {
            assert_eq!(
                partition(&db, p),
                (0..5).map(|r| key(p, r)).collect::<Vec<_>>()
            );
        }
        let c = db.counters().since(&before);
        assert_eq!(c.gets, 100, "log {log}: {c:?}");
        // One table holds each partition; a false positive now and then at most.
        assert!(
            c.tables_probed_per_get() < 1.5,
            "log {log}: {} tables probed per partition scan",
            c.tables_probed_per_get()
        );
        // A scan across partitions uses no filter.
        let lo = key(3, 0);
        let hi = key(5, 0);
        let n = db
            .scan(Bound::Included(&lo[..]), Bound::Excluded(&hi[..]))
            .unwrap()
            .count();
        assert_eq!(n, 10);
    }
}

#[test]
fn tables_with_whole_key_filters_are_still_read() {
    let dir = scratch();
    let db = Db::open(dir.path(), options(0, false)).unwrap();
    fill(&db, 0);
    db.close().unwrap();
    let db = Db::open(dir.path(), options(8, false)).unwrap();
    fill(&db, 100);
    for p in 0..200 {
        assert_eq!(partition(&db, p).len(), 5, "partition {p}");
        assert!(db.get(&key(p, 4)).unwrap().is_some(), "partition {p}");
    }
    db.compact().unwrap();
    for p in 0..200 {
        assert_eq!(partition(&db, p).len(), 5, "partition {p} after compaction");
    }
}

#[test]
fn memtable_prefix_filters_never_hide_a_partition() {
    // Memtables of 16 KiB: rows land in the active memtable, in frozen ones waiting for a
    // flush and in tables, and every partition is written to in several memtables. Each
    // partition read right after a write skips the memtables whose filter rules it out,
    // and must still see every row written so far.
    let dir = scratch();
    let db = Db::open(
        dir.path(),
        Options {
            memtable_size_bytes: 16 << 10,
            ..options(8, false)
        },
    )
    .unwrap();
    let mut written: Vec<Vec<Vec<u8>>> = vec![Vec::new(); 40];
    for round in 0..25u32 {
        for p in 0..40u32 {
            if (p + round) % 3 == 0 {
                continue;
            }
            let k = key(p, round);
            db.put(&k, 1, &[7u8; 100]).unwrap();
            written[p as usize].push(k);
            assert_eq!(
                partition(&db, p),
                written[p as usize],
                "partition {p} round {round}"
            );
        }
    }
    for (p, rows) in written.iter().enumerate() {
        assert_eq!(&partition(&db, p as u32), rows);
    }
}
