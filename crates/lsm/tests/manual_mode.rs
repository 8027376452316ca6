#![allow(clippy::unwrap_used, clippy::indexing_slicing)]
//! Scenario: a node engine in manual mode (`flush_threads` and `compaction_threads` both
//! 0, as the deterministic simulator runs it) starts no thread: frozen memtables wait
//! until the owner runs the background work, a writer that would stall on them runs it
//! itself instead of waiting forever, `flush` and `wait_for_compactions` do the work they
//! wait for, and two runs of the same writes leave byte-identical file systems.

mod common;

use std::path::Path;
use std::sync::Arc;

use mosaic_env::{CrashFs, Fs};
use mosaic_lsm::{Db, Engine, EngineOptions, Options, SyncMode};

fn open(fs: &CrashFs) -> (Engine, Db) {
    let fs: Arc<dyn Fs> = Arc::new(fs.clone());
    let engine = Engine::open(
        "/n",
        EngineOptions {
            fs: fs.clone(),
            sync_mode: SyncMode::PerWrite,
            memtable_space_bytes: 0,
            flush_threads: 0,
            compaction_threads: 0,
            ..EngineOptions::default()
        },
    )
    .unwrap();
    let db = Db::open(
        "/n/t",
        Options {
            fs,
            // File creation times come from the clock: a fixed one, so runs compare.
            clock: Arc::new(mosaic_lsm::ManualClock::new(1_000_000)),
            engine: Some(engine.clone()),
            memtable_size_bytes: 1 << 10,
            immutable_memtables_max: 2,
            level0_compaction_trigger: 2,
            level0_stall_tables: 4,
            level1_size_bytes: 4 << 10,
            table_size_bytes: 2 << 10,
            block_cache_bytes: 0,
            ..Options::default()
        },
    )
    .unwrap();
    (engine, db)
}

/// Every file's path and bytes.
fn image(fs: &CrashFs, dir: &Path, out: &mut Vec<(String, Vec<u8>)>) {
    for name in fs.list(dir).unwrap() {
        let path = dir.join(&name);
        match fs.read_all(&path) {
            Ok(bytes) => out.push((path.display().to_string(), bytes)),
            Err(_) => image(fs, &path, out),
        }
    }
}

fn run() -> (CrashFs, u64, u64) {
    let fs = CrashFs::new();
    let (engine, db) = open(&fs);
    // A handful of writes fill a memtable or two that nothing flushes behind the
    // writer's back (short of the stall: two frozen memtables and a full one).
    for i in 0..12 {
        common::put_cycling(&db, i);
    }
    assert_eq!(db.counters().flushes, 0, "no worker thread flushed");
    assert!(engine.run_background_work() > 0);
    let flushed = db.counters().flushes;
    assert!(flushed > 0);
    assert_eq!(
        engine.run_background_work(),
        0,
        "nothing due after a full run"
    );
    // Never running it: the writer that would stall does the work itself.
    for i in 12..2_000 {
        common::put_cycling(&db, i);
    }
    assert!(db.counters().flushes > flushed + 20, "{:?}", db.counters());
    assert!(db.counters().compactions > 0, "{:?}", db.counters());
    db.flush().unwrap();
    db.wait_for_compactions().unwrap();
    for i in 1_700..2_000u64 {
        let got = db
            .get(format!("key{:04}", i % 300).as_bytes())
            .unwrap()
            .unwrap();
        assert_eq!(got.ts, i + 1);
    }
    let c = db.counters();
    (fs, c.flushes, c.compactions)
}

#[test]
fn a_manual_engine_runs_background_work_only_when_asked_or_needed_and_replays_exactly() {
    let (a, flushes, compactions) = run();
    let (b, flushes_b, compactions_b) = run();
    assert_eq!((flushes, compactions), (flushes_b, compactions_b));
    let (mut ia, mut ib) = (Vec::new(), Vec::new());
    image(&a, Path::new("/n"), &mut ia);
    image(&b, Path::new("/n"), &mut ib);
    assert!(
        ia.len() > 3,
        "{:?}",
        ia.iter().map(|f| &f.0).collect::<Vec<_>>()
    );
    let differ: Vec<&String> = ia
        .iter()
        .zip(&ib)
        .filter(|(x, y)| x != y)
        .map(|(x, _)| &x.0)
        .collect();
    assert!(
        ia.len() == ib.len() && differ.is_empty(),
        "runs differ in {differ:?}"
    );
    // One thread or two, the engine and a worker: manual mode has no worker to leave.
    assert_eq!(a.ops(), b.ops());
}
