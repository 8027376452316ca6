//! Replica selection: which replicas a read asks, in which order.
//!
//! Owns the policy interface and its default, Cassandra's dynamic snitch: an
//! exponentially weighted moving average of each replica's observed response latency,
//! reads going to the fastest. The scheduling work adds policies behind the same trait;
//! a policy sees the request and may return tags that travel with it.

use std::collections::HashMap;

use parking_lot::Mutex;

use crate::message::Tag;
use crate::Endpoint;

/// What a policy knows of a read.
#[derive(Clone, Copy, Debug)]
pub struct ReadInfo<'a> {
    /// The first key read.
    pub key: &'a [u8],
    /// The most entries asked for.
    pub limit: usize,
}

/// Orders the replicas of a read, best first, and learns from observed latencies.
pub trait ReplicaSelector: Send + Sync + 'static {
    /// Reorders `replicas` (all alive) for `read`; `me` is this node. Returns the tags that
    /// travel with the read to the replicas (none for the dynamic snitch).
    fn order(&self, replicas: &mut [Endpoint], me: Endpoint, read: &ReadInfo<'_>) -> Vec<Tag>;
    /// A response from `node` took `micros`.
    fn observe(&self, node: Endpoint, micros: u64);
}

/// Weight of a new latency sample in the moving average.
const ALPHA: f64 = 0.25;

/// Cassandra's dynamic snitch (see the module doc). Replicas not measured yet come last
/// (every write and read measures the replicas it touches, so none stays unmeasured for
/// long), ties keep the ring order, and this node comes first among equals.
#[derive(Default)]
pub struct DynamicSnitch {
    scores: Mutex<HashMap<Endpoint, f64>>,
}

impl ReplicaSelector for DynamicSnitch {
    fn order(&self, replicas: &mut [Endpoint], me: Endpoint, _read: &ReadInfo<'_>) -> Vec<Tag> {
        let scores = self.scores.lock();
        let score = |n: &Endpoint| scores.get(n).copied().unwrap_or(f64::MAX);
        replicas.sort_by(|a, b| {
            score(a)
                .total_cmp(&score(b))
                .then_with(|| (*b == me).cmp(&(*a == me)))
        });
        Vec::new()
    }

    fn observe(&self, node: Endpoint, micros: u64) {
        let mut scores = self.scores.lock();
        let s = scores.entry(node).or_insert(micros as f64);
        *s = (1.0 - ALPHA) * *s + ALPHA * micros as f64;
    }
}

/// Reads go to the primary replica first, then the others in ring order (DEPART's
/// replica-aware reads: a `decoupled` table's primary copies live in its LSM-tree, the
/// redundant ones in the two-layer log). The coordinator's replicas arrive in ring order,
/// primary first, so the order is kept as it is; latencies are not consulted.
#[derive(Default)]
pub struct PrimaryFirst;

impl ReplicaSelector for PrimaryFirst {
    fn order(&self, _replicas: &mut [Endpoint], _me: Endpoint, _read: &ReadInfo<'_>) -> Vec<Tag> {
        Vec::new()
    }

    fn observe(&self, _node: Endpoint, _micros: u64) {}
}

/// The replica-selection policy `selection` names.
pub fn selector_for(selection: ReplicaSelection) -> std::sync::Arc<dyn ReplicaSelector> {
    match selection {
        ReplicaSelection::DynamicSnitch => std::sync::Arc::new(DynamicSnitch::default()),
        ReplicaSelection::PrimaryFirst => std::sync::Arc::new(PrimaryFirst),
    }
}

/// The replica-selection policy named `name` in the config: `dynamic-snitch` (Cassandra's,
/// the default) or `primary-first`.
pub fn selector_named(name: &str) -> Option<std::sync::Arc<dyn ReplicaSelector>> {
    ReplicaSelection::parse(name).map(selector_for)
}

pub use mosaic_types::ReplicaSelection;

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{IpAddr, Ipv4Addr, SocketAddr};

    fn ep(i: u8) -> Endpoint {
        SocketAddr::new(IpAddr::V4(Ipv4Addr::new(127, 0, 0, i)), 7000)
    }

    #[test]
    fn faster_replicas_and_this_node_come_first() {
        let s = DynamicSnitch::default();
        let read = ReadInfo { key: b"", limit: 1 };
        let mut r = [ep(1), ep(2), ep(3)];
        s.order(&mut r, ep(2), &read);
        assert_eq!(r, [ep(2), ep(1), ep(3)]);
        for _ in 0..10 {
            s.observe(ep(1), 5_000);
            s.observe(ep(2), 9_000);
            s.observe(ep(3), 100);
        }
        s.order(&mut r, ep(2), &read);
        assert_eq!(r, [ep(3), ep(1), ep(2)]);
    }

    #[test]
    fn primary_first_keeps_the_ring_order_whatever_the_latencies() {
        let s = selector_named("primary-first").unwrap();
        let read = ReadInfo { key: b"", limit: 1 };
        s.observe(ep(1), 50_000);
        s.observe(ep(3), 10);
        let mut r = [ep(1), ep(2), ep(3)];
        s.order(&mut r, ep(3), &read);
        assert_eq!(r, [ep(1), ep(2), ep(3)]);
        assert!(selector_named("dynamic-snitch").is_some());
        assert!(selector_named("fastest").is_none());
    }
}
