#![allow(clippy::unwrap_used, clippy::indexing_slicing)]
#![allow(clippy::disallowed_methods)] // Tests run real threads and measure real time; the seam binds the code under test.
//! Scenario: writers, readers and maintenance run concurrently while a tiny memtable makes
//! flushes, compactions and write stalls happen all the time.
//!
//! Each writer owns a group of keys and overwrites the whole group with one atomic batch per
//! generation (`ts = generation`), so every consistent view shows one generation across the
//! group. Checked:
//! - readers: a snapshot (`get_at`) and a scan each see one generation across a group, never
//!   older than a generation the reader saw before (reads are monotonic), values intact;
//! - writers: a scan opened before a batch does not see it; a snapshot taken at generation
//!   g reads g (by `get_at` and `scan_at`) after later writes, flushes and compactions;
//! - a snapshot held through the whole run still reads its generation at the end, after a
//!   full compaction;
//! - all of it finishes within a bound (stalled writers are released), and the final state
//!   survives a reopen.

mod common;
use common::scratch;

use std::ops::Bound;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use mosaic_lsm::{Db, Entry, Options, Snapshot, SyncMode, WriteBatch};

const WRITERS: usize = 3;
const READERS: usize = 2;
const KEYS_PER_GROUP: usize = 16;
const GENERATIONS: u64 = 800;
const RUN_TIMEOUT: Duration = Duration::from_secs(90);

fn key(g: usize, i: usize) -> Vec<u8> {
    format!("g{g}-k{i:02}").into_bytes()
}

fn group_bounds(g: usize) -> (Vec<u8>, Vec<u8>) {
    (format!("g{g}-").into_bytes(), format!("g{g}.").into_bytes())
}

fn value(g: usize, i: usize, generation: u64) -> Vec<u8> {
    let mut v = format!("g{g}|k{i:02}|gen{generation}|").into_bytes();
    v.extend((0..60 + (i * 7 + generation as usize) % 80).map(|j| (j as u8) ^ (generation as u8)));
    v
}

/// The generation an entry holds, after checking it is intact and under the right key.
fn generation_of(g: usize, i: usize, e: &Entry) -> u64 {
    assert_eq!(
        e.value,
        value(g, i, e.ts),
        "group {g} key {i}: value does not match ts {}",
        e.ts
    );
    e.ts
}

/// The single generation shown by a consistent read of group `g` (None: group not written
/// yet); panics if the view mixes generations.
fn one_generation(g: usize, entries: &[(usize, Option<Entry>)], what: &str) -> Option<u64> {
    let gens: Vec<Option<u64>> = entries
        .iter()
        .map(|(i, e)| e.as_ref().map(|e| generation_of(g, *i, e)))
        .collect();
    assert!(
        gens.windows(2).all(|w| w[0] == w[1]),
        "{what} of group {g} mixes generations: {gens:?}"
    );
    gens[0]
}

fn read_group_at(db: &Db, g: usize, snap: &Snapshot) -> Option<u64> {
    let entries: Vec<_> = (0..KEYS_PER_GROUP)
        .map(|i| (i, db.get_at(&key(g, i), snap).unwrap()))
        .collect();
    one_generation(g, &entries, "snapshot get")
}

fn scan_group(scan: mosaic_lsm::Scan, g: usize, what: &str) -> Option<u64> {
    let items: Vec<(Vec<u8>, Entry)> = scan.map(|r| r.unwrap()).collect();
    if items.is_empty() {
        return None;
    }
    assert_eq!(
        items.len(),
        KEYS_PER_GROUP,
        "{what} of group {g}: partial group"
    );
    let entries: Vec<_> = items
        .into_iter()
        .enumerate()
        .map(|(i, (k, e))| {
            assert_eq!(k, key(g, i), "{what}: keys out of order or missing");
            (i, Some(e))
        })
        .collect();
    one_generation(g, &entries, what)
}

fn scan_group_now(db: &Db, g: usize) -> Option<u64> {
    let (lo, hi) = group_bounds(g);
    let scan = db
        .scan(Bound::Included(&lo[..]), Bound::Excluded(&hi[..]))
        .unwrap();
    scan_group(scan, g, "scan")
}

fn scan_group_at(db: &Db, g: usize, snap: &Snapshot) -> Option<u64> {
    let (lo, hi) = group_bounds(g);
    let scan = db
        .scan_at(snap, Bound::Included(&lo[..]), Bound::Excluded(&hi[..]))
        .unwrap();
    scan_group(scan, g, "snapshot scan")
}

fn write_generation(db: &Db, g: usize, generation: u64) {
    let mut b = WriteBatch::new();
    for i in 0..KEYS_PER_GROUP {
        b.put(&key(g, i), generation, &value(g, i, generation));
    }
    db.write(b).unwrap();
}

fn writer(db: Db, g: usize, published: Arc<AtomicU64>) {
    let mut held: Vec<(u64, Snapshot)> = Vec::new();
    for generation in 1..=GENERATIONS {
        if generation.is_multiple_of(10) {
            // A scan opened before the batch must not see it.
            let (lo, hi) = group_bounds(g);
            let scan = db
                .scan(Bound::Included(&lo[..]), Bound::Excluded(&hi[..]))
                .unwrap();
            write_generation(&db, g, generation);
            assert_eq!(
                scan_group(scan, g, "scan opened before a batch"),
                Some(generation - 1),
                "a scan saw a batch written after it was opened"
            );
        } else {
            write_generation(&db, g, generation);
        }
        published.store(generation, Ordering::SeqCst);
        if generation.is_multiple_of(25) {
            held.push((generation, db.snapshot()));
        }
        // Re-read older snapshots after later writes (and the flushes and compactions they
        // caused), then let most of them go.
        if generation.is_multiple_of(50) {
            for (gen_at, snap) in &held {
                assert_eq!(read_group_at(&db, g, snap), Some(*gen_at), "group {g}");
                assert_eq!(scan_group_at(&db, g, snap), Some(*gen_at), "group {g}");
            }
            held.retain(|(gen_at, _)| gen_at.is_multiple_of(100));
        }
    }
}

fn reader(db: Db, stop: Arc<AtomicBool>, published: Vec<Arc<AtomicU64>>) -> u64 {
    let mut seen = [0u64; WRITERS];
    let mut reads = 0u64;
    let mut n = 0usize;
    while !stop.load(Ordering::SeqCst) {
        n += 1;
        let g = n % WRITERS;
        // Generations published before a read began must be visible to it.
        let floor = published[g].load(Ordering::SeqCst);
        let got = if n.is_multiple_of(2) {
            let snap = db.snapshot();
            read_group_at(&db, g, &snap)
        } else {
            scan_group_now(&db, g)
        }
        .unwrap_or(0);
        assert!(
            got >= floor,
            "group {g}: read generation {got} although {floor} was acknowledged before the read"
        );
        assert!(
            got >= seen[g],
            "group {g}: reads went back in time, {} then {got}",
            seen[g]
        );
        seen[g] = got;
        // A point read of one key is never older either.
        let i = n % KEYS_PER_GROUP;
        if let Some(e) = db.get(&key(g, i)).unwrap() {
            let gen = generation_of(g, i, &e);
            assert!(gen >= seen[g], "group {g} key {i}: get went back in time");
        }
        reads += 1;
    }
    reads
}

fn options() -> Options {
    Options {
        sync_mode: SyncMode::Batch,
        memtable_size_bytes: 16 << 10,
        immutable_memtables_max: 1,
        level0_compaction_trigger: 2,
        level0_stall_tables: 4,
        level1_size_bytes: 32 << 10,
        table_size_bytes: 8 << 10,
        levels_max: 4,
        compaction_threads: 2,
        gc_grace_micros: u64::MAX,
        ..Options::default()
    }
}

#[test]
fn concurrent_writers_readers_and_compactions_stay_consistent() {
    let dir = scratch();
    let db = Db::open(dir.path(), options()).unwrap();
    // Held from the first generation to the end, across every flush and compaction.
    write_generation(&db, 0, 0);
    let long_snapshot = db.snapshot();

    let started = Instant::now();
    let stop = Arc::new(AtomicBool::new(false));
    let published: Vec<Arc<AtomicU64>> =
        (0..WRITERS).map(|_| Arc::new(AtomicU64::new(0))).collect();
    let (done_tx, done_rx) = mpsc::channel::<(&'static str, usize, u64)>();
    let mut handles = Vec::new();
    for (g, pubd) in published.iter().enumerate() {
        let (db, pubd, tx) = (db.clone(), pubd.clone(), done_tx.clone());
        handles.push(std::thread::spawn(move || {
            writer(db, g, pubd);
            let _ = tx.send(("writer", g, 0));
        }));
    }
    for r in 0..READERS {
        let (db, stop, pubs, tx) = (db.clone(), stop.clone(), published.clone(), done_tx.clone());
        handles.push(std::thread::spawn(move || {
            let reads = reader(db, stop, pubs);
            let _ = tx.send(("reader", r, reads));
        }));
    }
    {
        // Maintenance: explicit flushes and full compactions alongside background work.
        let (db, stop, tx) = (db.clone(), stop.clone(), done_tx.clone());
        handles.push(std::thread::spawn(move || {
            let mut n = 0u64;
            while !stop.load(Ordering::SeqCst) {
                n += 1;
                if n.is_multiple_of(8) {
                    db.compact().unwrap();
                } else {
                    db.flush().unwrap();
                }
                std::thread::sleep(Duration::from_millis(5));
            }
            let _ = tx.send(("maintenance", 0, n));
        }));
    }
    drop(done_tx);

    // Writers finish first; then readers and maintenance are told to stop.
    let mut writers_done = 0;
    let mut finished = 0;
    let total = WRITERS + READERS + 1;
    while finished < total {
        let left = RUN_TIMEOUT.saturating_sub(started.elapsed());
        match done_rx.recv_timeout(left) {
            Ok((kind, id, n)) => {
                finished += 1;
                println!("{kind} {id} finished ({n}) after {:?}", started.elapsed());
                if kind == "writer" {
                    writers_done += 1;
                    if writers_done == WRITERS {
                        stop.store(true, Ordering::SeqCst);
                    }
                }
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                // A thread panicked without reporting: surface its panic.
                for h in handles.drain(..) {
                    if let Err(p) = h.join() {
                        std::panic::resume_unwind(p);
                    }
                }
                panic!("a worker thread exited without reporting");
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {
                stop.store(true, Ordering::SeqCst);
                panic!(
                    "workers did not finish within {RUN_TIMEOUT:?} ({finished}/{total} done): stalled?"
                );
            }
        }
    }
    for h in handles {
        if let Err(p) = h.join() {
            std::panic::resume_unwind(p);
        }
    }

    // Before the final compaction and after it, the long snapshot still reads generation 0.
    assert_eq!(read_group_at(&db, 0, &long_snapshot), Some(0));
    db.compact().unwrap();
    assert_eq!(read_group_at(&db, 0, &long_snapshot), Some(0));
    assert_eq!(scan_group_at(&db, 0, &long_snapshot), Some(0));
    drop(long_snapshot);
    for g in 0..WRITERS {
        assert_eq!(scan_group_now(&db, g), Some(GENERATIONS));
    }
    let c = db.counters();
    println!(
        "flushes {}, compactions {}, write stalls {} ({} µs), {:?}",
        c.flushes,
        c.compactions,
        c.write_stalls,
        c.write_stall_micros,
        started.elapsed()
    );
    assert!(
        c.flushes >= 10,
        "too few flushes for the scenario: {}",
        c.flushes
    );
    assert!(
        c.compactions >= 3,
        "too few compactions for the scenario: {}",
        c.compactions
    );
    db.close().unwrap();

    let db = Db::open(dir.path(), options()).unwrap();
    for g in 0..WRITERS {
        assert_eq!(
            scan_group_now(&db, g),
            Some(GENERATIONS),
            "group {g} after reopen"
        );
        let snap = db.snapshot();
        assert_eq!(read_group_at(&db, g, &snap), Some(GENERATIONS));
    }
    db.close().unwrap();
}

/// Writers far outrunning flush and compaction stall, and every stalled write completes.
#[test]
fn stalled_writers_complete() {
    let dir = scratch();
    let opts = Options {
        sync_mode: SyncMode::Periodic { interval_ms: 1_000 },
        compaction_threads: 1,
        level0_stall_tables: 3,
        ..options()
    };
    let db = Db::open(dir.path(), opts).unwrap();
    let (tx, rx) = mpsc::channel();
    for t in 0..4usize {
        let (db, tx) = (db.clone(), tx.clone());
        std::thread::spawn(move || {
            for i in 0..3_000usize {
                let k = format!("s{t}-{i:05}");
                db.put(k.as_bytes(), i as u64 + 1, &[t as u8; 200]).unwrap();
            }
            let _ = tx.send(t);
        });
    }
    drop(tx);
    for _ in 0..4 {
        rx.recv_timeout(RUN_TIMEOUT)
            .expect("a stalled writer never completed (or panicked)");
    }
    let c = db.counters();
    println!(
        "write stalls {} ({} µs), flushes {}, compactions {}",
        c.write_stalls, c.write_stall_micros, c.flushes, c.compactions
    );
    assert!(
        c.write_stalls > 0,
        "2.4 MB into 16 KiB memtables never stalled"
    );
    for t in 0..4usize {
        for i in (0..3_000usize).step_by(97) {
            let k = format!("s{t}-{i:05}");
            let e = db.get(k.as_bytes()).unwrap().unwrap();
            assert_eq!(e.value, vec![t as u8; 200]);
        }
    }
    db.close().unwrap();
}
