//! `GET /netstats`, `POST /decommission` and `POST /removenode`: a node's topology-change
//! streams, its leaving the ring, and a dead node's removal.

use std::sync::Arc;

use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;

use super::api::{DecommissionReport, Netstats, StreamSessionStatus};
use super::{error, Admin, SCHEMA_WAIT_MS};

/// What the node's join or leave streams (`mosaic netstats`).
fn netstats_of(admin: &Admin) -> Netstats {
    let node = admin.cluster.node();
    let s = node.streams();
    Netstats {
        mode: format!("{:?}", node.ring_status()),
        operation: s.operation,
        finished: s.finished,
        error: s.error,
        elapsed_ms: s.elapsed_ms,
        rehomed_entries: s.rehomed_entries,
        paxos_repaired: s.paxos_repaired,
        sessions: s
            .sessions
            .into_iter()
            .map(|x| StreamSessionStatus {
                peer: x.peer.map(|p| p.to_string()).unwrap_or_default(),
                direction: if x.receiving { "receiving" } else { "sending" }.to_owned(),
                ranges_total: x.ranges_total,
                ranges_done: x.ranges_done,
                entries: x.entries,
                bytes: x.bytes,
            })
            .collect(),
    }
}

/// Every table, once the live nodes agree on the schema (a move covers them all); the
/// refusal to answer when they do not.
async fn agreed_tables(admin: &Admin) -> Result<Vec<mosaic_types::TableId>, Response> {
    if !admin
        .cluster
        .node()
        .await_schema_agreement(SCHEMA_WAIT_MS)
        .await
    {
        return Err(error(
            StatusCode::SERVICE_UNAVAILABLE,
            "the live nodes do not agree on the schema yet; retry",
        ));
    }
    Ok(admin
        .local
        .current_catalog()
        .tables()
        .map(|t| t.id)
        .collect())
}

/// `GET /netstats`.
pub(super) async fn netstats(State(admin): State<Arc<Admin>>) -> Json<Netstats> {
    Json(netstats_of(&admin))
}

/// `POST /decommission`: hands this node's ranges to the nodes that will own them,
/// leaves the ring and stops the node. Refused while another node joins or leaves, or
/// when a keyspace would keep fewer nodes than its replication factor.
pub(super) async fn decommission(State(admin): State<Arc<Admin>>) -> Response {
    let node = admin.cluster.node();
    let tables = match agreed_tables(&admin).await {
        Ok(tables) => tables,
        Err(refused) => return refused,
    };
    match node.decommission(&tables).await {
        Ok(()) => {
            let marker = admin
                .local
                .data_dir()
                .join(crate::moves::DECOMMISSIONED_FILE);
            if let Err(e) = crate::durable::write_atomic(&marker, b"") {
                tracing::warn!(target: "mosaic::admin", path = %marker.display(), error = %e,
                    "could not mark the data directory decommissioned");
            }
            let report = DecommissionReport {
                streams: netstats_of(&admin),
            };
            tracing::info!(target: "mosaic::admin", "decommissioned; stopping");
            admin.stop.notify_one();
            (StatusCode::OK, Json(report)).into_response()
        }
        Err(e) => error(StatusCode::CONFLICT, format!("decommission failed: {e}")),
    }
}

/// `POST /removenode?host_id=UUID`: removes the dead node with that host id from the ring;
/// the survivors (this node coordinating) re-replicate its ranges. Refused while another
/// node joins or leaves, for a node that is up, or for this node.
pub(super) async fn removenode(
    State(admin): State<Arc<Admin>>,
    Query(params): Query<Vec<(String, String)>>,
) -> Response {
    let Some((_, id)) = params.iter().find(|(k, _)| k == "host_id") else {
        return error(StatusCode::BAD_REQUEST, "name the node: ?host_id=UUID");
    };
    let Ok(uuid) = id.parse::<mosaic_cql::schema::Uuid>() else {
        return error(
            StatusCode::BAD_REQUEST,
            format!("{id:?} is not a host id (a UUID)"),
        );
    };
    let node = admin.cluster.node();
    let tables = match agreed_tables(&admin).await {
        Ok(tables) => tables,
        Err(refused) => return refused,
    };
    match node
        .remove_node(mosaic_types::HostId(uuid.0), &tables)
        .await
    {
        Ok(()) => (
            StatusCode::OK,
            Json(DecommissionReport {
                streams: netstats_of(&admin),
            }),
        )
            .into_response(),
        Err(e) => error(StatusCode::CONFLICT, format!("removenode failed: {e}")),
    }
}
