//! Arbitrary bytes as JSON for `fromJson()` / `INSERT … JSON` (the first byte picks the CQL
//! type, the rest is the text, lossily UTF-8): reading must never panic, whatever reads must
//! render, and for the types whose JSON Cassandra writes unambiguously (not NaN, which it
//! writes as `null`, nor timestamps outside years 1 to 9999) what renders reads back as the
//! same value.

use mosaic_cql::processor::{decode_json_text, render_json};
use mosaic_types::DataType;

/// The types picked by the first byte, and whether their rendering reads back exactly.
pub const TYPES: [(&str, bool); 24] = [
    ("int", true),
    ("bigint", true),
    ("smallint", true),
    ("tinyint", true),
    ("varint", true),
    ("text", true),
    ("ascii", true),
    ("boolean", true),
    ("blob", true),
    ("uuid", true),
    ("timeuuid", true),
    ("time", true),
    ("inet", true),
    ("list<int>", true),
    ("set<text>", true),
    ("map<int, text>", true),
    ("map<frozen<list<blob>>, boolean>", true),
    ("tuple<int, text, frozen<set<bigint>>>", true),
    ("decimal", false),
    ("double", false),
    ("float", false),
    ("timestamp", false),
    ("date", false),
    ("duration", false),
];

/// The target: must return (never panic) for any `data`.
pub fn run(data: &[u8]) {
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    let (name, exact) = TYPES[usize::from(selector) % TYPES.len()];
    let ty: DataType = name.parse().unwrap();
    let text = String::from_utf8_lossy(rest);
    let Ok(Some(value)) = decode_json_text(&text, &ty) else {
        return;
    };
    let rendered = render_json(Some(&value), &ty);
    let again = decode_json_text(&rendered, &ty);
    if exact {
        assert_eq!(
            again,
            Ok(Some(value)),
            "{text:?} as {name} rendered as {rendered:?}"
        );
    }
}
