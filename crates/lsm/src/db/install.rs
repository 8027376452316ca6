//! Version bookkeeping: allocating file ids, opening tables, and installing a version edit
//! — recorded in the manifest first, then made visible to readers in one critical section.
//!
//! This is the one place the manifest is appended to, so the rule "a change is durable in
//! the manifest before anyone sees it" lives in one function ([`Inner::install`]). A
//! manifest whose append failed is never appended to again: a new one holding the whole
//! state replaces it, and a failure that leaves the disk's state unknown poisons the engine.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::table::{TableReader, TieredFile};
use crate::version::{
    manifest_file_name, table_file_name, table_sidecar_name, ManifestWriter, TableHandle,
    TableMeta, Version, VersionEdit,
};

use super::{Inner, State};

impl Inner {
    /// Takes the next unused file id.
    pub(super) fn alloc_file_id(&self) -> u64 {
        let mut st = self.state.lock();
        let id = st.next_file_id;
        st.next_file_id += 1;
        id
    }

    /// Opens table `meta` for reading, from the local file or the configured table store.
    pub(super) fn open_table(&self, meta: TableMeta) -> Result<TableHandle> {
        let path = self.dir.join(table_file_name(meta.id));
        let mut store = None;
        let file = if meta.location.is_empty() {
            self.fs
                .open_read(&path, self.opts.direct_io)
                .map_err(|e| Error::io("opening", &path, e))?
        } else {
            let table_store = self.opts.table_store.clone().ok_or_else(|| {
                Error::InvalidArgument(format!(
                    "table {} lives at {:?} but no table store is configured",
                    meta.id, meta.location
                ))
            })?;
            let remote = table_store
                .open(&meta.location)
                .map_err(|e| Error::io("opening", &meta.location, e))?;
            store = Some(table_store);
            let sidecar = self.dir.join(table_sidecar_name(meta.id));
            if self.fs.exists(&sidecar) {
                let tail = self
                    .fs
                    .open_read(&sidecar, false)
                    .map_err(|e| Error::io("opening", &sidecar, e))?;
                let tail_start = meta.size_bytes.checked_sub(tail.len()).ok_or_else(|| {
                    Error::corruption(&sidecar, 0, "sidecar is larger than its table")
                })?;
                Arc::new(
                    TieredFile::new(remote, tail, tail_start)
                        .map_err(|e| Error::io("opening", &meta.location, e))?,
                )
            } else {
                // Relocated without a sidecar (before sidecars existed): all from the store.
                remote
            }
        };
        // The block cache may be the node's: keys must be unique across its partitions.
        let cache_id = (u64::from(self.pid) << 40) | (meta.id & ((1 << 40) - 1));
        let reader = TableReader::open(
            file,
            path.clone(),
            cache_id,
            self.cache.clone(),
            self.counters.clone(),
        )?;
        let handle = TableHandle::new(meta, Arc::new(reader), self.fs.clone(), path);
        Ok(match store {
            Some(store) => handle.with_store(store),
            None => handle,
        })
    }

    /// The whole current state as one edit (the first record of a new manifest).
    pub(super) fn snapshot_edit(&self) -> VersionEdit {
        let st = self.state.lock();
        let mut edit = VersionEdit {
            log_number: Some(st.log_number),
            next_file_id: Some(st.next_file_id),
            last_seqno: Some(self.visible_seqno.load(Ordering::SeqCst)),
            flushed_seqno: Some(st.flushed_seqno),
            ..VersionEdit::default()
        };
        add_all_tables(&mut edit, &st.version);
        edit
    }

    /// Records `edit` in the manifest, then makes it visible (with `also` applied to the
    /// state in the same critical section). Installs are serialised by the manifest lock,
    /// taken first.
    pub(super) fn install(
        &self,
        mut edit: VersionEdit,
        added: &[Arc<TableHandle>],
        also: impl FnOnce(&mut State),
    ) -> Result<()> {
        let mut manifest = self.manifest.lock();
        if !added.is_empty() {
            // The new tables' directory entries are durable before the edit naming them
            // is: after a power loss the manifest never names a file that is not there.
            if let Err(e) = self.fs.sync_dir(&self.dir) {
                let e = Error::io("syncing directory", &self.dir, e);
                if !e.is_no_space() {
                    self.poison(&e);
                }
                return Err(e);
            }
        }
        let new_version = {
            let st = self.state.lock();
            // Every table an edit deletes must still be where the edit's author saw it: an
            // edit built on a stale view (a relocation whose table a compaction removed
            // meanwhile, which would bring it back next to the compaction's outputs,
            // overlapping them; or a compaction whose inputs another edit took) is refused,
            // and its author discards its outputs.
            for (level, id) in &edit.deleted {
                let present = st
                    .version
                    .levels
                    .get(*level as usize)
                    .is_some_and(|tables| tables.iter().any(|t| t.meta().id == *id));
                if !present {
                    return Err(Error::InvalidArgument(format!(
                        "no table {id} at level {level} any more (compacted away)"
                    )));
                }
            }
            edit.next_file_id = Some(st.next_file_id);
            edit.last_seqno = Some(self.visible_seqno.load(Ordering::SeqCst));
            st.version.apply(&edit, added)?
        };
        let appended = match manifest.as_mut() {
            Some(w) => w.append(&edit),
            None => Err(Error::InvalidArgument("manifest must be rewritten".into())),
        };
        if let Err(e) = appended {
            // The manifest's tail is unknown now: never append to it again. Write a new one
            // holding the whole state (with this edit applied) instead.
            *manifest = None;
            if !(e.is_no_space() || matches!(e, Error::InvalidArgument(_))) {
                self.poison(&e);
                return Err(e);
            }
            let id = self.alloc_file_id();
            let mut snap = {
                let st = self.state.lock();
                VersionEdit {
                    log_number: Some(edit.log_number.unwrap_or(st.log_number)),
                    next_file_id: Some(st.next_file_id),
                    last_seqno: edit.last_seqno,
                    flushed_seqno: Some(edit.flushed_seqno.unwrap_or(st.flushed_seqno)),
                    ..VersionEdit::default()
                }
            };
            add_all_tables(&mut snap, &new_version);
            match ManifestWriter::create(&self.fs, &self.dir, id, &snap) {
                Ok(w) => *manifest = Some(w),
                Err(e2) => {
                    let _ = self.fs.remove(&self.dir.join(manifest_file_name(id)));
                    if !e2.is_no_space() {
                        self.poison(&e2);
                    }
                    return Err(e2);
                }
            }
            self.remove_old_manifests(id);
        }
        let mut st = self.state.lock();
        if let Some(n) = edit.log_number {
            st.log_number = n;
        }
        st.version = Arc::new(new_version);
        also(&mut st);
        st.sv = None;
        st.maybe_work = true;
        Ok(())
    }

    /// Deletes the files of a job whose manifest edit failed, unless the failure poisoned
    /// the engine: then the edit may have reached the manifest (a failed sync says nothing
    /// about what the file holds), so the files stay, and the next open keeps them if the
    /// manifest names them and removes them as orphans otherwise.
    pub(super) fn discard_outputs(&self, outputs: &[Arc<TableHandle>]) {
        if self.state.lock().poisoned.is_some() {
            return;
        }
        for h in outputs {
            h.mark_obsolete();
        }
    }

    /// Removes every manifest but `keep` (best effort: a leftover is removed at the next
    /// open).
    pub(super) fn remove_old_manifests(&self, keep: u64) {
        let keep = manifest_file_name(keep);
        if let Ok(names) = self.fs.list(&self.dir) {
            for n in names {
                if n.starts_with("MANIFEST-") && n != keep {
                    let _ = self.fs.remove(&self.dir.join(n));
                }
            }
        }
    }

    /// Refuses writes from now on (until reopen), remembering the first cause.
    pub(super) fn poison(&self, e: &Error) {
        let mut st = self.state.lock();
        if st.poisoned.is_none() {
            st.poisoned = Some(e.to_string());
        }
        drop(st);
        self.state_cv.notify_all();
    }

    /// Backs [`crate::Db::relocate_table`]: swaps table `id` for the same table whose data
    /// blocks are read from `location`, in one manifest edit. The table's metadata is first
    /// copied to a local sidecar (synced), so the relocated table opens without the store.
    pub(super) fn relocate_table(&self, id: u64, location: &str) -> Result<()> {
        if location.is_empty() {
            return Err(Error::InvalidArgument("location must not be empty".into()));
        }
        let found = {
            let st = self.state.lock();
            st.version
                .levels
                .iter()
                .enumerate()
                .find_map(|(level, tables)| {
                    tables
                        .iter()
                        .find(|t| t.meta().id == id)
                        .map(|t| (level, t.clone()))
                })
        };
        let (level, old) = found.ok_or_else(|| Error::InvalidArgument(format!("no table {id}")))?;
        self.relocate_found(level, &old, location)
    }

    /// [`Inner::relocate_table`] of `old`, found at `level` (a compaction may have removed it
    /// since: then nothing changes and the error says so).
    pub(super) fn relocate_found(
        &self,
        level: usize,
        old: &Arc<TableHandle>,
        location: &str,
    ) -> Result<()> {
        let id = old.meta().id;
        if !old.meta().location.is_empty() {
            return Err(Error::InvalidArgument(format!(
                "table {id} already lives at {:?}",
                old.meta().location
            )));
        }
        let reader = old.reader();
        let tail_len = usize::try_from(reader.size_bytes().saturating_sub(reader.data_end()))
            .map_err(|_| Error::InvalidArgument("table metadata too large".into()))?;
        let tail = reader.read_raw(reader.data_end(), tail_len)?;
        let sidecar = self.dir.join(table_sidecar_name(id));
        mosaic_env::write_atomically(&*self.fs, &sidecar, &tail)
            .map_err(|e| Error::io("writing", &sidecar, e))?;
        let mut meta = old.meta().clone();
        meta.location = location.to_owned();
        let handle = Arc::new(self.open_table(meta.clone())?);
        let edit = VersionEdit {
            deleted: vec![(level as u32, id)],
            added: vec![(level as u32, meta)],
            ..VersionEdit::default()
        };
        if let Err(e) = self.install(edit, &[handle], |_| {}) {
            // Compacted away meanwhile (or the edit failed): the sidecar serves nothing.
            let _ = self.fs.remove(&sidecar);
            return Err(e);
        }
        old.mark_obsolete();
        Ok(())
    }
}

/// Adds every table of `version` to `edit`, level by level.
fn add_all_tables(edit: &mut VersionEdit, version: &Version) {
    for (level, tables) in version.levels.iter().enumerate() {
        for t in tables {
            edit.added.push((level as u32, t.meta().clone()));
        }
    }
}
