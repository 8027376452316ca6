//! TPC-H `orders` for heterogeneous replicas: load the table, write the paper's workload
//! file, and time its two queries.
//!
//! The table follows the heterogeneous-replicas paper (§5): TPC-H's `orders`, generated
//! by the `tpchgen` crate at a scale factor (1.5 million orders per unit), with clustering
//! columns `(custkey, orderdate, clerk)` — and `orderkey` last, which makes rows unique —
//! in partitions `bucket = orderkey % buckets` (one by default: every row of the table in
//! one partition, as the paper's queries restrict no partition key).
//!
//! The paper's queries, as instances drawn from rows that exist (so each finds its row):
//! - **Q1** "the total price of all customers a clerk served on a day":
//!   `WHERE bucket = ? AND orderdate = ? AND clerk = ? AND custkey >= 0`;
//! - **Q2** "what a customer spent through one clerk over some days":
//!   `WHERE bucket = ? AND custkey = ? AND clerk = ? AND orderdate >= ? AND orderdate < ?`
//!   (a window of [`Q2_WINDOW_DAYS`] days around the drawn order's date).
//!
//! Instances are a pure function of the scale factor, the count and the seed, so `workload`
//! (the file `mosaic hr optimize` reads) and `run` (the timed queries) agree.

use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use futures::StreamExt;
use hdrhistogram::Histogram;
use rand::{Rng, SeedableRng};
use scylla::client::execution_profile::ExecutionProfile;
use scylla::client::session::Session;
use scylla::client::session_builder::SessionBuilder;
use scylla::value::CqlDate;
use serde::Serialize;
use tpchgen::generators::OrderGenerator;

/// Days in a Q2 instance's date window.
pub const Q2_WINDOW_DAYS: i32 = 90;

/// What the table looks like.
#[derive(Clone, Debug)]
pub struct TableSpec {
    /// `host:port` of a node.
    pub host: String,
    /// Keyspace.
    pub keyspace: String,
    /// Table.
    pub table: String,
    /// Partitions the rows are spread over.
    pub buckets: i64,
}

impl TableSpec {
    fn name(&self) -> String {
        format!("{}.{}", self.keyspace, self.table)
    }
}

/// One query instance.
#[derive(Clone, Debug)]
pub enum Instance {
    /// Q1: a day and a clerk.
    Q1 {
        /// The partition.
        bucket: i32,
        /// Days since the Unix epoch.
        orderdate: i32,
        /// `Clerk#…`.
        clerk: String,
    },
    /// Q2: a customer, a clerk and a date window.
    Q2 {
        /// The partition.
        bucket: i32,
        /// The customer.
        custkey: i32,
        /// `Clerk#…`.
        clerk: String,
        /// First day (days since the epoch).
        from: i32,
        /// Day after the last.
        to: i32,
    },
}

/// A date (days since the Unix epoch) as `YYYY-MM-DD`.
pub fn date_text(days: i32) -> String {
    // Howard Hinnant's civil_from_days.
    let z = i64::from(days) + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}")
}

fn cql_date(days: i32) -> CqlDate {
    CqlDate((i64::from(days) + (1i64 << 31)) as u32)
}

impl Instance {
    /// The instance as CQL with literal values (a workload-file line's statement).
    pub fn cql(&self, spec: &TableSpec) -> String {
        let t = spec.name();
        match self {
            Instance::Q1 {
                bucket,
                orderdate,
                clerk,
            } => format!(
                "SELECT totalprice FROM {t} WHERE bucket = {bucket} AND orderdate = '{}' AND clerk = '{clerk}' AND custkey >= 0 ALLOW FILTERING",
                date_text(*orderdate)
            ),
            Instance::Q2 {
                bucket,
                custkey,
                clerk,
                from,
                to,
            } => format!(
                "SELECT totalprice FROM {t} WHERE bucket = {bucket} AND custkey = {custkey} AND clerk = '{clerk}' AND orderdate >= '{}' AND orderdate < '{}' ALLOW FILTERING",
                date_text(*from),
                date_text(*to)
            ),
        }
    }

    /// `q1` or `q2`.
    pub fn kind(&self) -> &'static str {
        match self {
            Instance::Q1 { .. } => "q1",
            Instance::Q2 { .. } => "q2",
        }
    }
}

/// `count` instances, alternating Q1 and Q2, drawn from the orders at `scale_factor`.
pub fn instances(scale_factor: f64, buckets: i64, count: usize, seed: u64) -> Vec<Instance> {
    let total = OrderGenerator::calculate_row_count(scale_factor, 1, 1).max(1);
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let mut picks: Vec<(i64, usize)> = (0..count).map(|i| (rng.gen_range(0..total), i)).collect();
    picks.sort_unstable();
    let mut out: Vec<Option<Instance>> = vec![None; count];
    let mut next = picks.iter().peekable();
    let generator = OrderGenerator::new(scale_factor, 1, 1);
    for (index, order) in generator.iter().enumerate() {
        while let Some(&&(at, slot)) = next.peek() {
            if at != index as i64 {
                break;
            }
            next.next();
            let bucket = order.o_orderkey.rem_euclid(buckets.max(1)) as i32;
            let clerk = order.o_clerk.to_string();
            let day = order.o_orderdate.to_unix_epoch();
            let instance = if slot % 2 == 0 {
                Instance::Q1 {
                    bucket,
                    orderdate: day,
                    clerk,
                }
            } else {
                let from = day - rng.gen_range(0..Q2_WINDOW_DAYS);
                Instance::Q2 {
                    bucket,
                    custkey: order.o_custkey as i32,
                    clerk,
                    from,
                    to: from + Q2_WINDOW_DAYS,
                }
            };
            if let Some(s) = out.get_mut(slot) {
                *s = Some(instance);
            }
        }
        if next.peek().is_none() {
            break;
        }
    }
    out.into_iter().flatten().collect()
}

/// How long one request may take: a query that filters a whole partition at a replica in
/// an order that does not serve it scans every row before its first page.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(600);

async fn connect(host: &str) -> anyhow::Result<Session> {
    let profile = ExecutionProfile::builder()
        .request_timeout(Some(REQUEST_TIMEOUT))
        .build();
    crate::security::apply(SessionBuilder::new().known_node(host))
        .default_execution_profile_handle(profile.into_handle())
        .build()
        .await
        .with_context(|| format!("connecting to {host}"))
}

/// Executes one statement and waits for the nodes to agree on the schema.
pub async fn exec(host: &str, statement: &str) -> anyhow::Result<()> {
    let session = connect(host).await?;
    session
        .query_unpaged(statement, &[])
        .await
        .with_context(|| format!("executing {statement}"))?;
    session.await_schema_agreement().await?;
    Ok(())
}

/// The load's result.
#[derive(Clone, Debug, Serialize)]
pub struct LoadReport {
    /// Rows written.
    pub rows: u64,
    /// Wall time in seconds.
    pub seconds: f64,
    /// Rows per second.
    pub rows_per_sec: f64,
}

/// Creates the keyspace (replication factor `rf`) and the table with `layout` (a CQL map
/// literal, or empty for the node's default), then inserts the orders at `scale_factor`
/// with `concurrency` writers.
pub async fn load(
    spec: &TableSpec,
    scale_factor: f64,
    rf: u32,
    layout: &str,
    concurrency: usize,
) -> anyhow::Result<LoadReport> {
    if concurrency == 0 {
        bail!("concurrency must be positive");
    }
    let session = std::sync::Arc::new(connect(&spec.host).await?);
    session
        .query_unpaged(
            format!(
                "CREATE KEYSPACE IF NOT EXISTS {} WITH replication = {{'class': 'SimpleStrategy', 'replication_factor': {rf}}}",
                spec.keyspace
            ),
            &[],
        )
        .await?;
    let with = if layout.is_empty() {
        String::new()
    } else {
        format!(" WITH layout = {layout}")
    };
    session
        .query_unpaged(
            format!(
                "CREATE TABLE IF NOT EXISTS {} (bucket int, custkey int, orderdate date, clerk text, orderkey bigint, totalprice decimal, orderstatus text, orderpriority text, shippriority int, comment text, PRIMARY KEY (bucket, custkey, orderdate, clerk, orderkey)){with}",
                spec.name()
            ),
            &[],
        )
        .await?;
    session.await_schema_agreement().await?;
    let insert = session
        .prepare(format!(
            "INSERT INTO {} (bucket, custkey, orderdate, clerk, orderkey, totalprice, orderstatus, orderpriority, shippriority, comment) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            spec.name()
        ))
        .await?;
    let started = Instant::now();
    let mut workers = Vec::with_capacity(concurrency);
    let parts = i32::try_from(concurrency).unwrap_or(i32::MAX);
    for part in 1..=parts {
        let session = session.clone();
        let insert = insert.clone();
        let buckets = spec.buckets.max(1);
        workers.push(tokio::spawn(async move {
            let mut rows = 0u64;
            let generator = OrderGenerator::new(scale_factor, part, parts);
            for o in generator.iter() {
                let price = scylla::value::CqlDecimal::from_signed_be_bytes_slice_and_exponent(
                    &o.o_totalprice.0.to_be_bytes(),
                    2,
                );
                session
                    .execute_unpaged(
                        &insert,
                        (
                            o.o_orderkey.rem_euclid(buckets) as i32,
                            o.o_custkey as i32,
                            cql_date(o.o_orderdate.to_unix_epoch()),
                            o.o_clerk.to_string(),
                            o.o_orderkey,
                            price,
                            o.o_orderstatus.to_string(),
                            o.o_orderpriority.to_string(),
                            o.o_shippriority,
                            o.o_comment.to_string(),
                        ),
                    )
                    .await?;
                rows += 1;
            }
            anyhow::Ok(rows)
        }));
    }
    let mut rows = 0;
    for w in workers {
        rows += w.await.context("a load worker panicked")??;
    }
    let seconds = started.elapsed().as_secs_f64();
    Ok(LoadReport {
        rows,
        seconds,
        rows_per_sec: rows as f64 / seconds.max(1e-9),
    })
}

/// One query kind's latencies.
#[derive(Clone, Debug, Serialize)]
pub struct KindReport {
    /// `q1` or `q2`.
    pub kind: &'static str,
    /// Queries run.
    pub queries: u64,
    /// Rows they returned in all.
    pub rows: u64,
    /// Mean latency, microseconds.
    pub mean_us: f64,
    /// Median.
    pub p50_us: u64,
    /// 99th percentile.
    pub p99_us: u64,
    /// Slowest.
    pub max_us: u64,
}

/// A run's result.
#[derive(Clone, Debug, Serialize)]
pub struct RunReport {
    /// Per kind, then `all`.
    pub kinds: Vec<KindReport>,
    /// Wall time in seconds.
    pub seconds: f64,
}

fn kind_report(kind: &'static str, h: &Histogram<u64>, rows: u64) -> KindReport {
    KindReport {
        kind,
        queries: h.len(),
        rows,
        mean_us: h.mean(),
        p50_us: h.value_at_quantile(0.5),
        p99_us: h.value_at_quantile(0.99),
        max_us: h.max(),
    }
}

/// Runs the instances one after another (closed loop, one in flight) at `consistency`, each
/// to its last row, and reports latencies per query kind.
pub async fn run(
    spec: &TableSpec,
    instances: &[Instance],
    consistency: scylla::statement::Consistency,
) -> anyhow::Result<RunReport> {
    let session = connect(&spec.host).await?;
    let new_hist = || Histogram::<u64>::new_with_bounds(1, 600_000_000, 3);
    let (mut q1, mut q2, mut all) = (new_hist()?, new_hist()?, new_hist()?);
    let (mut rows1, mut rows2) = (0u64, 0u64);
    let started = Instant::now();
    for instance in instances {
        let cql = instance.cql(spec);
        let t = Instant::now();
        let mut statement = scylla::statement::Statement::new(cql.clone());
        statement.set_consistency(consistency);
        let mut pager = session
            .query_iter(statement, &[])
            .await
            .with_context(|| format!("running {cql}"))?
            .rows_stream::<(scylla::value::CqlDecimal,)>()?;
        let mut rows = 0u64;
        while let Some(row) = pager.next().await {
            row.with_context(|| format!("reading {cql}"))?;
            rows += 1;
        }
        let us = (t.elapsed().as_micros() as u64).max(1);
        all.record(us)?;
        match instance {
            Instance::Q1 { .. } => {
                q1.record(us)?;
                rows1 += rows;
            }
            Instance::Q2 { .. } => {
                q2.record(us)?;
                rows2 += rows;
            }
        }
    }
    Ok(RunReport {
        kinds: vec![
            kind_report("q1", &q1, rows1),
            kind_report("q2", &q2, rows2),
            kind_report("all", &all, rows1 + rows2),
        ],
        seconds: started.elapsed().as_secs_f64(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_print_as_cql_date_literals() {
        assert_eq!(date_text(0), "1970-01-01");
        assert_eq!(date_text(8035), "1992-01-01");
        assert_eq!(date_text(10_591), "1998-12-31");
        assert_eq!(date_text(-1), "1969-12-31");
        assert_eq!(cql_date(0), CqlDate(1 << 31));
    }

    #[test]
    fn instances_are_drawn_from_existing_orders_deterministically() {
        let a = instances(0.01, 1, 40, 7);
        assert_eq!(a.len(), 40);
        let b = instances(0.01, 1, 40, 7);
        let spec = TableSpec {
            host: String::new(),
            keyspace: "tpch".into(),
            table: "orders".into(),
            buckets: 1,
        };
        let text = |v: &[Instance]| v.iter().map(|i| i.cql(&spec)).collect::<Vec<_>>();
        assert_eq!(text(&a), text(&b));
        assert_ne!(text(&a), text(&instances(0.01, 1, 40, 8)));
        // Every Q1 names a (date, clerk) some order has; every Q2 window holds its order.
        let orders: Vec<(i32, i32, String)> = OrderGenerator::new(0.01, 1, 1)
            .iter()
            .map(|o| {
                (
                    o.o_custkey as i32,
                    o.o_orderdate.to_unix_epoch(),
                    o.o_clerk.to_string(),
                )
            })
            .collect();
        for i in &a {
            let found = match i {
                Instance::Q1 {
                    orderdate, clerk, ..
                } => orders.iter().any(|(_, d, c)| d == orderdate && c == clerk),
                Instance::Q2 {
                    custkey,
                    clerk,
                    from,
                    to,
                    ..
                } => orders
                    .iter()
                    .any(|(k, d, c)| k == custkey && c == clerk && d >= from && d < to),
            };
            assert!(found, "{}", i.cql(&spec));
        }
        assert_eq!(a.iter().filter(|i| i.kind() == "q1").count(), 20);
    }
}
