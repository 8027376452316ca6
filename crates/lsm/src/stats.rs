//! Counters for every byte the engine writes and reads, from which write and read
//! amplification are computed rather than guessed.

use std::sync::atomic::{AtomicU64, Ordering};

/// Why a table block is read; disk bytes are counted per purpose.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReadPurpose {
    /// A point lookup.
    Get,
    /// A range scan or iterator.
    Scan,
    /// A compaction reading its inputs.
    Compaction,
    /// Opening a table (footer, index, filter).
    Open,
}

/// Which block of a table a disk read fetched.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BlockKind {
    /// A data block.
    Data,
    /// The table's index block.
    Index,
    /// The table's Bloom filter block.
    Filter,
}

/// Live counters, updated with relaxed atomics on the hot paths.
#[derive(Debug, Default)]
pub struct Counters {
    /// Bytes of keys and values the caller asked to write.
    pub user_bytes_written: AtomicU64,
    /// Bytes appended to write-ahead logs.
    pub wal_bytes_written: AtomicU64,
    /// WAL syncs (fdatasync calls).
    pub wal_syncs: AtomicU64,
    /// Bytes written by memtable flushes.
    pub flush_bytes_written: AtomicU64,
    /// Bytes of tables written by ingests (a joining node's streamed ranges).
    pub ingest_bytes_written: AtomicU64,
    /// Tables written by ingests.
    pub ingested_tables: AtomicU64,
    /// Bytes written by compactions.
    pub compaction_bytes_written: AtomicU64,
    /// Bytes read from disk by compactions.
    pub compaction_bytes_read: AtomicU64,
    /// Bytes read from disk by point lookups (cache misses only): data blocks, and index
    /// and filter blocks when they live in the block cache.
    pub get_bytes_read: AtomicU64,
    /// Data blocks point lookups read from disk (each a block cache miss, one I/O).
    pub get_data_block_reads: AtomicU64,
    /// Index blocks point lookups read from disk (only when index blocks live in the
    /// block cache; pinned ones are read once, at open).
    pub get_index_block_reads: AtomicU64,
    /// Of `get_bytes_read`, the bytes of those index blocks.
    pub get_index_bytes_read: AtomicU64,
    /// Filter blocks point lookups read from disk (as for index blocks).
    pub get_filter_block_reads: AtomicU64,
    /// Of `get_bytes_read`, the bytes of those filter blocks.
    pub get_filter_bytes_read: AtomicU64,
    /// Bytes read from disk by scans (cache misses only).
    pub scan_bytes_read: AtomicU64,
    /// Bytes read from disk when opening tables.
    pub open_bytes_read: AtomicU64,
    /// Point lookups served.
    pub gets: AtomicU64,
    /// Tables whose index was searched by point lookups (after the Bloom filter).
    pub get_tables_probed: AtomicU64,
    /// Bloom filter said "absent" (a table skipped).
    pub bloom_negatives: AtomicU64,
    /// Bloom filter said "maybe" and the key was there.
    pub bloom_true_positives: AtomicU64,
    /// Bloom filter said "maybe" and the key was not there.
    pub bloom_false_positives: AtomicU64,
    /// Block cache hits (data blocks, and index and filter blocks when the cache holds
    /// them).
    pub block_cache_hits: AtomicU64,
    /// Block cache misses (each is a disk read, or a wait for another reader's).
    pub block_cache_misses: AtomicU64,
    /// Memtable flushes completed.
    pub flushes: AtomicU64,
    /// Compactions completed.
    pub compactions: AtomicU64,
    /// Bytes a two-layer log's splits wrote as new runs (no group merge-sorted).
    pub split_bytes_written: AtomicU64,
    /// Bytes a two-layer log wrote as runs of merge-sorted groups.
    pub merge_sort_bytes_written: AtomicU64,
    /// Splits of a two-layer log completed.
    pub splits: AtomicU64,
    /// Range groups merge-sorted into one run.
    pub merge_sorts: AtomicU64,
    /// Times a writer waited because flushes or L0 compaction fell behind.
    pub write_stalls: AtomicU64,
    /// Microseconds writers spent stalled.
    pub write_stall_micros: AtomicU64,
    /// Writes refused because they stalled past the engine's `write_stall_timeout`.
    pub write_stall_timeouts: AtomicU64,
    /// Writes delayed because level 0 passed the slowdown trigger.
    pub write_slowdowns: AtomicU64,
    /// Microseconds of those delays.
    pub write_slowdown_micros: AtomicU64,
}

impl Counters {
    /// Adds `bytes` read from disk for `purpose`.
    pub fn add_read(&self, purpose: ReadPurpose, bytes: u64) {
        let c = match purpose {
            ReadPurpose::Get => &self.get_bytes_read,
            ReadPurpose::Scan => &self.scan_bytes_read,
            ReadPurpose::Compaction => &self.compaction_bytes_read,
            ReadPurpose::Open => &self.open_bytes_read,
        };
        c.fetch_add(bytes, Ordering::Relaxed);
    }

    /// Counts one block of `kind` and `bytes` read from disk for `purpose`: the bytes per
    /// purpose, and for a point lookup the read and its bytes per kind of block.
    pub fn add_block_read(&self, purpose: ReadPurpose, kind: BlockKind, bytes: u64) {
        self.add_read(purpose, bytes);
        if purpose != ReadPurpose::Get {
            return;
        }
        let (reads, kind_bytes) = match kind {
            BlockKind::Data => (&self.get_data_block_reads, None),
            BlockKind::Index => (
                &self.get_index_block_reads,
                Some(&self.get_index_bytes_read),
            ),
            BlockKind::Filter => (
                &self.get_filter_block_reads,
                Some(&self.get_filter_bytes_read),
            ),
        };
        reads.fetch_add(1, Ordering::Relaxed);
        if let Some(c) = kind_bytes {
            c.fetch_add(bytes, Ordering::Relaxed);
        }
    }

    /// Adds one to a counter.
    pub fn inc(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// Adds `n` to a counter.
    pub fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Ordering::Relaxed);
    }

    /// A consistent-enough copy of every counter.
    pub fn snapshot(&self) -> CounterSnapshot {
        let r = |c: &AtomicU64| c.load(Ordering::Relaxed);
        CounterSnapshot {
            user_bytes_written: r(&self.user_bytes_written),
            wal_bytes_written: r(&self.wal_bytes_written),
            wal_syncs: r(&self.wal_syncs),
            flush_bytes_written: r(&self.flush_bytes_written),
            ingest_bytes_written: r(&self.ingest_bytes_written),
            ingested_tables: r(&self.ingested_tables),
            compaction_bytes_written: r(&self.compaction_bytes_written),
            compaction_bytes_read: r(&self.compaction_bytes_read),
            get_bytes_read: r(&self.get_bytes_read),
            get_data_block_reads: r(&self.get_data_block_reads),
            get_index_block_reads: r(&self.get_index_block_reads),
            get_index_bytes_read: r(&self.get_index_bytes_read),
            get_filter_block_reads: r(&self.get_filter_block_reads),
            get_filter_bytes_read: r(&self.get_filter_bytes_read),
            scan_bytes_read: r(&self.scan_bytes_read),
            open_bytes_read: r(&self.open_bytes_read),
            gets: r(&self.gets),
            get_tables_probed: r(&self.get_tables_probed),
            bloom_negatives: r(&self.bloom_negatives),
            bloom_true_positives: r(&self.bloom_true_positives),
            bloom_false_positives: r(&self.bloom_false_positives),
            block_cache_hits: r(&self.block_cache_hits),
            block_cache_misses: r(&self.block_cache_misses),
            flushes: r(&self.flushes),
            compactions: r(&self.compactions),
            split_bytes_written: r(&self.split_bytes_written),
            merge_sort_bytes_written: r(&self.merge_sort_bytes_written),
            splits: r(&self.splits),
            merge_sorts: r(&self.merge_sorts),
            write_stalls: r(&self.write_stalls),
            write_stall_micros: r(&self.write_stall_micros),
            write_stall_timeouts: r(&self.write_stall_timeouts),
            write_slowdowns: r(&self.write_slowdowns),
            write_slowdown_micros: r(&self.write_slowdown_micros),
        }
    }
}

/// A copy of [`Counters`] at one moment.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CounterSnapshot {
    #[allow(missing_docs)]
    pub user_bytes_written: u64,
    #[allow(missing_docs)]
    pub wal_bytes_written: u64,
    #[allow(missing_docs)]
    pub wal_syncs: u64,
    #[allow(missing_docs)]
    pub flush_bytes_written: u64,
    #[allow(missing_docs)]
    pub ingest_bytes_written: u64,
    #[allow(missing_docs)]
    pub ingested_tables: u64,
    #[allow(missing_docs)]
    pub compaction_bytes_written: u64,
    #[allow(missing_docs)]
    pub compaction_bytes_read: u64,
    #[allow(missing_docs)]
    pub get_bytes_read: u64,
    #[allow(missing_docs)]
    pub get_data_block_reads: u64,
    #[allow(missing_docs)]
    pub get_index_block_reads: u64,
    #[allow(missing_docs)]
    pub get_index_bytes_read: u64,
    #[allow(missing_docs)]
    pub get_filter_block_reads: u64,
    #[allow(missing_docs)]
    pub get_filter_bytes_read: u64,
    #[allow(missing_docs)]
    pub scan_bytes_read: u64,
    #[allow(missing_docs)]
    pub open_bytes_read: u64,
    #[allow(missing_docs)]
    pub gets: u64,
    #[allow(missing_docs)]
    pub get_tables_probed: u64,
    #[allow(missing_docs)]
    pub bloom_negatives: u64,
    #[allow(missing_docs)]
    pub bloom_true_positives: u64,
    #[allow(missing_docs)]
    pub bloom_false_positives: u64,
    #[allow(missing_docs)]
    pub block_cache_hits: u64,
    #[allow(missing_docs)]
    pub block_cache_misses: u64,
    #[allow(missing_docs)]
    pub flushes: u64,
    #[allow(missing_docs)]
    pub compactions: u64,
    #[allow(missing_docs)]
    pub split_bytes_written: u64,
    #[allow(missing_docs)]
    pub merge_sort_bytes_written: u64,
    #[allow(missing_docs)]
    pub splits: u64,
    #[allow(missing_docs)]
    pub merge_sorts: u64,
    #[allow(missing_docs)]
    pub write_stalls: u64,
    #[allow(missing_docs)]
    pub write_stall_micros: u64,
    #[allow(missing_docs)]
    pub write_stall_timeouts: u64,
    #[allow(missing_docs)]
    pub write_slowdowns: u64,
    #[allow(missing_docs)]
    pub write_slowdown_micros: u64,
}

impl CounterSnapshot {
    /// Bytes written to tables after the flush: compaction, or a log's splits and
    /// merge-sorts.
    pub fn rewrite_bytes_written(&self) -> u64 {
        self.compaction_bytes_written + self.split_bytes_written + self.merge_sort_bytes_written
    }

    /// Bytes written to disk (WAL + flush + compaction, splits, merge-sorts) per user byte
    /// written.
    pub fn write_amplification(&self) -> f64 {
        let disk = self.wal_bytes_written + self.flush_bytes_written + self.rewrite_bytes_written();
        ratio(disk, self.user_bytes_written)
    }

    /// Bytes written to tables (flush + compaction, splits, merge-sorts) per byte flushed:
    /// the tree's (or log's) own amplification, leaving out the WAL.
    pub fn compaction_write_amplification(&self) -> f64 {
        ratio(
            self.flush_bytes_written + self.rewrite_bytes_written(),
            self.flush_bytes_written,
        )
    }

    /// Counter-by-counter sum, for a store made of several engines.
    pub fn plus(&self, other: &CounterSnapshot) -> CounterSnapshot {
        let mut sum = *self;
        sum.zip_with(other, u64::saturating_add);
        sum
    }

    fn zip_with(&mut self, o: &CounterSnapshot, f: impl Fn(u64, u64) -> u64) {
        let pairs: [(&mut u64, u64); 34] = [
            (&mut self.user_bytes_written, o.user_bytes_written),
            (&mut self.wal_bytes_written, o.wal_bytes_written),
            (&mut self.wal_syncs, o.wal_syncs),
            (&mut self.flush_bytes_written, o.flush_bytes_written),
            (&mut self.ingest_bytes_written, o.ingest_bytes_written),
            (&mut self.ingested_tables, o.ingested_tables),
            (
                &mut self.compaction_bytes_written,
                o.compaction_bytes_written,
            ),
            (&mut self.compaction_bytes_read, o.compaction_bytes_read),
            (&mut self.get_bytes_read, o.get_bytes_read),
            (&mut self.get_data_block_reads, o.get_data_block_reads),
            (&mut self.get_index_block_reads, o.get_index_block_reads),
            (&mut self.get_index_bytes_read, o.get_index_bytes_read),
            (&mut self.get_filter_block_reads, o.get_filter_block_reads),
            (&mut self.get_filter_bytes_read, o.get_filter_bytes_read),
            (&mut self.scan_bytes_read, o.scan_bytes_read),
            (&mut self.open_bytes_read, o.open_bytes_read),
            (&mut self.gets, o.gets),
            (&mut self.get_tables_probed, o.get_tables_probed),
            (&mut self.bloom_negatives, o.bloom_negatives),
            (&mut self.bloom_true_positives, o.bloom_true_positives),
            (&mut self.bloom_false_positives, o.bloom_false_positives),
            (&mut self.block_cache_hits, o.block_cache_hits),
            (&mut self.block_cache_misses, o.block_cache_misses),
            (&mut self.flushes, o.flushes),
            (&mut self.compactions, o.compactions),
            (&mut self.split_bytes_written, o.split_bytes_written),
            (
                &mut self.merge_sort_bytes_written,
                o.merge_sort_bytes_written,
            ),
            (&mut self.splits, o.splits),
            (&mut self.merge_sorts, o.merge_sorts),
            (&mut self.write_stalls, o.write_stalls),
            (&mut self.write_stall_micros, o.write_stall_micros),
            (&mut self.write_stall_timeouts, o.write_stall_timeouts),
            (&mut self.write_slowdowns, o.write_slowdowns),
            (&mut self.write_slowdown_micros, o.write_slowdown_micros),
        ];
        for (mine, theirs) in pairs {
            *mine = f(*mine, theirs);
        }
    }

    /// Tables probed per point lookup.
    pub fn tables_probed_per_get(&self) -> f64 {
        ratio(self.get_tables_probed, self.gets)
    }

    /// Disk bytes read per point lookup (read amplification in bytes, the DEPART paper's
    /// Fig. 11).
    pub fn bytes_read_per_get(&self) -> f64 {
        ratio(self.get_bytes_read, self.gets)
    }

    /// Blocks point lookups read from disk: data, index and filter.
    pub fn get_block_reads(&self) -> u64 {
        self.get_data_block_reads + self.get_index_block_reads + self.get_filter_block_reads
    }

    /// Of `get_bytes_read`, the bytes of data blocks.
    pub fn get_data_bytes_read(&self) -> u64 {
        self.get_bytes_read
            .saturating_sub(self.get_index_bytes_read + self.get_filter_bytes_read)
    }

    /// Disk reads (I/Os) per point lookup: data, index and filter blocks that missed the
    /// cache.
    pub fn block_reads_per_get(&self) -> f64 {
        ratio(self.get_block_reads(), self.gets)
    }

    /// Fraction of Bloom "maybe" answers that were wrong.
    pub fn bloom_false_positive_rate(&self) -> f64 {
        ratio(
            self.bloom_false_positives,
            self.bloom_false_positives + self.bloom_negatives,
        )
    }

    /// Counter-by-counter difference `self - earlier`, for measuring one phase.
    pub fn since(&self, earlier: &CounterSnapshot) -> CounterSnapshot {
        let mut diff = *self;
        diff.zip_with(earlier, u64::saturating_sub);
        diff
    }
}

fn ratio(num: u64, den: u64) -> f64 {
    if den == 0 {
        0.0
    } else {
        num as f64 / den as f64
    }
}
