//! Byte strings in messages, moved as bytes (`#[serde(with = …)]` on their fields).
//!
//! serde hands a `Vec<u8>` to postcard as a sequence: one element call per byte to encode
//! it and one to decode it, which made (de)serializing a 512 KiB stripe of a degraded
//! read a seventh of a node's CPU. As bytes, each is one copy. postcard encodes both the
//! same way (a varint length, then the bytes), so the wire format does not change: peers
//! of either build read each other.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_bytes::{ByteBuf, Bytes};

/// Keys with their values.
type Pairs = Vec<(Vec<u8>, Vec<u8>)>;
/// A span of a shard: its epoch, its whole length, the bytes.
type Stripe = Option<(u64, u64, Vec<u8>)>;

/// `Vec<(Vec<u8>, Vec<u8>)>`: keys with their values.
pub(crate) mod pairs {
    use super::*;

    pub(crate) fn serialize<S: Serializer>(
        v: &[(Vec<u8>, Vec<u8>)],
        s: S,
    ) -> Result<S::Ok, S::Error> {
        s.collect_seq(v.iter().map(|(k, x)| (Bytes::new(k), Bytes::new(x))))
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Pairs, D::Error> {
        let v = Vec::<(ByteBuf, ByteBuf)>::deserialize(d)?;
        Ok(v.into_iter()
            .map(|(k, x)| (k.into_vec(), x.into_vec()))
            .collect())
    }
}

/// `Vec<(Vec<u8>, u64)>`: keys with a number each.
pub(crate) mod keyed {
    use super::*;

    pub(crate) fn serialize<S: Serializer>(v: &[(Vec<u8>, u64)], s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(v.iter().map(|(k, n)| (Bytes::new(k), n)))
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Vec<(Vec<u8>, u64)>, D::Error> {
        let v = Vec::<(ByteBuf, u64)>::deserialize(d)?;
        Ok(v.into_iter().map(|(k, n)| (k.into_vec(), n)).collect())
    }
}

/// `Vec<Vec<u8>>`.
pub(crate) mod list {
    use super::*;

    pub(crate) fn serialize<S: Serializer>(v: &[Vec<u8>], s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(v.iter().map(|b| Bytes::new(b)))
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Vec<u8>>, D::Error> {
        let v = Vec::<ByteBuf>::deserialize(d)?;
        Ok(v.into_iter().map(ByteBuf::into_vec).collect())
    }
}

/// `Option<(u64, Vec<u8>)>`: a shard with its epoch.
pub(crate) mod shard {
    use super::*;

    pub(crate) fn serialize<S: Serializer>(
        v: &Option<(u64, Vec<u8>)>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        v.as_ref().map(|(e, b)| (e, Bytes::new(b))).serialize(s)
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<(u64, Vec<u8>)>, D::Error> {
        let v = Option::<(u64, ByteBuf)>::deserialize(d)?;
        Ok(v.map(|(e, b)| (e, b.into_vec())))
    }
}

/// `Option<(u64, u64, Vec<u8>)>`: a span of a shard with its epoch and length.
pub(crate) mod stripe {
    use super::*;

    pub(crate) fn serialize<S: Serializer>(v: &Stripe, s: S) -> Result<S::Ok, S::Error> {
        v.as_ref()
            .map(|(e, len, b)| (e, len, Bytes::new(b)))
            .serialize(s)
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Stripe, D::Error> {
        let v = Option::<(u64, u64, ByteBuf)>::deserialize(d)?;
        Ok(v.map(|(e, len, b)| (e, len, b.into_vec())))
    }
}

#[cfg(test)]
mod tests {
    use serde::{Deserialize, Serialize};

    /// The fields as bytes.
    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct AsBytes {
        #[serde(with = "serde_bytes")]
        one: Vec<u8>,
        #[serde(with = "serde_bytes")]
        maybe: Option<Vec<u8>>,
        #[serde(with = "super::pairs")]
        pairs: Vec<(Vec<u8>, Vec<u8>)>,
        #[serde(with = "super::keyed")]
        keyed: Vec<(Vec<u8>, u64)>,
        #[serde(with = "super::list")]
        list: Vec<Vec<u8>>,
        #[serde(with = "super::shard")]
        shard: Option<(u64, Vec<u8>)>,
        #[serde(with = "super::stripe")]
        stripe: Option<(u64, u64, Vec<u8>)>,
    }

    /// The same fields as serde's default sequences (what earlier builds sent).
    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct AsSequences {
        one: Vec<u8>,
        maybe: Option<Vec<u8>>,
        pairs: Vec<(Vec<u8>, Vec<u8>)>,
        keyed: Vec<(Vec<u8>, u64)>,
        list: Vec<Vec<u8>>,
        shard: Option<(u64, Vec<u8>)>,
        stripe: Option<(u64, u64, Vec<u8>)>,
    }

    fn both(fill: bool) -> (AsBytes, AsSequences) {
        let long: Vec<u8> = (0..300u32).map(|i| (i * 7) as u8).collect();
        let b = AsBytes {
            one: if fill { long.clone() } else { Vec::new() },
            maybe: fill.then(|| vec![0, 255]),
            pairs: if fill {
                vec![(b"k".to_vec(), long.clone()), (Vec::new(), vec![1])]
            } else {
                Vec::new()
            },
            keyed: if fill {
                vec![(long.clone(), u64::MAX)]
            } else {
                Vec::new()
            },
            list: if fill {
                vec![long.clone(), Vec::new()]
            } else {
                Vec::new()
            },
            shard: fill.then(|| (3, long.clone())),
            stripe: fill.then(|| (4, 1 << 40, long.clone())),
        };
        let s = AsSequences {
            one: b.one.clone(),
            maybe: b.maybe.clone(),
            pairs: b.pairs.clone(),
            keyed: b.keyed.clone(),
            list: b.list.clone(),
            shard: b.shard.clone(),
            stripe: b.stripe.clone(),
        };
        (b, s)
    }

    /// Moving byte strings as bytes leaves the wire format as it was: each build reads
    /// what the other sends.
    #[test]
    fn bytes_encode_as_the_sequences_did() {
        for fill in [false, true] {
            let (b, s) = both(fill);
            let from_bytes = postcard::to_stdvec(&b).unwrap();
            let from_sequences = postcard::to_stdvec(&s).unwrap();
            assert_eq!(from_bytes, from_sequences);
            assert_eq!(postcard::from_bytes::<AsBytes>(&from_sequences).unwrap(), b);
            assert_eq!(postcard::from_bytes::<AsSequences>(&from_bytes).unwrap(), s);
        }
    }
}
