//! Mosaic's CQL front end: Cassandra's native protocol v4 frames ([`frame`]) and the CQL
//! language ([`ast`], [`parse`]).
//!
//! Owns: turning bytes from a client into requests and responses into bytes, and CQL text
//! into statements. Must not depend on the engine, the cluster or tokio: the server crate
//! wires connections, and a coordinator interface executes statements, so this crate stays
//! pure and fuzzable. [`workload`] reads the workload files heterogeneous replicas'
//! orders are chosen for, with the same analysis SELECT uses.
#![deny(clippy::unwrap_used)]

pub mod ast;
pub mod auth;
pub mod coordinator;
pub mod frame;
pub mod index;
pub mod memory;
pub mod parse;
pub mod processor;
pub mod schema;
pub mod system;
pub mod workload;
