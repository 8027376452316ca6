//! SELECTs on system tables: what drivers send, nothing more. A [`Plan`] is computed from
//! the statement alone (so PREPARE and EXECUTE agree on the columns), then run over the
//! table's rows: equality and `IN` filters on any column, the selected columns (with
//! aliases) or `count`, `DISTINCT` and `LIMIT`. Everything else is refused with Invalid
//! and a message naming what is not supported.

use bytes::Bytes;
use mosaic_types::CqlType;

use super::cell::{self, Cell};
use super::rows::Row;
use super::tables::{self, TableDef};
use crate::ast::{
    BindMarker, InValues, IntValue, Literal, Operator, Relation, SelectStatement, Selection,
    SelectorExpr, Term,
};
use crate::frame::{ColumnSpec, ColumnType, ErrorKind, ErrorResponse, Rows, RowsMetadata};

fn invalid(message: impl Into<String>) -> ErrorResponse {
    ErrorResponse::new(ErrorKind::Invalid, message)
}

/// What one result column computes.
#[derive(Clone, Debug)]
enum Expr {
    /// A column of the table, by index.
    Column(usize),
    /// `count(*)`.
    CountRows,
    /// `count(column)`: the rows where it is not null.
    CountColumn(usize),
}

/// A value a filter compares with.
#[derive(Clone, Debug)]
enum Target {
    /// A constant, serialized as the column's type.
    Constant(Bytes),
    /// The value bound to a marker, by marker index.
    Bound(usize),
}

/// The values a column may take for a row to be returned.
#[derive(Clone, Debug)]
enum Accept {
    /// `= t` or `IN (t, …)`.
    Any(Vec<Target>),
    /// `IN ?`: a bound list, by marker index.
    BoundList(usize),
}

#[derive(Clone, Debug)]
struct Filter {
    column: usize,
    accept: Accept,
}

#[derive(Clone, Copy, Debug)]
enum Limit {
    Constant(i64),
    Bound(usize),
}

/// A SELECT on a system table, resolved against the table's definition.
#[derive(Debug)]
pub(crate) struct Plan {
    /// The table read.
    pub(crate) table: &'static TableDef,
    /// The result columns.
    pub(crate) columns: Vec<ColumnSpec>,
    /// The bind markers, by index.
    pub(crate) binds: Vec<ColumnSpec>,
    exprs: Vec<Expr>,
    filters: Vec<Filter>,
    limit: Option<Limit>,
    distinct: bool,
}

impl Plan {
    /// Resolves `stmt`; errors are what the client sees at PREPARE and at execution.
    pub(crate) fn new(stmt: &SelectStatement) -> Result<Plan, ErrorResponse> {
        let name = stmt.table.name.as_str();
        let keyspace = stmt.table.keyspace.as_ref().ok_or_else(|| {
            invalid("No keyspace has been specified. USE a keyspace, or explicitly specify keyspace.tablename")
        })?;
        let table = tables::find(keyspace.as_str(), name)
            .ok_or_else(|| invalid(format!("unconfigured table {name}")))?;
        refuse_unsupported_clauses(stmt)?;
        let mut b = PlanBuilder {
            table,
            types: column_types(table)?,
            binds: vec![None; stmt.bind_markers.len()],
        };
        let (columns, exprs) = b.selection(&stmt.selection)?;
        let filters = stmt
            .where_clause
            .iter()
            .map(|r| b.filter(r))
            .collect::<Result<Vec<_>, _>>()?;
        let limit = match &stmt.limit {
            None => None,
            Some(IntValue::Literal(n)) => Some(Limit::Constant(*n)),
            Some(IntValue::Bind(m)) => {
                b.bind(m, "[limit]", ColumnType::Native(CqlType::Int))?;
                Some(Limit::Bound(m.index))
            }
        };
        let binds = b
            .binds
            .into_iter()
            .enumerate()
            .map(|(i, s)| {
                s.ok_or_else(|| {
                    invalid(format!(
                        "Bind marker {i} is in a place system tables don't take values"
                    ))
                })
            })
            .collect::<Result<_, _>>()?;
        Ok(Plan {
            table,
            columns,
            binds,
            exprs,
            filters,
            limit,
            distinct: stmt.distinct,
        })
    }

    /// Runs the plan over every row of the table (in order) with the bound `values`.
    pub(crate) fn execute(
        &self,
        rows: Vec<Row>,
        values: &[Option<Bytes>],
    ) -> Result<Rows, ErrorResponse> {
        let filters = self
            .filters
            .iter()
            .map(|f| self.accepted(f, values).map(|set| (f.column, set)))
            .collect::<Result<Vec<_>, _>>()?;
        let limit = self.limit_value(values)?;
        let matching: Vec<Row> = rows
            .into_iter()
            .filter(|row| {
                filters.iter().all(|(column, accepted)| {
                    row.get(*column)
                        .and_then(Option::as_ref)
                        .is_some_and(|cell| accepted.iter().any(|a| a == cell))
                })
            })
            .collect();
        let aggregate = self
            .exprs
            .iter()
            .any(|e| matches!(e, Expr::CountRows | Expr::CountColumn(_)));
        let mut out: Vec<Row> = if aggregate {
            vec![self.aggregate_row(&matching)]
        } else {
            matching.iter().map(|r| self.output_row(r)).collect()
        };
        if self.distinct {
            let mut seen = std::collections::HashSet::new();
            out.retain(|r| seen.insert(r.clone()));
        }
        if let Some(limit) = limit {
            out.truncate(limit);
        }
        Ok(Rows {
            metadata: RowsMetadata::new(self.columns.clone()),
            rows: out,
        })
    }

    /// The LIMIT, as given or bound; strictly positive.
    fn limit_value(&self, values: &[Option<Bytes>]) -> Result<Option<usize>, ErrorResponse> {
        let Some(limit) = self.limit else {
            return Ok(None);
        };
        let n = match limit {
            Limit::Constant(n) => n,
            Limit::Bound(i) => match values.get(i).and_then(Option::as_ref) {
                Some(b) => i64::from(i32::from_be_bytes(
                    b.as_ref()
                        .try_into()
                        .map_err(|_| invalid("Invalid LIMIT value: expected an int"))?,
                )),
                None => return Err(invalid("Invalid null value of limit")),
            },
        };
        if n <= 0 {
            return Err(invalid("LIMIT must be strictly positive"));
        }
        Ok(Some(usize::try_from(n).unwrap_or(usize::MAX)))
    }

    /// The one row of a query with counts; plain columns take the first matching row's
    /// values, as Cassandra 3.x does.
    fn aggregate_row(&self, matching: &[Row]) -> Row {
        let first = matching.first();
        self.exprs
            .iter()
            .map(|e| match e {
                Expr::Column(i) => first.and_then(|r| r.get(*i).cloned().flatten()),
                Expr::CountRows => count(matching.len()),
                Expr::CountColumn(i) => count(
                    matching
                        .iter()
                        .filter(|r| r.get(*i).is_some_and(Option::is_some))
                        .count(),
                ),
            })
            .collect()
    }

    /// One matching row's selected columns.
    fn output_row(&self, r: &Row) -> Row {
        self.exprs
            .iter()
            .map(|e| match e {
                Expr::Column(i) => r.get(*i).cloned().flatten(),
                // Not reached: aggregates take the other branch.
                Expr::CountRows | Expr::CountColumn(_) => None,
            })
            .collect()
    }

    /// The serialized values a filter accepts.
    fn accepted(&self, f: &Filter, values: &[Option<Bytes>]) -> Result<Vec<Bytes>, ErrorResponse> {
        let column = self.table.columns.get(f.column).map_or("", |c| c.name);
        let bound = |i: usize| -> Result<&Bytes, ErrorResponse> {
            values.get(i).and_then(Option::as_ref).ok_or_else(|| {
                invalid(format!(
                    "Invalid null value in condition for column {column}"
                ))
            })
        };
        match &f.accept {
            Accept::Any(targets) => targets
                .iter()
                .map(|t| match t {
                    Target::Constant(b) => Ok(b.clone()),
                    Target::Bound(i) => bound(*i).cloned(),
                })
                .collect(),
            Accept::BoundList(i) => {
                let list = bound(*i)?;
                let elements = cell::decode_elements(list).ok_or_else(|| {
                    invalid(format!("Invalid list value for IN restriction on {column}"))
                })?;
                Ok(elements.into_iter().flatten().collect())
            }
        }
    }
}

fn count(n: usize) -> Cell {
    Some(Bytes::copy_from_slice(
        &i64::try_from(n).unwrap_or(i64::MAX).to_be_bytes(),
    ))
}

/// The value a term stands for in a condition on `column`.
/// Refuses what the system tables' small query engine does not do.
fn refuse_unsupported_clauses(stmt: &SelectStatement) -> Result<(), ErrorResponse> {
    if !stmt.group_by.is_empty() {
        return Err(invalid("GROUP BY is not supported on system tables"));
    }
    if !stmt.order_by.is_empty() {
        return Err(invalid("ORDER BY is not supported on system tables"));
    }
    if stmt.per_partition_limit.is_some() {
        return Err(invalid(
            "PER PARTITION LIMIT is not supported on system tables",
        ));
    }
    Ok(())
}

/// The protocol types of `table`'s columns.
fn column_types(table: &TableDef) -> Result<Vec<ColumnType>, ErrorResponse> {
    table
        .columns
        .iter()
        .map(|c| {
            tables::parse_type(c.ty).ok_or_else(|| {
                // The table definitions are checked by a test; this is a bug.
                ErrorResponse::new(
                    ErrorKind::Server,
                    format!("system column {}.{} has no type", table.name, c.name),
                )
            })
        })
        .collect()
}

/// What [`Plan::new`] accumulates while it resolves a statement.
struct PlanBuilder {
    table: &'static TableDef,
    types: Vec<ColumnType>,
    /// The bind markers' specs, by index, as they are met.
    binds: Vec<Option<ColumnSpec>>,
}

impl PlanBuilder {
    fn spec(&self, name: &str, ty: ColumnType) -> ColumnSpec {
        ColumnSpec::new(self.table.keyspace, self.table.name, name, ty)
    }

    fn resolve(&self, name: &str) -> Result<(usize, ColumnType), ErrorResponse> {
        self.table
            .column_index(name)
            .and_then(|i| Some((i, self.types.get(i)?.clone())))
            .ok_or_else(|| invalid(format!("Undefined column name {name}")))
    }

    fn bind(
        &mut self,
        m: &BindMarker,
        default_name: &str,
        ty: ColumnType,
    ) -> Result<(), ErrorResponse> {
        let name = m.name.as_ref().map_or(default_name, |n| n.as_str());
        let spec = self.spec(name, ty);
        let slot = self
            .binds
            .get_mut(m.index)
            .ok_or_else(|| invalid(format!("bind marker {} out of range", m.index)))?;
        *slot = Some(spec);
        Ok(())
    }

    /// The result columns and how each is computed.
    fn selection(
        &self,
        selection: &Selection,
    ) -> Result<(Vec<ColumnSpec>, Vec<Expr>), ErrorResponse> {
        let mut columns = Vec::new();
        let mut exprs = Vec::new();
        match selection {
            Selection::Wildcard => {
                for (i, (c, ty)) in self.table.columns.iter().zip(&self.types).enumerate() {
                    columns.push(self.spec(c.name, ty.clone()));
                    exprs.push(Expr::Column(i));
                }
            }
            Selection::Selectors(selectors) => {
                for s in selectors {
                    let alias = s.alias.as_ref().map(|a| a.as_str());
                    let (default_name, ty, expr) = self.selector(&s.expr)?;
                    columns.push(self.spec(alias.unwrap_or(&default_name), ty));
                    exprs.push(expr);
                }
            }
        }
        Ok((columns, exprs))
    }

    /// One selector: a column, `count(*)` or `count(column)`.
    fn selector(&self, expr: &SelectorExpr) -> Result<(String, ColumnType, Expr), ErrorResponse> {
        match expr {
            SelectorExpr::Column(c) => {
                let (i, ty) = self.resolve(c.as_str())?;
                Ok((c.as_str().to_owned(), ty, Expr::Column(i)))
            }
            SelectorExpr::CountRows => Ok((
                "count".to_owned(),
                ColumnType::Native(CqlType::BigInt),
                Expr::CountRows,
            )),
            SelectorExpr::Call { name, args } if name.as_str() == "count" => {
                match args.as_slice() {
                    [SelectorExpr::Column(c)] => {
                        let (i, _) = self.resolve(c.as_str())?;
                        Ok((
                            format!("system.count({})", c.as_str()),
                            ColumnType::Native(CqlType::BigInt),
                            Expr::CountColumn(i),
                        ))
                    }
                    _ => Err(invalid(format!("{expr} is not supported on system tables"))),
                }
            }
            other => Err(invalid(format!(
                "Selecting {other} is not supported on system tables"
            ))),
        }
    }

    /// One WHERE relation: `=` or `IN` on a column.
    fn filter(&mut self, relation: &Relation) -> Result<Filter, ErrorResponse> {
        match relation {
            Relation::Compare {
                column,
                op: Operator::Eq,
                value,
            } => {
                let (i, ty) = self.resolve(column.as_str())?;
                let target = target(value, column.as_str(), &ty, &mut |m, n, t| {
                    self.bind(m, n, t)
                })?;
                Ok(Filter {
                    column: i,
                    accept: Accept::Any(vec![target]),
                })
            }
            Relation::In { column, values } => {
                let (i, ty) = self.resolve(column.as_str())?;
                let accept = match values {
                    InValues::List(terms) => Accept::Any(
                        terms
                            .iter()
                            .map(|t| {
                                target(t, column.as_str(), &ty, &mut |m, n, ty| self.bind(m, n, ty))
                            })
                            .collect::<Result<_, _>>()?,
                    ),
                    InValues::Bind(m) => {
                        self.bind(
                            m,
                            &format!("in({})", column.as_str()),
                            ColumnType::List(Box::new(ty.clone())),
                        )?;
                        Accept::BoundList(m.index)
                    }
                };
                Ok(Filter { column: i, accept })
            }
            other => Err(invalid(format!(
                "Unsupported restriction on a system table: {other} (only = and IN are)"
            ))),
        }
    }
}

fn target(
    term: &Term,
    column: &str,
    ty: &ColumnType,
    bind: &mut impl FnMut(&BindMarker, &str, ColumnType) -> Result<(), ErrorResponse>,
) -> Result<Target, ErrorResponse> {
    match term {
        Term::Bind(m) => {
            bind(m, column, ty.clone())?;
            Ok(Target::Bound(m.index))
        }
        Term::Literal(Literal::Null) => Err(invalid(format!(
            "Invalid null value in condition for column {column}"
        ))),
        Term::Literal(lit) => constant(lit, ty).map(Target::Constant).ok_or_else(|| {
            invalid(format!(
                "Invalid constant ({lit}) for \"{column}\" of type {}",
                type_name(ty)
            ))
        }),
        Term::List(items) => match ty {
            ColumnType::List(elem) => {
                let mut out = Vec::new();
                out.extend_from_slice(&(items.len() as i32).to_be_bytes());
                for item in items {
                    let Term::Literal(lit) = item else {
                        return Err(invalid(format!(
                            "Unsupported value {term} in a condition on a system table"
                        )));
                    };
                    let b = constant(lit, elem).ok_or_else(|| {
                        invalid(format!("Invalid list literal for {column}: {term}"))
                    })?;
                    out.extend_from_slice(&(b.len() as i32).to_be_bytes());
                    out.extend_from_slice(&b);
                }
                Ok(Target::Constant(Bytes::from(out)))
            }
            _ => Err(invalid(format!(
                "Invalid list literal for {column} of type {}",
                type_name(ty)
            ))),
        },
        other => Err(invalid(format!(
            "Unsupported value {other} in a condition on a system table"
        ))),
    }
}

/// A literal serialized as `ty`, if it is a valid constant of that type.
fn constant(lit: &Literal, ty: &ColumnType) -> Option<Bytes> {
    let bytes: Vec<u8> = match (ty, lit) {
        (ColumnType::Native(CqlType::Text | CqlType::Ascii), Literal::String(s)) => {
            s.as_bytes().to_vec()
        }
        (ColumnType::Native(CqlType::Int), Literal::Integer(s)) => {
            s.parse::<i32>().ok()?.to_be_bytes().to_vec()
        }
        (ColumnType::Native(CqlType::BigInt | CqlType::Timestamp), Literal::Integer(s)) => {
            s.parse::<i64>().ok()?.to_be_bytes().to_vec()
        }
        (ColumnType::Native(CqlType::Double), Literal::Integer(s) | Literal::Float(s)) => {
            s.parse::<f64>().ok()?.to_be_bytes().to_vec()
        }
        (ColumnType::Native(CqlType::Boolean), Literal::Boolean(b)) => vec![u8::from(*b)],
        (ColumnType::Native(CqlType::Uuid | CqlType::TimeUuid), Literal::Uuid(u)) => {
            u.to_be_bytes().to_vec()
        }
        (ColumnType::Native(CqlType::Blob), Literal::Blob(b)) => b.clone(),
        (ColumnType::Native(CqlType::Inet), Literal::String(s)) => {
            mosaic_types::inet::inet_octets(&mosaic_types::parse_inet(s).ok()?)
        }
        _ => return None,
    };
    Some(Bytes::from(bytes))
}

fn type_name(ty: &ColumnType) -> String {
    match ty {
        ColumnType::Native(t) => t.name().to_owned(),
        other => format!("{other:?}"),
    }
}
