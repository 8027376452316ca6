//! JSON values to CQL values of a given type, as Cassandra 4.1's `fromJSONObject` reads
//! them, with its messages.
//!
//! What each type takes: the JSON kind it stands for, and a string of its CQL text (`"12"`
//! for an `int`, `"true"` for a `boolean`, `"0xcafe"` for a `blob`; a collection, tuple or
//! user type given as a string is that string read as JSON). Integers must fit: an `int`
//! takes a JSON integer within 32 bits, a `bigint` within 64; `smallint`, `tinyint`,
//! `varint` and `decimal` read the number's text (so `1.5` is no `smallint`, and a `decimal`
//! from a JSON fraction is the double's text: `1.10` is `1.1`, `"1.10"` is `1.10`); `float`
//! and `double` take any number. A `timestamp` is a date string or an integer of
//! milliseconds; a `date` and a `time` only strings (digits there are the raw value). Map
//! keys are JSON strings, read as a string of the key type.

use mosaic_types::{
    normalize_map, normalize_set, parse_inet, parse_time, uuid_version, CqlDuration, CqlType,
    CqlValue, DataType, Decimal, UserType, Varint,
};

use super::text::{case_sensitive_keys, parse, Json, Number};
use crate::processor::values::{parse_date, parse_timestamp};

/// Why a JSON value is not a value of its type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum DecodeError {
    /// Cassandra's `MarshalException`: callers say which column (`Error decoding JSON value
    /// for c: …`) or function it was for.
    Marshal(String),
    /// An error Cassandra reports as it is (a bad duration).
    Invalid(String),
}

type Decoded<T> = Result<T, DecodeError>;

fn marshal<T>(message: impl Into<String>) -> Decoded<T> {
    Err(DecodeError::Marshal(message.into()))
}

/// `v` as a value of type `ty`; `None` for JSON `null`.
pub(crate) fn decode(v: &Json, ty: &DataType) -> Decoded<Option<CqlValue>> {
    if matches!(v, Json::Null) {
        return Ok(None);
    }
    match ty {
        DataType::Native(t) => native(v, *t).map(Some),
        DataType::Frozen(inner) => decode(v, inner),
        DataType::List(_) | DataType::Set(_) | DataType::Map(..) | DataType::Tuple(_) => {
            complex(&reparsed(v)?, ty).map(Some)
        }
        DataType::Udt(u) => udt(&reparsed(v)?, u).map(Some),
        _ => marshal(format!("JSON is not supported for type {ty}")),
    }
}

/// A collection, tuple or user type given as a JSON string: the string read as JSON.
fn reparsed(v: &Json) -> Decoded<Json> {
    match v {
        Json::String(s) => {
            parse(s).map_err(|e| DecodeError::Marshal(format!("Error decoding JSON string: {e}")))
        }
        other => Ok(other.clone()),
    }
}

/// A value inside a collection: null is refused with `null_message`.
fn element(v: &Json, ty: &DataType, null_message: &str) -> Decoded<CqlValue> {
    match decode(v, ty)? {
        Some(value) => Ok(value),
        None => marshal(null_message),
    }
}

fn complex(v: &Json, ty: &DataType) -> Decoded<CqlValue> {
    match (ty, v) {
        (DataType::List(e), Json::Array(items)) => Ok(CqlValue::List(
            items
                .iter()
                .map(|i| element(i, e, "Invalid null element in list"))
                .collect::<Decoded<_>>()?,
        )),
        (DataType::List(_), _) => marshal(format!("Expected a list, but got a {}", v.got())),
        (DataType::Set(e), Json::Array(items)) => Ok(CqlValue::Set(normalize_set(
            items
                .iter()
                .map(|i| element(i, e, "Invalid null element in set"))
                .collect::<Decoded<_>>()?,
        ))),
        (DataType::Set(_), _) => marshal(format!(
            "Expected a list (representing a set), but got a {}",
            v.got()
        )),
        (DataType::Map(kt, vt), Json::Object(members)) => {
            let mut entries = Vec::with_capacity(members.len());
            for (key, value) in members {
                if matches!(value, Json::Null) {
                    return marshal("Invalid null value in map");
                }
                let key = element(&Json::String(key.clone()), kt, "Invalid null key in map")?;
                entries.push((key, element(value, vt, "Invalid null value in map")?));
            }
            Ok(CqlValue::Map(normalize_map(entries)))
        }
        (DataType::Map(..), _) => marshal(format!("Expected a map, but got a {}", v.got())),
        (DataType::Tuple(types), Json::Array(items)) => {
            if items.len() != types.len() {
                let what = if items.len() > types.len() {
                    "contains extra"
                } else {
                    "is missing"
                };
                return marshal(format!(
                    "Tuple {what} items (expected {}): {}",
                    types.len(),
                    v.java_text()
                ));
            }
            Ok(CqlValue::Tuple(
                items
                    .iter()
                    .zip(types)
                    .map(|(i, t)| decode(i, t))
                    .collect::<Decoded<_>>()?,
            ))
        }
        (DataType::Tuple(_), _) => marshal(format!(
            "Expected a list representation of a tuple, but got a {}",
            v.got()
        )),
        // Only collections and tuples come here.
        _ => decode(v, ty)?.map_or_else(|| marshal("Invalid null value"), Ok),
    }
}

/// A user type from an object: fields by name (`"\"Name\""` for a case-sensitive one),
/// those left out null; an unknown field is refused.
fn udt(v: &Json, u: &UserType) -> Decoded<CqlValue> {
    let Json::Object(members) = v else {
        return marshal(format!("Expected a map, but got a {}", v.got()));
    };
    let members = case_sensitive_keys(members.clone());
    let mut values = Vec::with_capacity(u.fields.len());
    for (name, ty) in &u.fields {
        let value = members.iter().find(|(k, _)| k == name).map(|(_, v)| v);
        values.push(match value {
            Some(value) => decode(value, ty)?,
            None => None,
        });
    }
    if let Some((unknown, _)) = members
        .iter()
        .find(|(k, _)| !u.fields.iter().any(|(name, _)| name == k))
    {
        return marshal(format!(
            "Unknown field '{unknown}' in value of user defined type {}",
            u.name
        ));
    }
    Ok(CqlValue::Tuple(values))
}

/// The JSON number, if `v` is one.
fn number(v: &Json) -> Option<Number> {
    match v {
        Json::Number(text) => Some(Number::of(text)),
        _ => None,
    }
}

/// Java's `Long.parseLong`: an optional sign, then ASCII digits.
fn java_long(s: &str) -> Option<i64> {
    let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// Java's `Double.parseDouble` (and, for `f32`, `Float.parseFloat`) of decimal text:
/// surrounding whitespace, a sign, `NaN`, `Infinity`, digits with a fraction and an
/// exponent, a trailing `f`/`d` type suffix.
fn java_floating<T: std::str::FromStr>(s: &str) -> Option<T> {
    let s = s.trim_matches(|c: char| c <= ' ');
    let unsigned = s.strip_prefix(['+', '-']).unwrap_or(s);
    if unsigned == "NaN" || unsigned == "Infinity" {
        let word = if unsigned == "NaN" {
            "NaN"
        } else if s.starts_with('-') {
            "-inf"
        } else {
            "inf"
        };
        return word.parse().ok();
    }
    let body = s.strip_suffix(['f', 'F', 'd', 'D']).unwrap_or(s);
    let digits = body.strip_prefix(['+', '-']).unwrap_or(body);
    let (mantissa, exponent) = match digits.split_once(['e', 'E']) {
        Some((m, e)) => (m, Some(e.strip_prefix(['+', '-']).unwrap_or(e))),
        None => (digits, None),
    };
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let all_digits = |t: &str| t.bytes().all(|b| b.is_ascii_digit());
    let valid = (!int.is_empty() || !frac.is_empty())
        && all_digits(int)
        && all_digits(frac)
        && exponent.is_none_or(|e| !e.is_empty() && all_digits(e));
    if !valid {
        return None;
    }
    body.parse().ok()
}

/// A JSON value as one of a native type.
fn native(v: &Json, t: CqlType) -> Decoded<CqlValue> {
    use CqlType as T;
    let got = || v.got();
    let string = match v {
        Json::String(s) => Some(s.as_str()),
        _ => None,
    };
    Ok(match t {
        T::Ascii => match string {
            Some(s) if s.is_ascii() => CqlValue::Ascii(s.to_owned()),
            Some(_) => return marshal("Invalid ASCII character in string literal: java.nio.charset.UnmappableCharacterException: Input length = 1"),
            None => return marshal(format!("Expected an ascii string, but got a {}", got())),
        },
        T::Text => match string {
            Some(s) => CqlValue::Text(s.to_owned()),
            None => return marshal(format!("Expected a UTF-8 string, but got a {}", got())),
        },
        T::Int => match (string, number(v)) {
            (Some(s), _) => CqlValue::Int(
                java_long(s)
                    .and_then(|n| i32::try_from(n).ok())
                    .map_or_else(|| marshal(format!("Unable to make int from '{s}'")), Ok)?,
            ),
            (_, Some(Number::Integer(n))) => CqlValue::Int(n),
            _ => return marshal(format!("Expected an int value, but got a {}", got())),
        },
        T::BigInt => match (string, number(v)) {
            (Some(s), _) => CqlValue::BigInt(
                java_long(s).map_or_else(|| marshal(format!("Unable to make long from '{s}'")), Ok)?,
            ),
            (_, Some(Number::Integer(n))) => CqlValue::BigInt(i64::from(n)),
            (_, Some(Number::Long(n))) => CqlValue::BigInt(n),
            _ => return marshal(format!("Expected a bigint value, but got a {}", got())),
        },
        T::SmallInt | T::TinyInt => {
            let (java, kind) = if t == T::SmallInt {
                ("short", "a short")
            } else {
                ("byte", "a byte")
            };
            let text = match (string, number(v)) {
                (Some(s), _) => s.to_owned(),
                (_, Some(n)) => n.java_text(),
                _ => return marshal(format!("Expected {kind} value, but got a {}", got())),
            };
            let n = java_long(&text);
            let fail = format!("Unable to make {java} from '{text}'");
            if t == T::SmallInt {
                match n.and_then(|n| i16::try_from(n).ok()) {
                    Some(n) => CqlValue::SmallInt(n),
                    None => return marshal(fail),
                }
            } else {
                match n.and_then(|n| i8::try_from(n).ok()) {
                    Some(n) => CqlValue::TinyInt(n),
                    None => return marshal(fail),
                }
            }
        }
        T::Varint | T::Decimal => {
            // Cassandra reads the text of whatever it got.
            let text = v.java_text();
            let what = if t == T::Varint { "varint" } else { "decimal" };
            let fail = format!("Value '{text}' is not a valid representation of a {what} value");
            let value = if t == T::Varint {
                let digits = text.strip_prefix('+').unwrap_or(&text);
                digits.parse::<Varint>().ok().map(CqlValue::Varint)
            } else {
                text.parse::<Decimal>().ok().map(CqlValue::Decimal)
            };
            match value {
                Some(v) => v,
                None => return marshal(fail),
            }
        }
        T::Float => match (string, number(v)) {
            (Some(s), _) => CqlValue::Float(
                java_floating::<f32>(s)
                    .map_or_else(|| marshal(format!("Unable to make float from '{s}'")), Ok)?,
            ),
            (_, Some(Number::Double(d))) => CqlValue::Float(d as f32),
            (_, Some(n)) => CqlValue::Float(n.java_text().parse().unwrap_or(f32::NAN)),
            _ => return marshal(format!("Expected a float value, but got a {}", got())),
        },
        T::Double => match (string, number(v)) {
            (Some(s), _) => CqlValue::Double(
                java_floating::<f64>(s)
                    .map_or_else(|| marshal(format!("Unable to make double from '{s}'")), Ok)?,
            ),
            (_, Some(Number::Double(d))) => CqlValue::Double(d),
            (_, Some(n)) => CqlValue::Double(n.java_text().parse().unwrap_or(f64::NAN)),
            _ => return marshal(format!("Expected a double value, but got a {}", got())),
        },
        T::Boolean => match (string, v) {
            (Some(s), _) if s.eq_ignore_ascii_case("true") => CqlValue::Boolean(true),
            (Some(s), _) if s.eq_ignore_ascii_case("false") => CqlValue::Boolean(false),
            (Some(s), _) => return marshal(format!("Unable to make boolean from '{s}'")),
            (_, Json::Bool(b)) => CqlValue::Boolean(*b),
            _ => return marshal(format!("Expected a boolean value, but got a {}", got())),
        },
        T::Blob => {
            let fail = |why: String| {
                marshal(format!(
                    "Value '{}' is not a valid blob representation: {why}",
                    v.java_text()
                ))
            };
            let Some(s) = string else {
                let class = v.java_class();
                return fail(format!("class {class} cannot be cast to class java.lang.String ({class} and java.lang.String are in module java.base of loader 'bootstrap')"));
            };
            let Some(hex) = s.strip_prefix("0x") else {
                return fail(format!(
                    "String representation of blob is missing 0x prefix: {s}"
                ));
            };
            match hex_bytes(hex) {
                Some(bytes) => CqlValue::Blob(bytes),
                None => return fail(format!("cannot parse '{hex}' as hex bytes")),
            }
        }
        T::Uuid | T::TimeUuid => {
            let kind = if t == T::Uuid { "uuid" } else { "timeuuid" };
            let Some(s) = string else {
                return marshal(format!(
                    "Expected a string representation of a {kind}, but got a {}",
                    got()
                ));
            };
            let Ok(uuid) = s.parse::<crate::schema::Uuid>() else {
                return marshal(if t == T::Uuid {
                    format!("Unable to make UUID from '{s}'")
                } else {
                    format!("Unknown timeuuid representation: {s}")
                });
            };
            if t == T::Uuid {
                CqlValue::Uuid(uuid.0)
            } else if uuid_version(&uuid.0) != 1 {
                return marshal("TimeUUID supports only version 1 UUIDs");
            } else {
                CqlValue::TimeUuid(uuid.0)
            }
        }
        T::Timestamp => match (string, number(v)) {
            (Some(s), _) => CqlValue::Timestamp(parse_timestamp(s).map_or_else(
                || marshal(format!("Unable to parse a date/time from '{s}'")),
                Ok,
            )?),
            (_, Some(Number::Integer(n))) => CqlValue::Timestamp(i64::from(n)),
            (_, Some(Number::Long(n))) => CqlValue::Timestamp(n),
            _ => {
                return marshal(format!(
                    "Expected a long or a datestring representation of a timestamp value, but got a {}",
                    got()
                ))
            }
        },
        T::Date => match string {
            Some(s) => CqlValue::Date(date(s)?),
            None => {
                return marshal(format!(
                    "Expected a string representation of a date value, but got a {}",
                    got()
                ))
            }
        },
        T::Time => match string {
            Some(s) => CqlValue::Time(parse_time(s).map_err(|e| DecodeError::Marshal(e.to_string()))?),
            None => {
                return marshal(format!(
                    "Expected a string representation of a time value, but got a {}",
                    got()
                ))
            }
        },
        T::Inet => match string {
            Some(s) => CqlValue::Inet(parse_inet(s).map_err(|e| DecodeError::Marshal(e.to_string()))?),
            None => {
                return marshal(format!(
                    "Expected a string representation of an inet value, but got a {}",
                    got()
                ))
            }
        },
        T::Duration => match string {
            Some(s) => CqlValue::Duration(
                s.parse::<CqlDuration>()
                    .map_err(|e| DecodeError::Invalid(e.to_string()))?,
            ),
            None => {
                return marshal(format!(
                    "Expected a string representation of a duration, but got a {}",
                    got()
                ))
            }
        },
        other => return marshal(format!("JSON is not supported for type {other}")),
    })
}

/// Hex digits (either case, an even number of them) as bytes.
fn hex_bytes(hex: &str) -> Option<Vec<u8>> {
    if !hex.len().is_multiple_of(2) || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    hex.as_bytes()
        .chunks(2)
        .map(|pair| u8::from_str_radix(std::str::from_utf8(pair).ok()?, 16).ok())
        .collect()
}

/// A `date` string: the raw unsigned day number as digits, or `yyyy-mm-dd`.
fn date(s: &str) -> Decoded<u32> {
    let digits = s.strip_prefix('-').unwrap_or(s);
    if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
        return s.parse::<u32>().map_or_else(
            |_| {
                marshal(format!(
                    "Unable to make unsigned int (for date) from: '{s}'"
                ))
            },
            Ok,
        );
    }
    parse_date(s).map_or_else(
        || marshal(format!("Unable to coerce '{s}' to a formatted date (long)")),
        Ok,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decoded(json: &str, ty: &str) -> Decoded<Option<CqlValue>> {
        decode(&parse(json).unwrap(), &ty.parse().unwrap())
    }

    fn message(json: &str, ty: &str) -> String {
        match decoded(json, ty) {
            Err(DecodeError::Marshal(m) | DecodeError::Invalid(m)) => m,
            Ok(v) => panic!("{json} as {ty} decoded to {v:?}"),
        }
    }

    #[test]
    fn natives_take_what_cassandra_takes() {
        let ok = |json: &str, ty: &str, v: CqlValue| assert_eq!(decoded(json, ty), Ok(Some(v)));
        ok(r#""12""#, "int", CqlValue::Int(12));
        ok(r#""+5""#, "int", CqlValue::Int(5));
        ok("9223372036854775807", "bigint", CqlValue::BigInt(i64::MAX));
        ok("7", "smallint", CqlValue::SmallInt(7));
        ok(r#""-3""#, "tinyint", CqlValue::TinyInt(-3));
        ok(
            "123456789012345678901234567890",
            "varint",
            CqlValue::Varint("123456789012345678901234567890".parse().unwrap()),
        );
        ok("1.10", "decimal", CqlValue::Decimal("1.1".parse().unwrap()));
        ok(
            r#""1.10""#,
            "decimal",
            CqlValue::Decimal("1.10".parse().unwrap()),
        );
        ok(
            "1e3",
            "decimal",
            CqlValue::Decimal("1000.0".parse().unwrap()),
        );
        ok(r#"" 1.5 ""#, "float", CqlValue::Float(1.5));
        ok(r#""1e5d""#, "double", CqlValue::Double(1e5));
        ok("1", "double", CqlValue::Double(1.0));
        ok(r#""FaLsE""#, "boolean", CqlValue::Boolean(false));
        ok(r#""0xCAFE""#, "blob", CqlValue::Blob(vec![0xca, 0xfe]));
        ok(
            "3000000000",
            "timestamp",
            CqlValue::Timestamp(3_000_000_000),
        );
        ok(r#""1000""#, "timestamp", CqlValue::Timestamp(1000));
        ok(r#""2147483648""#, "date", CqlValue::Date(1 << 31));
        ok(r#""00:00:01""#, "time", CqlValue::Time(1_000_000_000));
        assert!(matches!(
            decoded(r#""NaN""#, "double"),
            Ok(Some(CqlValue::Double(d))) if d.is_nan()
        ));
        assert_eq!(decoded("null", "int"), Ok(None));
    }

    #[test]
    fn refusals_say_what_cassandra_says() {
        for (json, ty, expected) in [
            ("1.5", "int", "Expected an int value, but got a Double: 1.5"),
            ("2147483648", "int", "Expected an int value, but got a Long: 2147483648"),
            (r#""abc""#, "int", "Unable to make int from 'abc'"),
            ("[1]", "int", "Expected an int value, but got a ArrayList: [1]"),
            ("5", "text", "Expected a UTF-8 string, but got a Integer: 5"),
            (r#"{"a": 1}"#, "text", "Expected a UTF-8 string, but got a LinkedHashMap: {a=1}"),
            ("40000", "smallint", "Unable to make short from '40000'"),
            ("true", "smallint", "Expected a short value, but got a Boolean: true"),
            ("1e3", "varint", "Value '1000.0' is not a valid representation of a varint value"),
            ("1e400", "decimal", "Value 'Infinity' is not a valid representation of a decimal value"),
            (r#""cafe""#, "blob", "Value 'cafe' is not a valid blob representation: String representation of blob is missing 0x prefix: cafe"),
            (r#""0xcaf""#, "blob", "Value '0xcaf' is not a valid blob representation: cannot parse 'caf' as hex bytes"),
            ("5", "blob", "Value '5' is not a valid blob representation: class java.lang.Integer cannot be cast to class java.lang.String (java.lang.Integer and java.lang.String are in module java.base of loader 'bootstrap')"),
            (r#""123e4567-e89b-42d3-a456-426614174000""#, "timeuuid", "TimeUUID supports only version 1 UUIDs"),
            ("1.5", "timestamp", "Expected a long or a datestring representation of a timestamp value, but got a Double: 1.5"),
            ("-1", "date", "Expected a string representation of a date value, but got a Integer: -1"),
            (r#""-1""#, "date", "Unable to make unsigned int (for date) from: '-1'"),
            (r#""2024-13-01""#, "date", "Unable to coerce '2024-13-01' to a formatted date (long)"),
            ("11045000000000", "time", "Expected a string representation of a time value, but got a Long: 11045000000000"),
            (r#""xyz""#, "duration", "Unable to convert 'xyz' to a duration"),
            ("5", "list<int>", "Expected a list, but got a Integer: 5"),
            ("[1, null]", "list<int>", "Invalid null element in list"),
            (r#""x""#, "set<int>", "Error decoding JSON string: "),
            (r#"{"a": 1}"#, "set<int>", "Expected a list (representing a set), but got a LinkedHashMap: {a=1}"),
            (r#"{"a": null}"#, "map<text, int>", "Invalid null value in map"),
            (r#"{"x": 1}"#, "map<int, int>", "Unable to make int from 'x'"),
            (r#"[1, "a"]"#, "tuple<int, text, boolean>", "Tuple is missing items (expected 3): [1, a]"),
            ("[1, 2, 3]", "tuple<int, int>", "Tuple contains extra items (expected 2): [1, 2, 3]"),
            ("5", "tuple<int>", "Expected a list representation of a tuple, but got a Integer: 5"),
        ] {
            let got = message(json, ty);
            assert!(got.starts_with(expected), "{json} as {ty}: {got}");
        }
    }

    #[test]
    fn collections_tuples_and_strings_of_them() {
        assert_eq!(
            decoded(r#""[1, 2]""#, "list<int>"),
            Ok(Some(CqlValue::List(vec![
                CqlValue::Int(1),
                CqlValue::Int(2)
            ])))
        );
        assert_eq!(
            decoded(r#"["b", "a", "b"]"#, "set<text>"),
            Ok(Some(CqlValue::Set(vec![
                CqlValue::Text("a".into()),
                CqlValue::Text("b".into())
            ])))
        );
        assert_eq!(
            decoded(r#"{"1": 1, "1.0": 2}"#, "map<double, int>"),
            Ok(Some(CqlValue::Map(vec![(
                CqlValue::Double(1.0),
                CqlValue::Int(2)
            )])))
        );
        assert_eq!(
            decoded(r#"{"[\"a\"]": 1}"#, "map<frozen<list<text>>, int>"),
            Ok(Some(CqlValue::Map(vec![(
                CqlValue::List(vec![CqlValue::Text("a".into())]),
                CqlValue::Int(1)
            )])))
        );
        assert_eq!(
            decoded("[1, null]", "tuple<int, text>"),
            Ok(Some(CqlValue::Tuple(vec![Some(CqlValue::Int(1)), None])))
        );
    }
}
