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

use bytes::{BufMut, Bytes, BytesMut};
use mosaic_rows::{token_range, KeyRange, KeySchema, LiveRow, PartitionPrefix, PartitionResolver};
use mosaic_types::{CqlType, CqlValue, Token};

use crate::ast::{Order, SelectStatement, Selection, SelectorExpr, Term};
use crate::coordinator::{Coordinator, ReadCommand};
use crate::frame::{
    ColumnSpec, ColumnType, ErrorKind, ErrorResponse, ResultBody, Rows, RowsMetadata,
};
use crate::schema::{ColumnKind, TableMeta};

use super::restrict::{self, Restrictions};
use super::values::{eval_int, Bindings, EvalContext};
use super::{invalid, Exec, Processor};

/// Entries asked of the coordinator per read.
const CHUNK_ENTRIES: usize = 1000;

/// One output column's computation.
#[derive(Clone, Debug)]
pub(crate) enum Expr {
    /// A table column.
    Column(usize),
    /// `writetime(c)`.
    WriteTime(usize),
    /// `ttl(c)`.
    Ttl(usize),
    /// `token(pk…)`.
    Token,
    /// A constant.
    Constant(Option<Bytes>),
    /// `count(*)`.
    CountRows,
    /// An aggregate of a column.
    Aggregate(Aggregate, usize),
    /// `CAST(column AS type)`.
    Cast(usize, CqlType),
}

/// The native aggregates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Aggregate {
    /// `count(c)`: non-null values.
    Count,
    /// `sum(c)`.
    Sum,
    /// `min(c)`.
    Min,
    /// `max(c)`.
    Max,
    /// `avg(c)`.
    Avg,
}

/// One output column.
#[derive(Clone, Debug)]
pub(crate) struct OutColumn {
    /// Its name in the result metadata.
    pub name: String,
    /// Its type.
    pub ty: ColumnType,
    /// How it is computed.
    pub expr: Expr,
}

/// The output columns of a SELECT on `table`.
pub(crate) fn output_columns(
    table: &TableMeta,
    s: &SelectStatement,
) -> Result<Vec<OutColumn>, ErrorResponse> {
    let mut out = Vec::new();
    match &s.selection {
        Selection::Wildcard => {
            for col in table.select_star_order() {
                let index = restrict::column_index(table, &col.name)?;
                out.push(OutColumn {
                    name: col.name.clone(),
                    ty: ColumnType::Native(col.ty),
                    expr: Expr::Column(index),
                });
            }
        }
        Selection::Selectors(selectors) => {
            for sel in selectors {
                let (default_name, ty, expr) = selector(table, &sel.expr)?;
                out.push(OutColumn {
                    name: sel
                        .alias
                        .as_ref()
                        .map_or(default_name, |a| a.as_str().to_owned()),
                    ty,
                    expr,
                });
            }
        }
    }
    let aggregates = out
        .iter()
        .filter(|c| matches!(c.expr, Expr::CountRows | Expr::Aggregate(..)))
        .count();
    if aggregates > 0 && s.distinct {
        return Err(invalid(
            "Aggregate functions are not supported with SELECT DISTINCT",
        ));
    }
    Ok(out)
}

fn selector(
    table: &TableMeta,
    expr: &SelectorExpr,
) -> Result<(String, ColumnType, Expr), ErrorResponse> {
    let column = |name: &str| -> Result<(usize, CqlType, ColumnKind), ErrorResponse> {
        let index = restrict::column_index(table, name)?;
        let col = table
            .columns
            .get(index)
            .ok_or_else(|| invalid("bad column"))?;
        Ok((index, col.ty, col.kind))
    };
    match expr {
        SelectorExpr::Column(ident) => {
            let (index, ty, _) = column(ident.as_str())?;
            Ok((
                ident.as_str().to_owned(),
                ColumnType::Native(ty),
                Expr::Column(index),
            ))
        }
        SelectorExpr::WriteTime(ident) | SelectorExpr::Ttl(ident) => {
            let (index, _, kind) = column(ident.as_str())?;
            let is_wt = matches!(expr, SelectorExpr::WriteTime(_));
            let func = if is_wt { "writetime" } else { "ttl" };
            if kind.is_primary_key() {
                return Err(invalid(format!(
                    "Cannot use selection function {} on PRIMARY KEY part {}",
                    if is_wt { "writeTime" } else { "ttl" },
                    ident.as_str()
                )));
            }
            let name = format!("{func}({})", ident.as_str());
            if is_wt {
                Ok((name, CqlType::BigInt.into(), Expr::WriteTime(index)))
            } else {
                Ok((name, CqlType::Int.into(), Expr::Ttl(index)))
            }
        }
        SelectorExpr::CountRows => {
            Ok(("count".to_owned(), CqlType::BigInt.into(), Expr::CountRows))
        }
        SelectorExpr::Value(term) => {
            let Term::Literal(lit) = term else {
                return Err(invalid(
                    "Bind markers are not supported in the selection clause",
                ));
            };
            // Untyped constants are returned as text, as Cassandra 3.11 does for strings.
            let value = match lit {
                crate::ast::Literal::Integer(s) => {
                    (CqlType::Int, s.parse::<i32>().ok().map(CqlValue::Int))
                }
                crate::ast::Literal::String(s) => (CqlType::Text, Some(CqlValue::Text(s.clone()))),
                crate::ast::Literal::Boolean(b) => (CqlType::Boolean, Some(CqlValue::Boolean(*b))),
                crate::ast::Literal::Float(s) => {
                    (CqlType::Double, s.parse::<f64>().ok().map(CqlValue::Double))
                }
                _ => return Err(invalid("Unsupported constant in the selection clause")),
            };
            Ok((
                format!("{term}"),
                value.0.into(),
                Expr::Constant(value.1.map(|v| Bytes::from(v.to_cql_bytes()))),
            ))
        }
        SelectorExpr::Cast { expr, ty } => {
            let SelectorExpr::Column(ident) = expr.as_ref() else {
                return Err(invalid("CAST is only supported on columns"));
            };
            let (index, from, _) = column(ident.as_str())?;
            if cast_value(&sample_of(from), *ty).is_none() && from != *ty {
                return Err(invalid(format!("{from} cannot be cast to {ty}")));
            }
            Ok((
                format!("cast({} as {ty})", ident.as_str()),
                (*ty).into(),
                Expr::Cast(index, *ty),
            ))
        }
        SelectorExpr::Call { name, args } => {
            let func = name.as_str();
            if func == "token" {
                let pk: Vec<String> = table
                    .partition_key()
                    .iter()
                    .map(|c| c.name.clone())
                    .collect();
                let given: Vec<String> = args
                    .iter()
                    .map(|a| match a {
                        SelectorExpr::Column(c) => Ok(c.as_str().to_owned()),
                        _ => Err(invalid("token() takes the partition key columns")),
                    })
                    .collect::<Result<_, _>>()?;
                if given != pk {
                    return Err(invalid(format!(
                        "Invalid arguments for token(): expected the partition key columns ({})",
                        pk.join(", ")
                    )));
                }
                return Ok((
                    format!("system.token({})", given.join(", ")),
                    CqlType::BigInt.into(),
                    Expr::Token,
                ));
            }
            let agg = match func {
                "count" => Aggregate::Count,
                "sum" => Aggregate::Sum,
                "min" => Aggregate::Min,
                "max" => Aggregate::Max,
                "avg" => Aggregate::Avg,
                other => return Err(invalid(format!("Unknown function '{other}'"))),
            };
            let [SelectorExpr::Column(ident)] = args.as_slice() else {
                return Err(invalid(format!(
                    "Invalid arguments in call to function {func}: one column expected"
                )));
            };
            let (index, ty, _) = column(ident.as_str())?;
            let result_ty = match agg {
                Aggregate::Count => CqlType::BigInt,
                Aggregate::Min | Aggregate::Max => ty,
                Aggregate::Sum | Aggregate::Avg => {
                    if !matches!(
                        ty,
                        CqlType::Int
                            | CqlType::BigInt
                            | CqlType::SmallInt
                            | CqlType::TinyInt
                            | CqlType::Float
                            | CqlType::Double
                            | CqlType::Varint
                            | CqlType::Decimal
                    ) {
                        return Err(invalid(format!(
                            "Invalid call to function {func}, none of its type signatures match (column {} is {ty})",
                            ident.as_str()
                        )));
                    }
                    ty
                }
            };
            Ok((
                format!("system.{func}({})", ident.as_str()),
                result_ty.into(),
                Expr::Aggregate(agg, index),
            ))
        }
    }
}

fn sample_of(ty: CqlType) -> CqlValue {
    match ty {
        CqlType::Int => CqlValue::Int(0),
        CqlType::BigInt => CqlValue::BigInt(0),
        CqlType::SmallInt => CqlValue::SmallInt(0),
        CqlType::TinyInt => CqlValue::TinyInt(0),
        CqlType::Float => CqlValue::Float(0.0),
        CqlType::Double => CqlValue::Double(0.0),
        CqlType::Text => CqlValue::Text(String::new()),
        CqlType::Ascii => CqlValue::Ascii(String::new()),
        CqlType::Boolean => CqlValue::Boolean(false),
        CqlType::Timestamp => CqlValue::Timestamp(0),
        _ => CqlValue::Blob(Vec::new()),
    }
}

/// CAST between numeric types and to text, as Cassandra supports.
fn cast_value(v: &CqlValue, to: CqlType) -> Option<CqlValue> {
    let as_f64 = |v: &CqlValue| -> Option<f64> {
        Some(match v {
            CqlValue::Int(n) => f64::from(*n),
            CqlValue::BigInt(n) => *n as f64,
            CqlValue::SmallInt(n) => f64::from(*n),
            CqlValue::TinyInt(n) => f64::from(*n),
            CqlValue::Float(f) => f64::from(*f),
            CqlValue::Double(d) => *d,
            _ => return None,
        })
    };
    let as_i64 = |v: &CqlValue| -> Option<i64> {
        Some(match v {
            CqlValue::Int(n) => i64::from(*n),
            CqlValue::BigInt(n) => *n,
            CqlValue::SmallInt(n) => i64::from(*n),
            CqlValue::TinyInt(n) => i64::from(*n),
            CqlValue::Float(f) => *f as i64,
            CqlValue::Double(d) => *d as i64,
            _ => return None,
        })
    };
    Some(match to {
        CqlType::Int => CqlValue::Int(as_i64(v)? as i32),
        CqlType::BigInt => CqlValue::BigInt(as_i64(v)?),
        CqlType::SmallInt => CqlValue::SmallInt(as_i64(v)? as i16),
        CqlType::TinyInt => CqlValue::TinyInt(as_i64(v)? as i8),
        CqlType::Float => CqlValue::Float(as_f64(v)? as f32),
        CqlType::Double => CqlValue::Double(as_f64(v)?),
        CqlType::Text => CqlValue::Text(display_value(v)),
        CqlType::Ascii => CqlValue::Ascii(display_value(v)),
        _ => return None,
    })
}

fn display_value(v: &CqlValue) -> String {
    match v {
        CqlValue::Ascii(s) | CqlValue::Text(s) => s.clone(),
        CqlValue::Int(n) => n.to_string(),
        CqlValue::BigInt(n) => n.to_string(),
        CqlValue::SmallInt(n) => n.to_string(),
        CqlValue::TinyInt(n) => n.to_string(),
        CqlValue::Float(f) => f.to_string(),
        CqlValue::Double(d) => d.to_string(),
        CqlValue::Boolean(b) => b.to_string(),
        CqlValue::Varint(v) => v.to_string(),
        CqlValue::Decimal(d) => d.to_string(),
        CqlValue::Timestamp(ms) => ms.to_string(),
        other => format!("{other:?}"),
    }
}

/// The analysed SELECT.
struct Plan {
    table: Arc<TableMeta>,
    schema: KeySchema,
    restrictions: Restrictions,
    columns: Vec<OutColumn>,
    aggregate: bool,
    distinct: bool,
    reversed: bool,
    /// Sort rows of several partitions by clustering (ORDER BY with IN).
    merge_sort: bool,
    limit: Option<u64>,
    per_partition_limit: Option<u64>,
    now_secs: i64,
}

/// Where a page stopped.
#[derive(Clone, Debug, PartialEq, Eq)]
struct PagingState {
    last_key: Vec<u8>,
    limit_left: u64,
    partition_rows: u64,
}

const PAGING_VERSION: u8 = 1;

impl PagingState {
    fn encode(&self) -> Bytes {
        let mut b = BytesMut::with_capacity(self.last_key.len() + 32);
        b.put_u8(PAGING_VERSION);
        b.put_u32(self.last_key.len() as u32);
        b.put_slice(&self.last_key);
        b.put_u64(self.limit_left);
        b.put_u64(self.partition_rows);
        super::seal_paging_state(b)
    }

    fn decode(bytes: &[u8]) -> Result<PagingState, ErrorResponse> {
        let bad = super::bad_paging_state;
        let body = super::unseal_paging_state(bytes)?;
        let (&version, rest) = body.split_first().ok_or_else(bad)?;
        if version != PAGING_VERSION {
            return Err(bad());
        }
        let (len, rest) = rest.split_at_checked(4).ok_or_else(bad)?;
        let len = u32::from_be_bytes(len.try_into().map_err(|_| bad())?) as usize;
        let (key, rest) = rest.split_at_checked(len).ok_or_else(bad)?;
        let (limit, rest) = rest.split_at_checked(8).ok_or_else(bad)?;
        let (prows, rest) = rest.split_at_checked(8).ok_or_else(bad)?;
        if !rest.is_empty() {
            return Err(bad());
        }
        Ok(PagingState {
            last_key: key.to_vec(),
            limit_left: u64::from_be_bytes(limit.try_into().map_err(|_| bad())?),
            partition_rows: u64::from_be_bytes(prows.try_into().map_err(|_| bad())?),
        })
    }
}

/// Runs a SELECT.
pub(crate) async fn execute<C: Coordinator>(
    p: &Processor<C>,
    exec: &Exec<'_>,
    s: &SelectStatement,
) -> Result<ResultBody, ErrorResponse> {
    let coordinator = p.coordinator();
    let catalog = coordinator.catalog();
    let bindings = Bindings::new(&exec.params.values, &s.bind_markers)?;
    let keyspace = exec.keyspace_of(&s.table)?;
    if crate::system::is_system_keyspace(keyspace) {
        let local = coordinator.local_node();
        let peers = coordinator.peers();
        let cluster = coordinator.cluster_info();
        let view = crate::system::SystemView {
            catalog: &catalog,
            local: &local,
            peers: &peers,
            cluster: &cluster,
        };
        let mut qualified = s.clone();
        qualified.table.keyspace = Some(crate::ast::Ident::new(keyspace));
        let mut rows = crate::system::select(&view, &qualified, &bindings.raw())?;
        rows.metadata.no_metadata = exec.params.skip_metadata;
        return Ok(ResultBody::Rows(rows));
    }
    let table = exec.table(&catalog, &s.table)?;
    let ctx = EvalContext {
        bindings: &bindings,
        now_micros: coordinator.new_timestamp(),
    };
    let plan = plan(table, s, &ctx, coordinator.now_secs())?;
    let page_size = match exec.params.page_size {
        Some(n) if n > 0 && !plan.aggregate => Some(n as u64),
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
        limit_left: resume
            .as_ref()
            .map_or(plan.limit.unwrap_or(u64::MAX), |r| r.limit_left),
        rows: Vec::new(),
        aggregates: AggState::new(&plan.columns),
        emitted: 0,
        partition_rows: 0,
        last_key: None,
        stop: false,
        sort_keys: Vec::new(),
    };
    read(coordinator.as_ref(), exec, &mut run, resume).await?;
    let paging_state = match (&run.last_key, run.stop && run.limit_left > 0) {
        (Some(key), true) if page_size.is_some() => Some(
            PagingState {
                last_key: key.clone(),
                limit_left: run.limit_left,
                partition_rows: run.partition_rows,
            }
            .encode(),
        ),
        _ => None,
    };
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
    if plan.aggregate {
        out_rows = vec![run.aggregates.finish(&plan.columns)];
    }
    let specs: Vec<ColumnSpec> = plan
        .columns
        .iter()
        .map(|c| {
            ColumnSpec::new(
                &plan.table.keyspace,
                &plan.table.name,
                &c.name,
                c.ty.clone(),
            )
        })
        .collect();
    let mut metadata = RowsMetadata::new(specs);
    metadata.paging_state = paging_state;
    metadata.no_metadata = exec.params.skip_metadata;
    Ok(ResultBody::Rows(Rows {
        metadata,
        rows: out_rows,
    }))
}

fn plan(
    table: Arc<TableMeta>,
    s: &SelectStatement,
    ctx: &EvalContext<'_>,
    now_secs: i64,
) -> Result<Plan, ErrorResponse> {
    let restrictions = restrict::analyse(&table, &s.where_clause, ctx)?;
    let columns = output_columns(&table, s)?;
    let aggregate = columns
        .iter()
        .any(|c| matches!(c.expr, Expr::CountRows | Expr::Aggregate(..)));
    if !s.group_by.is_empty() {
        return Err(invalid("GROUP BY is not supported yet"));
    }
    if s.distinct {
        for c in &columns {
            let ok = match c.expr {
                Expr::Column(i) => table.columns.get(i).is_some_and(|c| {
                    matches!(c.kind, ColumnKind::PartitionKey { .. } | ColumnKind::Static)
                }),
                Expr::Token => true,
                _ => false,
            };
            if !ok {
                return Err(invalid(format!(
                    "SELECT DISTINCT queries must only request partition key columns and/or static columns (not {})",
                    c.name
                )));
            }
        }
    }
    let partition_mode = restrictions.partition_fully_restricted();
    // What needs ALLOW FILTERING.
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
    if let Some(problem) = restrictions.clustering_problem(&table) {
        needs_filtering.get_or_insert(problem);
    }
    if !restrictions.on_regular.is_empty() {
        needs_filtering.get_or_insert_with(filtering_message);
    }
    if let Some(message) = needs_filtering {
        if !s.allow_filtering {
            return Err(invalid(message));
        }
    }
    if partition_mode && restrictions.token.is_some() {
        return Err(invalid("Columns of the partition key cannot be restricted with both token() and another relation"));
    }
    // ORDER BY.
    let mut reversed = false;
    let mut merge_sort = false;
    if !s.order_by.is_empty() {
        if !partition_mode {
            return Err(invalid("ORDER BY is only supported when the partition key is restricted by an EQ or an IN."));
        }
        let clustering = table.clustering();
        let mut direction = None;
        for (i, (ident, order)) in s.order_by.iter().enumerate() {
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
        reversed = direction.unwrap_or(false);
        merge_sort = restrictions.partition_keys().is_some_and(|k| k.len() > 1);
    }
    let limit = match &s.limit {
        Some(v) => match eval_int(v, CqlType::Int, "[limit]", ctx)? {
            Some(n) if n > 0 => Some(n as u64),
            Some(n) => {
                return Err(invalid(format!(
                    "LIMIT must be strictly positive (got {n})"
                )))
            }
            None => return Err(invalid("Invalid null value of limit")),
        },
        None => None,
    };
    let per_partition_limit = match &s.per_partition_limit {
        Some(v) => match eval_int(v, CqlType::Int, "[per_partition_limit]", ctx)? {
            Some(n) if n > 0 => Some(n as u64),
            Some(n) => {
                return Err(invalid(format!(
                    "PER PARTITION LIMIT must be strictly positive (got {n})"
                )))
            }
            None => return Err(invalid("Invalid null value of per partition limit")),
        },
        None => None,
    };
    let schema = table.key_schema();
    Ok(Plan {
        table,
        schema,
        restrictions,
        columns,
        aggregate,
        distinct: s.distinct,
        reversed,
        merge_sort,
        limit,
        per_partition_limit,
        now_secs,
    })
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
    emitted: u64,
    partition_rows: u64,
    last_key: Option<Vec<u8>>,
    stop: bool,
    sort_keys: Vec<Vec<u8>>,
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
        // side), so they never discard a row the range reads.
        let filters = plan
            .restrictions
            .predicates
            .iter()
            .any(|p| !matches!(p, restrict::Predicate::Token { .. }));
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

/// A row as the handler sees it.
struct RowView<'a> {
    token: Token,
    partition_key: &'a [CqlValue],
    static_row: Option<&'a LiveRow>,
    /// `None` for a partition shown only by its static row.
    row: Option<&'a LiveRow>,
}

impl RowView<'_> {
    fn value(&self, table: &TableMeta, index: usize) -> Option<CqlValue> {
        let col = table.columns.get(index)?;
        match col.kind {
            ColumnKind::PartitionKey { position } => self.partition_key.get(position).cloned(),
            ColumnKind::Clustering { position, .. } => self.row?.clustering.get(position).cloned(),
            ColumnKind::Static => {
                let cell = self.static_row?.cells.get(&col.id)?;
                CqlValue::from_cql_bytes(col.ty, &cell.value).ok()
            }
            ColumnKind::Regular => {
                let cell = self.row?.cells.get(&col.id)?;
                CqlValue::from_cql_bytes(col.ty, &cell.value).ok()
            }
        }
    }

    fn cell(&self, table: &TableMeta, index: usize) -> Option<&mosaic_rows::LiveCell> {
        let col = table.columns.get(index)?;
        match col.kind {
            ColumnKind::Static => self.static_row?.cells.get(&col.id),
            ColumnKind::Regular => self.row?.cells.get(&col.id),
            _ => None,
        }
    }

    fn bytes(&self, table: &TableMeta, index: usize) -> Option<Bytes> {
        let col = table.columns.get(index)?;
        match col.kind {
            ColumnKind::Static | ColumnKind::Regular => self
                .cell(table, index)
                .map(|c| Bytes::copy_from_slice(&c.value)),
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
        if per_partition.is_some_and(|n| self.partition_rows >= n) {
            return Next::SkipPartition;
        }
        self.partition_rows += 1;
        if plan.aggregate {
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
                    Expr::CountRows | Expr::Aggregate(..) => None,
                })
                .collect();
            self.rows.push(out);
            if plan.merge_sort {
                let prefix_len = plan.schema.partition_prefix_len(key).unwrap_or(0);
                self.sort_keys
                    .push(key.get(prefix_len..).unwrap_or_default().to_vec());
            }
        }
        self.emitted += 1;
        self.limit_left = self.limit_left.saturating_sub(1);
        self.last_key = Some(key.to_vec());
        if self.limit_left == 0 {
            self.stop = true;
            return Next::Stop;
        }
        if self.page_size.is_some_and(|n| self.emitted >= n) {
            self.stop = true;
            return Next::Stop;
        }
        if plan.distinct
            || plan
                .per_partition_limit
                .is_some_and(|n| self.partition_rows >= n)
        {
            return Next::SkipPartition;
        }
        Next::Continue
    }
}

/// Aggregate accumulators, one per output column.
struct AggState {
    accs: Vec<Acc>,
    first_row: Option<Vec<Option<Bytes>>>,
}

#[derive(Clone, Debug)]
enum Acc {
    None,
    Count(i64),
    Int {
        sum: i128,
        count: i64,
    },
    Float {
        sum: f64,
        count: i64,
    },
    Big {
        sum: mosaic_types::Decimal,
        count: i64,
    },
    Extreme(Option<CqlValue>),
}

impl AggState {
    fn new(columns: &[OutColumn]) -> AggState {
        AggState {
            accs: columns
                .iter()
                .map(|c| match c.expr {
                    Expr::CountRows | Expr::Aggregate(Aggregate::Count, _) => Acc::Count(0),
                    Expr::Aggregate(Aggregate::Min | Aggregate::Max, _) => Acc::Extreme(None),
                    Expr::Aggregate(Aggregate::Sum | Aggregate::Avg, _) => match c.ty {
                        ColumnType::Native(CqlType::Float | CqlType::Double) => {
                            Acc::Float { sum: 0.0, count: 0 }
                        }
                        ColumnType::Native(CqlType::Varint | CqlType::Decimal) => Acc::Big {
                            sum: mosaic_types::Decimal::new(mosaic_types::Varint::zero(), 0),
                            count: 0,
                        },
                        _ => Acc::Int { sum: 0, count: 0 },
                    },
                    _ => Acc::None,
                })
                .collect(),
            first_row: None,
        }
    }

    fn add(&mut self, columns: &[OutColumn], table: &TableMeta, view: &RowView<'_>) {
        if self.first_row.is_none() {
            self.first_row = Some(
                columns
                    .iter()
                    .map(|c| match c.expr {
                        Expr::Column(i) => view.bytes(table, i),
                        _ => None,
                    })
                    .collect(),
            );
        }
        for (acc, c) in self.accs.iter_mut().zip(columns) {
            let value = match c.expr {
                Expr::Aggregate(_, i) => view.value(table, i),
                _ => None,
            };
            match (acc, &c.expr) {
                (Acc::Count(n), Expr::CountRows) => *n += 1,
                (Acc::Count(n), _) if value.is_some() => *n += 1,
                (Acc::Count(_), _) => {}
                (Acc::Int { sum, count }, _) => {
                    let n = match value {
                        Some(CqlValue::Int(n)) => i128::from(n),
                        Some(CqlValue::BigInt(n)) => i128::from(n),
                        Some(CqlValue::SmallInt(n)) => i128::from(n),
                        Some(CqlValue::TinyInt(n)) => i128::from(n),
                        _ => continue,
                    };
                    *sum += n;
                    *count += 1;
                }
                (Acc::Float { sum, count }, _) => {
                    let f = match value {
                        Some(CqlValue::Float(f)) => f64::from(f),
                        Some(CqlValue::Double(d)) => d,
                        _ => continue,
                    };
                    *sum += f;
                    *count += 1;
                }
                (Acc::Big { sum, count }, _) => {
                    let text = match value {
                        Some(CqlValue::Varint(v)) => v.to_string(),
                        Some(CqlValue::Decimal(d)) => d.to_string(),
                        _ => continue,
                    };
                    if let Some(next) = add_decimal_text(sum, &text) {
                        *sum = next;
                        *count += 1;
                    }
                }
                (Acc::Extreme(best), Expr::Aggregate(agg, _)) => {
                    let Some(v) = value else { continue };
                    let better = match best {
                        None => true,
                        Some(b) => {
                            let ord = restrict::cmp_values(&v, b);
                            if *agg == Aggregate::Min {
                                ord == Ordering::Less
                            } else {
                                ord == Ordering::Greater
                            }
                        }
                    };
                    if better {
                        *best = Some(v);
                    }
                }
                _ => {}
            }
        }
    }

    fn finish(&self, columns: &[OutColumn]) -> Vec<Option<Bytes>> {
        let first = self
            .first_row
            .clone()
            .unwrap_or_else(|| vec![None; columns.len()]);
        self.accs
            .iter()
            .zip(columns)
            .zip(first)
            .map(|((acc, c), first)| {
                let ty = match &c.ty {
                    ColumnType::Native(t) => *t,
                    _ => CqlType::Blob,
                };
                let avg = matches!(c.expr, Expr::Aggregate(Aggregate::Avg, _));
                let value = match acc {
                    Acc::None => return first,
                    Acc::Count(n) => CqlValue::BigInt(*n),
                    Acc::Int { sum, count } => {
                        let v = if avg {
                            if *count == 0 {
                                0
                            } else {
                                sum / i128::from(*count)
                            }
                        } else {
                            *sum
                        };
                        match ty {
                            CqlType::Int => CqlValue::Int(v as i32),
                            CqlType::SmallInt => CqlValue::SmallInt(v as i16),
                            CqlType::TinyInt => CqlValue::TinyInt(v as i8),
                            _ => CqlValue::BigInt(v as i64),
                        }
                    }
                    Acc::Float { sum, count } => {
                        let v = if avg {
                            if *count == 0 {
                                0.0
                            } else {
                                sum / *count as f64
                            }
                        } else {
                            *sum
                        };
                        if ty == CqlType::Float {
                            CqlValue::Float(v as f32)
                        } else {
                            CqlValue::Double(v)
                        }
                    }
                    Acc::Big { sum, count } => {
                        let v = if avg && *count > 0 {
                            divide_decimal(sum, *count).unwrap_or_else(|| sum.clone())
                        } else {
                            sum.clone()
                        };
                        if ty == CqlType::Varint {
                            let text = v.to_string();
                            let int_part = text.split('.').next().unwrap_or("0");
                            CqlValue::Varint(
                                int_part
                                    .parse()
                                    .unwrap_or_else(|_| mosaic_types::Varint::zero()),
                            )
                        } else {
                            CqlValue::Decimal(v)
                        }
                    }
                    Acc::Extreme(best) => {
                        return best.as_ref().map(|v| Bytes::from(v.to_cql_bytes()))
                    }
                };
                Some(Bytes::from(value.to_cql_bytes()))
            })
            .collect()
    }
}

/// `sum + text` for decimals, through their unscaled integer parts.
fn add_decimal_text(sum: &mosaic_types::Decimal, text: &str) -> Option<mosaic_types::Decimal> {
    let other: mosaic_types::Decimal = text.parse().ok()?;
    let (a, b) = (sum, &other);
    let scale = a.scale.max(b.scale);
    let scale_up = |v: i128, from: i32| -> Option<i128> {
        v.checked_mul(10i128.checked_pow((scale - from) as u32)?)
    };
    let av = scale_up(a.unscaled.to_i128()?, a.scale)?;
    let bv = scale_up(b.unscaled.to_i128()?, b.scale)?;
    Some(mosaic_types::Decimal::new(
        mosaic_types::Varint::from(av.checked_add(bv)?),
        scale,
    ))
}

fn divide_decimal(sum: &mosaic_types::Decimal, count: i64) -> Option<mosaic_types::Decimal> {
    let parts = sum;
    let v = parts.unscaled.to_i128()?;
    // Keep the sum's scale, as Cassandra's avg on decimals rounds to it.
    Some(mosaic_types::Decimal::new(
        mosaic_types::Varint::from(v / i128::from(count)),
        parts.scale,
    ))
}

/// The key just after `key` in byte order.
fn successor(key: &[u8]) -> Vec<u8> {
    let mut k = key.to_vec();
    k.push(0);
    k
}

/// Reads every entry of a key range.
async fn read_all<C: Coordinator>(
    coordinator: &C,
    exec: &Exec<'_>,
    table: &TableMeta,
    range: KeyRange,
) -> Result<Vec<(Vec<u8>, Vec<u8>)>, ErrorResponse> {
    let mut out = Vec::new();
    let mut start = range.start.clone();
    loop {
        let result = coordinator
            .read(
                ReadCommand {
                    table: table.id,
                    range: KeyRange {
                        start: start.clone(),
                        end: range.end.clone(),
                    },
                    limit: CHUNK_ENTRIES,
                },
                exec.params.consistency,
            )
            .await?;
        // The coordinator says when the range is done; an empty answer can only mean that.
        let exhausted = result.exhausted || result.entries.is_empty();
        if let Some((last, _)) = result.entries.last() {
            start = successor(last);
        }
        out.extend(result.entries);
        if exhausted {
            return Ok(out);
        }
    }
}

fn resolve_err(e: mosaic_rows::ResolveError) -> ErrorResponse {
    ErrorResponse::new(ErrorKind::Server, format!("Unreadable stored row: {e}"))
}

/// Reads one partition: its head, then its clustering ranges (after `after`, or before it
/// when reversed), handing live rows to the run.
async fn read_partition<C: Coordinator>(
    coordinator: &C,
    exec: &Exec<'_>,
    run: &mut Run<'_>,
    prefix: &PartitionPrefix,
    after: Option<&[u8]>,
) -> Result<Next, ErrorResponse> {
    let plan = run.plan;
    let schema = &plan.schema;
    let table = plan.table.as_ref();
    let slices =
        plan.restrictions.has_clustering() && plan.restrictions.clustering_problem(table).is_none();
    if after.is_none() && !plan.reversed && !slices {
        // The whole partition, head and rows, in one streamed range.
        let whole = schema.partition_range(prefix);
        return Ok(
            match scan(coordinator, exec, run, whole.start, whole.end).await? {
                Next::Stop => Next::Stop,
                _ => Next::Continue,
            },
        );
    }
    let head = read_all(
        coordinator,
        exec,
        table,
        schema.partition_head_range(prefix),
    )
    .await?;
    let mut resolver = PartitionResolver::new(schema, plan.now_secs);
    let mut partition_key: Option<Vec<CqlValue>> = None;
    for (k, v) in &head {
        resolver.push(k, v).map_err(resolve_err)?;
    }
    let static_row = resolver.static_row().cloned();
    let ranges: Vec<KeyRange> = if slices {
        plan.restrictions
            .clustering_bounds(schema)?
            .iter()
            .map(|(lo, hi)| {
                schema
                    .clustering_range(prefix, lo, hi)
                    .map_err(|e| invalid(format!("Invalid clustering bound: {e}")))
            })
            .collect::<Result<_, _>>()?
    } else {
        vec![schema.rows_range(prefix)]
    };
    if after.is_none() {
        run.partition_rows = 0;
    }
    let mut any_row = after.is_some();
    let token = prefix.token();
    if !plan.reversed {
        for range in ranges {
            let mut start = range.start.clone();
            if let Some(a) = after {
                let s = successor(a);
                if s > start {
                    start = s;
                }
            }
            loop {
                let r = KeyRange {
                    start: start.clone(),
                    end: range.end.clone(),
                };
                if r.is_empty() {
                    break;
                }
                let result = coordinator
                    .read(
                        ReadCommand {
                            table: table.id,
                            range: r,
                            limit: CHUNK_ENTRIES,
                        },
                        exec.params.consistency,
                    )
                    .await?;
                // The coordinator says when the range is done; an empty answer can only mean that.
                let exhausted = result.exhausted || result.entries.is_empty();
                for (k, v) in &result.entries {
                    start = successor(k);
                    let Some(row) = resolver.push(k, v).map_err(resolve_err)? else {
                        continue;
                    };
                    any_row = true;
                    let pk = partition_key.get_or_insert_with(|| decode_pk(schema, k));
                    let view = RowView {
                        token,
                        partition_key: pk,
                        static_row: static_row.as_ref(),
                        row: Some(&row),
                    };
                    match run.row(k, &view) {
                        Next::Continue => {}
                        Next::SkipPartition => return Ok(Next::Continue),
                        Next::Stop => return Ok(Next::Stop),
                    }
                }
                if exhausted {
                    break;
                }
            }
        }
    } else {
        let mut rows = Vec::new();
        for range in ranges {
            let mut range = range;
            if let Some(a) = after {
                if range.end.as_deref().is_none_or(|e| a < e) {
                    range.end = Some(a.to_vec());
                }
                if range.is_empty() {
                    continue;
                }
            }
            for (k, v) in read_all(coordinator, exec, table, range).await? {
                if let Some(row) = resolver.push(&k, &v).map_err(resolve_err)? {
                    rows.push((k, row));
                }
            }
        }
        for (k, row) in rows.iter().rev() {
            any_row = true;
            let pk = partition_key.get_or_insert_with(|| decode_pk(schema, k));
            let view = RowView {
                token,
                partition_key: pk,
                static_row: static_row.as_ref(),
                row: Some(row),
            };
            match run.row(k, &view) {
                Next::Continue => {}
                Next::SkipPartition => return Ok(Next::Continue),
                Next::Stop => return Ok(Next::Stop),
            }
        }
    }
    // A partition with only a live static row shows as one row of its static columns,
    // unless clustering columns are restricted.
    if !any_row && !plan.restrictions.has_clustering() {
        if let Some(st) = &static_row {
            let key = schema.static_key(prefix);
            let pk = partition_key.get_or_insert_with(|| decode_pk(schema, &key));
            let view = RowView {
                token,
                partition_key: pk,
                static_row: Some(st),
                row: None,
            };
            if run.row(&key, &view) == Next::Stop {
                return Ok(Next::Stop);
            }
        }
    }
    Ok(Next::Continue)
}

fn decode_pk(schema: &KeySchema, key: &[u8]) -> Vec<CqlValue> {
    schema
        .decode_key(key)
        .map(|d| d.partition_key)
        .unwrap_or_default()
}

fn prefix_of_key(schema: &KeySchema, key: &[u8]) -> Result<PartitionPrefix, ErrorResponse> {
    let decoded = schema.decode_key(key).map_err(|e| {
        ErrorResponse::new(ErrorKind::Server, format!("Unreadable stored key: {e}"))
    })?;
    schema
        .partition_prefix_with_token(decoded.token, &decoded.partition_key)
        .map_err(|e| ErrorResponse::new(ErrorKind::Server, format!("Unreadable stored key: {e}")))
}

/// The partition a range scan is in.
struct ScanPartition<'s> {
    prefix: Vec<u8>,
    token: Token,
    partition_key: Vec<CqlValue>,
    resolver: PartitionResolver<'s>,
    any_row: bool,
}

/// Shows a finished partition's static row if it had no live clustering row.
fn finish_partition(run: &mut Run<'_>, part: Option<ScanPartition<'_>>) -> Next {
    let Some(part) = part else {
        return Next::Continue;
    };
    if part.any_row || run.plan.restrictions.has_clustering() {
        return Next::Continue;
    }
    let Some(st) = part.resolver.static_row() else {
        return Next::Continue;
    };
    let mut key = part.prefix.clone();
    // The static key: the prefix and the static tag, as `KeySchema::static_key` builds it.
    if let Ok(prefix) = run
        .plan
        .schema
        .partition_prefix_with_token(part.token, &part.partition_key)
    {
        key = run.plan.schema.static_key(&prefix);
    }
    let view = RowView {
        token: part.token,
        partition_key: &part.partition_key,
        static_row: Some(st),
        row: None,
    };
    match run.row(&key, &view) {
        Next::Stop => Next::Stop,
        _ => Next::Continue,
    }
}

/// Scans `[start, end)` in key order, partition after partition, in chunks.
async fn scan<C: Coordinator>(
    coordinator: &C,
    exec: &Exec<'_>,
    run: &mut Run<'_>,
    mut start: Vec<u8>,
    end: Option<Vec<u8>>,
) -> Result<Next, ErrorResponse> {
    let plan = run.plan;
    let schema = &plan.schema;
    let mut current: Option<ScanPartition<'_>> = None;
    let mut round: u32 = 0;
    loop {
        let range = KeyRange {
            start: start.clone(),
            end: end.clone(),
        };
        if range.is_empty() {
            break;
        }
        let result = coordinator
            .read(
                ReadCommand {
                    table: plan.table.id,
                    range,
                    limit: run.chunk_entries(round),
                },
                exec.params.consistency,
            )
            .await?;
        round = round.saturating_add(1);
        // The coordinator says when the range is done; an empty answer can only mean that.
        let exhausted = result.exhausted || result.entries.is_empty();
        let mut jumped = false;
        for (k, v) in &result.entries {
            start = successor(k);
            let prefix_len = schema.partition_prefix_len(k).map_err(|e| {
                ErrorResponse::new(ErrorKind::Server, format!("Unreadable stored key: {e}"))
            })?;
            let prefix = k.get(..prefix_len).unwrap_or_default();
            if current.as_ref().is_none_or(|c| c.prefix != prefix) {
                if finish_partition(run, current.take()) == Next::Stop {
                    return Ok(Next::Stop);
                }
                let decoded = schema.decode_key(k).map_err(|e| {
                    ErrorResponse::new(ErrorKind::Server, format!("Unreadable stored key: {e}"))
                })?;
                run.partition_rows = 0;
                current = Some(ScanPartition {
                    prefix: prefix.to_vec(),
                    token: decoded.token,
                    partition_key: decoded.partition_key,
                    resolver: PartitionResolver::new(schema, plan.now_secs),
                    any_row: false,
                });
            }
            let Some(part) = current.as_mut() else {
                continue;
            };
            let Some(row) = part.resolver.push(k, v).map_err(resolve_err)? else {
                continue;
            };
            part.any_row = true;
            let view = RowView {
                token: part.token,
                partition_key: &part.partition_key,
                static_row: part.resolver.static_row(),
                row: Some(&row),
            };
            match run.row(k, &view) {
                Next::Continue => {}
                Next::Stop => return Ok(Next::Stop),
                Next::SkipPartition => {
                    // Jump past the rest of this partition.
                    let mut past = part.prefix.clone();
                    let full = prefix_of_key(schema, k)?;
                    if let Some(e) = schema.partition_range(&full).end {
                        past = e;
                    }
                    start = past;
                    jumped = true;
                    break;
                }
            }
        }
        if exhausted && !jumped {
            break;
        }
    }
    Ok(finish_partition(run, current.take()))
}

/// Reads what the plan selects, from `resume` on.
async fn read<C: Coordinator>(
    coordinator: &C,
    exec: &Exec<'_>,
    run: &mut Run<'_>,
    resume: Option<PagingState>,
) -> Result<(), ErrorResponse> {
    let plan = run.plan;
    let schema = &plan.schema;
    if let Some(r) = &resume {
        run.partition_rows = r.partition_rows;
    }
    if let Some(keys) = plan.restrictions.partition_keys() {
        let mut prefixes = keys
            .iter()
            .map(|k| {
                if k.iter().map(|v| v.to_cql_bytes().len()).sum::<usize>() == 0 {
                    return Err(invalid("Key may not be empty"));
                }
                schema
                    .partition_prefix(k)
                    .map_err(|e| invalid(format!("Invalid partition key: {e}")))
            })
            .collect::<Result<Vec<_>, _>>()?;
        prefixes.sort();
        prefixes.dedup();
        let resume_key = resume.as_ref().map(|r| r.last_key.as_slice());
        for prefix in &prefixes {
            let after = match resume_key {
                Some(key) if key.starts_with(prefix.as_bytes()) => Some(key),
                Some(key) if key < prefix.as_bytes() => None,
                Some(_) => continue,
                None => None,
            };
            if read_partition(coordinator, exec, run, prefix, after).await? == Next::Stop {
                return Ok(());
            }
        }
        run.stop = false;
        return Ok(());
    }
    // Range mode.
    let (lo, hi) = plan
        .restrictions
        .token
        .unwrap_or((Bound::Unbounded, Bound::Unbounded));
    let range = token_range(lo, hi);
    if range.is_empty() {
        return Ok(());
    }
    let mut start = range.start.clone();
    if let Some(r) = &resume {
        // Finish the partition the last page stopped in, then scan on from its end.
        let prefix = prefix_of_key(schema, &r.last_key)?;
        if read_partition(coordinator, exec, run, &prefix, Some(&r.last_key)).await? == Next::Stop {
            return Ok(());
        }
        let end = schema.partition_range(&prefix).end.unwrap_or_default();
        if end > start {
            start = end;
        }
    }
    if scan(coordinator, exec, run, start, range.end).await? == Next::Stop {
        return Ok(());
    }
    run.stop = false;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paging_state_round_trips_and_rejects_garbage() {
        let s = PagingState {
            last_key: vec![1, 2, 3],
            limit_left: 7,
            partition_rows: 2,
        };
        let b = s.encode();
        assert_eq!(PagingState::decode(&b).unwrap(), s);
        let mut bad = b.to_vec();
        bad[2] ^= 1;
        assert!(PagingState::decode(&bad).is_err());
        assert!(PagingState::decode(&[]).is_err());
        assert!(PagingState::decode(&[1, 2, 3]).is_err());
    }
}
