//! Tombstones a query reads (Cassandra's `tombstone_warn_threshold` and
//! `tombstone_failure_threshold`).
//!
//! Replicas answer merged fragments, tombstones included, and this node resolves them
//! ([`PartitionResolver`]), so the count is taken here, over every chunk one execution (one
//! page) reads from every partition: past `warn` the query is logged when it ends and its
//! client warned (Cassandra's `ClientWarn`, in the v4+ response's warnings), past
//! `fail` it is aborted at once with ReadFailure, reason `READ_TOO_MANY_TOMBSTONES` — a
//! query that would scan a million deleted rows stops at the threshold instead of reading
//! them all.

use mosaic_rows::{LiveRow, PartitionResolver};

use crate::coordinator::TombstoneThresholds;
use crate::frame::{failure_reason, Consistency, ErrorKind, ErrorResponse};

use super::resolve_err;

/// One execution's tombstones against the thresholds.
#[derive(Debug)]
pub(super) struct Tombstones {
    thresholds: TombstoneThresholds,
    consistency: Consistency,
    /// This node's address, named in the failure's reason map.
    node: std::net::IpAddr,
    seen: u64,
    /// Live rows the resolver gave.
    live: u64,
}

impl Tombstones {
    pub(super) fn new(
        thresholds: TombstoneThresholds,
        consistency: Consistency,
        node: std::net::IpAddr,
    ) -> Tombstones {
        Tombstones {
            thresholds,
            consistency,
            node,
            seen: 0,
            live: 0,
        }
    }

    /// Feeds `resolver` the next entry, counting the tombstones it holds; ReadFailure once
    /// the query has read more than the failure threshold.
    pub(super) fn push(
        &mut self,
        resolver: &mut PartitionResolver<'_>,
        key: &[u8],
        value: &[u8],
    ) -> Result<Option<LiveRow>, ErrorResponse> {
        let before = resolver.tombstones();
        let row = resolver.push(key, value).map_err(resolve_err)?;
        self.seen += resolver.tombstones().saturating_sub(before);
        self.live += u64::from(row.is_some());
        let fail = self.thresholds.fail;
        if fail > 0 && self.seen > fail {
            return Err(ErrorResponse::new(
                ErrorKind::ReadFailure {
                    consistency: self.consistency,
                    received: 0,
                    block_for: 1,
                    num_failures: 1,
                    reasons: vec![(self.node, failure_reason::READ_TOO_MANY_TOMBSTONES)],
                    data_present: false,
                },
                format!(
                    "Scanned over {fail} tombstones (tombstone_failure_threshold); query aborted"
                ),
            ));
        }
        Ok(row)
    }

    /// Logs the query when it read more tombstones than the warning threshold, and
    /// answers the warning for its client (Cassandra 4.1's text, without the token: the
    /// count here spans every partition the page read).
    pub(super) fn finish(&self, table: &str, query: &dyn std::fmt::Display) -> Option<String> {
        let warn = self.thresholds.warn;
        if warn == 0 || self.seen <= warn {
            return None;
        }
        tracing::warn!(
            target: "mosaic::tombstones",
            table,
            tombstones = self.seen,
            live_rows = self.live,
            threshold = warn,
            "a query read more tombstones than tombstone_warn_threshold"
        );
        let mut query = query.to_string();
        // Cassandra cuts the query at 512 characters (`%1.512s`).
        if let Some((cut, _)) = query.char_indices().nth(512) {
            query.truncate(cut);
        }
        Some(format!(
            "Read {} live rows and {} tombstone cells for query {query} (see tombstone_warn_threshold)",
            self.live, self.seen
        ))
    }
}
