//! Fuzzes the SSTable reader with arbitrary bytes as a table file.
//!
//! The first input byte picks a mode:
//! - even: the rest of the input *is* the file. It is opened with checksums verified and
//!   again with them skipped (so the fuzzer reaches the block, index and filter decoders
//!   behind the crc32c), then fully iterated and sought. Nothing may panic.
//! - odd: the rest describes entries and options; a valid table is written, read back and
//!   checked against the entries (an oracle), then damaged by the trailing mutation list:
//!   with one damaged byte and checksums on it must give an error or exactly the original
//!   entries, never other data; with all the damage and checksums off, it must not panic.

use std::io;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use mosaic_env::{RandomAccessFile, WritableFile};
use mosaic_lsm::key::KeyOrder;
use mosaic_lsm::table::{
    filter_prefix, BlockCache, Compression, TableOptions, TableReader, TableWriter,
};
use mosaic_lsm::{Counters, ReadPurpose};

type Entries = Vec<(Vec<u8>, Vec<u8>)>;

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

struct MemWritable(Arc<Mutex<Vec<u8>>>);

impl WritableFile for MemWritable {
    fn append(&mut self, buf: &[u8]) -> io::Result<()> {
        self.0
            .lock()
            .map_err(|_| io::Error::other("poisoned"))?
            .extend_from_slice(buf);
        Ok(())
    }
    fn sync_data(&mut self) -> io::Result<()> {
        Ok(())
    }
    fn len(&self) -> u64 {
        self.0.lock().map_or(0, |b| b.len() as u64)
    }
}

fn open(bytes: Vec<u8>, verify: bool) -> mosaic_lsm::Result<Arc<TableReader>> {
    // Tables of odd length keep their index and filter in a cache too small to hold much,
    // so the read-back-on-miss path is fuzzed as well as the pinned one.
    let metadata_in_cache = bytes.len() % 2 == 1;
    let file: Arc<dyn RandomAccessFile> = Arc::new(MemFile(bytes));
    let path = PathBuf::from("fuzz.sst");
    let cache = Some(if metadata_in_cache {
        BlockCache::with_metadata(1024, true)
    } else {
        BlockCache::new(64 * 1024)
    });
    let counters = Arc::new(Counters::default());
    let reader = if verify {
        TableReader::open(file, path, 1, cache, counters)
    } else {
        TableReader::open_without_checksums(file, path, 1, cache, counters)
    };
    reader.map(Arc::new)
}

/// Full scan, bounded so a pathological table cannot loop forever.
fn scan(t: &Arc<TableReader>) -> mosaic_lsm::Result<Entries> {
    let mut it = t.iter(ReadPurpose::Scan, true);
    let mut out = Vec::new();
    it.seek_to_first()?;
    while it.valid() && out.len() < 100_000 {
        out.push((it.key().to_vec(), it.value().to_vec()));
        it.next()?;
    }
    Ok(out)
}

/// Reads everything reachable; only panics matter here.
fn exercise(t: &Arc<TableReader>, targets: &[&[u8]]) {
    let seen = scan(t).unwrap_or_default();
    let mut it = t.iter(ReadPurpose::Get, false);
    for target in targets
        .iter()
        .copied()
        .chain(seen.iter().map(|(k, _)| &k[..]).take(64))
    {
        let _ = t.may_contain(t.key_order().filter_key(target), ReadPurpose::Get);
        if it.seek(target).is_ok() && it.valid() {
            let _ = (it.key(), it.value());
            let _ = it.next();
        }
    }
}

fn raw(bytes: &[u8]) {
    let targets: Vec<&[u8]> = bytes.chunks(9).take(8).collect();
    for verify in [true, false] {
        if let Ok(t) = open(bytes.to_vec(), verify) {
            exercise(&t, &targets);
        }
    }
}

/// `[klen u8][key][vlen u8][value]…` until the bytes run out.
fn parse_entries(mut src: &[u8], order: KeyOrder) -> Entries {
    let mut out = Entries::new();
    while let Some((&klen, rest)) = src.split_first() {
        let Some((key, rest)) = rest.split_at_checked(usize::from(klen % 48)) else {
            break;
        };
        let Some((&vlen, rest)) = rest.split_first() else {
            break;
        };
        // Repeat short value patterns so lz4 has something to compress.
        let vlen = usize::from(vlen) * 4;
        let pattern = rest.get(..rest.len().min(8)).unwrap_or_default();
        let value: Vec<u8> = pattern.iter().copied().cycle().take(vlen).collect();
        out.push((key.to_vec(), value));
        src = rest.get(pattern.len()..).unwrap_or_default();
    }
    out.sort_by(|a, b| order.compare(&a.0, &b.0));
    out.dedup_by(|a, b| order.compare(&a.0, &b.0).is_eq());
    out
}

fn structured(mode: u8, rest: &[u8]) {
    let Some((len_bytes, rest)) = rest.split_at_checked(2) else {
        return;
    };
    let split = usize::from(u16::from_le_bytes([len_bytes[0], len_bytes[1]])).min(rest.len());
    let (entry_bytes, mutations) = rest.split_at(split);
    let order = if mode & 2 == 0 {
        KeyOrder::Bytewise
    } else {
        KeyOrder::Internal
    };
    let opts = TableOptions {
        block_size_bytes: 16 << ((mode >> 3) & 7),
        restart_interval: 1 + usize::from((mode >> 6) & 3) * 5,
        bloom_bits_per_key: if mode & 0x20 == 0 { 10 } else { 0 },
        compression: if mode & 4 == 0 {
            Compression::None
        } else {
            Compression::Lz4
        },
        key_order: order,
        // Now and then a prefix filter, so the prefix-probing path is fuzzed too.
        filter_prefix_bytes: if mode & 0x10 == 0 { 0 } else { 4 },
        // The length's top bit (beyond any input's length) picks a partitioned index and
        // filter, with partitions of a few entries, so the two-level paths are fuzzed too.
        index_partition_bytes: if len_bytes[1] & 0x80 == 0 { 0 } else { 48 },
    };
    let prefix_bytes = opts.filter_prefix_bytes;
    let entries = parse_entries(entry_bytes, order);
    let buf = Arc::new(Mutex::new(Vec::new()));
    let mut w = TableWriter::new(
        Box::new(MemWritable(Arc::clone(&buf))),
        "fuzz.sst".into(),
        opts,
    );
    for (k, v) in &entries {
        w.add(k, v).expect("sorted, deduplicated keys are accepted");
    }
    w.finish(b"properties").expect("in-memory writes succeed");
    let bytes = buf.lock().map(|b| b.clone()).unwrap_or_default();

    // The oracle: an undamaged table reads back exactly.
    let t = open(bytes.clone(), true).expect("a freshly written table opens");
    assert_eq!(scan(&t).expect("an undamaged table scans"), entries);
    assert_eq!(t.properties(), b"properties");
    let mut it = t.iter(ReadPurpose::Get, true);
    for (k, v) in &entries {
        let probe = filter_prefix(order.filter_key(k), prefix_bytes);
        assert!(
            t.may_contain(probe, ReadPurpose::Get)
                .expect("an undamaged filter reads"),
            "the filter holds every key written"
        );
        it.seek(k).expect("an undamaged table seeks");
        assert_eq!((it.key(), it.value()), (&k[..], &v[..]));
    }

    if mutations.len() < 3 || bytes.is_empty() {
        return;
    }
    // One damaged byte, checksums on: crc32c catches every error burst of up to 32 bits, so
    // this must be detected or (if it damaged nothing read) harmless — never different data.
    // (Several mutations could, with the fuzzer's comparison tracing, forge a checksum.)
    let damage = |bytes: &mut Vec<u8>, m: &[u8]| {
        let pos = usize::from(u16::from_le_bytes([m[0], m[1]])) % bytes.len();
        bytes[pos] ^= m[2];
    };
    let mut damaged = bytes.clone();
    damage(&mut damaged, &mutations[..3]);
    if let Ok(t) = open(damaged.clone(), true) {
        if let Ok(got) = scan(&t) {
            assert_eq!(got, entries, "a damaged table returned different data");
            assert_eq!(t.properties(), b"properties");
        }
    }
    // Any damage, checksums off: the structural decoders alone must not panic.
    for m in mutations[3..].chunks_exact(3) {
        damage(&mut damaged, m);
    }
    if let Ok(t) = open(damaged, false) {
        let targets: Vec<&[u8]> = entries.iter().map(|(k, _)| &k[..]).take(16).collect();
        exercise(&t, &targets);
    }
}

/// The target: must return (never panic) for any `data`.
pub fn run(data: &[u8]) {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    if mode & 1 == 0 {
        raw(rest);
    } else {
        structured(mode, rest);
    }
}
