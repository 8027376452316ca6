//! ERROR response bodies (§4.2.1, §9): code, message, and the fields each code carries.

use std::net::{IpAddr, Ipv4Addr};

use bytes::{BufMut, Bytes, BytesMut};

use super::types::Consistency;
use super::wire::{put_short_bytes, put_string, put_string_list, put_string_lossy, EncodeError};
use super::ProtocolVersion;

/// The error codes of §9.
pub mod error_code {
    /// Server error: something unexpected happened (a bug on our side).
    pub const SERVER: i32 = 0x0000;
    /// Protocol error: the client broke the protocol.
    pub const PROTOCOL: i32 = 0x000A;
    /// Authentication failed.
    pub const BAD_CREDENTIALS: i32 = 0x0100;
    /// Not enough live replicas for the consistency level.
    pub const UNAVAILABLE: i32 = 0x1000;
    /// The coordinator is overloaded.
    pub const OVERLOADED: i32 = 0x1001;
    /// The coordinator is bootstrapping.
    pub const IS_BOOTSTRAPPING: i32 = 0x1002;
    /// A truncation failed.
    pub const TRUNCATE: i32 = 0x1003;
    /// A write timed out.
    pub const WRITE_TIMEOUT: i32 = 0x1100;
    /// A read timed out.
    pub const READ_TIMEOUT: i32 = 0x1200;
    /// A read failed on replicas (v4).
    pub const READ_FAILURE: i32 = 0x1300;
    /// A user-defined function failed (v4).
    pub const FUNCTION_FAILURE: i32 = 0x1400;
    /// A write failed on replicas (v4).
    pub const WRITE_FAILURE: i32 = 0x1500;
    /// The query doesn't parse.
    pub const SYNTAX: i32 = 0x2000;
    /// The user may not do this.
    pub const UNAUTHORIZED: i32 = 0x2100;
    /// The query parses but is invalid (also "unconfigured table").
    pub const INVALID: i32 = 0x2200;
    /// Invalid because of configuration.
    pub const CONFIG: i32 = 0x2300;
    /// The keyspace or table already exists.
    pub const ALREADY_EXISTS: i32 = 0x2400;
    /// The prepared statement id is unknown here.
    pub const UNPREPARED: i32 = 0x2500;
}

/// Cassandra's `RequestFailureReason` codes, the values of v5's `<reasonmap>`.
pub mod failure_reason {
    /// No more specific reason.
    pub const UNKNOWN: u16 = 0x0000;
    /// A read met more tombstones than it may scan.
    pub const READ_TOO_MANY_TOMBSTONES: u16 = 0x0001;
    /// The replica timed out.
    pub const TIMEOUT: u16 = 0x0002;
    /// The replica does not know the table (schema disagreement).
    pub const INCOMPATIBLE_SCHEMA: u16 = 0x0003;
}

/// The kind of write that timed out or failed (`<writeType>`), as the Python driver's
/// `WriteType` knows them (it raises on names it doesn't know).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum WriteType {
    /// A non-batched, non-counter write.
    Simple,
    /// A logged batch whose batch log was written.
    Batch,
    /// An unlogged batch.
    UnloggedBatch,
    /// A counter write.
    Counter,
    /// The write to the batch log itself.
    BatchLog,
    /// A lightweight transaction's Paxos phase.
    Cas,
    /// A materialized-view update.
    View,
    /// A CDC-space failure.
    Cdc,
}

impl WriteType {
    /// The wire string.
    pub fn name(self) -> &'static str {
        match self {
            WriteType::Simple => "SIMPLE",
            WriteType::Batch => "BATCH",
            WriteType::UnloggedBatch => "UNLOGGED_BATCH",
            WriteType::Counter => "COUNTER",
            WriteType::BatchLog => "BATCH_LOG",
            WriteType::Cas => "CAS",
            WriteType::View => "VIEW",
            WriteType::Cdc => "CDC",
        }
    }

    /// The write type for a wire string.
    pub fn from_name(name: &str) -> Option<WriteType> {
        [
            WriteType::Simple,
            WriteType::Batch,
            WriteType::UnloggedBatch,
            WriteType::Counter,
            WriteType::BatchLog,
            WriteType::Cas,
            WriteType::View,
            WriteType::Cdc,
        ]
        .into_iter()
        .find(|w| w.name() == name)
    }
}

/// An error's code and code-specific fields.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorKind {
    /// 0x0000.
    Server,
    /// 0x000A.
    Protocol,
    /// 0x0100.
    BadCredentials,
    /// 0x1000.
    Unavailable {
        /// The request's consistency level.
        consistency: Consistency,
        /// Replicas needed.
        required: i32,
        /// Replicas known alive.
        alive: i32,
    },
    /// 0x1001.
    Overloaded,
    /// 0x1002.
    IsBootstrapping,
    /// 0x1003.
    Truncate,
    /// 0x1100.
    WriteTimeout {
        /// The request's consistency level.
        consistency: Consistency,
        /// Acknowledgements received.
        received: i32,
        /// Acknowledgements required.
        block_for: i32,
        /// What kind of write.
        write_type: WriteType,
    },
    /// 0x1200.
    ReadTimeout {
        /// The request's consistency level.
        consistency: Consistency,
        /// Responses received.
        received: i32,
        /// Responses required.
        block_for: i32,
        /// Whether the replica asked for data answered.
        data_present: bool,
    },
    /// 0x1300 (sent as a read timeout to v3 clients, as Cassandra does).
    ReadFailure {
        /// The request's consistency level.
        consistency: Consistency,
        /// Responses received.
        received: i32,
        /// Responses required.
        block_for: i32,
        /// Replicas that failed (v4's `<numfailures>`).
        num_failures: i32,
        /// The failed replicas' addresses and reason codes, as far as known (v5's
        /// `<reasonmap>`; see [`failure_reason`]).
        reasons: Vec<(IpAddr, u16)>,
        /// Whether the replica asked for data answered.
        data_present: bool,
    },
    /// 0x1400 (sent as Invalid to v3 clients, as Cassandra does).
    FunctionFailure {
        /// The function's keyspace.
        keyspace: String,
        /// The function's name.
        function: String,
        /// Its argument types, as CQL type names.
        arg_types: Vec<String>,
    },
    /// 0x1500 (sent as a write timeout to v3 clients, as Cassandra does).
    WriteFailure {
        /// The request's consistency level.
        consistency: Consistency,
        /// Acknowledgements received.
        received: i32,
        /// Acknowledgements required.
        block_for: i32,
        /// Replicas that failed (v4's `<numfailures>`).
        num_failures: i32,
        /// The failed replicas' addresses and reason codes, as far as known (v5's
        /// `<reasonmap>`; see [`failure_reason`]).
        reasons: Vec<(IpAddr, u16)>,
        /// What kind of write.
        write_type: WriteType,
    },
    /// 0x2000.
    Syntax,
    /// 0x2100.
    Unauthorized,
    /// 0x2200.
    Invalid,
    /// 0x2300.
    Config,
    /// 0x2400.
    AlreadyExists {
        /// The keyspace that exists, or that holds the table that exists.
        keyspace: String,
        /// The table that exists; empty when the keyspace does.
        table: String,
    },
    /// 0x2500.
    Unprepared {
        /// The unknown statement id.
        id: Bytes,
    },
}

impl ErrorKind {
    /// The error code ([`error_code`]).
    pub fn code(&self) -> i32 {
        use error_code::*;
        match self {
            ErrorKind::Server => SERVER,
            ErrorKind::Protocol => PROTOCOL,
            ErrorKind::BadCredentials => BAD_CREDENTIALS,
            ErrorKind::Unavailable { .. } => UNAVAILABLE,
            ErrorKind::Overloaded => OVERLOADED,
            ErrorKind::IsBootstrapping => IS_BOOTSTRAPPING,
            ErrorKind::Truncate => TRUNCATE,
            ErrorKind::WriteTimeout { .. } => WRITE_TIMEOUT,
            ErrorKind::ReadTimeout { .. } => READ_TIMEOUT,
            ErrorKind::ReadFailure { .. } => READ_FAILURE,
            ErrorKind::FunctionFailure { .. } => FUNCTION_FAILURE,
            ErrorKind::WriteFailure { .. } => WRITE_FAILURE,
            ErrorKind::Syntax => SYNTAX,
            ErrorKind::Unauthorized => UNAUTHORIZED,
            ErrorKind::Invalid => INVALID,
            ErrorKind::Config => CONFIG,
            ErrorKind::AlreadyExists { .. } => ALREADY_EXISTS,
            ErrorKind::Unprepared { .. } => UNPREPARED,
        }
    }

    /// Whether a driver may safely retry the same request (possibly elsewhere) as is: the
    /// request was not applied, or applying it again is what the error invites.
    /// Timeouts and failures of writes are not safe in general (the write may have landed).
    pub fn is_retry_safe(&self) -> bool {
        matches!(
            self,
            ErrorKind::Unavailable { .. }
                | ErrorKind::Overloaded
                | ErrorKind::IsBootstrapping
                | ErrorKind::ReadTimeout { .. }
                | ErrorKind::ReadFailure { .. }
                | ErrorKind::Unprepared { .. }
        )
    }
}

/// An ERROR response body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ErrorResponse {
    /// Code and code-specific fields.
    pub kind: ErrorKind,
    /// Human-readable message; drivers show it, and some match on it.
    pub message: String,
}

impl ErrorResponse {
    /// An error of `kind` saying `message`.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> ErrorResponse {
        ErrorResponse {
            kind,
            message: message.into(),
        }
    }

    /// The error code.
    pub fn code(&self) -> i32 {
        self.kind.code()
    }
}

/// Appends an ERROR body. The message is cut to fit a `[string]`; the structured fields are
/// ours (names of schema objects, a prepared id) and must fit.
// Long on purpose: one exhaustive match over the protocol's error kinds, each arm the
// bytes §9 of the spec lists for it, so a new kind cannot be forgotten.
pub(crate) fn try_put_error_body(
    out: &mut BytesMut,
    error: &ErrorResponse,
    version: ProtocolVersion,
) -> Result<(), EncodeError> {
    // v3 has no failure codes: Cassandra sends their nearest v3 equivalents.
    let downgraded;
    let kind = if version < ProtocolVersion::V4 {
        downgraded = match &error.kind {
            ErrorKind::ReadFailure {
                consistency,
                received,
                block_for,
                data_present,
                ..
            } => Some(ErrorKind::ReadTimeout {
                consistency: *consistency,
                received: *received,
                block_for: *block_for,
                data_present: *data_present,
            }),
            ErrorKind::WriteFailure {
                consistency,
                received,
                block_for,
                write_type,
                ..
            } => Some(ErrorKind::WriteTimeout {
                consistency: *consistency,
                received: *received,
                block_for: *block_for,
                write_type: *write_type,
            }),
            ErrorKind::FunctionFailure { .. } => Some(ErrorKind::Invalid),
            _ => None,
        };
        downgraded.as_ref().unwrap_or(&error.kind)
    } else {
        &error.kind
    };
    out.put_i32(kind.code());
    put_string_lossy(out, &error.message);
    match kind {
        ErrorKind::Unavailable {
            consistency,
            required,
            alive,
        } => {
            out.put_u16(consistency.code());
            out.put_i32(*required);
            out.put_i32(*alive);
        }
        ErrorKind::WriteTimeout {
            consistency,
            received,
            block_for,
            write_type,
        } => {
            out.put_u16(consistency.code());
            out.put_i32(*received);
            out.put_i32(*block_for);
            put_string(out, write_type.name())?;
            // v5 adds `<contentions>` after a CAS write type; we run no Paxos rounds, so
            // there were none.
            if version >= ProtocolVersion::V5 && *write_type == WriteType::Cas {
                out.put_u16(0);
            }
        }
        ErrorKind::ReadTimeout {
            consistency,
            received,
            block_for,
            data_present,
        } => {
            out.put_u16(consistency.code());
            out.put_i32(*received);
            out.put_i32(*block_for);
            out.put_u8(u8::from(*data_present));
        }
        ErrorKind::ReadFailure {
            consistency,
            received,
            block_for,
            num_failures,
            reasons,
            data_present,
        } => {
            out.put_u16(consistency.code());
            out.put_i32(*received);
            out.put_i32(*block_for);
            put_failures(out, *num_failures, reasons, version);
            out.put_u8(u8::from(*data_present));
        }
        ErrorKind::FunctionFailure {
            keyspace,
            function,
            arg_types,
        } => {
            put_string(out, keyspace)?;
            put_string(out, function)?;
            put_string_list(out, arg_types)?;
        }
        ErrorKind::WriteFailure {
            consistency,
            received,
            block_for,
            num_failures,
            reasons,
            write_type,
        } => {
            out.put_u16(consistency.code());
            out.put_i32(*received);
            out.put_i32(*block_for);
            put_failures(out, *num_failures, reasons, version);
            put_string(out, write_type.name())?;
        }
        ErrorKind::AlreadyExists { keyspace, table } => {
            put_string(out, keyspace)?;
            put_string(out, table)?;
        }
        ErrorKind::Unprepared { id } => put_short_bytes(out, id)?,
        ErrorKind::Server
        | ErrorKind::Protocol
        | ErrorKind::BadCredentials
        | ErrorKind::Overloaded
        | ErrorKind::IsBootstrapping
        | ErrorKind::Truncate
        | ErrorKind::Syntax
        | ErrorKind::Unauthorized
        | ErrorKind::Invalid
        | ErrorKind::Config => {}
    }
    Ok(())
}

/// The failures of READ_FAILURE and WRITE_FAILURE: their count before v5, v5's
/// `<reasonmap>` (`[int]` n, then n × `<inetaddr><short>`) in v5. A v5 client takes the
/// map's size for the count, so replicas whose address is not known get entries with the
/// unspecified address 0.0.0.0 and reason UNKNOWN, keeping the map `num_failures` long.
fn put_failures(
    out: &mut BytesMut,
    num_failures: i32,
    reasons: &[(IpAddr, u16)],
    version: ProtocolVersion,
) {
    if version < ProtocolVersion::V5 {
        out.put_i32(num_failures);
        return;
    }
    let unknown = usize::try_from(num_failures)
        .unwrap_or(0)
        .saturating_sub(reasons.len());
    let entries = reasons.iter().copied().chain(std::iter::repeat_n(
        (IpAddr::V4(Ipv4Addr::UNSPECIFIED), failure_reason::UNKNOWN),
        unknown,
    ));
    out.put_i32(i32::try_from(reasons.len() + unknown).unwrap_or(i32::MAX));
    for (address, code) in entries {
        match address {
            IpAddr::V4(a) => {
                out.put_u8(4);
                out.extend_from_slice(&a.octets());
            }
            IpAddr::V6(a) => {
                out.put_u8(16);
                out.extend_from_slice(&a.octets());
            }
        }
        out.put_u16(code);
    }
}

/// Appends an ERROR body that has no structured fields to overflow (protocol errors).
pub(crate) fn put_error_body(out: &mut BytesMut, error: &ErrorResponse, version: ProtocolVersion) {
    let start = out.len();
    if try_put_error_body(out, error, version).is_err() {
        // Only reachable with oversized structured fields; fall back to a plain server error.
        out.truncate(start);
        out.put_i32(error_code::SERVER);
        put_string_lossy(out, &error.message);
    }
}
