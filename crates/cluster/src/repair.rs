//! Anti-entropy repair: Merkle trees over token ranges, built from logical rows.
//!
//! Owns how replicas are compared and brought back in line. For each token range
//! `(left, right]` this node replicates, every replica builds a tree of `2^depth` leaves,
//! each leaf the hash of the `(key, merged fragment)` entries of an equal slice of the
//! range, read through the [`Store`] — logical rows, never file bytes, so replicas stored
//! in different layouts compare equal when they hold the same data. Leaves that differ are
//! read in full from every replica, merged with the row layer's last-write-wins, and the
//! merged entries written to each replica that lacked them: only differing slices move.
//!
//! Leaves are a flat list (the tree's bottom row): comparing two lists of a few hundred
//! 16-byte hashes costs less than walking inner nodes would save at these sizes.

use mosaic_rows::KeyRange;
use mosaic_types::Token;

use crate::env::Store;
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

/// Reads every entry of `range` from `store`, `READ_CHUNK` at a time, feeding `f`.
pub async fn for_each_entry(
    store: &dyn Store,
    table: TableKey,
    range: KeyRange,
    mut f: impl FnMut(&[u8], &[u8]),
) -> Result<(), Failure> {
    let mut start = range.start.clone();
    loop {
        let piece = KeyRange {
            start: start.clone(),
            end: range.end.clone(),
        };
        if piece.is_empty() {
            return Ok(());
        }
        let (entries, exhausted) = store.read(table, piece, READ_CHUNK, &[]).await?;
        for (k, v) in &entries {
            f(k, v);
        }
        match entries.last() {
            Some((k, _)) if !exhausted => start = successor(k),
            _ => return Ok(()),
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
        let mut h = xxhash_rust::xxh3::Xxh3::new();
        for range in ranges {
            for_each_entry(store, table, range, |k, v| {
                h.update(&(k.len() as u64).to_le_bytes());
                h.update(k);
                h.update(&(v.len() as u64).to_le_bytes());
                h.update(v);
            })
            .await?;
        }
        leaves.push(h.digest128().to_le_bytes());
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
