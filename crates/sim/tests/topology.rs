//! Topology changes under load (issue 14): seeds whose faults include joins,
//! decommissions, removals and replacements of dead nodes ([`Options::moves`]) hold every
//! invariant — no acknowledged write lost, reads at overlapping levels see acknowledged
//! writes, and the replicas of the final ring identical after settling — and replay
//! exactly.
//!
//! `MOSAIC_SIM_MOVES_SEED=<n>` reruns one seed; `MOSAIC_SIM_MOVES_SEEDS=<count>` sweeps
//! seeds `0..count` (those whose configuration draws moves) instead of the default.
//! Longer sweeps: `cargo run --release -p mosaic-sim -- --moves --seeds 20000`.

mod common;

use mosaic_sim::{run_with, Config, Options};

/// Seeds swept by default: the ones below this that draw moves (55).
const SEEDS_DEFAULT: u64 = 300;

/// Seeds with moves that fail and are left out of the sweep until that is fixed (rerun one
/// with `MOSAIC_SIM_MOVES_SEED=<n>`): none below 1500.
///
/// 165 and 1313 failed on liveness until a move's `StreamRequest`/`Rehome` calls were
/// resent while their peer lives (cluster `node/move_calls.rs`): every attempt waited for
/// a lost `Rehome` answer until the simulator abandoned it. 45 and 56 failed on rings
/// that differed after settling: the membership phase did not wait for a failed
/// decommission's `Normal` to reach every node.
const KNOWN_FAILING: [u64; 0] = [];

fn options() -> Options {
    Options {
        moves: true,
        ..Options::default()
    }
}

/// The seeds below `below` whose configuration has moves.
fn seeds_with_moves(below: u64) -> impl Iterator<Item = u64> {
    (0..below).filter(|s| Config::from_seed(*s).move_ppm > 0 && !KNOWN_FAILING.contains(s))
}

#[test]
fn seeds_with_joins_leaves_removals_and_replacements_hold_every_invariant() {
    if let Some(seed) = common::env_u64("MOSAIC_SIM_MOVES_SEED") {
        common::replay(seed, &options(), "MOSAIC_SIM_MOVES_SEED");
        return;
    }
    let below = common::env_u64("MOSAIC_SIM_MOVES_SEEDS").unwrap_or(SEEDS_DEFAULT);
    let s = common::run_seeds(
        seeds_with_moves(below),
        &options(),
        "MOSAIC_SIM_MOVES_SEED",
        "topology",
    );
    if below < SEEDS_DEFAULT {
        return;
    }
    let m = &s.moves;
    assert!(
        m.joins > 0 && m.leaves > 0 && m.removes > 0 && m.replaces > 0,
        "{s}"
    );
    assert!(
        m.joins_failed + m.leaves_failed + m.removes_failed + m.replaces_failed > 0,
        "no move raced a fault: {s}"
    );
    assert!(s.guarantees_checked > 10 * s.seeds, "{s}");
}

#[test]
fn a_seed_with_moves_runs_identically_twice() {
    let mut replayed = 0;
    for seed in seeds_with_moves(SEEDS_DEFAULT) {
        let (a, b) = (run_with(seed, &options()), run_with(seed, &options()));
        assert_eq!(a.trace_hash, b.trace_hash, "seed {seed}");
        assert_eq!(a.moves, b.moves, "seed {seed}");
        assert_eq!(a.violations, b.violations, "seed {seed}");
        // Some draw moves but their faults never pick one.
        replayed += usize::from(a.moves.any());
        if replayed == 3 {
            return;
        }
    }
    panic!("fewer than 3 seeds tried a move");
}

#[test]
fn without_the_option_a_seed_makes_no_moves() {
    let seed = seeds_with_moves(SEEDS_DEFAULT).next().unwrap_or(0);
    let r = run_with(seed, &Options::default());
    assert!(!r.moves.any(), "{:?}", r.moves);
    assert_eq!(r.config.spare_nodes, 0);
}
