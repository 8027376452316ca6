//! Cells of system-table rows in native-protocol v4 serialization (`[bytes]` contents):
//! the handful of types Cassandra's system tables use, and collections of them.
//!
//! Collections follow §6 of the v4 spec: `[int n]` then each element as `[int len][bytes]`
//! (a map: key then value). Sets and map keys are written in the order Cassandra keeps
//! them, the byte order of their serialized form for the text keys used here, so results
//! are deterministic and equal to what Cassandra would send.

use std::collections::BTreeMap;
use std::net::IpAddr;

use bytes::{BufMut, Bytes, BytesMut};

use crate::schema::Uuid;

/// A cell: `None` is null.
pub(crate) type Cell = Option<Bytes>;

/// `text` (and `ascii`).
pub(crate) fn text(s: &str) -> Cell {
    Some(Bytes::copy_from_slice(s.as_bytes()))
}

/// `int`.
pub(crate) fn int(v: i32) -> Cell {
    Some(Bytes::copy_from_slice(&v.to_be_bytes()))
}

/// `double`.
pub(crate) fn double(v: f64) -> Cell {
    Some(Bytes::copy_from_slice(&v.to_be_bytes()))
}

/// `boolean`.
pub(crate) fn boolean(v: bool) -> Cell {
    Some(Bytes::copy_from_slice(&[u8::from(v)]))
}

/// `uuid` (and `timeuuid`).
pub(crate) fn uuid(v: Uuid) -> Cell {
    Some(Bytes::copy_from_slice(&v.0))
}

/// `inet`: 4 bytes for IPv4, 16 for IPv6.
pub(crate) fn inet(v: IpAddr) -> Cell {
    Some(match v {
        IpAddr::V4(a) => Bytes::copy_from_slice(&a.octets()),
        IpAddr::V6(a) => Bytes::copy_from_slice(&a.octets()),
    })
}

/// `blob`.
pub(crate) fn blob(v: &[u8]) -> Cell {
    Some(Bytes::copy_from_slice(v))
}

/// Appends `[int len][bytes]`.
///
/// # Panics
/// If an element reaches 2 GiB, which no system-table value can (a bug upstream).
fn put_element(out: &mut BytesMut, element: &[u8]) {
    let len = i32::try_from(element.len()).expect("a collection element is under 2 GiB");
    out.put_i32(len);
    out.extend_from_slice(element);
}

/// Appends `[int n]`.
///
/// # Panics
/// If a collection reaches 2^31 elements (a bug upstream).
fn put_count(out: &mut BytesMut, n: usize) {
    out.put_i32(i32::try_from(n).expect("a collection holds under 2^31 elements"));
}

/// A `list<text>`, in the order given. Empty lists are serialized (frozen collections
/// may be empty, and Cassandra's `system_schema` lists are frozen).
pub(crate) fn text_list<S: AsRef<str>>(items: &[S]) -> Cell {
    let mut out = BytesMut::new();
    put_count(&mut out, items.len());
    for item in items {
        put_element(&mut out, item.as_ref().as_bytes());
    }
    Some(out.freeze())
}

/// A `set<text>`: sorted, deduplicated. `frozen` sets are serialized even when empty;
/// an empty non-frozen set is null, as Cassandra returns it.
pub(crate) fn text_set<S: AsRef<str>>(items: &[S], frozen: bool) -> Cell {
    let mut sorted: Vec<&str> = items.iter().map(AsRef::as_ref).collect();
    sorted.sort_unstable();
    sorted.dedup();
    if sorted.is_empty() && !frozen {
        return None;
    }
    let mut out = BytesMut::new();
    put_count(&mut out, sorted.len());
    for item in sorted {
        put_element(&mut out, item.as_bytes());
    }
    Some(out.freeze())
}

/// A frozen `map<text, text>`, in key order (possibly empty).
pub(crate) fn text_map(map: &BTreeMap<String, String>) -> Cell {
    let mut out = BytesMut::new();
    put_count(&mut out, map.len());
    for (k, v) in map {
        put_element(&mut out, k.as_bytes());
        put_element(&mut out, v.as_bytes());
    }
    Some(out.freeze())
}

/// A `map<text, frozen<list<text>>>`, in the order given (possibly empty).
pub(crate) fn text_list_map(entries: &[(String, Vec<String>)]) -> Cell {
    let mut out = BytesMut::new();
    put_count(&mut out, entries.len());
    for (k, items) in entries {
        put_element(&mut out, k.as_bytes());
        let list = text_list(items).unwrap_or_default();
        put_element(&mut out, &list);
    }
    Some(out.freeze())
}

/// A frozen `map<text, blob>`, in key order (possibly empty).
pub(crate) fn blob_map(map: &BTreeMap<String, Vec<u8>>) -> Cell {
    let mut out = BytesMut::new();
    put_count(&mut out, map.len());
    for (k, v) in map {
        put_element(&mut out, k.as_bytes());
        put_element(&mut out, v);
    }
    Some(out.freeze())
}

/// The elements of a serialized `list<T>` or `set<T>` (a bound `IN ?` value); `None` for
/// a null element. `None` overall if the bytes are not a well-formed collection.
pub(crate) fn decode_elements(bytes: &[u8]) -> Option<Vec<Option<Bytes>>> {
    decode_collection(bytes, 1)
}

/// The keys and values of a serialized `map<K, V>`, alternating.
#[cfg(test)]
pub(crate) fn decode_map_items(bytes: &[u8]) -> Option<Vec<Option<Bytes>>> {
    decode_collection(bytes, 2)
}

/// A collection of `[int n]` entries of `per_entry` `[bytes]` each.
fn decode_collection(bytes: &[u8], per_entry: usize) -> Option<Vec<Option<Bytes>>> {
    let (n, mut rest) = split_i32(bytes)?;
    let n = usize::try_from(n).ok()?.checked_mul(per_entry)?;
    // Each element takes at least 4 bytes: a count beyond that is malformed, and bounding
    // it here keeps a hostile count from reserving memory.
    if n > rest.len() / 4 {
        return None;
    }
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let (len, after) = split_i32(rest)?;
        if len < 0 {
            out.push(None);
            rest = after;
            continue;
        }
        let (element, after) = after.split_at_checked(usize::try_from(len).ok()?)?;
        out.push(Some(Bytes::copy_from_slice(element)));
        rest = after;
    }
    rest.is_empty().then_some(out)
}

fn split_i32(bytes: &[u8]) -> Option<(i32, &[u8])> {
    let (head, rest) = bytes.split_at_checked(4)?;
    Some((i32::from_be_bytes(head.try_into().ok()?), rest))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sets_are_sorted_and_empty_ones_null_unless_frozen() {
        let cell = text_set(&["b", "a", "b"], false).unwrap();
        assert_eq!(
            &cell[..],
            &[0, 0, 0, 2, 0, 0, 0, 1, b'a', 0, 0, 0, 1, b'b'][..]
        );
        assert_eq!(text_set::<&str>(&[], false), None);
        assert_eq!(&text_set::<&str>(&[], true).unwrap()[..], &[0, 0, 0, 0][..]);
    }

    #[test]
    fn bound_lists_decode_and_garbage_does_not() {
        let list = text_list(&["x", "yz"]).unwrap();
        let elements = decode_elements(&list).unwrap();
        assert_eq!(
            elements,
            vec![
                Some(Bytes::from_static(b"x")),
                Some(Bytes::from_static(b"yz"))
            ]
        );
        assert_eq!(decode_elements(&[0, 0, 0, 1, 0, 0, 0, 5, b'a']), None);
        assert_eq!(decode_elements(&[0x7f, 0xff, 0xff, 0xff]), None);
        assert_eq!(decode_elements(&[0, 0]), None);
        assert_eq!(
            decode_elements(&[0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff]),
            Some(vec![None])
        );
    }
}
