//! Column types beyond the native ones: collections (`list`, `set`, `map`), tuples and
//! `frozen<…>`, as Cassandra 4 names, nests and serializes them.
//!
//! A [`DataType`] is what a column (or a bind marker, or a collection's element) has. A
//! *multi-cell* type — a non-frozen collection — is stored one element per cell (see
//! `mosaic_rows::ComplexColumn`), so concurrent additions merge; everything else is one
//! value. Collection elements, map keys and values, and tuple fields are always stored
//! frozen: Cassandra refuses a non-frozen collection inside another (`list<list<int>>`),
//! and tuples are always frozen (their columns show as `frozen<tuple<…>>`).
//!
//! Values of these types serialize as the v3+ native protocol does: a collection is an
//! `[int]` count followed by each element (and, for maps, each key then value) as
//! `[bytes]`; a tuple is its fields as `[bytes]` (`-1` for null), with no count. Sets and
//! maps are kept in their element (key) type's order without duplicates, which makes their
//! serialization canonical — equal frozen values have equal bytes.

use std::cmp::Ordering;
use std::fmt;
use std::str::FromStr;

use crate::cql_type::CqlType;
use crate::value::{CqlValue, ValueError};

/// A column's type.
#[derive(
    Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum DataType {
    /// A native type.
    Native(#[serde(with = "native_name")] CqlType),
    /// `list<T>`.
    List(Box<DataType>),
    /// `set<T>`.
    Set(Box<DataType>),
    /// `map<K, V>`.
    Map(Box<DataType>, Box<DataType>),
    /// `tuple<…>` (always frozen).
    Tuple(Vec<DataType>),
    /// `frozen<T>`: the collection (or tuple) as one value.
    Frozen(Box<DataType>),
    /// A user-defined type; non-frozen (one cell per field) unless inside
    /// [`DataType::Frozen`]. A type written in CQL is a reference (no fields) until the
    /// statement is checked against its keyspace's types ([`UserType::is_resolved`]).
    Udt(Box<UserType>),
}

/// A user-defined type: its keyspace, name and fields in declaration order. A value is
/// serialized like a tuple of its fields.
#[derive(
    Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
pub struct UserType {
    /// Its keyspace (empty in an unresolved reference written without one).
    pub keyspace: String,
    /// Its name.
    pub name: String,
    /// Field names and types (empty in an unresolved reference; a defined type always has
    /// a field).
    pub fields: Vec<(String, DataType)>,
}

impl UserType {
    /// Whether this is a definition rather than a name waiting to be looked up.
    pub fn is_resolved(&self) -> bool {
        !self.fields.is_empty()
    }

    /// The position of field `name`.
    pub fn field(&self, name: &str) -> Option<usize> {
        self.fields.iter().position(|(n, _)| n == name)
    }
}

/// A native type in serialized catalogs: its CQL name.
mod native_name {
    use super::CqlType;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(ty: &CqlType, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(ty.name())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<CqlType, D::Error> {
        let name = String::deserialize(d)?;
        name.parse().map_err(serde::de::Error::custom)
    }
}

impl From<CqlType> for DataType {
    fn from(ty: CqlType) -> DataType {
        DataType::Native(ty)
    }
}

/// A type Cassandra refuses as written (the message is Cassandra's).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct InvalidTypeError(pub String);

impl DataType {
    /// The native type, if this is one.
    pub fn native(&self) -> Option<CqlType> {
        match self {
            DataType::Native(t) => Some(*t),
            _ => None,
        }
    }

    /// The type with any `frozen<>` taken off (tuples stay tuples).
    pub fn unfrozen(&self) -> &DataType {
        match self {
            DataType::Frozen(inner) => inner,
            other => other,
        }
    }

    /// Whether values are stored one element per cell (a non-frozen collection or
    /// user-defined type).
    pub fn is_multi_cell(&self) -> bool {
        matches!(
            self,
            DataType::List(_) | DataType::Set(_) | DataType::Map(..) | DataType::Udt(_)
        )
    }

    /// Every user-defined type this type mentions (itself, elements, fields), outermost
    /// first.
    pub fn user_types(&self) -> Vec<&UserType> {
        let mut out = Vec::new();
        self.collect_user_types(&mut out);
        out
    }

    fn collect_user_types<'a>(&'a self, out: &mut Vec<&'a UserType>) {
        match self {
            DataType::Native(_) => {}
            DataType::List(e) | DataType::Set(e) | DataType::Frozen(e) => e.collect_user_types(out),
            DataType::Map(k, v) => {
                k.collect_user_types(out);
                v.collect_user_types(out);
            }
            DataType::Tuple(fields) => fields.iter().for_each(|f| f.collect_user_types(out)),
            DataType::Udt(u) => {
                out.push(u);
                u.fields.iter().for_each(|(_, f)| f.collect_user_types(out));
            }
        }
    }

    /// The type with every user-defined type replaced by `lookup(keyspace, name)` (its
    /// current definition); `None` when one is unknown.
    pub fn resolve(&self, lookup: &impl Fn(&str, &str) -> Option<UserType>) -> Option<DataType> {
        Some(match self {
            DataType::Native(t) => DataType::Native(*t),
            DataType::List(e) => DataType::List(Box::new(e.resolve(lookup)?)),
            DataType::Set(e) => DataType::Set(Box::new(e.resolve(lookup)?)),
            DataType::Frozen(e) => DataType::Frozen(Box::new(e.resolve(lookup)?)),
            DataType::Map(k, v) => {
                DataType::Map(Box::new(k.resolve(lookup)?), Box::new(v.resolve(lookup)?))
            }
            DataType::Tuple(fields) => DataType::Tuple(
                fields
                    .iter()
                    .map(|f| f.resolve(lookup))
                    .collect::<Option<_>>()?,
            ),
            DataType::Udt(u) => DataType::Udt(Box::new(lookup(&u.keyspace, &u.name)?)),
        })
    }

    /// Whether this is a collection, frozen or not.
    pub fn is_collection(&self) -> bool {
        matches!(
            self.unfrozen(),
            DataType::List(_) | DataType::Set(_) | DataType::Map(..)
        )
    }

    /// Whether the type is a `duration` or holds one anywhere.
    pub fn contains_duration(&self) -> bool {
        match self {
            DataType::Native(t) => *t == CqlType::Duration,
            DataType::List(e) | DataType::Set(e) | DataType::Frozen(e) => e.contains_duration(),
            DataType::Map(k, v) => k.contains_duration() || v.contains_duration(),
            DataType::Tuple(fields) => fields.iter().any(DataType::contains_duration),
            DataType::Udt(u) => u.fields.iter().any(|(_, f)| f.contains_duration()),
        }
    }

    /// The type as an element of a collection or a tuple field: frozen if it is a
    /// collection.
    pub fn frozen(self) -> DataType {
        if self.is_multi_cell() {
            DataType::Frozen(Box::new(self))
        } else {
            self
        }
    }

    /// The type as Cassandra stores what was written: everything inside a tuple or a
    /// `frozen<…>` is frozen too (`tuple<int, list<int>>` is `frozen<tuple<int,
    /// frozen<list<int>>>>`); a non-frozen collection's elements are left as written (for
    /// [`DataType::validate`] to refuse a non-frozen one).
    pub fn normalized(self) -> DataType {
        match self {
            DataType::List(e) => DataType::List(Box::new(e.normalized())),
            DataType::Set(e) => DataType::Set(Box::new(e.normalized())),
            DataType::Map(k, v) => {
                DataType::Map(Box::new(k.normalized()), Box::new(v.normalized()))
            }
            DataType::Tuple(fields) => {
                DataType::Tuple(fields.into_iter().map(DataType::deep_frozen).collect())
            }
            DataType::Frozen(inner) => match *inner {
                DataType::List(e) => {
                    DataType::Frozen(Box::new(DataType::List(Box::new(e.deep_frozen()))))
                }
                DataType::Set(e) => {
                    DataType::Frozen(Box::new(DataType::Set(Box::new(e.deep_frozen()))))
                }
                DataType::Map(k, v) => DataType::Frozen(Box::new(DataType::Map(
                    Box::new(k.deep_frozen()),
                    Box::new(v.deep_frozen()),
                ))),
                DataType::Tuple(fields) => {
                    DataType::Tuple(fields.into_iter().map(DataType::deep_frozen).collect())
                }
                DataType::Frozen(inner) => DataType::Frozen(inner).normalized(),
                other => DataType::Frozen(Box::new(other)),
            },
            other => other,
        }
    }

    /// The type frozen, and everything inside it.
    fn deep_frozen(self) -> DataType {
        match self {
            DataType::List(_) | DataType::Set(_) | DataType::Map(..) | DataType::Udt(_) => {
                DataType::Frozen(Box::new(self)).normalized()
            }
            other => other.normalized(),
        }
    }

    /// Checks the nesting rules Cassandra applies to a type written in CQL: no non-frozen
    /// collection inside a collection or tuple, `frozen<>` only around collections and
    /// tuples, no `duration` in a set or as a map key.
    pub fn validate(&self) -> Result<(), InvalidTypeError> {
        self.validate_at(None)
    }

    /// `parent`: the collection or tuple this type is an element of.
    fn validate_at(&self, parent: Option<&DataType>) -> Result<(), InvalidTypeError> {
        match self {
            DataType::Native(_) => Ok(()),
            DataType::List(_) | DataType::Set(_) | DataType::Map(..) if parent.is_some() => {
                Err(InvalidTypeError(format!(
                    "Non-frozen collections are not allowed inside collections: {}",
                    parent.unwrap_or(self)
                )))
            }
            DataType::Udt(_) if parent.is_some() => Err(InvalidTypeError(format!(
                "Non-frozen UDTs are not allowed inside collections: {}",
                parent.unwrap_or(self)
            ))),
            // A UDT's field types were checked when it was created.
            DataType::Udt(_) => Ok(()),
            DataType::List(e) => e.validate_at(Some(self)),
            DataType::Set(e) => {
                self.check_durations()?;
                e.validate_at(Some(self))
            }
            DataType::Map(k, v) => {
                self.check_durations()?;
                k.validate_at(Some(self))?;
                v.validate_at(Some(self))
            }
            DataType::Tuple(fields) => fields.iter().try_for_each(|f| f.validate_at(Some(self))),
            DataType::Frozen(inner) => match inner.as_ref() {
                DataType::Native(_) => Err(InvalidTypeError(
                    format!(
                    "frozen<> is only allowed on collections, tuples, and user-defined types (got {inner})"
                ),
                )),
                DataType::List(_) | DataType::Set(_) | DataType::Map(..) => {
                    inner.check_durations_named(self)?;
                    inner.validate_at(None)
                }
                DataType::Udt(_) => Ok(()),
                other => other.validate_at(parent),
            },
        }
    }

    fn check_durations(&self) -> Result<(), InvalidTypeError> {
        self.check_durations_named(self)
    }

    /// [`Self::check_durations`], naming `shown` (the type as written, e.g. frozen).
    fn check_durations_named(&self, shown: &DataType) -> Result<(), InvalidTypeError> {
        match self {
            DataType::Set(e) if e.contains_duration() => Err(InvalidTypeError(format!(
                "Durations are not allowed inside sets: {shown}"
            ))),
            DataType::Map(k, _) if k.contains_duration() => Err(InvalidTypeError(format!(
                "Durations are not allowed as map keys: {shown}"
            ))),
            _ => Ok(()),
        }
    }

    /// Decodes the native-protocol serialization of a value of this type, validating it
    /// (elements recursively) as Cassandra does; sets and maps come back in their order
    /// without duplicates (the last value of a repeated map key wins).
    pub fn decode(&self, bytes: &[u8]) -> Result<CqlValue, ValueError> {
        match self {
            DataType::Native(t) => CqlValue::from_cql_bytes(*t, bytes),
            DataType::Frozen(inner) => inner.decode(bytes),
            DataType::List(e) => Ok(CqlValue::List(self.decode_elements(e, bytes)?)),
            DataType::Set(e) => Ok(CqlValue::Set(normalize_set(
                self.decode_elements(e, bytes)?,
            ))),
            DataType::Map(k, v) => {
                let mut r = Reader::new(bytes, self);
                let n = r.count()?;
                let mut entries = Vec::with_capacity(n.min(bytes.len() / 8));
                for _ in 0..n {
                    let key = k.decode(r.element()?)?;
                    let value = v.decode(r.element()?)?;
                    entries.push((key, value));
                }
                r.finish()?;
                Ok(CqlValue::Map(normalize_map(entries)))
            }
            DataType::Udt(u) => self.decode_fields(u.fields.iter().map(|(_, t)| t), bytes),
            DataType::Tuple(fields) => self.decode_fields(fields.iter(), bytes),
        }
    }

    /// A list's or set's elements, each of type `element`.
    fn decode_elements(
        &self,
        element: &DataType,
        bytes: &[u8],
    ) -> Result<Vec<CqlValue>, ValueError> {
        let mut r = Reader::new(bytes, self);
        let n = r.count()?;
        let mut items = Vec::with_capacity(n.min(bytes.len() / 4));
        for _ in 0..n {
            items.push(element.decode(r.element()?)?);
        }
        r.finish()?;
        Ok(items)
    }

    /// A tuple's or user-defined type's fields, in order; fields missing at the end are
    /// null.
    fn decode_fields<'a>(
        &self,
        fields: impl ExactSizeIterator<Item = &'a DataType>,
        bytes: &[u8],
    ) -> Result<CqlValue, ValueError> {
        let count = fields.len();
        let mut r = Reader::new(bytes, self);
        let mut values = Vec::with_capacity(count);
        for field in fields {
            if r.done() {
                break;
            }
            values.push(match r.nullable()? {
                Some(b) => Some(field.decode(b)?),
                None => None,
            });
        }
        r.finish()?;
        values.resize(count, None);
        Ok(CqlValue::Tuple(values))
    }

    /// Checks that `value` is a value of this type (recursively).
    pub fn check_value(&self, value: &CqlValue) -> Result<(), ValueError> {
        let mismatch = || ValueError::Malformed {
            ty: self.to_string(),
            reason: "a value of another type",
        };
        match (self.unfrozen(), value) {
            (DataType::Native(t), v) => v.check_type(*t),
            (DataType::List(e), CqlValue::List(items))
            | (DataType::Set(e), CqlValue::Set(items)) => {
                items.iter().try_for_each(|i| e.check_value(i))
            }
            (DataType::Map(k, v), CqlValue::Map(entries)) => {
                entries.iter().try_for_each(|(key, value)| {
                    k.check_value(key).and_then(|()| v.check_value(value))
                })
            }
            (DataType::Tuple(fields), CqlValue::Tuple(values)) if values.len() == fields.len() => {
                fields
                    .iter()
                    .zip(values)
                    .try_for_each(|(f, v)| v.as_ref().map_or(Ok(()), |v| f.check_value(v)))
            }
            (DataType::Udt(u), CqlValue::Tuple(values)) if values.len() == u.fields.len() => u
                .fields
                .iter()
                .zip(values)
                .try_for_each(|((_, f), v)| v.as_ref().map_or(Ok(()), |v| f.check_value(v))),
            _ => Err(mismatch()),
        }
    }
}

/// Sorts set elements in their type's order and removes duplicates.
pub fn normalize_set(mut items: Vec<CqlValue>) -> Vec<CqlValue> {
    items.sort_by(|a, b| a.cql_cmp(b).unwrap_or(Ordering::Equal));
    items.dedup_by(|a, b| a.cql_cmp(b) == Some(Ordering::Equal));
    items
}

/// Sorts map entries by key and keeps the last value of a repeated key.
pub fn normalize_map(entries: Vec<(CqlValue, CqlValue)>) -> Vec<(CqlValue, CqlValue)> {
    let mut indexed: Vec<(usize, (CqlValue, CqlValue))> = entries.into_iter().enumerate().collect();
    // Stable by key, later entries after earlier ones with an equal key.
    indexed
        .sort_by(|(i, (a, _)), (j, (b, _))| a.cql_cmp(b).unwrap_or(Ordering::Equal).then(i.cmp(j)));
    let mut out: Vec<(CqlValue, CqlValue)> = Vec::with_capacity(indexed.len());
    for (_, (k, v)) in indexed {
        match out.last_mut() {
            Some((last, value)) if last.cql_cmp(&k) == Some(Ordering::Equal) => *value = v,
            _ => out.push((k, v)),
        }
    }
    out
}

/// Reads the parts of a collection or tuple serialization.
struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
    ty: &'a DataType,
}

impl<'a> Reader<'a> {
    fn new(bytes: &'a [u8], ty: &'a DataType) -> Self {
        Reader { bytes, pos: 0, ty }
    }

    fn error(&self, reason: &'static str) -> ValueError {
        ValueError::Malformed {
            ty: self.ty.to_string(),
            reason,
        }
    }

    fn int(&mut self) -> Result<i32, ValueError> {
        let b: [u8; 4] = self
            .bytes
            .get(self.pos..self.pos + 4)
            .and_then(|b| b.try_into().ok())
            .ok_or_else(|| self.error("not enough bytes to read a length"))?;
        self.pos += 4;
        Ok(i32::from_be_bytes(b))
    }

    fn count(&mut self) -> Result<usize, ValueError> {
        let n = self.int()?;
        usize::try_from(n).map_err(|_| self.error("negative element count"))
    }

    fn nullable(&mut self) -> Result<Option<&'a [u8]>, ValueError> {
        let len = self.int()?;
        if len < 0 {
            return Ok(None);
        }
        let end = self.pos + len as usize;
        let b = self
            .bytes
            .get(self.pos..end)
            .ok_or_else(|| self.error("not enough bytes to read an element"))?;
        self.pos = end;
        Ok(Some(b))
    }

    fn element(&mut self) -> Result<&'a [u8], ValueError> {
        self.nullable()?
            .ok_or_else(|| self.error("null is not supported inside collections"))
    }

    fn done(&self) -> bool {
        self.pos >= self.bytes.len()
    }

    fn finish(&self) -> Result<(), ValueError> {
        if self.done() {
            Ok(())
        } else {
            Err(self.error("bytes left after the last element"))
        }
    }
}

/// Appends a collection's serialization: the count, then each part as `[bytes]`.
pub(crate) fn write_collection<'v>(
    out: &mut Vec<u8>,
    count: usize,
    parts: impl Iterator<Item = &'v CqlValue>,
) {
    out.extend_from_slice(&(count as i32).to_be_bytes());
    for part in parts {
        write_bytes(out, Some(part));
    }
}

/// Appends `[bytes]`: a length, then the value (`-1` for null).
pub(crate) fn write_bytes(out: &mut Vec<u8>, value: Option<&CqlValue>) {
    match value {
        None => out.extend_from_slice(&(-1i32).to_be_bytes()),
        Some(v) => {
            let at = out.len();
            out.extend_from_slice(&[0; 4]);
            v.write_cql_bytes(out);
            let len = (out.len() - at - 4) as i32;
            if let Some(slot) = out.get_mut(at..at + 4) {
                slot.copy_from_slice(&len.to_be_bytes());
            }
        }
    }
}

impl fmt::Display for DataType {
    /// Cassandra's spelling, as `system_schema.columns` shows it: `list<int>`,
    /// `map<text, int>`, `frozen<set<text>>`, `frozen<tuple<int, text>>`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DataType::Native(t) => write!(f, "{t}"),
            DataType::List(e) => write!(f, "list<{e}>"),
            DataType::Set(e) => write!(f, "set<{e}>"),
            DataType::Map(k, v) => write!(f, "map<{k}, {v}>"),
            DataType::Tuple(fields) => {
                f.write_str("frozen<tuple<")?;
                for (i, field) in fields.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{field}")?;
                }
                f.write_str(">>")
            }
            DataType::Frozen(inner) => match inner.as_ref() {
                // A tuple prints its own frozen<>.
                DataType::Tuple(_) => write!(f, "{inner}"),
                _ => write!(f, "frozen<{inner}>"),
            },
            // A definition prints as its bare name (as system_schema shows it); a reference
            // as written, keyspace included.
            DataType::Udt(u) if !u.is_resolved() && !u.keyspace.is_empty() => {
                write!(f, "{}.{}", quote_name(&u.keyspace), quote_name(&u.name))
            }
            DataType::Udt(u) => write!(f, "{}", quote_name(&u.name)),
        }
    }
}

/// A name as CQL must write it: as is when it is lowercase alphanumeric and underscores,
/// else in double quotes.
pub fn quote_name(name: &str) -> String {
    let plain = name
        .bytes()
        .enumerate()
        .all(|(i, b)| b.is_ascii_lowercase() || b == b'_' || (i > 0 && b.is_ascii_digit()));
    if plain && !name.is_empty() {
        name.to_owned()
    } else {
        format!("\"{}\"", name.replace('"', "\"\""))
    }
}

/// A type name that does not parse.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown type {0}")]
pub struct ParseDataTypeError(pub String);

impl FromStr for DataType {
    type Err = ParseDataTypeError;

    /// Parses what [`fmt::Display`] writes (and the same with other spacing or case).
    fn from_str(s: &str) -> Result<DataType, ParseDataTypeError> {
        let error = || ParseDataTypeError(s.to_owned());
        let mut p = NameParser { s, pos: 0 };
        let ty = p.parse().ok_or_else(error)?;
        p.skip_spaces();
        if p.pos != s.len() {
            return Err(error());
        }
        Ok(ty)
    }
}

struct NameParser<'a> {
    s: &'a str,
    pos: usize,
}

impl NameParser<'_> {
    fn skip_spaces(&mut self) {
        while self.s.as_bytes().get(self.pos) == Some(&b' ') {
            self.pos += 1;
        }
    }

    fn eat(&mut self, c: u8) -> bool {
        self.skip_spaces();
        if self.s.as_bytes().get(self.pos) == Some(&c) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn word(&mut self) -> Option<&str> {
        self.skip_spaces();
        let start = self.pos;
        while self
            .s
            .as_bytes()
            .get(self.pos)
            .is_some_and(|b| b.is_ascii_alphanumeric() || *b == b'_')
        {
            self.pos += 1;
        }
        (self.pos > start)
            .then(|| self.s.get(start..self.pos))
            .flatten()
    }

    fn parse(&mut self) -> Option<DataType> {
        let word = self.word()?.to_ascii_lowercase();
        let generic = |p: &mut Self, n: usize| -> Option<Vec<DataType>> {
            if !p.eat(b'<') {
                return None;
            }
            let mut args = vec![p.parse()?];
            while p.eat(b',') {
                args.push(p.parse()?);
            }
            (p.eat(b'>') && (n == 0 || args.len() == n)).then_some(args)
        };
        Some(match word.as_str() {
            "list" => DataType::List(Box::new(generic(self, 1)?.pop()?)),
            "set" => DataType::Set(Box::new(generic(self, 1)?.pop()?)),
            "map" => {
                let mut args = generic(self, 2)?;
                let v = args.pop()?;
                let k = args.pop()?;
                DataType::Map(Box::new(k), Box::new(v))
            }
            "tuple" => DataType::Tuple(generic(self, 0)?),
            "frozen" => match generic(self, 1)?.pop()? {
                t @ DataType::Tuple(_) => t,
                inner => DataType::Frozen(Box::new(inner)),
            },
            native => DataType::Native(native.parse().ok()?),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ty(s: &str) -> DataType {
        s.parse().unwrap()
    }

    #[test]
    fn names_round_trip_as_cassandra_spells_them() {
        for name in [
            "int",
            "list<int>",
            "set<text>",
            "map<text, int>",
            "frozen<list<int>>",
            "list<frozen<list<int>>>",
            "map<text, frozen<set<int>>>",
            "frozen<tuple<int, text>>",
            "frozen<map<int, frozen<tuple<int, frozen<list<text>>>>>>",
        ] {
            assert_eq!(ty(name).to_string(), name);
        }
        // A tuple is frozen whether or not it was written so.
        assert_eq!(ty("tuple<int,text>"), ty("frozen<tuple<int, text>>"));
        assert!("list<int".parse::<DataType>().is_err());
        assert!("map<int>".parse::<DataType>().is_err());
        assert!("list<int> x".parse::<DataType>().is_err());
    }

    #[test]
    fn nesting_rules_are_cassandras() {
        assert!(ty("list<frozen<list<int>>>").validate().is_ok());
        assert_eq!(
            ty("list<list<int>>").validate().unwrap_err().0,
            "Non-frozen collections are not allowed inside collections: list<list<int>>"
        );
        assert_eq!(
            ty("frozen<int>").validate().unwrap_err().0,
            "frozen<> is only allowed on collections, tuples, and user-defined types (got int)"
        );
        assert_eq!(
            ty("set<duration>").validate().unwrap_err().0,
            "Durations are not allowed inside sets: set<duration>"
        );
        assert_eq!(
            ty("map<duration, int>").validate().unwrap_err().0,
            "Durations are not allowed as map keys: map<duration, int>"
        );
        assert!(ty("map<int, duration>").validate().is_ok());
        assert!(ty("list<duration>").validate().is_ok());
    }

    #[test]
    fn values_round_trip_and_sets_and_maps_are_canonical() {
        let set = ty("set<int>");
        let mut bytes = Vec::new();
        write_collection(
            &mut bytes,
            3,
            [CqlValue::Int(3), CqlValue::Int(1), CqlValue::Int(3)].iter(),
        );
        let v = set.decode(&bytes).unwrap();
        assert_eq!(v, CqlValue::Set(vec![CqlValue::Int(1), CqlValue::Int(3)]));
        assert_eq!(set.decode(&v.to_cql_bytes()).unwrap(), v);

        let map = ty("map<text, int>");
        let mut bytes = Vec::new();
        let parts = [
            CqlValue::Text("b".into()),
            CqlValue::Int(1),
            CqlValue::Text("a".into()),
            CqlValue::Int(2),
            CqlValue::Text("b".into()),
            CqlValue::Int(3),
        ];
        write_collection(&mut bytes, 3, parts.iter());
        assert_eq!(
            map.decode(&bytes).unwrap(),
            CqlValue::Map(vec![
                (CqlValue::Text("a".into()), CqlValue::Int(2)),
                (CqlValue::Text("b".into()), CqlValue::Int(3)),
            ])
        );

        let tuple = ty("tuple<int, text, int>");
        let v = CqlValue::Tuple(vec![Some(CqlValue::Int(7)), None, None]);
        assert_eq!(tuple.decode(&v.to_cql_bytes()).unwrap(), v);
        // Trailing fields may be left out.
        let short = CqlValue::Tuple(vec![Some(CqlValue::Int(7))]).to_cql_bytes();
        assert_eq!(tuple.decode(&short).unwrap(), v);
    }

    #[test]
    fn malformed_collections_are_errors_never_panics() {
        let t = ty("map<int, frozen<list<text>>>");
        let good = {
            let mut b = Vec::new();
            let inner = CqlValue::List(vec![CqlValue::Text("x".into())]);
            write_collection(&mut b, 1, [CqlValue::Int(1), inner].iter());
            b
        };
        assert!(t.decode(&good).is_ok());
        for len in 0..good.len() {
            assert!(t.decode(&good[..len]).is_err(), "prefix {len}");
        }
        let mut extra = good.clone();
        extra.push(0);
        assert!(t.decode(&extra).is_err());
        // A null element.
        let mut null = Vec::new();
        null.extend_from_slice(&1i32.to_be_bytes());
        null.extend_from_slice(&(-1i32).to_be_bytes());
        assert!(ty("list<int>").decode(&null).is_err());
        // A negative count.
        assert!(ty("list<int>").decode(&(-2i32).to_be_bytes()).is_err());
        // A huge count with no bytes allocates nothing absurd and fails.
        assert!(ty("list<int>").decode(&i32::MAX.to_be_bytes()).is_err());
    }

    #[test]
    fn collections_order_element_by_element_then_by_size() {
        let l = |v: &[i32]| CqlValue::List(v.iter().map(|&i| CqlValue::Int(i)).collect());
        assert_eq!(l(&[1, 2]).cql_cmp(&l(&[1, 3])), Some(Ordering::Less));
        assert_eq!(l(&[1]).cql_cmp(&l(&[1, 0])), Some(Ordering::Less));
        assert_eq!(l(&[2]).cql_cmp(&l(&[1, 9])), Some(Ordering::Greater));
        let t = |a: Option<i32>| CqlValue::Tuple(vec![a.map(CqlValue::Int)]);
        assert_eq!(t(None).cql_cmp(&t(Some(i32::MIN))), Some(Ordering::Less));
    }
}
