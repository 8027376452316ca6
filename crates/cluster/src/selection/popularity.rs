//! Hector's popularity-aware replica selection, and its oracle of key popularity.
//!
//! A read of a popular key goes to its replicas in turn (round-robin): each of them
//! caches it anyway, so they share its load. A read of any other key always goes to the
//! key's primary: a cold key then sits in one replica's cache instead of evicting others
//! from all of them. A key is popular when its share of recent reads exceeds `threshold`.
//!
//! The oracle ([`KeyPopularity`]) is a count-min sketch (`depth` rows of `width`
//! counters, conservative update) over `(table, key)` hashes, so its memory is fixed
//! whatever the number of keys; every `width × 10` reads all counters and the total are
//! halved, so popularity follows the workload as it changes (the prototype's counters grew
//! forever, and its default threshold marked every key popular).

use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;
use serde::{Deserialize, Serialize};

use super::simple::RoundRobin;
use super::{ReadInfo, ReplicaSelector};
use crate::message::{TableKey, Tag};
use crate::Endpoint;

/// Rows of the sketch.
const DEPTH: usize = 4;
/// Reads between two halvings, per counter of a row.
const READS_PER_COUNTER: u64 = 10;

/// `[scheduling.popularity-aware]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PopularityParams {
    /// The share of recent reads above which a key is popular (Hector's `10⁻⁵` marked
    /// 0.1% of a million Zipf(1.5) keys popular).
    pub threshold: f64,
    /// Counters per row of the sketch (its memory: 4 rows × 4 bytes each); larger
    /// counts rarer keys more exactly.
    pub sketch_width: usize,
    /// Where popular keys go: `round-robin` over their replicas (Hector's), or `local`:
    /// the coordinator's own copy when it holds one (every replica caches a popular key
    /// anyway, and clients that spread their requests over the replicas already spread
    /// the load), round-robin otherwise.
    pub popular: PopularRouting,
}

/// `[scheduling.popularity-aware] popular`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PopularRouting {
    /// Each read one replica further along the ring order.
    #[default]
    RoundRobin,
    /// The coordinator's own copy first.
    Local,
}

impl Default for PopularityParams {
    fn default() -> Self {
        PopularityParams {
            threshold: 1e-4,
            sketch_width: 1 << 16,
            popular: PopularRouting::default(),
        }
    }
}

impl PopularityParams {
    /// Checks the parameters, saying which one is wrong.
    pub fn validate(&self) -> Result<(), String> {
        if !(self.threshold > 0.0 && self.threshold < 1.0) {
            return Err(format!(
                "[scheduling.popularity-aware] threshold must be a share of reads in (0, 1), \
                 not {}",
                self.threshold
            ));
        }
        if !(64..=1 << 24).contains(&self.sketch_width) {
            return Err(format!(
                "[scheduling.popularity-aware] sketch_width must be within 64..=16777216, \
                 not {}",
                self.sketch_width
            ));
        }
        Ok(())
    }
}

struct Sketch {
    width: usize,
    counters: Vec<u32>,
    total: u64,
    since_halving: u64,
}

/// Recent reads per key, approximately (see the module doc).
pub struct KeyPopularity {
    sketch: Mutex<Sketch>,
}

impl KeyPopularity {
    /// An empty sketch of `width` counters per row.
    pub fn new(width: usize) -> KeyPopularity {
        let width = width.max(1);
        KeyPopularity {
            sketch: Mutex::new(Sketch {
                width,
                counters: vec![0; width * DEPTH],
                total: 0,
                since_halving: 0,
            }),
        }
    }

    /// Counts a read of `key` of `table` and returns the key's share of recent reads.
    pub fn record(&self, table: TableKey, key: &[u8]) -> f64 {
        let (h1, h2) = hashes(table, key);
        let mut s = self.sketch.lock();
        let width = s.width;
        let cells: [usize; DEPTH] = std::array::from_fn(|row| {
            let h = h1.wrapping_add((row as u64).wrapping_mul(h2));
            row * width + (h % width as u64) as usize
        });
        // Conservative update: only the counters at the minimum grow.
        let min = cells
            .iter()
            .map(|c| s.counters.get(*c).copied().unwrap_or(0))
            .min()
            .unwrap_or(0);
        for c in cells {
            if let Some(v) = s.counters.get_mut(c) {
                if *v == min {
                    *v = v.saturating_add(1);
                }
            }
        }
        s.total += 1;
        s.since_halving += 1;
        let estimate = u64::from(min) + 1;
        let share = estimate as f64 / s.total as f64;
        if s.since_halving >= width as u64 * READS_PER_COUNTER {
            s.counters.iter_mut().for_each(|v| *v /= 2);
            s.total /= 2;
            s.since_halving = 0;
        }
        share
    }
}

/// Two independent hashes of `(table, key)` (rows combine them: Kirsch–Mitzenmacher).
fn hashes(table: TableKey, key: &[u8]) -> (u64, u64) {
    let mut h = xxhash_rust::xxh3::Xxh3::new();
    h.update(&table.0);
    h.update(key);
    let h = h.digest128();
    (h as u64, ((h >> 64) as u64) | 1)
}

/// Hector's popularity-aware policy (see the module doc).
pub struct PopularityAware {
    params: PopularityParams,
    oracle: KeyPopularity,
    turns: RoundRobin,
    popular: AtomicU64,
    unpopular: AtomicU64,
}

impl PopularityAware {
    /// The policy with `params`.
    pub fn new(params: PopularityParams) -> PopularityAware {
        PopularityAware {
            oracle: KeyPopularity::new(params.sketch_width),
            params,
            turns: RoundRobin::default(),
            popular: AtomicU64::new(0),
            unpopular: AtomicU64::new(0),
        }
    }
}

impl ReplicaSelector for PopularityAware {
    fn name(&self) -> &'static str {
        "popularity-aware"
    }

    fn order(&self, replicas: &mut [Endpoint], me: Endpoint, read: &ReadInfo<'_>) -> Vec<Tag> {
        if self.oracle.record(read.table, read.key) > self.params.threshold {
            self.popular.fetch_add(1, Ordering::Relaxed);
            let local = (self.params.popular == PopularRouting::Local)
                .then(|| replicas.iter().position(|r| *r == me))
                .flatten();
            match local {
                Some(i) => replicas[..=i].rotate_right(1),
                None => self.turns.rotate(replicas),
            }
        } else {
            // The primary (ring order) for a cold key.
            self.unpopular.fetch_add(1, Ordering::Relaxed);
        }
        Vec::new()
    }

    fn observe(&self, _node: Endpoint, _micros: u64, _now_micros: u64) {}

    fn decisions(&self) -> Vec<(&'static str, u64)> {
        vec![
            ("popular", self.popular.load(Ordering::Relaxed)),
            ("unpopular", self.unpopular.load(Ordering::Relaxed)),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{ep, read};
    use super::*;

    /// A Zipf-like key of rank `r` (key `r` read about `1/r^s` as often as key 1).
    fn zipf_keys(n: u64, s: f64, reads: usize, seed: u64) -> Vec<u64> {
        let weights: Vec<f64> = (1..=n).map(|r| 1.0 / (r as f64).powf(s)).collect();
        let total: f64 = weights.iter().sum();
        let mut cdf = Vec::with_capacity(weights.len());
        let mut acc = 0.0;
        for w in weights {
            acc += w / total;
            cdf.push(acc);
        }
        let mut x = seed;
        (0..reads)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let u = (x >> 11) as f64 / (1u64 << 53) as f64;
                cdf.partition_point(|c| *c < u) as u64 + 1
            })
            .collect()
    }

    #[test]
    fn popular_keys_rotate_or_stay_local_and_the_rest_go_to_the_primary() {
        for popular in [PopularRouting::RoundRobin, PopularRouting::Local] {
            let s = PopularityAware::new(PopularityParams {
                threshold: 0.01,
                sketch_width: 4096,
                popular,
            });
            let mut firsts_hot = [0usize; 3];
            let mut firsts_cold = [0usize; 3];
            for (i, key) in zipf_keys(10_000, 1.2, 60_000, 11).into_iter().enumerate() {
                let mut r = [ep(1), ep(2), ep(3)];
                // The coordinator, ep(2), holds a replica.
                s.order(&mut r, ep(2), &read(&key.to_be_bytes(), i as u64));
                let mut sorted = r;
                sorted.sort();
                assert_eq!(sorted, [ep(1), ep(2), ep(3)]);
                if i < 20_000 {
                    continue; // learning
                }
                let first = match r[0].ip() {
                    std::net::IpAddr::V4(ip) => usize::from(ip.octets()[3] - 1),
                    std::net::IpAddr::V6(_) => unreachable!(),
                };
                if key <= 3 {
                    firsts_hot[first] += 1;
                } else if key > 1000 {
                    firsts_cold[first] += 1;
                }
            }
            let hot: usize = firsts_hot.iter().sum();
            match popular {
                // The hottest keys (well above 1% of reads) are spread over all three.
                PopularRouting::RoundRobin => {
                    assert!(firsts_hot.iter().all(|c| *c > hot / 5), "{firsts_hot:?}")
                }
                // …or read where the coordinator holds them.
                PopularRouting::Local => assert_eq!(firsts_hot, [0, hot, 0]),
            }
            // Rare keys always go to the primary.
            assert!(
                firsts_cold[0] > 0 && firsts_cold[1] == 0 && firsts_cold[2] == 0,
                "{popular:?}: {firsts_cold:?}"
            );
            let d = s.decisions();
            assert!(d[0].1 > 0 && d[1].1 > 0, "{d:?}");
        }
    }

    #[test]
    fn the_sketch_estimates_shares_and_forgets_old_reads() {
        let oracle = KeyPopularity::new(1024);
        let t = TableKey::default();
        // Key "a" is half of the reads, 2000 other keys share the rest.
        let mut share_a = 0.0;
        for i in 0..8000u32 {
            if i % 2 == 0 {
                share_a = oracle.record(t, b"a");
            } else {
                oracle.record(t, &(i % 2000).to_be_bytes());
            }
        }
        assert!((0.45..=0.6).contains(&share_a), "{share_a}");
        // A rare key's estimate stays near its share (one read in 8000), far below 1%.
        let rare = oracle.record(t, b"never-read-before");
        assert!(rare < 0.005, "{rare}");
        // The workload moves on: after enough reads of other keys (each 10 × 1024 halve
        // every count), "a" is forgotten.
        for i in 0..80_000u32 {
            oracle.record(t, &(10_000 + i % 500).to_be_bytes());
        }
        let after = oracle.record(t, b"a");
        assert!(after < 0.005, "{after}");
    }
}
