//! ELECT's redundancy transitioning between nodes (§4.1.2–4.1.3): a data node's rounds of
//! sending its coldest last-level tables to the leader parity node Eq. (1) names, and the
//! leader's part — distribute each parity delta, commit the group's next ECMeta, answer.
//! Storage does the durable steps ([`Store`]'s `ec_*` methods); see `docs/layouts.md`,
//! "Erasure-tiered", for why a crash at any step leaves a decodable group.

use std::collections::HashSet;

use mosaic_erasure::{EcMeta, Fill, GroupId, Placement};
use mosaic_types::HostId;

use super::*;
use crate::env::KeyList;
use crate::message::Tag;
use crate::placement::ReplicationStrategy;

/// Tables one data node sends per table and round.
const FILLS_PER_ROUND: usize = 4;
/// The tag marking a read a secondary relays to the primary of rows a coding group covers.
pub(super) const RELAY_TAG: &str = "ec-relay";

/// Whether a read's tags mark it as relayed by a secondary.
pub(super) fn is_relay(tags: &[Tag]) -> bool {
    tags.iter().any(|t| t.name == RELAY_TAG)
}

impl Node {
    /// This node's host id.
    pub(super) fn own_host_id(&self) -> HostId {
        self.inner.membership.lock().own().app.host_id
    }

    /// The placement of coding groups over every node with tokens, live or not (so a node
    /// that is merely down does not move parity), and each host's address.
    fn ec_placement(
        &self,
        k: usize,
        n: usize,
    ) -> Result<(Placement, HashMap<HostId, Endpoint>), String> {
        let hosts = self.ring_hosts();
        let placement = Placement::new(hosts.keys().copied(), k, n).map_err(|e| e.to_string())?;
        Ok((placement, hosts))
    }

    /// Every node with tokens, live or not, by host id.
    pub(super) fn ring_hosts(&self) -> HashMap<HostId, Endpoint> {
        let ring = self.ring();
        self.inner
            .membership
            .lock()
            .states()
            .filter(|s| ring.nodes().contains(&s.endpoint))
            .map(|s| (s.app.host_id, s.endpoint))
            .collect()
    }

    /// Serves `EcFill` as the leader parity node of this node's group.
    pub(super) async fn lead_fill(&self, table: TableKey, slot: u8, content: Vec<u8>) -> Body {
        let store = &self.inner.store;
        let Some((_, code)) = store.ec_tables().into_iter().find(|(t, _)| *t == table) else {
            return Body::Failed(Failure::UnknownTable);
        };
        let (placement, _) = match self.ec_placement(code.k, code.n) {
            Ok(p) => p,
            Err(e) => return Body::Failed(Failure::Storage(e)),
        };
        let nodes = match placement.group(self.own_host_id()) {
            Ok(g) => g,
            Err(e) => return Body::Failed(Failure::Storage(e.to_string())),
        };
        let fill = store.ec_prepare_fill(table, nodes, slot, content).await;
        self.finish_fill(table, fill).await
    }

    /// Serves `EcClear` as the group's leader. A change of the group left half done (its
    /// requester gone) is finished first, so it cannot block the group.
    pub(super) async fn lead_clear(
        &self,
        table: TableKey,
        group: [u8; 16],
        slot: u8,
        content: Vec<u8>,
    ) -> Body {
        let store = &self.inner.store;
        if let Ok(Some(other)) = store.ec_resume(table, group).await {
            if let Body::Failed(f) = self.finish_fill(table, Ok(other)).await {
                return Body::Failed(f);
            }
        }
        let fill = store.ec_prepare_clear(table, group, slot, content).await;
        self.finish_fill(table, fill).await
    }

    /// The leader's rest of a slot change `fill` prepared: each parity node's delta, then
    /// the commit; answers with the committed ECMeta.
    pub(super) async fn finish_fill(&self, table: TableKey, fill: Result<Fill, Failure>) -> Body {
        let store = &self.inner.store;
        let fill = match fill {
            Ok(f) => f,
            Err(f) => return Body::Failed(f),
        };
        let Some((_, code)) = store.ec_tables().into_iter().find(|(t, _)| *t == table) else {
            return Body::Failed(Failure::UnknownTable);
        };
        let hosts = match self.ec_placement(code.k, code.n) {
            Ok((_, hosts)) => hosts,
            Err(e) => return Body::Failed(Failure::Storage(e)),
        };
        let (group, from, to, deltas) = match fill {
            Fill::Committed(meta) => {
                return Body::EcFilled {
                    meta: meta.encode(),
                }
            }
            Fill::Pending {
                group,
                from,
                to,
                deltas,
            } => (group, from, to, deltas),
        };
        let timeout = self.inner.config.repair_timeout_ms;
        let mut hashes = Vec::with_capacity(deltas.len());
        for (position, host, delta) in deltas {
            let Some(&to_node) = hosts.get(&host) else {
                return Body::Failed(Failure::Storage(format!("parity node {host} is unknown")));
            };
            let ask = Body::EcParity {
                table,
                group,
                position,
                from,
                to,
                delta,
            };
            match self.call_retrying(to_node, ask, timeout).await {
                Some(Body::EcParityAck { hash }) => hashes.push((position, hash)),
                Some(Body::Failed(f)) => return Body::Failed(f),
                _ => {
                    return Body::Failed(Failure::TimedOut(format!(
                        "parity node {to_node} did not take its update"
                    )))
                }
            }
        }
        match store.ec_commit_fill(table, group, hashes).await {
            Ok(meta) => {
                self.push_meta(table, &meta, &hosts).await;
                Body::EcFilled {
                    meta: meta.encode(),
                }
            }
            Err(f) => Body::Failed(f),
        }
    }

    /// Sends a committed ECMeta to every other member of its group (at most one attempt
    /// each; a member that misses it is served a newer one by any live member later).
    /// With it the group's newest epoch survives its leader: a node rebuilding a lost
    /// shard needs it.
    async fn push_meta(&self, table: TableKey, meta: &EcMeta, hosts: &HashMap<HostId, Endpoint>) {
        let me = self.endpoint();
        let bytes = meta.encode();
        let timeout = self.inner.config.repair_timeout_ms;
        let pushes = meta
            .shards
            .iter()
            .filter_map(|s| hosts.get(&s.node).copied())
            .filter(|to| *to != me && self.is_alive(*to))
            .map(|to| {
                let ask = Body::EcMetaPush {
                    table,
                    meta: bytes.clone(),
                };
                self.call_timeout(to, ask, timeout)
            });
        futures::future::join_all(pushes).await;
    }

    /// One round of a data node: for every `erasure-tiered` table, the tables the α plan
    /// asks to code are sent to their leaders and recorded as coded once committed.
    /// Returns how many were coded.
    pub async fn ec_round(&self) -> usize {
        let store = &self.inner.store;
        let me = self.own_host_id();
        let mut coded = 0;
        let mut dissolved = 0;
        let mut groups_dissolved = 0;
        let ring_hosts = self.ring_hosts();
        for (table, code) in store.ec_tables() {
            let Some(replication) = store.placement(table) else {
                continue;
            };
            // Before anything else, and even when the cluster became too small to code.
            dissolved += self.restore_dissolved(table, &ring_hosts).await;
            let given_up = self.release_dissolved(table, &ring_hosts).await;
            groups_dissolved += given_up.len() as u64;
            let rf = replication.total();
            let (placement, hosts) = match self.ec_placement(code.k, code.n) {
                Ok(p) => p,
                Err(e) => {
                    tracing::warn!(%table, error = %e, "erasure-tiered table not coded");
                    continue;
                }
            };
            // First the tables sent without an answer (a lost answer, a leader that
            // crashed midway: sent again until the leader finishes the change), then the
            // slots of coded tables that compaction replaced (their ghosts go once the
            // slot is empty), then new fills.
            match store.ec_unanswered(table).await {
                Ok(unanswered) => {
                    for (id, slot, leader, content) in unanswered {
                        let Some(&to) = hosts.get(&leader) else {
                            // The leader left the ring, and its change with it.
                            if let Err(f) = store.ec_forget_pending(table, id).await {
                                tracing::warn!(%table, id, error = failure_text(&f), "forgetting a fill sent to a leader that left failed");
                            }
                            continue;
                        };
                        if let Err(e) = self.send_fill(table, to, id, slot, content).await {
                            tracing::info!(%table, id, error = %e, "a table sent for coding is still unanswered");
                        }
                    }
                }
                Err(f) => {
                    tracing::warn!(%table, error = failure_text(&f), "listing unanswered fills failed");
                }
            }
            match store.ec_replaced(table).await {
                Ok(replaced) => {
                    for r in replaced
                        .into_iter()
                        .filter(|r| !given_up.contains(&r.group))
                    {
                        if let Err(e) = self.clear_one(table, &hosts, r).await {
                            tracing::info!(%table, error = %e, "emptying a replaced table's slot did not complete; it is retried next round");
                        }
                    }
                }
                Err(f) => {
                    tracing::warn!(%table, error = failure_text(&f), "listing replaced coded tables failed");
                }
            }
            let picks = match store.ec_pick(table, rf).await {
                Ok(p) => p,
                Err(f) => {
                    tracing::warn!(%table, error = failure_text(&f), "choosing tables to code failed");
                    continue;
                }
            };
            for (id, content) in picks.into_iter().take(FILLS_PER_ROUND) {
                match self
                    .fill_one(table, &placement, &hosts, me, id, content)
                    .await
                {
                    Ok(()) => coded += 1,
                    Err(e) => {
                        tracing::info!(%table, id, error = %e, "coding a table did not complete; it is retried next round");
                        break;
                    }
                }
            }
            // Secondary removal: lists of coded tables to the secondaries, then drop what
            // lists this node received cover.
            self.send_key_lists(table, &replication, me, &ring_hosts)
                .await;
            if let Err(f) = store.ec_purge(table).await {
                tracing::warn!(%table, error = failure_text(&f), "dropping covered secondary copies failed");
            }
            if let Err(f) = store.ec_offload(table, rf).await {
                tracing::warn!(%table, error = failure_text(&f), "offloading to the cold tier failed");
            }
        }
        self.inner
            .counters
            .ec_lists_dissolved
            .store(dissolved, Ordering::Relaxed);
        self.inner
            .counters
            .ec_groups_dissolved
            .store(groups_dissolved, Ordering::Relaxed);
        self.inner
            .counters
            .ec_rounds
            .fetch_add(1, Ordering::Relaxed);
        coded
    }

    async fn fill_one(
        &self,
        table: TableKey,
        placement: &Placement,
        hosts: &HashMap<HostId, Endpoint>,
        me: HostId,
        id: u64,
        content: Vec<u8>,
    ) -> Result<(), String> {
        let store = &self.inner.store;
        let seq = store
            .ec_next_seq(table)
            .await
            .map_err(|f| failure_text(&f))?;
        let (leader, slot) = placement.leader(me, seq).map_err(|e| e.to_string())?;
        let to = *hosts.get(&leader).ok_or("leader unknown")?;
        if !self.is_alive(to) {
            return Err(format!("leader {to} is down"));
        }
        store
            .ec_note_sent(table, id, slot as u8, leader)
            .await
            .map_err(|f| failure_text(&f))?;
        self.send_fill(table, to, id, slot as u8, content).await
    }

    /// Sends table `id` to the leader `to` for `slot` and records it as coded once the
    /// leader committed it.
    async fn send_fill(
        &self,
        table: TableKey,
        to: Endpoint,
        id: u64,
        slot: u8,
        content: Vec<u8>,
    ) -> Result<(), String> {
        let store = &self.inner.store;
        let ask = Body::EcFill {
            table,
            slot,
            content,
        };
        let meta = match self
            .call_timeout(to, ask, self.inner.config.repair_timeout_ms)
            .await
        {
            Some(Body::EcFilled { meta }) => EcMeta::decode(&meta).map_err(|e| e.to_string())?,
            Some(Body::Failed(f)) => return Err(failure_text(&f)),
            _ => return Err(format!("no answer from leader {to}")),
        };
        store
            .ec_mark_coded(table, id, slot, meta)
            .await
            .map_err(|f| failure_text(&f))
    }

    async fn clear_one(
        &self,
        table: TableKey,
        hosts: &HashMap<HostId, Endpoint>,
        r: mosaic_erasure::Replaced,
    ) -> Result<(), String> {
        let to = *hosts.get(&r.leader).ok_or("leader unknown")?;
        let ask = Body::EcClear {
            table,
            group: r.group,
            slot: r.slot,
            content: r.content,
        };
        match self
            .call_timeout(to, ask, self.inner.config.repair_timeout_ms)
            .await
        {
            Some(Body::EcFilled { .. }) => {}
            Some(Body::Failed(f)) => return Err(failure_text(&f)),
            _ => return Err(format!("no answer from leader {to}")),
        }
        tracing::info!(%table, id = r.id, group = %hex(&r.group), slot = r.slot, "emptied the slot of a coded table compaction replaced");
        self.inner
            .store
            .ec_cleared(table, r.id)
            .await
            .map_err(|f| failure_text(&f))
    }

    /// Secondary removal, data node: sends each coded table's key list, split by the
    /// nodes holding redundant copies of its keys, and records the table as listed once
    /// all of them stored theirs. A key whose primary is no longer this node (the ring
    /// changed) is left out: its secondaries keep it. No list goes out of a group naming
    /// a node outside `ring_hosts` (the round's ring): that group is being given up.
    async fn send_key_lists(
        &self,
        table: TableKey,
        replication: &ReplicationStrategy,
        me: HostId,
        ring_hosts: &HashMap<HostId, Endpoint>,
    ) {
        let store = &self.inner.store;
        let lists = match store.ec_unlisted(table).await {
            Ok(l) => l,
            Err(f) => {
                tracing::warn!(%table, error = failure_text(&f), "reading coded tables' key lists failed");
                return;
            }
        };
        let ring = self.ring();
        let own = self.endpoint();
        for (id, (meta, slot), keys) in lists {
            let (Some(first), Some(last)) = (keys.first(), keys.last()) else {
                continue;
            };
            // A group that lost a member is being given up: no more lists of it.
            if !meta.shards.iter().all(|s| ring_hosts.contains_key(&s.node)) {
                continue;
            }
            let meta_group = meta.group;
            let meta = meta.encode();
            // Recorded before anything is sent: a secondary may drop rows as soon as its
            // list arrives, so from now on the table's slot waits for its successors.
            if let Err(f) = store
                .ec_listing(table, id, first.0.clone(), last.0.clone())
                .await
            {
                tracing::warn!(%table, id, error = failure_text(&f), "recording a key list before sending it failed");
                continue;
            }
            let mut per: BTreeMap<Endpoint, KeyList> = BTreeMap::new();
            for (key, ts) in keys {
                let Ok(token) = mosaic_rows::decode_token(&key) else {
                    continue;
                };
                let replicas = ring.place(token, replication);
                if replicas.first() != Some(&own) {
                    continue;
                }
                for r in replicas.iter().skip(1) {
                    per.entry(*r).or_default().push((key.clone(), ts));
                }
            }
            let mut all = true;
            for (to, keys) in per {
                let ask = Body::EcCover {
                    table,
                    source: me.0,
                    id,
                    meta: meta.clone(),
                    slot,
                    keys,
                };
                match self
                    .call_timeout(to, ask, self.inner.config.repair_timeout_ms)
                    .await
                {
                    Some(Body::EcCoverAck) => {}
                    other => {
                        let why = match other {
                            Some(Body::Failed(f)) => failure_text(&f),
                            _ => "no answer".into(),
                        };
                        tracing::info!(%table, id, node = %to, error = %why, "a key list did not reach a secondary; it is sent again next round");
                        all = false;
                        break;
                    }
                }
            }
            if all {
                tracing::info!(%table, id, group = %hex(&meta_group), slot, "key lists of a coded table reached every secondary");
                if let Err(f) = store.ec_listed(table, id).await {
                    tracing::warn!(%table, id, error = failure_text(&f), "recording a delivered key list failed");
                }
            }
        }
    }

    /// Secondary removal undone where a coding group lost a member: a node that left the
    /// ring (decommissioned, removed, replaced) took its shard of every group it was in,
    /// so the rows those groups cover here would survive one failure fewer than the
    /// table's replication promises. Per source with a key list of such a group, every
    /// list of that source (`Store::ec_dissolved` says why all) is released (its versions
    /// stop being dropped), the ranges this node holds as that
    /// source's redundant copy are read as a covered read reads them (with their primary,
    /// or decoded) and written back into this node's own structures, and only then the
    /// lists are forgotten. A crash midway repeats it: the writes keep their timestamps.
    /// The lists of a source that left the ring are only forgotten: the move copied the
    /// ranges whose role changed into their new structures, covered rows included.
    ///
    /// Returns how many such lists are still held (their restoring failed; retried next
    /// round).
    async fn restore_dissolved(&self, table: TableKey, hosts: &HashMap<HostId, Endpoint>) -> u64 {
        let store = &self.inner.store;
        let members: Vec<HostId> = hosts.keys().copied().collect();
        let dissolved = match store.ec_dissolved(table, members).await {
            Ok(d) => d,
            Err(f) => {
                tracing::warn!(%table, error = failure_text(&f), "listing key lists of coding groups that lost a member failed");
                return 1;
            }
        };
        let mut by_source: BTreeMap<HostId, Vec<(u64, KeyRange)>> = BTreeMap::new();
        for (source, id, range) in dissolved {
            by_source.entry(source).or_default().push((id, range));
        }
        let mut left = 0;
        for (source, lists) in by_source {
            let restored = async {
                for (id, _) in &lists {
                    store
                        .ec_uncover(table, source, *id, false)
                        .await
                        .map_err(|f| failure_text(&f))?;
                }
                let mut entries = 0;
                if let Some(&primary) = hosts.get(&source) {
                    entries = self.copy_covered(table, primary, &lists).await?;
                }
                for (id, _) in &lists {
                    store
                        .ec_uncover(table, source, *id, true)
                        .await
                        .map_err(|f| failure_text(&f))?;
                }
                Ok::<u64, String>(entries)
            }
            .await;
            match restored {
                Ok(entries) => {
                    self.inner
                        .counters
                        .ec_lists_restored
                        .fetch_add(lists.len() as u64, Ordering::Relaxed);
                    tracing::info!(%table, source = %source, lists = lists.len(), entries, "rows of coding groups that lost a member are held in full again")
                }
                Err(e) => {
                    left += lists.len() as u64;
                    tracing::warn!(%table, source = %source, error = %e, "restoring rows of coding groups that lost a member failed; retried next round")
                }
            }
        }
        left
    }

    /// Coding groups that lost a member, let go once nothing can read through them: the
    /// groups this node is a member of that name a node no longer in the ring take no
    /// more changes, and once no node of the ring holds a key list naming one (every
    /// secondary holds those rows in full again, [`Node::restore_dissolved`]), this node
    /// forgets its tables in it (a live one is coded again, in a group of the ring of now)
    /// and deletes its parity and ECMeta. A node of the ring that is down or does not
    /// answer keeps every such group until a later round.
    ///
    /// Returns the groups still held.
    async fn release_dissolved(
        &self,
        table: TableKey,
        hosts: &HashMap<HostId, Endpoint>,
    ) -> Vec<GroupId> {
        let store = &self.inner.store;
        let members: Vec<HostId> = hosts.keys().copied().collect();
        let groups = match store.ec_dissolved_groups(table, members).await {
            Ok(g) => g,
            Err(f) => {
                tracing::warn!(%table, error = failure_text(&f), "listing coding groups that lost a member failed");
                return Vec::new();
            }
        };
        if groups.is_empty() {
            return groups;
        }
        let mut named: HashSet<GroupId> = match store.ec_groups_named(table, groups.clone()).await {
            Ok(g) => g.into_iter().collect(),
            Err(f) => {
                tracing::warn!(%table, error = failure_text(&f), "reading which groups key lists name failed");
                return groups;
            }
        };
        let me = self.endpoint();
        let timeout = self.inner.config.repair_timeout_ms;
        let others: Vec<Endpoint> = hosts.values().copied().filter(|to| *to != me).collect();
        if others.iter().any(|to| !self.is_alive(*to)) {
            return groups;
        }
        let asks = others.iter().map(|to| {
            let ask = Body::EcNamed {
                table,
                groups: groups.clone(),
            };
            self.call_timeout(*to, ask, timeout)
        });
        for answer in futures::future::join_all(asks).await {
            match answer {
                Some(Body::EcNamedBy { groups: g }) => named.extend(g),
                _ => return groups,
            }
        }
        let mut held = Vec::new();
        for group in groups {
            if named.contains(&group) {
                held.push(group);
                continue;
            }
            match store
                .ec_release_group(table, group, self.own_host_id())
                .await
            {
                Ok(tables) => {
                    self.inner
                        .counters
                        .ec_groups_released
                        .fetch_add(1, Ordering::Relaxed);
                    tracing::info!(%table, group = %hex(&group), tables, "a coding group that lost a member was let go");
                }
                Err(f) => {
                    tracing::warn!(%table, group = %hex(&group), error = failure_text(&f), "letting a coding group that lost a member go failed; retried next round");
                    held.push(group);
                }
            }
        }
        held
    }

    /// Copies, within this node, every segment of the span of `lists` whose primary is
    /// `primary` and that this node replicates, reading covered rows with their primary
    /// (or decoding them) and storing them under this node's roles of now.
    async fn copy_covered(
        &self,
        table: TableKey,
        primary: Endpoint,
        lists: &[(u64, KeyRange)],
    ) -> Result<u64, String> {
        let placement = self
            .inner
            .store
            .placement(table)
            .ok_or("the table is gone")?;
        let start = lists
            .iter()
            .map(|(_, r)| r.start.clone())
            .min()
            .unwrap_or_default();
        let end = lists.iter().filter_map(|(_, r)| r.end.clone()).max();
        let me = self.endpoint();
        let mut entries = 0;
        for seg in self
            .ring()
            .segments_placed(&KeyRange { start, end }, &placement)
        {
            if seg.replicas.first() != Some(&primary) || !seg.replicas.contains(&me) {
                continue;
            }
            entries += self
                .copy_range(table, seg.range, (None, true), None)
                .await
                .map_err(|e| e.to_string())?
                .0;
        }
        Ok(entries)
    }

    /// Runs [`Node::ec_round`] every `interval_ms` until the node shuts down.
    pub fn start_erasure_coding(&self, interval_ms: u64) {
        if interval_ms == 0 {
            return;
        }
        let node = self.downgrade();
        let runtime = self.inner.runtime.clone();
        self.inner.runtime.spawn(
            async move {
                loop {
                    runtime.sleep(interval_ms).await;
                    let Some(node) = node.upgrade() else {
                        return;
                    };
                    if node.inner.stopped.load(Ordering::SeqCst) {
                        return;
                    }
                    node.ec_round().await;
                }
            }
            .boxed(),
        );
    }
}
