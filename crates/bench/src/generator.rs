//! YCSB's number generators, with YCSB's semantics, so a run here draws the same shapes of
//! load as the Java client: zipfian (Gray et al.'s "Quickly generating billion-record
//! synthetic databases" method, constant 0.99), scrambled zipfian (the zipfian over 10^10
//! items hashed with FNV-1a 64 into the key space, so hot keys are spread out), uniform,
//! skewed-latest (zipfian over the distance from the newest acknowledged insert), hotspot,
//! and the acknowledged insert counter `latest` and key choice read.
//!
//! Pure: every draw takes the caller's random number generator, so a seed replays a run.
//! Written from YCSB's `site.ycsb.generator` semantics (0.17), not from its code.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use rand::Rng;

/// YCSB's default zipfian constant.
pub const ZIPFIAN_CONSTANT: f64 = 0.99;

/// The item count of the zipfian behind [`ScrambledZipfian`] (YCSB's `ITEM_COUNT`).
const SCRAMBLED_ITEM_COUNT: u64 = 10_000_000_000;

/// zeta(10^10 + 1, 0.99), precomputed as YCSB does (its `ZETAN`): summing 10^10 terms
/// would take a minute.
const SCRAMBLED_ZETAN: f64 = 26.469_028_201_783_02;

const FNV_OFFSET_BASIS_64: u64 = 0xCBF2_9CE4_8422_2325;
const FNV_PRIME_64: u64 = 1_099_511_628_211;

/// YCSB's `Utils.fnvhash64`: FNV-1a over the 8 little-end-first bytes of `value`, then the
/// absolute value of the result read as a signed 64-bit number. (Java's `Math.abs` leaves
/// `Long.MIN_VALUE` negative; here it becomes 2^63. No key number below 2^62 hashes to it
/// in any run YCSB or this tool can make, and the difference would be one key's name.)
pub fn fnv_hash64(value: u64) -> u64 {
    let mut hash = FNV_OFFSET_BASIS_64;
    for byte in value.to_le_bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(FNV_PRIME_64);
    }
    (hash as i64).unsigned_abs()
}

/// Σ_{i=from}^{to-1} 1/(i+1)^θ added to `sum` (YCSB's incremental `zeta`).
fn zeta(from: u64, to: u64, theta: f64, sum: f64) -> f64 {
    (from..to).fold(sum, |s, i| s + 1.0 / ((i + 1) as f64).powf(theta))
}

/// Zipfian over `[base, base + items)`: item `base` is the most popular, `base + 1` next,
/// and so on; P(rank r) ∝ 1/r^θ. The item count may grow between draws
/// ([`Zipfian::next_with_items`]); ζ is then extended incrementally, as YCSB does.
#[derive(Clone, Debug)]
pub struct Zipfian {
    base: u64,
    items: u64,
    theta: f64,
    alpha: f64,
    zeta2theta: f64,
    zetan: f64,
    eta: f64,
}

impl Zipfian {
    /// Zipfian over `[min, max]` with constant [`ZIPFIAN_CONSTANT`].
    pub fn new(min: u64, max: u64) -> Zipfian {
        Zipfian::with_constant(min, max, ZIPFIAN_CONSTANT)
    }

    /// Zipfian over `[min, max]` with constant `theta` (0 < θ, θ ≠ 1).
    pub fn with_constant(min: u64, max: u64, theta: f64) -> Zipfian {
        assert!(max >= min, "empty zipfian range {min}..={max}");
        let items = max - min + 1;
        Zipfian::with_zetan(min, max, theta, zeta(0, items, theta, 0.0))
    }

    /// As [`Zipfian::with_constant`] with ζ(items, θ) given (it costs one `powf` per item).
    pub fn with_zetan(min: u64, max: u64, theta: f64, zetan: f64) -> Zipfian {
        assert!(max >= min, "empty zipfian range {min}..={max}");
        assert!(theta > 0.0 && theta != 1.0, "zipfian constant {theta}");
        let items = max - min + 1;
        let zeta2theta = zeta(0, 2, theta, 0.0);
        let mut z = Zipfian {
            base: min,
            items,
            theta,
            alpha: 1.0 / (1.0 - theta),
            zeta2theta,
            zetan,
            eta: 0.0,
        };
        z.eta = z.eta_for(items);
        z
    }

    fn eta_for(&self, items: u64) -> f64 {
        (1.0 - (2.0 / items as f64).powf(1.0 - self.theta)) / (1.0 - self.zeta2theta / self.zetan)
    }

    /// The number of items drawn from.
    pub fn items(&self) -> u64 {
        self.items
    }

    /// One draw from `[base, base + items)`.
    pub fn next<R: Rng + ?Sized>(&self, rng: &mut R) -> u64 {
        let u: f64 = rng.gen();
        let uz = u * self.zetan;
        if uz < 1.0 {
            return self.base;
        }
        if uz < 1.0 + 0.5f64.powf(self.theta) {
            return self.base + 1;
        }
        let offset = (self.items as f64 * (self.eta * u - self.eta + 1.0).powf(self.alpha)) as u64;
        // u < 1 keeps the offset below `items`; the clamp guards float rounding only.
        self.base + offset.min(self.items - 1)
    }

    /// One draw after growing the item count to `items` (YCSB's `nextLong(itemcount)`).
    /// A smaller count recomputes ζ from scratch.
    pub fn next_with_items<R: Rng + ?Sized>(&mut self, rng: &mut R, items: u64) -> u64 {
        assert!(items > 0, "zipfian over no items");
        if items != self.items {
            self.zetan = if items > self.items {
                zeta(self.items, items, self.theta, self.zetan)
            } else {
                zeta(0, items, self.theta, 0.0)
            };
            self.items = items;
            self.eta = self.eta_for(items);
        }
        self.next(rng)
    }
}

/// YCSB's scrambled zipfian over `[min, max]`: a zipfian draw over 10^10 items, hashed with
/// [`fnv_hash64`] and reduced modulo the item count. Popular items are therefore scattered
/// over the key space rather than clustered at its start.
#[derive(Clone, Debug)]
pub struct ScrambledZipfian {
    min: u64,
    items: u64,
    zipfian: Zipfian,
}

impl ScrambledZipfian {
    /// Scrambled zipfian over `[min, max]` with constant [`ZIPFIAN_CONSTANT`].
    pub fn new(min: u64, max: u64) -> ScrambledZipfian {
        assert!(max >= min, "empty range {min}..={max}");
        ScrambledZipfian {
            min,
            items: max - min + 1,
            zipfian: Zipfian::with_zetan(
                0,
                SCRAMBLED_ITEM_COUNT,
                ZIPFIAN_CONSTANT,
                SCRAMBLED_ZETAN,
            ),
        }
    }

    /// One draw from `[min, max]`.
    pub fn next<R: Rng + ?Sized>(&self, rng: &mut R) -> u64 {
        self.min + fnv_hash64(self.zipfian.next(rng)) % self.items
    }
}

/// A Zipf law of any exponent over `[0, items)` (Hector's experiments use 0.1 and 1.5,
/// which [`Zipfian`]'s method, made for θ < 1, does not cover): rank r (1-based) has
/// probability ∝ 1/r^s, drawn exactly from a table of the cumulative distribution; ranks
/// are scattered over the items with [`fnv_hash64`], as [`ScrambledZipfian`] does.
#[derive(Clone, Debug)]
pub struct ZipfTable {
    cdf: std::sync::Arc<[f64]>,
}

impl ZipfTable {
    /// Most items a table covers (8 bytes each).
    pub const MAX_ITEMS: u64 = 50_000_000;

    /// The law of exponent `s` (≥ 0) over `items` (1 ..= [`ZipfTable::MAX_ITEMS`]).
    pub fn new(items: u64, s: f64) -> ZipfTable {
        let items = items.clamp(1, Self::MAX_ITEMS) as usize;
        let mut cdf = Vec::with_capacity(items);
        let mut sum = 0.0;
        for r in 1..=items {
            sum += 1.0 / (r as f64).powf(s);
            cdf.push(sum);
        }
        for c in &mut cdf {
            *c /= sum;
        }
        ZipfTable { cdf: cdf.into() }
    }

    /// The rank (0 = most popular) of one draw.
    pub fn rank<R: Rng + ?Sized>(&self, rng: &mut R) -> u64 {
        let u: f64 = rng.gen();
        (self.cdf.partition_point(|c| *c <= u) as u64).min(self.cdf.len() as u64 - 1)
    }

    /// One draw: an item of `[0, items)`.
    pub fn next<R: Rng + ?Sized>(&self, rng: &mut R) -> u64 {
        fnv_hash64(self.rank(rng)) % self.cdf.len() as u64
    }
}

/// YCSB's hotspot generator over `[min, max]`: the first `data_fraction` of the range is hot
/// and receives `op_fraction` of the draws, uniformly; the rest is uniform over the cold part.
#[derive(Clone, Debug)]
pub struct Hotspot {
    min: u64,
    hot_items: u64,
    cold_items: u64,
    op_fraction: f64,
}

impl Hotspot {
    /// Hotspot over `[min, max]`; fractions are clamped to [0, 1].
    pub fn new(min: u64, max: u64, data_fraction: f64, op_fraction: f64) -> Hotspot {
        assert!(max >= min, "empty range {min}..={max}");
        let items = max - min + 1;
        let hot_items = (items as f64 * data_fraction.clamp(0.0, 1.0)) as u64;
        Hotspot {
            min,
            hot_items,
            cold_items: items - hot_items,
            op_fraction: op_fraction.clamp(0.0, 1.0),
        }
    }

    /// One draw.
    pub fn next<R: Rng + ?Sized>(&self, rng: &mut R) -> u64 {
        let hot = rng.gen::<f64>() < self.op_fraction;
        if (hot && self.hot_items > 0) || self.cold_items == 0 {
            self.min + rng.gen_range(0..self.hot_items)
        } else {
            self.min + self.hot_items + rng.gen_range(0..self.cold_items)
        }
    }
}

/// YCSB's `AcknowledgedCounterGenerator`: hands out insert key numbers in order and knows
/// the highest number below which every insert has been acknowledged, which is what reads
/// may safely ask for. Shared by all workers of a run.
#[derive(Debug)]
pub struct AcknowledgedCounter {
    next: AtomicU64,
    /// The acknowledged limit (every number below it is done) and the numbers acknowledged
    /// above it, waiting for the gap below them to close.
    acked: Mutex<(u64, BTreeSet<u64>)>,
    limit: AtomicU64,
}

impl AcknowledgedCounter {
    /// A counter whose first number is `start` (numbers below it count as acknowledged).
    pub fn new(start: u64) -> AcknowledgedCounter {
        AcknowledgedCounter {
            next: AtomicU64::new(start),
            acked: Mutex::new((start, BTreeSet::new())),
            limit: AtomicU64::new(start),
        }
    }

    /// The next number to insert.
    pub fn next(&self) -> u64 {
        self.next.fetch_add(1, Ordering::Relaxed)
    }

    /// Marks `n` (from [`AcknowledgedCounter::next`]) as written.
    pub fn acknowledge(&self, n: u64) {
        // A poisoned lock means a worker panicked holding it; the set is still consistent
        // (every mutation below completes before anything can panic), so keep going.
        let mut guard = self.acked.lock().unwrap_or_else(|e| e.into_inner());
        let (limit, pending) = &mut *guard;
        if n < *limit {
            return;
        }
        pending.insert(n);
        while pending.remove(limit) {
            *limit += 1;
        }
        self.limit.store(*limit, Ordering::Release);
    }

    /// The highest acknowledged number with every number below it acknowledged too
    /// (YCSB's `lastValue`); `start - 1` before any acknowledgement.
    pub fn last_value(&self) -> u64 {
        self.limit.load(Ordering::Acquire).saturating_sub(1)
    }
}

/// YCSB's `SkewedLatestGenerator`: zipfian over the distance back from the newest
/// acknowledged insert, so recently inserted records are the popular ones.
#[derive(Clone, Debug)]
pub struct SkewedLatest {
    zipfian: Zipfian,
}

impl SkewedLatest {
    /// A generator for a key space whose newest acknowledged number is now `last`.
    pub fn new(last: u64) -> SkewedLatest {
        SkewedLatest {
            zipfian: Zipfian::new(0, last.max(1) - 1),
        }
    }

    /// One draw given the newest acknowledged number `last`: `last - zipfian(last)`, in
    /// `[1, last]` as in YCSB (`last` itself is the most likely; 0 only when `last` is 0).
    pub fn next<R: Rng + ?Sized>(&mut self, rng: &mut R, last: u64) -> u64 {
        if last == 0 {
            return 0;
        }
        last - self.zipfian.next_with_items(rng, last)
    }
}

/// A uniform or zipfian length in `[min, max]` (YCSB's scan length distribution).
#[derive(Clone, Debug)]
pub enum LengthGenerator {
    /// Uniform in `[min, max]`.
    Uniform {
        /// Smallest length.
        min: u64,
        /// Largest length.
        max: u64,
    },
    /// Zipfian in `[min, max]` (short lengths most likely).
    Zipfian(Zipfian),
}

impl LengthGenerator {
    /// One draw.
    pub fn next<R: Rng + ?Sized>(&self, rng: &mut R) -> u64 {
        match self {
            LengthGenerator::Uniform { min, max } => rng.gen_range(*min..=*max),
            LengthGenerator::Zipfian(z) => z.next(rng),
        }
    }
}

/// YCSB's `DiscreteGenerator`: picks one of several values with given weights.
#[derive(Clone, Debug)]
pub struct Discrete<T> {
    choices: Vec<(f64, T)>,
    total: f64,
}

impl<T: Copy> Discrete<T> {
    /// Picks among `choices`; zero weights are dropped. Panics when no weight is positive.
    pub fn new(choices: impl IntoIterator<Item = (f64, T)>) -> Discrete<T> {
        let choices: Vec<(f64, T)> = choices.into_iter().filter(|(w, _)| *w > 0.0).collect();
        let total = choices.iter().map(|(w, _)| w).sum();
        assert!(!choices.is_empty(), "no choice has a positive weight");
        Discrete { choices, total }
    }

    /// One draw.
    pub fn next<R: Rng + ?Sized>(&self, rng: &mut R) -> T {
        let mut u = rng.gen::<f64>() * self.total;
        for (w, v) in &self.choices {
            if u < *w {
                return *v;
            }
            u -= w;
        }
        // Float rounding can leave u a hair above the last weight.
        self.choices[self.choices.len() - 1].1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zipf_table_follows_its_exponent() {
        use rand::SeedableRng;
        let mut rng = rand::rngs::StdRng::seed_from_u64(5);
        for s in [0.1, 1.5] {
            let z = ZipfTable::new(1000, s);
            let mut counts = [0u32; 1000];
            let draws = 200_000;
            for _ in 0..draws {
                counts[z.rank(&mut rng) as usize] += 1;
            }
            let norm: f64 = (1..=1000).map(|r| 1.0 / (r as f64).powf(s)).sum();
            for rank in [0usize, 1, 9] {
                let want = 1.0 / ((rank + 1) as f64).powf(s) / norm;
                let got = f64::from(counts[rank]) / f64::from(draws);
                let sd = (want * (1.0 - want) / f64::from(draws)).sqrt();
                assert!(
                    (got - want).abs() < 5.0 * sd,
                    "s {s} rank {rank}: {got} vs {want}"
                );
            }
            assert!((0..100).all(|_| z.next(&mut rng) < 1000));
        }
    }
    use rand::rngs::StdRng;
    use rand::SeedableRng;

    fn rng() -> StdRng {
        StdRng::seed_from_u64(42)
    }

    #[test]
    fn fnv_hash64_matches_ycsb() {
        // FNV-1a 64 of eight zero bytes, as a signed long, made non-negative.
        let mut h = FNV_OFFSET_BASIS_64;
        for _ in 0..8 {
            h = h.wrapping_mul(FNV_PRIME_64);
        }
        assert_eq!(fnv_hash64(0), (h as i64).unsigned_abs());
        assert!(fnv_hash64(1) < 1 << 63);
        assert_ne!(fnv_hash64(1), fnv_hash64(2));
    }

    #[test]
    fn zipfian_rank_frequencies_follow_theory() {
        let items = 1000;
        let z = Zipfian::new(0, items - 1);
        let mut rng = rng();
        let draws = 2_000_000;
        let mut counts = vec![0u64; items as usize];
        for _ in 0..draws {
            counts[z.next(&mut rng) as usize] += 1;
        }
        let zetan = zeta(0, items, ZIPFIAN_CONSTANT, 0.0);
        // Ranks 1 and 2 are exact in Gray et al.'s method; later ranks come from a
        // continuous inverse, which over-weights ranks 3–5 (rank 3 by ~17%, as YCSB's own
        // generator does) and is within a few percent from rank ~8 on.
        let ranks = [
            (1u64, 0.01),
            (2, 0.02),
            (3, 0.2),
            (4, 0.15),
            (5, 0.1),
            (10, 0.05),
            (20, 0.05),
            (50, 0.08),
            (100, 0.1),
        ];
        for (rank, tolerance) in ranks {
            let expected = 1.0 / (rank as f64).powf(ZIPFIAN_CONSTANT) / zetan;
            let observed = counts[rank as usize - 1] as f64 / draws as f64;
            let error = (observed - expected).abs() / expected;
            assert!(
                error < tolerance,
                "rank {rank}: observed {observed:.5}, theory {expected:.5}"
            );
        }
        // The curve is a power law: log-frequency against log-rank over ranks 10..500 has
        // slope -θ.
        let (mut sx, mut sy, mut sxx, mut sxy, mut n) = (0.0, 0.0, 0.0, 0.0, 0.0);
        for rank in 10..500usize {
            let (x, y) = ((rank as f64).ln(), (counts[rank - 1] as f64).ln());
            sx += x;
            sy += y;
            sxx += x * x;
            sxy += x * y;
            n += 1.0;
        }
        let slope = (n * sxy - sx * sy) / (n * sxx - sx * sx);
        assert!((slope + ZIPFIAN_CONSTANT).abs() < 0.08, "slope {slope}");
        // Head mass: the top 1% of items get about a third of the draws (theory 0.37).
        let head: u64 = counts[..10].iter().sum();
        let theory: f64 = (1..=10).map(|r| 1.0 / (r as f64).powf(0.99)).sum::<f64>() / zetan;
        let observed = head as f64 / draws as f64;
        assert!((observed - theory).abs() < 0.03, "{observed} vs {theory}");
    }

    #[test]
    fn zipfian_growing_item_count_matches_a_fresh_one() {
        let mut grown = Zipfian::new(0, 99);
        let mut rng = rng();
        grown.next_with_items(&mut rng, 5000);
        let fresh = Zipfian::new(0, 4999);
        assert!((grown.zetan - fresh.zetan).abs() < 1e-9);
        assert!((grown.eta - fresh.eta).abs() < 1e-12);
    }

    #[test]
    fn scrambled_zipfian_spreads_hot_keys_across_the_key_space() {
        let items = 100_000u64;
        let z = ScrambledZipfian::new(0, items - 1);
        let mut rng = rng();
        let draws = 500_000;
        let mut counts = std::collections::HashMap::<u64, u64>::new();
        for _ in 0..draws {
            let v = z.next(&mut rng);
            assert!(v < items);
            *counts.entry(v).or_default() += 1;
        }
        // Still skewed: the hottest key takes several percent of all draws…
        let mut by_count: Vec<(u64, u64)> = counts.iter().map(|(k, c)| (*c, *k)).collect();
        by_count.sort_unstable_by(|a, b| b.cmp(a));
        assert!(by_count[0].0 as f64 / draws as f64 > 0.02);
        // …but the 100 hottest keys are not clustered: they fall into most of the ten
        // deciles of the key space, and not at its start as the plain zipfian's would.
        let mut deciles = [0u32; 10];
        for (_, key) in by_count.iter().take(100) {
            deciles[(key * 10 / items) as usize] += 1;
        }
        assert!(deciles.iter().all(|d| *d > 0), "deciles {deciles:?}");
        assert!(deciles.iter().all(|d| *d < 30), "deciles {deciles:?}");
    }

    #[test]
    fn latest_follows_inserts() {
        let counter = AcknowledgedCounter::new(1000);
        assert_eq!(counter.last_value(), 999);
        let mut latest = SkewedLatest::new(counter.last_value());
        let mut rng = rng();
        let mean_distance = |latest: &mut SkewedLatest, rng: &mut StdRng, last: u64| {
            let mut sum = 0u64;
            let mut newest = 0u64;
            for _ in 0..100_000 {
                let v = latest.next(rng, last);
                assert!(v >= 1 && v <= last, "{v} outside 1..={last}");
                sum += last - v;
                newest += u64::from(v == last);
            }
            (sum as f64 / 100_000.0, newest)
        };
        let (before, newest_before) = mean_distance(&mut latest, &mut rng, counter.last_value());
        // The newest record is the most popular one (P ≈ 1/ζ(1000) ≈ 13%).
        assert!(newest_before > 10_000, "{newest_before}");
        // Insert 5000 more, acknowledged out of order: the hot spot moves with them.
        let numbers: Vec<u64> = (0..5000).map(|_| counter.next()).collect();
        for n in numbers.iter().rev() {
            counter.acknowledge(*n);
        }
        assert_eq!(counter.last_value(), 5999);
        let (after, _) = mean_distance(&mut latest, &mut rng, counter.last_value());
        let mut hits_new = 0;
        for _ in 0..10_000 {
            hits_new += u32::from(latest.next(&mut rng, counter.last_value()) >= 1000);
        }
        assert!(
            hits_new > 9_000,
            "{hits_new} of 10000 draws among the new inserts"
        );
        // Distances stay short relative to the key space as it grows.
        assert!(before < 200.0 && after < 1200.0, "{before} {after}");
    }

    #[test]
    fn acknowledged_counter_waits_for_gaps() {
        let counter = AcknowledgedCounter::new(10);
        let (a, b, c) = (counter.next(), counter.next(), counter.next());
        assert_eq!((a, b, c), (10, 11, 12));
        counter.acknowledge(c);
        counter.acknowledge(b);
        assert_eq!(counter.last_value(), 9);
        counter.acknowledge(a);
        assert_eq!(counter.last_value(), 12);
    }

    #[test]
    fn hotspot_sends_the_hot_fraction_to_the_hot_set() {
        let h = Hotspot::new(0, 9999, 0.2, 0.8);
        let mut rng = rng();
        let hot = (0..100_000).filter(|_| h.next(&mut rng) < 2000).count();
        assert!((hot as f64 / 100_000.0 - 0.8).abs() < 0.01, "{hot}");
    }

    #[test]
    fn discrete_honors_weights() {
        let d = Discrete::new([(0.5, 'r'), (0.3, 'u'), (0.0, 'x'), (0.2, 'i')]);
        let mut rng = rng();
        let mut counts = std::collections::HashMap::<char, u32>::new();
        for _ in 0..100_000 {
            *counts.entry(d.next(&mut rng)).or_default() += 1;
        }
        assert_eq!(counts.get(&'x'), None);
        for (c, w) in [('r', 0.5), ('u', 0.3), ('i', 0.2)] {
            let p = f64::from(counts[&c]) / 100_000.0;
            assert!((p - w).abs() < 0.01, "{c}: {p}");
        }
    }
}
