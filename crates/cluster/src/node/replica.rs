//! The replica side: every request body a peer (or this node, as coordinator) sends is
//! served from the local [`Store`].

use super::elect::is_relay;
use super::*;
use mosaic_types::HostId;

impl Node {
    /// Serves a request from a peer (or from this node as coordinator).
    pub(super) async fn serve(&self, body: Body) -> Body {
        let store = &self.inner.store;
        match body {
            Body::Write { table, mutations } => match store.apply(table, mutations).await {
                Ok(()) => Body::WriteAck,
                Err(f) => Body::Failed(f),
            },
            Body::Read {
                table,
                range,
                limit,
                digest: want_digest,
                tags,
            } => {
                let range = KeyRange {
                    start: range.start,
                    end: range.end,
                };
                // Rows a coding group covers here are answered with their primary, unless
                // this read is itself such a relay (rings briefly disagreeing must not
                // bounce a read between nodes).
                let answer = if store.ec_covers(table, &range) && !is_relay(&tags) {
                    self.read_with_primary(table, range, limit as usize).await
                } else {
                    store.read(table, range, limit as usize, &tags).await
                };
                match answer {
                    Ok((entries, exhausted)) if want_digest => Body::ReadDigest {
                        digest: digest(&entries, exhausted),
                    },
                    Ok((entries, exhausted)) => Body::ReadData { entries, exhausted },
                    Err(f) => Body::Failed(f),
                }
            }
            Body::ReadStored {
                table,
                range,
                after,
                limit,
            } => {
                let range = KeyRange {
                    start: range.start,
                    end: range.end,
                };
                // Covered rows come from the primary, in key order: an erasure-tiered table
                // stores canonical keys, so its stored keys are its keys.
                let answer = if store.ec_covers(table, &range) {
                    let range = repair::resume_after(range, after.as_deref());
                    self.read_with_primary(table, range, limit as usize)
                        .await
                        .map(repair::page_of)
                } else {
                    store.read_stored(table, range, after, limit as usize).await
                };
                match answer {
                    Ok((entries, next)) => Body::StoredData { entries, next },
                    Err(f) => Body::Failed(f),
                }
            }
            body @ (Body::PaxosPrepare { .. }
            | Body::PaxosPropose { .. }
            | Body::PaxosCommit { .. }) => self.serve_paxos(body).await,
            Body::PaxosSummaryRequest {
                table,
                range,
                after,
                limit,
            } => {
                let range = KeyRange {
                    start: range.start,
                    end: range.end,
                };
                match store
                    .paxos_summaries(table, range, after, limit as usize)
                    .await
                {
                    Ok((entries, next)) => Body::PaxosSummaries { entries, next },
                    Err(f) => Body::Failed(f),
                }
            }
            body @ Body::CounterWrite { .. } => self.serve_counter(body).await,
            Body::Truncate { table } => match store.truncate(table).await {
                Ok(()) => Body::TruncateAck,
                Err(f) => Body::Failed(f),
            },
            Body::SchemaPush(snapshot) => match store.adopt_schema(snapshot).await {
                Ok(adopted) => {
                    let version = store.schema().version;
                    if adopted {
                        tracing::info!(version = %hex(&version), "schema adopted from a peer");
                    }
                    self.set_own_schema_version(version);
                    Body::SchemaAck
                }
                Err(e) => {
                    tracing::warn!(error = %e, "schema from a peer not adopted");
                    Body::Failed(Failure::Storage(e))
                }
            },
            Body::TreeRequest {
                table,
                left,
                right,
                depth,
            } => {
                match repair::build_tree(&**store, table, Token(left), Token(right), depth).await {
                    Ok(leaves) => Body::Tree(WireTree { leaves }),
                    Err(f) => Body::Failed(f),
                }
            }
            Body::EcCover {
                table,
                source,
                id,
                meta,
                slot,
                keys,
            } => {
                let meta = match mosaic_erasure::EcMeta::decode(&meta) {
                    Ok(m) => m,
                    Err(e) => return Body::Failed(Failure::Storage(e.to_string())),
                };
                match store
                    .ec_cover(table, HostId(source), id, (meta, slot), keys)
                    .await
                {
                    Ok(()) => Body::EcCoverAck,
                    Err(f) => Body::Failed(f),
                }
            }
            Body::EcMetaRead { table, group } => match store.ec_meta(table, group).await {
                Ok(meta) => Body::EcMetaData {
                    meta: meta.map(|m| m.encode()),
                },
                Err(f) => Body::Failed(f),
            },
            Body::EcMetaPush { table, meta } => {
                let meta = match mosaic_erasure::EcMeta::decode(&meta) {
                    Ok(m) => m,
                    Err(e) => return Body::Failed(Failure::Storage(e.to_string())),
                };
                match store.ec_record_meta(table, meta).await {
                    Ok(()) => Body::EcMetaAck,
                    Err(f) => Body::Failed(f),
                }
            }
            Body::EcGroupsOf { table, host } => {
                match store.ec_groups_of(table, HostId(host)).await {
                    Ok(metas) => Body::EcGroups {
                        metas: metas.iter().map(|m| m.encode()).collect(),
                    },
                    Err(f) => Body::Failed(f),
                }
            }
            Body::EcShardRead {
                table,
                group,
                position,
            } => match store.ec_shard(table, group, position).await {
                Ok(shard) => Body::EcShard { shard },
                Err(f) => Body::Failed(f),
            },
            Body::EcStripeRead {
                table,
                group,
                position,
                offset,
                len,
            } => match store
                .ec_shard_range(table, group, position, (offset, len))
                .await
            {
                Ok(shard) => Body::EcStripe { shard },
                Err(f) => Body::Failed(f),
            },
            Body::EcFill {
                table,
                slot,
                content,
            } => self.lead_fill(table, slot, content).await,
            Body::EcClear {
                table,
                group,
                slot,
                content,
            } => self.lead_clear(table, group, slot, content).await,
            Body::EcParity {
                table,
                group,
                position,
                from,
                to,
                delta,
            } => match store
                .ec_apply_parity(table, group, position, (from, to), delta)
                .await
            {
                Ok(hash) => Body::EcParityAck { hash },
                Err(f) => Body::Failed(f),
            },
            other => Body::Failed(Failure::Storage(format!(
                "not a request: {}",
                body_name(&other)
            ))),
        }
    }
}

pub(super) fn body_name(body: &Body) -> &'static str {
    match body {
        Body::Write { .. } => "Write",
        Body::WriteAck => "WriteAck",
        Body::PaxosPrepare { .. } => "PaxosPrepare",
        Body::PaxosSummaryRequest { .. } => "PaxosSummaryRequest",
        Body::PaxosSummaries { .. } => "PaxosSummaries",
        Body::PaxosPromise(_) => "PaxosPromise",
        Body::PaxosPropose { .. } => "PaxosPropose",
        Body::PaxosAccepted { .. } => "PaxosAccepted",
        Body::PaxosCommit { .. } => "PaxosCommit",
        Body::CounterWrite { .. } => "CounterWrite",
        Body::Read { .. } => "Read",
        Body::ReadData { .. } => "ReadData",
        Body::ReadStored { .. } => "ReadStored",
        Body::StoredData { .. } => "StoredData",
        Body::ReadDigest { .. } => "ReadDigest",
        Body::Failed(_) => "Failed",
        Body::GossipSyn { .. } => "GossipSyn",
        Body::GossipAck { .. } => "GossipAck",
        Body::SchemaPull => "SchemaPull",
        Body::SchemaPush(_) => "SchemaPush",
        Body::SchemaAck => "SchemaAck",
        Body::TreeRequest { .. } => "TreeRequest",
        Body::Truncate { .. } => "Truncate",
        Body::TruncateAck => "TruncateAck",
        Body::Tree(_) => "Tree",
        Body::EcFill { .. } => "EcFill",
        Body::EcFilled { .. } => "EcFilled",
        Body::EcClear { .. } => "EcClear",
        Body::EcParity { .. } => "EcParity",
        Body::EcParityAck { .. } => "EcParityAck",
        Body::EcCover { .. } => "EcCover",
        Body::EcCoverAck => "EcCoverAck",
        Body::EcMetaRead { .. } => "EcMetaRead",
        Body::EcMetaData { .. } => "EcMetaData",
        Body::EcShardRead { .. } => "EcShardRead",
        Body::EcShard { .. } => "EcShard",
        Body::EcStripeRead { .. } => "EcStripeRead",
        Body::EcStripe { .. } => "EcStripe",
        Body::WithFacts { .. } => "WithFacts",
        Body::EcGroupsOf { .. } => "EcGroupsOf",
        Body::EcGroups { .. } => "EcGroups",
        Body::EcMetaPush { .. } => "EcMetaPush",
        Body::EcMetaAck => "EcMetaAck",
    }
}
