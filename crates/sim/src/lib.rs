//! Mosaic's deterministic simulator: N cluster nodes on one thread, one seed per run.
//!
//! **What it simulates.** Real [`mosaic_cluster::Node`]s — coordinator, replica and gossip
//! code unchanged — over simulated seams: a single-threaded [`executor`] with a virtual
//! microsecond clock stands behind `Runtime` (sleep, spawn, randomness), a faulty
//! [`network`] behind `Transport` (every message goes through the real internode frame
//! codec; seeded latency, drops, bit flips, reordering, partitions), and in-memory
//! [`store`]s behind `Store` (row-layer merge; sync-per-write or periodic sync whose
//! unsynced tail a crash may lose). Nodes crash (their tasks and in-flight messages die)
//! and restart over their stores with the same endpoint, tokens and host id and a larger
//! generation and the peers they knew — some seeds in storms of crashes every few hundred
//! milliseconds under stalling disks. With [`Options::moves`] (`--moves`), some seeds change
//! the topology among their faults ([`MoveStats`]): a spare node slot joins (bootstrap
//! with allocated tokens), a node decommissions and stops for good, a dead node is removed
//! by a live one, or replaced by a spare slot that bootstraps with its tokens
//! (`replace_address`) — one move at a time, racing crashes and partitions; the settle
//! phase and the replicas' comparison follow the final ring. Clients write and read a few keys through random coordinators at random
//! consistency levels, and now and then change the schema on one node. See [`world`] for
//! the phases of a run.
//!
//! **What it promises.** A run is a pure function of its seed: no threads, no wall clock,
//! no ambient randomness — the seed derives the [`config`] (nodes 1–7, RF 1–3 per table,
//! vnodes, timeouts, fault rates, durability, workload) and every fault and delay. Two
//! runs of one seed produce the same [`Report::trace_hash`], a digest of every message
//! delivered and every client event (on one build: a change to the simulator or the
//! cluster may change what a seed does). The [`checker`] verifies, from outside the
//! system: acknowledged writes are visible to later reads at overlapping levels (net of
//! copies crashes destroyed), so are values earlier overlapping reads returned (read
//! repair's promise), reads return only values written, and after faults stop and reads
//! at ALL repair, replicas hold identical bytes. Runs with lightweight transactions
//! ([`Options::lwt`]; `--lwt` on the command line) add clients doing compare-and-sets and
//! SERIAL reads on a few registers, and every register's history must be linearizable
//! ([`linearizable`]). Liveness is checked too: a phase that
//! does not finish within its bounds (membership or schema agreement that never comes, a
//! livelock) fails.
//!
//! **Replaying.** A failing seed is printed as `MOSAIC_SIM_SEED=<n>`:
//!
//! ```text
//! MOSAIC_SIM_SEED=<n> cargo test -p mosaic-sim --test seeds -- --nocapture
//! cargo run -p mosaic-sim -- --seeds 1 --from <n> --verbose
//! ```
//!
//! A seed of the `topology` test (runs with moves) is printed as `MOSAIC_SIM_MOVES_SEED=<n>`
//! and rerun by that test or with `--moves`.
//! The first reruns exactly that seed in the test, the second prints its configuration,
//! statistics and violations. A seed of the lightweight-transaction test is printed as
//! `MOSAIC_SIM_LWT_SEED=<n>` and rerun by the `lightweight_transactions` test or with
//! `--lwt`. Long runs outside CI: `cargo run --release -p mosaic-sim --
//! --seeds 100000 --from 0`.
//!
//! **Over the real storage.** [`Options::storage`] = [`Storage::Disk`] (`--disk <layout>`
//! or `--disk any` on the command line) puts every node's tables in real
//! `mosaic-replica` stores over a power-loss file system ([`disk`]): a node engine in
//! manual mode (its flushes and compactions run inside the simulation, so a seed replays
//! them), one store per table in the node's layout, each write under its ring role, and
//! crashes that lose what was never fsynced. Each crash also checks the sync mode's own
//! promise (nothing durable lost; losses of writes since the last periodic sync are
//! excused in the checker for that node's copy only). Seeds and replay:
//!
//! ```text
//! cargo test -p mosaic-sim --test real_storage            # 300 seeds per layout
//! MOSAIC_SIM_DISK_LAYOUT=<layout> MOSAIC_SIM_DISK_SEED=<n> cargo test -p mosaic-sim --test real_storage -- --nocapture
//! cargo run -p mosaic-sim -- --disk <layout> --seeds 1 --from <n> --verbose
//! scripts/sim-disk-nightly 5000                           # thousands per layout
//! ```
//!
//! Dev-only (`publish = false`); the only crate besides the server that wires concrete
//! parts together.

pub mod checker;
pub mod config;
pub mod disk;
pub mod executor;
pub mod linearizable;
pub mod network;
pub mod prng;
pub mod store;
pub mod world;

pub use config::{Config, Durability};
pub use world::{run, run_with, LwtStats, MoveStats, Options, Report, Storage};

use std::collections::BTreeMap;

/// Totals over many seeds.
#[derive(Clone, Debug, Default)]
pub struct Summary {
    /// Seeds run.
    pub seeds: u64,
    /// Seeds that failed, with their violations.
    pub failed: Vec<(u64, Vec<String>)>,
    /// Writes acknowledged.
    pub writes_acked: u64,
    /// Reads answered.
    pub reads_ok: u64,
    /// Read-after-write guarantees asserted.
    pub guarantees_checked: u64,
    /// Reads held to what an earlier overlapping read returned.
    pub monotonic_checked: u64,
    /// Guarantees excused because crashes destroyed copies.
    pub excused_by_loss: u64,
    /// Failed operations by kind.
    pub failures: BTreeMap<String, u64>,
    /// Nodes crashed.
    pub crashes: u64,
    /// Clean shutdowns among them.
    pub clean_shutdowns: u64,
    /// Partitions.
    pub partitions: u64,
    /// Stored writes lost in crashes.
    pub writes_lost: u64,
    /// Messages dropped.
    pub dropped: u64,
    /// Messages damaged and refused.
    pub corrupted: u64,
    /// Keys compared across replicas.
    pub keys_converged: u64,
    /// Answers that reached a later incarnation of the node that asked.
    pub answers_to_later_incarnation: u64,
    /// Schema changes made during the load.
    pub schema_changes: u64,
    /// Topology changes tried and their outcomes, summed over the seeds.
    pub moves: MoveStats,
    /// Lightweight transactions' outcomes and checks, summed over the seeds.
    pub lwt: LwtStats,
    /// What stores on disk went through, summed over the seeds.
    pub disk: disk::DiskStats,
}

impl Summary {
    /// Adds one run.
    pub fn add(&mut self, r: &Report) {
        self.seeds += 1;
        if !r.passed() {
            self.failed.push((r.seed, r.violations.clone()));
        }
        self.writes_acked += r.stats.writes_acked;
        self.reads_ok += r.stats.reads_ok;
        self.guarantees_checked += r.stats.guarantees_checked;
        self.monotonic_checked += r.stats.monotonic_checked;
        self.excused_by_loss += r.stats.excused_by_loss;
        for (kind, n) in &r.stats.failures {
            *self.failures.entry(kind.clone()).or_default() += n;
        }
        self.crashes += r.faults.crashes;
        self.clean_shutdowns += r.faults.clean_shutdowns;
        self.partitions += r.faults.partitions;
        self.writes_lost += r.faults.writes_lost;
        self.dropped += r.net.dropped;
        self.corrupted += r.net.corrupted;
        self.keys_converged += r.stats.keys_converged;
        self.answers_to_later_incarnation += r.net.answers_to_later_incarnation;
        self.schema_changes += r.faults.schema_changes;
        self.moves.add(&r.moves);
        self.disk.add(&r.disk);
        let (l, add) = (&mut self.lwt, &r.lwt);
        l.cas += add.cas;
        l.applied += add.applied;
        l.not_applied += add.not_applied;
        l.serial_reads += add.serial_reads;
        l.serial_reads_ok += add.serial_reads_ok;
        for (kind, n) in &add.failures {
            *l.failures.entry(kind.clone()).or_default() += n;
        }
        l.histories_linearizable += add.histories_linearizable;
        l.ops_checked += add.ops_checked;
        l.inconclusive += add.inconclusive;
    }

    /// Each failing seed as `MOSAIC_SIM_SEED=<n>` and its violations.
    pub fn failures_text(&self) -> String {
        let mut out = String::new();
        for (seed, violations) in &self.failed {
            out.push_str(&format!("MOSAIC_SIM_SEED={seed} failed:\n"));
            for v in violations {
                out.push_str(&format!("  {v}\n"));
            }
        }
        out
    }
}

impl std::fmt::Display for Summary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} seeds, {} failed; {} writes acknowledged, {} reads answered, {} read-after-write \
             guarantees checked, {} monotonic-read ones ({} excused by lost writes); {} crashes ({} clean), {} \
             partitions, {} stored writes lost, {} messages dropped, {} damaged, {} answers \
             to a restarted asker; {} schema changes; {} keys compared across replicas; \
             failed operations {:?}",
            self.seeds,
            self.failed.len(),
            self.writes_acked,
            self.reads_ok,
            self.guarantees_checked,
            self.monotonic_checked,
            self.excused_by_loss,
            self.crashes,
            self.clean_shutdowns,
            self.partitions,
            self.writes_lost,
            self.dropped,
            self.corrupted,
            self.answers_to_later_incarnation,
            self.schema_changes,
            self.keys_converged,
            self.failures
        )?;
        let m = &self.moves;
        if m.any() {
            write!(
                f,
                "; topology changes: {} joins ({} attempts failed), {} decommissions ({} \
                 failed), {} removals ({} failed), {} replacements ({} attempts failed), {} \
                 refused as another move was under way, {} abandoned after {} s",
                m.joins,
                m.joins_failed,
                m.leaves,
                m.leaves_failed,
                m.removes,
                m.removes_failed,
                m.replaces,
                m.replaces_failed,
                m.refused_other_move,
                m.abandoned,
                world::MOVE_PATIENCE_MICROS / 1_000_000
            )?;
        }
        let d = &self.disk;
        if d != &disk::DiskStats::default() {
            write!(
                f,
                "; on disk: {} power losses, {} process crashes, {} flushes, {} compactions, \
                 {} WAL syncs, {} unsynced writes lost",
                d.power_losses,
                d.process_crashes,
                d.flushes,
                d.compactions,
                d.wal_syncs,
                d.writes_lost
            )?;
        }
        let l = &self.lwt;
        if l.cas + l.serial_reads > 0 {
            write!(
                f,
                "; lightweight transactions: {} compare-and-sets ({} applied, {} not), {} \
                 SERIAL reads ({} answered), failed {:?}; {} register histories \
                 linearizable ({} operations), {} inconclusive",
                l.cas,
                l.applied,
                l.not_applied,
                l.serial_reads,
                l.serial_reads_ok,
                l.failures,
                l.histories_linearizable,
                l.ops_checked,
                l.inconclusive
            )?;
        }
        Ok(())
    }
}
