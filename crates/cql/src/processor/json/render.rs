//! Values as JSON text, as Cassandra 4.1's `toJSONString` writes them (`SELECT JSON`,
//! `toJson()`): numbers as Java prints them (`1.0E10`, `1.25E+3` for a decimal), NaN and the
//! infinities as `null`, blobs as `"0x…"`, timestamps as `"yyyy-mm-dd hh:mm:ss.fffZ"` (UTC,
//! year of era, `+` past 9999), dates as Java's `LocalDate`, times, uuids, inets and
//! durations as strings, lists, sets and tuples as arrays, maps and user types as objects.
//! A map key is a JSON string: a key whose JSON is a string as it is, any other the text of
//! its JSON (`{"1": …}`, `{"[\"a\"]": …}`).

use mosaic_types::{CqlType, CqlValue, DataType, DATE_EPOCH};

use super::text::quote;
use crate::processor::values::civil_from_days;
use crate::system::describe::java_double;

/// A column's (or a user type field's) name as a JSON object key: in double quotes when it
/// has upper-case letters (so it reads back case-sensitively), as Cassandra writes it.
pub(crate) fn name_key(name: &str) -> String {
    if name == name.to_lowercase() {
        quote(name)
    } else {
        quote(&format!("\"{name}\""))
    }
}

/// A float as Java's `Float.toString` prints it.
fn java_float(v: f32) -> String {
    crate::system::describe::java_number(f64::from(v.abs()), format!("{v}"), format!("{v:e}"))
}

/// A `timestamp` as Cassandra's JSON writes it: `yyyy-MM-dd HH:mm:ss.SSSZ` in UTC, the year
/// of era (year 0 is 1 BC, printed `0001`) with a `+` when it has more than four digits.
pub(crate) fn timestamp_text(ms: i64) -> String {
    let days = ms.div_euclid(86_400_000);
    let in_day = ms.rem_euclid(86_400_000);
    let (y, m, d) = civil_from_days(days);
    let year_of_era = if y <= 0 { 1 - y } else { y };
    let year = if year_of_era > 9999 {
        format!("+{year_of_era}")
    } else {
        format!("{year_of_era:04}")
    };
    let (h, rest) = (in_day / 3_600_000, in_day % 3_600_000);
    let (min, rest) = (rest / 60_000, rest % 60_000);
    let (s, milli) = (rest / 1000, rest % 1000);
    format!("{year}-{m:02}-{d:02} {h:02}:{min:02}:{s:02}.{milli:03}Z")
}

/// A `date` (days with 2^31 at the epoch) as Java's `LocalDate.toString`: `yyyy-mm-dd`, a
/// `-` before negative years, a `+` before years past 9999.
pub(crate) fn date_text(days: u32) -> String {
    let (y, m, d) = civil_from_days(i64::from(days) - i64::from(DATE_EPOCH));
    let year = if y.abs() < 1000 {
        format!("{}{:04}", if y < 0 { "-" } else { "" }, y.abs())
    } else if y > 9999 {
        format!("+{y}")
    } else {
        y.to_string()
    };
    format!("{year}-{m:02}-{d:02}")
}

/// `v` of type `ty` as JSON text (`null` for null).
pub(crate) fn to_json(v: Option<&CqlValue>, ty: &DataType) -> String {
    let Some(v) = v else {
        return "null".to_owned();
    };
    let blob = || DataType::Native(CqlType::Blob);
    match v {
        CqlValue::Ascii(s) | CqlValue::Text(s) => quote(s),
        CqlValue::Blob(b) => quote(&crate::schema::encode_blob_literal(b)),
        CqlValue::Boolean(b) => b.to_string(),
        CqlValue::Int(n) => n.to_string(),
        CqlValue::BigInt(n) => n.to_string(),
        CqlValue::SmallInt(n) => n.to_string(),
        CqlValue::TinyInt(n) => n.to_string(),
        CqlValue::Varint(n) => n.to_string(),
        CqlValue::Decimal(n) => n.to_string(),
        // JSON has no NaN nor infinities: Cassandra writes null.
        CqlValue::Float(f) if f.is_finite() => java_float(*f),
        CqlValue::Double(f) if f.is_finite() => java_double(*f),
        CqlValue::Float(_) | CqlValue::Double(_) => "null".to_owned(),
        CqlValue::Timestamp(ms) => quote(&timestamp_text(*ms)),
        CqlValue::Date(d) => quote(&date_text(*d)),
        CqlValue::Time(n) => quote(&mosaic_types::format_time(*n)),
        CqlValue::Uuid(b) | CqlValue::TimeUuid(b) => quote(&crate::schema::Uuid(*b).to_string()),
        CqlValue::Inet(ip) => quote(&mosaic_types::java_host_address(ip)),
        CqlValue::Duration(d) => quote(&d.to_string()),
        CqlValue::List(items) | CqlValue::Set(items) => {
            let element = match ty.unfrozen() {
                DataType::List(e) | DataType::Set(e) => e.as_ref().clone(),
                _ => blob(),
            };
            let items: Vec<String> = items.iter().map(|i| to_json(Some(i), &element)).collect();
            format!("[{}]", items.join(", "))
        }
        CqlValue::Map(entries) => {
            let (kt, vt) = match ty.unfrozen() {
                DataType::Map(k, v) => (k.as_ref().clone(), v.as_ref().clone()),
                _ => (blob(), blob()),
            };
            let entries: Vec<String> = entries
                .iter()
                .map(|(k, v)| {
                    let key = to_json(Some(k), &kt);
                    let key = if key.starts_with('"') {
                        key
                    } else {
                        quote(&key)
                    };
                    format!("{key}: {}", to_json(Some(v), &vt))
                })
                .collect();
            format!("{{{}}}", entries.join(", "))
        }
        CqlValue::Tuple(fields) => match ty.unfrozen() {
            DataType::Udt(u) => {
                let fields: Vec<String> = u
                    .fields
                    .iter()
                    .enumerate()
                    .map(|(i, (name, fty))| {
                        let value = fields.get(i).and_then(Option::as_ref);
                        format!("{}: {}", name_key(name), to_json(value, fty))
                    })
                    .collect();
                format!("{{{}}}", fields.join(", "))
            }
            DataType::Tuple(types) => {
                let fields: Vec<String> = fields
                    .iter()
                    .enumerate()
                    .map(|(i, f)| to_json(f.as_ref(), types.get(i).unwrap_or(&blob())))
                    .collect();
                format!("[{}]", fields.join(", "))
            }
            _ => "null".to_owned(),
        },
        _ => "null".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn json(v: CqlValue, ty: &str) -> String {
        to_json(Some(&v), &ty.parse().unwrap())
    }

    #[test]
    fn numbers_print_as_java_prints_them() {
        assert_eq!(json(CqlValue::Float(0.1), "float"), "0.1");
        assert_eq!(json(CqlValue::Float(1e10), "float"), "1.0E10");
        assert_eq!(json(CqlValue::Float(12_345_678.0), "float"), "1.2345678E7");
        assert_eq!(json(CqlValue::Float(1_234_567.0), "float"), "1234567.0");
        assert_eq!(json(CqlValue::Float(-0.0), "float"), "-0.0");
        assert_eq!(json(CqlValue::Double(1e-5), "double"), "1.0E-5");
        assert_eq!(json(CqlValue::Double(f64::NAN), "double"), "null");
        assert_eq!(json(CqlValue::Float(f32::NEG_INFINITY), "float"), "null");
        assert_eq!(
            json(CqlValue::Decimal("1E+3".parse().unwrap()), "decimal"),
            "1E+3"
        );
    }

    #[test]
    fn times_print_as_cassandra_prints_them() {
        assert_eq!(
            timestamp_text(1_704_164_645_678),
            "2024-01-02 03:04:05.678Z"
        );
        assert_eq!(timestamp_text(-1), "1969-12-31 23:59:59.999Z");
        assert_eq!(
            timestamp_text(253_402_300_800_000),
            "+10000-01-01 00:00:00.000Z"
        );
        assert_eq!(
            timestamp_text(-62_135_596_800_001),
            "0001-12-31 23:59:59.999Z"
        );
        assert_eq!(timestamp_text(i64::MIN), "+292275056-05-16 16:47:04.192Z");
        assert_eq!(timestamp_text(i64::MAX), "+292278994-08-17 07:12:55.807Z");
        assert_eq!(date_text(0), "-5877641-06-23");
        assert_eq!(date_text(u32::MAX), "+5881580-07-11");
        assert_eq!(date_text(DATE_EPOCH - 1), "1969-12-31");
    }

    #[test]
    fn collections_and_keys_print_as_cassandra_prints_them() {
        let m = CqlValue::Map(vec![(CqlValue::Int(1), CqlValue::Text("x".into()))]);
        assert_eq!(json(m, "map<int, text>"), r#"{"1": "x"}"#);
        let m = CqlValue::Map(vec![(
            CqlValue::List(vec![CqlValue::Text("a".into())]),
            CqlValue::Int(1),
        )]);
        assert_eq!(json(m, "map<frozen<list<text>>, int>"), r#"{"[\"a\"]": 1}"#);
        let m = CqlValue::Map(vec![(CqlValue::Timestamp(0), CqlValue::Int(1))]);
        assert_eq!(
            json(m, "map<timestamp, int>"),
            r#"{"1970-01-01 00:00:00.000Z": 1}"#
        );
        let t = CqlValue::Tuple(vec![Some(CqlValue::Int(1)), None]);
        assert_eq!(json(t, "tuple<int, text>"), "[1, null]");
        assert_eq!(name_key("Zip"), r#""\"Zip\"""#);
        assert_eq!(name_key("with space"), r#""with space""#);
        assert_eq!(name_key("a\"b"), r#""a\"b""#);
    }
}
