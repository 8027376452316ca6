//! CQL's JSON support, as Cassandra 4 renders and reads values: `SELECT JSON` and
//! `toJson()` render a value of any type as JSON text ([`to_json`]); `INSERT … JSON` and
//! `fromJson()` read JSON into a value of a column's type ([`json_term`]), by turning it
//! into the CQL term it stands for, so a JSON value is checked and converted exactly as a
//! literal of that type would be (with JSON's own latitude: numbers as strings, booleans
//! as strings, timestamps as numbers).

use mosaic_types::{CqlType, CqlValue, DataType};
use serde_json::Value;

use crate::ast::{Ident, InsertJson, Literal, Term};
use crate::frame::ColumnSpec;
use crate::schema::TableMeta;
use bytes::Bytes;

use super::select::OutColumn;

use super::values::{eval, Eval, EvalContext};
use crate::frame::ErrorResponse;

use super::invalid;

/// A JSON string literal of `s`.
fn quoted(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".to_owned())
}

/// A `date` (days with 2^31 at the epoch) as `yyyy-mm-dd`.
fn date_text(days: u32) -> String {
    let days = i64::from(days) - i64::from(mosaic_types::DATE_EPOCH);
    let (y, m, d) = super::values::civil_from_days(days);
    format!("{y:04}-{m:02}-{d:02}")
}

/// A `timestamp` (ms since the epoch) as Cassandra's JSON shows it:
/// `yyyy-mm-dd hh:mm:ss.fffZ`.
fn timestamp_text(ms: i64) -> String {
    let days = ms.div_euclid(86_400_000);
    let in_day = ms.rem_euclid(86_400_000);
    let (y, m, d) = super::values::civil_from_days(days);
    let (h, rest) = (in_day / 3_600_000, in_day % 3_600_000);
    let (min, rest) = (rest / 60_000, rest % 60_000);
    let (s, milli) = (rest / 1000, rest % 1000);
    format!("{y:04}-{m:02}-{d:02} {h:02}:{min:02}:{s:02}.{milli:03}Z")
}

/// `v` of type `ty` as JSON text, as Cassandra's `toJson()` writes it (`null` for null;
/// NaN and infinities, which JSON has no numbers for, also as `null`, as Cassandra).
pub(crate) fn to_json(v: Option<&CqlValue>, ty: &DataType) -> String {
    let Some(v) = v else {
        return "null".to_owned();
    };
    let join = |parts: Vec<String>| parts.join(", ");
    match v {
        CqlValue::Ascii(s) | CqlValue::Text(s) => quoted(s),
        CqlValue::Blob(b) => quoted(&crate::schema::encode_blob_literal(b)),
        CqlValue::Boolean(b) => b.to_string(),
        CqlValue::Int(n) => n.to_string(),
        CqlValue::BigInt(n) => n.to_string(),
        CqlValue::SmallInt(n) => n.to_string(),
        CqlValue::TinyInt(n) => n.to_string(),
        CqlValue::Varint(n) => n.to_string(),
        CqlValue::Decimal(n) => n.to_string(),
        CqlValue::Float(f) if f.is_finite() => crate::system::describe::java_double(f64::from(*f)),
        CqlValue::Double(f) if f.is_finite() => crate::system::describe::java_double(*f),
        CqlValue::Float(_) | CqlValue::Double(_) => "null".to_owned(),
        CqlValue::Timestamp(ms) => quoted(&timestamp_text(*ms)),
        CqlValue::Date(d) => quoted(&date_text(*d)),
        CqlValue::Time(n) => quoted(&mosaic_types::format_time(*n)),
        CqlValue::Uuid(b) | CqlValue::TimeUuid(b) => quoted(&crate::schema::Uuid(*b).to_string()),
        CqlValue::Inet(ip) => quoted(&mosaic_types::java_host_address(ip)),
        CqlValue::Duration(d) => quoted(&d.to_string()),
        CqlValue::List(items) | CqlValue::Set(items) => {
            let element = match ty.unfrozen() {
                DataType::List(e) | DataType::Set(e) => e.as_ref().clone(),
                _ => DataType::Native(CqlType::Blob),
            };
            format!(
                "[{}]",
                join(items.iter().map(|i| to_json(Some(i), &element)).collect())
            )
        }
        CqlValue::Map(entries) => {
            let (kt, vt) = match ty.unfrozen() {
                DataType::Map(k, v) => (k.as_ref().clone(), v.as_ref().clone()),
                _ => (
                    DataType::Native(CqlType::Blob),
                    DataType::Native(CqlType::Blob),
                ),
            };
            let parts = entries
                .iter()
                .map(|(k, v)| {
                    // A key is a JSON string: a string key as itself, any other as the
                    // text of its JSON.
                    let key = to_json(Some(k), &kt);
                    let key = if key.starts_with('"') {
                        key
                    } else {
                        quoted(&key)
                    };
                    format!("{key}: {}", to_json(Some(v), &vt))
                })
                .collect();
            format!("{{{}}}", join(parts))
        }
        CqlValue::Tuple(fields) => match ty.unfrozen() {
            DataType::Udt(u) => {
                let parts = u
                    .fields
                    .iter()
                    .enumerate()
                    .map(|(i, (name, fty))| {
                        let value = fields.get(i).and_then(Option::as_ref);
                        format!("{}: {}", quoted(&field_key(name)), to_json(value, fty))
                    })
                    .collect();
                format!("{{{}}}", join(parts))
            }
            DataType::Tuple(types) => {
                let parts = fields
                    .iter()
                    .enumerate()
                    .map(|(i, f)| {
                        let fty = types
                            .get(i)
                            .cloned()
                            .unwrap_or(DataType::Native(CqlType::Blob));
                        to_json(f.as_ref(), &fty)
                    })
                    .collect();
                format!("[{}]", join(parts))
            }
            _ => "null".to_owned(),
        },
        _ => "null".to_owned(),
    }
}

/// A column or field name as a JSON object key: quoted (CQL's `"Name"`) when CQL needs
/// quotes for it, so it reads back as the same name.
pub(crate) fn field_key(name: &str) -> String {
    Ident::new(name).to_string()
}

/// The name a JSON object key stands for: `"Name"` (with the quotes inside the key) is
/// case-sensitive, any other key is lowercased, as CQL identifiers are.
pub(crate) fn key_name(key: &str) -> String {
    match key.strip_prefix('"').and_then(|k| k.strip_suffix('"')) {
        Some(inner) if !inner.is_empty() => inner.replace("\"\"", "\""),
        _ => key.to_lowercase(),
    }
}

/// The error for a JSON value that is not one of `ty`.
fn mismatch(name: &str, ty: &DataType, v: &Value) -> ErrorResponse {
    invalid(format!(
        "Error decoding JSON value for {name}: Expected a value of type {ty}, but got {v}"
    ))
}

/// A JSON number as the integer or floating-point literal it is.
fn number_literal(n: &serde_json::Number) -> Literal {
    let text = n.to_string();
    if text.contains(['.', 'e', 'E']) {
        Literal::Float(text)
    } else {
        Literal::Integer(text)
    }
}

/// The CQL term the JSON value `v` stands for as a value of `ty` (`name`: the column, for
/// errors).
pub(crate) fn json_term(v: &Value, ty: &DataType, name: &str) -> Result<Term, ErrorResponse> {
    if v.is_null() {
        return Ok(Term::Literal(Literal::Null));
    }
    let items = |e: &DataType| -> Result<Vec<Term>, ErrorResponse> {
        match v {
            Value::Array(items) => items.iter().map(|i| json_term(i, e, name)).collect(),
            _ => Err(mismatch(name, ty, v)),
        }
    };
    match ty {
        DataType::Native(t) => native_term(v, *t, ty, name),
        DataType::Frozen(inner) => json_term(v, inner, name),
        DataType::List(e) => Ok(Term::List(items(e)?)),
        DataType::Set(e) => Ok(Term::Set(items(e)?)),
        DataType::Tuple(types) => match v {
            Value::Array(values) if values.len() <= types.len() => Ok(Term::Tuple(
                values
                    .iter()
                    .zip(types)
                    .map(|(v, t)| json_term(v, t, name))
                    .collect::<Result<_, _>>()?,
            )),
            _ => Err(mismatch(name, ty, v)),
        },
        DataType::Map(kt, vt) => {
            let Value::Object(entries) = v else {
                return Err(mismatch(name, ty, v));
            };
            let mut out = Vec::with_capacity(entries.len());
            for (key, value) in entries {
                let key_term = match kt.unfrozen() {
                    DataType::Native(
                        CqlType::Text | CqlType::Ascii | CqlType::Inet | CqlType::Timestamp,
                    )
                    | DataType::Native(CqlType::Date | CqlType::Time | CqlType::Duration)
                    | DataType::Native(CqlType::Uuid | CqlType::TimeUuid | CqlType::Blob) => {
                        json_term(&Value::String(key.clone()), kt, name)?
                    }
                    // Another key is the JSON text of its value.
                    _ => match serde_json::from_str::<Value>(key) {
                        Ok(parsed) => json_term(&parsed, kt, name)?,
                        Err(_) => json_term(&Value::String(key.clone()), kt, name)?,
                    },
                };
                out.push((key_term, json_term(value, vt, name)?));
            }
            Ok(Term::Map(out))
        }
        DataType::Udt(u) => {
            let Value::Object(entries) = v else {
                return Err(mismatch(name, ty, v));
            };
            let mut fields = Vec::with_capacity(entries.len());
            for (key, value) in entries {
                let field = key_name(key);
                let Some((_, fty)) = u.fields.iter().find(|(n, _)| *n == field) else {
                    return Err(invalid(format!(
                        "Error decoding JSON value for {name}: Unknown field '{field}' in value of user defined type {}",
                        u.name
                    )));
                };
                fields.push((Ident::new(field), json_term(value, fty, name)?));
            }
            Ok(Term::Udt(fields))
        }
        _ => Err(mismatch(name, ty, v)),
    }
}

/// [`json_term`] for a native type.
fn native_term(v: &Value, t: CqlType, ty: &DataType, name: &str) -> Result<Term, ErrorResponse> {
    use CqlType as T;
    let literal = match (t, v) {
        (T::Ascii | T::Text, Value::String(s)) => Literal::String(s.clone()),
        (T::Int | T::BigInt | T::SmallInt | T::TinyInt | T::Varint, Value::Number(n))
            if !n.to_string().contains(['.', 'e', 'E']) =>
        {
            Literal::Integer(n.to_string())
        }
        (T::Int | T::BigInt | T::SmallInt | T::TinyInt | T::Varint, Value::String(s))
            if !s.is_empty()
                && s.strip_prefix('-').unwrap_or(s).bytes().all(|b| b.is_ascii_digit()) =>
        {
            Literal::Integer(s.clone())
        }
        (T::Float | T::Double | T::Decimal, Value::Number(n)) => number_literal(n),
        (T::Float | T::Double, Value::String(s)) if s == "NaN" => Literal::NaN,
        (T::Float | T::Double, Value::String(s)) if s == "Infinity" => Literal::Infinity,
        (T::Float | T::Double, Value::String(s)) if s == "-Infinity" => Literal::NegInfinity,
        (T::Float | T::Double | T::Decimal, Value::String(s)) => {
            match serde_json::from_str::<Value>(s) {
                Ok(Value::Number(n)) => number_literal(&n),
                _ => return Err(mismatch(name, ty, v)),
            }
        }
        (T::Boolean, Value::Bool(b)) => Literal::Boolean(*b),
        (T::Boolean, Value::String(s)) if s.eq_ignore_ascii_case("true") => {
            Literal::Boolean(true)
        }
        (T::Boolean, Value::String(s)) if s.eq_ignore_ascii_case("false") => {
            Literal::Boolean(false)
        }
        (T::Blob, Value::String(s)) => match crate::schema::decode_blob_literal(s) {
            Some(bytes) => Literal::Blob(bytes),
            None => {
                return Err(invalid(format!(
                    "Error decoding JSON value for {name}: Value '{s}' is not a valid blob representation: String representation of blob is missing 0x prefix: {s}"
                )))
            }
        },
        (T::Uuid | T::TimeUuid, Value::String(s)) => match s.parse::<crate::schema::Uuid>() {
            Ok(u) => Literal::Uuid(u128::from_be_bytes(u.0)),
            Err(_) => {
                return Err(invalid(format!(
                    "Error decoding JSON value for {name}: Unable to make UUID from '{s}'"
                )))
            }
        },
        (T::Timestamp | T::Date | T::Time, Value::Number(n)) => Literal::Integer(n.to_string()),
        (T::Timestamp | T::Date | T::Time | T::Inet, Value::String(s)) => {
            Literal::String(s.clone())
        }
        (T::Duration, Value::String(s)) => Literal::Duration(s.clone()),
        _ => return Err(mismatch(name, ty, v)),
    };
    Ok(Term::Literal(literal))
}

/// Parses JSON text (`name`: what it is for, in errors).
pub(crate) fn parse(text: &str) -> Result<Value, ErrorResponse> {
    serde_json::from_str(text).map_err(|e| {
        invalid(format!(
            "Could not decode JSON string as a map: {e}. (String was: {text})"
        ))
    })
}

/// `INSERT … JSON`'s values by column: each key of the object names a column (`"\"Name\""`
/// a case-sensitive one), its value read as that column's type; a column the object
/// leaves out is null (`DEFAULT NULL`, so a JSON insert replaces the whole row) or left
/// alone (`DEFAULT UNSET`).
pub(crate) fn insert_values(
    table: &TableMeta,
    json: &InsertJson,
    ctx: &EvalContext<'_>,
) -> Result<Vec<(String, Eval)>, ErrorResponse> {
    let text = match eval(&json.value, &DataType::Native(CqlType::Text), "[json]", ctx)? {
        Eval::Value(CqlValue::Text(t)) => t,
        Eval::Value(_) => return Err(invalid("INSERT JSON values must be a string")),
        Eval::Null => return Err(invalid("Got null for INSERT JSON values")),
        Eval::Unset => return Err(invalid("Got unset for INSERT JSON values")),
    };
    let serde_json::Value::Object(object) = parse(&text)? else {
        return Err(invalid(format!(
            "Could not decode JSON string as a map: {text}"
        )));
    };
    let mut values = Vec::with_capacity(table.columns.len());
    let mut named = std::collections::HashSet::new();
    for (key, value) in &object {
        let name = key_name(key);
        let Some(col) = table.column(&name) else {
            return Err(invalid(format!(
                "JSON values map contains unrecognized column: {name}"
            )));
        };
        let term = json_term(value, &col.ty, &name)?;
        values.push((name.clone(), eval(&term, &col.ty, &name, ctx)?));
        named.insert(name);
    }
    if !json.default_unset {
        for col in &table.columns {
            if !named.contains(&col.name) {
                values.push((col.name.clone(), Eval::Null));
            }
        }
    }
    Ok(values)
}

/// The one column of a `SELECT JSON`'s result.
pub(crate) fn json_spec(table: &TableMeta) -> ColumnSpec {
    ColumnSpec::new(&table.keyspace, &table.name, "[json]", CqlType::Text)
}

/// `SELECT JSON`: each row as one JSON object, its keys the output columns' names (a
/// column's quoted as CQL needs it, so a case-sensitive name reads back), in order.
pub(crate) fn json_rows(
    columns: &[OutColumn],
    rows: Vec<Vec<Option<Bytes>>>,
) -> Vec<Vec<Option<Bytes>>> {
    let types: Vec<Option<mosaic_types::DataType>> =
        columns.iter().map(|c| c.ty.data_type()).collect();
    rows.into_iter()
        .map(|row| {
            let fields: Vec<String> = columns
                .iter()
                .zip(&types)
                .zip(&row)
                .map(|((c, ty), cell)| {
                    let key = match c.expr {
                        super::select::Expr::Column(_) => field_key(&c.name),
                        _ => c.name.clone(),
                    };
                    let value = match (ty, cell) {
                        (Some(ty), Some(bytes)) => to_json(ty.decode(bytes).ok().as_ref(), ty),
                        _ => "null".to_owned(),
                    };
                    format!(
                        "{}: {value}",
                        serde_json::to_string(&key).unwrap_or_default()
                    )
                })
                .collect();
            vec![Some(Bytes::from(format!("{{{}}}", fields.join(", "))))]
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn values_render_as_cassandra_renders_them() {
        let text = DataType::Native(CqlType::Text);
        assert_eq!(
            to_json(Some(&CqlValue::Text("a\"b".into())), &text),
            r#""a\"b""#
        );
        assert_eq!(to_json(None, &text), "null");
        let ts = DataType::Native(CqlType::Timestamp);
        assert_eq!(
            to_json(Some(&CqlValue::Timestamp(1_700_000_000_123)), &ts),
            r#""2023-11-14 22:13:20.123Z""#
        );
        let d = DataType::Native(CqlType::Double);
        assert_eq!(to_json(Some(&CqlValue::Double(1.0)), &d), "1.0");
        assert_eq!(to_json(Some(&CqlValue::Double(f64::NAN)), &d), "null");
        let m: DataType = "map<int, text>".parse().unwrap();
        let v = CqlValue::Map(vec![(CqlValue::Int(1), CqlValue::Text("x".into()))]);
        assert_eq!(to_json(Some(&v), &m), r#"{"1": "x"}"#);
        assert_eq!(key_name("\"Quoted\""), "Quoted");
        assert_eq!(key_name("Lower"), "lower");
    }

    proptest! {
        #[test]
        fn garbage_json_never_panics(text in ".{0,64}") {
            if let Ok(v) = parse(&text) {
                for ty in ["int", "text", "list<int>", "map<int, text>", "tuple<int, text>", "double", "timestamp"] {
                    let ty: DataType = ty.parse().unwrap();
                    let _ = json_term(&v, &ty, "c");
                }
            }
        }
    }
}
