//! What the many-seed tests share: their environment knobs and the loop over seeds.
#![allow(clippy::disallowed_methods)] // Tests run real threads and measure real time; the seam binds the code under test.
#![allow(dead_code)] // Each test binary uses its part.

use std::time::Instant;

use mosaic_sim::{run_with, Options, Summary};

/// The number in environment variable `name`, if set.
pub fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name).ok().map(|s| {
        s.parse()
            .unwrap_or_else(|e| panic!("{name}={s} is not a u64: {e}"))
    })
}

/// Runs `seeds` with `options` and fails with every failing seed, each printed as
/// `<seed_var>=<n>` (the variable that reruns it in `test`).
pub fn run_seeds(
    seeds: impl Iterator<Item = u64>,
    options: &Options,
    seed_var: &str,
    test: &str,
) -> Summary {
    let started = Instant::now();
    let mut summary = Summary::default();
    for seed in seeds {
        summary.add(&run_with(seed, options));
    }
    println!("{summary} in {:.1?}", started.elapsed());
    assert!(
        summary.failed.is_empty(),
        "{}rerun one with {seed_var}=<n> cargo test -p mosaic-sim --test {test} -- --nocapture",
        summary
            .failures_text()
            .replace("MOSAIC_SIM_SEED=", &format!("{seed_var}="))
    );
    summary
}

/// Reruns one seed, printing its report; fails with its violations.
pub fn replay(seed: u64, options: &Options, seed_var: &str) {
    let r = run_with(seed, options);
    println!("{r:#?}");
    assert!(
        r.passed(),
        "{seed_var}={seed} failed:\n{}",
        r.violations.join("\n")
    );
}
