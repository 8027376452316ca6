//! `mosaic-bench`: load generators that speak CQL through the Rust `scylla` driver, so the
//! same run works against Mosaic or Apache Cassandra — YCSB-style workloads, as
//! `cassandra-stress` is to Cassandra. Not linked into the server.
//!
//! Depends on no Mosaic crate: it measures the product from the outside, as a user's client
//! would. Modules:
//! - [`generator`], [`workload`]: YCSB's core workload (presets A–F, key naming, zipfian /
//!   scrambled zipfian / uniform / latest / hotspot choices), pure and unit-tested;
//! - [`ycsb`]: `mosaic-bench load|run`, which executes a workload over CQL with prepared
//!   statements, closed or open loop, and reports throughput, HDR latency percentiles per
//!   operation, errors by kind and (with server pids) disk bytes per user byte from
//!   `/proc/PID/io`;
//! - [`monitor`]: the progress display and the per-second timeline of a phase;
//! - [`cli`]: the `load`/`run` command line, with `--admin-hosts` read over HTTP;
//! - [`index`]: secondary-index queries (low and high cardinality) and list appends
//!   (`mosaic-bench index`);
//! - [`lwt`]: lightweight transactions on uncontended and contended keys, and counter
//!   increments (`mosaic-bench lwt`);
//! - [`phase`]: the closed-loop phases `index` and `lwt` run, and their command plumbing;
//! - [`security`]: `--username`/`--password` and `--ca-file` (TLS) for every session;
//! - [`kv`]: the prepared INSERT / SELECT-by-key throughput benchmark (`mosaic-bench kv`);
//! - [`tpch`]: TPC-H `orders` and the heterogeneous-replicas paper's two queries
//!   (`mosaic-bench tpch load|workload|run`).
#![allow(clippy::disallowed_methods)] // A benchmark client measures real time and runs real threads; it is not simulated.

pub mod cli;
pub mod generator;
pub mod index;
pub mod kv;
pub mod lwt;
pub mod monitor;
pub mod osio;
pub mod phase;
pub mod security;
pub mod tpch;
pub mod workload;
pub mod ycsb;
