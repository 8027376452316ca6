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
