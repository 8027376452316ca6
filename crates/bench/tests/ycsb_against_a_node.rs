//! `mosaic-bench load` and `run` of YCSB workload A against a real one-node cluster
//! (`mosaic cluster up`): every operation succeeds, the counts add up, and the JSON report
//! has its stable fields, server disk traffic, server counters and the timeline included.
//!
//! The server is the workspace's `mosaic` binary, next to `mosaic-bench` in the target
//! directory (`cargo test --workspace` builds both; alone, `cargo build -p mosaic-server`
//! first).
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

fn mosaic_bin() -> PathBuf {
    let bench = Path::new(env!("CARGO_BIN_EXE_mosaic-bench"));
    let server = bench.with_file_name("mosaic");
    assert!(
        server.exists(),
        "{} is missing: build the server first (cargo build -p mosaic-server)",
        server.display()
    );
    server
}

fn mosaic(args: &[&str]) -> Output {
    Command::new(mosaic_bin()).args(args).output().unwrap()
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn text(o: &Output) -> String {
    format!(
        "status {}\nstdout:\n{}\nstderr:\n{}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Stops the cluster however the test ends: `cluster down`, then SIGKILL to a pid left.
struct Cluster {
    dir: PathBuf,
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let pid_file = self.dir.join("node1/pid");
        let pid = std::fs::read_to_string(&pid_file).ok();
        let _ = mosaic(&["cluster", "down", "--dir", self.dir.to_str().unwrap()]);
        if let Some(pid) = pid.and_then(|p| p.trim().parse::<u32>().ok()) {
            if pid_file.exists() {
                let _ = Command::new("kill")
                    .args(["-KILL", &pid.to_string()])
                    .status();
            }
        }
    }
}

/// Runs `mosaic-bench ARGS --quiet --json FILE` (ARGS split at spaces), asserts it
/// succeeded, and returns the JSON report and stdout.
fn bench(args: &str, json: &Path) -> (Value, String) {
    let mut args: Vec<&str> = args.split_whitespace().collect();
    args.extend(["--quiet", "--json", json.to_str().unwrap()]);
    let out = Command::new(env!("CARGO_BIN_EXE_mosaic-bench"))
        .args(&args)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let report = serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap();
    (report, String::from_utf8_lossy(&out.stdout).into_owned())
}

fn check_operation(op: &Value, count: u64) {
    assert_eq!(op["count"].as_u64(), Some(count), "{op}");
    assert_eq!(op["errors"].as_u64(), Some(0), "{op}");
    for k in ["mean_us", "p50_us", "p99_us", "max_us"] {
        assert!(op[k].as_f64().is_some_and(|v| v > 0.0), "{k}: {op}");
    }
    assert!(op["p50_us"].as_u64() <= op["p99_us"].as_u64());
    assert!(op["p99_us"].as_u64() <= op["max_us"].as_u64());
}

#[test]
fn load_and_run_workload_a() {
    let tmp = tempfile::tempdir().unwrap();
    let cluster = Cluster {
        dir: tmp.path().join("c"),
    };
    let dir = cluster.dir.to_str().unwrap();
    let port = free_port().to_string();
    let admin_port = free_port().to_string();
    let out = mosaic(&[
        "cluster",
        "up",
        "--nodes",
        "1",
        "--dir",
        dir,
        "--port",
        &port,
        "--admin-port",
        &admin_port,
    ]);
    assert!(out.status.success(), "{}", text(&out));
    let host = format!("127.0.0.1:{port}");
    let pid_file = cluster.dir.join("node1/pid");
    let pid_file = pid_file.to_str().unwrap();

    let json = tmp.path().join("report.json");
    let (load, _) = bench(
        &format!(
            "load --hosts {host} --workload a --records 300 --concurrency 4 --layout uniform \
             --pid-files {pid_file}"
        ),
        &json,
    );
    assert_eq!(load["phase"], "load");
    assert_eq!(load["errors"].as_u64(), Some(0), "{load}");
    check_operation(&load["operations"]["insert"], 300);
    assert!(load["throughput_ops"].as_f64().is_some_and(|t| t > 0.0));
    // 300 records of ~24 key bytes and 10 × 100 field bytes.
    let written = load["user_bytes_written"].as_u64().unwrap();
    assert!((300 * 1010..=300 * 1030).contains(&written), "{written}");
    // The node's WAL alone writes every user byte once.
    let amp = load["server_io"]["write_amplification"].as_f64().unwrap();
    assert!(amp >= 0.9, "write amplification {amp}");

    let (run, stdout) = bench(
        &format!(
            "run --hosts {host} --workload a --records 300 --operations 600 --concurrency 4 \
             --read-cl ONE --write-cl ONE --admin-hosts 127.0.0.1:{admin_port}"
        ),
        &json,
    );
    assert_eq!(run["errors"].as_u64(), Some(0), "{run}");
    assert_eq!(run["errors_by_kind"], serde_json::json!({}));
    let (reads, updates) = (
        run["operations"]["read"]["count"].as_u64().unwrap(),
        run["operations"]["update"]["count"].as_u64().unwrap(),
    );
    assert_eq!(reads + updates, 600, "{run}");
    // 50/50 reads and updates: far from either extreme even on 600 draws.
    assert!((200..=400).contains(&reads), "{reads} reads");
    check_operation(&run["operations"]["read"], reads);
    check_operation(&run["operations"]["update"], updates);
    assert!(run["server_io"].is_null());
    // The node's own counters grew by the phase's work: every read is a storage lookup.
    let counters = run["server_counters"].as_object().unwrap();
    let gets: f64 = counters
        .iter()
        .filter(|(k, _)| k.ends_with(".gets"))
        .map(|(_, v)| v.as_f64().unwrap())
        .sum();
    assert!(gets >= reads as f64, "{reads} reads, counters {counters:?}");
    assert!(
        stdout.contains("ops/s") && stdout.contains("p99.9"),
        "{stdout}"
    );
    // The timeline accounts for every operation, second by second.
    let timeline = run["timeline"].as_array().unwrap();
    assert!(!timeline.is_empty(), "{run}");
    let ops: u64 = timeline.iter().map(|p| p["ops"].as_u64().unwrap()).sum();
    assert_eq!(ops, 600, "{timeline:?}");

    // Reads of a key space larger than what was loaded find missing rows, and say so.
    let (run, _) = bench(
        &format!("run --hosts {host} --workload c --records 3000 --operations 200 --concurrency 2"),
        &json,
    );
    let missing = run["errors_by_kind"]["not_found"].as_u64().unwrap();
    assert_eq!(run["errors"].as_u64(), Some(missing));
    assert!(missing > 0 && missing < 200, "{missing}");
}
