//! An in-memory [`Coordinator`] and helpers to run CQL through the [`Processor`] without a
//! server: statements, values and results as Rust values.
#![allow(dead_code)]

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::pin::pin;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use bytes::Bytes;
use mosaic_cql::coordinator::{
    ClusterInfo, Coordinator, Mutation, NodeInfo, ReadCommand, ReadResult,
};
use mosaic_cql::frame::ProtocolVersion;
use mosaic_cql::frame::{
    BoundValues, Consistency, ErrorResponse, Query, QueryParameters, Request, Response, ResultBody,
    Rows, Value,
};
use mosaic_cql::processor::{Processor, Session};
use mosaic_cql::schema::{Catalog, TableId, Uuid};
use mosaic_rows::{merge_fragments, Fragment};
use mosaic_types::{CqlType, CqlValue, Token};
use parking_lot::Mutex;

/// Runs a future whose work completes without waiting (the in-memory coordinator's).
pub fn block_on<F: Future>(f: F) -> F::Output {
    let mut f = pin!(f);
    let mut cx = Context::from_waker(Waker::noop());
    loop {
        if let Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
    }
}

/// One table: engine key → merged fragment.
type MemTable = BTreeMap<Vec<u8>, Vec<u8>>;

/// Tables as sorted maps of merged fragments.
#[derive(Default)]
pub struct MemCoordinator {
    catalog: Mutex<Arc<Catalog>>,
    tables: Mutex<HashMap<TableId, MemTable>>,
    clock: AtomicI64,
    /// Local time in seconds (settable for TTL tests).
    pub now_secs: AtomicI64,
    /// Reads served.
    pub reads: AtomicI64,
}

impl MemCoordinator {
    pub fn new() -> Arc<MemCoordinator> {
        let c = MemCoordinator::default();
        c.clock.store(1_700_000_000_000_000, Ordering::SeqCst);
        c.now_secs.store(1_700_000_000, Ordering::SeqCst);
        Arc::new(c)
    }
}

impl Coordinator for MemCoordinator {
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
            let new = Fragment::decode(&m.fragment).expect("fragment");
            let merged = match table.get(&m.key) {
                Some(old) => merge_fragments(&Fragment::decode(old).expect("fragment"), &new),
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
        let tables = self.tables.lock();
        let Some(table) = tables.get(&command.table) else {
            return Ok(ReadResult {
                entries: Vec::new(),
                exhausted: true,
            });
        };
        let end = command.range.end.clone();
        let mut entries = Vec::new();
        let mut exhausted = true;
        for (k, v) in table.range(command.range.start.clone()..) {
            if end.as_ref().is_some_and(|e| k >= e) {
                break;
            }
            if entries.len() == command.limit {
                exhausted = false;
                break;
            }
            entries.push((k.clone(), v.clone()));
        }
        Ok(ReadResult { entries, exhausted })
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
            host_id: Uuid([7; 16]),
            rpc_address: "127.0.0.1".parse().expect("ip"),
            native_port: 9042,
            broadcast_address: "127.0.0.1".parse().expect("ip"),
            data_center: "datacenter1".into(),
            rack: "rack1".into(),
            tokens: vec![Token(0)],
            schema_version: self.catalog().version,
            release_version: "3.11.17".into(),
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
}

/// A processor over a fresh in-memory coordinator, with a session.
pub struct Harness {
    pub coordinator: Arc<MemCoordinator>,
    pub processor: Processor<MemCoordinator>,
    pub session: Session,
}

impl Harness {
    pub fn new() -> Harness {
        let coordinator = MemCoordinator::new();
        Harness {
            processor: Processor::new(coordinator.clone()),
            coordinator,
            session: Session::new(ProtocolVersion::V4),
        }
    }

    /// A harness with keyspace `ks` created and in use.
    pub fn with_keyspace() -> Harness {
        let mut h = Harness::new();
        h.ok("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}");
        h.ok("USE ks");
        h
    }

    pub fn request(&mut self, request: Request) -> Response {
        block_on(self.processor.process(&mut self.session, request))
    }

    pub fn query_with(
        &mut self,
        cql: &str,
        params: QueryParameters,
    ) -> Result<ResultBody, ErrorResponse> {
        match self.request(Request::Query(Query {
            query: cql.to_owned(),
            params,
        })) {
            Response::Result(r) => Ok(r),
            Response::Error(e) => Err(e),
            other => panic!("unexpected response {other:?}"),
        }
    }

    pub fn query(&mut self, cql: &str) -> Result<ResultBody, ErrorResponse> {
        self.query_with(cql, QueryParameters::new(Consistency::One))
    }

    /// Runs a statement that must succeed.
    pub fn ok(&mut self, cql: &str) -> ResultBody {
        self.query(cql).unwrap_or_else(|e| panic!("{cql}: {e:?}"))
    }

    /// Runs a statement that must fail; returns the error.
    pub fn err(&mut self, cql: &str) -> ErrorResponse {
        match self.query(cql) {
            Ok(r) => panic!("{cql}: expected an error, got {r:?}"),
            Err(e) => e,
        }
    }

    /// The replication factor of a keyspace.
    pub fn coordinator_rf(&self, keyspace: &str) -> u32 {
        use mosaic_cql::coordinator::Coordinator;
        self.coordinator
            .catalog()
            .keyspace(keyspace)
            .expect("keyspace")
            .replication
            .factor()
    }

    /// Runs a SELECT and decodes its rows with the result metadata's types.
    pub fn rows(&mut self, cql: &str) -> Vec<Vec<Option<CqlValue>>> {
        match self.ok(cql) {
            ResultBody::Rows(rows) => decode_rows(&rows),
            other => panic!("{cql}: expected rows, got {other:?}"),
        }
    }
}

/// Decodes every cell of a Rows result.
pub fn decode_rows(rows: &Rows) -> Vec<Vec<Option<CqlValue>>> {
    rows.rows
        .iter()
        .map(|row| {
            row.iter()
                .zip(&rows.metadata.columns)
                .map(|(cell, spec)| {
                    let ty = match &spec.ty {
                        mosaic_cql::frame::ColumnType::Native(t) => *t,
                        other => panic!("non-native column type {other:?}"),
                    };
                    cell.as_ref().map(|b| {
                        if b.is_empty()
                            && matches!(ty, CqlType::Text | CqlType::Blob | CqlType::Ascii)
                        {
                            return match ty {
                                CqlType::Text => CqlValue::Text(String::new()),
                                CqlType::Ascii => CqlValue::Ascii(String::new()),
                                _ => CqlValue::Blob(Vec::new()),
                            };
                        }
                        CqlValue::from_cql_bytes(ty, b).expect("decodable cell")
                    })
                })
                .collect()
        })
        .collect()
}

/// Positional bound values.
pub fn values(vs: &[CqlValue]) -> BoundValues {
    BoundValues::Positional(
        vs.iter()
            .map(|v| Value::Bytes(Bytes::from(v.to_cql_bytes())))
            .collect(),
    )
}

pub fn int(n: i32) -> Option<CqlValue> {
    Some(CqlValue::Int(n))
}

pub fn text(s: &str) -> Option<CqlValue> {
    Some(CqlValue::Text(s.to_owned()))
}
