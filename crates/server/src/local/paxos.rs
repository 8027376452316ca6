//! The Paxos state of lightweight transactions on this node (`mosaic_cluster::paxos`):
//! per table, one more partition of the node engine in `TABLE_DIR/paxos/`, keyed by the
//! partition's key prefix, each value a partition's whole [`PaxosState`]. It shares the
//! table's WAL, so a promise or an acceptance is as durable as the table's writes before
//! the replica answers, and it goes with the table's directory when the table is truncated
//! or dropped (a truncated table's old commits must not be replayed into it by a later
//! round's repair). Opened the first time a transaction touches the table: most tables
//! never do.
//!
//! State untouched for the table's `gc_grace_seconds` (at least three hours) is forgotten,
//! as Cassandra's `system.paxos` rows expire: reads ignore it and compactions drop it.
//!
//! Calls hold the table's store lock shared, as reads and writes do, so truncate, drop and
//! shutdown (which hold it exclusively) never close the state under a running call.

use super::tables::{engine_error, run_engine_call};
use super::*;

use mosaic_cluster::paxos::{PaxosState, PaxosSummary};
use mosaic_lsm::{CompactionFilter, Db};
use mosaic_rows::KeyRange;
use std::ops::Bound;

/// The directory of a table's Paxos state, inside the table's.
const PAXOS_DIR: &str = "paxos";
/// The shortest time state is kept, whatever the table's `gc_grace_seconds` (Cassandra's).
const MIN_GRACE_SECONDS: u64 = 3 * 3600;

/// A table's Paxos state storage: opened on first use.
#[derive(Default)]
pub(super) struct PaxosSlot {
    db: parking_lot::Mutex<Option<Db>>,
}

impl PaxosSlot {
    /// The open storage, opening it in `table_dir` first if needed (state older than
    /// `grace_micros` is dropped by its compactions).
    fn open(
        &self,
        engine: &Options,
        table_dir: &Path,
        grace_micros: u64,
    ) -> mosaic_lsm::Result<Db> {
        let mut db = self.db.lock();
        if let Some(db) = db.as_ref() {
            return Ok(db.clone());
        }
        let mut options = engine.clone();
        options.table.filter_prefix_bytes = 0;
        options.compaction_filter = Some(Arc::new(Expiry { grace_micros }));
        let opened = Db::open(table_dir.join(PAXOS_DIR), options)?;
        *db = Some(opened.clone());
        Ok(opened)
    }

    /// Whether the storage is open (opening it is a longer call).
    fn is_open(&self) -> bool {
        self.db.lock().is_some()
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

/// Forgets state saved more than the grace period ago.
struct Expiry {
    grace_micros: u64,
}

impl Expiry {
    fn expired(&self, saved_micros: u64) -> bool {
        let now = u64::try_from(identity::now_micros()).unwrap_or(0);
        saved_micros.saturating_add(self.grace_micros) < now
    }
}

impl CompactionFilter for Expiry {
    fn drops(&self, _key: &[u8], ts: u64) -> bool {
        self.expired(ts)
    }
}

/// A stored state of the table in `table_dir` (an undecodable one is corruption).
fn decode_state(bytes: &[u8], table_dir: &Path) -> mosaic_lsm::Result<PaxosState> {
    PaxosState::decode(bytes).map_err(|reason| mosaic_lsm::Error::Corruption {
        file: table_dir.join(PAXOS_DIR),
        offset: 0,
        reason,
    })
}

impl LocalCoordinator {
    /// The Paxos state of `partition` of `table`, if it has one.
    pub async fn paxos_state(
        &self,
        table: TableId,
        partition: Vec<u8>,
    ) -> Result<Option<PaxosState>, ErrorResponse> {
        self.on_paxos(table, move |db, dir, expiry| {
            let Some(entry) = db.get(&partition)? else {
                return Ok(None);
            };
            if expiry.expired(entry.ts) {
                return Ok(None);
            }
            decode_state(&entry.value, dir).map(Some)
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
        self.on_paxos(table, move |db, _, _| {
            // Versions are ordered by timestamp: each one above the last and the clock.
            let last = db.get(&partition)?.map_or(0, |e| e.ts);
            let now = u64::try_from(identity::now_micros()).unwrap_or(0);
            db.put(&partition, now.max(last + 1), &state.encode())
        })
        .await
    }

    /// Repair: summaries of the Paxos state of `range`'s partitions, in key order, at
    /// most `limit`, after partition `after`; and the partition to resume after when
    /// more remain. A table that never ran a transaction here has none (its storage is not
    /// created for the question).
    pub async fn paxos_summaries(
        &self,
        table: TableId,
        range: KeyRange,
        after: Option<Vec<u8>>,
        limit: usize,
    ) -> Result<mosaic_cluster::env::PaxosSummaryPage, ErrorResponse> {
        let slot = self.slot(table)?;
        if !slot.paxos.is_open() && !slot.dir.join(PAXOS_DIR).exists() {
            return Ok((Vec::new(), None));
        }
        self.on_paxos(table, move |db, dir, expiry| {
            let start = match &after {
                Some(a) if a.as_slice() >= range.start.as_slice() => Bound::Excluded(a.as_slice()),
                _ => Bound::Included(range.start.as_slice()),
            };
            let end = range
                .end
                .as_deref()
                .map_or(Bound::Unbounded, Bound::Excluded);
            let mut entries = Vec::new();
            for item in db.scan(start, end)? {
                let (partition, entry) = item?;
                if expiry.expired(entry.ts) {
                    continue;
                }
                if entries.len() == limit {
                    let next = entries.last().map(|s: &PaxosSummary| s.partition.clone());
                    return Ok((entries, next));
                }
                entries.push(decode_state(&entry.value, dir)?.summary(partition));
            }
            Ok((entries, None))
        })
        .await
    }

    /// Runs `f` on `table`'s Paxos storage, holding the table's store lock shared: where
    /// the table's writes run (`[storage] engine_calls`, see the module doc of
    /// `crate::local`), so a transaction pays no thread hand-off per step, and off the
    /// network thread when the storage must be opened first or the engine is stalling.
    async fn on_paxos<T: Send + 'static>(
        &self,
        table: TableId,
        f: impl FnOnce(&Db, &Path, &Expiry) -> mosaic_lsm::Result<T> + Send + 'static,
    ) -> Result<T, ErrorResponse> {
        let slot = self.slot(table)?;
        let guard = slot.db.clone().read_owned().await;
        if guard.is_none() || self.closing.load(Ordering::SeqCst) {
            return Err(self.closed_error(&slot));
        }
        let grace_seconds = self
            .current_catalog()
            .table_by_id(table)
            .map_or(0, |t| t.params.gc_grace_seconds);
        let expiry = Expiry {
            grace_micros: u64::try_from(grace_seconds)
                .unwrap_or(0)
                .max(MIN_GRACE_SECONDS)
                .saturating_mul(1_000_000),
        };
        let inline = self.inline_writes && slot.paxos.is_open() && !self.node_engine.is_stalling();
        let result = run_engine_call(inline, || {
            let _store = &guard;
            let db = slot
                .paxos
                .open(&self.engine, &slot.dir, expiry.grace_micros)?;
            f(&db, &slot.dir, &expiry)
        });
        result.map_err(|e| engine_error(&slot.name, e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mosaic_cluster::paxos::{Ballot, Proposal};
    use mosaic_cluster::WireMutation;

    fn state(micros: u64) -> PaxosState {
        let ballot = Ballot { micros, node: 7 };
        let mut s = PaxosState::default();
        s.prepare(ballot);
        s.propose(Proposal {
            ballot,
            mutations: vec![WireMutation {
                key: b"k".to_vec(),
                ts: micros,
                fragment: vec![1, 2, 3],
            }],
        });
        s
    }

    /// A node with the table `ks.t`, and its id.
    async fn with_table(config: &Config) -> (Arc<LocalCoordinator>, TableId) {
        let c = Arc::new(LocalCoordinator::open(config).unwrap());
        super::super::tests::run_all_ok(
            &c,
            &[
                "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
                "CREATE TABLE ks.t (k int PRIMARY KEY, v text)",
            ],
        )
        .await;
        let table = c.catalog().table("ks", "t").unwrap().id;
        (c, table)
    }

    #[test]
    fn state_survives_restart_and_goes_with_truncate_and_drop() {
        let dir = tempfile::tempdir().unwrap();
        let rt = super::super::tests::rt();
        let config = super::super::tests::config(dir.path());
        let table = rt.block_on(async {
            let (c, table) = with_table(&config).await;
            assert_eq!(c.paxos_state(table, b"p1".to_vec()).await.unwrap(), None);
            c.save_paxos_state(table, b"p1".to_vec(), state(5))
                .await
                .unwrap();
            c.save_paxos_state(table, b"p1".to_vec(), state(9))
                .await
                .unwrap();
            c.save_paxos_state(table, b"p2".to_vec(), state(6))
                .await
                .unwrap();
            assert_eq!(
                c.paxos_state(table, b"p1".to_vec()).await.unwrap(),
                Some(state(9))
            );
            assert!(c.close(Duration::from_secs(10)).await.is_empty());
            table
        });
        rt.block_on(async {
            let c = Arc::new(LocalCoordinator::open(&config).unwrap());
            // The newest save of each partition, after a restart.
            assert_eq!(
                c.paxos_state(table, b"p1".to_vec()).await.unwrap(),
                Some(state(9))
            );
            assert_eq!(
                c.paxos_state(table, b"p2".to_vec()).await.unwrap(),
                Some(state(6))
            );
            // A truncated table's old rounds are gone with its rows.
            c.truncate_local(table).await.unwrap();
            assert_eq!(c.paxos_state(table, b"p1".to_vec()).await.unwrap(), None);
            c.save_paxos_state(table, b"p1".to_vec(), state(11))
                .await
                .unwrap();
            assert_eq!(
                c.paxos_state(table, b"p1".to_vec()).await.unwrap(),
                Some(state(11))
            );
            super::super::tests::run_all_ok(&c, &["DROP TABLE ks.t"]).await;
            let e = c.paxos_state(table, b"p1".to_vec()).await.unwrap_err();
            assert_eq!(e.message, "unconfigured table t");
            assert!(c.close(Duration::from_secs(10)).await.is_empty());
        });
    }

    #[test]
    fn repair_reads_summaries_of_a_range_page_by_page() {
        let dir = tempfile::tempdir().unwrap();
        let rt = super::super::tests::rt();
        let config = super::super::tests::config(dir.path());
        rt.block_on(async {
            let (c, table) = with_table(&config).await;
            let everything = KeyRange {
                start: Vec::new(),
                end: None,
            };
            // No transaction ever ran: nothing, and no storage created to say so.
            assert_eq!(
                c.paxos_summaries(table, everything.clone(), None, 10)
                    .await
                    .unwrap(),
                (Vec::new(), None)
            );
            assert!(!dir.path().join("ks").read_dir().unwrap().any(|d| d
                .unwrap()
                .path()
                .join(PAXOS_DIR)
                .exists()));
            for (i, p) in [b"p1", b"p2", b"p3", b"p4", b"p5"].iter().enumerate() {
                c.save_paxos_state(table, p.to_vec(), state(10 + i as u64))
                    .await
                    .unwrap();
            }
            let mut seen = Vec::new();
            let mut after = None;
            let mut pages = 0;
            loop {
                let (page, next) = c
                    .paxos_summaries(table, everything.clone(), after.take(), 2)
                    .await
                    .unwrap();
                assert!(page.len() <= 2);
                seen.extend(page);
                pages += 1;
                match next {
                    Some(n) => after = Some(n),
                    None => break,
                }
            }
            assert_eq!(pages, 3);
            let names: Vec<&[u8]> = seen.iter().map(|s| s.partition.as_slice()).collect();
            assert_eq!(names, [b"p1", b"p2", b"p3", b"p4", b"p5"]);
            assert!(seen
                .iter()
                .all(|s| s.unfinished && s.committed == Ballot::ZERO));
            // A range: [p2, p4).
            let some = KeyRange {
                start: b"p2".to_vec(),
                end: Some(b"p4".to_vec()),
            };
            let (page, next) = c.paxos_summaries(table, some, None, 10).await.unwrap();
            let names: Vec<&[u8]> = page.iter().map(|s| s.partition.as_slice()).collect();
            assert_eq!((names, next), (vec![&b"p2"[..], &b"p3"[..]], None));
            assert!(c.close(Duration::from_secs(10)).await.is_empty());
        });
    }

    #[test]
    fn state_older_than_the_grace_period_is_forgotten() {
        let expiry = Expiry {
            grace_micros: MIN_GRACE_SECONDS * 1_000_000,
        };
        let now = u64::try_from(identity::now_micros()).unwrap();
        assert!(!expiry.drops(b"p", now));
        assert!(!expiry.drops(b"p", now - expiry.grace_micros + 60_000_000));
        assert!(expiry.drops(b"p", now - expiry.grace_micros - 60_000_000));
    }
}
