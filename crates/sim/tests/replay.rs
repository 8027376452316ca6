//! A seed replays exactly: two runs of it produce the same trace, outcomes and report,
//! and different seeds produce different traces.

use mosaic_sim::run;

#[test]
fn one_seed_runs_identically_twice() {
    for seed in [3u64, 56, 1234, 98_765] {
        let a = run(seed);
        let b = run(seed);
        assert_eq!(a.trace_hash, b.trace_hash, "seed {seed}");
        assert_eq!(a.stats, b.stats, "seed {seed}");
        assert_eq!(a.net, b.net, "seed {seed}");
        assert_eq!(a.faults, b.faults, "seed {seed}");
        assert_eq!(
            (a.virtual_ms, a.polls),
            (b.virtual_ms, b.polls),
            "seed {seed}"
        );
        assert_eq!(a.violations, b.violations, "seed {seed}");
        assert!(
            a.net.delivered > 0 && a.stats.writes > 0,
            "seed {seed}: {a:?}"
        );
    }
    let hashes: std::collections::BTreeSet<u64> = (0..20).map(|s| run(s).trace_hash).collect();
    assert_eq!(hashes.len(), 20, "different seeds, different runs");
}
