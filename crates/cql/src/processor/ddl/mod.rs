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
    KeyspaceMeta, Replication, TableId, TableMeta, TableParams, Uuid, REPLICA_ORDERS_OPTION,
};
use crate::system::LAYOUT_EXTENSION;
use mosaic_types::Layout;

use super::{invalid, Exec, Processor};

mod index;
mod options;
mod table;
mod types;

use options::*;
use table::*;

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
        Statement::CreateType(s) => types::create_type(coordinator, exec, s).await,
        Statement::AlterType(s) => types::alter_type(coordinator, exec, s).await,
        Statement::DropType(s) => types::drop_type(coordinator, exec, s).await,
        Statement::CreateIndex(s) => index::create_index(coordinator, exec, s).await,
        Statement::DropIndex(s) => index::drop_index(coordinator, exec, s).await,
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
    let (name, mut meta) = keyspace_from_create(s)?;
    meta.replication = expand_replication(meta.replication, None, &datacenters(coordinator));
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
    let dcs = datacenters(coordinator);
    coordinator
        .update_schema(move |catalog| {
            let Some(old) = catalog.keyspace(&name) else {
                return Err(config(format!(
                    "Cannot update non existing keyspace '{name}'."
                )));
            };
            let mut meta = old.clone();
            if let Some(r) = replication {
                meta.replication = expand_replication(r, Some(&old.replication), &dcs);
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
            let table = types::resolve_table(catalog, table.clone())?;
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
            let table = types::resolve_table(catalog, alter_table(old, &s)?)?;
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
