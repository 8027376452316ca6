//! The ring's ranges as the two-layer log's range groups.
//!
//! The log's splitter partitions redundant copies into *range groups*, each one contiguous
//! interval of keys (DEPART §4.2). Keys start with their token, so the ring's ranges are
//! such intervals: a token `t` belongs to the range `(token[i-1], token[i]]`. The range
//! that wraps around the ring is two intervals in key order (below the first token, above
//! the last), so it is two groups: with `n` ring tokens there are `n + 1` groups, group 0
//! below or at the first token and group `n` above the last. Each range has one primary,
//! so a group holds one source's copies, as DEPART groups them.
//!
//! The server updates the tokens when the ring changes ([`RingRanges::set`]); the engine
//! calls [`RingRanges::group_of_key`] through the closure [`RingRanges::group_of`] makes.

use std::sync::Arc;

use mosaic_lsm::GroupOf;
use mosaic_types::Token;
use parking_lot::RwLock;

/// A shared, updatable list of the ring's tokens (see the module doc). Cheap to clone;
/// clones share the list.
#[derive(Clone, Debug, Default)]
pub struct RingRanges {
    tokens: Arc<RwLock<Arc<[Token]>>>,
}

impl RingRanges {
    /// Ranges over `tokens` (any order, duplicates ignored).
    pub fn new(tokens: impl IntoIterator<Item = Token>) -> RingRanges {
        let r = RingRanges::default();
        r.set(tokens);
        r
    }

    /// Replaces the tokens (any order, duplicates ignored); returns whether they changed.
    pub fn set(&self, tokens: impl IntoIterator<Item = Token>) -> bool {
        let mut sorted: Vec<Token> = tokens.into_iter().collect();
        sorted.sort_unstable();
        sorted.dedup();
        let mut current = self.tokens.write();
        if **current == *sorted {
            return false;
        }
        *current = sorted.into();
        true
    }

    /// The tokens, ascending.
    pub fn tokens(&self) -> Arc<[Token]> {
        self.tokens.read().clone()
    }

    /// How many groups there are: one more than the tokens (one with an empty ring).
    pub fn group_count(&self) -> u32 {
        u32::try_from(self.tokens.read().len())
            .unwrap_or(u32::MAX - 1)
            .saturating_add(1)
    }

    /// The group of `token`: the number of ring tokens below it.
    pub fn group_of_token(&self, token: Token) -> u32 {
        let i = self.tokens.read().partition_point(|t| *t < token);
        u32::try_from(i).unwrap_or(u32::MAX)
    }

    /// The group of an engine key: that of the token at its front; a key too short to
    /// hold a token is in group 0 (it sorts before every key that holds one).
    pub fn group_of_key(&self, key: &[u8]) -> u32 {
        match mosaic_rows::key::decode_token(key) {
            Ok(token) => self.group_of_token(token),
            Err(_) => 0,
        }
    }

    /// The engine's [`GroupOf`] over these ranges (follows later [`RingRanges::set`]s).
    pub fn group_of(&self) -> GroupOf {
        let ranges = self.clone();
        Arc::new(move |key: &[u8]| ranges.group_of_key(key))
    }
}

/// The shape of the decoupled layout's two-layer log (see `mosaic_lsm::LogOptions`).
#[derive(Clone, Debug)]
pub struct LogSettings {
    /// Global-log segments one split takes.
    pub split_segments: usize,
    /// Sorted runs a range group may hold before they are merge-sorted (DEPART's S).
    pub runs_max: usize,
    /// The ring's ranges, the log's range groups.
    pub ring: RingRanges,
}

impl Default for LogSettings {
    fn default() -> LogSettings {
        LogSettings {
            split_segments: 4,
            runs_max: 20,
            ring: RingRanges::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mosaic_rows::key::encode_token;

    fn key(t: i64) -> Vec<u8> {
        let mut k = encode_token(Token(t)).to_vec();
        k.extend_from_slice(b"rest");
        k
    }

    #[test]
    fn an_empty_ring_is_one_group() {
        let r = RingRanges::default();
        assert_eq!(r.group_count(), 1);
        for t in [i64::MIN, -1, 0, 1, i64::MAX] {
            assert_eq!(r.group_of_key(&key(t)), 0);
        }
    }

    #[test]
    fn tokens_belong_to_the_range_they_end_and_the_wrap_is_two_groups() {
        let r = RingRanges::new([Token(100), Token(-100), Token(0), Token(0)]);
        assert_eq!(&*r.tokens(), &[Token(-100), Token(0), Token(100)]);
        assert_eq!(r.group_count(), 4);
        for (t, group) in [
            (i64::MIN, 0),
            (-101, 0),
            (-100, 0),
            (-99, 1),
            (0, 1),
            (1, 2),
            (100, 2),
            (101, 3),
            (i64::MAX, 3),
        ] {
            assert_eq!(r.group_of_key(&key(t)), group, "token {t}");
        }
        assert_eq!(r.group_of_key(b"short"), 0);
        assert_eq!(r.group_of_key(b""), 0);
    }

    #[test]
    fn groups_are_contiguous_in_key_order() {
        let r = RingRanges::new([Token(-5), Token(7), Token(1 << 40)]);
        let mut keys: Vec<Vec<u8>> = (-50..50)
            .map(|t| key(t * 1_000_000_000))
            .chain([key(i64::MIN), key(i64::MAX), b"x".to_vec()])
            .collect();
        keys.sort();
        let groups: Vec<u32> = keys.iter().map(|k| r.group_of_key(k)).collect();
        assert!(groups.windows(2).all(|w| w[0] <= w[1]), "{groups:?}");
    }

    #[test]
    fn the_engine_closure_follows_updates() {
        let r = RingRanges::default();
        let f = r.group_of();
        assert_eq!(f(&key(5)), 0);
        assert!(r.set([Token(0)]));
        assert!(!r.set([Token(0)]));
        assert_eq!(f(&key(5)), 1);
    }
}
