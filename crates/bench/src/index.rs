//! `mosaic-bench index load|run`: queries through secondary indexes at low and high
//! cardinality, and appends to a list, against any CQL cluster (Mosaic or Apache
//! Cassandra).
//!
//! Schema: keyspace `idxbench` (SimpleStrategy, the replication factor given at load, 3 by
//! default), table `t (k bigint PRIMARY KEY, lo int, hi text, tags list<int>)`, and the
//! indexes `t_lo_idx ON t (lo)` and `t_hi_idx ON t (hi)` — the names `CREATE INDEX ON t (lo)`
//! gives, written out so a second load finds them. The indexes are created before the rows
//! are written, so every replica indexes each row as it applies it; the load still waits
//! until every node lists both in its `system."IndexInfo"` (built), before and after the
//! rows.
//!
//! The data set ([`DataSet`]): rows `k = 0..rows`, `lo = k % lo_values` (low cardinality:
//! a value names `rows / lo_values` rows — 100 with the defaults, 100,000 rows and 1,000
//! values, one page of the driver's default 5,000), `hi` = 16 hex digits of a bijective mix
//! of `k` (high cardinality: every value names exactly one row), `tags` absent until the
//! `append` workload adds to it.
//!
//! Workloads (`run --workload`), each for `duration` seconds after `warmup` seconds that are
//! not counted, closed loop with `concurrency` requests in flight, values drawn uniformly:
//! - `low`: prepared `SELECT k FROM t WHERE lo = ?`, every page read;
//! - `high`: prepared `SELECT k FROM t WHERE hi = ?`;
//! - `append`: prepared `UPDATE t SET tags = tags + ? WHERE k = ?` binding a one-element
//!   list (a marker inside the literal, `tags + [?]`, is refused at PREPARE by Cassandra 4.1,
//!   and by Mosaic as by Cassandra); with `list_reads` > 0 that share of the operations is
//!   `SELECT tags FROM t WHERE k = ?` instead (`read_list`).
//!
//! Every query's answer is checked against the data set: a row that does not hold the
//! value, or a key twice, is a `wrong_rows` error; fewer rows than the value names, a
//! `missing_rows` error (which reads at ONE may see after writes at ONE that a replica has
//! not applied yet). Errors stay out of the latency histograms and the throughput, and the
//! first few are kept in the report (`result_errors`). The report is YCSB's ([`crate::ycsb::Report`]):
//! per operation latency percentiles, errors by kind, server CPU per operation and disk
//! traffic (with `pid_files`), the per-second timeline; and the rows the queries returned
//! (`rows_returned`, `rows_per_s`).

use std::ops::ControlFlow;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context};
use clap::{Args, Subcommand, ValueEnum};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use scylla::client::execution_profile::ExecutionProfile;
use scylla::client::session::Session;
use scylla::policies::load_balancing::{NodeIdentifier, SingleTargetLoadBalancingPolicy};
use scylla::response::PagingState;
use scylla::serialize::row::SerializeRow;
use scylla::statement::prepared::PreparedStatement;
use scylla::statement::{Consistency, Statement};
use serde_json::{json, Value};

use crate::phase::{
    self, pids_of, result_errors_text, undecodable, ClientArgs, Done, Failed, PhaseResult,
    PhaseSpec, Worker,
};
use crate::ycsb::{connect, parse_consistency, OperationKind};

/// The benchmark's keyspace.
pub const KEYSPACE: &str = "idxbench";
/// Its table.
pub const TABLE: &str = "t";
/// The indexes, by the names `CREATE INDEX ON t (lo)` and `… (hi)` give them.
pub const INDEXES: [&str; 2] = ["t_lo_idx", "t_hi_idx"];

/// `mosaic-bench index load` and `mosaic-bench index run`.
#[derive(Subcommand, Debug)]
pub enum IndexCommand {
    /// Create keyspace `idxbench`, table `t` and its two indexes if absent, wait until every
    /// node has built them, then insert the rows.
    Load(IndexLoadArgs),
    /// Run one workload (low, high or append) for a time over the loaded rows.
    Run(IndexRunArgs),
}

/// Options both commands share.
#[derive(Args, Debug, Clone)]
pub struct IndexCommonArgs {
    #[command(flatten)]
    pub client: ClientArgs,
    /// Rows of the table (the same for load and run).
    #[arg(long, default_value_t = 100_000)]
    pub rows: u64,
    /// Distinct values of the low-cardinality column `lo` (`lo = k % lo_values`): a `low`
    /// query returns rows / lo_values rows (the same for load and run).
    #[arg(long, default_value_t = 1_000)]
    pub lo_values: u64,
    /// Consistency level of inserts and appends.
    #[arg(long, default_value = "ONE")]
    pub write_cl: String,
}

/// Options of `mosaic-bench index load`.
#[derive(Args, Debug)]
pub struct IndexLoadArgs {
    #[command(flatten)]
    pub common: IndexCommonArgs,
    /// Replication factor of keyspace `idxbench` (SimpleStrategy), if it is created.
    #[arg(long, default_value_t = 3)]
    pub rf: u32,
    /// Seconds to wait for every node to list both indexes as built.
    #[arg(long, default_value_t = 600)]
    pub index_wait_s: u64,
}

/// A workload of `mosaic-bench index run`.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum IndexWorkload {
    /// `SELECT k FROM t WHERE lo = ?`: a low-cardinality index, rows / lo_values rows each.
    Low,
    /// `SELECT k FROM t WHERE hi = ?`: a high-cardinality index, one row each.
    High,
    /// `UPDATE t SET tags = tags + ? WHERE k = ?`: one element appended to a list.
    Append,
}

impl IndexWorkload {
    /// The name in reports.
    pub fn name(self) -> &'static str {
        match self {
            IndexWorkload::Low => "low",
            IndexWorkload::High => "high",
            IndexWorkload::Append => "append",
        }
    }
}

/// Options of `mosaic-bench index run`.
#[derive(Args, Debug)]
pub struct IndexRunArgs {
    #[command(flatten)]
    pub common: IndexCommonArgs,
    /// What to run.
    #[arg(long, value_enum)]
    pub workload: IndexWorkload,
    /// Seconds measured.
    #[arg(long, default_value_t = 30.0)]
    pub duration: f64,
    /// Seconds of the same workload before the measured ones, not counted.
    #[arg(long, default_value_t = 5.0)]
    pub warmup: f64,
    /// Consistency level of the queries.
    #[arg(long, default_value = "ONE")]
    pub read_cl: String,
    /// Rows per page of the queries (the scylla driver's default: 5000).
    #[arg(long, default_value_t = 5000)]
    pub page_size: i32,
    /// `append` only: the share of operations (0–1) that read a row's list
    /// (`SELECT tags FROM t WHERE k = ?`) instead of appending to it.
    #[arg(long, default_value_t = 0.0)]
    pub list_reads: f64,
}

/// One kind of operation of the index benchmark.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum IndexOp {
    /// The load's insert of one row.
    Insert,
    /// A query by the low-cardinality column.
    Low,
    /// A query by the high-cardinality column.
    High,
    /// An append of one element to a row's list.
    Append,
    /// A read of a row's list.
    ReadList,
}

impl OperationKind for IndexOp {
    fn name(self) -> &'static str {
        match self {
            IndexOp::Insert => "insert",
            IndexOp::Low => "low",
            IndexOp::High => "high",
            IndexOp::Append => "append",
            IndexOp::ReadList => "read_list",
        }
    }
}

/// The rows the load writes and the runs query: a pure function of `rows` and `lo_values`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DataSet {
    /// Rows, keys `0..rows`.
    pub rows: u64,
    /// Distinct values of `lo`.
    pub lo_values: u64,
}

impl DataSet {
    /// The data set, or an error for sizes the schema cannot hold.
    pub fn new(rows: u64, lo_values: u64) -> anyhow::Result<DataSet> {
        if rows == 0 || rows > i64::MAX as u64 {
            bail!("rows must be in 1..=2^63-1, not {rows}");
        }
        if lo_values == 0 || lo_values > i32::MAX as u64 {
            bail!("lo_values must be in 1..=2^31-1, not {lo_values}");
        }
        Ok(DataSet { rows, lo_values })
    }

    /// Row `k`'s `lo`.
    pub fn lo(&self, k: u64) -> i32 {
        // lo_values ≤ i32::MAX (new), so the remainder fits.
        (k % self.lo_values) as i32
    }

    /// Row `k`'s `hi`: distinct for every `k`.
    pub fn hi(k: u64) -> String {
        format!("{:016x}", mix64(k))
    }

    /// How many rows have `lo = value`.
    pub fn rows_with_lo(&self, value: u64) -> u64 {
        self.rows / self.lo_values + u64::from(value < self.rows % self.lo_values)
    }
}

/// SplitMix64's finalizer: a bijection of the 64-bit integers that scatters neighbours.
fn mix64(k: u64) -> u64 {
    let mut z = k.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Runs an `index` command on its own tokio runtime; prints the report on stdout and writes
/// the JSON when asked.
pub fn main(command: IndexCommand) -> anyhow::Result<()> {
    match command {
        IndexCommand::Load(a) => {
            phase::main(a.common.client.json.clone(), async move { load(&a).await })
        }
        IndexCommand::Run(a) => {
            phase::main(a.common.client.json.clone(), async move { run(&a).await })
        }
    }
}

/// The prepared statements.
struct Statements {
    insert: PreparedStatement,
    low: PreparedStatement,
    high: PreparedStatement,
    append: PreparedStatement,
    read_list: PreparedStatement,
}

impl Statements {
    async fn prepare(
        session: &Session,
        read_cl: Consistency,
        write_cl: Consistency,
        page_size: i32,
    ) -> anyhow::Result<Statements> {
        let table = format!("{KEYSPACE}.{TABLE}");
        let prepare = |cql: String, cl: Consistency| async move {
            let mut s = session
                .prepare(cql.clone())
                .await
                .with_context(|| format!("preparing {cql}"))?;
            s.set_consistency(cl);
            s.set_page_size(page_size);
            // As the YCSB statements: rows without metadata (the schema does not change
            // during a run), as the Java and Python drivers ask for them.
            s.set_use_cached_result_metadata(true);
            anyhow::Ok(s)
        };
        let (r, w) = (read_cl, write_cl);
        Ok(Statements {
            insert: prepare(
                format!("INSERT INTO {table} (k, lo, hi) VALUES (?, ?, ?)"),
                w,
            )
            .await?,
            low: prepare(format!("SELECT k FROM {table} WHERE lo = ?"), r).await?,
            high: prepare(format!("SELECT k FROM {table} WHERE hi = ?"), r).await?,
            append: prepare(format!("UPDATE {table} SET tags = tags + ? WHERE k = ?"), w).await?,
            read_list: prepare(format!("SELECT tags FROM {table} WHERE k = ?"), r).await?,
        })
    }
}

async fn create_schema(session: &Session, rf: u32) -> anyhow::Result<()> {
    let statements = [
        format!(
            "CREATE KEYSPACE IF NOT EXISTS {KEYSPACE} WITH replication = \
             {{'class': 'SimpleStrategy', 'replication_factor': {rf}}}"
        ),
        format!(
            "CREATE TABLE IF NOT EXISTS {KEYSPACE}.{TABLE} \
             (k bigint PRIMARY KEY, lo int, hi text, tags list<int>)"
        ),
        format!(
            "CREATE INDEX IF NOT EXISTS {} ON {KEYSPACE}.{TABLE} (lo)",
            INDEXES[0]
        ),
        format!(
            "CREATE INDEX IF NOT EXISTS {} ON {KEYSPACE}.{TABLE} (hi)",
            INDEXES[1]
        ),
    ];
    phase::ddl(session, &statements).await
}

/// The indexes of [`INDEXES`] that the node does not list as built in its
/// `system."IndexInfo"` (whose `table_name` is the keyspace's name, in Cassandra as in
/// Mosaic).
async fn unbuilt_on(
    session: &Session,
    node: &Arc<scylla::cluster::Node>,
) -> anyhow::Result<Vec<&'static str>> {
    let profile = ExecutionProfile::builder()
        .load_balancing_policy(SingleTargetLoadBalancingPolicy::new(
            NodeIdentifier::Node(node.clone()),
            None,
        ))
        .consistency(Consistency::One)
        .build();
    let mut statement = Statement::new("SELECT table_name, index_name FROM system.\"IndexInfo\"");
    statement.set_execution_profile_handle(Some(profile.into_handle()));
    let result = session
        .query_unpaged(statement, &[])
        .await
        .with_context(|| format!("reading system.\"IndexInfo\" of {}", node.address))?;
    let rows = result
        .into_rows_result()
        .context("system.\"IndexInfo\" returned no rows result")?;
    let mut built = Vec::new();
    for row in rows.rows::<(Option<String>, Option<String>)>()? {
        if let (Some(keyspace), Some(index)) = row? {
            if keyspace == KEYSPACE {
                built.push(index);
            }
        }
    }
    Ok(INDEXES
        .into_iter()
        .filter(|i| !built.iter().any(|b| b == i))
        .collect())
}

/// Waits until every node the driver knows lists both indexes as built; the seconds it
/// took.
async fn wait_indexes_built(session: &Session, timeout: Duration) -> anyhow::Result<f64> {
    let start = Instant::now();
    loop {
        let mut missing = Vec::new();
        let state = session.get_cluster_state();
        for node in state.get_nodes_info() {
            for index in unbuilt_on(session, node).await? {
                missing.push(format!("{index} on {}", node.address));
            }
        }
        if missing.is_empty() {
            return Ok(start.elapsed().as_secs_f64());
        }
        if start.elapsed() >= timeout {
            bail!(
                "indexes not built after {:.0} s: {}",
                timeout.as_secs_f64(),
                missing.join(", ")
            );
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// What one phase's workers do.
#[derive(Clone, Copy, Debug)]
enum Job {
    /// Insert rows `0..rows`, each once.
    Insert,
    /// Run a workload until the deadline.
    Run(IndexWorkload),
}

/// What every worker shares.
struct Shared {
    session: Session,
    statements: Statements,
    data: DataSet,
    list_reads: f64,
    /// The next row to insert.
    next: AtomicU64,
}

impl Shared {
    fn new(session: Session, statements: Statements, data: DataSet, list_reads: f64) -> Shared {
        Shared {
            session,
            statements,
            data,
            list_reads,
            next: AtomicU64::new(0),
        }
    }
}

/// One worker of a phase.
struct IndexWorker {
    shared: Arc<Shared>,
    job: Job,
    rng: StdRng,
}

/// Reads every page of a query of `k`s; the keys it returned.
async fn read_keys(
    session: &Session,
    statement: &PreparedStatement,
    values: impl SerializeRow,
) -> Result<Vec<i64>, Failed> {
    let mut keys = Vec::new();
    let mut paging = PagingState::start();
    loop {
        let (result, next) = session
            .execute_single_page(statement, &values, paging)
            .await?;
        let rows = result.into_rows_result().map_err(undecodable)?;
        for row in rows.rows::<(i64,)>().map_err(undecodable)? {
            keys.push(row.map_err(undecodable)?.0);
        }
        match next.into_paging_control_flow() {
            ControlFlow::Break(()) => return Ok(keys),
            ControlFlow::Continue(p) => paging = p,
        }
    }
}

/// Checks a query's keys against the data set: every key in `0..rows`, holding the value
/// (`holds`), none twice, `expected` of them.
fn check_keys(
    what: &str,
    keys: &mut [i64],
    expected: u64,
    data: &DataSet,
    holds: impl Fn(u64) -> bool,
) -> Result<(), Failed> {
    if let Some(k) = keys
        .iter()
        .find(|&&k| !(0..data.rows as i64).contains(&k) || !holds(k as u64))
    {
        return Err(Failed::Wrong(format!(
            "{what}: returned k = {k}, which does not hold the value"
        )));
    }
    keys.sort_unstable();
    if let Some(w) = keys.windows(2).find(|w| w[0] == w[1]) {
        return Err(Failed::Wrong(format!(
            "{what}: returned k = {} twice",
            w[0]
        )));
    }
    let n = keys.len() as u64;
    if n < expected {
        return Err(Failed::Missing(format!(
            "{what}: {n} rows of the {expected} that hold the value"
        )));
    }
    Ok(())
}

/// One operation of `job`; the kind and the outcome.
async fn operation(
    shared: &Shared,
    job: Job,
    rng: &mut StdRng,
    i: u64,
) -> (IndexOp, Result<Done, Failed>) {
    let data = &shared.data;
    let st = &shared.statements;
    match job {
        Job::Insert => {
            let hi = DataSet::hi(i);
            let done = shared
                .session
                .execute_unpaged(&st.insert, (i as i64, data.lo(i), hi.as_str()))
                .await
                .map(|_| Done {
                    rows: 0,
                    bytes_written: (8 + 4 + hi.len()) as u64,
                    bytes_read: 0,
                })
                .map_err(Failed::from);
            (IndexOp::Insert, done)
        }
        Job::Run(IndexWorkload::Low) => {
            let value = rng.gen_range(0..data.lo_values);
            let what = format!("lo = {value}");
            let done = async {
                let mut keys = read_keys(&shared.session, &st.low, (data.lo(value),)).await?;
                let expected = data.rows_with_lo(value);
                check_keys(&what, &mut keys, expected, data, |k| {
                    k % data.lo_values == value
                })?;
                Ok(Done {
                    rows: keys.len() as u64,
                    bytes_written: 0,
                    bytes_read: 8 * keys.len() as u64,
                })
            };
            (IndexOp::Low, done.await)
        }
        Job::Run(IndexWorkload::High) => {
            let k = rng.gen_range(0..data.rows);
            let hi = DataSet::hi(k);
            let what = format!("hi = '{hi}'");
            let done = async {
                let mut keys = read_keys(&shared.session, &st.high, (hi.as_str(),)).await?;
                check_keys(&what, &mut keys, 1, data, |x| x == k)?;
                Ok(Done {
                    rows: keys.len() as u64,
                    bytes_written: 0,
                    bytes_read: 8 * keys.len() as u64,
                })
            };
            (IndexOp::High, done.await)
        }
        Job::Run(IndexWorkload::Append) => {
            let k = rng.gen_range(0..data.rows) as i64;
            if shared.list_reads > 0.0 && rng.gen_bool(shared.list_reads) {
                let done = async {
                    let result = shared.session.execute_unpaged(&st.read_list, (k,)).await?;
                    let rows = result.into_rows_result().map_err(undecodable)?;
                    let mut n = 0u64;
                    let mut elements = 0u64;
                    for row in rows.rows::<(Option<Vec<i32>>,)>().map_err(undecodable)? {
                        n += 1;
                        elements += row.map_err(undecodable)?.0.map_or(0, |l| l.len() as u64);
                    }
                    match n {
                        0 => Err(Failed::Missing(format!("k = {k}: no row"))),
                        1 => Ok(Done {
                            rows: 1,
                            bytes_written: 0,
                            bytes_read: 8 + 4 * elements,
                        }),
                        _ => Err(Failed::Wrong(format!("k = {k}: {n} rows"))),
                    }
                };
                (IndexOp::ReadList, done.await)
            } else {
                let element: i32 = rng.gen();
                let done = shared
                    .session
                    .execute_unpaged(&st.append, (vec![element], k))
                    .await
                    .map(|_| Done {
                        rows: 0,
                        bytes_written: 8 + 4,
                        bytes_read: 0,
                    })
                    .map_err(Failed::from);
                (IndexOp::Append, done)
            }
        }
    }
}

impl Worker for IndexWorker {
    type Op = IndexOp;

    async fn next(&mut self) -> Option<(IndexOp, Result<Done, Failed>)> {
        let i = match self.job {
            Job::Insert => {
                let i = self.shared.next.fetch_add(1, Ordering::Relaxed);
                if i >= self.shared.data.rows {
                    return None;
                }
                i
            }
            Job::Run(_) => 0,
        };
        Some(operation(&self.shared, self.job, &mut self.rng, i).await)
    }
}

/// Runs one phase; the session and statements handed back for the next one.
async fn phase(
    shared: Shared,
    job: Job,
    spec: &PhaseSpec<'_>,
    concurrency: usize,
    seed: u64,
) -> anyhow::Result<(PhaseResult<IndexWorker>, Shared)> {
    let shared = Arc::new(shared);
    let workers = (0..concurrency as u64)
        .map(|w| IndexWorker {
            shared: shared.clone(),
            job,
            rng: StdRng::seed_from_u64(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ w),
        })
        .collect();
    drop(shared);
    let mut result = phase::run(spec, workers).await?;
    let shared = result.workers.drain(..).next().map(|w| w.shared);
    let shared = shared.ok_or_else(|| anyhow!("no workers"))?;
    Ok((result, phase::unshare(shared)?))
}

fn check_common(c: &IndexCommonArgs) -> anyhow::Result<DataSet> {
    if c.client.concurrency == 0 {
        bail!("concurrency must be positive");
    }
    DataSet::new(c.rows, c.lo_values)
}

/// `index load`: the schema, the wait for the indexes, the rows.
async fn load(a: &IndexLoadArgs) -> anyhow::Result<(String, Value)> {
    let c = &a.common;
    let data = check_common(c)?;
    let write_cl = parse_consistency(&c.write_cl)?;
    let pids = pids_of(&c.client.pid_files)?;
    let session = connect(&c.client.hosts).await?;
    create_schema(&session, a.rf).await?;
    let timeout = Duration::from_secs(a.index_wait_s);
    let wait_before = wait_indexes_built(&session, timeout).await?;
    let statements = Statements::prepare(&session, Consistency::One, write_cl, 5000).await?;
    let spec = PhaseSpec {
        name: "load",
        workload: "index".to_owned(),
        records: data.rows,
        total: data.rows,
        duration: None,
        pids: &pids,
        progress: !c.client.quiet,
    };
    let shared = Shared::new(session, statements, data, 0.0);
    let (result, shared) = phase(
        shared,
        Job::Insert,
        &spec,
        c.client.concurrency,
        c.client.seed,
    )
    .await?;
    let wait_after = wait_indexes_built(&shared.session, timeout).await?;
    let mut text = result.report.text();
    text += &format!(
        "indexes {} built on every node {wait_before:.1} s after creation, and {wait_after:.1} s after the load\n",
        INDEXES.join(" and ")
    );
    text += &result_errors_text(&result.result_errors);
    let mut json = result.report.json();
    json["index"] = json!({
        "keyspace": KEYSPACE,
        "rows": data.rows,
        "lo_values": data.lo_values,
        "rf": a.rf,
        "write_cl": c.write_cl,
        "index_built_wait_s": {"before_load": wait_before, "after_load": wait_after},
    });
    json["result_errors"] = json!(result.result_errors);
    Ok((text, json))
}

/// `index run`: the warm-up, then the measured seconds.
async fn run(a: &IndexRunArgs) -> anyhow::Result<(String, Value)> {
    let c = &a.common;
    let data = check_common(c)?;
    phase::check_times(a.duration, a.warmup)?;
    if !(0.0..=1.0).contains(&a.list_reads) {
        bail!("list_reads lies in [0, 1], not {}", a.list_reads);
    }
    if a.page_size <= 0 {
        bail!("page_size must be positive");
    }
    let read_cl = parse_consistency(&a.read_cl)?;
    let write_cl = parse_consistency(&c.write_cl)?;
    let pids = pids_of(&c.client.pid_files)?;
    let session = connect(&c.client.hosts).await?;
    let statements = Statements::prepare(&session, read_cl, write_cl, a.page_size).await?;
    let job = Job::Run(a.workload);
    let mut shared = Shared::new(session, statements, data, a.list_reads);
    let mut warmup_ops = 0;
    let spec = |name, seconds: f64, pids| PhaseSpec {
        name,
        workload: format!("index-{}", a.workload.name()),
        records: data.rows,
        total: 0,
        duration: Some(Duration::from_secs_f64(seconds)),
        pids,
        progress: !c.client.quiet,
    };
    if a.warmup > 0.0 {
        // Other draws than the measured run's.
        let seed = c.client.seed ^ 0x5741_524D;
        let warmup = spec("warmup", a.warmup, &[]);
        let (w, s) = phase(shared, job, &warmup, c.client.concurrency, seed).await?;
        warmup_ops = w.report.attempted;
        shared = s;
    }
    let measured = spec("run", a.duration, &pids);
    let (result, _) = phase(shared, job, &measured, c.client.concurrency, c.client.seed).await?;
    let report = &result.report;
    let secs = report.elapsed.as_secs_f64().max(1e-9);
    let queries: u64 = report
        .operations
        .iter()
        .filter(|(op, _)| matches!(op, IndexOp::Low | IndexOp::High | IndexOp::ReadList))
        .map(|(_, s)| s.latency_us.len())
        .sum();
    let mut text = report.text();
    if queries > 0 {
        text += &format!(
            "rows returned: {} ({:.0} rows/s, {:.1} per query)\n",
            result.rows,
            result.rows as f64 / secs,
            result.rows as f64 / queries as f64
        );
    }
    text += &result_errors_text(&result.result_errors);
    let mut json = report.json();
    json["index"] = json!({
        "keyspace": KEYSPACE,
        "workload": a.workload.name(),
        "rows": data.rows,
        "lo_values": data.lo_values,
        "rows_per_lo_value": data.rows as f64 / data.lo_values as f64,
        "read_cl": a.read_cl,
        "write_cl": c.write_cl,
        "page_size": a.page_size,
        "list_reads": a.list_reads,
        "duration_s": a.duration,
        "warmup_s": a.warmup,
        "warmup_ops": warmup_ops,
    });
    json["rows_returned"] = json!(result.rows);
    json["rows_per_s"] = json!(result.rows as f64 / secs);
    json["result_errors"] = json!(result.result_errors);
    Ok((text, json))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_data_set_has_the_promised_cardinalities() {
        let d = DataSet::new(100_000, 1_000).unwrap();
        let mut counts = vec![0u64; 1_000];
        let mut his = std::collections::HashSet::new();
        for k in 0..d.rows {
            counts[d.lo(k) as usize] += 1;
            assert!(his.insert(DataSet::hi(k)), "hi of {k} repeats");
        }
        for (v, n) in counts.iter().enumerate() {
            assert_eq!(*n, d.rows_with_lo(v as u64), "lo = {v}");
        }
        assert_eq!(DataSet::hi(7).len(), 16);
        // An uneven split: 10 rows over 4 values.
        let d = DataSet::new(10, 4).unwrap();
        let counted: Vec<u64> = (0..4)
            .map(|v| (0..10).filter(|&k| d.lo(k) == v).count() as u64)
            .collect();
        assert_eq!(
            counted,
            (0..4).map(|v| d.rows_with_lo(v)).collect::<Vec<_>>()
        );
        assert!(DataSet::new(0, 1).is_err());
        assert!(DataSet::new(1, 0).is_err());
        assert!(DataSet::new(1, 1 << 31).is_err());
    }

    #[test]
    fn answers_are_checked_against_the_data_set() {
        let d = DataSet::new(10, 4).unwrap();
        let holds = |k: u64| k % 4 == 1;
        assert!(check_keys("q", &mut [9, 1, 5], 3, &d, holds).is_ok());
        assert!(matches!(
            check_keys("q", &mut [1, 5], 3, &d, holds),
            Err(Failed::Missing(_))
        ));
        assert!(matches!(
            check_keys("q", &mut [1, 5, 2], 3, &d, holds),
            Err(Failed::Wrong(_))
        ));
        assert!(matches!(
            check_keys("q", &mut [1, 5, 5, 9], 3, &d, holds),
            Err(Failed::Wrong(_))
        ));
        assert!(matches!(
            check_keys("q", &mut [1, 13], 3, &d, |k| k % 4 == 1),
            Err(Failed::Wrong(_))
        ));
        assert!(matches!(
            check_keys("q", &mut [-3], 1, &d, |_| true),
            Err(Failed::Wrong(_))
        ));
    }

    #[test]
    fn operation_names_are_stable() {
        let names: Vec<&str> = [
            IndexOp::Insert,
            IndexOp::Low,
            IndexOp::High,
            IndexOp::Append,
            IndexOp::ReadList,
        ]
        .into_iter()
        .map(OperationKind::name)
        .collect();
        assert_eq!(names, ["insert", "low", "high", "append", "read_list"]);
    }
}
