//! Request bodies (§4.1): STARTUP, AUTH_RESPONSE, OPTIONS, QUERY, PREPARE, EXECUTE, BATCH,
//! REGISTER.

use bytes::Bytes;

use super::compress::Compression;
use super::types::Consistency;
use super::wire::{BodyError, Reader};
use super::{Opcode, ProtocolVersion};

/// A decoded request.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Request {
    /// STARTUP.
    Startup(Startup),
    /// AUTH_RESPONSE.
    AuthResponse(AuthResponse),
    /// OPTIONS.
    Options,
    /// QUERY.
    Query(Query),
    /// PREPARE.
    Prepare(Prepare),
    /// EXECUTE.
    Execute(Execute),
    /// BATCH.
    Batch(Batch),
    /// REGISTER.
    Register(Register),
}

/// STARTUP: the client's options, in wire order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Startup {
    /// Every option sent (`CQL_VERSION`, `COMPRESSION`, `DRIVER_NAME`, …).
    pub options: Vec<(String, String)>,
}

/// What the server needs from a STARTUP.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct StartupOptions {
    /// `CQL_VERSION` as sent (drivers send "3.0.0" or what SUPPORTED offered).
    pub cql_version: String,
    /// The compression to use from now on, both ways.
    pub compression: Option<Compression>,
    /// `THROW_ON_OVERLOAD` is `1` (as Cassandra reads it): a request the node has no room
    /// for is answered Overloaded instead of waiting until there is.
    pub throw_on_overload: bool,
}

impl Startup {
    /// An option's value (keys are case-sensitive, as in Cassandra).
    pub fn option(&self, key: &str) -> Option<&str> {
        self.options
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// Checks the options as Cassandra's `StartupMessage` does: `CQL_VERSION` is required,
    /// `COMPRESSION` (case-insensitive) must be `lz4` if present. Snappy is refused with
    /// Cassandra's text for a node without the native library.
    pub fn negotiate(&self) -> Result<StartupOptions, BodyError> {
        let cql_version = self
            .option("CQL_VERSION")
            .ok_or(BodyError::MissingCqlVersion)?
            .to_owned();
        let compression = match self.option("COMPRESSION") {
            None => None,
            Some(name) if name.eq_ignore_ascii_case("lz4") => Some(Compression::Lz4),
            Some(name) if name.eq_ignore_ascii_case("snappy") => {
                return Err(BodyError::SnappyUnsupported)
            }
            Some(name) => {
                return Err(BodyError::UnknownCompression {
                    name: name.to_owned(),
                })
            }
        };
        Ok(StartupOptions {
            cql_version,
            compression,
            throw_on_overload: self.option("THROW_ON_OVERLOAD") == Some("1"),
        })
    }
}

/// AUTH_RESPONSE: a SASL token (`null` allowed by the notation).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AuthResponse {
    /// The token.
    pub token: Option<Bytes>,
}

/// A bound value (`[value]`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Value {
    /// Length -1 (any negative length in v3).
    Null,
    /// Length -2 (v4): leave the column as it is.
    Unset,
    /// The serialized value, a slice of the frame.
    Bytes(Bytes),
}

impl Value {
    /// The bytes, if the value is set and not null.
    pub fn as_bytes(&self) -> Option<&Bytes> {
        match self {
            Value::Bytes(b) => Some(b),
            Value::Null | Value::Unset => None,
        }
    }
}

/// The values bound to a statement.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BoundValues {
    /// In bind-marker order (also: no values at all).
    Positional(Vec<Value>),
    /// With names (flag 0x40): `(name, value)` in wire order.
    Named(Vec<(String, Value)>),
}

impl Default for BoundValues {
    fn default() -> BoundValues {
        BoundValues::Positional(Vec::new())
    }
}

impl BoundValues {
    /// How many values are bound.
    pub fn len(&self) -> usize {
        match self {
            BoundValues::Positional(v) => v.len(),
            BoundValues::Named(v) => v.len(),
        }
    }

    /// Whether no values are bound.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// `<query_parameters>` of QUERY and EXECUTE (§4.1.4).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QueryParameters {
    /// The consistency level.
    pub consistency: Consistency,
    /// Flag 0x01 (and 0x40 for names).
    pub values: BoundValues,
    /// Flag 0x02: answer Rows with the No_metadata flag.
    pub skip_metadata: bool,
    /// Flag 0x04: rows per page as sent; zero or negative means "no paging" in Cassandra.
    pub page_size: Option<i32>,
    /// Flag 0x08: where the previous page stopped (`None` too if the client sent `null`).
    pub paging_state: Option<Bytes>,
    /// Flag 0x10: the serial consistency of conditional updates (default SERIAL).
    pub serial_consistency: Option<Consistency>,
    /// Flag 0x20: the default write timestamp in microseconds.
    pub timestamp: Option<i64>,
    /// Flag 0x80 (v5): the keyspace of unqualified names, instead of the connection's.
    /// Cassandra reads it in QUERY and BATCH and ignores it in EXECUTE (a prepared
    /// statement keeps the keyspace it was prepared in); so do we.
    pub keyspace: Option<String>,
    /// Flag 0x100 (v5): "now" in seconds since the epoch, for TTL liveness and local
    /// deletion times (the spec: "intended for testing purposes").
    pub now_in_seconds: Option<i32>,
}

impl QueryParameters {
    /// Parameters with `consistency` and nothing else.
    pub fn new(consistency: Consistency) -> QueryParameters {
        QueryParameters {
            consistency,
            values: BoundValues::default(),
            skip_metadata: false,
            page_size: None,
            paging_state: None,
            serial_consistency: None,
            timestamp: None,
            keyspace: None,
            now_in_seconds: None,
        }
    }
}

/// Query-parameter and batch flags (§4.1.4, §4.1.7): a `[byte]` before v5, an `[int]` in v5.
mod flag {
    pub(super) const VALUES: u32 = 0x01;
    pub(super) const SKIP_METADATA: u32 = 0x02;
    pub(super) const PAGE_SIZE: u32 = 0x04;
    pub(super) const PAGING_STATE: u32 = 0x08;
    pub(super) const SERIAL_CONSISTENCY: u32 = 0x10;
    pub(super) const DEFAULT_TIMESTAMP: u32 = 0x20;
    pub(super) const NAMES_FOR_VALUES: u32 = 0x40;
    /// v5 only.
    pub(super) const WITH_KEYSPACE: u32 = 0x80;
    /// v5 only.
    pub(super) const NOW_IN_SECONDS: u32 = 0x100;
    /// PREPARE's flags (v5): 0x01, a keyspace follows.
    pub(super) const PREPARE_WITH_KEYSPACE: u32 = 0x01;
}

/// QUERY.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Query {
    /// The CQL text.
    pub query: String,
    /// Its parameters.
    pub params: QueryParameters,
}

/// PREPARE.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Prepare {
    /// The CQL text.
    pub query: String,
    /// Flag 0x01 (v5): the keyspace of unqualified names, instead of the connection's.
    pub keyspace: Option<String>,
}

impl Prepare {
    /// A PREPARE of `query` in the connection's keyspace.
    pub fn new(query: impl Into<String>) -> Prepare {
        Prepare {
            query: query.into(),
            keyspace: None,
        }
    }
}

/// EXECUTE.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Execute {
    /// The prepared statement id.
    pub id: Bytes,
    /// v5: the result metadata id the client holds (from PREPARED or a Rows result with
    /// `METADATA_CHANGED`); `None` before v5.
    pub result_metadata_id: Option<Bytes>,
    /// Its parameters.
    pub params: QueryParameters,
}

impl Execute {
    /// An EXECUTE of statement `id` (no result metadata id: v3/v4).
    pub fn new(id: Bytes, params: QueryParameters) -> Execute {
        Execute {
            id,
            result_metadata_id: None,
            params,
        }
    }
}

/// BATCH `<type>`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum BatchType {
    /// 0.
    Logged,
    /// 1.
    Unlogged,
    /// 2.
    Counter,
}

/// One statement of a BATCH.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BatchQuery {
    /// Kind 0: CQL text.
    Query(String),
    /// Kind 1: a prepared statement id.
    Prepared(Bytes),
}

/// A statement of a BATCH with its values.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BatchStatement {
    /// The statement.
    pub query: BatchQuery,
    /// Its values.
    pub values: BoundValues,
}

/// BATCH (§4.1.7).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Batch {
    /// Logged, unlogged or counter.
    pub batch_type: BatchType,
    /// The statements, in order.
    pub statements: Vec<BatchStatement>,
    /// The consistency level.
    pub consistency: Consistency,
    /// Flag 0x10.
    pub serial_consistency: Option<Consistency>,
    /// Flag 0x20.
    pub timestamp: Option<i64>,
    /// Flag 0x80 (v5): the keyspace of the batch's unqualified names.
    pub keyspace: Option<String>,
    /// Flag 0x100 (v5): "now" in seconds, as in [`QueryParameters::now_in_seconds`].
    pub now_in_seconds: Option<i32>,
}

/// An event type of REGISTER and EVENT.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum EventType {
    /// `TOPOLOGY_CHANGE`.
    TopologyChange,
    /// `STATUS_CHANGE`.
    StatusChange,
    /// `SCHEMA_CHANGE`.
    SchemaChange,
}

impl EventType {
    /// The wire name.
    pub fn name(self) -> &'static str {
        match self {
            EventType::TopologyChange => "TOPOLOGY_CHANGE",
            EventType::StatusChange => "STATUS_CHANGE",
            EventType::SchemaChange => "SCHEMA_CHANGE",
        }
    }

    /// The event type for a wire name.
    pub fn from_name(name: &str) -> Option<EventType> {
        [
            EventType::TopologyChange,
            EventType::StatusChange,
            EventType::SchemaChange,
        ]
        .into_iter()
        .find(|e| e.name() == name)
    }
}

/// REGISTER.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Register {
    /// The event types asked for, in wire order.
    pub events: Vec<EventType>,
}

/// The smallest encoding of a `[value]`: its length.
const VALUE_LEN_MIN: usize = 4;

impl Request {
    /// Decodes a body (already decompressed, custom payload skipped).
    pub(crate) fn decode(
        opcode: Opcode,
        version: ProtocolVersion,
        r: &mut Reader,
    ) -> Result<Request, BodyError> {
        Ok(match opcode {
            Opcode::Startup => Request::Startup(Startup {
                options: r.string_map("STARTUP options")?,
            }),
            Opcode::AuthResponse => Request::AuthResponse(AuthResponse {
                token: r.bytes("SASL token")?,
            }),
            Opcode::Options => Request::Options,
            Opcode::Query => {
                let query = r.long_string("query string")?;
                let params = decode_query_parameters(r, version)?;
                Request::Query(Query { query, params })
            }
            Opcode::Prepare => {
                let query = r.long_string("query string")?;
                let mut keyspace = None;
                if version >= ProtocolVersion::V5 {
                    let flags = r.int("prepare flags")? as u32;
                    if flags & flag::PREPARE_WITH_KEYSPACE != 0 {
                        keyspace = Some(r.string("keyspace")?);
                    }
                }
                Request::Prepare(Prepare { query, keyspace })
            }
            Opcode::Execute => {
                let id = r.short_bytes("prepared statement id")?;
                let result_metadata_id = if version >= ProtocolVersion::V5 {
                    Some(r.short_bytes("result metadata id")?)
                } else {
                    None
                };
                let params = decode_query_parameters(r, version)?;
                Request::Execute(Execute {
                    id,
                    result_metadata_id,
                    params,
                })
            }
            Opcode::Batch => Request::Batch(decode_batch(r, version)?),
            Opcode::Register => {
                let names = r.string_list("event types")?;
                let events = names
                    .into_iter()
                    .map(|name| {
                        EventType::from_name(&name).ok_or(BodyError::UnknownEventType { name })
                    })
                    .collect::<Result<_, _>>()?;
                Request::Register(Register { events })
            }
            // decode_frame only admits request opcodes.
            Opcode::Error
            | Opcode::Ready
            | Opcode::Authenticate
            | Opcode::Supported
            | Opcode::Result
            | Opcode::Event
            | Opcode::AuthChallenge
            | Opcode::AuthSuccess => {
                unreachable!("decode_frame admits only request opcodes, got {opcode:?}")
            }
        })
    }
}

/// `[value]`, with v3's rule that every negative length is `null`.
fn decode_value(r: &mut Reader, version: ProtocolVersion) -> Result<Value, BodyError> {
    let n = r.int("bound value")?;
    match n {
        n if n >= 0 => Ok(Value::Bytes(r.take("bound value", n as usize)?)),
        -1 => Ok(Value::Null),
        _ if version < ProtocolVersion::V4 => Ok(Value::Null),
        -2 => Ok(Value::Unset),
        length => Err(BodyError::InvalidValueLength { length }),
    }
}

/// `<n>[name_1]<value_1>...[name_n]<value_n>`.
fn decode_values(
    r: &mut Reader,
    version: ProtocolVersion,
    named: bool,
) -> Result<BoundValues, BodyError> {
    let n = usize::from(r.short("value count")?);
    if named {
        let mut values = Vec::with_capacity(r.capacity(n, 2 + VALUE_LEN_MIN));
        for _ in 0..n {
            let name = r.string("value name")?;
            values.push((name, decode_value(r, version)?));
        }
        Ok(BoundValues::Named(values))
    } else {
        let mut values = Vec::with_capacity(r.capacity(n, VALUE_LEN_MIN));
        for _ in 0..n {
            values.push(decode_value(r, version)?);
        }
        Ok(BoundValues::Positional(values))
    }
}

/// `<timestamp>`: Cassandra reserves `i64::MIN`.
fn decode_timestamp(r: &mut Reader) -> Result<i64, BodyError> {
    let timestamp = r.long("default timestamp")?;
    if timestamp == i64::MIN {
        return Err(BodyError::InvalidTimestamp { timestamp });
    }
    Ok(timestamp)
}

/// The flags of QUERY, EXECUTE and BATCH: a `[byte]` before v5, an `[int]` in v5.
fn decode_flags(
    r: &mut Reader,
    version: ProtocolVersion,
    what: &'static str,
) -> Result<u32, BodyError> {
    if version >= ProtocolVersion::V5 {
        Ok(r.int(what)? as u32)
    } else {
        Ok(u32::from(r.u8(what)?))
    }
}

/// v5's trailing `[<keyspace>][<now_in_seconds>]` of QUERY, EXECUTE and BATCH.
fn decode_v5_tail(
    r: &mut Reader,
    version: ProtocolVersion,
    flags: u32,
) -> Result<(Option<String>, Option<i32>), BodyError> {
    if version < ProtocolVersion::V5 {
        return Ok((None, None));
    }
    let keyspace = if flags & flag::WITH_KEYSPACE != 0 {
        Some(r.string("keyspace")?)
    } else {
        None
    };
    let now_in_seconds = if flags & flag::NOW_IN_SECONDS != 0 {
        Some(r.int("now in seconds")?)
    } else {
        None
    };
    Ok((keyspace, now_in_seconds))
}

/// `<query_parameters>` (§4.1.4): v3 and v4 share the layout (one flags byte); v5 has
/// an `[int]` of flags and two more optional fields at the end.
fn decode_query_parameters(
    r: &mut Reader,
    version: ProtocolVersion,
) -> Result<QueryParameters, BodyError> {
    let consistency = r.consistency("consistency")?;
    let flags = decode_flags(r, version, "query flags")?;
    let values = if flags & flag::VALUES != 0 {
        decode_values(r, version, flags & flag::NAMES_FOR_VALUES != 0)?
    } else {
        BoundValues::default()
    };
    let page_size = if flags & flag::PAGE_SIZE != 0 {
        Some(r.int("page size")?)
    } else {
        None
    };
    let paging_state = if flags & flag::PAGING_STATE != 0 {
        r.bytes("paging state")?
    } else {
        None
    };
    let serial_consistency = if flags & flag::SERIAL_CONSISTENCY != 0 {
        Some(r.consistency("serial consistency")?)
    } else {
        None
    };
    let timestamp = if flags & flag::DEFAULT_TIMESTAMP != 0 {
        Some(decode_timestamp(r)?)
    } else {
        None
    };
    let (keyspace, now_in_seconds) = decode_v5_tail(r, version, flags)?;
    Ok(QueryParameters {
        consistency,
        values,
        skip_metadata: flags & flag::SKIP_METADATA != 0,
        page_size,
        paging_state,
        serial_consistency,
        timestamp,
        keyspace,
        now_in_seconds,
    })
}

/// BATCH (§4.1.7).
///
/// The flag saying whether values carry names (0x40) comes *after* the statements, which is
/// why the spec calls the feature unimplementable (CASSANDRA-10246) and why Cassandra reads
/// batch values positionally whatever the flag says. We read positionally first (what every
/// driver sends); only if that parse ends on flags announcing names, or fails, do we re-read
/// the statements with names and keep that reading when its own flags agree. The encoding
/// is thus decoded whenever it is unambiguous.
fn decode_batch(r: &mut Reader, version: ProtocolVersion) -> Result<Batch, BodyError> {
    let start = r.clone();
    match decode_batch_as(r, version, false) {
        Ok((batch, flags)) if flags & flag::NAMES_FOR_VALUES == 0 => Ok(batch),
        positional => {
            let mut named_reader = start;
            match decode_batch_as(&mut named_reader, version, true) {
                Ok((batch, flags)) if flags & flag::NAMES_FOR_VALUES != 0 => {
                    *r = named_reader;
                    Ok(batch)
                }
                Ok(_) | Err(_) => match positional {
                    Ok((batch, _)) => Ok(batch),
                    Err(e) => Err(e),
                },
            }
        }
    }
}

/// BATCH read with or without value names; returns the batch and its flags.
fn decode_batch_as(
    r: &mut Reader,
    version: ProtocolVersion,
    named: bool,
) -> Result<(Batch, u32), BodyError> {
    let batch_type = match r.u8("batch type")? {
        0 => BatchType::Logged,
        1 => BatchType::Unlogged,
        2 => BatchType::Counter,
        code => return Err(BodyError::UnknownBatchType { code }),
    };
    let n = usize::from(r.short("batch statement count")?);
    // Smallest statement: kind byte, empty short-bytes id, zero value count.
    let mut statements = Vec::with_capacity(r.capacity(n, 1 + 2 + 2));
    for _ in 0..n {
        let query = match r.u8("batch statement kind")? {
            0 => BatchQuery::Query(r.long_string("batch query string")?),
            1 => BatchQuery::Prepared(r.short_bytes("batch prepared id")?),
            kind => return Err(BodyError::UnknownBatchStatementKind { kind }),
        };
        let values = decode_values(r, version, named)?;
        statements.push(BatchStatement { query, values });
    }
    let consistency = r.consistency("batch consistency")?;
    let flags = decode_flags(r, version, "batch flags")?;
    let serial_consistency = if flags & flag::SERIAL_CONSISTENCY != 0 {
        Some(r.consistency("serial consistency")?)
    } else {
        None
    };
    let timestamp = if flags & flag::DEFAULT_TIMESTAMP != 0 {
        Some(decode_timestamp(r)?)
    } else {
        None
    };
    let (keyspace, now_in_seconds) = decode_v5_tail(r, version, flags)?;
    Ok((
        Batch {
            batch_type,
            statements,
            consistency,
            serial_consistency,
            timestamp,
            keyspace,
            now_in_seconds,
        },
        flags,
    ))
}
