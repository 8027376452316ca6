//! `mosaic-enginebench`: db_bench-style workloads on Mosaic's engine and (with the
//! `rocksdb` feature) on RocksDB, in one run. See `BENCHMARKS.md`.
#![allow(clippy::disallowed_methods)] // A benchmark client measures real time and runs real threads; it is not simulated.

use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use clap::Parser;
use mosaic_enginebench::{available_engines, parse_phases, report, Config, EngineConfig};

/// Runs the same workload on each engine and prints ops/s, latency percentiles and
/// write/read amplification side by side.
#[derive(Parser, Debug)]
#[command(name = "mosaic-enginebench", version)]
struct Args {
    /// Engines to run, in order (rocksdb needs `--features rocksdb`).
    #[arg(long, value_delimiter = ',', default_value = "mosaic,rocksdb")]
    engines: Vec<String>,
    /// Number of distinct keys.
    #[arg(long, default_value_t = 2_000_000)]
    keys: u64,
    /// Key size in bytes (zero-padded decimal).
    #[arg(long, default_value_t = 24)]
    key_bytes: usize,
    /// Value size in bytes (random, incompressible).
    #[arg(long, default_value_t = 1000)]
    value_bytes: usize,
    /// Point lookups per readrandom phase [default: keys / 4].
    #[arg(long)]
    reads: Option<u64>,
    /// Seeks per seekrandom phase [default: keys / 40].
    #[arg(long)]
    seeks: Option<u64>,
    /// Entries read after each seek.
    #[arg(long, default_value_t = 100)]
    scan_len: usize,
    /// Threads for the read phases (writes are single-threaded).
    #[arg(long, default_value_t = 1)]
    threads: usize,
    /// Phases, in order; must start with fillrandom.
    #[arg(long, default_value = mosaic_enginebench::DEFAULT_PHASES)]
    phases: String,
    /// Parent directory for the databases; must be on a real disk, not tmpfs
    /// [default: $TMPDIR/mosaic-enginebench].
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Keep the databases after the run.
    #[arg(long)]
    keep: bool,
    /// Write the results as JSON to this file.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Seed for key order, lookups and values.
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// Memtable size in MiB.
    #[arg(long, default_value_t = 64)]
    memtable_mib: usize,
    /// Bloom filter bits per key.
    #[arg(long, default_value_t = 10)]
    bloom_bits: u32,
    /// Data block size in bytes.
    #[arg(long, default_value_t = 4096)]
    block_bytes: usize,
    /// Block cache size in MiB.
    #[arg(long, default_value_t = 64)]
    cache_mib: u64,
    /// Keep index and filter blocks in the block cache, charged to it and evicted, instead
    /// of pinned in memory (both engines' `cache_index_and_filter_blocks`).
    #[arg(long)]
    cache_index_and_filter: bool,
    /// Partition each table's index and filter every this many bytes of index behind a
    /// top-level index, 0 for one index block and one filter per table (Mosaic's
    /// `index_partition_bytes`; RocksDB's two-level index with partitioned filters and this
    /// `metadata_block_size`).
    #[arg(long, default_value_t = 0)]
    index_partition_bytes: usize,
    /// Read table files with O_DIRECT on both engines (bypasses the OS page cache).
    #[arg(long)]
    direct_io: bool,
    /// Write the tables of flushes and compactions with O_DIRECT on both engines (RocksDB's
    /// `use_direct_io_for_flush_and_compaction`, Mosaic's option of the same name).
    #[arg(long)]
    direct_io_writes: bool,
    /// Target size of level 1 in MiB.
    #[arg(long, default_value_t = 256)]
    level1_mib: u64,
    /// Target table size in MiB.
    #[arg(long, default_value_t = 64)]
    table_mib: u64,
    /// Level-0 files from which writers are slowed (both engines; at or above --l0-stop
    /// there is no slowdown stage, only the stop).
    #[arg(long, default_value_t = 20)]
    l0_slowdown: usize,
    /// Level-0 files at which writers stop.
    #[arg(long, default_value_t = 20)]
    l0_stop: usize,
    /// Background compaction threads per engine.
    #[arg(long, default_value_t = 1)]
    compaction_threads: usize,
    /// Print per-level compaction statistics of each engine after the write phases.
    #[arg(long)]
    compaction_stats: bool,
    /// No progress lines on stderr.
    #[arg(long, short)]
    quiet: bool,
}

fn main() -> Result<()> {
    let args = Args::parse();
    let built = available_engines();
    for e in &args.engines {
        if !built.contains(&e.as_str()) {
            if e == "rocksdb" && args.engines.len() > 1 {
                eprintln!("note: built without `--features rocksdb`; running Mosaic alone");
                continue;
            }
            bail!("engine {e:?} is not available in this build (available: {built:?})");
        }
    }
    let engines: Vec<String> = args
        .engines
        .iter()
        .filter(|e| built.contains(&e.as_str()))
        .cloned()
        .collect();
    let config = Config {
        engines,
        keys: args.keys,
        key_bytes: args.key_bytes,
        value_bytes: args.value_bytes,
        reads: args.reads.unwrap_or(args.keys / 4),
        seeks: args.seeks.unwrap_or(args.keys / 40),
        scan_len: args.scan_len,
        threads: args.threads,
        phases: parse_phases(&args.phases)?,
        dir: args
            .dir
            .unwrap_or_else(|| std::env::temp_dir().join("mosaic-enginebench")),
        keep: args.keep,
        seed: args.seed,
        engine: EngineConfig {
            memtable_bytes: args.memtable_mib << 20,
            bloom_bits_per_key: args.bloom_bits,
            block_bytes: args.block_bytes,
            cache_bytes: args.cache_mib << 20,
            cache_index_and_filter_blocks: args.cache_index_and_filter,
            index_partition_bytes: args.index_partition_bytes,
            direct_io: args.direct_io,
            direct_io_writes: args.direct_io_writes,
            level1_bytes: args.level1_mib << 20,
            table_bytes: args.table_mib << 20,
            l0_slowdown: args.l0_slowdown,
            l0_stop: args.l0_stop,
            compaction_threads: args.compaction_threads,
            compaction_stats: args.compaction_stats,
            ..EngineConfig::default()
        },
        progress: !args.quiet,
    };
    let report = mosaic_enginebench::run(&config)?;
    print!("{}", report::text(&report));
    if let Some(path) = &args.json {
        std::fs::write(path, report::json(&report)).with_context(|| format!("writing {path:?}"))?;
    }
    let errors = report.verification_errors();
    if !errors.is_empty() {
        bail!(
            "reads did not return what was written: {}",
            errors.join("; ")
        );
    }
    Ok(())
}
