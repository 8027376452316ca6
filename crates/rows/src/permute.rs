//! Clustering permutations: the keys of a replica that stores a table's rows in another
//! clustering order than the declared one (heterogeneous replicas).
//!
//! A [`Permutation`] π lists declared clustering positions in the order a replica sorts
//! by: π = [1, 2, 0] sorts by the second column, then the third, then the first. A row's
//! *permuted key* is its canonical key with the clustering components reordered by π
//! (each component keeps its own encoding and direction); every other entry of a
//! partition — header, range tombstones, static row — keeps its canonical key, so a
//! replica in any order holds a partition's head exactly as a canonical one does and
//! range tombstones keep covering rows by their canonical clustering bytes.
//!
//! [`KeySchema::permuted_ranges`] plans a read in a permuted store: from a
//! [`ClusteringFilter`] it builds the narrowest key ranges of a partition under π — the
//! values of the leading `=`/`IN` columns of π expanded, then one range on the next
//! column — leaving the rest to be filtered row by row.

use std::ops::{Bound, Range};

use crate::component::decode_component_of;
use crate::error::KeyError;
use crate::filter::{ClusteringFilter, ColumnFilter};
use crate::key::{tag, KeySchema};

/// The most key ranges one plan expands `IN` lists into; past it the remaining columns
/// are filtered instead.
pub const MAX_PLANNED_RANGES: usize = 256;

/// A clustering order: declared clustering positions, in the order a replica sorts by.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Permutation(Vec<usize>);

impl Permutation {
    /// The declared order of `n` columns.
    pub fn identity(n: usize) -> Permutation {
        Permutation((0..n).collect())
    }

    /// `order` if it is a permutation of `0..order.len()`.
    pub fn new(order: Vec<usize>) -> Option<Permutation> {
        let mut seen = vec![false; order.len()];
        for &i in &order {
            let slot = seen.get_mut(i)?;
            if *slot {
                return None;
            }
            *slot = true;
        }
        Some(Permutation(order))
    }

    /// The declared positions, in sort order.
    pub fn positions(&self) -> &[usize] {
        &self.0
    }

    /// Whether this is the declared order.
    pub fn is_identity(&self) -> bool {
        self.0.iter().enumerate().all(|(i, p)| i == *p)
    }

    /// Number of columns.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there are no columns.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// A row key split into its parts: the partition prefix's length and the byte span of
/// each clustering component (in the key's own order).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RowSpans {
    /// Length of the partition prefix.
    pub prefix_len: usize,
    /// The components' spans, in key order.
    pub components: Vec<Range<usize>>,
}

impl KeySchema {
    /// The spans of a row key stored in order `perm` (the canonical order for the
    /// identity), or `None` when `key` is not a clustering row (a header, range
    /// tombstone, static row or bound).
    pub fn row_spans(&self, key: &[u8], perm: &Permutation) -> Result<Option<RowSpans>, KeyError> {
        let columns = self.clustering_columns().len();
        if perm.len() != columns {
            return Err(KeyError::WrongArity {
                what: "clustering",
                expected: columns,
                actual: perm.len(),
            });
        }
        self.spans_in(key, perm.positions().iter().copied())
    }

    /// [`Self::row_spans`] of a canonical key (the declared order), without building the
    /// identity permutation.
    pub fn declared_row_spans(&self, key: &[u8]) -> Result<Option<RowSpans>, KeyError> {
        self.spans_in(key, 0..self.clustering_columns().len())
    }

    /// The spans of a row key whose components are the declared columns `order`.
    fn spans_in(
        &self,
        key: &[u8],
        order: impl Iterator<Item = usize>,
    ) -> Result<Option<RowSpans>, KeyError> {
        let prefix_len = self.partition_prefix_len(key)?;
        let columns = self.clustering_columns();
        let mut pos = prefix_len;
        let mut components = Vec::with_capacity(columns.len());
        for declared in order {
            match key.get(pos) {
                Some(&tag::COMPONENT) => pos += 1,
                Some(_) if components.is_empty() => return Ok(None),
                Some(&t) => {
                    return Err(KeyError::BadTag {
                        tag: t,
                        offset: pos,
                    })
                }
                None => return Err(KeyError::Truncated { offset: pos }),
            }
            let column = columns.get(declared).ok_or(KeyError::WrongArity {
                what: "clustering",
                expected: columns.len(),
                actual: declared + 1,
            })?;
            let start = pos;
            decode_component_of(key, &mut pos, &column.ty, column.order)?;
            components.push(start..pos);
        }
        match key.get(pos) {
            Some(&tag::ROW) if pos + 1 == key.len() => {}
            Some(&tag::ROW) => {
                return Err(KeyError::TrailingBytes {
                    extra: key.len() - pos - 1,
                })
            }
            // A bound key (never stored) or a table without clustering columns' head.
            Some(_) if components.is_empty() => return Ok(None),
            Some(&t) => {
                return Err(KeyError::BadTag {
                    tag: t,
                    offset: pos,
                })
            }
            None => return Err(KeyError::Truncated { offset: pos }),
        }
        Ok(Some(RowSpans {
            prefix_len,
            components,
        }))
    }

    /// `key` (canonical) as a replica in order `perm` stores it: rows get their components
    /// reordered, every other entry stays as it is.
    pub fn permute_key(&self, key: &[u8], perm: &Permutation) -> Result<Vec<u8>, KeyError> {
        if perm.len() != self.clustering_columns().len() {
            return Err(KeyError::WrongArity {
                what: "clustering",
                expected: self.clustering_columns().len(),
                actual: perm.len(),
            });
        }
        let Some(spans) = self.declared_row_spans(key)? else {
            return Ok(key.to_vec());
        };
        Ok(reorder(key, &spans, perm.positions().iter().copied()))
    }

    /// The canonical key of `key`, stored in order `perm`.
    pub fn canonical_key(&self, key: &[u8], perm: &Permutation) -> Result<Vec<u8>, KeyError> {
        let Some(spans) = self.row_spans(key, perm)? else {
            return Ok(key.to_vec());
        };
        // Declared column d sits at the position of d in perm.
        let mut at = vec![0; perm.len()];
        for (position, &declared) in perm.positions().iter().enumerate() {
            if let Some(slot) = at.get_mut(declared) {
                *slot = position;
            }
        }
        Ok(reorder(key, &spans, at.into_iter()))
    }

    /// The key ranges `[start, end)` of partition `prefix` (its encoded partition prefix)
    /// that hold every row `filter` may pass, in a store of order `perm`: sorted,
    /// non-overlapping, empty when the filter passes nothing.
    pub fn permuted_ranges(
        &self,
        prefix: &[u8],
        filter: &ClusteringFilter,
        perm: &Permutation,
    ) -> Vec<(Vec<u8>, Vec<u8>)> {
        let mut heads: Vec<Vec<u8>> = vec![prefix.to_vec()];
        for &declared in perm.positions() {
            let column = filter.column(declared);
            if column.is_empty() {
                return Vec::new();
            }
            match column {
                ColumnFilter::In(values)
                    if heads.len().saturating_mul(values.len()) <= MAX_PLANNED_RANGES =>
                {
                    heads = heads
                        .iter()
                        .flat_map(|h| {
                            values.iter().map(move |v| {
                                let mut k = h.clone();
                                k.push(tag::COMPONENT);
                                k.extend_from_slice(v);
                                k
                            })
                        })
                        .collect();
                }
                ColumnFilter::Range { lo, hi } => {
                    return heads
                        .into_iter()
                        .filter_map(|h| {
                            let start = match lo {
                                Bound::Unbounded => with(&h, &[tag::BEFORE]),
                                Bound::Included(v) => component_bound(&h, v, tag::BEFORE),
                                Bound::Excluded(v) => component_bound(&h, v, tag::AFTER),
                            };
                            let end = match hi {
                                Bound::Unbounded => with(&h, &[tag::AFTER]),
                                Bound::Included(v) => component_bound(&h, v, tag::AFTER),
                                Bound::Excluded(v) => component_bound(&h, v, tag::BEFORE),
                            };
                            (start < end).then_some((start, end))
                        })
                        .collect();
                }
                _ => break,
            }
        }
        heads
            .into_iter()
            .map(|h| (with(&h, &[tag::BEFORE]), with(&h, &[tag::AFTER])))
            .collect()
    }
}

fn with(head: &[u8], tail: &[u8]) -> Vec<u8> {
    let mut k = Vec::with_capacity(head.len() + tail.len());
    k.extend_from_slice(head);
    k.extend_from_slice(tail);
    k
}

fn component_bound(head: &[u8], component: &[u8], side: u8) -> Vec<u8> {
    let mut k = Vec::with_capacity(head.len() + component.len() + 2);
    k.extend_from_slice(head);
    k.push(tag::COMPONENT);
    k.extend_from_slice(component);
    k.push(side);
    k
}

/// `key` rebuilt with its components (spans in key order) emitted in the order of
/// `order` (indexes into `spans.components`).
fn reorder(key: &[u8], spans: &RowSpans, order: impl Iterator<Item = usize>) -> Vec<u8> {
    let mut out = Vec::with_capacity(key.len());
    out.extend_from_slice(key.get(..spans.prefix_len).unwrap_or_default());
    for i in order {
        if let Some(span) = spans.components.get(i) {
            out.push(tag::COMPONENT);
            out.extend_from_slice(key.get(span.clone()).unwrap_or_default());
        }
    }
    out.push(tag::ROW);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::component::Order;
    use crate::key::{ClusteringBound, PartitionPrefix};
    use mosaic_types::{CqlType, CqlValue};
    use proptest::prelude::*;
    use proptest::strategy::ValueTree;

    fn schema(orders: [Order; 3]) -> KeySchema {
        KeySchema::new(
            vec![CqlType::Int],
            orders.iter().map(|o| (CqlType::Int, *o)).collect(),
        )
        .expect("schema")
    }

    fn perms() -> Vec<Permutation> {
        let mut out = Vec::new();
        for a in 0..3 {
            for b in 0..3 {
                for c in 0..3 {
                    if let Some(p) = Permutation::new(vec![a, b, c]) {
                        out.push(p);
                    }
                }
            }
        }
        out
    }

    fn order() -> impl Strategy<Value = Order> {
        prop_oneof![Just(Order::Asc), Just(Order::Desc)]
    }

    fn column_filter(s: &KeySchema, col: usize) -> BoxedStrategy<ColumnFilter> {
        let s1 = s.clone();
        let s2 = s.clone();
        prop_oneof![
            Just(ColumnFilter::Any),
            proptest::collection::vec(0i32..6, 0..3).prop_map(move |vs| {
                let vs: Vec<CqlValue> = vs.into_iter().map(CqlValue::Int).collect();
                s1.column_values_filter(col, &vs).expect("values")
            }),
            (
                proptest::option::of((0i32..6, any::<bool>())),
                proptest::option::of((0i32..6, any::<bool>()))
            )
                .prop_map(move |(lo, hi)| {
                    let lo = lo.map(|(v, inc)| (CqlValue::Int(v), inc));
                    let hi = hi.map(|(v, inc)| (CqlValue::Int(v), inc));
                    s2.column_range_filter(
                        col,
                        lo.as_ref().map(|(v, i)| (v, *i)),
                        hi.as_ref().map(|(v, i)| (v, *i)),
                    )
                    .expect("range")
                }),
        ]
        .boxed()
    }

    proptest! {
        /// Permuted keys sort rows by the permuted columns (each in its direction), map
        /// back to their canonical keys, and a plan's ranges hold exactly the rows the
        /// filter passes (after the row-by-row check), whatever the order.
        #[test]
        fn permuted_keys_and_plans_agree_with_a_reference(
            orders in [order(), order(), order()],
            rows in proptest::collection::btree_set((0i32..6, 0i32..6, 0i32..6), 0..40),
            pick in 0usize..6,
        ) {
            let s = schema(orders);
            let perm = perms().into_iter().nth(pick).expect("perm");
            let partition: PartitionPrefix =
                s.partition_prefix(&[CqlValue::Int(7)]).expect("prefix");
            let mut stored: Vec<(Vec<u8>, Vec<u8>, [i32; 3])> = Vec::new();
            for (a, b, c) in &rows {
                let values = [CqlValue::Int(*a), CqlValue::Int(*b), CqlValue::Int(*c)];
                let canonical = s.row_key(&partition, &values).expect("row key");
                let permuted = s.permute_key(&canonical, &perm).expect("permute");
                prop_assert_eq!(s.canonical_key(&permuted, &perm).expect("back"), canonical.clone());
                stored.push((permuted, canonical, [*a, *b, *c]));
            }
            stored.sort();
            // Sorted permuted keys = rows sorted by the permuted columns, each in its order.
            let logical = |r: &[i32; 3]| -> Vec<i64> {
                perm.positions().iter().map(|&d| {
                    let v = i64::from(r[d]);
                    if orders[d] == Order::Desc { -v } else { v }
                }).collect()
            };
            for w in stored.windows(2) {
                prop_assert!(logical(&w[0].2) < logical(&w[1].2));
            }
            // Head entries keep their keys.
            let head = s.range_tombstone_key(
                &partition,
                &ClusteringBound::inclusive_start(vec![CqlValue::Int(1)]),
                &ClusteringBound::inclusive_end(vec![CqlValue::Int(1)]),
            ).expect("tombstone");
            prop_assert_eq!(s.permute_key(&head, &perm).expect("head"), head.clone());
            prop_assert_eq!(s.canonical_key(&head, &perm).expect("head"), head);
        }
    }

    #[test]
    fn plans_hold_exactly_the_filtered_rows() {
        let mut runner = proptest::test_runner::TestRunner::deterministic();
        for orders in [[Order::Asc; 3], [Order::Desc, Order::Asc, Order::Desc]] {
            let s = schema(orders);
            let strategy = (
                column_filter(&s, 0),
                column_filter(&s, 1),
                column_filter(&s, 2),
                0usize..6,
            );
            for _ in 0..300 {
                let (f0, f1, f2, pick) = strategy.new_tree(&mut runner).expect("tree").current();
                let filter = ClusteringFilter {
                    columns: vec![f0, f1, f2],
                };
                let perm = perms().into_iter().nth(pick).expect("perm");
                let partition = s.partition_prefix(&[CqlValue::Int(3)]).expect("prefix");
                let ranges = s.permuted_ranges(partition.as_bytes(), &filter, &perm);
                for w in ranges.windows(2) {
                    assert!(w[0].1 <= w[1].0, "ranges sorted and disjoint");
                }
                for a in 0..6 {
                    for b in 0..6 {
                        for c in 0..6 {
                            let values = [CqlValue::Int(a), CqlValue::Int(b), CqlValue::Int(c)];
                            let canonical = s.row_key(&partition, &values).expect("key");
                            let spans = s
                                .row_spans(&canonical, &Permutation::identity(3))
                                .expect("spans")
                                .expect("row");
                            let comps: Vec<&[u8]> = spans
                                .components
                                .iter()
                                .map(|r| &canonical[r.clone()])
                                .collect();
                            let passes = filter.matches(&comps);
                            let permuted = s.permute_key(&canonical, &perm).expect("permute");
                            let planned = ranges
                                .iter()
                                .any(|(lo, hi)| permuted >= *lo && permuted < *hi);
                            assert!(!passes || planned, "{filter:?} {perm:?} row {a} {b} {c}");
                        }
                    }
                }
            }
        }
    }
}
