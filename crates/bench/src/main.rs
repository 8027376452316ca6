//! `mosaic-bench`: the load generator, as `cassandra-stress` is to Cassandra — a CQL client
//! like any other, not linked into the server.
//!
//! - `mosaic-bench load|run …`: YCSB's core workloads (`mosaic_bench::cli`);
//! - `mosaic-bench kv …`: prepared INSERT / SELECT-by-key throughput;
//! - `mosaic-bench index load|run …`: secondary-index queries and list appends
//!   (`mosaic_bench::index`);
//! - `mosaic-bench lwt load|run …`: lightweight transactions and counter increments
//!   (`mosaic_bench::lwt`);
//! - `mosaic-bench tpch …`: TPC-H `orders` and the heterogeneous-replicas queries.
#![allow(clippy::disallowed_methods)] // A benchmark client measures real time and runs real threads; it is not simulated.

use clap::{Parser, Subcommand};
use mosaic_bench::cli::{main as ycsb, BenchCommand, LoadArgs, RunArgs};
use mosaic_bench::index::{self, IndexCommand};
use mosaic_bench::kv::{run, KvConfig};
use mosaic_bench::lwt::{self, LwtCommand};
use mosaic_bench::tpch;

#[derive(Parser)]
#[command(
    name = "mosaic-bench",
    about = "Load against any CQL cluster (Mosaic or Apache Cassandra) through the Rust scylla driver"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    #[command(flatten)]
    security: mosaic_bench::security::ClientSecurity,
}

#[derive(Subcommand)]
enum Command {
    /// YCSB: create keyspace `ycsb` and table `usertable` if absent, then insert the records.
    Load(LoadArgs),
    /// YCSB: run a workload's operations over loaded records.
    Run(RunArgs),
    /// Prepared INSERT and SELECT-by-key throughput.
    Kv(KvArgs),
    /// Secondary-index queries (low and high cardinality) and list appends:
    /// `index load`, then `index run --workload low|high|append`.
    #[command(subcommand)]
    Index(IndexCommand),
    /// Lightweight transactions on uncontended and contended keys, and counter increments:
    /// `lwt load`, then `lwt run --workload uncontended|contended|counter`.
    #[command(subcommand)]
    Lwt(LwtCommand),
    /// TPC-H `orders` and the heterogeneous-replicas paper's queries Q1 and Q2.
    #[command(subcommand)]
    Tpch(TpchCommand),
}

#[derive(Subcommand)]
enum TpchCommand {
    /// Create the keyspace and table, and insert the orders of a scale factor.
    Load(TpchLoadArgs),
    /// Print the query instances as a workload file (`mosaic hr optimize --workload`).
    Workload(TpchQueryArgs),
    /// Run the query instances one at a time and report latencies (JSON with --json).
    Run(TpchRunArgs),
    /// Execute one CQL statement (DDL, for scripts) and wait for schema agreement.
    Exec(TpchExecArgs),
}

#[derive(clap::Args)]
struct TpchExecArgs {
    /// host:port of a CQL node.
    #[arg(long, default_value = "127.0.0.1:9042")]
    host: String,
    /// The statement.
    #[arg(long)]
    statement: String,
}

#[derive(clap::Args)]
struct TpchTable {
    /// host:port of a CQL node.
    #[arg(long, default_value = "127.0.0.1:9042")]
    host: String,
    /// Keyspace.
    #[arg(long, default_value = "tpch")]
    keyspace: String,
    /// Table.
    #[arg(long, default_value = "orders")]
    table: String,
    /// Partitions (`bucket = orderkey % buckets`).
    #[arg(long, default_value_t = 1)]
    buckets: i64,
    /// TPC-H scale factor (1.5 million orders per unit).
    #[arg(long, default_value_t = 1.0)]
    scale_factor: f64,
}

#[derive(clap::Args)]
struct TpchLoadArgs {
    #[command(flatten)]
    table: TpchTable,
    /// Replication factor of the keyspace.
    #[arg(long, default_value_t = 3)]
    rf: u32,
    /// The table's layout, a CQL map literal (`{'class': 'heterogeneous', …}`); empty for
    /// the node's default.
    #[arg(long, default_value = "")]
    layout: String,
    /// Inserts in flight.
    #[arg(long, default_value_t = 64)]
    concurrency: usize,
}

#[derive(clap::Args)]
struct TpchQueryArgs {
    #[command(flatten)]
    table: TpchTable,
    /// Query instances (alternately Q1 and Q2).
    #[arg(long, default_value_t = 500)]
    queries: usize,
    /// Seed of the instances.
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

#[derive(clap::Args)]
struct TpchRunArgs {
    #[command(flatten)]
    query: TpchQueryArgs,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
    /// Consistency level of the queries (ONE: the read goes to one replica, as the
    /// DataStax drivers' LOCAL_ONE default does).
    #[arg(long, default_value = "ONE")]
    consistency: String,
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
    let cli = Cli::parse();
    mosaic_bench::security::configure(&cli.security)?;
    match cli.command {
        Command::Load(a) => ycsb(BenchCommand::Load(a)),
        Command::Run(a) => ycsb(BenchCommand::Run(a)),
        Command::Index(c) => index::main(c),
        Command::Lwt(c) => lwt::main(c),
        Command::Kv(a) => tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()?
            .block_on(kv(a)),
        Command::Tpch(c) => tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()?
            .block_on(tpch_command(c)),
    }
}

fn tpch_spec(t: &TpchTable) -> tpch::TableSpec {
    tpch::TableSpec {
        host: t.host.clone(),
        keyspace: t.keyspace.clone(),
        table: t.table.clone(),
        buckets: t.buckets,
    }
}

async fn tpch_command(c: TpchCommand) -> anyhow::Result<()> {
    match c {
        TpchCommand::Load(a) => {
            let spec = tpch_spec(&a.table);
            let r = tpch::load(&spec, a.table.scale_factor, a.rf, &a.layout, a.concurrency).await?;
            println!("{}", serde_json::to_string(&r)?);
        }
        TpchCommand::Exec(a) => tpch::exec(&a.host, &a.statement).await?,
        TpchCommand::Workload(a) => {
            let spec = tpch_spec(&a.table);
            println!(
                "# TPC-H orders at scale factor {}: {} instances of Q1 and Q2 (seed {})",
                a.table.scale_factor, a.queries, a.seed
            );
            for i in tpch::instances(a.table.scale_factor, a.table.buckets, a.queries, a.seed) {
                println!("1 {};", i.cql(&spec));
            }
        }
        TpchCommand::Run(a) => {
            let q = &a.query;
            let spec = tpch_spec(&q.table);
            let instances =
                tpch::instances(q.table.scale_factor, q.table.buckets, q.queries, q.seed);
            let cl = mosaic_bench::ycsb::parse_consistency(&a.consistency)?;
            let r = tpch::run(&spec, &instances, cl).await?;
            if a.json {
                println!("{}", serde_json::to_string(&r)?);
            } else {
                for k in &r.kinds {
                    println!(
                        "{:<4} queries {:>5}  rows {:>7}  mean {:>10.0} us  p50 {:>9} us  p99 {:>9} us  max {:>9} us",
                        k.kind, k.queries, k.rows, k.mean_us, k.p50_us, k.p99_us, k.max_us
                    );
                }
            }
        }
    }
    Ok(())
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
