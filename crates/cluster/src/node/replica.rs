//! The replica side: every request body a peer (or this node, as coordinator) sends is
//! served from the local [`Store`].

use super::elect::is_relay;
use super::*;
use mosaic_types::HostId;

impl Node {
    /// A page of `range` of `table` in the order this node stores it, after the stored
    /// key `after` (what repair and streaming read).
    pub(super) async fn stored_page(
        &self,
        table: TableKey,
        range: KeyRange,
        after: Option<Vec<u8>>,
        limit: usize,
    ) -> Result<crate::env::StoredPage, Failure> {
        // Covered rows come from the primary, in key order: an erasure-tiered table
        // stores canonical keys, so its stored keys are its keys.
        if self.inner.store.ec_covers(table, &range) {
            let range = repair::resume_after(range, after.as_deref());
            self.read_with_primary(table, range, limit)
                .await
                .map(repair::page_of)
        } else {
            self.inner
                .store
                .read_stored(table, range, after, limit)
                .await
        }
    }

    /// Serves a request from a peer (or from this node as coordinator).
    pub(super) async fn serve(&self, body: Body) -> Body {
        let store = &self.inner.store;
        let body = cap_limit(body, self.inner.config.read_answer_rows_max);
        match body {
            Body::Write { table, mutations } => match store.apply(table, mutations).await {
                Ok(()) => Body::WriteAck,
                Err(f) => Body::Failed(f),
            },
            Body::Read { .. } if self.hibernating() => Body::Failed(Failure::Storage(
                "this node replaces itself at its address and has not streamed its ranges \
                 yet: it serves no reads (peers see it down)"
                    .to_owned(),
            )),
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
                // bounce a read between nodes). The tag is looked at first: it is cheaper.
                let answer = if !is_relay(&tags) && store.ec_covers(table, &range) {
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
                match self.stored_page(table, range, after, limit as usize).await {
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
            body @ (Body::RingCheck { .. } | Body::StreamRequest { .. } | Body::Rehome { .. }) => {
                self.serve_move(body).await
            }
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
                // A group that lost a member is being given up: its rows stay here whole.
                let ring = self.ring_hosts();
                if let Some(gone) = meta.shards.iter().find(|s| !ring.contains_key(&s.node)) {
                    return Body::Failed(Failure::Storage(format!(
                        "the coding group names {}, which is not in the ring",
                        gone.node
                    )));
                }
                match store
                    .ec_cover(table, HostId(source), id, (meta, slot), keys)
                    .await
                {
                    Ok(()) => Body::EcCoverAck,
                    Err(f) => Body::Failed(f),
                }
            }
            Body::EcNamed { table, groups } => match store.ec_groups_named(table, groups).await {
                Ok(groups) => Body::EcNamedBy { groups },
                Err(f) => Body::Failed(f),
            },
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
                epoch,
            } => match store.ec_shard(table, group, (position, Some(epoch))).await {
                Ok(shard) => Body::EcShard { shard },
                Err(f) => Body::Failed(f),
            },
            Body::EcStripeRead {
                table,
                group,
                position,
                epoch,
                offset,
                len,
            } => match store
                .ec_shard_range(table, group, (position, Some(epoch)), (offset, len))
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

/// `body` with the entry limit of a paged request lowered to `rows_max`: a peer's limit is
/// honoured only up to this node's cap (a peer, or a bug, asking for u32::MAX entries must
/// not make this node build an unbounded answer). The answer then says more follows
/// (`exhausted: false`, a `next` key) and the asker reads on from its last key; the store
/// caps the answer's bytes the same way.
fn cap_limit(mut body: Body, rows_max: usize) -> Body {
    let max = u32::try_from(rows_max.max(1)).unwrap_or(u32::MAX);
    if let Body::Read { limit, .. }
    | Body::ReadStored { limit, .. }
    | Body::PaxosSummaryRequest { limit, .. } = &mut body
    {
        *limit = (*limit).min(max);
    }
    body
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
        Body::EcNamed { .. } => "EcNamed",
        Body::EcNamedBy { .. } => "EcNamedBy",
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
        Body::RingCheck { .. } => "RingCheck",
        Body::RingChecked { .. } => "RingChecked",
        Body::StreamRequest { .. } => "StreamRequest",
        Body::Streamed { .. } => "Streamed",
        Body::Rehome { .. } => "Rehome",
        Body::Rehomed { .. } => "Rehomed",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limit_of(body: &Body) -> Option<u32> {
        match body {
            Body::Read { limit, .. }
            | Body::ReadStored { limit, .. }
            | Body::PaxosSummaryRequest { limit, .. } => Some(*limit),
            _ => None,
        }
    }

    #[test]
    fn a_peer_asking_for_more_entries_than_the_cap_is_answered_at_most_the_cap() {
        let table = mosaic_types::TableId([1; 16]);
        let range = WireRange {
            start: Vec::new(),
            end: None,
        };
        let read = |limit| Body::Read {
            table,
            range: range.clone(),
            limit,
            digest: false,
            tags: Vec::new(),
        };
        let stored = |limit| Body::ReadStored {
            table,
            range: range.clone(),
            after: None,
            limit,
        };
        let paxos = |limit| Body::PaxosSummaryRequest {
            table,
            range: range.clone(),
            after: None,
            limit,
        };
        for make in [&read as &dyn Fn(u32) -> Body, &stored, &paxos] {
            assert_eq!(limit_of(&cap_limit(make(u32::MAX), 500)), Some(500));
            assert_eq!(limit_of(&cap_limit(make(20), 500)), Some(20));
            // A cap of 0 still answers one entry: reading on always makes progress.
            assert_eq!(limit_of(&cap_limit(make(20), 0)), Some(1));
            assert_eq!(limit_of(&cap_limit(make(7), usize::MAX)), Some(7));
        }
        assert_eq!(cap_limit(Body::WriteAck, 1), Body::WriteAck);
    }
}
