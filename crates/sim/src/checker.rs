//! The checker: what the cluster promises clients, verified from the outside.
//!
//! Owns the history of every client operation (issue and outcome, in a logical order of
//! events) and judges each read when it completes. It never looks inside a node; it sees
//! what a client sees, plus one fact only the simulator knows — which stored writes a
//! crash destroyed — because the promise depends on it.
//!
//! Promises checked:
//!
//! - **Overlapping levels**: a write acknowledged at WCL before a read at RCL began is
//!   visible to that read (it, or a newer write of the key, is returned) whenever the
//!   acknowledging replicas that still hold it plus the replicas the read asks exceed the
//!   replication factor: `block_for(WCL) − lost + block_for(RCL) > RF`, where `lost`
//!   counts the replicas that lost the write in a crash (unsynced under lossy periodic
//!   sync; never under sync-per-write, where this is the plain `WCL + RCL > RF`). On real
//!   storage (`crate::disk`) a copy counts as lost only when the replica applied the write
//!   after its last WAL sync and reopened without it: a replica that loses a write it held
//!   durably fails the run outright instead of being excused here.
//!   Writes at ANY promise no replica (a hint may be all there is), so never qualify.
//! - **Monotonic reads at overlapping levels**: a value a read at RCL₁ returned is
//!   visible (it or a newer one) to every read at RCL₂ that begins after the first ended,
//!   when `block_for(RCL₁) − lost + block_for(RCL₂) > RF` — the promise of blocking read
//!   repair (`mosaic_cluster::node`): the first read left the value on every replica it
//!   asked.
//! - **No invention**: every value read was written by some client (acknowledged or
//!   not), to that key and table, with the timestamp that write carried.
//! - **Well-formed answers**: entries in key order, inside the range read, no more than
//!   the limit.
//! - **Convergence** ([`Checker::check_converged`]): after faults stop and a read at ALL
//!   has repaired each key, every replica of the key stores identical bytes.
//!
//! Failures (Unavailable, timeouts, Overloaded, a coordinator that crashed mid-request)
//! are allowed outcomes; they are counted, and a write that failed may or may not be
//! visible later. Hinted handoff and anti-entropy repair do not exist yet: when they do,
//! [`write_replicas_promised`] is where ANY gains its hint, and convergence is where a
//! repair run replaces the reads at ALL ([`Settle`]).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use mosaic_cluster::env::Entries;
use mosaic_cluster::{ClusterError, ConsistencyLevel};
use mosaic_rows::{Cell, ColumnId, Fragment, FragmentKind};
use mosaic_types::Timestamp;

/// How the checker's convergence step brought replicas together.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Settle {
    /// Every key read at ALL (blocking read repair). Anti-entropy repair and hint replay
    /// will be further ways, each with its own promise of what converges.
    ReadAtAll,
}

/// How many replicas a write acknowledged at `cl` is promised to be on.
pub fn write_replicas_promised(cl: ConsistencyLevel, rf: usize) -> usize {
    match cl {
        // Cassandra: an ANY write may live only as a hint on the coordinator.
        ConsistencyLevel::Any => 0,
        cl => cl.block_for(rf),
    }
}

/// The column every simulated write sets.
const COLUMN: ColumnId = ColumnId(0);

/// The fragment of a simulated write: one cell of the column every simulated write sets,
/// holding `id` (the write's, or the lightweight transaction's) at `ts`.
pub fn value_fragment(id: u64, ts: i64) -> Vec<u8> {
    let mut f = Fragment::new(FragmentKind::Row);
    f.cells.insert(
        COLUMN,
        Cell::Live {
            ts: Timestamp(ts),
            value: id.to_be_bytes().to_vec(),
            expiry: None,
        },
    );
    f.encode()
}

/// What a stored fragment of simulated writes holds: the id and timestamp of its cell
/// ([`value_fragment`]), `None` for an empty row; anything else, described.
pub fn stored_value(bytes: &[u8]) -> Result<Option<(u64, i64)>, String> {
    let fragment = Fragment::decode(bytes).map_err(|e| format!("undecodable: {e}"))?;
    match fragment.cells.get(&COLUMN) {
        Some(Cell::Live { value, ts, .. }) => match <[u8; 8]>::try_from(value.as_slice()) {
            Ok(id) => Ok(Some((u64::from_be_bytes(id), ts.0))),
            Err(_) => Err(format!(
                "returned value {value:02x?} at {}, never written there",
                ts.0
            )),
        },
        Some(Cell::Tombstone { .. }) => Err("holds a tombstone nobody wrote".to_owned()),
        None if fragment.is_empty() => Ok(None),
        None => Err(format!("holds {fragment:?}")),
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Outcome {
    Pending,
    /// Acknowledged at logical time `at`.
    Acked {
        at: u64,
    },
    Failed,
    /// The coordinator crashed before answering.
    Unknown,
}

/// Where a promise of visibility comes from.
#[derive(Clone, Copy, Debug)]
enum Origin {
    /// The write was acknowledged at this level.
    Acked(ConsistencyLevel),
    /// Read `#n` at this level returned the write (and read repair put it on every
    /// replica it asked).
    Read(u64, ConsistencyLevel),
}

/// Write `write` is on at least `replicas` replicas (before crash losses) from logical
/// time `since` on.
#[derive(Clone, Copy, Debug)]
struct Promise {
    write: usize,
    replicas: usize,
    since: u64,
    origin: Origin,
}

#[derive(Clone, Debug)]
struct Write {
    table: usize,
    key: usize,
    ts: i64,
    cl: ConsistencyLevel,
    outcome: Outcome,
    /// Nodes whose crash destroyed a stored copy of this write.
    lost_on: BTreeSet<usize>,
}

/// Counts of what happened (for the report; failures are allowed outcomes).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Writes issued.
    pub writes: u64,
    /// Writes acknowledged.
    pub writes_acked: u64,
    /// Reads issued.
    pub reads: u64,
    /// Reads answered.
    pub reads_ok: u64,
    /// Failed operations by error kind (`Unavailable`, `WriteTimeout`, `CoordinatorCrashed`…).
    pub failures: BTreeMap<String, u64>,
    /// (read, acknowledged write) pairs whose visibility was asserted.
    pub guarantees_checked: u64,
    /// (read, earlier read) pairs whose monotonicity was asserted.
    pub monotonic_checked: u64,
    /// Pairs not asserted because the levels did not overlap.
    pub not_overlapping: u64,
    /// Pairs not asserted because crashes destroyed too many copies of the write.
    pub excused_by_loss: u64,
    /// Copies of acknowledged writes crashes destroyed (one per write and node).
    pub acked_copies_lost: u64,
    /// Keys compared across replicas after settling.
    pub keys_converged: u64,
}

/// A read in flight.
#[derive(Clone, Debug)]
pub struct ReadToken {
    table: usize,
    /// Key indexes the read covers, ascending by engine key.
    keys: Vec<usize>,
    limit: usize,
    cl: ConsistencyLevel,
    started: u64,
    /// Where and how it ran (the coordinator, its view), for violation reports.
    pub note: String,
}

/// The history and its judgements (see the module doc).
pub struct Checker {
    rf: Vec<usize>,
    /// Engine key of each key index (the same in every table).
    keys: Vec<Vec<u8>>,
    by_engine_key: BTreeMap<Vec<u8>, usize>,
    writes: Vec<Write>,
    /// Per (table, key), what later reads must see.
    promises: BTreeMap<(usize, usize), Vec<Promise>>,
    clock: u64,
    last_ts: i64,
    ignore_losses: bool,
    violations: Vec<String>,
    stats: Stats,
    history: xxhash_rust::xxh3::Xxh3,
}

/// A failure's kind, for the counts of failures.
pub fn error_kind(e: &ClusterError) -> &'static str {
    match e {
        ClusterError::Unavailable { .. } => "Unavailable",
        ClusterError::WriteTimeout { .. } => "WriteTimeout",
        ClusterError::CasTimeout { .. } => "CasTimeout",
        ClusterError::ReadTimeout { .. } => "ReadTimeout",
        ClusterError::WriteFailure { .. } => "WriteFailure",
        ClusterError::ReadFailure { .. } => "ReadFailure",
        ClusterError::Overloaded(_) => "Overloaded",
        ClusterError::UnknownTable(_) => "UnknownTable",
        ClusterError::Storage(_) => "Storage",
        _ => "Other",
    }
}

/// What a client got back: an answer, an error, or nothing (its coordinator crashed).
pub type Answer<T> = Option<Result<T, ClusterError>>;

impl Checker {
    /// A checker for tables of replication factors `rf`, over `keys` (engine keys).
    /// `ignore_losses` makes it hold crash-destroyed writes to their full promise (only
    /// to show that such losses are caught).
    pub fn new(rf: Vec<usize>, keys: Vec<Vec<u8>>, ignore_losses: bool) -> Checker {
        let by_engine_key = keys
            .iter()
            .enumerate()
            .map(|(i, k)| (k.clone(), i))
            .collect();
        Checker {
            rf,
            keys,
            by_engine_key,
            writes: Vec::new(),
            promises: BTreeMap::new(),
            clock: 0,
            last_ts: 0,
            ignore_losses,
            violations: Vec::new(),
            stats: Stats::default(),
            history: xxhash_rust::xxh3::Xxh3::new(),
        }
    }

    fn tick(&mut self) -> u64 {
        self.clock += 1;
        self.clock
    }

    fn violation(&mut self, text: String) {
        // Bounded: one broken invariant tends to repeat for every later read.
        if self.violations.len() < 20 {
            self.violations.push(text);
        }
    }

    fn record(&mut self, event: &str, now_micros: u64) {
        self.history.update(event.as_bytes());
        self.history.update(&now_micros.to_le_bytes());
    }

    /// The engine key of key `index`.
    pub fn engine_key(&self, index: usize) -> &[u8] {
        self.keys.get(index).map_or(&[], Vec::as_slice)
    }

    /// A write of key `key` of table `table` at `cl` issued at `now_micros`: its id and the
    /// fragment to write (one cell whose value is the id, at a fresh timestamp).
    pub fn begin_write(
        &mut self,
        table: usize,
        key: usize,
        cl: ConsistencyLevel,
        now_micros: u64,
    ) -> (usize, i64, Vec<u8>) {
        self.tick();
        let id = self.writes.len();
        // Unique and increasing: the simulated clock, nudged past the last timestamp.
        let ts = (i64::try_from(now_micros).unwrap_or(i64::MAX) + 1).max(self.last_ts + 1);
        self.last_ts = ts;
        self.writes.push(Write {
            table,
            key,
            ts,
            cl,
            outcome: Outcome::Pending,
            lost_on: BTreeSet::new(),
        });
        self.stats.writes += 1;
        self.record(&format!("w{id} t{table} k{key} {}", cl.name()), now_micros);
        (id, ts, value_fragment(id as u64, ts))
    }

    /// The outcome of write `id`.
    pub fn end_write(&mut self, id: usize, answer: Answer<()>, now_micros: u64) {
        let at = self.tick();
        let (outcome, kind) = match &answer {
            Some(Ok(())) => (Outcome::Acked { at }, "ok"),
            Some(Err(e)) => (Outcome::Failed, error_kind(e)),
            None => (Outcome::Unknown, "CoordinatorCrashed"),
        };
        if let Some(w) = self.writes.get_mut(id) {
            w.outcome = outcome;
            if matches!(outcome, Outcome::Acked { .. }) {
                self.stats.acked_copies_lost += w.lost_on.len() as u64;
                let rf = self.rf.get(w.table).copied().unwrap_or(0);
                let promise = Promise {
                    write: id,
                    replicas: write_replicas_promised(w.cl, rf),
                    since: at,
                    origin: Origin::Acked(w.cl),
                };
                self.promises
                    .entry((w.table, w.key))
                    .or_default()
                    .push(promise);
            }
        }
        if kind == "ok" {
            self.stats.writes_acked += 1;
        } else {
            *self
                .stats
                .failures
                .entry(format!("write:{kind}"))
                .or_default() += 1;
        }
        self.record(&format!("w{id} {kind}"), now_micros);
    }

    /// A read of keys `keys` (indexes) of `table`, at most `limit` entries, at `cl`.
    pub fn begin_read(
        &mut self,
        table: usize,
        mut keys: Vec<usize>,
        limit: usize,
        cl: ConsistencyLevel,
        now_micros: u64,
    ) -> ReadToken {
        let started = self.tick();
        keys.sort_by(|a, b| self.engine_key(*a).cmp(self.engine_key(*b)));
        keys.dedup();
        self.stats.reads += 1;
        self.record(
            &format!("r{started} t{table} {keys:?} {limit} {}", cl.name()),
            now_micros,
        );
        ReadToken {
            table,
            keys,
            limit,
            cl,
            started,
            note: String::new(),
        }
    }

    /// Judges a read's answer (see the module doc).
    pub fn end_read(&mut self, read: &ReadToken, answer: Answer<Entries>, now_micros: u64) {
        let ended = self.tick();
        let (entries, exhausted) = match answer {
            Some(Ok(e)) => e,
            Some(Err(e)) => {
                let kind = error_kind(&e);
                *self
                    .stats
                    .failures
                    .entry(format!("read:{kind}"))
                    .or_default() += 1;
                self.record(&format!("r{} {kind}", read.started), now_micros);
                return;
            }
            None => {
                *self
                    .stats
                    .failures
                    .entry("read:CoordinatorCrashed".into())
                    .or_default() += 1;
                self.record(&format!("r{} crashed", read.started), now_micros);
                return;
            }
        };
        self.stats.reads_ok += 1;
        let mut summary = format!("r{} ok {exhausted}", read.started);
        let what = format!(
            "read #{} of table {} keys {:?} at {} (limit {}; {})",
            read.started,
            read.table,
            read.keys,
            read.cl.name(),
            read.limit,
            read.note
        );
        if entries.len() > read.limit {
            self.violation(format!("{what}: {} entries returned", entries.len()));
        }
        if entries.windows(2).any(|p| p[0].0 >= p[1].0) {
            self.violation(format!("{what}: entries out of key order"));
        }
        // Each returned entry: a key read, a value written.
        let mut seen: BTreeMap<usize, Option<(usize, i64)>> = BTreeMap::new();
        for (k, v) in &entries {
            let Some(&key) = self.by_engine_key.get(k) else {
                self.violation(format!("{what}: returned unknown key {k:02x?}"));
                continue;
            };
            if !read.keys.contains(&key) {
                self.violation(format!("{what}: returned key {key} outside the range"));
            }
            let value = self.value_of(read.table, key, v, &what);
            let _ = write!(summary, " k{key}={value:?}");
            seen.insert(key, value);
        }
        // Keys the answer speaks for: all if exhausted, else those up to the last entry.
        let last = entries.last().map(|(k, _)| k.clone());
        for &key in &read.keys {
            let covered = exhausted || last.as_deref().is_some_and(|l| self.engine_key(key) <= l);
            if !covered {
                continue;
            }
            let observed = seen.get(&key).copied().flatten();
            self.check_visible(read, key, observed.map(|(_, ts)| ts), &what);
            if let Some((write, _)) = observed {
                let rf = self.rf.get(read.table).copied().unwrap_or(0);
                let promise = Promise {
                    write,
                    replicas: read.cl.block_for(rf),
                    since: ended,
                    origin: Origin::Read(read.started, read.cl),
                };
                self.promises
                    .entry((read.table, key))
                    .or_default()
                    .push(promise);
            }
        }
        self.record(&summary, now_micros);
    }

    /// The write a stored value holds, `None` for an empty row, after checking it was
    /// really written.
    fn value_of(
        &mut self,
        table: usize,
        key: usize,
        bytes: &[u8],
        what: &str,
    ) -> Option<(usize, i64)> {
        let (id, ts) = match stored_value(bytes) {
            Ok(Some((id, ts))) => (id as usize, ts),
            Ok(None) => return None,
            Err(e) => {
                self.violation(format!("{what}: key {key} {e}"));
                return None;
            }
        };
        match self.writes.get(id) {
            Some(w) if w.table == table && w.key == key && w.ts == ts => Some((id, ts)),
            _ => {
                self.violation(format!(
                    "{what}: key {key} returned write #{id} at {ts}, never written there"
                ));
                None
            }
        }
    }

    /// Every promise about `key` made before `read` began must be kept by `observed`.
    fn check_visible(&mut self, read: &ReadToken, key: usize, observed: Option<i64>, what: &str) {
        let rf = self.rf.get(read.table).copied().unwrap_or(0);
        let rb = read.cl.block_for(rf);
        let promises = self
            .promises
            .get(&(read.table, key))
            .cloned()
            .unwrap_or_default();
        for p in promises {
            if p.since >= read.started {
                continue;
            }
            let Some(w) = self.writes.get(p.write) else {
                continue;
            };
            if p.replicas + rb <= rf {
                self.stats.not_overlapping += 1;
                continue;
            }
            let lost = if self.ignore_losses {
                0
            } else {
                w.lost_on.len()
            };
            if p.replicas.saturating_sub(lost) + rb <= rf {
                self.stats.excused_by_loss += 1;
                continue;
            }
            match p.origin {
                Origin::Acked(_) => self.stats.guarantees_checked += 1,
                Origin::Read(..) => self.stats.monotonic_checked += 1,
            }
            if observed.is_none_or(|ts| ts < w.ts) {
                let (wts, lost_on) = (w.ts, w.lost_on.clone());
                let why = match p.origin {
                    Origin::Acked(cl) => format!("was acknowledged at {}", cl.name()),
                    Origin::Read(n, cl) => format!("was returned by read #{n} at {}", cl.name()),
                };
                self.violation(format!(
                    "{what}: key {key} returned ts {observed:?}, but write #{} (ts {wts}) {why} \
                     before the read began (RF {rf}, copies lost on nodes {lost_on:?})",
                    p.write
                ));
            }
        }
    }

    /// A crash of `node` destroyed a stored `fragment` (a write, or a read repair carrying
    /// one).
    pub fn record_loss(&mut self, node: usize, fragment: &[u8]) {
        let Ok(Some((id, _))) = stored_value(fragment) else {
            return;
        };
        if let Some(w) = self.writes.get_mut(id as usize) {
            if w.lost_on.insert(node) && matches!(w.outcome, Outcome::Acked { .. }) {
                self.stats.acked_copies_lost += 1;
            }
        }
    }

    /// `node` left the ring without handing its copies over (it was removed while dead):
    /// every write of `key` of `table` up to timestamp `ts` (the newest it stored) counts
    /// as lost on it.
    pub fn record_gone(&mut self, node: usize, table: usize, key: usize, ts: i64) {
        for w in &mut self.writes {
            if w.table == table
                && w.key == key
                && w.ts <= ts
                && w.lost_on.insert(node)
                && matches!(w.outcome, Outcome::Acked { .. })
            {
                self.stats.acked_copies_lost += 1;
            }
        }
    }

    /// After settling by `how`: every replica of key `key` of `table` holds `copies` (one
    /// per replica, `None` where absent); they must be identical.
    pub fn check_converged(
        &mut self,
        how: Settle,
        table: usize,
        key: usize,
        copies: &[(usize, Option<Vec<u8>>)],
    ) {
        self.stats.keys_converged += 1;
        let Some((_, first)) = copies.first() else {
            return;
        };
        if copies.iter().any(|(_, c)| c != first) {
            let held: Vec<(usize, Option<(usize, i64)>)> = copies
                .iter()
                .map(|(node, c)| {
                    let value = c
                        .as_deref()
                        .and_then(|b| stored_value(b).ok().flatten())
                        .map(|(id, ts)| (id as usize, ts));
                    (*node, value)
                })
                .collect();
            self.violation(format!(
                "after settling ({how:?}), replicas of table {table} key {key} differ: \
                 (node, (write, ts)) {held:?}"
            ));
        }
    }

    /// Records a violation found outside the history (liveness, the network's codec).
    pub fn fail(&mut self, text: String) {
        self.violation(text);
    }

    /// The invariants broken so far.
    pub fn violations(&self) -> &[String] {
        &self.violations
    }

    /// What happened.
    pub fn stats(&self) -> &Stats {
        &self.stats
    }

    /// A digest of every event and answer, in order.
    pub fn history_hash(&self) -> u64 {
        self.history.digest()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ConsistencyLevel as C;

    fn checker() -> Checker {
        Checker::new(vec![3], vec![b"k0".to_vec(), b"k1".to_vec()], false)
    }

    fn answer(c: &Checker, key: usize, fragment: Option<Vec<u8>>) -> Answer<Entries> {
        let entries = fragment
            .map(|f| vec![(c.engine_key(key).to_vec(), f)])
            .unwrap_or_default();
        Some(Ok((entries, true)))
    }

    #[test]
    fn a_quorum_write_missing_from_a_later_quorum_read_is_a_violation() {
        let mut c = checker();
        let (old, _, old_bytes) = c.begin_write(0, 0, C::Quorum, 10);
        c.end_write(old, Some(Ok(())), 11);
        let (new, _, _) = c.begin_write(0, 0, C::Quorum, 12);
        c.end_write(new, Some(Ok(())), 13);
        let r = c.begin_read(0, vec![0], 1, C::Quorum, 14);
        c.end_read(&r, answer(&c, 0, Some(old_bytes.clone())), 15);
        assert_eq!(c.violations().len(), 1, "{:?}", c.violations());
        // At ONE the levels do not overlap: allowed.
        let r = c.begin_read(0, vec![0], 1, C::One, 16);
        c.end_read(&r, answer(&c, 0, Some(old_bytes)), 17);
        assert_eq!(c.violations().len(), 1);
        // Two writes and the first read's value, none overlapping ONE at RF 3.
        assert_eq!(c.stats().not_overlapping, 3);
    }

    #[test]
    fn a_value_one_quorum_read_returned_must_not_vanish_from_the_next() {
        let mut c = checker();
        // Never acknowledged (the coordinator timed out), but a QUORUM read saw it.
        let (w, _, bytes) = c.begin_write(0, 0, C::One, 10);
        c.end_write(
            w,
            Some(Err(ClusterError::UnknownTable(mosaic_types::TableId(
                [0; 16],
            )))),
            11,
        );
        let r = c.begin_read(0, vec![0], 1, C::Quorum, 12);
        c.end_read(&r, answer(&c, 0, Some(bytes)), 13);
        assert!(c.violations().is_empty());
        let r = c.begin_read(0, vec![0], 1, C::One, 14);
        c.end_read(&r, answer(&c, 0, None), 15);
        assert!(
            c.violations().is_empty(),
            "QUORUM + ONE do not overlap at RF 3"
        );
        let r = c.begin_read(0, vec![0], 1, C::All, 16);
        c.end_read(&r, answer(&c, 0, None), 17);
        assert_eq!(c.violations().len(), 1, "{:?}", c.violations());
        assert_eq!(c.stats().monotonic_checked, 1);
    }

    #[test]
    fn reads_racing_a_write_or_after_its_loss_are_not_held_to_it() {
        let mut c = checker();
        let (w, _, _) = c.begin_write(0, 1, C::Quorum, 10);
        let r = c.begin_read(0, vec![1], 1, C::Quorum, 11);
        c.end_write(w, Some(Ok(())), 12);
        c.end_read(&r, answer(&c, 1, None), 13);
        assert!(c.violations().is_empty());
        // One of three acknowledging copies lost: ALL (3) − 1 + ONE (1) no longer
        // exceeds RF 3…
        let (all, _, bytes) = c.begin_write(0, 0, C::All, 14);
        c.end_write(all, Some(Ok(())), 15);
        c.record_loss(2, &bytes);
        let r = c.begin_read(0, vec![0], 1, C::One, 16);
        c.end_read(&r, answer(&c, 0, None), 17);
        assert!(c.violations().is_empty(), "{:?}", c.violations());
        assert_eq!(c.stats().excused_by_loss, 1);
        // …but 3 − 1 + QUORUM (2) does.
        let r = c.begin_read(0, vec![0], 1, C::Quorum, 18);
        c.end_read(&r, answer(&c, 0, None), 19);
        assert_eq!(c.violations().len(), 1);
    }

    #[test]
    fn invented_values_and_divergent_replicas_are_violations() {
        let mut c = checker();
        let (w, ts, bytes) = c.begin_write(0, 0, C::One, 10);
        c.end_write(
            w,
            Some(Err(ClusterError::UnknownTable(mosaic_types::TableId(
                [0; 16],
            )))),
            11,
        );
        // Written (though failed), so allowed; under another key it was never written.
        let r = c.begin_read(0, vec![0, 1], 10, C::One, 12);
        let entries = vec![(c.engine_key(1).to_vec(), bytes.clone())];
        c.end_read(&r, Some(Ok((entries, true))), 13);
        assert_eq!(c.violations().len(), 1);
        let mut forged = Fragment::new(FragmentKind::Row);
        forged.cells.insert(
            COLUMN,
            Cell::Live {
                ts: Timestamp(ts + 1),
                value: (w as u64).to_be_bytes().to_vec(),
                expiry: None,
            },
        );
        let r = c.begin_read(0, vec![0], 1, C::One, 14);
        c.end_read(&r, answer(&c, 0, Some(forged.encode())), 15);
        assert_eq!(c.violations().len(), 2);
        c.check_converged(
            Settle::ReadAtAll,
            0,
            0,
            &[(0, Some(bytes.clone())), (1, None)],
        );
        assert_eq!(c.violations().len(), 3);
        c.check_converged(
            Settle::ReadAtAll,
            0,
            0,
            &[(0, Some(bytes.clone())), (1, Some(bytes))],
        );
        assert_eq!(c.violations().len(), 3);
    }

    #[test]
    fn a_truncated_range_read_speaks_only_for_keys_up_to_its_last_entry() {
        let mut c = checker();
        let (w1, _, _) = c.begin_write(0, 1, C::All, 10);
        c.end_write(w1, Some(Ok(())), 11);
        let (w0, _, b0) = c.begin_write(0, 0, C::All, 12);
        c.end_write(w0, Some(Ok(())), 13);
        // k0 < k1: an answer holding only k0 that is not exhausted says nothing of k1…
        let entries = vec![(c.engine_key(0).to_vec(), b0)];
        let r = c.begin_read(0, vec![0, 1], 1, C::One, 14);
        c.end_read(&r, Some(Ok((entries.clone(), false))), 15);
        assert!(c.violations().is_empty(), "{:?}", c.violations());
        // …but an exhausted one claims k1 is empty.
        let r = c.begin_read(0, vec![0, 1], 2, C::One, 16);
        c.end_read(&r, Some(Ok((entries, true))), 17);
        assert_eq!(c.violations().len(), 1);
    }
}
