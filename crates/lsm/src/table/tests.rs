//! Table-level tests: write with [`TableWriter`], read back with [`TableReader`] through
//! in-memory files, and damage the bytes in between.

use std::io;
use std::path::PathBuf;
use std::sync::atomic::Ordering as AtomicOrdering;
use std::sync::Arc;

use mosaic_env::{RandomAccessFile, WritableFile};
use parking_lot::Mutex;
use proptest::prelude::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::*;
use crate::error::Error;
use crate::key::{compare_internal, internal_key, KeyOrder, Seqno, ValueKind};
use crate::stats::{Counters, ReadPurpose};

type Entries = Vec<(Vec<u8>, Vec<u8>)>;

/// An in-memory file being written; optionally fails once `space_bytes` are used.
struct MemWritable {
    buf: Arc<Mutex<Vec<u8>>>,
    space_bytes: Option<usize>,
    syncs: Arc<Mutex<u32>>,
}

impl WritableFile for MemWritable {
    fn append(&mut self, data: &[u8]) -> io::Result<()> {
        let mut buf = self.buf.lock();
        if let Some(space) = self.space_bytes {
            if buf.len() + data.len() > space {
                return Err(io::Error::from_raw_os_error(28));
            }
        }
        buf.extend_from_slice(data);
        Ok(())
    }
    fn sync_data(&mut self) -> io::Result<()> {
        *self.syncs.lock() += 1;
        Ok(())
    }
    fn len(&self) -> u64 {
        self.buf.lock().len() as u64
    }
}

/// A finished in-memory file.
struct MemFile(Vec<u8>);

impl RandomAccessFile for MemFile {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        let start = usize::try_from(offset).map_err(|_| io::ErrorKind::UnexpectedEof)?;
        let src = start
            .checked_add(buf.len())
            .and_then(|end| self.0.get(start..end))
            .ok_or(io::ErrorKind::UnexpectedEof)?;
        buf.copy_from_slice(src);
        Ok(())
    }
    fn len(&self) -> u64 {
        self.0.len() as u64
    }
}

fn path() -> PathBuf {
    PathBuf::from("/mem/000001.sst")
}

fn write_table(entries: &Entries, opts: TableOptions, props: &[u8]) -> (Vec<u8>, TableSummary) {
    let buf = Arc::new(Mutex::new(Vec::new()));
    let syncs = Arc::new(Mutex::new(0));
    let file = MemWritable {
        buf: Arc::clone(&buf),
        space_bytes: None,
        syncs: Arc::clone(&syncs),
    };
    let mut w = TableWriter::new(Box::new(file), path(), opts);
    for (k, v) in entries {
        w.add(k, v).unwrap();
    }
    assert_eq!(w.entries(), entries.len() as u64);
    let summary = w.finish(props).unwrap();
    assert_eq!(*syncs.lock(), 1, "finish syncs once");
    let bytes = buf.lock().clone();
    assert_eq!(summary.size_bytes, bytes.len() as u64);
    (bytes, summary)
}

fn open_with(
    bytes: Vec<u8>,
    cache: Option<Arc<BlockCache>>,
    counters: Arc<Counters>,
) -> crate::Result<Arc<TableReader>> {
    TableReader::open(Arc::new(MemFile(bytes)), path(), 1, cache, counters).map(Arc::new)
}

fn open(bytes: Vec<u8>) -> crate::Result<Arc<TableReader>> {
    open_with(bytes, None, Arc::new(Counters::default()))
}

fn scan(t: &Arc<TableReader>) -> crate::Result<Entries> {
    let mut it = t.iter(ReadPurpose::Scan, true);
    let mut out = Vec::new();
    it.seek_to_first()?;
    while it.valid() {
        out.push((it.key().to_vec(), it.value().to_vec()));
        it.next()?;
    }
    Ok(out)
}

fn random_entries(rng: &mut StdRng, n: usize, order: KeyOrder) -> Entries {
    let mut keys: Vec<Vec<u8>> = (0..n)
        .map(|_| {
            let len = rng.gen_range(1..24);
            // A small alphabet makes shared prefixes and repeated user keys common.
            let user: Vec<u8> = (0..len).map(|_| b'a' + rng.gen_range(0..4u8)).collect();
            match order {
                KeyOrder::Bytewise => user,
                KeyOrder::Internal => internal_key(
                    &user,
                    rng.gen_range(0..4),
                    Seqno(rng.gen_range(0..1000)),
                    ValueKind::Put,
                ),
            }
        })
        .collect();
    keys.sort_by(|a, b| order.compare(a, b));
    keys.dedup_by(|a, b| order.compare(a, b) == std::cmp::Ordering::Equal);
    keys.into_iter()
        .map(|k| {
            let len = rng.gen_range(0..300);
            // Half the values are compressible.
            let v: Vec<u8> = if rng.gen_bool(0.5) {
                vec![rng.gen(); len]
            } else {
                (0..len).map(|_| rng.gen()).collect()
            };
            (k, v)
        })
        .collect()
}

fn opts(order: KeyOrder, compression: Compression, block_size_bytes: usize) -> TableOptions {
    TableOptions {
        block_size_bytes,
        compression,
        key_order: order,
        ..TableOptions::default()
    }
}

#[test]
fn random_sorted_sets_round_trip_in_both_orders_with_and_without_lz4() {
    let mut rng = StdRng::seed_from_u64(7);
    for order in [KeyOrder::Bytewise, KeyOrder::Internal] {
        for compression in [Compression::None, Compression::Lz4] {
            for (n, block_size) in [(1, 4096), (40, 256), (2000, 4096), (3000, 512)] {
                let entries = random_entries(&mut rng, n, order);
                let (bytes, summary) =
                    write_table(&entries, opts(order, compression, block_size), b"props");
                assert_eq!(summary.entries, entries.len() as u64);
                assert_eq!(summary.smallest_key, entries[0].0);
                assert_eq!(summary.largest_key, entries.last().unwrap().0);
                let t = open(bytes).unwrap();
                assert_eq!(t.key_order(), order);
                assert_eq!(t.entries(), entries.len() as u64);
                assert_eq!(t.data_blocks(), summary.data_blocks);
                assert_eq!(t.properties(), b"props");
                assert_eq!(scan(&t).unwrap(), entries, "{order:?} {compression:?} {n}");
                let mut it = t.iter(ReadPurpose::Get, true);
                for (k, v) in &entries {
                    assert!(t
                        .may_contain(order.filter_key(k), ReadPurpose::Get)
                        .unwrap());
                    it.seek(k).unwrap();
                    assert!(it.valid());
                    assert_eq!(it.key(), &k[..]);
                    assert_eq!(it.value(), &v[..]);
                }
            }
        }
    }
}

#[test]
fn lz4_shrinks_compressible_tables_and_skips_incompressible_blocks() {
    let entries: Entries = (0..500u32)
        .map(|i| (format!("k{i:06}").into_bytes(), vec![b'x'; 200]))
        .collect();
    let (plain, _) = write_table(
        &entries,
        opts(KeyOrder::Bytewise, Compression::None, 4096),
        b"",
    );
    let (lz4, _) = write_table(
        &entries,
        opts(KeyOrder::Bytewise, Compression::Lz4, 4096),
        b"",
    );
    assert!(
        lz4.len() * 4 < plain.len(),
        "{} vs {}",
        lz4.len(),
        plain.len()
    );
    assert_eq!(scan(&open(lz4).unwrap()).unwrap(), entries);

    let mut rng = StdRng::seed_from_u64(3);
    let random: Entries = (0..200u32)
        .map(|i| {
            (
                format!("k{i:06}").into_bytes(),
                (0..200).map(|_| rng.gen()).collect(),
            )
        })
        .collect();
    let (plain, _) = write_table(
        &random,
        opts(KeyOrder::Bytewise, Compression::None, 4096),
        b"",
    );
    let (lz4, _) = write_table(
        &random,
        opts(KeyOrder::Bytewise, Compression::Lz4, 4096),
        b"",
    );
    assert_eq!(plain, lz4, "incompressible blocks are stored uncompressed");
}

fn even_keys(n: u32) -> Entries {
    (0..n)
        .map(|i| {
            (
                format!("key{:06}", i * 2).into_bytes(),
                format!("value{i}").into_bytes(),
            )
        })
        .collect()
}

#[test]
fn seek_finds_first_key_at_or_after_target() {
    let entries = even_keys(300);
    for block_size in [1, 64, 4096] {
        let (bytes, _) = write_table(
            &entries,
            opts(KeyOrder::Bytewise, Compression::None, block_size),
            b"",
        );
        let t = open(bytes).unwrap();
        let mut it = t.iter(ReadPurpose::Get, true);
        // Before the first key.
        it.seek(b"a").unwrap();
        assert_eq!(it.key(), b"key000000");
        it.seek(b"").unwrap();
        assert_eq!(it.key(), b"key000000");
        // Past the last key.
        it.seek(b"key999999").unwrap();
        assert!(!it.valid());
        assert_eq!(it.key(), b"");
        it.seek(b"zzz").unwrap();
        assert!(!it.valid());
        for i in 0..300u32 {
            // Exact.
            it.seek(format!("key{:06}", i * 2).as_bytes()).unwrap();
            assert_eq!(it.key(), format!("key{:06}", i * 2).as_bytes());
            assert_eq!(it.value(), format!("value{i}").as_bytes());
            // Between keys.
            it.seek(format!("key{:06}", i * 2 + 1).as_bytes()).unwrap();
            if i + 1 < 300 {
                assert_eq!(it.key(), format!("key{:06}", i * 2 + 2).as_bytes());
                it.next().unwrap();
                if i + 2 < 300 {
                    assert_eq!(it.key(), format!("key{:06}", i * 2 + 4).as_bytes());
                }
            } else {
                assert!(!it.valid());
            }
        }
        // Backwards seeks after forward ones.
        it.seek(b"key000500").unwrap();
        it.seek(b"key000010").unwrap();
        assert_eq!(it.key(), b"key000010");
    }
}

#[test]
fn internal_order_seeks_land_on_newest_version_of_a_user_key() {
    let mut entries = Entries::new();
    for u in 0..50u32 {
        let user = format!("user{u:03}").into_bytes();
        for ts in (1..=5u64).rev() {
            entries.push((
                internal_key(&user, ts * 10, Seqno(ts), ValueKind::Put),
                format!("{u}@{ts}").into_bytes(),
            ));
        }
    }
    entries.sort_by(|a, b| compare_internal(&a.0, &b.0));
    let (bytes, _) = write_table(
        &entries,
        opts(KeyOrder::Internal, Compression::Lz4, 128),
        b"",
    );
    let t = open(bytes).unwrap();
    let mut it = t.iter(ReadPurpose::Get, true);
    for u in 0..50u32 {
        let user = format!("user{u:03}").into_bytes();
        assert!(t.may_contain(&user, ReadPurpose::Get).unwrap());
        it.seek(&crate::key::seek_key(&user)).unwrap();
        assert_eq!(it.value(), format!("{u}@5").as_bytes());
        // Seeking "as of" ts 25 finds the newest version at or below it.
        it.seek(&internal_key(
            &user,
            25,
            Seqno(crate::key::SEQNO_MAX),
            ValueKind::Put,
        ))
        .unwrap();
        assert_eq!(it.value(), format!("{u}@2").as_bytes());
    }
}

#[test]
fn restart_boundaries_round_trip_for_every_interval() {
    for interval in [1, 2, 3, 15, 16, 17] {
        for n in [1, 15, 16, 17, 32, 33, 100] {
            let entries = even_keys(n);
            let o = TableOptions {
                restart_interval: interval,
                key_order: KeyOrder::Bytewise,
                block_size_bytes: 1 << 20,
                ..TableOptions::default()
            };
            let (bytes, summary) = write_table(&entries, o, b"");
            assert_eq!(summary.data_blocks, 1);
            let t = open(bytes).unwrap();
            assert_eq!(scan(&t).unwrap(), entries);
            let mut it = t.iter(ReadPurpose::Get, true);
            for (k, v) in &entries {
                it.seek(k).unwrap();
                assert_eq!((it.key(), it.value()), (&k[..], &v[..]));
            }
        }
    }
}

#[test]
fn empty_table_has_no_entries() {
    for bits in [0, 10] {
        let o = TableOptions {
            bloom_bits_per_key: bits,
            ..TableOptions::default()
        };
        let (bytes, summary) = write_table(&Entries::new(), o, b"p");
        assert_eq!(
            summary,
            TableSummary {
                size_bytes: bytes.len() as u64,
                entries: 0,
                data_blocks: 0,
                smallest_key: vec![],
                largest_key: vec![],
            }
        );
        let t = open(bytes).unwrap();
        assert_eq!(t.entries(), 0);
        assert_eq!(t.properties(), b"p");
        assert!(
            t.may_contain(b"anything", ReadPurpose::Get).unwrap(),
            "no filter was written"
        );
        let mut it = t.iter(ReadPurpose::Scan, true);
        it.seek_to_first().unwrap();
        assert!(!it.valid());
        it.seek(b"x").unwrap();
        assert!(!it.valid());
        it.next().unwrap();
        assert!(!it.valid());
    }
}

#[test]
fn a_value_larger_than_the_block_size_gets_its_own_block() {
    for compression in [Compression::None, Compression::Lz4] {
        let mut entries = even_keys(10);
        let huge: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
        entries[5].1 = huge;
        // lz4's best case (a long run) stays inside the reader's expansion bound.
        entries[7].1 = vec![0; 3 << 20];
        let (bytes, summary) =
            write_table(&entries, opts(KeyOrder::Bytewise, compression, 4096), b"");
        // Keys 0–4 share a block; 5 and 7 each have their own, so do 6 (after 5) and 8–9:
        // no small entry shares a block with a huge one.
        assert_eq!(summary.data_blocks, 5);
        if compression == Compression::Lz4 {
            assert!(
                bytes.len() < 100_000,
                "huge blocks are compressed: {}",
                bytes.len()
            );
        }
        let t = open(bytes).unwrap();
        assert_eq!(scan(&t).unwrap(), entries);
        let mut it = t.iter(ReadPurpose::Get, true);
        it.seek(&entries[5].0).unwrap();
        assert_eq!(it.value(), &entries[5].1[..]);
    }
}

#[test]
fn keys_out_of_order_are_rejected() {
    for order in [KeyOrder::Bytewise, KeyOrder::Internal] {
        let file = MemWritable {
            buf: Arc::default(),
            space_bytes: None,
            syncs: Arc::default(),
        };
        let mut w = TableWriter::new(Box::new(file), path(), opts(order, Compression::None, 64));
        let (a, b) = match order {
            KeyOrder::Bytewise => (b"a".to_vec(), b"b".to_vec()),
            KeyOrder::Internal => (
                // Newer versions of one user key sort first.
                internal_key(b"k", 9, Seqno(1), ValueKind::Put),
                internal_key(b"k", 3, Seqno(2), ValueKind::Put),
            ),
        };
        w.add(&a, b"1").unwrap();
        w.add(&b, b"2").unwrap();
        assert!(matches!(w.add(&a, b"3"), Err(Error::InvalidArgument(_))));
        assert!(matches!(w.add(&b, b"3"), Err(Error::InvalidArgument(_))));
        assert_eq!(w.entries(), 2);
        let summary = w.finish(b"").unwrap();
        assert_eq!(summary.entries, 2);
    }
}

#[test]
fn a_full_disk_is_reported_and_the_writer_refuses_further_writes() {
    let file = MemWritable {
        buf: Arc::default(),
        space_bytes: Some(1000),
        syncs: Arc::default(),
    };
    let mut w = TableWriter::new(
        Box::new(file),
        path(),
        opts(KeyOrder::Bytewise, Compression::None, 256),
    );
    let mut err = None;
    // More than the writer buffers (256 KiB), so an append reaches the full file.
    for (k, _) in even_keys(1000) {
        if let Err(e) = w.add(&k, &[7; 1024]) {
            err = Some(e);
            break;
        }
    }
    let err = err.expect("the disk fills up");
    assert!(err.is_no_space(), "{err}");
    assert!(matches!(w.add(b"zzz", b""), Err(Error::Poisoned { .. })));
    assert!(w.finish(b"").is_err());
}

#[test]
fn estimated_size_tracks_written_and_pending_bytes() {
    let file = MemWritable {
        buf: Arc::default(),
        space_bytes: None,
        syncs: Arc::default(),
    };
    let mut w = TableWriter::new(
        Box::new(file),
        path(),
        opts(KeyOrder::Bytewise, Compression::None, 4096),
    );
    assert_eq!(w.estimated_size_bytes(), 0);
    let mut last = 0;
    for (k, v) in even_keys(500) {
        w.add(&k, &v).unwrap();
        let now = w.estimated_size_bytes();
        assert!(now > last);
        last = now;
    }
    let summary = w.finish(b"").unwrap();
    assert!(summary.size_bytes >= last);
}

#[test]
fn table_filter_has_about_one_percent_false_positives() {
    let entries: Entries = (0..20_000u32)
        .map(|i| (format!("present{i:08}").into_bytes(), vec![]))
        .collect();
    let (bytes, _) = write_table(
        &entries,
        opts(KeyOrder::Bytewise, Compression::None, 4096),
        b"",
    );
    let t = open(bytes).unwrap();
    let fp = (0..20_000u32)
        .filter(|i| {
            t.may_contain(format!("absent{i:08}").as_bytes(), ReadPurpose::Get)
                .unwrap()
        })
        .count();
    assert!(fp < 300, "{fp} false positives in 20000");
    let (bytes, _) = write_table(
        &entries,
        TableOptions {
            bloom_bits_per_key: 0,
            key_order: KeyOrder::Bytewise,
            ..TableOptions::default()
        },
        b"",
    );
    assert!(open(bytes)
        .unwrap()
        .may_contain(b"absent", ReadPurpose::Get)
        .unwrap());
}

#[test]
fn counters_and_cache_account_every_block_read() {
    let entries = even_keys(2000);
    let (bytes, summary) = write_table(
        &entries,
        opts(KeyOrder::Bytewise, Compression::None, 1024),
        b"",
    );
    let blocks = summary.data_blocks;
    assert!(blocks > 10);
    let counters = Arc::new(Counters::default());
    let cache = BlockCache::new(1 << 20);
    let t = open_with(
        bytes.clone(),
        Some(Arc::clone(&cache)),
        Arc::clone(&counters),
    )
    .unwrap();
    let snap = counters.snapshot();
    assert!(snap.open_bytes_read > 80);
    assert_eq!(snap.block_cache_misses, 0);

    // A compaction-style scan fills nothing.
    let mut it = t.iter(ReadPurpose::Compaction, false);
    it.seek_to_first().unwrap();
    while it.valid() {
        it.next().unwrap();
    }
    let snap = counters.snapshot();
    assert_eq!(snap.block_cache_misses, blocks);
    assert_eq!(snap.block_cache_hits, 0);
    let data_bytes = snap.compaction_bytes_read;
    assert!(data_bytes > 0 && data_bytes < bytes.len() as u64);
    assert_eq!(cache.len(), 0);
    assert_eq!(cache.usage_bytes(), 0);

    // A filling scan misses once per block, then a second scan hits only.
    assert_eq!(scan(&t).unwrap(), entries);
    let snap = counters.snapshot();
    assert_eq!(snap.block_cache_misses, 2 * blocks);
    // Read-ahead windows may overlap by a partial block.
    assert!(snap.scan_bytes_read >= data_bytes);
    assert!(snap.scan_bytes_read < data_bytes + data_bytes / 4);
    assert_eq!(cache.len() as u64, blocks);
    scan(&t).unwrap();
    let snap = counters.snapshot();
    assert_eq!(snap.block_cache_misses, 2 * blocks);
    assert_eq!(snap.block_cache_hits, blocks);
    assert_eq!(snap.get_bytes_read, 0);

    // Point reads of cached blocks read nothing from disk.
    let mut it = t.iter(ReadPurpose::Get, true);
    it.seek(&entries[777].0).unwrap();
    assert_eq!(it.value(), &entries[777].1[..]);
    assert_eq!(counters.snapshot().get_bytes_read, 0);

    // Without a cache every block read is a miss.
    let counters = Arc::new(Counters::default());
    let t = open_with(bytes, None, Arc::clone(&counters)).unwrap();
    let mut it = t.iter(ReadPurpose::Get, true);
    it.seek(&entries[777].0).unwrap();
    it.seek(&entries[1777].0).unwrap();
    let snap = counters.snapshot();
    assert_eq!(snap.block_cache_misses, 2);
    assert!(snap.get_bytes_read > 2000);
    assert_eq!(counters.block_cache_hits.load(AtomicOrdering::Relaxed), 0);
}

#[test]
fn blocks_over_the_admission_limit_are_read_past_the_cache() {
    let mut entries: Entries = (0..100)
        .map(|i| (format!("key{i:03}").into_bytes(), vec![b's'; 10]))
        .collect();
    entries[50].1 = vec![b'L'; 64 << 10];
    let (bytes, _) = write_table(
        &entries,
        opts(KeyOrder::Bytewise, Compression::None, 1024),
        b"",
    );
    let counters = Arc::new(Counters::default());
    let cache = BlockCache::new(1 << 20).admitting_up_to(16 << 10);
    let t = open_with(bytes, Some(Arc::clone(&cache)), Arc::clone(&counters)).unwrap();
    let get = |i: usize| {
        let mut it = t.iter(ReadPurpose::Get, true);
        it.seek(&entries[i].0).unwrap();
        assert_eq!(it.value(), &entries[i].1[..]);
    };
    // The large value's block is read from the file each time, and never cached.
    get(50);
    get(50);
    let snap = counters.snapshot();
    assert_eq!((snap.block_cache_misses, snap.block_cache_hits), (2, 0));
    assert!(snap.get_bytes_read > 2 * (64 << 10));
    assert_eq!(cache.len(), 0);
    // A small value's block is cached as before.
    get(10);
    get(10);
    let snap = counters.snapshot();
    assert_eq!((snap.block_cache_misses, snap.block_cache_hits), (3, 1));
    assert_eq!(cache.len(), 1);
    // Without a limit the large block is cached too.
    let (bytes, _) = write_table(
        &entries,
        opts(KeyOrder::Bytewise, Compression::None, 1024),
        b"",
    );
    let cache = BlockCache::new(1 << 20);
    let t = open_with(
        bytes,
        Some(Arc::clone(&cache)),
        Arc::new(Counters::default()),
    )
    .unwrap();
    let mut it = t.iter(ReadPurpose::Get, true);
    it.seek(&entries[50].0).unwrap();
    assert_eq!(cache.len(), 1);
}

/// A file that counts its reads.
struct CountingFile(MemFile, std::sync::atomic::AtomicU64);

impl RandomAccessFile for CountingFile {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        self.1.fetch_add(1, AtomicOrdering::Relaxed);
        self.0.read_exact_at(buf, offset)
    }
    fn len(&self) -> u64 {
        self.0.len()
    }
}

#[test]
fn compactions_and_long_scans_read_ahead_but_point_reads_do_not() {
    let entries: Entries = (0..3000u32)
        .map(|i| (format!("key{i:08}").into_bytes(), vec![i as u8; 1000]))
        .collect();
    let (bytes, summary) = write_table(
        &entries,
        opts(KeyOrder::Bytewise, Compression::None, 4096),
        b"",
    );
    let blocks = summary.data_blocks;
    assert!(blocks > 500);
    let file = Arc::new(CountingFile(MemFile(bytes), Default::default()));
    let t = Arc::new(
        TableReader::open(
            Arc::clone(&file) as Arc<dyn RandomAccessFile>,
            path(),
            1,
            None,
            Arc::new(Counters::default()),
        )
        .unwrap(),
    );
    let reads = || file.1.swap(0, AtomicOrdering::Relaxed);
    reads();
    for (purpose, reads_max) in [
        (ReadPurpose::Compaction, (summary.size_bytes >> 19) + 1),
        (ReadPurpose::Scan, 40),
    ] {
        let mut it = t.iter(purpose, false);
        let mut n = 0;
        it.seek_to_first().unwrap();
        while it.valid() {
            assert_eq!(it.value(), &entries[n].1[..]);
            n += 1;
            it.next().unwrap();
        }
        assert_eq!(n, entries.len());
        let r = reads();
        assert!(r <= reads_max, "{purpose:?}: {r} reads for {blocks} blocks");
    }
    // Point reads, and a short scan, read only the blocks they use.
    let mut it = t.iter(ReadPurpose::Get, true);
    for i in (0..3000).step_by(100) {
        it.seek(&entries[i].0).unwrap();
    }
    assert_eq!(reads(), 30);
    let mut it = t.iter(ReadPurpose::Scan, true);
    it.seek(&entries[1000].0).unwrap();
    it.next().unwrap();
    assert_eq!(reads(), 1);
}

#[test]
fn cache_stays_within_its_byte_bound() {
    let entries: Entries = (0..5000u32)
        .map(|i| (format!("key{i:08}").into_bytes(), vec![i as u8; 1000]))
        .collect();
    let (bytes, summary) = write_table(
        &entries,
        opts(KeyOrder::Bytewise, Compression::None, 4096),
        b"",
    );
    let capacity = 256 * 1024;
    let cache = BlockCache::new(capacity);
    assert_eq!(cache.capacity_bytes(), capacity);
    for id in 0..3 {
        let t = Arc::new(
            TableReader::open(
                Arc::new(MemFile(bytes.clone())),
                path(),
                id,
                Some(Arc::clone(&cache)),
                Arc::new(Counters::default()),
            )
            .unwrap(),
        );
        assert_eq!(scan(&t).unwrap().len(), entries.len());
        assert!(
            cache.usage_bytes() <= capacity,
            "{} > {capacity}",
            cache.usage_bytes()
        );
    }
    assert!(cache.usage_bytes() > capacity / 2, "the cache is used");
    assert!((cache.len() as u64) < summary.data_blocks);
}

#[test]
fn iterators_and_readers_cross_threads() {
    fn assert_send<T: Send>() {}
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send::<TableIter>();
    assert_send_sync::<TableReader>();
    assert_send_sync::<BlockCache>();
    let entries = even_keys(3000);
    let (bytes, _) = write_table(
        &entries,
        opts(KeyOrder::Bytewise, Compression::Lz4, 512),
        b"",
    );
    let cache = BlockCache::new(64 * 1024);
    let t = open_with(bytes, Some(cache), Arc::new(Counters::default())).unwrap();
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| assert_eq!(scan(&t).unwrap(), entries));
        }
    });
}

/// Opens and fully reads `bytes`; every outcome must be an error or exactly `expected`.
fn read_back(bytes: Vec<u8>, expected: &Entries, props: &[u8]) -> Result<(), Error> {
    let cache = BlockCache::new(1 << 20);
    let t = open_with(bytes, Some(cache), Arc::new(Counters::default()))?;
    let got = scan(&t)?;
    assert_eq!(&got, expected, "damaged table returned different data");
    assert_eq!(
        t.properties(),
        props,
        "damaged table returned different properties"
    );
    let mut it = t.iter(ReadPurpose::Get, true);
    for (k, v) in expected {
        it.seek(k)?;
        assert_eq!((it.key(), it.value()), (&k[..], &v[..]));
    }
    Ok(())
}

#[test]
fn every_flipped_byte_is_detected() {
    for compression in [Compression::None, Compression::Lz4] {
        let entries: Entries = (0..40u32)
            .map(|i| {
                (
                    format!("key{i:04}").into_bytes(),
                    vec![b'v'; (i % 7) as usize * 5],
                )
            })
            .collect();
        let (bytes, _) = write_table(&entries, opts(KeyOrder::Bytewise, compression, 128), b"pp");
        read_back(bytes.clone(), &entries, b"pp").unwrap();
        for i in 0..bytes.len() {
            for mask in [0x01u8, 0x80, 0xff] {
                let mut damaged = bytes.clone();
                damaged[i] ^= mask;
                let err = read_back(damaged, &entries, b"pp")
                    .expect_err("every byte is covered by a checksum or the magic");
                assert!(err.is_corruption(), "byte {i}: {err}");
            }
        }
    }
}

#[test]
fn sampled_flips_in_a_larger_table_never_return_wrong_data() {
    let mut rng = StdRng::seed_from_u64(11);
    let entries = random_entries(&mut rng, 3000, KeyOrder::Internal);
    let (bytes, _) = write_table(
        &entries,
        opts(KeyOrder::Internal, Compression::Lz4, 1024),
        b"x",
    );
    for _ in 0..300 {
        let mut damaged = bytes.clone();
        let i = rng.gen_range(0..damaged.len());
        damaged[i] ^= 1 << rng.gen_range(0..8);
        assert!(read_back(damaged, &entries, b"x")
            .unwrap_err()
            .is_corruption());
    }
}

#[test]
fn every_truncation_is_an_error() {
    let entries = even_keys(60);
    let (bytes, _) = write_table(
        &entries,
        opts(KeyOrder::Bytewise, Compression::None, 256),
        b"",
    );
    for len in 0..bytes.len() {
        let err = read_back(bytes[..len].to_vec(), &entries, b"").unwrap_err();
        assert!(err.is_corruption(), "length {len}: {err}");
    }
    // Appended garbage is detected too (the footer is no longer at the end).
    let mut longer = bytes;
    longer.extend_from_slice(&[0; 3]);
    assert!(read_back(longer, &entries, b"").is_err());
}

#[test]
fn errors_name_the_file_and_block_offset() {
    let entries = even_keys(100);
    let (bytes, _) = write_table(
        &entries,
        opts(KeyOrder::Bytewise, Compression::None, 256),
        b"",
    );
    let mut damaged = bytes.clone();
    damaged[300] ^= 0x10;
    let t = open(damaged).unwrap();
    let mut it = t.iter(ReadPurpose::Scan, true);
    let mut result = it.seek_to_first();
    while result.is_ok() && it.valid() {
        result = it.next();
    }
    match result {
        Err(Error::ChecksumMismatch { file, offset, .. }) => {
            assert_eq!(file, path());
            assert!(offset <= 300);
        }
        other => panic!("expected a checksum mismatch, got {other:?}"),
    }
    assert!(!it.valid(), "an error invalidates the iterator");
    let msg = open(bytes[..50].to_vec()).unwrap_err().to_string();
    assert!(msg.contains("000001.sst"), "{msg}");
}

/// Reads everything reachable, as a fuzzer would; must never panic.
fn exercise(t: &Arc<TableReader>, targets: &[Vec<u8>]) {
    let _ = t.may_contain(b"k", ReadPurpose::Get);
    let mut it = t.iter(ReadPurpose::Scan, true);
    if it.seek_to_first().is_ok() {
        let mut steps = 0;
        while it.valid() && steps < 10_000 {
            let _ = (it.key(), it.value());
            if it.next().is_err() {
                break;
            }
            steps += 1;
        }
    }
    for target in targets {
        let _ = it.seek(target);
        let _ = it.next();
    }
}

fn open_unverified(bytes: Vec<u8>) -> crate::Result<Arc<TableReader>> {
    TableReader::open_without_checksums(
        Arc::new(MemFile(bytes)),
        path(),
        1,
        Some(BlockCache::new(1 << 16)),
        Arc::new(Counters::default()),
    )
    .map(Arc::new)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn arbitrary_bytes_as_a_table_never_panic(
        bytes in proptest::collection::vec(any::<u8>(), 0..400),
        targets in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..20), 0..4),
    ) {
        if let Ok(t) = open(bytes.clone()) {
            exercise(&t, &targets);
        }
        if let Ok(t) = open_unverified(bytes) {
            exercise(&t, &targets);
        }
    }

    #[test]
    fn mutated_tables_read_without_checksums_never_panic(
        seed in any::<u64>(),
        flips in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8),
        lz4 in any::<bool>(),
    ) {
        let mut rng = StdRng::seed_from_u64(seed);
        let order = if seed % 2 == 0 { KeyOrder::Bytewise } else { KeyOrder::Internal };
        let entries = random_entries(&mut rng, 60, order);
        let compression = if lz4 { Compression::Lz4 } else { Compression::None };
        let (mut bytes, _) = write_table(&entries, opts(order, compression, 200), b"props");
        for (idx, b) in flips {
            let i = idx.index(bytes.len());
            bytes[i] = b;
        }
        let targets: Vec<Vec<u8>> = entries.iter().step_by(7).map(|(k, _)| k.clone()).collect();
        if let Ok(t) = open_unverified(bytes.clone()) {
            exercise(&t, &targets);
        }
        // With checksums on, damage is always detected.
        if let Ok(t) = open(bytes) {
            if let Ok(got) = scan(&t) {
                prop_assert_eq!(got, entries);
            }
        }
    }
}

/// Rough throughput numbers (thread CPU time) for the benchmark shape (24-byte user keys,
/// 1000-byte values):
/// `cargo test --release -p mosaic-lsm table::tests::throughput -- --ignored --nocapture`.
#[test]
#[ignore = "a measurement, not a check"]
fn throughput() {
    use mosaic_env::{Fs, RealFs};
    let dir = tempfile::tempdir().unwrap();
    let file_path = dir.path().join("t.sst");
    let n = 100_000u64;
    let mut rng = StdRng::seed_from_u64(1);
    let value: Vec<u8> = (0..1000).map(|_| rng.gen_range(b'a'..=b'z')).collect();
    let key = |i: u64| {
        internal_key(
            format!("user{i:020}").as_bytes(),
            1,
            Seqno(i),
            ValueKind::Put,
        )
    };
    let start = thread_cpu_ns();
    let mut w = TableWriter::new(
        RealFs.create(&file_path).unwrap(),
        file_path.clone(),
        TableOptions::default(),
    );
    for i in 0..n {
        w.add(&key(i), &value).unwrap();
    }
    let summary = w.finish(b"").unwrap();
    let el = std::time::Duration::from_nanos(thread_cpu_ns() - start);
    println!(
        "write: {n} entries, {} MB in {el:?} ({:.0} MB/s)",
        summary.size_bytes >> 20,
        summary.size_bytes as f64 / el.as_secs_f64() / 1e6
    );
    for cached in [false, true] {
        let cache = cached.then(|| BlockCache::new(1 << 30));
        let counters = Arc::new(Counters::default());
        let t = Arc::new(
            TableReader::open(
                RealFs.open_read(&file_path, false).unwrap(),
                file_path.clone(),
                1,
                cache,
                Arc::clone(&counters),
            )
            .unwrap(),
        );
        let start = thread_cpu_ns();
        let mut it = t.iter(ReadPurpose::Scan, true);
        it.seek_to_first().unwrap();
        let mut count = 0u64;
        let mut bytes = 0usize;
        while it.valid() {
            bytes += it.key().len() + it.value().len();
            count += 1;
            it.next().unwrap();
        }
        let el = std::time::Duration::from_nanos(thread_cpu_ns() - start);
        assert_eq!(count, n);
        println!(
            "scan (cache {cached}): {:.0} ns/entry, {:.0} MB/s",
            el.as_nanos() as f64 / n as f64,
            bytes as f64 / el.as_secs_f64() / 1e6
        );
        let keys: Vec<Vec<u8>> = (0..200_000)
            .map(|_| crate::key::seek_key(format!("user{:020}", rng.gen_range(0..n)).as_bytes()))
            .collect();
        for round in 0..2 {
            let before = counters.snapshot();
            let start = thread_cpu_ns();
            for k in &keys {
                assert!(t
                    .may_contain(crate::key::user_key(k), ReadPurpose::Get)
                    .unwrap());
                let mut it = t.iter(ReadPurpose::Get, true);
                it.seek(k).unwrap();
                assert!(it.valid());
            }
            let el = std::time::Duration::from_nanos(thread_cpu_ns() - start);
            let d = counters.snapshot().since(&before);
            println!(
                "random get (cache {cached}, round {round}): {:.0} ns/get, {} hits, {} misses",
                el.as_nanos() as f64 / keys.len() as f64,
                d.block_cache_hits,
                d.block_cache_misses,
            );
        }
        let absent = thread_cpu_ns();
        let mut fp = 0;
        for i in 0..200_000u64 {
            if t.may_contain(format!("nope{i:020}").as_bytes(), ReadPurpose::Get)
                .unwrap()
            {
                fp += 1;
            }
        }
        println!(
            "absent probe: {:.0} ns, fp {fp}",
            (thread_cpu_ns() - absent) as f64 / 200_000.0
        );
    }
}

/// Point lookups served from the block cache, for profiling the read path:
/// `cargo test --release -p mosaic-lsm table::tests::cached_gets -- --ignored --nocapture`.
#[test]
#[ignore = "a measurement, not a check"]
fn cached_gets() {
    let n = 100_000u64;
    let value = vec![b'v'; 1000];
    let key = |i: u64| {
        internal_key(
            format!("user{i:020}").as_bytes(),
            1,
            Seqno(i),
            ValueKind::Put,
        )
    };
    let entries: Entries = (0..n).map(|i| (key(i), value.clone())).collect();
    let (bytes, _) = write_table(&entries, TableOptions::default(), b"");
    let counters = Arc::new(Counters::default());
    let t = open_with(bytes, Some(BlockCache::new(1 << 30)), Arc::clone(&counters)).unwrap();
    scan(&t).unwrap();
    let before = counters.snapshot();
    let mut rng = StdRng::seed_from_u64(1);
    let keys: Vec<Vec<u8>> = (0..1_000_000)
        .map(|_| crate::key::seek_key(format!("user{:020}", rng.gen_range(0..n)).as_bytes()))
        .collect();
    for (label, filter, index_only) in [
        ("filter", true, false),
        ("seek", false, false),
        ("iter create", false, true),
    ] {
        let start = thread_cpu_ns();
        for k in &keys {
            if filter {
                assert!(t
                    .may_contain(crate::key::user_key(k), ReadPurpose::Get)
                    .unwrap());
                continue;
            }
            let mut it = t.iter(ReadPurpose::Get, true);
            if index_only {
                continue;
            }
            it.seek(k).unwrap();
            assert!(it.valid());
        }
        println!(
            "{label}: {:.0} ns/op (thread CPU time)",
            (thread_cpu_ns() - start) as f64 / keys.len() as f64
        );
    }
    println!("{:?}", counters.snapshot().since(&before));
    // Cache hit + in-block seek on a hot (250 blocks) and a DRAM-bound (25,000 blocks = 100 MB)
    // working set: the difference is memory latency, not code.
    for blocks in [250u64, 25_000] {
        let cache = BlockCache::new(1 << 30);
        let mut b = super::block::BlockBuilder::new(16);
        for k in [b"k", b"l", b"m", b"n"] {
            b.add(k, &value);
        }
        let raw = b.finish_mut().clone();
        let built: Vec<_> = (0..blocks)
            .map(|_| Arc::new(super::block::Block::new(raw.clone()).unwrap()))
            .collect();
        for (i, block) in built.into_iter().enumerate() {
            cache.insert(1, i as u64 * 4100, super::cache::Cached::Data(block));
        }
        let offsets: Vec<u64> = (0..1_000_000)
            .map(|_| rng.gen_range(0..blocks) * 4100)
            .collect();
        let start = thread_cpu_ns();
        let mut sum = 0;
        for &o in &offsets {
            let Some(super::cache::Cached::Data(block)) = cache.get(1, o) else {
                panic!("block {o} is cached");
            };
            let mut it = super::block::BlockIter::new(block);
            it.seek(b"m", KeyOrder::Bytewise).unwrap();
            sum += it.value().len();
        }
        assert_eq!(sum, 1000 * offsets.len());
        println!(
            "{blocks} cached blocks, get + seek: {:.0} ns/op (thread CPU time)",
            (thread_cpu_ns() - start) as f64 / 1e6
        );
    }
}

/// Nanoseconds this thread has run on a CPU: wall time is meaningless on a loaded machine.
fn thread_cpu_ns() -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// Tables of internal keys written with marked user-key separators and with the older
/// internal-key separators answer every seek alike, so tables of both formats read the same
/// side by side; the marked index is the smaller one.
#[test]
fn marked_and_internal_key_separators_answer_every_seek_alike() {
    let mut rng = StdRng::seed_from_u64(11);
    for (n, block_size) in [(1, 4096), (300, 128), (3000, 256), (3000, 4096)] {
        let entries = random_entries(&mut rng, n, KeyOrder::Internal);
        let write = |marked: bool| {
            let buf = Arc::new(Mutex::new(Vec::new()));
            let file = MemWritable {
                buf: Arc::clone(&buf),
                space_bytes: None,
                syncs: Arc::new(Mutex::new(0)),
            };
            let mut w = TableWriter::new(
                Box::new(file),
                path(),
                opts(KeyOrder::Internal, Compression::None, block_size),
            );
            if !marked {
                w = w.with_unmarked_separators();
            }
            for (k, v) in &entries {
                w.add(k, v).unwrap();
            }
            w.finish(b"").unwrap();
            let bytes = buf.lock().clone();
            open(bytes).unwrap()
        };
        let (marked, unmarked) = (write(true), write(false));
        assert!(marked.footer.marked_separators && !unmarked.footer.marked_separators);
        if n > 1 {
            assert!(
                marked.footer.index.size < unmarked.footer.index.size,
                "{n}: index {} >= {}",
                marked.footer.index.size,
                unmarked.footer.index.size
            );
        }
        assert_eq!(scan(&marked).unwrap(), entries);
        assert_eq!(scan(&unmarked).unwrap(), entries);
        let (mut a, mut b) = (
            marked.iter(ReadPurpose::Get, true),
            unmarked.iter(ReadPurpose::Get, true),
        );
        for _ in 0..300 {
            // Sought keys near and between the table's: versions of its user keys and
            // other user keys of the same small alphabet.
            let len = rng.gen_range(0..8);
            let user: Vec<u8> = (0..len).map(|_| b'a' + rng.gen_range(0..4u8)).collect();
            let target = internal_key(
                &user,
                rng.gen_range(0..4),
                Seqno(rng.gen_range(0..4)),
                ValueKind::Put,
            );
            a.seek(&target).unwrap();
            b.seek(&target).unwrap();
            let want = entries
                .iter()
                .find(|(k, _)| compare_internal(k, &target).is_ge())
                .map(|(k, _)| k.clone());
            assert_eq!(a.valid().then(|| a.key().to_vec()), want, "{n}");
            assert_eq!(b.valid().then(|| b.key().to_vec()), want, "{n}");
            if a.valid() {
                a.next().unwrap();
                b.next().unwrap();
                assert_eq!(
                    a.valid().then(|| a.key().to_vec()),
                    b.valid().then(|| b.key().to_vec())
                );
            }
        }
    }
}
