//! SIGTERM against a real `mosaic server`: the node closes its connections, exits with
//! status 0 and releases every lock of its data directory, and a restarted node on the
//! same directory serves the data written before.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

mod common;

use common::{lock_is_free, signal, Node};

#[test]
fn sigterm_exits_cleanly_and_releases_the_data_directory() {
    let dir = tempfile::tempdir().unwrap();
    let mut node = Node::start_in(dir.path(), "");
    let mut c = node.ready();
    c.exec("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}");
    c.exec("CREATE TABLE ks.t (k int PRIMARY KEY, v text)");
    for k in 0..50 {
        c.exec(&format!("INSERT INTO ks.t (k, v) VALUES ({k}, 'v{k}')"));
    }
    let mut idle = node.ready();
    let data = node.data_dir();
    assert!(
        !lock_is_free(&data.join("LOCK")),
        "a running node holds its lock"
    );

    signal(node.child.id(), libc::SIGTERM);
    let status = node.wait_exit();
    assert_eq!(status.code(), Some(0), "exit status; log:\n{}", node.log());
    assert!(idle.is_closed());
    assert!(c.is_closed());
    let log = node.log();
    assert!(log.contains("SIGTERM received"), "{log}");
    assert!(log.contains("mosaic: stopped"), "{log}");

    // Every lock is free: the node's and each table engine's.
    assert!(lock_is_free(&data.join("LOCK")));
    let ks = data.join("ks");
    let table_dirs: Vec<_> = std::fs::read_dir(&ks)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(table_dirs.len(), 1, "{table_dirs:?}");
    assert!(lock_is_free(&table_dirs[0].join("LOCK")));

    // A new node on the same directory has the schema and the rows.
    drop(node);
    let node = Node::start_in(dir.path(), "");
    let mut c = node.ready();
    let f = c.query(3, "SELECT v FROM ks.t WHERE k = 42");
    assert_eq!(f.rows(), vec![vec![Some(b"v42".to_vec())]]);
    let f = c.query(4, "SELECT k FROM ks.t");
    assert_eq!(f.rows().len(), 50);
}

#[test]
fn sigint_also_shuts_down_cleanly() {
    let mut node = Node::start("");
    let _c = node.ready();
    signal(node.child.id(), libc::SIGINT);
    let status = node.wait_exit();
    assert_eq!(status.code(), Some(0), "log:\n{}", node.log());
    assert!(lock_is_free(&node.data_dir().join("LOCK")));
}

#[test]
fn writes_acknowledged_before_sigterm_survive_it() {
    let dir = tempfile::tempdir().unwrap();
    let mut node = Node::start_in(dir.path(), "");
    let mut c = node.ready();
    c.exec("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}");
    c.exec("CREATE TABLE ks.t (k int PRIMARY KEY, v text)");

    // Many writes in flight, then SIGTERM once the first is answered.
    let mut bytes = Vec::new();
    for s in 1..=500i16 {
        let cql = format!("INSERT INTO ks.t (k, v) VALUES ({s}, 'v{s}')");
        bytes.extend(c.frame(
            s,
            mosaic_cql::frame::Opcode::Query,
            &common::query_body(&cql),
        ));
    }
    c.send_raw(&bytes);
    let first = c.recv();
    assert_eq!(first.result_kind(), 1, "{}", first.describe());
    signal(node.child.id(), libc::SIGTERM);
    let mut acked = vec![first.stream];
    // Every answer that arrives is a whole, successful frame; then the connection closes.
    while let Ok(Some(f)) = c.try_recv() {
        assert_eq!(f.result_kind(), 1, "{}", f.describe());
        acked.push(f.stream);
    }
    assert_eq!(node.wait_exit().code(), Some(0), "log:\n{}", node.log());

    drop(node);
    let node = Node::start_in(dir.path(), "");
    let mut c = node.ready();
    for s in acked {
        let f = c.query(1, &format!("SELECT v FROM ks.t WHERE k = {s}"));
        assert_eq!(
            f.rows(),
            vec![vec![Some(format!("v{s}").into_bytes())]],
            "key {s}"
        );
    }
}
