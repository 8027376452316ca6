//! ECMeta (§4.1.3): what a coding group is made of, durable on every node it involves.
//!
//! For each of the group's `n` shards: the SHA-256 of its content (the data component of a
//! data SSTable, or the parity file), its size, the node that holds it and its position
//! (data `0..k`, parity `k..n`); and the codec's parameters, so the group decodes the same
//! way whatever the node's configuration became since. The binary form is versioned and
//! ends with a CRC32C; decoding rejects anything else with an error, never a panic.

use mosaic_types::HostId;
use sha2::{Digest, Sha256};

use crate::codec::{Codec, CodecError, MAX_SHARDS};

/// The first byte of an encoded ECMeta.
const VERSION: u8 = 1;
/// Bytes of one shard's entry: hash, size, node, position.
const SHARD_BYTES: usize = 32 + 8 + 16 + 1;
/// Bytes before the shards: version, group id, epoch, k, n, stripe, coded length.
const HEADER_BYTES: usize = 1 + 16 + 8 + 1 + 1 + 4 + 8;

/// One shard of a coding group.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ShardMeta {
    /// SHA-256 of its content: how the shard is recognised wherever it is found.
    pub hash: [u8; 32],
    /// Its length in bytes (data shards: the SSTable data component's; parity: the
    /// group's coded length).
    pub size: u64,
    /// The node that holds it.
    pub node: HostId,
    /// Its position: data `0..k`, parity `k..n`.
    pub position: u8,
}

/// A coding group: `k` data shards from `k` nodes and `n − k` parity shards.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EcMeta {
    /// The group's id (chosen by its leader parity node).
    pub group: [u8; 16],
    /// The group's epoch: bumped by every change of a slot's content, so each step of a
    /// change names the state it applies to (and a repeated step is recognised).
    pub epoch: u64,
    /// Data shards.
    pub k: u8,
    /// All shards.
    pub n: u8,
    /// The codec's stripe.
    pub stripe_bytes: u32,
    /// The group's coded length (every parity shard's size).
    pub coded_len: u64,
    /// The `n` shards, in position order.
    pub shards: Vec<ShardMeta>,
}

/// Why bytes are not an ECMeta.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum MetaError {
    /// Shorter than its header or its shards say.
    #[error("ECMeta truncated: {0} bytes")]
    Truncated(usize),
    /// The checksum does not match: the bytes were damaged.
    #[error("ECMeta checksum mismatch")]
    Checksum,
    /// Written by an unknown version.
    #[error("ECMeta version {0} is not known")]
    Version(u8),
    /// Parameters or shards that no group can have.
    #[error("ECMeta is inconsistent: {0}")]
    Inconsistent(String),
}

impl EcMeta {
    /// The SHA-256 of `content`.
    pub fn content_hash(content: &[u8]) -> [u8; 32] {
        Sha256::digest(content).into()
    }

    /// The group's codec.
    pub fn codec(&self) -> Result<Codec, CodecError> {
        Codec::with_stripe(
            usize::from(self.k),
            usize::from(self.n),
            self.stripe_bytes as usize,
        )
    }

    /// Whether `content` is the shard at `position` (its hash and size match).
    pub fn verify(&self, position: usize, content: &[u8]) -> bool {
        self.shards.get(position).is_some_and(|s| {
            s.size == content.len() as u64 && s.hash == EcMeta::content_hash(content)
        })
    }

    /// The shard held by `node`, if any.
    pub fn position_of(&self, node: HostId) -> Option<usize> {
        self.shards.iter().position(|s| s.node == node)
    }

    /// The binary form.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(HEADER_BYTES + self.shards.len() * SHARD_BYTES + 4);
        out.push(VERSION);
        out.extend_from_slice(&self.group);
        out.extend_from_slice(&self.epoch.to_le_bytes());
        out.push(self.k);
        out.push(self.n);
        out.extend_from_slice(&self.stripe_bytes.to_le_bytes());
        out.extend_from_slice(&self.coded_len.to_le_bytes());
        for s in &self.shards {
            out.extend_from_slice(&s.hash);
            out.extend_from_slice(&s.size.to_le_bytes());
            out.extend_from_slice(&s.node.0);
            out.push(s.position);
        }
        let crc = crc32c::crc32c(&out);
        out.extend_from_slice(&crc.to_le_bytes());
        out
    }

    /// Reads the binary form, checking its checksum and consistency.
    pub fn decode(bytes: &[u8]) -> Result<EcMeta, MetaError> {
        let Some((body, crc)) = bytes.split_last_chunk::<4>() else {
            return Err(MetaError::Truncated(bytes.len()));
        };
        if crc32c::crc32c(body) != u32::from_le_bytes(*crc) {
            return Err(MetaError::Checksum);
        }
        let mut r = Reader(body);
        let version = r.array::<1>()?[0];
        if version != VERSION {
            return Err(MetaError::Version(version));
        }
        let group = r.array::<16>()?;
        let epoch = u64::from_le_bytes(r.array()?);
        let [k] = r.array::<1>()?;
        let [n] = r.array::<1>()?;
        let stripe_bytes = u32::from_le_bytes(r.array()?);
        let coded_len = u64::from_le_bytes(r.array()?);
        let count = usize::from(n);
        if count > MAX_SHARDS {
            return Err(MetaError::Inconsistent(format!("{n} shards")));
        }
        let mut shards = Vec::with_capacity(count);
        for _ in 0..count {
            shards.push(ShardMeta {
                hash: r.array()?,
                size: u64::from_le_bytes(r.array()?),
                node: HostId(r.array()?),
                position: r.array::<1>()?[0],
            });
        }
        if !r.0.is_empty() {
            return Err(MetaError::Inconsistent(format!(
                "{} bytes after the shards",
                r.0.len()
            )));
        }
        let meta = EcMeta {
            group,
            epoch,
            k,
            n,
            stripe_bytes,
            coded_len,
            shards,
        };
        meta.check()?;
        Ok(meta)
    }

    /// What every group satisfies: a valid codec, shards in position order, parity of the
    /// coded length, data no longer than it.
    pub fn check(&self) -> Result<(), MetaError> {
        self.codec()
            .map_err(|e| MetaError::Inconsistent(e.to_string()))?;
        if self.shards.len() != usize::from(self.n) {
            return Err(MetaError::Inconsistent(format!(
                "{} shards in a group of {}",
                self.shards.len(),
                self.n
            )));
        }
        for (i, s) in self.shards.iter().enumerate() {
            if usize::from(s.position) != i {
                return Err(MetaError::Inconsistent(format!(
                    "shard {i} says position {}",
                    s.position
                )));
            }
            let parity = i >= usize::from(self.k);
            if (parity && s.size != self.coded_len) || s.size > self.coded_len {
                return Err(MetaError::Inconsistent(format!(
                    "shard {i} has {} bytes in a group coded to {}",
                    s.size, self.coded_len
                )));
            }
        }
        Ok(())
    }
}

/// Reads fixed-size fields off the front of a byte slice.
struct Reader<'a>(&'a [u8]);

impl Reader<'_> {
    fn array<const N: usize>(&mut self) -> Result<[u8; N], MetaError> {
        let total = self.0.len();
        let (head, rest) = self
            .0
            .split_first_chunk::<N>()
            .ok_or(MetaError::Truncated(total))?;
        self.0 = rest;
        Ok(*head)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> EcMeta {
        let data: Vec<Vec<u8>> = (0..4u8).map(|i| vec![i; 100 + usize::from(i)]).collect();
        let codec = Codec::with_stripe(4, 6, 128).unwrap();
        let refs: Vec<&[u8]> = data.iter().map(Vec::as_slice).collect();
        let parity = codec.encode(&refs).unwrap();
        let shards = data
            .iter()
            .chain(&parity)
            .enumerate()
            .map(|(i, content)| ShardMeta {
                hash: EcMeta::content_hash(content),
                size: content.len() as u64,
                node: HostId([i as u8; 16]),
                position: i as u8,
            })
            .collect();
        EcMeta {
            group: [7; 16],
            epoch: 3,
            k: 4,
            n: 6,
            stripe_bytes: 128,
            coded_len: 128,
            shards,
        }
    }

    #[test]
    fn round_trips_and_verifies_content() {
        let meta = sample();
        let bytes = meta.encode();
        assert_eq!(EcMeta::decode(&bytes), Ok(meta.clone()));
        assert!(meta.verify(2, &[2; 102]));
        assert!(!meta.verify(2, &[2; 101]));
        assert!(!meta.verify(2, &[3; 102]));
        assert!(!meta.verify(9, &[2; 102]));
        assert_eq!(meta.position_of(HostId([5; 16])), Some(5));
        assert_eq!(meta.codec().unwrap().k(), 4);
    }

    #[test]
    fn every_damaged_byte_and_every_truncation_is_refused() {
        let bytes = sample().encode();
        for i in 0..bytes.len() {
            let mut damaged = bytes.clone();
            damaged[i] ^= 0x10;
            assert!(EcMeta::decode(&damaged).is_err(), "byte {i}");
            assert!(EcMeta::decode(&bytes[..i]).is_err(), "first {i} bytes");
        }
    }

    #[test]
    fn inconsistent_groups_are_refused_even_with_a_good_checksum() {
        let mut meta = sample();
        meta.shards[5].size = 64;
        assert!(matches!(
            EcMeta::decode(&meta.encode()),
            Err(MetaError::Inconsistent(_))
        ));
        let mut meta = sample();
        meta.shards.swap(0, 1);
        assert!(matches!(
            EcMeta::decode(&meta.encode()),
            Err(MetaError::Inconsistent(_))
        ));
        let mut meta = sample();
        meta.k = 6;
        assert!(matches!(
            EcMeta::decode(&meta.encode()),
            Err(MetaError::Inconsistent(_))
        ));
    }
}
