//! Prepared INSERT and SELECT-by-key throughput with a fixed number of requests in flight.
//!
//! One table `kv (k text PRIMARY KEY, v blob)`; keys are `key` followed by a zero-padded
//! decimal index, `key_bytes` long; values are `value_bytes` random bytes. The insert phase
//! writes keys `0..ops` once each; the read phase reads `ops` keys chosen uniformly among
//! them and checks each returns its row. Latency is measured per request (closed loop:
//! each of `concurrency` workers sends its next request when the previous one answers).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use hdrhistogram::Histogram;
use rand::{Rng, SeedableRng};
use scylla::client::session::Session;
use scylla::client::session_builder::SessionBuilder;
use scylla::statement::prepared::PreparedStatement;

/// What to run.
#[derive(Clone, Debug)]
pub struct KvConfig {
    /// `host:port` of a node.
    pub host: String,
    /// Keyspace to create and use.
    pub keyspace: String,
    /// Requests per phase.
    pub ops: u64,
    /// Requests in flight.
    pub concurrency: usize,
    /// Key length in bytes.
    pub key_bytes: usize,
    /// Value length in bytes.
    pub value_bytes: usize,
}

/// One phase's result.
#[derive(Clone, Debug)]
pub struct PhaseReport {
    /// Phase name.
    pub name: &'static str,
    /// Requests completed without error.
    pub ops: u64,
    /// Requests that failed (or reads that found no row).
    pub errors: u64,
    /// Wall time.
    pub elapsed: Duration,
    /// Latency in microseconds.
    pub latency_us: Histogram<u64>,
}

impl PhaseReport {
    /// Completed requests per second.
    pub fn throughput(&self) -> f64 {
        self.ops as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }

    /// A one-line summary.
    pub fn summary(&self) -> String {
        let h = &self.latency_us;
        format!(
            "{:<7} {:>9.0} ops/s  ops {:>8}  errors {:>5}  mean {:>7.0} us  p50 {:>6} us  p99 {:>6} us  p99.9 {:>6} us  max {:>7} us",
            self.name,
            self.throughput(),
            self.ops,
            self.errors,
            h.mean(),
            h.value_at_quantile(0.50),
            h.value_at_quantile(0.99),
            h.value_at_quantile(0.999),
            h.max(),
        )
    }
}

/// The key of index `i`.
pub fn key_of(i: u64, key_bytes: usize) -> String {
    let digits = key_bytes.saturating_sub(3).max(1);
    format!("key{i:0digits$}")
}

async fn connect(host: &str) -> anyhow::Result<Session> {
    crate::security::apply(SessionBuilder::new().known_node(host))
        .build()
        .await
        .with_context(|| format!("connecting to {host}"))
}

/// Creates the keyspace and table, then runs the insert and read phases.
pub async fn run(config: &KvConfig) -> anyhow::Result<Vec<PhaseReport>> {
    if config.concurrency == 0 || config.ops == 0 {
        bail!("ops and concurrency must be positive");
    }
    let session = Arc::new(connect(&config.host).await?);
    session
        .query_unpaged(
            format!(
                "CREATE KEYSPACE IF NOT EXISTS {} WITH replication = {{'class': 'SimpleStrategy', 'replication_factor': 1}}",
                config.keyspace
            ),
            &[],
        )
        .await?;
    session
        .query_unpaged(
            format!(
                "CREATE TABLE IF NOT EXISTS {}.kv (k text PRIMARY KEY, v blob)",
                config.keyspace
            ),
            &[],
        )
        .await?;
    session.await_schema_agreement().await?;
    let insert = session
        .prepare(format!(
            "INSERT INTO {}.kv (k, v) VALUES (?, ?)",
            config.keyspace
        ))
        .await?;
    let select = session
        .prepare(format!("SELECT v FROM {}.kv WHERE k = ?", config.keyspace))
        .await?;
    let write = phase(config, "insert", session.clone(), insert, true).await?;
    let read = phase(config, "select", session.clone(), select, false).await?;
    Ok(vec![write, read])
}

async fn phase(
    config: &KvConfig,
    name: &'static str,
    session: Arc<Session>,
    statement: PreparedStatement,
    is_write: bool,
) -> anyhow::Result<PhaseReport> {
    let next = Arc::new(AtomicU64::new(0));
    let start = Instant::now();
    let mut workers = Vec::with_capacity(config.concurrency);
    for w in 0..config.concurrency {
        let session = session.clone();
        let statement = statement.clone();
        let next = next.clone();
        let config = config.clone();
        workers.push(tokio::spawn(async move {
            let mut rng = rand::rngs::StdRng::seed_from_u64(w as u64 + 1);
            let mut hist = Histogram::<u64>::new_with_bounds(1, 3_600_000_000, 3)
                .map_err(|e| anyhow::anyhow!("{e}"))?;
            let mut value = vec![0u8; config.value_bytes];
            let (mut ok, mut errors) = (0u64, 0u64);
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= config.ops {
                    break;
                }
                let t = Instant::now();
                let result = if is_write {
                    rng.fill(value.as_mut_slice());
                    let key = key_of(i, config.key_bytes);
                    session
                        .execute_unpaged(&statement, (key, value.as_slice()))
                        .await
                        .map(|_| true)
                } else {
                    let key = key_of(rng.gen_range(0..config.ops), config.key_bytes);
                    match session.execute_unpaged(&statement, (key,)).await {
                        Ok(r) => Ok(r
                            .into_rows_result()
                            .map(|rows| rows.rows_num() == 1)
                            .unwrap_or(false)),
                        Err(e) => Err(e),
                    }
                };
                let micros = u64::try_from(t.elapsed().as_micros()).unwrap_or(u64::MAX);
                hist.saturating_record(micros.max(1));
                match result {
                    Ok(true) => ok += 1,
                    _ => errors += 1,
                }
            }
            anyhow::Ok((hist, ok, errors))
        }));
    }
    let mut latency_us = Histogram::<u64>::new_with_bounds(1, 3_600_000_000, 3)
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let (mut ops, mut errors) = (0, 0);
    for w in workers {
        let (h, ok, err) = w.await??;
        latency_us.add(&h).map_err(|e| anyhow::anyhow!("{e}"))?;
        ops += ok;
        errors += err;
    }
    Ok(PhaseReport {
        name,
        ops,
        errors,
        elapsed: start.elapsed(),
        latency_us,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_have_the_requested_length() {
        assert_eq!(key_of(7, 24).len(), 24);
        assert_eq!(key_of(123_456, 24), "key000000000000000123456");
        assert_ne!(key_of(1, 24), key_of(2, 24));
    }
}
