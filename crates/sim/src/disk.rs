//! A node's tables in real `mosaic-replica` stores over a simulated power-loss file system.
//!
//! Owns one node's storage as the server builds it: one node [`Engine`] (a shared WAL and
//! group commit) with one [`ReplicaStore`] per table in the node's [`Layout`], over a
//! [`CrashFs`] that keeps only what was fsynced. Each write's role (primary, or a redundant
//! copy of the token's primary) follows from the ring, as `mosaic-server`'s store decides
//! it; the ring never changes in a simulated run, so it is built once from every node's
//! tokens. The engine runs in manual mode: no thread, no clock — flushes and compactions
//! run right after each write that makes them due (and inline in a write that would stall),
//! so a seed replays them exactly.
//!
//! **What a crash does.** A lossy crash is a power loss: the store reopens over
//! [`CrashFs::image`] — only fsynced bytes and directory entries, and maybe a torn prefix
//! of each file's unsynced tail (drawn from the crash's seed). A lossless crash (a process
//! crash) reopens over the same file system, page cache intact.
//!
//! **What it checks, and what it reports.** The sync mode's promise, per write and node:
//! under per-write sync every acknowledged write is durable; under periodic sync (the
//! simulator calls [`Disk::sync`] every interval, as the engine's sync thread would) every
//! write applied before the last sync is. After each crash the store is read back:
//! a write it held durably that is gone (its key holds an older timestamp, or nothing) is
//! a storage bug, reported as a violation; a write applied since the last sync that is
//! gone is a loss the promise allows, returned so the checker discounts the copies it
//! destroyed. What survived is durable from then on (it is in synced files now), so a later
//! crash that loses it is a bug too.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use mosaic_cluster::env::Entries;
use mosaic_cluster::{Endpoint, Failure, Ring, TableKey, WireMutation};
use mosaic_env::{Clock, CrashFs};
use mosaic_lsm::{Engine, EngineOptions, Options, SyncMode, WriteBatch};
use mosaic_replica::{KeyOrders, Layout, LogSettings, ReplicaStore, RingRanges, Role, SourceId};
use mosaic_rows::{KeyRange, KeySchema, RowMerge};
use mosaic_types::Token;

use crate::checker::stored_value;
use crate::config::Durability;
use crate::executor::Executor;
use crate::prng::Prng;

/// The engine's root on every node's file system.
const ROOT: &str = "/node";

/// The layouts a node's stores may have, each as the server opens it.
///
/// Two parts of layouts are not exercised. `erasure-tiered` runs its per-source trees and
/// its coding state's files (opened and recovered at every crash), but not the coding
/// itself: ELECT's stripes are built by the cluster's coding protocol across nodes (the
/// `ec_*` methods of `mosaic_cluster::Store`, which only the server's store serves, with a
/// cold-tier object store behind it), so a simulated node never codes — a table without
/// coding is exactly what an erasure-tiered table is until its first stripe. And
/// `heterogeneous` keeps one tree per replica index, but every tree in the declared order:
/// the simulated rows have no clustering columns to re-order.
pub const LAYOUTS: [Layout; 5] = [
    Layout::Uniform,
    Layout::MultiLsm,
    Layout::Decoupled,
    Layout::Heterogeneous,
    Layout::ErasureTiered,
];

/// The engine's wall clock: the simulator's virtual one.
struct VirtualClock(Arc<Executor>);

impl Clock for VirtualClock {
    fn now_micros(&self) -> u64 {
        self.0.now_micros()
    }

    fn monotonic_micros(&self) -> u64 {
        self.0.now_micros()
    }
}

/// How small the engine's structures are, drawn per node so tiny workloads still flush,
/// compact, split logs and rotate WAL files.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shape {
    /// Memtable size before it is frozen and flushed.
    pub memtable_size_bytes: usize,
    /// A WAL file is closed and a new one started past this size.
    pub wal_file_bytes: u64,
    /// Level-0 tables (log segments) that trigger a compaction (split).
    pub level0_trigger: usize,
}

impl Shape {
    /// A shape drawn from `rng`.
    pub fn draw(rng: &mut Prng) -> Shape {
        Shape {
            memtable_size_bytes: rng.between(1 << 10, 8 << 10) as usize,
            wal_file_bytes: rng.between(4 << 10, 32 << 10),
            level0_trigger: rng.between(2, 4) as usize,
        }
    }
}

/// What the stores on disk went through, summed over a run's nodes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DiskStats {
    /// Crashes that were power losses (the store reopened over a crash image).
    pub power_losses: u64,
    /// Crashes that were process crashes (the same file system reopened).
    pub process_crashes: u64,
    /// Memtables flushed.
    pub flushes: u64,
    /// Compactions and log splits.
    pub compactions: u64,
    /// WAL syncs.
    pub wal_syncs: u64,
    /// Writes a crash lost that the sync mode allowed to be lost (one per write and node).
    pub writes_lost: u64,
}

impl DiskStats {
    /// Adds `other`.
    pub fn add(&mut self, other: &DiskStats) {
        self.power_losses += other.power_losses;
        self.process_crashes += other.process_crashes;
        self.flushes += other.flushes;
        self.compactions += other.compactions;
        self.wal_syncs += other.wal_syncs;
        self.writes_lost += other.writes_lost;
    }
}

/// Where this node stands on the ring: its roles.
struct Place {
    ring: Ring,
    me: Endpoint,
    hosts: BTreeMap<Endpoint, SourceId>,
}

impl Place {
    /// This node's role for `token` in a table of replication factor `rf`: primary at
    /// index 0 of the replica list, a redundant copy of the primary's data after it (a
    /// node that is not a replica, receiving a hint or a repair, stores as a primary).
    fn role(&self, token: Token, rf: usize) -> Role {
        self.role_in(&self.ring.replicas(token, rf))
    }

    /// The role of `key` (a key without a token is stored as a primary copy).
    fn role_of_key(&self, key: &[u8], rf: usize) -> Role {
        match mosaic_rows::decode_token(key) {
            Ok(token) => self.role(token, rf),
            Err(_) => Role::Primary,
        }
    }

    /// `range` split where this node's role changes, in key order.
    fn pieces(&self, range: &KeyRange, rf: usize) -> Vec<(KeyRange, Role)> {
        let mut out: Vec<(KeyRange, Role)> = Vec::new();
        for segment in self.ring.segments(range, rf) {
            let role = self.role_in(&segment.replicas);
            match out.last_mut() {
                Some((last, r))
                    if *r == role && last.end.as_ref() == Some(&segment.range.start) =>
                {
                    last.end = segment.range.end;
                }
                _ => out.push((segment.range, role)),
            }
        }
        out
    }

    /// This node's role in a token's `replicas`, primary first.
    fn role_in(&self, replicas: &[Endpoint]) -> Role {
        Role::in_replicas(replicas, &self.me, |primary| {
            self.hosts
                .get(primary)
                .copied()
                .unwrap_or(SourceId([0; 16]))
        })
    }
}

/// The open engine and stores.
struct Open {
    engine: Engine,
    stores: BTreeMap<TableKey, ReplicaStore>,
}

/// One node's disk (see the module doc).
pub struct Disk {
    layout: Layout,
    shape: Shape,
    /// The engine's sync mode.
    sync_mode: SyncMode,
    /// What the durability promises, checked at crashes: the engine's sync mode, but for
    /// a store opened [`Disk::without_fsync`].
    promise: SyncMode,
    fs: CrashFs,
    clock: Arc<dyn Clock>,
    place: Place,
    rf: BTreeMap<TableKey, usize>,
    open: Option<Open>,
    /// Writes applied since the last sync, oldest first (periodic sync only).
    unsynced: Vec<(TableKey, WireMutation)>,
    /// Per key, the newest timestamp the store holds durably: after a crash it must hold
    /// this one or a newer.
    floor: BTreeMap<(TableKey, Vec<u8>), i64>,
    /// Broken promises found at crashes.
    violations: Vec<String>,
    /// What happened before the current incarnation (engine counters restart at open).
    stats: DiskStats,
}

/// An engine error as a replica's failure.
fn storage(e: impl std::fmt::Display) -> Failure {
    Failure::Storage(e.to_string())
}

/// The timestamp of the simulated write a stored fragment holds (`i64::MIN` for none).
fn ts_of(fragment: &[u8]) -> i64 {
    match stored_value(fragment) {
        Ok(Some((_, ts))) => ts,
        _ => i64::MIN,
    }
}

impl Disk {
    /// Node `me`'s disk in `layout`, for tables `rf`, on the ring of `tokens` (node `j`
    /// at `endpoints[j]` with host id `hosts[j]`), under `durability`.
    #[allow(clippy::too_many_arguments)] // One call site, each argument a different fact.
    pub fn open(
        layout: Layout,
        shape: Shape,
        durability: Durability,
        exec: Arc<Executor>,
        rf: BTreeMap<TableKey, usize>,
        me: Endpoint,
        nodes: &[(Endpoint, Vec<Token>, [u8; 16])],
    ) -> Result<Disk, String> {
        let ring = Ring::new(nodes.iter().map(|(e, t, _)| (*e, t.as_slice())));
        let hosts = nodes.iter().map(|(e, _, h)| (*e, SourceId(*h))).collect();
        let sync_mode = match durability {
            Durability::SyncPerWrite => SyncMode::PerWrite,
            Durability::Periodic { interval_ms, .. } => SyncMode::Periodic {
                interval_ms: interval_ms.max(1),
            },
        };
        let mut disk = Disk {
            layout,
            shape,
            sync_mode,
            promise: sync_mode,
            fs: CrashFs::new(),
            clock: Arc::new(VirtualClock(exec)),
            place: Place { ring, me, hosts },
            rf,
            open: None,
            unsynced: Vec::new(),
            floor: BTreeMap::new(),
            violations: Vec::new(),
            stats: DiskStats::default(),
        };
        disk.open = Some(
            disk.reopen()
                .map_err(|e| format!("opening the store: {e}"))?,
        );
        Ok(disk)
    }

    /// The same disk whose engine never syncs its WAL on its own (periodic sync, an hour
    /// apart) while the promise checked at crashes stays the durability's — a broken
    /// store, to show that acknowledged writes a power loss takes are caught.
    pub fn without_fsync(mut self) -> Result<Disk, String> {
        self.open = None;
        self.sync_mode = SyncMode::Periodic {
            interval_ms: 3_600_000,
        };
        self.open = Some(
            self.reopen()
                .map_err(|e| format!("reopening the store: {e}"))?,
        );
        Ok(self)
    }

    /// The node's layout.
    pub fn layout(&self) -> Layout {
        self.layout
    }

    fn table_dir(table: TableKey) -> PathBuf {
        let hex: String = table.0.iter().map(|b| format!("{b:02x}")).collect();
        Path::new(ROOT).join(format!("t-{hex}"))
    }

    /// Opens the engine and every table's store over the current file system.
    fn reopen(&self) -> mosaic_lsm::Result<Open> {
        let fs: Arc<dyn mosaic_env::Fs> = Arc::new(self.fs.clone());
        let engine = Engine::open(
            ROOT,
            EngineOptions {
                fs: fs.clone(),
                sync_mode: self.sync_mode,
                memtable_space_bytes: 0,
                block_cache_bytes: 0,
                // Manual mode: the simulator runs the engine's background work.
                flush_threads: 0,
                compaction_threads: 0,
                wal_file_bytes: self.shape.wal_file_bytes,
                ..EngineOptions::default()
            },
        )?;
        let options = Options {
            fs,
            clock: self.clock.clone(),
            engine: Some(engine.clone()),
            sync_mode: self.sync_mode,
            memtable_size_bytes: self.shape.memtable_size_bytes,
            block_cache_bytes: 0,
            level0_compaction_trigger: self.shape.level0_trigger,
            level0_slowdown_tables: self.shape.level0_trigger + 4,
            level0_stall_tables: self.shape.level0_trigger + 8,
            level1_size_bytes: 4 << 10,
            table_size_bytes: 2 << 10,
            merge_operator: Some(Arc::new(RowMerge)),
            table: mosaic_lsm::TableOptions {
                filter_prefix_bytes: mosaic_rows::key::TOKEN_LEN,
                ..mosaic_lsm::TableOptions::default()
            },
            ..Options::default()
        };
        let log = LogSettings {
            split_segments: self.shape.level0_trigger,
            runs_max: 2,
            ring: RingRanges::new(self.place.ring.tokens()),
        };
        let schema = KeySchema::new(vec![mosaic_types::CqlType::Blob], Vec::new())
            .map_err(|e| mosaic_lsm::Error::InvalidArgument(e.to_string()))?;
        let mut stores = BTreeMap::new();
        for table in self.rf.keys() {
            let keys = KeyOrders {
                schema: schema.clone(),
                orders: Vec::new(),
            };
            let store = ReplicaStore::open_with_keys(
                Self::table_dir(*table),
                self.layout,
                options.clone(),
                log.clone(),
                Some(keys),
            )?;
            stores.insert(*table, store);
        }
        Ok(Open { engine, stores })
    }

    fn opened(&self) -> Result<&Open, Failure> {
        self.open
            .as_ref()
            .ok_or_else(|| Failure::Storage("the store did not reopen after a crash".into()))
    }

    /// Applies `mutations` to `table` (one batch per role), then runs the background work
    /// the writes made due.
    pub fn apply(&mut self, table: TableKey, mutations: Vec<WireMutation>) -> Result<(), Failure> {
        let rf = self.rf.get(&table).copied().ok_or(Failure::UnknownTable)?;
        let open = self.opened()?;
        let store = open.stores.get(&table).ok_or(Failure::UnknownTable)?;
        let mut batches: Vec<(Role, WriteBatch)> = Vec::new();
        for m in &mutations {
            let role = self.place.role_of_key(&m.key, rf);
            match batches.iter_mut().find(|(r, _)| *r == role) {
                Some((_, b)) => b.merge_owned(m.key.clone(), m.ts, m.fragment.clone()),
                None => {
                    let mut b = WriteBatch::new();
                    b.merge_owned(m.key.clone(), m.ts, m.fragment.clone());
                    batches.push((role, b));
                }
            }
        }
        for (role, batch) in batches {
            store.write(role, batch).map_err(storage)?;
        }
        open.engine.run_background_work();
        match self.promise {
            SyncMode::Periodic { .. } => {
                self.unsynced
                    .extend(mutations.into_iter().map(|m| (table, m)));
            }
            _ => {
                for m in &mutations {
                    self.raise_floor(table, &m.key, ts_of(&m.fragment));
                }
            }
        }
        Ok(())
    }

    fn raise_floor(&mut self, table: TableKey, key: &[u8], ts: i64) {
        let floor = self.floor.entry((table, key.to_vec())).or_insert(i64::MIN);
        *floor = (*floor).max(ts);
    }

    /// Up to `limit` entries of `range` of `table`, each key read under its role.
    pub fn read(
        &self,
        table: TableKey,
        range: &KeyRange,
        limit: usize,
    ) -> Result<Entries, Failure> {
        let rf = self.rf.get(&table).copied().ok_or(Failure::UnknownTable)?;
        let store = self
            .opened()?
            .stores
            .get(&table)
            .ok_or(Failure::UnknownTable)?;
        let mut entries = Vec::new();
        for (piece, role) in self.place.pieces(range, rf) {
            for item in store.scan_filtered(role, &piece, None).map_err(storage)? {
                let (key, entry) = item.map_err(storage)?;
                if entries.len() == limit {
                    return Ok((entries, false));
                }
                entries.push((key, entry.value));
            }
        }
        Ok((entries, true))
    }

    /// The fragment `table` holds for `key`, read under its role.
    fn get(&self, table: TableKey, key: &[u8]) -> Result<Option<Vec<u8>>, Failure> {
        let rf = self.rf.get(&table).copied().ok_or(Failure::UnknownTable)?;
        let store = self
            .opened()?
            .stores
            .get(&table)
            .ok_or(Failure::UnknownTable)?;
        let role = self.place.role_of_key(key, rf);
        Ok(store.get(role, key).map_err(storage)?.map(|e| e.value))
    }

    /// Every table's contents (what the convergence check compares).
    pub fn tables(&self) -> BTreeMap<TableKey, BTreeMap<Vec<u8>, Vec<u8>>> {
        let everything = KeyRange {
            start: Vec::new(),
            end: None,
        };
        self.rf
            .keys()
            .map(|t| {
                let held = self
                    .read(*t, &everything, usize::MAX)
                    .map(|(e, _)| e.into_iter().collect())
                    .unwrap_or_default();
                (*t, held)
            })
            .collect()
    }

    /// Syncs the WAL: every write so far is durable.
    pub fn sync(&mut self) {
        let Some(open) = &self.open else {
            return;
        };
        if let Err(e) = open.engine.sync_wal() {
            self.violations.push(format!("syncing the WAL failed: {e}"));
            return;
        }
        for (table, m) in std::mem::take(&mut self.unsynced) {
            self.raise_floor(table, &m.key, ts_of(&m.fragment));
        }
    }

    /// Writes applied but not yet synced.
    pub fn unsynced_len(&self) -> usize {
        self.unsynced.len()
    }

    /// A crash (a power loss when `lossy`, its torn tails drawn from `rng`; else a
    /// process crash), then the store reopened over what survived. Returns the writes
    /// lost that the sync mode allowed to be lost; losses it did not allow are
    /// violations ([`Disk::take_violations`]).
    pub fn crash(&mut self, lossy: bool, rng: &mut Prng) -> Vec<(TableKey, WireMutation)> {
        self.stats = self.stats();
        if lossy {
            self.fs = self.fs.image(rng.next_u64());
            self.stats.power_losses += 1;
        } else {
            self.stats.process_crashes += 1;
        }
        // Closed only now: the old engine's final WAL sync reaches the old file system,
        // which the power loss already left behind.
        self.open = None;
        match self.reopen() {
            Ok(open) => self.open = Some(open),
            Err(e) => {
                self.violations.push(format!(
                    "the {} store does not reopen after a {} crash: {e}",
                    self.layout,
                    if lossy { "power-loss" } else { "process" }
                ));
                return Vec::new();
            }
        }
        let unsynced = std::mem::take(&mut self.unsynced);
        let mut survivors: Vec<(TableKey, Vec<u8>)> =
            unsynced.iter().map(|(t, m)| (*t, m.key.clone())).collect();
        let mut lost = Vec::new();
        for (table, m) in unsynced {
            match self.get(table, &m.key) {
                Ok(held) if held.as_deref().map_or(i64::MIN, ts_of) >= ts_of(&m.fragment) => {}
                Ok(_) => lost.push((table, m)),
                Err(e) => self
                    .violations
                    .push(format!("reading back after a crash: {e:?}")),
            }
        }
        let floors: Vec<((TableKey, Vec<u8>), i64)> =
            self.floor.iter().map(|(k, v)| (k.clone(), *v)).collect();
        for ((table, key), floor) in floors {
            let held = match self.get(table, &key) {
                Ok(held) => held.as_deref().map_or(i64::MIN, ts_of),
                Err(e) => {
                    self.violations
                        .push(format!("reading back after a crash: {e:?}"));
                    continue;
                }
            };
            if held < floor {
                self.violations.push(format!(
                    "the {} store lost a durable write in a {} crash: key {key:02x?} of table \
                     {:02x?} holds ts {held}, but ts {floor} was durable ({:?})",
                    self.layout,
                    if lossy { "power-loss" } else { "process" },
                    table.0,
                    self.sync_mode
                ));
            }
        }
        // What survived is in synced files now: durable from here on.
        self.stats.writes_lost += lost.len() as u64;
        survivors.extend(self.floor.keys().cloned());
        for (table, key) in survivors {
            if let Ok(Some(held)) = self.get(table, &key) {
                self.raise_floor(table, &key, ts_of(&held));
            }
        }
        lost
    }

    /// The broken promises found so far, taken.
    pub fn take_violations(&mut self) -> Vec<String> {
        std::mem::take(&mut self.violations)
    }

    /// What the store went through so far.
    pub fn stats(&self) -> DiskStats {
        let mut out = self.stats.clone();
        if let Some(o) = &self.open {
            for store in o.stores.values() {
                let c = store.counters();
                out.flushes += c.flushes;
                out.compactions += c.compactions;
                out.wal_syncs += c.wal_syncs;
            }
        }
        out
    }

    /// Bytes in every table's files.
    pub fn load_bytes(&self) -> u64 {
        self.open
            .as_ref()
            .map_or(0, |o| o.stores.values().map(|s| s.load_bytes()).sum())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checker::value_fragment;
    use crate::network::endpoint;
    use crate::store::table_key;

    fn disk(layout: Layout, durability: Durability) -> Disk {
        let me = endpoint(0);
        let shape = Shape {
            memtable_size_bytes: 1 << 10,
            wal_file_bytes: 4 << 10,
            level0_trigger: 2,
        };
        let rf = BTreeMap::from([(table_key(0), 1)]);
        let nodes = [(me, vec![Token(0)], [1; 16])];
        Disk::open(
            layout,
            shape,
            durability,
            Executor::new(None),
            rf,
            me,
            &nodes,
        )
        .expect("a store opens on an empty file system")
    }

    fn write(key: u8, id: u64, ts: i64) -> WireMutation {
        let mut k = mosaic_rows::encode_token(Token(i64::from(key) << 50)).to_vec();
        k.push(key);
        WireMutation {
            key: k,
            ts: ts as u64,
            fragment: value_fragment(id, ts),
        }
    }

    fn held_ts(d: &Disk, key: u8) -> i64 {
        let k = write(key, 0, 0).key;
        let held = d.get(table_key(0), &k).expect("readable");
        held.as_deref().map_or(i64::MIN, ts_of)
    }

    #[test]
    fn a_power_loss_takes_only_writes_since_the_last_periodic_sync() {
        let lossy = Durability::Periodic {
            interval_ms: 10,
            lossy: true,
        };
        let mut outcomes = std::collections::BTreeSet::new();
        for seed in 0..16 {
            let mut d = disk(Layout::Decoupled, lossy);
            d.apply(table_key(0), vec![write(1, 0, 10)]).expect("apply");
            d.sync();
            d.apply(table_key(0), vec![write(2, 1, 11), write(1, 2, 12)])
                .expect("apply");
            let lost = d.crash(true, &mut Prng::new(seed));
            assert!(d.take_violations().is_empty());
            // One batch, one WAL record: kept or torn off whole.
            assert!(lost.len() == 2 || lost.is_empty(), "{lost:?}");
            let expected = if lost.is_empty() { 12 } else { 10 };
            assert_eq!(held_ts(&d, 1), expected, "seed {seed}");
            outcomes.insert(lost.len());
            // What survived is durable now: another power loss keeps it.
            assert!(d.crash(true, &mut Prng::new(seed + 100)).is_empty());
            assert!(d.take_violations().is_empty());
            assert_eq!(held_ts(&d, 1), expected);
        }
        // A torn prefix keeps a whole record only when it keeps every byte of it: rare.
        assert!(outcomes.contains(&2), "never torn off: {outcomes:?}");
    }

    #[test]
    fn per_write_sync_survives_power_losses_and_a_store_skipping_fsync_is_caught() {
        for layout in LAYOUTS {
            let mut d = disk(layout, Durability::SyncPerWrite);
            // Enough to flush, compact and rotate WAL files between the crashes.
            for i in 0..300u64 {
                let m = write((i % 7) as u8, i, 100 + i as i64);
                d.apply(table_key(0), vec![m]).expect("apply");
                if i % 97 == 0 {
                    assert!(d.crash(true, &mut Prng::new(i)).is_empty());
                    assert_eq!(d.take_violations(), Vec::<String>::new(), "{layout}");
                }
            }
            assert!(d.stats().flushes > 3, "{layout}: {:?}", d.stats());
            for key in 0..7u8 {
                let newest = (0..300i64).filter(|i| i % 7 == i64::from(key)).max();
                assert_eq!(held_ts(&d, key), 100 + newest.unwrap_or(0), "{layout}");
            }
            let mut broken = disk(layout, Durability::SyncPerWrite)
                .without_fsync()
                .expect("reopens");
            broken
                .apply(table_key(0), vec![write(3, 1, 5)])
                .expect("apply");
            broken.crash(true, &mut Prng::new(1));
            let v = broken.take_violations();
            assert!(
                v.iter().any(|v| v.contains("lost a durable write")),
                "{layout}: {v:?}"
            );
        }
    }
}
