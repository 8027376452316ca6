//! The reference model: Cassandra's cell semantics over one partition's rows, apart
//! from the system under test (see the parent module's doc).

use std::collections::BTreeMap;

use super::ops::{Col, Stmt};
use super::ROWS;

/// A deletion: `(marked_for_delete_at, local_deletion_secs)`, compared in that order as
/// `mosaic_rows::compare_deletions` does.
pub(super) type Del = (i64, i64);

/// A TTL and its expiration time (seconds).
pub(super) type Ttl = Option<(u32, i64)>;

#[derive(Clone, Debug, PartialEq)]
pub(super) enum MCell {
    Live { ts: i64, value: Vec<u8>, ttl: Ttl },
    Tomb { ts: i64, local_deletion_secs: i64 },
}

impl MCell {
    pub(super) fn ts(&self) -> i64 {
        match self {
            MCell::Live { ts, .. } | MCell::Tomb { ts, .. } => *ts,
        }
    }

    /// Cassandra's reconciliation order (`mosaic_rows::compare_cells`): the larger wins.
    pub(super) fn rank(&self) -> (i64, bool, bool, i64, &[u8], u32) {
        match self {
            MCell::Live {
                ts,
                value,
                ttl: None,
            } => (*ts, false, false, i64::MIN, value, 0),
            MCell::Live {
                ts,
                value,
                ttl: Some((ttl, exp)),
            } => (*ts, true, false, *exp, value, *ttl),
            MCell::Tomb {
                ts,
                local_deletion_secs,
            } => (*ts, true, true, *local_deletion_secs, &[], 0),
        }
    }

    pub(super) fn live_value(&self, now: i64) -> Option<&[u8]> {
        match self {
            MCell::Live { value, ttl, .. } if ttl.is_none_or(|(_, exp)| now < exp) => Some(value),
            _ => None,
        }
    }
}

#[derive(Clone, Debug, Default)]
pub(super) struct ColModel {
    pub(super) deletion: Option<Del>,
    /// Cells by path: a set element's or a map key's serialization, a list element's
    /// learned path.
    pub(super) cells: BTreeMap<Vec<u8>, MCell>,
}

impl ColModel {
    pub(super) fn merge(&mut self, path: Vec<u8>, cell: MCell) {
        match self.cells.get(&path) {
            Some(old) if old.rank() >= cell.rank() => {}
            _ => {
                self.cells.insert(path, cell);
            }
        }
    }

    pub(super) fn delete(&mut self, d: Del) {
        self.deletion = self.deletion.max(Some(d));
    }
}

/// One statement's new list elements, as learned from storage.
#[derive(Clone, Debug)]
pub(super) struct ListWrite {
    pub(super) ts: i64,
    pub(super) prepend: bool,
    /// In list order (ascending).
    pub(super) paths: Vec<Vec<u8>>,
}

/// A non-frozen `pt` value's fields `(a, b)`, `None` for a null field.
pub(super) type Udt = [Option<i32>; 2];

/// What one row reads as: its collections and its user-defined type, `None` when empty
/// (a null).
pub(super) type RowValue = (
    Option<Vec<i32>>,
    Option<Vec<i32>>,
    Option<Vec<(i32, i32)>>,
    Option<Udt>,
);

#[derive(Clone, Debug, Default)]
pub(super) struct RowModel {
    /// The row marker (INSERT): timestamp and TTL, merged by `compare_liveness`'s order.
    pub(super) marker: Option<(i64, Ttl)>,
    /// Row, range and partition deletions covering the row.
    pub(super) deletion: Option<Del>,
    pub(super) cols: [ColModel; 4],
    /// Every list write learned, for the order checks.
    pub(super) list_writes: Vec<ListWrite>,
}

pub(super) fn int_bytes(v: i32) -> Vec<u8> {
    v.to_be_bytes().to_vec()
}

/// The cell path of field `i` of a non-frozen user-defined type: its position, 2 bytes
/// big-endian (Cassandra's).
pub(super) fn field_path(i: usize) -> Vec<u8> {
    u16::try_from(i).expect("a field").to_be_bytes().to_vec()
}

pub(super) fn bytes_int(b: &[u8]) -> i32 {
    i32::from_be_bytes(b.try_into().expect("4-byte int"))
}

impl RowModel {
    pub(super) fn col(&mut self, col: Col) -> &mut ColModel {
        &mut self.cols[col.index()]
    }

    pub(super) fn marker_rank(m: &(i64, Ttl)) -> (i64, bool, i64, u32) {
        match m.1 {
            None => (m.0, false, i64::MIN, 0),
            Some((ttl, exp)) => (m.0, true, exp, ttl),
        }
    }

    /// Whether a write of `col` at `ts` is shadowed by a deletion.
    pub(super) fn shadowed(&self, col: Col, ts: i64) -> bool {
        self.deletion
            .max(self.cols[col.index()].deletion)
            .is_some_and(|d| ts <= d.0)
    }

    /// The visible elements of `col` at `now`, in path order: `(path, value)`.
    pub(super) fn visible(&self, col: Col, now: i64) -> Vec<(&[u8], &[u8])> {
        self.cols[col.index()]
            .cells
            .iter()
            .filter(|(_, c)| !self.shadowed(col, c.ts()))
            .filter_map(|(p, c)| Some((p.as_slice(), c.live_value(now)?)))
            .collect()
    }

    /// The row as a `SELECT s, l, m` reads it at `now`, `None` if it has no live data.
    pub(super) fn read(&self, now: i64) -> Option<RowValue> {
        let marker_live = self.marker.is_some_and(|(ts, ttl)| {
            self.deletion.is_none_or(|d| ts > d.0) && ttl.is_none_or(|(_, exp)| now < exp)
        });
        let mut s: Vec<i32> = self
            .visible(Col::S, now)
            .iter()
            .map(|(p, _)| bytes_int(p))
            .collect();
        s.sort_unstable();
        let l: Vec<i32> = self
            .visible(Col::L, now)
            .iter()
            .map(|(_, v)| bytes_int(v))
            .collect();
        let mut m: Vec<(i32, i32)> = self
            .visible(Col::M, now)
            .iter()
            .map(|(p, v)| (bytes_int(p), bytes_int(v)))
            .collect();
        m.sort_unstable();
        // A field's path is its position (`collections::field_path`).
        let fields = self.visible(Col::U, now);
        let mut u: Udt = [None; 2];
        for (path, value) in &fields {
            let i = usize::from(u16::from_be_bytes((*path).try_into().expect("field path")));
            u[i] = Some(bytes_int(value));
        }
        if !marker_live && s.is_empty() && l.is_empty() && m.is_empty() && fields.is_empty() {
            return None;
        }
        let non_empty = |v: Vec<i32>| (!v.is_empty()).then_some(v);
        Some((
            non_empty(s),
            non_empty(l),
            (!m.is_empty()).then_some(m),
            (!fields.is_empty()).then_some(u),
        ))
    }

    /// The list's visible paths at `now`, `None` for a null list.
    pub(super) fn list_paths(&self, now: i64) -> Option<Vec<Vec<u8>>> {
        let paths: Vec<Vec<u8>> = self
            .visible(Col::L, now)
            .iter()
            .map(|(p, _)| p.to_vec())
            .collect();
        (!paths.is_empty()).then_some(paths)
    }

    /// The path of list element `index` at `now`, or Cassandra's error (`set`: `l[i] = v`,
    /// else `DELETE l[i]`).
    pub(super) fn list_index(&self, index: i32, now: i64, set: bool) -> Result<Vec<u8>, String> {
        let Some(paths) = self.list_paths(now) else {
            return Err(if set {
                "Attempted to set an element on a list which is null".to_owned()
            } else {
                "Attempted to delete an element from a list which is null".to_owned()
            });
        };
        usize::try_from(index)
            .ok()
            .and_then(|i| paths.get(i))
            .cloned()
            .ok_or_else(|| {
                format!(
                    "List index {index} out of bound, list has size {}",
                    paths.len()
                )
            })
    }

    /// Checks a new list write's order against every list write learned before (the
    /// documented order, docs/cql.md): arrival order, whatever the write timestamps —
    /// appends sort after earlier appends, prepends before earlier prepends, and every
    /// prepend before every append.
    pub(super) fn check_list_order(&self, new: &ListWrite) -> Result<(), String> {
        let (Some(first), Some(last)) = (new.paths.first(), new.paths.last()) else {
            return Ok(());
        };
        for old in &self.list_writes {
            let (Some(old_first), Some(old_last)) = (old.paths.first(), old.paths.last()) else {
                continue;
            };
            // Arrival order, whatever the write timestamps (Cassandra's list paths are
            // timeuuids of the coordinator's clock): `old` arrived first, so a new append
            // sorts after it and a new prepend before it; prepends before appends.
            let ok = if new.prepend {
                last < old_first
            } else {
                first > old_last
            };
            if !ok {
                return Err(format!(
                    "list order: the {} at ts {} (paths {:02x?}) should sort {} the earlier {} at ts {} (paths {:02x?})",
                    if new.prepend { "prepend" } else { "append" },
                    new.ts,
                    new.paths,
                    if new.prepend { "before" } else { "after" },
                    if old.prepend { "prepend" } else { "append" },
                    old.ts,
                    old.paths,
                ));
            }
        }
        Ok(())
    }
}

/// The facts of one statement the model needs.
pub(super) struct Write {
    pub(super) ts: i64,
    pub(super) ttl: Ttl,
    pub(super) now: i64,
}

impl Write {
    pub(super) fn live(&self, value: Vec<u8>) -> MCell {
        MCell::Live {
            ts: self.ts,
            value,
            ttl: self.ttl,
        }
    }

    pub(super) fn tomb(&self) -> MCell {
        MCell::Tomb {
            ts: self.ts,
            local_deletion_secs: self.now,
        }
    }

    /// The column deletion of an overwrite (`c = …`).
    pub(super) fn overwrite(&self) -> Del {
        (self.ts - 1, self.now)
    }

    pub(super) fn deletion(&self) -> Del {
        (self.ts, self.now)
    }
}

/// What the model expects a statement to answer: `Err` with Cassandra's message for the
/// list index operations that must fail.
pub(super) fn expected_error(
    rows: &[RowModel; ROWS],
    row: usize,
    stmt: &Stmt,
    now: i64,
) -> Option<String> {
    match stmt {
        Stmt::ListSetIndex(i, _) => rows[row].list_index(*i, now, true).err(),
        Stmt::DeleteListIndex(i) => rows[row].list_index(*i, now, false).err(),
        _ => None,
    }
}

/// Applies a statement that succeeded to the model; `list_paths` are the new list
/// elements' paths learned from storage (empty when the write was shadowed on arrival).
pub(super) fn apply(
    rows: &mut [RowModel; ROWS],
    row: usize,
    stmt: &Stmt,
    w: &Write,
    list_paths: &[Vec<u8>],
) {
    let r = &mut rows[row];
    let set_cells = |col: &mut ColModel, w: &Write, v: &[i32]| {
        for e in v {
            col.merge(int_bytes(*e), w.live(Vec::new()));
        }
    };
    let map_cells = |col: &mut ColModel, w: &Write, v: &[(i32, i32)]| {
        for (k, e) in v {
            col.merge(int_bytes(*k), w.live(int_bytes(*e)));
        }
    };
    // A whole user-defined type: a cell per non-null field, as Cassandra writes it.
    let udt_cells = |col: &mut ColModel, w: &Write, u: &Udt| {
        for (i, f) in u.iter().enumerate() {
            if let Some(f) = f {
                col.merge(field_path(i), w.live(int_bytes(*f)));
            }
        }
    };
    let list_cells = |col: &mut ColModel, w: &Write, v: &[i32]| {
        for (path, e) in list_paths.iter().zip(v) {
            col.merge(path.clone(), w.live(int_bytes(*e)));
        }
    };
    match stmt {
        Stmt::Insert { s, l, m, u } => {
            let marker = (w.ts, w.ttl);
            if r.marker
                .is_none_or(|old| RowModel::marker_rank(&marker) > RowModel::marker_rank(&old))
            {
                r.marker = Some(marker);
            }
            if let Some(s) = s {
                r.col(Col::S).delete(w.overwrite());
                set_cells(r.col(Col::S), w, s.as_deref().unwrap_or_default());
            }
            if let Some(l) = l {
                r.col(Col::L).delete(w.overwrite());
                list_cells(r.col(Col::L), w, l.as_deref().unwrap_or_default());
            }
            if let Some(m) = m {
                r.col(Col::M).delete(w.overwrite());
                map_cells(r.col(Col::M), w, m.as_deref().unwrap_or_default());
            }
            if let Some(u) = u {
                r.col(Col::U).delete(w.overwrite());
                if let Some(u) = u {
                    udt_cells(r.col(Col::U), w, u);
                }
            }
        }
        Stmt::UdtAssign(u) => {
            r.col(Col::U).delete(w.overwrite());
            if let Some(u) = u {
                udt_cells(r.col(Col::U), w, u);
            }
        }
        Stmt::UdtSetField(i, Some(v)) => r.col(Col::U).merge(field_path(*i), w.live(int_bytes(*v))),
        Stmt::UdtSetField(i, None) | Stmt::DeleteUdtField(i) => {
            r.col(Col::U).merge(field_path(*i), w.tomb())
        }
        Stmt::SetAssign(v) => {
            r.col(Col::S).delete(w.overwrite());
            set_cells(r.col(Col::S), w, v.as_deref().unwrap_or_default());
        }
        Stmt::SetAdd(v) => set_cells(r.col(Col::S), w, v),
        Stmt::SetRemove(v) => {
            for e in v {
                r.col(Col::S).merge(int_bytes(*e), w.tomb());
            }
        }
        Stmt::DeleteSetElement(e) => r.col(Col::S).merge(int_bytes(*e), w.tomb()),
        Stmt::ListAssign(v) => {
            r.col(Col::L).delete(w.overwrite());
            list_cells(r.col(Col::L), w, v.as_deref().unwrap_or_default());
        }
        Stmt::ListAppend(v) | Stmt::ListPrepend(v) => list_cells(r.col(Col::L), w, v),
        Stmt::ListSetIndex(i, v) => {
            let path = r.list_index(*i, w.now, true).expect("checked before");
            r.col(Col::L).merge(path, w.live(int_bytes(*v)));
        }
        Stmt::DeleteListIndex(i) => {
            let path = r.list_index(*i, w.now, false).expect("checked before");
            r.col(Col::L).merge(path, w.tomb());
        }
        Stmt::ListRemove(v) => {
            let doomed: Vec<Vec<u8>> = r
                .visible(Col::L, w.now)
                .into_iter()
                .filter(|(_, value)| v.contains(&bytes_int(value)))
                .map(|(p, _)| p.to_vec())
                .collect();
            for path in doomed {
                r.col(Col::L).merge(path, w.tomb());
            }
        }
        Stmt::MapAssign(v) => {
            r.col(Col::M).delete(w.overwrite());
            map_cells(r.col(Col::M), w, v.as_deref().unwrap_or_default());
        }
        Stmt::MapPut(k, v) => map_cells(r.col(Col::M), w, &[(*k, *v)]),
        Stmt::MapAdd(v) => map_cells(r.col(Col::M), w, v),
        Stmt::MapRemove(keys) => {
            for k in keys {
                r.col(Col::M).merge(int_bytes(*k), w.tomb());
            }
        }
        Stmt::DeleteMapKey(k) => r.col(Col::M).merge(int_bytes(*k), w.tomb()),
        Stmt::DeleteColumn(col) => r.col(*col).delete(w.deletion()),
        Stmt::DeleteRow => r.deletion = r.deletion.max(Some(w.deletion())),
        Stmt::DeletePartition => {
            for r in rows.iter_mut() {
                r.deletion = r.deletion.max(Some(w.deletion()));
            }
        }
        Stmt::DeleteRange => {
            for r in rows.iter_mut().skip(1) {
                r.deletion = r.deletion.max(Some(w.deletion()));
            }
        }
    }
}
