//! Scenario: realistic CQL from drivers, cqlsh users, YCSB and schema scripts parses into
//! the expected statements, and what Mosaic refuses is refused with the right error class.
#![allow(clippy::disallowed_methods)] // Tests run real threads and measure real time; the seam binds the code under test.

use mosaic_cql::ast::*;
use mosaic_cql::parse::{parse_statement, parse_statements, Feature, ParseError};

fn parse(text: &str) -> Statement {
    match parse_statement(text) {
        Ok(s) => s,
        Err(e) => panic!("{text:?} should parse: {e}"),
    }
}

fn round_trip(text: &str) {
    let first = parse(text);
    let printed = first.to_string();
    match parse_statement(&printed) {
        Ok(second) => assert_eq!(first, second, "{text:?} printed as {printed:?}"),
        Err(e) => panic!("{text:?} printed as {printed:?}, which fails: {e}"),
    }
}

/// Queries the drivers send on their own at connect, on topology refresh and on schema
/// refresh, copied from their sources (Python `cassandra-driver` `cluster.py`/`metadata.py`,
/// Rust `scylla` `metadata/fetching.rs`/`session.rs`, Java driver 3.x `ControlConnection`,
/// and the C/C++ and C# drivers' schema-agreement checks).
const DRIVER_QUERIES: &[&str] = &[
    // Python cassandra-driver: control connection.
    "SELECT * FROM system.peers",
    "SELECT host_id, peer, data_center, rack, rpc_address, rpc_address, release_version, schema_version FROM system.peers",
    "SELECT host_id, peer, data_center, rack, rpc_address, native_transport_address, release_version, schema_version FROM system.peers",
    "SELECT * FROM system.local WHERE key='local'",
    "SELECT host_id, cluster_name, data_center, rack, partitioner, release_version, schema_version FROM system.local WHERE key='local'",
    "SELECT rpc_address FROM system.local WHERE key='local'",
    "SELECT peer, host_id, rpc_address, schema_version FROM system.peers",
    "SELECT peer, host_id, native_transport_address, schema_version FROM system.peers",
    "SELECT schema_version FROM system.local WHERE key='local'",
    "SELECT * FROM system.peers_v2",
    "SELECT host_id, peer, peer_port, data_center, rack, native_address, native_port, release_version, schema_version FROM system.peers_v2",
    "SELECT host_id, peer, peer_port, native_address, native_port, schema_version FROM system.peers_v2",
    // Python cassandra-driver: schema parser for 3.0+ and 4.0+, whole and per object.
    "SELECT * FROM system_schema.keyspaces",
    "SELECT * FROM system_schema.tables",
    "SELECT * FROM system_schema.columns",
    "SELECT * FROM system_schema.indexes",
    "SELECT * FROM system_schema.triggers",
    "SELECT * FROM system_schema.types",
    "SELECT * FROM system_schema.functions",
    "SELECT * FROM system_schema.aggregates",
    "SELECT * FROM system_schema.views",
    "SELECT * from system_virtual_schema.keyspaces",
    "SELECT * from system_virtual_schema.tables",
    "SELECT * from system_virtual_schema.columns",
    "SELECT * FROM system_schema.keyspaces WHERE keyspace_name = 'x'",
    "SELECT * FROM system_schema.tables WHERE keyspace_name = 'ycsb' AND table_name = 'usertable'",
    "SELECT * FROM system_schema.columns WHERE keyspace_name = 'ycsb' AND table_name = 'usertable'",
    "SELECT * FROM system_schema.views WHERE keyspace_name = 'ks' AND view_name = 'v'",
    "SELECT * FROM system_schema.types WHERE keyspace_name = 'ks' AND type_name = 'address'",
    // Older Python driver releases, Java driver 3.x.
    "SELECT keyspace_name, table_name, column_name, clustering_order, column_name_bytes, kind, position, type FROM system_schema.columns",
    "SELECT peer, data_center, host_id, preferred_ip, rack, release_version, rpc_address, schema_version, tokens FROM system.peers",
    "SELECT peer, rpc_address, schema_version FROM system.peers",
    "SELECT peer, data_center, rack, release_version, rpc_address, tokens FROM system.peers",
    "SELECT data_center, rack, release_version FROM system.local WHERE key='local'",
    // Rust scylla driver.
    "SELECT host_id, rpc_address, data_center, rack, tokens FROM system.peers",
    "SELECT host_id, rpc_address, data_center, rack, tokens, cluster_name FROM system.local WHERE key='local'",
    "SELECT host_id FROM system.local",
    "SELECT host_id FROM system.local WHERE key='local'",
    "SELECT keyspace_name, replication, durable_writes FROM system_schema.keyspaces",
    "SELECT keyspace_name, replication, durable_writes FROM system_schema.keyspaces where keyspace_name in ?",
    "SELECT keyspace_name, type_name, field_names, field_types FROM system_schema.types",
    "SELECT keyspace_name, table_name FROM system_schema.tables",
    "SELECT keyspace_name, table_name FROM system_schema.tables where keyspace_name in ?",
    "SELECT keyspace_name, view_name, base_table_name FROM system_schema.views",
    "SELECT keyspace_name, table_name, column_name, kind, position, type FROM system_schema.columns",
    "SELECT keyspace_name, table_name, partitioner FROM system_schema.scylla_tables",
    "SELECT keyspace_name, initial_tablets FROM system_schema.scylla_keyspaces",
    "SELECT connection_id, host_id, address, port, tls_port FROM system.client_routes WHERE connection_id IN ? AND host_id IN ?",
    "SELECT connection_id, host_id, address, port, tls_port FROM system.client_routes WHERE host_id IN ? ALLOW FILTERING",
    "USE \"ycsb\"",
    "USE ycsb",
];

#[test]
fn every_query_drivers_send_by_themselves_parses() {
    for q in DRIVER_QUERIES {
        let s = parse(q);
        // The scylla driver and functions query bind the list with IN ?; the rest bind nothing.
        if !q.contains('?') {
            assert!(s.bind_markers().is_empty(), "{q}");
        }
        round_trip(q);
    }
}

#[test]
fn function_argument_list_literal_parses() {
    // Drivers send this for schema refreshes of functions.
    let q = "SELECT * FROM system_schema.functions WHERE keyspace_name = 'ks' AND argument_types = ['int']";
    parse_statement(q).expect("a list literal");
}

#[test]
fn ycsb_workload_statements() {
    let statements = [
        "CREATE KEYSPACE ycsb WITH REPLICATION = {'class' : 'SimpleStrategy', 'replication_factor': 3 }",
        "CREATE TABLE ycsb.usertable (y_id varchar primary key, field0 varchar, field1 varchar, field2 varchar, field3 varchar, field4 varchar, field5 varchar, field6 varchar, field7 varchar, field8 varchar, field9 varchar)",
        "INSERT INTO usertable (y_id,field0,field1,field2,field3,field4,field5,field6,field7,field8,field9) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
        "SELECT * FROM usertable WHERE y_id = ? LIMIT 1",
        "SELECT field0,field3 FROM usertable WHERE y_id = ? LIMIT 1",
        "SELECT * FROM usertable WHERE token(y_id) >= token(?) LIMIT ?",
        "UPDATE usertable SET field4 = ? WHERE y_id = ?",
        "DELETE FROM usertable WHERE y_id = ?",
    ];
    for s in statements {
        round_trip(s);
    }
    assert_eq!(parse(statements[2]).bind_markers().len(), 11);
}

#[test]
fn cqlsh_style_script_with_comments_and_mixed_case() {
    let script = r#"
        -- schema for the demo
        CREATE KEYSPACE IF NOT EXISTS demo
          WITH replication = {'class': 'NetworkTopologyStrategy', 'dc1': '3', 'dc2': 2}
          AND durable_writes = false;
        use Demo;
        /* the events table:
           one partition per sensor and day */
        create table if not exists demo."Events" (
            sensor uuid,
            day date,
            at timestamp,
            "Value" double,
            note text static,   // per-partition note
            primary key ((sensor, day), at)
        ) with clustering order by (at desc)
          and compaction = {'class': 'LeveledCompactionStrategy'}
          and layout = 'erasure'
          and default_time_to_live = 86400;
        Insert Into demo."Events" (sensor, day, at, "Value")
          Values (5a1c395e-b41f-11e5-9f22-ba0be0483c18, '2026-01-02', '2026-01-02 10:00:00+0000', -1.5e-3)
          Using TTL 3600;
        SELECT sensor, max("Value") AS peak FROM demo."Events"
          WHERE sensor = 5a1c395e-b41f-11e5-9f22-ba0be0483c18 AND day = '2026-01-02'
            AND at > '2026-01-02' AND at <= '2026-01-03' ORDER BY at ASC;
        SELECT * FROM demo."Events" WHERE (sensor, day) IN ((5a1c395e-b41f-11e5-9f22-ba0be0483c18, '2026-01-02')) ALLOW FILTERING;
        TRUNCATE demo."Events";
        DROP TABLE demo."Events";
        DROP KEYSPACE demo;
    "#;
    let statements = parse_statements(script).expect("script parses");
    assert_eq!(statements.len(), 9);
    let Some(Statement::CreateTable(t)) = statements.get(2) else {
        panic!("create table")
    };
    assert_eq!(t.name.name.as_str(), "Events");
    assert_eq!(
        t.columns
            .iter()
            .map(|c| c.name.as_str())
            .collect::<Vec<_>>(),
        ["sensor", "day", "at", "Value", "note"]
    );
    assert_eq!(
        t.primary_key.partition_key,
        [Ident::new("sensor"), Ident::new("day")]
    );
    assert_eq!(
        find_property(&t.properties, "layout"),
        Some(&PropertyValue::Constant(Literal::String("erasure".into())))
    );
    assert!(matches!(statements.get(1), Some(Statement::Use(u)) if u.keyspace.as_str() == "demo"));
    for s in &statements {
        let printed = s.to_string();
        assert_eq!(parse_statement(&printed).as_ref(), Ok(s), "{printed}");
    }
}

#[test]
fn every_statement_kind_round_trips() {
    for text in [
        "USE ks",
        "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
        "CREATE SCHEMA ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
        "ALTER KEYSPACE ks WITH durable_writes = true",
        "DROP KEYSPACE ks",
        "CREATE TABLE t (k bigint PRIMARY KEY, v blob)",
        "CREATE COLUMNFAMILY t (k int, c1 int, c2 smallint, v tinyint, PRIMARY KEY (k, c1, c2))",
        "ALTER TABLE t ADD v2 varint",
        "ALTER TABLE t WITH gc_grace_seconds = 10 AND comment = ''",
        "DROP TABLE t",
        "TRUNCATE TABLE t",
        "INSERT INTO t (k, v) VALUES (1, 0xff) USING TTL 10 AND TIMESTAMP 1234567890123456",
        "UPDATE t USING TTL ? SET v = ?, w = NULL WHERE k = ? AND c IN (1, 2)",
        "DELETE v FROM t WHERE k = 1 AND (c1, c2) >= (1, 2) AND (c1, c2) < (3, 4)",
        "SELECT DISTINCT k FROM t WHERE token(k) > -9223372036854775808 AND token(k) <= 0",
        "SELECT k, avg(v), min(v), max(v), sum(v) FROM t WHERE k = 1 GROUP BY k",
        "SELECT * FROM t WHERE k = :k PER PARTITION LIMIT :n LIMIT 5",
        "BEGIN BATCH INSERT INTO t (k) VALUES (1) UPDATE t SET v = 2 WHERE k = 1 APPLY BATCH",
        "BEGIN UNLOGGED BATCH DELETE FROM t WHERE k = 1; APPLY BATCH",
    ] {
        round_trip(text);
    }
}

#[test]
fn literal_kinds_keep_their_lexical_kind() {
    let Statement::Insert(ins) = parse(
        "INSERT INTO t (a, b, c, d, e, f, g) VALUES ('x', 18446744073709551616, 3., 0X0a, \
         F0E1D2C3-B4A5-9687-7869-5A4B3C2D1E0F, uuid(), toTimestamp(now()))",
    ) else {
        panic!("insert")
    };
    assert_eq!(
        ins.values,
        vec![
            Term::Literal(Literal::String("x".into())),
            Term::Literal(Literal::Integer("18446744073709551616".into())),
            Term::Literal(Literal::Float("3.".into())),
            Term::Literal(Literal::Blob(vec![10])),
            Term::Literal(Literal::Uuid(0xf0e1d2c3_b4a5_9687_7869_5a4b3c2d1e0f)),
            Term::Call {
                name: Ident::new("uuid"),
                args: vec![]
            },
            Term::Call {
                name: Ident::new("totimestamp"),
                args: vec![Term::Call {
                    name: Ident::new("now"),
                    args: vec![]
                }]
            },
        ]
    );
}

#[test]
fn errors_carry_positions_and_classes() {
    let cases: &[(&str, u32, u32, &str)] = &[
        (
            "SELECT * FRM t",
            1,
            9,
            "mismatched input 'FRM' expecting K_FROM",
        ),
        (
            "INSERT INTO t (a) VALUE (1)",
            1,
            18,
            "mismatched input 'VALUE' expecting K_VALUES",
        ),
        (
            "SELECT a,\n  FROM t",
            2,
            2,
            "no viable alternative at input 'FROM'",
        ),
        (
            "SELECT * FROM t WHERE k = 'unterminated",
            1,
            39,
            "mismatched character '<EOF>'",
        ),
        ("UPDATE t SET v = 1", 1, 18, "expecting K_WHERE"),
        ("SELECT * FROM t LIMIT 'x'", 1, 22, "expecting INTEGER"),
        (
            "CREATE TABLE t (k int PRIMARY KEY) WITH CLUSTERING ORDER BY (c)",
            1,
            62,
            "K_ASC or K_DESC",
        ),
        (
            "DELETE FROM t USING TTL 1 WHERE k = 1",
            1,
            20,
            "only USING TIMESTAMP",
        ),
    ];
    for (text, line, column, message) in cases {
        let e = parse_statement(text).expect_err(text);
        assert_eq!((e.line(), e.column()), (*line, *column), "{text}: {e}");
        assert!(e.message().contains(message), "{text}: {e}");
    }
    let e = parse_statement("INSERT INTO t (a, b) VALUES (1)").expect_err("unmatched");
    assert!(matches!(e, ParseError::Invalid { .. }));
    assert_eq!(e.to_string(), "Unmatched column names/values");
}

#[test]
fn unsupported_statements_name_the_feature() {
    let e = parse_statement(
        "CREATE MATERIALIZED VIEW mv AS SELECT * FROM t WHERE k IS NOT NULL PRIMARY KEY (k)",
    )
    .expect_err("mv");
    assert_eq!(e.feature(), Some(Feature::MaterializedView));
    let e = parse_statement("SELECT CAST(k AS counter) FROM t").expect_err("counter");
    assert_eq!(e.feature(), Some(Feature::Counter));
    assert_eq!(
        e.to_string(),
        "Mosaic does not support counters: type counter"
    );
}

#[test]
fn typical_insert_parses_in_microseconds() {
    let q = "INSERT INTO ycsb.usertable (y_id, field0, field1, field2, field3, field4, field5, \
             field6, field7, field8) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)";
    // Warm up, then time many parses; the bound is loose (debug builds, shared machines)
    // and only catches accidental quadratic behaviour or heavy allocation.
    for _ in 0..100 {
        parse(q);
    }
    let n = 2_000;
    let start = std::time::Instant::now();
    for _ in 0..n {
        parse(q);
    }
    let per_parse = start.elapsed() / n;
    eprintln!("typical 10-marker INSERT: {per_parse:?} per parse");
    assert!(
        per_parse < std::time::Duration::from_micros(200),
        "{per_parse:?} per parse"
    );
}

#[test]
fn large_inputs_parse_in_linear_time() {
    let values = vec!["?"; 20_000].join(", ");
    let columns: Vec<String> = (0..20_000).map(|i| format!("c{i}")).collect();
    let q = format!("INSERT INTO t ({}) VALUES ({values})", columns.join(", "));
    let start = std::time::Instant::now();
    assert_eq!(parse(&q).bind_markers().len(), 20_000);
    assert!(start.elapsed() < std::time::Duration::from_secs(2));
    let many = format!(
        "SELECT * FROM t WHERE k IN ({})",
        vec!["?"; 70_000].join(",")
    );
    let e = parse_statement(&many).expect_err("too many markers");
    assert!(matches!(e, ParseError::Invalid { .. }), "{e}");
}
