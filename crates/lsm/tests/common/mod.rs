//! Helpers shared by the engine's scenario tests.
#![allow(clippy::unwrap_used, dead_code)]

use std::path::Path;

/// A scratch directory, in memory (`/dev/shm`) when available so tests stay fast.
pub fn scratch() -> tempfile::TempDir {
    let shm = Path::new("/dev/shm");
    if shm.is_dir() {
        if let Ok(d) = tempfile::tempdir_in(shm) {
            return d;
        }
    }
    tempfile::tempdir().unwrap()
}

/// Opens partition `name` (a directory under the engine's root) of `engine`, with 64 KiB
/// memtables.
pub fn partition(engine: &mosaic_lsm::Engine, name: &str) -> mosaic_lsm::Db {
    mosaic_lsm::Db::open(
        engine.path().join(name),
        mosaic_lsm::Options {
            engine: Some(engine.clone()),
            memtable_size_bytes: 64 << 10,
            ..mosaic_lsm::Options::default()
        },
    )
    .unwrap()
}

/// Writes write `i` of a cycle over 300 keys (`key0000`…`key0299`): timestamp `i + 1`, a
/// 64-byte value of byte `i`, so later writes overwrite earlier ones.
pub fn put_cycling(db: &mosaic_lsm::Db, i: u64) {
    let mut b = mosaic_lsm::WriteBatch::new();
    b.put(
        format!("key{:04}", i % 300).as_bytes(),
        i + 1,
        &[i as u8; 64],
    );
    db.write(b).unwrap();
}
