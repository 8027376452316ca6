//! Text tables and JSON for a [`Report`].

use std::fmt::Write as _;

use crate::{PhaseKind, PhaseResult, Report};

const MIB: f64 = (1u64 << 20) as f64;

fn thousands(x: f64) -> String {
    let n = x.round() as u64;
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// One row: a label, a value per engine, and how the value is printed.
struct Row {
    label: &'static str,
    values: Vec<f64>,
    fmt: fn(f64) -> String,
    /// Whether a Mosaic/RocksDB ratio is meaningful for this row.
    ratio: bool,
}

fn us(ns: f64) -> String {
    format!("{:.2}", ns / 1e3)
}
fn int(x: f64) -> String {
    thousands(x)
}
fn f2(x: f64) -> String {
    format!("{x:.2}")
}
fn f1(x: f64) -> String {
    format!("{x:.1}")
}
fn mib(x: f64) -> String {
    format!("{:.0}", x / MIB)
}

// Long on purpose: the report's table, one row per metric, in the order it is printed.
fn rows(results: &[&PhaseResult]) -> Vec<Row> {
    let col = |f: &dyn Fn(&PhaseResult) -> f64| results.iter().map(|r| f(r)).collect::<Vec<_>>();
    let kind = results[0].kind;
    let mut rows = vec![
        Row {
            label: if kind == PhaseKind::ReadSeq {
                "entries/s"
            } else {
                "ops/s"
            },
            values: col(&|r| r.ops_per_sec()),
            fmt: int,
            ratio: true,
        },
        Row {
            label: if kind == PhaseKind::ReadSeq {
                "p50 µs/entry"
            } else {
                "p50 µs"
            },
            values: col(&|r| r.latency.p50 as f64),
            fmt: us,
            ratio: true,
        },
        Row {
            label: "p99 µs",
            values: col(&|r| r.latency.p99 as f64),
            fmt: us,
            ratio: true,
        },
        Row {
            label: "p99.9 µs",
            values: col(&|r| r.latency.p999 as f64),
            fmt: us,
            ratio: true,
        },
        Row {
            label: "max µs",
            values: col(&|r| r.latency.max as f64),
            fmt: us,
            ratio: false,
        },
        Row {
            label: "CPU µs/op (all threads)",
            values: col(&|r| r.cpu_micros_per_op()),
            fmt: f2,
            ratio: true,
        },
    ];
    if kind.writes() {
        rows.extend([
            Row {
                label: "ops/s incl. drain",
                values: col(&|r| r.sustained_ops_per_sec()),
                fmt: int,
                ratio: true,
            },
            Row {
                label: "drain s",
                values: col(&|r| r.drain_secs),
                fmt: f1,
                ratio: false,
            },
            Row {
                label: "write amp, disk",
                values: col(&|r| r.disk_write_amp()),
                fmt: f2,
                ratio: true,
            },
            Row {
                label: "write amp, engine",
                values: col(&|r| r.engine_write_amp()),
                fmt: f2,
                ratio: true,
            },
            Row {
                label: "  WAL MiB",
                values: col(&|r| r.counters.wal_bytes as f64),
                fmt: mib,
                ratio: false,
            },
            Row {
                label: "  flush MiB",
                values: col(&|r| r.counters.flush_bytes as f64),
                fmt: mib,
                ratio: false,
            },
            Row {
                label: "  compaction write MiB",
                values: col(&|r| r.counters.compaction_write_bytes as f64),
                fmt: mib,
                ratio: false,
            },
            Row {
                label: "  compaction read MiB",
                values: col(&|r| r.counters.compaction_read_bytes as f64),
                fmt: mib,
                ratio: false,
            },
            Row {
                label: "disk write MiB (proc)",
                values: col(&|r| r.io.write_bytes as f64),
                fmt: mib,
                ratio: false,
            },
            Row {
                label: "stall s",
                values: col(&|r| r.counters.stall_micros as f64 / 1e6),
                fmt: f1,
                ratio: false,
            },
        ]);
    } else {
        rows.extend([
            Row {
                label: "read amp, syscalls",
                values: col(&|r| r.syscall_read_amp()),
                fmt: f2,
                ratio: true,
            },
            Row {
                label: "read amp, disk",
                values: col(&|r| r.disk_read_amp()),
                fmt: f2,
                ratio: false,
            },
            Row {
                label: "read amp, engine",
                values: col(&|r| r.engine_read_amp()),
                fmt: f2,
                ratio: true,
            },
            Row {
                label: "disk reads/op, engine",
                values: col(&|r| r.block_reads_per_op()),
                fmt: f2,
                ratio: true,
            },
            Row {
                label: "block cache hit %",
                values: col(&|r| {
                    let c = &r.counters;
                    let total = c.block_cache_hits + c.block_cache_misses;
                    if total == 0 {
                        0.0
                    } else {
                        100.0 * c.block_cache_hits as f64 / total as f64
                    }
                }),
                fmt: f1,
                ratio: false,
            },
        ]);
    }
    rows.push(Row {
        label: "db size MiB after",
        values: col(&|r| r.db_bytes as f64),
        fmt: mib,
        ratio: false,
    });
    rows
}

/// The index of Mosaic and RocksDB among the runs, when both ran.
fn pair(report: &Report) -> Option<(usize, usize)> {
    let m = report.runs.iter().position(|r| r.engine == "mosaic")?;
    let r = report.runs.iter().position(|r| r.engine == "rocksdb")?;
    Some((m, r))
}

/// The human-readable report.
// Long on purpose: the report top to bottom (header, one table per phase, the summary and
// the bar's verdicts), printed in the order a reader reads it.
pub fn text(report: &Report) -> String {
    let c = &report.config;
    let mut out = String::new();
    let _ = writeln!(out, "mosaic-enginebench: {}", report.machine);
    let _ = writeln!(
        out,
        "{} keys × ({} B key + {} B value) = {:.0} MiB user data; {} reads, {} seeks × {}, \
         {} read thread(s)",
        c.keys,
        c.key_bytes,
        c.value_bytes,
        c.keys as f64 * (c.key_bytes + c.value_bytes) as f64 / MIB,
        c.reads,
        c.seeks,
        c.scan_len,
        c.threads
    );
    let e = &c.engine;
    let _ = writeln!(
        out,
        "memtable {} MiB ×{} immutable, bloom {} bits/key, block {} B, cache {} MiB \
         (index and filter blocks {}, partitioned every {} B), compression off, direct reads {}, direct flush and compaction writes {}, L0 trigger {} / slowdown {} / stop {}, L1 {} MiB × {}, \
         tables {} MiB, {} levels, {} compaction thread(s)",
        e.memtable_bytes >> 20,
        e.immutable_memtables,
        e.bloom_bits_per_key,
        e.block_bytes,
        e.cache_bytes >> 20,
        if e.cache_index_and_filter_blocks {
            "in it"
        } else {
            "pinned"
        },
        e.index_partition_bytes,
        e.direct_io,
        e.direct_io_writes,
        e.l0_compaction_trigger,
        e.l0_slowdown,
        e.l0_stop,
        e.level1_bytes >> 20,
        e.level_ratio,
        e.table_bytes >> 20,
        e.levels,
        e.compaction_threads
    );
    let Some(first) = report.runs.first() else {
        return out;
    };
    let pair = pair(report);
    for (i, phase) in first.phases.iter().enumerate() {
        let results: Vec<&PhaseResult> =
            report.runs.iter().filter_map(|r| r.phases.get(i)).collect();
        let _ = writeln!(out, "\n== {} ({} ops) ==", phase.label, phase.ops);
        let _ = write!(out, "{:<26}", "");
        for r in &report.runs {
            let _ = write!(out, "{:>14}", r.engine);
        }
        if pair.is_some() {
            let _ = write!(out, "{:>16}", "mosaic/rocksdb");
        }
        let _ = writeln!(out);
        for row in rows(&results) {
            let _ = write!(out, "{:<26}", row.label);
            for v in &row.values {
                let _ = write!(out, "{:>14}", (row.fmt)(*v));
            }
            if let Some((m, r)) = pair {
                if row.ratio && row.values[r] != 0.0 {
                    let _ = write!(out, "{:>15.2}×", row.values[m] / row.values[r]);
                }
            }
            let _ = writeln!(out);
        }
    }
    if let Some((m, r)) = pair {
        let _ = writeln!(out, "\n== summary: Mosaic / RocksDB ==");
        let _ = writeln!(
            out,
            "{:<16}{:>14}{:>14}{:>8}{:>12}{:>12}",
            "phase", "mosaic ops/s", "rocksdb ops/s", "ratio", "WA mosaic", "WA rocksdb"
        );
        let (mr, rr) = (&report.runs[m], &report.runs[r]);
        for (a, b) in mr.phases.iter().zip(&rr.phases) {
            let ratio = if b.ops_per_sec() > 0.0 {
                a.ops_per_sec() / b.ops_per_sec()
            } else {
                0.0
            };
            let (wa, wb) = if a.kind.writes() {
                (f2(a.disk_write_amp()), f2(b.disk_write_amp()))
            } else {
                ("-".to_owned(), "-".to_owned())
            };
            let _ = writeln!(
                out,
                "{:<16}{:>14}{:>14}{:>7.2}×{:>12}{:>12}",
                a.label,
                thousands(a.ops_per_sec()),
                thousands(b.ops_per_sec()),
                ratio,
                wa,
                wb
            );
        }
        // The node-engine issue's bar: each of these at least RocksDB's throughput.
        for kind in [
            PhaseKind::FillRandom,
            PhaseKind::ReadRandom,
            PhaseKind::Overwrite,
        ] {
            let a = mr.phases.iter().find(|p| p.kind == kind);
            let b = rr.phases.iter().find(|p| p.kind == kind);
            if let (Some(a), Some(b)) = (a, b) {
                let ratio = a.ops_per_sec() / b.ops_per_sec().max(1e-9);
                let _ = writeln!(
                    out,
                    "bar: {kind} throughput ≥ 1.0× RocksDB: {} ({ratio:.2}×)",
                    if ratio >= 1.0 { "met" } else { "NOT met" }
                );
            }
        }
        for (a, b) in mr
            .phases
            .iter()
            .zip(&rr.phases)
            .filter(|(a, _)| a.kind.writes())
        {
            let (wa, wb) = (a.disk_write_amp(), b.disk_write_amp());
            let _ = writeln!(
                out,
                "bar: {} write amplification no worse than RocksDB: {} ({wa:.2} vs {wb:.2})",
                a.label,
                if wa <= wb * 1.02 { "met" } else { "NOT met" }
            );
        }
    }
    for err in report.verification_errors() {
        let _ = writeln!(out, "VERIFICATION FAILED: {err}");
    }
    out
}

/// A float for the report (`null` when not finite: JSON has no NaN or infinity).
fn finite(x: f64) -> serde_json::Value {
    serde_json::Number::from_f64(x).map_or(serde_json::Value::Null, serde_json::Value::Number)
}

fn phase_json(p: &PhaseResult) -> serde_json::Value {
    let c = &p.counters;
    let io = &p.io;
    serde_json::json!({
        "phase": p.label,
        "ops": p.ops,
        "op_secs": finite(p.op_secs),
        "drain_secs": finite(p.drain_secs),
        "ops_per_sec": finite(p.ops_per_sec()),
        "sustained_ops_per_sec": finite(p.sustained_ops_per_sec()),
        "cpu_secs": finite(p.cpu_secs),
        "cpu_micros_per_op": finite(p.cpu_micros_per_op()),
        "latency_ns": {
            "mean": finite(p.latency.mean),
            "p50": p.latency.p50,
            "p99": p.latency.p99,
            "p999": p.latency.p999,
            "max": p.latency.max,
        },
        "user_bytes_written": p.user_bytes_written,
        "user_bytes_read": p.user_bytes_read,
        "entries_read": p.entries_read,
        "write_amp_disk": finite(p.disk_write_amp()),
        "write_amp_engine": finite(p.engine_write_amp()),
        "read_amp_syscall": finite(p.syscall_read_amp()),
        "read_amp_disk": finite(p.disk_read_amp()),
        "read_amp_engine": finite(p.engine_read_amp()),
        "proc_io": {
            "rchar": io.rchar,
            "wchar": io.wchar,
            "read_bytes": io.read_bytes,
            "write_bytes": io.write_bytes,
            "cancelled_write_bytes": io.cancelled_write_bytes,
        },
        "engine_counters": {
            "user_bytes_written": c.user_bytes_written,
            "wal_bytes": c.wal_bytes,
            "flush_bytes": c.flush_bytes,
            "compaction_write_bytes": c.compaction_write_bytes,
            "compaction_read_bytes": c.compaction_read_bytes,
            "user_read_file_bytes": c.user_read_file_bytes,
            "block_cache_hits": c.block_cache_hits,
            "block_cache_misses": c.block_cache_misses,
            "get_block_reads": c.get_block_reads,
            "stall_micros": c.stall_micros,
        },
        "db_bytes": p.db_bytes,
        "shape": p.shape,
        "missing": p.missing,
        "mismatched": p.mismatched,
    })
}

/// The report as one JSON object (one line).
pub fn json(report: &Report) -> String {
    let c = &report.config;
    let e = &c.engine;
    let runs: Vec<serde_json::Value> = report
        .runs
        .iter()
        .map(|run| {
            serde_json::json!({
                "engine": run.engine,
                "phases": run.phases.iter().map(phase_json).collect::<Vec<_>>(),
            })
        })
        .collect();
    let value = serde_json::json!({
        "machine": report.machine,
        "unix_time": report.unix_time,
        "config": {
            "keys": c.keys,
            "key_bytes": c.key_bytes,
            "value_bytes": c.value_bytes,
            "reads": c.reads,
            "seeks": c.seeks,
            "scan_len": c.scan_len,
            "threads": c.threads,
            "seed": c.seed,
            "memtable_bytes": e.memtable_bytes,
            "immutable_memtables": e.immutable_memtables,
            "bloom_bits_per_key": e.bloom_bits_per_key,
            "block_bytes": e.block_bytes,
            "cache_bytes": e.cache_bytes,
            "cache_index_and_filter_blocks": e.cache_index_and_filter_blocks,
            "index_partition_bytes": e.index_partition_bytes,
            "direct_io": e.direct_io,
            "direct_io_writes": e.direct_io_writes,
            "l0_compaction_trigger": e.l0_compaction_trigger,
            "l0_slowdown": e.l0_slowdown,
            "l0_stop": e.l0_stop,
            "level1_bytes": e.level1_bytes,
            "level_ratio": e.level_ratio,
            "table_bytes": e.table_bytes,
            "levels": e.levels,
            "compaction_threads": e.compaction_threads,
            "wal_sync_interval_ms": e.wal_sync_interval_ms,
        },
        "runs": runs,
    });
    value.to_string() + "\n"
}
