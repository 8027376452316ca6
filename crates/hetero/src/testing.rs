//! Test helpers shared by the unit tests: encoded values, orders and a complete table.

use mosaic_rows::{ColumnFilter, Permutation};

use crate::stats::TableStats;

/// `v` encoded as a big-endian component (byte order is numeric order).
pub(crate) fn enc(v: u32) -> Vec<u8> {
    v.to_be_bytes().to_vec()
}

/// The order `p` (the identity if `p` is not a permutation).
pub(crate) fn perm(p: &[usize]) -> Permutation {
    Permutation::new(p.to_vec()).unwrap_or_else(|| Permutation::identity(p.len()))
}

/// `= v`.
pub(crate) fn eq(v: u32) -> ColumnFilter {
    ColumnFilter::In(vec![enc(v)])
}

/// A whole table of 10 × 20 × 5 rows: every combination once, so fractions are exact.
pub(crate) fn grid() -> TableStats {
    let mut sample = Vec::new();
    for a in 0..10 {
        for b in 0..20 {
            for c in 0..5 {
                sample.push(vec![enc(a), enc(b), enc(c)]);
            }
        }
    }
    TableStats::from_sample(1000.0, &sample)
}
