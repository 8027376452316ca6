//! System tables, computed on read from the catalog and the coordinator's view of the
//! nodes: `system.local`, `system.peers`, `system.peers_v2`, `system_schema.*`, and the
//! other tables of Cassandra's system keyspaces (served empty), plus the virtual
//! `system_virtual_schema`.
//!
//! Drivers read these at connect and after every schema change to build their token and
//! schema metadata, and they check column names and types, so every table has exactly
//! Cassandra's columns and CQL types: 3.11's, with the 4.0 additions drivers' 4.0 schema
//! parsers read (Mosaic reports a 4.0 release). Owns: the table definitions (`tables`),
//! their rows (`rows`), the small query engine that answers drivers' SELECTs (`query`),
//! and the schema elements and CQL text `DESCRIBE` shows (`describe`). Must not depend on
//! storage or the cluster: it only reads a [`SystemView`], so it is a pure function of
//! what it is given.
//!
//! # What is shown
//! - `system.local` / `system.peers` / `system.peers_v2`: one row per node, `tokens` as
//!   the decimal strings of the node's tokens.
//! - `system_schema.keyspaces`: the system keyspaces with Cassandra's replication, then
//!   the user keyspaces.
//! - `system_schema.tables` / `columns`: every system table served here and every user
//!   table. User tables show Mosaic's options, the Cassandra options given at CREATE
//!   (normalized as Cassandra shows them) and Cassandra's defaults for the rest; the
//!   replica layout is the `mosaic.layout` entry of `extensions` (UTF-8 bytes).
//! - `system_virtual_schema.keyspaces` / `tables` / `columns`: that keyspace itself and
//!   its three tables (the only virtual tables Mosaic has).
//! - Everything else (`dropped_columns`, `types`, `views`, `functions`, …): no rows, as
//!   Mosaic has no such objects.

pub(crate) mod cell;
pub(crate) mod describe;
mod options;
mod query;
mod rows;
mod tables;

#[cfg(test)]
mod tests;

use crate::ast::SelectStatement;
use crate::coordinator::{ClusterInfo, NodeInfo};
use crate::frame::{ColumnSpec, ErrorResponse, Rows};
use crate::schema::Catalog;

pub(crate) use options::{canonical_table_options, map_text, parse_map};
pub use rows::LAYOUT_EXTENSION;
pub(crate) use rows::PEER_PORT;
pub(crate) use tables::Kind as ColumnKindDef;

/// The definitions of `system_auth`'s tables (stored tables, see
/// [`crate::schema::auth_keyspace`]; listed in `system_schema` from these definitions).
pub(crate) fn auth_table_defs() -> impl Iterator<Item = &'static tables::TableDef> {
    tables::ALL
        .iter()
        .copied()
        .filter(|t| t.keyspace == crate::schema::AUTH_KEYSPACE)
}

/// What the system tables are computed from.
pub struct SystemView<'a> {
    /// The schema.
    pub catalog: &'a Catalog,
    /// This node.
    pub local: &'a NodeInfo,
    /// The other nodes.
    pub peers: &'a [NodeInfo],
    /// Cluster facts.
    pub cluster: &'a ClusterInfo,
    /// The secondary indexes this node has built, as `(keyspace, index)`.
    pub built_indexes: &'a [(String, String)],
}

/// Whether `keyspace` is answered by this module: every name in
/// [`crate::schema::SYSTEM_KEYSPACES`] but `system_auth`, whose tables are stored
/// ([`crate::schema::auth_keyspace`]).
pub fn is_system_keyspace(keyspace: &str) -> bool {
    crate::schema::is_system_keyspace(keyspace) && keyspace != crate::schema::AUTH_KEYSPACE
}

/// Answers a SELECT on a system table (the statement's keyspace must be set). `values`
/// are the statement's bound values by marker index (`None` = null). Every matching row
/// comes back in one page.
///
/// Unknown tables answer Invalid "unconfigured table `name`", as Cassandra does: drivers
/// rely on that to fall back (from `system.peers_v2` to `system.peers`, past
/// `system_schema.scylla_tables`, …).
pub fn select(
    view: &SystemView<'_>,
    stmt: &SelectStatement,
    values: &[Option<bytes::Bytes>],
) -> Result<Rows, ErrorResponse> {
    let plan = query::Plan::new(stmt)?;
    let rows = rows::rows(view, plan.table);
    plan.execute(rows, values)
}

/// The result columns a SELECT on a system table returns (for PREPARE), and the specs of
/// its bind markers by index. They are the same as [`select`] returns, whatever the
/// catalog, because system tables' columns never change.
pub fn prepare(
    stmt: &SelectStatement,
) -> Result<(Vec<ColumnSpec>, Vec<ColumnSpec>), ErrorResponse> {
    let plan = query::Plan::new(stmt)?;
    Ok((plan.columns, plan.binds))
}
