//! ELECT's redundancy transitioning between nodes (§4.1.2–4.1.3): a data node's rounds of
//! sending its coldest last-level tables to the leader parity node Eq. (1) names, and the
//! leader's part — distribute each parity delta, commit the group's next ECMeta, answer.
//! Storage does the durable steps ([`Store`]'s `ec_*` methods); see `docs/layouts.md`,
//! "Erasure-tiered", for why a crash at any step leaves a decodable group.

use mosaic_erasure::{EcMeta, Fill, Placement};
use mosaic_types::HostId;

use super::*;
use crate::env::KeyList;
use crate::message::Tag;

/// Tables one data node sends per table and round.
const FILLS_PER_ROUND: usize = 4;
/// The tag marking a read a secondary relays to the primary of rows a coding group covers.
const RELAY_TAG: &str = "ec-relay";

/// Whether a read's tags mark it as relayed by a secondary.
pub(super) fn is_relay(tags: &[Tag]) -> bool {
    tags.iter().any(|t| t.name == RELAY_TAG)
}

impl Node {
    /// This node's host id.
    fn own_host_id(&self) -> HostId {
        self.inner.membership.lock().own().app.host_id
    }

    /// The placement of coding groups over every node with tokens, live or not (so a node
    /// that is merely down does not move parity), and each host's address.
    fn ec_placement(
        &self,
        k: usize,
        n: usize,
    ) -> Result<(Placement, HashMap<HostId, Endpoint>), String> {
        let ring = self.ring();
        let hosts: HashMap<HostId, Endpoint> = self
            .inner
            .membership
            .lock()
            .states()
            .filter(|s| ring.nodes().contains(&s.endpoint))
            .map(|s| (s.app.host_id, s.endpoint))
            .collect();
        let placement = Placement::new(hosts.keys().copied(), k, n).map_err(|e| e.to_string())?;
        Ok((placement, hosts))
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
        for (table, code) in store.ec_tables() {
            let Some(rf) = store.replication_factor(table) else {
                continue;
            };
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
                    for r in replaced {
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
            self.send_key_lists(table, rf, me).await;
            if let Err(f) = store.ec_purge(table).await {
                tracing::warn!(%table, error = failure_text(&f), "dropping covered secondary copies failed");
            }
            if let Err(f) = store.ec_offload(table, rf).await {
                tracing::warn!(%table, error = failure_text(&f), "offloading to the cold tier failed");
            }
        }
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

    /// A read of rows this node holds as a secondary and a coding group covers (it dropped
    /// their coded versions): its own remaining (newer) versions merged with the answer
    /// of the rows' primary replica — or, when the primary is down or does not answer, with
    /// the rows decoded from the coding groups (a degraded read).
    pub(super) async fn read_with_primary(
        &self,
        table: TableKey,
        range: KeyRange,
        limit: usize,
    ) -> Result<Entries, Failure> {
        let store = &self.inner.store;
        let rf = store
            .replication_factor(table)
            .ok_or(Failure::UnknownTable)?;
        let mut primaries: Vec<Endpoint> = self
            .ring()
            .segments(&range, rf)
            .into_iter()
            .filter_map(|s| s.replicas.first().copied())
            .collect();
        primaries.dedup();
        let primary = match primaries.as_slice() {
            [p] if *p != self.endpoint() => *p,
            _ => {
                return Err(Failure::Storage(
                    "a read of rows covered by erasure coding must stay within one replica \
                     set"
                    .into(),
                ))
            }
        };
        let local = store.read(table, range.clone(), limit, &[]).await?;
        if !self.is_alive(primary) {
            return self.degraded_read(table, range, limit, local).await;
        }
        let ask = Body::Read {
            table,
            range: WireRange {
                start: range.start.clone(),
                end: range.end.clone(),
            },
            limit: u32::try_from(limit).unwrap_or(u32::MAX),
            digest: false,
            tags: vec![Tag {
                name: RELAY_TAG.into(),
                value: Vec::new(),
            }],
        };
        // A quarter of the read timeout, so a degraded read still fits in the rest.
        match self
            .call_timeout(primary, ask, self.inner.config.read_timeout_ms / 4)
            .await
        {
            Some(Body::ReadData { entries, exhausted }) => {
                Ok(merge_answers(&[local, (entries, exhausted)], limit))
            }
            Some(Body::Failed(f)) => Err(f),
            _ => self.degraded_read(table, range, limit, local).await,
        }
    }

    /// ELECT's degraded read (§5): `local` (this secondary's own versions of `range`)
    /// merged with the covered rows decoded from their coding groups — each lost table
    /// once, from any `k` of its group's other shards, and kept decoded for the next reads.
    async fn degraded_read(
        &self,
        table: TableKey,
        range: KeyRange,
        limit: usize,
        local: Entries,
    ) -> Result<Entries, Failure> {
        let result = self.degraded_rows(table, range, limit, local).await;
        if let Err(f) = &result {
            tracing::warn!(%table, error = failure_text(f), "a degraded read failed");
        }
        result
    }

    /// The body of [`Node::degraded_read`].
    async fn degraded_rows(
        &self,
        table: TableKey,
        range: KeyRange,
        limit: usize,
        local: Entries,
    ) -> Result<Entries, Failure> {
        let store = &self.inner.store;
        let mut answers = vec![local];
        for (meta, slot) in store.ec_covering(table, range.clone()).await? {
            let cached = store
                .ec_read_lost(
                    table,
                    (meta.clone(), slot),
                    Vec::new(),
                    range.clone(),
                    limit,
                )
                .await?;
            let rows = match cached {
                Some(rows) => rows,
                None => {
                    let (newest, shards) = self.gather_shards(table, &meta, slot).await?;
                    store
                        .ec_read_lost(table, (newest, slot), shards, range.clone(), limit)
                        .await?
                        .ok_or_else(|| Failure::Storage("a decoded table went missing".into()))?
                }
            };
            answers.push(rows);
        }
        Ok(merge_answers(&answers, limit))
    }

    /// [`Node::ec_recover`] of every erasure-tiered table this node stores.
    pub async fn ec_recover_all(&self) -> RepairReport {
        let mut report = RepairReport::default();
        for (table, _) in self.inner.store.ec_tables() {
            report.absorb(self.ec_recover(table).await);
        }
        report
    }

    /// ELECT's full-node recovery (§5) of `table` on a node that lost its data: every
    /// live node is asked for the coding groups naming this node, and each shard of this
    /// node that a group's newest ECMeta names and this node does not hold is rebuilt from
    /// `k` others — a parity shard is stored again, a data table's rows go back into the
    /// primary tree (their secondaries dropped them; nothing else holds them).
    pub async fn ec_recover(&self, table: TableKey) -> RepairReport {
        let store = &self.inner.store;
        let me = self.own_host_id();
        let mut report = RepairReport::default();
        let fail = |report: &mut RepairReport, why: String| {
            report.shards_failed += 1;
            if report.errors.len() < 10 {
                report.errors.push(why);
            }
        };
        let mut newest: BTreeMap<[u8; 16], EcMeta> = BTreeMap::new();
        let mut keep = |meta: EcMeta| {
            if newest
                .get(&meta.group)
                .is_none_or(|held| held.epoch < meta.epoch)
            {
                newest.insert(meta.group, meta);
            }
        };
        if let Ok(own) = store.ec_groups_of(table, me).await {
            own.into_iter().for_each(&mut keep);
        }
        let ring = self.ring();
        let peers: Vec<Endpoint> = self
            .inner
            .membership
            .lock()
            .states()
            .map(|s| s.endpoint)
            .filter(|e| *e != self.endpoint() && ring.nodes().contains(e))
            .collect();
        // A node that is down may be the only one left knowing a group's newest epoch:
        // recovery is complete only once every node of the ring was asked.
        let (live, down): (Vec<Endpoint>, Vec<Endpoint>) =
            peers.into_iter().partition(|p| self.is_alive(*p));
        for peer in down {
            fail(
                &mut report,
                format!("{peer} is down: the coding groups it knows were not asked"),
            );
        }
        let timeout = self.inner.config.repair_timeout_ms;
        let asks = live.into_iter().map(|peer| {
            let ask = Body::EcGroupsOf { table, host: me.0 };
            self.call_timeout(peer, ask, timeout)
                .map(move |answer| (peer, answer))
        });
        let answers: Vec<_> = futures::future::join_all(asks).await;
        for (peer, answer) in answers {
            match answer {
                Some(Body::EcGroups { metas }) => metas
                    .iter()
                    .filter_map(|m| EcMeta::decode(m).ok())
                    .for_each(&mut keep),
                Some(Body::Failed(Failure::UnknownTable)) => {}
                other => {
                    let why = match other {
                        Some(Body::Failed(f)) => failure_text(&f),
                        _ => "no answer".into(),
                    };
                    fail(
                        &mut report,
                        format!("{peer} did not list its coding groups: {why}"),
                    );
                }
            }
        }
        for meta in newest.into_values() {
            let Some(position) = meta.position_of(me) else {
                continue;
            };
            let Ok(position) = u8::try_from(position) else {
                continue;
            };
            let empty_slot = position < meta.k
                && meta
                    .shards
                    .get(usize::from(position))
                    .is_some_and(|s| s.size == 0);
            if empty_slot {
                continue;
            }
            let held = match store.ec_shard(table, meta.group, position).await {
                Ok(Some((epoch, bytes))) => {
                    meta.verify(usize::from(position), &bytes)
                        && (position < meta.k || epoch == meta.epoch)
                }
                _ => false,
            };
            if held {
                continue;
            }
            let group = hex(&meta.group);
            let rebuilt = match self.gather_shards(table, &meta, position).await {
                Ok((newest, shards)) => store.ec_restore(table, newest, position, shards).await,
                Err(f) => Err(f),
            };
            match rebuilt {
                Ok(()) => {
                    tracing::info!(%table, %group, position, "rebuilt a lost coding shard");
                    report.shards_rebuilt += 1;
                }
                Err(f) => fail(
                    &mut report,
                    format!("shard {position} of group {group}: {}", failure_text(&f)),
                ),
            }
        }
        report
    }

    /// `k` shards of the group `listed` names (its ECMeta when the key list was sent)
    /// other than `slot`, all of the group's newest epoch, with that epoch's ECMeta. Empty
    /// data slots cost nothing; data shards are asked for before parity.
    async fn gather_shards(
        &self,
        table: TableKey,
        listed: &EcMeta,
        slot: u8,
    ) -> Result<(EcMeta, Vec<(u8, Vec<u8>)>), Failure> {
        let unavailable = |why: String| Failure::Storage(format!("rebuilding a shard: {why}"));
        let hosts: HashMap<HostId, Endpoint> = self
            .inner
            .membership
            .lock()
            .states()
            .map(|s| (s.app.host_id, s.endpoint))
            .collect();
        let timeout = self.inner.config.repair_timeout_ms;
        // The newest ECMeta the list or any live member holds (parity nodes have the
        // group's newest; with them down, data nodes may hold only older ones).
        let mut meta = listed.clone();
        for shard in &listed.shards {
            let Some(&to) = hosts.get(&shard.node) else {
                continue;
            };
            if !self.is_alive(to) {
                continue;
            }
            let ask = Body::EcMetaRead {
                table,
                group: listed.group,
            };
            if let Some(Body::EcMetaData { meta: Some(bytes) }) =
                self.call_timeout(to, ask, timeout).await
            {
                if let Ok(m) = EcMeta::decode(&bytes) {
                    if m.epoch > meta.epoch {
                        meta = m;
                    }
                }
            }
        }
        let lost = usize::from(slot);
        let (Some(want), Some(was)) = (meta.shards.get(lost), listed.shards.get(lost)) else {
            return Err(unavailable(format!("slot {slot} is not in its group")));
        };
        if want.hash != was.hash {
            return Err(unavailable(format!(
                "the coded table in slot {slot} of group {} (epoch {} when its key list was \
                 sent) was replaced by epoch {}",
                hex(&listed.group),
                listed.epoch,
                meta.epoch
            )));
        }
        let k = usize::from(meta.k);
        let mut shards: Vec<(u8, Vec<u8>)> = Vec::with_capacity(k);
        let mut candidates: Vec<(u8, Endpoint)> = Vec::new();
        for shard in meta.shards.iter().filter(|s| s.position != slot) {
            if shard.position < meta.k && shard.size == 0 {
                // An empty slot is all zeros: nothing to fetch.
                if shards.len() < k {
                    shards.push((shard.position, Vec::new()));
                }
                continue;
            }
            if let Some(&to) = hosts.get(&shard.node).filter(|to| self.is_alive(**to)) {
                candidates.push((shard.position, to));
            }
        }
        // Data shards come first in position order; the rest are asked for only as answers
        // fail, `k` in flight at most.
        let mut next = candidates.into_iter();
        let mut calls = FuturesUnordered::new();
        let ask = |(position, to): (u8, Endpoint)| {
            let body = Body::EcShardRead {
                table,
                group: meta.group,
                position,
            };
            self.call_timeout(to, body, timeout)
                .map(move |answer| (position, answer))
        };
        while shards.len() + calls.len() < k {
            match next.next() {
                Some(c) => calls.push(ask(c)),
                None => break,
            }
        }
        let mut missed: Vec<String> = Vec::new();
        while let Some((position, answer)) = calls.next().await {
            match answer {
                // A parity shard of another epoch would rebuild other bytes.
                Some(Body::EcShard {
                    shard: Some((epoch, bytes)),
                }) if position < meta.k || epoch == meta.epoch => shards.push((position, bytes)),
                Some(Body::EcShard {
                    shard: Some((epoch, _)),
                }) => missed.push(format!(
                    "shard {position} is at epoch {epoch}, not {}",
                    meta.epoch
                )),
                Some(Body::EcShard { shard: None }) => {
                    missed.push(format!("shard {position}'s node does not hold it"))
                }
                Some(Body::Failed(f)) => {
                    missed.push(format!("shard {position}: {}", failure_text(&f)))
                }
                _ => missed.push(format!("shard {position}'s node did not answer")),
            }
            if shards.len() == k {
                break;
            }
            while shards.len() + calls.len() < k {
                match next.next() {
                    Some(c) => calls.push(ask(c)),
                    None => break,
                }
            }
        }
        if shards.len() < k {
            let why = if missed.is_empty() {
                String::new()
            } else {
                format!(" ({})", missed.join("; "))
            };
            return Err(unavailable(format!(
                "only {} of the {k} shards needed to rebuild the rows are reachable{why}",
                shards.len()
            )));
        }
        Ok((meta, shards))
    }

    /// Secondary removal, data node: sends each coded table's key list, split by the
    /// nodes holding redundant copies of its keys, and records the table as listed once
    /// all of them stored theirs. A key whose primary is no longer this node (the ring
    /// changed) is left out: its secondaries keep it.
    async fn send_key_lists(&self, table: TableKey, rf: usize, me: HostId) {
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
                let replicas = ring.replicas(token, rf);
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
