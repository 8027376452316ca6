//! Helpers the replica crate's scenario tests share.

use mosaic_erasure::meta::ShardMeta;
use mosaic_erasure::EcMeta;
use mosaic_types::HostId;

/// Table `id` alone in slot 0 of its own (3, 2) group, as a leader would commit it.
pub fn group_of(id: u64, content: &[u8]) -> EcMeta {
    let mut group = [0u8; 16];
    group[..8].copy_from_slice(&id.to_be_bytes());
    let shard = |position: u8, data: &[u8]| ShardMeta {
        hash: EcMeta::content_hash(data),
        size: data.len() as u64,
        node: HostId([position; 16]),
        position,
    };
    EcMeta {
        group,
        epoch: 1,
        k: 2,
        n: 3,
        stripe_bytes: 1 << 16,
        coded_len: content.len() as u64,
        shards: vec![shard(0, content), shard(1, &[]), shard(2, content)],
    }
}
