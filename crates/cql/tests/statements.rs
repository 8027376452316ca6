//! CQL statements through the processor over an in-memory coordinator: what a Cassandra
//! user observes for DDL, writes, reads, paging, prepared statements and errors.

mod common;

use std::sync::atomic::Ordering;

use bytes::Bytes;
use common::{int, text, values, Harness};
use mosaic_cql::frame::{
    error_code, BatchQuery, BatchStatement, BatchType, BoundValues, Consistency, ErrorKind,
    Execute, Prepare, QueryParameters, Request, Response, ResultBody,
};
use mosaic_types::CqlValue;

fn code(e: &mosaic_cql::frame::ErrorResponse) -> i32 {
    e.kind.code()
}

#[test]
fn keyspace_and_table_ddl_follow_cassandra() {
    let mut h = Harness::new();
    let r = h.ok("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}");
    assert!(matches!(r, ResultBody::SchemaChange(_)));
    let e = h.err("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}");
    assert_eq!(code(&e), error_code::ALREADY_EXISTS);
    assert!(matches!(h.ok("CREATE KEYSPACE IF NOT EXISTS ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}"), ResultBody::Void));
    assert_eq!(h.coordinator_rf("ks"), 3);
    h.ok("ALTER KEYSPACE ks WITH replication = {'class': 'NetworkTopologyStrategy', 'dc1': 2, 'dc2': 1}");
    assert_eq!(h.coordinator_rf("ks"), 3);
    let e = h.err("CREATE KEYSPACE bad WITH replication = {'class': 'SimpleStrategy'}");
    assert_eq!(code(&e), error_code::CONFIG);
    let e = h.err("CREATE TABLE t (k int PRIMARY KEY)");
    assert_eq!(code(&e), error_code::INVALID);
    assert!(e.message.contains("No keyspace"), "{}", e.message);
    h.ok("USE ks");
    h.ok("CREATE TABLE t (k int PRIMARY KEY, v text) WITH comment = 'hi' AND layout = 'uniform'");
    let e = h.err("CREATE TABLE t (k int PRIMARY KEY, v text)");
    assert_eq!(code(&e), error_code::ALREADY_EXISTS);
    assert!(matches!(
        h.ok("CREATE TABLE IF NOT EXISTS t (k int PRIMARY KEY)"),
        ResultBody::Void
    ));
    let e = h.err("CREATE TABLE u (k int PRIMARY KEY) WITH layout = 'nonsense'");
    assert_eq!(code(&e), error_code::CONFIG);
    let e = h.err("CREATE TABLE u (k int PRIMARY KEY) WITH bogus = 1");
    assert_eq!(code(&e), error_code::SYNTAX);
    let e = h.err("CREATE TABLE u (k map<int, int>, v int, PRIMARY KEY (k))");
    assert_eq!(code(&e), error_code::INVALID);
    let e = h.err("SELECT * FROM nope");
    assert_eq!(code(&e), error_code::INVALID);
    assert!(e.message.contains("unconfigured table nope"));
    h.ok("INSERT INTO t (k, v) VALUES (1, 'a')");
    // SELECT *'s columns are derived once per definition: an ALTER brings new ones.
    assert_eq!(h.rows("SELECT * FROM t"), vec![vec![int(1), text("a")]]);
    h.ok("ALTER TABLE t ADD w int");
    h.ok("INSERT INTO t (k, v, w) VALUES (1, 'a', 2)");
    assert_eq!(
        h.rows("SELECT * FROM t"),
        vec![vec![int(1), text("a"), int(2)]]
    );
    h.ok("ALTER TABLE t DROP w");
    assert_eq!(h.rows("SELECT * FROM t"), vec![vec![int(1), text("a")]]);
    h.ok("ALTER TABLE t ADD w int");
    // A re-added column does not bring back old cells.
    assert_eq!(h.rows("SELECT w FROM t"), vec![vec![None]]);
    h.ok("TRUNCATE t");
    assert!(h.rows("SELECT * FROM t").is_empty());
    h.ok("DROP TABLE t");
    let e = h.err("DROP TABLE t");
    assert_eq!(code(&e), error_code::CONFIG);
    h.ok("DROP TABLE IF EXISTS t");
    h.ok("DROP KEYSPACE ks");
    let e = h.err("USE ks");
    assert_eq!(code(&e), error_code::INVALID);
    let e = h.err("DROP KEYSPACE system");
    assert_eq!(code(&e), error_code::UNAUTHORIZED);
}

#[test]
fn unsupported_features_are_refused_with_cassandra_codes() {
    let mut h = Harness::with_keyspace();
    h.ok("CREATE TABLE t (k int PRIMARY KEY, v int)");
    for cql in [
        "CREATE MATERIALIZED VIEW mv AS SELECT * FROM t WHERE v IS NOT NULL PRIMARY KEY (v, k)",
        "CREATE FUNCTION f (a int) RETURNS NULL ON NULL INPUT RETURNS int LANGUAGE java AS 'return a;'",
    ] {
        let e = h.err(cql);
        assert_eq!(code(&e), error_code::INVALID, "{cql}: {}", e.message);
    }
    let e = h.err("SELEC * FROM t");
    assert_eq!(code(&e), error_code::SYNTAX);
}

#[test]
fn clustering_order_slices_and_in() {
    let mut h = Harness::with_keyspace();
    h.ok("CREATE TABLE t (k int, c1 int, c2 text, v int, PRIMARY KEY (k, c1, c2)) WITH CLUSTERING ORDER BY (c1 DESC, c2 ASC)");
    for c1 in 0..4 {
        for c2 in ["a", "b"] {
            h.ok(&format!(
                "INSERT INTO t (k, c1, c2, v) VALUES (1, {c1}, '{c2}', {})",
                c1 * 10
            ));
        }
    }
    let keys = |rows: Vec<Vec<Option<CqlValue>>>| -> Vec<(i32, String)> {
        rows.into_iter()
            .map(|r| match (&r[0], &r[1]) {
                (Some(CqlValue::Int(a)), Some(CqlValue::Text(b))) => (*a, b.clone()),
                other => panic!("{other:?}"),
            })
            .collect()
    };
    let all = keys(h.rows("SELECT c1, c2 FROM t WHERE k = 1"));
    assert_eq!(all.first(), Some(&(3, "a".to_owned())));
    assert_eq!(all.last(), Some(&(0, "b".to_owned())));
    assert_eq!(all.len(), 8);
    let slice = keys(h.rows("SELECT c1, c2 FROM t WHERE k = 1 AND c1 > 0 AND c1 <= 2"));
    assert_eq!(
        slice,
        vec![
            (2, "a".into()),
            (2, "b".into()),
            (1, "a".into()),
            (1, "b".into())
        ]
    );
    let rev = keys(h.rows("SELECT c1, c2 FROM t WHERE k = 1 AND c1 >= 2 ORDER BY c1 ASC"));
    assert_eq!(
        rev,
        vec![
            (2, "b".into()),
            (2, "a".into()),
            (3, "b".into()),
            (3, "a".into())
        ]
    );
    let eq = keys(h.rows("SELECT c1, c2 FROM t WHERE k = 1 AND c1 = 3 AND c2 > 'a'"));
    assert_eq!(eq, vec![(3, "b".into())]);
    let in_ = keys(h.rows("SELECT c1, c2 FROM t WHERE k = 1 AND c1 IN (0, 3) AND c2 = 'b'"));
    assert_eq!(in_, vec![(3, "b".into()), (0, "b".into())]);
    let multi = keys(h.rows("SELECT c1, c2 FROM t WHERE k = 1 AND (c1, c2) > (1, 'a')"));
    assert_eq!(
        multi,
        vec![(1, "b".into()), (0, "a".into()), (0, "b".into())]
    );
    let limited = keys(h.rows("SELECT c1, c2 FROM t WHERE k = 1 LIMIT 3"));
    assert_eq!(limited.len(), 3);
    let e = h.err("SELECT * FROM t WHERE k = 1 AND c2 = 'a'");
    assert!(e.message.contains("cannot be restricted"), "{}", e.message);
    assert_eq!(
        h.rows("SELECT * FROM t WHERE k = 1 AND c2 = 'a' ALLOW FILTERING")
            .len(),
        4
    );
    let e = h.err("SELECT * FROM t WHERE v = 10");
    assert!(e.message.contains("ALLOW FILTERING"));
    assert_eq!(
        h.rows("SELECT v FROM t WHERE v = 10 ALLOW FILTERING"),
        vec![vec![int(10)], vec![int(10)]]
    );
    let e = h.err("SELECT * FROM t WHERE k = 1 ORDER BY c2 ASC");
    assert_eq!(code(&e), error_code::INVALID);
}

#[test]
fn partition_in_token_ranges_and_per_partition_limit() {
    let mut h = Harness::with_keyspace();
    h.ok("CREATE TABLE t (k int, c int, v int, PRIMARY KEY (k, c))");
    for k in 0..10 {
        for c in 0..3 {
            h.ok(&format!(
                "INSERT INTO t (k, c, v) VALUES ({k}, {c}, {})",
                k * 100 + c
            ));
        }
    }
    assert_eq!(h.rows("SELECT * FROM t").len(), 30);
    assert_eq!(h.rows("SELECT v FROM t WHERE k IN (3, 5, 3)").len(), 6);
    assert_eq!(h.rows("SELECT * FROM t PER PARTITION LIMIT 1").len(), 10);
    assert_eq!(h.rows("SELECT DISTINCT k FROM t").len(), 10);
    let tokens = tokens_of(&mut h);
    assert!(
        tokens.windows(2).all(|w| w[0] <= w[1]),
        "range scans go in token order"
    );
    let mid = tokens[15];
    let above = h.rows(&format!("SELECT k FROM t WHERE token(k) > {mid}"));
    assert_eq!(above.len(), tokens.iter().filter(|t| **t > mid).count());
    let count = h.rows("SELECT count(*), sum(v), min(v), max(v), avg(c) FROM t WHERE k = 2");
    assert_eq!(
        count,
        vec![vec![
            Some(CqlValue::BigInt(3)),
            int(603),
            int(200),
            int(202),
            int(1)
        ]]
    );
    let all = h.rows("SELECT count(*) FROM t");
    assert_eq!(all, vec![vec![Some(CqlValue::BigInt(30))]]);
}

#[test]
fn token_range_scans_read_what_their_limit_needs_and_bounds_follow_cassandra() {
    let mut h = Harness::with_keyspace();
    h.ok("CREATE TABLE t (k int PRIMARY KEY, v int)");
    for k in 0..200 {
        h.ok(&format!("INSERT INTO t (k, v) VALUES ({k}, {k})"));
    }
    let tokens = tokens_of(&mut h);
    let from = tokens[50];
    // YCSB's workload E: a token-range scan with a LIMIT. The token relation is the scan's
    // range, not a filter, so the read asks for the rows LIMIT wants (plus the one that
    // tells the range is not exhausted), not a whole chunk of 1,000.
    let before = h.coordinator.entries_read.load(Ordering::SeqCst);
    let rows = h.rows(&format!("SELECT k FROM t WHERE token(k) >= {from} LIMIT 5"));
    let read = h.coordinator.entries_read.load(Ordering::SeqCst) - before;
    assert_eq!(rows.len(), 5);
    assert!(read <= 6, "a LIMIT 5 token scan read {read} entries");
    let expected: Vec<Vec<Option<CqlValue>>> = h
        .rows("SELECT k FROM t")
        .into_iter()
        .skip(50)
        .take(5)
        .collect();
    assert_eq!(rows, expected);
    // Both bounds, then the same side twice or `=` with another relation: as Cassandra.
    let between = h.rows(&format!(
        "SELECT k FROM t WHERE token(k) > {from} AND token(k) <= {}",
        tokens[60]
    ));
    assert_eq!(between.len(), 10);
    for (cql, message) in [
        (
            "SELECT k FROM t WHERE token(k) > 0 AND token(k) >= 5",
            "More than one restriction was found for the start bound on k",
        ),
        (
            "SELECT k FROM t WHERE token(k) < 0 AND token(k) <= 5",
            "More than one restriction was found for the end bound on k",
        ),
        (
            "SELECT k FROM t WHERE token(k) = 0 AND token(k) <= 5",
            "k cannot be restricted by more than one relation if it includes an Equal",
        ),
        (
            "SELECT k FROM t WHERE token(k) < 0 AND token(k) = 5",
            "Columns \"k\" cannot be restricted by both an equality and an inequality relation",
        ),
    ] {
        let e = h.err(cql);
        assert_eq!(code(&e), error_code::INVALID, "{cql}");
        assert!(e.message.contains(message), "{cql}: {}", e.message);
    }
}

/// `token(k)` of every row of `t`, in scan order.
fn tokens_of(h: &mut Harness) -> Vec<i64> {
    h.rows("SELECT token(k) FROM t")
        .into_iter()
        .map(|r| match r[0] {
            Some(CqlValue::BigInt(t)) => t,
            _ => panic!("token(k) is a bigint"),
        })
        .collect()
}

#[test]
fn paging_returns_every_row_once_in_order() {
    let mut h = Harness::with_keyspace();
    h.ok("CREATE TABLE t (k int, c int, v text, PRIMARY KEY (k, c))");
    for c in 0..10_000 {
        h.ok(&format!("INSERT INTO t (k, c, v) VALUES (1, {c}, 'x')"));
    }
    for k in 2..300 {
        h.ok(&format!("INSERT INTO t (k, c, v) VALUES ({k}, 0, 'y')"));
        h.ok(&format!("INSERT INTO t (k, c, v) VALUES ({k}, 1, 'y')"));
    }
    let (rows, pages) = common::paged(&mut h, "SELECT c FROM t WHERE k = 1", 1000);
    assert_eq!(rows.len(), 10_000);
    assert!(pages >= 10);
    let cs: Vec<i32> = rows
        .iter()
        .map(|r| match r[0] {
            Some(CqlValue::Int(c)) => c,
            _ => panic!(),
        })
        .collect();
    assert_eq!(cs, (0..10_000).collect::<Vec<_>>());
    let (rev, _) = common::paged(&mut h, "SELECT c FROM t WHERE k = 1 ORDER BY c DESC", 777);
    assert_eq!(rev.len(), 10_000);
    assert_eq!(rev[0], vec![int(9999)]);
    let (all, _) = common::paged(&mut h, "SELECT k, c FROM t", 100);
    assert_eq!(all.len(), 10_000 + 298 * 2);
    let mut seen = std::collections::HashSet::new();
    for r in &all {
        assert!(seen.insert(format!("{r:?}")), "row {r:?} returned twice");
    }
    let (limited, _) = common::paged(&mut h, "SELECT k, c FROM t LIMIT 250", 100);
    assert_eq!(limited.len(), 250);
    let (ppl, _) = common::paged(&mut h, "SELECT k, c FROM t PER PARTITION LIMIT 1", 7);
    assert_eq!(ppl.len(), 299);
    let mut params = QueryParameters::new(Consistency::One);
    params.page_size = Some(10);
    params.paging_state = Some(Bytes::from_static(b"garbage!garbage!"));
    let e = h.query_with("SELECT * FROM t", params).unwrap_err();
    assert_eq!(code(&e), error_code::PROTOCOL);
}

#[test]
fn deletes_of_every_granularity() {
    let mut h = Harness::with_keyspace();
    h.ok("CREATE TABLE t (k int, c int, s int STATIC, v int, w int, PRIMARY KEY (k, c))");
    for c in 0..6 {
        h.ok(&format!(
            "INSERT INTO t (k, c, s, v, w) VALUES (1, {c}, 7, {c}, {c})"
        ));
    }
    h.ok("DELETE w FROM t WHERE k = 1 AND c = 0");
    assert_eq!(
        h.rows("SELECT v, w FROM t WHERE k = 1 AND c = 0"),
        vec![vec![int(0), None]]
    );
    h.ok("DELETE FROM t WHERE k = 1 AND c = 1");
    h.ok("DELETE FROM t WHERE k = 1 AND c >= 3 AND c < 5");
    let cs: Vec<_> = h.rows("SELECT c, s FROM t WHERE k = 1");
    assert_eq!(
        cs,
        vec![
            vec![int(0), int(7)],
            vec![int(2), int(7)],
            vec![int(5), int(7)]
        ]
    );
    h.ok("DELETE FROM t WHERE k = 1");
    assert!(h.rows("SELECT * FROM t WHERE k = 1").is_empty());
    // Newer writes survive an older deletion.
    h.ok("INSERT INTO t (k, c, v) VALUES (1, 9, 9)");
    assert_eq!(h.rows("SELECT c FROM t WHERE k = 1"), vec![vec![int(9)]]);
    // Static only partition.
    h.ok("INSERT INTO t (k, s) VALUES (2, 5)");
    assert_eq!(
        h.rows("SELECT k, c, s FROM t WHERE k = 2"),
        vec![vec![int(2), None, int(5)]]
    );
}

#[test]
fn update_and_insert_differ_in_row_liveness_and_timestamps_decide() {
    let mut h = Harness::with_keyspace();
    h.ok("CREATE TABLE t (k int PRIMARY KEY, v int)");
    h.ok("INSERT INTO t (k, v) VALUES (1, 1)");
    h.ok("UPDATE t SET v = 2 WHERE k = 2");
    h.ok("UPDATE t SET v = null WHERE k = 1");
    h.ok("UPDATE t SET v = null WHERE k = 2");
    assert_eq!(h.rows("SELECT k, v FROM t"), vec![vec![int(1), None]]);
    h.ok("INSERT INTO t (k, v) VALUES (3, 30) USING TIMESTAMP 1000");
    h.ok("INSERT INTO t (k, v) VALUES (3, 20) USING TIMESTAMP 999");
    assert_eq!(
        h.rows("SELECT v, writetime(v) FROM t WHERE k = 3"),
        vec![vec![int(30), Some(CqlValue::BigInt(1000))]]
    );
    h.ok("DELETE FROM t USING TIMESTAMP 998 WHERE k = 3");
    assert_eq!(h.rows("SELECT v FROM t WHERE k = 3"), vec![vec![int(30)]]);
    let e = h.err("UPDATE t SET k = 1 WHERE k = 1");
    assert!(e.message.contains("PRIMARY KEY part k found in SET part"));
    let e = h.err("INSERT INTO t (v) VALUES (1)");
    assert!(e
        .message
        .contains("Some partition key parts are missing: k"));
}

#[test]
fn ttl_expires_and_is_reported() {
    let mut h = Harness::with_keyspace();
    h.ok("CREATE TABLE t (k int PRIMARY KEY, v int)");
    h.ok("INSERT INTO t (k, v) VALUES (1, 1) USING TTL 100");
    assert_eq!(
        h.rows("SELECT ttl(v) FROM t WHERE k = 1"),
        vec![vec![int(100)]]
    );
    h.coordinator.now_secs.fetch_add(60, Ordering::SeqCst);
    assert_eq!(
        h.rows("SELECT ttl(v) FROM t WHERE k = 1"),
        vec![vec![int(40)]]
    );
    h.coordinator.now_secs.fetch_add(40, Ordering::SeqCst);
    assert!(h.rows("SELECT * FROM t WHERE k = 1").is_empty());
    let e = h.err("INSERT INTO t (k, v) VALUES (1, 1) USING TTL -1");
    assert_eq!(code(&e), error_code::INVALID);
    h.ok("CREATE TABLE d (k int PRIMARY KEY, v int) WITH default_time_to_live = 10");
    h.ok("INSERT INTO d (k, v) VALUES (1, 1)");
    assert_eq!(h.rows("SELECT ttl(v) FROM d"), vec![vec![int(10)]]);
}

#[test]
fn prepared_statements_batches_and_unprepared() {
    let mut h = Harness::with_keyspace();
    h.ok("CREATE TABLE t (a int, b text, c int, v blob, PRIMARY KEY ((a, b), c))");
    let Response::Result(ResultBody::Prepared(p)) = h.request(Request::Prepare(Prepare {
        query: "INSERT INTO t (c, b, a, v) VALUES (?, ?, ?, ?) USING TTL ?".into(),
        keyspace: None,
    })) else {
        panic!("prepared")
    };
    assert_eq!(p.metadata.pk_indexes, vec![2, 1]);
    let names: Vec<_> = p.metadata.columns.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["c", "b", "a", "v", "[ttl]"]);
    let mut params = QueryParameters::new(Consistency::One);
    params.values = values(&[
        CqlValue::Int(3),
        CqlValue::Text("x".into()),
        CqlValue::Int(1),
        CqlValue::Blob(vec![1, 2]),
        CqlValue::Int(0),
    ]);
    let r = h.request(Request::Execute(Execute {
        id: p.id.clone(),
        params,
        result_metadata_id: None,
    }));
    assert!(matches!(r, Response::Result(ResultBody::Void)), "{r:?}");
    let Response::Result(ResultBody::Prepared(sel)) = h.request(Request::Prepare(Prepare {
        query: "SELECT v FROM t WHERE a = :a AND b = :b AND c IN ?".into(),
        keyspace: None,
    })) else {
        panic!("prepared")
    };
    assert_eq!(sel.metadata.pk_indexes, vec![0, 1]);
    assert_eq!(sel.result_metadata.columns.len(), 1);
    let batch = Request::Batch(mosaic_cql::frame::Batch {
        batch_type: BatchType::Logged,
        statements: vec![
            BatchStatement {
                query: BatchQuery::Prepared(p.id.clone()),
                values: values(&[
                    CqlValue::Int(4),
                    CqlValue::Text("x".into()),
                    CqlValue::Int(1),
                    CqlValue::Blob(vec![4]),
                    CqlValue::Int(0),
                ]),
            },
            BatchStatement {
                query: BatchQuery::Query(
                    "INSERT INTO t (a, b, c, v) VALUES (1, 'x', 5, 0x05)".into(),
                ),
                values: BoundValues::default(),
            },
        ],
        consistency: Consistency::Quorum,
        serial_consistency: None,
        timestamp: None,
        keyspace: None,
        now_in_seconds: None,
    });
    assert!(matches!(
        h.request(batch),
        Response::Result(ResultBody::Void)
    ));
    assert_eq!(h.rows("SELECT c FROM t WHERE a = 1 AND b = 'x'").len(), 3);
    h.ok("BEGIN UNLOGGED BATCH INSERT INTO t (a, b, c) VALUES (2, 'y', 1); DELETE FROM t WHERE a = 1 AND b = 'x' AND c = 3; APPLY BATCH");
    assert_eq!(h.rows("SELECT c FROM t WHERE a = 1 AND b = 'x'").len(), 2);
    let r = h.request(Request::Execute(Execute {
        id: Bytes::from_static(&[9; 16]),
        params: QueryParameters::new(Consistency::One),
        result_metadata_id: None,
    }));
    let Response::Error(e) = r else {
        panic!("{r:?}")
    };
    assert!(matches!(e.kind, ErrorKind::Unprepared { .. }));
    let mut params = QueryParameters::new(Consistency::One);
    params.values = values(&[CqlValue::Int(1)]);
    let e = h
        .query_with("SELECT * FROM t WHERE a = ? AND b = ?", params)
        .unwrap_err();
    assert!(e.message.contains("bound variables"), "{}", e.message);
}

#[test]
fn every_type_round_trips_through_literals() {
    let mut h = Harness::with_keyspace();
    h.ok("CREATE TABLE t (k text PRIMARY KEY, a ascii, b blob, bo boolean, i int, bi bigint, si smallint, ti tinyint, f float, d double, ts timestamp, dt date, u uuid, tu timeuuid, vi varint, de decimal)");
    h.ok("INSERT INTO t (k, a, b, bo, i, bi, si, ti, f, d, ts, dt, u, tu, vi, de) VALUES ('ключ', 'abc', 0xcafe, true, -2147483648, 9223372036854775807, -32768, 127, NaN, -Infinity, '2011-02-03T04:05:00.123+0000', '1900-01-01', 6ba7b810-9dad-11d1-80b4-00c04fd430c8, 6ba7b810-9dad-11d1-80b4-00c04fd430c8, 123456789012345678901234567890, -1.5e-10)");
    let rows = h.rows("SELECT k, a, b, bo, i, bi, si, ti, ts, vi FROM t");
    assert_eq!(rows[0][0], text("ключ"));
    assert_eq!(rows[0][2], Some(CqlValue::Blob(vec![0xca, 0xfe])));
    assert_eq!(rows[0][4], int(i32::MIN));
    assert_eq!(rows[0][5], Some(CqlValue::BigInt(i64::MAX)));
    assert_eq!(rows[0][8], Some(CqlValue::Timestamp(1_296_705_900_123)));
    assert_eq!(
        rows[0][9],
        Some(CqlValue::Varint(
            "123456789012345678901234567890".parse().unwrap()
        ))
    );
    let e = h.err("INSERT INTO t (k, ti) VALUES ('x', 128)");
    assert_eq!(code(&e), error_code::INVALID);
    let e = h.err("INSERT INTO t (k, i) VALUES ('x', 'text')");
    assert_eq!(code(&e), error_code::INVALID);
    let e = h.err("INSERT INTO t (k) VALUES ('')");
    assert!(e.message.contains("Key may not be empty"));
    assert!(h.coordinator.reads.load(Ordering::SeqCst) > 0);
}

/// `IN` on a regular column filters, as Cassandra 4 allows with ALLOW FILTERING.
#[test]
fn in_on_a_regular_column_filters() {
    let mut h = Harness::with_keyspace();
    h.ok("CREATE TABLE t (k int PRIMARY KEY, v int)");
    for k in 0..6 {
        h.ok(&format!("INSERT INTO t (k, v) VALUES ({k}, {})", k % 3));
    }
    let mut rows = h.rows("SELECT k FROM t WHERE v IN (0, 2) ALLOW FILTERING");
    rows.sort_by_key(|r| format!("{r:?}"));
    assert_eq!(
        rows,
        vec![vec![int(0)], vec![int(2)], vec![int(3)], vec![int(5)]]
    );
    let e = h.err("SELECT k FROM t WHERE v IN (0, 2)");
    assert!(e.message.contains("ALLOW FILTERING"), "{}", e.message);
}

/// Materialized views stay refused, and the error says why.
#[test]
fn materialized_views_are_refused_with_the_reason() {
    let mut h = Harness::with_keyspace();
    h.ok("CREATE TABLE t (k int PRIMARY KEY, v int)");
    let e = h.err(
        "CREATE MATERIALIZED VIEW mv AS SELECT * FROM t WHERE v IS NOT NULL AND k IS NOT NULL PRIMARY KEY (v, k)",
    );
    assert!(e.message.contains("experimental"), "{}", e.message);
}
