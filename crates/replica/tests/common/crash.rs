//! What the replica crate's crash-image tests share.

use std::sync::Arc;

use mosaic_env::CrashFs;
use mosaic_lsm::{Options, SyncMode};

/// Engine options for a store on `fs`: every write synced, structures tiny so a few
/// hundred writes flush, compact and rotate files between crash points.
pub fn options(fs: &CrashFs) -> Options {
    Options {
        fs: Arc::new(fs.clone()),
        sync_mode: SyncMode::PerWrite,
        memtable_size_bytes: 4 << 10,
        block_cache_bytes: 0,
        level0_compaction_trigger: 2,
        level0_stall_tables: 8,
        level1_size_bytes: 16 << 10,
        table_size_bytes: 8 << 10,
        gc_grace_micros: u64::MAX,
        ..Options::default()
    }
}
