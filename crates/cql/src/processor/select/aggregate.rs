//! Aggregates (`count`, `sum`, `min`, `max`, `avg`) accumulated row by row, with
//! Cassandra's result types and overflow behaviour.

use super::*;

use super::restrict::ColumnRestriction;
use crate::schema::ColumnMeta;

/// Aggregate accumulators, one per output column.
pub(super) struct AggState {
    pub(super) accs: Vec<Acc>,
    pub(super) first_row: Option<Vec<Option<Bytes>>>,
}

#[derive(Clone, Debug)]
pub(super) enum Acc {
    None,
    Count(i64),
    Int {
        sum: i128,
        count: i64,
    },
    Float {
        sum: f64,
        count: i64,
    },
    Big {
        sum: mosaic_types::Decimal,
        count: i64,
    },
    Extreme(Option<CqlValue>),
}

impl AggState {
    pub(super) fn new(columns: &[OutColumn]) -> AggState {
        AggState {
            accs: columns
                .iter()
                .map(|c| match c.expr {
                    Expr::CountRows | Expr::Aggregate(Aggregate::Count, _) => Acc::Count(0),
                    Expr::Aggregate(Aggregate::Min | Aggregate::Max, _) => Acc::Extreme(None),
                    Expr::Aggregate(Aggregate::Sum | Aggregate::Avg, _) => match c.ty {
                        ColumnType::Native(CqlType::Float | CqlType::Double) => {
                            Acc::Float { sum: 0.0, count: 0 }
                        }
                        ColumnType::Native(CqlType::Varint | CqlType::Decimal) => Acc::Big {
                            sum: mosaic_types::Decimal::new(mosaic_types::Varint::zero(), 0),
                            count: 0,
                        },
                        _ => Acc::Int { sum: 0, count: 0 },
                    },
                    _ => Acc::None,
                })
                .collect(),
            first_row: None,
        }
    }

    pub(super) fn add(&mut self, columns: &[OutColumn], table: &TableMeta, view: &RowView<'_>) {
        if self.first_row.is_none() {
            self.first_row = Some(
                columns
                    .iter()
                    .map(|c| match c.expr {
                        Expr::Column(i) => view.bytes(table, i),
                        _ => None,
                    })
                    .collect(),
            );
        }
        for (acc, c) in self.accs.iter_mut().zip(columns) {
            let value = match c.expr {
                Expr::Aggregate(_, i) => view.value(table, i),
                _ => None,
            };
            match (acc, &c.expr) {
                (Acc::Count(n), Expr::CountRows) => *n += 1,
                (Acc::Count(n), _) if value.is_some() => *n += 1,
                (Acc::Count(_), _) => {}
                (Acc::Int { sum, count }, _) => {
                    let n = match value {
                        Some(CqlValue::Int(n)) => i128::from(n),
                        Some(CqlValue::BigInt(n)) => i128::from(n),
                        Some(CqlValue::SmallInt(n)) => i128::from(n),
                        Some(CqlValue::TinyInt(n)) => i128::from(n),
                        _ => continue,
                    };
                    *sum += n;
                    *count += 1;
                }
                (Acc::Float { sum, count }, _) => {
                    let f = match value {
                        Some(CqlValue::Float(f)) => f64::from(f),
                        Some(CqlValue::Double(d)) => d,
                        _ => continue,
                    };
                    *sum += f;
                    *count += 1;
                }
                (Acc::Big { sum, count }, _) => {
                    let text = match value {
                        Some(CqlValue::Varint(v)) => v.to_string(),
                        Some(CqlValue::Decimal(d)) => d.to_string(),
                        _ => continue,
                    };
                    if let Some(next) = add_decimal_text(sum, &text) {
                        *sum = next;
                        *count += 1;
                    }
                }
                (Acc::Extreme(best), Expr::Aggregate(agg, _)) => {
                    let Some(v) = value else { continue };
                    let better = match best {
                        None => true,
                        Some(b) => {
                            let ord = restrict::cmp_values(&v, b);
                            if *agg == Aggregate::Min {
                                ord == Ordering::Less
                            } else {
                                ord == Ordering::Greater
                            }
                        }
                    };
                    if better {
                        *best = Some(v);
                    }
                }
                _ => {}
            }
        }
    }

    pub(super) fn finish(&self, columns: &[OutColumn]) -> Vec<Option<Bytes>> {
        let first = self
            .first_row
            .clone()
            .unwrap_or_else(|| vec![None; columns.len()]);
        self.accs
            .iter()
            .zip(columns)
            .zip(first)
            .map(|((acc, c), first)| {
                let ty = match &c.ty {
                    ColumnType::Native(t) => *t,
                    ColumnType::Counter => CqlType::BigInt,
                    _ => CqlType::Blob,
                };
                let avg = matches!(c.expr, Expr::Aggregate(Aggregate::Avg, _));
                let value = match acc {
                    Acc::None => return first,
                    Acc::Count(n) => CqlValue::BigInt(*n),
                    Acc::Int { sum, count } => {
                        let v = if avg {
                            if *count == 0 {
                                0
                            } else {
                                sum / i128::from(*count)
                            }
                        } else {
                            *sum
                        };
                        match ty {
                            CqlType::Int => CqlValue::Int(v as i32),
                            CqlType::SmallInt => CqlValue::SmallInt(v as i16),
                            CqlType::TinyInt => CqlValue::TinyInt(v as i8),
                            _ => CqlValue::BigInt(v as i64),
                        }
                    }
                    Acc::Float { sum, count } => {
                        let v = if avg {
                            if *count == 0 {
                                0.0
                            } else {
                                sum / *count as f64
                            }
                        } else {
                            *sum
                        };
                        if ty == CqlType::Float {
                            CqlValue::Float(v as f32)
                        } else {
                            CqlValue::Double(v)
                        }
                    }
                    Acc::Big { sum, count } => {
                        let v = if avg && *count > 0 {
                            divide_decimal(sum, *count).unwrap_or_else(|| sum.clone())
                        } else {
                            sum.clone()
                        };
                        if ty == CqlType::Varint {
                            let text = v.to_string();
                            let int_part = text.split('.').next().unwrap_or("0");
                            CqlValue::Varint(
                                int_part
                                    .parse()
                                    .unwrap_or_else(|_| mosaic_types::Varint::zero()),
                            )
                        } else {
                            CqlValue::Decimal(v)
                        }
                    }
                    Acc::Extreme(best) => {
                        return best.as_ref().map(|v| Bytes::from(v.to_cql_bytes()))
                    }
                };
                Some(Bytes::from(value.to_cql_bytes()))
            })
            .collect()
    }
}

/// `sum + text` for decimals, through their unscaled integer parts.
pub(super) fn add_decimal_text(
    sum: &mosaic_types::Decimal,
    text: &str,
) -> Option<mosaic_types::Decimal> {
    let other: mosaic_types::Decimal = text.parse().ok()?;
    let (a, b) = (sum, &other);
    let scale = a.scale.max(b.scale);
    let scale_up = |v: i128, from: i32| -> Option<i128> {
        v.checked_mul(10i128.checked_pow((scale - from) as u32)?)
    };
    let av = scale_up(a.unscaled.to_i128()?, a.scale)?;
    let bv = scale_up(b.unscaled.to_i128()?, b.scale)?;
    Some(mosaic_types::Decimal::new(
        mosaic_types::Varint::from(av.checked_add(bv)?),
        scale,
    ))
}

pub(super) fn divide_decimal(
    sum: &mosaic_types::Decimal,
    count: i64,
) -> Option<mosaic_types::Decimal> {
    let parts = sum;
    let v = parts.unscaled.to_i128()?;
    // Keep the sum's scale, as Cassandra's avg on decimals rounds to it.
    Some(mosaic_types::Decimal::new(
        mosaic_types::Varint::from(v / i128::from(count)),
        parts.scale,
    ))
}

/// The length of the primary-key prefix a `GROUP BY` names; 0 without GROUP BY. As
/// Cassandra's `getAggregationSpecification`: its columns follow the primary key's order,
/// skipping only columns restricted by `=`, and cover the whole partition key.
pub(super) fn group_by_len(
    table: &TableMeta,
    restrictions: &restrict::Restrictions,
    group_by: &[Ident],
) -> Result<usize, ErrorResponse> {
    if group_by.is_empty() {
        return Ok(0);
    }
    let order = || {
        invalid(
            "Group by currently only support groups of columns following their declared order in the PRIMARY KEY",
        )
    };
    let key: Vec<&ColumnMeta> = table
        .partition_key()
        .into_iter()
        .chain(table.clustering())
        .collect();
    let restricted_by_eq = |column: &ColumnMeta| {
        let restriction = match column.kind {
            ColumnKind::PartitionKey { position } => restrictions.partition.get(position),
            ColumnKind::Clustering { position, .. } => {
                // `(c1, c2) = (…)` (one tuple) restricts each of its columns by `=`.
                if let Some((first, restrict::MultiRestriction::Values(tuples))) =
                    &restrictions.multi
                {
                    if let [tuple] = tuples.as_slice() {
                        if (*first..first + tuple.len()).contains(&position) {
                            return true;
                        }
                    }
                }
                restrictions.clustering.get(position)
            }
            _ => None,
        };
        matches!(restriction, Some(Some(ColumnRestriction::Values(v))) if v.len() == 1)
    };
    let mut next = 0;
    for ident in group_by {
        let name = ident.as_str();
        let column = restrict::column(table, name)?;
        if !column.kind.is_primary_key() {
            return Err(invalid(format!(
                "Group by is currently only supported on the columns of the PRIMARY KEY, got {name}"
            )));
        }
        loop {
            let key_column = key.get(next).ok_or_else(order)?;
            next += 1;
            if key_column.name == name {
                break;
            }
            if !restricted_by_eq(key_column) {
                return Err(order());
            }
        }
    }
    if next < table.partition_key().len() {
        return Err(invalid(
            "Group by is not supported on only a part of the partition key",
        ));
    }
    Ok(next)
}

/// GROUP BY's groups: rows arrive in primary-key order, so a group ends when the key
/// prefix changes; each finished group is one result row (its aggregates, or its first
/// row's values). `LIMIT` counts groups, and so does a page, as in Cassandra: a page ends
/// at a group boundary, and the next one starts with the group after the last row read.
#[derive(Default)]
pub(super) struct Groups {
    /// The key prefix of the group being aggregated.
    current: Option<Vec<CqlValue>>,
    /// The finished groups' rows.
    done: Vec<Vec<Option<Bytes>>>,
    /// Groups the LIMIT still allows (across pages).
    pub(super) left: u64,
    /// Groups per page, if paged.
    page: Option<u64>,
    /// Whether this page ended because it was full (more may follow).
    pub(super) paged: bool,
}

impl Groups {
    /// Groups with `left` allowed by the LIMIT, `page` per page.
    pub(super) fn new(left: u64, page: Option<u64>) -> Groups {
        Groups {
            left,
            page,
            ..Groups::default()
        }
    }

    /// The key of the group `view` belongs to.
    fn key(plan: &Plan, view: &RowView<'_>) -> Vec<CqlValue> {
        let pk = view.partition_key.len();
        let clustering = plan.group_by.saturating_sub(pk);
        let mut key: Vec<CqlValue> = view.partition_key.to_vec();
        if let Some(row) = view.row {
            key.extend(row.clustering.iter().take(clustering).cloned());
        }
        key
    }

    /// Whether row `view` starts a group (the first of a page does).
    pub(super) fn starts_group(&self, plan: &Plan, view: &RowView<'_>) -> bool {
        self.current
            .as_ref()
            .is_none_or(|c| *c != Groups::key(plan, view))
    }

    /// Before row `view` is aggregated: finishes the current group (resetting `aggs`) if the
    /// row starts another, its row counted against `budget`; breaks when `LIMIT` groups are
    /// done, the page is full or an unpaged result outgrew `budget`.
    pub(super) fn next_row(
        &mut self,
        plan: &Plan,
        view: &RowView<'_>,
        aggs: &mut AggState,
        budget: &mut paging::ResultBudget,
    ) -> std::ops::ControlFlow<()> {
        let key = Groups::key(plan, view);
        if self.left == 0 {
            return std::ops::ControlFlow::Break(());
        }
        if self.current.as_ref().is_some_and(|c| *c != key) {
            let row = aggs.finish(&plan.columns);
            if !budget.take(&row) {
                return std::ops::ControlFlow::Break(());
            }
            self.done.push(row);
            *aggs = AggState::new(&plan.columns);
            self.left = self.left.saturating_sub(1);
            let page_full = self.page.is_some_and(|n| self.done.len() as u64 >= n);
            if self.left == 0 || page_full {
                self.paged = self.left > 0;
                self.current = None;
                return std::ops::ControlFlow::Break(());
            }
        }
        self.current = Some(key);
        std::ops::ControlFlow::Continue(())
    }

    /// Every group's row, the last one's (still in `aggs`, counted against `budget`)
    /// included.
    pub(super) fn finish(
        &mut self,
        plan: &Plan,
        aggs: &AggState,
        budget: &mut paging::ResultBudget,
    ) -> Vec<Vec<Option<Bytes>>> {
        let mut out = std::mem::take(&mut self.done);
        if self.current.take().is_some() && self.left > 0 {
            let row = aggs.finish(&plan.columns);
            if budget.take(&row) {
                out.push(row);
            }
        }
        out
    }
}
