//! Removing a dead node from the ring (`nodetool removenode`): the survivors re-replicate
//! its ranges.
//!
//! Only a node changes its own gossiped state, but a dead one cannot: the node running the
//! removal gossips new versions of the dead node's state on its behalf (a heartbeat above
//! every one known, so they win everywhere; shut down, so no node takes it for alive) —
//! first `Leaving`, which makes every node's ring carry the ring without it and the nodes
//! gaining its ranges pending replicas of them, then, once each gaining node pulled its
//! ranges from a live replica that keeps them and every node re-homed the ranges whose role
//! changes on it, `Left`. A removed node that comes back with its old identity is ignored
//! by gossip (see [`crate::gossip`]): it must be wiped and join as a new node.

use super::*;
use mosaic_types::HostId;

impl Node {
    /// Removes the dead node `host` from the ring (see the module doc), for `tables`.
    pub async fn remove_node(&self, host: HostId, tables: &[TableKey]) -> Result<(), MoveError> {
        self.start_streams("removenode");
        let result = self.remove_node_inner(host, tables).await;
        self.finish_streams(&result);
        result
    }

    async fn remove_node_inner(&self, host: HostId, tables: &[TableKey]) -> Result<(), MoveError> {
        let me = self.endpoint();
        let dead = {
            let m = self.inner.membership.lock();
            let state = m
                .states()
                .find(|s| s.app.host_id == host)
                .ok_or(MoveError::UnknownHost(host))?;
            if state.endpoint == me {
                return Err(MoveError::Removal(
                    "this node cannot remove itself: use decommission".to_owned(),
                ));
            }
            if m.is_alive(state.endpoint) {
                return Err(MoveError::Removal(format!(
                    "{} is up: decommission it instead, or stop it first",
                    state.endpoint
                )));
            }
            if !state.app.ring_status.owns_now() {
                return Err(MoveError::Removal(format!(
                    "{} owns no tokens ({:?})",
                    state.endpoint, state.app.ring_status
                )));
            }
            state.endpoint
        };
        // A removal of this node interrupted before (its coordinator crashed) left it
        // Leaving: removing it again resumes that removal.
        if let Some(other) = self.moving_peer().filter(|other| *other != dead) {
            return Err(MoveError::OtherMove(other));
        }
        self.speak_for(dead, RingStatus::Leaving);
        if let Err(e) = self.await_seen(dead, RingStatus::Leaving).await {
            self.speak_for(dead, RingStatus::Normal);
            return Err(e);
        }
        self.inner
            .runtime
            .sleep(self.inner.config.write_timeout_ms)
            .await;
        // Each range from a live replica that keeps it (the dead one cannot send it).
        let asks = self.handover(dead, tables, |m, gainer| {
            m.now
                .iter()
                .copied()
                .find(|n| *n != dead && *n != gainer && self.is_alive(*n))
        });
        let handed = match asks {
            Ok(asks) => match self.ask_to_pull(asks).await {
                Ok(()) => self.settle_paxos(tables).await.map(|_| ()),
                Err(e) => Err(e),
            },
            Err(e) => Err(e),
        };
        if let Err(e) = handed {
            self.speak_for(dead, RingStatus::Normal);
            return Err(e);
        }
        self.rehome_everywhere(tables).await;
        self.speak_for(dead, RingStatus::Left);
        if let Err(e) = self.await_seen(dead, RingStatus::Left).await {
            tracing::warn!(error = %e, node = %dead, "not every node saw the removal yet");
        }
        tracing::info!(node = %dead, "removenode finished: the node left the ring");
        Ok(())
    }

    /// Gossips a new version of the dead node `node`'s state in ring status `status`
    /// (shut down, heartbeat above every one known) and rebuilds the ring.
    pub(super) fn speak_for(&self, node: Endpoint, status: RingStatus) {
        self.inner.membership.lock().update_other(node, |s| {
            s.app.ring_status = status;
            s.app.status = NodeStatus::Shutdown;
        });
        self.rebuild_ring();
        self.gossip_round();
        tracing::info!(node = %node, status = ?status, "ring status announced for a dead node");
    }
}
