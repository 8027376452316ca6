//! Engine configuration and the pluggable policies and hooks later features build on.

use std::io;
use std::sync::Arc;

use mosaic_env::{Clock, Fs, RandomAccessFile, RealFs, SystemClock};

use crate::merge::MergeOperator;
use crate::table::TableOptions;
use crate::wal::SyncMode;

/// Target size of each level; the default is classic leveled sizing (level 1 =
/// `level1_size_bytes`, each deeper level `level_size_ratio` times larger). ELECT swaps in a
/// policy that keeps the last level fat.
pub trait LevelPolicy: Send + Sync + 'static {
    /// Target bytes for `level` (≥ 1), given the bytes currently in every level.
    fn target_bytes(&self, level: usize, level_bytes: &[u64], opts: &Options) -> u64;
}

/// Classic leveled sizing.
#[derive(Debug, Default, Clone, Copy)]
pub struct StaticLevels;

impl LevelPolicy for StaticLevels {
    fn target_bytes(&self, level: usize, _level_bytes: &[u64], opts: &Options) -> u64 {
        let exp = level.saturating_sub(1) as u32;
        opts.level1_size_bytes
            .saturating_mul(opts.level_size_ratio.saturating_pow(exp))
    }
}

/// Sizing from the bottom up (RocksDB's `level_compaction_dynamic_level_bytes`): the last
/// level holds what it holds, each level above is `level_size_ratio` times smaller, and
/// levels whose target falls below `level1_size_bytes / ratio` stay empty, so data moves
/// from level 0 straight to the first level that needs it. This keeps write amplification
/// near the ratio's bound for any data size.
#[derive(Debug, Default, Clone, Copy)]
pub struct DynamicLevels;

impl LevelPolicy for DynamicLevels {
    fn target_bytes(&self, level: usize, level_bytes: &[u64], opts: &Options) -> u64 {
        let last = level_bytes.len().saturating_sub(1);
        let ratio = opts.level_size_ratio.max(2);
        let mut target = level_bytes
            .last()
            .copied()
            .unwrap_or(0)
            .max(opts.level1_size_bytes);
        // Walk up from the bottom; the first level whose target fits level 1's size is the
        // base level, and the levels above it stay empty.
        for l in (1..=last).rev() {
            if l == level {
                return target.max(1);
            }
            if target <= opts.level1_size_bytes {
                return 0;
            }
            target /= ratio;
        }
        0
    }
}

/// What a compaction did, reported to the [`CompactionListener`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CompactionEvent {
    /// Level the compaction read from.
    pub level: usize,
    /// Level it wrote to.
    pub output_level: usize,
    /// Ids of the tables it replaced.
    pub inputs: Vec<u64>,
    /// Ids of the tables it wrote (for a trivial move: the moved table).
    pub outputs: Vec<u64>,
    /// Whether the table was moved down without rewriting.
    pub trivial_move: bool,
}

/// Told about every installed compaction (after the manifest records it), e.g. to update
/// parity when the tables it covers change.
pub trait CompactionListener: Send + Sync + 'static {
    /// Called once per compaction, from the compaction's thread.
    fn on_compaction(&self, event: &CompactionEvent);

    /// Called when a background job (`"flush"` or `"compaction"`) of the engine in `dir`
    /// fails: once when a full disk starts refusing writes, and once when another failure
    /// poisons the engine (not again for every retry). Called with the engine's state
    /// locked: it must not block or call back into the engine. The default ignores it.
    fn on_background_error(&self, dir: &std::path::Path, job: &str, error: &crate::Error) {
        let _ = (dir, job, error);
    }
}

/// Holds the data component of tables that do not live in the local file
/// (`TableMeta::location` non-empty), e.g. objects in the cold tier. The engine keeps such a
/// table's metadata (filter, index, properties, footer) in a local sidecar, so it reads from
/// the store only the data blocks a read or compaction needs.
pub trait TableStore: Send + Sync + 'static {
    /// Opens the data at `location` for random reads.
    fn open(&self, location: &str) -> io::Result<Arc<dyn RandomAccessFile>>;

    /// Stores `bytes` at `location` (replacing what is there), durably once it returns.
    fn put(&self, location: &str, bytes: &[u8]) -> io::Result<()>;

    /// Deletes the data at `location`, once no version of the engine references it; a
    /// missing object is not an error.
    fn remove(&self, location: &str) -> io::Result<()>;
}

/// Engine configuration.
#[derive(Clone)]
pub struct Options {
    /// File system (the real one, or a fault-injecting one in tests).
    pub fs: Arc<dyn Fs>,
    /// Clock for tombstone expiry and file creation times.
    pub clock: Arc<dyn Clock>,
    /// The node engine this database is a partition of: it shares the engine's WAL,
    /// workers, memtable budget and block cache. `None`: [`crate::Db::open`] opens a
    /// private engine in the database's directory, configured from these options.
    pub engine: Option<crate::Engine>,
    /// When writes are synced (a private engine's; a node engine has its own).
    pub sync_mode: SyncMode,
    /// Open even when a WAL is damaged before its end (a private engine's, and this
    /// table's own WALs from before the node engine; see
    /// [`crate::EngineOptions::ignore_wal_corruption`]).
    pub ignore_wal_corruption: bool,
    /// Memtable byte budget before it is frozen and flushed.
    pub memtable_size_bytes: usize,
    /// Frozen memtables allowed to wait for flush before writers stall.
    pub immutable_memtables_max: usize,
    /// Table format options (block size, Bloom bits, compression).
    pub table: TableOptions,
    /// Block cache capacity in bytes of a private engine (0 disables it).
    pub block_cache_bytes: u64,
    /// Whether a private engine's block cache holds index and filter blocks (see
    /// [`crate::EngineOptions::cache_index_and_filter_blocks`]).
    pub cache_index_and_filter_blocks: bool,
    /// Read tables with O_DIRECT (bypassing the OS page cache) where supported.
    pub direct_io: bool,
    /// Write the tables of flushes, compactions, splits and merge-sorts with O_DIRECT
    /// where supported (RocksDB's `use_direct_io_for_flush_and_compaction`): they bypass
    /// the page cache, so they neither evict pages reads need nor pile up dirty pages for
    /// writeback to flush in bursts. The commit log stays buffered.
    pub direct_io_for_flush_and_compaction: bool,
    /// Level-0 tables that trigger a compaction into level 1.
    pub level0_compaction_trigger: usize,
    /// Level-0 tables from which each write is delayed a little more per table (RocksDB's
    /// `level0_slowdown_writes_trigger`), so latency rises gradually before the stall.
    pub level0_slowdown_tables: usize,
    /// Level-0 tables at which writers stall until compaction catches up.
    pub level0_stall_tables: usize,
    /// Size ratio between adjacent levels.
    pub level_size_ratio: u64,
    /// Target size of level 1.
    pub level1_size_bytes: u64,
    /// Target size of each table written by compaction.
    pub table_size_bytes: u64,
    /// Number of levels, level 0 included.
    pub levels_max: usize,
    /// Background compaction threads of a private engine (a partition of a node engine
    /// uses the engine's).
    pub compaction_threads: usize,
    /// How long tombstones are kept before compaction may drop them (gc grace).
    pub gc_grace_micros: u64,
    /// Merge of same-key fragments; `None` means last-write-wins.
    pub merge_operator: Option<Arc<dyn MergeOperator>>,
    /// Told about every compaction.
    pub compaction_listener: Option<Arc<dyn CompactionListener>>,
    /// Versions flushes and compactions may forget because they are kept elsewhere.
    pub compaction_filter: Option<Arc<dyn CompactionFilter>>,
    /// Target size per level.
    pub level_policy: Arc<dyn LevelPolicy>,
    /// Opens tables whose data lives elsewhere than the local file.
    pub table_store: Option<Arc<dyn TableStore>>,
    /// `Some`: the engine is a two-layer log (DEPART) instead of a leveled tree; see
    /// [`LogOptions`].
    pub log: Option<LogOptions>,
}

/// Decides which stored versions a tree may forget because another structure keeps them
/// (ELECT's secondary removal: a redundant copy drops the versions a coding group covers).
///
/// Flushes and compactions ask about every version that all open snapshots see (the
/// versions they may merge), before versions of one key are merged, so a dropped
/// version's content never survives inside a merged one. Reads do not consult it: the
/// caller knows which keys it covers.
pub trait CompactionFilter: Send + Sync + 'static {
    /// Whether the version of `key` written at timestamp `ts` may be dropped.
    fn drops(&self, key: &[u8], ts: u64) -> bool;

    /// Whether flushes ask too (the default). A filter whose answer costs a read elsewhere
    /// may leave it to compactions, keeping flushes (which writers may wait for) cheap.
    fn at_flush(&self) -> bool {
        true
    }
}

/// The range group of a user key, for the two-layer log's splitter. Keys of one group
/// must form one contiguous interval in key order.
pub type GroupOf = Arc<dyn Fn(&[u8]) -> u32 + Send + Sync>;

/// The shape of a two-layer log (DEPART §4.2–4.3), the store of redundant replicas.
///
/// Flushed memtables are appended to the *global log* as segments (level 0, overlapping,
/// newest first). A split takes the oldest `split_segments` segments, partitions their
/// entries by [`LogOptions::group_of`] into range groups (grouped by source node by the
/// caller's choice of groups) and writes each group's share as one sorted run, dropping
/// obsolete versions on the way. A group holds at most `runs_max` runs (DEPART's S);
/// when a share would exceed it, the group's runs and the share are merge-sorted into
/// one run. `runs_max = 1` behaves as a two-level LSM-tree, a very large value as a pure
/// append-only log.
///
/// `split_segments = 0` drops the global log: each flush writes the memtable's entries
/// straight into the range groups, one run per group it holds keys of (the split done at
/// flush, so redundant copies are written once instead of twice — at the price of more,
/// smaller runs per group, and so more merge-sorts for the same S).
#[derive(Clone)]
pub struct LogOptions {
    /// Global-log segments one split takes (oldest first); 0: no global log, flushes
    /// write straight into the range groups.
    pub split_segments: usize,
    /// Sorted runs a range group may hold before they are merge-sorted into one (S).
    pub runs_max: usize,
    /// The range group of a user key.
    pub group_of: GroupOf,
}

impl LogOptions {
    /// Groups by `group_of`, with DEPART's defaults (S = 20, 4 segments per split).
    pub fn new(group_of: GroupOf) -> Self {
        Self {
            split_segments: 4,
            runs_max: 20,
            group_of,
        }
    }
}

impl std::fmt::Debug for LogOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LogOptions")
            .field("split_segments", &self.split_segments)
            .field("runs_max", &self.runs_max)
            .finish_non_exhaustive()
    }
}

impl Default for Options {
    fn default() -> Self {
        Self {
            fs: Arc::new(RealFs),
            clock: Arc::new(SystemClock),
            engine: None,
            sync_mode: SyncMode::default(),
            ignore_wal_corruption: false,
            memtable_size_bytes: 64 << 20,
            immutable_memtables_max: 2,
            table: TableOptions::default(),
            block_cache_bytes: 64 << 20,
            cache_index_and_filter_blocks: false,
            direct_io: false,
            direct_io_for_flush_and_compaction: false,
            level0_compaction_trigger: 4,
            level0_slowdown_tables: 12,
            level0_stall_tables: 20,
            level_size_ratio: 10,
            level1_size_bytes: 256 << 20,
            table_size_bytes: 64 << 20,
            levels_max: 7,
            compaction_threads: 1,
            gc_grace_micros: 10 * 24 * 3600 * 1_000_000,
            merge_operator: None,
            compaction_listener: None,
            compaction_filter: None,
            level_policy: Arc::new(DynamicLevels),
            table_store: None,
            log: None,
        }
    }
}

impl Options {
    /// Checks the options for values the engine cannot work with.
    pub fn validate(&self) -> crate::Result<()> {
        let bad = |what: &str| Err(crate::Error::InvalidArgument(what.to_owned()));
        if self.memtable_size_bytes < 1024 {
            return bad("memtable_size_bytes must be at least 1 KiB");
        }
        if self.levels_max < 2 || self.levels_max > 32 {
            return bad("levels_max must be between 2 and 32");
        }
        if self.level_size_ratio < 2 {
            return bad("level_size_ratio must be at least 2");
        }
        if self.level0_compaction_trigger == 0
            || self.level0_stall_tables <= self.level0_compaction_trigger
        {
            return bad("level0_stall_tables must exceed level0_compaction_trigger (≥ 1)");
        }
        if self.immutable_memtables_max == 0 || self.compaction_threads == 0 {
            return bad("immutable_memtables_max and compaction_threads must be at least 1");
        }
        if self.table_size_bytes < 1024 || self.level1_size_bytes < 1024 {
            return bad("table_size_bytes and level1_size_bytes must be at least 1 KiB");
        }
        if let SyncMode::Periodic { interval_ms: 0 } = self.sync_mode {
            return bad("periodic sync interval must be at least 1 ms");
        }
        if self.table.filter_prefix_bytes > 255 {
            return bad("table.filter_prefix_bytes must be at most 255");
        }
        if let Some(log) = &self.log {
            if log.runs_max == 0 {
                return bad("a two-layer log needs runs_max of at least 1");
            }
            if self.level0_stall_tables <= log.split_segments {
                return bad("level0_stall_tables must exceed the log's split_segments");
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dynamic_levels_size_from_the_bottom() {
        let opts = Options {
            level1_size_bytes: 100,
            level_size_ratio: 10,
            ..Options::default()
        };
        // 7 levels, 100_000 bytes at the bottom: L6 100k, L5 10k, L4 1k, L3 100, L2 10 → 0.
        let bytes = [0, 0, 0, 0, 0, 0, 100_000];
        let p = DynamicLevels;
        assert_eq!(p.target_bytes(6, &bytes, &opts), 100_000);
        assert_eq!(p.target_bytes(5, &bytes, &opts), 10_000);
        assert_eq!(p.target_bytes(3, &bytes, &opts), 100);
        assert_eq!(p.target_bytes(2, &bytes, &opts), 0);
        assert_eq!(p.target_bytes(1, &bytes, &opts), 0);
    }

    #[test]
    fn static_levels_grow_by_the_ratio() {
        let opts = Options {
            level1_size_bytes: 100,
            level_size_ratio: 10,
            ..Options::default()
        };
        assert_eq!(StaticLevels.target_bytes(1, &[], &opts), 100);
        assert_eq!(StaticLevels.target_bytes(3, &[], &opts), 10_000);
    }
}
