//! User-defined types: `CREATE TYPE`, `ALTER TYPE`, `DROP TYPE`, and resolving the type
//! names a table's columns use into the keyspace's definitions.
//!
//! A column's type embeds the definition of every user-defined type it uses (as
//! Cassandra's `UserType` does), so values decode without a catalog lookup; `ALTER TYPE`
//! therefore rewrites every column (and every other type) of the keyspace that uses the
//! type. Types belong to one keyspace and can only be used there.

use mosaic_types::{DataType, UserType};

use crate::ast::{AlterTypeOperation, AlterTypeStatement, CreateTypeStatement, DropTypeStatement};

use super::*;

/// The keyspace and name a type statement names.
fn type_name(
    exec: &Exec<'_>,
    name: &crate::ast::QualifiedName,
) -> Result<(String, String), ErrorResponse> {
    let keyspace = user_keyspace(exec, name)?;
    Ok((keyspace, name.name.as_str().to_owned()))
}

fn type_target(keyspace: &str, name: &str) -> SchemaChangeTarget {
    SchemaChangeTarget::Type {
        keyspace: keyspace.to_owned(),
        name: name.to_owned(),
    }
}

/// `ty` with every user-defined type replaced by its definition in `keyspace`.
pub(super) fn resolve_in(
    catalog: &Catalog,
    keyspace: &str,
    ty: &DataType,
) -> Result<DataType, ErrorResponse> {
    for u in ty.user_types() {
        if !u.keyspace.is_empty() && u.keyspace != keyspace {
            return Err(invalid(format!(
                "Statement on keyspace {keyspace} cannot refer to a user type in keyspace {}; user types can only be used in the keyspace they are defined in",
                u.keyspace
            )));
        }
        let known = catalog
            .keyspace(keyspace)
            .is_some_and(|k| k.types.contains_key(&u.name));
        if !known {
            return Err(invalid(format!("Unknown type {keyspace}.{}", u.name)));
        }
    }
    ty.resolve(&|_, name| catalog.keyspace(keyspace)?.types.get(name).cloned())
        .ok_or_else(|| invalid(format!("Unknown type in {ty}")))
}

/// The table with its columns' user-defined types resolved.
pub(super) fn resolve_table(
    catalog: &Catalog,
    mut table: TableMeta,
) -> Result<TableMeta, ErrorResponse> {
    for column in &mut table.columns {
        if !column.ty.user_types().is_empty() {
            column.ty = resolve_in(catalog, &table.keyspace, &column.ty)?;
        }
        if let DataType::Udt(u) = &column.ty {
            if u.fields.iter().any(|(_, f)| f.is_multi_cell()) {
                return Err(invalid(
                    "Non-frozen UDTs with nested non-frozen collections are not supported",
                ));
            }
        }
    }
    Ok(table)
}

pub(super) async fn create_type<C: Coordinator>(
    coordinator: &C,
    exec: &Exec<'_>,
    s: CreateTypeStatement,
) -> Result<ResultBody, ErrorResponse> {
    let (keyspace, name) = type_name(exec, &s.name)?;
    check_name("User type", &name)?;
    let mut seen = std::collections::HashSet::new();
    for (field, _) in &s.fields {
        if !seen.insert(field.as_str()) {
            return Err(invalid(format!(
                "Duplicate field name {} in type {name}",
                field.as_str()
            )));
        }
    }
    coordinator
        .update_schema(move |catalog| {
            let Some(ks) = catalog.keyspace(&keyspace) else {
                return Err(invalid(format!("Keyspace '{keyspace}' does not exist")));
            };
            if ks.types.contains_key(&name) {
                if s.if_not_exists {
                    return Ok((catalog.clone(), ResultBody::Void));
                }
                return Err(invalid(format!(
                    "A user type with name '{name}' already exists"
                )));
            }
            let mut fields = Vec::with_capacity(s.fields.len());
            for (field, ty) in &s.fields {
                let ty = resolve_in(catalog, &keyspace, ty)?;
                if ty.user_types().iter().any(|u| u.name == name) {
                    return Err(invalid(format!(
                        "Cannot define a user type referencing itself: {name}"
                    )));
                }
                fields.push((field.as_str().to_owned(), ty));
            }
            let ty = UserType {
                keyspace: keyspace.clone(),
                name: name.clone(),
                fields,
            };
            edited(
                catalog,
                SchemaChangeType::Created,
                type_target(&keyspace, &name),
                |k| {
                    if let Some(k) = k.get_mut(&keyspace) {
                        k.types.insert(name, ty);
                    }
                },
            )
        })
        .await
}

pub(super) async fn alter_type<C: Coordinator>(
    coordinator: &C,
    exec: &Exec<'_>,
    s: AlterTypeStatement,
) -> Result<ResultBody, ErrorResponse> {
    let (keyspace, name) = type_name(exec, &s.name)?;
    coordinator
        .update_schema(move |catalog| {
            let Some(old) = catalog.keyspace(&keyspace).and_then(|k| k.types.get(&name)) else {
                return Err(invalid(format!(
                    "No user type named {keyspace}.{name} exists."
                )));
            };
            let mut new = old.clone();
            match &s.operation {
                AlterTypeOperation::Add(field, ty) => {
                    if new.field(field.as_str()).is_some() {
                        return Err(invalid(format!(
                            "Cannot add new field {} to type {keyspace}.{name}: a field of the same name already exists",
                            field.as_str()
                        )));
                    }
                    let ty = resolve_in(catalog, &keyspace, ty)?;
                    if ty.user_types().iter().any(|u| u.name == name) {
                        return Err(invalid(format!(
                            "Cannot add new field {} of type {ty} to user type {keyspace}.{name} as this would create a circular reference",
                            field.as_str()
                        )));
                    }
                    new.fields.push((field.as_str().to_owned(), ty));
                }
                AlterTypeOperation::Rename(pairs) => {
                    for (from, to) in pairs {
                        let Some(at) = new.field(from.as_str()) else {
                            return Err(invalid(format!(
                                "Unkown field {} in user type {keyspace}.{name}",
                                from.as_str()
                            )));
                        };
                        if new.field(to.as_str()).is_some() {
                            return Err(invalid(format!(
                                "Duplicate field name {} in type {keyspace}.{name}",
                                to.as_str()
                            )));
                        }
                        if let Some(field) = new.fields.get_mut(at) {
                            field.0 = to.as_str().to_owned();
                        }
                    }
                }
            }
            let (next, _) = edited(
                catalog,
                SchemaChangeType::Updated,
                type_target(&keyspace, &name),
                |k| {
                    if let Some(k) = k.get_mut(&keyspace) {
                        k.types.insert(name.clone(), new);
                    }
                },
            )?;
            // Every type and table of the keyspace picks up the new definition: types first,
            // as many rounds as there are types (a type may use one that uses this one).
            let mut keyspaces = next.keyspaces.clone();
            if let Some(k) = keyspaces.get_mut(&keyspace) {
                for _ in 0..k.types.len() {
                    let current = k.types.clone();
                    let lookup = |_: &str, n: &str| current.get(n).cloned();
                    for t in k.types.values_mut() {
                        for (_, f) in &mut t.fields {
                            *f = f.resolve(&lookup).unwrap_or_else(|| f.clone());
                        }
                    }
                }
                let types = k.types.clone();
                let lookup = |_: &str, n: &str| types.get(n).cloned();
                for table in k.tables.values_mut() {
                    if table.columns.iter().all(|c| c.ty.user_types().is_empty()) {
                        continue;
                    }
                    let mut t = (**table).clone();
                    for c in &mut t.columns {
                        c.ty = c.ty.resolve(&lookup).unwrap_or_else(|| c.ty.clone());
                    }
                    *table = Arc::new(t);
                }
            }
            Ok((
                Catalog::new(keyspaces),
                schema_change(SchemaChangeType::Updated, type_target(&keyspace, &name)),
            ))
        })
        .await
}

pub(super) async fn drop_type<C: Coordinator>(
    coordinator: &C,
    exec: &Exec<'_>,
    s: DropTypeStatement,
) -> Result<ResultBody, ErrorResponse> {
    let (keyspace, name) = type_name(exec, &s.name)?;
    coordinator
        .update_schema(move |catalog| {
            let Some(ks) = catalog.keyspace(&keyspace) else {
                return Err(invalid(format!("Keyspace '{keyspace}' does not exist")));
            };
            if !ks.types.contains_key(&name) {
                if s.if_exists {
                    return Ok((catalog.clone(), ResultBody::Void));
                }
                return Err(invalid(format!(
                    "No user type named {keyspace}.{name} exists."
                )));
            }
            let uses = |ty: &DataType| ty.user_types().iter().any(|u| u.name == name);
            for other in ks.types.values().filter(|t| t.name != name) {
                if other.fields.iter().any(|(_, f)| uses(f)) {
                    return Err(invalid(format!(
                        "Cannot drop user type {keyspace}.{name} as it is still used by user type {}",
                        other.name
                    )));
                }
            }
            for table in ks.tables.values() {
                if table.columns.iter().any(|c| uses(&c.ty)) {
                    return Err(invalid(format!(
                        "Cannot drop user type {keyspace}.{name} as it is still used by table {keyspace}.{}",
                        table.name
                    )));
                }
            }
            edited(
                catalog,
                SchemaChangeType::Dropped,
                type_target(&keyspace, &name),
                |k| {
                    if let Some(k) = k.get_mut(&keyspace) {
                        k.types.remove(&name);
                    }
                },
            )
        })
        .await
}
