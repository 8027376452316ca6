//! `mosaic cluster up` / `down`: a one-node local cluster starts detached, answers CQL,
//! restarts on its own config and data, and stops; a three-node cluster comes up with every
//! node seeing every other UP, `mosaic status` shows them, and `down` stops them all.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

mod common;

use std::net::SocketAddr;
use std::path::Path;
use std::process::{Command, Output};

use common::{
    free_port, options_answered, output_text, run_mosaic, wait_for, LocalCluster as Cluster,
};

fn mosaic(args: &[&str], dir: &Path) -> Output {
    let dir = dir.to_str().unwrap();
    run_mosaic(&[args, &["--dir", dir]].concat())
}

fn text(o: &Output) -> String {
    output_text(o)
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
fn a_three_node_cluster_comes_up_sees_itself_and_goes_down() {
    let tmp = tempfile::tempdir().unwrap();
    let cluster = Cluster {
        dir: tmp.path().join("c3"),
    };
    let (port, storage, admin) = (free_port(), free_port(), free_port());
    let out = cluster.up(3, (port, storage, admin), &[]);
    assert!(out.status.success(), "{}", text(&out));
    for i in 1..=3u8 {
        assert!(options_answered(SocketAddr::from(([127, 0, 0, i], port))));
        let config =
            std::fs::read_to_string(cluster.dir.join(format!("node{i}/mosaic.toml"))).unwrap();
        assert!(config.contains(&format!("127.0.0.1:{storage}")), "{config}");
        // Every node holds the cluster secret `up` made, readable by its owner only.
        assert!(config.contains("cluster.secret"), "{config}");
    }
    let secret = std::fs::metadata(cluster.dir.join("cluster.secret")).unwrap();
    assert_eq!(
        std::os::unix::fs::PermissionsExt::mode(&secret.permissions()) & 0o777,
        0o600
    );
    let status = Command::new(env!("CARGO_BIN_EXE_mosaic"))
        .args(["status", "--host", &format!("127.0.0.2:{admin}")])
        .output()
        .unwrap();
    let shown = text(&status);
    assert!(status.status.success(), "{shown}");
    for i in 1..=3 {
        assert!(
            shown.contains(&format!("UN  127.0.0.{i}:{storage}")),
            "{shown}"
        );
    }
    let out = mosaic(&["cluster", "down"], &cluster.dir);
    assert!(out.status.success(), "{}", text(&out));
    for i in 1..=3 {
        assert!(!cluster.dir.join(format!("node{i}/pid")).exists());
    }
}
