#![allow(clippy::unwrap_used, clippy::indexing_slicing)]
//! Scenario: tables written with O_DIRECT (`Options::direct_io_for_flush_and_compaction`)
//! by flushes, compactions and a two-layer log's splits and merge-sorts hold exactly what
//! buffered writes would: every key reads back, through compactions, a reopen and with
//! reads that are direct too. The directory is a real one (not `/dev/shm`), so on a file
//! system with O_DIRECT the writes take the direct path.

use std::sync::Arc;

use mosaic_lsm::{Db, LogOptions, Options, TableOptions};

const KEYS: u32 = 3_000;

fn key(i: u32) -> Vec<u8> {
    format!("k{:06}", i.wrapping_mul(2_654_435_761) % 1_000_003).into_bytes()
}

fn value(i: u32, round: u32) -> Vec<u8> {
    // Odd lengths, so table files end off any block boundary.
    let mut v = format!("v{i}-r{round}-").into_bytes();
    v.resize(100 + (i % 37) as usize, b'x');
    v
}

fn options(log: bool) -> Options {
    Options {
        memtable_size_bytes: 32 << 10,
        level0_compaction_trigger: 3,
        table_size_bytes: 96 << 10,
        block_cache_bytes: 0,
        direct_io: true,
        direct_io_for_flush_and_compaction: true,
        table: TableOptions {
            block_size_bytes: 1024,
            ..TableOptions::default()
        },
        log: log.then(|| LogOptions {
            split_segments: 2,
            runs_max: 2,
            // Contiguous in key order, as a ring's ranges are: by the first digit.
            group_of: Arc::new(|k: &[u8]| {
                u32::from(k.get(1).copied().unwrap_or(b'0').saturating_sub(b'0') / 3)
            }),
        }),
        ..Options::default()
    }
}

fn check(db: &Db, round: u32) {
    for i in 0..KEYS {
        let got = db.get(&key(i)).unwrap();
        assert_eq!(
            got.map(|e| e.value),
            Some(value(i, round)),
            "key {i}, round {round}"
        );
    }
}

fn write_compact_reopen(log: bool) {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), options(log)).unwrap();
    for round in 0..3 {
        for i in 0..KEYS {
            db.put(&key(i), u64::from(round * KEYS + i + 1), &value(i, round))
                .unwrap();
        }
        db.flush().unwrap();
        db.wait_for_compactions().unwrap();
        check(&db, round);
    }
    let c = db.counters();
    assert!(c.flushes >= 3, "{c:?}");
    if log {
        assert!(c.splits > 0 && c.merge_sorts > 0, "{c:?}");
    } else {
        assert!(c.compactions > 0, "{c:?}");
        db.compact().unwrap();
        check(&db, 2);
    }
    db.close().unwrap();
    let db = Db::open(dir.path(), options(log)).unwrap();
    check(&db, 2);
    db.close().unwrap();
}

#[test]
fn an_lsm_tree_written_with_direct_io_reads_back_through_compactions_and_a_reopen() {
    write_compact_reopen(false);
}

#[test]
fn a_two_layer_log_written_with_direct_io_reads_back_through_splits_and_merge_sorts() {
    write_compact_reopen(true);
}
