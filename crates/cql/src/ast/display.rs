//! CQL text for every node of the tree: `parse(display(tree)) == tree`.
//!
//! Identifiers are quoted only when they must be (not lowercase-identifier-shaped, or a
//! reserved keyword); strings always print with single quotes; `USING` attributes print in
//! the order that keeps bind-marker indexes stable.

use std::fmt::{self, Display, Formatter, Write};

use super::*;
use crate::parse::keywords::is_reserved;

/// Whether `name` reads back as itself without quotes: `[a-z][a-z0-9_]*` and not reserved.
fn is_bare_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some('a'..='z'))
        && chars.all(|c| matches!(c, 'a'..='z' | '0'..='9' | '_'))
        && !is_reserved(name)
}

fn write_quoted(f: &mut Formatter<'_>, text: &str, quote: char) -> fmt::Result {
    f.write_char(quote)?;
    for c in text.chars() {
        if c == quote {
            f.write_char(quote)?;
        }
        f.write_char(c)?;
    }
    f.write_char(quote)
}

/// Writes `items` separated by `sep`.
pub(super) fn join<T: Display>(f: &mut Formatter<'_>, items: &[T], sep: &str) -> fmt::Result {
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            f.write_str(sep)?;
        }
        write!(f, "{item}")?;
    }
    Ok(())
}

impl Display for Ident {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        if is_bare_identifier(&self.0) {
            f.write_str(&self.0)
        } else {
            write_quoted(f, &self.0, '"')
        }
    }
}

/// A function name in call position, where `token` (reserved) still reads as a call.
/// `special` names would read back as dedicated selector forms, so they get quotes.
struct FunctionName<'a> {
    name: &'a Ident,
    special: bool,
}

impl Display for FunctionName<'_> {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        let name = self.name.as_str();
        let shaped = {
            let mut chars = name.chars();
            matches!(chars.next(), Some('a'..='z'))
                && chars.all(|c| matches!(c, 'a'..='z' | '0'..='9' | '_'))
        };
        if shaped && !self.special && (name == "token" || !is_reserved(name)) {
            f.write_str(name)
        } else {
            write_quoted(f, name, '"')
        }
    }
}

impl Display for QualifiedName {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        if let Some(ks) = &self.keyspace {
            write!(f, "{ks}.")?;
        }
        write!(f, "{}", self.name)
    }
}

impl Display for Literal {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            Literal::String(s) => write_quoted(f, s, '\''),
            Literal::Integer(text) | Literal::Float(text) | Literal::Duration(text) => {
                f.write_str(text)
            }
            Literal::NaN => f.write_str("NaN"),
            Literal::Infinity => f.write_str("Infinity"),
            Literal::NegInfinity => f.write_str("-Infinity"),
            Literal::Uuid(u) => {
                let h = format!("{u:032x}");
                let part = |a: usize, b: usize| h.get(a..b).unwrap_or("");
                write!(
                    f,
                    "{}-{}-{}-{}-{}",
                    part(0, 8),
                    part(8, 12),
                    part(12, 16),
                    part(16, 20),
                    part(20, 32)
                )
            }
            Literal::Blob(bytes) => {
                f.write_str("0x")?;
                for b in bytes {
                    write!(f, "{b:02x}")?;
                }
                Ok(())
            }
            Literal::Boolean(b) => write!(f, "{b}"),
            Literal::Null => f.write_str("NULL"),
        }
    }
}

impl Display for BindMarker {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match &self.name {
            Some(name) => write!(f, ":{name}"),
            None => f.write_str("?"),
        }
    }
}

impl Display for Term {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            Term::Literal(l) => write!(f, "{l}"),
            Term::Bind(b) => write!(f, "{b}"),
            Term::Call { name, args } => {
                write!(
                    f,
                    "{}(",
                    FunctionName {
                        name,
                        special: false
                    }
                )?;
                join(f, args, ", ")?;
                f.write_str(")")
            }
            Term::Tuple(items) => {
                f.write_str("(")?;
                join(f, items, ", ")?;
                f.write_str(")")
            }
            Term::List(items) => {
                f.write_str("[")?;
                join(f, items, ", ")?;
                f.write_str("]")
            }
            Term::Set(items) => {
                f.write_str("{")?;
                join(f, items, ", ")?;
                f.write_str("}")
            }
            Term::Map(entries) => write_entries(f, entries),
            Term::Udt(entries) => write_entries(f, entries),
        }
    }
}

/// `{k: v, …}`: a map or user-defined type literal.
fn write_entries<K: Display>(f: &mut Formatter<'_>, entries: &[(K, Term)]) -> fmt::Result {
    f.write_str("{")?;
    for (i, (k, v)) in entries.iter().enumerate() {
        if i > 0 {
            f.write_str(", ")?;
        }
        write!(f, "{k}: {v}")?;
    }
    f.write_str("}")
}

impl Display for IntValue {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            IntValue::Literal(n) => write!(f, "{n}"),
            IntValue::Bind(b) => write!(f, "{b}"),
        }
    }
}

impl Display for Operator {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Operator::Eq => "=",
            Operator::Ne => "!=",
            Operator::Lt => "<",
            Operator::Le => "<=",
            Operator::Gt => ">",
            Operator::Ge => ">=",
        })
    }
}

impl Display for InValues {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            InValues::List(items) => {
                f.write_str("(")?;
                join(f, items, ", ")?;
                f.write_str(")")
            }
            InValues::Bind(b) => write!(f, "{b}"),
        }
    }
}

struct Columns<'a>(&'a [Ident]);

impl Display for Columns<'_> {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        f.write_str("(")?;
        join(f, self.0, ", ")?;
        f.write_str(")")
    }
}

impl Display for Relation {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            Relation::Compare { column, op, value } => write!(f, "{column} {op} {value}"),
            Relation::Element {
                column,
                key,
                op,
                value,
            } => write!(f, "{column}[{key}] {op} {value}"),
            Relation::In { column, values } => write!(f, "{column} IN {values}"),
            Relation::MultiColumn { columns, op, value } => {
                write!(f, "{} {op} {value}", Columns(columns))
            }
            Relation::MultiColumnIn { columns, values } => {
                write!(f, "{} IN {values}", Columns(columns))
            }
            Relation::Token { columns, op, value } => {
                write!(f, "token{} {op} {value}", Columns(columns))
            }
            Relation::Contains { column, key, value } => {
                let key = if *key { " KEY" } else { "" };
                write!(f, "{column} CONTAINS{key} {value}")
            }
        }
    }
}

impl Display for Order {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Order::Asc => "ASC",
            Order::Desc => "DESC",
        })
    }
}

struct Ordering<'a>(&'a [(Ident, Order)]);

impl Display for Ordering<'_> {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        for (i, (column, order)) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{column} {order}")?;
        }
        Ok(())
    }
}

impl Display for SelectorExpr {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            SelectorExpr::Column(c) => write!(f, "{c}"),
            SelectorExpr::Field(c, path) => {
                write!(f, "{c}")?;
                for field in path {
                    write!(f, ".{field}")?;
                }
                Ok(())
            }
            SelectorExpr::Element(c, e) => write!(f, "{c}[{e}]"),
            SelectorExpr::Slice(c, from, to) => {
                let bound = |t: &Option<Term>| t.as_ref().map(Term::to_string).unwrap_or_default();
                write!(f, "{c}[{}..{}]", bound(from), bound(to))
            }
            SelectorExpr::Value(t) => write!(f, "{t}"),
            SelectorExpr::CountRows => f.write_str("count(*)"),
            SelectorExpr::WriteTime(c) => write!(f, "writetime({c})"),
            SelectorExpr::Ttl(c) => write!(f, "ttl({c})"),
            SelectorExpr::Cast { expr, ty } => write!(f, "cast({expr} AS {ty})"),
            SelectorExpr::Call { name, args } => {
                // `writetime(…)`, `ttl(…)`, `cast(…)` and `count(1)` read back as their
                // dedicated forms, so a generic call with those names needs quotes.
                let special = matches!(name.as_str(), "writetime" | "ttl" | "cast")
                    || (name.as_str() == "count"
                        && matches!(args.as_slice(),
                            [SelectorExpr::Value(Term::Literal(Literal::Integer(n)))] if n == "1"));
                write!(f, "{}(", FunctionName { name, special })?;
                join(f, args, ", ")?;
                f.write_str(")")
            }
        }
    }
}

impl Display for Selector {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.expr)?;
        if let Some(alias) = &self.alias {
            write!(f, " AS {alias}")?;
        }
        Ok(())
    }
}

impl Display for Selection {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            Selection::Wildcard => f.write_str("*"),
            Selection::Selectors(list) => join(f, list, ", "),
        }
    }
}

fn write_where(f: &mut Formatter<'_>, relations: &[Relation]) -> fmt::Result {
    if !relations.is_empty() {
        f.write_str(" WHERE ")?;
        join(f, relations, " AND ")?;
    }
    Ok(())
}

impl Display for SelectStatement {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        f.write_str("SELECT ")?;
        if self.json {
            f.write_str("JSON ")?;
        }
        if self.distinct {
            f.write_str("DISTINCT ")?;
        }
        write!(f, "{} FROM {}", self.selection, self.table)?;
        write_where(f, &self.where_clause)?;
        if !self.group_by.is_empty() {
            f.write_str(" GROUP BY ")?;
            join(f, &self.group_by, ", ")?;
        }
        if !self.order_by.is_empty() {
            write!(f, " ORDER BY {}", Ordering(&self.order_by))?;
        }
        if let Some(n) = &self.per_partition_limit {
            write!(f, " PER PARTITION LIMIT {n}")?;
        }
        if let Some(n) = &self.limit {
            write!(f, " LIMIT {n}")?;
        }
        if self.allow_filtering {
            f.write_str(" ALLOW FILTERING")?;
        }
        Ok(())
    }
}

impl Display for Using {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match (&self.ttl, &self.timestamp) {
            (None, None) => Ok(()),
            (Some(ttl), None) => write!(f, " USING TTL {ttl}"),
            (None, Some(ts)) => write!(f, " USING TIMESTAMP {ts}"),
            // Keep bind-marker order: whichever marker came first is printed first.
            (Some(ttl @ IntValue::Bind(a)), Some(ts @ IntValue::Bind(b))) if b.index < a.index => {
                write!(f, " USING TIMESTAMP {ts} AND TTL {ttl}")
            }
            (Some(ttl), Some(ts)) => write!(f, " USING TTL {ttl} AND TIMESTAMP {ts}"),
        }
    }
}

impl Display for InsertStatement {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        if let Some(json) = &self.json {
            write!(f, "INSERT INTO {} JSON {}", self.table, json.value)?;
            if json.default_unset {
                f.write_str(" DEFAULT UNSET")?;
            }
            write_conditions(f, &self.conditions)?;
            return write!(f, "{}", self.using);
        }
        write!(
            f,
            "INSERT INTO {} {} VALUES (",
            self.table,
            Columns(&self.columns)
        )?;
        join(f, &self.values, ", ")?;
        f.write_str(")")?;
        write_conditions(f, &self.conditions)?;
        write!(f, "{}", self.using)
    }
}

/// ` IF …` when there are conditions.
fn write_conditions(f: &mut Formatter<'_>, conditions: &Option<Conditions>) -> fmt::Result {
    match conditions {
        Some(c) => write!(f, " {c}"),
        None => Ok(()),
    }
}

impl Display for Assignment {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        let c = &self.column;
        let v = &self.value;
        if let Some(field) = &self.field {
            return write!(f, "{c}.{field} = {v}");
        }
        match (&self.element, self.op) {
            (Some(e), _) => write!(f, "{c}[{e}] = {v}"),
            (None, AssignOp::Set) => write!(f, "{c} = {v}"),
            (None, AssignOp::Add) => write!(f, "{c} = {c} + {v}"),
            (None, AssignOp::Prepend) => write!(f, "{c} = {v} + {c}"),
            (None, AssignOp::Remove) => write!(f, "{c} = {c} - {v}"),
        }
    }
}

impl Display for UpdateStatement {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write!(f, "UPDATE {}{} SET ", self.table, self.using)?;
        join(f, &self.assignments, ", ")?;
        write_where(f, &self.where_clause)?;
        write_conditions(f, &self.conditions)
    }
}

impl Display for DeletedColumn {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.column)?;
        if let Some(e) = &self.element {
            write!(f, "[{e}]")?;
        }
        if let Some(field) = &self.field {
            write!(f, ".{field}")?;
        }
        Ok(())
    }
}

impl Display for DeleteStatement {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        f.write_str("DELETE ")?;
        if !self.columns.is_empty() {
            join(f, &self.columns, ", ")?;
            f.write_str(" ")?;
        }
        write!(f, "FROM {}", self.table)?;
        if let Some(ts) = &self.timestamp {
            write!(f, " USING TIMESTAMP {ts}")?;
        }
        write_where(f, &self.where_clause)?;
        write_conditions(f, &self.conditions)
    }
}

impl Display for ModificationStatement {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            ModificationStatement::Insert(s) => write!(f, "{s}"),
            ModificationStatement::Update(s) => write!(f, "{s}"),
            ModificationStatement::Delete(s) => write!(f, "{s}"),
        }
    }
}

impl Display for BatchStatement {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        f.write_str("BEGIN ")?;
        match self.kind {
            BatchKind::Logged => {}
            BatchKind::Unlogged => f.write_str("UNLOGGED ")?,
            BatchKind::Counter => f.write_str("COUNTER ")?,
        }
        f.write_str("BATCH")?;
        if let Some(ts) = &self.timestamp {
            write!(f, " USING TIMESTAMP {ts}")?;
        }
        for s in &self.statements {
            write!(f, " {s};")?;
        }
        f.write_str(" APPLY BATCH")
    }
}

impl Display for PropertyValue {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            PropertyValue::Constant(l) => write!(f, "{l}"),
            PropertyValue::Map(entries) => {
                f.write_str("{")?;
                for (i, (k, v)) in entries.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write_quoted(f, k, '\'')?;
                    f.write_str(": ")?;
                    write_quoted(f, v, '\'')?;
                }
                f.write_str("}")
            }
        }
    }
}

impl Display for Property {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write!(f, "{} = {}", self.name, self.value)
    }
}

impl Display for ColumnDefinition {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        if self.counter {
            write!(f, "{} counter", self.name)?;
        } else {
            write!(f, "{} {}", self.name, self.ty)?;
        }
        if self.is_static {
            f.write_str(" STATIC")?;
        }
        Ok(())
    }
}

impl Display for PrimaryKey {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write!(f, "PRIMARY KEY ({}", Columns(&self.partition_key))?;
        for c in &self.clustering_columns {
            write!(f, ", {c}")?;
        }
        f.write_str(")")
    }
}

impl Display for CreateTableStatement {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        f.write_str("CREATE TABLE ")?;
        if self.if_not_exists {
            f.write_str("IF NOT EXISTS ")?;
        }
        write!(f, "{} (", self.name)?;
        for c in &self.columns {
            write!(f, "{c}, ")?;
        }
        write!(f, "{})", self.primary_key)?;
        let mut sep = " WITH ";
        if !self.clustering_order.is_empty() {
            write!(
                f,
                "{sep}CLUSTERING ORDER BY ({})",
                Ordering(&self.clustering_order)
            )?;
            sep = " AND ";
        }
        for p in &self.properties {
            write!(f, "{sep}{p}")?;
            sep = " AND ";
        }
        Ok(())
    }
}

impl Display for AlterTableStatement {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write!(f, "ALTER TABLE {} ", self.name)?;
        match &self.operation {
            AlterTableOperation::Add(columns) => {
                f.write_str("ADD (")?;
                join(f, columns, ", ")?;
                f.write_str(")")
            }
            AlterTableOperation::Drop(columns) => write!(f, "DROP {}", Columns(columns)),
            AlterTableOperation::Rename(pairs) => {
                f.write_str("RENAME ")?;
                for (i, (from, to)) in pairs.iter().enumerate() {
                    if i > 0 {
                        f.write_str(" AND ")?;
                    }
                    write!(f, "{from} TO {to}")?;
                }
                Ok(())
            }
            AlterTableOperation::With(properties) => {
                f.write_str("WITH ")?;
                join(f, properties, " AND ")
            }
        }
    }
}

impl Display for DescribeTarget {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            DescribeTarget::Cluster => f.write_str("CLUSTER"),
            DescribeTarget::Schema { full: true } => f.write_str("FULL SCHEMA"),
            DescribeTarget::Schema { full: false } => f.write_str("SCHEMA"),
            DescribeTarget::Keyspaces => f.write_str("KEYSPACES"),
            DescribeTarget::Keyspace { name, only } => {
                if *only {
                    f.write_str("ONLY ")?;
                }
                f.write_str("KEYSPACE")?;
                match name {
                    Some(name) => write!(f, " {name}"),
                    None => Ok(()),
                }
            }
            DescribeTarget::Tables => f.write_str("TABLES"),
            DescribeTarget::Table(name) => write!(f, "TABLE {name}"),
            DescribeTarget::Index(name) => write!(f, "INDEX {name}"),
            DescribeTarget::MaterializedView(name) => write!(f, "MATERIALIZED VIEW {name}"),
            DescribeTarget::Types => f.write_str("TYPES"),
            DescribeTarget::Type(name) => write!(f, "TYPE {name}"),
            DescribeTarget::Functions => f.write_str("FUNCTIONS"),
            DescribeTarget::Function(name) => write!(f, "FUNCTION {name}"),
            DescribeTarget::Aggregates => f.write_str("AGGREGATES"),
            DescribeTarget::Aggregate(name) => write!(f, "AGGREGATE {name}"),
            // A bare name that is one of DESCRIBE's own words reads back as that word, so
            // it is quoted.
            DescribeTarget::Generic(QualifiedName {
                keyspace: None,
                name,
            }) if crate::parse::keywords::is_describe_word(name.as_str()) => {
                write_quoted(f, name.as_str(), '"')
            }
            DescribeTarget::Generic(name) => write!(f, "{name}"),
        }
    }
}

impl Display for DescribeStatement {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write!(f, "DESCRIBE {}", self.target)?;
        if self.internals {
            f.write_str(" WITH INTERNALS")?;
        }
        Ok(())
    }
}

impl Display for Statement {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            Statement::Auth(s) => write!(f, "{s}"),
            Statement::Use(s) => write!(f, "USE {}", s.keyspace),
            Statement::CreateKeyspace(s) => {
                f.write_str("CREATE KEYSPACE ")?;
                if s.if_not_exists {
                    f.write_str("IF NOT EXISTS ")?;
                }
                write!(f, "{} WITH ", s.name)?;
                join(f, &s.properties, " AND ")
            }
            Statement::AlterKeyspace(s) => {
                write!(f, "ALTER KEYSPACE {} WITH ", s.name)?;
                join(f, &s.properties, " AND ")
            }
            Statement::DropKeyspace(s) => {
                f.write_str("DROP KEYSPACE ")?;
                if s.if_exists {
                    f.write_str("IF EXISTS ")?;
                }
                write!(f, "{}", s.name)
            }
            Statement::CreateTable(s) => write!(f, "{s}"),
            Statement::AlterTable(s) => write!(f, "{s}"),
            Statement::DropTable(s) => {
                f.write_str("DROP TABLE ")?;
                if s.if_exists {
                    f.write_str("IF EXISTS ")?;
                }
                write!(f, "{}", s.name)
            }
            Statement::Truncate(s) => write!(f, "TRUNCATE TABLE {}", s.name),
            Statement::CreateType(s) => {
                f.write_str("CREATE TYPE ")?;
                if s.if_not_exists {
                    f.write_str("IF NOT EXISTS ")?;
                }
                write!(f, "{} (", s.name)?;
                for (i, (name, ty)) in s.fields.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{name} {ty}")?;
                }
                f.write_str(")")
            }
            Statement::AlterType(s) => match &s.operation {
                AlterTypeOperation::Add(name, ty) => {
                    write!(f, "ALTER TYPE {} ADD {name} {ty}", s.name)
                }
                AlterTypeOperation::Rename(pairs) => {
                    write!(f, "ALTER TYPE {} RENAME ", s.name)?;
                    for (i, (a, b)) in pairs.iter().enumerate() {
                        if i > 0 {
                            f.write_str(" AND ")?;
                        }
                        write!(f, "{a} TO {b}")?;
                    }
                    Ok(())
                }
            },
            Statement::DropType(s) => {
                f.write_str("DROP TYPE ")?;
                if s.if_exists {
                    f.write_str("IF EXISTS ")?;
                }
                write!(f, "{}", s.name)
            }
            Statement::CreateIndex(s) => write!(f, "{s}"),
            Statement::DropIndex(s) => write!(f, "{s}"),
            Statement::Insert(s) => write!(f, "{s}"),
            Statement::Update(s) => write!(f, "{s}"),
            Statement::Delete(s) => write!(f, "{s}"),
            Statement::Select(s) => write!(f, "{s}"),
            Statement::Batch(s) => write!(f, "{s}"),
            Statement::Describe(s) => write!(f, "{s}"),
        }
    }
}
