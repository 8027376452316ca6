//! `GET /compactions` and `mosaic compactionstats` (issue 19): a node that took enough
//! writes to flush and compact answers with its background work; `--wait` returns once the
//! node is idle, saying so in its JSON with the seconds it waited, and the plain form shows
//! the node idle.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

mod common;

use std::net::SocketAddr;

use common::{free_port, http, output_text, run_mosaic, Node};

#[test]
fn compactionstats_reports_the_engines_work_and_waits_until_it_is_done() {
    let port = free_port();
    // Small memtables, so the writes below flush and compact.
    let node = Node::start(&format!(
        "admin_port = {port}\n[storage]\nmemtable_size_bytes = 65536\n"
    ));
    let mut conn = node.ready();
    conn.exec(
        "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', \
         'replication_factor': 1}",
    );
    conn.exec("CREATE TABLE ks.t (k int PRIMARY KEY, v text)");
    let value = "x".repeat(500);
    for k in 0..2_000 {
        conn.exec(&format!("INSERT INTO ks.t (k, v) VALUES ({k}, '{value}')"));
    }
    let admin = SocketAddr::from(([127, 0, 0, 1], port));
    let (code, body) = http(admin, "GET", "/compactions", &[("Host", "127.0.0.1")]);
    assert_eq!(code, 200, "{body}");
    let now: serde_json::Value = serde_json::from_str(&body).unwrap();
    for field in [
        "flushes_pending",
        "flushes_running",
        "compactions_running",
        "compactions_due",
        "compaction_due_bytes",
        "level0_tables",
    ] {
        assert!(now[field].is_u64(), "{field} in {body}");
    }
    assert!(now["idle"].is_boolean(), "{body}");

    let host = admin.to_string();
    let base = ["compactionstats", "--only", "--host", host.as_str()];
    let waited = run_mosaic(&[&base[..], &["--wait", "--timeout-s", "120", "--json"]].concat());
    assert!(waited.status.success(), "{}", output_text(&waited));
    let json: serde_json::Value = serde_json::from_slice(&waited.stdout).unwrap();
    assert!(json["waited_s"].as_f64().unwrap() >= 0.0, "{json}");
    assert_eq!(json["nodes"][host.as_str()]["idle"], true, "{json}");
    assert_eq!(json["nodes"][host.as_str()]["flushes_pending"], 0, "{json}");

    let shown = run_mosaic(&base);
    assert!(shown.status.success(), "{}", output_text(&shown));
    let text = String::from_utf8_lossy(&shown.stdout);
    assert!(text.contains(&format!("{host}: idle (")), "{text}");
    // The writes did give the engine work: it flushed.
    let stats = run_mosaic(&["stats", "--only", "--host", host.as_str(), "--json"]);
    assert!(stats.status.success(), "{}", output_text(&stats));
    let stats: serde_json::Value = serde_json::from_slice(&stats.stdout).unwrap();
    let flushed = stats[host.as_str()]["tables"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["table"] == "ks.t")
        .map(|t| t["stats"]["flush_bytes_written"].as_u64().unwrap())
        .sum::<u64>();
    assert!(flushed > 0, "{stats}");
}
