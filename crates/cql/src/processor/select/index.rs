//! Choosing a secondary index for a SELECT, and what using one changes: which other
//! relations still need ALLOW FILTERING, and what Cassandra refuses with an index.
//!
//! Which rows the query returns never depends on the choice: every relation stays a row
//! predicate the coordinator checks, and the index only narrows what replicas read.

use mosaic_types::DataType;

use crate::index::{entry_term, IndexQuery};
use crate::schema::{IndexMeta, TargetKind};

use super::restrict::{ColumnRestriction, Predicate};
use super::*;

/// The index a query reads through, and the relation it serves.
#[derive(Clone, Debug)]
pub(super) struct IndexChoice {
    /// What replicas are asked.
    pub query: IndexQuery,
    /// The table column of the relation the index serves.
    pub column: usize,
}

/// The index of `table` on `column` of `kind`, if there is one.
fn index_on<'t>(table: &'t TableMeta, column: &str, kind: TargetKind) -> Option<&'t IndexMeta> {
    table
        .indexes
        .values()
        .find(|i| i.target.column == column && i.target.kind == kind)
}

/// The first relation (in WHERE order) an index of the table serves: `c = v` (a simple,
/// or for a frozen collection a `full()`, index), `c CONTAINS v` (`values()`), `c CONTAINS
/// KEY v` (`keys()`), `m[k] = v` (`entries()`). In partition mode only relations on
/// columns outside the primary key are served (the partition read is already narrow).
pub(super) fn choose(
    table: &TableMeta,
    restrictions: &Restrictions,
    partition_mode: bool,
) -> Option<IndexChoice> {
    if table.indexes.is_empty() {
        return None;
    }
    restrictions.predicates.iter().find_map(|p| {
        let (column, kind, term) = match p {
            Predicate::Column {
                column,
                op: crate::ast::Operator::Eq,
                values,
            } if values.len() == 1 => {
                let meta = table.columns.get(*column)?;
                let kind = if matches!(meta.ty, DataType::Frozen(_)) && meta.ty.is_collection() {
                    TargetKind::Full
                } else {
                    TargetKind::Simple
                };
                (*column, kind, values.first()?.to_cql_bytes())
            }
            Predicate::Contains { column, key, value } => {
                let kind = if *key {
                    TargetKind::Keys
                } else {
                    TargetKind::Values
                };
                (*column, kind, value.to_cql_bytes())
            }
            Predicate::Entry { column, key, value } => (
                *column,
                TargetKind::Entries,
                entry_term(&key.to_cql_bytes(), &value.to_cql_bytes()),
            ),
            _ => return None,
        };
        let meta = table.columns.get(column)?;
        if partition_mode && meta.kind.is_primary_key() {
            return None;
        }
        let index = index_on(table, &meta.name, kind)?;
        Some(IndexChoice {
            query: IndexQuery {
                index: index.name.clone(),
                term,
            },
            column,
        })
    })
}

/// Why a query reading through `choice` needs ALLOW FILTERING, if it does: another
/// relation on a column outside the primary key, or (outside partition mode) a relation
/// on a clustering column or part of the partition key that the index does not serve, or
/// clustering restrictions a partition read cannot slice by.
pub(super) fn filtering_needed(
    table: &TableMeta,
    restrictions: &Restrictions,
    partition_mode: bool,
    choice: &IndexChoice,
) -> Option<String> {
    let chosen = table.columns.get(choice.column);
    let chosen_name = chosen.map_or("", |c| c.name.as_str());
    let served = usize::from(restrictions.on_regular.iter().any(|n| n == chosen_name));
    if restrictions.on_regular.len() > served {
        return Some(filtering_message());
    }
    if partition_mode {
        return restrictions.clustering_problem(table);
    }
    let (chosen_partition, chosen_clustering) = match chosen.map(|c| c.kind) {
        Some(ColumnKind::PartitionKey { position }) => (Some(position), None),
        Some(ColumnKind::Clustering { position, .. }) => (None, Some(position)),
        _ => (None, None),
    };
    let other_key = restrictions
        .partition
        .iter()
        .enumerate()
        .any(|(i, r)| r.is_some() && Some(i) != chosen_partition)
        || restrictions.multi.is_some()
        || restrictions
            .clustering
            .iter()
            .enumerate()
            .any(|(i, r)| r.is_some() && Some(i) != chosen_clustering);
    other_key.then(filtering_message)
}

/// What Cassandra refuses in a query that reads through an index.
pub(super) fn check(restrictions: &Restrictions, s: &SelectStatement) -> Result<(), ErrorResponse> {
    let partition_in = restrictions
        .partition
        .iter()
        .any(|r| matches!(r, Some(ColumnRestriction::Values(v)) if v.len() > 1));
    if partition_in {
        return Err(invalid(
            "Select on indexed columns and with IN clause for the PRIMARY KEY are not supported",
        ));
    }
    if !s.order_by.is_empty() {
        return Err(invalid("ORDER BY with 2ndary indexes is not supported."));
    }
    Ok(())
}
