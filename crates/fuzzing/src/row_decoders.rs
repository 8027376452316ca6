//! Arbitrary bytes as a row fragment and as an engine key of a few table shapes: decoders
//! must never panic, and whatever they accept must re-encode to the same bytes.

use mosaic_rows::{decode_component, Fragment, KeySchema, Order};
use mosaic_types::CqlType;

const TYPES: [CqlType; 8] = [
    CqlType::Int,
    CqlType::Text,
    CqlType::Blob,
    CqlType::Double,
    CqlType::Uuid,
    CqlType::TimeUuid,
    CqlType::Varint,
    CqlType::Decimal,
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
    if let Ok(schema) = KeySchema::new(vec![ty], vec![(CqlType::Text, order), (ty, Order::Asc)]) {
        let _ = schema.decode_key(bytes);
    }
}
