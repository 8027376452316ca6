//! Keyspace and table DDL: validation as Cassandra does it, then a new catalog handed to
//! the coordinator, and TRUNCATE. Table options are Cassandra 4.0's (its `DESCRIBE` output
//! reads back), plus Mosaic's `layout`; 3.11's read repair chances are accepted and
//! ignored, as they have no 4.0 counterpart.

use std::collections::BTreeMap;
use std::sync::Arc;

use mosaic_rows::ColumnId;

use crate::ast::{
    AlterKeyspaceStatement, AlterTableOperation, AlterTableStatement, ColumnDefinition,
    CreateKeyspaceStatement, CreateTableStatement, Literal, Order, Property, PropertyValue,
    Statement,
};
use crate::coordinator::Coordinator;
use crate::frame::{
    ErrorKind, ErrorResponse, ResultBody, SchemaChange, SchemaChangeTarget, SchemaChangeType,
};
use crate::schema::{
    decode_blob_literal, is_system_keyspace, Catalog, ClusteringOrder, ColumnKind, ColumnMeta,
    KeyspaceMeta, Replication, TableId, TableMeta, TableParams, Uuid,
};
use crate::system::LAYOUT_EXTENSION;
use mosaic_types::Layout;

use super::{invalid, Exec, Processor};

/// Longest keyspace or table name, as in Cassandra.
const NAME_LEN_MAX: usize = 48;

fn config(message: impl Into<String>) -> ErrorResponse {
    ErrorResponse::new(ErrorKind::Config, message)
}

fn check_name(what: &str, name: &str) -> Result<(), ErrorResponse> {
    if name.is_empty()
        || name.len() > NAME_LEN_MAX
        || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
    {
        return Err(invalid(format!(
            "{what} name must not be empty, more than {NAME_LEN_MAX} characters long, or contain non-alphanumeric-underscore characters (got \"{name}\")"
        )));
    }
    Ok(())
}

fn not_modifiable(keyspace: &str) -> ErrorResponse {
    ErrorResponse::new(
        ErrorKind::Unauthorized,
        format!("{keyspace} keyspace is not user-modifiable."),
    )
}

fn schema_change(change: SchemaChangeType, target: SchemaChangeTarget) -> ResultBody {
    ResultBody::SchemaChange(SchemaChange { change, target })
}

/// Runs a DDL statement (or TRUNCATE).
pub(crate) async fn execute<C: Coordinator>(
    p: &Processor<C>,
    exec: &Exec<'_>,
    statement: Statement,
) -> Result<ResultBody, ErrorResponse> {
    let coordinator = &**p.coordinator();
    match statement {
        Statement::CreateKeyspace(s) => create_keyspace(coordinator, &s).await,
        Statement::AlterKeyspace(s) => alter_keyspace(coordinator, &s).await,
        Statement::DropKeyspace(s) => {
            let name = s.name.as_str().to_owned();
            drop_keyspace(coordinator, name, s.if_exists).await
        }
        Statement::CreateTable(s) => {
            let keyspace = user_keyspace(exec, &s.name)?;
            let table = table_from_create(&keyspace, &s, coordinator.default_layout()?)?;
            create_table(coordinator, keyspace, table, s.if_not_exists).await
        }
        Statement::AlterTable(s) => {
            let keyspace = user_keyspace(exec, &s.name)?;
            alter_table_statement(coordinator, keyspace, s).await
        }
        Statement::DropTable(s) => {
            let keyspace = user_keyspace(exec, &s.name)?;
            let name = s.name.name.as_str().to_owned();
            drop_table(coordinator, keyspace, name, s.if_exists).await
        }
        Statement::Truncate(s) => {
            user_keyspace(exec, &s.name)?;
            let table = exec.table(&coordinator.catalog(), &s.name)?;
            coordinator.truncate(table.id).await?;
            Ok(ResultBody::Void)
        }
        other => Err(invalid(format!("Unsupported statement {other}"))),
    }
}

/// The keyspace a table name resolves to, refused when it is a system keyspace.
fn user_keyspace(
    exec: &Exec<'_>,
    name: &crate::ast::QualifiedName,
) -> Result<String, ErrorResponse> {
    let keyspace = exec.keyspace_of(name)?;
    if is_system_keyspace(keyspace) {
        return Err(not_modifiable(keyspace));
    }
    Ok(keyspace.to_owned())
}

/// The shape every schema statement shares: the catalog with its keyspaces edited, and the
/// change announced to clients.
fn edited(
    catalog: &Catalog,
    change: SchemaChangeType,
    target: SchemaChangeTarget,
    edit: impl FnOnce(&mut BTreeMap<String, KeyspaceMeta>),
) -> Result<(Catalog, ResultBody), ErrorResponse> {
    let mut keyspaces = catalog.keyspaces.clone();
    edit(&mut keyspaces);
    Ok((Catalog::new(keyspaces), schema_change(change, target)))
}

/// [`edited`] for one table of `keyspace`: `edit` changes the keyspace's tables.
fn table_edited(
    catalog: &Catalog,
    change: SchemaChangeType,
    keyspace: String,
    table: String,
    edit: impl FnOnce(&mut BTreeMap<String, Arc<TableMeta>>),
) -> Result<(Catalog, ResultBody), ErrorResponse> {
    let ks = keyspace.clone();
    edited(
        catalog,
        change,
        SchemaChangeTarget::Table { keyspace, table },
        |keyspaces| {
            if let Some(k) = keyspaces.get_mut(&ks) {
                edit(&mut k.tables);
            }
        },
    )
}

async fn create_keyspace<C: Coordinator>(
    coordinator: &C,
    s: &CreateKeyspaceStatement,
) -> Result<ResultBody, ErrorResponse> {
    let (name, meta) = keyspace_from_create(s)?;
    let if_not_exists = s.if_not_exists;
    coordinator
        .update_schema(move |catalog| {
            if catalog.keyspace(&name).is_some() {
                if if_not_exists {
                    return Ok((catalog.clone(), ResultBody::Void));
                }
                return Err(ErrorResponse::new(
                    ErrorKind::AlreadyExists {
                        keyspace: name.clone(),
                        table: String::new(),
                    },
                    format!("Cannot add existing keyspace \"{name}\""),
                ));
            }
            let target = SchemaChangeTarget::Keyspace {
                keyspace: name.clone(),
            };
            edited(catalog, SchemaChangeType::Created, target, |k| {
                k.insert(name, meta);
            })
        })
        .await
}

async fn alter_keyspace<C: Coordinator>(
    coordinator: &C,
    s: &AlterKeyspaceStatement,
) -> Result<ResultBody, ErrorResponse> {
    let name = s.name.as_str().to_owned();
    if is_system_keyspace(&name) {
        return Err(not_modifiable(&name));
    }
    let (replication, durable) = keyspace_options(&s_props(s), false)?;
    coordinator
        .update_schema(move |catalog| {
            let Some(old) = catalog.keyspace(&name) else {
                return Err(config(format!(
                    "Cannot update non existing keyspace '{name}'."
                )));
            };
            let mut meta = old.clone();
            if let Some(r) = replication {
                meta.replication = r;
            }
            if let Some(d) = durable {
                meta.durable_writes = d;
            }
            let target = SchemaChangeTarget::Keyspace {
                keyspace: name.clone(),
            };
            edited(catalog, SchemaChangeType::Updated, target, |k| {
                k.insert(name, meta);
            })
        })
        .await
}

async fn drop_keyspace<C: Coordinator>(
    coordinator: &C,
    name: String,
    if_exists: bool,
) -> Result<ResultBody, ErrorResponse> {
    if is_system_keyspace(&name) {
        return Err(not_modifiable(&name));
    }
    coordinator
        .update_schema(move |catalog| {
            if catalog.keyspace(&name).is_none() {
                if if_exists {
                    return Ok((catalog.clone(), ResultBody::Void));
                }
                return Err(config(format!(
                    "Cannot drop non existing keyspace '{name}'."
                )));
            }
            let target = SchemaChangeTarget::Keyspace {
                keyspace: name.clone(),
            };
            edited(catalog, SchemaChangeType::Dropped, target, |k| {
                k.remove(&name);
            })
        })
        .await
}

async fn create_table<C: Coordinator>(
    coordinator: &C,
    keyspace: String,
    table: TableMeta,
    if_not_exists: bool,
) -> Result<ResultBody, ErrorResponse> {
    coordinator
        .update_schema(move |catalog| {
            let Some(ks) = catalog.keyspace(&keyspace) else {
                return Err(invalid(format!("Keyspace '{keyspace}' does not exist")));
            };
            let name = table.name.clone();
            if ks.tables.contains_key(&name) {
                if if_not_exists {
                    return Ok((catalog.clone(), ResultBody::Void));
                }
                return Err(ErrorResponse::new(
                    ErrorKind::AlreadyExists {
                        keyspace: keyspace.clone(),
                        table: name.clone(),
                    },
                    format!(
                        "Cannot add already existing table \"{name}\" to keyspace \"{keyspace}\""
                    ),
                ));
            }
            table_edited(
                catalog,
                SchemaChangeType::Created,
                keyspace,
                name.clone(),
                |t| {
                    t.insert(name, Arc::new(table));
                },
            )
        })
        .await
}

async fn alter_table_statement<C: Coordinator>(
    coordinator: &C,
    keyspace: String,
    s: AlterTableStatement,
) -> Result<ResultBody, ErrorResponse> {
    coordinator
        .update_schema(move |catalog| {
            let name = s.name.name.as_str().to_owned();
            let Some(old) = catalog.table(&keyspace, &name) else {
                if catalog.keyspace(&keyspace).is_none() {
                    return Err(invalid(format!("Keyspace '{keyspace}' does not exist")));
                }
                return Err(invalid(format!("unconfigured table {name}")));
            };
            let table = alter_table(old, &s)?;
            table_edited(
                catalog,
                SchemaChangeType::Updated,
                keyspace,
                name.clone(),
                |t| {
                    t.insert(name, Arc::new(table));
                },
            )
        })
        .await
}

async fn drop_table<C: Coordinator>(
    coordinator: &C,
    keyspace: String,
    name: String,
    if_exists: bool,
) -> Result<ResultBody, ErrorResponse> {
    coordinator
        .update_schema(move |catalog| {
            if catalog.table(&keyspace, &name).is_none() {
                if if_exists {
                    return Ok((catalog.clone(), ResultBody::Void));
                }
                if catalog.keyspace(&keyspace).is_none() {
                    return Err(invalid(format!("Keyspace '{keyspace}' does not exist")));
                }
                return Err(config(format!(
                    "Cannot drop non existing table '{name}' in keyspace '{keyspace}'."
                )));
            }
            table_edited(
                catalog,
                SchemaChangeType::Dropped,
                keyspace,
                name.clone(),
                |t| {
                    t.remove(&name);
                },
            )
        })
        .await
}

fn s_props(s: &AlterKeyspaceStatement) -> Vec<Property> {
    s.properties.clone()
}

fn keyspace_from_create(
    s: &CreateKeyspaceStatement,
) -> Result<(String, KeyspaceMeta), ErrorResponse> {
    let name = s.name.as_str().to_owned();
    check_name("Keyspace", &name)?;
    if is_system_keyspace(&name) {
        return Err(not_modifiable(&name));
    }
    let (replication, durable) = keyspace_options(&s.properties, true)?;
    let replication =
        replication.ok_or_else(|| config("Missing mandatory replication strategy class"))?;
    Ok((
        name.clone(),
        KeyspaceMeta {
            name,
            replication,
            durable_writes: durable.unwrap_or(true),
            tables: BTreeMap::new(),
        },
    ))
}

/// Parses `replication` and `durable_writes`.
fn keyspace_options(
    properties: &[Property],
    creating: bool,
) -> Result<(Option<Replication>, Option<bool>), ErrorResponse> {
    let mut replication = None;
    let mut durable = None;
    for p in properties {
        match (p.name.as_str(), &p.value) {
            ("replication", PropertyValue::Map(entries)) => {
                replication = Some(parse_replication(entries)?);
            }
            ("durable_writes", PropertyValue::Constant(lit)) => {
                durable = Some(
                    property_bool(lit)
                        .ok_or_else(|| invalid("Invalid boolean value for durable_writes"))?,
                );
            }
            ("replication" | "durable_writes", _) => {
                return Err(ErrorResponse::new(
                    ErrorKind::Syntax,
                    format!("Invalid value for property '{}'", p.name.as_str()),
                ))
            }
            (other, _) => {
                return Err(ErrorResponse::new(
                    ErrorKind::Syntax,
                    format!("Unknown property '{other}'"),
                ))
            }
        }
    }
    if creating && replication.is_none() {
        return Err(config("Missing mandatory replication strategy class"));
    }
    Ok((replication, durable))
}

fn property_bool(lit: &Literal) -> Option<bool> {
    match lit {
        Literal::Boolean(b) => Some(*b),
        Literal::String(s) => s.parse::<bool>().ok(),
        _ => None,
    }
}

fn parse_replication(entries: &[(String, String)]) -> Result<Replication, ErrorResponse> {
    let mut class = None;
    let mut options = BTreeMap::new();
    for (k, v) in entries {
        if k == "class" {
            class = Some(v.clone());
        } else {
            options.insert(k.clone(), v.clone());
        }
    }
    let class = class.ok_or_else(|| config("Missing replication strategy class"))?;
    let short = class.rsplit('.').next().unwrap_or(&class);
    let full = match short {
        "SimpleStrategy" => "org.apache.cassandra.locator.SimpleStrategy",
        "NetworkTopologyStrategy" => "org.apache.cassandra.locator.NetworkTopologyStrategy",
        _ => {
            return Err(config(format!(
                "Unable to find replication strategy class '{}'",
                if class.contains('.') {
                    class.clone()
                } else {
                    format!("org.apache.cassandra.locator.{class}")
                }
            )))
        }
    };
    let check_rf = |key: &str, v: &str| -> Result<(), ErrorResponse> {
        match v.parse::<i64>() {
            Ok(n) if n >= 0 => Ok(()),
            _ => Err(config(format!(
                "Replication factor must be non-negative integer; found {v} for {key}"
            ))),
        }
    };
    if short == "SimpleStrategy" {
        let Some(rf) = options.get("replication_factor") else {
            return Err(config(
                "SimpleStrategy requires a replication_factor strategy option.",
            ));
        };
        check_rf("replication_factor", rf)?;
        if let Some(unknown) = options.keys().find(|k| *k != "replication_factor") {
            return Err(config(format!(
                "Unrecognized strategy option {{{unknown}}} passed to SimpleStrategy for keyspace"
            )));
        }
    } else {
        for (k, v) in &options {
            check_rf(k, v)?;
        }
    }
    Ok(Replication {
        class: full.to_owned(),
        options,
    })
}

/// Table options Cassandra 4.0 accepts that Mosaic keeps verbatim without using them
/// (shown in `system_schema.tables` and by `DESCRIBE`).
const KNOWN_TABLE_OPTIONS: [&str; 13] = [
    "additional_write_policy",
    "bloom_filter_fp_chance",
    "caching",
    "cdc",
    "compaction",
    "compression",
    "crc_check_chance",
    "max_index_interval",
    "memtable_flush_period_in_ms",
    "min_index_interval",
    "read_repair",
    "speculative_retry",
    "id",
];

/// Cassandra 3.11's read repair chances, which Cassandra 4.0 no longer has: accepted so
/// 3.11 schema dumps still load, and ignored.
const OBSOLETE_TABLE_OPTIONS: [&str; 2] = ["dclocal_read_repair_chance", "read_repair_chance"];

fn literal_text(lit: &Literal) -> String {
    match lit {
        Literal::String(s) => s.clone(),
        Literal::Integer(s) | Literal::Float(s) => s.clone(),
        Literal::Boolean(b) => b.to_string(),
        other => other.to_string(),
    }
}

/// The map text kept for map options (normalized later by
/// [`crate::system::canonical_table_options`]); a repeated key keeps its last value.
fn map_text<'e>(entries: impl IntoIterator<Item = (&'e str, &'e str)>) -> String {
    let map: BTreeMap<String, String> = entries
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
    crate::system::map_text(&map)
}

/// The layout a `layout` option names (case-insensitively).
fn check_layout(layout: &str) -> Result<Layout, ErrorResponse> {
    let layout = layout.to_ascii_lowercase();
    Layout::parse(&layout).ok_or_else(|| {
        config(format!(
            "Unknown layout '{layout}'; this build stores: {}",
            Layout::valid_names()
        ))
    })
}

/// `extensions = {'name': 0x…, …}`: blob values, as `DESCRIBE` prints them. The
/// `mosaic.layout` extension is the table's layout (how `system_schema.tables` and
/// `DESCRIBE` show it), so it sets the layout; the others are kept.
fn apply_extensions(
    params: &mut TableParams,
    entries: &[(String, String)],
) -> Result<(), ErrorResponse> {
    let mut kept = Vec::new();
    for (name, value) in entries {
        let invalid_value = || {
            config(format!(
                "Invalid value for extension '{name}': expected a blob constant such as 0x0102"
            ))
        };
        let bytes = decode_blob_literal(value).ok_or_else(invalid_value)?;
        if name == LAYOUT_EXTENSION {
            let layout = String::from_utf8(bytes).map_err(|_| invalid_value())?;
            params.layout = check_layout(&layout)?;
        } else {
            kept.push((name.as_str(), value.as_str()));
        }
    }
    if kept.is_empty() {
        params.extra.remove("extensions");
    } else {
        params.extra.insert("extensions".to_owned(), map_text(kept));
    }
    Ok(())
}

fn int_property(name: &str, value: &PropertyValue, min: i64) -> Result<i32, ErrorResponse> {
    let n = match value {
        PropertyValue::Constant(Literal::Integer(s))
        | PropertyValue::Constant(Literal::String(s)) => s.parse::<i64>().ok(),
        _ => None,
    };
    match n.and_then(|n| i32::try_from(n).ok()) {
        Some(n) if i64::from(n) >= min => Ok(n),
        _ => Err(config(format!(
            "Invalid value for {name}: must be an integer >= {min}"
        ))),
    }
}

/// Applies `WITH` properties to table params.
fn apply_table_properties(
    params: &mut TableParams,
    properties: &[Property],
) -> Result<(), ErrorResponse> {
    for p in properties {
        let name = p.name.as_str();
        match name {
            "layout" => {
                let PropertyValue::Constant(Literal::String(layout)) = &p.value else {
                    return Err(config(
                        "Invalid value for layout: expected a string such as 'uniform'",
                    ));
                };
                params.layout = check_layout(layout)?;
            }
            "extensions" => {
                let PropertyValue::Map(entries) = &p.value else {
                    return Err(config(
                        "Invalid value for extensions: expected a map such as {'name': 0x0102}",
                    ));
                };
                apply_extensions(params, entries)?;
            }
            "read_repair" => {
                let value = match &p.value {
                    PropertyValue::Constant(Literal::String(s)) => s.to_ascii_uppercase(),
                    _ => String::new(),
                };
                if !matches!(value.as_str(), "BLOCKING" | "NONE") {
                    return Err(config(
                        "Invalid value for read_repair: expected 'BLOCKING' or 'NONE'",
                    ));
                }
                params.extra.insert(name.to_owned(), value);
            }
            obsolete if OBSOLETE_TABLE_OPTIONS.contains(&obsolete) => {}
            "comment" => {
                let PropertyValue::Constant(lit) = &p.value else {
                    return Err(config("Invalid value for comment"));
                };
                params.comment = literal_text(lit);
            }
            "default_time_to_live" => {
                let ttl = int_property(name, &p.value, 0)?;
                if ttl > super::write::TTL_MAX {
                    return Err(config(format!(
                        "default_time_to_live must be less than or equal to {} (got {ttl})",
                        super::write::TTL_MAX
                    )));
                }
                params.default_time_to_live = ttl;
            }
            "gc_grace_seconds" => params.gc_grace_seconds = int_property(name, &p.value, 0)?,
            known if KNOWN_TABLE_OPTIONS.contains(&known) => {
                let text = match &p.value {
                    PropertyValue::Constant(lit) => literal_text(lit),
                    PropertyValue::Map(entries) => {
                        map_text(entries.iter().map(|(k, v)| (k.as_str(), v.as_str())))
                    }
                };
                params.extra.insert(known.to_owned(), text);
            }
            other => {
                return Err(ErrorResponse::new(
                    ErrorKind::Syntax,
                    format!("Unknown property '{other}'"),
                ))
            }
        }
    }
    // Kept in normalized form, defaults left out: equal options, equal parameters.
    params.extra = crate::system::canonical_table_options(params);
    Ok(())
}

/// The table `s` creates in `keyspace`; without a `layout` option it gets
/// `default_layout` (the cluster's, from the coordinator).
fn table_from_create(
    keyspace: &str,
    s: &CreateTableStatement,
    default_layout: Layout,
) -> Result<TableMeta, ErrorResponse> {
    let name = s.name.name.as_str().to_owned();
    check_name("Table", &name)?;
    let mut seen = std::collections::HashSet::new();
    for c in &s.columns {
        if !seen.insert(c.name.as_str()) {
            return Err(invalid(format!(
                "Multiple definition of identifier {}",
                c.name.as_str()
            )));
        }
    }
    let find = |ident: &crate::ast::Ident| -> Result<&ColumnDefinition, ErrorResponse> {
        s.columns.iter().find(|c| c.name == *ident).ok_or_else(|| {
            invalid(format!(
                "Unknown definition {} referenced in PRIMARY KEY",
                ident.as_str()
            ))
        })
    };
    let mut key_names = std::collections::HashSet::new();
    for ident in s
        .primary_key
        .partition_key
        .iter()
        .chain(&s.primary_key.clustering_columns)
    {
        if !key_names.insert(ident.as_str()) {
            return Err(invalid(format!(
                "Duplicate definition for column {} in PRIMARY KEY",
                ident.as_str()
            )));
        }
        let def = find(ident)?;
        if def.is_static {
            return Err(invalid(format!(
                "Static column {} cannot be part of the PRIMARY KEY",
                ident.as_str()
            )));
        }
    }
    let has_static = s.columns.iter().any(|c| c.is_static);
    if has_static && s.primary_key.clustering_columns.is_empty() {
        return Err(invalid(
            "Static columns are only useful (and thus allowed) if the table has at least one clustering column",
        ));
    }
    // CLUSTERING ORDER BY: clustering columns only, in clustering order.
    let mut orders = vec![ClusteringOrder::Asc; s.primary_key.clustering_columns.len()];
    let mut last_position = None;
    for (ident, order) in &s.clustering_order {
        let Some(position) = s
            .primary_key
            .clustering_columns
            .iter()
            .position(|c| c == ident)
        else {
            return Err(invalid(format!(
                "Only clustering key columns can be defined in CLUSTERING ORDER directive: {} is not a clustering column",
                ident.as_str()
            )));
        };
        if last_position.is_some_and(|last| position <= last) {
            return Err(invalid(
                "The order of columns in the CLUSTERING ORDER directive must match that of the clustering columns",
            ));
        }
        last_position = Some(position);
        if let Some(slot) = orders.get_mut(position) {
            *slot = match order {
                Order::Asc => ClusteringOrder::Asc,
                Order::Desc => ClusteringOrder::Desc,
            };
        }
    }
    let mut columns = Vec::with_capacity(s.columns.len());
    let mut next_id = 0u32;
    for (position, ident) in s.primary_key.partition_key.iter().enumerate() {
        let def = find(ident)?;
        columns.push(ColumnMeta {
            name: def.name.as_str().to_owned(),
            ty: def.ty,
            kind: ColumnKind::PartitionKey { position },
            id: ColumnId(next_id),
        });
        next_id += 1;
    }
    for (position, ident) in s.primary_key.clustering_columns.iter().enumerate() {
        let def = find(ident)?;
        columns.push(ColumnMeta {
            name: def.name.as_str().to_owned(),
            ty: def.ty,
            kind: ColumnKind::Clustering {
                position,
                order: orders
                    .get(position)
                    .copied()
                    .unwrap_or(ClusteringOrder::Asc),
            },
            id: ColumnId(next_id),
        });
        next_id += 1;
    }
    for def in &s.columns {
        if key_names.contains(def.name.as_str()) {
            continue;
        }
        columns.push(ColumnMeta {
            name: def.name.as_str().to_owned(),
            ty: def.ty,
            kind: if def.is_static {
                ColumnKind::Static
            } else {
                ColumnKind::Regular
            },
            id: ColumnId(next_id),
        });
        next_id += 1;
    }
    let mut params = TableParams {
        layout: default_layout,
        ..TableParams::default()
    };
    apply_table_properties(&mut params, &s.properties)?;
    Ok(TableMeta {
        keyspace: keyspace.to_owned(),
        name,
        id: TableId(Uuid::random().0),
        columns,
        params,
        next_column_id: next_id,
    })
}

fn alter_table(old: &TableMeta, s: &AlterTableStatement) -> Result<TableMeta, ErrorResponse> {
    let mut table = old.clone();
    match &s.operation {
        AlterTableOperation::Add(defs) => {
            let has_clustering = !table.clustering().is_empty();
            for def in defs {
                let name = def.name.as_str();
                if table.column(name).is_some() {
                    return Err(invalid(format!(
                        "Invalid column name {name} because it conflicts with an existing column"
                    )));
                }
                if def.is_static && !has_clustering {
                    return Err(invalid(format!(
                        "Static columns are not allowed in tables with no clustering columns (adding {name})"
                    )));
                }
                table.columns.push(ColumnMeta {
                    name: name.to_owned(),
                    ty: def.ty,
                    kind: if def.is_static {
                        ColumnKind::Static
                    } else {
                        ColumnKind::Regular
                    },
                    id: ColumnId(table.next_column_id),
                });
                table.next_column_id += 1;
            }
        }
        AlterTableOperation::Drop(names) => {
            for ident in names {
                let name = ident.as_str();
                let Some(col) = table.column(name) else {
                    return Err(invalid(format!(
                        "Column {name} was not found in table {}",
                        table.name
                    )));
                };
                if col.kind.is_primary_key() {
                    return Err(invalid(format!("Cannot drop PRIMARY KEY part {name}")));
                }
                table.columns.retain(|c| c.name != name);
            }
        }
        AlterTableOperation::Rename(pairs) => {
            for (from, to) in pairs {
                let Some(index) = table.column_index(from.as_str()) else {
                    return Err(invalid(format!(
                        "Cannot rename unknown column {} in table {}",
                        from.as_str(),
                        table.name
                    )));
                };
                if table.column(to.as_str()).is_some() {
                    return Err(invalid(format!(
                        "Cannot rename column {} to {} in table {}; another column of that name already exist",
                        from.as_str(),
                        to.as_str(),
                        table.name
                    )));
                }
                let Some(col) = table.columns.get_mut(index) else {
                    continue;
                };
                if !col.kind.is_primary_key() {
                    return Err(invalid(format!(
                        "Cannot rename non PRIMARY KEY part {}",
                        from.as_str()
                    )));
                }
                col.name = to.as_str().to_owned();
            }
        }
        AlterTableOperation::With(properties) => {
            apply_table_properties(&mut table.params, properties)?;
            // Each replica's data is stored in the layout's own structures; changing it
            // would need every node to rewrite the table, which nothing does (yet).
            if table.params.layout != old.params.layout {
                return Err(config(format!(
                    "Cannot change the layout of table {}.{} from '{}' to '{}': a table keeps \
                     the layout it was created with (create a new table with the layout and \
                     copy the data)",
                    table.keyspace, table.name, old.params.layout, table.params.layout
                )));
            }
        }
    }
    Ok(table)
}
