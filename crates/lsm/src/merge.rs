//! Resolving the versions of one key: last-write-wins by timestamp, or a caller's merge.
//!
//! Versions are ordered by the caller's timestamp, not by arrival: a replica may receive an
//! older write after a newer one (hints, repair). Without a merge operator the version with
//! the highest timestamp wins; on a timestamp tie a tombstone wins over a value, and between
//! values the larger byte string wins (Cassandra's rule), so every replica picks the same
//! winner whatever the arrival order. With a merge operator (the row layer merges cells,
//! last-write-wins per cell) all visible versions are handed to it.

use crate::key::ValueKind;

/// One stored version of a key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Version<'a> {
    /// The caller's timestamp (microseconds since the epoch by convention).
    pub ts: u64,
    /// What the version does.
    pub kind: ValueKind,
    /// The value (empty for tombstones).
    pub value: &'a [u8],
}

/// The single version that stands for several.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Resolved {
    /// Timestamp of the result (for a merge: the newest timestamp merged).
    pub ts: u64,
    /// What the result does; a `Delete` result hides the key from reads.
    pub kind: ValueKind,
    /// The value.
    pub value: Vec<u8>,
}

/// What compaction knows when it asks whether a resolved version can be dropped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PurgeContext {
    /// No older version of the key can exist below the compaction's output.
    pub bottommost: bool,
    /// The engine clock, microseconds since the epoch.
    pub now_micros: u64,
    /// Tombstones younger than this are kept so repair can still spread them
    /// (Cassandra's `gc_grace_seconds`).
    pub gc_grace_micros: u64,
}

impl PurgeContext {
    /// Whether a tombstone written at `ts` may be forgotten.
    pub fn tombstone_expired(&self, ts: u64) -> bool {
        self.bottommost && ts.saturating_add(self.gc_grace_micros) < self.now_micros
    }
}

/// A caller-supplied merge of same-key fragments, used by reads and compaction.
///
/// `merge` must be deterministic and order-insensitive with respect to how versions were
/// grouped (it is applied to partial sets by compaction and again on reads), i.e.
/// associative and commutative over the versions' contents.
pub trait MergeOperator: Send + Sync + 'static {
    /// A stable name, for diagnostics.
    fn name(&self) -> &str;

    /// Combines all versions of `user_key` (at least one), newest timestamp first, into one.
    fn merge(&self, user_key: &[u8], versions: &[Version<'_>]) -> Resolved;

    /// Whether `merge` of `version` alone returns it unchanged (same timestamp, kind and
    /// value). Scans then hand the stored bytes over as they are, without the merge's
    /// allocation and copy; the answer must agree with `merge` exactly. The default says
    /// no, which is always correct.
    fn passes_through(&self, user_key: &[u8], version: &Version<'_>) -> bool {
        let _ = (user_key, version);
        false
    }

    /// Called by compaction on each resolved version; returns `None` to drop it, or a version
    /// with expired parts removed. The default drops tombstones past their grace period at the
    /// bottom of the tree.
    fn purge(&self, user_key: &[u8], resolved: Resolved, ctx: &PurgeContext) -> Option<Resolved> {
        let _ = user_key;
        if resolved.kind == ValueKind::Delete && ctx.tombstone_expired(resolved.ts) {
            None
        } else {
            Some(resolved)
        }
    }
}

/// Whether version `a` beats version `b` under last-write-wins.
pub fn lww_beats(a: &Version<'_>, b: &Version<'_>) -> bool {
    use std::cmp::Ordering;
    match a.ts.cmp(&b.ts) {
        Ordering::Greater => true,
        Ordering::Less => false,
        Ordering::Equal => match (a.kind == ValueKind::Delete, b.kind == ValueKind::Delete) {
            (true, false) => true,
            (false, true) => false,
            _ => a.value > b.value,
        },
    }
}

/// The last-write-wins winner among `versions` (none if empty).
pub fn lww_winner<'a>(versions: &[Version<'a>]) -> Option<Version<'a>> {
    let mut it = versions.iter();
    let mut best = *it.next()?;
    for v in it {
        if lww_beats(v, &best) {
            best = *v;
        }
    }
    Some(best)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(ts: u64, kind: ValueKind, value: &[u8]) -> Version<'_> {
        Version { ts, kind, value }
    }

    #[test]
    fn newest_timestamp_wins_whatever_the_order() {
        let a = v(5, ValueKind::Put, b"old");
        let b = v(9, ValueKind::Put, b"new");
        assert_eq!(lww_winner(&[a, b]).unwrap().value, b"new");
        assert_eq!(lww_winner(&[b, a]).unwrap().value, b"new");
    }

    #[test]
    fn ties_go_to_the_tombstone_then_the_larger_value() {
        let put = v(7, ValueKind::Put, b"zzz");
        let del = v(7, ValueKind::Delete, b"");
        assert_eq!(lww_winner(&[put, del]).unwrap().kind, ValueKind::Delete);
        assert_eq!(lww_winner(&[del, put]).unwrap().kind, ValueKind::Delete);
        let small = v(7, ValueKind::Put, b"a");
        assert_eq!(lww_winner(&[small, put]).unwrap().value, b"zzz");
        assert_eq!(lww_winner(&[put, small]).unwrap().value, b"zzz");
    }

    #[test]
    fn tombstones_expire_only_at_the_bottom_after_grace() {
        let ctx = PurgeContext {
            bottommost: true,
            now_micros: 1_000,
            gc_grace_micros: 100,
        };
        assert!(ctx.tombstone_expired(899));
        assert!(!ctx.tombstone_expired(900));
        let upper = PurgeContext {
            bottommost: false,
            ..ctx
        };
        assert!(!upper.tombstone_expired(0));
    }
}
