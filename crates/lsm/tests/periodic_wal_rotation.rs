#![allow(clippy::unwrap_used, clippy::indexing_slicing)]
//! Scenario: under periodic sync a WAL rotation does not sync the file it closes on the
//! write path; the next sync does. Every write acknowledged before an explicit sync of
//! the WAL (or a clean close) survives a power loss right after it, however many files
//! the WAL rotated through since the last sync.

use std::sync::Arc;

use mosaic_env::{CrashFs, Fs};
use mosaic_lsm::{Db, Engine, EngineOptions, Options, SyncMode};

fn open(fs: &CrashFs) -> (Engine, Db) {
    let fs: Arc<dyn Fs> = Arc::new(fs.clone());
    let engine = Engine::open(
        "/n",
        EngineOptions {
            fs: fs.clone(),
            // Never due during the test: only explicit syncs sync.
            sync_mode: SyncMode::Periodic {
                interval_ms: 3_600_000,
            },
            memtable_space_bytes: 0,
            wal_file_bytes: 4096,
            ..EngineOptions::default()
        },
    )
    .unwrap();
    let db = Db::open(
        "/n/t",
        Options {
            fs,
            engine: Some(engine.clone()),
            // Nothing is flushed: the WAL alone holds the writes.
            memtable_size_bytes: 64 << 20,
            ..Options::default()
        },
    )
    .unwrap();
    (engine, db)
}

fn key(i: u64) -> Vec<u8> {
    format!("key{i:05}").into_bytes()
}

fn put_range(db: &Db, range: std::ops::Range<u64>) {
    for i in range {
        db.put(&key(i), i + 1, &[i as u8; 100]).unwrap();
    }
}

/// Every write below `synced` is in every crash image of `fs` taken now.
fn assert_durable(fs: &CrashFs, synced: u64, ctx: &str) {
    for seed in 0..8 {
        let image = fs.image(seed);
        let (engine, db) = open(&image);
        for i in 0..synced {
            let got = db.get(&key(i)).unwrap();
            assert_eq!(
                got.map(|e| e.ts),
                Some(i + 1),
                "{ctx}: write {i} of {synced} acknowledged and synced is lost (image {seed})"
            );
        }
        drop(db);
        engine.close().unwrap();
    }
}

#[test]
fn a_sync_after_rotations_makes_every_closed_wal_file_durable() {
    let fs = CrashFs::new();
    fs.create_dir_all(std::path::Path::new("/n")).unwrap();
    let (engine, db) = open(&fs);
    // ~130 bytes a record, 4 KiB files: a dozen rotations.
    put_range(&db, 0..400);
    assert!(engine.wal_bytes() > 10 * 4096, "{}", engine.wal_bytes());
    engine.sync_wal().unwrap();
    assert_durable(&fs, 400, "after a sync");
    put_range(&db, 400..800);
    db.close().unwrap();
    assert_durable(&fs, 800, "after a close");
    engine.close().unwrap();
}
