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
use mosaic_types::Token;
use parking_lot::{Mutex, RwLock};

use crate::consistency::{ClusterError, ConsistencyLevel};
use crate::env::{Entries, Runtime, Store, Transport};
use crate::gossip::{Change, Membership};
use crate::message::{
    AppState, Body, EndpointState, Envelope, Failure, NodeStatus, SchemaSnapshot, TableKey,
    WireMutation, WireRange, WireTree, PROTOCOL_VERSION,
};
use crate::repair::{self, RepairReport};
use crate::ring::{Ring, Segment};
use crate::snitch::{ReadInfo, ReplicaSelector};
use crate::Endpoint;

/// A node's cluster settings.
#[derive(Clone, Debug, PartialEq)]
pub struct NodeConfig {
    /// This node's internode address.
    pub endpoint: Endpoint,
    /// Nodes contacted to join the cluster (this node may be one).
    pub seeds: Vec<Endpoint>,
    /// Milliseconds between gossip rounds.
    pub gossip_interval_ms: u64,
    /// Phi above which a silent node is convicted (Cassandra's default is 8).
    pub phi_convict_threshold: f64,
    /// How long a write waits for its acknowledgements.
    pub write_timeout_ms: u64,
    /// How long a read waits for its answers (and its read repair).
    pub read_timeout_ms: u64,
    /// How long a schema change waits for live peers to take it.
    pub schema_timeout_ms: u64,
    /// Peer requests served at once before more are refused as overloaded.
    pub replica_requests_max: usize,
    /// Hints are stored for a replica down less than this (0 disables hinted handoff).
    pub hint_window_ms: u64,
    /// How long repair waits for one answer (a tree, a page of a range, an acknowledged
    /// write) before it asks again; it asks [`REPAIR_ATTEMPTS`] times.
    pub repair_timeout_ms: u64,
    /// log2 of the leaves of each range's Merkle tree.
    pub repair_tree_depth: u8,
}

impl NodeConfig {
    /// Defaults for a node at `endpoint` (Cassandra's timeouts).
    pub fn new(endpoint: Endpoint) -> NodeConfig {
        NodeConfig {
            endpoint,
            seeds: vec![endpoint],
            gossip_interval_ms: 1000,
            phi_convict_threshold: 8.0,
            write_timeout_ms: 2000,
            read_timeout_ms: 5000,
            schema_timeout_ms: 10_000,
            replica_requests_max: 4096,
            hint_window_ms: 3 * 3600 * 1000,
            repair_timeout_ms: 60_000,
            repair_tree_depth: 8,
        }
    }
}

/// Times repair asks for one thing before the range fails.
const REPAIR_ATTEMPTS: usize = 3;

/// Token ranges a repair works on at once.
const REPAIR_RANGES_CONCURRENT: usize = 4;

/// Pause between two checks of schema agreement.
const SCHEMA_POLL_MS: u64 = 200;

/// Hints read per replay step.
const HINT_REPLAY_BATCH: usize = 64;

/// The writes of one table to one replica list.
struct WriteGroup {
    table: TableKey,
    replicas: Vec<Endpoint>,
    block_for: usize,
    mutations: Vec<WireMutation>,
}

/// A write sent to one replica of one group.
type WriteCall = BoxFuture<'static, (usize, Endpoint, Result<Body, NoAnswer>)>;

/// Live counters of hinted handoff.
#[derive(Default)]
struct Counters {
    hints_stored: AtomicU64,
    hints_replayed: AtomicU64,
    hints_failed: AtomicU64,
    repair_ranges: AtomicU64,
    repair_entries: AtomicU64,
}

/// A copy of the node's counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CounterSnapshot {
    /// Hints stored for replicas that were down or did not answer.
    pub hints_stored: u64,
    /// Hints delivered to their replica.
    pub hints_replayed: u64,
    /// Hints that could not be stored.
    pub hints_failed: u64,
    /// Token ranges repaired (or attempted) by this node.
    pub repair_ranges: u64,
    /// Entries repair wrote to replicas that lacked them.
    pub repair_entries: u64,
}

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
    pending: Mutex<HashMap<u64, oneshot::Sender<Body>>>,
    next_id: AtomicU64,
    listeners: Mutex<Vec<ChangeListener>>,
    schema_pulls: Mutex<HashMap<Endpoint, u64>>,
    replica_in_flight: AtomicUsize,
    stopped: AtomicBool,
    counters: Counters,
    replaying: Mutex<std::collections::HashSet<Endpoint>>,
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
fn fragment_ts(bytes: &[u8]) -> u64 {
    Fragment::decode(bytes)
        .ok()
        .and_then(|f| f.max_timestamp())
        .map_or(0, |t| t.to_engine())
}

/// The entries of `merged` a replica that answered `had` lacks or holds an older version
/// of, as writes that bring it up to date.
fn stale_entries(had: &[(Vec<u8>, Vec<u8>)], merged: &[(Vec<u8>, Vec<u8>)]) -> Vec<WireMutation> {
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
            }),
        };
        node.rebuild_ring();
        node
    }

    /// A handle that does not keep the node alive (for listeners the node itself holds).
    pub fn downgrade(&self) -> WeakNode {
        WeakNode {
            inner: Arc::downgrade(&self.inner),
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
                    states: states.clone(),
                },
            );
        }
    }

    /// Handles an envelope from a peer (the transport's receive path calls this).
    pub fn receive(&self, env: Envelope) {
        if env.body.is_response() {
            if let Some(tx) = self.inner.pending.lock().remove(&env.id) {
                let _ = tx.send(env.body);
            }
            return;
        }
        let from = env.from;
        let id = env.id;
        match env.body {
            Body::GossipSyn { states } => {
                let now = self.now_ms();
                let (changes, reply) = {
                    let mut m = self.inner.membership.lock();
                    let reply = m.newer_than(&states);
                    (m.merge(states, now), reply)
                };
                self.apply_changes(&changes);
                self.send(from, id, Body::GossipAck { states: reply });
            }
            Body::GossipAck { states } => {
                let now = self.now_ms();
                let changes = self.inner.membership.lock().merge(states, now);
                self.apply_changes(&changes);
            }
            Body::SchemaPull => {
                let snapshot = self.inner.store.schema();
                self.send(from, id, Body::SchemaPush(snapshot));
            }
            body @ (Body::Write { .. }
            | Body::Truncate { .. }
            | Body::Read { .. }
            | Body::SchemaPush(_)
            | Body::TreeRequest { .. }) => {
                let in_flight = self.inner.replica_in_flight.fetch_add(1, Ordering::SeqCst);
                if in_flight >= self.inner.config.replica_requests_max {
                    self.inner.replica_in_flight.fetch_sub(1, Ordering::SeqCst);
                    self.send(from, id, Body::Failed(Failure::Overloaded));
                    return;
                }
                let node = self.clone();
                self.inner.runtime.spawn(
                    async move {
                        let answer = node.serve(body).await;
                        node.inner.replica_in_flight.fetch_sub(1, Ordering::SeqCst);
                        node.send(from, id, answer);
                    }
                    .boxed(),
                );
            }
            // Responses were handled above.
            _ => {}
        }
    }

    /// Pushes this node's schema to every live peer and waits (bounded) for them to take
    /// it; returns how many did. Called after a local schema change.
    pub async fn push_schema(&self) -> usize {
        let snapshot = self.inner.store.schema();
        self.set_own_schema_version(snapshot.version);
        let peers: Vec<Endpoint> = self
            .inner
            .membership
            .lock()
            .peers()
            .into_iter()
            .filter(|(_, alive)| *alive)
            .map(|(e, _)| e)
            .collect();
        let mut calls: FuturesUnordered<CallFuture> = peers
            .into_iter()
            .map(|p| self.call(p, Body::SchemaPush(snapshot.clone())))
            .collect();
        let mut deadline = self
            .inner
            .runtime
            .sleep(self.inner.config.schema_timeout_ms);
        let mut acked = 0;
        while let Some(Some((_, answer))) = next_before(&mut calls, &mut deadline).await {
            if matches!(answer, Ok(Body::SchemaAck)) {
                acked += 1;
            }
        }
        acked
    }

    /// Applies `mutations` (table, token, write) at `cl` (see the module doc).
    pub async fn write(
        &self,
        mutations: Vec<(TableKey, Token, WireMutation)>,
        cl: ConsistencyLevel,
    ) -> Result<(), ClusterError> {
        let ring = self.ring();
        let mut groups: Vec<WriteGroup> = Vec::new();
        let mut index: HashMap<(TableKey, Vec<Endpoint>), usize> = HashMap::new();
        for (table, token, m) in mutations {
            let rf = self
                .inner
                .store
                .replication_factor(table)
                .ok_or(ClusterError::UnknownTable(table))?;
            let replicas = ring.replicas(token, rf);
            let gi = *index.entry((table, replicas.clone())).or_insert_with(|| {
                groups.push(WriteGroup {
                    table,
                    replicas,
                    block_for: cl.block_for(rf),
                    mutations: Vec::new(),
                });
                groups.len() - 1
            });
            if let Some(g) = groups.get_mut(gi) {
                g.mutations.push(m);
            }
        }
        // Availability first: nothing is sent unless every group can succeed (ANY is
        // satisfied by a hint).
        let now = self.now_ms();
        let (alive, down): (Vec<Vec<Endpoint>>, Vec<Vec<Endpoint>>) = {
            let m = self.inner.membership.lock();
            groups
                .iter()
                .map(|g| g.replicas.iter().partition(|r| m.is_alive(**r)))
                .unzip()
        };
        for (g, live) in groups.iter().zip(&alive) {
            if live.len() < g.block_for && cl != ConsistencyLevel::Any {
                return Err(ClusterError::Unavailable {
                    consistency: cl,
                    required: g.block_for,
                    alive: live.len(),
                });
            }
        }
        let groups = Arc::new(groups);
        // Hints for replicas known down (within the window), stored before anything is
        // sent, so an acknowledged write always reaches them eventually.
        let mut hinted = vec![0usize; groups.len()];
        for (gi, (g, dead)) in groups.iter().zip(&down).enumerate() {
            for r in dead {
                if self.hint_window_open(*r, now) && self.store_hint(*r, g).await {
                    hinted[gi] += 1;
                }
            }
        }
        let mut calls: FuturesUnordered<WriteCall> = FuturesUnordered::new();
        let mut sent = vec![0usize; groups.len()];
        for (gi, (g, live)) in groups.iter().zip(&alive).enumerate() {
            for r in live {
                let body = Body::Write {
                    table: g.table,
                    mutations: g.mutations.clone(),
                };
                calls.push(self.call(*r, body).map(move |(r, a)| (gi, r, a)).boxed());
                sent[gi] += 1;
            }
        }
        let mut acks = vec![0usize; groups.len()];
        if cl == ConsistencyLevel::Any {
            // A stored hint counts as the write for ANY.
            acks.clone_from(&hinted);
        }
        let mut failed = vec![0usize; groups.len()];
        let mut first_failure: Option<Failure> = None;
        let mut unacked: Vec<(usize, Endpoint)> = groups
            .iter()
            .zip(&alive)
            .enumerate()
            .flat_map(|(gi, (_, live))| live.iter().map(move |r| (gi, *r)))
            .collect();
        let satisfied = |acks: &[usize]| groups.iter().zip(acks).all(|(g, a)| *a >= g.block_for);
        let mut deadline = self.inner.runtime.sleep(self.inner.config.write_timeout_ms);
        loop {
            if satisfied(&acks) {
                if !unacked.is_empty() {
                    // The rest may still answer; those that don't in time get hints.
                    let node = self.clone();
                    let groups = groups.clone();
                    self.inner.runtime.spawn(
                        async move {
                            node.hint_stragglers(calls, deadline, unacked, &groups)
                                .await;
                        }
                        .boxed(),
                    );
                }
                return Ok(());
            }
            match next_before(&mut calls, &mut deadline).await {
                Some(Some((gi, r, Ok(Body::WriteAck)))) => {
                    unacked.retain(|u| *u != (gi, r));
                    if let Some(a) = acks.get_mut(gi) {
                        *a += 1;
                    }
                }
                Some(Some((gi, _, Ok(Body::Failed(f))))) => {
                    let (Some(g), Some(s), Some(x), Some(a)) = (
                        groups.get(gi),
                        sent.get(gi),
                        failed.get_mut(gi),
                        acks.get(gi),
                    ) else {
                        continue;
                    };
                    *x += 1;
                    first_failure.get_or_insert(f);
                    if s - *x < g.block_for {
                        return Err(write_failure(cl, *a, g.block_for, *x, first_failure));
                    }
                }
                // A reply of the wrong kind or a dropped message: no acknowledgement.
                Some(Some(_)) => {}
                Some(None) | None => {
                    for (gi, r) in &unacked {
                        if let Some(g) = groups.get(*gi) {
                            self.store_hint(*r, g).await;
                        }
                    }
                    let (received, block_for) = groups
                        .iter()
                        .zip(&acks)
                        .find(|(g, a)| **a < g.block_for)
                        .map_or((0, 0), |(g, a)| (*a, g.block_for));
                    return Err(ClusterError::WriteTimeout {
                        consistency: cl,
                        received,
                        block_for,
                    });
                }
            }
        }
    }

    /// Waits for the replicas of a successful write that had not answered; those still
    /// silent at the write's deadline get hints (as Cassandra's coordinator does).
    async fn hint_stragglers(
        &self,
        mut calls: FuturesUnordered<WriteCall>,
        mut deadline: BoxFuture<'static, ()>,
        mut unacked: Vec<(usize, Endpoint)>,
        groups: &[WriteGroup],
    ) {
        while !unacked.is_empty() {
            match next_before(&mut calls, &mut deadline).await {
                Some(Some((gi, r, Ok(Body::WriteAck)))) => unacked.retain(|u| *u != (gi, r)),
                Some(Some(_)) => {}
                Some(None) | None => break,
            }
        }
        for (gi, r) in unacked {
            if let Some(g) = groups.get(gi) {
                self.store_hint(r, g).await;
            }
        }
    }

    /// Whether hints are still kept for `node` (down for less than the hint window).
    fn hint_window_open(&self, node: Endpoint, now_ms: u64) -> bool {
        self.inner
            .membership
            .lock()
            .down_for_ms(node, now_ms)
            .is_none_or(|d| d < self.inner.config.hint_window_ms)
    }

    /// Stores a hint of `group`'s writes for `target`; whether it was stored.
    async fn store_hint(&self, target: Endpoint, group: &WriteGroup) -> bool {
        if self.inner.config.hint_window_ms == 0 {
            return false;
        }
        match self
            .inner
            .store
            .store_hint(target, group.table, group.mutations.clone())
            .await
        {
            Ok(()) => {
                self.inner
                    .counters
                    .hints_stored
                    .fetch_add(1, Ordering::Relaxed);
                true
            }
            Err(_) => {
                self.inner
                    .counters
                    .hints_failed
                    .fetch_add(1, Ordering::Relaxed);
                false
            }
        }
    }

    /// Replays this node's hints for `target` (one replay per target at a time), oldest
    /// first, deleting each once the target acknowledged it; stops at the first failure.
    async fn replay_hints(&self, target: Endpoint) {
        if !self.inner.replaying.lock().insert(target) {
            return;
        }
        'replay: loop {
            let Ok(batch) = self.inner.store.hints(target, HINT_REPLAY_BATCH).await else {
                break;
            };
            if batch.is_empty() {
                break;
            }
            for hint in batch {
                if !self.is_alive(target) {
                    break 'replay;
                }
                if self.inner.store.replication_factor(hint.table).is_none() {
                    // Its table was dropped: nothing left to deliver.
                    if self.inner.store.delete_hint(target, hint.id).await.is_err() {
                        break 'replay;
                    }
                    continue;
                }
                let body = Body::Write {
                    table: hint.table,
                    mutations: hint.mutations.clone(),
                };
                let answer = self
                    .call_timeout(target, body, self.inner.config.write_timeout_ms)
                    .await;
                // A target that lacks the schema yet answers UnknownTable: retried later.
                match answer {
                    Some(Body::WriteAck) => {
                        if self.inner.store.delete_hint(target, hint.id).await.is_err() {
                            break 'replay;
                        }
                        self.inner
                            .counters
                            .hints_replayed
                            .fetch_add(1, Ordering::Relaxed);
                    }
                    _ => break 'replay,
                }
            }
        }
        self.inner.replaying.lock().remove(&target);
    }

    /// Starts replaying hints to every live node this node holds hints for.
    fn replay_due_hints(&self) {
        for target in self.inner.store.hint_targets() {
            if target != self.endpoint()
                && self.is_alive(target)
                && !self.inner.replaying.lock().contains(&target)
            {
                let node = self.clone();
                self.inner
                    .runtime
                    .spawn(async move { node.replay_hints(target).await }.boxed());
            }
        }
    }

    /// Repairs `tables` over every token range this node replicates (see
    /// [`crate::repair`]). A range with a replica down is skipped and counted as failed.
    /// Callers pick `tables` after [`Node::await_schema_agreement`], so a node restarted
    /// without data repairs the tables the cluster has.
    pub async fn repair(&self, tables: &[TableKey]) -> RepairReport {
        let mut report = RepairReport::default();
        for table in tables {
            let Some(rf) = self.inner.store.replication_factor(*table) else {
                continue;
            };
            let ring = self.ring();
            let mut ranges = ring.ranges_of(self.endpoint(), rf).into_iter();
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
        report
    }

    async fn repair_range(
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
        let mismatched: Vec<u64> = (0..n)
            .filter(|i| {
                let first = trees.first().and_then(|t| t.get(*i as usize));
                !trees.iter().all(|t| t.get(*i as usize) == first)
            })
            .collect();
        report.leaves_mismatched = mismatched.len() as u64;
        for (first, last) in repair::runs(&mismatched) {
            let (l, _) = repair::slice(left, right, first, n);
            let (_, r) = repair::slice(left, right, last, n);
            for range in mosaic_rows::ring_range(l, r) {
                if let Err(why) = self.stream_range(table, range, replicas, &mut report).await {
                    return fail(report, why);
                }
            }
        }
        report
    }

    /// Reads `range` in full from every replica, merges, and writes to each replica the
    /// entries it lacked.
    async fn stream_range(
        &self,
        table: TableKey,
        range: KeyRange,
        replicas: &[Endpoint],
        report: &mut RepairReport,
    ) -> Result<(), String> {
        let timeout = self.inner.config.repair_timeout_ms;
        let mut answers: Vec<Entries> = Vec::with_capacity(replicas.len());
        for r in replicas {
            let mut all = Vec::new();
            let mut start = range.start.clone();
            loop {
                let body = Body::Read {
                    table,
                    range: WireRange {
                        start: start.clone(),
                        end: range.end.clone(),
                    },
                    limit: repair::READ_CHUNK as u32,
                    digest: false,
                    tags: Vec::new(),
                };
                match self.call_retrying(*r, body.clone(), timeout).await {
                    Some(Body::ReadData { entries, exhausted }) => {
                        let next = entries.last().map(|(k, _)| repair::successor(k));
                        all.extend(entries);
                        match next {
                            Some(n) if !exhausted => start = n,
                            _ => break,
                        }
                    }
                    Some(Body::Failed(f)) => return Err(format!("{r}: {}", failure_text(&f))),
                    _ => return Err(format!("{r} did not answer a read")),
                }
            }
            answers.push((all, true));
        }
        let (merged, _) = merge_answers(&answers, usize::MAX);
        for (r, (entries, _)) in replicas.iter().zip(&answers) {
            let stale = stale_entries(entries, &merged);
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
                match self.call_retrying(*r, body.clone(), timeout).await {
                    Some(Body::WriteAck) => {}
                    Some(Body::Failed(f)) => return Err(format!("{r}: {}", failure_text(&f))),
                    _ => return Err(format!("{r} did not acknowledge repaired data")),
                }
            }
        }
        Ok(())
    }

    /// `call_timeout`, asked again when no answer comes (a message lost on a connection
    /// that broke): repair's requests are idempotent, and one lost message must not fail
    /// or stall a long repair.
    async fn call_retrying(&self, to: Endpoint, body: Body, ms: u64) -> Option<Body> {
        for _ in 1..REPAIR_ATTEMPTS {
            if let Some(answer) = self.call_timeout(to, body.clone(), ms).await {
                return Some(answer);
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

    /// Waits (at most `timeout_ms`) until every live node has this node's schema version,
    /// pulling the schema from those that differ (the newer one wins everywhere); whether
    /// they agree. A node just restarted without data gets its tables this way.
    pub async fn await_schema_agreement(&self, timeout_ms: u64) -> bool {
        let start = self.now_ms();
        loop {
            let mine = self.inner.store.schema_version();
            let differing: Vec<Endpoint> = self
                .states()
                .into_iter()
                .filter(|(s, up)| *up && s.endpoint != self.endpoint())
                .filter(|(s, _)| s.app.schema_version != mine)
                .map(|(s, _)| s.endpoint)
                .collect();
            if differing.is_empty() {
                return true;
            }
            if self.now_ms().saturating_sub(start) >= timeout_ms {
                return false;
            }
            for peer in differing {
                self.send(peer, 0, Body::SchemaPull);
            }
            self.inner.runtime.sleep(SCHEMA_POLL_MS).await;
        }
    }

    /// Counters of hinted handoff and repair.
    pub fn counters(&self) -> CounterSnapshot {
        let c = &self.inner.counters;
        CounterSnapshot {
            hints_stored: c.hints_stored.load(Ordering::Relaxed),
            hints_replayed: c.hints_replayed.load(Ordering::Relaxed),
            hints_failed: c.hints_failed.load(Ordering::Relaxed),
            repair_ranges: c.repair_ranges.load(Ordering::Relaxed),
            repair_entries: c.repair_entries.load(Ordering::Relaxed),
        }
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

    /// Reads up to `limit` entries of `range` of `table` at `cl` (see the module doc).
    pub async fn read(
        &self,
        table: TableKey,
        range: KeyRange,
        limit: usize,
        cl: ConsistencyLevel,
    ) -> Result<Entries, ClusterError> {
        let rf = self
            .inner
            .store
            .replication_factor(table)
            .ok_or(ClusterError::UnknownTable(table))?;
        if limit == 0 {
            return Ok((Vec::new(), false));
        }
        let segments = self.ring().segments(&range, rf);
        let count = segments.len();
        let mut out: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
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
                let (entries, exhausted) = self.read_segment(table, piece, want, rf, cl).await?;
                let next = entries.last().map(|(k, _)| repair::successor(k));
                out.extend(entries);
                if out.len() >= limit {
                    return Ok((out, exhausted && i + 1 == count));
                }
                match next {
                    Some(start) if !exhausted => seg.range.start = start,
                    _ => break,
                }
            }
        }
        Ok((out, true))
    }

    async fn read_segment(
        &self,
        table: TableKey,
        seg: Segment,
        limit: usize,
        rf: usize,
        cl: ConsistencyLevel,
    ) -> Result<Entries, ClusterError> {
        let block_for = cl.block_for(rf);
        let mut live: Vec<Endpoint> = {
            let m = self.inner.membership.lock();
            seg.replicas
                .iter()
                .copied()
                .filter(|r| m.is_alive(*r))
                .collect()
        };
        if live.len() < block_for {
            return Err(ClusterError::Unavailable {
                consistency: cl,
                required: block_for,
                alive: live.len(),
            });
        }
        let info = ReadInfo {
            key: &seg.range.start,
            limit,
        };
        let tags = self.inner.selector.order(&mut live, self.endpoint(), &info);
        live.truncate(block_for);
        let targets = live;
        let wire = WireRange {
            start: seg.range.start.clone(),
            end: seg.range.end.clone(),
        };
        let read = |digest: bool| Body::Read {
            table,
            range: wire.clone(),
            limit: u32::try_from(limit).unwrap_or(u32::MAX),
            digest,
            tags: tags.clone(),
        };
        // First round: data from the best replica, digests from the others.
        let mut calls: FuturesUnordered<CallFuture> = targets
            .iter()
            .enumerate()
            .map(|(i, r)| self.call(*r, read(i > 0)))
            .collect();
        let mut deadline = self.inner.runtime.sleep(self.inner.config.read_timeout_ms);
        let mut data: Option<Entries> = None;
        let mut digests: Vec<[u8; 16]> = Vec::new();
        let mut failures: Vec<Failure> = Vec::new();
        while data.is_some() as usize + digests.len() < block_for {
            match next_before(&mut calls, &mut deadline).await {
                Some(Some((_, Ok(Body::ReadData { entries, exhausted })))) => {
                    data = Some((entries, exhausted));
                }
                Some(Some((_, Ok(Body::ReadDigest { digest })))) => digests.push(digest),
                Some(Some((_, Ok(Body::Failed(f))))) => {
                    failures.push(f);
                    return Err(read_failure(cl, digests.len(), block_for, failures));
                }
                Some(Some(_)) => {}
                Some(None) | None => {
                    return Err(ClusterError::ReadTimeout {
                        consistency: cl,
                        received: data.is_some() as usize + digests.len(),
                        block_for,
                        data_present: data.is_some(),
                    });
                }
            }
        }
        let Some(data) = data else {
            return Err(ClusterError::ReadTimeout {
                consistency: cl,
                received: digests.len(),
                block_for,
                data_present: false,
            });
        };
        if digests.is_empty() {
            return Ok(data);
        }
        let expected = digest(&data.0, data.1);
        if digests.iter().all(|d| *d == expected) {
            return Ok(data);
        }
        // Mismatch: full data from every target, merged, and written back where stale.
        let mut calls: FuturesUnordered<CallFuture> =
            targets.iter().map(|r| self.call(*r, read(false))).collect();
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
        self.repair_replicas(table, &answers, &merged.0, cl, block_for)
            .await?;
        Ok(merged)
    }

    /// Writes `merged` to each replica whose answer differed, and waits for them.
    async fn repair_replicas(
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

    /// Serves a request from a peer (or from this node as coordinator).
    async fn serve(&self, body: Body) -> Body {
        let store = &self.inner.store;
        match body {
            Body::Write { table, mutations } => match store.apply(table, mutations).await {
                Ok(()) => Body::WriteAck,
                Err(f) => Body::Failed(f),
            },
            Body::Read {
                table,
                range,
                limit,
                digest: want_digest,
                tags,
            } => {
                let range = KeyRange {
                    start: range.start,
                    end: range.end,
                };
                match store.read(table, range, limit as usize, &tags).await {
                    Ok((entries, exhausted)) if want_digest => Body::ReadDigest {
                        digest: digest(&entries, exhausted),
                    },
                    Ok((entries, exhausted)) => Body::ReadData { entries, exhausted },
                    Err(f) => Body::Failed(f),
                }
            }
            Body::Truncate { table } => match store.truncate(table).await {
                Ok(()) => Body::TruncateAck,
                Err(f) => Body::Failed(f),
            },
            Body::SchemaPush(snapshot) => match store.adopt_schema(snapshot).await {
                Ok(_) => {
                    let version = store.schema().version;
                    self.set_own_schema_version(version);
                    Body::SchemaAck
                }
                Err(e) => Body::Failed(Failure::Storage(e)),
            },
            Body::TreeRequest {
                table,
                left,
                right,
                depth,
            } => {
                match repair::build_tree(&**store, table, Token(left), Token(right), depth).await {
                    Ok(leaves) => Body::Tree(WireTree { leaves }),
                    Err(f) => Body::Failed(f),
                }
            }
            other => Body::Failed(Failure::Storage(format!(
                "not a request: {}",
                body_name(&other)
            ))),
        }
    }

    /// Sends `body` to `to` (or serves it here when `to` is this node) and resolves with
    /// the answer; dropping the future forgets the request.
    fn call(&self, to: Endpoint, body: Body) -> CallFuture {
        let started = self.inner.runtime.now_micros();
        if to == self.endpoint() {
            let node = self.clone();
            return async move {
                let answer = node.serve(body).await;
                let elapsed = node.inner.runtime.now_micros().saturating_sub(started);
                node.inner.selector.observe(to, elapsed);
                (to, Ok(answer))
            }
            .boxed();
        }
        let id = self.inner.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        self.inner.pending.lock().insert(id, tx);
        let slot = PendingSlot {
            inner: Arc::downgrade(&self.inner),
            id,
        };
        let queued = self.send(to, id, body);
        let runtime = self.inner.runtime.clone();
        let selector = self.inner.selector.clone();
        async move {
            let _slot = slot;
            if !queued {
                return (to, Err(NoAnswer::Dropped));
            }
            match rx.await {
                Ok(answer) => {
                    selector.observe(to, runtime.now_micros().saturating_sub(started));
                    (to, Ok(answer))
                }
                Err(_) => (to, Err(NoAnswer::Dropped)),
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

    fn set_own_schema_version(&self, version: [u8; 16]) {
        let mut m = self.inner.membership.lock();
        if m.own().app.schema_version != version {
            m.update_own(|s| s.app.schema_version = version);
        }
    }

    fn rebuild_ring(&self) {
        let ring = {
            let m = self.inner.membership.lock();
            let owners: Vec<(Endpoint, Vec<Token>)> = m
                .states()
                .map(|s| (s.endpoint, s.app.tokens.iter().map(|t| Token(*t)).collect()))
                .collect();
            Ring::new(owners.iter().map(|(e, t)| (*e, t.as_slice())))
        };
        *self.inner.ring.write() = Arc::new(ring);
    }

    fn apply_changes(&self, changes: &[Change]) {
        if changes.is_empty() {
            return;
        }
        if changes.iter().any(|c| matches!(c, Change::Joined(_))) {
            self.rebuild_ring();
        }
        let listeners = self.inner.listeners.lock().clone();
        if listeners.is_empty() {
            return;
        }
        for c in changes {
            let node = match c {
                Change::Joined(n) | Change::Up(n) | Change::Down(n) => *n,
            };
            let Some(state) = self.inner.membership.lock().state(node).cloned() else {
                continue;
            };
            for l in &listeners {
                l(c, &state);
            }
        }
    }

    async fn gossip_loop(&self) {
        let interval = self.inner.config.gossip_interval_ms;
        while !self.inner.stopped.load(Ordering::SeqCst) {
            self.gossip_round();
            self.inner.runtime.sleep(interval).await;
        }
    }

    /// One gossip round (see [`crate::gossip`]).
    fn gossip_round(&self) {
        let now = self.now_ms();
        let me = self.endpoint();
        let load = self.inner.store.load_bytes();
        let schema = self.inner.store.schema_version();
        let (changes, states, live, dead, mismatched) = {
            let mut m = self.inner.membership.lock();
            if m.own().app.load_bytes != load || m.own().app.schema_version != schema {
                m.update_own(|s| {
                    s.app.load_bytes = load;
                    s.app.schema_version = schema;
                });
            }
            let changes = m.tick(now);
            let states: Vec<EndpointState> = m.states().cloned().collect();
            let (live, dead): (Vec<_>, Vec<_>) = m.peers().into_iter().partition(|(_, a)| *a);
            let mismatched: Vec<Endpoint> = live
                .iter()
                .filter(|(e, _)| m.state(*e).is_some_and(|s| s.app.schema_version != schema))
                .map(|(e, _)| *e)
                .collect();
            (
                changes,
                states,
                live.into_iter().map(|(e, _)| e).collect::<Vec<_>>(),
                dead.into_iter().map(|(e, _)| e).collect::<Vec<_>>(),
                mismatched,
            )
        };
        self.apply_changes(&changes);
        self.replay_due_hints();
        let pick = |list: &[Endpoint]| -> Option<Endpoint> {
            if list.is_empty() {
                None
            } else {
                list.get((self.inner.runtime.random() % list.len() as u64) as usize)
                    .copied()
            }
        };
        let mut targets: Vec<Endpoint> = Vec::new();
        if let Some(p) = pick(&live) {
            targets.push(p);
        }
        // An unreachable node, with probability dead / (live + 1), so partitions heal.
        if !dead.is_empty()
            && self.inner.runtime.random() % (live.len() as u64 + 1) < dead.len() as u64
        {
            if let Some(p) = pick(&dead) {
                targets.push(p);
            }
        }
        // A seed, when the live peer was not one (or there was none), so views converge.
        let seeds: Vec<Endpoint> = self
            .inner
            .config
            .seeds
            .iter()
            .copied()
            .filter(|s| *s != me)
            .collect();
        if targets.first().is_none_or(|t| !seeds.contains(t)) {
            if let Some(s) = pick(&seeds) {
                targets.push(s);
            }
        }
        targets.dedup();
        for t in targets {
            self.send(
                t,
                0,
                Body::GossipSyn {
                    states: states.clone(),
                },
            );
        }
        for peer in mismatched {
            let due = {
                let mut pulls = self.inner.schema_pulls.lock();
                let last = pulls.get(&peer).copied().unwrap_or(0);
                let due = last == 0
                    || now.saturating_sub(last) >= 2 * self.inner.config.gossip_interval_ms;
                if due {
                    pulls.insert(peer, now.max(1));
                }
                due
            };
            if due {
                self.send(peer, 0, Body::SchemaPull);
            }
        }
    }

    /// The schema this node has.
    pub fn schema(&self) -> SchemaSnapshot {
        self.inner.store.schema()
    }
}

fn body_name(body: &Body) -> &'static str {
    match body {
        Body::Write { .. } => "Write",
        Body::WriteAck => "WriteAck",
        Body::Read { .. } => "Read",
        Body::ReadData { .. } => "ReadData",
        Body::ReadDigest { .. } => "ReadDigest",
        Body::Failed(_) => "Failed",
        Body::GossipSyn { .. } => "GossipSyn",
        Body::GossipAck { .. } => "GossipAck",
        Body::SchemaPull => "SchemaPull",
        Body::SchemaPush(_) => "SchemaPush",
        Body::SchemaAck => "SchemaAck",
        Body::TreeRequest { .. } => "TreeRequest",
        Body::Truncate { .. } => "Truncate",
        Body::TruncateAck => "TruncateAck",
        Body::Tree(_) => "Tree",
    }
}

fn failure_text(f: &Failure) -> String {
    match f {
        Failure::Overloaded => "replica overloaded".into(),
        Failure::UnknownTable => "table unknown on a replica (schema not yet agreed)".into(),
        Failure::Storage(m) => m.clone(),
    }
}

fn write_failure(
    cl: ConsistencyLevel,
    received: usize,
    block_for: usize,
    failed: usize,
    first: Option<Failure>,
) -> ClusterError {
    match first {
        Some(Failure::Overloaded) => ClusterError::Overloaded(format!(
            "Too many replicas overloaded to achieve {}",
            cl.name()
        )),
        f => ClusterError::WriteFailure {
            consistency: cl,
            received,
            block_for,
            failed,
            reason: f.as_ref().map(failure_text).unwrap_or_default(),
        },
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
