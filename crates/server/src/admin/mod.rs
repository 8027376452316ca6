//! The admin HTTP endpoint: the cluster as this node sees it, and operator actions.
//!
//! Owns `[admin_port]`: an HTTP/1.1 server (`axum` over `hyper`) for operators and the
//! `mosaic` CLI, on loopback unless `admin_listen_address` says otherwise
//! (`Config::admin_address`). Every answer is JSON ([`api`]) except `/metrics` and the
//! status page; an unknown path or method answers 404 with `{"error": …}`. What it admits — no requests a web page
//! could forge, a bounded number at once, and with password authentication only a
//! superuser's requests that change state ([`login`]) — is [`guard`]'s.
//!
//! | request | answer |
//! |---|---|
//! | `GET /` | the status page ([`page`]): one self-contained HTML document for a browser, refreshing itself from the three GETs below |
//! | `GET /status` | JSON: every known node, UP/DOWN, load, tokens, ownership, schema |
//! | `GET /stats` | JSON: per table, its layout, the byte counters summed and per structure (tree, source tree, log), amplification, levels |
//! | `GET /activity` | JSON: requests this node coordinated (totals and latency buckets by operation) and repair's totals, which the page turns into rates |
//! | `GET /compactions` | JSON: the node engine's flushes and compactions running or due now, and whether it is idle |
//! | `GET /metrics` | Prometheus text exposition |
//! | `POST /flush`, `POST /compact` | flush or fully compact every table on this node |
//! | `POST /repair[?keyspace=K[&table=T]]` | repair the ranges this node replicates |
//! | `GET /netstats` | JSON: the streams of this node's join or leave ([`moves`]) |
//! | `POST /decommission` | stream this node's ranges to their new owners, leave the ring, stop |
//! | `POST /removenode?host_id=UUID` | take a dead node out of the ring; the survivors re-replicate its ranges |
//! | `POST /cleanup[?keyspace=K[&table=T]]` | drop the data this node no longer owns, per table and structure ([`cleanup`]) |
//!
//! Submodules: [`api`] (the JSON bodies, shared with the CLI), [`guard`] (admission),
//! [`page`] (the status page and `/activity`),
//! [`login`] (superuser credentials for requests that change state),
//! [`prometheus`] (the Prometheus
//! recorder and the series mirrored at each scrape), [`client`] (the CLI's half, which
//! `mosaic status`, `flush`, `compact`, `stats`, `compactionstats`, `repair` and `cluster
//! up` use).

pub mod api;
mod cleanup;
pub mod client;
pub mod guard;
pub mod login;
mod moves;
pub mod page;
pub mod prometheus;

use std::sync::Arc;

use axum::extract::{Query, State};
use axum::http::{header, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use tokio::net::TcpListener;
use tokio::sync::watch;

use mosaic_lsm::{CounterSnapshot, Db, LevelInfo};
use mosaic_replica::ReplicaStore;

use crate::cluster::ClusterCoordinator;
use crate::hints::HintStore;
use crate::local::LocalCoordinator;
use api::{ErrorBody, Level, NodeStatus, RepairReport, StructureStats, TableEntry, TableStats};

/// How long a repair waits for the schema to agree before it starts.
const SCHEMA_WAIT_MS: u64 = 30_000;

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
    /// Requests served at once (`[limits] admin_requests_max`).
    pub requests_max: usize,
    /// With password authentication: the check of a superuser's credentials that requests
    /// changing state need ([`login`]).
    pub login: Option<Arc<login::AdminLogin>>,
    /// Notified when the node should stop as at a signal (after a decommission).
    pub stop: Arc<tokio::sync::Notify>,
}

/// Serves admin requests until `shutdown`.
pub async fn serve(listener: TcpListener, admin: Arc<Admin>, mut shutdown: watch::Receiver<bool>) {
    let stop = async move {
        // A dropped sender also means the node is going away.
        let _ = shutdown.wait_for(|stop| *stop).await;
    };
    // The peer's address keys the failed-login limit.
    let service = router(admin).into_make_service_with_connect_info::<std::net::SocketAddr>();
    if let Err(e) = axum::serve(listener, service)
        .with_graceful_shutdown(stop)
        .await
    {
        tracing::warn!(target: "mosaic::admin", error = %e, "admin endpoint stopped");
    }
}

/// The routes of the table in the module doc.
fn router(admin: Arc<Admin>) -> Router {
    let guard = guard::Guard::new(admin.requests_max, admin.login.clone());
    Router::new()
        .route("/", get(page::page))
        .route("/activity", get(page::activity))
        .route("/status", get(status))
        .route("/stats", get(stats))
        .route("/compactions", get(compactions))
        .route("/metrics", get(render_metrics))
        .route("/flush", post(flush))
        .route("/compact", post(compact))
        .route("/repair", post(repair))
        .route("/netstats", get(moves::netstats))
        .route("/decommission", post(moves::decommission))
        .route("/removenode", post(moves::removenode))
        .route("/cleanup", post(cleanup::cleanup))
        .route("/hr/optimize", post(hr_optimize))
        .fallback(no_such_request)
        .method_not_allowed_fallback(no_such_request)
        .layer(axum::middleware::from_fn_with_state(guard, guard::admit))
        .with_state(admin)
}

/// `POST /hr/optimize?table=KS.T[&apply=true][&iterations=N][&seed=S][&replicas=K]` with a
/// workload file as the body (K: replicas each read asks, from its consistency level): HRCA's orders for the table (see `crate::hr`), applied with
/// `apply=true`.
async fn hr_optimize(
    State(admin): State<Arc<Admin>>,
    Query(params): Query<Vec<(String, String)>>,
    body: String,
) -> Response {
    let param = |name: &str| {
        params
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
    };
    let Some(name) = param("table") else {
        return error(
            StatusCode::BAD_REQUEST,
            "name the table: ?table=KEYSPACE.TABLE",
        );
    };
    let Some((ks, table)) = name.split_once('.') else {
        return error(
            StatusCode::BAD_REQUEST,
            format!("'{name}' is not KEYSPACE.TABLE"),
        );
    };
    let apply = param("apply").is_some_and(|v| v == "true");
    let mut anneal = mosaic_hetero::AnnealParams::default();
    for (key, slot) in [("iterations", &mut anneal.iterations)] {
        if let Some(v) = param(key) {
            match v.parse() {
                Ok(n) => *slot = n,
                Err(_) => return error(StatusCode::BAD_REQUEST, format!("bad {key} '{v}'")),
            }
        }
    }
    let replicas = match param("replicas").map(|v| v.parse::<usize>()) {
        None => 1,
        Some(Ok(n)) if n >= 1 => n,
        Some(_) => {
            return error(
                StatusCode::BAD_REQUEST,
                "replicas must be a positive integer",
            )
        }
    };
    if let Some(v) = param("seed") {
        match v.parse() {
            Ok(n) => anneal.seed = n,
            Err(_) => return error(StatusCode::BAD_REQUEST, format!("bad seed '{v}'")),
        }
    }
    let catalog = admin.local.current_catalog();
    let Some(meta) = catalog.table(ks, table).cloned() else {
        return error(
            StatusCode::NOT_FOUND,
            format!("Table {name} does not exist"),
        );
    };
    if meta.params.layout != mosaic_types::Layout::Heterogeneous {
        return error(
            StatusCode::BAD_REQUEST,
            format!(
                "Table {name} is stored '{}'; replica orders are chosen for heterogeneous \
                 tables (a table keeps its layout for life: create a new one WITH layout = \
                 {{'class': 'heterogeneous'}})",
                meta.params.layout
            ),
        );
    }
    let workload = match mosaic_cql::workload::parse_workload(&catalog, Some(ks), &body) {
        Ok(w) => w,
        Err(e) => return error(StatusCode::BAD_REQUEST, format!("workload: {e}")),
    };
    if workload.table != meta.id {
        return error(
            StatusCode::BAD_REQUEST,
            format!(
                "workload: its queries read {}.{}, not {name}",
                workload.keyspace, workload.table_name
            ),
        );
    }
    let Some(stats) = admin.local.table_stats(meta.id) else {
        return error(
            StatusCode::NOT_FOUND,
            format!("Table {name} is not open here"),
        );
    };
    let queries: Vec<mosaic_hetero::Query> = workload
        .queries
        .iter()
        .map(|q| mosaic_hetero::Query {
            filter: q.filter.clone(),
            limit: q.limit,
            weight: q.weight,
            replicas,
        })
        .collect();
    let mut result = crate::hr::optimize(&catalog, &meta, &stats, &queries, &anneal);
    for (cost, q) in result.queries.iter_mut().zip(&workload.queries) {
        cost.line = q.line;
    }
    if apply && result.chosen != result.current {
        let statement = crate::hr::alter_statement(&meta, &result.chosen);
        if let Err(e) = crate::hr::run_ddl(&admin.cluster, statement).await {
            return error(
                StatusCode::CONFLICT,
                format!("applying the orders failed: {e}"),
            );
        }
        result.applied = true;
    }
    Json(result).into_response()
}

/// An error answer: `code` with `{"error": message}`.
fn error(code: StatusCode, message: impl Into<String>) -> Response {
    let body = ErrorBody {
        error: message.into(),
    };
    (code, Json(body)).into_response()
}

async fn no_such_request(method: Method, uri: Uri) -> Response {
    error(
        StatusCode::NOT_FOUND,
        format!("no such admin request: {method} {uri}"),
    )
}

async fn render_metrics(State(admin): State<Arc<Admin>>) -> Response {
    let Some(handle) = &admin.metrics else {
        return error(StatusCode::NOT_FOUND, "metrics are off");
    };
    prometheus::record(&admin).await;
    (
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
        handle.render(),
    )
        .into_response()
}

/// Files and bytes per level.
fn levels(levels: &[LevelInfo]) -> Vec<Level> {
    levels
        .iter()
        .map(|l| Level {
            level: l.level,
            files: l.tables.len(),
            bytes: l.tables.iter().map(|t| t.size_bytes).sum::<u64>(),
        })
        .collect()
}

/// The cluster as this node sees it.
async fn status(State(admin): State<Arc<Admin>>) -> Json<api::Status> {
    let node = admin.cluster.node();
    let ring = node.ring();
    let shares: std::collections::HashMap<_, _> = ring.primary_share().into_iter().collect();
    let nodes = node
        .states()
        .iter()
        .map(|(s, up)| {
            // A node replacing itself at its address hibernates: down for requests, but
            // up and joining to an operator while it streams (`UJ`).
            let hibernating = s.app.status == mosaic_cluster::message::NodeStatus::Hibernate;
            (
                s,
                *up || (hibernating && node.heartbeats(s.endpoint)),
                hibernating,
            )
        })
        .map(|(s, up, hibernating)| NodeStatus {
            endpoint: s.endpoint.to_string(),
            rpc_address: s.app.rpc_address.to_string(),
            native_port: s.app.native_port,
            admin_port: s.app.admin_port,
            host_id: s.app.host_id.to_string(),
            data_center: s.app.data_center.clone(),
            rack: s.app.rack.clone(),
            up,
            load_bytes: s.app.load_bytes,
            tokens: s.app.tokens.len(),
            owns: shares.get(&s.endpoint).copied().unwrap_or(0.0),
            schema_version: mosaic_cql::schema::Uuid(s.app.schema_version).to_string(),
            state: if hibernating {
                format!("{:?}", mosaic_cluster::message::RingStatus::Joining)
            } else {
                format!("{:?}", s.app.ring_status)
            },
        })
        .collect();
    let selector = node.replica_selector();
    Json(api::Status {
        endpoint: node.endpoint().to_string(),
        nodes,
        scheduling: api::SchedulingStatus {
            replica_selection: selector.name().to_owned(),
            decisions: selector
                .decisions()
                .into_iter()
                .map(|(kind, n)| (kind.to_owned(), n))
                .collect(),
            size_oracle: node.size_oracle().unwrap_or_default().to_owned(),
            read_stage: admin.local.read_stage().map(|stage| {
                let s = stage.snapshot();
                api::ReadStageStatus {
                    local_queue: s.policy,
                    read_concurrency: s.concurrency,
                    reserved_slots: s.reserved_slots,
                    running: s.running,
                    waiting: s.waiting,
                    sized_total: s.sized_total,
                    inline_total: s.inline_total,
                    queued_total: s.queued_total,
                    dropped_total: s.dropped_total,
                    wait_micros_total: s.wait_micros_total,
                }
            }),
        },
    })
}

/// One table's stats: summed over its structures (the fields `mosaic stats` has always
/// shown, plus the layout and memtable bytes), and per structure.
fn table_stats(store: &ReplicaStore) -> TableStats {
    let structures = store.structures();
    let mut sum = CounterSnapshot::default();
    let mut memtable_bytes = 0;
    let mut merged: Vec<LevelInfo> = Vec::new();
    let mut per_structure = Vec::with_capacity(structures.len());
    for st in &structures {
        sum = sum.plus(&st.counters);
        memtable_bytes += st.memtable_bytes;
        // Levels of all structures merged by number, for the one-line summary.
        for l in &st.levels {
            match merged.iter_mut().find(|x| x.level == l.level) {
                Some(x) => x.tables.extend(l.tables.iter().cloned()),
                None => merged.push(l.clone()),
            }
        }
        per_structure.push(StructureStats {
            structure: st.structure.name(),
            counters: (&st.counters).into(),
            memtable_bytes: st.memtable_bytes,
            levels: levels(&st.levels),
        });
    }
    let tables = || merged.iter().flat_map(|l| &l.tables);
    let hot_bytes = tables().map(|t| t.local_bytes).sum::<u64>();
    let cold_bytes = tables()
        .map(|t| t.size_bytes.saturating_sub(t.local_bytes))
        .sum::<u64>();
    let (parity_bytes, cold_parity_bytes, coded_bytes) = store.elect().map_or((0, 0, 0), |e| {
        (
            e.parity().parity_bytes().unwrap_or(0),
            e.parity().cold_bytes().unwrap_or(0),
            e.coded().values().map(|c| c.bytes).sum(),
        )
    });
    TableStats {
        layout: store.layout().name().to_owned(),
        parity_bytes,
        cold_parity_bytes,
        coded_bytes,
        covered_keys: store.ec_covered_keys(),
        decoded_tables: store.elect().map_or_else(Vec::new, |e| {
            e.decoded()
                .held()
                .into_iter()
                .map(|(bytes, decoded)| api::DecodedTable { bytes, decoded })
                .collect()
        }),
        counters: (&sum).into(),
        memtable_bytes,
        levels: levels(&merged),
        hot_bytes,
        cold_bytes,
        structures: per_structure,
        replica_trees: store
            .heterogeneous_stats()
            .into_iter()
            .map(|t| api::ReplicaTree {
                index: t.index,
                order: t.order,
                reads: t.reads,
                rows_scanned: t.rows_scanned,
            })
            .collect(),
        relayouts: store
            .relayout_status()
            .into_iter()
            .map(|r| api::Relayout {
                index: r.index,
                order: r.order,
                copied: r.copied,
            })
            .collect(),
    }
}

/// Per-table counters (see [`table_stats`]).
async fn stats(State(admin): State<Arc<Admin>>) -> Json<api::Stats> {
    let tables = admin
        .local
        .each_table(|store| Ok(table_stats(store)))
        .await
        .into_iter()
        .map(|(table, r)| match r {
            Ok(stats) => TableEntry {
                table,
                stats: Some(stats),
                error: None,
            },
            Err(e) => TableEntry {
                table,
                stats: None,
                error: Some(e),
            },
        })
        .collect::<Vec<_>>();
    let mut engine = engine_stats(&admin.local);
    for c in tables
        .iter()
        .filter_map(|t| t.stats.as_ref())
        .map(|s| &s.counters)
    {
        engine.write_stalls += c.write_stalls;
        engine.write_stall_micros += c.write_stall_micros;
        engine.write_stall_timeouts += c.write_stall_timeouts;
        engine.write_slowdowns += c.write_slowdowns;
        engine.write_slowdown_micros += c.write_slowdown_micros;
        engine.gets += c.gets;
        engine.get_block_reads +=
            c.get_data_block_reads + c.get_index_block_reads + c.get_filter_block_reads;
        engine.get_bytes_read += c.get_bytes_read;
        engine.block_cache_hits += c.block_cache_hits;
        engine.block_cache_misses += c.block_cache_misses;
    }
    let h = &admin.hints;
    Json(api::Stats {
        engine: Some(engine),
        hints: Some(api::HintStats {
            pending: h.count(),
            bytes: h.bytes(),
            bytes_max_held: h.bytes_max_held(),
            bytes_max_per_host: h.bytes_max_per_host(),
            dropped: h.dropped(),
        }),
        tables,
    })
}

/// The node engine's background work now (see [`api::Compactions`]).
async fn compactions(State(admin): State<Arc<Admin>>) -> Json<api::Compactions> {
    let work = admin.local.node_engine().background_work();
    Json(api::Compactions::from(&work))
}

/// The node engine's budgets and what they hold now, and the counter cache (the stall
/// counters, kept per partition, are summed by the caller).
pub(crate) fn engine_stats(local: &LocalCoordinator) -> api::EngineStats {
    let engine = local.node_engine();
    let o = engine.options();
    let counters = local.counter_cache_stats();
    api::EngineStats {
        counter_cache_bytes: counters.bytes,
        counter_cache_capacity_bytes: counters.capacity_bytes,
        counter_cache_entries: counters.entries,
        counter_cache_hits: counters.hits,
        counter_cache_misses: counters.misses,
        partitions: engine.partitions().len(),
        memtable_bytes: engine.memtable_bytes(),
        memtable_space_bytes: o.memtable_space_bytes,
        block_cache_bytes: engine.block_cache_bytes(),
        block_cache_capacity_bytes: o.block_cache_bytes,
        cache_index_and_filter_blocks: o.cache_index_and_filter_blocks,
        wal_bytes: engine.wal_bytes(),
        worker_threads: tokio::runtime::Handle::try_current()
            .map_or(0, |h| h.metrics().num_workers()),
        flush_threads: o.flush_threads,
        compaction_threads: o.compaction_threads,
        compaction_bytes_per_sec: o.compaction_bytes_per_sec,
        ..api::EngineStats::default()
    }
}

/// The keyspace and table a `/repair` or `/cleanup` query names, or why the query is
/// refused.
fn table_scope(
    operation: &str,
    params: Vec<(String, String)>,
) -> Result<(Option<String>, Option<String>), String> {
    let mut keyspace = None;
    let mut table = None;
    for (name, value) in params {
        match name.as_str() {
            "keyspace" => keyspace = Some(value),
            "table" => table = Some(value),
            _ => {
                let pair = format!("{name}={value}");
                return Err(format!("unknown {operation} parameter {pair:?}"));
            }
        }
    }
    Ok((keyspace, table))
}

/// The tables of `catalog` in `keyspace` (all without one) named `table` (any without
/// one); a keyspace or table that does not exist is refused with 404 and why.
fn scoped_tables(
    catalog: &mosaic_cql::schema::Catalog,
    keyspace: Option<&str>,
    table: Option<&str>,
) -> Result<Vec<mosaic_types::TableId>, (StatusCode, String)> {
    if let Some(ks) = keyspace {
        if catalog.keyspace(ks).is_none() {
            return Err((
                StatusCode::NOT_FOUND,
                format!("Keyspace '{ks}' does not exist"),
            ));
        }
    }
    let tables: Vec<_> = catalog
        .tables()
        .filter(|t| keyspace.is_none_or(|k| k == t.keyspace))
        .filter(|t| table.is_none_or(|n| n == t.name))
        .map(|t| t.id)
        .collect();
    match table {
        Some(name) if tables.is_empty() => Err((
            StatusCode::NOT_FOUND,
            format!("Table {name:?} does not exist"),
        )),
        _ => Ok(tables),
    }
}

/// Repairs the tables a `/repair?keyspace=K&table=T` query names (all by default).
async fn repair(
    State(admin): State<Arc<Admin>>,
    Query(params): Query<Vec<(String, String)>>,
) -> Response {
    let (keyspace, table) = match table_scope("repair", params) {
        Ok(scope) => scope,
        Err(e) => return error(StatusCode::BAD_REQUEST, e),
    };
    // A node restarted without data learns its tables from the others first.
    if !admin
        .cluster
        .node()
        .await_schema_agreement(SCHEMA_WAIT_MS)
        .await
    {
        return error(
            StatusCode::SERVICE_UNAVAILABLE,
            "the live nodes do not agree on the schema yet; retry",
        );
    }
    let catalog = admin.local.current_catalog();
    let tables = match scoped_tables(&catalog, keyspace.as_deref(), table.as_deref()) {
        Ok(tables) => tables,
        Err((code, why)) => return error(code, why),
    };
    let report = admin.cluster.node().repair(&tables).await;
    let code = if report.complete() {
        StatusCode::OK
    } else {
        tracing::warn!(
            target: "mosaic::admin",
            ranges_failed = report.ranges_failed,
            shards_failed = report.shards_failed,
            errors = ?report.errors,
            "repair incomplete"
        );
        StatusCode::INTERNAL_SERVER_ERROR
    };
    let body = RepairReport {
        tables: tables.len(),
        ranges: report.ranges,
        ranges_failed: report.ranges_failed,
        leaves: report.leaves,
        leaves_mismatched: report.leaves_mismatched,
        entries_streamed: report.entries_streamed,
        bytes_streamed: report.bytes_streamed,
        shards_rebuilt: report.shards_rebuilt,
        shards_failed: report.shards_failed,
        paxos_repaired: report.paxos_repaired,
        complete: report.complete(),
        errors: report.errors,
    };
    (code, Json(body)).into_response()
}

async fn flush(State(admin): State<Arc<Admin>>) -> Response {
    table_op(&admin.local, "flush", ReplicaStore::flush, Db::flush).await
}

async fn compact(State(admin): State<Arc<Admin>>) -> Response {
    table_op(&admin.local, "compact", ReplicaStore::compact, Db::compact).await
}

/// Runs `op` on every table and `index_op` on every secondary index (a compaction also
/// drops the stale entries its base rows prove); 500 if it failed on any (each failure is
/// logged).
async fn table_op(
    local: &LocalCoordinator,
    what: &str,
    op: fn(&ReplicaStore) -> mosaic_lsm::Result<()>,
    index_op: fn(&Db) -> mosaic_lsm::Result<()>,
) -> Response {
    let mut results = local.each_table(op).await;
    let tables = results.len();
    results.extend(local.each_index(index_op).await);
    let failed: Vec<api::TableFailure> = results
        .iter()
        .filter_map(|(table, r)| {
            let error = r.as_ref().err()?;
            tracing::error!(target: "mosaic::storage", operation = what, %table, %error, "table operation failed");
            Some(api::TableFailure {
                table: table.clone(),
                error: error.clone(),
            })
        })
        .collect();
    let code = if failed.is_empty() {
        StatusCode::OK
    } else {
        StatusCode::INTERNAL_SERVER_ERROR
    };
    let body = api::TableOpReport {
        operation: what.to_owned(),
        tables,
        failed,
    };
    (code, Json(body)).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn a_repair_query_names_a_keyspace_and_table_or_is_refused() {
        assert_eq!(table_scope("repair", params(&[])), Ok((None, None)));
        assert_eq!(
            table_scope("repair", params(&[("keyspace", "ks"), ("table", "t")])),
            Ok((Some("ks".to_owned()), Some("t".to_owned())))
        );
        assert_eq!(
            table_scope("cleanup", params(&[("keyspace", "ks"), ("tabel", "t")])),
            Err("unknown cleanup parameter \"tabel=t\"".to_owned())
        );
    }
}
