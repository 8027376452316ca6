//! The closed-loop phases of the benchmarks that run their own operations (`index`, `lwt`):
//! a number of workers, each sending its next request when the previous one answers, either
//! until it has no operation left (a load) or until a deadline (a timed run); their
//! latencies in per-operation HDR histograms, failures by kind, result-check failures kept,
//! the progress display and timeline ([`Monitor`]), and the servers' CPU and disk traffic
//! over the phase. Also the command-line plumbing they share: running a command on its
//! own tokio runtime, printing its report and writing its JSON.

use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context};
use clap::Args;
use parking_lot::Mutex;
use scylla::client::session::Session;
use scylla::errors::ExecutionError;
use serde_json::Value;

use crate::monitor::Monitor;
use crate::osio::pid_from_file;
use crate::ycsb::{error_kind, Meter, OperationKind, Report, Tally};

/// Result-check failures kept in a phase's report, at most.
const RESULT_ERRORS_KEPT: usize = 10;

/// What one operation did, when it succeeded.
#[derive(Default, Debug)]
pub(crate) struct Done {
    /// Rows it returned.
    pub(crate) rows: u64,
    /// User bytes it wrote (keys and values).
    pub(crate) bytes_written: u64,
    /// User bytes it read.
    pub(crate) bytes_read: u64,
}

/// Why one operation failed.
#[derive(Debug)]
pub(crate) enum Failed {
    /// The driver's error, by kind ([`error_kind`]).
    Driver(String),
    /// The answer lacked rows the data set has (a description).
    Missing(String),
    /// The answer held a row it should not have, or a row twice, or could not be decoded.
    Wrong(String),
}

impl From<ExecutionError> for Failed {
    fn from(e: ExecutionError) -> Failed {
        Failed::Driver(error_kind(&e))
    }
}

/// An answer the client could not decode.
pub(crate) fn undecodable(e: impl std::fmt::Display) -> Failed {
    Failed::Wrong(format!("undecodable answer: {e}"))
}

/// The client options of the commands that run closed-loop phases.
#[derive(Args, Debug, Clone)]
pub struct ClientArgs {
    /// Contact points, `host[:port]` separated by commas (port 9042 by default).
    #[arg(long, value_delimiter = ',', required = true)]
    pub hosts: Vec<String>,
    /// Requests in flight.
    #[arg(long, default_value_t = 64)]
    pub concurrency: usize,
    /// Files holding server process ids (e.g. DIR/node1/pid), read at start: CPU and disk
    /// traffic of the servers over the measured phase.
    #[arg(long, value_delimiter = ',')]
    pub pid_files: Vec<PathBuf>,
    /// Also write the report as JSON to this file.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Seed of the random choices.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// No progress line on stderr.
    #[arg(long)]
    pub quiet: bool,
}

/// One closed-loop worker: its own state and its next operation.
pub(crate) trait Worker: Send + 'static {
    /// The kinds of operation it runs.
    type Op: OperationKind + Send;

    /// Runs the next operation; its kind and outcome, or `None` when the worker has no
    /// operation left (the phase then ends for it).
    fn next(&mut self) -> impl Future<Output = Option<(Self::Op, Result<Done, Failed>)>> + Send;
}

/// How a phase runs and what its report says.
pub(crate) struct PhaseSpec<'a> {
    /// `load`, `warmup`, `run`.
    pub(crate) name: &'static str,
    /// The workload's name in the report.
    pub(crate) workload: String,
    /// Records of the data set, in the report.
    pub(crate) records: u64,
    /// Operations the phase will run when known (for the progress bar; 0 otherwise).
    pub(crate) total: u64,
    /// A timed phase's length; `None` runs until every worker has no operation left.
    pub(crate) duration: Option<Duration>,
    /// Server processes whose CPU and disk traffic the report counts.
    pub(crate) pids: &'a [u32],
    /// Progress on stderr.
    pub(crate) progress: bool,
}

/// What a phase measured, and its workers (handed back for their state and the next phase).
pub(crate) struct PhaseResult<W: Worker> {
    pub(crate) report: Report<W::Op>,
    /// Rows the operations returned.
    pub(crate) rows: u64,
    /// The first result-check failures, described.
    pub(crate) result_errors: Vec<String>,
    pub(crate) workers: Vec<W>,
}

/// What one worker's task hands back.
struct Ended<W: Worker> {
    worker: W,
    tally: Tally<W::Op>,
    rows: u64,
}

/// Runs `worker` until it has no operation left or `deadline` passes.
async fn drive<W: Worker>(
    mut worker: W,
    deadline: Option<Instant>,
    monitor: Arc<Monitor>,
    result_errors: Arc<Mutex<Vec<String>>>,
) -> anyhow::Result<Ended<W>> {
    let mut tally = Tally::<W::Op>::default();
    let mut rows = 0u64;
    loop {
        if deadline.is_some_and(|d| Instant::now() >= d) {
            break;
        }
        let start = Instant::now();
        let Some((op, outcome)) = worker.next().await else {
            break;
        };
        let micros = u64::try_from(start.elapsed().as_micros()).unwrap_or(u64::MAX);
        monitor.finished(outcome.is_ok().then_some(micros));
        let stats = tally.stats(op)?;
        match outcome {
            Ok(done) => {
                stats.latency_us.saturating_record(micros.max(1));
                rows += done.rows;
                tally.user_bytes_written += done.bytes_written;
                tally.user_bytes_read += done.bytes_read;
            }
            Err(failed) => {
                stats.errors += 1;
                let (kind, detail) = match failed {
                    Failed::Driver(kind) => (kind, None),
                    Failed::Missing(d) => ("missing_rows".to_owned(), Some(d)),
                    Failed::Wrong(d) => ("wrong_rows".to_owned(), Some(d)),
                };
                if let Some(d) = detail {
                    let mut kept = result_errors.lock();
                    if kept.len() < RESULT_ERRORS_KEPT {
                        kept.push(format!("{}: {d}", op.name()));
                    }
                }
                *tally.errors_by_kind.entry(kind).or_default() += 1;
            }
        }
    }
    Ok(Ended {
        worker,
        tally,
        rows,
    })
}

/// Runs one phase with `workers` (one request in flight each).
pub(crate) async fn run<W: Worker>(
    spec: &PhaseSpec<'_>,
    workers: Vec<W>,
) -> anyhow::Result<PhaseResult<W>> {
    let concurrency = workers.len();
    let meter = Meter::start(spec.pids)?;
    let start = Instant::now();
    let monitor = Arc::new(Monitor::new(spec.total, start)?);
    let result_errors = Arc::new(Mutex::new(Vec::new()));
    let deadline = spec.duration.map(|d| start + d);
    let sampler = tokio::spawn(monitor.clone().run(spec.name, spec.progress));
    let tasks: Vec<_> = workers
        .into_iter()
        .map(|w| tokio::spawn(drive(w, deadline, monitor.clone(), result_errors.clone())))
        .collect();
    let mut tally = Tally::<W::Op>::default();
    let mut rows = 0;
    let mut workers = Vec::with_capacity(concurrency);
    for t in tasks {
        let ended = t.await.context("a worker panicked")??;
        tally.merge(&ended.tally)?;
        rows += ended.rows;
        workers.push(ended.worker);
    }
    let elapsed = start.elapsed();
    sampler.abort();
    let timeline = monitor.finish();
    let (server_io, server_cpu_s, client_cpu_s) = meter.read()?;
    let attempted = tally
        .operations
        .values()
        .map(|s| s.latency_us.len() + s.errors)
        .sum();
    let report = Report {
        phase: spec.name,
        workload: spec.workload.clone(),
        records: spec.records,
        attempted,
        concurrency,
        rate: None,
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
    };
    let result_errors = std::mem::take(&mut *result_errors.lock());
    Ok(PhaseResult {
        report,
        rows,
        result_errors,
        workers,
    })
}

/// The process ids in `files` (e.g. DIR/node1/pid).
pub(crate) fn pids_of(files: &[PathBuf]) -> anyhow::Result<Vec<u32>> {
    files.iter().map(|f| pid_from_file(f)).collect()
}

/// Refuses a timed run's lengths that are not numbers of seconds.
pub(crate) fn check_times(duration: f64, warmup: f64) -> anyhow::Result<()> {
    if !(duration.is_finite() && duration > 0.0) {
        bail!("duration must be a positive number of seconds");
    }
    if !(warmup.is_finite() && warmup >= 0.0) {
        bail!("warmup must be a number of seconds");
    }
    Ok(())
}

/// The result-check failures as report lines.
pub(crate) fn result_errors_text(errors: &[String]) -> String {
    errors
        .iter()
        .map(|e| format!("result check failed: {e}\n"))
        .collect()
}

/// Runs a command on its own tokio runtime; prints its text report on stdout and writes its
/// JSON report to `json` when given.
pub(crate) fn main<F>(json: Option<PathBuf>, command: F) -> anyhow::Result<()>
where
    F: Future<Output = anyhow::Result<(String, Value)>>,
{
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the tokio runtime")?;
    let (text, report) = runtime.block_on(command)?;
    print!("{text}");
    if let Some(path) = json {
        let text = serde_json::to_string_pretty(&report)?;
        std::fs::write(&path, text + "\n")
            .with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}

/// Executes DDL statements one after the other, each followed by a wait for schema
/// agreement.
pub(crate) async fn ddl(session: &Session, statements: &[String]) -> anyhow::Result<()> {
    for cql in statements {
        session
            .query_unpaged(cql.as_str(), &[])
            .await
            .with_context(|| format!("executing {cql}"))?;
        session
            .await_schema_agreement()
            .await
            .context("waiting for schema agreement")?;
    }
    Ok(())
}

/// A worker that outlived its phase cannot hand back what it shares.
pub(crate) fn unshare<T>(shared: Arc<T>) -> anyhow::Result<T> {
    Arc::into_inner(shared).ok_or_else(|| anyhow!("a worker outlived its phase"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
    struct Op;

    impl OperationKind for Op {
        fn name(self) -> &'static str {
            "op"
        }
    }

    /// Counts down; every third operation fails, the fifth returns a wrong answer.
    struct Countdown(u32);

    impl Worker for Countdown {
        type Op = Op;

        async fn next(&mut self) -> Option<(Op, Result<Done, Failed>)> {
            if self.0 == 0 {
                return None;
            }
            self.0 -= 1;
            let outcome = match self.0 {
                5 => Err(Failed::Wrong("five".into())),
                n if n % 3 == 0 => Err(Failed::Driver("WriteTimeout".into())),
                _ => Ok(Done {
                    rows: 2,
                    bytes_written: 1,
                    bytes_read: 0,
                }),
            };
            Some((Op, outcome))
        }
    }

    #[test]
    fn a_phase_counts_every_workers_operations() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let spec = PhaseSpec {
            name: "load",
            workload: "test".into(),
            records: 10,
            total: 20,
            duration: None,
            pids: &[],
            progress: false,
        };
        let result = runtime
            .block_on(run(&spec, vec![Countdown(10), Countdown(10)]))
            .unwrap();
        let r = &result.report;
        // 10 each: 9, 6, 3, 0 time out, 5 is wrong.
        assert_eq!(r.attempted, 20);
        assert_eq!(r.errors(), 10);
        assert_eq!(r.errors_by_kind["WriteTimeout"], 8);
        assert_eq!(r.errors_by_kind["wrong_rows"], 2);
        assert_eq!(result.rows, 20);
        assert_eq!(r.user_bytes_written, 10);
        assert_eq!(result.result_errors, ["op: five", "op: five"]);
        assert!(result.workers.iter().all(|w| w.0 == 0));
    }
}
