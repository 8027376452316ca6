//! Local scheduling (Hector's second step): the order in which a replica's read stage
//! serves the reads waiting for one of its `read_concurrency` workers.
//!
//! A read waits in a [`LocalQueue`] chosen by `[scheduling] local_queue` ([`QueuePolicy`]):
//!
//! - `fcfs`: first come, first served (Cassandra's read stage; one lock-free queue);
//! - `random-multi-level` ([`RandomMultiLevel`], Hector's RML): `levels` lock-free
//!   sub-queues; a read enters the sub-queue of its priority, and each dequeue draws a
//!   non-empty sub-queue q (1-based) with probability proportional to α^(levels − q + 1),
//!   so the first sub-queue is served most often and none starves;
//! - `priority`: strictly by priority (0 first), first come first served within one;
//! - `size-aware`: the read expecting the smallest answer first (shortest job first).
//!
//! `priority` and `size-aware` bound starvation: a read that has waited `max_wait_ms` is
//! served before any other. `random-multi-level` and `priority` can also hand out only a
//! first-priority read ([`LocalQueue::pop_first_priority`]), for the slots the read stage
//! reserves to them (`[scheduling] reserved_slots`). A read's priority and expected size
//! come from its tags ([`ReadClass::from_tags`]), which the coordinator sets from an
//! item-size oracle
//! (`crate::selection::oracle`); a read without them (repair's, an untagged peer's) is
//! priority 0 with an unknown size, served as a small one.
//!
//! The queues are pure: time is passed in, so policies are tested without threads. The
//! server's read stage runs them.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use crossbeam_queue::SegQueue;
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};

use crate::message::Tag;

/// The tag carrying a read's priority (one byte: 0 is served first).
pub const PRIORITY_TAG: &str = "priority";
/// The tag carrying a read's expected answer size in bytes (8 bytes, little-endian).
pub const SIZE_TAG: &str = "size";

/// `[scheduling] local_queue`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum QueuePolicy {
    /// First come, first served.
    #[default]
    Fcfs,
    /// Hector's random multi-level queue.
    RandomMultiLevel,
    /// Strict priority with a starvation bound.
    Priority,
    /// Smallest expected answer first, with a starvation bound.
    SizeAware,
}

impl fmt::Display for QueuePolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            QueuePolicy::Fcfs => "fcfs",
            QueuePolicy::RandomMultiLevel => "random-multi-level",
            QueuePolicy::Priority => "priority",
            QueuePolicy::SizeAware => "size-aware",
        })
    }
}

/// What a queue knows of a read.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReadClass {
    /// Its priority (0 first).
    pub priority: u8,
    /// Its expected answer size in bytes, when an oracle knew it.
    pub size: Option<u64>,
}

impl ReadClass {
    /// The class `tags` describe (malformed tags are ignored: a newer peer may encode more).
    pub fn from_tags(tags: &[Tag]) -> ReadClass {
        let mut class = ReadClass::default();
        for t in tags {
            match t.name.as_str() {
                PRIORITY_TAG => {
                    if let [p] = t.value.as_slice() {
                        class.priority = *p;
                    }
                }
                SIZE_TAG => {
                    if let Ok(b) = <[u8; 8]>::try_from(t.value.as_slice()) {
                        class.size = Some(u64::from_le_bytes(b));
                    }
                }
                _ => {}
            }
        }
        class
    }

    /// The tags describing this class.
    pub fn tags(&self) -> Vec<Tag> {
        let mut tags = vec![Tag {
            name: PRIORITY_TAG.into(),
            value: vec![self.priority],
        }];
        if let Some(size) = self.size {
            tags.push(Tag {
                name: SIZE_TAG.into(),
                value: size.to_le_bytes().to_vec(),
            });
        }
        tags
    }
}

/// `[scheduling.random-multi-level]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RmlParams {
    /// Sub-queues (a read of priority p enters sub-queue min(p, levels − 1), 0-based).
    pub levels: usize,
    /// The weight base α: sub-queue q (1-based) has weight α^(levels − q + 1).
    pub alpha: f64,
}

impl Default for RmlParams {
    fn default() -> Self {
        // Hector's experiment: small items in the first queue, large ones in the second.
        RmlParams {
            levels: 2,
            alpha: 10.0,
        }
    }
}

/// `[scheduling.priority]` and `[scheduling.size-aware]`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct StarvationBound {
    /// A read waiting this long is served before any other (0: never promoted).
    pub max_wait_ms: u64,
}

impl Default for StarvationBound {
    fn default() -> Self {
        StarvationBound { max_wait_ms: 500 }
    }
}

/// The read stage's configuration (part of `[scheduling]`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct QueueConfig {
    /// The policy.
    pub policy: QueuePolicy,
    /// `random-multi-level`'s parameters.
    pub rml: RmlParams,
    /// `priority`'s bound.
    pub priority: StarvationBound,
    /// `size-aware`'s bound.
    pub size_aware: StarvationBound,
    /// Seed of `random-multi-level`'s draws.
    pub seed: u64,
    /// Slots only priority-0 reads may take (`[scheduling] reserved_slots`).
    pub reserved_slots: usize,
}

impl RmlParams {
    /// Checks the parameters, saying which one is wrong.
    pub fn validate(&self) -> Result<(), String> {
        if !(1..=16).contains(&self.levels) {
            return Err(format!(
                "[scheduling.random-multi-level] levels must be between 1 and 16, not {}",
                self.levels
            ));
        }
        if !(self.alpha.is_finite() && self.alpha >= 1.0 && self.alpha <= 1000.0) {
            return Err(format!(
                "[scheduling.random-multi-level] alpha must be between 1 and 1000, not {}",
                self.alpha
            ));
        }
        Ok(())
    }
}

/// A queue of waiting reads; `now_micros` is the stage's clock.
pub trait LocalQueue<T>: Send + Sync {
    /// A read arrives.
    fn push(&self, item: T, class: ReadClass, now_micros: u64);
    /// The read to serve next, if any.
    fn pop(&self, now_micros: u64) -> Option<T>;
    /// The priority-0 read to serve next, if any waits (for a slot reserved to them,
    /// `[scheduling] reserved_slots`); a queue that keeps no priorities apart has none.
    fn pop_first_priority(&self, now_micros: u64) -> Option<T> {
        let _ = now_micros;
        None
    }
    /// Reads waiting.
    fn len(&self) -> usize;
    /// Whether none waits.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The queue `config` chooses.
pub fn queue<T: Send + 'static>(config: &QueueConfig) -> Box<dyn LocalQueue<T>> {
    match config.policy {
        QueuePolicy::Fcfs => Box::new(Fcfs::default()),
        QueuePolicy::RandomMultiLevel => Box::new(RandomMultiLevel::new(&config.rml, config.seed)),
        QueuePolicy::Priority => Box::new(Ordered::new(Order::Priority, &config.priority)),
        QueuePolicy::SizeAware => Box::new(Ordered::new(Order::Size, &config.size_aware)),
    }
}

/// First come, first served: one lock-free queue.
pub struct Fcfs<T> {
    queue: SegQueue<T>,
}

impl<T> Default for Fcfs<T> {
    fn default() -> Self {
        Fcfs {
            queue: SegQueue::new(),
        }
    }
}

impl<T: Send> LocalQueue<T> for Fcfs<T> {
    fn push(&self, item: T, _class: ReadClass, _now_micros: u64) {
        self.queue.push(item);
    }

    fn pop(&self, _now_micros: u64) -> Option<T> {
        self.queue.pop()
    }

    fn len(&self) -> usize {
        self.queue.len()
    }
}

/// Hector's random multi-level queue (see the module doc): no lock anywhere.
pub struct RandomMultiLevel<T> {
    levels: Vec<SegQueue<T>>,
    /// Each sub-queue's weight α^(levels − q + 1), q 1-based.
    weights: Vec<f64>,
    /// A splitmix64 state.
    state: AtomicU64,
    /// Dequeues by sub-queue (for the stage's metrics and the tests).
    served: Vec<AtomicU64>,
}

impl<T> RandomMultiLevel<T> {
    /// A queue with `params`, drawing from `seed`.
    pub fn new(params: &RmlParams, seed: u64) -> RandomMultiLevel<T> {
        let n = params.levels.max(1);
        RandomMultiLevel {
            levels: (0..n).map(|_| SegQueue::new()).collect(),
            weights: (0..n).map(|q| params.alpha.powi((n - q) as i32)).collect(),
            state: AtomicU64::new(seed ^ 0x2545_f491_4f6c_dd1d),
            served: (0..n).map(|_| AtomicU64::new(0)).collect(),
        }
    }

    /// Dequeues so far, by sub-queue.
    pub fn served(&self) -> Vec<u64> {
        self.served
            .iter()
            .map(|s| s.load(Ordering::Relaxed))
            .collect()
    }

    /// A uniform draw in [0, 1).
    fn draw(&self) -> f64 {
        let z = crate::selection::simple::splitmix64(&self.state);
        (z >> 11) as f64 / (1u64 << 53) as f64
    }
}

impl<T: Send> LocalQueue<T> for RandomMultiLevel<T> {
    fn push(&self, item: T, class: ReadClass, _now_micros: u64) {
        let q = (class.priority as usize).min(self.levels.len() - 1);
        self.levels[q].push(item);
    }

    fn pop(&self, _now_micros: u64) -> Option<T> {
        // The paper draws over all sub-queues and draws again on an empty one; drawing
        // over the non-empty ones only is the same distribution without the retries.
        // Another worker may empty the drawn sub-queue meanwhile: then draw again, and
        // after a few misses take the first non-empty one in priority order.
        for _ in 0..4 {
            let total: f64 = self
                .levels
                .iter()
                .zip(&self.weights)
                .filter(|(q, _)| !q.is_empty())
                .map(|(_, w)| w)
                .sum();
            if total == 0.0 {
                return None;
            }
            let mut x = self.draw() * total;
            for (i, (q, w)) in self.levels.iter().zip(&self.weights).enumerate() {
                if q.is_empty() {
                    continue;
                }
                if x < *w {
                    if let Some(item) = q.pop() {
                        self.served[i].fetch_add(1, Ordering::Relaxed);
                        return Some(item);
                    }
                    break;
                }
                x -= w;
            }
        }
        self.levels.iter().enumerate().find_map(|(i, q)| {
            let item = q.pop()?;
            self.served[i].fetch_add(1, Ordering::Relaxed);
            Some(item)
        })
    }

    fn pop_first_priority(&self, _now_micros: u64) -> Option<T> {
        let item = self.levels[0].pop()?;
        self.served[0].fetch_add(1, Ordering::Relaxed);
        Some(item)
    }

    fn len(&self) -> usize {
        self.levels.iter().map(|q| q.len()).sum()
    }
}

/// What an [`Ordered`] queue serves first.
#[derive(Clone, Copy, Debug)]
enum Order {
    /// The lowest priority value.
    Priority,
    /// The smallest expected size (unknown counts as 0).
    Size,
}

/// A queue ordered by a key (priority or expected size), first come first served among
/// equal keys, with a starvation bound. Behind one lock: the price of an exact order,
/// which is what `random-multi-level` avoids.
pub struct Ordered<T> {
    order: Order,
    max_wait_micros: u64,
    inner: Mutex<OrderedInner<T>>,
    len: AtomicUsize,
}

struct OrderedInner<T> {
    next_seq: u64,
    /// `(key, seq)` → the read.
    by_key: BTreeMap<(u64, u64), T>,
    /// `seq` → `(key, arrival)`: the oldest read first.
    by_age: BTreeMap<u64, (u64, u64)>,
}

impl<T> Ordered<T> {
    fn new(order: Order, bound: &StarvationBound) -> Ordered<T> {
        Ordered {
            order,
            max_wait_micros: bound.max_wait_ms.saturating_mul(1000),
            inner: Mutex::new(OrderedInner {
                next_seq: 0,
                by_key: BTreeMap::new(),
                by_age: BTreeMap::new(),
            }),
            len: AtomicUsize::new(0),
        }
    }

    /// Strict priority (0 first), promoted after `bound`.
    pub fn priority(bound: &StarvationBound) -> Ordered<T> {
        Ordered::new(Order::Priority, bound)
    }

    /// Smallest expected answer first, promoted after `bound`.
    pub fn size_aware(bound: &StarvationBound) -> Ordered<T> {
        Ordered::new(Order::Size, bound)
    }
}

impl<T: Send> LocalQueue<T> for Ordered<T> {
    fn push(&self, item: T, class: ReadClass, now_micros: u64) {
        let key = match self.order {
            Order::Priority => u64::from(class.priority),
            Order::Size => class.size.unwrap_or(0),
        };
        let mut inner = self.inner.lock();
        let seq = inner.next_seq;
        inner.next_seq += 1;
        inner.by_key.insert((key, seq), item);
        inner.by_age.insert(seq, (key, now_micros));
        self.len.fetch_add(1, Ordering::Relaxed);
    }

    fn pop(&self, now_micros: u64) -> Option<T> {
        let mut inner = self.inner.lock();
        let (&oldest, &(key, arrived)) = inner.by_age.first_key_value()?;
        let starving =
            self.max_wait_micros > 0 && now_micros.saturating_sub(arrived) >= self.max_wait_micros;
        let (key, seq) = if starving {
            (key, oldest)
        } else {
            *inner.by_key.first_key_value()?.0
        };
        inner.by_age.remove(&seq);
        let item = inner.by_key.remove(&(key, seq));
        if item.is_some() {
            self.len.fetch_sub(1, Ordering::Relaxed);
        }
        item
    }

    fn pop_first_priority(&self, _now_micros: u64) -> Option<T> {
        if !matches!(self.order, Order::Priority) {
            return None;
        }
        let mut inner = self.inner.lock();
        let (&(key, seq), _) = inner.by_key.first_key_value()?;
        if key != 0 {
            return None;
        }
        inner.by_age.remove(&seq);
        let item = inner.by_key.remove(&(key, seq));
        if item.is_some() {
            self.len.fetch_sub(1, Ordering::Relaxed);
        }
        item
    }

    fn len(&self) -> usize {
        self.len.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn class(priority: u8, size: Option<u64>) -> ReadClass {
        ReadClass { priority, size }
    }

    fn drain<T>(q: &dyn LocalQueue<T>, now: u64) -> Vec<T> {
        std::iter::from_fn(|| q.pop(now)).collect()
    }

    #[test]
    fn tags_carry_the_class_and_bad_tags_are_ignored() {
        let c = class(3, Some(1 << 20));
        assert_eq!(ReadClass::from_tags(&c.tags()), c);
        assert_eq!(ReadClass::from_tags(&class(1, None).tags()), class(1, None));
        let bad = [
            Tag {
                name: PRIORITY_TAG.into(),
                value: vec![1, 2],
            },
            Tag {
                name: SIZE_TAG.into(),
                value: vec![7],
            },
        ];
        assert_eq!(ReadClass::from_tags(&bad), ReadClass::default());
        assert_eq!(ReadClass::from_tags(&[]), ReadClass::default());
    }

    #[test]
    fn each_policy_serves_in_its_order() {
        // (policy, arrivals as (id, priority, size), expected service order)
        let arrivals = [
            (1, 1, Some(1_000_000)),
            (2, 0, Some(1_000)),
            (3, 2, Some(10)),
            (4, 0, None),
            (5, 1, Some(500)),
        ];
        let cases: [(QueuePolicy, [u32; 5]); 3] = [
            (QueuePolicy::Fcfs, [1, 2, 3, 4, 5]),
            (QueuePolicy::Priority, [2, 4, 1, 5, 3]),
            // An unknown size is served as a small one.
            (QueuePolicy::SizeAware, [4, 3, 5, 2, 1]),
        ];
        for (policy, want) in cases {
            let q = queue::<u32>(&QueueConfig {
                policy,
                ..QueueConfig::default()
            });
            for (id, p, size) in arrivals {
                q.push(id, class(p, size), 0);
            }
            assert_eq!(q.len(), 5, "{policy}");
            assert_eq!(drain(&*q, 1), want, "{policy}");
            assert!(q.is_empty(), "{policy}");
        }
    }

    #[test]
    fn a_read_waiting_past_the_bound_overtakes_the_order() {
        let bound = StarvationBound { max_wait_ms: 10 };
        for q in [Ordered::priority(&bound), Ordered::size_aware(&bound)] {
            q.push("old and low", class(9, Some(1 << 30)), 0);
            for i in 0..3 {
                q.push("new and high", class(0, Some(1)), 1_000 + i);
            }
            // Before the bound the order holds…
            assert_eq!(q.pop(9_999), Some("new and high"));
            // …at it, the oldest read goes first, then the order resumes.
            assert_eq!(q.pop(10_000), Some("old and low"));
            assert_eq!(drain(&q, 10_001), ["new and high", "new and high"]);
        }
        // 0: never promoted.
        let q = Ordered::priority(&StarvationBound { max_wait_ms: 0 });
        q.push("low", class(1, None), 0);
        q.push("high", class(0, None), 5);
        assert_eq!(q.pop(u64::MAX), Some("high"));
    }

    #[test]
    fn rml_priorities_map_to_sub_queues_and_past_the_last_to_the_last() {
        let q = RandomMultiLevel::new(
            &RmlParams {
                levels: 3,
                alpha: 2.0,
            },
            1,
        );
        q.push(0, class(0, None), 0);
        q.push(1, class(1, None), 0);
        q.push(2, class(2, None), 0);
        q.push(9, class(200, None), 0);
        let mut all = drain(&q, 0);
        all.sort();
        assert_eq!(all, [0, 1, 2, 9]);
        assert_eq!(q.served(), [1, 1, 2]);
        assert_eq!(q.pop(0), None);
    }

    #[test]
    fn only_queues_keeping_priorities_apart_hand_out_first_priority_reads() {
        for policy in [QueuePolicy::RandomMultiLevel, QueuePolicy::Priority] {
            let q = queue::<u32>(&QueueConfig {
                policy,
                ..QueueConfig::default()
            });
            q.push(1, class(1, None), 0);
            assert_eq!(q.pop_first_priority(1), None, "{policy}");
            q.push(0, class(0, None), 2);
            q.push(2, class(1, None), 3);
            assert_eq!(q.pop_first_priority(4), Some(0), "{policy}");
            assert_eq!(q.pop_first_priority(5), None, "{policy}");
            assert_eq!(q.len(), 2, "{policy}");
        }
        for policy in [QueuePolicy::Fcfs, QueuePolicy::SizeAware] {
            let q = queue::<u32>(&QueueConfig {
                policy,
                ..QueueConfig::default()
            });
            q.push(0, class(0, None), 0);
            assert_eq!(q.pop_first_priority(1), None, "{policy}");
            assert_eq!(q.len(), 1);
        }
    }

    #[test]
    fn rml_dequeue_frequencies_match_its_weights() {
        // Every sub-queue kept non-empty: each dequeue draws sub-queue q with probability
        // α^(n−q+1) / Σ. With n = 3, α = 2: 4/7, 2/7, 1/7.
        let params = RmlParams {
            levels: 3,
            alpha: 2.0,
        };
        let q = RandomMultiLevel::new(&params, 42);
        let draws = 70_000u32;
        for _ in 0..draws {
            for p in 0..3u8 {
                q.push(p, class(p, None), 0);
            }
        }
        for _ in 0..draws {
            q.pop(0);
        }
        let served = q.served();
        let n = f64::from(draws);
        for (i, want) in [4.0 / 7.0, 2.0 / 7.0, 1.0 / 7.0].iter().enumerate() {
            let share = served[i] as f64 / n;
            // 5 standard deviations of a binomial share.
            let sd = (want * (1.0 - want) / n).sqrt();
            assert!(
                (share - want).abs() < 5.0 * sd,
                "sub-queue {i}: {share} vs {want} (served {served:?})"
            );
        }
    }

    #[test]
    fn rml_never_starves_the_last_sub_queue() {
        // Hector's setting (2 sub-queues, α = 10): a low-priority read among a steady
        // stream of high-priority ones is served within a bounded number of dequeues
        // (each dequeue takes it with probability 10/110: 1e-6 odds to wait past 150).
        let q = RandomMultiLevel::new(&RmlParams::default(), 7);
        for trial in 0..200 {
            q.push(u32::MAX, class(1, None), 0);
            let mut waited = 0;
            loop {
                q.push(trial, class(0, None), 0);
                if q.pop(0) == Some(u32::MAX) {
                    break;
                }
                waited += 1;
                assert!(waited < 150, "trial {trial}: starved");
            }
            drain(&q, 0);
        }
    }

    #[test]
    fn rml_is_safe_under_concurrent_workers() {
        let q = RandomMultiLevel::new(&RmlParams::default(), 3);
        let per = 5_000u32;
        let mut all: Vec<u32> = std::thread::scope(|s| {
            for t in 0..2u32 {
                let q = &q;
                s.spawn(move || {
                    for i in 0..per {
                        q.push(t * per + i, class((i % 2) as u8, None), 0);
                    }
                });
            }
            let consumers: Vec<_> = (0..2)
                .map(|_| {
                    s.spawn(|| {
                        let mut got = Vec::new();
                        let mut idle = 0;
                        while idle < 1_000_000 && got.len() < 2 * per as usize {
                            match q.pop(0) {
                                Some(x) => got.push(x),
                                None => idle += 1,
                            }
                        }
                        got
                    })
                })
                .collect();
            consumers
                .into_iter()
                .flat_map(|c| c.join().unwrap())
                .collect()
        });
        all.extend(drain(&q, 0));
        all.sort();
        assert_eq!(all, (0..2 * per).collect::<Vec<_>>());
    }
}
