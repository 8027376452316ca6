//! System tables, computed on read from the catalog and the coordinator's view of the
//! nodes: `system.local`, `system.peers`, `system.peers_v2` and `system_schema.*`.

// Interface placeholder so the statement processor compiles while the system tables are
// being written (same signatures as the real module).
use crate::ast::SelectStatement;
use crate::coordinator::{ClusterInfo, NodeInfo};
use crate::frame::{ColumnSpec, ErrorKind, ErrorResponse, Rows};
use crate::schema::Catalog;

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
}

/// Whether `keyspace` is answered by this module.
pub fn is_system_keyspace(keyspace: &str) -> bool {
    crate::schema::is_system_keyspace(keyspace)
}

/// Answers a SELECT on a system table.
pub fn select(
    _view: &SystemView<'_>,
    stmt: &SelectStatement,
    _values: &[Option<bytes::Bytes>],
) -> Result<Rows, ErrorResponse> {
    Err(ErrorResponse::new(
        ErrorKind::Invalid,
        format!("unconfigured table {}", stmt.table.name.as_str()),
    ))
}

/// The result columns and bind-marker specs of a SELECT on a system table.
pub fn prepare(
    stmt: &SelectStatement,
) -> Result<(Vec<ColumnSpec>, Vec<ColumnSpec>), ErrorResponse> {
    Err(ErrorResponse::new(
        ErrorKind::Invalid,
        format!("unconfigured table {}", stmt.table.name.as_str()),
    ))
}
