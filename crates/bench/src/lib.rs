//! Load generators that speak CQL through the Rust `scylla` driver, so the same run works
//! against Mosaic or Apache Cassandra.
//!
//! Today: [`kv`], the prepared INSERT / SELECT-by-key throughput benchmark of the CQL issue
//! (fixed-size keys and values, N requests in flight). Depends on no Mosaic crate: it
//! measures the product from the outside, as a user's client would.

pub mod kv;
