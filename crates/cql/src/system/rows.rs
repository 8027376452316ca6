//! The rows of each system table, computed from a [`SystemView`]: the nodes for
//! `system.local`, `system.peers` and `system.peers_v2`, the catalog plus the system
//! tables' own definitions for `system_schema.*`.

use std::collections::BTreeMap;

use super::cell::{self, Cell};
use super::options::{system_table_options, user_table_options, TableOptions};
use super::tables::{self, Source, TableDef};
use super::SystemView;
use crate::coordinator::NodeInfo;
use crate::schema::{ColumnKind, KeyspaceMeta, Uuid};

/// `cql_version` of `system.local`: the CQL version Cassandra 4.0 speaks.
pub(crate) const CQL_VERSION: &str = "3.4.5";
/// `native_protocol_version` of `system.local`.
pub(crate) const NATIVE_PROTOCOL_VERSION: &str = "4";
/// `peer_port` of `system.peers_v2` and the `broadcast_port` and `listen_port` of
/// `system.local`: Cassandra's default storage port. Mosaic's internode port is not part
/// of [`NodeInfo`]; drivers only record this value.
pub(crate) const PEER_PORT: u16 = 7000;
/// The `extensions` key under which a table's replica layout is shown.
pub const LAYOUT_EXTENSION: &str = "mosaic.layout";

/// One row: a cell per column of its table, in the table's column order.
pub(crate) type Row = Vec<Cell>;

/// Fills a row by column name; columns not set are null.
struct RowBuilder {
    table: &'static TableDef,
    cells: Row,
}

impl RowBuilder {
    fn new(table: &'static TableDef) -> RowBuilder {
        RowBuilder {
            table,
            cells: vec![None; table.columns.len()],
        }
    }

    /// # Panics
    /// If the table has no such column: the row builders below name only columns of
    /// their own table, which the tests exercise, so this is a bug, not bad input.
    fn set(mut self, name: &str, value: Cell) -> RowBuilder {
        let slot = self
            .table
            .column_index(name)
            .and_then(|i| self.cells.get_mut(i))
            .unwrap_or_else(|| {
                panic!(
                    "{}.{} has no column {name}",
                    self.table.keyspace, self.table.name
                )
            });
        *slot = value;
        self
    }

    fn build(self) -> Row {
        self.cells
    }
}

/// Every row of `table`, in primary-key order.
pub(crate) fn rows(view: &SystemView<'_>, table: &'static TableDef) -> Vec<Row> {
    let mut rows = match table.source {
        Source::Local => vec![local(view)],
        Source::Peers => peers(view)
            .map(|p| peer(p, &tables::PEERS, false))
            .collect(),
        Source::PeersV2 => peers(view)
            .map(|p| peer(p, &tables::PEERS_V2, true))
            .collect(),
        Source::Keyspaces => keyspaces(view),
        Source::Tables => schema_tables(view),
        Source::Columns => schema_columns(view),
        Source::Types => schema_types(view),
        Source::Indexes => schema_indexes(view),
        Source::IndexInfo => view
            .built_indexes
            .iter()
            .map(|(keyspace, index)| {
                RowBuilder::new(&tables::INDEX_INFO)
                    .set("table_name", cell::text(keyspace))
                    .set("index_name", cell::text(index))
                    .build()
            })
            .collect(),
        Source::VirtualKeyspaces => virtual_keyspaces(),
        Source::VirtualTables => virtual_tables(),
        Source::VirtualColumns => virtual_columns(),
        Source::Empty => Vec::new(),
    };
    // Primary-key order (Cassandra orders partitions by token; any stable order serves
    // drivers, and this one is easy to read and to test).
    let key_len = table
        .columns
        .iter()
        .take_while(|c| c.kind != tables::Kind::Regular)
        .count();
    rows.sort_by(|a, b| a.iter().take(key_len).cmp(b.iter().take(key_len)));
    rows
}

/// `system_schema.types`: each user-defined type's field names and types, in order.
fn schema_types(view: &SystemView<'_>) -> Vec<Row> {
    view.catalog
        .keyspaces
        .values()
        .flat_map(|k| k.types.values())
        .map(|t| {
            let names: Vec<String> = t.fields.iter().map(|(n, _)| n.clone()).collect();
            let types: Vec<String> = t.fields.iter().map(|(_, ty)| ty.to_string()).collect();
            RowBuilder::new(&tables::TYPES)
                .set("keyspace_name", cell::text(&t.keyspace))
                .set("type_name", cell::text(&t.name))
                .set("field_names", cell::text_list(&names))
                .set("field_types", cell::text_list(&types))
                .build()
        })
        .collect()
}

/// `system_schema.indexes`: each secondary index's kind and options (its target).
fn schema_indexes(view: &SystemView<'_>) -> Vec<Row> {
    view.catalog
        .tables()
        .flat_map(|t| t.indexes.values().map(move |i| (t, i)))
        .map(|(t, i)| {
            RowBuilder::new(&tables::INDEXES)
                .set("keyspace_name", cell::text(&t.keyspace))
                .set("table_name", cell::text(&t.name))
                .set("index_name", cell::text(&i.name))
                .set("kind", cell::text(i.kind_name()))
                .set("options", cell::text_map(&i.schema_options()))
                .build()
        })
        .collect()
}

fn tokens(node: &NodeInfo) -> Cell {
    let tokens: Vec<String> = node.tokens.iter().map(|t| t.0.to_string()).collect();
    cell::text_set(&tokens, false)
}

fn local(view: &SystemView<'_>) -> Row {
    let node = view.local;
    RowBuilder::new(&tables::LOCAL)
        .set("key", cell::text("local"))
        .set("bootstrapped", cell::text("COMPLETED"))
        .set("broadcast_address", cell::inet(node.broadcast_address))
        .set("broadcast_port", cell::int(i32::from(PEER_PORT)))
        .set("cluster_name", cell::text(&view.cluster.cluster_name))
        .set("cql_version", cell::text(CQL_VERSION))
        .set("data_center", cell::text(&node.data_center))
        .set("host_id", cell::uuid(Uuid(node.host_id.0)))
        .set("listen_address", cell::inet(node.broadcast_address))
        .set("listen_port", cell::int(i32::from(PEER_PORT)))
        .set(
            "native_protocol_version",
            cell::text(NATIVE_PROTOCOL_VERSION),
        )
        .set("partitioner", cell::text(&view.cluster.partitioner))
        .set("rack", cell::text(&node.rack))
        .set("release_version", cell::text(&node.release_version))
        .set("rpc_address", cell::inet(node.rpc_address))
        .set("rpc_port", cell::int(i32::from(node.native_port)))
        .set("schema_version", cell::uuid(node.schema_version))
        .set("tokens", tokens(node))
        .build()
}

/// The other nodes, without the local one should the coordinator list it too (a node
/// never is its own peer in Cassandra, and drivers would see it twice).
fn peers<'v>(view: &'v SystemView<'_>) -> impl Iterator<Item = &'v NodeInfo> {
    let local = view.local.host_id;
    view.peers.iter().filter(move |p| p.host_id != local)
}

fn peer(node: &NodeInfo, table: &'static TableDef, v2: bool) -> Row {
    let row = RowBuilder::new(table)
        .set("peer", cell::inet(node.broadcast_address))
        .set("data_center", cell::text(&node.data_center))
        .set("host_id", cell::uuid(Uuid(node.host_id.0)))
        .set("rack", cell::text(&node.rack))
        .set("release_version", cell::text(&node.release_version))
        .set("schema_version", cell::uuid(node.schema_version))
        .set("tokens", tokens(node));
    if v2 {
        row.set("peer_port", cell::int(i32::from(PEER_PORT)))
            .set("native_address", cell::inet(node.rpc_address))
            .set("native_port", cell::int(i32::from(node.native_port)))
            .build()
    } else {
        row.set("rpc_address", cell::inet(node.rpc_address)).build()
    }
}

fn keyspaces(view: &SystemView<'_>) -> Vec<Row> {
    let system = tables::SYSTEM_KEYSPACES.iter().map(|k| {
        let replication = k
            .replication
            .iter()
            .map(|(a, b)| ((*a).to_owned(), (*b).to_owned()))
            .collect();
        keyspace_row(k.name, true, &replication)
    });
    let user =
        view.catalog.keyspaces.values().map(|k: &KeyspaceMeta| {
            keyspace_row(&k.name, k.durable_writes, &k.replication.as_map())
        });
    system.chain(user).collect()
}

fn keyspace_row(name: &str, durable_writes: bool, replication: &BTreeMap<String, String>) -> Row {
    RowBuilder::new(&tables::KEYSPACES)
        .set("keyspace_name", cell::text(name))
        .set("durable_writes", cell::boolean(durable_writes))
        .set("replication", cell::text_map(replication))
        .build()
}

/// The system tables `system_schema` lists: all but the virtual ones.
fn schema_system_tables() -> impl Iterator<Item = &'static TableDef> {
    tables::ALL.iter().copied().filter(|t| !t.is_virtual())
}

/// The virtual tables, which `system_virtual_schema` lists.
fn virtual_system_tables() -> impl Iterator<Item = &'static TableDef> {
    tables::ALL.iter().copied().filter(|t| t.is_virtual())
}

fn virtual_keyspaces() -> Vec<Row> {
    tables::VIRTUAL_KEYSPACES
        .iter()
        .map(|name| {
            RowBuilder::new(&tables::VIRTUAL_KEYSPACES_TABLE)
                .set("keyspace_name", cell::text(name))
                .build()
        })
        .collect()
}

fn virtual_tables() -> Vec<Row> {
    virtual_system_tables()
        .map(|t| {
            RowBuilder::new(&tables::VIRTUAL_TABLES)
                .set("keyspace_name", cell::text(t.keyspace))
                .set("table_name", cell::text(t.name))
                .set("comment", cell::text(t.comment))
                .build()
        })
        .collect()
}

fn virtual_columns() -> Vec<Row> {
    virtual_system_tables()
        .flat_map(|t| {
            t.columns
                .iter()
                .map(move |c| system_column_row(&tables::VIRTUAL_COLUMNS, t, c))
        })
        .collect()
}

fn system_column_row(
    into: &'static TableDef,
    t: &'static TableDef,
    c: &'static tables::ColumnDef,
) -> Row {
    column_row(
        into,
        t.keyspace,
        t.name,
        c.name,
        c.kind.clustering_order(),
        c.kind.name(),
        c.kind.position(),
        c.ty,
    )
}

fn schema_tables(view: &SystemView<'_>) -> Vec<Row> {
    const COMPOUND: &[&str] = &["compound"];
    let system = schema_system_tables()
        .map(|t| table_row(t.keyspace, t.name, &system_table_options(t), COMPOUND));
    let user = view.catalog.tables().map(|t| {
        let flags: &[&str] = if t.counter {
            &["compound", "counter"]
        } else {
            COMPOUND
        };
        table_row(&t.keyspace, &t.name, &user_table_options(t), flags)
    });
    system.chain(user).collect()
}

/// A `system_schema.tables` row; `flags` as Cassandra 4 sets them (`counter` for a
/// counter table).
fn table_row(keyspace: &str, name: &str, o: &TableOptions, flags: &[&str]) -> Row {
    RowBuilder::new(&tables::TABLES)
        .set("keyspace_name", cell::text(keyspace))
        .set("table_name", cell::text(name))
        .set(
            "additional_write_policy",
            cell::text(&o.additional_write_policy),
        )
        .set(
            "bloom_filter_fp_chance",
            cell::double(o.bloom_filter_fp_chance),
        )
        .set("caching", cell::text_map(&o.caching))
        .set("cdc", cell::boolean(o.cdc))
        .set("comment", cell::text(&o.comment))
        .set("compaction", cell::text_map(&o.compaction))
        .set("compression", cell::text_map(&o.compression))
        .set("crc_check_chance", cell::double(o.crc_check_chance))
        .set(
            "dclocal_read_repair_chance",
            cell::double(o.dclocal_read_repair_chance),
        )
        .set("default_time_to_live", cell::int(o.default_time_to_live))
        .set("extensions", cell::blob_map(&o.extensions))
        // Every table Mosaic has is a CQL3 table: compound, not dense, not super.
        .set("flags", cell::text_set(flags, true))
        .set("gc_grace_seconds", cell::int(o.gc_grace_seconds))
        .set("id", cell::uuid(o.id))
        .set("max_index_interval", cell::int(o.max_index_interval))
        .set(
            "memtable_flush_period_in_ms",
            cell::int(o.memtable_flush_period_in_ms),
        )
        .set("min_index_interval", cell::int(o.min_index_interval))
        .set("read_repair", cell::text(&o.read_repair))
        .set("read_repair_chance", cell::double(o.read_repair_chance))
        .set("speculative_retry", cell::text(&o.speculative_retry))
        .build()
}

fn schema_columns(view: &SystemView<'_>) -> Vec<Row> {
    let mut rows: Vec<Row> = schema_system_tables()
        .flat_map(|t| {
            t.columns
                .iter()
                .map(move |c| system_column_row(&tables::COLUMNS, t, c))
        })
        .collect();
    for t in view.catalog.tables() {
        for c in &t.columns {
            let (position, order) = match c.kind {
                ColumnKind::PartitionKey { position } => (position, "none"),
                ColumnKind::Clustering { position, order } => (position, order.name()),
                ColumnKind::Static | ColumnKind::Regular => (usize::MAX, "none"),
            };
            // -1 for non-key columns (and, defensively, for a position past i32).
            let position = i32::try_from(position).unwrap_or(-1);
            rows.push(column_row(
                &tables::COLUMNS,
                &t.keyspace,
                &t.name,
                &c.name,
                order,
                c.kind.name(),
                position,
                &t.type_name(c),
            ));
        }
    }
    rows
}

/// A row of `into` (`system_schema.columns` or `system_virtual_schema.columns`, which
/// have the same columns).
#[allow(clippy::too_many_arguments)]
fn column_row(
    into: &'static TableDef,
    keyspace: &str,
    table: &str,
    column: &str,
    clustering_order: &str,
    kind: &str,
    position: i32,
    ty: &str,
) -> Row {
    RowBuilder::new(into)
        .set("keyspace_name", cell::text(keyspace))
        .set("table_name", cell::text(table))
        .set("column_name", cell::text(column))
        .set("clustering_order", cell::text(clustering_order))
        .set("column_name_bytes", cell::blob(column.as_bytes()))
        .set("kind", cell::text(kind))
        .set("position", cell::int(position))
        .set("type", cell::text(ty))
        .build()
}
