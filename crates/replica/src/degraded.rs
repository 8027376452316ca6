//! Degraded reads (ELECT §5): rows a secondary dropped because a coding group covers them,
//! read while their primary is down, by decoding the primary's table from the group's
//! other shards — only the stripes the read touches.
//!
//! A lost table is a [`LostTable`]: the stripes of it decoded so far, read through the
//! engine's own table reader as a file whose undecoded bytes are missing. A read that
//! reaches a missing stripe stops and answers [`LostRead::Need`] with the span it lacks;
//! the caller (the cluster) fetches that span from `k` of the group's other shards — data
//! shards from their nodes, parity from the parity nodes, an empty slot as no bytes at
//! all — hands it in, and reads again. A point read so decodes the footer's stripe, the
//! index's and the key's block's: a few stripes of `k` shards, not whole tables. Decoded
//! stripes stay in memory ([`DecodedTables`], by the lost table's content hash, least
//! recently used table first out), so further reads while the primary stays down decode
//! only what no read touched before. Every block read is checked against its checksum, so
//! a stripe decoded from a shard of another epoch is caught, never read (and the table's
//! stripes are dropped).
//!
//! Full-node recovery rebuilds whole shards: [`decode`] checks the result against the
//! SHA-256 its ECMeta names.

use std::cell::RefCell;
use std::collections::{HashMap, VecDeque};
use std::ops::{Bound, Range};
use std::sync::Arc;

use mosaic_env::RandomAccessFile;
use mosaic_erasure::{Codec, EcMeta, LostRead};
use mosaic_lsm::{Error, MergeOperator, ReadPurpose, Result, TableReader, ValueKind, Version};
use parking_lot::{Mutex, RwLock};

/// Rows read: `(key, value)` in key order, and whether the bounds hold nothing more.
pub type Rows = (Vec<(Vec<u8>, Vec<u8>)>, bool);

/// A span of a lost table's stripes with `(position, bytes of that span)` of `k` other
/// shards of its group: what [`LostTable::add`] decodes.
pub type Span<'a> = (Range<u64>, &'a [(u8, Vec<u8>)]);

/// Bytes of decoded stripes one store keeps by default.
pub const DECODED_CACHE_BYTES: u64 = 256 << 20;

/// Rebuilds shard `slot` of `meta`'s group — a data slot's table, or a parity shard —
/// from `shards` (`(position, whole shard)`, at least `k` distinct positions other than
/// `slot`; a data shard shorter than the group is zero-padded) and checks it against its
/// hash.
pub fn decode(meta: &EcMeta, slot: u8, shards: &[(u8, Vec<u8>)]) -> Result<Vec<u8>> {
    let bad = |why: String| Error::InvalidArgument(format!("decoding shard {slot}: {why}"));
    let codec = meta.codec().map_err(|e| bad(e.to_string()))?;
    let want = meta
        .shards
        .get(usize::from(slot))
        .ok_or_else(|| bad(format!("not a position of a group of n = {}", meta.n)))?;
    let size = usize::try_from(want.size).map_err(|_| bad("size too large".into()))?;
    let coded_len = usize::try_from(meta.coded_len).map_err(|_| bad("too large".into()))?;
    let mut out = Vec::with_capacity(size);
    for range in codec.stripes(coded_len) {
        if range.start >= size {
            break;
        }
        out.extend_from_slice(&decode_span(&codec, range, slot, (0, shards)).map_err(bad)?);
    }
    out.truncate(size);
    if !meta.verify(usize::from(slot), &out) {
        return Err(bad(
            "the rebuilt shard does not match its ECMeta's hash (a shard from another epoch?)"
                .into(),
        ));
    }
    Ok(out)
}

/// Bytes `range` of shard `slot`, decoded from `shards` (`(position, bytes)`: each shard's
/// bytes from offset `from` on — whole shards from 0, or a span from its start; a data
/// shard may stop short).
fn decode_span(
    codec: &Codec,
    range: Range<usize>,
    slot: u8,
    (from, shards): (usize, &[(u8, Vec<u8>)]),
) -> std::result::Result<Vec<u8>, String> {
    let pieces: Vec<(usize, &[u8])> = shards
        .iter()
        .map(|(pos, bytes)| {
            let at = |offset: usize| offset.saturating_sub(from).min(bytes.len());
            let piece = bytes
                .get(at(range.start)..at(range.end))
                .unwrap_or_default();
            (usize::from(*pos), piece)
        })
        .collect();
    codec
        .decode_range(range, &pieces, usize::from(slot))
        .map_err(|e| e.to_string())
}

/// A whole table's bytes, for [`TableReader`].
struct InMemory(Vec<u8>);

impl RandomAccessFile for InMemory {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
        let start = usize::try_from(offset).map_err(|_| std::io::ErrorKind::UnexpectedEof)?;
        let src = start
            .checked_add(buf.len())
            .and_then(|end| self.0.get(start..end))
            .ok_or(std::io::ErrorKind::UnexpectedEof)?;
        buf.copy_from_slice(src);
        Ok(())
    }

    fn len(&self) -> u64 {
        self.0.len() as u64
    }
}

/// Opens a whole decoded table (full-node recovery reads its versions back).
pub fn open_whole(bytes: Vec<u8>) -> Result<Arc<TableReader>> {
    open_reader(Arc::new(InMemory(bytes)), "restored")
}

fn open_reader(file: Arc<dyn RandomAccessFile>, name: &str) -> Result<Arc<TableReader>> {
    TableReader::open(
        file,
        std::path::PathBuf::from(format!("{name}.sst")),
        0,
        None,
        Arc::new(mosaic_lsm::Counters::default()),
    )
    .map(Arc::new)
}

thread_local! {
    /// The stripes (first and last index) the current read on this thread found missing.
    static MISSING: RefCell<Option<(u64, u64)>> = const { RefCell::new(None) };
}

/// The decoded stripes of a lost table, as a file (see the module doc).
struct Stripes {
    size: u64,
    stripe: u64,
    decoded: RwLock<HashMap<u64, Arc<[u8]>>>,
    /// Bytes in `decoded` (the cache weighs tables by it on every degraded read).
    bytes: std::sync::atomic::AtomicU64,
}

impl Stripes {
    fn note_missing(index: u64) {
        MISSING.with(|m| {
            let mut m = m.borrow_mut();
            *m = Some(match *m {
                Some((lo, hi)) => (lo.min(index), hi.max(index)),
                None => (index, index),
            });
        });
    }
}

impl RandomAccessFile for Stripes {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
        let end = offset
            .checked_add(buf.len() as u64)
            .filter(|end| *end <= self.size)
            .ok_or(std::io::ErrorKind::UnexpectedEof)?;
        let decoded = self.decoded.read();
        let mut complete = true;
        let mut pos = offset;
        while pos < end {
            let index = pos / self.stripe;
            let stripe_start = index * self.stripe;
            let upto = end.min(stripe_start + self.stripe);
            match decoded.get(&index) {
                Some(bytes) => {
                    let src = bytes
                        .get((pos - stripe_start) as usize..(upto - stripe_start) as usize)
                        .ok_or(std::io::ErrorKind::UnexpectedEof)?;
                    let dst = buf
                        .get_mut((pos - offset) as usize..(upto - offset) as usize)
                        .ok_or(std::io::ErrorKind::UnexpectedEof)?;
                    dst.copy_from_slice(src);
                }
                None => {
                    Stripes::note_missing(index);
                    complete = false;
                }
            }
            pos = upto;
        }
        if complete {
            Ok(())
        } else {
            Err(std::io::Error::other(
                "a stripe of a lost table is not decoded yet",
            ))
        }
    }

    fn len(&self) -> u64 {
        self.size
    }
}

/// A lost table: the stripes of it decoded so far, read as the engine reads a table.
pub struct LostTable {
    stripes: Arc<Stripes>,
    reader: Mutex<Option<Arc<TableReader>>>,
}

impl std::fmt::Debug for LostTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LostTable")
            .field("size", &self.stripes.size)
            .field("decoded_bytes", &self.decoded_bytes())
            .finish_non_exhaustive()
    }
}

impl LostTable {
    /// A lost table of `size` bytes coded in stripes of `stripe` bytes, nothing decoded.
    pub fn new(size: u64, stripe: u64) -> LostTable {
        LostTable {
            stripes: Arc::new(Stripes {
                size,
                stripe: stripe.max(1),
                decoded: RwLock::new(HashMap::new()),
                bytes: std::sync::atomic::AtomicU64::new(0),
            }),
            reader: Mutex::new(None),
        }
    }

    /// Bytes decoded so far.
    pub fn decoded_bytes(&self) -> u64 {
        self.stripes
            .bytes
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Where the stripes a table of this size is coded in end: the chunk-aligned end of
    /// its last stripe.
    pub fn coded_end(&self) -> u64 {
        Codec::coded_len(self.stripes.size as usize) as u64
    }

    /// Decodes `span` (whole stripes, as [`LostRead::Need`] names them) of the table in
    /// `slot` of `meta`'s group from `shards` — `(position, that span of its shard)` for
    /// `k` positions other than `slot` — and keeps it.
    pub fn add(
        &self,
        meta: &EcMeta,
        slot: u8,
        span: Range<u64>,
        shards: &[(u8, Vec<u8>)],
    ) -> Result<()> {
        let bad = |why: String| {
            Error::InvalidArgument(format!("decoding bytes {span:?} of shard {slot}: {why}"))
        };
        let s = &self.stripes;
        let aligned = |at: u64| at.is_multiple_of(s.stripe) || at == self.coded_end();
        if span.start >= span.end || !aligned(span.start) || !aligned(span.end) {
            return Err(bad("not a span of whole stripes".into()));
        }
        if span.end > self.coded_end() {
            return Err(bad("past the table's coded end".into()));
        }
        let codec = meta.codec().map_err(|e| bad(e.to_string()))?;
        let range = usize::try_from(span.start).map_err(|_| bad("too large".into()))?
            ..usize::try_from(span.end).map_err(|_| bad("too large".into()))?;
        let bytes = decode_span(&codec, range.clone(), slot, (range.start, shards)).map_err(bad)?;
        let mut decoded = s.decoded.write();
        for (i, chunk) in bytes.chunks(s.stripe as usize).enumerate() {
            let index = span.start / s.stripe + i as u64;
            let keep = s
                .size
                .saturating_sub(index * s.stripe)
                .min(chunk.len() as u64);
            if keep > 0 {
                let old = decoded.insert(index, Arc::from(&chunk[..keep as usize]));
                // A piece decoded again has the same length (same table, same place).
                let replaced = old.map_or(0, |o| o.len() as u64);
                s.bytes.fetch_add(
                    keep.saturating_sub(replaced),
                    std::sync::atomic::Ordering::Relaxed,
                );
            }
        }
        Ok(())
    }

    /// The first span of stripes not decoded yet at or after byte `from`, at most `max`
    /// bytes (whole stripes, at least one); `None` once every stripe from `from` on is.
    pub fn next_missing(&self, from: u64, max: u64) -> Option<Range<u64>> {
        let s = &self.stripes;
        let decoded = s.decoded.read();
        let stripes = s.size.div_ceil(s.stripe);
        let first = (from / s.stripe..stripes).find(|i| !decoded.contains_key(i))?;
        let most = (max / s.stripe).max(1);
        let last = (first..stripes)
            .take(most as usize)
            .take_while(|i| !decoded.contains_key(i))
            .last()
            .unwrap_or(first);
        Some(first * s.stripe..((last + 1) * s.stripe).min(self.coded_end()))
    }

    /// Up to `limit` rows within the bounds (as [`read_rows`] reads them), or the span of
    /// stripes the read needs decoded first. Bounds holding no key read nothing.
    pub fn read(
        &self,
        merge: Option<&dyn MergeOperator>,
        start: Bound<&[u8]>,
        end: Bound<&[u8]>,
        limit: usize,
    ) -> Result<LostRead> {
        let nothing = match (start, end) {
            (Bound::Included(s) | Bound::Excluded(s), Bound::Excluded(e)) => e <= s,
            (Bound::Included(s), Bound::Included(e)) => e < s,
            (Bound::Excluded(s), Bound::Included(e)) => e <= s,
            _ => false,
        };
        if nothing {
            return Ok(LostRead::Rows(Vec::new(), true));
        }
        MISSING.with(|m| m.borrow_mut().take());
        let attempt = self
            .reader()
            .and_then(|reader| read_rows(&reader, merge, start, end, limit));
        let missing = MISSING.with(|m| m.borrow_mut().take());
        match (attempt, missing) {
            (Ok((rows, done)), _) => Ok(LostRead::Rows(rows, done)),
            (Err(_), Some((lo, hi))) => {
                let s = &self.stripes;
                Ok(LostRead::Need(
                    lo * s.stripe..((hi + 1) * s.stripe).min(self.coded_end()),
                ))
            }
            (Err(e), None) => Err(e),
        }
    }

    fn reader(&self) -> Result<Arc<TableReader>> {
        let mut reader = self.reader.lock();
        if let Some(r) = &*reader {
            return Ok(r.clone());
        }
        let opened = open_reader(self.stripes.clone(), "decoded")?;
        *reader = Some(opened.clone());
        Ok(opened)
    }
}

/// Lost tables being decoded, by content hash (see the module doc).
pub struct DecodedTables {
    capacity: u64,
    tables: Mutex<VecDeque<([u8; 32], Arc<LostTable>)>>,
}

impl std::fmt::Debug for DecodedTables {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DecodedTables")
            .field("capacity", &self.capacity)
            .finish_non_exhaustive()
    }
}

impl DecodedTables {
    /// An empty cache of up to `capacity` decoded bytes (the newest table is always kept).
    pub fn new(capacity: u64) -> DecodedTables {
        DecodedTables {
            capacity,
            tables: Mutex::new(VecDeque::new()),
        }
    }

    /// The lost table whose content hashes to `hash` (`size` bytes, coded in stripes of
    /// `stripe` bytes), nothing of it decoded if it was not kept; it becomes the most
    /// recent, and the least recent go while the cache holds more than its capacity.
    pub fn table(&self, hash: &[u8; 32], size: u64, stripe: u64) -> Arc<LostTable> {
        let mut tables = self.tables.lock();
        let entry = match tables.iter().position(|(h, _)| h == hash) {
            Some(i) => tables.remove(i),
            None => None,
        };
        let entry = entry.unwrap_or_else(|| (*hash, Arc::new(LostTable::new(size, stripe))));
        let table = entry.1.clone();
        tables.push_back(entry);
        drop(tables);
        self.trim();
        table
    }

    /// Drops the least recently used tables while the cache holds more than its capacity.
    pub fn trim(&self) {
        let mut tables = self.tables.lock();
        let mut total: u64 = tables.iter().map(|(_, t)| t.decoded_bytes()).sum();
        while total > self.capacity && tables.len() > 1 {
            if let Some((_, old)) = tables.pop_front() {
                total = total.saturating_sub(old.decoded_bytes());
            }
        }
    }

    /// `(size, bytes decoded)` of every table kept, least recently used first.
    pub fn held(&self) -> Vec<(u64, u64)> {
        let tables = self.tables.lock();
        tables
            .iter()
            .map(|(_, t)| (t.stripes.size, t.decoded_bytes()))
            .collect()
    }

    /// The table whose content hashes to `hash`, if kept (without making it the most
    /// recent).
    pub fn get(&self, hash: &[u8; 32]) -> Option<Arc<LostTable>> {
        let tables = self.tables.lock();
        tables
            .iter()
            .find(|(h, _)| h == hash)
            .map(|(_, t)| t.clone())
    }

    /// Forgets the table whose content hashes to `hash` (a read of it failed).
    pub fn forget(&self, hash: &[u8; 32]) {
        self.tables.lock().retain(|(h, _)| h != hash);
    }

    /// Whether the table whose content hashes to `hash` is kept.
    pub fn holds(&self, hash: &[u8; 32]) -> bool {
        self.tables.lock().iter().any(|(h, _)| h == hash)
    }
}

/// Bytes of keys and values per batch [`versions`] returns.
const RESTORE_BATCH_BYTES: usize = 4 << 20;

/// Every version `table` holds, in table order, as batches of writes (of about 4 MiB
/// each) restoring them with their own timestamps (full-node
/// recovery puts a decoded table's rows back this way), and the table's smallest and
/// largest key (`None` for an empty table).
pub fn versions(
    table: &Arc<TableReader>,
) -> Result<(Vec<mosaic_lsm::WriteBatch>, Option<crate::elect::KeyRange>)> {
    let mut it = table.iter(ReadPurpose::Compaction, false);
    it.seek_to_first()?;
    let mut batches = Vec::new();
    let mut batch = mosaic_lsm::WriteBatch::new();
    let mut range: Option<crate::elect::KeyRange> = None;
    while it.valid() {
        let p = mosaic_lsm::key::parse_internal(it.key()).ok_or_else(|| {
            Error::corruption(table.path(), 0, "malformed internal key in a decoded table")
        })?;
        match &mut range {
            None => range = Some((p.user_key.to_vec(), p.user_key.to_vec())),
            Some((_, hi)) if hi.as_slice() != p.user_key => *hi = p.user_key.to_vec(),
            Some(_) => {}
        }
        match p.kind {
            ValueKind::Put => batch.put(p.user_key, p.ts, it.value()),
            ValueKind::Delete => batch.delete(p.user_key, p.ts),
            ValueKind::Merge => batch.merge(p.user_key, p.ts, it.value()),
        }
        if batch.size_bytes() >= RESTORE_BATCH_BYTES {
            batches.push(std::mem::take(&mut batch));
        }
        it.next()?;
    }
    if !batch.is_empty() {
        batches.push(batch);
    }
    Ok((batches, range))
}

/// Up to `limit` live rows of `table` within the bounds, each key's versions resolved as
/// the engine resolves them (`merge`, or last-write-wins); a deleted key is left out.
pub fn read_rows(
    table: &Arc<TableReader>,
    merge: Option<&dyn MergeOperator>,
    start: Bound<&[u8]>,
    end: Bound<&[u8]>,
    limit: usize,
) -> Result<Rows> {
    let mut it = table.iter(ReadPurpose::Scan, false);
    match start {
        Bound::Included(k) | Bound::Excluded(k) => it.seek(&mosaic_lsm::key::seek_key(k))?,
        Bound::Unbounded => it.seek_to_first()?,
    }
    let before_end = |k: &[u8]| match end {
        Bound::Included(e) => k <= e,
        Bound::Excluded(e) => k < e,
        Bound::Unbounded => true,
    };
    let mut rows = Vec::new();
    let mut versions: Vec<(u64, ValueKind, Vec<u8>)> = Vec::new();
    let mut key: Vec<u8> = Vec::new();
    loop {
        let next = if it.valid() {
            let p = mosaic_lsm::key::parse_internal(it.key()).ok_or_else(|| {
                Error::corruption(table.path(), 0, "malformed internal key in a decoded table")
            })?;
            Some((p.user_key.to_vec(), p.ts, p.kind, it.value().to_vec()))
        } else {
            None
        };
        let same = next.as_ref().is_some_and(|(k, ..)| *k == key);
        if !same && !versions.is_empty() {
            if rows.len() >= limit {
                return Ok((rows, false));
            }
            if let Some(value) = resolve(&key, &versions, merge) {
                rows.push((std::mem::take(&mut key), value));
            }
            versions.clear();
        }
        let Some((k, ts, kind, value)) = next else {
            return Ok((rows, true));
        };
        if matches!(start, Bound::Excluded(s) if k.as_slice() == s) {
            it.next()?;
            continue;
        }
        if !before_end(&k) {
            if versions.is_empty() {
                return Ok((rows, true));
            }
            continue;
        }
        key = k;
        versions.push((ts, kind, value));
        it.next()?;
    }
}

/// One key's versions (newest first) as a read sees them; `None` when deleted.
fn resolve(
    key: &[u8],
    versions: &[(u64, ValueKind, Vec<u8>)],
    merge: Option<&dyn MergeOperator>,
) -> Option<Vec<u8>> {
    let views: Vec<Version<'_>> = versions
        .iter()
        .map(|(ts, kind, value)| Version {
            ts: *ts,
            kind: *kind,
            value,
        })
        .collect();
    let (kind, value) = match merge {
        Some(op) => {
            let r = op.merge(key, &views);
            (r.kind, r.value)
        }
        None => {
            let w = mosaic_lsm::merge::lww_winner(&views)?;
            (w.kind, w.value.to_vec())
        }
    };
    (kind != ValueKind::Delete).then_some(value)
}

#[cfg(test)]
mod tests;
