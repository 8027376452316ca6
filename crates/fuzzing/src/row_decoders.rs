//! Arbitrary bytes as a row fragment, as an engine key of a few table shapes, as a clustering
//! filter from a peer and as a key of a heterogeneous replica's order: decoders must never
//! panic, and whatever they accept must re-encode to the same bytes (a filter: to bytes
//! that decode to the same filter; a key: permuted and back to the same key; a frozen
//! collection or tuple component: to the same bytes).

use mosaic_rows::{
    decode_component, decode_component_of, encode_component, ClusteringFilter, Fragment, KeySchema,
    Order, Permutation,
};
use mosaic_types::{CqlType, DataType};

/// Frozen key component types, by CQL name.
const FROZEN_TYPES: [&str; 5] = [
    "frozen<list<int>>",
    "frozen<set<text>>",
    "frozen<map<int, frozen<list<blob>>>>",
    "tuple<int, text, frozen<set<int>>>",
    "frozen<list<tuple<varint, decimal>>>",
];

const TYPES: [CqlType; 11] = [
    CqlType::Int,
    CqlType::Text,
    CqlType::Blob,
    CqlType::Double,
    CqlType::Uuid,
    CqlType::TimeUuid,
    CqlType::Varint,
    CqlType::Decimal,
    CqlType::Inet,
    CqlType::Time,
    CqlType::Duration,
];

/// The target: must return (never panic) for any `data`.
pub fn run(data: &[u8]) {
    let Some((&selector, bytes)) = data.split_first() else {
        return;
    };
    if let Ok(f) = Fragment::decode(bytes) {
        assert_eq!(
            f.encode(),
            bytes,
            "an accepted fragment re-encodes to its bytes"
        );
    }
    let ty = TYPES[usize::from(selector) % TYPES.len()];
    let order = if selector & 0x80 != 0 {
        Order::Desc
    } else {
        Order::Asc
    };
    let mut pos = 0;
    if decode_component(bytes, &mut pos, ty, order).is_ok() {
        assert!(pos <= bytes.len());
    }
    if let Ok(frozen) = FROZEN_TYPES[usize::from(selector) % FROZEN_TYPES.len()].parse::<DataType>()
    {
        let mut pos = 0;
        if let Ok(value) = decode_component_of(bytes, &mut pos, &frozen, order) {
            let mut again = Vec::new();
            encode_component(&mut again, &value, order);
            assert_eq!(
                again,
                bytes[..pos],
                "an accepted frozen component re-encodes to its bytes"
            );
        }
        if let Ok(schema) = KeySchema::with_types(vec![frozen.clone()], vec![(frozen, order)]) {
            let _ = schema.decode_key(bytes);
        }
    }
    if let Ok(schema) = KeySchema::new(vec![ty], vec![(CqlType::Text, order), (ty, Order::Asc)]) {
        let _ = schema.decode_key(bytes);
        let swapped = Permutation::new(vec![1, 0]).unwrap();
        if let Ok(permuted) = schema.permute_key(bytes, &swapped) {
            assert_eq!(
                schema.canonical_key(&permuted, &swapped).unwrap(),
                bytes,
                "a permuted key maps back to its canonical key"
            );
        }
        let _ = schema.canonical_key(bytes, &swapped);
        if let Ok(filter) = ClusteringFilter::decode(bytes) {
            assert_eq!(ClusteringFilter::decode(&filter.encode()).unwrap(), filter);
            if bytes.len() > 8 {
                let _ = schema.permuted_ranges(&bytes[..8], &filter, &swapped);
            }
        }
    }
    if let Ok(text) = std::str::from_utf8(bytes) {
        if let Ok(orders) = mosaic_types::parse_replica_orders(text) {
            let canonical = mosaic_types::format_replica_orders(&orders);
            assert_eq!(
                mosaic_types::parse_replica_orders(&canonical).unwrap(),
                orders
            );
        }
    }
}
