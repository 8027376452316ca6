//! RocksDB adapter (feature `rocksdb`).

use std::path::Path;

use anyhow::{Context, Result};
use rocksdb::statistics::{StatsLevel, Ticker};
use rocksdb::{
    BlockBasedIndexType, BlockBasedOptions, Cache, DBCompressionType, Options,
    WaitForCompactOptions, WriteOptions, DB,
};

use crate::engine::{Engine, EngineConfig, EngineCounters};

/// RocksDB configured like Mosaic (see `BENCHMARKS.md`).
pub struct RocksEngine {
    db: DB,
    /// The options the database was opened with; they own the statistics object.
    opts: Options,
    write_opts: WriteOptions,
}

impl RocksEngine {
    /// Opens a fresh database in `dir`.
    pub fn open(dir: &Path, cfg: &EngineConfig) -> Result<Self> {
        let mut opts = Options::default();
        opts.create_if_missing(true);
        // Memtables: same size, same number allowed to wait for flush.
        opts.set_write_buffer_size(cfg.memtable_bytes);
        opts.set_max_write_buffer_number(i32::try_from(cfg.immutable_memtables + 1)?);
        // Leveled compaction with RocksDB's default (dynamic) level sizing.
        opts.set_num_levels(i32::try_from(cfg.levels)?);
        opts.set_level_compaction_dynamic_level_bytes(true);
        opts.set_max_bytes_for_level_base(cfg.level1_bytes);
        opts.set_max_bytes_for_level_multiplier(cfg.level_ratio as f64);
        opts.set_target_file_size_base(cfg.table_bytes);
        opts.set_level_zero_file_num_compaction_trigger(i32::try_from(cfg.l0_compaction_trigger)?);
        // The same slowdown and stop triggers as Mosaic's, so neither engine throttles
        // writers before the other.
        opts.set_level_zero_slowdown_writes_trigger(i32::try_from(cfg.l0_slowdown)?);
        opts.set_level_zero_stop_writes_trigger(i32::try_from(cfg.l0_stop)?);
        // One flush thread + `compaction_threads` compaction threads, no subcompactions.
        opts.set_max_background_jobs(i32::try_from(cfg.compaction_threads + 1)?);
        opts.set_max_subcompactions(1);
        opts.set_compression_type(DBCompressionType::None);
        opts.set_bottommost_compression_type(DBCompressionType::None);
        opts.set_use_direct_reads(cfg.direct_io);
        opts.set_use_direct_io_for_flush_and_compaction(cfg.direct_io_writes);
        // Tickers only: no timers or histograms (Mosaic's counters are plain atomics too).
        opts.enable_statistics();
        opts.set_statistics_level(StatsLevel::ExceptHistogramOrTimers);

        let mut table = BlockBasedOptions::default();
        table.set_block_size(cfg.block_bytes);
        table.set_bloom_filter(f64::from(cfg.bloom_bits_per_key), false);
        let cache = Cache::new_lru_cache(usize::try_from(cfg.cache_bytes)?);
        table.set_block_cache(&cache);
        table.set_cache_index_and_filter_blocks(cfg.cache_index_and_filter_blocks);
        if cfg.index_partition_bytes > 0 {
            // Two-level index and partitioned filters, the top-levels pinned (as Mosaic's).
            table.set_index_type(BlockBasedIndexType::TwoLevelIndexSearch);
            table.set_partition_filters(true);
            table.set_metadata_block_size(cfg.index_partition_bytes);
            table.set_pin_top_level_index_and_filter(true);
        }
        opts.set_block_based_table_factory(&table);

        let db = DB::open(&opts, dir).with_context(|| format!("opening RocksDB in {dir:?}"))?;
        let mut write_opts = WriteOptions::default();
        write_opts.set_sync(false);
        write_opts.disable_wal(false);
        Ok(Self {
            db,
            opts,
            write_opts,
        })
    }

    fn ticker(&self, t: Ticker) -> u64 {
        self.opts.get_ticker_count(t)
    }
}

impl Engine for RocksEngine {
    fn name(&self) -> &'static str {
        "rocksdb"
    }

    fn put(&self, key: &[u8], value: &[u8]) -> Result<()> {
        Ok(self.db.put_opt(key, value, &self.write_opts)?)
    }

    fn get(&self, key: &[u8], out: &mut Vec<u8>) -> Result<bool> {
        match self.db.get_pinned(key)? {
            Some(v) => {
                out.clear();
                out.extend_from_slice(&v);
                Ok(true)
            }
            None => Ok(false),
        }
    }

    fn scan(
        &self,
        start: &[u8],
        limit: usize,
        visit: &mut dyn FnMut(&[u8], &[u8]) -> bool,
    ) -> Result<usize> {
        let mut it = self.db.raw_iterator();
        it.seek(start);
        let mut n = 0;
        while n < limit && it.valid() {
            let (Some(k), Some(v)) = (it.key(), it.value()) else {
                break;
            };
            n += 1;
            if !visit(k, v) {
                break;
            }
            it.next();
        }
        it.status()?;
        Ok(n)
    }

    fn flush_and_wait(&self) -> Result<()> {
        self.db.flush()?;
        let mut w = WaitForCompactOptions::default();
        w.set_flush(true);
        self.db.wait_for_compact(&w)?;
        Ok(())
    }

    fn counters(&self) -> EngineCounters {
        EngineCounters {
            user_bytes_written: self.ticker(Ticker::BytesWritten),
            wal_bytes: self.ticker(Ticker::WalFileBytes),
            flush_bytes: self.ticker(Ticker::FlushWriteBytes),
            compaction_write_bytes: self.ticker(Ticker::CompactWriteBytes),
            compaction_read_bytes: self.ticker(Ticker::CompactReadBytes),
            // Bytes of blocks read from files into the cache on misses (data + index +
            // filter); RocksDB has no per-purpose file-read counter without PerfContext.
            user_read_file_bytes: self.ticker(Ticker::BlockCacheDataBytesInsert)
                + self.ticker(Ticker::BlockCacheIndexBytesInsert)
                + self.ticker(Ticker::BlockCacheFilterBytesInsert),
            block_cache_hits: self.ticker(Ticker::BlockCacheHit),
            block_cache_misses: self.ticker(Ticker::BlockCacheMiss),
            // Every miss reads one block from its file; read phases run no compaction, so
            // there the misses are the lookups' I/Os.
            get_block_reads: self.ticker(Ticker::BlockCacheMiss),
            stall_micros: self.ticker(Ticker::StallMicros),
        }
    }

    fn shape(&self) -> String {
        let mut s = String::new();
        for level in 0..7 {
            let files = self
                .db
                .property_int_value(&format!("rocksdb.num-files-at-level{level}"))
                .ok()
                .flatten()
                .unwrap_or(0);
            if files > 0 {
                s.push_str(&format!("L{level}: {files} files  "));
            }
        }
        if let Ok(Some(bytes)) = self.db.property_int_value("rocksdb.total-sst-files-size") {
            s.push_str(&format!(
                "({:.0} MiB of tables)",
                bytes as f64 / (1u64 << 20) as f64
            ));
        }
        s
    }

    fn compaction_report(&self) -> String {
        // RocksDB's own per-level table ("Level Files Size Score Read(GB) Rn(GB) Rnp1(GB)
        // Write(GB) ... W-Amp ..."), up to the first blank line after it.
        let Ok(Some(stats)) = self.db.property_value("rocksdb.stats") else {
            return String::new();
        };
        let mut out = String::new();
        let mut on = false;
        for line in stats.lines() {
            if line.trim_start().starts_with("Level") {
                on = true;
            }
            if on {
                if line.trim().is_empty() {
                    break;
                }
                out.push_str(line);
                out.push('\n');
            }
        }
        out
    }

    fn close(self: Box<Self>) -> Result<()> {
        let mut w = WaitForCompactOptions::default();
        w.set_flush(true);
        self.db.wait_for_compact(&w)?;
        drop(self);
        Ok(())
    }
}
