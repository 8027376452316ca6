//! Secondary indexes as storage sees them: what a node stores for an index, and how a
//! read asks for it.
//!
//! Indexes are node-local, as Cassandra's: each replica indexes the rows it holds, in its
//! own index structure beside the table's, and a query reads every replica set's index
//! for its token range. An index *entry* maps a *term* — the indexed value (a column's
//! value, a collection element, a map key, a map entry, a frozen collection whole) in its
//! native-protocol serialization — to the engine key of the row (or, for a static or
//! partition key column, of the partition) that holds it:
//!
//! ```text
//! entry key   = u32 BE length of term ‖ term ‖ base engine key
//! entry value = a row fragment whose row marker carries the indexed cell's timestamp
//!               (and TTL); a stale entry is deleted with a row deletion at that timestamp
//! ```
//!
//! Base engine keys start with the token, so one term's entries are in token order and a
//! token range of the base table is one range of the index ([`term_range`]).
//!
//! Entries are only ever *added* when a write is applied ([`IndexPlan::entries_for`]): an
//! overwrite, a deletion, an expiry or a compaction may leave an entry whose row no longer
//! holds the term. Such an entry is dropped when the index compacts and the base row
//! proves it stale ([`IndexPlan::proves_stale`]), or deleted when a read meets it; until
//! then it is harmless — a query reads the row an entry points at, the replica drops (and
//! deletes) entries its row contradicts, and the coordinator checks every row against the
//! query's predicates after merging replicas — so the index never needs a read before a
//! write, and repair, hints and read repair, which apply writes like any other, keep it
//! complete.

use mosaic_rows::{Cell, Expiry, Fragment, FragmentKind, KeyEntry, KeyRange, KeySchema, Liveness};
use mosaic_types::Timestamp;

use crate::schema::{ColumnKind, IndexMeta, TableMeta, TargetKind};

/// An index read: the index (by name, in the read's table) and the term looked up.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IndexQuery {
    /// The index's name.
    pub index: String,
    /// The term: a value's serialization, or a map entry's ([`entry_term`]).
    pub term: Vec<u8>,
}

impl IndexQuery {
    /// The query's bytes (as a read tag carries it): u32 BE length of the name, the name,
    /// the term.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(4 + self.index.len() + self.term.len());
        out.extend_from_slice(&(self.index.len() as u32).to_be_bytes());
        out.extend_from_slice(self.index.as_bytes());
        out.extend_from_slice(&self.term);
        out
    }

    /// A query from [`IndexQuery::encode`]'s bytes; `None` if they are not such.
    pub fn decode(bytes: &[u8]) -> Option<IndexQuery> {
        let (len, rest) = bytes.split_first_chunk::<4>()?;
        let len = usize::try_from(u32::from_be_bytes(*len)).ok()?;
        let name = rest.get(..len)?;
        Some(IndexQuery {
            index: String::from_utf8(name.to_vec()).ok()?,
            term: rest.get(len..)?.to_vec(),
        })
    }
}

/// The term of a map entry: u32 BE length of the key, the key, the value.
pub fn entry_term(key: &[u8], value: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(4 + key.len() + value.len());
    out.extend_from_slice(&(key.len() as u32).to_be_bytes());
    out.extend_from_slice(key);
    out.extend_from_slice(value);
    out
}

/// The index key of `term` for the base key `base`.
pub fn entry_key(term: &[u8], base: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(4 + term.len() + base.len());
    out.extend_from_slice(&(term.len() as u32).to_be_bytes());
    out.extend_from_slice(term);
    out.extend_from_slice(base);
    out
}

/// The base key an index key points at, if `key` is one of `term`'s entries.
pub fn base_key<'k>(term: &[u8], key: &'k [u8]) -> Option<&'k [u8]> {
    let (len, rest) = key.split_first_chunk::<4>()?;
    if usize::try_from(u32::from_be_bytes(*len)).ok()? != term.len() {
        return None;
    }
    rest.strip_prefix(term)
}

/// The term and the base key of an index key, if it is one.
pub fn split_entry_key(key: &[u8]) -> Option<(&[u8], &[u8])> {
    let (len, rest) = key.split_first_chunk::<4>()?;
    let len = usize::try_from(u32::from_be_bytes(*len)).ok()?;
    (rest.len() >= len).then(|| rest.split_at(len))
}

/// The range of index keys holding `term`'s entries for the base keys in `base`.
pub fn term_range(term: &[u8], base: &KeyRange) -> KeyRange {
    let start = entry_key(term, &base.start);
    let end = match &base.end {
        Some(end) => entry_key(term, end),
        // Past every base key: the next term length's first key... or the same length's
        // next term; the prefix's successor covers both.
        None => prefix_successor(&entry_key(term, &[])),
    };
    KeyRange {
        start,
        end: Some(end),
    }
}

/// The first key after every key starting with `prefix` (a prefix of only `0xff` bytes has
/// none; an entry key always starts with a length below `0xffff_ffff`).
fn prefix_successor(prefix: &[u8]) -> Vec<u8> {
    let mut out = prefix.to_vec();
    while let Some(last) = out.pop() {
        if last < 0xff {
            out.push(last + 1);
            return out;
        }
    }
    vec![0xff; prefix.len() + 1]
}

/// Where an index hit's rows are: the row the entry names, or (for a static or partition
/// key column) every row of its partition.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HitScope {
    /// The one row.
    Row,
    /// The whole partition.
    Partition,
}

/// One entry to add to an index.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewEntry {
    /// The indexed term.
    pub term: Vec<u8>,
    /// The base key it points at.
    pub base: Vec<u8>,
    /// The indexed value's timestamp.
    pub ts: Timestamp,
    /// Its expiry, if written with a TTL.
    pub expiry: Option<Expiry>,
}

impl NewEntry {
    /// The entry's stored fragment (a row marker at the value's timestamp).
    pub fn fragment(&self) -> Vec<u8> {
        let mut f = Fragment::new(FragmentKind::Row);
        f.liveness = Some(Liveness {
            ts: self.ts,
            expiry: self.expiry,
        });
        f.encode()
    }
}

/// A fragment that deletes a stale entry written at `ts`.
pub fn deletion_fragment(ts: Timestamp, now_secs: i64) -> Vec<u8> {
    let mut f = Fragment::new(FragmentKind::Row);
    f.deletion = Some(mosaic_rows::DeletionTime {
        marked_for_delete_at: ts,
        local_deletion_secs: now_secs,
    });
    f.encode()
}

/// An index of a table, resolved against the table's definition once (per schema) for the
/// write path and the read path.
#[derive(Clone, Debug)]
pub struct IndexPlan {
    /// The index's name.
    pub name: String,
    column: mosaic_rows::ColumnId,
    kind: TargetKind,
    role: ColumnRole,
    /// Whether the column is a non-frozen set, whose elements are their cells' paths.
    set: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ColumnRole {
    /// The `i`-th partition key column.
    Partition(usize),
    /// The `i`-th clustering column.
    Clustering(usize),
    Static,
    Regular,
}

impl IndexPlan {
    /// The plan of `index` on `table`; `None` when its column is gone (a damaged catalog).
    pub fn new(table: &TableMeta, index: &IndexMeta) -> Option<IndexPlan> {
        let column = table.column(&index.target.column)?;
        let role = match column.kind {
            ColumnKind::PartitionKey { position } => ColumnRole::Partition(position),
            ColumnKind::Clustering { position, .. } => ColumnRole::Clustering(position),
            ColumnKind::Static => ColumnRole::Static,
            ColumnKind::Regular => ColumnRole::Regular,
        };
        Some(IndexPlan {
            name: index.name.clone(),
            column: column.id,
            kind: index.target.kind,
            role,
            set: matches!(column.ty, mosaic_types::DataType::Set(_)),
        })
    }

    /// Whether the key an entry points at is a row (clustering or static) whose stored
    /// value shows whether it still holds the term; a partition key column's entry points
    /// at the partition's header instead.
    pub fn points_at_row(&self) -> bool {
        !matches!(self.role, ColumnRole::Partition(_))
    }

    /// What a hit of this index returns.
    pub fn scope(&self) -> HitScope {
        match self.role {
            ColumnRole::Partition(_) | ColumnRole::Static => HitScope::Partition,
            ColumnRole::Clustering(_) | ColumnRole::Regular => HitScope::Row,
        }
    }

    /// The entries a write of `fragment` under `key` adds to this index (none when the
    /// key does not decode under `schema`, or the write holds no live indexed value).
    pub fn entries_for(
        &self,
        schema: &KeySchema,
        key: &[u8],
        fragment: &Fragment,
        out: &mut Vec<NewEntry>,
    ) {
        match self.role {
            ColumnRole::Partition(i) => {
                if !matches!(fragment.kind, FragmentKind::Row | FragmentKind::Static) {
                    return;
                }
                let Some(ts) = live_timestamp(fragment) else {
                    return;
                };
                let Ok(decoded) = schema.decode_key(key) else {
                    return;
                };
                let Ok(len) = schema.partition_prefix_len(key) else {
                    return;
                };
                if let (Some(value), Some(prefix)) = (decoded.partition_key.get(i), key.get(..len))
                {
                    let mut base = prefix.to_vec();
                    base.push(mosaic_rows::key::tag::PARTITION);
                    out.push(NewEntry {
                        term: value.to_cql_bytes(),
                        base,
                        ts,
                        expiry: None,
                    });
                }
            }
            ColumnRole::Clustering(i) => {
                if fragment.kind != FragmentKind::Row {
                    return;
                }
                let Some(ts) = live_timestamp(fragment) else {
                    return;
                };
                let Ok(decoded) = schema.decode_key(key) else {
                    return;
                };
                if let KeyEntry::Row(clustering) = decoded.entry {
                    if let Some(value) = clustering.get(i) {
                        out.push(NewEntry {
                            term: value.to_cql_bytes(),
                            base: key.to_vec(),
                            ts,
                            expiry: None,
                        });
                    }
                }
            }
            ColumnRole::Static | ColumnRole::Regular => {
                let wanted = if self.role == ColumnRole::Static {
                    FragmentKind::Static
                } else {
                    FragmentKind::Row
                };
                if fragment.kind != wanted {
                    return;
                }
                self.cell_terms(fragment, |term, ts, expiry| {
                    out.push(NewEntry {
                        term,
                        base: key.to_vec(),
                        ts,
                        expiry,
                    })
                });
            }
        }
    }

    /// Calls `found` with each live term the indexed column holds in `fragment`, with its
    /// timestamp and expiry.
    fn cell_terms(
        &self,
        fragment: &Fragment,
        mut found: impl FnMut(Vec<u8>, Timestamp, Option<Expiry>),
    ) {
        match self.kind {
            TargetKind::Simple | TargetKind::Full => {
                if let Some(Cell::Live { ts, value, expiry }) = fragment.cells.get(&self.column) {
                    found(value.clone(), *ts, *expiry);
                }
            }
            TargetKind::Keys | TargetKind::Values | TargetKind::Entries => {
                let Some(column) = fragment.complex.get(&self.column) else {
                    return;
                };
                for (path, cell) in &column.cells {
                    let Cell::Live { ts, value, expiry } = cell else {
                        continue;
                    };
                    let term = match self.kind {
                        TargetKind::Keys => path.clone(),
                        TargetKind::Entries => entry_term(path, value),
                        // A set's element is its path; a list's and a map's value is the
                        // cell's.
                        _ if self.set => path.clone(),
                        _ => value.clone(),
                    };
                    found(term, *ts, *expiry);
                }
            }
        }
    }
}

impl IndexPlan {
    /// Whether `row` — the stored, merged fragment at an entry's base key on this replica
    /// — proves that the entry version of `term` written at `ts` is stale for good: what
    /// the row keeps shadows the write that added it (a row deletion, the column's
    /// deletion, or a newer cell or tombstone in the cell the term came from), so no write
    /// still on its way can make the row hold that version again. A newer write of the
    /// same term added a newer version of the entry, which this does not judge. When the
    /// term's cell cannot be told (a list's or a map's value, found by value, not path) or
    /// the row lacks it, only deletions prove it: the entry stays for a read to judge.
    pub fn proves_stale(&self, row: &Fragment, term: &[u8], ts: Timestamp) -> bool {
        if row.deletion.is_some_and(|d| d.deletes(ts)) {
            return true;
        }
        let (ColumnRole::Static | ColumnRole::Regular) = self.role else {
            // A key column's term is the key itself: only a deletion ends it.
            return false;
        };
        // A cell outranks the entry's write (a live cell at `ts` holding `term`) when it is
        // newer, or as old and a tombstone; an equal live one may be that very write.
        let outranks = |cell: &Cell| match cell {
            Cell::Live { ts: t, .. } => *t > ts,
            Cell::Tombstone { ts: t, .. } => *t >= ts,
        };
        match self.kind {
            TargetKind::Simple | TargetKind::Full => {
                row.cells.get(&self.column).is_some_and(outranks)
            }
            TargetKind::Keys | TargetKind::Values | TargetKind::Entries => {
                let Some(column) = row.complex.get(&self.column) else {
                    return false;
                };
                if column.deletion.is_some_and(|d| d.deletes(ts)) {
                    return true;
                }
                let path = match self.kind {
                    TargetKind::Keys => Some(term),
                    TargetKind::Entries => entry_key_of(term),
                    _ if self.set => Some(term),
                    _ => None,
                };
                path.and_then(|p| column.cells.get(p)).is_some_and(outranks)
            }
        }
    }
}

/// The map key of an entry term ([`entry_term`]).
fn entry_key_of(term: &[u8]) -> Option<&[u8]> {
    let (len, rest) = term.split_first_chunk::<4>()?;
    rest.get(..usize::try_from(u32::from_be_bytes(*len)).ok()?)
}

/// Cassandra refuses to index a value of this many bytes or more (`CassandraIndex`'s
/// `validateIndexedValue`: below the largest unsigned short).
pub const TERM_BYTES_LIMIT: usize = 65_535;

/// Cassandra's refusal of a write of `fragment` under `key` to `table` that would give one
/// of its indexes a term of [`TERM_BYTES_LIMIT`] bytes or more.
pub fn check_term_sizes(
    table: &TableMeta,
    schema: &KeySchema,
    key: &[u8],
    fragment: &Fragment,
) -> Result<(), String> {
    let mut entries = Vec::new();
    for index in table.indexes.values() {
        let Some(plan) = IndexPlan::new(table, index) else {
            continue;
        };
        entries.clear();
        plan.entries_for(schema, key, fragment, &mut entries);
        if let Some(e) = entries.iter().find(|e| e.term.len() >= TERM_BYTES_LIMIT) {
            return Err(format!(
                "Cannot index value of size {} for index {} on {}.{}({}) (maximum allowed size={TERM_BYTES_LIMIT})",
                e.term.len(),
                index.name,
                table.keyspace,
                table.name,
                index.target.column
            ));
        }
    }
    Ok(())
}

/// The newest timestamp of a fragment's live content (row marker or cells), if it has any.
fn live_timestamp(fragment: &Fragment) -> Option<Timestamp> {
    let marker = fragment.liveness.map(|l| l.ts);
    let cells = fragment.cells.values().filter_map(|c| match c {
        Cell::Live { ts, .. } => Some(*ts),
        Cell::Tombstone { .. } => None,
    });
    let elements = fragment
        .complex
        .values()
        .flat_map(|c| c.cells.values())
        .filter_map(|c| match c {
            Cell::Live { ts, .. } => Some(*ts),
            Cell::Tombstone { .. } => None,
        });
    marker.into_iter().chain(cells).chain(elements).max()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn queries_round_trip_and_garbage_never_panics(
            index in "[a-zA-Z0-9_]{0,20}",
            term in proptest::collection::vec(any::<u8>(), 0..40),
            garbage in proptest::collection::vec(any::<u8>(), 0..64),
        ) {
            let q = IndexQuery { index, term };
            prop_assert_eq!(IndexQuery::decode(&q.encode()), Some(q));
            let _ = IndexQuery::decode(&garbage);
        }

        #[test]
        fn a_terms_entries_are_exactly_its_range(
            term in proptest::collection::vec(any::<u8>(), 0..8),
            other in proptest::collection::vec(any::<u8>(), 0..8),
            base in proptest::collection::vec(any::<u8>(), 0..16),
            start in proptest::collection::vec(any::<u8>(), 0..16),
        ) {
            let key = entry_key(&term, &base);
            prop_assert_eq!(base_key(&term, &key), Some(base.as_slice()));
            let all = KeyRange { start: Vec::new(), end: None };
            prop_assert!(term_range(&term, &all).contains(&key));
            let from = KeyRange { start: start.clone(), end: None };
            prop_assert_eq!(term_range(&term, &from).contains(&key), base >= start);
            if other != term {
                prop_assert!(!term_range(&other, &all).contains(&key));
                prop_assert_eq!(base_key(&other, &key), None);
            }
        }
    }
}
