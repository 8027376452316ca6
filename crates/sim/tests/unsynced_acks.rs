//! Lost acknowledged writes on real storage are caught: stores that acknowledge writes
//! without syncing them (`Options::skip_fsync`) while promising per-write sync lose
//! acknowledged writes in the simulated power losses, and the runs fail; the same seeds
//! with stores that sync pass.

use mosaic_sim::{run_with, Durability, Options, Storage};

#[test]
fn stores_that_skip_fsync_lose_acknowledged_writes_and_are_caught() {
    let honest = Options {
        storage: Storage::Disk(None),
        durability: Some(Durability::SyncPerWrite),
        ..Options::default()
    };
    let broken = Options {
        skip_fsync: true,
        ..honest.clone()
    };
    let mut caught = Vec::new();
    for seed in 0..40 {
        let r = run_with(seed, &broken);
        if !r.passed() {
            caught.push(seed);
            assert!(
                r.violations
                    .iter()
                    .any(|v| v.contains("lost a durable write")),
                "seed {seed}: {:#?}",
                r.violations
            );
            let synced = run_with(seed, &honest);
            assert!(
                synced.passed(),
                "MOSAIC_SIM_SEED={seed} on disk, syncing: {:#?}",
                synced.violations
            );
        }
    }
    println!("caught in seeds {caught:?}");
    assert!(
        caught.len() >= 5,
        "writes lost unnoticed: caught only in {caught:?}"
    );
}
