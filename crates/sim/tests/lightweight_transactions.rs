//! Lightweight transactions are linearizable: seeded cluster runs with compare-and-sets
//! and SERIAL reads on a few registers, under crashes, restarts, partitions, drops,
//! reordering and damaged frames, and every register's history passes the
//! linearizability checker (`mosaic_sim::linearizable`).
//!
//! `MOSAIC_SIM_LWT_SEED=<n>` reruns one seed (the one a failure printed), exactly;
//! `MOSAIC_SIM_LWT_SEEDS=<count>` changes how many run (split across two tests so both
//! cores work). Longer runs: `cargo run --release -p mosaic-sim -- --lwt --seeds 20000`.

mod common;

use mosaic_sim::{Options, Summary};

/// Seeds run by default: 1,000 took 14 s in the test profile on two idle cores, 35 s at
/// load 5 (2,000 took 29 s and 71 s).
const SEEDS_DEFAULT: u64 = 1000;

fn options() -> Options {
    Options {
        lwt: true,
        ..Options::default()
    }
}

fn seeds_total() -> u64 {
    common::env_u64("MOSAIC_SIM_LWT_SEEDS").unwrap_or(SEEDS_DEFAULT)
}

fn replay_seed() -> Option<u64> {
    common::env_u64("MOSAIC_SIM_LWT_SEED")
}

fn run_seeds(seeds: impl Iterator<Item = u64>) -> Summary {
    common::run_seeds(
        seeds,
        &options(),
        "MOSAIC_SIM_LWT_SEED",
        "lightweight_transactions",
    )
}

/// What a healthy run of many seeds must include: without contention, refusals and
/// failures of unknown outcome the checker would be judging easy histories.
fn assert_explored(s: &Summary) {
    if s.seeds < 200 {
        return;
    }
    let l = &s.lwt;
    assert!(
        l.applied > 5 * s.seeds && l.not_applied > 3 * s.seeds,
        "{s}"
    );
    assert!(l.serial_reads_ok > s.seeds, "{s}");
    assert!(l.histories_linearizable > s.seeds, "{s}");
    assert!(l.ops_checked > 20 * s.seeds, "{s}");
    // The search's budget is generous: a history it cannot decide is a sign the
    // histories grew too long for it.
    assert!(l.inconclusive * 100 < s.seeds, "{s}");
    assert!(s.crashes > 0 && s.partitions > 0 && s.dropped > 0, "{s}");
    for kind in [
        "cas:CasTimeout",
        "cas:Unavailable",
        "cas:CoordinatorCrashed",
        "read:CoordinatorCrashed",
    ] {
        assert!(l.failures.contains_key(kind), "no {kind}: {s}");
    }
}

#[test]
fn even_seeds_keep_registers_linearizable() {
    if let Some(seed) = replay_seed() {
        common::replay(seed, &options(), "MOSAIC_SIM_LWT_SEED");
        return;
    }
    let s = run_seeds((0..seeds_total()).step_by(2));
    assert_explored(&s);
}

#[test]
fn odd_seeds_keep_registers_linearizable() {
    if replay_seed().is_some() {
        return;
    }
    let s = run_seeds((1..seeds_total()).step_by(2));
    assert_explored(&s);
}
