#![allow(clippy::unwrap_used, clippy::indexing_slicing)]
#![allow(clippy::disallowed_methods)] // Tests run real threads and measure real time; the seam binds the code under test.
//! Scenario: an fsync fails (`Faults::set_fail_sync`). The write (or flush) that hit it
//! returns an error; from then on the engine refuses writes with `Error::Poisoned` — even
//! after fsync works again, since the kernel may have dropped the dirty pages — until it is
//! reopened; reopening recovers everything acknowledged before the failure. Covered: the WAL
//! sync of a `PerWrite` write, a `Batch` group commit with several writer threads, and the
//! table sync of a flush.

mod common;
use common::scratch;

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

use mosaic_lsm::{Db, Error, Faults, FaultyFs, Options, RealFs, SyncMode, WriteBatch};

const CALL_TIMEOUT: Duration = Duration::from_secs(15);

fn key(t: usize, i: usize) -> Vec<u8> {
    format!("t{t}-key{i:06}").into_bytes()
}

fn value(t: usize, i: usize) -> Vec<u8> {
    let mut v = format!("value-{t}-{i:06}-").into_bytes();
    v.extend((0..(i * 13) % 200).map(|j| (i + j) as u8));
    v
}

fn ts(i: usize) -> u64 {
    i as u64 + 1
}

fn bounded<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(CALL_TIMEOUT)
        .unwrap_or_else(|_| panic!("{what} did not return within {CALL_TIMEOUT:?}"))
}

fn options(faults: &Arc<Faults>, sync_mode: SyncMode, memtable_size_bytes: usize) -> Options {
    Options {
        fs: Arc::new(FaultyFs::new(Arc::new(RealFs), faults.clone())),
        sync_mode,
        memtable_size_bytes,
        level0_compaction_trigger: 2,
        level0_stall_tables: 8,
        table_size_bytes: 32 << 10,
        level1_size_bytes: 64 << 10,
        levels_max: 4,
        gc_grace_micros: u64::MAX,
        ..Options::default()
    }
}

fn is_poisoned(e: &Error) -> bool {
    matches!(e, Error::Poisoned { .. })
}

/// After the failure: writes of every kind are refused with `Poisoned`, also once syncs
/// work again.
fn assert_writes_refused(db: &Db, faults: &Faults, ctx: &str) {
    for round in 0..2 {
        if round == 1 {
            // A retried fsync may "succeed" after the kernel dropped the dirty pages: the
            // engine must not trust it.
            faults.set_fail_sync(false);
        }
        let r = db.put(b"refused", 1, b"x");
        assert!(
            matches!(&r, Err(e) if is_poisoned(e)),
            "{ctx}: put after the failure (round {round}): {r:?}"
        );
        let r = db.delete(b"refused", 2);
        assert!(
            matches!(&r, Err(e) if is_poisoned(e)),
            "{ctx}: delete after the failure: {r:?}"
        );
        let mut b = WriteBatch::new();
        b.put(b"refused-batch", 1, b"x");
        let r = db.write(b);
        assert!(
            matches!(&r, Err(e) if is_poisoned(e)),
            "{ctx}: batch after the failure: {r:?}"
        );
        let d = db.clone();
        let r = bounded("flush after the failure", move || d.flush());
        assert!(r.is_err(), "{ctx}: flush after the failure succeeded");
    }
}

/// Checks every acknowledged key of thread `t`; `maybe` keys (failed writes) are absent or
/// exactly right; keys refused while poisoned are absent.
fn verify(db: &Db, t: usize, acked: usize, maybe: &[usize], ctx: &str) {
    for i in 0..acked {
        let e = db
            .get(&key(t, i))
            .unwrap()
            .unwrap_or_else(|| panic!("{ctx}: acknowledged key {t}/{i} is missing"));
        assert_eq!((e.ts, e.value), (ts(i), value(t, i)), "{ctx}: key {t}/{i}");
    }
    for &i in maybe {
        if let Some(e) = db.get(&key(t, i)).unwrap() {
            assert_eq!((e.ts, e.value), (ts(i), value(t, i)), "{ctx}: key {t}/{i}");
        }
    }
    assert!(
        db.get(b"refused").unwrap().is_none(),
        "{ctx}: a refused write was applied"
    );
    assert!(
        db.get(b"refused-batch").unwrap().is_none(),
        "{ctx}: a refused batch was applied"
    );
}

fn reopen(dir: &Path, faults: &Arc<Faults>, mem: usize) -> Db {
    faults.set_fail_sync(false);
    Db::open(dir, options(faults, SyncMode::PerWrite, mem)).unwrap()
}

#[test]
fn failed_wal_fsync_poisons_until_reopen_and_loses_nothing_acknowledged() {
    let dir = scratch();
    let faults = Arc::new(Faults::default());
    // A small memtable so some acknowledged data is in tables, some only in the WAL.
    let mem = 16 << 10;
    let db = Db::open(dir.path(), options(&faults, SyncMode::PerWrite, mem)).unwrap();
    let acked = 300;
    for i in 0..acked {
        db.put(&key(0, i), ts(i), &value(0, i)).unwrap();
    }
    faults.set_fail_sync(true);
    let r = db.put(&key(0, acked), ts(acked), &value(0, acked));
    assert!(r.is_err(), "a write whose fsync failed was acknowledged");
    assert_writes_refused(&db, &faults, "PerWrite");
    // Reads still work and see everything acknowledged.
    verify(&db, 0, acked, &[acked], "poisoned, before reopen");
    let _ = db.close();
    let db = reopen(dir.path(), &faults, mem);
    verify(&db, 0, acked, &[acked], "after reopen");
    // Writable again.
    db.put(&key(0, acked + 1), ts(acked + 1), &value(0, acked + 1))
        .unwrap();
    db.close().unwrap();
    let db = reopen(dir.path(), &faults, mem);
    // Key `acked` is the failed write, which may or may not have reached the log: not
    // acknowledged, so only checked to be absent or right (counting it as acknowledged
    // failed this test about once in 200 runs).
    verify(&db, 0, acked, &[acked], "after a second reopen");
    let e = db.get(&key(0, acked + 1)).unwrap();
    assert_eq!(
        e.map(|e| (e.ts, e.value)),
        Some((ts(acked + 1), value(0, acked + 1))),
        "after a second reopen: the write acknowledged after the first reopen"
    );
    db.close().unwrap();
}

#[test]
fn failed_group_commit_fsync_poisons_every_writer() {
    let dir = scratch();
    let faults = Arc::new(Faults::default());
    let mem = 32 << 10;
    let db = Db::open(dir.path(), options(&faults, SyncMode::Batch, mem)).unwrap();
    let threads = 4;
    let failed = Arc::new(AtomicBool::new(false));
    let (tx, rx) = mpsc::channel();
    for t in 0..threads {
        let db = db.clone();
        let tx = tx.clone();
        let failed = failed.clone();
        std::thread::spawn(move || {
            // Returns (acknowledged count, index of the first failed write).
            let mut first_err = None;
            let mut acked = 0;
            for i in 0..100_000 {
                match db.put(&key(t, i), ts(i), &value(t, i)) {
                    Ok(()) => {
                        assert!(
                            first_err.is_none(),
                            "thread {t}: write {i} acknowledged after an earlier failure"
                        );
                        acked = i + 1;
                    }
                    Err(e) => {
                        if first_err.is_some() {
                            assert!(
                                is_poisoned(&e),
                                "thread {t}: later error not Poisoned: {e:?}"
                            );
                            break;
                        }
                        first_err = Some((i, e.to_string()));
                    }
                }
                // Stop a runaway writer if the fault never lands.
                if i > 50_000 && !failed.load(Ordering::SeqCst) {
                    break;
                }
            }
            // Let go of the engine before reporting: the test reopens it next.
            drop(db);
            let _ = tx.send((t, acked, first_err));
        });
    }
    drop(tx);
    // Let the writers get going, then fail syncs.
    let deadline = std::time::Instant::now() + CALL_TIMEOUT;
    while db.counters().wal_syncs < 200 {
        assert!(
            std::time::Instant::now() < deadline,
            "writers made no progress"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
    faults.set_fail_sync(true);
    failed.store(true, Ordering::SeqCst);
    let mut results = Vec::new();
    for _ in 0..threads {
        results.push(
            rx.recv_timeout(CALL_TIMEOUT)
                .expect("a writer thread did not finish (panicked or hung)"),
        );
    }
    results.sort_by_key(|r| r.0);
    for (t, acked, first_err) in &results {
        assert!(
            first_err.is_some(),
            "thread {t} never saw the failure ({acked} acked)"
        );
    }
    assert_writes_refused(&db, &faults, "Batch");
    let _ = db.close();
    let db = reopen(dir.path(), &faults, mem);
    for (t, acked, first_err) in &results {
        let maybe: Vec<usize> = first_err.iter().map(|(i, _)| *i).collect();
        verify(&db, *t, *acked, &maybe, &format!("Batch thread {t}"));
    }
    db.close().unwrap();
}

#[test]
fn failed_table_fsync_during_flush_poisons_until_reopen() {
    let dir = scratch();
    let faults = Arc::new(Faults::default());
    let mem = 1 << 20;
    let db = Db::open(dir.path(), options(&faults, SyncMode::PerWrite, mem)).unwrap();
    let acked = 400;
    for i in 0..acked {
        db.put(&key(0, i), ts(i), &value(0, i)).unwrap();
    }
    assert_eq!(db.counters().flushes, 0);
    faults.set_fail_sync(true);
    let d = db.clone();
    let r = bounded("flush with failing fsync", move || d.flush());
    assert!(r.is_err(), "a flush whose fsync failed reported success");
    assert_writes_refused(&db, &faults, "flush");
    verify(&db, 0, acked, &[], "poisoned by a flush");
    let _ = db.close();
    let db = reopen(dir.path(), &faults, mem);
    verify(&db, 0, acked, &[], "after reopen");
    db.flush().unwrap();
    db.close().unwrap();
    let db = reopen(dir.path(), &faults, mem);
    verify(&db, 0, acked, &[], "after a flush and a second reopen");
    db.close().unwrap();
}

#[test]
fn failed_periodic_sync_poisons_and_loses_nothing_acknowledged() {
    let dir = scratch();
    let faults = Arc::new(Faults::default());
    let mem = 16 << 10;
    let db = Db::open(
        dir.path(),
        options(&faults, SyncMode::Periodic { interval_ms: 5 }, mem),
    )
    .unwrap();
    let mut acked = 0;
    for i in 0..200 {
        db.put(&key(0, i), ts(i), &value(0, i)).unwrap();
        acked = i + 1;
    }
    faults.set_fail_sync(true);
    // The background sync (or a flush's) fails; writes are refused soon after. Writes
    // acknowledged before that are in the OS, which a process crash does not lose.
    let deadline = std::time::Instant::now() + CALL_TIMEOUT;
    let mut maybe = Vec::new();
    loop {
        let i = acked + maybe.len();
        match db.put(&key(0, i), ts(i), &value(0, i)) {
            Ok(()) if maybe.is_empty() => acked += 1,
            Ok(()) => panic!("write {i} acknowledged after an earlier one failed"),
            Err(e) => {
                maybe.push(i);
                if is_poisoned(&e) {
                    break;
                }
            }
        }
        assert!(
            std::time::Instant::now() < deadline,
            "writes never refused after the periodic sync failed ({acked} acknowledged)"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_writes_refused(&db, &faults, "Periodic");
    verify(&db, 0, acked, &maybe, "poisoned by a periodic sync");
    let _ = db.close();
    let db = reopen(dir.path(), &faults, mem);
    verify(&db, 0, acked, &maybe, "after reopen");
    db.close().unwrap();
}

#[test]
fn failed_fsync_during_compaction_loses_nothing() {
    let dir = scratch();
    let faults = Arc::new(Faults::default());
    let mem = 1 << 20;
    let opts = Options {
        level0_compaction_trigger: 8,
        level0_stall_tables: 16,
        ..options(&faults, SyncMode::PerWrite, mem)
    };
    let db = Db::open(dir.path(), opts).unwrap();
    let acked = 600;
    for i in 0..acked {
        db.put(&key(0, i), ts(i), &value(0, i)).unwrap();
        if (i + 1).is_multiple_of(200) {
            db.flush().unwrap();
        }
    }
    faults.set_fail_sync(true);
    let d = db.clone();
    let r = bounded("compact with failing fsync", move || d.compact());
    assert!(
        r.is_err(),
        "a compaction whose fsync failed reported success"
    );
    faults.set_fail_sync(false);
    // The inputs are still live: everything reads back.
    verify(&db, 0, acked, &[], "after the failed compaction");
    let _ = db.close();
    let db = reopen(dir.path(), &faults, mem);
    verify(&db, 0, acked, &[], "after reopen");
    db.compact().unwrap();
    verify(&db, 0, acked, &[], "after a successful compaction");
    db.close().unwrap();
    let db = reopen(dir.path(), &faults, mem);
    verify(&db, 0, acked, &[], "after a second reopen");
    db.close().unwrap();
}
