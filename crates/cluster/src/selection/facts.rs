//! Facts (Hector's state propagation): measurements a replica attaches to its answers so
//! coordinators' policies see its state.
//!
//! A policy declares the facts it needs ([`super::ReplicaSelector::facts_wanted`]); the
//! coordinator names them in a tag of each read ([`FACTS_TAG`]), and the replica answers
//! with exactly those, measured when it answers and stamped with its clock
//! ([`Facts`]). The coordinator hands them to its policy, which aggregates them (moving
//! averages, rates) and discards any older than the last it took from that replica
//! ([`Freshness`]): answers overtake each other. The same facts also ride on every gossip
//! round's messages (the node's own policy's facts: all nodes run one policy), so a
//! coordinator keeps hearing from a replica it has stopped sending reads to.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;
use serde::{Deserialize, Serialize};

use crate::message::Tag;
use crate::Endpoint;

/// The tag naming the facts a read's answer should carry (one byte per [`FactKind`]).
pub const FACTS_TAG: &str = "facts";

/// Weight of a new service time in the replica's moving average.
const SERVICE_ALPHA: f64 = 0.1;

/// A measurement a replica can report.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[repr(u8)]
pub enum FactKind {
    /// Reads the replica is serving now.
    PendingReads = 0,
    /// Reads the replica has completed since it started.
    CompletedReads = 1,
    /// The replica's moving average of a read's service time, in microseconds.
    ServiceTimeMicros = 2,
    /// Requests from peers waiting or running on the replica.
    QueueLength = 3,
}

impl FactKind {
    fn from_byte(b: u8) -> Option<FactKind> {
        Some(match b {
            0 => FactKind::PendingReads,
            1 => FactKind::CompletedReads,
            2 => FactKind::ServiceTimeMicros,
            3 => FactKind::QueueLength,
            _ => return None,
        })
    }
}

/// Facts a replica reported, stamped with its clock (microseconds).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Facts {
    /// When they were measured, on the replica's clock.
    pub at_micros: u64,
    /// The values.
    pub values: Vec<(FactKind, u64)>,
}

impl Facts {
    /// The value of `kind`, if reported.
    pub fn get(&self, kind: FactKind) -> Option<u64> {
        self.values
            .iter()
            .find(|(k, _)| *k == kind)
            .map(|(_, v)| *v)
    }
}

/// The tag asking for `kinds` (none when empty).
pub fn tag(kinds: &[FactKind]) -> Option<Tag> {
    (!kinds.is_empty()).then(|| Tag {
        name: FACTS_TAG.into(),
        value: kinds.iter().map(|k| *k as u8).collect(),
    })
}

/// The facts a read's tags ask for (unknown kinds are ignored: a newer peer may know more).
pub fn wanted(tags: &[Tag]) -> Vec<FactKind> {
    tags.iter()
        .filter(|t| t.name == FACTS_TAG)
        .flat_map(|t| t.value.iter().filter_map(|b| FactKind::from_byte(*b)))
        .collect()
}

/// What a replica measures of its reads.
#[derive(Debug)]
pub struct ReadLoad {
    pending: AtomicU64,
    completed: AtomicU64,
    /// The service-time average's `f64` bits; `u64::MAX` before the first read (every
    /// read updates it, so no lock).
    service_micros: AtomicU64,
}

impl Default for ReadLoad {
    fn default() -> Self {
        ReadLoad {
            pending: AtomicU64::new(0),
            completed: AtomicU64::new(0),
            service_micros: AtomicU64::new(u64::MAX),
        }
    }
}

impl ReadLoad {
    /// A read starts.
    pub fn started(&self) {
        self.pending.fetch_add(1, Ordering::Relaxed);
    }

    /// A read that started took `micros` to serve.
    pub fn finished(&self, micros: u64) {
        self.pending.fetch_sub(1, Ordering::Relaxed);
        self.completed.fetch_add(1, Ordering::Relaxed);
        let sample = micros as f64;
        let _ = self
            .service_micros
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |bits| {
                let avg = if bits == u64::MAX {
                    sample
                } else {
                    (1.0 - SERVICE_ALPHA) * f64::from_bits(bits) + SERVICE_ALPHA * sample
                };
                Some(avg.to_bits())
            });
    }

    /// `kinds` measured now (`queue`: the requests from peers in flight here).
    pub fn facts(&self, kinds: &[FactKind], queue: u64, now_micros: u64) -> Facts {
        let values = kinds
            .iter()
            .map(|k| {
                let v = match k {
                    FactKind::PendingReads => self.pending.load(Ordering::Relaxed),
                    FactKind::CompletedReads => self.completed.load(Ordering::Relaxed),
                    FactKind::ServiceTimeMicros => {
                        match self.service_micros.load(Ordering::Relaxed) {
                            u64::MAX => 0,
                            bits => f64::from_bits(bits).round() as u64,
                        }
                    }
                    FactKind::QueueLength => queue,
                };
                (*k, v)
            })
            .collect();
        Facts {
            at_micros: now_micros,
            values,
        }
    }
}

/// The newest facts time taken from each replica: facts older than that arrived late
/// (their answer was overtaken) and are discarded.
#[derive(Debug, Default)]
pub struct Freshness(Mutex<HashMap<Endpoint, u64>>);

impl Freshness {
    /// Whether facts of `node` stamped `at_micros` are newer than any taken before (and,
    /// if so, records them as the newest).
    pub fn take(&self, node: Endpoint, at_micros: u64) -> bool {
        let mut last = self.0.lock();
        match last.get(&node) {
            Some(seen) if *seen >= at_micros => false,
            _ => {
                last.insert(node, at_micros);
                true
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::ep;
    use super::*;

    #[test]
    fn a_read_asks_for_exactly_the_facts_its_policy_declared() {
        let kinds = [FactKind::QueueLength, FactKind::ServiceTimeMicros];
        let t = tag(&kinds).unwrap();
        let other = Tag {
            name: "priority".into(),
            value: vec![9],
        };
        assert_eq!(wanted(&[other.clone(), t]), kinds);
        assert!(wanted(&[other]).is_empty());
        assert!(tag(&[]).is_none());
        // A kind this node does not know (a newer peer's) is skipped, not an error.
        let newer = Tag {
            name: FACTS_TAG.into(),
            value: vec![3, 200],
        };
        assert_eq!(wanted(&[newer]), [FactKind::QueueLength]);
    }

    #[test]
    fn a_replica_reports_its_reads_in_microseconds() {
        let load = ReadLoad::default();
        load.started();
        load.started();
        load.finished(250);
        let f = load.facts(
            &[
                FactKind::PendingReads,
                FactKind::CompletedReads,
                FactKind::ServiceTimeMicros,
                FactKind::QueueLength,
            ],
            7,
            42,
        );
        assert_eq!(f.at_micros, 42);
        assert_eq!(f.get(FactKind::PendingReads), Some(1));
        assert_eq!(f.get(FactKind::CompletedReads), Some(1));
        // Sub-millisecond service times survive (the prototype truncated them to ms).
        assert_eq!(f.get(FactKind::ServiceTimeMicros), Some(250));
        assert_eq!(f.get(FactKind::QueueLength), Some(7));
        load.finished(1_250);
        let f = load.facts(&[FactKind::ServiceTimeMicros], 0, 43);
        assert_eq!(f.values, [(FactKind::ServiceTimeMicros, 350)]);
    }

    #[test]
    fn facts_overtaken_by_newer_ones_are_discarded() {
        let fresh = Freshness::default();
        assert!(fresh.take(ep(1), 100));
        assert!(fresh.take(ep(1), 200));
        assert!(!fresh.take(ep(1), 150), "older than the last taken");
        assert!(!fresh.take(ep(1), 200), "the same again");
        assert!(fresh.take(ep(2), 150), "per replica");
    }
}
