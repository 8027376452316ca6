//! The physical layout of a table file: block handles, block trailers (compression type and
//! crc32c), lz4 framing, and the fixed-size footer. See `docs/format-sstable.md` for the
//! byte-by-byte description; this module is the single place that encodes and decodes it.
//!
//! Everything here decodes untrusted bytes: lengths and offsets are checked against the real
//! sizes before use, checksums are compared before any content is interpreted, and a bad
//! file yields [`Error::Corruption`] or [`Error::ChecksumMismatch`] naming the file and offset.
#![deny(clippy::indexing_slicing)]

use std::path::Path;

use mosaic_env::RandomAccessFile;

use super::coding::{get_varint64, put_varint64, read_u32_le, read_u64_le};
use crate::error::{Error, Result};
use crate::key::{KeyOrder, SeekOrder};

/// Bytes after every block: compression type (1) and crc32c (4, LE) of block ‖ type.
pub(crate) const BLOCK_TRAILER_LEN: usize = 5;
/// Bytes of the footer at the end of every table.
pub(crate) const FOOTER_LEN: usize = 80;
/// The last 8 bytes of every table.
pub(crate) const TABLE_MAGIC: [u8; 8] = *b"MosaicT\x01";
/// The table format version written in the footer.
pub(crate) const FORMAT_VERSION: u8 = 1;
/// Compression type byte: stored as is.
pub(crate) const BLOCK_TYPE_NONE: u8 = 0;
/// Compression type byte: `u32 LE uncompressed length ‖ lz4 block`.
pub(crate) const BLOCK_TYPE_LZ4: u8 = 1;
/// The largest uncompressed block a reader accepts (a single huge value makes a huge block,
/// but nothing legitimate comes near this).
pub(crate) const BLOCK_SIZE_MAX: usize = 1 << 30;
/// lz4 cannot expand input by more than this factor (a match token of one byte plus
/// 255-byte length extensions); a larger claimed length is corruption, not data.
const LZ4_EXPANSION_MAX: usize = 255;

/// Where a block lives: its offset and its size excluding the trailer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct BlockHandle {
    pub(crate) offset: u64,
    pub(crate) size: u64,
}

impl BlockHandle {
    /// Appends `varint64 offset ‖ varint64 size` (the index block's value format).
    pub(crate) fn encode_varint_to(&self, buf: &mut Vec<u8>) {
        put_varint64(buf, self.offset);
        put_varint64(buf, self.size);
    }

    /// Decodes an index value; `None` unless it is exactly two varints.
    pub(crate) fn decode_varint(src: &[u8]) -> Option<Self> {
        let (offset, p) = get_varint64(src, 0)?;
        let (size, p) = get_varint64(src, p)?;
        (p == src.len()).then_some(BlockHandle { offset, size })
    }

    /// The end of the block including its trailer, if it does not overflow.
    pub(crate) fn end_with_trailer(&self) -> Option<u64> {
        self.offset
            .checked_add(self.size)?
            .checked_add(BLOCK_TRAILER_LEN as u64)
    }

    fn encode_fixed_to(&self, buf: &mut Vec<u8>) {
        buf.extend_from_slice(&self.offset.to_le_bytes());
        buf.extend_from_slice(&self.size.to_le_bytes());
    }
}

/// The fixed-size record at the end of a table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Footer {
    pub(crate) index: BlockHandle,
    /// `size == 0` means no filter was written.
    pub(crate) filter: BlockHandle,
    pub(crate) properties: BlockHandle,
    pub(crate) entries: u64,
    pub(crate) data_blocks: u64,
    pub(crate) key_order: KeyOrder,
    /// `index` is a top-level index over index partitions and `filter` (if any) a
    /// top-level index over filter partitions (the footer's flag bit 0).
    pub(crate) partitioned: bool,
    /// The index's separators are marked user keys where they can be (the footer's flag
    /// bit 1; only in tables of internal keys): see [`SeekOrder::MarkedSeparators`].
    pub(crate) marked_separators: bool,
}

/// Footer field offsets.
const FOOTER_ENTRIES_POS: usize = 48;
const FOOTER_DATA_BLOCKS_POS: usize = 56;
const FOOTER_KEY_ORDER_POS: usize = 64;
const FOOTER_VERSION_POS: usize = 65;
const FOOTER_FLAGS_POS: usize = 66;
const FOOTER_RESERVED_POS: usize = 67;
/// Footer flag: the index and filter are partitioned.
const FLAG_PARTITIONED: u8 = 1;
/// Footer flag: the index's separators may be marked user keys.
const FLAG_MARKED_SEPARATORS: u8 = 2;
const FOOTER_CRC_POS: usize = 68;
const FOOTER_MAGIC_POS: usize = 72;

impl Footer {
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut buf = Vec::with_capacity(FOOTER_LEN);
        self.index.encode_fixed_to(&mut buf);
        self.filter.encode_fixed_to(&mut buf);
        self.properties.encode_fixed_to(&mut buf);
        buf.extend_from_slice(&self.entries.to_le_bytes());
        buf.extend_from_slice(&self.data_blocks.to_le_bytes());
        buf.push(self.key_order.to_u8());
        buf.push(FORMAT_VERSION);
        let mut flags = 0;
        if self.partitioned {
            flags |= FLAG_PARTITIONED;
        }
        if self.marked_separators {
            flags |= FLAG_MARKED_SEPARATORS;
        }
        buf.push(flags);
        buf.push(0);
        debug_assert_eq!(buf.len(), FOOTER_CRC_POS);
        let crc = crc32c::crc32c(&buf);
        buf.extend_from_slice(&crc.to_le_bytes());
        buf.extend_from_slice(&TABLE_MAGIC);
        debug_assert_eq!(buf.len(), FOOTER_LEN);
        buf
    }

    /// Decodes the footer found at `offset` (= file length − [`FOOTER_LEN`]) and checks that
    /// its handles lie inside `[0, offset)`.
    pub(crate) fn decode(bytes: &[u8], path: &Path, offset: u64, verify: bool) -> Result<Self> {
        let corrupt = |pos: usize, reason: &str| {
            Error::corruption(path, offset + pos as u64, format!("table footer: {reason}"))
        };
        if bytes.len() != FOOTER_LEN {
            return Err(corrupt(0, "wrong footer length"));
        }
        if bytes.get(FOOTER_MAGIC_POS..) != Some(&TABLE_MAGIC[..]) {
            return Err(corrupt(
                FOOTER_MAGIC_POS,
                "bad magic number (not a Mosaic table, or truncated)",
            ));
        }
        let expected = read_u32_le(bytes, FOOTER_CRC_POS).ok_or_else(|| corrupt(0, "short"))?;
        let actual = crc32c::crc32c(bytes.get(..FOOTER_CRC_POS).unwrap_or_default());
        if verify && expected != actual {
            return Err(Error::ChecksumMismatch {
                file: path.to_path_buf(),
                offset,
                expected,
                actual,
            });
        }
        let byte = |pos: usize| bytes.get(pos).copied().ok_or_else(|| corrupt(pos, "short"));
        let version = byte(FOOTER_VERSION_POS)?;
        if version != FORMAT_VERSION {
            return Err(corrupt(
                FOOTER_VERSION_POS,
                &format!(
                    "unsupported format version {version} (this build reads {FORMAT_VERSION})"
                ),
            ));
        }
        let flags = byte(FOOTER_FLAGS_POS)?;
        if flags & !(FLAG_PARTITIONED | FLAG_MARKED_SEPARATORS) != 0 {
            return Err(corrupt(
                FOOTER_FLAGS_POS,
                &format!("unknown flags {flags:#04x} (written by a newer build?)"),
            ));
        }
        if byte(FOOTER_RESERVED_POS)? != 0 {
            return Err(corrupt(FOOTER_RESERVED_POS, "reserved byte is not zero"));
        }
        let key_order_byte = byte(FOOTER_KEY_ORDER_POS)?;
        let key_order = KeyOrder::from_u8(key_order_byte).ok_or_else(|| {
            corrupt(
                FOOTER_KEY_ORDER_POS,
                &format!("unknown key order {key_order_byte}"),
            )
        })?;
        let u64_at = |pos: usize| read_u64_le(bytes, pos).ok_or_else(|| corrupt(pos, "short"));
        let handle_at = |pos: usize| -> Result<BlockHandle> {
            let h = BlockHandle {
                offset: u64_at(pos)?,
                size: u64_at(pos + 8)?,
            };
            match h.end_with_trailer() {
                Some(end) if end <= offset => Ok(h),
                _ => Err(corrupt(
                    pos,
                    &format!(
                        "block handle (offset {}, size {}) outside the table's {offset} bytes of blocks",
                        h.offset, h.size
                    ),
                )),
            }
        };
        let index = handle_at(0)?;
        let filter_raw = BlockHandle {
            offset: u64_at(16)?,
            size: u64_at(24)?,
        };
        let filter = if filter_raw == BlockHandle::default() {
            filter_raw
        } else {
            handle_at(16)?
        };
        let properties = handle_at(32)?;
        Ok(Footer {
            index,
            filter,
            properties,
            entries: u64_at(FOOTER_ENTRIES_POS)?,
            data_blocks: u64_at(FOOTER_DATA_BLOCKS_POS)?,
            key_order,
            partitioned: flags & FLAG_PARTITIONED != 0,
            marked_separators: flags & FLAG_MARKED_SEPARATORS != 0,
        })
    }

    /// How the index's entries compare with a sought key.
    pub(crate) fn index_order(&self) -> SeekOrder {
        if self.marked_separators {
            SeekOrder::MarkedSeparators
        } else {
            SeekOrder::Keys(self.key_order)
        }
    }
}

/// Appends the trailer for the block contents already in `buf`.
pub(crate) fn append_trailer(buf: &mut Vec<u8>, block_type: u8) {
    buf.push(block_type);
    let crc = crc32c::crc32c(buf);
    buf.extend_from_slice(&crc.to_le_bytes());
}

/// Reads the block at `handle`, verifies its trailer and returns its uncompressed contents.
/// The caller has checked that the handle lies inside the file.
pub(crate) fn read_block(
    file: &dyn RandomAccessFile,
    path: &Path,
    handle: BlockHandle,
    verify: bool,
) -> Result<Vec<u8>> {
    let total = handle
        .end_with_trailer()
        .filter(|end| *end <= file.len())
        .map(|_| handle.size as usize + BLOCK_TRAILER_LEN)
        .ok_or_else(|| {
            Error::corruption(
                path,
                handle.offset,
                format!(
                    "block of {} bytes runs past the end of the {}-byte file",
                    handle.size,
                    file.len()
                ),
            )
        })?;
    let mut raw = vec![0u8; total];
    file.read_exact_at(&mut raw, handle.offset)
        .map_err(|e| Error::io("reading", path, e))?;
    decode_block(raw, path, handle.offset, verify)
}

/// Verifies and decompresses `raw` = block ‖ trailer read from `offset`.
pub(crate) fn decode_block(
    mut raw: Vec<u8>,
    path: &Path,
    offset: u64,
    verify: bool,
) -> Result<Vec<u8>> {
    let size = raw
        .len()
        .checked_sub(BLOCK_TRAILER_LEN)
        .ok_or_else(|| Error::corruption(path, offset, "block shorter than its trailer"))?;
    let expected = read_u32_le(&raw, size + 1)
        .ok_or_else(|| Error::corruption(path, offset, "block trailer unreadable"))?;
    let covered = raw.get(..=size).unwrap_or_default();
    let block_type = covered.last().copied().unwrap_or(u8::MAX);
    if verify {
        let actual = crc32c::crc32c(covered);
        if actual != expected {
            return Err(Error::ChecksumMismatch {
                file: path.to_path_buf(),
                offset,
                expected,
                actual,
            });
        }
    }
    match block_type {
        BLOCK_TYPE_NONE => {
            raw.truncate(size);
            Ok(raw)
        }
        BLOCK_TYPE_LZ4 => {
            let corrupt = |reason: String| Error::corruption(path, offset, reason);
            let compressed = raw.get(..size).unwrap_or_default();
            let ulen = read_u32_le(compressed, 0)
                .ok_or_else(|| corrupt("lz4 block shorter than its length prefix".into()))?
                as usize;
            let body = compressed.get(4..).unwrap_or_default();
            if ulen > BLOCK_SIZE_MAX || ulen > body.len().saturating_mul(LZ4_EXPANSION_MAX) {
                return Err(corrupt(format!(
                    "lz4 block claims {ulen} uncompressed bytes from {} compressed",
                    body.len()
                )));
            }
            let mut out = vec![0u8; ulen];
            let n = lz4_flex::block::decompress_into(body, &mut out)
                .map_err(|e| corrupt(format!("lz4 decompression failed: {e}")))?;
            if n != ulen {
                return Err(corrupt(format!(
                    "lz4 block decompressed to {n} bytes, expected {ulen}"
                )));
            }
            Ok(out)
        }
        other => Err(Error::corruption(
            path,
            offset,
            format!("unknown block compression type {other}"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn footer() -> Footer {
        Footer {
            index: BlockHandle {
                offset: 100,
                size: 20,
            },
            filter: BlockHandle::default(),
            properties: BlockHandle {
                offset: 125,
                size: 0,
            },
            entries: 7,
            data_blocks: 3,
            key_order: KeyOrder::Bytewise,
            partitioned: false,
            marked_separators: false,
        }
    }

    #[test]
    fn footer_round_trips_and_rejects_every_flipped_byte() {
        let p = Path::new("t.sst");
        let bytes = footer().encode();
        assert_eq!(bytes.len(), FOOTER_LEN);
        assert_eq!(Footer::decode(&bytes, p, 130, true).unwrap(), footer());
        for i in 0..bytes.len() {
            let mut b = bytes.clone();
            b[i] ^= 0x01;
            let err = Footer::decode(&b, p, 130, true).unwrap_err();
            assert!(err.is_corruption(), "byte {i}: {err}");
        }
        // Handles past the blocks are corruption even with a valid checksum.
        assert!(Footer::decode(&bytes, p, 120, true).is_err());
    }

    #[test]
    fn the_flags_round_trip_and_unknown_flags_are_refused() {
        let p = Path::new("t.sst");
        for (partitioned, marked_separators) in [(true, false), (false, true), (true, true)] {
            let flagged = Footer {
                partitioned,
                marked_separators,
                ..footer()
            };
            assert_eq!(
                Footer::decode(&flagged.encode(), p, 130, true).unwrap(),
                flagged
            );
        }
        let bytes = footer().encode();
        // A flag this build does not know, with a valid checksum: refused by name.
        let mut b = bytes;
        b[FOOTER_FLAGS_POS] |= 0x80;
        let crc = crc32c::crc32c(&b[..FOOTER_CRC_POS]);
        b[FOOTER_CRC_POS..FOOTER_CRC_POS + 4].copy_from_slice(&crc.to_le_bytes());
        let err = Footer::decode(&b, p, 130, true).unwrap_err();
        assert!(err.to_string().contains("unknown flags"), "{err}");
    }

    #[test]
    fn lz4_length_claims_are_bounded() {
        let p = Path::new("t.sst");
        let mut raw = Vec::new();
        raw.extend_from_slice(&u32::MAX.to_le_bytes());
        raw.extend_from_slice(&[0x10, 0x61]);
        append_trailer(&mut raw, BLOCK_TYPE_LZ4);
        assert!(decode_block(raw, p, 0, true).unwrap_err().is_corruption());
    }

    proptest! {
        #[test]
        fn arbitrary_footers_and_blocks_never_panic(
            bytes in proptest::collection::vec(any::<u8>(), 0..120),
            verify in any::<bool>(),
        ) {
            let p = Path::new("t.sst");
            let _ = Footer::decode(&bytes, p, 1000, verify);
            let mut fixed = bytes.clone();
            fixed.resize(FOOTER_LEN, 0);
            let _ = Footer::decode(&fixed, p, 1000, verify);
            let _ = decode_block(bytes.clone(), p, 0, verify);
            let mut framed = bytes;
            let ty = framed.first().copied().unwrap_or(0) % 3;
            append_trailer(&mut framed, ty);
            let _ = decode_block(framed, p, 0, verify);
        }
    }
}
