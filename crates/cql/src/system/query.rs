//! SELECTs on system tables: what drivers send, nothing more. A [`Plan`] is computed from
//! the statement alone (so PREPARE and EXECUTE agree on the columns), then run over the
//! table's rows: equality and `IN` filters on any column, the selected columns (with
//! aliases) or `count`, `DISTINCT` and `LIMIT`. Everything else is refused with Invalid
//! and a message naming what is not supported.

use std::net::IpAddr;

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
        let types = table
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
            .collect::<Result<Vec<ColumnType>, ErrorResponse>>()?;
        let mut plan = Plan {
            table,
            columns: Vec::new(),
            binds: Vec::new(),
            exprs: Vec::new(),
            filters: Vec::new(),
            limit: None,
            distinct: stmt.distinct,
        };
        let mut binds: Vec<Option<ColumnSpec>> = vec![None; stmt.bind_markers.len()];
        let spec =
            |name: &str, ty: ColumnType| ColumnSpec::new(table.keyspace, table.name, name, ty);
        let resolve = |name: &str| -> Result<(usize, &ColumnType), ErrorResponse> {
            table
                .column_index(name)
                .and_then(|i| Some((i, types.get(i)?)))
                .ok_or_else(|| invalid(format!("Undefined column name {name}")))
        };

        match &stmt.selection {
            Selection::Wildcard => {
                for (i, (c, ty)) in table.columns.iter().zip(&types).enumerate() {
                    plan.columns.push(spec(c.name, ty.clone()));
                    plan.exprs.push(Expr::Column(i));
                }
            }
            Selection::Selectors(selectors) => {
                for s in selectors {
                    let alias = s.alias.as_ref().map(|a| a.as_str());
                    let (default_name, ty, expr) = match &s.expr {
                        SelectorExpr::Column(c) => {
                            let (i, ty) = resolve(c.as_str())?;
                            (c.as_str().to_owned(), ty.clone(), Expr::Column(i))
                        }
                        SelectorExpr::CountRows => (
                            "count".to_owned(),
                            ColumnType::Native(CqlType::BigInt),
                            Expr::CountRows,
                        ),
                        SelectorExpr::Call { name, args } if name.as_str() == "count" => {
                            match args.as_slice() {
                                [SelectorExpr::Column(c)] => {
                                    let (i, _) = resolve(c.as_str())?;
                                    (
                                        format!("system.count({})", c.as_str()),
                                        ColumnType::Native(CqlType::BigInt),
                                        Expr::CountColumn(i),
                                    )
                                }
                                _ => {
                                    return Err(invalid(format!(
                                        "{} is not supported on system tables",
                                        s.expr
                                    )))
                                }
                            }
                        }
                        other => {
                            return Err(invalid(format!(
                                "Selecting {other} is not supported on system tables"
                            )))
                        }
                    };
                    plan.columns.push(spec(alias.unwrap_or(&default_name), ty));
                    plan.exprs.push(expr);
                }
            }
        }

        let mut bind =
            |m: &BindMarker, default_name: &str, ty: ColumnType| -> Result<(), ErrorResponse> {
                let name = m.name.as_ref().map_or(default_name, |n| n.as_str());
                let slot = binds
                    .get_mut(m.index)
                    .ok_or_else(|| invalid(format!("bind marker {} out of range", m.index)))?;
                *slot = Some(spec(name, ty));
                Ok(())
            };

        for relation in &stmt.where_clause {
            match relation {
                Relation::Compare {
                    column,
                    op: Operator::Eq,
                    value,
                } => {
                    let (i, ty) = resolve(column.as_str())?;
                    let target = target(value, column.as_str(), ty, &mut bind)?;
                    plan.filters.push(Filter {
                        column: i,
                        accept: Accept::Any(vec![target]),
                    });
                }
                Relation::In { column, values } => {
                    let (i, ty) = resolve(column.as_str())?;
                    let accept = match values {
                        InValues::List(terms) => Accept::Any(
                            terms
                                .iter()
                                .map(|t| target(t, column.as_str(), ty, &mut bind))
                                .collect::<Result<_, _>>()?,
                        ),
                        InValues::Bind(m) => {
                            bind(
                                m,
                                &format!("in({})", column.as_str()),
                                ColumnType::List(Box::new(ty.clone())),
                            )?;
                            Accept::BoundList(m.index)
                        }
                    };
                    plan.filters.push(Filter { column: i, accept });
                }
                other => {
                    return Err(invalid(format!(
                        "Unsupported restriction on a system table: {other} (only = and IN are)"
                    )))
                }
            }
        }

        plan.limit = match &stmt.limit {
            None => None,
            Some(IntValue::Literal(n)) => Some(Limit::Constant(*n)),
            Some(IntValue::Bind(m)) => {
                bind(m, "[limit]", ColumnType::Native(CqlType::Int))?;
                Some(Limit::Bound(m.index))
            }
        };

        plan.binds = binds
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
        Ok(plan)
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
        let limit = match self.limit {
            None => None,
            Some(limit) => {
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
                Some(usize::try_from(n).unwrap_or(usize::MAX))
            }
        };
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
            // One row; plain columns take the first matching row's values, as Cassandra 3.x.
            let first = matching.first();
            let row = self
                .exprs
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
                .collect();
            vec![row]
        } else {
            matching
                .iter()
                .map(|r| {
                    self.exprs
                        .iter()
                        .map(|e| match e {
                            Expr::Column(i) => r.get(*i).cloned().flatten(),
                            // Not reached: aggregates take the other branch.
                            Expr::CountRows | Expr::CountColumn(_) => None,
                        })
                        .collect()
                })
                .collect()
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
        (ColumnType::Inet, Literal::String(s)) => match s.parse::<IpAddr>().ok()? {
            IpAddr::V4(a) => a.octets().to_vec(),
            IpAddr::V6(a) => a.octets().to_vec(),
        },
        _ => return None,
    };
    Some(Bytes::from(bytes))
}

fn type_name(ty: &ColumnType) -> String {
    match ty {
        ColumnType::Native(t) => t.name().to_owned(),
        ColumnType::Inet => "inet".to_owned(),
        other => format!("{other:?}"),
    }
}
