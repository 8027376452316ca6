//! Replica selection (Hector's first scheduling step): which replicas a read asks, in
//! which order.
//!
//! A policy ([`ReplicaSelector`]) sees the read ([`ReadInfo`]: table, first key, how many
//! entries, when) and the live replicas in ring order (the token's primary first),
//! reorders them best first and may return tags that travel with the read to the
//! replicas; it learns from every answer's latency. Policies, chosen by
//! `[scheduling] replica_selection` ([`SelectionConfig`]):
//!
//! - `dynamic-snitch` ([`snitch`]): Cassandra's — latency scores recomputed every 100 ms,
//!   reset every 10 min, ring order kept unless a replica is worse than the badness
//!   threshold allows;
//! - `popularity-aware` ([`popularity`]): Hector's — round-robin over the replicas for
//!   keys a decaying count-min sketch finds popular, always the primary for the rest (so
//!   each replica's cache holds its own share of the cold keys);
//! - `c3` ([`c3`]): C3's scoring — response times seen here, service times and queue
//!   lengths the replicas report, reads outstanding to each, ranked by C3's cubic score;
//! - `primary-first`, `round-robin`, `random` ([`simple`]).
//!
//! A policy may need the replicas' state: it declares the facts it needs
//! ([`ReplicaSelector::facts_wanted`]), reads ask for them, and replicas answer with them
//! ([`facts`]). Each policy counts its decisions ([`ReplicaSelector::decisions`]), which
//! the node exports as metrics.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::message::{TableKey, Tag};
use crate::Endpoint;

pub mod c3;
pub mod facts;
pub mod popularity;
pub mod simple;
pub mod snitch;

pub use c3::C3;
pub use mosaic_types::ReplicaSelection;
pub use popularity::{PopularityAware, PopularityParams};
pub use simple::{PrimaryFirst, Random, RoundRobin};
pub use snitch::{DynamicSnitch, SnitchParams};

/// What a policy knows of a read.
#[derive(Clone, Copy, Debug)]
pub struct ReadInfo<'a> {
    /// The table read.
    pub table: TableKey,
    /// The first key read.
    pub key: &'a [u8],
    /// The most entries asked for (1 for a read by key).
    pub limit: usize,
    /// Now, on the node's clock (microseconds).
    pub now_micros: u64,
    /// Nodes in the ring (each of them coordinates reads).
    pub nodes: usize,
}

/// Orders the replicas of a read, best first, and learns from observed latencies.
pub trait ReplicaSelector: Send + Sync + 'static {
    /// The policy's name in the config.
    fn name(&self) -> &'static str;
    /// Reorders `replicas` (all alive, in ring order: the primary first) for `read`; `me`
    /// is this node. Returns the tags that travel with the read to the replicas.
    fn order(&self, replicas: &mut [Endpoint], me: Endpoint, read: &ReadInfo<'_>) -> Vec<Tag>;
    /// A request to `node` was answered after `micros`, observed at `now_micros`.
    fn observe(&self, node: Endpoint, micros: u64, now_micros: u64);
    /// The policy's decisions so far, by kind (e.g. `popular`, `unpopular`).
    fn decisions(&self) -> Vec<(&'static str, u64)>;
    /// The facts the policy needs replicas to report ([`facts`]): reads ask for them.
    fn facts_wanted(&self) -> &'static [facts::FactKind] {
        &[]
    }
    /// `node` reported `facts` with an answer (possibly late: check their time).
    fn feedback(&self, node: Endpoint, facts: &facts::Facts) {
        let _ = (node, facts);
    }
    /// A read was sent to `node`.
    fn sent(&self, node: Endpoint) {
        let _ = node;
    }
    /// A read sent to `node` ended (answered, timed out or abandoned).
    fn done(&self, node: Endpoint) {
        let _ = node;
    }
}

/// `[scheduling]`'s replica selection: the policy and each policy's parameters.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SelectionConfig {
    /// The policy.
    pub replica_selection: ReplicaSelection,
    /// `[scheduling.dynamic-snitch]`.
    #[serde(rename = "dynamic-snitch")]
    pub dynamic_snitch: SnitchParams,
    /// `[scheduling.popularity-aware]`.
    #[serde(rename = "popularity-aware")]
    pub popularity_aware: PopularityParams,
    /// `[scheduling.random]`.
    pub random: RandomParams,
}

/// `[scheduling.random]`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RandomParams {
    /// Seed of the policy's generator (runs with the same seed choose alike).
    pub seed: u64,
}

impl SelectionConfig {
    /// Checks the parameters, saying which one is wrong.
    pub fn validate(&self) -> Result<(), String> {
        self.dynamic_snitch.validate()?;
        self.popularity_aware.validate()
    }
}

/// The policy `config` chooses, with its parameters.
pub fn selector(config: &SelectionConfig) -> Arc<dyn ReplicaSelector> {
    match config.replica_selection {
        ReplicaSelection::DynamicSnitch => {
            Arc::new(DynamicSnitch::new(config.dynamic_snitch.clone()))
        }
        ReplicaSelection::PrimaryFirst => Arc::new(PrimaryFirst::default()),
        ReplicaSelection::RoundRobin => Arc::new(RoundRobin::default()),
        ReplicaSelection::Random => Arc::new(Random::new(config.random.seed)),
        ReplicaSelection::PopularityAware => {
            Arc::new(PopularityAware::new(config.popularity_aware.clone()))
        }
        ReplicaSelection::C3 => Arc::new(C3::default()),
    }
}

/// The policy named `selection`, with default parameters.
pub fn selector_for(selection: ReplicaSelection) -> Arc<dyn ReplicaSelector> {
    selector(&SelectionConfig {
        replica_selection: selection,
        ..SelectionConfig::default()
    })
}

/// The policy named `name` in the config, with default parameters.
pub fn selector_named(name: &str) -> Option<Arc<dyn ReplicaSelector>> {
    ReplicaSelection::parse(name).map(selector_for)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::net::{IpAddr, Ipv4Addr, SocketAddr};

    pub fn ep(i: u8) -> Endpoint {
        SocketAddr::new(IpAddr::V4(Ipv4Addr::new(127, 0, 0, i)), 7000)
    }

    pub fn read(key: &[u8], now_micros: u64) -> ReadInfo<'_> {
        ReadInfo {
            table: TableKey::default(),
            key,
            limit: 1,
            now_micros,
            nodes: 3,
        }
    }

    #[test]
    fn every_policy_is_reachable_by_its_config_name() {
        for (name, want) in [
            ("dynamic-snitch", "dynamic-snitch"),
            ("primary-first", "primary-first"),
            ("round-robin", "round-robin"),
            ("random", "random"),
            ("popularity-aware", "popularity-aware"),
            ("c3", "c3"),
        ] {
            assert_eq!(selector_named(name).unwrap().name(), want);
        }
        assert!(selector_named("fastest").is_none());
    }

    #[test]
    fn policies_only_reorder_the_replicas_they_are_given() {
        for name in [
            "dynamic-snitch",
            "primary-first",
            "round-robin",
            "random",
            "popularity-aware",
            "c3",
        ] {
            let s = selector_named(name).unwrap();
            for i in 0..50u64 {
                s.observe(ep((i % 3) as u8 + 1), 100 * i, i * 50_000);
                let mut r = [ep(1), ep(2), ep(3)];
                s.order(&mut r, ep(2), &read(&i.to_be_bytes(), i * 50_000));
                let mut sorted = r;
                sorted.sort();
                assert_eq!(sorted, [ep(1), ep(2), ep(3)], "{name}");
            }
        }
    }

    #[test]
    fn a_wrong_parameter_is_named() {
        assert!(SelectionConfig::default().validate().is_ok());
        let bad = SelectionConfig {
            popularity_aware: PopularityParams {
                threshold: 1.5,
                ..PopularityParams::default()
            },
            ..SelectionConfig::default()
        };
        assert!(bad.validate().unwrap_err().contains("threshold"));
        let bad = SelectionConfig {
            dynamic_snitch: SnitchParams {
                update_interval_ms: 0,
                ..SnitchParams::default()
            },
            ..SelectionConfig::default()
        };
        assert!(bad.validate().unwrap_err().contains("update_interval_ms"));
    }
}
