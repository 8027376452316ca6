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
