#![allow(clippy::unwrap_used, clippy::indexing_slicing)]
//! Scenario: the share of a tree's data in its last level, which ELECT codes (FAST '24
//! §4.1.1: the last level should hold about 90% of the data, at modest sizes too). The
//! default level policy sizes levels from the bottom up (`DynamicLevels`), from what the
//! tree holds rather than from fixed capacities, so the last level keeps at least
//! ~1/(1 + 1/ratio) of the data whatever the tree's size (all of it while the level above
//! would be smaller than level 1's size), with nothing forced (no full compaction).

mod common;
use common::scratch;

use mosaic_lsm::{Db, Options};

/// Bytes per level after `bytes_written` of unique random keys, compactions settled.
fn levels_after(bytes_written: usize) -> Vec<u64> {
    let dir = scratch();
    let db = Db::open(
        dir.path(),
        Options {
            memtable_size_bytes: 64 << 10,
            level1_size_bytes: 256 << 10,
            ..Options::default()
        },
    )
    .unwrap();
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    let value = [0x5au8; 200];
    for _ in 0..bytes_written / (16 + value.len()) {
        // xorshift: keys in random order, each once.
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        db.put(&x.to_be_bytes().repeat(2), 1, &value).unwrap();
    }
    db.flush().unwrap();
    db.wait_for_compactions().unwrap();
    db.levels()
        .iter()
        .map(|l| l.tables.iter().map(|t| t.size_bytes).sum())
        .collect()
}

#[test]
fn the_last_level_holds_about_nine_tenths_of_a_tree() {
    for (mib, at_least) in [(1, 0.85), (4, 0.85), (16, 0.85), (48, 0.85)] {
        let levels = levels_after(mib << 20);
        let total: u64 = levels.iter().sum();
        let last = levels.iter().rev().copied().find(|b| *b > 0).unwrap_or(0);
        let share = last as f64 / total as f64;
        eprintln!("{mib} MiB: levels {levels:?}, last level {share:.3}");
        assert!(
            share >= at_least,
            "{mib} MiB written: the last level holds {share:.3} of {total} bytes ({levels:?})"
        );
    }
}
