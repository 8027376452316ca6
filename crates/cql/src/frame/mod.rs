//! Cassandra's native protocol, versions 5, 4 and 3: frames, v5 segments, request decoding,
//! response encoding.
//!
//! Owns the bytes on a client connection and nothing else: the server crate reads from the
//! socket into a [`BytesMut`], takes request frames off it with a [`FrameReader`] (which
//! calls [`decode_frame`], and on a v5 connection past its handshake [`decode_segment`]
//! first), decodes each [`RequestFrame`] into a [`Request`], and writes responses with a
//! [`ResponseEncoder`] (through a [`SegmentWriter`] on a v5 connection).
//! Pure functions over buffers: no tokio, no I/O, no clock, so every decoder is fuzzable.
//!
//! # Layout
//! - this module: the frame header (`version | flags | stream i16 | opcode | length u32`), the
//!   incremental [`decode_frame`], version negotiation and the fatal [`FrameError`]s;
//! - `segment`: v5's checksummed segments around frames ([`FrameReader`],
//!   [`SegmentWriter`], [`SegmentError`]);
//! - `wire`: the §3 notations (`[string]`, `[bytes]`, `[value]`, …) as a bounds-checked
//!   `Reader` over [`Bytes`] and `put_*` writers;
//! - `request`: the eight request bodies ([`Request`]);
//! - `response`: [`Response`], the [`ResponseEncoder`] and the streaming [`RowsWriter`];
//! - `error`: ERROR bodies ([`ErrorResponse`], [`ErrorKind`], [`error_code`]);
//! - `types`: [`Consistency`], [`ColumnType`] (every `[option]` id) and [`ColumnSpec`];
//! - `compress`: LZ4 in Cassandra's framing (per frame body before v5, per segment in v5).
//!
//! # Hand-written, not `cassandra-protocol`
//! The `cassandra-protocol` crate (4.0.x) decodes these bodies too, but: its cursor
//! decoders copy every bound value into a `Vec<u8>` (`CBytes`), it speaks only the beta v5
//! (no segments), has an `unwrap()` reachable from malformed input, and its response
//! encoder is test-only, so we would write half of the codec anyway and wrap the other half
//! in our own length checks. The request bodies are small; the hand-written `Reader` returns
//! typed [`BodyError`]s, never panics, never allocates more than the bytes that are actually
//! present, and hands bound values out as zero-copy [`Bytes`] slices of the frame.
//!
//! # Version negotiation (what drivers rely on)
//! We speak v3, v4 and v5 — Cassandra 4.0's final v5, not 3.x's beta — so drivers open
//! with their default version: the Python driver (3.30) and gocql v2 use v5, the Node.js
//! driver (4.x, no v5) and the Rust `scylla` driver (v4 only) use v4. Any other version byte
//! gets a protocol ERROR (0x000A) whose message is Cassandra's,
//! `Invalid or unsupported protocol version (N); supported versions are (3/v3, 4/v4, 5/v5)`
//! (Cassandra 4.1 also lists `6/v6-beta`, which we don't speak): the Python driver steps
//! down (0x42 → 0x41 → 5 → 4) only when the message contains "unsupported protocol
//! version", and the Java, Node.js and Rust drivers treat any protocol error on the first
//! request as "try lower". Like Cassandra's `ProtocolVersion.decode`, the reply is framed
//! with the client's own version for the retired v1/v2 (8-byte header, one-byte stream)
//! and with our greatest version, 0x85, for anything newer or unknown (DSE's 0x41/0x42, v6):
//! Cassandra 4.1 frames it in its current version, v5, when the connection has none yet.
//! It goes to stream 0 as Cassandra's does (its decoder throws before it reads the stream
//! id), never in a segment. Every driver depends on that: the Python driver sends its first
//! message on stream 0 and matches the reply there; the Go driver (gocql v2) never uses
//! stream 0 for requests and steps down only when a protocol error arrives on stream 0 (a
//! reply on its own stream in another version is reported as a fatal error instead). We
//! still wait for the whole header before answering, so the request is read off the socket
//! and closing it does not reset the connection before the client has read the refusal.
//! The `USE_BETA` flag changes nothing: Cassandra 4.1 needs it only for its beta v6, and
//! accepts the final v5 with or without it; so do we (and it is ignored on v3/v4 frames).
//!
//! # v5
//! The handshake (OPTIONS, STARTUP and their answers) is unsegmented; from the READY or
//! AUTHENTICATE that answers STARTUP on, every frame both ways travels in segments
//! (`segment`), compressed per segment when LZ4 was negotiated (the frame header's
//! compression flag is ignored, Snappy is refused as for every version). The message
//! changes: QUERY, EXECUTE and BATCH flags are an `[int]`, with `WITH_KEYSPACE` (0x80, a
//! per-query keyspace) and `NOW_IN_SECONDS` (0x100); PREPARE has flags (0x01: a keyspace);
//! PREPARED carries a result metadata id that EXECUTE sends back, and Rows answers a stale
//! one with `METADATA_CHANGED` (0x0008), the new id and full metadata; READ_FAILURE and
//! WRITE_FAILURE carry a reason map; `duration` has its own type id (0x0015).
//!
//! # Errors
//! [`FrameError`]s come from the header and [`SegmentError`]s from a segment: the stream
//! can't be trusted past them, so the server sends [`ReadError::encode_response`] and closes
//! the connection. [`BodyError`]s come from one frame's body, which has been consumed whole:
//! the server answers with a protocol error ([`BodyError::to_error_response`]) on the
//! frame's stream and carries on.
//! Over-long frames are refused from the header, before any body byte is buffered:
//! Cassandra answers "Request is too big" and skips the body; we answer the same text as a
//! protocol error and close, so a hostile length costs no memory.
#![deny(clippy::indexing_slicing)]

mod compress;
mod error;
mod request;
mod response;
mod segment;
mod types;
mod wire;

#[cfg(test)]
mod test_decode;
#[cfg(test)]
mod tests;

use std::fmt;

use bytes::{Buf, BufMut, Bytes, BytesMut};

pub use compress::Compression;
pub use error::{error_code, failure_reason, ErrorKind, ErrorResponse, WriteType};
pub use request::{
    AuthResponse, Batch, BatchQuery, BatchStatement, BatchType, BoundValues, EventType, Execute,
    Prepare, Query, QueryParameters, Register, Request, Startup, StartupOptions, Value,
};
pub use response::{
    Event, Prepared, PreparedMetadata, Response, ResponseEncoder, ResponseExtras, ResultBody, Rows,
    RowsMetadata, RowsWriter, SchemaChange, SchemaChangeTarget, SchemaChangeType, StatusChangeType,
    Supported, TopologyChangeType,
};
pub use segment::{
    decode_segment, encode_segment, segment_header_crc24, segment_payload_crc32, FrameReader,
    ReadError, Segment, SegmentError, SegmentWriter, SEGMENT_PAYLOAD_MAX,
};
pub use types::{ColumnSpec, ColumnType, Consistency};
pub use wire::{BodyError, EncodeError};

/// Cassandra 4.1's default `native_transport_max_frame_size`: 16 MiB, header included.
pub const FRAME_LEN_MAX_DEFAULT: u32 = 16 * 1024 * 1024;

/// Length of a v3+ frame header.
pub const HEADER_LEN: usize = 9;

/// Length of a v1/v2 frame header (one-byte stream id); only used to refuse those versions.
const HEADER_LEN_V2: usize = 8;

/// The most [`decode_frame`] reserves ahead for a partially received body.
const RESERVE_AHEAD_MAX: usize = 1 << 20;

/// Direction bit of the version byte: set on responses.
const RESPONSE_BIT: u8 = 0x80;

/// A protocol version we speak.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum ProtocolVersion {
    /// v3 (Cassandra 2.1+): no unset values, no warnings, no date/time/smallint/tinyint ids.
    V3,
    /// v4 (Cassandra 2.2 – 4.x), the one drivers pick against Cassandra 3.11.
    V4,
    /// v5 (Cassandra 4.0+, final): segments after the handshake, `[int]` query flags,
    /// per-query keyspaces, result metadata ids.
    V5,
}

impl ProtocolVersion {
    /// The lowest version we accept.
    pub const MIN: ProtocolVersion = ProtocolVersion::V3;
    /// The greatest version we accept; unsupported newer versions are refused in it.
    pub const MAX: ProtocolVersion = ProtocolVersion::V5;
    /// Every version we accept, lowest first (as SUPPORTED lists them).
    pub const ALL: [ProtocolVersion; 3] = [
        ProtocolVersion::V3,
        ProtocolVersion::V4,
        ProtocolVersion::V5,
    ];

    /// The version number as on the wire (direction bit clear).
    pub fn number(self) -> u8 {
        match self {
            ProtocolVersion::V3 => 3,
            ProtocolVersion::V4 => 4,
            ProtocolVersion::V5 => 5,
        }
    }

    /// The version for a version number, if we speak it.
    pub fn from_number(number: u8) -> Option<ProtocolVersion> {
        match number {
            3 => Some(ProtocolVersion::V3),
            4 => Some(ProtocolVersion::V4),
            5 => Some(ProtocolVersion::V5),
            _ => None,
        }
    }

    /// How `SUPPORTED`'s `PROTOCOL_VERSIONS` and Cassandra's error messages spell it.
    pub fn description(self) -> &'static str {
        match self {
            ProtocolVersion::V3 => "3/v3",
            ProtocolVersion::V4 => "4/v4",
            ProtocolVersion::V5 => "5/v5",
        }
    }
}

impl fmt::Display for ProtocolVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.description())
    }
}

/// Frame opcodes (§2.4).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Opcode {
    /// 0x00, response.
    Error,
    /// 0x01, request.
    Startup,
    /// 0x02, response.
    Ready,
    /// 0x03, response.
    Authenticate,
    /// 0x05, request.
    Options,
    /// 0x06, response.
    Supported,
    /// 0x07, request.
    Query,
    /// 0x08, response.
    Result,
    /// 0x09, request.
    Prepare,
    /// 0x0A, request.
    Execute,
    /// 0x0B, request.
    Register,
    /// 0x0C, response.
    Event,
    /// 0x0D, request.
    Batch,
    /// 0x0E, response.
    AuthChallenge,
    /// 0x0F, request.
    AuthResponse,
    /// 0x10, response.
    AuthSuccess,
}

impl Opcode {
    /// The opcode byte.
    pub fn byte(self) -> u8 {
        match self {
            Opcode::Error => 0x00,
            Opcode::Startup => 0x01,
            Opcode::Ready => 0x02,
            Opcode::Authenticate => 0x03,
            Opcode::Options => 0x05,
            Opcode::Supported => 0x06,
            Opcode::Query => 0x07,
            Opcode::Result => 0x08,
            Opcode::Prepare => 0x09,
            Opcode::Execute => 0x0A,
            Opcode::Register => 0x0B,
            Opcode::Event => 0x0C,
            Opcode::Batch => 0x0D,
            Opcode::AuthChallenge => 0x0E,
            Opcode::AuthResponse => 0x0F,
            Opcode::AuthSuccess => 0x10,
        }
    }

    /// Any opcode, request or response.
    pub fn from_byte(byte: u8) -> Option<Opcode> {
        Some(match byte {
            0x00 => Opcode::Error,
            0x01 => Opcode::Startup,
            0x02 => Opcode::Ready,
            0x03 => Opcode::Authenticate,
            0x05 => Opcode::Options,
            0x06 => Opcode::Supported,
            0x07 => Opcode::Query,
            0x08 => Opcode::Result,
            0x09 => Opcode::Prepare,
            0x0A => Opcode::Execute,
            0x0B => Opcode::Register,
            0x0C => Opcode::Event,
            0x0D => Opcode::Batch,
            0x0E => Opcode::AuthChallenge,
            0x0F => Opcode::AuthResponse,
            0x10 => Opcode::AuthSuccess,
            _ => return None,
        })
    }

    /// Whether clients send this opcode.
    pub fn is_request(self) -> bool {
        matches!(
            self,
            Opcode::Startup
                | Opcode::Options
                | Opcode::Query
                | Opcode::Prepare
                | Opcode::Execute
                | Opcode::Register
                | Opcode::Batch
                | Opcode::AuthResponse
        )
    }

    /// Cassandra's name for the opcode, as in its error messages.
    pub fn name(self) -> &'static str {
        match self {
            Opcode::Error => "ERROR",
            Opcode::Startup => "STARTUP",
            Opcode::Ready => "READY",
            Opcode::Authenticate => "AUTHENTICATE",
            Opcode::Options => "OPTIONS",
            Opcode::Supported => "SUPPORTED",
            Opcode::Query => "QUERY",
            Opcode::Result => "RESULT",
            Opcode::Prepare => "PREPARE",
            Opcode::Execute => "EXECUTE",
            Opcode::Register => "REGISTER",
            Opcode::Event => "EVENT",
            Opcode::Batch => "BATCH",
            Opcode::AuthChallenge => "AUTH_CHALLENGE",
            Opcode::AuthResponse => "AUTH_RESPONSE",
            Opcode::AuthSuccess => "AUTH_SUCCESS",
        }
    }
}

/// The header flags byte (§2.2). Unknown bits are kept but mean nothing.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct FrameFlags(pub u8);

impl FrameFlags {
    /// 0x01: the body is compressed with the algorithm chosen at STARTUP (v3/v4; v5
    /// compresses segments instead and ignores this flag).
    pub const COMPRESSION: u8 = 0x01;
    /// 0x02: the client asks for tracing; on a response, the body starts with a tracing id.
    pub const TRACING: u8 = 0x02;
    /// 0x04 (v4): the body starts with a custom payload `[bytes map]`.
    pub const CUSTOM_PAYLOAD: u8 = 0x04;
    /// 0x08 (v4, responses): the body starts with warnings, a `[string list]`.
    pub const WARNING: u8 = 0x08;
    /// 0x10: the client knowingly uses a beta version. We have none (v5 is final), so it
    /// is ignored, as Cassandra 4.1 ignores it on v5 and on v3/v4.
    pub const USE_BETA: u8 = 0x10;

    /// Whether the compression bit is set.
    pub fn compressed(self) -> bool {
        self.0 & Self::COMPRESSION != 0
    }

    /// Whether the tracing bit is set.
    pub fn tracing(self) -> bool {
        self.0 & Self::TRACING != 0
    }

    /// Whether the custom payload bit is set.
    pub fn custom_payload(self) -> bool {
        self.0 & Self::CUSTOM_PAYLOAD != 0
    }

    /// Whether the warning bit is set.
    pub fn warning(self) -> bool {
        self.0 & Self::WARNING != 0
    }
}

/// A whole request frame, header parsed, body not yet decoded (and maybe still compressed).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RequestFrame {
    /// The connection's protocol version, as this frame states it.
    pub version: ProtocolVersion,
    /// Header flags.
    pub flags: FrameFlags,
    /// The stream id to answer on.
    pub stream: i16,
    /// A request opcode ([`Opcode::is_request`]).
    pub opcode: Opcode,
    /// The body exactly as received.
    pub body: Bytes,
    /// The frame-length limit the frame was read under; also bounds the decompressed body.
    pub frame_len_max: u32,
}

impl RequestFrame {
    /// Decodes the body: decompresses it if the compression flag is set (which needs the
    /// `compression` negotiated at STARTUP), skips a v4 custom payload (Cassandra's default
    /// query handler ignores it too), and parses the request. Trailing bytes are ignored,
    /// as Cassandra does.
    pub fn decode(&self, compression: Option<Compression>) -> Result<Request, BodyError> {
        let body = self.body_uncompressed(compression)?;
        let mut reader = wire::Reader::new(body);
        if self.version >= ProtocolVersion::V4 && self.flags.custom_payload() {
            reader.skip_bytes_map()?;
        }
        Request::decode(self.opcode, self.version, &mut reader)
    }

    /// The body with compression undone. v5 bodies are never compressed (segments are):
    /// their compression flag is ignored, as the v5 spec says.
    pub fn body_uncompressed(&self, compression: Option<Compression>) -> Result<Bytes, BodyError> {
        if !self.flags.compressed() || self.version >= ProtocolVersion::V5 {
            return Ok(self.body.clone());
        }
        match compression {
            // STARTUP negotiates compression, so it can never be compressed itself.
            Some(c) if self.opcode != Opcode::Startup => {
                c.decompress(&self.body, self.frame_len_max)
            }
            _ => Err(BodyError::CompressedWithoutNegotiation),
        }
    }
}

/// Why the frame stream can't be read any further: the server answers with
/// [`FrameError::encode_response`] and closes the connection.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FrameError {
    /// A version we don't speak (v1, v2, v6, DSE's 0x41/0x42, or garbage).
    #[error(
        "Invalid or unsupported protocol version ({version}); supported versions are (3/v3, 4/v4, 5/v5)"
    )]
    UnsupportedVersion {
        /// The version number the client sent (direction bit clear).
        version: u8,
    },
    /// The direction bit says "response".
    #[error("Wrong protocol direction (expected REQUEST, got RESPONSE) for opcode {opcode}")]
    NotARequest {
        /// The frame's version.
        version: ProtocolVersion,
        /// The frame's stream id.
        stream: i16,
        /// The opcode byte.
        opcode: u8,
    },
    /// An opcode that is unknown or that only servers send.
    #[error("Unknown opcode {opcode}")]
    UnknownOpcode {
        /// The frame's version.
        version: ProtocolVersion,
        /// The frame's stream id.
        stream: i16,
        /// The opcode byte.
        opcode: u8,
    },
    /// Header plus body exceed the frame-length limit.
    #[error("Request is too big: length {length} exceeds maximum allowed length {max}.")]
    FrameTooLarge {
        /// The frame's version.
        version: ProtocolVersion,
        /// The frame's stream id.
        stream: i16,
        /// Header plus announced body length.
        length: u64,
        /// The limit.
        max: u32,
    },
}

impl FrameError {
    /// The stream id the error response goes to: 0 for an unsupported version (see the
    /// module doc), the request's own otherwise.
    pub fn stream(&self) -> i16 {
        match *self {
            FrameError::UnsupportedVersion { .. } => 0,
            FrameError::NotARequest { stream, .. }
            | FrameError::UnknownOpcode { stream, .. }
            | FrameError::FrameTooLarge { stream, .. } => stream,
        }
    }

    /// The ERROR body: always a protocol error (0x000A) carrying the `Display` text.
    pub fn to_error_response(&self) -> ErrorResponse {
        ErrorResponse::new(ErrorKind::Protocol, self.to_string())
    }

    /// Appends the whole ERROR frame to `out`, never compressed (the error may come before
    /// or instead of STARTUP). For an unsupported version the frame is in the client's
    /// version if it is v1/v2 (8-byte header) and in v5 otherwise; see the module doc.
    pub fn encode_response(&self, out: &mut BytesMut) {
        let error = self.to_error_response();
        let mut body = BytesMut::new();
        error::put_error_body(&mut body, &error, ProtocolVersion::MAX);
        let stream = self.stream();
        match *self {
            FrameError::UnsupportedVersion { version, .. } if version == 1 || version == 2 => {
                out.reserve(HEADER_LEN_V2 + body.len());
                out.put_u8(RESPONSE_BIT | version);
                out.put_u8(0);
                out.put_i8(0);
                out.put_u8(Opcode::Error.byte());
            }
            _ => {
                let version = match *self {
                    FrameError::NotARequest { version, .. }
                    | FrameError::UnknownOpcode { version, .. }
                    | FrameError::FrameTooLarge { version, .. } => version,
                    FrameError::UnsupportedVersion { .. } => ProtocolVersion::MAX,
                };
                out.reserve(HEADER_LEN + body.len());
                out.put_u8(RESPONSE_BIT | version.number());
                out.put_u8(0);
                out.put_i16(stream);
                out.put_u8(Opcode::Error.byte());
            }
        }
        // An error body is a code, a message of at most u16::MAX bytes and a few fields.
        out.put_u32(u32::try_from(body.len()).unwrap_or(u32::MAX));
        out.extend_from_slice(&body);
    }
}

/// Takes one whole request frame off the front of `buf`, or returns `Ok(None)` (consuming
/// nothing) until one is buffered. `frame_len_max` bounds header plus body, like Cassandra's
/// `native_transport_max_frame_size` ([`FRAME_LEN_MAX_DEFAULT`]). When the header is
/// complete but the body is not, reserves room for the rest (up to 1 MiB at a time) so the
/// caller's reads fill it.
///
/// Errors are fatal for the connection and consume nothing; see [`FrameError`].
pub fn decode_frame(
    buf: &mut BytesMut,
    frame_len_max: u32,
) -> Result<Option<RequestFrame>, FrameError> {
    let Some(&first) = buf.first() else {
        return Ok(None);
    };
    let version_number = first & !RESPONSE_BIT;
    let Some(version) = ProtocolVersion::from_number(version_number) else {
        // Wait for the whole header (see the module doc).
        let header_len = if version_number == 1 || version_number == 2 {
            HEADER_LEN_V2
        } else {
            HEADER_LEN
        };
        if buf.len() < header_len {
            return Ok(None);
        }
        return Err(FrameError::UnsupportedVersion {
            version: version_number,
        });
    };
    let Some(&[_, flags, s0, s1, opcode, l0, l1, l2, l3]) = buf.get(..HEADER_LEN) else {
        return Ok(None);
    };
    let stream = i16::from_be_bytes([s0, s1]);
    let body_len = u32::from_be_bytes([l0, l1, l2, l3]);
    if first & RESPONSE_BIT != 0 {
        return Err(FrameError::NotARequest {
            version,
            stream,
            opcode,
        });
    }
    let Some(op) = Opcode::from_byte(opcode).filter(|op| op.is_request()) else {
        return Err(FrameError::UnknownOpcode {
            version,
            stream,
            opcode,
        });
    };
    let frame_len = u64::from(body_len) + HEADER_LEN as u64;
    if frame_len > u64::from(frame_len_max) {
        return Err(FrameError::FrameTooLarge {
            version,
            stream,
            length: frame_len,
            max: frame_len_max,
        });
    }
    // frame_len <= frame_len_max <= u32::MAX, so it fits a usize on every supported target.
    let frame_len = usize::try_from(frame_len).unwrap_or(usize::MAX);
    if buf.len() < frame_len {
        // Room for the rest, but not on the header's word alone: a client announcing 256 MiB
        // must send them before it costs that much memory.
        buf.reserve((frame_len - buf.len()).min(RESERVE_AHEAD_MAX));
        return Ok(None);
    }
    let mut frame = buf.split_to(frame_len).freeze();
    frame.advance(HEADER_LEN);
    Ok(Some(RequestFrame {
        version,
        flags: FrameFlags(flags),
        stream,
        opcode: op,
        body: frame,
        frame_len_max,
    }))
}

/// Appends a request frame; the inverse of [`decode_frame`], for tests, tools and the
/// benchmark client. Never compresses.
pub fn encode_request_frame(
    out: &mut BytesMut,
    version: ProtocolVersion,
    flags: FrameFlags,
    stream: i16,
    opcode: Opcode,
    body: &[u8],
) -> Result<(), EncodeError> {
    let len =
        u32::try_from(body.len()).map_err(|_| EncodeError::FrameTooLarge { length: body.len() })?;
    out.reserve(HEADER_LEN + body.len());
    out.put_u8(version.number());
    out.put_u8(flags.0);
    out.put_i16(stream);
    out.put_u8(opcode.byte());
    out.put_u32(len);
    out.extend_from_slice(body);
    Ok(())
}
