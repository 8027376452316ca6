//! The node's local storage: the catalog, the node's storage engine and each table's store
//! (its partitions of that engine).
//!
//! Submodules by role: [`tables`] (each table's engine on disk, the write and read path),
//! [`schema`] (the catalog file, installing schema changes), [`identity`] (this node as
//! the system tables describe it, write timestamps) and [`coordinator`] (the single-node
//! coordinator).
//!
//! The cluster coordinator ([`crate::cluster`]) applies replicas' writes and reads here
//! (`apply`, `read_local`, `truncate_local`) and installs schemas from peers
//! (`adopt_schema`). It also implements [`Coordinator`] on its own, as a node that is its
//! whole cluster, which the unit tests below drive without a network. Owns the data
//! directory:
//!
//! ```text
//! DATA/LOCK                                  held while the node runs (one process per dir)
//! DATA/node.toml                             host id and tokens (crate::durable)
//! DATA/schema.json                           the catalog and its epoch, replaced atomically
//! DATA/peers.json                            peers known (crate::server), for a whole ring at start
//! DATA/PARTITIONS, DATA/wal/                 the node engine's catalog and shared WAL (mosaic_lsm::Engine)
//! DATA/.hints/                               hints for other nodes (crate::hints)
//! DATA/<keyspace>/<table>-<table id hex>/    one mosaic_replica::ReplicaStore per table
//! ```
//!
//! One storage engine serves the node (`mosaic_lsm::Engine`): one WAL, one group commit,
//! one pool of flush and compaction threads, one memtable budget and one block cache,
//! whatever the number of tables. Each table's store is one or more *partitions* of it —
//! one for `uniform`, one per replica source for `multi-lsm`, a tree and a two-layer log
//! for `decoupled` (`params.layout`, opened by `mosaic-replica`) — each with its own
//! memtables, levels and files in the table's directory. Dropping or truncating a table is
//! then "close, drop its partitions from the engine's catalog (so none of its logged writes
//! is ever replayed), delete a directory", with no range tombstones and no compaction work,
//! and each table's levels reflect only its own data. A data directory written by the
//! per-table engines of earlier versions is migrated as each table is opened.
//!
//! Every write and read names the replica role it acts under, decided by the caller from
//! the ring ([`Roles`]): the cluster's store (`crate::cluster::LocalStore`) computes it per
//! token; this module's own single-node coordinator is primary for everything.
//!
//! Engine calls may block (fsync, disk reads, write stalls). Reads and writes, the hot
//! path, run where `[storage] engine_calls` says: `inline` on the network thread itself
//! (except writes that wait for an fsync, and writes while the node engine is stalling),
//! or `offload` on another thread — reads on the read stage's (`crate::read_stage`, which
//! also bounds how many run at once and orders those waiting), writes in
//! `block_in_place`, which hands the worker's other tasks to a fresh thread first. A handoff per request costs a
//! quarter to a third of the node's throughput on 2 cores (BENCHMARKS.md), so inline is
//! the default. Rare, long calls (opening, closing, deleting, truncating tables) always
//! use `spawn_blocking`. A table's engine sits behind an async
//! read-write lock: reads and writes share it, and truncate, drop and shutdown take it
//! exclusively, so they never close an engine under a running operation.
//!
//! Crash safety of schema changes: storage for new tables is created before the catalog is
//! persisted, and storage of dropped tables is deleted after; a directory that is not in
//! the persisted catalog is an orphan of an interrupted change and is removed at the next
//! start. Deletions first rename the directory to `*.deleting` so a crash midway never
//! leaves a half-deleted engine that would replay part of its log.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fs;
use std::io;
use std::net::IpAddr;
use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result};
use mosaic_cluster::local_queue::ReadClass;
use mosaic_cluster::{SchemaSnapshot, WireMutation};
use mosaic_cql::coordinator::{
    check_available, replica_counts, ClusterInfo, Coordinator, Mutation, NodeInfo, ReadCommand,
    ReadResult,
};
use mosaic_cql::frame::{Consistency, ErrorKind, ErrorResponse};
use mosaic_cql::schema::{Catalog, TableId, TableMeta, Uuid};
use mosaic_lsm::{Engine, Fs, Options, RealFs, WriteBatch};
use mosaic_replica::{KeyOrders, Layout, LogSettings, ReplicaStore, RingRanges, Role};
use mosaic_rows::{ClusteringFilter, KeyRange, KeySchema, Permutation, RowMerge};
use mosaic_types::Token;
use parking_lot::{Mutex, RwLock};
use tokio::sync::RwLock as AsyncRwLock;

use crate::cold::ColdTier;

use crate::config::{Config, EngineCalls, WalSync};
use crate::durable::{sync_dir, write_atomic, NodeIdentity};

mod answer;
#[cfg(test)]
mod collection_model_tests;
mod coordinator;
mod counters;
#[cfg(test)]
mod filtering_protection_tests;
mod hetero;
mod identity;
mod index_read;
mod index_stats;
mod index_sweep;
#[cfg(test)]
mod index_tests;
mod indexes;
mod paxos;
mod schema;
mod tables;
#[cfg(test)]
mod tests;

pub(crate) use identity::now_micros;
#[cfg(test)]
pub(crate) use schema::{load_schema_on, schema_file_bytes};
#[cfg(test)]
pub(crate) use tables::engine_error;
use tables::{open_slot, remove_orphans, server_error};
pub use tables::{scan_bounds, AllPrimary, Roles};

/// The catalog file in the data directory.
pub const SCHEMA_FILE: &str = "schema.json";
/// The lock file that keeps a second process off the data directory.
pub const LOCK_FILE: &str = "LOCK";
/// The release we report: a Cassandra 4.0 release, so drivers pick their 4.0 schema
/// parsers and cqlsh (6.x) sends DESCRIBE to the server, which answers it.
pub const RELEASE_VERSION: &str = "4.0.17";
/// The partitioner we report (tokens are Cassandra's Murmur3 tokens).
pub const PARTITIONER: &str = "org.apache.cassandra.dht.Murmur3Partitioner";
/// Suffix of a directory being deleted.
const DELETING_SUFFIX: &str = ".deleting";
/// How many dropped tables' names are remembered for error messages.
const DROPPED_NAMES_MAX: usize = 1024;

/// One table's storage.
struct TableSlot {
    /// `keyspace.table`, for messages.
    name: String,
    /// The bare table name, for "unconfigured table X".
    table: String,
    /// The store's directory.
    dir: PathBuf,
    /// The table's layout.
    layout: Layout,
    /// Its log's shape (decoupled): the node's, with the table's layout options applied.
    log: LogSettings,
    /// Its key columns and replica orders (heterogeneous), as of the schema last applied.
    keys: RwLock<KeyOrders>,
    /// A heterogeneous table's sample and statistics.
    hetero: Option<hetero::HeteroState>,
    /// The store; `None` once closed (dropped, shut down, or a failed truncate).
    db: Arc<AsyncRwLock<Option<ReplicaStore>>>,
    /// Set when the table was dropped.
    dropped: AtomicBool,
    /// The node engine the store's partitions live in (dropped with the table).
    node_engine: Engine,
    /// Its secondary indexes on this node.
    indexes: indexes::IndexList,
    /// Its lightweight transactions' Paxos state on this node.
    paxos: paxos::PaxosSlot,
    /// A counter table's deletion epochs (see [`counters::CounterCache`]).
    counter_epochs: Option<counters::CounterEpochs>,
}

/// The single-node coordinator (see the module doc).
pub struct LocalCoordinator {
    data_dir: PathBuf,
    /// Options of every table's partitions; `engine.engine` is the node engine.
    engine: Options,
    /// The node's storage engine: one WAL, one pool of workers, one memtable budget.
    node_engine: Engine,
    /// The decoupled layout's log shape; its ring ranges are shared by every table and
    /// updated by the cluster store as the ring changes.
    log: LogSettings,
    /// The layout of tables created without one (`[storage] layout`).
    default_layout: Layout,
    catalog: RwLock<Arc<Catalog>>,
    /// The schema's epoch: bumped by every local change, taken from peers' newer schemas
    /// (see `mosaic_cluster::SchemaSnapshot`). Changed only under `ddl`.
    epoch: AtomicU64,
    /// Serializes schema changes (held across their disk work).
    ddl: tokio::sync::Mutex<()>,
    /// Serializes compare-and-sets and counter increments coordinated by this node as its
    /// whole cluster (the cluster coordinator runs Paxos and leads counters instead).
    cas: tokio::sync::Mutex<()>,
    /// The shards of the counters this node led lately.
    counter_cache: counters::CounterCache,
    tables: RwLock<HashMap<TableId, Arc<TableSlot>>>,
    dropped_names: Mutex<HashMap<TableId, String>>,
    clock: AtomicI64,
    closing: AtomicBool,
    identity: NodeIdentity,
    tokens: Vec<Token>,
    rpc_address: IpAddr,
    native_port: u16,
    data_center: String,
    rack: String,
    cluster_name: String,
    /// What bounds one read's answer here: its bytes and time.
    answer: answer::AnswerBounds,
    /// Tombstones a query coordinated here may read (`[cluster]`'s thresholds).
    tombstones: mosaic_cql::coordinator::TombstoneThresholds,
    /// Whether reads run on the network threads (without a read stage).
    inline_reads: bool,
    /// The read stage reads go through (`[scheduling] read_concurrency` > 0).
    read_stage: Option<crate::read_stage::ReadStage>,
    /// Whether writes run on the network threads (never when they wait for an fsync).
    inline_writes: bool,
    /// The data directory's lock, released at [`LocalCoordinator::close`].
    lock: Mutex<Option<Box<dyn std::any::Any + Send + Sync>>>,
    /// Told what a peer's schema changed once this node has installed it
    /// ([`LocalCoordinator::on_peer_schema_change`]).
    peer_schema_listener: std::sync::OnceLock<PeerSchemaListener>,
    /// The roles an index build or sweep reads a table's tokens under.
    roles_source: indexes::SharedRoles,
    /// Index builds running (each holds its table's storage until it returns).
    builds_running: Arc<AtomicU64>,
}

/// Called with the SCHEMA_CHANGE events of a peer's schema this node adopted.
pub type PeerSchemaListener =
    Arc<dyn Fn(Vec<mosaic_cql::frame::SchemaChange>) + Send + Sync + 'static>;

impl LocalCoordinator {
    /// Opens the node's data directory: takes its lock, loads (or creates) the identity and
    /// the catalog, removes orphans of interrupted schema changes and opens every table.
    /// Blocking; call it before serving or from a blocking thread.
    pub fn open(config: &Config) -> Result<LocalCoordinator> {
        let data_dir = config.data_dir.clone();
        fs::create_dir_all(&data_dir)
            .with_context(|| format!("creating data directory {}", data_dir.display()))?;
        let lock = RealFs
            .lock(&data_dir.join(LOCK_FILE))
            .with_context(|| format!("locking data directory {}", data_dir.display()))?;
        if !config.initial_token.is_empty() && !NodeIdentity::exists(&data_dir) {
            NodeIdentity::with_tokens(config.initial_token.clone()).save(&data_dir)?;
        }
        let identity = NodeIdentity::load_or_create(&data_dir, config.num_tokens)?;
        // Refused if the config moved the node to another datacenter or rack.
        let identity = crate::location::remember(identity, config, &data_dir)?;
        let (epoch, catalog) = schema::load_schema_on(&RealFs, &data_dir)?;
        let mut node_options = config.storage.node_engine_options()?;
        // A write stalled longer than a coordinator waits for it is refused (the
        // coordinator answers WriteTimeout and hints the replica), never queued without
        // bound.
        node_options.write_stall_timeout = Some(Duration::from_millis(
            config.cluster.write_request_timeout_ms,
        ));
        let node_engine = Engine::open(&data_dir, node_options)
            .with_context(|| format!("opening the storage engine in {}", data_dir.display()))?;
        log_recovery(&node_engine.recovery_report());
        let cold = Arc::new(ColdTier::open(
            &config.cold_tier,
            &data_dir,
            &identity.host_id.to_string(),
        )?);
        let mut engine = config.storage.engine_options()?;
        engine.engine = Some(node_engine.clone());
        engine.table_store = Some(cold.clone());
        engine.merge_operator = Some(Arc::new(RowMerge));
        // Every key of a partition starts with its token: Bloom filters over tokens let a
        // partition read skip tables that hold none of it (Cassandra's partition-key filter).
        engine.table.filter_prefix_bytes = mosaic_rows::key::TOKEN_LEN;
        let tokens = identity.ring_tokens();
        // Until the cluster store sees the ring, the log's groups follow this node's own
        // tokens.
        let log = config
            .storage
            .log_settings(RingRanges::new(tokens.iter().copied()));

        remove_orphans(&data_dir, &catalog, &node_engine)?;
        let mut tables = HashMap::new();
        let roles_source: indexes::SharedRoles =
            Arc::new(RwLock::new(Arc::new(|_| Box::new(AllPrimary))));
        // system_auth's tables are in every catalog (mosaic_cql::schema::auth_keyspace).
        for t in catalog.stored_tables() {
            let slot = open_slot(&data_dir, &engine, &log, t, &roles_source)
                .map_err(|e| anyhow::anyhow!("opening table {}.{}: {e}", t.keyspace, t.name))?;
            tables.insert(t.id, Arc::new(slot));
        }
        // The engine's options hold the cold tier from here on.
        tables::sweep_cold_tier(&cold, &tables);
        tracing::info!(target: "mosaic::storage", cold_tier = cold.description(), "cold tier");
        Ok(LocalCoordinator {
            data_dir,
            engine,
            node_engine,
            log,
            default_layout: config.storage.layout,
            catalog: RwLock::new(Arc::new(catalog)),
            epoch: AtomicU64::new(epoch),
            ddl: tokio::sync::Mutex::new(()),
            cas: tokio::sync::Mutex::new(()),
            counter_cache: counters::CounterCache::new(config.storage.counter_cache_size_bytes),
            tables: RwLock::new(tables),
            dropped_names: Mutex::new(HashMap::new()),
            clock: AtomicI64::new(0),
            closing: AtomicBool::new(false),
            peer_schema_listener: std::sync::OnceLock::new(),
            roles_source,
            builds_running: Arc::new(AtomicU64::new(0)),
            identity,
            tokens,
            rpc_address: config.rpc_address(),
            native_port: config.native_port,
            data_center: config.data_center.clone(),
            rack: config.rack.clone(),
            cluster_name: config.cluster_name.clone(),
            answer: answer::AnswerBounds {
                rows_max: config.cluster.read_answer_rows_max,
                bytes_max: config.cluster.read_answer_bytes_max,
                timeout: Some(Duration::from_millis(
                    config.cluster.read_request_timeout_ms,
                )),
            },
            tombstones: mosaic_cql::coordinator::TombstoneThresholds {
                warn: config.cluster.tombstone_warn_threshold,
                fail: config.cluster.tombstone_failure_threshold,
            },
            inline_reads: config.storage.engine_calls == EngineCalls::Inline,
            read_stage: (config.scheduling.read_concurrency > 0).then(|| {
                crate::read_stage::ReadStage::new(
                    config.scheduling.read_concurrency,
                    &config.scheduling.queue(),
                    config.storage.engine_calls == EngineCalls::Inline,
                    Some(Duration::from_millis(
                        config.cluster.read_request_timeout_ms,
                    )),
                )
            }),
            inline_writes: config.storage.engine_calls == EngineCalls::Inline
                && config.storage.wal_sync == WalSync::Periodic,
            lock: Mutex::new(Some(lock)),
        })
    }

    /// The read stage, if reads go through one.
    pub fn read_stage(&self) -> Option<&crate::read_stage::ReadStage> {
        self.read_stage.as_ref()
    }

    /// The data directory.
    pub fn data_dir(&self) -> &Path {
        &self.data_dir
    }

    /// The ring's ranges the decoupled layout's logs group by (the cluster store updates
    /// them as the ring changes).
    pub fn ring_ranges(&self) -> &RingRanges {
        &self.log.ring
    }

    /// How many tables are open.
    pub fn table_count(&self) -> usize {
        self.tables.read().len()
    }

    /// Closes every table (waiting at most `timeout` for running operations and schema
    /// changes), syncing their logs, then releases the data directory's lock. Operations
    /// arriving afterwards fail with "shutting down". Returns the tables that could not be
    /// closed cleanly.
    pub async fn close(&self, timeout: Duration) -> Vec<String> {
        self.closing.store(true, Ordering::SeqCst);
        let deadline = tokio::time::Instant::now() + timeout;
        let mut failures = Vec::new();
        let ddl = tokio::time::timeout_at(deadline, self.ddl.lock()).await;
        if ddl.is_err() {
            failures.push("(a schema change was still running)".to_owned());
        }
        let slots: Vec<Arc<TableSlot>> = self.tables.read().values().cloned().collect();
        for slot in slots {
            let guard = match tokio::time::timeout_at(deadline, slot.db.clone().write_owned()).await
            {
                Ok(g) => g,
                Err(_) => {
                    failures.push(format!("{} (still busy)", slot.name));
                    continue;
                }
            };
            let name = slot.name.clone();
            let slot = slot.clone();
            let closed = tokio::task::spawn_blocking(move || {
                let mut guard = guard;
                indexes::close_indexes(&slot.indexes);
                slot.paxos.close(&slot.name);
                guard.take().map_or(Ok(()), ReplicaStore::close)
            })
            .await;
            match closed {
                Ok(Ok(())) => {}
                Ok(Err(e)) => failures.push(format!("{name} ({e})")),
                Err(e) => failures.push(format!("{name} ({e})")),
            }
        }
        // Builds stop at their next step once their table is closed; wait for them to let go
        // of the storage, so a reopen finds the engine free.
        while self.builds_running.load(Ordering::SeqCst) > 0
            && tokio::time::Instant::now() < deadline
        {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        if let Err(e) = self.node_engine.sync_wal() {
            failures.push(format!("(syncing the write-ahead log: {e})"));
        }
        if failures.is_empty() {
            self.lock.lock().take();
        }
        failures
    }

    /// Options for another store on the node engine (the hint store's).
    pub fn engine_options(&self) -> Options {
        self.engine.clone()
    }

    /// The node's storage engine (its budgets and shared WAL, for `/stats`).
    pub fn node_engine(&self) -> &Engine {
        &self.node_engine
    }

    /// The storage of `table`, or the error for a table that is gone.
    fn slot(&self, table: TableId) -> Result<Arc<TableSlot>, ErrorResponse> {
        if let Some(slot) = self.tables.read().get(&table) {
            return Ok(slot.clone());
        }
        Err(self.unconfigured(table))
    }

    /// Runs `f` on table `table`'s store on a blocking thread (ELECT's steps read and
    /// write whole tables and parity shards).
    pub async fn with_store<T: Send + 'static>(
        &self,
        table: TableId,
        f: impl FnOnce(&ReplicaStore) -> mosaic_lsm::Result<T> + Send + 'static,
    ) -> Result<T, ErrorResponse> {
        let slot = self.slot(table)?;
        let guard = slot.db.clone().read_owned().await;
        let name = slot.name.clone();
        let result = tokio::task::spawn_blocking(move || match guard.as_ref() {
            Some(store) => f(store).map_err(|e| tables::engine_error(&name, e)),
            None => Err(ErrorResponse::new(
                ErrorKind::Invalid,
                format!("unconfigured table {name}"),
            )),
        })
        .await;
        result.unwrap_or_else(|e| {
            Err(ErrorResponse::new(
                ErrorKind::Server,
                format!("storage task failed: {e}"),
            ))
        })
    }

    /// Whether `table`'s layout stores each replica role apart (every layout but
    /// `uniform`); an unknown table does not.
    pub fn stores_roles_apart(&self, table: TableId) -> bool {
        self.tables
            .read()
            .get(&table)
            .is_some_and(|slot| slot.layout != Layout::Uniform)
    }

    /// Whether `table` is stored `erasure-tiered`.
    pub fn is_erasure_tiered(&self, table: TableId) -> bool {
        self.tables
            .read()
            .get(&table)
            .is_some_and(|slot| slot.layout == Layout::ErasureTiered)
    }

    /// Whether this node stores keys of `range` of `table` as a secondary whose versions
    /// a coding group covers (see `ReplicaStore::ec_covers`; other layouts cover nothing).
    /// A table being truncated or dropped at this moment covers nothing.
    ///
    /// Every read of an erasure-tiered table asks this (at the coordinator and at the
    /// replica), so it is kept cheap: one slot lookup decides the layout, `roles` (which
    /// reads the ring and the schema) is only built for an erasure-tiered table, and a
    /// partition read takes its one role without splitting the range into pieces.
    pub fn ec_covers(
        &self,
        table: TableId,
        range: &KeyRange,
        roles: impl FnOnce() -> Box<dyn Roles>,
    ) -> bool {
        let Some(slot) = self.tables.read().get(&table).cloned() else {
            return false;
        };
        if slot.layout != Layout::ErasureTiered {
            return false;
        }
        let Ok(guard) = slot.db.try_read() else {
            return false;
        };
        let Some(store) = guard.as_ref() else {
            return false;
        };
        let roles = roles();
        if let Some(role) = roles.partition_role(range) {
            let (start, end) = scan_bounds(range);
            return store.ec_covers(role, start, end);
        }
        roles.pieces(range.clone()).iter().any(|(piece, role)| {
            let (start, end) = scan_bounds(piece);
            store.ec_covers(*role, start, end)
        })
    }

    /// The `erasure-tiered` tables with their codes.
    pub fn erasure_tables(&self) -> Vec<(TableId, mosaic_types::ErasureCode)> {
        self.catalog()
            .tables()
            .filter(|t| t.params.layout == Layout::ErasureTiered)
            .map(|t| {
                (
                    t.id,
                    mosaic_types::ErasureCode::from_options(&t.params.layout_options),
                )
            })
            .collect()
    }

    fn unconfigured(&self, table: TableId) -> ErrorResponse {
        let name = self
            .catalog()
            .table_by_id(table)
            .map(|t| t.name.clone())
            .or_else(|| self.dropped_names.lock().get(&table).cloned())
            .unwrap_or_else(|| format!("with id {table}"));
        ErrorResponse::new(ErrorKind::Invalid, format!("unconfigured table {name}"))
    }

    /// The error for an operation that found `slot`'s engine closed.
    fn closed_error(&self, slot: &TableSlot) -> ErrorResponse {
        if self.closing.load(Ordering::SeqCst) {
            server_error("The node is shutting down")
        } else if slot.dropped.load(Ordering::SeqCst) {
            ErrorResponse::new(
                ErrorKind::Invalid,
                format!("unconfigured table {}", slot.table),
            )
        } else {
            server_error(format!(
                "Table {} is unavailable after a failed truncate; restart the node",
                slot.name
            ))
        }
    }

    /// Unavailable when this node alone cannot satisfy `consistency` for the table's
    /// keyspace (e.g. QUORUM with RF 3), as Cassandra answers on a one-node cluster.
    fn check_available(
        &self,
        table: TableId,
        consistency: Consistency,
        is_write: bool,
    ) -> Result<(), ErrorResponse> {
        let catalog = self.catalog();
        let Some(keyspace) = catalog
            .table_by_id(table)
            .and_then(|t| catalog.keyspace(&t.keyspace))
        else {
            return Err(self.unconfigured(table));
        };
        let counts = replica_counts(
            &keyspace.replication,
            &self.data_center,
            &[(self.data_center.as_str(), 1)],
        );
        check_available(consistency, counts, is_write)
    }

    fn remember_dropped(&self, id: TableId, name: String) {
        let mut names = self.dropped_names.lock();
        if names.len() >= DROPPED_NAMES_MAX {
            names.clear();
        }
        names.insert(id, name);
    }
}

impl LocalCoordinator {
    /// Bytes in SSTables over every table (tables busy with an exclusive operation are
    /// skipped: this is a gossiped estimate, like Cassandra's load).
    pub fn load_bytes(&self) -> u64 {
        let slots: Vec<Arc<TableSlot>> = self.tables.read().values().cloned().collect();
        slots
            .iter()
            .filter_map(|slot| {
                let guard = slot.db.try_read().ok()?;
                Some(guard.as_ref()?.load_bytes())
            })
            .sum()
    }

    /// Runs `op` on every open table's store (on blocking threads, one table at a time),
    /// returning `(keyspace.table, result)` per table.
    pub async fn each_table<T: Send + 'static>(
        &self,
        op: impl Fn(&ReplicaStore) -> mosaic_lsm::Result<T> + Send + Sync + Clone + 'static,
    ) -> Vec<(String, Result<T, String>)> {
        let mut slots: Vec<Arc<TableSlot>> = self.tables.read().values().cloned().collect();
        slots.sort_by(|a, b| a.name.cmp(&b.name));
        let mut out = Vec::with_capacity(slots.len());
        for slot in slots {
            let guard = slot.db.clone().read_owned().await;
            let op = op.clone();
            let result = tokio::task::spawn_blocking(move || match guard.as_ref() {
                Some(db) => op(db).map_err(|e| e.to_string()),
                None => Err("table is closed".to_owned()),
            })
            .await
            .unwrap_or_else(|e| Err(e.to_string()));
            out.push((slot.name.clone(), result));
        }
        out
    }

    /// The client-facing error for an unknown table id.
    pub fn unknown_table(&self, table: TableId) -> ErrorResponse {
        self.unconfigured(table)
    }
}

/// Logs what replaying the commit log found at start: what it replayed, each damaged part
/// it dropped (a torn last write after a crash, or damage the operator chose to skip) and
/// where skipped files were kept.
fn log_recovery(report: &mosaic_lsm::RecoveryReport) {
    tracing::info!(
        files = report.wal_files_replayed,
        records = report.records_replayed,
        "commit log replayed"
    );
    for d in &report.dropped {
        tracing::warn!(
            file = %d.file.display(),
            offset = d.offset,
            bytes = d.bytes,
            damage = ?d.damage,
            reason = %d.reason,
            "commit log: dropped what follows a damaged record"
        );
    }
    for kept in &report.kept {
        tracing::error!(
            file = %kept.display(),
            "commit log: damaged file skipped by wal_ignore_replay_errors, kept here; writes after the damage are lost"
        );
    }
}
