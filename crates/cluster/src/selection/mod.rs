//! Replica selection (Hector's first scheduling step): which replicas a read asks, in
//! which order.
//!
//! A policy ([`ReplicaSelector`]) sees the read ([`ReadInfo`]: table, first key, how many
//! entries, when) and the live replicas in ring order (the token's primary first),
//! reorders them best first and may return tags that travel with the read to the
//! replicas; it learns from every answer's latency. Policies, chosen by
//! `[scheduling] replica_selection` ([`SchedulingConfig`]):
//!
//! - `dynamic-snitch` ([`snitch`]): Cassandra's — latency scores recomputed every 100 ms,
//!   reset every 10 min, ring order kept unless a replica is worse than the badness
//!   threshold allows;
//! - `popularity-aware` ([`popularity`]): Hector's — round-robin over the replicas for
//!   keys a decaying count-min sketch finds popular, always the primary for the rest (so
//!   each replica's cache holds its own share of the cold keys);
//! - `c3` ([`c3`]): C3's scoring — response times seen here, service times and queue
//!   lengths the replicas report, reads outstanding to each, ranked by C3's cubic score —
//!   and, with `[scheduling.c3] rate_control`, C3's rate control ([`c3_rate`]);
//! - `primary-first`, `round-robin`, `random` ([`simple`]).
//!
//! A policy may need the replicas' state: it declares the facts it needs
//! ([`ReplicaSelector::facts_wanted`]), reads ask for them, and replicas answer with them
//! ([`facts`]). Each policy counts its decisions ([`ReplicaSelector::decisions`]), which
//! the node exports as metrics.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::local_queue::{QueueConfig, QueuePolicy, RmlParams, StarvationBound};
use crate::message::{TableKey, Tag};
use crate::Endpoint;

pub mod c3;
pub mod c3_rate;
pub mod facts;
pub mod oracle;
pub mod popularity;
pub mod simple;
pub mod snitch;

pub use c3::C3;
pub use c3_rate::C3Params;
pub use mosaic_types::ReplicaSelection;
pub use oracle::{ItemSizeParams, SizeOracleId, StaticParams, Tagger};
pub use popularity::{PopularRouting, PopularityAware, PopularityParams};
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
    /// A read was sent to `node` at `now_micros`.
    fn sent(&self, node: Endpoint, now_micros: u64) {
        let _ = (node, now_micros);
    }
    /// How long a read ordered for `replicas` (best first) should wait before it is sent
    /// (C3's backlog: every replica at its sending limit); 0: send now.
    fn hold_micros(&self, replicas: &mut dyn Iterator<Item = Endpoint>, now_micros: u64) -> u64 {
        let _ = (replicas, now_micros);
        0
    }
    /// A read sent to `node` was answered at `now_micros` (after [`Self::observe`]).
    fn read_answered(&self, node: Endpoint, now_micros: u64) {
        let _ = (node, now_micros);
    }
    /// A read sent to `node` ended (answered, timed out or abandoned).
    fn done(&self, node: Endpoint) {
        let _ = node;
    }
    /// Forgets what was measured of `node` (it is reachable again after reads could not
    /// reach it): it is measured afresh.
    fn forget(&self, node: Endpoint) {
        let _ = node;
    }
}

/// `[scheduling]`: the replica-selection policy, the read stage's queue and concurrency,
/// the oracle tagging reads, and each policy's parameters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SchedulingConfig {
    /// The replica-selection policy.
    pub replica_selection: ReplicaSelection,
    /// The order in which a replica's read stage serves waiting reads.
    pub local_queue: QueuePolicy,
    /// Reads a replica serves at once (its read stage's workers); 0 runs every read where
    /// it arrives, with no stage (the baseline the stage's overhead is measured against).
    pub read_concurrency: usize,
    /// Slots only first-priority reads (priority 0: small or untagged) may take: reads of
    /// a lower priority hold at most `read_concurrency − reserved_slots` at once, so a
    /// burst of large reads never takes every slot from the small ones (0: none reserved;
    /// `random-multi-level` and `priority` queues only, which keep priorities apart).
    pub reserved_slots: usize,
    /// The oracle whose size estimates tag each read for the replicas' queues.
    pub size_oracle: SizeOracleId,
    /// Item sizes (bytes) at which a read's priority drops one level.
    pub priority_thresholds: Vec<u64>,
    /// `[scheduling.dynamic-snitch]`.
    #[serde(rename = "dynamic-snitch")]
    pub dynamic_snitch: SnitchParams,
    /// `[scheduling.popularity-aware]`.
    #[serde(rename = "popularity-aware")]
    pub popularity_aware: PopularityParams,
    /// `[scheduling.c3]`.
    pub c3: C3Params,
    /// `[scheduling.random]`.
    pub random: RandomParams,
    /// `[scheduling.random-multi-level]`.
    #[serde(rename = "random-multi-level")]
    pub random_multi_level: RmlParams,
    /// `[scheduling.priority]`.
    pub priority: StarvationBound,
    /// `[scheduling.size-aware]`.
    #[serde(rename = "size-aware")]
    pub size_aware: StarvationBound,
    /// `[scheduling.item-size]`.
    #[serde(rename = "item-size")]
    pub item_size: ItemSizeParams,
    /// `[scheduling.static]`.
    #[serde(rename = "static")]
    pub static_sizes: StaticParams,
}

impl Default for SchedulingConfig {
    fn default() -> Self {
        SchedulingConfig {
            replica_selection: ReplicaSelection::default(),
            local_queue: QueuePolicy::default(),
            // Cassandra's concurrent_reads.
            read_concurrency: 32,
            reserved_slots: 0,
            size_oracle: SizeOracleId::default(),
            priority_thresholds: vec![65536],
            dynamic_snitch: SnitchParams::default(),
            popularity_aware: PopularityParams::default(),
            c3: C3Params::default(),
            random: RandomParams::default(),
            random_multi_level: RmlParams::default(),
            priority: StarvationBound::default(),
            size_aware: StarvationBound::default(),
            item_size: ItemSizeParams::default(),
            static_sizes: StaticParams::default(),
        }
    }
}

/// `[scheduling.random]`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RandomParams {
    /// Seed of the policy's generator (runs with the same seed choose alike).
    pub seed: u64,
}

impl SchedulingConfig {
    /// Checks the parameters, saying which one is wrong.
    pub fn validate(&self) -> Result<(), String> {
        self.dynamic_snitch.validate()?;
        self.popularity_aware.validate()?;
        self.c3.validate()?;
        self.random_multi_level.validate()?;
        if self.read_concurrency > 1024 {
            return Err(format!(
                "[scheduling] read_concurrency must be at most 1024, not {}",
                self.read_concurrency
            ));
        }
        if self.reserved_slots > 0 {
            if !matches!(
                self.local_queue,
                QueuePolicy::RandomMultiLevel | QueuePolicy::Priority
            ) {
                return Err(format!(
                    "[scheduling] reserved_slots needs local_queue = \"random-multi-level\" or \"priority\" (queues that keep priorities apart), not \"{}\"",
                    self.local_queue
                ));
            }
            if self.reserved_slots >= self.read_concurrency {
                return Err(format!(
                    "[scheduling] reserved_slots ({}) must be less than read_concurrency ({})",
                    self.reserved_slots, self.read_concurrency
                ));
            }
        }
        if self.priority_thresholds.len() > 16 {
            return Err("[scheduling] priority_thresholds takes at most 16 sizes".into());
        }
        if !(1..=1 << 26).contains(&self.item_size.slots) {
            return Err(format!(
                "[scheduling.item-size] slots must be between 1 and 67108864, not {}",
                self.item_size.slots
            ));
        }
        if self.size_oracle == SizeOracleId::Static && self.static_sizes.file.is_empty() {
            return Err(
                "[scheduling] size_oracle = \"static\" needs [scheduling.static] file".into(),
            );
        }
        Ok(())
    }

    /// The read stage's queue configuration.
    pub fn queue(&self) -> QueueConfig {
        QueueConfig {
            policy: self.local_queue,
            rml: self.random_multi_level.clone(),
            priority: self.priority.clone(),
            size_aware: self.size_aware.clone(),
            seed: self.random.seed,
            reserved_slots: self.reserved_slots,
        }
    }

    /// Whether the local queue orders reads by tags no oracle sets (every read then looks
    /// alike to it): a warning worth logging at start.
    pub fn queue_without_tags(&self) -> bool {
        self.read_concurrency > 0
            && self.local_queue != QueuePolicy::Fcfs
            && self.size_oracle == SizeOracleId::None
    }
}

/// The policy `config` chooses, with its parameters.
pub fn selector(config: &SchedulingConfig) -> Arc<dyn ReplicaSelector> {
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
        ReplicaSelection::C3 => Arc::new(C3::new(config.c3.clone())),
    }
}

/// The policy named `selection`, with default parameters.
pub fn selector_for(selection: ReplicaSelection) -> Arc<dyn ReplicaSelector> {
    selector(&SchedulingConfig {
        replica_selection: selection,
        ..SchedulingConfig::default()
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
        assert!(SchedulingConfig::default().validate().is_ok());
        let bad = SchedulingConfig {
            popularity_aware: PopularityParams {
                threshold: 1.5,
                ..PopularityParams::default()
            },
            ..SchedulingConfig::default()
        };
        assert!(bad.validate().unwrap_err().contains("threshold"));
        let bad = SchedulingConfig {
            dynamic_snitch: SnitchParams {
                update_interval_ms: 0,
                ..SnitchParams::default()
            },
            ..SchedulingConfig::default()
        };
        assert!(bad.validate().unwrap_err().contains("update_interval_ms"));
    }
}
