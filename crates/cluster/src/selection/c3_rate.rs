//! C3's distributed rate control (Suresh et al., NSDI '15, §4.2), which Hector left out:
//! each coordinator limits the reads it sends to each replica per interval, and adapts
//! each limit to the rate at which that replica's answers come back.
//!
//! Per replica, per interval of `interval_ms` (C3's δ): the reads sent (`sent`) against
//! the limit (C3's `srate`), and the answers received (C3's `rrate`). At the end of an
//! interval in which the replica fell behind — fewer answers than reads sent, and more
//! reads outstanding than at its start — the limit is cut to `beta` of itself (at most
//! once per two intervals, C3's hysteresis). After an interval in which reads reached the
//! limit and the replica kept up, the limit grows: before any cut by `step_max` (or
//! doubling, whichever is less), after one along C3's cubic curve
//! `γ·(T − K)³ + R₀` (`R₀` the limit before the last cut, `T` the time since it, `K`
//! where the curve gives back `R₀`): fast back towards `R₀`, flat around it, then
//! probing above; never by more than `step_max` reads per interval at once. Demand below
//! the limit leaves it alone (nothing was learnt of the replica's capacity).
//!
//! [`super::C3`] puts replicas at their limit after the others, and a read that finds
//! every replica at its limit waits for the next interval (C3's backlog queue), once:
//! the wait is bounded by one interval, after which it goes to the best-scored replica.

use serde::{Deserialize, Serialize};

/// `[scheduling.c3]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct C3Params {
    /// C3's rate control (see the module doc); off, C3 only ranks (as in Hector).
    pub rate_control: bool,
    /// The interval reads and answers are counted over (C3's δ).
    pub interval_ms: u64,
    /// What a cut keeps of the limit (C3's β).
    pub beta: f64,
    /// The cubic curve's scale (C3's γ), in reads per interval per second³.
    pub gamma: f64,
    /// The most a limit grows at once, in reads per interval (C3's `s_max`).
    pub step_max: f64,
    /// The limit a replica starts with, and the least a cut leaves, in reads per
    /// interval.
    pub initial_limit: f64,
    pub min_limit: f64,
}

impl Default for C3Params {
    fn default() -> Self {
        C3Params {
            rate_control: false,
            interval_ms: 20,
            beta: 0.2,
            gamma: 100.0,
            step_max: 10.0,
            initial_limit: 100.0,
            min_limit: 1.0,
        }
    }
}

impl C3Params {
    /// Checks the parameters, saying which one is wrong.
    pub fn validate(&self) -> Result<(), String> {
        let bad = |what: &str, v: String| Err(format!("[scheduling.c3] {what}, not {v}"));
        if !(1..=10_000).contains(&self.interval_ms) {
            return bad(
                "interval_ms must be within 1..=10000",
                self.interval_ms.to_string(),
            );
        }
        if !(self.beta > 0.0 && self.beta < 1.0) {
            return bad("beta must be in (0, 1)", self.beta.to_string());
        }
        if !(self.gamma > 0.0 && self.gamma.is_finite()) {
            return bad("gamma must be positive", self.gamma.to_string());
        }
        if !(self.step_max >= 1.0 && self.step_max.is_finite()) {
            return bad("step_max must be at least 1", self.step_max.to_string());
        }
        if !(self.min_limit >= 1.0
            && self.min_limit <= self.initial_limit
            && self.initial_limit.is_finite())
        {
            return bad(
                "min_limit must be at least 1 and at most initial_limit",
                format!("{} and {}", self.min_limit, self.initial_limit),
            );
        }
        Ok(())
    }

    fn interval_micros(&self) -> u64 {
        self.interval_ms.saturating_mul(1000).max(1)
    }
}

/// One replica's limit and counts, as one coordinator sees them.
#[derive(Clone, Copy, Debug)]
pub(super) struct Rate {
    /// Reads per interval (C3's `srate`).
    limit: f64,
    /// The limit before the last cut (C3's `R₀`), and when that cut was (`None`: never
    /// cut yet, so the limit grows by `step_max` or doubles, whichever is less).
    before_cut: f64,
    cut_at: Option<u64>,
    /// When the limit last changed (the hysteresis of cuts).
    changed_at: u64,
    /// The current interval: its start, reads sent and answers received in it, and the
    /// reads outstanding at its start.
    start: u64,
    sent: u64,
    received: u64,
    outstanding_at_start: u64,
}

impl Rate {
    pub(super) fn new(p: &C3Params, now: u64) -> Rate {
        Rate {
            limit: p.initial_limit,
            before_cut: p.initial_limit,
            cut_at: None,
            changed_at: now,
            start: now,
            sent: 0,
            received: 0,
            outstanding_at_start: 0,
        }
    }

    /// Ends the interval(s) past by `now`, adapting the limit to the one that ended;
    /// `outstanding` is the reads in flight to the replica now.
    pub(super) fn roll(&mut self, p: &C3Params, now: u64, outstanding: u64) {
        let interval = p.interval_micros();
        if now < self.start.saturating_add(interval) {
            return;
        }
        let fell_behind = self.received < self.sent && outstanding > self.outstanding_at_start;
        let at_limit = self.sent as f64 >= self.limit;
        if fell_behind {
            if now.saturating_sub(self.changed_at) >= 2 * interval {
                self.before_cut = self.limit;
                self.limit = (self.limit * p.beta).max(p.min_limit);
                self.cut_at = Some(now);
                self.changed_at = now;
            }
        } else if at_limit {
            let grown = match self.cut_at {
                None => self.limit + p.step_max.min(self.limit),
                Some(cut_at) => {
                    let t = now.saturating_sub(cut_at) as f64 / 1e6;
                    let k = (self.before_cut * (1.0 - p.beta) / p.gamma).cbrt();
                    let curve = p.gamma * (t - k).powi(3) + self.before_cut;
                    curve.clamp(self.limit, self.limit + p.step_max)
                }
            };
            if grown > self.limit {
                self.limit = grown;
                self.changed_at = now;
            }
        }
        // A replica left alone for several intervals starts a fresh one.
        self.start = now - (now - self.start) % interval;
        self.sent = 0;
        self.received = 0;
        self.outstanding_at_start = outstanding;
    }

    /// Whether a read may be sent in the current interval.
    pub(super) fn open(&self) -> bool {
        (self.sent as f64) < self.limit
    }

    /// Microseconds until the next interval begins.
    pub(super) fn until_next(&self, p: &C3Params, now: u64) -> u64 {
        self.start
            .saturating_add(p.interval_micros())
            .saturating_sub(now)
    }

    pub(super) fn sent(&mut self) {
        self.sent += 1;
    }

    pub(super) fn received(&mut self) {
        self.received += 1;
    }

    #[cfg(test)]
    pub(super) fn limit(&self) -> f64 {
        self.limit
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1000;

    fn params() -> C3Params {
        C3Params {
            rate_control: true,
            initial_limit: 20.0,
            ..C3Params::default()
        }
    }

    /// One interval in which `sent` reads go out and `answered` come back, ending at
    /// `end` with `outstanding` in flight.
    fn interval(r: &mut Rate, p: &C3Params, sent: u64, answered: u64, end: u64, outstanding: u64) {
        for _ in 0..sent {
            r.sent();
        }
        for _ in 0..answered {
            r.received();
        }
        r.roll(p, end, outstanding);
    }

    #[test]
    fn a_replica_that_falls_behind_is_cut_to_beta_at_most_every_two_intervals() {
        let p = params();
        let mut r = Rate::new(&p, 0);
        // Keeps up at its limit: grows, by at most step_max.
        interval(&mut r, &p, 20, 20, 20 * MS, 0);
        assert!(r.limit() > 20.0 && r.limit() <= 30.0, "{r:?}");
        let before = r.limit();
        // Falls behind (answers lag, the backlog grows): cut to beta. The last change
        // (the growth) was one interval ago: the hysteresis holds the cut once.
        interval(&mut r, &p, 30, 10, 40 * MS, 20);
        assert_eq!(r.limit(), before, "{r:?}");
        interval(&mut r, &p, 30, 10, 60 * MS, 40);
        assert!((r.limit() - before * 0.2).abs() < 1e-9, "{r:?}");
        // Still behind one interval later: the hysteresis keeps the cut from repeating.
        interval(&mut r, &p, 6, 0, 80 * MS, 46);
        assert!((r.limit() - before * 0.2).abs() < 1e-9, "{r:?}");
        // And two intervals after it, it is cut again, never below min_limit.
        interval(&mut r, &p, 6, 0, 100 * MS, 52);
        assert!((r.limit() - before * 0.04).abs() < 1e-9, "{r:?}");
        for i in 0..20 {
            interval(&mut r, &p, 6, 0, (120 + 40 * i) * MS, 60 + i);
        }
        assert_eq!(r.limit(), p.min_limit);
    }

    #[test]
    fn after_a_cut_the_limit_climbs_back_along_the_cubic_curve() {
        let p = C3Params {
            step_max: 1000.0,
            ..params()
        };
        let mut r = Rate::new(&p, 0);
        interval(&mut r, &p, 20, 20, 20 * MS, 0);
        let r0 = r.limit();
        interval(&mut r, &p, 40, 0, 40 * MS, 40);
        interval(&mut r, &p, 40, 0, 60 * MS, 80);
        assert!(r.limit() < r0, "{r:?}");
        // Keeping up at the limit from then on: the limit rises, fast at first, and is
        // back at R₀ once T reaches K.
        let k = (r0 * 0.8 / p.gamma).cbrt();
        let mut t = 60 * MS;
        let mut last = r.limit();
        let mut steps = Vec::new();
        while (t - 60 * MS) as f64 / 1e6 < k {
            t += 20 * MS;
            let at = r.limit().ceil() as u64;
            interval(&mut r, &p, at, at, t, 0);
            steps.push(r.limit() - last);
            last = r.limit();
        }
        assert!(r.limit() >= r0 - 1e-6, "{r:?} {k}");
        assert!(steps.first() > steps.last(), "concave below R₀: {steps:?}");
    }

    #[test]
    fn demand_below_the_limit_leaves_it_and_idle_intervals_are_skipped() {
        let p = params();
        let mut r = Rate::new(&p, 0);
        interval(&mut r, &p, 5, 5, 20 * MS, 0);
        assert_eq!(r.limit(), 20.0);
        // Nothing for a second: the next read starts a fresh interval.
        r.roll(&p, 1_013 * MS, 0);
        assert!(r.open());
        assert_eq!(r.until_next(&p, 1_013 * MS), 7 * MS);
        for _ in 0..20 {
            r.sent();
        }
        assert!(!r.open(), "at its limit within the interval");
    }

    #[test]
    fn wrong_parameters_are_named() {
        assert!(C3Params::default().validate().is_ok());
        let bad = |p: C3Params| p.validate().unwrap_err();
        assert!(bad(C3Params {
            beta: 1.0,
            ..C3Params::default()
        })
        .contains("beta"));
        assert!(bad(C3Params {
            interval_ms: 0,
            ..C3Params::default()
        })
        .contains("interval_ms"));
        assert!(bad(C3Params {
            min_limit: 0.5,
            ..C3Params::default()
        })
        .contains("min_limit"));
        assert!(bad(C3Params {
            gamma: f64::NAN,
            ..C3Params::default()
        })
        .contains("gamma"));
    }
}
