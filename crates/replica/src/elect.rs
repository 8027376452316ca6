//! The `erasure-tiered` layout's coding state on one node (ELECT §4.1): what this node
//! does as a *data node* (which of its primary tree's tables are coded, in which group and
//! slot; the sequence number Q of Eq. (1)) and as a *parity node* (parity shards, ECMetas
//! and a leader's intents, in [`ParityStore`]).
//!
//! ```text
//! DIR/CODED     the data node's state: Q, and table id → (group, slot, epoch); crc-checked
//! DIR/parity/   ParityStore: parity shards, ECMetas, intents
//! DIR/covered/  Covered: key lists of other nodes' coded tables (secondary removal)
//! DIR/LINEAGE   Lineage: which tables hold the rows of this node's coded tables
//! ```
//!
//! A slot change follows `docs/layouts.md` ("Erasure-tiered"): the leader records a
//! [`FillIntent`] before any parity changes ([`Elect::prepare_fill`]), every parity node
//! applies its epoch-guarded delta ([`Elect::apply_parity`]), and only then the leader
//! commits the group's next ECMeta ([`Elect::commit_fill`]) and answers the data node, which
//! records the table as coded ([`Elect::mark_coded`]).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use mosaic_erasure::meta::ShardMeta;
use mosaic_erasure::placement::Group;
use mosaic_erasure::{Codec, EcMeta, Fill};
use mosaic_lsm::{Error, Fs, Result};
use mosaic_types::HostId;
use parking_lot::Mutex;

use crate::parity::{Applied, FillIntent, GroupId, ParityStore, PARITY_DIR};
use state::{decode_state, encode_state};

mod dissolve;
mod ghosts;
mod hotness;
mod offload;
mod state;

pub use offload::{cold_prefix, GhostAwareStore};

/// The data node's state file.
pub const CODED_FILE: &str = "CODED";
/// Where a data node keeps the content of tables it sent for coding (hard links: no
/// copy while the table is live), until no group's slot names them.
pub const GHOSTS_DIR: &str = "ghosts";

/// The half-life of a table's read count when ELECT picks the coldest tables (§4.2).
pub const HOTNESS_HALF_LIFE_MICROS: u64 = 10 * 60 * 1_000_000;

/// Ids from here up name tables rebuilt by full-node recovery: content kept only as a
/// ghost (no engine assigns ids this large).
pub const RESTORED_ID_BASE: u64 = 1 << 48;

/// One table of the primary tree that is a data shard of a coding group.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CodedTable {
    /// The group.
    pub group: GroupId,
    /// Its slot (position `0..k`).
    pub slot: u8,
    /// The group epoch that made it a member.
    pub epoch: u64,
    /// Its size in bytes.
    pub bytes: u64,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct DataState {
    /// ELECT's Q: tables this node has sent for coding.
    seq: u64,
    coded: BTreeMap<u64, CodedTable>,
    /// Tables sent for coding without a committed answer yet: `(slot, leader)`. They are
    /// sent again (from their ghosts) until answered, so a leader's half-done change is
    /// always finished and a group never names a table its node does not know it gave.
    pending: BTreeMap<u64, (u8, HostId)>,
    /// Coded tables whose key lists were sent (so secondaries may have dropped their
    /// rows), with the table's smallest and largest key and whether every secondary
    /// acknowledged its list: such a table's slot is emptied only once tables coded after
    /// it cover its keys.
    listed: BTreeMap<u64, Listing>,
}

/// A coded table whose key list was sent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Listing {
    /// The table's smallest and largest key.
    pub range: KeyRange,
    /// Whether every secondary acknowledged the list.
    pub acked: bool,
}

/// A table's smallest and largest key.
pub type KeyRange = (Vec<u8>, Vec<u8>);

/// A node's coding state of one `erasure-tiered` table (see the module doc).
pub struct Elect {
    fs: Arc<dyn Fs>,
    dir: PathBuf,
    parity: ParityStore,
    covered: Arc<crate::covered::Covered>,
    lineage: Arc<crate::lineage::Lineage>,
    decoded: crate::degraded::DecodedTables,
    data: Mutex<DataState>,
    /// Each primary-tree table's decayed read count (ELECT §4.2), from the engine's
    /// cumulative counts: `(reads counted so far, the decayed count)`. In memory: a
    /// restart starts every table cold again, as the engine's counts do.
    hotness: Mutex<std::collections::HashMap<u64, (u64, mosaic_erasure::hotness::DecayingCount)>>,
    /// Serializes the leader's slot changes (one group epoch at a time).
    leading: Mutex<()>,
    /// The cold tier coded data is offloaded to (ELECT's Case 3), with the prefix of its
    /// objects' names.
    cold: Option<(Arc<dyn mosaic_lsm::TableStore>, String)>,
}

impl std::fmt::Debug for Elect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Elect")
            .field("dir", &self.dir)
            .finish_non_exhaustive()
    }
}

impl Elect {
    /// Opens the state in the table directory `dir`; parity is offloaded to `cold`, under
    /// the table directory's last two components (keyspace and table).
    pub(crate) fn open(
        fs: Arc<dyn Fs>,
        dir: &Path,
        cold: Option<Arc<dyn mosaic_lsm::TableStore>>,
    ) -> Result<Elect> {
        let mut parity = ParityStore::open(fs.clone(), dir.join(PARITY_DIR))?;
        let mut data_cold = None;
        if let Some(cold) = cold {
            let prefix = cold_prefix(dir);
            parity = parity.with_cold_tier(cold.clone(), format!("{prefix}/{PARITY_DIR}"))?;
            data_cold = Some((cold, format!("{prefix}/{GHOSTS_DIR}")));
        }
        let path = dir.join(CODED_FILE);
        let data = if fs.exists(&path) {
            let bytes = fs
                .read_all(&path)
                .map_err(|e| Error::io("reading", &path, e))?;
            decode_state(&bytes).map_err(|why| Error::corruption(&path, 0, why))?
        } else {
            DataState::default()
        };
        Ok(Elect {
            covered: Arc::new(crate::covered::Covered::open(fs.clone(), dir)?),
            lineage: Arc::new(crate::lineage::Lineage::open(fs.clone(), dir)?),
            decoded: crate::degraded::DecodedTables::new(crate::degraded::DECODED_CACHE_BYTES),
            fs,
            dir: dir.to_path_buf(),
            parity,
            data: Mutex::new(data),
            hotness: Mutex::new(std::collections::HashMap::new()),
            leading: Mutex::new(()),
            cold: data_cold,
        })
    }

    /// The parity shards, ECMetas and intents this node holds.
    pub fn parity(&self) -> &ParityStore {
        &self.parity
    }

    /// The key lists other nodes sent for their coded tables (this node as a secondary).
    pub fn covered(&self) -> &Arc<crate::covered::Covered> {
        &self.covered
    }

    /// Where the rows of this node's coded tables are now.
    pub fn lineage(&self) -> &Arc<crate::lineage::Lineage> {
        &self.lineage
    }

    /// After opening the primary tree (whose current levels `levels` reads): listed
    /// tables are watched (state written before lineage existed) and holders whose
    /// compaction report a crash may have lost are recovered.
    pub fn recover_lineage(&self, levels: impl Fn() -> Vec<mosaic_lsm::LevelInfo>) -> Result<()> {
        for (id, l) in self.listed() {
            self.lineage.watch(id, l.range, &levels)?;
        }
        self.lineage.recover(levels)
    }

    /// Tables decoded for degraded reads.
    pub fn decoded(&self) -> &crate::degraded::DecodedTables {
        &self.decoded
    }

    /// The content of this data node's table in `slot` of `group` (its ghost), if it
    /// has one there.
    pub fn slot_content(&self, group: &GroupId, slot: u8) -> Result<Option<Vec<u8>>> {
        match self.slot_table(group, slot) {
            Some(id) => self.ghost(id),
            None => Ok(None),
        }
    }

    /// Bytes `offset..offset + len` (cut short at its end) of [`Elect::slot_content`],
    /// with the content's whole length.
    pub fn slot_range(
        &self,
        group: &GroupId,
        slot: u8,
        offset: u64,
        len: u32,
    ) -> Result<Option<(u64, Vec<u8>)>> {
        let Some(id) = self.slot_table(group, slot) else {
            return Ok(None);
        };
        let Some((file, name)) = self.ghost_file(id)? else {
            return Ok(None);
        };
        let size = file.len();
        let end = offset.saturating_add(u64::from(len)).min(size);
        let start = offset.min(end);
        let mut bytes = vec![0; (end - start) as usize];
        file.read_exact_at(&mut bytes, start)
            .map_err(|e| Error::io("reading", &name, e))?;
        Ok(Some((size, bytes)))
    }

    /// This node's coded table in `slot` of `group` (the newest epoch's).
    fn slot_table(&self, group: &GroupId, slot: u8) -> Option<u64> {
        let data = self.data.lock();
        data.coded
            .iter()
            .filter(|(_, c)| c.group == *group && c.slot == slot)
            .max_by_key(|(_, c)| c.epoch)
            .map(|(id, _)| *id)
    }

    /// Coded tables whose key lists are not yet acknowledged by every secondary.
    pub fn unlisted(&self) -> Vec<u64> {
        let data = self.data.lock();
        data.coded
            .keys()
            .filter(|id| !data.listed.get(id).is_some_and(|l| l.acked))
            .copied()
            .collect()
    }

    /// The coded tables whose key lists were sent.
    pub fn listed(&self) -> BTreeMap<u64, Listing> {
        self.data.lock().listed.clone()
    }

    /// The key list of coded table `id`, read from its ghost; `None` without a ghost.
    pub fn key_list(&self, id: u64) -> Result<Option<crate::covered::KeyList>> {
        match self.ghost_file(id)? {
            Some((file, name)) => crate::covered::key_list(file, &name).map(Some),
            None => Ok(None),
        }
    }

    /// Records, before its key list is sent, that coded table `id` (keys `range`) may from
    /// now on lack its secondary copies.
    pub fn mark_listing(&self, id: u64, range: KeyRange) -> Result<()> {
        let mut data = self.data.lock();
        if !data.coded.contains_key(&id) || data.listed.contains_key(&id) {
            return Ok(());
        }
        let mut next = data.clone();
        next.listed.insert(
            id,
            Listing {
                range,
                acked: false,
            },
        );
        self.save(&next)?;
        *data = next;
        Ok(())
    }

    /// Records that every secondary holds coded table `id`'s key list.
    pub fn mark_listed(&self, id: u64) -> Result<()> {
        let mut data = self.data.lock();
        if data.listed.get(&id).is_none_or(|l| l.acked) {
            return Ok(());
        }
        let mut next = data.clone();
        if let Some(l) = next.listed.get_mut(&id) {
            l.acked = true;
        }
        self.save(&next)?;
        *data = next;
        Ok(())
    }

    fn save(&self, state: &DataState) -> Result<()> {
        let path = self.dir.join(CODED_FILE);
        mosaic_lsm::write_atomically(&*self.fs, &path, &encode_state(state))
            .map_err(|e| Error::io("writing", &path, e))
    }

    /// Takes the next sequence number Q (durably, so Eq. (1) keeps rotating leaders across
    /// restarts).
    pub fn next_seq(&self) -> Result<u64> {
        let mut data = self.data.lock();
        let mut next = data.clone();
        next.seq += 1;
        self.save(&next)?;
        *data = next;
        Ok(data.seq - 1)
    }

    /// Records that table `id` is being sent to `leader` for `slot` (before it is sent).
    pub fn note_sent(&self, id: u64, slot: u8, leader: HostId) -> Result<()> {
        let mut data = self.data.lock();
        let mut next = data.clone();
        next.pending.insert(id, (slot, leader));
        self.save(&next)?;
        *data = next;
        Ok(())
    }

    /// Tables sent for coding and not yet answered: `(id, slot, leader, content)` from
    /// their ghosts. One whose ghost is gone (it cannot be sent again) is forgotten.
    pub fn unanswered(&self) -> Result<mosaic_erasure::Unanswered> {
        let pending = self.data.lock().pending.clone();
        let mut out = Vec::new();
        let mut lost = Vec::new();
        for (id, (slot, leader)) in pending {
            match self.ghost(id)? {
                Some(content) => out.push((id, slot, leader, content)),
                None => lost.push(id),
            }
        }
        if !lost.is_empty() {
            let mut data = self.data.lock();
            let mut next = data.clone();
            for id in lost {
                next.pending.remove(&id);
            }
            self.save(&next)?;
            *data = next;
        }
        Ok(out)
    }

    /// The primary tree's tables that are data shards, by table id.
    pub fn coded(&self) -> BTreeMap<u64, CodedTable> {
        self.data.lock().coded.clone()
    }

    /// Records table `id` as the data shard at `slot` of the committed group `meta`, and
    /// keeps `meta`.
    pub fn mark_coded(&self, id: u64, slot: u8, meta: &EcMeta) -> Result<()> {
        self.parity.record_meta(meta)?;
        let shard = meta.shards.get(usize::from(slot)).ok_or_else(|| {
            Error::InvalidArgument(format!("slot {slot} of a group of {}", meta.n))
        })?;
        let mut data = self.data.lock();
        let mut next = data.clone();
        next.pending.remove(&id);
        // A table whose bytes equal a coded one's (a compaction that rewrote a table
        // unchanged) is answered with the slot that table already holds: the slot now
        // stands for the new table, and the old one is forgotten, not emptied (emptying it
        // would take the new table's coding away).
        let same_slot: Vec<u64> = next
            .coded
            .iter()
            .filter(|(other, c)| **other != id && c.group == meta.group && c.slot == slot)
            .map(|(other, _)| *other)
            .collect();
        for other in &same_slot {
            next.coded.remove(other);
            next.listed.remove(other);
        }
        next.coded.insert(
            id,
            CodedTable {
                group: meta.group,
                slot,
                epoch: meta.epoch,
                bytes: shard.size,
            },
        );
        self.save(&next)?;
        *data = next;
        drop(data);
        self.lineage.forget(&same_slot)?;
        for other in same_slot {
            self.remove_ghost(other)?;
        }
        Ok(())
    }

    /// Full-node recovery of a data shard: this node lost its table in `slot` of `meta`'s
    /// group (`content`, rebuilt from the other shards, keys `range`), whose rows are
    /// already back in its primary tree. The content is kept as the ghost of a table id
    /// no engine assigns, recorded as coded and as listed (its secondaries hold its key
    /// list from before), so the slot is emptied, like any replaced table's, once the
    /// tables holding those rows now are coded. Returns that id; restoring a slot already
    /// restored returns the same one.
    pub fn restore_data(
        &self,
        meta: &EcMeta,
        slot: u8,
        content: &[u8],
        range: KeyRange,
    ) -> Result<u64> {
        self.parity.record_meta(meta)?;
        let hash = EcMeta::content_hash(content);
        let held: Vec<u64> = {
            let data = self.data.lock();
            data.coded
                .iter()
                .filter(|(_, c)| c.group == meta.group && c.slot == slot)
                .map(|(id, _)| *id)
                .collect()
        };
        for id in held {
            if self
                .ghost(id)?
                .is_some_and(|g| EcMeta::content_hash(&g) == hash)
            {
                return Ok(id);
            }
        }
        let mut data = self.data.lock();
        let id = data
            .coded
            .keys()
            .copied()
            .filter(|id| *id >= RESTORED_ID_BASE)
            .max()
            .map_or(RESTORED_ID_BASE, |id| id + 1);
        let dir = self.dir.join(GHOSTS_DIR);
        self.fs
            .create_dir_all(&dir)
            .map_err(|e| Error::io("creating directory", &dir, e))?;
        let ghost = self.ghost_path(id);
        mosaic_lsm::write_atomically(&*self.fs, &ghost, content)
            .map_err(|e| Error::io("writing", &ghost, e))?;
        let mut next = data.clone();
        next.coded.insert(
            id,
            CodedTable {
                group: meta.group,
                slot,
                epoch: meta.epoch,
                bytes: content.len() as u64,
            },
        );
        next.listed.insert(id, Listing { range, acked: true });
        self.save(&next)?;
        *data = next;
        Ok(id)
    }

    /// Full-node recovery of a parity shard: puts back `position` of `meta`'s group
    /// (`bytes`, rebuilt from the other shards) and records `meta`.
    pub fn restore_parity(&self, meta: &EcMeta, position: u8, bytes: &[u8]) -> Result<()> {
        self.parity
            .restore(&meta.group, position, meta.epoch, bytes)?;
        self.parity.record_meta(meta)?;
        Ok(())
    }

    /// The ECMetas this node holds that name `host` as a member.
    pub fn groups_of(&self, host: HostId) -> Result<Vec<EcMeta>> {
        let mut out = Vec::new();
        for group in self.parity.groups()? {
            if let Some(meta) = self.parity.meta(&group)? {
                if meta.shards.iter().any(|s| s.node == host) {
                    out.push(meta);
                }
            }
        }
        Ok(out)
    }

    /// The slot of coded table `id` was emptied: forgets the table and deletes its ghost.
    pub fn cleared(&self, id: u64) -> Result<()> {
        self.forget_coded(&[id])?;
        self.remove_ghost(id)
    }

    /// Forgets tables as data shards.
    pub fn forget_coded(&self, ids: &[u64]) -> Result<()> {
        let mut data = self.data.lock();
        if !ids.iter().any(|id| data.coded.contains_key(id)) {
            drop(data);
            return self.lineage.forget(ids);
        }
        let mut next = data.clone();
        for id in ids {
            next.coded.remove(id);
            next.listed.remove(id);
        }
        self.save(&next)?;
        *data = next;
        drop(data);
        self.lineage.forget(ids)
    }

    /// The leader's first step for `source`'s table `content`, to take slot `slot` of a
    /// group whose nodes are `nodes` (`k` data, `n − k` parity; this node is the first
    /// parity node): a group already holding it answers at once; an interrupted fill of
    /// it resumes; otherwise a group with that slot empty (or a new group) is chosen, the
    /// intent recorded, and the parity deltas returned.
    pub fn prepare_fill(&self, nodes: &Group, slot: u8, content: Vec<u8>) -> Result<Fill> {
        let _leading = self.leading.lock();
        let k = nodes.data.len();
        let n = k + nodes.parity.len();
        let codec = Codec::new(k, n).map_err(|e| Error::InvalidArgument(e.to_string()))?;
        let source = *nodes
            .data
            .get(usize::from(slot))
            .ok_or_else(|| Error::InvalidArgument(format!("slot {slot} of {k}")))?;
        let hash = EcMeta::content_hash(&content);
        let holds = |m: &EcMeta| {
            m.shards.get(usize::from(slot)).is_some_and(|s| {
                s.node == source && s.hash == hash && s.size == content.len() as u64
            })
        };
        let same_nodes = |m: &EcMeta| m.shards.iter().map(|s| s.node).eq(nodes.nodes());
        let intents = self.parity.intents()?;
        if let Some(intent) = intents.iter().find(|i| {
            i.slot == slot && i.old.is_empty() && EcMeta::content_hash(&i.content) == hash
        }) {
            return self.pending(&codec, intent);
        }
        let mut base = None;
        for group in self.parity.groups()? {
            let Some(meta) = self.parity.meta(&group)? else {
                continue;
            };
            if !same_nodes(&meta) {
                continue;
            }
            if holds(&meta) {
                return Ok(Fill::Committed(meta));
            }
            let empty = meta
                .shards
                .get(usize::from(slot))
                .is_some_and(|s| s.size == 0 && s.hash == [0; 32]);
            if empty && base.is_none() && !intents.iter().any(|i| i.group == group) {
                base = Some(meta);
            }
        }
        let base = match base {
            Some(meta) => meta,
            None => {
                // A new group, named by what first fills it and by its nodes (a retry names
                // the same one; a table coded again after its group lost a member, in a
                // group of other nodes, another).
                let mut seed = Vec::with_capacity(48 + 16 * n);
                seed.extend_from_slice(&nodes.leader().0);
                seed.extend_from_slice(&hash);
                for node in nodes.nodes() {
                    seed.extend_from_slice(&node.0);
                }
                let digest = EcMeta::content_hash(&seed);
                let mut group = [0u8; 16];
                group.copy_from_slice(&digest[..16]);
                EcMeta {
                    group,
                    epoch: 0,
                    k: k as u8,
                    n: n as u8,
                    stripe_bytes: codec.stripe_bytes() as u32,
                    coded_len: 0,
                    shards: nodes
                        .nodes()
                        .enumerate()
                        .map(|(i, node)| ShardMeta {
                            hash: [0; 32],
                            size: 0,
                            node,
                            position: i as u8,
                        })
                        .collect(),
                }
            }
        };
        let intent = FillIntent {
            group: base.group,
            base,
            slot,
            old: Vec::new(),
            content,
        };
        self.parity.record_intent(&intent)?;
        self.pending(&codec, &intent)
    }

    /// The leader's first step of emptying `slot` of `group`, whose table (`old`, kept by
    /// the data node as a ghost) compaction replaced: a slot that no longer holds `old` is
    /// answered at once; an interrupted emptying resumes; a group with another change under
    /// way is refused (the data node retries next round).
    pub fn prepare_clear(&self, group: &GroupId, slot: u8, old: Vec<u8>) -> Result<Fill> {
        let _leading = self.leading.lock();
        let meta = self
            .parity
            .meta(group)?
            .ok_or_else(|| Error::InvalidArgument("no such coding group here".into()))?;
        let codec = meta
            .codec()
            .map_err(|e| Error::InvalidArgument(e.to_string()))?;
        let hash = EcMeta::content_hash(&old);
        if let Some(intent) = self
            .parity
            .intents()?
            .into_iter()
            .find(|i| i.group == *group)
        {
            if intent.slot == slot
                && intent.content.is_empty()
                && EcMeta::content_hash(&intent.old) == hash
            {
                return self.pending(&codec, &intent);
            }
            return Err(Error::InvalidArgument(
                "the coding group has another change under way".into(),
            ));
        }
        let holds = meta
            .shards
            .get(usize::from(slot))
            .is_some_and(|s| s.hash == hash && s.size == old.len() as u64);
        if !holds {
            return Ok(Fill::Committed(meta));
        }
        let intent = FillIntent {
            group: *group,
            base: meta,
            slot,
            old,
            content: Vec::new(),
        };
        self.parity.record_intent(&intent)?;
        self.pending(&codec, &intent)
    }

    fn pending(&self, codec: &Codec, intent: &FillIntent) -> Result<Fill> {
        let deltas = codec
            .parity_delta(usize::from(intent.slot), &intent.old, &intent.content)
            .map_err(|e| Error::InvalidArgument(e.to_string()))?;
        let k = usize::from(intent.base.k);
        Ok(Fill::Pending {
            group: intent.group,
            from: intent.base.epoch,
            to: intent.base.epoch + 1,
            deltas: deltas
                .into_iter()
                .enumerate()
                .filter_map(|(i, d)| {
                    let shard = intent.base.shards.get(k + i)?;
                    Some((shard.position, shard.node, d))
                })
                .collect(),
        })
    }

    /// The leader's plan to finish the change under way on `group`, if any (so a change
    /// whose requester went away does not block the group).
    pub fn resume(&self, group: &GroupId) -> Result<Option<Fill>> {
        let _leading = self.leading.lock();
        let Some(intent) = self
            .parity
            .intents()?
            .into_iter()
            .find(|i| i.group == *group)
        else {
            return Ok(None);
        };
        let codec = intent
            .base
            .codec()
            .map_err(|e| Error::InvalidArgument(e.to_string()))?;
        self.pending(&codec, &intent).map(Some)
    }

    /// A parity node's step: applies `delta` to its shard at `position` of `group`, and
    /// returns the SHA-256 of the shard at epoch `to`.
    pub fn apply_parity(
        &self,
        group: &GroupId,
        position: u8,
        from: u64,
        to: u64,
        delta: &[u8],
    ) -> Result<[u8; 32]> {
        let _: Applied = self.parity.apply_delta(group, position, from, to, delta)?;
        let shard = self
            .parity
            .shard(group, position)?
            .ok_or_else(|| Error::InvalidArgument("parity vanished after its update".into()))?;
        Ok(EcMeta::content_hash(&shard.bytes))
    }

    /// The leader's last step, once every parity node applied its delta (`parity_hashes`:
    /// each parity position's new hash): commits the group's next ECMeta and forgets the
    /// intent. Committing again (a retry) returns the committed ECMeta.
    pub fn commit_fill(&self, group: &GroupId, parity_hashes: &[(u8, [u8; 32])]) -> Result<EcMeta> {
        let _leading = self.leading.lock();
        let Some(intent) = self
            .parity
            .intents()?
            .into_iter()
            .find(|i| i.group == *group)
        else {
            return self
                .parity
                .meta(group)?
                .ok_or_else(|| Error::InvalidArgument("no such group".into()));
        };
        let mut meta = intent.base.clone();
        meta.epoch += 1;
        let size = intent.content.len() as u64;
        meta.coded_len = meta
            .coded_len
            .max(Codec::coded_len(intent.content.len()) as u64);
        let slot = usize::from(intent.slot);
        if let Some(s) = meta.shards.get_mut(slot) {
            // An emptied slot is all zeros: no content, no hash.
            s.hash = if intent.content.is_empty() {
                [0; 32]
            } else {
                EcMeta::content_hash(&intent.content)
            };
            s.size = size;
        }
        let k = usize::from(meta.k);
        let coded_len = meta.coded_len;
        for s in meta.shards.iter_mut().skip(k) {
            s.size = coded_len;
            if let Some((_, h)) = parity_hashes.iter().find(|(p, _)| *p == s.position) {
                s.hash = *h;
            }
        }
        meta.check()
            .map_err(|e| Error::InvalidArgument(e.to_string()))?;
        self.parity.record_meta(&meta)?;
        self.parity.clear_intent(group)?;
        Ok(meta)
    }
}

#[cfg(test)]
mod tests;
