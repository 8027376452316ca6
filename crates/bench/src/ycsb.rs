//! `mosaic-bench load|run`: a YCSB core workload executed over CQL.
//!
//! Schema (YCSB's Cassandra binding): keyspace `ycsb` (SimpleStrategy, RF given at load)
//! and table `usertable (y_id text PRIMARY KEY, field0 text, …)`, with Mosaic's `layout`
//! option when asked. Statements are prepared once: read `SELECT * … WHERE y_id = ?`,
//! insert of every field, update of one field (one statement per field), scan
//! `SELECT * … WHERE token(y_id) >= token(?) LIMIT ?`; a read-modify-write is a read then
//! an update of one field, timed as one operation.
//!
//! Loops: closed (each of `concurrency` workers sends its next request when the previous
//! one answers) or open (`rate`: operation i is due at start + i/rate, and its latency is
//! measured from that intended start, so a stalled server shows in the percentiles instead
//! of silently slowing the client down — YCSB's "intended" latency). Latency goes to HDR
//! histograms in microseconds, bounded at one hour; failures are counted by kind and kept
//! out of the histograms. A read that finds no row counts as a `not_found` error.

use std::collections::btree_map::Entry;
use std::collections::{BTreeMap, HashMap};
use std::io::IsTerminal;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context};
use hdrhistogram::Histogram;
use rand::rngs::StdRng;
use rand::SeedableRng;
use scylla::client::execution_profile::ExecutionProfile;
use scylla::client::session::Session;
use scylla::client::session_builder::SessionBuilder;
use scylla::cluster::{ClusterState, NodeRef};
use scylla::errors::{ExecutionError, RequestAttemptError};
use scylla::policies::load_balancing::{
    DefaultPolicy, FallbackPlan, LoadBalancingPolicy, NodeIdentifier, RoutingInfo,
    SingleTargetLoadBalancingPolicy,
};
use scylla::routing::Shard;
use scylla::statement::prepared::PreparedStatement;
use scylla::statement::Consistency;
use serde_json::{json, Value};
use uuid::Uuid;

use crate::monitor::{Monitor, TimelinePoint};
use crate::osio::IoCounters;
use crate::workload::{field_name, Chooser, Operation, Workload};

mod ops;
mod report;

use ops::{insert, operation, Failed, Values};

pub(crate) use report::Tally;
pub use report::{OperationKind, OperationStats, Report};

/// The keyspace and table YCSB uses.
pub const KEYSPACE: &str = "ycsb";
/// The table YCSB uses.
pub const TABLE: &str = "usertable";

/// Largest latency the histograms hold: one hour, in microseconds.
const LATENCY_US_MAX: u64 = 3_600_000_000;

/// Which phase to run.
#[derive(Clone, Debug)]
pub enum Phase {
    /// Create the schema if absent, then insert records `0..records`.
    Load {
        /// Replication factor of the keyspace, if it is created.
        rf: u32,
        /// Mosaic's `layout` table option, if the table is created.
        layout: Option<String>,
    },
    /// Run `operations` operations of the workload over the loaded records.
    Run {
        /// Operations to run.
        operations: u64,
    },
}

/// Everything a phase needs.
#[derive(Clone, Debug)]
pub struct BenchConfig {
    /// `host[:port]` of the contact points (port 9042 when absent).
    pub hosts: Vec<String>,
    /// The workload.
    pub workload: Workload,
    /// Records loaded (and, for `run`, the records the load phase loaded).
    pub records: u64,
    /// The phase.
    pub phase: Phase,
    /// Requests in flight.
    pub concurrency: usize,
    /// Consistency of reads and scans.
    pub read_cl: Consistency,
    /// Consistency of inserts and updates.
    pub write_cl: Consistency,
    /// Open loop at this many operations per second; closed loop when `None`.
    pub rate: Option<f64>,
    /// Server processes whose `/proc/PID/io` is read before and after the phase.
    pub pids: Vec<u32>,
    /// Print a progress line on stderr.
    pub progress: bool,
    /// Seed of the workers' random number generators.
    pub seed: u64,
    /// Tables the records are spread over (record `n` lives in table `n % tables`; see
    /// [`table_name`]).
    pub tables: usize,
    /// Send each keyed request to the key's primary replica ([`PrimaryFirst`]) instead
    /// of a random replica, and each scan to its start key's primary.
    pub primary_routing: bool,
}

/// The name of table `i` of `tables`: `usertable` when there is one (YCSB's), else
/// `usertable0`, `usertable1`, ….
pub fn table_name(i: usize, tables: usize) -> String {
    if tables <= 1 {
        TABLE.to_owned()
    } else {
        format!("{TABLE}{i}")
    }
}

/// Parses a consistency level name (`ONE`, `quorum`, `LOCAL_ONE`, …).
pub fn parse_consistency(s: &str) -> anyhow::Result<Consistency> {
    Ok(match s.to_ascii_uppercase().as_str() {
        "ANY" => Consistency::Any,
        "ONE" => Consistency::One,
        "TWO" => Consistency::Two,
        "THREE" => Consistency::Three,
        "QUORUM" => Consistency::Quorum,
        "ALL" => Consistency::All,
        "LOCAL_QUORUM" => Consistency::LocalQuorum,
        "EACH_QUORUM" => Consistency::EachQuorum,
        "LOCAL_ONE" => Consistency::LocalOne,
        _ => bail!("unknown consistency level {s:?}"),
    })
}

/// The prepared statements of a phase.
struct Statements {
    /// The table, unqualified (for token lookups).
    table: String,
    read: PreparedStatement,
    insert: PreparedStatement,
    update: Vec<PreparedStatement>,
    scan: PreparedStatement,
    /// With primary routing: the scan once per node, each bound to that node, by host id.
    /// A driver cannot route `token(y_id) >= token(?)` itself (the statement has no
    /// partition-key bind marker), so the client looks up the start key's primary.
    scan_at: HashMap<Uuid, PreparedStatement>,
}

impl Statements {
    /// The statements of every table, by table index.
    async fn prepare_all(session: &Session, config: &BenchConfig) -> anyhow::Result<Vec<Self>> {
        let mut all = Vec::with_capacity(config.tables);
        for i in 0..config.tables {
            let mut statements =
                Self::prepare(session, config, &table_name(i, config.tables)).await?;
            if config.primary_routing {
                statements.bind_scans(session);
            }
            all.push(statements);
        }
        Ok(all)
    }

    async fn prepare(
        session: &Session,
        config: &BenchConfig,
        table_short: &str,
    ) -> anyhow::Result<Statements> {
        let fields = config.workload.field_count;
        let names: Vec<String> = (0..fields).map(field_name).collect();
        let table = format!("{KEYSPACE}.{table_short}");
        let prepare = |cql: String, cl: Consistency| async move {
            let mut s = session
                .prepare(cql.clone())
                .await
                .with_context(|| format!("preparing {cql}"))?;
            s.set_consistency(cl);
            // The result's columns are the ones PREPARE returned (the schema does not change
            // during a run): rows come without metadata, as the Java and Python drivers
            // ask for them too.
            s.set_use_cached_result_metadata(true);
            anyhow::Ok(s)
        };
        let (r, w) = (config.read_cl, config.write_cl);
        let mut update = Vec::with_capacity(fields);
        for name in &names {
            update.push(prepare(format!("UPDATE {table} SET {name} = ? WHERE y_id = ?"), w).await?);
        }
        Ok(Statements {
            table: table_short.to_owned(),
            scan_at: HashMap::new(),
            read: prepare(format!("SELECT * FROM {table} WHERE y_id = ?"), r).await?,
            insert: prepare(
                format!(
                    "INSERT INTO {table} (y_id, {}) VALUES (?{})",
                    names.join(", "),
                    ", ?".repeat(fields)
                ),
                w,
            )
            .await?,
            update,
            scan: prepare(
                format!("SELECT * FROM {table} WHERE token(y_id) >= token(?) LIMIT ?"),
                r,
            )
            .await?,
        })
    }

    /// Makes one copy of the scan per node the driver knows, each sent only to that node.
    fn bind_scans(&mut self, session: &Session) {
        for node in session.get_cluster_state().get_nodes_info() {
            let profile = ExecutionProfile::builder()
                .load_balancing_policy(SingleTargetLoadBalancingPolicy::new(
                    NodeIdentifier::HostId(node.host_id),
                    None,
                ))
                .build();
            let mut scan = self.scan.clone();
            scan.set_execution_profile_handle(Some(profile.into_handle()));
            self.scan_at.insert(node.host_id, scan);
        }
    }

    /// The scan to send for a scan starting at `key`: with primary routing, the copy bound
    /// to the key's primary replica while the driver is connected to it; otherwise (or
    /// when the token cannot be computed) the one the driver routes itself.
    fn scan_for(&self, session: &Session, key: &str) -> &PreparedStatement {
        if self.scan_at.is_empty() {
            return &self.scan;
        }
        let cluster = session.get_cluster_state();
        let Ok(token) = cluster.compute_token(KEYSPACE, &self.table, &(key,)) else {
            return &self.scan;
        };
        cluster
            .get_token_endpoints(KEYSPACE, &self.table, token)
            .first()
            .filter(|(node, _)| node.is_enabled() && node.is_connected())
            .and_then(|(node, _)| self.scan_at.get(&node.host_id))
            .unwrap_or(&self.scan)
    }
}

/// A failed operation's kind, for the error counts: the server's error (`ReadTimeout`,
/// `Unavailable`, `Overloaded`, …), or the client's (`client_timeout`, `no_connection`,
/// `broken_connection`, `other`).
pub(crate) fn error_kind(e: &ExecutionError) -> String {
    match e {
        ExecutionError::LastAttemptError(RequestAttemptError::DbError(db, _)) => {
            // The variant name, without its fields.
            let debug = format!("{db:?}");
            debug
                .split(|c: char| !c.is_alphanumeric())
                .next()
                .unwrap_or("server_error")
                .to_string()
        }
        ExecutionError::LastAttemptError(RequestAttemptError::BrokenConnectionError(_)) => {
            "broken_connection".into()
        }
        ExecutionError::RequestTimeout(_) => "client_timeout".into(),
        ExecutionError::ConnectionPoolError(_) => "no_connection".into(),
        _ => "other".into(),
    }
}

/// A load-balancing policy sending each keyed request to its key's first replica in ring
/// order (its primary) while that node is up; everything else (unkeyed requests, the
/// fallback when the primary fails) is the driver's default policy.
#[derive(Debug)]
pub struct PrimaryFirst {
    default: Arc<dyn LoadBalancingPolicy>,
}

impl PrimaryFirst {
    /// The policy, over the driver's default one.
    pub fn new() -> PrimaryFirst {
        PrimaryFirst {
            default: DefaultPolicy::builder().build(),
        }
    }
}

impl Default for PrimaryFirst {
    fn default() -> Self {
        PrimaryFirst::new()
    }
}

impl LoadBalancingPolicy for PrimaryFirst {
    fn pick<'a>(
        &'a self,
        request: &'a RoutingInfo,
        cluster: &'a ClusterState,
    ) -> Option<(NodeRef<'a>, Option<Shard>)> {
        if let (Some(token), Some(table)) = (request.token, request.table) {
            let replicas = cluster.get_token_endpoints(table.ks_name(), table.table_name(), token);
            if let Some((primary, shard)) = replicas.first() {
                let node = cluster
                    .get_nodes_info()
                    .iter()
                    .find(|n| n.host_id == primary.host_id && n.is_enabled() && n.is_connected());
                if let Some(node) = node {
                    return Some((node, Some(*shard)));
                }
            }
        }
        self.default.pick(request, cluster)
    }

    fn fallback<'a>(
        &'a self,
        request: &'a RoutingInfo,
        cluster: &'a ClusterState,
    ) -> FallbackPlan<'a> {
        self.default.fallback(request, cluster)
    }

    fn name(&self) -> String {
        "PrimaryFirst".to_owned()
    }
}

/// Connects to the contact points; with `primary_routing`, keyed requests go to their
/// key's primary replica ([`PrimaryFirst`]).
pub async fn connect_routed(hosts: &[String], primary_routing: bool) -> anyhow::Result<Session> {
    if !primary_routing {
        return connect(hosts).await;
    }
    let profile = ExecutionProfile::builder()
        .load_balancing_policy(Arc::new(PrimaryFirst::new()))
        .build();
    session_builder(hosts)
        .default_execution_profile_handle(profile.into_handle())
        .build()
        .await
        .with_context(|| format!("connecting to {}", hosts.join(",")))
}

/// A session builder for the contact points (port 9042 when a host names none).
fn session_builder(hosts: &[String]) -> SessionBuilder {
    let hosts: Vec<String> = hosts
        .iter()
        .map(|h| {
            if h.contains(':') {
                h.clone()
            } else {
                format!("{h}:9042")
            }
        })
        .collect();
    crate::security::apply(SessionBuilder::new().known_nodes(&hosts))
}

/// Connects to the contact points.
pub async fn connect(hosts: &[String]) -> anyhow::Result<Session> {
    session_builder(hosts)
        .build()
        .await
        .with_context(|| format!("connecting to {}", hosts.join(",")))
}

/// The CQL value of `layout`: `NAME` as a string, `NAME:key=value,…` as the map form
/// (`{'class': 'NAME', 'key': 'value', …}`).
fn layout_literal(layout: &str) -> anyhow::Result<String> {
    let plain = |x: &str| {
        !x.is_empty()
            && x.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    };
    let (name, options) = match layout.split_once(':') {
        Some((name, options)) => (name, Some(options)),
        None => (layout, None),
    };
    if !plain(name) {
        bail!("layout {layout:?}: expected NAME or NAME:key=value,…");
    }
    let Some(options) = options else {
        return Ok(format!("'{name}'"));
    };
    let mut map = format!("{{'class': '{name}'");
    for pair in options.split(',') {
        match pair.split_once('=') {
            Some((k, v)) if plain(k) && plain(v) => map.push_str(&format!(", '{k}': '{v}'")),
            _ => bail!("layout {layout:?}: option {pair:?} is not key=value"),
        }
    }
    map.push('}');
    Ok(map)
}

async fn create_schema(
    session: &Session,
    workload: &Workload,
    tables: usize,
    rf: u32,
    layout: Option<&str>,
) -> anyhow::Result<()> {
    session
        .query_unpaged(
            format!(
                "CREATE KEYSPACE IF NOT EXISTS {KEYSPACE} WITH replication = \
                 {{'class': 'SimpleStrategy', 'replication_factor': {rf}}}"
            ),
            &[],
        )
        .await
        .context("creating keyspace ycsb")?;
    let columns: String = (0..workload.field_count)
        .map(|i| format!(", {} text", field_name(i)))
        .collect();
    let with = match layout {
        Some(l) => format!(" WITH layout = {}", layout_literal(l)?),
        None => String::new(),
    };
    for i in 0..tables {
        let table = table_name(i, tables);
        session
            .query_unpaged(
                format!(
                    "CREATE TABLE IF NOT EXISTS {KEYSPACE}.{table} (y_id text PRIMARY KEY{columns}){with}"
                ),
                &[],
            )
            .await
            .with_context(|| format!("creating table {KEYSPACE}.{table}"))?;
    }
    session
        .await_schema_agreement()
        .await
        .context("waiting for schema agreement")?;
    Ok(())
}

/// What every worker shares.
struct Shared {
    config: BenchConfig,
    session: Session,
    /// Each table's statements, by table index.
    statements: Vec<Statements>,
    /// Next operation index to take.
    next: AtomicU64,
    /// Progress and the timeline.
    monitor: Arc<Monitor>,
    total: u64,
    start: Instant,
    /// Field values, shared by the workers.
    values: Values,
}

impl Shared {
    /// The statements of the table record `n` lives in.
    fn statements(&self, n: u64) -> &Statements {
        let i = (n % self.statements.len().max(1) as u64) as usize;
        // prepare_all made one set per table, and check_config refused zero tables.
        &self.statements[i]
    }
}

/// Refuses a configuration no phase can run.
fn check_config(config: &BenchConfig) -> anyhow::Result<()> {
    if config.concurrency == 0 {
        bail!("concurrency must be positive");
    }
    if config.records == 0 {
        bail!("records must be positive");
    }
    if config.tables == 0 {
        bail!("tables must be positive");
    }
    if let Some(rate) = config.rate {
        if !(rate.is_finite() && rate > 0.0) {
            bail!("rate must be a positive number of operations per second");
        }
    }
    Ok(())
}

/// CPU seconds used so far by each of `pids`.
pub(crate) fn servers_cpu_seconds(pids: &[u32]) -> anyhow::Result<Vec<f64>> {
    pids.iter()
        .map(|&pid| Ok(mosaic_env::proc::cpu_seconds_of_pid(pid)?))
        .collect()
}

/// The servers' disk traffic and CPU, and this client's CPU, since the start of a phase.
pub(crate) struct Meter {
    pids: Vec<u32>,
    io: IoCounters,
    cpu: Vec<f64>,
    client_cpu: f64,
}

impl Meter {
    /// Starts counting for the server processes `pids`.
    pub(crate) fn start(pids: &[u32]) -> anyhow::Result<Meter> {
        Ok(Meter {
            pids: pids.to_vec(),
            io: IoCounters::of_pids(pids)?,
            cpu: servers_cpu_seconds(pids)?,
            client_cpu: mosaic_env::proc::cpu_seconds(),
        })
    }

    /// Since the start: the servers' disk traffic (`None` without pids), each server's CPU
    /// seconds, and the client's.
    pub(crate) fn read(&self) -> anyhow::Result<(Option<IoCounters>, Vec<f64>, f64)> {
        let io = if self.pids.is_empty() {
            None
        } else {
            Some(IoCounters::of_pids(&self.pids)?.since(&self.io))
        };
        let cpu = servers_cpu_seconds(&self.pids)?
            .iter()
            .zip(&self.cpu)
            .map(|(after, before)| (after - before).max(0.0))
            .collect();
        Ok((io, cpu, mosaic_env::proc::cpu_seconds() - self.client_cpu))
    }
}

/// Runs one phase and returns its report.
pub async fn execute(config: BenchConfig) -> anyhow::Result<Report> {
    check_config(&config)?;
    let session = connect_routed(&config.hosts, config.primary_routing).await?;
    let (phase_name, total) = match &config.phase {
        Phase::Load { rf, layout } => {
            create_schema(
                &session,
                &config.workload,
                config.tables,
                *rf,
                layout.as_deref(),
            )
            .await?;
            ("load", config.records)
        }
        Phase::Run { operations } => ("run", *operations),
    };
    let chooser = match config.phase {
        Phase::Load { .. } => None,
        Phase::Run { operations } => Some(
            Chooser::new(&config.workload, config.records, operations).ok_or_else(|| {
                anyhow!("the workload has no operation with a positive proportion")
            })?,
        ),
    };
    let statements = Statements::prepare_all(&session, &config).await?;
    // Made before the clock starts: a pool of 1 MiB values takes milliseconds to fill,
    // which every worker paying at the start would count against the first operations.
    let values = Values::new(&mut StdRng::seed_from_u64(config.seed), &config.workload);
    let pids = config.pids.clone();
    let meter = Meter::start(&pids)?;
    let start = Instant::now();
    let monitor = Arc::new(Monitor::new(total, start)?);
    let shared = Arc::new(Shared {
        statements,
        session,
        next: AtomicU64::new(0),
        monitor: monitor.clone(),
        total,
        start,
        values,
        config,
    });
    let sampler = tokio::spawn(monitor.clone().run(phase_name, shared.config.progress));
    let mut workers = Vec::with_capacity(shared.config.concurrency);
    for w in 0..shared.config.concurrency {
        workers.push(tokio::spawn(worker(
            shared.clone(),
            chooser.clone(),
            w as u64,
        )));
    }
    let mut tally = Tally::default();
    for w in workers {
        tally.merge(&w.await.context("a worker panicked")??)?;
    }
    let elapsed = shared.start.elapsed();
    sampler.abort();
    let timeline = monitor.finish();
    if shared.config.progress && std::io::stderr().is_terminal() {
        eprintln!();
    }
    let (server_io, server_cpu_s, client_cpu_s) = meter.read()?;
    Ok(Report {
        phase: phase_name,
        workload: shared.config.workload.name.clone(),
        records: shared.config.records,
        attempted: total,
        concurrency: shared.config.concurrency,
        rate: shared.config.rate,
        elapsed,
        operations: tally.operations,
        by_size: tally.by_size,
        errors_by_kind: tally.errors_by_kind,
        user_bytes_written: tally.user_bytes_written,
        user_bytes_read: tally.user_bytes_read,
        server_io,
        server_cpu_s,
        client_cpu_s,
        timeline,
    })
}

/// One worker: takes operation indexes until the phase's total is reached.
async fn worker(
    shared: Arc<Shared>,
    mut chooser: Option<Chooser>,
    id: u64,
) -> anyhow::Result<Tally> {
    let config = &shared.config;
    let mut rng = StdRng::seed_from_u64(config.seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ id);
    let values = &shared.values;
    let mut tally = Tally::default();
    loop {
        let i = shared.next.fetch_add(1, Ordering::Relaxed);
        if i >= shared.total {
            break;
        }
        // Open loop: operation i is due at start + i/rate, and is timed from then.
        let due = match config.rate {
            Some(rate) => {
                let due = shared.start + Duration::from_secs_f64(i as f64 / rate);
                tokio::time::sleep_until(due.into()).await;
                due
            }
            None => Instant::now(),
        };
        let (op, n, outcome) = match chooser.as_mut() {
            None => (
                Operation::Insert,
                i,
                insert(&shared, values, &mut rng, i).await,
            ),
            Some(c) => {
                let op = c.operation(&mut rng);
                let (n, outcome) = operation(&shared, c, values, &mut rng, op).await;
                (op, n, outcome)
            }
        };
        let micros = u64::try_from(due.elapsed().as_micros()).unwrap_or(u64::MAX);
        shared.monitor.finished(outcome.is_ok().then_some(micros));
        let workload = &config.workload;
        if workload.large_fraction > 0.0 {
            let size = if workload.is_large(n) {
                "large"
            } else {
                "usual"
            };
            let stats = tally.size_stats(size)?;
            match &outcome {
                Ok(_) => stats.latency_us.saturating_record(micros.max(1)),
                Err(_) => stats.errors += 1,
            }
        }
        let stats = tally.stats(op)?;
        match outcome {
            Ok(d) => {
                stats.latency_us.saturating_record(micros.max(1));
                tally.user_bytes_written += d.bytes_written;
                tally.user_bytes_read += d.bytes_read;
            }
            Err(e) => {
                stats.errors += 1;
                let kind = match e {
                    Failed::NotFound => "not_found".to_string(),
                    Failed::Driver(kind) => kind,
                };
                *tally.errors_by_kind.entry(kind).or_default() += 1;
            }
        }
    }
    Ok(tally)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts_become_cql_literals() {
        assert_eq!(layout_literal("decoupled").unwrap(), "'decoupled'");
        assert_eq!(
            layout_literal("erasure-tiered:ec_k=4,storage_saving_target=0.6").unwrap(),
            "{'class': 'erasure-tiered', 'ec_k': '4', 'storage_saving_target': '0.6'}"
        );
        for bad in ["", "a'b", "x:", "x:k", "x:k=v'", "x:=1"] {
            assert!(layout_literal(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn consistency_names_parse() {
        assert_eq!(parse_consistency("one").unwrap(), Consistency::One);
        assert_eq!(
            parse_consistency("LOCAL_QUORUM").unwrap(),
            Consistency::LocalQuorum
        );
        assert!(parse_consistency("most").is_err());
    }

    #[test]
    fn json_has_the_stable_fields() {
        let mut read = OperationStats::new().unwrap();
        read.latency_us.record(100).unwrap();
        read.latency_us.record(300).unwrap();
        let report = Report {
            phase: "run",
            workload: "a".into(),
            records: 10,
            attempted: 3,
            concurrency: 1,
            rate: None,
            elapsed: Duration::from_secs(1),
            operations: [(Operation::Read, read.clone())].into_iter().collect(),
            by_size: [("large", read)].into_iter().collect(),
            errors_by_kind: [("not_found".to_string(), 1)].into_iter().collect(),
            user_bytes_written: 0,
            user_bytes_read: 2000,
            server_io: Some(IoCounters {
                read_bytes: 1000,
                ..IoCounters::default()
            }),
            server_cpu_s: vec![0.003, 0.0015],
            client_cpu_s: 0.0006,
            timeline: vec![TimelinePoint {
                t_s: 1.0,
                ops: 3,
                ops_per_s: 3.0,
                errors: 1,
                p50_us: 100,
                p99_us: 300,
            }],
        };
        let j = report.json();
        assert_eq!(j["throughput_ops"].as_f64(), Some(2.0));
        assert_eq!(j["timeline"][0]["p99_us"].as_u64(), Some(300));
        assert_eq!(j["timeline"][0]["ops_per_s"].as_f64(), Some(3.0));
        assert_eq!(j["operations"]["read"]["count"].as_u64(), Some(2));
        assert_eq!(j["operations"]["read"]["max_us"].as_u64(), Some(300));
        assert_eq!(j["by_size"]["large"]["count"].as_u64(), Some(2));
        assert!(report.text().contains("(records) large"));
        // 2 operations: 3 ms and 1.5 ms of server CPU, 0.6 ms of client CPU.
        assert_eq!(j["cpu_us_per_op"]["per_node"][0].as_f64(), Some(1500.0));
        assert_eq!(j["cpu_us_per_op"]["servers"].as_f64(), Some(2250.0));
        assert_eq!(j["cpu_us_per_op"]["client"].as_f64(), Some(300.0));
        assert!(report
            .text()
            .contains("servers 2250 µs (per node 1500 / 750)"));
        for k in ["mean_us", "p50_us", "p99_us"] {
            assert!(j["operations"]["read"][k].is_number(), "{k}");
        }
        let cdf = j["operations"]["read"]["latency_cdf_us"]
            .as_array()
            .unwrap();
        assert_eq!(cdf.len(), 105);
        assert_eq!(cdf[104][1].as_u64(), Some(300));
        assert!(cdf.windows(2).all(|w| w[0][1].as_u64() <= w[1][1].as_u64()));
        assert_eq!(j["errors"].as_u64(), Some(0));
        assert_eq!(j["server_io"]["read_amplification"].as_f64(), Some(0.5));
        assert!(j["server_io"]["write_amplification"].is_null());
        assert!(report.text().contains("not_found: 1"));
    }
}
