//! Index and filter blocks in the block cache: what a get reads cold and warm, eviction
//! and read-back under a small cache, damage found on a read-back, one read for readers
//! missing together, and the pinned default unchanged.

use std::io;
use std::path::PathBuf;
use std::sync::{Arc, Barrier};

use mosaic_env::{RandomAccessFile, WritableFile};
use parking_lot::Mutex;

use super::*;
use crate::error::Error;
use crate::stats::{CounterSnapshot, Counters, ReadPurpose};

/// An in-memory file, written through one handle and read (and damaged) through another.
#[derive(Clone, Default)]
pub(super) struct SharedFile(pub(super) Arc<Mutex<Vec<u8>>>);

impl WritableFile for SharedFile {
    fn append(&mut self, data: &[u8]) -> io::Result<()> {
        self.0.lock().extend_from_slice(data);
        Ok(())
    }
    fn sync_data(&mut self) -> io::Result<()> {
        Ok(())
    }
    fn len(&self) -> u64 {
        self.0.lock().len() as u64
    }
}

impl RandomAccessFile for SharedFile {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        let bytes = self.0.lock();
        let start = usize::try_from(offset).map_err(|_| io::ErrorKind::UnexpectedEof)?;
        let src = bytes
            .get(start..start + buf.len())
            .ok_or(io::ErrorKind::UnexpectedEof)?;
        buf.copy_from_slice(src);
        Ok(())
    }
    fn len(&self) -> u64 {
        self.0.lock().len() as u64
    }
}

fn key(i: usize) -> Vec<u8> {
    format!("key{i:06}").into_bytes()
}

fn value(i: usize) -> Vec<u8> {
    format!("value-{i:06}-{}", "x".repeat(100)).into_bytes()
}

/// A table of keys `0..n` (bytewise order, 1 KiB blocks, a Bloom filter).
fn table_file(n: usize) -> SharedFile {
    let file = SharedFile::default();
    let opts = TableOptions {
        block_size_bytes: 1024,
        key_order: KeyOrder::Bytewise,
        ..TableOptions::default()
    };
    let mut w = TableWriter::new(Box::new(file.clone()), PathBuf::from("meta.sst"), opts);
    for i in 0..n {
        w.add(&key(i), &value(i)).unwrap();
    }
    w.finish(b"").unwrap();
    file
}

fn open(
    file: &SharedFile,
    cache_id: u64,
    cache: &Arc<BlockCache>,
    counters: &Arc<Counters>,
) -> Arc<TableReader> {
    let path = PathBuf::from(format!("{cache_id:06}.sst"));
    let file: Arc<dyn RandomAccessFile> = Arc::new(file.clone());
    Arc::new(
        TableReader::open(
            file,
            path,
            cache_id,
            Some(Arc::clone(cache)),
            Arc::clone(counters),
        )
        .unwrap(),
    )
}

/// A point lookup as the engine does one: the filter, then the index and a data block.
fn get(t: &Arc<TableReader>, k: &[u8]) -> crate::Result<Option<Vec<u8>>> {
    if !t.may_contain(k, ReadPurpose::Get)? {
        return Ok(None);
    }
    let mut it = t.iter(ReadPurpose::Get, true);
    it.seek(k)?;
    Ok((it.valid() && it.key() == k).then(|| it.value().to_vec()))
}

/// The get counters gained since `before`.
fn gained(counters: &Counters, before: &CounterSnapshot) -> CounterSnapshot {
    counters.snapshot().since(before)
}

#[test]
fn a_cold_get_reads_filter_index_and_data_once_and_a_warm_one_reads_nothing() {
    let cache = BlockCache::with_metadata(1 << 20, true);
    let counters = Arc::new(Counters::default());
    let t = open(&table_file(500), 1, &cache, &counters);
    assert_eq!(
        t.pinned_memory_bytes(),
        0,
        "nothing pinned: it is in the cache"
    );
    assert!(
        cache.usage_bytes() > 0,
        "open put the index and filter in the cache"
    );
    cache.clear();

    let before = counters.snapshot();
    assert_eq!(get(&t, &key(123)).unwrap(), Some(value(123)));
    let d = gained(&counters, &before);
    assert_eq!(
        (
            d.get_filter_block_reads,
            d.get_index_block_reads,
            d.get_data_block_reads
        ),
        (1, 1, 1)
    );
    assert_eq!(
        d.block_reads_per_get(),
        0.0,
        "no get counted by the table itself"
    );
    assert!(d.get_index_bytes_read > 0 && d.get_filter_bytes_read > 0);
    assert!(d.get_bytes_read > d.get_index_bytes_read + d.get_filter_bytes_read);
    assert_eq!(d.get_block_reads(), 3);

    let before = counters.snapshot();
    assert_eq!(get(&t, &key(123)).unwrap(), Some(value(123)));
    let d = gained(&counters, &before);
    assert_eq!((d.get_block_reads(), d.get_bytes_read), (0, 0));
    assert_eq!(d.block_cache_hits, 3);

    // An absent key costs the filter only (cached now): nothing read.
    let before = counters.snapshot();
    assert_eq!(get(&t, b"nope").unwrap(), None);
    assert_eq!(gained(&counters, &before).get_bytes_read, 0);
}

#[test]
fn pinned_metadata_is_read_once_at_open_and_never_by_gets() {
    let cache = BlockCache::new(1 << 20);
    let counters = Arc::new(Counters::default());
    let t = open(&table_file(500), 1, &cache, &counters);
    assert!(t.pinned_memory_bytes() > 0);
    assert_eq!(cache.usage_bytes(), 0, "only data blocks go in this cache");
    let open_bytes = counters.snapshot().open_bytes_read;
    cache.clear();
    let before = counters.snapshot();
    assert_eq!(get(&t, &key(7)).unwrap(), Some(value(7)));
    let d = gained(&counters, &before);
    assert_eq!(
        (
            d.get_filter_block_reads,
            d.get_index_block_reads,
            d.get_data_block_reads
        ),
        (0, 0, 1)
    );
    assert_eq!(counters.snapshot().open_bytes_read, open_bytes);
}

#[test]
fn a_small_cache_evicts_metadata_and_reads_it_back_with_correct_results() {
    // Eight tables whose index and filter (a few KiB each) cannot all stay in 16 KiB
    // beside the data blocks.
    let cache = BlockCache::with_metadata(16 << 10, true);
    let counters = Arc::new(Counters::default());
    let tables: Vec<Arc<TableReader>> = (0..8)
        .map(|id| open(&table_file(400), id + 1, &cache, &counters))
        .collect();
    let before = counters.snapshot();
    for round in 0..5 {
        for (n, t) in tables.iter().enumerate() {
            let i = (round * 97 + n * 31) % 400;
            assert_eq!(
                get(t, &key(i)).unwrap(),
                Some(value(i)),
                "table {n} key {i}"
            );
            assert_eq!(get(t, b"absent").unwrap(), None);
        }
    }
    let d = gained(&counters, &before);
    assert!(
        d.get_index_block_reads + d.get_filter_block_reads > 8,
        "metadata was evicted and read back: {d:?}"
    );
    assert!(cache.usage_bytes() <= 16 << 10);
    // Each read-back is counted with its bytes.
    assert!(d.get_index_bytes_read >= d.get_index_block_reads * 100);
}

#[test]
fn a_damaged_index_or_filter_read_back_on_a_miss_is_an_error_not_a_panic() {
    let cache = BlockCache::with_metadata(1 << 20, true);
    let counters = Arc::new(Counters::default());
    let file = table_file(300);
    let t = open(&file, 1, &cache, &counters);
    let (index, filter) = (t.footer.index, t.footer.filter);
    assert!(filter.size > 0);

    // Damage the index after open; the cached copy still serves.
    let flip = |offset: u64| {
        let mut bytes = file.0.lock();
        bytes[usize::try_from(offset).unwrap() + 3] ^= 0x40;
    };
    flip(index.offset);
    assert_eq!(get(&t, &key(5)).unwrap(), Some(value(5)));
    cache.clear();
    match get(&t, &key(5)) {
        Err(Error::ChecksumMismatch { file, offset, .. }) => {
            assert_eq!(offset, index.offset);
            assert_eq!(file, PathBuf::from("000001.sst"));
        }
        other => panic!("expected the index's checksum mismatch, got {other:?}"),
    }
    // A scan meets the same error.
    let mut it = t.iter(ReadPurpose::Scan, true);
    assert!(matches!(
        it.seek_to_first(),
        Err(Error::ChecksumMismatch { .. })
    ));
    assert!(!it.valid());

    flip(filter.offset);
    cache.clear();
    match t.may_contain(&key(5), ReadPurpose::Get) {
        Err(Error::ChecksumMismatch { offset, .. }) => assert_eq!(offset, filter.offset),
        other => panic!("expected the filter's checksum mismatch, got {other:?}"),
    }
}

#[test]
fn readers_missing_the_same_metadata_together_read_it_once() {
    let cache = BlockCache::with_metadata(1 << 20, true);
    let counters = Arc::new(Counters::default());
    let t = open(&table_file(500), 1, &cache, &counters);
    cache.clear();
    let before = counters.snapshot();
    let readers = 8;
    let start = Barrier::new(readers);
    std::thread::scope(|s| {
        for r in 0..readers {
            let (t, start) = (&t, &start);
            s.spawn(move || {
                start.wait();
                let i = r * 50;
                assert_eq!(get(t, &key(i)).unwrap(), Some(value(i)));
            });
        }
    });
    let d = gained(&counters, &before);
    assert_eq!((d.get_index_block_reads, d.get_filter_block_reads), (1, 1));
}

#[test]
fn a_closed_tables_metadata_leaves_the_cache() {
    let cache = BlockCache::with_metadata(1 << 20, true);
    let counters = Arc::new(Counters::default());
    let t = open(&table_file(200), 1, &cache, &counters);
    assert_eq!(cache.len(), 2, "index and filter");
    drop(t);
    assert_eq!((cache.len(), cache.usage_bytes()), (0, 0));
}

#[test]
fn a_compaction_read_leaves_metadata_it_read_back_out_of_the_cache() {
    let cache = BlockCache::with_metadata(1 << 20, true);
    let counters = Arc::new(Counters::default());
    let t = open(&table_file(200), 1, &cache, &counters);
    cache.clear();
    let mut it = t.iter(ReadPurpose::Compaction, false);
    it.seek_to_first().unwrap();
    let mut n = 0;
    while it.valid() {
        n += 1;
        it.next().unwrap();
    }
    assert_eq!(n, 200);
    assert!(cache.is_empty());
    assert_eq!(counters.snapshot().get_block_reads(), 0);
}
