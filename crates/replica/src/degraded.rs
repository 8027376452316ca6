//! Degraded reads (ELECT §5): rows a secondary dropped because a coding group covers them,
//! read while their primary is down, by decoding the primary's table from the group's
//! other shards.
//!
//! The caller (the cluster) gathers `k` shards of the group at one epoch — data shards
//! from their nodes, parity from the parity nodes, an empty slot as no bytes at all — and
//! hands them in; [`decode`] rebuilds the lost table stripe by stripe and checks it against
//! the SHA-256 its ECMeta names, so a shard from another epoch is caught, never read. The
//! decoded table is kept in memory ([`DecodedTables`], by that hash, least recently used
//! first out), so further reads of its rows while the primary stays down decode nothing.

use std::collections::VecDeque;
use std::ops::Bound;
use std::sync::Arc;

use mosaic_env::RandomAccessFile;
use mosaic_erasure::EcMeta;
use mosaic_lsm::{Error, MergeOperator, ReadPurpose, Result, TableReader, ValueKind, Version};
use parking_lot::Mutex;

/// Rows read: `(key, value)` in key order, and whether the bounds hold nothing more.
pub type Rows = (Vec<(Vec<u8>, Vec<u8>)>, bool);

/// Bytes of decoded tables one store keeps by default.
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
        let pieces: Vec<(usize, &[u8])> = shards
            .iter()
            .map(|(pos, bytes)| {
                let end = range.end.min(bytes.len());
                (
                    usize::from(*pos),
                    bytes.get(range.start..end).unwrap_or_default(),
                )
            })
            .collect();
        let stripe = codec
            .decode_range(range, &pieces, usize::from(slot))
            .map_err(|e| bad(e.to_string()))?;
        out.extend_from_slice(&stripe);
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

/// A decoded table's bytes, for [`TableReader`].
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

/// Decoded tables kept in memory, by content hash (see the module doc).
pub struct DecodedTables {
    capacity: u64,
    tables: Mutex<VecDeque<([u8; 32], Arc<TableReader>)>>,
}

impl std::fmt::Debug for DecodedTables {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DecodedTables")
            .field("capacity", &self.capacity)
            .finish_non_exhaustive()
    }
}

impl DecodedTables {
    /// An empty cache of up to `capacity` bytes (the newest table is always kept).
    pub fn new(capacity: u64) -> DecodedTables {
        DecodedTables {
            capacity,
            tables: Mutex::new(VecDeque::new()),
        }
    }

    /// The table whose content hashes to `hash`, if kept (it becomes the most recent).
    pub fn get(&self, hash: &[u8; 32]) -> Option<Arc<TableReader>> {
        let mut tables = self.tables.lock();
        let i = tables.iter().position(|(h, _)| h == hash)?;
        let entry = tables.remove(i)?;
        let reader = entry.1.clone();
        tables.push_back(entry);
        Some(reader)
    }

    /// Opens decoded `bytes` (hashing to `hash`) as a table and keeps it.
    pub fn insert(&self, hash: [u8; 32], bytes: Vec<u8>) -> Result<Arc<TableReader>> {
        let file: Arc<dyn RandomAccessFile> = Arc::new(InMemory(bytes));
        let reader = Arc::new(TableReader::open(
            file,
            std::path::PathBuf::from(format!("decoded-{}.sst", hex(&hash[..8]))),
            0,
            None,
            Arc::new(mosaic_lsm::Counters::default()),
        )?);
        let mut tables = self.tables.lock();
        tables.retain(|(h, _)| *h != hash);
        tables.push_back((hash, reader.clone()));
        let mut total: u64 = tables.iter().map(|(_, r)| r.size_bytes()).sum();
        while total > self.capacity && tables.len() > 1 {
            if let Some((_, old)) = tables.pop_front() {
                total = total.saturating_sub(old.size_bytes());
            }
        }
        Ok(reader)
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

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
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
mod tests {
    use super::*;
    use mosaic_erasure::meta::ShardMeta;
    use mosaic_erasure::Codec;
    use mosaic_lsm::{Db, Options};
    use mosaic_types::HostId;

    /// The one table file a flush of `rows` (`(key, ts, Some(value) | None for a delete)`)
    /// writes.
    fn table_bytes(rows: &[(&str, u64, Option<&str>)]) -> Vec<u8> {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path(), Options::default()).unwrap();
        for (k, ts, v) in rows {
            match v {
                Some(v) => db.put(k.as_bytes(), *ts, v.as_bytes()).unwrap(),
                None => db.delete(k.as_bytes(), *ts).unwrap(),
            }
        }
        db.flush().unwrap();
        let id = db.levels()[0].tables[0].id;
        let bytes = std::fs::read(db.table_file_path(id)).unwrap();
        db.close().unwrap();
        bytes
    }

    fn group(data: &[&[u8]]) -> (EcMeta, Vec<Vec<u8>>) {
        let codec = Codec::with_stripe(2, 3, 4096).unwrap();
        let parity = codec.encode(data).unwrap();
        let coded_len = parity[0].len() as u64;
        let shards = data
            .iter()
            .copied()
            .chain(parity.iter().map(Vec::as_slice))
            .enumerate()
            .map(|(i, content)| ShardMeta {
                hash: EcMeta::content_hash(content),
                size: content.len() as u64,
                node: HostId([i as u8; 16]),
                position: i as u8,
            })
            .collect();
        let meta = EcMeta {
            group: [1; 16],
            epoch: 4,
            k: 2,
            n: 3,
            stripe_bytes: 4096,
            coded_len,
            shards,
        };
        (meta, parity)
    }

    #[test]
    fn a_lost_table_is_rebuilt_from_the_others_and_read_like_the_engine_reads_it() {
        let rows: Vec<(String, u64, Option<String>)> = (0..2000)
            .map(|i| {
                let v = (i % 10 != 3).then(|| format!("value-{i}-{}", "z".repeat(i % 50)));
                (format!("key{i:05}"), 100 + i as u64, v)
            })
            .collect();
        let borrowed: Vec<(&str, u64, Option<&str>)> = rows
            .iter()
            .map(|(k, ts, v)| (k.as_str(), *ts, v.as_deref()))
            .collect();
        let lost = table_bytes(&borrowed);
        let other = table_bytes(&[("zz", 1, Some("other node's table"))]);
        let (meta, parity) = group(&[&lost, &other]);
        assert!(lost.len() > 4096 * 3, "several stripes");

        let rebuilt = decode(&meta, 0, &[(1, other.clone()), (2, parity[0].clone())]).unwrap();
        assert_eq!(rebuilt, lost);
        // The other data slot from the lost one and parity; an empty slot is no bytes.
        assert_eq!(
            decode(&meta, 1, &[(0, lost.clone()), (2, parity[0].clone())]).unwrap(),
            other
        );
        let (empty_meta, empty_parity) = group(&[&lost, &[]]);
        assert_eq!(
            decode(
                &empty_meta,
                0,
                &[(1, Vec::new()), (2, empty_parity[0].clone())]
            )
            .unwrap(),
            lost
        );
        // A parity shard of another epoch rebuilds other bytes: refused by the hash.
        let mut stale = parity[0].clone();
        stale[10] ^= 1;
        let err = decode(&meta, 0, &[(1, other.clone()), (2, stale)]).unwrap_err();
        assert!(err.to_string().contains("hash"), "{err}");
        assert!(
            decode(&meta, 0, &[(1, other.clone())]).is_err(),
            "too few shards"
        );

        let cache = DecodedTables::new(1 << 30);
        let hash = meta.shards[0].hash;
        assert!(cache.get(&hash).is_none());
        let table = cache.insert(hash, rebuilt).unwrap();
        assert!(cache.get(&hash).is_some());
        let (all, done) =
            read_rows(&table, None, Bound::Unbounded, Bound::Unbounded, 10_000).unwrap();
        assert!(done);
        let want: Vec<(Vec<u8>, Vec<u8>)> = rows
            .iter()
            .filter_map(|(k, _, v)| {
                v.as_ref()
                    .map(|v| (k.clone().into_bytes(), v.clone().into_bytes()))
            })
            .collect();
        assert_eq!(all, want);
        let (some, done) = read_rows(
            &table,
            None,
            Bound::Excluded(b"key00010"),
            Bound::Excluded(b"key00020"),
            5,
        )
        .unwrap();
        assert!(!done);
        let keys: Vec<&[u8]> = some.iter().map(|(k, _)| k.as_slice()).collect();
        assert_eq!(
            keys,
            [
                &b"key00011"[..],
                b"key00012",
                b"key00014",
                b"key00015",
                b"key00016"
            ]
        );
        let (rest, done) = read_rows(
            &table,
            None,
            Bound::Included(b"key00017"),
            Bound::Excluded(b"key00020"),
            5,
        )
        .unwrap();
        assert!(done);
        assert_eq!(rest.len(), 3);
    }

    #[test]
    fn the_cache_keeps_the_most_recently_used_tables_within_its_bytes() {
        let a = table_bytes(&[("a", 1, Some("x"))]);
        let b = table_bytes(&[("b", 1, Some("y"))]);
        let c = table_bytes(&[("c", 1, Some("z"))]);
        let cache = DecodedTables::new((a.len() + b.len()) as u64);
        cache.insert([1; 32], a).unwrap();
        cache.insert([2; 32], b).unwrap();
        assert!(cache.get(&[1; 32]).is_some());
        cache.insert([3; 32], c).unwrap();
        assert!(
            cache.get(&[2; 32]).is_none(),
            "least recently used goes first"
        );
        assert!(cache.get(&[1; 32]).is_some() && cache.get(&[3; 32]).is_some());
    }
}
