#![allow(clippy::unwrap_used, clippy::indexing_slicing)]
#![allow(clippy::disallowed_methods)] // Tests run real threads and measure real time; the seam binds the code under test.
//! Scenario: one node engine holds many partitions sharing one WAL, one pool of workers and
//! one memtable budget (the 300-table bound on threads and memory is its own test binary,
//! `node_engine_many_tables.rs`, so no other test's threads are counted): a dropped or
//! truncated partition's logged writes never come back,
//! a partition closed and reopened in the same engine keeps its unflushed writes, and a
//! directory written by a per-table engine (its own WAL files) is migrated on open.

mod common;

use common::partition;

use std::ops::Bound;
use std::path::Path;

use mosaic_lsm::wal::{encode_batches, frame_record};
use mosaic_lsm::{Db, Engine, EngineOptions, Seqno, SyncMode, WriteBatch};

fn all(db: &Db) -> Vec<(Vec<u8>, Vec<u8>)> {
    db.scan(Bound::Unbounded, Bound::Unbounded)
        .unwrap()
        .map(|r| {
            let (k, e) = r.unwrap();
            (k, e.value)
        })
        .collect()
}

#[test]
fn unflushed_writes_of_many_partitions_replay_from_the_shared_wal() {
    let dir = common::scratch();
    let opts = || EngineOptions {
        sync_mode: SyncMode::Batch,
        ..EngineOptions::default()
    };
    {
        let engine = Engine::open(dir.path(), opts()).unwrap();
        for i in 0..20 {
            let db = partition(&engine, &format!("p{i}"));
            for k in 0..=i {
                db.put(format!("k{k}").as_bytes(), 1, format!("p{i}").as_bytes())
                    .unwrap();
            }
        }
        engine.close().unwrap();
    }
    let engine = Engine::open(dir.path(), opts()).unwrap();
    assert!(engine.recovery_report().records_replayed > 0);
    for i in 0..20 {
        let db = partition(&engine, &format!("p{i}"));
        let rows = all(&db);
        assert_eq!(rows.len(), i + 1, "partition p{i}");
        assert!(rows.iter().all(|(_, v)| v == format!("p{i}").as_bytes()));
        db.flush().unwrap();
    }
}

#[test]
fn a_dropped_or_truncated_partition_never_resurrects_and_others_keep_their_data() {
    let dir = common::scratch();
    {
        let engine = Engine::open(dir.path(), EngineOptions::default()).unwrap();
        let keep = partition(&engine, "ks/keep");
        let gone = partition(&engine, "ks/gone");
        let trunc = partition(&engine, "ks/trunc");
        for k in 0..100u32 {
            let key = k.to_be_bytes();
            keep.put(&key, 1, b"keep").unwrap();
            gone.put(&key, 1, b"gone").unwrap();
            trunc.put(&key, 1, b"old").unwrap();
        }
        trunc.flush().unwrap();
        trunc.put(b"unflushed", 2, b"old").unwrap();
        drop((gone, trunc));
        assert_eq!(
            engine
                .drop_partitions_under(dir.path().join("ks/gone"))
                .unwrap(),
            1
        );
        // A truncate: drop, then a new partition in the same directory.
        assert_eq!(
            engine
                .drop_partitions_under(dir.path().join("ks/trunc"))
                .unwrap(),
            1
        );
        let trunc = partition(&engine, "ks/trunc");
        assert!(all(&trunc).is_empty(), "truncated data is visible");
        trunc.put(b"new", 3, b"new").unwrap();
        // No close: the writes are only in the WAL (synced by the last handle's drop).
        drop((keep, trunc));
        drop(engine);
    }
    let engine = Engine::open(dir.path(), EngineOptions::default()).unwrap();
    let keep = partition(&engine, "ks/keep");
    assert_eq!(all(&keep).len(), 100);
    let trunc = partition(&engine, "ks/trunc");
    assert_eq!(all(&trunc), vec![(b"new".to_vec(), b"new".to_vec())]);
    let gone = partition(&engine, "ks/gone");
    assert!(all(&gone).is_empty(), "a dropped partition came back");
}

#[test]
fn a_partition_closed_and_reopened_in_the_same_engine_keeps_its_unflushed_writes() {
    let dir = common::scratch();
    let engine = Engine::open(dir.path(), EngineOptions::default()).unwrap();
    let db = partition(&engine, "t");
    db.put(b"a", 1, b"1").unwrap();
    db.close().unwrap();
    let db = partition(&engine, "t");
    assert_eq!(db.get(b"a").unwrap().unwrap().value, b"1");
    db.put(b"b", 2, b"2").unwrap();
    db.flush().unwrap();
    assert_eq!(all(&db).len(), 2);
}

/// Writes `dir` as the per-table engine before the node engine left it after a crash
/// before its first flush: nothing but its own WAL file.
fn write_per_table_wal(dir: &Path, rows: &[(&[u8], &[u8])]) {
    std::fs::create_dir_all(dir).unwrap();
    let mut batch = WriteBatch::new();
    for (k, v) in rows {
        batch.put(k, 7, v);
    }
    let mut payload = Vec::new();
    encode_batches(&mut payload, Seqno(1), std::iter::once(&batch));
    let mut framed = Vec::new();
    frame_record(&mut framed, &payload);
    std::fs::write(dir.join("000003.wal"), framed).unwrap();
}

#[test]
fn a_per_table_engine_directory_is_migrated_on_open() {
    let dir = common::scratch();
    let table = dir.path().join("ks/t-1");
    write_per_table_wal(&table, &[(b"a", b"1"), (b"b", b"2")]);
    let engine = Engine::open(dir.path(), EngineOptions::default()).unwrap();
    let db = partition(&engine, "ks/t-1");
    assert_eq!(db.recovery_report().records_replayed, 1);
    assert_eq!(all(&db).len(), 2);
    assert!(
        !table.join("000003.wal").exists(),
        "the per-table WAL must be gone once migrated"
    );
    // New writes get sequence numbers past the migrated ones, and everything survives.
    db.put(b"a", 8, b"new").unwrap();
    drop(db);
    engine.close().unwrap();
    let engine = Engine::open(dir.path(), EngineOptions::default()).unwrap();
    let db = partition(&engine, "ks/t-1");
    assert_eq!(db.get(b"a").unwrap().unwrap().value, b"new");
    assert_eq!(db.get(b"b").unwrap().unwrap().value, b"2");
}

/// A disk too slow to finish flushes (new SSTables cannot be created): writes fill the
/// node's memtable budget, then stall, and a stalled write is refused with
/// `WriteStalled` once it has waited `write_stall_timeout` — it is not applied, nothing
/// acknowledged is lost, and writes go through again once flushes can finish.
#[test]
fn a_write_stalled_past_the_timeout_is_refused_and_nothing_acknowledged_is_lost() {
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    use mosaic_lsm::{Error, Faults, FaultyFs, Options, RealFs};

    let dir = common::scratch();
    let faults = Arc::new(Faults::default());
    let fs: Arc<dyn mosaic_lsm::Fs> = Arc::new(FaultyFs::new(Arc::new(RealFs), faults.clone()));
    let timeout = Duration::from_millis(300);
    let engine = Engine::open(
        dir.path(),
        EngineOptions {
            fs: fs.clone(),
            memtable_space_bytes: 256 << 10,
            write_stall_timeout: Some(timeout),
            ..EngineOptions::default()
        },
    )
    .unwrap();
    let db = Db::open(
        dir.path().join("ks/t"),
        Options {
            fs,
            engine: Some(engine.clone()),
            memtable_size_bytes: 64 << 10,
            ..Options::default()
        },
    )
    .unwrap();
    /// Lets flushes finish however the test ends, so the engine can shut down.
    struct Release(Arc<Faults>);
    impl Drop for Release {
        fn drop(&mut self) {
            self.0.release_creates();
        }
    }
    let release = Release(faults.clone());
    faults.hold_creates(".sst");
    let value = vec![7u8; 4096];
    let mut acked = Vec::new();
    let mut refused = None;
    for i in 0..1000u32 {
        let key = format!("k{i:05}").into_bytes();
        let mut b = WriteBatch::new();
        b.put(&key, 1, &value);
        let started = Instant::now();
        match db.write(b) {
            Ok(()) => acked.push(key),
            Err(e) => {
                refused = Some((key, e, started.elapsed()));
                break;
            }
        }
    }
    let (key, err, waited) = refused.expect("writes never stalled with flushes held");
    assert!(matches!(err, Error::WriteStalled { .. }), "{err}");
    assert!(err.is_write_stalled());
    assert!(waited >= timeout, "refused after {waited:?}");
    assert!(waited < timeout * 10, "refused only after {waited:?}");
    assert!(engine.is_stalling(), "a stalling engine says so");
    assert!(db.counters().write_stall_timeouts >= 1);
    assert!(
        engine.memtable_bytes() <= 256 << 10,
        "{} bytes held",
        engine.memtable_bytes()
    );
    // The refused write was not applied; every acknowledged one is there.
    let value_of = |k: &[u8]| db.get(k).unwrap().map(|e| e.value);
    assert_eq!(value_of(&key), None);
    for k in &acked {
        assert_eq!(value_of(k).as_ref(), Some(&value));
    }
    // Once flushes can finish, writes are admitted again.
    drop(release);
    let mut b = WriteBatch::new();
    b.put(&key, 1, &value);
    db.write(b).unwrap();
    assert_eq!(value_of(&key).as_ref(), Some(&value));
}
