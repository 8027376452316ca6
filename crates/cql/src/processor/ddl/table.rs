//! The table a `CREATE TABLE` defines and the one an `ALTER TABLE` leaves: columns,
//! primary key, clustering order, column ids never reused.

use super::*;

use mosaic_types::DataType;

/// The table `s` creates in `keyspace`; without a `layout` option it gets
/// `default_layout` (the cluster's, from the coordinator).
pub(super) fn table_from_create(
    keyspace: &str,
    s: &CreateTableStatement,
    default_layout: Layout,
) -> Result<TableMeta, ErrorResponse> {
    let name = s.name.name.as_str().to_owned();
    check_name("Table", &name)?;
    let key_names = check_columns(s)?;
    let orders = clustering_orders(s)?;
    let columns = column_metas(s, &key_names, &orders)?;
    let next_column_id = columns.len() as u32;
    let mut params = TableParams {
        layout: default_layout,
        ..TableParams::default()
    };
    apply_table_properties(&mut params, &s.properties)?;
    let defaulted = !s
        .properties
        .iter()
        .any(|p| matches!(p.name.as_str(), "layout" | "extensions"));
    let table = TableMeta {
        keyspace: keyspace.to_owned(),
        name,
        id: TableId(Uuid::random().0),
        columns,
        params,
        next_column_id,
        indexes: Default::default(),
        dropped_columns: Default::default(),
        counter: s.columns.iter().any(|c| c.counter),
        derived: Default::default(),
    };
    check_counter_ttl(&table)?;
    check_layout_columns(&table, defaulted)?;
    Ok(table)
}

/// The definition of a column the PRIMARY KEY names.
fn key_column<'s>(
    s: &'s CreateTableStatement,
    ident: &crate::ast::Ident,
) -> Result<&'s ColumnDefinition, ErrorResponse> {
    s.columns.iter().find(|c| c.name == *ident).ok_or_else(|| {
        invalid(format!(
            "Unknown definition {} referenced in PRIMARY KEY",
            ident.as_str()
        ))
    })
}

/// Checks the column definitions against the PRIMARY KEY (no duplicates, key columns
/// defined, not `duration` and not static, static columns only with clustering columns);
/// the key's names.
fn check_columns(
    s: &CreateTableStatement,
) -> Result<std::collections::HashSet<&str>, ErrorResponse> {
    let mut seen = std::collections::HashSet::new();
    for c in &s.columns {
        if !seen.insert(c.name.as_str()) {
            return Err(invalid(format!(
                "Multiple definition of identifier {}",
                c.name.as_str()
            )));
        }
    }
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
        let def = key_column(s, ident)?;
        if def.ty.is_multi_cell() {
            let what = if def.ty.is_collection() {
                "collection"
            } else {
                "user-defined"
            };
            return Err(invalid(format!(
                "Invalid non-frozen {what} type {} for PRIMARY KEY column '{}'",
                def.ty,
                ident.as_str()
            )));
        }
        if def.ty.contains_duration() {
            // Cassandra 4's CreateTableStatement, word for word.
            return Err(invalid(format!(
                "duration type is not supported for PRIMARY KEY column '{}'",
                ident.as_str()
            )));
        }
        if def.counter {
            // Cassandra 4's CreateTableStatement, word for word.
            return Err(invalid(format!(
                "counter type is not supported for PRIMARY KEY column '{}'",
                ident.as_str()
            )));
        }
        if def.is_static {
            return Err(invalid(format!(
                "Static column {} cannot be part of the PRIMARY KEY",
                ident.as_str()
            )));
        }
    }
    let counters = s.columns.iter().filter(|c| c.counter).count();
    if counters > 0 && counters + key_names.len() != s.columns.len() {
        return Err(invalid(
            "Cannot mix counter and non counter columns in the same table",
        ));
    }
    let has_static = s.columns.iter().any(|c| c.is_static);
    if has_static && s.primary_key.clustering_columns.is_empty() {
        return Err(invalid(
            "Static columns are only useful (and thus allowed) if the table has at least one clustering column",
        ));
    }
    Ok(key_names)
}

/// CLUSTERING ORDER BY: clustering columns only, in clustering order; ascending where
/// not given.
fn clustering_orders(s: &CreateTableStatement) -> Result<Vec<ClusteringOrder>, ErrorResponse> {
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
    Ok(orders)
}

/// The columns in id order: partition key, clustering columns, then the others as
/// declared; ids from 0.
fn column_metas(
    s: &CreateTableStatement,
    key_names: &std::collections::HashSet<&str>,
    orders: &[ClusteringOrder],
) -> Result<Vec<ColumnMeta>, ErrorResponse> {
    let mut columns: Vec<ColumnMeta> = Vec::with_capacity(s.columns.len());
    let mut push = |def: &ColumnDefinition, kind: ColumnKind| {
        let id = ColumnId(columns.len() as u32);
        columns.push(ColumnMeta {
            name: def.name.as_str().to_owned(),
            ty: def.ty.clone(),
            kind,
            id,
        });
    };
    for (position, ident) in s.primary_key.partition_key.iter().enumerate() {
        push(key_column(s, ident)?, ColumnKind::PartitionKey { position });
    }
    for (position, ident) in s.primary_key.clustering_columns.iter().enumerate() {
        let order = orders
            .get(position)
            .copied()
            .unwrap_or(ClusteringOrder::Asc);
        push(
            key_column(s, ident)?,
            ColumnKind::Clustering { position, order },
        );
    }
    for def in &s.columns {
        if !key_names.contains(def.name.as_str()) {
            let kind = if def.is_static {
                ColumnKind::Static
            } else {
                ColumnKind::Regular
            };
            push(def, kind);
        }
    }
    Ok(columns)
}

/// The table an `ALTER TABLE` leaves.
pub(super) fn alter_table(
    old: &TableMeta,
    s: &AlterTableStatement,
) -> Result<TableMeta, ErrorResponse> {
    let mut table = old.clone();
    match &s.operation {
        AlterTableOperation::Add(defs) => add_columns(&mut table, defs)?,
        AlterTableOperation::Drop(names) => drop_columns(&mut table, names)?,
        AlterTableOperation::Rename(pairs) => rename_columns(&mut table, pairs)?,
        AlterTableOperation::With(properties) => {
            apply_table_properties(&mut table.params, properties)?;
            check_counter_ttl(&table)?;
            check_layout_change(old, &table)?;
        }
    }
    check_layout_columns(&table, false)?;
    Ok(table)
}

/// A counter table has no `default_time_to_live` (counters cannot expire).
fn check_counter_ttl(table: &TableMeta) -> Result<(), ErrorResponse> {
    if table.counter && table.params.default_time_to_live != 0 {
        return Err(invalid(
            "Cannot set default_time_to_live on a table with counters",
        ));
    }
    Ok(())
}

/// Refuses an `ALTER TABLE … WITH` that changes what the layout cannot: its class ever
/// (each replica's data is stored in the layout's own structures; changing it would need
/// every node to rewrite the table, which nothing does), and the options of every layout
/// but `heterogeneous` (they shape those structures and are read when the table opens).
/// A heterogeneous table's options (`replica_orders`, `auto`, `auto_min_gain`) may change:
/// its replicas re-sort their rows into new orders. As with Cassandra's `compaction` map,
/// the map given replaces the old one whole; options it leaves out take their defaults.
fn check_layout_change(old: &TableMeta, new: &TableMeta) -> Result<(), ErrorResponse> {
    let (before, after) = (&old.params, &new.params);
    let refuse = |why: &str| {
        config(format!(
            "Cannot change the layout of table {}.{} from {} to {}: {why} (create a new \
             table with the layout and copy the data)",
            new.keyspace,
            new.name,
            layout_literal(before),
            layout_literal(after)
        ))
    };
    if after.layout != before.layout {
        return Err(refuse("a table keeps its layout for life"));
    }
    if after.layout != Layout::Heterogeneous && after.layout_options != before.layout_options {
        return Err(refuse(&format!(
            "a table keeps its layout for life, and the options of layout '{}' with it",
            after.layout
        )));
    }
    Ok(())
}

/// The layout as a `layout = …` value: `'name'`, or the map.
fn layout_literal(params: &TableParams) -> String {
    if params.layout_options.is_empty() {
        format!("'{}'", params.layout)
    } else {
        params.layout_text()
    }
}

/// `ADD`: new regular or static columns, with ids never used before in this table.
fn add_columns(table: &mut TableMeta, defs: &[ColumnDefinition]) -> Result<(), ErrorResponse> {
    let has_clustering = !table.clustering().is_empty();
    for def in defs {
        let name = def.name.as_str();
        if table.column(name).is_some() {
            return Err(invalid(format!(
                "Invalid column name {name} because it conflicts with an existing column"
            )));
        }
        if def.counter != table.counter {
            // Cassandra 4.1's TableMetadata.validate, word for word (a Config error).
            let (column, table_kind) = if def.counter {
                ("a counter", "non counter")
            } else {
                ("a non counter", "counter")
            };
            return Err(config(format!(
                "{}.{}: Cannot have {column} column (\"{name}\") in a {table_kind} table",
                table.keyspace, table.name
            )));
        }
        if let Some(dropped) = table.dropped_columns.get(name) {
            if !value_compatible(&def.ty, &dropped.ty) {
                return Err(invalid(format!(
                    "Cannot re-add previously dropped column '{name}' of type {}, incompatible with previous type {}",
                    def.ty, dropped.ty
                )));
            }
            if dropped.is_static != def.is_static {
                let kind = |s: bool| if s { "STATIC" } else { "REGULAR" };
                return Err(invalid(format!(
                    "Cannot re-add previously dropped column '{name}' of kind {}, incompatible with previous kind {}",
                    kind(def.is_static),
                    kind(dropped.is_static)
                )));
            }
        }
        if def.is_static && !has_clustering {
            return Err(invalid(format!(
                "Static columns are not allowed in tables with no clustering columns (adding {name})"
            )));
        }
        table.columns.push(ColumnMeta {
            name: name.to_owned(),
            ty: def.ty.clone(),
            kind: if def.is_static {
                ColumnKind::Static
            } else {
                ColumnKind::Regular
            },
            id: ColumnId(table.next_column_id),
        });
        table.next_column_id += 1;
    }
    Ok(())
}

/// `DROP`: columns outside the primary key.
fn drop_columns(table: &mut TableMeta, names: &[crate::ast::Ident]) -> Result<(), ErrorResponse> {
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
        if let Some(indexes) = dependent_indexes(table, name) {
            return Err(invalid(format!(
                "Cannot drop column {name} because it has dependent secondary indexes ({indexes})"
            )));
        }
        let dropped = crate::schema::DroppedColumn {
            ty: col.ty.clone(),
            is_static: col.kind == ColumnKind::Static,
        };
        table.dropped_columns.insert(name.to_owned(), dropped);
        table.columns.retain(|c| c.name != name);
    }
    Ok(())
}

/// Whether values written as `old` can be read as `new` (Cassandra's
/// `isValueCompatibleWith`, for re-adding a dropped column): the same type, a blob for any
/// native value, text for ascii, varint for the fixed-size integers, bigint and timestamp
/// for each other; collections of the same kind and frozenness whose set elements and map
/// keys are the same type and whose other elements are compatible.
fn value_compatible(new: &DataType, old: &DataType) -> bool {
    use mosaic_types::CqlType as T;
    if new == old {
        return true;
    }
    match (new, old) {
        (DataType::Native(n), DataType::Native(o)) => matches!(
            (n, o),
            (T::Blob, _)
                | (T::Text, T::Ascii)
                | (T::Varint, T::Int | T::BigInt | T::SmallInt | T::TinyInt)
                | (T::BigInt, T::Timestamp)
                | (T::Timestamp, T::BigInt)
        ),
        (DataType::Frozen(n), DataType::Frozen(o)) => value_compatible(n, o),
        (DataType::List(n), DataType::List(o)) => value_compatible(n, o),
        (DataType::Map(nk, nv), DataType::Map(ok, ov)) => nk == ok && value_compatible(nv, ov),
        _ => false,
    }
}

/// The names of the indexes on `column`, comma-separated, if there are any.
fn dependent_indexes(table: &TableMeta, column: &str) -> Option<String> {
    let names: Vec<&str> = table
        .indexes
        .values()
        .filter(|i| i.target.column == column)
        .map(|i| i.name.as_str())
        .collect();
    (!names.is_empty()).then(|| names.join(","))
}

/// `RENAME`: primary key columns only, as Cassandra allows.
fn rename_columns(
    table: &mut TableMeta,
    pairs: &[(crate::ast::Ident, crate::ast::Ident)],
) -> Result<(), ErrorResponse> {
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
        if let Some(indexes) = dependent_indexes(table, from.as_str()) {
            return Err(invalid(format!(
                "Can't rename column {} because it has dependent secondary indexes ({indexes})",
                from.as_str()
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
        rename_in_replica_orders(table, from.as_str(), to.as_str());
    }
    Ok(())
}
