//! WHERE clauses: from relations to the partitions and clustering ranges a statement
//! touches, and to per-row predicates.
//!
//! Every relation is kept as a [`Predicate`] and checked on every row read, so the key
//! ranges derived from the relations are only an optimization: they may select more than
//! the WHERE clause, never less. That keeps filtering (ALLOW FILTERING), range scans and
//! partition reads on one code path.

use std::cmp::Ordering;
use std::ops::Bound;

use mosaic_rows::{ClusteringBound, ClusteringFilter, ColumnFilter, KeySchema, SliceOp};
use mosaic_types::{CqlType, CqlValue, DataType, Token};

use crate::ast::{Ident, InValues, Operator, Relation, Term};
use crate::frame::ErrorResponse;
use crate::schema::{ClusteringOrder, ColumnKind, ColumnMeta, TableMeta};

use super::invalid;
use super::limits::{KeyPart, StatementLimits};
use super::values::{eval, eval_in_list, eval_native, EvalContext};

mod relations;

use relations::*;

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
    /// `column CONTAINS value` or `column CONTAINS KEY value` on a collection column.
    Contains {
        /// Index into the table's columns.
        column: usize,
        /// Keys (`CONTAINS KEY`) rather than values or elements.
        key: bool,
        /// The value looked for.
        value: CqlValue,
    },
    /// `column[key] = value` on a map column: the entry `key` holds `value`.
    Entry {
        /// Index into the table's columns.
        column: usize,
        /// The entry's key.
        key: CqlValue,
        /// Its value.
        value: CqlValue,
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

/// Analyses a WHERE clause of `table`: one step per relation, each adding to the key
/// restrictions and to the predicates rows are filtered by. Refuses `IN` lists whose
/// cartesian product names more keys than `limits` allow, before any key is built.
pub(crate) fn analyse(
    table: &TableMeta,
    relations: &[Relation],
    ctx: &EvalContext<'_>,
    limits: &StatementLimits,
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
            Relation::Contains { column, key, value } => {
                add_contains(&mut r, table, column, *key, value, ctx)?
            }
            Relation::Element {
                column,
                key,
                op,
                value,
            } => add_entry(&mut r, table, column, (key, *op, value), ctx)?,
        }
    }
    r.check_products(limits)?;
    Ok(r)
}

/// Compares values as CQL does; values of one column always compare.
pub(crate) fn cmp_values(a: &CqlValue, b: &CqlValue) -> Ordering {
    a.cql_cmp(b).unwrap_or(Ordering::Equal)
}

/// Whether `ord` (a value compared with another) satisfies `op`.
pub(crate) fn op_holds(op: Operator, ord: Ordering) -> bool {
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
            Predicate::Entry {
                column,
                key,
                value: wanted,
            } => match value(*column) {
                Some(CqlValue::Map(entries)) => entries.iter().any(|(k, v)| {
                    cmp_values(k, key) == Ordering::Equal
                        && cmp_values(v, wanted) == Ordering::Equal
                }),
                _ => false,
            },
            Predicate::Contains {
                column,
                key,
                value: wanted,
            } => {
                let equal = |v: &CqlValue| cmp_values(v, wanted) == Ordering::Equal;
                match value(*column) {
                    Some(CqlValue::List(items) | CqlValue::Set(items)) => items.iter().any(equal),
                    Some(CqlValue::Map(entries)) if *key => entries.iter().any(|(k, _)| equal(k)),
                    Some(CqlValue::Map(entries)) => entries.iter().any(|(_, v)| equal(v)),
                    _ => false,
                }
            }
        }
    }
}

impl Restrictions {
    /// The cartesian products [`Self::partition_keys`] and [`Self::clustering_bounds`]
    /// would expand, checked against `limits` from the lists' lengths alone.
    fn check_products(&self, limits: &StatementLimits) -> Result<(), ErrorResponse> {
        let lengths = |rs: &[Option<ColumnRestriction>]| -> Vec<usize> {
            rs.iter()
                .map_while(|r| match r {
                    Some(ColumnRestriction::Values(values)) => Some(values.len()),
                    _ => None,
                })
                .collect()
        };
        if self.partition_fully_restricted() {
            limits.check_restrictions(KeyPart::Partition, lengths(&self.partition))?;
        }
        match &self.multi {
            None => limits.check_restrictions(KeyPart::Clustering, lengths(&self.clustering))?,
            // A multi-column IN names one clustering prefix per tuple (after those of the
            // columns before it).
            Some((first, MultiRestriction::Values(tuples))) => {
                let before = self.clustering.get(..*first).unwrap_or_default();
                let mut product = lengths(before);
                product.push(tuples.len());
                limits.check_restrictions(KeyPart::Clustering, product)?;
            }
            Some((_, MultiRestriction::Slice { .. })) => {}
        }
        Ok(())
    }

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

    /// The filter of the single-column clustering restrictions, one [`ColumnFilter`] per
    /// declared clustering column (`Any` where unrestricted): `=`/`IN` values, or a slice
    /// between its logical bounds. Multi-column restrictions contribute nothing (their
    /// predicates still check every row). Equivalent to the clustering columns'
    /// [`Predicate::Column`]s, which each add to their column's restriction.
    pub(crate) fn clustering_filter(
        &self,
        schema: &KeySchema,
    ) -> Result<ClusteringFilter, ErrorResponse> {
        let key_err = |e: mosaic_rows::KeyError| invalid(format!("Invalid clustering value: {e}"));
        let columns = self
            .clustering
            .iter()
            .enumerate()
            .map(|(i, r)| match r {
                None => Ok(ColumnFilter::Any),
                Some(ColumnRestriction::Values(values)) => {
                    schema.column_values_filter(i, values).map_err(key_err)
                }
                Some(ColumnRestriction::Slice { lower, upper }) => schema
                    .column_range_filter(
                        i,
                        lower.as_ref().map(|(v, inclusive)| (v, *inclusive)),
                        upper.as_ref().map(|(v, inclusive)| (v, *inclusive)),
                    )
                    .map_err(key_err),
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(ClusteringFilter { columns })
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
