//! Clustering filters: restrictions of a read's clustering columns that every replica
//! applies to the rows it reads, whatever order it stores them in.
//!
//! A [`ClusteringFilter`] holds one [`ColumnFilter`] per clustering column, in the table's
//! declared order, and compares *encoded components* (the column's order-preserving
//! encoding, inverted for a descending column: [`crate::component`]), so a replica checks
//! a row by comparing bytes, without decoding values or knowing CQL. Ranges are in key
//! order: on a descending column the logical `>` becomes a key-order upper bound, which
//! [`KeySchema::column_range_filter`] does for its callers.
//!
//! A filter only ever *removes* rows a read would otherwise return, and depends on nothing
//! but the row's key, so every replica of a range answers the same entries for it (digests
//! and read repair stay sound) and a coordinator may still check its own predicates.
//!
//! Filters travel between nodes as bytes ([`ClusteringFilter::encode`]); decoding checks
//! every length and tag, so a malformed filter from a peer is an error, never a panic.

use std::ops::Bound;

use mosaic_types::CqlValue;

use crate::component::{encode_component, Order};
use crate::error::KeyError;
use crate::key::KeySchema;

/// The restriction of one clustering column, on encoded components in key order.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum ColumnFilter {
    /// Unrestricted.
    Any,
    /// One of these encoded values (sorted ascending, deduplicated).
    In(Vec<Vec<u8>>),
    /// Between two encoded bounds, in key order.
    Range {
        /// The lower bound.
        lo: Bound<Vec<u8>>,
        /// The upper bound.
        hi: Bound<Vec<u8>>,
    },
}

impl ColumnFilter {
    /// Whether the encoded component `c` satisfies the restriction.
    pub fn matches(&self, c: &[u8]) -> bool {
        match self {
            ColumnFilter::Any => true,
            ColumnFilter::In(values) => values.binary_search_by(|v| v.as_slice().cmp(c)).is_ok(),
            ColumnFilter::Range { lo, hi } => {
                let above = match lo {
                    Bound::Unbounded => true,
                    Bound::Included(b) => c >= b.as_slice(),
                    Bound::Excluded(b) => c > b.as_slice(),
                };
                let below = match hi {
                    Bound::Unbounded => true,
                    Bound::Included(b) => c <= b.as_slice(),
                    Bound::Excluded(b) => c < b.as_slice(),
                };
                above && below
            }
        }
    }

    /// An `In` of `values`, sorted and deduplicated.
    pub fn one_of(mut values: Vec<Vec<u8>>) -> ColumnFilter {
        values.sort();
        values.dedup();
        ColumnFilter::In(values)
    }

    /// Whether no component can satisfy it (an empty `In`, or a range whose bounds cross).
    pub fn is_empty(&self) -> bool {
        match self {
            ColumnFilter::Any => false,
            ColumnFilter::In(values) => values.is_empty(),
            ColumnFilter::Range { lo, hi } => match (lo, hi) {
                (Bound::Included(a), Bound::Included(b)) => a > b,
                (Bound::Included(a), Bound::Excluded(b))
                | (Bound::Excluded(a), Bound::Included(b))
                | (Bound::Excluded(a), Bound::Excluded(b)) => a >= b,
                _ => false,
            },
        }
    }
}

/// One restriction per clustering column, in the table's declared order (see the module
/// doc). Fewer columns than the table has leave the rest unrestricted.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct ClusteringFilter {
    /// The restrictions, by declared clustering position.
    pub columns: Vec<ColumnFilter>,
}

/// The most columns, values per column and bytes per value a decoded filter may hold:
/// beyond any schema (a table has far fewer clustering columns) and any IN list a
/// coordinator accepts.
const MAX_COLUMNS: usize = 1024;
const MAX_VALUES: usize = 65_536;

impl ClusteringFilter {
    /// Whether the filter restricts nothing.
    pub fn is_trivial(&self) -> bool {
        self.columns.iter().all(|c| *c == ColumnFilter::Any)
    }

    /// The restriction of declared clustering column `i`.
    pub fn column(&self, i: usize) -> &ColumnFilter {
        self.columns.get(i).unwrap_or(&ColumnFilter::Any)
    }

    /// Whether a row whose clustering components are `components` (encoded, declared
    /// order) passes.
    pub fn matches(&self, components: &[&[u8]]) -> bool {
        self.columns
            .iter()
            .zip(components)
            .all(|(f, c)| f.matches(c))
    }

    /// Whether canonical `key` of a table of `schema` passes: a clustering row when each of
    /// its components does; every other entry (partition header, range tombstone, static
    /// row) always. An error when the key does not decode.
    pub fn passes(&self, schema: &KeySchema, key: &[u8]) -> Result<bool, KeyError> {
        let Some(spans) = schema.declared_row_spans(key)? else {
            return Ok(true);
        };
        Ok(self
            .columns
            .iter()
            .zip(&spans.components)
            .all(|(f, span)| f.matches(key.get(span.clone()).unwrap_or_default())))
    }

    /// The filter's bytes: a version byte, the column count, then per column a tag and its
    /// values, every length a little-endian u32.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = vec![1u8];
        put_len(&mut out, self.columns.len());
        for c in &self.columns {
            match c {
                ColumnFilter::Any => out.push(0),
                ColumnFilter::In(values) => {
                    out.push(1);
                    put_len(&mut out, values.len());
                    for v in values {
                        put_bytes(&mut out, v);
                    }
                }
                ColumnFilter::Range { lo, hi } => {
                    out.push(2);
                    put_bound(&mut out, lo);
                    put_bound(&mut out, hi);
                }
            }
        }
        out
    }

    /// Decodes [`Self::encode`]'s bytes; any malformation is an error.
    pub fn decode(bytes: &[u8]) -> Result<ClusteringFilter, KeyError> {
        let mut r = Reader { bytes, pos: 0 };
        if r.byte()? != 1 {
            return Err(KeyError::BadTag { tag: 0, offset: 0 });
        }
        let n = r.len(MAX_COLUMNS)?;
        let mut columns = Vec::with_capacity(n);
        for _ in 0..n {
            let offset = r.pos;
            columns.push(match r.byte()? {
                0 => ColumnFilter::Any,
                1 => {
                    let count = r.len(MAX_VALUES)?;
                    let mut values = Vec::with_capacity(count.min(1024));
                    for _ in 0..count {
                        values.push(r.bytes()?);
                    }
                    ColumnFilter::one_of(values)
                }
                2 => ColumnFilter::Range {
                    lo: r.bound()?,
                    hi: r.bound()?,
                },
                tag => return Err(KeyError::BadTag { tag, offset }),
            });
        }
        if r.pos != bytes.len() {
            return Err(KeyError::TrailingBytes {
                extra: bytes.len() - r.pos,
            });
        }
        Ok(ClusteringFilter { columns })
    }
}

fn put_len(out: &mut Vec<u8>, n: usize) {
    out.extend_from_slice(&u32::try_from(n).unwrap_or(u32::MAX).to_le_bytes());
}

fn put_bytes(out: &mut Vec<u8>, b: &[u8]) {
    put_len(out, b.len());
    out.extend_from_slice(b);
}

fn put_bound(out: &mut Vec<u8>, b: &Bound<Vec<u8>>) {
    match b {
        Bound::Unbounded => out.push(0),
        Bound::Included(v) => {
            out.push(1);
            put_bytes(out, v);
        }
        Bound::Excluded(v) => {
            out.push(2);
            put_bytes(out, v);
        }
    }
}

struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8], KeyError> {
        let end = self.pos.checked_add(n).ok_or(KeyError::Truncated {
            offset: self.bytes.len(),
        })?;
        let out = self
            .bytes
            .get(self.pos..end)
            .ok_or(KeyError::Truncated { offset: self.pos })?;
        self.pos = end;
        Ok(out)
    }

    fn byte(&mut self) -> Result<u8, KeyError> {
        Ok(self.take(1)?.first().copied().unwrap_or_default())
    }

    fn len(&mut self, max: usize) -> Result<usize, KeyError> {
        let offset = self.pos;
        let raw: [u8; 4] = self
            .take(4)?
            .try_into()
            .map_err(|_| KeyError::Truncated { offset })?;
        let n = u32::from_le_bytes(raw) as usize;
        if n > max {
            return Err(KeyError::Truncated { offset });
        }
        Ok(n)
    }

    fn bytes(&mut self) -> Result<Vec<u8>, KeyError> {
        let n = self.len(usize::MAX)?;
        Ok(self.take(n)?.to_vec())
    }

    fn bound(&mut self) -> Result<Bound<Vec<u8>>, KeyError> {
        let offset = self.pos;
        Ok(match self.byte()? {
            0 => Bound::Unbounded,
            1 => Bound::Included(self.bytes()?),
            2 => Bound::Excluded(self.bytes()?),
            tag => return Err(KeyError::BadTag { tag, offset }),
        })
    }
}

impl KeySchema {
    fn clustering_order(
        &self,
        column: usize,
    ) -> Result<(&mosaic_types::DataType, Order), KeyError> {
        self.clustering_columns()
            .get(column)
            .map(|c| (&c.ty, c.order))
            .ok_or(KeyError::WrongArity {
                what: "clustering",
                expected: self.clustering_columns().len(),
                actual: column + 1,
            })
    }

    /// The encoded component of `value` as clustering column `column` stores it.
    pub fn encode_clustering_component(
        &self,
        column: usize,
        value: &CqlValue,
    ) -> Result<Vec<u8>, KeyError> {
        let (ty, order) = self.clustering_order(column)?;
        ty.check_value(value)?;
        let mut out = Vec::new();
        encode_component(&mut out, value, order);
        Ok(out)
    }

    /// The filter of clustering column `column` allowing `values` (`=` or `IN`).
    pub fn column_values_filter(
        &self,
        column: usize,
        values: &[CqlValue],
    ) -> Result<ColumnFilter, KeyError> {
        let encoded = values
            .iter()
            .map(|v| self.encode_clustering_component(column, v))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(ColumnFilter::one_of(encoded))
    }

    /// The filter of clustering column `column` between logical bounds (a value and whether
    /// it is inclusive), turned into key order (swapped for a descending column).
    pub fn column_range_filter(
        &self,
        column: usize,
        lower: Option<(&CqlValue, bool)>,
        upper: Option<(&CqlValue, bool)>,
    ) -> Result<ColumnFilter, KeyError> {
        let (_, order) = self.clustering_order(column)?;
        let bound = |b: Option<(&CqlValue, bool)>| -> Result<Bound<Vec<u8>>, KeyError> {
            Ok(match b {
                None => Bound::Unbounded,
                Some((v, true)) => Bound::Included(self.encode_clustering_component(column, v)?),
                Some((v, false)) => Bound::Excluded(self.encode_clustering_component(column, v)?),
            })
        };
        let (lo, hi) = (bound(lower)?, bound(upper)?);
        Ok(match order {
            Order::Asc => ColumnFilter::Range { lo, hi },
            Order::Desc => ColumnFilter::Range { lo: hi, hi: lo },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mosaic_types::CqlType;

    fn schema() -> KeySchema {
        KeySchema::new(
            vec![CqlType::Int],
            vec![(CqlType::Int, Order::Asc), (CqlType::Text, Order::Desc)],
        )
        .expect("schema")
    }

    #[test]
    fn filters_compare_encoded_components_in_logical_order() {
        let s = schema();
        let c0 = |v: i32| {
            s.encode_clustering_component(0, &CqlValue::Int(v))
                .expect("c0")
        };
        let c1 = |v: &str| {
            s.encode_clustering_component(1, &CqlValue::Text(v.into()))
                .expect("c1")
        };
        let ge2 = s
            .column_range_filter(0, Some((&CqlValue::Int(2), true)), None)
            .expect("range");
        assert!(!ge2.matches(&c0(1)) && ge2.matches(&c0(2)) && ge2.matches(&c0(9)));
        // Descending: `> 'b'` logically is still `> 'b'`, whatever the key order.
        let gt_b = s
            .column_range_filter(1, Some((&CqlValue::Text("b".into()), false)), None)
            .expect("range");
        assert!(gt_b.matches(&c1("c")) && !gt_b.matches(&c1("b")) && !gt_b.matches(&c1("a")));
        let f = ClusteringFilter {
            columns: vec![
                s.column_values_filter(0, &[CqlValue::Int(3), CqlValue::Int(1)])
                    .expect("in"),
                gt_b,
            ],
        };
        assert!(f.matches(&[&c0(1), &c1("z")]));
        assert!(!f.matches(&[&c0(2), &c1("z")]));
        assert!(!f.matches(&[&c0(3), &c1("a")]));
        assert!(s
            .column_range_filter(0, Some((&CqlValue::Text("x".into()), true)), None)
            .is_err());
    }

    #[test]
    fn keys_pass_by_their_row_components_and_other_entries_always() {
        let s = schema();
        let prefix = s.partition_prefix(&[CqlValue::Int(1)]).expect("prefix");
        let row = |a: i32, b: &str| {
            s.row_key(&prefix, &[CqlValue::Int(a), CqlValue::Text(b.into())])
                .expect("row")
        };
        let f = ClusteringFilter {
            columns: vec![
                s.column_values_filter(0, &[CqlValue::Int(2)]).expect("in"),
                ColumnFilter::Any,
            ],
        };
        assert_eq!(f.passes(&s, &row(2, "x")), Ok(true));
        assert_eq!(f.passes(&s, &row(3, "x")), Ok(false));
        assert_eq!(f.passes(&s, &s.static_key(&prefix)), Ok(true));
        assert_eq!(f.passes(&s, &s.partition_header_key(&prefix)), Ok(true));
        let r = row(2, "x");
        assert!(f.passes(&s, &r[..r.len() - 2]).is_err());
        // The declared order's spans are the identity permutation's.
        let identity = crate::Permutation::identity(2);
        assert_eq!(s.declared_row_spans(&r), s.row_spans(&r, &identity));
    }

    #[test]
    fn filters_round_trip_and_reject_malformed_bytes() {
        let f = ClusteringFilter {
            columns: vec![
                ColumnFilter::Any,
                ColumnFilter::one_of(vec![vec![3], vec![1, 2], vec![3]]),
                ColumnFilter::Range {
                    lo: Bound::Excluded(vec![0, 0]),
                    hi: Bound::Unbounded,
                },
            ],
        };
        let bytes = f.encode();
        assert_eq!(ClusteringFilter::decode(&bytes), Ok(f));
        for cut in 0..bytes.len() {
            assert!(
                ClusteringFilter::decode(&bytes[..cut]).is_err(),
                "cut {cut}"
            );
        }
        let mut extra = bytes.clone();
        extra.push(0);
        assert!(ClusteringFilter::decode(&extra).is_err());
        // A huge declared length is refused before anything is allocated.
        assert!(ClusteringFilter::decode(&[1, 255, 255, 255, 255]).is_err());
    }

    #[test]
    fn empty_filters_are_recognized() {
        assert!(ColumnFilter::In(vec![]).is_empty());
        assert!(ColumnFilter::Range {
            lo: Bound::Included(vec![2]),
            hi: Bound::Excluded(vec![2])
        }
        .is_empty());
        assert!(!ColumnFilter::Range {
            lo: Bound::Included(vec![2]),
            hi: Bound::Included(vec![2])
        }
        .is_empty());
    }
}
