//! The `system_auth` keyspace as stored tables: roles, their memberships and their
//! permissions, shaped like Cassandra's so that tools reading them work.
//!
//! The keyspace is a constant of the build, part of every [`Catalog`] without being in
//! its `keyspaces` (so it never enters the schema's version or its serialized form): every
//! node has the same tables with the same ids from its first start, whatever order nodes
//! start in, and no schema push can create, change or drop them. That is the design choice
//! that keeps the schema from forking when several nodes start at once: there is nothing
//! to agree on. The columns are those `system_schema.columns` shows for these tables
//! (`crate::system`'s definitions, one source for both).
//!
//! Replication is SimpleStrategy with [`AUTH_REPLICATION_FACTOR`] replicas (Cassandra
//! starts with 1 and expects operators to raise it; here the roles are replicated from the
//! start, and a cluster smaller than that keeps a copy on every node).

use std::collections::BTreeMap;
use std::sync::{Arc, LazyLock};

use mosaic_rows::ColumnId;

use super::{
    Catalog, ClusteringOrder, ColumnKind, ColumnMeta, Derived, KeyspaceMeta, Replication, TableId,
    TableMeta, TableParams, Uuid,
};

/// The keyspace's name.
pub const AUTH_KEYSPACE: &str = "system_auth";
/// `system_auth.roles`.
pub const ROLES_TABLE: &str = "roles";
/// `system_auth.role_members`.
pub const ROLE_MEMBERS_TABLE: &str = "role_members";
/// `system_auth.role_permissions`.
pub const ROLE_PERMISSIONS_TABLE: &str = "role_permissions";
/// How many replicas of each role there are.
pub const AUTH_REPLICATION_FACTOR: u32 = 3;

/// The keyspace, built once.
pub fn auth_keyspace() -> &'static KeyspaceMeta {
    static KEYSPACE: LazyLock<KeyspaceMeta> = LazyLock::new(build);
    &KEYSPACE
}

/// The id of `system_auth.<name>`: a digest of the names, the same on every node.
pub fn auth_table_id(name: &str) -> TableId {
    let text = format!("{AUTH_KEYSPACE}.{name}");
    TableId(Uuid::from_digest(xxhash_rust::xxh3::xxh3_128(text.as_bytes())).0)
}

fn build() -> KeyspaceMeta {
    let tables = crate::system::auth_table_defs()
        .map(|def| {
            let columns = def
                .columns
                .iter()
                .enumerate()
                .map(|(i, c)| ColumnMeta {
                    name: c.name.to_owned(),
                    // The definitions are constants this crate's tests parse.
                    ty: c.ty.parse().unwrap_or(mosaic_types::CqlType::Text.into()),
                    kind: match c.kind {
                        crate::system::ColumnKindDef::PartitionKey(p) => ColumnKind::PartitionKey {
                            position: usize::from(p),
                        },
                        crate::system::ColumnKindDef::Clustering(p) => ColumnKind::Clustering {
                            position: usize::from(p),
                            order: ClusteringOrder::Asc,
                        },
                        crate::system::ColumnKindDef::Regular => ColumnKind::Regular,
                    },
                    id: ColumnId(i as u32),
                })
                .collect::<Vec<_>>();
            let table = TableMeta {
                keyspace: AUTH_KEYSPACE.to_owned(),
                name: def.name.to_owned(),
                id: auth_table_id(def.name),
                next_column_id: columns.len() as u32,
                columns,
                params: TableParams {
                    comment: def.comment.to_owned(),
                    gc_grace_seconds: def.gc_grace_seconds,
                    ..TableParams::default()
                },
                indexes: BTreeMap::new(),
                dropped_columns: BTreeMap::new(),
                counter: false,
                derived: Derived::default(),
            };
            (def.name.to_owned(), Arc::new(table))
        })
        .collect();
    KeyspaceMeta {
        name: AUTH_KEYSPACE.to_owned(),
        replication: Replication::simple(AUTH_REPLICATION_FACTOR),
        durable_writes: true,
        tables,
        types: BTreeMap::new(),
    }
}

impl Catalog {
    /// Every table with storage: the user tables and `system_auth`'s.
    pub fn stored_tables(&self) -> impl Iterator<Item = &Arc<TableMeta>> {
        self.tables().chain(auth_keyspace().tables.values())
    }

    /// Every keyspace with storage: the user keyspaces and `system_auth`.
    pub fn stored_keyspaces(&self) -> impl Iterator<Item = &str> {
        self.keyspaces
            .keys()
            .map(String::as_str)
            .chain(std::iter::once(AUTH_KEYSPACE))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_auth_tables_are_in_every_catalog_with_fixed_ids() {
        let c = Catalog::default();
        let roles = c.table(AUTH_KEYSPACE, ROLES_TABLE).unwrap();
        assert_eq!(roles.id, auth_table_id(ROLES_TABLE));
        assert_eq!(c.table_by_id(roles.id).unwrap().name, ROLES_TABLE);
        assert_eq!(c.tables().count(), 0);
        assert_eq!(c.stored_tables().count(), auth_keyspace().tables.len());
        let names: Vec<_> = roles.columns.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "role",
                "can_login",
                "is_superuser",
                "member_of",
                "salted_hash"
            ]
        );
        assert_eq!(roles.columns[3].ty.to_string(), "set<text>");
        assert_eq!(
            c.keyspace(AUTH_KEYSPACE).unwrap().replication.factor(),
            AUTH_REPLICATION_FACTOR
        );
        assert_eq!(Catalog::default().version, c.version);
    }
}
