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
//! generation. Clients write and read a few keys through random coordinators at random
//! consistency levels. See [`world`] for the phases of a run.
//!
//! **What it promises.** A run is a pure function of its seed: no threads, no wall clock,
//! no ambient randomness — the seed derives the [`config`] (nodes 1–7, RF 1–3 per table,
//! vnodes, timeouts, fault rates, durability, workload) and every fault and delay. Two
//! runs of one seed produce the same [`Report::trace_hash`], a digest of every message
//! delivered and every client event. The [`checker`] verifies, from outside the system:
//! acknowledged writes are visible to later reads at overlapping levels (net of copies
//! crashes destroyed), reads return only values written, and after faults stop and reads
//! at ALL repair, replicas hold identical bytes. Liveness is checked too: a phase that
//! does not finish within its bounds (membership that never converges, a livelock) fails.
//!
//! **Replaying.** A failing seed is printed as `MOSAIC_SIM_SEED=<n>`:
//!
//! ```text
//! MOSAIC_SIM_SEED=<n> cargo test -p mosaic-sim --test seeds -- --nocapture
//! cargo run -p mosaic-sim -- --seeds 1 --from <n> --verbose
//! ```
//!
//! The first reruns exactly that seed in the test, the second prints its configuration,
//! statistics and violations. Long runs outside CI: `cargo run --release -p mosaic-sim --
//! --seeds 100000 --from 0`.
//!
//! Dev-only (`publish = false`); the only crate besides the server that wires concrete
//! parts together.

pub mod checker;
pub mod config;
pub mod executor;
pub mod network;
pub mod prng;
pub mod store;
pub mod world;

pub use config::{Config, Durability};
pub use world::{run, run_with, Options, Report};
