//! Workload files for the heterogeneous-replicas optimizer ([`mosaic_cql::workload`]):
//! weighted SELECTs of one table become the filters of their clustering restrictions —
//! the very filters their reads send replicas — and their LIMITs; every malformed line
//! is refused with its number.

mod common;

use common::Harness;
use mosaic_cql::coordinator::Coordinator;
use mosaic_cql::workload::{parse_workload, WorkloadError};
use mosaic_rows::{ClusteringFilter, ColumnFilter};
use mosaic_types::CqlValue;

fn harness() -> Harness {
    let mut h = Harness::with_keyspace();
    h.ok(
        "CREATE TABLE t (k int, a int, b text, c bigint, v int, PRIMARY KEY (k, a, b, c)) \
          WITH CLUSTERING ORDER BY (a DESC, b ASC, c ASC) \
          AND layout = {'class': 'heterogeneous', 'replica_orders': '(b, c, a)'}",
    );
    h.ok("CREATE TABLE u (k int, a int, PRIMARY KEY (k, a))");
    h.ok("CREATE KEYSPACE other WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}");
    h.ok("CREATE TABLE other.t (k int, a int, PRIMARY KEY (k, a))");
    h
}

#[test]
fn weighted_selects_become_filters_and_limits() {
    let h = harness();
    let catalog = h.coordinator.catalog();
    let table = catalog.table("ks", "t").unwrap().clone();
    let schema = table.key_schema();
    let text = "\
# the queries of the day
-- (either comment style)

10 SELECT * FROM ks.t WHERE k = 1 AND b = 'x' ALLOW FILTERING;
2.5 SELECT v FROM t WHERE k = 2 AND c > 3 AND c <= 9 LIMIT 20 ALLOW FILTERING
   SELECT * FROM t WHERE k IN (1, 2) AND a IN (3, 1, 3);
0.5\tselect count(*) from ks.t where k = 3 and (a, b) > (1, 'q') and c = 7 allow filtering
SELECT * FROM t WHERE k = 4
";
    let w = parse_workload(&catalog, Some("ks"), text).expect("workload");
    assert_eq!(w.table, table.id);
    assert_eq!((w.keyspace.as_str(), w.table_name.as_str()), ("ks", "t"));
    let lines: Vec<usize> = w.queries.iter().map(|q| q.line).collect();
    assert_eq!(lines, [4, 5, 6, 7, 8]);
    let weights: Vec<f64> = w.queries.iter().map(|q| q.weight).collect();
    assert_eq!(weights, [10.0, 2.5, 1.0, 0.5, 1.0]);
    let limits: Vec<Option<u64>> = w.queries.iter().map(|q| q.limit).collect();
    assert_eq!(limits, [None, Some(20), None, None, None]);

    let any = ColumnFilter::Any;
    let filter = |a: ColumnFilter, b: ColumnFilter, c: ColumnFilter| ClusteringFilter {
        columns: vec![a, b, c],
    };
    let b_is_x = schema
        .column_values_filter(1, &[CqlValue::Text("x".into())])
        .unwrap();
    let c_range = schema
        .column_range_filter(
            2,
            Some((&CqlValue::BigInt(3), false)),
            Some((&CqlValue::BigInt(9), true)),
        )
        .unwrap();
    let a_in = schema
        .column_values_filter(0, &[CqlValue::Int(1), CqlValue::Int(3)])
        .unwrap();
    let c_is_7 = schema
        .column_values_filter(2, &[CqlValue::BigInt(7)])
        .unwrap();
    let filters: Vec<ClusteringFilter> = w.queries.iter().map(|q| q.filter.clone()).collect();
    assert_eq!(
        filters,
        [
            filter(any.clone(), b_is_x, any.clone()),
            filter(any.clone(), any.clone(), c_range),
            filter(a_in, any.clone(), any.clone()),
            // The multi-column relation is not in the filter.
            filter(any.clone(), any.clone(), c_is_7),
            filter(any.clone(), any.clone(), any),
        ]
    );
}

#[test]
fn a_workload_filter_is_the_one_the_query_sends_replicas() {
    let mut h = harness();
    let query = "SELECT * FROM ks.t WHERE k = 1 AND a < 5 AND c IN (4, 2) ALLOW FILTERING";
    let w = parse_workload(&h.coordinator.catalog(), None, query).expect("workload");
    *h.coordinator.commands.lock() = Some(Vec::new());
    h.ok(query);
    let reads = h.coordinator.commands.lock().take().unwrap();
    let sent: Vec<ClusteringFilter> = reads.into_iter().filter_map(|r| r.filter).collect();
    assert!(!sent.is_empty());
    assert!(sent.iter().all(|f| *f == w.queries[0].filter), "{sent:?}");
}

#[test]
fn malformed_lines_are_refused_with_their_number() {
    let h = harness();
    let catalog = h.coordinator.catalog();
    let ok = "SELECT * FROM ks.t WHERE k = 1";
    for (text, line, says) in [
        (
            format!("{ok}\n\nSELECT * FROM ks.t WHERE k = ?"),
            3,
            "bind markers",
        ),
        (
            format!("{ok}\nSELECT * FROM ks.t WHERE k = :key"),
            2,
            "bind markers",
        ),
        (
            format!("{ok}\nSELECT * FROM ks.t WHERE k = 1 LIMIT ?"),
            2,
            "bind markers",
        ),
        (
            format!("# c\n{ok}\nSELECT * FROM ks.u WHERE k = 1"),
            3,
            "reads ks.u, but line 2 reads ks.t",
        ),
        (
            format!("{ok}\nSELECT * FROM other.t WHERE k = 1"),
            2,
            "reads other.t",
        ),
        (
            format!("{ok}\nINSERT INTO ks.t (k, a, b, c) VALUES (1, 1, 'a', 1)"),
            2,
            "expected a SELECT",
        ),
        (format!("0 {ok}"), 1, "invalid weight '0'"),
        (format!("-2 {ok}"), 1, "invalid weight '-2'"),
        (format!("3x {ok}"), 1, "invalid weight '3x'"),
        (format!("{ok}\nSELEKT * FROM ks.t"), 2, "line 1:0"),
        (
            format!("{ok}\nSELECT * FROM ks.nope WHERE k = 1"),
            2,
            "unconfigured table nope",
        ),
        (
            "SELECT * FROM t WHERE k = 1".to_owned(),
            1,
            "No keyspace has been specified",
        ),
        ("SELECT * FROM system.local".to_owned(), 1, "system table"),
        (
            "SELECT * FROM ks.t WHERE k = 1 AND b = 'x'".to_owned(),
            1,
            "cannot be restricted",
        ),
        (
            "SELECT * FROM ks.t WHERE b = 'x'".to_owned(),
            1,
            "ALLOW FILTERING",
        ),
        (
            "SELECT * FROM ks.t WHERE k = 1 AND a = 'x'".to_owned(),
            1,
            "for \"a\" of type int",
        ),
        (
            "SELECT * FROM ks.t WHERE k = 1 LIMIT 0".to_owned(),
            1,
            "LIMIT must be strictly positive",
        ),
    ] {
        match parse_workload(&catalog, None, &text) {
            Err(WorkloadError::Line { line: l, message }) => {
                assert_eq!(l, line, "{text}: {message}");
                assert!(message.contains(says), "{text}: {message}");
                let shown = WorkloadError::Line { line: l, message }.to_string();
                assert!(shown.starts_with(&format!("line {line}: ")), "{shown}");
            }
            other => panic!("{text}: {other:?}"),
        }
    }
    for empty in ["", "\n# nothing\n-- at all\n   \n"] {
        assert_eq!(
            parse_workload(&catalog, Some("ks"), empty),
            Err(WorkloadError::Empty)
        );
    }
}
