//! SELECTs whose clustering restrictions replicas apply ([`ReadCommand::filter`]), through
//! the processor over the in-memory coordinator (which honours the filter as a replica
//! does): filtering on clustering columns that do not form a key prefix returns the rows
//! of a full read filtered by the WHERE clause, in the same order, with LIMIT and paging,
//! on a uniform table and on a heterogeneous one; and reads carry the filter they should.

mod common;

use std::ops::Bound;
use std::sync::atomic::Ordering;

use common::Harness;
use mosaic_cql::coordinator::{Coordinator, ReadCommand};
use mosaic_rows::{ClusteringFilter, ColumnFilter};
use mosaic_types::CqlValue;

type Row = Vec<Option<CqlValue>>;

const LAYOUTS: [&str; 2] = [
    "'uniform'",
    "{'class': 'heterogeneous', 'replica_orders': '(b, c, a), (c, b, a)'}",
];

/// Table `t` (k, a, b DESC, c) in `layout`: 3 partitions of 4 × 4 × 3 rows, one row range
/// deleted, a static column, and a partition with only its static row.
fn filled(layout: &str) -> Harness {
    let mut h = Harness::with_keyspace();
    h.ok(&format!(
        "CREATE TABLE t (k int, a int, b int, c int, s int STATIC, v int, \
         PRIMARY KEY (k, a, b, c)) WITH CLUSTERING ORDER BY (a ASC, b DESC, c ASC) \
         AND layout = {layout}"
    ));
    for k in 0..3 {
        h.ok(&format!("INSERT INTO t (k, s) VALUES ({k}, {k})"));
        for a in 0..4 {
            for b in 0..4 {
                for c in 0..3 {
                    let v = k * 100 + a * 16 + b * 4 + c;
                    h.ok(&format!(
                        "INSERT INTO t (k, a, b, c, v) VALUES ({k}, {a}, {b}, {c}, {v})"
                    ));
                }
            }
        }
    }
    // A range tombstone and a deleted row: replicas must still send them with a filter.
    h.ok("DELETE FROM t WHERE k = 1 AND a = 2");
    h.ok("DELETE FROM t WHERE k = 2 AND a = 1 AND b = 3 AND c = 2");
    h.ok("INSERT INTO t (k, s) VALUES (9, 9)");
    h
}

fn int(row: &Row, i: usize) -> i32 {
    match row[i] {
        Some(CqlValue::Int(n)) => n,
        ref other => panic!("column {i}: {other:?}"),
    }
}

/// Every row of `t` as `(k, a, b, c, v)`, in the order a full scan returns them.
fn all_rows(h: &mut Harness) -> Vec<Row> {
    h.rows("SELECT k, a, b, c, v FROM t")
        .into_iter()
        .filter(|r| r[1].is_some())
        .collect()
}

/// The reads `cql` makes.
fn reads_of(h: &mut Harness, cql: &str) -> Vec<ReadCommand> {
    *h.coordinator.commands.lock() = Some(Vec::new());
    h.ok(cql);
    h.coordinator.commands.lock().take().expect("recording")
}

#[test]
fn filtering_on_non_prefix_clustering_columns_returns_the_right_rows_in_order() {
    for layout in LAYOUTS {
        let mut h = filled(layout);
        let all = all_rows(&mut h);
        assert_eq!(all.len(), 3 * 48 - 12 - 1, "{layout}");
        type Case = (&'static str, fn(&Row) -> bool);
        let cases: [Case; 6] = [
            ("k = 1 AND b = 3", |r| int(r, 0) == 1 && int(r, 2) == 3),
            ("k = 2 AND c = 2", |r| int(r, 0) == 2 && int(r, 3) == 2),
            ("k IN (0, 2) AND b > 1 AND c < 2", |r| {
                int(r, 0) != 1 && int(r, 2) > 1 && int(r, 3) < 2
            }),
            ("b IN (0, 3) AND c >= 1", |r| {
                matches!(int(r, 2), 0 | 3) && int(r, 3) >= 1
            }),
            ("a = 1 AND c = 0", |r| int(r, 1) == 1 && int(r, 3) == 0),
            ("b <= 1 AND v > 150", |r| int(r, 2) <= 1 && int(r, 4) > 150),
        ];
        for (relations, keep) in cases {
            let expected: Vec<Row> = all.iter().filter(|r| keep(r)).cloned().collect();
            assert!(!expected.is_empty(), "{relations}");
            let select = format!("SELECT k, a, b, c, v FROM t WHERE {relations}");
            let cql = format!("{select} ALLOW FILTERING");
            assert_eq!(h.rows(&cql), expected, "{layout}: {cql}");
            for limit in [1, 5, expected.len(), expected.len() + 3] {
                let limited = format!("{select} LIMIT {limit} ALLOW FILTERING");
                let want: Vec<Row> = expected.iter().take(limit).cloned().collect();
                assert_eq!(h.rows(&limited), want, "{layout}: {limited}");
                for page in [1, 2, 7] {
                    let (rows, pages) = common::paged(&mut h, &limited, page);
                    assert_eq!(rows, want, "{layout}: {limited}, pages of {page}");
                    assert!(
                        pages <= want.len() / page as usize + 1,
                        "{limited}: {pages} pages"
                    );
                }
            }
            for page in [1, 3, 10] {
                let (rows, _) = common::paged(&mut h, &cql, page);
                assert_eq!(rows, expected, "{layout}: {cql}, pages of {page}");
            }
            let count = h.rows(&format!(
                "SELECT count(*) FROM t WHERE {relations} ALLOW FILTERING"
            ));
            assert_eq!(
                count,
                vec![vec![Some(CqlValue::BigInt(expected.len() as i64))]],
                "{layout}: {relations}"
            );
        }
        // Reversed: the same rows, last first.
        let reversed = h.rows(
            "SELECT k, a, b, c, v FROM t WHERE k = 0 AND c = 1 ORDER BY a DESC ALLOW FILTERING",
        );
        let mut want: Vec<Row> = all
            .iter()
            .filter(|r| int(r, 0) == 0 && int(r, 3) == 1)
            .cloned()
            .collect();
        want.reverse();
        assert_eq!(reversed, want, "{layout}");
    }
}

#[test]
fn uniform_and_heterogeneous_tables_answer_alike() {
    let [uniform, heterogeneous] = LAYOUTS.map(filled);
    let (mut u, mut het) = (uniform, heterogeneous);
    for cql in [
        "SELECT * FROM t WHERE k = 1 AND a = 3",
        "SELECT * FROM t WHERE k = 1 AND a = 3 AND b > 1",
        "SELECT * FROM t WHERE k = 1 AND a IN (0, 3) AND b = 2 AND c IN (0, 2)",
        "SELECT * FROM t WHERE k = 1 AND (a, b) > (2, 1) AND c = 1 ALLOW FILTERING",
        "SELECT * FROM t WHERE b = 2 ALLOW FILTERING",
        "SELECT * FROM t WHERE k = 9",
        "SELECT * FROM t",
        "SELECT * FROM t WHERE k = 0 AND a > 1 AND a < 3 AND c = 0 ALLOW FILTERING",
    ] {
        assert_eq!(u.rows(cql), het.rows(cql), "{cql}");
    }
}

#[test]
fn reads_carry_the_filter_of_the_single_column_clustering_restrictions() {
    for layout in LAYOUTS {
        let heterogeneous = layout.contains("heterogeneous");
        let mut h = filled(layout);
        let table = h.coordinator.catalog().table("ks", "t").unwrap().clone();
        let schema = table.key_schema();
        let b_is_3 = schema.column_values_filter(1, &[CqlValue::Int(3)]).unwrap();
        let c_above_0 = schema
            .column_range_filter(2, Some((&CqlValue::Int(0), false)), None)
            .unwrap();
        let filtered = |reads: &[ReadCommand]| -> Vec<Option<ClusteringFilter>> {
            let mut f: Vec<_> = reads.iter().map(|r| r.filter.clone()).collect();
            f.dedup();
            f
        };

        // Not a key prefix (ALLOW FILTERING): every layout sends the filter.
        let reads = reads_of(
            &mut h,
            "SELECT * FROM t WHERE k = 1 AND b = 3 AND c > 0 ALLOW FILTERING",
        );
        let want = ClusteringFilter {
            columns: vec![ColumnFilter::Any, b_is_3.clone(), c_above_0.clone()],
        };
        assert_eq!(filtered(&reads), [Some(want.clone())], "{layout}");
        assert!(reads.iter().all(|r| r.table == table.id));

        // A range scan reads whole partitions: the filter goes along.
        let reads = reads_of(
            &mut h,
            "SELECT * FROM t WHERE b = 3 AND c > 0 ALLOW FILTERING",
        );
        assert_eq!(filtered(&reads), [Some(want)], "{layout}");

        // A descending column's logical range is a key-order range the other way round.
        let reads = reads_of(
            &mut h,
            "SELECT * FROM t WHERE k = 1 AND b > 2 ALLOW FILTERING",
        );
        let b_above_2 = ClusteringFilter {
            columns: vec![
                ColumnFilter::Any,
                schema
                    .column_range_filter(1, Some((&CqlValue::Int(2), false)), None)
                    .unwrap(),
                ColumnFilter::Any,
            ],
        };
        assert!(matches!(
            &b_above_2.columns[1],
            ColumnFilter::Range {
                lo: Bound::Unbounded,
                hi: Bound::Excluded(_)
            }
        ));
        assert_eq!(filtered(&reads), [Some(b_above_2)], "{layout}");

        // A key prefix: the key ranges already select the rows of a uniform table; a
        // heterogeneous one sends the filter, which replicas in other orders plan by.
        let reads = reads_of(&mut h, "SELECT * FROM t WHERE k = 1 AND a = 2 AND b = 3");
        let rows: Vec<_> = reads
            .iter()
            .filter_map(|r| r.filter.clone())
            .collect::<Vec<_>>();
        if heterogeneous {
            let prefix = ClusteringFilter {
                columns: vec![
                    schema.column_values_filter(0, &[CqlValue::Int(2)]).unwrap(),
                    b_is_3.clone(),
                    ColumnFilter::Any,
                ],
            };
            assert!(!rows.is_empty());
            assert!(rows.iter().all(|f| *f == prefix), "{rows:?}");
        } else {
            assert!(rows.is_empty(), "{rows:?}");
        }

        // No clustering restriction, or only a multi-column one: no filter.
        for cql in [
            "SELECT * FROM t WHERE k = 1",
            "SELECT * FROM t",
            "SELECT * FROM t WHERE k = 1 AND (a, b) = (1, 2)",
            "SELECT * FROM t WHERE v = 3 ALLOW FILTERING",
        ] {
            let reads = reads_of(&mut h, cql);
            assert!(reads.iter().all(|r| r.filter.is_none()), "{layout}: {cql}");
        }
    }
}

#[test]
fn replicas_send_only_the_rows_a_filtered_limit_needs() {
    for layout in LAYOUTS {
        let mut h = filled(layout);
        let entries = |h: &Harness| h.coordinator.entries_read.load(Ordering::SeqCst);
        let before = entries(&h);
        let rows = h.rows("SELECT k, a, b, c FROM t WHERE b = 3 AND c = 2 LIMIT 2 ALLOW FILTERING");
        let sent = entries(&h) - before;
        assert_eq!(rows.len(), 2);
        // Two rows, plus the partition's head and static row, and the one that says the
        // range goes on: not the 1,000-entry chunk a coordinator-side filter needs.
        assert!(
            sent <= 8,
            "{layout}: a filtered LIMIT 2 read {sent} entries"
        );
        // A predicate on a regular column still filters at the coordinator.
        let before = entries(&h);
        let rows = h.rows("SELECT k FROM t WHERE b = 3 AND v > 0 LIMIT 2 ALLOW FILTERING");
        assert_eq!(rows.len(), 2);
        assert!(entries(&h) - before > 8, "{layout}");
    }
}
