//! ELECT's Case 3 (§4.3): when coding the whole last level and offloading all of its
//! parity still leaves the hot tier above `1 − α` of full replication, coded data tables
//! move to the cold tier, coldest first.
//!
//! One object serves two readers: the primary tree (the table is relocated there, its
//! metadata kept local in a sidecar, so a read fetches only the blocks it needs) and the
//! table's ghost (a stub naming the object replaces the local link), so the content a
//! group's slot names stays readable — for degraded reads, full-node recovery and
//! emptying the slot — after compaction replaced the table. The trees never delete such
//! an object ([`GhostAwareStore`]); removing the ghost does.
//!
//! The steps, each durable before the next, so a crash anywhere leaves the bytes readable:
//! the object is stored; the stub is written (the local link still wins while both
//! exist); the table is relocated (one manifest edit); the local link goes
//! ([`Elect::drop_ghost_link`], repeated by the next round if a crash came first).

use std::path::Path;
use std::sync::Arc;

use mosaic_env::RandomAccessFile;
use mosaic_lsm::{Error, Result, TableStore};

use super::{Elect, GHOSTS_DIR};

/// The prefix of a table directory's cold-tier objects: its keyspace and table (the
/// directory's last two components).
pub fn cold_prefix(dir: &Path) -> String {
    let name = |p: Option<&Path>| {
        p.and_then(Path::file_name)
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    };
    format!("{}/{}", name(dir.parent()), name(Some(dir)))
}

/// The cold tier as an `erasure-tiered` table's trees see it: objects of offloaded coded
/// data are never removed by a tree (compaction replacing a relocated table would), since
/// the table's ghost may still name them; the ghost's removal deletes them.
pub struct GhostAwareStore {
    inner: Arc<dyn TableStore>,
    keep: String,
}

impl GhostAwareStore {
    /// `inner` for the table directory `dir`.
    pub fn new(inner: Arc<dyn TableStore>, dir: &Path) -> GhostAwareStore {
        GhostAwareStore {
            inner,
            keep: format!("{}/{GHOSTS_DIR}/", cold_prefix(dir)),
        }
    }
}

impl TableStore for GhostAwareStore {
    fn open(&self, location: &str) -> std::io::Result<Arc<dyn RandomAccessFile>> {
        self.inner.open(location)
    }

    fn put(&self, location: &str, bytes: &[u8]) -> std::io::Result<()> {
        self.inner.put(location, bytes)
    }

    fn remove(&self, location: &str) -> std::io::Result<()> {
        if location.starts_with(&self.keep) {
            return Ok(());
        }
        self.inner.remove(location)
    }
}

impl Elect {
    /// Stores ghost `id` (a coded table's content, local) in the cold tier and writes the
    /// stub naming it; the local link stays until [`Elect::drop_ghost_link`]. Returns the
    /// object's location (the table is to be relocated there); `None` without a cold tier
    /// or a ghost.
    pub fn offload_ghost(&self, id: u64) -> Result<Option<String>> {
        let Some((cold, prefix)) = &self.cold else {
            return Ok(None);
        };
        if let Some((location, _)) = self.ghost_location(id)? {
            return Ok(Some(location));
        }
        let ghost = self.ghost_path(id);
        if !self.fs.exists(&ghost) {
            return Ok(None);
        }
        let bytes = self
            .fs
            .read_all(&ghost)
            .map_err(|e| Error::io("reading", &ghost, e))?;
        let location = format!("{prefix}/{id:06}-{:08x}.sst", crc32c::crc32c(&bytes));
        cold.put(&location, &bytes)
            .map_err(|e| Error::io("offloading", &ghost, e))?;
        let stub = self.ghost_stub_path(id);
        mosaic_lsm::write_atomically(
            &*self.fs,
            &stub,
            &crate::sealed::stub(&location, bytes.len() as u64),
        )
        .map_err(|e| Error::io("writing", &stub, e))?;
        Ok(Some(location))
    }

    /// Moves coded tables of the primary tree's last level (`levels` is the tree's
    /// current shape) whose key lists every secondary acknowledged to the cold tier,
    /// coldest first, until `want` bytes of that level live there (counting tables moved
    /// before); first finishes moves a crash interrupted. Returns the bytes moved now.
    pub fn offload_coded(
        &self,
        primary: &mosaic_lsm::Db,
        levels: &[mosaic_lsm::LevelInfo],
        want: u64,
        now_micros: u64,
    ) -> Result<u64> {
        if self.cold.is_none() {
            return Ok(0);
        }
        let local: std::collections::HashSet<u64> = levels
            .iter()
            .flat_map(|l| &l.tables)
            .filter(|t| t.location.is_empty())
            .map(|t| t.id)
            .collect();
        let coded = self.coded();
        for id in coded.keys().filter(|id| !local.contains(id)) {
            self.drop_ghost_link(*id)?;
        }
        let Some(last) = crate::store::last_level(levels) else {
            return Ok(0);
        };
        let held: u64 = last
            .tables
            .iter()
            .filter(|t| !t.location.is_empty())
            .map(|t| t.size_bytes)
            .sum();
        if held >= want {
            return Ok(0);
        }
        let listed = self.listed();
        let candidates = self.candidates(last, now_micros, |t| {
            t.location.is_empty()
                && coded.contains_key(&t.id)
                && listed.get(&t.id).is_some_and(|l| l.acked)
        });
        let mut moved = 0;
        for c in mosaic_erasure::hotness::take_coldest(candidates, want - held) {
            let Some(location) = self.offload_ghost(c.id)? else {
                continue;
            };
            match primary.relocate_table(c.id, &location) {
                Ok(()) => {}
                // Compacted away since the listing: its ghost keeps the object.
                Err(Error::InvalidArgument(_))
                    if !primary
                        .levels()
                        .iter()
                        .any(|l| l.tables.iter().any(|t| t.id == c.id)) =>
                {
                    continue
                }
                Err(e) => return Err(e),
            }
            self.drop_ghost_link(c.id)?;
            moved += c.bytes;
        }
        Ok(moved)
    }
}
