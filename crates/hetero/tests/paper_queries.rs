//! The paper's two query shapes on an orders table clustered by (custkey, orderdate,
//! clerk): each is cheap on one replica order and a full scan on the other, and two
//! heterogeneous replicas serve both as well as any single order serves either.
#![allow(clippy::unwrap_used)]

mod common;

use common::{between, close, enc, eq, orders3, perm};
use mosaic_env::rng::SplitMix64;
use mosaic_hetero::{
    exhaustive, hrca, replica_costs, rows_read, AnnealParams, CostModel, Query, Sampler, TableStats,
};
use mosaic_rows::{ClusteringFilter, ColumnFilter, Permutation};

const CUSTKEY: usize = 0;
const ORDERDATE: usize = 1;
const CLERK: usize = 2;

/// Q1: `orderdate = v AND clerk = w AND custkey >= 0`.
fn q1(orderdate: u32, clerk: u32) -> ClusteringFilter {
    let mut columns = vec![ColumnFilter::Any; 3];
    columns[CUSTKEY] = ColumnFilter::Range {
        lo: std::ops::Bound::Included(enc(0)),
        hi: std::ops::Bound::Unbounded,
    };
    columns[ORDERDATE] = eq(orderdate);
    columns[CLERK] = eq(clerk);
    ClusteringFilter { columns }
}

/// Q2: `custkey = x AND clerk = w AND orderdate in [s, e)`.
fn q2(custkey: u32, clerk: u32, s: u32, e: u32) -> ClusteringFilter {
    let mut columns = vec![ColumnFilter::Any; 3];
    columns[CUSTKEY] = eq(custkey);
    columns[ORDERDATE] = between(s, e);
    columns[CLERK] = eq(clerk);
    ClusteringFilter { columns }
}

fn declared() -> Permutation {
    perm(&[CUSTKEY, ORDERDATE, CLERK])
}

fn by_date() -> Permutation {
    perm(&[ORDERDATE, CLERK, CUSTKEY])
}

#[test]
fn estimates_match_hand_computed_rows_on_a_complete_table() {
    // The whole table as its own sample: 10 customers × 20 days × 5 clerks, one order each.
    let mut rows = Vec::new();
    for c in 0..10 {
        for d in 0..20 {
            for k in 0..5 {
                rows.push(vec![enc(c), enc(d), enc(k)]);
            }
        }
    }
    let stats = TableStats::from_sample(1000.0, &rows);
    let q1 = q1(7, 2);
    let q2 = q2(3, 2, 5, 9);
    // Q1 on (orderdate, clerk, custkey): 1000 × 1/20 × 1/5 × (custkey >= 0: all) = 10.
    assert!(close(rows_read(&stats, &by_date(), &q1, None), 10.0));
    // Q1 on (custkey, orderdate, clerk): the leading range holds everything: 1000.
    assert!(close(rows_read(&stats, &declared(), &q1, None), 1000.0));
    // Q2 on (custkey, orderdate, clerk): 1000 × 1/10 × 4/20, clerk residual = 20.
    assert!(close(rows_read(&stats, &declared(), &q2, None), 20.0));
    // Q2 on (orderdate, clerk, custkey): the range first ends the plan: 1000 × 4/20 = 200.
    assert!(close(rows_read(&stats, &by_date(), &q2, None), 200.0));
    // Q2's best order puts both equalities first: 1000 × 1/10 × 1/5 × 4/20 = 4.
    assert!(close(
        rows_read(&stats, &perm(&[CUSTKEY, CLERK, ORDERDATE]), &q2, None),
        4.0
    ));
}

/// A million orders (150 000 customers, 2 400 days, 1 000 clerks, uniform), sampled on
/// the write path; returns the statistics and the rows.
fn sampled_orders() -> (TableStats, Vec<[u32; 3]>) {
    let mut rng = SplitMix64::new(2024);
    let mut sampler = Sampler::new(4096, 11);
    let mut table = Vec::with_capacity(1_000_000);
    for _ in 0..1_000_000 {
        let row = [
            rng.below(150_000) as u32,
            rng.below(2_400) as u32,
            rng.below(1_000) as u32,
        ];
        if sampler.wants_next() {
            sampler.add(row.iter().map(|v| enc(*v)).collect());
        }
        table.push(row);
    }
    (sampler.stats(), table)
}

#[test]
fn each_query_is_cheap_on_its_own_order_and_a_scan_on_the_other() {
    let (stats, table) = sampled_orders();
    assert_eq!(stats.rows, 1e6);
    let model = CostModel::default();
    let replicas = [declared(), by_date()];
    let (q1, q2) = (q1(1_000, 17), q2(4_242, 17, 1_000, 1_240));

    let c1 = replica_costs(&stats, &replicas, &q1, None, &model);
    let c2 = replica_costs(&stats, &replicas, &q2, None, &model);
    assert!(c1[1] * 100.0 < c1[0], "Q1 {c1:?}");
    assert!(c2[0] * 100.0 < c2[1], "Q2 {c2:?}");

    // The scans the estimates describe, measured on the table itself.
    assert!(close(rows_read(&stats, &declared(), &q1, None), 1e6));
    let in_range = table
        .iter()
        .filter(|r| (1_000..1_240).contains(&r[ORDERDATE]))
        .count();
    let estimate = rows_read(&stats, &by_date(), &q2, None);
    let error = (estimate - in_range as f64).abs() / in_range as f64;
    assert!(error < 0.2, "estimate {estimate}, actual {in_range}");
}

#[test]
fn two_heterogeneous_replicas_serve_both_queries_at_their_best() {
    let (stats, _) = sampled_orders();
    let model = CostModel::default();
    let workload = vec![
        Query::new(q1(1_000, 17)),
        Query::new(q2(4_242, 17, 1_000, 1_240)).with_weight(2.0),
    ];
    let best_alone: Vec<f64> = workload
        .iter()
        .map(|q| {
            orders3()
                .iter()
                .map(|p| rows_read(&stats, p, &q.filter, q.limit))
                .fold(f64::INFINITY, f64::min)
        })
        .collect();
    let exact = exhaustive(&stats, &workload, 2, 3, &model).unwrap();
    let annealed = hrca(
        &stats,
        &workload,
        vec![declared(); 2],
        &model,
        &AnnealParams::default(),
    );
    assert!(close(annealed.cost, exact.cost));
    assert!(annealed.cost * 100.0 < annealed.initial_cost);
    for construction in [&exact, &annealed] {
        for (q, best) in workload.iter().zip(&best_alone) {
            let served = construction
                .orders
                .iter()
                .map(|p| rows_read(&stats, p, &q.filter, q.limit))
                .fold(f64::INFINITY, f64::min);
            assert!(close(served, *best), "{:?}", construction.orders);
        }
    }
    // Serving Q1 at its best takes a replica led by orderdate and clerk.
    let q1_first = |p: &Permutation| {
        let lead = &p.positions()[..2];
        lead.contains(&ORDERDATE) && lead.contains(&CLERK)
    };
    assert!(annealed.orders.iter().any(q1_first));
}
