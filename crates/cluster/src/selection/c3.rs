//! C3's replica ranking (Suresh et al., NSDI '15), as Hector rebuilt it, and — with
//! `[scheduling.c3] rate_control` — C3's rate control ([`super::c3_rate`]), which Hector
//! left out.
//!
//! Each replica is scored `R − S + S·(1 + os·n + q)³`: `R` the moving average of its
//! response times seen here, `S` of its service time and `q` of its queue length (facts
//! it reports with its answers, [`super::facts`]), `os` the reads this coordinator has
//! outstanding to it, `n` the nodes of the cluster (every node coordinates). The cube
//! makes a replica with a long queue lose quickly. Times are in microseconds throughout
//! (the prototype truncated service times to whole milliseconds, which zeroed `S`). A
//! replica not measured yet scores 0, so it is tried; ties keep the ring order. With rate
//! control, replicas at their sending limit for the current interval go after the others
//! (in score order), and a read that finds them all at their limit waits for the next
//! interval ([`ReplicaSelector::hold_micros`]).

use std::collections::HashMap;

use parking_lot::Mutex;

use super::c3_rate::{C3Params, Rate};
use super::facts::{FactKind, Facts, Freshness};
use super::{ReadInfo, ReplicaSelector};
use crate::message::Tag;
use crate::Endpoint;

/// Weight of a new sample in the moving averages (C3 keeps 0.9 of the old value).
const ALPHA: f64 = 0.1;

/// The facts C3 needs.
const WANTED: &[FactKind] = &[FactKind::ServiceTimeMicros, FactKind::QueueLength];

#[derive(Clone, Copy, Debug, Default)]
struct Replica {
    response: Option<f64>,
    service: Option<f64>,
    queue: Option<f64>,
    outstanding: u64,
    /// The sending limit, with rate control on.
    rate: Option<Rate>,
}

fn ewma(old: Option<f64>, sample: f64) -> Option<f64> {
    Some(match old {
        Some(o) => (1.0 - ALPHA) * o + ALPHA * sample,
        None => sample,
    })
}

impl Replica {
    fn score(&self, nodes: usize) -> f64 {
        let Some(r) = self.response else {
            return 0.0;
        };
        let s = self.service.unwrap_or(0.0);
        let q = self.queue.unwrap_or(0.0);
        let q_hat = 1.0 + self.outstanding as f64 * nodes.max(1) as f64 + q;
        r - s + s * q_hat.powi(3)
    }
}

/// C3's scoring, and its rate control when configured (see the module doc).
#[derive(Default)]
pub struct C3 {
    params: C3Params,
    replicas: Mutex<HashMap<Endpoint, Replica>>,
    fresh: Freshness,
    reads: std::sync::atomic::AtomicU64,
    untried_first: std::sync::atomic::AtomicU64,
    /// Reads whose best-scored replica was at its limit, and reads that waited for an
    /// interval because every replica was.
    rate_limited: std::sync::atomic::AtomicU64,
    backlogged: std::sync::atomic::AtomicU64,
}

impl C3 {
    /// C3 with `params` (checked by [`C3Params::validate`]).
    pub fn new(params: C3Params) -> C3 {
        C3 {
            params,
            ..C3::default()
        }
    }

    /// `node`'s limit, its interval brought up to `now` (rate control on).
    fn rate<'a>(&self, r: &'a mut Replica, now: u64) -> Option<&'a mut Rate> {
        if !self.params.rate_control {
            return None;
        }
        let outstanding = r.outstanding;
        let rate = r.rate.get_or_insert_with(|| Rate::new(&self.params, now));
        rate.roll(&self.params, now, outstanding);
        Some(rate)
    }
}

impl ReplicaSelector for C3 {
    fn name(&self) -> &'static str {
        "c3"
    }

    fn order(&self, replicas: &mut [Endpoint], _me: Endpoint, read: &ReadInfo<'_>) -> Vec<Tag> {
        use std::sync::atomic::Ordering::Relaxed;
        let mut state = self.replicas.lock();
        let score = |n: &Endpoint| state.get(n).map_or(0.0, |r| r.score(read.nodes));
        replicas.sort_by(|a, b| score(a).total_cmp(&score(b)));
        self.reads.fetch_add(1, Relaxed);
        if self.params.rate_control {
            let best = replicas.first().copied();
            let mut closed = |n: &Endpoint| {
                let r = state.entry(*n).or_default();
                self.rate(r, read.now_micros)
                    .is_some_and(|rate| !rate.open())
            };
            // Stable: open replicas first, each part in score order.
            replicas.sort_by_cached_key(|n| closed(n));
            if best.is_some() && replicas.first().copied() != best {
                self.rate_limited.fetch_add(1, Relaxed);
            }
        }
        if replicas
            .first()
            .is_some_and(|f| state.get(f).is_none_or(|r| r.response.is_none()))
        {
            self.untried_first.fetch_add(1, Relaxed);
        }
        Vec::new()
    }

    fn observe(&self, node: Endpoint, micros: u64, _now_micros: u64) {
        let mut state = self.replicas.lock();
        let r = state.entry(node).or_default();
        r.response = ewma(r.response, micros as f64);
    }

    fn read_answered(&self, node: Endpoint, now_micros: u64) {
        // Reads only: the limit is on reads, so answers to writes must not count.
        let mut state = self.replicas.lock();
        let r = state.entry(node).or_default();
        if let Some(rate) = self.rate(r, now_micros) {
            rate.received();
        }
    }

    fn hold_micros(&self, replicas: &mut dyn Iterator<Item = Endpoint>, now_micros: u64) -> u64 {
        use std::sync::atomic::Ordering::Relaxed;
        if !self.params.rate_control {
            return 0;
        }
        let mut state = self.replicas.lock();
        let mut wait = u64::MAX;
        for n in replicas {
            let r = state.entry(n).or_default();
            match self.rate(r, now_micros) {
                Some(rate) if !rate.open() => {
                    wait = wait.min(rate.until_next(&self.params, now_micros));
                }
                _ => return 0,
            }
        }
        if wait == u64::MAX {
            return 0;
        }
        self.backlogged.fetch_add(1, Relaxed);
        wait
    }

    fn facts_wanted(&self) -> &'static [FactKind] {
        WANTED
    }

    fn feedback(&self, node: Endpoint, facts: &Facts) {
        if !self.fresh.take(node, facts.at_micros) {
            return;
        }
        let mut state = self.replicas.lock();
        let r = state.entry(node).or_default();
        if let Some(s) = facts.get(FactKind::ServiceTimeMicros) {
            r.service = ewma(r.service, s as f64);
        }
        if let Some(q) = facts.get(FactKind::QueueLength) {
            r.queue = ewma(r.queue, q as f64);
        }
    }

    fn sent(&self, node: Endpoint, now_micros: u64) {
        let mut state = self.replicas.lock();
        let r = state.entry(node).or_default();
        if let Some(rate) = self.rate(r, now_micros) {
            rate.sent();
        }
        r.outstanding += 1;
    }

    fn forget(&self, node: Endpoint) {
        if let Some(r) = self.replicas.lock().get_mut(&node) {
            *r = Replica {
                outstanding: r.outstanding,
                rate: None,
                ..Replica::default()
            };
        }
    }

    fn done(&self, node: Endpoint) {
        let mut state = self.replicas.lock();
        let r = state.entry(node).or_default();
        r.outstanding = r.outstanding.saturating_sub(1);
    }

    fn decisions(&self) -> Vec<(&'static str, u64)> {
        use std::sync::atomic::Ordering::Relaxed;
        let reads = self.reads.load(Relaxed);
        let untried = self.untried_first.load(Relaxed);
        let mut out = vec![
            ("scored", reads - untried.min(reads)),
            ("untried-first", untried),
        ];
        if self.params.rate_control {
            out.push(("rate-limited", self.rate_limited.load(Relaxed)));
            out.push(("backlogged", self.backlogged.load(Relaxed)));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{ep, read};
    use super::*;

    fn facts(at: u64, service: u64, queue: u64) -> Facts {
        Facts {
            at_micros: at,
            values: vec![
                (FactKind::ServiceTimeMicros, service),
                (FactKind::QueueLength, queue),
            ],
        }
    }

    fn first(s: &C3) -> Endpoint {
        let mut r = [ep(1), ep(2), ep(3)];
        s.order(&mut r, ep(1), &read(b"k", 0));
        r[0]
    }

    #[test]
    fn unmeasured_replicas_are_tried_then_the_best_score_wins() {
        let s = C3::default();
        assert_eq!(first(&s), ep(1), "ties keep the ring order");
        s.observe(ep(1), 900, 0);
        assert_eq!(first(&s), ep(2), "an unmeasured replica is tried");
        s.observe(ep(2), 500, 0);
        s.observe(ep(3), 700, 0);
        assert_eq!(first(&s), ep(2));
        // Node 2 reports a long queue: the cube takes it out of first place, although
        // its responses were the fastest.
        s.feedback(ep(1), &facts(1, 300, 0));
        s.feedback(ep(2), &facts(1, 300, 40));
        s.feedback(ep(3), &facts(1, 300, 0));
        assert_eq!(first(&s), ep(3));
        assert_eq!(s.decisions(), vec![("scored", 2), ("untried-first", 2)]);
    }

    #[test]
    fn with_rate_control_a_replica_at_its_limit_goes_last_and_all_at_theirs_hold_the_read() {
        let s = C3::new(C3Params {
            rate_control: true,
            initial_limit: 2.0,
            ..C3Params::default()
        });
        s.observe(ep(1), 100, 0);
        s.observe(ep(2), 1_000, 0);
        s.observe(ep(3), 1_000, 0);
        let order = |now| {
            let mut r = [ep(1), ep(2), ep(3)];
            s.order(&mut r, ep(1), &read(b"k", now));
            r
        };
        assert_eq!(order(1_000), [ep(1), ep(2), ep(3)]);
        s.sent(ep(1), 1_000);
        s.sent(ep(1), 1_000);
        // Node 1 used its two reads of this 20 ms interval: it goes last, whatever its score.
        assert_eq!(order(2_000), [ep(2), ep(3), ep(1)]);
        let all = [ep(1), ep(2), ep(3)];
        assert_eq!(s.hold_micros(&mut all.iter().copied(), 2_000), 0);
        for n in [ep(2), ep(3)] {
            s.sent(n, 2_500);
            s.sent(n, 2_500);
        }
        // Every replica at its limit: the read waits for the next interval (the limits'
        // intervals began with the first read ordered, at 1 ms).
        assert_eq!(s.hold_micros(&mut all.iter().copied(), 3_000), 18_000);
        // Which begins at 21 ms: node 1 is first again.
        assert_eq!(s.hold_micros(&mut all.iter().copied(), 21_000), 0);
        assert_eq!(order(21_000)[0], ep(1));
        let decisions = s.decisions();
        assert!(decisions.contains(&("rate-limited", 1)), "{decisions:?}");
        assert!(decisions.contains(&("backlogged", 1)), "{decisions:?}");
        // Without rate control nothing is held or reordered by sends.
        let plain = C3::default();
        plain.observe(ep(1), 100, 0);
        for _ in 0..1_000 {
            plain.sent(ep(2), 0);
        }
        assert_eq!(plain.hold_micros(&mut all.iter().copied(), 0), 0);
        assert_eq!(plain.decisions().len(), 2);
    }

    #[test]
    fn only_answers_to_reads_count_against_the_limit() {
        let limit_after = |read_answers: bool| {
            let s = C3::new(C3Params {
                rate_control: true,
                initial_limit: 4.0,
                ..C3Params::default()
            });
            for _ in 0..4 {
                s.sent(ep(1), 0);
            }
            for _ in 0..4 {
                // Answers to writes are observed too (their latency is a sample)...
                s.observe(ep(1), 500, 10_000);
                if read_answers {
                    s.read_answered(ep(1), 10_000);
                }
            }
            if !read_answers {
                for _ in 0..4 {
                    s.done(ep(1));
                }
                s.sent(ep(1), 10_000);
            }
            // ...but only the reads' answers show the replica keeping up.
            let mut r = [ep(1), ep(2)];
            s.order(&mut r, ep(1), &read(b"k", 45_000));
            let state = s.replicas.lock();
            state.get(&ep(1)).and_then(|r| r.rate).map(|r| r.limit())
        };
        assert_eq!(
            limit_after(true),
            Some(8.0),
            "kept up at its limit: doubled"
        );
        assert_eq!(limit_after(false), Some(1.0), "no read answered: cut");
    }

    #[test]
    fn sub_millisecond_service_times_count() {
        // Equal responses; node 1 serves in 200 µs, node 2 in 900 µs, both with a queue:
        // with service times truncated to whole milliseconds both would score alike.
        let s = C3::default();
        for n in [ep(1), ep(2), ep(3)] {
            s.observe(n, 1_000, 0);
        }
        s.feedback(ep(1), &facts(1, 900, 3));
        s.feedback(ep(2), &facts(1, 200, 3));
        s.feedback(ep(3), &facts(1, 900, 3));
        assert_eq!(first(&s), ep(2));
    }

    #[test]
    fn outstanding_reads_and_stale_facts() {
        let s = C3::default();
        for n in [ep(1), ep(2), ep(3)] {
            s.observe(n, 1_000, 0);
            s.feedback(n, &facts(1, 500, 0));
        }
        // Reads in flight to node 1 (and 2) count against it until answered.
        s.sent(ep(1), 0);
        s.sent(ep(1), 0);
        s.sent(ep(2), 0);
        assert_eq!(first(&s), ep(3));
        s.done(ep(1));
        s.done(ep(1));
        s.done(ep(2));
        assert_eq!(first(&s), ep(1));
        // A late answer's facts (older than ones taken) change nothing.
        s.feedback(ep(1), &facts(5, 500, 0));
        s.feedback(ep(1), &facts(3, 500, 1_000));
        assert_eq!(first(&s), ep(1));
    }
}
