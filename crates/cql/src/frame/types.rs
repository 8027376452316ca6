//! Consistency levels and column types as the protocol spells them (`[consistency]`,
//! `[option]`).

use bytes::{BufMut, BytesMut};
use mosaic_types::{CqlType, DataType};

use super::wire::{put_string, EncodeError};
use super::ProtocolVersion;

/// A consistency level (`[consistency]`, §3): the one enum every layer shares; its wire
/// codes are read and written here, at the protocol edge.
pub use mosaic_types::ConsistencyLevel as Consistency;

/// A column or bind-marker type as an `[option]` (§4.2.5.2): the native types of
/// [`CqlType`] plus the ones Mosaic doesn't store yet, so metadata can describe anything a
/// driver may meet (for instance in `system_schema` results). `inet`, `time` and `duration`
/// are native types (`ColumnType::Native(CqlType::Inet)`, …).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ColumnType {
    /// One of Mosaic's native types.
    Native(CqlType),
    /// 0x0000: a custom type, by its fully qualified Java class name.
    Custom(String),
    /// 0x0005 `counter`.
    Counter,
    /// 0x0020 `list<T>`.
    List(Box<ColumnType>),
    /// 0x0021 `map<K, V>`.
    Map(Box<ColumnType>, Box<ColumnType>),
    /// 0x0022 `set<T>`.
    Set(Box<ColumnType>),
    /// 0x0030 a user-defined type.
    Udt {
        /// Its keyspace.
        keyspace: String,
        /// Its name.
        name: String,
        /// Field names and types, in declaration order.
        fields: Vec<(String, ColumnType)>,
    },
    /// 0x0031 `tuple<…>`.
    Tuple(Vec<ColumnType>),
}

/// Option ids (§4.2.5.2) for the types outside [`CqlType`].
pub(crate) mod option_id {
    pub(crate) const CUSTOM: u16 = 0x0000;
    pub(crate) const COUNTER: u16 = 0x0005;
    pub(crate) const LIST: u16 = 0x0020;
    pub(crate) const MAP: u16 = 0x0021;
    pub(crate) const SET: u16 = 0x0022;
    pub(crate) const UDT: u16 = 0x0030;
    pub(crate) const TUPLE: u16 = 0x0031;
}

/// Java classes Cassandra names, as custom types, for ids a protocol version lacks:
/// `duration` has no id before v5, so it always goes out as `DurationType`.
pub(crate) const DURATION_CLASS: &str = "org.apache.cassandra.db.marshal.DurationType";
const V3_CUSTOM_CLASSES: [(CqlType, &str); 4] = [
    (
        CqlType::Date,
        "org.apache.cassandra.db.marshal.SimpleDateType",
    ),
    (
        CqlType::SmallInt,
        "org.apache.cassandra.db.marshal.ShortType",
    ),
    (CqlType::TinyInt, "org.apache.cassandra.db.marshal.ByteType"),
    (CqlType::Time, "org.apache.cassandra.db.marshal.TimeType"),
];

impl From<CqlType> for ColumnType {
    fn from(t: CqlType) -> ColumnType {
        ColumnType::Native(t)
    }
}

impl From<&DataType> for ColumnType {
    /// The wire type of a column type (`frozen<>` does not show on the wire).
    fn from(t: &DataType) -> ColumnType {
        match t {
            DataType::Native(t) => ColumnType::Native(*t),
            DataType::List(e) => ColumnType::List(Box::new(e.as_ref().into())),
            DataType::Set(e) => ColumnType::Set(Box::new(e.as_ref().into())),
            DataType::Map(k, v) => {
                ColumnType::Map(Box::new(k.as_ref().into()), Box::new(v.as_ref().into()))
            }
            DataType::Tuple(fields) => ColumnType::Tuple(fields.iter().map(Into::into).collect()),
            DataType::Frozen(inner) => inner.as_ref().into(),
            DataType::Udt(u) => ColumnType::Udt {
                keyspace: u.keyspace.clone(),
                name: u.name.clone(),
                fields: u
                    .fields
                    .iter()
                    .map(|(n, t)| (n.clone(), t.into()))
                    .collect(),
            },
            // DataType is non-exhaustive; a future kind goes out as a blob.
            _ => ColumnType::Native(CqlType::Blob),
        }
    }
}

impl ColumnType {
    /// The column type a wire type stands for (`counter` as `bigint`; a custom type has
    /// none).
    pub fn data_type(&self) -> Option<DataType> {
        Some(match self {
            ColumnType::Native(t) => DataType::Native(*t),
            ColumnType::Counter => DataType::Native(CqlType::BigInt),
            ColumnType::Custom(_) => return None,
            ColumnType::List(e) => DataType::List(Box::new(e.data_type()?)),
            ColumnType::Set(e) => DataType::Set(Box::new(e.data_type()?)),
            ColumnType::Map(k, v) => {
                DataType::Map(Box::new(k.data_type()?), Box::new(v.data_type()?))
            }
            ColumnType::Tuple(fields) => DataType::Tuple(
                fields
                    .iter()
                    .map(ColumnType::data_type)
                    .collect::<Option<_>>()?,
            ),
            ColumnType::Udt {
                keyspace,
                name,
                fields,
            } => DataType::Udt(Box::new(mosaic_types::UserType {
                keyspace: keyspace.clone(),
                name: name.clone(),
                fields: fields
                    .iter()
                    .map(|(n, t)| Some((n.clone(), t.data_type()?)))
                    .collect::<Option<_>>()?,
            })),
        })
    }

    /// Appends the `[option]`. v3 lacks ids for date, time, smallint and tinyint, and v3 and
    /// v4 for duration (v5's 0x0015), so they go out as Cassandra sends them: custom types
    /// naming the Java class.
    pub(crate) fn put_option(
        &self,
        out: &mut BytesMut,
        version: ProtocolVersion,
    ) -> Result<(), EncodeError> {
        match self {
            ColumnType::Native(CqlType::Duration) if version < ProtocolVersion::V5 => {
                out.put_u16(option_id::CUSTOM);
                put_string(out, DURATION_CLASS)?;
            }
            ColumnType::Native(t) => {
                if version < ProtocolVersion::V4 {
                    if let Some((_, class)) = V3_CUSTOM_CLASSES.iter().find(|(v3, _)| v3 == t) {
                        out.put_u16(option_id::CUSTOM);
                        return put_string(out, class);
                    }
                }
                out.put_u16(t.protocol_id());
            }
            ColumnType::Custom(class) => {
                out.put_u16(option_id::CUSTOM);
                put_string(out, class)?;
            }
            ColumnType::Counter => out.put_u16(option_id::COUNTER),
            ColumnType::List(e) => {
                out.put_u16(option_id::LIST);
                e.put_option(out, version)?;
            }
            ColumnType::Map(k, v) => {
                out.put_u16(option_id::MAP);
                k.put_option(out, version)?;
                v.put_option(out, version)?;
            }
            ColumnType::Set(e) => {
                out.put_u16(option_id::SET);
                e.put_option(out, version)?;
            }
            ColumnType::Udt {
                keyspace,
                name,
                fields,
            } => {
                out.put_u16(option_id::UDT);
                put_string(out, keyspace)?;
                put_string(out, name)?;
                let n = u16::try_from(fields.len()).map_err(|_| EncodeError::TooManyElements {
                    what: "UDT fields",
                    length: fields.len(),
                })?;
                out.put_u16(n);
                for (field, ty) in fields {
                    put_string(out, field)?;
                    ty.put_option(out, version)?;
                }
            }
            ColumnType::Tuple(items) => {
                out.put_u16(option_id::TUPLE);
                let n = u16::try_from(items.len()).map_err(|_| EncodeError::TooManyElements {
                    what: "tuple items",
                    length: items.len(),
                })?;
                out.put_u16(n);
                for ty in items {
                    ty.put_option(out, version)?;
                }
            }
        }
        Ok(())
    }
}

/// One column of a result, or one bind marker of a prepared statement (`<col_spec_i>`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ColumnSpec {
    /// Keyspace of the column's table.
    pub keyspace: String,
    /// The column's table.
    pub table: String,
    /// Column name, alias or bind-marker name.
    pub name: String,
    /// Its type.
    pub ty: ColumnType,
}

impl ColumnSpec {
    /// A column of `keyspace.table`.
    pub fn new(
        keyspace: impl Into<String>,
        table: impl Into<String>,
        name: impl Into<String>,
        ty: impl Into<ColumnType>,
    ) -> ColumnSpec {
        ColumnSpec {
            keyspace: keyspace.into(),
            table: table.into(),
            name: name.into(),
            ty: ty.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn option(ty: ColumnType, version: ProtocolVersion) -> Vec<u8> {
        let mut out = BytesMut::new();
        ty.put_option(&mut out, version).expect("encodes");
        out.to_vec()
    }

    fn custom(class: &str) -> Vec<u8> {
        let mut out = BytesMut::from(&[0u8, 0][..]);
        put_string(&mut out, class).expect("encodes");
        out.to_vec()
    }

    #[test]
    fn inet_time_and_duration_options_are_cassandras() {
        let v3 = ProtocolVersion::V3;
        let v4 = ProtocolVersion::V4;
        assert_eq!(option(CqlType::Inet.into(), v3), [0x00, 0x10]);
        assert_eq!(option(CqlType::Inet.into(), v4), [0x00, 0x10]);
        assert_eq!(option(CqlType::Time.into(), v4), [0x00, 0x12]);
        assert_eq!(
            option(CqlType::Time.into(), v3),
            custom("org.apache.cassandra.db.marshal.TimeType")
        );
        // No id for duration before v5: Cassandra names its class.
        for version in [v3, v4] {
            assert_eq!(
                option(CqlType::Duration.into(), version),
                custom("org.apache.cassandra.db.marshal.DurationType")
            );
        }
        let v5 = ProtocolVersion::V5;
        assert_eq!(option(CqlType::Duration.into(), v5), [0x00, 0x15]);
        assert_eq!(option(CqlType::Time.into(), v5), [0x00, 0x12]);
        assert_eq!(option(CqlType::Inet.into(), v5), [0x00, 0x10]);
    }
}
