//! The `mosaic-bench load|run` command line (a stable interface: scripts drive it).

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::{anyhow, Context};
use clap::{Args, Subcommand};

use crate::osio::pid_from_file;
use crate::workload::Workload;
use crate::ycsb::{execute, parse_consistency, BenchConfig, Phase, Report};

/// `mosaic-bench load` and `mosaic-bench run`.
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
    /// Mosaic admin endpoints (`host:port`, e.g. 127.0.0.1:7199) whose `/stats` are read
    /// before and after the phase: the growth of every number (the engines' per-component
    /// counters) goes into the report as `server_counters`, summed over the endpoints.
    #[arg(long, value_delimiter = ',')]
    pub admin_hosts: Vec<String>,
    /// Also write the report as JSON to this file.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Seed of the random choices.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Tables the records are spread over: `usertable` when 1, else `usertable0` …
    /// `usertable<N-1>`, record n in table n % N (the same N for load and run).
    #[arg(long, default_value_t = 1)]
    pub tables: usize,
    /// Which replica the driver sends a keyed request to: `shuffle` (the driver's
    /// default: a random replica of the key) or `primary` (the key's first replica in ring
    /// order, where an erasure-tiered table's coded rows live in full). With `primary`,
    /// a scan goes to its start key's primary too (the client computes the token; the
    /// driver cannot route `token(y_id) >= token(?)`, and by default sends it anywhere).
    #[arg(long, default_value = "shuffle", value_parser = ["shuffle", "primary"])]
    pub routing: String,
    /// No progress line on stderr.
    #[arg(long)]
    pub quiet: bool,
    #[command(flatten)]
    pub overrides: WorkloadOverrides,
}

/// YCSB properties that override the preset's (the workload's name becomes `<letter>+`).
#[derive(Args, Debug, Default)]
pub struct WorkloadOverrides {
    /// Proportion of reads (YCSB's `readproportion`).
    #[arg(long)]
    pub read_proportion: Option<f64>,
    /// Proportion of single-field updates (`updateproportion`).
    #[arg(long)]
    pub update_proportion: Option<f64>,
    /// Proportion of inserts (`insertproportion`).
    #[arg(long)]
    pub insert_proportion: Option<f64>,
    /// Proportion of scans (`scanproportion`).
    #[arg(long)]
    pub scan_proportion: Option<f64>,
    /// Proportion of read-modify-writes (`readmodifywriteproportion`).
    #[arg(long)]
    pub rmw_proportion: Option<f64>,
    /// Key choice: zipfian, uniform, latest, hotspot (`requestdistribution`), or
    /// `zipf:S`, a Zipf law of exponent S over the records (e.g. `zipf:1.5`).
    #[arg(long)]
    pub distribution: Option<String>,
    /// Every scan reads exactly this many records (`minscanlength` = `maxscanlength`).
    #[arg(long)]
    pub scan_length: Option<u64>,
    /// Fields per record (`fieldcount`).
    #[arg(long)]
    pub field_count: Option<usize>,
    /// Bytes per field (`fieldlength`).
    #[arg(long)]
    pub field_length: Option<usize>,
    /// Share of the records (0–1) whose fields are `--large-field-length` bytes: a
    /// heterogeneous data set (give the same value to load and run).
    #[arg(long)]
    pub large_fraction: Option<f64>,
    /// Bytes per field of the large records.
    #[arg(long, default_value_t = 1 << 20)]
    pub large_field_length: usize,
}

impl WorkloadOverrides {
    /// `workload` with the overrides applied; an error for values YCSB would refuse.
    pub fn apply(&self, mut workload: Workload) -> anyhow::Result<Workload> {
        use crate::workload::RequestDistribution as D;
        let mut changed = false;
        for (value, slot) in [
            (self.read_proportion, &mut workload.read_proportion),
            (self.update_proportion, &mut workload.update_proportion),
            (self.insert_proportion, &mut workload.insert_proportion),
            (self.scan_proportion, &mut workload.scan_proportion),
            (
                self.rmw_proportion,
                &mut workload.read_modify_write_proportion,
            ),
        ] {
            if let Some(v) = value {
                if !(0.0..=1.0).contains(&v) {
                    return Err(anyhow!("proportions lie in [0, 1], not {v}"));
                }
                *slot = v;
                changed = true;
            }
        }
        if let Some(d) = &self.distribution {
            workload.request_distribution = match d.to_ascii_lowercase().as_str() {
                "zipfian" => D::Zipfian,
                "uniform" => D::Uniform,
                "latest" => D::Latest,
                "hotspot" => D::Hotspot {
                    data_fraction: 0.2,
                    op_fraction: 0.8,
                },
                other => match other.strip_prefix("zipf:").map(str::parse::<f64>) {
                    Some(Ok(exponent)) if exponent.is_finite() && exponent >= 0.0 => {
                        D::Zipf { exponent }
                    }
                    _ => return Err(anyhow!("unknown distribution {other:?}")),
                },
            };
            changed = true;
        }
        if let Some(n) = self.scan_length {
            if n == 0 {
                return Err(anyhow!("--scan-length must be at least 1"));
            }
            workload.min_scan_length = n;
            workload.max_scan_length = n;
            changed = true;
        }
        if let Some(n) = self.field_count {
            if n == 0 {
                return Err(anyhow!("--field-count must be at least 1"));
            }
            workload.field_count = n;
            changed = true;
        }
        if let Some(n) = self.field_length {
            workload.field_length = n;
            changed = true;
        }
        if let Some(f) = self.large_fraction {
            if !(0.0..=1.0).contains(&f) {
                return Err(anyhow!("--large-fraction lies in [0, 1], not {f}"));
            }
            workload.large_fraction = f;
            workload.large_field_length = self.large_field_length;
            changed = true;
        }
        if changed {
            workload.name.push('+');
        }
        Ok(workload)
    }
}

/// Options of `mosaic-bench load`.
#[derive(Args, Debug)]
pub struct LoadArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    /// Replication factor of keyspace `ycsb` (SimpleStrategy), if it is created.
    #[arg(long, default_value_t = 1)]
    pub rf: u32,
    /// Mosaic's `layout` option of table `usertable`, if it is created (Mosaic only):
    /// `NAME`, or `NAME:key=value,…` for the map form (e.g.
    /// `erasure-tiered:ec_k=4,ec_n=6,storage_saving_target=0.6`).
    #[arg(long)]
    pub layout: Option<String>,
    /// Also write every record's size as a Mosaic static item-size oracle file
    /// (`[scheduling.static] file`: `TOKEN BYTES` lines).
    #[arg(long)]
    pub size_oracle_file: Option<PathBuf>,
}

/// Options of `mosaic-bench run`.
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
    let workload = common.overrides.apply(workload)?;
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
        tables: common.tables,
        primary_routing: common.routing == "primary",
    })
}

/// How long one `/stats` request may take.
const STATS_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// Reads a Mosaic node's `/stats` JSON from its admin endpoint `host:port` (port 7199 when
/// only a host is given).
fn fetch_stats(host: &str) -> anyhow::Result<serde_json::Value> {
    let addr = if host.contains(':') {
        host.to_owned()
    } else {
        format!("{host}:7199")
    };
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(STATS_TIMEOUT))
        .build()
        .into();
    let text = agent
        .get(&format!("http://{addr}/stats"))
        .call()
        .with_context(|| format!("reading /stats of the admin endpoint {addr}"))?
        .body_mut()
        .read_to_string()
        .with_context(|| format!("reading the answer of {addr}"))?;
    serde_json::from_str(&text).with_context(|| format!("{addr}/stats is not JSON"))
}

/// Every number in `value`, by its path (`a.b.0.c`; array elements that name themselves
/// with a `name` or `table` field are keyed by it).
fn numbers(value: &serde_json::Value, path: &str, out: &mut BTreeMap<String, f64>) {
    use serde_json::Value;
    let join = |part: &str| {
        if path.is_empty() {
            part.to_owned()
        } else {
            format!("{path}.{part}")
        }
    };
    match value {
        Value::Number(n) => {
            if let Some(f) = n.as_f64() {
                *out.entry(path.to_owned()).or_default() += f;
            }
        }
        Value::Object(map) => {
            for (k, v) in map {
                numbers(v, &join(k), out);
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                let name = ["name", "table"]
                    .iter()
                    .find_map(|k| v.get(k).and_then(Value::as_str))
                    .map_or_else(|| i.to_string(), str::to_owned);
                numbers(v, &join(&name), out);
            }
        }
        _ => {}
    }
}

/// Writes each record's size (key and fields) under its partition's token: a static
/// item-size oracle for Mosaic's `[scheduling] size_oracle = "static"`.
fn write_size_oracle(
    path: &std::path::Path,
    workload: &Workload,
    records: u64,
) -> anyhow::Result<()> {
    use std::io::Write;
    let file =
        std::fs::File::create(path).with_context(|| format!("creating {}", path.display()))?;
    let mut out = std::io::BufWriter::new(file);
    writeln!(
        out,
        "# TOKEN BYTES of {records} records of workload {}",
        workload.name
    )?;
    for n in 0..records {
        let key = crate::workload::key_name(n);
        let token = mosaic_types::token_of(key.as_bytes());
        writeln!(
            out,
            "{} {}",
            token.0,
            key.len() + workload.record_bytes_of(n)
        )?;
    }
    out.flush()
        .with_context(|| format!("writing {}", path.display()))
}

/// The numbers of every endpoint's `/stats`, summed by path.
fn server_numbers(hosts: &[String]) -> anyhow::Result<BTreeMap<String, f64>> {
    let mut out = BTreeMap::new();
    for h in hosts {
        numbers(&fetch_stats(h)?, "", &mut out);
    }
    Ok(out)
}

/// Runs a `mosaic-bench load|run` command on its own tokio runtime; prints the report on
/// stdout and writes the JSON when asked.
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
    if let BenchCommand::Load(LoadArgs {
        size_oracle_file: Some(path),
        ..
    }) = &command
    {
        write_size_oracle(path, &config.workload, config.records)?;
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the tokio runtime")?;
    let before = server_numbers(&common.admin_hosts)?;
    let report: Report = runtime.block_on(execute(config))?;
    let after = server_numbers(&common.admin_hosts)?;
    print!("{}", report.text());
    let mut json = report.json();
    if !common.admin_hosts.is_empty() {
        let growth: serde_json::Map<String, serde_json::Value> = after
            .iter()
            .map(|(k, v)| {
                (
                    k.clone(),
                    serde_json::json!(v - before.get(k).unwrap_or(&0.0)),
                )
            })
            .collect();
        println!(
            "server counters: {} numbers from {} admin endpoints (JSON `server_counters`)",
            growth.len(),
            common.admin_hosts.len()
        );
        json["server_counters"] = serde_json::Value::Object(growth);
    }
    if let Some(path) = &common.json {
        let text = serde_json::to_string_pretty(&json)?;
        std::fs::write(path, text + "\n").with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overrides_turn_a_preset_into_a_custom_mix() {
        let o = WorkloadOverrides {
            read_proportion: Some(0.0),
            scan_proportion: Some(1.0),
            scan_length: Some(100),
            distribution: Some("uniform".into()),
            ..WorkloadOverrides::default()
        };
        let w = o.apply(Workload::preset("c").unwrap()).unwrap();
        assert_eq!(w.name, "c+");
        assert_eq!((w.read_proportion, w.scan_proportion), (0.0, 1.0));
        assert_eq!((w.min_scan_length, w.max_scan_length), (100, 100));
        assert_eq!(
            w.request_distribution,
            crate::workload::RequestDistribution::Uniform
        );
        // No override: the preset as it is.
        let a = Workload::preset("a").unwrap();
        assert_eq!(WorkloadOverrides::default().apply(a.clone()).unwrap(), a);
    }

    #[test]
    fn overrides_refuse_what_ycsb_would() {
        let bad = [
            WorkloadOverrides {
                read_proportion: Some(1.5),
                ..WorkloadOverrides::default()
            },
            WorkloadOverrides {
                distribution: Some("pareto".into()),
                ..WorkloadOverrides::default()
            },
            WorkloadOverrides {
                scan_length: Some(0),
                ..WorkloadOverrides::default()
            },
        ];
        for o in bad {
            assert!(o.apply(Workload::preset("a").unwrap()).is_err(), "{o:?}");
        }
    }

    #[test]
    fn stats_numbers_are_keyed_by_path_and_named_elements() {
        let v = serde_json::json!({
            "tables": [{"table": "ycsb.usertable", "counters": {"gets": 5, "x": "text"}},
                       {"counters": {"gets": 2}}],
            "hints": 1.5
        });
        let mut out = BTreeMap::new();
        numbers(&v, "", &mut out);
        numbers(&v, "", &mut out);
        assert_eq!(out.get("tables.ycsb.usertable.counters.gets"), Some(&10.0));
        assert_eq!(out.get("tables.1.counters.gets"), Some(&4.0));
        assert_eq!(out.get("hints"), Some(&3.0));
        assert_eq!(out.len(), 3);
    }
}
