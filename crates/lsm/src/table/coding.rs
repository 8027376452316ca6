//! Little building blocks of the table format: LEB128 varints and fixed-width little-endian
//! integers, encoded into a `Vec` and decoded from untrusted bytes without ever panicking.
//!
//! Every decoder returns `None` when the bytes run out or a varint is overlong or overflows;
//! callers turn that into a corruption error that names the file and offset.
#![deny(clippy::indexing_slicing)]

/// The longest varint encoding of a `u32`.
pub(crate) const VARINT32_MAX_LEN: usize = 5;
/// The longest varint encoding of a `u64`.
pub(crate) const VARINT64_MAX_LEN: usize = 10;

/// Appends `v` as a LEB128 varint.
#[inline]
pub(crate) fn put_varint32(buf: &mut Vec<u8>, v: u32) {
    put_varint64(buf, u64::from(v));
}

/// Appends `v` as a LEB128 varint.
#[inline]
pub(crate) fn put_varint64(buf: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        buf.push((v as u8) | 0x80);
        v >>= 7;
    }
    buf.push(v as u8);
}

/// Decodes a varint `u32` at `pos`; returns the value and the position after it.
/// `None` if the bytes end early, the encoding is longer than 5 bytes, or the value overflows.
#[inline]
pub(crate) fn get_varint32(src: &[u8], pos: usize) -> Option<(u32, usize)> {
    // Fast path: one-byte varints are by far the most common (shared/unshared lengths).
    let first = *src.get(pos)?;
    if first < 0x80 {
        return Some((u32::from(first), pos + 1));
    }
    let mut result: u32 = u32::from(first & 0x7f);
    for i in 1..VARINT32_MAX_LEN {
        let byte = *src.get(pos + i)?;
        let bits = u32::from(byte & 0x7f);
        if i == VARINT32_MAX_LEN - 1 && byte > 0x0f {
            // The fifth byte may carry only the top four bits of a u32.
            return None;
        }
        result |= bits << (7 * i);
        if byte < 0x80 {
            return Some((result, pos + i + 1));
        }
    }
    None
}

/// Decodes a varint `u64` at `pos`; returns the value and the position after it.
/// `None` if the bytes end early, the encoding is longer than 10 bytes, or the value overflows.
#[inline]
pub(crate) fn get_varint64(src: &[u8], pos: usize) -> Option<(u64, usize)> {
    let mut result: u64 = 0;
    for i in 0..VARINT64_MAX_LEN {
        let byte = *src.get(pos.checked_add(i)?)?;
        if i == VARINT64_MAX_LEN - 1 && byte > 0x01 {
            // The tenth byte may carry only the top bit of a u64.
            return None;
        }
        result |= u64::from(byte & 0x7f) << (7 * i);
        if byte < 0x80 {
            return Some((result, pos + i + 1));
        }
    }
    None
}

/// Reads a little-endian `u32` at `pos`.
#[inline]
pub(crate) fn read_u32_le(src: &[u8], pos: usize) -> Option<u32> {
    let bytes = src.get(pos..pos.checked_add(4)?)?;
    Some(u32::from_le_bytes(bytes.try_into().ok()?))
}

/// Reads a little-endian `u64` at `pos`.
#[inline]
pub(crate) fn read_u64_le(src: &[u8], pos: usize) -> Option<u64> {
    let bytes = src.get(pos..pos.checked_add(8)?)?;
    Some(u64::from_le_bytes(bytes.try_into().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn varint32_round_trips(v in any::<u32>()) {
            let mut buf = Vec::new();
            put_varint32(&mut buf, v);
            prop_assert!(buf.len() <= VARINT32_MAX_LEN);
            prop_assert_eq!(get_varint32(&buf, 0), Some((v, buf.len())));
        }

        #[test]
        fn varint64_round_trips(v in any::<u64>()) {
            let mut buf = vec![7u8];
            put_varint64(&mut buf, v);
            prop_assert_eq!(get_varint64(&buf, 1), Some((v, buf.len())));
        }

        #[test]
        fn varint_decoders_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..16),
                                       pos in 0usize..20) {
            let _ = get_varint32(&bytes, pos);
            let _ = get_varint64(&bytes, pos);
            let _ = read_u32_le(&bytes, pos);
            let _ = read_u64_le(&bytes, pos);
        }
    }

    #[test]
    fn overlong_and_overflowing_varints_are_rejected() {
        assert_eq!(get_varint32(&[0x80, 0x80, 0x80, 0x80, 0x10], 0), None);
        assert_eq!(
            get_varint32(&[0xff, 0xff, 0xff, 0xff, 0x0f], 0),
            Some((u32::MAX, 5))
        );
        assert_eq!(get_varint32(&[0x80, 0x80, 0x80, 0x80, 0x80, 0x00], 0), None);
        assert_eq!(get_varint32(&[0x80], 0), None);
        let mut max = vec![0xffu8; 9];
        max.push(0x01);
        assert_eq!(get_varint64(&max, 0), Some((u64::MAX, 10)));
        max[9] = 0x02;
        assert_eq!(get_varint64(&max, 0), None);
        assert_eq!(get_varint64(&[0x80; 11], 0), None);
        assert_eq!(get_varint64(&[], usize::MAX), None);
    }
}
