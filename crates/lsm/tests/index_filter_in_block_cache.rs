#![allow(clippy::unwrap_used, clippy::indexing_slicing)]
//! Scenario: index blocks and Bloom filters in the block cache
//! (`EngineOptions::cache_index_and_filter_blocks`), through the engine's get path:
//! - in a cache far smaller than the tables' metadata, gets stay correct while index and
//!   filter blocks are evicted and read back, each read counted (I/Os and bytes per get);
//! - in a cache that holds everything, a warm get reads nothing from disk;
//! - pinned (the default), and with the option on but no block cache, gets never read
//!   metadata;
//! - with the index and filter partitioned (`TableOptions::index_partition_bytes`), a get
//!   that misses reads back a partition, not a table's whole index and filter, and a
//!   database written unpartitioned reads the same before and after it compacts into
//!   partitioned tables.

mod common;
use common::scratch;

use mosaic_lsm::{CounterSnapshot, Db, Options, TableOptions};

const KEYS: u32 = 6_000;

fn key(i: u32) -> Vec<u8> {
    format!("user{:08}", i.wrapping_mul(2_654_435_761) % 1_000_000_007).into_bytes()
}

fn value(i: u32) -> Vec<u8> {
    format!("{i:06}-{}", "v".repeat(90)).into_bytes()
}

/// A database of `KEYS` keys over about a dozen level-0 tables (no compaction).
fn filled(dir: &std::path::Path, cache_bytes: u64, metadata_in_cache: bool) -> Db {
    filled_partitioned(dir, cache_bytes, metadata_in_cache, 0)
}

/// Small tables with 4 KiB blocks, or with `partition_bytes` > 0 256-byte blocks, so that a
/// table's index spans many partitions.
fn options(cache_bytes: u64, metadata_in_cache: bool, partition_bytes: usize) -> Options {
    Options {
        memtable_size_bytes: 64 << 10,
        level0_compaction_trigger: 100,
        level0_slowdown_tables: 100,
        level0_stall_tables: 101,
        block_cache_bytes: cache_bytes,
        cache_index_and_filter_blocks: metadata_in_cache,
        table: TableOptions {
            index_partition_bytes: partition_bytes,
            block_size_bytes: if partition_bytes > 0 { 256 } else { 4096 },
            ..TableOptions::default()
        },
        ..Options::default()
    }
}

/// [`filled`], the tables' index and filter partitioned every `partition_bytes` (0: not).
fn filled_partitioned(
    dir: &std::path::Path,
    cache_bytes: u64,
    metadata_in_cache: bool,
    partition_bytes: usize,
) -> Db {
    let db = Db::open(
        dir,
        options(cache_bytes, metadata_in_cache, partition_bytes),
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

#[test]
fn partitioned_metadata_reads_back_a_partition_per_miss_not_the_whole_index() {
    // Compacted into one table whose index (~50 KiB of 256-byte blocks) is larger than the
    // 32 KiB cache: with the index whole, every get that misses reads it all back; with it
    // partitioned, one partition.
    let read = |partition_bytes: usize| {
        let dir = scratch();
        let db = filled_partitioned(dir.path(), 32 << 10, true, partition_bytes);
        db.compact().unwrap();
        read_all(&db, 2)
    };
    let parts = read(512);
    // The same table with its index and filter whole (a partition larger than either).
    let whole = read(1 << 20);
    let metadata_bytes = |d: &CounterSnapshot| d.get_index_bytes_read + d.get_filter_bytes_read;
    assert!(parts.get_index_block_reads > 0, "{parts:?}");
    assert!(whole.get_index_block_reads > 0, "{whole:?}");
    assert!(
        metadata_bytes(&parts) * 10 < metadata_bytes(&whole),
        "partitioned {} bytes of metadata read, whole {}",
        metadata_bytes(&parts),
        metadata_bytes(&whole)
    );
    // A partition read is about a partition's size.
    assert!(
        parts.get_index_bytes_read / parts.get_index_block_reads < 1024,
        "{parts:?}"
    );
    assert!(parts.bytes_read_per_get() * 5.0 < whole.bytes_read_per_get());
}

#[test]
fn tables_written_unpartitioned_read_the_same_before_and_after_compacting_into_partitioned_ones() {
    let dir = scratch();
    let db = filled_partitioned(dir.path(), 32 << 10, true, 0);
    db.close().unwrap();
    // Reopened with partitioning on: the old tables keep their format and still read.
    let db = Db::open(dir.path(), options(32 << 10, true, 256)).unwrap();
    read_all(&db, 1);
    db.compact().unwrap();
    let d = read_all(&db, 1);
    assert!(d.get_index_block_reads > 0, "{d:?}");
    db.close().unwrap();
    // And pinned, after another reopen.
    let db = Db::open(dir.path(), options(32 << 10, false, 256)).unwrap();
    let d = read_all(&db, 1);
    assert_eq!((d.get_index_block_reads, d.get_filter_block_reads), (0, 0));
}
