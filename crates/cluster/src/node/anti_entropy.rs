//! Anti-entropy repair: for every token range this node replicates, the replicas' Merkle
//! trees over logical rows ([`crate::repair`]) are compared, and mismatched runs of leaves
//! are streamed: read in full from every replica, merged, and written where stale.

use super::*;
use crate::repair_stream::RangeStream;

/// Token ranges a repair works on at once.
const REPAIR_RANGES_CONCURRENT: usize = 4;
/// Paxos summaries a replica sends per page.
const PAXOS_SUMMARY_PAGE: u32 = 1024;

impl Node {
    /// Repairs `tables` over every token range this node replicates (see
    /// [`crate::repair`]). A range with a replica down is skipped and counted as failed.
    /// Callers pick `tables` after [`Node::await_schema_agreement`], so a node restarted
    /// without data repairs the tables the cluster has. An erasure-tiered table first gets
    /// back the coding shards this node lost ([`Node::ec_recover`]): rows its secondaries
    /// dropped exist nowhere else.
    pub async fn repair(&self, tables: &[TableKey]) -> RepairReport {
        tracing::info!(tables = tables.len(), "repair started");
        let mut report = RepairReport::default();
        let coded: Vec<TableKey> = self
            .inner
            .store
            .ec_tables()
            .into_iter()
            .map(|(t, _)| t)
            .collect();
        for table in tables.iter().filter(|t| coded.contains(t)) {
            report.absorb(self.ec_recover(*table).await);
        }
        for table in tables {
            let Some(placement) = self.inner.store.placement(*table) else {
                continue;
            };
            let ring = self.ring();
            let mut ranges = ring.ranges_placed(self.endpoint(), &placement).into_iter();
            let mut running = FuturesUnordered::new();
            loop {
                while running.len() < REPAIR_RANGES_CONCURRENT {
                    let Some((left, right, replicas)) = ranges.next() else {
                        break;
                    };
                    let node = self.clone();
                    let table = *table;
                    running.push(
                        async move { node.repair_range(table, left, right, &replicas).await },
                    );
                }
                let Some(one) = running.next().await else {
                    break;
                };
                self.inner
                    .counters
                    .repair_ranges
                    .fetch_add(1, Ordering::Relaxed);
                self.inner
                    .counters
                    .repair_entries
                    .fetch_add(one.entries_streamed, Ordering::Relaxed);
                report.absorb(one);
            }
        }
        tracing::info!(
            ranges = report.ranges,
            ranges_failed = report.ranges_failed,
            leaves_mismatched = report.leaves_mismatched,
            entries_streamed = report.entries_streamed,
            shards_rebuilt = report.shards_rebuilt,
            shards_failed = report.shards_failed,
            "repair finished"
        );
        report
    }

    pub(super) async fn repair_range(
        &self,
        table: TableKey,
        left: Token,
        right: Token,
        replicas: &[Endpoint],
    ) -> RepairReport {
        let mut report = RepairReport {
            ranges: 1,
            ..RepairReport::default()
        };
        let fail = |mut r: RepairReport, why: String| {
            r.ranges_failed = 1;
            r.errors
                .push(format!("range ({}, {}]: {why}", left.0, right.0));
            r
        };
        if let Some(down) = replicas.iter().find(|r| !self.is_alive(**r)) {
            return fail(report, format!("replica {down} is down"));
        }
        let depth = self.inner.config.repair_tree_depth;
        let mut trees: Vec<Vec<[u8; 16]>> = Vec::with_capacity(replicas.len());
        for r in replicas {
            let body = Body::TreeRequest {
                table,
                left: left.0,
                right: right.0,
                depth,
            };
            match self
                .call_retrying(*r, body, self.inner.config.repair_timeout_ms)
                .await
            {
                Some(Body::Tree(t)) => trees.push(t.leaves),
                Some(Body::Failed(f)) => return fail(report, format!("{r}: {}", failure_text(&f))),
                _ => return fail(report, format!("{r} did not send its tree")),
            }
        }
        let n = 1u64 << depth.min(16);
        report.leaves = n;
        // Runs of neighbouring mismatched leaves are streamed as one token range: a node
        // that lost everything is refilled with a few large reads, not one per leaf.
        // Slices with rows a coding group covers cannot be compared by hash (secondaries
        // dropped those rows); they are streamed too: a secondary's read of them relays to
        // the primary and answers with its rows, so the primary gets what only a secondary
        // holds (a write it missed) and no secondary ever gets coded rows back.
        let mismatched: Vec<u64> = (0..n)
            .filter(|i| !repair::leaves_agree(&trees, *i as usize))
            .collect();
        let streamed: Vec<u64> = (0..n)
            .filter(|i| {
                repair::leaf_covered(&trees, *i as usize)
                    || !repair::leaves_agree(&trees, *i as usize)
            })
            .collect();
        report.leaves_mismatched = mismatched.len() as u64;
        for (first, last) in repair::runs(&streamed) {
            let (l, _) = repair::slice(left, right, first, n);
            let (_, r) = repair::slice(left, right, last, n);
            for range in mosaic_rows::ring_range(l, r) {
                if let Err(why) = self.stream_range(table, range, replicas, &mut report).await {
                    return fail(report, why);
                }
            }
        }
        for range in mosaic_rows::ring_range(left, right) {
            let repaired = self
                .repair_paxos(table, range, replicas, ConsistencyLevel::All)
                .await;
            report.paxos_repaired += repaired.0;
            if let Err(why) = repaired.1 {
                return fail(report, why);
            }
        }
        report
    }

    /// Repairs the Paxos state of `range` ([`crate::paxos`], "Repair"): a round among the
    /// replicas `serial` names (every one with `All`; a move, with some down, uses
    /// `Serial`) for each partition whose summaries on `replicas` call for one; the
    /// partitions repaired, and the first failure. A round that fails (contention past
    /// its timeout) fails the range once the others were tried.
    pub(super) async fn repair_paxos(
        &self,
        table: TableKey,
        range: KeyRange,
        replicas: &[Endpoint],
        serial: ConsistencyLevel,
    ) -> (u64, Result<(), String>) {
        let mut repaired = 0;
        let mut summaries = Vec::with_capacity(replicas.len());
        for r in replicas {
            let request = |after| Body::PaxosSummaryRequest {
                table,
                range: wire_range(&range),
                after,
                limit: PAXOS_SUMMARY_PAGE,
            };
            let page = |answer| match answer {
                Body::PaxosSummaries { entries, next } => Some((entries, next)),
                _ => None,
            };
            match self.all_pages(*r, "its Paxos state", request, page).await {
                Ok(s) => summaries.push(s),
                Err(e) => return (0, Err(e)),
            }
        }
        let mut first_error = None;
        for partition in crate::paxos::partitions_to_repair(&summaries) {
            let Ok(token) = mosaic_rows::decode_token(&partition) else {
                first_error.get_or_insert_with(|| "a Paxos partition key has no token".to_owned());
                continue;
            };
            let round = self
                .paxos_begin(
                    table,
                    token,
                    partition,
                    serial,
                    ConsistencyLevel::Quorum,
                    None,
                )
                .await;
            match round {
                Ok(_) => repaired += 1,
                Err(e) => {
                    first_error.get_or_insert_with(|| format!("a Paxos round: {e}"));
                }
            }
        }
        (repaired, first_error.map_or(Ok(()), Err))
    }

    /// Every page `r` answers to a paged repair request: `request(after)` asks for the
    /// page after the key `after`, `page` takes an answer's items and where the next page
    /// starts (`None`: not the answer expected, `what` names it in the error).
    async fn all_pages<T>(
        &self,
        r: Endpoint,
        what: &str,
        request: impl Fn(Option<Vec<u8>>) -> Body,
        page: impl Fn(Body) -> Option<(Vec<T>, Option<Vec<u8>>)>,
    ) -> Result<Vec<T>, String> {
        let mut all = Vec::new();
        let mut after = None;
        loop {
            let answer = self
                .call_retrying(
                    r,
                    request(after.take()),
                    self.inner.config.repair_timeout_ms,
                )
                .await;
            match answer {
                Some(Body::Failed(f)) => return Err(format!("{r}: {}", failure_text(&f))),
                Some(answer) => match page(answer) {
                    Some((items, next)) => {
                        all.extend(items);
                        match next {
                            Some(n) => after = Some(n),
                            None => return Ok(all),
                        }
                    }
                    None => return Err(format!("{r} did not send {what}")),
                },
                None => return Err(format!("{r} did not send {what}")),
            }
        }
    }

    /// Reads `range` from every replica, merges, and writes to each replica the entries it
    /// lacked, a window at a time ([`RangeStream`]): each replica pages its entries in the
    /// order it stores them ([`Store::read_stored`]: no sorting on a replica in another
    /// clustering order), and a window is merged and written once every replica has sent
    /// all it holds below the window's end, so about a page per replica is held at once.
    pub(super) async fn stream_range(
        &self,
        table: TableKey,
        range: KeyRange,
        replicas: &[Endpoint],
        report: &mut RepairReport,
    ) -> Result<(), String> {
        let timeout = self.inner.config.repair_timeout_ms;
        let mut stream = RangeStream::new(replicas.len());
        loop {
            while let Some((i, after)) = stream.wants() {
                let Some(r) = replicas.get(i) else {
                    return Err("a replica of the range is missing".to_owned());
                };
                let request = Body::ReadStored {
                    table,
                    range: wire_range(&range),
                    after,
                    limit: repair::READ_CHUNK as u32,
                };
                match self.call_retrying(*r, request, timeout).await {
                    Some(Body::StoredData { entries, next }) => {
                        // A page that says more follows and holds nothing would never end.
                        if entries.is_empty() && next.is_some() {
                            return Err(format!("{r} sent an empty page of its rows"));
                        }
                        stream.receive(i, entries, next);
                    }
                    Some(Body::Failed(f)) => return Err(format!("{r}: {}", failure_text(&f))),
                    _ => return Err(format!("{r} did not send its rows")),
                }
            }
            let Some(window) = stream.window() else {
                return Ok(());
            };
            let answers: Vec<Entries> = window.into_iter().map(|w| (w, true)).collect();
            let (merged, _) = merge_answers(&answers, usize::MAX);
            for (r, (entries, _)) in replicas.iter().zip(&answers) {
                let stale = stale_entries(entries, &merged);
                self.write_repaired(table, *r, stale, report).await?;
            }
        }
    }

    /// Writes `stale` (the entries replica `r` lacked) to it, a chunk per message.
    async fn write_repaired(
        &self,
        table: TableKey,
        r: Endpoint,
        stale: Vec<WireMutation>,
        report: &mut RepairReport,
    ) -> Result<(), String> {
        let timeout = self.inner.config.repair_timeout_ms;
        for chunk in stale.chunks(repair::READ_CHUNK) {
            report.entries_streamed += chunk.len() as u64;
            report.bytes_streamed += chunk
                .iter()
                .map(|m| (m.key.len() + m.fragment.len()) as u64)
                .sum::<u64>();
            let body = Body::Write {
                table,
                mutations: chunk.to_vec(),
            };
            match self.call_retrying(r, body, timeout).await {
                Some(Body::WriteAck) => {}
                Some(Body::Failed(f)) => return Err(format!("{r}: {}", failure_text(&f))),
                _ => return Err(format!("{r} did not acknowledge repaired data")),
            }
        }
        Ok(())
    }
}

/// A key range as a message carries it.
fn wire_range(range: &KeyRange) -> WireRange {
    WireRange {
        start: range.start.clone(),
        end: range.end.clone(),
    }
}
