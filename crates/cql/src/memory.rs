//! An in-memory, single-node [`Coordinator`]: tables as sorted maps of merged fragments.
//!
//! The reference implementation of the coordinator contract, small enough to read in one
//! sitting: statement tests, the statement fuzzer and (later) the cluster simulator run the
//! real statement layer over it without threads, disks or sockets. Its futures never wait,
//! so [`block_on`] drives them. Time is explicit: a settable local clock (for TTL and
//! tombstone tests) and a strictly increasing timestamp counter.

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::net::{IpAddr, Ipv4Addr};
use std::pin::pin;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use mosaic_rows::counter::{counter_key_kind, stored_shard, LeaderBatch};
use mosaic_rows::{merge_fragments, Fragment};
use mosaic_types::Token;
use parking_lot::Mutex;

use crate::coordinator::{
    cas_on_one_copy, CasDecision, CasOutcome, CasRequest, ClusterInfo, Coordinator,
    CounterIncrement, Mutation, NodeInfo, ReadCommand, ReadResult,
};
use crate::frame::{Consistency, ErrorKind, ErrorResponse};
use crate::schema::{Catalog, TableId};

fn server_error(message: String) -> ErrorResponse {
    ErrorResponse::new(ErrorKind::Server, message)
}

/// Runs a future whose work completes without waiting (the in-memory coordinator's),
/// polling it until it is ready.
pub fn block_on<F: Future>(f: F) -> F::Output {
    let mut f = pin!(f);
    let mut cx = Context::from_waker(Waker::noop());
    loop {
        if let Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
    }
}

/// Entries read: `(engine key, merged fragment)` in key order.
type Entries = Vec<(Vec<u8>, Vec<u8>)>;

/// One table: engine key → merged fragment.
type MemTable = BTreeMap<Vec<u8>, Vec<u8>>;

/// Tables as sorted maps of merged fragments.
#[derive(Default)]
pub struct MemoryCoordinator {
    catalog: Mutex<Arc<Catalog>>,
    tables: Mutex<HashMap<TableId, MemTable>>,
    clock: AtomicI64,
    /// Local time in seconds (settable for TTL tests).
    pub now_secs: AtomicI64,
    /// Reads served.
    pub reads: AtomicI64,
    /// Entries those reads returned (what a replica would have sent).
    pub entries_read: AtomicI64,
    /// Every read's command, when recording (`Some`): tests check what a statement asked.
    pub commands: Mutex<Option<Vec<ReadCommand>>>,
    /// The layout of tables created without one (`None`: the built-in default), as a
    /// server's configuration sets it.
    pub default_layout: Mutex<Option<String>>,
    /// Held by a compare-and-set from its read to its write (one copy of the data: no
    /// Paxos needed to make them one step).
    cas: Mutex<()>,
}

impl MemoryCoordinator {
    /// A coordinator with an empty schema, its clocks at November 2023.
    pub fn new() -> Arc<MemoryCoordinator> {
        let c = MemoryCoordinator::default();
        c.clock.store(1_700_000_000_000_000, Ordering::SeqCst);
        c.now_secs.store(1_700_000_000, Ordering::SeqCst);
        Arc::new(c)
    }
}

impl MemoryCoordinator {
    /// A counter row's partition head, then the row (what `stored_shard` reads).
    fn counter_entries(
        &self,
        table: TableId,
        schema: &mosaic_rows::KeySchema,
        key: &[u8],
    ) -> Result<Entries, ErrorResponse> {
        let head = schema
            .head_range_of_key(key)
            .map_err(|e| server_error(format!("a counter key does not decode: {e}")))?;
        let tables = self.tables.lock();
        let Some(t) = tables.get(&table) else {
            return Ok(Vec::new());
        };
        let mut entries: Entries = t
            .range(head.start.clone()..)
            .take_while(|(k, _)| head.end.as_ref().is_none_or(|e| *k < e))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        if let Some(v) = t.get(key) {
            entries.push((key.to_vec(), v.clone()));
        }
        Ok(entries)
    }
}

impl Coordinator for MemoryCoordinator {
    fn catalog(&self) -> Arc<Catalog> {
        self.catalog.lock().clone()
    }

    async fn update_schema<R, F>(&self, change: F) -> Result<R, ErrorResponse>
    where
        R: Send + 'static,
        F: FnOnce(&Catalog) -> Result<(Catalog, R), ErrorResponse> + Send + 'static,
    {
        let mut guard = self.catalog.lock();
        let (next, r) = change(&guard)?;
        let mut tables = self.tables.lock();
        tables.retain(|id, _| next.table_by_id(*id).is_some());
        *guard = Arc::new(next);
        Ok(r)
    }

    async fn write(&self, mutations: Vec<Mutation>, _cl: Consistency) -> Result<(), ErrorResponse> {
        let mut tables = self.tables.lock();
        for m in mutations {
            let table = tables.entry(m.table).or_default();
            let new = Fragment::decode(&m.fragment)
                .map_err(|e| server_error(format!("undecodable fragment: {e}")))?;
            let merged = match table.get(&m.key) {
                Some(old) => merge_fragments(
                    &Fragment::decode(old)
                        .map_err(|e| server_error(format!("undecodable fragment: {e}")))?,
                    &new,
                ),
                None => new,
            };
            table.insert(m.key, merged.encode());
        }
        Ok(())
    }

    async fn read(
        &self,
        command: ReadCommand,
        _cl: Consistency,
    ) -> Result<ReadResult, ErrorResponse> {
        self.reads.fetch_add(1, Ordering::SeqCst);
        if let Some(commands) = self.commands.lock().as_mut() {
            commands.push(command.clone());
        }
        // The filter needs the table's key schema to find a row's clustering components;
        // a table the catalog no longer has has no rows either.
        let catalog = self.catalog();
        let filter = command
            .filter
            .as_ref()
            .and_then(|f| Some((f, catalog.table_by_id(command.table)?.key_schema())));
        // Headers, range tombstones and static rows always pass.
        let passes = |key: &[u8]| -> Result<bool, ErrorResponse> {
            let Some((filter, schema)) = &filter else {
                return Ok(true);
            };
            filter
                .passes(schema, key)
                .map_err(|e| server_error(format!("unreadable stored key: {e}")))
        };
        let tables = self.tables.lock();
        let Some(table) = tables.get(&command.table) else {
            return Ok(ReadResult::one_copy(Vec::new(), true));
        };
        let end = command.range.end.clone();
        let mut entries = Vec::new();
        let mut exhausted = true;
        for (k, v) in table.range(command.range.start.clone()..) {
            if end.as_ref().is_some_and(|e| k >= e) {
                break;
            }
            if !passes(k)? {
                continue;
            }
            if entries.len() == command.limit {
                exhausted = false;
                break;
            }
            entries.push((k.clone(), v.clone()));
        }
        self.entries_read
            .fetch_add(entries.len() as i64, Ordering::SeqCst);
        Ok(ReadResult::one_copy(entries, exhausted))
    }

    async fn cas(
        &self,
        request: CasRequest,
        decision: Arc<dyn CasDecision>,
        serial: Consistency,
        commit: Consistency,
    ) -> Result<CasOutcome, ErrorResponse> {
        // The reads and the write never wait: the whole step runs under the lock.
        let _step = self.cas.lock();
        block_on(cas_on_one_copy(self, request, &*decision, serial, commit))
    }

    async fn counter_write(
        &self,
        increments: Vec<CounterIncrement>,
        consistency: Consistency,
    ) -> Result<(), ErrorResponse> {
        // One copy, so this node leads every counter; the lock keeps increments of one
        // counter from reading the same shard.
        let _step = self.cas.lock();
        let catalog = self.catalog();
        let host = self.local_node().host_id.0;
        let mut by_table: BTreeMap<TableId, LeaderBatch> = BTreeMap::new();
        for inc in increments {
            let meta = catalog
                .table_by_id(inc.table)
                .ok_or_else(|| server_error(format!("no table {}", inc.table)))?;
            let schema = meta.key_schema();
            let kind = counter_key_kind(&schema, &inc.key)
                .ok_or_else(|| server_error("a counter key is not a row".to_owned()))?;
            let batch = by_table
                .entry(inc.table)
                .or_insert_with(|| LeaderBatch::new(&host));
            let stored = match batch.pending(&inc.key, inc.column) {
                Some(pending) => pending,
                None => {
                    let entries = self.counter_entries(inc.table, &schema, &inc.key)?;
                    stored_shard(
                        &schema,
                        &entries,
                        &inc.key,
                        inc.column,
                        &host,
                        self.now_secs(),
                    )
                    .map_err(|e| server_error(format!("unreadable counter: {e}")))?
                }
            };
            let now = self.new_timestamp();
            batch.add(&inc.key, kind, inc.column, stored, now, inc.delta);
        }
        let mut mutations = Vec::new();
        for (table, batch) in by_table {
            for (key, ts, fragment) in batch.into_writes() {
                let token = mosaic_rows::decode_token(&key)
                    .map_err(|e| server_error(format!("a counter key has no token: {e}")))?;
                mutations.push(Mutation {
                    table,
                    token,
                    key,
                    ts,
                    fragment,
                });
            }
        }
        block_on(self.write(mutations, consistency))
    }

    async fn truncate(&self, table: TableId) -> Result<(), ErrorResponse> {
        self.tables.lock().remove(&table);
        Ok(())
    }

    fn new_timestamp(&self) -> i64 {
        self.clock.fetch_add(1, Ordering::SeqCst) + 1
    }

    fn now_secs(&self) -> i64 {
        self.now_secs.load(Ordering::SeqCst)
    }

    fn local_node(&self) -> NodeInfo {
        NodeInfo {
            host_id: mosaic_types::HostId([7; 16]),
            rpc_address: IpAddr::V4(Ipv4Addr::LOCALHOST),
            native_port: 9042,
            broadcast_address: IpAddr::V4(Ipv4Addr::LOCALHOST),
            data_center: "datacenter1".into(),
            rack: "rack1".into(),
            tokens: vec![Token(0)],
            schema_version: self.catalog().version,
            release_version: "4.0.17".into(),
            up: true,
        }
    }

    fn peers(&self) -> Vec<NodeInfo> {
        Vec::new()
    }

    fn cluster_info(&self) -> ClusterInfo {
        ClusterInfo {
            cluster_name: "Test Cluster".into(),
            partitioner: "org.apache.cassandra.dht.Murmur3Partitioner".into(),
        }
    }

    fn default_layout(&self) -> Result<mosaic_types::Layout, ErrorResponse> {
        let Some(name) = self.default_layout.lock().clone() else {
            return Ok(crate::schema::DEFAULT_LAYOUT);
        };
        mosaic_types::Layout::parse(&name).ok_or_else(|| {
            ErrorResponse::new(
                crate::frame::ErrorKind::Config,
                format!(
                    "Unknown layout '{name}'; this build stores: {}",
                    mosaic_types::Layout::valid_names()
                ),
            )
        })
    }
}
