//! What one statement may cost the node: the bounds the statement layer enforces (the
//! server fills them from `[limits]`), and the checks that apply them.
//!
//! Each check runs before the work it bounds: the cartesian product of `IN` lists is
//! computed from the lists' lengths before any key is built; a batch is measured from its
//! mutations before they are sent; an unpaged SELECT counts its result's bytes as it builds
//! them and stops at the bound rather than after materialising everything.

use std::collections::hash_map::Entry;
use std::collections::{BTreeSet, HashMap, HashSet};

use mosaic_rows::KeySchema;
use mosaic_types::TableId;

use crate::coordinator::{CounterIncrement, Mutation};
use crate::frame::ErrorResponse;
use crate::schema::Catalog;

use super::invalid;

/// The statement layer's bounds (see the server's `[limits]` for each one's reason).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StatementLimits {
    /// The most partition keys the `=`/`IN` restrictions of one statement may name (the
    /// product of their lists' lengths; Scylla's `max_partition_key_restrictions_per_query`).
    pub partition_key_restrictions_max: usize,
    /// The most clustering prefixes the `=`/`IN` restrictions of one statement may name
    /// (Scylla's `max_clustering_key_restrictions_per_query`).
    pub clustering_key_restrictions_max: usize,
    /// A batch over several partitions whose mutations exceed this many bytes is logged
    /// and its client warned (Cassandra's `batch_size_warn_threshold`).
    pub batch_size_warn_threshold_bytes: usize,
    /// A batch over several partitions whose mutations exceed this many bytes is refused
    /// (Cassandra's `batch_size_fail_threshold`).
    pub batch_size_fail_threshold_bytes: usize,
    /// The largest result a SELECT without paging may build; past it the query is refused
    /// and the client told to page.
    pub unpaged_result_size_bytes_max: usize,
    /// The bytes the prepared-statement cache may hold (Cassandra's
    /// `prepared_statements_cache_size`); the least recently used are evicted beyond it.
    pub prepared_statements_cache_size_bytes: u64,
}

impl StatementLimits {
    /// The defaults: Scylla's 100 for both restriction products, Cassandra 4.1's batch
    /// thresholds (5 KiB, 50 KiB) and prepared-statement cache floor (10 MiB), and
    /// 128 MiB for an unpaged result.
    pub const DEFAULT: StatementLimits = StatementLimits {
        partition_key_restrictions_max: 100,
        clustering_key_restrictions_max: 100,
        batch_size_warn_threshold_bytes: 5 << 10,
        batch_size_fail_threshold_bytes: 50 << 10,
        unpaged_result_size_bytes_max: 128 << 20,
        prepared_statements_cache_size_bytes: 10 << 20,
    };
}

impl Default for StatementLimits {
    fn default() -> StatementLimits {
        StatementLimits::DEFAULT
    }
}

/// Which key a restriction product names (for the error message).
#[derive(Clone, Copy, Debug)]
pub(crate) enum KeyPart {
    Partition,
    Clustering,
}

impl StatementLimits {
    /// Refuses a statement whose `=`/`IN` lists on `part`'s columns (their lengths in
    /// `lengths`) would expand to more keys than allowed; computed from the lengths alone
    /// (saturating), before any key is built.
    pub(crate) fn check_restrictions(
        &self,
        part: KeyPart,
        lengths: impl IntoIterator<Item = usize>,
    ) -> Result<(), ErrorResponse> {
        let product = lengths
            .into_iter()
            .fold(1usize, |acc, n| acc.saturating_mul(n));
        let (name, max, setting) = match part {
            KeyPart::Partition => (
                "partition-key",
                self.partition_key_restrictions_max,
                "partition_key_restrictions_max",
            ),
            KeyPart::Clustering => (
                "clustering-key",
                self.clustering_key_restrictions_max,
                "clustering_key_restrictions_max",
            ),
        };
        if product > max {
            return Err(invalid(format!(
                "{name} cartesian product size {product} is greater than maximum {max} \
                 ([limits] {setting}): use fewer IN values, or several queries"
            )));
        }
        Ok(())
    }

    /// Cassandra 4.1's `BatchStatement.verifyBatchSize` for a batch of ordinary writes: a
    /// batch whose mutations span more than one partition (single-partition batches are
    /// exempt, CASSANDRA-10876) is refused past the fail threshold, and warned about past
    /// the warn threshold (the warning returned).
    pub(crate) fn check_batch_size(
        &self,
        catalog: &Catalog,
        mutations: &[Mutation],
    ) -> Result<Option<String>, ErrorResponse> {
        self.check_batch_entries(catalog, mutations.iter().map(mutation_entry))
    }

    /// The same check for a counter batch, as Cassandra 4.1 makes it (a counter batch's
    /// mutations go through `executeWithoutConditions` like any other's): its deletions'
    /// mutations and its increments (each the row's key, the column and the 8-byte delta).
    /// Conditional batches are not checked, as in Cassandra (`executeWithConditions`):
    /// they are refused unless on one partition, which the check exempts anyway.
    pub(crate) fn check_counter_batch_size(
        &self,
        catalog: &Catalog,
        mutations: &[Mutation],
        increments: &[CounterIncrement],
    ) -> Result<Option<String>, ErrorResponse> {
        let entries = mutations
            .iter()
            .map(mutation_entry)
            .chain(increments.iter().map(increment_entry));
        self.check_batch_entries(catalog, entries)
    }

    /// [`Self::check_batch_size`] over a batch's writes as (table, engine key, bytes).
    fn check_batch_entries<'a>(
        &self,
        catalog: &Catalog,
        entries: impl Iterator<Item = BatchEntry<'a>> + Clone,
    ) -> Result<Option<String>, ErrorResponse> {
        let size: usize = entries
            .clone()
            .map(|(_, _, size)| size)
            .fold(0, usize::saturating_add);
        if size <= self.batch_size_warn_threshold_bytes || partitions(catalog, entries.clone()) <= 1
        {
            return Ok(None);
        }
        if size > self.batch_size_fail_threshold_bytes {
            return Err(invalid("Batch too large"));
        }
        let tables: Vec<String> = entries
            .map(|(table, _, _)| table)
            .collect::<BTreeSet<_>>()
            .into_iter()
            .map(|id| match catalog.table_by_id(id) {
                Some(t) => format!("{}.{}", t.keyspace, t.name),
                None => format!("{id:?}"),
            })
            .collect();
        let threshold = self.batch_size_warn_threshold_bytes;
        Ok(Some(format!(
            "Batch for [{}] is of size {size}, exceeding specified threshold of {threshold} by {}.",
            tables.join(", "),
            size - threshold
        )))
    }

    /// The error of an unpaged SELECT whose result would exceed its bound.
    pub(crate) fn unpaged_too_large(&self) -> ErrorResponse {
        invalid(format!(
            "The result of this query without paging exceeds [limits] \
             unpaged_result_size_bytes_max ({} bytes): page it (set a fetch size) or \
             narrow it (LIMIT, a tighter WHERE clause)",
            self.unpaged_result_size_bytes_max
        ))
    }
}

/// One write of a batch as its size check sees it: its table, engine key and bytes.
type BatchEntry<'a> = (TableId, &'a [u8], usize);

/// A counter increment as a [`BatchEntry`]: the row's key, the column and the delta.
fn increment_entry(i: &CounterIncrement) -> BatchEntry<'_> {
    let size = i
        .key
        .len()
        .saturating_add(std::mem::size_of_val(&i.column))
        .saturating_add(std::mem::size_of_val(&i.delta));
    (i.table, &i.key, size)
}

/// A mutation as a [`BatchEntry`]: its key and fragment bytes.
fn mutation_entry(m: &Mutation) -> BatchEntry<'_> {
    (
        m.table,
        &m.key,
        m.key.len().saturating_add(m.fragment.len()),
    )
}

/// How many partitions (keyspace and partition key, as Cassandra counts a batch's
/// mutations) `entries` write; counting stops at 2, all the batch check needs.
fn partitions<'a>(catalog: &Catalog, entries: impl Iterator<Item = BatchEntry<'a>>) -> usize {
    let mut schemas: HashMap<TableId, (&str, KeySchema)> = HashMap::new();
    let mut seen: HashSet<(&str, &[u8])> = HashSet::new();
    for (table, key, _) in entries {
        let (keyspace, schema) = match schemas.entry(table) {
            Entry::Occupied(e) => e.into_mut(),
            Entry::Vacant(e) => match catalog.table_by_id(table) {
                Some(t) => e.insert((t.keyspace.as_str(), t.key_schema())),
                // Unknown here means the schema changed under us: count it apart.
                None => return 2,
            },
        };
        let prefix_len = schema.partition_prefix_len(key).unwrap_or(key.len());
        seen.insert((*keyspace, key.get(..prefix_len).unwrap_or(key)));
        if seen.len() > 1 {
            return seen.len();
        }
    }
    seen.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn restriction_products_are_checked_from_lengths_without_overflow() {
        let l = StatementLimits::DEFAULT;
        assert!(l.check_restrictions(KeyPart::Partition, [10, 10]).is_ok());
        let e = l
            .check_restrictions(KeyPart::Partition, [10, 10, 2])
            .unwrap_err();
        assert!(
            e.message
                .contains("partition-key cartesian product size 200 is greater than maximum 100"),
            "{}",
            e.message
        );
        let e = l
            .check_restrictions(KeyPart::Clustering, [usize::MAX, 1000, 1000])
            .unwrap_err();
        assert!(
            e.message.contains(&format!("size {}", usize::MAX)),
            "{}",
            e.message
        );
    }
}
