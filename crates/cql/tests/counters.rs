//! Counter tables through the processor over the in-memory coordinator: schema rules,
//! increments (`Coordinator::counter_write`), deletions, reads, batches and PREPARE
//! metadata, with the texts Apache Cassandra 4.1.10 answered for the same statements
//! (read from a running node).

mod common;

use bytes::Bytes;
use common::{int, values, Harness};
use mosaic_cql::frame::{
    Batch, BatchQuery, BatchStatement, BatchType, BoundValues, ColumnType, Consistency, ErrorKind,
    Execute, Prepare, QueryParameters, Request, Response, ResultBody, Value,
};
use mosaic_types::CqlValue;

fn big(n: i64) -> Option<CqlValue> {
    Some(CqlValue::BigInt(n))
}

fn harness() -> Harness {
    let mut h = Harness::with_keyspace();
    h.ok("CREATE TABLE t (k int PRIMARY KEY, c counter, d counter)");
    h.ok("CREATE TABLE s (k int, ck int, sc counter static, c counter, PRIMARY KEY (k, ck))");
    h.ok("CREATE TABLE n (k int PRIMARY KEY, v int)");
    h
}

fn invalid(h: &mut Harness, cql: &str, message: &str) {
    let e = h.err(cql);
    assert_eq!(
        (e.kind, e.message.as_str()),
        (ErrorKind::Invalid, message),
        "{cql}"
    );
}

#[test]
fn create_table_follows_cassandras_rules() {
    let mut h = harness();
    for (cql, message) in [
        (
            "CREATE TABLE b (k int PRIMARY KEY, c counter, v int)",
            "Cannot mix counter and non counter columns in the same table",
        ),
        (
            "CREATE TABLE b (k counter PRIMARY KEY, c counter)",
            "counter type is not supported for PRIMARY KEY column 'k'",
        ),
        (
            "CREATE TABLE b (k int, ck counter, c counter, PRIMARY KEY (k, ck))",
            "counter type is not supported for PRIMARY KEY column 'ck'",
        ),
        (
            "CREATE TABLE b (k int PRIMARY KEY, c list<counter>)",
            "Counters are not allowed inside collections: list<counter>",
        ),
        (
            "CREATE TABLE b (k int PRIMARY KEY, c map<counter, int>)",
            "Counters are not allowed inside collections: map<counter, int>",
        ),
        (
            "CREATE TABLE b (k int PRIMARY KEY, c frozen<tuple<int, counter>>)",
            "Counters are not allowed inside tuples",
        ),
        (
            "CREATE TABLE b (k int PRIMARY KEY, c counter) WITH default_time_to_live = 10",
            "Cannot set default_time_to_live on a table with counters",
        ),
        (
            "ALTER TABLE t WITH default_time_to_live = 5",
            "Cannot set default_time_to_live on a table with counters",
        ),
        (
            "CREATE TYPE ut (a counter)",
            "A user type cannot contain counters",
        ),
        (
            "CREATE INDEX ON t (c)",
            "Secondary indexes on counter tables aren't supported",
        ),
    ] {
        invalid(&mut h, cql, message);
    }
    let e = h.err("CREATE TABLE b (k int PRIMARY KEY, c frozen<counter>)");
    assert_eq!(e.kind, ErrorKind::Syntax);
    assert!(e.message.contains("(got counter)"), "{}", e.message);
    for (cql, message) in [
        (
            "ALTER TABLE n ADD c counter",
            "ks.n: Cannot have a counter column (\"c\") in a non counter table",
        ),
        (
            "ALTER TABLE t ADD v int",
            "ks.t: Cannot have a non counter column (\"v\") in a counter table",
        ),
    ] {
        let e = h.err(cql);
        assert_eq!((e.kind, e.message.as_str()), (ErrorKind::Config, message));
    }
    h.ok("ALTER TABLE t ADD e counter");
    // A counter table stays one when its counters are dropped, as in Cassandra.
    h.ok("CREATE TABLE o (k int PRIMARY KEY, c counter)");
    h.ok("ALTER TABLE o DROP c");
    assert_eq!(h.err("ALTER TABLE o ADD v int").kind, ErrorKind::Config);
    h.ok("ALTER TABLE o ADD c2 counter");
}

#[test]
fn the_schema_shows_counters() {
    let mut h = harness();
    let rows = h.rows(
        "SELECT column_name, type FROM system_schema.columns WHERE keyspace_name = 'ks' AND table_name = 's'",
    );
    let text = |s: &str| Some(CqlValue::Text(s.to_owned()));
    assert_eq!(
        rows,
        vec![
            vec![text("c"), text("counter")],
            vec![text("ck"), text("int")],
            vec![text("k"), text("int")],
            vec![text("sc"), text("counter")],
        ]
    );
    let flags = h.rows(
        "SELECT flags FROM system_schema.tables WHERE keyspace_name = 'ks' AND table_name IN ('t', 'n')",
    );
    let set = |items: &[&str]| {
        Some(CqlValue::Set(
            items
                .iter()
                .map(|s| CqlValue::Text((*s).to_owned()))
                .collect(),
        ))
    };
    assert_eq!(
        flags,
        vec![
            vec![set(&["compound"])],
            vec![set(&["compound", "counter"])]
        ]
    );
    let described = h.rows("DESCRIBE TABLE s");
    let Some(Some(CqlValue::Text(create))) = described[0].get(3) else {
        panic!("{described:?}")
    };
    assert!(
        create.starts_with(
            "CREATE TABLE ks.s (\n    k int,\n    ck int,\n    sc counter static,\n    c counter,\n    PRIMARY KEY (k, ck)\n)"
        ),
        "{create}"
    );
    // What DESCRIBE prints creates the same table again.
    h.ok("DROP TABLE s");
    h.ok(create);
    h.ok("UPDATE s SET c = c + 1 WHERE k = 1 AND ck = 1");
}

#[test]
fn increments_add_up_and_read_as_counters() {
    let mut h = harness();
    h.ok("UPDATE t SET c = c + 1, d = d - 2 WHERE k = 1");
    h.ok("UPDATE t SET c += 5 WHERE k = 1");
    h.ok("UPDATE t SET d -= 5 WHERE k = 1");
    h.ok("UPDATE t SET c = c + 1, c = c - 5 WHERE k = 2");
    match h.ok("SELECT * FROM t WHERE k = 1") {
        ResultBody::Rows(rows) => {
            let types: Vec<&ColumnType> = rows.metadata.columns.iter().map(|c| &c.ty).collect();
            assert_eq!(
                types,
                [
                    &ColumnType::Native(mosaic_types::CqlType::Int),
                    &ColumnType::Counter,
                    &ColumnType::Counter
                ]
            );
            assert_eq!(
                common::decode_rows(&rows),
                vec![vec![int(1), big(6), big(-7)]]
            );
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        h.rows("SELECT c, d FROM t WHERE k = 2"),
        vec![vec![big(-4), None]]
    );
    assert!(h.rows("SELECT c FROM t WHERE k = 3").is_empty());
    // Overflow wraps, as Java's long does.
    h.ok("UPDATE t SET c = c + 9223372036854775807 WHERE k = 5");
    h.ok("UPDATE t SET c = c + 1 WHERE k = 5");
    assert_eq!(
        h.rows("SELECT c FROM t WHERE k = 5"),
        vec![vec![big(i64::MIN)]]
    );
    // Filtering and aggregates read the totals.
    assert_eq!(
        h.rows("SELECT k FROM t WHERE c = 6 ALLOW FILTERING"),
        vec![vec![int(1)]]
    );
    match h.ok("SELECT sum(c), count(c), max(c), min(c) FROM t WHERE k IN (1, 2)") {
        ResultBody::Rows(rows) => {
            let types: Vec<&ColumnType> = rows.metadata.columns.iter().map(|c| &c.ty).collect();
            let bigint = ColumnType::Native(mosaic_types::CqlType::BigInt);
            assert_eq!(
                types,
                [
                    &ColumnType::Counter,
                    &bigint,
                    &ColumnType::Counter,
                    &ColumnType::Counter
                ]
            );
            assert_eq!(
                common::decode_rows(&rows),
                vec![vec![big(2), big(2), big(6), big(-4)]]
            );
        }
        other => panic!("{other:?}"),
    }
    let json = h.rows("SELECT JSON k, c, d FROM t WHERE k = 2");
    assert_eq!(
        json,
        vec![vec![Some(CqlValue::Text(
            r#"{"k": 2, "c": -4, "d": null}"#.to_owned()
        ))]]
    );
    let rows = h.rows("SELECT writetime(c), ttl(c), toJson(c) FROM t WHERE k = 1");
    assert!(
        matches!(rows[0][0], Some(CqlValue::BigInt(ts)) if ts > 0),
        "{rows:?}"
    );
    assert_eq!(rows[0][1], None);
    assert_eq!(rows[0][2], Some(CqlValue::Text("6".to_owned())));
}

#[test]
fn static_counters_and_in_lists_of_rows() {
    let mut h = harness();
    h.ok("UPDATE s SET sc = sc + 1 WHERE k = 1");
    h.ok("UPDATE s SET sc = sc + 1, c = c + 1 WHERE k = 1 AND ck = 1");
    h.ok("UPDATE s SET c = c + 1 WHERE k = 1 AND ck IN (2, 3)");
    h.ok("UPDATE s SET c = c + 1 WHERE k IN (1, 2) AND ck = 7");
    invalid(
        &mut h,
        "UPDATE s SET c = c + 1 WHERE k = 1 AND ck > 3",
        "Slice restrictions are not supported on the clustering columns in UPDATE statements",
    );
    invalid(
        &mut h,
        "UPDATE s SET c = c + 1 WHERE k = 1",
        "Some clustering keys are missing: ck",
    );
    assert_eq!(
        h.rows("SELECT * FROM s"),
        vec![
            vec![int(1), int(1), big(2), big(1)],
            vec![int(1), int(2), big(2), big(1)],
            vec![int(1), int(3), big(2), big(1)],
            vec![int(1), int(7), big(2), big(1)],
            vec![int(2), int(7), None, big(1)],
        ]
    );
    // Paging reads the same totals.
    let (paged, pages) = common::paged(&mut h, "SELECT c FROM s", 2);
    assert_eq!((paged.len(), pages), (5, 3));
}

#[test]
fn deletions_shadow_counters_which_then_count_from_zero() {
    let mut h = harness();
    h.ok("UPDATE s SET sc = sc + 5, c = c + 5 WHERE k = 1 AND ck = 1");
    h.ok("UPDATE s SET c = c + 5 WHERE k = 1 AND ck = 2");
    h.ok("DELETE c FROM s WHERE k = 1 AND ck = 1");
    h.ok("DELETE FROM s WHERE k = 1 AND ck = 2");
    assert!(h
        .rows("SELECT * FROM s WHERE k = 1 AND ck IN (1, 2)")
        .is_empty());
    assert_eq!(h.rows("SELECT sc FROM s WHERE k = 1"), vec![vec![big(5)]]);
    h.ok("UPDATE s SET c = c + 1 WHERE k = 1 AND ck = 1");
    h.ok("DELETE FROM s WHERE k = 1");
    assert!(h.rows("SELECT * FROM s WHERE k = 1").is_empty());
    h.ok("UPDATE s SET sc = sc + 2, c = c + 3 WHERE k = 1 AND ck = 1");
    assert_eq!(
        h.rows("SELECT * FROM s WHERE k = 1"),
        vec![vec![int(1), int(1), big(2), big(3)]]
    );
}

#[test]
fn what_cassandra_refuses_on_counter_tables() {
    let mut h = harness();
    for (cql, message) in [
        (
            "UPDATE t SET c = 5 WHERE k = 1",
            "Cannot set the value of counter column c (counters can only be incremented/decremented, not set)",
        ),
        (
            "UPDATE t SET c = 5 + c WHERE k = 1",
            "Invalid operation (c = 5 - c) for non list column c",
        ),
        (
            "UPDATE t SET c = c + 'a' WHERE k = 1",
            "Invalid STRING constant (a) for \"c\" of type counter",
        ),
        (
            "UPDATE t SET c = c + 1.5 WHERE k = 1",
            "Invalid FLOAT constant (1.5) for \"c\" of type counter",
        ),
        (
            "UPDATE t SET c = c + null WHERE k = 1",
            "Invalid null value for counter increment/decrement",
        ),
        (
            "UPDATE t SET c = c - -9223372036854775808 WHERE k = 1",
            "The negation of -9223372036854775808 overflows supported counter precision (signed 8 bytes integer)",
        ),
        (
            "INSERT INTO t (k, c) VALUES (2, 3)",
            "INSERT statements are not allowed on counter tables, use UPDATE instead",
        ),
        (
            "INSERT INTO t JSON '{\"k\": 2, \"c\": 3}'",
            "INSERT statements are not allowed on counter tables, use UPDATE instead",
        ),
        (
            "UPDATE t USING TIMESTAMP 5 SET c = c + 1 WHERE k = 1",
            "Cannot provide custom timestamp for counter updates",
        ),
        (
            "UPDATE t USING TTL 5 SET c = c + 1 WHERE k = 1",
            "Cannot provide custom TTL for counter updates",
        ),
        (
            "DELETE FROM t USING TIMESTAMP 5 WHERE k = 1",
            "Cannot provide custom timestamp for counter updates",
        ),
        (
            "UPDATE t SET c = c + 1 WHERE k = 1 IF EXISTS",
            "Conditional updates are not supported on counter tables",
        ),
        (
            "UPDATE t SET c = c + 1 WHERE k = 1 IF c = 1",
            "Conditions on counters are not supported",
        ),
        (
            "DELETE FROM t WHERE k = 1 IF EXISTS",
            "Conditional updates are not supported on counter tables",
        ),
        (
            "UPDATE n SET v = v + 1 WHERE k = 1",
            "Invalid operation (v = v + 1) for non counter column v",
        ),
        (
            "UPDATE n SET v += 1 WHERE k = 1",
            "Invalid operation (v = v + 1) for non counter column v",
        ),
    ] {
        invalid(&mut h, cql, message);
    }
    for (cl, cql, message) in [
        (
            Consistency::Any,
            "UPDATE t SET c = c + 1 WHERE k = 1",
            "Consistency level ANY is not yet supported for counter table t",
        ),
        (
            Consistency::Any,
            "DELETE FROM t WHERE k = 1",
            "Consistency level ANY is not yet supported for counter table t",
        ),
        (
            Consistency::Serial,
            "UPDATE t SET c = c + 1 WHERE k = 1",
            "Counter operations are inherently non-serializable",
        ),
    ] {
        let e = h.query_with(cql, QueryParameters::new(cl)).unwrap_err();
        assert_eq!(e.message, message, "{cql}");
    }
    // Refused at PREPARE too.
    match h.request(Request::Prepare(Prepare {
        query: "INSERT INTO t (k, c) VALUES (?, ?)".to_owned(),
        keyspace: None,
    })) {
        Response::Error(e) => assert_eq!(
            e.message,
            "INSERT statements are not allowed on counter tables, use UPDATE instead"
        ),
        other => panic!("{other:?}"),
    }
    assert!(h.rows("SELECT * FROM t").is_empty());
}

#[test]
fn batches_of_counters() {
    let mut h = harness();
    h.ok("BEGIN COUNTER BATCH UPDATE t SET c = c + 1 WHERE k = 1; UPDATE t SET c = c + 1 WHERE k = 1; UPDATE s SET c = c + 2 WHERE k = 9 AND ck = 9 APPLY BATCH");
    h.ok("BEGIN UNLOGGED BATCH UPDATE t SET c = c + 1 WHERE k = 1 APPLY BATCH");
    assert_eq!(h.rows("SELECT c FROM t WHERE k = 1"), vec![vec![big(3)]]);
    assert_eq!(h.rows("SELECT c FROM s WHERE k = 9"), vec![vec![big(2)]]);
    h.ok("BEGIN COUNTER BATCH DELETE FROM t WHERE k = 1 APPLY BATCH");
    assert!(h.rows("SELECT c FROM t WHERE k = 1").is_empty());
    for (cql, message) in [
        (
            "BEGIN BATCH UPDATE t SET c = c + 1 WHERE k = 1 APPLY BATCH",
            "Cannot include a counter statement in a logged batch",
        ),
        (
            "BEGIN BATCH DELETE FROM t WHERE k = 1 APPLY BATCH",
            "Cannot include a counter statement in a logged batch",
        ),
        (
            "BEGIN UNLOGGED BATCH UPDATE t SET c = c + 1 WHERE k = 1; UPDATE n SET v = 1 WHERE k = 1 APPLY BATCH",
            "Counter and non-counter mutations cannot exist in the same batch",
        ),
        (
            "BEGIN COUNTER BATCH UPDATE n SET v = 1 WHERE k = 1 APPLY BATCH",
            "Cannot include non-counter statement in a counter batch",
        ),
        (
            "BEGIN COUNTER BATCH USING TIMESTAMP 5 UPDATE t SET c = c + 1 WHERE k = 1 APPLY BATCH",
            "Cannot provide custom timestamp for counter BATCH",
        ),
        (
            "BEGIN UNLOGGED BATCH USING TIMESTAMP 5 UPDATE t SET c = c + 1 WHERE k = 1 APPLY BATCH",
            "Cannot provide custom timestamp for a BATCH containing counters",
        ),
        (
            "BEGIN COUNTER BATCH UPDATE t SET c = c + 1 WHERE k = 1 IF EXISTS APPLY BATCH",
            "Conditional updates are not supported on counter tables",
        ),
    ] {
        invalid(&mut h, cql, message);
    }
}

#[test]
fn prepared_increments_and_batch_messages() {
    let mut h = harness();
    let update = "UPDATE t SET c = c + ?, d -= :x WHERE k = ?";
    let p = h.prepare(update);
    let markers: Vec<(&str, &ColumnType)> = p
        .metadata
        .columns
        .iter()
        .map(|c| (c.name.as_str(), &c.ty))
        .collect();
    let int_type = ColumnType::Native(mosaic_types::CqlType::Int);
    assert_eq!(
        markers,
        [
            ("c", &ColumnType::Counter),
            ("x", &ColumnType::Counter),
            ("k", &int_type)
        ]
    );
    let execute = |h: &mut Harness, vs: BoundValues| {
        h.request(Request::Execute(Execute {
            id: p.id.clone(),
            result_metadata_id: None,
            params: {
                let mut params = QueryParameters::new(Consistency::One);
                params.values = vs;
                params
            },
        }))
    };
    let r = execute(
        &mut h,
        values(&[CqlValue::BigInt(3), CqlValue::BigInt(1), CqlValue::Int(1)]),
    );
    assert!(matches!(r, Response::Result(ResultBody::Void)), "{r:?}");
    // An unset increment changes nothing; a null one is refused.
    let bigint = |n: i64| Value::Bytes(Bytes::from(n.to_be_bytes().to_vec()));
    let int = |n: i32| Value::Bytes(Bytes::from(n.to_be_bytes().to_vec()));
    let r = execute(
        &mut h,
        BoundValues::Positional(vec![Value::Unset, bigint(1), int(1)]),
    );
    assert!(matches!(r, Response::Result(ResultBody::Void)), "{r:?}");
    match execute(
        &mut h,
        BoundValues::Positional(vec![Value::Null, bigint(1), int(1)]),
    ) {
        Response::Error(e) => assert_eq!(e.message, "Invalid null value for counter increment"),
        other => panic!("{other:?}"),
    }
    assert_eq!(
        h.rows("SELECT c, d FROM t WHERE k = 1"),
        vec![vec![big(3), big(-2)]]
    );
    let batch = |batch_type, statements: Vec<(BatchQuery, BoundValues)>| {
        Request::Batch(Batch {
            batch_type,
            statements: statements
                .into_iter()
                .map(|(query, values)| BatchStatement { query, values })
                .collect(),
            consistency: Consistency::One,
            serial_consistency: None,
            timestamp: Some(1),
            keyspace: None,
            now_in_seconds: None,
        })
    };
    let prepared = || {
        (
            BatchQuery::Prepared(p.id.clone()),
            values(&[CqlValue::BigInt(1), CqlValue::BigInt(1), CqlValue::Int(2)]),
        )
    };
    let query = |q: &str| {
        (
            BatchQuery::Query(q.to_owned()),
            BoundValues::Positional(vec![]),
        )
    };
    let r = h.request(batch(
        BatchType::Counter,
        vec![prepared(), query("UPDATE t SET c = c + 10 WHERE k = 2")],
    ));
    assert!(matches!(r, Response::Result(ResultBody::Void)), "{r:?}");
    let r = h.request(batch(BatchType::Unlogged, vec![prepared()]));
    assert!(matches!(r, Response::Result(ResultBody::Void)), "{r:?}");
    assert_eq!(
        h.rows("SELECT c, d FROM t WHERE k = 2"),
        vec![vec![big(12), big(-2)]]
    );
    for (kind, statements, message) in [
        (
            BatchType::Logged,
            vec![prepared()],
            "Cannot include a counter statement in a logged batch",
        ),
        (
            BatchType::Counter,
            vec![query("UPDATE n SET v = 1 WHERE k = 1")],
            "Cannot include non-counter statement in a counter batch",
        ),
        (
            BatchType::Unlogged,
            vec![prepared(), query("UPDATE n SET v = 1 WHERE k = 1")],
            "Counter and non-counter mutations cannot exist in the same batch",
        ),
    ] {
        match h.request(batch(kind, statements)) {
            Response::Error(e) => assert_eq!(e.message, message),
            other => panic!("{other:?}"),
        }
    }
}
