//! The `mosaic bench load|run` command line (a stable interface: scripts drive it), shared
//! by the `mosaic` binary, which only forwards to [`main`].

use std::path::PathBuf;

use anyhow::{anyhow, Context};
use clap::{Args, Subcommand};

use crate::osio::pid_from_file;
use crate::workload::Workload;
use crate::ycsb::{execute, parse_consistency, BenchConfig, Phase, Report};

/// `mosaic bench load` and `mosaic bench run`.
#[derive(Subcommand, Debug)]
pub enum BenchCommand {
    /// Create keyspace `ycsb` and table `usertable` if absent, then insert the records.
    Load(LoadArgs),
    /// Run a workload's operations over loaded records.
    Run(RunArgs),
}

/// Options both phases share.
#[derive(Args, Debug)]
pub struct CommonArgs {
    /// Contact points, `host[:port]` separated by commas (port 9042 by default).
    #[arg(long, value_delimiter = ',', required = true)]
    pub hosts: Vec<String>,
    /// YCSB core workload: a, b, c, d, e or f.
    #[arg(long, default_value = "a")]
    pub workload: String,
    /// Records in the key space (the same number for load and run).
    #[arg(long)]
    pub records: u64,
    /// Requests in flight.
    #[arg(long, default_value_t = 16)]
    pub concurrency: usize,
    /// Consistency level of inserts and updates.
    #[arg(long, default_value = "ONE")]
    pub write_cl: String,
    /// Target rate in operations per second: open loop, latency from the intended start.
    #[arg(long)]
    pub rate: Option<f64>,
    /// Server process ids whose /proc/PID/io is read before and after the phase.
    #[arg(long, value_delimiter = ',')]
    pub pids: Vec<u32>,
    /// Files holding server process ids (e.g. DIR/node1/pid), read at start.
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

/// Options of `mosaic bench load`.
#[derive(Args, Debug)]
pub struct LoadArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    /// Replication factor of keyspace `ycsb` (SimpleStrategy), if it is created.
    #[arg(long, default_value_t = 1)]
    pub rf: u32,
    /// Mosaic's `layout` option of table `usertable`, if it is created (Mosaic only).
    #[arg(long)]
    pub layout: Option<String>,
}

/// Options of `mosaic bench run`.
#[derive(Args, Debug)]
pub struct RunArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    /// Operations to run.
    #[arg(long)]
    pub operations: u64,
    /// Consistency level of reads and scans.
    #[arg(long, default_value = "ONE")]
    pub read_cl: String,
}

fn config(common: &CommonArgs, phase: Phase, read_cl: &str) -> anyhow::Result<BenchConfig> {
    let workload = Workload::preset(&common.workload)
        .ok_or_else(|| anyhow!("unknown workload {:?} (a..f)", common.workload))?;
    let mut pids = common.pids.clone();
    for f in &common.pid_files {
        pids.push(pid_from_file(f)?);
    }
    Ok(BenchConfig {
        hosts: common.hosts.clone(),
        workload,
        records: common.records,
        phase,
        concurrency: common.concurrency,
        read_cl: parse_consistency(read_cl)?,
        write_cl: parse_consistency(&common.write_cl)?,
        rate: common.rate,
        pids,
        progress: !common.quiet,
        seed: common.seed,
    })
}

/// Runs a `mosaic bench` command on its own tokio runtime; prints the report on stdout and
/// writes the JSON when asked.
pub fn main(command: BenchCommand) -> anyhow::Result<()> {
    let (common, config) = match &command {
        BenchCommand::Load(a) => (
            &a.common,
            config(
                &a.common,
                Phase::Load {
                    rf: a.rf,
                    layout: a.layout.clone(),
                },
                "ONE",
            )?,
        ),
        BenchCommand::Run(a) => (
            &a.common,
            config(
                &a.common,
                Phase::Run {
                    operations: a.operations,
                },
                &a.read_cl,
            )?,
        ),
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the tokio runtime")?;
    let report: Report = runtime.block_on(execute(config))?;
    print!("{}", report.text());
    if let Some(path) = &common.json {
        let text = serde_json::to_string_pretty(&report.json())?;
        std::fs::write(path, text + "\n").with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}
