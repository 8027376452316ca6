//! Order-preserving encoding of frozen collections, tuples and user-defined types as key
//! components (a `frozen<list<int>>` clustering column, a tuple partition key).
//!
//! Cassandra compares these values structurally (`CollectionType`, `TupleType`): lists
//! and sets element by element, a prefix first; maps entry by entry, key then value, a
//! prefix first; tuples and user-defined types field by field, a null field before any
//! value, trailing nulls equal to missing fields. The encodings below give that order
//! bytewise, and stay prefix-free, because every element's own encoding is prefix-free
//! and a marker byte before each element (and a terminator after the last) says whether
//! one more follows:
//!
//! | value | encoding |
//! |---|---|
//! | list, set | `0x01 ‖ element` per element, then `0x00` |
//! | map | `0x01 ‖ key ‖ value` per entry, then `0x00` |
//! | tuple, UDT | per field up to the last non-null one: `0x01` (null) or `0x02 ‖ field`; then `0x00` |
//!
//! Elements and fields use their own ascending encodings (native ones from
//! [`crate::component`], nested frozen values from here). Decoding is strict: set elements
//! and map keys must be strictly ascending (sets and maps are canonical: sorted, no
//! duplicates), a tuple must not end with an explicit null nor hold more fields than its
//! type, so `encode(decode(b)) == b` for every accepted `b`. `docs/format-rows.md`,
//! section 2, has the same table.

use mosaic_types::{CqlValue, DataType};

use crate::component::{decode_asc, encode_asc, Reader};
use crate::error::KeyError;

/// Another element or entry follows.
const MORE: u8 = 0x01;
/// The end of a collection or tuple.
const END: u8 = 0x00;
/// A null tuple field.
const NULL_FIELD: u8 = 0x01;
/// A tuple field with a value.
const FIELD: u8 = 0x02;

/// How deeply frozen values may nest in a key: deeper keys do not decode (a type written
/// in CQL is far shallower; the bound keeps a hostile key from exhausting the stack).
const DEPTH_MAX: usize = 32;

/// Appends the ascending encoding of a list's or set's elements.
pub(crate) fn encode_elements(out: &mut Vec<u8>, items: &[CqlValue], set: bool) {
    if set && !strictly_ascending(items.iter()) {
        // Keys are built from normalized values; sort anyway rather than store a set
        // whose key would not decode.
        let sorted = mosaic_types::normalize_set(items.to_vec());
        return encode_elements(out, &sorted, false);
    }
    for item in items {
        out.push(MORE);
        encode_asc(out, item);
    }
    out.push(END);
}

/// Appends the ascending encoding of a map's entries.
pub(crate) fn encode_entries(out: &mut Vec<u8>, entries: &[(CqlValue, CqlValue)]) {
    if !strictly_ascending(entries.iter().map(|(k, _)| k)) {
        let sorted = mosaic_types::normalize_map(entries.to_vec());
        return encode_entries(out, &sorted);
    }
    for (k, v) in entries {
        out.push(MORE);
        encode_asc(out, k);
        encode_asc(out, v);
    }
    out.push(END);
}

/// Appends the ascending encoding of a tuple's (or user-defined type's) fields.
pub(crate) fn encode_fields(out: &mut Vec<u8>, fields: &[Option<CqlValue>]) {
    // Trailing nulls are left out: Cassandra compares them equal to missing fields.
    let len = fields
        .iter()
        .rposition(Option::is_some)
        .map_or(0, |last| last + 1);
    for field in fields.iter().take(len) {
        match field {
            None => out.push(NULL_FIELD),
            Some(v) => {
                out.push(FIELD);
                encode_asc(out, v);
            }
        }
    }
    out.push(END);
}

fn strictly_ascending<'a>(mut items: impl Iterator<Item = &'a CqlValue>) -> bool {
    let Some(mut previous) = items.next() else {
        return true;
    };
    for item in items {
        if previous.cql_cmp(item) != Some(std::cmp::Ordering::Less) {
            return false;
        }
        previous = item;
    }
    true
}

/// Decodes one ascending component of type `ty` (any type: native ones through
/// [`decode_asc`]).
pub(crate) fn decode_typed(
    r: &mut Reader<'_>,
    ty: &DataType,
    depth: usize,
) -> Result<CqlValue, KeyError> {
    if depth > DEPTH_MAX {
        return Err(bad(r, ty, "nested too deeply"));
    }
    match ty {
        DataType::Native(native) => {
            r.ty = *native;
            decode_asc(r)
        }
        DataType::Frozen(inner) => decode_typed(r, inner, depth + 1),
        DataType::List(e) => Ok(CqlValue::List(decode_elements(r, ty, e, false, depth)?)),
        DataType::Set(e) => Ok(CqlValue::Set(decode_elements(r, ty, e, true, depth)?)),
        DataType::Map(k, v) => {
            let mut entries: Vec<(CqlValue, CqlValue)> = Vec::new();
            let mut previous_key: Option<(usize, usize)> = None;
            while more(r, ty)? {
                let start = r.pos;
                let key = decode_typed(r, k, depth + 1)?;
                let key_span = (start, r.pos);
                check_ascending(r, ty, previous_key, key_span)?;
                previous_key = Some(key_span);
                let value = decode_typed(r, v, depth + 1)?;
                entries.push((key, value));
            }
            Ok(CqlValue::Map(entries))
        }
        DataType::Tuple(fields) => decode_fields(r, ty, fields.iter(), depth),
        DataType::Udt(u) => decode_fields(r, ty, u.fields.iter().map(|(_, t)| t), depth),
        // `DataType` is non-exhaustive: a kind this build cannot key on.
        _ => Err(bad(r, ty, "type cannot be a key component")),
    }
}

fn decode_elements(
    r: &mut Reader<'_>,
    ty: &DataType,
    element: &DataType,
    set: bool,
    depth: usize,
) -> Result<Vec<CqlValue>, KeyError> {
    let mut items = Vec::new();
    let mut previous: Option<(usize, usize)> = None;
    while more(r, ty)? {
        let start = r.pos;
        items.push(decode_typed(r, element, depth + 1)?);
        if set {
            check_ascending(r, ty, previous, (start, r.pos))?;
            previous = Some((start, r.pos));
        }
    }
    Ok(items)
}

fn decode_fields<'a>(
    r: &mut Reader<'_>,
    ty: &DataType,
    fields: impl ExactSizeIterator<Item = &'a DataType>,
    depth: usize,
) -> Result<CqlValue, KeyError> {
    let count = fields.len();
    let mut values = Vec::with_capacity(count);
    let mut fields = fields;
    loop {
        match r.byte()? {
            END => break,
            NULL_FIELD => {
                fields
                    .next()
                    .ok_or_else(|| bad(r, ty, "more fields than the type has"))?;
                values.push(None);
            }
            FIELD => {
                let field = fields
                    .next()
                    .ok_or_else(|| bad(r, ty, "more fields than the type has"))?;
                values.push(Some(decode_typed(r, field, depth + 1)?));
            }
            _ => return Err(bad(r, ty, "a field marker must be 0, 1 or 2")),
        }
    }
    if values.last().is_some_and(Option::is_none) {
        return Err(bad(r, ty, "trailing null field"));
    }
    values.resize(count, None);
    Ok(CqlValue::Tuple(values))
}

/// Reads the marker before an element: whether one follows.
fn more(r: &mut Reader<'_>, ty: &DataType) -> Result<bool, KeyError> {
    match r.byte()? {
        MORE => Ok(true),
        END => Ok(false),
        _ => Err(bad(r, ty, "an element marker must be 0 or 1")),
    }
}

/// Set elements and map keys must be strictly ascending: their encodings (order-preserving
/// and prefix-free) compare as the values do.
fn check_ascending(
    r: &Reader<'_>,
    ty: &DataType,
    previous: Option<(usize, usize)>,
    current: (usize, usize),
) -> Result<(), KeyError> {
    let Some(previous) = previous else {
        return Ok(());
    };
    if r.span_cmp(previous, current) == std::cmp::Ordering::Less {
        Ok(())
    } else {
        Err(bad(r, ty, "elements not strictly ascending"))
    }
}

fn bad(r: &Reader<'_>, ty: &DataType, reason: &'static str) -> KeyError {
    KeyError::BadFrozenComponent {
        ty: ty.to_string(),
        offset: r.pos,
        reason,
    }
}
