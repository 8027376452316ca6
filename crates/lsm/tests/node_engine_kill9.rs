#![allow(clippy::unwrap_used, clippy::indexing_slicing)]
#![allow(clippy::disallowed_methods)] // Tests run real threads and measure real time; the seam binds the code under test.
//! Scenario: a node engine with many partitions is killed with SIGKILL while writing to all
//! of them and while dropping one (a DROP TABLE or TRUNCATE). After each kill every write
//! acknowledged to any partition is there; the dropped partition holds either its whole
//! former content (the drop never became durable) or nothing of it, and nothing of it once
//! the drop was acknowledged — its logged writes never come back.
//!
//! The test binary re-runs itself as the child (`engine_crash_child`, inert unless
//! `MOSAIC_ENGINE_CHILD` is set). Run `r` of the child first drops the victim partition and
//! prints `DROPPED`, then writes `r{r}-v{i}` to the victim and `r{r}-k{i}` to each of the
//! other partitions from several threads, printing `ACK <partition> <i>` once each write is
//! acknowledged. `MOSAIC_ENGINE_CRASH_ITERS=<n>` sets the run count.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader};
use std::ops::Bound;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use mosaic_lsm::{Db, Engine, EngineOptions, Options, SyncMode};

mod common;

const CHILD_ENV: &str = "MOSAIC_ENGINE_CHILD";
const PARTITIONS: usize = 12;
const VICTIM: &str = "ks/victim";

fn engine_options() -> EngineOptions {
    EngineOptions {
        sync_mode: SyncMode::Batch,
        memtable_space_bytes: 1 << 20,
        wal_file_bytes: 256 << 10,
        ..EngineOptions::default()
    }
}

fn open(engine: &Engine, name: &str) -> Db {
    Db::open(
        engine.path().join(name),
        Options {
            engine: Some(engine.clone()),
            memtable_size_bytes: 32 << 10,
            ..Options::default()
        },
    )
    .unwrap()
}

fn name(p: usize) -> String {
    format!("ks/t{p:02}")
}

#[test]
fn engine_crash_child() {
    let Ok(dir) = std::env::var(CHILD_ENV) else {
        return;
    };
    let run: u64 = std::env::var("MOSAIC_ENGINE_RUN").unwrap().parse().unwrap();
    let engine = Engine::open(&dir, engine_options()).unwrap();
    engine
        .drop_partitions_under(Path::new(&dir).join(VICTIM))
        .unwrap();
    println!("DROPPED");
    let victim = open(&engine, VICTIM);
    let dbs: Vec<Db> = (0..PARTITIONS).map(|p| open(&engine, &name(p))).collect();
    let value = vec![b'x'; 300];
    std::thread::scope(|s| {
        s.spawn(|| {
            for i in 0.. {
                victim
                    .put(format!("r{run}-v{i:06}").as_bytes(), run, &value)
                    .unwrap();
                println!("ACK victim {i}");
            }
        });
        for t in 0..3 {
            let dbs = &dbs;
            let value = &value;
            s.spawn(move || {
                for i in 0.. {
                    for (p, db) in dbs.iter().enumerate().filter(|(p, _)| p % 3 == t) {
                        db.put(format!("r{run}-k{i:06}").as_bytes(), run, value)
                            .unwrap();
                        println!("ACK {p} {i}");
                    }
                }
            });
        }
    });
}

/// Keys of `db` by run: run → indexes.
fn keys_by_run(db: &Db) -> BTreeMap<u64, BTreeSet<u64>> {
    let mut out: BTreeMap<u64, BTreeSet<u64>> = BTreeMap::new();
    for item in db.scan(Bound::Unbounded, Bound::Unbounded).unwrap() {
        let (k, _) = item.unwrap();
        let k = String::from_utf8(k).unwrap();
        let (run, i) = k[1..].split_once('-').unwrap();
        out.entry(run.parse().unwrap())
            .or_default()
            .insert(i[1..].parse().unwrap());
    }
    out
}

#[test]
fn a_kill_while_writing_many_partitions_and_dropping_one_loses_nothing_acknowledged() {
    let iters: u64 = std::env::var("MOSAIC_ENGINE_CRASH_ITERS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(6);
    let dir = common::scratch();
    let exe = std::env::current_exe().unwrap();
    // Per partition (and the victim, as usize::MAX), per run: the highest acknowledged index.
    let mut acked: BTreeMap<(usize, u64), u64> = BTreeMap::new();
    // The victim's content at the last check, by run.
    let mut prev_victim: BTreeMap<u64, BTreeSet<u64>> = BTreeMap::new();
    for run in 1..=iters {
        let mut child = Command::new(&exe)
            .args([
                "--exact",
                "engine_crash_child",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD_ENV, dir.path())
            .env("MOSAIC_ENGINE_RUN", run.to_string())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let kill_after = 200 + (run * 37) % 400;
        let mut dropped = false;
        let start = Instant::now();
        let mut lines = BufReader::new(stdout).lines();
        while let Some(Ok(line)) = lines.next() {
            if line == "DROPPED" {
                dropped = true;
            } else if let Some(rest) = line.strip_prefix("ACK ") {
                let (p, i) = rest.split_once(' ').unwrap();
                let p = if p == "victim" {
                    usize::MAX
                } else {
                    p.parse().unwrap()
                };
                let e = acked.entry((p, run)).or_insert(0);
                *e = (*e).max(i.parse::<u64>().unwrap() + 1);
            }
            if start.elapsed() > Duration::from_millis(kill_after) {
                break;
            }
        }
        child.kill().unwrap();
        child.wait().unwrap();
        // Reopen and check every partition against what was acknowledged.
        let engine = Engine::open(dir.path(), engine_options()).unwrap();
        for p in 0..PARTITIONS {
            let db = open(&engine, &name(p));
            let got = keys_by_run(&db);
            for r in 1..=run {
                let want = acked.get(&(p, r)).copied().unwrap_or(0);
                let have = got.get(&r).cloned().unwrap_or_default();
                for i in 0..want {
                    assert!(
                        have.contains(&i),
                        "run {run}: partition {p} lost acknowledged write r{r}-k{i}"
                    );
                }
            }
        }
        let mut victim = keys_by_run(&open(&engine, VICTIM));
        let current = victim.remove(&run).unwrap_or_default();
        // What is left from earlier runs: nothing once the drop was acknowledged;
        // otherwise nothing or exactly what the victim held before (a drop is all or
        // nothing).
        assert!(
            victim.is_empty() || (!dropped && victim == prev_victim),
            "run {run}: the dropped partition holds {:?} of earlier runs (drop acknowledged: {dropped}, before: {:?})",
            victim.keys().collect::<Vec<_>>(),
            prev_victim.keys().collect::<Vec<_>>()
        );
        let want = acked.get(&(usize::MAX, run)).copied().unwrap_or(0);
        assert!(
            (0..want).all(|i| current.contains(&i)),
            "run {run}: the re-created partition lost acknowledged writes"
        );
        prev_victim = victim;
        if !current.is_empty() {
            prev_victim.insert(run, current);
        }
        engine.close().unwrap();
    }
    let total: u64 = acked.values().sum();
    assert!(total > 100, "the children acknowledged only {total} writes");
}
