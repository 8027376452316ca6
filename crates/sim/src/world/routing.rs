//! Routing scenarios: where a replica-selection policy sends reads when the nodes differ
//! in speed, and that it sends none to a crashed node once that node is seen down.
//!
//! Three nodes, one table at RF 3 (every node holds every key), no faults but the one
//! crash, durable stores. The nodes' stores differ in speed: node 1's reads and writes
//! take up to 1 ms, node 0's up to 5 ms (so the coordinator's own copy, which needs no
//! network, is not the fastest), node 2's up to `slow_us`. A client writes every key at
//! ALL through node 0, then reads them one after another at ONE through node 0 (a
//! coordinator that is not the slow node), and each store counts the reads it served;
//! then node 1 crashes, and once node 0 sees it down the client reads again.

use super::*;
use mosaic_types::ReplicaSelection;

/// What a routing scenario observed.
#[derive(Clone, Debug, Default)]
pub struct Routing {
    /// Reads each node's store served while every node ran.
    pub served: Vec<u64>,
    /// Reads each node's store served after node 1 crashed and node 0 saw it down.
    pub served_after_crash: Vec<u64>,
    /// Client reads that failed (there should be none: every read has a live replica).
    pub failed_reads: u64,
    /// Invariants broken, as the checker saw them (empty when all held).
    pub violations: Vec<String>,
}

/// The fastest node's store latency bound (node 1).
const FAST_US: u64 = 1_000;
/// The coordinator's (node 0).
const MEDIUM_US: u64 = 5_000;

/// Runs the scenario (see the module doc) with `policy` on every node, `reads` reads per
/// round, randomness from `seed`.
pub fn routing(policy: ReplicaSelection, seed: u64, slow_us: u64, reads: usize) -> Routing {
    routing_with(policy, None, seed, slow_us, reads)
}

/// [`routing`], with C3's rate control on from `c3_rate_limit` reads per interval
/// ([`Config::c3_rate_limit`]).
pub fn routing_with(
    policy: ReplicaSelection,
    c3_rate_limit: Option<u32>,
    seed: u64,
    slow_us: u64,
    reads: usize,
) -> Routing {
    let mut config = Config::from_seed(seed);
    config.c3_rate_limit = c3_rate_limit;
    config.nodes = 3;
    config.rf = vec![3];
    config.replica_selection = policy;
    config.drop_ppm = 0;
    config.corrupt_ppm = 0;
    config.crash_ppm = 0;
    config.clean_shutdown_ppm = 0;
    config.schema_change_ppm = 0;
    config.durability = Durability::SyncPerWrite;
    // A fast network (100–300 µs a message), so the stores' speeds decide.
    config.latency_min_us = 100;
    config.latency_max_us = 300;
    config.keys = config.keys.max(8);
    // A slow read is slow, not lost.
    config.read_timeout_ms = config.read_timeout_ms.max(slow_us / 1000 * 4 + 1000);
    let options = Options::default();
    let mut out = Routing::default();
    let w = match World::with_config(seed, config, &options, &[MEDIUM_US, FAST_US, slow_us]) {
        Ok(w) => w,
        Err(e) => {
            out.violations.push(e);
            return out;
        }
    };
    for i in 0..3 {
        w.start_node(i);
    }
    if w.run_phase("join", options.polls_max, || w.converged()) {
        let done = Arc::new(AtomicBool::new(false));
        let result = Arc::new(Mutex::new(Routing::default()));
        w.exec.spawn(
            Owner::WORLD,
            w.clone().route(reads, done.clone(), result.clone()).boxed(),
        );
        if w.run_phase("routing", options.polls_max, || done.load(Ordering::SeqCst)) {
            out = result.lock().clone();
        }
    }
    w.exec.clear();
    for i in 0..3 {
        w.net.remove(i);
    }
    let checker = w.checker.lock();
    out.violations = w.net.problems();
    out.violations.extend(checker.violations().iter().cloned());
    out
}

impl World {
    fn served(&self) -> Vec<u64> {
        self.stores.iter().map(|s| s.reads_served()).collect()
    }

    /// Reads every key in turn `reads` times at ONE through node 0; the reads each store
    /// served meanwhile.
    async fn read_round(&self, reads: usize, failed: &mut u64) -> Vec<u64> {
        let before = self.served();
        for r in 0..reads {
            if !self
                .read(0, 0, vec![r % self.config.keys], 1, ConsistencyLevel::One)
                .await
            {
                *failed += 1;
            }
        }
        self.served()
            .iter()
            .zip(before)
            .map(|(after, before)| after - before)
            .collect()
    }

    async fn route(self: Arc<Self>, reads: usize, done: Arc<AtomicBool>, out: Arc<Mutex<Routing>>) {
        for key in 0..self.config.keys {
            self.write(0, 0, vec![key], ConsistencyLevel::All).await;
        }
        let mut failed = 0;
        let served = self.read_round(reads, &mut failed).await;
        self.crash(1);
        let seen_down = |w: &World| {
            w.net
                .node(0)
                .is_some_and(|(node, _)| !node.is_alive(endpoint(1)))
        };
        while !seen_down(&self) {
            self.exec.sleep(100_000).await;
        }
        let served_after_crash = self.read_round(reads, &mut failed).await;
        *out.lock() = Routing {
            served,
            served_after_crash,
            failed_reads: failed,
            violations: Vec::new(),
        };
        done.store(true, Ordering::SeqCst);
    }
}
