//! The cluster [`Coordinator`]: statements' operations placed on the ring and replicated.
//!
//! Owns the glue between the CQL layer and `mosaic-cluster`'s [`Node`]: it turns the
//! statement layer's mutations and reads into the node's replicated writes and reads at
//! the request's consistency level, maps the cluster's failures to Cassandra's error
//! codes, propagates schema changes to the other nodes, and describes peers to the
//! system tables. Local storage stays in [`LocalCoordinator`], which this module also
//! exposes to the node as its [`Store`].
//!
//! The store decides each replica write's and read's role from the ring (DEPART's replica
//! differentiation): this node's position in a token's replica list, 0 being the primary
//! and the others redundant copies of the primary's data (the *source*, by host id). The
//! ring and the host ids it needs are cached and rebuilt when the node's ring changes,
//! which also updates the ring ranges the decoupled layout's logs group by.

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

use futures::future::BoxFuture;
use futures::FutureExt;
use mosaic_cluster::env::{
    Entries, Hint, KeyList, ShardBytes, ShardRange, ShardRef, Shards, StoredPage, StripeSpan,
    Unanswered, Unlisted,
};
use mosaic_cluster::local_queue::ReadClass;
use mosaic_cluster::message::{EndpointState, Tag, WireCounter};
use mosaic_cluster::node::WeakNode;
use mosaic_cluster::paxos::PaxosState;
use mosaic_cluster::{
    ClusterError, Endpoint, Failure, Node, ReplicationStrategy, SchemaSnapshot, Store, TableKey,
    WireMutation, EC_SHARD_BYTES_MAX,
};
use mosaic_cql::coordinator::{
    ClusterInfo, Coordinator, Mutation, NodeInfo, ReadCommand, ReadResult,
};
use mosaic_cql::frame::{Consistency, ErrorKind, ErrorResponse, WriteType};
use mosaic_cql::schema::{Catalog, TableId, Uuid};
use mosaic_erasure::{EcMeta, Fill, Group, GroupId, LostRead, Replaced};
use mosaic_replica::elect::Elect;
use mosaic_replica::{ReplicaStore, SourceId};
use mosaic_rows::KeyRange;
use mosaic_types::{ErasureCode, HostId, Token};
use parking_lot::RwLock;

use crate::hints::HintStore;
use crate::local::{scan_bounds, AllPrimary, LocalCoordinator, Roles};

pub mod cleanup;
mod elect;
use elect::FILLS_PER_PICK;
mod roles;
use roles::{RingRoles, RingView};

/// The node's local storage as the cluster sees it.
pub struct LocalStore {
    local: Arc<LocalCoordinator>,
    hints: Arc<HintStore>,
    /// The node, set once it exists (it is built after its store). Weak: the node holds
    /// this store.
    node: OnceLock<WeakNode>,
    /// The ring as last seen, with the host ids of its nodes.
    view: RwLock<Option<Arc<RingView>>>,
}

/// The cluster's replication strategy for a keyspace's `replication` (validated when the
/// keyspace was created: a factor that does not parse places nothing in its datacenter).
fn strategy_of(replication: &mosaic_cql::schema::Replication) -> ReplicationStrategy {
    if replication.class.ends_with("NetworkTopologyStrategy") {
        ReplicationStrategy::network_topology(
            replication
                .options
                .iter()
                .filter_map(|(dc, rf)| Some((dc.clone(), rf.parse::<usize>().ok()?))),
        )
    } else {
        ReplicationStrategy::Simple(replication.factor() as usize)
    }
}

impl LocalStore {
    /// Writes one table's mutations under this node's roles of now — or, with `ingest`,
    /// ingests them as tables where the table's structures can take them.
    async fn store_now(
        &self,
        table: TableKey,
        mutations: Vec<WireMutation>,
        ingest: bool,
    ) -> Result<(), Failure> {
        let roles = self.roles(table);
        self.local
            .store(BTreeMap::from([(table, mutations)]), &*roles, ingest)
            .await
            .map_err(failure)
    }

    /// The store over `local` and `hints`; every role is primary until
    /// [`LocalStore::set_node`].
    pub fn new(local: Arc<LocalCoordinator>, hints: Arc<HintStore>) -> LocalStore {
        LocalStore {
            local,
            hints,
            node: OnceLock::new(),
            view: RwLock::new(None),
        }
    }

    /// The node's local storage.
    pub fn local(&self) -> &Arc<LocalCoordinator> {
        &self.local
    }

    /// Gives the store the node whose ring decides roles (once; later calls are ignored),
    /// and takes its ring at once.
    pub fn set_node(&self, node: WeakNode) {
        let _ = self.node.set(node);
        self.ring_view();
    }

    /// The current ring view, rebuilt if the node's ring changed since the last call
    /// (updating the decoupled logs' ring ranges); `None` before the node is set.
    fn ring_view(&self) -> Option<Arc<RingView>> {
        let node = self.node.get()?.upgrade()?;
        let ring = node.ring();
        if let Some(v) = self.view.read().as_ref() {
            if Arc::ptr_eq(&v.ring, &ring) {
                return Some(v.clone());
            }
        }
        let hosts = roles::host_ids(&node);
        self.local.ring_ranges().set(ring.tokens());
        let view = Arc::new(RingView {
            ring,
            me: node.endpoint(),
            hosts,
        });
        *self.view.write() = Some(view.clone());
        Some(view)
    }

    /// How `table`'s keys get their roles: from the ring, or all primary while the ring
    /// or the table's keyspace is unknown.
    pub(crate) fn roles(&self, table: TableKey) -> Box<dyn Roles> {
        match (self.ring_view(), self.placement(table)) {
            (Some(view), Some(strategy)) => Box::new(RingRoles { view, strategy }),
            _ => Box::new(AllPrimary),
        }
    }
}

/// The tag carrying a read's clustering filter (`mosaic_rows::ClusteringFilter::encode`):
/// every replica leaves out the rows it rejects, and heterogeneous tables are routed by
/// it.
pub const FILTER_TAG: &str = "clustering_filter";

/// The tag carrying a read through a secondary index
/// (`mosaic_cql::index::IndexQuery::encode`).
pub const INDEX_TAG: &str = "secondary_index";

/// The index query among a read's tags, if one decodes (one that does not is not used:
/// the replica reads the range whole).
fn index_of(tags: &[Tag]) -> Option<mosaic_cql::index::IndexQuery> {
    let tag = tags.iter().find(|t| t.name == INDEX_TAG)?;
    mosaic_cql::index::IndexQuery::decode(&tag.value)
}

/// The clustering filter among a read's tags, if one decodes.
fn filter_of(tags: &[Tag]) -> Option<mosaic_rows::ClusteringFilter> {
    let tag = tags.iter().find(|t| t.name == FILTER_TAG)?;
    match mosaic_rows::ClusteringFilter::decode(&tag.value) {
        Ok(f) => Some(f),
        Err(e) => {
            tracing::warn!(target: "mosaic::read", error = %e, "ignoring a clustering filter that does not decode");
            None
        }
    }
}

/// Runs a hint-store call (`what`, for the log) on a blocking thread (hints are rare; they
/// may wait for fsync). Failures are logged here: storing and replaying hints runs in
/// the background, where nobody else sees them.
async fn on_hints<T: Send + 'static>(
    hints: &Arc<HintStore>,
    what: &'static str,
    target: Endpoint,
    f: impl FnOnce(&HintStore) -> Result<T, Failure> + Send + 'static,
) -> Result<T, Failure> {
    let hints = hints.clone();
    let result = tokio::task::spawn_blocking(move || f(&hints))
        .await
        .unwrap_or_else(|e| Err(Failure::Storage(format!("hint store task failed: {e}"))));
    if let Err(e) = &result {
        tracing::warn!(target: "mosaic::hints", operation = what, %target, error = ?e, "hint store failed");
    }
    result
}

/// A local storage error as a replica's failure.
fn failure(e: ErrorResponse) -> Failure {
    if matches!(
        e.kind,
        ErrorKind::WriteTimeout { .. } | ErrorKind::ReadTimeout { .. }
    ) {
        Failure::TimedOut(e.message)
    } else if e.message.starts_with("unconfigured table") {
        Failure::UnknownTable
    } else {
        Failure::Storage(e.message)
    }
}

impl Store for LocalStore {
    fn apply(
        &self,
        table: TableKey,
        mutations: Vec<WireMutation>,
    ) -> BoxFuture<'_, Result<(), Failure>> {
        self.store_now(table, mutations, false).boxed()
    }

    fn ingest(
        &self,
        table: TableKey,
        mutations: Vec<WireMutation>,
    ) -> BoxFuture<'_, Result<(), Failure>> {
        self.store_now(table, mutations, true).boxed()
    }

    fn read(
        &self,
        table: TableKey,
        range: KeyRange,
        limit: usize,
        // What the read stage's queue orders by (`mosaic_cluster::local_queue`).
        tags: &[Tag],
    ) -> BoxFuture<'_, Result<Entries, Failure>> {
        let class = ReadClass::from_tags(tags);
        // A filter that does not decode is not applied: the coordinator checks its own
        // predicates on what comes back.
        let filter = filter_of(tags);
        let index = index_of(tags);
        async move {
            let roles = self.roles(table);
            self.local
                .read_local(
                    ReadCommand {
                        table,
                        range,
                        limit,
                        filter,
                        index,
                    },
                    &*roles,
                    class,
                )
                .await
                .map(|r| (r.entries, r.exhausted))
                .map_err(failure)
        }
        .boxed()
    }

    fn read_stored(
        &self,
        table: TableKey,
        range: KeyRange,
        after: Option<Vec<u8>>,
        limit: usize,
    ) -> BoxFuture<'_, Result<StoredPage, Failure>> {
        async move {
            let roles = self.roles(table);
            self.local
                .read_stored(table, range, after, limit, &*roles)
                .await
                .map_err(failure)
        }
        .boxed()
    }

    fn apply_future(
        &self,
        table: TableKey,
        mutations: Vec<WireMutation>,
    ) -> BoxFuture<'_, Result<(), Failure>> {
        async move {
            let (Some(view), Some(strategy)) = (self.ring_view(), self.placement(table)) else {
                return Ok(());
            };
            let roles = roles::FutureRoles(RingRoles { view, strategy });
            let mutations: Vec<WireMutation> = mutations
                .into_iter()
                .filter(|m| {
                    mosaic_rows::decode_token(&m.key)
                        .is_ok_and(|t| roles.0.future_role(t).is_some())
                })
                .collect();
            if mutations.is_empty() {
                return Ok(());
            }
            self.local
                .apply(BTreeMap::from([(table, mutations)]), &roles)
                .await
                .map_err(failure)
        }
        .boxed()
    }

    fn role_sensitive(&self, table: TableKey) -> bool {
        self.local.stores_roles_apart(table)
    }

    fn truncate(&self, table: TableKey) -> BoxFuture<'_, Result<(), Failure>> {
        async move { self.local.truncate_local(table).await.map_err(failure) }.boxed()
    }

    fn counter_shards(
        &self,
        table: TableKey,
        increments: Vec<WireCounter>,
    ) -> BoxFuture<'_, Result<Vec<WireMutation>, Failure>> {
        async move {
            let roles = self.roles(table);
            self.local
                .counter_shards(table, increments, &*roles)
                .await
                .map_err(failure)
        }
        .boxed()
    }

    fn paxos_state(
        &self,
        table: TableKey,
        partition: Vec<u8>,
    ) -> BoxFuture<'_, Result<Option<PaxosState>, Failure>> {
        async move {
            self.local
                .paxos_state(table, partition)
                .await
                .map_err(failure)
        }
        .boxed()
    }

    fn paxos_summaries(
        &self,
        table: TableKey,
        range: KeyRange,
        after: Option<Vec<u8>>,
        limit: usize,
    ) -> BoxFuture<'_, Result<mosaic_cluster::env::PaxosSummaryPage, Failure>> {
        async move {
            self.local
                .paxos_summaries(table, range, after, limit)
                .await
                .map_err(failure)
        }
        .boxed()
    }

    fn save_paxos_state(
        &self,
        table: TableKey,
        partition: Vec<u8>,
        state: PaxosState,
    ) -> BoxFuture<'_, Result<(), Failure>> {
        async move {
            self.local
                .save_paxos_state(table, partition, state)
                .await
                .map_err(failure)
        }
        .boxed()
    }

    fn store_hint(
        &self,
        target: Endpoint,
        table: TableKey,
        mutations: Vec<WireMutation>,
    ) -> BoxFuture<'_, Result<(), Failure>> {
        on_hints(&self.hints, "store", target, move |h| {
            h.store(target, table, mutations)
        })
        .boxed()
    }

    fn hints(&self, target: Endpoint, limit: usize) -> BoxFuture<'_, Result<Vec<Hint>, Failure>> {
        on_hints(&self.hints, "replay", target, move |h| {
            h.oldest(target, limit)
        })
        .boxed()
    }

    fn delete_hint(&self, target: Endpoint, id: u64) -> BoxFuture<'_, Result<(), Failure>> {
        on_hints(&self.hints, "delete replayed", target, move |h| {
            h.delete(target, id)
        })
        .boxed()
    }

    fn hint_targets(&self) -> Vec<Endpoint> {
        self.hints.targets()
    }

    fn drop_hints(&self, target: Endpoint) -> BoxFuture<'_, Result<u64, Failure>> {
        on_hints(&self.hints, "drop", target, move |h| h.drop_all(target)).boxed()
    }

    fn speculative_retry(&self, table: TableKey) -> mosaic_types::SpeculativeRetry {
        let catalog = self.local.current_catalog();
        catalog
            .table_by_id(table)
            .and_then(|t| t.params.extra.get("speculative_retry"))
            .and_then(|text| mosaic_types::SpeculativeRetry::parse(text).ok())
            .unwrap_or_default()
    }

    fn replication_factor(&self, table: TableKey) -> Option<usize> {
        let catalog = self.local.current_catalog();
        let t = catalog.table_by_id(table)?;
        let ks = catalog.keyspace(&t.keyspace)?;
        Some(ks.replication.factor() as usize)
    }

    fn placement(&self, table: TableKey) -> Option<ReplicationStrategy> {
        let catalog = self.local.current_catalog();
        let t = catalog.table_by_id(table)?;
        let ks = catalog.keyspace(&t.keyspace)?;
        Some(strategy_of(&ks.replication))
    }

    fn schema(&self) -> SchemaSnapshot {
        self.local.schema_snapshot()
    }

    fn schema_version(&self) -> [u8; 16] {
        self.local.schema_version().0
    }

    fn adopt_schema(&self, snapshot: SchemaSnapshot) -> BoxFuture<'_, Result<bool, String>> {
        self.local.adopt_schema(snapshot).boxed()
    }

    fn load_bytes(&self) -> u64 {
        self.local.load_bytes()
    }

    fn replica_costs(
        &self,
        table: TableKey,
        tags: &[Tag],
        limit: usize,
        rf: usize,
    ) -> Option<Vec<f64>> {
        self.local
            .replica_costs(table, filter_of(tags).as_ref(), limit, rf)
    }

    fn read_queue_length(&self) -> Option<u64> {
        self.local.read_stage().map(|s| s.queue_length())
    }

    fn ec_tables(&self) -> Vec<(TableKey, ErasureCode)> {
        self.local.erasure_tables()
    }

    fn ec_pick(&self, table: TableKey, rf: usize) -> BoxFuture<'_, Result<Shards, Failure>> {
        let code = self.ec_code(table);
        self.on_elect(table, move |s, _| {
            s.ec_pick(code?, rf as u32, EC_SHARD_BYTES_MAX, FILLS_PER_PICK)
        })
    }

    fn ec_next_seq(&self, table: TableKey) -> BoxFuture<'_, Result<u64, Failure>> {
        self.on_elect(table, |_, e| e?.next_seq())
    }

    fn ec_prepare_fill(
        &self,
        table: TableKey,
        nodes: Group,
        slot: u8,
        content: Vec<u8>,
    ) -> BoxFuture<'_, Result<Fill, Failure>> {
        self.on_elect(table, move |_, e| e?.prepare_fill(&nodes, slot, content))
    }

    fn ec_note_sent(
        &self,
        table: TableKey,
        id: u64,
        slot: u8,
        leader: HostId,
    ) -> BoxFuture<'_, Result<(), Failure>> {
        self.on_elect(table, move |_, e| e?.note_sent(id, slot, leader))
    }

    fn ec_unanswered(&self, table: TableKey) -> BoxFuture<'_, Result<Unanswered, Failure>> {
        self.on_elect(table, |_, e| e?.unanswered())
    }

    fn ec_offload(&self, table: TableKey, rf: usize) -> BoxFuture<'_, Result<u64, Failure>> {
        let code = self.ec_code(table);
        self.on_elect(table, move |s, _| s.ec_offload(code?, rf as u32))
    }

    fn ec_replaced(&self, table: TableKey) -> BoxFuture<'_, Result<Vec<Replaced>, Failure>> {
        self.on_elect(table, |s, _| s.ec_replaced())
    }

    fn ec_prepare_clear(
        &self,
        table: TableKey,
        group: GroupId,
        slot: u8,
        old: Vec<u8>,
    ) -> BoxFuture<'_, Result<Fill, Failure>> {
        self.on_elect(table, move |_, e| e?.prepare_clear(&group, slot, old))
    }

    fn ec_resume(
        &self,
        table: TableKey,
        group: GroupId,
    ) -> BoxFuture<'_, Result<Option<Fill>, Failure>> {
        self.on_elect(table, move |_, e| e?.resume(&group))
    }

    fn ec_cleared(&self, table: TableKey, id: u64) -> BoxFuture<'_, Result<(), Failure>> {
        self.on_elect(table, move |_, e| e?.cleared(id))
    }

    fn ec_apply_parity(
        &self,
        table: TableKey,
        group: GroupId,
        position: u8,
        (from, to): (u64, u64),
        delta: Vec<u8>,
    ) -> BoxFuture<'_, Result<[u8; 32], Failure>> {
        self.on_elect(table, move |_, e| {
            e?.apply_parity(&group, position, from, to, &delta)
        })
    }

    fn ec_commit_fill(
        &self,
        table: TableKey,
        group: GroupId,
        parity_hashes: Vec<(u8, [u8; 32])>,
    ) -> BoxFuture<'_, Result<EcMeta, Failure>> {
        self.on_elect(table, move |_, e| e?.commit_fill(&group, &parity_hashes))
    }

    fn ec_mark_coded(
        &self,
        table: TableKey,
        id: u64,
        slot: u8,
        meta: EcMeta,
    ) -> BoxFuture<'_, Result<(), Failure>> {
        self.on_elect(table, move |_, e| e?.mark_coded(id, slot, &meta))
    }

    fn ec_unlisted(&self, table: TableKey) -> BoxFuture<'_, Result<Vec<Unlisted>, Failure>> {
        self.on_elect(table, |s, _| {
            Ok(s.ec_unlisted()?
                .into_iter()
                .map(|(id, shard, keys)| (id, (shard.meta, shard.slot), keys))
                .collect())
        })
    }

    fn ec_listing(
        &self,
        table: TableKey,
        id: u64,
        smallest: Vec<u8>,
        largest: Vec<u8>,
    ) -> BoxFuture<'_, Result<(), Failure>> {
        self.on_elect(table, move |s, _| s.ec_listing(id, smallest, largest))
    }

    fn ec_listed(&self, table: TableKey, id: u64) -> BoxFuture<'_, Result<(), Failure>> {
        self.on_elect(table, move |s, _| s.ec_listed(id))
    }

    fn ec_cover(
        &self,
        table: TableKey,
        source: HostId,
        id: u64,
        (meta, slot): ShardRef,
        keys: KeyList,
    ) -> BoxFuture<'_, Result<(), Failure>> {
        self.on_elect(table, move |s, _| {
            let shard = mosaic_replica::covered::Shard { meta, slot };
            s.ec_cover(SourceId(source.0), id, shard, &keys).map(|_| ())
        })
    }

    fn ec_dissolved(
        &self,
        table: TableKey,
        members: Vec<HostId>,
    ) -> BoxFuture<'_, Result<Vec<mosaic_cluster::env::GivenUp>, Failure>> {
        self.on_elect(table, move |s, _| {
            let members: std::collections::HashSet<[u8; 16]> =
                members.iter().map(|h| h.0).collect();
            Ok(s.ec_dissolved(|node| members.contains(node))
                .into_iter()
                .map(|d| {
                    // The last key included: the range ends just after it.
                    let mut end = d.last;
                    end.push(0);
                    let range = KeyRange {
                        start: d.first,
                        end: Some(end),
                    };
                    (HostId(d.source.0), d.id, range)
                })
                .collect())
        })
    }

    fn ec_dissolved_groups(
        &self,
        table: TableKey,
        members: Vec<HostId>,
    ) -> BoxFuture<'_, Result<Vec<GroupId>, Failure>> {
        self.on_elect(table, move |s, _| {
            s.ec_dissolved_groups(|h| members.contains(h))
        })
    }

    fn ec_groups_named(
        &self,
        table: TableKey,
        groups: Vec<GroupId>,
    ) -> BoxFuture<'_, Result<Vec<GroupId>, Failure>> {
        self.on_elect(table, move |s, _| Ok(s.ec_groups_named(&groups)))
    }

    fn ec_release_group(
        &self,
        table: TableKey,
        group: GroupId,
        me: HostId,
    ) -> BoxFuture<'_, Result<usize, Failure>> {
        self.on_elect(table, move |s, _| s.ec_release_group(&group, me))
    }

    fn ec_forget_pending(&self, table: TableKey, id: u64) -> BoxFuture<'_, Result<(), Failure>> {
        self.on_elect(table, move |s, _| s.ec_forget_pending(id))
    }

    fn ec_uncover(
        &self,
        table: TableKey,
        source: HostId,
        id: u64,
        forget: bool,
    ) -> BoxFuture<'_, Result<(), Failure>> {
        self.on_elect(table, move |s, _| {
            s.ec_uncover(SourceId(source.0), id, forget)
        })
    }

    fn ec_covering(
        &self,
        table: TableKey,
        range: KeyRange,
    ) -> BoxFuture<'_, Result<Vec<ShardRef>, Failure>> {
        let pieces = self.roles(table).pieces(range);
        self.on_elect_read(table, move |s| {
            let mut out: Vec<ShardRef> = Vec::new();
            for (piece, role) in &pieces {
                let (start, end) = scan_bounds(piece);
                for c in s.ec_covering(*role, start, end) {
                    let found = (c.shard.meta, c.shard.slot);
                    if !out.contains(&found) {
                        out.push(found);
                    }
                }
            }
            Ok(out)
        })
    }

    fn ec_shard(
        &self,
        table: TableKey,
        group: GroupId,
        (position, epoch): (u8, Option<u64>),
    ) -> BoxFuture<'_, Result<Option<ShardBytes>, Failure>> {
        self.on_elect(table, move |s, _| s.ec_shard(&group, position, epoch))
    }

    fn ec_meta(
        &self,
        table: TableKey,
        group: GroupId,
    ) -> BoxFuture<'_, Result<Option<EcMeta>, Failure>> {
        self.on_elect(table, move |s, _| s.ec_meta(&group))
    }

    fn ec_record_meta(&self, table: TableKey, meta: EcMeta) -> BoxFuture<'_, Result<(), Failure>> {
        self.on_elect(table, move |s, _| s.ec_record_meta(&meta))
    }

    fn ec_groups_of(
        &self,
        table: TableKey,
        host: HostId,
    ) -> BoxFuture<'_, Result<Vec<EcMeta>, Failure>> {
        self.on_elect(table, move |s, _| s.ec_groups_of(host))
    }

    fn ec_restore(
        &self,
        table: TableKey,
        meta: EcMeta,
        position: u8,
        shards: Vec<(u8, Vec<u8>)>,
    ) -> BoxFuture<'_, Result<(), Failure>> {
        self.on_elect(table, move |s, _| s.ec_restore(&meta, position, &shards))
    }

    fn ec_read_lost(
        &self,
        table: TableKey,
        (meta, slot): ShardRef,
        given: Option<StripeSpan>,
        range: KeyRange,
        limit: usize,
    ) -> BoxFuture<'_, Result<LostRead, Failure>> {
        let decodes = given.is_some();
        let read = move |s: &ReplicaStore| {
            let given = given
                .as_ref()
                .map(|(span, shards)| (span.clone(), &shards[..]));
            s.ec_read_lost(&meta, slot, given, scan_bounds(&range), limit)
        };
        // Decoding fetched stripes is work for a blocking thread; reading decoded ones
        // is a read like any other.
        if decodes {
            self.on_elect(table, move |s, _| read(s))
        } else {
            self.on_elect_read(table, read)
        }
    }

    fn ec_lost_missing(
        &self,
        table: TableKey,
        (meta, slot): ShardRef,
        (from, max): (u64, u64),
    ) -> BoxFuture<'_, Result<Option<std::ops::Range<u64>>, Failure>> {
        self.on_elect_read(table, move |s| s.ec_lost_missing(&meta, slot, from, max))
    }

    fn ec_shard_range(
        &self,
        table: TableKey,
        group: GroupId,
        (position, epoch): (u8, Option<u64>),
        (offset, len): (u64, u32),
    ) -> BoxFuture<'_, Result<Option<ShardRange>, Failure>> {
        self.on_elect(table, move |s, _| {
            s.ec_shard_range(&group, (position, epoch), (offset, len))
        })
    }

    fn ec_purge(&self, table: TableKey) -> BoxFuture<'_, Result<usize, Failure>> {
        self.on_elect(table, |s, _| s.ec_purge())
    }

    fn ec_covers(&self, table: TableKey, range: &KeyRange) -> bool {
        self.local.ec_covers(table, range, || self.roles(table))
    }

    fn reads_prefer_primary(&self, table: TableKey) -> bool {
        self.local.is_erasure_tiered(table)
    }
}

mod coordinator;

pub use coordinator::ClusterCoordinator;

#[cfg(test)]
mod tests {
    use super::*;

    /// A write the storage engine refused after stalling past the write timeout reaches
    /// the coordinator as a replica that timed out (a WriteTimeout and a hint, never a
    /// WriteFailure); other storage errors stay failures.
    #[test]
    fn a_stalled_write_is_a_replica_timeout_not_a_failure() {
        let stalled = mosaic_lsm::Error::WriteStalled {
            waited: std::time::Duration::from_millis(2000),
            reason: "the node is out of memtable space",
        };
        let response = crate::local::engine_error("ks.t", stalled);
        assert!(matches!(response.kind, ErrorKind::WriteTimeout { .. }));
        match failure(response) {
            Failure::TimedOut(why) => assert!(why.contains("memtable space"), "{why}"),
            other => panic!("{other:?}"),
        }
        let closed = crate::local::engine_error("ks.t", mosaic_lsm::Error::Closed);
        assert!(matches!(failure(closed), Failure::Storage(_)));
    }
}
