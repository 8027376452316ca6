//! One simulated run: the cluster, its clients and its faults, phase by phase.
//!
//! Owns the composition: N [`Node`]s over [`SimStore`]s, wired to the [`Network`] and the
//! [`Executor`], the client tasks that drive the workload, and the fault schedule. A run
//! goes through five phases, each bounded in virtual time and in polls (a bound that
//! runs out is itself a reported failure — a livelock or a cluster that never settles):
//!
//! 1. **join**: every node starts and gossips until all see all alive with the full ring;
//! 2. **load**: clients write and read through random coordinators at random levels while
//!    the fault schedule crashes, restarts and partitions nodes — with [`Options::moves`],
//!    it also joins, decommissions and removes nodes (`moves.rs`) — (and, in runs with a
//!    lightweight-transaction workload, more clients run compare-and-sets, `lwt.rs`);
//! 3. **quiesce**: faults stop, every node runs again, the network heals, membership
//!    converges, and every node agrees on the schema (the clients changed it now and then);
//! 4. **settle**: every key is read at ALL, which repairs its replicas (and every
//!    register is read at SERIAL);
//! 5. **compare**: the replicas of every key must hold identical bytes, and every
//!    register's history must be linearizable.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use futures::channel::oneshot;
use futures::future::{BoxFuture, FutureExt};
use mosaic_cluster::message::{AppState, EndpointState, NodeStatus};
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

mod faults;
mod lwt;
mod moves;
mod nodes;
mod routing;
mod workload;

pub use lwt::LwtStats;
pub use moves::{MoveStats, MOVE_PATIENCE_MICROS};
pub use routing::{routing, routing_with, Routing};

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
    /// Add the seed's lightweight-transaction workload ([`Config::with_lwt`]).
    pub lwt: bool,
    /// Let the seeds whose configuration draws topology changes make them
    /// ([`Config::move_ppm`]; in memory only, never with lightweight transactions).
    pub moves: bool,
    /// Where the nodes keep their tables.
    pub storage: Storage,
    /// On disk, stores that acknowledge writes without syncing them while the checks
    /// hold them to the durability's promise ([`crate::disk::Disk::without_fsync`]): to
    /// show that the acknowledged writes a power loss takes are caught.
    pub skip_fsync: bool,
}

/// Where the simulated nodes keep their tables.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Storage {
    /// In memory ([`SimStore`]'s own model of durability).
    #[default]
    Memory,
    /// In real `mosaic-replica` stores over a power-loss file system ([`crate::disk`]),
    /// every node in this layout, or — `None` — each node in one drawn from the seed.
    Disk(Option<mosaic_types::Layout>),
}

impl Default for Options {
    fn default() -> Options {
        Options {
            ignore_losses: false,
            durability: None,
            polls_max: 20_000_000,
            forget_peers: false,
            lwt: false,
            moves: false,
            storage: Storage::Memory,
            skip_fsync: false,
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
    /// The topology changes' (all zero without them).
    pub moves: MoveStats,
    /// The lightweight transactions' (all zero without them).
    pub lwt: LwtStats,
    /// Virtual time the run took.
    pub virtual_ms: u64,
    /// Task polls.
    pub polls: u64,
    /// A digest of everything that happened: equal for two runs of one seed.
    pub trace_hash: u64,
    /// Each node's layout, when the tables were on disk (else empty).
    pub layouts: Vec<mosaic_types::Layout>,
    /// What the stores on disk went through (zero in memory).
    pub disk: crate::disk::DiskStats,
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
    /// Each slot's tokens (a spare's once it joined).
    tokens: Mutex<Vec<Vec<i64>>>,
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
    /// The lightweight-transaction registers and histories, in runs that have them.
    lwt: Option<Mutex<lwt::LwtLog>>,
    /// The slots' states in the ring, and the move under way.
    topology: Mutex<moves::Topology>,
    moves: Mutex<MoveStats>,
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
    fn new(seed: u64, options: &Options) -> Result<Arc<World>, Box<(Config, String)>> {
        let mut config = Config::from_seed(seed);
        if options.lwt {
            config = config.with_lwt(seed);
        }
        if let Some(d) = options.durability {
            config.durability = d;
        }
        if !options.moves || options.storage != Storage::Memory {
            config = config.without_moves();
        }
        World::with_config(seed, config.clone(), options, &[]).map_err(|e| Box::new((config, e)))
    }

    /// A world of `config`, its randomness from `seed`; node `i`'s store takes up to
    /// `store_latency_us[i]` per read and write where given (else the config's).
    fn with_config(
        seed: u64,
        config: Config,
        options: &Options,
        store_latency_us: &[u64],
    ) -> Result<Arc<World>, String> {
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
        let slots = config.slots();
        let keys = key_tokens
            .iter()
            .enumerate()
            .map(|(i, t)| engine_key(*t, i))
            .collect();
        // The registers' table comes after the seed's others.
        let lwt = config.lwt.as_ref().map(|c| {
            Mutex::new(lwt::LwtLog::new(
                config.rf.len(),
                c.registers,
                root.fork(0x1A7_0000),
            ))
        });
        let store_rf: Vec<usize> = config
            .rf
            .iter()
            .copied()
            .chain(config.lwt.as_ref().map(|c| c.rf))
            .collect();
        let exec = Executor::new(config.shuffle_tasks.then(|| root.fork(2)));
        let net = Network::new(exec.clone(), &config, root.fork(3));
        let disks = match options.storage {
            Storage::Memory => Vec::new(),
            Storage::Disk(layout) => {
                let disks = nodes::open_disks(&config, &store_rf, &tokens, layout, &exec, &root)?;
                if options.skip_fsync {
                    disks
                        .into_iter()
                        .map(crate::disk::Disk::without_fsync)
                        .collect::<Result<_, _>>()?
                } else {
                    disks
                }
            }
        };
        let mut disks = disks.into_iter();
        let stores = (0..slots)
            .map(|i| {
                let mut store = SimStore::new(&store_rf, config.durability);
                if let Some(disk) = disks.next() {
                    store = store.with_disk(disk);
                }
                let max_us = store_latency_us
                    .get(i)
                    .copied()
                    .unwrap_or(config.storage_latency_max_us);
                Arc::new(match max_us {
                    0 => store,
                    max_us => store.with_latency(exec.clone(), root.fork(0x200 + i as u64), max_us),
                })
            })
            .collect();
        let checker = Checker::new(config.rf.clone(), keys, options.ignore_losses);
        Ok(Arc::new(World {
            exec,
            net,
            stores,
            checker: Mutex::new(checker),
            tokens: Mutex::new({
                let mut tokens = tokens;
                tokens.resize(slots, Vec::new());
                tokens
            }),
            key_tokens,
            generations: Mutex::new(vec![0; slots]),
            peers: Mutex::new(vec![Vec::new(); slots]),
            down: Mutex::new(vec![true; slots]),
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
            lwt,
            topology: Mutex::new(moves::Topology::new(config.nodes, slots)),
            moves: Mutex::new(MoveStats::default()),
            config,
        }))
    }

    fn now(&self) -> u64 {
        self.exec.now_micros()
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
    let w = match World::new(seed, options) {
        Ok(w) => w,
        Err(failed) => {
            let (config, e) = *failed;
            return Report {
                seed,
                config,
                violations: vec![format!("the stores did not open: {e}")],
                stats: Stats::default(),
                net: NetStats::default(),
                faults: FaultStats::default(),
                moves: MoveStats::default(),
                lwt: LwtStats::default(),
                virtual_ms: 0,
                polls: 0,
                trace_hash: 0,
                layouts: Vec::new(),
                disk: Default::default(),
            };
        }
    };
    let n = w.config.nodes;
    let slots = w.config.slots();
    let polls = options.polls_max;
    for i in 0..n {
        w.start_node(i);
    }
    let mut ok = w.run_phase("join", polls, || w.converged());
    if ok {
        for _ in 0..w.config.clients {
            w.exec.spawn(Owner::WORLD, w.clone().client().boxed());
        }
        let lwt_clients = w.config.lwt.as_ref().map_or(0, |c| c.clients);
        for _ in 0..lwt_clients {
            w.exec.spawn(Owner::WORLD, w.clone().lwt_client().boxed());
        }
        w.exec
            .spawn(Owner::WORLD, w.clone().fault_schedule().boxed());
        let clients = w.config.clients + lwt_clients;
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
        for i in 0..slots {
            if w.is_down(i) && w.may_restart(i) {
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
    // Whatever phase a run reached, its histories so far must be linearizable.
    w.check_lwt();
    // Break the cycles (tasks → nodes → executor and network → nodes) so the run is freed.
    w.exec.clear();
    for i in 0..slots {
        w.net.remove(i);
    }
    let mut faults = w.faults.lock().clone();
    faults.schema_changes = w.schema_changes.load(Ordering::SeqCst);
    let moves = w.moves.lock().clone();
    let checker = w.checker.lock();
    let mut violations: Vec<String> = w.net.problems();
    violations.extend(checker.violations().iter().cloned());
    let mut h = xxhash_rust::xxh3::Xxh3::new();
    h.update(&w.net.trace_hash().to_le_bytes());
    h.update(&checker.history_hash().to_le_bytes());
    h.update(&w.exec.now_micros().to_le_bytes());
    h.update(&w.exec.polls().to_le_bytes());
    if let Some(log) = &w.lwt {
        h.update(&log.lock().trace_hash().to_le_bytes());
    }
    Report {
        seed,
        config: w.config.clone(),
        violations,
        stats: checker.stats().clone(),
        net: w.net.stats(),
        faults,
        moves,
        lwt: w
            .lwt
            .as_ref()
            .map(|l| l.lock().stats().clone())
            .unwrap_or_default(),
        virtual_ms: w.exec.now_micros() / 1000,
        polls: w.exec.polls(),
        trace_hash: h.digest(),
        layouts: w.stores.iter().filter_map(|s| s.layout()).collect(),
        disk: w.stores.iter().fold(Default::default(), |mut sum, s| {
            sum.add(&s.disk_stats());
            sum
        }),
    }
}
