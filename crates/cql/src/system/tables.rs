//! The system tables Mosaic serves, defined as Cassandra 3.11 defines them
//! (`SystemKeyspace`, `SchemaKeyspace`, `AuthKeyspace`, `SystemDistributedKeyspace`,
//! `TraceKeyspace`) with Cassandra 4.0's additions drivers read: `system.peers_v2`, the
//! 4.0 columns of `system_schema.tables`/`views` (`additional_write_policy`,
//! `read_repair`), and the virtual keyspace `system_virtual_schema`, whose tables
//! describe virtual tables (their own three) and, as in Cassandra, are not listed in
//! `system_schema`.
//!
//! Each column's type is kept as the CQL text Cassandra prints in
//! `system_schema.columns.type` (`frozen<map<text, text>>`); [`parse_type`] turns it into
//! the protocol's [`ColumnType`], so the two can never disagree. Columns are listed in the
//! order `SELECT *` returns them (partition key, clustering columns, then the others by
//! name), which a test checks.
//!
//! Tables whose contents Mosaic has no counterpart for (batches, paxos, tracing, auth, …)
//! are served empty: they exist so that drivers and `DESCRIBE` see the same schema as on
//! Cassandra, and a query on them answers with no rows rather than an error.
//!
//! Long on purpose: declarations, one per table in Cassandra's keyspace order, read and
//! checked against Cassandra's as one list; there is no logic here to split.

use std::str::FromStr;

use mosaic_types::CqlType;

use crate::frame::ColumnType;

/// A column's role, with its position for key columns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// The n-th partition key column.
    PartitionKey(u8),
    /// The n-th clustering column (all ascending in system tables).
    Clustering(u8),
    /// A regular column.
    Regular,
}

impl Kind {
    /// `system_schema.columns.kind`.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Kind::PartitionKey(_) => "partition_key",
            Kind::Clustering(_) => "clustering",
            Kind::Regular => "regular",
        }
    }

    /// `system_schema.columns.position`: -1 for non-key columns.
    pub(crate) fn position(self) -> i32 {
        match self {
            Kind::PartitionKey(p) | Kind::Clustering(p) => i32::from(p),
            Kind::Regular => -1,
        }
    }

    /// `system_schema.columns.clustering_order`.
    pub(crate) fn clustering_order(self) -> &'static str {
        match self {
            Kind::Clustering(_) => "asc",
            Kind::PartitionKey(_) | Kind::Regular => "none",
        }
    }
}

/// One column of a system table.
#[derive(Debug)]
pub(crate) struct ColumnDef {
    /// Its name.
    pub(crate) name: &'static str,
    /// Its CQL type as Cassandra prints it.
    pub(crate) ty: &'static str,
    /// Its role.
    pub(crate) kind: Kind,
}

/// Where a table's rows come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Source {
    /// `system.local`.
    Local,
    /// `system.peers`.
    Peers,
    /// `system.peers_v2`.
    PeersV2,
    /// `system_schema.keyspaces`.
    Keyspaces,
    /// `system_schema.tables`.
    Tables,
    /// `system_schema.columns`.
    Columns,
    /// `system_schema.types`.
    Types,
    /// `system_schema.indexes`.
    Indexes,
    /// `system."IndexInfo"`: the indexes this node has built.
    IndexInfo,
    /// `system_virtual_schema.keyspaces`.
    VirtualKeyspaces,
    /// `system_virtual_schema.tables`.
    VirtualTables,
    /// `system_virtual_schema.columns`.
    VirtualColumns,
    /// Always empty.
    Empty,
}

/// Compaction settings of a system table, as its `system_schema.tables.compaction` shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Compaction {
    /// Size-tiered, thresholds 4 and 32.
    SizeTiered,
    /// Size-tiered with min_threshold 2 (`system.batches`).
    SizeTieredMin2,
    /// Leveled (`system.paxos`).
    Leveled,
}

/// One system table.
#[derive(Debug)]
pub(crate) struct TableDef {
    /// Its keyspace.
    pub(crate) keyspace: &'static str,
    /// Its name.
    pub(crate) name: &'static str,
    /// `comment`.
    pub(crate) comment: &'static str,
    /// `gc_grace_seconds`.
    pub(crate) gc_grace_seconds: i32,
    /// `default_time_to_live`.
    pub(crate) default_time_to_live: i32,
    /// `compaction`.
    pub(crate) compaction: Compaction,
    /// Its columns, in `SELECT *` order.
    pub(crate) columns: &'static [ColumnDef],
    /// Where its rows come from.
    pub(crate) source: Source,
}

impl TableDef {
    /// Whether this is a virtual table (of `system_virtual_schema`): listed in that
    /// keyspace's tables rather than in `system_schema`'s.
    pub(crate) fn is_virtual(&self) -> bool {
        VIRTUAL_KEYSPACES.contains(&self.keyspace)
    }

    /// The index of a column by name.
    pub(crate) fn column_index(&self, name: &str) -> Option<usize> {
        self.columns.iter().position(|c| c.name == name)
    }
}

const fn pk(name: &'static str, ty: &'static str, position: u8) -> ColumnDef {
    ColumnDef {
        name,
        ty,
        kind: Kind::PartitionKey(position),
    }
}

const fn ck(name: &'static str, ty: &'static str, position: u8) -> ColumnDef {
    ColumnDef {
        name,
        ty,
        kind: Kind::Clustering(position),
    }
}

const fn col(name: &'static str, ty: &'static str) -> ColumnDef {
    ColumnDef {
        name,
        ty,
        kind: Kind::Regular,
    }
}

/// `gc_grace_seconds` of `system_schema` tables (7 days).
const SCHEMA_GC_GRACE: i32 = 604_800;
/// `gc_grace_seconds` of `system_auth` tables (90 days).
const AUTH_GC_GRACE: i32 = 7_776_000;
/// `gc_grace_seconds` of `system_distributed` tables (10 days).
const DISTRIBUTED_GC_GRACE: i32 = 864_000;

/// A table of keyspace `system` (Cassandra compiles them with gc_grace_seconds 0).
const fn system(
    name: &'static str,
    comment: &'static str,
    columns: &'static [ColumnDef],
    source: Source,
) -> TableDef {
    TableDef {
        keyspace: "system",
        name,
        comment,
        gc_grace_seconds: 0,
        default_time_to_live: 0,
        compaction: Compaction::SizeTiered,
        columns,
        source,
    }
}

const fn in_keyspace(
    keyspace: &'static str,
    gc_grace_seconds: i32,
    name: &'static str,
    comment: &'static str,
    columns: &'static [ColumnDef],
    source: Source,
) -> TableDef {
    TableDef {
        keyspace,
        name,
        comment,
        gc_grace_seconds,
        default_time_to_live: 0,
        compaction: Compaction::SizeTiered,
        columns,
        source,
    }
}

const MAP_TEXT: &str = "frozen<map<text, text>>";

/// `system.local` (Cassandra 4.0's: with ports, without `thrift_version`).
pub(crate) const LOCAL: TableDef = system(
    "local",
    "information about the local node",
    &[
        pk("key", "text", 0),
        col("bootstrapped", "text"),
        col("broadcast_address", "inet"),
        col("broadcast_port", "int"),
        col("cluster_name", "text"),
        col("cql_version", "text"),
        col("data_center", "text"),
        col("gossip_generation", "int"),
        col("host_id", "uuid"),
        col("listen_address", "inet"),
        col("listen_port", "int"),
        col("native_protocol_version", "text"),
        col("partitioner", "text"),
        col("rack", "text"),
        col("release_version", "text"),
        col("rpc_address", "inet"),
        col("rpc_port", "int"),
        col("schema_version", "uuid"),
        col("tokens", "set<text>"),
        col("truncated_at", "map<uuid, blob>"),
    ],
    Source::Local,
);

/// `system.peers`.
pub(crate) const PEERS: TableDef = system(
    "peers",
    "information about known peers in the cluster",
    &[
        pk("peer", "inet", 0),
        col("data_center", "text"),
        col("host_id", "uuid"),
        col("preferred_ip", "inet"),
        col("rack", "text"),
        col("release_version", "text"),
        col("rpc_address", "inet"),
        col("schema_version", "uuid"),
        col("tokens", "set<text>"),
    ],
    Source::Peers,
);

/// `system.peers_v2` (Cassandra 4.0's layout).
pub(crate) const PEERS_V2: TableDef = system(
    "peers_v2",
    "information about known peers in the cluster",
    &[
        pk("peer", "inet", 0),
        ck("peer_port", "int", 0),
        col("data_center", "text"),
        col("host_id", "uuid"),
        col("native_address", "inet"),
        col("native_port", "int"),
        col("preferred_ip", "inet"),
        col("preferred_port", "int"),
        col("rack", "text"),
        col("release_version", "text"),
        col("schema_version", "uuid"),
        col("tokens", "set<text>"),
    ],
    Source::PeersV2,
);

const BATCHES: TableDef = TableDef {
    compaction: Compaction::SizeTieredMin2,
    ..system(
        "batches",
        "batches awaiting replay",
        &[
            pk("id", "timeuuid", 0),
            col("mutations", "list<blob>"),
            col("version", "int"),
        ],
        Source::Empty,
    )
};

pub(crate) const INDEX_INFO: TableDef = system(
    "IndexInfo",
    "built column indexes",
    &[
        pk("table_name", "text", 0),
        ck("index_name", "text", 0),
        col("value", "blob"),
    ],
    Source::IndexInfo,
);

const PAXOS: TableDef = TableDef {
    compaction: Compaction::Leveled,
    ..system(
        "paxos",
        "in-progress paxos proposals",
        &[
            pk("row_key", "blob", 0),
            ck("cf_id", "uuid", 0),
            col("in_progress_ballot", "timeuuid"),
            col("most_recent_commit", "blob"),
            col("most_recent_commit_at", "timeuuid"),
            col("most_recent_commit_version", "int"),
            col("proposal", "blob"),
            col("proposal_ballot", "timeuuid"),
            col("proposal_version", "int"),
        ],
        Source::Empty,
    )
};

const PEER_EVENTS: TableDef = system(
    "peer_events",
    "events related to peers",
    &[
        pk("peer", "inet", 0),
        col("hints_dropped", "map<uuid, int>"),
    ],
    Source::Empty,
);

const RANGE_XFERS: TableDef = system(
    "range_xfers",
    "ranges requested for transfer",
    &[
        pk("token_bytes", "blob", 0),
        col("requested_at", "timestamp"),
    ],
    Source::Empty,
);

const COMPACTION_HISTORY: TableDef = TableDef {
    default_time_to_live: 604_800,
    ..system(
        "compaction_history",
        "week-long compaction history",
        &[
            pk("id", "uuid", 0),
            col("bytes_in", "bigint"),
            col("bytes_out", "bigint"),
            col("columnfamily_name", "text"),
            col("compacted_at", "timestamp"),
            col("keyspace_name", "text"),
            col("rows_merged", "map<int, bigint>"),
        ],
        Source::Empty,
    )
};

const SSTABLE_ACTIVITY: TableDef = system(
    "sstable_activity",
    "historic sstable read rates",
    &[
        pk("keyspace_name", "text", 0),
        pk("columnfamily_name", "text", 1),
        pk("generation", "int", 2),
        col("rate_120m", "double"),
        col("rate_15m", "double"),
    ],
    Source::Empty,
);

const SIZE_ESTIMATES: TableDef = system(
    "size_estimates",
    "per-table primary range size estimates",
    &[
        pk("keyspace_name", "text", 0),
        ck("table_name", "text", 0),
        ck("range_start", "text", 1),
        ck("range_end", "text", 2),
        col("mean_partition_size", "bigint"),
        col("partitions_count", "bigint"),
    ],
    Source::Empty,
);

const AVAILABLE_RANGES: TableDef = system(
    "available_ranges",
    "available keyspace/ranges during bootstrap/replace that are ready to be served",
    &[pk("keyspace_name", "text", 0), col("ranges", "set<blob>")],
    Source::Empty,
);

const TRANSFERRED_RANGES: TableDef = system(
    "transferred_ranges",
    "record of transferred ranges for streaming operation",
    &[
        pk("operation", "text", 0),
        pk("keyspace_name", "text", 1),
        ck("peer", "inet", 0),
        col("ranges", "set<blob>"),
    ],
    Source::Empty,
);

const VIEWS_BUILDS_IN_PROGRESS: TableDef = system(
    "views_builds_in_progress",
    "views builds current progress",
    &[
        pk("keyspace_name", "text", 0),
        ck("view_name", "text", 0),
        col("generation_number", "int"),
        col("last_token", "text"),
    ],
    Source::Empty,
);

const BUILT_VIEWS: TableDef = system(
    "built_views",
    "built views",
    &[
        pk("keyspace_name", "text", 0),
        ck("view_name", "text", 0),
        col("status_replicated", "boolean"),
    ],
    Source::Empty,
);

const PREPARED_STATEMENTS: TableDef = system(
    "prepared_statements",
    "prepared statements",
    &[
        pk("prepared_id", "blob", 0),
        col("logged_keyspace", "text"),
        col("query_string", "text"),
    ],
    Source::Empty,
);

const fn schema(
    name: &'static str,
    comment: &'static str,
    columns: &'static [ColumnDef],
    source: Source,
) -> TableDef {
    in_keyspace(
        "system_schema",
        SCHEMA_GC_GRACE,
        name,
        comment,
        columns,
        source,
    )
}

/// `system_schema.keyspaces`.
pub(crate) const KEYSPACES: TableDef = schema(
    "keyspaces",
    "keyspace definitions",
    &[
        pk("keyspace_name", "text", 0),
        col("durable_writes", "boolean"),
        col("replication", MAP_TEXT),
    ],
    Source::Keyspaces,
);

/// `system_schema.tables`.
pub(crate) const TABLES: TableDef = schema(
    "tables",
    "table definitions",
    &[
        pk("keyspace_name", "text", 0),
        ck("table_name", "text", 0),
        col("additional_write_policy", "text"),
        col("bloom_filter_fp_chance", "double"),
        col("caching", MAP_TEXT),
        col("cdc", "boolean"),
        col("comment", "text"),
        col("compaction", MAP_TEXT),
        col("compression", MAP_TEXT),
        col("crc_check_chance", "double"),
        col("dclocal_read_repair_chance", "double"),
        col("default_time_to_live", "int"),
        col("extensions", "frozen<map<text, blob>>"),
        col("flags", "frozen<set<text>>"),
        col("gc_grace_seconds", "int"),
        col("id", "uuid"),
        col("max_index_interval", "int"),
        col("memtable_flush_period_in_ms", "int"),
        col("min_index_interval", "int"),
        col("read_repair", "text"),
        col("read_repair_chance", "double"),
        col("speculative_retry", "text"),
    ],
    Source::Tables,
);

/// The columns of `system_schema.columns` and `system_virtual_schema.columns`.
const COLUMN_DEFINITIONS: &[ColumnDef] = &[
    pk("keyspace_name", "text", 0),
    ck("table_name", "text", 0),
    ck("column_name", "text", 1),
    col("clustering_order", "text"),
    col("column_name_bytes", "blob"),
    col("kind", "text"),
    col("position", "int"),
    col("type", "text"),
];

/// `system_schema.columns`.
pub(crate) const COLUMNS: TableDef = schema(
    "columns",
    "column definitions",
    COLUMN_DEFINITIONS,
    Source::Columns,
);

const DROPPED_COLUMNS: TableDef = schema(
    "dropped_columns",
    "dropped column registry",
    &[
        pk("keyspace_name", "text", 0),
        ck("table_name", "text", 0),
        ck("column_name", "text", 1),
        col("dropped_time", "timestamp"),
        col("type", "text"),
    ],
    Source::Empty,
);

const TRIGGERS: TableDef = schema(
    "triggers",
    "trigger definitions",
    &[
        pk("keyspace_name", "text", 0),
        ck("table_name", "text", 0),
        ck("trigger_name", "text", 1),
        col("options", MAP_TEXT),
    ],
    Source::Empty,
);

const VIEWS: TableDef = schema(
    "views",
    "view definitions",
    &[
        pk("keyspace_name", "text", 0),
        ck("view_name", "text", 0),
        col("additional_write_policy", "text"),
        col("base_table_id", "uuid"),
        col("base_table_name", "text"),
        col("bloom_filter_fp_chance", "double"),
        col("caching", MAP_TEXT),
        col("cdc", "boolean"),
        col("comment", "text"),
        col("compaction", MAP_TEXT),
        col("compression", MAP_TEXT),
        col("crc_check_chance", "double"),
        col("dclocal_read_repair_chance", "double"),
        col("default_time_to_live", "int"),
        col("extensions", "frozen<map<text, blob>>"),
        col("gc_grace_seconds", "int"),
        col("id", "uuid"),
        col("include_all_columns", "boolean"),
        col("max_index_interval", "int"),
        col("memtable_flush_period_in_ms", "int"),
        col("min_index_interval", "int"),
        col("read_repair", "text"),
        col("read_repair_chance", "double"),
        col("speculative_retry", "text"),
        col("where_clause", "text"),
    ],
    Source::Empty,
);

pub(crate) const TYPES: TableDef = schema(
    "types",
    "user defined type definitions",
    &[
        pk("keyspace_name", "text", 0),
        ck("type_name", "text", 0),
        col("field_names", "frozen<list<text>>"),
        col("field_types", "frozen<list<text>>"),
    ],
    Source::Types,
);

const FUNCTIONS: TableDef = schema(
    "functions",
    "user defined function definitions",
    &[
        pk("keyspace_name", "text", 0),
        ck("function_name", "text", 0),
        ck("argument_types", "frozen<list<text>>", 1),
        col("argument_names", "frozen<list<text>>"),
        col("body", "text"),
        col("called_on_null_input", "boolean"),
        col("language", "text"),
        col("return_type", "text"),
    ],
    Source::Empty,
);

const AGGREGATES: TableDef = schema(
    "aggregates",
    "user defined aggregate definitions",
    &[
        pk("keyspace_name", "text", 0),
        ck("aggregate_name", "text", 0),
        ck("argument_types", "frozen<list<text>>", 1),
        col("final_func", "text"),
        col("initcond", "text"),
        col("return_type", "text"),
        col("state_func", "text"),
        col("state_type", "text"),
    ],
    Source::Empty,
);

pub(crate) const INDEXES: TableDef = schema(
    "indexes",
    "secondary index definitions",
    &[
        pk("keyspace_name", "text", 0),
        ck("table_name", "text", 0),
        ck("index_name", "text", 1),
        col("kind", "text"),
        col("options", MAP_TEXT),
    ],
    Source::Indexes,
);

const fn auth(
    name: &'static str,
    comment: &'static str,
    columns: &'static [ColumnDef],
) -> TableDef {
    in_keyspace(
        "system_auth",
        AUTH_GC_GRACE,
        name,
        comment,
        columns,
        Source::Empty,
    )
}

const ROLES: TableDef = auth(
    "roles",
    "role definitions",
    &[
        pk("role", "text", 0),
        col("can_login", "boolean"),
        col("is_superuser", "boolean"),
        col("member_of", "set<text>"),
        col("salted_hash", "text"),
    ],
);

const ROLE_MEMBERS: TableDef = auth(
    "role_members",
    "role memberships lookup table",
    &[pk("role", "text", 0), ck("member", "text", 0)],
);

const ROLE_PERMISSIONS: TableDef = auth(
    "role_permissions",
    "permissions granted to db roles",
    &[
        pk("role", "text", 0),
        ck("resource", "text", 0),
        col("permissions", "set<text>"),
    ],
);

const RESOURCE_ROLE_INDEX: TableDef = auth(
    // Cassandra's spelling.
    "resource_role_permissons_index",
    "index of db roles with permissions granted on a resource",
    &[pk("resource", "text", 0), ck("role", "text", 0)],
);

const fn distributed(
    name: &'static str,
    comment: &'static str,
    columns: &'static [ColumnDef],
) -> TableDef {
    in_keyspace(
        "system_distributed",
        DISTRIBUTED_GC_GRACE,
        name,
        comment,
        columns,
        Source::Empty,
    )
}

const REPAIR_HISTORY: TableDef = distributed(
    "repair_history",
    "Repair history",
    &[
        pk("keyspace_name", "text", 0),
        pk("columnfamily_name", "text", 1),
        ck("id", "timeuuid", 0),
        col("coordinator", "inet"),
        col("exception_message", "text"),
        col("exception_stacktrace", "text"),
        col("finished_at", "timestamp"),
        col("parent_id", "timeuuid"),
        col("participants", "set<inet>"),
        col("range_begin", "text"),
        col("range_end", "text"),
        col("started_at", "timestamp"),
        col("status", "text"),
    ],
);

const PARENT_REPAIR_HISTORY: TableDef = distributed(
    "parent_repair_history",
    "Repair history",
    &[
        pk("parent_id", "timeuuid", 0),
        col("columnfamily_names", "set<text>"),
        col("exception_message", "text"),
        col("exception_stacktrace", "text"),
        col("finished_at", "timestamp"),
        col("keyspace_name", "text"),
        col("options", "map<text, text>"),
        col("requested_ranges", "set<text>"),
        col("started_at", "timestamp"),
        col("successful_ranges", "set<text>"),
    ],
);

const VIEW_BUILD_STATUS: TableDef = distributed(
    "view_build_status",
    "Materialized View build status",
    &[
        pk("keyspace_name", "text", 0),
        pk("view_name", "text", 1),
        ck("host_id", "uuid", 0),
        col("status", "text"),
    ],
);

const fn traces(
    name: &'static str,
    comment: &'static str,
    columns: &'static [ColumnDef],
) -> TableDef {
    // Cassandra compiles the trace tables with gc_grace_seconds 0 and leaves it.
    in_keyspace("system_traces", 0, name, comment, columns, Source::Empty)
}

const SESSIONS: TableDef = traces(
    "sessions",
    "tracing sessions",
    &[
        pk("session_id", "uuid", 0),
        col("client", "inet"),
        col("command", "text"),
        col("coordinator", "inet"),
        col("duration", "int"),
        col("parameters", "map<text, text>"),
        col("request", "text"),
        col("started_at", "timestamp"),
    ],
);

const EVENTS: TableDef = traces(
    "events",
    "tracing events",
    &[
        pk("session_id", "uuid", 0),
        ck("event_id", "timeuuid", 0),
        col("activity", "text"),
        col("source", "inet"),
        col("source_elapsed", "int"),
        col("thread", "text"),
    ],
);

/// The virtual keyspaces: their tables are virtual, answered from memory, and listed in
/// `system_virtual_schema` instead of `system_schema` (Cassandra 4.0's `system_views` has
/// no tables Mosaic serves, so it is not listed).
pub(crate) const VIRTUAL_KEYSPACES: [&str; 1] = [VIRTUAL_SCHEMA];

/// The virtual keyspace describing virtual tables.
const VIRTUAL_SCHEMA: &str = "system_virtual_schema";

/// A table of `system_virtual_schema` (virtual tables have no compaction or grace
/// period; only their comment is shown).
const fn virtual_schema(
    name: &'static str,
    comment: &'static str,
    columns: &'static [ColumnDef],
    source: Source,
) -> TableDef {
    in_keyspace(VIRTUAL_SCHEMA, 0, name, comment, columns, source)
}

/// `system_virtual_schema.keyspaces`.
pub(crate) const VIRTUAL_KEYSPACES_TABLE: TableDef = virtual_schema(
    "keyspaces",
    "virtual keyspace definitions",
    &[pk("keyspace_name", "text", 0)],
    Source::VirtualKeyspaces,
);

/// `system_virtual_schema.tables`.
pub(crate) const VIRTUAL_TABLES: TableDef = virtual_schema(
    "tables",
    "virtual table definitions",
    &[
        pk("keyspace_name", "text", 0),
        ck("table_name", "text", 0),
        col("comment", "text"),
    ],
    Source::VirtualTables,
);

/// `system_virtual_schema.columns`.
pub(crate) const VIRTUAL_COLUMNS: TableDef = virtual_schema(
    "columns",
    "virtual column definitions",
    COLUMN_DEFINITIONS,
    Source::VirtualColumns,
);

/// Every system table served, grouped by keyspace, sorted by name within each.
pub(crate) static ALL: [&TableDef; 38] = [
    &INDEX_INFO,
    &AVAILABLE_RANGES,
    &BATCHES,
    &BUILT_VIEWS,
    &COMPACTION_HISTORY,
    &LOCAL,
    &PAXOS,
    &PEER_EVENTS,
    &PEERS,
    &PEERS_V2,
    &PREPARED_STATEMENTS,
    &RANGE_XFERS,
    &SIZE_ESTIMATES,
    &SSTABLE_ACTIVITY,
    &TRANSFERRED_RANGES,
    &VIEWS_BUILDS_IN_PROGRESS,
    &AGGREGATES,
    &COLUMNS,
    &DROPPED_COLUMNS,
    &FUNCTIONS,
    &INDEXES,
    &KEYSPACES,
    &TABLES,
    &TRIGGERS,
    &TYPES,
    &VIEWS,
    &RESOURCE_ROLE_INDEX,
    &ROLE_MEMBERS,
    &ROLE_PERMISSIONS,
    &ROLES,
    &PARENT_REPAIR_HISTORY,
    &REPAIR_HISTORY,
    &VIEW_BUILD_STATUS,
    &EVENTS,
    &SESSIONS,
    &VIRTUAL_COLUMNS,
    &VIRTUAL_KEYSPACES_TABLE,
    &VIRTUAL_TABLES,
];

/// A system keyspace as `system_schema.keyspaces` shows it.
#[derive(Debug)]
pub(crate) struct KeyspaceDef {
    /// Its name.
    pub(crate) name: &'static str,
    /// Its replication map, `class` included.
    pub(crate) replication: &'static [(&'static str, &'static str)],
}

const LOCAL_STRATEGY: &[(&str, &str)] = &[("class", "org.apache.cassandra.locator.LocalStrategy")];

/// The system keyspaces of Cassandra 3.11, with the replication it gives them.
pub(crate) static SYSTEM_KEYSPACES: [KeyspaceDef; 5] = [
    KeyspaceDef {
        name: "system",
        replication: LOCAL_STRATEGY,
    },
    KeyspaceDef {
        name: "system_auth",
        // Stored with this many replicas (crate::schema::AUTH_REPLICATION_FACTOR).
        replication: &[
            ("class", "org.apache.cassandra.locator.SimpleStrategy"),
            ("replication_factor", "3"),
        ],
    },
    KeyspaceDef {
        name: "system_distributed",
        replication: &[
            ("class", "org.apache.cassandra.locator.SimpleStrategy"),
            ("replication_factor", "3"),
        ],
    },
    KeyspaceDef {
        name: "system_schema",
        replication: LOCAL_STRATEGY,
    },
    KeyspaceDef {
        name: "system_traces",
        replication: &[
            ("class", "org.apache.cassandra.locator.SimpleStrategy"),
            ("replication_factor", "2"),
        ],
    },
];

/// A system table by keyspace and name.
pub(crate) fn find(keyspace: &str, name: &str) -> Option<&'static TableDef> {
    ALL.iter()
        .copied()
        .find(|t| t.keyspace == keyspace && t.name == name)
}

/// The protocol type of a CQL type as Cassandra prints it in `system_schema.columns`
/// (`text`, `inet`, `set<text>`, `frozen<map<text, blob>>`, …); `None` if it is not one.
/// Frozenness is not visible on the wire, so `frozen<T>` is `T`.
pub(crate) fn parse_type(text: &str) -> Option<ColumnType> {
    let text = text.trim();
    if let Some(inner) = generic(text, "frozen") {
        return parse_type(inner);
    }
    if let Some(inner) = generic(text, "list") {
        return Some(ColumnType::List(Box::new(parse_type(inner)?)));
    }
    if let Some(inner) = generic(text, "set") {
        return Some(ColumnType::Set(Box::new(parse_type(inner)?)));
    }
    if let Some(inner) = generic(text, "map") {
        let (key, value) = split_top_level_comma(inner)?;
        return Some(ColumnType::Map(
            Box::new(parse_type(key)?),
            Box::new(parse_type(value)?),
        ));
    }
    match text {
        "counter" => Some(ColumnType::Counter),
        _ => CqlType::from_str(text).ok().map(ColumnType::Native),
    }
}

/// `inner` of `name<inner>`.
fn generic<'t>(text: &'t str, name: &str) -> Option<&'t str> {
    text.strip_prefix(name)?
        .trim_start()
        .strip_prefix('<')?
        .strip_suffix('>')
}

/// Splits `a, b` at the comma not nested in `<…>`.
fn split_top_level_comma(text: &str) -> Option<(&str, &str)> {
    let mut depth = 0usize;
    for (i, c) in text.char_indices() {
        match c {
            '<' => depth += 1,
            '>' => depth = depth.checked_sub(1)?,
            ',' if depth == 0 => return Some((text.get(..i)?, text.get(i + 1..)?)),
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_column_type_parses() {
        for table in ALL {
            for c in table.columns {
                assert!(
                    parse_type(c.ty).is_some(),
                    "{}.{}.{}: {}",
                    table.keyspace,
                    table.name,
                    c.name,
                    c.ty
                );
            }
        }
        assert_eq!(
            parse_type("frozen<map<text, blob>>"),
            Some(ColumnType::Map(
                Box::new(ColumnType::Native(CqlType::Text)),
                Box::new(ColumnType::Native(CqlType::Blob))
            ))
        );
        assert_eq!(
            parse_type("map<text, frozen<list<int>>>"),
            Some(ColumnType::Map(
                Box::new(ColumnType::Native(CqlType::Text)),
                Box::new(ColumnType::List(Box::new(ColumnType::Native(CqlType::Int))))
            ))
        );
        assert_eq!(parse_type("map<text>"), None);
        assert_eq!(parse_type("nonsense"), None);
    }

    #[test]
    fn columns_are_in_select_star_order_and_keys_are_dense() {
        for table in ALL {
            let mut partition = Vec::new();
            let mut clustering = Vec::new();
            let mut regular = Vec::new();
            for c in table.columns {
                match c.kind {
                    Kind::PartitionKey(p) => {
                        assert!(
                            clustering.is_empty() && regular.is_empty(),
                            "{}",
                            table.name
                        );
                        partition.push(p);
                    }
                    Kind::Clustering(p) => {
                        assert!(regular.is_empty(), "{}", table.name);
                        clustering.push(p);
                    }
                    Kind::Regular => regular.push(c.name),
                }
            }
            let dense = |v: &[u8]| v.iter().enumerate().all(|(i, p)| usize::from(*p) == i);
            assert!(!partition.is_empty() && dense(&partition), "{}", table.name);
            assert!(dense(&clustering), "{}", table.name);
            let mut sorted = regular.clone();
            sorted.sort_unstable();
            assert_eq!(regular, sorted, "{}.{}", table.keyspace, table.name);
        }
    }

    #[test]
    fn tables_are_unique_and_their_keyspaces_listed() {
        for (i, a) in ALL.iter().enumerate() {
            assert!(
                SYSTEM_KEYSPACES.iter().any(|k| k.name == a.keyspace)
                    || VIRTUAL_KEYSPACES.contains(&a.keyspace)
            );
            for b in ALL.iter().skip(i + 1) {
                assert!(a.keyspace != b.keyspace || a.name != b.name, "{}", a.name);
            }
        }
        for k in SYSTEM_KEYSPACES
            .iter()
            .map(|k| k.name)
            .chain(VIRTUAL_KEYSPACES)
        {
            assert!(crate::schema::is_system_keyspace(k));
        }
    }
}
