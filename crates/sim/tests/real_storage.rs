//! The simulator over real storage: seeded cluster runs whose nodes keep their tables in
//! `mosaic-replica` stores over `mosaic_env::CrashFs`, one layout per test, under crashes
//! that are power losses (only fsynced bytes and directory entries survive, maybe a torn
//! tail) or process crashes, with the engines' flushes and compactions run
//! deterministically inside the simulation. Every invariant of the checker holds, and no
//! store loses a write its sync mode promised to keep (`mosaic_sim::disk`).
//!
//! A failure prints `MOSAIC_SIM_DISK_LAYOUT=<layout> MOSAIC_SIM_DISK_SEED=<n>`; prefixed to
//! `cargo test -p mosaic-sim --test real_storage -- --nocapture` it reruns that seed
//! alone, exactly (or: `cargo run -p mosaic-sim -- --disk <layout> --seeds 1 --from <n>
//! --verbose`). `MOSAIC_SIM_DISK_SEEDS=<count>` changes how many seeds each layout runs.
//! Thousands: `scripts/sim-disk-nightly`.

mod common;

use mosaic_sim::{Options, Storage, Summary};
use mosaic_types::Layout;

/// Seeds per layout by default: 300 of each of the five layouts took 21 s of wall time in
/// the test profile on two shared cores at load 8 (the five tests in parallel; 200 of each
/// took 32 s in another run, 2,000 of each 603 s at load 7), well inside the simulator's
/// share of CI.
const SEEDS_DEFAULT: u64 = 300;

fn options(layout: Layout) -> Options {
    Options {
        storage: Storage::Disk(Some(layout)),
        ..Options::default()
    }
}

/// Runs the layout's seeds, or the one seed `MOSAIC_SIM_DISK_SEED` names when
/// `MOSAIC_SIM_DISK_LAYOUT` names this layout (other layouts' tests then do nothing).
fn check(layout: Layout) {
    let var = format!("MOSAIC_SIM_DISK_LAYOUT={layout} MOSAIC_SIM_DISK_SEED");
    if let Some(seed) = common::env_u64("MOSAIC_SIM_DISK_SEED") {
        if std::env::var("MOSAIC_SIM_DISK_LAYOUT").ok().as_deref() == Some(layout.name()) {
            common::replay(seed, &options(layout), &var);
        }
        return;
    }
    let seeds = common::env_u64("MOSAIC_SIM_DISK_SEEDS").unwrap_or(SEEDS_DEFAULT);
    let s = common::run_seeds(0..seeds, &options(layout), &var, "real_storage");
    assert_explored(layout, &s);
}

/// What a healthy run of many seeds must include: the storage's own work and its losses,
/// or the checks would be checking nothing.
fn assert_explored(layout: Layout, s: &Summary) {
    if s.seeds < 100 {
        return;
    }
    let d = &s.disk;
    assert!(
        d.power_losses > s.seeds && d.process_crashes > 0,
        "{layout}: {s}"
    );
    assert!(
        d.flushes > 5 * s.seeds && d.compactions > s.seeds / 2,
        "{layout}: {s}"
    );
    // Periodic sync's promise allows losses; the checker must be seen excusing them.
    assert!(d.writes_lost > 0 && s.excused_by_loss > 0, "{layout}: {s}");
    assert!(s.guarantees_checked > 10 * s.seeds, "{layout}: {s}");
    assert!(s.monotonic_checked > 10 * s.seeds, "{layout}: {s}");
}

#[test]
fn a_seed_on_disk_replays_exactly() {
    if common::env_u64("MOSAIC_SIM_DISK_SEED").is_some() {
        return;
    }
    let options = Options {
        storage: Storage::Disk(None),
        ..Options::default()
    };
    for seed in [5u64, 77] {
        let (a, b) = (
            mosaic_sim::run_with(seed, &options),
            mosaic_sim::run_with(seed, &options),
        );
        assert_eq!(a.trace_hash, b.trace_hash, "seed {seed}");
        assert_eq!(
            (&a.stats, &a.disk, &a.layouts),
            (&b.stats, &b.disk, &b.layouts)
        );
        assert!(a.disk.flushes > 0, "seed {seed}: {:?}", a.disk);
    }
}

#[test]
fn uniform_stores_keep_their_promises() {
    check(Layout::Uniform);
}

#[test]
fn multi_lsm_stores_keep_their_promises() {
    check(Layout::MultiLsm);
}

#[test]
fn decoupled_stores_keep_their_promises() {
    check(Layout::Decoupled);
}

#[test]
fn heterogeneous_stores_keep_their_promises() {
    check(Layout::Heterogeneous);
}

#[test]
fn erasure_tiered_stores_keep_their_promises() {
    check(Layout::ErasureTiered);
}
