//! Statements on counter tables, as Apache Cassandra 4.1 runs them.
//!
//! A counter table's UPDATE (`SET c = c + n`, `c = c - n`, `c += n`, `c -= n`) becomes
//! [`CounterIncrement`]s handed to [`Coordinator::counter_write`], which has one replica
//! lead each increment (`mosaic_rows::counter`); its DELETE is an ordinary deletion
//! (tombstones). Everything else Cassandra refuses on counter tables is refused here with
//! its words: INSERT, setting a counter, `USING TIMESTAMP` / `USING TTL`, conditions,
//! consistency `ANY` and the serial levels, and batches that mix counter and other
//! statements or put counters in a logged batch.

use std::collections::BTreeMap;
use std::sync::Arc;

use mosaic_rows::ColumnId;
use mosaic_types::{CqlType, CqlValue};

use crate::ast::{AssignOp, Conditions, Literal, Statement, Term, UpdateStatement};
use crate::coordinator::{Coordinator, CounterIncrement, Mutation};
use crate::frame::{BatchType, Consistency, ErrorResponse, ResultBody};
use crate::schema::{Catalog, ColumnKind, TableMeta};

use super::super::restrict;
use super::super::values::{eval, Eval, EvalContext};
use super::{invalid, Exec, WriteSource, Writer};

/// The table `statement` (an INSERT, UPDATE or DELETE) writes when it is a counter table,
/// after checking the statement against Cassandra's rules for counter tables. `None` for
/// any other table (and for one that does not exist: the write reports that).
pub(crate) fn counter_table(
    catalog: &Catalog,
    exec: &Exec<'_>,
    statement: &Statement,
) -> Result<Option<Arc<TableMeta>>, ErrorResponse> {
    let name = match statement {
        Statement::Insert(s) => &s.table,
        Statement::Update(s) => &s.table,
        Statement::Delete(s) => &s.table,
        _ => return Ok(None),
    };
    let Ok(table) = exec.table(catalog, name) else {
        return Ok(None);
    };
    if !table.counter {
        return Ok(None);
    }
    check(&table, statement)?;
    Ok(Some(table))
}

/// What Cassandra refuses in a statement on a counter table, in the order it checks.
fn check(table: &TableMeta, statement: &Statement) -> Result<(), ErrorResponse> {
    let conditions = match statement {
        Statement::Update(s) => s.conditions.as_ref(),
        Statement::Delete(s) => s.conditions.as_ref(),
        Statement::Insert(s) => s.conditions.as_ref(),
        _ => None,
    };
    if let Some(Conditions::Columns(all)) = conditions {
        let on_counter = all.iter().any(|c| {
            table
                .column(c.column.as_str())
                .is_some_and(|col| table.is_counter_column(col))
        });
        if on_counter {
            return Err(invalid("Conditions on counters are not supported"));
        }
    }
    if conditions.is_some() {
        return Err(invalid(
            "Conditional updates are not supported on counter tables",
        ));
    }
    let (timestamp, ttl) = match statement {
        Statement::Insert(_) => {
            return Err(invalid(
                "INSERT statements are not allowed on counter tables, use UPDATE instead",
            ))
        }
        Statement::Update(s) => {
            for a in &s.assignments {
                let name = a.column.as_str();
                let is_counter = table
                    .column(name)
                    .is_some_and(|col| table.is_counter_column(col));
                if is_counter && a.op == AssignOp::Set && a.element.is_none() && a.field.is_none() {
                    return Err(invalid(format!(
                        "Cannot set the value of counter column {name} (counters can only be incremented/decremented, not set)"
                    )));
                }
            }
            (s.using.timestamp.is_some(), s.using.ttl.is_some())
        }
        Statement::Delete(s) => (s.timestamp.is_some(), false),
        _ => (false, false),
    };
    if timestamp {
        return Err(invalid(
            "Cannot provide custom timestamp for counter updates",
        ));
    }
    if ttl {
        return Err(invalid("Cannot provide custom TTL for counter updates"));
    }
    Ok(())
}

/// Refuses the consistency levels Cassandra refuses for a write of a counter table.
pub(super) fn check_consistency(
    table: &TableMeta,
    consistency: Consistency,
) -> Result<(), ErrorResponse> {
    match consistency {
        Consistency::Any => Err(invalid(format!(
            "Consistency level ANY is not yet supported for counter table {}",
            table.name
        ))),
        Consistency::Serial | Consistency::LocalSerial => Err(invalid(
            "Counter operations are inherently non-serializable",
        )),
        _ => Ok(()),
    }
}

/// Checks a batch of `kind` (with a `USING TIMESTAMP` of its own when `timestamp_set`)
/// whose statements write counter tables where `counters` says so, as Cassandra's
/// `BatchStatement` does; whether it holds counter statements.
pub(super) fn check_batch(
    kind: BatchType,
    timestamp_set: bool,
    counters: impl IntoIterator<Item = bool>,
) -> Result<bool, ErrorResponse> {
    if kind == BatchType::Counter && timestamp_set {
        return Err(invalid("Cannot provide custom timestamp for counter BATCH"));
    }
    let (mut has_counters, mut has_others) = (false, false);
    for counter in counters {
        if timestamp_set && counter {
            return Err(invalid(
                "Cannot provide custom timestamp for a BATCH containing counters",
            ));
        }
        if kind == BatchType::Counter && !counter {
            return Err(invalid(
                "Cannot include non-counter statement in a counter batch",
            ));
        }
        if kind == BatchType::Logged && counter {
            return Err(invalid(
                "Cannot include a counter statement in a logged batch",
            ));
        }
        has_counters |= counter;
        has_others |= !counter;
    }
    if has_counters && has_others {
        return Err(invalid(
            "Counter and non-counter mutations cannot exist in the same batch",
        ));
    }
    Ok(has_counters)
}

/// The writes of statements on counter tables: the increments of their UPDATEs and the
/// deletions of their DELETEs.
#[derive(Default)]
pub(super) struct CounterWrites {
    pub(super) mutations: Vec<Mutation>,
    pub(super) increments: Vec<CounterIncrement>,
}

impl CounterWrites {
    /// Adds the writes of one statement (an UPDATE or a DELETE of a counter table).
    pub(super) fn add(&mut self, source: &WriteSource<'_>) -> Result<(), ErrorResponse> {
        let prior = Default::default();
        match source.statement {
            Statement::Update(s) => {
                source.with_writer(&prior, |w, ctx| w.increments(s, ctx, &mut self.increments))
            }
            _ => super::mutations_of(
                source.catalog,
                source.exec,
                source.statement,
                source.bindings,
                source.time,
                &prior,
                &mut self.mutations,
            ),
        }
    }

    /// Applies the deletions, then the increments, at `consistency`.
    pub(super) async fn apply<C: Coordinator>(
        self,
        coordinator: &C,
        consistency: Consistency,
    ) -> Result<ResultBody, ErrorResponse> {
        if !self.mutations.is_empty() {
            coordinator.write(self.mutations, consistency).await?;
        }
        if !self.increments.is_empty() {
            coordinator
                .counter_write(self.increments, consistency)
                .await?;
        }
        Ok(ResultBody::Void)
    }
}

impl Writer<'_> {
    /// The increments of an UPDATE of a counter table: one per counter it changes in each
    /// row (or static row) its WHERE clause names.
    fn increments(
        &self,
        s: &UpdateStatement,
        ctx: &EvalContext<'_>,
        out: &mut Vec<CounterIncrement>,
    ) -> Result<(), ErrorResponse> {
        let r = restrict::analyse(self.table, &s.where_clause, ctx, &self.limits)?;
        let partitions = self.partitions(&r)?;
        let mut regular: BTreeMap<ColumnId, i64> = BTreeMap::new();
        let mut statics: BTreeMap<ColumnId, i64> = BTreeMap::new();
        for a in &s.assignments {
            let col = self.set_column(a.column.as_str())?;
            let Some(delta) = delta(a, ctx)? else {
                continue;
            };
            let target = if col.kind == ColumnKind::Static {
                &mut statics
            } else {
                &mut regular
            };
            let sum = target.entry(col.id).or_insert(0);
            *sum = sum.wrapping_add(delta);
        }
        let rows = if regular.is_empty() {
            Vec::new()
        } else {
            self.updated_rows(&r)?
        };
        for prefix in &partitions {
            let mut push = |key: &[u8], deltas: &BTreeMap<ColumnId, i64>| {
                out.extend(deltas.iter().map(|(column, delta)| CounterIncrement {
                    table: self.table.id,
                    token: prefix.token(),
                    key: key.to_vec(),
                    column: *column,
                    delta: *delta,
                }));
            };
            if !statics.is_empty() {
                push(&self.schema.static_key(prefix), &statics);
            }
            for ck in &rows {
                push(&self.row_key(prefix, ck)?, &regular);
            }
        }
        Ok(())
    }
}

/// What assignment `a` adds to its counter (`None`: an unset value, nothing).
fn delta(a: &crate::ast::Assignment, ctx: &EvalContext<'_>) -> Result<Option<i64>, ErrorResponse> {
    let name = a.column.as_str();
    if a.element.is_some() {
        return Err(invalid(format!(
            "Invalid operation ({a}) for non collection column {name}"
        )));
    }
    if a.field.is_some() {
        return Err(invalid(format!(
            "Invalid operation ({a}) for frozen UDT column {name}"
        )));
    }
    match a.op {
        AssignOp::Set => Err(invalid(format!(
            "Cannot set the value of counter column {name} (counters can only be incremented/decremented, not set)"
        ))),
        AssignOp::Prepend => Err(invalid(format!(
            "Invalid operation ({name} = {} - {name}) for non list column {name}",
            a.value
        ))),
        AssignOp::Add | AssignOp::Remove => {
            if matches!(a.value, Term::Literal(Literal::Null)) {
                return Err(invalid(
                    "Invalid null value for counter increment/decrement",
                ));
            }
            // The value is a `bigint`; Cassandra names the receiver's type `counter`.
            let value = eval(&a.value, &CqlType::BigInt.into(), name, ctx).map_err(|mut e| {
                e.message = e.message.replace(" of type bigint", " of type counter");
                e
            })?;
            let n = match value {
                Eval::Unset => return Ok(None),
                Eval::Null => return Err(invalid("Invalid null value for counter increment")),
                Eval::Value(CqlValue::BigInt(n)) => n,
                Eval::Value(_) => return Err(invalid(format!("Invalid value for counter {name}"))),
            };
            if a.op == AssignOp::Add {
                return Ok(Some(n));
            }
            n.checked_neg().map(Some).ok_or_else(|| {
                invalid(format!(
                    "The negation of {n} overflows supported counter precision (signed 8 bytes integer)"
                ))
            })
        }
    }
}
