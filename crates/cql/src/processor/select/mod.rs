//! SELECT: which partitions and clustering ranges to read, reading them through the
//! coordinator in bounded chunks, resolving rows, filtering, limits, paging, ordering and
//! aggregates.
//!
//! Two read modes:
//! - **partitions**: the partition key is fully restricted by `=`/`IN`; each partition's
//!   head (deletion, range tombstones, static row) is read, then its clustering ranges;
//! - **range**: otherwise a token range (all tokens by default) is scanned in key order,
//!   partition after partition.
//!
//! Paging state is the engine key of the last row returned plus the remaining LIMIT and the
//! rows already returned from that row's partition (for PER PARTITION LIMIT); the next page
//! re-reads that partition's head and continues after the key.

use std::cmp::Ordering;
use std::ops::Bound;
use std::sync::Arc;

use bytes::Bytes;
use mosaic_rows::{
    token_range, ClusteringFilter, KeyRange, KeySchema, LiveRow, PartitionPrefix, PartitionResolver,
};
use mosaic_types::{CqlType, CqlValue, Layout, Token};

use crate::ast::{Ident, IntValue, Order, SelectStatement, Selection, SelectorExpr, Term};
use crate::coordinator::{Coordinator, ReadCommand};
use crate::frame::{
    ColumnSpec, ColumnType, ErrorKind, ErrorResponse, ResultBody, Rows, RowsMetadata,
};
use crate::schema::{ColumnKind, TableMeta};

use super::json;
use super::restrict::{self, Restrictions};
use super::values::{eval_int, Bindings, EvalContext};
use super::{invalid, Exec, Processor};

mod aggregate;
mod elements;
mod index;
mod paging;
mod reads;
mod selectors;
mod tombstones;

use aggregate::*;
use paging::PagingState;
use reads::*;
use selectors::*;
pub(crate) use selectors::{output_columns, OutColumn};

/// Entries asked of the coordinator per read.
const CHUNK_ENTRIES: usize = 1000;

/// The analysed SELECT.
struct Plan {
    table: Arc<TableMeta>,
    schema: KeySchema,
    restrictions: Restrictions,
    columns: Arc<[OutColumn]>,
    aggregate: bool,
    /// GROUP BY: how many primary key columns (in order) make a group's key; 0: none.
    group_by: usize,
    distinct: bool,
    reversed: bool,
    /// Sort rows of several partitions by clustering (ORDER BY with IN).
    merge_sort: bool,
    limit: Option<u64>,
    per_partition_limit: Option<u64>,
    now_secs: i64,
    /// What replicas filter rows by before answering ([`pushdown_filter`]).
    filter: Option<ClusteringFilter>,
    /// The secondary index reads go through ([`index::most_selective`]).
    index: Option<crate::index::IndexQuery>,
}

/// Runs a SELECT.
pub(crate) async fn execute<C: Coordinator>(
    p: &Processor<C>,
    exec: &Exec<'_>,
    s: &SelectStatement,
    warnings: &mut Vec<String>,
) -> Result<ResultBody, ErrorResponse> {
    let coordinator = p.coordinator();
    let catalog = coordinator.catalog();
    let bindings = Bindings::new(&exec.params.values, &s.bind_markers)?;
    let keyspace = exec.keyspace_of(&s.table)?;
    if crate::system::is_system_keyspace(keyspace) {
        return select_system(coordinator.as_ref(), exec, s, keyspace, &catalog, &bindings);
    }
    let table = exec.table(&catalog, &s.table)?;
    let ctx = EvalContext {
        bindings: &bindings,
        now_micros: coordinator.new_timestamp(),
    };
    let table_id = table.id;
    let mean_rows = |index: &str| coordinator.index_mean_rows(table_id, index);
    let plan = plan(
        table,
        s,
        &ctx,
        exec.now_secs(coordinator.now_secs()),
        &mean_rows,
        &exec.limits,
    )?;
    // An aggregate without GROUP BY is one row; GROUP BY pages by groups.
    let page_size = match exec.params.page_size {
        Some(n) if n > 0 && (!plan.aggregate || plan.group_by > 0) => Some(n as u64),
        _ => None,
    };
    if plan.merge_sort && page_size.is_some() {
        return Err(invalid("Cannot page queries with both ORDER BY and a IN restriction on the partition key; you must either remove the ORDER BY or the IN and sort client side, or disable paging for this query"));
    }
    let resume = match &exec.params.paging_state {
        Some(b) if !b.is_empty() => Some(PagingState::decode(b)?),
        _ => None,
    };
    let mut run = Run {
        plan: &plan,
        page_size,
        // GROUP BY's LIMIT counts groups ([`aggregate::Groups`]).
        limit_left: match resume.as_ref() {
            _ if plan.group_by > 0 => u64::MAX,
            Some(r) => r.limit_left,
            None => plan.limit.unwrap_or(u64::MAX),
        },
        rows: Vec::new(),
        aggregates: AggState::new(&plan.columns),
        groups: aggregate::Groups::new(
            match resume.as_ref() {
                Some(r) => r.limit_left,
                None => plan.limit.unwrap_or(u64::MAX),
            },
            page_size,
        ),
        emitted: 0,
        partition_rows: 0,
        last_key: None,
        last_key_partition_rows: 0,
        stop: false,
        sort_keys: Vec::new(),
        tombstones: tombstones::Tombstones::new(
            coordinator.tombstone_thresholds(),
            exec.params.consistency,
            coordinator.local_node().rpc_address,
        ),
        budget: paging::ResultBudget::new(page_size, exec.limits.unpaged_result_size_bytes_max),
    };
    read(coordinator.as_ref(), exec, &mut run, resume).await?;
    warnings.extend(run.tombstones.finish(&plan.table.name, s));
    // Built before the bound is checked: GROUP BY's last group counts towards it too.
    let rows = result_rows(&plan, &mut run);
    if run.budget.exceeded {
        return Err(exec.limits.unpaged_too_large());
    }
    let (more, limit_left) = if plan.group_by > 0 {
        (run.stop && run.groups.paged, run.groups.left)
    } else {
        (run.stop && run.limit_left > 0, run.limit_left)
    };
    let paging_state = match (&run.last_key, more) {
        (Some(key), true) if page_size.is_some() => Some(
            PagingState {
                last_key: key.clone(),
                limit_left,
                partition_rows: run.last_key_partition_rows,
            }
            .encode(),
        ),
        _ => None,
    };
    let columns: Vec<_> = plan
        .columns
        .iter()
        .map(|c| (c.name.clone(), c.ty.clone()))
        .collect();
    let depths = json::to_json_depths(s);
    let rows = json::result_rows(s.json, &columns, &depths, rows);
    let specs = result_specs(&plan, exec.params.skip_metadata);
    let mut metadata = RowsMetadata::new(json::result_specs(&plan.table, s, specs));
    metadata.paging_state = paging_state;
    metadata.no_metadata = exec.params.skip_metadata;
    Ok(ResultBody::Rows(Rows { metadata, rows }))
}

/// A SELECT on a system keyspace: answered from the catalog and the coordinator's view.
fn select_system<C: Coordinator>(
    coordinator: &C,
    exec: &Exec<'_>,
    s: &SelectStatement,
    keyspace: &str,
    catalog: &crate::schema::Catalog,
    bindings: &Bindings,
) -> Result<ResultBody, ErrorResponse> {
    let local = coordinator.local_node();
    let peers = coordinator.peers();
    let cluster = coordinator.cluster_info();
    let built_indexes = coordinator.built_indexes();
    let view = crate::system::SystemView {
        catalog,
        local: &local,
        peers: &peers,
        cluster: &cluster,
        built_indexes: &built_indexes,
    };
    let mut qualified = s.clone();
    qualified.table.keyspace = Some(crate::ast::Ident::new(keyspace));
    let mut rows = crate::system::select(&view, &qualified, &bindings.raw())?;
    if s.json {
        json::system_rows(keyspace, s.table.name.as_str(), &mut rows);
    }
    rows.metadata.no_metadata = exec.params.skip_metadata;
    Ok(ResultBody::Rows(rows))
}

/// The page's rows: merge-sorted across the partitions of an IN when ORDER BY asks for
/// it, or the one row of aggregates.
fn result_rows(plan: &Plan, run: &mut Run<'_>) -> Vec<Vec<Option<Bytes>>> {
    let mut out_rows = std::mem::take(&mut run.rows);
    if plan.merge_sort {
        let mut keyed: Vec<(Vec<u8>, Vec<Option<Bytes>>)> =
            run.sort_keys.drain(..).zip(out_rows).collect();
        keyed.sort_by(|a, b| {
            if plan.reversed {
                b.0.cmp(&a.0)
            } else {
                a.0.cmp(&b.0)
            }
        });
        out_rows = keyed.into_iter().map(|(_, r)| r).collect();
        if let Some(limit) = plan.limit {
            out_rows.truncate(limit as usize);
        }
    }
    if plan.group_by > 0 {
        out_rows = run.groups.finish(plan, &run.aggregates, &mut run.budget);
    } else if plan.aggregate {
        out_rows = vec![run.aggregates.finish(&plan.columns)];
    }
    out_rows
}

/// The result's column specs; with `count_only` (the client skips the metadata, and only
/// their count is sent) without their names.
fn result_specs(plan: &Plan, count_only: bool) -> Vec<ColumnSpec> {
    if count_only {
        return plan
            .columns
            .iter()
            .map(|c| ColumnSpec::new(String::new(), String::new(), String::new(), c.ty.clone()))
            .collect();
    }
    plan.columns
        .iter()
        .map(|c| {
            ColumnSpec::new(
                &plan.table.keyspace,
                &plan.table.name,
                &c.name,
                c.ty.clone(),
            )
        })
        .collect()
}

/// Analyses a SELECT against its table: restrictions, output columns, what needs ALLOW
/// FILTERING, the order and the limits. `mean_rows` estimates an index's rows per indexed
/// value ([`Coordinator::index_mean_rows`]).
fn plan(
    table: Arc<TableMeta>,
    s: &SelectStatement,
    ctx: &EvalContext<'_>,
    now_secs: i64,
    mean_rows: &dyn Fn(&str) -> Option<f64>,
    limits: &super::StatementLimits,
) -> Result<Plan, ErrorResponse> {
    let restrictions = restrict::analyse(&table, &s.where_clause, ctx, limits)?;
    let columns = elements::bind(output_columns(&table, s)?, ctx)?;
    let aggregate = columns
        .iter()
        .any(|c| matches!(c.expr, Expr::CountRows | Expr::Aggregate(..)));
    let group_by = aggregate::group_by_len(&table, &restrictions, &s.group_by)?;
    let aggregate = aggregate || group_by > 0;
    if s.distinct {
        check_distinct(&table, &columns)?;
    }
    let partition_mode = restrictions.partition_fully_restricted();
    let candidates = index::candidates(&table, &restrictions, partition_mode);
    let filtering = match candidates.first() {
        Some(choice) => {
            index::check(&restrictions, s)?;
            index::filtering_needed(&table, &restrictions, partition_mode, choice)
        }
        None => filtering_needed(&table, &restrictions, partition_mode)?,
    };
    let index = index::most_selective(&candidates, mean_rows);
    if let Some(message) = filtering {
        if !s.allow_filtering {
            return Err(invalid(message));
        }
    }
    if partition_mode && restrictions.token.is_some() {
        return Err(invalid("Columns of the partition key cannot be restricted with both token() and another relation"));
    }
    let (reversed, merge_sort) = if s.order_by.is_empty() {
        (false, false)
    } else {
        if !partition_mode {
            return Err(invalid("ORDER BY is only supported when the partition key is restricted by an EQ or an IN."));
        }
        (
            order_reversed(&table, &s.order_by)?,
            restrictions.partition_keys().is_some_and(|k| k.len() > 1),
        )
    };
    let limit = positive_limit(s.limit.as_ref(), "[limit]", "LIMIT", "limit", ctx)?;
    let per_partition_limit = positive_limit(
        s.per_partition_limit.as_ref(),
        "[per_partition_limit]",
        "PER PARTITION LIMIT",
        "per partition limit",
        ctx,
    )?;
    let schema = table.key_schema();
    let filter = pushdown_filter(&table, &restrictions, partition_mode, &schema)?;
    Ok(Plan {
        table,
        schema,
        restrictions,
        filter,
        columns,
        aggregate,
        group_by,
        distinct: s.distinct,
        reversed,
        merge_sort,
        limit,
        per_partition_limit,
        now_secs,
        index: index.map(|c| c.query),
    })
}

/// The filter replicas apply to the rows they read, when it saves work: built from the
/// single-column clustering restrictions ([`Restrictions::clustering_filter`]) and sent
/// when the key ranges the read asks for do not already hold only the rows those
/// restrictions select — in range mode (a scan reads whole partitions), when they do not
/// form a key prefix (ALLOW FILTERING), when a multi-column restriction makes the ranges
/// ignore them — and always for a `heterogeneous` table, whose replicas sorted in another
/// order plan their own ranges from the filter. The coordinator's predicates still check
/// every row: the filter only removes rows they would drop.
fn pushdown_filter(
    table: &TableMeta,
    restrictions: &Restrictions,
    partition_mode: bool,
    schema: &KeySchema,
) -> Result<Option<ClusteringFilter>, ErrorResponse> {
    if restrictions.clustering.iter().all(Option::is_none) {
        return Ok(None);
    }
    let ranges_select_exactly = partition_mode
        && restrictions.multi.is_none()
        && restrictions.clustering_problem(table).is_none();
    if ranges_select_exactly && table.params.layout != Layout::Heterogeneous {
        return Ok(None);
    }
    let filter = restrictions.clustering_filter(schema)?;
    Ok((!filter.is_trivial()).then_some(filter))
}

/// What a workload line's SELECT asks of its table, checked as its execution would check
/// it: the filter of its clustering restrictions (all of them, whether or not the read
/// would send it) and its LIMIT.
pub(crate) fn workload_query(
    table: Arc<TableMeta>,
    s: &SelectStatement,
    ctx: &EvalContext<'_>,
) -> Result<(ClusteringFilter, Option<u64>), ErrorResponse> {
    let plan = plan(
        table,
        s,
        ctx,
        ctx.now_micros.div_euclid(1_000_000),
        &|_| None,
        &super::StatementLimits::DEFAULT,
    )?;
    let filter = plan.restrictions.clustering_filter(&plan.schema)?;
    Ok((filter, plan.limit))
}

/// Why the query needs ALLOW FILTERING (Cassandra's message), if it does.
fn filtering_needed(
    table: &TableMeta,
    restrictions: &Restrictions,
    partition_mode: bool,
) -> Result<Option<String>, ErrorResponse> {
    let mut needs_filtering = None;
    if !partition_mode {
        let restricted = restrictions
            .partition
            .iter()
            .filter(|r| r.is_some())
            .count();
        if restricted > 0 {
            if restrictions.token.is_some() {
                return Err(invalid("Columns of the partition key cannot be restricted with both token() and another relation"));
            }
            let missing: Vec<String> = table
                .partition_key()
                .iter()
                .zip(&restrictions.partition)
                .filter(|(_, r)| r.is_none())
                .map(|(c, _)| c.name.clone())
                .collect();
            needs_filtering = Some(if missing.is_empty() {
                "Only EQ and IN relation are supported on the partition key (unless you use the token() function)".to_owned()
            } else {
                format!(
                    "Partition key parts: {} must be restricted as other parts are",
                    missing.join(", ")
                )
            });
        } else if restrictions.has_clustering() {
            needs_filtering = Some(filtering_message());
        }
    }
    if let Some(problem) = restrictions.clustering_problem(table) {
        needs_filtering.get_or_insert(problem);
    }
    if !restrictions.on_regular.is_empty() {
        needs_filtering.get_or_insert_with(filtering_message);
    }
    Ok(needs_filtering)
}

/// Whether ORDER BY reads the partition against its declared clustering order: the
/// columns must follow the declared order, all one way.
fn order_reversed(table: &TableMeta, order_by: &[(Ident, Order)]) -> Result<bool, ErrorResponse> {
    let clustering = table.clustering();
    let mut direction = None;
    for (i, (ident, order)) in order_by.iter().enumerate() {
        let Some(position) = clustering.iter().position(|c| c.name == ident.as_str()) else {
            return Err(invalid(format!(
                "Order by is currently only supported on the clustered columns of the PRIMARY KEY, got {}",
                ident.as_str()
            )));
        };
        if position != i {
            return Err(invalid("Order by currently only supports the ordering of columns following their declared order in the PRIMARY KEY"));
        }
        let declared = match clustering.get(position).map(|c| c.kind) {
            Some(ColumnKind::Clustering { order, .. }) => order,
            _ => crate::schema::ClusteringOrder::Asc,
        };
        let wants_desc = *order == Order::Desc;
        let rev = wants_desc != (declared == crate::schema::ClusteringOrder::Desc);
        if direction.is_some_and(|d| d != rev) {
            return Err(invalid("Unsupported order by relation"));
        }
        direction = Some(rev);
    }
    Ok(direction.unwrap_or(false))
}

/// A LIMIT-like value: strictly positive, not null. `marker` names its bind marker,
/// `clause` and `null_name` appear in Cassandra's messages.
fn positive_limit(
    value: Option<&IntValue>,
    marker: &str,
    clause: &str,
    null_name: &str,
    ctx: &EvalContext<'_>,
) -> Result<Option<u64>, ErrorResponse> {
    let Some(v) = value else {
        return Ok(None);
    };
    match eval_int(v, CqlType::Int, marker, ctx)? {
        Some(n) if n > 0 => Ok(Some(n as u64)),
        Some(n) => Err(invalid(format!(
            "{clause} must be strictly positive (got {n})"
        ))),
        None => Err(invalid(format!("Invalid null value of {null_name}"))),
    }
}

fn filtering_message() -> String {
    "Cannot execute this query as it might involve data filtering and thus may have unpredictable performance. If you want to execute this query despite the performance unpredictability, use ALLOW FILTERING".to_owned()
}

/// What the row handler tells the reader.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Next {
    /// Keep going.
    Continue,
    /// Skip the rest of this partition.
    SkipPartition,
    /// The page (or the LIMIT) is full.
    Stop,
}

/// The state of one execution.
struct Run<'p> {
    plan: &'p Plan,
    page_size: Option<u64>,
    limit_left: u64,
    rows: Vec<Vec<Option<Bytes>>>,
    aggregates: AggState,
    /// GROUP BY's finished groups.
    groups: aggregate::Groups,
    emitted: u64,
    partition_rows: u64,
    last_key: Option<Vec<u8>>,
    /// `partition_rows` of `last_key`'s partition: where a next page resumes (GROUP BY
    /// stops a page at the first row of the next group, maybe in the next partition).
    last_key_partition_rows: u64,
    stop: bool,
    sort_keys: Vec<Vec<u8>>,
    tombstones: tombstones::Tombstones,
    /// Unpaged: the bytes the result (its rows, or GROUP BY's group rows) may still take.
    budget: paging::ResultBudget,
}

impl Run<'_> {
    /// Entries to ask the coordinator for in round `round` (from 0) of a scan: the rows
    /// still wanted by LIMIT and the page (a live row is one entry; tables with static
    /// columns also hold a static row per partition, so they ask for twice that), at most
    /// [`CHUNK_ENTRIES`]. Asking for more costs every replica a read, a copy and a send
    /// of entries the query then drops (`LIMIT 50` used to read 108). Entries that are not
    /// live rows (deleted rows, partition and range tombstones) leave a round short; each
    /// further round asks for twice as many, so a run of them costs a few rounds, not one
    /// per entry. Plans that may discard rows after reading them (filters, aggregates,
    /// DISTINCT, PER PARTITION LIMIT, merge sorts) ask for the whole chunk.
    fn chunk_entries(&self, round: u32) -> usize {
        let plan = self.plan;
        // Token relations are the scan's key range itself (the tightest bound of each
        // side), and replicas apply the clustering columns' relations when the plan sends
        // them a filter, so neither discards a row the read returns.
        let filters = plan.restrictions.predicates.iter().any(|p| match p {
            restrict::Predicate::Token { .. } => false,
            restrict::Predicate::Column { column, .. } => {
                plan.filter.is_none()
                    || !plan
                        .table
                        .columns
                        .get(*column)
                        .is_some_and(|c| matches!(c.kind, ColumnKind::Clustering { .. }))
            }
            restrict::Predicate::Tuple { .. }
            | restrict::Predicate::Contains { .. }
            | restrict::Predicate::Entry { .. } => true,
        });
        if plan.aggregate
            || plan.distinct
            || plan.merge_sort
            || plan.per_partition_limit.is_some()
            || filters
        {
            return CHUNK_ENTRIES;
        }
        let page_left = self
            .page_size
            .map_or(u64::MAX, |n| n.saturating_sub(self.emitted));
        let wanted = self.limit_left.min(page_left).max(1);
        let has_static = plan
            .table
            .columns
            .iter()
            .any(|c| matches!(c.kind, ColumnKind::Static));
        let first = if has_static {
            wanted.saturating_mul(2)
        } else {
            wanted
        };
        // Past 2^10 rounds any first ask is over the cap anyway.
        usize::try_from(first.saturating_mul(1 << round.min(10)))
            .unwrap_or(CHUNK_ENTRIES)
            .min(CHUNK_ENTRIES)
    }
}

/// A row as the handler sees it (and a conditional write's result).
pub(crate) struct RowView<'a> {
    pub(crate) token: Token,
    pub(crate) partition_key: &'a [CqlValue],
    pub(crate) static_row: Option<&'a LiveRow>,
    /// `None` for a partition shown only by its static row.
    pub(crate) row: Option<&'a LiveRow>,
}

impl RowView<'_> {
    /// The value of the table's column `index` (`None`: null).
    pub(crate) fn value(&self, table: &TableMeta, index: usize) -> Option<CqlValue> {
        let col = table.columns.get(index)?;
        match col.kind {
            ColumnKind::PartitionKey { position } => self.partition_key.get(position).cloned(),
            ColumnKind::Clustering { position, .. } => self.row?.clustering.get(position).cloned(),
            ColumnKind::Static | ColumnKind::Regular => {
                let row = if col.kind == ColumnKind::Static {
                    self.static_row?
                } else {
                    self.row?
                };
                if table.counter {
                    // Its shards (`mosaic_rows::counter`): the value is their sum.
                    let shards = row.complex.get(&col.id)?.iter().map(|(_, c)| c);
                    return Some(CqlValue::BigInt(mosaic_rows::counter::counter_total(
                        shards,
                    )));
                }
                if col.ty.is_multi_cell() {
                    return super::collections::assemble(&col.ty, row.complex.get(&col.id)?);
                }
                col.ty.decode(&row.cells.get(&col.id)?.value).ok()
            }
        }
    }

    /// The cell of column `index` (a counter's newest shard: its write time is the
    /// counter's, as Cassandra's merged counter cell has the newest timestamp).
    fn cell(&self, table: &TableMeta, index: usize) -> Option<&mosaic_rows::LiveCell> {
        let col = table.columns.get(index)?;
        let row = match col.kind {
            ColumnKind::Static => self.static_row?,
            ColumnKind::Regular => self.row?,
            _ => return None,
        };
        if table.counter {
            let shards = row.complex.get(&col.id)?;
            return shards.iter().map(|(_, c)| c).max_by_key(|c| c.ts);
        }
        row.cells.get(&col.id)
    }

    fn bytes(&self, table: &TableMeta, index: usize) -> Option<Bytes> {
        let col = table.columns.get(index)?;
        match col.kind {
            ColumnKind::Static | ColumnKind::Regular
                if !col.ty.is_multi_cell() && !table.counter =>
            {
                self.cell(table, index)
                    .map(|c| Bytes::copy_from_slice(&c.value))
            }
            _ => self
                .value(table, index)
                .map(|v| Bytes::from(v.to_cql_bytes())),
        }
    }
}

impl Run<'_> {
    /// Handles one live row (or a static-only partition) at engine key `key`.
    fn row(&mut self, key: &[u8], view: &RowView<'_>) -> Next {
        let plan = self.plan;
        let table = plan.table.as_ref();
        let value = |i: usize| view.value(table, i);
        if !plan
            .restrictions
            .predicates
            .iter()
            .all(|p| p.holds(&value, view.token))
        {
            return Next::Continue;
        }
        if self.limit_left == 0 {
            self.stop = true;
            return Next::Stop;
        }
        let per_partition = if plan.distinct {
            Some(1)
        } else {
            plan.per_partition_limit
        };
        // With GROUP BY, PER PARTITION LIMIT counts the groups a partition starts.
        let counted = plan.group_by == 0 || self.groups.starts_group(plan, view);
        if counted && per_partition.is_some_and(|n| self.partition_rows >= n) {
            return Next::SkipPartition;
        }
        if plan.aggregate {
            if plan.group_by > 0
                && self
                    .groups
                    .next_row(plan, view, &mut self.aggregates, &mut self.budget)
                    .is_break()
            {
                self.stop = true;
                return Next::Stop;
            }
            self.aggregates.add(&plan.columns, table, view);
        } else {
            let out: Vec<Option<Bytes>> = plan
                .columns
                .iter()
                .map(|c| match &c.expr {
                    Expr::Column(i) => view.bytes(table, *i),
                    Expr::WriteTime(i) => view
                        .cell(table, *i)
                        .map(|c| Bytes::copy_from_slice(&c.ts.as_micros().to_be_bytes())),
                    Expr::Ttl(i) => view.cell(table, *i).and_then(|c| c.expiry).map(|e| {
                        let left =
                            e.local_expiration_secs
                                .saturating_sub(plan.now_secs)
                                .clamp(0, i64::from(i32::MAX)) as i32;
                        Bytes::copy_from_slice(&left.to_be_bytes())
                    }),
                    Expr::Token => Some(Bytes::copy_from_slice(&view.token.0.to_be_bytes())),
                    Expr::Constant(b) => b.clone(),
                    Expr::Cast(i, ty) => view
                        .value(table, *i)
                        .and_then(|v| cast_value(&v, *ty).or(Some(v)))
                        .map(|v| Bytes::from(v.to_cql_bytes())),
                    Expr::Field(i, positions) => positions
                        .iter()
                        .try_fold(view.value(table, *i), |value, position| match value {
                            Some(CqlValue::Tuple(mut fields)) if *position < fields.len() => {
                                Some(fields.swap_remove(*position))
                            }
                            _ => None,
                        })
                        .flatten()
                        .map(|v| Bytes::from(v.to_cql_bytes())),
                    Expr::Element(i, key) => elements::element(view.value(table, *i), key),
                    Expr::Slice {
                        column,
                        from,
                        to,
                        multi_cell,
                    } => elements::slice(
                        view.value(table, *column),
                        from.as_ref(),
                        to.as_ref(),
                        *multi_cell,
                    ),
                    Expr::CountRows | Expr::Aggregate(..) => None,
                })
                .collect();
            if !self.budget.take(&out) {
                self.stop = true;
                return Next::Stop;
            }
            self.rows.push(out);
            if plan.merge_sort {
                let prefix_len = plan.schema.partition_prefix_len(key).unwrap_or(0);
                self.sort_keys
                    .push(key.get(prefix_len..).unwrap_or_default().to_vec());
            }
        }
        if counted {
            self.partition_rows += 1;
        }
        self.emitted += 1;
        self.limit_left = self.limit_left.saturating_sub(1);
        self.last_key = Some(key.to_vec());
        self.last_key_partition_rows = self.partition_rows;
        if self.limit_left == 0 {
            self.stop = true;
            return Next::Stop;
        }
        // GROUP BY's pages count groups ([`aggregate::Groups`]), not rows.
        if plan.group_by == 0 && self.page_size.is_some_and(|n| self.emitted >= n) {
            self.stop = true;
            return Next::Stop;
        }
        // A group's later rows still count towards it.
        if plan.distinct
            || plan.group_by == 0
                && plan
                    .per_partition_limit
                    .is_some_and(|n| self.partition_rows >= n)
        {
            return Next::SkipPartition;
        }
        Next::Continue
    }
}
