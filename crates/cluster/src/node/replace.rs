//! Replacing a dead node (`replace_address`): a bootstrap whose tokens are the dead node's.
//!
//! The new node gossips which node it replaces ([`AppState::replacing`]). Every node's ring
//! once the moves complete has it in the dead node's place ([`replaced`]), so it is the
//! pending replica of exactly the dead node's ranges; once it is normal, both rings do,
//! and it announces the dead node `Left` on its behalf (as removenode does).
//!
//! A node replacing the dead node at its own address cannot be a second node in the ring
//! (gossip knows one state per address): it takes the dead node's host id and tokens and
//! gossips a new generation that *hibernates* ([`NodeStatus::Hibernate`], Cassandra's
//! same-address replacement): the ring does not change, the others see it down — they
//! read from the other replicas and hint its writes, with a hint window starting afresh —
//! and it refuses reads itself. It streams every range it replicates from a live replica
//! ([`refill`]), repairs their Paxos state, and gossips `Normal`: the others see it up and
//! replay their hints (the writes made while it streamed).

use super::moves::{MoveError, StreamedRange};
use super::*;
use crate::ring::Move;

/// Gossip intervals a replaced node's heartbeat must stay still for (besides the failure
/// detector convicting it) before a replacement takes its tokens.
const REPLACE_WATCH_ROUNDS: u64 = 10;

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

    /// Whether this node hibernates: it replaces itself at its address and has not
    /// streamed its ranges yet.
    pub(super) fn hibernating(&self) -> bool {
        self.inner.membership.lock().own().app.status == NodeStatus::Hibernate
    }

    /// Whether `node`'s heartbeat arrives in time (a hibernating node's does while the
    /// others count it down: `mosaic status` shows it up and joining).
    pub fn heartbeats(&self, node: Endpoint) -> bool {
        let now = self.now_ms();
        node == self.endpoint()
            || self.inner.membership.lock().phi(node, now)
                <= self.inner.config.phi_convict_threshold
    }

    /// Replaces the dead node at this node's own address (see the module doc): streams
    /// every range of `tables` this node replicates, skipping those in `done` and calling
    /// `streamed` after each range is stored, repairs their Paxos state, calls
    /// `completing`, and gossips `Normal`.
    pub(super) async fn replace_own(
        &self,
        tables: &[TableKey],
        done: &[StreamedRange],
        streamed: &(dyn Fn(StreamedRange) + Send + Sync),
        completing: &(dyn Fn() + Send + Sync),
    ) -> Result<(), MoveError> {
        let me = self.endpoint();
        if !self.hibernating() {
            return Err(MoveError::Replace(
                me,
                "this node started as itself, not hibernating as its own replacement".to_owned(),
            ));
        }
        if let Some(other) = self.moving_peer() {
            return Err(MoveError::OtherMove(other));
        }
        if !self.hears_ring() {
            return Err(MoveError::NoLivePeer);
        }
        // The ring does not change, so every live node's ring shows this node already;
        // the wait lets its new generation spread (the others then hint its writes) and
        // the writes a peer sent the dead node's address before finish.
        self.await_ring_agreement(RingStatus::Normal).await?;
        let own_ranges = |ring: &Ring, placement: &ReplicationStrategy| refill(ring, placement, me);
        self.stream_gains(tables, own_ranges, done, streamed)
            .await?;
        self.settle_paxos_of(tables, own_ranges).await?;
        completing();
        self.inner
            .membership
            .lock()
            .update_own(|s| s.app.status = NodeStatus::Normal);
        self.gossip_round();
        tracing::info!("replace at this node's own address finished: it serves its ranges");
        Ok(())
    }

    /// Refuses to replace `dead` unless it is a node of the ring that owns exactly
    /// `tokens` and is down. A node just learnt of counts as alive until the failure
    /// detector convicts it: wait (at most the ring agreement timeout) for that, and for
    /// its heartbeat to stay still for [`REPLACE_WATCH_ROUNDS`] gossip intervals — a
    /// failure detector a few rounds old convicts on little history (a live node whose
    /// heartbeats were delayed on a busy machine must not be replaced).
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
        let watch = (self.inner.config.gossip_interval_ms * REPLACE_WATCH_ROUNDS)
            .min(self.inner.config.ring_agreement_timeout_ms);
        while self.is_alive(dead) || self.now_ms().saturating_sub(start) < watch {
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

/// The ranges `node` replicates under `placement` in `ring`, each as a move that gains
/// it to `node` from the other replicas (`now` without it, `after` with it): what a node
/// replacing itself at its address streams (its data is gone; the ring is unchanged).
pub(super) fn refill(ring: &Ring, placement: &ReplicationStrategy, node: Endpoint) -> Vec<Move> {
    ring.ranges_placed(node, placement)
        .into_iter()
        .map(|(left, right, after)| Move {
            left,
            right,
            now: after.iter().copied().filter(|n| *n != node).collect(),
            after,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{IpAddr, Ipv4Addr, SocketAddr};

    #[test]
    fn a_node_replacing_itself_refills_every_range_it_replicates_from_the_others() {
        let ep = |i: u8| SocketAddr::new(IpAddr::V4(Ipv4Addr::new(127, 0, 0, i)), 7000);
        let tokens: Vec<Vec<Token>> = (1..=4)
            .map(|i| vec![Token(i * 100), Token(i * 100 + 1000)])
            .collect();
        let ring = Ring::new((1..=4u8).zip(&tokens).map(|(i, t)| (ep(i), t.as_slice())));
        let placement = ReplicationStrategy::Simple(3);
        let moves = refill(&ring, &placement, ep(2));
        // Three of four nodes replicate each range at RF 3: three quarters of the ranges.
        assert_eq!(moves.len(), 6);
        for m in &moves {
            assert_eq!(m.after, ring.place(m.right, &placement));
            assert_eq!(m.gained().collect::<Vec<_>>(), vec![ep(2)]);
            assert_eq!(m.lost().count(), 0);
            assert_eq!(m.now.len(), 2);
        }
        // Every range it does not refill, it does not replicate.
        let refilled: Vec<Token> = moves.iter().map(|m| m.right).collect();
        for t in ring.tokens().filter(|t| !refilled.contains(t)) {
            assert!(!ring.place(t, &placement).contains(&ep(2)));
        }
    }

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
