//! Collections and tuples in statements: their literals and bound values, how a write
//! turns into the cells of a multi-cell column, and how the cells read back into a value.
//!
//! A non-frozen collection is stored one element per cell (`mosaic_rows::ComplexColumn`),
//! as Cassandra stores it, so that concurrent additions merge and each element keeps its
//! own timestamp and TTL. An element's cell path is chosen here:
//! - a set element: the element's serialization, with an empty value;
//! - a map entry: the key's serialization, the value in the cell;
//! - a list element: a time-based id, 8 bytes of time (the coordinator's clock when the
//!   statement arrived, microseconds, sign bit flipped, big-endian — not the write
//!   timestamp: as Cassandra's timeuuid paths, list order is arrival order), 6 random bytes
//!   of the statement, then the position in the statement ([`list_position`]), so that
//!   appends sort after what is there, prepends (whose time counts down from zero) before,
//!   and the elements of two statements at the same time stay together.
//!
//! Overwriting a collection (`c = …`, or an INSERT) writes a column deletion at the write
//! timestamp minus one plus the new elements; `DELETE c` a column deletion at the write
//! timestamp; removals are element tombstones. Reads decode the paths and order sets and
//! maps by their element (key) type.

use std::cmp::Ordering;

use std::collections::HashMap;

use mosaic_rows::{
    Cell, ComplexColumn, DeletionTime, Expiry, KeySchema, LiveCell, LiveRow, PartitionPrefix,
    PartitionResolver,
};
use mosaic_types::{normalize_map, normalize_set, CqlValue, DataType, TableId, Timestamp};

use crate::ast::{AssignOp, Term};
use crate::coordinator::{Coordinator, ReadCommand};
use crate::frame::{Consistency, ErrorResponse, Value};

use super::invalid;
use super::values::{eval, Eval, EvalContext};

/// Evaluates `term` as a value of the collection or tuple type `ty`.
pub(crate) fn eval_complex(
    term: &Term,
    ty: &DataType,
    name: &str,
    ctx: &EvalContext<'_>,
) -> Result<Eval, ErrorResponse> {
    let shape = ty.unfrozen();
    let mismatch = |what: &str| invalid(format!("Invalid {what} for {name} of type {ty}"));
    let element = |t: &Term, elem: &DataType| -> Result<CqlValue, ErrorResponse> {
        match eval(t, elem, name, ctx)? {
            Eval::Value(v) => Ok(v),
            Eval::Null => Err(invalid("null is not supported inside collections")),
            Eval::Unset => Err(invalid(format!(
                "Invalid unset value for an element of {name}"
            ))),
        }
    };
    let is_marker = |t: &Term| matches!(t, Term::Bind(_));
    let refused_marker = match term {
        Term::List(items) if items.iter().any(is_marker) => Some("list"),
        Term::Set(items) if items.iter().any(is_marker) => Some("set"),
        Term::Map(entries) if entries.iter().any(|(k, v)| is_marker(k) || is_marker(v)) => {
            Some("map")
        }
        _ => None,
    };
    if let Some(kind) = refused_marker {
        return Err(invalid(format!(
            "Invalid {kind} literal for {name}: bind variables are not supported inside collection literals"
        )));
    }
    let value = match (term, shape) {
        (Term::Literal(crate::ast::Literal::Null), _) => return Ok(Eval::Null),
        (Term::Literal(_), _) => return Err(mismatch("constant")),
        (Term::Bind(marker), _) => {
            return match ctx.bindings.get(marker)? {
                Value::Null => Ok(Eval::Null),
                Value::Unset => Ok(Eval::Unset),
                Value::Bytes(b) => ty
                    .decode(b)
                    .map(Eval::Value)
                    .map_err(|e| invalid(format!("Invalid value for {name} of type {ty}: {e}"))),
            };
        }
        (Term::Call { name: func, .. }, _) => {
            return Err(invalid(format!(
                "Type error: cannot assign result of function {} to {name} of type {ty}",
                func.as_str()
            )))
        }
        (Term::List(items), DataType::List(e)) => CqlValue::List(
            items
                .iter()
                .map(|t| element(t, e))
                .collect::<Result<_, _>>()?,
        ),
        (Term::Set(items), DataType::Set(e)) => CqlValue::Set(normalize_set(
            items
                .iter()
                .map(|t| element(t, e))
                .collect::<Result<_, _>>()?,
        )),
        (Term::Map(entries), DataType::Set(_)) if entries.is_empty() => CqlValue::Set(Vec::new()),
        (Term::Map(entries), DataType::Map(k, v)) => CqlValue::Map(normalize_map(
            entries
                .iter()
                .map(|(kt, vt)| Ok((element(kt, k)?, element(vt, v)?)))
                .collect::<Result<_, ErrorResponse>>()?,
        )),
        (Term::Tuple(items), DataType::Tuple(fields)) => {
            if items.len() > fields.len() {
                return Err(invalid(format!(
                    "Invalid tuple literal for {name}: too many elements. Type {ty} expects {} but got {}",
                    fields.len(),
                    items.len()
                )));
            }
            let mut values = Vec::with_capacity(fields.len());
            for (t, f) in items.iter().zip(fields) {
                values.push(match eval(t, f, name, ctx)? {
                    Eval::Value(v) => Some(v),
                    Eval::Null => None,
                    Eval::Unset => {
                        return Err(invalid(format!(
                            "Invalid unset value for tuple field of {name}"
                        )))
                    }
                });
            }
            values.resize(fields.len(), None);
            CqlValue::Tuple(values)
        }
        (Term::Udt(entries), DataType::Udt(u)) => {
            for (field, _) in entries {
                if u.field(field.as_str()).is_none() {
                    return Err(invalid(format!(
                        "Unknown field '{}' in value of user defined type {}",
                        field.as_str(),
                        u.name
                    )));
                }
            }
            let mut values = Vec::with_capacity(u.fields.len());
            for (field, field_ty) in &u.fields {
                let term = entries.iter().find(|(n, _)| n.as_str() == field);
                values.push(match term {
                    None => None,
                    Some((_, t)) => match eval(t, field_ty, name, ctx)? {
                        Eval::Value(v) => Some(v),
                        Eval::Null => None,
                        Eval::Unset => {
                            return Err(invalid(format!(
                                "Invalid unset value for field '{field}' of user defined type {}",
                                u.name
                            )))
                        }
                    },
                });
            }
            CqlValue::Tuple(values)
        }
        (Term::Udt(_), _) => return Err(mismatch("user type literal")),
        (Term::List(_), _) => return Err(mismatch("list literal")),
        (Term::Set(_), _) => return Err(mismatch("set literal")),
        (Term::Map(_), _) => return Err(mismatch("map literal")),
        (Term::Tuple(_), _) => return Err(mismatch("tuple literal")),
    };
    Ok(Eval::Value(value))
}

/// The facts of one write that its cells carry.
#[derive(Clone, Copy, Debug)]
pub(crate) struct CellTime {
    /// The write timestamp.
    pub ts: Timestamp,
    /// The TTL's expiry, if any.
    pub expiry: Option<Expiry>,
    /// Local time, seconds.
    pub now_secs: i64,
    /// The coordinator's clock when the statement arrived, microseconds: list element
    /// paths take their time from it.
    pub now_micros: i64,
}

impl CellTime {
    fn live(&self, value: Vec<u8>) -> Cell {
        Cell::Live {
            ts: self.ts,
            value,
            expiry: self.expiry,
        }
    }

    fn tombstone(&self) -> Cell {
        Cell::Tombstone {
            ts: self.ts,
            local_deletion_secs: self.now_secs,
        }
    }

    fn deletion_at(&self, ts: Timestamp) -> DeletionTime {
        DeletionTime {
            marked_for_delete_at: ts,
            local_deletion_secs: self.now_secs,
        }
    }
}

/// The time in the path of a list element written by a statement that arrived at `now`
/// (the coordinator's clock, microseconds): `now` for an append; for a prepend, `now`
/// mirrored below zero (`-1 - now`), so that later prepends sort first and every prepend
/// sorts before every append. Cassandra's paths are timeuuids of the coordinator's clock
/// (prepends counting down from 2010-01-01), so list order is arrival order whatever the
/// write timestamps (`USING TIMESTAMP`) say; mirroring at zero rather than at 2010 keeps
/// the prepends of a clock set before 2010 before the appends too.
fn list_time(now: i64, prepend: bool) -> i64 {
    if prepend {
        -1 - now.max(0)
    } else {
        now
    }
}

/// The paths of `n` new list elements written by a statement that arrived at `now`, in
/// list order.
fn list_paths(n: usize, now: i64, prepend: bool) -> Vec<Vec<u8>> {
    let time = list_time(now, prepend);
    let random: [u8; 8] = mosaic_env::rng::random_bytes();
    (0..n)
        .map(|i| {
            let mut path = Vec::with_capacity(16);
            path.extend_from_slice(&((time as u64) ^ (1 << 63)).to_be_bytes());
            path.extend_from_slice(random.get(..6).unwrap_or_default());
            list_position(i, &mut path);
            path
        })
        .collect()
}

/// Appends the position `i` of a list element in its statement to its path, so that the
/// paths of one statement are distinct and in list order as bytes: below 65,535, 2 bytes
/// big-endian (the only form before lists could be longer, so paths written then read
/// the same); from 65,535 on, `0xffff` then 8 bytes big-endian, which sort after every
/// 2-byte position. Paths of different statements already differ in their first 14 bytes.
fn list_position(i: usize, path: &mut Vec<u8>) {
    match u16::try_from(i) {
        Ok(short) if short < u16::MAX => path.extend_from_slice(&short.to_be_bytes()),
        _ => {
            path.extend_from_slice(&u16::MAX.to_be_bytes());
            path.extend_from_slice(&(i as u64).to_be_bytes());
        }
    }
}

/// The cells a collection value becomes (`value` already of the column's type).
fn element_cells(value: &CqlValue, time: CellTime, prepend: bool) -> Vec<(Vec<u8>, Cell)> {
    match value {
        CqlValue::List(items) => list_paths(items.len(), time.now_micros, prepend)
            .into_iter()
            .zip(items)
            .map(|(path, v)| (path, time.live(v.to_cql_bytes())))
            .collect(),
        CqlValue::Set(items) => items
            .iter()
            .map(|v| (v.to_cql_bytes(), time.live(Vec::new())))
            .collect(),
        CqlValue::Map(entries) => entries
            .iter()
            .map(|(k, v)| (k.to_cql_bytes(), time.live(v.to_cql_bytes())))
            .collect(),
        // A non-frozen user-defined type: a cell per non-null field.
        CqlValue::Tuple(fields) => fields
            .iter()
            .enumerate()
            .filter_map(|(i, v)| Some((field_path(i), time.live(v.as_ref()?.to_cql_bytes()))))
            .collect(),
        _ => Vec::new(),
    }
}

/// The cell path of field `i` of a non-frozen user-defined type: its position, 2 bytes
/// big-endian (Cassandra's `UserType` field cell path).
pub(crate) fn field_path(i: usize) -> Vec<u8> {
    (i.min(usize::from(u16::MAX)) as u16).to_be_bytes().to_vec()
}

/// `c.field = v` on a non-frozen user-defined type, or `DELETE c.field` (`value` null).
pub(crate) fn set_field(
    column: &mut ComplexColumn,
    ty: &DataType,
    name: &str,
    field: &str,
    value: Eval,
    time: CellTime,
) -> Result<(), ErrorResponse> {
    let DataType::Udt(u) = ty else {
        return Err(invalid(format!(
            "Invalid operation ({name}.{field}) for non-UDT column {name}"
        )));
    };
    let Some(i) = u.field(field) else {
        return Err(invalid(format!(
            "UDT column {name} does not have a field named {field}"
        )));
    };
    let cell = match value {
        Eval::Unset => return Ok(()),
        Eval::Null => time.tombstone(),
        Eval::Value(v) => time.live(v.to_cql_bytes()),
    };
    column.cells.insert(field_path(i), cell);
    Ok(())
}

/// The type of field `field` of user-defined type `ty` (column `name`).
pub(crate) fn field_type(
    ty: &DataType,
    name: &str,
    field: &str,
) -> Result<DataType, ErrorResponse> {
    match ty.unfrozen() {
        DataType::Udt(u) => u
            .fields
            .iter()
            .find(|(n, _)| n == field)
            .map(|(_, t)| t.clone())
            .ok_or_else(|| {
                invalid(format!(
                    "UDT column {name} does not have a field named {field}"
                ))
            }),
        _ => Err(invalid(format!(
            "Invalid field selection: {name} of type {ty} is not a user type"
        ))),
    }
}

/// Applies one assignment to a multi-cell column of type `ty` (named `name`): `c = v`
/// (`value` null deletes the column), `c = c + v`, `c = v + c`, `c = c - v`, `c[k] = v`.
pub(crate) fn assign(
    column: &mut ComplexColumn,
    ty: &DataType,
    name: &str,
    op: AssignOp,
    element: Option<Eval>,
    value: Eval,
    time: CellTime,
) -> Result<(), ErrorResponse> {
    if let Some(key) = element {
        let key = match key {
            Eval::Value(k) => k,
            Eval::Null if matches!(ty, DataType::Map(..)) => {
                return Err(invalid("Invalid null map key"))
            }
            Eval::Null => return Err(invalid(format!("Invalid null value for {name} element"))),
            Eval::Unset => return Err(invalid(format!("Invalid unset value for {name} element"))),
        };
        return match ty {
            DataType::Map(..) => {
                let cell = match value {
                    Eval::Unset => return Ok(()),
                    Eval::Null => time.tombstone(),
                    Eval::Value(v) => time.live(v.to_cql_bytes()),
                };
                column.cells.insert(key.to_cql_bytes(), cell);
                Ok(())
            }
            DataType::List(_) => Err(list_needs_read(name)),
            _ => Err(invalid(format!(
                "Invalid operation ({name}[?] = ?) for non list/map column {name}"
            ))),
        };
    }
    let value = match value {
        Eval::Unset => return Ok(()),
        Eval::Null if op == AssignOp::Set => {
            column.deletion = Some(time.deletion_at(Timestamp(time.ts.0.saturating_sub(1))));
            return Ok(());
        }
        // Adding, prepending or removing null changes nothing, as in Cassandra.
        Eval::Null => return Ok(()),
        Eval::Value(v) => v,
    };
    match (op, ty) {
        (AssignOp::Set, _) => {
            column.deletion = Some(time.deletion_at(Timestamp(time.ts.0.saturating_sub(1))));
            column.cells.extend(element_cells(&value, time, false));
        }
        (AssignOp::Add, DataType::List(_) | DataType::Set(_) | DataType::Map(..)) => {
            column.cells.extend(element_cells(&value, time, false));
        }
        (AssignOp::Prepend, DataType::List(_)) => {
            column.cells.extend(element_cells(&value, time, true));
        }
        (AssignOp::Remove, DataType::Set(_)) => {
            if let CqlValue::Set(items) = &value {
                for v in items {
                    column.cells.insert(v.to_cql_bytes(), time.tombstone());
                }
            }
        }
        (AssignOp::Remove, DataType::List(_)) => return Err(list_needs_read(name)),
        // Cassandra prints a prepend to a non-list with '-' (sic).
        (AssignOp::Prepend, _) => {
            return Err(invalid(format!(
                "Invalid operation ({name} = {} - {name}) for non list column {name}",
                literal_text(&value)
            )))
        }
        _ => {
            return Err(invalid(format!(
                "Invalid operation on column {name} of type {ty}"
            )))
        }
    }
    Ok(())
}

/// A value as a CQL literal, for error messages.
fn literal_text(value: &CqlValue) -> String {
    let join = |items: &mut dyn Iterator<Item = String>| items.collect::<Vec<_>>().join(", ");
    match value {
        CqlValue::Text(s) | CqlValue::Ascii(s) => format!("'{s}'"),
        CqlValue::List(items) => format!("[{}]", join(&mut items.iter().map(literal_text))),
        CqlValue::Set(items) => format!("{{{}}}", join(&mut items.iter().map(literal_text))),
        CqlValue::Map(entries) => format!(
            "{{{}}}",
            join(&mut entries.iter().map(|(k, v)| format!(
                "{}: {}",
                literal_text(k),
                literal_text(v)
            )))
        ),
        CqlValue::Int(v) => v.to_string(),
        CqlValue::BigInt(v) => v.to_string(),
        other => format!("{other:?}"),
    }
}

/// `c = c - {k1, …}` on a map: the keys to remove, as a set of the key type.
pub(crate) fn map_key_set(ty: &DataType) -> Option<DataType> {
    match ty {
        DataType::Map(k, _) => Some(DataType::Set(k.clone())),
        _ => None,
    }
}

/// Removes map entries by key (`m = m - {k, …}` with `keys` a set of keys).
pub(crate) fn remove_keys(column: &mut ComplexColumn, keys: &CqlValue, time: CellTime) {
    if let CqlValue::Set(keys) = keys {
        for k in keys {
            column.cells.insert(k.to_cql_bytes(), time.tombstone());
        }
    }
}

/// `DELETE c[k]`: one element of a map (or set).
pub(crate) fn delete_element(
    column: &mut ComplexColumn,
    ty: &DataType,
    name: &str,
    key: CqlValue,
    time: CellTime,
) -> Result<(), ErrorResponse> {
    match ty {
        DataType::Map(..) | DataType::Set(_) => {
            column.cells.insert(key.to_cql_bytes(), time.tombstone());
            Ok(())
        }
        DataType::List(_) => Err(list_needs_read(name)),
        _ => Err(invalid(format!(
            "Invalid element deletion {name}[?]: {name} is not a collection"
        ))),
    }
}

/// `DELETE c`: a column deletion at the write timestamp.
pub(crate) fn delete_column(column: &mut ComplexColumn, time: CellTime) {
    column.deletion = Some(time.deletion_at(time.ts));
}

fn list_needs_read(name: &str) -> ErrorResponse {
    invalid(format!(
        "Internal error: list operation on {name} without reading the list first"
    ))
}

/// One live element of a multi-cell column: its path and cell.
type Element = (Vec<u8>, LiveCell);

/// A list operation that needs the list's current elements (Cassandra reads the row
/// before it writes for these).
#[derive(Clone, Debug)]
pub(crate) enum ListOp {
    /// `l[i] = v`.
    Set {
        /// The index.
        index: i32,
        /// The new value.
        value: Eval,
    },
    /// `DELETE l[i]`.
    Delete {
        /// The index.
        index: i32,
    },
    /// `l = l - [v, …]`: every occurrence of each value.
    Remove(Vec<CqlValue>),
}

/// Applies a list operation to the list whose live elements (in list order) are
/// `current` (`None`: the list is null).
pub(crate) fn apply_list_op(
    column: &mut ComplexColumn,
    current: Option<&[(Vec<u8>, LiveCell)]>,
    op: &ListOp,
    time: CellTime,
) -> Result<(), ErrorResponse> {
    let elements = current.unwrap_or(&[]);
    let at = |index: i32| {
        usize::try_from(index)
            .ok()
            .and_then(|i| elements.get(i))
            .map(|(path, _)| path.clone())
            .ok_or_else(|| {
                invalid(format!(
                    "List index {index} out of bound, list has size {}",
                    elements.len()
                ))
            })
    };
    match op {
        ListOp::Set { index, value } => {
            if current.is_none() {
                return Err(invalid(
                    "Attempted to set an element on a list which is null",
                ));
            }
            let path = at(*index)?;
            let cell = match value {
                Eval::Unset => return Ok(()),
                Eval::Null => time.tombstone(),
                Eval::Value(v) => time.live(v.to_cql_bytes()),
            };
            column.cells.insert(path, cell);
        }
        ListOp::Delete { index } => {
            if current.is_none() {
                return Err(invalid(
                    "Attempted to delete an element from a list which is null",
                ));
            }
            column.cells.insert(at(*index)?, time.tombstone());
        }
        ListOp::Remove(values) => {
            let doomed: Vec<Vec<u8>> = values.iter().map(CqlValue::to_cql_bytes).collect();
            for (path, cell) in elements {
                if doomed.contains(&cell.value) {
                    column.cells.insert(path.clone(), time.tombstone());
                }
            }
        }
    }
    Ok(())
}

/// The rows list operations read before they write. A statement is built twice when it
/// has such operations: the first pass records the rows it needs ([`PriorRows::list`]
/// returns `None`), they are read at the statement's consistency level, and the second
/// pass finds them.
#[derive(Default)]
pub(crate) struct PriorRows {
    /// Whether the needed rows have been read.
    fetched: bool,
    /// The rows read, by table and engine key (`None`: no live row).
    rows: HashMap<(TableId, Vec<u8>), Option<LiveRow>>,
    /// What the first pass asked for.
    needed: Vec<NeededRow>,
}

struct NeededRow {
    table: TableId,
    schema: KeySchema,
    prefix: PartitionPrefix,
    key: Vec<u8>,
    is_static: bool,
}

impl PriorRows {
    /// The current live elements of list column `column` in the row at `key` of partition
    /// `prefix`: `None` until the rows are read (the row is then recorded as needed),
    /// `Some(None)` when the list is null.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn list(
        &mut self,
        table: TableId,
        schema: &KeySchema,
        prefix: &PartitionPrefix,
        key: &[u8],
        is_static: bool,
        column: mosaic_rows::ColumnId,
    ) -> Option<Option<&[Element]>> {
        if !self.fetched {
            self.needed.push(NeededRow {
                table,
                schema: schema.clone(),
                prefix: prefix.clone(),
                key: key.to_vec(),
                is_static,
            });
            return None;
        }
        let row = self.rows.get(&(table, key.to_vec()))?;
        Some(
            row.as_ref()
                .and_then(|r| r.complex.get(&column))
                .map(Vec::as_slice),
        )
    }

    /// Rows already read (a compare-and-set's), by table and engine key (`None`: no live
    /// row); a list operation on a row not among them changes nothing.
    pub(crate) fn with_rows(rows: HashMap<(TableId, Vec<u8>), Option<LiveRow>>) -> PriorRows {
        PriorRows {
            fetched: true,
            rows,
            needed: Vec::new(),
        }
    }

    /// The rows the first pass asked for: engine key, and whether it is the static row.
    pub(crate) fn needed_rows(&self) -> Vec<(Vec<u8>, bool)> {
        self.needed
            .iter()
            .map(|n| (n.key.clone(), n.is_static))
            .collect()
    }

    /// Whether the first pass asked for rows.
    pub(crate) fn pending(&self) -> bool {
        !self.fetched && !self.needed.is_empty()
    }

    /// Reads every row asked for: the partition's head (its deletion, range tombstones and
    /// static row) and the row itself, merged as a read merges them.
    pub(crate) async fn fetch<C: Coordinator>(
        &mut self,
        coordinator: &C,
        consistency: Consistency,
        now_secs: i64,
    ) -> Result<(), ErrorResponse> {
        let consistency = match consistency {
            Consistency::Any => Consistency::One,
            other => other,
        };
        for needed in std::mem::take(&mut self.needed) {
            let mut ranges = vec![needed.schema.partition_head_range(&needed.prefix)];
            if !needed.is_static {
                let mut end = needed.key.clone();
                end.push(0);
                ranges.push(mosaic_rows::KeyRange {
                    start: needed.key.clone(),
                    end: Some(end),
                });
            }
            let mut resolver = PartitionResolver::new(&needed.schema, now_secs);
            let mut row = None;
            for range in ranges {
                let result = coordinator
                    .read(
                        ReadCommand {
                            table: needed.table,
                            range,
                            limit: usize::MAX,
                            filter: None,
                            index: None,
                        },
                        consistency,
                    )
                    .await?;
                for (key, value) in &result.entries {
                    if let Some(live) = resolver
                        .push(key, value)
                        .map_err(|e| invalid(format!("Could not read the list: {e}")))?
                    {
                        row = Some(live);
                    }
                }
            }
            if needed.is_static {
                row = resolver.static_row().cloned();
            }
            self.rows.insert((needed.table, needed.key), row);
        }
        self.fetched = true;
        Ok(())
    }
}

/// The value a multi-cell column's live elements make, `None` when there are none.
pub(crate) fn assemble(ty: &DataType, elements: &[(Vec<u8>, LiveCell)]) -> Option<CqlValue> {
    if elements.is_empty() {
        return None;
    }
    let decode = |t: &DataType, b: &[u8]| t.decode(b).ok();
    Some(match ty {
        DataType::List(e) => CqlValue::List(
            elements
                .iter()
                .filter_map(|(_, c)| decode(e, &c.value))
                .collect(),
        ),
        DataType::Set(e) => {
            let mut items: Vec<CqlValue> = elements
                .iter()
                .filter_map(|(path, _)| decode(e, path))
                .collect();
            items.sort_by(|a, b| a.cql_cmp(b).unwrap_or(Ordering::Equal));
            CqlValue::Set(items)
        }
        DataType::Map(k, v) => {
            let mut entries: Vec<(CqlValue, CqlValue)> = elements
                .iter()
                .filter_map(|(path, c)| Some((decode(k, path)?, decode(v, &c.value)?)))
                .collect();
            entries.sort_by(|(a, _), (b, _)| a.cql_cmp(b).unwrap_or(Ordering::Equal));
            CqlValue::Map(entries)
        }
        DataType::Udt(u) => {
            let mut fields: Vec<Option<CqlValue>> = vec![None; u.fields.len()];
            for (path, c) in elements {
                let index = path
                    .as_slice()
                    .try_into()
                    .map(|b: [u8; 2]| usize::from(u16::from_be_bytes(b)))
                    .ok();
                if let Some((slot, (_, field_ty))) =
                    index.and_then(|i| fields.get_mut(i).zip(u.fields.get(i)))
                {
                    *slot = decode(field_ty, &c.value);
                }
            }
            CqlValue::Tuple(fields)
        }
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Positions below 65,535 keep the 2-byte form lists were written with before; every
    /// position's bytes sort in list order.
    #[test]
    fn list_positions_are_distinct_ordered_and_compatible() {
        let positions = [0usize, 1, 255, 256, 65_534, 65_535, 65_536, 69_999, 1 << 33];
        let encoded: Vec<Vec<u8>> = positions
            .iter()
            .map(|&i| {
                let mut path = Vec::new();
                list_position(i, &mut path);
                path
            })
            .collect();
        for (&i, path) in positions.iter().zip(&encoded) {
            if i < 65_535 {
                assert_eq!(path, &(i as u16).to_be_bytes().to_vec());
            }
        }
        assert!(encoded.windows(2).all(|w| w[0] < w[1]), "{encoded:?}");
        let paths = list_paths(70_000, 1_000, false);
        assert!(paths.windows(2).all(|w| w[0] < w[1]));
    }
}
