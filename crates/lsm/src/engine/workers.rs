//! The node's background workers: a fixed pool of flush threads and of compaction threads
//! serving every partition, and the compaction rate limit.
//!
//! A worker picks by need: a flush worker takes the partition holding the most frozen
//! memtable memory (flushing it frees the most of the node's budget and unblocks its
//! writers); a compaction worker takes the partition with the most level-0 tables (the
//! closest to slowing or stopping its writers). *What* a partition compacts is its own
//! decision ([`crate::compaction::pick`], [`crate::split::pick`]); the pool only decides
//! *whose* turn it is. Only partitions that changed since they last had nothing to do are
//! asked, so an idle node with hundreds of tables costs the workers nothing.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use parking_lot::{Condvar, Mutex};

use crate::db::Inner;
use crate::error::{Error, Result};
use crate::wal::SyncMode;

use super::Shared;

/// How long an idle worker waits before looking again (a failed job's retry included).
const IDLE_WAIT: Duration = Duration::from_millis(200);

/// Jobs one call of [`Shared::run_due_jobs`] runs at most: a bound on a loop that ends
/// anyway once nothing is due (each job removes what made it due).
pub(crate) const MANUAL_JOBS_MAX: usize = 10_000;

/// Starts the flush workers, the compaction workers and (in periodic sync mode) the WAL
/// sync thread — none in manual mode ([`Shared::is_manual`]).
pub(super) fn start(shared: &Arc<Shared>) -> Result<Vec<JoinHandle<()>>> {
    let mut threads = Vec::new();
    if shared.is_manual() {
        return Ok(threads);
    }
    let spawn = |name: String, f: Box<dyn FnOnce() + Send>| {
        mosaic_env::thread::spawn_named(name, f)
            .map_err(|e| Error::io("spawning a thread for", shared.root(), e))
    };
    for n in 0..shared.opts.flush_threads {
        let s = shared.clone();
        threads.push(spawn(
            format!("mosaic-flush-{n}"),
            Box::new(move || s.worker_loop(Shared::pick_flush)),
        )?);
    }
    for n in 0..shared.opts.compaction_threads {
        let s = shared.clone();
        threads.push(spawn(
            format!("mosaic-compact-{n}"),
            Box::new(move || s.worker_loop(Shared::pick_compaction)),
        )?);
    }
    if let SyncMode::Periodic { interval_ms } = shared.opts.sync_mode {
        let s = shared.clone();
        threads.push(spawn(
            "mosaic-wal-sync".into(),
            Box::new(move || s.periodic_sync_loop(interval_ms)),
        )?);
    }
    Ok(threads)
}

/// A job a worker claimed: run it, outside every engine lock.
type Job = Box<dyn FnOnce() + Send>;

/// The background work an engine (or one partition of it) has at one moment: what
/// `nodetool compactionstats` shows of a Cassandra node, and what a benchmark waits on to
/// measure a write phase with its compaction debt paid.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BackgroundWork {
    /// Frozen memtables, waiting for a flush or being flushed.
    pub flushes_pending: usize,
    /// Flushes running.
    pub flushes_running: usize,
    /// Compactions (and log splits or merge-sorts) running, manual ones included.
    pub compactions_running: usize,
    /// Partitions with a compaction (or split) due that no worker has started yet.
    pub compactions_due: usize,
    /// Bytes of the tables those due compactions would read.
    pub compaction_due_bytes: u64,
    /// Level-0 tables (a two-layer log: global-log segments) over all partitions.
    pub level0_tables: usize,
}

impl BackgroundWork {
    /// No flush or compaction runs or is due: what was written is where it will stay
    /// until more is written.
    pub fn is_idle(&self) -> bool {
        self.flushes_pending == 0
            && self.flushes_running == 0
            && self.compactions_running == 0
            && self.compactions_due == 0
    }

    /// The two added up (a node's work from its partitions').
    pub fn plus(&self, other: &BackgroundWork) -> BackgroundWork {
        BackgroundWork {
            flushes_pending: self.flushes_pending + other.flushes_pending,
            flushes_running: self.flushes_running + other.flushes_running,
            compactions_running: self.compactions_running + other.compactions_running,
            compactions_due: self.compactions_due + other.compactions_due,
            compaction_due_bytes: self.compaction_due_bytes + other.compaction_due_bytes,
            level0_tables: self.level0_tables + other.level0_tables,
        }
    }
}

impl Shared {
    /// Manual mode: no worker threads (`flush_threads` and `compaction_threads` both 0).
    /// Flushes and compactions run only when the owner calls
    /// [`super::Engine::run_background_work`], or inline in a writer (or a `flush`) that
    /// would otherwise wait for them; the WAL is synced per write, or when the owner calls
    /// [`super::Engine::sync_wal`]. What a deterministic simulator needs: no thread and no
    /// clock decides when background work happens.
    pub(crate) fn is_manual(&self) -> bool {
        self.opts.flush_threads == 0 && self.opts.compaction_threads == 0
    }

    /// The background work of every open partition, summed.
    pub(crate) fn background_work(&self) -> BackgroundWork {
        let open: Vec<Arc<Inner>> = self.registry.lock().open.values().cloned().collect();
        open.iter().fold(BackgroundWork::default(), |sum, p| {
            sum.plus(&p.background_work())
        })
    }

    /// Runs due flushes (first) and compactions on this thread until none is due, at most
    /// `jobs_max`; returns how many ran.
    pub(crate) fn run_due_jobs(self: &Arc<Self>, jobs_max: usize) -> usize {
        let mut ran = 0;
        while ran < jobs_max {
            let Some(job) = Self::pick_flush(self).or_else(|| Self::pick_compaction(self)) else {
                break;
            };
            job();
            ran += 1;
        }
        ran
    }

    /// A worker: runs the jobs `pick` finds until the engine closes.
    fn worker_loop(self: &Arc<Self>, pick: fn(&Arc<Self>) -> Option<Job>) {
        loop {
            let generation = {
                let w = self.work.lock();
                if w.closing {
                    return;
                }
                w.generation
            };
            if let Some(job) = pick(self) {
                job();
                continue;
            }
            let mut w = self.work.lock();
            if w.closing {
                return;
            }
            if w.generation == generation {
                self.work_cv.wait_for(&mut w, IDLE_WAIT);
            }
        }
    }

    /// Claims a flush: the oldest frozen memtable of the partition holding the most frozen
    /// memory.
    fn pick_flush(self: &Arc<Self>) -> Option<Job> {
        let reg = self.registry.lock();
        let now = mosaic_env::monotonic_micros();
        let best = reg
            .open
            .values()
            .filter_map(|p| p.flush_need(now).map(|need| (need, p)))
            .max_by_key(|(need, _)| *need)
            .map(|(_, p)| p.clone())?;
        drop(reg);
        let mem = best.claim_flush()?;
        let shared = self.clone();
        Some(Box::new(move || {
            let bytes = mem.size_bytes();
            if best.run_flush(&mem) {
                shared.flushed(bytes);
            }
            shared.signal_work();
        }))
    }

    /// Claims a compaction (or log split) of the partition with the most level-0 tables
    /// among those that have one due.
    fn pick_compaction(self: &Arc<Self>) -> Option<Job> {
        let reg = self.registry.lock();
        let now = mosaic_env::monotonic_micros();
        let candidates: Vec<Arc<Inner>> = reg.open.values().cloned().collect();
        drop(reg);
        let best = candidates
            .iter()
            .filter_map(|p| p.compaction_need(now).map(|need| (need, p)))
            .max_by_key(|(need, _)| *need)
            .map(|(_, p)| p.clone())?;
        let task = best.claim_compaction()?;
        let shared = self.clone();
        Some(Box::new(move || {
            best.run_claimed_compaction(&task);
            shared.signal_work();
        }))
    }
}

/// A token bucket over bytes, shared by every compaction of the node.
pub(super) struct RateLimiter {
    bytes_per_sec: u64,
    /// Bytes that may be written now (negative: owed), and when it was last refilled.
    state: Mutex<(i64, u64)>,
    /// Waited on (with a timeout) as a sleep.
    wait: Condvar,
}

impl RateLimiter {
    pub(super) fn new(bytes_per_sec: u64) -> Self {
        Self {
            bytes_per_sec,
            state: Mutex::new((0, mosaic_env::monotonic_micros())),
            wait: Condvar::new(),
        }
    }

    /// Takes `bytes` from the bucket, waiting while it is in debt (not past `closing`).
    pub(super) fn request(&self, bytes: u64, closing: &AtomicBool) {
        // At most a tenth of a second's worth may be written in a burst.
        let burst = (self.bytes_per_sec / 10).max(64 << 10) as i64;
        let mut st = self.state.lock();
        loop {
            let now = mosaic_env::monotonic_micros();
            let elapsed = now.saturating_sub(st.1);
            let refill = (elapsed as u128 * self.bytes_per_sec as u128 / 1_000_000) as i64;
            if refill > 0 {
                st.0 = (st.0 + refill).min(burst);
                st.1 = now;
            }
            if st.0 >= 0 || closing.load(Ordering::SeqCst) {
                st.0 -= bytes as i64;
                return;
            }
            let owed = (-st.0) as u64;
            let wait_us = (owed.saturating_mul(1_000_000) / self.bytes_per_sec).clamp(100, 100_000);
            self.wait.wait_for(&mut st, Duration::from_micros(wait_us));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[allow(clippy::disallowed_methods)]
    fn the_rate_limiter_holds_writes_to_its_rate() {
        let l = RateLimiter::new(4 << 20);
        let closing = AtomicBool::new(false);
        let start = std::time::Instant::now();
        // 2 MiB at 4 MiB/s: about half a second beyond the initial burst.
        for _ in 0..32 {
            l.request(64 << 10, &closing);
        }
        let secs = start.elapsed().as_secs_f64();
        assert!(secs >= 0.35, "2 MiB at 4 MiB/s took only {secs:.3}s");
    }
}
