//! The rows of each system table, computed from a [`SystemView`]: the nodes for
//! `system.local`, `system.peers` and `system.peers_v2`, the catalog plus the system
//! tables' own definitions for `system_schema.*`.

use std::collections::BTreeMap;

use super::cell::{self, Cell};
use super::tables::{self, Compaction, Source, TableDef};
use super::SystemView;
use crate::coordinator::NodeInfo;
use crate::schema::{ColumnKind, KeyspaceMeta, TableMeta, TableParams, Uuid};

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

/// A table's options as `system_schema.tables` shows them.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct TableOptions {
    pub(crate) additional_write_policy: String,
    pub(crate) bloom_filter_fp_chance: f64,
    pub(crate) caching: BTreeMap<String, String>,
    pub(crate) cdc: bool,
    pub(crate) comment: String,
    pub(crate) compaction: BTreeMap<String, String>,
    pub(crate) compression: BTreeMap<String, String>,
    pub(crate) crc_check_chance: f64,
    pub(crate) dclocal_read_repair_chance: f64,
    pub(crate) default_time_to_live: i32,
    pub(crate) extensions: BTreeMap<String, Vec<u8>>,
    pub(crate) gc_grace_seconds: i32,
    pub(crate) id: Uuid,
    pub(crate) max_index_interval: i32,
    pub(crate) memtable_flush_period_in_ms: i32,
    pub(crate) min_index_interval: i32,
    pub(crate) read_repair: String,
    pub(crate) read_repair_chance: f64,
    pub(crate) speculative_retry: String,
}

const STCS: &str = "org.apache.cassandra.db.compaction.SizeTieredCompactionStrategy";
const LCS: &str = "org.apache.cassandra.db.compaction.LeveledCompactionStrategy";
const COMPACTION_PACKAGE: &str = "org.apache.cassandra.db.compaction.";
const COMPRESSION_PACKAGE: &str = "org.apache.cassandra.io.compress.";

fn string_map(entries: &[(&str, &str)]) -> BTreeMap<String, String> {
    entries
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

/// Cassandra 4.0's defaults for a table created without options.
fn default_options(id: Uuid) -> TableOptions {
    TableOptions {
        additional_write_policy: "99p".to_owned(),
        bloom_filter_fp_chance: 0.01,
        caching: string_map(&[("keys", "ALL"), ("rows_per_partition", "NONE")]),
        cdc: false,
        comment: String::new(),
        compaction: string_map(&[
            ("class", STCS),
            ("max_threshold", "32"),
            ("min_threshold", "4"),
        ]),
        compression: string_map(&[
            ("chunk_length_in_kb", "16"),
            ("class", "org.apache.cassandra.io.compress.LZ4Compressor"),
        ]),
        crc_check_chance: 1.0,
        // No longer used by Cassandra 4.0, which shows 0 for both read repair chances.
        dclocal_read_repair_chance: 0.0,
        default_time_to_live: 0,
        extensions: BTreeMap::new(),
        gc_grace_seconds: 864_000,
        id,
        max_index_interval: 2048,
        memtable_flush_period_in_ms: 0,
        min_index_interval: 128,
        read_repair: "BLOCKING".to_owned(),
        read_repair_chance: 0.0,
        speculative_retry: "99p".to_owned(),
    }
}

/// A system table's id: stable across nodes and restarts, derived from its names (as
/// Cassandra derives them, though with another digest).
pub(crate) fn system_table_id(table: &TableDef) -> Uuid {
    let name = format!("{}{}", table.keyspace, table.name);
    Uuid::from_digest(xxhash_rust::xxh3::xxh3_128(name.as_bytes()))
}

/// The options of a system table: Cassandra compiles them with read repair off and an
/// hourly memtable flush.
pub(crate) fn system_table_options(table: &TableDef) -> TableOptions {
    let mut o = default_options(system_table_id(table));
    o.comment = table.comment.to_owned();
    o.gc_grace_seconds = table.gc_grace_seconds;
    o.default_time_to_live = table.default_time_to_live;
    o.memtable_flush_period_in_ms = 3_600_000;
    match table.compaction {
        Compaction::SizeTiered => {}
        Compaction::SizeTieredMin2 => {
            o.compaction.insert("min_threshold".into(), "2".into());
        }
        Compaction::Leveled => {
            o.compaction.insert("class".into(), LCS.into());
            o.bloom_filter_fp_chance = 0.1;
        }
    }
    o
}

/// The options of a user table: Mosaic's own, the Cassandra options it keeps verbatim
/// (normalized as Cassandra shows them), Cassandra's defaults for the rest, and the replica
/// layout as an extension.
pub(crate) fn user_table_options(table: &TableMeta) -> TableOptions {
    params_options(&table.params, crate::schema::Uuid(table.id.0))
}

/// The options `params` give a table with id `id`.
fn params_options(params: &TableParams, id: Uuid) -> TableOptions {
    let mut o = default_options(id);
    o.comment = params.comment.clone();
    o.default_time_to_live = params.default_time_to_live;
    o.gc_grace_seconds = params.gc_grace_seconds;
    let extra = |name: &str| params.extra.get(name).map(String::as_str);
    if let Some(map) = extra("compaction").and_then(parse_map) {
        o.compaction = compaction(map);
    }
    o.bloom_filter_fp_chance = default_bloom_filter_fp_chance(&o.compaction);
    if let Some(map) = extra("compression").and_then(parse_map) {
        o.compression = compression(map);
    }
    if let Some(map) = extra("caching").and_then(parse_map) {
        for (k, v) in map {
            let v = if v.parse::<i64>().is_ok() {
                v
            } else {
                v.to_ascii_uppercase()
            };
            o.caching.insert(k, v);
        }
    }
    let double = |name: &str, slot: &mut f64| {
        if let Some(v) = extra(name).and_then(|v| v.trim().parse::<f64>().ok()) {
            *slot = v;
        }
    };
    double("bloom_filter_fp_chance", &mut o.bloom_filter_fp_chance);
    double("crc_check_chance", &mut o.crc_check_chance);
    let int = |name: &str, slot: &mut i32| {
        if let Some(v) = extra(name).and_then(|v| v.trim().parse::<i32>().ok()) {
            *slot = v;
        }
    };
    int("max_index_interval", &mut o.max_index_interval);
    int("min_index_interval", &mut o.min_index_interval);
    int(
        "memtable_flush_period_in_ms",
        &mut o.memtable_flush_period_in_ms,
    );
    if let Some(v) = extra("speculative_retry") {
        o.speculative_retry = speculative_retry(v);
    }
    if let Some(v) = extra("additional_write_policy") {
        o.additional_write_policy = speculative_retry(v);
    }
    if let Some(v) = extra("read_repair") {
        o.read_repair = v.trim().to_ascii_uppercase();
    }
    if let Some(v) = extra("cdc").and_then(|v| v.trim().parse::<bool>().ok()) {
        o.cdc = v;
    }
    if let Some(map) = extra("extensions").and_then(parse_map) {
        for (k, v) in map {
            let bytes = crate::schema::decode_blob_literal(&v).unwrap_or_else(|| v.into_bytes());
            o.extensions.insert(k, bytes);
        }
    }
    o.extensions.insert(
        LAYOUT_EXTENSION.to_owned(),
        params.layout_text().into_bytes(),
    );
    o
}

/// Cassandra's default false-positive chance, which depends on the compaction strategy.
fn default_bloom_filter_fp_chance(compaction: &BTreeMap<String, String>) -> f64 {
    if compaction.get("class").map(String::as_str) == Some(LCS) {
        0.1
    } else {
        0.01
    }
}

/// The Cassandra options of `params` as the DDL layer should keep them: each option that
/// differs from Cassandra's default, in the normalized form `system_schema.tables` shows
/// (maps as `{'k': 'v', …}`, extensions other than the layout as blob constants), plus
/// any `id` given. Tables whose options are the same then have equal parameters (and
/// equal schema digests), however the options were written — in particular a table
/// recreated from its `DESCRIBE` output, which spells out every default.
pub(crate) fn canonical_table_options(params: &TableParams) -> BTreeMap<String, String> {
    let o = params_options(params, Uuid::default());
    let mut d = default_options(Uuid::default());
    d.bloom_filter_fp_chance = default_bloom_filter_fp_chance(&o.compaction);
    let mut out = BTreeMap::new();
    for ((name, value), (_, default)) in o.described().into_iter().zip(d.described()) {
        // Mosaic keeps these in its own parameters, and the layout extension is the
        // layout.
        if matches!(
            name,
            "comment" | "default_time_to_live" | "gc_grace_seconds" | "extensions"
        ) || value == default
        {
            continue;
        }
        out.insert(name.to_owned(), value.stored_text());
    }
    let extensions: BTreeMap<String, String> = o
        .extensions
        .iter()
        .filter(|(k, _)| k.as_str() != LAYOUT_EXTENSION)
        .map(|(k, v)| (k.clone(), crate::schema::encode_blob_literal(v)))
        .collect();
    if !extensions.is_empty() {
        out.insert("extensions".to_owned(), map_text(&extensions));
    }
    if let Some(id) = params.extra.get("id") {
        out.insert("id".to_owned(), id.clone());
    }
    out
}

/// One table option's value, typed: what `DESCRIBE` prints and the DDL layer keeps.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum OptionValue<'o> {
    /// A string.
    Text(&'o str),
    /// A double.
    Double(f64),
    /// An int.
    Int(i32),
    /// A boolean.
    Bool(bool),
    /// A map of strings.
    Map(&'o BTreeMap<String, String>),
    /// A map of blobs (`extensions`).
    Blobs(&'o BTreeMap<String, Vec<u8>>),
}

impl OptionValue<'_> {
    /// The text the DDL layer keeps for it (what [`user_table_options`] reads back).
    fn stored_text(self) -> String {
        match self {
            OptionValue::Text(s) => s.to_owned(),
            OptionValue::Double(v) => v.to_string(),
            OptionValue::Int(v) => v.to_string(),
            OptionValue::Bool(v) => v.to_string(),
            OptionValue::Map(map) => map_text(map),
            OptionValue::Blobs(map) => map_text(
                &map.iter()
                    .map(|(k, v)| (k.clone(), crate::schema::encode_blob_literal(v)))
                    .collect(),
            ),
        }
    }
}

impl TableOptions {
    /// The options `DESCRIBE` shows, in its (alphabetical) order: Cassandra 4.0's.
    pub(crate) fn described(&self) -> [(&'static str, OptionValue<'_>); 16] {
        use OptionValue::*;
        [
            (
                "additional_write_policy",
                Text(&self.additional_write_policy),
            ),
            (
                "bloom_filter_fp_chance",
                Double(self.bloom_filter_fp_chance),
            ),
            ("caching", Map(&self.caching)),
            ("cdc", Bool(self.cdc)),
            ("comment", Text(&self.comment)),
            ("compaction", Map(&self.compaction)),
            ("compression", Map(&self.compression)),
            ("crc_check_chance", Double(self.crc_check_chance)),
            ("default_time_to_live", Int(self.default_time_to_live)),
            ("extensions", Blobs(&self.extensions)),
            ("gc_grace_seconds", Int(self.gc_grace_seconds)),
            ("max_index_interval", Int(self.max_index_interval)),
            (
                "memtable_flush_period_in_ms",
                Int(self.memtable_flush_period_in_ms),
            ),
            ("min_index_interval", Int(self.min_index_interval)),
            ("read_repair", Text(&self.read_repair)),
            ("speculative_retry", Text(&self.speculative_retry)),
        ]
    }
}

/// A CQL string constant: single quotes, inner quotes doubled.
pub(crate) fn cql_string(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

/// A CQL map of strings in key order, `{'k': 'v', …}`: how `DESCRIBE` prints map options
/// and what [`parse_map`] reads back.
pub(crate) fn map_text(map: &BTreeMap<String, String>) -> String {
    let entries: Vec<String> = map
        .iter()
        .map(|(k, v)| format!("{}: {}", cql_string(k), cql_string(v)))
        .collect();
    format!("{{{}}}", entries.join(", "))
}

/// `compaction` as Cassandra 3.11 shows it: the class fully qualified, both thresholds.
fn compaction(mut map: BTreeMap<String, String>) -> BTreeMap<String, String> {
    let class = map.remove("class").unwrap_or_else(|| STCS.to_owned());
    let class = if class.contains('.') {
        class
    } else {
        format!("{COMPACTION_PACKAGE}{class}")
    };
    map.insert("class".into(), class);
    map.entry("max_threshold".into())
        .or_insert_with(|| "32".into());
    map.entry("min_threshold".into())
        .or_insert_with(|| "4".into());
    map
}

/// `compression` as Cassandra 3.11 shows it: `{'enabled': 'false'}` when off, otherwise
/// the class fully qualified and the chunk length in KiB.
fn compression(mut map: BTreeMap<String, String>) -> BTreeMap<String, String> {
    let disabled = map
        .get("enabled")
        .is_some_and(|v| v.eq_ignore_ascii_case("false"))
        || map.get("sstable_compression").is_some_and(String::is_empty)
        || map.get("class").is_some_and(String::is_empty);
    if disabled {
        return string_map(&[("enabled", "false")]);
    }
    map.remove("enabled");
    let class = map
        .remove("class")
        .or_else(|| map.remove("sstable_compression"))
        .unwrap_or_else(|| "LZ4Compressor".to_owned());
    let class = if class.contains('.') {
        class
    } else {
        format!("{COMPRESSION_PACKAGE}{class}")
    };
    map.insert("class".into(), class);
    let chunk = map
        .remove("chunk_length_kb")
        .or_else(|| map.remove("chunk_length_in_kb"))
        .unwrap_or_else(|| "64".to_owned());
    map.insert("chunk_length_in_kb".into(), chunk);
    map
}

/// `speculative_retry` and `additional_write_policy` as Cassandra 4.0 prints them: `99p`
/// (also given as `99PERCENTILE`), `10ms`, `ALWAYS`, `NEVER` (also given as `NONE`).
fn speculative_retry(text: &str) -> String {
    if let Ok(policy) = mosaic_types::SpeculativeRetry::parse(text) {
        return policy.to_string();
    }
    // A value from before options were checked: shown as close to Cassandra as it gets.
    let lower = text.trim().to_ascii_lowercase();
    let percentile = lower
        .strip_suffix("percentile")
        .or_else(|| lower.strip_suffix('p'))
        .and_then(|n| n.parse::<f64>().ok());
    if let Some(n) = percentile {
        // Cassandra prints the percentile with at most four decimals, no trailing zeros.
        let text = format!("{n:.4}");
        let text = text.trim_end_matches('0').trim_end_matches('.');
        format!("{text}p")
    } else if lower == "none" || lower == "never" {
        "NEVER".to_owned()
    } else if lower == "always" {
        "ALWAYS".to_owned()
    } else {
        lower
    }
}

/// Parses the map text the DDL layer keeps for map options: `{'k': 'v', …}` (quotes
/// doubled inside strings, unquoted words and numbers accepted). `None` if malformed, in
/// which case the default is shown.
pub(crate) fn parse_map(text: &str) -> Option<BTreeMap<String, String>> {
    let inner = text.trim().strip_prefix('{')?.strip_suffix('}')?;
    let mut p = MapText {
        chars: inner.chars().peekable(),
    };
    let mut map = BTreeMap::new();
    p.skip_whitespace();
    if p.at_end() {
        return Some(map);
    }
    loop {
        let key = p.item()?;
        p.skip_whitespace();
        p.expect(':')?;
        let value = p.item()?;
        map.insert(key, value);
        p.skip_whitespace();
        if p.at_end() {
            return Some(map);
        }
        p.expect(',')?;
    }
}

struct MapText<'a> {
    chars: std::iter::Peekable<std::str::Chars<'a>>,
}

impl MapText<'_> {
    fn skip_whitespace(&mut self) {
        while self.chars.next_if(|c| c.is_whitespace()).is_some() {}
    }

    fn at_end(&mut self) -> bool {
        self.chars.peek().is_none()
    }

    fn expect(&mut self, c: char) -> Option<()> {
        self.chars.next_if_eq(&c).map(|_| ())
    }

    /// A quoted string or an unquoted word.
    fn item(&mut self) -> Option<String> {
        self.skip_whitespace();
        if self.expect('\'').is_some() {
            let mut s = String::new();
            loop {
                match self.chars.next()? {
                    '\'' if self.expect('\'').is_some() => s.push('\''),
                    '\'' => return Some(s),
                    c => s.push(c),
                }
            }
        }
        let mut s = String::new();
        while let Some(c) = self.chars.next_if(|c| !matches!(c, ':' | ',' | '\'')) {
            s.push(c);
        }
        let s = s.trim();
        (!s.is_empty()).then(|| s.to_owned())
    }
}
