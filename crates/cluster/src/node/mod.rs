//! A cluster node: coordinator, replica and gossiper in one.
//!
//! Owns the state machine of every request this node coordinates or serves:
//!
//! - **Writes** ([`Node::write`]): mutations are grouped by table and replica list; each
//!   group goes to all its live replicas (this node's share is applied locally, without a
//!   message) and the write succeeds once every group has as many acknowledgements as the
//!   consistency level needs. Too few live replicas is `Unavailable` before anything is
//!   sent; too few acknowledgements in time is `WriteTimeout` with the counts.
//! - **Reads** ([`Node::read`]): the key range is split at the ring's token boundaries
//!   ([`Ring::segments`]) and read segment by segment. Per segment, the replica selector
//!   orders the live replicas; the first is asked for data, the next block-for − 1 for
//!   digests. Matching digests answer at once; a mismatch reads data from all of them,
//!   merges by timestamp (the row layer's last-write-wins), writes the merged version back
//!   to every replica that differed and waits for those writes (blocking read repair)
//!   before answering, so a later read at the same level sees the same result.
//! - **Serving peers**: `Write` and `Read` messages applied to the local [`Store`];
//!   requests over `replica_requests_max` in flight are refused as overloaded.
//! - **Gossip** ([`Node::start`]): a round every `gossip_interval_ms` (see
//!   [`crate::gossip`]); the ring is rebuilt when a node with new tokens appears; a peer
//!   gossiping another schema version is asked for its schema, and the newer one wins.
//!
//! Every wait is bounded by a timeout from [`NodeConfig`]; a dead peer costs a request at
//! most its timeout and never holds up requests that don't need it.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Weak};

use futures::channel::oneshot;
use futures::future::{select, BoxFuture, Either};
use futures::stream::FuturesUnordered;
use futures::{FutureExt, StreamExt};
use mosaic_rows::{merge_fragments, Fragment, KeyRange};
use mosaic_types::{SpeculativeRetry, Token};
use parking_lot::{Mutex, RwLock};

use crate::consistency::{ClusterError, ConsistencyLevel, Quorum};
use crate::env::{Entries, Runtime, Store, Transport};
use crate::gossip::{Change, Membership};
use crate::message::{
    AppState, Body, EndpointState, Envelope, Failure, NodeStatus, RingStatus, SchemaSnapshot,
    TableKey, Tag, WireMutation, WireRange, WireTree, PROTOCOL_VERSION,
};
use crate::placement::ReplicationStrategy;
use crate::repair::{self, RepairReport};
use crate::ring::{Ring, Segment};
use crate::selection::facts::{self, Facts};
use crate::selection::{ReadInfo, ReplicaSelector};
use crate::Endpoint;

mod anti_entropy;
mod config;
mod counter;
mod elect;
mod hints;
mod lost;
mod membership;
mod move_calls;
mod move_paxos;
mod moves;
mod paxos;
mod read;
mod removal;
mod replace;
mod replica;
mod streaming;
mod tally;
mod topology;
mod write;

pub use config::{NodeConfig, READ_ANSWER_ROWS_MAX};
pub use moves::{MoveError, StreamSession, StreamedRange, StreamsSnapshot};
pub use paxos::PaxosRound;
use read::stale_entries;
pub use read::{digest, disputed_keys, merge_answers, ReadAnswer};
pub use tally::CounterSnapshot;
use tally::Counters;
use write::WriteGroup;

/// Times repair asks for one thing before the range fails.
const REPAIR_ATTEMPTS: usize = 3;

/// How long a truncate waits for every node (Cassandra's `truncate_request_timeout`).
const TRUNCATE_TIMEOUT_MS: u64 = 60_000;

/// Something to tell clients about (status and topology events), with the node's state.
pub type ChangeListener = Arc<dyn Fn(&Change, &EndpointState) + Send + Sync>;

/// Why a call to a replica produced no answer.
#[derive(Debug)]
enum NoAnswer {
    /// The message could not be queued, or the node stopped waiting.
    Dropped,
}

/// What a call resolves to: the answering node and its answer.
type CallFuture = BoxFuture<'static, (Endpoint, Result<Body, NoAnswer>)>;

struct Inner {
    config: NodeConfig,
    runtime: Arc<dyn Runtime>,
    transport: Arc<dyn Transport>,
    store: Arc<dyn Store>,
    selector: Arc<dyn ReplicaSelector>,
    membership: Mutex<Membership>,
    ring: RwLock<Arc<Ring>>,
    /// Requests awaiting an answer: the node asked, and where the answer goes.
    pending: Mutex<HashMap<u64, (Endpoint, oneshot::Sender<Body>)>>,
    next_id: AtomicU64,
    listeners: Mutex<Vec<ChangeListener>>,
    schema_pulls: Mutex<HashMap<Endpoint, u64>>,
    replica_in_flight: AtomicUsize,
    stopped: AtomicBool,
    counters: Counters,
    replaying: Mutex<std::collections::HashSet<Endpoint>>,
    lost: lost::LostReads,
    read_load: facts::ReadLoad,
    /// Recent read latency per table (for percentile `speculative_retry`).
    latencies: crate::latency::ReadLatencies,
    /// Tags reads with an item-size oracle's estimates ([`Node::set_tagger`]).
    tagger: std::sync::OnceLock<crate::selection::Tagger>,
    /// The replicas' per-partition Paxos locks, striped.
    paxos_locks: Vec<futures::lock::Mutex<()>>,
    /// The newest ballot this node chose (each next one is above it).
    last_ballot_micros: AtomicU64,
    /// The per-counter locks of the increments this node leads, striped.
    counter_locks: Vec<futures::lock::Mutex<()>>,
    /// Topology changes: the streams of this node's join or leave (`mosaic netstats`).
    streams: Mutex<moves::Streams>,
    /// Peers a read could not reach, until a message from them arrives (see
    /// [`Node::unreachable`]), and how many there are (checked for every message).
    unreachable: Mutex<std::collections::HashSet<Endpoint>>,
    unreachable_count: AtomicUsize,
    /// The move work this node serves for peers (see [`move_calls`]).
    move_serving: Mutex<move_calls::Serving>,
}

/// A read in flight to `to`, for the selector: dropping it (answered, timed out or
/// abandoned) ends it.
struct Outstanding {
    selector: Arc<dyn ReplicaSelector>,
    to: Endpoint,
}

impl Drop for Outstanding {
    fn drop(&mut self) {
        self.selector.done(self.to);
    }
}

/// A cluster node (see the module doc). Cheap to clone.
#[derive(Clone)]
pub struct Node {
    inner: Arc<Inner>,
}

/// A [`Node`] handle that does not keep it alive.
#[derive(Clone)]
pub struct WeakNode {
    inner: Weak<Inner>,
}

impl WeakNode {
    /// The node, if it still exists.
    pub fn upgrade(&self) -> Option<Node> {
        self.inner.upgrade().map(|inner| Node { inner })
    }
}

/// Removes a request's response slot when its caller stops waiting.
struct PendingSlot {
    inner: Weak<Inner>,
    id: u64,
}

impl Drop for PendingSlot {
    fn drop(&mut self) {
        if let Some(inner) = self.inner.upgrade() {
            inner.pending.lock().remove(&self.id);
        }
    }
}

/// Resolves `Some(item)` when `stream` yields first (`Some(None)` when it is done), `None`
/// when `deadline` passes first.
async fn next_before<S>(
    stream: &mut S,
    deadline: &mut BoxFuture<'static, ()>,
) -> Option<Option<S::Item>>
where
    S: futures::Stream + Unpin,
{
    match select(stream.next(), deadline).await {
        Either::Left((item, _)) => Some(item),
        Either::Right(_) => None,
    }
}

impl Node {
    /// A node with `own` as its gossiped state (generation and tokens included).
    pub fn new(
        config: NodeConfig,
        own: AppState,
        generation: u64,
        runtime: Arc<dyn Runtime>,
        transport: Arc<dyn Transport>,
        store: Arc<dyn Store>,
        selector: Arc<dyn ReplicaSelector>,
    ) -> Node {
        let state = EndpointState {
            endpoint: config.endpoint,
            generation,
            heartbeat: 0,
            app: own,
        };
        let membership = Membership::new(
            state,
            config.gossip_interval_ms,
            config.phi_convict_threshold,
        );
        // Request ids start at random, so that an answer to a previous incarnation's request
        // (it reaches this one after a quick restart) matches none of this one's (found by
        // the simulator, seed 11655: a read returned another key's row).
        let first_id = runtime.random() | 1;
        let node = Node {
            inner: Arc::new(Inner {
                config,
                runtime,
                transport,
                store,
                selector,
                membership: Mutex::new(membership),
                ring: RwLock::new(Arc::new(Ring::default())),
                pending: Mutex::new(HashMap::new()),
                next_id: AtomicU64::new(first_id),
                listeners: Mutex::new(Vec::new()),
                schema_pulls: Mutex::new(HashMap::new()),
                replica_in_flight: AtomicUsize::new(0),
                stopped: AtomicBool::new(false),
                counters: Counters::default(),
                replaying: Mutex::new(std::collections::HashSet::new()),
                lost: lost::LostReads::default(),
                read_load: facts::ReadLoad::default(),
                latencies: crate::latency::ReadLatencies::default(),
                tagger: std::sync::OnceLock::new(),
                paxos_locks: (0..paxos::PAXOS_LOCKS)
                    .map(|_| futures::lock::Mutex::new(()))
                    .collect(),
                last_ballot_micros: AtomicU64::new(0),
                counter_locks: (0..counter::COUNTER_LOCKS)
                    .map(|_| futures::lock::Mutex::new(()))
                    .collect(),
                streams: Mutex::new(moves::Streams::default()),
                move_serving: Mutex::new(move_calls::Serving::new()),
                unreachable: Mutex::new(std::collections::HashSet::new()),
                unreachable_count: AtomicUsize::new(0),
            }),
        };
        node.rebuild_ring();
        let weak = node.downgrade();
        node.inner
            .transport
            .on_connection_lost(Arc::new(move |peer| {
                if let Some(node) = weak.upgrade() {
                    node.connection_lost(peer);
                }
            }));
        node
    }

    /// `peer` opened a connection to this node (the transport calls this once per
    /// incoming connection): requests to it need not wait out a connection backoff.
    pub fn peer_heard(&self, peer: Endpoint) {
        self.inner.transport.peer_heard(peer);
    }

    /// The connection to `peer` broke or could not be made: every request awaiting its
    /// answer fails now (its caller moves on to another replica, or gives up), rather
    /// than at its timeout.
    pub fn connection_lost(&self, peer: Endpoint) {
        // Dropping a request's sender ends its wait as unanswered.
        self.inner.pending.lock().retain(|_, (to, _)| *to != peer);
    }

    /// A handle that does not keep the node alive (for listeners the node itself holds).
    pub fn downgrade(&self) -> WeakNode {
        WeakNode {
            inner: Arc::downgrade(&self.inner),
        }
    }

    /// A read could not reach `peer` (its connection is gone, or none could be made): the
    /// replica selector counts it as a read that timed out, as Cassandra's dynamic snitch
    /// counts an expired request, so reads ask it last rather than fail on it again until
    /// the failure detector convicts it. The first message from `peer` afterwards makes
    /// the selector forget what it measured of it ([`Node::reached`]).
    fn unreachable(&self, peer: Endpoint, now_micros: u64) {
        let timeout_micros = self.inner.config.read_timeout_ms.saturating_mul(1000);
        self.inner
            .selector
            .observe(peer, timeout_micros, now_micros);
        if self.inner.unreachable.lock().insert(peer) {
            self.inner.unreachable_count.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// A message from `peer` arrived: if a read could not reach it before, the selector
    /// measures it afresh.
    fn reached(&self, peer: Endpoint) {
        if self.inner.unreachable_count.load(Ordering::Relaxed) == 0 {
            return;
        }
        if self.inner.unreachable.lock().remove(&peer) {
            self.inner.unreachable_count.fetch_sub(1, Ordering::Relaxed);
            self.inner.selector.forget(peer);
        }
    }

    /// This node's address.
    pub fn endpoint(&self) -> Endpoint {
        self.inner.config.endpoint
    }

    /// The current ring.
    pub fn ring(&self) -> Arc<Ring> {
        self.inner.ring.read().clone()
    }

    /// Every known node's state with whether it is alive, this node's included.
    pub fn states(&self) -> Vec<(EndpointState, bool)> {
        let m = self.inner.membership.lock();
        m.states()
            .map(|s| (s.clone(), m.is_alive(s.endpoint)))
            .collect()
    }

    /// Starts from the peer states a previous run of this node knew (what the server
    /// persists, as Cassandra's `system.peers`): without them a restarted node's ring
    /// holds only itself until gossip catches up, and it would coordinate every token as
    /// its only replica (found by the simulator, seed 15). Call before [`Node::start`].
    pub fn restore_peers(&self, states: Vec<EndpointState>) {
        self.inner.membership.lock().restore(states);
        self.rebuild_ring();
    }

    /// Whether `node` is believed alive.
    pub fn is_alive(&self, node: Endpoint) -> bool {
        self.inner.membership.lock().is_alive(node)
    }

    /// Calls `listener` on every membership change.
    pub fn on_change(&self, listener: ChangeListener) {
        self.inner.listeners.lock().push(listener);
    }

    /// Starts gossiping (one background task).
    pub fn start(&self) {
        let node = self.clone();
        self.inner
            .runtime
            .spawn(async move { node.gossip_loop().await }.boxed());
    }

    /// Announces a clean shutdown to every live peer and stops gossiping.
    pub fn shutdown(&self) {
        self.inner.stopped.store(true, Ordering::SeqCst);
        let (states, peers) = {
            let mut m = self.inner.membership.lock();
            m.update_own(|s| s.app.status = NodeStatus::Shutdown);
            let states: Vec<EndpointState> = m.states().cloned().collect();
            let peers: Vec<Endpoint> = m
                .peers()
                .into_iter()
                .filter(|(_, alive)| *alive)
                .map(|(e, _)| e)
                .collect();
            (states, peers)
        };
        for p in peers {
            self.send(
                p,
                0,
                Body::GossipSyn {
                    cluster: self.inner.config.cluster_name.clone(),
                    states: states.clone(),
                },
            );
        }
    }

    /// Handles an envelope from a peer (the transport's receive path calls this).
    pub fn receive(&self, env: Envelope) {
        self.reached(env.from);
        // Facts ride on answers and on gossip: the policy takes them, then the message
        // goes on as if they had not been there.
        let env = match env.body {
            Body::WithFacts { facts, body } => {
                self.inner.selector.feedback(env.from, &facts);
                Envelope { body: *body, ..env }
            }
            _ => env,
        };
        if env.body.is_response() {
            // Only the node a request went to answers it: an answer naming another sender
            // (a forged acknowledgement, or a stray one) is dropped and the request waits on.
            let mut pending = self.inner.pending.lock();
            if let std::collections::hash_map::Entry::Occupied(waiting) = pending.entry(env.id) {
                if waiting.get().0 == env.from {
                    let (_, tx) = waiting.remove();
                    let _ = tx.send(env.body);
                } else {
                    tracing::warn!(
                        peer = %env.from,
                        asked = %waiting.get().0,
                        "dropping an answer from a node the request was not sent to"
                    );
                }
            }
            return;
        }
        let from = env.from;
        let id = env.id;
        match env.body {
            Body::GossipSyn { cluster, .. } | Body::GossipAck { cluster, .. }
                if cluster != self.inner.config.cluster_name =>
            {
                tracing::warn!(
                    peer = %from,
                    peer_cluster = %cluster,
                    cluster = %self.inner.config.cluster_name,
                    "refusing gossip from another cluster"
                );
            }
            Body::GossipSyn { states, .. } => {
                let now = self.now_ms();
                let (changes, reply) = {
                    let mut m = self.inner.membership.lock();
                    let reply = m.newer_than(&states);
                    (m.merge(states, now), reply)
                };
                self.apply_changes(&changes);
                self.send(
                    from,
                    id,
                    Body::GossipAck {
                        cluster: self.inner.config.cluster_name.clone(),
                        states: reply,
                    },
                );
            }
            Body::GossipAck { states, .. } => {
                let now = self.now_ms();
                let changes = self.inner.membership.lock().merge(states, now);
                self.apply_changes(&changes);
            }
            Body::SchemaPull => {
                let snapshot = self.inner.store.schema();
                self.send(from, id, Body::SchemaPush(snapshot));
            }
            body @ (Body::Write { .. }
            | Body::PaxosPrepare { .. }
            | Body::PaxosPropose { .. }
            | Body::PaxosCommit { .. }
            | Body::CounterWrite { .. }
            | Body::Truncate { .. }
            | Body::Read { .. }
            | Body::ReadStored { .. }
            | Body::PaxosSummaryRequest { .. }
            | Body::SchemaPush(_)
            | Body::TreeRequest { .. }
            | Body::EcFill { .. }
            | Body::EcClear { .. }
            | Body::EcParity { .. }
            | Body::EcCover { .. }
            | Body::EcNamed { .. }
            | Body::EcMetaRead { .. }
            | Body::EcGroupsOf { .. }
            | Body::EcMetaPush { .. }
            | Body::EcShardRead { .. }
            | Body::EcStripeRead { .. }
            | Body::RingCheck { .. }
            | Body::StreamRequest { .. }
            | Body::Rehome { .. }) => {
                let in_flight = self.inner.replica_in_flight.fetch_add(1, Ordering::SeqCst);
                if in_flight >= self.inner.config.replica_requests_max {
                    self.inner.replica_in_flight.fetch_sub(1, Ordering::SeqCst);
                    self.send(from, id, Body::Failed(Failure::Overloaded));
                    return;
                }
                let node = self.clone();
                // A schema change names the peer it came from in what it logs (a schema
                // that drops tables is logged with it).
                let span = match &body {
                    Body::SchemaPush(_) => tracing::info_span!("schema_push", peer = %from),
                    _ => tracing::Span::none(),
                };
                self.inner.runtime.run_or_spawn(
                    tracing::Instrument::instrument(
                        async move {
                            let (answer, facts) = node.serve_measured(body, 1).await;
                            node.inner.replica_in_flight.fetch_sub(1, Ordering::SeqCst);
                            let answer = match facts {
                                Some(facts) => Body::WithFacts {
                                    facts,
                                    body: Box::new(answer),
                                },
                                None => answer,
                            };
                            node.send(from, id, answer);
                        },
                        span,
                    )
                    .boxed(),
                );
            }
            // Responses were handled above.
            _ => {}
        }
    }

    /// Serves a peer's request (or this node's own), measuring reads for the facts a
    /// read's tags ask for. `counted`: whether this request is among the peers' requests
    /// in flight (it is not part of the queue it reports).
    async fn serve_measured(&self, body: Body, counted: u64) -> (Body, Option<Facts>) {
        let Body::Read { tags, .. } = &body else {
            return (self.serve(body).await, None);
        };
        let wanted = facts::wanted(tags);
        let load = &self.inner.read_load;
        let started = self.inner.runtime.now_micros();
        load.started();
        let answer = self.serve(body).await;
        let now = self.inner.runtime.now_micros();
        load.finished(now.saturating_sub(started));
        let facts =
            (!wanted.is_empty()).then(|| load.facts(&wanted, self.read_queue(counted), now));
        (answer, facts)
    }

    /// Reads queued here (waiting or being served): in the read stage when reads go
    /// through one, else the requests from peers in flight, less `counted` of them (the
    /// answer being measured is not part of the queue it reports).
    fn read_queue(&self, counted: u64) -> u64 {
        self.inner.store.read_queue_length().unwrap_or_else(|| {
            (self.inner.replica_in_flight.load(Ordering::Relaxed) as u64).saturating_sub(counted)
        })
    }

    /// The facts this node's own policy wants, measured now (`None` when it wants none).
    pub(super) fn own_facts(&self) -> Option<Facts> {
        let wanted = self.inner.selector.facts_wanted();
        (!wanted.is_empty()).then(|| {
            let now = self.inner.runtime.now_micros();
            self.inner.read_load.facts(wanted, self.read_queue(0), now)
        })
    }

    /// Tags this node's reads with `tagger`'s estimates from now on (once: a second
    /// tagger is refused and returned).
    pub fn set_tagger(
        &self,
        tagger: crate::selection::Tagger,
    ) -> Result<(), crate::selection::Tagger> {
        self.inner.tagger.set(tagger)
    }

    /// The oracle tagging this node's reads, if any.
    pub fn size_oracle(&self) -> Option<&'static str> {
        self.inner.tagger.get().map(|t| t.oracle_id())
    }

    /// The replica-selection policy this node's reads use.
    pub fn replica_selector(&self) -> &Arc<dyn ReplicaSelector> {
        &self.inner.selector
    }

    /// Counters of hinted handoff, repair, speculative reads and erasure coding.
    pub fn counters(&self) -> CounterSnapshot {
        self.inner.counters.snapshot()
    }

    /// Truncates `table` on every node of the ring; like Cassandra, only when every node
    /// is alive (`Unavailable` at ALL otherwise).
    pub async fn truncate(&self, table: TableKey) -> Result<(), ClusterError> {
        let nodes: Vec<Endpoint> = self.ring().nodes().to_vec();
        let nodes = if nodes.is_empty() {
            vec![self.endpoint()]
        } else {
            nodes
        };
        let alive = nodes.iter().filter(|n| self.is_alive(**n)).count();
        if alive < nodes.len() {
            return Err(ClusterError::Unavailable {
                consistency: ConsistencyLevel::All,
                required: nodes.len(),
                alive,
            });
        }
        let mut calls: FuturesUnordered<CallFuture> = nodes
            .iter()
            .map(|n| self.call(*n, Body::Truncate { table }))
            .collect();
        let mut deadline = self.inner.runtime.sleep(TRUNCATE_TIMEOUT_MS);
        let mut acked = 0;
        while acked < nodes.len() {
            match next_before(&mut calls, &mut deadline).await {
                Some(Some((_, Ok(Body::TruncateAck)))) => acked += 1,
                Some(Some((_, Ok(Body::Failed(f))))) => {
                    return Err(ClusterError::Storage(format!(
                        "Truncate failed on a replica: {}",
                        failure_text(&f)
                    )))
                }
                Some(Some(_)) | Some(None) | None => {
                    return Err(ClusterError::WriteTimeout {
                        consistency: ConsistencyLevel::All,
                        received: acked,
                        block_for: nodes.len(),
                    })
                }
            }
        }
        Ok(())
    }

    /// The schema this node has.
    pub fn schema(&self) -> SchemaSnapshot {
        self.inner.store.schema()
    }

    /// Sends `body` to `to` (or serves it here when `to` is this node) and resolves with
    /// the answer; dropping the future forgets the request.
    fn call(&self, to: Endpoint, body: Body) -> CallFuture {
        let started = self.inner.runtime.now_micros();
        // Reads in flight to each replica, for policies that weigh them (C3).
        let outstanding = matches!(body, Body::Read { .. }).then(|| {
            self.inner.selector.sent(to, started);
            Outstanding {
                selector: self.inner.selector.clone(),
                to,
            }
        });
        if to == self.endpoint() {
            let node = self.clone();
            return async move {
                let read = outstanding;
                let (answer, facts) = node.serve_measured(body, 0).await;
                let now = node.inner.runtime.now_micros();
                let selector = &node.inner.selector;
                if let Some(facts) = facts {
                    selector.feedback(to, &facts);
                }
                selector.observe(to, now.saturating_sub(started), now);
                if read.is_some() {
                    selector.read_answered(to, now);
                }
                (to, Ok(answer))
            }
            .boxed();
        }
        let id = self.inner.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        self.inner.pending.lock().insert(id, (to, tx));
        let slot = PendingSlot {
            inner: Arc::downgrade(&self.inner),
            id,
        };
        let queued = self.send(to, id, body);
        let runtime = self.inner.runtime.clone();
        let selector = self.inner.selector.clone();
        let node = self.downgrade();
        async move {
            let _slot = slot;
            let answer = if queued { rx.await.ok() } else { None };
            let now = runtime.now_micros();
            match answer {
                Some(answer) => {
                    selector.observe(to, now.saturating_sub(started), now);
                    if outstanding.is_some() {
                        selector.read_answered(to, now);
                    }
                    (to, Ok(answer))
                }
                None => {
                    if outstanding.is_some() {
                        if let Some(node) = node.upgrade() {
                            node.unreachable(to, now);
                        }
                    }
                    (to, Err(NoAnswer::Dropped))
                }
            }
        }
        .boxed()
    }

    fn send(&self, to: Endpoint, id: u64, body: Body) -> bool {
        self.inner.transport.send(
            to,
            Envelope {
                version: PROTOCOL_VERSION,
                from: self.endpoint(),
                id,
                body,
            },
        )
    }

    fn now_ms(&self) -> u64 {
        self.inner.runtime.now_micros() / 1000
    }

    /// `call_timeout`, asked again when no answer comes (a message lost on a connection
    /// that broke): repair's requests are idempotent, and one lost message must not fail
    /// or stall a long repair.
    async fn call_retrying(&self, to: Endpoint, body: Body, ms: u64) -> Option<Body> {
        for attempt in 1..REPAIR_ATTEMPTS {
            let started = self.now_ms();
            if let Some(answer) = self.call_timeout(to, body.clone(), ms).await {
                return Some(answer);
            }
            // Failed at once (no connection to `to` right now): give it a moment to come
            // back before asking again.
            let waited = self.now_ms().saturating_sub(started);
            if waited < ms {
                let pause = (1000u64 << attempt).min(ms - waited);
                self.inner.runtime.sleep(pause).await;
            }
        }
        self.call_timeout(to, body, ms).await
    }

    /// `call` bounded by `ms`: the answer, or `None` on timeout or a dropped message.
    async fn call_timeout(&self, to: Endpoint, body: Body, ms: u64) -> Option<Body> {
        let mut call = self.call(to, body);
        let mut deadline = self.inner.runtime.sleep(ms);
        match select(&mut call, &mut deadline).await {
            Either::Left(((_, Ok(answer)), _)) => Some(answer),
            _ => None,
        }
    }
}

fn failure_text(f: &Failure) -> String {
    match f {
        Failure::Overloaded => "replica overloaded".into(),
        Failure::UnknownTable => "table unknown on a replica (schema not yet agreed)".into(),
        Failure::Storage(m) | Failure::TimedOut(m) => m.clone(),
    }
}

/// A schema version as hex, for logs.
fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
