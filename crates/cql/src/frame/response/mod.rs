//! Response bodies (§4.2) and their encoding straight into the connection's output buffer.
//!
//! [`ResponseEncoder::encode`] writes any [`Response`]; Rows, the hot path, also has a
//! streaming [`RowsWriter`] that writes each cell's `[bytes]` in place (no per-cell
//! allocation, no intermediate row vectors) and patches the row count and frame length at
//! the end. Compression, when negotiated, is applied to the finished body.

use std::net::SocketAddr;

use bytes::{BufMut, Bytes, BytesMut};
use mosaic_types::CqlValue;

use super::compress::Compression;
use super::error::{try_put_error_body, ErrorResponse};
use super::types::ColumnSpec;
use super::wire::{
    int_len, put_bytes, put_inet, put_short_bytes, put_string, put_string_list, EncodeError,
};
use super::{FrameFlags, Opcode, ProtocolVersion, HEADER_LEN, RESPONSE_BIT};

mod encode;
mod rows_writer;

use encode::*;
pub use rows_writer::RowsWriter;

/// A response message. The five RESULT kinds are under [`ResultBody`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Response {
    /// ERROR.
    Error(ErrorResponse),
    /// READY.
    Ready,
    /// AUTHENTICATE.
    Authenticate {
        /// The `IAuthenticator` class name, e.g.
        /// `org.apache.cassandra.auth.PasswordAuthenticator`.
        authenticator: String,
    },
    /// AUTH_CHALLENGE.
    AuthChallenge {
        /// The SASL token.
        token: Option<Bytes>,
    },
    /// AUTH_SUCCESS.
    AuthSuccess {
        /// The final SASL token.
        token: Option<Bytes>,
    },
    /// SUPPORTED.
    Supported(Supported),
    /// RESULT.
    Result(ResultBody),
    /// EVENT (use [`ResponseEncoder::encode_event`] for stream -1).
    Event(Event),
}

/// SUPPORTED's `[string multimap]`, in wire order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Supported {
    /// Option name and its supported values.
    pub options: Vec<(String, Vec<String>)>,
}

impl Default for Supported {
    /// What Mosaic offers: `CQL_VERSION` ["3.4.5"], `COMPRESSION` ["lz4"],
    /// `PROTOCOL_VERSIONS` ["3/v3", "4/v4", "5/v5"]. Never any `SCYLLA_*` key: the Rust
    /// `scylla` driver would take it for ScyllaDB and append `USING TIMEOUT` to its queries.
    fn default() -> Supported {
        let s = |v: &[&str]| v.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        Supported {
            options: vec![
                ("CQL_VERSION".to_owned(), s(&["3.4.5"])),
                ("COMPRESSION".to_owned(), s(&["lz4"])),
                (
                    "PROTOCOL_VERSIONS".to_owned(),
                    ProtocolVersion::ALL
                        .iter()
                        .map(|v| v.description().to_owned())
                        .collect(),
                ),
            ],
        }
    }
}

/// The RESULT kinds (§4.2.5).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ResultBody {
    /// 0x0001.
    Void,
    /// 0x0002, all rows in memory; prefer [`ResponseEncoder::rows`] on the hot path.
    Rows(Rows),
    /// 0x0003: the keyspace `USE` switched to.
    SetKeyspace(String),
    /// 0x0004.
    Prepared(Prepared),
    /// 0x0005.
    SchemaChange(SchemaChange),
}

/// Result-set metadata (`<metadata>` of §4.2.5.2). The Global_tables_spec flag is set by
/// the encoder when every column belongs to the same table, as Cassandra does.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RowsMetadata {
    /// The columns; with `no_metadata` only their count is sent.
    pub columns: Vec<ColumnSpec>,
    /// Has_more_pages: where the next page starts.
    pub paging_state: Option<Bytes>,
    /// No_metadata: the client asked to skip it (Skip_metadata) and knows the columns.
    pub no_metadata: bool,
    /// Metadata_changed (v5): the result metadata id the client sent with EXECUTE is stale;
    /// this is the current one, sent with full metadata (ignored with `no_metadata`, and
    /// before v5).
    pub new_metadata_id: Option<Bytes>,
}

impl RowsMetadata {
    /// Full metadata for `columns`, last page.
    pub fn new(columns: Vec<ColumnSpec>) -> RowsMetadata {
        RowsMetadata {
            columns,
            paging_state: None,
            no_metadata: false,
            new_metadata_id: None,
        }
    }

    /// Cassandra's empty result metadata (No_metadata, zero columns), as PREPARED results
    /// carry for statements that return no rows.
    pub fn empty() -> RowsMetadata {
        RowsMetadata {
            columns: Vec::new(),
            paging_state: None,
            no_metadata: true,
            new_metadata_id: None,
        }
    }

    /// The result metadata id of these columns (v5's `<result_metadata_id>`): a 16-byte
    /// hash of each column's keyspace, table, name and type, so it changes exactly when the
    /// columns a statement returns do, and is the same on every node. Cassandra hashes the
    /// same things (MD5); ids are opaque to clients, which only send them back.
    pub fn metadata_id(columns: &[ColumnSpec]) -> Bytes {
        let mut bytes = Vec::with_capacity(columns.len() * 32);
        for c in columns {
            for part in [&c.keyspace, &c.table, &c.name] {
                bytes.extend_from_slice(part.as_bytes());
                bytes.push(0);
            }
            let mut option = BytesMut::new();
            // Only a type with more than 65,535 fields or items fails to encode; its id
            // then hashes what was written, still a function of the type.
            let _ = c.ty.put_option(&mut option, ProtocolVersion::V5);
            bytes.extend_from_slice(&option);
            bytes.push(0);
        }
        Bytes::copy_from_slice(&xxhash_rust::xxh3::xxh3_128(&bytes).to_be_bytes())
    }
}

/// A Rows result held in memory (system tables, tests). Cells are `[bytes]`, `None` = null.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Rows {
    /// The metadata.
    pub metadata: RowsMetadata,
    /// Each row has exactly `metadata.columns.len()` cells.
    pub rows: Vec<Vec<Option<Bytes>>>,
}

/// Bind-marker metadata of a PREPARED result (`<metadata>` of §4.2.5.4).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PreparedMetadata {
    /// For each partition-key column in key order, the index of its bind marker; empty if
    /// some key column has no plain marker (drivers then can't route by token). v4 only.
    pub pk_indexes: Vec<u16>,
    /// The bind markers.
    pub columns: Vec<ColumnSpec>,
}

/// A PREPARED result (§4.2.5.4).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Prepared {
    /// The statement id the client EXECUTEs.
    pub id: Bytes,
    /// v5: [`RowsMetadata::metadata_id`] of `result_metadata` (not sent before v5).
    pub result_metadata_id: Bytes,
    /// Its bind markers.
    pub metadata: PreparedMetadata,
    /// The columns it returns when executed ([`RowsMetadata::empty`] for non-SELECTs).
    pub result_metadata: RowsMetadata,
}

/// `<change_type>` of schema changes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SchemaChangeType {
    /// `CREATED`.
    Created,
    /// `UPDATED`.
    Updated,
    /// `DROPPED`.
    Dropped,
}

impl SchemaChangeType {
    /// The wire string.
    pub fn name(self) -> &'static str {
        match self {
            SchemaChangeType::Created => "CREATED",
            SchemaChangeType::Updated => "UPDATED",
            SchemaChangeType::Dropped => "DROPPED",
        }
    }
}

/// `<target><options>` of schema changes.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SchemaChangeTarget {
    /// `KEYSPACE`.
    Keyspace {
        /// The keyspace.
        keyspace: String,
    },
    /// `TABLE` (also index changes, on their table).
    Table {
        /// Its keyspace.
        keyspace: String,
        /// The table.
        table: String,
    },
    /// `TYPE`: a user-defined type.
    Type {
        /// Its keyspace.
        keyspace: String,
        /// The type.
        name: String,
    },
    /// `FUNCTION` (v4; v3 clients are told their keyspace was updated).
    Function {
        /// Its keyspace.
        keyspace: String,
        /// The function.
        name: String,
        /// Argument types as CQL type names.
        arg_types: Vec<String>,
    },
    /// `AGGREGATE` (v4; v3 clients are told their keyspace was updated).
    Aggregate {
        /// Its keyspace.
        keyspace: String,
        /// The aggregate.
        name: String,
        /// Argument types as CQL type names.
        arg_types: Vec<String>,
    },
}

/// A schema change: the result of DDL and the body of `SCHEMA_CHANGE` events.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SchemaChange {
    /// What happened.
    pub change: SchemaChangeType,
    /// To what.
    pub target: SchemaChangeTarget,
}

/// `TOPOLOGY_CHANGE` kinds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TopologyChangeType {
    /// `NEW_NODE`.
    NewNode,
    /// `REMOVED_NODE`.
    RemovedNode,
    /// `MOVED_NODE` (Cassandra sends it when a node's tokens move).
    MovedNode,
}

impl TopologyChangeType {
    /// The wire string.
    pub fn name(self) -> &'static str {
        match self {
            TopologyChangeType::NewNode => "NEW_NODE",
            TopologyChangeType::RemovedNode => "REMOVED_NODE",
            TopologyChangeType::MovedNode => "MOVED_NODE",
        }
    }
}

/// `STATUS_CHANGE` kinds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum StatusChangeType {
    /// `UP`.
    Up,
    /// `DOWN`.
    Down,
}

impl StatusChangeType {
    /// The wire string.
    pub fn name(self) -> &'static str {
        match self {
            StatusChangeType::Up => "UP",
            StatusChangeType::Down => "DOWN",
        }
    }
}

/// A pushed event (§4.2.6).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Event {
    /// `TOPOLOGY_CHANGE`.
    TopologyChange {
        /// What changed.
        change: TopologyChangeType,
        /// The node's native-protocol address.
        node: SocketAddr,
    },
    /// `STATUS_CHANGE`.
    StatusChange {
        /// Up or down.
        change: StatusChangeType,
        /// The node's native-protocol address.
        node: SocketAddr,
    },
    /// `SCHEMA_CHANGE`.
    SchemaChange(SchemaChange),
}

/// Optional leading parts of a response body.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ResponseExtras {
    /// Tracing flag: the session id of a traced request.
    pub tracing_id: Option<[u8; 16]>,
    /// Warning flag (v4 only; dropped for v3): warnings the client should log.
    pub warnings: Vec<String>,
}

/// RESULT kinds.
mod result_kind {
    pub(crate) const VOID: i32 = 0x0001;
    pub(crate) const ROWS: i32 = 0x0002;
    pub(crate) const SET_KEYSPACE: i32 = 0x0003;
    pub(crate) const PREPARED: i32 = 0x0004;
    pub(crate) const SCHEMA_CHANGE: i32 = 0x0005;
}
pub(crate) use result_kind::*;

/// Rows metadata flags.
pub(crate) mod rows_flag {
    pub(crate) const GLOBAL_TABLES_SPEC: i32 = 0x0001;
    pub(crate) const HAS_MORE_PAGES: i32 = 0x0002;
    pub(crate) const NO_METADATA: i32 = 0x0004;
    /// v5.
    pub(crate) const METADATA_CHANGED: i32 = 0x0008;
}

/// Encodes responses for one connection: its protocol version and negotiated compression.
/// Always whole frames: on a v5 connection the server's writer puts them in segments.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ResponseEncoder {
    /// The connection's version.
    pub version: ProtocolVersion,
    /// The compression negotiated at STARTUP, applied to every non-empty body before v5
    /// (v5 compresses segments, not bodies).
    pub compression: Option<Compression>,
}

impl ResponseEncoder {
    /// An encoder for `version`, compressing with `compression`.
    pub fn new(version: ProtocolVersion, compression: Option<Compression>) -> ResponseEncoder {
        ResponseEncoder {
            version,
            compression,
        }
    }

    /// Appends the frame answering `stream`. On error nothing is appended.
    pub fn encode(
        &self,
        out: &mut BytesMut,
        stream: i16,
        response: &Response,
    ) -> Result<(), EncodeError> {
        self.encode_with(out, stream, &ResponseExtras::default(), response)
    }

    /// [`encode`](Self::encode) with a tracing id and/or warnings.
    pub fn encode_with(
        &self,
        out: &mut BytesMut,
        stream: i16,
        extras: &ResponseExtras,
        response: &Response,
    ) -> Result<(), EncodeError> {
        let start = out.len();
        let result = self
            .begin(out, stream, response_opcode(response), extras)
            .and_then(|()| self.put_body(out, response))
            .and_then(|()| self.finish(out, start));
        if result.is_err() {
            out.truncate(start);
        }
        result
    }

    /// Appends an EVENT frame on stream -1, as every server push is.
    pub fn encode_event(&self, out: &mut BytesMut, event: &Event) -> Result<(), EncodeError> {
        // Avoids cloning the event into a Response.
        let start = out.len();
        let result = self
            .begin(out, -1, Opcode::Event, &ResponseExtras::default())
            .and_then(|()| put_event(out, event, self.version))
            .and_then(|()| self.finish(out, start));
        if result.is_err() {
            out.truncate(start);
        }
        result
    }

    /// Starts a Rows RESULT answering `stream`: writes the header and `metadata`, then
    /// returns a writer for the cells. Dropping the writer without
    /// [`finish`](RowsWriter::finish) removes the partial frame from `out`.
    pub fn rows<'a>(
        &self,
        out: &'a mut BytesMut,
        stream: i16,
        extras: &ResponseExtras,
        metadata: &RowsMetadata,
    ) -> Result<RowsWriter<'a>, EncodeError> {
        let start = out.len();
        let prefix = self
            .begin(out, stream, Opcode::Result, extras)
            .and_then(|()| {
                out.put_i32(ROWS);
                put_rows_metadata(out, metadata, self.version)
            });
        if let Err(e) = prefix {
            out.truncate(start);
            return Err(e);
        }
        let count_pos = out.len();
        out.put_i32(0);
        Ok(RowsWriter {
            out,
            encoder: *self,
            frame_start: start,
            count_pos,
            columns: metadata.columns.len(),
            cells: 0,
            scratch: Vec::new(),
            finished: false,
        })
    }

    /// Writes the header (length patched by `finish`) and the tracing id and warnings.
    fn begin(
        &self,
        out: &mut BytesMut,
        stream: i16,
        opcode: Opcode,
        extras: &ResponseExtras,
    ) -> Result<(), EncodeError> {
        let warnings = self.version >= ProtocolVersion::V4 && !extras.warnings.is_empty();
        let mut flags = 0;
        if extras.tracing_id.is_some() {
            flags |= FrameFlags::TRACING;
        }
        if warnings {
            flags |= FrameFlags::WARNING;
        }
        out.put_u8(RESPONSE_BIT | self.version.number());
        out.put_u8(flags);
        out.put_i16(stream);
        out.put_u8(opcode.byte());
        out.put_u32(0);
        if let Some(id) = extras.tracing_id {
            out.extend_from_slice(&id);
        }
        if warnings {
            put_string_list(out, &extras.warnings)?;
        }
        Ok(())
    }

    /// Compresses the body if negotiated, non-empty and before v5, then patches flags and
    /// length.
    fn finish(&self, out: &mut BytesMut, start: usize) -> Result<(), EncodeError> {
        let body_start = start + HEADER_LEN;
        debug_assert!(out.len() >= body_start, "finish without begin");
        let body_len = out.len().saturating_sub(body_start);
        if i32::try_from(body_len).is_err() {
            return Err(EncodeError::FrameTooLarge { length: body_len });
        }
        let compression = self
            .compression
            .filter(|_| body_len > 0 && self.version < ProtocolVersion::V5);
        if let Some(compression) = compression {
            let body = out.split_off(body_start);
            compression.compress_into(&body, out);
            if let Some(flags) = out.get_mut(start + 1) {
                *flags |= FrameFlags::COMPRESSION;
            }
        }
        let body_len = out.len().saturating_sub(body_start);
        let len =
            u32::try_from(body_len).map_err(|_| EncodeError::FrameTooLarge { length: body_len })?;
        if let Some(slot) = out.get_mut(start + 5..body_start) {
            slot.copy_from_slice(&len.to_be_bytes());
        }
        Ok(())
    }

    fn put_body(&self, out: &mut BytesMut, response: &Response) -> Result<(), EncodeError> {
        let version = self.version;
        match response {
            Response::Error(error) => try_put_error_body(out, error, version),
            Response::Ready => Ok(()),
            Response::Authenticate { authenticator } => put_string(out, authenticator),
            Response::AuthChallenge { token } | Response::AuthSuccess { token } => {
                put_bytes(out, token.as_deref())
            }
            Response::Supported(supported) => {
                let n = u16::try_from(supported.options.len()).map_err(|_| {
                    EncodeError::TooManyElements {
                        what: "string multimap",
                        length: supported.options.len(),
                    }
                })?;
                out.put_u16(n);
                for (key, values) in &supported.options {
                    put_string(out, key)?;
                    put_string_list(out, values)?;
                }
                Ok(())
            }
            Response::Result(result) => match result {
                ResultBody::Void => {
                    out.put_i32(VOID);
                    Ok(())
                }
                ResultBody::Rows(rows) => {
                    out.put_i32(ROWS);
                    put_rows_metadata(out, &rows.metadata, version)?;
                    let columns = rows.metadata.columns.len();
                    let count = i32::try_from(rows.rows.len()).map_err(|_| {
                        EncodeError::TooManyElements {
                            what: "rows",
                            length: rows.rows.len(),
                        }
                    })?;
                    out.put_i32(count);
                    for row in &rows.rows {
                        assert_eq!(row.len(), columns, "a row must have one cell per column");
                        for cell in row {
                            put_bytes(out, cell.as_deref())?;
                        }
                    }
                    Ok(())
                }
                ResultBody::SetKeyspace(keyspace) => {
                    out.put_i32(SET_KEYSPACE);
                    put_string(out, keyspace)
                }
                ResultBody::Prepared(prepared) => {
                    out.put_i32(PREPARED);
                    put_short_bytes(out, &prepared.id)?;
                    if version >= ProtocolVersion::V5 {
                        put_short_bytes(out, &prepared.result_metadata_id)?;
                    }
                    put_prepared_metadata(out, &prepared.metadata, version)?;
                    put_rows_metadata(out, &prepared.result_metadata, version)
                }
                ResultBody::SchemaChange(change) => {
                    out.put_i32(SCHEMA_CHANGE);
                    put_schema_change(out, change, version)
                }
            },
            Response::Event(event) => put_event(out, event, version),
        }
    }
}
