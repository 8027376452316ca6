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
    /// Bytes written by compactions.
    pub compaction_bytes_written: AtomicU64,
    /// Bytes read from disk by compactions.
    pub compaction_bytes_read: AtomicU64,
    /// Bytes read from disk by point lookups (cache misses only).
    pub get_bytes_read: AtomicU64,
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
    /// Block cache hits.
    pub block_cache_hits: AtomicU64,
    /// Block cache misses (each is a disk read).
    pub block_cache_misses: AtomicU64,
    /// Memtable flushes completed.
    pub flushes: AtomicU64,
    /// Compactions completed.
    pub compactions: AtomicU64,
    /// Times a writer waited because flushes or L0 compaction fell behind.
    pub write_stalls: AtomicU64,
    /// Microseconds writers spent stalled.
    pub write_stall_micros: AtomicU64,
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
            compaction_bytes_written: r(&self.compaction_bytes_written),
            compaction_bytes_read: r(&self.compaction_bytes_read),
            get_bytes_read: r(&self.get_bytes_read),
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
            write_stalls: r(&self.write_stalls),
            write_stall_micros: r(&self.write_stall_micros),
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
    pub compaction_bytes_written: u64,
    #[allow(missing_docs)]
    pub compaction_bytes_read: u64,
    #[allow(missing_docs)]
    pub get_bytes_read: u64,
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
    pub write_stalls: u64,
    #[allow(missing_docs)]
    pub write_stall_micros: u64,
}

impl CounterSnapshot {
    /// Bytes written to disk (WAL + flush + compaction) per user byte written.
    pub fn write_amplification(&self) -> f64 {
        let disk =
            self.wal_bytes_written + self.flush_bytes_written + self.compaction_bytes_written;
        ratio(disk, self.user_bytes_written)
    }

    /// Bytes written to tables (flush + compaction) per byte flushed: the LSM-tree's own
    /// amplification, leaving out the WAL.
    pub fn compaction_write_amplification(&self) -> f64 {
        ratio(
            self.flush_bytes_written + self.compaction_bytes_written,
            self.flush_bytes_written,
        )
    }

    /// Tables probed per point lookup.
    pub fn tables_probed_per_get(&self) -> f64 {
        ratio(self.get_tables_probed, self.gets)
    }

    /// Disk bytes read per point lookup.
    pub fn bytes_read_per_get(&self) -> f64 {
        ratio(self.get_bytes_read, self.gets)
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
        CounterSnapshot {
            user_bytes_written: self
                .user_bytes_written
                .saturating_sub(earlier.user_bytes_written),
            wal_bytes_written: self
                .wal_bytes_written
                .saturating_sub(earlier.wal_bytes_written),
            wal_syncs: self.wal_syncs.saturating_sub(earlier.wal_syncs),
            flush_bytes_written: self
                .flush_bytes_written
                .saturating_sub(earlier.flush_bytes_written),
            compaction_bytes_written: self
                .compaction_bytes_written
                .saturating_sub(earlier.compaction_bytes_written),
            compaction_bytes_read: self
                .compaction_bytes_read
                .saturating_sub(earlier.compaction_bytes_read),
            get_bytes_read: self.get_bytes_read.saturating_sub(earlier.get_bytes_read),
            scan_bytes_read: self.scan_bytes_read.saturating_sub(earlier.scan_bytes_read),
            open_bytes_read: self.open_bytes_read.saturating_sub(earlier.open_bytes_read),
            gets: self.gets.saturating_sub(earlier.gets),
            get_tables_probed: self
                .get_tables_probed
                .saturating_sub(earlier.get_tables_probed),
            bloom_negatives: self.bloom_negatives.saturating_sub(earlier.bloom_negatives),
            bloom_true_positives: self
                .bloom_true_positives
                .saturating_sub(earlier.bloom_true_positives),
            bloom_false_positives: self
                .bloom_false_positives
                .saturating_sub(earlier.bloom_false_positives),
            block_cache_hits: self
                .block_cache_hits
                .saturating_sub(earlier.block_cache_hits),
            block_cache_misses: self
                .block_cache_misses
                .saturating_sub(earlier.block_cache_misses),
            flushes: self.flushes.saturating_sub(earlier.flushes),
            compactions: self.compactions.saturating_sub(earlier.compactions),
            write_stalls: self.write_stalls.saturating_sub(earlier.write_stalls),
            write_stall_micros: self
                .write_stall_micros
                .saturating_sub(earlier.write_stall_micros),
        }
    }
}

fn ratio(num: u64, den: u64) -> f64 {
    if den == 0 {
        0.0
    } else {
        num as f64 / den as f64
    }
}
