//! Cassandra's dynamic snitch.
//!
//! Every answer's latency goes into its replica's moving average. Every
//! `update_interval_ms` (100 ms) the scores are recomputed — each replica's average over
//! the largest, so 1.0 is the slowest — and every `reset_interval_ms` (10 min) the
//! averages are forgotten, so a replica that was slow once gets measured again. A read's
//! replicas keep their ring order (the primary first) unless, at some rank, the replica
//! there scores worse than `1 + badness_threshold` times the replica the scores would put
//! there; then they go by score. A replica not measured yet scores 0 (it gets tried). No
//! replica is preferred for being this node.

use std::collections::HashMap;

use parking_lot::Mutex;
use serde::{Deserialize, Serialize};

use super::{ReadInfo, ReplicaSelector};
use crate::message::Tag;
use crate::Endpoint;

/// Weight of a new latency sample in a replica's moving average.
const ALPHA: f64 = 0.25;

/// `[scheduling.dynamic-snitch]` (Cassandra's `dynamic_snitch_*` settings).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SnitchParams {
    /// How often scores are recomputed from the latencies.
    pub update_interval_ms: u64,
    /// How often the latencies are forgotten; 0 never.
    pub reset_interval_ms: u64,
    /// How much worse (as a fraction: 0.2 is 20%) than the best replica for its rank the
    /// ring order's replica may score before reads go by score; 0 always by score.
    pub badness_threshold: f64,
}

impl Default for SnitchParams {
    fn default() -> Self {
        SnitchParams {
            update_interval_ms: 100,
            reset_interval_ms: 600_000,
            badness_threshold: 1.0,
        }
    }
}

impl SnitchParams {
    /// Checks the parameters, saying which one is wrong.
    pub fn validate(&self) -> Result<(), String> {
        if self.update_interval_ms == 0 {
            return Err("[scheduling.dynamic-snitch] update_interval_ms must be positive".into());
        }
        if !(self.badness_threshold >= 0.0 && self.badness_threshold.is_finite()) {
            return Err(format!(
                "[scheduling.dynamic-snitch] badness_threshold must be a fraction ≥ 0, not {}",
                self.badness_threshold
            ));
        }
        Ok(())
    }
}

#[derive(Default)]
struct State {
    latencies: HashMap<Endpoint, f64>,
    scores: HashMap<Endpoint, f64>,
    updated_micros: Option<u64>,
    reset_micros: Option<u64>,
    by_score: u64,
    by_ring: u64,
}

/// Cassandra's dynamic snitch (see the module doc).
pub struct DynamicSnitch {
    params: SnitchParams,
    state: Mutex<State>,
}

impl DynamicSnitch {
    /// A snitch with `params`.
    pub fn new(params: SnitchParams) -> DynamicSnitch {
        DynamicSnitch {
            params,
            state: Mutex::new(State::default()),
        }
    }

    /// Forgets the latencies when the reset interval passed.
    fn maybe_reset(&self, state: &mut State, now: u64) {
        let reset = self.params.reset_interval_ms.saturating_mul(1000);
        let since_reset = now.saturating_sub(*state.reset_micros.get_or_insert(now));
        if reset > 0 && since_reset >= reset {
            state.latencies.clear();
            state.reset_micros = Some(now);
        }
    }

    /// Recomputes the scores when the update interval passed.
    fn refresh(&self, state: &mut State, now: u64) {
        self.maybe_reset(state, now);
        let update = self.params.update_interval_ms.saturating_mul(1000);
        if state
            .updated_micros
            .is_some_and(|at| now.saturating_sub(at) < update)
        {
            return;
        }
        state.updated_micros = Some(now);
        let max = state.latencies.values().copied().fold(0.0, f64::max);
        state.scores = state
            .latencies
            .iter()
            .map(|(node, l)| (*node, if max > 0.0 { l / max } else { 0.0 }))
            .collect();
    }
}

impl Default for DynamicSnitch {
    fn default() -> Self {
        DynamicSnitch::new(SnitchParams::default())
    }
}

impl ReplicaSelector for DynamicSnitch {
    fn name(&self) -> &'static str {
        "dynamic-snitch"
    }

    fn order(&self, replicas: &mut [Endpoint], _me: Endpoint, read: &ReadInfo<'_>) -> Vec<Tag> {
        let mut state = self.state.lock();
        self.refresh(&mut state, read.now_micros);
        let score = |n: &Endpoint| state.scores.get(n).copied().unwrap_or(0.0);
        let mut by_score = replicas.to_vec();
        by_score.sort_by(|a, b| score(a).total_cmp(&score(b)));
        let limit = 1.0 + self.params.badness_threshold;
        let bad = replicas
            .iter()
            .zip(&by_score)
            .any(|(ring, best)| score(ring) > score(best) * limit);
        if bad || self.params.badness_threshold == 0.0 {
            replicas.copy_from_slice(&by_score);
        }
        if bad {
            state.by_score += 1;
        } else {
            state.by_ring += 1;
        }
        Vec::new()
    }

    fn observe(&self, node: Endpoint, micros: u64, now_micros: u64) {
        let mut state = self.state.lock();
        self.maybe_reset(&mut state, now_micros);
        let l = state.latencies.entry(node).or_insert(micros as f64);
        *l = (1.0 - ALPHA) * *l + ALPHA * micros as f64;
    }

    fn forget(&self, node: Endpoint) {
        let mut state = self.state.lock();
        state.latencies.remove(&node);
        state.scores.remove(&node);
    }

    fn decisions(&self) -> Vec<(&'static str, u64)> {
        let state = self.state.lock();
        vec![("ring-order", state.by_ring), ("by-score", state.by_score)]
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{ep, read};
    use super::*;

    fn order(s: &DynamicSnitch, me: u8, now: u64) -> Vec<Endpoint> {
        let mut r = [ep(1), ep(2), ep(3)];
        s.order(&mut r, ep(me), &read(b"k", now));
        r.to_vec()
    }

    #[test]
    fn the_ring_order_stays_until_a_replica_is_worse_than_the_threshold_allows() {
        let s = DynamicSnitch::default();
        // Unmeasured: ring order, whichever node coordinates (no preference for itself).
        assert_eq!(order(&s, 2, 0), [ep(1), ep(2), ep(3)]);
        assert_eq!(order(&s, 3, 0), [ep(1), ep(2), ep(3)]);
        // The primary is 50% slower than the others: within the default threshold (1.0).
        for _ in 0..20 {
            s.observe(ep(1), 1_500, 1_000);
            s.observe(ep(2), 1_000, 1_000);
            s.observe(ep(3), 1_000, 1_000);
        }
        assert_eq!(order(&s, 2, 200_000), [ep(1), ep(2), ep(3)]);
        // Five times slower: reads go by score.
        for _ in 0..40 {
            s.observe(ep(1), 5_000, 300_000);
        }
        assert_eq!(order(&s, 2, 400_000)[2], ep(1));
        assert_eq!(s.decisions(), vec![("ring-order", 3), ("by-score", 1)]);
    }

    #[test]
    fn a_replica_reads_could_not_reach_goes_last_until_it_is_forgotten() {
        let s = DynamicSnitch::default();
        for _ in 0..20 {
            for n in 1..=3 {
                s.observe(ep(n), 1_000, 0);
            }
        }
        // A read found the primary's connection gone: counted as a 5 s timeout.
        s.observe(ep(1), 5_000_000, 10_000);
        assert_eq!(order(&s, 2, 200_000)[2], ep(1));
        // It gossiped again: measured afresh, the ring order is back.
        s.forget(ep(1));
        assert_eq!(order(&s, 2, 400_000), [ep(1), ep(2), ep(3)]);
    }

    #[test]
    fn scores_change_only_every_update_interval() {
        let s = DynamicSnitch::new(SnitchParams {
            badness_threshold: 0.0,
            ..SnitchParams::default()
        });
        for _ in 0..20 {
            s.observe(ep(1), 100, 0);
            s.observe(ep(2), 900, 0);
            s.observe(ep(3), 500, 0);
        }
        assert_eq!(order(&s, 1, 0), [ep(1), ep(3), ep(2)]);
        for _ in 0..40 {
            s.observe(ep(1), 10_000, 50_000);
        }
        // 50 ms later: the scores of time 0 still rule.
        assert_eq!(order(&s, 1, 50_000)[0], ep(1));
        // 100 ms after the last update: recomputed.
        assert_eq!(order(&s, 1, 100_000), [ep(3), ep(2), ep(1)]);
    }

    #[test]
    fn latencies_are_forgotten_every_reset_interval() {
        let s = DynamicSnitch::new(SnitchParams {
            badness_threshold: 0.0,
            reset_interval_ms: 1_000,
            ..SnitchParams::default()
        });
        for _ in 0..20 {
            s.observe(ep(1), 50_000, 0);
            s.observe(ep(2), 100, 0);
            s.observe(ep(3), 700, 0);
        }
        assert_eq!(order(&s, 1, 0)[0], ep(2));
        // After the reset only node 3 was measured since; the others score 0 again and
        // are tried (ties keep the ring order).
        s.observe(ep(3), 700, 1_000_000);
        assert_eq!(order(&s, 1, 1_200_000), [ep(1), ep(2), ep(3)]);
    }
}
