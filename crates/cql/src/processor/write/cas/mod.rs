//! Lightweight transactions: conditional INSERT, UPDATE, DELETE and BATCH as one
//! compare-and-set of one partition ([`Coordinator::cas`]), with Cassandra 4.1's rules
//! and results (`ModificationStatement.executeWithCondition`, `CQL3CasRequest`,
//! `BatchStatement.executeWithConditions`).
//!
//! Each statement is checked and analysed once ([`plan`]): the row its conditions apply to
//! (the static row for a static-only write), its checks, and a first build of its
//! mutations, which validates it and records the rows list operations read. The
//! coordinator then reads, under its Paxos promise, the partition's head (deletion, range
//! tombstones, static row) and every row a check or a list operation names — or, when
//! only the static row is checked, the partition's first rows, whose first live one the
//! result shows as Cassandra does — and hands them to [`CasWrite::decide`], which checks
//! every condition and builds the mutations again, at the round's timestamp, from the rows
//! read (list operations use them instead of a read of their own). The answer is a Rows
//! result whose first column is `[applied]` ([`result`]).
//!
//! Layout: `conditions` binds and evaluates `IF cond`s; `result` resolves what was read
//! and builds the answer; this module plans, checks and runs.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::Arc;

use mosaic_rows::{KeyEntry, KeyRange, KeySchema, LiveRow, PartitionPrefix};
use mosaic_types::{CqlValue, TableId};

use crate::ast::{Conditions, Relation, Statement};
use crate::coordinator::{CasDecision, CasRequest, Coordinator, Mutation, ReadCommand, ReadResult};
use crate::frame::{Consistency, ErrorResponse, QueryParameters, ResultBody};
use crate::processor::collections::PriorRows;
use crate::processor::restrict::{self, ColumnRestriction, MultiRestriction};
use crate::processor::values::{Bindings, EvalContext};
use crate::processor::{invalid, Exec, Processor, StatementLimits};
use crate::schema::{Catalog, ColumnKind, TableMeta};

use super::{mutations_of, WriteTime};

mod conditions;
mod result;

pub(crate) use conditions::shape;

/// How many entries past the partition's head a check of the static row alone reads to
/// find the partition's first live row (the result shows it, as Cassandra's does).
const FIRST_ROW_ENTRIES: usize = 128;

/// One statement of a conditional write with what it runs with.
pub(super) struct Part {
    /// An INSERT, UPDATE or DELETE.
    pub statement: Statement,
    /// The keyspace of its unqualified names.
    pub keyspace: Option<String>,
    /// Its parameters (values, consistency).
    pub params: QueryParameters,
    /// Its bound values.
    pub bindings: Bindings,
}

/// A conditional statement or batch, as it arrived.
pub(super) struct CasInput {
    /// The statements, in order.
    pub parts: Vec<Part>,
    /// A BATCH (its failure rows start with the primary key).
    pub is_batch: bool,
    /// The commit consistency level.
    pub consistency: Consistency,
    /// The Paxos consistency level (`None`: SERIAL).
    pub serial: Option<Consistency>,
    /// "Now", seconds.
    pub now_secs: i64,
    /// The coordinator's clock when the statement arrived, microseconds.
    pub now_micros: i64,
}

/// One statement of a conditional write. A batch's unconditional statements lose their
/// `USING TIMESTAMP`: everything a round commits is written at its ballot's timestamp, as
/// in Cassandra.
pub(super) fn part(
    mut statement: Statement,
    keyspace: Option<&str>,
    params: &QueryParameters,
    bindings: Bindings,
) -> Part {
    if conditions_of(&statement).is_none() {
        match &mut statement {
            Statement::Insert(s) => s.using.timestamp = None,
            Statement::Update(s) => s.using.timestamp = None,
            Statement::Delete(s) => s.timestamp = None,
            _ => {}
        }
    }
    Part {
        statement,
        keyspace: keyspace.map(str::to_owned),
        params: params.clone(),
        bindings,
    }
}

/// A conditional write of `parts` with the request's consistency levels.
pub(super) fn input(
    parts: Vec<Part>,
    is_batch: bool,
    params: &QueryParameters,
    time: WriteTime,
) -> CasInput {
    CasInput {
        parts,
        is_batch,
        consistency: params.consistency,
        serial: params.serial_consistency,
        now_secs: time.now_secs,
        now_micros: time.now_micros,
    }
}

/// The row a check applies to.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Target {
    /// The static row.
    Static,
    /// A clustering row, by engine key.
    Row(Vec<u8>),
}

/// What is checked of one row.
#[derive(Clone, Debug)]
enum Check {
    Exists,
    NotExists,
    Conditions(Vec<conditions::Bound>),
}

/// One read of the compare-and-set, in the order of [`CasRequest::reads`].
#[derive(Clone, Debug)]
enum Read {
    /// The partition's head.
    Head,
    /// One row, by engine key.
    Row(Vec<u8>),
    /// The first entries past the head (the first live row).
    First,
}

/// The analysed compare-and-set.
struct Plan {
    table: Arc<TableMeta>,
    schema: KeySchema,
    prefix: PartitionPrefix,
    partition_key: Vec<CqlValue>,
    /// The checks, at most one per row (a batch's merged).
    checks: Vec<(Target, Check)>,
    reads: Vec<Read>,
    /// The rows list operations read (engine key, static).
    list_rows: Vec<(Vec<u8>, bool)>,
    /// The columns the conditions name (table indexes), regular ones of each statement
    /// before its static ones; `None` with an `IF [NOT] EXISTS` (the failure shows every
    /// column).
    shown: Option<Vec<usize>>,
    updates_static: bool,
    updates_regular: bool,
    is_batch: bool,
}

/// Runs a conditional statement or batch.
pub(super) async fn execute<C: Coordinator>(
    p: &Processor<C>,
    input: CasInput,
) -> Result<ResultBody, ErrorResponse> {
    let coordinator = p.coordinator();
    let catalog = coordinator.catalog();
    let plan = plan(&catalog, &input, p.limits())?;
    let serial = input.serial.unwrap_or(Consistency::Serial);
    let request = CasRequest {
        table: plan.table.id,
        token: plan.prefix.token(),
        partition: plan.prefix.as_bytes().to_vec(),
        reads: plan
            .reads
            .iter()
            .map(|read| read_command(&plan, read))
            .collect(),
    };
    let plan = Arc::new(plan);
    let decision = Arc::new(CasWrite {
        catalog,
        plan: plan.clone(),
        parts: input.parts,
        now_secs: input.now_secs,
        now_micros: input.now_micros,
        limits: *p.limits(),
    });
    let outcome = coordinator
        .cas(request, decision, serial, input.consistency)
        .await?;
    result::rows(&plan, outcome.applied, &outcome.current, input.now_secs)
}

/// Refuses consistency levels Cassandra refuses for a conditional write.
fn check_consistency(input: &CasInput) -> Result<(), ErrorResponse> {
    if matches!(
        input.consistency,
        Consistency::Serial | Consistency::LocalSerial
    ) {
        return Err(invalid(format!(
            "{} is not supported as conditional update commit consistency. Use ANY if you mean \"make sure it is accepted but I don't care how many replicas commit it for non-SERIAL reads\"",
            input.consistency
        )));
    }
    match input.serial {
        None | Some(Consistency::Serial | Consistency::LocalSerial) => Ok(()),
        Some(_) => Err(invalid(
            "Invalid consistency for conditional update. Must be one of SERIAL or LOCAL_SERIAL",
        )),
    }
}

/// One statement, analysed.
struct Analysed {
    table: Arc<TableMeta>,
    prefix: PartitionPrefix,
    partition_key: Vec<CqlValue>,
    checks: Vec<(Target, Check)>,
    shown: Vec<usize>,
    exists: bool,
    updates_static: bool,
    updates_regular: bool,
    list_rows: Vec<(Vec<u8>, bool)>,
}

/// Checks every statement and plans the compare-and-set.
fn plan(
    catalog: &Catalog,
    input: &CasInput,
    limits: &StatementLimits,
) -> Result<Plan, ErrorResponse> {
    // What Cassandra refuses when it prepares: custom timestamps, conditions on key
    // columns or unknown ones, conditional deletions of non-static data without the full
    // key, a batch over several tables.
    let mut tables: Vec<Arc<TableMeta>> = Vec::with_capacity(input.parts.len());
    for part in &input.parts {
        let exec = Exec {
            keyspace: part.keyspace.as_deref(),
            params: &part.params,
            limits: *limits,
        };
        let table = prepare_checks(catalog, &exec, &part.statement)?;
        if tables.first().is_some_and(|t| t.id != table.id) {
            return Err(invalid("Batch with conditions cannot span multiple tables"));
        }
        tables.push(table);
    }
    check_consistency(input)?;
    let mut analysed = Vec::with_capacity(input.parts.len());
    for (part, table) in input.parts.iter().zip(tables) {
        analysed.push(analyse(catalog, input, part, table, limits)?);
    }
    let Some(first) = analysed.first() else {
        return Err(invalid("A conditional batch needs at least one statement"));
    };
    if analysed.iter().any(|a| a.prefix != first.prefix) {
        return Err(invalid(
            "Batch with conditions cannot span multiple partitions",
        ));
    }
    let table = first.table.clone();
    let prefix = first.prefix.clone();
    let partition_key = first.partition_key.clone();
    let mut checks: Vec<(Target, Check)> = Vec::new();
    let mut shown = Vec::new();
    let mut exists = false;
    let (mut updates_static, mut updates_regular) = (false, false);
    let mut list_rows: Vec<(Vec<u8>, bool)> = Vec::new();
    for a in analysed {
        for (target, check) in a.checks {
            merge_check(&mut checks, target, check)?;
        }
        for column in a.shown {
            if !shown.contains(&column) {
                shown.push(column);
            }
        }
        exists |= a.exists;
        updates_static |= a.updates_static;
        updates_regular |= a.updates_regular;
        for row in a.list_rows {
            if !list_rows.contains(&row) {
                list_rows.push(row);
            }
        }
    }
    let mut row_keys: Vec<Vec<u8>> = checks
        .iter()
        .filter_map(|(t, _)| match t {
            Target::Row(key) => Some(key.clone()),
            Target::Static => None,
        })
        .collect();
    let mut reads = vec![Read::Head];
    if row_keys.is_empty() {
        reads.push(Read::First);
    }
    row_keys.extend(
        list_rows
            .iter()
            .filter(|(_, is_static)| !is_static)
            .map(|(key, _)| key.clone()),
    );
    row_keys.sort();
    row_keys.dedup();
    reads.extend(row_keys.into_iter().map(Read::Row));
    Ok(Plan {
        schema: table.key_schema(),
        table,
        prefix,
        partition_key,
        checks,
        reads,
        list_rows,
        shown: (!exists).then_some(shown),
        updates_static,
        updates_regular,
        is_batch: input.is_batch,
    })
}

/// Adds a statement's check of one row to the batch's, as `CQL3CasRequest` merges them.
fn merge_check(
    checks: &mut Vec<(Target, Check)>,
    target: Target,
    check: Check,
) -> Result<(), ErrorResponse> {
    let Some((_, previous)) = checks.iter_mut().find(|(t, _)| *t == target) else {
        checks.push((target, check));
        return Ok(());
    };
    match (previous, check) {
        (Check::Exists, Check::Exists) | (Check::NotExists, Check::NotExists) => Ok(()),
        (Check::Conditions(all), Check::Conditions(more)) => {
            all.extend(more);
            Ok(())
        }
        (Check::Conditions(_), Check::Exists) | (Check::Exists, Check::Conditions(_)) => Err(
            invalid("Cannot mix IF conditions and IF EXISTS for the same row"),
        ),
        (Check::Conditions(_), Check::NotExists) | (Check::NotExists, Check::Conditions(_)) => Err(
            invalid("Cannot mix IF conditions and IF NOT EXISTS for the same row"),
        ),
        (Check::Exists, Check::NotExists) | (Check::NotExists, Check::Exists) => Err(invalid(
            "Cannot mix IF EXISTS and IF NOT EXISTS conditions for the same row",
        )),
    }
}

/// The statement's `IF`, or `None` (a batch's unconditional statement).
fn conditions_of(statement: &Statement) -> Option<&Conditions> {
    match statement {
        Statement::Insert(s) => s.conditions.as_ref(),
        Statement::Update(s) => s.conditions.as_ref(),
        Statement::Delete(s) => s.conditions.as_ref(),
        _ => None,
    }
}

/// What Cassandra checks when it prepares a conditional statement; returns its table.
fn prepare_checks(
    catalog: &Catalog,
    exec: &Exec<'_>,
    statement: &Statement,
) -> Result<Arc<TableMeta>, ErrorResponse> {
    let (name, timestamp_set) = match statement {
        Statement::Insert(s) => (&s.table, s.using.timestamp.is_some()),
        Statement::Update(s) => (&s.table, s.using.timestamp.is_some()),
        Statement::Delete(s) => (&s.table, s.timestamp.is_some()),
        _ => return Err(invalid("not a modification statement")),
    };
    let conditions = conditions_of(statement);
    if timestamp_set && conditions.is_some() {
        return Err(invalid(
            "Cannot provide custom timestamp for conditional updates",
        ));
    }
    let table = exec.table(catalog, name)?;
    let mut regular_condition = false;
    if let Some(Conditions::Columns(all)) = conditions {
        for c in all {
            regular_condition |= shape(&table, c)?.column.kind == ColumnKind::Regular;
        }
    }
    if let (Statement::Delete(s), Some(_)) = (statement, conditions) {
        let all_key_equal = s.where_clause.iter().all(|r| match r {
            Relation::Compare { op, .. } => *op == crate::ast::Operator::Eq,
            Relation::In { .. } => true,
            _ => false,
        }) && table.columns.iter().all(|c| {
            !c.kind.is_primary_key()
                || s.where_clause.iter().any(|r| match r {
                    Relation::Compare { column, .. } | Relation::In { column, .. } => {
                        column.as_str() == c.name
                    }
                    _ => false,
                })
        });
        if !all_key_equal {
            let deletes_regular = s.columns.is_empty()
                || s.columns.iter().any(|d| {
                    table
                        .column(d.column.as_str())
                        .is_some_and(|c| c.kind != ColumnKind::Static)
                });
            if deletes_regular {
                return Err(invalid("DELETE statements must restrict all PRIMARY KEY columns with equality relations in order to delete non static columns"));
            }
            if regular_condition {
                return Err(invalid("DELETE statements must restrict all PRIMARY KEY columns with equality relations in order to use IF condition on non static columns"));
            }
        }
    }
    Ok(table)
}

/// Analyses one statement: its partition, the row it applies to, its checks, and a first
/// build of its mutations (which validates it and records the rows list operations read).
fn analyse(
    catalog: &Catalog,
    input: &CasInput,
    part: &Part,
    table: Arc<TableMeta>,
    limits: &StatementLimits,
) -> Result<Analysed, ErrorResponse> {
    let statement = &part.statement;
    let exec = Exec {
        keyspace: part.keyspace.as_deref(),
        params: &part.params,
        limits: *limits,
    };
    let ctx = EvalContext {
        bindings: &part.bindings,
        now_micros: input.now_micros,
    };
    let is_update = matches!(statement, Statement::Update(_) | Statement::Insert(_));
    let what = if is_update { "updates" } else { "deletions" };
    let where_clause = match statement {
        Statement::Update(s) => s.where_clause.as_slice(),
        Statement::Delete(s) => s.where_clause.as_slice(),
        _ => &[],
    };
    for relation in where_clause {
        let (column, multi) = match relation {
            Relation::In { column, .. } => (Some(column.as_str()), false),
            Relation::MultiColumnIn { .. } => (None, true),
            _ => continue,
        };
        let kind = column.and_then(|c| table.column(c)).map(|c| c.kind);
        if matches!(kind, Some(ColumnKind::PartitionKey { .. })) {
            return Err(invalid(format!(
                "IN on the partition key is not supported with conditional {what}"
            )));
        }
        if multi || matches!(kind, Some(ColumnKind::Clustering { .. })) {
            return Err(invalid(format!(
                "IN on the clustering key columns is not supported with conditional {what}"
            )));
        }
    }
    let time = WriteTime {
        ts: input.now_micros,
        ts_from_batch: false,
        now_secs: input.now_secs,
        now_micros: input.now_micros,
    };
    let prior = RefCell::new(PriorRows::default());
    let mut mutations = Vec::new();
    mutations_of(
        catalog,
        &exec,
        statement,
        &part.bindings,
        time,
        &prior,
        &mut mutations,
    )?;
    let schema = table.key_schema();
    let (partition_key, target) = match statement {
        Statement::Insert(_) => inserted_target(&schema, &mutations)?,
        _ => written_target(&table, &schema, where_clause, &ctx, limits)?,
    };
    let prefix = schema
        .partition_prefix(&partition_key)
        .map_err(|e| invalid(format!("Invalid partition key: {e}")))?;
    let target = match target {
        Some(clustering) => {
            let key = schema
                .row_key(&prefix, &clustering)
                .map_err(|e| invalid(format!("Invalid clustering key: {e}")))?;
            Target::Row(key)
        }
        None => Target::Static,
    };
    let mut a = Analysed {
        updates_static: updates_static(&table, statement, &schema, &mutations),
        updates_regular: target != Target::Static,
        table: table.clone(),
        prefix,
        partition_key,
        checks: Vec::new(),
        shown: Vec::new(),
        exists: false,
        list_rows: prior.borrow().needed_rows(),
    };
    match conditions_of(statement) {
        None => {}
        Some(Conditions::Exists) => {
            a.exists = true;
            a.checks.push((target, Check::Exists));
        }
        Some(Conditions::NotExists) => {
            a.exists = true;
            a.checks.push((target, Check::NotExists));
        }
        Some(Conditions::Columns(all)) => {
            let mut regular = Vec::new();
            let mut statics = Vec::new();
            for c in all {
                let bound = conditions::bind(&table, c, &ctx)?;
                if bound.is_static {
                    statics.push(bound);
                } else {
                    regular.push(bound);
                }
            }
            if !regular.is_empty() && target == Target::Static {
                let missing: Vec<&str> =
                    table.clustering().iter().map(|c| c.name.as_str()).collect();
                return Err(invalid(format!(
                    "Some clustering keys are missing: {}",
                    missing.join(", ")
                )));
            }
            for bound in regular.iter().chain(&statics) {
                if !a.shown.contains(&bound.column) {
                    a.shown.push(bound.column);
                }
            }
            if !regular.is_empty() {
                a.checks.push((target, Check::Conditions(regular)));
            }
            if !statics.is_empty() {
                a.checks.push((Target::Static, Check::Conditions(statics)));
            }
        }
    }
    Ok(a)
}

/// An INSERT's partition key and clustering (`None`: a static-only insert), from the
/// mutations it builds.
fn inserted_target(
    schema: &KeySchema,
    mutations: &[Mutation],
) -> Result<(Vec<CqlValue>, Option<Vec<CqlValue>>), ErrorResponse> {
    let mut found = None;
    for m in mutations {
        let decoded = schema
            .decode_key(&m.key)
            .map_err(|e| invalid(format!("Invalid key: {e}")))?;
        match decoded.entry {
            KeyEntry::Row(clustering) => return Ok((decoded.partition_key, Some(clustering))),
            _ => found = Some(decoded.partition_key),
        }
    }
    found
        .map(|pk| (pk, None))
        .ok_or_else(|| invalid("Some partition key parts are missing"))
}

/// An UPDATE's or DELETE's partition key and clustering (`None`: the statement names no
/// clustering, so it writes the static row or the whole partition).
fn written_target(
    table: &TableMeta,
    schema: &KeySchema,
    where_clause: &[Relation],
    ctx: &EvalContext<'_>,
    limits: &StatementLimits,
) -> Result<(Vec<CqlValue>, Option<Vec<CqlValue>>), ErrorResponse> {
    let r = restrict::analyse(table, where_clause, ctx, limits)?;
    let partition_key = r
        .partition_keys()
        .and_then(|mut keys| keys.pop())
        .ok_or_else(|| invalid("Some partition key parts are missing"))?;
    if schema.clustering_columns().is_empty() {
        return Ok((partition_key, Some(Vec::new())));
    }
    if let Some((0, MultiRestriction::Values(tuples))) = &r.multi {
        if let [tuple] = tuples.as_slice() {
            if tuple.len() == table.clustering().len() {
                return Ok((partition_key, Some(tuple.clone())));
            }
        }
    }
    let mut clustering = Vec::with_capacity(r.clustering.len());
    for c in &r.clustering {
        match c {
            Some(ColumnRestriction::Values(values)) if values.len() == 1 => {
                clustering.extend(values.iter().cloned())
            }
            _ => return Ok((partition_key, None)),
        }
    }
    Ok((partition_key, Some(clustering)))
}

/// Whether a statement writes static columns (Cassandra's `updatesStaticRow`).
fn updates_static(
    table: &TableMeta,
    statement: &Statement,
    schema: &KeySchema,
    mutations: &[Mutation],
) -> bool {
    let is_static = |name: &str| {
        table
            .column(name)
            .is_some_and(|c| c.kind == ColumnKind::Static)
    };
    match statement {
        Statement::Insert(s) if s.json.is_none() => s.columns.iter().any(|c| is_static(c.as_str())),
        Statement::Update(s) => s.assignments.iter().any(|a| is_static(a.column.as_str())),
        Statement::Delete(s) => s.columns.iter().any(|d| is_static(d.column.as_str())),
        _ => mutations.iter().any(|m| {
            schema
                .decode_key(&m.key)
                .is_ok_and(|d| d.entry == KeyEntry::Static)
        }),
    }
}

/// The read command of one of the plan's reads.
fn read_command(plan: &Plan, read: &Read) -> ReadCommand {
    let (range, limit) = match read {
        Read::Head => (plan.schema.partition_head_range(&plan.prefix), usize::MAX),
        Read::First => (plan.schema.rows_range(&plan.prefix), FIRST_ROW_ENTRIES),
        Read::Row(key) => {
            let mut end = key.clone();
            end.push(0);
            (
                KeyRange {
                    start: key.clone(),
                    end: Some(end),
                },
                usize::MAX,
            )
        }
    };
    ReadCommand {
        table: plan.table.id,
        range,
        limit,
        filter: None,
        index: None,
    }
}

/// The decision handed to the coordinator: checks the conditions against what the round
/// read and builds the statements' mutations at the round's timestamp.
struct CasWrite {
    catalog: Arc<Catalog>,
    plan: Arc<Plan>,
    parts: Vec<Part>,
    now_secs: i64,
    now_micros: i64,
    limits: StatementLimits,
}

impl CasDecision for CasWrite {
    fn decide(
        &self,
        current: &[ReadResult],
        timestamp: i64,
    ) -> Result<Option<Vec<Mutation>>, ErrorResponse> {
        let plan = self.plan.as_ref();
        let read = result::resolve(plan, current, self.now_secs)?;
        if !plan
            .checks
            .iter()
            .all(|(target, check)| result::check_holds(plan, &read, target, check))
        {
            return Ok(None);
        }
        let mut rows: HashMap<(TableId, Vec<u8>), Option<LiveRow>> = HashMap::new();
        for (key, is_static) in &plan.list_rows {
            let row = if *is_static {
                read.static_row.clone()
            } else {
                read.rows.get(key).cloned()
            };
            rows.insert((plan.table.id, key.clone()), row);
        }
        let prior = RefCell::new(PriorRows::with_rows(rows));
        let time = WriteTime {
            ts: timestamp,
            ts_from_batch: false,
            now_secs: self.now_secs,
            now_micros: self.now_micros,
        };
        let mut mutations = Vec::new();
        for part in &self.parts {
            let exec = Exec {
                keyspace: part.keyspace.as_deref(),
                params: &part.params,
                limits: self.limits,
            };
            mutations_of(
                &self.catalog,
                &exec,
                &part.statement,
                &part.bindings,
                time,
                &prior,
                &mut mutations,
            )?;
        }
        Ok(Some(mutations))
    }
}
