//! Counter writes (Cassandra's counter write path, on the shards of
//! `mosaic_rows::counter`): the coordinator hands a counter's increments to one live
//! replica, the *leader* (itself when it is one); the leader computes its new shards from
//! what it stores under the counter's lock, applies them, and replicates them to the other
//! replicas at the statement's level, counting its own copy as one acknowledgement.

use std::hash::{Hash, Hasher};

use super::*;
use crate::message::WireCounter;

/// Stripes of the leaders' per-counter locks.
pub(super) const COUNTER_LOCKS: usize = 64;

impl Node {
    /// Applies counter increments `(table, token, increment)` at `cl` (see the module
    /// doc). Increments of one replica list go to one leader together.
    pub async fn counter_write(
        &self,
        increments: Vec<(TableKey, Token, WireCounter)>,
        cl: ConsistencyLevel,
    ) -> Result<(), ClusterError> {
        let ring = self.ring();
        let mut groups: Vec<(TableKey, Vec<Endpoint>, Vec<WireCounter>, Quorum)> = Vec::new();
        for (table, token, increment) in increments {
            let placement = self.placement(table)?;
            let replicas = ring.place(token, &placement);
            match groups
                .iter_mut()
                .find(|(t, r, _, _)| *t == table && *r == replicas)
            {
                Some((_, _, list, _)) => list.push(increment),
                None => {
                    let quorum = self.quorum(cl, &placement, &ring, &replicas);
                    groups.push((table, replicas, vec![increment], quorum));
                }
            }
        }
        for (table, replicas, increments, quorum) in groups {
            let leader = self.counter_leader(&ring, &replicas, &quorum, cl)?;
            if leader == self.endpoint() {
                self.lead_counter(table, increments, cl).await?;
                continue;
            }
            let body = Body::CounterWrite {
                table,
                increments,
                consistency: cl.code(),
            };
            // The leader waits for its replicas within the write timeout; this node waits
            // for the leader a little longer.
            let ms = self.inner.config.write_timeout_ms.saturating_mul(2);
            match self.call_timeout(leader, body, ms).await {
                Some(Body::WriteAck) => {}
                Some(Body::Failed(Failure::Overloaded)) => {
                    return Err(ClusterError::Overloaded(
                        "the counter's leader replica is overloaded".to_owned(),
                    ))
                }
                Some(Body::Failed(Failure::UnknownTable)) => {
                    return Err(ClusterError::UnknownTable(table))
                }
                Some(Body::Failed(Failure::Storage(why))) => {
                    return Err(ClusterError::WriteFailure {
                        consistency: cl,
                        received: 0,
                        block_for: quorum.block_for(),
                        failed: 1,
                        reason: why,
                    })
                }
                _ => {
                    return Err(ClusterError::WriteTimeout {
                        consistency: cl,
                        received: 0,
                        block_for: quorum.block_for(),
                    })
                }
            }
        }
        Ok(())
    }

    /// The replica that leads a counter's increments: this node when it is a live
    /// replica, else a random live one, of this node's datacenter when it has one (as
    /// Cassandra's `findSuitableReplica`). `Unavailable` when too few replicas live for
    /// `cl`.
    fn counter_leader(
        &self,
        ring: &Ring,
        replicas: &[Endpoint],
        quorum: &Quorum,
        cl: ConsistencyLevel,
    ) -> Result<Endpoint, ClusterError> {
        let mut live: Vec<Endpoint> = {
            let m = self.inner.membership.lock();
            replicas
                .iter()
                .copied()
                .filter(|r| m.is_alive(*r))
                .collect()
        };
        quorum.check_live(cl, &live)?;
        if live.is_empty() {
            return Err(ClusterError::Unavailable {
                consistency: cl,
                required: 1,
                alive: 0,
            });
        }
        let me = self.endpoint();
        if live.contains(&me) {
            return Ok(me);
        }
        let here = ring.dc_of(me);
        if live.iter().any(|r| ring.dc_of(*r) == here) {
            live.retain(|r| ring.dc_of(*r) == here);
        }
        let pick = (self.inner.runtime.random() % live.len() as u64) as usize;
        Ok(live.get(pick).copied().unwrap_or(me))
    }

    /// Leads increments of `table` here: new shards computed and applied under the
    /// counters' locks, then replicated to the other replicas at `cl`.
    pub(super) async fn lead_counter(
        &self,
        table: TableKey,
        increments: Vec<WireCounter>,
        cl: ConsistencyLevel,
    ) -> Result<(), ClusterError> {
        let mut stripes: Vec<usize> = increments
            .iter()
            .map(|i| counter_stripe(table, &i.key, i.column))
            .collect();
        stripes.sort_unstable();
        stripes.dedup();
        let mutations = {
            // In stripe order, so two leaders of overlapping batches never wait on each
            // other in a cycle.
            let mut held = Vec::with_capacity(stripes.len());
            for stripe in &stripes {
                if let Some(lock) = self.inner.counter_locks.get(*stripe) {
                    held.push(lock.lock().await);
                }
            }
            self.inner
                .store
                .counter_shards(table, increments)
                .await
                .map_err(|f| leader_failure(table, cl, f))?
        };
        let writes = mutations
            .into_iter()
            .map(|m| {
                let token = mosaic_rows::decode_token(&m.key).unwrap_or(Token(0));
                (table, token, m)
            })
            .collect();
        let me = self.endpoint();
        let mut groups = self.group_writes(writes, cl)?;
        for g in &mut groups {
            // The leader's own copy is applied: one acknowledgement already.
            if let Some(at) = g.replicas.iter().position(|r| *r == me) {
                g.replicas.remove(at);
                g.quorum.credit(me);
            }
        }
        self.write_groups(groups, cl).await
    }

    /// Serves a peer's `CounterWrite`: leads the increments.
    pub(super) async fn serve_counter(&self, body: Body) -> Body {
        let Body::CounterWrite {
            table,
            increments,
            consistency,
        } = body
        else {
            return Body::Failed(Failure::Storage("not a counter write".to_owned()));
        };
        let Some(consistency) = ConsistencyLevel::from_code(consistency) else {
            return Body::Failed(Failure::Storage(format!(
                "unknown consistency level code {consistency:#06x}"
            )));
        };
        match self.lead_counter(table, increments, consistency).await {
            Ok(()) => Body::WriteAck,
            Err(ClusterError::WriteTimeout { .. }) => {
                Body::Failed(Failure::TimedOut("counter replicas timed out".to_owned()))
            }
            Err(ClusterError::Overloaded(_)) => Body::Failed(Failure::Overloaded),
            Err(ClusterError::UnknownTable(_)) => Body::Failed(Failure::UnknownTable),
            Err(e) => Body::Failed(Failure::Storage(e.to_string())),
        }
    }
}

/// The stripe of a counter's lock.
fn counter_stripe(table: TableKey, key: &[u8], column: u32) -> usize {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    table.hash(&mut h);
    key.hash(&mut h);
    column.hash(&mut h);
    (h.finish() % COUNTER_LOCKS as u64) as usize
}

/// The leader's own storage refused.
fn leader_failure(table: TableKey, cl: ConsistencyLevel, f: Failure) -> ClusterError {
    match f {
        Failure::Overloaded => {
            ClusterError::Overloaded("the counter's leader is overloaded".to_owned())
        }
        Failure::UnknownTable => ClusterError::UnknownTable(table),
        Failure::TimedOut(why) => {
            tracing::debug!(reason = %why, "a counter's leader timed out its own write");
            ClusterError::WriteTimeout {
                consistency: cl,
                received: 0,
                block_for: 1,
            }
        }
        Failure::Storage(why) => ClusterError::Storage(why),
    }
}
