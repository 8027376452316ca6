//! Compression (§5 of the v3/v4 specs, §2.2 of v5's): LZ4 only.
//!
//! v3/v4 compress each frame body; v5 compresses segments instead (`segment`), each a raw
//! LZ4 block whose uncompressed length is in the segment header, and ignores the frame
//! header's compression flag.
//!
//! Cassandra's v3/v4 LZ4 body is a 4-byte **big-endian** uncompressed length followed by a
//! raw LZ4 block (no frame format); the Python driver flips that length to the little-endian
//! prefix its `lz4.block` expects, and `lz4_flex::block` reads the raw block directly.
//! Snappy is not offered in SUPPORTED, and a STARTUP asking for it is refused with
//! Cassandra's text for a node without the native library.

use bytes::{BufMut, Bytes, BytesMut};

use super::wire::BodyError;

/// Upper bound of LZ4's expansion ratio: a block can't decompress to more than ~255 times
/// its size (each literal-length or match-length byte adds at most 255 output bytes).
const LZ4_EXPANSION_MAX: u64 = 255;

/// A negotiated frame compression.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Compression {
    /// `lz4`.
    Lz4,
}

impl Compression {
    /// The STARTUP `COMPRESSION` value.
    pub fn name(self) -> &'static str {
        match self {
            Compression::Lz4 => "lz4",
        }
    }

    /// Compresses `body` and appends the result to `out`.
    pub(crate) fn compress_into(self, body: &[u8], out: &mut BytesMut) {
        match self {
            Compression::Lz4 => {
                // Bodies are bounded by the frame length (< 2 GiB), asserted by the caller.
                out.put_u32(u32::try_from(body.len()).unwrap_or(u32::MAX));
                out.extend_from_slice(&lz4_flex::block::compress(body));
            }
        }
    }

    /// A raw compressed block, no length prefix: a v5 segment's payload (its header
    /// carries the uncompressed length).
    pub(crate) fn compress_block(self, payload: &[u8]) -> Vec<u8> {
        match self {
            Compression::Lz4 => lz4_flex::block::compress(payload),
        }
    }

    /// Decompresses a raw block that must come out exactly `len` bytes long (a v5
    /// segment's payload; `len` is at most 128 KiB - 1, from its header).
    pub(crate) fn decompress_block(self, block: &[u8], len: usize) -> Result<Vec<u8>, String> {
        match self {
            Compression::Lz4 => {
                let mut out = vec![0u8; len];
                let n =
                    lz4_flex::block::decompress_into(block, &mut out).map_err(|e| e.to_string())?;
                if n != len {
                    return Err(format!("block decompressed to {n} bytes, announced {len}"));
                }
                Ok(out)
            }
        }
    }

    /// Decompresses a frame body whose uncompressed size must stay within `len_max`.
    pub(crate) fn decompress(self, body: &[u8], len_max: u32) -> Result<Bytes, BodyError> {
        match self {
            Compression::Lz4 => {
                let Some((&[a, b, c, d], block)) = body.split_first_chunk::<4>() else {
                    return Err(BodyError::Truncated {
                        what: "LZ4 uncompressed length",
                        needed: 4,
                        remaining: body.len(),
                    });
                };
                let length = u32::from_be_bytes([a, b, c, d]);
                if length == 0 {
                    return Ok(Bytes::new());
                }
                // Refuse before allocating: a 4-byte header must not buy a 256 MiB buffer.
                let expandable = (block.len() as u64).saturating_mul(LZ4_EXPANSION_MAX);
                let max = u64::from(len_max).min(expandable);
                if u64::from(length) > max {
                    return Err(BodyError::DecompressedTooLarge {
                        length: u64::from(length),
                        max,
                    });
                }
                let length = length as usize;
                let mut out = vec![0u8; length];
                let n = lz4_flex::block::decompress_into(block, &mut out).map_err(|e| {
                    BodyError::Decompression {
                        reason: e.to_string(),
                    }
                })?;
                if n != length {
                    return Err(BodyError::Decompression {
                        reason: format!("block decompressed to {n} bytes, announced {length}"),
                    });
                }
                Ok(Bytes::from(out))
            }
        }
    }
}
