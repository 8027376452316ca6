//! Sweeping a secondary index of stale entries (see `indexes`' module doc): the index
//! partition's compaction filter checks each entry version against its base row as this
//! node stores it, and drops the versions the row proves superseded
//! ([`IndexPlan::proves_stale`]), so entries left behind by overwrites and deletions do not
//! accumulate until a read meets them.
//!
//! The check reads the base table from a compaction worker: it never waits for the table
//! (a table being truncated, dropped or closed keeps its entries), reads each row under
//! the role the ring gives its token, and keeps every entry it cannot judge.

use super::*;

use mosaic_cql::index::{split_entry_key, IndexPlan};
use mosaic_rows::Fragment;
use mosaic_types::Timestamp;

use super::indexes::RolesSource;

/// The node's [`RolesSource`], shared with its indexes' sweeps.
pub(super) type SharedRoles = Arc<RwLock<RolesSource>>;

/// What an index's sweep reads: its table's store and where the roles of its tokens are.
#[derive(Clone)]
pub(super) struct SweepSource {
    pub(super) store: Arc<AsyncRwLock<Option<ReplicaStore>>>,
    pub(super) roles: SharedRoles,
}

/// How long a sweep keeps the roles it read (the ring changes rarely; reading it per entry
/// would cost more than the check).
const SWEEP_ROLES_MS: u128 = 1000;

/// The index partition's compaction filter (see the module doc): drops the entry versions
/// whose base row, as this node stores it, proves them stale. Anything it cannot read (the
/// table closing, a damaged row) keeps the entry: a read judges it later.
pub(super) struct StaleEntries {
    plan: IndexPlan,
    table: TableId,
    source: SweepSource,
    /// The roles last read, and when.
    roles: Mutex<Option<(std::time::Instant, Arc<dyn Roles>)>>,
    /// Entry versions dropped so far.
    dropped: Arc<AtomicU64>,
}

impl StaleEntries {
    pub(super) fn new(
        plan: IndexPlan,
        table: TableId,
        source: SweepSource,
        dropped: Arc<AtomicU64>,
    ) -> StaleEntries {
        StaleEntries {
            plan,
            table,
            source,
            roles: Mutex::new(None),
            dropped,
        }
    }

    fn role(&self, token: Token) -> Role {
        let mut cached = self.roles.lock();
        let fresh = cached
            .as_ref()
            .is_some_and(|(at, _)| at.elapsed().as_millis() < SWEEP_ROLES_MS);
        if !fresh {
            let roles: Arc<dyn Roles> = Arc::from((self.source.roles.read())(self.table));
            *cached = Some((std::time::Instant::now(), roles));
        }
        match cached.as_ref() {
            Some((_, roles)) => roles.role(token),
            None => Role::Primary,
        }
    }
}

impl mosaic_lsm::CompactionFilter for StaleEntries {
    fn drops(&self, key: &[u8], ts: u64) -> bool {
        let Some((term, base)) = split_entry_key(key) else {
            return false;
        };
        let Ok(token) = mosaic_rows::key::decode_token(base) else {
            return false;
        };
        let role = self.role(token);
        // Never waits: a table being truncated, dropped or closed keeps its entries.
        let Ok(guard) = self.source.store.try_read() else {
            return false;
        };
        let Some(Ok(Some(row))) = guard.as_ref().map(|store| store.get(role, base)) else {
            return false;
        };
        let Ok(row) = Fragment::decode(&row.value) else {
            return false;
        };
        let stale = self
            .plan
            .proves_stale(&row, term, Timestamp::from_engine(ts));
        if stale {
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
        stale
    }

    fn at_flush(&self) -> bool {
        false
    }
}
