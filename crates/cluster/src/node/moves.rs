//! Topology changes: a node joining the ring (bootstrap) or leaving it (decommission).
//!
//! A move is announced through gossip ([`RingStatus::Joining`] or [`RingStatus::Leaving`]
//! with the node's tokens): every node's ring then carries, besides the replicas of now,
//! the ring once the move completes ([`Ring::future`]); the ranges' new replicas are
//! *pending* and get every write on top of its consistency level, while reads stay with
//! the replicas of now. Before streaming, the moving node asks every live node whether
//! its ring sees the move (`RingCheck`) and waits out the write timeout, so no write
//! acknowledged from then on misses the new replicas. Then:
//!
//! - **bootstrap**: the joining node pulls each range it gains from the replica that
//!   loses it (the one whose data it replaces, as Cassandra's consistent range movement
//!   does), or another live replica when that one is down; it stores what it pulls under
//!   its role once joined.
//! - **replace** (`replace_address`): a bootstrap whose tokens are a dead node's; the
//!   joining node gossips which node it replaces, so every ring's future has it in the
//!   dead node's place (it is pending for exactly the dead node's ranges) and pulls each
//!   range from a live replica; once normal, it announces the dead node `Left`.
//! - **decommission**: the leaving node asks each node gaining one of its ranges to pull
//!   it from the leaving node (`StreamRequest`).
//!
//! Then every live node copies the ranges whose role on it changes (primary to redundant
//! copy, or a copy of another source) into the structures of its new role (`Rehome`: the
//! layouts that keep roles apart — multi-lsm, decoupled, heterogeneous, erasure-tiered —
//! would otherwise read a range where its data is not); it has written every write of
//! those ranges to both roles since it saw the move. Only then does the moving node
//! announce `Normal` (or `Left`), and the rings switch.
//!
//! Streaming is paged ([`Body::ReadStored`]: checksummed internode frames, a page at a
//! time in memory) and paced to `stream_throughput_bytes_per_sec`. A bootstrap resumes:
//! the ranges it already stored are skipped.

use super::streaming::RANGES_IN_FLIGHT;
use super::*;
use crate::ring::Move;

/// Pause between two rounds of asking peers whether they see a move.
pub(super) const RING_CHECK_POLL_MS: u64 = 250;

/// Why a join or leave could not proceed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum MoveError {
    /// Another node is joining or leaving (moves are one at a time, as Cassandra's
    /// consistent range movement requires).
    #[error("{0} is joining or leaving the ring; one move at a time")]
    OtherMove(Endpoint),
    /// This node is not in the state the operation starts from.
    #[error("this node is {0:?}, not {1:?}")]
    State(RingStatus, RingStatus),
    /// No known node has this host id.
    #[error("no node with host id {0}")]
    UnknownHost(mosaic_types::HostId),
    /// A removal that cannot proceed, and why.
    #[error("cannot remove: {0}")]
    Removal(String),
    /// A replacement (`replace_address`) that cannot proceed, and why.
    #[error("cannot replace {0}: {1}")]
    Replace(Endpoint, String),
    /// No live node of the ring is known yet (gossip has not reached one).
    #[error("no live node owning tokens is known yet")]
    NoLivePeer,
    /// Live nodes whose ring did not show the move in time.
    #[error("nodes {0:?} did not see this node's move within the ring agreement timeout")]
    NoAgreement(Vec<Endpoint>),
    /// A range has no live replica to stream from.
    #[error("no live replica holds the range ({left}, {right}] of table {table:?}")]
    NoSource {
        /// The table.
        table: TableKey,
        /// The range's first token (exclusive).
        left: i64,
        /// Its last token.
        right: i64,
    },
    /// Streaming a range failed.
    #[error("streaming from {peer} failed: {reason}")]
    Stream {
        /// The other side.
        peer: Endpoint,
        /// What went wrong.
        reason: String,
    },
    /// The Paxos state of a moved range could not be repaired (see `move_paxos`).
    #[error("repairing the Paxos state of table {table:?}'s moved ranges failed: {reason}")]
    Paxos {
        /// The table.
        table: TableKey,
        /// What went wrong.
        reason: String,
    },
    /// Leaving would leave fewer nodes than a keyspace's replication factor.
    #[error("cannot leave: table {table:?} needs {needed} nodes in {dc}, {left} would remain")]
    TooFewNodes {
        /// The table.
        table: TableKey,
        /// The datacenter ("" under SimpleStrategy).
        dc: String,
        /// Replicas it needs there.
        needed: usize,
        /// Nodes that would remain there.
        left: usize,
    },
}

/// One peer's stream of a move, as `mosaic netstats` shows it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StreamSession {
    /// The other side.
    pub peer: Option<Endpoint>,
    /// Whether this node receives (`true`) or sends.
    pub receiving: bool,
    /// Ranges (per table) to stream.
    pub ranges_total: u64,
    /// Ranges streamed.
    pub ranges_done: u64,
    /// Entries streamed.
    pub entries: u64,
    /// Bytes streamed (keys and fragments).
    pub bytes: u64,
}

/// This node's streams: what the current (or last) move is doing.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StreamsSnapshot {
    /// "bootstrap" or "decommission"; empty when this node never moved.
    pub operation: String,
    /// Whether it finished (successfully or not).
    pub finished: bool,
    /// Its failure, if it failed.
    pub error: Option<String>,
    /// Milliseconds since it started (until it finished).
    pub elapsed_ms: u64,
    /// One session per peer and direction.
    pub sessions: Vec<StreamSession>,
    /// Entries this node copied into its new roles' structures.
    pub rehomed_entries: u64,
    /// Partitions of the moved ranges whose Paxos state needed a round (`move_paxos`).
    pub paxos_repaired: u64,
}

/// The live streams (kept in the node).
#[derive(Debug, Default)]
pub(super) struct Streams {
    pub(super) snapshot: StreamsSnapshot,
    started_ms: u64,
    finished_ms: Option<u64>,
}

impl Streams {
    pub(super) fn session(&mut self, peer: Endpoint, receiving: bool) -> &mut StreamSession {
        let sessions = &mut self.snapshot.sessions;
        let at = match sessions
            .iter()
            .position(|s| s.peer == Some(peer) && s.receiving == receiving)
        {
            Some(at) => at,
            None => {
                sessions.push(StreamSession {
                    peer: Some(peer),
                    receiving,
                    ..StreamSession::default()
                });
                sessions.len() - 1
            }
        };
        &mut sessions[at]
    }
}

/// Ranges to pull, per gaining node, table and source node (see [`Node::ask_to_pull`]).
pub(super) type PullAsks = BTreeMap<(Endpoint, TableKey, Endpoint), Vec<(i64, i64)>>;

/// A range this node already streamed, as a resumed bootstrap skips it.
pub type StreamedRange = (TableKey, i64, i64);

/// Why a call's answer is not the one expected: a failure, another body, or none in time.
pub(super) fn unanswered(answer: Option<Body>) -> String {
    match answer {
        Some(Body::Failed(f)) => format!("{f:?}"),
        Some(b) => format!("unexpected answer {}", replica::body_name(&b)),
        None => "no answer in time".to_owned(),
    }
}

/// Whether `me` holds the same role (index, and primary when a copy) in both lists.
fn same_role(now: &[Endpoint], after: &[Endpoint], me: Endpoint) -> bool {
    let at = |list: &[Endpoint]| {
        let i = list.iter().position(|n| *n == me)?;
        Some((i, if i == 0 { None } else { list.first().copied() }))
    };
    at(now) == at(after)
}

impl Node {
    /// This node's ring status.
    pub fn ring_status(&self) -> RingStatus {
        self.inner.membership.lock().own().app.ring_status
    }

    /// This node's tokens.
    pub fn tokens(&self) -> Vec<i64> {
        self.inner.membership.lock().own().app.tokens.clone()
    }

    /// A node other than this one that is joining or leaving (or replacing itself at its
    /// address: hibernating), if any.
    pub fn moving_peer(&self) -> Option<Endpoint> {
        let me = self.endpoint();
        let m = self.inner.membership.lock();
        let moving = m
            .states()
            .find(|s| {
                s.endpoint != me
                    && (matches!(s.app.ring_status, RingStatus::Joining | RingStatus::Leaving)
                        || s.app.status == NodeStatus::Hibernate)
                    && !s.app.tokens.is_empty()
            })
            .map(|s| s.endpoint);
        moving
    }

    /// The other live nodes that have not left the ring.
    pub(super) fn live_peers(&self) -> Vec<Endpoint> {
        let me = self.endpoint();
        self.states()
            .into_iter()
            .filter(|(s, up)| *up && s.endpoint != me && s.app.ring_status != RingStatus::Left)
            .map(|(s, _)| s.endpoint)
            .collect()
    }

    /// Whether this node has heard from a live node owning tokens (a joining node learns
    /// the schema and the ring from them).
    pub fn hears_ring(&self) -> bool {
        let me = self.endpoint();
        self.states()
            .iter()
            .any(|(s, up)| *up && s.endpoint != me && s.app.ring_status.owns_now())
    }

    /// Gossips this node's `status` (and `tokens`, when given) and rebuilds its ring.
    pub fn announce(&self, status: RingStatus, tokens: Option<Vec<i64>>) {
        {
            let mut m = self.inner.membership.lock();
            m.update_own(|s| {
                s.app.ring_status = status;
                if let Some(t) = tokens {
                    s.app.tokens = t;
                }
            });
        }
        self.rebuild_ring();
        tracing::info!(status = ?status, "ring status announced");
    }

    /// What this node's streams are doing (`mosaic netstats`).
    pub fn streams(&self) -> StreamsSnapshot {
        let now = self.now_ms();
        let s = self.inner.streams.lock();
        let mut snapshot = s.snapshot.clone();
        snapshot.elapsed_ms = s.finished_ms.unwrap_or(now).saturating_sub(s.started_ms);
        snapshot
    }

    pub(super) fn start_streams(&self, operation: &str) {
        let mut s = self.inner.streams.lock();
        *s = Streams {
            snapshot: StreamsSnapshot {
                operation: operation.to_owned(),
                ..StreamsSnapshot::default()
            },
            started_ms: self.now_ms(),
            finished_ms: None,
        };
    }

    pub(super) fn finish_streams(&self, result: &Result<(), MoveError>) {
        let mut s = self.inner.streams.lock();
        s.snapshot.finished = true;
        s.snapshot.error = result.as_ref().err().map(ToString::to_string);
        s.finished_ms = Some(self.now_ms());
    }

    /// Waits until every live node's ring shows this node in `status` with its tokens;
    /// then waits out the write timeout, so writes coordinated with an older ring are
    /// done.
    pub(super) async fn await_ring_agreement(&self, status: RingStatus) -> Result<(), MoveError> {
        self.await_seen(self.endpoint(), status).await?;
        self.inner
            .runtime
            .sleep(self.inner.config.write_timeout_ms)
            .await;
        Ok(())
    }

    /// Waits (at most the ring agreement timeout) until every live node's ring shows
    /// `node` (this one, or a dead one being removed) in `status` with its tokens,
    /// gossiping to the laggards meanwhile.
    pub(super) async fn await_seen(
        &self,
        node: Endpoint,
        status: RingStatus,
    ) -> Result<(), MoveError> {
        let tokens = {
            let m = self.inner.membership.lock();
            m.state(node)
                .map(|s| s.app.tokens.clone())
                .unwrap_or_default()
        };
        let start = self.now_ms();
        loop {
            let live = self.live_peers();
            let mut calls: FuturesUnordered<_> = live
                .iter()
                .map(|p| {
                    let body = Body::RingCheck {
                        node,
                        status,
                        tokens: tokens.clone(),
                    };
                    let peer = *p;
                    let node = self.clone();
                    async move {
                        let seen = matches!(
                            node.call_timeout(peer, body, node.inner.config.read_timeout_ms)
                                .await,
                            Some(Body::RingChecked { seen: true })
                        );
                        (peer, seen)
                    }
                })
                .collect();
            let mut missing = Vec::new();
            while let Some((peer, seen)) = calls.next().await {
                if !seen {
                    missing.push(peer);
                }
            }
            if missing.is_empty() {
                break;
            }
            if self.now_ms().saturating_sub(start) >= self.inner.config.ring_agreement_timeout_ms {
                return Err(MoveError::NoAgreement(missing));
            }
            // Push this node's state to the laggards rather than wait for gossip.
            self.gossip_round();
            self.inner.runtime.sleep(RING_CHECK_POLL_MS).await;
        }
        Ok(())
    }

    /// Joins the ring with `tokens` (this node started `Joining` without tokens, so no
    /// write came its way before it had the schema): announces them, streams the ranges it
    /// gains for `tables`, skipping those in `done` (a resumed bootstrap), calling
    /// `streamed` after each range is stored, has every node re-home the ranges whose
    /// roles change, and announces `Normal`. See the module doc.
    ///
    /// `replacing` names a dead node whose tokens `tokens` are (`replace_address`): this
    /// node then streams that node's ranges from their live replicas, and once normal owns
    /// them in its place; the dead node is announced `Left` at the end. When it names this
    /// node itself, the node (hibernating) refills its own ranges instead
    /// (`Node::replace_own`).
    ///
    /// `completing` is called once everything is streamed and re-homed, right before this
    /// node announces `Normal`: a node that restarts after that point is normal (see
    /// [`Node::finish_replace`] for a replacement's last step).
    pub async fn bootstrap(
        &self,
        tokens: Vec<i64>,
        replacing: Option<Endpoint>,
        tables: &[TableKey],
        done: &[StreamedRange],
        streamed: &(dyn Fn(StreamedRange) + Send + Sync),
        completing: &(dyn Fn() + Send + Sync),
    ) -> Result<(), MoveError> {
        self.start_streams(if replacing.is_some() {
            "replace"
        } else {
            "bootstrap"
        });
        let result = if replacing == Some(self.endpoint()) {
            self.replace_own(tables, done, streamed, completing).await
        } else {
            self.bootstrap_inner(tokens, replacing, tables, done, streamed, completing)
                .await
        };
        self.finish_streams(&result);
        result
    }

    async fn bootstrap_inner(
        &self,
        tokens: Vec<i64>,
        replacing: Option<Endpoint>,
        tables: &[TableKey],
        done: &[StreamedRange],
        streamed: &(dyn Fn(StreamedRange) + Send + Sync),
        completing: &(dyn Fn() + Send + Sync),
    ) -> Result<(), MoveError> {
        let status = self.ring_status();
        if status != RingStatus::Joining {
            return Err(MoveError::State(status, RingStatus::Joining));
        }
        if let Some(other) = self.moving_peer() {
            return Err(MoveError::OtherMove(other));
        }
        // Joining without having heard from the ring would stream nothing.
        if !self.hears_ring() {
            return Err(MoveError::NoLivePeer);
        }
        if let Some(dead) = replacing {
            self.check_replaceable(dead, &tokens).await?;
        }
        self.inner
            .membership
            .lock()
            .update_own(|s| s.app.replacing = replacing);
        self.announce(RingStatus::Joining, Some(tokens));
        self.await_ring_agreement(RingStatus::Joining).await?;
        let me = self.endpoint();
        let gains = |ring: &Ring, placement: &ReplicationStrategy| {
            let mut moves = ring.moves(placement);
            moves.retain(|m| m.gained().any(|n| n == me));
            moves
        };
        self.stream_gains(tables, gains, done, streamed).await?;
        self.settle_paxos(tables).await?;
        self.complete_move(tables, RingStatus::Normal, completing)
            .await;
        if let Some(dead) = replacing {
            self.finish_replace(dead).await;
        } else {
            tracing::info!("bootstrap finished: this node is normal");
        }
        Ok(())
    }

    /// Ends a move once its streams are done: every node re-homes, this node announces
    /// `status` (normal after a join, left after a leave) and waits (bounded) until the
    /// cluster sees it, so a move that follows at once does not find this one under way
    /// and a leaving node is known gone before it stops.
    async fn complete_move(
        &self,
        tables: &[TableKey],
        status: RingStatus,
        completing: &(dyn Fn() + Send + Sync),
    ) {
        self.rehome_everywhere(tables).await;
        completing();
        self.announce(status, None);
        if let Err(e) = self.await_seen(self.endpoint(), status).await {
            tracing::warn!(error = %e, status = ?status, "not every node saw this node's new status yet");
        }
    }

    /// Streams to this node every range of `tables` that `gains` gives of the ring
    /// (ranges this node gains), each from [`Node::source_of`], skipping those in `done`
    /// (a resumed move) and calling `streamed` after each range is stored.
    pub(super) async fn stream_gains(
        &self,
        tables: &[TableKey],
        gains: impl Fn(&Ring, &ReplicationStrategy) -> Vec<Move>,
        done: &[StreamedRange],
        streamed: &(dyn Fn(StreamedRange) + Send + Sync),
    ) -> Result<(), MoveError> {
        let ring = self.ring();
        let mut work: Vec<(TableKey, Move, Endpoint)> = Vec::new();
        for table in tables {
            let Some(placement) = self.inner.store.placement(*table) else {
                continue;
            };
            for m in gains(&ring, &placement) {
                if done.contains(&(*table, m.left.0, m.right.0)) {
                    continue;
                }
                let source = self.source_of(&m).ok_or(MoveError::NoSource {
                    table: *table,
                    left: m.left.0,
                    right: m.right.0,
                })?;
                self.inner.streams.lock().session(source, true).ranges_total += 1;
                work.push((*table, m, source));
            }
        }
        tracing::info!(ranges = work.len(), "bootstrap streaming");
        let pacer = self.pacer();
        let pacer = &pacer;
        let mut pulls = futures::stream::iter(work)
            .map(|(table, m, source)| async move {
                self.pull(table, &m.keys(), source, pacer).await?;
                Ok::<_, MoveError>((table, m, source))
            })
            .buffer_unordered(RANGES_IN_FLIGHT);
        while let Some(pulled) = pulls.next().await {
            let (table, m, source) = pulled?;
            self.inner.streams.lock().session(source, true).ranges_done += 1;
            streamed((table, m.left.0, m.right.0));
        }
        Ok(())
    }

    /// The node to stream a gained range from: the replica losing it when alive (its
    /// data is what this node replaces), else the first live replica of now.
    fn source_of(&self, m: &Move) -> Option<Endpoint> {
        let me = self.endpoint();
        m.lost()
            .chain(m.now.iter().copied())
            .find(|n| *n != me && self.is_alive(*n))
    }

    /// Leaves the ring: announces `Leaving`, hands every range to the nodes gaining it,
    /// has every node re-home the ranges whose roles change, and announces `Left` (the
    /// caller then stops the node). On failure the node is `Normal` again.
    pub async fn decommission(&self, tables: &[TableKey]) -> Result<(), MoveError> {
        self.start_streams("decommission");
        let status = self.ring_status();
        let result = if status != RingStatus::Normal {
            Err(MoveError::State(status, RingStatus::Normal))
        } else if let Some(other) = self.moving_peer() {
            Err(MoveError::OtherMove(other))
        } else {
            let result = self.decommission_inner(tables).await;
            if result.is_err() {
                self.announce(RingStatus::Normal, None);
            }
            result
        };
        self.finish_streams(&result);
        result
    }

    async fn decommission_inner(&self, tables: &[TableKey]) -> Result<(), MoveError> {
        self.check_enough_nodes_after_leaving(tables)?;
        self.announce(RingStatus::Leaving, None);
        self.await_ring_agreement(RingStatus::Leaving).await?;
        let me = self.endpoint();
        // Every gaining node pulls its ranges from here.
        let asks = self.handover(me, tables, |_, _| Some(me))?;
        self.ask_to_pull(asks).await?;
        self.settle_paxos(tables).await?;
        self.complete_move(tables, RingStatus::Left, &|| {}).await;
        tracing::info!("decommission finished: this node left the ring");
        Ok(())
    }

    /// What the nodes gaining the ranges `leaving` loses (it leaves, or is removed) pull,
    /// for `tables`, each range from the node `source` names (given the range and the
    /// gaining node); `NoSource` when it names none.
    pub(super) fn handover(
        &self,
        leaving: Endpoint,
        tables: &[TableKey],
        source: impl Fn(&Move, Endpoint) -> Option<Endpoint>,
    ) -> Result<PullAsks, MoveError> {
        let ring = self.ring();
        let mut asks = PullAsks::new();
        for table in tables {
            let Some(placement) = self.inner.store.placement(*table) else {
                continue;
            };
            for m in ring.moves(&placement) {
                if !m.lost().any(|n| n == leaving) {
                    continue;
                }
                for gainer in m.gained() {
                    let from = source(&m, gainer).ok_or(MoveError::NoSource {
                        table: *table,
                        left: m.left.0,
                        right: m.right.0,
                    })?;
                    asks.entry((gainer, *table, from))
                        .or_default()
                        .push((m.left.0, m.right.0));
                }
            }
        }
        Ok(asks)
    }

    /// Has each gaining node pull its ranges (per gainer, table and source, as
    /// `(left, right]` token ranges) from their source and waits for all; this node pulls
    /// its own share itself. The first failure fails the move.
    pub(super) async fn ask_to_pull(&self, asks: PullAsks) -> Result<(), MoveError> {
        let me = self.endpoint();
        for ((gainer, _, _), ranges) in &asks {
            self.inner
                .streams
                .lock()
                .session(*gainer, false)
                .ranges_total += ranges.len() as u64;
        }
        let mut calls: FuturesUnordered<_> = asks
            .into_iter()
            .map(|((gainer, table, source), ranges)| {
                let n = ranges.len() as u64;
                let body = Body::StreamRequest {
                    table,
                    ranges,
                    source,
                };
                let node = self.clone();
                async move {
                    let answer = if gainer == me {
                        Ok(node.serve_move(body).await)
                    } else {
                        node.call_move(gainer, body).await
                    };
                    (gainer, n, answer)
                }
                .boxed()
            })
            .collect();
        while let Some((gainer, n, answer)) = calls.next().await {
            match answer {
                Ok(Body::Streamed { entries, bytes }) => {
                    let mut s = self.inner.streams.lock();
                    let session = s.session(gainer, false);
                    session.ranges_done += n;
                    session.entries += entries;
                    session.bytes += bytes;
                }
                Ok(other) => {
                    return Err(MoveError::Stream {
                        peer: gainer,
                        reason: unanswered(Some(other)),
                    })
                }
                Err(reason) => {
                    return Err(MoveError::Stream {
                        peer: gainer,
                        reason,
                    })
                }
            }
        }
        Ok(())
    }

    /// Refuses to leave when a table's keyspace would have fewer nodes than replicas.
    fn check_enough_nodes_after_leaving(&self, tables: &[TableKey]) -> Result<(), MoveError> {
        let me = self.endpoint();
        let ring = self.ring();
        for table in tables {
            let Some(placement) = self.inner.store.placement(*table) else {
                continue;
            };
            let remaining = |dc: Option<&str>| {
                ring.nodes()
                    .iter()
                    .filter(|n| **n != me && dc.is_none_or(|dc| ring.dc_of(**n) == dc))
                    .count()
            };
            match &placement {
                ReplicationStrategy::Simple(rf) => {
                    let left = remaining(None);
                    if left < *rf {
                        return Err(MoveError::TooFewNodes {
                            table: *table,
                            dc: String::new(),
                            needed: *rf,
                            left,
                        });
                    }
                }
                ReplicationStrategy::NetworkTopology(dcs) => {
                    for (dc, rf) in dcs.iter() {
                        let left = remaining(Some(dc));
                        if left < *rf && ring.dc_of(me) == dc {
                            return Err(MoveError::TooFewNodes {
                                table: *table,
                                dc: dc.to_string(),
                                needed: *rf,
                                left,
                            });
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// Asks every live node (this one included) to re-home its ranges whose roles change;
    /// a node that does not is named in the log (repair brings it back in line).
    pub(super) async fn rehome_everywhere(&self, tables: &[TableKey]) {
        let peers = self.live_peers();
        let mut calls: FuturesUnordered<_> = peers
            .into_iter()
            .map(|p| {
                let body = Body::Rehome {
                    tables: tables.to_vec(),
                };
                let node = self.clone();
                async move { (p, node.call_move(p, body).await) }
            })
            .collect();
        match self.rehome(tables).await {
            Ok(n) => self.note_rehomed(n),
            Err(e) => tracing::warn!(error = %e, "re-homing this node's ranges failed"),
        }
        while let Some((peer, answer)) = calls.next().await {
            if !matches!(answer, Ok(Body::Rehomed { .. })) {
                tracing::warn!(
                    peer = %peer,
                    answer = ?answer.map(|b| replica::body_name(&b)),
                    "a node did not re-home the ranges whose role changes on it; run `mosaic repair` on it"
                );
            }
        }
    }

    /// Copies the ranges whose role on this node changes with the move under way into
    /// the structures of its new role, for the tables whose layout keeps roles apart;
    /// how many entries it copied.
    pub(super) async fn rehome(&self, tables: &[TableKey]) -> Result<u64, MoveError> {
        let me = self.endpoint();
        let ring = self.ring();
        let mut copied = 0;
        for table in tables {
            if !self.inner.store.role_sensitive(*table) {
                continue;
            }
            let Some(placement) = self.inner.store.placement(*table) else {
                continue;
            };
            for m in ring.moves(&placement) {
                if !m.now.contains(&me) || !m.after.contains(&me) || same_role(&m.now, &m.after, me)
                {
                    continue;
                }
                for range in m.keys() {
                    copied += self.copy_range(*table, range, (None, false), None).await?.0;
                }
            }
        }
        Ok(copied)
    }

    /// Counts entries this node copied into its new roles' structures.
    pub(super) fn note_rehomed(&self, entries: u64) {
        self.inner.streams.lock().snapshot.rehomed_entries += entries;
    }

    /// Serves a peer's topology-change request.
    pub(super) async fn serve_move(&self, body: Body) -> Body {
        match body {
            Body::RingCheck {
                node,
                status,
                tokens,
            } => {
                let m = self.inner.membership.lock();
                let seen = m
                    .state(node)
                    .is_some_and(|s| s.app.ring_status == status && s.app.tokens == tokens);
                Body::RingChecked { seen }
            }
            body @ (Body::StreamRequest { .. } | Body::Rehome { .. }) => {
                self.serve_move_work(body).await
            }
            other => Body::Failed(Failure::Storage(format!(
                "not a topology request: {}",
                replica::body_name(&other)
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{IpAddr, Ipv4Addr, SocketAddr};

    fn ep(i: u8) -> Endpoint {
        SocketAddr::new(IpAddr::V4(Ipv4Addr::new(127, 0, 0, i)), 7000)
    }

    #[test]
    fn a_role_is_the_same_only_at_the_same_index_of_the_same_primary() {
        let (a, b, c, d) = (ep(1), ep(2), ep(3), ep(4));
        assert!(same_role(&[a, b, c], &[a, b, d], b));
        assert!(same_role(&[a, b, c], &[a, d, b], a));
        assert!(!same_role(&[a, b, c], &[a, d, b], b), "index 1 became 2");
        assert!(!same_role(&[a, b, c], &[d, b, c], b), "another source");
        assert!(
            !same_role(&[a, b, c], &[b, c, d], b),
            "a copy became the primary"
        );
        assert!(
            same_role(&[b, c, a], &[b, d, c], b),
            "primary stays primary"
        );
    }
}
