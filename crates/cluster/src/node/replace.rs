//! Replacing a dead node (`replace_address`): a bootstrap whose tokens are the dead node's.
//!
//! The new node gossips which node it replaces ([`AppState::replacing`]). Every node's ring
//! once the moves complete has it in the dead node's place ([`replaced`]), so it is the
//! pending replica of exactly the dead node's ranges; once it is normal, both rings do,
//! and it announces the dead node `Left` on its behalf (as removenode does).

use super::*;

impl Node {
    /// A replacement's last step, once this node is normal with `dead`'s tokens: it
    /// announces `dead` `Left` (the tokens are this node's now; it leaves `mosaic status`)
    /// and waits (bounded) until every live node saw it. A replacement that restarts after
    /// it announced `Normal` runs this again, gossiping whom it replaced meanwhile, so no
    /// ring has both nodes owning the tokens.
    pub async fn finish_replace(&self, dead: Endpoint) {
        self.inner
            .membership
            .lock()
            .update_own(|s| s.app.replacing = Some(dead));
        self.speak_for(dead, RingStatus::Left);
        if let Err(e) = self.await_seen(dead, RingStatus::Left).await {
            tracing::warn!(error = %e, node = %dead, "not every node saw the replaced node leave yet");
        }
        tracing::info!(node = %dead, "replace finished: this node owns the dead node's tokens");
    }

    /// Refuses to replace `dead` unless it is a node of the ring that owns exactly
    /// `tokens` and is down. A node just learnt of counts as alive until the failure
    /// detector convicts it: wait (at most the ring agreement timeout) for that.
    pub(super) async fn check_replaceable(
        &self,
        dead: Endpoint,
        tokens: &[i64],
    ) -> Result<(), MoveError> {
        let refuse = |why: String| Err(MoveError::Replace(dead, why));
        // Gossip first: a dead node's state stays as it was, a live one's heartbeat moves.
        self.gossip_round();
        let owned = {
            let m = self.inner.membership.lock();
            m.state(dead)
                .map(|s| (s.app.ring_status, s.app.tokens.clone()))
        };
        let Some((status, mut owned)) = owned else {
            return refuse("no node of the cluster has that address".to_owned());
        };
        if !status.owns_now() {
            return refuse(format!("it owns no tokens ({status:?})"));
        }
        let mut mine = tokens.to_vec();
        owned.sort_unstable();
        mine.sort_unstable();
        if owned != mine {
            return refuse("its tokens are not the ones this node took".to_owned());
        }
        let version = |node: &Node| {
            let m = node.inner.membership.lock();
            m.state(dead).map(EndpointState::version)
        };
        let first = version(self);
        let start = self.now_ms();
        while self.is_alive(dead) {
            // A heartbeat newer than the first one seen: it is alive for sure.
            let beats = version(self) != first;
            if beats
                || self.now_ms().saturating_sub(start)
                    >= self.inner.config.ring_agreement_timeout_ms
            {
                return refuse(
                    "it is alive: only a dead node can be replaced (stop it, or decommission it)"
                        .to_owned(),
                );
            }
            self.inner
                .runtime
                .sleep(super::moves::RING_CHECK_POLL_MS)
                .await;
        }
        Ok(())
    }
}

/// Whether another node that owns its tokens in the ring being built (`owns` of its ring
/// status) replaces `state`'s node (`replace_address`) and took its tokens: the replaced
/// node then owns nothing there — in the ring after the moves while its replacement
/// joins, in both rings once the replacement is normal.
pub(super) fn replaced<'a>(
    mut states: impl Iterator<Item = &'a EndpointState>,
    state: &EndpointState,
    owns: fn(RingStatus) -> bool,
) -> bool {
    states.any(|r| {
        r.endpoint != state.endpoint
            && r.app.replacing == Some(state.endpoint)
            && owns(r.app.ring_status)
            && r.app.tokens.iter().any(|t| state.app.tokens.contains(t))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{IpAddr, Ipv4Addr, SocketAddr};

    fn state(i: u8, status: RingStatus, tokens: &[i64], replacing: Option<u8>) -> EndpointState {
        let ep = |i: u8| SocketAddr::new(IpAddr::V4(Ipv4Addr::new(127, 0, 0, i)), 7000);
        EndpointState {
            endpoint: ep(i),
            generation: 1,
            heartbeat: 1,
            app: AppState {
                host_id: mosaic_types::HostId([i; 16]),
                tokens: tokens.to_vec(),
                rpc_address: IpAddr::V4(Ipv4Addr::LOCALHOST),
                native_port: 9042,
                admin_port: 0,
                data_center: "dc1".to_owned(),
                rack: "rack1".to_owned(),
                release_version: String::new(),
                schema_version: [0; 16],
                status: NodeStatus::Normal,
                ring_status: status,
                replacing: replacing.map(ep),
                load_bytes: 0,
            },
        }
    }

    #[test]
    fn a_replaced_node_owns_nothing_once_its_replacement_owns_its_tokens() {
        let dead = state(3, RingStatus::Normal, &[10, 20], None);
        let other = state(1, RingStatus::Normal, &[5], None);
        let joining = state(5, RingStatus::Joining, &[10, 20], Some(3));
        let states = [other.clone(), dead.clone(), joining.clone()];
        let now = RingStatus::owns_now as fn(RingStatus) -> bool;
        let after = RingStatus::owns_after_moves as fn(RingStatus) -> bool;
        // While it joins: the dead node keeps its tokens now, not after the move.
        assert!(!replaced(states.iter(), &dead, now));
        assert!(replaced(states.iter(), &dead, after));
        assert!(!replaced(states.iter(), &other, after));
        // Once it is normal: in both rings.
        let normal = state(5, RingStatus::Normal, &[10, 20], Some(3));
        let states = [other, dead.clone(), normal];
        assert!(replaced(states.iter(), &dead, now));
        // A later node at the replaced node's address, with tokens of its own, is not.
        let newcomer = state(3, RingStatus::Normal, &[30], None);
        assert!(!replaced(states.iter(), &newcomer, now));
    }
}
