//! The write path: group commit, the WAL append and its sync, memtable switching, write
//! stalls, and the periodic WAL sync.
//!
//! Writers queue their batches; whoever finds no leader becomes one, takes a group of
//! queued batches, appends them to the WAL as one record, syncs per the sync mode and only
//! then applies them to the memtable and publishes their sequence numbers, so a reader
//! never sees a write that a crash could take back (under `PerWrite` and `Batch`). Writers
//! block here, and only here: behind the leader, or — the write stall — while frozen
//! memtables or level-0 tables pile up faster than background work drains them.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use crate::error::{Error, Result};
use crate::key::Seqno;
use crate::memtable::Memtable;
use crate::stats::Counters;
use crate::version::wal_file_name;
use crate::wal::{encode_batches, frame_with, SyncMode, WalWriter, WriteBatch};

use super::{Inner, State, STALL_WAIT};

/// Bytes of batches one leader takes into a group commit.
const GROUP_BYTES_MAX: usize = 4 << 20;

impl Inner {
    /// Backs [`crate::Db::write`]: queues `batch` and waits until a leader (perhaps this
    /// caller) has committed it with its group.
    pub(super) fn commit(&self, batch: WriteBatch) -> Result<()> {
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
        let mut q = self.writers.lock();
        let ticket = q.next_ticket;
        q.next_ticket += 1;
        q.queue.push_back((ticket, batch));
        loop {
            if let Some(r) = q.results.remove(&ticket) {
                return r;
            }
            if q.leader {
                self.writers_cv.wait(&mut q);
                continue;
            }
            q.leader = true;
            let mut group = Vec::new();
            let mut bytes = 0;
            while let Some((t, b)) = q.queue.pop_front() {
                bytes += b.size_bytes();
                group.push((t, b));
                if self.opts.sync_mode == SyncMode::PerWrite || bytes >= GROUP_BYTES_MAX {
                    break;
                }
            }
            drop(q);
            let result = self.write_group(group.iter().map(|(_, b)| b));
            q = self.writers.lock();
            for (t, _) in &group {
                let r = match &result {
                    Ok(()) => Ok(()),
                    Err(e) => Err(e.duplicate()),
                };
                q.results.insert(*t, r);
            }
            q.leader = false;
            self.writers_cv.notify_all();
        }
    }

    /// Freezes the memtable through the write path, as the leader, so the freeze is ordered
    /// with writers.
    pub(super) fn freeze_as_leader(&self) -> Result<()> {
        let mut q = self.writers.lock();
        while q.leader {
            self.writers_cv.wait(&mut q);
        }
        q.leader = true;
        drop(q);
        let r = self.freeze_memtable();
        let mut q = self.writers.lock();
        q.leader = false;
        self.writers_cv.notify_all();
        drop(q);
        r
    }

    /// Appends one group of batches to the WAL as one record, syncs it per the sync mode,
    /// then applies it to the memtable and makes it visible. Called only by the leader.
    fn write_group<'a>(&self, batches: impl Iterator<Item = &'a WriteBatch> + Clone) -> Result<()> {
        let mem = self.make_room()?;
        let count: u64 = batches.clone().map(|b| b.len() as u64).sum();
        let first = Seqno(self.visible_seqno.load(Ordering::SeqCst) + 1);
        if first.0 + count > crate::key::SEQNO_MAX {
            return Err(Error::InvalidArgument("sequence numbers exhausted".into()));
        }
        let mut framed = std::mem::take(&mut *self.frame_scratch.lock());
        framed.clear();
        frame_with(&mut framed, |out| {
            encode_batches(out, first, batches.clone())
        });
        {
            let mut wal = self.wal.lock();
            let w = wal.as_mut().ok_or_else(|| Error::Poisoned {
                cause: "no WAL".into(),
            })?;
            if let Err(e) = w.append_framed(&framed) {
                drop(wal);
                // Never append after a failed write: the next write switches to a new WAL.
                self.state.lock().wal_broken = true;
                if !e.is_no_space() {
                    self.poison(&e);
                }
                return Err(e);
            }
            Counters::add(&self.counters.wal_bytes_written, framed.len() as u64);
            if !matches!(self.opts.sync_mode, SyncMode::Periodic { .. }) {
                if let Err(e) = w.sync() {
                    drop(wal);
                    self.poison(&e);
                    return Err(e);
                }
                Counters::inc(&self.counters.wal_syncs);
            }
        }
        // Keep the buffer for the next group, unless one huge batch made it large.
        if framed.capacity() <= 2 * GROUP_BYTES_MAX {
            *self.frame_scratch.lock() = framed;
        }
        let mut seqno = first.0;
        let mut user_bytes = 0u64;
        for op in batches.flat_map(|b| b.ops()) {
            mem.insert(&op.key, op.ts, Seqno(seqno), op.kind, &op.value);
            user_bytes += (op.key.len() + op.value.len()) as u64;
            seqno += 1;
        }
        Counters::add(&self.counters.user_bytes_written, user_bytes);
        self.visible_seqno.store(seqno - 1, Ordering::SeqCst);
        Ok(())
    }

    /// Returns the memtable to write into, switching memtables and stalling as needed.
    /// Called only by the leader writer.
    fn make_room(&self) -> Result<Arc<Memtable>> {
        let mut st = self.state.lock();
        // Real monotonic time: a stall is a real wait on a condvar, whatever the engine's clock.
        let mut stall_start: Option<u64> = None;
        loop {
            if let Some(p) = &st.poisoned {
                return Err(Error::Poisoned { cause: p.clone() });
            }
            if st.closing {
                return Err(Error::Closed);
            }
            if let Some(e) = &st.no_space {
                return Err(e.duplicate());
            }
            let l0 = st.version.levels.first().map_or(0, Vec::len);
            let full = st.mem.size_bytes() >= self.opts.memtable_size_bytes;
            let must_wait = (full && st.imm.len() >= self.opts.immutable_memtables_max)
                || l0 >= self.opts.level0_stall_tables;
            if must_wait && !st.wal_broken {
                if stall_start.is_none() {
                    stall_start = Some(mosaic_env::monotonic_micros());
                    Counters::inc(&self.counters.write_stalls);
                }
                self.state_cv.notify_all();
                self.state_cv.wait_for(&mut st, STALL_WAIT);
                continue;
            }
            if full || st.wal_broken {
                self.switch_memtable(&mut st)?;
                continue;
            }
            if let Some(t) = stall_start {
                Counters::add(
                    &self.counters.write_stall_micros,
                    mosaic_env::monotonic_micros().saturating_sub(t),
                );
            }
            return Ok(st.mem.clone());
        }
    }

    /// Freezes the memtable (if not empty) and starts a new WAL.
    fn switch_memtable(&self, st: &mut State) -> Result<()> {
        let id = st.next_file_id;
        let path = self.dir.join(wal_file_name(id));
        let file = match self.fs.create(&path) {
            Ok(f) => f,
            Err(e) => {
                let e = Error::io("creating", &path, e);
                if e.is_no_space() {
                    st.wal_broken = true;
                    return Err(e);
                }
                st.poisoned = Some(e.to_string());
                return Err(e);
            }
        };
        st.next_file_id += 1;
        let new_wal = WalWriter::new(file, path);
        let old_wal = self.wal.lock().replace(new_wal);
        if let Some(mut old) = old_wal {
            // Even after a failed append the acknowledged prefix must become durable (it may
            // be unsynced in periodic mode); the torn tail after it is dropped at recovery.
            if let Err(e) = old.sync() {
                st.poisoned = Some(e.to_string());
                return Err(e);
            }
        }
        let old = std::mem::replace(&mut st.mem, Arc::new(Memtable::new(id)));
        if old.is_empty() {
            // Nothing acknowledged lives in that WAL (at most a torn record).
            let _ = self.fs.remove(&self.dir.join(wal_file_name(old.wal_id())));
        } else {
            st.imm.push(old);
        }
        st.sv = None;
        st.wal_broken = false;
        self.state_cv.notify_all();
        Ok(())
    }

    /// Freezes the memtable unless it is empty (and the WAL whole).
    fn freeze_memtable(&self) -> Result<()> {
        let mut st = self.state.lock();
        if let Some(p) = &st.poisoned {
            return Err(Error::Poisoned { cause: p.clone() });
        }
        if st.mem.is_empty() && !st.wal_broken {
            return Ok(());
        }
        self.switch_memtable(&mut st)
    }

    /// The `mosaic-wal-sync` thread of [`SyncMode::Periodic`]: syncs the WAL every
    /// `interval` until the engine closes; a failed sync poisons the engine.
    pub(super) fn periodic_sync_loop(&self, interval: Duration) {
        loop {
            {
                // The condvar is shared with other events: wait out the whole interval (real
                // monotonic time, as the condvar waits in it).
                let deadline = mosaic_env::monotonic_micros() + interval.as_micros() as u64;
                let mut st = self.state.lock();
                loop {
                    if st.closing {
                        return;
                    }
                    let now = mosaic_env::monotonic_micros();
                    if now >= deadline {
                        break;
                    }
                    self.state_cv
                        .wait_for(&mut st, Duration::from_micros(deadline - now));
                }
            }
            let mut wal = self.wal.lock();
            if let Some(w) = wal.as_mut() {
                match w.sync() {
                    Ok(()) => Counters::inc(&self.counters.wal_syncs),
                    Err(e) => {
                        drop(wal);
                        self.poison(&e);
                    }
                }
            }
        }
    }
}
