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
