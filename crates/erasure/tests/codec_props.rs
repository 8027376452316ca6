//! The codec's promises, over random groups: any `k` of the `n` shards give back every
//! byte of every shard (odd sizes and padding included), striping does not change the
//! bytes, and a delta parity update equals coding the new group from scratch.

use mosaic_erasure::codec::{Codec, CHUNK};
use proptest::prelude::*;

/// Every `k`-subset of `0..n`.
fn subsets(n: usize, k: usize) -> Vec<Vec<usize>> {
    (0u32..1 << n)
        .filter(|m| m.count_ones() as usize == k)
        .map(|m| (0..n).filter(|i| m & (1 << i) != 0).collect())
        .collect()
}

/// A code (k of n ≤ 7), a stripe, and k data shards of random (often odd) lengths.
fn group() -> impl Strategy<Value = (Codec, Vec<Vec<u8>>)> {
    (1usize..=5, 1usize..=3, 1usize..=4).prop_flat_map(|(k, m, stripe_chunks)| {
        let codec = Codec::with_stripe(k, k + m, stripe_chunks * CHUNK).expect("valid code");
        let shard = prop::collection::vec(any::<u8>(), 0..700);
        (Just(codec), prop::collection::vec(shard, k))
    })
}

fn refs(v: &[Vec<u8>]) -> Vec<&[u8]> {
    v.iter().map(Vec::as_slice).collect()
}

fn padded(bytes: &[u8], len: usize) -> Vec<u8> {
    let mut v = bytes.to_vec();
    v.resize(len, 0);
    v
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn any_k_shards_decode_every_shard((codec, data) in group()) {
        let parity = codec.encode(&refs(&data)).unwrap();
        let coded = Codec::coded_len(data.iter().map(Vec::len).max().unwrap_or(0));
        prop_assert!(parity.iter().all(|p| p.len() == coded));
        let all: Vec<Vec<u8>> = data.iter().map(|d| padded(d, coded)).chain(parity).collect();
        for subset in subsets(codec.n(), codec.k()) {
            for want in 0..codec.n() {
                let mut rebuilt = Vec::new();
                for range in codec.stripes(coded) {
                    // Data shards are handed over as stored: short of the group's length.
                    let shards: Vec<(usize, &[u8])> = subset
                        .iter()
                        .map(|&p| {
                            let stored = if p < codec.k() { &data[p][..] } else { &all[p][..] };
                            let end = range.end.min(stored.len());
                            (p, stored.get(range.start.min(end)..end).unwrap_or(&[]))
                        })
                        .collect();
                    rebuilt.extend(codec.decode_range(range, &shards, want).unwrap());
                }
                prop_assert_eq!(&rebuilt, &all[want], "shard {} from {:?}", want, subset);
            }
        }
    }

    #[test]
    fn striping_does_not_change_the_parity((codec, data) in group()) {
        let whole = Codec::with_stripe(codec.k(), codec.n(), 1 << 20).unwrap();
        prop_assert_eq!(codec.encode(&refs(&data)).unwrap(), whole.encode(&refs(&data)).unwrap());
    }

    #[test]
    fn a_parity_update_equals_a_fresh_encode(
        (codec, data) in group(),
        new in prop::collection::vec(any::<u8>(), 0..900),
        which in any::<prop::sample::Index>(),
    ) {
        let position = which.index(codec.k());
        let mut parity = codec.encode(&refs(&data)).unwrap();
        codec.update_parity(&mut parity, position, &data[position], &new).unwrap();
        let mut changed = data.clone();
        changed[position] = new;
        let fresh = codec.encode(&refs(&changed)).unwrap();
        // The updated parity keeps the longer of the two lengths; past the fresh one it is
        // the code of zeros: zeros.
        for (updated, fresh) in parity.iter().zip(&fresh) {
            prop_assert!(updated.len() >= fresh.len());
            prop_assert_eq!(&updated[..fresh.len()], &fresh[..]);
            prop_assert!(updated[fresh.len()..].iter().all(|&b| b == 0));
        }
    }

    #[test]
    fn a_removed_shard_becomes_a_zero_dummy((codec, data) in group(), which in any::<prop::sample::Index>()) {
        let position = which.index(codec.k());
        let mut parity = codec.encode(&refs(&data)).unwrap();
        codec.update_parity(&mut parity, position, &data[position], &[]).unwrap();
        let mut changed = data.clone();
        changed[position].clear();
        let fresh = codec.encode(&refs(&changed)).unwrap();
        for (updated, fresh) in parity.iter().zip(&fresh) {
            prop_assert_eq!(&updated[..fresh.len()], &fresh[..]);
        }
    }
}

#[test]
fn a_degraded_read_decodes_one_stripe_only() {
    let codec = Codec::with_stripe(4, 6, 256).unwrap();
    let data: Vec<Vec<u8>> = (0..4u8)
        .map(|i| {
            (0..1000u32)
                .map(|b| (b as u8).wrapping_mul(i + 3))
                .collect()
        })
        .collect();
    let parity = codec.encode(&refs(&data)).unwrap();
    // Shard 2 is lost; the block at byte 600 lives in the stripe 512..768.
    let stripe = codec.stripe_of(1024, 600).unwrap();
    assert_eq!(stripe, 512..768);
    let shards: Vec<(usize, &[u8])> = vec![
        (0, &data[0][stripe.start..stripe.end.min(1000)]),
        (1, &data[1][stripe.start..stripe.end.min(1000)]),
        (4, &parity[0][stripe.clone()]),
        (5, &parity[1][stripe.clone()]),
    ];
    let rebuilt = codec.decode_range(stripe, &shards, 2).unwrap();
    assert_eq!(&rebuilt[..], &data[2][512..768]);
}

proptest! {
    /// A degraded read decodes pieces of a lost shard smaller than (or straddling) the
    /// stripes its group was coded in: any chunk-aligned span decodes on its own.
    #[test]
    fn any_chunk_aligned_span_decodes_whatever_the_stripes(
        lens in proptest::collection::vec(0usize..3000, 4),
        lost in 0usize..4,
        first in 0usize..48,
        chunks in 1usize..16,
    ) {
        let codec = Codec::with_stripe(4, 6, 256).unwrap();
        let data: Vec<Vec<u8>> = lens
            .iter()
            .enumerate()
            .map(|(i, len)| (0..*len).map(|b| (b as u8).wrapping_mul(i as u8 + 7) ^ (b >> 8) as u8).collect())
            .collect();
        let parity = codec.encode(&refs(&data)).unwrap();
        let coded = parity[0].len();
        let start = (first * 64).min(coded);
        let end = (start + chunks * 64).min(coded);
        let piece = |bytes: &[u8]| bytes[start.min(bytes.len())..end.min(bytes.len())].to_vec();
        // Two surviving data shards and both parity shards, as a degraded read gathers them.
        let survivors: Vec<usize> = (0..4).filter(|p| *p != lost).take(2).collect();
        let mut pieces: Vec<(usize, Vec<u8>)> =
            survivors.iter().map(|p| (*p, piece(&data[*p]))).collect();
        pieces.push((4, parity[0][start..end].to_vec()));
        pieces.push((5, parity[1][start..end].to_vec()));
        let borrowed: Vec<(usize, &[u8])> = pieces.iter().map(|(p, b)| (*p, b.as_slice())).collect();
        let rebuilt = codec.decode_range(start..end, &borrowed, lost).unwrap();
        let mut want = piece(&data[lost]);
        want.resize(end - start, 0);
        prop_assert_eq!(rebuilt, want);
    }
}
