//! Scenario: frozen collections, tuples and user-defined types as key components — their
//! encodings sort as Cassandra compares the values (lists and sets element by element, a
//! prefix first; maps entry by entry; tuples field by field, null first), in both
//! directions, stay prefix-free inside compound keys, decode back to their values, and
//! reject every non-canonical byte string without panicking.

// Test code: a panic is the failure report.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use std::cmp::Ordering;

use mosaic_rows::{decode_component_of, encode_component, KeyEntry, KeySchema, Order};
use mosaic_types::{normalize_map, normalize_set, CqlType, CqlValue, DataType};
use proptest::prelude::*;

fn native() -> impl Strategy<Value = CqlType> {
    prop_oneof![
        Just(CqlType::Int),
        Just(CqlType::Text),
        Just(CqlType::Boolean),
        Just(CqlType::BigInt),
        Just(CqlType::Blob),
    ]
}

/// Frozen types up to three levels deep.
fn data_type() -> impl Strategy<Value = DataType> {
    let leaf = native().prop_map(DataType::Native);
    leaf.prop_recursive(3, 12, 3, |inner| {
        prop_oneof![
            inner
                .clone()
                .prop_map(|e| DataType::Frozen(Box::new(DataType::List(Box::new(e))))),
            inner
                .clone()
                .prop_map(|e| DataType::Frozen(Box::new(DataType::Set(Box::new(e))))),
            (inner.clone(), inner.clone()).prop_map(|(k, v)| DataType::Frozen(Box::new(
                DataType::Map(Box::new(k), Box::new(v))
            ))),
            proptest::collection::vec(inner, 1..4).prop_map(DataType::Tuple),
        ]
    })
}

fn native_value(ty: CqlType) -> BoxedStrategy<CqlValue> {
    match ty {
        CqlType::Int => prop_oneof![-3i32..3, any::<i32>()]
            .prop_map(CqlValue::Int)
            .boxed(),
        CqlType::BigInt => any::<i64>().prop_map(CqlValue::BigInt).boxed(),
        CqlType::Boolean => any::<bool>().prop_map(CqlValue::Boolean).boxed(),
        CqlType::Blob => {
            proptest::collection::vec(prop_oneof![Just(0u8), Just(0xff), any::<u8>()], 0..4)
                .prop_map(CqlValue::Blob)
                .boxed()
        }
        _ => "[a-c\\x00]{0,3}".prop_map(CqlValue::Text).boxed(),
    }
}

fn value_of(ty: &DataType) -> BoxedStrategy<CqlValue> {
    match ty {
        DataType::Native(t) => native_value(*t),
        DataType::Frozen(inner) => value_of(inner),
        DataType::List(e) => proptest::collection::vec(value_of(e), 0..4)
            .prop_map(CqlValue::List)
            .boxed(),
        DataType::Set(e) => proptest::collection::vec(value_of(e), 0..4)
            .prop_map(|items| CqlValue::Set(normalize_set(items)))
            .boxed(),
        DataType::Map(k, v) => proptest::collection::vec((value_of(k), value_of(v)), 0..4)
            .prop_map(|entries| CqlValue::Map(normalize_map(entries)))
            .boxed(),
        DataType::Tuple(fields) => fields
            .iter()
            .map(|f| proptest::option::of(value_of(f)))
            .collect::<Vec<_>>()
            .prop_map(CqlValue::Tuple)
            .boxed(),
        _ => unreachable!("not generated"),
    }
}

/// A type and two values of it (often sharing a prefix, to exercise the tie-breaks).
fn two_values() -> impl Strategy<Value = (DataType, CqlValue, CqlValue)> {
    data_type().prop_flat_map(|ty| {
        let a = value_of(&ty);
        let b = value_of(&ty);
        (Just(ty), a, b)
    })
}

/// Cassandra's comparison, written from `CollectionType`/`MapType`/`TupleType.compare`
/// (natives compare as `cql_cmp`, checked against Cassandra in `key_order.rs`).
fn reference_cmp(a: &CqlValue, b: &CqlValue) -> Ordering {
    fn sequence(a: &[CqlValue], b: &[CqlValue]) -> Ordering {
        for (x, y) in a.iter().zip(b) {
            let o = reference_cmp(x, y);
            if o != Ordering::Equal {
                return o;
            }
        }
        a.len().cmp(&b.len())
    }
    match (a, b) {
        (CqlValue::List(x), CqlValue::List(y)) | (CqlValue::Set(x), CqlValue::Set(y)) => {
            sequence(x, y)
        }
        (CqlValue::Map(x), CqlValue::Map(y)) => {
            // Entry by entry, key then value; then the number of entries.
            for ((ka, va), (kb, vb)) in x.iter().zip(y) {
                let o = reference_cmp(ka, kb).then_with(|| reference_cmp(va, vb));
                if o != Ordering::Equal {
                    return o;
                }
            }
            x.len().cmp(&y.len())
        }
        (CqlValue::Tuple(x), CqlValue::Tuple(y)) => {
            for (p, q) in x.iter().zip(y) {
                let o = match (p, q) {
                    (None, None) => Ordering::Equal,
                    (None, Some(_)) => Ordering::Less,
                    (Some(_), None) => Ordering::Greater,
                    (Some(p), Some(q)) => reference_cmp(p, q),
                };
                if o != Ordering::Equal {
                    return o;
                }
            }
            Ordering::Equal
        }
        _ => a.cql_cmp(b).expect("values of one type compare"),
    }
}

fn enc(v: &CqlValue, order: Order) -> Vec<u8> {
    let mut out = Vec::new();
    encode_component(&mut out, v, order);
    out
}

proptest! {
    #[test]
    fn encodings_sort_as_cassandra_compares((ty, a, b) in two_values()) {
        let expected = reference_cmp(&a, &b);
        prop_assert_eq!(enc(&a, Order::Asc).cmp(&enc(&b, Order::Asc)), expected, "{} {:?} {:?}", ty, a, b);
        prop_assert_eq!(enc(&a, Order::Desc).cmp(&enc(&b, Order::Desc)), expected.reverse());
    }

    #[test]
    fn encodings_decode_back_and_are_prefix_free((ty, a, b) in two_values()) {
        for order in [Order::Asc, Order::Desc] {
            // Two components back to back: each decodes to its value and ends where the
            // next begins.
            let mut bytes = enc(&a, order);
            let split = bytes.len();
            bytes.extend(enc(&b, order));
            let mut pos = 0;
            prop_assert_eq!(&decode_component_of(&bytes, &mut pos, &ty, order).unwrap(), &a);
            prop_assert_eq!(pos, split);
            prop_assert_eq!(&decode_component_of(&bytes, &mut pos, &ty, order).unwrap(), &b);
            prop_assert_eq!(pos, bytes.len());
        }
    }

    #[test]
    fn garbage_is_refused_or_canonical(
        ty in data_type(),
        bytes in proptest::collection::vec(prop_oneof![Just(0u8), Just(1), Just(2), Just(0xff), any::<u8>()], 0..40),
    ) {
        for order in [Order::Asc, Order::Desc] {
            let mut pos = 0;
            if let Ok(v) = decode_component_of(&bytes, &mut pos, &ty, order) {
                prop_assert_eq!(enc(&v, order), bytes[..pos].to_vec());
            }
        }
    }

    #[test]
    fn frozen_keys_round_trip_through_a_key_schema((ty, a, b) in two_values()) {
        let schema = KeySchema::with_types(
            vec![ty.clone()],
            vec![(ty.clone(), Order::Desc), (DataType::Native(CqlType::Int), Order::Asc)],
        ).unwrap();
        let p = schema.partition_prefix(std::slice::from_ref(&a)).unwrap();
        let key = schema.row_key(&p, &[b.clone(), CqlValue::Int(1)]).unwrap();
        let decoded = schema.decode_key(&key).unwrap();
        prop_assert_eq!(decoded.partition_key, vec![a.clone()]);
        prop_assert_eq!(decoded.entry, KeyEntry::Row(vec![b, CqlValue::Int(1)]));
        // The token is Murmur3 of the value's serialization, as Cassandra's.
        prop_assert_eq!(p.token(), mosaic_types::token_of(&a.to_cql_bytes()));
    }
}

#[test]
fn documented_bytes() {
    let int = CqlValue::Int;
    let list = CqlValue::List(vec![int(1), int(2)]);
    assert_eq!(
        enc(&list, Order::Asc),
        [1, 0x80, 0, 0, 1, 1, 0x80, 0, 0, 2, 0]
    );
    let tuple = CqlValue::Tuple(vec![None, Some(int(0)), None]);
    assert_eq!(enc(&tuple, Order::Asc), [1, 2, 0x80, 0, 0, 0, 0]);
    let map = CqlValue::Map(vec![(CqlValue::Boolean(true), int(0))]);
    assert_eq!(enc(&map, Order::Asc), [1, 1, 0x80, 0, 0, 0, 0]);
    // A tuple with trailing nulls is the same key as the same tuple without them.
    let short = CqlValue::Tuple(vec![None, Some(int(0))]);
    assert_eq!(enc(&short, Order::Asc), enc(&tuple, Order::Asc));
    // An unsorted set is keyed as its sorted form.
    let unsorted = CqlValue::Set(vec![int(2), int(1), int(2)]);
    assert_eq!(
        enc(&unsorted, Order::Asc),
        enc(&CqlValue::Set(vec![int(1), int(2)]), Order::Asc)
    );
}

#[test]
fn non_canonical_frozen_components_are_refused() {
    let set = DataType::Frozen(Box::new(DataType::Set(Box::new(DataType::Native(
        CqlType::Int,
    )))));
    let decode = |bytes: &[u8], ty: &DataType| decode_component_of(bytes, &mut 0, ty, Order::Asc);
    // Elements out of order, and a duplicate.
    assert!(decode(&[1, 0x80, 0, 0, 2, 1, 0x80, 0, 0, 1, 0], &set).is_err());
    assert!(decode(&[1, 0x80, 0, 0, 1, 1, 0x80, 0, 0, 1, 0], &set).is_err());
    assert!(decode(&[1, 0x80, 0, 0, 1, 0], &set).is_ok());
    // A bad marker, a missing terminator.
    assert!(decode(&[3, 0], &set).is_err());
    assert!(decode(&[1, 0x80, 0, 0, 1], &set).is_err());
    let tuple = DataType::Tuple(vec![DataType::Native(CqlType::Int)]);
    // An explicit trailing null, and more fields than the type has.
    assert!(decode(&[1, 0], &tuple).is_err());
    assert!(decode(&[2, 0x80, 0, 0, 1, 2, 0x80, 0, 0, 1, 0], &tuple).is_err());
    assert_eq!(decode(&[0], &tuple).unwrap(), CqlValue::Tuple(vec![None]));
    // Nesting deeper than any CQL type is refused, not a stack overflow.
    let mut deep = DataType::Native(CqlType::Int);
    for _ in 0..100 {
        deep = DataType::Frozen(Box::new(DataType::List(Box::new(deep))));
    }
    assert!(decode(&[1; 200], &deep).is_err());
}
