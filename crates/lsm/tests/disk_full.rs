#![allow(clippy::unwrap_used, clippy::indexing_slicing)]
#![allow(clippy::disallowed_methods)] // Tests run real threads and measure real time; the seam binds the code under test.
//! Scenario: the disk fills up (a `FaultyFs` space budget) while the WAL is appended, while a
//! memtable is flushed, and while a manual or background compaction runs. Every
//! acknowledged write stays readable; while the disk is full, writes fail with
//! `Error::NoSpace` (promptly: no hang, no panic); once space returns, writes, flushes and
//! compactions succeed again by themselves, and everything acknowledged is there, also after
//! a reopen. Writes that failed may or may not have been applied, but never wrongly.

mod common;
use common::scratch;

use std::path::Path;
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mosaic_lsm::{Db, Error, Faults, FaultyFs, Options, RealFs, SyncMode};

/// Bound on any single engine call; a write that takes longer while the disk is full hangs.
const CALL_TIMEOUT: Duration = Duration::from_secs(15);
/// Bound on waiting for the engine to resume after space returns.
const RESUME_TIMEOUT: Duration = Duration::from_secs(20);

fn key(i: usize) -> Vec<u8> {
    format!("key{i:06}").into_bytes()
}

fn value(i: usize) -> Vec<u8> {
    let mut v = format!("value-{i:06}-").into_bytes();
    v.extend((0..150 + i % 100).map(|j| (i * 31 + j) as u8));
    v
}

fn ts(i: usize) -> u64 {
    i as u64 + 1
}

/// Runs `f` on its own thread and fails the test if it does not return within `CALL_TIMEOUT`.
fn bounded<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    match rx.recv_timeout(CALL_TIMEOUT) {
        Ok(v) => v,
        Err(_) => panic!("{what} did not return within {CALL_TIMEOUT:?} (hang on a full disk?)"),
    }
}

fn put(db: &Db, i: usize) -> mosaic_lsm::Result<()> {
    let db = db.clone();
    bounded(&format!("put of key {i}"), move || {
        db.put(&key(i), ts(i), &value(i))
    })
}

fn options(faults: &Arc<Faults>, memtable_size_bytes: usize, l0_trigger: usize) -> Options {
    Options {
        fs: Arc::new(FaultyFs::new(Arc::new(RealFs), faults.clone())),
        sync_mode: SyncMode::PerWrite,
        memtable_size_bytes,
        immutable_memtables_max: 2,
        level0_compaction_trigger: l0_trigger,
        level0_stall_tables: l0_trigger + 6,
        level1_size_bytes: 64 << 10,
        table_size_bytes: 32 << 10,
        levels_max: 4,
        gc_grace_micros: u64::MAX,
        ..Options::default()
    }
}

/// What the test knows about each key.
#[derive(Default)]
struct Ledger {
    acked: Vec<usize>,
    failed: Vec<usize>,
    next: usize,
}

impl Ledger {
    /// Writes the next key; records the outcome; returns the error, if any.
    fn write(&mut self, db: &Db) -> Option<Error> {
        let i = self.next;
        self.next += 1;
        match put(db, i) {
            Ok(()) => {
                self.acked.push(i);
                None
            }
            Err(e) => {
                assert!(
                    e.is_no_space(),
                    "write of key {i} failed with something other than NoSpace: {e:?}"
                );
                self.failed.push(i);
                Some(e)
            }
        }
    }

    /// Every acknowledged key reads back exactly; failed keys are absent or exactly right.
    fn verify(&self, db: &Db, ctx: &str) {
        for &i in &self.acked {
            let e = db
                .get(&key(i))
                .unwrap_or_else(|e| panic!("{ctx}: get of acknowledged key {i} failed: {e}"))
                .unwrap_or_else(|| panic!("{ctx}: acknowledged key {i} is missing"));
            assert_eq!((e.ts, e.value), (ts(i), value(i)), "{ctx}: key {i}");
        }
        for &i in &self.failed {
            if let Some(e) = db.get(&key(i)).unwrap() {
                assert_eq!(
                    (e.ts, e.value),
                    (ts(i), value(i)),
                    "{ctx}: failed key {i} has a wrong value"
                );
            }
        }
        let scanned = db
            .scan(std::ops::Bound::Unbounded, std::ops::Bound::Unbounded)
            .unwrap()
            .count();
        assert!(
            scanned >= self.acked.len(),
            "{ctx}: scan sees {scanned} keys, fewer than the {} acknowledged",
            self.acked.len()
        );
    }

    /// After space returns: retries a write until one succeeds (bounded), then a few more.
    fn resume(&mut self, db: &Db, ctx: &str) {
        let deadline = Instant::now() + RESUME_TIMEOUT;
        loop {
            if self.write(db).is_none() {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "{ctx}: writes still fail {RESUME_TIMEOUT:?} after space returned"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        for _ in 0..50 {
            let i = self.next;
            assert!(
                self.write(db).is_none(),
                "{ctx}: write of key {i} failed after resuming"
            );
        }
    }
}

/// Retries `op` until it succeeds (bounded); errors on the way must be NoSpace.
fn retry_until_ok(what: &str, db: &Db, op: fn(&Db) -> mosaic_lsm::Result<()>) {
    let deadline = Instant::now() + RESUME_TIMEOUT;
    loop {
        let d = db.clone();
        match bounded(what, move || op(&d)) {
            Ok(()) => return,
            Err(e) => {
                assert!(e.is_no_space(), "{what} failed after space returned: {e:?}");
                assert!(
                    Instant::now() < deadline,
                    "{what} still fails with NoSpace {RESUME_TIMEOUT:?} after space returned"
                );
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    }
}

fn reopen_and_verify(dir: &Path, faults: &Arc<Faults>, ledger: &Ledger, mem: usize, ctx: &str) {
    let db = Db::open(dir, options(faults, mem, 4)).unwrap();
    ledger.verify(&db, &format!("{ctx}, after reopen"));
    db.close().unwrap();
}

#[test]
fn wal_append_on_a_full_disk_fails_with_no_space_and_resumes() {
    let dir = scratch();
    let faults = Arc::new(Faults::default());
    let mem = 4 << 20;
    let db = Db::open(dir.path(), options(&faults, mem, 4)).unwrap();
    let mut ledger = Ledger::default();
    for _ in 0..100 {
        assert!(ledger.write(&db).is_none());
    }
    faults.set_space_bytes(32 << 10);
    let mut hit = false;
    for _ in 0..2_000 {
        if ledger.write(&db).is_some() {
            hit = true;
            break;
        }
    }
    assert!(hit, "32 KiB of free space never ran out");
    // Still full: every write fails, promptly, with NoSpace.
    for _ in 0..20 {
        let i = ledger.next;
        assert!(
            ledger.write(&db).is_some(),
            "write of key {i} succeeded on a full disk"
        );
    }
    ledger.verify(&db, "disk full");
    faults.unlimited_space();
    ledger.resume(&db, "after space returned");
    ledger.verify(&db, "after space returned");
    db.close().unwrap();
    reopen_and_verify(dir.path(), &faults, &ledger, mem, "wal full");
    assert!(faults.no_space_errors() > 0);
}

#[test]
fn flush_on_a_full_disk_fails_with_no_space_and_resumes() {
    let dir = scratch();
    let faults = Arc::new(Faults::default());
    let mem = 256 << 10;
    let db = Db::open(dir.path(), options(&faults, mem, 4)).unwrap();
    let mut ledger = Ledger::default();
    // ~150 KiB in the memtable, nothing flushed yet.
    for _ in 0..700 {
        assert!(ledger.write(&db).is_none());
    }
    assert_eq!(db.counters().flushes, 0);
    // Room for a little more WAL, not for the table.
    faults.set_space_bytes(24 << 10);
    let d = db.clone();
    let r = bounded("flush on a full disk", move || d.flush());
    assert!(
        matches!(&r, Err(e) if e.is_no_space()),
        "flush on a full disk: {r:?}"
    );
    ledger.verify(&db, "after the failed flush");
    // Keep writing: whatever space is left goes, then writes fail with NoSpace (never hang,
    // even when the memtable fills and its flush cannot run).
    let mut consecutive = 0;
    for _ in 0..3_000 {
        if ledger.write(&db).is_some() {
            consecutive += 1;
            if consecutive >= 20 {
                break;
            }
        } else {
            consecutive = 0;
        }
    }
    assert!(
        consecutive >= 20,
        "writes kept succeeding on a full disk ({} acknowledged)",
        ledger.acked.len()
    );
    ledger.verify(&db, "disk full");
    faults.unlimited_space();
    retry_until_ok("flush after space returned", &db, Db::flush);
    ledger.resume(&db, "after space returned");
    ledger.verify(&db, "after space returned");
    db.close().unwrap();
    reopen_and_verify(dir.path(), &faults, &ledger, mem, "flush full");
}

#[test]
fn manual_compaction_on_a_full_disk_fails_with_no_space_and_resumes() {
    let dir = scratch();
    let faults = Arc::new(Faults::default());
    let mem = 1 << 20;
    // A high trigger: only the manual compaction runs.
    let db = Db::open(dir.path(), options(&faults, mem, 8)).unwrap();
    let mut ledger = Ledger::default();
    for _ in 0..3 {
        for _ in 0..200 {
            assert!(ledger.write(&db).is_none());
        }
        db.flush().unwrap();
    }
    assert_eq!(db.levels()[0].tables.len(), 3);
    faults.set_space_bytes(8 << 10);
    let d = db.clone();
    let r = bounded("compact on a full disk", move || d.compact());
    assert!(
        matches!(&r, Err(e) if e.is_no_space()),
        "compact on a full disk: {r:?}"
    );
    ledger.verify(&db, "after the failed compaction");
    // Writes are not refused for a failed manual compaction while WAL space lasts; they may
    // run out of space, but must fail cleanly.
    for _ in 0..100 {
        let _ = ledger.write(&db);
    }
    ledger.verify(&db, "disk full");
    faults.unlimited_space();
    retry_until_ok("compact after space returned", &db, Db::compact);
    let nonempty: Vec<usize> = db
        .levels()
        .iter()
        .filter(|l| !l.tables.is_empty())
        .map(|l| l.level)
        .collect();
    assert_eq!(
        nonempty.len(),
        1,
        "after compact: tables in levels {nonempty:?}"
    );
    ledger.resume(&db, "after space returned");
    ledger.verify(&db, "after space returned");
    db.close().unwrap();
    reopen_and_verify(dir.path(), &faults, &ledger, mem, "manual compaction full");
}

#[test]
fn background_compaction_on_a_full_disk_resumes_by_itself() {
    let dir = scratch();
    let faults = Arc::new(Faults::default());
    let mem = 1 << 20;
    let db = Db::open(dir.path(), options(&faults, mem, 2)).unwrap();
    let mut ledger = Ledger::default();
    let before = db.counters();
    for _ in 0..150 {
        assert!(ledger.write(&db).is_none());
    }
    db.flush().unwrap();
    let chunk = db.counters().since(&before);
    let table_bytes: u64 = db.levels()[0].tables.iter().map(|t| t.size_bytes).sum();
    assert!(table_bytes > 0);
    // Room for one more chunk's WAL and table, with margin, but not for the compaction that
    // the second level-0 table triggers (its output is as large as both inputs).
    let space = chunk.wal_bytes_written + table_bytes + table_bytes / 2;
    let compactions_before = db.counters().compactions;
    let errors_before = faults.no_space_errors();
    faults.set_space_bytes(space);
    for _ in 0..150 {
        assert!(
            ledger.write(&db).is_none(),
            "the budget must fit one more chunk"
        );
    }
    let d = db.clone();
    let r = bounded("flush of the second chunk", move || d.flush());
    assert!(r.is_ok(), "the budget must fit the second table: {r:?}");
    // The background compaction now runs out of space.
    let deadline = Instant::now() + CALL_TIMEOUT;
    while faults.no_space_errors() == errors_before {
        assert!(
            Instant::now() < deadline,
            "the background compaction never hit the full disk"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    ledger.verify(&db, "compaction failed");
    for _ in 0..50 {
        let _ = ledger.write(&db);
    }
    ledger.verify(&db, "disk full");
    faults.unlimited_space();
    retry_until_ok(
        "wait_for_compactions after space returned",
        &db,
        Db::wait_for_compactions,
    );
    assert!(
        db.counters().compactions > compactions_before,
        "no compaction completed after space returned"
    );
    assert!(
        db.levels()[0].tables.len() < 2,
        "level 0 was not compacted: {:?}",
        db.levels()[0].tables.len()
    );
    ledger.resume(&db, "after space returned");
    ledger.verify(&db, "after space returned");
    db.close().unwrap();
    reopen_and_verify(
        dir.path(),
        &faults,
        &ledger,
        mem,
        "background compaction full",
    );
}

/// Several writers (group commit) with flushes and compactions running into the full disk:
/// each writer sees only acknowledgements and NoSpace, none hangs, all resume.
#[test]
fn concurrent_writers_on_a_full_disk_fail_cleanly_and_resume() {
    const THREADS: usize = 4;
    const PER_THREAD: usize = 100_000;
    let dir = scratch();
    let faults = Arc::new(Faults::default());
    let mem = 16 << 10;
    let opts = Options {
        sync_mode: SyncMode::Batch,
        ..options(&faults, mem, 2)
    };
    let db = Db::open(dir.path(), opts).unwrap();
    let phase = Arc::new(std::sync::atomic::AtomicU8::new(0)); // 0 fill, 1 full, 2 resumed
    let refused = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let (tx, rx) = mpsc::channel();
    for t in 0..THREADS {
        let (db, phase, tx) = (db.clone(), phase.clone(), tx.clone());
        let refused = refused.clone();
        std::thread::spawn(move || {
            // Thread t writes keys t, t + THREADS, …; returns (acked, failed, resumed).
            let mut ledger = Ledger {
                next: t,
                ..Ledger::default()
            };
            let mut resumed_writes = 0;
            for _ in 0..PER_THREAD {
                let i = ledger.next;
                ledger.next = i + THREADS;
                match db.put(&key(i), ts(i), &value(i)) {
                    Ok(()) => {
                        ledger.acked.push(i);
                        if phase.load(std::sync::atomic::Ordering::SeqCst) == 2 {
                            resumed_writes += 1;
                            if resumed_writes >= 100 {
                                break;
                            }
                        }
                    }
                    Err(e) => {
                        assert!(e.is_no_space(), "thread {t}: write {i}: {e:?}");
                        ledger.failed.push(i);
                        refused.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                        std::thread::sleep(Duration::from_millis(1));
                    }
                }
            }
            // Let go of the engine before reporting: the test reopens it next.
            drop(db);
            let _ = tx.send((t, ledger.acked, ledger.failed, resumed_writes));
        });
    }
    drop(tx);
    // Let the writers fill a few memtables, then cap the space.
    let deadline = Instant::now() + CALL_TIMEOUT;
    while db.counters().flushes < 4 {
        assert!(Instant::now() < deadline, "no flushes");
        std::thread::sleep(Duration::from_millis(2));
    }
    faults.set_space_bytes(48 << 10);
    phase.store(1, std::sync::atomic::Ordering::SeqCst);
    let deadline = Instant::now() + CALL_TIMEOUT;
    while refused.load(std::sync::atomic::Ordering::SeqCst) < 200 {
        assert!(Instant::now() < deadline, "the disk never filled");
        std::thread::sleep(Duration::from_millis(2));
    }
    faults.unlimited_space();
    phase.store(2, std::sync::atomic::Ordering::SeqCst);
    let mut all = Ledger::default();
    for _ in 0..THREADS {
        let (t, acked, failed, resumed) = rx
            .recv_timeout(RESUME_TIMEOUT + CALL_TIMEOUT)
            .expect("a writer hung or panicked on the full disk");
        assert!(
            resumed >= 100,
            "thread {t} did not resume ({resumed} writes after space returned)"
        );
        all.acked.extend(acked);
        all.failed.extend(failed);
    }
    assert!(
        !all.failed.is_empty(),
        "no write ever failed on the full disk"
    );
    all.verify(&db, "concurrent, after space returned");
    retry_until_ok("wait_for_compactions", &db, Db::wait_for_compactions);
    all.verify(&db, "concurrent, after compactions");
    db.close().unwrap();
    reopen_and_verify(dir.path(), &faults, &all, mem, "concurrent");
}
