//! v5 framing (`native_protocol_v5.spec` §2.1–2.3): the *segments* that carry frames once a
//! v5 connection has finished its handshake.
//!
//! The spec calls our frames "envelopes" and these segments "frames"; here a frame is still
//! the 9-byte-header message of [`super::decode_frame`], and a segment is the checksummed
//! wrapper around one or more of them:
//!
//! ```text
//! uncompressed: | payload length 17 | self-contained 1 | padding 6 | CRC24 of those 3 bytes |
//!               | payload (≤ 128 KiB - 1)                                                 | CRC32 |
//! LZ4:          | compressed length 17 | uncompressed length 17 | self-contained 1 | padding 5 |
//!               | CRC24 of those 5 bytes | compressed payload (≤ 128 KiB - 1)            | CRC32 |
//! ```
//!
//! Every integer of the segment layer is little-endian (frames inside stay big-endian). The
//! header CRC24 is Cassandra's (`Crc.crc24`: polynomial 0x1974F0B, initial value 0x875060,
//! most significant bit first, over the header bytes in wire order); the payload CRC32 is
//! the standard CRC-32 of the payload preceded by the four bytes `FA 2D 55 CA`, as
//! Cassandra's `Crc.crc32()` is seeded. With LZ4 the CRC32 covers the compressed bytes, and
//! an uncompressed length of 0 means the payload went uncompressed (senders do that when
//! compressing would not shrink it).
//!
//! A *self-contained* segment holds one or more whole frames; a frame too large for one
//! segment is cut into a run of segments that are not self-contained and hold nothing else.
//!
//! # What is here
//! - [`encode_segment`] / [`decode_segment`]: one segment, both ways;
//! - [`FrameReader`]: a connection's request frames, first unsegmented (OPTIONS, STARTUP),
//!   then — once [`FrameReader::start_segments`] is called after READY or AUTHENTICATE —
//!   out of segments, with the checks Cassandra's `CQLMessageHandler` makes;
//! - [`SegmentWriter`]: packs outgoing frames into self-contained segments, and cuts large
//!   ones into runs.
//!
//! Every error here is fatal for the connection: the stream of segments cannot be trusted
//! past a bad checksum, so the server answers a protocol error on stream 0 and closes, as
//! Cassandra does ("unrecoverable CRC mismatch").

use bytes::{BufMut, Bytes, BytesMut};

use super::compress::Compression;
use super::error::put_error_body;
use super::{
    decode_frame, ErrorKind, ErrorResponse, FrameError, Opcode, ProtocolVersion, RequestFrame,
    HEADER_LEN, RESPONSE_BIT,
};

/// The largest payload of one segment: 128 KiB - 1 (17 bits).
pub const SEGMENT_PAYLOAD_MAX: usize = (1 << 17) - 1;

/// Header bytes before the CRC24: 3 uncompressed, 5 with LZ4.
const HEADER_BODY_LEN_PLAIN: usize = 3;
const HEADER_BODY_LEN_LZ4: usize = 5;
/// Bytes of the header CRC24 and of the payload CRC32.
const CRC24_LEN: usize = 3;
const CRC32_LEN: usize = 4;
/// The 17-bit length mask.
const LENGTH_MASK: u64 = (1 << 17) - 1;
/// The self-contained flag: bit 17 of the uncompressed header, bit 34 of the LZ4 one.
const SELF_CONTAINED_PLAIN: u64 = 1 << 17;
const SELF_CONTAINED_LZ4: u64 = 1 << 34;

/// Cassandra's CRC24 (`org.apache.cassandra.net.Crc.crc24`): the bitwise loop there is the
/// plain MSB-first CRC with these parameters (`check` is this CRC of "123456789").
const CRC24: crc::Crc<u32> = crc::Crc::<u32>::new(&crc::Algorithm {
    width: 24,
    poly: 0x97_4F0B,
    init: 0x87_5060,
    refin: false,
    refout: false,
    xorout: 0,
    check: 0x4B_3F02,
    residue: 0,
});

/// The bytes Cassandra's payload CRC32 starts from (`Crc.initialBytes`).
const CRC32_SEED: [u8; 4] = [0xFA, 0x2D, 0x55, 0xCA];

/// The CRC24 of a segment header's length bytes.
pub fn segment_header_crc24(header: &[u8]) -> u32 {
    CRC24.checksum(header)
}

/// The CRC32 of a segment payload (as sent: compressed, if it was).
pub fn segment_payload_crc32(payload: &[u8]) -> u32 {
    let mut hasher = crc32fast::Hasher::new();
    hasher.update(&CRC32_SEED);
    hasher.update(payload);
    hasher.finalize()
}

/// Why the segment stream cannot be read any further (see the module doc: all fatal).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SegmentError {
    /// The header's CRC24 does not match its length bytes.
    #[error("Invalid, unrecoverable CRC mismatch detected in frame header. Read {read}, Computed {computed}")]
    HeaderCrcMismatch {
        /// The CRC24 sent.
        read: u32,
        /// The CRC24 of the header as received.
        computed: u32,
    },
    /// The payload's CRC32 does not match it.
    #[error("Invalid, unrecoverable CRC mismatch detected in frame body. Read {read}, Computed {computed}")]
    PayloadCrcMismatch {
        /// The CRC32 sent.
        read: u32,
        /// The CRC32 of the payload as received.
        computed: u32,
    },
    /// An LZ4 payload that does not decompress to the length its header announces.
    #[error("Cannot decompress frame: {reason}")]
    Decompression {
        /// What went wrong.
        reason: String,
    },
    /// A self-contained segment while a large frame's run of segments was unfinished.
    #[error("Received a self-contained frame while a large message was incomplete ({pending} bytes of it received)")]
    SelfContainedInsideLargeFrame {
        /// Bytes of the unfinished frame received so far.
        pending: usize,
    },
    /// A self-contained segment whose payload ends inside a frame.
    #[error("A self-contained frame ends inside a message ({pending} bytes of it left over)")]
    PartialFrameInSelfContainedSegment {
        /// Bytes of the partial frame.
        pending: usize,
    },
}

impl SegmentError {
    /// The ERROR body: a protocol error (0x000A) carrying the `Display` text.
    pub fn to_error_response(&self) -> ErrorResponse {
        ErrorResponse::new(ErrorKind::Protocol, self.to_string())
    }

    /// Appends the ERROR frame (v5, stream 0: no request can be named) to `out`. The
    /// connection's writer puts it in a segment like every frame after the handshake.
    pub fn encode_response(&self, out: &mut BytesMut) {
        let mut body = BytesMut::new();
        put_error_body(&mut body, &self.to_error_response(), ProtocolVersion::V5);
        out.reserve(HEADER_LEN + body.len());
        out.put_u8(RESPONSE_BIT | ProtocolVersion::V5.number());
        out.put_u8(0);
        out.put_i16(0);
        out.put_u8(Opcode::Error.byte());
        // An error body is a code and a message of at most u16::MAX bytes.
        out.put_u32(u32::try_from(body.len()).unwrap_or(u32::MAX));
        out.extend_from_slice(&body);
    }
}

/// One decoded segment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Segment {
    /// The payload, decompressed.
    pub payload: Bytes,
    /// Whether it holds whole frames (else: part of one large frame).
    pub self_contained: bool,
}

/// Appends one segment carrying `payload` (at most [`SEGMENT_PAYLOAD_MAX`] bytes), LZ4-
/// compressed in the LZ4 format when `compression` is set (sent uncompressed, with an
/// uncompressed length of 0, when LZ4 would not make it smaller).
///
/// # Panics
/// If `payload` is larger than [`SEGMENT_PAYLOAD_MAX`] (a bug in the caller).
pub fn encode_segment(
    out: &mut BytesMut,
    payload: &[u8],
    self_contained: bool,
    compression: Option<Compression>,
) {
    assert!(
        payload.len() <= SEGMENT_PAYLOAD_MAX,
        "a segment payload of {} bytes exceeds {SEGMENT_PAYLOAD_MAX}",
        payload.len()
    );
    match compression {
        None => {
            let mut header = payload.len() as u64;
            if self_contained {
                header |= SELF_CONTAINED_PLAIN;
            }
            put_header(out, header, HEADER_BODY_LEN_PLAIN);
            out.extend_from_slice(payload);
            out.put_u32_le(segment_payload_crc32(payload));
        }
        Some(c) => {
            let compressed = c.compress_block(payload);
            let (sent, uncompressed_len) = if compressed.len() < payload.len() {
                (compressed.as_slice(), payload.len())
            } else {
                (payload, 0)
            };
            let mut header = sent.len() as u64 | ((uncompressed_len as u64) << 17);
            if self_contained {
                header |= SELF_CONTAINED_LZ4;
            }
            put_header(out, header, HEADER_BODY_LEN_LZ4);
            out.extend_from_slice(sent);
            out.put_u32_le(segment_payload_crc32(sent));
        }
    }
}

/// Writes the `len` low bytes of `header` little-endian, then their CRC24.
fn put_header(out: &mut BytesMut, header: u64, len: usize) {
    let bytes = header.to_le_bytes();
    let body = bytes.get(..len).unwrap_or(&bytes);
    out.extend_from_slice(body);
    let crc = segment_header_crc24(body).to_le_bytes();
    out.extend_from_slice(crc.get(..CRC24_LEN).unwrap_or(&crc));
}

/// Reads `len` (≤ 8) little-endian bytes at `at` as an integer; missing bytes read as 0
/// (callers check the length first).
fn le_int(buf: &[u8], at: usize, len: usize) -> u64 {
    let mut bytes = [0u8; 8];
    if let (Some(dst), Some(src)) = (bytes.get_mut(..len), buf.get(at..at + len)) {
        dst.copy_from_slice(src);
    }
    u64::from_le_bytes(bytes)
}

/// Takes one segment off the front of `buf`, or returns `Ok(None)` (consuming nothing)
/// until one is buffered; reserves room for the rest of a segment whose header is in. The
/// header's CRC24 is checked as soon as the header is complete, before its lengths are
/// trusted. Errors consume nothing and are fatal (see the module doc).
pub fn decode_segment(
    buf: &mut BytesMut,
    compression: Option<Compression>,
) -> Result<Option<Segment>, SegmentError> {
    let header_body_len = if compression.is_some() {
        HEADER_BODY_LEN_LZ4
    } else {
        HEADER_BODY_LEN_PLAIN
    };
    let header_len = header_body_len + CRC24_LEN;
    let Some(header_body) = buf.get(..header_body_len) else {
        return Ok(None);
    };
    if buf.len() < header_len {
        return Ok(None);
    }
    let computed = segment_header_crc24(header_body);
    let read = le_int(buf, header_body_len, CRC24_LEN) as u32;
    if read != computed {
        return Err(SegmentError::HeaderCrcMismatch { read, computed });
    }
    let header = le_int(buf, 0, header_body_len);
    let payload_len = (header & LENGTH_MASK) as usize;
    let (uncompressed_len, self_contained) = if compression.is_some() {
        (
            ((header >> 17) & LENGTH_MASK) as usize,
            header & SELF_CONTAINED_LZ4 != 0,
        )
    } else {
        (0, header & SELF_CONTAINED_PLAIN != 0)
    };
    let total = header_len + payload_len + CRC32_LEN;
    if buf.len() < total {
        // At most 128 KiB + 12: a header cannot make us reserve more.
        buf.reserve(total - buf.len());
        return Ok(None);
    }
    let payload_end = header_len + payload_len;
    let sent = buf.get(header_len..payload_end).unwrap_or_default();
    let computed = segment_payload_crc32(sent);
    let read = le_int(buf, payload_end, CRC32_LEN) as u32;
    if read != computed {
        return Err(SegmentError::PayloadCrcMismatch { read, computed });
    }
    let payload = match compression {
        Some(c) if uncompressed_len > 0 => {
            let out = c
                .decompress_block(sent, uncompressed_len)
                .map_err(|reason| SegmentError::Decompression { reason })?;
            let _ = buf.split_to(total);
            Bytes::from(out)
        }
        _ => {
            let mut segment = buf.split_to(total);
            let _ = segment.split_to(header_len);
            segment.truncate(payload_len);
            segment.freeze()
        }
    };
    Ok(Some(Segment {
        payload,
        self_contained,
    }))
}

/// Why a connection's request stream cannot be read any further.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ReadError {
    /// A frame header the server refuses.
    #[error(transparent)]
    Frame(#[from] FrameError),
    /// A segment that is damaged or breaks the framing rules.
    #[error(transparent)]
    Segment(#[from] SegmentError),
}

impl ReadError {
    /// Appends the ERROR frame answering the error (see [`FrameError::encode_response`]
    /// and [`SegmentError::encode_response`]).
    pub fn encode_response(&self, out: &mut BytesMut) {
        match self {
            ReadError::Frame(e) => e.encode_response(out),
            ReadError::Segment(e) => e.encode_response(out),
        }
    }
}

/// Segment state of a connection past its v5 handshake.
#[derive(Debug)]
struct SegmentedInput {
    compression: Option<Compression>,
    /// Frame bytes taken out of segments and not yet decoded into frames.
    frames: BytesMut,
    /// Whether the segment `frames` last received was self-contained.
    last_self_contained: bool,
}

/// A connection's request frames: unsegmented until [`start_segments`](Self::start_segments),
/// out of segments after it (see the module doc).
#[derive(Debug)]
pub struct FrameReader {
    frame_len_max: u32,
    segmented: Option<SegmentedInput>,
}

impl FrameReader {
    /// A reader of unsegmented frames of at most `frame_len_max` bytes each.
    pub fn new(frame_len_max: u32) -> FrameReader {
        FrameReader {
            frame_len_max,
            segmented: None,
        }
    }

    /// From now on, read frames out of segments, LZ4-compressed if `compression` is set.
    /// A v5 connection calls this right after answering STARTUP with READY or AUTHENTICATE.
    pub fn start_segments(&mut self, compression: Option<Compression>) {
        self.segmented = Some(SegmentedInput {
            compression,
            frames: BytesMut::new(),
            last_self_contained: true,
        });
    }

    /// Whether frames now come in segments.
    pub fn is_segmented(&self) -> bool {
        self.segmented.is_some()
    }

    /// The next whole request frame from `buf` (raw bytes off the socket), or `Ok(None)`
    /// until one is there. Errors are fatal.
    ///
    /// Within segments: a self-contained segment must hold whole frames only, and a run of
    /// segments that are not self-contained must end with the frame it carries before a
    /// self-contained one comes. A frame's length is checked against the limit as soon as
    /// its header is in, so a large frame costs memory only as its bytes arrive.
    pub fn next_frame(&mut self, buf: &mut BytesMut) -> Result<Option<RequestFrame>, ReadError> {
        let Some(input) = &mut self.segmented else {
            return Ok(decode_frame(buf, self.frame_len_max)?);
        };
        // Bounded: each turn either returns or consumes a whole segment from `buf`.
        loop {
            if let Some(frame) = decode_frame(&mut input.frames, self.frame_len_max)? {
                return Ok(Some(frame));
            }
            if !input.frames.is_empty() && input.last_self_contained {
                return Err(SegmentError::PartialFrameInSelfContainedSegment {
                    pending: input.frames.len(),
                }
                .into());
            }
            let Some(segment) = decode_segment(buf, input.compression)? else {
                return Ok(None);
            };
            if segment.self_contained && !input.frames.is_empty() {
                return Err(SegmentError::SelfContainedInsideLargeFrame {
                    pending: input.frames.len(),
                }
                .into());
            }
            input.last_self_contained = segment.self_contained;
            input.frames.extend_from_slice(&segment.payload);
            if input.frames.is_empty() {
                // An empty segment carries nothing; release what a past frame reserved.
                input.frames = BytesMut::new();
            }
        }
    }
}

/// Packs a connection's outgoing frames into segments: whole frames share self-contained
/// segments of up to [`SEGMENT_PAYLOAD_MAX`] bytes; a larger frame goes out as a run of
/// segments that are not self-contained.
#[derive(Debug)]
pub struct SegmentWriter {
    compression: Option<Compression>,
    /// Whole frames of the self-contained segment being filled.
    pending: BytesMut,
}

impl SegmentWriter {
    /// A writer compressing segments with `compression`.
    pub fn new(compression: Option<Compression>) -> SegmentWriter {
        SegmentWriter {
            compression,
            pending: BytesMut::new(),
        }
    }

    /// The negotiated compression.
    pub fn compression(&self) -> Option<Compression> {
        self.compression
    }

    /// Frame bytes waiting for [`seal`](Self::seal).
    pub fn pending_len(&self) -> usize {
        self.pending.len()
    }

    /// Adds one whole frame. If it does not fit the segment being filled, that segment is
    /// sealed into `out` first; a frame larger than a segment is sealed into `out` at once
    /// as a run of segments.
    pub fn push_frame(&mut self, out: &mut BytesMut, frame: &[u8]) {
        if frame.len() > SEGMENT_PAYLOAD_MAX {
            self.seal(out);
            for chunk in frame.chunks(SEGMENT_PAYLOAD_MAX) {
                encode_segment(out, chunk, false, self.compression);
            }
            return;
        }
        if self.pending.len() + frame.len() > SEGMENT_PAYLOAD_MAX {
            self.seal(out);
        }
        self.pending.extend_from_slice(frame);
    }

    /// Appends the segment being filled, if it holds any frame, to `out`.
    pub fn seal(&mut self, out: &mut BytesMut) {
        if !self.pending.is_empty() {
            encode_segment(out, &self.pending, true, self.compression);
            self.pending.clear();
        }
    }
}
