//! `[log] slow_query_ms` against a real `mosaic server`: requests over the threshold are
//! logged at `warn` under `mosaic::slow_query` with their statement and consistency level,
//! and `slow_query_ms = 0` logs none.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

mod common;

use common::{wait_for, Node};

/// Schema changes make the node create and fsync files, so each takes well over the 1 ms
/// threshold; several of them make the check independent of one fast disk operation.
const STATEMENTS: [&str; 4] = [
    "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
    "CREATE TABLE ks.a (k int PRIMARY KEY, v text)",
    "CREATE TABLE ks.b (k int PRIMARY KEY, v text)",
    "CREATE TABLE ks.c (k int PRIMARY KEY, v text)",
];

fn run_statements(node: &Node) {
    let mut c = node.ready();
    for (i, cql) in STATEMENTS.iter().enumerate() {
        let kind = c.query(i as i16 + 1, cql).result_kind();
        assert_eq!(kind, 5, "{cql}: a schema change result");
    }
}

#[test]
fn requests_over_the_threshold_are_logged_with_statement_and_consistency() {
    let node = Node::start("[log]\nslow_query_ms = 1\n");
    run_statements(&node);
    let line = wait_for("a slow-query line", || {
        node.log()
            .lines()
            .find(|l| l.contains("mosaic::slow_query") && l.contains("CREATE TABLE ks."))
            .map(str::to_owned)
    });
    assert!(line.contains(" WARN "), "{line}");
    assert!(line.contains("consistency=\"ONE\""), "{line}");
    assert!(line.contains("elapsed_ms="), "{line}");
}

#[test]
fn a_zero_threshold_logs_no_request() {
    let mut node = Node::start("[log]\nslow_query_ms = 0\n");
    run_statements(&node);
    // The log is complete once the node has stopped.
    common::signal(node.child.id(), libc::SIGTERM);
    assert_eq!(node.wait_exit().code(), Some(0), "{}", node.log());
    let log = node.log();
    assert!(!log.contains("mosaic::slow_query"), "{log}");
}
