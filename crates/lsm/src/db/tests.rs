//! Unit tests of the engine as a whole: writes surviving flush, compaction and reopen, WAL
//! replay, snapshots across compaction, table relocation, close releasing the directory,
//! the cost of a point lookup. Scenario tests with fault injection live in
//! `crates/lsm/tests/`.

use std::ops::Bound;

use crate::options::Options;
use crate::wal::SyncMode;

use super::Db;

fn small() -> Options {
    Options {
        memtable_size_bytes: 8 << 10,
        table_size_bytes: 16 << 10,
        level1_size_bytes: 32 << 10,
        level0_compaction_trigger: 2,
        level0_stall_tables: 8,
        sync_mode: SyncMode::Batch,
        ..Options::default()
    }
}

fn key(i: u32) -> Vec<u8> {
    format!("key{i:06}").into_bytes()
}

#[test]
fn writes_survive_flush_compaction_and_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), small()).unwrap();
    for i in 0..2000u32 {
        db.put(&key(i), u64::from(i) + 1, &[i as u8; 100]).unwrap();
    }
    for i in (0..2000u32).step_by(3) {
        db.delete(&key(i), 10_000).unwrap();
    }
    // An older write arriving late loses to the newer one.
    db.put(&key(1), 1, b"stale").unwrap();
    db.wait_for_compactions().unwrap();
    let check = |db: &Db| {
        for i in 0..2000u32 {
            let got = db.get(&key(i)).unwrap();
            if i % 3 == 0 {
                assert_eq!(got, None, "key {i}");
            } else {
                assert_eq!(got.unwrap().value, vec![i as u8; 100], "key {i}");
            }
        }
        let scanned: Vec<_> = db
            .scan(Bound::Unbounded, Bound::Unbounded)
            .unwrap()
            .map(|r| r.unwrap().0)
            .collect();
        let expected: Vec<_> = (0..2000u32).filter(|i| i % 3 != 0).map(key).collect();
        assert_eq!(scanned, expected);
    };
    check(&db);
    assert!(db.levels().iter().skip(1).any(|l| !l.tables.is_empty()));
    let c = db.counters();
    assert!(c.flushes > 0 && c.compactions > 0, "{c:?}");
    assert!(c.write_amplification() > 1.0, "{c:?}");
    db.close().unwrap();
    let db = Db::open(dir.path(), small()).unwrap();
    check(&db);
    db.compact().unwrap();
    check(&db);
    let levels = db.levels();
    let last = levels.last().unwrap();
    assert!(!last.tables.is_empty());
    assert!(levels[..levels.len() - 1]
        .iter()
        .all(|l| l.tables.is_empty()));
}

#[test]
fn unflushed_writes_are_replayed_from_the_wal() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    db.put(b"a", 5, b"1").unwrap();
    db.put(b"b", 6, b"2").unwrap();
    db.close().unwrap();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    assert_eq!(db.recovery_report().records_replayed, 2);
    assert_eq!(db.get(b"a").unwrap().unwrap().value, b"1");
    assert_eq!(db.get(b"b").unwrap().unwrap().ts, 6);
}

#[test]
fn snapshots_see_the_past_even_after_compaction() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), small()).unwrap();
    db.put(b"k", 1, b"old").unwrap();
    let snap = db.snapshot();
    db.put(b"k", 2, b"new").unwrap();
    db.compact().unwrap();
    assert_eq!(db.get_at(b"k", &snap).unwrap().unwrap().value, b"old");
    assert_eq!(db.get(b"k").unwrap().unwrap().value, b"new");
    let scan: Vec<_> = db
        .scan_at(&snap, Bound::Unbounded, Bound::Unbounded)
        .unwrap()
        .collect();
    assert_eq!(scan.len(), 1);
    assert_eq!(scan[0].as_ref().unwrap().1.value, b"old");
}

mod relocation_tests {
    use std::path::PathBuf;
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::Arc;

    use mosaic_env::{Fs, RandomAccessFile, RealFs};

    use crate::options::{Options, TableStore};
    use crate::version::{table_file_name, table_sidecar_name};

    use super::Db;

    /// A "cold tier" that is just another directory, counting the bytes read from it.
    struct DirStore {
        dir: PathBuf,
        bytes_read: Arc<AtomicU64>,
    }

    struct Counted(Arc<dyn RandomAccessFile>, Arc<AtomicU64>);

    impl RandomAccessFile for Counted {
        fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
            self.1.fetch_add(buf.len() as u64, Ordering::Relaxed);
            self.0.read_exact_at(buf, offset)
        }

        fn len(&self) -> u64 {
            self.0.len()
        }
    }

    impl TableStore for DirStore {
        fn open(&self, location: &str) -> std::io::Result<Arc<dyn RandomAccessFile>> {
            let f = RealFs.open_read(&self.dir.join(location), false)?;
            Ok(Arc::new(Counted(f, self.bytes_read.clone())))
        }

        fn put(&self, location: &str, bytes: &[u8]) -> std::io::Result<()> {
            std::fs::write(self.dir.join(location), bytes)
        }

        fn remove(&self, location: &str) -> std::io::Result<()> {
            match std::fs::remove_file(self.dir.join(location)) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
                _ => Ok(()),
            }
        }
    }

    #[test]
    fn a_relocation_racing_a_compaction_never_brings_the_compacted_table_back() {
        let dir = tempfile::tempdir().unwrap();
        let cold = tempfile::tempdir().unwrap();
        let opts = Options {
            table_store: Some(Arc::new(DirStore {
                dir: cold.path().to_path_buf(),
                bytes_read: Arc::new(AtomicU64::new(0)),
            })),
            ..Options::default()
        };
        let db = Db::open(dir.path(), opts).unwrap();
        for round in 0..2u32 {
            for i in 0..500u32 {
                db.put(
                    format!("k{i:05}").as_bytes(),
                    u64::from(round) + 1,
                    &[7; 100],
                )
                .unwrap();
            }
            db.flush().unwrap();
        }
        // The relocation found a table ...
        let (level, old) = {
            let st = db.inner.state.lock();
            let (level, tables) = st
                .version
                .levels
                .iter()
                .enumerate()
                .find(|(_, t)| !t.is_empty())
                .unwrap();
            (level, tables[0].clone())
        };
        std::fs::copy(
            dir.path().join(table_file_name(old.meta().id)),
            cold.path().join("obj"),
        )
        .unwrap();
        // ... a compaction replaced it before the relocation's edit.
        db.compact().unwrap();
        let err = db.inner.relocate_found(level, &old, "obj").unwrap_err();
        assert!(err.to_string().contains("compacted away"), "{err}");
        let levels = db.levels();
        assert!(
            levels
                .iter()
                .flat_map(|l| &l.tables)
                .all(|t| t.id != old.meta().id),
            "the compacted table came back: {levels:?}"
        );
        assert!(!dir.path().join(table_sidecar_name(old.meta().id)).exists());
        for i in (0..500u32).step_by(37) {
            let got = db.get(format!("k{i:05}").as_bytes()).unwrap().unwrap();
            assert_eq!(got.ts, 2);
        }
        db.close().unwrap();
    }

    #[test]
    fn a_relocated_table_reads_only_data_blocks_from_its_store_and_is_removed_when_obsolete() {
        let dir = tempfile::tempdir().unwrap();
        let cold = tempfile::tempdir().unwrap();
        let bytes_read = Arc::new(AtomicU64::new(0));
        let opts = Options {
            table_store: Some(Arc::new(DirStore {
                dir: cold.path().to_path_buf(),
                bytes_read: bytes_read.clone(),
            })),
            block_cache_bytes: 0,
            ..Options::default()
        };
        let db = Db::open(dir.path(), opts.clone()).unwrap();
        for i in 0..2000u32 {
            db.put(format!("k{i:05}").as_bytes(), 1, &[i as u8; 200])
                .unwrap();
        }
        db.flush().unwrap();
        let table = db
            .levels()
            .into_iter()
            .flat_map(|l| l.tables)
            .next()
            .unwrap();
        let local = dir.path().join(table_file_name(table.id));
        let object = cold.path().join("obj-1");
        std::fs::copy(&local, &object).unwrap();
        db.relocate_table(table.id, "obj-1").unwrap();
        assert!(
            !local.exists(),
            "the local data file is removed once relocated"
        );
        let sidecar = dir.path().join(table_sidecar_name(table.id));
        let sidecar_len = std::fs::metadata(&sidecar).unwrap().len();
        assert!(
            sidecar_len > 0 && sidecar_len < table.size_bytes / 10,
            "{sidecar_len}"
        );
        let err = db.relocate_table(table.id, "obj-2").unwrap_err();
        assert!(err.to_string().contains("already lives at"), "{err}");
        db.close().unwrap();

        // Reopening reads the metadata from the sidecar: nothing from the store.
        bytes_read.store(0, Ordering::Relaxed);
        let db = Db::open(dir.path(), opts.clone()).unwrap();
        assert_eq!(
            bytes_read.load(Ordering::Relaxed),
            0,
            "open fetched from the cold tier"
        );
        let t = db
            .levels()
            .into_iter()
            .flat_map(|l| l.tables)
            .next()
            .unwrap();
        assert_eq!(t.location, "obj-1");
        // A point read fetches one data block, not the object.
        assert_eq!(
            db.get(b"k01234").unwrap().unwrap().value,
            [1234u32 as u8; 200]
        );
        let fetched = bytes_read.load(Ordering::Relaxed);
        assert!(
            fetched > 0 && fetched < 8192,
            "a get fetched {fetched} bytes"
        );

        // Compaction rewrites the table locally; the cold object and the sidecar go with it.
        db.put(b"k00000", 2, b"new").unwrap();
        db.flush().unwrap();
        db.compact().unwrap();
        assert_eq!(db.get(b"k00000").unwrap().unwrap().value, b"new");
        assert_eq!(
            db.get(b"k01999").unwrap().unwrap().value,
            [1999u32 as u8; 200]
        );
        assert!(!object.exists(), "the obsolete cold object is deleted");
        assert!(!sidecar.exists(), "the obsolete sidecar is deleted");
        assert!(db
            .levels()
            .iter()
            .flat_map(|l| &l.tables)
            .all(|t| t.location.is_empty()));
        db.close().unwrap();
    }

    #[test]
    fn a_relocated_table_needs_a_table_store_and_recovery_drops_leftover_local_copies() {
        let dir = tempfile::tempdir().unwrap();
        let cold = tempfile::tempdir().unwrap();
        let opts = Options {
            table_store: Some(Arc::new(DirStore {
                dir: cold.path().to_path_buf(),
                bytes_read: Arc::default(),
            })),
            ..Options::default()
        };
        let db = Db::open(dir.path(), opts.clone()).unwrap();
        for i in 0..100u32 {
            db.put(format!("k{i:03}").as_bytes(), 1, &i.to_le_bytes())
                .unwrap();
        }
        db.flush().unwrap();
        let id = db
            .levels()
            .into_iter()
            .flat_map(|l| l.tables)
            .next()
            .unwrap()
            .id;
        let local = dir.path().join(table_file_name(id));
        std::fs::copy(&local, cold.path().join("obj-1")).unwrap();
        // Keep a copy of the local file, as a crash before its deletion would.
        let kept = dir.path().join("kept");
        std::fs::copy(&local, &kept).unwrap();
        db.relocate_table(id, "obj-1").unwrap();
        db.close().unwrap();
        std::fs::rename(&kept, &local).unwrap();
        let db = Db::open(dir.path(), opts).unwrap();
        assert!(db.recovery_report().orphans_removed >= 1);
        assert!(
            !local.exists(),
            "recovery removes the local copy of a relocated table"
        );
        assert_eq!(db.get(b"k042").unwrap().unwrap().value, 42u32.to_le_bytes());
        drop(db);
        let err = Db::open(dir.path(), Options::default()).unwrap_err();
        assert!(err.to_string().contains("no table store"), "{err}");
    }
}

mod close_tests {
    use std::ops::Bound;

    use crate::error::Error;
    use crate::options::Options;

    use super::Db;

    #[test]
    fn close_releases_the_directory_while_a_scan_lives_on() {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path(), Options::default()).unwrap();
        db.put(b"a", 1, b"x").unwrap();
        let scan = db.scan(Bound::Unbounded, Bound::Unbounded).unwrap();
        let clone = db.clone();
        db.close().unwrap();
        assert!(matches!(clone.put(b"b", 2, b"y"), Err(Error::Closed)));
        let reopened = Db::open(dir.path(), Options::default()).unwrap();
        assert_eq!(reopened.get(b"a").unwrap().unwrap().value, b"x");
        let items: Vec<_> = scan.map(|r| r.unwrap().0).collect();
        assert_eq!(items, vec![b"a".to_vec()]);
        // Two live openers of one directory are refused.
        assert!(Db::open(dir.path(), Options::default()).is_err());
    }
}

mod lookup_cost_tests {
    use crate::options::Options;

    use super::Db;

    #[test]
    fn a_point_lookup_reads_one_data_block_when_keys_are_unique() {
        let dir = tempfile::tempdir().unwrap();
        let opts = Options {
            block_cache_bytes: 0,
            ..Options::default()
        };
        let db = Db::open(dir.path(), opts).unwrap();
        for i in 0..2000u32 {
            db.put(format!("key{i:08}").as_bytes(), 1, &[7u8; 1000])
                .unwrap();
        }
        db.flush().unwrap();
        let before = db.counters();
        for i in 0..2000u32 {
            assert!(db.get(format!("key{i:08}").as_bytes()).unwrap().is_some());
        }
        let c = db.counters().since(&before);
        // One ~4 KiB block per lookup; reading on into the next block would add ~25%.
        let per_get = c.get_bytes_read as f64 / c.gets as f64;
        assert!(per_get < 4096.0 * 1.1, "{per_get} bytes per get");
    }

    #[test]
    fn a_scan_of_one_partition_does_not_read_the_next_block() {
        use std::ops::Bound;
        let dir = tempfile::tempdir().unwrap();
        let mut opts = Options {
            block_cache_bytes: 0,
            ..Options::default()
        };
        // Partitions by an 8-byte token, as Mosaic's tables are: a scan of one is a lookup.
        opts.table.filter_prefix_bytes = 8;
        let db = Db::open(dir.path(), opts).unwrap();
        // Keys led by a scrambled 8-byte token, as partitions are; values of a block's
        // size or more, so each key is in a block of its own.
        let key = |i: u64| {
            let mut k = i.wrapping_mul(0x9E37_79B9_7F4A_7C15).to_be_bytes().to_vec();
            k.extend_from_slice(b"row");
            k
        };
        for i in 0..200u64 {
            let value: Vec<u8> = (0..8192u64)
                .map(|j| (j.wrapping_add(i).wrapping_mul(0x2545_F491_4F6C_DD1D) >> 56) as u8)
                .collect();
            db.put(&key(i), 1, &value).unwrap();
        }
        db.flush().unwrap();
        db.compact().unwrap();
        let before = db.counters();
        for i in 0..200 {
            // The partition's range: its token, up to the next token.
            let start = key(i);
            let mut end = start[..8].to_vec();
            end.push(0xff);
            let rows: Vec<_> = db
                .scan(Bound::Included(&start), Bound::Excluded(&end))
                .unwrap()
                .collect::<Result<_, _>>()
                .unwrap();
            assert_eq!(rows.len(), 1);
            assert_eq!(rows[0].0, start);
        }
        let c = db.counters().since(&before);
        // One block per scan; going on to the next key's block would double it (an index
        // key that could not be shortened between two tokens still does).
        assert_eq!(c.gets, 200);
        let per_scan = c.get_data_block_reads as f64 / 200.0;
        assert!(per_scan < 1.05, "{per_scan} blocks per scan: {c:?}");
    }
}
