//! Schema elements as `DESCRIBE` sees them — the system, virtual and user keyspaces and
//! their tables — and the CQL text that recreates each, formatted as Cassandra 4.0 formats
//! it (so tools that read `DESCRIBE` output, and people used to it, see what they expect).
//!
//! A table's options come from the same [`TableOptions`] that `system_schema.tables`
//! shows, so `DESCRIBE` and drivers' metadata always agree; Mosaic's replica layout
//! appears, as there, as the `mosaic.layout` entry of `extensions`. The text parses back in
//! Mosaic and recreates an equal table (the statement tests check this round trip).
//!
//! The text layout follows Cassandra's: columns one per line, partition key, then
//! clustering columns, then static and regular columns by name; `PRIMARY KEY` inline for
//! a single-column key; `WITH [ID = …] [CLUSTERING ORDER BY (…)]` then every option in
//! alphabetical order, one per line; names quoted only when they must be.

use std::collections::BTreeMap;
use std::fmt::Write;

use super::options::{
    cql_string as string, map_text, system_table_options, user_table_options, OptionValue,
    TableOptions,
};
use super::tables::{self, KeyspaceDef, TableDef};
use crate::ast::Ident;
use crate::schema::{encode_blob_literal, Catalog, ColumnKind, KeyspaceMeta, TableMeta};

/// Where Cassandra's replication strategies live; `DESCRIBE` shows their short names.
const LOCATOR_PACKAGE: &str = "org.apache.cassandra.locator.";

/// A keyspace `DESCRIBE` can show.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Keyspace<'a> {
    /// One of Cassandra's system keyspaces.
    System(&'static KeyspaceDef),
    /// A virtual keyspace (`system_virtual_schema`).
    Virtual(&'static str),
    /// A user keyspace.
    User(&'a KeyspaceMeta),
}

/// A table `DESCRIBE` can show.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Table<'a> {
    /// A system or virtual table.
    System(&'static TableDef),
    /// A user table.
    User(&'a TableMeta),
}

/// Cassandra's order of schema elements: by name, ignoring case.
fn by_name<'n, T: 'n>(items: &mut [T], name: impl Fn(&T) -> &'n str) {
    items.sort_by(|a, b| {
        let (a, b) = (name(a), name(b));
        a.to_lowercase()
            .cmp(&b.to_lowercase())
            .then_with(|| a.cmp(b))
    });
}

/// Every keyspace, in Cassandra's order.
pub(crate) fn keyspaces(catalog: &Catalog) -> Vec<Keyspace<'_>> {
    let mut out: Vec<Keyspace<'_>> = tables::SYSTEM_KEYSPACES
        .iter()
        .map(Keyspace::System)
        .chain(
            tables::VIRTUAL_KEYSPACES
                .iter()
                .copied()
                .map(Keyspace::Virtual),
        )
        .chain(catalog.keyspaces.values().map(Keyspace::User))
        .collect();
    by_name(&mut out, Keyspace::name);
    out
}

/// A keyspace by exact name.
pub(crate) fn keyspace<'a>(catalog: &'a Catalog, name: &str) -> Option<Keyspace<'a>> {
    keyspaces(catalog).into_iter().find(|k| k.name() == name)
}

impl<'a> Keyspace<'a> {
    /// Its name.
    pub(crate) fn name(&self) -> &'a str {
        match self {
            Keyspace::System(k) => k.name,
            Keyspace::Virtual(name) => name,
            Keyspace::User(k) => &k.name,
        }
    }

    /// Whether it is a system (or virtual) keyspace, left out of `DESCRIBE SCHEMA`.
    pub(crate) fn is_system(&self) -> bool {
        !matches!(self, Keyspace::User(_))
    }

    /// Its tables, in Cassandra's order.
    pub(crate) fn tables(&self) -> Vec<Table<'a>> {
        let mut out: Vec<Table<'a>> = match self {
            Keyspace::System(_) | Keyspace::Virtual(_) => {
                let name = self.name();
                tables::ALL
                    .iter()
                    .copied()
                    .filter(|t| t.keyspace == name)
                    .map(Table::System)
                    .collect()
            }
            Keyspace::User(k) => k.tables.values().map(|t| Table::User(t)).collect(),
        };
        by_name(&mut out, Table::name);
        out
    }

    /// One of its tables by exact name.
    pub(crate) fn table(&self, name: &str) -> Option<Table<'a>> {
        self.tables().into_iter().find(|t| t.name() == name)
    }

    /// The statement that recreates it (a commented structure for a virtual keyspace,
    /// which CQL cannot create).
    pub(crate) fn create_statement(&self) -> String {
        let name = quoted(self.name());
        let (replication, durable_writes) = match self {
            Keyspace::Virtual(_) => {
                return format!(
                    "/*\nWarning: Keyspace {name} is a virtual keyspace and cannot be recreated with CQL.\nStructure, for reference:\nVIRTUAL KEYSPACE {name};\n*/"
                )
            }
            Keyspace::System(k) => (
                k.replication
                    .iter()
                    .map(|(a, b)| ((*a).to_owned(), (*b).to_owned()))
                    .collect(),
                true,
            ),
            Keyspace::User(k) => (k.replication.as_map(), k.durable_writes),
        };
        format!(
            "CREATE KEYSPACE {name} WITH replication = {}  AND durable_writes = {durable_writes};",
            replication_text(replication)
        )
    }
}

/// `{'class': 'SimpleStrategy', 'replication_factor': '3'}`: the class first, by its short
/// name when it is one of Cassandra's, then the options by name.
fn replication_text(mut replication: BTreeMap<String, String>) -> String {
    let class = replication.remove("class").unwrap_or_default();
    let class = class.strip_prefix(LOCATOR_PACKAGE).unwrap_or(&class);
    let mut out = format!("{{'class': {}", string(class));
    for (k, v) in &replication {
        let _ = write!(out, ", {}: {}", string(k), string(v));
    }
    out.push('}');
    out
}

/// A column's role in the text of its table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Role {
    Partition(usize),
    Clustering(usize),
    Static,
    Regular,
}

/// One column as written in `CREATE TABLE`.
struct Column<'t> {
    name: &'t str,
    ty: std::borrow::Cow<'t, str>,
    role: Role,
    descending: bool,
    /// A non-frozen collection (or UDT): Cassandra's `Columns` order puts these after the
    /// columns of one cell.
    multi_cell: bool,
}

impl<'a> Table<'a> {
    /// Its keyspace's name.
    pub(crate) fn keyspace(&self) -> &'a str {
        match self {
            Table::System(t) => t.keyspace,
            Table::User(t) => &t.keyspace,
        }
    }

    /// Its name.
    pub(crate) fn name(&self) -> &'a str {
        match self {
            Table::System(t) => t.name,
            Table::User(t) => &t.name,
        }
    }

    fn is_virtual(&self) -> bool {
        matches!(self, Table::System(t) if t.is_virtual())
    }

    /// Its columns in `CREATE TABLE` order, as Cassandra 4 writes them: partition key,
    /// clustering columns, then static and then regular columns, each the ones of one cell
    /// by name and then the non-frozen collections and UDTs by name (`Columns`' order).
    fn columns(&self) -> Vec<Column<'a>> {
        let mut out: Vec<Column<'a>> = match self {
            Table::System(t) => t
                .columns
                .iter()
                .map(|c| Column {
                    name: c.name,
                    ty: std::borrow::Cow::Borrowed(c.ty),
                    role: match c.kind {
                        tables::Kind::PartitionKey(p) => Role::Partition(usize::from(p)),
                        tables::Kind::Clustering(p) => Role::Clustering(usize::from(p)),
                        tables::Kind::Regular => Role::Regular,
                    },
                    descending: false,
                    multi_cell: ["list<", "set<", "map<"]
                        .iter()
                        .any(|p| c.ty.starts_with(p)),
                })
                .collect(),
            Table::User(t) => t
                .columns
                .iter()
                .map(|c| {
                    let (role, descending) = match c.kind {
                        ColumnKind::PartitionKey { position } => (Role::Partition(position), false),
                        ColumnKind::Clustering { position, order } => (
                            Role::Clustering(position),
                            order == crate::schema::ClusteringOrder::Desc,
                        ),
                        ColumnKind::Static => (Role::Static, false),
                        ColumnKind::Regular => (Role::Regular, false),
                    };
                    Column {
                        name: &c.name,
                        ty: std::borrow::Cow::Owned(t.type_name(c)),
                        role,
                        descending,
                        multi_cell: c.ty.is_multi_cell(),
                    }
                })
                .collect(),
        };
        out.sort_by(|a, b| {
            a.role
                .cmp(&b.role)
                .then(a.multi_cell.cmp(&b.multi_cell))
                .then_with(|| a.name.cmp(b.name))
        });
        out
    }

    /// The statement that recreates it; `internals` adds its id (`WITH ID = …`), which
    /// Cassandra needs to restore a snapshot's data into the recreated table. A virtual
    /// table's structure comes as a comment: CQL cannot create one.
    pub(crate) fn create_statement(&self, internals: bool) -> String {
        let full_name = format!("{}.{}", quoted(self.keyspace()), quoted(self.name()));
        let columns = self.columns();
        let partition: Vec<&Column<'_>> = columns
            .iter()
            .filter(|c| matches!(c.role, Role::Partition(_)))
            .collect();
        let clustering: Vec<&Column<'_>> = columns
            .iter()
            .filter(|c| matches!(c.role, Role::Clustering(_)))
            .collect();
        let inline_key = partition.len() == 1 && clustering.is_empty();

        let mut out = String::new();
        let verb = if self.is_virtual() {
            let _ = write!(
                out,
                "/*\nWarning: Table {full_name} is a virtual table and cannot be recreated with CQL.\nStructure, for reference:\n"
            );
            "VIRTUAL TABLE"
        } else {
            "CREATE TABLE"
        };
        let _ = writeln!(out, "{verb} {full_name} (");
        for (i, c) in columns.iter().enumerate() {
            let _ = write!(out, "    {} {}", quoted(c.name), c.ty);
            if c.role == Role::Static {
                out.push_str(" static");
            }
            if inline_key && matches!(c.role, Role::Partition(_)) {
                out.push_str(" PRIMARY KEY");
            }
            if !inline_key || i + 1 < columns.len() {
                out.push(',');
            }
            out.push('\n');
        }
        if !inline_key {
            out.push_str("    PRIMARY KEY (");
            let names = |cols: &[&Column<'_>]| -> String {
                cols.iter()
                    .map(|c| quoted(c.name))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            if partition.len() > 1 {
                let _ = write!(out, "({})", names(&partition));
            } else {
                out.push_str(&names(&partition));
            }
            if !clustering.is_empty() {
                let _ = write!(out, ", {}", names(&clustering));
            }
            out.push_str(")\n");
        }
        out.push_str(") WITH ");
        let mut options: Vec<String> = Vec::new();
        if internals {
            options.push(format!("ID = {}", self.id()));
        }
        if !clustering.is_empty() {
            let orders: Vec<String> = clustering
                .iter()
                .map(|c| {
                    let order = if c.descending { "DESC" } else { "ASC" };
                    format!("{} {order}", quoted(c.name))
                })
                .collect();
            options.push(format!("CLUSTERING ORDER BY ({})", orders.join(", ")));
        }
        match self {
            Table::System(t) if t.is_virtual() => {
                options.push(format!("comment = {}", string(t.comment)));
            }
            Table::System(t) => options.extend(option_lines(&system_table_options(t))),
            Table::User(t) => options.extend(option_lines(&user_table_options(t))),
        }
        out.push_str(&options.join("\n    AND "));
        out.push(';');
        if self.is_virtual() {
            out.push_str("\n*/");
        }
        out
    }

    fn id(&self) -> crate::schema::Uuid {
        match self {
            Table::System(t) => super::options::system_table_id(t),
            Table::User(t) => crate::schema::Uuid(t.id.0),
        }
    }
}

/// The `name = value` lines of a table's options, in Cassandra 4.0's (alphabetical)
/// order: strings quoted, doubles as Java prints them, maps of strings quoted, extensions
/// as blob constants.
fn option_lines(o: &TableOptions) -> Vec<String> {
    o.described()
        .into_iter()
        .map(|(name, value)| {
            let value = match value {
                OptionValue::Text(s) => string(s),
                OptionValue::Double(v) => java_double(v),
                OptionValue::Int(v) => v.to_string(),
                OptionValue::Bool(v) => v.to_string(),
                OptionValue::Map(map) => map_text(map),
                OptionValue::Blobs(map) => {
                    let entries: Vec<String> = map
                        .iter()
                        .map(|(k, v)| format!("{}: {}", string(k), encode_blob_literal(v)))
                        .collect();
                    format!("{{{}}}", entries.join(", "))
                }
            };
            format!("{name} = {value}")
        })
        .collect()
}

/// A name as CQL must write it: bare when it reads back as itself, else double-quoted.
pub(crate) fn quoted(name: &str) -> String {
    Ident::new(name).to_string()
}

/// A double as Java prints it (Cassandra's option values): `0.01`, `1.0`, `1.0E-4`.
pub(crate) fn java_double(v: f64) -> String {
    if v.is_nan() {
        return "NaN".to_owned();
    }
    if v.is_infinite() {
        return if v > 0.0 { "Infinity" } else { "-Infinity" }.to_owned();
    }
    java_number(v.abs(), format!("{v}"), format!("{v:e}"))
}

/// A finite float as Java's `Double.toString`/`Float.toString` print it, from its magnitude
/// and Rust's shortest plain (`{}`) and scientific (`{:e}`) texts: plain between 10^-3 and
/// 10^7 (always with a fraction), else `mantissaEexponent`.
pub(crate) fn java_number(magnitude: f64, plain: String, scientific: String) -> String {
    if magnitude == 0.0 || (1e-3..1e7).contains(&magnitude) {
        return if plain.contains('.') {
            plain
        } else {
            format!("{plain}.0")
        };
    }
    let (mantissa, exponent) = scientific.split_once('e').unwrap_or((&scientific, "0"));
    if mantissa.contains('.') {
        format!("{mantissa}E{exponent}")
    } else {
        format!("{mantissa}.0E{exponent}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubles_print_as_java_prints_them() {
        for (v, text) in [
            (0.01, "0.01"),
            (1.0, "1.0"),
            (0.1, "0.1"),
            (0.0, "0.0"),
            (1e-4, "1.0E-4"),
            (2.5e7, "2.5E7"),
            (123.25, "123.25"),
        ] {
            assert_eq!(java_double(v), text, "{v}");
        }
    }

    #[test]
    fn replication_shows_short_class_names_first() {
        let map = BTreeMap::from([
            (
                "class".to_owned(),
                format!("{LOCATOR_PACKAGE}NetworkTopologyStrategy"),
            ),
            ("dc1".to_owned(), "3".to_owned()),
            ("a'b".to_owned(), "1".to_owned()),
        ]);
        assert_eq!(
            replication_text(map),
            "{'class': 'NetworkTopologyStrategy', 'a''b': '1', 'dc1': '3'}"
        );
    }

    #[test]
    fn system_keyspaces_and_their_tables_are_listed_by_name() {
        let catalog = Catalog::default();
        let names: Vec<&str> = keyspaces(&catalog).iter().map(Keyspace::name).collect();
        assert_eq!(
            names,
            [
                "system",
                "system_auth",
                "system_distributed",
                "system_schema",
                "system_traces",
                "system_virtual_schema"
            ]
        );
        let Some(schema) = keyspace(&catalog, "system_schema") else {
            panic!("system_schema is listed");
        };
        assert!(schema.is_system());
        let tables: Vec<&str> = schema.tables().iter().map(Table::name).collect();
        assert!(tables.windows(2).all(|w| w[0] < w[1]), "{tables:?}");
        assert_eq!(
            schema.create_statement(),
            "CREATE KEYSPACE system_schema WITH replication = {'class': 'LocalStrategy'}  AND durable_writes = true;"
        );
    }

    #[test]
    fn virtual_elements_are_commented_structures() {
        let catalog = Catalog::default();
        let Some(ks) = keyspace(&catalog, "system_virtual_schema") else {
            panic!("the virtual schema is listed");
        };
        assert!(ks
            .create_statement()
            .starts_with("/*\nWarning: Keyspace system_virtual_schema is a virtual keyspace"));
        let Some(t) = ks.table("tables") else {
            panic!("system_virtual_schema.tables exists");
        };
        assert_eq!(
            t.create_statement(false),
            "/*\nWarning: Table system_virtual_schema.tables is a virtual table and cannot be recreated with CQL.\nStructure, for reference:\nVIRTUAL TABLE system_virtual_schema.tables (\n    keyspace_name text,\n    table_name text,\n    comment text,\n    PRIMARY KEY (keyspace_name, table_name)\n) WITH CLUSTERING ORDER BY (table_name ASC)\n    AND comment = 'virtual table definitions';\n*/"
        );
    }

    #[test]
    fn system_tables_show_their_options() {
        let catalog = Catalog::default();
        let Some(local) = keyspace(&catalog, "system").and_then(|k| k.table("local")) else {
            panic!("system.local exists");
        };
        let text = local.create_statement(true);
        assert!(
            text.starts_with(
                "CREATE TABLE system.local (\n    key text PRIMARY KEY,\n    bootstrapped text,\n"
            ),
            "{text}"
        );
        assert!(text.contains(") WITH ID = "), "{text}");
        assert!(
            text.contains("\n    AND comment = 'information about the local node'\n"),
            "{text}"
        );
        assert!(text.contains("\n    AND extensions = {}\n"), "{text}");
        assert!(
            text.ends_with("\n    AND speculative_retry = '99p';"),
            "{text}"
        );
    }
}
