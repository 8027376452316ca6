//! The parity shards a node holds for an `erasure-tiered` table, outside its LSM-trees
//! (ELECT §4.1.3), and the ECMeta of every coding group the node takes part in.
//!
//! ```text
//! DIR/parity/<group hex>-<position>.par   one parity shard: its epoch and its bytes
//! DIR/parity/<group hex>-<position>.old   the shard at the epoch before, until this node
//!                                         holds an ECMeta newer than that epoch
//! DIR/parity/<group hex>.ecm              the group's ECMeta (mosaic_erasure::EcMeta)
//! ```
//!
//! A parity shard changes only by a *delta* from one epoch of its group to the next (see
//! `docs/layouts.md`, "Erasure-tiered"): [`ParityStore::apply_delta`] applies it only to the
//! epoch it names, answers [`Applied::Already`] when the shard is at the target epoch (a
//! retried or duplicated message), and writes the new shard to a temporary file, syncs it
//! and renames it into place — so a crash at any point leaves the shard at the old epoch or
//! the new one, never half of each, and a delta is never XORed in twice. ECMeta files only
//! move forward in epoch the same way.
//!
//! The shard a delta replaces is kept as the `.old` file until this node records an ECMeta
//! of a later epoch than the old shard's: between a parity node's update and the leader's
//! commit, the committed epoch is the one degraded reads decode, and a leader that dies in
//! between (or is merely slow) must not leave the group with parity shards of two epochs
//! and no ECMeta for the newer one. Readers ask for the epoch they decode
//! ([`ParityStore::shard_at`], [`ParityStore::shard_range`]).
//!
//! Every file carries a crc32c; a damaged file is an error naming it, never wrong parity.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use mosaic_env::RandomAccessFile;
use mosaic_erasure::EcMeta;
use mosaic_lsm::{Error, Fs, Result, TableStore};
use parking_lot::Mutex;

/// The parity directory's name under a table's directory.
pub const PARITY_DIR: &str = "parity";

/// The first bytes of a parity file.
const MAGIC: &[u8; 4] = b"MPAR";
/// The parity file format's version.
const FORMAT: u8 = 1;
/// Bytes before a parity file's content: magic, format, epoch, position, length.
const HEADER: usize = 4 + 1 + 8 + 1 + 8;

pub use mosaic_erasure::GroupId;

/// One parity shard at one epoch of its group.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParityShard {
    /// The group epoch the bytes belong to.
    pub epoch: u64,
    /// The shard (the group's coded length).
    pub bytes: Vec<u8>,
}

/// What [`ParityStore::apply_delta`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Applied {
    /// The delta moved the shard to the target epoch.
    Now,
    /// The shard was already at the target epoch (the delta had been applied before).
    Already,
}

/// A node's parity shards and ECMetas of one table (see the module doc).
pub struct ParityStore {
    fs: Arc<dyn Fs>,
    dir: PathBuf,
    /// The cold tier shards are offloaded to, and the prefix of their locations there.
    cold: Option<(Arc<dyn TableStore>, String)>,
    /// One change at a time: a read-modify-write of a shard must not interleave with another.
    lock: Mutex<()>,
}

impl std::fmt::Debug for ParityStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ParityStore")
            .field("dir", &self.dir)
            .finish_non_exhaustive()
    }
}

fn hex(group: &GroupId) -> String {
    group.iter().map(|b| format!("{b:02x}")).collect()
}

/// Parses a group id from its 32 hex digits.
pub fn parse_group(s: &str) -> Option<GroupId> {
    parse_hex(s)
}

fn parse_hex(s: &str) -> Option<GroupId> {
    if s.len() != 32 || !s.is_ascii() {
        return None;
    }
    let mut out = [0u8; 16];
    for (i, b) in out.iter_mut().enumerate() {
        *b = u8::from_str_radix(s.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(out)
}

impl ParityStore {
    /// Opens (creating) the parity directory `dir`, removing temporary files a crash left.
    pub fn open(fs: Arc<dyn Fs>, dir: impl AsRef<Path>) -> Result<ParityStore> {
        let dir = dir.as_ref().to_path_buf();
        fs.create_dir_all(&dir)
            .map_err(|e| Error::io("creating directory", &dir, e))?;
        for name in fs.list(&dir).map_err(|e| Error::io("listing", &dir, e))? {
            if name.ends_with(".tmp") {
                let path = dir.join(&name);
                fs.remove(&path)
                    .map_err(|e| Error::io("removing", &path, e))?;
            }
        }
        let store = ParityStore {
            fs,
            dir,
            cold: None,
            lock: Mutex::new(()),
        };
        Ok(store)
    }

    /// Offloads to (and reads offloaded shards from) `cold`, naming objects under
    /// `prefix`. A shard both local and offloaded (a crash after an update brought it back
    /// but before its stub was removed) is local: the stub and object are removed here.
    pub fn with_cold_tier(mut self, cold: Arc<dyn TableStore>, prefix: String) -> Result<Self> {
        self.cold = Some((cold, prefix));
        for name in self.names()? {
            if let Some(stem) = name.strip_suffix(".cold") {
                if self.fs.exists(&self.dir.join(format!("{stem}.par"))) {
                    self.drop_stub(&self.dir.join(&name))?;
                }
            }
        }
        Ok(self)
    }

    fn stub_path(&self, group: &GroupId, position: u8) -> PathBuf {
        self.dir.join(format!("{}-{position}.cold", hex(group)))
    }

    /// `(location, bytes)` of an offload stub.
    fn stub(&self, path: &Path) -> Result<Option<(String, u64)>> {
        crate::sealed::read_stub(&*self.fs, path)
    }

    /// Removes an offload stub, then its object (an object left by a failure here is
    /// swept with the cold tier's unreferenced objects).
    fn drop_stub(&self, path: &Path) -> Result<()> {
        let stub = self.stub(path)?;
        self.fs
            .remove(path)
            .map_err(|e| Error::io("removing", path, e))?;
        self.fs
            .sync_dir(&self.dir)
            .map_err(|e| Error::io("syncing directory", &self.dir, e))?;
        if let (Some((location, _)), Some((cold, _))) = (stub, &self.cold) {
            let _ = cold.remove(&location);
        }
        Ok(())
    }

    /// Moves local parity shards to the cold tier, in group order, until at least
    /// `bytes` of parity are offloaded (counting what already is). Each move: the object
    /// is stored, then a stub naming it replaces the local file. Returns the bytes
    /// offloaded now.
    pub fn offload(&self, bytes: u64) -> Result<u64> {
        let Some((cold, prefix)) = &self.cold else {
            return Ok(0);
        };
        let _guard = self.lock.lock();
        let mut held = self.cold_bytes()?;
        let mut moved = 0;
        let mut names = self.names()?;
        names.sort();
        for name in names {
            if held >= bytes {
                break;
            }
            let Some(stem) = name.strip_suffix(".par") else {
                continue;
            };
            let path = self.dir.join(&name);
            let Some(file) = self.read(&path)? else {
                continue;
            };
            let location = format!("{prefix}/{stem}-{}.par", crc32c::crc32c(&file));
            cold.put(&location, &file)
                .map_err(|e| Error::io("offloading", &path, e))?;
            let stub = self.dir.join(format!("{stem}.cold"));
            mosaic_lsm::write_atomically(
                &*self.fs,
                &stub,
                &crate::sealed::stub(&location, file.len() as u64),
            )
            .map_err(|e| Error::io("writing", &stub, e))?;
            self.fs
                .remove(&path)
                .map_err(|e| Error::io("removing", &path, e))?;
            self.fs
                .sync_dir(&self.dir)
                .map_err(|e| Error::io("syncing directory", &self.dir, e))?;
            held += file.len() as u64;
            moved += file.len() as u64;
        }
        Ok(moved)
    }

    /// Bytes of parity offloaded to the cold tier.
    pub fn cold_bytes(&self) -> Result<u64> {
        Ok(self.stubs()?.iter().map(|(_, len)| len).sum())
    }

    /// The cold-tier objects the offloaded shards live in.
    pub fn cold_locations(&self) -> Result<Vec<String>> {
        Ok(self.stubs()?.into_iter().map(|(l, _)| l).collect())
    }

    /// `(location, bytes)` of every offload stub.
    fn stubs(&self) -> Result<Vec<(String, u64)>> {
        let mut out = Vec::new();
        for name in self.names()? {
            if name.ends_with(".cold") {
                out.extend(self.stub(&self.dir.join(&name))?);
            }
        }
        Ok(out)
    }

    fn shard_path(&self, group: &GroupId, position: u8) -> PathBuf {
        self.dir.join(format!("{}-{position}.par", hex(group)))
    }

    fn old_path(&self, group: &GroupId, position: u8) -> PathBuf {
        self.dir.join(format!("{}-{position}.old", hex(group)))
    }

    fn meta_path(&self, group: &GroupId) -> PathBuf {
        self.dir.join(format!("{}.ecm", hex(group)))
    }

    /// Parity shard `position` of `group` at its newest epoch, or `None` if this node
    /// holds none; an offloaded shard is fetched from the cold tier.
    pub fn shard(&self, group: &GroupId, position: u8) -> Result<Option<ParityShard>> {
        self.shard_at(group, position, None)
    }

    /// Parity shard `position` of `group` at `epoch` when this node still holds that
    /// epoch (its newest, or the one before it kept as `.old`), else at its newest; `None`
    /// when it holds none.
    pub fn shard_at(
        &self,
        group: &GroupId,
        position: u8,
        epoch: Option<u64>,
    ) -> Result<Option<ParityShard>> {
        let Some((file, name, _)) = self.open_at(group, position, epoch)? else {
            return Ok(None);
        };
        let len = usize::try_from(file.len())
            .map_err(|_| Error::corruption(&name, 0, "length too large"))?;
        let mut bytes = vec![0; len];
        file.read_exact_at(&mut bytes, 0)
            .map_err(|e| Error::io("reading", &name, e))?;
        decode_shard(&bytes, position)
            .map(Some)
            .map_err(|why| Error::corruption(&name, 0, why))
    }

    /// Bytes `offset..offset + len` of parity shard `position` of `group` (cut short at
    /// the shard's end) at `epoch` as [`ParityStore::shard_at`] picks it, with its epoch
    /// and whole length; `None` when this node does not hold it. Reads only the header and
    /// those bytes (of the cold tier's object when the shard was offloaded): the file's
    /// checksum is not checked, the decoded blocks' are.
    pub fn shard_range(
        &self,
        group: &GroupId,
        position: u8,
        epoch: Option<u64>,
        (offset, len): (u64, u32),
    ) -> Result<Option<(u64, u64, Vec<u8>)>> {
        let Some((file, name, header)) = self.open_at(group, position, epoch)? else {
            return Ok(None);
        };
        let (epoch, size) = match header {
            Some(header) => header,
            None => read_header(&*file, &name, position)?,
        };
        let end = offset.saturating_add(u64::from(len)).min(size);
        let start = offset.min(end);
        if HEADER as u64 + size + 4 != file.len() {
            return Err(Error::corruption(
                &name,
                0,
                format!("parity file says {size} bytes, is {} long", file.len()),
            ));
        }
        let mut bytes = vec![0; (end - start) as usize];
        file.read_exact_at(&mut bytes, HEADER as u64 + start)
            .map_err(|e| Error::io("reading", &name, e))?;
        Ok(Some((epoch, size, bytes)))
    }

    /// The file of parity shard `position` of `group` at `epoch` — its newest (local, or
    /// the cold tier's object its stub names), or the `.old` one when that is at `epoch`
    /// and the newest is not — with a name for errors and its header's `(epoch, length)`
    /// when it was read (it is when an epoch is asked for). A `.old` file whose header
    /// does not read is passed over.
    #[allow(clippy::type_complexity)] // File, name, header.
    fn open_at(
        &self,
        group: &GroupId,
        position: u8,
        epoch: Option<u64>,
    ) -> Result<Option<(Arc<dyn RandomAccessFile>, PathBuf, Option<(u64, u64)>)>> {
        let newest = self.open_shard(group, position)?;
        let Some(want) = epoch else {
            return Ok(newest.map(|(file, name)| (file, name, None)));
        };
        let newest = match newest {
            Some((file, name)) => {
                let header = read_header(&*file, &name, position)?;
                if header.0 == want {
                    return Ok(Some((file, name, Some(header))));
                }
                Some((file, name, Some(header)))
            }
            None => None,
        };
        let old = self.old_path(group, position);
        if self.fs.exists(&old) {
            let kept = self
                .fs
                .open_read(&old, false)
                .map_err(|e| Error::io("opening", &old, e))?;
            if let Ok(old_header) = read_header(&*kept, &old, position) {
                if old_header.0 == want {
                    return Ok(Some((kept, old, Some(old_header))));
                }
            }
        }
        Ok(newest)
    }

    /// The file of parity shard `position` of `group` — local, or the cold tier's object
    /// its stub names — with a name for errors.
    fn open_shard(
        &self,
        group: &GroupId,
        position: u8,
    ) -> Result<Option<(Arc<dyn RandomAccessFile>, PathBuf)>> {
        let path = self.shard_path(group, position);
        if self.fs.exists(&path) {
            let file = self
                .fs
                .open_read(&path, false)
                .map_err(|e| Error::io("opening", &path, e))?;
            return Ok(Some((file, path)));
        }
        let stub = self.stub_path(group, position);
        let (Some((location, _)), Some((cold, _))) = (self.stub(&stub)?, &self.cold) else {
            return Ok(None);
        };
        let file = cold
            .open(&location)
            .map_err(|e| Error::io("opening", &location, e))?;
        Ok(Some((file, PathBuf::from(location))))
    }

    /// Moves parity shard `position` of `group` from epoch `from` to `to` by XORing in
    /// `delta` (growing the shard with zeros when `delta` is longer). A shard this node
    /// does not hold yet is the all-zero shard of epoch 0. Fails, changing nothing, when the
    /// shard is at neither `from` nor `to`.
    pub fn apply_delta(
        &self,
        group: &GroupId,
        position: u8,
        from: u64,
        to: u64,
        delta: &[u8],
    ) -> Result<Applied> {
        if to <= from {
            return Err(Error::InvalidArgument(format!(
                "a parity update must move the epoch forward, not {from} → {to}"
            )));
        }
        let _guard = self.lock.lock();
        let current = self.shard(group, position)?.unwrap_or(ParityShard {
            epoch: 0,
            bytes: Vec::new(),
        });
        if current.epoch == to {
            return Ok(Applied::Already);
        }
        if current.epoch != from {
            return Err(Error::InvalidArgument(format!(
                "parity {}-{position} is at epoch {}, not {from}: the update to {to} does not \
                 apply",
                hex(group),
                current.epoch
            )));
        }
        if current.epoch > 0 {
            // Kept until an ECMeta past `from` is recorded here (see the module doc).
            self.write_durably(
                &self.old_path(group, position),
                &encode_shard(from, position, &current.bytes),
            )?;
        }
        let mut bytes = current.bytes;
        if bytes.len() < delta.len() {
            bytes.resize(delta.len(), 0);
        }
        for (b, d) in bytes.iter_mut().zip(delta) {
            *b ^= d;
        }
        let file = encode_shard(to, position, &bytes);
        self.write_durably(&self.shard_path(group, position), &file)?;
        // An offloaded shard is local again (the next offload round may move it back).
        let stub = self.stub_path(group, position);
        if self.fs.exists(&stub) {
            self.drop_stub(&stub)?;
        }
        Ok(Applied::Now)
    }

    /// Puts back parity shard `position` of `group` at `epoch` (rebuilt from the group's
    /// other shards after this node lost it), unless the shard held is already at `epoch`
    /// or later. Returns whether it was written.
    pub fn restore(&self, group: &GroupId, position: u8, epoch: u64, bytes: &[u8]) -> Result<bool> {
        let _guard = self.lock.lock();
        if self
            .shard(group, position)?
            .is_some_and(|s| s.epoch >= epoch)
        {
            return Ok(false);
        }
        self.write_durably(
            &self.shard_path(group, position),
            &encode_shard(epoch, position, bytes),
        )?;
        let stub = self.stub_path(group, position);
        if self.fs.exists(&stub) {
            self.drop_stub(&stub)?;
        }
        Ok(true)
    }

    /// Records `meta` unless a meta of the same or a later epoch is already recorded (so
    /// a repeated or late message cannot move a group back), and drops the group's `.old`
    /// shards of epochs before it (and any whose header does not read: no read could use
    /// it). Returns whether it was written.
    pub fn record_meta(&self, meta: &EcMeta) -> Result<bool> {
        let _guard = self.lock.lock();
        if let Some(held) = self.meta(&meta.group)? {
            if held.epoch >= meta.epoch {
                return Ok(false);
            }
        }
        self.write_durably(&self.meta_path(&meta.group), &meta.encode())?;
        let prefix = hex(&meta.group);
        for name in self.names()? {
            let Some(position) = name
                .strip_prefix(&prefix)
                .and_then(|rest| rest.strip_prefix('-')?.strip_suffix(".old"))
                .and_then(|p| p.parse::<u8>().ok())
            else {
                continue;
            };
            let path = self.dir.join(&name);
            let file = self
                .fs
                .open_read(&path, false)
                .map_err(|e| Error::io("opening", &path, e))?;
            let kept =
                matches!(read_header(&*file, &path, position), Ok((e, _)) if e >= meta.epoch);
            if !kept {
                mosaic_lsm::remove_durably(&*self.fs, &path)
                    .map_err(|e| Error::io("removing", &path, e))?;
            }
        }
        Ok(true)
    }

    /// The recorded ECMeta of `group`.
    pub fn meta(&self, group: &GroupId) -> Result<Option<EcMeta>> {
        let path = self.meta_path(group);
        let Some(bytes) = self.read(&path)? else {
            return Ok(None);
        };
        EcMeta::decode(&bytes)
            .map(Some)
            .map_err(|e| Error::corruption(&path, 0, e.to_string()))
    }

    /// The groups with a recorded ECMeta.
    pub fn groups(&self) -> Result<Vec<GroupId>> {
        let mut out: Vec<GroupId> = self
            .names()?
            .iter()
            .filter_map(|name| parse_hex(name.strip_suffix(".ecm")?))
            .collect();
        out.sort_unstable();
        Ok(out)
    }

    /// Records `intent` (the leader's record of a slot change under way) durably, replacing
    /// any earlier intent of its group.
    pub fn record_intent(&self, intent: &FillIntent) -> Result<()> {
        self.write_durably(&self.intent_path(&intent.group), &intent.encode())
    }

    /// Every recorded intent, by group.
    pub fn intents(&self) -> Result<Vec<FillIntent>> {
        let mut out = Vec::new();
        for name in self.names()? {
            let Some(group) = name.strip_suffix(".fill").and_then(parse_hex) else {
                continue;
            };
            let path = self.intent_path(&group);
            if let Some(bytes) = self.read(&path)? {
                out.push(
                    FillIntent::decode(&bytes).map_err(|why| Error::corruption(&path, 0, why))?,
                );
            }
        }
        out.sort_by_key(|i| i.group);
        Ok(out)
    }

    /// Forgets `group`'s intent (after its change was committed).
    pub fn clear_intent(&self, group: &GroupId) -> Result<()> {
        let path = self.intent_path(group);
        mosaic_lsm::remove_durably(&*self.fs, &path).map_err(|e| Error::io("removing", &path, e))
    }

    /// Deletes everything held of `group`: its parity shards (local, or their stubs and
    /// cold-tier objects), its intent, and its ECMeta last — so a crash midway leaves the
    /// group listed by [`ParityStore::groups`] and the next call finishes. Returns whether
    /// anything was held.
    pub fn drop_group(&self, group: &GroupId) -> Result<bool> {
        let _guard = self.lock.lock();
        let prefix = hex(group);
        let mut held = false;
        for name in self.names()? {
            let Some(rest) = name.strip_prefix(&prefix) else {
                continue;
            };
            let path = self.dir.join(&name);
            if rest.starts_with('-') && rest.ends_with(".cold") {
                self.drop_stub(&path)?;
                held = true;
            } else if (rest.starts_with('-') && (rest.ends_with(".par") || rest.ends_with(".old")))
                || rest == ".fill"
            {
                mosaic_lsm::remove_durably(&*self.fs, &path)
                    .map_err(|e| Error::io("removing", &path, e))?;
                held = true;
            }
        }
        let meta = self.meta_path(group);
        if self.fs.exists(&meta) {
            mosaic_lsm::remove_durably(&*self.fs, &meta)
                .map_err(|e| Error::io("removing", &meta, e))?;
            held = true;
        }
        Ok(held)
    }

    fn intent_path(&self, group: &GroupId) -> PathBuf {
        self.dir.join(format!("{}.fill", hex(group)))
    }

    /// Bytes of parity held locally (every `.par` and `.old` file's size).
    pub fn parity_bytes(&self) -> Result<u64> {
        let mut total = 0;
        for name in self.names()? {
            if name.ends_with(".par") || name.ends_with(".old") {
                let path = self.dir.join(&name);
                total += self
                    .fs
                    .open_read(&path, false)
                    .map_err(|e| Error::io("opening", &path, e))?
                    .len();
            }
        }
        Ok(total)
    }

    /// The names in the parity directory.
    fn names(&self) -> Result<Vec<String>> {
        self.fs
            .list(&self.dir)
            .map_err(|e| Error::io("listing", &self.dir, e))
    }

    /// Writes `path` atomically and durably.
    fn write_durably(&self, path: &Path, bytes: &[u8]) -> Result<()> {
        mosaic_lsm::write_atomically(&*self.fs, path, bytes)
            .map_err(|e| Error::io("writing", path, e))
    }

    /// The bytes of `path`, or `None` when it does not exist.
    fn read(&self, path: &Path) -> Result<Option<Vec<u8>>> {
        crate::sealed::read_optional(&*self.fs, path)
    }
}

/// A leader's durable record of changing one slot of a group (filling it, or emptying it
/// when compaction replaced its table): kept from before the first parity update until the
/// group's next ECMeta is committed, so a leader that crashed in between finishes the
/// change after restarting (its deltas are recomputed from `old` and `content`; parity
/// nodes that already applied them say so).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FillIntent {
    /// The group.
    pub group: GroupId,
    /// The group as it was (epoch `from`), with the nodes of every position.
    pub base: EcMeta,
    /// The slot being changed.
    pub slot: u8,
    /// The slot's content before (empty: it was empty).
    pub old: Vec<u8>,
    /// The slot's content after (the data node's SSTable; empty: the slot is emptied).
    pub content: Vec<u8>,
}

impl FillIntent {
    fn encode(&self) -> Vec<u8> {
        let meta = self.base.encode();
        let mut out = Vec::with_capacity(meta.len() + self.content.len() + 32);
        out.extend_from_slice(&(meta.len() as u32).to_le_bytes());
        out.extend_from_slice(&meta);
        out.push(self.slot);
        out.extend_from_slice(&(self.old.len() as u64).to_le_bytes());
        out.extend_from_slice(&self.old);
        out.extend_from_slice(&self.content);
        let crc = crc32c::crc32c(&out);
        out.extend_from_slice(&crc.to_le_bytes());
        out
    }

    fn decode(file: &[u8]) -> std::result::Result<FillIntent, String> {
        let (body, crc) = file
            .split_last_chunk::<4>()
            .ok_or_else(|| format!("intent of {} bytes", file.len()))?;
        if crc32c::crc32c(body) != u32::from_le_bytes(*crc) {
            return Err("intent checksum mismatch".into());
        }
        let (len, rest) = body
            .split_first_chunk::<4>()
            .ok_or("intent without a header")?;
        let (meta, rest) = rest
            .split_at_checked(u32::from_le_bytes(*len) as usize)
            .ok_or("intent shorter than its ECMeta")?;
        let base = EcMeta::decode(meta).map_err(|e| e.to_string())?;
        let (&slot, rest) = rest.split_first().ok_or("intent without a slot")?;
        if slot >= base.k {
            return Err(format!(
                "intent for slot {slot} of a group of {} data shards",
                base.k
            ));
        }
        let (old_len, rest) = rest
            .split_first_chunk::<8>()
            .ok_or("intent without its old length")?;
        let old_len =
            usize::try_from(u64::from_le_bytes(*old_len)).map_err(|_| "old length too large")?;
        let (old, content) = rest
            .split_at_checked(old_len)
            .ok_or("intent shorter than its old content")?;
        Ok(FillIntent {
            group: base.group,
            base,
            slot,
            old: old.to_vec(),
            content: content.to_vec(),
        })
    }
}

fn encode_shard(epoch: u64, position: u8, bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER + bytes.len() + 4);
    out.extend_from_slice(MAGIC);
    out.push(FORMAT);
    out.extend_from_slice(&epoch.to_le_bytes());
    out.push(position);
    out.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
    out.extend_from_slice(bytes);
    let crc = crc32c::crc32c(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

/// The `(epoch, length)` a parity file's header gives.
fn read_header(file: &dyn RandomAccessFile, name: &Path, position: u8) -> Result<(u64, u64)> {
    let mut header = [0u8; HEADER];
    file.read_exact_at(&mut header, 0)
        .map_err(|e| Error::io("reading", name, e))?;
    parse_header(&header, position).map_err(|why| Error::corruption(name, 0, why))
}

fn parse_header(header: &[u8], position: u8) -> std::result::Result<(u64, u64), String> {
    let field = |range: std::ops::Range<usize>| header.get(range).unwrap_or_default();
    if field(0..4) != MAGIC || field(4..5) != [FORMAT] {
        return Err("not a parity file of a known format".into());
    }
    let epoch = u64::from_le_bytes(field(5..13).try_into().unwrap_or_default());
    if field(13..14) != [position] {
        return Err(format!("parity file of position {:?}", field(13..14)));
    }
    let len = u64::from_le_bytes(field(14..22).try_into().unwrap_or_default());
    Ok((epoch, len))
}

fn decode_shard(file: &[u8], position: u8) -> std::result::Result<ParityShard, String> {
    let (body, crc) = file
        .split_last_chunk::<4>()
        .ok_or_else(|| format!("parity file of {} bytes", file.len()))?;
    if crc32c::crc32c(body) != u32::from_le_bytes(*crc) {
        return Err("parity file checksum mismatch".into());
    }
    let (header, content) = body
        .split_at_checked(HEADER)
        .ok_or_else(|| format!("parity file of {} bytes", file.len()))?;
    let (epoch, len) = parse_header(header, position)?;
    if len != content.len() as u64 {
        return Err(format!(
            "parity file says {len} bytes, holds {}",
            content.len()
        ));
    }
    Ok(ParityShard {
        epoch,
        bytes: content.to_vec(),
    })
}

#[cfg(test)]
mod tests;
