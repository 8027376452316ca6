//! Reed-Solomon over whole SSTables, stripe by stripe.
//!
//! A coding group is `k` data shards (the data components of `k` SSTables from `k` nodes)
//! and `n − k` parity shards. Data shards have any lengths; the code treats each as
//! zero-padded to the group's *coded length*: the longest shard rounded up to a multiple
//! of [`CHUNK`] bytes. Parity shards have exactly the coded length.
//!
//! The arithmetic is `reed-solomon-simd`'s, which codes every 64-byte chunk of a shard
//! independently of the others (32 GF(2^16) symbols per chunk). Padding to whole chunks
//! makes that a property of the stored bytes: any chunk-aligned range of the parity is
//! the code of the same range of the data shards. So the group is coded in stripes of
//! [`Codec::stripe_bytes`] (bounded memory, however large the SSTables), a degraded read
//! decodes only the stripe holding the block it needs, and a data shard replaced by a
//! longer one only extends the parity with zeros (the code of zeros) before the update.
//!
//! The code is linear, so a changed data shard updates the parity by a delta (RAID's
//! read-modify-write): the parity of `old ⊕ new` in that position, zeros elsewhere, XORed
//! into the old parity. A data shard removed from the group becomes an all-zero dummy the
//! same way (`new` empty).

use std::ops::Range;

use reed_solomon_simd::{ReedSolomonDecoder, ReedSolomonEncoder};

/// Shards are coded in units of this many bytes (the Reed-Solomon engine's chunk).
pub const CHUNK: usize = 64;
/// The most shards a coding group may have (data and parity together).
pub const MAX_SHARDS: usize = 32;
/// The default stripe: bytes of each shard coded at a time.
pub const DEFAULT_STRIPE_BYTES: usize = 64 << 10;

/// Why coding failed.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum CodecError {
    /// The code's parameters are out of range.
    #[error("unsupported code: k = {k} data shards of n = {n} (need 1 <= k < n <= {MAX_SHARDS})")]
    Unsupported {
        /// Data shards.
        k: usize,
        /// All shards.
        n: usize,
    },
    /// The stripe is not a positive multiple of [`CHUNK`].
    #[error("stripe of {0} bytes is not a positive multiple of {CHUNK}")]
    BadStripe(usize),
    /// `encode` was not given exactly `k` data shards.
    #[error("expected {expected} data shards, got {got}")]
    WrongShardCount {
        /// `k`.
        expected: usize,
        /// Given.
        got: usize,
    },
    /// Fewer than `k` distinct shards to decode from.
    #[error("need {k} distinct shards of the group to decode, have {have}")]
    NotEnoughShards {
        /// `k`.
        k: usize,
        /// Distinct positions given.
        have: usize,
    },
    /// A shard position outside `0..n`.
    #[error("shard position {position} is outside the group's {n} shards")]
    BadPosition {
        /// Given.
        position: usize,
        /// `n`.
        n: usize,
    },
    /// A range that is not chunk-aligned, or shard bytes longer than the range.
    #[error(
        "range {start}..{end} is not aligned to {CHUNK}-byte chunks or a shard does not fit it"
    )]
    BadRange {
        /// Its start.
        start: usize,
        /// Its end.
        end: usize,
    },
    /// The Reed-Solomon engine refused (not expected once the checks above pass).
    #[error("reed-solomon: {0}")]
    Engine(String),
}

impl From<reed_solomon_simd::Error> for CodecError {
    fn from(e: reed_solomon_simd::Error) -> Self {
        CodecError::Engine(e.to_string())
    }
}

/// An `(n, k)` Reed-Solomon code over shards, in stripes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Codec {
    k: usize,
    n: usize,
    stripe: usize,
}

impl Codec {
    /// `k` data shards of `n`, in stripes of [`DEFAULT_STRIPE_BYTES`].
    pub fn new(k: usize, n: usize) -> Result<Codec, CodecError> {
        Codec::with_stripe(k, n, DEFAULT_STRIPE_BYTES)
    }

    /// `k` data shards of `n`, in stripes of `stripe` bytes (a multiple of [`CHUNK`]).
    pub fn with_stripe(k: usize, n: usize, stripe: usize) -> Result<Codec, CodecError> {
        if k == 0 || k >= n || n > MAX_SHARDS || !ReedSolomonEncoder::supports(k, n - k) {
            return Err(CodecError::Unsupported { k, n });
        }
        if stripe == 0 || !stripe.is_multiple_of(CHUNK) {
            return Err(CodecError::BadStripe(stripe));
        }
        Ok(Codec { k, n, stripe })
    }

    /// Data shards per group.
    pub fn k(&self) -> usize {
        self.k
    }

    /// Shards per group.
    pub fn n(&self) -> usize {
        self.n
    }

    /// Parity shards per group (`n − k`).
    pub fn parity_count(&self) -> usize {
        self.n - self.k
    }

    /// Bytes of each shard coded at a time.
    pub fn stripe_bytes(&self) -> usize {
        self.stripe
    }

    /// The coded length of a group whose longest data shard has `len` bytes.
    pub fn coded_len(len: usize) -> usize {
        len.div_ceil(CHUNK) * CHUNK
    }

    /// The stripes of a group of coded length `coded_len`, in order.
    pub fn stripes(&self, coded_len: usize) -> impl Iterator<Item = Range<usize>> {
        let stripe = self.stripe;
        (0..coded_len.div_ceil(stripe)).map(move |i| i * stripe..((i + 1) * stripe).min(coded_len))
    }

    /// The stripe holding byte `offset` of a group of coded length `coded_len` (`None` past
    /// its end).
    pub fn stripe_of(&self, coded_len: usize, offset: usize) -> Option<Range<usize>> {
        (offset < coded_len).then(|| {
            let start = offset / self.stripe * self.stripe;
            start..(start + self.stripe).min(coded_len)
        })
    }

    /// The `n − k` parity shards of `data` (exactly `k` shards, any lengths), each of the
    /// group's coded length.
    pub fn encode(&self, data: &[&[u8]]) -> Result<Vec<Vec<u8>>, CodecError> {
        if data.len() != self.k {
            return Err(CodecError::WrongShardCount {
                expected: self.k,
                got: data.len(),
            });
        }
        let coded = Codec::coded_len(data.iter().map(|d| d.len()).max().unwrap_or(0));
        let mut parity = vec![Vec::with_capacity(coded); self.parity_count()];
        let mut encoder: Option<ReedSolomonEncoder> = None;
        let mut padded = Vec::new();
        for range in self.stripes(coded) {
            let encoder = self.encoder(&mut encoder, range.len())?;
            for shard in data {
                encoder.add_original_shard(piece(shard, &range, &mut padded))?;
            }
            let result = encoder.encode()?;
            for (p, bytes) in parity.iter_mut().zip(result.recovery_iter()) {
                p.extend_from_slice(bytes);
            }
        }
        Ok(parity)
    }

    /// Bytes `range` of the shard at position `want` (data `0..k`, parity `k..n`),
    /// rebuilt from `shards`: `(position, that shard's bytes in range)` for at least `k`
    /// distinct positions. `range` must be chunk-aligned (a stripe from
    /// [`Codec::stripe_of`] is); a data shard's bytes may stop short of the range's end
    /// (it is shorter than the group), and the missing bytes are zeros.
    pub fn decode_range(
        &self,
        range: Range<usize>,
        shards: &[(usize, &[u8])],
        want: usize,
    ) -> Result<Vec<u8>, CodecError> {
        let len = range.len();
        if !range.start.is_multiple_of(CHUNK) || !len.is_multiple_of(CHUNK) {
            return Err(CodecError::BadRange {
                start: range.start,
                end: range.end,
            });
        }
        if want >= self.n {
            return Err(CodecError::BadPosition {
                position: want,
                n: self.n,
            });
        }
        let mut seen = [false; MAX_SHARDS];
        let mut distinct = Vec::with_capacity(shards.len());
        for &(position, bytes) in shards {
            if position >= self.n {
                return Err(CodecError::BadPosition {
                    position,
                    n: self.n,
                });
            }
            if bytes.len() > len || (position >= self.k && bytes.len() != len) {
                return Err(CodecError::BadRange {
                    start: range.start,
                    end: range.end,
                });
            }
            if !std::mem::replace(&mut seen[position], true) {
                distinct.push((position, bytes));
            }
        }
        if len == 0 {
            return Ok(Vec::new());
        }
        let whole = 0..len;
        let mut buf = Vec::new();
        let mut zero_padded = |bytes: &[u8]| piece(bytes, &whole, &mut buf).to_vec();
        if let Some(&(_, bytes)) = distinct.iter().find(|(p, _)| *p == want) {
            return Ok(zero_padded(bytes));
        }
        if distinct.len() < self.k {
            return Err(CodecError::NotEnoughShards {
                k: self.k,
                have: distinct.len(),
            });
        }
        // A data shard: decoded from the shards given. A parity shard: every missing data
        // shard restored, then encoded.
        let mut data: Vec<Vec<u8>> = Vec::new();
        let restored = with_decoder(self.k, self.parity_count(), len, |decoder| {
            let mut originals = 0;
            // The decoder copies each shard it is given: one padding buffer serves all.
            let mut pad = Vec::new();
            for &(position, bytes) in &distinct {
                if position < self.k {
                    decoder.add_original_shard(position, piece(bytes, &whole, &mut pad))?;
                    originals += 1;
                } else {
                    decoder.add_recovery_shard(position - self.k, bytes)?;
                }
            }
            if want < self.k {
                let result = decoder.decode()?;
                let restored = result
                    .restored_original(want)
                    .ok_or_else(|| CodecError::Engine(format!("shard {want} was not restored")))?;
                return Ok(Some(restored.to_vec()));
            }
            data = vec![Vec::new(); self.k];
            for &(position, bytes) in &distinct {
                if position < self.k {
                    data[position] = zero_padded(bytes);
                }
            }
            if originals < self.k {
                let result = decoder.decode()?;
                for (position, bytes) in result.restored_original_iter() {
                    data[position] = bytes.to_vec();
                }
            }
            Ok(None)
        })?;
        if let Some(restored) = restored {
            return Ok(restored);
        }
        let mut encoder = ReedSolomonEncoder::new(self.k, self.parity_count(), len)?;
        for shard in &data {
            encoder.add_original_shard(shard)?;
        }
        let result = encoder.encode()?;
        let parity = result
            .recovery(want - self.k)
            .ok_or_else(|| CodecError::Engine(format!("parity {want} was not made")))?;
        Ok(parity.to_vec())
    }

    /// What the data shard at `position` changing from `old` to `new` adds (by XOR) to each
    /// of the group's `n − k` parity shards, each of the coded length of the longer of the
    /// two: the leader computes it once and sends each parity node its part, so no parity
    /// node needs the data.
    pub fn parity_delta(
        &self,
        position: usize,
        old: &[u8],
        new: &[u8],
    ) -> Result<Vec<Vec<u8>>, CodecError> {
        let coded = Codec::coded_len(old.len().max(new.len()));
        let mut parity = vec![vec![0; coded]; self.parity_count()];
        self.update_parity(&mut parity, position, old, new)?;
        Ok(parity)
    }

    /// Updates `parity` (the group's `n − k` parity shards) for the data shard at
    /// `position` changing from `old` to `new` (empty: the shard leaves the group and
    /// becomes a zero dummy). The parity grows, with zeros, when `new` is longer than it.
    pub fn update_parity(
        &self,
        parity: &mut [Vec<u8>],
        position: usize,
        old: &[u8],
        new: &[u8],
    ) -> Result<(), CodecError> {
        if position >= self.k {
            return Err(CodecError::BadPosition {
                position,
                n: self.k,
            });
        }
        if parity.len() != self.parity_count() {
            return Err(CodecError::WrongShardCount {
                expected: self.parity_count(),
                got: parity.len(),
            });
        }
        let current = parity.first().map_or(0, Vec::len);
        if parity.iter().any(|p| p.len() != current) || !current.is_multiple_of(CHUNK) {
            return Err(CodecError::BadRange {
                start: 0,
                end: current,
            });
        }
        if old.len() > current {
            return Err(CodecError::BadRange {
                start: 0,
                end: old.len(),
            });
        }
        let coded = current.max(Codec::coded_len(new.len()));
        for p in parity.iter_mut() {
            p.resize(coded, 0);
        }
        let zeros = vec![0u8; self.stripe.min(coded)];
        let mut delta = Vec::with_capacity(self.stripe.min(coded));
        let mut encoder: Option<ReedSolomonEncoder> = None;
        for range in self.stripes(coded) {
            delta.clear();
            delta.extend(
                (range.clone())
                    .map(|i| old.get(i).copied().unwrap_or(0) ^ new.get(i).copied().unwrap_or(0)),
            );
            if delta.iter().all(|&b| b == 0) {
                continue;
            }
            let encoder = self.encoder(&mut encoder, range.len())?;
            for i in 0..self.k {
                if i == position {
                    encoder.add_original_shard(&delta)?;
                } else {
                    encoder.add_original_shard(&zeros[..range.len()])?;
                }
            }
            let result = encoder.encode()?;
            for (p, d) in parity.iter_mut().zip(result.recovery_iter()) {
                for (b, x) in p[range.clone()].iter_mut().zip(d) {
                    *b ^= x;
                }
            }
        }
        Ok(())
    }
}

impl Codec {
    /// The encoder in `slot`, made or reset for shards of `len` bytes.
    fn encoder<'a>(
        &self,
        slot: &'a mut Option<ReedSolomonEncoder>,
        len: usize,
    ) -> Result<&'a mut ReedSolomonEncoder, CodecError> {
        let m = self.parity_count();
        Ok(match slot {
            Some(e) => {
                e.reset(self.k, m, len)?;
                e
            }
            None => slot.insert(ReedSolomonEncoder::new(self.k, m, len)?),
        })
    }
}

/// Decoders kept for reuse, at most [`POOLED_DECODERS_MAX`]: a decoder's working space
/// (several shards' worth, zeroed as the allocator hands it out) costs more to set up than
/// decoding a degraded read's span with it — `perf` of a first degraded pass put 13% of
/// the surviving nodes' CPU in `ReedSolomonDecoder::new`, most of it page faults.
static DECODERS: std::sync::Mutex<Vec<ReedSolomonDecoder>> = std::sync::Mutex::new(Vec::new());
/// Decoders the pool keeps.
const POOLED_DECODERS_MAX: usize = 4;
/// Decoders set up for longer shards than this are dropped after use, not pooled (their
/// working space would stay allocated).
const POOLED_SHARD_BYTES_MAX: usize = 1 << 20;

/// Runs `f` with a decoder for `k` original and `m` recovery shards of `len` bytes, from
/// the pool when it holds one; the decoder goes back to the pool afterwards.
fn with_decoder<T>(
    k: usize,
    m: usize,
    len: usize,
    f: impl FnOnce(&mut ReedSolomonDecoder) -> Result<T, CodecError>,
) -> Result<T, CodecError> {
    let lock = || {
        DECODERS
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    };
    let pooled = lock().pop();
    let mut decoder = match pooled {
        Some(mut d) => {
            d.reset(k, m, len)?;
            d
        }
        None => ReedSolomonDecoder::new(k, m, len)?,
    };
    let out = f(&mut decoder);
    if len <= POOLED_SHARD_BYTES_MAX {
        let mut pool = lock();
        if pool.len() < POOLED_DECODERS_MAX {
            pool.push(decoder);
        }
    }
    out
}

/// `shard`'s bytes in `range`, zero-padded to the range's length (in `buf` when padding
/// is needed).
fn piece<'a>(shard: &'a [u8], range: &Range<usize>, buf: &'a mut Vec<u8>) -> &'a [u8] {
    if shard.len() >= range.end {
        return &shard[range.clone()];
    }
    buf.clear();
    if shard.len() > range.start {
        buf.extend_from_slice(&shard[range.start..]);
    }
    buf.resize(range.len(), 0);
    buf
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameters_are_checked() {
        assert!(Codec::new(4, 6).is_ok());
        assert_eq!(
            Codec::new(0, 2),
            Err(CodecError::Unsupported { k: 0, n: 2 })
        );
        assert_eq!(
            Codec::new(4, 4),
            Err(CodecError::Unsupported { k: 4, n: 4 })
        );
        assert_eq!(
            Codec::new(30, 40),
            Err(CodecError::Unsupported { k: 30, n: 40 })
        );
        assert_eq!(
            Codec::with_stripe(4, 6, 100),
            Err(CodecError::BadStripe(100))
        );
        assert_eq!(Codec::with_stripe(4, 6, 0), Err(CodecError::BadStripe(0)));
    }

    #[test]
    fn stripes_cover_the_coded_length() {
        let c = Codec::with_stripe(2, 3, 128).unwrap();
        assert_eq!(Codec::coded_len(0), 0);
        assert_eq!(Codec::coded_len(1), 64);
        assert_eq!(Codec::coded_len(129), 192);
        assert_eq!(
            c.stripes(320).collect::<Vec<_>>(),
            vec![0..128, 128..256, 256..320]
        );
        assert_eq!(c.stripe_of(320, 300), Some(256..320));
        assert_eq!(c.stripe_of(320, 128), Some(128..256));
        assert_eq!(c.stripe_of(320, 320), None);
    }

    #[test]
    fn too_few_shards_is_an_error_not_garbage() {
        let c = Codec::with_stripe(3, 5, 64).unwrap();
        let data: Vec<Vec<u8>> = (0..3).map(|i| vec![i as u8 + 1; 64]).collect();
        let refs: Vec<&[u8]> = data.iter().map(Vec::as_slice).collect();
        let parity = c.encode(&refs).unwrap();
        let shards = [(0, data[0].as_slice()), (3, parity[0].as_slice())];
        assert_eq!(
            c.decode_range(0..64, &shards, 1),
            Err(CodecError::NotEnoughShards { k: 3, have: 2 })
        );
        // The same shard twice counts once.
        let shards = [
            (0, data[0].as_slice()),
            (0, data[0].as_slice()),
            (3, &parity[0][..]),
        ];
        assert!(matches!(
            c.decode_range(0..64, &shards, 1),
            Err(CodecError::NotEnoughShards { .. })
        ));
        assert!(matches!(
            c.decode_range(0..64, &[(7, &data[0][..])], 1),
            Err(CodecError::BadPosition { .. })
        ));
        assert!(matches!(
            c.decode_range(1..65, &shards, 1),
            Err(CodecError::BadRange { .. })
        ));
    }

    /// Decoders are reused across codes and lengths: each decode still rebuilds its own
    /// shard exactly.
    #[test]
    fn pooled_decoders_rebuild_every_shape() {
        for (k, n, len, short) in [
            (2, 3, 256, 100),
            (4, 6, 64, 64),
            (3, 5, 1024, 1000),
            (2, 3, 64, 1),
        ] {
            let c = Codec::with_stripe(k, n, len).unwrap();
            let data: Vec<Vec<u8>> = (0..k)
                .map(|i| {
                    let size = if i == 0 { short } else { len };
                    (0..size).map(|b| (b * 7 + i * 31 + k) as u8).collect()
                })
                .collect();
            let refs: Vec<&[u8]> = data.iter().map(Vec::as_slice).collect();
            let parity = c.encode(&refs).unwrap();
            // Too few shards: an error, before any decoder is taken.
            assert!(c.decode_range(0..len, &[(1, refs[1])], 0).is_err());
            // Lose shard 0 (the short one); rebuild it from the others and the parity.
            let mut shards: Vec<(usize, &[u8])> = (1..k).map(|i| (i, refs[i])).collect();
            shards.push((k, parity[0].as_slice()));
            let mut want = data[0].clone();
            want.resize(len, 0);
            assert_eq!(
                c.decode_range(0..len, &shards, 0).unwrap(),
                want,
                "k {k} n {n} len {len}"
            );
        }
    }
}
