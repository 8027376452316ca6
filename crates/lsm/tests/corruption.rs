#![allow(clippy::unwrap_used, clippy::indexing_slicing)]
#![allow(clippy::disallowed_methods)] // Tests run real threads and measure real time; the seam binds the code under test.
//! Scenario: bytes of a closed database are damaged; reopening and reading must report the
//! damage as a typed error naming the file, or (for a WAL) replay up to the damaged record
//! and list the drop in the recovery report — never return a wrong value, never lose a key
//! silently, never panic. WAL damage that may hide acknowledged writes (anything but a torn
//! tail or a garbled last record) refuses the open, naming file and offset, unless the
//! option to skip it is set: then the replay stops there and the file is kept aside.
//!
//! Three images are built once per test and damaged many times, each trial on a fresh copy:
//! - a WAL holding unflushed writes (`close` does not flush, so the WAL is what recovery
//!   reads): single flipped bytes and truncations at random positions;
//! - SSTables (data blocks, filter, index, properties, footer): every byte is covered by a
//!   checksum, so every flip must be detected by the time every key has been read;
//! - the MANIFEST: a flip must fail the open as corruption naming it, or leave every key
//!   readable (a damaged record length must not pass for a torn tail).
//!
//! Replay: the seed is printed on failure; `MOSAIC_SEED=<seed>` replays it.

mod common;
use common::scratch;

use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Once;

use mosaic_lsm::{
    Compression, Db, Engine, EngineOptions, Error, Options, SyncMode, TableOptions, WriteBatch,
    DAMAGED_DIR,
};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

// ---------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------

fn key(i: usize) -> Vec<u8> {
    format!("key{i:05}").into_bytes()
}

fn ts(i: usize) -> u64 {
    1_000 + i as u64
}

/// A value naming its key, of a length that varies with the key.
fn value(i: usize) -> Vec<u8> {
    let mut v = format!("value-{i:05}-").into_bytes();
    v.extend((0..(i * 7) % 150).map(|j| (i + j) as u8));
    v
}

fn copy_dir(from: &Path, to: &Path) {
    if to.exists() {
        std::fs::remove_dir_all(to).unwrap();
    }
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &to.join(entry.file_name()));
        } else {
            std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
        }
    }
}

fn files_with(dir: &Path, pred: impl Fn(&str) -> bool) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| pred(p.file_name().unwrap().to_str().unwrap()))
        .collect();
    v.sort();
    v
}

fn flip(path: &Path, pos: usize, mask: u8) {
    let mut bytes = std::fs::read(path).unwrap();
    bytes[pos] ^= mask;
    std::fs::write(path, bytes).unwrap();
}

/// Bytes of framing before a record's payload: `u32 len ‖ u32 !len ‖ u32 crc`.
const RECORD_HEADER_LEN: usize = 12;

/// Start offsets and lengths of the framed records of a WAL or manifest.
fn record_spans(bytes: &[u8]) -> Vec<(usize, usize)> {
    let mut spans = Vec::new();
    let mut pos = 0;
    while pos + RECORD_HEADER_LEN <= bytes.len() {
        let len = u32::from_le_bytes(bytes[pos..pos + 4].try_into().unwrap());
        let check = u32::from_le_bytes(bytes[pos + 4..pos + 8].try_into().unwrap());
        assert_eq!(check, !len, "record framing changed? (header at {pos})");
        let total = RECORD_HEADER_LEN + len as usize;
        if pos + total > bytes.len() {
            break;
        }
        spans.push((pos, total));
        pos += total;
    }
    assert_eq!(pos, bytes.len(), "the pristine file parses to its end");
    spans
}

fn seed() -> u64 {
    std::env::var("MOSAIC_SEED")
        .ok()
        .map(|s| s.parse().expect("MOSAIC_SEED must be a u64"))
        .unwrap_or_else(rand::random)
}

/// Panics on the engine's own threads (named `mosaic-*`) are counted here: they would not
/// reach the test thread otherwise.
static ENGINE_PANICS: AtomicUsize = AtomicUsize::new(0);

fn count_engine_panics() {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let name = std::thread::current().name().unwrap_or("").to_owned();
            if name.starts_with("mosaic-") {
                ENGINE_PANICS.fetch_add(1, Ordering::SeqCst);
            }
            default(info);
        }));
    });
}

fn options() -> Options {
    Options {
        sync_mode: SyncMode::PerWrite,
        memtable_size_bytes: 64 << 20,
        table: TableOptions {
            block_size_bytes: 512,
            ..TableOptions::default()
        },
        level0_compaction_trigger: 8,
        level0_stall_tables: 16,
        table_size_bytes: 16 << 10,
        levels_max: 4,
        gc_grace_micros: u64::MAX,
        ..Options::default()
    }
}

/// Whether `e` is a typed corruption error naming `file` (by file name).
fn names_file(e: &Error, file: &Path) -> bool {
    match e {
        Error::ChecksumMismatch { file: f, .. } | Error::Corruption { file: f, .. } => {
            f.file_name() == file.file_name()
        }
        _ => false,
    }
}

/// What reading every key showed.
#[derive(Debug, Default)]
struct ReadOutcome {
    /// Keys read correctly by `get`.
    present: Vec<usize>,
    /// Keys `get` reported absent.
    absent: Vec<usize>,
    /// Typed corruption errors naming the damaged file (from `get` or the scan).
    detected: usize,
}

/// Reads keys `0..n` with `get` and a full scan. Any value must be exactly right; an error
/// must be typed corruption naming `damaged` (if given). Panics (with `ctx`) otherwise.
fn read_all(db: &Db, n: usize, damaged: Option<&Path>, ctx: &str) -> ReadOutcome {
    let mut out = ReadOutcome::default();
    let check_err = |e: &Error, what: &str| {
        let ok = damaged.is_some_and(|d| names_file(e, d));
        assert!(
            ok,
            "{ctx}: {what} failed with an error that is not typed corruption naming {damaged:?}: {e:?}"
        );
    };
    for i in 0..n {
        match db.get(&key(i)) {
            Ok(Some(e)) => {
                assert_eq!(
                    (e.ts, &e.value),
                    (ts(i), &value(i)),
                    "{ctx}: wrong value for key {i}"
                );
                out.present.push(i);
            }
            Ok(None) => out.absent.push(i),
            Err(e) => {
                check_err(&e, &format!("get of key {i}"));
                out.detected += 1;
            }
        }
    }
    // No key outside 0..n may appear.
    if db.get(&key(n)).unwrap_or(None).is_some() {
        panic!("{ctx}: a key that was never written appeared");
    }
    match db.scan(Bound::Unbounded, Bound::Unbounded) {
        Err(e) => {
            check_err(&e, "scan");
            out.detected += 1;
        }
        Ok(scan) => {
            let mut seen = Vec::new();
            let mut failed = false;
            for item in scan {
                match item {
                    Ok((k, e)) => {
                        let i: usize = std::str::from_utf8(&k[3..]).unwrap().parse().unwrap();
                        assert_eq!(k, key(i), "{ctx}: scan returned a malformed key");
                        assert_eq!(
                            (e.ts, &e.value),
                            (ts(i), &value(i)),
                            "{ctx}: scan returned a wrong value for key {i}"
                        );
                        if let Some(last) = seen.last() {
                            assert!(*last < i, "{ctx}: scan out of order at key {i}");
                        }
                        seen.push(i);
                    }
                    Err(e) => {
                        check_err(&e, "scan item");
                        out.detected += 1;
                        failed = true;
                        break;
                    }
                }
                assert!(seen.len() <= n, "{ctx}: scan does not end");
            }
            if !failed && out.detected == 0 {
                assert_eq!(seen, out.present, "{ctx}: scan and get disagree");
            }
        }
    }
    out
}

// ---------------------------------------------------------------------------------------
// WAL
// ---------------------------------------------------------------------------------------

/// Builds a database whose only data is in its WAL: `records[r]` lists the keys written
/// by record `r` (every write is one record under `PerWrite`).
fn build_wal_image(dir: &Path) -> (PathBuf, Vec<Vec<usize>>) {
    let db = Db::open(dir, options()).unwrap();
    let mut records = Vec::new();
    let mut next = 0;
    for r in 0..200 {
        if r % 7 == 3 {
            let mut b = WriteBatch::new();
            let keys: Vec<usize> = (next..next + 3).collect();
            for &i in &keys {
                b.put(&key(i), ts(i), &value(i));
            }
            db.write(b).unwrap();
            next += 3;
            records.push(keys);
        } else {
            db.put(&key(next), ts(next), &value(next)).unwrap();
            records.push(vec![next]);
            next += 1;
        }
    }
    assert_eq!(
        db.counters().flushes,
        0,
        "the memtable must not have flushed"
    );
    db.close().unwrap();
    // The shared WAL lives in the engine's `wal` directory.
    let wals: Vec<PathBuf> = files_with(&dir.join("wal"), |n| n.ends_with(".wal"))
        .into_iter()
        .filter(|p| std::fs::metadata(p).unwrap().len() > 0)
        .collect();
    assert_eq!(wals.len(), 1, "one WAL holds every write: {wals:?}");
    assert!(
        files_with(dir, |n| n.ends_with(".sst")).is_empty(),
        "close must not flush"
    );
    let wal = wals[0].clone();
    let spans = record_spans(&std::fs::read(&wal).unwrap());
    assert_eq!(spans.len(), records.len(), "one WAL record per write");
    (wal, records)
}

/// Opens a damaged copy whose WAL should replay exactly `records[..survivors]`, checks
/// the data and the report, then writes, reopens and checks that nothing dropped comes back.
fn check_wal_trial(
    dir: &Path,
    wal: &Path,
    records: &[Vec<usize>],
    survivors: usize,
    drop_at: Option<u64>,
    ignore: bool,
    ctx: &str,
) {
    let n: usize = records.iter().map(Vec::len).sum();
    let opts = Options {
        ignore_wal_corruption: ignore,
        ..options()
    };
    let db = match Db::open(dir, opts) {
        Ok(db) => db,
        Err(e) => panic!("{ctx}: open failed instead of replaying up to the damage: {e}"),
    };
    let report = db.recovery_report();
    check_kept(dir, wal, &report.kept, ignore, ctx);
    let drops: Vec<_> = report
        .dropped
        .iter()
        .filter(|d| d.file.file_name() == wal.file_name())
        .collect();
    match drop_at {
        Some(offset) => {
            assert_eq!(
                drops.len(),
                1,
                "{ctx}: the recovery report must list one drop in the WAL: {report:?}"
            );
            assert_eq!(drops[0].offset, offset, "{ctx}: drop offset: {report:?}");
            let len = std::fs::metadata(dir.join("wal").join(wal.file_name().unwrap()))
                .map(|m| m.len())
                .ok();
            if let Some(len) = len {
                assert_eq!(drops[0].bytes, len - offset, "{ctx}: dropped bytes");
            }
        }
        None => assert!(drops.is_empty(), "{ctx}: unexpected drop: {report:?}"),
    }
    let want: Vec<usize> = records[..survivors].iter().flatten().copied().collect();
    let got = read_all(&db, n, None, ctx);
    assert_eq!(
        got.present, want,
        "{ctx}: recovered keys are not exactly the records before the damage"
    );
    // Life goes on: a new write, a clean reopen, and the dropped records stay dropped.
    db.put(&key(n), ts(n), &value(n)).unwrap();
    db.close().unwrap();
    let db = Db::open(dir, options()).unwrap();
    let again = read_all(&db, n + 1, None, ctx);
    let mut want_after = want;
    want_after.push(n);
    assert_eq!(
        again.present, want_after,
        "{ctx}: after a second reopen the data changed"
    );
    assert!(
        db.recovery_report().dropped.is_empty(),
        "{ctx}: the second open dropped data again: {:?}",
        db.recovery_report()
    );
    db.close().unwrap();
}

/// Whether `kept` (a recovery report's) is exactly the damaged WAL moved into
/// `wal/damaged/` when the damage was skipped (`ignore`), and empty otherwise.
fn check_kept(dir: &Path, wal: &Path, kept: &[PathBuf], ignore: bool, ctx: &str) {
    if ignore {
        let moved = dir
            .join("wal")
            .join(DAMAGED_DIR)
            .join(wal.file_name().unwrap());
        assert_eq!(
            kept,
            std::slice::from_ref(&moved),
            "{ctx}: the skipped WAL is kept"
        );
        assert!(moved.exists(), "{ctx}: {} exists", moved.display());
        assert!(
            !dir.join("wal").join(wal.file_name().unwrap()).exists(),
            "{ctx}: the damaged WAL is no longer replayed"
        );
    } else {
        assert!(kept.is_empty(), "{ctx}: nothing is kept aside: {kept:?}");
    }
}

/// Damages copies of `pristine`'s WAL `wal` — `flips` single-byte flips, then `cuts` torn
/// tails — and hands each damaged copy (in `trial_dir`) to `check` with how many records
/// must survive, where the drop must be reported, whether to skip damage (`ignore`) and a
/// context naming the damage. A flip that may hide acknowledged writes (anywhere but the
/// checksum or payload of the last record: a power loss can garble the last unsynced
/// append, never one with data after it) must first make `open` fail, naming the file and
/// offset; `check` then opens the copy skipping the damage.
fn wal_damage_trials(
    name: &str,
    pristine: &Path,
    wal: &Path,
    flips: usize,
    cuts: usize,
    mut open: impl FnMut(&Path) -> Result<(), Error>,
    mut check: impl FnMut(&Path, usize, Option<u64>, bool, &str),
) {
    count_engine_panics();
    let seed = seed();
    println!("{name}: MOSAIC_SEED={seed}");
    let mut rng = StdRng::seed_from_u64(seed);
    let bytes = std::fs::read(wal).unwrap();
    let spans = record_spans(&bytes);
    let trial_dir = pristine.with_file_name("trial");
    let trial_wal = trial_dir.join("wal").join(wal.file_name().unwrap());
    for trial in 0..flips {
        copy_dir(pristine, &trial_dir);
        // Flip one byte: the record holding it and every later one are dropped.
        let pos = rng.gen_range(0..bytes.len());
        let mask = rng.gen_range(1..=255u8);
        flip(&trial_wal, pos, mask);
        let r = spans.iter().position(|(s, l)| pos < s + l).unwrap();
        let ctx =
            format!("MOSAIC_SEED={seed} trial {trial}: byte {pos} ^= {mask:#04x} (record {r})");
        let tail = r + 1 == spans.len() && pos >= spans[r].0 + 8;
        if !tail {
            match open(&trial_dir) {
                Err(Error::Corruption { file, offset, .. }) => {
                    assert_eq!(file.file_name(), wal.file_name(), "{ctx}: names the WAL");
                    assert_eq!(offset, spans[r].0 as u64, "{ctx}: names the record");
                }
                other => panic!("{ctx}: damage before the end must refuse the open: {other:?}"),
            }
        }
        check(&trial_dir, r, Some(spans[r].0 as u64), !tail, &ctx);
    }
    for trial in 0..cuts {
        copy_dir(pristine, &trial_dir);
        // Truncate (a torn tail): whole records before the cut survive.
        let cut = match trial {
            0 => 0,
            1 => bytes.len() - 1,
            2 => spans[spans.len() / 2].0,
            _ => rng.gen_range(0..bytes.len()),
        };
        let f = std::fs::OpenOptions::new()
            .write(true)
            .open(&trial_wal)
            .unwrap();
        f.set_len(cut as u64).unwrap();
        drop(f);
        let survivors = spans.iter().take_while(|(s, l)| s + l <= cut).count();
        let at_boundary = cut == 0 || spans.iter().any(|(s, l)| s + l == cut);
        let drop_at = (!at_boundary).then(|| spans[survivors].0 as u64);
        let ctx = format!(
            "MOSAIC_SEED={seed} truncation {trial}: cut at {cut} of {}",
            bytes.len()
        );
        check(&trial_dir, survivors, drop_at, false, &ctx);
    }
    assert_eq!(
        ENGINE_PANICS.load(Ordering::SeqCst),
        0,
        "an engine thread panicked"
    );
}

#[test]
fn wal_damage_refuses_the_open_or_replays_up_to_the_damaged_record_and_reports_it() {
    let root = scratch();
    let pristine = root.path().join("pristine");
    let (wal, records) = build_wal_image(&pristine);
    wal_damage_trials(
        "wal corruption",
        &pristine,
        &wal,
        150,
        60,
        |dir| Db::open(dir, options()).and_then(|db| db.close()),
        |dir, survivors, drop_at, ignore, ctx| {
            check_wal_trial(dir, &wal, &records, survivors, drop_at, ignore, ctx)
        },
    );
}

/// Partitions sharing one node engine (and its WAL) in the shared-WAL damage test.
const PARTS: usize = 3;

fn part_engine_options(ignore: bool) -> EngineOptions {
    EngineOptions {
        sync_mode: SyncMode::PerWrite,
        memtable_space_bytes: 0,
        ignore_wal_corruption: ignore,
        ..EngineOptions::default()
    }
}

/// Opens the node engine in `dir` and its partitions `p0`, `p1`, ….
fn open_parts(dir: &Path) -> (Engine, Vec<Db>) {
    open_parts_with(dir, false)
}

/// [`open_parts`], skipping WAL damage when `ignore`.
fn open_parts_with(dir: &Path, ignore: bool) -> (Engine, Vec<Db>) {
    let engine = Engine::open(dir, part_engine_options(ignore)).unwrap();
    let dbs = (0..PARTS)
        .map(|j| {
            let opts = Options {
                engine: Some(engine.clone()),
                ..options()
            };
            Db::open(dir.join(format!("p{j}")), opts).unwrap()
        })
        .collect();
    (engine, dbs)
}

fn close_parts(engine: Engine, dbs: Vec<Db>) {
    for db in dbs {
        db.close().unwrap();
    }
    engine.close().unwrap();
}

/// Builds a node engine whose partitions' only data is in the shared WAL: record `r` wrote
/// the keys `records[r].1` to partition `records[r].0` (records alternate partitions).
fn build_shared_wal_image(dir: &Path) -> (PathBuf, Vec<(usize, Vec<usize>)>) {
    let (engine, dbs) = open_parts(dir);
    let mut records = Vec::new();
    let mut next = 0;
    for r in 0..150 {
        let j = (r * 7 + r / 5) % PARTS;
        let db = &dbs[j];
        if r % 5 == 2 {
            let mut b = WriteBatch::new();
            let keys: Vec<usize> = (next..next + 3).collect();
            for &i in &keys {
                b.put(&key(i), ts(i), &value(i));
            }
            db.write(b).unwrap();
            next += 3;
            records.push((j, keys));
        } else {
            db.put(&key(next), ts(next), &value(next)).unwrap();
            records.push((j, vec![next]));
            next += 1;
        }
    }
    close_parts(engine, dbs);
    let wals: Vec<PathBuf> = files_with(&dir.join("wal"), |n| n.ends_with(".wal"))
        .into_iter()
        .filter(|p| std::fs::metadata(p).unwrap().len() > 0)
        .collect();
    assert_eq!(
        wals.len(),
        1,
        "one WAL holds every partition's writes: {wals:?}"
    );
    let wal = wals[0].clone();
    let spans = record_spans(&std::fs::read(&wal).unwrap());
    assert_eq!(spans.len(), records.len(), "one WAL record per write");
    (wal, records)
}

/// The keys partition `j` must hold once records `..survivors` replayed.
fn partition_keys(records: &[(usize, Vec<usize>)], survivors: usize, j: usize) -> Vec<usize> {
    let mut keys: Vec<usize> = records[..survivors]
        .iter()
        .filter(|(p, _)| *p == j)
        .flat_map(|(_, k)| k.iter().copied())
        .collect();
    keys.sort_unstable();
    keys
}

/// Opens a damaged copy of the shared-WAL image: every partition must hold exactly the
/// writes of the records before the damage, the engine's report must name the drop, and
/// after a new write and a clean reopen nothing dropped comes back in any partition.
fn check_shared_wal_trial(
    dir: &Path,
    wal: &Path,
    records: &[(usize, Vec<usize>)],
    survivors: usize,
    drop_at: Option<u64>,
    ignore: bool,
    ctx: &str,
) {
    let n: usize = records.iter().map(|(_, k)| k.len()).sum();
    let (engine, dbs) = open_parts_with(dir, ignore);
    let report = engine.recovery_report();
    check_kept(dir, wal, &report.kept, ignore, ctx);
    let drops: Vec<_> = report
        .dropped
        .iter()
        .filter(|d| d.file.file_name() == wal.file_name())
        .collect();
    match drop_at {
        Some(offset) => {
            assert_eq!(drops.len(), 1, "{ctx}: one drop expected: {report:?}");
            assert_eq!(drops[0].offset, offset, "{ctx}: drop offset: {report:?}");
        }
        None => assert!(drops.is_empty(), "{ctx}: unexpected drop: {report:?}"),
    }
    for (j, db) in dbs.iter().enumerate() {
        let got = read_all(db, n, None, ctx);
        assert_eq!(
            got.present,
            partition_keys(records, survivors, j),
            "{ctx}: partition {j} does not hold exactly its records before the damage"
        );
    }
    dbs[0].put(&key(n), ts(n), &value(n)).unwrap();
    close_parts(engine, dbs);
    let (engine, dbs) = open_parts(dir);
    assert!(
        engine.recovery_report().dropped.is_empty(),
        "{ctx}: the second open dropped data again: {:?}",
        engine.recovery_report()
    );
    for (j, db) in dbs.iter().enumerate() {
        let mut want = partition_keys(records, survivors, j);
        if j == 0 {
            want.push(n);
        }
        assert_eq!(
            read_all(db, n + 1, None, ctx).present,
            want,
            "{ctx}: partition {j} changed after a second reopen"
        );
    }
    close_parts(engine, dbs);
}

/// The WAL damage test over a node engine's shared WAL with several partitions: damage in
/// one record loses that record and the later ones in every partition — never an earlier
/// record of any partition, never a value in the wrong partition.
#[test]
fn shared_wal_damage_refuses_the_open_or_replays_every_partition_up_to_it() {
    let root = scratch();
    let pristine = root.path().join("pristine");
    let (wal, records) = build_shared_wal_image(&pristine);
    wal_damage_trials(
        "shared wal corruption",
        &pristine,
        &wal,
        60,
        20,
        |dir| Engine::open(dir, part_engine_options(false)).and_then(|e| e.close()),
        |dir, survivors, drop_at, ignore, ctx| {
            check_shared_wal_trial(dir, &wal, &records, survivors, drop_at, ignore, ctx)
        },
    );
}

// ---------------------------------------------------------------------------------------
// SSTables
// ---------------------------------------------------------------------------------------

const SST_KEYS: usize = 800;

fn build_sst_image(dir: &Path, lz4: bool) {
    let opts = Options {
        table: TableOptions {
            block_size_bytes: 512,
            compression: if lz4 {
                Compression::Lz4
            } else {
                Compression::None
            },
            ..TableOptions::default()
        },
        ..options()
    };
    let db = Db::open(dir, opts.clone()).unwrap();
    for i in 0..SST_KEYS {
        db.put(&key(i), ts(i), &value(i)).unwrap();
    }
    db.compact().unwrap();
    db.close().unwrap();
    assert!(
        files_with(dir, |n| n.ends_with(".sst")).len() >= 2,
        "several tables expected"
    );
}

/// Where in a table a byte lies, from its footer.
fn sst_region(bytes: &[u8], pos: usize) -> &'static str {
    let footer = bytes.len() - 80;
    if pos >= footer {
        return "footer";
    }
    let field = |at: usize| {
        u64::from_le_bytes(bytes[footer + at..footer + at + 8].try_into().unwrap()) as usize
    };
    let (index, filter, props) = (field(0), field(16), field(32));
    let filter_size = field(24);
    if pos >= props {
        "properties block"
    } else if pos >= index {
        "index block"
    } else if filter_size > 0 && pos >= filter {
        "filter block"
    } else {
        "data block"
    }
}

fn sst_trials(lz4: bool, trials: usize) {
    count_engine_panics();
    let seed = seed();
    println!("sst corruption (lz4 {lz4}): MOSAIC_SEED={seed}");
    let mut rng = StdRng::seed_from_u64(seed);
    let root = scratch();
    let pristine = root.path().join("pristine");
    build_sst_image(&pristine, lz4);
    let tables = files_with(&pristine, |n| n.ends_with(".sst"));
    let trial_dir = root.path().join("trial");
    let mut by_region = std::collections::BTreeMap::<&str, usize>::new();
    for trial in 0..trials {
        copy_dir(&pristine, &trial_dir);
        let table = &tables[rng.gen_range(0..tables.len())];
        let bytes = std::fs::read(table).unwrap();
        let footer = bytes.len() - 80;
        let index = u64::from_le_bytes(bytes[footer..footer + 8].try_into().unwrap()) as usize;
        let filter =
            u64::from_le_bytes(bytes[footer + 16..footer + 24].try_into().unwrap()) as usize;
        let meta_start = if filter > 0 { filter.min(index) } else { index };
        let pos = match rng.gen_range(0..10) {
            0..=3 => rng.gen_range(0..meta_start),
            4..=7 => rng.gen_range(meta_start..footer),
            _ => rng.gen_range(footer..bytes.len()),
        };
        let mask = rng.gen_range(1..=255u8);
        let damaged = trial_dir.join(table.file_name().unwrap());
        flip(&damaged, pos, mask);
        let region = sst_region(&bytes, pos);
        *by_region.entry(region).or_default() += 1;
        let ctx = format!(
            "MOSAIC_SEED={seed} trial {trial}: {} byte {pos} ({region}) ^= {mask:#04x}",
            table.file_name().unwrap().to_string_lossy()
        );
        let db = match Db::open(&trial_dir, options()) {
            Err(e) => {
                assert!(
                    names_file(&e, &damaged),
                    "{ctx}: open failed with an error that is not typed corruption naming the table: {e:?}"
                );
                continue;
            }
            Ok(db) => db,
        };
        let got = read_all(&db, SST_KEYS, Some(&damaged), &ctx);
        assert!(
            got.absent.is_empty(),
            "{ctx}: keys silently missing (a damaged filter or index must be an error): {:?}",
            &got.absent[..got.absent.len().min(10)]
        );
        // Every byte is checksummed and every block was read: the damage must show.
        assert!(got.detected > 0, "{ctx}: the damage went unnoticed");
        drop(db);
    }
    println!("sst corruption: trials per region {by_region:?}");
    assert_eq!(
        ENGINE_PANICS.load(Ordering::SeqCst),
        0,
        "an engine thread panicked"
    );
}

#[test]
fn sst_damage_is_a_typed_error_never_a_wrong_or_missing_value() {
    sst_trials(false, 200);
}

#[test]
fn sst_damage_in_lz4_tables_is_a_typed_error() {
    sst_trials(true, 120);
}

// ---------------------------------------------------------------------------------------
// MANIFEST
// ---------------------------------------------------------------------------------------

const MANIFEST_KEYS: usize = 600;

fn build_manifest_image(dir: &Path) {
    let db = Db::open(dir, options()).unwrap();
    // Several flushes and a compaction, so the manifest logs several edits after the
    // snapshot written at open.
    for chunk in 0..6 {
        for i in chunk * 100..(chunk + 1) * 100 {
            db.put(&key(i), ts(i), &value(i)).unwrap();
        }
        db.flush().unwrap();
        if chunk == 3 {
            db.compact().unwrap();
        }
    }
    db.close().unwrap();
}

#[test]
fn manifest_damage_is_a_typed_error_or_harmless() {
    count_engine_panics();
    let seed = seed();
    println!("manifest corruption: MOSAIC_SEED={seed}");
    let mut rng = StdRng::seed_from_u64(seed);
    let root = scratch();
    let pristine = root.path().join("pristine");
    build_manifest_image(&pristine);
    let manifests = files_with(&pristine, |n| n.starts_with("MANIFEST-"));
    assert_eq!(manifests.len(), 1, "one live manifest: {manifests:?}");
    let manifest = &manifests[0];
    let bytes = std::fs::read(manifest).unwrap();
    let spans = record_spans(&bytes);
    assert!(
        spans.len() >= 5,
        "the manifest logs several edits: {spans:?}"
    );
    let trial_dir = root.path().join("trial");
    let damaged = trial_dir.join(manifest.file_name().unwrap());
    let (mut refused, mut harmless) = (0, 0);
    for trial in 0..150 {
        copy_dir(&pristine, &trial_dir);
        let pos = match trial {
            // The length field of the last record: a grown length must not pass for a torn
            // tail (a crash during the append), or the last edit is silently forgotten.
            0..=3 => spans.last().unwrap().0 + trial,
            // The same in a middle record: every later edit would be forgotten.
            4..=7 => spans[spans.len() / 2].0 + trial - 4,
            _ => rng.gen_range(0..bytes.len()),
        };
        let mask = if trial < 8 {
            0x80
        } else {
            rng.gen_range(1..=255u8)
        };
        flip(&damaged, pos, mask);
        let r = spans.iter().position(|(s, l)| pos < s + l).unwrap();
        let ctx = format!(
            "MOSAIC_SEED={seed} trial {trial}: manifest byte {pos} ^= {mask:#04x} (record {r} of {})",
            spans.len(),
        );
        match Db::open(&trial_dir, options()) {
            Err(e) => {
                assert!(
                    names_file(&e, &damaged),
                    "{ctx}: open failed with an error that is not typed corruption naming the manifest: {e:?}"
                );
                refused += 1;
            }
            Ok(db) => {
                let got = read_all(&db, MANIFEST_KEYS, None, &ctx);
                assert!(
                    got.absent.is_empty(),
                    "{ctx}: open succeeded but {} keys are missing, e.g. {:?}",
                    got.absent.len(),
                    &got.absent[..got.absent.len().min(10)]
                );
                harmless += 1;
                db.close().unwrap();
            }
        }
    }
    println!("manifest corruption: refused {refused}, harmless {harmless}");
    assert!(refused > 0, "no manifest flip was ever refused");
    assert_eq!(
        ENGINE_PANICS.load(Ordering::SeqCst),
        0,
        "an engine thread panicked"
    );
}
