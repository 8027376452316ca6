//! The `erasure-tiered` layout's operations on a [`ReplicaStore`] (ELECT): choosing what
//! to code and offload, slot changes, key lists, degraded reads and recovery — each a
//! step [`crate::elect::Elect`] keeps durable, over the store's primary tree.

use super::*;

impl ReplicaStore {
    /// ELECT's choice of what to code next (§4.2, §4.3): with `r` replicas and the table's
    /// `code`, the α plan of the primary tree's counts says how many bytes of its last level
    /// to code; the coldest uncoded tables of that level (fewest reads, then oldest) make up
    /// the difference, at most `limit` of them and none larger than `size_max`. Returns
    /// each table's id and its file's bytes (the shard). Tables recorded as coded that
    /// compaction has since replaced are left to `ec_replaced`.
    pub fn ec_pick(
        &self,
        code: mosaic_types::ErasureCode,
        r: u32,
        size_max: u64,
        limit: usize,
    ) -> Result<Vec<(u64, Vec<u8>)>> {
        let (Engines::ErasureTiered(_, elect), Some(primary)) = (&self.engines, self.primary())
        else {
            return Ok(Vec::new());
        };
        let levels = primary.levels();
        let Some(last) = last_level(&levels) else {
            return Ok(Vec::new());
        };
        let live: std::collections::HashSet<u64> = levels
            .iter()
            .flat_map(|l| &l.tables)
            .map(|t| t.id)
            .collect();
        // Coded tables compaction replaced stay recorded (and their ghosts kept) until
        // their slots are emptied (`ec_replaced`); other ghosts of gone tables go.
        elect.sweep_ghosts(&live)?;
        let coded = elect.coded();
        let plan = alpha_plan(&levels, code, r);
        let coded_bytes: u64 = last
            .tables
            .iter()
            .filter(|t| coded.contains_key(&t.id))
            .map(|t| t.size_bytes)
            .sum();
        let want = (plan.code - coded_bytes as f64).max(0.0) as u64;
        // A table relocated to the cold tier is a candidate again when its group was let
        // go (its ghost, a stub naming the object, still holds its content).
        let candidates = elect.candidates(last, self.clock.now_micros(), |t| {
            !coded.contains_key(&t.id)
                && t.size_bytes <= size_max
                && (t.location.is_empty() || elect.ghost_location(t.id).ok().flatten().is_some())
        });
        // Tables that now hold a replaced coded table's rows come first: until they are
        // coded the replaced table's slot stays, since secondaries dropped those rows.
        // (Holders in upper levels are coded once compaction moves the rows down.)
        let listed = elect.listed();
        let mut needed = std::collections::HashSet::new();
        for (id, l) in listed.iter().filter(|(id, _)| !live.contains(id)) {
            needed.extend(unprotected_holders(
                elect, &levels, *id, &l.range, &coded, &listed,
            )?);
        }
        let (first, rest): (Vec<_>, Vec<_>) =
            candidates.into_iter().partition(|c| needed.contains(&c.id));
        let mut out = Vec::new();
        for c in first
            .into_iter()
            .chain(mosaic_erasure::hotness::take_coldest(rest, want))
            .take(limit)
        {
            // Compacted away since the listing: the next round picks again.
            if let Some(bytes) = elect.pin(c.id, &primary.table_file_path(c.id))? {
                // From now on its rows are followed through compaction (`Lineage`).
                if let Some(t) = last.tables.iter().find(|t| t.id == c.id) {
                    let range = (t.smallest_key.clone(), t.largest_key.clone());
                    elect.lineage().watch(c.id, range, || primary.levels())?;
                }
                out.push((c.id, bytes));
            }
        }
        Ok(out)
    }

    /// ELECT's offloading (§4.3): once the whole last level is coded, parity shards move
    /// to the cold tier until the α plan's parity share is offloaded (Case 2); once all
    /// of it is, coded data tables follow, coldest first, until the plan's data share is
    /// (Case 3, see `elect::offload`). Returns the bytes moved now.
    pub fn ec_offload(&self, code: mosaic_types::ErasureCode, r: u32) -> Result<u64> {
        let (Engines::ErasureTiered(_, elect), Some(primary)) = (&self.engines, self.primary())
        else {
            return Ok(0);
        };
        let levels = primary.levels();
        let plan = alpha_plan(&levels, code, r);
        let mut moved = 0;
        let last = last_level(&levels).map_or(0, level_bytes);
        // Case 2 once the plan codes the whole last level: the plan sizes parity as
        // (n − k)/k of the coded data and leaves the rest of that hot; groups with empty
        // or shorter slots hold more parity than that (even where the plan needs no
        // offload at all), so what stays hot is capped at the plan's remainder and
        // everything above it goes.
        if last > 0 && plan.code >= last as f64 {
            let parity_max = (code.n - code.k) as f64 / code.k as f64 * last as f64;
            let keep_hot = (parity_max - plan.offload_parity).max(0.0) as u64;
            let parity = elect.parity();
            let held = parity.parity_bytes()? + parity.cold_bytes()?;
            moved += parity.offload(held.saturating_sub(keep_hot))?;
        }
        // Case 3: all parity offloaded and α still not met — coded data goes too.
        moved += elect.offload_coded(
            &primary,
            &levels,
            plan.offload_data.max(0.0) as u64,
            self.clock.now_micros(),
        )?;
        Ok(moved)
    }

    /// The coded tables of the primary tree that compaction replaced, with their ghosts'
    /// content: their slots are to be emptied. A table without a ghost (lost with a disk)
    /// is logged by the caller's next steps as unclearable and forgotten.
    pub fn ec_replaced(&self) -> Result<Vec<mosaic_erasure::Replaced>> {
        let (Engines::ErasureTiered(_, elect), Some(primary)) = (&self.engines, self.primary())
        else {
            return Ok(Vec::new());
        };
        let levels = primary.levels();
        let live: std::collections::HashSet<u64> = levels
            .iter()
            .flat_map(|l| &l.tables)
            .map(|t| t.id)
            .collect();
        let coded = elect.coded();
        let listed = elect.listed();
        let mut out = Vec::new();
        for (id, c) in coded.iter().map(|(id, c)| (*id, *c)) {
            if live.contains(&id) {
                continue;
            }
            // Secondaries dropped this table's rows: its slot keeps them decodable until
            // every table compaction moved them into (any level) is coded and listed.
            if let Some(l) = listed.get(&id) {
                if !unprotected_holders(elect, &levels, id, &l.range, &coded, &listed)?.is_empty() {
                    continue;
                }
            }
            let leader = elect
                .parity()
                .meta(&c.group)?
                .and_then(|m| m.shards.get(usize::from(m.k)).map(|s| s.node));
            match (leader, elect.ghost(id)?) {
                (Some(leader), Some(content)) => out.push(mosaic_erasure::Replaced {
                    id,
                    group: c.group,
                    slot: c.slot,
                    leader,
                    content,
                }),
                // Nothing to clear the slot with: the group keeps the stale slot (still
                // decodable from its other shards) and the node forgets the table.
                _ => elect.forget_coded(&[id])?,
            }
        }
        Ok(out)
    }

    /// Secondary removal, on a node holding `source`'s redundant copies: durably records
    /// the key list of `source`'s coded table `id` (a data shard of `shard`); the source's
    /// tree drops the versions it covers at its next purge ([`ReplicaStore::ec_purge`]) or
    /// compaction. Returns whether the list was new.
    pub fn ec_cover(
        &self,
        source: SourceId,
        id: u64,
        shard: crate::covered::Shard,
        keys: &crate::covered::KeyList,
    ) -> Result<bool> {
        match &self.engines {
            Engines::ErasureTiered(_, elect) => elect.covered().add(source, id, shard, keys),
            _ => Err(Error::InvalidArgument(format!(
                "{} is not stored erasure-tiered: it takes no key lists",
                self.dir.display()
            ))),
        }
    }

    /// The coded tables of `role`'s source holding the newest covered versions of keys
    /// within the bounds (what a degraded read decodes).
    pub fn ec_covering(
        &self,
        role: Role,
        start: Bound<&[u8]>,
        end: Bound<&[u8]>,
    ) -> Vec<crate::covered::Covering> {
        match (&self.engines, role) {
            (Engines::ErasureTiered(_, elect), Role::Redundant { source, .. }) => {
                elect.covered().source(source).covering(start, end)
            }
            _ => Vec::new(),
        }
    }

    /// Key lists held here whose coding group names a node `member` does not accept
    /// ([`crate::covered::Covered::dissolved`]).
    pub fn ec_dissolved(
        &self,
        member: impl Fn(&[u8; 16]) -> bool,
    ) -> Vec<crate::covered::Dissolved> {
        match &self.engines {
            Engines::ErasureTiered(_, elect) => elect.covered().dissolved(member),
            _ => Vec::new(),
        }
    }

    /// Coding groups this node is a member of that name a node `member` does not accept
    /// ([`crate::elect::Elect::dissolved_groups`]).
    pub fn ec_dissolved_groups(
        &self,
        member: impl Fn(&mosaic_types::HostId) -> bool,
    ) -> Result<Vec<GroupId>> {
        match &self.engines {
            Engines::ErasureTiered(_, elect) => elect.dissolved_groups(member),
            _ => Ok(Vec::new()),
        }
    }

    /// Which of `groups` a key list held here names ([`crate::covered::Covered::naming`]).
    pub fn ec_groups_named(&self, groups: &[GroupId]) -> Vec<GroupId> {
        match &self.engines {
            Engines::ErasureTiered(_, elect) => elect.covered().naming(groups),
            _ => Vec::new(),
        }
    }

    /// Lets a coding group that lost a member go, once no node holds a key list naming it
    /// ([`crate::elect::Elect::release_group`]); returns how many of this node's tables
    /// were data shards of it.
    pub fn ec_release_group(&self, group: &GroupId, me: mosaic_types::HostId) -> Result<usize> {
        match &self.engines {
            Engines::ErasureTiered(_, elect) => elect.release_group(group, me),
            _ => Ok(0),
        }
    }

    /// Table `id` was sent for coding to a leader that left the ring: forgotten as sent.
    pub fn ec_forget_pending(&self, id: u64) -> Result<()> {
        match &self.engines {
            Engines::ErasureTiered(_, elect) => elect.forget_pending(id),
            _ => Ok(()),
        }
    }

    /// Gives up `source`'s key list `id`: with `forget` false, its versions stop being
    /// dropped (the caller then writes its rows back); with `forget` true, the list is
    /// durably removed and its keys no longer covered.
    pub fn ec_uncover(&self, source: SourceId, id: u64, forget: bool) -> Result<()> {
        let Engines::ErasureTiered(_, elect) = &self.engines else {
            return Ok(());
        };
        if forget {
            elect.covered().forget(source, id)
        } else {
            elect.covered().release(source, id);
            Ok(())
        }
    }

    /// What this node holds of shard `position` of `group`: its table in that data slot
    /// (position `< k`), or the parity shard with its epoch — at `epoch` when this node
    /// still holds that one (see [`crate::parity::ParityStore::shard_at`]).
    pub fn ec_shard(
        &self,
        group: &GroupId,
        position: u8,
        epoch: Option<u64>,
    ) -> Result<Option<(u64, Vec<u8>)>> {
        let Engines::ErasureTiered(_, elect) = &self.engines else {
            return Ok(None);
        };
        if let Some(p) = elect.parity().shard_at(group, position, epoch)? {
            return Ok(Some((p.epoch, p.bytes)));
        }
        Ok(elect.slot_content(group, position)?.map(|b| (0, b)))
    }

    /// The newest ECMeta of `group` this node holds.
    pub fn ec_meta(&self, group: &GroupId) -> Result<Option<mosaic_erasure::EcMeta>> {
        match &self.engines {
            Engines::ErasureTiered(_, elect) => elect.parity().meta(group),
            _ => Ok(None),
        }
    }

    /// A degraded read: up to `limit` rows within the bounds of the table in `slot` of
    /// `meta`'s group, from the stripes of it decoded before and `given` (a span of its
    /// stripes and `k` other shards' bytes of that span) — or the span it needs next.
    pub fn ec_read_lost(
        &self,
        meta: &mosaic_erasure::EcMeta,
        slot: u8,
        given: Option<crate::degraded::Span<'_>>,
        (start, end): (Bound<&[u8]>, Bound<&[u8]>),
        limit: usize,
    ) -> Result<mosaic_erasure::LostRead> {
        let Engines::ErasureTiered(m, elect) = &self.engines else {
            return Err(Error::InvalidArgument(
                "only erasure-tiered tables are read degraded".into(),
            ));
        };
        let shard = meta.shards.get(usize::from(slot)).ok_or_else(|| {
            Error::InvalidArgument(format!("slot {slot} is not in a group of n = {}", meta.n))
        })?;
        let decoded = elect.decoded();
        let table = decoded.table(&shard.hash, shard.size, mosaic_erasure::LOST_PIECE_BYTES);
        if let Some((span, shards)) = given {
            table.add(meta, slot, span, shards)?;
            decoded.trim();
        }
        let read = table.read(m.merge_operator(), start, end, limit);
        if read.is_err() {
            decoded.forget(&shard.hash);
        }
        read
    }

    /// The next span (at most `max` bytes, at or after byte `from`) of the lost table in
    /// `slot` of `meta`'s group that degraded reads have not decoded yet; `None` when the
    /// rest is decoded, or when no degraded read decoded any of it (or its stripes were
    /// evicted): decoding ahead follows reads, it does not start tables on its own.
    pub fn ec_lost_missing(
        &self,
        meta: &mosaic_erasure::EcMeta,
        slot: u8,
        from: u64,
        max: u64,
    ) -> Result<Option<std::ops::Range<u64>>> {
        let Engines::ErasureTiered(_, elect) = &self.engines else {
            return Ok(None);
        };
        let Some(shard) = meta.shards.get(usize::from(slot)) else {
            return Ok(None);
        };
        Ok(elect
            .decoded()
            .get(&shard.hash)
            .and_then(|t| t.next_missing(from, max)))
    }

    /// Bytes `offset..offset + len` (cut short at its end) of what this node holds of
    /// shard `position` of `group`, with the shard's epoch (0 for a data shard) and whole
    /// length: a degraded read's ranged fetch. A parity shard's epoch is picked as by
    /// [`ReplicaStore::ec_shard`].
    pub fn ec_shard_range(
        &self,
        group: &GroupId,
        (position, epoch): (u8, Option<u64>),
        (offset, len): (u64, u32),
    ) -> Result<Option<(u64, u64, Vec<u8>)>> {
        let Engines::ErasureTiered(_, elect) = &self.engines else {
            return Ok(None);
        };
        if let Some(found) = elect
            .parity()
            .shard_range(group, position, epoch, (offset, len))?
        {
            return Ok(Some(found));
        }
        Ok(elect
            .slot_range(group, position, offset, len)?
            .map(|(size, bytes)| (0, size, bytes)))
    }

    /// Every cold-tier object this store references: its trees' relocated tables and
    /// (erasure-tiered) its offloaded parity shards. Objects of the node's cold tier named
    /// by no store are garbage.
    pub fn cold_references(&self) -> Result<Vec<String>> {
        let mut out: Vec<String> = self
            .structures()
            .into_iter()
            .flat_map(|st| st.levels)
            .flat_map(|l| l.tables)
            .filter(|t| !t.location.is_empty())
            .map(|t| t.location)
            .collect();
        if let Engines::ErasureTiered(_, elect) = &self.engines {
            out.extend(elect.parity().cold_locations()?);
            out.extend(elect.ghost_locations()?.into_iter().map(|(l, _)| l));
        }
        Ok(out)
    }

    /// Records `meta`, a group's ECMeta its leader committed, unless as new a one is.
    pub fn ec_record_meta(&self, meta: &mosaic_erasure::EcMeta) -> Result<()> {
        match &self.engines {
            Engines::ErasureTiered(_, elect) => elect.parity().record_meta(meta).map(|_| ()),
            _ => Err(Error::InvalidArgument(
                "only erasure-tiered tables hold coding groups".into(),
            )),
        }
    }

    /// The coding groups this node knows of that name `host` as a member (their newest
    /// ECMetas here): what a node that lost its data asks its peers for.
    pub fn ec_groups_of(&self, host: mosaic_types::HostId) -> Result<Vec<mosaic_erasure::EcMeta>> {
        match &self.engines {
            Engines::ErasureTiered(_, elect) => elect.groups_of(host),
            _ => Ok(Vec::new()),
        }
    }

    /// Full-node recovery: rebuilds this node's shard at `position` of `meta`'s group from
    /// `shards` (`k` others, as for a degraded read) and puts it back. A parity shard is
    /// stored again; a data shard's rows are written back into the primary tree with their
    /// own timestamps (their secondaries dropped them), flushed, and its content kept so
    /// the slot stays filled until the tables now holding those rows are coded.
    pub fn ec_restore(
        &self,
        meta: &mosaic_erasure::EcMeta,
        position: u8,
        shards: &[(u8, Vec<u8>)],
    ) -> Result<()> {
        let Engines::ErasureTiered(m, elect) = &self.engines else {
            return Err(Error::InvalidArgument(
                "only erasure-tiered tables hold coding shards".into(),
            ));
        };
        let bytes = crate::degraded::decode(meta, position, shards)?;
        if position >= meta.k {
            return elect.restore_parity(meta, position, &bytes);
        }
        let table = crate::degraded::open_whole(bytes.clone())?;
        let (batches, Some(range)) = crate::degraded::versions(&table)? else {
            return Ok(());
        };
        let primary = m.primary();
        for batch in batches {
            primary.write(batch)?;
        }
        primary.flush()?;
        let id = elect.restore_data(meta, position, &bytes, range.clone())?;
        elect.lineage().watch(id, range, || primary.levels())
    }

    /// Whether keys within the bounds, stored under `role`, are covered by a coding group:
    /// this node dropped (or may drop) versions of them, so it answers for them only
    /// together with their primary replica.
    pub fn ec_covers(&self, role: Role, start: Bound<&[u8]>, end: Bound<&[u8]>) -> bool {
        match (&self.engines, role) {
            (Engines::ErasureTiered(_, elect), Role::Redundant { source, .. }) => {
                elect.covered().source(source).covers(start, end)
            }
            _ => false,
        }
    }

    /// Drops covered versions now: flushes and fully compacts every source tree that
    /// received key lists since its last purge. Returns how many trees it compacted.
    pub fn ec_purge(&self) -> Result<usize> {
        let Engines::ErasureTiered(m, elect) = &self.engines else {
            return Ok(0);
        };
        let mut done = 0;
        for source in elect.covered().take_dirty() {
            let Some(db) = m.tree(Role::Redundant { source, index: 1 }) else {
                continue;
            };
            if let Err(e) = db.compact() {
                elect.covered().mark_dirty(source);
                return Err(e);
            }
            done += 1;
        }
        Ok(done)
    }

    /// Coded tables of the primary tree whose key lists are still to reach the
    /// secondaries, each with its shard and list (read from the table's ghost). A coded
    /// table without a ghost or ECMeta has no list to send and is left out.
    pub fn ec_unlisted(
        &self,
    ) -> Result<Vec<(u64, crate::covered::Shard, crate::covered::KeyList)>> {
        let Engines::ErasureTiered(_, elect) = &self.engines else {
            return Ok(Vec::new());
        };
        let coded = elect.coded();
        let mut out = Vec::new();
        for id in elect.unlisted() {
            let Some(c) = coded.get(&id) else {
                continue;
            };
            let (Some(meta), Some(keys)) = (elect.parity().meta(&c.group)?, elect.key_list(id)?)
            else {
                continue;
            };
            let shard = crate::covered::Shard { meta, slot: c.slot };
            out.push((id, shard, keys));
        }
        Ok(out)
    }

    /// Coded table `id`'s key list (first and last keys `smallest` and `largest`) is about
    /// to be sent: from now on its slot waits for tables covering its keys.
    pub fn ec_listing(&self, id: u64, smallest: Vec<u8>, largest: Vec<u8>) -> Result<()> {
        match &self.engines {
            Engines::ErasureTiered(m, elect) => {
                let range = (smallest, largest);
                elect
                    .lineage()
                    .watch(id, range.clone(), || m.primary().levels())?;
                elect.mark_listing(id, range)
            }
            _ => Ok(()),
        }
    }

    /// Every secondary holds coded table `id`'s key list.
    pub fn ec_listed(&self, id: u64) -> Result<()> {
        match &self.engines {
            Engines::ErasureTiered(_, elect) => elect.mark_listed(id),
            _ => Ok(()),
        }
    }

    /// Keys of other nodes' coded tables this node covers as a secondary.
    pub fn ec_covered_keys(&self) -> u64 {
        match &self.engines {
            Engines::ErasureTiered(_, elect) => elect.covered().keys(),
            _ => 0,
        }
    }
}
