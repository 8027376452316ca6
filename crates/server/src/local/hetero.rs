//! Heterogeneous tables on this node: the statistics routing costs reads by, the costs
//! themselves, order changes from `ALTER TABLE` and the re-layouts they start.
//!
//! Every replica of a heterogeneous table holds the same rows, so any node's sample of its
//! own rows describes the table's value distributions: each table keeps a reservoir sample
//! of the clustering keys written here (`mosaic_hetero::Sampler`; a write costs a counter
//! decrement unless its row is kept), seeded at open from the rows already stored, and a
//! statistics snapshot rebuilt from it at most once per [`STATS_REFRESH`]. A coordinator
//! costs a read at each replica position with the paper's model
//! (`mosaic_hetero::replica_costs`) and asks the cheapest live replicas.
//!
//! Re-layouts (see `mosaic_replica::heterogeneous`) are driven by [`LocalCoordinator::relayout_pass`]: copy
//! steps under the table's shared lock, so reads and writes go on, and the switch under its
//! exclusive lock.

use std::time::Instant;

use mosaic_hetero::{CostModel, Sampler, TableStats};

use super::*;

/// How often a table's statistics snapshot is rebuilt from its sample, at most.
pub(super) const STATS_REFRESH: Duration = Duration::from_secs(1);
/// Rows kept in a table's sample.
const SAMPLE_ROWS: usize = 4096;
/// Rows read at open to seed the sample.
const SEED_ROWS: usize = 4 * SAMPLE_ROWS;
/// Entries a re-layout copies per step.
const RELAYOUT_STEP_ENTRIES: usize = 4096;

/// A heterogeneous table's sample and statistics.
pub(super) struct HeteroState {
    sampler: Mutex<Sampler>,
    stats: Mutex<Option<(Instant, Arc<TableStats>)>>,
    model: CostModel,
}

impl HeteroState {
    /// A state with an empty sample (seed it with [`HeteroState::seed`]).
    pub(super) fn new(table: &TableMeta) -> HeteroState {
        let seed = u64::from_le_bytes(table.id.0[..8].try_into().unwrap_or([0; 8]));
        HeteroState {
            sampler: Mutex::new(Sampler::new(SAMPLE_ROWS, seed)),
            stats: Mutex::new(None),
            model: CostModel::default(),
        }
    }

    /// Offers the rows of written canonical `keys` to the sample.
    pub(super) fn observe<'a>(&self, schema: &KeySchema, keys: impl Iterator<Item = &'a [u8]>) {
        let mut sampler = self.sampler.lock();
        for key in keys {
            if !sampler.wants_next() {
                continue;
            }
            if let Ok(Some(spans)) = schema.declared_row_spans(key) {
                let row = spans
                    .components
                    .iter()
                    .map(|r| key.get(r.clone()).unwrap_or_default().to_vec())
                    .collect();
                sampler.add(row);
            }
        }
    }

    /// Seeds the sample with rows already stored (after a restart), from every index's
    /// tree in turn, up to [`SEED_ROWS`] rows.
    pub(super) fn seed(&self, schema: &KeySchema, store: &ReplicaStore) {
        let whole = KeyRange {
            start: Vec::new(),
            end: None,
        };
        let mut read = 0;
        for tree in store.heterogeneous_stats() {
            let role = match u8::try_from(tree.index) {
                Ok(0) => Role::Primary,
                Ok(index) => Role::Redundant {
                    source: mosaic_replica::SourceId([0; 16]),
                    index,
                },
                Err(_) => continue,
            };
            let Ok(scan) = store.scan_filtered(role, &whole, None) else {
                continue;
            };
            let keys: Vec<Vec<u8>> = scan
                .take(SEED_ROWS.saturating_sub(read))
                .filter_map(|r| r.ok().map(|(k, _)| k))
                .collect();
            read += keys.len();
            self.observe(schema, keys.iter().map(Vec::as_slice));
            if read >= SEED_ROWS {
                break;
            }
        }
    }

    /// The statistics snapshot, rebuilt when older than [`STATS_REFRESH`].
    pub(super) fn stats(&self) -> Arc<TableStats> {
        let mut cached = self.stats.lock();
        if let Some((at, stats)) = cached.as_ref() {
            if at.elapsed() < STATS_REFRESH {
                return stats.clone();
            }
        }
        let stats = Arc::new(self.sampler.lock().stats());
        *cached = Some((Instant::now(), stats.clone()));
        stats
    }
}

impl LocalCoordinator {
    /// The estimated cost (µs) of a read of `table` with `filter` and `limit` at each of
    /// the first `rf` replica positions; `None` unless the table is heterogeneous.
    pub fn replica_costs(
        &self,
        table: TableId,
        filter: Option<&ClusteringFilter>,
        limit: usize,
        rf: usize,
    ) -> Option<Vec<f64>> {
        let slot = self.tables.read().get(&table).cloned()?;
        let state = slot.hetero.as_ref()?;
        let perms: Vec<Permutation> = {
            let keys = slot.keys.read();
            (0..rf).map(|i| keys.order(i)).collect()
        };
        let trivial = ClusteringFilter::default();
        let stats = state.stats();
        Some(mosaic_hetero::replica_costs(
            &stats,
            &perms,
            filter.unwrap_or(&trivial),
            Some(limit as u64),
            &state.model,
        ))
    }

    /// Whether `table` is stored heterogeneous.
    pub fn is_heterogeneous(&self, table: TableId) -> bool {
        self.tables
            .read()
            .get(&table)
            .is_some_and(|s| s.hetero.is_some())
    }

    /// The statistics of heterogeneous `table` on this node, if it is one.
    pub fn table_stats(&self, table: TableId) -> Option<Arc<TableStats>> {
        let slot = self.tables.read().get(&table).cloned()?;
        Some(slot.hetero.as_ref()?.stats())
    }

    /// Gives heterogeneous tables whose replica orders changed between `current` and
    /// `next` their new orders (starting re-layouts), each under its table's exclusive
    /// lock. Failures are logged: the table keeps its old orders until the next start.
    pub(super) async fn apply_order_changes(&self, current: &Catalog, next: &Catalog) {
        for t in next.tables() {
            let Some(old) = current.table_by_id(t.id) else {
                continue;
            };
            if t.params.layout != Layout::Heterogeneous
                || old.replica_orders() == t.replica_orders()
            {
                continue;
            }
            let Ok(slot) = self.slot(t.id) else { continue };
            let keys = tables::table_keys(t);
            *slot.keys.write() = keys.clone();
            let guard = slot.db.clone().write_owned().await;
            let name = slot.name.clone();
            let result = tokio::task::spawn_blocking(move || match guard.as_ref() {
                Some(store) => store.set_orders(keys.orders),
                None => Ok(()),
            })
            .await;
            match result {
                Ok(Ok(())) => {
                    tracing::info!(target: "mosaic::storage", table = name, orders = %t.params.layout_options.get("replica_orders").cloned().unwrap_or_default(), "replica orders changed; re-layout started")
                }
                Ok(Err(e)) => {
                    tracing::error!(target: "mosaic::storage", table = name, error = %e, "changing the replica orders failed")
                }
                Err(e) => {
                    tracing::error!(target: "mosaic::storage", table = name, error = %e, "changing the replica orders failed")
                }
            }
        }
    }

    /// One pass of re-layout work: every heterogeneous table with a re-layout under way
    /// copies up to one step's entries; tables whose copy completed switch to their new
    /// trees. Returns whether work is left.
    pub async fn relayout_pass(&self) -> bool {
        let slots: Vec<Arc<TableSlot>> = self
            .tables
            .read()
            .values()
            .filter(|s| s.layout == Layout::Heterogeneous)
            .cloned()
            .collect();
        let mut left = false;
        for slot in slots {
            let guard = slot.db.clone().read_owned().await;
            let pending = guard
                .as_ref()
                .map(|s| s.relayout_status())
                .unwrap_or_default();
            if pending.is_empty() {
                continue;
            }
            let name = slot.name.clone();
            let step = tokio::task::spawn_blocking(move || match guard.as_ref() {
                Some(store) => store.relayout_step(RELAYOUT_STEP_ENTRIES),
                None => Ok(false),
            })
            .await;
            let copying = match step {
                Ok(Ok(copying)) => copying,
                Ok(Err(e)) => {
                    tracing::error!(target: "mosaic::storage", table = name, error = %e, "re-layout step failed");
                    left = true;
                    continue;
                }
                Err(e) => {
                    tracing::error!(target: "mosaic::storage", table = name, error = %e, "re-layout step failed");
                    continue;
                }
            };
            if copying {
                left = true;
                continue;
            }
            let guard = slot.db.clone().write_owned().await;
            let finished = tokio::task::spawn_blocking(move || match guard.as_ref() {
                Some(store) => store.relayout_finish(),
                None => Ok(0),
            })
            .await;
            match finished {
                Ok(Ok(n)) if n > 0 => {
                    tracing::info!(target: "mosaic::storage", table = name, finished = n, "re-layout finished")
                }
                Ok(Ok(_)) => {}
                Ok(Err(e)) => {
                    tracing::error!(target: "mosaic::storage", table = name, error = %e, "re-layout switch failed");
                    left = true;
                }
                Err(e) => {
                    tracing::error!(target: "mosaic::storage", table = name, error = %e, "re-layout switch failed")
                }
            }
        }
        left
    }
}
