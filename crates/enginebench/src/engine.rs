//! The seam between the workloads and the engines under test.

use std::path::Path;

use anyhow::Result;

/// Configuration applied identically to every engine (each adapter maps it onto its own
/// knobs; see `BENCHMARKS.md` for the mapping).
#[derive(Clone, Debug)]
pub struct EngineConfig {
    /// Memtable (write buffer) size in bytes.
    pub memtable_bytes: usize,
    /// Frozen memtables allowed to wait for flush (RocksDB: `max_write_buffer_number - 1`).
    pub immutable_memtables: usize,
    /// Bloom filter bits per key.
    pub bloom_bits_per_key: u32,
    /// Data block size in bytes.
    pub block_bytes: usize,
    /// Block cache capacity in bytes.
    pub cache_bytes: u64,
    /// Keep index and filter blocks in the block cache rather than pinned (both engines'
    /// `cache_index_and_filter_blocks`).
    pub cache_index_and_filter_blocks: bool,
    /// Index and filter partitioned every this many bytes of index (0: not partitioned).
    pub index_partition_bytes: usize,
    /// Read table files with O_DIRECT.
    pub direct_io: bool,
    /// Write the tables of flushes and compactions with O_DIRECT.
    pub direct_io_writes: bool,
    /// Level-0 files that trigger a compaction.
    pub l0_compaction_trigger: usize,
    /// Level-0 files from which writers are slowed (RocksDB
    /// `level0_slowdown_writes_trigger`, Mosaic `level0_slowdown_tables`).
    pub l0_slowdown: usize,
    /// Level-0 files at which writers stop until compaction catches up.
    pub l0_stop: usize,
    /// Target size of level 1 (RocksDB `max_bytes_for_level_base`).
    pub level1_bytes: u64,
    /// Size ratio between adjacent levels.
    pub level_ratio: u64,
    /// Target size of each table written by compaction.
    pub table_bytes: u64,
    /// Number of levels, level 0 included.
    pub levels: usize,
    /// Background compaction threads.
    pub compaction_threads: usize,
    /// Mosaic's periodic WAL sync interval (RocksDB never syncs with `sync = false`).
    pub wal_sync_interval_ms: u64,
    /// Collect per-level compaction statistics (see [`Engine::compaction_report`]).
    pub compaction_stats: bool,
}

impl Default for EngineConfig {
    fn default() -> Self {
        Self {
            memtable_bytes: 64 << 20,
            immutable_memtables: 2,
            bloom_bits_per_key: 10,
            block_bytes: 4096,
            cache_bytes: 64 << 20,
            cache_index_and_filter_blocks: false,
            index_partition_bytes: 0,
            direct_io: false,
            direct_io_writes: false,
            l0_compaction_trigger: 4,
            l0_slowdown: 20,
            l0_stop: 20,
            level1_bytes: 256 << 20,
            level_ratio: 10,
            table_bytes: 64 << 20,
            levels: 7,
            compaction_threads: 1,
            wal_sync_interval_ms: 1000,
            compaction_stats: false,
        }
    }
}

/// An engine's own view of the bytes it moved (zero where it keeps no such counter).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EngineCounters {
    /// Key + value bytes the caller asked to write.
    pub user_bytes_written: u64,
    /// Bytes appended to the write-ahead log.
    pub wal_bytes: u64,
    /// Bytes written by memtable flushes.
    pub flush_bytes: u64,
    /// Bytes written by compactions.
    pub compaction_write_bytes: u64,
    /// Bytes read by compactions.
    pub compaction_read_bytes: u64,
    /// Bytes read from table files by point lookups and scans (block cache misses).
    pub user_read_file_bytes: u64,
    /// Block cache hits.
    pub block_cache_hits: u64,
    /// Block cache misses.
    pub block_cache_misses: u64,
    /// Blocks (data, index, filter) point lookups read from table files: their I/Os.
    pub get_block_reads: u64,
    /// Microseconds writers were stalled.
    pub stall_micros: u64,
}

impl EngineCounters {
    /// Counter-by-counter `self - earlier`.
    pub fn since(&self, earlier: &EngineCounters) -> EngineCounters {
        EngineCounters {
            user_bytes_written: self
                .user_bytes_written
                .saturating_sub(earlier.user_bytes_written),
            wal_bytes: self.wal_bytes.saturating_sub(earlier.wal_bytes),
            flush_bytes: self.flush_bytes.saturating_sub(earlier.flush_bytes),
            compaction_write_bytes: self
                .compaction_write_bytes
                .saturating_sub(earlier.compaction_write_bytes),
            compaction_read_bytes: self
                .compaction_read_bytes
                .saturating_sub(earlier.compaction_read_bytes),
            user_read_file_bytes: self
                .user_read_file_bytes
                .saturating_sub(earlier.user_read_file_bytes),
            block_cache_hits: self
                .block_cache_hits
                .saturating_sub(earlier.block_cache_hits),
            block_cache_misses: self
                .block_cache_misses
                .saturating_sub(earlier.block_cache_misses),
            get_block_reads: self.get_block_reads.saturating_sub(earlier.get_block_reads),
            stall_micros: self.stall_micros.saturating_sub(earlier.stall_micros),
        }
    }

    /// Total bytes the engine says it wrote (WAL + flush + compaction).
    pub fn bytes_written(&self) -> u64 {
        self.wal_bytes + self.flush_bytes + self.compaction_write_bytes
    }
}

/// One engine under test. Keys and values are opaque bytes; a put of an existing key
/// replaces it.
pub trait Engine: Send + Sync {
    /// Short name used in reports ("mosaic", "rocksdb").
    fn name(&self) -> &'static str;
    /// Writes `key` → `value` (WAL on, no sync per write).
    fn put(&self, key: &[u8], value: &[u8]) -> Result<()>;
    /// Looks `key` up; on a hit the value is left in `out` and `true` returned.
    fn get(&self, key: &[u8], out: &mut Vec<u8>) -> Result<bool>;
    /// Visits up to `limit` entries in key order starting at `start` (inclusive); `visit`
    /// returns `false` to stop early. Returns the number of entries visited.
    fn scan(
        &self,
        start: &[u8],
        limit: usize,
        visit: &mut dyn FnMut(&[u8], &[u8]) -> bool,
    ) -> Result<usize>;
    /// Flushes the memtable and waits until no flush or compaction is pending or running.
    fn flush_and_wait(&self) -> Result<()>;
    /// The engine's own counters since it was opened.
    fn counters(&self) -> EngineCounters;
    /// A one-paragraph description of the tree's shape (files/bytes per level).
    fn shape(&self) -> String;
    /// Per-level compaction statistics since open (empty unless `compaction_stats` is on).
    fn compaction_report(&self) -> String;
    /// Closes the engine, waiting for its background work.
    fn close(self: Box<Self>) -> Result<()>;
}

/// The engines this binary was built with.
pub fn available_engines() -> Vec<&'static str> {
    let mut v = vec!["mosaic"];
    if cfg!(feature = "rocksdb") {
        v.push("rocksdb");
    }
    v
}

/// Opens engine `name` in the empty directory `dir`.
pub fn open_engine(name: &str, dir: &Path, cfg: &EngineConfig) -> Result<Box<dyn Engine>> {
    match name {
        "mosaic" => Ok(Box::new(crate::mosaic::MosaicEngine::open(dir, cfg)?)),
        #[cfg(feature = "rocksdb")]
        "rocksdb" => Ok(Box::new(crate::rocks::RocksEngine::open(dir, cfg)?)),
        #[cfg(not(feature = "rocksdb"))]
        "rocksdb" => anyhow::bail!(
            "this binary was built without RocksDB; rebuild with `--features rocksdb`"
        ),
        other => anyhow::bail!("unknown engine {other:?} (known: mosaic, rocksdb)"),
    }
}
