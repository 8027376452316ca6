#![allow(clippy::unwrap_used, clippy::indexing_slicing)]
//! Scenario: index blocks and Bloom filters in the block cache
//! (`EngineOptions::cache_index_and_filter_blocks`), through the engine's get path:
//! - in a cache far smaller than the tables' metadata, gets stay correct while index and
//!   filter blocks are evicted and read back, each read counted (I/Os and bytes per get);
//! - in a cache that holds everything, a warm get reads nothing from disk;
//! - pinned (the default), and with the option on but no block cache, gets never read
//!   metadata.

mod common;
use common::scratch;

use mosaic_lsm::{CounterSnapshot, Db, Options};

const KEYS: u32 = 6_000;

fn key(i: u32) -> Vec<u8> {
    format!("user{:08}", i.wrapping_mul(2_654_435_761) % 1_000_000_007).into_bytes()
}

fn value(i: u32) -> Vec<u8> {
    format!("{i:06}-{}", "v".repeat(90)).into_bytes()
}

/// A database of `KEYS` keys over about a dozen level-0 tables (no compaction).
fn filled(dir: &std::path::Path, cache_bytes: u64, metadata_in_cache: bool) -> Db {
    let db = Db::open(
        dir,
        Options {
            memtable_size_bytes: 64 << 10,
            level0_compaction_trigger: 100,
            level0_slowdown_tables: 100,
            level0_stall_tables: 101,
            block_cache_bytes: cache_bytes,
            cache_index_and_filter_blocks: metadata_in_cache,
            ..Options::default()
        },
    )
    .unwrap();
    for i in 0..KEYS {
        db.put(&key(i), 1, &value(i)).unwrap();
    }
    db.flush().unwrap();
    assert!(db.levels()[0].tables.len() >= 8, "{:?}", db.levels());
    db
}

/// `rounds` passes of gets over every key (and as many absent keys): all answered right.
fn read_all(db: &Db, rounds: u32) -> CounterSnapshot {
    let before = db.counters();
    for _ in 0..rounds {
        for i in (0..KEYS).step_by(7) {
            assert_eq!(db.get(&key(i)).unwrap().unwrap().value, value(i), "key {i}");
            assert!(db.get(&key(i + KEYS)).unwrap().is_none());
        }
    }
    db.counters().since(&before)
}

#[test]
fn metadata_competes_for_a_small_cache_and_gets_stay_correct() {
    let dir = scratch();
    let db = filled(dir.path(), 32 << 10, true);
    let d = read_all(&db, 2);
    assert!(d.gets > 0);
    assert!(
        d.get_index_block_reads > 0,
        "evicted index blocks are read back: {d:?}"
    );
    assert_eq!(
        d.get_block_reads(),
        d.get_data_block_reads + d.get_index_block_reads + d.get_filter_block_reads
    );
    assert!(d.get_bytes_read > d.get_index_bytes_read + d.get_filter_bytes_read);

    // The same reads with the metadata pinned read only data blocks, fewer bytes.
    let dir = scratch();
    let pinned = filled(dir.path(), 32 << 10, false);
    let p = read_all(&pinned, 2);
    assert_eq!((p.get_index_block_reads, p.get_filter_block_reads), (0, 0));
    assert_eq!(p.get_block_reads(), p.get_data_block_reads);
    assert!(p.bytes_read_per_get() < d.bytes_read_per_get());
    assert!(p.block_reads_per_get() < d.block_reads_per_get());
}

#[test]
fn a_cache_holding_everything_serves_warm_gets_without_disk_reads() {
    let dir = scratch();
    let db = filled(dir.path(), 64 << 20, true);
    read_all(&db, 1);
    let d = read_all(&db, 1);
    assert_eq!((d.get_block_reads(), d.get_bytes_read), (0, 0), "{d:?}");
}

#[test]
fn without_a_block_cache_metadata_stays_pinned() {
    let dir = scratch();
    let db = filled(dir.path(), 0, true);
    let d = read_all(&db, 1);
    assert_eq!((d.get_index_block_reads, d.get_filter_block_reads), (0, 0));
    assert!(d.get_data_block_reads > 0);
}
