//! Property tests of the JSON codec: any text is parsed or refused without panicking, and
//! every value a type can hold reads back from the JSON it renders as.

use proptest::prelude::*;

use super::decode::decode;
use super::text::{parse, Json};
use super::*;

/// Types the properties exercise: every native type, collections (with non-text keys),
/// tuples, nesting.
const TYPES: &[&str] = &[
    "ascii",
    "text",
    "int",
    "bigint",
    "smallint",
    "tinyint",
    "varint",
    "decimal",
    "float",
    "double",
    "boolean",
    "blob",
    "uuid",
    "timeuuid",
    "timestamp",
    "date",
    "time",
    "inet",
    "duration",
    "list<int>",
    "set<text>",
    "map<text, int>",
    "map<int, frozen<list<double>>>",
    "map<frozen<tuple<int, text>>, boolean>",
    "tuple<int, text, list<timestamp>>",
    "frozen<set<frozen<map<date, inet>>>>",
];

/// JSON-looking text: fragments of the grammar glued at random, so most inputs get past
/// the first character and into the decoder.
fn json_like() -> impl Strategy<Value = String> {
    let atom = prop_oneof![
        Just("null".to_owned()),
        Just("true".to_owned()),
        Just("\"0xcafe\"".to_owned()),
        Just("\"2024-01-02 03:04:05Z\"".to_owned()),
        Just("\"NaN\"".to_owned()),
        Just("1e400".to_owned()),
        Just("-0".to_owned()),
        "-?[0-9]{1,30}(\\.[0-9]{1,5})?([eE][-+]?[0-9]{1,3})?",
        "\"[ -~]{0,12}\"",
        "\"\\\\u[0-9a-fA-F]{4}\"",
    ];
    atom.prop_recursive(4, 64, 8, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(|v| format!("[{}]", v.join(", "))),
            prop::collection::vec(("\"[a-zA-Z0-9\\[\\] ]{0,6}\"", inner.clone()), 0..6).prop_map(
                |m| {
                    let members: Vec<String> =
                        m.into_iter().map(|(k, v)| format!("{k}: {v}")).collect();
                    format!("{{{}}}", members.join(", "))
                }
            ),
            inner.prop_map(|s| serde_json::to_string(&s).unwrap_or_default()),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Arbitrary text, and arbitrary JSON, decoded as every type: an error or a value,
    /// never a panic.
    #[test]
    fn any_text_decodes_or_is_refused(text in prop_oneof![".{0,80}", json_like()]) {
        if let Ok(json) = parse(&text) {
            for ty in TYPES {
                let ty: DataType = ty.parse().unwrap();
                if let Ok(Some(v)) = decode(&json, &ty) {
                    // Whatever reads renders.
                    let _ = to_json(Some(&v), &ty);
                }
            }
            let _ = json.java_text();
        }
    }

    /// A value renders as JSON that reads back as the same value (timestamps within years
    /// 1 to 9999, which is what Cassandra's format writes unambiguously).
    #[test]
    fn values_read_back_from_their_json(
        i in any::<i32>(),
        b in any::<i64>(),
        s in ".{0,16}",
        blob in prop::collection::vec(any::<u8>(), 0..8),
        d in any::<f64>().prop_filter("finite", |d| d.is_finite()),
        f in any::<f32>().prop_filter("finite", |f| f.is_finite()),
        ts in -62_135_596_800_000i64..253_402_300_799_999,
        date in any::<u32>(),
        time in 0i64..86_400_000_000_000,
        uuid in any::<[u8; 16]>(),
        list in prop::collection::vec(any::<i32>(), 0..5),
        keys in prop::collection::vec((any::<i16>(), ".{0,6}"), 0..5),
    ) {
        let cases = [
            ("int", CqlValue::Int(i)),
            ("bigint", CqlValue::BigInt(b)),
            ("text", CqlValue::Text(s.clone())),
            ("blob", CqlValue::Blob(blob)),
            ("double", CqlValue::Double(d)),
            ("float", CqlValue::Float(f)),
            ("timestamp", CqlValue::Timestamp(ts)),
            ("date", CqlValue::Date(date)),
            ("time", CqlValue::Time(time)),
            ("uuid", CqlValue::Uuid(uuid)),
            ("varint", CqlValue::Varint(format!("{b}{}", i.unsigned_abs()).parse().unwrap())),
            ("list<int>", CqlValue::List(list.iter().copied().map(CqlValue::Int).collect())),
            (
                "frozen<set<int>>",
                CqlValue::Set(mosaic_types::normalize_set(list.iter().copied().map(CqlValue::Int).collect())),
            ),
            (
                "map<smallint, text>",
                CqlValue::Map(mosaic_types::normalize_map(
                    keys.iter().map(|(k, v)| (CqlValue::SmallInt(*k), CqlValue::Text(v.clone()))).collect(),
                )),
            ),
            (
                "map<frozen<list<int>>, text>",
                CqlValue::Map(mosaic_types::normalize_map(vec![(
                    CqlValue::List(list.iter().copied().map(CqlValue::Int).collect()),
                    CqlValue::Text(s),
                )])),
            ),
            (
                "tuple<int, timestamp, text>",
                CqlValue::Tuple(vec![Some(CqlValue::Int(i)), Some(CqlValue::Timestamp(ts)), None]),
            ),
        ];
        for (ty, value) in cases {
            let ty: DataType = ty.parse().unwrap();
            let text = to_json(Some(&value), &ty);
            let json = parse(&text).map_err(|e| TestCaseError::fail(format!("{text}: {e}")))?;
            prop_assert_eq!(decode(&json, &ty), Ok(Some(value)), "{}", text);
        }
    }
}

#[test]
fn select_json_keys_quote_upper_case_names_only() {
    let columns = vec![
        ("k".to_owned(), ColumnType::Native(CqlType::Int)),
        ("Val".to_owned(), ColumnType::Native(CqlType::Text)),
        ("a\"b".to_owned(), ColumnType::Native(CqlType::Int)),
        ("with space".to_owned(), ColumnType::Native(CqlType::Int)),
    ];
    let row = vec![
        Some(Bytes::from(CqlValue::Int(1).to_cql_bytes())),
        Some(Bytes::from(CqlValue::Text("v".into()).to_cql_bytes())),
        None,
        Some(Bytes::from(CqlValue::Int(3).to_cql_bytes())),
    ];
    let rows = result_rows(true, &columns, &[], vec![row]);
    assert_eq!(
        rows,
        vec![vec![Some(Bytes::from(
            r#"{"k": 1, "\"Val\"": "v", "a\"b": null, "with space": 3}"#
        ))]]
    );
}

#[test]
fn to_json_columns_render_once_per_wrapper() {
    let columns = vec![(
        "system.tojson(t)".to_owned(),
        ColumnType::Native(CqlType::Text),
    )];
    let row = || {
        vec![Some(Bytes::from(
            CqlValue::Text("a\"".into()).to_cql_bytes(),
        ))]
    };
    assert_eq!(
        result_rows(false, &columns, &[1], vec![row()]),
        vec![vec![Some(Bytes::from(r#""a\"""#))]]
    );
    assert_eq!(
        result_rows(false, &columns, &[2], vec![row()]),
        vec![vec![Some(Bytes::from(r#""\"a\\\"\"""#))]]
    );
    assert_eq!(
        result_rows(false, &columns, &[1], vec![vec![None]]),
        vec![vec![Some(Bytes::from("null"))]]
    );
    assert!(matches!(parse("[1]"), Ok(Json::Array(_))));
}
