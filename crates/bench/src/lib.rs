//! Load generators that speak CQL through the Rust `scylla` driver, so the same run works
//! against Mosaic or Apache Cassandra.
//!
//! Depends on no Mosaic crate: it measures the product from the outside, as a user's client
//! would. Modules:
//! - [`generator`], [`workload`]: YCSB's core workload (presets A–F, key naming, zipfian /
//!   scrambled zipfian / uniform / latest / hotspot choices), pure and unit-tested;
//! - [`ycsb`]: `mosaic bench load|run`, which executes a workload over CQL with prepared
//!   statements, closed or open loop, and reports throughput, HDR latency percentiles per
//!   operation, errors by kind and (with server pids) disk bytes per user byte from
//!   `/proc/PID/io`;
//! - [`cli`]: the `load`/`run` command line, shared by the `mosaic` binary;
//! - [`kv`]: the prepared INSERT / SELECT-by-key throughput benchmark (`mosaic-cql-bench`).
#![allow(clippy::disallowed_methods)] // A benchmark client measures real time and runs real threads; it is not simulated.

pub mod cli;
pub mod generator;
pub mod kv;
pub mod osio;
pub mod workload;
pub mod ycsb;
