#![allow(clippy::unwrap_used, clippy::indexing_slicing)]
#![allow(clippy::disallowed_methods)] // Tests run real threads and measure real time; the seam binds the code under test.
//! Scenario: one node with 300 tables, all taking writes at once. The engine's threads do
//! not grow with the table count, and all memtables together never hold more than the
//! node's `memtable_space_bytes`. Alone in its test binary, so the thread count it reads
//! from `/proc/self/task` is this test's.

mod common;

use common::partition;

use std::ops::Bound;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use mosaic_lsm::{Db, Engine, EngineOptions};

fn count(db: &Db) -> usize {
    db.scan(Bound::Unbounded, Bound::Unbounded).unwrap().count()
}

/// Threads of this process.
fn threads() -> usize {
    std::fs::read_dir("/proc/self/task").unwrap().count()
}

#[test]
fn three_hundred_tables_share_a_few_threads_and_one_memtable_budget() {
    let dir = common::scratch();
    let space = 4 << 20;
    let before = threads();
    let engine = Engine::open(
        dir.path(),
        EngineOptions {
            memtable_space_bytes: space,
            flush_threads: 2,
            compaction_threads: 2,
            ..EngineOptions::default()
        },
    )
    .unwrap();
    let dbs: Vec<Db> = (0..300)
        .map(|i| partition(&engine, &format!("ks/t{i:03}")))
        .collect();
    // Flush and compaction workers plus the WAL sync thread, whatever the table count.
    let opened = threads().saturating_sub(before);
    assert!(opened <= 5, "300 tables started {opened} threads");
    let dbs = Arc::new(dbs);
    let done = Arc::new(AtomicBool::new(false));
    let peak = Arc::new(AtomicUsize::new(0));
    let sampler = {
        let (engine, done, peak, dbs) = (engine.clone(), done.clone(), peak.clone(), dbs.clone());
        std::thread::spawn(move || {
            while !done.load(Ordering::SeqCst) {
                // The engine's own figure and the partitions' sum, each within the budget.
                let sum: usize = dbs.iter().map(Db::memtable_bytes).sum();
                let used = engine.memtable_bytes().max(sum);
                peak.fetch_max(used, Ordering::SeqCst);
                std::thread::yield_now();
            }
        })
    };
    let writers: Vec<_> = (0..4)
        .map(|w| {
            let dbs = dbs.clone();
            std::thread::spawn(move || {
                let value = vec![w as u8; 200];
                for round in 0..40u64 {
                    for (i, db) in dbs.iter().enumerate().filter(|(i, _)| i % 4 == w) {
                        let key = format!("k{round:04}-{i}");
                        db.put(key.as_bytes(), round + 1, &value).unwrap();
                    }
                }
            })
        })
        .collect();
    for w in writers {
        w.join().unwrap();
    }
    done.store(true, Ordering::SeqCst);
    sampler.join().unwrap();
    let peak = peak.load(Ordering::SeqCst);
    assert!(
        peak <= space,
        "memtables held {peak} bytes, over the {space}-byte budget"
    );
    assert!(
        threads().saturating_sub(before) <= 5,
        "threads grew while writing"
    );
    // No memtable reaches its own 64 KiB size (40 rows of ~300 bytes each): every flush
    // was the node's budget at work.
    let flushes: u64 = dbs.iter().map(|db| db.counters().flushes).sum();
    assert!(
        flushes > 0,
        "15 MB written into a 4 MiB budget without a flush"
    );
    for (i, db) in dbs.iter().enumerate() {
        assert_eq!(count(db), 40, "table {i}");
    }
}
