//! The shards of the counter increments this node leads (`mosaic_rows::counter`): each
//! increment reads the row and its partition's head from this node's storage (under the
//! ring's roles), resolves what a read would see of this node's shard, and writes the
//! next shard. The caller (`mosaic_cluster`'s counter path) holds the counter's lock from
//! here until the shards are applied.

use super::*;
use mosaic_cluster::message::WireCounter;
use mosaic_cluster::WireMutation;
use mosaic_cql::coordinator::{CounterIncrement, Mutation};
use mosaic_rows::counter::{counter_key_kind, stored_shard, LeaderBatch};
use mosaic_rows::{ColumnId, KeyRange, LiveCell};
use mosaic_types::Timestamp;

impl LocalCoordinator {
    /// This node's new shards for `increments` of `table` (several of one counter add
    /// up), as writes to apply and replicate.
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
        let schema = meta.key_schema();
        let host = self.local_node().host_id.0;
        let now_secs = self.now_secs();
        let mut batch = LeaderBatch::new(&host);
        for increment in increments {
            let column = ColumnId(increment.column);
            let key = &increment.key;
            let kind = counter_key_kind(&schema, key).ok_or_else(|| bad_key(&meta.name))?;
            let stored = match batch.pending(key, column) {
                Some(pending) => pending,
                None => {
                    self.read_shard(table, &schema, key, column, &host, roles, now_secs)
                        .await?
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
        Ok(batch
            .into_writes()
            .into_iter()
            .map(|(key, ts, fragment)| WireMutation { key, ts, fragment })
            .collect())
    }

    /// The writes carrying this node's new shards for `increments` (of any tables), as
    /// a coordinator that leads them all applies them (the caller holds its counters'
    /// lock).
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
            super::super::tests::run_all_ok(&c, &["DELETE FROM ks.t WHERE k = 1"]).await;
            assert_eq!(total(&c, &table, 1).await, 0);
            Coordinator::counter_write(&*c, vec![increment(&table, 1, 4)], Consistency::One)
                .await
                .unwrap();
            assert_eq!(total(&c, &table, 1).await, 4, "counts again from zero after a delete");
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
