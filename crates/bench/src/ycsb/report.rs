//! What a phase measured: per-operation latency histograms and error counts (merged from
//! every worker), and the report printed as text and written as JSON.

use super::*;

/// A kind of operation a report counts, named in its text and JSON: YCSB's [`Operation`],
/// or another benchmark's own (the index benchmark's queries and appends).
pub trait OperationKind: Copy + Ord + std::fmt::Debug {
    /// The name in reports and JSON.
    fn name(self) -> &'static str;
}

impl OperationKind for Operation {
    fn name(self) -> &'static str {
        Operation::name(self)
    }
}

/// Latency and outcome of one kind of operation.
#[derive(Clone, Debug)]
pub struct OperationStats {
    /// Latency of successful operations, in microseconds.
    pub latency_us: Histogram<u64>,
    /// Failed operations.
    pub errors: u64,
}

impl OperationStats {
    pub(crate) fn new() -> anyhow::Result<OperationStats> {
        Ok(OperationStats {
            latency_us: Histogram::new_with_bounds(1, LATENCY_US_MAX, 3)
                .map_err(|e| anyhow!("histogram: {e}"))?,
            errors: 0,
        })
    }

    fn merge(&mut self, o: &OperationStats) -> anyhow::Result<()> {
        self.latency_us
            .add(&o.latency_us)
            .map_err(|e| anyhow!("histogram: {e}"))?;
        self.errors += o.errors;
        Ok(())
    }
}

/// What one worker (or the whole phase, after merging) measured.
#[derive(Clone, Debug)]
pub(crate) struct Tally<K: OperationKind = Operation> {
    pub(crate) operations: BTreeMap<K, OperationStats>,
    /// The same operations split by the size of the record they touched (`usual`,
    /// `large`), when the workload has large records.
    pub(crate) by_size: BTreeMap<&'static str, OperationStats>,
    pub(crate) errors_by_kind: BTreeMap<String, u64>,
    pub(crate) user_bytes_written: u64,
    pub(crate) user_bytes_read: u64,
}

impl<K: OperationKind> Default for Tally<K> {
    fn default() -> Self {
        Tally {
            operations: BTreeMap::new(),
            by_size: BTreeMap::new(),
            errors_by_kind: BTreeMap::new(),
            user_bytes_written: 0,
            user_bytes_read: 0,
        }
    }
}

impl<K: OperationKind> Tally<K> {
    pub(crate) fn stats(&mut self, op: K) -> anyhow::Result<&mut OperationStats> {
        Ok(match self.operations.entry(op) {
            Entry::Occupied(e) => e.into_mut(),
            Entry::Vacant(e) => e.insert(OperationStats::new()?),
        })
    }

    pub(crate) fn size_stats(&mut self, size: &'static str) -> anyhow::Result<&mut OperationStats> {
        Ok(match self.by_size.entry(size) {
            Entry::Occupied(e) => e.into_mut(),
            Entry::Vacant(e) => e.insert(OperationStats::new()?),
        })
    }

    pub(crate) fn merge(&mut self, o: &Tally<K>) -> anyhow::Result<()> {
        for (op, s) in &o.operations {
            self.stats(*op)?.merge(s)?;
        }
        for (size, s) in &o.by_size {
            self.size_stats(size)?.merge(s)?;
        }
        for (kind, n) in &o.errors_by_kind {
            *self.errors_by_kind.entry(kind.clone()).or_default() += n;
        }
        self.user_bytes_written += o.user_bytes_written;
        self.user_bytes_read += o.user_bytes_read;
        Ok(())
    }
}

/// The result of a phase.
#[derive(Clone, Debug)]
pub struct Report<K: OperationKind = Operation> {
    /// `load` or `run`.
    pub phase: &'static str,
    /// The workload's name.
    pub workload: String,
    /// Records of the key space.
    pub records: u64,
    /// Operations attempted.
    pub attempted: u64,
    /// Requests in flight.
    pub concurrency: usize,
    /// Target rate (open loop), if any.
    pub rate: Option<f64>,
    /// Wall time of the phase.
    pub elapsed: Duration,
    /// Per kind of operation.
    pub operations: BTreeMap<K, OperationStats>,
    /// Every operation, by the size of the record it touched (`usual`, `large`; empty
    /// unless the workload has large records).
    pub by_size: BTreeMap<&'static str, OperationStats>,
    /// Failures by kind (`not_found`, `ReadTimeout`, `client_timeout`, …).
    pub errors_by_kind: BTreeMap<String, u64>,
    /// Key and field bytes sent in inserts and updates.
    pub user_bytes_written: u64,
    /// Key and field bytes of the rows reads and scans returned.
    pub user_bytes_read: u64,
    /// Disk traffic of the server processes over the phase, when pids were given.
    pub server_io: Option<IoCounters>,
    /// CPU seconds each server process (in `pids` order) used over the phase.
    pub server_cpu_s: Vec<f64>,
    /// CPU seconds this client used over the phase.
    pub client_cpu_s: f64,
    /// One point per second: operations, errors, p50 and p99 latency.
    pub timeline: Vec<TimelinePoint>,
}

impl<K: OperationKind> Report<K> {
    /// Successful operations.
    pub fn succeeded(&self) -> u64 {
        self.operations.values().map(|s| s.latency_us.len()).sum()
    }

    /// Failed operations.
    pub fn errors(&self) -> u64 {
        self.operations.values().map(|s| s.errors).sum()
    }

    /// Successful operations per second.
    pub fn throughput(&self) -> f64 {
        self.succeeded() as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }

    /// Disk bytes written per user byte written, and read per user byte read.
    pub fn amplification(&self) -> Option<(Option<f64>, Option<f64>)> {
        let io = self.server_io?;
        let ratio = |disk: u64, user: u64| (user > 0).then(|| disk as f64 / user as f64);
        Some((
            ratio(io.write_bytes, self.user_bytes_written),
            ratio(io.read_bytes, self.user_bytes_read),
        ))
    }

    /// CPU microseconds per successful operation: of each server process, and of the
    /// client.
    pub fn cpu_us_per_op(&self) -> (Vec<f64>, f64) {
        let ops = self.succeeded().max(1) as f64;
        let per_op = |s: f64| s * 1e6 / ops;
        (
            self.server_cpu_s.iter().map(|&s| per_op(s)).collect(),
            per_op(self.client_cpu_s),
        )
    }

    /// The human-readable report.
    pub fn text(&self) -> String {
        let mut out = format!(
            "{} workload {}: {} records, {} operations, {} in flight{}\n{:.1} s, {:.0} ops/s, {} errors\n",
            self.phase,
            self.workload,
            self.records,
            self.attempted,
            self.concurrency,
            self.rate
                .map(|r| format!(", open loop at {r} ops/s"))
                .unwrap_or_default(),
            self.elapsed.as_secs_f64(),
            self.throughput(),
            self.errors(),
        );
        out += &format!(
            "{:<18} {:>9} {:>7} {:>9} {:>8} {:>8} {:>8} {:>8} {:>8}\n",
            "operation", "count", "errors", "mean µs", "p50", "p95", "p99", "p99.9", "max"
        );
        for (op, s) in &self.operations {
            out += &text_row(op.name(), s);
        }
        for (size, s) in &self.by_size {
            out += &text_row(&format!("(records) {size}"), s);
        }
        for (kind, n) in &self.errors_by_kind {
            out += &format!("error {kind}: {n}\n");
        }
        if let (Some(io), Some((write_amp, read_amp))) = (self.server_io, self.amplification()) {
            let fmt = |a: Option<f64>| a.map_or("-".to_string(), |a| format!("{a:.2}"));
            out += &format!(
                "server disk: {} B written ({} per user byte of {} B), {} B read ({} per user byte of {} B)\n",
                io.write_bytes,
                fmt(write_amp),
                self.user_bytes_written,
                io.read_bytes,
                fmt(read_amp),
                self.user_bytes_read,
            );
        }
        let (servers, client) = self.cpu_us_per_op();
        if !servers.is_empty() {
            let nodes: Vec<String> = servers.iter().map(|us| format!("{us:.0}")).collect();
            out += &format!(
                "CPU per operation: servers {:.0} µs (per node {}), client {client:.0} µs\n",
                servers.iter().sum::<f64>(),
                nodes.join(" / "),
            );
        }
        out
    }

    /// The JSON report: `throughput_ops`, `operations.{kind}.{count, errors, mean_us,
    /// p50_us, p95_us, p99_us, p999_us, max_us, latency_cdf_us}`, the same per record
    /// size in `by_size.{usual, large}` (empty without large records), `errors`,
    /// `errors_by_kind`, user bytes, and `server_io` with the amplification when pids were
    /// given, and `cpu_us_per_op` (`servers`, `per_node`, `client`).
    pub fn json(&self) -> Value {
        let operations: serde_json::Map<String, Value> = self
            .operations
            .iter()
            .map(|(op, s)| (op.name().to_string(), stats_json(s)))
            .collect();
        let by_size: serde_json::Map<String, Value> = self
            .by_size
            .iter()
            .map(|(size, s)| (size.to_string(), stats_json(s)))
            .collect();
        let server_io = match (self.server_io, self.amplification()) {
            (Some(io), Some((write_amp, read_amp))) => json!({
                "write_bytes": io.write_bytes,
                "read_bytes": io.read_bytes,
                "wchar": io.wchar,
                "rchar": io.rchar,
                "write_amplification": write_amp,
                "read_amplification": read_amp,
            }),
            _ => Value::Null,
        };
        let (servers_cpu, client_cpu) = self.cpu_us_per_op();
        json!({
            "phase": self.phase,
            "workload": self.workload,
            "records": self.records,
            "attempted": self.attempted,
            "concurrency": self.concurrency,
            "target_rate_ops": self.rate,
            "elapsed_s": self.elapsed.as_secs_f64(),
            "throughput_ops": self.throughput(),
            "operations": operations,
            "by_size": by_size,
            "errors": self.errors(),
            "errors_by_kind": self.errors_by_kind,
            "user_bytes_written": self.user_bytes_written,
            "user_bytes_read": self.user_bytes_read,
            "server_io": server_io,
            "cpu_us_per_op": {
                "servers": servers_cpu.iter().sum::<f64>(),
                "per_node": servers_cpu,
                "client": client_cpu,
            },
            "timeline": self.timeline,
        })
    }
}

/// One operation kind's (or record size's) line of the text report.
fn text_row(name: &str, s: &OperationStats) -> String {
    let h = &s.latency_us;
    format!(
        "{:<18} {:>9} {:>7} {:>9.0} {:>8} {:>8} {:>8} {:>8} {:>8}\n",
        name,
        h.len(),
        s.errors,
        h.mean(),
        h.value_at_quantile(0.50),
        h.value_at_quantile(0.95),
        h.value_at_quantile(0.99),
        h.value_at_quantile(0.999),
        h.max()
    )
}

/// One operation kind's (or record size's) entry of the JSON report.
fn stats_json(s: &OperationStats) -> Value {
    let h = &s.latency_us;
    json!({
        "count": h.len(),
        "errors": s.errors,
        "mean_us": h.mean(),
        "p50_us": h.value_at_quantile(0.50),
        "p95_us": h.value_at_quantile(0.95),
        "p99_us": h.value_at_quantile(0.99),
        "p999_us": h.value_at_quantile(0.999),
        "max_us": h.max(),
        "latency_cdf_us": latency_cdf(h),
    })
}

/// `[quantile, latency µs]` points of a latency distribution for plotting its CDF: every
/// percentile, then the tail (99.5, 99.9, 99.95, 99.99, 100).
fn latency_cdf(h: &Histogram<u64>) -> Vec<(f64, u64)> {
    (0..100)
        .map(|p| f64::from(p) / 100.0)
        .chain([0.995, 0.999, 0.9995, 0.9999, 1.0])
        .map(|q| (q, h.value_at_quantile(q)))
        .collect()
}
