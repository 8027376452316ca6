//! The `erasure-tiered` layout's steps on a [`LocalStore`]: each runs on a blocking
//! thread against the table's store and its coding state, except reads of what the store
//! holds in memory.

use super::*;

/// Tables a data node reads for coding per table and round.
pub(super) const FILLS_PER_PICK: usize = 4;

impl LocalStore {
    /// `table`'s code, if it is `erasure-tiered`.
    pub(super) fn ec_code(&self, table: TableKey) -> mosaic_lsm::Result<ErasureCode> {
        self.local
            .erasure_tables()
            .into_iter()
            .find(|(t, _)| *t == table)
            .map(|(_, code)| code)
            .ok_or_else(|| mosaic_lsm::Error::InvalidArgument("not an erasure-tiered table".into()))
    }

    /// Runs an ELECT step on `table`'s store (and its coding state) on a blocking thread.
    pub(super) fn on_elect<T: Send + 'static>(
        &self,
        table: TableKey,
        f: impl FnOnce(&ReplicaStore, mosaic_lsm::Result<&Elect>) -> mosaic_lsm::Result<T>
            + Send
            + 'static,
    ) -> BoxFuture<'_, Result<T, Failure>> {
        async move {
            self.local
                .with_store(table, move |store| {
                    let elect = store.elect().ok_or_else(|| {
                        mosaic_lsm::Error::InvalidArgument("not an erasure-tiered table".into())
                    });
                    f(store, elect)
                })
                .await
                .map_err(failure)
        }
        .boxed()
    }

    /// As [`LocalStore::on_elect`], for reads of what the store holds in memory: run on
    /// the read stage (or inline), not on a blocking thread.
    pub(super) fn on_elect_read<T: Send + 'static>(
        &self,
        table: TableKey,
        f: impl FnOnce(&ReplicaStore) -> mosaic_lsm::Result<T> + Send + 'static,
    ) -> BoxFuture<'_, Result<T, Failure>> {
        async move { self.local.read_store(table, f).await.map_err(failure) }.boxed()
    }
}
