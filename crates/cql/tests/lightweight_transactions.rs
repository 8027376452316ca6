//! Lightweight transactions through the processor over the in-memory coordinator: the
//! `[applied]` results, their columns and rows, errors and PREPARE metadata, each as
//! Apache Cassandra 4.1.10 answered the same statements (read from a running node).

mod common;

use common::{decode_rows, int, text, values, Harness};
use mosaic_cql::frame::{
    BatchQuery, BatchStatement, BatchType, BoundValues, Consistency, Execute, QueryParameters,
    Request, Response, ResultBody, Rows, Value,
};
use mosaic_types::CqlValue;

type Row = Vec<Option<CqlValue>>;

fn yes() -> Option<CqlValue> {
    Some(CqlValue::Boolean(true))
}

fn no() -> Option<CqlValue> {
    Some(CqlValue::Boolean(false))
}

fn columns(rows: &Rows) -> Vec<String> {
    rows.metadata
        .columns
        .iter()
        .map(|c| c.name.clone())
        .collect()
}

/// Runs a conditional statement: its result's column names and rows.
fn lwt(h: &mut Harness, cql: &str) -> (Vec<String>, Vec<Row>) {
    match h.ok(cql) {
        ResultBody::Rows(rows) => (columns(&rows), decode_rows(&rows)),
        other => panic!("{cql}: expected rows, got {other:?}"),
    }
}

fn applied(h: &mut Harness, cql: &str) {
    assert_eq!(
        lwt(h, cql),
        (vec!["[applied]".to_owned()], vec![vec![yes()]]),
        "{cql}"
    );
}

fn names(names: &[&str]) -> Vec<String> {
    std::iter::once("[applied]")
        .chain(names.iter().copied())
        .map(str::to_owned)
        .collect()
}

fn harness() -> Harness {
    let mut h = Harness::with_keyspace();
    h.ok("CREATE TABLE u (k int PRIMARY KEY, v int, w text)");
    h.ok("CREATE TYPE addr (street text, zip int)");
    h.ok("CREATE TABLE c (k int, c int, s int static, s2 text static, v int, m map<text, int>, l list<int>, st set<int>, a addr, fa frozen<addr>, fl frozen<list<int>>, PRIMARY KEY (k, c))");
    h.ok("CREATE TABLE d (k int, c int, s int static, v int, w int, PRIMARY KEY (k, c))");
    h
}

#[test]
fn insert_if_not_exists_shows_the_existing_row() {
    let mut h = harness();
    applied(
        &mut h,
        "INSERT INTO u (k, v, w) VALUES (1, 1, 'a') IF NOT EXISTS",
    );
    assert_eq!(
        lwt(
            &mut h,
            "INSERT INTO u (k, v, w) VALUES (1, 2, 'b') IF NOT EXISTS"
        ),
        (
            names(&["k", "v", "w"]),
            vec![vec![no(), int(1), int(1), text("a")]]
        )
    );
    assert_eq!(h.rows("SELECT v FROM u WHERE k = 1"), vec![vec![int(1)]]);
    applied(
        &mut h,
        "INSERT INTO u (k, v) VALUES (2, 2) IF NOT EXISTS USING TTL 100",
    );
    let ttl = h.rows("SELECT ttl(v) FROM u WHERE k = 2");
    assert!(
        matches!(ttl[0][0], Some(CqlValue::Int(t)) if t > 90),
        "{ttl:?}"
    );
    // JSON inserts take IF NOT EXISTS too.
    applied(
        &mut h,
        r#"INSERT INTO u JSON '{"k": 3, "v": 3}' IF NOT EXISTS"#,
    );
    let (cols, rows) = lwt(&mut h, r#"INSERT INTO u JSON '{"k": 3}' IF NOT EXISTS"#);
    assert_eq!(
        (cols, rows),
        (
            names(&["k", "v", "w"]),
            vec![vec![no(), int(3), int(3), None]]
        )
    );
}

#[test]
fn update_conditions_compare_as_cassandra() {
    let mut h = harness();
    h.ok("INSERT INTO u (k, v, w) VALUES (1, 1, 'a')");
    applied(&mut h, "UPDATE u SET v = 3 WHERE k = 1 IF v = 1");
    assert_eq!(
        lwt(&mut h, "UPDATE u SET v = 4 WHERE k = 1 IF v = 1"),
        (names(&["v"]), vec![vec![no(), int(3)]])
    );
    // The columns come in the order of the IF, each once.
    assert_eq!(
        lwt(
            &mut h,
            "UPDATE u SET v = 4 WHERE k = 1 IF w = 'a' AND v = 1"
        ),
        (names(&["w", "v"]), vec![vec![no(), text("a"), int(3)]])
    );
    assert_eq!(
        lwt(
            &mut h,
            "UPDATE u SET v = 4 WHERE k = 1 IF v = 1 AND w = 'zz' AND v = 2"
        )
        .0,
        names(&["v", "w"])
    );
    // Nothing to show when the row does not exist.
    assert_eq!(
        lwt(&mut h, "UPDATE u SET v = 4 WHERE k = 9 IF v = 1"),
        (names(&[]), vec![vec![no()]])
    );
    assert_eq!(
        lwt(&mut h, "UPDATE u SET v = 4 WHERE k = 9 IF EXISTS").1,
        vec![vec![no()]]
    );
    applied(&mut h, "UPDATE u SET v = 4 WHERE k = 1 IF EXISTS");
    assert_eq!(
        lwt(&mut h, "UPDATE u SET v = 5 WHERE k = 1 IF v != 4").1,
        vec![vec![no(), int(4)]]
    );
    assert_eq!(
        lwt(&mut h, "UPDATE u SET v = 5 WHERE k = 1 IF v < 4").1,
        vec![vec![no(), int(4)]]
    );
    applied(&mut h, "UPDATE u SET v = 5 WHERE k = 1 IF v <= 4");
    applied(&mut h, "UPDATE u SET v = 6 WHERE k = 1 IF v > 4");
    assert_eq!(
        lwt(&mut h, "UPDATE u SET v = 7 WHERE k = 1 IF v >= 7").1,
        vec![vec![no(), int(6)]]
    );
    applied(&mut h, "UPDATE u SET v = 7 WHERE k = 1 IF v IN (1, 2, 6)");
    assert_eq!(
        lwt(&mut h, "UPDATE u SET v = 8 WHERE k = 1 IF v IN (1, 2)").1,
        vec![vec![no(), int(7)]]
    );
    assert_eq!(
        lwt(&mut h, "UPDATE u SET v = 8 WHERE k = 1 IF v IN ()").1,
        vec![vec![no(), int(7)]]
    );
    assert_eq!(
        lwt(&mut h, "UPDATE u SET v = 8 WHERE k = 1 IF v = null").1,
        vec![vec![no(), int(7)]]
    );
    applied(&mut h, "UPDATE u SET v = 8 WHERE k = 1 IF v != null");
    // A missing row's columns are null.
    applied(&mut h, "UPDATE u SET v = 9 WHERE k = 9 IF v = null");
    applied(&mut h, "UPDATE u SET v = 9 WHERE k = 10 IF v IN (null, 1)");
    assert_eq!(
        h.rows("SELECT k, v FROM u WHERE k = 9"),
        vec![vec![int(9), int(9)]]
    );
    // A row whose conditioned column is null shows it as null.
    assert_eq!(
        lwt(
            &mut h,
            "UPDATE u SET v = 1 WHERE k = 9 IF w = 'a' AND v = 1"
        ),
        (names(&["w", "v"]), vec![vec![no(), None, int(9)]])
    );
}

#[test]
fn delete_if_exists_and_conditions() {
    let mut h = harness();
    h.ok("INSERT INTO u (k, v, w) VALUES (1, 8, 'a')");
    assert_eq!(
        lwt(&mut h, "DELETE FROM u WHERE k = 1 IF v = 1").1,
        vec![vec![no(), int(8)]]
    );
    applied(&mut h, "DELETE FROM u WHERE k = 1 IF v = 8");
    assert_eq!(
        lwt(&mut h, "DELETE FROM u WHERE k = 1 IF EXISTS").1,
        vec![vec![no()]]
    );
    h.ok("INSERT INTO u (k, v) VALUES (2, 2)");
    applied(&mut h, "DELETE FROM u WHERE k = 2 IF EXISTS");
    assert!(h.rows("SELECT * FROM u WHERE k = 2").is_empty());
    h.ok("INSERT INTO u (k, v, w) VALUES (3, 2, 'x')");
    applied(&mut h, "DELETE w FROM u WHERE k = 3 IF v = 2");
    assert_eq!(
        h.rows("SELECT v, w FROM u WHERE k = 3"),
        vec![vec![int(2), None]]
    );
}

#[test]
fn collection_and_field_conditions() {
    let mut h = harness();
    applied(&mut h, "INSERT INTO c (k, c, v, m, l, st, a, fa, fl) VALUES (1, 1, 10, {'a': 1, 'b': 2}, [5, 6, 7], {1, 2}, {street: 'x', zip: 3}, {street: 'y', zip: 4}, [1, 2]) IF NOT EXISTS");
    let m = Some(CqlValue::Map(vec![
        (CqlValue::Text("a".into()), CqlValue::Int(1)),
        (CqlValue::Text("b".into()), CqlValue::Int(2)),
    ]));
    assert_eq!(
        lwt(
            &mut h,
            "UPDATE c SET v = 12 WHERE k = 1 AND c = 1 IF m['a'] = 2"
        ),
        (names(&["m"]), vec![vec![no(), m.clone()]])
    );
    applied(
        &mut h,
        "UPDATE c SET v = 12 WHERE k = 1 AND c = 1 IF m['a'] = 1",
    );
    applied(
        &mut h,
        "UPDATE c SET v = 13 WHERE k = 1 AND c = 1 IF m['zz'] = null",
    );
    for failing in [
        "m['a'] > 5",
        "m['a'] IN (7, 8)",
        "m['a'] != 1",
        "m = {'a': 1}",
        "m CONTAINS 3",
        "m['a'] = 1 AND m['b'] = 3",
        "m = null",
    ] {
        let (cols, rows) = lwt(
            &mut h,
            &format!("UPDATE c SET v = 13 WHERE k = 1 AND c = 1 IF {failing}"),
        );
        assert_eq!(
            (cols, rows),
            (names(&["m"]), vec![vec![no(), m.clone()]]),
            "{failing}"
        );
    }
    let l = Some(CqlValue::List(vec![
        CqlValue::Int(5),
        CqlValue::Int(6),
        CqlValue::Int(7),
    ]));
    assert_eq!(
        lwt(
            &mut h,
            "UPDATE c SET v = 13 WHERE k = 1 AND c = 1 IF l[1] = 7"
        )
        .1,
        vec![vec![no(), l.clone()]]
    );
    // An index past the end reads as null.
    assert_eq!(
        lwt(
            &mut h,
            "UPDATE c SET v = 13 WHERE k = 1 AND c = 1 IF l[9] = 7"
        )
        .1,
        vec![vec![no(), l.clone()]]
    );
    applied(
        &mut h,
        "UPDATE c SET v = 13 WHERE k = 1 AND c = 1 IF l[9] = null",
    );
    assert_eq!(
        lwt(
            &mut h,
            "UPDATE c SET v = 13 WHERE k = 1 AND c = 1 IF l = [5, 6]"
        )
        .1,
        vec![vec![no(), l]]
    );
    let a = Some(CqlValue::Tuple(vec![
        Some(CqlValue::Text("x".into())),
        Some(CqlValue::Int(3)),
    ]));
    assert_eq!(
        lwt(
            &mut h,
            "UPDATE c SET v = 13 WHERE k = 1 AND c = 1 IF a.zip = 3 AND a.street = 'q'"
        ),
        (names(&["a"]), vec![vec![no(), a]])
    );
    for holding in [
        "l > [5, 6]",
        "st CONTAINS 1",
        "m CONTAINS KEY 'a'",
        "m CONTAINS 1",
        "fl = [1, 2] AND fa = {street: 'y', zip: 4}",
        "fl[0] IN (1, 2)",
        "st > {0} AND st < {9}",
        "a.zip > 1 AND fa.street = 'y'",
        "a.zip IN (1, 3)",
        "a = {street: 'x', zip: 3}",
        "m > {'a': 1}",
        "s = null",
        "st = {1, 2}",
    ] {
        applied(
            &mut h,
            &format!("UPDATE c SET v = 14 WHERE k = 1 AND c = 1 IF {holding}"),
        );
    }
}

#[test]
fn static_conditions_read_the_static_row() {
    let mut h = harness();
    h.ok("INSERT INTO d (k, s) VALUES (1, 5)");
    // A regular condition on a missing row does not show the static row.
    assert_eq!(
        lwt(&mut h, "UPDATE d SET v = 1 WHERE k = 1 AND c = 99 IF v = 4").1,
        vec![vec![no()]]
    );
    assert_eq!(
        lwt(
            &mut h,
            "UPDATE d SET v = 1 WHERE k = 1 AND c = 99 IF EXISTS"
        )
        .1,
        vec![vec![no()]]
    );
    // A static-only INSERT checks the static row only.
    h.ok("INSERT INTO d (k, c, v) VALUES (2, 1, 1)");
    applied(&mut h, "INSERT INTO d (k, s) VALUES (2, 7) IF NOT EXISTS");
    assert_eq!(
        lwt(&mut h, "INSERT INTO d (k, s) VALUES (2, 8) IF NOT EXISTS"),
        (
            names(&["k", "c", "s", "v", "w"]),
            vec![vec![no(), int(2), int(1), int(7), None, None]]
        )
    );
    h.ok("INSERT INTO d (k, c, v) VALUES (3, 1, 1)");
    // IF EXISTS of a static-only write: the static row; the result shows the partition's
    // first row with the static columns only.
    assert_eq!(
        lwt(&mut h, "UPDATE d SET s = 1 WHERE k = 3 IF EXISTS"),
        (
            names(&["k", "c", "s", "v", "w"]),
            vec![vec![no(), int(3), int(1), None, None, None]]
        )
    );
    assert_eq!(
        lwt(&mut h, "UPDATE d SET s = 1 WHERE k = 3 IF s = 4").1,
        vec![vec![no(), None]]
    );
    assert_eq!(
        lwt(&mut h, "UPDATE d SET v = 1 WHERE k = 3 AND c = 5 IF s = 4").1,
        vec![vec![no(), None]]
    );
    assert_eq!(
        lwt(
            &mut h,
            "UPDATE d SET v = 1 WHERE k = 3 AND c = 5 IF s = 4 AND w = 1"
        )
        .1,
        vec![vec![no()]]
    );
    assert_eq!(
        lwt(
            &mut h,
            "UPDATE d SET v = 1 WHERE k = 3 AND c = 1 IF s = 4 AND w = 1"
        ),
        (names(&["w", "s"]), vec![vec![no(), None, None]])
    );
    applied(
        &mut h,
        "UPDATE d SET v = 1 WHERE k = 3 AND c = 1 IF s = null AND w = null",
    );
    applied(&mut h, "DELETE FROM d WHERE k = 3 AND c = 1 IF s = null");
    // Static columns show only when the write sets some.
    h.ok("INSERT INTO d (k, c, s, v) VALUES (40, 1, 2, 3)");
    assert_eq!(
        lwt(
            &mut h,
            "INSERT INTO d (k, c, v) VALUES (40, 1, 9) IF NOT EXISTS"
        )
        .1,
        vec![vec![no(), int(40), int(1), None, int(3), None]]
    );
    assert_eq!(
        lwt(
            &mut h,
            "UPDATE d SET v = 1, s = 3 WHERE k = 40 AND c = 2 IF EXISTS"
        )
        .1,
        vec![vec![no(), int(40), None, int(2), None, None]]
    );
    // Regular conditions come before static ones.
    assert_eq!(
        lwt(
            &mut h,
            "UPDATE d SET s = 2, v = 3 WHERE k = 40 AND c = 1 IF s = 5 AND v = 4"
        ),
        (names(&["v", "s"]), vec![vec![no(), int(3), int(2)]])
    );
    applied(&mut h, "DELETE s FROM d WHERE k = 40 IF s = 2");
    assert_eq!(h.rows("SELECT s FROM d WHERE k = 40"), vec![vec![None]]);
}

#[test]
fn conditional_batches_check_and_commit_together() {
    let mut h = harness();
    applied(&mut h, "BEGIN BATCH INSERT INTO d (k, c, v) VALUES (5, 1, 1) IF NOT EXISTS; INSERT INTO d (k, c, v) VALUES (5, 2, 2) IF NOT EXISTS; APPLY BATCH");
    assert_eq!(
        lwt(&mut h, "BEGIN BATCH INSERT INTO d (k, c, v) VALUES (5, 1, 1) IF NOT EXISTS; INSERT INTO d (k, c, v) VALUES (5, 3, 2) IF NOT EXISTS; APPLY BATCH"),
        (names(&["k", "c", "s", "v", "w"]), vec![vec![no(), int(5), int(1), None, int(1), None]])
    );
    assert!(h.rows("SELECT * FROM d WHERE k = 5 AND c = 3").is_empty());
    assert_eq!(
        lwt(&mut h, "BEGIN BATCH UPDATE d SET v = 5 WHERE k = 5 AND c = 1 IF v = 1; UPDATE d SET w = 5 WHERE k = 5 AND c = 2 IF v = 9; APPLY BATCH"),
        (names(&["k", "c", "v"]), vec![vec![no(), int(5), int(1), int(1)], vec![no(), int(5), int(2), int(2)]])
    );
    applied(&mut h, "BEGIN BATCH UPDATE d SET v = 5 WHERE k = 5 AND c = 1 IF v = 1; UPDATE d SET w = 5 WHERE k = 5 AND c = 2 IF v = 2; APPLY BATCH");
    assert_eq!(
        lwt(&mut h, "BEGIN BATCH UPDATE d SET v = 6 WHERE k = 5 AND c = 1 IF v = 1 AND w = 3; UPDATE d SET w = 6 WHERE k = 5 AND c = 2 IF w = 9 AND s = 3; UPDATE d SET w = 6 WHERE k = 5 AND c = 9 IF w = 9; APPLY BATCH"),
        (
            names(&["k", "c", "v", "w", "s"]),
            vec![vec![no(), int(5), int(1), int(5), None, None], vec![no(), int(5), int(2), int(2), int(5), None]]
        )
    );
    // Unconditional statements of the partition commit with the others.
    applied(&mut h, "BEGIN BATCH UPDATE d SET v = 6 WHERE k = 5 AND c = 1 IF v = 5; INSERT INTO d (k, c, v) VALUES (5, 7, 1) USING TIMESTAMP 5; APPLY BATCH");
    assert_eq!(
        h.rows("SELECT v FROM d WHERE k = 5 AND c = 7"),
        vec![vec![int(1)]]
    );
    applied(&mut h, "BEGIN UNLOGGED BATCH UPDATE d SET v = 8 WHERE k = 5 AND c = 1 IF v = 6; UPDATE d SET v = 9 WHERE k = 5 AND c = 1 IF v = 6; APPLY BATCH");
    assert_eq!(
        h.rows("SELECT v FROM d WHERE k = 5 AND c = 1"),
        vec![vec![int(9)]]
    );
    assert_eq!(
        lwt(&mut h, "BEGIN BATCH UPDATE d SET v = 8 WHERE k = 5 AND c = 1 IF EXISTS; UPDATE d SET v = 1 WHERE k = 5 AND c = 22 IF EXISTS; APPLY BATCH").1,
        vec![vec![no(), int(5), int(1), None, int(9), None]]
    );
    assert_eq!(
        lwt(&mut h, "BEGIN BATCH UPDATE d SET v = 8 WHERE k = 5 AND c = 21 IF v = 3; UPDATE d SET v = 1 WHERE k = 5 AND c = 22 IF EXISTS; APPLY BATCH").1,
        vec![vec![no()]]
    );
    for (batch, message) in [
        ("UPDATE d SET v = 6 WHERE k = 5 AND c = 1 IF v = 1; UPDATE d SET v = 6 WHERE k = 6 AND c = 1 IF v = 1;", "Batch with conditions cannot span multiple partitions"),
        ("UPDATE d SET v = 6 WHERE k = 5 AND c = 1 IF v = 5; INSERT INTO d (k, c, v) VALUES (6, 7, 1);", "Batch with conditions cannot span multiple partitions"),
        ("UPDATE d SET v = 6 WHERE k = 5 AND c = 1 IF v = 1; UPDATE u SET v = 6 WHERE k = 5 IF v = 1;", "Batch with conditions cannot span multiple tables"),
        ("UPDATE d SET v = 8 WHERE k = 5 AND c = 1 IF v = 7; DELETE FROM d WHERE k = 5 AND c = 1 IF EXISTS;", "Cannot mix IF conditions and IF EXISTS for the same row"),
        ("INSERT INTO d (k, c, v) VALUES (5, 1, 1) IF NOT EXISTS; UPDATE d SET v = 8 WHERE k = 5 AND c = 1 IF v = 9;", "Cannot mix IF conditions and IF NOT EXISTS for the same row"),
        ("INSERT INTO d (k, c, v) VALUES (5, 1, 1) IF NOT EXISTS; UPDATE d SET v = 8 WHERE k = 5 AND c = 1 IF EXISTS;", "Cannot mix IF EXISTS and IF NOT EXISTS conditions for the same row"),
    ] {
        let e = h.err(&format!("BEGIN BATCH {batch} APPLY BATCH"));
        assert_eq!(e.message, message, "{batch}");
    }
    let e = h.err("BEGIN BATCH USING TIMESTAMP 5 UPDATE d SET v = 6 WHERE k = 5 AND c = 1 IF v = 5; APPLY BATCH");
    assert_eq!(
        e.message,
        "Cannot provide custom timestamp for conditional BATCH"
    );
}

#[test]
fn list_operations_read_the_row_the_round_read() {
    let mut h = harness();
    h.ok("INSERT INTO c (k, c, v, l) VALUES (1, 1, 1, [5, 6, 7])");
    applied(
        &mut h,
        "UPDATE c SET l[0] = 42 WHERE k = 1 AND c = 1 IF v = 1",
    );
    applied(
        &mut h,
        "UPDATE c SET l = l - [6] WHERE k = 1 AND c = 1 IF EXISTS",
    );
    applied(&mut h, "DELETE l[1] FROM c WHERE k = 1 AND c = 1 IF v = 1");
    assert_eq!(
        h.rows("SELECT l FROM c WHERE k = 1 AND c = 1"),
        vec![vec![Some(CqlValue::List(vec![CqlValue::Int(42)]))]]
    );
    let e = h.err("UPDATE c SET l[5] = 43 WHERE k = 1 AND c = 1 IF EXISTS");
    assert_eq!(e.message, "List index 5 out of bound, list has size 1");
}

#[test]
fn refusals_use_cassandras_messages() {
    let mut h = harness();
    for (cql, message) in [
        ("INSERT INTO u (k, v) VALUES (3, 2) IF NOT EXISTS USING TIMESTAMP 100", "Cannot provide custom timestamp for conditional updates"),
        ("UPDATE u USING TIMESTAMP 5 SET v = 1 WHERE k = 3 IF EXISTS", "Cannot provide custom timestamp for conditional updates"),
        ("DELETE FROM u USING TIMESTAMP 5 WHERE k = 3 IF EXISTS", "Cannot provide custom timestamp for conditional updates"),
        ("UPDATE u SET v = 9 WHERE k = 1 IF v > null", "Invalid comparison with null for operator \">\""),
        ("UPDATE u SET v = 9 WHERE k = 1 IF k = 1", "PRIMARY KEY column 'k' cannot have IF conditions"),
        ("UPDATE c SET v = 1 WHERE k = 1 AND c = 1 IF c = 1", "PRIMARY KEY column 'c' cannot have IF conditions"),
        ("UPDATE u SET v = 9 WHERE k IN (1, 2) IF v = 1", "IN on the partition key is not supported with conditional updates"),
        ("DELETE FROM u WHERE k IN (1, 2) IF v = 1", "IN on the partition key is not supported with conditional deletions"),
        ("UPDATE c SET v = 1 WHERE k = 8 AND c IN (1, 2) IF EXISTS", "IN on the clustering key columns is not supported with conditional updates"),
        ("DELETE FROM c WHERE k = 8 AND c IN (1, 2) IF EXISTS", "IN on the clustering key columns is not supported with conditional deletions"),
        ("DELETE FROM c WHERE k = 8 IF EXISTS", "DELETE statements must restrict all PRIMARY KEY columns with equality relations in order to delete non static columns"),
        ("DELETE FROM c WHERE k = 8 IF s = 9", "DELETE statements must restrict all PRIMARY KEY columns with equality relations in order to delete non static columns"),
        ("DELETE FROM c WHERE k = 8 AND c > 1 IF EXISTS", "DELETE statements must restrict all PRIMARY KEY columns with equality relations in order to delete non static columns"),
        ("DELETE s FROM c WHERE k = 1 IF v = 1", "DELETE statements must restrict all PRIMARY KEY columns with equality relations in order to use IF condition on non static columns"),
        ("UPDATE c SET v = 1 WHERE k = 8 IF EXISTS", "Some clustering keys are missing: c"),
        ("UPDATE c SET s = 2 WHERE k = 1 IF v = 5", "Some clustering keys are missing: c"),
        ("UPDATE c SET v = 13 WHERE k = 1 AND c = 1 IF l[-1] = 7", "Invalid negative list index -1"),
        ("UPDATE c SET v = 13 WHERE k = 1 AND c = 1 IF st[1] = 7", "Invalid element access syntax for set column st"),
        ("UPDATE c SET v = 13 WHERE k = 1 AND c = 1 IF v[1] = 7", "Invalid element access syntax for non-collection column v"),
        ("UPDATE c SET v = 13 WHERE k = 1 AND c = 1 IF a.nope = 3", "Unknown field nope for column a"),
        ("UPDATE c SET v = 1 WHERE k = 1 AND c = 1 IF nope = 1", "Undefined column name nope in table ks.c"),
        ("UPDATE c SET v = 1 WHERE k = 1 AND c = 1 IF v CONTAINS 1", "Cannot use CONTAINS on non-collection column v"),
        ("UPDATE c SET v = 1 WHERE k = 1 AND c = 1 IF l CONTAINS KEY 1", "Cannot use CONTAINS KEY on non-map column l"),
        ("UPDATE c SET v = 1 WHERE k = 1 AND c = 1 IF st CONTAINS null", "Invalid comparison with null for operator \"CONTAINS\""),
        ("UPDATE c SET v = 1 WHERE k = 1 AND c = 1 IF m[null] = 1", "Invalid null value for map element access"),
        ("UPDATE c SET v = 1 WHERE k = 1 AND c = 1 IF l[null] = 1", "Invalid null value for list element access"),
        ("UPDATE c SET v = 4 WHERE k = 1 AND c = 1 IF st > null", "Invalid comparison with null for operator \">\""),
    ] {
        let e = h.err(cql);
        assert_eq!(e.message, message, "{cql}");
        assert_eq!(e.kind.code(), 0x2200, "{cql}");
    }
    for (cql, message) in [
        (
            "INSERT INTO u (k, v) VALUES (3, 2) USING TIMESTAMP 100 IF NOT EXISTS",
            "line 1:55 mismatched input 'IF' expecting EOF (... 2) USING TIMESTAMP 100 [IF]...)",
        ),
        (
            "UPDATE c SET v = 1 WHERE k = 1 AND c = 1 IF EXISTS AND v = 1",
            "line 1:51 no viable alternative at input 'AND' (...AND c = 1 IF [EXISTS] AND...)",
        ),
        (
            "UPDATE c SET v = 1 WHERE k = 1 AND c = 1 IF NOT EXISTS",
            "line 1:44 no viable alternative at input 'NOT' (...AND c = 1 IF [NOT]...)",
        ),
        (
            "INSERT INTO c (k, c) VALUES (1, 1) IF EXISTS",
            "line 1:38 mismatched input 'EXISTS' expecting K_NOT (... (1, 1) IF [EXISTS])",
        ),
    ] {
        let e = h.err(cql);
        assert_eq!(e.kind.code(), 0x2000, "{cql}: {}", e.message);
        // Cassandra's text; the context in parentheses is Mosaic's usual two tokens.
        let head = |m: &str| m.split(" (").next().unwrap_or_default().to_owned();
        assert_eq!(head(&e.message), head(message), "{cql}: {}", e.message);
    }
}

#[test]
fn serial_levels_are_for_the_paxos_phase_and_reads() {
    let mut h = harness();
    let at = |c: Consistency| QueryParameters::new(c);
    let e = h
        .query_with(
            "UPDATE u SET v = 1 WHERE k = 3 IF EXISTS",
            at(Consistency::Serial),
        )
        .unwrap_err();
    assert_eq!(e.message, "SERIAL is not supported as conditional update commit consistency. Use ANY if you mean \"make sure it is accepted but I don't care how many replicas commit it for non-SERIAL reads\"");
    let e = h
        .query_with(
            "UPDATE u SET v = 1 WHERE k = 3 IF EXISTS",
            at(Consistency::LocalSerial),
        )
        .unwrap_err();
    assert!(
        e.message.starts_with("LOCAL_SERIAL is not supported"),
        "{}",
        e.message
    );
    for cql in [
        "UPDATE u SET v = 1 WHERE k = 3",
        "INSERT INTO u (k, v) VALUES (3, 1)",
    ] {
        let e = h.query_with(cql, at(Consistency::LocalSerial)).unwrap_err();
        assert_eq!(
            e.message,
            "You must use conditional updates for serializable writes"
        );
    }
    let mut params = at(Consistency::Quorum);
    params.serial_consistency = Some(Consistency::Quorum);
    let e = h
        .query_with("UPDATE u SET v = 1 WHERE k = 3 IF EXISTS", params)
        .unwrap_err();
    assert_eq!(
        e.message,
        "Invalid consistency for conditional update. Must be one of SERIAL or LOCAL_SERIAL"
    );
    let mut params = at(Consistency::Any);
    params.serial_consistency = Some(Consistency::LocalSerial);
    assert!(h
        .query_with("INSERT INTO u (k, v) VALUES (3, 1) IF NOT EXISTS", params)
        .is_ok());
    // Reads at SERIAL, of one partition or more, as Cassandra 4.1 answers them.
    for cql in [
        "SELECT * FROM u WHERE k = 3",
        "SELECT * FROM u",
        "SELECT * FROM u WHERE k IN (1, 3)",
    ] {
        let r = h.query_with(cql, at(Consistency::Serial)).expect(cql);
        assert!(matches!(r, ResultBody::Rows(_)), "{cql}");
    }
}

fn prepare(h: &mut Harness, cql: &str) -> mosaic_cql::frame::Prepared {
    h.prepare(cql)
}

#[test]
fn prepared_conditions_name_their_markers_as_cassandra() {
    let mut h = harness();
    for (cql, expected) in [
        (
            "INSERT INTO c (k, c, v) VALUES (?, ?, ?) IF NOT EXISTS USING TTL ?",
            vec![("k", "int"), ("c", "int"), ("v", "int"), ("[ttl]", "int")],
        ),
        (
            "UPDATE c SET v = ? WHERE k = ? AND c = ? IF v != ? AND s > ?",
            vec![
                ("v", "int"),
                ("k", "int"),
                ("c", "int"),
                ("v", "int"),
                ("s", "int"),
            ],
        ),
        (
            "UPDATE c SET v = ? WHERE k = ? AND c = ? IF v IN ?",
            vec![
                ("v", "int"),
                ("k", "int"),
                ("c", "int"),
                ("in(v)", "list<int>"),
            ],
        ),
        (
            "UPDATE c SET v = ? WHERE k = ? AND c = ? IF v IN (?, ?)",
            vec![
                ("v", "int"),
                ("k", "int"),
                ("c", "int"),
                ("v", "int"),
                ("v", "int"),
            ],
        ),
        (
            "UPDATE c SET v = ? WHERE k = ? AND c = ? IF m[?] = ?",
            vec![
                ("v", "int"),
                ("k", "int"),
                ("c", "int"),
                ("key(m)", "text"),
                ("value(m)", "int"),
            ],
        ),
        (
            "UPDATE c SET v = ? WHERE k = ? AND c = ? IF m[?] IN ?",
            vec![
                ("v", "int"),
                ("k", "int"),
                ("c", "int"),
                ("key(m)", "text"),
                ("in(value(m))", "list<int>"),
            ],
        ),
        (
            "UPDATE c SET v = ? WHERE k = ? AND c = ? IF l[?] = ?",
            vec![
                ("v", "int"),
                ("k", "int"),
                ("c", "int"),
                ("idx(l)", "int"),
                ("value(l)", "int"),
            ],
        ),
        (
            "UPDATE c SET v = ? WHERE k = ? AND c = ? IF a.zip = ?",
            vec![("v", "int"), ("k", "int"), ("c", "int"), ("a.zip", "int")],
        ),
        (
            "UPDATE c SET v = ? WHERE k = ? AND c = ? IF a.zip IN ?",
            vec![
                ("v", "int"),
                ("k", "int"),
                ("c", "int"),
                ("in(a.zip)", "list<int>"),
            ],
        ),
        (
            "UPDATE c SET v = ? WHERE k = ? AND c = ? IF st CONTAINS ?",
            vec![
                ("v", "int"),
                ("k", "int"),
                ("c", "int"),
                ("value(st)", "int"),
            ],
        ),
        (
            "UPDATE c SET v = ? WHERE k = ? AND c = ? IF m CONTAINS KEY ?",
            vec![("v", "int"), ("k", "int"), ("c", "int"), ("key(m)", "text")],
        ),
        (
            "UPDATE c SET v = ? WHERE k = ? AND c = ? IF m = ?",
            vec![
                ("v", "int"),
                ("k", "int"),
                ("c", "int"),
                ("m", "map<text, int>"),
            ],
        ),
        (
            "UPDATE c SET v = :nv WHERE k = :k AND c = :c IF v = :ov",
            vec![("nv", "int"), ("k", "int"), ("c", "int"), ("ov", "int")],
        ),
        (
            "DELETE FROM c WHERE k = ? AND c = ? IF v = ?",
            vec![("k", "int"), ("c", "int"), ("v", "int")],
        ),
    ] {
        let p = prepare(&mut h, cql);
        let got: Vec<(String, String)> = p
            .metadata
            .columns
            .iter()
            .map(|c| (c.name.clone(), common::data_type(&c.ty).to_string()))
            .collect();
        let expected: Vec<(String, String)> = expected
            .into_iter()
            .map(|(n, t)| (n.to_owned(), t.to_owned()))
            .collect();
        assert_eq!(got, expected, "{cql}");
        // Like any modification, no result columns: drivers take `[applied]` from each answer.
        assert!(p.result_metadata.columns.is_empty(), "{cql}");
    }
}

#[test]
fn prepared_conditional_statements_execute_with_bound_values() {
    let mut h = harness();
    h.ok("INSERT INTO c (k, c, v, m, l) VALUES (1, 1, 1, {'a': 1}, [5])");
    let p = prepare(&mut h, "UPDATE c SET v = ? WHERE k = ? AND c = ? IF v = ?");
    let execute = |h: &mut Harness, vs: BoundValues| {
        let mut params = QueryParameters::new(Consistency::One);
        params.values = vs;
        match h.request(Request::Execute(Execute {
            id: p.id.clone(),
            result_metadata_id: None,
            params,
        })) {
            Response::Result(ResultBody::Rows(rows)) => Ok(decode_rows(&rows)),
            Response::Error(e) => Err(e.message),
            other => panic!("{other:?}"),
        }
    };
    let four = |a, b, c, d| {
        values(&[
            CqlValue::Int(a),
            CqlValue::Int(b),
            CqlValue::Int(c),
            CqlValue::Int(d),
        ])
    };
    assert_eq!(execute(&mut h, four(2, 1, 1, 1)), Ok(vec![vec![yes()]]));
    assert_eq!(
        execute(&mut h, four(2, 1, 1, 1)),
        Ok(vec![vec![no(), int(2)]])
    );
    let unset = BoundValues::Positional(vec![
        Value::Bytes(CqlValue::Int(2).to_cql_bytes().into()),
        Value::Bytes(CqlValue::Int(1).to_cql_bytes().into()),
        Value::Bytes(CqlValue::Int(1).to_cql_bytes().into()),
        Value::Unset,
    ]);
    assert_eq!(
        execute(&mut h, unset),
        Err("Invalid 'unset' value in condition".to_owned())
    );
    let p = prepare(&mut h, "UPDATE c SET v = ? WHERE k = ? AND c = ? IF v IN ?");
    let bind = |vs: Vec<Value>| {
        let mut params = QueryParameters::new(Consistency::One);
        params.values = BoundValues::Positional(vs);
        Request::Execute(Execute {
            id: p.id.clone(),
            result_metadata_id: None,
            params,
        })
    };
    let int_value = |n: i32| Value::Bytes(CqlValue::Int(n).to_cql_bytes().into());
    let list = CqlValue::List(vec![CqlValue::Int(1), CqlValue::Int(2)]).to_cql_bytes();
    let r = h.request(bind(vec![
        int_value(3),
        int_value(1),
        int_value(1),
        Value::Bytes(list.into()),
    ]));
    assert!(
        matches!(&r, Response::Result(ResultBody::Rows(rows)) if decode_rows(rows) == vec![vec![yes()]]),
        "{r:?}"
    );
    let r = h.request(bind(vec![
        int_value(3),
        int_value(1),
        int_value(1),
        Value::Null,
    ]));
    assert!(
        matches!(&r, Response::Error(e) if e.message == "Invalid null list in IN condition"),
        "{r:?}"
    );
}

#[test]
fn batch_messages_with_conditions_are_one_round() {
    let mut h = harness();
    let batch = |statements: Vec<(&str, BoundValues)>| {
        Request::Batch(mosaic_cql::frame::Batch {
            batch_type: BatchType::Logged,
            statements: statements
                .into_iter()
                .map(|(q, values)| BatchStatement {
                    query: BatchQuery::Query(q.to_owned()),
                    values,
                })
                .collect(),
            consistency: Consistency::Quorum,
            serial_consistency: Some(Consistency::LocalSerial),
            timestamp: None,
            keyspace: None,
            now_in_seconds: None,
        })
    };
    let none = BoundValues::Positional(Vec::new());
    let r = h.request(batch(vec![
        (
            "INSERT INTO d (k, c, v) VALUES (1, 1, 1) IF NOT EXISTS",
            none.clone(),
        ),
        (
            "INSERT INTO d (k, c, v) VALUES (1, ?, ?)",
            values(&[CqlValue::Int(2), CqlValue::Int(2)]),
        ),
    ]));
    assert!(
        matches!(&r, Response::Result(ResultBody::Rows(rows)) if decode_rows(rows) == vec![vec![yes()]]),
        "{r:?}"
    );
    let r = h.request(batch(vec![
        (
            "UPDATE d SET v = 5 WHERE k = 1 AND c = ? IF v = 9",
            values(&[CqlValue::Int(1)]),
        ),
        ("UPDATE d SET v = 5 WHERE k = 1 AND c = 2", none.clone()),
    ]));
    let Response::Result(ResultBody::Rows(rows)) = r else {
        panic!("{r:?}")
    };
    assert_eq!(columns(&rows), names(&["k", "c", "v"]));
    assert_eq!(decode_rows(&rows), vec![vec![no(), int(1), int(1), int(1)]]);
    assert_eq!(
        h.rows("SELECT v FROM d WHERE k = 1"),
        vec![vec![int(1)], vec![int(2)]]
    );
    let r = h.request(batch(vec![
        (
            "UPDATE d SET v = 5 WHERE k = 1 AND c = 1 IF v = 1",
            none.clone(),
        ),
        ("UPDATE d SET v = 5 WHERE k = 2 AND c = 2", none),
    ]));
    assert!(
        matches!(&r, Response::Error(e) if e.message == "Batch with conditions cannot span multiple partitions"),
        "{r:?}"
    );
}
