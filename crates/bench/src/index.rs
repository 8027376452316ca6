//! Secondary-index and collection-append throughput (issue 15's benchmark), against Mosaic or
//! Apache Cassandra alike.
//!
//! One table `t (k bigint PRIMARY KEY, lo int, hi text, tags list<int>)` with an index on
//! `lo` (low cardinality: `rows / rows_per_lo` distinct values, so a query returns
//! `rows_per_lo` rows) and one on `hi` (high cardinality: one row per value). Phases, each
//! with `concurrency` requests in flight (closed loop):
//! - `load`: inserts rows `0..rows`;
//! - `low`: `SELECT k FROM t WHERE lo = ?` for random values, each answer checked to hold
//!   `rows_per_lo` rows;
//! - `high`: `SELECT k FROM t WHERE hi = ?` for random rows, each answer checked to hold
//!   one row;
//! - `append`: `UPDATE t SET tags = tags + [?] WHERE k = ?` on random rows.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use anyhow::{bail, Context};
use hdrhistogram::Histogram;
use rand::{Rng, SeedableRng};
use scylla::client::session::Session;
use scylla::client::session_builder::SessionBuilder;
use scylla::statement::prepared::PreparedStatement;
use scylla::statement::Consistency;

use crate::kv::PhaseReport;

/// What to run.
#[derive(Clone, Debug)]
pub struct IndexConfig {
    /// `host:port` of a node.
    pub host: String,
    /// Keyspace to create and use.
    pub keyspace: String,
    /// Replication factor of the keyspace.
    pub rf: u32,
    /// Rows loaded.
    pub rows: u64,
    /// Rows per value of the low-cardinality column.
    pub rows_per_lo: u64,
    /// Requests per query or append phase.
    pub ops: u64,
    /// Requests in flight.
    pub concurrency: usize,
    /// Consistency level of every request.
    pub consistency: Consistency,
}

/// The consistency level called `name` (`one`, `quorum`, `all`, `local_quorum`…).
pub fn consistency(name: &str) -> anyhow::Result<Consistency> {
    Ok(match name.to_ascii_lowercase().as_str() {
        "one" => Consistency::One,
        "two" => Consistency::Two,
        "quorum" => Consistency::Quorum,
        "all" => Consistency::All,
        "local_one" => Consistency::LocalOne,
        "local_quorum" => Consistency::LocalQuorum,
        other => bail!("unknown consistency level {other}"),
    })
}

/// Creates the schema (indexes before the data, so no index build is measured).
pub async fn create(config: &IndexConfig) -> anyhow::Result<Arc<Session>> {
    let session = Arc::new(
        SessionBuilder::new()
            .known_node(&config.host)
            .build()
            .await
            .with_context(|| format!("connecting to {}", config.host))?,
    );
    let ks = &config.keyspace;
    for cql in [
        format!(
            "CREATE KEYSPACE IF NOT EXISTS {ks} WITH replication = {{'class': 'SimpleStrategy', 'replication_factor': {}}}",
            config.rf
        ),
        format!("CREATE TABLE IF NOT EXISTS {ks}.t (k bigint PRIMARY KEY, lo int, hi text, tags list<int>)"),
        format!("CREATE INDEX IF NOT EXISTS t_lo ON {ks}.t (lo)"),
        format!("CREATE INDEX IF NOT EXISTS t_hi ON {ks}.t (hi)"),
    ] {
        session.query_unpaged(cql, &[]).await?;
        session.await_schema_agreement().await?;
    }
    Ok(session)
}

/// The phases to run, by name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Insert every row.
    Load,
    /// Query the low-cardinality index.
    Low,
    /// Query the high-cardinality index.
    High,
    /// Append to lists.
    Append,
}

impl Phase {
    /// The phase called `name`.
    pub fn parse(name: &str) -> anyhow::Result<Phase> {
        Ok(match name {
            "load" => Phase::Load,
            "low" => Phase::Low,
            "high" => Phase::High,
            "append" => Phase::Append,
            other => bail!("unknown phase {other} (load, low, high, append)"),
        })
    }

    fn name(self) -> &'static str {
        match self {
            Phase::Load => "load",
            Phase::Low => "low",
            Phase::High => "high",
            Phase::Append => "append",
        }
    }
}

/// Runs one phase.
pub async fn run(
    config: &IndexConfig,
    session: Arc<Session>,
    phase: Phase,
) -> anyhow::Result<PhaseReport> {
    if config.concurrency == 0 || config.rows == 0 || config.rows_per_lo == 0 {
        bail!("rows, rows per value and concurrency must be positive");
    }
    let ks = &config.keyspace;
    let cql = match phase {
        Phase::Load => format!("INSERT INTO {ks}.t (k, lo, hi, tags) VALUES (?, ?, ?, [])"),
        Phase::Low => format!("SELECT k FROM {ks}.t WHERE lo = ?"),
        Phase::High => format!("SELECT k FROM {ks}.t WHERE hi = ?"),
        Phase::Append => format!("UPDATE {ks}.t SET tags = tags + ? WHERE k = ?"),
    };
    let mut statement: PreparedStatement = session.prepare(cql).await?;
    statement.set_consistency(config.consistency);
    let total = if phase == Phase::Load {
        config.rows
    } else {
        config.ops
    };
    let lo_values = (config.rows / config.rows_per_lo).max(1);
    let next = Arc::new(AtomicU64::new(0));
    let start = Instant::now();
    let mut workers = Vec::with_capacity(config.concurrency);
    for w in 0..config.concurrency {
        let (session, statement, next) = (session.clone(), statement.clone(), next.clone());
        let config = config.clone();
        workers.push(tokio::spawn(async move {
            let mut rng = rand::rngs::StdRng::seed_from_u64(w as u64 + 1);
            let mut hist = Histogram::<u64>::new_with_bounds(1, 3_600_000_000, 3)
                .map_err(|e| anyhow::anyhow!("{e}"))?;
            let (mut ok, mut errors) = (0u64, 0u64);
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= total {
                    break;
                }
                let t = Instant::now();
                let good = match phase {
                    Phase::Load => {
                        let k = i as i64;
                        let lo = (i % lo_values) as i32;
                        session
                            .execute_unpaged(&statement, (k, lo, format!("h{k}")))
                            .await
                            .is_ok()
                    }
                    Phase::Low => {
                        let lo = rng.gen_range(0..lo_values) as i32;
                        match session.execute_unpaged(&statement, (lo,)).await {
                            Ok(r) => {
                                r.into_rows_result().map(|r| r.rows_num()).unwrap_or(0) as u64
                                    == config.rows_per_lo
                            }
                            Err(_) => false,
                        }
                    }
                    Phase::High => {
                        let k = rng.gen_range(0..config.rows);
                        match session
                            .execute_unpaged(&statement, (format!("h{k}"),))
                            .await
                        {
                            Ok(r) => r.into_rows_result().map(|r| r.rows_num()).unwrap_or(0) == 1,
                            Err(_) => false,
                        }
                    }
                    Phase::Append => {
                        let k = rng.gen_range(0..config.rows as i64);
                        let item: i32 = rng.gen();
                        session
                            .execute_unpaged(&statement, (vec![item], k))
                            .await
                            .is_ok()
                    }
                };
                let micros = u64::try_from(t.elapsed().as_micros()).unwrap_or(u64::MAX);
                hist.saturating_record(micros.max(1));
                if good {
                    ok += 1;
                } else {
                    errors += 1;
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
        name: phase.name(),
        ops,
        errors,
        elapsed: start.elapsed(),
        latency_us,
    })
}
