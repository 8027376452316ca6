//! Background work: what the engine's flush and compaction workers ask of a partition
//! (is a job due, claim it, run it), manual compaction, and the jobs themselves (flush a
//! memtable, compact tables into the next level, split a two-layer log's segments into
//! range groups).
//!
//! *What* to compact is a pure decision made elsewhere ([`crate::compaction::pick`],
//! [`crate::split::pick`]) from a read-only view of the version; this module claims the
//! chosen tables (marking them busy so no other job picks them), runs the job outside the
//! state lock, and installs its result as one manifest edit. A full disk makes a job fail
//! and retry after [`NO_SPACE_RETRY`], refusing writes meanwhile; any other failure
//! poisons the engine.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use crate::compaction::{self, TableView, Task};
use crate::error::{Error, Result};
use crate::iter::{InternalIter, LevelIter, MergingIter};
use crate::memtable::Memtable;
use crate::options::CompactionEvent;
use crate::split;
use crate::stats::{Counters, ReadPurpose};
use crate::version::{TableHandle, Version, VersionEdit};

use super::{Inner, State, STALL_WAIT};

/// How long background threads wait before retrying after a full disk.
const NO_SPACE_RETRY: Duration = Duration::from_millis(200);

/// The tables a compaction reads: from the levels above the output level (with their
/// level), and from the output level itself.
type CompactionInputs = (Vec<(usize, Arc<TableHandle>)>, Vec<Arc<TableHandle>>);

impl Inner {
    /// Backs [`crate::Db::flush`] once the memtable is frozen: waits until every frozen
    /// memtable is flushed.
    pub(super) fn wait_for_flushes(&self) -> Result<()> {
        let mut st = self.state.lock();
        loop {
            if let Some(p) = &st.poisoned {
                return Err(Error::Poisoned { cause: p.clone() });
            }
            if st.imm.is_empty() {
                return Ok(());
            }
            if let Some(e) = &st.no_space {
                return Err(e.duplicate());
            }
            if st.closing {
                return Err(Error::Closed);
            }
            st = self.wait_or_work(st)?;
        }
    }

    /// In manual mode, runs the due jobs on this thread (failing if none can run, as the
    /// wait would never end); else waits a step for the workers.
    fn wait_or_work<'a>(
        &'a self,
        mut st: parking_lot::MutexGuard<'a, State>,
    ) -> Result<parking_lot::MutexGuard<'a, State>> {
        if !self.engine.is_manual() {
            self.state_cv.wait_for(&mut st, STALL_WAIT);
            return Ok(st);
        }
        drop(st);
        if self.engine.run_due_jobs(crate::engine::MANUAL_JOBS_MAX) == 0 {
            return Err(Error::InvalidArgument(
                "manual mode: the background work waited for cannot run".into(),
            ));
        }
        Ok(self.state.lock())
    }

    /// Backs [`crate::Db::wait_for_compactions`]: waits until no flush or compaction runs
    /// and none is due.
    pub(super) fn wait_for_idle(&self) -> Result<()> {
        let mut st = self.state.lock();
        loop {
            if let Some(p) = &st.poisoned {
                return Err(Error::Poisoned { cause: p.clone() });
            }
            if let Some(e) = &st.no_space {
                return Err(e.duplicate());
            }
            if st.closing {
                return Err(Error::Closed);
            }
            let idle = st.imm.is_empty()
                && !st.flushing
                && st.compactions_running == 0
                && self.pick_task(&st).is_none();
            if idle {
                return Ok(());
            }
            st = self.wait_or_work(st)?;
        }
    }

    /// This partition's part of [`crate::Engine::background_work`].
    pub(crate) fn background_work(&self) -> crate::engine::BackgroundWork {
        let st = self.state.lock();
        let due = self.pick_task(&st);
        let table_bytes = |id: &u64| {
            st.version
                .levels
                .iter()
                .flatten()
                .find(|t| t.meta().id == *id)
                .map_or(0, |t| t.meta().size_bytes)
        };
        crate::engine::BackgroundWork {
            flushes_pending: st.imm.len(),
            flushes_running: usize::from(st.flushing),
            compactions_running: st.compactions_running,
            compactions_due: usize::from(due.is_some()),
            compaction_due_bytes: due
                .as_ref()
                .map_or(0, |t| t.upper.iter().chain(&t.lower).map(table_bytes).sum()),
            level0_tables: st.version.levels.first().map_or(0, Vec::len),
        }
    }

    /// How much a flush of this partition is needed (the bytes of its frozen memtables),
    /// or `None` if it has none to flush or is not to be served now.
    pub(crate) fn flush_need(&self, now: u64) -> Option<usize> {
        let st = self.state.lock();
        if st.closing || st.poisoned.is_some() || st.flushing || st.retry_at > now {
            return None;
        }
        let bytes: usize = st.imm.iter().map(|m| m.size_bytes()).sum();
        (!st.imm.is_empty()).then_some(bytes.max(1))
    }

    /// Claims this partition's oldest frozen memtable for a flush worker.
    pub(crate) fn claim_flush(&self) -> Option<Arc<Memtable>> {
        let mut st = self.state.lock();
        if st.closing || st.poisoned.is_some() || st.flushing {
            return None;
        }
        let mem = st.imm.first().cloned()?;
        st.flushing = true;
        Some(mem)
    }

    /// Flushes claimed memtable `mem`; returns whether it was flushed (and its memory
    /// freed).
    pub(crate) fn run_flush(&self, mem: &Arc<Memtable>) -> bool {
        let result = self.flush_memtable(mem);
        let mut st = self.state.lock();
        st.flushing = false;
        let ok = result.is_ok();
        if !ok {
            st.retry_at = mosaic_env::monotonic_micros() + NO_SPACE_RETRY.as_micros() as u64;
        }
        self.after_background_job(&mut st, "flush", result);
        ok
    }

    /// How much a compaction of this partition is needed (its level-0 tables, plus one),
    /// or `None` if none is due. Asks the picker only when the version changed since it
    /// last found nothing.
    pub(crate) fn compaction_need(&self, now: u64) -> Option<usize> {
        let mut st = self.state.lock();
        if st.closing || st.poisoned.is_some() || !st.maybe_work || st.retry_at > now {
            return None;
        }
        if self.pick_task(&st).is_none() {
            if !st.manual_compaction {
                st.maybe_work = false;
            }
            return None;
        }
        Some(st.version.levels.first().map_or(0, Vec::len) + 1)
    }

    /// Claims the compaction (or split) the picker chooses now, if any.
    pub(crate) fn claim_compaction(&self) -> Option<Task> {
        let mut st = self.state.lock();
        if st.closing || st.poisoned.is_some() {
            return None;
        }
        let task = self.pick_task(&st)?;
        claim(&mut st, &task);
        Some(task)
    }

    /// Runs a claimed compaction and records its outcome.
    pub(crate) fn run_claimed_compaction(&self, task: &Task) {
        let result = self.run_compaction(task);
        let mut st = self.state.lock();
        release(&mut st, task);
        if result.is_err() {
            st.retry_at = mosaic_env::monotonic_micros() + NO_SPACE_RETRY.as_micros() as u64;
        }
        self.after_background_job(&mut st, "compaction", result);
    }

    /// Records a background job's outcome: a full disk refuses writes until a job
    /// succeeds; any other failure poisons the engine.
    /// The listener hears of each failure once: when the disk fills, and when the engine
    /// is poisoned.
    fn after_background_job(&self, st: &mut State, job: &str, result: Result<()>) {
        let report = |e: &Error| {
            if let Some(l) = &self.opts.compaction_listener {
                l.on_background_error(&self.dir, job, e);
            }
        };
        match result {
            Ok(()) => st.no_space = None,
            Err(e) if e.is_no_space() => {
                if st.no_space.is_none() {
                    report(&e);
                }
                st.no_space = Some(e);
            }
            Err(e) => {
                if st.poisoned.is_none() {
                    report(&e);
                    st.poisoned = Some(e.to_string());
                }
            }
        }
        self.state_cv.notify_all();
    }

    /// Writes the oldest frozen memtable as a level-0 table — or, in a two-layer log
    /// without a global log, as one run per range group it holds keys of; from then on
    /// the shared WAL's replay into this partition starts past its writes.
    fn flush_memtable(&self, mem: &Arc<Memtable>) -> Result<()> {
        let (outputs, groups) = match &self.opts.log {
            Some(log) if log.split_segments == 0 => {
                self.write_memtable_routed(mem, &log.group_of)?
            }
            _ => (self.write_memtable(mem)?, Vec::new()),
        };
        let flushed = mem.max_seqno();
        let level = |i: usize| groups.get(i).map_or(0, |g| g + 1);
        let edit = VersionEdit {
            flushed_seqno: Some(flushed),
            added: outputs
                .iter()
                .enumerate()
                .map(|(i, h)| (level(i), h.meta().clone()))
                .collect(),
            ..VersionEdit::default()
        };
        let bytes: u64 = outputs.iter().map(|h| h.meta().size_bytes).sum();
        let installed = self.install(edit, &outputs, |st| {
            st.imm.retain(|m| !Arc::ptr_eq(m, mem));
            st.flushed_seqno = st.flushed_seqno.max(flushed);
        });
        if let Err(e) = installed {
            self.discard_outputs(&outputs);
            return Err(e);
        }
        Counters::add(&self.counters.flush_bytes_written, bytes);
        Counters::inc(&self.counters.flushes);
        Ok(())
    }

    /// The read-only view of the version the pickers decide from. A span an ingest has
    /// reserved shows as a busy, empty table of its level, so no job writes into it.
    fn table_views(st: &State) -> Vec<Vec<TableView>> {
        let mut views: Vec<Vec<TableView>> = st
            .version
            .levels
            .iter()
            .map(|tables| {
                tables
                    .iter()
                    .map(|t| TableView {
                        id: t.meta().id,
                        size_bytes: t.meta().size_bytes,
                        smallest: t.meta().smallest_user_key().to_vec(),
                        largest: t.meta().largest_user_key().to_vec(),
                        busy: st.busy.contains(&t.meta().id),
                    })
                    .collect()
            })
            .collect();
        for (level, lo, hi) in &st.ingesting {
            if let Some(tables) = views.get_mut(*level) {
                let at = tables.partition_point(|t| t.smallest.as_slice() < lo.as_slice());
                tables.insert(
                    at,
                    TableView {
                        id: u64::MAX,
                        size_bytes: 0,
                        smallest: lo.clone(),
                        largest: hi.clone(),
                        busy: true,
                    },
                );
            }
        }
        views
    }

    /// The next compaction or split due, if any (none while a manual compaction runs).
    pub(super) fn pick_task(&self, st: &State) -> Option<Task> {
        if st.manual_compaction {
            return None;
        }
        if let Some(log) = &self.opts.log {
            return split::pick(&Self::table_views(st), log);
        }
        compaction::pick(&Self::table_views(st), &self.opts, &st.cursors)
    }

    /// Backs [`crate::Db::compact`]: compacts every table into the bottom level (for a
    /// log: splits every segment, then merge-sorts every group, in passes of at most
    /// [`split::INPUTS_MAX`] tables as [`split::pick_major`] picks them), waiting for
    /// running compactions first.
    pub(super) fn manual_compaction(&self) -> Result<()> {
        let mut from = None;
        loop {
            let (task, next) = self.claim_manual_pass(from)?;
            self.run_manual(&task)?;
            match next {
                Some(next) => from = Some(next),
                None => return Ok(()),
            }
        }
    }

    /// Runs one pass of a manual compaction (claimed by [`Self::claim_manual_pass`]).
    fn run_manual(&self, task: &Task) -> Result<()> {
        // Even a lone bottom table is rewritten: that is where expired tombstones go.
        let result = if task.upper.is_empty() && task.lower.is_empty() {
            Ok(())
        } else {
            self.run_compaction(task)
        };
        let mut st = self.state.lock();
        release(&mut st, task);
        st.manual_compaction = false;
        st.maybe_work = true;
        self.engine.signal_work();
        match result {
            // A full disk during a manual compaction is the caller's to retry; background
            // work is unaffected, so writes are not refused for it.
            Err(e) if e.is_no_space() => {
                self.state_cv.notify_all();
                Err(e)
            }
            result => {
                let out = result.as_ref().map(|_| ()).map_err(Error::duplicate);
                self.after_background_job(&mut st, "compaction", result);
                out
            }
        }
    }

    /// Waits for running compactions, then claims the tables of one pass of a manual
    /// compaction: every table — for a log, those of the pass after `from` (`None`: the
    /// first) — with where the next pass starts (`None`: this is the last).
    fn claim_manual_pass(&self, from: Option<usize>) -> Result<(Task, Option<usize>)> {
        let mut st = self.state.lock();
        while st.manual_compaction {
            self.state_cv.wait_for(&mut st, STALL_WAIT);
        }
        st.manual_compaction = true;
        loop {
            if st.closing {
                st.manual_compaction = false;
                return Err(Error::Closed);
            }
            // An ingest being installed would land beside (or under) the outputs.
            if st.compactions_running == 0 && st.ingesting.is_empty() {
                break;
            }
            self.state_cv.wait_for(&mut st, STALL_WAIT);
        }
        let last = self.opts.levels_max - 1;
        let mut upper = Vec::new();
        let mut lower = Vec::new();
        let mut next = None;
        if self.opts.log.is_some() {
            // Everything split, every group merge-sorted into one run, pass by pass.
            let pass = split::pick_major(&Self::table_views(&st), from, split::INPUTS_MAX);
            if let Some((task, after)) = pass {
                (upper, lower, next) = (task.upper, task.lower, Some(after));
            }
        }
        for (level, tables) in st.version.levels.iter().enumerate() {
            if self.opts.log.is_some() {
                break;
            }
            for t in tables {
                if level == last {
                    lower.push(t.meta().id);
                } else {
                    upper.push(t.meta().id);
                }
            }
        }
        let task = Task {
            level: 0,
            output_level: last,
            upper,
            lower,
            trivial_move: false,
            split: self.opts.log.is_some(),
        };
        claim(&mut st, &task);
        Ok((task, next))
    }

    /// Runs one compaction (or split) task: a trivial move is one manifest edit; otherwise
    /// the inputs are merged into new tables on the output level, which replace them in
    /// one manifest edit.
    fn run_compaction(&self, task: &Task) -> Result<()> {
        if task.split {
            return self.run_split(task);
        }
        let version = self.state.lock().version.clone();
        let (upper, lower) = compaction_inputs(&version, task)?;
        let mut event = CompactionEvent {
            level: task.level,
            output_level: task.output_level,
            inputs: task.upper.iter().chain(&task.lower).copied().collect(),
            outputs: Vec::new(),
            trivial_move: task.trivial_move,
        };
        if task.trivial_move {
            self.install_trivial_move(task, &upper)?;
            event.outputs = task.upper.clone();
            self.compaction_done(&event);
            return Ok(());
        }
        let outputs = self.merge_inputs(&version, task, &upper, &lower, &event.inputs)?;
        let mut edit = VersionEdit::default();
        for (level, t) in &upper {
            edit.deleted.push((*level as u32, t.meta().id));
        }
        for t in &lower {
            edit.deleted.push((task.output_level as u32, t.meta().id));
        }
        for h in &outputs {
            edit.added
                .push((task.output_level as u32, h.meta().clone()));
        }
        let cursor = cursor_after(&upper);
        let written: u64 = outputs.iter().map(|h| h.meta().size_bytes).sum();
        let installed = self.install(edit, &outputs, |st| advance_cursor(st, task, cursor));
        if let Err(e) = installed {
            self.discard_outputs(&outputs);
            return Err(e);
        }
        for (_, t) in &upper {
            t.mark_obsolete();
        }
        for t in &lower {
            t.mark_obsolete();
        }
        Counters::add(&self.counters.compaction_bytes_written, written);
        event.outputs = outputs.iter().map(|h| h.meta().id).collect();
        self.compaction_done(&event);
        Ok(())
    }

    /// Moves the `upper` tables of `task` down to its output level without rewriting them.
    fn install_trivial_move(&self, task: &Task, upper: &[(usize, Arc<TableHandle>)]) -> Result<()> {
        let mut edit = VersionEdit::default();
        let mut handles = Vec::new();
        for (level, t) in upper {
            edit.deleted.push((*level as u32, t.meta().id));
            edit.added
                .push((task.output_level as u32, t.meta().clone()));
            handles.push(t.clone());
        }
        let cursor = cursor_after(upper);
        self.install(edit, &handles, |st| advance_cursor(st, task, cursor))
    }

    /// Merges the inputs of a compaction into new tables for its output level, cut at
    /// the table size and at the boundaries of the level below (see
    /// [`Inner::write_tables`]); not yet installed.
    fn merge_inputs(
        &self,
        version: &Version,
        task: &Task,
        upper: &[(usize, Arc<TableHandle>)],
        lower: &[Arc<TableHandle>],
        ids: &[u64],
    ) -> Result<Vec<Arc<TableHandle>>> {
        let ctx = self.output_context(ids, None);
        let mut children: Vec<Box<dyn InternalIter>> = Vec::new();
        for (_, t) in upper {
            children.push(Box::new(t.reader().iter(ReadPurpose::Compaction, false)));
        }
        if !lower.is_empty() {
            children.push(Box::new(LevelIter::new(
                lower.to_vec(),
                ReadPurpose::Compaction,
                false,
            )));
        }
        let mut it = MergingIter::new(children);
        it.seek_to_first()?;
        let grandparents: Vec<Vec<u8>> = version
            .levels
            .get(task.output_level + 1)
            .map(|ts| {
                ts.iter()
                    .map(|t| t.meta().largest_user_key().to_vec())
                    .collect()
            })
            .unwrap_or_default();
        Ok(self
            .write_tables(
                &mut it,
                &ctx,
                self.opts.table_size_bytes,
                &grandparents,
                None,
            )?
            .0)
    }

    /// Counts a finished compaction and tells the listener.
    fn compaction_done(&self, event: &CompactionEvent) {
        Counters::inc(&self.counters.compactions);
        if let Some(l) = &self.opts.compaction_listener {
            l.on_compaction(event);
        }
    }

    /// Runs a two-layer log's split (see [`crate::split`]): merges the segments and the
    /// runs of the groups being merge-sorted, writes one run per range group met, and
    /// swaps inputs for outputs in one manifest edit.
    fn run_split(&self, task: &Task) -> Result<()> {
        let Some(log) = &self.opts.log else {
            return Err(Error::InvalidArgument(
                "a split needs a two-layer log".into(),
            ));
        };
        let version = self.state.lock().version.clone();
        let mut inputs: Vec<(usize, Arc<TableHandle>)> = Vec::new();
        for (level, tables) in version.levels.iter().enumerate() {
            for t in tables {
                let id = t.meta().id;
                if task.upper.contains(&id) || task.lower.contains(&id) {
                    inputs.push((level, t.clone()));
                }
            }
        }
        if inputs.len() != task.upper.len() + task.lower.len() {
            return Err(Error::InvalidArgument("split inputs vanished".into()));
        }
        let merge_sorted: HashSet<usize> = inputs
            .iter()
            .filter(|(level, _)| *level > 0)
            .map(|(level, _)| *level)
            .collect();
        let ids: Vec<u64> = inputs.iter().map(|(_, t)| t.meta().id).collect();
        let ctx = self.output_context(&ids, None);
        let children: Vec<Box<dyn InternalIter>> = inputs
            .iter()
            .map(|(_, t)| {
                Box::new(t.reader().iter(ReadPurpose::Compaction, false)) as Box<dyn InternalIter>
            })
            .collect();
        let mut it = MergingIter::new(children);
        it.seek_to_first()?;
        let (outputs, groups) =
            self.write_tables(&mut it, &ctx, u64::MAX, &[], Some(&log.group_of))?;
        let mut edit = VersionEdit::default();
        for (level, t) in &inputs {
            edit.deleted.push((*level as u32, t.meta().id));
        }
        let (mut split_bytes, mut merge_sort_bytes) = (0u64, 0u64);
        for (h, g) in outputs.iter().zip(&groups) {
            let level = *g as usize + 1;
            if merge_sorted.contains(&level) {
                merge_sort_bytes += h.meta().size_bytes;
            } else {
                split_bytes += h.meta().size_bytes;
            }
            edit.added.push((level as u32, h.meta().clone()));
        }
        if let Err(e) = self.install(edit, &outputs, |_| {}) {
            self.discard_outputs(&outputs);
            return Err(e);
        }
        for (_, t) in &inputs {
            t.mark_obsolete();
        }
        Counters::add(&self.counters.split_bytes_written, split_bytes);
        Counters::add(&self.counters.merge_sort_bytes_written, merge_sort_bytes);
        if !task.upper.is_empty() {
            Counters::inc(&self.counters.splits);
        }
        Counters::add(&self.counters.merge_sorts, merge_sorted.len() as u64);
        Ok(())
    }
}

/// Marks the tables of `task` busy, so no other job picks them, counts it as running and
/// notes the span its outputs will fall in (no ingest places a table there meanwhile).
fn claim(st: &mut State, task: &Task) {
    let ids = || task.upper.iter().chain(&task.lower);
    for id in ids() {
        st.busy.insert(*id);
    }
    let span = st
        .version
        .all_tables()
        .filter(|t| ids().any(|id| *id == t.meta().id))
        .fold(None::<(Vec<u8>, Vec<u8>)>, |acc, t| {
            let (lo, hi) = (t.meta().smallest_user_key(), t.meta().largest_user_key());
            Some(match acc {
                None => (lo.to_vec(), hi.to_vec()),
                Some((a, b)) => (a.min(lo.to_vec()), b.max(hi.to_vec())),
            })
        });
    if let (Some(first), Some((lo, hi))) = (ids().min(), span) {
        st.running.insert(*first, (task.output_level, lo, hi));
    }
    st.compactions_running += 1;
}

/// Undoes [`claim`] once `task` has finished (or failed).
fn release(st: &mut State, task: &Task) {
    for id in task.upper.iter().chain(&task.lower) {
        st.busy.remove(id);
    }
    if let Some(first) = task.upper.iter().chain(&task.lower).min() {
        st.running.remove(first);
    }
    st.compactions_running -= 1;
}

/// Finds the tables `task` names in `version`.
fn compaction_inputs(version: &Version, task: &Task) -> Result<CompactionInputs> {
    let mut upper: Vec<(usize, Arc<TableHandle>)> = Vec::new();
    for (level, tables) in version.levels.iter().enumerate() {
        for t in tables {
            if task.upper.contains(&t.meta().id) {
                upper.push((level, t.clone()));
            }
        }
    }
    let lower: Vec<Arc<TableHandle>> = version
        .levels
        .get(task.output_level)
        .map(|ts| {
            ts.iter()
                .filter(|t| task.lower.contains(&t.meta().id))
                .cloned()
                .collect()
        })
        .unwrap_or_default();
    if upper.len() + lower.len() != task.upper.len() + task.lower.len() {
        // The version changed under the picker (cannot happen while tables are busy).
        return Err(Error::InvalidArgument("compaction inputs vanished".into()));
    }
    Ok((upper, lower))
}

/// Where the level's round-robin compaction cursor moves after compacting `upper`: its
/// largest key.
fn cursor_after(upper: &[(usize, Arc<TableHandle>)]) -> Option<Vec<u8>> {
    upper
        .iter()
        .map(|(_, t)| t.meta().largest_user_key().to_vec())
        .max()
}

/// Sets the compaction cursor of `task`'s level to `cursor`, if any.
fn advance_cursor(st: &mut State, task: &Task, cursor: Option<Vec<u8>>) {
    if let (Some(c), Some(slot)) = (cursor, st.cursors.get_mut(task.level)) {
        *slot = c;
    }
}
