#![allow(clippy::unwrap_used, clippy::indexing_slicing)]
#![allow(clippy::disallowed_methods)] // Tests run real threads and measure real time; the seam binds the code under test.
//! Scenario: the process is killed with SIGKILL while writing; every acknowledged write
//! survives, batches are all-or-nothing, and no key ever holds a value nobody wrote.
//!
//! The test binary re-runs itself as the child (`crash_child_process`, which does nothing
//! unless `MOSAIC_CRASH_CHILD` is set). The child opens the database, runs one to four writer
//! threads, each over its own partition of keys, and prints `ACK <thread> <op>` after every
//! write the engine acknowledged. Each thread's operations are derived from the run's seed,
//! so the parent regenerates them: after the kill it reopens the database and requires each
//! partition to equal the model after exactly the printed operations, or after one more (the
//! operation in flight, or acknowledged but not yet printed, when the kill landed). The same
//! database is crashed again and again, so later runs also crash during recovery, flushes and
//! compactions of earlier runs' data.
//!
//! Replay: the seed is printed on failure; `MOSAIC_SEED=<seed>` replays the schedule (kill
//! timing still varies with the machine); `MOSAIC_CRASH_ITERS=<n>` sets the run count.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write as _};
use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use mosaic_lsm::{Db, Options, SyncMode, WriteBatch};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

const CHILD_ENV: &str = "MOSAIC_CRASH_CHILD";
const PARTITIONS: usize = 4;
const KEYS_PER_PARTITION: u64 = 64;
/// Operations per thread and run; the kill normally lands long before.
const OPS_PER_THREAD_MAX: usize = 4_000;

// ---------------------------------------------------------------------------------------
// The deterministic workload
// ---------------------------------------------------------------------------------------

#[derive(Clone, Debug)]
enum CrashOp {
    Put(Vec<u8>, u64, Vec<u8>),
    Delete(Vec<u8>, u64),
    /// (key, ts, None = delete / Some(value)), applied atomically.
    Batch(Vec<(Vec<u8>, u64, Option<Vec<u8>>)>),
}

fn key(partition: usize, i: u64) -> Vec<u8> {
    format!("t{partition}-k{i:03}").into_bytes()
}

/// A value naming its key, timestamp and origin, padded to a pseudo-random length, so a value
/// under the wrong key or from the wrong write cannot pass for the right one.
fn value(rng: &mut StdRng, key: &[u8], ts: u64, origin: &str) -> Vec<u8> {
    let mut v = format!("{}|{ts}|{origin}|", String::from_utf8_lossy(key)).into_bytes();
    let pad = rng.gen_range(0..400);
    let fill = rng.gen::<u8>();
    v.extend((0..pad).map(|i: usize| fill.wrapping_add(i as u8)));
    v
}

/// The operations of `partition` in run `run`: a pure function of the seed.
fn ops(seed: u64, run: u64, partition: usize) -> impl Iterator<Item = CrashOp> {
    let mut rng = StdRng::seed_from_u64(
        seed ^ run.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ ((partition as u64) << 56),
    );
    // Timestamp windows of consecutive runs overlap: later runs mostly win, but not always.
    let base = run * 1_000_000;
    (0..OPS_PER_THREAD_MAX).map(move |i| {
        let origin = format!("r{run}o{i}");
        let one = |rng: &mut StdRng, j: usize| {
            let k = key(partition, rng.gen_range(0..KEYS_PER_PARTITION));
            let ts = base + rng.gen_range(0..1_500_000);
            if rng.gen_bool(0.15) {
                (k, ts, None)
            } else {
                let v = value(rng, &k, ts, &format!("{origin}.{j}"));
                (k, ts, Some(v))
            }
        };
        match rng.gen_range(0..10) {
            0..=6 => match one(&mut rng, 0) {
                (k, ts, Some(v)) => CrashOp::Put(k, ts, v),
                (k, ts, None) => CrashOp::Delete(k, ts),
            },
            _ => {
                let n = rng.gen_range(2..8);
                CrashOp::Batch((0..n).map(|j| one(&mut rng, j)).collect())
            }
        }
    })
}

/// Last-write-wins winner per key: (ts, None = tombstone / Some(value)).
type Partition = BTreeMap<Vec<u8>, (u64, Option<Vec<u8>>)>;

fn beats(a: &(u64, Option<Vec<u8>>), b: &(u64, Option<Vec<u8>>)) -> bool {
    match a.0.cmp(&b.0) {
        std::cmp::Ordering::Greater => true,
        std::cmp::Ordering::Less => false,
        std::cmp::Ordering::Equal => match (&a.1, &b.1) {
            (None, Some(_)) => true,
            (Some(_), None) | (None, None) => false,
            (Some(x), Some(y)) => x > y,
        },
    }
}

fn apply_one(model: &mut Partition, k: &[u8], ts: u64, v: Option<&Vec<u8>>) {
    let new = (ts, v.cloned());
    match model.get_mut(k) {
        Some(cur) if !beats(&new, cur) => {}
        Some(cur) => *cur = new,
        None => {
            model.insert(k.to_vec(), new);
        }
    }
}

fn apply(model: &mut Partition, op: &CrashOp) {
    match op {
        CrashOp::Put(k, ts, v) => apply_one(model, k, *ts, Some(v)),
        CrashOp::Delete(k, ts) => apply_one(model, k, *ts, None),
        CrashOp::Batch(items) => {
            for (k, ts, v) in items {
                apply_one(model, k, *ts, v.as_ref());
            }
        }
    }
}

/// What reads must show: present keys and their (ts, value).
fn visible(model: &Partition) -> BTreeMap<Vec<u8>, (u64, Vec<u8>)> {
    model
        .iter()
        .filter_map(|(k, (ts, v))| v.as_ref().map(|v| (k.clone(), (*ts, v.clone()))))
        .collect()
}

/// A two-layer log's range groups over the test's keys `t{p}-k{i:03}` (i < 64): the halves
/// of each partition (i below 30 or not), contiguous in key order as groups must be.
fn group_of(key: &[u8]) -> u32 {
    let partition = key.get(1).map_or(0, |b| u32::from(b.saturating_sub(b'0')));
    let upper_half = key.get(5).is_some_and(|tens| *tens >= b'3');
    partition * 2 + u32::from(upper_half)
}

fn options(sync_mode: SyncMode, log: bool) -> Options {
    Options {
        // Tiny splits and run bounds, so kills land in splits and merge-sorts.
        log: log.then(|| mosaic_lsm::LogOptions {
            split_segments: 2,
            runs_max: 3,
            group_of: std::sync::Arc::new(group_of),
        }),
        sync_mode,
        memtable_size_bytes: 16 << 10,
        immutable_memtables_max: 2,
        level0_compaction_trigger: 2,
        level0_stall_tables: 8,
        level1_size_bytes: 32 << 10,
        table_size_bytes: 8 << 10,
        level_size_ratio: 4,
        levels_max: 4,
        compaction_threads: 1,
        // Out-of-order timestamps across runs: never purge, or the model would not apply.
        gc_grace_micros: u64::MAX,
        ..Options::default()
    }
}

// ---------------------------------------------------------------------------------------
// The child
// ---------------------------------------------------------------------------------------

/// Child configuration, passed in `MOSAIC_CRASH_CHILD` as `dir|seed|run|mode|threads|log`.
#[derive(Clone, Debug)]
struct ChildSpec {
    /// A two-layer log instead of a leveled tree.
    log: bool,
    dir: PathBuf,
    seed: u64,
    run: u64,
    mode: u8,
    threads: usize,
}

impl ChildSpec {
    fn encode(&self) -> String {
        format!(
            "{}|{}|{}|{}|{}|{}",
            self.dir.display(),
            self.seed,
            self.run,
            self.mode,
            self.threads,
            u8::from(self.log)
        )
    }

    fn decode(s: &str) -> Self {
        let parts: Vec<&str> = s.rsplitn(6, '|').collect();
        Self {
            log: parts[0] == "1",
            threads: parts[1].parse().unwrap(),
            mode: parts[2].parse().unwrap(),
            run: parts[3].parse().unwrap(),
            seed: parts[4].parse().unwrap(),
            dir: PathBuf::from(parts[5]),
        }
    }

    fn sync_mode(&self) -> SyncMode {
        match self.mode {
            0 => SyncMode::PerWrite,
            1 => SyncMode::Batch,
            // A process crash loses nothing even when only the OS holds the bytes.
            _ => SyncMode::Periodic { interval_ms: 50 },
        }
    }
}

fn say(line: &str) {
    let mut out = std::io::stdout().lock();
    writeln!(out, "{line}").unwrap();
    out.flush().unwrap();
}

/// Opens the database, waiting (up to 10 s) while its directory lock is held elsewhere.
/// The lock is an flock: a child that the other test of this binary forks while this
/// test's parent holds the lock keeps a copy of it until that child execs, after the
/// parent has closed its own handle.
fn open_when_unlocked(dir: &Path, opts: Options) -> mosaic_lsm::Result<Db> {
    let started = Instant::now();
    loop {
        match Db::open(dir, opts.clone()) {
            Err(mosaic_lsm::Error::Io {
                op: "locking",
                source,
                ..
            }) if source.kind() == std::io::ErrorKind::WouldBlock
                && started.elapsed() < Duration::from_secs(10) =>
            {
                std::thread::sleep(Duration::from_millis(10));
            }
            other => return other,
        }
    }
}

/// Does nothing in a normal test run; acts as the crashing child when `MOSAIC_CRASH_CHILD`
/// is set by [`kill9_loses_no_acknowledged_write`].
#[test]
fn crash_child_process() {
    let Ok(spec) = std::env::var(CHILD_ENV) else {
        return;
    };
    let spec = ChildSpec::decode(&spec);
    let db = open_when_unlocked(&spec.dir, options(spec.sync_mode(), spec.log))
        .unwrap_or_else(|e| panic!("opening the database: {e}"));
    say("READY");
    std::thread::scope(|s| {
        for t in 0..spec.threads {
            let db = db.clone();
            let spec = spec.clone();
            s.spawn(move || {
                for (i, op) in ops(spec.seed, spec.run, t).enumerate() {
                    let r = match op {
                        CrashOp::Put(k, ts, v) => db.put(&k, ts, &v),
                        CrashOp::Delete(k, ts) => db.delete(&k, ts),
                        CrashOp::Batch(items) => {
                            let mut b = WriteBatch::new();
                            for (k, ts, v) in &items {
                                match v {
                                    Some(v) => b.put(k, *ts, v),
                                    None => b.delete(k, *ts),
                                }
                            }
                            db.write(b)
                        }
                    };
                    if let Err(e) = r {
                        panic!("child: thread {t} op {i} failed: {e}");
                    }
                    say(&format!("ACK {t} {i}"));
                }
                say(&format!("DONE {t}"));
            });
        }
    });
    db.close().unwrap();
    say("CLOSED");
}

// ---------------------------------------------------------------------------------------
// The parent
// ---------------------------------------------------------------------------------------

/// Kills and reaps the child however the parent leaves the scope, so no test leaves a
/// process behind.
struct ChildGuard(Option<Child>);

impl ChildGuard {
    /// SIGKILL (if still running) and reap; returns how the child ended.
    fn kill(&mut self) -> Option<std::process::ExitStatus> {
        let mut child = self.0.take()?;
        let _ = child.kill();
        child.wait().ok()
    }
}

impl Drop for ChildGuard {
    fn drop(&mut self) {
        let _ = self.kill();
    }
}

struct RunOutcome {
    acks: [usize; PARTITIONS],
    closed_cleanly: bool,
    stderr: String,
    killed_before_ready: bool,
}

fn run_child(spec: &ChildSpec, rng: &mut StdRng, stderr_path: &Path) -> RunOutcome {
    let stderr = std::fs::File::create(stderr_path).unwrap();
    let child = Command::new(std::env::current_exe().unwrap())
        .args([
            "crash_child_process",
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_ENV, spec.encode())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::from(stderr))
        .spawn()
        .unwrap();
    let mut guard = ChildGuard(Some(child));
    let stdout = guard.0.as_mut().unwrap().stdout.take().unwrap();
    let (tx, rx) = mpsc::channel::<String>();
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });

    let mut lines = Vec::new();
    // Mostly kill while writing; sometimes during open and recovery of the previous run.
    let kill_early = rng.gen_bool(0.1);
    let ready_deadline = Instant::now() + Duration::from_secs(30);
    let mut kill_at = if kill_early {
        Some(Instant::now() + Duration::from_millis(rng.gen_range(0..40)))
    } else {
        None
    };
    let mut killed_before_ready = false;
    let mut ready = false;
    loop {
        let now = Instant::now();
        if let Some(at) = kill_at {
            if now >= at {
                killed_before_ready = !ready;
                break;
            }
        } else if now >= ready_deadline {
            guard.kill();
            panic!(
                "child did not open the database within 30 s; stderr:\n{}",
                std::fs::read_to_string(stderr_path).unwrap_or_default()
            );
        }
        let wait = kill_at.map_or(Duration::from_millis(100), |at| {
            at.saturating_duration_since(now)
        });
        match rx.recv_timeout(wait) {
            Ok(line) => {
                // The harness prints "test crash_child_process ... " before the test's own
                // output, so READY may share that line.
                if line.ends_with("READY") && !ready {
                    ready = true;
                    if kill_at.is_none() {
                        kill_at =
                            Some(Instant::now() + Duration::from_millis(rng.gen_range(5..1200)));
                    }
                }
                lines.push(line);
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            // The child ended on its own (finished, or failed).
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
    }
    let status = guard.kill();
    // The pipe reaches EOF once the child is dead; bound the wait anyway.
    let drain_deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let left = drain_deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(line) => lines.push(line),
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                panic!("child stdout still open 10 s after SIGKILL")
            }
        }
    }
    reader.join().unwrap();
    let stderr = std::fs::read_to_string(stderr_path).unwrap_or_default();

    let mut acks = [0usize; PARTITIONS];
    let mut closed_cleanly = false;
    for line in &lines {
        if let Some(rest) = line.strip_prefix("ACK ") {
            let (t, i) = rest.split_once(' ').unwrap();
            let (t, i): (usize, usize) = (t.parse().unwrap(), i.parse().unwrap());
            assert_eq!(
                acks[t], i,
                "thread {t} acknowledged op {i} out of order; stderr:\n{stderr}"
            );
            acks[t] += 1;
        } else if line == "CLOSED" {
            closed_cleanly = true;
        }
    }
    // A child that exits by itself must have succeeded; one we killed reports a signal.
    if let Some(status) = status {
        if status.code().is_some() && !status.success() {
            panic!("child failed ({status}); stderr:\n{stderr}");
        }
    }
    RunOutcome {
        acks,
        closed_cleanly,
        stderr,
        killed_before_ready,
    }
}

/// Reads a partition through `get` and through a prefix scan; both must agree.
fn read_partition(db: &Db, partition: usize) -> BTreeMap<Vec<u8>, (u64, Vec<u8>)> {
    let mut by_get = BTreeMap::new();
    for i in 0..KEYS_PER_PARTITION {
        let k = key(partition, i);
        if let Some(e) = db.get(&k).unwrap() {
            by_get.insert(k, (e.ts, e.value));
        }
    }
    let start = format!("t{partition}-").into_bytes();
    let end = format!("t{partition}.").into_bytes();
    let by_scan: BTreeMap<_, _> = db
        .scan(Bound::Included(&start[..]), Bound::Excluded(&end[..]))
        .unwrap()
        .map(|r| {
            let (k, e) = r.unwrap();
            (k, (e.ts, e.value))
        })
        .collect();
    assert_eq!(
        by_get.keys().collect::<Vec<_>>(),
        by_scan.keys().collect::<Vec<_>>(),
        "partition {partition}: get and scan disagree on which keys exist"
    );
    assert_eq!(
        by_get, by_scan,
        "partition {partition}: get and scan disagree"
    );
    by_get
}

fn describe_diff(
    got: &BTreeMap<Vec<u8>, (u64, Vec<u8>)>,
    want: &BTreeMap<Vec<u8>, (u64, Vec<u8>)>,
) -> String {
    let mut out = String::new();
    let keys: std::collections::BTreeSet<_> = got.keys().chain(want.keys()).collect();
    for k in keys {
        let g = got.get(k);
        let w = want.get(k);
        if g != w {
            let show = |x: Option<&(u64, Vec<u8>)>| {
                x.map_or("absent".to_owned(), |(ts, v)| {
                    let head = String::from_utf8_lossy(&v[..v.len().min(40)]).into_owned();
                    format!("ts {ts} value {head:?}… ({} bytes)", v.len())
                })
            };
            out.push_str(&format!(
                "  {}: got {}, want {}\n",
                String::from_utf8_lossy(k),
                show(g),
                show(w)
            ));
        }
    }
    out
}

#[test]
fn kill9_loses_no_acknowledged_write() {
    kill9(false);
}

/// The same under a two-layer log: kills land in flushes, splits and merge-sorts.
#[test]
fn kill9_during_splits_and_merge_sorts_loses_no_acknowledged_write() {
    kill9(true);
}

fn kill9(log: bool) {
    if std::env::var(CHILD_ENV).is_ok() {
        return; // this process is a child
    }
    let seed: u64 = std::env::var("MOSAIC_SEED")
        .ok()
        .map(|s| s.parse().expect("MOSAIC_SEED must be a u64"))
        .unwrap_or_else(rand::random);
    let runs: u64 = std::env::var("MOSAIC_CRASH_ITERS")
        .ok()
        .map(|s| s.parse().unwrap())
        .unwrap_or(40);
    let time_budget = Duration::from_secs(60);
    println!("kill9: seed {seed}, {runs} runs (replay with MOSAIC_SEED={seed})");

    let scratch = tempfile::tempdir().unwrap();
    let dir = scratch.path().join("db");
    let mut rng = StdRng::seed_from_u64(seed);
    let mut models: Vec<Partition> = vec![Partition::new(); PARTITIONS];
    let started = Instant::now();
    let mut total_acks = 0usize;
    let mut runs_done = 0u64;
    let mut modes_seen = [0usize; 3];
    // Deepest non-empty level seen: the crashes must have hit flushes and compactions.
    let mut deepest = 0;
    for run in 0..runs {
        // Past the budget, stop early but never before a meaningful number of runs.
        if run >= 10 && started.elapsed() > time_budget {
            println!("kill9: time budget spent after {run} runs");
            break;
        }
        let mode = match rng.gen_range(0..10) {
            0..=4 => 0u8,
            5..=7 => 1,
            _ => 2,
        };
        let threads = match mode {
            0 => rng.gen_range(1..=2),
            _ => rng.gen_range(2..=PARTITIONS),
        };
        modes_seen[usize::from(mode)] += 1;
        let spec = ChildSpec {
            log,
            dir: dir.clone(),
            seed,
            run,
            mode,
            threads,
        };
        let t0 = Instant::now();
        let outcome = run_child(&spec, &mut rng, &scratch.path().join("child.stderr"));
        let t_child = t0.elapsed();
        let context = format!(
            "MOSAIC_SEED={seed} run {run} ({:?}, {threads} threads, acks {:?}, killed before ready: {}, closed cleanly: {})",
            spec.sync_mode(),
            outcome.acks,
            outcome.killed_before_ready,
            outcome.closed_cleanly
        );
        total_acks += outcome.acks.iter().sum::<usize>();

        let t1 = Instant::now();
        let db = open_when_unlocked(&dir, options(SyncMode::PerWrite, log))
            .unwrap_or_else(|e| panic!("{context}: reopen after SIGKILL failed: {e}"));
        let t_open = t1.elapsed();
        let report = db.recovery_report();
        for drop in &report.dropped {
            println!("kill9 {context}: recovery dropped {drop:?}");
        }
        for (t, model) in models.iter_mut().enumerate() {
            let got = read_partition(&db, t);
            if t >= threads {
                let want = visible(model);
                assert!(
                    got == want,
                    "{context}: idle partition {t} changed:\n{}",
                    describe_diff(&got, &want)
                );
                continue;
            }
            // The model after exactly the printed operations, and after one more.
            let acked = outcome.acks[t];
            let mut it = ops(seed, run, t);
            let mut after_acked = model.clone();
            for op in it.by_ref().take(acked) {
                apply(&mut after_acked, &op);
            }
            let want = visible(&after_acked);
            if got == want {
                *model = after_acked;
                continue;
            }
            let mut after_next = after_acked.clone();
            if let Some(op) = it.next() {
                apply(&mut after_next, &op);
                let want_next = visible(&after_next);
                if got == want_next {
                    *model = after_next;
                    continue;
                }
            }
            panic!(
                "{context}: partition {t} after {acked} acknowledged ops matches neither the \
                 model after them nor after one more; diff against the acknowledged state:\n{}\
                 child stderr:\n{}",
                describe_diff(&got, &want),
                outcome.stderr
            );
        }
        let t_verify = t1.elapsed() - t_open;
        let levels_nonempty: Vec<usize> = db
            .levels()
            .iter()
            .filter(|l| !l.tables.is_empty())
            .map(|l| l.level)
            .collect();
        deepest = deepest.max(levels_nonempty.last().copied().unwrap_or(0));
        db.close().unwrap();
        println!(
            "kill9 run {run}: child {t_child:?}, reopen {t_open:?}, verify {t_verify:?}, \
             {:?}, acks {:?}, levels {levels_nonempty:?}",
            spec.sync_mode(),
            outcome.acks
        );
        runs_done += 1;
    }
    println!(
        "kill9: {runs_done} runs, {total_acks} acknowledged writes checked, modes (per-write, batch, periodic) {modes_seen:?}, {:.1} s",
        started.elapsed().as_secs_f64()
    );
    assert!(total_acks > 0, "no child ever acknowledged a write");
    assert!(
        runs_done < 5 || deepest >= 1,
        "no table ever left level 0: the crashes never met a compaction"
    );
}
