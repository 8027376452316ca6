#![allow(clippy::unwrap_used, clippy::indexing_slicing)]
#![allow(clippy::disallowed_methods)] // Tests run real threads; the seam binds the code under test.
//! Scenario: power losses at seeded file-system calls while a replica store of the
//! `multi-lsm` and `decoupled` layouts takes writes under its primary and redundant roles
//! (the `LAYOUT` marker, per-source trees, the two-layer log's segments, splits and sorted
//! runs all on `mosaic_env::CrashFs`, which keeps only fsynced bytes and directory
//! entries). Writes are synced one by one; after each crash the store reopens on the
//! image and must hold every acknowledged write (or a later one of the same key) and
//! nothing never written. `MOSAIC_CRASH_SEEDS` (40 by default) and `MOSAIC_SEED` as in
//! `mosaic-lsm`'s `crash_image.rs`.

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::Ordering;

#[path = "common/crash.rs"]
mod crash;
use crash::options;
use mosaic_env::{CrashFs, SplitMix64};
use mosaic_lsm::WriteBatch;
use mosaic_replica::{Layout, LogSettings, ReplicaStore, RingRanges, Role, SourceId};
use mosaic_rows::key::encode_token;
use mosaic_types::Token;

const RING: [i64; 2] = [-3_000_000_000_000_000_000, 3_000_000_000_000_000_000];
const WRITES: usize = 500;
const KEYS: u64 = 90;
const CRASHES_PER_SEED: usize = 5;

fn open(fs: &CrashFs, layout: Layout) -> mosaic_lsm::Result<ReplicaStore> {
    let log = LogSettings {
        split_segments: 2,
        runs_max: 3,
        ring: RingRanges::new(RING.map(Token)),
    };
    ReplicaStore::open(Path::new("/r"), layout, options(fs), log)
}

/// Key `k`: its token spreads keys over the ring's three ranges.
fn key(k: u64) -> Vec<u8> {
    let token = (k as i64 - KEYS as i64 / 2) * (i64::MAX / KEYS as i64 * 2);
    let mut out = encode_token(Token(token)).to_vec();
    out.extend_from_slice(format!("k{k:04}").as_bytes());
    out
}

/// The range a key's token falls in decides its role: primary, or a copy of one of two
/// sources.
fn role_of(k: u64) -> Role {
    let token = mosaic_rows::key::decode_token(&key(k)).unwrap().0;
    match RING.partition_point(|r| *r < token) {
        0 => Role::Primary,
        g => Role::Redundant {
            source: SourceId([g as u8; 16]),
            index: 1,
        },
    }
}

fn value(i: usize) -> Vec<u8> {
    let mut v = format!("{i:08}|").into_bytes();
    v.resize(80, b'.');
    v
}

fn seeds() -> Vec<u64> {
    mosaic_env::crash::crash_seeds(40, 0xc0ffee)
}

fn run(layout: Layout, seed: u64) -> usize {
    let mut rng = SplitMix64::new(seed);
    // A run makes some 1,500 file-system calls: points spread over them.
    let (fs, acked) =
        CrashFs::with_crash_points(&mut rng, Path::new("/r"), CRASHES_PER_SEED, 1450).unwrap();
    let store = open(&fs, layout).unwrap();
    let mut log = Vec::with_capacity(WRITES);
    for i in 0..WRITES {
        let k = rng.below(KEYS);
        let mut batch = WriteBatch::new();
        batch.put(&key(k), i as u64 + 1, &value(i));
        store.write(role_of(k), batch).unwrap();
        log.push(k);
        acked.store(i as u64 + 1, Ordering::SeqCst);
    }
    store.close().unwrap();
    let images = fs.take_images();
    for (op, acked, image) in &images {
        let ctx = format!(
            "{layout:?} MOSAIC_SEED={seed}: crash at file-system call {op}, {acked} writes acknowledged"
        );
        let store = open(image, layout)
            .unwrap_or_else(|e| panic!("{ctx}: the store does not reopen after the crash: {e}"));
        let mut last: HashMap<u64, usize> = HashMap::new();
        for (i, k) in log.iter().enumerate().take(*acked as usize) {
            last.insert(*k, i);
        }
        for k in 0..KEYS {
            let got = store
                .get(role_of(k), &key(k))
                .unwrap_or_else(|e| panic!("{ctx}: reading key {k}: {e}"));
            match (got, last.get(&k)) {
                (None, None) => {}
                (None, Some(i)) => panic!("{ctx}: key {k} lost acknowledged write {i}"),
                (Some(entry), floor) => {
                    let j: usize = std::str::from_utf8(&entry.value[..8])
                        .unwrap()
                        .parse()
                        .unwrap();
                    assert!(
                        j < log.len() && log[j] == k,
                        "{ctx}: key {k} holds {j}, never written to it"
                    );
                    if let Some(i) = floor {
                        assert!(j >= *i, "{ctx}: key {k} went back from write {i} to {j}");
                    }
                }
            }
        }
        store.close().unwrap();
    }
    images.len()
}

#[test]
fn replica_layouts_keep_every_acknowledged_write_across_power_losses() {
    for layout in [Layout::MultiLsm, Layout::Decoupled] {
        let mut images = 0;
        for seed in seeds() {
            images += run(layout, seed);
        }
        assert!(images > 0, "{layout:?}: no crash point was reached");
    }
}
