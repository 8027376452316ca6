//! Where the rows of a coded table went (ELECT §4.1.4, secondary removal): for each table
//! of the primary tree the data node watches, the set of live tables that hold its rows.
//!
//! Once a coded table's key list reached its secondaries, they drop its rows; its group's
//! slot is then the rows' only redundancy. When compaction replaces the table, its rows
//! move to the compaction's outputs, which may land in any level, and the slot may be
//! emptied only when every table now holding them is coded in turn. The primary tree's
//! [`CompactionListener`] ([`LineageListener`]) follows every compaction: a watched table's
//! holders that a compaction consumed are replaced by what it wrote.
//!
//! ```text
//! DIR/LINEAGE   watched table id, its key range, its holders; crc-checked, rewritten whole
//! ```
//!
//! A watched table is always live or replaced by holders the listener saw, except after a
//! crash between a compaction's install and the listener's save (or when a table is
//! watched only after compaction replaced it): then its holders are taken conservatively as
//! every table overlapping its key range, which can only make the slot wait longer.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use mosaic_lsm::{CompactionEvent, CompactionListener, Error, Fs, LevelInfo, Result};
use parking_lot::Mutex;

use crate::elect::KeyRange;
use crate::sealed::{hex, seal, unhex, unseal};

/// The lineage file in a table directory.
pub const LINEAGE_FILE: &str = "LINEAGE";
const HEADER: &str = "mosaic-lineage 1";

/// One watched table: its key range and the live tables holding its rows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Heirs {
    /// The watched table's smallest and largest key.
    pub range: KeyRange,
    /// Tables of the primary tree that hold (some of) its rows: itself while it is live.
    pub holders: BTreeSet<u64>,
}

/// The watched tables of one primary tree (see the module doc).
pub struct Lineage {
    fs: Arc<dyn Fs>,
    path: PathBuf,
    watched: Mutex<BTreeMap<u64, Heirs>>,
}

impl std::fmt::Debug for Lineage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lineage")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

/// Tables of `levels` whose keys overlap `range`: every table rows of `range` may have
/// moved into (level 0 included: full-node recovery writes restored rows back through
/// the memtable).
fn overlapping(levels: &[LevelInfo], range: &KeyRange) -> BTreeSet<u64> {
    let (lo, hi) = range;
    levels
        .iter()
        .flat_map(|l| &l.tables)
        .filter(|t| t.smallest_key.as_slice() <= hi.as_slice() && t.largest_key >= *lo)
        .map(|t| t.id)
        .collect()
}

fn live_ids(levels: &[LevelInfo]) -> HashSet<u64> {
    levels
        .iter()
        .flat_map(|l| &l.tables)
        .map(|t| t.id)
        .collect()
}

impl Lineage {
    /// Opens the lineage of the table directory `dir`.
    pub fn open(fs: Arc<dyn Fs>, dir: &Path) -> Result<Lineage> {
        let path = dir.join(LINEAGE_FILE);
        let watched = if fs.exists(&path) {
            let bytes = fs
                .read_all(&path)
                .map_err(|e| Error::io("reading", &path, e))?;
            decode(&bytes).map_err(|why| Error::corruption(&path, 0, why))?
        } else {
            BTreeMap::new()
        };
        Ok(Lineage {
            fs,
            path,
            watched: Mutex::new(watched),
        })
    }

    fn save(&self, watched: &BTreeMap<u64, Heirs>) -> Result<()> {
        mosaic_lsm::write_atomically(&*self.fs, &self.path, &encode(watched))
            .map_err(|e| Error::io("writing", &self.path, e))
    }

    /// Starts following table `id` (keys `range`); `levels` reads the primary tree's
    /// current levels. A table still live holds its own rows; one already replaced (its
    /// compaction went by unseen) is taken to be held by every table overlapping `range`.
    pub fn watch(
        &self,
        id: u64,
        range: KeyRange,
        levels: impl FnOnce() -> Vec<LevelInfo>,
    ) -> Result<()> {
        let mut watched = self.watched.lock();
        if watched.contains_key(&id) {
            return Ok(());
        }
        // Read under the lock: a compaction installed after this read reports to the
        // listener after it, which waits for this entry.
        let levels = levels();
        let holders = if live_ids(&levels).contains(&id) {
            BTreeSet::from([id])
        } else {
            overlapping(&levels, &range)
        };
        let mut next = watched.clone();
        next.insert(id, Heirs { range, holders });
        self.save(&next)?;
        *watched = next;
        Ok(())
    }

    /// After a restart: holders no longer live were consumed by a compaction whose report
    /// may have been lost; they are replaced by every table overlapping the watched range.
    pub fn recover(&self, levels: impl FnOnce() -> Vec<LevelInfo>) -> Result<()> {
        let mut watched = self.watched.lock();
        let levels = levels();
        let live = live_ids(&levels);
        let mut next = watched.clone();
        for heirs in next.values_mut() {
            if heirs.holders.iter().any(|h| !live.contains(h)) {
                heirs.holders.retain(|h| live.contains(h));
                heirs.holders.extend(overlapping(&levels, &heirs.range));
            }
        }
        if next != *watched {
            self.save(&next)?;
            *watched = next;
        }
        Ok(())
    }

    /// A compaction replaced `inputs` by `outputs`: every watched table held by an input
    /// is now held by the outputs (those outside its range are dropped by the reader).
    pub fn compacted(&self, inputs: &[u64], outputs: &[u64]) -> Result<()> {
        let mut watched = self.watched.lock();
        let consumed = |h: &Heirs| inputs.iter().any(|i| h.holders.contains(i));
        if !watched.values().any(consumed) {
            return Ok(());
        }
        let mut next = watched.clone();
        for heirs in next.values_mut().filter(|h| consumed(h)) {
            for i in inputs {
                heirs.holders.remove(i);
            }
            heirs.holders.extend(outputs.iter().copied());
        }
        // Kept in memory even when the save fails: a restart then recovers conservatively.
        let saved = self.save(&next);
        *watched = next;
        saved
    }

    /// Stops following `ids`.
    pub fn forget(&self, ids: &[u64]) -> Result<()> {
        let mut watched = self.watched.lock();
        if !ids.iter().any(|id| watched.contains_key(id)) {
            return Ok(());
        }
        let mut next = watched.clone();
        for id in ids {
            next.remove(id);
        }
        self.save(&next)?;
        *watched = next;
        Ok(())
    }

    /// The tables holding watched table `id`'s rows, if it is watched.
    pub fn heirs(&self, id: u64) -> Option<Heirs> {
        self.watched.lock().get(&id).cloned()
    }

    /// Ids of the watched tables.
    pub fn watched(&self) -> Vec<u64> {
        self.watched.lock().keys().copied().collect()
    }
}

/// The primary tree's compaction listener: feeds [`Lineage::compacted`], then passes every
/// report on to the listener the engine was configured with.
pub struct LineageListener {
    lineage: Arc<Lineage>,
    next: Option<Arc<dyn CompactionListener>>,
}

impl LineageListener {
    /// A listener updating `lineage` and then telling `next`.
    pub fn new(lineage: Arc<Lineage>, next: Option<Arc<dyn CompactionListener>>) -> Self {
        LineageListener { lineage, next }
    }
}

impl CompactionListener for LineageListener {
    fn on_compaction(&self, event: &CompactionEvent) {
        if !event.trivial_move {
            if let Err(e) = self.lineage.compacted(&event.inputs, &event.outputs) {
                // The engine gives a listener no way to fail; the in-memory lineage is
                // current and a restart recovers conservatively from what was saved.
                eprintln!(
                    "mosaic: saving the lineage of coded tables in {} failed: {e}",
                    self.lineage.path.display()
                );
            }
        }
        if let Some(next) = &self.next {
            next.on_compaction(event);
        }
    }

    fn on_background_error(&self, dir: &Path, job: &str, error: &Error) {
        if let Some(next) = &self.next {
            next.on_background_error(dir, job, error);
        }
    }
}

fn encode(watched: &BTreeMap<u64, Heirs>) -> Vec<u8> {
    let mut text = format!("{HEADER}\n");
    for (id, h) in watched {
        let holders: Vec<String> = h.holders.iter().map(u64::to_string).collect();
        let holders = if holders.is_empty() {
            "-".to_owned()
        } else {
            holders.join(",")
        };
        let (lo, hi) = &h.range;
        text.push_str(&format!("{id} {} {} {holders}\n", hex(lo), hex(hi)));
    }
    seal(text)
}

fn decode(bytes: &[u8]) -> std::result::Result<BTreeMap<u64, Heirs>, String> {
    let body = unseal(bytes, HEADER)?;
    let mut out = BTreeMap::new();
    for line in body.lines() {
        let parse = || -> Option<(u64, Heirs)> {
            let [id, lo, hi, holders] = line.split(' ').collect::<Vec<_>>()[..] else {
                return None;
            };
            let holders = if holders == "-" {
                BTreeSet::new()
            } else {
                holders
                    .split(',')
                    .map(|h| h.parse().ok())
                    .collect::<Option<_>>()?
            };
            let range = (unhex(lo)?, unhex(hi)?);
            Some((id.parse().ok()?, Heirs { range, holders }))
        };
        let (id, heirs) = parse().ok_or_else(|| format!("bad line {line:?}"))?;
        out.insert(id, heirs);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use mosaic_lsm::TableInfo;

    fn table(id: u64, lo: &[u8], hi: &[u8]) -> TableInfo {
        TableInfo {
            id,
            size_bytes: 1,
            entries: 1,
            smallest_key: lo.to_vec(),
            largest_key: hi.to_vec(),
            min_ts: 0,
            max_ts: 0,
            created_micros: 0,
            reads: 0,
            location: String::new(),
            local_bytes: 1,
        }
    }

    fn levels(tables: &[(usize, TableInfo)]) -> Vec<LevelInfo> {
        (0..4)
            .map(|level| LevelInfo {
                level,
                tables: tables
                    .iter()
                    .filter(|(l, _)| *l == level)
                    .map(|(_, t)| t.clone())
                    .collect(),
            })
            .collect()
    }

    fn open(dir: &Path) -> Lineage {
        let fs: Arc<dyn Fs> = Arc::new(mosaic_lsm::RealFs);
        Lineage::open(fs, dir).expect("open")
    }

    fn range(lo: &[u8], hi: &[u8]) -> KeyRange {
        (lo.to_vec(), hi.to_vec())
    }

    #[test]
    fn holders_follow_compactions_into_any_level_and_survive_reopen() {
        let dir = tempfile::tempdir().expect("tempdir");
        let lineage = open(dir.path());
        let now = levels(&[(3, table(7, b"c", b"m"))]);
        lineage
            .watch(7, range(b"c", b"m"), || now.clone())
            .expect("watch");
        assert_eq!(
            lineage.heirs(7).map(|h| h.holders),
            Some(BTreeSet::from([7]))
        );
        // A compaction from level 2 into level 3 replaced table 7 (and 5) by 9 and 10;
        // one unrelated to the watched rows changes nothing.
        lineage.compacted(&[5, 7], &[9, 10]).expect("compacted");
        lineage.compacted(&[1, 2], &[3]).expect("compacted");
        assert_eq!(
            lineage.heirs(7).map(|h| h.holders),
            Some(BTreeSet::from([9, 10]))
        );
        lineage.compacted(&[10], &[11, 12]).expect("compacted");
        drop(lineage);
        let lineage = open(dir.path());
        assert_eq!(
            lineage.heirs(7).map(|h| h.holders),
            Some(BTreeSet::from([9, 11, 12]))
        );
        lineage.forget(&[7]).expect("forget");
        assert_eq!(lineage.heirs(7), None);
        assert!(open(dir.path()).watched().is_empty());
    }

    #[test]
    fn a_lost_report_or_a_late_watch_takes_every_overlapping_table() {
        let dir = tempfile::tempdir().expect("tempdir");
        let lineage = open(dir.path());
        let before = levels(&[(3, table(7, b"c", b"m")), (3, table(8, b"n", b"z"))]);
        lineage
            .watch(7, range(b"c", b"m"), || before.clone())
            .expect("watch");
        // Table 7 was compacted (with level 2's table 4) into 20 and 21 at level 2, but the
        // report never arrived: after the restart every table over c..m counts.
        let after = levels(&[
            (0, table(30, b"a", b"z")),
            (2, table(20, b"a", b"f")),
            (2, table(21, b"g", b"k")),
            (3, table(8, b"n", b"z")),
        ]);
        lineage.recover(|| after.clone()).expect("recover");
        assert_eq!(
            lineage.heirs(7).map(|h| h.holders),
            Some(BTreeSet::from([20, 21, 30]))
        );
        // Watched only after it was replaced: the same conservative answer.
        lineage
            .watch(6, range(b"h", b"p"), || after.clone())
            .expect("watch");
        assert_eq!(
            lineage.heirs(6).map(|h| h.holders),
            Some(BTreeSet::from([21, 8, 30]))
        );
    }

    #[test]
    fn corruption_is_reported() {
        let dir = tempfile::tempdir().expect("tempdir");
        let lineage = open(dir.path());
        let now = levels(&[(1, table(7, b"", b"m"))]);
        lineage
            .watch(7, range(b"", b"m"), || now.clone())
            .expect("watch");
        drop(lineage);
        let path = dir.path().join(LINEAGE_FILE);
        let mut bytes = std::fs::read(&path).expect("read");
        let at = bytes.len() / 2;
        bytes[at] ^= 1;
        std::fs::write(&path, bytes).expect("write");
        let fs: Arc<dyn Fs> = Arc::new(mosaic_lsm::RealFs);
        assert!(Lineage::open(fs, dir.path()).is_err());
    }
}
