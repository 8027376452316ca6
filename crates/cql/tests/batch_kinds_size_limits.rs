//! Scenario: the batch size thresholds (`batch_size_warn_threshold_bytes`,
//! `batch_size_fail_threshold_bytes`) apply to the batch kinds Cassandra 4.1's
//! `BatchStatement.verifyBatchSize` checks — ordinary and counter batches over several
//! partitions, sent as BEGIN BATCH text or as a BATCH request — while a conditional batch
//! (one partition, as Cassandra requires) is not checked; and the `IN` caps hold for every
//! statement that expands keys, multi-column IN included.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

mod common;

use common::Harness;
use mosaic_cql::frame::{
    Batch, BatchQuery, BatchStatement, BatchType, BoundValues, Consistency, ErrorResponse, Request,
    Response,
};
use mosaic_types::CqlValue;

fn harness() -> Harness {
    let mut h = Harness::with_keyspace();
    h.ok("CREATE TABLE c (k text, ck int, n counter, PRIMARY KEY (k, ck))");
    h.ok("CREATE TABLE t (k text, ck int, v text, PRIMARY KEY (k, ck))");
    h
}

/// The warnings of the last request.
fn warnings(h: &Harness) -> Vec<String> {
    h.session.warnings.clone()
}

/// A counter increment of the row (`k`, 1).
fn increment(k: &str) -> String {
    format!("UPDATE c SET n = n + 1 WHERE k = '{k}' AND ck = 1;")
}

/// A BATCH request of `batch_type` with `statements` (CQL texts without values).
fn batch_request(h: &mut Harness, batch_type: BatchType, statements: &[String]) -> Response {
    h.request(Request::Batch(Batch {
        batch_type,
        statements: statements
            .iter()
            .map(|q| BatchStatement {
                query: BatchQuery::Query(q.trim_end_matches(';').to_owned()),
                values: BoundValues::Positional(vec![]),
            })
            .collect(),
        consistency: Consistency::One,
        serial_consistency: None,
        timestamp: None,
        keyspace: None,
        now_in_seconds: None,
    }))
}

fn counter(h: &mut Harness, k: &str) -> Option<Option<CqlValue>> {
    h.rows(&format!("SELECT n FROM c WHERE k = '{k}' AND ck = 1"))
        .pop()
        .and_then(|mut r| r.pop())
}

#[test]
fn counter_batches_over_several_partitions_are_warned_about_then_refused() {
    let mut h = harness();
    // Keys of 4,000 bytes: two partitions pass the 5 KiB warning threshold.
    let (a, b) = ("a".repeat(4000), "b".repeat(4000));
    h.ok(&format!(
        "BEGIN COUNTER BATCH {} {} APPLY BATCH",
        increment(&a),
        increment(&b)
    ));
    let w = warnings(&h);
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(
        w[0].starts_with("Batch for [ks.c] is of size ")
            && w[0].contains("exceeding specified threshold of 5120 by"),
        "{w:?}"
    );
    assert_eq!(counter(&mut h, &a), Some(Some(CqlValue::BigInt(1))));

    // Past the failure threshold (50 KiB): refused, nothing counted.
    let (x, y) = ("x".repeat(30_000), "y".repeat(30_000));
    let e = h.err(&format!(
        "BEGIN COUNTER BATCH {} {} APPLY BATCH",
        increment(&x),
        increment(&y)
    ));
    assert_eq!(e.message, "Batch too large");
    assert_eq!(counter(&mut h, &x), None);
    // The same through a BATCH request.
    match batch_request(&mut h, BatchType::Counter, &[increment(&x), increment(&y)]) {
        Response::Error(ErrorResponse { message, .. }) => assert_eq!(message, "Batch too large"),
        other => panic!("{other:?}"),
    }
    assert_eq!(counter(&mut h, &y), None);
    // A counter DELETE counts too.
    let e = h.err(&format!(
        "BEGIN COUNTER BATCH {} DELETE n FROM c WHERE k = '{y}' AND ck = 1; APPLY BATCH",
        increment(&x)
    ));
    assert_eq!(e.message, "Batch too large");

    // One partition, however large: exempt (CASSANDRA-10876).
    h.ok(&format!(
        "BEGIN COUNTER BATCH {} UPDATE c SET n = n + 5 WHERE k = '{x}' AND ck = 2; APPLY BATCH",
        increment(&x)
    ));
    assert!(warnings(&h).is_empty());
    assert_eq!(counter(&mut h, &x), Some(Some(CqlValue::BigInt(1))));
    // Under the warning threshold: neither warned nor refused.
    h.ok(&format!(
        "BEGIN COUNTER BATCH {} {} APPLY BATCH",
        increment("p"),
        increment("q")
    ));
    assert!(warnings(&h).is_empty());
}

#[test]
fn conditional_batches_are_not_measured_as_cassandra_does() {
    let mut h = harness();
    let value = "v".repeat(30_000);
    let k = "k";
    // 60 KB on one partition, conditional: applied (Cassandra 4.1 does not measure
    // conditional batches, and they cannot span partitions).
    let r = h.ok(&format!(
        "BEGIN BATCH INSERT INTO t (k, ck, v) VALUES ('{k}', 1, '{value}') IF NOT EXISTS; \
         INSERT INTO t (k, ck, v) VALUES ('{k}', 2, '{value}') IF NOT EXISTS; APPLY BATCH"
    ));
    assert!(format!("{r:?}").contains("applied"), "{r:?}");
    assert!(warnings(&h).is_empty());
    assert_eq!(h.rows("SELECT ck FROM t WHERE k = 'k'").len(), 2);
    // Over two partitions it is refused for that, not for its size.
    let e = h.err(&format!(
        "BEGIN BATCH INSERT INTO t (k, ck, v) VALUES ('a', 1, '{value}') IF NOT EXISTS; \
         INSERT INTO t (k, ck, v) VALUES ('b', 1, '{value}') IF NOT EXISTS; APPLY BATCH"
    ));
    assert_eq!(
        e.message,
        "Batch with conditions cannot span multiple partitions"
    );
}

/// `IN (0, 1, …, n-1)`.
fn in_list(n: usize) -> String {
    let values: Vec<String> = (0..n).map(|i| i.to_string()).collect();
    format!("IN ({})", values.join(", "))
}

/// `IN ((0, 0), (1, 1), …)` with `n` tuples.
fn tuples(n: usize) -> String {
    let values: Vec<String> = (0..n).map(|i| format!("({i}, {i})")).collect();
    format!("IN ({})", values.join(", "))
}

#[test]
fn in_caps_hold_for_every_statement_that_expands_keys() {
    let mut h = Harness::with_keyspace();
    h.ok("CREATE TABLE r (k int, c1 int, c2 int, v int, PRIMARY KEY (k, c1, c2))");
    h.ok("CREATE TABLE n (k int, c1 int, c2 int, n counter, PRIMARY KEY (k, c1, c2))");
    let (ten, eleven) = (in_list(10), in_list(11));
    for cql in [
        format!("SELECT v FROM r WHERE k {ten} AND c1 {ten} AND c2 {eleven}"),
        format!("UPDATE r SET v = 1 WHERE k = 1 AND c1 {ten} AND c2 {eleven}"),
        format!("DELETE FROM r WHERE k = 1 AND c1 {ten} AND c2 {eleven}"),
        format!("UPDATE n SET n = n + 1 WHERE k = 1 AND c1 {ten} AND c2 {eleven}"),
        format!(
            "BEGIN COUNTER BATCH UPDATE n SET n = n + 1 WHERE k = 1 AND c1 {ten} AND c2 \
             {eleven}; APPLY BATCH"
        ),
        format!(
            "BEGIN UNLOGGED BATCH DELETE FROM r WHERE k = 1 AND c1 {ten} AND c2 {eleven}; \
             APPLY BATCH"
        ),
        // A multi-column IN names one clustering prefix per tuple.
        format!("SELECT v FROM r WHERE k = 1 AND (c1, c2) {}", tuples(101)),
        format!("DELETE FROM r WHERE k = 1 AND (c1, c2) {}", tuples(101)),
    ] {
        let e = h.err(&cql);
        assert!(
            e.message
                .contains("clustering-key cartesian product size 1")
                && e.message.contains("is greater than maximum 100"),
            "{cql}: {}",
            e.message
        );
    }
    let mut partition_keys = Vec::new();
    for cql in [
        format!(
            "UPDATE n SET n = n + 1 WHERE k {} AND c1 = 0 AND c2 = 0",
            in_list(101)
        ),
        format!(
            "DELETE FROM r WHERE k {} AND c1 = 0 AND c2 = 0",
            in_list(101)
        ),
    ] {
        partition_keys.push(h.err(&cql).message);
    }
    for m in partition_keys {
        assert!(
            m.contains("partition-key cartesian product size 101 is greater than maximum 100"),
            "{m}"
        );
    }
    // At the caps: served.
    h.ok(&format!(
        "SELECT v FROM r WHERE k = 1 AND (c1, c2) {}",
        tuples(100)
    ));
    h.ok(&format!(
        "UPDATE n SET n = n + 1 WHERE k = 1 AND c1 {ten} AND c2 {ten}"
    ));
    assert_eq!(h.rows("SELECT n FROM n WHERE k = 1").len(), 100);
}
