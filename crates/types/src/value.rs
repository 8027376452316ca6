//! CQL values: Rust values for each [`CqlType`], their native-protocol serialization and
//! Cassandra's ordering of them.
//!
//! `to_cql_bytes`/`from_cql_bytes` produce and accept exactly what Cassandra's v4 native
//! protocol puts in a `[bytes]` cell for each type (the length prefix is the caller's).
//! Null is not a value here: callers use `Option<CqlValue>`. Unlike Cassandra, the empty
//! byte string is rejected for every fixed-size type and for varint/decimal/inet/duration
//! (Cassandra accepts it as an "empty value", a legacy Thrift-era quirk no driver produces by
//! default). Two more values Cassandra stores but no driver can read back are refused too:
//! a `time` outside a day, and a `duration` with bytes after its third vint.

use std::cmp::Ordering;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use crate::cql_type::CqlType;
use crate::data_type::{write_bytes, write_collection};
use crate::duration::{CqlDuration, DurationError};
use crate::inet::inet_octets;
use crate::number::{Decimal, Varint};
use crate::time_of_day::NANOS_PER_DAY;

/// A non-null CQL value.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum CqlValue {
    /// `ascii`; the string holds only 7-bit characters.
    Ascii(String),
    /// `text`/`varchar`.
    Text(String),
    /// `blob`.
    Blob(Vec<u8>),
    /// `boolean`.
    Boolean(bool),
    /// `int`.
    Int(i32),
    /// `bigint`.
    BigInt(i64),
    /// `smallint`.
    SmallInt(i16),
    /// `tinyint`.
    TinyInt(i8),
    /// `float`.
    Float(f32),
    /// `double`.
    Double(f64),
    /// `timestamp`: milliseconds since the Unix epoch.
    Timestamp(i64),
    /// `date`: days with 2^31 at the Unix epoch (so 1970-01-01 is `0x8000_0000`).
    Date(u32),
    /// `uuid`, in RFC 4122 byte order.
    Uuid([u8; 16]),
    /// `timeuuid` (version 1), in RFC 4122 byte order.
    TimeUuid([u8; 16]),
    /// `varint`.
    Varint(Varint),
    /// `decimal`.
    Decimal(Decimal),
    /// `inet`: IPv4 or IPv6, kept as given (a 16-byte IPv4-mapped address stays IPv6).
    Inet(IpAddr),
    /// `time`: nanoseconds since midnight, `0..NANOS_PER_DAY`.
    Time(i64),
    /// `duration`.
    Duration(CqlDuration),
    /// `list<T>` (frozen or not): elements in list order.
    List(Vec<CqlValue>),
    /// `set<T>`: elements in their type's order, without duplicates
    /// ([`crate::data_type::normalize_set`]).
    Set(Vec<CqlValue>),
    /// `map<K, V>`: entries by key in the key type's order, keys unique
    /// ([`crate::data_type::normalize_map`]).
    Map(Vec<(CqlValue, CqlValue)>),
    /// `tuple<…>`: one entry per field, `None` for a null field.
    Tuple(Vec<Option<CqlValue>>),
}

/// The `date` value of the Unix epoch.
pub const DATE_EPOCH: u32 = 1 << 31;

/// Why bytes are not a valid serialization of a CQL type.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ValueError {
    /// A fixed-size type with the wrong number of bytes.
    #[error("a {ty} value is {expected} bytes, got {actual}")]
    WrongLength {
        /// The type being decoded.
        ty: CqlType,
        /// Its fixed size.
        expected: usize,
        /// The size given.
        actual: usize,
    },
    /// A variable-size type with fewer bytes than its smallest encoding.
    #[error("a {ty} value needs at least {min} bytes, got {actual}")]
    TooShort {
        /// The type being decoded.
        ty: CqlType,
        /// The smallest valid size.
        min: usize,
        /// The size given.
        actual: usize,
    },
    /// An `ascii` value with a byte ≥ 0x80.
    #[error("ascii value has byte {byte:#04x} at offset {offset}")]
    NotAscii {
        /// Offset of the first bad byte.
        offset: usize,
        /// The byte.
        byte: u8,
    },
    /// A `text` value that is not UTF-8.
    #[error("text value is not valid UTF-8 after byte {valid_up_to}")]
    InvalidUtf8 {
        /// Length of the valid prefix.
        valid_up_to: usize,
    },
    /// A `timeuuid` that is not a version 1 UUID.
    #[error("a timeuuid must be a version 1 UUID, got version {version}")]
    NotTimeUuid {
        /// The version nibble found.
        version: u8,
    },
    /// An `inet` that is neither 4 nor 16 bytes.
    #[error("Expected 4 or 16 byte inetaddress; got {actual} bytes")]
    InetLength {
        /// The size given.
        actual: usize,
    },
    /// A `time` outside `0..86_400_000_000_000`.
    #[error("a time value must be nanoseconds within a day (0 to 86399999999999), got {nanos}")]
    TimeOutOfRange {
        /// The nanoseconds given.
        nanos: i64,
    },
    /// A `duration` that is not three vints of one sign.
    #[error(transparent)]
    Duration(#[from] DurationError),
    /// A malformed collection or tuple, or a value of another shape than its type.
    #[error("invalid {ty} value: {reason}")]
    Malformed {
        /// The type being decoded (its CQL name).
        ty: String,
        /// What is wrong.
        reason: &'static str,
    },
    /// A value of one type where another was expected.
    #[error("expected a {expected} value, got a {actual} value")]
    TypeMismatch {
        /// The type expected.
        expected: CqlType,
        /// The value's type.
        actual: CqlType,
    },
}

/// The version nibble of a UUID in RFC 4122 byte order.
pub fn uuid_version(uuid: &[u8; 16]) -> u8 {
    uuid[6] >> 4
}

impl CqlValue {
    /// The value's native type (`None` for collections and tuples).
    pub fn native_type(&self) -> Option<CqlType> {
        Some(match self {
            CqlValue::Ascii(_) => CqlType::Ascii,
            CqlValue::Text(_) => CqlType::Text,
            CqlValue::Blob(_) => CqlType::Blob,
            CqlValue::Boolean(_) => CqlType::Boolean,
            CqlValue::Int(_) => CqlType::Int,
            CqlValue::BigInt(_) => CqlType::BigInt,
            CqlValue::SmallInt(_) => CqlType::SmallInt,
            CqlValue::TinyInt(_) => CqlType::TinyInt,
            CqlValue::Float(_) => CqlType::Float,
            CqlValue::Double(_) => CqlType::Double,
            CqlValue::Timestamp(_) => CqlType::Timestamp,
            CqlValue::Date(_) => CqlType::Date,
            CqlValue::Uuid(_) => CqlType::Uuid,
            CqlValue::TimeUuid(_) => CqlType::TimeUuid,
            CqlValue::Varint(_) => CqlType::Varint,
            CqlValue::Decimal(_) => CqlType::Decimal,
            CqlValue::Inet(_) => CqlType::Inet,
            CqlValue::Time(_) => CqlType::Time,
            CqlValue::Duration(_) => CqlType::Duration,
            CqlValue::List(_) | CqlValue::Set(_) | CqlValue::Map(_) | CqlValue::Tuple(_) => {
                return None
            }
        })
    }

    /// Checks that the value is of native type `ty`.
    pub fn check_type(&self, ty: CqlType) -> Result<(), ValueError> {
        match self.native_type() {
            Some(actual) if actual == ty => Ok(()),
            Some(actual) => Err(ValueError::TypeMismatch {
                expected: ty,
                actual,
            }),
            None => Err(ValueError::Malformed {
                ty: ty.to_string(),
                reason: "a collection or tuple where a native value was expected",
            }),
        }
    }

    /// Appends the native-protocol serialization of the value to `out`.
    pub fn write_cql_bytes(&self, out: &mut Vec<u8>) {
        match self {
            CqlValue::Ascii(s) | CqlValue::Text(s) => out.extend_from_slice(s.as_bytes()),
            CqlValue::Blob(b) => out.extend_from_slice(b),
            CqlValue::Boolean(b) => out.push(u8::from(*b)),
            CqlValue::Int(v) => out.extend_from_slice(&v.to_be_bytes()),
            CqlValue::BigInt(v) | CqlValue::Timestamp(v) | CqlValue::Time(v) => {
                out.extend_from_slice(&v.to_be_bytes())
            }
            CqlValue::SmallInt(v) => out.extend_from_slice(&v.to_be_bytes()),
            CqlValue::TinyInt(v) => out.extend_from_slice(&v.to_be_bytes()),
            CqlValue::Float(v) => out.extend_from_slice(&v.to_be_bytes()),
            CqlValue::Double(v) => out.extend_from_slice(&v.to_be_bytes()),
            CqlValue::Date(v) => out.extend_from_slice(&v.to_be_bytes()),
            CqlValue::Uuid(u) | CqlValue::TimeUuid(u) => out.extend_from_slice(u),
            CqlValue::Varint(v) => out.extend_from_slice(v.as_be_bytes()),
            CqlValue::Decimal(d) => {
                out.extend_from_slice(&d.scale.to_be_bytes());
                out.extend_from_slice(d.unscaled.as_be_bytes());
            }
            CqlValue::Inet(a) => out.extend_from_slice(&inet_octets(a)),
            CqlValue::Duration(d) => d.write_cql_bytes(out),
            CqlValue::List(items) | CqlValue::Set(items) => {
                write_collection(out, items.len(), items.iter())
            }
            CqlValue::Map(entries) => {
                write_collection(out, entries.len(), entries.iter().flat_map(|(k, v)| [k, v]))
            }
            CqlValue::Tuple(fields) => {
                for field in fields {
                    write_bytes(out, field.as_ref());
                }
            }
        }
    }

    /// The native-protocol serialization of the value.
    pub fn to_cql_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        self.write_cql_bytes(&mut out);
        out
    }

    /// Decodes the native-protocol serialization of a `ty` value, validating it as
    /// Cassandra does.
    pub fn from_cql_bytes(ty: CqlType, bytes: &[u8]) -> Result<CqlValue, ValueError> {
        if let Some(expected) = ty.fixed_len() {
            if bytes.len() != expected {
                return Err(ValueError::WrongLength {
                    ty,
                    expected,
                    actual: bytes.len(),
                });
            }
        }
        let value = match ty {
            CqlType::Ascii => {
                if let Some(offset) = bytes.iter().position(|b| !b.is_ascii()) {
                    let byte = bytes.get(offset).copied().unwrap_or_default();
                    return Err(ValueError::NotAscii { offset, byte });
                }
                CqlValue::Ascii(utf8(bytes)?)
            }
            CqlType::Text => CqlValue::Text(utf8(bytes)?),
            CqlType::Blob => CqlValue::Blob(bytes.to_vec()),
            CqlType::Boolean => CqlValue::Boolean(bytes != [0]),
            CqlType::Int => CqlValue::Int(i32::from_be_bytes(fixed(bytes))),
            CqlType::BigInt => CqlValue::BigInt(i64::from_be_bytes(fixed(bytes))),
            CqlType::SmallInt => CqlValue::SmallInt(i16::from_be_bytes(fixed(bytes))),
            CqlType::TinyInt => CqlValue::TinyInt(i8::from_be_bytes(fixed(bytes))),
            CqlType::Float => CqlValue::Float(f32::from_be_bytes(fixed(bytes))),
            CqlType::Double => CqlValue::Double(f64::from_be_bytes(fixed(bytes))),
            CqlType::Timestamp => CqlValue::Timestamp(i64::from_be_bytes(fixed(bytes))),
            CqlType::Date => CqlValue::Date(u32::from_be_bytes(fixed(bytes))),
            CqlType::Uuid => CqlValue::Uuid(fixed(bytes)),
            CqlType::TimeUuid => {
                let uuid = fixed(bytes);
                let version = uuid_version(&uuid);
                if version != 1 {
                    return Err(ValueError::NotTimeUuid { version });
                }
                CqlValue::TimeUuid(uuid)
            }
            CqlType::Varint => CqlValue::Varint(Varint::from_be_bytes(bytes).map_err(|_| {
                ValueError::TooShort {
                    ty,
                    min: 1,
                    actual: 0,
                }
            })?),
            CqlType::Decimal => {
                let too_short = ValueError::TooShort {
                    ty,
                    min: 5,
                    actual: bytes.len(),
                };
                let (scale, unscaled) = match (bytes.get(..4), bytes.get(4..)) {
                    (Some(scale), Some(unscaled)) if !unscaled.is_empty() => (scale, unscaled),
                    _ => return Err(too_short),
                };
                let unscaled = Varint::from_be_bytes(unscaled).map_err(|_| too_short)?;
                CqlValue::Decimal(Decimal::new(unscaled, i32::from_be_bytes(fixed(scale))))
            }
            CqlType::Inet => CqlValue::Inet(match bytes.len() {
                4 => IpAddr::V4(Ipv4Addr::from(fixed::<4>(bytes))),
                16 => IpAddr::V6(Ipv6Addr::from(fixed::<16>(bytes))),
                actual => return Err(ValueError::InetLength { actual }),
            }),
            CqlType::Time => {
                let nanos = i64::from_be_bytes(fixed(bytes));
                if !(0..NANOS_PER_DAY).contains(&nanos) {
                    return Err(ValueError::TimeOutOfRange { nanos });
                }
                CqlValue::Time(nanos)
            }
            CqlType::Duration => CqlValue::Duration(CqlDuration::from_cql_bytes(bytes)?),
        };
        Ok(value)
    }

    /// Compares two values as Cassandra orders them in clustering columns (`None` when the
    /// types differ).
    ///
    /// Text and blobs compare as unsigned bytes; numbers numerically (`varint` and
    /// `decimal` too, so `1.0` equals `1.00`); floats as Java's `Float.compare` (`-0.0 <
    /// 0.0`, NaN above everything and equal to itself); `date` unsigned; `uuid` as
    /// `UUIDType` (version, then the timestamp for version 1, then unsigned bytes) and
    /// `timeuuid` as `TimeUUIDType` (timestamp, then the last 8 bytes as signed bytes);
    /// `inet` and `duration` as their serialized bytes, unsigned (Cassandra's byte-ordered
    /// `InetAddressType` and `DurationType`: an IPv4 address sorts by its 4 bytes against the
    /// first 4 of an IPv6 one, and before it when those are equal); `time` as a signed long.
    pub fn cql_cmp(&self, other: &CqlValue) -> Option<Ordering> {
        use CqlValue as V;
        let ord = match (self, other) {
            (V::Ascii(a), V::Ascii(b)) | (V::Text(a), V::Text(b)) => a.as_bytes().cmp(b.as_bytes()),
            (V::Blob(a), V::Blob(b)) => a.cmp(b),
            (V::Boolean(a), V::Boolean(b)) => a.cmp(b),
            (V::Int(a), V::Int(b)) => a.cmp(b),
            (V::BigInt(a), V::BigInt(b)) | (V::Timestamp(a), V::Timestamp(b)) => a.cmp(b),
            (V::SmallInt(a), V::SmallInt(b)) => a.cmp(b),
            (V::TinyInt(a), V::TinyInt(b)) => a.cmp(b),
            (V::Float(a), V::Float(b)) => java_float_cmp(f64::from(*a), f64::from(*b)),
            (V::Double(a), V::Double(b)) => java_float_cmp(*a, *b),
            (V::Date(a), V::Date(b)) => a.cmp(b),
            (V::Uuid(a), V::Uuid(b)) => uuid_cmp(a, b),
            (V::TimeUuid(a), V::TimeUuid(b)) => timeuuid_cmp(a, b),
            (V::Varint(a), V::Varint(b)) => a.cmp(b),
            (V::Decimal(a), V::Decimal(b)) => a.numeric_cmp(b),
            (V::Inet(a), V::Inet(b)) => inet_octets(a).cmp(&inet_octets(b)),
            (V::Time(a), V::Time(b)) => a.cmp(b),
            (V::Duration(_), V::Duration(_)) => self.to_cql_bytes().cmp(&other.to_cql_bytes()),
            (V::List(a), V::List(b)) | (V::Set(a), V::Set(b)) => {
                for (x, y) in a.iter().zip(b) {
                    match x.cql_cmp(y)? {
                        Ordering::Equal => {}
                        other => return Some(other),
                    }
                }
                a.len().cmp(&b.len())
            }
            (V::Map(a), V::Map(b)) => {
                for ((ka, va), (kb, vb)) in a.iter().zip(b) {
                    match ka.cql_cmp(kb)?.then(va.cql_cmp(vb)?) {
                        Ordering::Equal => {}
                        other => return Some(other),
                    }
                }
                a.len().cmp(&b.len())
            }
            (V::Tuple(a), V::Tuple(b)) => {
                for (x, y) in a.iter().zip(b) {
                    let ord = match (x, y) {
                        (None, None) => Ordering::Equal,
                        (None, Some(_)) => Ordering::Less,
                        (Some(_), None) => Ordering::Greater,
                        (Some(x), Some(y)) => x.cql_cmp(y)?,
                    };
                    if ord != Ordering::Equal {
                        return Some(ord);
                    }
                }
                a.len().cmp(&b.len())
            }
            _ => return None,
        };
        Some(ord)
    }
}

fn utf8(bytes: &[u8]) -> Result<String, ValueError> {
    std::str::from_utf8(bytes)
        .map(str::to_owned)
        .map_err(|e| ValueError::InvalidUtf8 {
            valid_up_to: e.valid_up_to(),
        })
}

/// The bytes as an array; callers have checked the length (a mismatch gives zeros, never a
/// panic).
fn fixed<const N: usize>(bytes: &[u8]) -> [u8; N] {
    bytes.try_into().unwrap_or([0; N])
}

/// Java's `Double.compare` (floats widen exactly, so `Float.compare` agrees).
fn java_float_cmp(a: f64, b: f64) -> Ordering {
    match (a.is_nan(), b.is_nan()) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
        (false, false) => a.total_cmp(&b),
    }
}

/// The 60-bit timestamp of a version 1 UUID's most significant half, moved to the top
/// (Cassandra's `TimeUUIDType.reorderTimestampBytes`): `time_hi_and_version ‖ time_mid ‖
/// time_low`.
pub fn reorder_timestamp_bytes(msb: u64) -> u64 {
    (msb << 48) | ((msb << 16) & 0xFFFF_0000_0000) | (msb >> 32)
}

fn halves(u: &[u8; 16]) -> (u64, u64) {
    let (hi, lo) = u.split_at(8);
    (
        u64::from_be_bytes(hi.try_into().unwrap_or([0; 8])),
        u64::from_be_bytes(lo.try_into().unwrap_or([0; 8])),
    )
}

fn uuid_cmp(a: &[u8; 16], b: &[u8; 16]) -> Ordering {
    let (va, vb) = (uuid_version(a), uuid_version(b));
    if va != vb {
        return va.cmp(&vb);
    }
    let ((ma, la), (mb, lb)) = (halves(a), halves(b));
    let msb = if va == 1 {
        reorder_timestamp_bytes(ma).cmp(&reorder_timestamp_bytes(mb))
    } else {
        ma.cmp(&mb)
    };
    msb.then(la.cmp(&lb))
}

fn timeuuid_cmp(a: &[u8; 16], b: &[u8; 16]) -> Ordering {
    let ((ma, la), (mb, lb)) = (halves(a), halves(b));
    // Signed comparison of the reordered timestamps, then byte-by-byte signed comparison
    // of the low half (for compatibility, Cassandra compares those bytes as Java bytes).
    let msb = (reorder_timestamp_bytes(ma) as i64).cmp(&(reorder_timestamp_bytes(mb) as i64));
    let signed = |x: u64| x ^ 0x8080_8080_8080_8080;
    msb.then(signed(la).cmp(&signed(lb)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn fixed_size_types_are_big_endian() {
        assert_eq!(CqlValue::Int(-2).to_cql_bytes(), [0xff, 0xff, 0xff, 0xfe]);
        assert_eq!(CqlValue::SmallInt(258).to_cql_bytes(), [1, 2]);
        assert_eq!(CqlValue::TinyInt(-1).to_cql_bytes(), [0xff]);
        assert_eq!(CqlValue::BigInt(1).to_cql_bytes(), [0, 0, 0, 0, 0, 0, 0, 1]);
        assert_eq!(CqlValue::Float(1.0).to_cql_bytes(), [0x3f, 0x80, 0, 0]);
        assert_eq!(
            CqlValue::Double(-2.0).to_cql_bytes(),
            [0xc0, 0, 0, 0, 0, 0, 0, 0]
        );
        assert_eq!(CqlValue::Date(DATE_EPOCH).to_cql_bytes(), [0x80, 0, 0, 0]);
        assert_eq!(CqlValue::Boolean(true).to_cql_bytes(), [1]);
    }

    #[test]
    fn decimals_are_scale_then_unscaled_varint() {
        let d = CqlValue::Decimal(Decimal::new(Varint::from(-1i64), 2)); // -0.01
        assert_eq!(d.to_cql_bytes(), [0, 0, 0, 2, 0xff]);
        assert_eq!(
            CqlValue::from_cql_bytes(CqlType::Decimal, &[0, 0, 0, 2, 0xff]),
            Ok(d)
        );
        assert!(CqlValue::from_cql_bytes(CqlType::Decimal, &[0, 0, 0, 2]).is_err());
        assert!(CqlValue::from_cql_bytes(CqlType::Varint, &[]).is_err());
    }

    #[test]
    fn invalid_bytes_are_rejected_with_the_reason() {
        assert_eq!(
            CqlValue::from_cql_bytes(CqlType::Int, &[1, 2, 3]),
            Err(ValueError::WrongLength {
                ty: CqlType::Int,
                expected: 4,
                actual: 3
            })
        );
        assert_eq!(
            CqlValue::from_cql_bytes(CqlType::Ascii, b"ab\xc3\xa9"),
            Err(ValueError::NotAscii {
                offset: 2,
                byte: 0xc3
            })
        );
        assert_eq!(
            CqlValue::from_cql_bytes(CqlType::Text, b"a\xff"),
            Err(ValueError::InvalidUtf8 { valid_up_to: 1 })
        );
        let mut v4 = [0u8; 16];
        v4[6] = 0x40;
        assert_eq!(
            CqlValue::from_cql_bytes(CqlType::TimeUuid, &v4),
            Err(ValueError::NotTimeUuid { version: 4 })
        );
        assert_eq!(
            CqlValue::from_cql_bytes(CqlType::Uuid, &v4),
            Ok(CqlValue::Uuid(v4))
        );
        assert!(CqlValue::from_cql_bytes(CqlType::Boolean, &[]).is_err());
    }

    #[test]
    fn floats_order_as_java_float_compare() {
        let f = |v: f32| CqlValue::Float(v);
        assert_eq!(f(-0.0).cql_cmp(&f(0.0)), Some(Ordering::Less));
        assert_eq!(
            f(f32::NAN).cql_cmp(&f(f32::INFINITY)),
            Some(Ordering::Greater)
        );
        assert_eq!(f(f32::NAN).cql_cmp(&f(-f32::NAN)), Some(Ordering::Equal));
        assert_eq!(f(1.0).cql_cmp(&CqlValue::Double(1.0)), None);
    }

    #[test]
    fn uuids_order_by_version_then_time() {
        // A version 1 UUID whose time_low is large but time_hi small sorts before one with a
        // larger time_hi: the timestamp's high bits come first.
        let mut early = [0u8; 16];
        early[..4].copy_from_slice(&[0xff; 4]);
        early[6] = 0x10;
        let mut late = [0u8; 16];
        late[6] = 0x11;
        assert_eq!(
            CqlValue::Uuid(early).cql_cmp(&CqlValue::Uuid(late)),
            Some(Ordering::Less)
        );
        assert_eq!(
            CqlValue::TimeUuid(early).cql_cmp(&CqlValue::TimeUuid(late)),
            Some(Ordering::Less)
        );
        let mut v4 = [0u8; 16];
        v4[6] = 0x40;
        assert_eq!(
            CqlValue::Uuid(late).cql_cmp(&CqlValue::Uuid(v4)),
            Some(Ordering::Less)
        );
        // timeuuid compares its clock-sequence and node bytes as signed bytes.
        let mut neg = late;
        neg[8] = 0x80;
        assert_eq!(
            CqlValue::TimeUuid(neg).cql_cmp(&CqlValue::TimeUuid(late)),
            Some(Ordering::Less)
        );
        assert_eq!(
            CqlValue::Uuid(neg).cql_cmp(&CqlValue::Uuid(late)),
            Some(Ordering::Greater)
        );
    }

    #[test]
    fn inet_time_and_duration_have_cassandras_wire_bytes() {
        let v4 = CqlValue::Inet("192.168.0.1".parse().unwrap());
        assert_eq!(v4.to_cql_bytes(), [192, 168, 0, 1]);
        let v6 = CqlValue::Inet("::1".parse().unwrap());
        let mut one = [0u8; 16];
        one[15] = 1;
        assert_eq!(v6.to_cql_bytes(), one);
        assert_eq!(CqlValue::from_cql_bytes(CqlType::Inet, &one), Ok(v6));
        // A mapped address sent as 16 bytes stays 16 bytes.
        let mut mapped = [0u8; 16];
        mapped[10..].copy_from_slice(&[0xff, 0xff, 1, 2, 3, 4]);
        assert_eq!(
            CqlValue::from_cql_bytes(CqlType::Inet, &mapped).map(|v| v.to_cql_bytes()),
            Ok(mapped.to_vec())
        );
        for len in [0, 1, 5, 15, 17] {
            assert_eq!(
                CqlValue::from_cql_bytes(CqlType::Inet, &vec![1; len]),
                Err(ValueError::InetLength { actual: len })
            );
        }
        let t = CqlValue::Time(29_574_123_456_789);
        assert_eq!(t.to_cql_bytes(), 29_574_123_456_789i64.to_be_bytes());
        for bad in [-1i64, NANOS_PER_DAY, i64::MAX] {
            assert_eq!(
                CqlValue::from_cql_bytes(CqlType::Time, &bad.to_be_bytes()),
                Err(ValueError::TimeOutOfRange { nanos: bad })
            );
        }
        assert!(CqlValue::from_cql_bytes(CqlType::Time, &[0; 4]).is_err());
        let d = CqlValue::Duration(CqlDuration::new(1, 2, 3).unwrap());
        assert_eq!(d.to_cql_bytes(), [2, 4, 6]);
        assert_eq!(
            CqlValue::from_cql_bytes(CqlType::Duration, &[2, 4, 6]),
            Ok(d)
        );
        assert_eq!(
            CqlValue::from_cql_bytes(CqlType::Duration, &[2, 5, 6])
                .unwrap_err()
                .to_string(),
            "The duration months, days and nanoseconds must be all of the same sign (1, -3, 3)"
        );
    }

    #[test]
    fn inets_order_as_unsigned_bytes_and_times_as_longs() {
        let ip = |s: &str| CqlValue::Inet(s.parse().unwrap());
        let lt = |a: &CqlValue, b: &CqlValue| a.cql_cmp(b) == Some(Ordering::Less);
        assert!(lt(&ip("::1"), &ip("0.0.0.2")));
        // a00:1:: starts with the bytes of 10.0.0.1: the shorter address sorts first.
        assert!(lt(&ip("10.0.0.1"), &ip("a00:1::")));
        assert!(lt(&ip("a00:0::"), &ip("10.0.0.1")));
        assert!(lt(&ip("10.0.0.1"), &ip("192.168.0.1")));
        assert!(lt(&ip("127.0.0.1"), &ip("128.0.0.0")));
        assert!(lt(&ip("fe80::"), &ip("255.0.0.0")));
        assert!(lt(&CqlValue::Time(1), &CqlValue::Time(2)));
        assert_eq!(ip("::1").cql_cmp(&CqlValue::Time(1)), None);
    }

    fn any_type() -> impl Strategy<Value = CqlType> {
        proptest::sample::select(CqlType::ALL.to_vec())
    }

    proptest! {
        #[test]
        fn decoding_arbitrary_bytes_never_panics_and_round_trips(
            ty in any_type(),
            bytes in proptest::collection::vec(any::<u8>(), 0..24),
        ) {
            if let Ok(v) = CqlValue::from_cql_bytes(ty, &bytes) {
                prop_assert_eq!(v.native_type(), Some(ty));
                let again = CqlValue::from_cql_bytes(ty, &v.to_cql_bytes()).unwrap();
                // Floats may be NaN, which is not equal to itself: compare bytes instead.
                prop_assert_eq!(again.to_cql_bytes(), v.to_cql_bytes());
                // Varints and decimals re-encode minimal, booleans as 0/1, durations with
                // minimal vints.
                if !matches!(
                    ty,
                    CqlType::Varint | CqlType::Decimal | CqlType::Boolean | CqlType::Duration
                ) {
                    prop_assert_eq!(v.to_cql_bytes(), bytes);
                }
            }
        }
    }
}
