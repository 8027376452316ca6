//! The single-node [`Coordinator`]: a node that is its whole cluster, every token
//! primary (the unit tests drive storage through it without a network).

use super::tables::server_error;
use super::*;
use mosaic_cql::coordinator::{
    cas_on_one_copy, CasDecision, CasOutcome, CasRequest, CounterIncrement,
};

impl Coordinator for LocalCoordinator {
    fn catalog(&self) -> Arc<Catalog> {
        self.catalog.read().clone()
    }

    async fn update_schema<R, F>(&self, change: F) -> Result<R, ErrorResponse>
    where
        R: Send + 'static,
        F: FnOnce(&Catalog) -> Result<(Catalog, R), ErrorResponse> + Send + 'static,
    {
        let _ddl = self.ddl.lock().await;
        if self.closing.load(Ordering::SeqCst) {
            return Err(server_error("The node is shutting down"));
        }
        let current = self.catalog();
        let (next, r) = change(&current)?;
        if next == *current {
            return Ok(r);
        }
        // Checked: a schema adopted from a peer may carry any epoch (u64::MAX included).
        let epoch = self
            .epoch
            .load(Ordering::SeqCst)
            .checked_add(1)
            .ok_or_else(|| {
                server_error(
                    "The schema's epoch is exhausted (a peer sent the largest possible epoch);                      the schema cannot change",
                )
            })?;
        self.install(&current, next, epoch, "local").await?;
        Ok(r)
    }

    async fn cas(
        &self,
        request: CasRequest,
        decision: Arc<dyn CasDecision>,
        serial: Consistency,
        commit: Consistency,
    ) -> Result<CasOutcome, ErrorResponse> {
        let _step = self.cas.lock().await;
        cas_on_one_copy(self, request, &*decision, serial, commit).await
    }

    async fn counter_write(
        &self,
        increments: Vec<CounterIncrement>,
        consistency: Consistency,
    ) -> Result<(), ErrorResponse> {
        // The node is its whole cluster: it leads every counter, and its copy is the
        // write.
        for table in increments
            .iter()
            .map(|i| i.table)
            .collect::<std::collections::BTreeSet<_>>()
        {
            self.check_available(table, consistency, true)?;
        }
        let _step = self.cas.lock().await;
        self.counter_mutations(increments, &AllPrimary).await?;
        Ok(())
    }

    fn new_timestamp(&self) -> i64 {
        LocalCoordinator::new_timestamp(self)
    }

    fn now_secs(&self) -> i64 {
        LocalCoordinator::now_secs(self)
    }

    fn local_node(&self) -> NodeInfo {
        LocalCoordinator::local_node(self)
    }

    fn peers(&self) -> Vec<NodeInfo> {
        Vec::new()
    }

    fn cluster_info(&self) -> ClusterInfo {
        LocalCoordinator::cluster_info(self)
    }

    fn default_layout(&self) -> Result<mosaic_types::Layout, ErrorResponse> {
        Ok(self.default_layout)
    }

    fn tombstone_thresholds(&self) -> mosaic_cql::coordinator::TombstoneThresholds {
        self.tombstones
    }

    async fn write(
        &self,
        mutations: Vec<Mutation>,
        consistency: Consistency,
    ) -> Result<(), ErrorResponse> {
        let mut checked: Vec<TableId> = Vec::new();
        for m in &mutations {
            if !checked.contains(&m.table) {
                self.check_available(m.table, consistency, true)?;
                checked.push(m.table);
            }
        }
        let mut by_table: BTreeMap<TableId, Vec<WireMutation>> = BTreeMap::new();
        for m in mutations {
            by_table.entry(m.table).or_default().push(WireMutation {
                key: m.key,
                ts: m.ts,
                fragment: m.fragment,
            });
        }
        self.apply(by_table, &AllPrimary).await
    }

    async fn read(
        &self,
        command: ReadCommand,
        consistency: Consistency,
    ) -> Result<ReadResult, ErrorResponse> {
        self.check_available(command.table, consistency, false)?;
        self.read_local(command, &AllPrimary, ReadClass::default())
            .await
    }

    fn built_indexes(&self) -> Vec<(String, String)> {
        self.built_index_names()
    }

    fn index_mean_rows(&self, table: TableId, index: &str) -> Option<f64> {
        LocalCoordinator::index_mean_rows(self, table, index)
    }

    async fn truncate(&self, table: TableId) -> Result<(), ErrorResponse> {
        self.truncate_local(table).await
    }
}
