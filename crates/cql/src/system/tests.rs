//! System tables as drivers read them: rows, column names and types, restrictions,
//! bound values, PREPARE metadata. Cells are checked by decoding them as their declared
//! type, the way a driver would.

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;

use bytes::Bytes;
use mosaic_rows::ColumnId;
use mosaic_types::{CqlType, Token};

use super::*;
use crate::ast::Statement;
use crate::frame::{ColumnType, ErrorKind};
use crate::schema::{
    ClusteringOrder, ColumnKind, ColumnMeta, KeyspaceMeta, Replication, TableMeta, TableParams,
    Uuid,
};

fn node(last_octet: u8, tokens: &[i64]) -> NodeInfo {
    let ip = IpAddr::V4(Ipv4Addr::new(127, 0, 0, last_octet));
    NodeInfo {
        host_id: mosaic_types::HostId([last_octet; 16]),
        rpc_address: ip,
        native_port: 9042,
        broadcast_address: ip,
        data_center: "dc1".into(),
        rack: "rack1".into(),
        tokens: tokens.iter().map(|t| Token(*t)).collect(),
        schema_version: Uuid([9; 16]),
        release_version: "4.0.17".into(),
        up: true,
    }
}

fn column(name: &str, ty: CqlType, kind: ColumnKind, id: u32) -> ColumnMeta {
    ColumnMeta {
        name: name.into(),
        ty: ty.into(),
        kind,
        id: ColumnId(id),
    }
}

fn user_table(name: &str, params: TableParams) -> TableMeta {
    TableMeta {
        keyspace: "ks".into(),
        name: name.into(),
        id: crate::schema::TableId([0x42; 16]),
        columns: vec![
            column(
                "k",
                CqlType::Int,
                ColumnKind::PartitionKey { position: 0 },
                0,
            ),
            column(
                "c",
                CqlType::Text,
                ColumnKind::Clustering {
                    position: 0,
                    order: ClusteringOrder::Desc,
                },
                1,
            ),
            column("v", CqlType::Blob, ColumnKind::Regular, 2),
            column("s", CqlType::TimeUuid, ColumnKind::Static, 3),
        ],
        params,
        next_column_id: 4,
        indexes: Default::default(),
        dropped_columns: Default::default(),
        counter: false,
        derived: Default::default(),
    }
}

struct Fixture {
    catalog: Catalog,
    local: NodeInfo,
    peers: Vec<NodeInfo>,
    cluster: ClusterInfo,
}

impl Fixture {
    fn new() -> Fixture {
        let mut extra = BTreeMap::new();
        extra.insert(
            "compaction".to_owned(),
            "{'class': 'LeveledCompactionStrategy', 'sstable_size_in_mb': '160'}".to_owned(),
        );
        extra.insert("compression".to_owned(), "{'enabled': 'false'}".to_owned());
        extra.insert("speculative_retry".to_owned(), "95percentile".to_owned());
        extra.insert("crc_check_chance".to_owned(), "0.5".to_owned());
        let tuned = TableParams {
            layout: mosaic_types::Layout::Uniform,
            layout_options: BTreeMap::new(),
            comment: "tuned".into(),
            default_time_to_live: 60,
            gc_grace_seconds: 10,
            extra,
        };
        let tables = BTreeMap::from([
            (
                "t".to_owned(),
                Arc::new(user_table("t", TableParams::default())),
            ),
            ("tuned".to_owned(), Arc::new(user_table("tuned", tuned))),
        ]);
        let ks = KeyspaceMeta {
            name: "ks".into(),
            replication: Replication::simple(3),
            durable_writes: true,
            tables,
            types: BTreeMap::new(),
        };
        let local = node(1, &[-5, 100, 7]);
        Fixture {
            catalog: Catalog::new(BTreeMap::from([("ks".to_owned(), ks)])),
            // The local node listed among the peers too must not show up as its own peer.
            peers: vec![node(2, &[1, 2]), node(3, &[3]), local.clone()],
            local,
            cluster: ClusterInfo {
                cluster_name: "Test Cluster".into(),
                partitioner: "org.apache.cassandra.dht.Murmur3Partitioner".into(),
            },
        }
    }

    fn view(&self) -> SystemView<'_> {
        SystemView {
            catalog: &self.catalog,
            local: &self.local,
            peers: &self.peers,
            cluster: &self.cluster,
            built_indexes: &[],
        }
    }

    fn select_with(&self, cql: &str, values: &[Option<Bytes>]) -> Result<Rows, ErrorResponse> {
        select(&self.view(), &parse(cql), values)
    }

    fn select(&self, cql: &str) -> Rows {
        self.select_with(cql, &[])
            .unwrap_or_else(|e| panic!("{cql}: {e:?}"))
    }
}

fn parse(cql: &str) -> SelectStatement {
    match crate::parse::parse_statement(cql) {
        Ok(Statement::Select(s)) => s,
        other => panic!("{cql}: {other:?}"),
    }
}

fn names(rows: &Rows) -> Vec<&str> {
    rows.metadata
        .columns
        .iter()
        .map(|c| c.name.as_str())
        .collect()
}

/// The cell of column `name` in row `row`.
fn cell<'r>(rows: &'r Rows, row: usize, name: &str) -> Option<&'r Bytes> {
    let i = rows
        .metadata
        .columns
        .iter()
        .position(|c| c.name == name)
        .unwrap_or_else(|| panic!("no column {name}"));
    rows.rows[row][i].as_ref()
}

fn text(b: Option<&Bytes>) -> String {
    String::from_utf8(b.expect("not null").to_vec()).unwrap()
}

fn int(b: Option<&Bytes>) -> i32 {
    i32::from_be_bytes(b.expect("not null")[..].try_into().unwrap())
}

fn double(b: Option<&Bytes>) -> f64 {
    f64::from_be_bytes(b.expect("not null")[..].try_into().unwrap())
}

/// The elements of a serialized collection.
fn elements(b: Option<&Bytes>) -> Vec<Bytes> {
    cell::decode_elements(b.expect("not null"))
        .expect("a collection")
        .into_iter()
        .map(|e| e.expect("no null element"))
        .collect()
}

fn strings(b: Option<&Bytes>) -> Vec<String> {
    elements(b)
        .into_iter()
        .map(|e| String::from_utf8(e.to_vec()).unwrap())
        .collect()
}

/// The keys and values of a serialized map, alternating.
fn map_items(b: Option<&Bytes>) -> Vec<Bytes> {
    cell::decode_map_items(b.expect("not null"))
        .expect("a map")
        .into_iter()
        .map(|e| e.expect("no null element"))
        .collect()
}

fn text_map(b: Option<&Bytes>) -> BTreeMap<String, String> {
    let e: Vec<String> = map_items(b)
        .into_iter()
        .map(|e| String::from_utf8(e.to_vec()).unwrap())
        .collect();
    e.chunks(2)
        .map(|kv| (kv[0].clone(), kv[1].clone()))
        .collect()
}

fn text_list(values: &[&str]) -> Option<Bytes> {
    cell::text_list(values)
}

/// Checks that `bytes` is a well-formed value of `ty`, as a driver decoding it would.
fn check_cell(ty: &ColumnType, bytes: &[u8]) -> bool {
    match ty {
        ColumnType::Native(CqlType::Inet) => bytes.len() == 4 || bytes.len() == 16,
        ColumnType::Native(t) => match t.fixed_len() {
            Some(n) => bytes.len() == n,
            None => !matches!(t, CqlType::Text) || std::str::from_utf8(bytes).is_ok(),
        },
        ColumnType::List(e) | ColumnType::Set(e) => cell::decode_elements(bytes).is_some_and(|v| {
            v.iter()
                .all(|x| x.as_ref().is_some_and(|x| check_cell(e, x)))
        }),
        ColumnType::Map(k, v) => cell::decode_map_items(bytes).is_some_and(|items| {
            items.len() % 2 == 0
                && items.chunks(2).all(|kv| {
                    kv[0].as_ref().is_some_and(|x| check_cell(k, x))
                        && kv[1].as_ref().is_some_and(|x| check_cell(v, x))
                })
        }),
        other => panic!("unexpected type {other:?}"),
    }
}

#[test]
fn every_table_answers_select_star_with_well_typed_cells() {
    let f = Fixture::new();
    for table in tables::ALL {
        let cql = format!(
            "SELECT * FROM {}.{}",
            table.keyspace,
            crate::ast::Ident::new(table.name)
        );
        let rows = f.select(&cql);
        let expected: Vec<&str> = table.columns.iter().map(|c| c.name).collect();
        assert_eq!(names(&rows), expected, "{cql}");
        for (spec, def) in rows.metadata.columns.iter().zip(table.columns) {
            assert_eq!(spec.keyspace, table.keyspace);
            assert_eq!(spec.table, table.name);
            assert_eq!(Some(&spec.ty), tables::parse_type(def.ty).as_ref());
        }
        for row in &rows.rows {
            assert_eq!(row.len(), table.columns.len());
            for (value, spec) in row.iter().zip(&rows.metadata.columns) {
                if let Some(b) = value {
                    assert!(check_cell(&spec.ty, b), "{cql}: {} = {b:?}", spec.name);
                }
            }
        }
        let (columns, binds) = prepare(&parse(&cql)).unwrap();
        assert_eq!(columns, rows.metadata.columns, "{cql}");
        assert!(binds.is_empty());
    }
}

#[test]
fn system_local_is_what_the_python_driver_reads() {
    let f = Fixture::new();
    let rows = f.select("SELECT * FROM system.local WHERE key='local'");
    assert_eq!(
        names(&rows),
        [
            "key",
            "bootstrapped",
            "broadcast_address",
            "broadcast_port",
            "cluster_name",
            "cql_version",
            "data_center",
            "gossip_generation",
            "host_id",
            "listen_address",
            "listen_port",
            "native_protocol_version",
            "partitioner",
            "rack",
            "release_version",
            "rpc_address",
            "rpc_port",
            "schema_version",
            "tokens",
            "truncated_at",
        ]
    );
    assert_eq!(rows.rows.len(), 1);
    assert_eq!(text(cell(&rows, 0, "key")), "local");
    assert_eq!(text(cell(&rows, 0, "bootstrapped")), "COMPLETED");
    assert_eq!(text(cell(&rows, 0, "cluster_name")), "Test Cluster");
    assert_eq!(text(cell(&rows, 0, "cql_version")), "3.4.5");
    assert_eq!(text(cell(&rows, 0, "native_protocol_version")), "4");
    assert_eq!(text(cell(&rows, 0, "release_version")), "4.0.17");
    assert_eq!(
        text(cell(&rows, 0, "partitioner")),
        "org.apache.cassandra.dht.Murmur3Partitioner"
    );
    assert_eq!(text(cell(&rows, 0, "data_center")), "dc1");
    assert_eq!(text(cell(&rows, 0, "rack")), "rack1");
    assert_eq!(&cell(&rows, 0, "host_id").unwrap()[..], &[1; 16]);
    assert_eq!(&cell(&rows, 0, "schema_version").unwrap()[..], &[9; 16]);
    assert_eq!(&cell(&rows, 0, "rpc_address").unwrap()[..], &[127, 0, 0, 1]);
    assert_eq!(
        &cell(&rows, 0, "broadcast_address").unwrap()[..],
        &[127, 0, 0, 1]
    );
    assert_eq!(int(cell(&rows, 0, "broadcast_port")), 7000);
    assert_eq!(int(cell(&rows, 0, "listen_port")), 7000);
    assert_eq!(
        int(cell(&rows, 0, "rpc_port")),
        i32::from(f.local.native_port)
    );
    // set<text> of the tokens' decimal strings, in text order.
    assert_eq!(strings(cell(&rows, 0, "tokens")), ["-5", "100", "7"]);
    let ty = |name: &str| {
        rows.metadata
            .columns
            .iter()
            .find(|c| c.name == name)
            .unwrap()
            .ty
            .clone()
    };
    assert_eq!(
        ty("tokens"),
        ColumnType::Set(Box::new(CqlType::Text.into()))
    );
    assert_eq!(ty("rpc_address"), ColumnType::Native(CqlType::Inet));
    assert_eq!(ty("host_id"), ColumnType::Native(CqlType::Uuid));
    assert_eq!(
        ty("truncated_at"),
        ColumnType::Map(
            Box::new(CqlType::Uuid.into()),
            Box::new(CqlType::Blob.into())
        )
    );

    assert!(f
        .select("SELECT * FROM system.local WHERE key='other'")
        .rows
        .is_empty());
}

#[test]
fn the_scylla_driver_topology_queries_get_typed_columns() {
    let f = Fixture::new();
    let local = f.select(
        "SELECT host_id, rpc_address, data_center, rack, tokens, cluster_name FROM system.local WHERE key='local'",
    );
    assert_eq!(
        names(&local),
        [
            "host_id",
            "rpc_address",
            "data_center",
            "rack",
            "tokens",
            "cluster_name"
        ]
    );
    assert_eq!(local.rows.len(), 1);
    let peers =
        f.select("SELECT host_id, rpc_address, data_center, rack, tokens FROM system.peers");
    assert_eq!(peers.rows.len(), 2, "the local node is not its own peer");
    assert_eq!(
        &cell(&peers, 0, "rpc_address").unwrap()[..],
        &[127, 0, 0, 2]
    );
    assert_eq!(strings(cell(&peers, 0, "tokens")), ["1", "2"]);
    assert_eq!(strings(cell(&peers, 1, "tokens")), ["3"]);
    // The same through PREPARE, as scylla's control connection prepares everything.
    let (columns, _) = prepare(&parse(
        "SELECT host_id, rpc_address, data_center, rack, tokens FROM system.peers",
    ))
    .unwrap();
    assert_eq!(columns, peers.metadata.columns);
}

#[test]
fn peers_and_peers_v2_describe_the_other_nodes() {
    let f = Fixture::new();
    let peers = f.select("SELECT * FROM system.peers");
    assert_eq!(
        names(&peers),
        [
            "peer",
            "data_center",
            "host_id",
            "preferred_ip",
            "rack",
            "release_version",
            "rpc_address",
            "schema_version",
            "tokens"
        ]
    );
    assert_eq!(peers.rows.len(), 2);
    assert_eq!(&cell(&peers, 1, "peer").unwrap()[..], &[127, 0, 0, 3]);
    assert_eq!(cell(&peers, 1, "preferred_ip"), None);
    assert_eq!(&cell(&peers, 1, "host_id").unwrap()[..], &[3; 16]);

    let v2 = f.select("SELECT * FROM system.peers_v2");
    assert_eq!(
        names(&v2),
        [
            "peer",
            "peer_port",
            "data_center",
            "host_id",
            "native_address",
            "native_port",
            "preferred_ip",
            "preferred_port",
            "rack",
            "release_version",
            "schema_version",
            "tokens"
        ]
    );
    assert_eq!(v2.rows.len(), 2);
    assert_eq!(int(cell(&v2, 0, "native_port")), 9042);
    assert_eq!(int(cell(&v2, 0, "peer_port")), 7000);
    assert_eq!(
        &cell(&v2, 0, "native_address").unwrap()[..],
        &[127, 0, 0, 2]
    );
}

#[test]
fn keyspaces_list_the_system_keyspaces_then_the_users() {
    let f = Fixture::new();
    let rows = f.select("SELECT * FROM system_schema.keyspaces");
    assert_eq!(
        names(&rows),
        ["keyspace_name", "durable_writes", "replication"]
    );
    let by_name: BTreeMap<String, BTreeMap<String, String>> = (0..rows.rows.len())
        .map(|i| {
            (
                text(cell(&rows, i, "keyspace_name")),
                text_map(cell(&rows, i, "replication")),
            )
        })
        .collect();
    let listed: Vec<&str> = by_name.keys().map(String::as_str).collect();
    assert_eq!(
        listed,
        [
            "ks",
            "system",
            "system_auth",
            "system_distributed",
            "system_schema",
            "system_traces"
        ]
    );
    assert_eq!(
        by_name["system"]["class"],
        "org.apache.cassandra.locator.LocalStrategy"
    );
    assert_eq!(by_name["system_traces"]["replication_factor"], "2");
    assert_eq!(
        by_name["ks"],
        BTreeMap::from([
            (
                "class".to_owned(),
                "org.apache.cassandra.locator.SimpleStrategy".to_owned()
            ),
            ("replication_factor".to_owned(), "3".to_owned())
        ])
    );
    // scylla's query, with the bound `IN ?` it sends when asked for some keyspaces.
    let cql = "SELECT keyspace_name, replication, durable_writes FROM system_schema.keyspaces where keyspace_name in ?";
    let some = f
        .select_with(cql, &[text_list(&["ks", "system", "nope"])])
        .unwrap();
    assert_eq!(some.rows.len(), 2);
    assert_eq!(&cell(&some, 0, "durable_writes").unwrap()[..], &[1]);
    let (_, binds) = prepare(&parse(cql)).unwrap();
    assert_eq!(binds.len(), 1);
    assert_eq!(binds[0].name, "in(keyspace_name)");
    assert_eq!(binds[0].keyspace, "system_schema");
    assert_eq!(binds[0].table, "keyspaces");
    assert_eq!(
        binds[0].ty,
        ColumnType::List(Box::new(CqlType::Text.into()))
    );
}

#[test]
fn user_tables_show_their_options_and_cassandras_defaults() {
    let f = Fixture::new();
    let cql = "SELECT * FROM system_schema.tables WHERE keyspace_name = ? AND table_name = ?";
    let values = [
        Some(Bytes::from_static(b"ks")),
        Some(Bytes::from_static(b"t")),
    ];
    let rows = f.select_with(cql, &values).unwrap();
    assert_eq!(rows.rows.len(), 1);
    assert_eq!(text(cell(&rows, 0, "table_name")), "t");
    assert_eq!(double(cell(&rows, 0, "bloom_filter_fp_chance")), 0.01);
    assert_eq!(
        text_map(cell(&rows, 0, "caching")),
        BTreeMap::from([
            ("keys".to_owned(), "ALL".to_owned()),
            ("rows_per_partition".to_owned(), "NONE".to_owned())
        ])
    );
    assert_eq!(cell(&rows, 0, "cdc").map(|b| &b[..]), Some(&[0u8][..]));
    assert_eq!(text(cell(&rows, 0, "additional_write_policy")), "99p");
    assert_eq!(text(cell(&rows, 0, "read_repair")), "BLOCKING");
    assert_eq!(text(cell(&rows, 0, "comment")), "");
    assert_eq!(
        text_map(cell(&rows, 0, "compaction")),
        BTreeMap::from([
            (
                "class".to_owned(),
                "org.apache.cassandra.db.compaction.SizeTieredCompactionStrategy".to_owned()
            ),
            ("max_threshold".to_owned(), "32".to_owned()),
            ("min_threshold".to_owned(), "4".to_owned())
        ])
    );
    assert_eq!(
        text_map(cell(&rows, 0, "compression")),
        BTreeMap::from([
            ("chunk_length_in_kb".to_owned(), "16".to_owned()),
            (
                "class".to_owned(),
                "org.apache.cassandra.io.compress.LZ4Compressor".to_owned()
            )
        ])
    );
    assert_eq!(double(cell(&rows, 0, "crc_check_chance")), 1.0);
    // Cassandra 4.0 keeps these columns for drivers and shows 0.
    assert_eq!(double(cell(&rows, 0, "dclocal_read_repair_chance")), 0.0);
    assert_eq!(double(cell(&rows, 0, "read_repair_chance")), 0.0);
    assert_eq!(int(cell(&rows, 0, "default_time_to_live")), 0);
    assert_eq!(int(cell(&rows, 0, "gc_grace_seconds")), 864_000);
    assert_eq!(int(cell(&rows, 0, "max_index_interval")), 2048);
    assert_eq!(int(cell(&rows, 0, "min_index_interval")), 128);
    assert_eq!(int(cell(&rows, 0, "memtable_flush_period_in_ms")), 0);
    assert_eq!(text(cell(&rows, 0, "speculative_retry")), "99p");
    assert_eq!(strings(cell(&rows, 0, "flags")), ["compound"]);
    assert_eq!(&cell(&rows, 0, "id").unwrap()[..], &[0x42; 16]);
    let extensions = map_items(cell(&rows, 0, "extensions"));
    assert_eq!(
        extensions,
        [
            Bytes::from_static(b"mosaic.layout"),
            Bytes::from_static(b"uniform")
        ]
    );

    // The bind specs name the columns, typed as them.
    let (_, binds) = prepare(&parse(cql)).unwrap();
    let bind_names: Vec<&str> = binds.iter().map(|b| b.name.as_str()).collect();
    assert_eq!(bind_names, ["keyspace_name", "table_name"]);
    assert!(binds
        .iter()
        .all(|b| b.ty == ColumnType::Native(CqlType::Text)));
}

#[test]
fn cassandra_options_given_at_create_are_shown_normalized() {
    let f = Fixture::new();
    let rows = f.select(
        "SELECT * FROM system_schema.tables WHERE keyspace_name = 'ks' AND table_name = 'tuned'",
    );
    assert_eq!(rows.rows.len(), 1);
    assert_eq!(text(cell(&rows, 0, "comment")), "tuned");
    assert_eq!(int(cell(&rows, 0, "default_time_to_live")), 60);
    assert_eq!(int(cell(&rows, 0, "gc_grace_seconds")), 10);
    let compaction = text_map(cell(&rows, 0, "compaction"));
    assert_eq!(
        compaction["class"],
        "org.apache.cassandra.db.compaction.LeveledCompactionStrategy"
    );
    assert_eq!(compaction["sstable_size_in_mb"], "160");
    assert_eq!(compaction["max_threshold"], "32");
    // Leveled compaction's default false-positive chance.
    assert_eq!(double(cell(&rows, 0, "bloom_filter_fp_chance")), 0.1);
    assert_eq!(
        text_map(cell(&rows, 0, "compression")),
        BTreeMap::from([("enabled".to_owned(), "false".to_owned())])
    );
    assert_eq!(text(cell(&rows, 0, "speculative_retry")), "95p");
    assert_eq!(double(cell(&rows, 0, "crc_check_chance")), 0.5);
}

#[test]
fn columns_show_kind_position_order_and_type() {
    let f = Fixture::new();
    let rows = f.select(
        "SELECT column_name, kind, position, clustering_order, type, column_name_bytes FROM system_schema.columns WHERE keyspace_name = 'ks' AND table_name = 't'",
    );
    let got: Vec<(String, String, i32, String, String)> = (0..rows.rows.len())
        .map(|i| {
            assert_eq!(
                cell(&rows, i, "column_name_bytes"),
                cell(&rows, i, "column_name")
            );
            (
                text(cell(&rows, i, "column_name")),
                text(cell(&rows, i, "kind")),
                int(cell(&rows, i, "position")),
                text(cell(&rows, i, "clustering_order")),
                text(cell(&rows, i, "type")),
            )
        })
        .collect();
    let row = |n: &str, k: &str, p: i32, o: &str, t: &str| {
        (n.to_owned(), k.to_owned(), p, o.to_owned(), t.to_owned())
    };
    assert_eq!(
        got,
        [
            row("c", "clustering", 0, "desc", "text"),
            row("k", "partition_key", 0, "none", "int"),
            row("s", "static", -1, "none", "timeuuid"),
            row("v", "regular", -1, "none", "blob"),
        ]
    );
}

#[test]
fn every_table_listed_has_its_columns_and_the_other_way_round() {
    let f = Fixture::new();
    let tables = f.select("SELECT keyspace_name, table_name FROM system_schema.tables");
    let columns = f.select("SELECT keyspace_name, table_name, column_name, kind, position, type FROM system_schema.columns");
    let listed: std::collections::BTreeSet<(String, String)> = (0..tables.rows.len())
        .map(|i| {
            (
                text(cell(&tables, i, "keyspace_name")),
                text(cell(&tables, i, "table_name")),
            )
        })
        .collect();
    let with_columns: std::collections::BTreeSet<(String, String)> = (0..columns.rows.len())
        .map(|i| {
            (
                text(cell(&columns, i, "keyspace_name")),
                text(cell(&columns, i, "table_name")),
            )
        })
        .collect();
    assert_eq!(listed, with_columns);
    // Every system table but the virtual ones, plus the fixture's two user tables.
    let virtual_tables = tables::ALL.iter().filter(|t| t.is_virtual()).count();
    assert_eq!(virtual_tables, 3);
    assert_eq!(listed.len(), tables::ALL.len() - virtual_tables + 2);
    assert!(!listed.iter().any(|(k, _)| k == "system_virtual_schema"));
    assert!(listed.contains(&("system".to_owned(), "peers_v2".to_owned())));
    assert!(listed.contains(&("system_schema".to_owned(), "columns".to_owned())));
    // Every type text parses as a driver's parser would need it to.
    for i in 0..columns.rows.len() {
        let ty = text(cell(&columns, i, "type"));
        assert!(tables::parse_type(&ty).is_some(), "{ty}");
    }
    // And the definitions read back from system_schema match what SELECT * returns.
    let local = f.select(
        "SELECT column_name, type FROM system_schema.columns WHERE keyspace_name = 'system' AND table_name = 'local' AND column_name IN ('tokens', 'truncated_at')",
    );
    assert_eq!(text(cell(&local, 0, "type")), "set<text>");
    assert_eq!(text(cell(&local, 1, "type")), "map<uuid, blob>");
}

#[test]
fn in_lists_counts_limits_and_aliases() {
    let f = Fixture::new();
    let rows = f.select(
        "SELECT table_name AS t FROM system_schema.tables WHERE keyspace_name IN ('ks', 'system_traces')",
    );
    assert_eq!(names(&rows), ["t"]);
    let got: Vec<String> = (0..rows.rows.len())
        .map(|i| text(cell(&rows, i, "t")))
        .collect();
    assert_eq!(got, ["t", "tuned", "events", "sessions"]);

    let count = f.select("SELECT count(*) FROM system_schema.keyspaces");
    assert_eq!(names(&count), ["count"]);
    assert_eq!(
        count.metadata.columns[0].ty,
        ColumnType::Native(CqlType::BigInt)
    );
    assert_eq!(&count.rows[0][0].as_ref().unwrap()[..], &6i64.to_be_bytes());

    let limited = f.select("SELECT * FROM system_schema.keyspaces LIMIT 2");
    assert_eq!(limited.rows.len(), 2);
    let bound = f
        .select_with(
            "SELECT * FROM system_schema.keyspaces LIMIT ?",
            &[Some(Bytes::copy_from_slice(&3i32.to_be_bytes()))],
        )
        .unwrap();
    assert_eq!(bound.rows.len(), 3);
    let (_, binds) = prepare(&parse("SELECT * FROM system_schema.keyspaces LIMIT ?")).unwrap();
    assert_eq!(binds[0].name, "[limit]");

    let in_binds = f
        .select_with(
            "SELECT peer FROM system.peers WHERE host_id IN (?, ?)",
            &[
                Some(Bytes::copy_from_slice(&[3; 16])),
                Some(Bytes::copy_from_slice(&[8; 16])),
            ],
        )
        .unwrap();
    assert_eq!(in_binds.rows.len(), 1);

    let distinct = f.select("SELECT DISTINCT keyspace_name FROM system_schema.columns");
    assert_eq!(distinct.rows.len(), 6);

    let uuid = f.select(
        "SELECT peer FROM system.peers WHERE host_id = 02020202-0202-0202-0202-020202020202",
    );
    assert_eq!(uuid.rows.len(), 1);
    let inet = f.select("SELECT host_id FROM system.peers WHERE peer = '127.0.0.3'");
    assert_eq!(&inet.rows[0][0].as_ref().unwrap()[..], &[3; 16]);
}

#[test]
fn the_virtual_schema_lists_itself() {
    let f = Fixture::new();
    let keyspaces = f.select("SELECT * FROM system_virtual_schema.keyspaces");
    assert_eq!(keyspaces.rows.len(), 1);
    assert_eq!(
        text(cell(&keyspaces, 0, "keyspace_name")),
        "system_virtual_schema"
    );
    let tables = f.select("SELECT table_name, comment FROM system_virtual_schema.tables");
    let names: Vec<String> = (0..tables.rows.len())
        .map(|i| text(cell(&tables, i, "table_name")))
        .collect();
    assert_eq!(names, ["columns", "keyspaces", "tables"]);
    assert_eq!(
        text(cell(&tables, 0, "comment")),
        "virtual column definitions"
    );
    let columns = f.select(
        "SELECT column_name, kind, position, type FROM system_virtual_schema.columns WHERE keyspace_name = 'system_virtual_schema' AND table_name = 'tables'",
    );
    let got: Vec<(String, String, i32, String)> = (0..columns.rows.len())
        .map(|i| {
            (
                text(cell(&columns, i, "column_name")),
                text(cell(&columns, i, "kind")),
                int(cell(&columns, i, "position")),
                text(cell(&columns, i, "type")),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            ("comment".into(), "regular".into(), -1, "text".into()),
            (
                "keyspace_name".into(),
                "partition_key".into(),
                0,
                "text".into()
            ),
            ("table_name".into(), "clustering".into(), 0, "text".into()),
        ]
    );
    // Like Cassandra 4.0, system_schema does not list the virtual keyspace.
    let schema = f.select("SELECT keyspace_name FROM system_schema.keyspaces");
    assert!((0..schema.rows.len())
        .all(|i| text(cell(&schema, i, "keyspace_name")) != "system_virtual_schema"));
}

#[test]
fn unknown_tables_are_unconfigured() {
    let f = Fixture::new();
    for (cql, table) in [
        ("SELECT * FROM system.peers_v3", "peers_v3"),
        (
            "SELECT keyspace_name, table_name, partitioner FROM system_schema.scylla_tables",
            "scylla_tables",
        ),
        ("SELECT * FROM system_virtual_schema.views", "views"),
    ] {
        let e = f.select_with(cql, &[]).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Invalid, "{cql}");
        assert_eq!(e.message, format!("unconfigured table {table}"));
        let e = prepare(&parse(cql)).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Invalid, "{cql}");
    }
}

#[test]
fn unsupported_queries_are_invalid_with_a_reason() {
    let f = Fixture::new();
    for (cql, says) in [
        ("SELECT nope FROM system.local", "Undefined column name nope"),
        (
            "SELECT * FROM system.local WHERE nope = 'x'",
            "Undefined column name nope",
        ),
        (
            "SELECT * FROM system_schema.tables WHERE keyspace_name > 'a'",
            "only = and IN",
        ),
        (
            "SELECT * FROM system.local WHERE key = 3",
            "Invalid constant (3) for \"key\" of type text",
        ),
        (
            "SELECT * FROM system_schema.keyspaces LIMIT 0",
            "LIMIT must be strictly positive",
        ),
        (
            "SELECT * FROM system_schema.columns WHERE keyspace_name = 'ks' ORDER BY table_name DESC",
            "ORDER BY",
        ),
        ("SELECT writetime(rack) FROM system.local", "not supported"),
    ] {
        let e = f.select_with(cql, &[]).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Invalid, "{cql}");
        assert!(e.message.contains(says), "{cql}: {}", e.message);
    }
    // A null or missing bound value in a condition, a malformed bound list.
    let cql = "SELECT * FROM system_schema.tables WHERE keyspace_name = ?";
    let e = f.select_with(cql, &[None]).unwrap_err();
    assert!(e.message.contains("null"), "{}", e.message);
    let e = f.select_with(cql, &[]).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Invalid);
    let cql = "SELECT * FROM system_schema.tables WHERE keyspace_name IN ?";
    let e = f
        .select_with(cql, &[Some(Bytes::from_static(&[0, 0, 0, 9]))])
        .unwrap_err();
    assert!(e.message.contains("Invalid list value"), "{}", e.message);
}

#[test]
fn parse_map_reads_what_the_ddl_layer_keeps() {
    assert_eq!(
        options::parse_map("{'class': 'LeveledCompactionStrategy', 'x': 'it''s', n: 3}").unwrap(),
        BTreeMap::from([
            ("class".to_owned(), "LeveledCompactionStrategy".to_owned()),
            ("x".to_owned(), "it's".to_owned()),
            ("n".to_owned(), "3".to_owned()),
        ])
    );
    assert_eq!(options::parse_map("{}").unwrap(), BTreeMap::new());
    assert_eq!(options::parse_map("{'a'}"), None);
    assert_eq!(options::parse_map("{'a': 'b',}"), None);
    assert_eq!(options::parse_map("not a map"), None);
}
