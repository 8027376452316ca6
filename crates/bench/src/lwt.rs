//! `mosaic-bench lwt load|run`: lightweight transactions (compare-and-set through Paxos) on
//! uncontended and contended keys, and counter increments, against any CQL cluster (Mosaic
//! or Apache Cassandra).
//!
//! Schema: keyspace `lwtbench` (SimpleStrategy, the replication factor given at load, 3 by
//! default), table `t (k int PRIMARY KEY, v bigint)` for the transactions and, created by
//! the first counter run, `c (k int PRIMARY KEY, n counter)`. The load creates rows
//! `k = 0..keys` (100,000 by default) with `v = 0` by `INSERT … IF NOT EXISTS` (a row an
//! earlier load created answers `[applied] = False` and is kept; a failed insert is tried
//! again until the row is there).
//!
//! Workloads (`run --workload`), each for `duration` seconds after `warmup` seconds not
//! counted, closed loop with `concurrency` requests in flight:
//! - `uncontended`: worker w owns the keys `k ≡ w (mod concurrency)` and sends
//!   `UPDATE t SET v = ? WHERE k = ? IF v = ?` (v + 1 if v is what it last saw) on one of
//!   them, drawn uniformly, so the condition holds unless something went wrong;
//! - `contended`: every worker does the same on the `hot_keys` keys `0..hot_keys` (10 by
//!   default), so most conditions fail;
//! - `counter`: `UPDATE c SET n = n + 1 WHERE k = ?` on `counter_keys` keys (10,000).
//!
//! A transaction runs its Paxos phase at `serial_cl` (SERIAL) and commits at `commit_cl`
//! (QUORUM); increments run at `counter_cl` (QUORUM). A worker whose transaction was not
//! applied or failed (a `WriteTimeout` of write type CAS under contention) reads the row at
//! SERIAL (`serial_read`) and tries the same key again with what it read. The throughput of
//! the transaction workloads is the transactions answered (applied or not) per second; the
//! latency of `cas` is theirs.
//!
//! Checks: an answer `[applied] = False` must show a value other than the one conditioned on.
//! At the end every key with a failed operation is read at SERIAL (which finishes a round a
//! timeout left behind), the table is read whole at QUORUM, and for every key the change
//! since the run began must lie between the operations acknowledged (applied transactions,
//! increments) and those plus the failed ones — each transaction adds exactly one to `v`, so
//! a lost or doubled update shows. The warm-up counts in the check.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context};
use clap::{Args, Subcommand, ValueEnum};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use scylla::client::session::Session;
use scylla::serialize::row::SerializeRow;
use scylla::statement::prepared::PreparedStatement;
use scylla::statement::{Consistency, SerialConsistency};
use scylla::value::{CqlValue, Row};
use serde_json::{json, Value};

mod check;

use check::{as_i64, check, counts_of, scan, total, KeyCounts};

use crate::phase::{self, pids_of, undecodable, ClientArgs, Done, Failed, PhaseSpec, Worker};
use crate::ycsb::{connect, parse_consistency, OperationKind};

/// The benchmark's keyspace.
pub const KEYSPACE: &str = "lwtbench";
/// The transactions' table.
pub const TABLE: &str = "t";
/// The counters' table.
pub const COUNTERS: &str = "c";

/// `mosaic-bench lwt load` and `mosaic-bench lwt run`.
#[derive(Subcommand, Debug)]
pub enum LwtCommand {
    /// Create keyspace `lwtbench` and table `t` if absent, then the rows by
    /// `INSERT … IF NOT EXISTS`.
    Load(LwtLoadArgs),
    /// Run one workload (uncontended, contended or counter) for a time.
    Run(LwtRunArgs),
}

/// Options both commands share.
#[derive(Args, Debug, Clone)]
pub struct LwtCommonArgs {
    #[command(flatten)]
    pub client: ClientArgs,
    /// Rows of table `t` (the same for load and run).
    #[arg(long, default_value_t = 100_000)]
    pub keys: u32,
    /// Consistency of the transactions' Paxos phase and of the reads after a failed one.
    #[arg(long, default_value = "SERIAL")]
    pub serial_cl: String,
    /// Consistency of the transactions' commit.
    #[arg(long, default_value = "QUORUM")]
    pub commit_cl: String,
}

/// Options of `mosaic-bench lwt load`.
#[derive(Args, Debug)]
pub struct LwtLoadArgs {
    #[command(flatten)]
    pub common: LwtCommonArgs,
    /// Replication factor of keyspace `lwtbench` (SimpleStrategy), if it is created.
    #[arg(long, default_value_t = 3)]
    pub rf: u32,
}

/// A workload of `mosaic-bench lwt run`.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum LwtWorkload {
    /// Compare-and-set on keys each worker owns.
    Uncontended,
    /// Compare-and-set by every worker on a few hot keys.
    Contended,
    /// Counter increments.
    Counter,
}

impl LwtWorkload {
    /// The name in reports.
    pub fn name(self) -> &'static str {
        match self {
            LwtWorkload::Uncontended => "uncontended",
            LwtWorkload::Contended => "contended",
            LwtWorkload::Counter => "counter",
        }
    }
}

/// Options of `mosaic-bench lwt run`.
#[derive(Args, Debug)]
pub struct LwtRunArgs {
    #[command(flatten)]
    pub common: LwtCommonArgs,
    /// What to run.
    #[arg(long, value_enum)]
    pub workload: LwtWorkload,
    /// `contended`: the keys every worker updates (`0..hot_keys`).
    #[arg(long, default_value_t = 10)]
    pub hot_keys: u32,
    /// `counter`: the counters incremented (`0..counter_keys`).
    #[arg(long, default_value_t = 10_000)]
    pub counter_keys: u32,
    /// Consistency of the increments.
    #[arg(long, default_value = "QUORUM")]
    pub counter_cl: String,
    /// Seconds measured.
    #[arg(long, default_value_t = 20.0)]
    pub duration: f64,
    /// Seconds of the same workload before the measured ones, not counted.
    #[arg(long, default_value_t = 5.0)]
    pub warmup: f64,
}

impl LwtRunArgs {
    /// The keys worker `w` draws from: its own (`k ≡ w mod concurrency`) when uncontended,
    /// the hot keys when contended, every counter for increments.
    fn keys_of(&self, w: u64) -> Vec<i32> {
        let c = &self.common;
        match self.workload {
            LwtWorkload::Uncontended => (w as i32..c.keys as i32)
                .step_by(c.client.concurrency)
                .collect(),
            LwtWorkload::Contended => (0..self.hot_keys as i32).collect(),
            LwtWorkload::Counter => (0..self.counter_keys as i32).collect(),
        }
    }
}

/// One kind of operation of the benchmark.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum LwtOp {
    /// The load's `INSERT … IF NOT EXISTS`.
    Insert,
    /// A conditional update, applied or not.
    Cas,
    /// A read at SERIAL after a conditional update that was not applied or failed.
    SerialRead,
    /// A counter increment.
    Increment,
}

impl OperationKind for LwtOp {
    fn name(self) -> &'static str {
        match self {
            LwtOp::Insert => "insert",
            LwtOp::Cas => "cas",
            LwtOp::SerialRead => "serial_read",
            LwtOp::Increment => "increment",
        }
    }
}

/// Runs an `lwt` command on its own tokio runtime; prints the report on stdout and writes
/// the JSON when asked.
pub fn main(command: LwtCommand) -> anyhow::Result<()> {
    match command {
        LwtCommand::Load(a) => {
            phase::main(a.common.client.json.clone(), async move { load(&a).await })
        }
        LwtCommand::Run(a) => {
            phase::main(a.common.client.json.clone(), async move { run(&a).await })
        }
    }
}

/// A serial consistency level, for the Paxos phase and as the level of a read.
fn parse_serial(s: &str) -> anyhow::Result<(SerialConsistency, Consistency)> {
    Ok(match s.to_ascii_uppercase().as_str() {
        "SERIAL" => (SerialConsistency::Serial, Consistency::Serial),
        "LOCAL_SERIAL" => (SerialConsistency::LocalSerial, Consistency::LocalSerial),
        _ => bail!("unknown serial consistency level {s:?}"),
    })
}

/// The prepared statements.
struct Statements {
    insert: PreparedStatement,
    cas: PreparedStatement,
    serial_read: PreparedStatement,
    /// The counter workload's increment (its table may not exist otherwise).
    increment: Option<PreparedStatement>,
    /// `SELECT k, v FROM t`, or `SELECT k, n FROM c` for the counter workload.
    scan: PreparedStatement,
}

impl Statements {
    async fn prepare(
        session: &Session,
        c: &LwtCommonArgs,
        counter_cl: Option<Consistency>,
    ) -> anyhow::Result<Statements> {
        let (serial, serial_cl) = parse_serial(&c.serial_cl)?;
        let commit = parse_consistency(&c.commit_cl)?;
        let prepare = |cql: String, cl: Consistency| async move {
            let mut s = session
                .prepare(cql.clone())
                .await
                .with_context(|| format!("preparing {cql}"))?;
            s.set_consistency(cl);
            s.set_serial_consistency(Some(serial));
            anyhow::Ok(s)
        };
        let (t, c) = (
            format!("{KEYSPACE}.{TABLE}"),
            format!("{KEYSPACE}.{COUNTERS}"),
        );
        let mut serial_read = prepare(format!("SELECT v FROM {t} WHERE k = ?"), serial_cl).await?;
        // The columns of a conditional update's answer depend on whether it applied, so the
        // transactions ask for metadata with their rows; plain reads need not.
        serial_read.set_use_cached_result_metadata(true);
        let (increment, scan) = match counter_cl {
            Some(cl) => (
                Some(prepare(format!("UPDATE {c} SET n = n + 1 WHERE k = ?"), cl).await?),
                format!("SELECT k, n FROM {c}"),
            ),
            None => (None, format!("SELECT k, v FROM {t}")),
        };
        Ok(Statements {
            insert: prepare(
                format!("INSERT INTO {t} (k, v) VALUES (?, 0) IF NOT EXISTS"),
                commit,
            )
            .await?,
            cas: prepare(format!("UPDATE {t} SET v = ? WHERE k = ? IF v = ?"), commit).await?,
            serial_read,
            increment,
            scan: prepare(scan, Consistency::Quorum).await?,
        })
    }
}

/// What one phase's workers do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Job {
    /// Create rows `0..keys`, each until it is there.
    Load,
    /// Conditional updates on the worker's keys.
    Cas,
    /// Increments of the worker's counters.
    Counter,
}

/// What every worker shares.
struct Shared {
    session: Session,
    statements: Statements,
    keys: u32,
    /// The next row to create.
    next: AtomicU64,
}

/// One worker: its keys, what it knows of their values, what it did to them.
struct LwtWorker {
    shared: Arc<Shared>,
    job: Job,
    rng: StdRng,
    /// The keys it draws from.
    keys: Vec<i32>,
    /// The value of `keys[i]` it last saw or set; `None` when it must read it again.
    values: Vec<Option<i64>>,
    /// The key (the load: the row) of its next operation, when it retries one.
    retry: Option<usize>,
    counts: HashMap<i32, KeyCounts>,
}

/// An answer to a conditional update.
enum Cas {
    Applied,
    /// Not applied: the value the row held (None: no row or a null `v`).
    NotApplied(Option<i64>),
}

impl LwtWorker {
    /// Sends a write of key `k` and counts its outcome: applied (an answer without rows —
    /// an increment — or with `[applied] = True`), not applied (with the value of `v` the
    /// answer shows), or failed.
    async fn write(
        &mut self,
        k: i32,
        statement: &PreparedStatement,
        values: impl SerializeRow,
    ) -> Result<Cas, Failed> {
        let outcome = async {
            let result = self
                .shared
                .session
                .execute_unpaged(statement, values)
                .await?;
            if !result.is_rows() {
                return Ok(Cas::Applied);
            }
            let rows = result.into_rows_result().map_err(undecodable)?;
            let row = rows.first_row::<Row>().map_err(undecodable)?;
            let v = rows.column_specs().get_by_name("v").map(|(i, _)| i);
            match row.columns.first() {
                Some(Some(CqlValue::Boolean(true))) => Ok(Cas::Applied),
                Some(Some(CqlValue::Boolean(false))) => Ok(Cas::NotApplied(as_i64(
                    v.and_then(|i| row.columns.get(i)?.as_ref()),
                ))),
                _ => Err(Failed::Wrong(format!(
                    "k = {k}: no [applied] in the answer"
                ))),
            }
        }
        .await;
        let c = self.counts.entry(k).or_default();
        match outcome {
            Ok(Cas::Applied) => c.applied += 1,
            Ok(Cas::NotApplied(_)) => c.not_applied += 1,
            Err(_) => c.failed += 1,
        }
        outcome
    }

    async fn serial_read(&self, k: i32) -> Result<i64, Failed> {
        let sh = &self.shared;
        let result = sh
            .session
            .execute_unpaged(&sh.statements.serial_read, (k,))
            .await?;
        let rows = result.into_rows_result().map_err(undecodable)?;
        match rows
            .maybe_first_row::<(Option<i64>,)>()
            .map_err(undecodable)?
        {
            Some((Some(v),)) => Ok(v),
            _ => Err(Failed::Missing(format!("k = {k}: no row at SERIAL"))),
        }
    }

    /// A conditional update of one of the worker's keys, or the read at SERIAL of a key whose
    /// value it no longer knows.
    async fn cas_or_read(&mut self) -> (LwtOp, Result<Done, Failed>) {
        let i = match self.retry.take() {
            Some(i) => i,
            None => self.rng.gen_range(0..self.keys.len()),
        };
        let k = self.keys[i];
        let Some(current) = self.values[i] else {
            let read = self.serial_read(k).await;
            self.values[i] = read.as_ref().ok().copied();
            self.retry = Some(i);
            return (LwtOp::SerialRead, read.map(|_| READ));
        };
        let shared = self.shared.clone();
        let cas = &shared.statements.cas;
        let outcome = match self.write(k, cas, (current + 1, k, current)).await {
            Ok(Cas::Applied) => {
                self.values[i] = Some(current + 1);
                return (LwtOp::Cas, Ok(WROTE));
            }
            Ok(Cas::NotApplied(seen)) if seen == Some(current) => Err(Failed::Wrong(format!(
                "k = {k}: IF v = {current} not applied, yet v = {current}"
            ))),
            outcome => outcome.map(|_| WROTE),
        };
        self.values[i] = None;
        self.retry = Some(i);
        (LwtOp::Cas, outcome)
    }
}

/// What a write did (a key and a value), and a read (one row of them).
const WROTE: Done = Done {
    rows: 0,
    bytes_written: 12,
    bytes_read: 0,
};
const READ: Done = Done {
    rows: 1,
    bytes_written: 0,
    bytes_read: 12,
};

impl Worker for LwtWorker {
    type Op = LwtOp;

    async fn next(&mut self) -> Option<(LwtOp, Result<Done, Failed>)> {
        match self.job {
            Job::Load => {
                // A row whose insert failed is tried again until it is there.
                let k = match self.retry.take() {
                    Some(k) => k as u64,
                    None => self.shared.next.fetch_add(1, Ordering::Relaxed),
                };
                if k >= u64::from(self.shared.keys) {
                    return None;
                }
                let shared = self.shared.clone();
                let done = self
                    .write(k as i32, &shared.statements.insert, (k as i32,))
                    .await;
                self.retry = done.is_err().then_some(k as usize);
                Some((LwtOp::Insert, done.map(|_| WROTE)))
            }
            Job::Cas => Some(self.cas_or_read().await),
            Job::Counter => {
                let k = self.keys[self.rng.gen_range(0..self.keys.len())];
                let shared = self.shared.clone();
                let done = match &shared.statements.increment {
                    Some(increment) => self.write(k, increment, (k,)).await.map(|_| WROTE),
                    None => Err(Failed::Wrong("no counter statement".into())),
                };
                Some((LwtOp::Increment, done))
            }
        }
    }
}

fn check_common(c: &LwtCommonArgs) -> anyhow::Result<()> {
    if c.client.concurrency == 0 {
        bail!("concurrency must be positive");
    }
    if c.keys == 0 || c.keys > i32::MAX as u32 {
        bail!("keys must be in 1..=2^31-1");
    }
    Ok(())
}

/// The workers of a phase; worker w draws from `keys_of(w)`.
fn workers(
    (session, statements): (Session, Statements),
    job: Job,
    keys_of: impl Fn(u64) -> Vec<i32>,
    c: &LwtCommonArgs,
) -> Vec<LwtWorker> {
    let next = AtomicU64::new(0);
    let keys = c.keys;
    let shared = Arc::new(Shared {
        session,
        statements,
        keys,
        next,
    });
    let seed = c.client.seed;
    (0..c.client.concurrency as u64)
        .map(|w| {
            let keys = keys_of(w);
            LwtWorker {
                shared: shared.clone(),
                job,
                rng: StdRng::seed_from_u64(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ w),
                values: vec![None; keys.len()],
                keys,
                retry: None,
                counts: HashMap::new(),
            }
        })
        .collect()
}

/// `lwt load`: the schema, then the rows.
async fn load(a: &LwtLoadArgs) -> anyhow::Result<(String, Value)> {
    let c = &a.common;
    check_common(c)?;
    let pids = pids_of(&c.client.pid_files)?;
    let session = connect(&c.client.hosts).await?;
    let ddl = [
        format!(
            "CREATE KEYSPACE IF NOT EXISTS {KEYSPACE} WITH replication = \
             {{'class': 'SimpleStrategy', 'replication_factor': {}}}",
            a.rf
        ),
        format!("CREATE TABLE IF NOT EXISTS {KEYSPACE}.{TABLE} (k int PRIMARY KEY, v bigint)"),
    ];
    phase::ddl(&session, &ddl).await?;
    let statements = Statements::prepare(&session, c, None).await?;
    let spec = PhaseSpec {
        name: "load",
        workload: "lwt".to_owned(),
        records: u64::from(c.keys),
        total: u64::from(c.keys),
        duration: None,
        pids: &pids,
        progress: !c.client.quiet,
    };
    let workers = workers((session, statements), Job::Load, |_| Vec::new(), c);
    let result = phase::run(&spec, workers).await?;
    let t = total(&counts_of(&result.workers));
    let mut text = result.report.text();
    text += &format!(
        "rows created {}, already there {}, failed and tried again {}\n",
        t.applied, t.not_applied, t.failed
    );
    let mut json = result.report.json();
    json["lwt"] = json!({
        "keyspace": KEYSPACE, "keys": c.keys, "rf": a.rf,
        "serial_cl": c.serial_cl, "commit_cl": c.commit_cl,
        "created": t.applied, "existed": t.not_applied, "failed": t.failed,
    });
    Ok((text, json))
}

/// `lwt run`: the warm-up, the measured seconds, then the check.
async fn run(a: &LwtRunArgs) -> anyhow::Result<(String, Value)> {
    let c = &a.common;
    check_common(c)?;
    phase::check_times(a.duration, a.warmup)?;
    let counter = a.workload == LwtWorkload::Counter;
    if !(1..=c.keys).contains(&a.hot_keys) || !(1..=i32::MAX as u32).contains(&a.counter_keys) {
        bail!("hot_keys must be in 1..=keys and counter_keys positive");
    }
    let counter_cl = parse_consistency(&a.counter_cl)?;
    let pids = pids_of(&c.client.pid_files)?;
    let session = connect(&c.client.hosts).await?;
    if counter {
        let table = format!("{KEYSPACE}.{COUNTERS} (k int PRIMARY KEY, n counter)");
        phase::ddl(&session, &[format!("CREATE TABLE IF NOT EXISTS {table}")]).await?;
    }
    let statements = Statements::prepare(&session, c, counter.then_some(counter_cl)).await?;
    let scan_statement = statements.scan.clone();
    let before = scan(&session, &scan_statement).await?;
    if !counter && before.len() != c.keys as usize {
        bail!(
            "table {KEYSPACE}.{TABLE} holds {} rows, not {}: run `lwt load` first",
            before.len(),
            c.keys
        );
    }
    let job = if counter { Job::Counter } else { Job::Cas };
    let mut workers = workers((session, statements), job, |w| a.keys_of(w), c);
    if workers.iter().any(|w| w.keys.is_empty()) {
        bail!("more workers than keys");
    }
    for w in &mut workers {
        for (i, k) in w.keys.iter().enumerate() {
            w.values[i] = before.get(k).copied();
        }
    }
    let spec = |name, seconds: f64, pids| PhaseSpec {
        name,
        workload: format!("lwt-{}", a.workload.name()),
        records: u64::from(if counter { a.counter_keys } else { c.keys }),
        total: 0,
        duration: Some(Duration::from_secs_f64(seconds)),
        pids,
        progress: !c.client.quiet,
    };
    let mut warmup_ops = 0;
    if a.warmup > 0.0 {
        let w = phase::run(&spec("warmup", a.warmup, &[]), workers).await?;
        warmup_ops = w.report.attempted;
        workers = w.workers;
    }
    let warm = total(&counts_of(&workers));
    let result = phase::run(&spec("run", a.duration, &pids), workers).await?;
    let (check_text, check_json) = check(&result, &before, &scan_statement).await?;
    let measured = total(&counts_of(&result.workers)).zip(&warm, u64::wrapping_sub);
    let report = &result.report;
    let secs = report.elapsed.as_secs_f64().max(1e-9);
    let main_op = [LwtOp::Cas, LwtOp::Increment][usize::from(counter)];
    let h = report.operations.get(&main_op).map(|s| &s.latency_us);
    let answered = h.map_or(0, |h| h.len());
    let (p50, p99) = h.map_or((0, 0), |h| {
        (h.value_at_quantile(0.5), h.value_at_quantile(0.99))
    });
    let mut text = report.text();
    text += &format!(
        "{}: {:.0}/s answered ({} in {secs:.1} s, p50 {p50} µs, p99 {p99} µs): applied {}, not applied {}, failed {}\n",
        main_op.name(), answered as f64 / secs, answered, measured.applied, measured.not_applied, measured.failed
    );
    text += &check_text;
    let mut json = report.json();
    json["lwt"] = json!({
        "keyspace": KEYSPACE, "workload": a.workload.name(), "keys": c.keys,
        "hot_keys": a.hot_keys, "counter_keys": a.counter_keys,
        "serial_cl": c.serial_cl, "commit_cl": c.commit_cl, "counter_cl": a.counter_cl,
        "duration_s": a.duration, "warmup_s": a.warmup, "warmup_ops": warmup_ops,
        "operation": main_op.name(),
        "answered_per_s": answered as f64 / secs, "p50_us": p50, "p99_us": p99,
        "applied": measured.applied, "not_applied": measured.not_applied, "failed": measured.failed,
        "applied_per_s": measured.applied as f64 / secs,
    });
    json["check"] = check_json;
    Ok((text, json))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_stable() {
        assert_eq!(LwtOp::SerialRead.name(), "serial_read");
        assert_eq!(LwtWorkload::Uncontended.name(), "uncontended");
        assert!(parse_serial("local_serial").is_ok() && parse_serial("QUORUM").is_err());
    }
}
