//! Order-preserving encoding of single CQL values ("components" of a key).
//!
//! For every type, comparing two encodings as unsigned bytes gives Cassandra's order of the
//! values ([`CqlValue::cql_cmp`]), and every encoding is *prefix-free*: no encoding is a
//! proper prefix of another. Prefix-freeness is what makes a concatenation of components
//! compare component by component, and what lets a descending column simply invert every
//! byte of its component (inverting a prefix-free, order-preserving code gives a
//! prefix-free, order-reversing one). `docs/format-rows.md` lists each encoding byte by
//! byte.
//!
//! Values that Cassandra considers equal encode identically: a `decimal` is normalized
//! (`1.0` and `1.00` are one key and decode as `1`), a `varint` is minimal, and a NaN
//! float is canonical (Java's `Float.compare` treats all NaNs as one value). Decoding is
//! strict: any non-canonical encoding is an error, so `encode(decode(b)) == b` whenever
//! decoding succeeds (a `time` outside a day and a `duration` with non-minimal vints are
//! refused too).

use std::cmp::Ordering;

use mosaic_types::value::reorder_timestamp_bytes;
use mosaic_types::{CqlType, CqlValue, DataType, Decimal, DecimalParts, Varint};

use crate::error::KeyError;
use crate::frozen;

/// Sort direction of a clustering column (`WITH CLUSTERING ORDER BY`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Order {
    /// Ascending (the default).
    #[default]
    Asc,
    /// Descending: the component's bytes are inverted.
    Desc,
}

impl Order {
    fn mask(self) -> u8 {
        match self {
            Order::Asc => 0x00,
            Order::Desc => 0xff,
        }
    }
}

/// Appends the order-preserving encoding of `value` to `out`.
pub fn encode_component(out: &mut Vec<u8>, value: &CqlValue, order: Order) {
    let start = out.len();
    encode_asc(out, value);
    if order == Order::Desc {
        if let Some(tail) = out.get_mut(start..) {
            tail.iter_mut().for_each(|b| *b = !*b);
        }
    }
}

/// Decodes one component of type `ty` from the front of `input[*pos..]`, advancing `pos`.
pub fn decode_component(
    input: &[u8],
    pos: &mut usize,
    ty: CqlType,
    order: Order,
) -> Result<CqlValue, KeyError> {
    let mut r = Reader {
        buf: input,
        pos: *pos,
        mask: order.mask(),
        ty,
    };
    let value = decode_asc(&mut r)?;
    *pos = r.pos;
    Ok(value)
}

/// Decodes one component of type `ty` — native, or a frozen collection, tuple or
/// user-defined type (the `frozen` module's encoding) — from the front of `input[*pos..]`, advancing
/// `pos`.
pub fn decode_component_of(
    input: &[u8],
    pos: &mut usize,
    ty: &DataType,
    order: Order,
) -> Result<CqlValue, KeyError> {
    let mut r = Reader {
        buf: input,
        pos: *pos,
        mask: order.mask(),
        ty: CqlType::Blob,
    };
    let value = frozen::decode_typed(&mut r, ty, 0)?;
    *pos = r.pos;
    Ok(value)
}

const SIGN32: u32 = 1 << 31;
const SIGN64: u64 = 1 << 63;

fn float_key32(v: f32) -> u32 {
    // Java's Float.compare sees every NaN as the canonical one.
    let bits = if v.is_nan() { 0x7fc0_0000 } else { v.to_bits() };
    if bits & SIGN32 != 0 {
        !bits
    } else {
        bits | SIGN32
    }
}

fn float_key64(v: f64) -> u64 {
    let bits = if v.is_nan() {
        0x7ff8_0000_0000_0000
    } else {
        v.to_bits()
    };
    if bits & SIGN64 != 0 {
        !bits
    } else {
        bits | SIGN64
    }
}

fn uuid_halves(u: &[u8; 16]) -> (u64, u64) {
    let (hi, lo) = u.split_at(8);
    (
        u64::from_be_bytes(hi.try_into().unwrap_or([0; 8])),
        u64::from_be_bytes(lo.try_into().unwrap_or([0; 8])),
    )
}

fn uuid_from_halves(msb: u64, lsb: u64) -> [u8; 16] {
    let mut out = [0u8; 16];
    let (hi, lo) = out.split_at_mut(8);
    hi.copy_from_slice(&msb.to_be_bytes());
    lo.copy_from_slice(&lsb.to_be_bytes());
    out
}

/// Inverse of [`reorder_timestamp_bytes`].
fn unreorder_timestamp_bytes(r: u64) -> u64 {
    (r << 32) | ((r >> 16) & 0xFFFF_0000) | (r >> 48)
}

/// `UUIDType` order: the version nibble first, then the reordered timestamp for version 1
/// or the rest of the high half (unsigned) otherwise, then the low half (unsigned). This is
/// Cassandra's own byte-comparable form of `UUIDType`.
fn uuid_key(u: &[u8; 16]) -> (u64, u64) {
    let (msb, lsb) = uuid_halves(u);
    let version = (msb >> 12) & 0xf;
    let hi = if version == 1 {
        reorder_timestamp_bytes(msb)
    } else {
        (version << 60) | ((msb >> 4) & 0x0FFF_FFFF_FFFF_F000) | (msb & 0xfff)
    };
    (hi, lsb)
}

fn uuid_from_key(hi: u64, lsb: u64) -> [u8; 16] {
    let version = hi >> 60;
    let msb = if version == 1 {
        unreorder_timestamp_bytes(hi)
    } else {
        ((hi & 0x0FFF_FFFF_FFFF_F000) << 4) | (version << 12) | (hi & 0xfff)
    };
    uuid_from_halves(msb, lsb)
}

/// `TimeUUIDType` order: the reordered timestamp compared as a signed long, then the low
/// half compared as eight signed bytes.
fn timeuuid_key(u: &[u8; 16]) -> (u64, u64) {
    let (msb, lsb) = uuid_halves(u);
    (
        reorder_timestamp_bytes(msb) ^ SIGN64,
        lsb ^ 0x8080_8080_8080_8080,
    )
}

fn timeuuid_from_key(hi: u64, lo: u64) -> [u8; 16] {
    uuid_from_halves(
        unreorder_timestamp_bytes(hi ^ SIGN64),
        lo ^ 0x8080_8080_8080_8080,
    )
}

/// Escaped bytes: `0x00` becomes `0x00 0xFF`, and `0x00 0x00` ends the component, so a
/// string sorts before its extensions and the encoding is prefix-free.
fn encode_escaped(out: &mut Vec<u8>, bytes: &[u8]) {
    for &b in bytes {
        out.push(b);
        if b == 0 {
            out.push(0xff);
        }
    }
    out.extend_from_slice(&[0, 0]);
}

/// Headers of a varint's encoding: zero, and the one-byte length forms.
const VARINT_ZERO: u8 = 0x80;
/// Longest magnitude with a one-byte header.
const VARINT_SHORT_MAX: usize = 126;

/// Sign, length, magnitude: `0x80` is zero; a positive value of L magnitude bytes has
/// header `0x80 + L` (L ≤ 126) or `0xFF` and a 4-byte length, then the magnitude; a
/// negative value has header `0x7F - L` or `0x00` and an inverted 4-byte length, then the
/// inverted magnitude (a larger magnitude sorts lower).
fn encode_varint(out: &mut Vec<u8>, v: &Varint) {
    if v.is_zero() {
        out.push(VARINT_ZERO);
        return;
    }
    let magnitude = v.magnitude_be();
    let len = magnitude.len();
    let negative = v.is_negative();
    let mask = if negative { 0xff } else { 0x00 };
    if len <= VARINT_SHORT_MAX {
        let header = if negative {
            0x7f - len as u8
        } else {
            0x80 + len as u8
        };
        out.push(header);
    } else {
        out.push(if negative { 0x00 } else { 0xff });
        // Saturation is unreachable: a value longer than 4 GiB cannot be in memory twice.
        let len32 = u32::try_from(len).unwrap_or(u32::MAX);
        out.extend(len32.to_be_bytes().iter().map(|b| b ^ mask));
    }
    out.extend(magnitude.iter().map(|b| b ^ mask));
}

/// Sign byte, exponent, digits: `0x01` negative, `0x02` zero (nothing follows), `0x03`
/// positive; then the exponent of the normalized form `0.d₁d₂… × 10^e` as a sign-flipped
/// big-endian i64, then the digits two per byte (`10·a + b + 1`, a lone last digit padded
/// with 0) and a `0x00` terminator. Negative values invert everything after the sign byte.
fn encode_decimal(out: &mut Vec<u8>, d: &Decimal) {
    let parts = d.to_parts();
    if parts.digits.is_empty() {
        out.push(0x02);
        return;
    }
    let mask = if parts.negative { 0xff } else { 0x00 };
    out.push(if parts.negative { 0x01 } else { 0x03 });
    let exponent = (parts.exponent as u64) ^ SIGN64;
    out.extend(exponent.to_be_bytes().iter().map(|b| b ^ mask));
    for pair in parts.digits.chunks(2) {
        let hi = pair.first().copied().unwrap_or(0);
        let lo = pair.get(1).copied().unwrap_or(0);
        out.push((hi * 10 + lo + 1) ^ mask);
    }
    out.push(mask);
}

pub(crate) fn encode_asc(out: &mut Vec<u8>, value: &CqlValue) {
    match value {
        CqlValue::Ascii(s) | CqlValue::Text(s) => encode_escaped(out, s.as_bytes()),
        CqlValue::Blob(b) => encode_escaped(out, b),
        CqlValue::Boolean(b) => out.push(u8::from(*b)),
        CqlValue::TinyInt(v) => out.push((*v as u8) ^ 0x80),
        CqlValue::SmallInt(v) => out.extend_from_slice(&((*v as u16) ^ 0x8000).to_be_bytes()),
        CqlValue::Int(v) => out.extend_from_slice(&((*v as u32) ^ SIGN32).to_be_bytes()),
        CqlValue::BigInt(v) | CqlValue::Timestamp(v) | CqlValue::Time(v) => {
            out.extend_from_slice(&((*v as u64) ^ SIGN64).to_be_bytes())
        }
        CqlValue::Float(v) => out.extend_from_slice(&float_key32(*v).to_be_bytes()),
        CqlValue::Double(v) => out.extend_from_slice(&float_key64(*v).to_be_bytes()),
        CqlValue::Date(v) => out.extend_from_slice(&v.to_be_bytes()),
        CqlValue::Uuid(u) => {
            let (hi, lo) = uuid_key(u);
            out.extend_from_slice(&hi.to_be_bytes());
            out.extend_from_slice(&lo.to_be_bytes());
        }
        CqlValue::TimeUuid(u) => {
            let (hi, lo) = timeuuid_key(u);
            out.extend_from_slice(&hi.to_be_bytes());
            out.extend_from_slice(&lo.to_be_bytes());
        }
        CqlValue::Varint(v) => encode_varint(out, v),
        CqlValue::Decimal(d) => encode_decimal(out, d),
        // Byte-ordered types (`InetAddressType`, `DurationType`): their serialized bytes,
        // escaped. A duration is never part of a CQL primary key, but every value encodes.
        CqlValue::Inet(_) | CqlValue::Duration(_) => encode_escaped(out, &value.to_cql_bytes()),
        // Frozen collections, tuples and user-defined types: structurally (`crate::frozen`).
        CqlValue::List(items) => frozen::encode_elements(out, items, false),
        CqlValue::Set(items) => frozen::encode_elements(out, items, true),
        CqlValue::Map(entries) => frozen::encode_entries(out, entries),
        CqlValue::Tuple(fields) => frozen::encode_fields(out, fields),
        // Types added to `mosaic-types` later sort by their serialized bytes until they get
        // an encoding of their own.
        other => encode_escaped(out, &other.to_cql_bytes()),
    }
}

/// Reads a component's bytes, undoing a descending column's inversion.
pub(crate) struct Reader<'a> {
    buf: &'a [u8],
    pub(crate) pos: usize,
    mask: u8,
    /// The native type being read (named in errors).
    pub(crate) ty: CqlType,
}

impl Reader<'_> {
    /// Compares two spans already read, as ascending encodings (undoing the inversion).
    pub(crate) fn span_cmp(&self, a: (usize, usize), b: (usize, usize)) -> Ordering {
        let span = |(start, end): (usize, usize)| self.buf.get(start..end).unwrap_or_default();
        let ord = span(a).cmp(span(b));
        if self.mask == 0 {
            ord
        } else {
            ord.reverse()
        }
    }

    pub(crate) fn byte(&mut self) -> Result<u8, KeyError> {
        let b = self
            .buf
            .get(self.pos)
            .ok_or(KeyError::Truncated { offset: self.pos })?;
        self.pos += 1;
        Ok(b ^ self.mask)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], KeyError> {
        let mut out = [0u8; N];
        for b in out.iter_mut() {
            *b = self.byte()?;
        }
        Ok(out)
    }

    fn bad(&self, reason: &'static str) -> KeyError {
        KeyError::BadComponent {
            ty: self.ty,
            offset: self.pos,
            reason,
        }
    }

    fn escaped(&mut self) -> Result<Vec<u8>, KeyError> {
        let mut out = Vec::new();
        loop {
            match self.byte()? {
                0 => match self.byte()? {
                    0 => return Ok(out),
                    0xff => out.push(0),
                    _ => return Err(self.bad("0x00 must be followed by 0x00 or 0xFF")),
                },
                b => out.push(b),
            }
        }
    }

    fn bytes(&mut self, len: usize) -> Result<Vec<u8>, KeyError> {
        let end = self
            .pos
            .checked_add(len)
            .filter(|&end| end <= self.buf.len())
            .ok_or(KeyError::Truncated {
                offset: self.buf.len(),
            })?;
        let slice = self.buf.get(self.pos..end).unwrap_or_default();
        self.pos = end;
        Ok(slice.iter().map(|b| b ^ self.mask).collect())
    }
}

pub(crate) fn decode_asc(r: &mut Reader<'_>) -> Result<CqlValue, KeyError> {
    let value = match r.ty {
        CqlType::Ascii => {
            let bytes = r.escaped()?;
            if !bytes.is_ascii() {
                return Err(r.bad("non-ASCII byte"));
            }
            CqlValue::Ascii(String::from_utf8(bytes).map_err(|_| r.bad("non-ASCII byte"))?)
        }
        CqlType::Text => {
            CqlValue::Text(String::from_utf8(r.escaped()?).map_err(|_| r.bad("invalid UTF-8"))?)
        }
        CqlType::Blob => CqlValue::Blob(r.escaped()?),
        CqlType::Boolean => match r.byte()? {
            0 => CqlValue::Boolean(false),
            1 => CqlValue::Boolean(true),
            _ => return Err(r.bad("boolean byte must be 0 or 1")),
        },
        CqlType::TinyInt => CqlValue::TinyInt((r.byte()? ^ 0x80) as i8),
        CqlType::SmallInt => CqlValue::SmallInt((u16::from_be_bytes(r.array()?) ^ 0x8000) as i16),
        CqlType::Int => CqlValue::Int((u32::from_be_bytes(r.array()?) ^ SIGN32) as i32),
        CqlType::BigInt => CqlValue::BigInt((u64::from_be_bytes(r.array()?) ^ SIGN64) as i64),
        CqlType::Timestamp => CqlValue::Timestamp((u64::from_be_bytes(r.array()?) ^ SIGN64) as i64),
        CqlType::Float => {
            let k = u32::from_be_bytes(r.array()?);
            let bits = if k & SIGN32 != 0 { k ^ SIGN32 } else { !k };
            let v = f32::from_bits(bits);
            if v.is_nan() && bits != 0x7fc0_0000 {
                return Err(r.bad("non-canonical NaN"));
            }
            CqlValue::Float(v)
        }
        CqlType::Double => {
            let k = u64::from_be_bytes(r.array()?);
            let bits = if k & SIGN64 != 0 { k ^ SIGN64 } else { !k };
            let v = f64::from_bits(bits);
            if v.is_nan() && bits != 0x7ff8_0000_0000_0000 {
                return Err(r.bad("non-canonical NaN"));
            }
            CqlValue::Double(v)
        }
        CqlType::Date => CqlValue::Date(u32::from_be_bytes(r.array()?)),
        CqlType::Uuid => {
            let hi = u64::from_be_bytes(r.array()?);
            let lo = u64::from_be_bytes(r.array()?);
            CqlValue::Uuid(uuid_from_key(hi, lo))
        }
        CqlType::TimeUuid => {
            let hi = u64::from_be_bytes(r.array()?);
            let lo = u64::from_be_bytes(r.array()?);
            CqlValue::TimeUuid(timeuuid_from_key(hi, lo))
        }
        CqlType::Varint => CqlValue::Varint(decode_varint(r)?),
        CqlType::Decimal => CqlValue::Decimal(decode_decimal(r)?),
        CqlType::Time => {
            let nanos = (u64::from_be_bytes(r.array()?) ^ SIGN64) as i64;
            CqlValue::from_cql_bytes(CqlType::Time, &nanos.to_be_bytes())
                .map_err(|_| r.bad("time outside a day"))?
        }
        ty @ (CqlType::Inet | CqlType::Duration) => {
            let bytes = r.escaped()?;
            let value = CqlValue::from_cql_bytes(ty, &bytes)
                .map_err(|_| r.bad("invalid serialized value"))?;
            // A duration decodes from non-minimal vints too; only the canonical bytes are its key.
            if value.to_cql_bytes() != bytes {
                return Err(r.bad("non-canonical serialized value"));
            }
            value
        }
        ty => {
            let bytes = r.escaped()?;
            CqlValue::from_cql_bytes(ty, &bytes).map_err(|_| r.bad("invalid serialized value"))?
        }
    };
    Ok(value)
}

fn decode_varint(r: &mut Reader<'_>) -> Result<Varint, KeyError> {
    let header = r.byte()?;
    if header == VARINT_ZERO {
        return Ok(Varint::zero());
    }
    let negative = header < VARINT_ZERO;
    let len = match header {
        0x00 | 0xff => {
            let mut len = u32::from_be_bytes(r.array()?);
            if negative {
                len = !len;
            }
            let len = len as usize;
            if len <= VARINT_SHORT_MAX {
                return Err(r.bad("long length form for a short varint"));
            }
            len
        }
        h if negative => usize::from(0x7f - h),
        h => usize::from(h - 0x80),
    };
    let mut magnitude = r.bytes(len)?;
    if negative {
        magnitude.iter_mut().for_each(|b| *b = !*b);
    }
    if magnitude.first().is_none_or(|&b| b == 0) {
        return Err(r.bad("varint magnitude is empty or has a leading zero"));
    }
    Ok(Varint::from_sign_magnitude(negative, &magnitude))
}

fn decode_decimal(r: &mut Reader<'_>) -> Result<Decimal, KeyError> {
    let negative = match r.byte()? {
        0x02 => return Ok(Decimal::new(Varint::zero(), 0)),
        0x01 => true,
        0x03 => false,
        _ => return Err(r.bad("decimal sign byte must be 1, 2 or 3")),
    };
    let flip = if negative { 0xff } else { 0x00 };
    let mut exp = r.array::<8>()?;
    exp.iter_mut().for_each(|b| *b ^= flip);
    let exponent = (u64::from_be_bytes(exp) ^ SIGN64) as i64;
    let mut digits = Vec::new();
    loop {
        match r.byte()? ^ flip {
            0 => break,
            b @ 1..=100 => {
                let pair = b - 1;
                digits.push(pair / 10);
                digits.push(pair % 10);
            }
            _ => return Err(r.bad("decimal digit byte out of range")),
        }
    }
    // A lone last digit was padded with a zero; the digits themselves never end in zero.
    if digits.last() == Some(&0) {
        digits.pop();
    }
    if digits.first().is_none_or(|&d| d == 0) || digits.last() == Some(&0) {
        return Err(r.bad("decimal digits are not normalized"));
    }
    Decimal::from_parts(&DecimalParts {
        negative,
        digits,
        exponent,
    })
    .map_err(|_| r.bad("decimal scale out of range"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn enc(v: &CqlValue, order: Order) -> Vec<u8> {
        let mut out = Vec::new();
        encode_component(&mut out, v, order);
        out
    }

    #[test]
    fn strings_escape_zero_and_end_with_a_double_zero() {
        let v = CqlValue::Blob(vec![b'a', 0, 0xff]);
        assert_eq!(enc(&v, Order::Asc), [b'a', 0, 0xff, 0xff, 0, 0]);
        assert_eq!(enc(&v, Order::Desc), [!b'a', 0xff, 0, 0, 0xff, 0xff]);
    }

    #[test]
    fn integers_flip_the_sign_bit() {
        assert_eq!(
            enc(&CqlValue::Int(-1), Order::Asc),
            [0x7f, 0xff, 0xff, 0xff]
        );
        assert_eq!(enc(&CqlValue::Int(0), Order::Asc), [0x80, 0, 0, 0]);
        assert_eq!(enc(&CqlValue::TinyInt(i8::MIN), Order::Asc), [0]);
    }

    #[test]
    fn varints_and_decimals_have_documented_bytes() {
        let v = |x: i64| CqlValue::Varint(Varint::from(x));
        assert_eq!(enc(&v(0), Order::Asc), [0x80]);
        assert_eq!(enc(&v(1), Order::Asc), [0x81, 0x01]);
        assert_eq!(enc(&v(256), Order::Asc), [0x82, 0x01, 0x00]);
        assert_eq!(enc(&v(-1), Order::Asc), [0x7e, 0xfe]);
        let d = |u: i64, s: i32| CqlValue::Decimal(Decimal::new(Varint::from(u), s));
        // 12.5 = 0.125 × 10^2: exponent 2, digits "12" "5" → 13, 51.
        assert_eq!(
            enc(&d(125, 1), Order::Asc),
            [0x03, 0x80, 0, 0, 0, 0, 0, 0, 2, 13, 51, 0]
        );
        assert_eq!(enc(&d(0, 5), Order::Asc), [0x02]);
        assert_eq!(enc(&d(1250, 2), Order::Asc), enc(&d(125, 1), Order::Asc));
    }

    #[test]
    fn inet_time_and_duration_have_documented_bytes() {
        let ip = |s: &str| CqlValue::Inet(s.parse().unwrap());
        // Zero bytes are escaped as in blobs.
        assert_eq!(
            enc(&ip("10.0.0.1"), Order::Asc),
            [10, 0, 0xff, 0, 0xff, 1, 0, 0]
        );
        assert_eq!(
            enc(&ip("10.0.0.1"), Order::Desc),
            [!10, 0xff, 0, 0xff, 0, !1, 0xff, 0xff]
        );
        let mut v6 = [0u8, 0xff].repeat(15);
        v6.extend_from_slice(&[1, 0, 0]);
        assert_eq!(enc(&ip("::1"), Order::Asc), v6);
        assert_eq!(
            enc(&CqlValue::Time(1), Order::Asc),
            [0x80, 0, 0, 0, 0, 0, 0, 1]
        );
        let d = CqlValue::Duration(mosaic_types::CqlDuration::new(0, 1, 0).unwrap());
        assert_eq!(enc(&d, Order::Asc), [0, 0xff, 2, 0, 0xff, 0, 0]);
    }

    #[test]
    fn non_canonical_components_are_rejected() {
        let decode = |bytes: &[u8], ty| decode_component(bytes, &mut 0, ty, Order::Asc);
        assert!(decode(&[b'a', 0, 1], CqlType::Blob).is_err());
        assert!(decode(&[b'a', 0], CqlType::Blob).is_err());
        assert!(decode(&[2], CqlType::Boolean).is_err());
        assert!(decode(&[0x82, 0x00, 0x01], CqlType::Varint).is_err());
        assert!(decode(&[0xff, 0, 0, 0, 1, 1], CqlType::Varint).is_err());
        assert!(decode(&[0x03, 0x80, 0, 0, 0, 0, 0, 0, 1, 1, 0], CqlType::Decimal).is_err());
        assert!(decode(&[0x03, 0x80, 0, 0, 0, 0, 0, 0, 1, 0], CqlType::Decimal).is_err());
        assert!(decode(&[0xc3, 0x28, 0, 0], CqlType::Text).is_err());
        assert!(decode(&[0xff, 0xc0, 0, 1], CqlType::Float).is_err());
        assert!(decode(&[1, 2, 3, 0, 0], CqlType::Inet).is_err());
        // Time outside a day: -1 and one day.
        assert!(decode(
            &[0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff],
            CqlType::Time
        )
        .is_err());
        let day = (86_400_000_000_000u64 ^ (1 << 63)).to_be_bytes();
        assert!(decode(&day, CqlType::Time).is_err());
        // A duration of 1 month with a non-minimal first vint (0x80 0x02).
        assert!(decode(&[0x80, 2, 0, 0xff, 0, 0xff, 0, 0], CqlType::Duration).is_err());
        assert!(decode(&[2, 0, 0xff, 3, 0, 0], CqlType::Duration).is_err());
    }
}
