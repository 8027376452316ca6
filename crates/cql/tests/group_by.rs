//! Scenario: `GROUP BY` on primary-key prefixes, with and without aggregates, as
//! Cassandra groups and refuses.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

mod common;

use common::{int, Harness};
use mosaic_types::CqlValue;

fn bigint(n: i64) -> Option<CqlValue> {
    Some(CqlValue::BigInt(n))
}

#[test]
fn rows_group_by_partition_and_clustering_prefixes() {
    let mut h = Harness::with_keyspace();
    h.ok("CREATE TABLE t (p int, c1 int, c2 int, v int, PRIMARY KEY (p, c1, c2))");
    for (p, c1, c2, v) in [
        (1, 1, 1, 10),
        (1, 1, 2, 20),
        (1, 2, 1, 30),
        (2, 1, 1, 40),
        (2, 1, 2, 50),
    ] {
        h.ok(&format!(
            "INSERT INTO t (p, c1, c2, v) VALUES ({p}, {c1}, {c2}, {v})"
        ));
    }
    let mut by_partition = h.rows("SELECT p, count(*), sum(v) FROM t GROUP BY p");
    by_partition.sort_by_key(|r| format!("{:?}", r[0]));
    assert_eq!(
        by_partition,
        vec![
            vec![int(1), bigint(3), int(60)],
            vec![int(2), bigint(2), int(90)]
        ]
    );
    let rows = h.rows("SELECT p, c1, max(v) FROM t WHERE p = 1 GROUP BY p, c1");
    assert_eq!(
        rows,
        vec![vec![int(1), int(1), int(20)], vec![int(1), int(2), int(30)]]
    );
    // Without aggregates: the first row of each group.
    let rows = h.rows("SELECT p, c1, c2, v FROM t WHERE p = 1 GROUP BY p, c1");
    assert_eq!(
        rows,
        vec![
            vec![int(1), int(1), int(1), int(10)],
            vec![int(1), int(2), int(1), int(30)]
        ]
    );
    // LIMIT counts groups.
    let rows = h.rows("SELECT p, c1, count(*) FROM t WHERE p = 1 GROUP BY p, c1 LIMIT 1");
    assert_eq!(rows, vec![vec![int(1), int(1), bigint(2)]]);
    for (cql, message) in [
        (
            "SELECT count(*) FROM t GROUP BY c1",
            "Group by currently only support groups of columns following their declared order in the PRIMARY KEY",
        ),
        (
            "SELECT count(*) FROM t GROUP BY p, c2",
            "Group by currently only support groups of columns following their declared order in the PRIMARY KEY",
        ),
        (
            "SELECT count(*) FROM t GROUP BY p, v",
            "Group by is currently only supported on the columns of the PRIMARY KEY, got v",
        ),
    ] {
        let e = h.err(cql);
        assert_eq!(e.message, message, "{cql}");
    }
}

/// A GROUP BY's pages count groups, end at group boundaries, and its LIMIT holds across
/// them.
#[test]
fn group_by_pages_by_groups() {
    let mut h = Harness::with_keyspace();
    h.ok("CREATE TABLE t (p int, c int, v int, PRIMARY KEY (p, c))");
    for p in 0..7 {
        for c in 0..(p % 3 + 1) {
            h.ok(&format!(
                "INSERT INTO t (p, c, v) VALUES ({p}, {c}, {})",
                p * 10 + c
            ));
        }
    }
    let whole = h.rows("SELECT p, count(*), sum(v) FROM t GROUP BY p");
    assert_eq!(whole.len(), 7);
    for page in [1, 2, 3, 100] {
        let (rows, pages) =
            common::paged(&mut h, "SELECT p, count(*), sum(v) FROM t GROUP BY p", page);
        assert_eq!(rows, whole, "page size {page}");
        assert_eq!(
            pages,
            7usize.div_ceil(page as usize).max(1),
            "page size {page}"
        );
    }
    let limited = h.rows("SELECT p, count(*) FROM t GROUP BY p LIMIT 5");
    assert_eq!(limited.len(), 5);
    let (rows, _) = common::paged(&mut h, "SELECT p, count(*) FROM t GROUP BY p LIMIT 5", 2);
    assert_eq!(rows, limited);
    // Grouping by a clustering prefix within one partition pages the same way.
    let (rows, pages) = common::paged(&mut h, "SELECT p, c, v FROM t WHERE p = 2 GROUP BY p, c", 1);
    assert_eq!(rows.len(), 3);
    assert_eq!(pages, 3);
}

/// With GROUP BY, PER PARTITION LIMIT counts groups, and a group keeps all its rows, across
/// pages of any size. Answers read from Cassandra 4.1.10 (`a` 1 to 3 in token order).
#[test]
fn per_partition_limit_counts_groups_across_pages() {
    let mut h = Harness::with_keyspace();
    h.ok("CREATE TABLE g (a int, b int, c int, v int, PRIMARY KEY (a, b, c))");
    for a in 1..4 {
        for b in 0..4 {
            for c in 0..3 {
                let v = a * 100 + b * 10 + c;
                h.ok(&format!(
                    "INSERT INTO g (a, b, c, v) VALUES ({a}, {b}, {c}, {v})"
                ));
            }
        }
    }
    let row = |values: &[i64]| -> Vec<Option<CqlValue>> {
        let (last, key) = values.split_last().unwrap();
        let mut out: Vec<Option<CqlValue>> = key.iter().map(|&x| int(x as i32)).collect();
        out.push(bigint(*last));
        out
    };
    let sum_row = |a: i32, b: i32, sum: i32| vec![int(a), int(b), int(sum)];
    let cases: Vec<(&str, Vec<Vec<Option<CqlValue>>>)> = vec![
        (
            "SELECT a, b, count(*) FROM g GROUP BY a, b PER PARTITION LIMIT 2",
            [
                [1, 0, 3],
                [1, 1, 3],
                [2, 0, 3],
                [2, 1, 3],
                [3, 0, 3],
                [3, 1, 3],
            ]
            .iter()
            .map(|r| row(r))
            .collect(),
        ),
        (
            "SELECT a, b, count(*) FROM g GROUP BY a, b PER PARTITION LIMIT 2 LIMIT 3",
            [[1, 0, 3], [1, 1, 3], [2, 0, 3]]
                .iter()
                .map(|r| row(r))
                .collect(),
        ),
        (
            "SELECT a, b, c, count(*) FROM g GROUP BY a, b, c PER PARTITION LIMIT 4",
            (1..4)
                .flat_map(|a| [[a, 0, 0, 1], [a, 0, 1, 1], [a, 0, 2, 1], [a, 1, 0, 1]])
                .map(|r| row(&r))
                .collect(),
        ),
        (
            "SELECT a, count(*) FROM g GROUP BY a PER PARTITION LIMIT 1",
            (1..4).map(|a| row(&[a, 12])).collect(),
        ),
        (
            "SELECT a, b, sum(v) FROM g WHERE a = 2 GROUP BY a, b PER PARTITION LIMIT 3",
            vec![sum_row(2, 0, 603), sum_row(2, 1, 633), sum_row(2, 2, 663)],
        ),
        (
            "SELECT a, b, sum(v) FROM g WHERE a IN (1, 3) GROUP BY a, b PER PARTITION LIMIT 1",
            vec![sum_row(1, 0, 303), sum_row(3, 0, 903)],
        ),
        (
            "SELECT a, b, v FROM g GROUP BY a, b PER PARTITION LIMIT 2",
            (1..4)
                .flat_map(|a| [sum_row(a, 0, a * 100), sum_row(a, 1, a * 100 + 10)])
                .collect(),
        ),
    ];
    for (cql, want) in cases {
        assert_eq!(h.rows(cql), want, "{cql}");
        for page in [1, 2, 3, 5] {
            let (rows, _) = common::paged(&mut h, cql, page);
            assert_eq!(rows, want, "{cql}, pages of {page}");
        }
    }
}

/// GROUP BY may skip primary key columns restricted by `=`, and must cover the whole
/// partition key. Answers and texts read from Cassandra 4.1.10.
#[test]
fn group_by_skips_key_columns_restricted_by_equality() {
    let mut h = Harness::with_keyspace();
    h.ok("CREATE TABLE t (a int, b int, c int, d int, e int, PRIMARY KEY ((a, b), c, d))");
    for a in 0..2 {
        for b in 0..2 {
            for c in 0..3 {
                for d in 0..2 {
                    let e = a * 1000 + b * 100 + c * 10 + d;
                    h.ok(&format!(
                        "INSERT INTO t (a, b, c, d, e) VALUES ({a}, {b}, {c}, {d}, {e})"
                    ));
                }
            }
        }
    }
    let ints = |values: &[i32], count: i64| -> Vec<Option<CqlValue>> {
        let mut out: Vec<Option<CqlValue>> = values.iter().map(|&x| int(x)).collect();
        out.insert(values.len().min(3), bigint(count));
        out
    };
    let by_c = |c: i32| {
        let mut row = ints(&[0, 1, c], 2);
        row.push(int(100 + c * 10 + 1));
        row
    };
    for (cql, want) in [
        (
            "SELECT a, b, c, count(*), max(e) FROM t WHERE a = 0 AND b = 1 GROUP BY c",
            vec![by_c(0), by_c(1), by_c(2)],
        ),
        (
            "SELECT a, b, c, count(*), max(e) FROM t WHERE a = 0 AND b = 1 GROUP BY c ORDER BY c DESC",
            vec![by_c(2), by_c(1), by_c(0)],
        ),
        (
            "SELECT a, b, c, count(*) FROM t WHERE a = 0 AND b = 1 GROUP BY a, c",
            (0..3).map(|c| ints(&[0, 1, c], 2)).collect(),
        ),
        (
            "SELECT a, b, count(*) FROM t WHERE a = 0 AND b = 1 GROUP BY b",
            vec![ints(&[0, 1], 6)],
        ),
        (
            "SELECT a, b, count(*) FROM t WHERE a = 0 AND b IN (0, 1) GROUP BY b",
            vec![ints(&[0, 0], 6), ints(&[0, 1], 6)],
        ),
        (
            "SELECT a, b, c, count(*) FROM t WHERE a = 0 AND b = 1 AND c = 2 GROUP BY d",
            vec![ints(&[0, 1, 2], 1), ints(&[0, 1, 2], 1)],
        ),
        (
            "SELECT a, b, c, count(*) FROM t WHERE a = 0 AND b = 1 AND c = 2 GROUP BY b, d",
            vec![ints(&[0, 1, 2], 1), ints(&[0, 1, 2], 1)],
        ),
        (
            "SELECT a, b, c, count(*) FROM t WHERE a = 0 AND b = 1 AND (c, d) = (1, 1) GROUP BY d",
            vec![ints(&[0, 1, 1], 1)],
        ),
    ] {
        assert_eq!(h.rows(cql), want, "{cql}");
    }
    let order = "Group by currently only support groups of columns following their declared order in the PRIMARY KEY";
    let part = "Group by is not supported on only a part of the partition key";
    for (cql, message) in [
        (
            "SELECT a, count(*) FROM t WHERE a = 0 AND b = 1 GROUP BY d",
            order,
        ),
        (
            "SELECT a, count(*) FROM t WHERE a = 0 AND b = 1 AND c > 0 GROUP BY d",
            order,
        ),
        (
            "SELECT a, count(*) FROM t WHERE a = 0 AND b = 1 GROUP BY c, c",
            order,
        ),
        ("SELECT a, count(*) FROM t GROUP BY a", part),
        (
            "SELECT a, count(*) FROM t WHERE a = 0 AND b = 1 GROUP BY a",
            part,
        ),
        (
            "SELECT a, count(*) FROM t WHERE b = 1 GROUP BY a ALLOW FILTERING",
            part,
        ),
    ] {
        assert_eq!(h.err(cql).message, message, "{cql}");
    }
}

/// Without paging, GROUP BY's group rows count towards `unpaged_result_size_bytes_max` as
/// a plain SELECT's rows do: past it the query is refused with the same message, telling
/// the client to page, instead of accumulating every group; paged, every group is read.
#[test]
fn unpaged_group_by_is_bounded_in_bytes_like_a_plain_select() {
    let mut h = Harness::with_keyspace();
    h.processor = mosaic_cql::processor::Processor::new(h.coordinator.clone()).with_limits(
        mosaic_cql::processor::StatementLimits {
            unpaged_result_size_bytes_max: 65536,
            ..mosaic_cql::processor::StatementLimits::DEFAULT
        },
    );
    h.ok("CREATE TABLE t (p int, c int, v text, PRIMARY KEY (p, c))");
    let value = "z".repeat(8000);
    for p in 0..20 {
        for c in 0..2 {
            h.ok(&format!(
                "INSERT INTO t (p, c, v) VALUES ({p}, {c}, '{value}')"
            ));
        }
    }
    let plain = h.err("SELECT v FROM t");
    assert!(
        plain
            .message
            .contains("unpaged_result_size_bytes_max (65536 bytes): page it"),
        "{}",
        plain.message
    );
    // Groups of about 8 KB each (8 fit), with and without aggregates, over the whole table
    // and within partitions named by IN; the last case's 9th group is the one still being
    // aggregated when the read ends.
    for (cql, groups) in [
        ("SELECT p, v, count(*) FROM t GROUP BY p", 20),
        ("SELECT p, v FROM t GROUP BY p", 20),
        (
            "SELECT p, c, max(v) FROM t WHERE p IN (0, 1, 2, 3, 4, 5) GROUP BY p, c",
            12,
        ),
        (
            "SELECT p, v, count(*) FROM t WHERE p IN (0, 1, 2, 3, 4, 5, 6, 7, 8) GROUP BY p",
            9,
        ),
    ] {
        let e = h.err(cql);
        assert_eq!(e.kind, plain.kind, "{cql}");
        assert_eq!(e.message, plain.message, "{cql}");
        let (rows, _) = common::paged(&mut h, cql, 3);
        assert_eq!(rows.len(), groups, "{cql}");
    }
    // Under the bound: served; one group past it: refused.
    let rows = h.rows("SELECT p, v, count(*) FROM t GROUP BY p LIMIT 8");
    assert_eq!(rows.len(), 8);
    let e = h.err("SELECT p, v, count(*) FROM t GROUP BY p LIMIT 9");
    assert_eq!(e.message, plain.message);
}
