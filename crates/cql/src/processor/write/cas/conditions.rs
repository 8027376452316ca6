//! The conditions of `IF cond AND …`: checked against the schema and bound to values
//! ([`bind`]), then evaluated against the row a compare-and-set read ([`Bound::holds`]),
//! with Cassandra 4.1's rules (`ColumnCondition`): a null condition value only compares
//! with `=` and `!=`; a null column satisfies only `!=` (and `= null`); an absent map key
//! or a list index past the end reads as null; a non-frozen collection with no elements
//! compares as an empty one.

use mosaic_types::{CqlType, CqlValue, DataType};

use crate::ast::{Condition, ConditionOp, ConditionTarget, InValues, Operator, Term};
use crate::frame::{ErrorResponse, Value};
use crate::processor::restrict::{cmp_values, op_holds};
use crate::processor::values::{decode_list, eval, Eval, EvalContext};
use crate::schema::{ColumnKind, ColumnMeta, TableMeta};

use crate::processor::invalid;

/// Where a condition's terms stand, as Cassandra names and types their bind markers.
pub(crate) struct ConditionShape<'t> {
    /// The column.
    pub column: &'t ColumnMeta,
    /// `c[t]`: the element's marker name and type (`key(m)`, `idx(l)`).
    pub element: Option<(String, DataType)>,
    /// `c.f`: the field's position in the type.
    pub field: Option<usize>,
    /// The compared value's marker name and type (`v`, `value(m)`, `a.f`, `key(m)` for
    /// `CONTAINS KEY`).
    pub value: (String, DataType),
}

/// Checks `condition` against `table`: the column exists and is not part of the primary
/// key, and what it names of the column exists.
pub(crate) fn shape<'t>(
    table: &'t TableMeta,
    condition: &Condition,
) -> Result<ConditionShape<'t>, ErrorResponse> {
    let name = condition.column.as_str();
    let column = table.column(name).ok_or_else(|| {
        invalid(format!(
            "Undefined column name {name} in table {}.{}",
            table.keyspace, table.name
        ))
    })?;
    if column.kind.is_primary_key() {
        return Err(invalid(format!(
            "PRIMARY KEY column '{name}' cannot have IF conditions"
        )));
    }
    let ty = column.ty.unfrozen();
    let mut shape = ConditionShape {
        column,
        element: None,
        field: None,
        value: (name.to_owned(), column.ty.clone()),
    };
    match &condition.target {
        ConditionTarget::Column => {}
        ConditionTarget::Element(_) => match ty {
            DataType::Map(k, v) => {
                shape.element = Some((format!("key({name})"), (**k).clone()));
                shape.value = (format!("value({name})"), (**v).clone());
            }
            DataType::List(e) => {
                shape.element = Some((format!("idx({name})"), CqlType::Int.into()));
                shape.value = (format!("value({name})"), (**e).clone());
            }
            DataType::Set(_) => {
                return Err(invalid(format!(
                    "Invalid element access syntax for set column {name}"
                )))
            }
            _ => {
                return Err(invalid(format!(
                    "Invalid element access syntax for non-collection column {name}"
                )))
            }
        },
        ConditionTarget::Field(field) => {
            let DataType::Udt(u) = ty else {
                return Err(invalid(format!(
                    "Invalid field selection: {name} of type {} is not a user type",
                    column.ty
                )));
            };
            let Some(position) = u.fields.iter().position(|(f, _)| f == field.as_str()) else {
                return Err(invalid(format!(
                    "Unknown field {} for column {name}",
                    field.as_str()
                )));
            };
            shape.field = Some(position);
            if let Some((_, field_ty)) = u.fields.get(position) {
                shape.value = (format!("{name}.{}", field.as_str()), field_ty.clone());
            }
        }
    }
    if let ConditionOp::Contains { key, .. } = &condition.op {
        shape.value = match (ty, key) {
            (DataType::Map(k, _), true) => (format!("key({name})"), (**k).clone()),
            (DataType::Map(_, v), false) => (format!("value({name})"), (**v).clone()),
            (DataType::List(e) | DataType::Set(e), false) => {
                (format!("value({name})"), (**e).clone())
            }
            (DataType::List(_) | DataType::Set(_), true) => {
                return Err(invalid(format!(
                    "Cannot use CONTAINS KEY on non-map column {name}"
                )))
            }
            (_, true) => {
                return Err(invalid(format!(
                    "Cannot use CONTAINS KEY on non-map column {name}"
                )))
            }
            (_, false) => {
                return Err(invalid(format!(
                    "Cannot use CONTAINS on non-collection column {name}"
                )))
            }
        };
    }
    Ok(shape)
}

/// What of the column a bound condition reads.
#[derive(Clone, Debug)]
enum Part {
    Whole,
    /// A map's value by key.
    Key(CqlValue),
    /// A list's element by index.
    Index(usize),
    /// A user-defined type's field by position.
    Field(usize),
}

/// How a bound condition tests what it reads.
#[derive(Clone, Debug)]
enum Test {
    Compare(Operator, Option<CqlValue>),
    In(Vec<Option<CqlValue>>),
    Contains { key: bool, value: CqlValue },
}

/// A condition with its values bound, ready to be checked against rows.
#[derive(Clone, Debug)]
pub(crate) struct Bound {
    /// The column's index in the table.
    pub column: usize,
    /// Whether the column is static (the condition reads the static row).
    pub is_static: bool,
    /// The column's type.
    ty: DataType,
    part: Part,
    test: Test,
}

/// A condition's value: null allowed, unset refused.
fn value_of(
    term: &Term,
    (name, ty): &(String, DataType),
    ctx: &EvalContext<'_>,
) -> Result<Option<CqlValue>, ErrorResponse> {
    match eval(term, ty, name, ctx)? {
        Eval::Value(v) => Ok(Some(v)),
        Eval::Null => Ok(None),
        Eval::Unset => Err(invalid("Invalid 'unset' value in condition")),
    }
}

/// Checks and binds one condition of a statement on `table`.
pub(crate) fn bind(
    table: &TableMeta,
    condition: &Condition,
    ctx: &EvalContext<'_>,
) -> Result<Bound, ErrorResponse> {
    let shape = shape(table, condition)?;
    let part = match (&condition.target, &shape.element) {
        (ConditionTarget::Element(term), Some(element)) => {
            let is_list = matches!(shape.column.ty.unfrozen(), DataType::List(_));
            let what = if is_list { "list" } else { "map" };
            let Some(key) = value_of(term, element, ctx)? else {
                return Err(invalid(format!(
                    "Invalid null value for {what} element access"
                )));
            };
            match key {
                CqlValue::Int(i) if is_list => Part::Index(
                    usize::try_from(i)
                        .map_err(|_| invalid(format!("Invalid negative list index {i}")))?,
                ),
                key => Part::Key(key),
            }
        }
        _ => shape.field.map_or(Part::Whole, Part::Field),
    };
    let test = match &condition.op {
        ConditionOp::Compare(op, term) => {
            let value = value_of(term, &shape.value, ctx)?;
            if value.is_none() && !matches!(op, Operator::Eq | Operator::Ne) {
                return Err(invalid(format!(
                    "Invalid comparison with null for operator \"{op}\""
                )));
            }
            Test::Compare(*op, value)
        }
        ConditionOp::In(InValues::List(terms)) => Test::In(
            terms
                .iter()
                .map(|t| value_of(t, &shape.value, ctx))
                .collect::<Result<_, _>>()?,
        ),
        ConditionOp::In(InValues::Bind(marker)) => match ctx.bindings.get(marker)? {
            Value::Null => return Err(invalid("Invalid null list in IN condition")),
            Value::Unset => return Err(invalid("Invalid 'unset' value in condition")),
            Value::Bytes(b) => Test::In(
                decode_list(b, &shape.value.1, &shape.value.0)?
                    .into_iter()
                    .map(Some)
                    .collect(),
            ),
        },
        ConditionOp::Contains { key, value } => {
            let Some(value) = value_of(value, &shape.value, ctx)? else {
                let op = if *key { "CONTAINS KEY" } else { "CONTAINS" };
                return Err(invalid(format!(
                    "Invalid comparison with null for operator \"{op}\""
                )));
            };
            Test::Contains { key: *key, value }
        }
    };
    Ok(Bound {
        column: table
            .column_index(shape.column.name.as_str())
            .unwrap_or_default(),
        is_static: shape.column.kind == ColumnKind::Static,
        ty: shape.column.ty.clone(),
        part,
        test,
    })
}

/// One value compared with another by `op`, with Cassandra's null rules.
fn compare(op: Operator, current: Option<&CqlValue>, value: Option<&CqlValue>) -> bool {
    match (value, current) {
        (None, current) => match op {
            Operator::Eq => current.is_none(),
            // A null value only reaches here with `=` or `!=` ([`bind`]).
            _ => current.is_some(),
        },
        (Some(_), None) => op == Operator::Ne,
        (Some(v), Some(c)) => op_holds(op, cmp_values(c, v)),
    }
}

impl Bound {
    /// Whether the condition holds for a row whose value of the column is `current`
    /// (`None`: null, or no row).
    pub(crate) fn holds(&self, current: Option<&CqlValue>) -> bool {
        // A non-frozen collection without elements is an empty one to compare with.
        let empty = match (&self.part, &self.ty, current) {
            (Part::Whole, DataType::List(_), None) => Some(CqlValue::List(Vec::new())),
            (Part::Whole, DataType::Set(_), None) => Some(CqlValue::Set(Vec::new())),
            (Part::Whole, DataType::Map(..), None) => Some(CqlValue::Map(Vec::new())),
            _ => None,
        };
        let read = match (&self.part, current) {
            (Part::Whole, c) => c.cloned(),
            (Part::Key(key), Some(CqlValue::Map(entries))) => entries
                .iter()
                .find(|(k, _)| cmp_values(k, key).is_eq())
                .map(|(_, v)| v.clone()),
            (Part::Index(i), Some(CqlValue::List(items))) => items.get(*i).cloned(),
            (Part::Field(i), Some(CqlValue::Tuple(fields))) => fields.get(*i).cloned().flatten(),
            _ => None,
        };
        let compared = |op: Operator, value: Option<&CqlValue>| match (&empty, value) {
            (Some(empty), Some(_)) => compare(op, Some(empty), value),
            _ => compare(op, read.as_ref(), value),
        };
        match &self.test {
            Test::Compare(op, value) => compared(*op, value.as_ref()),
            Test::In(values) => values.iter().any(|v| compared(Operator::Eq, v.as_ref())),
            Test::Contains { key, value } => {
                let found = |v: &CqlValue| cmp_values(v, value).is_eq();
                match read {
                    Some(CqlValue::List(items) | CqlValue::Set(items)) => items.iter().any(found),
                    Some(CqlValue::Map(entries)) if *key => entries.iter().any(|(k, _)| found(k)),
                    Some(CqlValue::Map(entries)) => entries.iter().any(|(_, v)| found(v)),
                    _ => false,
                }
            }
        }
    }
}
