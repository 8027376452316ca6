//! The storage saving target α (§4.3): how much of a node's primary tree to code and to
//! offload so that the hot tier holds `1 − α` of what full replication would.
//!
//! Amounts are in one unit throughout: the paper counts SSTables; Mosaic passes bytes,
//! which SSTable counts only approximate. With `R` replicas and an `(n, k)` code, coding
//! `C_rt` of the primary tree's `C_all` (at most its last level, `C_last`) and offloading
//! `C_pm` of parity and `C_dm` of data leaves a replication group holding
//! `(C_all − C_rt)·R + C_rt·n/k − C_pm − C_dm` (Eq. (2)) in the hot tier. [`plan`] picks
//! the amounts in ELECT's order: code first (Eq. (4)); if the whole last level is coded
//! and α is not met, offload parity (Eq. (5)); if all parity is offloaded and α is still
//! not met, offload coded data (Eq. (6)). Only coded data is ever offloaded, so a large α
//! may be out of reach; [`saving`] says what a plan achieves.

/// A node's primary tree, in one unit (bytes or SSTables).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Counts {
    /// Everything in the tree (`C_all`).
    pub all: f64,
    /// Its last level (`C_last`).
    pub last: f64,
}

/// How much to code and offload, in the unit of [`Counts`].
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Plan {
    /// Last-level data to code (`C_rt`).
    pub code: f64,
    /// Parity to offload to the cold tier (`C_pm`).
    pub offload_parity: f64,
    /// Coded data to offload to the cold tier (`C_dm`).
    pub offload_data: f64,
}

/// The plan reaching `alpha` with `r` replicas and `k` data shards of `n` (Eqs. (4)–(6)).
/// Coding saves nothing when `r <= n/k`; then, and for `alpha <= 0`, nothing is done.
pub fn plan(alpha: f64, r: u32, k: usize, n: usize, counts: Counts) -> Plan {
    let r = f64::from(r);
    let stretch = n as f64 / k as f64;
    let (all, last) = (
        counts.all.max(0.0),
        counts.last.clamp(0.0, counts.all.max(0.0)),
    );
    if alpha.is_nan() {
        return Plan::default();
    }
    let alpha = alpha.min(1.0);
    if alpha <= 0.0 || r <= stretch || all == 0.0 || k == 0 {
        return Plan::default();
    }
    let wanted = r * all * alpha;
    let code = (wanted / (r - stretch)).min(last);
    if code < last {
        return Plan {
            code,
            ..Plan::default()
        };
    }
    let parity_max = (n - k) as f64 / k as f64 * last;
    let offload_parity = (wanted - (r - stretch) * last).min(parity_max).max(0.0);
    if offload_parity < parity_max {
        return Plan {
            code,
            offload_parity,
            offload_data: 0.0,
        };
    }
    Plan {
        code,
        offload_parity,
        offload_data: (wanted - (r - 1.0) * last).min(last).max(0.0),
    }
}

/// The hot-tier saving a plan achieves against full replication (Eq. (3)'s left side).
pub fn saving(r: u32, k: usize, n: usize, counts: Counts, plan: Plan) -> f64 {
    let r = f64::from(r);
    if counts.all <= 0.0 || k == 0 {
        return 0.0;
    }
    let hot = (counts.all - plan.code) * r + plan.code * n as f64 / k as f64
        - plan.offload_parity
        - plan.offload_data;
    1.0 - hot / (counts.all * r)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    #[test]
    fn coding_alone_reaches_a_small_target() {
        // R = 3, (6,4): coding a unit saves 1.5 of 3. α = 0.2 of 100 units → 60 / 1.5 = 40.
        let counts = Counts {
            all: 100.0,
            last: 90.0,
        };
        let p = plan(0.2, 3, 4, 6, counts);
        assert!(close(p.code, 40.0), "{p:?}");
        assert_eq!((p.offload_parity, p.offload_data), (0.0, 0.0));
        assert!(close(saving(3, 4, 6, counts, p), 0.2));
    }

    #[test]
    fn the_default_target_codes_the_last_level_then_offloads_parity() {
        // α = 0.6 needs 180 of 300 saved; coding all 90 saves 135, parity offload the rest.
        let counts = Counts {
            all: 100.0,
            last: 90.0,
        };
        let p = plan(0.6, 3, 4, 6, counts);
        assert!(close(p.code, 90.0));
        assert!(close(p.offload_parity, 45.0), "{p:?}");
        assert_eq!(p.offload_data, 0.0);
        assert!(close(saving(3, 4, 6, counts, p), 0.6));
    }

    #[test]
    fn a_large_target_offloads_data_and_may_stay_out_of_reach() {
        let counts = Counts {
            all: 100.0,
            last: 90.0,
        };
        let p = plan(0.7, 3, 4, 6, counts);
        assert!(close(p.offload_parity, 45.0));
        // 210 − 2·90 = 30 units of data.
        assert!(close(p.offload_data, 30.0), "{p:?}");
        assert!(close(saving(3, 4, 6, counts, p), 0.7));
        // At most the last level: 1 − (10·3 + 135 − 45 − 90) / 300 = 0.9 − ε.
        let p = plan(0.95, 3, 4, 6, counts);
        assert!(close(p.offload_data, 90.0));
        let best = saving(3, 4, 6, counts, p);
        assert!(best < 0.95 && close(best, 1.0 - 30.0 / 300.0), "{best}");
    }

    #[test]
    fn the_saving_never_falls_as_the_target_rises() {
        let counts = Counts {
            all: 1000.0,
            last: 880.0,
        };
        let mut previous = 0.0;
        for step in 0..=100 {
            let alpha = f64::from(step) / 100.0;
            let s = saving(3, 4, 6, counts, plan(alpha, 3, 4, 6, counts));
            assert!(s + 1e-9 >= previous, "α {alpha}: {s} < {previous}");
            assert!(s <= alpha + 1e-9, "α {alpha}: never more than asked");
            previous = s;
        }
    }

    #[test]
    fn nothing_to_do_when_coding_cannot_save() {
        let counts = Counts {
            all: 10.0,
            last: 9.0,
        };
        assert_eq!(plan(0.6, 1, 4, 6, counts), Plan::default());
        assert_eq!(plan(0.0, 3, 4, 6, counts), Plan::default());
        assert_eq!(plan(f64::NAN, 3, 4, 6, counts), Plan::default());
        assert_eq!(plan(0.6, 3, 4, 6, Counts::default()), Plan::default());
    }
}
