//! A restarted node must not coordinate with a ring of itself alone. Restarted without
//! the peers it knew (what `Node::restore_peers` gives it back, as Cassandra's
//! `system.peers` does), it acknowledges writes no other coordinator can find and stores
//! keys it does not replicate — the bug seed 15 found; with them, the same seeds pass.

use mosaic_sim::{run, run_with, Options};

#[test]
fn restarted_nodes_without_their_peers_break_the_guarantees_and_with_them_do_not() {
    let forgetful = Options {
        forget_peers: true,
        ..Options::default()
    };
    let mut caught = Vec::new();
    for seed in 0..200 {
        if !run_with(seed, &forgetful).passed() {
            caught.push(seed);
            let r = run(seed);
            assert!(r.passed(), "MOSAIC_SIM_SEED={seed}: {:#?}", r.violations);
        }
    }
    println!("caught in seeds {caught:?}");
    assert!(
        caught.len() >= 3,
        "a one-node ring went unnoticed: {caught:?}"
    );
}
