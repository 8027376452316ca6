//! Lost unsynced writes are real and the checker sees them: with stores that lose their
//! unsynced tail in a crash, holding writes to their full promise anyway finds violations,
//! while the checker's accounting (a write keeps only the copies no crash destroyed)
//! passes the same seeds.

use mosaic_sim::{run_with, Durability, Options};

#[test]
fn unaccounted_losses_are_caught_and_accounted_ones_pass() {
    let lossy = Some(Durability::Periodic {
        interval_ms: 5_000,
        lossy: true,
    });
    let blind = Options {
        ignore_losses: true,
        durability: lossy,
        ..Options::default()
    };
    let honest = Options {
        durability: lossy,
        ..Options::default()
    };
    let mut caught = Vec::new();
    for seed in 0..80 {
        let r = run_with(seed, &blind);
        if !r.passed() {
            caught.push(seed);
            let accounted = run_with(seed, &honest);
            assert!(
                accounted.passed(),
                "MOSAIC_SIM_SEED={seed} with lossy stores: {:#?}",
                accounted.violations
            );
            assert!(accounted.stats.excused_by_loss > 0, "{:?}", accounted.stats);
        }
    }
    println!("caught in seeds {caught:?}");
    assert!(
        caught.len() >= 3,
        "lost writes went unnoticed in all but {caught:?}"
    );
}
