//! Choosing the replicas' orders: the workload cost of Eq. (3)–(4) and its minimisation,
//! Eq. (5), by simulated annealing (Algorithm 1, HRCA) or, for small instances, by
//! enumeration.
//!
//! A *state* is one clustering order per replica. Its cost for a workload is the weighted
//! mean, over the workload's queries, of the cost of each query on the replica that
//! answers it cheapest (Eq. (3)–(4), [`workload_cost`]); a query of weight 0 — or a
//! negative or non-finite weight — counts for nothing, and a workload with no weight
//! costs 0 in every state.
//!
//! [`hrca`] anneals from a given state: each step swaps two clustering positions of one
//! randomly chosen replica (the paper's NewState), always accepts a state no worse, and
//! accepts a worse one with probability `exp((C − C') / (t · C))` — the paper's rule with
//! the difference taken *relative to the current cost*, so a temperature means the same
//! whatever the units and size of the table: at `t = 0.1` a state 10% worse is accepted
//! with probability `1/e`. The temperature starts at `start_temperature` and is multiplied
//! by `cooling` after every step. The best state ever visited is returned, so the result
//! never costs more than the initial state; the draws come from a `SplitMix64` seeded by
//! the parameters, so a seed replays the search.
//!
//! [`exhaustive`] enumerates every multiset of orders, `C(m! + rf − 1, rf)` states for `m`
//! clustering columns and `rf` replicas, and refuses instances above
//! [`EXHAUSTIVE_STATES_MAX`]; it is the reference the annealing is tested against.
//!
//! With the linear [`CostModel`] and a positive per-row cost, the best state does not
//! depend on the model's constants (the mean of `a + b·rows` is `a + b·` the mean of the
//! rows), only the reported costs do.

use std::collections::BTreeMap;

use mosaic_env::rng::SplitMix64;
use mosaic_rows::{ClusteringFilter, Permutation};

use crate::cost::{rows_read, CostModel};
use crate::stats::TableStats;

/// The most states [`exhaustive`] enumerates.
pub const EXHAUSTIVE_STATES_MAX: u64 = 200_000;

/// The most orders whose per-query costs an annealing run remembers; past it, further
/// orders are evaluated afresh each time (only reachable with many clustering columns).
const CACHED_ORDERS_MAX: usize = 65_536;

/// One query pattern of a workload: a read's clustering filter, its limit, and how much
/// it counts (its frequency, say).
#[derive(Clone, Debug, PartialEq)]
pub struct Query {
    /// The restrictions of the read.
    pub filter: ClusteringFilter,
    /// Its `LIMIT`, if any.
    pub limit: Option<u64>,
    /// Its weight in the workload; a weight that is not positive and finite counts as 0.
    pub weight: f64,
    /// How many replicas answer it (its consistency level's count: 1 for `ONE`, 2 for
    /// `QUORUM` at replication factor 3): the coordinator asks the cheapest that many, so
    /// the query costs what the most expensive of them costs — the k-th least replica
    /// cost (Eq. (3) is k = 1). 0 counts as 1.
    pub replicas: usize,
}

impl Query {
    /// A query of weight 1 without a limit, answered by one replica.
    pub fn new(filter: ClusteringFilter) -> Query {
        Query {
            filter,
            limit: None,
            weight: 1.0,
            replicas: 1,
        }
    }

    /// This query answered by `replicas` replicas.
    pub fn with_replicas(self, replicas: usize) -> Query {
        Query { replicas, ..self }
    }

    /// This query with limit `limit`.
    pub fn with_limit(self, limit: u64) -> Query {
        Query {
            limit: Some(limit),
            ..self
        }
    }

    /// This query with weight `weight`.
    pub fn with_weight(self, weight: f64) -> Query {
        Query { weight, ..self }
    }
}

/// The parameters of an annealing run (see the module doc).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AnnealParams {
    /// Steps to take.
    pub iterations: usize,
    /// The first step's temperature, relative to the current cost (0: greedy).
    pub start_temperature: f64,
    /// The factor applied to the temperature after each step.
    pub cooling: f64,
    /// The seed of every random draw.
    pub seed: u64,
}

impl Default for AnnealParams {
    /// 5 000 steps, cooling from 0.2 (a state 20% worse accepted with probability `1/e`)
    /// to about 0.0013: ample for the handful of clustering columns and replicas a table
    /// has (three columns and three replicas have only 56 states), and milliseconds of
    /// work for a workload of tens of queries, since each order's costs are computed once.
    fn default() -> AnnealParams {
        AnnealParams {
            iterations: 5_000,
            start_temperature: 0.2,
            cooling: 0.999,
            seed: 0x4845_5445_524f, // "HETERO"
        }
    }
}

/// The orders chosen for a table's replicas.
#[derive(Clone, Debug, PartialEq)]
pub struct Construction {
    /// One order per replica. From [`hrca`], `orders[i]` is the order replica `i` should
    /// take: an order equal to some replica's initial order stays on that replica (so as
    /// few replicas as possible are rebuilt), and the rest fill the other replicas in
    /// sorted order. From [`exhaustive`], sorted.
    pub orders: Vec<Permutation>,
    /// The workload cost of `orders` (Eq. (4)).
    pub cost: f64,
    /// The workload cost of the initial state: [`hrca`]'s `initial`, or for
    /// [`exhaustive`] every replica in the declared order.
    pub initial_cost: f64,
    /// Annealing steps accepted (0 for [`exhaustive`]).
    pub accepted: usize,
}

/// The cost of `workload` on replicas in orders `replicas` (Eq. (4)): the weighted mean of
/// each query's cost on its cheapest replica. Infinite when there are no replicas but the
/// workload has weight; 0 when the workload has none.
pub fn workload_cost(
    stats: &TableStats,
    replicas: &[Permutation],
    workload: &[Query],
    model: &CostModel,
) -> f64 {
    Evaluator::new(stats, workload, model).total(replicas)
}

/// Simulated annealing from `initial` (Algorithm 1; see the module doc). Never returns a
/// state costing more than `initial`; replicas with fewer than two clustering columns
/// cannot move, and with none movable the result is `initial`.
pub fn hrca(
    stats: &TableStats,
    workload: &[Query],
    initial: Vec<Permutation>,
    model: &CostModel,
    params: &AnnealParams,
) -> Construction {
    let mut eval = Evaluator::new(stats, workload, model);
    let initial_cost = eval.total(&initial);
    let movable: Vec<usize> = initial
        .iter()
        .enumerate()
        .filter(|(_, p)| p.len() >= 2)
        .map(|(i, _)| i)
        .collect();
    let mut rng = SplitMix64::new(params.seed);
    let mut current = initial.clone();
    let mut current_cost = initial_cost;
    let mut best = current.clone();
    let mut best_cost = current_cost;
    let mut temperature = params.start_temperature;
    let mut accepted = 0;
    for _ in 0..params.iterations {
        let Some(next) = neighbour(&current, &movable, &mut rng) else {
            break;
        };
        let next_cost = eval.total(&next);
        if accept(current_cost, next_cost, temperature, &mut rng) {
            current = next;
            current_cost = next_cost;
            accepted += 1;
            if current_cost < best_cost {
                best.clone_from(&current);
                best_cost = current_cost;
            }
        }
        temperature *= params.cooling;
    }
    Construction {
        orders: align(best, &initial),
        cost: best_cost,
        initial_cost,
        accepted,
    }
}

/// The cheapest of every multiset of `rf` orders of `columns` clustering columns (Eq. (5)
/// by enumeration), the first in sorted order on a tie; `None` when `rf` is 0 or there
/// are more than [`EXHAUSTIVE_STATES_MAX`] multisets.
pub fn exhaustive(
    stats: &TableStats,
    workload: &[Query],
    rf: usize,
    columns: usize,
    model: &CostModel,
) -> Option<Construction> {
    if rf == 0 || rf as u64 > EXHAUSTIVE_STATES_MAX {
        return None;
    }
    let orders = (1..=columns as u64).try_fold(1u64, |acc, k| acc.checked_mul(k))?;
    if multisets(orders, rf as u64)? > EXHAUSTIVE_STATES_MAX {
        return None;
    }
    let perms = all_permutations(columns);
    let eval = Evaluator::new(stats, workload, model);
    let tables: Vec<Vec<f64>> = perms.iter().map(|p| eval.query_costs(p)).collect();
    let mut chosen = vec![0usize; rf];
    let mut best: Option<(f64, Vec<usize>)> = None;
    // Multisets as non-decreasing index vectors, in lexicographic order; bounded by the
    // count checked above.
    loop {
        let picked: Vec<&[f64]> = chosen
            .iter()
            .filter_map(|&i| tables.get(i).map(Vec::as_slice))
            .collect();
        let cost = eval.combine(&picked);
        let better = match &best {
            None => true,
            Some((b, _)) => cost < *b || (b.is_nan() && !cost.is_nan()),
        };
        if better {
            best = Some((cost, chosen.clone()));
        }
        let Some(pos) = chosen.iter().rposition(|&i| i + 1 < perms.len()) else {
            break;
        };
        let next = chosen.get(pos).map_or(0, |i| i + 1);
        for slot in chosen.iter_mut().skip(pos) {
            *slot = next;
        }
    }
    let (cost, indexes) = best?;
    let identity = eval.query_costs(&Permutation::identity(columns));
    Some(Construction {
        orders: indexes
            .iter()
            .filter_map(|&i| perms.get(i).cloned())
            .collect(),
        cost,
        initial_cost: eval.combine(&vec![identity.as_slice(); rf]),
        accepted: 0,
    })
}

/// The workload cost of states, remembering each order's per-query costs.
struct Evaluator<'a> {
    stats: &'a TableStats,
    model: &'a CostModel,
    /// The queries that count, with their weights.
    queries: Vec<(&'a Query, f64)>,
    total_weight: f64,
    cache: BTreeMap<Permutation, Vec<f64>>,
}

impl<'a> Evaluator<'a> {
    fn new(stats: &'a TableStats, workload: &'a [Query], model: &'a CostModel) -> Evaluator<'a> {
        let queries: Vec<(&Query, f64)> = workload
            .iter()
            .filter(|q| q.weight.is_finite() && q.weight > 0.0)
            .map(|q| (q, q.weight))
            .collect();
        let total_weight = queries.iter().map(|(_, w)| w).sum();
        Evaluator {
            stats,
            model,
            queries,
            total_weight,
            cache: BTreeMap::new(),
        }
    }

    /// The cost of each counted query on a replica in order `perm`.
    fn query_costs(&self, perm: &Permutation) -> Vec<f64> {
        self.queries
            .iter()
            .map(|(q, _)| {
                self.model
                    .cost(rows_read(self.stats, perm, &q.filter, q.limit))
            })
            .collect()
    }

    /// The cost of the state `orders`.
    fn total(&mut self, orders: &[Permutation]) -> f64 {
        let mut fresh: Vec<Vec<f64>> = Vec::new();
        for o in orders {
            if !self.cache.contains_key(o) {
                let costs = self.query_costs(o);
                if self.cache.len() < CACHED_ORDERS_MAX {
                    self.cache.insert(o.clone(), costs);
                } else {
                    fresh.push(costs);
                }
            }
        }
        let tables: Vec<&[f64]> = orders
            .iter()
            .filter_map(|o| self.cache.get(o).map(Vec::as_slice))
            .chain(fresh.iter().map(Vec::as_slice))
            .collect();
        self.combine(&tables)
    }

    /// Eq. (4) over per-replica cost tables (one cost per counted query each).
    fn combine(&self, tables: &[&[f64]]) -> f64 {
        if self.total_weight <= 0.0 {
            return 0.0;
        }
        if tables.is_empty() {
            return f64::INFINITY;
        }
        let mut sum = 0.0;
        let mut costs = Vec::with_capacity(tables.len());
        for (q, (query, weight)) in self.queries.iter().enumerate() {
            costs.clear();
            costs.extend(tables.iter().filter_map(|t| t.get(q)).copied());
            let cost = kth_least(&mut costs, query.replicas);
            sum += weight * cost;
        }
        sum / self.total_weight
    }
}

/// The `k`-th least of `costs` (k from 1, clamped to what there is; NaN sorts last);
/// infinity when there is none.
fn kth_least(costs: &mut [f64], k: usize) -> f64 {
    if costs.is_empty() {
        return f64::INFINITY;
    }
    let k = k.clamp(1, costs.len());
    costs.sort_unstable_by(|a, b| a.total_cmp(b));
    costs.get(k - 1).copied().unwrap_or(f64::INFINITY)
}

/// NewState: `state` with two clustering positions of one replica (of `movable`, those
/// with at least two columns) swapped; `None` when no replica can move.
fn neighbour(
    state: &[Permutation],
    movable: &[usize],
    rng: &mut SplitMix64,
) -> Option<Vec<Permutation>> {
    let replica = rng.pick(movable)?;
    let order = state.get(replica)?;
    let m = order.len();
    if m < 2 {
        return None;
    }
    let a = rng.index(m);
    let mut b = rng.index(m - 1);
    if b >= a {
        b += 1;
    }
    let mut positions = order.positions().to_vec();
    positions.swap(a, b); // a ≠ b, both below m.
    let swapped = Permutation::new(positions)?;
    let mut next = state.to_vec();
    *next.get_mut(replica)? = swapped;
    Some(next)
}

/// Whether to move from a state of cost `current` to one of cost `next` at `temperature`
/// (see the module doc): always when no worse, else with probability
/// `exp(−((next − current) / current) / temperature)`. A NaN cost is never accepted.
fn accept(current: f64, next: f64, temperature: f64, rng: &mut SplitMix64) -> bool {
    if next <= current {
        return true;
    }
    if !(temperature > 0.0 && current > 0.0) {
        return false;
    }
    let worse = (next - current) / current;
    let p = (-worse / temperature).exp();
    let u = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
    u < p
}

/// `best` rearranged so an order equal to a replica's initial order stays on that replica,
/// the others filling the remaining replicas in sorted order (see [`Construction::orders`]).
fn align(best: Vec<Permutation>, initial: &[Permutation]) -> Vec<Permutation> {
    let mut rest = best;
    rest.sort();
    let mut slots: Vec<Option<Permutation>> = vec![None; rest.len()];
    for (slot, init) in slots.iter_mut().zip(initial) {
        if let Ok(i) = rest.binary_search(init) {
            *slot = Some(rest.remove(i));
        }
    }
    let mut rest = rest.into_iter();
    slots
        .into_iter()
        .filter_map(|s| s.or_else(|| rest.next()))
        .collect()
}

/// `C(n + k − 1, k)`, the multisets of `k` of `n` things; `None` past `u64`, and any
/// count above [`EXHAUSTIVE_STATES_MAX`] may be reported as any larger number.
fn multisets(n: u64, k: u64) -> Option<u64> {
    if n <= 1 || k == 0 {
        return Some(u64::from(n == 1 || k == 0));
    }
    let mut count: u128 = 1;
    for i in 1..=k {
        // count = C(n + i − 1, i), exact: a product of i consecutive integers over i!.
        count = count.checked_mul(u128::from(n + i - 1))? / u128::from(i);
        if count > u128::from(EXHAUSTIVE_STATES_MAX) {
            break;
        }
    }
    u64::try_from(count).ok()
}

/// Every permutation of `0..m`, in lexicographic order (`m!` of them: callers bound `m`).
fn all_permutations(m: usize) -> Vec<Permutation> {
    let mut p: Vec<usize> = (0..m).collect();
    let mut out = Vec::new();
    loop {
        if let Some(perm) = Permutation::new(p.clone()) {
            out.push(perm);
        }
        // The next permutation: the last ascent i, the last j past it above p[i], swap,
        // and reverse the tail.
        let Some(i) = (0..m.saturating_sub(1))
            .rev()
            .find(|&i| p.get(i) < p.get(i + 1))
        else {
            break;
        };
        let Some(j) = (i + 1..m).rev().find(|&j| p.get(i) < p.get(j)) else {
            break;
        };
        p.swap(i, j);
        if let Some(tail) = p.get_mut(i + 1..) {
            tail.reverse();
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use std::ops::Bound;

    use mosaic_rows::ColumnFilter;

    use super::*;

    use crate::testing::{enc, eq, grid, perm};

    #[test]
    fn a_quorum_read_costs_its_second_cheapest_replica() {
        let stats = grid();
        let q1 = ClusteringFilter {
            columns: vec![
                ColumnFilter::In(vec![enc(3)]),
                ColumnFilter::Any,
                ColumnFilter::Any,
            ],
        };
        let q2 = ClusteringFilter {
            columns: vec![
                ColumnFilter::Any,
                ColumnFilter::In(vec![enc(4)]),
                ColumnFilter::Any,
            ],
        };
        let model = CostModel::default();
        let one = vec![Query::new(q1.clone()), Query::new(q2.clone())];
        let quorum = vec![
            Query::new(q1).with_replicas(2),
            Query::new(q2).with_replicas(2),
        ];
        let split = [perm(&[0, 1, 2]), perm(&[1, 0, 2]), perm(&[2, 0, 1])];
        let paired = [perm(&[0, 1, 2]), perm(&[0, 1, 2]), perm(&[1, 0, 2])];
        // At ONE, one replica per query's order is enough either way; at QUORUM only
        // two replicas in an order serve a query well.
        let c = |w: &[Query], s: &[Permutation]| workload_cost(&stats, s, w, &model);
        assert!(c(&one, &split) <= c(&one, &paired));
        assert!(c(&quorum, &paired) < c(&quorum, &split));
        assert!(c(&quorum, &split) > c(&one, &split));
    }

    #[test]
    fn permutations_are_enumerated_in_order() {
        let all = all_permutations(3);
        let positions: Vec<&[usize]> = all.iter().map(Permutation::positions).collect();
        assert_eq!(
            positions,
            vec![
                &[0, 1, 2][..],
                &[0, 2, 1],
                &[1, 0, 2],
                &[1, 2, 0],
                &[2, 0, 1],
                &[2, 1, 0]
            ]
        );
        assert_eq!(all_permutations(0).len(), 1);
        assert_eq!(all_permutations(5).len(), 120);
    }

    #[test]
    fn multiset_counts() {
        assert_eq!(multisets(6, 3), Some(56));
        assert_eq!(multisets(6, 2), Some(21));
        assert_eq!(multisets(1, 7), Some(1));
        assert_eq!(multisets(24, 3), Some(2600));
        assert!(multisets(40_320, 3).is_some_and(|n| n > EXHAUSTIVE_STATES_MAX));
    }

    #[test]
    fn the_workload_cost_is_the_weighted_mean_of_cheapest_replicas() {
        let s = grid();
        let model = CostModel {
            fixed_micros: 0.0,
            per_row_micros: 1.0,
        };
        let q1 = Query::new(ClusteringFilter {
            columns: vec![eq(1), ColumnFilter::Any, ColumnFilter::Any],
        });
        let q2 = Query::new(ClusteringFilter {
            columns: vec![ColumnFilter::Any, ColumnFilter::Any, eq(1)],
        })
        .with_weight(3.0);
        let ignored = Query::new(ClusteringFilter::default()).with_weight(f64::NAN);
        let workload = vec![q1, q2, ignored];
        let id = perm(&[0, 1, 2]);
        let cab = perm(&[2, 0, 1]);
        // q1: 100 rows on (a, b, c), q2: 200 rows on (c, a, b), 1000 on the other.
        let both = workload_cost(&s, &[id.clone(), cab.clone()], &workload, &model);
        assert!((both - (100.0 + 3.0 * 200.0) / 4.0).abs() < 1e-9);
        let alone = workload_cost(&s, std::slice::from_ref(&id), &workload, &model);
        assert!((alone - (100.0 + 3.0 * 1000.0) / 4.0).abs() < 1e-9);
        assert_eq!(workload_cost(&s, &[], &workload, &model), f64::INFINITY);
        assert_eq!(workload_cost(&s, &[id], &[], &model), 0.0);
    }

    #[test]
    fn annealing_is_deterministic_and_never_worse_than_its_start() {
        let s = grid();
        let workload = vec![
            Query::new(ClusteringFilter {
                columns: vec![ColumnFilter::Any, eq(3), eq(1)],
            }),
            Query::new(ClusteringFilter {
                columns: vec![
                    eq(2),
                    ColumnFilter::Range {
                        lo: Bound::Included(enc(3)),
                        hi: Bound::Excluded(enc(6)),
                    },
                    ColumnFilter::Any,
                ],
            }),
        ];
        let model = CostModel::default();
        let initial = vec![Permutation::identity(3); 2];
        let params = AnnealParams::default();
        let a = hrca(&s, &workload, initial.clone(), &model, &params);
        let b = hrca(&s, &workload, initial.clone(), &model, &params);
        assert_eq!(a, b);
        assert!(a.cost < a.initial_cost);
        assert!(a.accepted > 0);
        // Zero steps, a hot walk and a greedy one: never worse than the start.
        for (iterations, start_temperature) in [(0, 1.0), (1, 1e9), (50, 1e9), (50, 0.0)] {
            let p = AnnealParams {
                iterations,
                start_temperature,
                cooling: 1.0,
                seed: 5,
            };
            let c = hrca(&s, &workload, initial.clone(), &model, &p);
            assert!(c.cost <= c.initial_cost);
            assert_eq!(c.orders.len(), 2);
            assert!((workload_cost(&s, &c.orders, &workload, &model) - c.cost).abs() < 1e-9);
        }
    }

    #[test]
    fn unmovable_states_come_back_unchanged() {
        let s = grid();
        let workload = vec![Query::new(ClusteringFilter::default())];
        let model = CostModel::default();
        let params = AnnealParams::default();
        let one = vec![perm(&[0]), Permutation::identity(0)];
        let c = hrca(&s, &workload, one.clone(), &model, &params);
        assert_eq!(c.orders, one);
        assert_eq!(c.accepted, 0);
        let none = hrca(&s, &workload, Vec::new(), &model, &params);
        assert!(none.orders.is_empty());
        assert_eq!(none.cost, f64::INFINITY);
    }

    #[test]
    fn orders_kept_from_the_start_stay_on_their_replica() {
        let (a, b, c) = (perm(&[0, 1, 2]), perm(&[1, 0, 2]), perm(&[2, 1, 0]));
        // b and a survive on the replicas that had them; c fills the remaining one.
        let aligned = align(
            vec![c.clone(), a.clone(), b.clone()],
            &[b.clone(), perm(&[0, 2, 1]), a.clone()],
        );
        assert_eq!(aligned, vec![b.clone(), c.clone(), a.clone()]);
        let sorted = align(vec![c.clone(), b.clone(), a.clone()], &[]);
        assert_eq!(sorted, vec![a, b, c]);
    }

    #[test]
    fn exhaustive_search_refuses_large_instances() {
        let s = grid();
        let workload = vec![Query::new(ClusteringFilter::default())];
        let model = CostModel::default();
        assert!(exhaustive(&s, &workload, 0, 3, &model).is_none());
        assert!(exhaustive(&s, &workload, 3, 8, &model).is_none());
        assert!(exhaustive(&s, &workload, 3, 30, &model).is_none());
        assert!(exhaustive(&s, &workload, usize::MAX, 1, &model).is_none());
        let small = exhaustive(&s, &workload, 3, 4, &model);
        assert!(small.is_some_and(|c| c.orders.len() == 3 && c.orders.is_sorted()));
    }
}
