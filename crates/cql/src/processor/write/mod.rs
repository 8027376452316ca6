//! INSERT, UPDATE, DELETE and BATCH: statements to row-layer fragments, handed to the
//! coordinator as [`Mutation`]s.
//!
//! Cassandra's semantics, which the row layer's fragments carry: INSERT writes a row
//! marker (the row exists even if every other column is null), UPDATE does not (a row
//! made by UPDATE disappears when its cells are nulled); setting a column to null writes a
//! cell tombstone; an unset bound value leaves the column alone; DELETE writes cell
//! tombstones, a row deletion, a range tombstone or a partition deletion depending on how
//! much of the primary key it names. Every part of one statement carries the same write
//! timestamp: `USING TIMESTAMP`, else the batch's or the request's default timestamp,
//! else the coordinator's clock.

use std::cell::RefCell;

mod attributes;
mod batch;
mod cas;
mod collections;
mod counter;
mod delete;

use attributes::{write_timestamp, write_ttl};

pub(crate) use batch::{execute_batch, execute_batch_statement};
pub(crate) use cas::shape as condition_shape;
pub(crate) use counter::counter_table;

use mosaic_rows::{
    Cell, DeletionTime, Expiry, Fragment, FragmentKind, KeySchema, Liveness, PartitionPrefix,
};
use mosaic_types::{CqlType, CqlValue, DataType, Timestamp};

use crate::ast::{
    AssignOp, BatchKind, BatchStatement, InsertStatement, ModificationStatement, Statement,
    UpdateStatement, Using,
};
use crate::coordinator::{Coordinator, Mutation};
use crate::frame::{
    Batch, BatchType, BoundValues, Consistency, ErrorResponse, QueryParameters, ResultBody,
};
use crate::schema::{ColumnKind, ColumnMeta, TableMeta};

use super::collections::{assign, field_type, set_field, CellTime, ListOp, PriorRows};
use super::restrict::{self, ColumnRestriction, MultiRestriction, Restrictions};
use super::values::{eval, eval_int, Bindings, Eval, EvalContext};
use super::{invalid, Exec, Processor, StatementLimits};

/// The longest TTL Cassandra accepts: 20 years, in seconds.
pub(crate) const TTL_MAX: i32 = 630_720_000;

/// The time facts of one write.
#[derive(Clone, Copy, Debug)]
struct WriteTime {
    /// The default write timestamp (microseconds).
    ts: i64,
    /// Whether `ts` came from the client (batch-level); statement `USING TIMESTAMP` is then
    /// refused, as in Cassandra.
    ts_from_batch: bool,
    /// Local time, seconds.
    now_secs: i64,
    /// Local time, microseconds (for `now()`).
    now_micros: i64,
}

fn to_statement(m: ModificationStatement) -> Statement {
    match m {
        ModificationStatement::Insert(s) => Statement::Insert(s),
        ModificationStatement::Update(s) => Statement::Update(s),
        ModificationStatement::Delete(s) => Statement::Delete(s),
    }
}

/// Executes one INSERT, UPDATE or DELETE.
pub(crate) async fn execute_single<C: Coordinator>(
    p: &Processor<C>,
    exec: &Exec<'_>,
    statement: &Statement,
) -> Result<ResultBody, ErrorResponse> {
    let coordinator = p.coordinator();
    let catalog = coordinator.catalog();
    let bindings = Bindings::new(&exec.params.values, statement.bind_markers())?;
    let now_micros = coordinator.new_timestamp();
    let time = WriteTime {
        ts: exec.params.timestamp.unwrap_or(now_micros),
        ts_from_batch: false,
        now_secs: exec.now_secs(coordinator.now_secs()),
        now_micros,
    };
    let consistency = exec.params.consistency;
    if let Some(table) = counter::counter_table(&catalog, exec, statement)? {
        counter::check_consistency(&table, consistency)?;
        let mut writes = counter::CounterWrites::default();
        writes.add(&WriteSource {
            catalog: &catalog,
            exec,
            statement,
            bindings: &bindings,
            time,
        })?;
        return writes.apply(coordinator.as_ref(), consistency).await;
    }
    if statement.has_conditions() {
        let part = cas::part(statement.clone(), exec.keyspace, exec.params, bindings);
        return cas::execute(p, cas::input(vec![part], false, exec.params, time)).await;
    }
    if matches!(consistency, Consistency::Serial | Consistency::LocalSerial) {
        return Err(invalid(
            "You must use conditional updates for serializable writes",
        ));
    }
    let mutations = with_prior_reads(coordinator.as_ref(), consistency, time, |prior, out| {
        mutations_of(&catalog, exec, statement, &bindings, time, prior, out)
    })
    .await?;
    apply(coordinator.as_ref(), mutations, consistency).await
}

/// Builds a statement's (or batch's) mutations; when a list operation needs the list's
/// current elements, reads them at `consistency` and builds again.
async fn with_prior_reads<C: Coordinator>(
    coordinator: &C,
    consistency: Consistency,
    time: WriteTime,
    build: impl Fn(&RefCell<PriorRows>, &mut Vec<Mutation>) -> Result<(), ErrorResponse>,
) -> Result<Vec<Mutation>, ErrorResponse> {
    let prior = RefCell::new(PriorRows::default());
    let mut mutations = Vec::new();
    build(&prior, &mut mutations)?;
    if !prior.borrow().pending() {
        return Ok(mutations);
    }
    let mut rows = prior.take();
    rows.fetch(coordinator, consistency, time.now_secs).await?;
    let prior = RefCell::new(rows);
    let mut mutations = Vec::new();
    build(&prior, &mut mutations)?;
    Ok(mutations)
}

/// Hands a statement's (or batch's) mutations to the coordinator; nothing to write is a
/// success without a round trip (an UPDATE whose values are all unset).
async fn apply<C: Coordinator>(
    coordinator: &C,
    mutations: Vec<Mutation>,
    consistency: Consistency,
) -> Result<ResultBody, ErrorResponse> {
    if !mutations.is_empty() {
        check_indexed_sizes(coordinator, &mutations)?;
        coordinator.write(mutations, consistency).await?;
    }
    Ok(ResultBody::Void)
}

/// Refuses, as Cassandra does, mutations that give an index a value too large for it.
fn check_indexed_sizes<C: Coordinator>(
    coordinator: &C,
    mutations: &[Mutation],
) -> Result<(), ErrorResponse> {
    let catalog = coordinator.catalog();
    for m in mutations {
        let Some(table) = catalog
            .table_by_id(m.table)
            .filter(|t| !t.indexes.is_empty())
        else {
            continue;
        };
        let Ok(fragment) = mosaic_rows::Fragment::decode(&m.fragment) else {
            continue;
        };
        crate::index::check_term_sizes(table, &table.key_schema(), &m.key, &fragment)
            .map_err(invalid)?;
    }
    Ok(())
}

fn statement_kind(s: &Statement) -> &'static str {
    match s {
        Statement::Select(_) => "SELECT",
        Statement::Batch(_) => "BATCH",
        Statement::Use(_) => "USE",
        Statement::Truncate(_) => "TRUNCATE",
        _ => "a schema statement",
    }
}

/// The mutations of one modification statement.
fn mutations_of(
    catalog: &crate::schema::Catalog,
    exec: &Exec<'_>,
    statement: &Statement,
    bindings: &Bindings,
    time: WriteTime,
    prior: &RefCell<PriorRows>,
    out: &mut Vec<Mutation>,
) -> Result<(), ErrorResponse> {
    let source = WriteSource {
        catalog,
        exec,
        statement,
        bindings,
        time,
    };
    source.with_writer(prior, |w, ctx| match statement {
        Statement::Insert(s) => w.insert(s, ctx, out),
        Statement::Update(s) => w.update(s, ctx, out),
        Statement::Delete(s) => w.delete(s, ctx, out),
        _ => Ok(()),
    })
}

/// A modification statement with what it is run with.
struct WriteSource<'a> {
    catalog: &'a crate::schema::Catalog,
    exec: &'a Exec<'a>,
    statement: &'a Statement,
    bindings: &'a Bindings,
    time: WriteTime,
}

impl WriteSource<'_> {
    /// Runs `f` with the statement's [`Writer`] (its table, timestamp and TTL checked).
    fn with_writer<R>(
        &self,
        prior: &RefCell<PriorRows>,
        f: impl FnOnce(&Writer<'_>, &EvalContext<'_>) -> Result<R, ErrorResponse>,
    ) -> Result<R, ErrorResponse> {
        let WriteSource {
            catalog,
            exec,
            statement,
            bindings,
            time,
        } = *self;
        let ctx = EvalContext {
            bindings,
            now_micros: time.now_micros,
        };
        let (name, using) = match statement {
            Statement::Insert(s) => (&s.table, s.using.clone()),
            Statement::Update(s) => (&s.table, s.using.clone()),
            Statement::Delete(s) => (
                &s.table,
                Using {
                    ttl: None,
                    timestamp: s.timestamp.clone(),
                },
            ),
            _ => return Err(invalid("not a modification statement")),
        };
        let keyspace = exec.keyspace_of(name)?;
        if crate::system::is_system_keyspace(keyspace) {
            return Err(crate::frame::ErrorResponse::new(
                crate::frame::ErrorKind::Unauthorized,
                format!("{keyspace} keyspace is not user-modifiable."),
            ));
        }
        let table = exec.table(catalog, name)?;
        let ts = write_timestamp(&using, time, &ctx)?;
        let ttl = write_ttl(&using, &table, &ctx)?;
        let w = Writer {
            table: &table,
            schema: table.key_schema(),
            ts: Timestamp(ts),
            expiry: (ttl > 0).then(|| Expiry {
                ttl_secs: ttl as u32,
                local_expiration_secs: time.now_secs.saturating_add(i64::from(ttl)),
            }),
            now_secs: time.now_secs,
            now_micros: time.now_micros,
            prior,
            limits: exec.limits,
        };
        f(&w, &ctx)
    }
}

/// The names of the key columns not restricted by `=`/`IN`, comma-separated.
fn unrestricted(columns: &[&ColumnMeta], restrictions: &[Option<ColumnRestriction>]) -> String {
    columns
        .iter()
        .zip(restrictions)
        .filter(|(_, r)| !matches!(r, Some(ColumnRestriction::Values(_))))
        .map(|(c, _)| c.name.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

struct Writer<'a> {
    table: &'a TableMeta,
    schema: KeySchema,
    ts: Timestamp,
    expiry: Option<Expiry>,
    now_secs: i64,
    /// The coordinator's clock when the statement arrived (list element paths).
    now_micros: i64,
    /// Rows read before the write, for list operations.
    prior: &'a RefCell<PriorRows>,
    /// What the statement may cost.
    limits: StatementLimits,
}

impl Writer<'_> {
    fn cell_time(&self) -> CellTime {
        CellTime {
            ts: self.ts,
            expiry: self.expiry,
            now_secs: self.now_secs,
            now_micros: self.now_micros,
        }
    }

    fn cell(&self, value: Option<CqlValue>) -> Cell {
        match value {
            Some(v) => Cell::Live {
                ts: self.ts,
                value: v.to_cql_bytes(),
                expiry: self.expiry,
            },
            None => Cell::Tombstone {
                ts: self.ts,
                local_deletion_secs: self.now_secs,
            },
        }
    }

    fn tombstone(&self) -> Cell {
        self.cell(None)
    }

    fn deletion(&self) -> DeletionTime {
        DeletionTime {
            marked_for_delete_at: self.ts,
            local_deletion_secs: self.now_secs,
        }
    }

    fn prefix(&self, pk: &[CqlValue]) -> Result<PartitionPrefix, ErrorResponse> {
        let total: usize = pk.iter().map(|v| v.to_cql_bytes().len()).sum();
        if total == 0 {
            return Err(invalid("Key may not be empty"));
        }
        self.schema
            .partition_prefix(pk)
            .map_err(|e| invalid(format!("Invalid partition key: {e}")))
    }

    fn push(
        &self,
        out: &mut Vec<Mutation>,
        prefix: &PartitionPrefix,
        key: Vec<u8>,
        fragment: Fragment,
    ) {
        let ts = fragment.max_timestamp().unwrap_or(self.ts).to_engine();
        out.push(Mutation {
            table: self.table.id,
            token: prefix.token(),
            key,
            ts,
            fragment: fragment.encode(),
        });
    }

    fn row_key(
        &self,
        prefix: &PartitionPrefix,
        clustering: &[CqlValue],
    ) -> Result<Vec<u8>, ErrorResponse> {
        self.schema
            .row_key(prefix, clustering)
            .map_err(|e| invalid(format!("Invalid clustering key: {e}")))
    }

    fn insert(
        &self,
        s: &InsertStatement,
        ctx: &EvalContext<'_>,
        out: &mut Vec<Mutation>,
    ) -> Result<(), ErrorResponse> {
        let ck_len = self.table.clustering().len();
        let InsertedRow {
            pk,
            ck,
            mut regular,
            statics,
        } = self.inserted_row(s, ctx)?;
        let missing = missing_names(&self.table.partition_key(), &pk);
        if !missing.is_empty() {
            return Err(invalid(format!(
                "Some partition key parts are missing: {}",
                missing.join(", ")
            )));
        }
        let pk: Vec<CqlValue> = pk.into_iter().flatten().collect();
        let prefix = self.prefix(&pk)?;
        let missing_ck = missing_names(&self.table.clustering(), &ck);
        let holds = |f: &Fragment| !f.cells.is_empty() || !f.complex.is_empty();
        let only_static = !holds(&regular) && holds(&statics);
        if !missing_ck.is_empty() {
            if only_static && missing_ck.len() == ck_len {
                self.push(out, &prefix, self.schema.static_key(&prefix), statics);
                return Ok(());
            }
            return Err(invalid(format!(
                "Some clustering keys are missing: {}",
                missing_ck.join(", ")
            )));
        }
        let ck: Vec<CqlValue> = ck.into_iter().flatten().collect();
        regular.liveness = Some(Liveness {
            ts: self.ts,
            expiry: self.expiry,
        });
        if holds(&statics) {
            self.push(out, &prefix, self.schema.static_key(&prefix), statics);
        }
        let key = self.row_key(&prefix, &ck)?;
        self.push(out, &prefix, key, regular);
        Ok(())
    }

    /// The INSERT's values by column: key parts (null refused), and cells (a null is a
    /// tombstone, an unset value is left out) of the row and of the static row.
    fn inserted_row(
        &self,
        s: &InsertStatement,
        ctx: &EvalContext<'_>,
    ) -> Result<InsertedRow, ErrorResponse> {
        let mut row = InsertedRow {
            pk: vec![None; self.table.partition_key().len()],
            ck: vec![None; self.table.clustering().len()],
            regular: Fragment::new(FragmentKind::Row),
            statics: Fragment::new(FragmentKind::Static),
        };
        let values = match &s.json {
            Some(json) => super::json::insert_values(self.table, json, ctx)?,
            None => {
                let mut seen = std::collections::HashSet::new();
                let mut values = Vec::with_capacity(s.columns.len());
                for (ident, term) in s.columns.iter().zip(&s.values) {
                    let name = ident.as_str();
                    if !seen.insert(name) {
                        return Err(invalid(format!(
                            "Multiple definitions found for column {name}"
                        )));
                    }
                    let col = restrict::column(self.table, name)?;
                    values.push((name.to_owned(), eval(term, &col.ty, name, ctx)?));
                }
                values
            }
        };
        for (name, value) in values {
            let name = name.as_str();
            let col = restrict::column(self.table, name)?;
            let key_part = |slots: &mut Vec<Option<CqlValue>>, position: usize, value: Eval| {
                let v = value.required(name).map_err(|_| {
                    invalid(format!("Invalid null value in condition for column {name}"))
                })?;
                if let Some(slot) = slots.get_mut(position) {
                    *slot = Some(v);
                }
                Ok::<(), ErrorResponse>(())
            };
            match col.kind {
                ColumnKind::PartitionKey { position } => key_part(&mut row.pk, position, value)?,
                ColumnKind::Clustering { position, .. } => key_part(&mut row.ck, position, value)?,
                ColumnKind::Static | ColumnKind::Regular => {
                    let target = if col.kind == ColumnKind::Static {
                        &mut row.statics
                    } else {
                        &mut row.regular
                    };
                    if col.ty.is_multi_cell() {
                        let column = target.complex.entry(col.id).or_default();
                        assign(
                            column,
                            &col.ty,
                            name,
                            AssignOp::Set,
                            None,
                            value,
                            self.cell_time(),
                        )?;
                        if column.is_empty() {
                            target.complex.remove(&col.id);
                        }
                        continue;
                    }
                    match value {
                        Eval::Unset => {}
                        Eval::Null => {
                            target.cells.insert(col.id, self.tombstone());
                        }
                        Eval::Value(v) => {
                            target.cells.insert(col.id, self.cell(Some(v)));
                        }
                    }
                }
            }
        }
        Ok(row)
    }

    /// The partitions a WHERE clause of an UPDATE or DELETE names.
    fn partitions(&self, r: &Restrictions) -> Result<Vec<PartitionPrefix>, ErrorResponse> {
        if !r.on_regular.is_empty() {
            return Err(invalid(format!(
                "Non PRIMARY KEY columns found in where clause: {}",
                r.on_regular.join(", ")
            )));
        }
        if r.token.is_some() {
            return Err(invalid("The token function cannot be used in WHERE clauses for UPDATE and DELETE statements"));
        }
        let Some(keys) = r.partition_keys() else {
            return Err(invalid(format!(
                "Some partition key parts are missing: {}",
                unrestricted(&self.table.partition_key(), &r.partition)
            )));
        };
        keys.iter().map(|k| self.prefix(k)).collect()
    }

    /// Full clustering keys named by `=`/`IN`, if the WHERE clause names whole rows.
    fn full_rows(&self, r: &Restrictions) -> Option<Vec<Vec<CqlValue>>> {
        let n = r.clustering.len();
        if let Some((0, MultiRestriction::Values(tuples))) = &r.multi {
            if tuples.iter().all(|t| t.len() == n) && r.clustering.iter().all(Option::is_none) {
                return Some(tuples.clone());
            }
            return None;
        }
        if r.multi.is_some() {
            return None;
        }
        restrict::values_product(&r.clustering)
    }

    /// The rows an UPDATE names: whole rows only.
    fn updated_rows(&self, r: &Restrictions) -> Result<Vec<Vec<CqlValue>>, ErrorResponse> {
        if let Some(rows) = self.full_rows(r) {
            return Ok(rows);
        }
        if r.clustering
            .iter()
            .any(|c| matches!(c, Some(ColumnRestriction::Slice { .. })))
        {
            return Err(invalid("Slice restrictions are not supported on the clustering columns in UPDATE statements"));
        }
        Err(invalid(format!(
            "Some clustering keys are missing: {}",
            unrestricted(&self.table.clustering(), &r.clustering)
        )))
    }

    /// The column an UPDATE's `SET` names (never a primary key column).
    fn set_column(&self, name: &str) -> Result<&ColumnMeta, ErrorResponse> {
        let col = restrict::column(self.table, name)?;
        if col.kind.is_primary_key() {
            return Err(invalid(format!(
                "PRIMARY KEY part {name} found in SET part"
            )));
        }
        Ok(col)
    }

    fn update(
        &self,
        s: &UpdateStatement,
        ctx: &EvalContext<'_>,
        out: &mut Vec<Mutation>,
    ) -> Result<(), ErrorResponse> {
        let r = restrict::analyse(self.table, &s.where_clause, ctx, &self.limits)?;
        let partitions = self.partitions(&r)?;
        let mut regular = Fragment::new(FragmentKind::Row);
        let mut statics = Fragment::new(FragmentKind::Static);
        let mut list_ops = Vec::new();
        for a in &s.assignments {
            let name = a.column.as_str();
            let col = self.set_column(name)?;
            let target = if col.kind == ColumnKind::Static {
                &mut statics
            } else {
                &mut regular
            };
            if let Some(field) = &a.field {
                if !matches!(col.ty, DataType::Udt(_)) {
                    return Err(invalid(format!(
                        "Invalid operation ({a}) for frozen UDT column {name}"
                    )));
                }
                let field_ty = field_type(&col.ty, name, field.as_str())?;
                let value = eval(&a.value, &field_ty, name, ctx)?;
                let column = target.complex.entry(col.id).or_default();
                set_field(
                    column,
                    &col.ty,
                    name,
                    field.as_str(),
                    value,
                    self.cell_time(),
                )?;
                if column.is_empty() {
                    target.complex.remove(&col.id);
                }
                continue;
            }
            if let DataType::List(elem) = &col.ty {
                let op = match (&a.element, a.op) {
                    (Some(index), _) => Some(ListOp::Set {
                        index: list_index(index, name, ctx)?,
                        value: eval(&a.value, elem, &format!("value({name})"), ctx)?,
                    }),
                    (None, AssignOp::Remove) => match eval(&a.value, &col.ty, name, ctx)? {
                        Eval::Value(CqlValue::List(values)) => Some(ListOp::Remove(values)),
                        // Removing null (or nothing) changes nothing, as in Cassandra.
                        Eval::Unset | Eval::Null => continue,
                        Eval::Value(_) => {
                            return Err(invalid(format!("Invalid list value for {name}")))
                        }
                    },
                    _ => None,
                };
                if let Some(op) = op {
                    list_ops.push((col, col.kind == ColumnKind::Static, op));
                    continue;
                }
            }
            if col.ty.is_multi_cell() {
                self.assign_collection(target, col, a, ctx)?;
                continue;
            }
            if a.op == AssignOp::Prepend {
                // Cassandra's `Operation.Prepend`, which prints itself with '-' (sic).
                let shown = format!("{name} = {} - {name}", a.value);
                return Err(invalid(match col.ty.unfrozen() {
                    DataType::List(_) => {
                        format!("Invalid operation ({shown}) for frozen list column {name}")
                    }
                    _ => format!("Invalid operation ({shown}) for non list column {name}"),
                }));
            }
            if a.element.is_some() || a.op != AssignOp::Set {
                return Err(invalid(if col.ty.is_collection() {
                    format!("Invalid operation ({a}) for frozen collection column {name}")
                } else if matches!(col.ty, DataType::Tuple(_)) {
                    format!("Invalid operation ({a}) for tuple column {name}")
                } else if a.element.is_some() {
                    format!("Invalid operation ({a}) for non collection column {name}")
                } else {
                    format!("Invalid operation ({a}) for non counter column {name}")
                }));
            }
            let cell = match eval(&a.value, &col.ty, name, ctx)? {
                Eval::Unset => continue,
                Eval::Null => self.tombstone(),
                Eval::Value(v) => self.cell(Some(v)),
            };
            target.cells.insert(col.id, cell);
        }
        let is_empty = |f: &Fragment, is_static: bool| writes_nothing(f, &list_ops, is_static);
        let rows = if is_empty(&regular, false) && !is_empty(&statics, true) && !r.has_clustering()
        {
            Vec::new()
        } else {
            self.updated_rows(&r)?
        };
        let rows = if is_empty(&regular, false) {
            Vec::new()
        } else {
            rows
        };
        self.push_rows(&partitions, &rows, &statics, &regular, &list_ops, out)
    }

    /// Pushes the static row's and every named row's writes (each with its list
    /// operations applied) in every partition; nothing for what writes nothing.
    fn push_rows(
        &self,
        partitions: &[PartitionPrefix],
        rows: &[Vec<CqlValue>],
        statics: &Fragment,
        regular: &Fragment,
        list_ops: &[(&ColumnMeta, bool, ListOp)],
        out: &mut Vec<Mutation>,
    ) -> Result<(), ErrorResponse> {
        for prefix in partitions {
            if !writes_nothing(statics, list_ops, true) {
                let key = self.schema.static_key(prefix);
                let f = self.with_list_ops(statics.clone(), list_ops, prefix, &key, true)?;
                if !f.is_empty() {
                    self.push(out, prefix, key, f);
                }
            }
            for ck in rows {
                let key = self.row_key(prefix, ck)?;
                let f = self.with_list_ops(regular.clone(), list_ops, prefix, &key, false)?;
                if !f.is_empty() {
                    self.push(out, prefix, key, f);
                }
            }
        }
        Ok(())
    }
}

/// Whether a row's (or the static row's) writes are empty: no cell, no multi-cell column
/// and no list operation.
fn writes_nothing(f: &Fragment, list_ops: &[(&ColumnMeta, bool, ListOp)], is_static: bool) -> bool {
    f.cells.is_empty() && f.complex.is_empty() && !list_ops.iter().any(|o| o.1 == is_static)
}

/// An INSERT's values, sorted by the role of their column.
struct InsertedRow {
    pk: Vec<Option<CqlValue>>,
    ck: Vec<Option<CqlValue>>,
    regular: Fragment,
    statics: Fragment,
}

/// A list index (`l[i]`).
fn list_index(
    term: &crate::ast::Term,
    name: &str,
    ctx: &EvalContext<'_>,
) -> Result<i32, ErrorResponse> {
    match eval(term, &CqlType::Int.into(), &format!("idx({name})"), ctx)? {
        Eval::Value(CqlValue::Int(i)) => Ok(i),
        _ => Err(invalid(format!(
            "Invalid null value for list index of {name}"
        ))),
    }
}

/// The names of the key columns that got no value.
fn missing_names<'c>(
    columns: &[&'c crate::schema::ColumnMeta],
    values: &[Option<CqlValue>],
) -> Vec<&'c str> {
    columns
        .iter()
        .zip(values)
        .filter(|(_, v)| v.is_none())
        .map(|(c, _)| c.name.as_str())
        .collect()
}
