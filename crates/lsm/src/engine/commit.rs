//! The shared write path: admission against the node's memtable budget, one group commit
//! for every partition, the WAL's files (rotation, retirement, periodic sync) and their
//! replay at open.
//!
//! Writers queue `(partition, batch)` pairs; whoever finds no leader becomes one, takes a
//! group, asks each partition for the memtable to write into (a partition that is closed,
//! poisoned or out of space fails only its own batches), appends the rest to the WAL as one
//! record, syncs per the sync mode, and only then inserts them into the memtables and
//! publishes their sequence numbers. Every memtable switch happens under the leadership
//! too ([`Shared::with_leadership`]), so a write never lands in a memtable being flushed.

use std::collections::{BTreeMap, VecDeque};
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use mosaic_env::Fs;

use crate::db::{Inner, RecoveryReport};
use crate::error::{Error, Result};
use crate::key::Seqno;
use crate::memtable::charge_bytes;
use crate::stats::Counters;
use crate::wal::{
    decode_partitioned, encode_partitioned, frame_with, Records, SyncMode, WalWriter, WriteBatch,
    OP_HEADER_BYTES,
};

use super::catalog::Catalog;
use super::{Budget, OwnedOp, PendingWrites, Shared, WAIT_STEP};

/// Bytes of batches one leader takes into a group commit.
const GROUP_BYTES_MAX: usize = 4 << 20;

/// The memtable bytes a batch will be charged.
pub(crate) fn batch_charge(batch: &WriteBatch) -> usize {
    batch
        .ops()
        .iter()
        .map(|op| charge_bytes(op.key.len(), op.value.len()))
        .sum()
}

/// A batch waiting for the leader.
struct Queued {
    ticket: u64,
    part: Arc<Inner>,
    batch: WriteBatch,
    /// Memtable bytes reserved for it.
    charge: usize,
}

/// The group-commit queue.
#[derive(Default)]
pub(super) struct WriterQueue {
    queue: VecDeque<Queued>,
    /// Outcomes of committed batches, by ticket, until their writers collect them.
    results: std::collections::HashMap<u64, Result<()>>,
    next_ticket: u64,
    /// Some thread is leading: committing a group, or switching memtables.
    leader: bool,
}

/// The WAL's files.
pub(super) struct WalState {
    writer: Option<WalWriter>,
    /// The id of the file being appended to.
    id: u64,
    /// An append failed: never append to that file again; the next write starts another.
    broken: bool,
    /// Every WAL file not yet deleted: id → bytes.
    files: BTreeMap<u64, u64>,
    /// Files closed by a rotation under [`SyncMode::Periodic`] and not yet synced: the
    /// next periodic sync syncs them (outside the lock), so a rotation does not make the
    /// writer wait for an `fdatasync` of a whole file (RocksDB syncs closed WALs in its
    /// flush jobs, off the write path, likewise).
    closed: Vec<WalWriter>,
}

impl WalState {
    /// Starts a fresh WAL file `next_id` beside the replayed `files`.
    pub(super) fn start(
        fs: &Arc<dyn Fs>,
        wal_dir: &Path,
        mut files: BTreeMap<u64, u64>,
        next_id: u64,
    ) -> Result<WalState> {
        let path = wal_dir.join(wal_name(next_id));
        let file = fs
            .create(&path)
            .map_err(|e| Error::io("creating", &path, e))?;
        fs.sync_dir(wal_dir)
            .map_err(|e| Error::io("syncing directory", wal_dir, e))?;
        files.insert(next_id, 0);
        Ok(WalState {
            writer: Some(WalWriter::new(file, path)),
            id: next_id,
            broken: false,
            files,
            closed: Vec::new(),
        })
    }

    /// Bytes in every WAL file.
    pub(super) fn total_bytes(&self) -> u64 {
        self.files.values().sum()
    }
}

fn wal_name(id: u64) -> String {
    format!("{id:06}.wal")
}

/// What replaying the shared WAL found.
pub(super) struct Replayed {
    pub files: BTreeMap<u64, u64>,
    pub next_wal_id: u64,
    pub max_seqno: u64,
    pub pending: BTreeMap<u32, PendingWrites>,
    pub report: RecoveryReport,
    /// Files with damage the operator chose to skip: kept aside, never replayed again.
    pub damaged: Vec<u64>,
}

/// Replays every WAL file in `wal_dir`, in order, keeping the writes of partitions the
/// catalog lists until they are opened. Damage ends its file's replay and is reported; damage
/// that may hide acknowledged writes ([`crate::WalDrop::tolerable`]) fails the replay with an error
/// naming the file and offset, unless `ignore_corruption` (the operator's override): then
/// the file's id is listed in `damaged`, to be kept aside.
pub(super) fn replay(
    fs: &Arc<dyn Fs>,
    wal_dir: &Path,
    catalog: &Catalog,
    ignore_corruption: bool,
) -> Result<Replayed> {
    let mut ids: Vec<u64> = fs
        .list(wal_dir)
        .map_err(|e| Error::io("listing", wal_dir, e))?
        .iter()
        .filter_map(|n| n.strip_suffix(".wal")?.parse().ok())
        .collect();
    ids.sort_unstable();
    let mut out = Replayed {
        files: BTreeMap::new(),
        next_wal_id: ids.last().map_or(1, |id| id + 1),
        max_seqno: 0,
        pending: BTreeMap::new(),
        report: RecoveryReport::default(),
        damaged: Vec::new(),
    };
    let newest = ids.last().copied();
    for id in ids {
        let path = wal_dir.join(wal_name(id));
        let data = fs
            .read_all(&path)
            .map_err(|e| Error::io("reading", &path, e))?;
        out.files.insert(id, data.len() as u64);
        out.report.wal_files_replayed += 1;
        let mut records = Records::new(&data, &path);
        while let Some((offset, payload)) = records.next() {
            let Some(ops) = decode_partitioned(payload) else {
                records.stop_at(
                    offset,
                    "malformed batch in a record with a valid checksum".into(),
                );
                break;
            };
            out.report.records_replayed += 1;
            for (pid, op) in ops {
                out.max_seqno = out.max_seqno.max(op.seqno.0);
                if !catalog.live.contains_key(&pid) {
                    continue;
                }
                let p = out.pending.entry(pid).or_insert_with(|| PendingWrites {
                    ops: Vec::new(),
                    oldest_wal: id,
                });
                p.ops.push(OwnedOp {
                    seqno: op.seqno,
                    kind: op.kind,
                    ts: op.ts,
                    key: op.key.to_vec(),
                    value: op.value.to_vec(),
                });
            }
        }
        if let Some(d) = records.dropped() {
            if !d.tolerable(Some(id) == newest) {
                if !ignore_corruption {
                    return Err(d.refusal());
                }
                out.damaged.push(id);
            }
            out.report.dropped.push(d.clone());
        }
    }
    Ok(out)
}

impl WalState {
    /// After a replay that dropped damage: writes the surviving writes of every partition
    /// into the current (fresh) WAL file, syncs it and deletes the older files — but moves
    /// the `damaged` ones (damage the operator chose to skip) into the damaged directory,
    /// returning where — so the damage is reported once and never replayed again.
    pub(super) fn rewrite_pending(
        &mut self,
        fs: &Arc<dyn Fs>,
        wal_dir: &Path,
        pending: &mut BTreeMap<u32, PendingWrites>,
        damaged: &[u64],
    ) -> Result<Vec<std::path::PathBuf>> {
        let w = self.writer.as_mut().ok_or_else(|| Error::Poisoned {
            cause: "no WAL".into(),
        })?;
        let mut framed = Vec::new();
        for (pid, p) in pending.iter_mut() {
            for op in &p.ops {
                let mut b = WriteBatch::new();
                b.push(op.kind, &op.key, op.ts, &op.value);
                framed.clear();
                frame_with(&mut framed, |out| {
                    encode_partitioned(out, op.seqno, std::iter::once((*pid, &b)))
                });
                w.append_framed(&framed)?;
                if let Some(bytes) = self.files.get_mut(&self.id) {
                    *bytes += framed.len() as u64;
                }
            }
            p.oldest_wal = self.id;
        }
        w.sync()?;
        let old: Vec<u64> = self.files.range(..self.id).map(|(id, _)| *id).collect();
        let mut kept = Vec::new();
        for id in old {
            let path = wal_dir.join(wal_name(id));
            if damaged.contains(&id) {
                kept.push(crate::wal::keep_damaged(&**fs, &path)?);
            } else {
                fs.remove(&path)
                    .map_err(|e| Error::io("removing", &path, e))?;
            }
            self.files.remove(&id);
        }
        fs.sync_dir(wal_dir)
            .map_err(|e| Error::io("syncing directory", wal_dir, e))?;
        Ok(kept)
    }
}

impl Shared {
    /// Runs `f` as the leader writer: no group commit runs meanwhile, so `f` may switch
    /// memtables or change which partitions are open.
    pub(crate) fn with_leadership<T>(&self, f: impl FnOnce() -> T) -> T {
        let mut q = self.writers.lock();
        while q.leader {
            self.writers_cv.wait(&mut q);
        }
        q.leader = true;
        drop(q);
        let out = f();
        let mut q = self.writers.lock();
        q.leader = false;
        self.writers_cv.notify_all();
        out
    }

    /// A writer starts stalling: counted, and seen by [`super::Engine::is_stalling`]
    /// until the returned guard is dropped. Returns when it started (monotonic µs).
    pub(crate) fn stall_begins(&self, counters: &Counters) -> (u64, StallGuard<'_>) {
        Counters::inc(&counters.write_stalls);
        self.stalled_writers.fetch_add(1, Ordering::Relaxed);
        let now = mosaic_env::monotonic_micros();
        self.last_stall_micros.store(now, Ordering::Relaxed);
        (now, StallGuard(self))
    }

    /// How long a write that started stalling at `started` (monotonic µs) may wait
    /// next, or [`Error::WriteStalled`] (its stall time counted) once it has waited out
    /// the engine's `write_stall_timeout`.
    pub(crate) fn stall_step(
        &self,
        started: u64,
        counters: &Counters,
        reason: &'static str,
    ) -> Result<Duration> {
        let Some(limit) = self.opts.write_stall_timeout else {
            return Ok(Duration::MAX);
        };
        let waited = Duration::from_micros(mosaic_env::monotonic_micros().saturating_sub(started));
        if waited >= limit {
            Counters::add(&counters.write_stall_micros, waited.as_micros() as u64);
            Counters::inc(&counters.write_stall_timeouts);
            return Err(Error::WriteStalled { waited, reason });
        }
        Ok(limit - waited)
    }

    /// Waits until the node's memtables have room for `charge` more bytes, and reserves
    /// them. Freezes the largest memtable when the memory not yet being flushed passes the
    /// cleanup threshold (or nothing is being flushed and the write does not fit).
    pub(crate) fn reserve(&self, charge: usize, counters: &Counters) -> Result<()> {
        let space = self.opts.memtable_space_bytes;
        let fits = |b: &Budget| {
            let held = b.used + b.reserved;
            space == 0 || held + charge <= space || held == 0
        };
        let mut b = self.budget.lock();
        let mut stall_start = None;
        loop {
            if self.is_closing() {
                return Err(Error::Closed);
            }
            if let Some(e) = self.poisoned() {
                return Err(e);
            }
            let live = b.used.saturating_sub(b.frozen);
            let over_cleanup =
                space != 0 && live as f64 > space as f64 * self.opts.memtable_cleanup_threshold;
            if over_cleanup || (!fits(&b) && b.frozen == 0) {
                drop(b);
                self.relieve();
                b = self.budget.lock();
            }
            if fits(&b) {
                break;
            }
            let (started, _) = stall_start.get_or_insert_with(|| self.stall_begins(counters));
            let step = self.stall_step(*started, counters, "the node is out of memtable space")?;
            self.budget_cv.wait_for(&mut b, step.min(WAIT_STEP));
        }
        b.reserved += charge;
        if let Some((t, _)) = stall_start {
            Counters::add(
                &counters.write_stall_micros,
                mosaic_env::monotonic_micros().saturating_sub(t),
            );
        }
        Ok(())
    }

    /// Gives back a reservation that will not be inserted.
    fn unreserve(&self, charge: usize) {
        let mut b = self.budget.lock();
        b.reserved = b.reserved.saturating_sub(charge);
    }

    /// Freezes the largest memtable of any open partition, so the flush workers free its
    /// memory. One writer at a time does this; the others go on waiting.
    fn relieve(&self) {
        if self.relieving.swap(true, Ordering::SeqCst) {
            return;
        }
        self.with_leadership(|| {
            let reg = self.registry.lock();
            let largest = reg
                .open
                .values()
                .map(|p| (p.active_memtable_bytes(), p))
                .filter(|(bytes, _)| *bytes > 0)
                .max_by_key(|(bytes, _)| *bytes);
            if let Some((_, p)) = largest {
                p.freeze_for_engine();
            }
        });
        self.relieving.store(false, Ordering::SeqCst);
    }

    /// Queues `batch` for partition `part` (with `charge` bytes reserved) and waits until a
    /// leader — perhaps this caller — has committed it with its group.
    pub(crate) fn commit(&self, part: &Arc<Inner>, batch: WriteBatch, charge: usize) -> Result<()> {
        let mut q = self.writers.lock();
        let ticket = q.next_ticket;
        q.next_ticket += 1;
        q.queue.push_back(Queued {
            ticket,
            part: part.clone(),
            batch,
            charge,
        });
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
            while let Some(item) = q.queue.pop_front() {
                bytes += item.batch.size_bytes();
                group.push(item);
                if self.opts.sync_mode == SyncMode::PerWrite || bytes >= GROUP_BYTES_MAX {
                    break;
                }
            }
            drop(q);
            let results = self.write_group(group);
            q = self.writers.lock();
            q.results.extend(results);
            q.leader = false;
            self.writers_cv.notify_all();
        }
    }

    /// Commits one group: the WAL record, its sync, the memtable inserts. Called only by
    /// the leader.
    fn write_group(&self, group: Vec<Queued>) -> Vec<(u64, Result<()>)> {
        let mut results = Vec::with_capacity(group.len());
        let mut accepted = Vec::with_capacity(group.len());
        // One memtable per partition for the whole group: a switch between two of its
        // batches would leave the first writing into a memtable being flushed.
        let mut memtables: Vec<(u32, Arc<crate::memtable::Memtable>)> = Vec::new();
        for item in group {
            let pid = item.part.pid();
            let mem = match memtables.iter().find(|(p, _)| *p == pid) {
                Some((_, m)) => Ok(m.clone()),
                None => item.part.memtable_for_write().inspect(|m| {
                    memtables.push((pid, m.clone()));
                }),
            };
            match mem {
                Ok(mem) => accepted.push((item, mem)),
                Err(e) => {
                    self.unreserve(item.charge);
                    results.push((item.ticket, Err(e)));
                }
            }
        }
        if accepted.is_empty() {
            return results;
        }
        let count: u64 = accepted.iter().map(|(q, _)| q.batch.len() as u64).sum();
        let first = self.last_seqno.load(Ordering::SeqCst) + 1;
        let appended = if first + count > crate::key::SEQNO_MAX {
            Err(Error::InvalidArgument("sequence numbers exhausted".into()))
        } else {
            self.append(
                Seqno(first),
                accepted.iter().map(|(q, _)| (q.part.pid(), &q.batch)),
            )
        };
        let (wal_id, synced, over_space) = match appended {
            Ok(x) => x,
            Err(e) => {
                for (q, _) in accepted {
                    self.unreserve(q.charge);
                    results.push((q.ticket, Err(e.duplicate())));
                }
                return results;
            }
        };
        let mut seqno = first;
        let (mut inserted, mut reserved) = (0usize, 0usize);
        for (q, mem) in &accepted {
            mem.note_wal(wal_id);
            let mut user_bytes = 0u64;
            for op in q.batch.ops() {
                inserted += mem.insert(&op.key, op.ts, Seqno(seqno), op.kind, &op.value);
                user_bytes += (op.key.len() + op.value.len()) as u64;
                seqno += 1;
            }
            reserved += q.charge;
            let counters = q.part.counters();
            Counters::add(&counters.user_bytes_written, user_bytes);
            // The batch's share of the record: its operations as encoded.
            Counters::add(
                &counters.wal_bytes_written,
                user_bytes + (OP_HEADER_BYTES * q.batch.len()) as u64,
            );
            if synced {
                Counters::inc(&counters.wal_syncs);
            }
            q.part.publish(Seqno(seqno - 1));
        }
        self.last_seqno.store(seqno - 1, Ordering::SeqCst);
        {
            let mut b = self.budget.lock();
            b.used += inserted;
            b.reserved = b.reserved.saturating_sub(reserved);
        }
        for (q, _) in accepted {
            results.push((q.ticket, Ok(())));
        }
        if let Some(oldest) = over_space {
            self.flush_pinners_of(oldest);
        }
        results
    }

    /// Appends one record to the WAL (starting a new file first when the current one is
    /// full or broken) and syncs it per the sync mode. Returns the file's id, whether it
    /// was synced, and — when a new file was started and the WAL is over its space — the
    /// oldest file, whose memtables should be flushed.
    fn append<'a>(
        &self,
        first: Seqno,
        batches: impl Iterator<Item = (u32, &'a WriteBatch)> + Clone,
    ) -> Result<(u64, bool, Option<u64>)> {
        let mut framed = std::mem::take(&mut *self.frame_scratch.lock());
        framed.clear();
        frame_with(&mut framed, |out| encode_partitioned(out, first, batches));
        let mut wal = self.wal.lock();
        let rotated = if wal.broken
            || wal
                .writer
                .as_ref()
                .is_some_and(|w| w.len() >= self.opts.wal_file_bytes)
        {
            self.rotate(&mut wal)?;
            true
        } else {
            false
        };
        let id = wal.id;
        let w = wal.writer.as_mut().ok_or_else(|| Error::Poisoned {
            cause: "no WAL".into(),
        })?;
        if let Err(e) = w.append_framed(&framed) {
            wal.broken = true;
            if !e.is_no_space() {
                self.poison(&e);
            }
            return Err(e);
        }
        let mut synced = false;
        if !matches!(self.opts.sync_mode, SyncMode::Periodic { .. }) {
            if let Err(e) = w.sync() {
                self.poison(&e);
                return Err(e);
            }
            synced = true;
        }
        if let Some(bytes) = wal.files.get_mut(&id) {
            *bytes += framed.len() as u64;
        }
        let over_space =
            self.opts.wal_space_bytes != 0 && wal.total_bytes() > self.opts.wal_space_bytes;
        let oldest = wal.files.keys().next().copied();
        drop(wal);
        if framed.capacity() <= 2 * GROUP_BYTES_MAX {
            *self.frame_scratch.lock() = framed;
        }
        Ok((id, synced, oldest.filter(|_| rotated && over_space)))
    }

    /// Closes the current WAL file and starts the next. The closed file is synced here
    /// (so the acknowledged prefix is durable even after a failed append), or under
    /// [`SyncMode::Periodic`], which acknowledges before syncing, by the next sync.
    fn rotate(&self, wal: &mut WalState) -> Result<()> {
        let fs = &self.opts.fs;
        let id = wal.id + 1;
        let path = self.wal_dir.join(wal_name(id));
        let file = match fs.create(&path) {
            Ok(f) => f,
            Err(e) => {
                let e = Error::io("creating", &path, e);
                wal.broken = true;
                if !e.is_no_space() {
                    self.poison(&e);
                }
                return Err(e);
            }
        };
        // The new file's directory entry is durable before any write in it is
        // acknowledged (and before an older file it lets go is deleted).
        if let Err(e) = fs.sync_dir(&self.wal_dir) {
            let e = Error::io("syncing directory", &self.wal_dir, e);
            wal.broken = true;
            let _ = fs.remove(&path);
            if !e.is_no_space() {
                self.poison(&e);
            }
            return Err(e);
        }
        if let Some(mut old) = wal.writer.replace(WalWriter::new(file, path)) {
            if matches!(self.opts.sync_mode, SyncMode::Periodic { .. }) {
                // Its writes were acknowledged before a sync: the periodic one covers it.
                wal.closed.push(old);
            } else if let Err(e) = old.sync() {
                self.poison(&e);
                return Err(e);
            }
        }
        wal.id = id;
        wal.broken = false;
        wal.files.insert(id, 0);
        Ok(())
    }

    /// Freezes the active memtables that keep WAL file `oldest` alive, so flushing them
    /// lets it go. Called by the leader.
    fn flush_pinners_of(&self, oldest: u64) {
        let reg = self.registry.lock();
        for p in reg.open.values() {
            if p.active_memtable_pins(oldest) {
                p.freeze_for_engine();
            }
        }
    }

    /// Deletes the WAL files older than every memtable still holding one of their writes.
    pub(crate) fn retire_wals(&self) {
        // The current file first: a write the leader is inserting right now is in it.
        let current = self.wal.lock().id;
        let mut keep_from = current;
        {
            let reg = self.registry.lock();
            for p in reg.open.values() {
                if let Some(w) = p.oldest_wal() {
                    keep_from = keep_from.min(w);
                }
            }
            for ms in reg.parked.values() {
                for w in ms.iter().filter_map(|m| m.oldest_wal()) {
                    keep_from = keep_from.min(w);
                }
            }
            for p in reg.pending.values() {
                keep_from = keep_from.min(p.oldest_wal);
            }
        }
        let doomed: Vec<u64> = {
            let wal = self.wal.lock();
            wal.files.range(..keep_from).map(|(id, _)| *id).collect()
        };
        for id in doomed {
            let path = self.wal_dir.join(wal_name(id));
            if self.opts.fs.remove(&path).is_ok() || !self.opts.fs.exists(&path) {
                self.wal.lock().files.remove(&id);
            }
        }
    }

    /// Syncs the current WAL file; a failure poisons the engine.
    pub(crate) fn sync_wal(&self) -> Result<()> {
        let _syncing = self.wal_sync.lock();
        // Files closed by rotations first, outside the WAL's lock: the writer goes on.
        let closed = std::mem::take(&mut self.wal.lock().closed);
        for mut w in closed {
            if let Err(e) = w.sync() {
                self.poison(&e);
                return Err(e);
            }
        }
        let mut wal = self.wal.lock();
        let Some(w) = wal.writer.as_mut() else {
            return Ok(());
        };
        match w.sync() {
            Ok(()) => Ok(()),
            Err(e) => {
                drop(wal);
                self.poison(&e);
                Err(e)
            }
        }
    }

    /// The WAL sync thread of [`SyncMode::Periodic`]: syncs the WAL every `interval_ms`
    /// until the engine closes; a failed sync poisons the engine.
    pub(super) fn periodic_sync_loop(&self, interval_ms: u64) {
        loop {
            let deadline = mosaic_env::monotonic_micros() + interval_ms * 1000;
            {
                let mut w = self.work.lock();
                loop {
                    if w.closing {
                        return;
                    }
                    let now = mosaic_env::monotonic_micros();
                    if now >= deadline {
                        break;
                    }
                    self.work_cv
                        .wait_for(&mut w, std::time::Duration::from_micros(deadline - now));
                }
            }
            if self.sync_wal().is_ok() {
                let reg = self.registry.lock();
                for p in reg.open.values() {
                    Counters::inc(&p.counters().wal_syncs);
                }
            }
        }
    }
}

/// A writer in a stall (see [`Shared::stall_begins`]).
pub(crate) struct StallGuard<'a>(&'a Shared);

impl Drop for StallGuard<'_> {
    fn drop(&mut self) {
        self.0
            .last_stall_micros
            .store(mosaic_env::monotonic_micros(), Ordering::Relaxed);
        self.0.stalled_writers.fetch_sub(1, Ordering::Relaxed);
    }
}
