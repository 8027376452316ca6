//! The Paxos state of lightweight transactions on this node (`mosaic_cluster::paxos`):
//! per table, one more partition of the node engine in `TABLE_DIR/paxos/`, keyed by the
//! partition's key prefix, each value a partition's whole [`PaxosState`]. It shares the
//! table's WAL, so a promise or an acceptance is as durable as the table's writes before
//! the replica answers, and it goes with the table's directory when the table is truncated
//! or dropped (a truncated table's old commits must not be replayed into it by a later
//! round's repair). Opened the first time a transaction touches the table: most tables
//! never do.
//!
//! Calls hold the table's store lock shared, as reads and writes do, so truncate, drop and
//! shutdown (which hold it exclusively) never close the state under a running call.

use super::tables::{engine_error, join_error};
use super::*;

use mosaic_cluster::paxos::PaxosState;
use mosaic_lsm::Db;

/// The directory of a table's Paxos state, inside the table's.
const PAXOS_DIR: &str = "paxos";

/// A table's Paxos state storage: opened on first use.
#[derive(Default)]
pub(super) struct PaxosSlot {
    db: parking_lot::Mutex<Option<Db>>,
}

impl PaxosSlot {
    /// The open storage, opening it in `table_dir` first if needed.
    fn open(&self, engine: &Options, table_dir: &Path) -> mosaic_lsm::Result<Db> {
        let mut db = self.db.lock();
        if let Some(db) = db.as_ref() {
            return Ok(db.clone());
        }
        let mut options = engine.clone();
        options.table.filter_prefix_bytes = 0;
        let opened = Db::open(table_dir.join(PAXOS_DIR), options)?;
        *db = Some(opened.clone());
        Ok(opened)
    }

    /// Closes the storage if it is open (before the table's directory is deleted, or at
    /// shutdown); the next call opens it again.
    pub(super) fn close(&self, table: &str) {
        if let Some(db) = self.db.lock().take() {
            if let Err(e) = db.close() {
                tracing::warn!(target: "mosaic::storage", table, error = %e, "closing the Paxos state failed");
            }
        }
    }
}

impl LocalCoordinator {
    /// The Paxos state of `partition` of `table`, if it has one.
    pub async fn paxos_state(
        &self,
        table: TableId,
        partition: Vec<u8>,
    ) -> Result<Option<PaxosState>, ErrorResponse> {
        self.on_paxos(table, move |db, dir| {
            let Some(entry) = db.get(&partition)? else {
                return Ok(None);
            };
            PaxosState::decode(&entry.value)
                .map(Some)
                .map_err(|reason| mosaic_lsm::Error::Corruption {
                    file: dir.join(PAXOS_DIR),
                    offset: 0,
                    reason,
                })
        })
        .await
    }

    /// Keeps the Paxos state of `partition` of `table` (replacing the previous one).
    pub async fn save_paxos_state(
        &self,
        table: TableId,
        partition: Vec<u8>,
        state: PaxosState,
    ) -> Result<(), ErrorResponse> {
        self.on_paxos(table, move |db, _| {
            // Versions are ordered by timestamp: each one above the last and the clock.
            let last = db.get(&partition)?.map_or(0, |e| e.ts);
            let now = u64::try_from(identity::now_micros()).unwrap_or(0);
            db.put(&partition, now.max(last + 1), &state.encode())
        })
        .await
    }

    /// Runs `f` on `table`'s Paxos storage on a blocking thread (a save may wait for an
    /// fsync), holding the table's store lock shared.
    async fn on_paxos<T: Send + 'static>(
        &self,
        table: TableId,
        f: impl FnOnce(&Db, &Path) -> mosaic_lsm::Result<T> + Send + 'static,
    ) -> Result<T, ErrorResponse> {
        let slot = self.slot(table)?;
        let guard = slot.db.clone().read_owned().await;
        if guard.is_none() || self.closing.load(Ordering::SeqCst) {
            return Err(self.closed_error(&slot));
        }
        let engine = self.engine.clone();
        let name = slot.name.clone();
        tokio::task::spawn_blocking(move || {
            let _store = guard;
            let db = slot.paxos.open(&engine, &slot.dir)?;
            f(&db, &slot.dir)
        })
        .await
        .map_err(join_error)?
        .map_err(|e| engine_error(&name, e))
    }
}
