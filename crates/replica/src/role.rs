//! Layout names and replica roles: what a layout decides storage from.

use std::fmt;

pub use mosaic_types::Layout;

/// The node a redundant copy comes from: the primary replica of its token, by host id.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SourceId(pub [u8; 16]);

impl SourceId {
    /// Parses the 32 lowercase or uppercase hex digits [`SourceId`]'s `Display` writes.
    pub fn from_hex(s: &str) -> Option<SourceId> {
        if s.len() != 32 || !s.is_ascii() {
            return None;
        }
        let mut bytes = [0u8; 16];
        for (i, b) in bytes.iter_mut().enumerate() {
            *b = u8::from_str_radix(s.get(2 * i..2 * i + 2)?, 16).ok()?;
        }
        Some(SourceId(bytes))
    }
}

impl fmt::Display for SourceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for b in self.0 {
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

/// A node's role for one token (DEPART's replica differentiation): the primary (replica 0),
/// or a redundant copy (replica 1..RF-1) of the primary's data.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Role {
    /// This node is the token's first replica.
    Primary,
    /// This node holds a redundant copy of `source`'s data.
    Redundant {
        /// The token's primary replica.
        source: SourceId,
        /// This node's position in the token's replica list (1 for the replica after the
        /// primary, …): the heterogeneous layout stores each position in its own order.
        index: u8,
    },
}

impl Role {
    /// `me`'s role in a token's `replicas` (primary first): primary at index 0, a
    /// redundant copy of the primary's data (its source named by `source_of`) after it;
    /// a node that is not a replica (a hint or repair on the edge of a ring change)
    /// stores as a primary.
    pub fn in_replicas<E: PartialEq>(
        replicas: &[E],
        me: &E,
        source_of: impl FnOnce(&E) -> SourceId,
    ) -> Role {
        match (replicas.iter().position(|n| n == me), replicas.first()) {
            (Some(i), Some(primary)) if i > 0 => Role::Redundant {
                source: source_of(primary),
                index: u8::try_from(i).unwrap_or(u8::MAX),
            },
            _ => Role::Primary,
        }
    }

    /// This node's position in the token's replica list: 0 for the primary.
    pub fn index(&self) -> usize {
        match self {
            Role::Primary => 0,
            Role::Redundant { index, .. } => usize::from(*index),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_names_round_trip() {
        for l in Layout::ALL {
            assert_eq!(Layout::parse(l.name()), Some(l));
        }
        assert_eq!(Layout::parse("Uniform"), None);
        assert_eq!(Layout::parse("erasure_tiered"), None);
    }

    #[test]
    fn source_ids_print_as_hex_and_parse_back() {
        let id = SourceId([0, 1, 2, 0xab, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 0xff]);
        let text = id.to_string();
        assert_eq!(text, "000102ab0405060708090a0b0c0d0eff");
        assert_eq!(SourceId::from_hex(&text), Some(id));
        assert_eq!(SourceId::from_hex(&text.to_uppercase()), Some(id));
        assert_eq!(SourceId::from_hex("00"), None);
        assert_eq!(SourceId::from_hex(&"zz".repeat(16)), None);
        assert_eq!(SourceId::from_hex(&"é".repeat(16)), None);
    }
}
