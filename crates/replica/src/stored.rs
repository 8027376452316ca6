//! [`StoredScan`]: a range's entries in the order a replica stores them, keys canonical —
//! what repair hashes and streams.
//!
//! Reads answer in canonical key order, which a heterogeneous tree in another order can
//! only produce by sorting each partition ([`crate::heterogeneous`]); a Merkle leaf or a
//! repair stream needs the entries but not their order (leaves are order-independent sums
//! of entry hashes, streams are sorted by whoever merges them). So this scan walks the
//! tree once, front to back, and re-keys each row canonically as it passes: no sort, no
//! point reads, memory for one entry. Every layout but a permuted tree stores canonical
//! keys in canonical order, and its stored scan is the plain one.
//!
//! Resuming: each entry carries the key it is stored under; a scan started `after` a
//! stored key continues right behind it. Stored keys of one partition share its prefix, so
//! a partition-aligned range (a token range) is one stored range; a range starting or
//! ending inside a partition is scanned from that partition's start to its end, and rows
//! outside the range are skipped.

use std::ops::Bound;

use mosaic_lsm::{Db, Entry, Error, Result, Scan};
use mosaic_rows::{KeyRange, KeySchema, Permutation};

/// One entry of a [`StoredScan`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredEntry {
    /// The canonical key (declared clustering order).
    pub key: Vec<u8>,
    /// The key it is stored under, to resume after (equal to `key` unless the tree is in
    /// another order).
    pub stored: Vec<u8>,
    /// The merged entry.
    pub entry: Entry,
}

/// See the module doc.
pub struct StoredScan {
    scan: Option<Box<Scan>>,
    /// The schema and the tree's order, for a tree whose rows are stored re-keyed.
    re_key: Option<Box<(KeySchema, Permutation)>>,
    range: KeyRange,
}

/// `key`'s immediate successor in byte order.
fn successor(key: &[u8]) -> Vec<u8> {
    let mut k = key.to_vec();
    k.push(0);
    k
}

impl StoredScan {
    /// A scan finding nothing.
    pub(crate) fn empty() -> StoredScan {
        StoredScan {
            scan: None,
            re_key: None,
            range: KeyRange {
                start: Vec::new(),
                end: Some(Vec::new()),
            },
        }
    }

    /// `range` of `db`, whose keys are canonical, after stored key `after`.
    pub(crate) fn plain(db: &Db, range: &KeyRange, after: Option<&[u8]>) -> Result<StoredScan> {
        let start = match after {
            Some(a) if successor(a) > range.start => successor(a),
            _ => range.start.clone(),
        };
        let end = match &range.end {
            Some(e) => Bound::Excluded(e.as_slice()),
            None => Bound::Unbounded,
        };
        if range.end.as_ref().is_some_and(|e| *e <= start) {
            return Ok(StoredScan::empty());
        }
        Ok(StoredScan {
            scan: Some(Box::new(db.scan(Bound::Included(&start), end)?)),
            re_key: None,
            range: range.clone(),
        })
    }

    /// Canonical `range` of `db`, whose rows are keyed in order `perm`, after stored key
    /// `after`: the stored keys from the start of `range.start`'s partition to the end
    /// of `range.end`'s (`first` and `scan_end`, computed by the caller).
    pub(crate) fn permuted(
        db: &Db,
        schema: KeySchema,
        perm: Permutation,
        range: &KeyRange,
        first: Vec<u8>,
        scan_end: Option<Vec<u8>>,
        after: Option<&[u8]>,
    ) -> Result<StoredScan> {
        let start = match after {
            Some(a) if successor(a) > first => successor(a),
            _ => first,
        };
        if scan_end.as_ref().is_some_and(|e| *e <= start) {
            return Ok(StoredScan::empty());
        }
        let end = match &scan_end {
            Some(e) => Bound::Excluded(e.as_slice()),
            None => Bound::Unbounded,
        };
        Ok(StoredScan {
            scan: Some(Box::new(db.scan(Bound::Included(&start), end)?)),
            re_key: Some(Box::new((schema, perm))),
            range: range.clone(),
        })
    }

    fn in_range(&self, key: &[u8]) -> bool {
        key >= self.range.start.as_slice() && self.range.end.as_deref().is_none_or(|e| key < e)
    }
}

impl Iterator for StoredScan {
    type Item = Result<StoredEntry>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let (stored, entry) = match self.scan.as_mut()?.next()? {
                Ok(item) => item,
                Err(e) => {
                    self.scan = None;
                    return Some(Err(e));
                }
            };
            let key = match &self.re_key {
                None => stored.clone(),
                Some(re_key) => {
                    let (schema, perm) = &**re_key;
                    match schema.canonical_key(&stored, perm) {
                        Ok(k) => k,
                        Err(e) => {
                            self.scan = None;
                            return Some(Err(Error::corruption(
                                std::path::PathBuf::new(),
                                0,
                                format!("a stored key does not decode: {e}"),
                            )));
                        }
                    }
                }
            };
            if self.re_key.is_some() && !self.in_range(&key) {
                continue;
            }
            return Some(Ok(StoredEntry { key, stored, entry }));
        }
    }
}
