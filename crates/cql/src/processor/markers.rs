//! PREPARE metadata: the name and type of every bind marker, the partition-key marker
//! indexes drivers route by (`pk_indexes`), and the result columns of a SELECT.
//!
//! A marker takes the type of the place it stands in, named as Cassandra names them: the
//! column's name, `in(col)` for `IN ?`, `[ttl]`, `[timestamp]`, `[limit]`,
//! `[per_partition_limit]` and `partition key token`.

use mosaic_types::{CqlType, DataType};

use crate::ast::{
    AssignOp, ConditionOp, ConditionTarget, Conditions, InValues, IntValue, Operator, Relation,
    Statement, Term, Using,
};
use crate::frame::{ColumnSpec, ColumnType, ErrorResponse, RowsMetadata};
use crate::schema::{Catalog, ColumnKind, ColumnMeta, TableMeta};

use super::{invalid, restrict, Exec};

/// Marker specs by index, pk indexes, and the result metadata of a SELECT.
pub(crate) type PreparedShape = (Vec<ColumnSpec>, Vec<u16>, Option<RowsMetadata>);

/// Computes the [`PreparedShape`] of a statement.
pub(crate) fn prepared_metadata(
    catalog: &Catalog,
    exec: &Exec<'_>,
    statement: &Statement,
) -> Result<PreparedShape, ErrorResponse> {
    let mut specs: Vec<(usize, ColumnSpec)> = Vec::new();
    let mut pk_markers: Vec<(usize, usize)> = Vec::new();
    let mut result = None;
    let mut pk_len = 0;
    match statement {
        Statement::Select(s) => {
            let keyspace = exec.keyspace_of(&s.table)?;
            if crate::system::is_system_keyspace(keyspace) {
                let mut qualified = s.clone();
                qualified.table.keyspace = Some(crate::ast::Ident::new(keyspace));
                let (columns, binds) = crate::system::prepare(&qualified)?;
                return Ok((binds, Vec::new(), Some(RowsMetadata::new(columns))));
            }
            let table = exec.table(catalog, &s.table)?;
            pk_len = table.partition_key().len();
            relations(&table, &s.where_clause, &mut specs, &mut pk_markers)?;
            int_marker(
                &table,
                s.per_partition_limit.as_ref(),
                "[per_partition_limit]",
                CqlType::Int,
                &mut specs,
            );
            int_marker(
                &table,
                s.limit.as_ref(),
                "[limit]",
                CqlType::Int,
                &mut specs,
            );
            selection_markers(&table, &s.selection, &mut specs)?;
            let columns = super::select::output_columns(&table, s)?
                .iter()
                .map(|c| ColumnSpec::new(&table.keyspace, &table.name, &c.name, c.ty.clone()))
                .collect();
            result = Some(RowsMetadata::new(super::json::result_specs(
                &table, s, columns,
            )));
        }
        Statement::Insert(_) | Statement::Update(_) | Statement::Delete(_) => {
            pk_len = modification(catalog, exec, statement, &mut specs, &mut pk_markers)?;
        }
        Statement::Batch(b) => {
            for m in &b.statements {
                let st = match m.clone() {
                    crate::ast::ModificationStatement::Insert(s) => Statement::Insert(s),
                    crate::ast::ModificationStatement::Update(s) => Statement::Update(s),
                    crate::ast::ModificationStatement::Delete(s) => Statement::Delete(s),
                };
                let mut ignored = Vec::new();
                modification(catalog, exec, &st, &mut specs, &mut ignored)?;
            }
            if let Some(IntValue::Bind(m)) = &b.timestamp {
                specs.push((
                    m.index,
                    ColumnSpec::new("", "", "[timestamp]", CqlType::BigInt),
                ));
            }
        }
        Statement::Describe(d) => {
            let columns = super::describe::result_columns(d, exec.keyspace);
            return Ok((Vec::new(), Vec::new(), Some(RowsMetadata::new(columns))));
        }
        _ => {
            if !statement.bind_markers().is_empty() {
                return Err(invalid(
                    "Bind variables are not allowed in schema statements",
                ));
            }
        }
    }
    let out = specs_by_index(specs, statement.bind_markers().len())?;
    Ok((out, pk_indexes(&pk_markers, pk_len), result))
}

/// The marker specs in marker order; every marker must have one.
fn specs_by_index(
    mut specs: Vec<(usize, ColumnSpec)>,
    count: usize,
) -> Result<Vec<ColumnSpec>, ErrorResponse> {
    specs.sort_by_key(|(i, _)| *i);
    let mut out: Vec<ColumnSpec> = Vec::with_capacity(count);
    for index in 0..count {
        match specs.iter().find(|(i, _)| *i == index) {
            Some((_, spec)) => out.push(spec.clone()),
            None => {
                return Err(invalid(format!(
                    "Unsupported position for bind marker {index}"
                )))
            }
        }
    }
    Ok(out)
}

/// `pk_indexes`: one marker per partition key column, in key order, or none at all (a
/// driver then cannot route the statement by token).
fn pk_indexes(pk_markers: &[(usize, usize)], pk_len: usize) -> Vec<u16> {
    let mut pk_indexes = Vec::with_capacity(pk_len);
    for position in 0..pk_len {
        let marker = pk_markers
            .iter()
            .find(|(p, _)| *p == position)
            .and_then(|(_, m)| u16::try_from(*m).ok());
        match marker {
            Some(m) => pk_indexes.push(m),
            None => return Vec::new(),
        }
    }
    pk_indexes
}

fn spec(table: &TableMeta, name: &str, ty: impl Into<ColumnType>) -> ColumnSpec {
    ColumnSpec::new(&table.keyspace, &table.name, name, ty)
}

fn int_marker(
    table: &TableMeta,
    v: Option<&IntValue>,
    name: &str,
    ty: CqlType,
    specs: &mut Vec<(usize, ColumnSpec)>,
) {
    if let Some(IntValue::Bind(m)) = v {
        specs.push((m.index, spec(table, name, ty)));
    }
}

fn using(table: &TableMeta, u: &Using, specs: &mut Vec<(usize, ColumnSpec)>) {
    int_marker(table, u.ttl.as_ref(), "[ttl]", CqlType::Int, specs);
    int_marker(
        table,
        u.timestamp.as_ref(),
        "[timestamp]",
        CqlType::BigInt,
        specs,
    );
}

/// Markers of a term standing for column `name` of type `ty` (inside collection and
/// tuple literals, for their elements).
/// Markers of a value of column `col`: a marker standing for a whole counter is a
/// `counter`, as Cassandra types it.
fn column_term(
    table: &TableMeta,
    col: &ColumnMeta,
    t: &Term,
    specs: &mut Vec<(usize, ColumnSpec)>,
) -> Result<(), ErrorResponse> {
    match t {
        Term::Bind(m) if table.is_counter_column(col) => {
            let name = m.name.as_ref().map_or(col.name.as_str(), |n| n.as_str());
            specs.push((m.index, spec(table, name, ColumnType::Counter)));
            Ok(())
        }
        _ => term(table, t, &col.name, &col.ty, specs),
    }
}

fn term(
    table: &TableMeta,
    t: &Term,
    name: &str,
    ty: &DataType,
    specs: &mut Vec<(usize, ColumnSpec)>,
) -> Result<(), ErrorResponse> {
    // Cassandra refuses a marker standing for an element of a collection literal (bind
    // the whole collection instead); a marker inside a tuple or a UDT literal is fine.
    let literal_kind = match t {
        Term::List(items) if items.iter().any(|i| matches!(i, Term::Bind(_))) => Some("list"),
        Term::Set(items) if items.iter().any(|i| matches!(i, Term::Bind(_))) => Some("set"),
        Term::Map(entries)
            if entries
                .iter()
                .any(|(k, v)| matches!(k, Term::Bind(_)) || matches!(v, Term::Bind(_))) =>
        {
            Some("map")
        }
        _ => None,
    };
    if let Some(kind) = literal_kind {
        if matches!(
            ty.unfrozen(),
            DataType::List(_) | DataType::Set(_) | DataType::Map(..)
        ) {
            return Err(invalid(format!(
                "Invalid {kind} literal for {name}: bind variables are not supported inside collection literals"
            )));
        }
    }
    match t {
        Term::Bind(m) => specs.push((
            m.index,
            spec(table, m.name.as_ref().map_or(name, |n| n.as_str()), ty),
        )),
        Term::Call { name: func, args } if func.as_str() == "token" => {
            for (arg, col) in args.iter().zip(table.partition_key()) {
                term(table, arg, &col.name, &col.ty, specs)?;
            }
        }
        // Cassandra names a function's markers by position: `arg0(system.fromjson)`.
        Term::Call { name: func, args } if func.as_str() == "fromjson" => {
            for arg in args {
                term(
                    table,
                    arg,
                    "arg0(system.fromjson)",
                    &CqlType::Text.into(),
                    specs,
                )?;
            }
        }
        Term::Call { args, .. } => {
            for arg in args {
                term(table, arg, name, &CqlType::Timestamp.into(), specs)?;
            }
        }
        Term::List(items) | Term::Set(items) => {
            if let DataType::List(e) | DataType::Set(e) = ty.unfrozen() {
                for item in items {
                    term(table, item, name, e, specs)?;
                }
            }
        }
        Term::Map(entries) => {
            if let DataType::Map(k, v) = ty.unfrozen() {
                for (kt, vt) in entries {
                    term(table, kt, name, k, specs)?;
                    term(table, vt, name, v, specs)?;
                }
            }
        }
        Term::Tuple(items) => {
            if let DataType::Tuple(fields) = ty.unfrozen() {
                // Cassandra names a tuple literal's markers by position: `tu[0]`, `tu[1]`.
                for (i, (item, field)) in items.iter().zip(fields).enumerate() {
                    term(table, item, &format!("{name}[{i}]"), field, specs)?;
                }
            }
        }
        Term::Udt(entries) => {
            if let DataType::Udt(u) = ty.unfrozen() {
                for (field, item) in entries {
                    if let Some((_, field_ty)) = u.fields.iter().find(|(n, _)| n == field.as_str())
                    {
                        term(table, item, field.as_str(), field_ty, specs)?;
                    }
                }
            }
        }
        Term::Literal(_) => {}
    }
    Ok(())
}

/// The element type of a collection and the name Cassandra gives a marker for it: `key(m)`
/// / `value(m)` for maps, `idx(l)` / `value(l)` for lists.
fn element_marker(col: &ColumnMeta, key: bool) -> Option<(String, DataType)> {
    let name = &col.name;
    Some(match (col.ty.unfrozen(), key) {
        (DataType::Map(k, _), true) => (format!("key({name})"), (**k).clone()),
        (DataType::Map(_, v), false) => (format!("value({name})"), (**v).clone()),
        (DataType::List(_), true) => (format!("idx({name})"), CqlType::Int.into()),
        (DataType::List(e), false) | (DataType::Set(e), false) => {
            (format!("value({name})"), (**e).clone())
        }
        (DataType::Set(e), true) => (format!("key({name})"), (**e).clone()),
        _ => return None,
    })
}

fn relations(
    table: &TableMeta,
    rels: &[Relation],
    specs: &mut Vec<(usize, ColumnSpec)>,
    pk_markers: &mut Vec<(usize, usize)>,
) -> Result<(), ErrorResponse> {
    for r in rels {
        match r {
            Relation::Compare { column, op, value } => {
                let col = restrict::column(table, column.as_str())?;
                column_term(table, col, value, specs)?;
                if let (Operator::Eq, Term::Bind(m), ColumnKind::PartitionKey { position }) =
                    (op, value, col.kind)
                {
                    pk_markers.push((position, m.index));
                }
            }
            Relation::In { column, values } => {
                let col = restrict::column(table, column.as_str())?;
                match values {
                    InValues::List(terms) => {
                        for t in terms {
                            column_term(table, col, t, specs)?;
                        }
                    }
                    InValues::Bind(m) => specs.push((
                        m.index,
                        spec(
                            table,
                            &m.name.as_ref().map_or_else(
                                || format!("in({})", col.name),
                                |n| n.as_str().to_owned(),
                            ),
                            ColumnType::List(Box::new(table.wire_type(col))),
                        ),
                    )),
                }
            }
            Relation::MultiColumn { columns, value, .. } => {
                multi_column(table, columns, value, specs)?
            }
            Relation::MultiColumnIn { columns, values } => {
                // The columns must exist whatever the values are.
                for c in columns {
                    restrict::column(table, c.as_str())?;
                }
                if let InValues::List(terms) = values {
                    for t in terms {
                        multi_column_tuple(table, columns, t, "tuple", specs)?;
                    }
                }
            }
            Relation::Token { value, .. } => match value {
                Term::Bind(m) => {
                    specs.push((m.index, spec(table, "partition key token", CqlType::BigInt)))
                }
                other => term(
                    table,
                    other,
                    "partition key token",
                    &CqlType::BigInt.into(),
                    specs,
                )?,
            },
            Relation::Contains { column, key, value } => {
                let col = restrict::column(table, column.as_str())?;
                if let Some((name, ty)) = element_marker(col, *key) {
                    term(table, value, &name, &ty, specs)?;
                }
            }
            Relation::Element {
                column, key, value, ..
            } => {
                let col = restrict::column(table, column.as_str())?;
                for (t, is_key) in [(key, true), (value, false)] {
                    if let Some((name, ty)) = element_marker(col, is_key) {
                        term(table, t, &name, &ty, specs)?;
                    }
                }
            }
        }
    }
    Ok(())
}

/// Markers in the selection: the key of `m[?]` (`key(m)`), the element of `s[?]`
/// (`value(s)`), and both bounds of a slice.
fn selection_markers(
    table: &TableMeta,
    selection: &crate::ast::Selection,
    specs: &mut Vec<(usize, ColumnSpec)>,
) -> Result<(), ErrorResponse> {
    let crate::ast::Selection::Selectors(selectors) = selection else {
        return Ok(());
    };
    for selector in selectors {
        let (column, terms) = match &selector.expr {
            crate::ast::SelectorExpr::Element(c, t) => (c, vec![t]),
            crate::ast::SelectorExpr::Slice(c, from, to) => {
                (c, from.iter().chain(to.iter()).collect())
            }
            _ => continue,
        };
        let col = restrict::column(table, column.as_str())?;
        let is_map = matches!(col.ty.unfrozen(), DataType::Map(..));
        if let Some((name, ty)) = element_marker(col, is_map) {
            for t in terms {
                term(table, t, &name, &ty, specs)?;
            }
        }
    }
    Ok(())
}

/// Markers of `(c1, c2) op value`: per element of a tuple, or one marker for the whole
/// tuple (named after the columns).
fn multi_column(
    table: &TableMeta,
    columns: &[crate::ast::Ident],
    value: &Term,
    specs: &mut Vec<(usize, ColumnSpec)>,
) -> Result<(), ErrorResponse> {
    let names = columns
        .iter()
        .map(|c| c.as_str())
        .collect::<Vec<_>>()
        .join(",");
    multi_column_tuple(table, columns, value, &format!("({names})"), specs)
}

/// Markers of one tuple of a multi-column relation: per element, or one marker named
/// `whole_name` for the whole tuple.
fn multi_column_tuple(
    table: &TableMeta,
    columns: &[crate::ast::Ident],
    value: &Term,
    whole_name: &str,
    specs: &mut Vec<(usize, ColumnSpec)>,
) -> Result<(), ErrorResponse> {
    let cols: Vec<_> = columns
        .iter()
        .map(|c| restrict::column(table, c.as_str()))
        .collect::<Result<_, _>>()?;
    match value {
        Term::Tuple(items) => {
            for (t, c) in items.iter().zip(&cols) {
                term(table, t, &c.name, &c.ty, specs)?;
            }
        }
        Term::Bind(m) => specs.push((
            m.index,
            spec(
                table,
                whole_name,
                ColumnType::Tuple(cols.iter().map(|c| (&c.ty).into()).collect()),
            ),
        )),
        _ => {}
    }
    Ok(())
}

/// Markers of an INSERT, UPDATE or DELETE; returns the partition key length.
fn modification(
    catalog: &Catalog,
    exec: &Exec<'_>,
    statement: &Statement,
    specs: &mut Vec<(usize, ColumnSpec)>,
    pk_markers: &mut Vec<(usize, usize)>,
) -> Result<usize, ErrorResponse> {
    // What Cassandra refuses on counter tables it refuses at PREPARE.
    super::write::counter_table(catalog, exec, statement)?;
    match statement {
        Statement::Insert(s) => {
            let table = exec.table(catalog, &s.table)?;
            for (ident, value) in s.columns.iter().zip(&s.values) {
                let col = restrict::column(&table, ident.as_str())?;
                term(&table, value, &col.name, &col.ty, specs)?;
                if let (Term::Bind(m), ColumnKind::PartitionKey { position }) = (value, col.kind) {
                    pk_markers.push((position, m.index));
                }
            }
            if let Some(Term::Bind(m)) = s.json.as_ref().map(|j| &j.value) {
                let name = m.name.as_ref().map_or("[json]", |n| n.as_str());
                specs.push((
                    m.index,
                    ColumnSpec::new(&table.keyspace, &table.name, name, CqlType::Text),
                ));
            }
            using(&table, &s.using, specs);
            Ok(table.partition_key().len())
        }
        Statement::Update(s) => {
            let table = exec.table(catalog, &s.table)?;
            using(&table, &s.using, specs);
            for a in &s.assignments {
                let col = restrict::column(&table, a.column.as_str())?;
                if let Some(field) = &a.field {
                    if let Ok(field_ty) =
                        super::collections::field_type(&col.ty, &col.name, field.as_str())
                    {
                        term(&table, &a.value, field.as_str(), &field_ty, specs)?;
                    }
                    continue;
                }
                match &a.element {
                    Some(element) => {
                        if let Some((name, ty)) = element_marker(col, true) {
                            term(&table, element, &name, &ty, specs)?;
                        }
                        if let Some((name, ty)) = element_marker(col, false) {
                            term(&table, &a.value, &name, &ty, specs)?;
                        }
                    }
                    None if table.is_counter_column(col) => {
                        column_term(&table, col, &a.value, specs)?
                    }
                    None => {
                        // `m = m - {k}` removes keys: a set of the key type.
                        let ty = match (a.op, col.ty.unfrozen()) {
                            (AssignOp::Remove, DataType::Map(k, _)) => DataType::Set(k.clone()),
                            _ => col.ty.clone(),
                        };
                        term(&table, &a.value, &col.name, &ty, specs)?;
                    }
                }
            }
            relations(&table, &s.where_clause, specs, pk_markers)?;
            conditions(&table, s.conditions.as_ref(), specs)?;
            Ok(table.partition_key().len())
        }
        Statement::Delete(s) => {
            let table = exec.table(catalog, &s.table)?;
            int_marker(
                &table,
                s.timestamp.as_ref(),
                "[timestamp]",
                CqlType::BigInt,
                specs,
            );
            for d in &s.columns {
                let col = restrict::column(&table, d.column.as_str())?;
                if let (Some(element), Some((name, ty))) = (&d.element, element_marker(col, true)) {
                    term(&table, element, &name, &ty, specs)?;
                }
            }
            relations(&table, &s.where_clause, specs, pk_markers)?;
            conditions(&table, s.conditions.as_ref(), specs)?;
            Ok(table.partition_key().len())
        }
        _ => Ok(0),
    }
}

/// Markers of `IF cond AND …`, named as Cassandra names them: the column (`in(v)` for `IN
/// ?`), `key(m)`/`value(m)` and `idx(l)`/`value(l)` for elements, `a.f` for fields.
fn conditions(
    table: &TableMeta,
    conditions: Option<&Conditions>,
    specs: &mut Vec<(usize, ColumnSpec)>,
) -> Result<(), ErrorResponse> {
    let Some(Conditions::Columns(all)) = conditions else {
        return Ok(());
    };
    for c in all {
        let shape = super::write::condition_shape(table, c)?;
        if let (ConditionTarget::Element(t), Some((name, ty))) = (&c.target, &shape.element) {
            term(table, t, name, ty, specs)?;
        }
        let (name, ty) = &shape.value;
        match &c.op {
            ConditionOp::Compare(_, t) | ConditionOp::Contains { value: t, .. } => {
                term(table, t, name, ty, specs)?
            }
            ConditionOp::In(InValues::List(terms)) => {
                for t in terms {
                    term(table, t, name, ty, specs)?;
                }
            }
            ConditionOp::In(InValues::Bind(m)) => specs.push((
                m.index,
                spec(
                    table,
                    &m.name
                        .as_ref()
                        .map_or_else(|| format!("in({name})"), |n| n.as_str().to_owned()),
                    ColumnType::List(Box::new(ty.into())),
                ),
            )),
        }
    }
    Ok(())
}
