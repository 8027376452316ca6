//! A test-only decoder of responses: the inverse of `response.rs`, so encodings can be
//! checked by round trip (v3, v4, v5) besides the golden bytes.

use bytes::{Buf, Bytes};
use mosaic_types::CqlType;

use super::error::{ErrorKind, ErrorResponse, WriteType};
use super::response::{rows_flag, PREPARED, ROWS, SCHEMA_CHANGE, SET_KEYSPACE, VOID};
use super::types::option_id;
use super::wire::{BodyError, Reader};
use super::*;

/// A decoded response frame.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Decoded {
    pub version_byte: u8,
    pub flags: u8,
    pub stream: i16,
    pub opcode: Opcode,
    pub extras: ResponseExtras,
    pub response: Response,
}

fn bad(what: &'static str) -> BodyError {
    BodyError::InvalidUtf8 { what }
}

/// Decodes one whole response frame from the front of `buf`, advancing it.
pub(crate) fn decode_response(
    buf: &mut Bytes,
    compression: Option<Compression>,
) -> Result<Decoded, BodyError> {
    let mut r = Reader::new(buf.clone());
    let version_byte = r.u8("version")?;
    let flags = r.u8("flags")?;
    let stream = r.short("stream")? as i16;
    let opcode = Opcode::from_byte(r.u8("opcode")?).ok_or(bad("opcode"))?;
    let len = r.int("length")? as usize;
    let body = r.take("body", len)?;
    buf.advance(HEADER_LEN + len);
    let version = ProtocolVersion::from_number(version_byte & 0x7f).ok_or(bad("version"))?;
    let body = if flags & FrameFlags::COMPRESSION != 0 {
        compression
            .ok_or(bad("compression"))?
            .decompress(&body, u32::MAX)?
    } else {
        body
    };
    let mut r = Reader::new(body);
    let mut extras = ResponseExtras::default();
    if flags & FrameFlags::TRACING != 0 {
        let id = r.take("tracing id", 16)?;
        extras.tracing_id = Some(<[u8; 16]>::try_from(&id[..]).map_err(|_| bad("tracing id"))?);
    }
    if flags & FrameFlags::WARNING != 0 {
        extras.warnings = r.string_list("warnings")?;
    }
    let response = match opcode {
        Opcode::Error => Response::Error(decode_error(&mut r, version)?),
        Opcode::Ready => Response::Ready,
        Opcode::Authenticate => Response::Authenticate {
            authenticator: r.string("authenticator")?,
        },
        Opcode::AuthChallenge => Response::AuthChallenge {
            token: r.bytes("token")?,
        },
        Opcode::AuthSuccess => Response::AuthSuccess {
            token: r.bytes("token")?,
        },
        Opcode::Supported => {
            let n = r.short("multimap")?;
            let mut options = Vec::new();
            for _ in 0..n {
                options.push((r.string("key")?, r.string_list("values")?));
            }
            Response::Supported(Supported { options })
        }
        Opcode::Result => Response::Result(decode_result(&mut r, version)?),
        Opcode::Event => Response::Event(decode_event(&mut r)?),
        _ => return Err(bad("response opcode")),
    };
    if r.remaining() != 0 {
        return Err(bad("trailing bytes"));
    }
    Ok(Decoded {
        version_byte,
        flags,
        stream,
        opcode,
        extras,
        response,
    })
}

/// `<numfailures>` before v5, `<reasonmap>` in v5 (the count is the map's size).
fn decode_failures(
    r: &mut Reader,
    version: ProtocolVersion,
) -> Result<(i32, Vec<(std::net::IpAddr, u16)>), BodyError> {
    if version < ProtocolVersion::V5 {
        return Ok((r.int("numfailures")?, Vec::new()));
    }
    let n = r.int("reasonmap")?;
    let mut reasons = Vec::new();
    for _ in 0..n {
        let address = match r.u8("inetaddr length")? {
            4 => {
                let b = r.take("ipv4", 4)?;
                std::net::IpAddr::from(<[u8; 4]>::try_from(&b[..]).map_err(|_| bad("ipv4"))?)
            }
            16 => {
                let b = r.take("ipv6", 16)?;
                std::net::IpAddr::from(<[u8; 16]>::try_from(&b[..]).map_err(|_| bad("ipv6"))?)
            }
            _ => return Err(bad("inetaddr")),
        };
        reasons.push((address, r.short("reason")?));
    }
    Ok((n, reasons))
}

fn decode_error(r: &mut Reader, version: ProtocolVersion) -> Result<ErrorResponse, BodyError> {
    let code = r.int("code")?;
    let message = r.string("message")?;
    let write_type = |r: &mut Reader| -> Result<WriteType, BodyError> {
        WriteType::from_name(&r.string("write type")?).ok_or(bad("write type"))
    };
    let kind = match code {
        error_code::SERVER => ErrorKind::Server,
        error_code::PROTOCOL => ErrorKind::Protocol,
        error_code::BAD_CREDENTIALS => ErrorKind::BadCredentials,
        error_code::UNAVAILABLE => ErrorKind::Unavailable {
            consistency: r.consistency("cl")?,
            required: r.int("required")?,
            alive: r.int("alive")?,
        },
        error_code::OVERLOADED => ErrorKind::Overloaded,
        error_code::IS_BOOTSTRAPPING => ErrorKind::IsBootstrapping,
        error_code::TRUNCATE => ErrorKind::Truncate,
        error_code::WRITE_TIMEOUT => {
            let kind = ErrorKind::WriteTimeout {
                consistency: r.consistency("cl")?,
                received: r.int("received")?,
                block_for: r.int("blockfor")?,
                write_type: write_type(r)?,
            };
            if matches!(
                kind,
                ErrorKind::WriteTimeout {
                    write_type: WriteType::Cas,
                    ..
                }
            ) && version >= ProtocolVersion::V5
            {
                r.short("contentions")?;
            }
            kind
        }
        error_code::READ_TIMEOUT => ErrorKind::ReadTimeout {
            consistency: r.consistency("cl")?,
            received: r.int("received")?,
            block_for: r.int("blockfor")?,
            data_present: r.u8("data_present")? != 0,
        },
        error_code::READ_FAILURE => {
            let consistency = r.consistency("cl")?;
            let received = r.int("received")?;
            let block_for = r.int("blockfor")?;
            let (num_failures, reasons) = decode_failures(r, version)?;
            ErrorKind::ReadFailure {
                consistency,
                received,
                block_for,
                num_failures,
                reasons,
                data_present: r.u8("data_present")? != 0,
            }
        }
        error_code::FUNCTION_FAILURE => ErrorKind::FunctionFailure {
            keyspace: r.string("keyspace")?,
            function: r.string("function")?,
            arg_types: r.string_list("arg types")?,
        },
        error_code::WRITE_FAILURE => {
            let consistency = r.consistency("cl")?;
            let received = r.int("received")?;
            let block_for = r.int("blockfor")?;
            let (num_failures, reasons) = decode_failures(r, version)?;
            ErrorKind::WriteFailure {
                consistency,
                received,
                block_for,
                num_failures,
                reasons,
                write_type: write_type(r)?,
            }
        }
        error_code::SYNTAX => ErrorKind::Syntax,
        error_code::UNAUTHORIZED => ErrorKind::Unauthorized,
        error_code::INVALID => ErrorKind::Invalid,
        error_code::CONFIG => ErrorKind::Config,
        error_code::ALREADY_EXISTS => ErrorKind::AlreadyExists {
            keyspace: r.string("keyspace")?,
            table: r.string("table")?,
        },
        error_code::UNPREPARED => ErrorKind::Unprepared {
            id: r.short_bytes("id")?,
        },
        _ => return Err(bad("error code")),
    };
    Ok(ErrorResponse::new(kind, message))
}

pub(crate) fn decode_option(r: &mut Reader) -> Result<ColumnType, BodyError> {
    let id = r.short("option id")?;
    Ok(match id {
        option_id::CUSTOM => {
            let class = r.string("custom class")?;
            if class == super::types::DURATION_CLASS {
                ColumnType::Native(CqlType::Duration)
            } else {
                ColumnType::Custom(class)
            }
        }
        option_id::COUNTER => ColumnType::Counter,
        option_id::LIST => ColumnType::List(Box::new(decode_option(r)?)),
        option_id::MAP => ColumnType::Map(Box::new(decode_option(r)?), Box::new(decode_option(r)?)),
        option_id::SET => ColumnType::Set(Box::new(decode_option(r)?)),
        option_id::UDT => {
            let keyspace = r.string("udt keyspace")?;
            let name = r.string("udt name")?;
            let n = r.short("udt fields")?;
            let mut fields = Vec::new();
            for _ in 0..n {
                fields.push((r.string("field")?, decode_option(r)?));
            }
            ColumnType::Udt {
                keyspace,
                name,
                fields,
            }
        }
        option_id::TUPLE => {
            let n = r.short("tuple")?;
            let mut items = Vec::new();
            for _ in 0..n {
                items.push(decode_option(r)?);
            }
            ColumnType::Tuple(items)
        }
        id => ColumnType::Native(CqlType::from_protocol_id(id).ok_or(bad("option id"))?),
    })
}

fn decode_specs(r: &mut Reader, global: bool, count: usize) -> Result<Vec<ColumnSpec>, BodyError> {
    let table = if global {
        Some((r.string("ks")?, r.string("table")?))
    } else {
        None
    };
    let mut columns = Vec::new();
    for _ in 0..count {
        let (keyspace, table) = match &table {
            Some((k, t)) => (k.clone(), t.clone()),
            None => (r.string("ks")?, r.string("table")?),
        };
        let name = r.string("name")?;
        let ty = decode_option(r)?;
        columns.push(ColumnSpec {
            keyspace,
            table,
            name,
            ty,
        });
    }
    Ok(columns)
}

fn decode_rows_metadata(r: &mut Reader) -> Result<RowsMetadata, BodyError> {
    let flags = r.int("flags")?;
    let count = r.int("columns")? as usize;
    let paging_state = if flags & rows_flag::HAS_MORE_PAGES != 0 {
        r.bytes("paging")?
    } else {
        None
    };
    let no_metadata = flags & rows_flag::NO_METADATA != 0;
    let new_metadata_id = if flags & rows_flag::METADATA_CHANGED != 0 {
        Some(r.short_bytes("new metadata id")?)
    } else {
        None
    };
    let columns = if no_metadata {
        // Only the count is known: stand-in columns keep it.
        (0..count)
            .map(|i| ColumnSpec::new("", "", format!("?{i}"), CqlType::Blob))
            .collect()
    } else {
        decode_specs(r, flags & rows_flag::GLOBAL_TABLES_SPEC != 0, count)?
    };
    Ok(RowsMetadata {
        columns,
        paging_state,
        no_metadata,
        new_metadata_id,
    })
}

fn decode_schema_change(r: &mut Reader) -> Result<SchemaChange, BodyError> {
    let change = match r.string("change")?.as_str() {
        "CREATED" => SchemaChangeType::Created,
        "UPDATED" => SchemaChangeType::Updated,
        "DROPPED" => SchemaChangeType::Dropped,
        _ => return Err(bad("change")),
    };
    let target = match r.string("target")?.as_str() {
        "KEYSPACE" => SchemaChangeTarget::Keyspace {
            keyspace: r.string("ks")?,
        },
        "TABLE" => SchemaChangeTarget::Table {
            keyspace: r.string("ks")?,
            table: r.string("t")?,
        },
        "TYPE" => SchemaChangeTarget::Type {
            keyspace: r.string("ks")?,
            name: r.string("t")?,
        },
        "FUNCTION" => SchemaChangeTarget::Function {
            keyspace: r.string("ks")?,
            name: r.string("f")?,
            arg_types: r.string_list("args")?,
        },
        "AGGREGATE" => SchemaChangeTarget::Aggregate {
            keyspace: r.string("ks")?,
            name: r.string("f")?,
            arg_types: r.string_list("args")?,
        },
        _ => return Err(bad("target")),
    };
    Ok(SchemaChange { change, target })
}

fn decode_result(r: &mut Reader, version: ProtocolVersion) -> Result<ResultBody, BodyError> {
    Ok(match r.int("kind")? {
        VOID => ResultBody::Void,
        ROWS => {
            let metadata = decode_rows_metadata(r)?;
            let n = r.int("rows")? as usize;
            let mut rows = Vec::new();
            for _ in 0..n {
                let mut row = Vec::new();
                for _ in 0..metadata.columns.len() {
                    row.push(r.bytes("cell")?);
                }
                rows.push(row);
            }
            ResultBody::Rows(Rows { metadata, rows })
        }
        SET_KEYSPACE => ResultBody::SetKeyspace(r.string("ks")?),
        PREPARED => {
            let id = r.short_bytes("id")?;
            let result_metadata_id = if version >= ProtocolVersion::V5 {
                r.short_bytes("result metadata id")?
            } else {
                Bytes::new()
            };
            let flags = r.int("flags")?;
            let count = r.int("columns")? as usize;
            let mut pk_indexes = Vec::new();
            if version >= ProtocolVersion::V4 {
                for _ in 0..r.int("pk count")? {
                    pk_indexes.push(r.short("pk index")?);
                }
            }
            let columns = decode_specs(r, flags & rows_flag::GLOBAL_TABLES_SPEC != 0, count)?;
            let result_metadata = decode_rows_metadata(r)?;
            ResultBody::Prepared(Prepared {
                id,
                result_metadata_id,
                metadata: PreparedMetadata {
                    pk_indexes,
                    columns,
                },
                result_metadata,
            })
        }
        SCHEMA_CHANGE => ResultBody::SchemaChange(decode_schema_change(r)?),
        _ => return Err(bad("result kind")),
    })
}

fn decode_event(r: &mut Reader) -> Result<Event, BodyError> {
    Ok(match r.string("event type")?.as_str() {
        "TOPOLOGY_CHANGE" => {
            let change = match r.string("change")?.as_str() {
                "NEW_NODE" => TopologyChangeType::NewNode,
                "REMOVED_NODE" => TopologyChangeType::RemovedNode,
                "MOVED_NODE" => TopologyChangeType::MovedNode,
                _ => return Err(bad("topology change")),
            };
            Event::TopologyChange {
                change,
                node: r.inet("node")?,
            }
        }
        "STATUS_CHANGE" => {
            let change = match r.string("change")?.as_str() {
                "UP" => StatusChangeType::Up,
                "DOWN" => StatusChangeType::Down,
                _ => return Err(bad("status change")),
            };
            Event::StatusChange {
                change,
                node: r.inet("node")?,
            }
        }
        "SCHEMA_CHANGE" => Event::SchemaChange(decode_schema_change(r)?),
        _ => return Err(bad("event type")),
    })
}
