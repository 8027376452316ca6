//! Mosaic's cluster: N peer nodes, no master, any node coordinates any request.
//!
//! Owns placement ([`ring`], [`placement`]: SimpleStrategy and NetworkTopologyStrategy), membership and failure detection ([`gossip`]), the internode
//! protocol ([`message`]), Merkle trees over logical rows ([`repair`]), and the node
//! ([`node`]), a small handle composing one module per role: the coordinator's write path
//! (`node/write.rs`, a per-write response handler) and read path (`node/read.rs`, digest
//! reads and blocking read repair), the replica side of every request (`node/replica.rs`),
//! gossip rounds, ring rebuilds and schema propagation (`node/membership.rs`), hinted
//! handoff (`node/hints.rs`) and anti-entropy repair (`node/anti_entropy.rs`). Replica
//! selection for reads is a policy behind [`selection::ReplicaSelector`], chosen by
//! [`selection::selector`] from `[scheduling]`. Events (nodes up and down, schema changes, hint replay,
//! repair) go to `tracing`; the server installs the subscriber.
//!
//! Must not depend on tokio, sockets, files or the wall clock: the node reaches time,
//! randomness, spawning and the network only through [`env::Runtime`] and
//! [`env::Transport`], and local storage only through [`env::Store`], so the server runs it
//! on tokio and TCP while a simulator runs many nodes on one thread with a virtual clock.
//! Nor does it know CQL or the schema's shape: tables are 16-byte ids, schemas opaque
//! snapshots ([`message::SchemaSnapshot`]).

use std::net::SocketAddr;

pub mod consistency;
pub mod env;
pub mod gossip;
pub mod latency;
pub mod local_queue;
pub mod message;
pub mod node;
pub mod paxos;
pub mod placement;
pub mod repair;
pub mod repair_stream;
pub mod ring;
pub mod selection;
pub mod tokens;

pub use consistency::{ClusterError, ConsistencyLevel, Quorum};
pub use env::{Runtime, Store, Transport};
pub use message::{
    Body, Envelope, Failure, SchemaSnapshot, TableKey, WireMutation, EC_SHARD_BYTES_MAX,
};
pub use node::{Node, NodeConfig};
pub use placement::ReplicationStrategy;
pub use ring::{Location, Move, ReplicaRole, Ring};

/// A node's identity on the wire and in the ring: its internode address (as Cassandra's
/// endpoints are).
pub type Endpoint = SocketAddr;
