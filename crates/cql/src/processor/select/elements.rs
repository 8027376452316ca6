//! Element and slice selection on sets and maps, as Cassandra 4 selects them: `s['x']` (the
//! element or null), `m['k']` (the value or null), `m['a'..'c']`, `s[..'b']` (the elements
//! or entries between two inclusive bounds, either left out), with literal or bound keys
//! (`m[?]`, `m[?..?]`, whose markers are named `key(m)`, or `value(s)` on a set).
//!
//! A selector's keys are resolved per execution ([`bind`]): a prepared statement's
//! selection is computed once for its result metadata, before any value is bound.

use mosaic_types::DataType;

use crate::ast::BindMarker;
use crate::frame::Value;

use super::*;

/// The key (or a slice bound) of an element selection.
#[derive(Clone, Debug)]
pub(crate) enum ElementKey {
    /// A value of the collection's element (key) type.
    Value(CqlValue),
    /// A bind marker, resolved by [`bind`] before rows are read.
    Bind {
        /// The marker.
        marker: BindMarker,
        /// The type of its value.
        ty: DataType,
        /// Its name (`key(m)`, `value(s)`), for errors.
        name: String,
    },
    /// A slice bound bound to unset: no bound.
    Unbounded,
}

impl ElementKey {
    fn value(&self) -> Option<&CqlValue> {
        match self {
            ElementKey::Value(v) => Some(v),
            _ => None,
        }
    }
}

/// The element (key) type of a set or map column and its marker name, or Cassandra's
/// refusal for `what` ("Element" or "Slice") selection on anything else.
fn element_type(
    ident: &Ident,
    ty: &DataType,
    what: &str,
) -> Result<(DataType, String), ErrorResponse> {
    let name = ident.as_str();
    match ty.unfrozen() {
        DataType::Set(e) => Ok(((**e).clone(), format!("value({name})"))),
        DataType::Map(k, _) => Ok(((**k).clone(), format!("key({name})"))),
        DataType::List(_) => Err(invalid(format!(
            "{what} selection is only allowed on sets and maps, but {name} is a list"
        ))),
        _ => Err(invalid(format!(
            "Invalid {} selection: {name} is of type {ty} is not a collection",
            what.to_ascii_lowercase()
        ))),
    }
}

/// A key term: evaluated now unless it is a bind marker.
fn key_of(term: &Term, ty: &DataType, name: &str) -> Result<ElementKey, ErrorResponse> {
    if let Term::Bind(marker) = term {
        return Ok(ElementKey::Bind {
            marker: marker.clone(),
            ty: ty.clone(),
            name: name.to_owned(),
        });
    }
    let bindings = crate::processor::values::Bindings::default();
    let ctx = EvalContext {
        bindings: &bindings,
        now_micros: 0,
    };
    let value = crate::processor::values::eval(term, ty, name, &ctx)?
        .required(name)
        .map_err(|_| invalid(format!("Invalid null value for {name}")))?;
    Ok(ElementKey::Value(value))
}

/// `column[key]`.
pub(super) fn element_selector(
    table: &TableMeta,
    ident: &Ident,
    key: &Term,
) -> Result<(String, ColumnType, Expr), ErrorResponse> {
    let index = restrict::column_index(table, ident.as_str())?;
    let ty = &restrict::column(table, ident.as_str())?.ty;
    let (key_ty, marker_name) = element_type(ident, ty, "Element")?;
    let out_ty = match ty.unfrozen() {
        DataType::Map(_, v) => (**v).clone(),
        _ => key_ty.clone(),
    };
    Ok((
        format!("{}[{key}]", ident.as_str()),
        (&out_ty).into(),
        Expr::Element(index, key_of(key, &key_ty, &marker_name)?),
    ))
}

/// `column[from..to]`.
pub(super) fn slice_selector(
    table: &TableMeta,
    ident: &Ident,
    from: Option<&Term>,
    to: Option<&Term>,
) -> Result<(String, ColumnType, Expr), ErrorResponse> {
    let index = restrict::column_index(table, ident.as_str())?;
    let ty = &restrict::column(table, ident.as_str())?.ty;
    let (key_ty, marker_name) = element_type(ident, ty, "Slice")?;
    let bound = |t: Option<&Term>| t.map(|t| key_of(t, &key_ty, &marker_name)).transpose();
    let shown = |t: Option<&Term>| t.map(Term::to_string).unwrap_or_default();
    Ok((
        format!("{}[{}..{}]", ident.as_str(), shown(from), shown(to)),
        ty.into(),
        Expr::Slice {
            column: index,
            from: bound(from)?,
            to: bound(to)?,
            multi_cell: ty.is_multi_cell(),
        },
    ))
}

/// The output columns with every bound key resolved from `ctx`'s values (the same columns
/// when none is bound).
pub(super) fn bind(
    columns: Arc<[OutColumn]>,
    ctx: &EvalContext<'_>,
) -> Result<Arc<[OutColumn]>, ErrorResponse> {
    let bound = |k: &ElementKey| matches!(k, ElementKey::Bind { .. });
    let needs = columns.iter().any(|c| match &c.expr {
        Expr::Element(_, k) => bound(k),
        Expr::Slice { from, to, .. } => from.iter().chain(to.iter()).any(bound),
        _ => false,
    });
    if !needs {
        return Ok(columns);
    }
    let resolve = |k: &ElementKey, slice: bool| -> Result<ElementKey, ErrorResponse> {
        let ElementKey::Bind { marker, ty, name } = k else {
            return Ok(k.clone());
        };
        match ctx.bindings.get(marker)? {
            Value::Bytes(b) => Ok(ElementKey::Value(
                crate::processor::values::decode_bound_of(b, ty, name)?,
            )),
            Value::Unset if slice => Ok(ElementKey::Unbounded),
            _ => Err(invalid(format!("Invalid null value for {name}"))),
        }
    };
    columns
        .iter()
        .map(|c| {
            let expr = match &c.expr {
                Expr::Element(i, k) => Expr::Element(*i, resolve(k, false)?),
                Expr::Slice {
                    column,
                    from,
                    to,
                    multi_cell,
                } => Expr::Slice {
                    column: *column,
                    from: from.as_ref().map(|k| resolve(k, true)).transpose()?,
                    to: to.as_ref().map(|k| resolve(k, true)).transpose()?,
                    multi_cell: *multi_cell,
                },
                other => other.clone(),
            };
            Ok(OutColumn {
                name: c.name.clone(),
                ty: c.ty.clone(),
                expr,
            })
        })
        .collect()
}

fn same(a: &CqlValue, b: &CqlValue) -> bool {
    a.cql_cmp(b) == Some(Ordering::Equal)
}

/// `column[key]` of a row whose column holds `value`.
pub(super) fn element(value: Option<CqlValue>, key: &ElementKey) -> Option<Bytes> {
    let key = key.value()?;
    let found = match value? {
        CqlValue::Set(items) => items.into_iter().find(|v| same(v, key)),
        CqlValue::Map(entries) => entries
            .into_iter()
            .find(|(k, _)| same(k, key))
            .map(|(_, v)| v),
        _ => None,
    };
    found.map(|v| Bytes::from(v.to_cql_bytes()))
}

/// `column[from..to]` of a row whose column holds `value`. As Cassandra: a non-frozen
/// collection selects the cells in the range (none is null); a frozen one is null when no
/// element reaches `from`, else the (possibly empty) elements up to `to`.
pub(super) fn slice(
    value: Option<CqlValue>,
    from: Option<&ElementKey>,
    to: Option<&ElementKey>,
    multi_cell: bool,
) -> Option<Bytes> {
    let from = from.and_then(ElementKey::value);
    let to = to.and_then(ElementKey::value);
    let after_from = |k: &CqlValue| from.is_none_or(|f| k.cql_cmp(f) != Some(Ordering::Less));
    let before_to = |k: &CqlValue| to.is_none_or(|t| k.cql_cmp(t) != Some(Ordering::Greater));
    let (reached, out) = match value? {
        CqlValue::Set(items) => {
            let reached = items.iter().any(after_from);
            let kept: Vec<CqlValue> = items
                .into_iter()
                .filter(|k| after_from(k) && before_to(k))
                .collect();
            (reached, (!kept.is_empty(), CqlValue::Set(kept)))
        }
        CqlValue::Map(entries) => {
            let reached = entries.iter().any(|(k, _)| after_from(k));
            let kept: Vec<(CqlValue, CqlValue)> = entries
                .into_iter()
                .filter(|(k, _)| after_from(k) && before_to(k))
                .collect();
            (reached, (!kept.is_empty(), CqlValue::Map(kept)))
        }
        _ => return None,
    };
    let (non_empty, out) = out;
    let selected = if multi_cell { non_empty } else { reached };
    selected.then(|| Bytes::from(out.to_cql_bytes()))
}
