//! An in-memory [`Store`] with a durability model.
//!
//! Owns one node's tables as sorted maps of merged fragments (engine key → the row
//! layer's merge of every fragment written to it, as `mosaic_cql::memory` keeps them), a
//! schema (a fixed set of tables whose version changes move through the cluster), and
//! what a crash leaves behind. Under [`Durability::SyncPerWrite`] every
//! write is durable when acknowledged. Under [`Durability::Periodic`] writes since the last
//! [`SimStore::sync`] are a log tail that a lossy crash truncates at a seeded point — the
//! writes in the lost suffix are returned so the checker can discount the guarantees they
//! carried. The store outlives the node: a restarted node is built over the same store.
//! [`SimStore::with_disk`] keeps the tables in real replica stores instead
//! ([`crate::disk`]: power losses, and the sync mode's promise checked at each crash);
//! hints, Paxos state and the schema stay here, durable at once, either way.

use std::collections::BTreeMap;
use std::sync::Arc;

use futures::future::{BoxFuture, FutureExt};
use mosaic_cluster::env::{Entries, Hint};
use mosaic_cluster::message::Tag;
use mosaic_cluster::paxos::PaxosState;
use mosaic_cluster::{Endpoint, Failure, SchemaSnapshot, Store, TableKey, WireMutation};
use mosaic_rows::{merge_fragments, Fragment, KeyRange};
use parking_lot::Mutex;

use crate::config::Durability;
use crate::disk::Disk;
use crate::executor::{Executor, Sleep};
use crate::prng::Prng;

/// One table: engine key → merged fragment.
pub type Table = BTreeMap<Vec<u8>, Vec<u8>>;

/// Every table of a node.
pub type Tables = BTreeMap<TableKey, Table>;

/// The id of the simulated schema's `index`th table.
pub fn table_key(index: usize) -> TableKey {
    let mut id = [0u8; 16];
    id[0] = 0x5e;
    id[15] = index as u8;
    mosaic_types::TableId(id)
}

/// The simulated schema at `epoch`.
fn schema_of(epoch: u64) -> SchemaSnapshot {
    let mut version = [0x5e; 16];
    version[8..].copy_from_slice(&epoch.to_be_bytes());
    SchemaSnapshot {
        epoch,
        version,
        bytes: epoch.to_be_bytes().to_vec(),
    }
}

struct State {
    live: Tables,
    durable: Tables,
    /// Writes applied to `live` since the last sync, oldest first.
    unsynced: Vec<(TableKey, WireMutation)>,
}

/// One target's hints: id → (table, writes).
type HintLog = BTreeMap<u64, (TableKey, Vec<WireMutation>)>;

/// A node's store (see the module doc).
pub struct SimStore {
    state: Mutex<State>,
    /// The tables in real replica stores over a crashing file system, when the run asks
    /// for them ([`crate::disk`]); else in `state`.
    disk: Option<Mutex<Disk>>,
    rf: BTreeMap<TableKey, usize>,
    durability: Durability,
    latency: Option<Latency>,
    /// Durable at once, as DDL is.
    schema: Mutex<SchemaSnapshot>,
    /// Hints for other nodes, by target then id; durable at once (the server's hint store
    /// shares the tables' WAL; the simulation keeps them simple and loses none).
    hints: Mutex<BTreeMap<Endpoint, HintLog>>,
    next_hint: std::sync::atomic::AtomicU64,
    /// Reads served (for the routing scenarios: which replicas a policy chose).
    reads: std::sync::atomic::AtomicU64,
    /// Paxos state by (table, partition); durable at once (a promise or acceptance a crash
    /// forgot would break Paxos's guarantees, so the server keeps it as durably as its
    /// writes, and a simulated node that lost it would be checked against a guarantee
    /// the server does not claim under periodic sync).
    paxos: Mutex<BTreeMap<(TableKey, Vec<u8>), PaxosState>>,
}

/// How long reads and writes take: a seeded delay before the work, which then happens
/// at once (a crash during the delay means it never happened).
struct Latency {
    exec: Arc<Executor>,
    rng: Mutex<Prng>,
    max_us: u64,
}

/// Merges `mutation` into `table`.
fn merge_into(table: &mut Table, mutation: &WireMutation) -> Result<(), Failure> {
    let undecodable = |e| Failure::Storage(format!("undecodable fragment: {e}"));
    let new = Fragment::decode(&mutation.fragment).map_err(undecodable)?;
    let merged = match table.get(&mutation.key) {
        Some(old) => merge_fragments(&Fragment::decode(old).map_err(undecodable)?, &new),
        None => new,
    };
    table.insert(mutation.key.clone(), merged.encode());
    Ok(())
}

impl SimStore {
    /// An empty store whose tables have replication factors `rf` (table `i` is
    /// [`table_key`]`(i)`).
    pub fn new(rf: &[usize], durability: Durability) -> SimStore {
        let tables: Tables = (0..rf.len())
            .map(|i| (table_key(i), Table::new()))
            .collect();
        SimStore {
            state: Mutex::new(State {
                live: tables.clone(),
                durable: tables,
                unsynced: Vec::new(),
            }),
            rf: rf
                .iter()
                .enumerate()
                .map(|(i, rf)| (table_key(i), *rf))
                .collect(),
            durability,
            latency: None,
            disk: None,
            schema: Mutex::new(schema_of(1)),
            hints: Mutex::new(BTreeMap::new()),
            next_hint: std::sync::atomic::AtomicU64::new(1),
            reads: std::sync::atomic::AtomicU64::new(0),
            paxos: Mutex::new(BTreeMap::new()),
        }
    }

    /// The same store keeping its tables on `disk` instead of in memory.
    pub fn with_disk(self, disk: Disk) -> SimStore {
        SimStore {
            disk: Some(Mutex::new(disk)),
            ..self
        }
    }

    /// The layout of the store's tables on disk, `None` in memory.
    pub fn layout(&self) -> Option<mosaic_types::Layout> {
        self.disk.as_ref().map(|d| d.lock().layout())
    }

    /// A crash: a lossy one (a power loss) loses what the durability allows, drawn from
    /// `rng`; returns the writes lost (see [`SimStore::crash`] and [`Disk::crash`]).
    pub fn crash_node(&self, lossy: bool, rng: &mut Prng) -> Vec<(TableKey, WireMutation)> {
        if let Some(d) = &self.disk {
            return d.lock().crash(lossy, rng);
        }
        self.crash(|n| {
            if lossy {
                rng.below(n as u64 + 1) as usize
            } else {
                n
            }
        })
    }

    /// What the store on disk went through (zero in memory).
    pub fn disk_stats(&self) -> crate::disk::DiskStats {
        self.disk
            .as_ref()
            .map(|d| d.lock().stats())
            .unwrap_or_default()
    }

    /// Broken storage promises found at crashes (on disk only), taken.
    pub fn take_violations(&self) -> Vec<String> {
        self.disk
            .as_ref()
            .map(|d| d.lock().take_violations())
            .unwrap_or_default()
    }

    /// Reads this store has served.
    pub fn reads_served(&self) -> u64 {
        self.reads.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// A schema change made on this node (the table set stays; only the version moves):
    /// the next epoch, with a version digest that differs per node, so concurrent changes
    /// on two nodes race and the larger `(epoch, version)` must win everywhere.
    pub fn change_schema(&self, node: usize) -> SchemaSnapshot {
        let mut schema = self.schema.lock();
        let mut next = schema_of(schema.epoch + 1);
        next.version[1] = node as u8;
        *schema = next.clone();
        next
    }

    /// The same store, each read and write taking up to `max_us` (drawn from `rng`).
    pub fn with_latency(self, exec: Arc<Executor>, rng: Prng, max_us: u64) -> SimStore {
        SimStore {
            latency: Some(Latency {
                exec,
                rng: Mutex::new(rng),
                max_us,
            }),
            ..self
        }
    }

    fn delay(&self) -> Option<Sleep> {
        let l = self.latency.as_ref()?;
        let us = l.rng.lock().between(0, l.max_us);
        Some(l.exec.sleep(us))
    }

    /// Makes every write so far durable.
    pub fn sync(&self) {
        if let Some(d) = &self.disk {
            d.lock().sync();
            return;
        }
        let mut s = self.state.lock();
        let State {
            durable, unsynced, ..
        } = &mut *s;
        for (table, m) in unsynced.drain(..) {
            if let Some(t) = durable.get_mut(&table) {
                // These bytes were accepted by `apply`, so they decode.
                let merged = merge_into(t, &m);
                debug_assert!(merged.is_ok());
            }
        }
    }

    /// Writes not yet durable.
    pub fn unsynced_len(&self) -> usize {
        if let Some(d) = &self.disk {
            return d.lock().unsynced_len();
        }
        self.state.lock().unsynced.len()
    }

    /// A crash: keeps the durable state plus the first `keep(n)` of the `n` unsynced
    /// writes, and returns the writes lost. What is kept is durable from now on (recovery
    /// replayed it).
    pub fn crash(&self, keep: impl FnOnce(usize) -> usize) -> Vec<(TableKey, WireMutation)> {
        let mut s = self.state.lock();
        let n = s.unsynced.len();
        let kept = keep(n).min(n);
        let lost = s.unsynced.split_off(kept);
        drop(s);
        self.sync();
        let mut s = self.state.lock();
        s.live = s.durable.clone();
        lost
    }

    fn apply_now(&self, table: TableKey, mutations: Vec<WireMutation>) -> Result<(), Failure> {
        if let Some(d) = &self.disk {
            return d.lock().apply(table, mutations);
        }
        let mut s = self.state.lock();
        let State {
            live,
            durable,
            unsynced,
        } = &mut *s;
        let t = live.get_mut(&table).ok_or(Failure::UnknownTable)?;
        // Decode everything first: a batch with a bad fragment is refused whole.
        for m in &mutations {
            Fragment::decode(&m.fragment)
                .map_err(|e| Failure::Storage(format!("undecodable fragment: {e}")))?;
        }
        for m in &mutations {
            merge_into(t, m)?;
        }
        match self.durability {
            Durability::SyncPerWrite => {
                if let Some(d) = durable.get_mut(&table) {
                    for m in &mutations {
                        merge_into(d, m)?;
                    }
                }
            }
            Durability::Periodic { .. } => {
                unsynced.extend(mutations.into_iter().map(|m| (table, m)));
            }
        }
        Ok(())
    }

    fn read_now(
        &self,
        table: TableKey,
        range: &KeyRange,
        limit: usize,
    ) -> Result<Entries, Failure> {
        if let Some(d) = &self.disk {
            return d.lock().read(table, range, limit);
        }
        let s = self.state.lock();
        let t = s.live.get(&table).ok_or(Failure::UnknownTable)?;
        let mut entries = Vec::new();
        let mut exhausted = true;
        for (k, v) in t.range(range.start.clone()..) {
            if range.end.as_ref().is_some_and(|e| k >= e) {
                break;
            }
            if entries.len() == limit {
                exhausted = false;
                break;
            }
            entries.push((k.clone(), v.clone()));
        }
        Ok((entries, exhausted))
    }

    /// Every table's contents (what the convergence check compares).
    pub fn tables(&self) -> Tables {
        if let Some(d) = &self.disk {
            return d.lock().tables();
        }
        self.state.lock().live.clone()
    }
}

impl Store for SimStore {
    fn apply(
        &self,
        table: TableKey,
        mutations: Vec<WireMutation>,
    ) -> BoxFuture<'_, Result<(), Failure>> {
        let delay = self.delay();
        async move {
            if let Some(d) = delay {
                d.await;
            }
            self.apply_now(table, mutations)
        }
        .boxed()
    }

    fn read(
        &self,
        table: TableKey,
        range: KeyRange,
        limit: usize,
        _tags: &[Tag],
    ) -> BoxFuture<'_, Result<Entries, Failure>> {
        let delay = self.delay();
        async move {
            if let Some(d) = delay {
                d.await;
            }
            self.reads.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            self.read_now(table, &range, limit)
        }
        .boxed()
    }

    fn truncate(&self, table: TableKey) -> BoxFuture<'_, Result<(), Failure>> {
        if self.disk.is_some() {
            // The simulated workload never truncates; a store on disk would have to drop
            // and recreate its table's directory, which the server's store does.
            return async {
                Err(Failure::Storage(
                    "the simulator's store on disk does not model TRUNCATE".to_owned(),
                ))
            }
            .boxed();
        }
        let mut guard = self.state.lock();
        let s = &mut *guard;
        for tables in [&mut s.live, &mut s.durable] {
            if let Some(t) = tables.get_mut(&table) {
                t.clear();
            }
        }
        s.unsynced.retain(|(t, _)| *t != table);
        drop(guard);
        self.paxos.lock().retain(|(t, _), _| *t != table);
        async { Ok(()) }.boxed()
    }

    /// The simulated workload writes no counters (the server's counter path is checked
    /// through real nodes): a counter write reaching a simulated replica fails as a
    /// storage error would, so a workload that starts sending them is told at once.
    fn counter_shards(
        &self,
        _table: TableKey,
        _increments: Vec<mosaic_cluster::message::WireCounter>,
    ) -> BoxFuture<'_, Result<Vec<WireMutation>, Failure>> {
        async {
            Err(Failure::Storage(
                "the simulator's store does not model counters".to_owned(),
            ))
        }
        .boxed()
    }

    fn paxos_state(
        &self,
        table: TableKey,
        partition: Vec<u8>,
    ) -> BoxFuture<'_, Result<Option<PaxosState>, Failure>> {
        let state = self.paxos.lock().get(&(table, partition)).cloned();
        async move { Ok(state) }.boxed()
    }

    fn save_paxos_state(
        &self,
        table: TableKey,
        partition: Vec<u8>,
        state: PaxosState,
    ) -> BoxFuture<'_, Result<(), Failure>> {
        self.paxos.lock().insert((table, partition), state);
        async { Ok(()) }.boxed()
    }

    fn paxos_summaries(
        &self,
        table: TableKey,
        range: KeyRange,
        after: Option<Vec<u8>>,
        limit: usize,
    ) -> BoxFuture<'_, Result<mosaic_cluster::env::PaxosSummaryPage, Failure>> {
        let page = {
            let states = self.paxos.lock();
            let mut entries: Vec<_> = states
                .iter()
                .filter(|((t, p), _)| {
                    *t == table && range.contains(p) && after.as_ref().is_none_or(|a| p > a)
                })
                .take(limit.saturating_add(1))
                .map(|((_, p), s)| s.summary(p.clone()))
                .collect();
            let next = (entries.len() > limit).then(|| {
                entries.truncate(limit);
                entries.last().map(|s| s.partition.clone())
            });
            (entries, next.flatten())
        };
        async move { Ok(page) }.boxed()
    }

    fn store_hint(
        &self,
        target: Endpoint,
        table: TableKey,
        mutations: Vec<WireMutation>,
    ) -> BoxFuture<'_, Result<(), Failure>> {
        let id = self
            .next_hint
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        self.hints
            .lock()
            .entry(target)
            .or_default()
            .insert(id, (table, mutations));
        async { Ok(()) }.boxed()
    }

    fn hints(&self, target: Endpoint, limit: usize) -> BoxFuture<'_, Result<Vec<Hint>, Failure>> {
        let out: Vec<Hint> = self
            .hints
            .lock()
            .get(&target)
            .map(|h| {
                h.iter()
                    .take(limit)
                    .map(|(id, (table, mutations))| Hint {
                        id: *id,
                        table: *table,
                        mutations: mutations.clone(),
                    })
                    .collect()
            })
            .unwrap_or_default();
        async move { Ok(out) }.boxed()
    }

    fn delete_hint(&self, target: Endpoint, id: u64) -> BoxFuture<'_, Result<(), Failure>> {
        let mut hints = self.hints.lock();
        if let Some(h) = hints.get_mut(&target) {
            h.remove(&id);
            if h.is_empty() {
                hints.remove(&target);
            }
        }
        async { Ok(()) }.boxed()
    }

    fn hint_targets(&self) -> Vec<Endpoint> {
        self.hints.lock().keys().copied().collect()
    }

    fn schema_version(&self) -> [u8; 16] {
        self.schema.lock().version
    }

    fn replication_factor(&self, table: TableKey) -> Option<usize> {
        self.rf.get(&table).copied()
    }

    fn schema(&self) -> SchemaSnapshot {
        self.schema.lock().clone()
    }

    fn adopt_schema(&self, snapshot: SchemaSnapshot) -> BoxFuture<'_, Result<bool, String>> {
        let mut schema = self.schema.lock();
        let adopted = snapshot.supersedes(&schema);
        if adopted {
            *schema = snapshot;
        }
        async move { Ok(adopted) }.boxed()
    }

    fn load_bytes(&self) -> u64 {
        if let Some(d) = &self.disk {
            return d.lock().load_bytes();
        }
        let s = self.state.lock();
        s.live
            .values()
            .flat_map(|t| t.iter())
            .map(|(k, v)| (k.len() + v.len()) as u64)
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mosaic_rows::{Cell, ColumnId, FragmentKind};
    use mosaic_types::Timestamp;

    /// The store's futures are ready at once.
    fn block_on<T>(mut f: BoxFuture<'_, T>) -> T {
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        match f.as_mut().poll(&mut cx) {
            std::task::Poll::Ready(v) => v,
            std::task::Poll::Pending => panic!("the in-memory store never waits"),
        }
    }

    fn write(key: &[u8], ts: i64, value: u8) -> WireMutation {
        let mut f = Fragment::new(FragmentKind::Row);
        f.cells.insert(
            ColumnId(0),
            Cell::Live {
                ts: Timestamp(ts),
                value: vec![value],
                expiry: None,
            },
        );
        WireMutation {
            key: key.to_vec(),
            ts: ts as u64,
            fragment: f.encode(),
        }
    }

    fn value(store: &SimStore, key: &[u8]) -> Option<Vec<u8>> {
        let t = store.tables();
        let bytes = t.get(&table_key(0))?.get(key)?.clone();
        match Fragment::decode(&bytes).ok()?.cells.get(&ColumnId(0))? {
            Cell::Live { value, .. } => Some(value.clone()),
            Cell::Tombstone { .. } => None,
        }
    }

    #[test]
    fn a_lossy_crash_loses_the_unsynced_suffix_only() {
        let s = SimStore::new(
            &[1],
            Durability::Periodic {
                interval_ms: 10,
                lossy: true,
            },
        );
        let t = table_key(0);
        block_on(s.apply(t, vec![write(b"a", 1, 1)])).expect("apply");
        s.sync();
        block_on(s.apply(t, vec![write(b"a", 3, 3), write(b"b", 2, 2)])).expect("apply");
        // The older timestamp arrives later and loses the merge.
        block_on(s.apply(t, vec![write(b"a", 2, 9)])).expect("apply");
        assert_eq!(value(&s, b"a"), Some(vec![3]));
        assert_eq!(s.unsynced_len(), 3);
        let lost = s.crash(|n| n - 2);
        assert_eq!(lost.len(), 2);
        assert_eq!(value(&s, b"a"), Some(vec![3]));
        let lost = s.crash(|_| 0);
        assert!(lost.is_empty());
        block_on(s.apply(t, vec![write(b"c", 5, 5)])).expect("apply");
        assert_eq!(s.crash(|_| 0).len(), 1);
        assert_eq!(value(&s, b"c"), None);
        assert_eq!(value(&s, b"a"), Some(vec![3]));
    }

    #[test]
    fn sync_per_write_survives_any_crash() {
        let s = SimStore::new(&[1], Durability::SyncPerWrite);
        block_on(s.apply(table_key(0), vec![write(b"k", 1, 7)])).expect("apply");
        assert!(s.crash(|_| 0).is_empty());
        assert_eq!(value(&s, b"k"), Some(vec![7]));
        assert!(matches!(
            block_on(s.apply(table_key(3), vec![write(b"k", 1, 7)])),
            Err(Failure::UnknownTable)
        ));
    }

    #[test]
    fn a_newer_schema_is_adopted_and_an_older_one_is_not() {
        let a = SimStore::new(&[1], Durability::SyncPerWrite);
        let b = SimStore::new(&[1], Durability::SyncPerWrite);
        let from_a = a.change_schema(0);
        let from_b = b.change_schema(1);
        // Same epoch, different versions: the larger version (node 1's) wins on both.
        assert_eq!(block_on(a.adopt_schema(from_b.clone())), Ok(true));
        assert_eq!(block_on(b.adopt_schema(from_a)), Ok(false));
        assert_eq!(block_on(b.adopt_schema(from_b.clone())), Ok(false));
        assert_eq!(a.schema(), from_b);
        assert_eq!(b.schema(), from_b);
        let win = from_b;
        a.crash(|_| 0);
        assert_eq!(a.schema(), win);
    }
}
