//! Anti-entropy repair: Merkle trees over token ranges, built from logical rows.
//!
//! Owns how replicas are compared and brought back in line. For each token range
//! `(left, right]` this node replicates, every replica builds a tree of `2^depth` leaves,
//! each leaf the hash of the `(key, merged fragment)` entries of an equal slice of the
//! range, read through the [`Store`] — logical rows, never file bytes, so replicas stored
//! in different layouts compare equal when they hold the same data. A leaf is the sum of
//! its entries' hashes ([`hash_range`]), so it does not depend on the order a replica
//! keeps them in: a replica sorted by another clustering order reads its files front to
//! back instead of sorting its partitions into the declared order. Leaves that differ are
//! read in full from every replica, merged with the row layer's last-write-wins, and the
//! merged entries written to each replica that lacked them: only differing slices move.
//!
//! Leaves are a flat list (the tree's bottom row): comparing two lists of a few hundred
//! 16-byte hashes costs less than walking inner nodes would save at these sizes.

use mosaic_rows::KeyRange;
use mosaic_types::Token;

use crate::env::{Entries, Store, StoredPage};
use crate::message::{Failure, TableKey};

/// Entries read per step while hashing or streaming a range.
pub const READ_CHUNK: usize = 1000;

/// The `i`-th of `n` equal slices of the token range `(left, right]` (wrapping; `left ==
/// right` is the whole ring), as a token range `(l, r]`.
pub fn slice(left: Token, right: Token, i: u64, n: u64) -> (Token, Token) {
    let width: i128 = if left.0 < right.0 {
        i128::from(right.0) - i128::from(left.0)
    } else {
        i128::from(right.0) - i128::from(left.0) + (1i128 << 64)
    };
    let n = i128::from(n.max(1));
    let at = |k: i128| -> Token {
        let x = i128::from(left.0) + width * k / n;
        // Back into i64 two's-complement range.
        let wrapped = (x + (1i128 << 63)).rem_euclid(1i128 << 64) - (1i128 << 63);
        Token(i64::try_from(wrapped).unwrap_or(i64::MAX))
    };
    let i = i128::from(i);
    let l = at(i);
    let r = if i + 1 == n { right } else { at(i + 1) };
    (l, r)
}

/// Runs of consecutive values in ascending `indices`, as `(first, last)` pairs.
pub fn runs(indices: &[u64]) -> Vec<(u64, u64)> {
    let mut out: Vec<(u64, u64)> = Vec::new();
    for &i in indices {
        match out.last_mut() {
            Some((_, last)) if *last + 1 == i => *last = i,
            _ => out.push((i, i)),
        }
    }
    out
}

/// The key after `key` (its immediate successor in byte order).
pub fn successor(key: &[u8]) -> Vec<u8> {
    let mut k = key.to_vec();
    k.push(0);
    k
}

/// Entries hashed per step of a leaf (a step is one local read of the replica's store).
pub const HASH_CHUNK: usize = 10 * READ_CHUNK;

/// `range` without its keys up to and including `after` (a resumed read's rest).
pub fn resume_after(range: KeyRange, after: Option<&[u8]>) -> KeyRange {
    match after {
        Some(a) if successor(a) > range.start => KeyRange {
            start: successor(a),
            end: range.end,
        },
        _ => range,
    }
}

/// An ordered read's answer as a page in stored order: its keys are the stored keys, so
/// the last one is where the next page starts after.
pub fn page_of((entries, exhausted): Entries) -> StoredPage {
    let next = if exhausted {
        None
    } else {
        entries.last().map(|(k, _)| k.clone())
    };
    (entries, next)
}

/// One entry's share of a leaf: xxh3-128 of its length-prefixed key and value.
pub fn entry_hash(key: &[u8], value: &[u8]) -> u128 {
    let mut h = xxhash_rust::xxh3::Xxh3::new();
    h.update(&(key.len() as u64).to_le_bytes());
    h.update(key);
    h.update(&(value.len() as u64).to_le_bytes());
    h.update(value);
    h.digest128()
}

/// The sum (mod 2^128) of the [`entry_hash`]es of every entry of `range` in `store`, read
/// in the order the store keeps them ([`Store::read_stored`]): a multiset hash, equal on
/// two replicas holding the same entries in whatever order, so a replica whose rows are
/// sorted differently (heterogeneous replicas) hashes by walking its files once.
pub async fn hash_range(
    store: &dyn Store,
    table: TableKey,
    range: KeyRange,
) -> Result<u128, Failure> {
    let mut sum = 0u128;
    let mut after: Option<Vec<u8>> = None;
    loop {
        let (entries, next) = store
            .read_stored(table, range.clone(), after.take(), HASH_CHUNK)
            .await?;
        for (k, v) in &entries {
            sum = sum.wrapping_add(entry_hash(k, v));
        }
        match next {
            Some(n) => after = Some(n),
            None => return Ok(sum),
        }
    }
}

/// The leaf of a slice holding rows a coding group covers on this replica (ELECT's
/// secondary removal dropped their copies): its hash cannot be compared, so it counts as
/// agreeing, and repair streams the slice instead ([`leaf_covered`]): a covered replica's
/// read relays to the primary, so streaming never copies coded rows back.
pub const COVERED_LEAF: [u8; 16] = [0xff; 16];

/// Whether any tree's leaf `i` is [`COVERED_LEAF`].
pub fn leaf_covered(trees: &[Vec<[u8; 16]>], i: usize) -> bool {
    trees.iter().any(|t| t.get(i) == Some(&COVERED_LEAF))
}

/// Whether leaf `i` of every tree agrees (a covered leaf agrees with anything).
pub fn leaves_agree(trees: &[Vec<[u8; 16]>], i: usize) -> bool {
    let leaves: Vec<Option<&[u8; 16]>> = trees.iter().map(|t| t.get(i)).collect();
    leaves.contains(&Some(&COVERED_LEAF))
        || leaves
            .iter()
            .all(|l| *l == leaves.first().copied().flatten())
}

/// This replica's tree of `(left, right]`: `2^depth` leaf hashes (a slice with covered
/// rows is [`COVERED_LEAF`]).
pub async fn build_tree(
    store: &dyn Store,
    table: TableKey,
    left: Token,
    right: Token,
    depth: u8,
) -> Result<Vec<[u8; 16]>, Failure> {
    let n = 1u64 << depth.min(16);
    let mut leaves = Vec::with_capacity(n as usize);
    for i in 0..n {
        let (l, r) = slice(left, right, i, n);
        let ranges = mosaic_rows::ring_range(l, r);
        if ranges.iter().any(|range| store.ec_covers(table, range)) {
            leaves.push(COVERED_LEAF);
            continue;
        }
        let mut leaf = 0u128;
        for range in ranges {
            leaf = leaf.wrapping_add(hash_range(store, table, range).await?);
        }
        leaves.push(leaf.to_le_bytes());
    }
    Ok(leaves)
}

/// What a repair did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RepairReport {
    /// Token ranges compared.
    pub ranges: u64,
    /// Ranges that could not be repaired (a replica down or failing).
    pub ranges_failed: u64,
    /// Leaves compared.
    pub leaves: u64,
    /// Leaves whose replicas disagreed.
    pub leaves_mismatched: u64,
    /// Entries written to replicas that lacked them.
    pub entries_streamed: u64,
    /// Bytes of those entries (keys and values).
    pub bytes_streamed: u64,
    /// Erasure-tiered tables: coding shards this node lacked, rebuilt from their groups.
    pub shards_rebuilt: u64,
    /// Erasure-tiered tables: shards this node lacks that could not be rebuilt.
    pub shards_failed: u64,
    /// Partitions whose Paxos state needed a round (see [`crate::paxos`]).
    pub paxos_repaired: u64,
    /// Why ranges or shards failed (first few).
    pub errors: Vec<String>,
}

impl RepairReport {
    /// Whether every range was repaired and every lost shard rebuilt.
    pub fn complete(&self) -> bool {
        self.ranges_failed == 0 && self.shards_failed == 0
    }

    /// Adds `other` into this report.
    pub fn absorb(&mut self, other: RepairReport) {
        self.ranges += other.ranges;
        self.ranges_failed += other.ranges_failed;
        self.leaves += other.leaves;
        self.leaves_mismatched += other.leaves_mismatched;
        self.entries_streamed += other.entries_streamed;
        self.bytes_streamed += other.bytes_streamed;
        self.shards_rebuilt += other.shards_rebuilt;
        self.shards_failed += other.shards_failed;
        self.paxos_repaired += other.paxos_repaired;
        for e in other.errors {
            if self.errors.len() < 10 {
                self.errors.push(e);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_covered_leaf_agrees_with_anything_and_others_must_match() {
        let a = [1u8; 16];
        let b = [2u8; 16];
        let trees = vec![vec![a, a, COVERED_LEAF], vec![a, b, b], vec![a, a, a]];
        assert!(leaves_agree(&trees, 0));
        assert!(!leaves_agree(&trees, 1));
        assert!(leaves_agree(&trees, 2));
        assert!(leaf_covered(&trees, 2) && !leaf_covered(&trees, 1));
        // A tree too short for the index disagrees with one that has the leaf.
        assert!(!leaves_agree(&[vec![a], vec![]], 0));
    }

    #[test]
    fn runs_group_neighbours() {
        assert_eq!(runs(&[]), vec![]);
        assert_eq!(runs(&[3]), vec![(3, 3)]);
        assert_eq!(runs(&[0, 1, 2, 5, 7, 8]), vec![(0, 2), (5, 5), (7, 8)]);
    }

    #[test]
    fn slices_tile_the_range() {
        for (left, right) in [
            (Token(-100), Token(100)),
            (Token(100), Token(-100)),
            (Token(i64::MAX - 5), Token(i64::MIN + 7)),
            (Token(3), Token(3)),
        ] {
            let n = 16;
            let mut prev = left;
            for i in 0..n {
                let (l, r) = slice(left, right, i, n);
                assert_eq!(l, prev, "{left:?}..{right:?} slice {i}");
                prev = r;
            }
            assert_eq!(prev, right);
        }
    }
}
