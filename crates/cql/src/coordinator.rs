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

use mosaic_rows::{ClusteringFilter, KeyRange};
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
    /// The most entries to return (counted after `filter`); the caller continues after
    /// the last key it got.
    pub limit: usize,
    /// Restrictions of the clustering columns that every replica applies to the rows it
    /// reads before answering: the read returns only the clustering rows that pass, plus
    /// every entry that is not a row (partition header, range tombstones, static row), so
    /// deletions still reach the coordinator. A filter only removes rows the statement's
    /// own predicates would drop too (the coordinator still checks those), and depends on
    /// nothing but a row's key, so every replica of a range answers alike whatever order
    /// it stores rows in. `exhausted` then says whether the range holds no more entries
    /// that pass. `None`: every entry.
    pub filter: Option<ClusteringFilter>,
    /// A secondary index to read the range through: the read returns the entries of the
    /// rows (or partitions) the index's entries for the term point at, with their
    /// partitions' heads, in key order, each replica from its own index. Like `filter`,
    /// it may return rows the statement's predicates drop (an index entry outlives an
    /// overwrite until it is found stale), never fewer than a full read would pass. A
    /// coordinator or replica without the index (not yet built, or built by a node that
    /// has not caught up with the schema) reads the range whole. `None`: no index.
    pub index: Option<crate::index::IndexQuery>,
}

/// What a read returns: merged `(key, fragment)` entries in key order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReadResult {
    /// The entries.
    pub entries: Vec<(Vec<u8>, Vec<u8>)>,
    /// Whether the range holds no more entries than these.
    pub exhausted: bool,
    /// The keys of `entries` whose replicas answered differently (one lacked the entry or
    /// held another version of it), in key order: a read through an index re-reads those
    /// rows (replica filtering protection). `Some(empty)`: every replica asked answered
    /// alike (or one copy answered); `None`: unknown, so any entry may be.
    pub disputed: Option<Vec<Vec<u8>>>,
}

impl ReadResult {
    /// An answer from one copy of the data (nothing to dispute).
    pub fn one_copy(entries: Vec<(Vec<u8>, Vec<u8>)>, exhausted: bool) -> ReadResult {
        ReadResult {
            entries,
            exhausted,
            disputed: Some(Vec::new()),
        }
    }
}

/// A lightweight transaction's compare-and-set of one partition (`INSERT … IF NOT EXISTS`,
/// `UPDATE … IF …`, `DELETE … IF EXISTS`, a conditional batch): the coordinator wins a Paxos
/// round for the partition at the serial level, reads `reads` at that level, hands what it
/// read to a [`CasDecision`] and, when the decision's conditions hold, commits the mutations
/// it built at the round's timestamp. Rounds for one partition are linearizable.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CasRequest {
    /// The table.
    pub table: TableId,
    /// The partition's token.
    pub token: Token,
    /// The partition's key prefix ([`mosaic_rows::PartitionPrefix::as_bytes`]): what the
    /// Paxos state is kept under. Every read and every mutation stays inside it.
    pub partition: Vec<u8>,
    /// What the conditions are checked against, read once the round holds a promise.
    pub reads: Vec<ReadCommand>,
}

/// What a compare-and-set does with what it read (see [`CasRequest`]).
pub trait CasDecision: Send + Sync + 'static {
    /// The mutations to commit, every one written at `timestamp` (microseconds, the
    /// round's ballot), given `current` (one result per read of the request, in order);
    /// `None` when the conditions do not hold. A round that loses to a concurrent one
    /// retries, so this may be called more than once.
    fn decide(
        &self,
        current: &[ReadResult],
        timestamp: i64,
    ) -> Result<Option<Vec<Mutation>>, ErrorResponse>;
}

/// How a compare-and-set ended.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CasOutcome {
    /// Whether the conditions held and the mutations were committed.
    pub applied: bool,
    /// What the conditions were checked against (one result per read of the request).
    pub current: Vec<ReadResult>,
}

/// An increment of one counter column of one row (`UPDATE … SET c = c + n`; see
/// `mosaic_rows::counter` for how counters are stored).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CounterIncrement {
    /// The table.
    pub table: TableId,
    /// The partition's token.
    pub token: Token,
    /// The row's engine key (a clustering row or the static row).
    pub key: Vec<u8>,
    /// The counter column.
    pub column: mosaic_rows::ColumnId,
    /// What to add (negative to subtract).
    pub delta: i64,
}

/// A node as the system tables describe it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeInfo {
    /// Its host id.
    pub host_id: mosaic_types::HostId,
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

    /// A lightweight transaction (see [`CasRequest`]): the Paxos phase at `serial`
    /// (`Serial` or `LocalSerial`), the commit at `commit`. Contention that outlasts the
    /// write timeout answers `WriteTimeout` with write type `CAS`.
    fn cas(
        &self,
        request: CasRequest,
        decision: Arc<dyn CasDecision>,
        serial: Consistency,
        commit: Consistency,
    ) -> impl Future<Output = Result<CasOutcome, ErrorResponse>> + Send;

    /// Applies counter increments at `consistency`: each counter's increment is led by
    /// one of its replicas, which adds it to its own shard and replicates the shard
    /// (timeouts answer `WriteTimeout` with write type `COUNTER`). A retried increment
    /// may count twice (Cassandra's caveat).
    fn counter_write(
        &self,
        increments: Vec<CounterIncrement>,
        consistency: Consistency,
    ) -> impl Future<Output = Result<(), ErrorResponse>> + Send;

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

    /// The secondary indexes this node has built, as `(keyspace, index name)`
    /// (`system."IndexInfo"`). The default: every index of the schema, for coordinators
    /// that build an index as they create it.
    fn built_indexes(&self) -> Vec<(String, String)> {
        self.catalog()
            .tables()
            .flat_map(|t| {
                t.indexes
                    .keys()
                    .map(|name| (t.keyspace.clone(), name.clone()))
            })
            .collect()
    }

    /// The estimated mean number of rows per indexed value of index `index` of `table`,
    /// from this node's statistics of it (Cassandra's `getEstimatedResultRows`, the mean
    /// row count of the index's partitions): of several indexes a query could read
    /// through, it reads through the one with the lowest. `None` when unknown (the
    /// default), which ranks after every known estimate.
    fn index_mean_rows(&self, table: TableId, index: &str) -> Option<f64> {
        let _ = (table, index);
        None
    }

    /// Tombstones a query may read before it is logged, and before it fails (Cassandra's
    /// `tombstone_warn_threshold` and `tombstone_failure_threshold`).
    fn tombstone_thresholds(&self) -> TombstoneThresholds {
        TombstoneThresholds::default()
    }

    /// The layout of tables created without a `layout` option (the cluster's default,
    /// from the node's configuration, checked when it was loaded); an error when the
    /// default names a layout this build does not store.
    fn default_layout(&self) -> Result<mosaic_types::Layout, ErrorResponse> {
        Ok(crate::schema::DEFAULT_LAYOUT)
    }
}

/// How many tombstones one query (one page of it) may read: past `warn` it is logged,
/// past `fail` it is aborted with ReadFailure (reason `READ_TOO_MANY_TOMBSTONES`), as
/// Cassandra's thresholds do; 0 turns either off.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TombstoneThresholds {
    /// Cassandra's `tombstone_warn_threshold` (1,000).
    pub warn: u64,
    /// Cassandra's `tombstone_failure_threshold` (100,000).
    pub fail: u64,
}

impl Default for TombstoneThresholds {
    fn default() -> TombstoneThresholds {
        TombstoneThresholds {
            warn: 1000,
            fail: 100_000,
        }
    }
}

/// A compare-and-set for a coordinator whose reads and writes reach the only copy of the
/// data (one process's storage): reads the request, decides at a fresh timestamp and
/// writes. The caller holds a lock that keeps other compare-and-sets out meanwhile, which
/// with one copy is all Paxos would guarantee.
pub async fn cas_on_one_copy<C: Coordinator>(
    coordinator: &C,
    request: CasRequest,
    decision: &dyn CasDecision,
    serial: Consistency,
    commit: Consistency,
) -> Result<CasOutcome, ErrorResponse> {
    let mut current = Vec::with_capacity(request.reads.len());
    for read in request.reads {
        current.push(coordinator.read(read, serial).await?);
    }
    let Some(mutations) = decision.decide(&current, coordinator.new_timestamp())? else {
        return Ok(CasOutcome {
            applied: false,
            current,
        });
    };
    coordinator.write(mutations, commit).await?;
    Ok(CasOutcome {
        applied: true,
        current,
    })
}

/// How many replicas of a keyspace live where: what a consistency level is checked against.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReplicaCounts {
    /// Replicas in all datacenters (the replication factor).
    pub total: u32,
    /// Replicas in the coordinator's datacenter.
    pub local: u32,
    /// Replicas currently alive, in all datacenters.
    pub alive: u32,
    /// Replicas currently alive in the coordinator's datacenter.
    pub local_alive: u32,
}

/// The replica counts of a keyspace for a cluster of `nodes_by_dc` nodes per datacenter
/// (all alive), as placement would make them: a datacenter holds at most as many replicas
/// as it has nodes. SimpleStrategy places over the whole ring, ignoring datacenters.
pub fn replica_counts(
    replication: &crate::schema::Replication,
    local_dc: &str,
    nodes_by_dc: &[(&str, u32)],
) -> ReplicaCounts {
    let all_nodes: u32 = nodes_by_dc.iter().map(|(_, n)| n).sum();
    if replication.class.ends_with("NetworkTopologyStrategy") {
        let mut counts = ReplicaCounts {
            total: 0,
            local: 0,
            alive: 0,
            local_alive: 0,
        };
        for (dc, rf) in &replication.options {
            let rf: u32 = rf.parse().unwrap_or(0);
            let nodes = nodes_by_dc
                .iter()
                .find(|(d, _)| d == dc)
                .map_or(0, |(_, n)| *n);
            counts.total += rf;
            counts.alive += rf.min(nodes);
            if dc == local_dc {
                counts.local += rf;
                counts.local_alive += rf.min(nodes);
            }
        }
        counts
    } else {
        let rf = replication.factor();
        ReplicaCounts {
            total: rf,
            local: rf,
            alive: rf.min(all_nodes),
            // SimpleStrategy ignores datacenters: every replica counts as local.
            local_alive: rf.min(all_nodes),
        }
    }
}

/// Checks that enough replicas are alive for `consistency`, as Cassandra's coordinator does
/// before sending anything: `Unavailable` (with the required and alive counts) otherwise.
pub fn check_available(
    consistency: Consistency,
    counts: ReplicaCounts,
    is_write: bool,
) -> Result<(), ErrorResponse> {
    let quorum = |n: u32| n / 2 + 1;
    let (required, alive) = match consistency {
        Consistency::Any if is_write => (1, 1),
        Consistency::Any => {
            return Err(ErrorResponse::new(
                crate::frame::ErrorKind::Invalid,
                "ANY ConsistencyLevel is only supported for writes",
            ))
        }
        Consistency::One => (1, counts.alive),
        Consistency::Two => (2, counts.alive),
        Consistency::Three => (3, counts.alive),
        Consistency::LocalOne => (1, counts.local_alive),
        Consistency::Quorum | Consistency::Serial => (quorum(counts.total), counts.alive),
        Consistency::LocalQuorum | Consistency::LocalSerial => {
            (quorum(counts.local), counts.local_alive)
        }
        Consistency::EachQuorum if !is_write => (quorum(counts.local), counts.local_alive),
        Consistency::EachQuorum => (quorum(counts.total), counts.alive),
        Consistency::All => (counts.total, counts.alive),
    };
    if alive >= required {
        return Ok(());
    }
    Err(ErrorResponse::new(
        crate::frame::ErrorKind::Unavailable {
            consistency,
            required: i32::try_from(required).unwrap_or(i32::MAX),
            alive: i32::try_from(alive).unwrap_or(i32::MAX),
        },
        format!("Cannot achieve consistency level {}", consistency.name()),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::Replication;
    use std::collections::BTreeMap;

    #[test]
    fn consistency_levels_need_enough_live_replicas() {
        let simple3 = Replication::simple(3);
        let one_node = replica_counts(&simple3, "datacenter1", &[("datacenter1", 1)]);
        assert_eq!(one_node.alive, 1);
        assert!(check_available(Consistency::One, one_node, true).is_ok());
        assert!(check_available(Consistency::LocalOne, one_node, false).is_ok());
        let e = check_available(Consistency::Quorum, one_node, true).unwrap_err();
        assert!(matches!(
            e.kind,
            crate::frame::ErrorKind::Unavailable {
                required: 2,
                alive: 1,
                ..
            }
        ));
        assert!(check_available(Consistency::All, one_node, false).is_err());
        assert!(check_available(Consistency::Any, one_node, true).is_ok());
        assert!(check_available(Consistency::Any, one_node, false).is_err());
        let simple1 = replica_counts(
            &Replication::simple(1),
            "datacenter1",
            &[("datacenter1", 1)],
        );
        for cl in [
            Consistency::Quorum,
            Consistency::All,
            Consistency::LocalQuorum,
        ] {
            assert!(check_available(cl, simple1, true).is_ok(), "{cl:?}");
        }
        let nts = Replication {
            class: "org.apache.cassandra.locator.NetworkTopologyStrategy".into(),
            options: BTreeMap::from([
                ("datacenter1".into(), "1".into()),
                ("dc2".into(), "2".into()),
            ]),
        };
        let c = replica_counts(&nts, "datacenter1", &[("datacenter1", 1)]);
        assert_eq!((c.total, c.local, c.alive, c.local_alive), (3, 1, 1, 1));
        assert!(check_available(Consistency::LocalQuorum, c, true).is_ok());
        assert!(check_available(Consistency::Quorum, c, true).is_err());
        let elsewhere = replica_counts(&nts, "dc3", &[("dc3", 1)]);
        assert!(check_available(Consistency::One, elsewhere, true).is_err());
    }
}
