#![allow(clippy::unwrap_used, clippy::indexing_slicing)]
//! Scenario: what `Engine::background_work` reports (what `mosaic compactionstats` shows
//! and waits on). In manual mode nothing runs behind the test's back: frozen memtables are
//! pending flushes, level-0 tables past the trigger are a due compaction with the bytes it
//! would read, and once the owner runs the background work the engine is idle.

mod common;

use std::sync::Arc;

use mosaic_env::{CrashFs, Fs};
use mosaic_lsm::{BackgroundWork, Db, Engine, Options, SyncMode};

fn open(fs: &Arc<dyn Fs>, engine: &Engine, level0_compaction_trigger: usize) -> Db {
    Db::open(
        "/n/t",
        Options {
            fs: fs.clone(),
            engine: Some(engine.clone()),
            memtable_size_bytes: 1 << 10,
            immutable_memtables_max: 4,
            level0_compaction_trigger,
            level0_slowdown_tables: 200,
            level0_stall_tables: 300,
            level1_size_bytes: 4 << 10,
            table_size_bytes: 2 << 10,
            block_cache_bytes: 0,
            ..Options::default()
        },
    )
    .unwrap()
}

#[test]
fn pending_flushes_and_due_compactions_are_reported_until_the_work_is_run() {
    let fs: Arc<dyn Fs> = Arc::new(CrashFs::new());
    let engine = Engine::open(
        "/n",
        mosaic_lsm::EngineOptions {
            fs: fs.clone(),
            sync_mode: SyncMode::PerWrite,
            memtable_space_bytes: 0,
            flush_threads: 0,
            compaction_threads: 0,
            ..mosaic_lsm::EngineOptions::default()
        },
    )
    .unwrap();
    // A trigger no test reaches: flushes only.
    let db = open(&fs, &engine, 100);
    assert!(engine.background_work().is_idle());
    for i in 0..40 {
        common::put_cycling(&db, i);
    }
    let frozen = engine.background_work();
    assert!(frozen.flushes_pending > 0, "{frozen:?}");
    assert_eq!(frozen.flushes_running, 0, "{frozen:?}");
    assert_eq!(frozen.compactions_due, 0, "{frozen:?}");
    assert!(!frozen.is_idle());
    db.flush().unwrap();
    let flushed = engine.background_work();
    assert!(flushed.is_idle(), "{flushed:?}");
    assert!(flushed.level0_tables >= 2, "{flushed:?}");
    // Reopened with a trigger its level-0 tables pass: a compaction is due, nothing runs.
    db.close().unwrap();
    let db = open(&fs, &engine, 2);
    let due = engine.background_work();
    assert_eq!(due.compactions_due, 1, "{due:?}");
    assert_eq!(due.compactions_running, 0, "{due:?}");
    assert_eq!(due.level0_tables, flushed.level0_tables, "{due:?}");
    assert!(due.compaction_due_bytes > 0, "{due:?}");
    assert!(!due.is_idle());
    assert!(engine.run_background_work() > 0);
    let idle = engine.background_work();
    assert!(idle.is_idle(), "{idle:?}");
    assert_eq!(
        idle,
        BackgroundWork {
            level0_tables: idle.level0_tables,
            ..BackgroundWork::default()
        }
    );
    assert!(idle.level0_tables < 2, "{idle:?}");
    drop(db);
}
