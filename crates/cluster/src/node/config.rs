//! A node's cluster settings.

use crate::Endpoint;

/// A node's cluster settings.
#[derive(Clone, Debug, PartialEq)]
pub struct NodeConfig {
    /// This node's internode address.
    pub endpoint: Endpoint,
    /// Nodes contacted to join the cluster (this node may be one).
    pub seeds: Vec<Endpoint>,
    /// Milliseconds between gossip rounds.
    pub gossip_interval_ms: u64,
    /// Phi above which a silent node is convicted (Cassandra's default is 8).
    pub phi_convict_threshold: f64,
    /// How long a write waits for its acknowledgements.
    pub write_timeout_ms: u64,
    /// How long a read waits for its answers (and its read repair).
    pub read_timeout_ms: u64,
    /// How long a schema change waits for live peers to take it.
    pub schema_timeout_ms: u64,
    /// Peer requests served at once before more are refused as overloaded.
    pub replica_requests_max: usize,
    /// Hints are stored for a replica down less than this (0 disables hinted handoff).
    pub hint_window_ms: u64,
    /// Datacenters whose replicas get no hints (Cassandra's
    /// `hinted_handoff_disabled_datacenters`).
    pub hinted_handoff_disabled_datacenters: Vec<String>,
    /// How long repair waits for one answer (a tree, a page of a range, an acknowledged
    /// write) before it asks again; it asks 3 times.
    pub repair_timeout_ms: u64,
    /// log2 of the leaves of each range's Merkle tree.
    pub repair_tree_depth: u8,
    /// Lost tables of `erasure-tiered` layouts a node decodes ahead of degraded reads at
    /// once (each a span at a time, in the background, once a read found it lost); 0
    /// (the default) decodes only what reads touch.
    pub degraded_read_ahead_tables: usize,
    /// The cluster's name: gossip from a node of another cluster is refused.
    pub cluster_name: String,
    /// How long a lightweight transaction retries a contended Paxos round before it
    /// answers a CAS write timeout (Cassandra's `cas_contention_timeout`).
    pub cas_contention_timeout_ms: u64,
    /// The largest write a coordinator accepts (keys and values of one statement or
    /// batch, [`crate::ClusterError::MutationTooLarge`]): below the internode frame limit
    /// ([`crate::message::FRAME_PAYLOAD_MAX`]), so replicas and hints can always carry it.
    pub mutation_size_bytes_max: usize,
    /// The most entries a replica answers one paged request with (a read, a page of
    /// repair's stored entries or Paxos summaries), whatever limit the peer asked for: a
    /// shorter answer says more follows, and the asker reads on from its last key.
    pub read_answer_rows_max: usize,
    /// Bytes per second a node receives while streaming ranges for a topology change
    /// (bootstrap, decommission), summed over its sources (Cassandra's
    /// `stream_throughput_outbound`, paced at the receiver here); 0 is unthrottled.
    pub stream_throughput_bytes_per_sec: u64,
    /// How long a node announcing a join or a leave waits for every live node to see it
    /// before it streams (Cassandra waits `RING_DELAY`; here the nodes are asked).
    pub ring_agreement_timeout_ms: u64,
    /// Whether moves skip repairing the Paxos state of the ranges they move (see
    /// `node/move_paxos.rs`; Cassandra's `skip_paxos_repair_on_topology_change`).
    pub skip_paxos_repair_on_topology_change: bool,
}

impl NodeConfig {
    /// Defaults for a node at `endpoint` (Cassandra's timeouts).
    pub fn new(endpoint: Endpoint) -> NodeConfig {
        NodeConfig {
            endpoint,
            seeds: vec![endpoint],
            gossip_interval_ms: 1000,
            phi_convict_threshold: 8.0,
            write_timeout_ms: 2000,
            read_timeout_ms: 5000,
            schema_timeout_ms: 10_000,
            replica_requests_max: 4096,
            hint_window_ms: 3 * 3600 * 1000,
            hinted_handoff_disabled_datacenters: Vec::new(),
            repair_timeout_ms: 60_000,
            repair_tree_depth: 8,
            degraded_read_ahead_tables: 0,
            cas_contention_timeout_ms: 1000,
            mutation_size_bytes_max: 16 << 20,
            read_answer_rows_max: READ_ANSWER_ROWS_MAX,
            stream_throughput_bytes_per_sec: 24 << 20,
            ring_agreement_timeout_ms: 60_000,
            skip_paxos_repair_on_topology_change: false,
            cluster_name: "Mosaic Cluster".to_owned(),
        }
    }

    /// Whether this node stores hints for a replica in datacenter `dc`: hinted handoff is on
    /// (a window above 0) and `dc` is not among the disabled datacenters.
    pub fn hints_for_datacenter(&self, dc: &str) -> bool {
        self.hint_window_ms > 0
            && !self
                .hinted_handoff_disabled_datacenters
                .iter()
                .any(|d| d == dc)
    }
}

/// The default of [`NodeConfig::read_answer_rows_max`]: above every page a coordinator asks
/// for (a CQL chunk, a repair page), so only a peer asking for more is cut short.
pub const READ_ANSWER_ROWS_MAX: usize = 10 * crate::repair::HASH_CHUNK;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hints_skip_the_disabled_datacenters_and_stop_with_a_zero_window() {
        let mut c = NodeConfig::new("127.0.0.1:7000".parse().unwrap());
        assert!(c.hints_for_datacenter("dc1") && c.hints_for_datacenter("dc2"));
        c.hinted_handoff_disabled_datacenters = vec!["dc2".to_owned()];
        assert!(c.hints_for_datacenter("dc1"));
        assert!(!c.hints_for_datacenter("dc2"));
        // Names are compared whole and as written, as the ring knows them.
        assert!(c.hints_for_datacenter("dc"));
        assert!(c.hints_for_datacenter("DC2"));
        c.hint_window_ms = 0;
        assert!(!c.hints_for_datacenter("dc1"));
    }
}
