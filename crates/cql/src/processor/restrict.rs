//! WHERE clauses: from relations to the partitions and clustering ranges a statement
//! touches, and to per-row predicates.
//!
//! Every relation is kept as a [`Predicate`] and checked on every row read, so the key
//! ranges derived from the relations are only an optimization: they may select more than
//! the WHERE clause, never less. That keeps filtering (ALLOW FILTERING), range scans and
//! partition reads on one code path.

use std::cmp::Ordering;
use std::ops::Bound;

use mosaic_rows::{ClusteringBound, KeySchema, SliceOp};
use mosaic_types::{CqlType, CqlValue, Token};

use crate::ast::{Ident, InValues, Operator, Relation, Term};
use crate::frame::ErrorResponse;
use crate::schema::{ClusteringOrder, ColumnKind, ColumnMeta, TableMeta};

use super::invalid;
use super::values::{eval, eval_in_list, EvalContext};

/// A restriction of one column.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum ColumnRestriction {
    /// `=` or `IN`: the allowed values (deduplicated, in the order given).
    Values(Vec<CqlValue>),
    /// A range.
    Slice {
        /// Lower bound and whether it is inclusive.
        lower: Option<(CqlValue, bool)>,
        /// Upper bound and whether it is inclusive.
        upper: Option<(CqlValue, bool)>,
    },
}

/// A multi-column restriction of the first clustering columns, compared in clustering
/// order.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum MultiRestriction {
    /// `(c1, c2) = (…)` or `IN ((…), …)`.
    Values(Vec<Vec<CqlValue>>),
    /// A tuple slice.
    Slice {
        /// Lower bound and whether it is inclusive.
        lower: Option<(Vec<CqlValue>, bool)>,
        /// Upper bound and whether it is inclusive.
        upper: Option<(Vec<CqlValue>, bool)>,
    },
}

/// One relation, as checked against a row.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Predicate {
    /// A single column compared with values (`IN` when several).
    Column {
        /// Index into the table's columns.
        column: usize,
        /// The operator (`Eq` for `IN`).
        op: Operator,
        /// The values (one, or the `IN` list).
        values: Vec<CqlValue>,
    },
    /// Clustering columns (by table column index, in clustering order) compared with a
    /// tuple in clustering order.
    Tuple {
        /// The columns.
        columns: Vec<usize>,
        /// The orders of the columns.
        orders: Vec<ClusteringOrder>,
        /// The operator (`Eq` for `IN`).
        op: Operator,
        /// The tuples.
        values: Vec<Vec<CqlValue>>,
    },
    /// `token(pk) op value`.
    Token {
        /// The operator.
        op: Operator,
        /// The token compared with.
        value: Token,
    },
}

/// A WHERE clause, analysed.
#[derive(Clone, Debug, Default)]
pub(crate) struct Restrictions {
    /// Per partition key column (by position): its `=`/`IN` values.
    pub partition: Vec<Option<ColumnRestriction>>,
    /// Per clustering column (by position).
    pub clustering: Vec<Option<ColumnRestriction>>,
    /// A multi-column restriction on the first clustering columns.
    pub multi: Option<(usize, MultiRestriction)>,
    /// The token range, if restricted.
    pub token: Option<(Bound<Token>, Bound<Token>)>,
    /// Relations on columns outside the primary key (they need ALLOW FILTERING).
    pub on_regular: Vec<String>,
    /// Every relation, as a row predicate.
    pub predicates: Vec<Predicate>,
}

/// The column `name` of `table`, or Cassandra's "Undefined column name" error.
pub(crate) fn column<'t>(
    table: &'t TableMeta,
    name: &str,
) -> Result<&'t ColumnMeta, ErrorResponse> {
    table
        .column(name)
        .ok_or_else(|| invalid(format!("Undefined column name {name}")))
}

/// The column of `name` in `table`.
pub(crate) fn column_index(table: &TableMeta, name: &str) -> Result<usize, ErrorResponse> {
    table
        .column_index(name)
        .ok_or_else(|| invalid(format!("Undefined column name {name}")))
}

fn token_of_term(
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
                    eval(arg, col.ty, &col.name, ctx)?
                        .required(&format!("partition key part {}", col.name))?,
                );
            }
            return table
                .key_schema()
                .token_of(&values)
                .map_err(|e| invalid(format!("Invalid partition key: {e}")));
        }
    }
    match eval(term, CqlType::BigInt, "partition key token", ctx)?.required("token")? {
        CqlValue::BigInt(t) => Ok(Token(t)),
        _ => Err(invalid("Invalid token value")),
    }
}

fn merge_slice(
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

fn set_values(
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

/// Analyses a WHERE clause of `table`: one step per relation, each adding to the key
/// restrictions and to the predicates rows are filtered by.
pub(crate) fn analyse(
    table: &TableMeta,
    relations: &[Relation],
    ctx: &EvalContext<'_>,
) -> Result<Restrictions, ErrorResponse> {
    let mut r = Restrictions {
        partition: vec![None; table.partition_key().len()],
        clustering: vec![None; table.clustering().len()],
        ..Restrictions::default()
    };
    for relation in relations {
        match relation {
            Relation::Compare { column, op, value } => {
                add_compare(&mut r, table, column, op, value, ctx)?
            }
            Relation::In { column, values } => add_in(&mut r, table, column, values, ctx)?,
            Relation::Token { columns, op, value } => {
                add_token(&mut r, table, columns, op, value, ctx)?
            }
            Relation::MultiColumn { columns, op, value } => {
                add_multi(&mut r, table, columns, op, value, ctx)?
            }
            Relation::MultiColumnIn { columns, values } => {
                add_multi_in(&mut r, table, columns, values, ctx)?
            }
        }
    }
    Ok(r)
}

/// `column op value` on one column: a partition-key or clustering slot, or a filter.
fn add_compare(
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
    let v = eval(value, col.ty, name, ctx)?
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
fn add_in(
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
    let list = eval_in_list(values, col.ty, name, ctx)?;
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
        ColumnKind::Static | ColumnKind::Regular => {
            return Err(invalid(format!(
                "IN predicates on non-primary-key columns ({name}) is not yet supported"
            )))
        }
    }
    Ok(())
}

/// `token(pk…) op value`: one bound of the scan's token range (one relation per side,
/// or `=` alone, as Cassandra requires).
fn add_token(
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
fn add_multi(
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
fn add_multi_in(
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

type MultiColumns = (Vec<usize>, Vec<CqlType>, Vec<ClusteringOrder>, usize);

fn multi_columns(
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
        types.push(col.ty);
        orders.push(order);
    }
    Ok((indexes, types, orders, first.unwrap_or(0)))
}

fn eval_tuple(
    term: &Term,
    types: &[CqlType],
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
                .map(|((t, ty), c)| eval(t, *ty, c.as_str(), ctx)?.required(c.as_str()))
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
fn decode_tuple(mut bytes: &[u8], types: &[CqlType]) -> Result<Vec<CqlValue>, ErrorResponse> {
    let bad = || invalid("Invalid tuple value");
    let mut out = Vec::with_capacity(types.len());
    for ty in types {
        let (head, tail) = bytes.split_at_checked(4).ok_or_else(bad)?;
        let len = i32::from_be_bytes(head.try_into().map_err(|_| bad())?);
        let len = usize::try_from(len).map_err(|_| bad())?;
        let (item, tail) = tail.split_at_checked(len).ok_or_else(bad)?;
        out.push(super::values::decode_bound(item, *ty, "tuple element")?);
        bytes = tail;
    }
    Ok(out)
}

/// Compares values as CQL does; values of one column always compare.
pub(crate) fn cmp_values(a: &CqlValue, b: &CqlValue) -> Ordering {
    a.cql_cmp(b).unwrap_or(Ordering::Equal)
}

fn op_holds(op: Operator, ord: Ordering) -> bool {
    match op {
        Operator::Eq => ord == Ordering::Equal,
        Operator::Ne => ord != Ordering::Equal,
        Operator::Lt => ord == Ordering::Less,
        Operator::Le => ord != Ordering::Greater,
        Operator::Gt => ord == Ordering::Greater,
        Operator::Ge => ord != Ordering::Less,
    }
}

impl Predicate {
    /// Whether a row satisfies the predicate; `value(i)` gives the row's value of table
    /// column `i` (`None` for null), `token` the row's partition token.
    pub(crate) fn holds(&self, value: &dyn Fn(usize) -> Option<CqlValue>, token: Token) -> bool {
        match self {
            Predicate::Column { column, op, values } => {
                let Some(v) = value(*column) else {
                    return false;
                };
                if values.len() > 1 || *op == Operator::Eq {
                    return values.iter().any(|x| cmp_values(&v, x) == Ordering::Equal);
                }
                values
                    .first()
                    .is_some_and(|x| op_holds(*op, cmp_values(&v, x)))
            }
            Predicate::Tuple {
                columns,
                orders,
                op,
                values,
            } => {
                let row: Option<Vec<CqlValue>> = columns.iter().map(|c| value(*c)).collect();
                let Some(row) = row else {
                    return false;
                };
                let cmp = |t: &Vec<CqlValue>| {
                    for ((a, b), order) in row.iter().zip(t).zip(orders) {
                        let mut o = cmp_values(a, b);
                        if *order == ClusteringOrder::Desc {
                            o = o.reverse();
                        }
                        if o != Ordering::Equal {
                            return o;
                        }
                    }
                    Ordering::Equal
                };
                if *op == Operator::Eq {
                    return values.iter().any(|t| cmp(t) == Ordering::Equal);
                }
                values.first().is_some_and(|t| op_holds(*op, cmp(t)))
            }
            Predicate::Token { op, value } => op_holds(*op, token.0.cmp(&value.0)),
        }
    }
}

impl Restrictions {
    /// Whether every partition key column is restricted by `=`/`IN`.
    pub(crate) fn partition_fully_restricted(&self) -> bool {
        !self.partition.is_empty()
            && self
                .partition
                .iter()
                .all(|r| matches!(r, Some(ColumnRestriction::Values(_))))
    }

    /// The partition keys selected (cartesian product of the `=`/`IN` values), if the
    /// partition key is fully restricted.
    pub(crate) fn partition_keys(&self) -> Option<Vec<Vec<CqlValue>>> {
        if !self.partition_fully_restricted() {
            return None;
        }
        values_product(&self.partition)
    }

    /// Checks the clustering restrictions form a usable prefix: `=`/`IN` on the first
    /// columns, then at most one slice. Returns the problem otherwise (the query then needs
    /// ALLOW FILTERING).
    pub(crate) fn clustering_problem(&self, table: &TableMeta) -> Option<String> {
        let names: Vec<String> = table.clustering().iter().map(|c| c.name.clone()).collect();
        let start = match &self.multi {
            Some((first, MultiRestriction::Values(t))) => first + t.first().map_or(0, Vec::len),
            Some((first, MultiRestriction::Slice { lower, upper })) => {
                let len = lower
                    .as_ref()
                    .or(upper.as_ref())
                    .map_or(0, |(t, _)| t.len());
                if self
                    .clustering
                    .iter()
                    .skip(first + len)
                    .any(Option::is_some)
                {
                    return Some(format!(
                        "Clustering column \"{}\" cannot be restricted (preceding column is restricted by a non-EQ relation)",
                        names.get(first + len).cloned().unwrap_or_default()
                    ));
                }
                return None;
            }
            None => 0,
        };
        let mut previous_unrestricted: Option<&str> = None;
        let mut previous_slice: Option<&str> = None;
        for (i, r) in self.clustering.iter().enumerate().skip(start) {
            let name = names.get(i).map(String::as_str).unwrap_or("");
            match r {
                None => {
                    if previous_unrestricted.is_none() {
                        previous_unrestricted = Some(name);
                    }
                }
                Some(r) => {
                    if let Some(prev) = previous_slice {
                        return Some(format!(
                            "Clustering column \"{name}\" cannot be restricted (preceding column \"{prev}\" is restricted by a non-EQ relation)"
                        ));
                    }
                    if let Some(prev) = previous_unrestricted {
                        return Some(format!(
                            "PRIMARY KEY column \"{name}\" cannot be restricted as preceding column \"{prev}\" is not restricted"
                        ));
                    }
                    if matches!(r, ColumnRestriction::Slice { .. }) {
                        previous_slice = Some(name);
                    }
                }
            }
        }
        None
    }

    /// Whether any clustering column is restricted.
    pub(crate) fn has_clustering(&self) -> bool {
        self.multi.is_some() || self.clustering.iter().any(Option::is_some)
    }

    /// The clustering ranges selected within a partition, as bound pairs in key order,
    /// sorted and non-overlapping; assumes [`Self::clustering_problem`] is `None`.
    pub(crate) fn clustering_bounds(
        &self,
        schema: &KeySchema,
    ) -> Result<Vec<(ClusteringBound, ClusteringBound)>, ErrorResponse> {
        let key_err = |e: mosaic_rows::KeyError| invalid(format!("Invalid clustering value: {e}"));
        // Multi-column restrictions map straight to bounds: their tuples compare in
        // clustering order, which is key order.
        if let Some((_, multi)) = &self.multi {
            let mut out = match multi {
                MultiRestriction::Values(tuples) => tuples
                    .iter()
                    .map(|t| schema.slice_bounds(t, SliceOp::Eq).map_err(key_err))
                    .collect::<Result<Vec<_>, _>>()?,
                MultiRestriction::Slice { lower, upper } => {
                    let start = match lower {
                        Some((t, true)) => ClusteringBound::inclusive_start(t.clone()),
                        Some((t, false)) => ClusteringBound::exclusive_start(t.clone()),
                        None => ClusteringBound::bottom(),
                    };
                    let end = match upper {
                        Some((t, true)) => ClusteringBound::inclusive_end(t.clone()),
                        Some((t, false)) => ClusteringBound::exclusive_end(t.clone()),
                        None => ClusteringBound::top(),
                    };
                    vec![(start, end)]
                }
            };
            sort_ranges(schema, &mut out)?;
            return Ok(out);
        }
        let mut prefixes: Vec<Vec<CqlValue>> = vec![Vec::new()];
        let mut slice = None;
        for r in &self.clustering {
            match r {
                Some(ColumnRestriction::Values(values)) => {
                    prefixes = extend_product(prefixes, values);
                }
                Some(ColumnRestriction::Slice { lower, upper }) => {
                    slice = Some((lower.clone(), upper.clone()));
                    break;
                }
                None => break,
            }
        }
        let mut out = Vec::with_capacity(prefixes.len());
        for prefix in prefixes {
            let Some((lower, upper)) = &slice else {
                out.push(schema.slice_bounds(&prefix, SliceOp::Eq).map_err(key_err)?);
                continue;
            };
            let (mut start, mut end) =
                schema.slice_bounds(&prefix, SliceOp::Eq).map_err(key_err)?;
            let mut narrow = |value: &CqlValue, op: SliceOp| -> Result<(), ErrorResponse> {
                let mut p = prefix.clone();
                p.push(value.clone());
                let (s, e) = schema.slice_bounds(&p, op).map_err(key_err)?;
                if schema.encode_bound(&s).map_err(key_err)?
                    > schema.encode_bound(&start).map_err(key_err)?
                {
                    start = s;
                }
                if schema.encode_bound(&e).map_err(key_err)?
                    < schema.encode_bound(&end).map_err(key_err)?
                {
                    end = e;
                }
                Ok(())
            };
            if let Some((v, inclusive)) = lower {
                narrow(v, if *inclusive { SliceOp::Ge } else { SliceOp::Gt })?;
            }
            if let Some((v, inclusive)) = upper {
                narrow(v, if *inclusive { SliceOp::Le } else { SliceOp::Lt })?;
            }
            out.push((start, end));
        }
        sort_ranges(schema, &mut out)?;
        Ok(out)
    }
}

/// Every tuple with one value per restriction, in order, when every restriction is an
/// `=`/`IN` (the keys a WHERE clause names); `None` otherwise.
pub(crate) fn values_product(
    restrictions: &[Option<ColumnRestriction>],
) -> Option<Vec<Vec<CqlValue>>> {
    let mut tuples: Vec<Vec<CqlValue>> = vec![Vec::new()];
    for r in restrictions {
        let Some(ColumnRestriction::Values(values)) = r else {
            return None;
        };
        tuples = extend_product(tuples, values);
    }
    Some(tuples)
}

/// Each prefix extended by each value.
fn extend_product(prefixes: Vec<Vec<CqlValue>>, values: &[CqlValue]) -> Vec<Vec<CqlValue>> {
    prefixes
        .into_iter()
        .flat_map(|p| {
            values.iter().map(move |v| {
                let mut p = p.clone();
                p.push(v.clone());
                p
            })
        })
        .collect()
}

/// Sorts bound pairs by start key, drops empty ones and merges overlaps.
fn sort_ranges(
    schema: &KeySchema,
    ranges: &mut Vec<(ClusteringBound, ClusteringBound)>,
) -> Result<(), ErrorResponse> {
    let key_err = |e: mosaic_rows::KeyError| invalid(format!("Invalid clustering value: {e}"));
    let mut keyed = Vec::with_capacity(ranges.len());
    for (s, e) in ranges.drain(..) {
        let sk = schema.encode_bound(&s).map_err(key_err)?;
        let ek = schema.encode_bound(&e).map_err(key_err)?;
        if sk < ek {
            keyed.push((sk, ek, s, e));
        }
    }
    keyed.sort_by(|a, b| a.0.cmp(&b.0));
    let mut merged: Vec<(Vec<u8>, Vec<u8>, ClusteringBound, ClusteringBound)> = Vec::new();
    for item in keyed {
        if let Some(last) = merged.last_mut() {
            if item.0 <= last.1 {
                if item.1 > last.1 {
                    last.1 = item.1;
                    last.3 = item.3;
                }
                continue;
            }
        }
        merged.push(item);
    }
    ranges.extend(merged.into_iter().map(|(_, _, s, e)| (s, e)));
    Ok(())
}
