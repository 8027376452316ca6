//! The node's seams: time, spawning and randomness ([`Runtime`]), the network
//! ([`Transport`]) and local storage ([`Store`]).
//!
//! The server implements them over tokio, TCP and the storage engines; the simulator over
//! a virtual clock, an in-memory network with injected faults, and in-memory stores. The
//! node never reaches anything else, which is what makes a simulated run replayable.

use futures::future::BoxFuture;
use mosaic_rows::KeyRange;

use crate::message::{Envelope, Failure, SchemaSnapshot, TableKey, Tag, WireMutation};
use crate::Endpoint;

/// Time, tasks and randomness.
pub trait Runtime: Send + Sync + 'static {
    /// Microseconds on a monotonic clock.
    fn now_micros(&self) -> u64;
    /// Resolves `ms` milliseconds from now.
    fn sleep(&self, ms: u64) -> BoxFuture<'static, ()>;
    /// Runs `task` to completion in the background.
    fn spawn(&self, task: BoxFuture<'static, ()>);
    /// A random number (seeded in simulation).
    fn random(&self) -> u64;
}

/// Sends envelopes to peers. Never blocks: a message that cannot be queued (peer queue
/// full, no connection) is dropped, and the request it carried times out.
pub trait Transport: Send + Sync + 'static {
    /// Queues `env` for `to`; false if it was dropped.
    fn send(&self, to: Endpoint, env: Envelope) -> bool;
}

/// Entries read: `(key, merged fragment)` in key order, and whether the range is exhausted.
pub type Entries = (Vec<(Vec<u8>, Vec<u8>)>, bool);

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
    /// Removes every row of a table.
    fn truncate(&self, table: TableKey) -> BoxFuture<'_, Result<(), Failure>>;
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
    /// The replication factor of a table's keyspace, `None` for an unknown table.
    fn replication_factor(&self, table: TableKey) -> Option<usize>;
    /// The schema this node has.
    fn schema(&self) -> SchemaSnapshot;
    /// Its version alone (cheap: asked every gossip round).
    fn schema_version(&self) -> [u8; 16];
    /// Adopts `snapshot` if it supersedes the current schema (creating and dropping
    /// storage as needed); returns whether it did.
    fn adopt_schema(&self, snapshot: SchemaSnapshot) -> BoxFuture<'_, Result<bool, String>>;
    /// Bytes stored (reported through gossip).
    fn load_bytes(&self) -> u64;
}
