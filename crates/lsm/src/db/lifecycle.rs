//! A partition's life in its engine: being attached (taking over the memtables its engine
//! kept for it), closed or dropped (giving them back, waiting for its running jobs).

use std::sync::atomic::Ordering;
use std::sync::Arc;

use crate::memtable::Memtable;
use crate::stats::Counters;

use super::{Inner, STALL_WAIT};

impl Inner {
    /// This partition's id in the engine's catalog.
    pub(crate) fn pid(&self) -> u32 {
        self.pid
    }

    /// The partition's counters.
    pub(crate) fn counters(&self) -> &Counters {
        &self.counters
    }

    /// The size at which a memtable is frozen.
    pub(crate) fn memtable_size_bytes(&self) -> usize {
        self.opts.memtable_size_bytes
    }

    /// A new, empty memtable for this partition: cumulative under its merge operator.
    pub(crate) fn new_memtable(&self) -> Arc<Memtable> {
        Arc::new(
            Memtable::with_merge(self.opts.merge_operator.clone())
                .with_prefix_filter(self.opts.table.filter_prefix_bytes),
        )
    }

    /// Takes `memtables` (writes the engine kept for this partition, oldest first) as
    /// frozen memtables to flush; returns the newest sequence number the partition holds.
    /// Called under the engine's leadership, before the partition takes writes.
    pub(crate) fn adopt_frozen(&self, memtables: Vec<Arc<Memtable>>) -> u64 {
        let mut st = self.state.lock();
        let newest = memtables.iter().map(|m| m.max_seqno()).max().unwrap_or(0);
        let seqno = self.visible_seqno.load(Ordering::SeqCst).max(newest);
        self.visible_seqno.store(seqno, Ordering::SeqCst);
        if !memtables.is_empty() {
            st.imm.extend(memtables);
            st.sv = None;
        }
        seqno
    }

    /// Takes every unflushed memtable out of the partition (active last), with the bytes of
    /// the active one. Called under the engine's leadership once the partition is closing.
    pub(crate) fn take_memtables(&self) -> (Vec<Arc<Memtable>>, usize) {
        let mut st = self.state.lock();
        let mut out: Vec<Arc<Memtable>> = std::mem::take(&mut st.imm);
        let active = std::mem::replace(&mut st.mem, self.new_memtable());
        let active_bytes = active.size_bytes();
        if !active.is_empty() {
            out.push(active);
        }
        st.sv = None;
        (out, active_bytes)
    }

    /// Refuses writes and new jobs from now on.
    pub(crate) fn mark_closing(&self) {
        self.state.lock().closing = true;
        self.state_cv.notify_all();
    }

    /// Waits until no flush or background compaction of this (closing) partition runs.
    pub(crate) fn wait_for_jobs(&self) {
        let mut st = self.state.lock();
        while st.flushing || (st.compactions_running > 0 && !st.manual_compaction) {
            self.state_cv.wait_for(&mut st, STALL_WAIT);
        }
    }

    /// Releases the directory lock, so the directory may be opened again.
    pub(crate) fn unlock(&self) {
        self.lock.lock().take();
    }
}
