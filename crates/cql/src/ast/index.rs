//! Secondary index statements: `CREATE [CUSTOM] INDEX`, `DROP INDEX`.

use std::fmt::{self, Display, Formatter};

use crate::schema::TargetKind;

use super::{Ident, QualifiedName};

/// `CREATE [CUSTOM] INDEX [IF NOT EXISTS] [name] ON [ks.]table (target) [USING 'class'
/// [WITH OPTIONS = {…}]]`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct CreateIndexStatement {
    /// The index's name, when given.
    pub name: Option<Ident>,
    /// The table.
    pub table: QualifiedName,
    /// `IF NOT EXISTS`.
    pub if_not_exists: bool,
    /// The column indexed.
    pub column: Ident,
    /// How (`None`: as written without a function, `c`).
    pub kind: Option<TargetKind>,
    /// `CUSTOM … USING 'class'`: the class.
    pub class: Option<String>,
    /// `WITH OPTIONS = {…}`, in the order written.
    pub options: Vec<(String, String)>,
}

/// `DROP INDEX [IF EXISTS] [ks.]name`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct DropIndexStatement {
    /// The index.
    pub name: QualifiedName,
    /// `IF EXISTS`.
    pub if_exists: bool,
}

/// A quoted CQL string.
fn string(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

impl Display for CreateIndexStatement {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        f.write_str("CREATE ")?;
        if self.class.is_some() {
            f.write_str("CUSTOM ")?;
        }
        f.write_str("INDEX ")?;
        if self.if_not_exists {
            f.write_str("IF NOT EXISTS ")?;
        }
        if let Some(name) = &self.name {
            write!(f, "{name} ")?;
        }
        write!(f, "ON {} (", self.table)?;
        match self.kind.and_then(TargetKind::function) {
            Some(func) => write!(f, "{func}({}))", self.column)?,
            None => write!(f, "{})", self.column)?,
        }
        if let Some(class) = &self.class {
            write!(f, " USING {}", string(class))?;
            if !self.options.is_empty() {
                f.write_str(" WITH OPTIONS = {")?;
                for (i, (k, v)) in self.options.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{}: {}", string(k), string(v))?;
                }
                f.write_str("}")?;
            }
        }
        Ok(())
    }
}

impl Display for DropIndexStatement {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        f.write_str("DROP INDEX ")?;
        if self.if_exists {
            f.write_str("IF EXISTS ")?;
        }
        write!(f, "{}", self.name)
    }
}
