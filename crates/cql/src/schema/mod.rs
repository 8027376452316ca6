//! The schema: keyspaces, tables and columns, as one immutable, versioned [`Catalog`].
//!
//! A catalog is a value: DDL builds a new one from the old and hands it to the coordinator
//! ([`crate::coordinator::Coordinator::update_schema`]), which persists it and swaps it in.
//! Its version is a digest of its content (like Cassandra's schema version), so nodes with
//! the same schema agree on the version without talking. The serialized form (JSON via
//! serde) is what the server persists and what the cluster will ship between nodes; it is
//! versioned by [`CATALOG_FORMAT`].
//!
//! Column ids ([`ColumnId`]) are what the row layer stores; they are allocated per table
//! and never reused, so a dropped and re-added column does not resurrect old cells.

mod auth;
mod diff;
mod index;

pub use auth::{
    auth_keyspace, auth_table_id, AUTH_KEYSPACE, AUTH_REPLICATION_FACTOR, ROLES_TABLE,
    ROLE_MEMBERS_TABLE, ROLE_PERMISSIONS_TABLE,
};
pub use index::{default_kind, default_name, IndexMeta, IndexTarget, TargetKind, SAI_CLASS};

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use mosaic_rows::{ColumnId, KeySchema, Order};
use mosaic_types::Layout;
use mosaic_types::{CqlType, DataType};
use serde::{Deserialize, Serialize};

/// The version of the serialized catalog format.
pub const CATALOG_FORMAT: u32 = 1;

/// Keyspaces that exist on every node and cannot be created, altered or dropped by users.
pub const SYSTEM_KEYSPACES: [&str; 6] = [
    "system",
    "system_schema",
    "system_auth",
    "system_distributed",
    "system_traces",
    "system_virtual_schema",
];

/// Whether `name` is a system keyspace.
pub fn is_system_keyspace(name: &str) -> bool {
    SYSTEM_KEYSPACES.contains(&name)
}

/// A UUID in RFC 4122 byte order.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Uuid(pub [u8; 16]);

impl Uuid {
    /// A random (version 4) UUID.
    pub fn random() -> Uuid {
        let mut bytes: [u8; 16] = mosaic_env::rng::random_bytes();
        bytes[6] = (bytes[6] & 0x0f) | 0x40;
        bytes[8] = (bytes[8] & 0x3f) | 0x80;
        Uuid(bytes)
    }

    /// A name-based UUID from a 128-bit digest (version 3 bits, like Cassandra's schema
    /// versions, which are MD5-based).
    pub fn from_digest(digest: u128) -> Uuid {
        let mut bytes = digest.to_be_bytes();
        bytes[6] = (bytes[6] & 0x0f) | 0x30;
        bytes[8] = (bytes[8] & 0x3f) | 0x80;
        Uuid(bytes)
    }
}

impl fmt::Display for Uuid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, b) in self.0.iter().enumerate() {
            if matches!(i, 4 | 6 | 8 | 10) {
                f.write_str("-")?;
            }
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

/// Text that is not a UUID.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("invalid UUID {0:?}")]
pub struct ParseUuidError(pub String);

impl FromStr for Uuid {
    type Err = ParseUuidError;

    fn from_str(s: &str) -> Result<Uuid, ParseUuidError> {
        let err = || ParseUuidError(s.to_owned());
        let hex: Vec<u8> = s.bytes().filter(|b| *b != b'-').collect();
        if hex.len() != 32 || s.len() != 36 {
            return Err(err());
        }
        let mut out = [0u8; 16];
        for (i, pair) in hex.chunks(2).enumerate() {
            let text = std::str::from_utf8(pair).map_err(|_| err())?;
            let byte = u8::from_str_radix(text, 16).map_err(|_| err())?;
            let slot = out.get_mut(i).ok_or_else(err)?;
            *slot = byte;
        }
        Ok(Uuid(out))
    }
}

impl Serialize for Uuid {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Uuid {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Uuid, D::Error> {
        let text = String::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// A table's identity: stays the same across ALTER, changes when a table of the same name is
/// dropped and created again (so old data never shows through).
pub use mosaic_types::TableId;

/// A keyspace's replication: the strategy class and its options, as given in CQL
/// (`{'class': 'SimpleStrategy', 'replication_factor': '3'}`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Replication {
    /// The fully qualified strategy class, e.g. `org.apache.cassandra.locator.SimpleStrategy`.
    pub class: String,
    /// The other options (`replication_factor`, or one entry per datacenter).
    pub options: BTreeMap<String, String>,
}

impl Replication {
    /// SimpleStrategy with replication factor `rf`.
    pub fn simple(rf: u32) -> Replication {
        Replication {
            class: "org.apache.cassandra.locator.SimpleStrategy".to_owned(),
            options: BTreeMap::from([("replication_factor".to_owned(), rf.to_string())]),
        }
    }

    /// The replication factor: SimpleStrategy's `replication_factor`, or the sum over
    /// datacenters for NetworkTopologyStrategy.
    pub fn factor(&self) -> u32 {
        if let Some(rf) = self.options.get("replication_factor") {
            return rf.parse().unwrap_or(1);
        }
        self.options
            .values()
            .filter_map(|v| v.parse::<u32>().ok())
            .sum::<u32>()
            .max(1)
    }

    /// The map Cassandra shows in `system_schema.keyspaces.replication`: `class` first.
    pub fn as_map(&self) -> BTreeMap<String, String> {
        let mut map = self.options.clone();
        map.insert("class".to_owned(), self.class.clone());
        map
    }
}

/// One keyspace.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct KeyspaceMeta {
    /// Its name.
    pub name: String,
    /// Its replication.
    pub replication: Replication,
    /// `durable_writes`.
    pub durable_writes: bool,
    /// Its tables, by name.
    pub tables: BTreeMap<String, Arc<TableMeta>>,
    /// Its user-defined types, by name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub types: BTreeMap<String, mosaic_types::UserType>,
}

/// What role a column plays in its table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ColumnKind {
    /// The `position`-th partition key column.
    PartitionKey {
        /// Position in the partition key.
        position: usize,
    },
    /// The `position`-th clustering column.
    Clustering {
        /// Position among the clustering columns.
        position: usize,
        /// Its clustering order.
        order: ClusteringOrder,
    },
    /// A static column.
    Static,
    /// A regular column.
    Regular,
}

impl ColumnKind {
    /// Cassandra's name for the kind (`system_schema.columns.kind`).
    pub fn name(self) -> &'static str {
        match self {
            ColumnKind::PartitionKey { .. } => "partition_key",
            ColumnKind::Clustering { .. } => "clustering",
            ColumnKind::Static => "static",
            ColumnKind::Regular => "regular",
        }
    }

    /// Whether the column is part of the primary key.
    pub fn is_primary_key(self) -> bool {
        matches!(
            self,
            ColumnKind::PartitionKey { .. } | ColumnKind::Clustering { .. }
        )
    }
}

/// A clustering column's order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ClusteringOrder {
    /// Ascending.
    Asc,
    /// Descending.
    Desc,
}

impl ClusteringOrder {
    /// The row layer's order.
    pub fn to_rows(self) -> Order {
        match self {
            ClusteringOrder::Asc => Order::Asc,
            ClusteringOrder::Desc => Order::Desc,
        }
    }

    /// Cassandra's name (`system_schema.columns.clustering_order`).
    pub fn name(self) -> &'static str {
        match self {
            ClusteringOrder::Asc => "asc",
            ClusteringOrder::Desc => "desc",
        }
    }
}

/// A column type in the catalog: its CQL name (as `system_schema` shows it), or, when it
/// holds a user-defined type (whose name alone does not say its fields), its structure.
mod cql_type_serde {
    use mosaic_types::DataType;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Stored {
        Name(String),
        Structure(DataType),
    }

    pub fn serialize<S: Serializer>(ty: &DataType, s: S) -> Result<S::Ok, S::Error> {
        if ty.user_types().is_empty() {
            s.collect_str(ty)
        } else {
            ty.serialize(s)
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<DataType, D::Error> {
        match Stored::deserialize(d)? {
            Stored::Name(name) => name.parse().map_err(serde::de::Error::custom),
            Stored::Structure(ty) => Ok(ty),
        }
    }
}

mod column_id_serde {
    use mosaic_rows::ColumnId;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(id: &ColumnId, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u32(id.0)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<ColumnId, D::Error> {
        Ok(ColumnId(u32::deserialize(d)?))
    }
}

/// The table options Mosaic keeps (`WITH …`); unknown Cassandra options are accepted and
/// kept verbatim in `extra` so that `DESCRIBE` and drivers see what was set.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TableParams {
    /// How replicas of this table are stored: `uniform` (the default) or another layout
    /// (persisted and shown by its name).
    pub layout: Layout,
    /// The layout's own options, from the map form `layout = {'class': …, 'name': 'value'}`
    /// (checked by [`Layout::check_options`]; empty for the string form).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub layout_options: BTreeMap<String, String>,
    /// `comment`.
    pub comment: String,
    /// `default_time_to_live`, seconds (0: none).
    pub default_time_to_live: i32,
    /// `gc_grace_seconds`.
    pub gc_grace_seconds: i32,
    /// Other options as given (name → CQL text of the value).
    pub extra: BTreeMap<String, String>,
}

impl Default for TableParams {
    fn default() -> Self {
        TableParams {
            layout: DEFAULT_LAYOUT,
            layout_options: BTreeMap::new(),
            comment: String::new(),
            default_time_to_live: 0,
            gc_grace_seconds: 864_000,
            extra: BTreeMap::new(),
        }
    }
}

impl TableParams {
    /// The layout as the `layout` option and the `mosaic.layout` extension spell it: its
    /// name, or with options the map `{'class': 'decoupled', 'sorted_runs_max': '20'}`.
    pub fn layout_text(&self) -> String {
        if self.layout_options.is_empty() {
            return self.layout.name().to_owned();
        }
        let mut map = self.layout_options.clone();
        map.insert("class".to_owned(), self.layout.name().to_owned());
        crate::system::map_text(&map)
    }
}

/// The layout tables get when none is given.
pub const DEFAULT_LAYOUT: Layout = Layout::Uniform;

/// The `heterogeneous` layout option listing each replica index's clustering order.
pub const REPLICA_ORDERS_OPTION: &str = "replica_orders";

/// The bytes of a CQL blob constant as written, `0x` then hex digits (either case); `None`
/// if `text` is not one. Table extensions are kept in this form.
pub fn decode_blob_literal(text: &str) -> Option<Vec<u8>> {
    let digits = text
        .trim()
        .strip_prefix("0x")
        .or_else(|| text.trim().strip_prefix("0X"))?;
    if digits.len() % 2 != 0 {
        return None;
    }
    digits
        .as_bytes()
        .chunks(2)
        .map(|pair| {
            let pair = std::str::from_utf8(pair).ok()?;
            u8::from_str_radix(pair, 16).ok()
        })
        .collect()
}

/// `bytes` as a CQL blob constant: `0x` then lowercase hex.
pub fn encode_blob_literal(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(2 + 2 * bytes.len());
    out.push_str("0x");
    for b in bytes {
        out.push_str(&format!("{b:02x}"));
    }
    out
}

/// A dropped column's last definition.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DroppedColumn {
    /// Its type.
    pub ty: DataType,
    /// Whether it was a static column.
    pub is_static: bool,
}

/// One table.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TableMeta {
    /// Its keyspace.
    pub keyspace: String,
    /// Its name.
    pub name: String,
    /// Its id.
    pub id: TableId,
    /// Its columns, in declaration order (the primary key columns first when created
    /// from CQL, then the others in the order given).
    pub columns: Vec<ColumnMeta>,
    /// Its options.
    pub params: TableParams,
    /// The next column id to hand out.
    pub next_column_id: u32,
    /// Its secondary indexes, by name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub indexes: BTreeMap<String, IndexMeta>,
    /// Columns dropped from it, by name, with their last definition (Cassandra's
    /// `dropped_columns`): the name may be added again only with a type that can read
    /// the old values and the same kind.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub dropped_columns: BTreeMap<String, DroppedColumn>,
    /// Whether it is a counter table (Cassandra's `counter` flag, fixed at CREATE): every
    /// column outside the primary key is a `counter`, stored as `bigint` in
    /// [`ColumnMeta::ty`] and as shards in cells (`mosaic_rows::counter`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub counter: bool,
    /// What statements derive from the definition, computed on first use.
    #[serde(skip)]
    pub derived: Derived,
}

/// What statements derive from a table's definition (the output columns of `SELECT *`),
/// computed once per definition instead of at every execution. A clone starts empty, so an
/// altered copy of a table never sees what was derived from the original; it compares
/// equal to any other (it is a cache, not part of the definition).
#[derive(Default)]
pub struct Derived {
    select_star: std::sync::OnceLock<Arc<[crate::processor::OutColumn]>>,
}

impl Derived {
    /// The output columns of `SELECT *` on the table, made by `make` the first time.
    pub(crate) fn select_star<E>(
        &self,
        make: impl FnOnce() -> Result<Vec<crate::processor::OutColumn>, E>,
    ) -> Result<Arc<[crate::processor::OutColumn]>, E> {
        if let Some(columns) = self.select_star.get() {
            return Ok(columns.clone());
        }
        let columns: Arc<[_]> = make()?.into();
        Ok(self.select_star.get_or_init(|| columns).clone())
    }
}

impl Clone for Derived {
    fn clone(&self) -> Derived {
        Derived::default()
    }
}

impl PartialEq for Derived {
    fn eq(&self, _: &Derived) -> bool {
        true
    }
}

impl fmt::Debug for Derived {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Derived")
    }
}

/// One column.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ColumnMeta {
    /// Its name.
    pub name: String,
    /// Its type.
    #[serde(with = "cql_type_serde")]
    pub ty: DataType,
    /// Its role.
    pub kind: ColumnKind,
    /// Its cell id.
    #[serde(with = "column_id_serde")]
    pub id: ColumnId,
}

impl TableMeta {
    /// A column by name.
    pub fn column(&self, name: &str) -> Option<&ColumnMeta> {
        self.columns.iter().find(|c| c.name == name)
    }

    /// Whether `col` (a column of this table) is a counter.
    pub fn is_counter_column(&self, col: &ColumnMeta) -> bool {
        self.counter && !col.kind.is_primary_key()
    }

    /// The type drivers see for `col`: `counter` for a counter, else its type.
    pub fn wire_type(&self, col: &ColumnMeta) -> crate::frame::ColumnType {
        if self.is_counter_column(col) {
            crate::frame::ColumnType::Counter
        } else {
            (&col.ty).into()
        }
    }

    /// `col`'s type as CQL names it (`system_schema.columns.type`, `DESCRIBE`).
    pub fn type_name(&self, col: &ColumnMeta) -> String {
        if self.is_counter_column(col) {
            "counter".to_owned()
        } else {
            col.ty.to_string()
        }
    }

    /// The index of a column by name.
    pub fn column_index(&self, name: &str) -> Option<usize> {
        self.columns.iter().position(|c| c.name == name)
    }

    /// The partition key columns, in key order.
    pub fn partition_key(&self) -> Vec<&ColumnMeta> {
        let mut cols: Vec<(usize, &ColumnMeta)> = self
            .columns
            .iter()
            .filter_map(|c| match c.kind {
                ColumnKind::PartitionKey { position } => Some((position, c)),
                _ => None,
            })
            .collect();
        cols.sort_by_key(|(p, _)| *p);
        cols.into_iter().map(|(_, c)| c).collect()
    }

    /// The clustering columns, in clustering order.
    pub fn clustering(&self) -> Vec<&ColumnMeta> {
        let mut cols: Vec<(usize, &ColumnMeta)> = self
            .columns
            .iter()
            .filter_map(|c| match c.kind {
                ColumnKind::Clustering { position, .. } => Some((position, c)),
                _ => None,
            })
            .collect();
        cols.sort_by_key(|(p, _)| *p);
        cols.into_iter().map(|(_, c)| c).collect()
    }

    /// The columns in the order `SELECT *` returns them, as Cassandra: partition key,
    /// clustering columns, then static columns by name, then regular columns by name.
    pub fn select_star_order(&self) -> Vec<&ColumnMeta> {
        let mut out = self.partition_key();
        out.extend(self.clustering());
        let mut rest: Vec<&ColumnMeta> = self
            .columns
            .iter()
            .filter(|c| !c.kind.is_primary_key())
            .collect();
        rest.sort_by_key(|c| (c.kind != ColumnKind::Static, &c.name));
        out.extend(rest);
        out
    }

    /// For a `heterogeneous` table, the clustering order of each replica index its
    /// `replica_orders` option lists, as declared clustering positions (`[[1, 2, 0], …]`:
    /// replica 0 sorts by the second clustering column, then the third, then the first);
    /// replicas past the list keep the declared order. Empty for every other layout.
    ///
    /// The orders were checked against the columns when the table was created or altered
    /// ([`crate::processor`]'s DDL); should a stored catalog hold an order that is not a
    /// permutation of the clustering columns, that replica index gets the declared order,
    /// so later indexes keep their places.
    pub fn replica_orders(&self) -> Vec<Vec<usize>> {
        if self.params.layout != Layout::Heterogeneous {
            return Vec::new();
        }
        let text = self
            .params
            .layout_options
            .get(REPLICA_ORDERS_OPTION)
            .map_or("", String::as_str);
        let Ok(orders) = mosaic_types::parse_replica_orders(text) else {
            return Vec::new();
        };
        let clustering = self.clustering();
        let declared: Vec<usize> = (0..clustering.len()).collect();
        orders
            .iter()
            .map(|order| {
                let positions: Option<Vec<usize>> = order
                    .iter()
                    .map(|name| clustering.iter().position(|c| c.name == *name))
                    .collect();
                match positions {
                    Some(p)
                        if p.len() == clustering.len()
                            && mosaic_rows::Permutation::new(p.clone()).is_some() =>
                    {
                        p
                    }
                    _ => declared.clone(),
                }
            })
            .collect()
    }

    /// The row layer's key schema for this table.
    pub fn key_schema(&self) -> KeySchema {
        // Key columns are native or frozen (CREATE TABLE refuses others).
        let partition = self.partition_key().iter().map(|c| c.ty.clone()).collect();
        let clustering = self
            .clustering()
            .iter()
            .map(|c| {
                let order = match c.kind {
                    ColumnKind::Clustering { order, .. } => order.to_rows(),
                    _ => Order::Asc,
                };
                (c.ty.clone(), order)
            })
            .collect();
        // A table always has a partition key (checked at CREATE), so this cannot fail;
        // fall back to a blob key rather than panicking on a damaged catalog.
        KeySchema::with_types(partition, clustering).unwrap_or_else(|_| {
            KeySchema::new(vec![CqlType::Blob], Vec::new())
                .unwrap_or_else(|_| unreachable_key_schema())
        })
    }
}

#[allow(clippy::panic)]
fn unreachable_key_schema() -> KeySchema {
    panic!("a one-column blob key schema is always valid")
}

/// The whole schema of the cluster at one version.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Catalog {
    /// Format of this serialization.
    pub format: u32,
    /// User keyspaces, by name.
    pub keyspaces: BTreeMap<String, KeyspaceMeta>,
    /// The schema version (a digest of `keyspaces`).
    pub version: Uuid,
    /// Every table by id, built by [`Catalog::new`] (a catalog is a value: change one by
    /// building a new one from changed `keyspaces`).
    #[serde(skip)]
    by_id: std::collections::HashMap<TableId, Arc<TableMeta>>,
}

impl Default for Catalog {
    fn default() -> Self {
        Catalog::new(BTreeMap::new())
    }
}

/// A catalog that could not be read back.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CatalogError {
    /// Not valid catalog JSON.
    #[error("schema file is not a valid catalog: {0}")]
    Malformed(#[from] serde_json::Error),
    /// Written by a newer Mosaic.
    #[error("schema format {found} is newer than this build understands ({CATALOG_FORMAT})")]
    UnknownFormat {
        /// The format found.
        found: u32,
    },
}

impl Catalog {
    /// A catalog of `keyspaces`, its version computed from them.
    pub fn new(keyspaces: BTreeMap<String, KeyspaceMeta>) -> Catalog {
        let by_id = keyspaces
            .values()
            .flat_map(|k| k.tables.values())
            .map(|t| (t.id, t.clone()))
            .collect();
        let mut catalog = Catalog {
            format: CATALOG_FORMAT,
            keyspaces,
            version: Uuid::default(),
            by_id,
        };
        catalog.version = catalog.digest();
        catalog
    }

    fn digest(&self) -> Uuid {
        // serde_json of BTreeMaps is deterministic, so equal schemas give equal versions.
        let bytes = serde_json::to_vec(&self.keyspaces).unwrap_or_default();
        Uuid::from_digest(xxhash_rust::xxh3::xxh3_128(&bytes))
    }

    /// A keyspace by name (`system_auth` included: see [`auth_keyspace`]).
    pub fn keyspace(&self, name: &str) -> Option<&KeyspaceMeta> {
        self.keyspaces
            .get(name)
            .or_else(|| (name == AUTH_KEYSPACE).then(auth_keyspace))
    }

    /// A table by keyspace and name (`system_auth`'s included).
    pub fn table(&self, keyspace: &str, name: &str) -> Option<&Arc<TableMeta>> {
        self.keyspace(keyspace)?.tables.get(name)
    }

    /// The index named `name` in `keyspace`, with its table.
    pub fn index(&self, keyspace: &str, name: &str) -> Option<(&Arc<TableMeta>, &IndexMeta)> {
        self.keyspaces
            .get(keyspace)?
            .tables
            .values()
            .find_map(|t| Some((t, t.indexes.get(name)?)))
    }

    /// A table by id (`system_auth`'s included).
    pub fn table_by_id(&self, id: TableId) -> Option<&Arc<TableMeta>> {
        self.by_id
            .get(&id)
            .or_else(|| auth_keyspace().tables.values().find(|t| t.id == id))
    }

    /// Every user table (not `system_auth`'s: see [`Catalog::stored_tables`]).
    pub fn tables(&self) -> impl Iterator<Item = &Arc<TableMeta>> {
        self.keyspaces.values().flat_map(|k| k.tables.values())
    }

    /// The catalog as bytes (JSON).
    pub fn to_bytes(&self) -> Vec<u8> {
        serde_json::to_vec_pretty(self).unwrap_or_default()
    }

    /// A catalog from [`Self::to_bytes`]; the version is recomputed.
    pub fn from_bytes(bytes: &[u8]) -> Result<Catalog, CatalogError> {
        let catalog: Catalog = serde_json::from_slice(bytes)?;
        if catalog.format > CATALOG_FORMAT {
            return Err(CatalogError::UnknownFormat {
                found: catalog.format,
            });
        }
        Ok(Catalog::new(catalog.keyspaces))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Catalog {
        let table = TableMeta {
            keyspace: "ks".into(),
            name: "t".into(),
            id: TableId(Uuid::random().0),
            columns: vec![
                ColumnMeta {
                    name: "k".into(),
                    ty: CqlType::Int.into(),
                    kind: ColumnKind::PartitionKey { position: 0 },
                    id: ColumnId(0),
                },
                ColumnMeta {
                    name: "c".into(),
                    ty: CqlType::Text.into(),
                    kind: ColumnKind::Clustering {
                        position: 0,
                        order: ClusteringOrder::Desc,
                    },
                    id: ColumnId(1),
                },
                ColumnMeta {
                    name: "v".into(),
                    ty: CqlType::Blob.into(),
                    kind: ColumnKind::Regular,
                    id: ColumnId(2),
                },
            ],
            params: TableParams::default(),
            next_column_id: 3,
            indexes: BTreeMap::new(),
            dropped_columns: BTreeMap::new(),
            counter: false,
            derived: Derived::default(),
        };
        let ks = KeyspaceMeta {
            name: "ks".into(),
            replication: Replication::simple(3),
            durable_writes: true,
            tables: BTreeMap::from([("t".to_owned(), Arc::new(table))]),
            types: BTreeMap::new(),
        };
        Catalog::new(BTreeMap::from([("ks".to_owned(), ks)]))
    }

    #[test]
    fn catalog_round_trips_with_the_same_version() {
        let c = sample();
        let back = Catalog::from_bytes(&c.to_bytes()).unwrap();
        assert_eq!(back, c);
        assert_eq!(back.version, c.version);
        assert_ne!(c.version, Catalog::default().version);
    }

    #[test]
    fn garbage_and_future_formats_are_refused() {
        assert!(Catalog::from_bytes(b"{not json").is_err());
        let mut c = sample();
        c.format = CATALOG_FORMAT + 1;
        let bytes = serde_json::to_vec(&c).unwrap();
        assert!(matches!(
            Catalog::from_bytes(&bytes),
            Err(CatalogError::UnknownFormat { .. })
        ));
    }

    #[test]
    fn blob_literals_round_trip_and_garbage_is_refused() {
        assert_eq!(decode_blob_literal("0x00ff7A"), Some(vec![0, 0xff, 0x7a]));
        assert_eq!(decode_blob_literal("0x"), Some(Vec::new()));
        assert_eq!(encode_blob_literal(&[0, 0xff, 0x7a]), "0x00ff7a");
        for bad in ["00ff", "0x0", "0xzz", "0x\u{e9}\u{e9}", ""] {
            assert_eq!(decode_blob_literal(bad), None, "{bad}");
        }
    }

    #[test]
    fn uuids_print_and_parse() {
        let u = Uuid::random();
        assert_eq!(u.to_string().parse::<Uuid>().unwrap(), u);
        assert_eq!(u.0[6] >> 4, 4);
        assert!("not-a-uuid".parse::<Uuid>().is_err());
    }

    #[test]
    fn replica_orders_are_positions_and_damaged_ones_fall_back_to_declared() {
        let c = sample();
        let mut t = TableMeta::clone(c.table("ks", "t").unwrap());
        assert!(t.replica_orders().is_empty());
        t.params.layout = Layout::Heterogeneous;
        assert!(t.replica_orders().is_empty());
        t.params.layout_options.insert(
            REPLICA_ORDERS_OPTION.to_owned(),
            "(c), (x), (c, c), (c)".into(),
        );
        assert_eq!(t.replica_orders(), vec![vec![0]; 4]);
        t.params
            .layout_options
            .insert(REPLICA_ORDERS_OPTION.to_owned(), "(c".into());
        assert!(t.replica_orders().is_empty());
    }

    #[test]
    fn select_star_puts_key_columns_first() {
        let c = sample();
        let t = c.table("ks", "t").unwrap();
        let names: Vec<_> = t
            .select_star_order()
            .iter()
            .map(|c| c.name.clone())
            .collect();
        assert_eq!(names, ["k", "c", "v"]);
        assert_eq!(t.key_schema().clustering_columns().len(), 1);
    }
}
