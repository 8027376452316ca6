//! Identifiers that cross crates: a node's host id and a table's id.
//!
//! Both are 16-byte UUIDs on the wire (`system.local.host_id`, `system_schema.tables.id`)
//! and in the internode protocol; newtypes keep a host id from being passed where a table id
//! is meant. `Display` writes the hyphenated UUID form Cassandra shows.

use std::fmt;
use std::str::FromStr;

/// Writes 16 bytes as a hyphenated UUID (`8-4-4-4-12` lowercase hex digits).
fn fmt_uuid(bytes: &[u8; 16], f: &mut fmt::Formatter<'_>) -> fmt::Result {
    for (i, b) in bytes.iter().enumerate() {
        if matches!(i, 4 | 6 | 8 | 10) {
            f.write_str("-")?;
        }
        write!(f, "{b:02x}")?;
    }
    Ok(())
}

/// Parses a UUID written with or without hyphens (32 hex digits).
fn parse_uuid(s: &str) -> Option<[u8; 16]> {
    let digits: Vec<u8> = s.bytes().filter(|&b| b != b'-').collect();
    if digits.len() != 32 {
        return None;
    }
    let mut out = [0u8; 16];
    for (o, pair) in out.iter_mut().zip(digits.chunks_exact(2)) {
        let hex = std::str::from_utf8(pair).ok()?;
        *o = u8::from_str_radix(hex, 16).ok()?;
    }
    Some(out)
}

/// A text that is not a UUID.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not a UUID (32 hex digits, hyphens optional)")]
pub struct ParseIdError(pub String);

macro_rules! uuid_id {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        // Serde: the hyphenated text in human-readable formats (JSON: the schema file, the
        // admin API), the 16 bytes as a newtype elsewhere, so binary formats that carried a
        // bare `[u8; 16]` (postcard: internode messages, hints) are unchanged.
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(pub [u8; 16]);

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                if s.is_human_readable() {
                    s.collect_str(self)
                } else {
                    s.serialize_newtype_struct(stringify!($name), &self.0)
                }
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<$name, D::Error> {
                if d.is_human_readable() {
                    let text = <std::borrow::Cow<'de, str>>::deserialize(d)?;
                    text.parse().map_err(serde::de::Error::custom)
                } else {
                    /// The 16 bytes inside the newtype.
                    #[derive(serde::Deserialize)]
                    #[serde(rename = "Id")]
                    struct Bytes([u8; 16]);
                    Bytes::deserialize(d).map(|b| $name(b.0))
                }
            }
        }

        impl $name {
            /// The id's 16 bytes (RFC 4122 byte order).
            pub fn as_bytes(&self) -> &[u8; 16] {
                &self.0
            }
        }

        impl From<[u8; 16]> for $name {
            fn from(bytes: [u8; 16]) -> $name {
                $name(bytes)
            }
        }

        impl From<$name> for [u8; 16] {
            fn from(id: $name) -> [u8; 16] {
                id.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt_uuid(&self.0, f)
            }
        }

        impl FromStr for $name {
            type Err = ParseIdError;

            fn from_str(s: &str) -> Result<$name, ParseIdError> {
                parse_uuid(s).map($name).ok_or_else(|| ParseIdError(s.to_owned()))
            }
        }
    };
}

uuid_id!(
    /// A node's identity for clients and placement (`system.local.host_id`): chosen at first
    /// start, kept across restarts and address changes.
    HostId
);

uuid_id!(
    /// A table's identity (`system_schema.tables.id`): chosen at `CREATE TABLE`, never reused,
    /// so a table dropped and re-created under the same name is a different table.
    TableId
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uuids_print_and_parse_as_cassandra_shows_them() {
        let id = HostId([
            0x12, 0x3e, 0x45, 0x67, 0xe8, 0x9b, 0x12, 0xd3, 0xa4, 0x56, 0x42, 0x66, 0x14, 0x17,
            0x40, 0x00,
        ]);
        let text = id.to_string();
        assert_eq!(text, "123e4567-e89b-12d3-a456-426614174000");
        assert_eq!(text.parse::<HostId>(), Ok(id));
        assert_eq!(text.replace('-', "").parse::<HostId>(), Ok(id));
        assert!("123e4567".parse::<TableId>().is_err());
        // JSON (the schema file) keeps the text form.
        let json = serde_json::to_string(&TableId(id.0)).unwrap();
        assert_eq!(json, "\"123e4567-e89b-12d3-a456-426614174000\"");
        assert_eq!(
            serde_json::from_str::<TableId>(&json).unwrap(),
            TableId(id.0)
        );
        assert!(serde_json::from_str::<TableId>("\"nope\"").is_err());
        assert!("zz3e4567-e89b-12d3-a456-426614174000"
            .parse::<TableId>()
            .is_err());
    }
}
