//! The bodies of Mosaic's fuzz targets: every decoder of bytes Mosaic reads from disk, from
//! clients or from peers, each as a `run(data)` that must return for any input and asserts
//! its oracle (round trips, checksummed damage detected, whole frames consumed).
//!
//! Two drivers call them: `fuzz/` (cargo-fuzz, coverage-guided, nightly, long runs) and this
//! crate's `tests/replay.rs`, which the regular test suite runs on stable: every target on
//! its [`seeds`], on any corpus `cargo fuzz` left under `fuzz/corpus/<target>/`, and on a
//! fixed number of seeded mutations of them — so a decoder change that panics on
//! near-valid input fails CI, not a fuzzing session weeks later.
//!
//! A dev-only crate: nothing in the server depends on it.
#![allow(clippy::unwrap_used)] // Oracles: a failed expectation must stop the run loudly.

pub mod cql_frame;
pub mod cql_json;
pub mod cql_parser;
pub mod cql_segments;
pub mod cql_statements;
pub mod cql_values;
pub mod internode_frame;
pub mod listener;
pub mod row_decoders;
pub mod sasl_plain;
pub mod seeds;
pub mod table_reader;
pub mod wal_reader;

/// A fuzz target: its name (as in `fuzz/Cargo.toml`) and its body.
pub type Target = (&'static str, fn(&[u8]));

/// Every target.
pub const TARGETS: [Target; 11] = [
    ("cql_frame", cql_frame::run),
    ("cql_json", cql_json::run),
    ("cql_parser", cql_parser::run),
    ("cql_segments", cql_segments::run),
    ("cql_statements", cql_statements::run),
    ("cql_values", cql_values::run),
    ("internode_frame", internode_frame::run),
    ("row_decoders", row_decoders::run),
    ("sasl_plain", sasl_plain::run),
    ("table_reader", table_reader::run),
    ("wal_reader", wal_reader::run),
];
