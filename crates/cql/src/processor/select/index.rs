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

/// Every relation (in WHERE order) an index of the table serves, with its index: `c = v` (a
/// simple, or for a frozen collection a `full()`, index), `c CONTAINS v` (`values()`), `c
/// CONTAINS KEY v` (`keys()`), `m[k] = v` (`entries()`). In partition mode only relations
/// on columns outside the primary key are served (the partition read is already narrow).
/// What the query needs ALLOW FILTERING for is judged against the first, so it never
/// depends on statistics; [`most_selective`] picks the one to read through.
pub(super) fn candidates(
    table: &TableMeta,
    restrictions: &Restrictions,
    partition_mode: bool,
) -> Vec<IndexChoice> {
    if table.indexes.is_empty() {
        return Vec::new();
    }
    restrictions
        .predicates
        .iter()
        .filter_map(|p| {
            let (column, kind, term) = match p {
                Predicate::Column {
                    column,
                    op: crate::ast::Operator::Eq,
                    values,
                } if values.len() == 1 => {
                    let meta = table.columns.get(*column)?;
                    let kind = if matches!(meta.ty, DataType::Frozen(_)) && meta.ty.is_collection()
                    {
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
        .collect()
}

/// The candidate to read through: as Cassandra 4.1 chooses among indexes
/// (`SecondaryIndexManager.getBestIndexFor`), the one whose index has the lowest estimated
/// mean rows per indexed value (`mean_rows`, from the node's index statistics), so the
/// replicas read the fewest rows; an unknown estimate ranks last, and ties go to the
/// earlier relation.
pub(super) fn most_selective(
    candidates: &[IndexChoice],
    mean_rows: &dyn Fn(&str) -> Option<f64>,
) -> Option<IndexChoice> {
    if candidates.len() < 2 {
        return candidates.first().cloned();
    }
    let rank = |c: &IndexChoice| mean_rows(&c.query.index).filter(|m| m.is_finite());
    let mut best: Option<(&IndexChoice, Option<f64>)> = None;
    for c in candidates {
        let r = rank(c);
        let better = match (&best, r) {
            (None, _) => true,
            (Some((_, None)), Some(_)) => true,
            (Some((_, Some(b))), Some(r)) => r < *b,
            _ => false,
        };
        if better {
            best = Some((c, r));
        }
    }
    best.map(|(c, _)| c.clone())
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

#[cfg(test)]
mod tests {
    use super::*;

    fn choice(index: &str) -> IndexChoice {
        IndexChoice {
            query: IndexQuery {
                index: index.to_owned(),
                term: Vec::new(),
            },
            column: 0,
        }
    }

    /// Candidates (by index name), estimates, the index chosen.
    type Case<'a> = (&'a [&'a str], &'a [(&'a str, f64)], Option<&'a str>);

    /// The lowest estimate wins; unknown ones rank last; ties go to the earlier relation.
    #[test]
    fn the_most_selective_index_is_the_one_with_the_fewest_rows_per_value() {
        let cases: [Case<'_>; 7] = [
            (&[], &[], None),
            (&["a"], &[("a", 9.0)], Some("a")),
            (&["a", "b"], &[("a", 200.0), ("b", 1.0)], Some("b")),
            (&["a", "b"], &[("a", 1.0), ("b", 200.0)], Some("a")),
            (&["a", "b"], &[("b", 200.0)], Some("b")),
            (
                &["a", "b", "c"],
                &[("a", 3.0), ("b", 3.0), ("c", 3.0)],
                Some("a"),
            ),
            (&["a", "b"], &[], Some("a")),
        ];
        for (names, estimates, want) in cases {
            let candidates: Vec<IndexChoice> = names.iter().map(|n| choice(n)).collect();
            let mean_rows = |i: &str| estimates.iter().find(|(n, _)| *n == i).map(|(_, m)| *m);
            let got = most_selective(&candidates, &mean_rows).map(|c| c.query.index);
            assert_eq!(got.as_deref(), want, "{names:?} with {estimates:?}");
        }
    }
}
