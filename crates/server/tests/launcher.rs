//! `mosaic cluster up` / `down`: a one-node local cluster starts detached, answers CQL,
//! restarts on its own config and data, and stops; `--nodes 2` is refused for now.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

mod common;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::{free_port, options_answered, signal, wait_for};

fn mosaic(args: &[&str], dir: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_mosaic"))
        .args(args)
        .arg("--dir")
        .arg(dir)
        .output()
        .unwrap()
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
        let _ = mosaic(&["cluster", "down"], &self.dir);
        if let Some(pid) = pid.and_then(|p| p.trim().parse::<u32>().ok()) {
            if pid_file.exists() {
                signal(pid, libc::SIGKILL);
            }
        }
    }
}

#[test]
fn cluster_up_serves_and_cluster_down_stops() {
    let tmp = tempfile::tempdir().unwrap();
    let cluster = Cluster {
        dir: tmp.path().join("c"),
    };
    let port = free_port();
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let port_arg = port.to_string();

    let out = mosaic(
        &["cluster", "up", "--nodes", "1", "--port", &port_arg],
        &cluster.dir,
    );
    assert!(out.status.success(), "{}", text(&out));
    assert!(options_answered(addr), "{}", text(&out));
    let node = cluster.dir.join("node1");
    assert!(node.join("mosaic.toml").exists());
    assert!(node.join("data/node.toml").exists());
    assert!(node.join("pid").exists());

    // Running `up` again finds it running.
    let out = mosaic(&["cluster", "up", "--port", &port_arg], &cluster.dir);
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("already running"), "{}", text(&out));

    let out = mosaic(&["cluster", "down"], &cluster.dir);
    assert!(out.status.success(), "{}", text(&out));
    assert!(!node.join("pid").exists());
    wait_for("the port to stop answering", || {
        (!options_answered(addr)).then_some(())
    });
    let log = std::fs::read_to_string(node.join("log")).unwrap();
    assert!(log.contains("mosaic: stopped"), "{log}");

    // Down again: nothing to stop, still a success.
    let out = mosaic(&["cluster", "down"], &cluster.dir);
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("already stopped"), "{}", text(&out));

    // Up again reuses the node's config (its port) and data (its identity).
    let identity = std::fs::read_to_string(node.join("data/node.toml")).unwrap();
    let out = mosaic(&["cluster", "up"], &cluster.dir);
    assert!(out.status.success(), "{}", text(&out));
    assert!(options_answered(addr));
    assert_eq!(
        std::fs::read_to_string(node.join("data/node.toml")).unwrap(),
        identity
    );
    let out = mosaic(&["cluster", "down"], &cluster.dir);
    assert!(out.status.success(), "{}", text(&out));
}

#[test]
fn more_than_one_node_is_refused_for_now() {
    let tmp = tempfile::tempdir().unwrap();
    let out = mosaic(&["cluster", "up", "--nodes", "3"], tmp.path());
    assert!(!out.status.success());
    assert!(text(&out).contains("cluster issue"), "{}", text(&out));
    assert!(!tmp.path().join("node1").exists());
}
