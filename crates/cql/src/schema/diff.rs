//! What changed between two catalogs, as the SCHEMA_CHANGE events a node pushes to its
//! clients when it adopts a peer's schema.
//!
//! The node that ran a DDL statement pushes its one event itself (with the statement's
//! result); every other node learns the schema as a whole new [`Catalog`] and tells its own
//! registered clients what that catalog changed, as Cassandra's nodes do when they merge a
//! schema pulled from a peer. A driver's control connection may be on any node, so without
//! these events it would never refresh its metadata after a DDL sent elsewhere.

use super::{Catalog, KeyspaceMeta};
use crate::frame::{SchemaChange, SchemaChangeTarget, SchemaChangeType};

impl Catalog {
    /// The events that turn `self` into `next`, in the order a client can apply them:
    /// created keyspaces, then per keyspace its own update and its tables' creations,
    /// updates and drops, then dropped keyspaces. A dropped keyspace is one event (its
    /// tables go with it), as the node that ran `DROP KEYSPACE` reports it.
    pub fn changes_to(&self, next: &Catalog) -> Vec<SchemaChange> {
        let mut out = Vec::new();
        let keyspace_event = |change, keyspace: &str| SchemaChange {
            change,
            target: SchemaChangeTarget::Keyspace {
                keyspace: keyspace.to_owned(),
            },
        };
        for (name, keyspace) in &next.keyspaces {
            match self.keyspaces.get(name) {
                None => out.push(keyspace_event(SchemaChangeType::Created, name)),
                Some(old) if !same_options(old, keyspace) => {
                    out.push(keyspace_event(SchemaChangeType::Updated, name))
                }
                Some(_) => {}
            }
        }
        for (name, keyspace) in &next.keyspaces {
            let old = self.keyspaces.get(name);
            let type_event = |change, ty: &str| SchemaChange {
                change,
                target: SchemaChangeTarget::Type {
                    keyspace: name.clone(),
                    name: ty.to_owned(),
                },
            };
            for (ty_name, ty) in &keyspace.types {
                match old.and_then(|o| o.types.get(ty_name)) {
                    None => out.push(type_event(SchemaChangeType::Created, ty_name)),
                    Some(before) if before != ty => {
                        out.push(type_event(SchemaChangeType::Updated, ty_name))
                    }
                    Some(_) => {}
                }
            }
            let table_event = |change, table: &str| SchemaChange {
                change,
                target: SchemaChangeTarget::Table {
                    keyspace: name.clone(),
                    table: table.to_owned(),
                },
            };
            for (table_name, table) in &keyspace.tables {
                match old.and_then(|o| o.tables.get(table_name)) {
                    None => out.push(table_event(SchemaChangeType::Created, table_name)),
                    // A table dropped and re-created under the same name is both.
                    Some(before) if before.id != table.id => {
                        out.push(table_event(SchemaChangeType::Dropped, table_name));
                        out.push(table_event(SchemaChangeType::Created, table_name));
                    }
                    Some(before) if before != table => {
                        out.push(table_event(SchemaChangeType::Updated, table_name))
                    }
                    Some(_) => {}
                }
            }
            for table_name in old.iter().flat_map(|o| o.tables.keys()) {
                if !keyspace.tables.contains_key(table_name) {
                    out.push(table_event(SchemaChangeType::Dropped, table_name));
                }
            }
            for ty_name in old.iter().flat_map(|o| o.types.keys()) {
                if !keyspace.types.contains_key(ty_name) {
                    out.push(type_event(SchemaChangeType::Dropped, ty_name));
                }
            }
        }
        for name in self.keyspaces.keys() {
            if !next.keyspaces.contains_key(name) {
                out.push(keyspace_event(SchemaChangeType::Dropped, name));
            }
        }
        out
    }
}

/// Whether two versions of a keyspace have the same options (tables aside).
fn same_options(a: &KeyspaceMeta, b: &KeyspaceMeta) -> bool {
    a.replication == b.replication && a.durable_writes == b.durable_writes
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::sync::Arc;

    use super::*;
    use crate::schema::{Replication, TableId, TableMeta, TableParams};

    fn table(keyspace: &str, name: &str, id: u8) -> Arc<TableMeta> {
        Arc::new(TableMeta {
            keyspace: keyspace.into(),
            name: name.into(),
            id: TableId([id; 16]),
            columns: Vec::new(),
            params: TableParams::default(),
            next_column_id: 0,
            indexes: Default::default(),
            dropped_columns: Default::default(),
            counter: false,
            derived: Default::default(),
        })
    }

    fn keyspace(name: &str, rf: u32, tables: &[Arc<TableMeta>]) -> (String, KeyspaceMeta) {
        let meta = KeyspaceMeta {
            name: name.into(),
            replication: Replication::simple(rf),
            durable_writes: true,
            tables: tables.iter().map(|t| (t.name.clone(), t.clone())).collect(),
            types: BTreeMap::new(),
        };
        (name.into(), meta)
    }

    fn catalog(keyspaces: Vec<(String, KeyspaceMeta)>) -> Catalog {
        Catalog::new(keyspaces.into_iter().collect::<BTreeMap<_, _>>())
    }

    fn describe(changes: &[SchemaChange]) -> Vec<String> {
        changes
            .iter()
            .map(|c| {
                let target = match &c.target {
                    SchemaChangeTarget::Keyspace { keyspace } => keyspace.clone(),
                    SchemaChangeTarget::Table { keyspace, table } => format!("{keyspace}.{table}"),
                    other => format!("{other:?}"),
                };
                format!("{} {target}", c.change.name())
            })
            .collect()
    }

    #[test]
    fn a_catalog_has_no_changes_to_itself() {
        let a = catalog(vec![keyspace("ks", 3, &[table("ks", "t", 1)])]);
        assert!(a.changes_to(&a.clone()).is_empty());
    }

    #[test]
    fn created_keyspaces_come_before_their_tables_and_drops_after() {
        let before = catalog(vec![
            keyspace("old", 1, &[table("old", "t", 1)]),
            keyspace(
                "kept",
                1,
                &[table("kept", "gone", 2), table("kept", "same", 3)],
            ),
        ]);
        let mut altered = (*table("kept", "same", 3)).clone();
        altered.next_column_id = 7;
        let after = catalog(vec![
            keyspace("kept", 3, &[Arc::new(altered), table("kept", "new", 4)]),
            keyspace("fresh", 1, &[table("fresh", "a", 5)]),
        ]);
        assert_eq!(
            describe(&before.changes_to(&after)),
            [
                "CREATED fresh",
                "UPDATED kept",
                "CREATED fresh.a",
                "CREATED kept.new",
                "UPDATED kept.same",
                "DROPPED kept.gone",
                "DROPPED old",
            ]
        );
    }

    #[test]
    fn a_table_recreated_under_its_name_is_dropped_then_created() {
        let before = catalog(vec![keyspace("ks", 1, &[table("ks", "t", 1)])]);
        let after = catalog(vec![keyspace("ks", 1, &[table("ks", "t", 2)])]);
        assert_eq!(
            describe(&before.changes_to(&after)),
            ["DROPPED ks.t", "CREATED ks.t"]
        );
    }
}
