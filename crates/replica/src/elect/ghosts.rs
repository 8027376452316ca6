//! Ghosts: the content of each table a data node sent for coding, kept (a hard link in
//! `DIR/ghosts/`, or, once offloaded, a stub naming its cold-tier object) for as long as
//! a group's slot may name it — whatever compaction does to the table meanwhile.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use mosaic_env::RandomAccessFile;
use mosaic_lsm::{Error, Result};

use super::{Elect, GHOSTS_DIR};

impl Elect {
    pub(super) fn ghost_path(&self, id: u64) -> PathBuf {
        self.dir.join(GHOSTS_DIR).join(format!("{id:06}.sst"))
    }

    /// Keeps table `id`'s file (`file`, in the primary tree) as a ghost and returns its
    /// content: whatever compaction does to the table from now on, the bytes a group's
    /// slot will name stay here until the slot no longer names them. `None` when the
    /// table is already gone.
    pub fn pin(&self, id: u64, file: &Path) -> Result<Option<Vec<u8>>> {
        let dir = self.dir.join(GHOSTS_DIR);
        let ghost = self.ghost_path(id);
        if !self.fs.exists(&ghost) {
            if self.ghost_location(id)?.is_some() {
                return self.ghost(id);
            }
            self.fs
                .create_dir_all(&dir)
                .map_err(|e| Error::io("creating directory", &dir, e))?;
            match self.fs.hard_link(file, &ghost) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
                Err(e) => return Err(Error::io("linking", &ghost, e)),
            }
            self.fs
                .sync_dir(&dir)
                .map_err(|e| Error::io("syncing directory", &dir, e))?;
        }
        self.fs
            .read_all(&ghost)
            .map(Some)
            .map_err(|e| Error::io("reading", &ghost, e))
    }

    /// The content of ghost `id` (local, or offloaded), if kept.
    pub fn ghost(&self, id: u64) -> Result<Option<Vec<u8>>> {
        let Some((file, name)) = self.ghost_file(id)? else {
            return Ok(None);
        };
        let len =
            usize::try_from(file.len()).map_err(|_| Error::corruption(&name, 0, "too large"))?;
        let mut bytes = vec![0; len];
        file.read_exact_at(&mut bytes, 0)
            .map_err(|e| Error::io("reading", &name, e))?;
        Ok(Some(bytes))
    }

    /// Deletes the ghosts of tables that are neither live (`live`), coded, nor waiting
    /// for an answer: pinned by a round that did not send them, and replaced since.
    pub fn sweep_ghosts(&self, live: &std::collections::HashSet<u64>) -> Result<()> {
        let dir = self.dir.join(GHOSTS_DIR);
        if !self.fs.exists(&dir) {
            return Ok(());
        }
        let (coded, pending) = {
            let data = self.data.lock();
            (data.coded.clone(), data.pending.clone())
        };
        for name in self
            .fs
            .list(&dir)
            .map_err(|e| Error::io("listing", &dir, e))?
        {
            let Some(id) = name
                .strip_suffix(".sst")
                .or_else(|| name.strip_suffix(".cold"))
                .and_then(|s| s.parse::<u64>().ok())
            else {
                continue;
            };
            if !live.contains(&id) && !coded.contains_key(&id) && !pending.contains_key(&id) {
                self.remove_ghost(id)?;
            }
        }
        let gone: Vec<u64> = self
            .lineage
            .watched()
            .into_iter()
            .filter(|id| !live.contains(id) && !coded.contains_key(id) && !pending.contains_key(id))
            .collect();
        self.lineage.forget(&gone)
    }

    pub(super) fn ghost_stub_path(&self, id: u64) -> PathBuf {
        self.dir.join(GHOSTS_DIR).join(format!("{id:06}.cold"))
    }

    /// The cold-tier object holding ghost `id`'s content and its length, once offloaded.
    pub fn ghost_location(&self, id: u64) -> Result<Option<(String, u64)>> {
        crate::sealed::read_stub(&*self.fs, &self.ghost_stub_path(id))
    }

    /// Ghost `id`'s bytes as a file: the local link, or the cold-tier object its stub
    /// names; with a name for errors.
    pub(crate) fn ghost_file(
        &self,
        id: u64,
    ) -> Result<Option<(Arc<dyn RandomAccessFile>, PathBuf)>> {
        let ghost = self.ghost_path(id);
        if self.fs.exists(&ghost) {
            let file = self
                .fs
                .open_read(&ghost, false)
                .map_err(|e| Error::io("opening", &ghost, e))?;
            return Ok(Some((file, ghost)));
        }
        let Some((location, _)) = self.ghost_location(id)? else {
            return Ok(None);
        };
        let (cold, _) = self.cold.as_ref().ok_or_else(|| {
            Error::InvalidArgument(format!(
                "coded table {id} was offloaded to {location:?} but no cold tier is configured"
            ))
        })?;
        let file = cold
            .open(&location)
            .map_err(|e| Error::io("opening", &location, e))?;
        Ok(Some((file, PathBuf::from(location))))
    }

    /// Removes ghost `id`'s local link once a stub names the cold object holding the same
    /// bytes (the table was relocated there).
    pub fn drop_ghost_link(&self, id: u64) -> Result<()> {
        if self.ghost_location(id)?.is_none() {
            return Ok(());
        }
        let ghost = self.ghost_path(id);
        if self.fs.exists(&ghost) {
            self.fs
                .remove(&ghost)
                .map_err(|e| Error::io("removing", &ghost, e))?;
            let dir = self.dir.join(GHOSTS_DIR);
            self.fs
                .sync_dir(&dir)
                .map_err(|e| Error::io("syncing directory", &dir, e))?;
        }
        Ok(())
    }

    /// Deletes ghost `id` — its local link, or its stub and then the cold object (a
    /// failure to delete the object leaves it to the cold tier's sweep of unreferenced
    /// objects). Only for tables no longer live in the primary tree.
    pub(crate) fn remove_ghost(&self, id: u64) -> Result<()> {
        let ghost = self.ghost_path(id);
        if self.fs.exists(&ghost) {
            self.fs
                .remove(&ghost)
                .map_err(|e| Error::io("removing", &ghost, e))?;
        }
        let Some((location, _)) = self.ghost_location(id)? else {
            return Ok(());
        };
        let stub = self.ghost_stub_path(id);
        self.fs
            .remove(&stub)
            .map_err(|e| Error::io("removing", &stub, e))?;
        let dir = self.dir.join(GHOSTS_DIR);
        self.fs
            .sync_dir(&dir)
            .map_err(|e| Error::io("syncing directory", &dir, e))?;
        if let Some((cold, _)) = &self.cold {
            let _ = cold.remove(&location);
        }
        Ok(())
    }

    /// `(location, bytes)` of every offloaded ghost: cold-tier objects this table needs.
    pub fn ghost_locations(&self) -> Result<Vec<(String, u64)>> {
        let dir = self.dir.join(GHOSTS_DIR);
        if !self.fs.exists(&dir) {
            return Ok(Vec::new());
        }
        let mut out = Vec::new();
        for name in self
            .fs
            .list(&dir)
            .map_err(|e| Error::io("listing", &dir, e))?
        {
            let Some(id) = name
                .strip_suffix(".cold")
                .and_then(|s| s.parse::<u64>().ok())
            else {
                continue;
            };
            out.extend(self.ghost_location(id)?);
        }
        Ok(out)
    }
}
