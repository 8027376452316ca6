//! A run's configuration, derived from its seed.
//!
//! Everything that shapes a run is here, drawn from one stream of the seed: cluster size,
//! replication factors, vnodes, node timeouts, network latency and loss, how often nodes
//! crash and the network partitions, how durable the stores are, and the workload. Ranges
//! are chosen so that most seeds finish in a few milliseconds of real time while still
//! crossing every code path the faults can reach (convictions need tens of gossip
//! intervals of silence; timeouts need latencies near them).

use crate::prng::Prng;

/// Of the faulty seeds (crash storms aside), the share whose faults include topology
/// changes, per million.
const MOVES_PPM: u32 = 250_000;

/// When a store's writes become durable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Durability {
    /// Every write is synced before it is acknowledged: a crash loses nothing.
    SyncPerWrite,
    /// Writes are synced every `interval_ms`; if `lossy`, a crash loses a suffix of the
    /// writes since the last sync (a power cut), else nothing (a process crash with the
    /// page cache intact).
    Periodic {
        /// Milliseconds between syncs.
        interval_ms: u64,
        /// Whether a crash may lose unsynced writes.
        lossy: bool,
    },
}

/// The lightweight-transaction workload of a run that asks for one ([`Config::with_lwt`]):
/// clients of their own doing compare-and-sets and SERIAL reads on a few registers (keys
/// of a table of their own), whose histories must be linearizable.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lwt {
    /// Replication factor of the registers' table (1–5, at most the nodes).
    pub rf: usize,
    /// Registers.
    pub registers: usize,
    /// Clients doing only lightweight transactions.
    pub clients: usize,
    /// Operations per such client.
    pub ops_per_client: usize,
    /// Milliseconds such a client waits between operations, at most.
    pub think_max_ms: u64,
    /// Of the operations, the share that are SERIAL reads, per million (the rest are
    /// compare-and-sets).
    pub serial_read_ppm: u32,
}

/// One simulated run's configuration (see the module doc).
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    /// Nodes in the cluster (1–7).
    pub nodes: usize,
    /// Replication factor of each table (1–3 each).
    pub rf: Vec<usize>,
    /// Tokens per node.
    pub num_tokens: usize,
    /// Gossip round interval.
    pub gossip_interval_ms: u64,
    /// Phi conviction threshold.
    pub phi_convict_threshold: f64,
    /// Coordinator write timeout.
    pub write_timeout_ms: u64,
    /// Coordinator read timeout.
    pub read_timeout_ms: u64,
    /// Replica requests in flight before a node answers Overloaded.
    pub replica_requests_max: usize,
    /// One-way network latency, lower bound.
    pub latency_min_us: u64,
    /// One-way network latency, upper bound.
    pub latency_max_us: u64,
    /// Messages dropped, per million.
    pub drop_ppm: u32,
    /// Messages whose bytes are damaged in flight, per million (the receiver's frame
    /// checksum must refuse them).
    pub corrupt_ppm: u32,
    /// Whether messages between two nodes arrive in the order sent (as over one TCP
    /// connection); otherwise each message's latency is drawn independently.
    pub fifo_links: bool,
    /// Whether messages a node sent before it crashed still arrive (else they are lost
    /// with it).
    pub sent_outlives_sender: bool,
    /// Whether the executor picks randomly among runnable tasks (else FIFO).
    pub shuffle_tasks: bool,
    /// Mean milliseconds between faults (crash or partition); 0 for no faults.
    pub fault_interval_ms: u64,
    /// Of the faults, the share that are crashes (else partitions), per million.
    pub crash_ppm: u32,
    /// Of the crashes, the share that announce a clean shutdown first, per million.
    pub clean_shutdown_ppm: u32,
    /// How long a crashed node stays down, or a partition lasts, at most.
    pub fault_duration_max_ms: u64,
    /// The stores' durability.
    pub durability: Durability,
    /// Each store read or write takes up to this long (0: no time at all).
    pub storage_latency_max_us: u64,
    /// Client tasks.
    pub clients: usize,
    /// Operations per client.
    pub ops_per_client: usize,
    /// Keys per table.
    pub keys: usize,
    /// Milliseconds a client waits between operations, at most.
    pub think_max_ms: u64,
    /// Of the operations, the share that are schema changes, per million.
    pub schema_change_ppm: u32,
    /// Of the writes, the share that are batches of several keys, per million.
    pub batch_ppm: u32,
    /// Of the reads, the share that read the whole table as one range, per million.
    pub range_read_ppm: u32,
    /// How every node's reads choose replicas (`[scheduling] replica_selection`).
    pub replica_selection: mosaic_types::ReplicaSelection,
    /// C3's rate control (`[scheduling.c3] rate_control`), on with this initial limit in
    /// reads per interval (the other parameters at their defaults); never drawn by
    /// [`Config::from_seed`]: off.
    pub c3_rate_limit: Option<u32>,
    /// The lightweight-transaction workload, when the run has one (never drawn by
    /// [`Config::from_seed`], so seeds without it run as they always did).
    pub lwt: Option<Lwt>,
    /// Of the faults, the share that are topology changes (a spare node joins, a node
    /// decommissions, a dead one is removed), per million; 0 for none.
    pub move_ppm: u32,
    /// Node slots not started with the cluster, which joins fill (0 without moves).
    pub spare_nodes: usize,
}

impl Config {
    /// The configuration of seed `seed`.
    // Long on purpose: the order of the draws below is what a seed replays, so they stay
    // in one visible sequence (moving one changes every later seed's configuration).
    pub fn from_seed(seed: u64) -> Config {
        let mut r = Prng::new(seed).fork(0xC0F16);
        let nodes = r.between(1, 7) as usize;
        let tables = r.between(1, 2) as usize;
        let rf = (0..tables).map(|_| r.between(1, 3) as usize).collect();
        let num_tokens = [1, 2, 4, 8, 16][r.index(5)];
        let gossip_interval_ms = [50, 100, 200, 500][r.index(4)];
        let latency_min_us = r.between(50, 2_000);
        let latency_max_us = latency_min_us + r.between(0, 20_000);
        let faulty = !r.chance(150_000);
        // A crash storm: nodes crash every few hundred milliseconds and are back within
        // milliseconds, under stalling disks, so answers to a previous incarnation's
        // requests keep arriving while the new one reuses request ids.
        let storm = faulty && r.chance(150_000);
        // Sometimes a stalling disk: answers then outlive a quickly restarted asker.
        let storage_latency_max_us = match (storm, r.below(4)) {
            (true, _) => r.between(20_000, 60_000),
            (false, 0 | 1) => 0,
            (false, 2) => r.between(0, 5_000),
            (false, _) => r.between(0, 60_000),
        };
        // A request needs a round trip and a store access per wait: timeouts below that
        // would fail every request even on a calm network, which tests nothing.
        let timeout_min_ms = (2 * latency_max_us + storage_latency_max_us) * 5 / 4 / 1000 + 1;
        let durability = match r.below(3) {
            0 => Durability::SyncPerWrite,
            _ => Durability::Periodic {
                interval_ms: r.between(10, 2_000),
                lossy: r.chance(500_000),
            },
        };
        Config {
            nodes,
            rf,
            num_tokens,
            gossip_interval_ms,
            phi_convict_threshold: [5.0, 8.0, 12.0][r.index(3)],
            // Long in a storm, so requests stay unanswered while their asker restarts.
            write_timeout_ms: r.between(if storm { 1_000 } else { timeout_min_ms }, 2_000),
            read_timeout_ms: r.between(if storm { 1_000 } else { timeout_min_ms }, 2_000),
            replica_requests_max: if r.chance(100_000) { 2 } else { 4096 },
            latency_min_us,
            latency_max_us,
            drop_ppm: if faulty && r.chance(500_000) {
                r.between(0, 100_000) as u32
            } else {
                0
            },
            corrupt_ppm: if faulty && r.chance(200_000) {
                r.between(0, 20_000) as u32
            } else {
                0
            },
            fifo_links: r.chance(500_000),
            shuffle_tasks: r.chance(500_000),
            sent_outlives_sender: storm || r.chance(500_000),
            fault_interval_ms: match (faulty, storm) {
                (false, _) => 0,
                (true, true) => r.between(100, 300),
                (true, false) => r.between(200, 5_000),
            },
            crash_ppm: if storm {
                1_000_000
            } else {
                r.between(0, 1_000_000) as u32
            },
            clean_shutdown_ppm: r.between(0, 500_000) as u32,
            // Sometimes very short: a node back within a message's flight time receives
            // answers meant for its previous incarnation.
            fault_duration_max_ms: if storm || r.chance(300_000) {
                r.between(1, 50)
            } else {
                r.between(100, 10_000)
            },
            durability,
            storage_latency_max_us,
            clients: if storm { 4 } else { r.between(1, 4) as usize },
            ops_per_client: r.between(10, if storm { 120 } else { 60 }) as usize,
            keys: r.between(1, 6) as usize,
            think_max_ms: if storm {
                r.between(1, 10)
            } else {
                r.between(1, 500)
            },
            range_read_ppm: r.between(0, 300_000) as u32,
            batch_ppm: r.between(0, 300_000) as u32,
            schema_change_ppm: r.between(0, 40_000) as u32,
            // Drawn last, so the draws above still give every older seed its configuration.
            replica_selection: {
                use mosaic_types::ReplicaSelection::*;
                [
                    DynamicSnitch,
                    PrimaryFirst,
                    RoundRobin,
                    Random,
                    PopularityAware,
                    C3,
                ][r.index(6)]
            },
            c3_rate_limit: None,
            lwt: None,
            // After every other draw, so older seeds keep their configuration; never in a
            // crash storm (a move needs its ring agreement to come).
            move_ppm: if faulty && !storm && r.chance(MOVES_PPM) {
                r.between(100_000, 500_000) as u32
            } else {
                0
            },
            spare_nodes: 0,
        }
        .with_spares(&mut r)
    }

    /// Spare node slots for a run with moves (1–2, drawn from `r`).
    fn with_spares(mut self, r: &mut Prng) -> Config {
        if self.move_ppm > 0 {
            self.spare_nodes = r.between(1, 2) as usize;
        }
        self
    }

    /// This configuration without topology changes (the stores on disk and the
    /// lightweight-transaction workload do not model them yet).
    pub fn without_moves(mut self) -> Config {
        self.move_ppm = 0;
        self.spare_nodes = 0;
        self
    }

    /// Node slots: the nodes started with the cluster, then the spares joins fill.
    pub fn slots(&self) -> usize {
        self.nodes + self.spare_nodes
    }

    /// This configuration with a lightweight-transaction workload drawn from `seed` (on
    /// a stream of its own: the rest of the configuration stays as the seed made it).
    ///
    /// A seed whose stores lose unsynced writes in a crash (lossy periodic sync) runs
    /// with lossless periodic sync instead (a process crash, the page cache intact).
    /// Paxos's promises hold only if a replica never forgets what it acknowledged:
    /// Cassandra promises lightweight transactions only with a commit log synced before
    /// acknowledging (`batch` or `group`), and Mosaic's server keeps a table's Paxos
    /// state in the table's WAL, so a power cut under periodic sync takes promises and
    /// commits with the data. The simulator keeps Paxos state durable at once, so under
    /// lossy stores a commit's data could vanish while its Paxos state says it is
    /// there: a failure of a configuration Mosaic does not claim to survive. Such runs
    /// have no topology changes ([`Config::without_moves`]).
    pub fn with_lwt(self, seed: u64) -> Config {
        let mut s = self.without_moves();
        let mut r = Prng::new(seed).fork(0xC0F17);
        if let Durability::Periodic { lossy, .. } = &mut s.durability {
            *lossy = false;
        }
        s.lwt = Some(Lwt {
            rf: r.between(1, s.nodes.min(5) as u64) as usize,
            registers: r.between(1, 3) as usize,
            clients: r.between(2, 5) as usize,
            ops_per_client: r.between(5, 20) as usize,
            // As hurried as the seed's other clients, or more.
            think_max_ms: r.between(1, s.think_max_ms.min(300)),
            serial_read_ppm: r.between(100_000, 400_000) as u32,
        });
        s
    }

    /// The number of tables.
    pub fn tables(&self) -> usize {
        self.rf.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeds_cover_the_configuration_space_within_bounds() {
        let configs: Vec<Config> = (0..2000).map(Config::from_seed).collect();
        for c in &configs {
            assert!((1..=7).contains(&c.nodes));
            assert!(c.rf.iter().all(|rf| (1..=3).contains(rf)));
            assert!(c.latency_min_us <= c.latency_max_us);
            let round_trip_us = 2 * c.latency_max_us + c.storage_latency_max_us;
            assert!(c.read_timeout_ms * 1000 > round_trip_us);
            assert!(c.write_timeout_ms * 1000 > round_trip_us);
        }
        for n in 1..=7 {
            assert!(
                configs.iter().any(|c| c.nodes == n),
                "no seed with {n} nodes"
            );
        }
        assert!(configs.iter().any(|c| c.fault_interval_ms == 0));
        assert!(configs
            .iter()
            .any(|c| matches!(c.durability, Durability::Periodic { lossy: true, .. })));
        assert!(configs
            .iter()
            .any(|c| c.move_ppm > 0 && (1..=2).contains(&c.spare_nodes)));
        assert!(configs
            .iter()
            .all(|c| (c.move_ppm > 0) == (c.spare_nodes > 0)));
        assert_eq!(Config::from_seed(42), Config::from_seed(42));
    }
}
