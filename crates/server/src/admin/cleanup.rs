//! `POST /cleanup[?keyspace=K[&table=T]]` (`mosaic cleanup`, like `nodetool cleanup`):
//! drops from this node's stores what it no longer owns — ranges another node took over,
//! and copies left in the structures of a role it no longer has (see
//! `mosaic_replica::cleanup`). Refused while any node joins, leaves or is being removed.

use std::sync::Arc;

use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;

use super::api::{CleanupReport, StructureCleanup, TableCleanup};
use super::{error, scoped_tables, table_scope, Admin};
use crate::cluster::cleanup::{ownership, refusal, ring_shape};

/// What a cleanup leaves of an `erasure-tiered` table.
const ERASURE_NOTE: &str = "its trees were cleaned; the parity shards and coding state this \
     node keeps for coded tables are not";

/// `POST /cleanup`: every table the query names, one after the other.
pub(super) async fn cleanup(
    State(admin): State<Arc<Admin>>,
    Query(params): Query<Vec<(String, String)>>,
) -> Response {
    let (keyspace, table) = match table_scope("cleanup", params) {
        Ok(scope) => scope,
        Err(e) => return error(StatusCode::BAD_REQUEST, e),
    };
    let node = admin.cluster.node();
    if let Some(why) = refusal(node) {
        return error(StatusCode::CONFLICT, why);
    }
    let catalog = admin.local.current_catalog();
    let tables = match scoped_tables(&catalog, keyspace.as_deref(), table.as_deref()) {
        Ok(tables) => tables,
        Err((code, why)) => return error(code, why),
    };
    let mut report = CleanupReport {
        tables: Vec::new(),
        complete: true,
    };
    for id in tables {
        let Some(meta) = catalog.table_by_id(id) else {
            continue;
        };
        let mut entry = TableCleanup {
            table: format!("{}.{}", meta.keyspace, meta.name),
            layout: meta.params.layout.name().to_owned(),
            ..TableCleanup::default()
        };
        if meta.params.layout == mosaic_types::Layout::ErasureTiered {
            entry.note = Some(ERASURE_NOTE.to_owned());
        }
        // Checked again before each table: a move may have started since.
        if let Some(why) = refusal(node) {
            entry.error = Some(why);
            report.complete = false;
            report.tables.push(entry);
            break;
        }
        let shape = ring_shape(&node.ring());
        let Some(owned) = ownership(node, &catalog, id) else {
            // Not placed on the ring: every copy here is this node's.
            continue;
        };
        match admin.local.with_store(id, move |s| s.cleanup(owned)).await {
            Ok(r) => {
                entry.dropped_versions = r.dropped_versions;
                entry.bytes_before = r.bytes_before();
                entry.bytes_after = r.bytes_after();
                entry.structures = r
                    .structures
                    .iter()
                    .map(|s| StructureCleanup {
                        structure: s.structure.name(),
                        bytes_before: s.bytes_before,
                        bytes_after: s.bytes_after,
                        entries_before: s.entries_before,
                        entries_after: s.entries_after,
                    })
                    .collect();
            }
            Err(e) => entry.error = Some(e.message),
        }
        if entry.error.is_none() && (ring_shape(&node.ring()) != shape || refusal(node).is_some()) {
            entry.error = Some(
                "the ring changed while the table was cleaned: data of ranges this node gained \
                 meanwhile may have been dropped; run `mosaic repair` once the change completes"
                    .to_owned(),
            );
        }
        if let Some(e) = &entry.error {
            tracing::error!(target: "mosaic::admin", table = %entry.table, error = %e, "cleanup failed");
            report.complete = false;
        } else {
            tracing::info!(target: "mosaic::admin", table = %entry.table,
                dropped_versions = entry.dropped_versions, bytes_before = entry.bytes_before,
                bytes_after = entry.bytes_after, "cleaned up");
        }
        report.tables.push(entry);
    }
    let code = if report.complete {
        StatusCode::OK
    } else {
        StatusCode::INTERNAL_SERVER_ERROR
    };
    (code, Json(report)).into_response()
}
