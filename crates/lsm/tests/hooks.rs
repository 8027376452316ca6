#![allow(clippy::unwrap_used, clippy::indexing_slicing)]
//! Scenario: what the engine tells its observers. The compaction listener hears every
//! compaction with inputs and outputs that agree with the tables `levels()` lists; `levels()`
//! shows sane per-table key ranges, sizes, timestamps, creation times and read counters that
//! grow on reads; the counters show write amplification above 1 once compactions ran, and
//! Bloom filter negatives for absent keys.

mod common;
use common::scratch;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};

use mosaic_lsm::{
    CompactionEvent, CompactionListener, Db, LevelInfo, ManualClock, Options, SyncMode,
};

/// A listener that records every event.
#[derive(Default)]
struct Recorder {
    events: Mutex<Vec<CompactionEvent>>,
}

impl CompactionListener for Recorder {
    fn on_compaction(&self, event: &CompactionEvent) {
        self.events.lock().unwrap().push(event.clone());
    }
}

const T0_MICROS: u64 = 1_700_000_000_000_000;
const T1_MICROS: u64 = T0_MICROS + 3_600_000_000;

fn key(i: usize) -> Vec<u8> {
    format!("key{i:06}").into_bytes()
}

fn value(i: usize) -> Vec<u8> {
    let mut v = format!("value-{i:06}-").into_bytes();
    v.extend((0..100 + i % 64).map(|j| (i ^ j) as u8));
    v
}

fn options(listener: Arc<Recorder>, clock: Arc<ManualClock>) -> Options {
    Options {
        clock,
        sync_mode: SyncMode::Periodic { interval_ms: 1_000 },
        memtable_size_bytes: 32 << 10,
        level0_compaction_trigger: 2,
        level0_stall_tables: 8,
        level1_size_bytes: 64 << 10,
        table_size_bytes: 16 << 10,
        levels_max: 4,
        gc_grace_micros: u64::MAX,
        compaction_listener: Some(listener as Arc<dyn CompactionListener>),
        ..Options::default()
    }
}

fn live_ids(levels: &[LevelInfo]) -> BTreeMap<u64, usize> {
    levels
        .iter()
        .flat_map(|l| l.tables.iter().map(move |t| (t.id, l.level)))
        .collect()
}

/// Per-table sanity of `levels()`; `keys` is the number of keys written so far.
fn check_levels(levels: &[LevelInfo], keys: usize, now: u64) {
    for (n, l) in levels.iter().enumerate() {
        assert_eq!(l.level, n, "levels are listed in order");
        for t in &l.tables {
            assert!(
                t.size_bytes > 0 && t.entries > 0,
                "L{n} table {}: empty",
                t.id
            );
            assert!(
                t.smallest_key <= t.largest_key,
                "L{n} table {}: key range",
                t.id
            );
            assert!(
                t.smallest_key >= key(0) && t.largest_key <= key(keys - 1),
                "L{n} table {}: range {:?}..{:?} outside the written keys",
                t.id,
                String::from_utf8_lossy(&t.smallest_key),
                String::from_utf8_lossy(&t.largest_key)
            );
            assert!(
                t.min_ts <= t.max_ts && t.max_ts <= 2 * keys as u64,
                "table {}: ts {}..{}",
                t.id,
                t.min_ts,
                t.max_ts
            );
            assert!(
                (T0_MICROS..=now).contains(&t.created_micros),
                "table {}: created_micros {} not from the engine clock",
                t.id,
                t.created_micros
            );
            assert!(t.location.is_empty(), "table {} is local", t.id);
        }
        if n >= 1 {
            for w in l.tables.windows(2) {
                assert!(
                    w[0].largest_key < w[1].smallest_key,
                    "L{n}: tables {} and {} overlap or are out of order",
                    w[0].id,
                    w[1].id
                );
            }
        }
    }
}

#[test]
fn listener_levels_and_counters_describe_what_happened() {
    let dir = scratch();
    let recorder = Arc::new(Recorder::default());
    let clock = Arc::new(ManualClock::new(T0_MICROS));
    let db = Db::open(dir.path(), options(recorder.clone(), clock.clone())).unwrap();

    // Phase 1 at T0, phase 2 at T1: tables written in phase 2 carry the later time.
    let keys = 4_000;
    for i in 0..keys / 2 {
        db.put(&key(i), i as u64 + 1, &value(i)).unwrap();
    }
    db.wait_for_compactions().unwrap();
    let phase1_ids: BTreeSet<u64> = live_ids(&db.levels()).keys().copied().collect();
    clock.set_micros(T1_MICROS);
    for i in keys / 2..keys {
        db.put(&key(i), i as u64 + 1, &value(i)).unwrap();
    }
    // Overwrite a slice so compactions also drop versions.
    for i in (0..keys).step_by(5) {
        db.put(&key(i), keys as u64 + i as u64 + 1, &value(i))
            .unwrap();
    }
    db.flush().unwrap();
    db.wait_for_compactions().unwrap();
    let levels = db.levels();
    check_levels(&levels, keys, T1_MICROS);
    for l in &levels {
        for t in &l.tables {
            if !phase1_ids.contains(&t.id) {
                assert_eq!(
                    t.created_micros, T1_MICROS,
                    "table {} written in phase 2",
                    t.id
                );
            }
        }
    }
    let nonempty = levels.iter().filter(|l| !l.tables.is_empty()).count();
    assert!(
        nonempty >= 2,
        "expected a tree of several levels: {nonempty}"
    );

    // The listener.
    let events: Vec<CompactionEvent> = recorder.events.lock().unwrap().clone();
    let c = db.counters();
    assert!(!events.is_empty(), "no compaction was reported");
    assert_eq!(
        events.len() as u64,
        c.compactions,
        "one listener call per counted compaction"
    );
    let live = live_ids(&levels);
    let mut replaced = BTreeSet::new();
    let mut produced = BTreeMap::new();
    for (n, e) in events.iter().enumerate() {
        assert!(!e.inputs.is_empty(), "event {n} has no inputs: {e:?}");
        assert!(
            e.output_level > e.level || (e.level == 0 && e.output_level >= 1),
            "event {n}: {e:?}"
        );
        assert!(
            e.output_level < 4,
            "event {n}: output level beyond levels_max: {e:?}"
        );
        if e.trivial_move {
            assert_eq!(
                e.outputs.len(),
                1,
                "event {n}: a move outputs the moved table: {e:?}"
            );
            assert!(
                e.inputs.contains(&e.outputs[0]),
                "event {n}: moved table: {e:?}"
            );
        } else {
            assert!(
                !e.outputs.is_empty(),
                "event {n}: a rewrite with no output: {e:?}"
            );
            for o in &e.outputs {
                assert!(
                    !e.inputs.contains(o),
                    "event {n}: output {o} is also an input"
                );
                assert!(!produced.contains_key(o), "event {n}: output id {o} reused");
                assert!(
                    !replaced.contains(o),
                    "event {n}: output id {o} was already replaced"
                );
            }
            for i in &e.inputs {
                replaced.insert(*i);
            }
        }
        for o in &e.outputs {
            produced.insert(*o, e.output_level);
        }
    }
    for (id, level) in &live {
        assert!(
            !replaced.contains(id),
            "table {id} is live although a compaction replaced it"
        );
        if let Some(out_level) = produced.get(id) {
            assert!(
                level >= out_level,
                "table {id} is on L{level}, written to L{out_level}"
            );
        }
    }
    // Every table a compaction wrote and no later compaction replaced is still live.
    for id in produced.keys().filter(|id| !replaced.contains(id)) {
        assert!(live.contains_key(id), "compaction output {id} vanished");
    }

    // Counters: amplification.
    assert!(c.flushes > 0 && c.compaction_bytes_written > 0);
    assert!(c.user_bytes_written > 0);
    assert!(
        c.write_amplification() > 1.0,
        "write amplification {} with compactions",
        c.write_amplification()
    );
    assert!(c.compaction_write_amplification() > 1.0);
    assert!(c.compaction_bytes_read > 0, "compactions read their inputs");

    // Read counters grow on reads of the table that holds the key.
    let bottom = levels.iter().rev().find(|l| !l.tables.is_empty()).unwrap();
    let target = &bottom.tables[bottom.tables.len() / 2];
    // A key of the table written once: every fifth key has a newer version elsewhere,
    // which a get finds first.
    let first: usize = std::str::from_utf8(&target.smallest_key[3..])
        .unwrap()
        .parse()
        .unwrap();
    let probe = key((first..).find(|j| j % 5 != 0).unwrap());
    assert!(probe <= target.largest_key, "the table holds the probe");
    let before = target.reads;
    for _ in 0..10 {
        assert!(db.get(&probe).unwrap().is_some());
    }
    let after = db
        .levels()
        .iter()
        .flat_map(|l| l.tables.clone())
        .find(|t| t.id == target.id)
        .expect("no compaction ran in between")
        .reads;
    assert!(
        after >= before + 10,
        "table {} reads {before} → {after} after 10 gets",
        target.id
    );

    // Bloom negatives for absent keys inside the tables' key ranges.
    let before = db.counters();
    let absent = 2_000;
    for i in 0..absent {
        let mut k = key(i % keys);
        k.push(b'x'); // sorts between two written keys
        assert!(db.get(&k).unwrap().is_none());
    }
    let d = db.counters().since(&before);
    assert_eq!(d.gets, absent as u64, "every get is counted");
    assert!(
        d.bloom_negatives >= absent as u64 * 9 / 10,
        "only {} Bloom negatives for {absent} absent keys (false positives {})",
        d.bloom_negatives,
        d.bloom_false_positives
    );
    assert!(
        d.bloom_false_positive_rate() < 0.05,
        "Bloom false positive rate {}",
        d.bloom_false_positive_rate()
    );
    assert_eq!(
        d.bloom_true_positives, 0,
        "absent keys cannot be true positives"
    );

    // Present keys: true positives, no negatives needed for the table that holds them.
    let before = db.counters();
    for i in (0..keys).step_by(37) {
        assert_eq!(db.get(&key(i)).unwrap().unwrap().value, value(i));
    }
    let d = db.counters().since(&before);
    assert!(
        d.bloom_true_positives >= (keys / 37) as u64,
        "true positives {}",
        d.bloom_true_positives
    );
    db.close().unwrap();
}
