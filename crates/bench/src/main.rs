//! `mosaic-bench`: the load generator, as `cassandra-stress` is to Cassandra — a CQL client
//! like any other, not linked into the server.
//!
//! - `mosaic-bench load|run …`: YCSB's core workloads (`mosaic_bench::cli`);
//! - `mosaic-bench kv …`: prepared INSERT / SELECT-by-key throughput.
#![allow(clippy::disallowed_methods)] // A benchmark client measures real time and runs real threads; it is not simulated.

use clap::{Parser, Subcommand};
use mosaic_bench::cli::{main as ycsb, BenchCommand, LoadArgs, RunArgs};
use mosaic_bench::kv::{run, KvConfig};

#[derive(Parser)]
#[command(
    name = "mosaic-bench",
    about = "Load against any CQL cluster (Mosaic or Apache Cassandra) through the Rust scylla driver"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// YCSB: create keyspace `ycsb` and table `usertable` if absent, then insert the records.
    Load(LoadArgs),
    /// YCSB: run a workload's operations over loaded records.
    Run(RunArgs),
    /// Prepared INSERT and SELECT-by-key throughput.
    Kv(KvArgs),
}

#[derive(clap::Args)]
struct KvArgs {
    /// host:port of a CQL node (Mosaic or Cassandra).
    #[arg(long, default_value = "127.0.0.1:9042")]
    host: String,
    /// Keyspace to create and use.
    #[arg(long, default_value = "bench")]
    keyspace: String,
    /// Requests per phase.
    #[arg(long, default_value_t = 200_000)]
    ops: u64,
    /// Requests in flight.
    #[arg(long, default_value_t = 64)]
    concurrency: usize,
    /// Key length in bytes.
    #[arg(long, default_value_t = 24)]
    key_bytes: usize,
    /// Value length in bytes.
    #[arg(long, default_value_t = 1000)]
    value_bytes: usize,
}

fn main() -> anyhow::Result<()> {
    match Cli::parse().command {
        Command::Load(a) => ycsb(BenchCommand::Load(a)),
        Command::Run(a) => ycsb(BenchCommand::Run(a)),
        Command::Kv(a) => tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()?
            .block_on(kv(a)),
    }
}

async fn kv(a: KvArgs) -> anyhow::Result<()> {
    let config = KvConfig {
        host: a.host,
        keyspace: a.keyspace,
        ops: a.ops,
        concurrency: a.concurrency,
        key_bytes: a.key_bytes,
        value_bytes: a.value_bytes,
    };
    println!(
        "kv: {} ops per phase, {} in flight, {}-byte keys, {}-byte values, against {}",
        config.ops, config.concurrency, config.key_bytes, config.value_bytes, config.host
    );
    for report in run(&config).await? {
        println!("{}", report.summary());
    }
    Ok(())
}
