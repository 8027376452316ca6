//! The admin HTTP endpoint: the cluster as this node sees it, and operator actions.
//!
//! Owns `[admin_port]`: a deliberately small HTTP/1.1 server (one request per connection,
//! request head ≤ 8 KiB, no body) for operators and the `mosaic` CLI, on the node's listen
//! address:
//!
//! | request | answer |
//! |---|---|
//! | `GET /status` | JSON: every known node, UP/DOWN, load, tokens, ownership, schema |
//! | `GET /stats` | JSON: per table, its layout, the byte counters summed and per structure (tree, source tree, log), amplification, levels |
//! | `GET /metrics` | Prometheus text exposition |
//! | `POST /flush`, `POST /compact` | flush or fully compact every table on this node |
//! | `POST /repair[?keyspace=K[&table=T]]` | repair the ranges this node replicates |
//!
//! The client half ([`get`], [`post`]) is what `mosaic status`, `flush`, `compact`,
//! `stats` and `cluster up` use.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::sync::watch;

use mosaic_lsm::CounterSnapshot;
use mosaic_replica::{ReplicaStore, StructureStats};

use crate::cluster::ClusterCoordinator;
use crate::hints::HintStore;
use crate::local::LocalCoordinator;

/// Largest request head accepted.
const HEAD_MAX: usize = 8 << 10;
/// How long a repair waits for the schema to agree before it starts.
const SCHEMA_WAIT_MS: u64 = 30_000;
/// How long a client may take to send its request.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// What the admin endpoint serves from.
pub struct Admin {
    /// Local storage.
    pub local: Arc<LocalCoordinator>,
    /// The cluster coordinator (membership and ring).
    pub cluster: Arc<ClusterCoordinator>,
    /// Hints held for other nodes.
    pub hints: Arc<HintStore>,
    /// Renders Prometheus metrics.
    pub metrics: Option<metrics_exporter_prometheus::PrometheusHandle>,
}

/// Serves admin requests until `shutdown`.
pub async fn serve(listener: TcpListener, admin: Arc<Admin>, mut shutdown: watch::Receiver<bool>) {
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                if let Ok((stream, _)) = accepted {
                    let admin = admin.clone();
                    tokio::spawn(async move {
                        let _ = handle(stream, &admin).await;
                    });
                }
            }
            _ = shutdown.changed() => return,
        }
    }
}

async fn handle(mut stream: tokio::net::TcpStream, admin: &Admin) -> std::io::Result<()> {
    let mut head = Vec::with_capacity(512);
    let mut buf = [0u8; 1024];
    let read_head = async {
        while !head.windows(4).any(|w| w == b"\r\n\r\n") {
            let n = stream.read(&mut buf).await?;
            if n == 0 || head.len() + n > HEAD_MAX {
                return Err(std::io::Error::other("bad request head"));
            }
            head.extend_from_slice(buf.get(..n).unwrap_or_default());
        }
        Ok(())
    };
    if tokio::time::timeout(REQUEST_TIMEOUT, read_head)
        .await
        .is_err()
    {
        return Ok(());
    }
    let text = String::from_utf8_lossy(&head);
    let mut parts = text.split_whitespace();
    let (method, path) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    let (code, content_type, body) = route(admin, method, path).await;
    let response = format!(
        "HTTP/1.1 {code}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(response.as_bytes()).await?;
    stream.write_all(body.as_bytes()).await?;
    stream.shutdown().await
}

async fn route(admin: &Admin, method: &str, path: &str) -> (&'static str, &'static str, String) {
    const JSON: &str = "application/json";
    match (method, path) {
        ("GET", "/status") => ("200 OK", JSON, status(admin).to_string()),
        ("GET", "/stats") => ("200 OK", JSON, stats(&admin.local).await.to_string()),
        ("GET", "/metrics") => match &admin.metrics {
            Some(h) => {
                record_gauges(admin).await;
                ("200 OK", "text/plain; version=0.0.4", h.render())
            }
            None => (
                "404 Not Found",
                JSON,
                json!({"error": "metrics are off"}).to_string(),
            ),
        },
        ("POST", p) if p == "/repair" || p.starts_with("/repair?") => repair(admin, p).await,
        ("POST", "/flush") => table_op(&admin.local, "flush", ReplicaStore::flush).await,
        ("POST", "/compact") => table_op(&admin.local, "compact", ReplicaStore::compact).await,
        _ => (
            "404 Not Found",
            JSON,
            json!({"error": format!("no such admin request: {method} {path}")}).to_string(),
        ),
    }
}

/// Sets the gauges that mirror counters kept elsewhere (storage, hints, membership).
async fn record_gauges(admin: &Admin) {
    let node = admin.cluster.node();
    let c = node.counters();
    metrics::gauge!("mosaic_hints_stored_total").set(c.hints_stored as f64);
    metrics::gauge!("mosaic_hints_replayed_total").set(c.hints_replayed as f64);
    metrics::gauge!("mosaic_hints_failed_total").set(c.hints_failed as f64);
    metrics::gauge!("mosaic_hints_pending").set(admin.hints.count() as f64);
    metrics::gauge!("mosaic_repair_ranges_total").set(c.repair_ranges as f64);
    metrics::gauge!("mosaic_repair_entries_streamed_total").set(c.repair_entries as f64);
    let states = node.states();
    let up = states.iter().filter(|(_, up)| *up).count();
    metrics::gauge!("mosaic_nodes", "state" => "up").set(up as f64);
    metrics::gauge!("mosaic_nodes", "state" => "down").set((states.len() - up) as f64);
    let tables = admin
        .local
        .each_table(|store| Ok((store.layout().name(), store.structures())))
        .await;
    let mut sum = CounterSnapshot::default();
    let mut per_layout: std::collections::BTreeMap<(&str, String), (CounterSnapshot, u64)> =
        std::collections::BTreeMap::new();
    for (table, (layout, structures)) in tables
        .iter()
        .filter_map(|(n, r)| r.as_ref().ok().map(|c| (n, c)))
    {
        for st in structures {
            record_structure(table, layout, st);
            // Per layout and structure kind (source trees together): the totals the
            // layouts are compared by.
            let kind = match st.structure {
                mosaic_replica::Structure::Source(_) => "source".to_owned(),
                other => other.name(),
            };
            let (c, mem) = per_layout.entry((layout, kind)).or_default();
            *c = c.plus(&st.counters);
            *mem += st.memtable_bytes as u64;
        }
    }
    for ((layout, kind), (c, mem)) in &per_layout {
        let labels = [("layout", layout.to_string()), ("structure", kind.clone())];
        for (what, v) in counter_fields(c) {
            metrics::gauge!(format!("mosaic_layout_{what}"), &labels).set(v as f64);
        }
        metrics::gauge!("mosaic_layout_memtable_bytes", &labels).set(*mem as f64);
    }
    for c in tables
        .iter()
        .filter_map(|(_, r)| r.as_ref().ok())
        .flat_map(|(_, structures)| structures.iter().map(|s| &s.counters))
    {
        sum = sum.plus(c);
    }
    for (what, v) in [
        ("user_written", sum.user_bytes_written),
        ("wal_written", sum.wal_bytes_written),
        ("flush_written", sum.flush_bytes_written),
        ("compaction_written", sum.compaction_bytes_written),
        ("compaction_read", sum.compaction_bytes_read),
        ("split_written", sum.split_bytes_written),
        ("merge_sort_written", sum.merge_sort_bytes_written),
        ("get_read", sum.get_bytes_read),
        ("scan_read", sum.scan_bytes_read),
    ] {
        metrics::gauge!("mosaic_storage_bytes_total", "kind" => what).set(v as f64);
    }
    metrics::gauge!("mosaic_storage_gets_total").set(sum.gets as f64);
    metrics::gauge!("mosaic_storage_write_amplification").set(sum.write_amplification());
}

/// The counters a structure reports, by metric name (totals since the node started).
fn counter_fields(c: &CounterSnapshot) -> [(&'static str, u64); 13] {
    [
        ("user_bytes_written_total", c.user_bytes_written),
        ("flush_bytes_written_total", c.flush_bytes_written),
        ("compaction_bytes_written_total", c.compaction_bytes_written),
        ("compaction_bytes_read_total", c.compaction_bytes_read),
        ("get_bytes_read_total", c.get_bytes_read),
        ("gets_total", c.gets),
        ("get_tables_probed_total", c.get_tables_probed),
        ("flushes_total", c.flushes),
        ("compactions_total", c.compactions),
        ("split_bytes_written_total", c.split_bytes_written),
        ("merge_sort_bytes_written_total", c.merge_sort_bytes_written),
        ("splits_total", c.splits),
        ("merge_sorts_total", c.merge_sorts),
    ]
}

/// Sets one table structure's gauges.
fn record_structure(table: &str, layout: &str, st: &StructureStats) {
    let labels = [
        ("table", table.to_owned()),
        ("layout", layout.to_owned()),
        ("structure", st.structure.name()),
    ];
    for (what, v) in counter_fields(&st.counters) {
        metrics::gauge!(format!("mosaic_table_{what}"), &labels).set(v as f64);
    }
    metrics::gauge!("mosaic_table_memtable_bytes", &labels).set(st.memtable_bytes as f64);
}

/// One structure's (or a sum's) counters as `/stats` reports them.
fn counters_json(c: &CounterSnapshot) -> Value {
    json!({
        "user_bytes_written": c.user_bytes_written,
        "wal_bytes_written": c.wal_bytes_written,
        "flush_bytes_written": c.flush_bytes_written,
        "compaction_bytes_written": c.compaction_bytes_written,
        "compaction_bytes_read": c.compaction_bytes_read,
        "get_bytes_read": c.get_bytes_read,
        "scan_bytes_read": c.scan_bytes_read,
        "gets": c.gets,
        "get_tables_probed": c.get_tables_probed,
        "flushes": c.flushes,
        "compactions": c.compactions,
        "split_bytes_written": c.split_bytes_written,
        "merge_sort_bytes_written": c.merge_sort_bytes_written,
        "splits": c.splits,
        "merge_sorts": c.merge_sorts,
        "write_amplification": c.write_amplification(),
        "tables_probed_per_get": c.tables_probed_per_get(),
        "bytes_read_per_get": c.bytes_read_per_get(),
    })
}

/// Files and bytes per level.
fn levels_json(levels: &[mosaic_lsm::LevelInfo]) -> Vec<Value> {
    levels
        .iter()
        .map(|l| {
            json!({
                "level": l.level,
                "files": l.tables.len(),
                "bytes": l.tables.iter().map(|t| t.size_bytes).sum::<u64>(),
            })
        })
        .collect()
}

/// The cluster as this node sees it.
fn status(admin: &Admin) -> Value {
    let node = admin.cluster.node();
    let ring = node.ring();
    let shares: std::collections::HashMap<_, _> = ring.primary_share().into_iter().collect();
    let nodes: Vec<Value> = node
        .states()
        .iter()
        .map(|(s, up)| {
            json!({
                "endpoint": s.endpoint.to_string(),
                "rpc_address": s.app.rpc_address.to_string(),
                "native_port": s.app.native_port,
                "admin_port": s.app.admin_port,
                "host_id": mosaic_cql::schema::Uuid(s.app.host_id).to_string(),
                "data_center": s.app.data_center,
                "rack": s.app.rack,
                "up": up,
                "load_bytes": s.app.load_bytes,
                "tokens": s.app.tokens.len(),
                "owns": shares.get(&s.endpoint).copied().unwrap_or(0.0),
                "schema_version": mosaic_cql::schema::Uuid(s.app.schema_version).to_string(),
            })
        })
        .collect();
    json!({ "endpoint": node.endpoint().to_string(), "nodes": nodes })
}

/// Per-table counters: summed over the table's structures (the fields `mosaic stats`
/// has always shown, plus the layout and memtable bytes), and per structure.
async fn stats(local: &LocalCoordinator) -> Value {
    let tables = local
        .each_table(|store| {
            let structures = store.structures();
            let mut sum = CounterSnapshot::default();
            let mut memtable_bytes = 0;
            let mut levels: Vec<mosaic_lsm::LevelInfo> = Vec::new();
            let mut per_structure = Vec::with_capacity(structures.len());
            for st in &structures {
                sum = sum.plus(&st.counters);
                memtable_bytes += st.memtable_bytes;
                // Levels of all structures merged by number, for the one-line summary.
                for l in &st.levels {
                    match levels.iter_mut().find(|x| x.level == l.level) {
                        Some(x) => x.tables.extend(l.tables.iter().cloned()),
                        None => levels.push(l.clone()),
                    }
                }
                let mut v = counters_json(&st.counters);
                v["structure"] = json!(st.structure.name());
                v["memtable_bytes"] = json!(st.memtable_bytes);
                v["levels"] = json!(levels_json(&st.levels));
                per_structure.push(v);
            }
            let mut v = counters_json(&sum);
            v["layout"] = json!(store.layout().name());
            v["memtable_bytes"] = json!(memtable_bytes);
            v["levels"] = json!(levels_json(&levels));
            v["structures"] = json!(per_structure);
            Ok(v)
        })
        .await;
    let tables: Vec<Value> = tables
        .into_iter()
        .map(|(name, r)| match r {
            Ok(v) => json!({"table": name, "stats": v}),
            Err(e) => json!({"table": name, "error": e}),
        })
        .collect();
    json!({ "tables": tables })
}

/// Repairs the tables a `/repair?keyspace=K&table=T` query names (all by default).
async fn repair(admin: &Admin, path: &str) -> (&'static str, &'static str, String) {
    const JSON: &str = "application/json";
    let query = path.split_once('?').map_or("", |(_, q)| q);
    let mut keyspace = None;
    let mut table = None;
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        match pair.split_once('=') {
            Some(("keyspace", v)) => keyspace = Some(v.to_owned()),
            Some(("table", v)) => table = Some(v.to_owned()),
            _ => {
                return (
                    "400 Bad Request",
                    JSON,
                    json!({"error": format!("unknown repair parameter {pair:?}")}).to_string(),
                )
            }
        }
    }
    // A node restarted without data learns its tables from the others first.
    if !admin
        .cluster
        .node()
        .await_schema_agreement(SCHEMA_WAIT_MS)
        .await
    {
        let e = "the live nodes do not agree on the schema yet; retry";
        return (
            "503 Service Unavailable",
            JSON,
            json!({ "error": e }).to_string(),
        );
    }
    let catalog = admin.local.current_catalog();
    if let Some(ks) = &keyspace {
        if catalog.keyspace(ks).is_none() {
            let e = format!("Keyspace '{ks}' does not exist");
            return ("404 Not Found", JSON, json!({ "error": e }).to_string());
        }
    }
    let tables: Vec<_> = catalog
        .tables()
        .filter(|t| keyspace.as_ref().is_none_or(|k| *k == t.keyspace))
        .filter(|t| table.as_ref().is_none_or(|n| *n == t.name))
        .map(|t| t.id.0)
        .collect();
    if tables.is_empty() && table.is_some() {
        let e = format!("Table {:?} does not exist", table.unwrap_or_default());
        return ("404 Not Found", JSON, json!({ "error": e }).to_string());
    }
    let report = admin.cluster.node().repair(&tables).await;
    let body = json!({
        "tables": tables.len(),
        "ranges": report.ranges,
        "ranges_failed": report.ranges_failed,
        "leaves": report.leaves,
        "leaves_mismatched": report.leaves_mismatched,
        "entries_streamed": report.entries_streamed,
        "bytes_streamed": report.bytes_streamed,
        "errors": report.errors,
        "complete": report.complete(),
    })
    .to_string();
    let code = if report.complete() {
        "200 OK"
    } else {
        "500 Internal Server Error"
    };
    (code, JSON, body)
}

async fn table_op(
    local: &LocalCoordinator,
    what: &str,
    op: fn(&ReplicaStore) -> mosaic_lsm::Result<()>,
) -> (&'static str, &'static str, String) {
    let results = local.each_table(op).await;
    let failed: Vec<Value> = results
        .iter()
        .filter_map(|(name, r)| r.as_ref().err().map(|e| json!({"table": name, "error": e})))
        .collect();
    let body = json!({"operation": what, "tables": results.len(), "failed": failed}).to_string();
    let code = if failed.is_empty() {
        "200 OK"
    } else {
        "500 Internal Server Error"
    };
    (code, "application/json", body)
}

/// Sends `method path` to the admin endpoint at `addr`; the JSON answer of a 200.
fn request(addr: SocketAddr, method: &str, path: &str, timeout: Duration) -> Result<Value> {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(2))
        .with_context(|| format!("connecting to the admin port {addr}"))?;
    s.set_read_timeout(Some(timeout))?;
    s.set_write_timeout(Some(timeout))?;
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )?;
    let mut response = Vec::new();
    s.read_to_end(&mut response)
        .with_context(|| format!("reading the answer of {addr}"))?;
    let text = String::from_utf8_lossy(&response);
    let (head, body) = text
        .split_once("\r\n\r\n")
        .with_context(|| format!("malformed answer from {addr}"))?;
    let status = head.lines().next().unwrap_or_default();
    let value: Value = serde_json::from_str(body).unwrap_or(Value::String(body.to_owned()));
    if !status.contains(" 200 ") {
        bail!("{addr} answered {status}: {value}");
    }
    Ok(value)
}

/// `GET path` on the admin endpoint at `addr`.
pub fn get(addr: SocketAddr, path: &str) -> Result<Value> {
    request(addr, "GET", path, Duration::from_secs(10))
}

/// `POST path` on the admin endpoint at `addr` (operations may take long).
pub fn post(addr: SocketAddr, path: &str) -> Result<Value> {
    request(addr, "POST", path, Duration::from_secs(3600))
}
