//! One simulated run: the cluster, its clients and its faults, phase by phase.
//!
//! Owns the composition: N [`Node`]s over [`SimStore`]s, wired to the [`Network`] and the
//! [`Executor`], the client tasks that drive the workload, and the fault schedule. A run
//! goes through five phases, each bounded in virtual time and in polls (a bound that
//! runs out is itself a reported failure — a livelock or a cluster that never settles):
//!
//! 1. **join**: every node starts and gossips until all see all alive with the full ring;
//! 2. **load**: clients write and read through random coordinators at random levels while
//!    the fault schedule crashes, restarts and partitions nodes;
//! 3. **quiesce**: faults stop, every node runs again, the network heals, membership
//!    converges, and every node agrees on the schema (the clients changed it now and then);
//! 4. **settle**: every key is read at ALL, which repairs its replicas;
//! 5. **compare**: the replicas of every key must hold identical bytes.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use futures::channel::oneshot;
use futures::future::{BoxFuture, FutureExt};
use mosaic_cluster::message::{AppState, EndpointState, NodeStatus};
use mosaic_cluster::snitch::DynamicSnitch;
use mosaic_cluster::{ConsistencyLevel, Node, NodeConfig, Store, WireMutation};
use mosaic_rows::{encode_token, KeyRange};
use mosaic_types::Token;
use parking_lot::Mutex;

use crate::checker::{Answer, Checker, Settle, Stats};
use crate::config::{Config, Durability};
use crate::executor::{Executor, Owner};
use crate::network::{endpoint, NetStats, Network, SimRuntime, SimTransport};
use crate::prng::Prng;
use crate::store::{table_key, SimStore};

/// Knobs for tests of the simulator itself.
#[derive(Clone, Debug)]
pub struct Options {
    /// Hold writes that crashes destroyed to their full promise (see
    /// [`Checker::new`]).
    pub ignore_losses: bool,
    /// Replace the seed's durability (to force lossy stores).
    pub durability: Option<Durability>,
    /// Polls a run may spend before it is declared stuck.
    pub polls_max: u64,
    /// Restart nodes without the peers they knew (as a server that does not persist
    /// them would), to show what `Node::restore_peers` prevents.
    pub forget_peers: bool,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            ignore_losses: false,
            durability: None,
            polls_max: 20_000_000,
            forget_peers: false,
        }
    }
}

/// Faults injected.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FaultStats {
    /// Nodes crashed.
    pub crashes: u64,
    /// Of those, how many announced a clean shutdown first.
    pub clean_shutdowns: u64,
    /// Nodes restarted.
    pub restarts: u64,
    /// Partitions.
    pub partitions: u64,
    /// Stored writes crashes destroyed (unsynced, lossy stores).
    pub writes_lost: u64,
    /// Copies of keys held by nodes that are not their replicas, at the end.
    pub stray_copies: u64,
    /// Schema changes made (not a fault: they race the faults).
    pub schema_changes: u64,
}

/// What a run did and found.
#[derive(Clone, Debug)]
pub struct Report {
    /// The seed.
    pub seed: u64,
    /// Its configuration.
    pub config: Config,
    /// Invariants broken (empty for a passing run).
    pub violations: Vec<String>,
    /// The workload's outcomes.
    pub stats: Stats,
    /// The network's.
    pub net: NetStats,
    /// The faults'.
    pub faults: FaultStats,
    /// Virtual time the run took.
    pub virtual_ms: u64,
    /// Task polls.
    pub polls: u64,
    /// A digest of everything that happened: equal for two runs of one seed.
    pub trace_hash: u64,
}

impl Report {
    /// Whether every invariant held.
    pub fn passed(&self) -> bool {
        self.violations.is_empty()
    }
}

struct World {
    config: Config,
    exec: Arc<Executor>,
    net: Arc<Network>,
    stores: Vec<Arc<SimStore>>,
    checker: Mutex<Checker>,
    tokens: Vec<Vec<i64>>,
    key_tokens: Vec<i64>,
    generations: Mutex<Vec<u64>>,
    /// The peer states each node knew when it last went down (what the server persists,
    /// as Cassandra's `system.peers`), restored when it restarts.
    peers: Mutex<Vec<Vec<EndpointState>>>,
    down: Mutex<Vec<bool>>,
    next_owner: AtomicU64,
    rng_root: Prng,
    workload_rng: Mutex<Prng>,
    fault_rng: Mutex<Prng>,
    faults: Mutex<FaultStats>,
    stopping: AtomicBool,
    faults_in_progress: AtomicUsize,
    partition_id: AtomicU64,
    clients_done: AtomicUsize,
    schema_changes: AtomicU64,
    forget_peers: bool,
}

/// A client operation.
enum Op {
    Write {
        coordinator: usize,
        table: usize,
        keys: Vec<usize>,
        cl: ConsistencyLevel,
    },
    Read {
        coordinator: usize,
        table: usize,
        keys: Vec<usize>,
        limit: usize,
        cl: ConsistencyLevel,
    },
    /// A schema change on the coordinator, pushed to its peers.
    SchemaChange { coordinator: usize },
}

/// The levels clients use: reads every one but the first and last (ANY and EACH_QUORUM
/// are write-only in Cassandra; the SERIAL levels are not served).
const LEVELS: [ConsistencyLevel; 9] = [
    ConsistencyLevel::Any,
    ConsistencyLevel::One,
    ConsistencyLevel::Two,
    ConsistencyLevel::Three,
    ConsistencyLevel::Quorum,
    ConsistencyLevel::All,
    ConsistencyLevel::LocalOne,
    ConsistencyLevel::LocalQuorum,
    ConsistencyLevel::EachQuorum,
];

/// One of `levels`, mostly one that `replicas` replicas can satisfy (the others are
/// Unavailable at once, which is worth checking now and then, not half the time).
fn pick_level(rng: &mut Prng, levels: &[ConsistencyLevel], replicas: usize) -> ConsistencyLevel {
    let satisfiable: Vec<ConsistencyLevel> = levels
        .iter()
        .copied()
        .filter(|cl| cl.block_for(replicas) <= replicas)
        .collect();
    let from = if rng.chance(200_000) || satisfiable.is_empty() {
        levels
    } else {
        &satisfiable
    };
    rng.pick(from).unwrap_or(ConsistencyLevel::One)
}

/// Virtual time each waiting phase may take.
const PHASE_MAX_MICROS: u64 = 300_000_000;

fn engine_key(token: i64, index: usize) -> Vec<u8> {
    let mut k = encode_token(Token(token)).to_vec();
    k.extend_from_slice(&[b'k', index as u8]);
    k
}

fn key_range(key: &[u8]) -> KeyRange {
    let mut end = key.to_vec();
    end.push(0);
    KeyRange {
        start: key.to_vec(),
        end: Some(end),
    }
}

impl World {
    fn new(seed: u64, options: &Options) -> Arc<World> {
        let mut config = Config::from_seed(seed);
        if let Some(d) = options.durability {
            config.durability = d;
        }
        let root = Prng::new(seed);
        let mut layout = root.fork(1);
        let tokens: Vec<Vec<i64>> = (0..config.nodes)
            .map(|_| {
                (0..config.num_tokens)
                    .map(|_| layout.next_u64() as i64)
                    .collect()
            })
            .collect();
        let key_tokens: Vec<i64> = (0..config.keys).map(|_| layout.next_u64() as i64).collect();
        let keys = key_tokens
            .iter()
            .enumerate()
            .map(|(i, t)| engine_key(*t, i))
            .collect();
        let exec = Executor::new(config.shuffle_tasks.then(|| root.fork(2)));
        let net = Network::new(exec.clone(), &config, root.fork(3));
        let stores = (0..config.nodes)
            .map(|i| {
                let store = SimStore::new(&config.rf, config.durability);
                Arc::new(match config.storage_latency_max_us {
                    0 => store,
                    max_us => store.with_latency(exec.clone(), root.fork(0x200 + i as u64), max_us),
                })
            })
            .collect();
        let checker = Checker::new(config.rf.clone(), keys, options.ignore_losses);
        Arc::new(World {
            exec,
            net,
            stores,
            checker: Mutex::new(checker),
            tokens,
            key_tokens,
            generations: Mutex::new(vec![0; config.nodes]),
            peers: Mutex::new(vec![Vec::new(); config.nodes]),
            down: Mutex::new(vec![true; config.nodes]),
            next_owner: AtomicU64::new(1),
            rng_root: root.clone(),
            workload_rng: Mutex::new(root.fork(4)),
            fault_rng: Mutex::new(root.fork(5)),
            faults: Mutex::new(FaultStats::default()),
            stopping: AtomicBool::new(false),
            faults_in_progress: AtomicUsize::new(0),
            partition_id: AtomicU64::new(0),
            clients_done: AtomicUsize::new(0),
            schema_changes: AtomicU64::new(0),
            forget_peers: options.forget_peers,
            config,
        })
    }

    fn now(&self) -> u64 {
        self.exec.now_micros()
    }

    /// Starts (or restarts) node `i` over its store, with a new incarnation and a larger
    /// generation.
    fn start_node(&self, i: usize) {
        let generation = {
            let mut g = self.generations.lock();
            let Some(slot) = g.get_mut(i) else {
                return;
            };
            *slot += 1;
            *slot
        };
        let Some(store) = self.stores.get(i).cloned() else {
            return;
        };
        let owner = Owner(self.next_owner.fetch_add(1, Ordering::SeqCst));
        let runtime = SimRuntime::new(
            self.exec.clone(),
            owner,
            self.rng_root.fork(0x100 + owner.0),
        );
        let transport = SimTransport::new(self.net.clone(), i, owner);
        let ep = endpoint(i);
        let config = NodeConfig {
            endpoint: ep,
            seeds: (0..self.config.nodes.min(2)).map(endpoint).collect(),
            gossip_interval_ms: self.config.gossip_interval_ms,
            phi_convict_threshold: self.config.phi_convict_threshold,
            write_timeout_ms: self.config.write_timeout_ms,
            read_timeout_ms: self.config.read_timeout_ms,
            schema_timeout_ms: 10_000,
            replica_requests_max: self.config.replica_requests_max,
            ..NodeConfig::new(ep)
        };
        let mut host_id = [0u8; 16];
        host_id[0] = i as u8 + 1;
        let app = AppState {
            host_id: mosaic_types::HostId(host_id),
            tokens: self.tokens.get(i).cloned().unwrap_or_default(),
            rpc_address: ep.ip(),
            native_port: 9042,
            admin_port: 0,
            data_center: "datacenter1".into(),
            rack: "rack1".into(),
            release_version: "mosaic-sim".into(),
            schema_version: store.schema().version,
            status: NodeStatus::Normal,
            load_bytes: 0,
        };
        let node = Node::new(
            config,
            app,
            generation,
            Arc::new(runtime),
            Arc::new(transport),
            store.clone(),
            Arc::new(DynamicSnitch::default()),
        );
        if !self.forget_peers {
            let known = self.peers.lock().get(i).cloned().unwrap_or_default();
            node.restore_peers(known);
        }
        self.net.install(i, node.clone(), owner);
        if let Some(d) = self.down.lock().get_mut(i) {
            *d = false;
        }
        node.start();
        if let Durability::Periodic { interval_ms, .. } = self.config.durability {
            let exec = self.exec.clone();
            self.exec.spawn(
                owner,
                async move {
                    loop {
                        exec.sleep(interval_ms * 1000).await;
                        store.sync();
                    }
                }
                .boxed(),
            );
        }
    }

    /// Crashes node `i`: its tasks and in-flight messages die, and a lossy store loses a
    /// seeded suffix of its unsynced writes.
    fn crash(&self, i: usize) {
        let Some((node, owner)) = self.net.remove(i) else {
            return;
        };
        let known: Vec<EndpointState> = node.states().into_iter().map(|(s, _)| s).collect();
        if let Some(p) = self.peers.lock().get_mut(i) {
            *p = known;
        }
        self.exec.kill(owner);
        if let Some(d) = self.down.lock().get_mut(i) {
            *d = true;
        }
        let lossy = matches!(
            self.config.durability,
            Durability::Periodic { lossy: true, .. }
        );
        let Some(store) = self.stores.get(i) else {
            return;
        };
        let lost = {
            let mut rng = self.fault_rng.lock();
            store.crash(|n| {
                if lossy {
                    rng.below(n as u64 + 1) as usize
                } else {
                    n
                }
            })
        };
        let mut faults = self.faults.lock();
        faults.crashes += 1;
        faults.writes_lost += lost.len() as u64;
        drop(faults);
        let mut checker = self.checker.lock();
        for (_, m) in &lost {
            checker.record_loss(i, &m.fragment);
        }
    }

    /// Node `i`'s view of the cluster, for reports: its ring and whom it believes alive.
    fn view_of(&self, i: usize) -> String {
        let Some((node, _)) = self.net.node(i) else {
            return format!("coordinator {i} down");
        };
        let alive: Vec<usize> = (0..self.config.nodes)
            .filter(|j| node.is_alive(endpoint(*j)))
            .collect();
        format!(
            "coordinator {i} at {} µs, ring of {} nodes, alive {alive:?}",
            self.now(),
            node.ring().nodes().len()
        )
    }

    fn is_down(&self, i: usize) -> bool {
        self.down.lock().get(i).copied().unwrap_or(false)
    }

    /// Whether every node runs, sees every other alive, and has the full ring.
    fn converged(&self) -> bool {
        let n = self.config.nodes;
        (0..n).all(|i| {
            self.net.node(i).is_some_and(|(node, _)| {
                node.ring().nodes().len() == n && (0..n).all(|j| node.is_alive(endpoint(j)))
            })
        })
    }

    /// Runs `f` on node `i` as a task of its incarnation; `None` if it is down or crashes
    /// before `f` finishes (the client's connection died).
    async fn on_node<T: Send + 'static>(
        &self,
        i: usize,
        f: impl FnOnce(Node) -> BoxFuture<'static, T>,
    ) -> Option<T> {
        let (node, owner) = self.net.node(i)?;
        let (tx, rx) = oneshot::channel();
        let task = f(node);
        self.exec.spawn(
            owner,
            async move {
                let _ = tx.send(task.await);
            }
            .boxed(),
        );
        rx.await.ok()
    }

    /// A schema change on node `i`, pushed to the peers it believes alive.
    async fn change_schema(&self, i: usize) {
        let Some(store) = self.stores.get(i) else {
            return;
        };
        if self.net.node(i).is_none() {
            return;
        }
        store.change_schema(i);
        self.schema_changes.fetch_add(1, Ordering::SeqCst);
        self.on_node(i, |node| async move { node.push_schema().await }.boxed())
            .await;
    }

    /// Whether every store has the same schema and every node sees every node gossip
    /// its version (the schema agreement drivers wait for).
    fn schema_agreed(&self) -> bool {
        let Some(first) = self.stores.first().map(|s| s.schema()) else {
            return true;
        };
        self.stores.iter().all(|s| s.schema() == first)
            && (0..self.config.nodes).all(|i| {
                self.net.node(i).is_some_and(|(node, _)| {
                    node.states()
                        .iter()
                        .all(|(state, _)| state.app.schema_version == first.version)
                })
            })
    }

    /// A write (a batch when several keys) of `keys` of `table` at `cl`.
    async fn write(
        &self,
        coordinator: usize,
        table: usize,
        keys: Vec<usize>,
        cl: ConsistencyLevel,
    ) {
        let (ids, mutations): (Vec<usize>, Vec<_>) = {
            let mut checker = self.checker.lock();
            keys.iter()
                .map(|&key| {
                    let (id, ts, fragment) = checker.begin_write(table, key, cl, self.now());
                    let token = Token(self.key_tokens.get(key).copied().unwrap_or(0));
                    let mutation = WireMutation {
                        key: checker.engine_key(key).to_vec(),
                        ts: ts as u64,
                        fragment,
                    };
                    (id, (table_key(table), token, mutation))
                })
                .unzip()
        };
        let answer: Answer<()> = self
            .on_node(coordinator, move |node| {
                async move { node.write(mutations, cl).await }.boxed()
            })
            .await;
        let mut checker = self.checker.lock();
        for id in ids {
            checker.end_write(id, answer.clone(), self.now());
        }
    }

    async fn read(
        &self,
        coordinator: usize,
        table: usize,
        keys: Vec<usize>,
        limit: usize,
        cl: ConsistencyLevel,
    ) -> bool {
        let (token, range) = {
            let mut checker = self.checker.lock();
            let range = match keys.as_slice() {
                [one] => key_range(checker.engine_key(*one)),
                _ => KeyRange {
                    start: Vec::new(),
                    end: None,
                },
            };
            (
                checker.begin_read(table, keys, limit, cl, self.now()),
                range,
            )
        };
        let mut token = token;
        token.note = self.view_of(coordinator);
        let answer = self
            .on_node(coordinator, move |node| {
                async move { node.read(table_key(table), range, limit, cl).await }.boxed()
            })
            .await;
        let ok = matches!(answer, Some(Ok(_)));
        self.checker.lock().end_read(&token, answer, self.now());
        ok
    }

    /// The next operation of a client: `None` when no node runs.
    fn next_op(&self) -> Option<Op> {
        let c = &self.config;
        let running = self.net.running();
        let mut rng = self.workload_rng.lock();
        let coordinator = rng.pick(&running)?;
        let table = rng.index(c.tables());
        let rf = c.rf.get(table).copied().unwrap_or(1).min(c.nodes);
        let key = rng.index(c.keys);
        Some(if rng.chance(c.schema_change_ppm) {
            Op::SchemaChange { coordinator }
        } else if rng.chance(500_000) {
            let cl = pick_level(&mut rng, &LEVELS, rf);
            // Mostly one key; sometimes a batch spanning replica sets.
            let mut keys = vec![key];
            if rng.chance(c.batch_ppm) {
                keys.extend((0..rng.between(1, 3)).map(|_| rng.index(c.keys)));
                keys.sort_unstable();
                keys.dedup();
            }
            Op::Write {
                coordinator,
                table,
                keys,
                cl,
            }
        } else {
            let cl = pick_level(
                &mut rng,
                LEVELS.get(1..LEVELS.len() - 1).unwrap_or(&LEVELS),
                rf,
            );
            let (keys, limit) = if rng.chance(c.range_read_ppm) {
                (
                    (0..c.keys).collect(),
                    rng.between(1, c.keys as u64 + 1) as usize,
                )
            } else {
                (vec![key], 1)
            };
            Op::Read {
                coordinator,
                table,
                keys,
                limit,
                cl,
            }
        })
    }

    async fn client(self: Arc<Self>) {
        for _ in 0..self.config.ops_per_client {
            let think = self
                .workload_rng
                .lock()
                .between(0, self.config.think_max_ms);
            self.exec.sleep(think * 1000).await;
            match self.next_op() {
                None => {}
                Some(Op::Write {
                    coordinator,
                    table,
                    keys,
                    cl,
                }) => self.write(coordinator, table, keys, cl).await,
                Some(Op::Read {
                    coordinator,
                    table,
                    keys,
                    limit,
                    cl,
                }) => {
                    self.read(coordinator, table, keys, limit, cl).await;
                }
                Some(Op::SchemaChange { coordinator }) => self.change_schema(coordinator).await,
            }
        }
        self.clients_done.fetch_add(1, Ordering::SeqCst);
    }

    /// Crashes a node, keeps it down a while, restarts it.
    async fn crash_and_restart(self: Arc<Self>, i: usize, clean: bool, down_ms: u64) {
        if clean {
            if let Some((node, _)) = self.net.node(i) {
                node.shutdown();
                self.faults.lock().clean_shutdowns += 1;
                // Let the goodbye reach the wire before the process exits.
                self.exec.sleep(self.config.latency_max_us * 2).await;
            }
        }
        self.crash(i);
        self.exec.sleep(down_ms * 1000).await;
        if self.is_down(i) {
            self.start_node(i);
            self.faults.lock().restarts += 1;
        }
        self.faults_in_progress.fetch_sub(1, Ordering::SeqCst);
    }

    async fn partition_for(self: Arc<Self>, sides: Vec<bool>, ms: u64) {
        let id = self.partition_id.fetch_add(1, Ordering::SeqCst) + 1;
        self.net.partition(sides);
        self.faults.lock().partitions += 1;
        self.exec.sleep(ms * 1000).await;
        if self.partition_id.load(Ordering::SeqCst) == id {
            self.net.heal();
        }
        self.faults_in_progress.fetch_sub(1, Ordering::SeqCst);
    }

    async fn fault_schedule(self: Arc<Self>) {
        let c = self.config.clone();
        if c.fault_interval_ms == 0 {
            return;
        }
        while !self.stopping.load(Ordering::SeqCst) {
            let wait = self
                .fault_rng
                .lock()
                .between(c.fault_interval_ms / 2, c.fault_interval_ms * 3 / 2);
            self.exec.sleep(wait * 1000).await;
            if self.stopping.load(Ordering::SeqCst) {
                break;
            }
            let mut rng = self.fault_rng.lock();
            let ms = rng.between(1, c.fault_duration_max_ms);
            if rng.chance(c.crash_ppm) {
                let running = self.net.running();
                let Some(i) = rng.pick(&running) else {
                    continue;
                };
                let clean = rng.chance(c.clean_shutdown_ppm);
                drop(rng);
                self.faults_in_progress.fetch_add(1, Ordering::SeqCst);
                let task = self.clone().crash_and_restart(i, clean, ms);
                self.exec.spawn(Owner::WORLD, task.boxed());
            } else if !self.net.partitioned() && c.nodes > 1 {
                let sides: Vec<bool> = (0..c.nodes).map(|_| rng.chance(500_000)).collect();
                drop(rng);
                if sides.iter().all(|s| *s) || sides.iter().all(|s| !*s) {
                    continue;
                }
                self.faults_in_progress.fetch_add(1, Ordering::SeqCst);
                let task = self.clone().partition_for(sides, ms);
                self.exec.spawn(Owner::WORLD, task.boxed());
            }
        }
    }

    /// Waits for every hint to be delivered (hinted handoff replays them every gossip
    /// round once their targets are up), then reads every key at ALL (or at as many
    /// replicas as exist), retrying a few times. A write whose only copies were hints
    /// reaches its replicas one hint at a time, so the replicas agree only once all are in.
    async fn settle(self: Arc<Self>, done: Arc<AtomicBool>) {
        let n = self.config.nodes;
        let mut waited = 0;
        while self.stores.iter().any(|s| !s.hint_targets().is_empty()) {
            if waited >= HINT_DRAIN_MAX_MICROS {
                self.checker.lock().fail(format!(
                    "hints were still undelivered {} s after faults stopped",
                    HINT_DRAIN_MAX_MICROS / 1_000_000
                ));
                break;
            }
            self.exec.sleep(HINT_DRAIN_POLL_MICROS).await;
            waited += HINT_DRAIN_POLL_MICROS;
        }
        for table in 0..self.config.tables() {
            let rf = self.config.rf.get(table).copied().unwrap_or(1);
            let cl = match rf.min(n) {
                r if r == rf => ConsistencyLevel::All,
                1 => ConsistencyLevel::One,
                2 => ConsistencyLevel::Two,
                _ => ConsistencyLevel::Three,
            };
            for key in 0..self.config.keys {
                let mut ok = false;
                for attempt in 0..5 {
                    let coordinator = self.workload_rng.lock().index(n);
                    if self.read(coordinator, table, vec![key], 1, cl).await {
                        ok = true;
                        break;
                    }
                    self.exec.sleep(1_000_000 * (attempt + 1)).await;
                }
                if !ok {
                    self.checker.lock().fail(format!(
                        "after faults stopped, table {table} key {key} could not be read at {} \
                         in 5 attempts",
                        cl.name()
                    ));
                }
            }
        }
        done.store(true, Ordering::SeqCst);
    }

    /// Compares every key's replicas, store against store.
    fn compare(&self) {
        let Some((node, _)) = self.net.node(0) else {
            return;
        };
        let ring = node.ring();
        for i in 1..self.config.nodes {
            if self.net.node(i).is_none_or(|(n, _)| *n.ring() != *ring) {
                self.checker.lock().fail(format!(
                    "node {i}'s ring differs from node 0's after settling"
                ));
            }
        }
        let tables: Vec<_> = self.stores.iter().map(|s| s.tables()).collect();
        let mut stray = 0;
        for (t, rf) in self.config.rf.iter().enumerate() {
            for (k, token) in self.key_tokens.iter().enumerate() {
                let key = self.checker.lock().engine_key(k).to_vec();
                let replicas = ring.replicas(Token(*token), *rf);
                let mut copies = Vec::new();
                for (i, held) in tables.iter().enumerate() {
                    let copy = held.get(&table_key(t)).and_then(|tb| tb.get(&key)).cloned();
                    if replicas.contains(&endpoint(i)) {
                        copies.push((i, copy));
                    } else if copy.is_some() {
                        // The ring never changes here: only a coordinator with a wrong
                        // view of it writes elsewhere.
                        stray += 1;
                        self.checker.lock().fail(format!(
                            "table {t} key {k} is stored on node {i}, not one of its replicas"
                        ));
                    }
                }
                self.checker
                    .lock()
                    .check_converged(Settle::ReadAtAll, t, k, &copies);
            }
        }
        self.faults.lock().stray_copies = stray;
    }

    fn run_phase(&self, name: &str, polls_max: u64, done: impl Fn() -> bool) -> bool {
        let until = self.now() + PHASE_MAX_MICROS;
        if self.exec.run_until(until, polls_max, done) {
            return true;
        }
        let why = if self.exec.polls() >= polls_max {
            "ran out of polls (livelock?)"
        } else {
            "did not finish in its virtual time bound"
        };
        self.checker.lock().fail(format!("phase {name} {why}"));
        false
    }
}

/// How long settling waits for hints to be delivered (virtual time).
const HINT_DRAIN_MAX_MICROS: u64 = 60_000_000;
/// How often it looks.
const HINT_DRAIN_POLL_MICROS: u64 = 250_000;

/// Runs seed `seed` (see the module doc).
pub fn run(seed: u64) -> Report {
    run_with(seed, &Options::default())
}

/// Runs seed `seed` with `options`.
pub fn run_with(seed: u64, options: &Options) -> Report {
    let w = World::new(seed, options);
    let n = w.config.nodes;
    let polls = options.polls_max;
    for i in 0..n {
        w.start_node(i);
    }
    let mut ok = w.run_phase("join", polls, || w.converged());
    if ok {
        for _ in 0..w.config.clients {
            w.exec.spawn(Owner::WORLD, w.clone().client().boxed());
        }
        w.exec
            .spawn(Owner::WORLD, w.clone().fault_schedule().boxed());
        let clients = w.config.clients;
        ok = w.run_phase("load", polls, || {
            w.clients_done.load(Ordering::SeqCst) == clients
        });
    }
    if ok {
        w.stopping.store(true, Ordering::SeqCst);
        ok = w.run_phase("quiesce", polls, || {
            w.faults_in_progress.load(Ordering::SeqCst) == 0
        });
        w.net.heal();
        w.net.calm();
        for i in 0..n {
            if w.is_down(i) {
                w.start_node(i);
            }
        }
        ok = ok && w.run_phase("membership", polls, || w.converged());
        ok = ok && w.run_phase("schema agreement", polls, || w.schema_agreed());
    }
    if ok {
        let done = Arc::new(AtomicBool::new(false));
        w.exec
            .spawn(Owner::WORLD, w.clone().settle(done.clone()).boxed());
        ok = w.run_phase("settle", polls, || done.load(Ordering::SeqCst));
    }
    if ok {
        w.compare();
    }
    // Break the cycles (tasks → nodes → executor and network → nodes) so the run is freed.
    w.exec.clear();
    for i in 0..n {
        w.net.remove(i);
    }
    let mut faults = w.faults.lock().clone();
    faults.schema_changes = w.schema_changes.load(Ordering::SeqCst);
    let checker = w.checker.lock();
    let mut violations: Vec<String> = w.net.problems();
    violations.extend(checker.violations().iter().cloned());
    let mut h = xxhash_rust::xxh3::Xxh3::new();
    h.update(&w.net.trace_hash().to_le_bytes());
    h.update(&checker.history_hash().to_le_bytes());
    h.update(&w.exec.now_micros().to_le_bytes());
    h.update(&w.exec.polls().to_le_bytes());
    Report {
        seed,
        config: w.config.clone(),
        violations,
        stats: checker.stats().clone(),
        net: w.net.stats(),
        faults,
        virtual_ms: w.exec.now_micros() / 1000,
        polls: w.exec.polls(),
        trace_hash: h.digest(),
    }
}
