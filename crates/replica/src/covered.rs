//! Secondary removal (ELECT §4.1.4) on a node that holds redundant copies: the key lists
//! data nodes sent once their tables were coded, and the filter that makes the source's
//! tree forget the versions they cover.
//!
//! ```text
//! DIR/covered/<source hex>-<table id>.keys   one key list: the source's table `id`'s keys,
//!                                            each with its newest timestamp in the table,
//!                                            and the coding group (ECMeta, slot) holding it
//! ```
//!
//! A list names versions a coding group now protects: for each listed key, every version
//! at or below the listed timestamp is part of the coded table's content (the data node
//! merged them before coding it). The list is written durably *before* anything is
//! dropped, so after a crash the node still knows which keys it may no longer answer
//! alone: a read of a covered key is answered together with the key's primary replica
//! (the cluster relays it), never as "not found". Newer versions (written after the table
//! was coded) stay in the tree and are merged into such answers.
//!
//! The group lets the node read covered rows while their primary is down (a degraded
//! read decodes the table from the group's other shards): each key maps to the list with
//! its newest timestamp.
//!
//! File format: `mosaic-keys 1\n`, the slot (u8), the ECMeta (u32 length, its binary
//! form), a u32 count, then per key a u32 length, the key and a u64 timestamp (all
//! little-endian), then a crc32c of everything before it.

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use mosaic_erasure::EcMeta;
use mosaic_lsm::{CompactionFilter, Error, Fs, Result};
use parking_lot::RwLock;

use crate::role::SourceId;

/// The directory of key lists, in the table directory.
pub const COVERED_DIR: &str = "covered";
const MAGIC: &[u8] = b"mosaic-keys 1\n";

/// Keys of one table of a source, each with the newest timestamp the table holds for it.
pub type KeyList = Vec<(Vec<u8>, u64)>;

/// Where a source's coded table is a data shard: its group's ECMeta (as of when the list
/// was sent) and its slot.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Shard {
    /// The group's ECMeta.
    pub meta: EcMeta,
    /// The table's slot in it.
    pub slot: u8,
}

/// A source's coded table covering some keys of a read: where to decode it from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Covering {
    /// The source's table id.
    pub id: u64,
    /// Its shard.
    pub shard: Shard,
}

/// What the lists of one source cover, and the filter of its tree.
#[derive(Debug, Default)]
pub struct SourceCover {
    /// Per key, the newest covered timestamp over every list, and that list's table id.
    keys: RwLock<BTreeMap<Vec<u8>, (u64, u64)>>,
    /// The lists held, by the source's table id, with their shards and first and last
    /// keys.
    lists: RwLock<BTreeMap<u64, Listed>>,
    /// Lists being given up ([`Covered::release`]): their keys are no longer dropped, so
    /// the rows written back into the tree stay, though reads still treat them as covered
    /// until the list is gone.
    released: RwLock<BTreeSet<u64>>,
    /// A list arrived since the tree was last purged.
    dirty: AtomicBool,
}

/// A list held: its shard and the first and last keys it names.
#[derive(Clone, Debug)]
struct Listed {
    shard: Shard,
    first: Vec<u8>,
    last: Vec<u8>,
}

impl CompactionFilter for SourceCover {
    fn drops(&self, key: &[u8], ts: u64) -> bool {
        let Some((t, id)) = self.keys.read().get(key).copied() else {
            return false;
        };
        ts <= t && !self.released.read().contains(&id)
    }
}

impl SourceCover {
    /// Whether a covered key lies within the bounds.
    pub fn covers(&self, start: Bound<&[u8]>, end: Bound<&[u8]>) -> bool {
        valid_bounds(start, end)
            && self
                .keys
                .read()
                .range::<[u8], _>((start, end))
                .next()
                .is_some()
    }

    /// The coded tables holding the newest covered versions of the keys within the
    /// bounds, each once, in table id order.
    pub fn covering(&self, start: Bound<&[u8]>, end: Bound<&[u8]>) -> Vec<Covering> {
        if !valid_bounds(start, end) {
            return Vec::new();
        }
        let ids: BTreeSet<u64> = self
            .keys
            .read()
            .range::<[u8], _>((start, end))
            .map(|(_, (_, id))| *id)
            .collect();
        let lists = self.lists.read();
        ids.into_iter()
            .filter_map(|id| {
                lists.get(&id).map(|l| Covering {
                    id,
                    shard: l.shard.clone(),
                })
            })
            .collect()
    }

    /// Keys covered.
    pub fn len(&self) -> usize {
        self.keys.read().len()
    }

    /// Whether no key is covered.
    pub fn is_empty(&self) -> bool {
        self.keys.read().is_empty()
    }

    fn add(&self, id: u64, shard: Shard, keys: &KeyList) {
        let mut map = self.keys.write();
        for (k, ts) in keys {
            let slot = map.entry(k.clone()).or_insert((*ts, id));
            // The newest version wins; between lists of equal timestamps, the newer table.
            if (*ts, id) > *slot {
                *slot = (*ts, id);
            }
        }
        let first = keys
            .iter()
            .map(|(k, _)| k)
            .min()
            .cloned()
            .unwrap_or_default();
        let last = keys
            .iter()
            .map(|(k, _)| k)
            .max()
            .cloned()
            .unwrap_or_default();
        self.lists.write().insert(id, Listed { shard, first, last });
    }
}

/// A list whose coding group names a node that is no longer in the ring: its rows have
/// lost a shard's worth of protection and are to be held in full again.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Dissolved {
    /// The source whose table the list names.
    pub source: SourceId,
    /// The source's table id.
    pub id: u64,
    /// The first and last keys the list names.
    pub first: Vec<u8>,
    /// See `first`.
    pub last: Vec<u8>,
}

/// Whether `BTreeMap::range` accepts the bounds (it panics on reversed or empty-excluded
/// ones, which select nothing).
fn valid_bounds(start: Bound<&[u8]>, end: Bound<&[u8]>) -> bool {
    match (start, end) {
        (Bound::Included(s), Bound::Included(e)) => s <= e,
        (Bound::Included(s) | Bound::Excluded(s), Bound::Included(e) | Bound::Excluded(e)) => s < e,
        _ => true,
    }
}

/// Every source's key lists in one table directory (see the module doc).
pub struct Covered {
    fs: Arc<dyn Fs>,
    dir: PathBuf,
    sources: RwLock<BTreeMap<SourceId, Arc<SourceCover>>>,
}

impl std::fmt::Debug for Covered {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Covered")
            .field("dir", &self.dir)
            .finish_non_exhaustive()
    }
}

fn list_name(source: SourceId, id: u64) -> String {
    format!("{source}-{id}.keys")
}

fn parse_name(name: &str) -> Option<(SourceId, u64)> {
    let (source, id) = name.strip_suffix(".keys")?.split_once('-')?;
    let source = SourceId::from_hex(source)?;
    let id = id.parse().ok()?;
    // Only the canonical spelling is ever written.
    (list_name(source, id) == name).then_some((source, id))
}

impl Covered {
    /// Loads every list in `table_dir/covered/`. A damaged list is an error: without it
    /// the node could answer "not found" for rows it dropped.
    pub fn open(fs: Arc<dyn Fs>, table_dir: &Path) -> Result<Covered> {
        let dir = table_dir.join(COVERED_DIR);
        let covered = Covered {
            fs,
            dir,
            sources: RwLock::new(BTreeMap::new()),
        };
        if !covered.fs.exists(&covered.dir) {
            return Ok(covered);
        }
        let names = covered
            .fs
            .list(&covered.dir)
            .map_err(|e| Error::io("listing", &covered.dir, e))?;
        for name in names {
            let Some((source, id)) = parse_name(&name) else {
                continue;
            };
            let path = covered.dir.join(&name);
            let bytes = covered
                .fs
                .read_all(&path)
                .map_err(|e| Error::io("reading", &path, e))?;
            let (shard, keys) = decode(&bytes).map_err(|why| Error::corruption(&path, 0, why))?;
            covered.source(source).add(id, shard, &keys);
        }
        Ok(covered)
    }

    /// The cover of `source` (empty until a list arrives); it is also the filter of the
    /// source's tree.
    pub fn source(&self, source: SourceId) -> Arc<SourceCover> {
        if let Some(c) = self.sources.read().get(&source) {
            return c.clone();
        }
        self.sources.write().entry(source).or_default().clone()
    }

    /// Durably records `source`'s list for its table `id`, a data shard of `shard`, then
    /// covers its keys. Returns whether the list was new (a list already held is kept).
    pub fn add(&self, source: SourceId, id: u64, shard: Shard, keys: &KeyList) -> Result<bool> {
        let cover = self.source(source);
        if cover.lists.read().contains_key(&id) {
            return Ok(false);
        }
        self.fs
            .create_dir_all(&self.dir)
            .map_err(|e| Error::io("creating directory", &self.dir, e))?;
        let path = self.dir.join(list_name(source, id));
        mosaic_lsm::write_atomically(&*self.fs, &path, &encode(&shard, keys))
            .map_err(|e| Error::io("writing", &path, e))?;
        if let Some(parent) = self.dir.parent() {
            self.fs
                .sync_dir(parent)
                .map_err(|e| Error::io("syncing", parent, e))?;
        }
        cover.add(id, shard, keys);
        cover.dirty.store(true, Ordering::SeqCst);
        Ok(true)
    }

    /// Every list of each source with a list whose coding group names a node `member`
    /// does not accept (one that left the ring): the rows it covers rely on a shard
    /// nobody holds any more. A source's lists go together: once the newest list of a key
    /// is forgotten, an older one would name it again, with a table compaction may have
    /// replaced since.
    pub fn dissolved(&self, member: impl Fn(&[u8; 16]) -> bool) -> Vec<Dissolved> {
        let mut out = Vec::new();
        for (source, cover) in self.sources.read().iter() {
            let lists = cover.lists.read();
            let lost = lists
                .values()
                .any(|l| !l.shard.meta.shards.iter().all(|s| member(&s.node.0)));
            if !lost {
                continue;
            }
            for (id, l) in lists.iter() {
                out.push(Dissolved {
                    source: *source,
                    id: *id,
                    first: l.first.clone(),
                    last: l.last.clone(),
                });
            }
        }
        out
    }

    /// Which of `groups` a list held here (of any source, released or not) names: the
    /// rows such a list covers may still be read through that group.
    pub fn naming(&self, groups: &[[u8; 16]]) -> Vec<[u8; 16]> {
        let mut out: Vec<[u8; 16]> = Vec::new();
        for cover in self.sources.read().values() {
            for l in cover.lists.read().values() {
                let g = l.shard.meta.group;
                if groups.contains(&g) && !out.contains(&g) {
                    out.push(g);
                }
            }
        }
        out
    }

    /// Stops dropping the versions `source`'s list `id` covers (in memory only: after a
    /// restart the list drops them again until it is forgotten). Reads still treat its
    /// keys as covered.
    pub fn release(&self, source: SourceId, id: u64) {
        self.source(source).released.write().insert(id);
    }

    /// Durably forgets `source`'s list `id`: its keys are no longer covered (the caller
    /// wrote their rows back into the source's tree first).
    pub fn forget(&self, source: SourceId, id: u64) -> Result<()> {
        let path = self.dir.join(list_name(source, id));
        mosaic_lsm::remove_durably(&*self.fs, &path)
            .map_err(|e| Error::io("removing", &path, e))?;
        // The keys' newest lists are recomputed from the lists that remain.
        let cover = self.source(source);
        let remaining: Vec<u64> = cover
            .lists
            .read()
            .keys()
            .copied()
            .filter(|i| *i != id)
            .collect();
        let fresh = SourceCover::default();
        for other in remaining {
            let path = self.dir.join(list_name(source, other));
            let bytes = self
                .fs
                .read_all(&path)
                .map_err(|e| Error::io("reading", &path, e))?;
            let (shard, keys) = decode(&bytes).map_err(|why| Error::corruption(&path, 0, why))?;
            fresh.add(other, shard, &keys);
        }
        *cover.keys.write() = std::mem::take(&mut *fresh.keys.write());
        *cover.lists.write() = std::mem::take(&mut *fresh.lists.write());
        cover.released.write().remove(&id);
        Ok(())
    }

    /// The sources whose trees have versions to drop since they were last purged; each
    /// is reported once.
    pub fn take_dirty(&self) -> Vec<SourceId> {
        self.sources
            .read()
            .iter()
            .filter(|(_, c)| c.dirty.swap(false, Ordering::SeqCst))
            .map(|(s, _)| *s)
            .collect()
    }

    /// Marks `source` as still having versions to drop (its purge failed).
    pub fn mark_dirty(&self, source: SourceId) {
        self.source(source).dirty.store(true, Ordering::SeqCst);
    }

    /// Keys covered, over every source.
    pub fn keys(&self) -> u64 {
        self.sources.read().values().map(|c| c.len() as u64).sum()
    }
}

fn encode(shard: &Shard, keys: &KeyList) -> Vec<u8> {
    let size: usize = keys.iter().map(|(k, _)| k.len() + 12).sum();
    let meta = shard.meta.encode();
    let mut out = Vec::with_capacity(MAGIC.len() + 13 + meta.len() + size);
    out.extend_from_slice(MAGIC);
    out.push(shard.slot);
    out.extend_from_slice(&(meta.len() as u32).to_le_bytes());
    out.extend_from_slice(&meta);
    out.extend_from_slice(&(keys.len() as u32).to_le_bytes());
    for (k, ts) in keys {
        out.extend_from_slice(&(k.len() as u32).to_le_bytes());
        out.extend_from_slice(k);
        out.extend_from_slice(&ts.to_le_bytes());
    }
    let crc = crc32c::crc32c(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

fn decode(bytes: &[u8]) -> std::result::Result<(Shard, KeyList), String> {
    let body_len = bytes.len().checked_sub(4).ok_or("truncated")?;
    let (body, crc) = bytes.split_at(body_len);
    let crc = u32::from_le_bytes(crc.try_into().map_err(|_| "truncated")?);
    if crc32c::crc32c(body) != crc {
        return Err("checksum mismatch".into());
    }
    let mut rest = body.strip_prefix(MAGIC).ok_or("unknown format")?;
    let mut take = |n: usize| -> std::result::Result<&[u8], String> {
        if rest.len() < n {
            return Err("truncated".into());
        }
        let (head, tail) = rest.split_at(n);
        rest = tail;
        Ok(head)
    };
    let u32_of = |b: &[u8]| {
        b.try_into()
            .map(u32::from_le_bytes)
            .map_err(|_| "truncated")
    };
    let slot = *take(1)?.first().ok_or("truncated")?;
    let meta_len = u32_of(take(4)?)? as usize;
    let meta = EcMeta::decode(take(meta_len)?).map_err(|e| e.to_string())?;
    if slot >= meta.k {
        return Err(format!(
            "slot {slot} is not a data slot of a group of k = {}",
            meta.k
        ));
    }
    let count = u32_of(take(4)?)? as usize;
    let mut keys = Vec::with_capacity(count.min(1 << 20));
    for _ in 0..count {
        let len = u32_of(take(4)?)? as usize;
        let key = take(len)?.to_vec();
        let ts = take(8)?
            .try_into()
            .map(u64::from_le_bytes)
            .map_err(|_| "truncated")?;
        keys.push((key, ts));
    }
    if !rest.is_empty() {
        return Err("trailing bytes".into());
    }
    Ok((Shard { meta, slot }, keys))
}

/// The key list of the table file `file` (`path` names it in errors): each key once, with
/// its newest timestamp.
pub fn key_list(file: Arc<dyn mosaic_env::RandomAccessFile>, path: &Path) -> Result<KeyList> {
    let reader = Arc::new(mosaic_lsm::TableReader::open(
        file,
        path.to_path_buf(),
        0,
        None,
        Arc::new(mosaic_lsm::Counters::default()),
    )?);
    let mut it = reader.iter(mosaic_lsm::ReadPurpose::Compaction, false);
    it.seek_to_first()?;
    let mut out: KeyList = Vec::new();
    while it.valid() {
        let p = mosaic_lsm::key::parse_internal(it.key())
            .ok_or_else(|| Error::corruption(path, 0, "malformed internal key"))?;
        match out.last_mut() {
            Some((k, ts)) if k.as_slice() == p.user_key => *ts = (*ts).max(p.ts),
            _ => out.push((p.user_key.to_vec(), p.ts)),
        }
        it.next()?;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use mosaic_lsm::RealFs;

    fn list(keys: &[(&str, u64)]) -> KeyList {
        keys.iter()
            .map(|(k, ts)| (k.as_bytes().to_vec(), *ts))
            .collect()
    }

    /// Slot `slot` of a (3, 2) group with empty shards.
    fn shard(slot: u8) -> Shard {
        let meta = EcMeta {
            group: [9; 16],
            epoch: 1,
            k: 2,
            n: 3,
            stripe_bytes: 1 << 16,
            coded_len: 0,
            shards: (0..3u8)
                .map(|i| mosaic_erasure::meta::ShardMeta {
                    hash: EcMeta::content_hash(&[]),
                    size: 0,
                    node: mosaic_types::HostId([i; 16]),
                    position: i,
                })
                .collect(),
        };
        Shard { meta, slot }
    }

    #[test]
    fn lists_survive_reopen_and_cover_by_the_newest_timestamp() {
        let dir = tempfile::tempdir().unwrap();
        let fs: Arc<dyn Fs> = Arc::new(RealFs);
        let a = SourceId([1; 16]);
        let b = SourceId([2; 16]);
        let c = Covered::open(fs.clone(), dir.path()).unwrap();
        assert!(c
            .add(a, 7, shard(0), &list(&[("k1", 10), ("k3", 5)]))
            .unwrap());
        assert!(!c
            .add(a, 7, shard(0), &list(&[("k1", 10), ("k3", 5)]))
            .unwrap());
        assert!(c.add(a, 9, shard(1), &list(&[("k3", 8)])).unwrap());
        assert!(c.add(b, 7, shard(0), &list(&[("k2", 1)])).unwrap());
        assert_eq!(c.take_dirty(), vec![a, b]);
        assert!(c.take_dirty().is_empty());
        for c in [c, Covered::open(fs.clone(), dir.path()).unwrap()] {
            let sa = c.source(a);
            assert!(sa.drops(b"k1", 10) && !sa.drops(b"k1", 11));
            assert!(sa.drops(b"k3", 8) && !sa.drops(b"k3", 9));
            assert!(!sa.drops(b"k2", 1));
            assert!(c.source(b).drops(b"k2", 1));
            assert!(sa.covers(Bound::Included(b"k1"), Bound::Excluded(b"k2")));
            assert!(!sa.covers(Bound::Excluded(b"k1"), Bound::Excluded(b"k3")));
            assert!(!sa.covers(Bound::Included(b"k4"), Bound::Unbounded));
            assert!(!sa.covers(Bound::Included(b"k3"), Bound::Excluded(b"k3")));
            assert!(!sa.covers(Bound::Included(b"k9"), Bound::Excluded(b"k1")));
            assert_eq!(c.keys(), 3);
            // Each key's newest version is in one table: k1's in 7, k3's in 9.
            let ids = |start, end| -> Vec<(u64, u8)> {
                sa.covering(start, end)
                    .into_iter()
                    .map(|cv| (cv.id, cv.shard.slot))
                    .collect()
            };
            assert_eq!(
                ids(Bound::Unbounded, Bound::Unbounded),
                vec![(7, 0), (9, 1)]
            );
            assert_eq!(ids(Bound::Included(b"k3"), Bound::Unbounded), vec![(9, 1)]);
            assert_eq!(ids(Bound::Included(b"k2"), Bound::Excluded(b"k3")), vec![]);
            assert_eq!(
                sa.covering(Bound::Included(b"k3"), Bound::Excluded(b"k1")),
                vec![]
            );
        }
    }

    /// A group naming a node that left gives up every list of its source: released
    /// lists stop dropping versions but still cover reads, and forgotten ones are gone,
    /// across a reopen too; another source's lists stay.
    #[test]
    fn a_source_with_a_list_of_a_group_that_lost_a_member_gives_up_all_its_lists() {
        let dir = tempfile::tempdir().unwrap();
        let fs: Arc<dyn Fs> = Arc::new(RealFs);
        let (a, b) = (SourceId([1; 16]), SourceId([2; 16]));
        let c = Covered::open(fs.clone(), dir.path()).unwrap();
        c.add(a, 7, shard(0), &list(&[("k1", 10), ("k3", 5)]))
            .unwrap();
        c.add(a, 9, shard(1), &list(&[("k3", 8), ("k4", 2)]))
            .unwrap();
        c.add(b, 7, shard(0), &list(&[("k2", 1)])).unwrap();
        assert_eq!(c.naming(&[[8; 16], [9; 16]]), vec![[9; 16]]);
        assert!(c.naming(&[[8; 16]]).is_empty());
        // Every node of the groups is a member: nothing to give up.
        assert!(c.dissolved(|node| node[0] < 3).is_empty());
        // Node 2 (position 2 of every group here) left: both sources' groups name it.
        let lost = c.dissolved(|node| node[0] < 2);
        let named: Vec<(SourceId, u64, &[u8], &[u8])> = lost
            .iter()
            .map(|d| (d.source, d.id, &d.first[..], &d.last[..]))
            .collect();
        assert_eq!(
            named,
            vec![
                (a, 7, &b"k1"[..], &b"k3"[..]),
                (a, 9, &b"k3"[..], &b"k4"[..]),
                (b, 7, &b"k2"[..], &b"k2"[..])
            ]
        );
        c.release(a, 9);
        let sa = c.source(a);
        assert!(!sa.drops(b"k3", 8), "a released list drops nothing");
        assert!(sa.drops(b"k1", 10), "the others still do");
        assert!(sa.covers(Bound::Included(b"k3"), Bound::Included(b"k3")));
        c.forget(a, 9).unwrap();
        c.forget(a, 7).unwrap();
        for c in [c, Covered::open(fs.clone(), dir.path()).unwrap()] {
            let sa = c.source(a);
            assert!(!sa.drops(b"k3", 5) && !sa.drops(b"k1", 10));
            assert!(!sa.covers(Bound::Unbounded, Bound::Unbounded));
            assert!(c.source(b).drops(b"k2", 1));
            assert_eq!(c.keys(), 1);
            // Source b's list still names the group.
            assert_eq!(c.naming(&[[9; 16]]), vec![[9; 16]]);
        }
    }

    #[test]
    fn a_damaged_list_is_an_error_not_an_empty_cover() {
        let dir = tempfile::tempdir().unwrap();
        let fs: Arc<dyn Fs> = Arc::new(RealFs);
        let a = SourceId([1; 16]);
        let c = Covered::open(fs.clone(), dir.path()).unwrap();
        c.add(a, 3, shard(1), &list(&[("key", 4)])).unwrap();
        let path = dir.path().join(COVERED_DIR).join(list_name(a, 3));
        let mut bytes = std::fs::read(&path).unwrap();
        for cut in 0..bytes.len() {
            assert!(decode(&bytes[..cut]).is_err(), "cut at {cut}");
        }
        let last = bytes.len() - 6;
        bytes[last] ^= 1;
        std::fs::write(&path, &bytes).unwrap();
        let err = Covered::open(fs, dir.path()).unwrap_err().to_string();
        assert!(err.contains("checksum"), "{err}");
    }
}
