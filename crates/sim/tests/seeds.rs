//! Thousands of seeded cluster runs: every invariant of the checker holds under crashes,
//! restarts, partitions, drops, reordering, damaged frames and lost unsynced writes.
//!
//! `MOSAIC_SIM_SEED=<n>` reruns one seed (the one a failure printed), exactly;
//! `MOSAIC_SIM_SEEDS=<count>` changes how many seeds CI runs (split across two tests so
//! both cores work).

mod common;

use mosaic_sim::{Options, Summary};

/// Seeds CI runs by default: 4,000 took 32 s in the test profile on two cores at load 5,
/// 65 s at load 7–9 (other work sharing them), under the two-minute budget.
const SEEDS_DEFAULT: u64 = 4000;

fn seeds_total() -> u64 {
    common::env_u64("MOSAIC_SIM_SEEDS").unwrap_or(SEEDS_DEFAULT)
}

fn replay_seed() -> Option<u64> {
    common::env_u64("MOSAIC_SIM_SEED")
}

fn run_seeds(seeds: impl Iterator<Item = u64>) -> Summary {
    common::run_seeds(seeds, &Options::default(), "MOSAIC_SIM_SEED", "seeds")
}

/// The faults and outcomes a healthy run of many seeds must include: without them the
/// simulator would be checking nothing.
fn assert_explored(s: &Summary) {
    if s.seeds < 500 {
        return;
    }
    assert!(s.guarantees_checked > 10 * s.seeds, "{s}");
    assert!(s.monotonic_checked > 10 * s.seeds, "{s}");
    assert!(
        s.crashes > 0 && s.clean_shutdowns > 0 && s.partitions > 0,
        "{s}"
    );
    assert!(s.writes_lost > 0 && s.excused_by_loss > 0, "{s}");
    assert!(s.dropped > 0 && s.corrupted > 0, "{s}");
    assert!(s.schema_changes > 0, "{s}");
    assert!(s.answers_to_later_incarnation > 0, "{s}");
    for kind in [
        "read:Unavailable",
        "read:ReadTimeout",
        "write:Unavailable",
        "write:WriteTimeout",
        "write:CoordinatorCrashed",
    ] {
        assert!(s.failures.contains_key(kind), "no {kind}: {s}");
    }
}

#[test]
fn even_seeds_hold_every_invariant() {
    if let Some(seed) = replay_seed() {
        common::replay(seed, &Options::default(), "MOSAIC_SIM_SEED");
        return;
    }
    let s = run_seeds((0..seeds_total()).step_by(2));
    assert_explored(&s);
}

#[test]
fn odd_seeds_hold_every_invariant() {
    if replay_seed().is_some() {
        return;
    }
    let s = run_seeds((1..seeds_total()).step_by(2));
    assert_explored(&s);
}
