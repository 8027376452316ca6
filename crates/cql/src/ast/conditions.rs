//! The `IF …` of a lightweight transaction: `INSERT … IF NOT EXISTS`, `UPDATE`/`DELETE …
//! IF EXISTS` and `IF cond AND …` (Cassandra's `Conditions` and `ColumnCondition.Raw`).

use std::fmt::{self, Display, Formatter};

use super::{Ident, InValues, Operator, Term};

/// What a conditional statement checks before it writes.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Conditions {
    /// `IF NOT EXISTS` (INSERT only): the row (the static row for a static-only insert)
    /// has no live data.
    NotExists,
    /// `IF EXISTS` (UPDATE and DELETE): the row (the static row for a static-only write)
    /// has live data.
    Exists,
    /// `IF cond AND …` (UPDATE and DELETE), never empty: every condition holds.
    Columns(Vec<Condition>),
}

/// One condition of `IF cond AND …`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Condition {
    /// The column (never a primary key column: the executor refuses them).
    pub column: Ident,
    /// What of the column is compared: all of it, an element or a field.
    pub target: ConditionTarget,
    /// The comparison.
    pub op: ConditionOp,
}

/// What of a column a [`Condition`] looks at.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum ConditionTarget {
    /// The whole value: `c = …`.
    Column,
    /// A list's element by index or a map's value by key: `c[t] = …`.
    Element(Term),
    /// A field of a user-defined type: `c.f = …`.
    Field(Ident),
}

/// How a [`Condition`] compares.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum ConditionOp {
    /// `= t`, `!= t`, `< t`, `<= t`, `> t`, `>= t`.
    Compare(Operator, Term),
    /// `IN (t, …)` or `IN ?`: equal to one of the values.
    In(InValues),
    /// `CONTAINS t` (a collection's element or a map's value) or `CONTAINS KEY t` (a map's
    /// key).
    Contains {
        /// `CONTAINS KEY`.
        key: bool,
        /// The value looked for.
        value: Term,
    },
}

impl Display for Conditions {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            Conditions::NotExists => f.write_str("IF NOT EXISTS"),
            Conditions::Exists => f.write_str("IF EXISTS"),
            Conditions::Columns(conditions) => {
                f.write_str("IF ")?;
                super::display::join(f, conditions, " AND ")
            }
        }
    }
}

impl Display for Condition {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.column)?;
        match &self.target {
            ConditionTarget::Column => {}
            ConditionTarget::Element(t) => write!(f, "[{t}]")?,
            ConditionTarget::Field(name) => write!(f, ".{name}")?,
        }
        match &self.op {
            ConditionOp::Compare(op, t) => write!(f, " {op} {t}"),
            ConditionOp::In(values) => write!(f, " IN {values}"),
            ConditionOp::Contains { key: true, value } => write!(f, " CONTAINS KEY {value}"),
            ConditionOp::Contains { key: false, value } => write!(f, " CONTAINS {value}"),
        }
    }
}
