//! User-defined type statements: `CREATE TYPE`, `ALTER TYPE`, `DROP TYPE`.

use mosaic_types::DataType;

use super::{Ident, QualifiedName};

/// `CREATE TYPE [IF NOT EXISTS] [ks.]name (field type, …)`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct CreateTypeStatement {
    /// The type.
    pub name: QualifiedName,
    /// `IF NOT EXISTS`.
    pub if_not_exists: bool,
    /// Its fields, in order.
    pub fields: Vec<(Ident, DataType)>,
}

/// What `ALTER TYPE` does.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum AlterTypeOperation {
    /// `ADD field type`.
    Add(Ident, DataType),
    /// `RENAME a TO b [AND c TO d …]`.
    Rename(Vec<(Ident, Ident)>),
}

/// `ALTER TYPE [ks.]name …`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct AlterTypeStatement {
    /// The type.
    pub name: QualifiedName,
    /// The change.
    pub operation: AlterTypeOperation,
}

/// `DROP TYPE [IF EXISTS] [ks.]name`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct DropTypeStatement {
    /// The type.
    pub name: QualifiedName,
    /// `IF EXISTS`.
    pub if_exists: bool,
}
