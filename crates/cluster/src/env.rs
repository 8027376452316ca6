//! The node's seams: time, spawning and randomness ([`Runtime`]), the network
//! ([`Transport`]) and local storage ([`Store`]).
//!
//! The server implements them over tokio, TCP and the storage engines; the simulator over
//! a virtual clock, an in-memory network with injected faults, and in-memory stores. The
//! node never reaches anything else, which is what makes a simulated run replayable.

use futures::future::BoxFuture;
use futures::FutureExt;
pub use mosaic_erasure::Unanswered;
use mosaic_erasure::{EcMeta, Fill, Group, GroupId, LostRead, Replaced};
use mosaic_rows::KeyRange;
use mosaic_types::{ErasureCode, HostId};

use crate::message::{Envelope, Failure, SchemaSnapshot, TableKey, Tag, WireMutation};
use crate::Endpoint;

/// Time, tasks and randomness.
pub trait Runtime: Send + Sync + 'static {
    /// Microseconds on a monotonic clock.
    fn now_micros(&self) -> u64;
    /// Microseconds since the Unix epoch on the wall clock: what Paxos ballots are made
    /// of, since a ballot's time is its update's write timestamp and must order with
    /// clients' timestamps (the default: the monotonic clock, for runtimes whose clock is
    /// the only time there is, as a simulation's).
    fn wall_micros(&self) -> u64 {
        self.now_micros()
    }
    /// Resolves `ms` milliseconds from now.
    fn sleep(&self, ms: u64) -> BoxFuture<'static, ()>;
    /// Runs `task` to completion in the background.
    fn spawn(&self, task: BoxFuture<'static, ()>);
    /// Runs `task` here until it first has to wait, and only then in the background: see
    /// [`run_or_spawn`].
    fn run_or_spawn(&self, task: BoxFuture<'static, ()>) {
        run_or_spawn(task, |rest| self.spawn(rest));
    }
    /// A random number (seeded in simulation).
    fn random(&self) -> u64;
}

/// Polls `task` once, here, and hands it to `spawn` only if it has to wait.
///
/// Most requests finish without waiting (a read served from memory, a write acknowledged
/// in-process); spawning each of them costs an allocation, a scheduler round and often the
/// wake-up of another worker thread. The first poll uses a waker that does nothing, which
/// is sound because every future registers the waker of its latest poll, and the spawned
/// task polls it again with its own. A panic in the first poll ends the task as it would
/// end a spawned one (reported by the panic hook, the task dropped), not the caller.
pub fn run_or_spawn(mut task: BoxFuture<'static, ()>, spawn: impl FnOnce(BoxFuture<'static, ()>)) {
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    let first =
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| task.as_mut().poll(&mut cx)));
    if let Ok(std::task::Poll::Pending) = first {
        spawn(task);
    }
}

/// Sends envelopes to peers. Never blocks: a message that cannot be queued (peer queue
/// full, no connection) is dropped, and the request it carried fails.
pub trait Transport: Send + Sync + 'static {
    /// Queues `env` for `to`; false if it was dropped, or cannot be delivered now (the
    /// last attempt to connect to `to` failed).
    fn send(&self, to: Endpoint, env: Envelope) -> bool;
    /// Asks to be told (`lost(peer)`) whenever the connection to a peer breaks or cannot
    /// be made, so requests in flight to it fail at once instead of at their timeout.
    /// The default: never told.
    fn on_connection_lost(&self, lost: ConnectionLost) {
        let _ = lost;
    }
    /// A peer connected to this node (it runs again, or still does): a connection to it
    /// that failed may be tried again at once. The default: nothing to do.
    fn peer_heard(&self, peer: Endpoint) {
        let _ = peer;
    }
}

/// What a [`Transport`] calls when the connection to a peer is lost.
pub type ConnectionLost = std::sync::Arc<dyn Fn(Endpoint) + Send + Sync>;

/// Tables a data node chose to code: `(table id, the table's file)`.
pub type Shards = Vec<(u64, Vec<u8>)>;

/// A coded table's keys, each with the newest timestamp the table holds for it.
pub type KeyList = Vec<(Vec<u8>, u64)>;

/// A shard as its holder has it: a parity shard's epoch (0 for a data shard) and bytes.
pub type ShardBytes = (u64, Vec<u8>);

/// A coded table's place: its group's ECMeta and its slot there.
pub type ShardRef = (EcMeta, u8);

/// A span of a lost table's stripes and `(position, bytes of that span)` of `k` other
/// shards of its group.
pub type StripeSpan = (std::ops::Range<u64>, Vec<(u8, Vec<u8>)>);

/// A ranged read of a shard: `(epoch, the shard's whole length, the bytes)`.
pub type ShardRange = (u64, u64, Vec<u8>);

/// A data node's coded table whose key list is still to be sent: its id, place and keys.
pub type Unlisted = (u64, ShardRef, KeyList);

/// A source's key list a secondary gives up: the source, its table id and the keys' range.
pub type GivenUp = (HostId, u64, KeyRange);

/// Entries read: `(key, merged fragment)` in key order, and whether the range is exhausted.
pub type Entries = (Vec<(Vec<u8>, Vec<u8>)>, bool);

/// Entries read in the order a replica stores them (keys canonical), and the stored key
/// to resume after (`None`: the range holds nothing more).
pub type StoredPage = (Vec<(Vec<u8>, Vec<u8>)>, Option<Vec<u8>>);

/// A page of Paxos summaries and the partition the next page starts after (`None`: the
/// range holds no more).
pub type PaxosSummaryPage = (Vec<crate::paxos::PaxosSummary>, Option<Vec<u8>>);

/// A write kept for a replica that could not take it (hinted handoff).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hint {
    /// Its id among the target's hints (ascending in the order they were stored).
    pub id: u64,
    /// The table.
    pub table: TableKey,
    /// The writes.
    pub mutations: Vec<WireMutation>,
}

/// This node's storage, as the cluster uses it (the replica layouts implement it).
pub trait Store: Send + Sync + 'static {
    /// Applies writes to a table.
    fn apply(
        &self,
        table: TableKey,
        mutations: Vec<WireMutation>,
    ) -> BoxFuture<'_, Result<(), Failure>>;
    /// Reads up to `limit` entries of a range; `tags` are what the coordinator's
    /// replica-selection policy attached to the read (empty for repair's reads).
    fn read(
        &self,
        table: TableKey,
        range: KeyRange,
        limit: usize,
        tags: &[Tag],
    ) -> BoxFuture<'_, Result<Entries, Failure>>;
    /// Reads up to `limit` entries of `range` in the order this replica stores them
    /// (keys canonical), after the stored key `after`: what repair hashes and streams,
    /// which need the entries and not their order — so a replica keeping rows in another
    /// clustering order (heterogeneous replicas) answers without sorting. The default:
    /// the ordered read, whose stored keys are its keys.
    fn read_stored(
        &self,
        table: TableKey,
        range: KeyRange,
        after: Option<Vec<u8>>,
        limit: usize,
    ) -> BoxFuture<'_, Result<StoredPage, Failure>> {
        Box::pin(async move {
            let range = crate::repair::resume_after(range, after.as_deref());
            if range.is_empty() {
                return Ok((Vec::new(), None));
            }
            let read = self.read(table, range, limit, &[]).await?;
            Ok(crate::repair::page_of(read))
        })
    }
    /// Stores entries streamed from a peer, in the order the peer stores them (a range
    /// this node pulls as it joins, or takes over): as [`Store::apply`] does, or where the
    /// store can, as tables ingested without a commit log, memtable or compaction. The
    /// default: [`Store::apply`].
    fn ingest(
        &self,
        table: TableKey,
        mutations: Vec<WireMutation>,
    ) -> BoxFuture<'_, Result<(), Failure>> {
        self.apply(table, mutations)
    }
    /// Applies writes to a table under this node's roles once the move under way
    /// completes, where they differ from its roles now (a topology change re-homes the
    /// ranges whose role changes on this node this way). The default: a store that keeps
    /// no roles apart has nothing to do.
    fn apply_future(
        &self,
        _table: TableKey,
        _mutations: Vec<WireMutation>,
    ) -> BoxFuture<'_, Result<(), Failure>> {
        Box::pin(async { Ok(()) })
    }
    /// Whether `table` stores each role apart (so a topology change that changes a
    /// range's role on this node must copy it to its new role's structures).
    fn role_sensitive(&self, _table: TableKey) -> bool {
        false
    }
    /// Removes every row of a table.
    fn truncate(&self, table: TableKey) -> BoxFuture<'_, Result<(), Failure>>;
    /// Counter increments this node leads (see `mosaic_rows::counter`): for each, this
    /// node's new shard of the column, computed from what it stores and applied here.
    /// Returns the writes carrying the new shards (the caller replicates them; it
    /// serializes the calls for one counter).
    fn counter_shards(
        &self,
        table: TableKey,
        increments: Vec<crate::message::WireCounter>,
    ) -> BoxFuture<'_, Result<Vec<WireMutation>, Failure>>;
    /// The Paxos state of a partition of a table (lightweight transactions,
    /// [`crate::paxos`]); `None` when it has none. The node serializes the calls for one
    /// partition.
    fn paxos_state(
        &self,
        table: TableKey,
        partition: Vec<u8>,
    ) -> BoxFuture<'_, Result<Option<crate::paxos::PaxosState>, Failure>>;
    /// Repair: summaries of the Paxos state of the partitions of `range` this node keeps
    /// state for, in key order, at most `limit`, starting after partition `after`; and
    /// the partition to resume after when more remain.
    fn paxos_summaries(
        &self,
        table: TableKey,
        range: KeyRange,
        after: Option<Vec<u8>>,
        limit: usize,
    ) -> BoxFuture<'_, Result<PaxosSummaryPage, Failure>>;
    /// Keeps the Paxos state of a partition, as durably as the table's writes, before the
    /// replica answers the message that changed it.
    fn save_paxos_state(
        &self,
        table: TableKey,
        partition: Vec<u8>,
        state: crate::paxos::PaxosState,
    ) -> BoxFuture<'_, Result<(), Failure>>;

    /// Durably keeps `mutations` for `target` until they are replayed to it.
    fn store_hint(
        &self,
        target: Endpoint,
        table: TableKey,
        mutations: Vec<WireMutation>,
    ) -> BoxFuture<'_, Result<(), Failure>>;
    /// The oldest `limit` hints for `target`.
    fn hints(&self, target: Endpoint, limit: usize) -> BoxFuture<'_, Result<Vec<Hint>, Failure>>;
    /// Forgets a replayed hint.
    fn delete_hint(&self, target: Endpoint, id: u64) -> BoxFuture<'_, Result<(), Failure>>;
    /// The nodes this node holds hints for.
    fn hint_targets(&self) -> Vec<Endpoint>;
    /// Forgets every hint for `target` (a node that left the ring); how many there were.
    fn drop_hints(&self, target: Endpoint) -> BoxFuture<'_, Result<u64, Failure>> {
        async move {
            let mut dropped = 0;
            loop {
                let batch = self.hints(target, 256).await?;
                if batch.is_empty() {
                    return Ok(dropped);
                }
                for hint in batch {
                    self.delete_hint(target, hint.id).await?;
                    dropped += 1;
                }
            }
        }
        .boxed()
    }
    /// The replication factor of a table's keyspace, `None` for an unknown table.
    fn replication_factor(&self, table: TableKey) -> Option<usize>;
    /// How a table's keyspace places its replicas, `None` for an unknown table
    /// (SimpleStrategy with [`Store::replication_factor`] unless the store says more).
    fn placement(&self, table: TableKey) -> Option<crate::placement::ReplicationStrategy> {
        self.replication_factor(table)
            .map(crate::placement::ReplicationStrategy::Simple)
    }
    /// The schema this node has.
    fn schema(&self) -> SchemaSnapshot;
    /// Its version alone (cheap: asked every gossip round).
    fn schema_version(&self) -> [u8; 16];
    /// Adopts `snapshot` if it supersedes the current schema (creating and dropping
    /// storage as needed); returns whether it did.
    fn adopt_schema(&self, snapshot: SchemaSnapshot) -> BoxFuture<'_, Result<bool, String>>;
    /// Bytes stored (reported through gossip).
    fn load_bytes(&self) -> u64;
    /// Reads waiting in or served by the local read stage, when reads go through one
    /// (reported as the `QueueLength` fact; without a stage, the requests from peers in
    /// flight are).
    fn read_queue_length(&self) -> Option<u64> {
        None
    }

    /// The tables stored `erasure-tiered`, with their codes (ELECT). The default: none.
    fn ec_tables(&self) -> Vec<(TableKey, ErasureCode)> {
        Vec::new()
    }
    /// ELECT's data-node choice of tables to code now (`rf`: the keyspace's replication
    /// factor): `(table id, its file)`.
    fn ec_pick(&self, table: TableKey, rf: usize) -> BoxFuture<'_, Result<Shards, Failure>> {
        let _ = (table, rf);
        unsupported()
    }
    /// Takes the data node's next sequence number Q of Eq. (1).
    fn ec_next_seq(&self, table: TableKey) -> BoxFuture<'_, Result<u64, Failure>> {
        let _ = table;
        unsupported()
    }
    /// The leader's first step of filling `slot` of the group `nodes` with `content`.
    fn ec_prepare_fill(
        &self,
        table: TableKey,
        nodes: Group,
        slot: u8,
        content: Vec<u8>,
    ) -> BoxFuture<'_, Result<Fill, Failure>> {
        let _ = (table, nodes, slot, content);
        unsupported()
    }
    /// Records, before sending, that the data node's table `id` goes to `leader` for `slot`.
    fn ec_note_sent(
        &self,
        table: TableKey,
        id: u64,
        slot: u8,
        leader: HostId,
    ) -> BoxFuture<'_, Result<(), Failure>> {
        let _ = (table, id, slot, leader);
        unsupported()
    }
    /// Tables sent for coding without an answer yet: `(id, slot, leader, content)`.
    fn ec_unanswered(&self, table: TableKey) -> BoxFuture<'_, Result<Unanswered, Failure>> {
        let _ = table;
        unsupported()
    }
    /// Offloads what the α plan asks for to the cold tier; returns the bytes moved.
    fn ec_offload(&self, table: TableKey, rf: usize) -> BoxFuture<'_, Result<u64, Failure>> {
        let _ = (table, rf);
        unsupported()
    }
    /// The data node's coded tables that compaction replaced, with their ghosts.
    fn ec_replaced(&self, table: TableKey) -> BoxFuture<'_, Result<Vec<Replaced>, Failure>> {
        let _ = table;
        unsupported()
    }
    /// The leader's first step of emptying `slot` of `group` (its table was `old`).
    fn ec_prepare_clear(
        &self,
        table: TableKey,
        group: GroupId,
        slot: u8,
        old: Vec<u8>,
    ) -> BoxFuture<'_, Result<Fill, Failure>> {
        let _ = (table, group, slot, old);
        unsupported()
    }
    /// The leader's plan to finish the change under way on `group`, if any.
    fn ec_resume(
        &self,
        table: TableKey,
        group: GroupId,
    ) -> BoxFuture<'_, Result<Option<Fill>, Failure>> {
        let _ = (table, group);
        unsupported()
    }
    /// The data node's table `id` no longer takes a slot: forget it and its ghost.
    fn ec_cleared(&self, table: TableKey, id: u64) -> BoxFuture<'_, Result<(), Failure>> {
        let _ = (table, id);
        unsupported()
    }
    /// A parity node's step: applies a delta, returns the shard's new hash.
    fn ec_apply_parity(
        &self,
        table: TableKey,
        group: GroupId,
        position: u8,
        epochs: (u64, u64),
        delta: Vec<u8>,
    ) -> BoxFuture<'_, Result<[u8; 32], Failure>> {
        let _ = (table, group, position, epochs, delta);
        unsupported()
    }
    /// The leader's last step: commits the group's next ECMeta.
    fn ec_commit_fill(
        &self,
        table: TableKey,
        group: GroupId,
        parity_hashes: Vec<(u8, [u8; 32])>,
    ) -> BoxFuture<'_, Result<EcMeta, Failure>> {
        let _ = (table, group, parity_hashes);
        unsupported()
    }
    /// Secondary removal, data node: coded tables whose key lists have not reached every
    /// secondary yet, each with its shard and list.
    fn ec_unlisted(&self, table: TableKey) -> BoxFuture<'_, Result<Vec<Unlisted>, Failure>> {
        let _ = table;
        unsupported()
    }
    /// Records, before sending them, that coded table `id`'s key lists (its keys from
    /// `smallest` to `largest`) go out.
    fn ec_listing(
        &self,
        table: TableKey,
        id: u64,
        smallest: Vec<u8>,
        largest: Vec<u8>,
    ) -> BoxFuture<'_, Result<(), Failure>> {
        let _ = (table, id, smallest, largest);
        unsupported()
    }
    /// Every secondary holds coded table `id`'s key list.
    fn ec_listed(&self, table: TableKey, id: u64) -> BoxFuture<'_, Result<(), Failure>> {
        let _ = (table, id);
        unsupported()
    }
    /// Secondary removal, secondary: durably records data node `source`'s key list of its
    /// coded table `id`, a data shard of `shard`.
    fn ec_cover(
        &self,
        table: TableKey,
        source: HostId,
        id: u64,
        shard: ShardRef,
        keys: KeyList,
    ) -> BoxFuture<'_, Result<(), Failure>> {
        let _ = (table, source, id, shard, keys);
        unsupported()
    }
    /// Secondary removal undone, secondary: every key list of each source holding a list
    /// whose coding group names a node outside `members` (it left the ring), each as its
    /// source, the source's table id and the range of keys it names.
    fn ec_dissolved(
        &self,
        table: TableKey,
        members: Vec<HostId>,
    ) -> BoxFuture<'_, Result<Vec<GivenUp>, Failure>> {
        let _ = (table, members);
        unsupported()
    }
    /// Coding groups that lost a member: the groups this node holds an ECMeta of (as a
    /// data or parity node) that name a node outside `members` (it left the ring).
    fn ec_dissolved_groups(
        &self,
        table: TableKey,
        members: Vec<HostId>,
    ) -> BoxFuture<'_, Result<Vec<GroupId>, Failure>> {
        let _ = (table, members);
        unsupported()
    }
    /// Which of `groups` a key list this node holds as a secondary names.
    fn ec_groups_named(
        &self,
        table: TableKey,
        groups: Vec<GroupId>,
    ) -> BoxFuture<'_, Result<Vec<GroupId>, Failure>> {
        let _ = (table, groups);
        unsupported()
    }
    /// Lets a group that lost a member go (no node holds a key list naming it): this
    /// node's (`me`'s) tables in it are no longer data shards, and if it is a data node of
    /// the group its other key lists go out again; its parity and ECMeta are deleted.
    /// Returns how many of this node's tables were data shards of it.
    fn ec_release_group(
        &self,
        table: TableKey,
        group: GroupId,
        me: HostId,
    ) -> BoxFuture<'_, Result<usize, Failure>> {
        let _ = (table, group, me);
        unsupported()
    }
    /// Table `id` was sent for coding to a leader that left the ring: no longer awaited.
    fn ec_forget_pending(&self, table: TableKey, id: u64) -> BoxFuture<'_, Result<(), Failure>> {
        let _ = (table, id);
        unsupported()
    }
    /// Gives up `source`'s key list `id`: with `forget` false its versions stop being
    /// dropped (their rows are then written back); with `forget` true it is durably
    /// removed.
    fn ec_uncover(
        &self,
        table: TableKey,
        source: HostId,
        id: u64,
        forget: bool,
    ) -> BoxFuture<'_, Result<(), Failure>> {
        let _ = (table, source, id, forget);
        unsupported()
    }
    /// Degraded reads, secondary: the coded tables holding the newest covered versions of
    /// keys of `range` this node stores as a secondary.
    fn ec_covering(
        &self,
        table: TableKey,
        range: KeyRange,
    ) -> BoxFuture<'_, Result<Vec<ShardRef>, Failure>> {
        let _ = (table, range);
        unsupported()
    }
    /// Degraded reads: this node's shard at `position` of `group` (`(epoch, bytes)`; a
    /// data shard has epoch 0), if it holds it — a parity shard at `epoch` when it still
    /// holds that epoch, else at its newest.
    fn ec_shard(
        &self,
        table: TableKey,
        group: GroupId,
        (position, epoch): (u8, Option<u64>),
    ) -> BoxFuture<'_, Result<Option<ShardBytes>, Failure>> {
        let _ = (table, group, position, epoch);
        unsupported()
    }
    /// The newest ECMeta of `group` this node holds.
    fn ec_meta(
        &self,
        table: TableKey,
        group: GroupId,
    ) -> BoxFuture<'_, Result<Option<EcMeta>, Failure>> {
        let _ = (table, group);
        unsupported()
    }
    /// Records a group's ECMeta a leader committed (unless as new a one is recorded).
    fn ec_record_meta(&self, table: TableKey, meta: EcMeta) -> BoxFuture<'_, Result<(), Failure>> {
        let _ = (table, meta);
        unsupported()
    }
    /// Full-node recovery: the ECMetas this node holds of groups naming `host`.
    fn ec_groups_of(
        &self,
        table: TableKey,
        host: HostId,
    ) -> BoxFuture<'_, Result<Vec<EcMeta>, Failure>> {
        let _ = (table, host);
        unsupported()
    }
    /// Full-node recovery: rebuilds this node's shard at `position` of `meta`'s group from
    /// `shards` (`k` others) and puts it back (a data shard's rows into the primary tree).
    fn ec_restore(
        &self,
        table: TableKey,
        meta: EcMeta,
        position: u8,
        shards: Vec<(u8, Vec<u8>)>,
    ) -> BoxFuture<'_, Result<(), Failure>> {
        let _ = (table, meta, position, shards);
        unsupported()
    }
    /// Degraded reads: up to `limit` rows of `range` from the table in `shard`, from the
    /// stripes of it decoded before and `given` (a span of its stripes, with `k` other
    /// shards' bytes of that span) — or the span it needs next.
    fn ec_read_lost(
        &self,
        table: TableKey,
        shard: ShardRef,
        given: Option<StripeSpan>,
        range: KeyRange,
        limit: usize,
    ) -> BoxFuture<'_, Result<LostRead, Failure>> {
        let _ = (table, shard, given, range, limit);
        unsupported()
    }
    /// Decoding ahead of degraded reads: the next span (at most `max` bytes, from byte
    /// `from` on) of the lost table in `shard` that reads have not decoded yet, if reads
    /// decoded any of it.
    fn ec_lost_missing(
        &self,
        table: TableKey,
        shard: ShardRef,
        (from, max): (u64, u64),
    ) -> BoxFuture<'_, Result<Option<std::ops::Range<u64>>, Failure>> {
        let _ = (table, shard, from, max);
        unsupported()
    }
    /// Degraded reads: bytes `offset..offset + len` (cut short at its end) of this node's
    /// shard at `position` of `group`, with the shard's epoch (0 for a data shard) and
    /// whole length, if it holds it (a parity shard's epoch picked as by `ec_shard`).
    fn ec_shard_range(
        &self,
        table: TableKey,
        group: GroupId,
        (position, epoch): (u8, Option<u64>),
        (offset, len): (u64, u32),
    ) -> BoxFuture<'_, Result<Option<ShardRange>, Failure>> {
        let _ = (table, group, position, epoch, offset, len);
        unsupported()
    }
    /// Drops the versions new key lists cover; returns the trees compacted.
    fn ec_purge(&self, table: TableKey) -> BoxFuture<'_, Result<usize, Failure>> {
        let _ = table;
        unsupported()
    }
    /// Whether this node stores keys of `range` as a secondary whose versions a coding
    /// group covers: it answers for them only together with their primary replica.
    fn ec_covers(&self, table: TableKey, range: &KeyRange) -> bool {
        let _ = (table, range);
        false
    }
    /// The estimated cost of answering a read of `table` carrying `tags` (for at most
    /// `limit` entries) at each replica
    /// position of a range (index 0: the primary), for tables whose replicas store rows
    /// differently (heterogeneous replicas); the coordinator then asks the cheapest live
    /// replicas whatever the replica-selection policy. `None` (the default): replicas are
    /// alike.
    fn replica_costs(
        &self,
        table: TableKey,
        tags: &[Tag],
        limit: usize,
        rf: usize,
    ) -> Option<Vec<f64>> {
        let _ = (table, tags, limit, rf);
        None
    }
    /// When a read of `table` asks one replica more than its consistency level needs
    /// (the table's `speculative_retry`). The default: never (as the simulator's stores
    /// keep it, so recorded seeds replay unchanged).
    fn speculative_retry(&self, table: TableKey) -> mosaic_types::SpeculativeRetry {
        let _ = table;
        mosaic_types::SpeculativeRetry::Never
    }
    /// Whether reads of `table` should ask its primary replica first (erasure-tiered: the
    /// secondaries relay reads of coded rows to it). The default: no.
    fn reads_prefer_primary(&self, table: TableKey) -> bool {
        let _ = table;
        false
    }
    /// The data node records its table `id` as the shard at `slot` of `meta`.
    fn ec_mark_coded(
        &self,
        table: TableKey,
        id: u64,
        slot: u8,
        meta: EcMeta,
    ) -> BoxFuture<'_, Result<(), Failure>> {
        let _ = (table, id, slot, meta);
        unsupported()
    }
}

/// The answer of a store without erasure coding.
fn unsupported<T: Send + 'static>() -> BoxFuture<'static, Result<T, Failure>> {
    Box::pin(futures::future::ready(Err(Failure::Storage(
        "this node does not store erasure-tiered tables".into(),
    ))))
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    use futures::FutureExt;

    use super::*;

    #[test]
    fn run_or_spawn_spawns_only_what_waits() {
        let done = Arc::new(AtomicUsize::new(0));
        let mut spawned = Vec::new();

        let d = done.clone();
        run_or_spawn(
            async move {
                d.fetch_add(1, Ordering::SeqCst);
            }
            .boxed(),
            |t| spawned.push(t),
        );
        assert_eq!(
            done.load(Ordering::SeqCst),
            1,
            "a task that never waits runs here"
        );
        assert!(spawned.is_empty());

        let (tx, rx) = futures::channel::oneshot::channel::<()>();
        let d = done.clone();
        run_or_spawn(
            async move {
                let _ = rx.await;
                d.fetch_add(1, Ordering::SeqCst);
            }
            .boxed(),
            |t| spawned.push(t),
        );
        assert_eq!(spawned.len(), 1, "a task that waits is handed on");
        assert_eq!(done.load(Ordering::SeqCst), 1);
        tx.send(()).unwrap();
        // The spawned task registers its own waker and finishes once polled again.
        let mut rest = spawned.pop().unwrap();
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        assert!(rest.as_mut().poll(&mut cx).is_ready());
        assert_eq!(done.load(Ordering::SeqCst), 2);
    }

    #[test]
    fn run_or_spawn_contains_a_panic() {
        let dropped = Arc::new(AtomicUsize::new(0));
        struct Guard(Arc<AtomicUsize>);
        impl Drop for Guard {
            fn drop(&mut self) {
                self.0.fetch_add(1, Ordering::SeqCst);
            }
        }
        let guard = Guard(dropped.clone());
        let mut spawned = 0;
        run_or_spawn(
            async move {
                let _guard = guard;
                panic!("statement layer bug");
            }
            .boxed(),
            |_| spawned += 1,
        );
        assert_eq!(spawned, 0);
        assert_eq!(
            dropped.load(Ordering::SeqCst),
            1,
            "the task's state is dropped"
        );
    }
}
