//! Reading and rebuilding what a node lost (ELECT §5): reads of rows a coding group covers
//! (a secondary asks their primary, or decodes them when it is down — a degraded read,
//! stripe by stripe), and full-node recovery of a node's coding shards.

use std::collections::HashSet;

use mosaic_erasure::{Codec, EcMeta, LostRead, LOST_PIECE_BYTES, LOST_READ_BYTES};
use mosaic_types::HostId;

use super::elect::RELAY_TAG;
use super::*;
use crate::message::Tag;

/// Rounds of fetching stripes one degraded read of one lost table may take (a point read
/// takes about three: the footer's stripe, the index's, the key's block's).
const LOST_READ_ROUNDS_MAX: usize = 64;
/// Spans a scan of a lost table fetches at most at once (the span doubles while the scan
/// keeps asking for the bytes right after the last span).
const LOST_READ_AHEAD_MAX: u64 = 4;
/// Bytes at the end of a lost table its first read fetches at once: the footer, index,
/// filter and properties a table reader opens with, in one round for tables of a few MiB.
const LOST_READ_TAIL: u64 = 128 << 10;
/// How long a lost slot's resolved sources serve further degraded reads before the
/// group's members are asked for its newest ECMeta again (a fetch that fails on them asks
/// at once).
const LOST_SOURCES_TTL_MICROS: u64 = 2_000_000;

/// Bytes of a lost table one step of decoding ahead of degraded reads fetches (from `k`
/// shards at once): what one degraded read's miss fetches.
const DECODE_AHEAD_SPAN: u64 = LOST_READ_BYTES;

/// How long a degraded read whose freshly resolved sources could not rebuild a slot waits
/// before resolving them again (a group change under way commits in a round trip).
const SOURCES_RETRY_PAUSE_MS: u64 = 200;

/// A group's shards a lost one is rebuilt from: the newest ECMeta, the nodes holding
/// shards other than the lost one (data first, in position order), and the empty slots
/// (all zeros, nothing to fetch).
pub(super) struct Sources {
    meta: EcMeta,
    candidates: Vec<(u8, Endpoint)>,
    empty: Vec<u8>,
}

/// What degraded reads share: the sources of lost slots resolved recently (by `(table,
/// group, slot)`, with when; each degraded read would otherwise ask every member of its
/// group for the newest ECMeta), the fetches in flight (by slot and span), and the lost
/// slots being decoded ahead of reads.
#[derive(Default)]
pub(super) struct LostReads {
    sources: parking_lot::Mutex<HashMap<LostSlot, (Arc<Sources>, u64)>>,
    fetches: parking_lot::Mutex<HashMap<LostSpan, SharedFetch>>,
    ahead: parking_lot::Mutex<HashSet<LostSlot>>,
    /// Degraded reads waiting for a fetch: decoding ahead waits while any does.
    waiting: std::sync::atomic::AtomicUsize,
}

/// How often decoding ahead looks whether degraded reads still wait for fetches.
const AHEAD_YIELD_MS: u64 = 2;

/// Counts a degraded read waiting for a fetch while it lives.
struct Waiting<'a>(&'a std::sync::atomic::AtomicUsize);

impl<'a> Waiting<'a> {
    fn new(count: &'a std::sync::atomic::AtomicUsize) -> Waiting<'a> {
        count.fetch_add(1, Ordering::SeqCst);
        Waiting(count)
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A fetch of a lost table's span that several reads wait for.
type SharedFetch =
    futures::future::Shared<futures::future::BoxFuture<'static, Result<LostRead, Failure>>>;

/// A lost slot: `(table, group, slot)`.
type LostSlot = (TableKey, [u8; 16], u8);

/// A span of a lost slot: `(table, group, slot, first byte, end)`.
type LostSpan = (TableKey, [u8; 16], u8, u64, u64);

impl Node {
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
        let placement = store.placement(table).ok_or(Failure::UnknownTable)?;
        let mut primaries: Vec<Endpoint> = self
            .ring()
            .segments_placed(&range, &placement)
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
            return self
                .degraded_read(table, range, limit, local, primary)
                .await;
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
            _ => {
                self.degraded_read(table, range, limit, local, primary)
                    .await
            }
        }
    }

    /// ELECT's degraded read (§5): `local` (this secondary's own versions of `range`)
    /// merged with the covered rows read from their lost tables — decoded, only the stripes
    /// the read touches, from any `k` of each group's other shards, and kept decoded for
    /// the next reads. A lost table a read had to decode stripes of is then decoded
    /// ahead of further reads ([`Node::decode_ahead`]) while `primary` stays down.
    async fn degraded_read(
        &self,
        table: TableKey,
        range: KeyRange,
        limit: usize,
        local: Entries,
        primary: Endpoint,
    ) -> Result<Entries, Failure> {
        let result = async {
            let mut answers = vec![local];
            for (listed, slot) in self.inner.store.ec_covering(table, range.clone()).await? {
                let (rows, fetched) = self.read_lost(table, &listed, slot, &range, limit).await?;
                if fetched {
                    self.decode_ahead(table, listed, slot, primary);
                }
                answers.push(rows);
            }
            Ok(merge_answers(&answers, limit))
        }
        .await;
        if let Err(f) = &result {
            tracing::warn!(%table, error = failure_text(f), "a degraded read failed");
        }
        result
    }

    /// Up to `limit` rows of `range` from the table in `slot` of the group `listed` names:
    /// read from the pieces of it decoded before, fetching (from `k` other shards) and
    /// decoding the spans the read still needs (`true`: it needed some). Reads needing a
    /// span another read (or decoding ahead) is already fetching wait for that fetch
    /// instead of fetching it again.
    async fn read_lost(
        &self,
        table: TableKey,
        listed: &EcMeta,
        slot: u8,
        range: &KeyRange,
        limit: usize,
    ) -> Result<(Entries, bool), Failure> {
        let store = &self.inner.store;
        let granule = LOST_READ_BYTES;
        let size = listed
            .shards
            .get(usize::from(slot))
            .map_or(0, |s| s.size as usize);
        let coded_end = Codec::coded_len(size) as u64;
        let mut last_end = None;
        let mut ahead = 1;
        let mut read = store
            .ec_read_lost(table, (listed.clone(), slot), None, range.clone(), limit)
            .await?;
        for round in 0..LOST_READ_ROUNDS_MAX {
            let span = match read {
                LostRead::Rows(rows, done) => return Ok(((rows, done), round > 0)),
                LostRead::Need(span) => span,
            };
            // A scan asks for the bytes right after the last span: fetch more at once.
            ahead = if last_end == Some(span.start) {
                (ahead * 2).min(LOST_READ_AHEAD_MAX)
            } else {
                1
            };
            let span = if span.end == coded_end {
                // The footer: the rest of the table's metadata sits just before it.
                let tail = coded_end.saturating_sub(LOST_READ_TAIL);
                span.start.min(tail / LOST_PIECE_BYTES * LOST_PIECE_BYTES)..coded_end
            } else {
                // Whole fetch units, so reads of one unit share one fetch.
                let start = span.start / granule * granule;
                start..(start + ahead * granule).min(coded_end).max(span.end)
            };
            last_end = Some(span.end);
            let waiting = Waiting::new(&self.inner.lost.waiting);
            let (fetched, mine) = self
                .shared_fetch(table, listed, slot, span, (range, limit))
                .await;
            drop(waiting);
            if mine {
                read = fetched?;
            } else {
                // Another read's fetch: its answer was for its own keys; read again.
                read = store
                    .ec_read_lost(table, (listed.clone(), slot), None, range.clone(), limit)
                    .await?;
            }
        }
        Err(Failure::Storage(format!(
            "a degraded read of slot {slot} of group {} did not complete in \
             {LOST_READ_ROUNDS_MAX} rounds of decoding",
            hex(&listed.group)
        )))
    }

    /// Fetches `span` of the lost table in `slot` of the group `listed` names and reads
    /// `range` from it — or waits for a fetch in flight of a span holding `span` (`false`:
    /// that fetch read another range).
    async fn shared_fetch(
        &self,
        table: TableKey,
        listed: &EcMeta,
        slot: u8,
        span: std::ops::Range<u64>,
        (range, limit): (&KeyRange, usize),
    ) -> (Result<LostRead, Failure>, bool) {
        let key = (table, listed.group, slot, span.start, span.end);
        let (fetch, mine) = {
            let mut fetches = self.inner.lost.fetches.lock();
            let covering = fetches.iter().find(|((t, g, s, start, end), _)| {
                (*t, *g, *s) == (table, listed.group, slot)
                    && *start <= span.start
                    && span.end <= *end
            });
            match covering {
                Some((_, f)) => (f.clone(), false),
                None => {
                    let node = self.clone();
                    let (listed, range) = (listed.clone(), range.clone());
                    let f = async move {
                        node.fetch_lost(table, listed, slot, span, range, limit)
                            .await
                    }
                    .boxed()
                    .shared();
                    fetches.insert(key, f.clone());
                    (f, true)
                }
            }
        };
        let fetched = fetch.await;
        if mine {
            self.inner.lost.fetches.lock().remove(&key);
        }
        (fetched, mine)
    }

    /// Decodes the rest of the lost table in `slot` of the group `listed` names in the
    /// background, a span at a time, so that the reads after the one that found it lost
    /// find their stripes decoded (ELECT decodes a lost table whole on its first degraded
    /// read; here that read is answered first). At most `[cluster]
    /// degraded_read_ahead_tables` tables at once per node; stops once the table is
    /// decoded, evicted from the decoded tables, or `primary` is back. It fetches only
    /// while no degraded read waits for a fetch of its own: right after a failure every
    /// read misses, and decoding ahead then only competes with them (before this wait, the
    /// first second of a degraded pass served 3,600–4,100 reads with it, 11,800–14,200
    /// without).
    fn decode_ahead(&self, table: TableKey, listed: EcMeta, slot: u8, primary: Endpoint) {
        let key = (table, listed.group, slot);
        {
            let mut ahead = self.inner.lost.ahead.lock();
            if ahead.len() >= self.inner.config.degraded_read_ahead_tables || !ahead.insert(key) {
                return;
            }
        }
        let node = self.clone();
        self.inner.runtime.spawn(
            async move {
                let store = &node.inner.store;
                let mut from = 0;
                while !node.inner.stopped.load(Ordering::SeqCst) && !node.is_alive(primary) {
                    let next = store
                        .ec_lost_missing(table, (listed.clone(), slot), (from, DECODE_AHEAD_SPAN))
                        .await;
                    let Ok(Some(span)) = next else {
                        break;
                    };
                    from = span.end;
                    while node.inner.lost.waiting.load(Ordering::SeqCst) > 0
                        && !node.inner.stopped.load(Ordering::SeqCst)
                    {
                        node.inner.runtime.sleep(AHEAD_YIELD_MS).await;
                    }
                    let nothing = (&KeyRange::empty(), 0);
                    if let (Err(f), _) = node.shared_fetch(table, &listed, slot, span, nothing).await
                    {
                        tracing::debug!(%table, error = failure_text(&f), "decoding a lost table ahead of reads stopped");
                        break;
                    }
                }
                node.inner.lost.ahead.lock().remove(&key);
            }
            .boxed(),
        );
    }

    /// Fetches bytes `span` of the table in `slot` of the group `listed` names from `k`
    /// other shards, decodes them into its pieces and reads `range` again.
    async fn fetch_lost(
        &self,
        table: TableKey,
        listed: EcMeta,
        slot: u8,
        span: std::ops::Range<u64>,
        range: KeyRange,
        limit: usize,
    ) -> Result<LostRead, Failure> {
        let (src, cached) = self.cached_sources(table, &listed, slot).await?;
        let (src, shards) = match self.fetch_k(table, &src, Some(span.clone())).await {
            Ok(shards) => (src, shards),
            // Sources resolved a while ago may be stale, and sources resolved just now
            // may be caught by a change of the group under way (its parity nodes moved
            // to the next epoch before the leader committed its ECMeta): resolve them
            // again, once — after a pause that lets such a change commit.
            Err(_) => {
                if !cached {
                    self.inner.runtime.sleep(SOURCES_RETRY_PAUSE_MS).await;
                }
                self.forget_sources(table, &listed, slot);
                let (fresh, _) = self.cached_sources(table, &listed, slot).await?;
                let shards = self.fetch_k(table, &fresh, Some(span.clone())).await?;
                (fresh, shards)
            }
        };
        self.inner
            .store
            .ec_read_lost(
                table,
                (src.meta.clone(), slot),
                Some((span, shards)),
                range,
                limit,
            )
            .await
    }

    /// The sources of slot `slot` of the group `listed` names, resolved within the last
    /// [`LOST_SOURCES_TTL_MICROS`] (`true`: from the cache) or now.
    async fn cached_sources(
        &self,
        table: TableKey,
        listed: &EcMeta,
        slot: u8,
    ) -> Result<(Arc<Sources>, bool), Failure> {
        let key = (table, listed.group, slot);
        let now = self.inner.runtime.now_micros();
        if let Some((s, at)) = self.inner.lost.sources.lock().get(&key) {
            if now.saturating_sub(*at) < LOST_SOURCES_TTL_MICROS {
                return Ok((s.clone(), true));
            }
        }
        let fresh = Arc::new(self.sources(table, listed, slot).await?);
        let mut cache = self.inner.lost.sources.lock();
        cache.retain(|_, (_, at)| now.saturating_sub(*at) < LOST_SOURCES_TTL_MICROS);
        cache.insert(key, (fresh.clone(), now));
        Ok((fresh, false))
    }

    fn forget_sources(&self, table: TableKey, listed: &EcMeta, slot: u8) {
        self.inner
            .lost
            .sources
            .lock()
            .remove(&(table, listed.group, slot));
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
            let held = match store
                .ec_shard(table, meta.group, (position, Some(meta.epoch)))
                .await
            {
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
        let sources = self.sources(table, listed, slot).await?;
        let shards = self.fetch_k(table, &sources, None).await?;
        Ok((sources.meta, shards))
    }

    /// Where to rebuild shard `slot` of the group `listed` names from: the newest ECMeta
    /// the list or any live member holds (parity nodes have the group's newest; with them
    /// down, data nodes may hold only older ones), which must still name the same content
    /// in `slot`, and the live nodes holding its other shards.
    async fn sources(
        &self,
        table: TableKey,
        listed: &EcMeta,
        slot: u8,
    ) -> Result<Sources, Failure> {
        let unavailable = |why: String| Failure::Storage(format!("rebuilding a shard: {why}"));
        let hosts: HashMap<HostId, Endpoint> = self
            .inner
            .membership
            .lock()
            .states()
            .map(|s| (s.app.host_id, s.endpoint))
            .collect();
        let timeout = self.inner.config.repair_timeout_ms;
        let asks = listed
            .shards
            .iter()
            .filter_map(|shard| hosts.get(&shard.node).copied())
            .filter(|to| self.is_alive(*to))
            .map(|to| {
                let ask = Body::EcMetaRead {
                    table,
                    group: listed.group,
                };
                self.call_timeout(to, ask, timeout)
            });
        let mut meta = listed.clone();
        for answer in futures::future::join_all(asks).await {
            if let Some(Body::EcMetaData { meta: Some(bytes) }) = answer {
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
        let mut candidates = Vec::new();
        let mut empty = Vec::new();
        for shard in meta.shards.iter().filter(|s| s.position != slot) {
            if shard.position < meta.k && shard.size == 0 {
                empty.push(shard.position);
            } else if let Some(&to) = hosts.get(&shard.node).filter(|to| self.is_alive(**to)) {
                candidates.push((shard.position, to));
            }
        }
        Ok(Sources {
            meta,
            candidates,
            empty,
        })
    }

    /// `k` shards of `sources` at its ECMeta's epoch — whole, or bytes `span` of each —
    /// asking `k` nodes at once and the next candidates only as answers fail.
    async fn fetch_k(
        &self,
        table: TableKey,
        sources: &Sources,
        span: Option<std::ops::Range<u64>>,
    ) -> Result<Vec<(u8, Vec<u8>)>, Failure> {
        let unavailable = |why: String| Failure::Storage(format!("rebuilding a shard: {why}"));
        let meta = &sources.meta;
        let k = usize::from(meta.k);
        let timeout = self.inner.config.repair_timeout_ms;
        // An empty slot is all zeros: nothing to fetch.
        let mut shards: Vec<(u8, Vec<u8>)> = sources
            .empty
            .iter()
            .take(k)
            .map(|p| (*p, Vec::new()))
            .collect();
        let mut next = sources.candidates.iter().copied();
        let mut calls = FuturesUnordered::new();
        let ask = |(position, to): (u8, Endpoint)| {
            let body = match &span {
                None => Body::EcShardRead {
                    table,
                    group: meta.group,
                    position,
                    epoch: meta.epoch,
                },
                Some(span) => Body::EcStripeRead {
                    table,
                    group: meta.group,
                    position,
                    epoch: meta.epoch,
                    offset: span.start,
                    len: u32::try_from(span.end - span.start).unwrap_or(u32::MAX),
                },
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
            let size = meta.shards.get(usize::from(position)).map_or(0, |s| s.size);
            // A parity shard of another epoch, or a data slot holding other content,
            // would rebuild other bytes.
            let found = match answer {
                Some(Body::EcShard {
                    shard: Some((epoch, bytes)),
                }) => Ok((epoch, bytes.len() as u64, bytes)),
                Some(Body::EcStripe { shard: Some(found) }) => Ok(found),
                Some(Body::EcShard { shard: None } | Body::EcStripe { shard: None }) => {
                    Err("its node does not hold it".to_string())
                }
                Some(Body::Failed(f)) => Err(failure_text(&f)),
                _ => Err("its node did not answer".to_string()),
            };
            match found {
                Ok((_, length, bytes)) if position < meta.k && length == size => {
                    shards.push((position, bytes))
                }
                Ok((epoch, _, bytes)) if position >= meta.k && epoch == meta.epoch => {
                    shards.push((position, bytes))
                }
                Ok((epoch, length, _)) if position < meta.k => missed.push(format!(
                    "shard {position} holds {length} bytes, not {size} (epoch {epoch})"
                )),
                Ok((epoch, ..)) => missed.push(format!(
                    "shard {position} is at epoch {epoch}, not {}",
                    meta.epoch
                )),
                Err(why) => missed.push(format!("shard {position}: {why}")),
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
        Ok(shards)
    }
}
