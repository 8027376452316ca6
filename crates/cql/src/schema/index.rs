//! Secondary indexes as the schema describes them: which column of a table an index
//! covers and how (its value, a collection's keys, values or entries, or a frozen
//! collection whole), and, for `CREATE CUSTOM INDEX`, the class it names.
//!
//! An index belongs to its table (it is dropped with it) and its name is unique in its
//! keyspace, as in Cassandra. What a node stores for an index and how a query uses it
//! are in [`crate::index`].

use std::collections::BTreeMap;
use std::fmt;

use mosaic_types::DataType;
use serde::{Deserialize, Serialize};

/// The class `CREATE CUSTOM INDEX … USING` names for a storage-attached index, as
/// Cassandra 5 spells it in full (what `system_schema.indexes` and `DESCRIBE` show).
pub const SAI_CLASS: &str = "org.apache.cassandra.index.sai.StorageAttachedIndex";

/// What of a column an index covers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum TargetKind {
    /// The column's value (a regular, static or key column, or a frozen UDT or tuple).
    Simple,
    /// `keys(m)`: the keys of a map.
    Keys,
    /// `values(c)`: the elements of a list or set, the values of a map.
    Values,
    /// `entries(m)`: the (key, value) pairs of a map.
    Entries,
    /// `full(c)`: a frozen collection as one value.
    Full,
}

impl TargetKind {
    /// The function name CQL writes around the column (`None` for a plain column).
    pub fn function(self) -> Option<&'static str> {
        match self {
            TargetKind::Simple => None,
            TargetKind::Keys => Some("keys"),
            TargetKind::Values => Some("values"),
            TargetKind::Entries => Some("entries"),
            TargetKind::Full => Some("full"),
        }
    }
}

/// The column an index covers and how.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct IndexTarget {
    /// The column's name.
    pub column: String,
    /// What of it.
    pub kind: TargetKind,
}

impl fmt::Display for IndexTarget {
    /// The target as `system_schema.indexes` stores it and `DESCRIBE` prints it:
    /// `v`, `"Quoted"`, `values(l)`, `keys(m)`, `entries(m)`, `full(f)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let column = crate::ast::Ident::new(&self.column);
        match self.kind.function() {
            None => write!(f, "{column}"),
            Some(func) => write!(f, "{func}({column})"),
        }
    }
}

/// One secondary index.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct IndexMeta {
    /// Its name (unique in the keyspace).
    pub name: String,
    /// What it covers.
    pub target: IndexTarget,
    /// For `CREATE CUSTOM INDEX`: the class named, in full.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub class_name: Option<String>,
    /// `WITH OPTIONS = {…}` of a custom index.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub options: BTreeMap<String, String>,
}

impl IndexMeta {
    /// `system_schema.indexes.kind`.
    pub fn kind_name(&self) -> &'static str {
        if self.class_name.is_some() {
            "CUSTOM"
        } else {
            "COMPOSITES"
        }
    }

    /// `system_schema.indexes.options`: the target, and a custom index's class and
    /// options.
    pub fn schema_options(&self) -> BTreeMap<String, String> {
        let mut out = self.options.clone();
        if let Some(class) = &self.class_name {
            out.insert("class_name".to_owned(), class.clone());
        }
        out.insert("target".to_owned(), self.target.to_string());
        out
    }

    /// The statement that creates it (`DESCRIBE`), on `keyspace.table`.
    pub fn create_statement(&self, keyspace: &str, table: &str) -> String {
        let name = crate::ast::Ident::new(&self.name);
        let ks = crate::ast::Ident::new(keyspace);
        let t = crate::ast::Ident::new(table);
        match &self.class_name {
            None => format!("CREATE INDEX {name} ON {ks}.{t} ({});", self.target),
            Some(class) => {
                let mut out = format!(
                    "CREATE CUSTOM INDEX {name} ON {ks}.{t} ({}) USING '{}'",
                    self.target,
                    class.replace('\'', "''")
                );
                if !self.options.is_empty() {
                    let options: Vec<String> = self
                        .options
                        .iter()
                        .map(|(k, v)| {
                            format!("'{}': '{}'", k.replace('\'', "''"), v.replace('\'', "''"))
                        })
                        .collect();
                    out.push_str(&format!(" WITH OPTIONS = {{{}}}", options.join(", ")));
                }
                out.push(';');
                out
            }
        }
    }
}

/// The kind a plain `CREATE INDEX ON t (c)` gets for a column of type `ty`: the values of a
/// non-frozen collection, the value itself otherwise.
pub fn default_kind(ty: &DataType) -> TargetKind {
    match ty {
        DataType::List(_) | DataType::Set(_) | DataType::Map(..) => TargetKind::Values,
        _ => TargetKind::Simple,
    }
}

/// Cassandra's default index name for `column` of `table`: `table_column_idx` with every
/// character that is not a letter, digit or underscore removed.
pub fn default_name(table: &str, column: &str) -> String {
    format!("{table}_{column}_idx")
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect()
}
