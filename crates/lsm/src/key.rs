//! Internal keys: how a versioned entry is laid out so the engine sorts only bytes.
//!
//! An internal key is `user_key ‖ !ts (8 bytes, big-endian) ‖ !(seqno << 8 | kind) (8 bytes,
//! big-endian)`. Comparing user keys bytewise and then the 16-byte trailer bytewise orders
//! the versions of one key by caller timestamp, newest first, then by arrival (sequence
//! number), newest first. The timestamp is the caller's (Cassandra's write time); the
//! sequence number is the engine's and only serves snapshots and deterministic ties.

use std::cmp::Ordering;

/// Bytes after the user key in an internal key.
pub const TRAILER_LEN: usize = 16;
/// The largest sequence number (56 bits; the low byte of the trailer word holds the kind).
pub const SEQNO_MAX: u64 = (1 << 56) - 1;

/// An engine-assigned sequence number: the order in which writes were applied.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Seqno(pub u64);

/// What an entry does to its key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum ValueKind {
    /// A tombstone: the key is deleted as of the entry's timestamp.
    Delete = 0,
    /// A full value, replacing versions with older timestamps.
    Put = 1,
    /// A fragment combined with the key's other versions by the merge operator.
    Merge = 2,
}

impl ValueKind {
    /// Decodes a kind byte.
    pub fn from_u8(b: u8) -> Option<Self> {
        match b {
            0 => Some(ValueKind::Delete),
            1 => Some(ValueKind::Put),
            2 => Some(ValueKind::Merge),
            _ => None,
        }
    }
}

/// The decoded parts of an internal key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ParsedKey<'a> {
    /// The caller's key.
    pub user_key: &'a [u8],
    /// The caller's timestamp.
    pub ts: u64,
    /// The engine's sequence number.
    pub seqno: Seqno,
    /// What the entry does.
    pub kind: ValueKind,
}

/// Appends the internal key for `(user_key, ts, seqno, kind)` to `buf`.
pub fn encode_internal(buf: &mut Vec<u8>, user_key: &[u8], ts: u64, seqno: Seqno, kind: ValueKind) {
    debug_assert!(seqno.0 <= SEQNO_MAX);
    buf.reserve(user_key.len() + TRAILER_LEN);
    buf.extend_from_slice(user_key);
    buf.extend_from_slice(&trailer(ts, seqno, kind));
}

/// The trailer of an internal key: the bytes that follow the user key.
pub fn trailer(ts: u64, seqno: Seqno, kind: ValueKind) -> [u8; TRAILER_LEN] {
    debug_assert!(seqno.0 <= SEQNO_MAX);
    let mut out = [0u8; TRAILER_LEN];
    let (t, s) = out.split_at_mut(8);
    t.copy_from_slice(&(!ts).to_be_bytes());
    s.copy_from_slice(&(!((seqno.0 << 8) | kind as u64)).to_be_bytes());
    out
}

/// The internal key for `(user_key, ts, seqno, kind)`.
pub fn internal_key(user_key: &[u8], ts: u64, seqno: Seqno, kind: ValueKind) -> Vec<u8> {
    let mut buf = Vec::with_capacity(user_key.len() + TRAILER_LEN);
    encode_internal(&mut buf, user_key, ts, seqno, kind);
    buf
}

/// The smallest internal key of `user_key`: seeking to it lands on the key's newest version.
pub fn seek_key(user_key: &[u8]) -> Vec<u8> {
    let mut buf = Vec::with_capacity(user_key.len() + TRAILER_LEN);
    buf.extend_from_slice(user_key);
    buf.extend_from_slice(&[0u8; TRAILER_LEN]);
    buf
}

/// Decodes an internal key; `None` if it is too short or its kind byte is unknown.
pub fn parse_internal(ikey: &[u8]) -> Option<ParsedKey<'_>> {
    let split = ikey.len().checked_sub(TRAILER_LEN)?;
    let (user_key, trailer) = ikey.split_at(split);
    let (ts_bytes, word_bytes) = trailer.split_at(8);
    let ts = !u64::from_be_bytes(ts_bytes.try_into().ok()?);
    let word = !u64::from_be_bytes(word_bytes.try_into().ok()?);
    let kind = ValueKind::from_u8((word & 0xff) as u8)?;
    Some(ParsedKey {
        user_key,
        ts,
        seqno: Seqno(word >> 8),
        kind,
    })
}

/// The user-key part of an internal key (the whole key if it is too short to have a trailer).
pub fn user_key(ikey: &[u8]) -> &[u8] {
    ikey.get(..ikey.len().saturating_sub(TRAILER_LEN))
        .unwrap_or(ikey)
}

/// Compares two internal keys: user key ascending, then timestamp and sequence descending.
pub fn compare_internal(a: &[u8], b: &[u8]) -> Ordering {
    let (ua, ta) = a.split_at(a.len().saturating_sub(TRAILER_LEN));
    let (ub, tb) = b.split_at(b.len().saturating_sub(TRAILER_LEN));
    ua.cmp(ub).then_with(|| ta.cmp(tb))
}

/// The byte that ends a user key stored as an index separator of a table of internal keys
/// (see [`SeekOrder::MarkedSeparators`]). An internal key never ends in it: its last byte
/// is the complement of a [`ValueKind`], 0xfd to 0xff.
pub(crate) const SEPARATOR_MARK: u8 = 0;

/// The user key of a marked separator (`user_key ‖ SEPARATOR_MARK`), `None` for an internal
/// key.
#[inline]
pub(crate) fn marked_user_key(separator: &[u8]) -> Option<&[u8]> {
    match separator.split_last() {
        Some((&SEPARATOR_MARK, user_key)) => Some(user_key),
        _ => None,
    }
}

/// How the entries of a block compare with a sought key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SeekOrder {
    /// Entries and sought keys are keys of this order.
    Keys(KeyOrder),
    /// The index of a table of internal keys whose separators are user keys where a block
    /// boundary falls between two user keys, marked by a trailing [`SEPARATOR_MARK`] —
    /// 16 bytes shorter than an internal key, which makes the index smaller and its binary
    /// search touch less memory (RocksDB's index keys without sequence numbers) — and
    /// internal keys where a user key's versions straddle a boundary. A marked separator
    /// `s` says that its block's keys have user keys at most `s` and later blocks' keys
    /// greater ones, so it is below a sought internal key exactly when `s` is below that
    /// key's user key.
    MarkedSeparators,
}

impl From<KeyOrder> for SeekOrder {
    fn from(order: KeyOrder) -> Self {
        SeekOrder::Keys(order)
    }
}

impl SeekOrder {
    /// Compares a block's `entry` key with the sought `target`.
    #[inline]
    pub(crate) fn compare(self, entry: &[u8], target: &[u8]) -> Ordering {
        match self {
            SeekOrder::Keys(order) => order.compare(entry, target),
            SeekOrder::MarkedSeparators => match marked_user_key(entry) {
                Some(s) if s < user_key(target) => Ordering::Less,
                Some(_) => Ordering::Greater,
                None => compare_internal(entry, target),
            },
        }
    }

    /// The user key at or below which a separator puts its block's keys and above which
    /// it puts every later block's (`None` in an index of bytewise keys).
    pub(crate) fn separator_user_key(self, separator: &[u8]) -> Option<&[u8]> {
        match self {
            SeekOrder::Keys(KeyOrder::Bytewise) => None,
            SeekOrder::Keys(KeyOrder::Internal) => {
                (separator.len() >= TRAILER_LEN).then(|| user_key(separator))
            }
            SeekOrder::MarkedSeparators => {
                Some(marked_user_key(separator).unwrap_or_else(|| user_key(separator)))
            }
        }
    }
}

/// How the keys of a sorted table compare. Tables of the engine hold internal keys; other
/// users of the sorted-run format (the two-layer log's segments and runs, tests) may store
/// plain byte-ordered keys.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum KeyOrder {
    /// Plain bytewise order; the Bloom filter covers the whole key.
    Bytewise,
    /// Internal keys ([`compare_internal`]); the Bloom filter covers the user key.
    #[default]
    Internal,
}

impl KeyOrder {
    /// Compares two keys in this order.
    pub fn compare(self, a: &[u8], b: &[u8]) -> Ordering {
        match self {
            KeyOrder::Bytewise => a.cmp(b),
            KeyOrder::Internal => compare_internal(a, b),
        }
    }

    /// The part of a key the Bloom filter is built over.
    pub fn filter_key(self, key: &[u8]) -> &[u8] {
        match self {
            KeyOrder::Bytewise => key,
            KeyOrder::Internal => user_key(key),
        }
    }

    /// Encodes the order for a table footer.
    pub fn to_u8(self) -> u8 {
        match self {
            KeyOrder::Bytewise => 0,
            KeyOrder::Internal => 1,
        }
    }

    /// Decodes an order from a table footer.
    pub fn from_u8(b: u8) -> Option<Self> {
        match b {
            0 => Some(KeyOrder::Bytewise),
            1 => Some(KeyOrder::Internal),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn internal_order_is_user_key_then_newest_first(
            ka in proptest::collection::vec(any::<u8>(), 0..8),
            kb in proptest::collection::vec(any::<u8>(), 0..8),
            ta in any::<u64>(), tb in any::<u64>(),
            sa in 0..=SEQNO_MAX, sb in 0..=SEQNO_MAX,
        ) {
            let a = internal_key(&ka, ta, Seqno(sa), ValueKind::Put);
            let b = internal_key(&kb, tb, Seqno(sb), ValueKind::Put);
            let expected = ka.cmp(&kb).then(tb.cmp(&ta)).then(sb.cmp(&sa));
            prop_assert_eq!(compare_internal(&a, &b), expected);
            let p = parse_internal(&a).unwrap();
            prop_assert_eq!(p.user_key, &ka[..]);
            prop_assert_eq!(p.ts, ta);
            prop_assert_eq!(p.seqno, Seqno(sa));
            prop_assert!(compare_internal(&seek_key(&ka), &a) != Ordering::Greater);
        }
    }

    #[test]
    fn short_or_unknown_kind_keys_do_not_parse() {
        assert!(parse_internal(&[1, 2, 3]).is_none());
        let mut k = internal_key(b"a", 1, Seqno(1), ValueKind::Put);
        let last = k.len() - 1;
        k[last] = !7;
        assert!(parse_internal(&k).is_none());
    }
}
