//! System tables through the whole statement layer, as drivers use them: CQL text,
//! PREPARE and EXECUTE with bound values, against a schema built with DDL.

mod common;

use bytes::Bytes;
use common::Harness;
use mosaic_cql::coordinator::Coordinator;
use mosaic_cql::frame::{
    BoundValues, ColumnType, Consistency, ErrorKind, Execute, Prepare, QueryParameters, Request,
    Response, ResultBody, Rows, Value,
};
use mosaic_types::CqlType;

fn rows(result: ResultBody) -> Rows {
    match result {
        ResultBody::Rows(rows) => rows,
        other => panic!("expected rows, got {other:?}"),
    }
}

fn column<'r>(rows: &'r Rows, row: usize, name: &str) -> Option<&'r Bytes> {
    let i = rows
        .metadata
        .columns
        .iter()
        .position(|c| c.name == name)
        .unwrap_or_else(|| panic!("no column {name}"));
    rows.rows[row][i].as_ref()
}

fn text(b: Option<&Bytes>) -> String {
    String::from_utf8(b.expect("not null").to_vec()).expect("UTF-8")
}

/// Serialized `list<text>`, as a driver binds `IN ?`.
fn text_list(items: &[&str]) -> Bytes {
    let mut out = Vec::new();
    out.extend_from_slice(&(items.len() as i32).to_be_bytes());
    for item in items {
        out.extend_from_slice(&(item.len() as i32).to_be_bytes());
        out.extend_from_slice(item.as_bytes());
    }
    Bytes::from(out)
}

fn harness() -> Harness {
    let mut h = Harness::with_keyspace();
    h.ok("CREATE TABLE events (day text, at timestamp, id uuid, body blob, tag text STATIC, PRIMARY KEY ((day), at, id)) WITH CLUSTERING ORDER BY (at DESC, id ASC) AND comment = 'event log' AND default_time_to_live = 3600 AND compaction = {'class': 'LeveledCompactionStrategy'}");
    h.ok("CREATE TABLE kv (k int PRIMARY KEY, v text)");
    h
}

fn prepare_and_execute(h: &mut Harness, cql: &str, values: Vec<Value>) -> Rows {
    let prepared = match h.request(Request::Prepare(Prepare {
        query: cql.to_owned(),
        keyspace: None,
    })) {
        Response::Result(ResultBody::Prepared(p)) => p,
        other => panic!("{cql}: {other:?}"),
    };
    assert_eq!(prepared.metadata.columns.len(), values.len(), "{cql}");
    let mut params = QueryParameters::new(Consistency::One);
    params.values = BoundValues::Positional(values);
    let result = match h.request(Request::Execute(Execute {
        id: prepared.id.clone(),
        params,
        result_metadata_id: None,
    })) {
        Response::Result(r) => rows(r),
        other => panic!("{cql}: {other:?}"),
    };
    // PREPARE announced the columns EXECUTE returns.
    assert_eq!(
        prepared.result_metadata.columns, result.metadata.columns,
        "{cql}"
    );
    result
}

#[test]
fn tables_created_with_ddl_appear_in_system_schema() {
    let mut h = harness();
    let tables = rows(h.ok(
        "SELECT table_name, comment, default_time_to_live, compaction, extensions FROM system_schema.tables WHERE keyspace_name = 'ks'",
    ));
    let names: Vec<String> = (0..tables.rows.len())
        .map(|i| text(column(&tables, i, "table_name")))
        .collect();
    assert_eq!(names, ["events", "kv"]);
    assert_eq!(text(column(&tables, 0, "comment")), "event log");
    assert_eq!(
        &column(&tables, 0, "default_time_to_live").unwrap()[..],
        &3600i32.to_be_bytes()
    );
    let compaction =
        String::from_utf8_lossy(column(&tables, 0, "compaction").unwrap()).into_owned();
    assert!(
        compaction.contains("org.apache.cassandra.db.compaction.LeveledCompactionStrategy"),
        "{compaction}"
    );
    let extensions =
        String::from_utf8_lossy(column(&tables, 1, "extensions").unwrap()).into_owned();
    assert!(extensions.contains("mosaic.layout") && extensions.contains("uniform"));

    let columns = rows(h.ok(
        "SELECT column_name, kind, position, clustering_order, type FROM system_schema.columns WHERE keyspace_name = 'ks' AND table_name = 'events'",
    ));
    let got: Vec<(String, String, String)> = (0..columns.rows.len())
        .map(|i| {
            (
                text(column(&columns, i, "column_name")),
                text(column(&columns, i, "kind")),
                text(column(&columns, i, "clustering_order")),
            )
        })
        .collect();
    let want = [
        ("at", "clustering", "desc"),
        ("body", "regular", "none"),
        ("day", "partition_key", "none"),
        ("id", "clustering", "asc"),
        ("tag", "static", "none"),
    ];
    assert_eq!(
        got,
        want.map(|(a, b, c)| (a.to_owned(), b.to_owned(), c.to_owned()))
    );
    assert_eq!(
        &column(&columns, 3, "position").unwrap()[..],
        &1i32.to_be_bytes()
    );
    assert_eq!(text(column(&columns, 0, "type")), "timestamp");
}

#[test]
fn prepared_schema_queries_take_bound_values() {
    let mut h = harness();
    let r = prepare_and_execute(
        &mut h,
        "SELECT * FROM system_schema.columns WHERE keyspace_name = ? AND table_name = ?",
        vec![
            Value::Bytes(Bytes::from_static(b"ks")),
            Value::Bytes(Bytes::from_static(b"kv")),
        ],
    );
    assert_eq!(r.rows.len(), 2);
    assert_eq!(text(column(&r, 0, "column_name")), "k");
    assert_eq!(text(column(&r, 1, "column_name")), "v");

    // scylla's keyspace-filtered queries: `IN ?` bound to a list<text>.
    let r = prepare_and_execute(
        &mut h,
        "SELECT keyspace_name, table_name FROM system_schema.tables where keyspace_name in ?",
        vec![Value::Bytes(text_list(&["ks", "system_auth"]))],
    );
    let names: Vec<String> = (0..r.rows.len())
        .map(|i| text(column(&r, i, "table_name")))
        .collect();
    assert_eq!(
        names,
        [
            "events",
            "kv",
            "resource_role_permissons_index",
            "role_members",
            "role_permissions",
            "roles"
        ]
    );
}

#[test]
fn system_local_follows_the_schema_version() {
    let mut h = harness();
    let local = rows(h.ok("SELECT schema_version, tokens FROM system.local WHERE key = 'local'"));
    assert_eq!(
        &column(&local, 0, "schema_version").unwrap()[..],
        &h.coordinator.catalog().version.0
    );
    assert_eq!(
        local.metadata.columns[1].ty,
        ColumnType::Set(Box::new(CqlType::Text.into()))
    );
    let before = h.coordinator.catalog().version;
    h.ok("DROP TABLE kv");
    let local = rows(h.ok("SELECT schema_version FROM system.local WHERE key = 'local'"));
    assert_ne!(before, h.coordinator.catalog().version);
    assert_eq!(
        &column(&local, 0, "schema_version").unwrap()[..],
        &h.coordinator.catalog().version.0
    );
    // Unqualified names resolve against the current keyspace, which is a user one here.
    h.ok("USE system");
    let local = rows(h.ok("SELECT key FROM local"));
    assert_eq!(text(column(&local, 0, "key")), "local");
}

#[test]
fn unknown_system_tables_answer_unconfigured_table() {
    let mut h = harness();
    for cql in [
        "SELECT * FROM system.peers_v3",
        "SELECT keyspace_name, table_name, partitioner FROM system_schema.scylla_tables",
        "SELECT * from system_virtual_schema.views",
    ] {
        let e = h.err(cql);
        assert_eq!(e.kind, ErrorKind::Invalid, "{cql}");
        assert!(
            e.message.starts_with("unconfigured table"),
            "{cql}: {}",
            e.message
        );
        match h.request(Request::Prepare(Prepare {
            query: cql.to_owned(),
            keyspace: None,
        })) {
            Response::Error(e) => assert_eq!(e.kind, ErrorKind::Invalid, "{cql}"),
            other => panic!("{cql}: {other:?}"),
        }
    }
}
