//! The admin endpoint's status page (issue 14): served as one self-contained HTML document,
//! and, rendered by headless Chromium against a three-node local cluster, it shows every
//! node with its address and state once its script has run — with a rack name that is
//! markup shown as text, not parsed — and, while a client writes through node 1, a live
//! write rate and median latency. The screenshot is kept (the path is printed):
//! `$MOSAIC_TEST_ARTIFACTS/status-page.png`, or the crate's `CARGO_TARGET_TMPDIR`.
//!
//! The Chromium test skips, saying so, where no `chromium` is installed (`apt-get install
//! chromium`; `.ci/run` installs it). `MOSAIC_CHROMIUM` names another binary.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]
#![allow(clippy::disallowed_methods)] // Waits for a real browser process on a real clock.

mod common;

use std::net::SocketAddr;
use std::ops::Not;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{free_port, http, http_answer, output_text, wait_for, Conn, LocalCluster, Node};

#[test]
fn the_page_is_html_with_no_external_assets_and_activity_is_json() {
    let port = free_port();
    let _node = Node::start(&format!("admin_port = {port}\n"));
    let admin = SocketAddr::from(([127, 0, 0, 1], port));
    let answer = http_answer(admin, "GET", "/", &[("Host", "127.0.0.1")]);
    let (head, body) = answer.split_once("\r\n\r\n").unwrap();
    let head = head.to_ascii_lowercase();
    assert!(head.starts_with("http/1.1 200"), "{head}");
    assert!(
        head.contains("content-type: text/html; charset=utf-8"),
        "{head}"
    );
    assert!(
        head.contains("content-security-policy: default-src 'none'"),
        "{head}"
    );
    assert!(body.trim_start().starts_with("<!DOCTYPE html>"), "{body}");
    let lower = body.to_ascii_lowercase();
    for external in ["http://", "https://", "src=\"//", "href=\"//"] {
        assert!(!lower.contains(external), "the page refers to {external:?}");
    }
    assert!(!lower.contains("<link"), "no stylesheets to load");
    assert!(
        !lower.contains("<script src"),
        "no scripts to load: {lower}"
    );

    let (code, body) = http(admin, "GET", "/activity", &[("Host", "127.0.0.1")]);
    assert_eq!(code, 200, "{body}");
    let activity: serde_json::Value = serde_json::from_str(&body).unwrap();
    let ops: Vec<&str> = activity["requests"]
        .as_array()
        .unwrap_or_else(|| panic!("{body}"))
        .iter()
        .map(|r| r["op"].as_str().unwrap())
        .collect();
    assert_eq!(ops, ["read", "write"], "{body}");
    assert!(activity["repair_entries_streamed_total"].is_u64(), "{body}");
}

/// The Chromium binary to drive, if one is installed.
fn chromium() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("MOSAIC_CHROMIUM") {
        return Some(PathBuf::from(path));
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .flat_map(|dir| ["chromium", "chromium-browser"].map(|name| dir.join(name)))
        .find(|candidate| candidate.is_file())
}

/// Runs headless Chromium on `url` with `args`, bounded in time; its stdout. (Its output
/// goes to files, so a large DOM cannot fill a pipe nobody reads while the test waits.)
fn run_chromium(chromium: &Path, dir: &Path, args: &[&str], url: &str) -> String {
    let (stdout, stderr) = (dir.join("chromium.out"), dir.join("chromium.err"));
    let mut child = Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--no-first-run",
            "--hide-scrollbars",
        ])
        .arg(format!("--user-data-dir={}", dir.join("profile").display()))
        .args(args)
        .arg(url)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&stdout).unwrap())
        .stderr(std::fs::File::create(&stderr).unwrap())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            break std::process::ExitStatus::default();
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let out = std::fs::read_to_string(&stdout).unwrap_or_default();
    let err = std::fs::read_to_string(&stderr).unwrap_or_default();
    assert!(
        status.success() && Instant::now() <= deadline,
        "chromium {args:?} failed or took over 60 s ({status}):\n{err}"
    );
    out
}

#[test]
fn chromium_renders_every_node_of_a_three_node_cluster_with_its_state() {
    let Some(chromium) = chromium() else {
        eprintln!(
            "skipping: chromium is not installed (apt-get install chromium, or set \
             MOSAIC_CHROMIUM to its path)"
        );
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let cluster = LocalCluster {
        dir: tmp.path().join("c3"),
    };
    let (port, storage, admin) = (free_port(), free_port(), free_port());
    // A rack name that is markup: the page must show it as text.
    let rack = "rack=<b id=\"injected\">r1</b>";
    let out = cluster.up(3, (port, storage, admin), &["--set", rack]);
    assert!(out.status.success(), "{}", output_text(&out));

    // Writes coordinated by node 1 while the page polls it: its rates and latencies.
    let cql = SocketAddr::from(([127, 0, 0, 1], port));
    let mut conn = Conn::connect(cql);
    conn.startup(None);
    for statement in [
        "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}",
        "CREATE TABLE ks.t (k int PRIMARY KEY, v int)",
    ] {
        let answer = conn.query(1, statement);
        assert_eq!(answer.opcode, 0x08, "{statement}: {}", answer.describe());
    }
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut written = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let answer =
                    conn.query(1, &format!("INSERT INTO ks.t (k, v) VALUES ({written}, 1)"));
                assert_eq!(answer.opcode, 0x08, "{}", answer.describe());
                written += 1;
            }
            written
        })
    };
    wait_for("writes to run", || {
        let (_, body) = http(
            SocketAddr::from(([127, 0, 0, 1], admin)),
            "GET",
            "/activity",
            &[("Host", "127.0.0.1")],
        );
        body.contains("\"op\":\"write\",\"total\":0")
            .not()
            .then_some(())
    });

    let url = format!("http://127.0.0.1:{admin}/");
    let browser_dir = tmp.path();
    // Virtual time runs the page's timers at once: the first poll renders, the next ones
    // (1.5 s apart) compute rates.
    let dom = run_chromium(
        &chromium,
        browser_dir,
        &["--virtual-time-budget=4000", "--dump-dom"],
        &url,
    );
    for i in 1..=3 {
        let endpoint = format!("127.0.0.{i}:{storage}");
        assert!(
            dom.contains(&format!("data-endpoint=\"{endpoint}\"")),
            "{endpoint} is not in the rendered page:\n{dom}"
        );
        assert!(
            dom.contains(&format!(">{endpoint}</td>")),
            "{endpoint}:\n{dom}"
        );
        assert!(
            dom.contains(&format!(">127.0.0.{i}:{port}</td>")),
            "CQL address of node {i}:\n{dom}"
        );
    }
    let up = dom.matches("<td class=\"state up\"").count();
    let un = dom.matches(">UN</td>").count();
    assert_eq!((up, un), (3, 3), "three nodes UN:\n{dom}");
    assert!(
        dom.contains("Rack: &lt;b id=\"injected\"&gt;r1&lt;/b&gt;"),
        "the rack name is shown as text:\n{dom}"
    );
    assert!(
        !dom.contains("id=\"injected\">"),
        "markup was parsed:\n{dom}"
    );
    assert!(dom.contains("data-op=\"read\""), "request rates:\n{dom}");
    // Writes ran between two polls: a rate, and a median latency bucket.
    let writes = dom
        .split("data-op=\"write\"")
        .nth(1)
        .and_then(|card| card.split("</div></div>").next())
        .unwrap_or_else(|| panic!("no writes card:\n{dom}"));
    assert!(
        writes.contains("p50 ≤ ") && !writes.contains("class=\"big\">0.0<"),
        "live write rate and p50:\n{writes}"
    );
    assert!(
        dom.contains("system_auth.roles"),
        "per-table storage:\n{dom}"
    );

    let artifacts = std::env::var_os("MOSAIC_TEST_ARTIFACTS")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_TARGET_TMPDIR")));
    std::fs::create_dir_all(&artifacts).unwrap();
    let screenshot = artifacts.join("status-page.png");
    let _ = std::fs::remove_file(&screenshot);
    run_chromium(
        &chromium,
        browser_dir,
        &[
            "--virtual-time-budget=4000",
            "--window-size=1280,1300",
            &format!("--screenshot={}", screenshot.display()),
        ],
        &url,
    );
    let png = std::fs::read(&screenshot).unwrap();
    assert!(
        png.starts_with(b"\x89PNG") && png.len() > 10_000,
        "{}",
        screenshot.display()
    );
    eprintln!("status page screenshot: {}", screenshot.display());
    stop.store(true, Ordering::Relaxed);
    assert!(writer.join().unwrap() > 0);
    drop(cluster);
}
