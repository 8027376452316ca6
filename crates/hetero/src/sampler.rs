//! The write-path sampler: a uniform sample of a table's rows, kept at a bounded size, from
//! which [`TableStats`] are built.
//!
//! A [`Sampler`] is a reservoir of at most `capacity` rows, each row one write's encoded
//! clustering components, maintained with Li's Algorithm L: after the reservoir fills it
//! draws how many rows to *skip* before the next one it keeps (a geometric jump), so a
//! write it does not keep costs one counter decrement, and the caller decodes a row's
//! components only for the few writes it keeps:
//!
//! ```
//! # use mosaic_hetero::Sampler;
//! let mut sampler = Sampler::new(4, 7);
//! for i in 0u32..1000 {
//!     if sampler.wants_next() {
//!         sampler.add(vec![i.to_be_bytes().to_vec()]);
//!     }
//! }
//! assert_eq!(sampler.seen(), 1000);
//! assert_eq!(sampler.rows().len(), 4);
//! ```
//!
//! After `N` offers every offered row is in the reservoir with the same probability
//! `capacity / N`, and about `capacity · (1 + ln(N / capacity))` offers are kept. The
//! draws come from a seeded `SplitMix64`, so the same seed and the same sequence of calls
//! keep the same rows. A sampler counts offers, not live rows: overwrites and deletions
//! are rows too, which the statistics take as the table's size.

use mosaic_env::rng::SplitMix64;

use crate::stats::TableStats;

/// A reservoir size that estimates fractions to about ±1.5% (one standard error of a
/// fraction near ½ is `1/(2·√n)`) at a few hundred KiB per table for short keys.
pub const SAMPLE_CAPACITY_DEFAULT: usize = 4096;

/// Where a kept row goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Slot {
    /// Appended: the reservoir is still filling.
    Push,
    /// Replaces the row at this index.
    Replace(usize),
}

/// A reservoir sampler of rows (see the module doc).
#[derive(Clone, Debug)]
pub struct Sampler {
    capacity: usize,
    rows: Vec<Vec<Vec<u8>>>,
    seen: u64,
    /// Offers still to pass over before the next kept one, once the reservoir is full.
    skip: u64,
    /// Algorithm L's `W`; `None` until the reservoir first fills.
    w: Option<f64>,
    /// Where the row of the last [`Sampler::wants_next`] that returned true goes.
    pending: Option<Slot>,
    rng: SplitMix64,
}

impl Sampler {
    /// An empty sampler keeping at most `capacity` rows, its draws seeded by `seed`.
    pub fn new(capacity: usize, seed: u64) -> Sampler {
        Sampler {
            capacity,
            rows: Vec::with_capacity(capacity.min(SAMPLE_CAPACITY_DEFAULT)),
            seen: 0,
            skip: 0,
            w: None,
            pending: None,
            rng: SplitMix64::new(seed),
        }
    }

    /// Counts one offered row and says whether the sampler keeps it; if so, the caller
    /// passes the row to [`Self::add`] before the next offer. Most calls, once the
    /// reservoir is full, only decrement a counter.
    pub fn wants_next(&mut self) -> bool {
        self.seen = self.seen.saturating_add(1);
        self.pending = None;
        if self.capacity == 0 {
            return false;
        }
        if self.rows.len() < self.capacity {
            self.pending = Some(Slot::Push);
            return true;
        }
        let k = self.capacity as f64;
        if self.w.is_none() {
            let w = (self.log_uniform() / k).exp();
            self.w = Some(w);
            self.skip = self.draw_skip(w);
        }
        if self.skip > 0 {
            self.skip -= 1;
            return false;
        }
        let slot = self.rng.index(self.capacity);
        self.pending = Some(Slot::Replace(slot));
        let w = self.w.unwrap_or(1.0) * (self.log_uniform() / k).exp();
        self.w = Some(w);
        self.skip = self.draw_skip(w);
        true
    }

    /// Keeps `row` (one row's encoded clustering components, declared order) for the
    /// offer [`Self::wants_next`] just accepted; returns false and keeps nothing when no
    /// offer is pending. An accepted offer that never gets its row leaves the reservoir
    /// as it was (a decoding failure, say), which only makes the sample a little smaller
    /// or a little staler.
    pub fn add(&mut self, row: Vec<Vec<u8>>) -> bool {
        match self.pending.take() {
            Some(Slot::Push) if self.rows.len() < self.capacity => {
                self.rows.push(row);
                true
            }
            Some(Slot::Replace(i)) => match self.rows.get_mut(i) {
                Some(slot) => {
                    *slot = row;
                    true
                }
                None => false,
            },
            _ => false,
        }
    }

    /// Offers a row built by `row` only if the sampler keeps it; returns whether it did.
    /// `row` may fail (a row that does not decode), which skips the offer and hands the
    /// error back.
    pub fn offer_with<E>(
        &mut self,
        row: impl FnOnce() -> Result<Vec<Vec<u8>>, E>,
    ) -> Result<bool, E> {
        if !self.wants_next() {
            return Ok(false);
        }
        let row = row()?;
        Ok(self.add(row))
    }

    /// Rows offered so far.
    pub fn seen(&self) -> u64 {
        self.seen
    }

    /// The most rows kept.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// The rows kept, in no meaningful order.
    pub fn rows(&self) -> &[Vec<Vec<u8>>] {
        &self.rows
    }

    /// The statistics of the sample, taking the rows offered as the table's size.
    pub fn stats(&self) -> TableStats {
        TableStats::from_sample(self.seen as f64, &self.rows)
    }

    /// `ln(u)` for `u` uniform in `(0, 1]`: never `ln(0)`.
    fn log_uniform(&mut self) -> f64 {
        let u = ((self.rng.next_u64() >> 11) + 1) as f64 / (1u64 << 53) as f64;
        u.ln()
    }

    /// Algorithm L's jump: `⌊ln(u) / ln(1 − w)⌋`. `w = 1` gives 0 (keep the next) and
    /// a vanishing `w` saturates (a float-to-int cast clamps, and NaN becomes 0).
    fn draw_skip(&mut self, w: f64) -> u64 {
        let jump = (self.log_uniform() / (-w).ln_1p()).floor();
        jump as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feed(sampler: &mut Sampler, n: u32) -> usize {
        let mut kept = 0;
        for i in 0..n {
            if sampler.wants_next() {
                kept += 1;
                assert!(sampler.add(vec![i.to_be_bytes().to_vec()]));
            }
        }
        kept
    }

    fn values(sampler: &Sampler) -> Vec<u32> {
        sampler
            .rows()
            .iter()
            .filter_map(|r| r.first())
            .filter_map(|c| <[u8; 4]>::try_from(c.as_slice()).ok())
            .map(u32::from_be_bytes)
            .collect()
    }

    #[test]
    fn a_seed_replays_the_same_sample() {
        let mut a = Sampler::new(100, 42);
        let mut b = Sampler::new(100, 42);
        feed(&mut a, 50_000);
        feed(&mut b, 50_000);
        assert_eq!(a.rows(), b.rows());
        let mut c = Sampler::new(100, 43);
        feed(&mut c, 50_000);
        assert_ne!(a.rows(), c.rows());
    }

    #[test]
    fn the_reservoir_stays_bounded_and_uniform() {
        let capacity = 1000;
        let n = 200_000u32;
        let mut s = Sampler::new(capacity, 9);
        let kept = feed(&mut s, n);
        assert_eq!(s.seen(), u64::from(n));
        assert_eq!(s.rows().len(), capacity);
        // Expected keeps: k (1 + ln(n / k)) ≈ 6 300; most offers cost a decrement.
        assert!(kept > 4_000 && kept < 10_000, "kept {kept}");
        // Ten equal slices of the stream each hold about a tenth (±5 σ, σ ≈ 9.5).
        let mut deciles = [0usize; 10];
        for v in values(&s) {
            if let Some(d) = deciles.get_mut((v / (n / 10)) as usize) {
                *d += 1;
            }
        }
        for d in deciles {
            assert!((52..=148).contains(&d), "{deciles:?}");
        }
        let stats = s.stats();
        assert_eq!(stats.rows, f64::from(n));
        assert_eq!(stats.columns.len(), 1);
    }

    #[test]
    fn the_first_rows_fill_the_reservoir() {
        let mut s = Sampler::new(10, 1);
        feed(&mut s, 7);
        assert_eq!(values(&s), (0..7).collect::<Vec<_>>());
        assert_eq!(s.stats().rows, 7.0);
    }

    #[test]
    fn misuse_keeps_nothing_and_never_panics() {
        let mut s = Sampler::new(2, 3);
        assert!(!s.add(vec![vec![1]]), "no offer pending");
        assert!(s.wants_next());
        assert!(s.add(vec![vec![1]]));
        assert!(!s.add(vec![vec![2]]), "one row per offer");
        // An accepted offer whose row never comes.
        assert!(s.wants_next());
        assert!(!s.wants_next() || s.add(vec![vec![3]]));
        assert!(s.rows().len() <= 2);
        let mut none = Sampler::new(0, 3);
        assert!(!none.wants_next());
        assert_eq!(none.seen(), 1);
        let failed: Result<bool, &str> = Sampler::new(1, 0).offer_with(|| Err("bad row"));
        assert_eq!(failed, Err("bad row"));
        let mut one = Sampler::new(1, 0);
        assert_eq!(one.offer_with(|| Ok::<_, ()>(vec![vec![5]])), Ok(true));
        assert_eq!(one.rows(), &[vec![vec![5u8]]]);
    }
}
