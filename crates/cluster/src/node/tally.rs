//! The node's counters (hinted handoff, repair, speculative reads, erasure coding), read
//! by the admin endpoint's `/metrics`.

use std::sync::atomic::{AtomicU64, Ordering};

/// The node's live counters.
#[derive(Default)]
pub(super) struct Counters {
    pub(super) hints_stored: AtomicU64,
    pub(super) hints_replayed: AtomicU64,
    pub(super) hints_failed: AtomicU64,
    pub(super) repair_ranges: AtomicU64,
    pub(super) repair_entries: AtomicU64,
    pub(super) speculative_reads: AtomicU64,
    pub(super) speculative_failovers: AtomicU64,
    pub(super) ec_rounds: AtomicU64,
    pub(super) ec_lists_restored: AtomicU64,
    pub(super) ec_lists_dissolved: AtomicU64,
    pub(super) ec_groups_released: AtomicU64,
    pub(super) ec_groups_dissolved: AtomicU64,
}

/// A copy of the node's counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CounterSnapshot {
    /// Hints stored for replicas that were down or did not answer.
    pub hints_stored: u64,
    /// Hints delivered to their replica.
    pub hints_replayed: u64,
    /// Hints that could not be stored.
    pub hints_failed: u64,
    /// Token ranges repaired (or attempted) by this node.
    pub repair_ranges: u64,
    /// Entries repair wrote to replicas that lacked them.
    pub repair_entries: u64,
    /// Reads that asked one replica more because the ones asked were slow
    /// (`speculative_retry`).
    pub speculative_reads: u64,
    /// Reads that asked another replica because one asked failed or its connection was
    /// lost.
    pub speculative_failovers: u64,
    /// Erasure-coding rounds completed (`erasure_coding_interval_ms`).
    pub ec_rounds: u64,
    /// Key lists of erasure-coding groups that lost a member (a node left the ring)
    /// whose rows this node holds in full again.
    pub ec_lists_restored: u64,
    /// Such key lists still held after the last coding round (restoring them failed).
    pub ec_lists_dissolved: u64,
    /// Coding groups that lost a member this node let go (forgot its tables in them,
    /// deleted its parity of them).
    pub ec_groups_released: u64,
    /// Such groups still held after the last coding round (a node may still read through
    /// them, or could not be asked).
    pub ec_groups_dissolved: u64,
}

impl Counters {
    /// A copy of every counter now.
    pub(super) fn snapshot(&self) -> CounterSnapshot {
        CounterSnapshot {
            hints_stored: self.hints_stored.load(Ordering::Relaxed),
            hints_replayed: self.hints_replayed.load(Ordering::Relaxed),
            hints_failed: self.hints_failed.load(Ordering::Relaxed),
            repair_ranges: self.repair_ranges.load(Ordering::Relaxed),
            repair_entries: self.repair_entries.load(Ordering::Relaxed),
            speculative_reads: self.speculative_reads.load(Ordering::Relaxed),
            speculative_failovers: self.speculative_failovers.load(Ordering::Relaxed),
            ec_rounds: self.ec_rounds.load(Ordering::Relaxed),
            ec_lists_restored: self.ec_lists_restored.load(Ordering::Relaxed),
            ec_lists_dissolved: self.ec_lists_dissolved.load(Ordering::Relaxed),
            ec_groups_released: self.ec_groups_released.load(Ordering::Relaxed),
            ec_groups_dissolved: self.ec_groups_dissolved.load(Ordering::Relaxed),
        }
    }
}
