//! JSON text as Cassandra's reader (Jackson, into `java.util` maps and lists) sees it.
//!
//! Cassandra's messages about JSON values name the Java class Jackson made of them and print
//! them with Java's `toString` (`Expected an int value, but got a Long: 2147483648`,
//! `Tuple is missing items (expected 3): [1, a]`), so the tree keeps what decides both:
//! numbers exactly as written (an integer is an `Integer`, `Long` or `BigInteger` by its
//! size, anything else a `Double`; a `varint` keeps all its digits), and object members in
//! order, a repeated key keeping its first place and its last value (`LinkedHashMap.put`).
//! Parsing is serde_json's (syntax, escapes, a nesting limit); numbers come out as raw text
//! through its `RawValue`. As Jackson, text after the first value is ignored.

use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;

use crate::system::describe::java_double;

/// A parsed JSON value.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Json {
    /// `null`.
    Null,
    /// `true` or `false`.
    Bool(bool),
    /// A number, exactly as written.
    Number(String),
    /// A string, unescaped.
    String(String),
    /// An array.
    Array(Vec<Json>),
    /// An object's members in order (keys unique).
    Object(Vec<(String, Json)>),
}

/// A JSON number as Jackson reads it.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Number {
    /// An integer within `i32` (Java's `Integer`).
    Integer(i32),
    /// An integer within `i64` (`Long`).
    Long(i64),
    /// A larger integer (`BigInteger`): its canonical digits.
    BigInteger(String),
    /// Anything with a fraction or an exponent (`Double`; beyond its range, an infinity).
    Double(f64),
}

impl Number {
    /// Reads a JSON number's text.
    pub(crate) fn of(text: &str) -> Number {
        if text.contains(['.', 'e', 'E']) {
            // Valid JSON number syntax always parses; an overflow is an infinity, as in Java.
            return Number::Double(text.parse().unwrap_or(f64::NAN));
        }
        if let Ok(n) = text.parse::<i32>() {
            return Number::Integer(n);
        }
        if let Ok(n) = text.parse::<i64>() {
            return Number::Long(n);
        }
        Number::BigInteger(text.to_owned())
    }

    /// Java's `toString` of the number.
    pub(crate) fn java_text(&self) -> String {
        match self {
            Number::Integer(n) => n.to_string(),
            Number::Long(n) => n.to_string(),
            Number::BigInteger(digits) => digits.clone(),
            Number::Double(d) => java_double(*d),
        }
    }

    /// The Java class's simple name.
    pub(crate) fn class(&self) -> &'static str {
        match self {
            Number::Integer(_) => "Integer",
            Number::Long(_) => "Long",
            Number::BigInteger(_) => "BigInteger",
            Number::Double(_) => "Double",
        }
    }
}

impl Json {
    /// The simple name of the Java class Jackson makes of this value.
    pub(crate) fn class(&self) -> &'static str {
        match self {
            Json::Null => "null",
            Json::Bool(_) => "Boolean",
            Json::Number(n) => Number::of(n).class(),
            Json::String(_) => "String",
            Json::Array(_) => "ArrayList",
            Json::Object(_) => "LinkedHashMap",
        }
    }

    /// The fully qualified Java class name (for Cassandra's `ClassCastException` texts).
    pub(crate) fn java_class(&self) -> String {
        match self {
            Json::Array(_) | Json::Object(_) => format!("java.util.{}", self.class()),
            Json::Number(n) if matches!(Number::of(n), Number::BigInteger(_)) => {
                "java.math.BigInteger".to_owned()
            }
            _ => format!("java.lang.{}", self.class()),
        }
    }

    /// Java's `toString` of the value: strings bare, lists `[a, b]`, maps `{k=v}`.
    pub(crate) fn java_text(&self) -> String {
        match self {
            Json::Null => "null".to_owned(),
            Json::Bool(b) => b.to_string(),
            Json::Number(n) => Number::of(n).java_text(),
            Json::String(s) => s.clone(),
            Json::Array(items) => {
                let items: Vec<String> = items.iter().map(Json::java_text).collect();
                format!("[{}]", items.join(", "))
            }
            Json::Object(members) => {
                let members: Vec<String> = members
                    .iter()
                    .map(|(k, v)| format!("{k}={}", v.java_text()))
                    .collect();
                format!("{{{}}}", members.join(", "))
            }
        }
    }

    /// `Class: value`, as Cassandra's "but got a …" messages end.
    pub(crate) fn got(&self) -> String {
        format!("{}: {}", self.class(), self.java_text())
    }
}

/// Parses the first JSON value of `text` (trailing text is ignored, as Jackson does).
pub(crate) fn parse(text: &str) -> Result<Json, serde_json::Error> {
    let mut de = serde_json::Deserializer::from_str(text);
    let raw = <&RawValue>::deserialize(&mut de)?;
    build(raw.get())
}

/// An object's members with their values still raw.
struct Members<'a>(Vec<(String, &'a RawValue)>);

impl<'de> Deserialize<'de> for Members<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct MembersVisitor;
        impl<'de> Visitor<'de> for MembersVisitor {
            type Value = Members<'de>;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON object")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Members<'de>, A::Error> {
                let mut members = Vec::new();
                while let Some((key, value)) = map.next_entry::<String, &'de RawValue>()? {
                    members.push((key, value));
                }
                Ok(Members(members))
            }
        }
        deserializer.deserialize_map(MembersVisitor)
    }
}

/// The tree of one raw (already validated) JSON value. Nesting is bounded by serde_json's
/// recursion limit on the first parse.
fn build(raw: &str) -> Result<Json, serde_json::Error> {
    Ok(match raw.as_bytes().first() {
        Some(b'{') => {
            let Members(raw_members) = serde_json::from_str(raw)?;
            let mut members: Vec<(String, Json)> = Vec::with_capacity(raw_members.len());
            for (key, value) in raw_members {
                put(&mut members, key, build(value.get())?);
            }
            Json::Object(members)
        }
        Some(b'[') => {
            let items: Vec<&RawValue> = serde_json::from_str(raw)?;
            Json::Array(
                items
                    .into_iter()
                    .map(|i| build(i.get()))
                    .collect::<Result<_, _>>()?,
            )
        }
        Some(b'"') => Json::String(serde_json::from_str(raw)?),
        Some(b't') => Json::Bool(true),
        Some(b'f') => Json::Bool(false),
        Some(b'n') => Json::Null,
        _ => Json::Number(raw.to_owned()),
    })
}

/// `LinkedHashMap.put`: a new key goes last, a known one keeps its place and takes the value.
pub(crate) fn put(members: &mut Vec<(String, Json)>, key: String, value: Json) {
    match members.iter_mut().find(|(k, _)| *k == key) {
        Some((_, slot)) => *slot = value,
        None => members.push((key, value)),
    }
}

/// Cassandra's `Json.handleCaseSensitivity` on an object's keys: a key in double quotes
/// names a case-sensitive column or field (quotes removed), any other is lowercased. Keys
/// it changes are taken out and put back, in order, so they win over an equal key and go
/// last.
pub(crate) fn case_sensitive_keys(members: Vec<(String, Json)>) -> Vec<(String, Json)> {
    let keys: Vec<String> = members.iter().map(|(k, _)| k.clone()).collect();
    let mut members = members;
    for key in keys {
        let renamed = match key.strip_prefix('"').and_then(|k| k.strip_suffix('"')) {
            Some(inner) => inner.to_owned(),
            None => key.to_lowercase(),
        };
        if renamed == key {
            continue;
        }
        let Some(at) = members.iter().position(|(k, _)| *k == key) else {
            continue;
        };
        let (_, value) = members.remove(at);
        put(&mut members, renamed, value);
    }
    members
}

/// Jackson's quoting of a string: `"` and `\` escaped, control characters as `\n`, `\t`,
/// `\r`, `\b`, `\f` or `\u00XX` (upper-case hex); everything else as it is.
pub(crate) fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if u32::from(c) < 0x20 => out.push_str(&format!("\\u{:04X}", u32::from(c))),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_keep_their_text_and_jackson_class() {
        let v = parse(r#"{"a": 1, "b": 2147483648, "c": 123456789012345678901234567890, "d": 1.50, "e": 1e400}"#)
            .unwrap();
        let Json::Object(m) = v else { panic!() };
        let got: Vec<String> = m.iter().map(|(_, v)| v.got()).collect();
        assert_eq!(
            got,
            [
                "Integer: 1",
                "Long: 2147483648",
                "BigInteger: 123456789012345678901234567890",
                "Double: 1.5",
                "Double: Infinity"
            ]
        );
    }

    #[test]
    fn objects_keep_order_and_the_last_repeated_value() {
        let v = parse(r#"{"b": 1, "a": [1, "x", {"k": null}], "b": 2} trailing"#).unwrap();
        assert_eq!(v.java_text(), "{b=2, a=[1, x, {k=null}]}");
        let Json::Object(m) = v else { panic!() };
        let keys = case_sensitive_keys(vec![
            ("X".into(), Json::Null),
            ("y".into(), Json::Bool(true)),
            ("\"Z\"".into(), Json::Bool(false)),
        ]);
        let keys: Vec<&str> = keys.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["y", "x", "Z"]);
        assert_eq!(m.len(), 2);
    }

    #[test]
    fn strings_are_quoted_as_jackson_quotes_them() {
        assert_eq!(
            quote("a\u{1}b\u{1f}c\td\"e\\f/\u{7f}\u{2028}é"),
            "\"a\\u0001b\\u001Fc\\td\\\"e\\\\f/\u{7f}\u{2028}é\""
        );
    }

    #[test]
    fn bad_text_is_an_error() {
        for bad in ["", "not json", "{\"k\": 1", "{k: 1}", "[1,]", "NaN"] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }
}
