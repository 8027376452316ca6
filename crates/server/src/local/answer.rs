//! What bounds one read's answer on this replica, whatever the asker wants: its entries
//! and bytes (`[cluster] read_answer_rows_max`, `read_answer_bytes_max`; the cluster node
//! caps a peer's entry limit too, before the read gets here) and its time (`[cluster] read_request_timeout_ms`: past it the
//! coordinator has given up, so nobody waits for the rest of the scan). Reads through a
//! secondary index (`indexes::read_through`) are bounded alike.
//!
//! An answer cut short by its bytes says so the way one cut by its entry limit does — the
//! range is not exhausted, or the stored key to resume after — so every asker (the cluster
//! coordinator, the statement layer, repair) reads on from its last key. An answer always
//! holds at least one entry, so reading on always makes progress.

use std::time::{Duration, Instant};

use mosaic_cql::frame::{Consistency, ErrorKind, ErrorResponse};

/// Entries scanned between looks at the clock.
const CLOCK_EVERY: usize = 64;

/// This node's bounds on one answer (see the module doc).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AnswerBounds {
    /// Entries past which an answer stops.
    pub rows_max: usize,
    /// Bytes of keys and values past which an answer stops (after at least one entry).
    pub bytes_max: usize,
    /// How long a read may run, from when it reached this node; `None`: unbounded.
    pub timeout: Option<Duration>,
}

impl Default for AnswerBounds {
    fn default() -> AnswerBounds {
        AnswerBounds {
            rows_max: mosaic_cluster::node::READ_ANSWER_ROWS_MAX,
            bytes_max: 4 << 20,
            timeout: None,
        }
    }
}

/// One read's progress against its bounds.
#[derive(Debug)]
pub(super) struct Budget {
    bytes: usize,
    bytes_max: usize,
    deadline: Option<Instant>,
    scanned: usize,
}

impl AnswerBounds {
    /// `limit` lowered to the entry cap (at least one entry).
    pub(super) fn rows(self, limit: usize) -> usize {
        limit.min(self.rows_max.max(1))
    }

    /// The budget of a read that starts now.
    pub(super) fn start(self) -> Budget {
        Budget {
            bytes: 0,
            bytes_max: self.bytes_max,
            deadline: self.timeout.map(|t| Instant::now() + t),
            scanned: 0,
        }
    }
}

impl Budget {
    /// Counts an entry added to the answer; whether the answer is now full (its bytes).
    pub(super) fn add(&mut self, key: &[u8], value: &[u8]) -> bool {
        self.bytes = self.bytes.saturating_add(key.len() + value.len());
        self.bytes >= self.bytes_max
    }

    /// The bytes the answer may still take before it is full.
    pub(super) fn bytes_left(&self) -> usize {
        self.bytes_max.saturating_sub(self.bytes)
    }

    /// Counts an entry scanned; a read timeout once the read's time has passed.
    pub(super) fn tick(&mut self) -> Result<(), ErrorResponse> {
        self.scanned += 1;
        if !self.scanned.is_multiple_of(CLOCK_EVERY) {
            return Ok(());
        }
        match self.deadline {
            Some(at) if Instant::now() >= at => Err(ErrorResponse::new(
                ErrorKind::ReadTimeout {
                    consistency: Consistency::One,
                    received: 0,
                    block_for: 1,
                    data_present: false,
                },
                format!(
                    "The read was abandoned after {} entries: the coordinator's read timeout \
                     passed",
                    self.scanned
                ),
            )),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_is_full_at_its_bytes_and_a_read_stops_at_its_time() {
        let b = AnswerBounds {
            rows_max: 5,
            bytes_max: 10,
            timeout: None,
        };
        assert_eq!((b.rows(usize::MAX), b.rows(3)), (5, 3));
        let mut b = b.start();
        assert!(!b.add(b"k1", b"123"));
        assert!(b.add(b"k2", b"123"));
        for _ in 0..10 * CLOCK_EVERY {
            b.tick().unwrap();
        }
        let mut late = AnswerBounds {
            rows_max: 5,
            bytes_max: 10,
            timeout: Some(Duration::ZERO),
        }
        .start();
        let stopped = (0..CLOCK_EVERY).map(|_| late.tick()).find(Result::is_err);
        assert!(matches!(
            stopped,
            Some(Err(ErrorResponse {
                kind: ErrorKind::ReadTimeout { .. },
                ..
            }))
        ));
    }

    /// A table of `rows` rows of ~100 bytes in one partition (its static column `s` set
    /// to 1), with `indexes` (waited for until built), and its coordinator; `configure`
    /// adjusts the node's config.
    async fn table_of(
        dir: &std::path::Path,
        configure: impl FnOnce(&mut crate::config::Config),
        rows: usize,
        indexes: &[&str],
    ) -> (
        std::sync::Arc<super::super::LocalCoordinator>,
        mosaic_cql::schema::TableId,
    ) {
        use super::super::tests::{config, run_ok};
        use mosaic_cql::coordinator::Coordinator;
        use mosaic_cql::frame::ProtocolVersion;
        use mosaic_cql::processor::{Processor, Session};
        let mut cfg = config(dir);
        configure(&mut cfg);
        let c = std::sync::Arc::new(super::super::LocalCoordinator::open(&cfg).unwrap());
        let p = Processor::new(c.clone());
        let mut s = Session::new(ProtocolVersion::V4);
        run_ok(&p, &mut s, "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}").await;
        run_ok(
            &p,
            &mut s,
            "CREATE TABLE ks.t (k int, c int, s int static, v text, PRIMARY KEY (k, c))",
        )
        .await;
        for index in indexes {
            run_ok(&p, &mut s, index).await;
        }
        run_ok(&p, &mut s, "UPDATE ks.t SET s = 1 WHERE k = 1").await;
        for i in 0..rows {
            let v = "x".repeat(100);
            run_ok(
                &p,
                &mut s,
                &format!("INSERT INTO ks.t (k, c, v) VALUES (1, {i}, '{v}')"),
            )
            .await;
        }
        // Indexes created on an empty table are built in the background at once.
        for _ in 0..500 {
            if c.built_index_names().len() >= indexes.len() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert_eq!(c.built_index_names().len(), indexes.len(), "indexes built");
        let table = c.catalog().table("ks", "t").unwrap().id;
        (c, table)
    }

    /// `cfg`'s answer caps set to `rows_max` entries and `bytes_max` bytes.
    fn caps(rows_max: usize, bytes_max: usize) -> impl FnOnce(&mut crate::config::Config) {
        move |cfg| {
            cfg.cluster.read_answer_rows_max = rows_max;
            cfg.cluster.read_answer_bytes_max = bytes_max;
        }
    }

    /// A read of the whole table through `index` for `term`.
    fn through(
        table: mosaic_cql::schema::TableId,
        index: &str,
        term: &[u8],
    ) -> mosaic_cql::coordinator::ReadCommand {
        mosaic_cql::coordinator::ReadCommand {
            index: Some(mosaic_cql::index::IndexQuery {
                index: index.to_owned(),
                term: term.to_vec(),
            }),
            ..everything(table, Vec::new())
        }
    }

    /// Reads `command`'s range to its end, answer by answer, each starting after the last
    /// key of the one before; the entries and the answers.
    async fn read_all(
        c: &super::super::LocalCoordinator,
        mut command: mosaic_cql::coordinator::ReadCommand,
    ) -> (
        Vec<(Vec<u8>, Vec<u8>)>,
        Vec<mosaic_cql::coordinator::ReadResult>,
    ) {
        use super::super::tables::AllPrimary;
        use mosaic_cluster::local_queue::ReadClass;
        let (mut all, mut answers) = (Vec::new(), Vec::new());
        loop {
            let r = c
                .read_local(command.clone(), &AllPrimary, ReadClass::default())
                .await
                .unwrap();
            assert!(!r.entries.is_empty() || r.exhausted);
            all.extend(r.entries.iter().cloned());
            let (exhausted, last) = (r.exhausted, r.entries.last().map(|e| e.0.clone()));
            answers.push(r);
            match last {
                Some(last) if !exhausted => {
                    command.range.start = mosaic_cluster::repair::successor(&last)
                }
                _ => return (all, answers),
            }
            assert!(answers.len() < 10_000);
        }
    }

    fn everything(
        table: mosaic_cql::schema::TableId,
        start: Vec<u8>,
    ) -> mosaic_cql::coordinator::ReadCommand {
        mosaic_cql::coordinator::ReadCommand {
            table,
            range: mosaic_rows::KeyRange { start, end: None },
            limit: usize::MAX,
            filter: None,
            index: None,
        }
    }

    #[test]
    fn a_read_asking_for_every_entry_gets_a_bounded_answer_and_reads_on_to_all() {
        use super::super::tables::AllPrimary;
        use mosaic_cluster::local_queue::ReadClass;
        let rows = 300;
        let by_rows = tempfile::tempdir().unwrap();
        let by_bytes = tempfile::tempdir().unwrap();
        super::super::tests::rt().block_on(async {
            // The entry cap.
            let (c, table) = table_of(by_rows.path(), caps(25, 4 << 20), rows, &[]).await;
            let r = c
                .read_local(
                    everything(table, Vec::new()),
                    &AllPrimary,
                    ReadClass::default(),
                )
                .await
                .unwrap();
            assert_eq!((r.entries.len(), r.exhausted), (25, false));
            let (page, next) = c
                .read_stored(
                    table,
                    everything(table, Vec::new()).range,
                    None,
                    usize::MAX,
                    &AllPrimary,
                )
                .await
                .unwrap();
            assert_eq!(page.len(), 25);
            assert!(next.is_some());

            // The bytes cap: an answer stops at the entry that reaches it.
            let bytes_max = 2000;
            let (c, table) =
                table_of(by_bytes.path(), caps(usize::MAX, bytes_max), rows, &[]).await;
            let size =
                |e: &[(Vec<u8>, Vec<u8>)]| e.iter().map(|(k, v)| k.len() + v.len()).sum::<usize>();
            let mut start = Vec::new();
            let mut all = Vec::new();
            let mut answers = 0;
            loop {
                let r = c
                    .read_local(
                        everything(table, start.clone()),
                        &AllPrimary,
                        ReadClass::default(),
                    )
                    .await
                    .unwrap();
                answers += 1;
                assert!(!r.entries.is_empty());
                if !r.exhausted {
                    assert!(size(&r.entries) >= bytes_max);
                    assert!(size(&r.entries[..r.entries.len() - 1]) < bytes_max);
                }
                start = mosaic_cluster::repair::successor(&r.entries.last().unwrap().0);
                all.extend(r.entries);
                if r.exhausted {
                    break;
                }
            }
            // Every row (and the partition's entries besides), in key order, in many answers.
            assert!(
                all.len() >= rows && answers > 10,
                "{} entries in {answers} answers",
                all.len()
            );
            assert!(all.windows(2).all(|w| w[0].0 < w[1].0));
            // Repair's stored pages read on the same way.
            let (mut after, mut stored) = (None, 0);
            loop {
                let (page, next) = c
                    .read_stored(
                        table,
                        everything(table, Vec::new()).range,
                        after,
                        usize::MAX,
                        &AllPrimary,
                    )
                    .await
                    .unwrap();
                assert!(next.is_none() || size(&page) >= bytes_max);
                stored += page.len();
                match next {
                    Some(n) => after = Some(n),
                    None => break,
                }
            }
            assert_eq!(stored, all.len());
        });
    }

    /// Reads through an index are bounded as ordinary reads are: an answer stops at the
    /// entry cap or its bytes — inside the partition a static column's index points at, as
    /// well as between the rows a regular column's index points at — and reading on from
    /// each answer's last key returns every entry, once, in key order.
    #[test]
    fn a_read_through_an_index_gets_a_bounded_answer_and_reads_on_to_all() {
        let rows = 300;
        let dir = tempfile::tempdir().unwrap();
        let entries_dir = tempfile::tempdir().unwrap();
        let bytes_max = 2000;
        let size =
            |e: &[(Vec<u8>, Vec<u8>)]| e.iter().map(|(k, v)| k.len() + v.len()).sum::<usize>();
        let indexes = ["CREATE INDEX ts ON ks.t (s)", "CREATE INDEX tv ON ks.t (v)"];
        let queries = [
            ("ts", mosaic_types::CqlValue::Int(1).to_cql_bytes()),
            ("tv", "x".repeat(100).into_bytes()),
        ];
        super::super::tests::rt().block_on(async {
            let (c, table) =
                table_of(dir.path(), caps(usize::MAX, bytes_max), rows, &indexes).await;
            let (whole, _) = read_all(&c, everything(table, Vec::new())).await;
            assert_eq!(whole.len(), rows + 1, "the rows and the static row");
            for (index, term) in &queries {
                let (all, answers) = read_all(&c, through(table, index, term)).await;
                // The whole partition matches either index.
                assert_eq!(all, whole, "{index}");
                assert!(answers.len() > 10, "{index}: {} answers", answers.len());
                for a in &answers {
                    // At most one hit (a row, with its partition's head) past the bytes.
                    assert!(
                        size(&a.entries) < bytes_max + 400,
                        "{index}: {}",
                        size(&a.entries)
                    );
                }
            }
            // The entry cap holds inside a partition too.
            let (c, table) = table_of(entries_dir.path(), caps(25, 4 << 20), rows, &indexes).await;
            for (index, term) in &queries {
                let (all, answers) = read_all(&c, through(table, index, term)).await;
                assert_eq!(all.len(), rows + 1, "{index}");
                assert!(answers.iter().all(|a| a.entries.len() <= 25), "{index}");
            }
        });
    }

    /// A read through an index stops at the replica's read deadline as an ordinary read
    /// does, with a read timeout, instead of scanning on after the coordinator gave up.
    #[test]
    fn a_read_through_an_index_stops_at_the_read_deadline() {
        let dir = tempfile::tempdir().unwrap();
        super::super::tests::rt().block_on(async {
            let (c, table) = table_of(
                dir.path(),
                |cfg| cfg.cluster.read_request_timeout_ms = 0,
                300,
                &["CREATE INDEX ts ON ks.t (s)", "CREATE INDEX tv ON ks.t (v)"],
            )
            .await;
            for (index, term) in [
                ("ts", mosaic_types::CqlValue::Int(1).to_cql_bytes()),
                ("tv", "x".repeat(100).into_bytes()),
            ] {
                let command = through(table, index, &term);
                let r = c
                    .read_local(
                        command,
                        &super::super::tables::AllPrimary,
                        mosaic_cluster::local_queue::ReadClass::default(),
                    )
                    .await;
                assert!(
                    matches!(
                        r,
                        Err(ErrorResponse {
                            kind: ErrorKind::ReadTimeout { .. },
                            ..
                        })
                    ),
                    "{index}: {:?}",
                    r.map(|r| r.entries.len())
                );
            }
        });
    }
}
