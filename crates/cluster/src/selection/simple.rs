//! Policies that do not learn: `primary-first` (DEPART's replica-aware reads),
//! `round-robin` and `random`.

use std::sync::atomic::{AtomicU64, Ordering};

use super::{ReadInfo, ReplicaSelector};
use crate::message::Tag;
use crate::Endpoint;

/// Reads go to the primary replica first, then the others in ring order (DEPART's
/// replica-aware reads: a `decoupled` table's primary copies live in its LSM-tree, the
/// redundant ones in the two-layer log). The replicas arrive in ring order, so the order
/// is kept; latencies are not consulted.
#[derive(Default)]
pub struct PrimaryFirst {
    reads: AtomicU64,
}

impl ReplicaSelector for PrimaryFirst {
    fn name(&self) -> &'static str {
        "primary-first"
    }

    fn order(&self, _replicas: &mut [Endpoint], _me: Endpoint, _read: &ReadInfo<'_>) -> Vec<Tag> {
        self.reads.fetch_add(1, Ordering::Relaxed);
        Vec::new()
    }

    fn observe(&self, _node: Endpoint, _micros: u64, _now_micros: u64) {}

    fn decisions(&self) -> Vec<(&'static str, u64)> {
        vec![("primary", self.reads.load(Ordering::Relaxed))]
    }
}

/// Each read starts one replica further along its ring order than the read before (the
/// coordinator's own copy takes its turn like any other).
#[derive(Default)]
pub struct RoundRobin {
    next: AtomicU64,
}

impl RoundRobin {
    /// Rotates `replicas` to the next turn.
    pub(super) fn rotate(&self, replicas: &mut [Endpoint]) {
        let turn = self.next.fetch_add(1, Ordering::Relaxed);
        if !replicas.is_empty() {
            replicas.rotate_left((turn % replicas.len() as u64) as usize);
        }
    }
}

impl ReplicaSelector for RoundRobin {
    fn name(&self) -> &'static str {
        "round-robin"
    }

    fn order(&self, replicas: &mut [Endpoint], _me: Endpoint, _read: &ReadInfo<'_>) -> Vec<Tag> {
        self.rotate(replicas);
        Vec::new()
    }

    fn observe(&self, _node: Endpoint, _micros: u64, _now_micros: u64) {}

    fn decisions(&self) -> Vec<(&'static str, u64)> {
        vec![("rotated", self.next.load(Ordering::Relaxed))]
    }
}

/// The replicas in a random order (a seeded generator: runs with one seed choose alike).
pub struct Random {
    state: AtomicU64,
    reads: AtomicU64,
}

impl Random {
    /// A policy drawing from `seed`.
    pub fn new(seed: u64) -> Random {
        Random {
            state: AtomicU64::new(seed ^ 0x9e37_79b9_7f4a_7c15),
            reads: AtomicU64::new(0),
        }
    }

    /// The next number of a splitmix64 sequence.
    fn next(&self) -> u64 {
        splitmix64(&self.state)
    }
}

/// The next number of the splitmix64 sequence whose state is `state` (lock-free: every
/// caller advances it).
pub(crate) fn splitmix64(state: &AtomicU64) -> u64 {
    let mut z = state
        .fetch_add(0x9e37_79b9_7f4a_7c15, Ordering::Relaxed)
        .wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl ReplicaSelector for Random {
    fn name(&self) -> &'static str {
        "random"
    }

    fn order(&self, replicas: &mut [Endpoint], _me: Endpoint, _read: &ReadInfo<'_>) -> Vec<Tag> {
        self.reads.fetch_add(1, Ordering::Relaxed);
        for i in (1..replicas.len()).rev() {
            let j = (self.next() % (i as u64 + 1)) as usize;
            replicas.swap(i, j);
        }
        Vec::new()
    }

    fn observe(&self, _node: Endpoint, _micros: u64, _now_micros: u64) {}

    fn decisions(&self) -> Vec<(&'static str, u64)> {
        vec![("shuffled", self.reads.load(Ordering::Relaxed))]
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{ep, read};
    use super::*;

    fn firsts(s: &dyn ReplicaSelector, reads: usize) -> [usize; 3] {
        let mut counts = [0; 3];
        for i in 0..reads {
            let mut r = [ep(1), ep(2), ep(3)];
            s.observe(ep(3), 1, i as u64);
            s.order(&mut r, ep(1), &read(b"k", i as u64));
            if let std::net::IpAddr::V4(ip) = r[0].ip() {
                counts[usize::from(ip.octets()[3] - 1)] += 1;
            }
        }
        counts
    }

    #[test]
    fn primary_first_keeps_the_ring_order_whatever_the_latencies() {
        assert_eq!(firsts(&PrimaryFirst::default(), 30), [30, 0, 0]);
    }

    #[test]
    fn round_robin_rotates_over_every_replica_the_coordinator_included() {
        let s = RoundRobin::default();
        let mut seen = Vec::new();
        for _ in 0..3 {
            let mut r = [ep(1), ep(2), ep(3)];
            s.order(&mut r, ep(1), &read(b"k", 0));
            seen.push(r);
        }
        assert_eq!(
            seen,
            [
                [ep(1), ep(2), ep(3)],
                [ep(2), ep(3), ep(1)],
                [ep(3), ep(1), ep(2)]
            ]
        );
        assert_eq!(firsts(&s, 300), [100, 100, 100]);
    }

    #[test]
    fn random_spreads_reads_evenly_and_a_seed_replays() {
        let counts = firsts(&Random::new(7), 3000);
        for c in counts {
            // 1000 expected each; 5 standard deviations (≈ 26) either way.
            assert!((870..=1130).contains(&c), "{counts:?}");
        }
        let draw = |seed| {
            let s = Random::new(seed);
            (0..20)
                .map(|_| {
                    let mut r = [ep(1), ep(2), ep(3)];
                    s.order(&mut r, ep(1), &read(b"k", 0));
                    r
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(draw(3), draw(3));
        assert_ne!(draw(3), draw(4));
    }
}
