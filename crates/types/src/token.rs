//! Tokens: where a partition lives on the ring.
//!
//! A token is the first 64 bits of the Murmur3 x64-128 hash of the partition key, computed
//! bit for bit as Cassandra's `Murmur3Partitioner` does, so that unmodified drivers route
//! requests to the right replicas. Two quirks of Cassandra's Java implementation are kept on
//! purpose: the tail bytes of the key are read as *signed* Java bytes and sign-extended to
//! 64 bits before being shifted in (other Murmur3 crates differ for any key with a tail byte
//! ≥ 0x80), and the hash `i64::MIN` is mapped to `i64::MAX` because Cassandra reserves
//! `i64::MIN` as the ring's minimum token, which no key may have.

use std::fmt;

/// A position on the token ring (Cassandra's `LongToken`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Token(pub i64);

impl Token {
    /// The ring's minimum token, which no partition key hashes to.
    pub const MIN: Token = Token(i64::MIN);
    /// The largest token.
    pub const MAX: Token = Token(i64::MAX);
}

impl fmt::Display for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

/// The largest serialized partition key Cassandra accepts (each component of a compound key
/// is also bounded by this, since its length is written as a `u16`).
pub const PARTITION_KEY_LEN_MAX: usize = u16::MAX as usize;

/// The token of a serialized partition key (see [`compose_partition_key`] for compound keys).
pub fn token_of(partition_key_bytes: &[u8]) -> Token {
    token_from_hash(murmur3_x64_128_h1(partition_key_bytes) as i64)
}

/// Cassandra's `normalize`: the minimum token is reserved, so a key hashing to it gets the
/// maximum token instead.
fn token_from_hash(h: i64) -> Token {
    Token(if h == i64::MIN { i64::MAX } else { h })
}

/// The bytes Cassandra hashes for a partition key made of `components` (each already in its
/// native-protocol serialization): a single component is its own bytes; several are joined
/// as `u16 big-endian length ‖ bytes ‖ 0x00` each (Cassandra's `CompositeType`).
///
/// Cassandra refuses keys longer than [`PARTITION_KEY_LEN_MAX`] before hashing them; callers
/// must do the same (a longer component's length would be truncated to 16 bits here, exactly
/// as Cassandra's `writeShortLength` would).
pub fn compose_partition_key(components: &[&[u8]]) -> Vec<u8> {
    match components {
        [single] => single.to_vec(),
        _ => {
            let len: usize = components.iter().map(|c| c.len() + 3).sum();
            let mut out = Vec::with_capacity(len);
            for c in components {
                // Truncation is Cassandra's behaviour for over-long components; see above.
                out.extend_from_slice(&(c.len() as u16).to_be_bytes());
                out.extend_from_slice(c);
                out.push(0);
            }
            out
        }
    }
}

const C1: u64 = 0x87c3_7b91_1142_53d5;
const C2: u64 = 0x4cf5_ad43_2745_937f;

fn fmix(mut k: u64) -> u64 {
    k ^= k >> 33;
    k = k.wrapping_mul(0xff51_afd7_ed55_8ccd);
    k ^= k >> 33;
    k = k.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    k ^= k >> 33;
    k
}

fn mix_k1(k1: u64) -> u64 {
    k1.wrapping_mul(C1).rotate_left(31).wrapping_mul(C2)
}

fn mix_k2(k2: u64) -> u64 {
    k2.wrapping_mul(C2).rotate_left(33).wrapping_mul(C1)
}

/// A tail byte as Java reads it: a signed byte widened to a `long`.
fn java_byte(b: u8) -> u64 {
    b as i8 as i64 as u64
}

/// The first half of Murmur3 x64-128 with seed 0, as Cassandra's `MurmurHash.hash3_x64_128`
/// computes it (including the sign extension of tail bytes).
fn murmur3_x64_128_h1(data: &[u8]) -> u64 {
    let mut h1: u64 = 0;
    let mut h2: u64 = 0;

    let mut blocks = data.chunks_exact(16);
    for block in &mut blocks {
        let (lo, hi) = block.split_at(8);
        // Both halves are exactly 8 bytes; the fallback is unreachable.
        let k1 = u64::from_le_bytes(lo.try_into().unwrap_or([0; 8]));
        let k2 = u64::from_le_bytes(hi.try_into().unwrap_or([0; 8]));

        h1 ^= mix_k1(k1);
        h1 = h1
            .rotate_left(27)
            .wrapping_add(h2)
            .wrapping_mul(5)
            .wrapping_add(0x52dc_e729);

        h2 ^= mix_k2(k2);
        h2 = h2
            .rotate_left(31)
            .wrapping_add(h1)
            .wrapping_mul(5)
            .wrapping_add(0x3849_5ab5);
    }

    let tail = blocks.remainder();
    let mut k1: u64 = 0;
    let mut k2: u64 = 0;
    for (i, &b) in tail.iter().enumerate().rev() {
        if i >= 8 {
            k2 ^= java_byte(b) << ((i - 8) * 8);
        } else {
            k1 ^= java_byte(b) << (i * 8);
        }
    }
    if tail.len() > 8 {
        h2 ^= mix_k2(k2);
    }
    if !tail.is_empty() {
        h1 ^= mix_k1(k1);
    }

    // Java's `length` is an int, widened to a long: never negative for a real array.
    let len = data.len() as u64;
    h1 ^= len;
    h2 ^= len;
    h1 = h1.wrapping_add(h2);
    h2 = h2.wrapping_add(h1);
    h1 = fmix(h1);
    h2 = fmix(h2);
    h1.wrapping_add(h2)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unhex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    /// `(key as hex, token)`, generated with the Python driver 3.30.1
    /// (`cassandra.metadata.Murmur3Token.hash_fn`; its C extension and its pure-Python
    /// fallback agree on every key). Covers the empty key, every tail length 1..=15 with
    /// small and with high (sign-extended) bytes, one and two full blocks plus tails, UTF-8
    /// text, and compound keys.
    const VECTORS: &[(&str, i64)] = &[
        ("", 0),
        ("01", 8849112093580131862),
        ("0102", -6527078709368617801),
        ("010203", 1901714139111438249),
        ("01020304", 720734999560851427),
        ("0102030405", -102277552284334578),
        ("010203040506", 2901605255008601742),
        ("01020304050607", -868125975415661079),
        ("0102030405060708", -7140443302367346724),
        ("010203040506070809", -4639342860609086066),
        ("0102030405060708090a", 6592384700563561155),
        ("0102030405060708090a0b", -1304182196530949221),
        ("0102030405060708090a0b0c", -1248788993138110812),
        ("0102030405060708090a0b0c0d", -5765406273433769745),
        ("0102030405060708090a0b0c0d0e", -8466455262646939021),
        ("0102030405060708090a0b0c0d0e0f", 597835946752277653),
        ("0102030405060708090a0b0c0d0e0f10", -5563837382979743776),
        ("0102030405060708090a0b0c0d0e0f1011", -998492828229142869),
        ("80", -5284281814142962636),
        ("8087", 2018950863064893639),
        ("80878e", 2883035100252727777),
        ("80878e959ca3aa", -5968304505574019857),
        ("80878e959ca3aab1", 512842628024960352),
        ("80878e959ca3aab1b8", 683171345539645642),
        ("80878e959ca3aab1b8bfc6cdd4dbe2", 3052317648445578018),
        ("80878e959ca3aab1b8bfc6cdd4dbe2e9", -2954592189485143609),
        ("80878e959ca3aab1b8bfc6cdd4dbe2e9f0", 5211886051089384206),
        ("ff", -4442228696663692417),
        ("7f", 5072634478945617755),
        ("68656c6c6f", -3758069500696749310),
        ("6162636465666768696a6b6c6d6e6f707172737475767778797a", 8402764170624191145),
        ("0726456483a2c1e0ff1e3d5c7b9ab9d8f71635547392b1d0ef0e2d4c6b8aa9c8e70625446382a1c0dffe1d3c5b7a99b8d7f61534537291b0cfee0d2c4b6a89a8c7e60524436281a0bfdefd1c3b5a7998b7d6f51433527190afceed0c2b4a6988a7c6e504", -6827697920956202425),
        ("0000002a", -7160136740246525330),
        ("ffffffffffffffff", 7071048584287372947),
        ("68c3a96c6c6f2077c3b6726c6420e29c93", 2178416776621640036),
        ("000161000002626300", -1461468050663314383),
        ("000400000001000002ff8000", -5817299248056401995),
    ];

    #[test]
    fn tokens_match_the_python_driver() {
        for (hex, expected) in VECTORS {
            assert_eq!(token_of(&unhex(hex)), Token(*expected), "key {hex}");
        }
    }

    #[test]
    fn long_keys_match_the_python_driver() {
        let cycle: Vec<u8> = (0..1024).map(|i| i as u8).collect();
        assert_eq!(token_of(&cycle), Token(7627370222079200297));
        let odd: Vec<u8> = (0..1000).map(|i| i as u8).collect();
        assert_eq!(token_of(&odd), Token(-8723895030037628296));
        assert_eq!(token_of(&[0xff; 31]), Token(-3550403632215323560));
        assert_eq!(token_of(&[0x80; 33]), Token(8320964553149094587));
    }

    #[test]
    fn tail_bytes_are_sign_extended_like_java() {
        // The Field Notes' canary: crates that zero-extend give a different token.
        assert_eq!(token_of(&[0x80]), Token(-5284281814142962636));
    }

    #[test]
    fn compound_keys_use_cassandra_composite_framing() {
        assert_eq!(compose_partition_key(&[b"abc"]), b"abc".to_vec());
        assert_eq!(
            compose_partition_key(&[b"a", b"bc"]),
            vec![0, 1, b'a', 0, 0, 2, b'b', b'c', 0]
        );
        assert_eq!(compose_partition_key(&[]), Vec::<u8>::new());
        let key = compose_partition_key(&[&1i32.to_be_bytes(), &[0xff, 0x80]]);
        assert_eq!(token_of(&key), Token(-5817299248056401995));
    }

    #[test]
    fn minimum_hash_maps_to_maximum_token() {
        // No known key hashes to i64::MIN; check the mapping on raw hashes instead.
        assert_eq!(token_from_hash(i64::MIN), Token::MAX);
        assert_eq!(token_from_hash(i64::MIN + 1), Token(i64::MIN + 1));
        assert_eq!(token_from_hash(-1), Token(-1));
    }
}
