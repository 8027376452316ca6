//! Helpers shared by the crate's scenario tests.
#![allow(clippy::unwrap_used, dead_code)]

use std::ops::Bound;

use mosaic_env::rng::SplitMix64;
use mosaic_rows::{ColumnFilter, Permutation};

/// `v` as a component: big-endian bytes sort like the numbers.
pub fn enc(v: u32) -> Vec<u8> {
    v.to_be_bytes().to_vec()
}

/// The permutation `p` (which must be one).
pub fn perm(p: &[usize]) -> Permutation {
    Permutation::new(p.to_vec()).expect("a permutation")
}

/// Every order of three columns.
pub fn orders3() -> Vec<Permutation> {
    [
        [0, 1, 2],
        [0, 2, 1],
        [1, 0, 2],
        [1, 2, 0],
        [2, 0, 1],
        [2, 1, 0],
    ]
    .iter()
    .map(|p| perm(p))
    .collect()
}

/// Whether `a` and `b` agree to a relative 1e-9.
pub fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

/// `= v`.
pub fn eq(v: u32) -> ColumnFilter {
    ColumnFilter::In(vec![enc(v)])
}

/// `[lo, hi)`.
pub fn between(lo: u32, hi: u32) -> ColumnFilter {
    ColumnFilter::Range {
        lo: Bound::Included(enc(lo)),
        hi: Bound::Excluded(enc(hi)),
    }
}

/// A random restriction of a column of values `0..domain`: unrestricted, 1 to 3 values
/// (possibly outside the domain), or a range (possibly empty or past the domain).
pub fn random_column_filter(rng: &mut SplitMix64, domain: u32) -> ColumnFilter {
    let wide = u64::from(domain) + 2;
    match rng.below(3) {
        0 => ColumnFilter::Any,
        1 => {
            let n = rng.between(1, 3);
            ColumnFilter::one_of((0..n).map(|_| enc(rng.below(wide) as u32)).collect())
        }
        _ => {
            let a = rng.below(wide) as u32;
            let b = rng.below(wide) as u32;
            let lo = if rng.chance(200_000) {
                Bound::Unbounded
            } else {
                Bound::Included(enc(a.min(b)))
            };
            let hi = if rng.chance(200_000) {
                Bound::Unbounded
            } else {
                Bound::Excluded(enc(a.max(b)))
            };
            ColumnFilter::Range { lo, hi }
        }
    }
}
