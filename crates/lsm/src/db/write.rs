//! A partition's write path: admission (the write stall, the level-0 slowdown, the node's
//! memtable budget), then the engine's group commit (`crate::engine`), and memtable
//! switching.
//!
//! Writers block here, and only here: in the stall, while frozen memtables or level-0
//! tables pile up faster than the workers drain them; in the slowdown before it, delayed a
//! little more for each level-0 table past `level0_slowdown_tables`, so latency rises
//! gradually instead of jumping when compaction falls behind; and when the node as a whole
//! is out of memtable space. A memtable is switched only under the engine's write
//! leadership, so no write lands in a memtable being flushed.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use crate::engine::batch_charge;
use crate::error::{Error, Result};
use crate::key::Seqno;
use crate::memtable::Memtable;
use crate::stats::Counters;
use crate::wal::WriteBatch;

use super::{Inner, State, STALL_WAIT};

/// The write rate at the first level-0 table past the slowdown trigger; it halves with
/// each further table.
const SLOWDOWN_BYTES_PER_SEC: u64 = 64 << 20;

impl Inner {
    /// Backs [`crate::Db::write`]: admits the batch, reserves its memtable memory and
    /// commits it through the engine.
    pub(super) fn commit(self: &Arc<Self>, batch: WriteBatch) -> Result<()> {
        if batch.is_empty() {
            return Ok(());
        }
        for op in batch.ops() {
            if op.key.len() > u32::MAX as usize / 2 || op.value.len() > u32::MAX as usize / 2 {
                return Err(Error::InvalidArgument(
                    "key or value larger than 2 GiB".into(),
                ));
            }
        }
        let charge = batch_charge(&batch);
        self.admit(charge)?;
        self.engine.reserve(charge, &self.counters)?;
        self.engine.commit(self, batch, charge)
    }

    /// Waits out the write stall and the level-0 slowdown of this partition.
    fn admit(&self, charge: usize) -> Result<()> {
        let mut st = self.state.lock();
        let mut stall_start = None;
        let mut slowed = false;
        loop {
            self.check_writable(&st)?;
            let l0 = st.version.levels.first().map_or(0, Vec::len);
            let full = st.mem.size_bytes() >= self.opts.memtable_size_bytes;
            let stop = (full && st.imm.len() >= self.opts.immutable_memtables_max)
                || l0 >= self.opts.level0_stall_tables;
            if stop && self.engine.is_manual() {
                // No worker will drain what stops this write: do it here.
                drop(st);
                let ran = self.engine.run_due_jobs(crate::engine::MANUAL_JOBS_MAX);
                st = self.state.lock();
                if ran == 0 {
                    return Err(Error::WriteStalled {
                        waited: Duration::ZERO,
                        reason: "manual mode: the work a stalled write waits for cannot run",
                    });
                }
                continue;
            }
            if stop {
                let (started, _) =
                    stall_start.get_or_insert_with(|| self.engine.stall_begins(&self.counters));
                let started = *started;
                let reason = if l0 >= self.opts.level0_stall_tables {
                    "level 0 is full: compaction is behind"
                } else {
                    "memtables are waiting to be flushed"
                };
                let step = self.engine.stall_step(started, &self.counters, reason)?;
                self.state_cv.wait_for(&mut st, step.min(STALL_WAIT));
                continue;
            }
            if let Some((t, _)) = stall_start.take() {
                Counters::add(
                    &self.counters.write_stall_micros,
                    mosaic_env::monotonic_micros().saturating_sub(t),
                );
            }
            let slowdown = self.slowdown_trigger();
            // Manual mode has no workers to catch up during a delay: no slowdown.
            if !slowed && l0 >= slowdown && !self.engine.is_manual() {
                slowed = true;
                let halvings = (l0 - slowdown).min(16) as u32;
                let rate = (SLOWDOWN_BYTES_PER_SEC >> halvings).max(1);
                let delay = (charge as u64).saturating_mul(1_000_000) / rate;
                let delay = delay.clamp(10, STALL_WAIT.as_micros() as u64);
                Counters::inc(&self.counters.write_slowdowns);
                Counters::add(&self.counters.write_slowdown_micros, delay);
                let deadline = mosaic_env::monotonic_micros() + delay;
                loop {
                    let now = mosaic_env::monotonic_micros();
                    if now >= deadline {
                        break;
                    }
                    self.state_cv
                        .wait_for(&mut st, Duration::from_micros(deadline - now));
                }
                continue;
            }
            return Ok(());
        }
    }

    /// The level-0 table count from which writers are slowed: the configured one, but
    /// never at or below where compaction (or a log's split) starts.
    fn slowdown_trigger(&self) -> usize {
        let floor = match &self.opts.log {
            Some(log) => log.split_segments,
            None => self.opts.level0_compaction_trigger,
        };
        self.opts.level0_slowdown_tables.max(floor + 1)
    }

    /// Why writes are refused, if they are.
    pub(super) fn check_writable(&self, st: &State) -> Result<()> {
        if let Some(p) = &st.poisoned {
            return Err(Error::Poisoned { cause: p.clone() });
        }
        if st.closing || self.engine.is_closing() {
            return Err(Error::Closed);
        }
        if let Some(e) = &st.no_space {
            return Err(e.duplicate());
        }
        if let Some(e) = self.engine.poisoned() {
            return Err(e);
        }
        Ok(())
    }

    /// The memtable the engine's leader writes this partition's next batch into,
    /// switching to a new one when it is full. Called only by the leader.
    pub(crate) fn memtable_for_write(&self) -> Result<Arc<Memtable>> {
        let mut st = self.state.lock();
        self.check_writable(&st)?;
        if st.mem.size_bytes() >= self.opts.memtable_size_bytes {
            self.switch_memtable(&mut st);
        }
        Ok(st.mem.clone())
    }

    /// Makes the leader's writes up to `seqno` visible to readers.
    pub(crate) fn publish(&self, seqno: Seqno) {
        self.visible_seqno.store(seqno.0, Ordering::SeqCst);
    }

    /// Freezes the memtable through the write path, as the engine's leader, so the freeze
    /// is ordered with writers.
    pub(super) fn freeze_as_leader(&self) -> Result<()> {
        self.engine.with_leadership(|| {
            let mut st = self.state.lock();
            if let Some(p) = &st.poisoned {
                return Err(Error::Poisoned { cause: p.clone() });
            }
            self.switch_memtable(&mut st);
            Ok(())
        })
    }

    /// Freezes the active memtable for the engine (to free memory, or a WAL file); the
    /// caller holds the leadership.
    pub(crate) fn freeze_for_engine(&self) {
        let mut st = self.state.lock();
        if !st.closing {
            self.switch_memtable(&mut st);
        }
    }

    /// Freezes the memtable (if not empty) for the flush workers.
    fn switch_memtable(&self, st: &mut State) {
        if st.mem.is_empty() {
            return;
        }
        let old = std::mem::replace(&mut st.mem, self.new_memtable());
        self.engine.froze(old.size_bytes());
        st.imm.push(old);
        st.sv = None;
        self.state_cv.notify_all();
        self.engine.signal_work();
    }

    /// Bytes in the active memtable.
    pub(crate) fn active_memtable_bytes(&self) -> usize {
        self.state.lock().mem.size_bytes()
    }

    /// Whether the active memtable holds a write logged in WAL file `id` or older.
    pub(crate) fn active_memtable_pins(&self, id: u64) -> bool {
        self.state.lock().mem.oldest_wal().is_some_and(|w| w <= id)
    }

    /// The oldest WAL file holding a write of one of this partition's memtables.
    pub(crate) fn oldest_wal(&self) -> Option<u64> {
        let st = self.state.lock();
        std::iter::once(&st.mem)
            .chain(st.imm.iter())
            .filter_map(|m| m.oldest_wal())
            .min()
    }
}
