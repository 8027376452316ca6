//! Engine keys: how a table's partitions, rows and deletions map onto sorted byte keys.
//!
//! Every key of a partition starts with the *partition prefix*: the token as 8 sign-flipped
//! big-endian bytes, then each partition key component in its order-preserving encoding
//! ([`crate::component`]). Partitions therefore sort by token, as Cassandra's ring does,
//! and a token range is a key range. One tag byte follows the prefix:
//!
//! | tag | entry | sorts |
//! |---|---|---|
//! | `0x00` | partition header (partition deletion) | first |
//! | `0x01` | range tombstone, then its start and end bounds | by start bound |
//! | `0x02` | static row | before every clustering row |
//! | `0x03`–`0x06` | clustering rows and bounds (below) | in clustering order |
//!
//! The clustering part is a sequence of `0x04 ‖ component` (each component inverted for a
//! descending column) ended by `0x05` for a row. A *bound* on a clustering prefix ends with
//! `0x03` (sorts before every row having that prefix: an inclusive start or exclusive end)
//! or `0x06` (sorts after them: an inclusive end or exclusive start), so a bound key is
//! directly a limit of an engine range, and a row is inside a range tombstone exactly when
//! its clustering bytes sort between the tombstone's two bound encodings.
//!
//! Range tombstones do not live among the rows but in their own region before the static
//! row, keyed by their bounds. A read of any clustering slice therefore reads the short
//! "head" of the partition (header, range tombstones, static row) plus the slice, and sees
//! every tombstone that may cover it, without the backward seeks Cassandra needs to find a
//! tombstone opened before the slice. See `docs/format-rows.md` for the bytes.

use std::ops::Bound;

use mosaic_types::{compose_partition_key, token_of, CqlType, CqlValue, DataType, Token};

use crate::component::{decode_component_of, encode_component, Order};
use crate::error::KeyError;

/// Tag bytes after the partition prefix and inside the clustering part.
pub mod tag {
    /// The partition header: partition-level deletion.
    pub const PARTITION: u8 = 0x00;
    /// A range tombstone: start bound, end bound.
    pub const RANGE_TOMBSTONE: u8 = 0x01;
    /// The static row.
    pub const STATIC: u8 = 0x02;
    /// End of a bound that sorts before every row with its prefix.
    pub const BEFORE: u8 = 0x03;
    /// A clustering component follows.
    pub const COMPONENT: u8 = 0x04;
    /// End of a row's clustering.
    pub const ROW: u8 = 0x05;
    /// End of a bound that sorts after every row with its prefix.
    pub const AFTER: u8 = 0x06;
    /// Greater than every tag: `prefix ‖ PARTITION_END` is past the whole partition.
    pub const PARTITION_END: u8 = 0x07;
}

/// Bytes of an encoded token.
pub const TOKEN_LEN: usize = 8;

const SIGN64: u64 = 1 << 63;

/// A token as 8 big-endian bytes with the sign bit flipped, so byte order is token order.
pub fn encode_token(token: Token) -> [u8; TOKEN_LEN] {
    ((token.0 as u64) ^ SIGN64).to_be_bytes()
}

/// The token at the front of a key.
pub fn decode_token(key: &[u8]) -> Result<Token, KeyError> {
    let bytes: [u8; TOKEN_LEN] = key
        .get(..TOKEN_LEN)
        .and_then(|b| b.try_into().ok())
        .ok_or(KeyError::Truncated { offset: key.len() })?;
    Ok(Token((u64::from_be_bytes(bytes) ^ SIGN64) as i64))
}

/// A clustering column's type and direction.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ClusteringColumn {
    /// The column's type: native, or a frozen collection, tuple or user-defined type.
    pub ty: DataType,
    /// Its clustering order.
    pub order: Order,
}

/// The key columns of a table: what the row layer needs to build and decode its keys.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeySchema {
    partition: Vec<DataType>,
    clustering: Vec<ClusteringColumn>,
}

/// The first bytes of every key of one partition: encoded token and partition key.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PartitionPrefix {
    token: Token,
    bytes: Vec<u8>,
}

impl PartitionPrefix {
    /// The partition's token.
    pub fn token(&self) -> Token {
        self.token
    }

    /// The encoded prefix.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes
    }

    fn key_with(&self, tail: &[u8]) -> Vec<u8> {
        let mut key = Vec::with_capacity(self.bytes.len() + tail.len());
        key.extend_from_slice(&self.bytes);
        key.extend_from_slice(tail);
        key
    }
}

/// Which side of the rows sharing its prefix a bound falls on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BoundSide {
    /// Before every row with the prefix (an inclusive start or an exclusive end).
    Before,
    /// After every row with the prefix (an inclusive end or an exclusive start).
    After,
}

/// A position between clustering rows: a clustering prefix and a side (Cassandra's
/// `ClusteringBound`). The empty prefix before is the start of the partition's rows, the
/// empty prefix after is their end.
#[derive(Clone, Debug, PartialEq)]
pub struct ClusteringBound {
    /// Values of the first clustering columns (at most all of them).
    pub prefix: Vec<CqlValue>,
    /// Which side of the rows with that prefix.
    pub side: BoundSide,
}

impl ClusteringBound {
    /// Starts at the first row with `prefix`.
    pub fn inclusive_start(prefix: Vec<CqlValue>) -> Self {
        ClusteringBound {
            prefix,
            side: BoundSide::Before,
        }
    }

    /// Starts after the last row with `prefix`.
    pub fn exclusive_start(prefix: Vec<CqlValue>) -> Self {
        ClusteringBound {
            prefix,
            side: BoundSide::After,
        }
    }

    /// Ends after the last row with `prefix`.
    pub fn inclusive_end(prefix: Vec<CqlValue>) -> Self {
        ClusteringBound {
            prefix,
            side: BoundSide::After,
        }
    }

    /// Ends before the first row with `prefix`.
    pub fn exclusive_end(prefix: Vec<CqlValue>) -> Self {
        ClusteringBound {
            prefix,
            side: BoundSide::Before,
        }
    }

    /// Before every row.
    pub fn bottom() -> Self {
        Self::inclusive_start(Vec::new())
    }

    /// After every row.
    pub fn top() -> Self {
        Self::inclusive_end(Vec::new())
    }
}

/// A comparison of the last value of a clustering prefix, the earlier ones being equalities
/// (`c1 = a AND c2 > b`). The operators are logical: on a descending column `>` selects keys
/// that sort *before* the value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SliceOp {
    /// `=` (every value of the prefix is an equality).
    Eq,
    /// `<`.
    Lt,
    /// `<=`.
    Le,
    /// `>`.
    Gt,
    /// `>=`.
    Ge,
}

/// A half-open range of engine keys, `[start, end)`; `end: None` is unbounded.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct KeyRange {
    /// The first key in the range (the empty key is the start of the key space).
    pub start: Vec<u8>,
    /// The first key past the range, if any.
    pub end: Option<Vec<u8>>,
}

impl KeyRange {
    /// A range holding no key.
    pub fn empty() -> Self {
        KeyRange {
            start: Vec::new(),
            end: Some(Vec::new()),
        }
    }

    /// Whether `key` is in the range.
    pub fn contains(&self, key: &[u8]) -> bool {
        key >= self.start.as_slice() && self.end.as_deref().is_none_or(|end| key < end)
    }

    /// Whether the range holds no key.
    pub fn is_empty(&self) -> bool {
        self.end
            .as_deref()
            .is_some_and(|end| end <= self.start.as_slice())
    }

    fn new(start: Vec<u8>, end: Option<Vec<u8>>) -> Self {
        let range = KeyRange { start, end };
        if range.is_empty() {
            KeyRange::empty()
        } else {
            range
        }
    }
}

/// What a key addresses, decoded.
#[derive(Clone, Debug, PartialEq)]
pub enum KeyEntry {
    /// The partition header (partition deletion).
    PartitionHeader,
    /// A range tombstone covering the rows between two bounds.
    RangeTombstone {
        /// Where the deletion starts.
        start: ClusteringBound,
        /// Where it ends.
        end: ClusteringBound,
    },
    /// The static row.
    Static,
    /// A clustering row (with one value per clustering column).
    Row(Vec<CqlValue>),
    /// A bound used as a range limit (never holds data).
    Bound(ClusteringBound),
    /// The key just past the partition (a range limit, never holds data).
    PartitionEnd,
}

/// A decoded engine key.
#[derive(Clone, Debug, PartialEq)]
pub struct DecodedKey {
    /// The partition's token.
    pub token: Token,
    /// The partition key values.
    pub partition_key: Vec<CqlValue>,
    /// What within the partition the key addresses.
    pub entry: KeyEntry,
}

/// Byte positions found while decoding a key, for callers that compare encoded parts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct KeySpans {
    /// Length of the partition prefix.
    pub partition_len: usize,
    /// For a range tombstone, where its end bound starts.
    pub tombstone_end_at: Option<usize>,
}

impl KeySchema {
    /// A schema with the given native partition key types (at least one) and clustering
    /// columns.
    pub fn new(
        partition: Vec<CqlType>,
        clustering: Vec<(CqlType, Order)>,
    ) -> Result<KeySchema, KeyError> {
        KeySchema::with_types(
            partition.into_iter().map(DataType::Native).collect(),
            clustering
                .into_iter()
                .map(|(ty, order)| (DataType::Native(ty), order))
                .collect(),
        )
    }

    /// A schema with the given partition key types (at least one) and clustering columns,
    /// each native or frozen (a collection, tuple or user-defined type as one value).
    pub fn with_types(
        partition: Vec<DataType>,
        clustering: Vec<(DataType, Order)>,
    ) -> Result<KeySchema, KeyError> {
        if partition.is_empty() {
            return Err(KeyError::WrongArity {
                what: "partition key",
                expected: 1,
                actual: 0,
            });
        }
        Ok(KeySchema {
            partition,
            clustering: clustering
                .into_iter()
                .map(|(ty, order)| ClusteringColumn { ty, order })
                .collect(),
        })
    }

    /// The partition key column types.
    pub fn partition_types(&self) -> &[DataType] {
        &self.partition
    }

    /// The clustering columns.
    pub fn clustering_columns(&self) -> &[ClusteringColumn] {
        &self.clustering
    }

    fn check_partition_values(&self, values: &[CqlValue]) -> Result<(), KeyError> {
        if values.len() != self.partition.len() {
            return Err(KeyError::WrongArity {
                what: "partition key",
                expected: self.partition.len(),
                actual: values.len(),
            });
        }
        for (value, ty) in values.iter().zip(&self.partition) {
            ty.check_value(value)?;
        }
        Ok(())
    }

    /// The token of a partition key, as Cassandra computes it from the values'
    /// native-protocol serializations.
    pub fn token_of(&self, partition_key: &[CqlValue]) -> Result<Token, KeyError> {
        self.check_partition_values(partition_key)?;
        let serialized: Vec<Vec<u8>> = partition_key.iter().map(CqlValue::to_cql_bytes).collect();
        let parts: Vec<&[u8]> = serialized.iter().map(Vec::as_slice).collect();
        if parts.len() > 1 && parts.iter().any(|p| p.len() > usize::from(u16::MAX)) {
            let len = parts.iter().map(|p| p.len() + 3).sum();
            return Err(KeyError::PartitionKeyTooLong { len });
        }
        let composed = compose_partition_key(&parts);
        if composed.len() > usize::from(u16::MAX) {
            return Err(KeyError::PartitionKeyTooLong {
                len: composed.len(),
            });
        }
        Ok(token_of(&composed))
    }

    /// The partition prefix of a partition key, its token computed with [`Self::token_of`].
    pub fn partition_prefix(
        &self,
        partition_key: &[CqlValue],
    ) -> Result<PartitionPrefix, KeyError> {
        let token = self.token_of(partition_key)?;
        self.partition_prefix_with_token(token, partition_key)
    }

    /// The partition prefix of a partition key whose token the caller already knows.
    pub fn partition_prefix_with_token(
        &self,
        token: Token,
        partition_key: &[CqlValue],
    ) -> Result<PartitionPrefix, KeyError> {
        self.check_partition_values(partition_key)?;
        let mut bytes = encode_token(token).to_vec();
        for value in partition_key {
            encode_component(&mut bytes, value, Order::Asc);
        }
        Ok(PartitionPrefix { token, bytes })
    }

    /// Appends `0x04 ‖ component` for each value of a clustering prefix.
    fn encode_clustering(&self, out: &mut Vec<u8>, values: &[CqlValue]) -> Result<(), KeyError> {
        if values.len() > self.clustering.len() {
            return Err(KeyError::WrongArity {
                what: "clustering",
                expected: self.clustering.len(),
                actual: values.len(),
            });
        }
        for (value, column) in values.iter().zip(&self.clustering) {
            column.ty.check_value(value)?;
            out.push(tag::COMPONENT);
            encode_component(out, value, column.order);
        }
        Ok(())
    }

    /// The encoding of a bound, as it follows the partition prefix.
    pub fn encode_bound(&self, bound: &ClusteringBound) -> Result<Vec<u8>, KeyError> {
        let mut out = Vec::new();
        self.encode_clustering(&mut out, &bound.prefix)?;
        out.push(match bound.side {
            BoundSide::Before => tag::BEFORE,
            BoundSide::After => tag::AFTER,
        });
        Ok(out)
    }

    /// The key of the partition header (where partition deletions are stored).
    pub fn partition_header_key(&self, partition: &PartitionPrefix) -> Vec<u8> {
        partition.key_with(&[tag::PARTITION])
    }

    /// The key of the static row.
    pub fn static_key(&self, partition: &PartitionPrefix) -> Vec<u8> {
        partition.key_with(&[tag::STATIC])
    }

    /// The key of a clustering row (one value per clustering column; none for a table
    /// without clustering columns).
    pub fn row_key(
        &self,
        partition: &PartitionPrefix,
        clustering: &[CqlValue],
    ) -> Result<Vec<u8>, KeyError> {
        if clustering.len() != self.clustering.len() {
            return Err(KeyError::WrongArity {
                what: "clustering",
                expected: self.clustering.len(),
                actual: clustering.len(),
            });
        }
        let mut key = partition.bytes.clone();
        self.encode_clustering(&mut key, clustering)?;
        key.push(tag::ROW);
        Ok(key)
    }

    /// The key of a range tombstone deleting the rows between `start` and `end` (which must
    /// sort before `end`).
    pub fn range_tombstone_key(
        &self,
        partition: &PartitionPrefix,
        start: &ClusteringBound,
        end: &ClusteringBound,
    ) -> Result<Vec<u8>, KeyError> {
        let start = self.encode_bound(start)?;
        let end = self.encode_bound(end)?;
        if start >= end {
            return Err(KeyError::InvertedBounds);
        }
        let mut key = partition.key_with(&[tag::RANGE_TOMBSTONE]);
        key.extend_from_slice(&start);
        key.extend_from_slice(&end);
        Ok(key)
    }

    /// The key of a bound, for use as a range limit.
    pub fn bound_key(
        &self,
        partition: &PartitionPrefix,
        bound: &ClusteringBound,
    ) -> Result<Vec<u8>, KeyError> {
        Ok(partition.key_with(&self.encode_bound(bound)?))
    }

    /// Every key of the partition.
    pub fn partition_range(&self, partition: &PartitionPrefix) -> KeyRange {
        KeyRange::new(
            partition.bytes.clone(),
            Some(partition.key_with(&[tag::PARTITION_END])),
        )
    }

    /// The head of the partition: its header, range tombstones and static row. A slice
    /// read reads this range and the slice's.
    pub fn partition_head_range(&self, partition: &PartitionPrefix) -> KeyRange {
        KeyRange::new(
            partition.bytes.clone(),
            Some(partition.key_with(&[tag::BEFORE])),
        )
    }

    /// The head range ([`Self::partition_head_range`]) of the partition a stored key
    /// belongs to.
    pub fn head_range_of_key(&self, key: &[u8]) -> Result<KeyRange, KeyError> {
        let len = self.partition_prefix_len(key)?;
        let prefix = key.get(..len).unwrap_or_default().to_vec();
        let mut end = prefix.clone();
        end.push(tag::BEFORE);
        Ok(KeyRange::new(prefix, Some(end)))
    }

    /// Every clustering row of the partition.
    pub fn rows_range(&self, partition: &PartitionPrefix) -> KeyRange {
        KeyRange::new(
            partition.key_with(&[tag::BEFORE]),
            Some(partition.key_with(&[tag::PARTITION_END])),
        )
    }

    /// The rows between two bounds, in key order.
    pub fn clustering_range(
        &self,
        partition: &PartitionPrefix,
        lower: &ClusteringBound,
        upper: &ClusteringBound,
    ) -> Result<KeyRange, KeyError> {
        Ok(KeyRange::new(
            self.bound_key(partition, lower)?,
            Some(self.bound_key(partition, upper)?),
        ))
    }

    /// The rows selected by `prefix` and `op`: for `Eq` every value is an equality; for the
    /// other operators the last value is compared with `op` (in the column's logical order,
    /// whatever its clustering order) and the earlier ones are equalities.
    pub fn clustering_slice(
        &self,
        partition: &PartitionPrefix,
        prefix: &[CqlValue],
        op: SliceOp,
    ) -> Result<KeyRange, KeyError> {
        let (lower, upper) = self.slice_bounds(prefix, op)?;
        self.clustering_range(partition, &lower, &upper)
    }

    /// The bounds, in key order, of the rows selected by `prefix` and `op` (see
    /// [`Self::clustering_slice`]): a range limit for reads, or the start and end of the
    /// range tombstone a `DELETE` with that condition writes.
    pub fn slice_bounds(
        &self,
        prefix: &[CqlValue],
        op: SliceOp,
    ) -> Result<(ClusteringBound, ClusteringBound), KeyError> {
        if prefix.len() > self.clustering.len() {
            return Err(KeyError::WrongArity {
                what: "clustering",
                expected: self.clustering.len(),
                actual: prefix.len(),
            });
        }
        let whole = prefix.to_vec();
        let Some((_, equalities)) = prefix.split_last() else {
            return match op {
                SliceOp::Eq => Ok((ClusteringBound::bottom(), ClusteringBound::top())),
                _ => Err(KeyError::EmptySlicePrefix),
            };
        };
        let order = self
            .clustering
            .get(equalities.len())
            .map_or(Order::Asc, |c| c.order);
        // In key order a descending column's `>` is a `<`.
        let key_op = match (order, op) {
            (Order::Asc, op) | (Order::Desc, op @ SliceOp::Eq) => op,
            (Order::Desc, SliceOp::Lt) => SliceOp::Gt,
            (Order::Desc, SliceOp::Le) => SliceOp::Ge,
            (Order::Desc, SliceOp::Gt) => SliceOp::Lt,
            (Order::Desc, SliceOp::Ge) => SliceOp::Le,
        };
        let eq = equalities.to_vec();
        Ok(match key_op {
            SliceOp::Eq => (
                ClusteringBound::inclusive_start(whole.clone()),
                ClusteringBound::inclusive_end(whole),
            ),
            SliceOp::Gt => (
                ClusteringBound::exclusive_start(whole),
                ClusteringBound::inclusive_end(eq),
            ),
            SliceOp::Ge => (
                ClusteringBound::inclusive_start(whole),
                ClusteringBound::inclusive_end(eq),
            ),
            SliceOp::Lt => (
                ClusteringBound::inclusive_start(eq),
                ClusteringBound::exclusive_end(whole),
            ),
            SliceOp::Le => (
                ClusteringBound::inclusive_start(eq),
                ClusteringBound::inclusive_end(whole),
            ),
        })
    }

    /// Decodes a key.
    pub fn decode_key(&self, key: &[u8]) -> Result<DecodedKey, KeyError> {
        self.decode_key_spans(key).map(|(decoded, _)| decoded)
    }

    /// Length of the partition prefix at the front of `key`.
    pub fn partition_prefix_len(&self, key: &[u8]) -> Result<usize, KeyError> {
        let mut pos = TOKEN_LEN;
        decode_token(key)?;
        for ty in &self.partition {
            decode_component_of(key, &mut pos, ty, Order::Asc)?;
        }
        Ok(pos)
    }

    pub(crate) fn decode_key_spans(&self, key: &[u8]) -> Result<(DecodedKey, KeySpans), KeyError> {
        let token = decode_token(key)?;
        let mut pos = TOKEN_LEN;
        let mut partition_key = Vec::with_capacity(self.partition.len());
        for ty in &self.partition {
            partition_key.push(decode_component_of(key, &mut pos, ty, Order::Asc)?);
        }
        let partition_len = pos;
        let mut tombstone_end_at = None;
        let tag_at = pos;
        let tag = *key.get(pos).ok_or(KeyError::Truncated { offset: pos })?;
        let entry = match tag {
            tag::PARTITION => {
                pos += 1;
                KeyEntry::PartitionHeader
            }
            tag::STATIC => {
                pos += 1;
                KeyEntry::Static
            }
            tag::PARTITION_END => {
                pos += 1;
                KeyEntry::PartitionEnd
            }
            tag::RANGE_TOMBSTONE => {
                pos += 1;
                let start = match self.decode_clustering(key, &mut pos)? {
                    KeyEntry::Bound(b) => b,
                    _ => return Err(KeyError::BadTag { tag, offset: pos }),
                };
                let end_at = pos;
                tombstone_end_at = Some(end_at);
                let end = match self.decode_clustering(key, &mut pos)? {
                    KeyEntry::Bound(b) => b,
                    _ => return Err(KeyError::BadTag { tag, offset: pos }),
                };
                let start_bytes = key.get(tag_at + 1..end_at).unwrap_or_default();
                let end_bytes = key.get(end_at..pos).unwrap_or_default();
                if start_bytes >= end_bytes {
                    return Err(KeyError::InvertedBounds);
                }
                KeyEntry::RangeTombstone { start, end }
            }
            _ => self.decode_clustering(key, &mut pos)?,
        };
        if pos != key.len() {
            return Err(KeyError::TrailingBytes {
                extra: key.len() - pos,
            });
        }
        Ok((
            DecodedKey {
                token,
                partition_key,
                entry,
            },
            KeySpans {
                partition_len,
                tombstone_end_at,
            },
        ))
    }

    /// Decodes a clustering part (components, then a row or bound terminator).
    fn decode_clustering(&self, key: &[u8], pos: &mut usize) -> Result<KeyEntry, KeyError> {
        let mut values = Vec::new();
        loop {
            let offset = *pos;
            let tag = *key.get(offset).ok_or(KeyError::Truncated { offset })?;
            *pos += 1;
            match tag {
                tag::COMPONENT => {
                    let column = self
                        .clustering
                        .get(values.len())
                        .ok_or(KeyError::BadTag { tag, offset })?;
                    values.push(decode_component_of(key, pos, &column.ty, column.order)?);
                }
                tag::ROW if values.len() == self.clustering.len() => {
                    return Ok(KeyEntry::Row(values))
                }
                tag::BEFORE => {
                    return Ok(KeyEntry::Bound(ClusteringBound::inclusive_start(values)))
                }
                tag::AFTER => return Ok(KeyEntry::Bound(ClusteringBound::inclusive_end(values))),
                _ => return Err(KeyError::BadTag { tag, offset }),
            }
        }
    }
}

/// The keys of the tokens between two bounds.
pub fn token_range(start: Bound<Token>, end: Bound<Token>) -> KeyRange {
    let start_key = match start {
        Bound::Unbounded => Vec::new(),
        Bound::Included(t) => encode_token(t).to_vec(),
        Bound::Excluded(t) => match t.0.checked_add(1) {
            Some(next) => encode_token(Token(next)).to_vec(),
            None => return KeyRange::empty(),
        },
    };
    let end_key = match end {
        Bound::Unbounded => None,
        Bound::Excluded(t) => Some(encode_token(t).to_vec()),
        Bound::Included(t) => {
            t.0.checked_add(1)
                .map(|next| encode_token(Token(next)).to_vec())
        }
    };
    KeyRange::new(start_key, end_key)
}

/// The keys of a Cassandra token range `(left, right]`, which wraps around the ring when
/// `left >= right`: `(t, t]` is the whole ring and `right = Token::MIN` means "to the end".
pub fn ring_range(left: Token, right: Token) -> Vec<KeyRange> {
    if left == right {
        return vec![token_range(Bound::Unbounded, Bound::Unbounded)];
    }
    if right == Token::MIN {
        return vec![token_range(Bound::Excluded(left), Bound::Unbounded)];
    }
    if left < right {
        return vec![token_range(Bound::Excluded(left), Bound::Included(right))];
    }
    [
        token_range(Bound::Unbounded, Bound::Included(right)),
        token_range(Bound::Excluded(left), Bound::Unbounded),
    ]
    .into_iter()
    .filter(|r| !r.is_empty())
    .collect()
}

#[cfg(test)]
#[path = "key_tests.rs"]
mod tests;
