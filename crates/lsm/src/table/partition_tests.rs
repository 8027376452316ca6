//! Partitioned index and filter blocks (`TableOptions::index_partition_bytes`): the same
//! answers as an unpartitioned table for every seek, scan and filter probe, in every place
//! the metadata can live (pinned, in the block cache, no cache at all); a cold get reads one
//! partition of each instead of the whole index and filter; damage is an error; and a
//! closed table's partitions leave the cache.

use std::path::PathBuf;
use std::sync::Arc;

use mosaic_env::RandomAccessFile;
use proptest::prelude::*;

use super::meta_tests::SharedFile;
use super::*;
use crate::error::Error;
use crate::key::{internal_key, Seqno, ValueKind};
use crate::stats::{Counters, ReadPurpose};

/// Where the reader keeps the metadata.
#[derive(Clone, Copy, Debug)]
enum Place {
    Pinned,
    InCache,
    NoCache,
}

fn write(entries: &[(Vec<u8>, Vec<u8>)], opts: TableOptions) -> SharedFile {
    let file = SharedFile::default();
    let mut w = TableWriter::new(Box::new(file.clone()), PathBuf::from("p.sst"), opts);
    for (k, v) in entries {
        w.add(k, v).unwrap();
    }
    w.finish(b"props").unwrap();
    file
}

fn open_at(
    file: &SharedFile,
    place: Place,
    cache_bytes: u64,
) -> (Arc<TableReader>, Option<Arc<BlockCache>>, Arc<Counters>) {
    let cache = match place {
        Place::Pinned => Some(BlockCache::new(cache_bytes)),
        Place::InCache => Some(BlockCache::with_metadata(cache_bytes, true)),
        Place::NoCache => None,
    };
    let counters = Arc::new(Counters::default());
    let f: Arc<dyn RandomAccessFile> = Arc::new(file.clone());
    let t = TableReader::open(
        f,
        PathBuf::from("000001.sst"),
        1,
        cache.clone(),
        Arc::clone(&counters),
    )
    .unwrap();
    (Arc::new(t), cache, counters)
}

fn bytewise(block: usize, partition: usize, prefix: usize) -> TableOptions {
    TableOptions {
        block_size_bytes: block,
        key_order: KeyOrder::Bytewise,
        index_partition_bytes: partition,
        filter_prefix_bytes: prefix,
        ..TableOptions::default()
    }
}

fn key(i: usize) -> Vec<u8> {
    format!("key{i:06}").into_bytes()
}

fn rows(n: usize) -> Vec<(Vec<u8>, Vec<u8>)> {
    (0..n)
        .map(|i| (key(i), format!("value-{i}-{}", "v".repeat(60)).into_bytes()))
        .collect()
}

/// Every entry from `target` on (`None`: from the first), up to `limit` of them.
fn scan(t: &Arc<TableReader>, target: Option<&[u8]>, limit: usize) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut it = t.iter(ReadPurpose::Scan, true);
    match target {
        Some(k) => it.seek(k).unwrap(),
        None => it.seek_to_first().unwrap(),
    }
    let mut out = Vec::new();
    while it.valid() && out.len() < limit {
        out.push((it.key().to_vec(), it.value().to_vec()));
        it.next().unwrap();
    }
    out
}

#[test]
fn a_small_index_is_written_unpartitioned_and_a_large_one_partitioned() {
    let (small, _, _) = open_at(
        &write(&rows(20), bytewise(256, 4096, 0)),
        Place::Pinned,
        1 << 20,
    );
    assert!(!small.footer.partitioned);
    let (large, _, _) = open_at(
        &write(&rows(2000), bytewise(256, 256, 0)),
        Place::Pinned,
        1 << 20,
    );
    assert!(large.footer.partitioned);
    // The data region is the same as without partitions: the metadata follows it.
    let (plain, _, _) = open_at(
        &write(&rows(2000), bytewise(256, 0, 0)),
        Place::Pinned,
        1 << 20,
    );
    assert_eq!(large.data_end(), plain.data_end());
    assert_eq!(large.data_blocks(), plain.data_blocks());
    assert_eq!(large.properties(), b"props");
}

#[test]
fn every_placement_reads_the_same_entries_as_an_unpartitioned_table() {
    let entries = rows(3000);
    let (plain, _, _) = open_at(
        &write(&entries, bytewise(512, 0, 0)),
        Place::Pinned,
        1 << 20,
    );
    let file = write(&entries, bytewise(512, 300, 0));
    for place in [Place::Pinned, Place::InCache, Place::NoCache] {
        // A cache of 8 KiB holds a handful of partitions: they are evicted and read back.
        let (t, _, _) = open_at(&file, place, 8 << 10);
        assert!(t.footer.partitioned);
        assert_eq!(scan(&t, None, usize::MAX), entries, "{place:?}");
        for target in [
            b"key001234".to_vec(),
            b"key0012345".to_vec(),
            b"a".to_vec(),
            b"z".to_vec(),
        ] {
            assert_eq!(
                scan(&t, Some(&target), 5),
                scan(&plain, Some(&target), 5),
                "{place:?}"
            );
        }
        for (k, _) in entries.iter().step_by(7) {
            assert!(t.may_contain(k, ReadPurpose::Get).unwrap(), "{place:?}");
        }
        // Past the last key no partition can hold it.
        assert!(!t.may_contain(b"zzz", ReadPurpose::Get).unwrap());
    }
}

#[test]
fn a_cold_get_reads_one_partition_of_index_and_filter_not_the_whole_metadata() {
    let entries = rows(20_000);
    let plain_file = write(&entries, bytewise(1024, 0, 0));
    let file = write(&entries, bytewise(1024, 1024, 0));
    let (plain, _, _) = open_at(&plain_file, Place::InCache, 64 << 20);
    let (t, cache, counters) = open_at(&file, Place::InCache, 64 << 20);
    let cache = cache.unwrap();
    assert!(t.pinned_memory_bytes() > 0, "the top-level blocks are held");
    assert!(t.pinned_memory_bytes() < plain.footer.index.size / 10);
    cache.clear();
    let before = counters.snapshot();
    let k = key(12_345);
    assert!(t.may_contain(&k, ReadPurpose::Get).unwrap());
    let mut it = t.iter(ReadPurpose::Get, true);
    it.seek(&k).unwrap();
    assert_eq!(it.key(), k.as_slice());
    let d = counters.snapshot().since(&before);
    assert_eq!(
        (
            d.get_index_block_reads,
            d.get_filter_block_reads,
            d.get_data_block_reads
        ),
        (1, 1, 1)
    );
    // One partition each: a small part of the whole index and filter.
    assert!(d.get_index_bytes_read < 2 * 1024 + 64, "{d:?}");
    assert!(
        d.get_index_bytes_read * 10 < plain.footer.index.size,
        "{d:?}"
    );
    assert!(
        d.get_filter_bytes_read * 10 < plain.footer.filter.size,
        "{d:?}"
    );
    drop(it);
    // Warm: nothing read.
    let before = counters.snapshot();
    let mut it = t.iter(ReadPurpose::Get, true);
    it.seek(&k).unwrap();
    assert!(t.may_contain(&k, ReadPurpose::Get).unwrap());
    assert_eq!(counters.snapshot().since(&before).get_block_reads(), 0);
    // Closed: its partitions leave the cache (its data blocks age out).
    assert_eq!(
        cache.len(),
        3,
        "an index partition, a filter partition, a data block"
    );
    drop(it);
    drop(t);
    assert_eq!(cache.len(), 1, "only the data block is left");
}

#[test]
fn prefix_filters_answer_for_prefixes_that_span_partitions() {
    // 50 prefixes of 40 keys each, tiny partitions: most prefixes straddle a boundary.
    let entries: Vec<_> = (0..2000)
        .map(|i| {
            (
                format!("p{:03}-{:04}", i / 40, i).into_bytes(),
                vec![b'v'; 40],
            )
        })
        .collect();
    let file = write(&entries, bytewise(256, 64, 4));
    for place in [Place::Pinned, Place::InCache] {
        let (t, _, _) = open_at(&file, place, 1 << 20);
        assert!(t.footer.partitioned);
        for p in 0..50 {
            let prefix = format!("p{p:03}").into_bytes();
            assert!(
                t.may_contain(&prefix, ReadPurpose::Scan).unwrap(),
                "prefix {p}"
            );
        }
        let false_positives = (50..1050)
            .filter(|p| {
                t.may_contain(format!("p{p:03}").as_bytes(), ReadPurpose::Scan)
                    .unwrap()
            })
            .count();
        assert!(
            false_positives < 100,
            "{false_positives} of 1000 absent prefixes"
        );
    }
}

#[test]
fn a_damaged_partition_is_an_error_not_a_panic() {
    let file = write(&rows(3000), bytewise(512, 300, 0));
    let (t, cache, _) = open_at(&file, Place::InCache, 1 << 20);
    let cache = cache.unwrap();
    let first_part = t.data_end();
    {
        let mut bytes = file.0.lock();
        bytes[usize::try_from(first_part).unwrap() + 5] ^= 0x20;
    }
    cache.clear();
    // Filter partitions are written first: the first one is damaged.
    match t.may_contain(&key(0), ReadPurpose::Get) {
        Err(Error::ChecksumMismatch { offset, .. }) => assert_eq!(offset, first_part),
        other => panic!("expected a checksum mismatch, got {other:?}"),
    }
    // Pinned, the damage is found at open.
    let f: Arc<dyn RandomAccessFile> = Arc::new(file.clone());
    let opened = TableReader::open(
        f,
        PathBuf::from("000001.sst"),
        1,
        Some(BlockCache::new(1 << 20)),
        Arc::new(Counters::default()),
    );
    assert!(matches!(opened, Err(Error::ChecksumMismatch { .. })));
}

#[test]
fn a_damaged_index_partition_fails_the_seek() {
    let entries = rows(3000);
    let plain = write(&entries, bytewise(512, 0, 0));
    let file = write(
        &entries,
        TableOptions {
            bloom_bits_per_key: 0,
            ..bytewise(512, 300, 0)
        },
    );
    let (t, cache, _) = open_at(&file, Place::InCache, 1 << 20);
    assert!(t.footer.partitioned && t.footer.filter.size == 0);
    let (p, _, _) = open_at(&plain, Place::Pinned, 1 << 20);
    // No filter: the first metadata block is the first index partition.
    let first_part = t.data_end();
    assert_eq!(first_part, p.data_end());
    {
        let mut bytes = file.0.lock();
        bytes[usize::try_from(first_part).unwrap() + 2] ^= 0x01;
    }
    cache.unwrap().clear();
    let mut it = t.iter(ReadPurpose::Get, true);
    assert!(matches!(
        it.seek(&key(1)),
        Err(Error::ChecksumMismatch { .. })
    ));
    assert!(!it.valid());
    // A key indexed by an undamaged partition still reads.
    let mut it = t.iter(ReadPurpose::Get, true);
    it.seek(&key(2999)).unwrap();
    assert_eq!(it.key(), key(2999).as_slice());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Internal keys with several versions per user key (so versions straddle partition
    /// boundaries), any partition size: seeks and filter probes agree with an unpartitioned
    /// table, and no present user key is ever filtered out.
    #[test]
    fn partitioned_internal_tables_agree_with_unpartitioned_ones(
        users in proptest::collection::btree_set(proptest::collection::vec(0u8..4, 1..6), 1..120),
        versions in 1u64..5,
        block in 32usize..300,
        partition in 1usize..200,
        targets in proptest::collection::vec(proptest::collection::vec(0u8..4, 0..7), 1..20),
        in_cache in any::<bool>(),
    ) {
        let mut entries = Vec::new();
        for (n, u) in users.iter().enumerate() {
            for v in (0..versions).rev() {
                entries.push((internal_key(u, v + 1, Seqno(n as u64), ValueKind::Put), vec![n as u8; 20]));
            }
        }
        let opts = |partition| TableOptions {
            block_size_bytes: block,
            index_partition_bytes: partition,
            ..TableOptions::default()
        };
        let place = if in_cache { Place::InCache } else { Place::Pinned };
        let (plain, _, _) = open_at(&write(&entries, opts(0)), Place::Pinned, 1 << 20);
        let (t, _, _) = open_at(&write(&entries, opts(partition)), place, 4 << 10);
        prop_assert_eq!(scan(&t, None, usize::MAX), entries.clone());
        for target in &targets {
            let ik = internal_key(target, 3, Seqno(u64::MAX >> 9), ValueKind::Put);
            prop_assert_eq!(scan(&t, Some(&ik), 3), scan(&plain, Some(&ik), 3));
        }
        for u in &users {
            prop_assert!(t.may_contain(u, ReadPurpose::Get).unwrap());
        }
    }
}
