//! db_bench-style benchmark of Mosaic's LSM engine, optionally against RocksDB (feature
//! `rocksdb`) in the same process and run: `fillrandom`, `readrandom`, `readseq`,
//! `seekrandom` and `overwrite`, with ops/s, latency percentiles and write/read
//! amplification measured with one yardstick (`/proc/self/io`) for every engine, plus each
//! engine's own counters. Each phase runs on every engine before the next phase starts.
//!
//! Every read checks that it found exactly what the last write of its key stored; a
//! benchmark whose reads miss fails.
#![deny(clippy::unwrap_used)]
#![allow(clippy::disallowed_methods)] // A benchmark client measures real time and runs real threads; it is not simulated.

pub mod engine;
pub mod mosaic;
pub mod report;
#[cfg(feature = "rocksdb")]
pub mod rocks;
pub mod sys;
pub mod workload;

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use hdrhistogram::Histogram;

pub use engine::{available_engines, open_engine, Engine, EngineConfig, EngineCounters};
use sys::ProcIo;
use workload::{key_into, permutation, Rng, Values};

mod phases;

use phases::*;

/// One kind of phase.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PhaseKind {
    /// Writes every key once, in random order.
    FillRandom,
    /// Writes `keys` random existing keys (with replacement).
    Overwrite,
    /// Point lookups of random existing keys.
    ReadRandom,
    /// One full scan of the key space.
    ReadSeq,
    /// Seeks to a random existing key and reads the next `scan_len` entries.
    SeekRandom,
}

impl PhaseKind {
    /// The db_bench name.
    pub fn name(self) -> &'static str {
        match self {
            PhaseKind::FillRandom => "fillrandom",
            PhaseKind::Overwrite => "overwrite",
            PhaseKind::ReadRandom => "readrandom",
            PhaseKind::ReadSeq => "readseq",
            PhaseKind::SeekRandom => "seekrandom",
        }
    }

    /// Whether the phase writes.
    pub fn writes(self) -> bool {
        matches!(self, PhaseKind::FillRandom | PhaseKind::Overwrite)
    }
}

impl fmt::Display for PhaseKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for PhaseKind {
    type Err = anyhow::Error;
    fn from_str(s: &str) -> Result<Self> {
        Ok(match s.trim() {
            "fillrandom" => PhaseKind::FillRandom,
            "overwrite" => PhaseKind::Overwrite,
            "readrandom" => PhaseKind::ReadRandom,
            "readseq" | "scan" => PhaseKind::ReadSeq,
            "seekrandom" | "scanrandom" => PhaseKind::SeekRandom,
            other => bail!(
                "unknown phase {other:?} (fillrandom, overwrite, readrandom, readseq, seekrandom)"
            ),
        })
    }
}

/// The default phase sequence.
pub const DEFAULT_PHASES: &str = "fillrandom,readrandom,readseq,seekrandom,overwrite,readrandom";

/// What to run.
#[derive(Clone, Debug)]
pub struct Config {
    /// Engines to run, each in its own directory; every phase runs on each in turn.
    pub engines: Vec<String>,
    /// Number of distinct keys.
    pub keys: u64,
    /// Key size in bytes (zero-padded decimal).
    pub key_bytes: usize,
    /// Value size in bytes.
    pub value_bytes: usize,
    /// Point lookups per `readrandom` phase.
    pub reads: u64,
    /// Seeks per `seekrandom` phase.
    pub seeks: u64,
    /// Entries read after each seek.
    pub scan_len: usize,
    /// Threads for the read phases (writes are single-threaded).
    pub threads: usize,
    /// The phases, in order; must start with `fillrandom`.
    pub phases: Vec<PhaseKind>,
    /// Parent directory of the engines' directories (must be on a real disk).
    pub dir: PathBuf,
    /// Keep the databases after the run.
    pub keep: bool,
    /// Seed for key order, lookups and values.
    pub seed: u64,
    /// Engine configuration shared by every engine.
    pub engine: EngineConfig,
    /// Progress lines on stderr.
    pub progress: bool,
}

impl Default for Config {
    fn default() -> Self {
        let keys = 2_000_000;
        Config {
            engines: available_engines().into_iter().map(str::to_owned).collect(),
            keys,
            key_bytes: 24,
            value_bytes: 1000,
            reads: keys / 4,
            seeks: keys / 40,
            scan_len: 100,
            threads: 1,
            phases: parse_phases(DEFAULT_PHASES).unwrap_or_default(),
            dir: std::env::temp_dir().join("mosaic-enginebench"),
            keep: false,
            seed: 42,
            engine: EngineConfig::default(),
            progress: true,
        }
    }
}

/// Parses a comma-separated phase list.
pub fn parse_phases(s: &str) -> Result<Vec<PhaseKind>> {
    s.split(',')
        .filter(|p| !p.trim().is_empty())
        .map(PhaseKind::from_str)
        .collect()
}

/// Latency percentiles of one phase, in nanoseconds.
#[derive(Clone, Copy, Debug, Default)]
pub struct Latency {
    /// Mean.
    pub mean: f64,
    /// Median.
    pub p50: u64,
    /// 99th percentile.
    pub p99: u64,
    /// 99.9th percentile.
    pub p999: u64,
    /// Slowest.
    pub max: u64,
}

impl Latency {
    fn of(h: &Histogram<u64>) -> Latency {
        if h.is_empty() {
            return Latency::default();
        }
        Latency {
            mean: h.mean(),
            p50: h.value_at_quantile(0.5),
            p99: h.value_at_quantile(0.99),
            p999: h.value_at_quantile(0.999),
            max: h.max(),
        }
    }
}

/// The measurements of one phase on one engine.
#[derive(Clone, Debug)]
pub struct PhaseResult {
    /// Label, e.g. `readrandom` or `readrandom#2`.
    pub label: String,
    /// Kind of phase.
    pub kind: PhaseKind,
    /// Operations timed (puts, gets, seeks, or entries for `readseq`).
    pub ops: u64,
    /// Wall time of the operations themselves.
    pub op_secs: f64,
    /// Wall time of the flush + compaction drain after a write phase (0 for reads).
    pub drain_secs: f64,
    /// CPU seconds of every thread (foreground + background) over the phase and its drain.
    pub cpu_secs: f64,
    /// Per-operation latency (`readseq`: per entry; `seekrandom`: per seek + scan).
    pub latency: Latency,
    /// Key + value bytes written by the caller.
    pub user_bytes_written: u64,
    /// Key + value bytes returned to the caller.
    pub user_bytes_read: u64,
    /// Entries returned by reads and scans.
    pub entries_read: u64,
    /// Process I/O over the phase and its drain.
    pub io: ProcIo,
    /// The engine's own counters over the phase and its drain.
    pub counters: EngineCounters,
    /// Bytes in the engine's directory after the phase.
    pub db_bytes: u64,
    /// Tree shape after the phase.
    pub shape: String,
    /// Per-level compaction statistics since open, after write phases (`compaction_stats`).
    pub compaction_report: String,
    /// Reads that did not find a key that was written, or scans that came back short.
    pub missing: u64,
    /// Reads that returned the wrong key or value.
    pub mismatched: u64,
}

fn ratio(num: u64, den: u64) -> f64 {
    if den == 0 {
        0.0
    } else {
        num as f64 / den as f64
    }
}

impl PhaseResult {
    /// Operations per second, counting only the operations' own time.
    pub fn ops_per_sec(&self) -> f64 {
        if self.op_secs > 0.0 {
            self.ops as f64 / self.op_secs
        } else {
            0.0
        }
    }

    /// Operations per second including the drain (the rate the engine can sustain).
    pub fn sustained_ops_per_sec(&self) -> f64 {
        let t = self.op_secs + self.drain_secs;
        if t > 0.0 {
            self.ops as f64 / t
        } else {
            0.0
        }
    }

    /// Disk bytes written (`/proc/self/io` `write_bytes`) per user byte written.
    pub fn disk_write_amp(&self) -> f64 {
        ratio(self.io.write_bytes, self.user_bytes_written)
    }

    /// Engine-reported bytes written (WAL + flush + compaction) per user byte written.
    pub fn engine_write_amp(&self) -> f64 {
        ratio(self.counters.bytes_written(), self.user_bytes_written)
    }

    /// Bytes read through read syscalls (page-cache hits included) per user byte read.
    pub fn syscall_read_amp(&self) -> f64 {
        ratio(self.io.rchar, self.user_bytes_read)
    }

    /// Bytes read from the block device per user byte read.
    pub fn disk_read_amp(&self) -> f64 {
        ratio(self.io.read_bytes, self.user_bytes_read)
    }

    /// Bytes the engine says it read from table files for the caller per user byte read.
    pub fn engine_read_amp(&self) -> f64 {
        ratio(self.counters.user_read_file_bytes, self.user_bytes_read)
    }

    /// Blocks the engine read from table files per operation (a read phase's I/Os per get).
    pub fn block_reads_per_op(&self) -> f64 {
        ratio(self.counters.get_block_reads, self.ops)
    }

    /// CPU microseconds (all threads) per operation.
    pub fn cpu_micros_per_op(&self) -> f64 {
        if self.ops == 0 {
            0.0
        } else {
            self.cpu_secs * 1e6 / self.ops as f64
        }
    }
}

/// Every phase of one engine.
#[derive(Clone, Debug)]
pub struct EngineRun {
    /// Engine name.
    pub engine: String,
    /// Phase results, in order.
    pub phases: Vec<PhaseResult>,
}

/// The whole run.
#[derive(Clone, Debug)]
pub struct Report {
    /// What was run.
    pub config: Config,
    /// CPU, cores, memory.
    pub machine: String,
    /// When (seconds since the Unix epoch).
    pub unix_time: u64,
    /// One run per engine.
    pub runs: Vec<EngineRun>,
}

impl Report {
    /// Descriptions of reads that missed or returned the wrong data.
    pub fn verification_errors(&self) -> Vec<String> {
        let mut out = Vec::new();
        for run in &self.runs {
            for p in &run.phases {
                if p.missing > 0 || p.mismatched > 0 {
                    out.push(format!(
                        "{} {}: {} missing, {} mismatched",
                        run.engine, p.label, p.missing, p.mismatched
                    ));
                }
            }
        }
        out
    }
}

/// Shared, read-only state of the data set: what the last write of each key stored.
struct DataSet {
    keys: u64,
    key_bytes: usize,
    values: Values,
    /// Writes of each key after the first.
    generations: Vec<u32>,
}

impl DataSet {
    fn expected(&self, n: u64) -> &[u8] {
        self.values.get(n, self.generations[n as usize])
    }
}

fn new_histogram() -> Histogram<u64> {
    // 1 ns to 10 minutes with three significant digits; slower operations count as 10 min.
    Histogram::new_with_bounds(1, 600_000_000_000, 3)
        .unwrap_or_else(|_| unreachable!("the bounds are valid"))
}

struct Progress {
    enabled: bool,
    engine: &'static str,
    label: String,
    total: u64,
    step: u64,
    start: Instant,
}

impl Progress {
    fn new(enabled: bool, engine: &'static str, label: &str, total: u64) -> Self {
        Progress {
            enabled,
            engine,
            label: label.to_owned(),
            total,
            step: (total / 10).max(1),
            start: Instant::now(),
        }
    }

    #[inline]
    fn tick(&self, done: u64) {
        if self.enabled && done > 0 && done % self.step == 0 {
            let secs = self.start.elapsed().as_secs_f64();
            eprintln!(
                "  [{} {}] {:>3}%  {:>10.0} ops/s",
                self.engine,
                self.label,
                done * 100 / self.total.max(1),
                done as f64 / secs.max(1e-9)
            );
        }
    }
}

/// Runs every phase of `config` on every engine, one engine after another.
pub fn run(config: &Config) -> Result<Report> {
    validate(config)?;
    std::fs::create_dir_all(&config.dir).with_context(|| format!("creating {:?}", config.dir))?;
    if let Some(fs) = sys::memory_fs(&config.dir) {
        eprintln!(
            "warning: {:?} is on {fs}; write amplification from /proc/self/io will be 0. \
             Use --dir on a real disk.",
            config.dir
        );
    }
    let runs = run_engines(config)?;
    let unix_time = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    Ok(Report {
        config: config.clone(),
        machine: sys::machine(),
        unix_time,
        runs,
    })
}

fn validate(config: &Config) -> Result<()> {
    if config.keys == 0 {
        bail!("--keys must be at least 1");
    }
    if config.key_bytes < 8 || config.key_bytes > 1024 {
        bail!("--key-bytes must be between 8 and 1024");
    }
    if config.keys > workload::max_keys(config.key_bytes) {
        bail!(
            "{} keys do not fit in {}-byte decimal keys",
            config.keys,
            config.key_bytes
        );
    }
    if usize::try_from(config.keys).is_err() || config.keys > u64::from(u32::MAX) {
        bail!("--keys must be below 2^32");
    }
    if config.value_bytes == 0 {
        bail!("--value-bytes must be at least 1");
    }
    if config.threads == 0 {
        bail!("--threads must be at least 1");
    }
    if config.phases.first() != Some(&PhaseKind::FillRandom) {
        bail!("the first phase must be fillrandom (the other phases read or overwrite its keys)");
    }
    if config.phases[1..].contains(&PhaseKind::FillRandom) {
        bail!("fillrandom may only run once, first");
    }
    if config.engines.is_empty() {
        bail!("no engines to run");
    }
    Ok(())
}

fn dir_bytes(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|e| match e.metadata() {
            Ok(m) if m.is_dir() => dir_bytes(&e.path()),
            Ok(m) => m.len(),
            Err(_) => 0,
        })
        .sum()
}

/// One engine under test with its own directory and its own record of the data set.
struct Slot {
    name: String,
    dir: PathBuf,
    engine: Box<dyn Engine>,
    data: DataSet,
    phases: Vec<PhaseResult>,
}

/// Opens every engine, then runs each phase on every engine before the next phase
/// (rotating which engine goes first), so that load from elsewhere on the machine and the
/// state of the OS page cache affect the engines alike.
fn run_engines(config: &Config) -> Result<Vec<EngineRun>> {
    let mut slots = Vec::new();
    for name in &config.engines {
        let dir = config.dir.join(name);
        if dir.exists() {
            std::fs::remove_dir_all(&dir).with_context(|| format!("clearing {dir:?}"))?;
        }
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {dir:?}"))?;
        let engine = open_engine(name, &dir, &config.engine)?;
        if config.progress {
            eprintln!("== {name}: {} keys in {dir:?}", config.keys);
        }
        slots.push(Slot {
            name: name.clone(),
            dir,
            engine,
            data: DataSet {
                keys: config.keys,
                key_bytes: config.key_bytes,
                values: Values::new(config.value_bytes, config.seed),
                generations: vec![0; config.keys as usize],
            },
            phases: Vec::new(),
        });
    }
    for (i, &kind) in config.phases.iter().enumerate() {
        let seen = config.phases[..i].iter().filter(|&&k| k == kind).count();
        let label = if seen == 0 {
            kind.to_string()
        } else {
            format!("{kind}#{}", seen + 1)
        };
        // The same seed on every engine: the same keys in the same order.
        let phase_seed = workload::mix(config.seed ^ ((i as u64 + 1) << 32));
        let n = slots.len();
        for j in 0..n {
            let slot = &mut slots[(i + j) % n];
            let r = run_phase(config, slot, kind, &label, phase_seed)?;
            slot.phases.push(r);
        }
    }
    let mut runs = Vec::new();
    for slot in slots {
        slot.engine.close()?;
        if !config.keep {
            std::fs::remove_dir_all(&slot.dir)
                .with_context(|| format!("removing {:?}", slot.dir))?;
        }
        runs.push(EngineRun {
            engine: slot.name,
            phases: slot.phases,
        });
    }
    Ok(runs)
}

fn run_phase(
    config: &Config,
    slot: &mut Slot,
    kind: PhaseKind,
    label: &str,
    phase_seed: u64,
) -> Result<PhaseResult> {
    let engine = slot.engine.as_ref();
    let data = &mut slot.data;
    let io0 = ProcIo::of_self().unwrap_or_default();
    let cpu0 = sys::cpu_seconds();
    let c0 = engine.counters();
    let mut r = match kind {
        PhaseKind::FillRandom | PhaseKind::Overwrite => {
            write_phase(config, engine, data, kind, label, phase_seed)?
        }
        PhaseKind::ReadRandom => read_random(config, engine, data, label, phase_seed)?,
        PhaseKind::ReadSeq => read_seq(config, engine, data, label)?,
        PhaseKind::SeekRandom => seek_random(config, engine, data, label, phase_seed)?,
    };
    sys::sync_fs(&slot.dir)?;
    r.io = ProcIo::of_self().unwrap_or_default().since(&io0);
    r.cpu_secs = sys::cpu_seconds() - cpu0;
    r.counters = engine.counters().since(&c0);
    r.db_bytes = dir_bytes(&slot.dir);
    r.shape = engine.shape();
    if config.progress {
        let name = &slot.name;
        eprintln!(
            "  [{name} {label}] done: {:.0} ops/s, p50 {:.2} µs, p99 {:.2} µs{}",
            r.ops_per_sec(),
            r.latency.p50 as f64 / 1e3,
            r.latency.p99 as f64 / 1e3,
            if kind.writes() {
                format!(
                    ", drain {:.1} s, write amp {:.2} (disk) / {:.2} (engine)",
                    r.drain_secs,
                    r.disk_write_amp(),
                    r.engine_write_amp()
                )
            } else {
                String::new()
            }
        );
        eprintln!("  [{name} {label}] shape: {}", r.shape);
    }
    if config.engine.compaction_stats && kind.writes() {
        r.compaction_report = engine.compaction_report();
        eprintln!(
            "  [{} {label}] compactions so far:\n{}",
            slot.name, r.compaction_report
        );
    }
    Ok(r)
}

fn empty_result(kind: PhaseKind, label: &str) -> PhaseResult {
    PhaseResult {
        label: label.to_owned(),
        kind,
        ops: 0,
        op_secs: 0.0,
        drain_secs: 0.0,
        cpu_secs: 0.0,
        latency: Latency::default(),
        user_bytes_written: 0,
        user_bytes_read: 0,
        entries_read: 0,
        io: ProcIo::default(),
        counters: EngineCounters::default(),
        db_bytes: 0,
        shape: String::new(),
        compaction_report: String::new(),
        missing: 0,
        mismatched: 0,
    }
}
