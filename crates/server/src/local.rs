//! The node's local storage: the catalog and one engine per table.
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
//! DATA/.hints/                               hints for other nodes (crate::hints)
//! DATA/<keyspace>/<table>-<table id hex>/    one mosaic_replica::ReplicaStore per table
//! ```
//!
//! Why one store per table: dropping or truncating a table is then "close, delete a
//! directory", with no range tombstones and no compaction work, and each table's levels
//! reflect only its own data, in the layout the table chose (`params.layout`, opened by
//! `mosaic-replica`: one engine for `uniform`, one per replica source for `multi-lsm`, a
//! tree and a two-layer log for `decoupled`). The price is a memtable and background
//! threads per engine; the `[storage]` budgets are per engine for that reason.
//!
//! Every write and read names the replica role it acts under, decided by the caller from
//! the ring ([`Roles`]): the cluster's store (`crate::cluster::LocalStore`) computes it per
//! token; this module's own single-node coordinator is primary for everything.
//!
//! Engine calls may block (fsync, disk reads, write stalls). Reads and writes, the hot
//! path, run where `[storage] engine_calls` says: `inline` on the network thread itself
//! (except writes that wait for an fsync), or `offload` in `block_in_place`, which hands
//! the worker's other tasks to a fresh thread first. A handoff per request costs a
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

use std::collections::{BTreeMap, HashMap};
use std::fs;
use std::io;
use std::net::IpAddr;
use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result};
use mosaic_cluster::{SchemaSnapshot, WireMutation};
use mosaic_cql::coordinator::{
    check_available, replica_counts, ClusterInfo, Coordinator, Mutation, NodeInfo, ReadCommand,
    ReadResult,
};
use mosaic_cql::frame::{Consistency, ErrorKind, ErrorResponse};
use mosaic_cql::schema::{Catalog, TableId, TableMeta, Uuid};
use mosaic_lsm::{Fs, Options, RealFs, WriteBatch};
use mosaic_replica::{Layout, LogSettings, ReplicaStore, RingRanges, Role};
use mosaic_rows::{KeyRange, RowMerge};
use mosaic_types::Token;
use parking_lot::{Mutex, RwLock};
use tokio::sync::RwLock as AsyncRwLock;

use crate::config::{Config, EngineCalls, WalSync};
use crate::durable::{sync_dir, write_atomic, NodeIdentity};

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
    /// The store; `None` once closed (dropped, shut down, or a failed truncate).
    db: Arc<AsyncRwLock<Option<ReplicaStore>>>,
    /// Set when the table was dropped.
    dropped: AtomicBool,
}

/// The single-node coordinator (see the module doc).
pub struct LocalCoordinator {
    data_dir: PathBuf,
    engine: Options,
    /// The decoupled layout's log shape; its ring ranges are shared by every table and
    /// updated by the cluster store as the ring changes.
    log: LogSettings,
    /// The layout of tables created without one (`[storage] layout`).
    default_layout: String,
    catalog: RwLock<Arc<Catalog>>,
    /// The schema's epoch: bumped by every local change, taken from peers' newer schemas
    /// (see `mosaic_cluster::SchemaSnapshot`). Changed only under `ddl`.
    epoch: AtomicU64,
    /// Serializes schema changes (held across their disk work).
    ddl: tokio::sync::Mutex<()>,
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
    /// Whether reads run on the network threads.
    inline_reads: bool,
    /// Whether writes run on the network threads (never when they wait for an fsync).
    inline_writes: bool,
    /// The data directory's lock, released at [`LocalCoordinator::close`].
    lock: Mutex<Option<Box<dyn std::any::Any + Send + Sync>>>,
}

/// A directory-name component for a keyspace or table name: the name itself when it is
/// plain (as CQL's DDL enforces), otherwise an injective `%XX` escape, so no catalog entry
/// can name a path outside its directory.
fn path_component(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for b in name.bytes() {
        if b.is_ascii_alphanumeric() || b == b'_' {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    if out.is_empty() {
        out.push('%');
    }
    out
}

fn id_hex(id: TableId) -> String {
    id.0.iter().map(|b| format!("{b:02x}")).collect()
}

fn parse_id_hex(s: &str) -> Option<TableId> {
    if s.len() != 32 || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let mut bytes = [0u8; 16];
    for (i, b) in bytes.iter_mut().enumerate() {
        *b = u8::from_str_radix(s.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(Uuid(bytes))
}

/// The directory of `table` under `data_dir`.
fn table_dir(data_dir: &Path, table: &TableMeta) -> PathBuf {
    data_dir.join(path_component(&table.keyspace)).join(format!(
        "{}-{}",
        path_component(&table.name),
        id_hex(table.id)
    ))
}

fn server_error(message: impl Into<String>) -> ErrorResponse {
    ErrorResponse::new(ErrorKind::Server, message)
}

/// The client-facing error for an engine failure on `table`.
fn engine_error(table: &str, e: mosaic_lsm::Error) -> ErrorResponse {
    use mosaic_lsm::Error as E;
    match &e {
        E::NoSpace { .. } => server_error(format!(
            "Disk full on this node: table {table} refuses writes until space is freed ({e})"
        )),
        E::Poisoned { .. } => server_error(format!(
            "Table {table} refuses writes after a storage failure; restart the node to recover \
             ({e})"
        )),
        E::InvalidArgument(m) => ErrorResponse::new(ErrorKind::Invalid, m.clone()),
        E::Closed => server_error("The node is shutting down"),
        _ if e.is_corruption() => server_error(format!("Corrupt data in table {table}: {e}")),
        _ => server_error(format!("Storage error in table {table}: {e}")),
    }
}

fn join_error(e: tokio::task::JoinError) -> ErrorResponse {
    server_error(format!("internal error: a storage task failed: {e}"))
}

/// The replica role of each key a write or read touches (see the module doc).
pub trait Roles: Send + Sync {
    /// This node's role for `token`.
    fn role(&self, token: Token) -> Role;
    /// `range` split where this node's role changes, in key order, each piece with its
    /// role.
    fn pieces(&self, range: KeyRange) -> Vec<(KeyRange, Role)>;
}

/// Primary for every token: a node that is its whole cluster (or that does not know the
/// ring yet).
pub struct AllPrimary;

impl Roles for AllPrimary {
    fn role(&self, _token: Token) -> Role {
        Role::Primary
    }

    fn pieces(&self, range: KeyRange) -> Vec<(KeyRange, Role)> {
        vec![(range, Role::Primary)]
    }
}

/// Runs an engine call on this thread, or in `block_in_place` (see the module doc).
fn run_engine_call<T>(inline: bool, call: impl FnOnce() -> T) -> T {
    if inline {
        call()
    } else {
        tokio::task::block_in_place(call)
    }
}

/// Moves `dir` aside and deletes it (see the module doc). A missing `dir` is fine.
fn delete_dir(dir: &Path) -> io::Result<()> {
    let mut aside = dir.as_os_str().to_os_string();
    aside.push(DELETING_SUFFIX);
    let aside = PathBuf::from(aside);
    match fs::rename(dir, &aside) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    }
    if let Some(parent) = dir.parent() {
        sync_dir(parent)?;
    }
    fs::remove_dir_all(&aside)
}

/// Microseconds since the Unix epoch by the wall clock.
pub(crate) fn now_micros() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_micros()).unwrap_or(i64::MAX))
}

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
        let identity = NodeIdentity::load_or_create(&data_dir, config.num_tokens)?;
        let schema_path = data_dir.join(SCHEMA_FILE);
        let (epoch, catalog) = match fs::read(&schema_path) {
            Ok(bytes) => read_schema_file(&bytes)
                .with_context(|| format!("reading {}", schema_path.display()))?,
            Err(e) if e.kind() == io::ErrorKind::NotFound => (0, Catalog::default()),
            Err(e) => return Err(e).with_context(|| format!("reading {}", schema_path.display())),
        };
        let mut engine = config.storage.engine_options()?;
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

        remove_orphans(&data_dir, &catalog)?;
        let mut tables = HashMap::new();
        for t in catalog.tables() {
            let slot = open_slot(&data_dir, &engine, &log, t)
                .map_err(|e| anyhow::anyhow!("opening table {}.{}: {e}", t.keyspace, t.name))?;
            tables.insert(t.id, Arc::new(slot));
        }
        Ok(LocalCoordinator {
            data_dir,
            engine,
            log,
            default_layout: config.storage.layout.clone(),
            catalog: RwLock::new(Arc::new(catalog)),
            epoch: AtomicU64::new(epoch),
            ddl: tokio::sync::Mutex::new(()),
            tables: RwLock::new(tables),
            dropped_names: Mutex::new(HashMap::new()),
            clock: AtomicI64::new(0),
            closing: AtomicBool::new(false),
            identity,
            tokens,
            rpc_address: config.rpc_address(),
            native_port: config.native_port,
            data_center: config.data_center.clone(),
            rack: config.rack.clone(),
            cluster_name: config.cluster_name.clone(),
            inline_reads: config.storage.engine_calls == EngineCalls::Inline,
            inline_writes: config.storage.engine_calls == EngineCalls::Inline
                && config.storage.wal_sync == WalSync::Periodic,
            lock: Mutex::new(Some(lock)),
        })
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
            let closed = tokio::task::spawn_blocking(move || {
                let mut guard = guard;
                guard.take().map_or(Ok(()), ReplicaStore::close)
            })
            .await;
            match closed {
                Ok(Ok(())) => {}
                Ok(Err(e)) => failures.push(format!("{name} ({e})")),
                Err(e) => failures.push(format!("{name} ({e})")),
            }
        }
        if failures.is_empty() {
            self.lock.lock().take();
        }
        failures
    }

    /// The storage of `table`, or the error for a table that is gone.
    fn slot(&self, table: TableId) -> Result<Arc<TableSlot>, ErrorResponse> {
        if let Some(slot) = self.tables.read().get(&table) {
            return Ok(slot.clone());
        }
        Err(self.unconfigured(table))
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

/// The layout of `table`, or an error naming what this build cannot store (a schema from
/// a newer peer).
fn table_layout(table: &TableMeta) -> mosaic_lsm::Result<Layout> {
    Layout::parse(&table.params.layout).ok_or_else(|| {
        mosaic_lsm::Error::InvalidArgument(format!(
            "table {}.{} has layout '{}', which this build does not store",
            table.keyspace, table.name, table.params.layout
        ))
    })
}

/// Opens (creating) the store of `table`, in its layout.
fn open_slot(
    data_dir: &Path,
    engine: &Options,
    log: &LogSettings,
    table: &TableMeta,
) -> mosaic_lsm::Result<TableSlot> {
    let dir = table_dir(data_dir, table);
    let layout = table_layout(table)?;
    let db = ReplicaStore::open(&dir, layout, engine.clone(), log.clone())?;
    Ok(TableSlot {
        name: format!("{}.{}", table.keyspace, table.name),
        table: table.name.clone(),
        dir,
        layout,
        db: Arc::new(AsyncRwLock::new(Some(db))),
        dropped: AtomicBool::new(false),
    })
}

/// Removes table directories that the catalog does not list (and `*.deleting` leftovers),
/// then keyspace directories left empty that the catalog does not list. Only names this
/// module creates are touched.
fn remove_orphans(data_dir: &Path, catalog: &Catalog) -> Result<()> {
    let live: std::collections::HashSet<PathBuf> =
        catalog.tables().map(|t| table_dir(data_dir, t)).collect();
    let keyspaces: std::collections::HashSet<String> = catalog
        .keyspaces
        .keys()
        .map(|k| path_component(k))
        .collect();
    let entries =
        fs::read_dir(data_dir).with_context(|| format!("listing {}", data_dir.display()))?;
    for ks in entries {
        let ks = ks.with_context(|| format!("listing {}", data_dir.display()))?;
        if !ks.file_type().map(|t| t.is_dir()).unwrap_or(false) {
            continue;
        }
        let ks_dir = ks.path();
        let mut removed_any = false;
        let tables =
            fs::read_dir(&ks_dir).with_context(|| format!("listing {}", ks_dir.display()))?;
        for t in tables {
            let t = t.with_context(|| format!("listing {}", ks_dir.display()))?;
            let name = t.file_name().to_string_lossy().into_owned();
            let path = t.path();
            let ours = name.ends_with(DELETING_SUFFIX)
                || name
                    .rsplit_once('-')
                    .is_some_and(|(_, id)| parse_id_hex(id).is_some());
            if ours && !live.contains(&path) {
                eprintln!("mosaic: removing {} (not in the schema)", path.display());
                fs::remove_dir_all(&path)
                    .with_context(|| format!("removing {}", path.display()))?;
                removed_any = true;
            }
        }
        let name = ks.file_name().to_string_lossy().into_owned();
        if removed_any && !keyspaces.contains(&name) {
            // Only succeeds when empty, which is what we want.
            let _ = fs::remove_dir(&ks_dir);
        }
        if removed_any {
            sync_dir(&ks_dir)
                .or_else(|e| {
                    if e.kind() == io::ErrorKind::NotFound {
                        Ok(())
                    } else {
                        Err(e)
                    }
                })
                .with_context(|| format!("syncing {}", ks_dir.display()))?;
        }
    }
    sync_dir(data_dir).with_context(|| format!("syncing {}", data_dir.display()))?;
    Ok(())
}

impl Coordinator for LocalCoordinator {
    fn catalog(&self) -> Arc<Catalog> {
        self.catalog.read().clone()
    }

    async fn update_schema<R, F>(&self, change: F) -> Result<R, ErrorResponse>
    where
        R: Send + 'static,
        F: FnOnce(&Catalog) -> Result<(Catalog, R), ErrorResponse> + Send + 'static,
    {
        let _ddl = self.ddl.lock().await;
        if self.closing.load(Ordering::SeqCst) {
            return Err(server_error("The node is shutting down"));
        }
        let current = self.catalog();
        let (next, r) = change(&current)?;
        if next == *current {
            return Ok(r);
        }
        let epoch = self.epoch.load(Ordering::SeqCst) + 1;
        self.install(&current, next, epoch).await?;
        Ok(r)
    }

    fn new_timestamp(&self) -> i64 {
        LocalCoordinator::new_timestamp(self)
    }

    fn now_secs(&self) -> i64 {
        LocalCoordinator::now_secs(self)
    }

    fn local_node(&self) -> NodeInfo {
        LocalCoordinator::local_node(self)
    }

    fn peers(&self) -> Vec<NodeInfo> {
        Vec::new()
    }

    fn cluster_info(&self) -> ClusterInfo {
        LocalCoordinator::cluster_info(self)
    }

    fn default_layout(&self) -> String {
        self.default_layout.clone()
    }

    async fn write(
        &self,
        mutations: Vec<Mutation>,
        consistency: Consistency,
    ) -> Result<(), ErrorResponse> {
        let mut checked: Vec<TableId> = Vec::new();
        for m in &mutations {
            if !checked.contains(&m.table) {
                self.check_available(m.table, consistency, true)?;
                checked.push(m.table);
            }
        }
        let mut by_table: BTreeMap<TableId, Vec<WireMutation>> = BTreeMap::new();
        for m in mutations {
            by_table.entry(m.table).or_default().push(WireMutation {
                key: m.key,
                ts: m.ts,
                fragment: m.fragment,
            });
        }
        self.apply(by_table, &AllPrimary).await
    }

    async fn read(
        &self,
        command: ReadCommand,
        consistency: Consistency,
    ) -> Result<ReadResult, ErrorResponse> {
        self.check_available(command.table, consistency, false)?;
        self.read_local(command.table, command.range, command.limit, &AllPrimary)
            .await
    }

    async fn truncate(&self, table: TableId) -> Result<(), ErrorResponse> {
        self.truncate_local(table).await
    }
}

impl LocalCoordinator {
    /// The schema as the cluster moves it.
    pub fn schema_snapshot(&self) -> SchemaSnapshot {
        let catalog = self.catalog.read().clone();
        SchemaSnapshot {
            epoch: self.epoch.load(Ordering::SeqCst),
            version: catalog.version.0,
            bytes: catalog.to_bytes(),
        }
    }

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

    /// The current catalog.
    pub fn current_catalog(&self) -> Arc<Catalog> {
        self.catalog.read().clone()
    }

    /// The schema's version.
    pub fn schema_version(&self) -> Uuid {
        self.catalog.read().version
    }

    /// Adopts a peer's schema if it supersedes ours: the same storage steps as a local
    /// change. Returns whether it did.
    pub async fn adopt_schema(&self, snapshot: SchemaSnapshot) -> Result<bool, String> {
        let _ddl = self.ddl.lock().await;
        if self.closing.load(Ordering::SeqCst) {
            return Err("the node is shutting down".into());
        }
        let current = self.catalog();
        let mine = SchemaSnapshot {
            epoch: self.epoch.load(Ordering::SeqCst),
            version: current.version.0,
            bytes: Vec::new(),
        };
        if !snapshot.supersedes(&mine) {
            return Ok(false);
        }
        let next = Catalog::from_bytes(&snapshot.bytes)
            .map_err(|e| format!("undecodable schema from a peer: {e}"))?;
        if next == *current {
            self.persist_epoch(&current, snapshot.epoch).await?;
            return Ok(true);
        }
        self.install(&current, next, snapshot.epoch)
            .await
            .map_err(|e| e.message)?;
        Ok(true)
    }

    /// Records a new epoch for an unchanged catalog.
    async fn persist_epoch(&self, catalog: &Catalog, epoch: u64) -> Result<(), String> {
        let path = self.data_dir.join(SCHEMA_FILE);
        let bytes = schema_file_bytes(catalog, epoch);
        tokio::task::spawn_blocking(move || write_atomic(&path, &bytes))
            .await
            .map_err(|e| e.to_string())?
            .map_err(|e| format!("Could not persist the schema: {e}"))?;
        self.epoch.store(epoch, Ordering::SeqCst);
        Ok(())
    }

    /// Installs `next` (replacing `current`) at `epoch`: storage for new tables, the
    /// catalog made durable, then dropped tables' storage deleted. Called under `ddl`.
    async fn install(
        &self,
        current: &Catalog,
        next: Catalog,
        epoch: u64,
    ) -> Result<(), ErrorResponse> {
        let created: Vec<Arc<TableMeta>> = next
            .tables()
            .filter(|t| current.table_by_id(t.id).is_none())
            .cloned()
            .collect();
        let dropped: Vec<Arc<TableMeta>> = current
            .tables()
            .filter(|t| next.table_by_id(t.id).is_none())
            .cloned()
            .collect();

        // 1. Storage for new tables, 2. the catalog made durable (undoing 1 if that fails).
        let data_dir = self.data_dir.clone();
        let engine = self.engine.clone();
        let log = self.log.clone();
        let bytes = schema_file_bytes(&next, epoch);
        let opened = tokio::task::spawn_blocking(
            move || -> Result<Vec<(TableId, TableSlot)>, ErrorResponse> {
                let mut slots = Vec::with_capacity(created.len());
                let mut result = Ok(());
                for t in &created {
                    match open_slot(&data_dir, &engine, &log, t) {
                        Ok(slot) => slots.push((t.id, slot)),
                        Err(e) => {
                            result = Err(engine_error(&format!("{}.{}", t.keyspace, t.name), e));
                            break;
                        }
                    }
                }
                if result.is_ok() {
                    result = write_atomic(&data_dir.join(SCHEMA_FILE), &bytes).map_err(|e| {
                        server_error(format!("Could not persist the schema change: {e}"))
                    });
                }
                match result {
                    Ok(()) => Ok(slots),
                    Err(e) => {
                        for (_, slot) in slots {
                            if let Some(db) = slot.db.try_write().ok().and_then(|mut g| g.take()) {
                                let _ = db.close();
                            }
                            let _ = delete_dir(&slot.dir);
                        }
                        Err(e)
                    }
                }
            },
        )
        .await
        .map_err(join_error)??;

        // 3. Swap: new tables become reachable before the catalog names them; dropped ones
        // disappear from the catalog before their storage.
        {
            let mut tables = self.tables.write();
            for (id, slot) in opened {
                tables.insert(id, Arc::new(slot));
            }
        }
        *self.catalog.write() = Arc::new(next);
        self.epoch.store(epoch, Ordering::SeqCst);
        let mut gone = Vec::with_capacity(dropped.len());
        {
            let mut tables = self.tables.write();
            for t in &dropped {
                if let Some(slot) = tables.remove(&t.id) {
                    slot.dropped.store(true, Ordering::SeqCst);
                    gone.push(slot);
                }
                self.remember_dropped(t.id, t.name.clone());
            }
        }

        // 4. Delete dropped storage once running operations on it are done. A failure here
        // leaves an orphan directory that the next start removes.
        for slot in gone {
            let guard = slot.db.clone().write_owned().await;
            let dir = slot.dir.clone();
            let name = slot.name.clone();
            let deleted = tokio::task::spawn_blocking(move || -> io::Result<()> {
                let mut guard = guard;
                if let Some(db) = guard.take() {
                    if let Err(e) = db.close() {
                        eprintln!("mosaic: closing dropped table {name}: {e}");
                    }
                }
                delete_dir(&dir)?;
                if let Some(ks_dir) = dir.parent() {
                    // Remove the keyspace directory if this was its last table.
                    if fs::remove_dir(ks_dir).is_ok() {
                        if let Some(parent) = ks_dir.parent() {
                            sync_dir(parent)?;
                        }
                    }
                }
                Ok(())
            })
            .await;
            match deleted {
                Ok(Ok(())) => {}
                Ok(Err(e)) => eprintln!(
                    "mosaic: could not delete {} of a dropped table (removed at next start): {e}",
                    slot.dir.display()
                ),
                Err(e) => eprintln!("mosaic: deleting {}: {e}", slot.dir.display()),
            }
        }
        Ok(())
    }

    /// Applies writes to local storage, per table, each under the role `roles` gives its
    /// token (one batch per table and role).
    pub async fn apply(
        &self,
        mutations: BTreeMap<TableId, Vec<WireMutation>>,
        roles: &dyn Roles,
    ) -> Result<(), ErrorResponse> {
        let mut batches: BTreeMap<TableId, Vec<(Role, WriteBatch)>> = BTreeMap::new();
        for (table, ms) in &mutations {
            let batches = batches.entry(*table).or_default();
            // Rows of one partition arrive together: one ring lookup per token.
            let mut last: Option<(Token, Role)> = None;
            for m in ms {
                // A key too short to hold a token has no place on the ring; it is stored
                // (and read, see read_local's callers) as a primary copy.
                let role = match mosaic_rows::decode_token(&m.key) {
                    Ok(token) => match last {
                        Some((t, role)) if t == token => role,
                        _ => {
                            let role = roles.role(token);
                            last = Some((token, role));
                            role
                        }
                    },
                    Err(_) => Role::Primary,
                };
                let i = match batches.iter().position(|(r, _)| *r == role) {
                    Some(i) => i,
                    None => {
                        batches.push((role, WriteBatch::new()));
                        batches.len() - 1
                    }
                };
                if let Some((_, batch)) = batches.get_mut(i) {
                    batch.merge(&m.key, m.ts, &m.fragment);
                }
            }
        }
        drop(mutations);
        // Locks in table-id order (the BTreeMap's), so concurrent writers never wait on
        // each other in a cycle.
        let mut work = Vec::with_capacity(batches.len());
        for (id, batch) in batches {
            let slot = self.slot(id)?;
            let guard = slot.db.clone().read_owned().await;
            if guard.is_none() {
                return Err(self.closed_error(&slot));
            }
            work.push((slot.name.clone(), guard, batch));
        }
        run_engine_call(self.inline_writes, move || {
            for (name, guard, batches) in work {
                if let Some(store) = guard.as_ref() {
                    for (role, batch) in batches {
                        store
                            .write(role, batch)
                            .map_err(|e| engine_error(&name, e))?;
                    }
                }
            }
            Ok(())
        })
    }

    /// Reads up to `limit` entries of `range` of a table from local storage: the range
    /// split where this node's role changes (`roles`), each piece read under its role, in
    /// key order.
    pub async fn read_local(
        &self,
        table: TableId,
        range: KeyRange,
        limit: usize,
        roles: &dyn Roles,
    ) -> Result<ReadResult, ErrorResponse> {
        let slot = self.slot(table)?;
        let pieces = roles.pieces(range);
        let guard = slot.db.clone().read_owned().await;
        if guard.is_none() {
            return Err(self.closed_error(&slot));
        }
        let name = slot.name.clone();
        run_engine_call(self.inline_reads, move || {
            let Some(store) = guard.as_ref() else {
                return Err(server_error("The node is shutting down"));
            };
            // Sized for the answer up front: growing it shows up as page zeroing in scans.
            let mut entries = Vec::with_capacity(limit.min(1024));
            for (range, role) in &pieces {
                let end = match &range.end {
                    Some(e) => Bound::Excluded(e.as_slice()),
                    None => Bound::Unbounded,
                };
                let scan = store
                    .scan(*role, Bound::Included(range.start.as_slice()), end)
                    .map_err(|e| engine_error(&name, e))?;
                for item in scan {
                    let (key, entry) = item.map_err(|e| engine_error(&name, e))?;
                    if entries.len() >= limit {
                        // One entry past the limit: the range is not exhausted.
                        return Ok(ReadResult {
                            entries,
                            exhausted: false,
                        });
                    }
                    entries.push((key, entry.value));
                }
            }
            Ok(ReadResult {
                entries,
                exhausted: true,
            })
        })
    }

    /// Removes every row of a table from local storage.
    pub async fn truncate_local(&self, table: TableId) -> Result<(), ErrorResponse> {
        let slot = self.slot(table)?;
        let mut guard = slot.db.clone().write_owned().await;
        if guard.is_none() {
            return Err(self.closed_error(&slot));
        }
        let dir = slot.dir.clone();
        let name = slot.name.clone();
        let layout = slot.layout;
        let engine = self.engine.clone();
        let log = self.log.clone();
        tokio::task::spawn_blocking(move || {
            if let Some(db) = guard.take() {
                if let Err(e) = db.close() {
                    // The data is being deleted; a failed final sync changes nothing.
                    eprintln!("mosaic: closing {name} for truncate: {e}");
                }
            }
            delete_dir(&dir).map_err(|e| {
                server_error(format!(
                    "Could not truncate {name}: deleting {}: {e}",
                    dir.display()
                ))
            })?;
            let db = ReplicaStore::open(&dir, layout, engine, log)
                .map_err(|e| engine_error(&name, e))?;
            *guard = Some(db);
            Ok(())
        })
        .await
        .map_err(join_error)?
    }

    /// A write timestamp: microseconds since the epoch, strictly increasing here.
    pub fn new_timestamp(&self) -> i64 {
        let now = now_micros();
        let next = |last: i64| now.max(last.saturating_add(1));
        match self
            .clock
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |last| Some(next(last)))
        {
            Ok(prev) | Err(prev) => next(prev),
        }
    }

    /// Local time in seconds.
    pub fn now_secs(&self) -> i64 {
        now_micros() / 1_000_000
    }

    /// This node as `system.local` describes it.
    pub fn local_node(&self) -> NodeInfo {
        NodeInfo {
            host_id: self.identity.host_id,
            rpc_address: self.rpc_address,
            native_port: self.native_port,
            broadcast_address: self.rpc_address,
            data_center: self.data_center.clone(),
            rack: self.rack.clone(),
            tokens: self.tokens.clone(),
            schema_version: self.catalog().version,
            release_version: RELEASE_VERSION.to_owned(),
            up: true,
        }
    }

    /// Cluster-wide facts.
    pub fn cluster_info(&self) -> ClusterInfo {
        ClusterInfo {
            cluster_name: self.cluster_name.clone(),
            partitioner: PARTITIONER.to_owned(),
        }
    }
}

/// The schema file's content: the catalog and its epoch.
fn schema_file_bytes(catalog: &Catalog, epoch: u64) -> Vec<u8> {
    let catalog: serde_json::Value =
        serde_json::from_slice(&catalog.to_bytes()).unwrap_or(serde_json::Value::Null);
    serde_json::to_vec_pretty(&serde_json::json!({ "epoch": epoch, "catalog": catalog }))
        .unwrap_or_default()
}

/// Reads the schema file: `{epoch, catalog}`, or a bare catalog (epoch 0) as written
/// before the cluster existed.
fn read_schema_file(bytes: &[u8]) -> Result<(u64, Catalog)> {
    let value: serde_json::Value = serde_json::from_slice(bytes)?;
    if let (Some(epoch), Some(catalog)) = (
        value.get("epoch").and_then(|e| e.as_u64()),
        value.get("catalog"),
    ) {
        let catalog = Catalog::from_bytes(&serde_json::to_vec(catalog)?)?;
        return Ok((epoch, catalog));
    }
    Ok((0, Catalog::from_bytes(bytes)?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use mosaic_cql::frame::ProtocolVersion;
    use mosaic_cql::frame::{Query, QueryParameters, Request, Response, ResultBody};
    use mosaic_cql::processor::{Processor, Session};

    fn config(dir: &Path) -> Config {
        let mut c = Config {
            data_dir: dir.to_path_buf(),
            ..Config::default()
        };
        c.storage.memtable_size_bytes = 1 << 20;
        c.storage.block_cache_size_bytes = 1 << 20;
        c
    }

    fn rt() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap()
    }

    async fn run(p: &Processor<LocalCoordinator>, s: &mut Session, cql: &str) -> Response {
        p.process(
            s,
            Request::Query(Query {
                query: cql.to_owned(),
                params: QueryParameters::new(Consistency::One),
            }),
        )
        .await
    }

    fn rows(r: &Response) -> usize {
        match r {
            Response::Result(ResultBody::Rows(rows)) => rows.rows.len(),
            other => panic!("expected rows, got {other:?}"),
        }
    }

    #[test]
    fn timestamps_strictly_increase() {
        let dir = tempfile::tempdir().unwrap();
        let c = LocalCoordinator::open(&config(dir.path())).unwrap();
        let mut last = 0;
        for _ in 0..10_000 {
            let t = c.new_timestamp();
            assert!(t > last);
            last = t;
        }
        assert!(last >= now_micros() - 60_000_000);
    }

    #[test]
    fn path_components_are_plain_or_escaped() {
        assert_eq!(path_component("ks_1"), "ks_1");
        assert_eq!(path_component("../x"), "%2E%2E%2Fx");
        assert_eq!(path_component(""), "%");
        let id = Uuid::random();
        assert_eq!(parse_id_hex(&id_hex(id)), Some(id));
    }

    #[test]
    fn offloaded_and_synced_engine_calls_serve_reads_and_writes() {
        for (calls, sync) in [
            (EngineCalls::Offload, WalSync::Periodic),
            (EngineCalls::Inline, WalSync::PerWrite),
        ] {
            let dir = tempfile::tempdir().unwrap();
            let mut cfg = config(dir.path());
            cfg.storage.engine_calls = calls;
            cfg.storage.wal_sync = sync;
            rt().block_on(async {
                let c = Arc::new(LocalCoordinator::open(&cfg).unwrap());
                assert!(!c.inline_writes);
                let p = Processor::new(c.clone());
                let mut s = Session::new(ProtocolVersion::V4);
                for cql in [
                    "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
                    "CREATE TABLE ks.t (k int PRIMARY KEY, v text)",
                    "INSERT INTO ks.t (k, v) VALUES (1, 'a')",
                ] {
                    let r = run(&p, &mut s, cql).await;
                    assert!(!matches!(r, Response::Error(_)), "{cql}: {r:?}");
                }
                assert_eq!(rows(&run(&p, &mut s, "SELECT * FROM ks.t").await), 1);
                assert!(c.close(Duration::from_secs(10)).await.is_empty());
            });
        }
    }

    #[test]
    fn tables_survive_restart_truncate_and_drop() {
        let dir = tempfile::tempdir().unwrap();
        let rt = rt();
        rt.block_on(async {
            let c = Arc::new(LocalCoordinator::open(&config(dir.path())).unwrap());
            let p = Processor::new(c.clone());
            let mut s = Session::new(ProtocolVersion::V4);
            for cql in [
                "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
                "CREATE TABLE ks.t (k int PRIMARY KEY, v text)",
                "INSERT INTO ks.t (k, v) VALUES (1, 'a')",
                "INSERT INTO ks.t (k, v) VALUES (2, 'b')",
            ] {
                let r = run(&p, &mut s, cql).await;
                assert!(!matches!(r, Response::Error(_)), "{cql}: {r:?}");
            }
            assert_eq!(rows(&run(&p, &mut s, "SELECT * FROM ks.t").await), 2);
            assert_eq!(c.table_count(), 1);
            assert!(c.close(Duration::from_secs(10)).await.is_empty());
        });
        rt.block_on(async {
            let c = Arc::new(LocalCoordinator::open(&config(dir.path())).unwrap());
            let p = Processor::new(c.clone());
            let mut s = Session::new(ProtocolVersion::V4);
            assert_eq!(rows(&run(&p, &mut s, "SELECT * FROM ks.t").await), 2);
            let r = run(&p, &mut s, "TRUNCATE ks.t").await;
            assert!(!matches!(r, Response::Error(_)), "{r:?}");
            assert_eq!(rows(&run(&p, &mut s, "SELECT * FROM ks.t").await), 0);
            let r = run(&p, &mut s, "INSERT INTO ks.t (k, v) VALUES (3, 'c')").await;
            assert!(!matches!(r, Response::Error(_)), "{r:?}");
            assert_eq!(rows(&run(&p, &mut s, "SELECT * FROM ks.t").await), 1);
            let table = c.catalog().table("ks", "t").unwrap().clone();
            let r = run(&p, &mut s, "DROP TABLE ks.t").await;
            assert!(!matches!(r, Response::Error(_)), "{r:?}");
            assert!(!table_dir(dir.path(), &table).exists());
            let e = c
                .read(
                    ReadCommand {
                        table: table.id,
                        range: mosaic_rows::KeyRange {
                            start: Vec::new(),
                            end: None,
                        },
                        limit: 10,
                    },
                    Consistency::One,
                )
                .await
                .unwrap_err();
            assert_eq!(e.message, "unconfigured table t");
            let r = run(&p, &mut s, "DROP KEYSPACE ks").await;
            assert!(!matches!(r, Response::Error(_)), "{r:?}");
            assert!(!dir.path().join("ks").exists());
            assert!(c.close(Duration::from_secs(10)).await.is_empty());
        });
    }

    async fn run_ok(p: &Processor<LocalCoordinator>, s: &mut Session, cql: &str) {
        let r = run(p, s, cql).await;
        assert!(!matches!(r, Response::Error(_)), "{cql}: {r:?}");
    }

    #[test]
    fn tables_of_every_layout_store_read_and_survive_restart() {
        let dir = tempfile::tempdir().unwrap();
        let rt = rt();
        rt.block_on(async {
            let c = Arc::new(LocalCoordinator::open(&config(dir.path())).unwrap());
            let p = Processor::new(c.clone());
            let mut s = Session::new(ProtocolVersion::V4);
            run_ok(&p, &mut s, "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}").await;
            for layout in ["uniform", "multi-lsm", "decoupled"] {
                let t = layout.replace('-', "_");
                run_ok(&p, &mut s, &format!("CREATE TABLE ks.{t} (k int PRIMARY KEY, v text) WITH layout = '{layout}'")).await;
                for k in 0..50 {
                    run_ok(&p, &mut s, &format!("INSERT INTO ks.{t} (k, v) VALUES ({k}, 'v{k}')")).await;
                }
                run_ok(&p, &mut s, &format!("DELETE FROM ks.{t} WHERE k = 0")).await;
                assert_eq!(rows(&run(&p, &mut s, &format!("SELECT * FROM ks.{t}")).await), 49);
                let meta = c.catalog().table("ks", &t).unwrap().clone();
                assert_eq!(meta.params.layout, layout);
                let tdir = table_dir(dir.path(), &meta);
                assert_eq!(tdir.join("primary").is_dir(), layout != "uniform", "{layout}");
            }
            assert!(c.close(Duration::from_secs(10)).await.is_empty());
        });
        rt.block_on(async {
            let c = Arc::new(LocalCoordinator::open(&config(dir.path())).unwrap());
            let p = Processor::new(c.clone());
            let mut s = Session::new(ProtocolVersion::V4);
            for t in ["uniform", "multi_lsm", "decoupled"] {
                assert_eq!(
                    rows(&run(&p, &mut s, &format!("SELECT * FROM ks.{t}")).await),
                    49,
                    "{t}"
                );
                assert_eq!(
                    rows(&run(&p, &mut s, &format!("SELECT * FROM ks.{t} WHERE k = 7")).await),
                    1,
                    "{t}"
                );
                run_ok(&p, &mut s, &format!("TRUNCATE ks.{t}")).await;
                assert_eq!(
                    rows(&run(&p, &mut s, &format!("SELECT * FROM ks.{t}")).await),
                    0,
                    "{t}"
                );
                run_ok(
                    &p,
                    &mut s,
                    &format!("INSERT INTO ks.{t} (k, v) VALUES (1, 'again')"),
                )
                .await;
            }
            // The layout stays the table's, whatever the statement says.
            let r = run(
                &p,
                &mut s,
                "ALTER TABLE ks.decoupled WITH layout = 'uniform'",
            )
            .await;
            assert!(matches!(r, Response::Error(_)), "{r:?}");
            let stats = c
                .each_table(|store| Ok((store.layout(), store.structures().len())))
                .await;
            let stats: Vec<_> = stats.into_iter().map(|(n, r)| (n, r.unwrap())).collect();
            assert_eq!(
                stats,
                [
                    ("ks.decoupled".to_owned(), (Layout::Decoupled, 2)),
                    ("ks.multi_lsm".to_owned(), (Layout::MultiLsm, 1)),
                    ("ks.uniform".to_owned(), (Layout::Uniform, 1)),
                ]
            );
            assert!(c.close(Duration::from_secs(10)).await.is_empty());
        });
    }

    #[test]
    fn the_configured_layout_applies_to_tables_created_without_one() {
        let dir = tempfile::tempdir().unwrap();
        let mut cfg = config(dir.path());
        cfg.storage.layout = "decoupled".to_owned();
        rt().block_on(async {
            let c = Arc::new(LocalCoordinator::open(&cfg).unwrap());
            let p = Processor::new(c.clone());
            let mut s = Session::new(ProtocolVersion::V4);
            run_ok(&p, &mut s, "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}").await;
            run_ok(&p, &mut s, "CREATE TABLE ks.t (k int PRIMARY KEY, v text)").await;
            run_ok(&p, &mut s, "CREATE TABLE ks.u (k int PRIMARY KEY, v text) WITH layout = 'uniform'").await;
            let catalog = c.catalog();
            let t = catalog.table("ks", "t").unwrap();
            assert_eq!(t.params.layout, "decoupled");
            assert_eq!(catalog.table("ks", "u").unwrap().params.layout, "uniform");
            let marker = fs::read_to_string(table_dir(dir.path(), t).join("LAYOUT")).unwrap();
            assert_eq!(marker, "decoupled");
            run_ok(&p, &mut s, "INSERT INTO ks.t (k, v) VALUES (1, 'a')").await;
            assert_eq!(rows(&run(&p, &mut s, "SELECT * FROM ks.t").await), 1);
            assert!(c.close(Duration::from_secs(10)).await.is_empty());
        });
    }

    /// Redundant below token 0 (a copy of source 0xaa…), primary from 0 on.
    struct SplitAtZero;

    const SOURCE: mosaic_replica::SourceId = mosaic_replica::SourceId([0xaa; 16]);

    impl Roles for SplitAtZero {
        fn role(&self, token: Token) -> Role {
            if token.0 < 0 {
                Role::Redundant { source: SOURCE }
            } else {
                Role::Primary
            }
        }

        fn pieces(&self, range: KeyRange) -> Vec<(KeyRange, Role)> {
            let zero = mosaic_rows::encode_token(Token(0)).to_vec();
            let low = KeyRange {
                start: range.start.clone(),
                end: Some(
                    range
                        .end
                        .clone()
                        .map_or(zero.clone(), |e| e.min(zero.clone())),
                ),
            };
            let high = KeyRange {
                start: range.start.clone().max(zero),
                end: range.end,
            };
            [(low, self.role(Token(-1))), (high, Role::Primary)]
                .into_iter()
                .filter(|(r, _)| !r.is_empty())
                .collect()
        }
    }

    #[test]
    fn writes_and_reads_go_to_the_structure_of_their_role() {
        for layout in ["uniform", "multi-lsm", "decoupled"] {
            let dir = tempfile::tempdir().unwrap();
            rt().block_on(async {
                let c = Arc::new(LocalCoordinator::open(&config(dir.path())).unwrap());
                let p = Processor::new(c.clone());
                let mut s = Session::new(ProtocolVersion::V4);
                run_ok(&p, &mut s, "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}").await;
                run_ok(&p, &mut s, &format!("CREATE TABLE ks.t (k int PRIMARY KEY) WITH layout = '{layout}'")).await;
                let table = c.catalog().table("ks", "t").unwrap().id;
                let fragment = mosaic_rows::Fragment {
                    liveness: Some(mosaic_rows::Liveness {
                        ts: mosaic_types::Timestamp::from_micros(now_micros()),
                        expiry: None,
                    }),
                    ..mosaic_rows::Fragment::new(mosaic_rows::FragmentKind::Row)
                }
                .encode();
                let tokens = [-300i64, -200, -100, 100, 200, 300];
                let writes: Vec<WireMutation> = tokens
                    .iter()
                    .map(|t| {
                        let mut key = mosaic_rows::encode_token(Token(*t)).to_vec();
                        key.push(0x05);
                        WireMutation { key, ts: 1, fragment: fragment.clone() }
                    })
                    .collect();
                c.apply(BTreeMap::from([(table, writes)]), &SplitAtZero).await.unwrap();
                let all = KeyRange { start: Vec::new(), end: None };
                let read = c.read_local(table, all.clone(), 100, &SplitAtZero).await.unwrap();
                assert_eq!(read.entries.len(), 6, "{layout}");
                assert!(read.exhausted);
                let keys: Vec<Token> = read
                    .entries
                    .iter()
                    .map(|(k, _)| mosaic_rows::decode_token(k).unwrap())
                    .collect();
                assert_eq!(keys, tokens.map(Token), "{layout}: in key order across pieces");
                // A limit inside the second piece, and one at the end of the first.
                let read = c.read_local(table, all.clone(), 4, &SplitAtZero).await.unwrap();
                assert_eq!((read.entries.len(), read.exhausted), (4, false));
                let read = c.read_local(table, all.clone(), 3, &SplitAtZero).await.unwrap();
                assert_eq!((read.entries.len(), read.exhausted), (3, false));
                // Read as if everything were primary: the redundant copies are elsewhere,
                // except in the uniform layout, which stores every role together.
                let read = c.read_local(table, all, 100, &AllPrimary).await.unwrap();
                let want = if layout == "uniform" { 6 } else { 3 };
                assert_eq!(read.entries.len(), want, "{layout}");
                let meta = c.catalog().table("ks", "t").unwrap().clone();
                let tdir = table_dir(dir.path(), &meta);
                match layout {
                    "multi-lsm" => assert!(tdir.join(format!("src-{SOURCE}")).is_dir()),
                    "decoupled" => assert!(tdir.join("log").is_dir()),
                    _ => assert!(tdir.join("CURRENT").is_file()),
                }
                assert!(c.close(Duration::from_secs(10)).await.is_empty());
            });
        }
    }

    #[test]
    fn orphan_directories_are_removed_at_start() {
        let dir = tempfile::tempdir().unwrap();
        let orphan = dir
            .path()
            .join("ks")
            .join(format!("t-{}", id_hex(Uuid::random())));
        fs::create_dir_all(&orphan).unwrap();
        let keep = dir.path().join("ks").join("notes");
        fs::create_dir_all(&keep).unwrap();
        let c = LocalCoordinator::open(&config(dir.path())).unwrap();
        assert!(!orphan.exists());
        assert!(keep.exists());
        drop(c);
    }

    #[test]
    fn a_second_process_cannot_open_a_locked_data_dir() {
        let dir = tempfile::tempdir().unwrap();
        let _c = LocalCoordinator::open(&config(dir.path())).unwrap();
        assert!(LocalCoordinator::open(&config(dir.path())).is_err());
    }
}
