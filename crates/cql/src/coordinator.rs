//! The interface between statements and the cluster: what a statement asks of storage.
//!
//! The statement layer ([`crate::processor`]) turns CQL into row-layer operations — engine
//! keys and fragments built with `mosaic-rows` — and hands them to a [`Coordinator`]. A
//! single node's coordinator applies them to local storage; the cluster's coordinator
//! routes them by token to replicas and waits for the consistency level. Neither knows
//! CQL, and the statement layer knows neither storage nor placement.
//!
//! Every key of a partition starts with its token ([`mosaic_rows::encode_token`]), so a
//! [`ReadCommand`]'s key range is also a token range, and a coordinator can place it.

use std::future::Future;
use std::net::IpAddr;
use std::sync::Arc;

use mosaic_rows::KeyRange;
use mosaic_types::Token;

use crate::frame::{Consistency, ErrorResponse};
use crate::schema::{Catalog, TableId, Uuid};

/// One write to one engine key of one table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mutation {
    /// The table.
    pub table: TableId,
    /// The partition's token (also the first bytes of `key`).
    pub token: Token,
    /// The engine key (row-layer encoding).
    pub key: Vec<u8>,
    /// The engine version timestamp (`Timestamp::to_engine` of the fragment's newest).
    pub ts: u64,
    /// The encoded fragment, applied as a merge operand.
    pub fragment: Vec<u8>,
}

/// A bounded read of one table's engine keys, in ascending key order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReadCommand {
    /// The table.
    pub table: TableId,
    /// The keys to read.
    pub range: KeyRange,
    /// The most entries to return; the caller continues after the last key it got.
    pub limit: usize,
}

/// What a read returns: merged `(key, fragment)` entries in key order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReadResult {
    /// The entries.
    pub entries: Vec<(Vec<u8>, Vec<u8>)>,
    /// Whether the range holds no more entries than these.
    pub exhausted: bool,
}

/// A node as the system tables describe it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeInfo {
    /// Its host id.
    pub host_id: Uuid,
    /// The address clients connect to (`rpc_address`, `native_address`).
    pub rpc_address: IpAddr,
    /// The native-protocol port.
    pub native_port: u16,
    /// The address peers know it by (`peer`, `broadcast_address`, `listen_address`).
    pub broadcast_address: IpAddr,
    /// Its datacenter.
    pub data_center: String,
    /// Its rack.
    pub rack: String,
    /// The tokens it owns.
    pub tokens: Vec<Token>,
    /// The schema version it has.
    pub schema_version: Uuid,
    /// The release it reports (`release_version`).
    pub release_version: String,
    /// Whether it is up, as this node sees it.
    pub up: bool,
}

/// Cluster-wide facts for `system.local`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClusterInfo {
    /// `cluster_name`.
    pub cluster_name: String,
    /// The partitioner class.
    pub partitioner: String,
}

/// Executes the operations statements produce. Implementations decide placement and
/// durability; errors come back as the CQL error the client should see (Unavailable,
/// WriteTimeout, ReadTimeout, Overloaded, Server, …).
pub trait Coordinator: Send + Sync + 'static {
    /// The current schema.
    fn catalog(&self) -> Arc<Catalog>;

    /// Applies a schema change: `change` computes the new catalog from the current one
    /// (under a lock, so concurrent DDL serializes) and the value to return; the
    /// coordinator makes the new catalog durable and creates or drops storage for tables
    /// that appeared or disappeared before returning. A catalog equal to the current one
    /// is a no-op.
    fn update_schema<R, F>(
        &self,
        change: F,
    ) -> impl Future<Output = Result<R, ErrorResponse>> + Send
    where
        R: Send + 'static,
        F: FnOnce(&Catalog) -> Result<(Catalog, R), ErrorResponse> + Send + 'static;

    /// Applies mutations (possibly of several partitions and tables) at `consistency`.
    fn write(
        &self,
        mutations: Vec<Mutation>,
        consistency: Consistency,
    ) -> impl Future<Output = Result<(), ErrorResponse>> + Send;

    /// Reads at `consistency`.
    fn read(
        &self,
        command: ReadCommand,
        consistency: Consistency,
    ) -> impl Future<Output = Result<ReadResult, ErrorResponse>> + Send;

    /// Removes every row of a table on every replica.
    fn truncate(&self, table: TableId) -> impl Future<Output = Result<(), ErrorResponse>> + Send;

    /// A write timestamp for a statement without one: microseconds since the epoch,
    /// strictly increasing on this node.
    fn new_timestamp(&self) -> i64;

    /// Local time in whole seconds since the epoch (TTL expiry, deletion times).
    fn now_secs(&self) -> i64;

    /// This node.
    fn local_node(&self) -> NodeInfo;

    /// The other nodes.
    fn peers(&self) -> Vec<NodeInfo>;

    /// Cluster-wide facts.
    fn cluster_info(&self) -> ClusterInfo;
}
