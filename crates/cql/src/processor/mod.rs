//! The statement layer: QUERY, PREPARE, EXECUTE and BATCH requests in, responses out.
//!
//! Owns a connection-independent [`Processor`] (the prepared-statement cache and the
//! coordinator) and per-connection [`Session`] state (the current keyspace, the protocol
//! version). Statements become row-layer operations handed to a
//! [`crate::coordinator::Coordinator`]; SELECTs on system tables are answered by
//! [`crate::system`] from the catalog and the coordinator's view of the nodes.

use std::sync::Arc;

use crate::coordinator::Coordinator;
use crate::frame::{ErrorKind, ErrorResponse, ProtocolVersion, Request, Response};

/// Per-connection state.
#[derive(Clone, Debug)]
pub struct Session {
    /// The keyspace `USE` selected.
    pub keyspace: Option<String>,
    /// The connection's protocol version.
    pub version: ProtocolVersion,
}

impl Session {
    /// A session of a connection speaking `version`, with no keyspace.
    pub fn new(version: ProtocolVersion) -> Session {
        Session {
            keyspace: None,
            version,
        }
    }
}

/// Executes requests against a coordinator; shared by every connection of a node.
pub struct Processor<C> {
    coordinator: Arc<C>,
}

impl<C: Coordinator> Processor<C> {
    /// A processor over `coordinator`.
    pub fn new(coordinator: Arc<C>) -> Processor<C> {
        Processor { coordinator }
    }

    /// The coordinator.
    pub fn coordinator(&self) -> &Arc<C> {
        &self.coordinator
    }

    /// Handles a QUERY, PREPARE, EXECUTE or BATCH request. Connection-level requests
    /// (STARTUP, OPTIONS, REGISTER, AUTH_RESPONSE) are the server's and get a protocol error
    /// here. A DDL statement answers with a SchemaChange result, which the server also
    /// pushes as an event to connections registered for schema changes.
    pub async fn process(&self, _session: &mut Session, request: Request) -> Response {
        let _ = request;
        Response::Error(ErrorResponse::new(
            ErrorKind::Server,
            "statement execution is not built yet",
        ))
    }
}
