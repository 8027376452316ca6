#![allow(clippy::unwrap_used, clippy::indexing_slicing)]
#![allow(clippy::disallowed_methods)] // Tests run real threads; the seam binds the code under test.
//! Scenario: power losses at seeded moments of a node engine's life, on a file system that
//! keeps only what was made durable (`mosaic_env::CrashFs`: file bytes up to their last
//! `fdatasync`, perhaps a torn part of the rest; directory entries as of their directory's
//! last `fsync`). Two partitions share the engine's WAL; writes are synced one by one
//! (`PerWrite`), memtables and WAL files are tiny, so WAL rotations, flushes, compactions,
//! manifest rewrites and WAL retirement all run while the writer writes — and a crash point
//! (any file-system call, the engine's background threads' included) can fall inside any
//! of them; now and then a run of keys is ingested as tables instead of written. After
//! each crash the engine reopens on the image and must hold every
//! acknowledged write (or a later one of the same key) and nothing never written.
//!
//! Every image is checked; `MOSAIC_CRASH_SEEDS` sets how many seeds run (200 by default, a
//! few crash points each; `MOSAIC_CRASH_SEEDS=5000` for a long run); `MOSAIC_SEED=<seed>`
//! replays one (the workload and the crash points are the seed's; which background step a
//! point lands in depends on thread timing).

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use mosaic_env::{CrashFs, SplitMix64};
use mosaic_lsm::{Db, Engine, EngineOptions, Options, SyncMode, WriteBatch};

const PARTS: usize = 2;
const WRITES: usize = 700;
const KEYS: u64 = 120;
const CRASHES_PER_SEED: usize = 6;

fn engine_options(fs: &CrashFs) -> EngineOptions {
    EngineOptions {
        fs: Arc::new(fs.clone()),
        sync_mode: SyncMode::PerWrite,
        memtable_space_bytes: 0,
        wal_file_bytes: 4096,
        block_cache_bytes: 0,
        flush_threads: 1,
        compaction_threads: 1,
        ..EngineOptions::default()
    }
}

fn open(fs: &CrashFs) -> Result<(Engine, Vec<Db>), mosaic_lsm::Error> {
    let root = Path::new("/db");
    let engine = Engine::open(root, engine_options(fs))?;
    let mut dbs = Vec::new();
    for p in 0..PARTS {
        let opts = Options {
            fs: Arc::new(fs.clone()),
            engine: Some(engine.clone()),
            sync_mode: SyncMode::PerWrite,
            memtable_size_bytes: 8 << 10,
            table_size_bytes: 8 << 10,
            level0_compaction_trigger: 2,
            level1_size_bytes: 32 << 10,
            levels_max: 3,
            gc_grace_micros: u64::MAX,
            ..Options::default()
        };
        dbs.push(Db::open(root.join(format!("p{p}")), opts)?);
    }
    Ok((engine, dbs))
}

fn key(k: u64) -> Vec<u8> {
    format!("key{k:05}").into_bytes()
}

/// Write `i`'s value: its index, padded so flushes come often.
fn value(i: usize) -> Vec<u8> {
    let mut v = format!("{i:08}|").into_bytes();
    v.resize(60, b'.');
    v
}

fn index_of(value: &[u8]) -> usize {
    std::str::from_utf8(&value[..8]).unwrap().parse().unwrap()
}

fn seeds() -> Vec<u64> {
    mosaic_env::crash::crash_seeds(200, 0x5eed)
}

/// Runs seed `seed`'s workload with its crash points; checks every image taken.
fn run(seed: u64) -> usize {
    let mut rng = SplitMix64::new(seed);
    // A run makes some 1,700 file-system calls: points spread over them.
    let (fs, acked) =
        CrashFs::with_crash_points(&mut rng, Path::new("/db"), CRASHES_PER_SEED, 1650).unwrap();
    let (engine, dbs) = open(&fs).unwrap();
    let mut log: Vec<(usize, u64)> = Vec::with_capacity(WRITES);
    while log.len() < WRITES {
        let i = log.len();
        let p = rng.index(PARTS);
        let k = rng.below(KEYS);
        if rng.below(40) == 0 {
            // Now and then a run of keys is ingested as tables (a streamed range): no WAL
            // record, durable through the table files and the manifest alone.
            let mut batch = WriteBatch::new();
            for (j, k) in (k..KEYS.min(k + 6)).enumerate() {
                batch.put(&key(k), (i + j) as u64 + 1, &value(i + j));
                log.push((p, k));
            }
            dbs[p].ingest(batch).unwrap();
        } else {
            dbs[p].put(&key(k), i as u64 + 1, &value(i)).unwrap();
            log.push((p, k));
        }
        acked.store(log.len() as u64, Ordering::SeqCst);
    }
    for db in dbs {
        db.close().unwrap();
    }
    engine.close().unwrap();
    let images = fs.take_images();
    for (op, mark, image) in &images {
        check(seed, *op, *mark as usize, image, &log);
    }
    images.len()
}

/// The engine reopened on `image` holds, per key, its last write among the first `acked`
/// (or a later one), and no value never written to it.
fn check(seed: u64, op: u64, acked: usize, image: &CrashFs, log: &[(usize, u64)]) {
    let ctx =
        format!("MOSAIC_SEED={seed}: crash at file-system call {op}, {acked} writes acknowledged");
    let (engine, dbs) = match open(image) {
        Ok(open) => open,
        Err(e) => panic!("{ctx}: the engine does not reopen after the crash: {e}"),
    };
    let mut last_acked: HashMap<(usize, u64), usize> = HashMap::new();
    for (i, pk) in log.iter().enumerate().take(acked) {
        last_acked.insert(*pk, i);
    }
    for (p, db) in dbs.iter().enumerate() {
        for k in 0..KEYS {
            let got = db
                .get(&key(k))
                .unwrap_or_else(|e| panic!("{ctx}: reading p{p} key {k}: {e}"));
            match (got, last_acked.get(&(p, k))) {
                (None, None) => {}
                (None, Some(i)) => panic!("{ctx}: p{p} key {k} lost acknowledged write {i}"),
                (Some(entry), floor) => {
                    let j = index_of(&entry.value);
                    assert!(
                        j < log.len() && log[j] == (p, k),
                        "{ctx}: p{p} key {k} holds {j}, never written to it"
                    );
                    if let Some(i) = floor {
                        assert!(
                            j >= *i,
                            "{ctx}: p{p} key {k} went back from write {i} to {j}"
                        );
                    }
                }
            }
        }
    }
    for db in dbs {
        db.close().unwrap();
    }
    engine.close().unwrap();
}

#[test]
fn every_acknowledged_write_survives_a_power_loss_at_any_file_system_call() {
    let mut images = 0;
    for seed in seeds() {
        images += run(seed);
    }
    assert!(
        images > 0,
        "no crash point was reached: the workload shrank"
    );
}
