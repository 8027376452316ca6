//! Streaming a move's ranges: pulling them page by page from a peer (or copying them
//! within this node into its future roles' structures), several ranges at once, each
//! with its next page fetched while the last one is stored, paced to
//! `stream_throughput_bytes_per_sec`. What a peer sends is stored in batches of
//! [`INGEST_BATCH_BYTES`] through [`Store::ingest`]: a store that can writes each batch
//! as tables straight into its levels (no commit log, memtable or compaction), as
//! Cassandra writes streamed SSTables.

use super::moves::unanswered;
use super::read::fragment_ts;
use super::*;

/// The pace of one pull (all its ranges together): bytes received since it started.
pub(super) struct Pacer {
    started_ms: u64,
    bytes: std::sync::atomic::AtomicU64,
}

/// Bytes of a range pulled from a peer stored at once ([`Store::ingest`]: as tables of
/// about this size where the store can ingest them), so a joining node holds at most
/// about this much per range in flight.
pub(super) const INGEST_BATCH_BYTES: u64 = 16 << 20;

/// Ranges a node pulls at once in a move (each with one page stored while the next is
/// fetched): the source reads and the local writes of several ranges overlap.
pub(super) const RANGES_IN_FLIGHT: usize = 4;
impl Node {
    /// Copies the stored entries of `range` of `table`, page by page, from `source`
    /// (stored here as this node's roles say) or, with `None`, from this node itself
    /// (rows a coding group covers read with their primary, or decoded) into its future
    /// roles' structures — or, with `now`, under its roles of now; the entries and bytes
    /// copied. The next page is fetched while this one is stored; streams from a peer are
    /// paced, all ranges of the move together, to `stream_throughput_bytes_per_sec`.
    pub(super) async fn copy_range(
        &self,
        table: TableKey,
        range: KeyRange,
        (source, now): (Option<Endpoint>, bool),
        pacer: Option<&Pacer>,
    ) -> Result<(u64, u64), MoveError> {
        let me = self.endpoint();
        let rate = self.inner.config.stream_throughput_bytes_per_sec;
        let (mut entries_total, mut bytes_total) = (0u64, 0u64);
        // A peer's entries are stored INGEST_BATCH_BYTES at a time, as tables where the
        // store can ingest them; a copy within this node goes page by page.
        let (mut pending, mut pending_bytes): (Vec<WireMutation>, u64) = (Vec::new(), 0);
        let mut page = self.fetch_page(table, &range, source, None).await?;
        loop {
            let (entries, next) = page;
            let bytes: u64 = entries
                .iter()
                .map(|(k, v)| (k.len() + v.len()) as u64)
                .sum();
            let n = entries.len() as u64;
            pending.extend(entries.into_iter().map(|(key, fragment)| WireMutation {
                ts: fragment_ts(&fragment),
                key,
                fragment,
            }));
            pending_bytes += bytes;
            let due = source.is_none() || next.is_none() || pending_bytes >= INGEST_BATCH_BYTES;
            let writes = if due {
                pending_bytes = 0;
                std::mem::take(&mut pending)
            } else {
                Vec::new()
            };
            let store = async {
                if writes.is_empty() {
                    return Ok(());
                }
                let stored = match source {
                    None if !now => self.inner.store.apply_future(table, writes).await,
                    None => self.inner.store.apply(table, writes).await,
                    Some(_) => self.inner.store.ingest(table, writes).await,
                };
                stored.map_err(|f| MoveError::Stream {
                    peer: me,
                    reason: format!("storing streamed entries: {f:?}"),
                })
            };
            let fetched = match next {
                Some(after) => {
                    let (stored, fetched) =
                        futures::join!(store, self.fetch_page(table, &range, source, Some(after)));
                    stored?;
                    Some(fetched)
                }
                None => {
                    store.await?;
                    None
                }
            };
            entries_total += n;
            bytes_total += bytes;
            if let Some(peer) = source {
                let mut s = self.inner.streams.lock();
                let session = s.session(peer, true);
                session.entries += n;
                session.bytes += bytes;
            }
            if let Some(pacer) = pacer {
                // Pace to the rate: the pull's bytes so far may not arrive sooner.
                let received = pacer.bytes.fetch_add(bytes, Ordering::Relaxed) + bytes;
                let due_ms = received.saturating_mul(1000) / rate.max(1);
                let spent = self.now_ms().saturating_sub(pacer.started_ms);
                if rate > 0 && due_ms > spent {
                    self.inner.runtime.sleep(due_ms - spent).await;
                }
            }
            match fetched {
                Some(f) => page = f?,
                None => return Ok((entries_total, bytes_total)),
            }
        }
    }

    /// A pacer for a pull starting now.
    pub(super) fn pacer(&self) -> Pacer {
        Pacer {
            started_ms: self.now_ms(),
            bytes: std::sync::atomic::AtomicU64::new(0),
        }
    }

    /// One page of the stored entries of `range` after `after`: from `source`, or this
    /// node's own with `None`.
    async fn fetch_page(
        &self,
        table: TableKey,
        range: &KeyRange,
        source: Option<Endpoint>,
        after: Option<Vec<u8>>,
    ) -> Result<crate::env::StoredPage, MoveError> {
        let peer = source.unwrap_or_else(|| self.endpoint());
        let fail = |reason: String| MoveError::Stream { peer, reason };
        let (entries, next) = match source {
            Some(peer) => {
                let request = Body::ReadStored {
                    table,
                    range: WireRange {
                        start: range.start.clone(),
                        end: range.end.clone(),
                    },
                    after,
                    limit: repair::READ_CHUNK as u32,
                };
                match self
                    .call_retrying(peer, request, self.inner.config.repair_timeout_ms)
                    .await
                {
                    Some(Body::StoredData { entries, next }) => (entries, next),
                    other => return Err(fail(unanswered(other))),
                }
            }
            None => self
                .stored_page(table, range.clone(), after, repair::READ_CHUNK)
                .await
                .map_err(|f| fail(format!("{f:?}")))?,
        };
        if entries.is_empty() && next.is_some() {
            return Err(fail("an empty page that says more follows".to_owned()));
        }
        Ok((entries, next))
    }

    /// Pulls every key range of `ranges` of `table` from `source` and stores it here,
    /// [`RANGES_IN_FLIGHT`] at a time, paced by `pacer`.
    pub(super) async fn pull(
        &self,
        table: TableKey,
        ranges: &[KeyRange],
        source: Endpoint,
        pacer: &Pacer,
    ) -> Result<(u64, u64), MoveError> {
        let mut copies = futures::stream::iter(ranges.iter().cloned())
            .map(|range| self.copy_range(table, range, (Some(source), false), Some(pacer)))
            .buffer_unordered(RANGES_IN_FLIGHT);
        let (mut entries, mut bytes) = (0, 0);
        while let Some(copied) = copies.next().await {
            let (e, b) = copied?;
            entries += e;
            bytes += b;
        }
        Ok((entries, bytes))
    }
}
