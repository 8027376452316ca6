//! `mosaic-cql-bench`: prepared INSERT / SELECT-by-key throughput over CQL.
#![allow(clippy::disallowed_methods)] // A benchmark client measures real time and runs real threads; it is not simulated.

use clap::Parser;
use mosaic_bench::kv::{run, KvConfig};

#[derive(Parser)]
#[command(about = "Prepared INSERT and SELECT-by-key throughput through the Rust scylla driver")]
struct Args {
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

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let a = Args::parse();
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
