//! The shards of the counter increments this node leads (`mosaic_rows::counter`): each
//! increment takes this node's shard from the counter cache ([`CounterCache`]) or reads
//! the row and its partition's head from storage (under the ring's roles) and resolves
//! what a read would see of the shard, then applies the next shard here. The caller
//! (`mosaic_cluster`'s counter path) holds the counter's lock throughout and replicates
//! the shards.

use super::*;
use mosaic_cluster::message::WireCounter;
use mosaic_cluster::WireMutation;
use mosaic_cql::coordinator::{CounterIncrement, Mutation};
use mosaic_rows::counter::{counter_key_kind, stored_shard, LeaderBatch};
use mosaic_rows::{ColumnId, KeyRange, LiveCell};
use mosaic_types::Timestamp;

impl LocalCoordinator {
    /// This node's new shards for `increments` of `table` (several of one counter add
    /// up), applied here under `roles`, as writes to replicate. The caller holds the
    /// counters' locks until this returns.
    pub async fn counter_shards(
        &self,
        table: TableId,
        increments: Vec<WireCounter>,
        roles: &dyn Roles,
    ) -> Result<Vec<WireMutation>, ErrorResponse> {
        let catalog = self.current_catalog();
        let meta = catalog
            .table_by_id(table)
            .ok_or_else(|| self.unconfigured(table))?;
        let slot = self.slot(table)?;
        let epochs = slot.counter_epochs.as_ref();
        let schema = meta.key_schema();
        let host = self.local_node().host_id.0;
        let now_secs = self.now_secs();
        let mut batch = LeaderBatch::new(&host);
        // The counters whose shard came from the cache or storage, with their stripe's
        // epoch taken before that read.
        let mut read: Vec<(ShardKey, u64)> = Vec::new();
        for increment in increments {
            let column = ColumnId(increment.column);
            let key = &increment.key;
            let kind = counter_key_kind(&schema, key).ok_or_else(|| bad_key(&meta.name))?;
            let stored = match batch.pending(key, column) {
                Some(pending) => pending,
                None => {
                    let token = mosaic_rows::decode_token(key).map_err(|_| bad_key(&meta.name))?;
                    let epoch = epochs.map_or(0, |e| e.current(token));
                    let cache_key = ShardKey {
                        table,
                        key: key.clone(),
                        column: increment.column,
                    };
                    let cached = match epochs {
                        Some(_) => self.counter_cache.get(&cache_key, epoch),
                        None => None,
                    };
                    read.push((cache_key, epoch));
                    match cached {
                        Some(shard) => shard,
                        None => {
                            self.read_shard(table, &schema, key, column, &host, roles, now_secs)
                                .await?
                        }
                    }
                }
            };
            batch.add(
                key,
                kind,
                column,
                stored,
                identity::now_micros(),
                increment.delta,
            );
        }
        let shards: Vec<_> = read
            .into_iter()
            .filter_map(|(k, epoch)| {
                let shard = batch.pending(&k.key, ColumnId(k.column))?;
                Some((k, epoch, shard))
            })
            .collect();
        let writes: Vec<WireMutation> = batch
            .into_writes()
            .into_iter()
            .map(|(key, ts, fragment)| WireMutation { key, ts, fragment })
            .collect();
        let applied = self
            .apply(BTreeMap::from([(table, writes.clone())]), roles)
            .await;
        for (key, epoch, shard) in shards {
            match (&applied, epochs) {
                (Ok(()), Some(_)) => self.counter_cache.insert(key, epoch, shard),
                // Some of the shards may be stored: the next increments read storage.
                _ => self.counter_cache.remove(&key),
            }
        }
        applied.map(|()| writes)
    }

    /// What the counter cache holds and did.
    pub fn counter_cache_stats(&self) -> CounterCacheStats {
        self.counter_cache.stats()
    }

    /// The writes carrying this node's new shards for `increments` (of any tables),
    /// applied here, for a coordinator that leads them all to replicate (the caller holds
    /// its counters' lock).
    pub async fn counter_mutations(
        &self,
        increments: Vec<CounterIncrement>,
        roles: &dyn Roles,
    ) -> Result<Vec<Mutation>, ErrorResponse> {
        let mut by_table: BTreeMap<TableId, Vec<WireCounter>> = BTreeMap::new();
        for inc in increments {
            by_table.entry(inc.table).or_default().push(WireCounter {
                key: inc.key,
                column: inc.column.0,
                delta: inc.delta,
            });
        }
        let mut mutations = Vec::new();
        for (table, increments) in by_table {
            for m in self.counter_shards(table, increments, roles).await? {
                let token = mosaic_rows::decode_token(&m.key)
                    .map_err(|e| server_error(format!("a counter key has no token: {e}")))?;
                mutations.push(Mutation {
                    table,
                    token,
                    key: m.key,
                    ts: m.ts,
                    fragment: m.fragment,
                });
            }
        }
        Ok(mutations)
    }

    /// This node's shard of `column` of the row `key` as a read sees it (`None`: absent or
    /// deleted), and the highest timestamp a new shard's clock must exceed: the stored
    /// shard's and every deletion in the row and its partition's head.
    #[allow(clippy::too_many_arguments)] // One counter's coordinates, passed through.
    async fn read_shard(
        &self,
        table: TableId,
        schema: &mosaic_rows::KeySchema,
        key: &[u8],
        column: ColumnId,
        host: &[u8],
        roles: &dyn Roles,
        now_secs: i64,
    ) -> Result<(Option<LiveCell>, Timestamp), ErrorResponse> {
        let head = schema
            .head_range_of_key(key)
            .map_err(|_| server_error(format!("a counter key of table {table} does not decode")))?;
        let mut row_end = key.to_vec();
        row_end.push(0);
        let mut entries = Vec::new();
        let row = KeyRange {
            start: key.to_vec(),
            end: Some(row_end),
        };
        for range in [head, row] {
            let read = self
                .read_local(
                    ReadCommand {
                        table,
                        range,
                        limit: usize::MAX,
                        filter: None,
                        index: None,
                    },
                    roles,
                    mosaic_cluster::local_queue::ReadClass::default(),
                )
                .await?;
            entries.extend(read.entries);
        }
        stored_shard(schema, &entries, key, column, host, now_secs)
            .map_err(|e| server_error(format!("a stored counter row does not resolve: {e}")))
    }
}

/// Stripes of a counter table's deletion epochs (by partition token).
const EPOCH_STRIPES: usize = 256;

/// Bytes a cached shard costs besides its key and value (the entry, its hash slot).
const ENTRY_OVERHEAD: u64 = 96;

/// A cached shard: the table, the row's key and the counter's column.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct ShardKey {
    table: TableId,
    key: Vec<u8>,
    column: u32,
}

/// This node's shard of a counter as its last increment here left it, and the deletion
/// epoch of the counter's stripe when the shard was read.
#[derive(Clone, Debug)]
struct CachedShard {
    epoch: u64,
    shard: (Option<LiveCell>, Timestamp),
}

#[derive(Clone)]
struct ShardWeighter;

impl quick_cache::Weighter<ShardKey, CachedShard> for ShardWeighter {
    fn weight(&self, key: &ShardKey, value: &CachedShard) -> u64 {
        let cell = value.shard.0.as_ref().map_or(0, |c| c.value.len());
        (key.key.len() + cell) as u64 + ENTRY_OVERHEAD
    }
}

/// Cassandra's counter cache: the shard each counter this node leads got from its last
/// increment here, so the next increment of a hot counter reads nothing from storage.
///
/// Correct because only this node writes its own shard, and does so under the counter's
/// lock, updating the cache once its storage holds the shard. What else can change the
/// shard a read sees is a deletion (of the column, row, range or partition) arriving from
/// any coordinator: every applied write to a counter table that holds one bumps the
/// epoch of its partition's stripe ([`CounterEpochs`]) after it is applied, and an entry
/// read under an older epoch is not used. Bounded in bytes
/// (`[storage] counter_cache_size_bytes`, 0 disables it); not saved across restarts
/// (Cassandra's `counter_cache_save_period` is not modelled).
pub(super) struct CounterCache {
    entries: Option<quick_cache::sync::Cache<ShardKey, CachedShard, ShardWeighter>>,
    hits: AtomicU64,
    misses: AtomicU64,
}

/// What the counter cache holds and did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CounterCacheStats {
    pub entries: u64,
    pub bytes: u64,
    pub capacity_bytes: u64,
    pub hits: u64,
    pub misses: u64,
}

impl CounterCache {
    /// A cache of at most `capacity_bytes` (none when 0).
    pub(super) fn new(capacity_bytes: u64) -> CounterCache {
        let entries = (capacity_bytes > 0).then(|| {
            let estimated = (capacity_bytes / (ENTRY_OVERHEAD + 32)).clamp(16, 1 << 20) as usize;
            quick_cache::sync::Cache::with_weighter(estimated, capacity_bytes, ShardWeighter)
        });
        CounterCache {
            entries,
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
        }
    }

    fn get(&self, key: &ShardKey, epoch: u64) -> Option<(Option<LiveCell>, Timestamp)> {
        let cached = self
            .entries
            .as_ref()?
            .get(key)
            .filter(|c| c.epoch == epoch)
            .map(|c| c.shard);
        let counter = if cached.is_some() {
            &self.hits
        } else {
            &self.misses
        };
        counter.fetch_add(1, Ordering::Relaxed);
        cached
    }

    fn insert(&self, key: ShardKey, epoch: u64, shard: (Option<LiveCell>, Timestamp)) {
        if let Some(entries) = &self.entries {
            entries.insert(key, CachedShard { epoch, shard });
        }
    }

    fn remove(&self, key: &ShardKey) {
        if let Some(entries) = &self.entries {
            entries.remove(key);
        }
    }

    /// What the cache holds and its hits and misses since the node started.
    pub fn stats(&self) -> CounterCacheStats {
        CounterCacheStats {
            entries: self.entries.as_ref().map_or(0, |c| c.len() as u64),
            bytes: self.entries.as_ref().map_or(0, |c| c.weight()),
            capacity_bytes: self.entries.as_ref().map_or(0, |c| c.capacity()),
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
        }
    }
}

/// A counter table's deletion epochs, one per stripe of partition tokens (see
/// [`CounterCache`]).
pub(super) struct CounterEpochs(Box<[AtomicU64]>);

impl CounterEpochs {
    pub(super) fn new() -> CounterEpochs {
        CounterEpochs((0..EPOCH_STRIPES).map(|_| AtomicU64::new(0)).collect())
    }

    fn stripe(&self, token: Token) -> Option<&AtomicU64> {
        self.0.get((token.0 as u64 % EPOCH_STRIPES as u64) as usize)
    }

    /// The epoch of `token`'s stripe.
    fn current(&self, token: Token) -> u64 {
        self.stripe(token).map_or(0, |e| e.load(Ordering::Acquire))
    }

    /// Invalidates the cached shards of `token`'s partitions (after a deletion in one of
    /// them was applied).
    pub(super) fn bump(&self, token: Token) {
        if let Some(e) = self.stripe(token) {
            e.fetch_add(1, Ordering::AcqRel);
        }
    }

    /// Invalidates every cached shard of the table (after a truncate).
    pub(super) fn bump_all(&self) {
        for e in self.0.iter() {
            e.fetch_add(1, Ordering::AcqRel);
        }
    }
}

/// Whether a write to a counter table may change the shard a read sees: anything but
/// live counter shards (a deletion of any kind, or a value that does not decode).
pub(super) fn may_shadow_shards(op: &mosaic_lsm::wal::BatchOp) -> bool {
    if op.kind == mosaic_lsm::ValueKind::Delete {
        return true;
    }
    match mosaic_rows::Fragment::decode(&op.value) {
        Ok(f) => {
            f.deletion.is_some()
                || !f.cells.is_empty()
                || f.complex.values().any(|c| {
                    c.deletion.is_some()
                        || c.cells
                            .values()
                            .any(|cell| !matches!(cell, mosaic_rows::Cell::Live { .. }))
                })
        }
        Err(_) => true,
    }
}

/// A counter increment's key is neither a row nor a static row.
fn bad_key(table: &str) -> ErrorResponse {
    server_error(format!(
        "a counter increment of {table} names a key that is neither a row nor a static row"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use mosaic_cql::coordinator::{Coordinator, CounterIncrement};
    use mosaic_rows::counter::counter_total;
    use mosaic_types::CqlValue;

    /// The counter `c` of row `k` as a read sees it.
    async fn total(c: &LocalCoordinator, table: &TableMeta, k: i32) -> i64 {
        let schema = table.key_schema();
        let prefix = schema.partition_prefix(&[CqlValue::Int(k)]).unwrap();
        let read = Coordinator::read(
            c,
            ReadCommand {
                table: table.id,
                range: schema.partition_range(&prefix),
                limit: 100,
                filter: None,
                index: None,
            },
            Consistency::One,
        )
        .await
        .unwrap();
        let column = table.column("c").unwrap().id;
        let resolved = mosaic_rows::resolve_partition(&schema, read.entries, c.now_secs()).unwrap();
        resolved.map_or(0, |p| {
            let row = p.static_row.or(p.rows.into_iter().next());
            row.and_then(|r| {
                r.complex
                    .get(&column)
                    .map(|shards| counter_total(shards.iter().map(|(_, c)| c)))
            })
            .unwrap_or(0)
        })
    }

    fn increment(table: &TableMeta, k: i32, delta: i64) -> CounterIncrement {
        let schema = table.key_schema();
        let prefix = schema.partition_prefix(&[CqlValue::Int(k)]).unwrap();
        CounterIncrement {
            table: table.id,
            token: prefix.token(),
            key: schema.row_key(&prefix, &[]).unwrap(),
            column: table.column("c").unwrap().id,
            delta,
        }
    }

    #[test]
    fn concurrent_increments_sum_exactly_and_a_deleted_counter_counts_from_zero() {
        let dir = tempfile::tempdir().unwrap();
        let rt = super::super::tests::rt();
        let config = super::super::tests::config(dir.path());
        let table = rt.block_on(async {
            let c = Arc::new(LocalCoordinator::open(&config).unwrap());
            super::super::tests::run_all_ok(
                &c,
                &[
                    "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
                    "CREATE TABLE ks.t (k int PRIMARY KEY, c counter)",
                ],
            )
            .await;
            let table = c.catalog().table("ks", "t").unwrap().clone();
            let tasks: Vec<_> = (0..8)
                .map(|task| {
                    let c = c.clone();
                    let table = table.clone();
                    tokio::spawn(async move {
                        for i in 0..25 {
                            let delta = if (task + i) % 5 == 0 { -3 } else { 2 };
                            // Two increments of one counter in one batch add up.
                            let batch = vec![increment(&table, 1, delta), increment(&table, 1, 1)];
                            Coordinator::counter_write(&*c, batch, Consistency::One).await.unwrap();
                        }
                    })
                })
                .collect();
            for t in tasks {
                t.await.unwrap();
            }
            let expected: i64 = (0..8)
                .flat_map(|task| (0..25).map(move |i| if (task + i) % 5 == 0 { -3 } else { 2 } + 1))
                .sum();
            assert_eq!(total(&c, &table, 1).await, expected);
            assert_eq!(total(&c, &table, 2).await, 0);
            let cache = c.counter_cache_stats();
            assert_eq!(cache.entries, 1);
            assert_eq!(
                (cache.hits, cache.misses),
                (199, 1),
                "every increment after the first took its shard from the cache"
            );
            // The cached shard is invalidated by the deletion.
            super::super::tests::run_all_ok(&c, &["DELETE FROM ks.t WHERE k = 1"]).await;
            assert_eq!(total(&c, &table, 1).await, 0);
            Coordinator::counter_write(&*c, vec![increment(&table, 1, 4)], Consistency::One)
                .await
                .unwrap();
            assert_eq!(total(&c, &table, 1).await, 4, "counts again from zero after a delete");
            for (delete, delta) in [
                ("DELETE c FROM ks.t WHERE k = 1", 5),
                ("DELETE FROM ks.t WHERE k IN (1, 2)", 6),
                ("TRUNCATE ks.t", 7),
            ] {
                Coordinator::counter_write(&*c, vec![increment(&table, 1, 100)], Consistency::One)
                    .await
                    .unwrap();
                super::super::tests::run_all_ok(&c, &[delete]).await;
                Coordinator::counter_write(&*c, vec![increment(&table, 1, delta)], Consistency::One)
                    .await
                    .unwrap();
                assert_eq!(total(&c, &table, 1).await, delta, "after {delete}");
            }
            Coordinator::counter_write(&*c, vec![increment(&table, 1, -3)], Consistency::One)
                .await
                .unwrap();
            assert!(c.close(Duration::from_secs(10)).await.is_empty());
            table
        });
        rt.block_on(async {
            let c = Arc::new(LocalCoordinator::open(&config).unwrap());
            assert_eq!(total(&c, &table, 1).await, 4);
            Coordinator::counter_write(&*c, vec![increment(&table, 1, -10)], Consistency::One)
                .await
                .unwrap();
            assert_eq!(
                total(&c, &table, 1).await,
                -6,
                "the shard's total survives a restart"
            );
            assert!(c.close(Duration::from_secs(10)).await.is_empty());
        });
    }
}
