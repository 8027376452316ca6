//! The cost of a read on a replica in a given clustering order: Eq. (1)–(2).
//!
//! **Rows read** ([`rows_read`]). A replica in order π plans a read exactly as
//! `KeySchema::permuted_ranges` does: walking π's columns, it expands an `In` into one
//! range per value (while the ranges stay within `mosaic_rows::permute::MAX_PLANNED_RANGES`),
//! then takes one range on the next column if that is a `Range`, and stops there or at
//! the first unrestricted column (or an `In` past the cap); every later restriction is a
//! residual filter checked row by row, so it does not shorten the scan. The rows scanned
//! are therefore Eq. (1):
//!
//! ```text
//! |P| × Π over the expanded In columns of Σ_v f(v) × (F(e) − F(s)) of the Range column
//! ```
//!
//! with the range factor 1 when planning stopped on an unrestricted column or ran out of
//! columns, and 0 as soon as the plan meets a restriction no value satisfies (the plan is
//! then empty). `f` and `F` come from [`TableStats`]; the columns are taken as
//! independent.
//!
//! **Limits.** A read with a `LIMIT` stops early only where rows come out in the declared
//! clustering order, i.e. on a replica whose order is the identity: it reads until it has
//! `L` matches, about `L × R / M` of its `R` planned rows if the `M` matching rows are
//! spread evenly through them. Any other order must read all `R` and sort the matches
//! (the coordinator returns rows in the declared order).
//!
//! **Cost** ([`CostModel`]). The paper's `f(Row)` of Eq. (2), here linear: a fixed cost
//! per read plus a cost per row scanned. Routing a read means taking the replica of least
//! cost ([`replica_costs`], [`cheapest`]).

use mosaic_rows::permute::MAX_PLANNED_RANGES;
use mosaic_rows::{ClusteringFilter, ColumnFilter, Permutation};

use crate::stats::TableStats;

/// The smallest matching-row estimate a limit divides by: below it, a limited read is
/// taken to find nothing and scan its whole plan.
pub const MATCHING_ROWS_MIN: f64 = 1e-9;

/// The rows a replica in order `perm` plans to scan for `filter`, before any limit
/// (Eq. (1); see the module doc).
pub fn planned_rows(stats: &TableStats, perm: &Permutation, filter: &ClusteringFilter) -> f64 {
    let mut fraction = 1.0;
    let mut ranges: usize = 1;
    for &declared in perm.positions() {
        let column = filter.column(declared);
        if column.is_empty() {
            return 0.0;
        }
        match column {
            ColumnFilter::In(values)
                if ranges.saturating_mul(values.len()) <= MAX_PLANNED_RANGES =>
            {
                ranges = ranges.saturating_mul(values.len());
                fraction *= stats.selectivity(declared, column);
            }
            ColumnFilter::Range { .. } => {
                fraction *= stats.selectivity(declared, column);
                break;
            }
            _ => break,
        }
    }
    stats.rows() * fraction
}

/// The rows estimated to pass `filter` (every column's restriction, as independent
/// fractions of the table).
pub fn matching_rows(stats: &TableStats, filter: &ClusteringFilter) -> f64 {
    let fraction: f64 = filter
        .columns
        .iter()
        .enumerate()
        .map(|(declared, column)| stats.selectivity(declared, column))
        .product();
    stats.rows() * fraction
}

/// The rows a replica in order `perm` scans to answer `filter` with an optional `limit`
/// (see the module doc): its planned rows `R`, or for the identity order with a limit `L`,
/// `min(R, L × R / max(M, MATCHING_ROWS_MIN))` with `M` the matching rows.
pub fn rows_read(
    stats: &TableStats,
    perm: &Permutation,
    filter: &ClusteringFilter,
    limit: Option<u64>,
) -> f64 {
    let planned = planned_rows(stats, perm, filter);
    match limit {
        Some(limit) if perm.is_identity() => {
            let matching = matching_rows(stats, filter).max(MATCHING_ROWS_MIN);
            planned.min(limit as f64 * planned / matching)
        }
        _ => planned,
    }
}

/// The cost of a read as a function of the rows it scans: Eq. (2)'s `f`, linear. The
/// [`Default`] constants are placeholders for a calibration (see there).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CostModel {
    /// The cost of a read that scans nothing: request handling, seeks, one block.
    pub fixed_micros: f64,
    /// The cost of each row scanned.
    pub per_row_micros: f64,
}

impl Default for CostModel {
    /// 500 µs per read and 0.6 µs per row scanned: the line through Mosaic's own
    /// latencies on TPC-H `orders` (`bench/hr.sh`, BENCHMARKS.md, 3 nodes on 2 cores,
    /// cached blocks): queries reading a row or two took 0.5–0.9 ms end to end, and Q2
    /// under TR's order, scanning about 56,000 rows (SF 1) and 280,000 (SF 5), 34.6 and
    /// 160.7 ms — 0.61 and 0.57 µs per row. With a positive per-row cost the choice of
    /// replica, and the orders [`crate::hrca`] finds, do not depend on the constants;
    /// reported costs and relative gains (the `auto` threshold) do.
    fn default() -> CostModel {
        CostModel {
            fixed_micros: 500.0,
            per_row_micros: 0.6,
        }
    }
}

impl CostModel {
    /// The cost of a read scanning `rows` rows, in microseconds.
    pub fn cost(&self, rows: f64) -> f64 {
        self.fixed_micros + self.per_row_micros * rows
    }
}

/// The cost of answering `filter` (with `limit`) on each of the replicas whose orders are
/// `perms`, in that order.
pub fn replica_costs(
    stats: &TableStats,
    perms: &[Permutation],
    filter: &ClusteringFilter,
    limit: Option<u64>,
    model: &CostModel,
) -> Vec<f64> {
    perms
        .iter()
        .map(|p| model.cost(rows_read(stats, p, filter, limit)))
        .collect()
}

/// The index of the least of `costs` (the first on a tie; NaN never wins), `None` when
/// there is none.
pub fn cheapest(costs: &[f64]) -> Option<usize> {
    costs
        .iter()
        .enumerate()
        .filter(|(_, c)| !c.is_nan())
        .fold(None, |best: Option<(usize, f64)>, (i, &c)| match best {
            Some((_, b)) if b <= c => best,
            _ => Some((i, c)),
        })
        .map(|(i, _)| i)
}

#[cfg(test)]
mod tests {
    use std::ops::Bound;

    use super::*;
    use crate::testing::{enc, eq, grid, perm};

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
    }

    #[test]
    fn plans_stop_at_the_first_unrestricted_column_and_after_one_range() {
        let s = grid();
        let f = ClusteringFilter {
            columns: vec![
                eq(3),
                ColumnFilter::Range {
                    lo: Bound::Included(enc(5)),
                    hi: Bound::Excluded(enc(9)),
                },
                eq(2),
            ],
        };
        // (a, b, c): a = 3, then b's range, c residual: 1000 × 0.1 × 0.2.
        assert!(close(rows_read(&s, &perm(&[0, 1, 2]), &f, None), 20.0));
        // (a, c, b): both equalities, then the range: 1000 × 0.1 × 0.2 × 0.2.
        assert!(close(rows_read(&s, &perm(&[0, 2, 1]), &f, None), 4.0));
        // (b, ...): the range comes first and ends the plan.
        assert!(close(rows_read(&s, &perm(&[1, 0, 2]), &f, None), 200.0));
        // An unrestricted leading column: the whole partition.
        let g = ClusteringFilter {
            columns: vec![ColumnFilter::Any, eq(1), eq(1)],
        };
        assert!(close(rows_read(&s, &perm(&[0, 1, 2]), &g, None), 1000.0));
        assert!(close(rows_read(&s, &perm(&[1, 0, 2]), &g, None), 50.0));
        assert!(close(rows_read(&s, &perm(&[1, 2, 0]), &g, None), 10.0));
        // A filter shorter than the table leaves the rest unrestricted.
        let h = ClusteringFilter {
            columns: vec![eq(1)],
        };
        assert!(close(rows_read(&s, &perm(&[0, 1, 2]), &h, None), 100.0));
        assert!(close(rows_read(&s, &perm(&[2, 0, 1]), &h, None), 1000.0));
    }

    #[test]
    fn in_lists_expand_up_to_the_range_cap() {
        let s = grid();
        // a: every value (fraction 1), b: 4 of 20, c: 3 of 5.
        let f = ClusteringFilter {
            columns: vec![
                ColumnFilter::In((0..10).map(enc).collect()),
                ColumnFilter::In((0..4).map(enc).collect()),
                ColumnFilter::In((0..3).map(enc).collect()),
            ],
        };
        // (b, c, a): 4 × 3 = 12 ranges, then 12 × 10 = 120 ≤ 256: all three expand.
        assert!(close(
            rows_read(&s, &perm(&[1, 2, 0]), &f, None),
            1000.0 * 0.2 * 0.6
        ));
        let wide = ClusteringFilter {
            columns: vec![
                ColumnFilter::In((0..10).map(enc).collect()),
                ColumnFilter::In((0..20).map(enc).collect()),
                ColumnFilter::In((0..3).map(enc).collect()),
            ],
        };
        // (b, a, c): 20 × 10 = 200 ranges, then 200 × 3 = 600 > 256: c is residual.
        assert!(close(rows_read(&s, &perm(&[1, 0, 2]), &wide, None), 1000.0));
        // (c, b, a): 3 × 20 = 60, then 60 × 10 = 600 > 256: a is residual.
        assert!(close(rows_read(&s, &perm(&[2, 1, 0]), &wide, None), 600.0));
        // The estimate of matching rows takes every column.
        assert!(close(matching_rows(&s, &wide), 600.0));
    }

    #[test]
    fn an_unsatisfiable_restriction_in_the_plan_reads_nothing() {
        let s = grid();
        let f = ClusteringFilter {
            columns: vec![ColumnFilter::Any, ColumnFilter::In(vec![]), eq(1)],
        };
        assert_eq!(rows_read(&s, &perm(&[1, 0, 2]), &f, None), 0.0);
        // Out of the plan it is residual: the scan still happens.
        assert!(close(rows_read(&s, &perm(&[0, 1, 2]), &f, None), 1000.0));
    }

    #[test]
    fn only_the_declared_order_stops_early_at_a_limit() {
        let s = grid();
        let f = ClusteringFilter {
            columns: vec![eq(3), ColumnFilter::Any, eq(2)],
        };
        let id = perm(&[0, 1, 2]);
        let acb = perm(&[0, 2, 1]);
        // Identity: R = 100 planned, M = 20 match; ten matches need half the plan.
        assert!(close(rows_read(&s, &id, &f, None), 100.0));
        assert!(close(rows_read(&s, &id, &f, Some(10)), 50.0));
        // A limit past the matches reads the whole plan, never more.
        assert!(close(rows_read(&s, &id, &f, Some(1000)), 100.0));
        // Another order reads its whole (smaller) plan whatever the limit, and still wins.
        assert!(close(rows_read(&s, &acb, &f, Some(10)), 20.0));
        assert!(close(rows_read(&s, &acb, &f, Some(1)), 20.0));
        let costs = replica_costs(&s, &[id, acb], &f, Some(10), &CostModel::default());
        assert_eq!(cheapest(&costs), Some(1));
        // No match expected: the whole plan.
        let none = ClusteringFilter {
            columns: vec![eq(3), ColumnFilter::In(vec![]), ColumnFilter::Any],
        };
        assert!(close(
            rows_read(&s, &perm(&[0, 2, 1]), &none, Some(1)),
            100.0
        ));
    }

    #[test]
    fn costs_are_linear_and_the_cheapest_is_the_first_least() {
        let m = CostModel {
            fixed_micros: 10.0,
            per_row_micros: 2.0,
        };
        assert_eq!(m.cost(0.0), 10.0);
        assert_eq!(m.cost(5.0), 20.0);
        assert_eq!(cheapest(&[3.0, 1.0, 1.0, 2.0]), Some(1));
        assert_eq!(cheapest(&[f64::NAN, 4.0]), Some(1));
        assert_eq!(cheapest(&[f64::NAN]), None);
        assert_eq!(cheapest(&[]), None);
    }
}
