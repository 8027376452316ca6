//! Versions (the set of live tables per level), version edits and the manifest that logs them.
//!
//! A [`Version`] is immutable; readers hold an `Arc` to the one they started with, so a
//! compaction that replaces tables never pulls files from under a reader. A table file is
//! deleted when the last handle to it drops after it was marked obsolete.
//!
//! The manifest is a log of [`VersionEdit`]s framed like WAL records. `CURRENT` names the
//! live manifest and is replaced atomically (write, sync, rename, sync directory). On open
//! the edits are replayed; only a torn final record (a crash during an append, which was
//! therefore never acknowledged) is tolerated — any other damage is reported as corruption.
#![deny(clippy::indexing_slicing)]

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use mosaic_env::Fs;

use crate::error::{Error, Result};
use crate::key::{compare_internal, user_key};
use crate::table::TableReader;
use crate::wal::{frame_record, Records, WalWriter};

/// Everything the manifest records about one table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TableMeta {
    /// The table's id (its file is `{id:06}.sst`).
    pub id: u64,
    /// File size in bytes.
    pub size_bytes: u64,
    /// Number of entries.
    pub entries: u64,
    /// Smallest internal key.
    pub smallest: Vec<u8>,
    /// Largest internal key.
    pub largest: Vec<u8>,
    /// Smallest caller timestamp.
    pub min_ts: u64,
    /// Largest caller timestamp.
    pub max_ts: u64,
    /// Largest sequence number.
    pub max_seqno: u64,
    /// When the table was written, microseconds since the epoch.
    pub created_micros: u64,
    /// Where the data component lives: empty for the local file, otherwise a location
    /// understood by the configured [`crate::TableStore`].
    pub location: String,
}

impl TableMeta {
    /// Smallest user key.
    pub fn smallest_user_key(&self) -> &[u8] {
        user_key(&self.smallest)
    }

    /// Largest user key.
    pub fn largest_user_key(&self) -> &[u8] {
        user_key(&self.largest)
    }

    /// Whether the table's user-key range intersects `[lo, hi]`.
    pub fn overlaps_user_range(&self, lo: &[u8], hi: &[u8]) -> bool {
        self.smallest_user_key() <= hi && self.largest_user_key() >= lo
    }
}

/// File name of table `id`.
pub fn table_file_name(id: u64) -> String {
    format!("{id:06}.sst")
}

/// File name of the local sidecar of relocated table `id`: its metadata (filter, index,
/// properties, footer) while its data blocks live in the cold tier.
pub fn table_sidecar_name(id: u64) -> String {
    format!("{id:06}.meta")
}

/// File name of WAL `id`.
pub fn wal_file_name(id: u64) -> String {
    format!("{id:06}.wal")
}

/// File name of manifest `id`.
pub fn manifest_file_name(id: u64) -> String {
    format!("MANIFEST-{id:06}")
}

/// An open table shared by versions, readers and compactions.
pub struct TableHandle {
    meta: TableMeta,
    reader: Arc<TableReader>,
    reads: AtomicU64,
    obsolete: AtomicBool,
    fs: Arc<dyn Fs>,
    path: PathBuf,
    /// Where a relocated table's data lives, to delete it once obsolete.
    store: Option<Arc<dyn crate::TableStore>>,
}

impl TableHandle {
    /// Wraps an open table; `path` is its local file (for a relocated table, the local
    /// file it had, beside which its sidecar lies).
    pub fn new(meta: TableMeta, reader: Arc<TableReader>, fs: Arc<dyn Fs>, path: PathBuf) -> Self {
        Self {
            meta,
            reader,
            reads: AtomicU64::new(0),
            obsolete: AtomicBool::new(false),
            fs,
            path,
            store: None,
        }
    }

    /// The table store a relocated table's data lives in (deleted from it once obsolete).
    pub fn with_store(mut self, store: Arc<dyn crate::TableStore>) -> Self {
        self.store = Some(store);
        self
    }

    /// Bytes the table keeps on local disk: its file, or a relocated table's sidecar.
    pub fn local_bytes(&self) -> u64 {
        if self.meta.location.is_empty() {
            self.meta.size_bytes
        } else {
            self.meta.size_bytes.saturating_sub(self.reader.data_end())
        }
    }

    /// The manifest's record of the table.
    pub fn meta(&self) -> &TableMeta {
        &self.meta
    }

    /// The reader.
    pub fn reader(&self) -> &Arc<TableReader> {
        &self.reader
    }

    /// Reads served by this table since it was opened (its hotness).
    pub fn reads(&self) -> u64 {
        self.reads.load(Ordering::Relaxed)
    }

    /// Counts a read.
    pub fn note_read(&self) {
        self.reads.fetch_add(1, Ordering::Relaxed);
    }

    /// Marks the file for deletion once no version or reader uses it.
    pub fn mark_obsolete(&self) {
        self.obsolete.store(true, Ordering::SeqCst);
    }
}

impl Drop for TableHandle {
    fn drop(&mut self) {
        if !self.obsolete.load(Ordering::SeqCst) {
            return;
        }
        // Failing to delete leaves an orphan that the next open removes (a cold object: that
        // the cold tier's sweep removes); nothing is lost.
        if self.meta.location.is_empty() {
            let _ = self.fs.remove(&self.path);
        } else {
            let _ = self
                .fs
                .remove(&self.path.with_file_name(table_sidecar_name(self.meta.id)));
            if let Some(store) = &self.store {
                let _ = store.remove(&self.meta.location);
            }
        }
    }
}

/// Levels a two-layer log may hold: the global log and this many range groups, less one.
pub const LOG_LEVELS_MAX: usize = 1 << 16;

/// The key interval one range group of a two-layer log covers, for point lookups.
#[derive(Clone, Debug)]
pub struct GroupBounds {
    /// Smallest user key of any run in the group.
    pub smallest: Vec<u8>,
    /// Largest user key of any run in the group.
    pub largest: Vec<u8>,
    /// The group's level (1 + its group number).
    pub level: usize,
}

/// The live tables, per level. Level 0 is ordered newest first and may overlap; deeper
/// levels are ordered by key and disjoint.
///
/// In a two-layer log ([`crate::LogOptions`]) level 0 is the global log and level `1 + g`
/// holds the sorted runs of range group `g`, newest first and overlapping; `groups` lists
/// the non-empty groups' key intervals by smallest key, so a lookup probes only the
/// groups whose interval holds its key.
#[derive(Clone, Default)]
pub struct Version {
    /// Tables per level.
    pub levels: Vec<Vec<Arc<TableHandle>>>,
    /// Whether this is a two-layer log's version.
    pub log: bool,
    /// A two-layer log's non-empty groups, by smallest key.
    pub groups: Vec<GroupBounds>,
    /// Whether the intervals in `groups` are disjoint (they are unless the caller's
    /// grouping changed), so one binary search finds the only candidate.
    pub groups_disjoint: bool,
}

impl Version {
    /// An empty version with `levels` levels.
    pub fn new(levels: usize) -> Self {
        Self {
            levels: vec![Vec::new(); levels],
            ..Self::default()
        }
    }

    /// An empty two-layer log version (it grows a level per range group as runs arrive).
    pub fn new_log() -> Self {
        Self {
            levels: vec![Vec::new(); 1],
            log: true,
            groups: Vec::new(),
            groups_disjoint: true,
        }
    }

    /// The levels (≥ 1) of a two-layer log's groups that may hold `key`.
    pub fn groups_holding<'a>(&'a self, key: &'a [u8]) -> impl Iterator<Item = usize> + 'a {
        let end = self
            .groups
            .partition_point(|g| g.smallest.as_slice() <= key);
        let start = if self.groups_disjoint {
            end.saturating_sub(1)
        } else {
            0
        };
        self.groups
            .get(start..end)
            .unwrap_or_default()
            .iter()
            .filter(move |g| g.largest.as_slice() >= key)
            .map(|g| g.level)
    }

    /// The levels (≥ 1) of a two-layer log's groups whose interval meets `[lo, hi]`
    /// (`None`: unbounded on that side).
    pub fn groups_meeting(&self, lo: Option<&[u8]>, hi: Option<&[u8]>) -> Vec<usize> {
        self.groups
            .iter()
            .filter(|g| {
                lo.is_none_or(|lo| g.largest.as_slice() >= lo)
                    && hi.is_none_or(|hi| g.smallest.as_slice() <= hi)
            })
            .map(|g| g.level)
            .collect()
    }

    fn index_groups(&mut self) {
        let mut groups: Vec<GroupBounds> = Vec::new();
        for (level, tables) in self.levels.iter().enumerate().skip(1) {
            let lo = tables.iter().map(|t| t.meta.smallest_user_key()).min();
            let hi = tables.iter().map(|t| t.meta.largest_user_key()).max();
            if let (Some(lo), Some(hi)) = (lo, hi) {
                groups.push(GroupBounds {
                    smallest: lo.to_vec(),
                    largest: hi.to_vec(),
                    level,
                });
            }
        }
        groups.sort_by(|a, b| a.smallest.cmp(&b.smallest));
        self.groups_disjoint = groups
            .windows(2)
            .all(|w| matches!(w, [a, b] if a.largest < b.smallest));
        self.groups = groups;
    }

    /// The version after `edit`, given handles for the tables it adds.
    pub fn apply(&self, edit: &VersionEdit, added: &[Arc<TableHandle>]) -> Result<Version> {
        let mut levels = self.levels.clone();
        if self.log {
            // A log grows a level per range group it meets.
            let top = edit
                .added
                .iter()
                .map(|(l, _)| *l as usize + 1)
                .max()
                .unwrap_or(0);
            if top > LOG_LEVELS_MAX {
                return Err(bad_level(top as u32 - 1));
            }
            if top > levels.len() {
                levels.resize(top, Vec::new());
            }
        }
        for (level, id) in &edit.deleted {
            let tables = levels
                .get_mut(*level as usize)
                .ok_or_else(|| bad_level(*level))?;
            tables.retain(|t| t.meta.id != *id);
        }
        for (level, meta) in &edit.added {
            let handle = added
                .iter()
                .find(|h| h.meta.id == meta.id)
                .cloned()
                .ok_or_else(|| {
                    Error::InvalidArgument(format!("no handle for table {}", meta.id))
                })?;
            levels
                .get_mut(*level as usize)
                .ok_or_else(|| bad_level(*level))?
                .push(handle);
        }
        for (i, tables) in levels.iter_mut().enumerate() {
            if i == 0 || self.log {
                tables.sort_by_key(|t| std::cmp::Reverse(t.meta.id));
            } else {
                tables.sort_by(|a, b| compare_internal(&a.meta.smallest, &b.meta.smallest));
            }
        }
        let mut version = Version {
            levels,
            log: self.log,
            groups: Vec::new(),
            groups_disjoint: true,
        };
        if self.log {
            version.index_groups();
        }
        Ok(version)
    }

    /// All tables, every level.
    pub fn all_tables(&self) -> impl Iterator<Item = &Arc<TableHandle>> {
        self.levels.iter().flatten()
    }

    /// Bytes per level.
    pub fn level_bytes(&self, level: usize) -> u64 {
        self.levels
            .get(level)
            .map_or(0, |t| t.iter().map(|t| t.meta.size_bytes).sum())
    }
}

fn bad_level(level: u32) -> Error {
    Error::InvalidArgument(format!("level {level} out of range"))
}

/// A change to the set of live tables and the engine's counters.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct VersionEdit {
    /// WALs with smaller ids are no longer needed.
    pub log_number: Option<u64>,
    /// Next id for any file.
    pub next_file_id: Option<u64>,
    /// Largest sequence number persisted in tables.
    pub last_seqno: Option<u64>,
    /// The largest sequence number of a write now in a table (a node engine partition's
    /// shared-WAL replay starts after it).
    pub flushed_seqno: Option<u64>,
    /// Tables added, with their level.
    pub added: Vec<(u32, TableMeta)>,
    /// Tables removed: (level, id).
    pub deleted: Vec<(u32, u64)>,
}

const TAG_LOG_NUMBER: u8 = 1;
const TAG_NEXT_FILE_ID: u8 = 2;
const TAG_LAST_SEQNO: u8 = 3;
const TAG_ADD: u8 = 4;
const TAG_DELETE: u8 = 5;
const TAG_FLUSHED_SEQNO: u8 = 6;

fn put_bytes(out: &mut Vec<u8>, b: &[u8]) {
    out.extend_from_slice(&(b.len() as u32).to_le_bytes());
    out.extend_from_slice(b);
}

impl VersionEdit {
    /// Encodes the edit: a sequence of tagged fields, integers little-endian.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        for (tag, v) in [
            (TAG_LOG_NUMBER, self.log_number),
            (TAG_NEXT_FILE_ID, self.next_file_id),
            (TAG_LAST_SEQNO, self.last_seqno),
            (TAG_FLUSHED_SEQNO, self.flushed_seqno),
        ] {
            if let Some(v) = v {
                out.push(tag);
                out.extend_from_slice(&v.to_le_bytes());
            }
        }
        for (level, m) in &self.added {
            out.push(TAG_ADD);
            out.extend_from_slice(&level.to_le_bytes());
            for v in [
                m.id,
                m.size_bytes,
                m.entries,
                m.min_ts,
                m.max_ts,
                m.max_seqno,
                m.created_micros,
            ] {
                out.extend_from_slice(&v.to_le_bytes());
            }
            put_bytes(&mut out, &m.smallest);
            put_bytes(&mut out, &m.largest);
            put_bytes(&mut out, m.location.as_bytes());
        }
        for (level, id) in &self.deleted {
            out.push(TAG_DELETE);
            out.extend_from_slice(&level.to_le_bytes());
            out.extend_from_slice(&id.to_le_bytes());
        }
        out
    }

    /// Decodes an edit; `None` if malformed.
    pub fn decode(data: &[u8]) -> Option<VersionEdit> {
        let mut edit = VersionEdit::default();
        let mut pos = 0usize;
        let take = |pos: &mut usize, n: usize| -> Option<&[u8]> {
            let s = data.get(*pos..pos.checked_add(n)?)?;
            *pos += n;
            Some(s)
        };
        let u64_at = |pos: &mut usize| -> Option<u64> {
            Some(u64::from_le_bytes(take(pos, 8)?.try_into().ok()?))
        };
        let u32_at = |pos: &mut usize| -> Option<u32> {
            Some(u32::from_le_bytes(take(pos, 4)?.try_into().ok()?))
        };
        while pos < data.len() {
            let tag = *take(&mut pos, 1)?.first()?;
            match tag {
                TAG_LOG_NUMBER => edit.log_number = Some(u64_at(&mut pos)?),
                TAG_NEXT_FILE_ID => edit.next_file_id = Some(u64_at(&mut pos)?),
                TAG_LAST_SEQNO => edit.last_seqno = Some(u64_at(&mut pos)?),
                TAG_FLUSHED_SEQNO => edit.flushed_seqno = Some(u64_at(&mut pos)?),
                TAG_ADD => {
                    let level = u32_at(&mut pos)?;
                    let mut nums = [0u64; 7];
                    for n in &mut nums {
                        *n = u64_at(&mut pos)?;
                    }
                    let [id, size_bytes, entries, min_ts, max_ts, max_seqno, created_micros] = nums;
                    let len = u32_at(&mut pos)? as usize;
                    let smallest = take(&mut pos, len)?.to_vec();
                    let len = u32_at(&mut pos)? as usize;
                    let largest = take(&mut pos, len)?.to_vec();
                    let len = u32_at(&mut pos)? as usize;
                    let location = String::from_utf8(take(&mut pos, len)?.to_vec()).ok()?;
                    edit.added.push((
                        level,
                        TableMeta {
                            id,
                            size_bytes,
                            entries,
                            smallest,
                            largest,
                            min_ts,
                            max_ts,
                            max_seqno,
                            created_micros,
                            location,
                        },
                    ));
                }
                TAG_DELETE => {
                    let level = u32_at(&mut pos)?;
                    let id = u64_at(&mut pos)?;
                    edit.deleted.push((level, id));
                }
                _ => return None,
            }
        }
        Some(edit)
    }
}

/// Appends edits to the live manifest.
pub struct ManifestWriter {
    log: WalWriter,
}

impl ManifestWriter {
    /// Creates manifest `id` in `dir` holding `snapshot` (the whole current state), syncs it,
    /// and points `CURRENT` at it.
    pub fn create(fs: &Arc<dyn Fs>, dir: &Path, id: u64, snapshot: &VersionEdit) -> Result<Self> {
        let name = manifest_file_name(id);
        let path = dir.join(&name);
        let file = fs
            .create(&path)
            .map_err(|e| Error::io("creating", &path, e))?;
        let mut log = WalWriter::new(file, path);
        let mut framed = Vec::new();
        frame_record(&mut framed, &snapshot.encode());
        log.append_framed(&framed)?;
        log.sync()?;
        set_current(fs, dir, &name)?;
        Ok(Self { log })
    }

    /// Appends one edit and syncs it: once this returns, the edit survives a crash.
    pub fn append(&mut self, edit: &VersionEdit) -> Result<()> {
        let mut framed = Vec::new();
        frame_record(&mut framed, &edit.encode());
        self.log.append_framed(&framed)?;
        self.log.sync()
    }

    /// Bytes in the manifest.
    pub fn size_bytes(&self) -> u64 {
        self.log.len()
    }
}

fn set_current(fs: &Arc<dyn Fs>, dir: &Path, manifest_name: &str) -> Result<()> {
    let tmp = dir.join("CURRENT.tmp");
    let mut f = fs
        .create(&tmp)
        .map_err(|e| Error::io("creating", &tmp, e))?;
    f.append(format!("{manifest_name}\n").as_bytes())
        .map_err(|e| Error::io("writing", &tmp, e))?;
    f.sync_data().map_err(|e| Error::io("syncing", &tmp, e))?;
    drop(f);
    let current = dir.join("CURRENT");
    fs.rename(&tmp, &current)
        .map_err(|e| Error::io("renaming", &current, e))?;
    fs.sync_dir(dir)
        .map_err(|e| Error::io("syncing directory", dir, e))
}

/// Reads `CURRENT` and returns the live manifest's path, or `None` for a new database.
pub fn current_manifest(fs: &Arc<dyn Fs>, dir: &Path) -> Result<Option<PathBuf>> {
    let current = dir.join("CURRENT");
    if !fs.exists(&current) {
        return Ok(None);
    }
    let bytes = fs
        .read_all(&current)
        .map_err(|e| Error::io("reading", &current, e))?;
    let name = std::str::from_utf8(&bytes)
        .ok()
        .and_then(|s| s.strip_suffix('\n'))
        .filter(|s| s.starts_with("MANIFEST-") && !s.contains('/'))
        .ok_or_else(|| Error::corruption(&current, 0, "CURRENT does not name a manifest"))?;
    Ok(Some(dir.join(name)))
}

/// Reads every edit of a manifest.
pub fn read_manifest(fs: &Arc<dyn Fs>, path: &Path) -> Result<Vec<VersionEdit>> {
    let data = fs
        .read_all(path)
        .map_err(|e| Error::io("reading", path, e))?;
    let mut records = Records::new(&data, path);
    let mut edits = Vec::new();
    for (offset, payload) in records.by_ref() {
        let edit = VersionEdit::decode(payload)
            .ok_or_else(|| Error::corruption(path, offset, "malformed version edit"))?;
        edits.push(edit);
    }
    if let Some(drop) = records.dropped() {
        // A crash during an append leaves a record that runs past the end of the file. Any
        // other damage (a complete record with a bad checksum) is corruption.
        if drop.damage != crate::wal::Damage::Torn {
            return Err(Error::corruption(path, drop.offset, drop.reason.clone()));
        }
    }
    if edits.is_empty() {
        return Err(Error::corruption(path, 0, "manifest holds no edits"));
    }
    Ok(edits)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn meta(id: u64) -> TableMeta {
        TableMeta {
            id,
            size_bytes: 100,
            entries: 3,
            smallest: b"a0000000000000000".to_vec(),
            largest: b"z0000000000000000".to_vec(),
            min_ts: 1,
            max_ts: 9,
            max_seqno: 7,
            created_micros: 123,
            location: String::new(),
        }
    }

    #[test]
    fn edits_round_trip() {
        let edit = VersionEdit {
            log_number: Some(4),
            next_file_id: Some(10),
            last_seqno: Some(99),
            flushed_seqno: Some(42),
            added: vec![(0, meta(5)), (2, meta(6))],
            deleted: vec![(1, 3)],
        };
        assert_eq!(VersionEdit::decode(&edit.encode()), Some(edit.clone()));
        let enc = edit.encode();
        for cut in 0..enc.len() {
            // Every strict prefix is either a shorter valid edit or rejected; never a panic.
            let _ = VersionEdit::decode(&enc[..cut]);
        }
    }

    proptest! {
        #[test]
        fn garbage_edits_never_panic(data in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = VersionEdit::decode(&data);
        }
    }
}
