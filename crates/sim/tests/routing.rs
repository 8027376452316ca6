//! Replica selection under heterogeneous node speeds, deterministic (see
//! `mosaic_sim::world::routing`): C3 and the dynamic snitch send most reads to the fastest
//! replica and few to the slow one, while round-robin sends each its third; no policy
//! sends a read to a crashed node once it is seen down.

use mosaic_sim::world::{routing, routing_with};
use mosaic_types::ReplicaSelection as P;

const READS: usize = 300;
/// The slow node's store: up to 20 ms per read, against 1 ms for the others.
const SLOW_US: u64 = 20_000;

fn share(served: &[u64], node: usize) -> f64 {
    served[node] as f64 / served.iter().sum::<u64>().max(1) as f64
}

#[test]
fn latency_aware_policies_route_around_a_slow_node() {
    for seed in [1, 2] {
        let rr = routing(P::RoundRobin, seed, SLOW_US, READS);
        assert!(rr.violations.is_empty(), "{:?}", rr.violations);
        assert_eq!(rr.served.iter().sum::<u64>(), READS as u64, "{rr:?}");
        let rr_slow = share(&rr.served, 2);
        assert!((0.25..=0.42).contains(&rr_slow), "round-robin: {rr:?}");
        for policy in [P::C3, P::DynamicSnitch] {
            let r = routing(policy, seed, SLOW_US, READS);
            assert!(r.violations.is_empty(), "{policy}: {:?}", r.violations);
            assert_eq!(r.failed_reads, 0, "{policy}: {r:?}");
            let slow = share(&r.served, 2);
            assert!(
                slow < 0.1,
                "{policy} sent {slow:.2} of the reads to the slow node: {r:?}"
            );
            // Not merely the coordinator's own copy: the fastest replica, across the network.
            let fastest = share(&r.served, 1);
            assert!(
                fastest > 0.5,
                "{policy} sent {fastest:.2} to the fastest node: {r:?}"
            );
        }
    }
}

#[test]
fn c3_with_rate_control_still_routes_around_a_slow_node_and_loses_no_read() {
    for seed in [1, 2] {
        // A limit of 4 reads per 20 ms binds at first (the reads go out one after another,
        // about one a millisecond): the limiter has to move reads off the fastest replica
        // and then grow its limit as it keeps up.
        let r = routing_with(P::C3, Some(4), seed, SLOW_US, READS);
        assert!(r.violations.is_empty(), "{:?}", r.violations);
        assert_eq!(r.failed_reads, 0, "{r:?}");
        assert_eq!(r.served.iter().sum::<u64>(), READS as u64, "{r:?}");
        let slow = share(&r.served, 2);
        assert!(
            slow < 0.1,
            "sent {slow:.2} of the reads to the slow node: {r:?}"
        );
        assert_eq!(
            r.served_after_crash.get(1).copied().unwrap_or(0),
            0,
            "{r:?}"
        );
        // The limit bound: some reads went elsewhere than to the fastest replica, which
        // C3 without rate control sends every read to here.
        let fastest = r.served.get(1).copied().unwrap_or(0);
        assert!(fastest < READS as u64, "the limit never bound: {r:?}");
    }
}

#[test]
fn no_policy_reads_from_a_crashed_node_once_it_is_seen_down() {
    for policy in [
        P::DynamicSnitch,
        P::C3,
        P::PopularityAware,
        P::PrimaryFirst,
        P::RoundRobin,
        P::Random,
    ] {
        let r = routing(policy, 3, SLOW_US, 120);
        assert!(r.violations.is_empty(), "{policy}: {:?}", r.violations);
        assert_eq!(r.failed_reads, 0, "{policy}: {r:?}");
        assert_eq!(r.served_after_crash.len(), 3, "{policy}: {r:?}");
        assert_eq!(r.served_after_crash[1], 0, "{policy}: {r:?}");
        assert_eq!(
            r.served_after_crash.iter().sum::<u64>(),
            120,
            "{policy}: {r:?}"
        );
    }
}
