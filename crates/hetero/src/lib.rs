//! Mosaic's heterogeneous replicas: the cost model and the construction algorithm.
//!
//! A table's replicas need not store its rows in the same order. With *heterogeneous
//! replicas* each replica sorts a partition's rows by its own [`Permutation`] of the
//! clustering columns (`mosaic_rows::permute`), and a coordinator sends each read to the
//! replica that answers it cheapest: a read restricting `orderdate = v AND clerk = w` is a
//! narrow key range on a replica sorted by `(orderdate, clerk, custkey)` but a full
//! partition scan on one sorted by `(custkey, orderdate, clerk)`. This crate decides
//! *which* orders to build and *where* to route, following the paper in
//! `shared/papers/heterogeneous-replicas.txt` §3:
//!
//! - [`stats`]: what a node knows of a table's rows — per clustering column, a sorted
//!   sample of encoded components (an equi-depth histogram) giving the equality and range
//!   fractions of Eq. (1); [`sampler`] keeps that sample on the write path (reservoir
//!   sampling, where most writes cost one counter decrement).
//! - [`cost`]: Eq. (1)–(2) — the rows a replica in a given order scans for a
//!   [`ClusteringFilter`], following exactly how `KeySchema::permuted_ranges` plans the
//!   read, and a linear cost of those rows; the basis for routing a read.
//! - [`construct`]: Eq. (3)–(5) and Algorithm 1 (HRCA) — the weighted workload cost of a
//!   set of replica orders, simulated annealing over them, and an exhaustive search for
//!   small instances.
//!
//! Everything here is a pure decision over read-only inputs: no I/O, threads, clock or
//! system randomness (annealing and sampling draw from a seeded
//! `mosaic_env::rng::SplitMix64`, so a seed replays a decision bit for bit), and no input
//! — however odd the filter, sample or parameters — makes it panic. It depends on
//! `mosaic-rows` for the filter and permutation types and `mosaic-env` for the generator
//! only; it knows nothing of clusters, nodes or storage, which compose it elsewhere.
//!
//! [`Permutation`]: mosaic_rows::Permutation
//! [`ClusteringFilter`]: mosaic_rows::ClusteringFilter
#![deny(clippy::unwrap_used)]
#![deny(clippy::indexing_slicing)]
#![warn(missing_docs)]

pub mod construct;
pub mod cost;
pub mod sampler;
pub mod stats;
#[cfg(test)]
mod testing;

pub use construct::{
    exhaustive, hrca, workload_cost, AnnealParams, Construction, Query, EXHAUSTIVE_STATES_MAX,
};
pub use cost::{
    cheapest, matching_rows, planned_rows, replica_costs, rows_read, CostModel, MATCHING_ROWS_MIN,
};
pub use sampler::{Sampler, SAMPLE_CAPACITY_DEFAULT};
pub use stats::{ColumnStats, TableStats};
