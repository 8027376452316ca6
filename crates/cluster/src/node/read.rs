//! The coordinator's read path: a range is read segment by segment of the ring; per
//! segment, data from the replica the selector ranks first and digests from the next
//! block-for − 1 (Cassandra's read executor); a digest mismatch reads data from all of them,
//! merges by the row layer's last-write-wins and writes the merged rows back to the stale
//! replicas before answering (blocking read repair). The keys whose answers disagreed (a
//! replica lacked the entry or held another version) are reported with the answer, so a
//! read through an index re-reads only those (replica filtering protection).

use super::*;

/// The digest of a read answer.
pub fn digest(entries: &[(Vec<u8>, Vec<u8>)], exhausted: bool) -> [u8; 16] {
    let mut h = xxhash_rust::xxh3::Xxh3::new();
    for (k, v) in entries {
        h.update(&(k.len() as u64).to_le_bytes());
        h.update(k);
        h.update(&(v.len() as u64).to_le_bytes());
        h.update(v);
    }
    h.update(&[u8::from(exhausted)]);
    h.digest128().to_le_bytes()
}

/// The engine timestamp of a merged fragment (its newest part).
pub(super) fn fragment_ts(bytes: &[u8]) -> u64 {
    Fragment::decode(bytes)
        .ok()
        .and_then(|f| f.max_timestamp())
        .map_or(0, |t| t.to_engine())
}

/// The entries of `merged` a replica that answered `had` lacks or holds an older version
/// of, as writes that bring it up to date.
pub(super) fn stale_entries(
    had: &[(Vec<u8>, Vec<u8>)],
    merged: &[(Vec<u8>, Vec<u8>)],
) -> Vec<WireMutation> {
    let had: HashMap<&[u8], &[u8]> = had
        .iter()
        .map(|(k, v)| (k.as_slice(), v.as_slice()))
        .collect();
    merged
        .iter()
        .filter(|(k, v)| had.get(k.as_slice()) != Some(&v.as_slice()))
        .map(|(k, v)| WireMutation {
            key: k.clone(),
            ts: fragment_ts(v),
            fragment: v.clone(),
        })
        .collect()
}

/// The keys of `merged` that some answer lacks or holds another version of: those the
/// replicas disagreed on (an answer that matched the merged entry did not).
pub fn disputed_keys(answers: &[Entries], merged: &[(Vec<u8>, Vec<u8>)]) -> Vec<Vec<u8>> {
    let mut disputed: Vec<Vec<u8>> = Vec::new();
    for (entries, _) in answers {
        disputed.extend(stale_entries(entries, merged).into_iter().map(|m| m.key));
    }
    disputed.sort_unstable();
    disputed.dedup();
    disputed
}

/// A read's answer: its entries, whether the range is done, and the keys among the entries
/// whose replicas disagreed ([`disputed_keys`]; empty when every replica asked answered
/// alike).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReadAnswer {
    /// The merged entries, in key order.
    pub entries: Vec<(Vec<u8>, Vec<u8>)>,
    /// Whether the range holds no more entries than these.
    pub exhausted: bool,
    /// Keys of `entries` the replicas' answers disagreed on, in key order.
    pub disputed: Vec<Vec<u8>>,
}

/// Merges several replicas' answers to one read of up to `limit` entries: per key, the
/// row layer's merge; only keys every non-exhausted answer covered (a replica that
/// stopped at its limit says nothing of the keys after its last one); at most `limit`.
pub fn merge_answers(answers: &[Entries], limit: usize) -> Entries {
    let cutoff: Option<&Vec<u8>> = answers
        .iter()
        .filter(|(entries, exhausted)| !exhausted && !entries.is_empty())
        .filter_map(|(entries, _)| entries.last().map(|(k, _)| k))
        .min();
    let mut merged: BTreeMap<&[u8], Vec<u8>> = BTreeMap::new();
    for (entries, _) in answers {
        for (k, v) in entries {
            if cutoff.is_some_and(|c| k > c) {
                continue;
            }
            match merged.get_mut(k.as_slice()) {
                None => {
                    merged.insert(k, v.clone());
                }
                Some(existing) if existing == v => {}
                Some(existing) => {
                    let combined = match (Fragment::decode(existing), Fragment::decode(v)) {
                        (Ok(a), Ok(b)) => merge_fragments(&a, &b).encode(),
                        // Undecodable bytes: the newer-looking one wins whole, as the
                        // engine's fallback does, and the read reports nothing worse.
                        (Err(_), Ok(_)) => v.clone(),
                        _ => existing.clone(),
                    };
                    *existing = combined;
                }
            }
        }
    }
    let any_short = answers.iter().any(|(_, exhausted)| !exhausted);
    let truncated = merged.len() > limit;
    let entries: Vec<(Vec<u8>, Vec<u8>)> = merged
        .into_iter()
        .take(limit)
        .map(|(k, v)| (k.to_vec(), v))
        .collect();
    (entries, !any_short && !truncated)
}

/// Which replicas a read should ask first, whatever the selector says.
struct Prefer {
    /// Erasure-tiered rows: the primary, or this replica when its copy is whole.
    first: Option<Endpoint>,
    /// Per replica position, the store's estimated cost (heterogeneous replicas).
    costs: Option<Vec<f64>>,
}

impl Node {
    /// Reads up to `limit` entries of `range` of `table` at `cl` (see the module doc).
    pub async fn read(
        &self,
        table: TableKey,
        range: KeyRange,
        limit: usize,
        cl: ConsistencyLevel,
    ) -> Result<Entries, ClusterError> {
        let answer = self
            .read_tagged(table, range, limit, cl, Vec::new())
            .await?;
        Ok((answer.entries, answer.exhausted))
    }

    /// [`Node::read`] with `tags` the caller attaches (e.g. a clustering filter): they
    /// travel to every replica asked, after the selector's own, and the store may cost
    /// replicas by them ([`crate::Store::replica_costs`]).
    pub async fn read_tagged(
        &self,
        table: TableKey,
        range: KeyRange,
        limit: usize,
        cl: ConsistencyLevel,
        tags: Vec<Tag>,
    ) -> Result<ReadAnswer, ClusterError> {
        let placement = self.placement(table)?;
        if limit == 0 {
            return Ok(ReadAnswer::default());
        }
        let segments = self.ring().segments_placed(&range, &placement);
        let count = segments.len();
        let mut out: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
        let mut disputed: Vec<Vec<u8>> = Vec::new();
        for (i, mut seg) in segments.into_iter().enumerate() {
            // A segment may answer fewer entries than asked without being done (a merge of
            // replicas that stopped at different keys): read on from its last key, so the
            // caller gets `limit` entries unless the whole range is exhausted.
            loop {
                let want = limit - out.len();
                let piece = Segment {
                    range: seg.range.clone(),
                    replicas: seg.replicas.clone(),
                };
                let ((entries, exhausted), seg_disputed) = self
                    .read_segment(table, piece, want, &placement, cl, &tags)
                    .await?;
                let next = entries.last().map(|(k, _)| repair::successor(k));
                out.extend(entries);
                disputed.extend(seg_disputed);
                if out.len() >= limit {
                    return Ok(ReadAnswer {
                        entries: out,
                        exhausted: exhausted && i + 1 == count,
                        disputed,
                    });
                }
                match next {
                    Some(start) if !exhausted => seg.range.start = start,
                    _ => break,
                }
            }
        }
        Ok(ReadAnswer {
            entries: out,
            exhausted: true,
            disputed,
        })
    }

    /// Reads one segment of the ring (one replica set) at `cl`, with the keys the
    /// replicas disagreed on.
    pub(super) async fn read_segment(
        &self,
        table: TableKey,
        seg: Segment,
        limit: usize,
        placement: &ReplicationStrategy,
        cl: ConsistencyLevel,
        extra: &[Tag],
    ) -> Result<(Entries, Vec<Vec<u8>>), ClusterError> {
        let ring = self.ring();
        let quorum = self.quorum(cl, placement, &ring, &seg.replicas);
        let block_for = quorum.block_for();
        // Erasure-tiered rows whose copy here a coding group covers are the primary's to
        // answer; so is a read from a coordinator holding no replica (a secondary it
        // picked might relay). A replica with the rows whole — the primary, or a secondary
        // whose copy is not covered — reads them itself: a secondary the replica selector
        // preferred would relay to the primary again. This node as the segment's primary
        // holds its rows whole by definition (only a secondary's copy is ever covered):
        // the coverage check, a role computation and a key-list lookup, is skipped for
        // the common case of a client that sends reads to the primary.
        let me = self.endpoint();
        let first = if !self.inner.store.reads_prefer_primary(table) {
            None
        } else if seg.replicas.first() == Some(&me)
            || (seg.replicas.contains(&me) && !self.inner.store.ec_covers(table, &seg.range))
        {
            Some(me)
        } else {
            seg.replicas.first().copied()
        };
        let costs = self
            .inner
            .store
            .replica_costs(table, extra, limit, placement.total());
        let prefer = Prefer { first, costs };
        let (targets, spare, mut tags) =
            self.read_targets(table, &seg, limit, cl, &quorum, prefer)?;
        tags.extend_from_slice(extra);
        // A policy that limits its sending rate (C3's) may hold a read whose replicas are
        // all at their limit, for one interval at most; the read's latency counts from
        // when it is sent.
        let mut started = self.inner.runtime.now_micros();
        let hold = self
            .inner
            .selector
            .hold_micros(&mut targets.iter().chain(&spare).copied(), started);
        if hold > 0 {
            self.inner.runtime.sleep(hold.div_ceil(1000)).await;
            started = self.inner.runtime.now_micros();
        }
        let read = SegmentRead {
            table,
            range: WireRange {
                start: seg.range.start.clone(),
                end: seg.range.end.clone(),
            },
            limit: u32::try_from(limit).unwrap_or(u32::MAX),
            tags,
        };
        let policy = self.inner.store.speculative_retry(table);
        let (data, digests, answered, _first_round) = self
            .data_and_digests(&read, &targets, &spare, &policy, cl, block_for)
            .await?;
        // Only percentile policies read the latencies: the others skip the lock.
        if matches!(
            policy,
            SpeculativeRetry::Percentile(_) | SpeculativeRetry::Hybrid { .. }
        ) {
            let now = self.inner.runtime.now_micros();
            self.inner
                .latencies
                .record(table, now.saturating_sub(started), now);
        }
        if digests.is_empty() {
            return Ok((data, Vec::new()));
        }
        let expected = digest(&data.0, data.1);
        if digests.iter().all(|d| *d == expected) {
            return Ok((data, Vec::new()));
        }
        self.resolve_mismatch(&read, &answered, limit, cl, block_for)
            .await
    }

    /// The live replicas `quorum` counts, in the order to ask them: the targets (`block_for`
    /// of them — for `EACH_QUORUM`, each datacenter's quorum) and the rest, spare for
    /// speculation (none for `EACH_QUORUM`, whose spares could not stand in for another
    /// datacenter's); with the tags the selector attached; `Unavailable` when too few are
    /// alive. The selector orders them, then this node's datacenter's go first (as
    /// Cassandra's snitch ranks by proximity); `first` (for erasure-tiered rows: the
    /// primary, or this replica when its copy is whole) goes first when alive; `costs`
    /// (per replica position) puts the cheapest first.
    #[allow(clippy::type_complexity)] // Targets, spares, tags.
    fn read_targets(
        &self,
        table: TableKey,
        seg: &Segment,
        limit: usize,
        cl: ConsistencyLevel,
        quorum: &Quorum,
        prefer: Prefer,
    ) -> Result<(Vec<Endpoint>, Vec<Endpoint>, Vec<Tag>), ClusterError> {
        let Prefer { first, costs } = prefer;
        let mut live: Vec<Endpoint> = {
            let m = self.inner.membership.lock();
            seg.replicas
                .iter()
                .copied()
                .filter(|r| quorum.counts(*r) && m.is_alive(*r))
                .collect()
        };
        quorum.check_live(cl, &live)?;
        let ring = self.ring();
        let info = ReadInfo {
            table,
            key: &seg.range.start,
            limit,
            now_micros: self.inner.runtime.now_micros(),
            nodes: self.ring().nodes().len(),
        };
        let selector = &self.inner.selector;
        let mut tags = selector.order(&mut live, self.endpoint(), &info);
        self.local_first(&ring, &mut live);
        tags.extend(crate::selection::facts::tag(selector.facts_wanted()));
        if let (Some(tagger), Some(token)) =
            (self.inner.tagger.get(), partition_token(&seg.range.start))
        {
            tags.extend(tagger.tags(table, token));
        }
        // Replicas that store rows differently answer at different costs: the cheapest
        // first (stable, so the selector's order breaks ties).
        if let Some(costs) = costs {
            let cost = |r: &Endpoint| {
                seg.replicas
                    .iter()
                    .position(|x| x == r)
                    .and_then(|i| costs.get(i).copied())
                    .unwrap_or(f64::INFINITY)
            };
            live.sort_by(|a, b| cost(a).total_cmp(&cost(b)));
        }
        if let Some(i) = first.and_then(|p| live.iter().position(|r| *r == p)) {
            if let Some(head) = live.get_mut(..=i) {
                head.rotate_right(1);
            }
        }
        if quorum.groups() == 1 {
            let spare = live.split_off(quorum.block_for().min(live.len()));
            return Ok((live, spare, tags));
        }
        // EACH_QUORUM: each datacenter's first `need` in that order.
        let mut taken = vec![0usize; quorum.groups()];
        live.retain(|r| {
            let Some(n) = quorum
                .group_of(*r)
                .and_then(|g| Some((taken.get_mut(g)?, quorum.need(g))))
            else {
                return false;
            };
            let keep = *n.0 < n.1;
            *n.0 += usize::from(keep);
            keep
        });
        Ok((live, Vec::new(), tags))
    }

    /// First round: data from the first target, digests from the others, until
    /// `block_for` answered. A replica that fails (or whose connection is lost) is replaced
    /// by a spare one at once, and when the table's `speculative_retry` delay passes
    /// before enough answered, one spare is asked too (for data when no data came yet) —
    /// Cassandra's speculative retry; with `NEVER`, neither. Returns the data, the digests,
    /// the replicas that answered, and the round's calls and deadline: the caller keeps
    /// them until the segment's read ends (dropping them earlier cancels the round's timer
    /// sooner, which changes a simulated run's schedule and so what an existing seed
    /// replays).
    async fn data_and_digests(
        &self,
        read: &SegmentRead,
        targets: &[Endpoint],
        spare: &[Endpoint],
        policy: &SpeculativeRetry,
        cl: ConsistencyLevel,
        block_for: usize,
    ) -> Result<(Entries, Vec<[u8; 16]>, Vec<Endpoint>, RoundInFlight), ClusterError> {
        let mut calls: FuturesUnordered<CallFuture> = targets
            .iter()
            .enumerate()
            .map(|(i, r)| self.call(*r, read.body(i > 0)))
            .collect();
        let mut asked = Asked {
            data: targets.first().copied().into_iter().collect(),
            outstanding: targets.len(),
            data_outstanding: usize::from(!targets.is_empty()),
        };
        let mut deadline = self.inner.runtime.sleep(self.inner.config.read_timeout_ms);
        let speculating = *policy != SpeculativeRetry::Never && !spare.is_empty();
        let mut spare = spare.iter().copied();
        let mut speculation = if speculating {
            let latencies = &self.inner.latencies;
            let now = self.inner.runtime.now_micros();
            policy
                .delay_ms(|q| latencies.quantile_ms(read.table, q, now))
                .map(|ms| self.inner.runtime.sleep(ms.ceil() as u64))
        } else {
            None
        };
        let mut data: Option<Entries> = None;
        let mut digests: Vec<[u8; 16]> = Vec::new();
        let mut answered: Vec<Endpoint> = Vec::new();
        let mut failures: Vec<Failure> = Vec::new();
        // Digests alone never end the read: it waits for a data answer as well (a digest
        // that came first, from a spare asked after the data replica failed, once ended
        // a read at ONE with nothing to return).
        while data.is_none() || 1 + digests.len() < block_for {
            let event = match speculation.as_mut() {
                Some(timer) => {
                    let next = std::pin::pin!(next_before(&mut calls, &mut deadline));
                    match select(timer, next).await {
                        Either::Left(_) => None,
                        Either::Right((event, _)) => Some(event),
                    }
                }
                None => Some(next_before(&mut calls, &mut deadline).await),
            };
            let failed = match event {
                // The speculation delay passed: one more replica, once.
                None => {
                    speculation = None;
                    if let Some(r) = spare.next() {
                        self.inner
                            .counters
                            .speculative_reads
                            .fetch_add(1, Ordering::Relaxed);
                        asked.ask(self, &mut calls, read, r, data.is_none());
                    }
                    continue;
                }
                Some(Some(Some((from, Ok(Body::ReadData { entries, exhausted }))))) => {
                    self.learn_size(read, &entries);
                    asked.answered(from);
                    answered.push(from);
                    if data.is_none() {
                        data = Some((entries, exhausted));
                    } else {
                        // A second data answer (a spare asked for data): its digest.
                        digests.push(digest(&entries, exhausted));
                    }
                    continue;
                }
                Some(Some(Some((from, Ok(Body::ReadDigest { digest }))))) => {
                    asked.answered(from);
                    answered.push(from);
                    digests.push(digest);
                    continue;
                }
                Some(Some(Some((from, Ok(Body::Failed(f)))))) => (from, f),
                Some(Some(Some((from, Err(NoAnswer::Dropped))))) => (
                    from,
                    Failure::Storage(format!("no answer from {from}: its connection is lost")),
                ),
                Some(Some(Some(_))) => continue,
                Some(Some(None)) | Some(None) => {
                    return Err(ClusterError::ReadTimeout {
                        consistency: cl,
                        received: data.is_some() as usize + digests.len(),
                        block_for,
                        data_present: data.is_some(),
                    });
                }
            };
            let (from, failure) = failed;
            failures.push(failure);
            asked.answered(from);
            // A spare replaces it, for data while none has come (as a speculative request
            // is: the data request still out may be the slow one speculation went around).
            if let Some(r) = spare.next().filter(|_| speculating) {
                self.inner
                    .counters
                    .speculative_failovers
                    .fetch_add(1, Ordering::Relaxed);
                asked.ask(self, &mut calls, read, r, data.is_none());
                continue;
            }
            // No spare: fail unless the requests still out can complete the read (a spare
            // asked earlier, on speculation, may).
            let received = data.is_some() as usize + digests.len();
            if received + asked.outstanding < block_for
                || (data.is_none() && asked.data_outstanding == 0)
            {
                return Err(read_failure(cl, digests.len(), block_for, failures));
            }
        }
        match data {
            Some(data) => Ok((data, digests, answered, RoundInFlight(calls, deadline))),
            None => Err(ClusterError::ReadTimeout {
                consistency: cl,
                received: digests.len(),
                block_for,
                data_present: false,
            }),
        }
    }

    /// Digests disagreed: full data from every target, merged, and written back where
    /// stale before answering; with the keys the answers disagreed on.
    async fn resolve_mismatch(
        &self,
        read: &SegmentRead,
        targets: &[Endpoint],
        limit: usize,
        cl: ConsistencyLevel,
        block_for: usize,
    ) -> Result<(Entries, Vec<Vec<u8>>), ClusterError> {
        let mut calls: FuturesUnordered<CallFuture> = targets
            .iter()
            .map(|r| self.call(*r, read.body(false)))
            .collect();
        let mut deadline = self.inner.runtime.sleep(self.inner.config.read_timeout_ms);
        let mut answers: Vec<(Endpoint, Entries)> = Vec::new();
        while answers.len() < targets.len() {
            match next_before(&mut calls, &mut deadline).await {
                Some(Some((from, Ok(Body::ReadData { entries, exhausted })))) => {
                    answers.push((from, (entries, exhausted)));
                }
                Some(Some((_, Ok(Body::Failed(f))))) => {
                    return Err(read_failure(cl, answers.len(), block_for, vec![f]));
                }
                Some(Some(_)) => {}
                Some(None) | None => {
                    return Err(ClusterError::ReadTimeout {
                        consistency: cl,
                        received: answers.len(),
                        block_for,
                        data_present: true,
                    });
                }
            }
        }
        let all: Vec<Entries> = answers.iter().map(|(_, e)| e.clone()).collect();
        let merged = merge_answers(&all, limit);
        let disputed = disputed_keys(&all, &merged.0);
        self.repair_replicas(read.table, &answers, &merged.0, cl, block_for)
            .await?;
        Ok((merged, disputed))
    }

    /// Writes `merged` to each replica whose answer differed, and waits for them.
    pub(super) async fn repair_replicas(
        &self,
        table: TableKey,
        answers: &[(Endpoint, Entries)],
        merged: &[(Vec<u8>, Vec<u8>)],
        cl: ConsistencyLevel,
        block_for: usize,
    ) -> Result<(), ClusterError> {
        let mut calls: FuturesUnordered<CallFuture> = FuturesUnordered::new();
        for (replica, (entries, _)) in answers {
            let stale = stale_entries(entries, merged);
            if !stale.is_empty() {
                calls.push(self.call(
                    *replica,
                    Body::Write {
                        table,
                        mutations: stale,
                    },
                ));
            }
        }
        let expected = calls.len();
        let mut done = 0;
        let mut deadline = self.inner.runtime.sleep(self.inner.config.read_timeout_ms);
        while done < expected {
            match next_before(&mut calls, &mut deadline).await {
                Some(Some((_, Ok(Body::WriteAck)))) => done += 1,
                Some(Some(_)) | Some(None) | None => {
                    return Err(ClusterError::ReadTimeout {
                        consistency: cl,
                        received: block_for.saturating_sub(1),
                        block_for,
                        data_present: true,
                    });
                }
            }
        }
        Ok(())
    }
}

/// What a read round asked: who was asked for data, and how many requests (and of those,
/// data requests) are still unanswered.
struct Asked {
    data: Vec<Endpoint>,
    outstanding: usize,
    data_outstanding: usize,
}

impl Asked {
    /// Asks `r` too, for data or a digest.
    fn ask(
        &mut self,
        node: &Node,
        calls: &mut FuturesUnordered<CallFuture>,
        read: &SegmentRead,
        r: Endpoint,
        want_data: bool,
    ) {
        if want_data {
            self.data.push(r);
            self.data_outstanding += 1;
        }
        self.outstanding += 1;
        calls.push(node.call(r, read.body(!want_data)));
    }

    /// `from` answered (or failed).
    fn answered(&mut self, from: Endpoint) {
        self.outstanding = self.outstanding.saturating_sub(1);
        if self.data.contains(&from) {
            self.data_outstanding = self.data_outstanding.saturating_sub(1);
        }
    }
}

/// A finished round's outstanding calls and its deadline, held until the read ends.
struct RoundInFlight(
    #[allow(dead_code)] FuturesUnordered<CallFuture>,
    #[allow(dead_code)] BoxFuture<'static, ()>,
);

/// The token at the front of `key` (`None` for a key too short: a range starting at no
/// key).
fn partition_token(key: &[u8]) -> Option<i64> {
    mosaic_rows::key::decode_token(key).ok().map(|t| t.0)
}

impl Node {
    /// Teaches the item-size oracle the size of an answer, when it is the answer for the
    /// partition the read started at (a range scan's segment starts between partitions).
    fn learn_size(&self, read: &SegmentRead, entries: &[(Vec<u8>, Vec<u8>)]) {
        let Some(tagger) = self.inner.tagger.get() else {
            return;
        };
        let start = partition_token(&read.range.start);
        let first = entries.first().and_then(|(k, _)| partition_token(k));
        if let (Some(start), Some(first)) = (start, first) {
            if start == first {
                let bytes: usize = entries.iter().map(|(k, v)| k.len() + v.len()).sum();
                tagger.learn(read.table, start, bytes as u64);
            }
        }
    }
}

/// What every replica of one segment read is asked.
struct SegmentRead {
    table: TableKey,
    range: WireRange,
    limit: u32,
    tags: Vec<Tag>,
}

impl SegmentRead {
    /// The request, for data or for a digest of it.
    fn body(&self, digest: bool) -> Body {
        Body::Read {
            table: self.table,
            range: self.range.clone(),
            limit: self.limit,
            digest,
            tags: self.tags.clone(),
        }
    }
}

fn read_failure(
    cl: ConsistencyLevel,
    received: usize,
    block_for: usize,
    failures: Vec<Failure>,
) -> ClusterError {
    match failures.first() {
        Some(Failure::Overloaded) => {
            ClusterError::Overloaded(format!("A replica was overloaded reading at {}", cl.name()))
        }
        f => ClusterError::ReadFailure {
            consistency: cl,
            received,
            block_for,
            failed: failures.len(),
            reason: f.map(failure_text).unwrap_or_default(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(k: &str, v: &str) -> (Vec<u8>, Vec<u8>) {
        (k.as_bytes().to_vec(), v.as_bytes().to_vec())
    }

    /// A key is disputed when some answer lacks it (within what every answer covered) or
    /// holds another version; answers that agree dispute nothing.
    #[test]
    fn disputed_keys_are_those_some_answer_lacks_or_differs_on() {
        let a = (
            vec![entry("a", "1"), entry("b", "1"), entry("c", "1")],
            true,
        );
        assert!(disputed_keys(&[a.clone(), a.clone()], &a.0).is_empty());
        let b = (
            vec![entry("a", "1"), entry("c", "2"), entry("d", "1")],
            true,
        );
        let merged = vec![
            entry("a", "1"),
            entry("b", "1"),
            entry("c", "2"),
            entry("d", "1"),
        ];
        let keys: Vec<Vec<u8>> = ["b", "c", "d"]
            .iter()
            .map(|k| k.as_bytes().to_vec())
            .collect();
        assert_eq!(disputed_keys(&[a, b], &merged), keys);
    }
}
