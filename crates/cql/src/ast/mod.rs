//! The CQL abstract syntax tree: what [`crate::parse`] produces and what the statement
//! executor consumes.
//!
//! Owns: the shape of every statement Mosaic accepts, named after Cassandra's own statement
//! classes (`SelectStatement`, `UpdateStatement`, …). Must not depend on schemas, the engine
//! or the cluster: the tree records what the client *wrote* (names normalised the way CQL
//! normalises them, literals typed only by their lexical kind); checking names against a
//! schema and converting literals to column types happens in the executor, because only it
//! knows the columns.
//!
//! Constructs Mosaic does not implement (materialized views, user-defined
//! functions, …) have no place in this tree: the parser rejects them with
//! [`crate::parse::ParseError::Unsupported`], so an executor can never meet one by accident.
//!
//! Every node implements [`std::fmt::Display`] as CQL text that parses back to an equal tree
//! (`parse_statement(&s.to_string()) == Ok(s)`); the parser's round-trip tests rely on it
//! and it is handy in logs and error messages.

mod auth;
mod conditions;
mod describe;
mod display;
mod index;
mod types;

pub use auth::{AuthStatement, Permission, Permissions, ResourceName, RoleOptions};
pub use conditions::{Condition, ConditionOp, ConditionTarget, Conditions};
pub use describe::{DescribeStatement, DescribeTarget};
pub use index::{CreateIndexStatement, DropIndexStatement};
pub use types::{AlterTypeOperation, AlterTypeStatement, CreateTypeStatement, DropTypeStatement};

use mosaic_types::{CqlType, DataType};

/// A CQL identifier (keyspace, table, column, property, function or bind-marker name), as
/// CQL normalises it: unquoted identifiers are lowercased, `"quoted"` ones keep their case
/// (with `""` unescaped to `"`).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Ident(String);

impl Ident {
    /// An identifier with exactly this (case-sensitive) name, as if it had been quoted.
    pub fn new(name: impl Into<String>) -> Self {
        Ident(name.into())
    }

    /// An identifier written without quotes: CQL lowercases it.
    pub fn from_unquoted(text: &str) -> Self {
        Ident(text.to_ascii_lowercase())
    }

    /// The normalised name.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The normalised name, owned.
    pub fn into_string(self) -> String {
        self.0
    }
}

impl PartialEq<str> for Ident {
    fn eq(&self, other: &str) -> bool {
        self.0 == other
    }
}

impl PartialEq<&str> for Ident {
    fn eq(&self, other: &&str) -> bool {
        self.0 == *other
    }
}

/// `[keyspace.]name` for tables (and other keyspace-scoped objects).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct QualifiedName {
    /// The keyspace when written; `None` means the connection's current keyspace.
    pub keyspace: Option<Ident>,
    /// The object's name.
    pub name: Ident,
}

/// A constant, typed only by how it was written: the executor converts it to the column's
/// type (an integer literal may become an `int`, a `varint`, a `double`, …).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Literal {
    /// `'text'` (with `''` unescaped) or `$$text$$`.
    String(String),
    /// An integer exactly as written: an optional `-` and decimal digits, unbounded.
    Integer(String),
    /// A floating-point number exactly as written (`1.5`, `-2e10`, `3.`).
    Float(String),
    /// `NaN` (also `-NaN`).
    NaN,
    /// `Infinity`.
    Infinity,
    /// `-Infinity`.
    NegInfinity,
    /// An unquoted UUID literal such as `123e4567-e89b-12d3-a456-426614174000`.
    Uuid(u128),
    /// A `0x…` hex literal.
    Blob(Vec<u8>),
    /// `true` or `false`.
    Boolean(bool),
    /// `NULL`.
    Null,
    /// An unquoted duration exactly as written: `1h30m`, `-2d`, `P1Y2M`, `PT5M`, `P2W`,
    /// `P0001-02-03T04:05:06` (a leading `-` included).
    Duration(String),
}

impl Literal {
    /// The integer's value if this is an integer literal that fits an `i64`.
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Literal::Integer(text) => text.parse().ok(),
            _ => None,
        }
    }

    /// The string's value if this is a string literal.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Literal::String(s) => Some(s),
            _ => None,
        }
    }
}

/// A bind marker: `?` or `:name`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct BindMarker {
    /// Position among the statement's bind markers, from 0, in textual order (a `BATCH`
    /// numbers the markers of all its statements together). The client binds values in
    /// this order.
    pub index: usize,
    /// The name for `:name` markers; `None` for `?`.
    pub name: Option<Ident>,
}

/// A value in a statement: a constant, a bind marker, a function call or a tuple.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Term {
    /// A constant.
    Literal(Literal),
    /// A value bound at execution.
    Bind(BindMarker),
    /// A function call such as `now()`, `uuid()` or `toTimestamp(now())`; unquoted
    /// function names are lowercased like any identifier (`totimestamp`).
    Call {
        /// The function's name.
        name: Ident,
        /// Its arguments, in order.
        args: Vec<Term>,
    },
    /// `(t1, t2, …)`: a tuple literal, the right-hand side of a multi-column relation, or
    /// one element of its `IN` list.
    Tuple(Vec<Term>),
    /// `[t1, t2, …]`: a list literal.
    List(Vec<Term>),
    /// `{t1, t2, …}`: a set literal (`{}` is a [`Term::Map`]: Cassandra decides from the
    /// receiver).
    Set(Vec<Term>),
    /// `{k1: v1, …}` or `{}`: a map literal.
    Map(Vec<(Term, Term)>),
    /// `{field: v, …}`: a user-defined type literal.
    Udt(Vec<(Ident, Term)>),
}

/// An integer that may be bound later: `USING TTL`, `USING TIMESTAMP`, `LIMIT`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum IntValue {
    /// A literal that fits an `i64` (the executor checks narrower ranges).
    Literal(i64),
    /// A bind marker.
    Bind(BindMarker),
}

/// A comparison operator in a `WHERE` clause.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Operator {
    /// `=`
    Eq,
    /// `!=`
    Ne,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
}

/// The right-hand side of an `IN` relation.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum InValues {
    /// `IN (t1, t2, …)`, possibly empty; each element may itself be a bind marker.
    List(Vec<Term>),
    /// `IN ?`: the whole list is bound at execution.
    Bind(BindMarker),
}

/// One condition of a `WHERE` clause (the clause is their conjunction).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Relation {
    /// `column op term`.
    Compare {
        /// The column.
        column: Ident,
        /// The comparison.
        op: Operator,
        /// The value compared with.
        value: Term,
    },
    /// `column IN (…)` or `column IN ?`.
    In {
        /// The column.
        column: Ident,
        /// The values.
        values: InValues,
    },
    /// `(c1, c2, …) op (t1, t2, …)` or `(c1, c2) op ?`: a multi-column clustering slice.
    /// `value` is a [`Term::Tuple`] or a [`Term::Bind`].
    MultiColumn {
        /// The columns, in the order written.
        columns: Vec<Ident>,
        /// The comparison.
        op: Operator,
        /// The tuple compared with.
        value: Term,
    },
    /// `(c1, c2) IN ((…), (…))` or `(c1, c2) IN ?`; list elements are [`Term::Tuple`]s or
    /// [`Term::Bind`]s.
    MultiColumnIn {
        /// The columns, in the order written.
        columns: Vec<Ident>,
        /// The tuples.
        values: InValues,
    },
    /// `column[key] op term`: a map entry (Cassandra accepts `=` only, with ALLOW
    /// FILTERING or an index).
    Element {
        /// The map column.
        column: Ident,
        /// The entry's key.
        key: Term,
        /// The comparison.
        op: Operator,
        /// The value compared with.
        value: Term,
    },
    /// `column CONTAINS term` / `column CONTAINS KEY term`.
    Contains {
        /// The collection column.
        column: Ident,
        /// `CONTAINS KEY` (a map's keys) rather than `CONTAINS` (values or elements).
        key: bool,
        /// The value looked for.
        value: Term,
    },
    /// `token(c1, …) op term`: a token range restriction. `value` is typically a literal,
    /// a bind marker or `token(?, …)` ([`Term::Call`] named `token`).
    Token {
        /// The partition key columns inside `token(…)`.
        columns: Vec<Ident>,
        /// The comparison.
        op: Operator,
        /// The bound.
        value: Term,
    },
}

/// A sort direction.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Order {
    /// `ASC` (the default).
    #[default]
    Asc,
    /// `DESC`.
    Desc,
}

/// What a `SELECT` returns.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Selection {
    /// `*`: every column, in schema order.
    Wildcard,
    /// An explicit list (never empty).
    Selectors(Vec<Selector>),
}

/// One selected expression with its optional `AS` alias.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Selector {
    /// What is computed.
    pub expr: SelectorExpr,
    /// The result column's name when given with `AS`.
    pub alias: Option<Ident>,
}

/// A selected expression.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SelectorExpr {
    /// A column.
    Column(Ident),
    /// A constant or a bind marker (only [`Term::Literal`] and [`Term::Bind`] appear here).
    Value(Term),
    /// `count(*)` or `count(1)`: the number of rows.
    CountRows,
    /// `column.field[.field…]`: a field of a user-defined type (a field of a field of a
    /// nested one, …); the path is never empty.
    Field(Ident, Vec<Ident>),
    /// `column[term]`: an element of a set or a map.
    Element(Ident, Term),
    /// `column[from..to]`: the elements of a set or the entries of a map between two
    /// bounds, both inclusive, either left out.
    Slice(Ident, Option<Term>, Option<Term>),
    /// `writetime(column)`.
    WriteTime(Ident),
    /// `ttl(column)`.
    Ttl(Ident),
    /// `CAST(expr AS type)`.
    Cast {
        /// The expression converted.
        expr: Box<SelectorExpr>,
        /// The target type.
        ty: CqlType,
    },
    /// A function or aggregate call: `count(c)`, `sum(c)`, `min(c)`, `max(c)`, `avg(c)`,
    /// `token(a, b)`, `toTimestamp(c)`, … (names lowercased unless quoted).
    Call {
        /// The function's name.
        name: Ident,
        /// Its arguments.
        args: Vec<SelectorExpr>,
    },
}

/// `SELECT`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SelectStatement {
    /// `SELECT JSON`: each row as one JSON object in a `[json]` column.
    pub json: bool,
    /// `SELECT DISTINCT`.
    pub distinct: bool,
    /// What to return.
    pub selection: Selection,
    /// The table read.
    pub table: QualifiedName,
    /// The `WHERE` relations, in order (empty without `WHERE`).
    pub where_clause: Vec<Relation>,
    /// `GROUP BY` columns.
    pub group_by: Vec<Ident>,
    /// `ORDER BY` columns and directions.
    pub order_by: Vec<(Ident, Order)>,
    /// `PER PARTITION LIMIT`.
    pub per_partition_limit: Option<IntValue>,
    /// `LIMIT`.
    pub limit: Option<IntValue>,
    /// `ALLOW FILTERING`.
    pub allow_filtering: bool,
    /// Every bind marker of the statement, in textual order.
    pub bind_markers: Vec<BindMarker>,
}

/// `USING TTL … AND TIMESTAMP …` of `INSERT` and `UPDATE`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Using {
    /// `TTL` in seconds.
    pub ttl: Option<IntValue>,
    /// `TIMESTAMP` in microseconds since the Unix epoch.
    pub timestamp: Option<IntValue>,
}

/// `INSERT INTO t (cols) VALUES (terms) [USING …]`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct InsertStatement {
    /// The table written.
    pub table: QualifiedName,
    /// The columns, in the order written (as many as `values`).
    pub columns: Vec<Ident>,
    /// The values, one per column.
    pub values: Vec<Term>,
    /// `INSERT … JSON`: the row as a JSON object (`columns` and `values` are then empty).
    pub json: Option<InsertJson>,
    /// `IF NOT EXISTS` ([`Conditions::NotExists`], the only one an INSERT takes).
    pub conditions: Option<Conditions>,
    /// `USING` attributes.
    pub using: Using,
    /// Every bind marker of the statement, in textual order.
    pub bind_markers: Vec<BindMarker>,
}

/// `JSON value [DEFAULT NULL | DEFAULT UNSET]` of an INSERT.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct InsertJson {
    /// The JSON text: a string literal or a bind marker.
    pub value: Term,
    /// `DEFAULT UNSET`: columns the object leaves out are left alone (by default they are
    /// set to null).
    pub default_unset: bool,
}

/// What an assignment does with its value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AssignOp {
    /// `c = t` (or, with an element key, `c[k] = t`).
    Set,
    /// `c = c + t`: append to a list, add to a set or a map.
    Add,
    /// `c = t + c`: prepend to a list.
    Prepend,
    /// `c = c - t`: remove from a list, a set or (keys) a map.
    Remove,
}

/// One assignment in an `UPDATE`'s `SET`: `c = t`, `c[k] = t`, `c = c + t`, `c = t + c`
/// or `c = c - t`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Assignment {
    /// The column set.
    pub column: Ident,
    /// `c[k] = …`: the element (list index or map key).
    pub element: Option<Term>,
    /// `c.field = …`: a field of a non-frozen user-defined type.
    pub field: Option<Ident>,
    /// What to do.
    pub op: AssignOp,
    /// The value.
    pub value: Term,
}

/// One column a `DELETE` names: the whole column, or one element `c[k]`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct DeletedColumn {
    /// The column.
    pub column: Ident,
    /// `c[k]`: the list index or map key (or set element).
    pub element: Option<Term>,
    /// `c.field`: a field of a non-frozen user-defined type.
    pub field: Option<Ident>,
}

/// `UPDATE t [USING …] SET … WHERE …`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct UpdateStatement {
    /// The table written.
    pub table: QualifiedName,
    /// `USING` attributes.
    pub using: Using,
    /// The assignments, in order (never empty).
    pub assignments: Vec<Assignment>,
    /// The `WHERE` relations (never empty).
    pub where_clause: Vec<Relation>,
    /// `IF EXISTS` or `IF cond AND …`.
    pub conditions: Option<Conditions>,
    /// Every bind marker of the statement, in textual order.
    pub bind_markers: Vec<BindMarker>,
}

/// `DELETE [cols] FROM t [USING TIMESTAMP …] WHERE …`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct DeleteStatement {
    /// The columns (or elements) deleted; empty deletes whole rows.
    pub columns: Vec<DeletedColumn>,
    /// The table written.
    pub table: QualifiedName,
    /// `USING TIMESTAMP`.
    pub timestamp: Option<IntValue>,
    /// The `WHERE` relations (never empty).
    pub where_clause: Vec<Relation>,
    /// `IF EXISTS` or `IF cond AND …`.
    pub conditions: Option<Conditions>,
    /// Every bind marker of the statement, in textual order.
    pub bind_markers: Vec<BindMarker>,
}

/// The statements a `BATCH` may hold.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum ModificationStatement {
    /// `INSERT`.
    Insert(InsertStatement),
    /// `UPDATE`.
    Update(UpdateStatement),
    /// `DELETE`.
    Delete(DeleteStatement),
}

impl ModificationStatement {
    /// The bind markers of this statement (numbered within the whole batch).
    pub fn bind_markers(&self) -> &[BindMarker] {
        match self {
            ModificationStatement::Insert(s) => &s.bind_markers,
            ModificationStatement::Update(s) => &s.bind_markers,
            ModificationStatement::Delete(s) => &s.bind_markers,
        }
    }

    /// The table written.
    pub fn table(&self) -> &QualifiedName {
        match self {
            ModificationStatement::Insert(s) => &s.table,
            ModificationStatement::Update(s) => &s.table,
            ModificationStatement::Delete(s) => &s.table,
        }
    }

    /// Its `IF …`, if it has one (a lightweight transaction).
    pub fn conditions(&self) -> Option<&Conditions> {
        match self {
            ModificationStatement::Insert(s) => s.conditions.as_ref(),
            ModificationStatement::Update(s) => s.conditions.as_ref(),
            ModificationStatement::Delete(s) => s.conditions.as_ref(),
        }
    }
}

/// `LOGGED` (the default), `UNLOGGED` or `COUNTER`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum BatchKind {
    /// `BEGIN BATCH`.
    #[default]
    Logged,
    /// `BEGIN UNLOGGED BATCH`.
    Unlogged,
    /// `BEGIN COUNTER BATCH`: counter updates (and deletions of counter tables) only.
    Counter,
}

/// `BEGIN [UNLOGGED] BATCH [USING TIMESTAMP n] stmt; … APPLY BATCH`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct BatchStatement {
    /// Logged or unlogged.
    pub kind: BatchKind,
    /// `USING TIMESTAMP` for every statement of the batch.
    pub timestamp: Option<IntValue>,
    /// The statements, in order (possibly empty).
    pub statements: Vec<ModificationStatement>,
    /// Every bind marker of the batch, in textual order.
    pub bind_markers: Vec<BindMarker>,
}

/// The value of a `WITH name = value` property.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum PropertyValue {
    /// A constant (an unquoted word such as `ALL` is kept as a [`Literal::String`]).
    Constant(Literal),
    /// A map literal `{'k': v, …}`; keys and values are kept as strings (`3` becomes
    /// `"3"`, `true` becomes `"true"`), in the order written, as Cassandra does for
    /// `replication`, `compaction`, `caching` and friends.
    Map(Vec<(String, String)>),
}

/// `name = value` in a `WITH` clause. Any name parses; the executor validates.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Property {
    /// The property's name (lowercased unless quoted).
    pub name: Ident,
    /// Its value.
    pub value: PropertyValue,
}

/// Finds a property by name.
pub fn find_property<'p>(properties: &'p [Property], name: &str) -> Option<&'p PropertyValue> {
    properties
        .iter()
        .find(|p| p.name.as_str() == name)
        .map(|p| &p.value)
}

/// `USE keyspace`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct UseStatement {
    /// The keyspace.
    pub keyspace: Ident,
}

/// `CREATE KEYSPACE [IF NOT EXISTS] ks WITH …`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct CreateKeyspaceStatement {
    /// The keyspace.
    pub name: Ident,
    /// `IF NOT EXISTS`.
    pub if_not_exists: bool,
    /// `replication`, `durable_writes`, … (never empty).
    pub properties: Vec<Property>,
}

/// `ALTER KEYSPACE ks WITH …`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct AlterKeyspaceStatement {
    /// The keyspace.
    pub name: Ident,
    /// The properties changed (never empty).
    pub properties: Vec<Property>,
}

/// `DROP KEYSPACE [IF EXISTS] ks`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct DropKeyspaceStatement {
    /// The keyspace.
    pub name: Ident,
    /// `IF EXISTS`.
    pub if_exists: bool,
}

/// `name type [STATIC]` in `CREATE TABLE` or `ALTER TABLE … ADD`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ColumnDefinition {
    /// The column.
    pub name: Ident,
    /// Its type (`bigint` for a counter).
    pub ty: DataType,
    /// `STATIC`.
    pub is_static: bool,
    /// Whether the type is `counter` (its values are `bigint`s; see `mosaic_rows::counter`).
    pub counter: bool,
}

/// The primary key, however it was written (`col type PRIMARY KEY`, `PRIMARY KEY (a, b)`
/// or `PRIMARY KEY ((a, b), c)`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct PrimaryKey {
    /// The partition key columns (never empty).
    pub partition_key: Vec<Ident>,
    /// The clustering columns, in order.
    pub clustering_columns: Vec<Ident>,
}

/// `CREATE TABLE [IF NOT EXISTS] [ks.]t (…) [WITH …]`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct CreateTableStatement {
    /// The table.
    pub name: QualifiedName,
    /// `IF NOT EXISTS`.
    pub if_not_exists: bool,
    /// The columns, in the order defined.
    pub columns: Vec<ColumnDefinition>,
    /// The primary key (the parser guarantees exactly one was declared; the executor checks
    /// that its columns exist).
    pub primary_key: PrimaryKey,
    /// `WITH CLUSTERING ORDER BY (…)`.
    pub clustering_order: Vec<(Ident, Order)>,
    /// Every other `WITH` property, in order (including Mosaic's own, such as `layout`).
    pub properties: Vec<Property>,
}

/// What an `ALTER TABLE` changes.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum AlterTableOperation {
    /// `ADD c type [, …]` or `ADD (c type, …)`.
    Add(Vec<ColumnDefinition>),
    /// `DROP c` or `DROP (c, …)`.
    Drop(Vec<Ident>),
    /// `RENAME a TO b [AND c TO d …]`.
    Rename(Vec<(Ident, Ident)>),
    /// `WITH property = value [AND …]`.
    With(Vec<Property>),
}

/// `ALTER TABLE [ks.]t …`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct AlterTableStatement {
    /// The table.
    pub name: QualifiedName,
    /// The change.
    pub operation: AlterTableOperation,
}

/// `DROP TABLE [IF EXISTS] [ks.]t`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct DropTableStatement {
    /// The table.
    pub name: QualifiedName,
    /// `IF EXISTS`.
    pub if_exists: bool,
}

/// `TRUNCATE [TABLE] [ks.]t`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TruncateStatement {
    /// The table.
    pub name: QualifiedName,
}

/// One CQL statement.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Statement {
    /// `USE`.
    Use(UseStatement),
    /// `CREATE KEYSPACE`.
    CreateKeyspace(CreateKeyspaceStatement),
    /// `ALTER KEYSPACE`.
    AlterKeyspace(AlterKeyspaceStatement),
    /// `DROP KEYSPACE`.
    DropKeyspace(DropKeyspaceStatement),
    /// `CREATE TABLE`.
    CreateTable(CreateTableStatement),
    /// `ALTER TABLE`.
    AlterTable(AlterTableStatement),
    /// `DROP TABLE`.
    DropTable(DropTableStatement),
    /// `TRUNCATE`.
    Truncate(TruncateStatement),
    /// `CREATE TYPE`.
    CreateType(CreateTypeStatement),
    /// `ALTER TYPE`.
    AlterType(AlterTypeStatement),
    /// `DROP TYPE`.
    DropType(DropTypeStatement),
    /// `CREATE [CUSTOM] INDEX`.
    CreateIndex(CreateIndexStatement),
    /// `DROP INDEX`.
    DropIndex(DropIndexStatement),
    /// `INSERT`.
    Insert(InsertStatement),
    /// `UPDATE`.
    Update(UpdateStatement),
    /// `DELETE`.
    Delete(DeleteStatement),
    /// `SELECT`.
    Select(SelectStatement),
    /// `BATCH`.
    Batch(BatchStatement),
    /// `DESCRIBE`.
    Describe(DescribeStatement),
    /// Roles and permissions.
    Auth(AuthStatement),
}

impl Statement {
    /// The statement's bind markers in textual order: their count and names are what a
    /// PREPARE response describes. Statements without values have none.
    pub fn bind_markers(&self) -> &[BindMarker] {
        match self {
            Statement::Insert(s) => &s.bind_markers,
            Statement::Update(s) => &s.bind_markers,
            Statement::Delete(s) => &s.bind_markers,
            Statement::Select(s) => &s.bind_markers,
            Statement::Batch(s) => &s.bind_markers,
            Statement::Use(_)
            | Statement::CreateKeyspace(_)
            | Statement::AlterKeyspace(_)
            | Statement::DropKeyspace(_)
            | Statement::CreateTable(_)
            | Statement::AlterTable(_)
            | Statement::DropTable(_)
            | Statement::Truncate(_)
            | Statement::CreateType(_)
            | Statement::AlterType(_)
            | Statement::DropType(_)
            | Statement::CreateIndex(_)
            | Statement::DropIndex(_)
            | Statement::Describe(_)
            | Statement::Auth(_) => &[],
        }
    }

    /// Whether the statement is a lightweight transaction: a modification with `IF …`, or a
    /// batch holding one.
    pub fn has_conditions(&self) -> bool {
        match self {
            Statement::Insert(s) => s.conditions.is_some(),
            Statement::Update(s) => s.conditions.is_some(),
            Statement::Delete(s) => s.conditions.is_some(),
            Statement::Batch(b) => b.statements.iter().any(|s| s.conditions().is_some()),
            _ => false,
        }
    }

    /// Whether the statement changes the schema (the coordinator then waits for schema
    /// agreement and drivers refresh their metadata).
    pub fn is_schema_change(&self) -> bool {
        matches!(
            self,
            Statement::CreateKeyspace(_)
                | Statement::AlterKeyspace(_)
                | Statement::DropKeyspace(_)
                | Statement::CreateTable(_)
                | Statement::AlterTable(_)
                | Statement::DropTable(_)
                | Statement::CreateType(_)
                | Statement::AlterType(_)
                | Statement::DropType(_)
        )
    }
}
