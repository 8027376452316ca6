//! Mosaic adapter.

use std::collections::{BTreeMap, HashMap};
use std::ops::Bound;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use anyhow::{Context, Result};
use mosaic_lsm::table::{Compression, TableOptions};
use mosaic_lsm::{CompactionEvent, CompactionListener, Db, Options, SyncMode};

use crate::engine::{Engine, EngineConfig, EngineCounters};

/// Mosaic's engine; every put gets the next timestamp of a counter, so the last write wins.
pub struct MosaicEngine {
    db: Arc<Db>,
    next_ts: AtomicU64,
    stats: Option<CompactionStats>,
}

/// Per-level compaction statistics: the listener sees table ids; a sampler thread polling
/// `Db::levels` learns their sizes (tables live far longer than the polling interval).
struct CompactionStats {
    log: Arc<CompactionLog>,
    stop: Arc<AtomicBool>,
    sampler: Option<JoinHandle<()>>,
}

#[derive(Default)]
struct CompactionLog {
    events: Mutex<Vec<CompactionEvent>>,
    /// Size and (last seen) level of every table id seen.
    seen: Mutex<HashMap<u64, (u64, usize)>>,
}

impl CompactionListener for CompactionLog {
    fn on_compaction(&self, event: &CompactionEvent) {
        if let Ok(mut events) = self.events.lock() {
            events.push(event.clone());
        }
    }
}

impl CompactionLog {
    fn learn_sizes(&self, db: &Db) {
        let levels = db.levels();
        if let Ok(mut seen) = self.seen.lock() {
            for level in levels {
                for t in level.tables {
                    seen.insert(t.id, (t.size_bytes, level.level));
                }
            }
        }
    }

    fn report(&self) -> String {
        #[derive(Default)]
        struct Agg {
            count: u64,
            moves: u64,
            upper_tables: u64,
            upper_bytes: u64,
            lower_tables: u64,
            lower_bytes: u64,
            out_bytes: u64,
            unknown: u64,
        }
        let (Ok(events), Ok(seen)) = (self.events.lock(), self.seen.lock()) else {
            return String::new();
        };
        let mut by_level: BTreeMap<(usize, usize), Agg> = BTreeMap::new();
        for e in events.iter() {
            let a = by_level.entry((e.level, e.output_level)).or_default();
            a.count += 1;
            if e.trivial_move {
                a.moves += 1;
                continue;
            }
            for id in &e.inputs {
                match seen.get(id) {
                    Some(&(bytes, level)) if level == e.level => {
                        a.upper_tables += 1;
                        a.upper_bytes += bytes;
                    }
                    Some(&(bytes, _)) => {
                        a.lower_tables += 1;
                        a.lower_bytes += bytes;
                    }
                    None => a.unknown += 1,
                }
            }
            for id in &e.outputs {
                a.out_bytes += seen.get(id).map_or(0, |s| s.0);
            }
        }
        let mib = |b: u64| b as f64 / (1u64 << 20) as f64;
        let mut out = String::from(
            "from→to  compactions  moves  upper tables/MiB  lower tables/MiB  output MiB  \
             (upper+lower)/upper\n",
        );
        for ((from, to), a) in &by_level {
            out.push_str(&format!(
                "L{from}→L{to}  {:>11}  {:>5}  {:>7} /{:>7.0}  {:>7} /{:>7.0}  {:>10.0}  {:>6.2}{}\n",
                a.count,
                a.moves,
                a.upper_tables,
                mib(a.upper_bytes),
                a.lower_tables,
                mib(a.lower_bytes),
                mib(a.out_bytes),
                (a.upper_bytes + a.lower_bytes) as f64 / a.upper_bytes.max(1) as f64,
                if a.unknown > 0 {
                    format!("  ({} inputs never seen by the sampler)", a.unknown)
                } else {
                    String::new()
                }
            ));
        }
        out
    }
}

impl MosaicEngine {
    /// The engine options the benchmark uses for `cfg`.
    pub fn options(cfg: &EngineConfig) -> Options {
        Options {
            sync_mode: SyncMode::Periodic {
                interval_ms: cfg.wal_sync_interval_ms,
            },
            memtable_size_bytes: cfg.memtable_bytes,
            immutable_memtables_max: cfg.immutable_memtables,
            table: TableOptions {
                block_size_bytes: cfg.block_bytes,
                bloom_bits_per_key: cfg.bloom_bits_per_key,
                compression: Compression::None,
                index_partition_bytes: cfg.index_partition_bytes,
                ..TableOptions::default()
            },
            block_cache_bytes: cfg.cache_bytes,
            cache_index_and_filter_blocks: cfg.cache_index_and_filter_blocks,
            direct_io: cfg.direct_io,
            direct_io_for_flush_and_compaction: cfg.direct_io_writes,
            level0_compaction_trigger: cfg.l0_compaction_trigger,
            level0_slowdown_tables: cfg.l0_slowdown,
            level0_stall_tables: cfg.l0_stop,
            level_size_ratio: cfg.level_ratio,
            level1_size_bytes: cfg.level1_bytes,
            table_size_bytes: cfg.table_bytes,
            levels_max: cfg.levels,
            compaction_threads: cfg.compaction_threads,
            ..Options::default()
        }
    }

    /// Opens a fresh database in `dir`.
    pub fn open(dir: &Path, cfg: &EngineConfig) -> Result<Self> {
        let mut opts = Self::options(cfg);
        let log = Arc::new(CompactionLog::default());
        if cfg.compaction_stats {
            opts.compaction_listener = Some(Arc::clone(&log) as Arc<dyn CompactionListener>);
        }
        let db =
            Arc::new(Db::open(dir, opts).with_context(|| format!("opening Mosaic in {dir:?}"))?);
        let stats = cfg.compaction_stats.then(|| {
            let stop = Arc::new(AtomicBool::new(false));
            let sampler = {
                let (db, log, stop) = (Arc::clone(&db), Arc::clone(&log), Arc::clone(&stop));
                std::thread::spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        log.learn_sizes(&db);
                        std::thread::sleep(Duration::from_millis(20));
                    }
                })
            };
            CompactionStats {
                log,
                stop,
                sampler: Some(sampler),
            }
        });
        Ok(Self {
            db,
            next_ts: AtomicU64::new(1),
            stats,
        })
    }
}

impl Engine for MosaicEngine {
    fn name(&self) -> &'static str {
        "mosaic"
    }

    fn put(&self, key: &[u8], value: &[u8]) -> Result<()> {
        let ts = self.next_ts.fetch_add(1, Ordering::Relaxed);
        Ok(self.db.put(key, ts, value)?)
    }

    fn get(&self, key: &[u8], out: &mut Vec<u8>) -> Result<bool> {
        match self.db.get(key)? {
            Some(entry) => {
                *out = entry.value;
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
        let mut n = 0;
        if limit == 0 {
            return Ok(0);
        }
        for item in self.db.scan(Bound::Included(start), Bound::Unbounded)? {
            let (key, entry) = item?;
            n += 1;
            if !visit(&key, &entry.value) || n >= limit {
                break;
            }
        }
        Ok(n)
    }

    fn flush_and_wait(&self) -> Result<()> {
        self.db.flush()?;
        self.db.wait_for_compactions()?;
        Ok(())
    }

    fn counters(&self) -> EngineCounters {
        let c = self.db.counters();
        EngineCounters {
            user_bytes_written: c.user_bytes_written,
            wal_bytes: c.wal_bytes_written,
            flush_bytes: c.flush_bytes_written,
            compaction_write_bytes: c.compaction_bytes_written,
            compaction_read_bytes: c.compaction_bytes_read,
            user_read_file_bytes: c.get_bytes_read + c.scan_bytes_read,
            block_cache_hits: c.block_cache_hits,
            block_cache_misses: c.block_cache_misses,
            get_block_reads: c.get_block_reads(),
            stall_micros: c.write_stall_micros,
        }
    }

    fn shape(&self) -> String {
        let mut s = String::new();
        let mut total = 0;
        for level in self.db.levels() {
            let bytes: u64 = level.tables.iter().map(|t| t.size_bytes).sum();
            total += bytes;
            if !level.tables.is_empty() {
                s.push_str(&format!(
                    "L{}: {} files ({:.0} MiB)  ",
                    level.level,
                    level.tables.len(),
                    bytes as f64 / (1u64 << 20) as f64
                ));
            }
        }
        s.push_str(&format!(
            "({:.0} MiB of tables)",
            total as f64 / (1u64 << 20) as f64
        ));
        s
    }

    fn compaction_report(&self) -> String {
        match &self.stats {
            Some(stats) => {
                stats.log.learn_sizes(&self.db);
                stats.log.report()
            }
            None => String::new(),
        }
    }

    fn close(mut self: Box<Self>) -> Result<()> {
        self.db.wait_for_compactions()?;
        if let Some(mut stats) = self.stats.take() {
            stats.stop.store(true, Ordering::Relaxed);
            if let Some(h) = stats.sampler.take() {
                let _ = h.join();
            }
        }
        match Arc::try_unwrap(self.db) {
            Ok(db) => Ok(db.close()?),
            Err(_) => anyhow::bail!("Mosaic database still shared at close"),
        }
    }
}
