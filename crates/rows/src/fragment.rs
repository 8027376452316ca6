//! Fragments: what the row layer stores under one engine key, and their bytes.
//!
//! A fragment is a partial view of one row (or of a partition header, or of a range
//! tombstone): an optional row marker ([`Liveness`], Cassandra's primary-key liveness), an
//! optional deletion, and cells by column id. Writes store small fragments as engine
//! `Merge` entries; reads and compaction combine them with [`crate::merge`]. One struct
//! serves every key kind, so the merge is the same everywhere; [`FragmentKind`] records
//! which kind of key the fragment belongs to, which compaction needs to know what it may
//! purge without seeing the key schema.
//!
//! The encoding (format version 1) is compact: timestamps are stored as unsigned LEB128
//! deltas from the fragment's smallest timestamp (cells of one write share a timestamp,
//! so most deltas are one byte), column ids as gaps. Decoding never panics and accepts only
//! the canonical encoding, so `encode(decode(b)) == b` for every accepted `b`. The bytes
//! are documented in `docs/format-rows.md`.

use std::collections::BTreeMap;

use mosaic_types::Timestamp;

use crate::error::FragmentError;

/// A column of a table, numbered by the schema (ids are never reused).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ColumnId(pub u32);

/// When a value written with a TTL expires.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Expiry {
    /// The TTL it was written with, in seconds (never 0: TTL 0 means no TTL in CQL).
    pub ttl_secs: u32,
    /// Local time (seconds since the epoch) from which it is expired.
    pub local_expiration_secs: i64,
}

impl Expiry {
    /// Whether the value is expired at local time `now_secs` (Cassandra:
    /// live while `now < localExpirationTime`).
    pub fn is_expired(&self, now_secs: i64) -> bool {
        now_secs >= self.local_expiration_secs
    }
}

/// The row marker: the row exists (as of `ts`) even if all its cells are null. Written by
/// `INSERT`, not by `UPDATE`, as in Cassandra.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Liveness {
    /// Write timestamp of the marker.
    pub ts: Timestamp,
    /// Set when the row was inserted with a TTL.
    pub expiry: Option<Expiry>,
}

impl Liveness {
    /// Whether the marker makes the row live at `now_secs`.
    pub fn is_live(&self, now_secs: i64) -> bool {
        self.expiry.is_none_or(|e| !e.is_expired(now_secs))
    }
}

/// A deletion: everything written at or before `marked_for_delete_at` is deleted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DeletionTime {
    /// Write timestamp of the deletion; it shadows data with timestamps `<=` it.
    pub marked_for_delete_at: Timestamp,
    /// Local time (seconds) when the deletion was written, for garbage collection.
    pub local_deletion_secs: i64,
}

impl DeletionTime {
    /// Whether data written at `ts` is shadowed by this deletion.
    pub fn deletes(&self, ts: Timestamp) -> bool {
        ts <= self.marked_for_delete_at
    }
}

/// One column's value in a fragment.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Cell {
    /// A value (in its native-protocol serialization).
    Live {
        /// Write timestamp.
        ts: Timestamp,
        /// The serialized value.
        value: Vec<u8>,
        /// Set when written with a TTL.
        expiry: Option<Expiry>,
    },
    /// A deleted (or nulled) column.
    Tombstone {
        /// Write timestamp of the deletion.
        ts: Timestamp,
        /// Local time (seconds) of the deletion, for garbage collection.
        local_deletion_secs: i64,
    },
}

impl Cell {
    /// The cell's write timestamp.
    pub fn ts(&self) -> Timestamp {
        match self {
            Cell::Live { ts, .. } | Cell::Tombstone { ts, .. } => *ts,
        }
    }

    /// Whether the cell holds a value at local time `now_secs`.
    pub fn is_live(&self, now_secs: i64) -> bool {
        match self {
            Cell::Live { expiry, .. } => expiry.is_none_or(|e| !e.is_expired(now_secs)),
            Cell::Tombstone { .. } => false,
        }
    }
}

/// Which kind of key a fragment is stored under.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum FragmentKind {
    /// A clustering row (or the single row of a table without clustering columns).
    Row = 0,
    /// The static row.
    Static = 1,
    /// The partition header: only a deletion.
    Partition = 2,
    /// A range tombstone: only a deletion.
    RangeTombstone = 3,
}

impl FragmentKind {
    fn from_u8(b: u8) -> Option<FragmentKind> {
        match b {
            0 => Some(FragmentKind::Row),
            1 => Some(FragmentKind::Static),
            2 => Some(FragmentKind::Partition),
            3 => Some(FragmentKind::RangeTombstone),
            _ => None,
        }
    }

    /// A short name, for errors.
    pub fn name(self) -> &'static str {
        match self {
            FragmentKind::Row => "row",
            FragmentKind::Static => "static",
            FragmentKind::Partition => "partition",
            FragmentKind::RangeTombstone => "range tombstone",
        }
    }
}

/// A multi-cell (non-frozen collection or UDT) column of one row: an optional column-wide
/// deletion (written by an overwrite `c = …` or a `DELETE c`, it shadows every element
/// written at or before it) and one cell per element, keyed by the element's *path* (Cassandra's
/// `CellPath`): for a set the element, for a map the key, for a list a time-based id, each
/// in an order-preserving encoding chosen by the writer so that bytewise path order is the
/// collection's order. The row layer only compares paths as bytes.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct ComplexColumn {
    /// Deletes every element written at or before it.
    pub deletion: Option<DeletionTime>,
    /// Elements by path.
    pub cells: BTreeMap<Vec<u8>, Cell>,
}

impl ComplexColumn {
    /// Whether the column holds nothing (no deletion, no element).
    pub fn is_empty(&self) -> bool {
        self.deletion.is_none() && self.cells.is_empty()
    }
}

/// What one engine entry of the row layer holds.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Fragment {
    /// The kind of key the fragment belongs to.
    pub kind: FragmentKind,
    /// The row marker, if the fragment has one.
    pub liveness: Option<Liveness>,
    /// A deletion of the whole row (or partition, or range).
    pub deletion: Option<DeletionTime>,
    /// Cells by column.
    pub cells: BTreeMap<ColumnId, Cell>,
    /// Multi-cell columns by column (never holding an empty [`ComplexColumn`]).
    pub complex: BTreeMap<ColumnId, ComplexColumn>,
}

/// The fragment format version written by this build.
pub const FORMAT_VERSION: u8 = 1;

const HAS_LIVENESS: u8 = 0x01;
const LIVENESS_EXPIRING: u8 = 0x02;
const HAS_DELETION: u8 = 0x04;
const HAS_COMPLEX: u8 = 0x08;
const KNOWN_FLAGS: u8 = HAS_LIVENESS | LIVENESS_EXPIRING | HAS_DELETION | HAS_COMPLEX;

const CELL_LIVE: u8 = 0;
const CELL_EXPIRING: u8 = 1;
const CELL_TOMBSTONE: u8 = 2;

impl Fragment {
    /// An empty fragment of `kind`.
    pub fn new(kind: FragmentKind) -> Fragment {
        Fragment {
            kind,
            liveness: None,
            deletion: None,
            cells: BTreeMap::new(),
            complex: BTreeMap::new(),
        }
    }

    /// A partition deletion.
    pub fn partition_deletion(deletion: DeletionTime) -> Fragment {
        Fragment {
            deletion: Some(deletion),
            ..Fragment::new(FragmentKind::Partition)
        }
    }

    /// A range deletion.
    pub fn range_deletion(deletion: DeletionTime) -> Fragment {
        Fragment {
            deletion: Some(deletion),
            ..Fragment::new(FragmentKind::RangeTombstone)
        }
    }

    /// Whether the fragment holds nothing.
    pub fn is_empty(&self) -> bool {
        self.liveness.is_none()
            && self.deletion.is_none()
            && self.cells.is_empty()
            && self.complex.is_empty()
    }

    /// Every timestamp in the fragment.
    fn timestamps(&self) -> impl Iterator<Item = Timestamp> + '_ {
        self.liveness
            .iter()
            .map(|l| l.ts)
            .chain(self.deletion.iter().map(|d| d.marked_for_delete_at))
            .chain(self.cells.values().map(Cell::ts))
            .chain(self.complex.values().flat_map(|c| {
                c.deletion
                    .iter()
                    .map(|d| d.marked_for_delete_at)
                    .chain(c.cells.values().map(Cell::ts))
            }))
    }

    /// The newest timestamp in the fragment.
    pub fn max_timestamp(&self) -> Option<Timestamp> {
        self.timestamps().max()
    }

    /// Whether `bytes` may be a fragment that carries a deletion: `false` only when they
    /// have a flags byte (the third) and it says there is neither a row deletion nor a
    /// multi-cell column (which may carry a column deletion). Looks at that one byte; it
    /// does not check that the rest decodes.
    pub fn may_carry_deletion(bytes: &[u8]) -> bool {
        bytes
            .get(2)
            .is_none_or(|flags| flags & (HAS_DELETION | HAS_COMPLEX) != 0)
    }

    /// Appends the fragment's bytes to `out`.
    pub fn encode_into(&self, out: &mut Vec<u8>) {
        let base = self.timestamps().min().unwrap_or_default();
        let delta = |ts: Timestamp| (i128::from(ts.0) - i128::from(base.0)) as u64;
        let mut flags = 0;
        if let Some(l) = &self.liveness {
            flags |= HAS_LIVENESS;
            if l.expiry.is_some() {
                flags |= LIVENESS_EXPIRING;
            }
        }
        if self.deletion.is_some() {
            flags |= HAS_DELETION;
        }
        if !self.complex.is_empty() {
            flags |= HAS_COMPLEX;
        }
        out.push(FORMAT_VERSION);
        out.push(self.kind as u8);
        out.push(flags);
        put_signed(out, base.0);
        if let Some(l) = &self.liveness {
            put_unsigned(out, delta(l.ts));
            if let Some(e) = &l.expiry {
                put_expiry(out, e);
            }
        }
        if let Some(d) = &self.deletion {
            put_unsigned(out, delta(d.marked_for_delete_at));
            put_signed(out, d.local_deletion_secs);
        }
        put_unsigned(out, self.cells.len() as u64);
        let mut next_id: u64 = 0;
        for (id, cell) in &self.cells {
            put_unsigned(out, u64::from(id.0) - next_id);
            next_id = u64::from(id.0) + 1;
            put_cell(out, cell, &delta);
        }
        if self.complex.is_empty() {
            return;
        }
        put_unsigned(out, self.complex.len() as u64);
        let mut next_id: u64 = 0;
        for (id, column) in &self.complex {
            put_unsigned(out, u64::from(id.0) - next_id);
            next_id = u64::from(id.0) + 1;
            match &column.deletion {
                Some(d) => {
                    out.push(1);
                    put_unsigned(out, delta(d.marked_for_delete_at));
                    put_signed(out, d.local_deletion_secs);
                }
                None => out.push(0),
            }
            put_unsigned(out, column.cells.len() as u64);
            for (path, cell) in &column.cells {
                put_unsigned(out, path.len() as u64);
                out.extend_from_slice(path);
                put_cell(out, cell, &delta);
            }
        }
    }

    /// The fragment's bytes.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        self.encode_into(&mut out);
        out
    }

    /// Decodes fragment bytes, accepting only the canonical encoding.
    pub fn decode(bytes: &[u8]) -> Result<Fragment, FragmentError> {
        let mut r = Reader { buf: bytes, pos: 0 };
        let version = *bytes.first().ok_or(FragmentError::Empty)?;
        r.pos = 1;
        if version != FORMAT_VERSION {
            return Err(FragmentError::UnknownVersion { version });
        }
        let at = r.pos;
        let kind = FragmentKind::from_u8(r.byte()?).ok_or(r.invalid(at, "unknown kind"))?;
        let at = r.pos;
        let flags = r.byte()?;
        if flags & !KNOWN_FLAGS != 0
            || (flags & LIVENESS_EXPIRING != 0 && flags & HAS_LIVENESS == 0)
        {
            return Err(r.invalid(at, "unknown flags"));
        }
        let mut ts = Timestamps {
            base: r.signed()?,
            min_delta: u64::MAX,
        };
        let liveness = if flags & HAS_LIVENESS != 0 {
            let ts = ts.read(&mut r)?;
            let expiry = if flags & LIVENESS_EXPIRING != 0 {
                Some(r.expiry()?)
            } else {
                None
            };
            Some(Liveness { ts, expiry })
        } else {
            None
        };
        let deletion = if flags & HAS_DELETION != 0 {
            Some(DeletionTime {
                marked_for_delete_at: ts.read(&mut r)?,
                local_deletion_secs: r.signed()?,
            })
        } else {
            None
        };
        let cells = decode_cells(&mut r, &mut ts)?;
        let complex = if flags & HAS_COMPLEX != 0 {
            decode_complex(&mut r, &mut ts)?
        } else {
            BTreeMap::new()
        };
        if r.pos != bytes.len() {
            return Err(r.invalid(r.pos, "trailing bytes"));
        }
        let fragment = Fragment {
            kind,
            liveness,
            deletion,
            cells,
            complex,
        };
        let canonical_base = match fragment.timestamps().next() {
            Some(_) => ts.min_delta == 0,
            None => ts.base == 0,
        };
        if !canonical_base {
            return Err(r.invalid(3, "base timestamp is not the smallest timestamp"));
        }
        Ok(fragment)
    }
}

/// The timestamps of one fragment: deltas from its base, the smallest of which must be 0
/// in the canonical encoding.
struct Timestamps {
    base: i64,
    min_delta: u64,
}

impl Timestamps {
    /// Reads one delta-encoded timestamp.
    fn read(&mut self, r: &mut Reader<'_>) -> Result<Timestamp, FragmentError> {
        let at = r.pos;
        let d = r.unsigned()?;
        self.min_delta = self.min_delta.min(d);
        i64::try_from(i128::from(self.base) + i128::from(d))
            .map(Timestamp)
            .map_err(|_| r.invalid(at, "timestamp out of range"))
    }
}

/// Decodes the cell count and the cells (column ids delta-encoded, ascending).
fn decode_cells(
    r: &mut Reader<'_>,
    ts: &mut Timestamps,
) -> Result<BTreeMap<ColumnId, Cell>, FragmentError> {
    let at = r.pos;
    let count = r.unsigned()?;
    // Every cell takes at least 3 bytes: a cheap bound against absurd counts.
    if count > (r.buf.len().saturating_sub(r.pos) / 3) as u64 {
        return Err(r.invalid(at, "cell count exceeds the bytes left"));
    }
    let mut cells = BTreeMap::new();
    let mut next_id: u64 = 0;
    for _ in 0..count {
        let at = r.pos;
        let id = next_id
            .checked_add(r.unsigned()?)
            .filter(|&id| id <= u64::from(u32::MAX))
            .ok_or(r.invalid(at, "column id out of range"))?;
        next_id = id + 1;
        let cell = read_cell(r, ts)?;
        cells.insert(ColumnId(id as u32), cell);
    }
    Ok(cells)
}

/// Reads one cell (kind byte, timestamp, expiry, value).
fn read_cell(r: &mut Reader<'_>, ts: &mut Timestamps) -> Result<Cell, FragmentError> {
    let at = r.pos;
    Ok(match r.byte()? {
        k @ (CELL_LIVE | CELL_EXPIRING) => {
            let expiring = k == CELL_EXPIRING;
            let ts = ts.read(r)?;
            let expiry = if expiring { Some(r.expiry()?) } else { None };
            let value = r.bytes()?;
            Cell::Live { ts, value, expiry }
        }
        CELL_TOMBSTONE => Cell::Tombstone {
            ts: ts.read(r)?,
            local_deletion_secs: r.signed()?,
        },
        _ => return Err(r.invalid(at, "unknown cell kind")),
    })
}

/// Decodes the multi-cell columns: count, then per column its id gap, deletion and
/// elements (paths strictly ascending); an empty column is not canonical.
fn decode_complex(
    r: &mut Reader<'_>,
    ts: &mut Timestamps,
) -> Result<BTreeMap<ColumnId, ComplexColumn>, FragmentError> {
    let at = r.pos;
    let count = r.unsigned()?;
    // Every column takes at least 3 bytes.
    if count == 0 || count > (r.buf.len().saturating_sub(r.pos) / 3) as u64 {
        return Err(r.invalid(at, "bad multi-cell column count"));
    }
    let mut columns = BTreeMap::new();
    let mut next_id: u64 = 0;
    for _ in 0..count {
        let at = r.pos;
        let id = next_id
            .checked_add(r.unsigned()?)
            .filter(|&id| id <= u64::from(u32::MAX))
            .ok_or(r.invalid(at, "column id out of range"))?;
        next_id = id + 1;
        let at = r.pos;
        let deletion = match r.byte()? {
            0 => None,
            1 => Some(DeletionTime {
                marked_for_delete_at: ts.read(r)?,
                local_deletion_secs: r.signed()?,
            }),
            _ => return Err(r.invalid(at, "bad column deletion flag")),
        };
        let at = r.pos;
        let elements = r.unsigned()?;
        // Every element takes at least 4 bytes.
        if elements > (r.buf.len().saturating_sub(r.pos) / 4) as u64 {
            return Err(r.invalid(at, "element count exceeds the bytes left"));
        }
        // Collected in order, then built in one pass (a long list's map built by single
        // inserts was half the time of reading it).
        let mut cells: Vec<(Vec<u8>, Cell)> = Vec::with_capacity(elements as usize);
        for _ in 0..elements {
            let at = r.pos;
            let path = r.bytes()?;
            if cells.last().is_some_and(|(last, _)| *last >= path) {
                return Err(r.invalid(at, "element paths out of order"));
            }
            let cell = read_cell(r, ts)?;
            cells.push((path, cell));
        }
        let column = ComplexColumn {
            deletion,
            cells: cells.into_iter().collect(),
        };
        if column.is_empty() {
            return Err(r.invalid(at, "empty multi-cell column"));
        }
        columns.insert(ColumnId(id as u32), column);
    }
    Ok(columns)
}

/// Appends one cell (kind byte, timestamp delta, expiry, value).
fn put_cell(out: &mut Vec<u8>, cell: &Cell, delta: &impl Fn(Timestamp) -> u64) {
    match cell {
        Cell::Live { ts, value, expiry } => {
            out.push(if expiry.is_some() {
                CELL_EXPIRING
            } else {
                CELL_LIVE
            });
            put_unsigned(out, delta(*ts));
            if let Some(e) = expiry {
                put_expiry(out, e);
            }
            put_unsigned(out, value.len() as u64);
            out.extend_from_slice(value);
        }
        Cell::Tombstone {
            ts,
            local_deletion_secs,
        } => {
            out.push(CELL_TOMBSTONE);
            put_unsigned(out, delta(*ts));
            put_signed(out, *local_deletion_secs);
        }
    }
}

fn put_unsigned(out: &mut Vec<u8>, mut v: u64) {
    loop {
        let byte = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
}

fn put_signed(out: &mut Vec<u8>, v: i64) {
    put_unsigned(out, ((v << 1) ^ (v >> 63)) as u64);
}

fn put_expiry(out: &mut Vec<u8>, e: &Expiry) {
    put_unsigned(out, u64::from(e.ttl_secs));
    put_signed(out, e.local_expiration_secs);
}

struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl Reader<'_> {
    fn invalid(&self, offset: usize, reason: &'static str) -> FragmentError {
        FragmentError::Invalid { offset, reason }
    }

    fn byte(&mut self) -> Result<u8, FragmentError> {
        let b = *self
            .buf
            .get(self.pos)
            .ok_or(FragmentError::Truncated { offset: self.pos })?;
        self.pos += 1;
        Ok(b)
    }

    /// Minimal unsigned LEB128 (at most 10 bytes, no redundant zero groups).
    fn unsigned(&mut self) -> Result<u64, FragmentError> {
        let at = self.pos;
        let mut v: u64 = 0;
        for i in 0..10u32 {
            let b = self.byte()?;
            let group = u64::from(b & 0x7f);
            if i == 9 && group > 1 {
                return Err(self.invalid(at, "varint overflows 64 bits"));
            }
            v |= group << (7 * i);
            if b & 0x80 == 0 {
                if b == 0 && i > 0 {
                    return Err(self.invalid(at, "varint is not minimal"));
                }
                return Ok(v);
            }
        }
        Err(self.invalid(at, "varint longer than 10 bytes"))
    }

    fn signed(&mut self) -> Result<i64, FragmentError> {
        let v = self.unsigned()?;
        Ok(((v >> 1) as i64) ^ -((v & 1) as i64))
    }

    fn expiry(&mut self) -> Result<Expiry, FragmentError> {
        let at = self.pos;
        let ttl = self.unsigned()?;
        let ttl_secs = u32::try_from(ttl)
            .ok()
            .filter(|&t| t > 0)
            .ok_or(self.invalid(at, "ttl must be in 1..=u32::MAX"))?;
        Ok(Expiry {
            ttl_secs,
            local_expiration_secs: self.signed()?,
        })
    }

    fn bytes(&mut self) -> Result<Vec<u8>, FragmentError> {
        let len = self.unsigned()?;
        let end = usize::try_from(len)
            .ok()
            .and_then(|len| self.pos.checked_add(len))
            .filter(|&end| end <= self.buf.len())
            .ok_or(FragmentError::Truncated {
                offset: self.buf.len(),
            })?;
        let value = self.buf.get(self.pos..end).unwrap_or_default().to_vec();
        self.pos = end;
        Ok(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Fragment {
        let mut f = Fragment::new(FragmentKind::Row);
        f.liveness = Some(Liveness {
            ts: Timestamp(1_000),
            expiry: Some(Expiry {
                ttl_secs: 60,
                local_expiration_secs: 100,
            }),
        });
        f.deletion = Some(DeletionTime {
            marked_for_delete_at: Timestamp(900),
            local_deletion_secs: 40,
        });
        f.cells.insert(
            ColumnId(3),
            Cell::Live {
                ts: Timestamp(1_000),
                value: b"abc".to_vec(),
                expiry: None,
            },
        );
        f.cells.insert(
            ColumnId(7),
            Cell::Tombstone {
                ts: Timestamp(1_001),
                local_deletion_secs: 41,
            },
        );
        f
    }

    #[test]
    fn fragments_round_trip() {
        let f = sample();
        let bytes = f.encode();
        assert_eq!(Fragment::decode(&bytes).unwrap(), f);
        let empty = Fragment::new(FragmentKind::Static);
        assert_eq!(Fragment::decode(&empty.encode()).unwrap(), empty);
    }

    fn with_collection() -> Fragment {
        let mut f = sample();
        let mut column = ComplexColumn {
            deletion: Some(DeletionTime {
                marked_for_delete_at: Timestamp(999),
                local_deletion_secs: 40,
            }),
            cells: BTreeMap::new(),
        };
        column.cells.insert(
            b"a".to_vec(),
            Cell::Live {
                ts: Timestamp(1_000),
                value: Vec::new(),
                expiry: Some(Expiry {
                    ttl_secs: 5,
                    local_expiration_secs: 45,
                }),
            },
        );
        column.cells.insert(
            b"b".to_vec(),
            Cell::Tombstone {
                ts: Timestamp(1_002),
                local_deletion_secs: 42,
            },
        );
        f.complex.insert(ColumnId(4), column);
        f.complex.insert(
            ColumnId(9),
            ComplexColumn {
                deletion: Some(DeletionTime {
                    marked_for_delete_at: Timestamp(998),
                    local_deletion_secs: 40,
                }),
                cells: BTreeMap::new(),
            },
        );
        f
    }

    #[test]
    fn multi_cell_columns_round_trip_and_reject_non_canonical_bytes() {
        let f = with_collection();
        let bytes = f.encode();
        assert_eq!(Fragment::decode(&bytes).unwrap(), f);
        assert!(Fragment::may_carry_deletion(&bytes));
        for len in 0..bytes.len() {
            assert!(Fragment::decode(&bytes[..len]).is_err(), "prefix {len}");
        }
        // Only complex columns: the flag alone says so.
        let mut only = Fragment::new(FragmentKind::Row);
        only.complex = f.complex.clone();
        let bytes = only.encode();
        assert_eq!(bytes[2], HAS_COMPLEX);
        assert!(Fragment::may_carry_deletion(&bytes));
        assert_eq!(Fragment::decode(&bytes).unwrap(), only);
        // An empty complex column is not canonical, nor a flag with no column.
        let mut empty = Fragment::new(FragmentKind::Row);
        empty.complex.insert(ColumnId(1), ComplexColumn::default());
        assert!(Fragment::decode(&empty.encode()).is_err());
        // Paths out of order: swap the two one-byte paths "a" and "b" of column 4.
        let mut bytes = with_collection().encode();
        let find = |bytes: &[u8], w: [u8; 3]| bytes.windows(3).position(|x| x == w).unwrap() + 1;
        let a = find(&bytes, [1, b'a', CELL_EXPIRING]);
        let b = find(&bytes, [1, b'b', CELL_TOMBSTONE]);
        bytes.swap(a, b);
        assert!(Fragment::decode(&bytes).is_err());
    }

    #[test]
    fn a_single_cell_write_is_small() {
        let mut f = Fragment::new(FragmentKind::Row);
        f.cells.insert(
            ColumnId(1),
            Cell::Live {
                ts: Timestamp(1_700_000_000_000_000),
                value: 42i32.to_be_bytes().to_vec(),
                expiry: None,
            },
        );
        // version, kind, flags, base (8 bytes of zigzag LEB128), count, id, kind, delta,
        // length, value.
        assert_eq!(f.encode().len(), 3 + 8 + 1 + 1 + 1 + 1 + 1 + 4);
    }

    #[test]
    fn corrupt_fragments_are_errors() {
        let bytes = sample().encode();
        assert_eq!(Fragment::decode(&[]), Err(FragmentError::Empty));
        assert_eq!(
            Fragment::decode(&[9]),
            Err(FragmentError::UnknownVersion { version: 9 })
        );
        for len in 0..bytes.len() {
            assert!(Fragment::decode(&bytes[..len]).is_err(), "prefix {len}");
        }
        let mut extra = bytes.clone();
        extra.push(0);
        assert!(Fragment::decode(&extra).is_err());
        // A base that is not the minimum timestamp.
        let mut f = Fragment::new(FragmentKind::Row);
        f.deletion = Some(DeletionTime {
            marked_for_delete_at: Timestamp(5),
            local_deletion_secs: 0,
        });
        let mut bytes = f.encode();
        assert_eq!(bytes, [1, 0, HAS_DELETION, 10, 0, 0, 0]);
        // Base 4 with delta 1 also means 5, but the base must be the smallest timestamp.
        bytes[3] = 8;
        bytes[4] = 1;
        assert!(Fragment::decode(&bytes).is_err());
    }
}
