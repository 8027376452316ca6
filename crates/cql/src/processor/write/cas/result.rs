//! What a compare-and-set read, resolved into live rows, and the Rows result Cassandra
//! answers a conditional write with: `[applied]` (boolean) alone when it applied or when
//! nothing it looked at exists, else `[applied]` = false and, per row read, the columns the
//! conditions name (a batch's starting with the primary key) or, with `IF [NOT] EXISTS`,
//! every column — with only the columns Cassandra's read fetched filled in (static columns
//! when the write sets some or a condition names them, regular ones likewise), as
//! `ModificationStatement.buildCasResultSet` shows them.

use std::collections::HashMap;

use bytes::Bytes;
use mosaic_rows::{LiveRow, PartitionResolver};
use mosaic_types::{CqlType, CqlValue};

use crate::coordinator::ReadResult;
use crate::frame::{ColumnSpec, ErrorResponse, ResultBody, Rows, RowsMetadata};
use crate::processor::invalid;
use crate::processor::select::RowView;
use crate::schema::ColumnKind;

use super::{Check, Plan, Read, Target};

/// The live rows a compare-and-set read.
pub(super) struct Current {
    /// The static row, if live.
    pub static_row: Option<LiveRow>,
    /// The rows read by key, when live.
    pub rows: HashMap<Vec<u8>, LiveRow>,
    /// The partition's first live row, when only the static row is checked.
    pub first: Option<LiveRow>,
}

/// Resolves what the plan's reads returned (one result per read, in order).
pub(super) fn resolve(
    plan: &Plan,
    current: &[ReadResult],
    now_secs: i64,
) -> Result<Current, ErrorResponse> {
    let damaged = |e: mosaic_rows::ResolveError| invalid(format!("Could not read the row: {e}"));
    let mut head: &[(Vec<u8>, Vec<u8>)] = &[];
    let mut out = Current {
        static_row: None,
        rows: HashMap::new(),
        first: None,
    };
    for (read, result) in plan.reads.iter().zip(current) {
        // Every read is resolved after the head, so deletions reach its rows.
        let mut resolver = PartitionResolver::new(&plan.schema, now_secs);
        let own: &[(Vec<u8>, Vec<u8>)] = match read {
            Read::Head => &[],
            _ => &result.entries,
        };
        let source = if matches!(read, Read::Head) {
            &result.entries
        } else {
            head
        };
        for (key, value) in source {
            resolver.push(key, value).map_err(damaged)?;
        }
        let mut live = None;
        for (key, value) in own {
            if let Some(row) = resolver.push(key, value).map_err(damaged)? {
                live = Some(row);
                break;
            }
        }
        match read {
            Read::Head => {
                head = &result.entries;
                out.static_row = resolver.static_row().cloned();
            }
            Read::First => out.first = live,
            Read::Row(key) => {
                if let Some(row) = live {
                    out.rows.insert(key.clone(), row);
                }
            }
        }
    }
    Ok(out)
}

/// The row a check looks at.
fn target_row<'c>(current: &'c Current, target: &Target) -> Option<&'c LiveRow> {
    match target {
        Target::Static => current.static_row.as_ref(),
        Target::Row(key) => current.rows.get(key),
    }
}

/// A row's view for reading column values.
fn view<'a>(plan: &'a Plan, current: &'a Current, row: Option<&'a LiveRow>) -> RowView<'a> {
    RowView {
        token: plan.prefix.token(),
        partition_key: &plan.partition_key,
        static_row: current.static_row.as_ref(),
        row,
    }
}

/// Whether one check holds.
pub(super) fn check_holds(plan: &Plan, current: &Current, target: &Target, check: &Check) -> bool {
    let row = target_row(current, target);
    match check {
        Check::Exists => row.is_some(),
        Check::NotExists => row.is_none(),
        Check::Conditions(all) => {
            let view = view(plan, current, row);
            all.iter().all(|c| {
                let value = if c.is_static || row.is_some() {
                    view.value(&plan.table, c.column)
                } else {
                    None
                };
                c.holds(value.as_ref())
            })
        }
    }
}

/// The Rows result of a compare-and-set.
pub(super) fn rows(
    plan: &Plan,
    applied: bool,
    current: &[ReadResult],
    now_secs: i64,
) -> Result<ResultBody, ErrorResponse> {
    let table = plan.table.as_ref();
    let spec = |name: &str, ty: &mosaic_types::DataType| {
        ColumnSpec::new(&table.keyspace, &table.name, name, ty)
    };
    let applied_spec = spec("[applied]", &CqlType::Boolean.into());
    let flag = |b: bool| Some(Bytes::from(CqlValue::Boolean(b).to_cql_bytes()));
    if applied {
        return Ok(ResultBody::Rows(Rows {
            metadata: RowsMetadata::new(vec![applied_spec]),
            rows: vec![vec![flag(true)]],
        }));
    }
    let read = resolve(plan, current, now_secs)?;
    let columns: Vec<usize> = match &plan.shown {
        None => table
            .select_star_order()
            .iter()
            .filter_map(|c| table.column_index(&c.name))
            .collect(),
        Some(shown) => {
            let mut columns: Vec<usize> = Vec::new();
            if plan.is_batch {
                columns.extend(
                    table
                        .columns
                        .iter()
                        .enumerate()
                        .filter(|(_, c)| c.kind.is_primary_key())
                        .map(|(i, _)| i),
                );
                columns.sort_by_key(|&i| key_order(table, i));
            }
            for &c in shown {
                if !columns.contains(&c) {
                    columns.push(c);
                }
            }
            columns
        }
    };
    // The columns Cassandra's read fetched (`CQL3CasRequest.columnsToRead`).
    let fetched = |i: usize| {
        let Some(col) = table.columns.get(i) else {
            return false;
        };
        match (&plan.shown, col.kind) {
            (_, ColumnKind::PartitionKey { .. } | ColumnKind::Clustering { .. }) => true,
            (None, ColumnKind::Static) => plan.updates_static,
            (None, ColumnKind::Regular) => plan.updates_regular,
            (Some(shown), _) => shown.contains(&i),
        }
    };
    let static_fetched = read.static_row.is_some()
        && table.columns.iter().enumerate().any(|(i, c)| {
            c.kind == ColumnKind::Static
                && fetched(i)
                && view(plan, &read, None).value(table, i).is_some()
        });
    let current_statics = if static_fetched {
        read.static_row.clone()
    } else {
        None
    };
    let shown_read = Current {
        static_row: current_statics,
        rows: HashMap::new(),
        first: None,
    };
    let mut live: Vec<(&Vec<u8>, &LiveRow)> = plan
        .checks
        .iter()
        .filter_map(|(target, _)| match target {
            Target::Row(key) => read.rows.get(key).map(|row| (key, row)),
            Target::Static => None,
        })
        .collect();
    live.sort_by(|a, b| a.0.cmp(b.0));
    let mut rows: Vec<Option<&LiveRow>> = live.into_iter().map(|(_, row)| Some(row)).collect();
    if plan.reads.iter().any(|r| matches!(r, Read::First)) {
        rows.extend(read.first.as_ref().map(Some));
    }
    if rows.is_empty() && shown_read.static_row.is_some() {
        rows.push(None);
    }
    if rows.is_empty() {
        return Ok(ResultBody::Rows(Rows {
            metadata: RowsMetadata::new(vec![applied_spec]),
            rows: vec![vec![flag(false)]],
        }));
    }
    let mut specs = vec![applied_spec];
    specs.extend(
        columns
            .iter()
            .filter_map(|&i| table.columns.get(i))
            .map(|c| spec(&c.name, &c.ty)),
    );
    let out = rows
        .into_iter()
        .map(|row| {
            let view = view(plan, &shown_read, row);
            let mut cells = vec![flag(false)];
            cells.extend(columns.iter().map(|&i| {
                fetched(i)
                    .then(|| view.value(table, i))
                    .flatten()
                    .map(|v| Bytes::from(v.to_cql_bytes()))
            }));
            cells
        })
        .collect();
    Ok(ResultBody::Rows(Rows {
        metadata: RowsMetadata::new(specs),
        rows: out,
    }))
}

/// Where a primary key column comes in the key: partition key columns, then clustering.
fn key_order(table: &crate::schema::TableMeta, index: usize) -> usize {
    match table.columns.get(index).map(|c| c.kind) {
        Some(ColumnKind::PartitionKey { position }) => position,
        Some(ColumnKind::Clustering { position, .. }) => 1000 + position,
        _ => usize::MAX,
    }
}
