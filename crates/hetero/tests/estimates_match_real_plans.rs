//! The cost model's planned rows are the rows `KeySchema::permuted_ranges` really plans:
//! on a complete table (every combination of values once, so the columns are independent
//! and the statistics exact), for random filters — `IN` lists long enough to pass the
//! range cap, ranges, unrestricted and unsatisfiable columns, ascending and descending —
//! and every order, the estimate equals the count of rows inside the plan's key ranges.
#![allow(clippy::unwrap_used)]

mod common;

use common::{close, orders3};
use mosaic_env::rng::SplitMix64;
use mosaic_hetero::{rows_read, TableStats};
use mosaic_rows::{ClusteringFilter, ColumnFilter, KeySchema, Order};
use mosaic_types::{CqlType, CqlValue};

/// Values per clustering column: 960 rows, and IN lists of up to 20 × 16 × 3 ranges,
/// past the cap of 256.
const DOMAINS: [i32; 3] = [20, 16, 3];

/// A restriction of `column` that, if it allows anything, allows a value of the domain:
/// unrestricted, an IN of distinct domain values (sometimes none), or a range from a
/// domain value, in logical order.
fn column_filter(
    rng: &mut SplitMix64,
    schema: &KeySchema,
    column: usize,
    domain: i32,
) -> ColumnFilter {
    match rng.below(7) {
        0 | 1 => ColumnFilter::Any,
        2 => schema.column_values_filter(column, &[]).unwrap(),
        3..=5 => {
            // n distinct values (a partial shuffle), often the whole domain.
            let n = if rng.chance(400_000) {
                domain as usize
            } else {
                rng.between(1, domain as u64) as usize
            };
            let mut all: Vec<i32> = (0..domain).collect();
            for i in 0..n {
                let j = i + rng.index(all.len() - i);
                all.swap(i, j);
            }
            let values: Vec<CqlValue> = all[..n].iter().map(|v| CqlValue::Int(*v)).collect();
            schema.column_values_filter(column, &values).unwrap()
        }
        _ => {
            let lo = rng.below(domain as u64) as i32;
            let hi = lo + 1 + rng.below((domain - lo) as u64) as i32;
            let (lo, hi) = (CqlValue::Int(lo), CqlValue::Int(hi));
            let lower = (!rng.chance(250_000)).then_some((&lo, true));
            let upper = (!rng.chance(250_000)).then_some((&hi, false));
            schema.column_range_filter(column, lower, upper).unwrap()
        }
    }
}

#[test]
fn planned_rows_equal_the_rows_in_the_planned_ranges() {
    let mut rng = SplitMix64::new(77);
    for orders in [
        [Order::Asc, Order::Asc, Order::Asc],
        [Order::Desc, Order::Asc, Order::Desc],
    ] {
        let schema = KeySchema::new(
            vec![CqlType::Int],
            orders.iter().map(|o| (CqlType::Int, *o)).collect(),
        )
        .unwrap();
        let partition = schema.partition_prefix(&[CqlValue::Int(1)]).unwrap();
        // Every row: its clustering values, components and canonical key.
        let mut rows = Vec::new();
        for a in 0..DOMAINS[0] {
            for b in 0..DOMAINS[1] {
                for c in 0..DOMAINS[2] {
                    let values = [CqlValue::Int(a), CqlValue::Int(b), CqlValue::Int(c)];
                    let components: Vec<Vec<u8>> = values
                        .iter()
                        .enumerate()
                        .map(|(i, v)| schema.encode_clustering_component(i, v).unwrap())
                        .collect();
                    let key = schema.row_key(&partition, &values).unwrap();
                    rows.push((components, key));
                }
            }
        }
        let sample: Vec<Vec<Vec<u8>>> = rows.iter().map(|(c, _)| c.clone()).collect();
        let stats = TableStats::from_sample(rows.len() as f64, &sample);
        let permuted: Vec<Vec<Vec<u8>>> = orders3()
            .iter()
            .map(|p| {
                rows.iter()
                    .map(|(_, key)| schema.permute_key(key, p).unwrap())
                    .collect()
            })
            .collect();
        let mut capped = 0;
        for _ in 0..400 {
            let filter = ClusteringFilter {
                columns: (0..3)
                    .map(|i| column_filter(&mut rng, &schema, i, DOMAINS[i]))
                    .collect(),
            };
            for (p, keys) in orders3().iter().zip(&permuted) {
                let ranges = schema.permuted_ranges(partition.as_bytes(), &filter, p);
                // The ranges are sorted and disjoint: the only candidate is the first
                // whose end is past the key.
                let planned = keys
                    .iter()
                    .filter(|k| {
                        let i = ranges.partition_point(|(_, hi)| hi <= *k);
                        ranges.get(i).is_some_and(|(lo, _)| lo <= *k)
                    })
                    .count();
                let estimate = rows_read(&stats, p, &filter, None);
                assert!(
                    close(estimate, planned as f64),
                    "{filter:?} {p:?}: estimated {estimate}, planned {planned}"
                );
                // Whether the plan stopped at the cap: leading INs whose product passes it.
                let mut expanded = 1usize;
                for &d in p.positions() {
                    let ColumnFilter::In(v) = filter.column(d) else {
                        break;
                    };
                    expanded *= v.len();
                    if expanded > mosaic_rows::permute::MAX_PLANNED_RANGES {
                        capped += 1;
                        break;
                    }
                }
            }
        }
        // The cap was exercised, not just allowed for.
        assert!(capped > 10, "capped {capped}");
    }
}
