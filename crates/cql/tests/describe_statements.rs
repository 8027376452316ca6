//! `DESCRIBE` through the processor over an in-memory coordinator: what cqlsh 6 (which
//! only describes server-side) receives, as Cassandra 4.0 answers it, and the round trip
//! of the CREATE statements it prints.

mod common;

use std::collections::BTreeMap;

use bytes::Bytes;
use common::{text, Harness};
use mosaic_cql::coordinator::Coordinator;
use mosaic_cql::frame::{
    error_code, ColumnType, Consistency, Prepare, QueryParameters, Request, Response, ResultBody,
};
use mosaic_cql::schema::TableMeta;
use mosaic_types::CqlValue;

/// The text cells of a DESCRIBE result, row by row.
fn described(h: &mut Harness, cql: &str) -> Vec<Vec<String>> {
    h.rows(cql)
        .into_iter()
        .map(|row| {
            row.into_iter()
                .map(|c| match c {
                    Some(CqlValue::Text(s)) => s,
                    other => panic!("{cql}: not text: {other:?}"),
                })
                .collect()
        })
        .collect()
}

/// The result column names of a statement.
fn column_names(h: &mut Harness, cql: &str) -> Vec<String> {
    match h.ok(cql) {
        ResultBody::Rows(rows) => rows
            .metadata
            .columns
            .iter()
            .map(|c| c.name.clone())
            .collect(),
        other => panic!("{cql}: expected rows, got {other:?}"),
    }
}

/// The create statement of the only row of a DESCRIBE.
fn create_statement(h: &mut Harness, cql: &str) -> String {
    let rows = described(h, cql);
    assert_eq!(rows.len(), 1, "{cql}: {rows:?}");
    rows[0][3].clone()
}

fn table(h: &Harness, keyspace: &str, name: &str) -> TableMeta {
    h.coordinator
        .catalog()
        .table(keyspace, name)
        .map(|t| TableMeta::clone(t))
        .unwrap_or_else(|| panic!("{keyspace}.{name} exists"))
}

#[test]
fn describe_table_prints_cassandra_4_create_statements() {
    let mut h = Harness::with_keyspace();
    h.ok("CREATE TABLE events (day date, kind text, at timestamp, id timeuuid, region text static, payload blob, \"Count\" bigint, PRIMARY KEY ((day, kind), at, id)) WITH CLUSTERING ORDER BY (at DESC, id ASC) AND comment = 'it''s a log' AND default_time_to_live = 3600 AND gc_grace_seconds = 7200 AND compaction = {'class': 'LeveledCompactionStrategy', 'sstable_size_in_mb': 160}");
    let rows = described(&mut h, "DESCRIBE TABLE events");
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0][..3], ["ks", "table", "events"]);
    assert_eq!(
        rows[0][3],
        "CREATE TABLE ks.events (
    day date,
    kind text,
    at timestamp,
    id timeuuid,
    region text static,
    \"Count\" bigint,
    payload blob,
    PRIMARY KEY ((day, kind), at, id)
) WITH CLUSTERING ORDER BY (at DESC, id ASC)
    AND additional_write_policy = '99p'
    AND bloom_filter_fp_chance = 0.1
    AND caching = {'keys': 'ALL', 'rows_per_partition': 'NONE'}
    AND cdc = false
    AND comment = 'it''s a log'
    AND compaction = {'class': 'org.apache.cassandra.db.compaction.LeveledCompactionStrategy', 'max_threshold': '32', 'min_threshold': '4', 'sstable_size_in_mb': '160'}
    AND compression = {'chunk_length_in_kb': '16', 'class': 'org.apache.cassandra.io.compress.LZ4Compressor'}
    AND crc_check_chance = 1.0
    AND default_time_to_live = 3600
    AND extensions = {'mosaic.layout': 0x756e69666f726d}
    AND gc_grace_seconds = 7200
    AND max_index_interval = 2048
    AND memtable_flush_period_in_ms = 0
    AND min_index_interval = 128
    AND read_repair = 'BLOCKING'
    AND speculative_retry = '99p';"
    );
    h.ok("CREATE TABLE kv (k int PRIMARY KEY, v text)");
    let text = create_statement(&mut h, "DESC ks.kv");
    assert!(
        text.starts_with("CREATE TABLE ks.kv (\n    k int PRIMARY KEY,\n    v text\n) WITH additional_write_policy = '99p'\n"),
        "{text}"
    );
    // WITH INTERNALS adds the table id Cassandra needs to restore data into a copy.
    let id = table(&h, "ks", "kv").id;
    let text = create_statement(&mut h, "DESCRIBE TABLE kv WITH INTERNALS");
    assert!(
        text.contains(&format!(
            "\n) WITH ID = {id}\n    AND additional_write_policy"
        )),
        "{text}"
    );
}

#[test]
fn create_statements_read_back_into_identical_tables() {
    let mut h = Harness::with_keyspace();
    let tables = [
        ("kv", "CREATE TABLE kv (k int PRIMARY KEY, v text)"),
        ("wide", "CREATE TABLE wide (a bigint, b smallint, c tinyint, d double, e float, f boolean, g uuid, h varint, i decimal, j ascii, k varchar, PRIMARY KEY ((a, b), c, d)) WITH CLUSTERING ORDER BY (c DESC, d DESC)"),
        ("\"MixedCase\"", "CREATE TABLE \"MixedCase\" (\"Key\" int, \"select\" text, s int STATIC, v blob, PRIMARY KEY (\"Key\", \"select\")) WITH layout = 'uniform'"),
        ("tuned", "CREATE TABLE tuned (k int PRIMARY KEY, v int) WITH comment = 'q''uote' AND default_time_to_live = 60 AND gc_grace_seconds = 10 AND bloom_filter_fp_chance = 0.02 AND caching = {'keys': 'NONE', 'rows_per_partition': '10'} AND cdc = true AND compaction = {'class': 'SizeTieredCompactionStrategy', 'min_threshold': 2} AND compression = {'enabled': false} AND crc_check_chance = 0.5 AND max_index_interval = 4096 AND memtable_flush_period_in_ms = 1000 AND min_index_interval = 64 AND speculative_retry = '95PERCENTILE' AND additional_write_policy = 'NEVER' AND read_repair = 'NONE' AND extensions = {'other.ext': 0x0102}"),
    ];
    for (name, create) in tables {
        h.ok(create);
        let bare = name.trim_matches('"');
        let before = table(&h, "ks", bare);
        let text = create_statement(&mut h, &format!("DESCRIBE TABLE ks.{name}"));
        h.ok(&format!("DROP TABLE ks.{name}"));
        h.ok(&text);
        let after = table(&h, "ks", bare);
        assert_ne!(after.id, before.id, "a new table");
        assert_eq!(after.columns, before.columns, "{text}");
        assert_eq!(after.params, before.params, "{text}");
        assert_eq!(after.next_column_id, before.next_column_id, "{text}");
        assert_eq!(
            create_statement(&mut h, &format!("DESCRIBE TABLE ks.{name}")),
            text,
            "the description is stable"
        );
    }
    // A table altered after creation describes as its current shape.
    h.ok("ALTER TABLE kv ADD w int");
    h.ok("ALTER TABLE kv DROP v");
    let text = create_statement(&mut h, "DESCRIBE TABLE kv");
    assert!(
        text.starts_with("CREATE TABLE ks.kv (\n    k int PRIMARY KEY,\n    w int\n)"),
        "{text}"
    );
}

#[test]
fn keyspaces_describe_with_their_tables_in_name_order() {
    let mut h = Harness::new();
    h.ok("CREATE KEYSPACE ks WITH replication = {'class': 'NetworkTopologyStrategy', 'dc1': 3} AND durable_writes = false");
    h.ok("CREATE TABLE ks.b (k int PRIMARY KEY)");
    h.ok("CREATE TABLE ks.a (k int PRIMARY KEY)");
    let rows = described(&mut h, "DESCRIBE KEYSPACE ks");
    let kinds: Vec<(&str, &str)> = rows
        .iter()
        .map(|r| (r[1].as_str(), r[2].as_str()))
        .collect();
    assert_eq!(kinds, [("keyspace", "ks"), ("table", "a"), ("table", "b")]);
    assert_eq!(
        rows[0][3],
        "CREATE KEYSPACE ks WITH replication = {'class': 'NetworkTopologyStrategy', 'dc1': '3'}  AND durable_writes = false;"
    );
    assert!(rows[1][3].starts_with("CREATE TABLE ks.a ("));
    // The keyspace statement reads back.
    h.ok("DROP KEYSPACE ks");
    h.ok(&rows[0][3]);
    assert_eq!(described(&mut h, "DESCRIBE ONLY KEYSPACE ks"), rows[..1]);

    // ONLY, the current keyspace, and a bare keyspace name.
    h.ok("CREATE TABLE ks.a (k int PRIMARY KEY)");
    assert_eq!(described(&mut h, "DESCRIBE ONLY KEYSPACE ks").len(), 1);
    h.ok("USE ks");
    assert_eq!(described(&mut h, "DESCRIBE KEYSPACE").len(), 2);
    assert_eq!(described(&mut h, "DESCRIBE ks").len(), 2);
    assert_eq!(described(&mut h, "DESC ks.a")[0][..3], ["ks", "table", "a"]);
    assert_eq!(described(&mut h, "DESC a")[0][..3], ["ks", "table", "a"]);
}

#[test]
fn listings_cover_the_current_keyspace_or_all() {
    let mut h = Harness::new();
    h.ok("CREATE KEYSPACE zz WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}");
    h.ok("CREATE KEYSPACE \"Aa\" WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}");
    h.ok("CREATE TABLE zz.t (k int PRIMARY KEY)");
    assert_eq!(
        column_names(&mut h, "DESCRIBE KEYSPACES"),
        ["keyspace_name", "type", "name"]
    );
    let names: Vec<String> = described(&mut h, "DESCRIBE KEYSPACES")
        .into_iter()
        .map(|r| r[2].clone())
        .collect();
    assert_eq!(
        names,
        [
            "\"Aa\"",
            "system",
            "system_auth",
            "system_distributed",
            "system_schema",
            "system_traces",
            "system_virtual_schema",
            "zz"
        ]
    );
    // Without a keyspace in use, every keyspace's tables, system ones included.
    let tables = described(&mut h, "DESCRIBE TABLES");
    assert!(tables.contains(&vec!["zz".into(), "table".into(), "t".into()]));
    assert!(tables.contains(&vec!["system".into(), "table".into(), "local".into()]));
    assert!(tables.contains(&vec![
        "system_virtual_schema".into(),
        "table".into(),
        "columns".into()
    ]));
    h.ok("USE zz");
    assert_eq!(described(&mut h, "DESCRIBE TABLES"), [["zz", "table", "t"]]);
    // Mosaic has no types, functions or aggregates: empty listings.
    for cql in [
        "DESCRIBE TYPES",
        "DESCRIBE FUNCTIONS",
        "DESCRIBE AGGREGATES",
    ] {
        assert!(h.rows(cql).is_empty(), "{cql}");
        assert_eq!(column_names(&mut h, cql), ["keyspace_name", "type", "name"]);
    }
}

#[test]
fn schema_leaves_out_system_keyspaces_unless_full() {
    let mut h = Harness::with_keyspace();
    h.ok("CREATE TABLE t (k int PRIMARY KEY)");
    let rows = described(&mut h, "DESCRIBE SCHEMA");
    let kinds: Vec<(&str, &str, &str)> = rows
        .iter()
        .map(|r| (r[0].as_str(), r[1].as_str(), r[2].as_str()))
        .collect();
    assert_eq!(kinds, [("ks", "keyspace", "ks"), ("ks", "table", "t")]);
    let full = described(&mut h, "DESCRIBE FULL SCHEMA");
    assert!(full.len() > 30);
    assert!(full
        .iter()
        .any(|r| r[0] == "system_schema" && r[2] == "tables"));
    let virtual_ks = full
        .iter()
        .find(|r| r[0] == "system_virtual_schema" && r[1] == "keyspace")
        .map(|r| r[3].clone())
        .unwrap_or_default();
    assert!(
        virtual_ks.starts_with("/*\nWarning: Keyspace system_virtual_schema is a virtual keyspace and cannot be recreated with CQL."),
        "{virtual_ks}"
    );
    // A system table describes like any other.
    let local = create_statement(&mut h, "DESCRIBE TABLE system.local");
    assert!(
        local.starts_with("CREATE TABLE system.local (\n    key text PRIMARY KEY,"),
        "{local}"
    );
}

#[test]
fn errors_are_cassandras() {
    let mut h = Harness::new();
    h.ok("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}");
    h.ok("CREATE TABLE ks.t (k int PRIMARY KEY)");
    for (cql, message) in [
        ("DESCRIBE KEYSPACE nope", "'nope' not found in keyspaces"),
        (
            "DESCRIBE KEYSPACE",
            "No keyspace specified and no current keyspace",
        ),
        (
            "DESCRIBE TABLE t",
            "No keyspace specified and no current keyspace",
        ),
        ("DESCRIBE TABLE nope.t", "'nope' not found in keyspaces"),
        (
            "DESCRIBE TABLE ks.nope",
            "Table 'nope' not found in keyspace 'ks'",
        ),
        ("DESCRIBE nope", "'nope' not found in keyspaces"),
        ("DESCRIBE ks.nope", "'nope' not found in keyspace 'ks'"),
        (
            "DESCRIBE TYPE ks.ty",
            "User defined type 'ty' not found in 'ks'",
        ),
        (
            "DESCRIBE FUNCTION ks.f",
            "User defined function 'f' not found in 'ks'",
        ),
        (
            "DESCRIBE AGGREGATE ks.a",
            "User defined aggregate 'a' not found in 'ks'",
        ),
        (
            "DESCRIBE MATERIALIZED VIEW ks.v",
            "Materialized view 'v' not found in 'ks'",
        ),
        (
            "DESCRIBE INDEX ks.i",
            "Table for existing index 'i' not found in 'ks'",
        ),
        ("DESCRIBE TYPE nope.ty", "'nope' not found in keyspaces"),
    ] {
        let e = h.err(cql);
        assert_eq!(e.kind.code(), error_code::INVALID, "{cql}");
        assert_eq!(e.message, message, "{cql}");
    }
    h.ok("USE ks");
    let e = h.err("DESCRIBE nope");
    assert_eq!(e.message, "'nope' not found in keyspace 'ks'");
    let e = h.err("DESCRIBE TABLES WITH");
    assert_eq!(e.kind.code(), error_code::SYNTAX);
}

#[test]
fn cluster_shows_range_ownership_only_for_a_user_keyspace_in_use() {
    let mut h = Harness::new();
    assert_eq!(
        described(&mut h, "DESCRIBE CLUSTER"),
        [[
            "Test Cluster",
            "Murmur3Partitioner",
            "GossipingPropertyFileSnitch"
        ]]
    );
    h.ok("USE system");
    assert_eq!(column_names(&mut h, "DESCRIBE CLUSTER").len(), 3);
    h.ok("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}");
    h.ok("USE ks");
    let ResultBody::Rows(rows) = h.ok("DESCRIBE CLUSTER") else {
        panic!("DESCRIBE CLUSTER returns rows");
    };
    let names: Vec<&str> = rows
        .metadata
        .columns
        .iter()
        .map(|c| c.name.as_str())
        .collect();
    assert_eq!(
        names,
        ["cluster", "partitioner", "snitch", "range_ownership"]
    );
    assert!(matches!(rows.metadata.columns[3].ty, ColumnType::Map(..)));
    // One range (the in-memory node has the single token 0), replicated on the node:
    // map of 1 entry, key "0", value a list of 1 endpoint.
    let mut expected = Vec::new();
    expected.extend_from_slice(&1i32.to_be_bytes());
    expected.extend_from_slice(&1i32.to_be_bytes());
    expected.extend_from_slice(b"0");
    let endpoint = b"/127.0.0.1:7000";
    let list_len = 4 + 4 + endpoint.len();
    expected.extend_from_slice(&(list_len as i32).to_be_bytes());
    expected.extend_from_slice(&1i32.to_be_bytes());
    expected.extend_from_slice(&(endpoint.len() as i32).to_be_bytes());
    expected.extend_from_slice(endpoint);
    assert_eq!(rows.rows[0][3], Some(Bytes::from(expected)));
}

#[test]
fn results_page_by_offset_and_refuse_a_changed_schema() {
    let mut h = Harness::with_keyspace();
    for name in ["a", "b", "c", "d"] {
        h.ok(&format!("CREATE TABLE {name} (k int PRIMARY KEY)"));
    }
    let all = described(&mut h, "DESCRIBE KEYSPACE ks");
    assert_eq!(all.len(), 5);
    let mut got = Vec::new();
    let mut state: Option<Bytes> = None;
    for _ in 0..10 {
        let mut params = QueryParameters::new(Consistency::One);
        params.page_size = Some(2);
        params.paging_state = state.clone();
        let ResultBody::Rows(rows) = h
            .query_with("DESCRIBE KEYSPACE ks", params)
            .unwrap_or_else(|e| panic!("{e:?}"))
        else {
            panic!("rows");
        };
        assert!(rows.rows.len() <= 2);
        got.extend(common::decode_rows(&rows).into_iter().map(|r| {
            r.into_iter()
                .map(|c| match c {
                    Some(CqlValue::Text(s)) => s,
                    other => panic!("{other:?}"),
                })
                .collect::<Vec<_>>()
        }));
        state = rows.metadata.paging_state;
        if state.is_none() {
            break;
        }
    }
    assert_eq!(got, all);

    // A schema change between pages: Cassandra's error, not a mixed answer.
    let mut params = QueryParameters::new(Consistency::One);
    params.page_size = Some(2);
    let ResultBody::Rows(first) = h
        .query_with("DESCRIBE KEYSPACE ks", params.clone())
        .unwrap()
    else {
        panic!("rows");
    };
    h.ok("CREATE TABLE e (k int PRIMARY KEY)");
    params.paging_state = first.metadata.paging_state;
    let e = h
        .query_with("DESCRIBE KEYSPACE ks", params.clone())
        .unwrap_err();
    assert_eq!(e.kind.code(), error_code::INVALID);
    assert!(
        e.message.starts_with("The schema has changed"),
        "{}",
        e.message
    );
    params.paging_state = Some(Bytes::from_static(b"not a paging state"));
    let e = h.query_with("DESCRIBE KEYSPACE ks", params).unwrap_err();
    assert_eq!(e.kind.code(), error_code::PROTOCOL);
}

#[test]
fn describe_prepares_with_its_result_columns() {
    let mut h = Harness::with_keyspace();
    for (cql, columns) in [
        ("DESCRIBE KEYSPACES", 3),
        ("DESCRIBE TABLE t", 4),
        ("DESCRIBE CLUSTER", 4),
    ] {
        match h.request(Request::Prepare(Prepare {
            query: cql.to_owned(),
            keyspace: None,
        })) {
            Response::Result(ResultBody::Prepared(p)) => {
                assert!(p.metadata.columns.is_empty(), "{cql}");
                assert_eq!(p.result_metadata.columns.len(), columns, "{cql}");
                assert!(p
                    .result_metadata
                    .columns
                    .iter()
                    .all(|c| c.keyspace == "system" && c.table == "describe"));
            }
            other => panic!("{cql}: {other:?}"),
        }
    }
    assert_eq!(
        h.rows("SELECT release_version FROM system.local"),
        [[text("4.0.17")]]
    );
}

#[test]
fn the_layout_extension_sets_the_layout_and_old_options_are_ignored() {
    let mut h = Harness::with_keyspace();
    h.ok(
        "CREATE TABLE t (k int PRIMARY KEY) WITH extensions = {'mosaic.layout': 0x756e69666f726d}",
    );
    assert_eq!(table(&h, "ks", "t").params.layout, "uniform");
    for (cql, code) in [
        (
            "CREATE TABLE u (k int PRIMARY KEY) WITH extensions = {'mosaic.layout': 0x6e6f7065}",
            error_code::CONFIG,
        ),
        (
            "CREATE TABLE u (k int PRIMARY KEY) WITH extensions = {'x': 'not a blob'}",
            error_code::CONFIG,
        ),
        (
            "CREATE TABLE u (k int PRIMARY KEY) WITH extensions = 0x01",
            error_code::CONFIG,
        ),
        (
            "CREATE TABLE u (k int PRIMARY KEY) WITH read_repair = 'SOMETIMES'",
            error_code::CONFIG,
        ),
    ] {
        assert_eq!(h.err(cql).kind.code(), code, "{cql}");
    }
    // Cassandra 3.11's read repair chances (in 3.11 schema dumps) are accepted and ignored.
    h.ok("CREATE TABLE old (k int PRIMARY KEY) WITH read_repair_chance = 0.5 AND dclocal_read_repair_chance = 0.1");
    let plain = table(&h, "ks", "t");
    assert_eq!(table(&h, "ks", "old").params, plain.params);
    // However options are written, equal options are kept equal.
    h.ok("CREATE TABLE spelled (k int PRIMARY KEY) WITH compaction = {'class': 'SizeTieredCompactionStrategy'} AND speculative_retry = '99PERCENTILE' AND caching = {'keys': 'all'}");
    assert_eq!(table(&h, "ks", "spelled").params, plain.params);
}

#[test]
fn layouts_are_chosen_at_create_and_kept_for_life() {
    let mut h = Harness::with_keyspace();
    h.ok("CREATE TABLE d (k int PRIMARY KEY) WITH layout = 'decoupled'");
    h.ok("CREATE TABLE m (k int PRIMARY KEY) WITH layout = 'Multi-LSM'");
    h.ok("CREATE TABLE u (k int PRIMARY KEY)");
    assert_eq!(table(&h, "ks", "d").params.layout, "decoupled");
    assert_eq!(table(&h, "ks", "m").params.layout, "multi-lsm");
    assert_eq!(table(&h, "ks", "u").params.layout, "uniform");
    // DESCRIBE prints the layout (as the `mosaic.layout` extension, "decoupled" in hex),
    // and its statement creates the same table again.
    let create = create_statement(&mut h, "DESCRIBE TABLE ks.d");
    assert!(create.contains("0x6465636f75706c6564"), "{create}");
    h.ok("DROP TABLE d");
    h.ok(&create);
    assert_eq!(table(&h, "ks", "d").params.layout, "decoupled");
    // The layout cannot change; restating it (as a DESCRIBE replay does) is fine.
    let e = h.err("ALTER TABLE u WITH layout = 'decoupled'");
    assert_eq!(e.kind.code(), error_code::CONFIG);
    assert!(
        e.message.contains("Cannot change the layout") && e.message.contains("'uniform'"),
        "{}",
        e.message
    );
    let e = h.err("ALTER TABLE d WITH extensions = {'mosaic.layout': 0x756e69666f726d}");
    assert_eq!(e.kind.code(), error_code::CONFIG);
    h.ok("ALTER TABLE d WITH layout = 'decoupled' AND comment = 'same layout'");
    assert_eq!(table(&h, "ks", "d").params.layout, "decoupled");
    assert_eq!(table(&h, "ks", "d").params.comment, "same layout");
}

#[test]
fn every_layout_takes_the_map_form_with_its_own_options() {
    let mut h = Harness::with_keyspace();
    h.ok("CREATE TABLE d (k int PRIMARY KEY) WITH layout = {'class': 'decoupled', 'sorted_runs_max': '20'}");
    let d = table(&h, "ks", "d").params;
    assert_eq!(d.layout, "decoupled");
    assert_eq!(
        d.layout_options,
        BTreeMap::from([("sorted_runs_max".to_owned(), "20".to_owned())])
    );
    assert_eq!(
        d.layout_text(),
        "{'class': 'decoupled', 'sorted_runs_max': '20'}"
    );
    // The map form without options is the string form.
    h.ok("CREATE TABLE u (k int PRIMARY KEY) WITH layout = {'class': 'Uniform'}");
    h.ok("CREATE TABLE m (k int PRIMARY KEY) WITH layout = {'class': 'multi-lsm'}");
    h.ok("CREATE TABLE plain (k int PRIMARY KEY) WITH layout = 'uniform'");
    assert_eq!(table(&h, "ks", "u").params, table(&h, "ks", "plain").params);
    assert_eq!(table(&h, "ks", "m").params.layout_text(), "multi-lsm");
    // system_schema.tables and DESCRIBE show it; the statement DESCRIBE prints creates
    // the same table again.
    let create = create_statement(&mut h, "DESCRIBE TABLE ks.d");
    let hex: String = d
        .layout_text()
        .bytes()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert!(create.contains(&hex), "{create}");
    h.ok("DROP TABLE d");
    h.ok(&create);
    assert_eq!(table(&h, "ks", "d").params, d);
    // What is refused, with Cassandra's ConfigurationException.
    for (cql, says) in [
        ("CREATE TABLE x (k int PRIMARY KEY) WITH layout = {'sorted_runs_max': '20'}", "Missing 'class'"),
        ("CREATE TABLE x (k int PRIMARY KEY) WITH layout = {'class': 'uniform', 'sorted_runs_max': '2'}", "takes no options"),
        ("CREATE TABLE x (k int PRIMARY KEY) WITH layout = {'class': 'decoupled', 'runs': '2'}", "it takes: sorted_runs_max, split_segments"),
        ("CREATE TABLE x (k int PRIMARY KEY) WITH layout = {'class': 'decoupled', 'sorted_runs_max': '0'}", "integer >= 1"),
        ("CREATE TABLE x (k int PRIMARY KEY) WITH layout = {'class': 'decoupled', 'split_segments': 'many'}", "integer >= 0"),
        ("CREATE TABLE x (k int PRIMARY KEY) WITH layout = {'class': 'erasure-coded'}", "Unknown layout"),
        ("CREATE TABLE x (k int PRIMARY KEY) WITH layout = 3", "Invalid value for layout"),
    ] {
        let e = h.err(cql);
        assert_eq!(e.kind.code(), error_code::CONFIG, "{cql}");
        assert!(e.message.contains(says), "{cql}: {}", e.message);
    }
    // The options are part of the layout: they cannot change either, but restating them can.
    let e = h.err("ALTER TABLE d WITH layout = {'class': 'decoupled', 'sorted_runs_max': '5'}");
    assert!(
        e.message.contains("Cannot change the layout"),
        "{}",
        e.message
    );
    let e = h.err("ALTER TABLE d WITH layout = 'decoupled'");
    assert!(
        e.message.contains("Cannot change the layout"),
        "{}",
        e.message
    );
    h.ok("ALTER TABLE d WITH layout = {'sorted_runs_max': '020', 'class': 'decoupled'} AND comment = 'c'");
    assert_eq!(table(&h, "ks", "d").params.layout_options, d.layout_options);
}

#[test]
fn tables_created_without_a_layout_get_the_coordinators_default() {
    let mut h = Harness::with_keyspace();
    *h.coordinator.default_layout.lock() = Some("multi-lsm".to_owned());
    h.ok("CREATE TABLE t (k int PRIMARY KEY)");
    h.ok("CREATE TABLE v (k int PRIMARY KEY) WITH layout = 'uniform'");
    assert_eq!(table(&h, "ks", "t").params.layout, "multi-lsm");
    assert_eq!(table(&h, "ks", "v").params.layout, "uniform");
    // A default this build cannot store is refused, not silently replaced.
    *h.coordinator.default_layout.lock() = Some("hybrid-tiered".to_owned());
    let e = h.err("CREATE TABLE w (k int PRIMARY KEY)");
    assert_eq!(e.kind.code(), error_code::CONFIG);
}
