//! The SELECT clause: output columns and their computation (columns, `writetime`/`ttl`,
//! `token`, `CAST`, aggregates), each selector's type and name as Cassandra reports them.

use super::*;

/// One output column's computation.
#[derive(Clone, Debug)]
pub(crate) enum Expr {
    /// A table column.
    Column(usize),
    /// `writetime(c)`.
    WriteTime(usize),
    /// `ttl(c)`.
    Ttl(usize),
    /// `token(pk…)`.
    Token,
    /// A constant.
    Constant(Option<Bytes>),
    /// `count(*)`.
    CountRows,
    /// An aggregate of a column.
    Aggregate(Aggregate, usize),
    /// `CAST(column AS type)`.
    Cast(usize, CqlType),
    /// `column.field…`: the field at each position of nested user-defined types.
    Field(usize, Vec<usize>),
    /// `column[key]`: a set's element or a map's value.
    Element(usize, elements::ElementKey),
    /// `column[from..to]`: a set's elements or a map's entries between two bounds.
    Slice {
        /// The column.
        column: usize,
        /// The lower bound (inclusive), if any.
        from: Option<elements::ElementKey>,
        /// The upper bound (inclusive), if any.
        to: Option<elements::ElementKey>,
        /// Whether the column is a non-frozen collection (selected cell by cell).
        multi_cell: bool,
    },
}

/// The native aggregates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Aggregate {
    /// `count(c)`: non-null values.
    Count,
    /// `sum(c)`.
    Sum,
    /// `min(c)`.
    Min,
    /// `max(c)`.
    Max,
    /// `avg(c)`.
    Avg,
}

/// One output column.
#[derive(Clone, Debug)]
pub(crate) struct OutColumn {
    /// Its name in the result metadata.
    pub name: String,
    /// Its type.
    pub ty: ColumnType,
    /// How it is computed.
    pub expr: Expr,
}

/// The output columns of a SELECT on `table`.
///
/// `SELECT *`'s are derived once per table definition (they depend on nothing else).
pub(crate) fn output_columns(
    table: &TableMeta,
    s: &SelectStatement,
) -> Result<Arc<[OutColumn]>, ErrorResponse> {
    let selectors = match &s.selection {
        Selection::Wildcard => {
            return table.derived.select_star(|| {
                table
                    .select_star_order()
                    .into_iter()
                    .map(|col| {
                        Ok(OutColumn {
                            name: col.name.clone(),
                            ty: table.wire_type(col),
                            expr: Expr::Column(restrict::column_index(table, &col.name)?),
                        })
                    })
                    .collect()
            });
        }
        Selection::Selectors(selectors) => selectors,
    };
    let mut out = Vec::with_capacity(selectors.len());
    for sel in selectors {
        let (default_name, ty, expr) = selector(table, &sel.expr)?;
        out.push(OutColumn {
            name: sel
                .alias
                .as_ref()
                .map_or(default_name, |a| a.as_str().to_owned()),
            ty,
            expr,
        });
    }
    let aggregates = out
        .iter()
        .filter(|c| matches!(c.expr, Expr::CountRows | Expr::Aggregate(..)))
        .count();
    if aggregates > 0 && s.distinct {
        return Err(invalid(
            "Aggregate functions are not supported with SELECT DISTINCT",
        ));
    }
    Ok(out.into())
}

/// A selector's output: its column name, type and computation.
type Selected = (String, ColumnType, Expr);

/// One selector of the SELECT clause.
pub(super) fn selector(table: &TableMeta, expr: &SelectorExpr) -> Result<Selected, ErrorResponse> {
    match expr {
        SelectorExpr::Column(ident) => {
            let (index, _, _) = column(table, ident.as_str())?;
            Ok((
                ident.as_str().to_owned(),
                wire_type(table, index),
                Expr::Column(index),
            ))
        }
        SelectorExpr::Field(ident, path) => {
            let (index, column_ty, _) = column(table, ident.as_str())?;
            let mut name = ident.as_str().to_owned();
            let mut ty = column_ty.clone();
            let mut positions = Vec::with_capacity(path.len());
            for (depth, field) in path.iter().enumerate() {
                let mosaic_types::DataType::Udt(u) = ty.unfrozen() else {
                    return Err(invalid(format!(
                        "Invalid field selection: {name} of type {ty} is not a user type"
                    )));
                };
                let position = u.field(field.as_str()).ok_or_else(|| {
                    // The column itself is named by its type's name, a nested field by
                    // its declared type (Cassandra's texts).
                    let of = if depth == 0 {
                        u.name.clone()
                    } else {
                        ty.to_string()
                    };
                    invalid(format!(
                        "{name} of type {of} has no field {}",
                        field.as_str()
                    ))
                })?;
                let next = u
                    .fields
                    .get(position)
                    .map(|(_, t)| t.clone())
                    .ok_or_else(|| invalid(format!("{name} has no field {}", field.as_str())))?;
                positions.push(position);
                name = format!("{name}.{}", field.as_str());
                ty = next;
            }
            Ok((name, (&ty).into(), Expr::Field(index, positions)))
        }
        SelectorExpr::Element(ident, key) => elements::element_selector(table, ident, key),
        SelectorExpr::Slice(ident, from, to) => {
            elements::slice_selector(table, ident, from.as_ref(), to.as_ref())
        }
        SelectorExpr::WriteTime(ident) | SelectorExpr::Ttl(ident) => {
            let is_wt = matches!(expr, SelectorExpr::WriteTime(_));
            cell_metadata(table, ident.as_str(), is_wt)
        }
        SelectorExpr::CountRows => {
            Ok(("count".to_owned(), CqlType::BigInt.into(), Expr::CountRows))
        }
        SelectorExpr::Value(term) => constant(term),
        SelectorExpr::Cast { expr, ty } => {
            let SelectorExpr::Column(ident) = expr.as_ref() else {
                return Err(invalid("CAST is only supported on columns"));
            };
            let (index, from, _) = native_column(table, ident.as_str(), "cast")?;
            if cast_value(&sample_of(from), *ty).is_none() && from != *ty {
                return Err(invalid(format!("{from} cannot be cast to {ty}")));
            }
            Ok((
                format!("cast({} as {ty})", ident.as_str()),
                (*ty).into(),
                Expr::Cast(index, *ty),
            ))
        }
        SelectorExpr::Call { name, args } if name.as_str() == "token" => token_call(table, args),
        // What is computed is the argument; the result is rendered as JSON afterwards
        // (`json::to_json_depths`).
        SelectorExpr::Call { name, args } if name.as_str() == "tojson" => {
            let (inner, ty, expr) = selector(table, json::check_to_json_args(args)?)?;
            Ok((format!("system.tojson({inner})"), ty, expr))
        }
        SelectorExpr::Call { name, .. } if name.as_str() == "fromjson" => {
            Err(json::from_json_in_selection())
        }
        SelectorExpr::Call { name, args } => aggregate_call(table, name.as_str(), args),
    }
}

/// A column's index, type and kind.
fn column<'t>(
    table: &'t TableMeta,
    name: &str,
) -> Result<(usize, &'t mosaic_types::DataType, ColumnKind), ErrorResponse> {
    let index = restrict::column_index(table, name)?;
    let col = table
        .columns
        .get(index)
        .ok_or_else(|| invalid("bad column"))?;
    Ok((index, &col.ty, col.kind))
}

/// A column of a native type, for functions defined on native types only.
fn native_column(
    table: &TableMeta,
    name: &str,
    func: &str,
) -> Result<(usize, CqlType, ColumnKind), ErrorResponse> {
    let (index, ty, kind) = column(table, name)?;
    let native = ty
        .native()
        .ok_or_else(|| invalid(format!("Invalid call to {func} on {name} of type {ty}")))?;
    Ok((index, native, kind))
}

/// `writetime(c)` or `ttl(c)`: refused on primary key columns, as Cassandra does.
fn cell_metadata(table: &TableMeta, name: &str, is_wt: bool) -> Result<Selected, ErrorResponse> {
    let (index, ty, kind) = column(table, name)?;
    let func = if is_wt { "writetime" } else { "ttl" };
    if ty.is_multi_cell() {
        return Err(invalid(format!(
            "Cannot use selection function {} on non-frozen collection {name}",
            if is_wt { "writeTime" } else { "ttl" },
        )));
    }
    if kind.is_primary_key() {
        return Err(invalid(format!(
            "Cannot use selection function {} on PRIMARY KEY part {name}",
            if is_wt { "writeTime" } else { "ttl" },
        )));
    }
    let out = format!("{func}({name})");
    if is_wt {
        Ok((out, CqlType::BigInt.into(), Expr::WriteTime(index)))
    } else {
        Ok((out, CqlType::Int.into(), Expr::Ttl(index)))
    }
}

/// A constant selector. Untyped constants are returned as text, as Cassandra 3.11 does
/// for strings.
fn constant(term: &Term) -> Result<Selected, ErrorResponse> {
    let Term::Literal(lit) = term else {
        return Err(invalid(
            "Bind markers are not supported in the selection clause",
        ));
    };
    let value = match lit {
        crate::ast::Literal::Integer(s) => (CqlType::Int, s.parse::<i32>().ok().map(CqlValue::Int)),
        crate::ast::Literal::String(s) => (CqlType::Text, Some(CqlValue::Text(s.clone()))),
        crate::ast::Literal::Boolean(b) => (CqlType::Boolean, Some(CqlValue::Boolean(*b))),
        crate::ast::Literal::Float(s) => {
            (CqlType::Double, s.parse::<f64>().ok().map(CqlValue::Double))
        }
        crate::ast::Literal::Duration(s) => (
            CqlType::Duration,
            Some(CqlValue::Duration(s.parse().map_err(
                |e: mosaic_types::ParseDurationError| invalid(e.to_string()),
            )?)),
        ),
        _ => return Err(invalid("Unsupported constant in the selection clause")),
    };
    Ok((
        format!("{term}"),
        value.0.into(),
        Expr::Constant(value.1.map(|v| Bytes::from(v.to_cql_bytes()))),
    ))
}

/// `token(pk…)`: the partition key columns, in order.
fn token_call(table: &TableMeta, args: &[SelectorExpr]) -> Result<Selected, ErrorResponse> {
    let pk: Vec<String> = table
        .partition_key()
        .iter()
        .map(|c| c.name.clone())
        .collect();
    let given: Vec<String> = args
        .iter()
        .map(|a| match a {
            SelectorExpr::Column(c) => Ok(c.as_str().to_owned()),
            _ => Err(invalid("token() takes the partition key columns")),
        })
        .collect::<Result<_, _>>()?;
    if given != pk {
        return Err(invalid(format!(
            "Invalid arguments for token(): expected the partition key columns ({})",
            pk.join(", ")
        )));
    }
    Ok((
        format!("system.token({})", given.join(", ")),
        CqlType::BigInt.into(),
        Expr::Token,
    ))
}

/// `count`, `sum`, `min`, `max`, `avg` of one column, with Cassandra's result types.
fn aggregate_call(
    table: &TableMeta,
    func: &str,
    args: &[SelectorExpr],
) -> Result<Selected, ErrorResponse> {
    let agg = match func {
        "count" => Aggregate::Count,
        "sum" => Aggregate::Sum,
        "min" => Aggregate::Min,
        "max" => Aggregate::Max,
        "avg" => Aggregate::Avg,
        other => return Err(invalid(format!("Unknown function '{other}'"))),
    };
    let [SelectorExpr::Column(ident)] = args else {
        return Err(invalid(format!(
            "Invalid arguments in call to function {func}: one column expected"
        )));
    };
    if matches!(agg, Aggregate::Count) {
        let (index, _, _) = column(table, ident.as_str())?;
        return Ok((
            format!("system.count({})", ident.as_str()),
            CqlType::BigInt.into(),
            Expr::Aggregate(agg, index),
        ));
    }
    let (index, ty, _) = native_column(table, ident.as_str(), func)?;
    let result_ty = match agg {
        Aggregate::Count => CqlType::BigInt,
        Aggregate::Min | Aggregate::Max => ty,
        Aggregate::Sum | Aggregate::Avg => {
            if !matches!(
                ty,
                CqlType::Int
                    | CqlType::BigInt
                    | CqlType::SmallInt
                    | CqlType::TinyInt
                    | CqlType::Float
                    | CqlType::Double
                    | CqlType::Varint
                    | CqlType::Decimal
            ) {
                return Err(invalid(format!(
                    "Invalid call to function {func}, none of its type signatures match (column {} is {ty})",
                    ident.as_str()
                )));
            }
            ty
        }
    };
    // Cassandra's aggregates of a counter are counters.
    let result_ty = match wire_type(table, index) {
        ColumnType::Counter => ColumnType::Counter,
        _ => result_ty.into(),
    };
    Ok((
        format!("system.{func}({})", ident.as_str()),
        result_ty,
        Expr::Aggregate(agg, index),
    ))
}

/// The type drivers see for column `index` (`counter` for a counter).
fn wire_type(table: &TableMeta, index: usize) -> ColumnType {
    table
        .columns
        .get(index)
        .map_or(ColumnType::Native(CqlType::Blob), |c| table.wire_type(c))
}

pub(super) fn sample_of(ty: CqlType) -> CqlValue {
    match ty {
        CqlType::Int => CqlValue::Int(0),
        CqlType::BigInt => CqlValue::BigInt(0),
        CqlType::SmallInt => CqlValue::SmallInt(0),
        CqlType::TinyInt => CqlValue::TinyInt(0),
        CqlType::Float => CqlValue::Float(0.0),
        CqlType::Double => CqlValue::Double(0.0),
        CqlType::Text => CqlValue::Text(String::new()),
        CqlType::Ascii => CqlValue::Ascii(String::new()),
        CqlType::Boolean => CqlValue::Boolean(false),
        CqlType::Timestamp => CqlValue::Timestamp(0),
        CqlType::Inet => CqlValue::Inet(std::net::IpAddr::from([0u8; 4])),
        CqlType::Time => CqlValue::Time(0),
        CqlType::Duration => CqlValue::Duration(Default::default()),
        _ => CqlValue::Blob(Vec::new()),
    }
}

/// CAST between numeric types and to text, as Cassandra supports (a `duration` has no cast).
pub(super) fn cast_value(v: &CqlValue, to: CqlType) -> Option<CqlValue> {
    if matches!(v, CqlValue::Duration(_)) {
        return None;
    }
    let as_f64 = |v: &CqlValue| -> Option<f64> {
        Some(match v {
            CqlValue::Int(n) => f64::from(*n),
            CqlValue::BigInt(n) => *n as f64,
            CqlValue::SmallInt(n) => f64::from(*n),
            CqlValue::TinyInt(n) => f64::from(*n),
            CqlValue::Float(f) => f64::from(*f),
            CqlValue::Double(d) => *d,
            _ => return None,
        })
    };
    let as_i64 = |v: &CqlValue| -> Option<i64> {
        Some(match v {
            CqlValue::Int(n) => i64::from(*n),
            CqlValue::BigInt(n) => *n,
            CqlValue::SmallInt(n) => i64::from(*n),
            CqlValue::TinyInt(n) => i64::from(*n),
            CqlValue::Float(f) => *f as i64,
            CqlValue::Double(d) => *d as i64,
            _ => return None,
        })
    };
    Some(match to {
        CqlType::Int => CqlValue::Int(as_i64(v)? as i32),
        CqlType::BigInt => CqlValue::BigInt(as_i64(v)?),
        CqlType::SmallInt => CqlValue::SmallInt(as_i64(v)? as i16),
        CqlType::TinyInt => CqlValue::TinyInt(as_i64(v)? as i8),
        CqlType::Float => CqlValue::Float(as_f64(v)? as f32),
        CqlType::Double => CqlValue::Double(as_f64(v)?),
        CqlType::Text => CqlValue::Text(display_value(v)),
        CqlType::Ascii => CqlValue::Ascii(display_value(v)),
        _ => return None,
    })
}

pub(super) fn display_value(v: &CqlValue) -> String {
    match v {
        CqlValue::Ascii(s) | CqlValue::Text(s) => s.clone(),
        CqlValue::Int(n) => n.to_string(),
        CqlValue::BigInt(n) => n.to_string(),
        CqlValue::SmallInt(n) => n.to_string(),
        CqlValue::TinyInt(n) => n.to_string(),
        CqlValue::Float(f) => f.to_string(),
        CqlValue::Double(d) => d.to_string(),
        CqlValue::Boolean(b) => b.to_string(),
        CqlValue::Varint(v) => v.to_string(),
        CqlValue::Decimal(d) => d.to_string(),
        CqlValue::Timestamp(ms) => ms.to_string(),
        // As Cassandra's serializers print them: Java's host address, `hh:mm:ss.fffffffff`.
        CqlValue::Inet(a) => mosaic_types::java_host_address(a),
        CqlValue::Time(nanos) => mosaic_types::format_time(*nanos),
        CqlValue::Duration(d) => d.to_string(),
        other => format!("{other:?}"),
    }
}

/// SELECT DISTINCT may only ask for partition key and static columns (and the token).
pub(super) fn check_distinct(
    table: &TableMeta,
    columns: &[OutColumn],
) -> Result<(), ErrorResponse> {
    for c in columns {
        let ok = match c.expr {
            Expr::Column(i) => table.columns.get(i).is_some_and(|c| {
                matches!(c.kind, ColumnKind::PartitionKey { .. } | ColumnKind::Static)
            }),
            Expr::Token => true,
            _ => false,
        };
        if !ok {
            return Err(invalid(format!(
                "SELECT DISTINCT queries must only request partition key columns and/or static columns (not {})",
                c.name
            )));
        }
    }
    Ok(())
}
