//! Hinted handoff: writes kept durably for a replica that could not take them (within
//! the hint window, unless its datacenter is one hints are disabled for), replayed oldest
//! first once it is seen alive again.

use super::*;

/// Hints read per replay step.
const HINT_REPLAY_BATCH: usize = 64;

impl Node {
    /// Whether hints are still kept for `node` (down for less than the hint window).
    pub(super) fn hint_window_open(&self, node: Endpoint, now_ms: u64) -> bool {
        self.inner
            .membership
            .lock()
            .down_for_ms(node, now_ms)
            .is_none_or(|d| d < self.inner.config.hint_window_ms)
    }

    /// Stores a hint of `group`'s writes for `target`; whether it was stored (never when
    /// hints are off, or off for `target`'s datacenter).
    pub(super) async fn store_hint(&self, target: Endpoint, group: &WriteGroup) -> bool {
        if !self
            .inner
            .config
            .hints_for_datacenter(self.ring().dc_of(target))
        {
            return false;
        }
        match self
            .inner
            .store
            .store_hint(target, group.table, group.mutations.clone())
            .await
        {
            Ok(()) => {
                self.inner
                    .counters
                    .hints_stored
                    .fetch_add(1, Ordering::Relaxed);
                true
            }
            // The store keeps no more hints for this target (its per-host cap): it counts
            // and logs the drop; repair brings the replica up to date.
            Err(Failure::Overloaded) => false,
            Err(e) => {
                tracing::warn!(target_node = %target, error = ?e, "hint not stored");
                self.inner
                    .counters
                    .hints_failed
                    .fetch_add(1, Ordering::Relaxed);
                false
            }
        }
    }

    /// Whether `node` left the ring (its gossip state says `Left`).
    fn has_left(&self, node: Endpoint) -> bool {
        self.inner
            .membership
            .lock()
            .state(node)
            .is_some_and(|s| s.app.ring_status == RingStatus::Left)
    }

    /// Deletes the hints for `target`, a node that left the ring (marked as replaying
    /// by the caller, so no replay runs meanwhile).
    async fn drop_hints_of(&self, target: Endpoint) {
        match self.inner.store.drop_hints(target).await {
            Ok(dropped) => tracing::info!(
                target_node = %target,
                dropped,
                "hints dropped: the node left the ring"
            ),
            Err(e) => {
                tracing::warn!(target_node = %target, error = ?e, "dropping the hints of a node that left failed")
            }
        }
        self.inner.replaying.lock().remove(&target);
    }

    /// Replays this node's hints for `target` (one replay per target at a time), oldest
    /// first, deleting each once the target acknowledged it; stops at the first failure.
    pub(super) async fn replay_hints(&self, target: Endpoint) {
        if !self.inner.replaying.lock().insert(target) {
            return;
        }
        let mut replayed = 0u64;
        tracing::debug!(target_node = %target, "hint replay started");
        'replay: loop {
            let Ok(batch) = self.inner.store.hints(target, HINT_REPLAY_BATCH).await else {
                break;
            };
            if batch.is_empty() {
                break;
            }
            for hint in batch {
                if !self.is_alive(target) {
                    break 'replay;
                }
                if self.inner.store.replication_factor(hint.table).is_none() {
                    // Its table was dropped: nothing left to deliver.
                    if self.inner.store.delete_hint(target, hint.id).await.is_err() {
                        break 'replay;
                    }
                    continue;
                }
                let body = Body::Write {
                    table: hint.table,
                    mutations: hint.mutations.clone(),
                };
                let answer = self
                    .call_timeout(target, body, self.inner.config.write_timeout_ms)
                    .await;
                // A target that lacks the schema yet answers UnknownTable: retried later.
                match answer {
                    Some(Body::WriteAck) => {
                        if self.inner.store.delete_hint(target, hint.id).await.is_err() {
                            break 'replay;
                        }
                        self.inner
                            .counters
                            .hints_replayed
                            .fetch_add(1, Ordering::Relaxed);
                        replayed += 1;
                    }
                    _ => break 'replay,
                }
            }
        }
        self.inner.replaying.lock().remove(&target);
        if replayed > 0 {
            tracing::info!(target_node = %target, replayed, "hints replayed");
        }
    }

    /// Starts replaying hints to every live node this node holds hints for, and drops
    /// those of nodes that left the ring (decommissioned, removed or replaced: their
    /// ranges are other nodes' now, as Cassandra deletes a leaving node's hints).
    pub(super) fn replay_due_hints(&self) {
        for target in self.inner.store.hint_targets() {
            if self.has_left(target) {
                if self.inner.replaying.lock().insert(target) {
                    let node = self.clone();
                    self.inner
                        .runtime
                        .spawn(async move { node.drop_hints_of(target).await }.boxed());
                }
                continue;
            }
            if target != self.endpoint()
                && self.is_alive(target)
                && !self.inner.replaying.lock().contains(&target)
            {
                let node = self.clone();
                self.inner
                    .runtime
                    .spawn(async move { node.replay_hints(target).await }.boxed());
            }
        }
    }
}
