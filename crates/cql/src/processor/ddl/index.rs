//! Secondary index DDL: `CREATE [CUSTOM] INDEX` and `DROP INDEX`, validated as Cassandra
//! 4.1 validates them (its messages), with `USING 'StorageAttachedIndex'` (and `'sai'`)
//! accepted for the same node-local index.

use mosaic_types::DataType;

use crate::ast::{CreateIndexStatement, DropIndexStatement};
use crate::schema::{default_kind, default_name, IndexMeta, IndexTarget, TargetKind, SAI_CLASS};

use super::*;

/// Longest index name (Cassandra's limit leaves room for the table's name in a path).
const INDEX_NAME_LEN_MAX: usize = 222;

/// The SAI options whose value Mosaic's index honours: only their defaults.
const SAI_OPTION_DEFAULTS: [(&str, &str); 3] = [
    ("case_sensitive", "true"),
    ("normalize", "false"),
    ("ascii", "false"),
];

/// The class a `USING` clause names, in full, or why it is refused.
fn custom_class(
    class: &str,
    options: &[(String, String)],
) -> Result<(String, BTreeMap<String, String>), ErrorResponse> {
    let lower = class.to_ascii_lowercase();
    if lower == "sai" || lower == "storageattachedindex" || class == SAI_CLASS {
        let mut kept = BTreeMap::new();
        for (name, value) in options {
            let known = SAI_OPTION_DEFAULTS
                .iter()
                .find(|(n, _)| n.eq_ignore_ascii_case(name));
            match known {
                Some((_, default)) if value.eq_ignore_ascii_case(default) => {
                    kept.insert(name.to_ascii_lowercase(), value.to_ascii_lowercase());
                }
                Some(_) => {
                    return Err(invalid(format!(
                        "Mosaic's StorageAttachedIndex matches values exactly; option '{name}' = '{value}' is not supported"
                    )))
                }
                None => {
                    return Err(invalid(format!(
                        "Unsupported StorageAttachedIndex option '{name}'"
                    )))
                }
            }
        }
        return Ok((SAI_CLASS.to_owned(), kept));
    }
    if lower.ends_with("sasiindex") {
        return Err(invalid(
            "SASI indexes are not supported; use CREATE INDEX, or CREATE CUSTOM INDEX … USING 'StorageAttachedIndex'",
        ));
    }
    Err(config(format!(
        "Unable to find custom indexer class '{class}'"
    )))
}

/// What `s` indexes of `table`, checked as Cassandra checks it.
fn target(table: &TableMeta, s: &CreateIndexStatement) -> Result<IndexTarget, ErrorResponse> {
    let name = s.column.as_str();
    let Some(column) = table.column(name) else {
        return Err(invalid(format!(
            "Undefined column name {name} in table {}.{}",
            table.keyspace, table.name
        )));
    };
    let ty = &column.ty;
    if ty.contains_duration() {
        return Err(invalid(
            "Secondary indexes are not supported on duration columns",
        ));
    }
    if matches!(column.kind, ColumnKind::PartitionKey { .. }) && table.partition_key().len() == 1 {
        return Err(invalid(format!(
            "Cannot create secondary index on the only partition key column {name}"
        )));
    }
    if matches!(ty, DataType::Udt(_)) {
        return Err(invalid(format!(
            "Cannot create index on non-frozen UDT column {name}"
        )));
    }
    let frozen_collection = matches!(ty, DataType::Frozen(_)) && ty.is_collection();
    let kind = match s.kind {
        None if frozen_collection => TargetKind::Values,
        None => default_kind(ty),
        Some(kind) => kind,
    };
    match kind {
        TargetKind::Full if !frozen_collection => {
            return Err(invalid(
                "full() indexes can only be created on frozen collections",
            ))
        }
        TargetKind::Keys | TargetKind::Values | TargetKind::Entries if !ty.is_collection() => {
            let function = kind.function().unwrap_or_default();
            return Err(invalid(format!(
                "Cannot create {function}() index on {name}. Non-collection columns only support simple indexes"
            )));
        }
        TargetKind::Keys | TargetKind::Values | TargetKind::Entries if frozen_collection => {
            let function = kind.function().unwrap_or_default();
            return Err(invalid(format!(
                "Cannot create {function}() index on frozen column {name}. Frozen collections are immutable and must be fully indexed by using the 'full({name})' modifier"
            )));
        }
        TargetKind::Keys | TargetKind::Entries if !matches!(ty, DataType::Map(..)) => {
            let what = if kind == TargetKind::Keys {
                "keys"
            } else {
                "entries"
            };
            return Err(invalid(format!(
                "Cannot create index on {what} of column {name} with non-map type"
            )));
        }
        _ => {}
    }
    Ok(IndexTarget {
        column: name.to_owned(),
        kind,
    })
}

/// The catalog with `table` (its indexes changed) in place of its old definition: an
/// UPDATED table event, as Cassandra announces index changes.
fn with_table(catalog: &Catalog, table: TableMeta) -> Result<(Catalog, ResultBody), ErrorResponse> {
    let (keyspace, name) = (table.keyspace.clone(), table.name.clone());
    table_edited(
        catalog,
        SchemaChangeType::Updated,
        keyspace,
        name.clone(),
        |t| {
            t.insert(name, Arc::new(table));
        },
    )
}

pub(super) async fn create_index<C: Coordinator>(
    coordinator: &C,
    exec: &Exec<'_>,
    s: CreateIndexStatement,
) -> Result<ResultBody, ErrorResponse> {
    let keyspace = user_keyspace(exec, &s.table)?;
    let table_name = s.table.name.as_str().to_owned();
    if let Some(name) = &s.name {
        let name = name.as_str();
        if name.is_empty()
            || name.len() > INDEX_NAME_LEN_MAX
            || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
        {
            return Err(config(format!("Illegal index name {name}")));
        }
    }
    let custom = s
        .class
        .as_deref()
        .map(|class| custom_class(class, &s.options))
        .transpose()?;
    coordinator
        .update_schema(move |catalog| {
            if catalog.keyspace(&keyspace).is_none() {
                return Err(invalid(format!("Keyspace '{keyspace}' doesn't exist")));
            }
            let Some(table) = catalog.table(&keyspace, &table_name) else {
                return Err(invalid(format!("Table '{table_name}' doesn't exist")));
            };
            if table.counter {
                return Err(invalid(
                    "Secondary indexes on counter tables aren't supported",
                ));
            }
            let target = target(table, &s)?;
            let taken = |name: &str| catalog.index(&keyspace, name).is_some();
            let name = match &s.name {
                Some(name) => {
                    let name = name.as_str().to_owned();
                    if taken(&name) {
                        if s.if_not_exists {
                            return Ok((catalog.clone(), ResultBody::Void));
                        }
                        return Err(invalid(format!("Index '{name}' already exists")));
                    }
                    name
                }
                None => {
                    let base = default_name(&table_name, &target.column);
                    let mut name = base.clone();
                    let mut n = 0;
                    while taken(&name) {
                        n += 1;
                        name = format!("{base}_{n}");
                    }
                    name
                }
            };
            let (class_name, options) = match &custom {
                Some((class, options)) => (Some(class.clone()), options.clone()),
                None => (None, BTreeMap::new()),
            };
            let index = IndexMeta {
                name: name.clone(),
                target,
                class_name,
                options,
            };
            if let Some(existing) = table
                .indexes
                .values()
                .find(|i| i.target == index.target && i.class_name == index.class_name)
            {
                if s.if_not_exists {
                    return Ok((catalog.clone(), ResultBody::Void));
                }
                return Err(invalid(format!(
                    "Index {name} is a duplicate of existing index {}",
                    existing.name
                )));
            }
            let mut table = TableMeta::clone(table);
            table.indexes.insert(name, index);
            with_table(catalog, table)
        })
        .await
}

pub(super) async fn drop_index<C: Coordinator>(
    coordinator: &C,
    exec: &Exec<'_>,
    s: DropIndexStatement,
) -> Result<ResultBody, ErrorResponse> {
    let keyspace = user_keyspace(exec, &s.name)?;
    let name = s.name.name.as_str().to_owned();
    coordinator
        .update_schema(move |catalog| {
            let Some((table, _)) = catalog.index(&keyspace, &name) else {
                if s.if_exists {
                    return Ok((catalog.clone(), ResultBody::Void));
                }
                return Err(invalid(format!("Index '{keyspace}.{name}' doesn't exist'")));
            };
            let mut table = TableMeta::clone(table);
            table.indexes.remove(&name);
            with_table(catalog, table)
        })
        .await
}
