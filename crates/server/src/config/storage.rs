//! `[storage]`: the checks of the section and what it becomes — the node engine's options,
//! each table's engine options and the decoupled layout's log shape. The keys and their
//! defaults are in the parent module.

use anyhow::{bail, Context, Result};
use mosaic_lsm::{Options, SyncMode};

use super::{StorageConfig, WalSync};

impl StorageConfig {
    /// Checks the engine options, the default layout and the decoupled layout's log.
    pub fn validate(&self) -> Result<()> {
        self.node_engine_options()?
            .validate()
            .map_err(|e| anyhow::anyhow!("[storage] {e}"))?;
        let engine = self.engine_options()?;
        engine
            .validate()
            .map_err(|e| anyhow::anyhow!("[storage] {e}"))?;
        if self.sorted_runs_max == 0 {
            bail!("[storage] sorted_runs_max must be at least 1");
        }
        // The log's engine checks its shape against the other options (a split must fit
        // below the write stall).
        let log = self.log_settings(mosaic_replica::RingRanges::default());
        mosaic_lsm::Options {
            log: Some(mosaic_lsm::LogOptions {
                split_segments: log.split_segments,
                runs_max: log.runs_max,
                group_of: log.ring.group_of(),
            }),
            ..engine
        }
        .validate()
        .map_err(|e| anyhow::anyhow!("[storage] split_segments {}: {e}", self.split_segments))?;
        Ok(())
    }

    /// The decoupled layout's log shape, grouping by `ring`'s ranges.
    pub fn log_settings(&self, ring: mosaic_replica::RingRanges) -> mosaic_replica::LogSettings {
        mosaic_replica::LogSettings {
            split_segments: self.split_segments,
            runs_max: self.sorted_runs_max,
            ring,
        }
    }

    /// When the WAL is synced.
    fn sync_mode(&self) -> SyncMode {
        match self.wal_sync {
            WalSync::PerWrite => SyncMode::PerWrite,
            WalSync::Batch => SyncMode::Batch,
            WalSync::Periodic => SyncMode::Periodic {
                interval_ms: self.wal_sync_interval_ms,
            },
        }
    }

    /// The largest data block the block cache takes: `block_cache_max_block_bytes`, or
    /// when 0 a 64th of the cache (a single block then never evicts more than that).
    pub fn block_cache_max_block_bytes(&self) -> u64 {
        match self.block_cache_max_block_bytes {
            0 => (self.block_cache_size_bytes / 64).max(1),
            n => n,
        }
    }

    /// The node engine's options.
    pub fn node_engine_options(&self) -> Result<mosaic_lsm::EngineOptions> {
        let memtable_space_bytes = usize::try_from(self.memtable_space_bytes)
            .context("[storage] memtable_space_bytes does not fit this machine's address space")?;
        Ok(mosaic_lsm::EngineOptions {
            sync_mode: self.sync_mode(),
            memtable_space_bytes,
            memtable_cleanup_threshold: self.memtable_cleanup_threshold,
            block_cache_bytes: self.block_cache_size_bytes,
            cache_index_and_filter_blocks: self.cache_index_and_filter_blocks,
            block_cache_max_block_bytes: self.block_cache_max_block_bytes(),
            flush_threads: self.flush_threads,
            compaction_threads: self.compaction_threads,
            compaction_bytes_per_sec: self
                .compaction_throughput_mib_per_sec
                .saturating_mul(1 << 20),
            ignore_wal_corruption: self.wal_ignore_replay_errors,
            ..mosaic_lsm::EngineOptions::default()
        })
    }

    /// Options of one table's partitions (the coordinator adds the node engine and the
    /// merge operator).
    pub fn engine_options(&self) -> Result<Options> {
        let memtable_size_bytes = usize::try_from(self.memtable_size_bytes)
            .context("[storage] memtable_size_bytes does not fit this machine's address space")?;
        let index_partition_bytes = usize::try_from(self.index_partition_bytes)
            .context("[storage] index_partition_bytes does not fit this machine's address space")?;
        Ok(Options {
            table: mosaic_lsm::TableOptions {
                index_partition_bytes,
                ..mosaic_lsm::TableOptions::default()
            },
            sync_mode: self.sync_mode(),
            memtable_size_bytes,
            table_size_bytes: self.sstable_size_bytes,
            block_cache_bytes: self.block_cache_size_bytes,
            cache_index_and_filter_blocks: self.cache_index_and_filter_blocks,
            direct_io: self.direct_io,
            direct_io_for_flush_and_compaction: self.direct_io_for_flush_and_compaction,
            compaction_threads: self.compaction_threads,
            compaction_listener: Some(std::sync::Arc::new(crate::logging::EngineEvents)),
            ignore_wal_corruption: self.wal_ignore_replay_errors,
            ..Options::default()
        })
    }
}
