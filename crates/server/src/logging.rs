//! The node's log: `tracing` events to stderr, filtered by `[log] level` (or `RUST_LOG`),
//! and the slow-query log.
//!
//! Owns the subscriber (installed once, by `mosaic server`) and the decision of which CQL
//! requests are slow. Targets name the part of the node an event comes from, so a filter
//! can pick them: `mosaic` (lifecycle: start, stop), `mosaic::net` (CQL connections),
//! `mosaic::membership`, `mosaic::schema`, `mosaic::storage` (engines, data directory),
//! `mosaic::hints`, `mosaic::internode`, `mosaic::admin` and `mosaic::slow_query`. The
//! cluster crate logs under its own crate name.
//!
//! CLI commands (`mosaic status`, `cluster up`, …) do not install the subscriber: what
//! they print is for the person who ran them, as plain text.

use std::io::IsTerminal;
use std::time::Duration;

use anyhow::Result;
use bytes::Bytes;
use mosaic_cql::frame::{Consistency, Request};

use crate::config::LogConfig;

/// Characters of a statement a slow-query line shows; longer ones are cut there.
pub const STATEMENT_CHARS_MAX: usize = 1000;

/// Installs the node's subscriber: `RUST_LOG` if set, else `[log] level`. Colours only
/// when stderr is a terminal, so log files stay plain text.
pub fn init(config: &LogConfig) -> Result<()> {
    let env = std::env::var("RUST_LOG")
        .ok()
        .filter(|v| !v.trim().is_empty());
    let filter = config.filter(env.as_deref())?;
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .try_init()
        .map_err(|e| anyhow::anyhow!("installing the log subscriber: {e}"))
}

/// What a statement request is, for the slow-query log; taken before the request is
/// executed (which consumes it). Cheap: a QUERY's text is one copy, an EXECUTE's id a
/// reference count.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Statement {
    /// A QUERY or PREPARE: its text.
    Text(String),
    /// An EXECUTE: the prepared statement's id (its text is looked up only if slow).
    Prepared(Bytes),
    /// A BATCH: how many statements, and the first one's text if it had any.
    Batch(usize, Option<String>),
}

/// The statement and consistency level of a statement request; `None` for the
/// connection-level ones.
pub fn describe(request: &Request) -> Option<(Statement, Option<Consistency>)> {
    Some(match request {
        Request::Query(q) => (Statement::Text(q.query.clone()), Some(q.params.consistency)),
        Request::Prepare(p) => (Statement::Text(p.query.clone()), None),
        Request::Execute(e) => (
            Statement::Prepared(e.id.clone()),
            Some(e.params.consistency),
        ),
        Request::Batch(b) => {
            let first = b.statements.first().and_then(|s| match &s.query {
                mosaic_cql::frame::BatchQuery::Query(text) => Some(text.clone()),
                mosaic_cql::frame::BatchQuery::Prepared(_) => None,
            });
            (
                Statement::Batch(b.statements.len(), first),
                Some(b.consistency),
            )
        }
        _ => return None,
    })
}

/// Whether a request that took `elapsed` is logged as slow (`threshold` `None`: never).
pub fn is_slow(elapsed: Duration, threshold: Option<Duration>) -> bool {
    threshold.is_some_and(|t| elapsed > t)
}

/// `text` cut to at most [`STATEMENT_CHARS_MAX`] characters, marked when cut.
pub fn truncate_statement(text: &str) -> String {
    match text.char_indices().nth(STATEMENT_CHARS_MAX) {
        None => text.to_owned(),
        Some((end, _)) => format!(
            "{}… ({} bytes)",
            text.get(..end).unwrap_or(text),
            text.len()
        ),
    }
}

/// The text a slow-query line shows for `statement`; `prepared_text` finds an EXECUTE's.
pub fn statement_text(
    statement: &Statement,
    prepared_text: impl FnOnce(&[u8]) -> Option<String>,
) -> String {
    match statement {
        Statement::Text(text) => truncate_statement(text),
        Statement::Prepared(id) => match prepared_text(id) {
            Some(text) => truncate_statement(&text),
            None => format!("<prepared statement {}>", hex(id)),
        },
        Statement::Batch(n, first) => match first {
            Some(text) => format!("BATCH of {n}, first: {}", truncate_statement(text)),
            None => format!("BATCH of {n}"),
        },
    }
}

/// Logs one slow request (target `mosaic::slow_query`, level `warn`).
pub fn log_slow_query(statement: &str, consistency: Option<Consistency>, elapsed: Duration) {
    tracing::warn!(
        target: "mosaic::slow_query",
        statement,
        consistency = consistency.map_or("-", |c| c.name()),
        elapsed_ms = elapsed.as_millis() as u64,
        "slow query"
    );
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Logs what the storage engines report from their background threads as it happens: a
/// flush or compaction that fails (once when the disk fills, once when an engine is
/// poisoned), and each compaction at `debug`.
pub struct EngineEvents;

impl mosaic_lsm::CompactionListener for EngineEvents {
    fn on_compaction(&self, e: &mosaic_lsm::CompactionEvent) {
        tracing::debug!(
            target: "mosaic::storage",
            level = e.level,
            output_level = e.output_level,
            inputs = e.inputs.len(),
            outputs = e.outputs.len(),
            trivial_move = e.trivial_move,
            "compaction"
        );
    }

    fn on_background_error(&self, dir: &std::path::Path, job: &str, error: &mosaic_lsm::Error) {
        let effect = if error.is_no_space() {
            "disk full: the engine refuses writes until space returns"
        } else {
            "engine poisoned: it refuses writes until the node restarts"
        };
        tracing::error!(
            target: "mosaic::storage",
            dir = %dir.display(),
            job,
            error = %error,
            "background {job} failed; {effect}"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mosaic_cql::frame::{Execute, Query, QueryParameters};

    /// A writer appending to a shared buffer, for reading what a subscriber wrote.
    #[derive(Clone, Default)]
    struct Captured(std::sync::Arc<parking_lot::Mutex<Vec<u8>>>);

    impl std::io::Write for Captured {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().extend_from_slice(buf);
            Ok(buf.len())
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// What `f` logs through a subscriber filtered by `level`.
    fn logged(level: &str, f: impl FnOnce()) -> String {
        let out = Captured::default();
        let writer = out.clone();
        let config = LogConfig {
            level: level.to_owned(),
            ..LogConfig::default()
        };
        let subscriber = tracing_subscriber::fmt()
            .with_env_filter(config.filter(None).unwrap())
            .with_writer(move || writer.clone())
            .with_ansi(false)
            .finish();
        tracing::subscriber::with_default(subscriber, f);
        let bytes = out.0.lock().clone();
        String::from_utf8(bytes).unwrap()
    }

    #[test]
    fn a_slow_query_is_logged_at_warn_with_statement_consistency_and_time() {
        let text = logged("info", || {
            log_slow_query(
                "SELECT 1",
                Some(Consistency::Quorum),
                Duration::from_millis(750),
            )
        });
        assert!(
            text.contains(
                "WARN mosaic::slow_query: slow query statement=\"SELECT 1\" \
                 consistency=\"QUORUM\" elapsed_ms=750"
            ),
            "{text}"
        );
        // A filter can silence it like any target.
        let text = logged("info,mosaic::slow_query=error", || {
            log_slow_query("SELECT 1", None, Duration::from_millis(750))
        });
        assert_eq!(text, "");
    }

    #[test]
    fn only_requests_over_the_threshold_are_slow() {
        let ms = Duration::from_millis;
        assert!(is_slow(ms(501), Some(ms(500))));
        assert!(!is_slow(ms(500), Some(ms(500))));
        assert!(!is_slow(ms(10), Some(ms(500))));
        assert!(!is_slow(ms(100_000), None));
    }

    #[test]
    fn long_statements_are_cut_on_a_character_boundary() {
        assert_eq!(truncate_statement("SELECT 1"), "SELECT 1");
        let long = "é".repeat(STATEMENT_CHARS_MAX + 5);
        let cut = truncate_statement(&long);
        assert!(cut.starts_with(&"é".repeat(STATEMENT_CHARS_MAX)));
        assert!(cut.ends_with(&format!("… ({} bytes)", long.len())), "{cut}");
    }

    #[test]
    fn a_slow_request_is_described_by_its_statement_and_consistency() {
        let query = Request::Query(Query {
            query: "SELECT * FROM ks.t".to_owned(),
            params: QueryParameters::new(Consistency::Quorum),
        });
        let (statement, cl) = describe(&query).unwrap();
        assert_eq!(cl, Some(Consistency::Quorum));
        assert_eq!(statement_text(&statement, |_| None), "SELECT * FROM ks.t");

        let execute = Request::Execute(Execute {
            id: Bytes::from_static(&[0xab, 0x01]),
            params: QueryParameters::new(Consistency::One),
            result_metadata_id: None,
        });
        let (statement, cl) = describe(&execute).unwrap();
        assert_eq!(cl, Some(Consistency::One));
        // An EXECUTE shows its prepared statement's text, or its id when that is unknown.
        let text = statement_text(&statement, |id| {
            (id == [0xab, 0x01]).then(|| "INSERT INTO ks.t (k) VALUES (?)".to_owned())
        });
        assert_eq!(text, "INSERT INTO ks.t (k) VALUES (?)");
        assert_eq!(
            statement_text(&statement, |_| None),
            "<prepared statement ab01>"
        );
        assert!(describe(&Request::Options).is_none());
    }
}
