//! Column statistics: the distributions `f` (equality) and `F` (range) of Eq. (1), per
//! clustering column, estimated from a sample of rows.
//!
//! A [`ColumnStats`] is a *sorted sample* of one column's encoded components: the sample's
//! values are its quantiles, so it is an equi-depth histogram with one bucket per sampled
//! row, and both fractions are counts over it. Encoded components compare bytewise in the
//! column's key order (`mosaic_rows::component`), so the statistics never decode a value
//! and serve ascending and descending columns alike; filters arrive in the same encoding.
//!
//! Two estimates go beyond counting, because a plain count says 0 — which would make a
//! replica look free and every order that reaches a 0 look equally good:
//!
//! - **A value absent from the sample** gets the Good–Turing share of unseen values: the
//!   sample's singletons estimate the mass of the values it missed (`f1 / n`), spread over
//!   the distinct values it missed, estimated with the Haas–Stokes `Duj1` estimator
//!   `D = n·d / (n − f1 + f1·n/N)` (`d` distinct sampled values, `N` table rows). The
//!   estimate is clamped to `[1/(N+1), 1/(n+1)]`: never more than a value seen once, never
//!   zero (about one row when the whole table was sampled and the value is not in it).
//!   So a unique column of a million rows estimates about 1e-6 for an unsampled key, and
//!   a column of 10 repeated values about `1/(N+1)`.
//! - **A range holding no sampled value** lies in the gap between two neighbouring sample
//!   values, which holds about `1/(n+1)` of the rows; it gets the share of the gap it
//!   covers, interpolating the bytes after the neighbours' common prefix as a number
//!   (exact for fixed-width big-endian integers, rough for text), and at least the
//!   absent-value estimate. Outside the sample's span it gets the absent-value estimate.
//!
//! A column with no sample at all (an empty table, or a filter on a column the sample does
//! not have) has no information, and every fraction of it is 1: it restricts nothing in
//! the estimate, so no order is preferred for it.

use std::ops::Bound;

use mosaic_rows::ColumnFilter;

/// The distribution of one clustering column, from a sample of its encoded components
/// (see the module doc).
#[derive(Clone, Debug, PartialEq)]
pub struct ColumnStats {
    /// The sampled components, sorted.
    sorted: Vec<Vec<u8>>,
    /// Distinct values in the sample.
    distinct: usize,
    /// Estimated distinct values in the table (`Duj1`), at least `distinct`.
    distinct_estimate: f64,
    /// The fraction estimated for a value absent from the sample.
    absent_fraction: f64,
}

impl ColumnStats {
    /// The statistics of a column whose sample is `values` (encoded components, any
    /// order), drawn from a table of about `rows` rows (a non-finite or smaller count is
    /// taken as the sample's size).
    pub fn new(mut values: Vec<Vec<u8>>, rows: f64) -> ColumnStats {
        values.sort_unstable();
        let mut distinct = 0usize;
        let mut singletons = 0usize;
        for run in values.chunk_by(|a, b| a == b) {
            distinct += 1;
            if run.len() == 1 {
                singletons += 1;
            }
        }
        let n = values.len() as f64;
        let population = if rows.is_finite() { rows.max(n) } else { n };
        let (distinct_estimate, absent_fraction) =
            unseen_estimates(n, distinct as f64, singletons as f64, population);
        ColumnStats {
            sorted: values,
            distinct,
            distinct_estimate,
            absent_fraction,
        }
    }

    /// Rows in the sample.
    pub fn sample_len(&self) -> usize {
        self.sorted.len()
    }

    /// Distinct values in the sample.
    pub fn distinct(&self) -> usize {
        self.distinct
    }

    /// Estimated distinct values in the whole table (Haas–Stokes `Duj1`), at least
    /// [`Self::distinct`].
    pub fn distinct_estimate(&self) -> f64 {
        self.distinct_estimate
    }

    /// The fraction of rows estimated to hold `value` (`f(v)` of Eq. (1)): its share of
    /// the sample, or the absent-value estimate of the module doc; 1 without a sample.
    pub fn eq_fraction(&self, value: &[u8]) -> f64 {
        if self.sorted.is_empty() {
            return 1.0;
        }
        let first = self.sorted.partition_point(|x| x.as_slice() < value);
        let end = self.sorted.partition_point(|x| x.as_slice() <= value);
        let count = end.saturating_sub(first);
        if count == 0 {
            self.absent_fraction
        } else {
            count as f64 / self.sorted.len() as f64
        }
    }

    /// The fraction of rows estimated to lie between `lo` and `hi` in key order
    /// (`F(e) − F(s)` of Eq. (1)); 0 for a range whose bounds cross, 1 without a sample.
    pub fn range_fraction(&self, lo: Bound<&[u8]>, hi: Bound<&[u8]>) -> f64 {
        if range_is_empty(lo, hi) {
            return 0.0;
        }
        if self.sorted.is_empty() {
            return 1.0;
        }
        let n = self.sorted.len();
        let start = match lo {
            Bound::Unbounded => 0,
            Bound::Included(s) => self.sorted.partition_point(|x| x.as_slice() < s),
            Bound::Excluded(s) => self.sorted.partition_point(|x| x.as_slice() <= s),
        };
        let end = match hi {
            Bound::Unbounded => n,
            Bound::Included(e) => self.sorted.partition_point(|x| x.as_slice() <= e),
            Bound::Excluded(e) => self.sorted.partition_point(|x| x.as_slice() < e),
        };
        if end > start {
            return (end - start) as f64 / n as f64;
        }
        // No sampled value inside: the range lies in the gap below sorted[start].
        let below = start.checked_sub(1).and_then(|i| self.sorted.get(i));
        let above = self.sorted.get(start);
        let (Some(a), Some(b)) = (below, above) else {
            return self.absent_fraction;
        };
        let from = match lo {
            Bound::Included(s) | Bound::Excluded(s) => s,
            Bound::Unbounded => a.as_slice(),
        };
        let to = match hi {
            Bound::Included(e) | Bound::Excluded(e) => e,
            Bound::Unbounded => b.as_slice(),
        };
        let covered = (gap_position(to, a, b) - gap_position(from, a, b)).clamp(0.0, 1.0);
        (covered / (n as f64 + 1.0)).max(self.absent_fraction)
    }

    /// The fraction of rows estimated to pass `filter` on this column: 1 for `Any`, the
    /// sum of [`Self::eq_fraction`] (at most 1) for `In`, [`Self::range_fraction`] for
    /// `Range`.
    pub fn selectivity(&self, filter: &ColumnFilter) -> f64 {
        match filter {
            ColumnFilter::Any => 1.0,
            ColumnFilter::In(values) => self.in_fraction(values),
            ColumnFilter::Range { lo, hi } => {
                self.range_fraction(as_slice_bound(lo), as_slice_bound(hi))
            }
        }
    }

    /// The summed fraction of `values` (sorted, as in `ColumnFilter::In`; repeated
    /// neighbours count once), at most 1.
    pub fn in_fraction(&self, values: &[Vec<u8>]) -> f64 {
        let mut sum = 0.0;
        let mut previous: Option<&[u8]> = None;
        for v in values {
            if previous != Some(v.as_slice()) {
                sum += self.eq_fraction(v);
            }
            previous = Some(v.as_slice());
        }
        sum.min(1.0)
    }
}

/// What a node knows of one table's rows: how many, and each clustering column's
/// distribution.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TableStats {
    /// Estimated rows of the table on this node (`|P|` of Eq. (1)).
    pub rows: f64,
    /// One entry per clustering column, in declared order.
    pub columns: Vec<ColumnStats>,
}

impl TableStats {
    /// The statistics of a table of about `rows` rows from `sample`, each item one row's
    /// encoded clustering components in declared order. A row shorter than the others
    /// adds nothing to the columns it lacks; a negative or non-finite `rows` is taken as 0.
    pub fn from_sample(rows: f64, sample: &[Vec<Vec<u8>>]) -> TableStats {
        let rows = sanitize_rows(rows);
        let width = sample.iter().map(Vec::len).max().unwrap_or(0);
        let columns = (0..width)
            .map(|c| {
                let values = sample.iter().filter_map(|r| r.get(c).cloned()).collect();
                ColumnStats::new(values, rows)
            })
            .collect();
        TableStats { rows, columns }
    }

    /// The statistics of declared clustering column `column`, if sampled.
    pub fn column(&self, column: usize) -> Option<&ColumnStats> {
        self.columns.get(column)
    }

    /// [`ColumnStats::selectivity`] of declared column `column`, 1 for a column without
    /// statistics (and 0 for a filter no value satisfies).
    pub fn selectivity(&self, column: usize, filter: &ColumnFilter) -> f64 {
        if filter.is_empty() {
            return 0.0;
        }
        self.column(column).map_or(1.0, |s| s.selectivity(filter))
    }

    /// [`Self::rows`], with a negative or non-finite count read as 0.
    pub fn rows(&self) -> f64 {
        sanitize_rows(self.rows)
    }
}

fn sanitize_rows(rows: f64) -> f64 {
    if rows.is_finite() && rows > 0.0 {
        rows
    } else {
        0.0
    }
}

/// `(distinct values in the table, fraction of one value absent from the sample)` from a
/// sample of `n` rows with `d` distinct values, `f1` of them seen once, out of
/// `population` rows (at least `n`). See the module doc.
fn unseen_estimates(n: f64, d: f64, f1: f64, population: f64) -> (f64, f64) {
    if n <= 0.0 {
        return (0.0, 1.0);
    }
    let denominator = n - f1 + f1 * n / population;
    let distinct = if denominator > 0.0 {
        (n * d / denominator).clamp(d, population.max(d))
    } else {
        d
    };
    let floor = 1.0 / (population + 1.0);
    let cap = 1.0 / (n + 1.0);
    let unseen = distinct - d;
    let share = if unseen >= 1.0 && f1 > 0.0 {
        (f1 / n) / unseen
    } else {
        floor
    };
    (distinct, share.clamp(floor, cap))
}

/// Where `x` lies between `a` and `b` (`a < b`), as a fraction in `[0, 1]`: the bytes
/// after their common prefix read as a big-endian fraction. `x` between them shares the
/// prefix (byte order), so the comparison is only over what differs.
fn gap_position(x: &[u8], a: &[u8], b: &[u8]) -> f64 {
    let prefix = a.iter().zip(b).take_while(|(p, q)| p == q).count();
    let value = |s: &[u8]| -> f64 {
        let mut word = [0u8; 8];
        for (slot, byte) in word.iter_mut().zip(s.iter().skip(prefix)) {
            *slot = *byte;
        }
        u64::from_be_bytes(word) as f64
    };
    if x <= a {
        return 0.0;
    }
    if x >= b {
        return 1.0;
    }
    let (va, vb, vx) = (value(a), value(b), value(x));
    if vb <= va {
        // They differ only past 8 bytes: no resolution left, call it the middle.
        return 0.5;
    }
    ((vx - va) / (vb - va)).clamp(0.0, 1.0)
}

fn range_is_empty(lo: Bound<&[u8]>, hi: Bound<&[u8]>) -> bool {
    match (lo, hi) {
        (Bound::Included(a), Bound::Included(b)) => a > b,
        (Bound::Included(a), Bound::Excluded(b))
        | (Bound::Excluded(a), Bound::Included(b))
        | (Bound::Excluded(a), Bound::Excluded(b)) => a >= b,
        _ => false,
    }
}

pub(crate) fn as_slice_bound(b: &Bound<Vec<u8>>) -> Bound<&[u8]> {
    match b {
        Bound::Included(v) => Bound::Included(v.as_slice()),
        Bound::Excluded(v) => Bound::Excluded(v.as_slice()),
        Bound::Unbounded => Bound::Unbounded,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn enc(v: u32) -> Vec<u8> {
        v.to_be_bytes().to_vec()
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-12 * a.abs().max(b.abs()).max(1.0)
    }

    #[test]
    fn a_full_uniform_sample_counts_exactly() {
        // The whole table: 0..1000 once each.
        let s = ColumnStats::new((0..1000).rev().map(enc).collect(), 1000.0);
        assert_eq!(s.distinct(), 1000);
        assert_eq!(s.sample_len(), 1000);
        assert!(close(s.distinct_estimate(), 1000.0));
        assert!(close(s.eq_fraction(&enc(5)), 0.001));
        // Absent from a full sample: about one row.
        assert!(close(s.eq_fraction(&enc(5000)), 1.0 / 1001.0));
        let inc = |v: u32| Bound::Included(enc(v));
        let exc = |v: u32| Bound::Excluded(enc(v));
        let f = |lo: Bound<Vec<u8>>, hi: Bound<Vec<u8>>| {
            s.range_fraction(as_slice_bound(&lo), as_slice_bound(&hi))
        };
        assert!(close(f(inc(100), exc(200)), 0.1));
        assert!(close(f(inc(100), inc(200)), 0.101));
        assert!(close(f(exc(100), exc(200)), 0.099));
        assert!(close(f(Bound::Unbounded, exc(250)), 0.25));
        assert!(close(f(inc(900), Bound::Unbounded), 0.1));
        assert!(close(f(Bound::Unbounded, Bound::Unbounded), 1.0));
        assert_eq!(f(inc(5), exc(5)), 0.0);
        assert_eq!(f(inc(6), inc(5)), 0.0);
    }

    #[test]
    fn repeated_values_count_their_share() {
        // Values 0..10, 100 rows each, from a table of a million rows.
        let values: Vec<Vec<u8>> = (0..1000).map(|i| enc(i % 10)).collect();
        let s = ColumnStats::new(values, 1e6);
        assert_eq!(s.distinct(), 10);
        assert!(close(s.distinct_estimate(), 10.0));
        assert!(close(s.eq_fraction(&enc(3)), 0.1));
        // No singletons: an absent value is about one row of the table.
        assert!(close(s.eq_fraction(&enc(11)), 1.0 / (1e6 + 1.0)));
        let in_fraction = s.in_fraction(&[enc(1), enc(2), enc(2), enc(99)]);
        assert!(close(in_fraction, 0.2 + 1.0 / (1e6 + 1.0)));
        // Sums never pass 1.
        let all: Vec<Vec<u8>> = (0..10).map(enc).collect();
        assert!(close(s.in_fraction(&all), 1.0));
    }

    #[test]
    fn a_partial_sample_estimates_unseen_values_and_gaps() {
        // Every tenth value of 0..10_000, one row each: a 10% sample of a unique column.
        let s = ColumnStats::new((0..1000).map(|i| enc(i * 10)).collect(), 10_000.0);
        assert!(close(s.distinct_estimate(), 10_000.0));
        // Unseen mass 1 spread over 9 000 unseen values (truth: 1e-4).
        assert!(close(s.eq_fraction(&enc(15)), 1.0 / 9000.0));
        // [15, 17) lies inside the gap (10, 20): a fifth of one gap (truth: 2e-4).
        let r = s.range_fraction(Bound::Included(&enc(15)), Bound::Excluded(&enc(17)));
        assert!(close(r, 0.2 / 1001.0), "{r}");
        // A point range in a gap gets at least the absent-value estimate.
        let p = s.range_fraction(Bound::Included(&enc(15)), Bound::Included(&enc(15)));
        assert!(close(p, 1.0 / 9000.0), "{p}");
        // Past the sample's span: the absent-value estimate.
        let beyond = s.range_fraction(Bound::Excluded(&enc(99_990)), Bound::Unbounded);
        assert!(close(beyond, 1.0 / 9000.0));
    }

    #[test]
    fn missing_statistics_restrict_nothing() {
        let empty = ColumnStats::new(Vec::new(), 0.0);
        assert_eq!(empty.eq_fraction(b"x"), 1.0);
        assert_eq!(
            empty.range_fraction(Bound::Included(b"a"), Bound::Unbounded),
            1.0
        );
        let t = TableStats::from_sample(f64::NAN, &[]);
        assert_eq!(t.rows(), 0.0);
        assert!(t.columns.is_empty());
        assert_eq!(t.selectivity(3, &ColumnFilter::In(vec![vec![1]])), 1.0);
        assert_eq!(t.selectivity(3, &ColumnFilter::In(vec![])), 0.0);
    }

    #[test]
    fn table_stats_split_rows_into_columns() {
        let sample: Vec<Vec<Vec<u8>>> = (0..100u32)
            .map(|i| vec![enc(i % 4), enc(i), enc(7)])
            .chain(std::iter::once(vec![enc(0)]))
            .collect();
        let t = TableStats::from_sample(1000.0, &sample);
        assert_eq!(t.columns.len(), 3);
        assert_eq!(t.column(0).map(ColumnStats::sample_len), Some(101));
        assert_eq!(t.column(1).map(ColumnStats::sample_len), Some(100));
        assert_eq!(t.column(2).map(ColumnStats::distinct), Some(1));
        assert!(close(
            t.selectivity(0, &ColumnFilter::In(vec![enc(0)])),
            26.0 / 101.0
        ));
        assert!(close(t.selectivity(2, &ColumnFilter::Any), 1.0));
    }

    #[test]
    fn estimates_stay_fractions_on_odd_input() {
        let samples: Vec<Vec<Vec<u8>>> = vec![
            vec![],
            vec![vec![]],
            vec![vec![], vec![0], vec![0, 0], vec![255; 20]],
            vec![vec![1; 9], vec![1; 10], vec![1; 11]],
        ];
        let probes: Vec<Vec<u8>> = vec![vec![], vec![0], vec![1; 10], vec![1; 12], vec![255; 30]];
        for values in samples {
            for rows in [0.0, 1.0, 1e9, f64::INFINITY, -3.0] {
                let s = ColumnStats::new(values.clone(), rows);
                for p in &probes {
                    let e = s.eq_fraction(p);
                    assert!(e > 0.0 && e <= 1.0, "{e}");
                    for q in &probes {
                        for (lo, hi) in [
                            (Bound::Included(p.as_slice()), Bound::Excluded(q.as_slice())),
                            (Bound::Excluded(p.as_slice()), Bound::Included(q.as_slice())),
                            (Bound::Unbounded, Bound::Excluded(q.as_slice())),
                            (Bound::Excluded(p.as_slice()), Bound::Unbounded),
                        ] {
                            let r = s.range_fraction(lo, hi);
                            assert!((0.0..=1.0).contains(&r), "{r}");
                        }
                    }
                }
            }
        }
    }
}
