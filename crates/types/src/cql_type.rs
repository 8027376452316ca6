//! The CQL types Mosaic stores, with their CQL names and native-protocol option ids.
//!
//! Every native (non-collection, non-UDT) type except `counter` is listed; the enum is
//! `#[non_exhaustive]` so adding collections or counters later does not break callers.

use std::fmt;
use std::str::FromStr;

/// A CQL column type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum CqlType {
    /// `ascii`: 7-bit US-ASCII text.
    Ascii,
    /// `text` (alias `varchar`): UTF-8 text.
    Text,
    /// `blob`: arbitrary bytes.
    Blob,
    /// `boolean`.
    Boolean,
    /// `int`: 32-bit signed.
    Int,
    /// `bigint`: 64-bit signed.
    BigInt,
    /// `smallint`: 16-bit signed.
    SmallInt,
    /// `tinyint`: 8-bit signed.
    TinyInt,
    /// `float`: IEEE-754 binary32.
    Float,
    /// `double`: IEEE-754 binary64.
    Double,
    /// `timestamp`: milliseconds since the Unix epoch, signed.
    Timestamp,
    /// `date`: days, unsigned 32-bit with 2^31 at the Unix epoch.
    Date,
    /// `uuid`: any RFC 4122 UUID.
    Uuid,
    /// `timeuuid`: a version-1 (time-based) UUID.
    TimeUuid,
    /// `varint`: arbitrary-precision integer.
    Varint,
    /// `decimal`: arbitrary-precision decimal (`unscaled × 10^-scale`).
    Decimal,
    /// `inet`: an IPv4 (4 bytes) or IPv6 (16 bytes) address.
    Inet,
    /// `time`: nanoseconds since midnight, `0..86_400_000_000_000`.
    Time,
    /// `duration`: months, days and nanoseconds, all of one sign. Never part of a primary key.
    Duration,
}

impl CqlType {
    /// Every type, in declaration order (handy for exhaustive tests).
    pub const ALL: [CqlType; 19] = [
        CqlType::Ascii,
        CqlType::Text,
        CqlType::Blob,
        CqlType::Boolean,
        CqlType::Int,
        CqlType::BigInt,
        CqlType::SmallInt,
        CqlType::TinyInt,
        CqlType::Float,
        CqlType::Double,
        CqlType::Timestamp,
        CqlType::Date,
        CqlType::Uuid,
        CqlType::TimeUuid,
        CqlType::Varint,
        CqlType::Decimal,
        CqlType::Inet,
        CqlType::Time,
        CqlType::Duration,
    ];

    /// The type's CQL name, as Cassandra prints it (e.g. in `system_schema.columns`).
    pub fn name(self) -> &'static str {
        match self {
            CqlType::Ascii => "ascii",
            CqlType::Text => "text",
            CqlType::Blob => "blob",
            CqlType::Boolean => "boolean",
            CqlType::Int => "int",
            CqlType::BigInt => "bigint",
            CqlType::SmallInt => "smallint",
            CqlType::TinyInt => "tinyint",
            CqlType::Float => "float",
            CqlType::Double => "double",
            CqlType::Timestamp => "timestamp",
            CqlType::Date => "date",
            CqlType::Uuid => "uuid",
            CqlType::TimeUuid => "timeuuid",
            CqlType::Varint => "varint",
            CqlType::Decimal => "decimal",
            CqlType::Inet => "inet",
            CqlType::Time => "time",
            CqlType::Duration => "duration",
        }
    }

    /// The native protocol's `[option]` id for the type (v4 §6, "Result" metadata; `duration`'s
    /// 0x0015 is v5's: v3 and v4 name it as a custom type, which the frame layer does).
    pub fn protocol_id(self) -> u16 {
        match self {
            CqlType::Ascii => 0x0001,
            CqlType::BigInt => 0x0002,
            CqlType::Blob => 0x0003,
            CqlType::Boolean => 0x0004,
            CqlType::Decimal => 0x0006,
            CqlType::Double => 0x0007,
            CqlType::Float => 0x0008,
            CqlType::Int => 0x0009,
            CqlType::Timestamp => 0x000B,
            CqlType::Uuid => 0x000C,
            CqlType::Text => 0x000D,
            CqlType::Varint => 0x000E,
            CqlType::TimeUuid => 0x000F,
            CqlType::Inet => 0x0010,
            CqlType::Date => 0x0011,
            CqlType::Time => 0x0012,
            CqlType::SmallInt => 0x0013,
            CqlType::TinyInt => 0x0014,
            CqlType::Duration => 0x0015,
        }
    }

    /// The type for a native-protocol option id, if it is one of ours.
    pub fn from_protocol_id(id: u16) -> Option<CqlType> {
        CqlType::ALL.into_iter().find(|t| t.protocol_id() == id)
    }

    /// The fixed length of the type's native-protocol serialization, if it has one.
    pub fn fixed_len(self) -> Option<usize> {
        match self {
            CqlType::Boolean | CqlType::TinyInt => Some(1),
            CqlType::SmallInt => Some(2),
            CqlType::Int | CqlType::Float | CqlType::Date => Some(4),
            CqlType::BigInt | CqlType::Double | CqlType::Timestamp | CqlType::Time => Some(8),
            CqlType::Uuid | CqlType::TimeUuid => Some(16),
            CqlType::Ascii
            | CqlType::Text
            | CqlType::Blob
            | CqlType::Varint
            | CqlType::Decimal
            | CqlType::Inet
            | CqlType::Duration => None,
        }
    }
}

impl fmt::Display for CqlType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A CQL type name that is not one of [`CqlType`]'s.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown CQL type {name:?}")]
#[non_exhaustive]
pub struct ParseTypeError {
    /// The name as given.
    pub name: String,
}

impl FromStr for CqlType {
    type Err = ParseTypeError;

    /// Parses a CQL type name, case-insensitively; `varchar` is `text`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let trimmed = s.trim();
        if trimmed.eq_ignore_ascii_case("varchar") {
            return Ok(CqlType::Text);
        }
        CqlType::ALL
            .into_iter()
            .find(|t| trimmed.eq_ignore_ascii_case(t.name()))
            .ok_or_else(|| ParseTypeError { name: s.to_owned() })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_case_insensitively() {
        for t in CqlType::ALL {
            assert_eq!(t.name().parse::<CqlType>(), Ok(t));
            assert_eq!(t.name().to_uppercase().parse::<CqlType>(), Ok(t));
        }
        assert_eq!("VarChar".parse::<CqlType>(), Ok(CqlType::Text));
        assert_eq!(" bigint ".parse::<CqlType>(), Ok(CqlType::BigInt));
        assert!("counter".parse::<CqlType>().is_err());
        assert!("".parse::<CqlType>().is_err());
    }

    #[test]
    fn protocol_ids_round_trip() {
        for t in CqlType::ALL {
            assert_eq!(CqlType::from_protocol_id(t.protocol_id()), Some(t));
        }
        assert_eq!(CqlType::from_protocol_id(0x0005), None); // counter
        assert_eq!(CqlType::Inet.protocol_id(), 0x0010);
        assert_eq!(CqlType::Time.protocol_id(), 0x0012);
        assert_eq!(CqlType::Duration.protocol_id(), 0x0015);
    }
}
