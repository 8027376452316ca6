//! `[limits]` on what one statement may cost, against a real `mosaic server`: the
//! cartesian product of `IN` lists (refused before it is expanded), the batch size
//! thresholds (a warning in the response and the log, then "Batch too large"; a batch
//! on one partition exempt), the bound on a result built without paging, and the
//! prepared-statement cache's budget (an evicted statement answers Unprepared).
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]
#![allow(clippy::disallowed_methods)] // Tests of a real process.

mod common;

use common::{Conn, Node, Reader};
use mosaic_cql::frame::Opcode;

/// A node with `config`, and a connection to it on which keyspace `ks` and `tables` (CQL
/// statements) were created.
fn node_with(config: &str, tables: &[&str]) -> (Node, Conn) {
    let node = Node::start(config);
    let mut c = node.ready();
    c.exec(
        "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
    );
    for t in tables {
        c.exec(t);
    }
    (node, c)
}

/// `IN (0, 1, …, n-1)`.
fn in_list(n: usize) -> String {
    let values: Vec<String> = (0..n).map(|i| i.to_string()).collect();
    format!("IN ({})", values.join(", "))
}

#[test]
fn in_lists_past_the_cartesian_cap_are_refused_before_they_expand() {
    let (_node, mut c) = node_with(
        "",
        &[
            "CREATE TABLE ks.p (a int, b int, c int, d int, v int, PRIMARY KEY ((a, b, c, d)))",
            "CREATE TABLE ks.r (k int, c1 int, c2 int, v int, PRIMARY KEY (k, c1, c2))",
        ],
    );
    c.exec("INSERT INTO ks.p (a, b, c, d, v) VALUES (1, 1, 0, 0, 7)");

    // Four columns of 1,000 values each: 10^12 keys, refused at once.
    let l = in_list(1000);
    let f = c.query(
        2,
        &format!("SELECT v FROM ks.p WHERE a {l} AND b {l} AND c {l} AND d {l}"),
    );
    let (code, message) = f.error();
    assert_eq!(code, 0x2200, "{message}");
    assert!(
        message.contains(
            "partition-key cartesian product size 1000000000000 is greater than maximum 100"
        ),
        "{message}"
    );
    // The same through a write.
    let f = c.query(
        3,
        &format!("UPDATE ks.p SET v = 1 WHERE a {l} AND b {l} AND c {l} AND d {l}"),
    );
    assert_eq!(f.error().0, 0x2200);

    // At the cap: served.
    let ten = in_list(10);
    let rows = c
        .exec(&format!(
            "SELECT v FROM ks.p WHERE a {ten} AND b {ten} AND c = 0 AND d = 0"
        ))
        .rows();
    assert_eq!(rows, vec![vec![Some(7i32.to_be_bytes().to_vec())]]);
    // One past it: refused.
    let f = c.query(
        4,
        &format!(
            "SELECT v FROM ks.p WHERE a {ten} AND b {} AND c = 0 AND d = 0",
            in_list(11)
        ),
    );
    assert!(f.error().1.contains("size 110 is greater than maximum 100"));

    // Clustering prefixes: 11 × 10 refused, 10 × 10 served.
    let f = c.query(
        5,
        &format!(
            "SELECT v FROM ks.r WHERE k = 1 AND c1 {} AND c2 {ten}",
            in_list(11)
        ),
    );
    let (code, message) = f.error();
    assert_eq!(code, 0x2200);
    assert!(
        message.contains("clustering-key cartesian product size 110 is greater than maximum 100"),
        "{message}"
    );
    c.exec(&format!(
        "SELECT v FROM ks.r WHERE k = 1 AND c1 {ten} AND c2 {ten}"
    ));
    c.exec(&format!(
        "DELETE FROM ks.r WHERE k = 1 AND c1 {ten} AND c2 {ten}"
    ));
}

#[test]
fn the_cartesian_caps_are_configurable() {
    let (_node, mut c) = node_with(
        "[limits]\npartition_key_restrictions_max = 1000\nclustering_key_restrictions_max = 5\n",
        &["CREATE TABLE ks.p (a int, b int, c1 int, c2 int, v int, PRIMARY KEY ((a, b), c1, c2))"],
    );
    c.exec(&format!(
        "SELECT v FROM ks.p WHERE a {} AND b {}",
        in_list(10),
        in_list(11)
    ));
    let f = c.query(
        2,
        &format!(
            "SELECT v FROM ks.p WHERE a = 1 AND b = 1 AND c1 {} AND c2 {}",
            in_list(2),
            in_list(3)
        ),
    );
    assert!(f.error().1.contains("size 6 is greater than maximum 5"));
}

/// The warnings of a response (its WARNING flag set), and the body after them.
fn warnings(f: &common::Frame) -> (Vec<String>, Vec<u8>) {
    if f.flags & 0x08 == 0 {
        return (Vec::new(), f.body.clone());
    }
    let mut r = Reader(&f.body);
    let w = r.string_list();
    (w, r.0.to_vec())
}

#[test]
fn batches_past_the_thresholds_are_warned_about_then_refused_unless_on_one_partition() {
    let (node, mut c) = node_with(
        "",
        &["CREATE TABLE ks.t (k int, c int, v text, PRIMARY KEY (k, c))"],
    );
    let batch = |rows: &[(i32, i32, usize)]| {
        let inserts: Vec<String> = rows
            .iter()
            .map(|(k, ck, len)| {
                format!(
                    "INSERT INTO ks.t (k, c, v) VALUES ({k}, {ck}, '{}');",
                    "x".repeat(*len)
                )
            })
            .collect();
        format!("BEGIN UNLOGGED BATCH {} APPLY BATCH", inserts.join(" "))
    };

    // Under the warning threshold (5 KiB): no warning.
    let f = c.exec(&batch(&[(1, 1, 1000), (2, 1, 1000)]));
    assert!(warnings(&f).0.is_empty());

    // Past it, over two partitions: a warning in the response, and in the log.
    let f = c.exec(&batch(&[(1, 1, 4000), (2, 1, 4000)]));
    let (w, _) = warnings(&f);
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(
        w[0].starts_with("Batch for [ks.t] is of size ")
            && w[0].contains("exceeding specified threshold of 5120 by"),
        "{w:?}"
    );
    common::wait_for("the warning in the log", || {
        node.log()
            .contains("Batch for [ks.t] is of size")
            .then_some(())
    });

    // Past the failure threshold (50 KiB): refused, nothing written.
    let f = c.query(2, &batch(&[(3, 1, 30_000), (4, 1, 30_000)]));
    assert_eq!(f.error(), (0x2200, "Batch too large".to_owned()));
    assert!(c.exec("SELECT v FROM ks.t WHERE k = 3").rows().is_empty());

    // One partition, however large: exempt (CASSANDRA-10876), neither warned nor refused.
    let f = c.exec(&batch(&[(5, 1, 30_000), (5, 2, 30_000)]));
    assert!(warnings(&f).0.is_empty());
    assert_eq!(c.exec("SELECT v FROM ks.t WHERE k = 5").rows().len(), 2);

    // The BATCH request (not a BEGIN BATCH text) is checked the same way.
    let mut body = Vec::new();
    body.push(1u8); // unlogged
    body.extend_from_slice(&2u16.to_be_bytes());
    for k in [6, 7] {
        body.push(0); // a query string
        let text = format!(
            "INSERT INTO ks.t (k, c, v) VALUES ({k}, 1, '{}')",
            "y".repeat(30_000)
        );
        body.extend_from_slice(&(text.len() as u32).to_be_bytes());
        body.extend_from_slice(text.as_bytes());
        body.extend_from_slice(&0u16.to_be_bytes()); // no values
    }
    body.extend_from_slice(&1u16.to_be_bytes()); // ONE
    body.push(0); // no flags
    c.send(9, Opcode::Batch, &body);
    let f = c.recv();
    assert_eq!(f.error(), (0x2200, "Batch too large".to_owned()));
}

/// A QUERY body at ONE asking for pages of `page_size` rows.
fn paged_query_body(cql: &str, page_size: i32) -> Vec<u8> {
    let mut b = Vec::new();
    b.extend_from_slice(&(cql.len() as u32).to_be_bytes());
    b.extend_from_slice(cql.as_bytes());
    b.extend_from_slice(&1u16.to_be_bytes());
    b.push(0x04);
    b.extend_from_slice(&page_size.to_be_bytes());
    b
}

#[test]
fn an_unpaged_result_past_its_bound_is_refused_and_paging_reads_it_all() {
    let (_node, mut c) = node_with(
        "[limits]\nunpaged_result_size_bytes_max = 65536\n",
        &["CREATE TABLE ks.t (k int, c int, v text, PRIMARY KEY (k, c))"],
    );
    let value = "z".repeat(8000);
    for i in 0..20 {
        c.exec(&format!(
            "INSERT INTO ks.t (k, c, v) VALUES (1, {i}, '{value}')"
        ));
    }
    // 160 KB without paging: refused, telling the user to page.
    let f = c.query(2, "SELECT v FROM ks.t WHERE k = 1");
    let (code, message) = f.error();
    assert_eq!(code, 0x2200);
    assert!(
        message.contains("unpaged_result_size_bytes_max (65536 bytes): page it"),
        "{message}"
    );
    // Under the bound without paging: served.
    assert_eq!(
        c.exec("SELECT v FROM ks.t WHERE k = 1 LIMIT 5")
            .rows()
            .len(),
        5
    );
    assert_eq!(c.exec("SELECT count(*) FROM ks.t").rows().len(), 1);
    // Paged, pages are not bounded by it: a page of 10 rows (80 KB) is served.
    c.send(
        3,
        Opcode::Query,
        &paged_query_body("SELECT v FROM ks.t WHERE k = 1", 10),
    );
    let f = c.recv();
    assert_eq!(f.rows().len(), 10, "{}", f.describe());
}

/// PREPARE `cql`; the statement's id.
fn prepare(c: &mut Conn, cql: &str) -> Vec<u8> {
    let mut body = (cql.len() as u32).to_be_bytes().to_vec();
    body.extend_from_slice(cql.as_bytes());
    c.send(7, Opcode::Prepare, &body);
    let f = c.recv();
    assert_eq!(f.result_kind(), 4, "{}", f.describe());
    let mut r = Reader(&f.body[4..]);
    let n = r.short() as usize;
    r.0[..n].to_vec()
}

/// EXECUTE `id` at ONE without values.
fn execute(c: &mut Conn, id: &[u8]) -> common::Frame {
    let mut body = (id.len() as u16).to_be_bytes().to_vec();
    body.extend_from_slice(id);
    body.extend_from_slice(&1u16.to_be_bytes());
    body.push(0);
    c.send(8, Opcode::Execute, &body);
    c.recv()
}

#[test]
fn a_statement_evicted_from_the_prepared_cache_answers_unprepared_until_prepared_again() {
    let (node, mut c) = node_with(
        "[limits]\nprepared_statements_cache_size_bytes = 65536\n",
        &["CREATE TABLE ks.t (k int PRIMARY KEY, v int)"],
    );
    c.exec("INSERT INTO ks.t (k, v) VALUES (1, 2)");
    let first = prepare(&mut c, "SELECT v FROM ks.t WHERE k = 1");
    assert_eq!(execute(&mut c, &first).rows().len(), 1);
    // 100 statements of about 5 KB each (estimated): eight times the budget.
    for i in 0..100 {
        let padding = "0".repeat(1000);
        prepare(
            &mut c,
            &format!("SELECT v FROM ks.t WHERE k = {i}{padding}"),
        );
    }
    let f = execute(&mut c, &first);
    let (code, message) = f.error();
    assert_eq!(code, 0x2500, "{message}");
    assert!(message.contains("evicted"), "{message}");
    // Prepared again (as drivers do on Unprepared): served.
    assert_eq!(prepare(&mut c, "SELECT v FROM ks.t WHERE k = 1"), first);
    assert_eq!(execute(&mut c, &first).rows().len(), 1);
    // A statement larger than the whole budget is refused, not cached and lost.
    let huge = format!(
        "SELECT v FROM ks.t WHERE k = 1 AND v = '{}' ALLOW FILTERING",
        "h".repeat(20_000)
    );
    let mut body = (huge.len() as u32).to_be_bytes().to_vec();
    body.extend_from_slice(huge.as_bytes());
    c.send(9, Opcode::Prepare, &body);
    let (code, message) = c.recv().error();
    assert_eq!(code, 0x2200);
    assert!(message.contains("too large to prepare"), "{message}");
    drop(node);
}
