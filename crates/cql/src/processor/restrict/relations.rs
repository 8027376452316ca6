//! One step per kind of WHERE relation, each adding to the key restrictions and to the
//! predicates rows are filtered by, with Cassandra's refusals.

use super::*;

pub(super) fn token_of_term(
    term: &Term,
    ctx: &EvalContext<'_>,
    table: &TableMeta,
) -> Result<Token, ErrorResponse> {
    if let Term::Call { name, args } = term {
        if name.as_str() == "token" {
            let pk = table.partition_key();
            if args.len() != pk.len() {
                return Err(invalid("Invalid number of arguments to token()"));
            }
            let mut values = Vec::with_capacity(args.len());
            for (arg, col) in args.iter().zip(&pk) {
                values.push(
                    eval(arg, &col.ty, &col.name, ctx)?
                        .required(&format!("partition key part {}", col.name))?,
                );
            }
            return table
                .key_schema()
                .token_of(&values)
                .map_err(|e| invalid(format!("Invalid partition key: {e}")));
        }
    }
    match eval_native(term, CqlType::BigInt, "partition key token", ctx)?.required("token")? {
        CqlValue::BigInt(t) => Ok(Token(t)),
        _ => Err(invalid("Invalid token value")),
    }
}

pub(super) fn merge_slice(
    existing: Option<ColumnRestriction>,
    op: Operator,
    value: CqlValue,
    column: &str,
) -> Result<ColumnRestriction, ErrorResponse> {
    let (mut lower, mut upper) = match existing {
        None => (None, None),
        Some(ColumnRestriction::Slice { lower, upper }) => (lower, upper),
        Some(ColumnRestriction::Values(_)) => {
            return Err(invalid(format!(
                "Column \"{column}\" cannot be restricted by both an equality and an inequality relation"
            )))
        }
    };
    match op {
        Operator::Gt | Operator::Ge => {
            if lower.is_some() {
                return Err(invalid(format!(
                    "More than one restriction was found for the start bound on {column}"
                )));
            }
            lower = Some((value, op == Operator::Ge));
        }
        Operator::Lt | Operator::Le => {
            if upper.is_some() {
                return Err(invalid(format!(
                    "More than one restriction was found for the end bound on {column}"
                )));
            }
            upper = Some((value, op == Operator::Le));
        }
        Operator::Eq | Operator::Ne => {}
    }
    Ok(ColumnRestriction::Slice { lower, upper })
}

pub(super) fn set_values(
    slot: &mut Option<ColumnRestriction>,
    values: Vec<CqlValue>,
    column: &str,
) -> Result<(), ErrorResponse> {
    if slot.is_some() {
        return Err(invalid(format!(
            "{column} cannot be restricted by more than one relation if it includes an Equal"
        )));
    }
    let mut unique: Vec<CqlValue> = Vec::with_capacity(values.len());
    for v in values {
        if !unique.contains(&v) {
            unique.push(v);
        }
    }
    *slot = Some(ColumnRestriction::Values(unique));
    Ok(())
}
/// `column op value` on one column: a partition-key or clustering slot, or a filter.
pub(super) fn add_compare(
    r: &mut Restrictions,
    table: &TableMeta,
    column: &Ident,
    op: &Operator,
    value: &Term,
    ctx: &EvalContext<'_>,
) -> Result<(), ErrorResponse> {
    let name = column.as_str();
    let index = column_index(table, name)?;
    let col = table
        .columns
        .get(index)
        .ok_or_else(|| invalid("bad column"))?;
    if *op == Operator::Ne {
        return Err(invalid(format!(
            "Unsupported \"!=\" relation: {name} != {value}"
        )));
    }
    if col.ty == DataType::Native(CqlType::Duration) && *op != Operator::Eq {
        return Err(invalid(
            "Slice restrictions are not supported on duration columns",
        ));
    }
    if col.ty.is_multi_cell() {
        return Err(invalid(format!(
            "Collection column '{name}' ({}) cannot be restricted by a '{op}' relation",
            col.ty
        )));
    }
    let v = eval(value, &col.ty, name, ctx)?
        .required(name)
        .map_err(|_| invalid(format!("Invalid null value in condition for column {name}")))?;
    r.predicates.push(Predicate::Column {
        column: index,
        op: *op,
        values: vec![v.clone()],
    });
    match col.kind {
        ColumnKind::PartitionKey { position } => {
            let slot = r
                .partition
                .get_mut(position)
                .ok_or_else(|| invalid("bad key"))?;
            if *op == Operator::Eq {
                set_values(slot, vec![v], name)?;
            } else {
                *slot = Some(merge_slice(slot.take(), *op, v, name)?);
            }
        }
        ColumnKind::Clustering { position, .. } => {
            let slot = r
                .clustering
                .get_mut(position)
                .ok_or_else(|| invalid("bad key"))?;
            if *op == Operator::Eq {
                set_values(slot, vec![v], name)?;
            } else {
                *slot = Some(merge_slice(slot.take(), *op, v, name)?);
            }
        }
        ColumnKind::Static | ColumnKind::Regular => r.on_regular.push(name.to_owned()),
    }
    Ok(())
}

/// `column IN (…)`: the key slot's values (refused on other columns).
pub(super) fn add_in(
    r: &mut Restrictions,
    table: &TableMeta,
    column: &Ident,
    values: &InValues,
    ctx: &EvalContext<'_>,
) -> Result<(), ErrorResponse> {
    let name = column.as_str();
    let index = column_index(table, name)?;
    let col = table
        .columns
        .get(index)
        .ok_or_else(|| invalid("bad column"))?;
    if col.ty.is_multi_cell() {
        return Err(invalid(format!(
            "Collection column '{name}' ({}) cannot be restricted by a 'IN' relation",
            col.ty
        )));
    }
    let list = eval_in_list(values, &col.ty, name, ctx)?;
    r.predicates.push(Predicate::Column {
        column: index,
        op: Operator::Eq,
        values: list.clone(),
    });
    match col.kind {
        ColumnKind::PartitionKey { position } => {
            let slot = r
                .partition
                .get_mut(position)
                .ok_or_else(|| invalid("bad key"))?;
            set_values(slot, list, name)?;
        }
        ColumnKind::Clustering { position, .. } => {
            let slot = r
                .clustering
                .get_mut(position)
                .ok_or_else(|| invalid("bad key"))?;
            set_values(slot, list, name)?;
        }
        // A filter, as Cassandra 4 allows with ALLOW FILTERING.
        ColumnKind::Static | ColumnKind::Regular => r.on_regular.push(name.to_owned()),
    }
    Ok(())
}

/// `token(pk…) op value`: one bound of the scan's token range (one relation per side,
/// or `=` alone, as Cassandra requires).
pub(super) fn add_token(
    r: &mut Restrictions,
    table: &TableMeta,
    columns: &[Ident],
    op: &Operator,
    value: &Term,
    ctx: &EvalContext<'_>,
) -> Result<(), ErrorResponse> {
    let pk: Vec<&str> = table
        .partition_key()
        .iter()
        .map(|c| c.name.as_str())
        .collect();
    let given: Vec<&str> = columns.iter().map(|c| c.as_str()).collect();
    if pk != given {
        return Err(invalid(format!(
            "The token function arguments must be in the partition key order: {}",
            pk.join(", ")
        )));
    }
    let t = token_of_term(value, ctx, table)?;
    // As Cassandra: one relation per side, and `=` alone, so the range is
    // exactly the tokens the relations accept (scans size their reads by it).
    let names = pk.join(", ");
    let had_eq = r.predicates.iter().any(|p| {
        matches!(
            p,
            Predicate::Token {
                op: Operator::Eq,
                ..
            }
        )
    });
    if had_eq {
        return Err(invalid(format!(
            "{names} cannot be restricted by more than one relation if it includes an Equal"
        )));
    }
    if *op == Operator::Eq && r.token.is_some() {
        return Err(invalid(format!(
            "Columns \"{names}\" cannot be restricted by both an equality and an inequality relation"
        )));
    }
    r.predicates.push(Predicate::Token { op: *op, value: t });
    let (mut lo, mut hi) = r
        .token
        .take()
        .unwrap_or((Bound::Unbounded, Bound::Unbounded));
    let side = match op {
        Operator::Gt | Operator::Ge if !matches!(lo, Bound::Unbounded) => Some("start"),
        Operator::Lt | Operator::Le if !matches!(hi, Bound::Unbounded) => Some("end"),
        _ => None,
    };
    if let Some(side) = side {
        return Err(invalid(format!(
            "More than one restriction was found for the {side} bound on {names}"
        )));
    }
    match op {
        Operator::Gt => lo = Bound::Excluded(t),
        Operator::Ge => lo = Bound::Included(t),
        Operator::Lt => hi = Bound::Excluded(t),
        Operator::Le => hi = Bound::Included(t),
        Operator::Eq => {
            lo = Bound::Included(t);
            hi = Bound::Included(t);
        }
        Operator::Ne => {
            return Err(invalid("Unsupported \"!=\" relation on token"));
        }
    }
    r.token = Some((lo, hi));
    Ok(())
}

/// `(c1, c2) op (v1, v2)`: an equality or one bound of a clustering slice.
pub(super) fn add_multi(
    r: &mut Restrictions,
    table: &TableMeta,
    columns: &[Ident],
    op: &Operator,
    value: &Term,
    ctx: &EvalContext<'_>,
) -> Result<(), ErrorResponse> {
    let (indexes, types, orders, first) = multi_columns(table, columns)?;
    let tuple = eval_tuple(value, &types, columns, ctx)?;
    r.predicates.push(Predicate::Tuple {
        columns: indexes,
        orders,
        op: *op,
        values: vec![tuple.clone()],
    });
    let restriction = match (op, r.multi.take()) {
        (Operator::Eq, None) => MultiRestriction::Values(vec![tuple]),
        (Operator::Ne, _) => return Err(invalid("Unsupported \"!=\" relation on a tuple")),
        (Operator::Eq, Some(_)) => {
            return Err(invalid("Clustering columns may not be restricted by more than one multi-column relation if one is an equality"))
        }
        (_, existing) => {
            let (mut lower, mut upper) = match existing {
                None => (None, None),
                Some((_, MultiRestriction::Slice { lower, upper })) => (lower, upper),
                Some((_, MultiRestriction::Values(_))) => {
                    return Err(invalid("Clustering columns may not be restricted by both an equality and an inequality relation"))
                }
            };
            if matches!(op, Operator::Gt | Operator::Ge) {
                lower = Some((tuple, *op == Operator::Ge));
            } else {
                upper = Some((tuple, *op == Operator::Le));
            }
            MultiRestriction::Slice { lower, upper }
        }
    };
    r.multi = Some((first, restriction));
    Ok(())
}

/// `(c1, c2) IN ((…), (…))`: clustering prefixes.
pub(super) fn add_multi_in(
    r: &mut Restrictions,
    table: &TableMeta,
    columns: &[Ident],
    values: &InValues,
    ctx: &EvalContext<'_>,
) -> Result<(), ErrorResponse> {
    let (indexes, types, orders, first) = multi_columns(table, columns)?;
    let tuples = match values {
        crate::ast::InValues::List(terms) => terms
            .iter()
            .map(|t| eval_tuple(t, &types, columns, ctx))
            .collect::<Result<Vec<_>, _>>()?,
        crate::ast::InValues::Bind(_) => {
            return Err(invalid(
                "Multi-column IN with a single bind marker is not supported; bind each tuple",
            ))
        }
    };
    r.predicates.push(Predicate::Tuple {
        columns: indexes,
        orders,
        op: Operator::Eq,
        values: tuples.clone(),
    });
    if r.multi.is_some() {
        return Err(invalid("Clustering columns may not be restricted by more than one multi-column relation if one is an IN"));
    }
    r.multi = Some((first, MultiRestriction::Values(tuples)));
    Ok(())
}

pub(super) type MultiColumns = (Vec<usize>, Vec<DataType>, Vec<ClusteringOrder>, usize);

pub(super) fn multi_columns(
    table: &TableMeta,
    columns: &[crate::ast::Ident],
) -> Result<MultiColumns, ErrorResponse> {
    let mut indexes = Vec::new();
    let mut types = Vec::new();
    let mut orders = Vec::new();
    let mut first = None;
    for (i, ident) in columns.iter().enumerate() {
        let index = column_index(table, ident.as_str())?;
        let col = table
            .columns
            .get(index)
            .ok_or_else(|| invalid("bad column"))?;
        let ColumnKind::Clustering { position, order } = col.kind else {
            return Err(invalid(format!(
                "Multi-column relations can only be applied to clustering columns but was applied to: {}",
                ident.as_str()
            )));
        };
        let start = *first.get_or_insert(position);
        if position != start + i {
            return Err(invalid(format!(
                "Clustering columns must appear in the PRIMARY KEY order in multi-column relations: {}",
                columns.iter().map(|c| c.as_str()).collect::<Vec<_>>().join(", ")
            )));
        }
        indexes.push(index);
        types.push(col.ty.clone());
        orders.push(order);
    }
    Ok((indexes, types, orders, first.unwrap_or(0)))
}

pub(super) fn eval_tuple(
    term: &Term,
    types: &[DataType],
    columns: &[crate::ast::Ident],
    ctx: &EvalContext<'_>,
) -> Result<Vec<CqlValue>, ErrorResponse> {
    match term {
        Term::Tuple(items) => {
            if items.len() != types.len() {
                return Err(invalid(format!(
                    "Expected {} elements in value tuple, but got {}",
                    types.len(),
                    items.len()
                )));
            }
            items
                .iter()
                .zip(types)
                .zip(columns)
                .map(|((t, ty), c)| eval(t, ty, c.as_str(), ctx)?.required(c.as_str()))
                .collect()
        }
        Term::Bind(marker) => {
            let Some(bytes) = ctx.bindings.raw().get(marker.index).cloned().flatten() else {
                return Err(invalid("Invalid null value for a tuple"));
            };
            decode_tuple(&bytes, types)
        }
        _ => Err(invalid("Expected a tuple value in a multi-column relation")),
    }
}

/// Decodes a serialized tuple (`[bytes]` per element).
pub(super) fn decode_tuple(
    mut bytes: &[u8],
    types: &[DataType],
) -> Result<Vec<CqlValue>, ErrorResponse> {
    let bad = || invalid("Invalid tuple value");
    let mut out = Vec::with_capacity(types.len());
    for ty in types {
        let (head, tail) = bytes.split_at_checked(4).ok_or_else(bad)?;
        let len = i32::from_be_bytes(head.try_into().map_err(|_| bad())?);
        let len = usize::try_from(len).map_err(|_| bad())?;
        let (item, tail) = tail.split_at_checked(len).ok_or_else(bad)?;
        out.push(crate::processor::values::decode_bound_of(
            item,
            ty,
            "tuple element",
        )?);
        bytes = tail;
    }
    Ok(out)
}

/// `column CONTAINS value` / `column CONTAINS KEY value`: a filter on a collection column
/// (it needs `ALLOW FILTERING`, like any filter on a regular column).
pub(super) fn add_contains(
    r: &mut Restrictions,
    table: &TableMeta,
    column: &Ident,
    key: bool,
    value: &Term,
    ctx: &EvalContext<'_>,
) -> Result<(), ErrorResponse> {
    let name = column.as_str();
    let index = column_index(table, name)?;
    let col = table
        .columns
        .get(index)
        .ok_or_else(|| invalid("bad column"))?;
    let element = match (col.ty.unfrozen(), key) {
        (DataType::Map(k, _), true) => (**k).clone(),
        (DataType::Map(_, v), false) => (**v).clone(),
        (DataType::List(e) | DataType::Set(e), false) => (**e).clone(),
        (DataType::List(_) | DataType::Set(_), true) => {
            return Err(invalid(format!(
                "Cannot use CONTAINS KEY on non-map column {name}"
            )))
        }
        _ => {
            return Err(invalid(format!(
                "Cannot use CONTAINS on non-collection column {name}"
            )))
        }
    };
    let v = eval(value, &element, name, ctx)?
        .required(name)
        .map_err(|_| invalid(format!("Unsupported null value for column {name}")))?;
    r.predicates.push(Predicate::Contains {
        column: index,
        key,
        value: v,
    });
    // Key columns are never collections, so this is a filter on a regular column.
    r.on_regular.push(name.to_owned());
    Ok(())
}

/// `column[key] = value`: a filter on a map's entry (it needs `ALLOW FILTERING`, like any
/// filter on a regular column), with Cassandra's refusals in Cassandra's order.
pub(super) fn add_entry(
    r: &mut Restrictions,
    table: &TableMeta,
    column: &Ident,
    (key, op, value): (&Term, Operator, &Term),
    ctx: &EvalContext<'_>,
) -> Result<(), ErrorResponse> {
    let name = column.as_str();
    let index = column_index(table, name)?;
    let col = table
        .columns
        .get(index)
        .ok_or_else(|| invalid("bad column"))?;
    let (key_ty, value_ty) = match &col.ty {
        DataType::List(_) => {
            return Err(invalid(format!(
                "Indexes on list entries ({name}[index] = value) are not currently supported."
            )))
        }
        DataType::Map(k, v) => (k, v),
        DataType::Frozen(inner) if matches!(**inner, DataType::Map(..)) => {
            return Err(invalid(format!(
                "Map-entry equality predicates on frozen map column {name} are not supported"
            )))
        }
        _ => return Err(invalid(format!("Column {name} cannot be used as a map"))),
    };
    if op != Operator::Eq {
        return Err(invalid("Only EQ relations are supported on map entries"));
    }
    let key = eval(key, key_ty, &format!("key({name})"), ctx)?
        .required(name)
        .map_err(|_| invalid(format!("Unsupported null map key for column {name}")))?;
    let value = eval(value, value_ty, &format!("value({name})"), ctx)?
        .required(name)
        .map_err(|_| invalid(format!("Unsupported null map value for column {name}")))?;
    r.predicates.push(Predicate::Entry {
        column: index,
        key,
        value,
    });
    r.on_regular.push(name.to_owned());
    Ok(())
}
