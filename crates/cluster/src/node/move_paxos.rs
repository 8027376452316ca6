//! A move's lightweight transactions. Paxos keeps its state per replica, outside the
//! table's data that streams: a node gaining a range starts with none, and a round left
//! unfinished among the old replicas could be decided differently by a quorum of the new
//! ones. So before a move completes, every range it moves gets a Paxos repair among its
//! live replicas of now and after (as Cassandra 4.1 repairs Paxos on topology changes):
//! a round for each partition that has an unfinished round, or whose replicas disagree on
//! the newest commit (a node gaining the range has none). The rounds run among every
//! replica (at `SERIAL` when one is dead: a quorum of the live ones), the gaining nodes
//! taking part as pending replicas, so each finishes what was accepted and brings the
//! replicas that answered up to the newest commit. A round that fails fails the move,
//! unless `skip_paxos_repair_on_topology_change` is set (then no round runs).

use super::moves::MoveError;
use super::*;
use crate::ring::Move;

impl Node {
    /// Repairs the Paxos state of every range of `tables` that the move under way hands
    /// to another node (see the module doc); the partitions that needed a round.
    pub(super) async fn settle_paxos(&self, tables: &[TableKey]) -> Result<u64, MoveError> {
        self.settle_paxos_of(tables, Ring::moves).await
    }

    /// [`Node::settle_paxos`] for the ranges `moves` gives of a ring under a placement
    /// (a same-address replacement refills ranges no ring moves: `replace::refill`).
    pub(super) async fn settle_paxos_of(
        &self,
        tables: &[TableKey],
        moves: impl Fn(&Ring, &ReplicationStrategy) -> Vec<Move>,
    ) -> Result<u64, MoveError> {
        if self.inner.config.skip_paxos_repair_on_topology_change {
            tracing::warn!(
                "skip_paxos_repair_on_topology_change: the moved ranges' Paxos state is not repaired"
            );
            return Ok(0);
        }
        let ring = self.ring();
        let mut repaired = 0;
        for table in tables {
            let Some(placement) = self.inner.store.placement(*table) else {
                continue;
            };
            if !self.any_paxos_state(*table, ring.nodes()).await {
                continue;
            }
            for m in moves(&ring, &placement) {
                if m.gained().next().is_none() {
                    continue;
                }
                let mut replicas: Vec<Endpoint> = m.now.iter().chain(&m.after).copied().collect();
                replicas.sort_unstable();
                replicas.dedup();
                // Every replica takes part when all are alive, so each one behind gets the
                // newest commit; with one dead (a removal, a replacement), a quorum of the
                // live ones does, the gaining nodes on top.
                let serial = if replicas.iter().all(|n| self.is_alive(*n)) {
                    ConsistencyLevel::All
                } else {
                    replicas.retain(|n| self.is_alive(*n));
                    ConsistencyLevel::Serial
                };
                for range in m.keys() {
                    let (n, result) = self.repair_paxos(*table, range, &replicas, serial).await;
                    repaired += n;
                    result.map_err(|reason| MoveError::Paxos {
                        table: *table,
                        reason,
                    })?;
                }
            }
        }
        self.inner.streams.lock().snapshot.paxos_repaired += repaired;
        if repaired > 0 {
            tracing::info!(
                partitions = repaired,
                "Paxos state of the moved ranges repaired"
            );
        }
        Ok(repaired)
    }

    /// Whether any live node of `nodes` may hold Paxos state for `table` (one summary
    /// asked of each; a node that does not answer may): most tables never saw a
    /// lightweight transaction, and their ranges need no round.
    async fn any_paxos_state(&self, table: TableKey, nodes: &[Endpoint]) -> bool {
        let whole = mosaic_rows::ring_range(Token::MIN, Token::MIN);
        for node in nodes.iter().filter(|n| self.is_alive(**n)) {
            for range in &whole {
                let request = Body::PaxosSummaryRequest {
                    table,
                    range: WireRange {
                        start: range.start.clone(),
                        end: range.end.clone(),
                    },
                    after: None,
                    limit: 1,
                };
                let answer = self
                    .call_retrying(*node, request, self.inner.config.repair_timeout_ms)
                    .await;
                if !matches!(answer, Some(Body::PaxosSummaries { entries, .. }) if entries.is_empty())
                {
                    return true;
                }
            }
        }
        false
    }
}
