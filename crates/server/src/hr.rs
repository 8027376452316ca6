//! Choosing heterogeneous replicas' orders: `mosaic hr optimize` (the admin endpoint's
//! `POST /hr/optimize`) and the `auto` layout option.
//!
//! Both run the paper's construction (HRCA, `mosaic_hetero::hrca`) over a workload — the
//! queries of a workload file, or the queries this node coordinated lately — with the
//! table's value distributions as this node samples them (`crate::local`), starting from
//! the table's current orders, and apply the result as every DDL is applied:
//! `ALTER TABLE … WITH layout = {…}` through the statement processor, so the schema change
//! is checked, made durable and propagated, and each node re-lays out the indexes whose
//! order changed (`mosaic_replica::heterogeneous`).

use std::collections::BTreeMap;
use std::sync::Arc;

use mosaic_cql::frame::{Consistency, ProtocolVersion, Query, QueryParameters, Request, Response};
use mosaic_cql::processor::{Processor, Session};
use mosaic_cql::schema::{Catalog, TableMeta};
use mosaic_hetero::{AnnealParams, CostModel, Query as HrQuery, TableStats};
use mosaic_rows::Permutation;
use mosaic_types::Layout;
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};

use crate::cluster::ClusterCoordinator;

/// `mosaic hr …`.
#[derive(clap::Subcommand, Debug)]
pub enum HrCommand {
    /// Choose a heterogeneous table's replica orders for a workload file (HRCA) and print
    /// them with the estimated cost per query; `--apply` changes them (ALTER TABLE), and
    /// each node re-lays out its data online.
    Optimize(OptimizeArgs),
}

/// Options of `mosaic hr optimize`.
#[derive(clap::Args, Debug)]
pub struct OptimizeArgs {
    /// The table: KEYSPACE.TABLE.
    pub table: String,
    /// The workload file: one `[WEIGHT] SELECT …;` per line (docs/cql.md, "Workload
    /// files").
    #[arg(long)]
    pub workload: std::path::PathBuf,
    /// Apply the chosen orders (ALTER TABLE … WITH layout = {…}).
    #[arg(long)]
    pub apply: bool,
    /// Annealing iterations.
    #[arg(long)]
    pub iterations: Option<usize>,
    /// Annealing seed (the same seed, workload and statistics give the same orders).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Replicas each read asks (its consistency level's count: 1 for ONE, 2 for QUORUM at
    /// RF 3): a read costs what the most expensive of its cheapest K replicas costs.
    #[arg(long, default_value_t = 1)]
    pub read_replicas: usize,
    #[command(flatten)]
    pub host: crate::tools::HostArgs,
}

/// Runs a `mosaic hr` command.
pub fn run(command: HrCommand) -> anyhow::Result<()> {
    use anyhow::Context;
    match command {
        HrCommand::Optimize(args) => {
            let text = std::fs::read_to_string(&args.workload)
                .with_context(|| format!("reading {}", args.workload.display()))?;
            let addr = args.host.addr()?;
            let mut path = format!("/hr/optimize?table={}", args.table);
            if args.apply {
                path.push_str("&apply=true");
            }
            if let Some(n) = args.iterations {
                path.push_str(&format!("&iterations={n}"));
            }
            if let Some(s) = args.seed {
                path.push_str(&format!("&seed={s}"));
            }
            path.push_str(&format!("&replicas={}", args.read_replicas));
            let login = args.host.credentials.login()?;
            let o: Optimized =
                crate::admin::client::post_text_as(addr, &path, &text, login.as_ref())?;
            print_optimized(&o);
            Ok(())
        }
    }
}

fn print_optimized(o: &Optimized) {
    println!(
        "{}: {} replicas, statistics from {} sampled rows",
        o.table, o.replicas, o.sample_rows
    );
    for (i, (now, chosen)) in o.current.iter().zip(&o.chosen).enumerate() {
        let mark = if now == chosen { "" } else { "   (changes)" };
        println!("  replica {i}: {now:<30} -> {chosen}{mark}");
    }
    println!(
        "  estimated mean cost per query: {:.0} µs -> {:.0} µs ({:.1}% less)",
        o.current_cost_micros,
        o.chosen_cost_micros,
        o.gain * 100.0
    );
    for q in &o.queries {
        println!(
            "    line {:>4} (weight {}): {:.0} µs -> {:.0} µs at replica {} (rows read {:.0} -> {:.0})",
            q.line,
            q.weight,
            q.current_micros,
            q.chosen_micros,
            q.replica,
            q.current_rows,
            q.chosen_rows
        );
    }
    if o.applied {
        println!("  applied: the nodes re-lay out the changed replicas in the background");
    } else if o.chosen != o.current {
        println!("  not applied (run again with --apply)");
    }
}

/// The outcome of an optimization, as `mosaic hr optimize` prints it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Optimized {
    /// `keyspace.table`.
    pub table: String,
    /// The keyspace's replication factor: how many orders were chosen.
    pub replicas: usize,
    /// The table's orders now, one per replica index (`(a, b, c)`).
    pub current: Vec<String>,
    /// The orders chosen.
    pub chosen: Vec<String>,
    /// The workload's estimated mean cost per query under the current orders (µs).
    pub current_cost_micros: f64,
    /// … and under the chosen ones.
    pub chosen_cost_micros: f64,
    /// `1 − chosen / current`: the fraction of the cost the chosen orders save.
    pub gain: f64,
    /// Rows in the sample the estimates come from (this node's).
    pub sample_rows: usize,
    /// Per query: its line, weight, and estimated cost and replica index before and after.
    pub queries: Vec<QueryCost>,
    /// Whether the chosen orders were applied (`--apply`, and they differ).
    pub applied: bool,
}

/// One workload query's estimate.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct QueryCost {
    /// Its line in the workload file (0 for recorded queries).
    pub line: usize,
    /// Its weight.
    pub weight: f64,
    /// Its cost at the cheapest replica under the current orders (µs).
    pub current_micros: f64,
    /// … under the chosen orders.
    pub chosen_micros: f64,
    /// The rows the replica answering it reads, estimated (Row(r, q)), under the current
    /// orders …
    pub current_rows: f64,
    /// … and under the chosen ones.
    pub chosen_rows: f64,
    /// The replica index that answers it under the chosen orders.
    pub replica: usize,
}

/// `(a, b, c)`: an order by column names.
fn order_text(table: &TableMeta, perm: &Permutation) -> String {
    let names: Vec<String> = perm
        .positions()
        .iter()
        .map(|&i| {
            table
                .clustering()
                .get(i)
                .map_or_else(|| i.to_string(), |c| c.name.clone())
        })
        .collect();
    format!("({})", names.join(", "))
}

/// The replication factor of `table`'s keyspace.
fn replicas_of(catalog: &Catalog, table: &TableMeta) -> usize {
    catalog
        .keyspace(&table.keyspace)
        .map_or(1, |k| k.replication.factor() as usize)
        .max(1)
}

/// Runs HRCA for `table` over `workload` from its current orders.
pub fn optimize(
    catalog: &Catalog,
    table: &TableMeta,
    stats: &TableStats,
    workload: &[HrQuery],
    params: &AnnealParams,
) -> Optimized {
    let rf = replicas_of(catalog, table);
    let columns = table.clustering().len();
    let listed = table.replica_orders();
    let current: Vec<Permutation> = (0..rf)
        .map(|i| {
            listed
                .get(i)
                .cloned()
                .and_then(Permutation::new)
                .unwrap_or_else(|| Permutation::identity(columns))
        })
        .collect();
    let model = CostModel::default();
    let mut built = mosaic_hetero::hrca(stats, workload, current.clone(), &model, params);
    // A replica whose change saves nothing keeps its order: a re-layout is not free.
    for i in 0..built.orders.len() {
        let (Some(now), Some(chosen)) = (current.get(i), built.orders.get(i)) else {
            continue;
        };
        if now == chosen {
            continue;
        }
        let mut kept = built.orders.clone();
        if let Some(slot) = kept.get_mut(i) {
            *slot = now.clone();
        }
        let cost = mosaic_hetero::workload_cost(stats, &kept, workload, &model);
        if cost <= built.cost * (1.0 + 1e-9) {
            built.orders = kept;
            built.cost = cost.min(built.cost);
        }
    }
    // A query costs what the most expensive of the replicas it asks costs (the k
    // cheapest, k from its consistency level); the replica reported is the cheapest.
    let per_query = |orders: &[Permutation], q: &HrQuery| {
        let costs = mosaic_hetero::replica_costs(stats, orders, &q.filter, q.limit, &model);
        let best = mosaic_hetero::cheapest(&costs).unwrap_or(0);
        let mut sorted = costs.clone();
        sorted.sort_unstable_by(|a, b| a.total_cmp(b));
        let k = q.replicas.clamp(1, sorted.len().max(1));
        let rows = orders.get(best).map_or(0.0, |p| {
            mosaic_hetero::rows_read(stats, p, &q.filter, q.limit)
        });
        (
            sorted.get(k - 1).copied().unwrap_or(f64::INFINITY),
            best,
            rows,
        )
    };
    let queries = workload
        .iter()
        .map(|q| {
            let (current_micros, _, current_rows) = per_query(&current, q);
            let (chosen_micros, replica, chosen_rows) = per_query(&built.orders, q);
            QueryCost {
                line: 0,
                weight: q.weight,
                current_micros,
                chosen_micros,
                current_rows,
                chosen_rows,
                replica,
            }
        })
        .collect();
    let gain = if built.initial_cost > 0.0 {
        1.0 - built.cost / built.initial_cost
    } else {
        0.0
    };
    Optimized {
        table: format!("{}.{}", table.keyspace, table.name),
        replicas: rf,
        current: current.iter().map(|p| order_text(table, p)).collect(),
        chosen: built.orders.iter().map(|p| order_text(table, p)).collect(),
        current_cost_micros: built.initial_cost,
        chosen_cost_micros: built.cost,
        gain,
        sample_rows: stats.columns.first().map_or(0, |c| c.sample_len()),
        queries,
        applied: false,
    }
}

/// The `ALTER TABLE` giving `table` the orders of `chosen`, its other layout options kept.
pub fn alter_statement(table: &TableMeta, chosen: &[String]) -> String {
    let mut options: BTreeMap<String, String> = table.params.layout_options.clone();
    options.insert("replica_orders".into(), chosen.join(", "));
    let mut map = format!("'class': '{}'", Layout::Heterogeneous.name());
    for (k, v) in &options {
        map.push_str(&format!(", '{}': '{}'", k, v.replace('\'', "''")));
    }
    format!(
        "ALTER TABLE \"{}\".\"{}\" WITH layout = {{{map}}}",
        table.keyspace.replace('"', "\"\""),
        table.name.replace('"', "\"\"")
    )
}

/// Runs `statement` (DDL) through the statement processor, as a client's would be.
pub async fn run_ddl(cluster: &Arc<ClusterCoordinator>, statement: String) -> Result<(), String> {
    let processor = Processor::new(cluster.clone());
    let mut session = Session::new(ProtocolVersion::V4);
    let request = Request::Query(Query {
        query: statement,
        params: QueryParameters::new(Consistency::One),
    });
    match processor.process(&mut session, request).await {
        Response::Error(e) => Err(e.message),
        _ => Ok(()),
    }
}

/// Queries a node coordinated lately, per heterogeneous table: the `auto` option's
/// workload. A uniform reservoir of [`RECORDED_MAX`] queries per table (Algorithm R), so
/// recording costs a lock, a counter and, rarely, a clone.
#[derive(Default)]
pub struct Recorder {
    tables: Mutex<BTreeMap<mosaic_cql::schema::TableId, Recorded>>,
}

struct Recorded {
    seen: u64,
    rng: mosaic_env::rng::SplitMix64,
    queries: Vec<HrQuery>,
}

/// Queries kept per table.
pub const RECORDED_MAX: usize = 512;

impl Recorder {
    /// Notes a read of `table` with `filter` and `limit`.
    pub fn record(
        &self,
        table: mosaic_cql::schema::TableId,
        filter: &mosaic_rows::ClusteringFilter,
        limit: usize,
        replicas: usize,
    ) {
        let mut tables = self.tables.lock();
        let r = tables.entry(table).or_insert_with(|| Recorded {
            seen: 0,
            rng: mosaic_env::rng::SplitMix64::new(0x5245_434f_5244),
            queries: Vec::with_capacity(RECORDED_MAX),
        });
        r.seen += 1;
        let query = || {
            HrQuery::new(filter.clone())
                .with_limit(limit as u64)
                .with_replicas(replicas)
        };
        if r.queries.len() < RECORDED_MAX {
            r.queries.push(query());
            return;
        }
        let at = (r.rng.next_u64() % r.seen) as usize;
        if let Some(q) = r.queries.get_mut(at) {
            *q = query();
        }
    }

    /// The queries recorded for `table`, and how many were seen.
    pub fn queries(&self, table: mosaic_cql::schema::TableId) -> (Vec<HrQuery>, u64) {
        self.tables
            .lock()
            .get(&table)
            .map(|r| (r.queries.clone(), r.seen))
            .unwrap_or_default()
    }
}

/// Recorded queries a table needs before `auto` judges its orders by them.
const AUTO_QUERIES_MIN: u64 = 100;

/// One look at every heterogeneous table with `auto = true` (see the module doc): when this
/// node is the live node with the lowest address, re-chooses the orders from the queries it
/// recorded and applies them if they save at least the table's `auto_min_gain`. Returns
/// the tables changed.
pub async fn auto_pass(
    cluster: &Arc<ClusterCoordinator>,
    local: &crate::local::LocalCoordinator,
) -> Vec<String> {
    let node = cluster.node();
    let me = node.endpoint();
    let leader = node
        .states()
        .into_iter()
        .filter(|(_, up)| *up)
        .map(|(s, _)| s.endpoint)
        .chain(std::iter::once(me))
        .min();
    if leader != Some(me) {
        return Vec::new();
    }
    let catalog = local.current_catalog();
    let mut changed = Vec::new();
    for table in catalog.tables() {
        let options = &table.params.layout_options;
        if table.params.layout != Layout::Heterogeneous
            || options.get("auto").map(String::as_str) != Some("true")
        {
            continue;
        }
        let min_gain: f64 = options
            .get("auto_min_gain")
            .and_then(|v| v.parse().ok())
            .unwrap_or(0.2);
        let (queries, seen) = cluster.recorder().queries(table.id);
        if seen < AUTO_QUERIES_MIN {
            continue;
        }
        let Some(stats) = local.table_stats(table.id) else {
            continue;
        };
        let result = optimize(&catalog, table, &stats, &queries, &AnnealParams::default());
        let name = result.table.clone();
        if result.chosen == result.current || result.gain < min_gain {
            tracing::debug!(target: "mosaic::hr", table = name, gain = result.gain, "auto: orders kept");
            continue;
        }
        match run_ddl(cluster, alter_statement(table, &result.chosen)).await {
            Ok(()) => {
                tracing::info!(target: "mosaic::hr", table = name, gain = result.gain, orders = %result.chosen.join(", "), queries = seen, "auto: replica orders changed");
                changed.push(name);
            }
            Err(e) => {
                tracing::warn!(target: "mosaic::hr", table = name, error = %e, "auto: changing the replica orders failed")
            }
        }
    }
    changed
}
