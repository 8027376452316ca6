//! The notations of the spec's §3 (`[short]`, `[string]`, `[bytes]`, `[value]`, maps, …):
//! a bounds-checked [`Reader`] over a frame body and `put_*` writers for responses.
//!
//! The reader never panics and never allocates for more elements than the remaining bytes
//! could hold, whatever counts and lengths the client claims.

use std::net::{IpAddr, SocketAddr};

use bytes::{Buf, BufMut, Bytes, BytesMut};

use super::types::Consistency;
use super::{ErrorKind, ErrorResponse};

/// Why a request body could not be decoded. All of these are answered with a protocol
/// error (0x000A) on the request's stream; the connection stays usable because the frame
/// was consumed whole.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BodyError {
    /// The body ended inside a field.
    #[error("Not enough bytes to read {what}: need {needed}, have {remaining}")]
    Truncated {
        /// The field being read.
        what: &'static str,
        /// Bytes it needs.
        needed: u64,
        /// Bytes left in the body.
        remaining: usize,
    },
    /// A `[string]` or `[long string]` that isn't UTF-8.
    #[error("Cannot decode {what}: invalid UTF-8")]
    InvalidUtf8 {
        /// The field being read.
        what: &'static str,
    },
    /// A `[long string]` with a negative length.
    #[error("Invalid length {length} for {what}")]
    NegativeLength {
        /// The field being read.
        what: &'static str,
        /// The length.
        length: i32,
    },
    /// A `[value]` length below -2 (v4).
    #[error("Invalid ByteBuf length {length}")]
    InvalidValueLength {
        /// The length.
        length: i32,
    },
    /// A `[consistency]` code outside 0x0000..=0x000A.
    #[error("Unknown code {code} for a consistency level")]
    UnknownConsistency {
        /// The code.
        code: u16,
    },
    /// A BATCH type other than 0 (logged), 1 (unlogged) and 2 (counter).
    #[error("Unknown batch type {code}")]
    UnknownBatchType {
        /// The type byte.
        code: u8,
    },
    /// A BATCH statement kind other than 0 (query string) and 1 (prepared id).
    #[error("Invalid query kind in BATCH messages. Must be 0 or 1 but got {kind}")]
    UnknownBatchStatementKind {
        /// The kind byte.
        kind: u8,
    },
    /// A REGISTER event type we don't know.
    #[error("Unknown event type {name:?}")]
    UnknownEventType {
        /// The name sent.
        name: String,
    },
    /// The default timestamp `i64::MIN`, which Cassandra reserves.
    #[error("Out of bound timestamp, must be in [{}, {}] (got {timestamp})", i64::MIN + 1, i64::MAX)]
    InvalidTimestamp {
        /// The timestamp sent.
        timestamp: i64,
    },
    /// STARTUP without `CQL_VERSION`.
    #[error("Missing value CQL_VERSION in STARTUP message")]
    MissingCqlVersion,
    /// STARTUP asking for Snappy, which we don't offer in SUPPORTED.
    #[error("This instance does not support Snappy compression")]
    SnappyUnsupported,
    /// STARTUP asking for a compression algorithm nobody knows.
    #[error("Unknown compression algorithm: {name}")]
    UnknownCompression {
        /// The algorithm named.
        name: String,
    },
    /// The compression flag is set but no compression was negotiated (or on STARTUP).
    #[error("Compressed frame received but no compression was negotiated at STARTUP")]
    CompressedWithoutNegotiation,
    /// The LZ4 block is corrupt or doesn't decompress to the announced length.
    #[error("Cannot decompress frame body: {reason}")]
    Decompression {
        /// What went wrong.
        reason: String,
    },
    /// The announced uncompressed length is beyond the frame-length limit or beyond what
    /// the compressed bytes could possibly expand to.
    #[error("Decompressed body length {length} is out of bounds (max {max})")]
    DecompressedTooLarge {
        /// The announced length.
        length: u64,
        /// The bound it broke.
        max: u64,
    },
}

impl BodyError {
    /// The ERROR body answering this: a protocol error (0x000A) with the `Display` text.
    pub fn to_error_response(&self) -> ErrorResponse {
        ErrorResponse::new(ErrorKind::Protocol, self.to_string())
    }
}

/// Why a response could not be encoded: a field beyond what its notation can carry. These
/// are bugs or absurd data on our side, never client input; nothing is left in the buffer.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum EncodeError {
    /// A `[string]` over 65,535 bytes.
    #[error("string of {length} bytes does not fit a [string]")]
    StringTooLong {
        /// Its length.
        length: usize,
    },
    /// A list, map or short-bytes over 65,535 elements or bytes.
    #[error("{what} of {length} elements does not fit a [short] count")]
    TooManyElements {
        /// Which field.
        what: &'static str,
        /// Its length.
        length: usize,
    },
    /// A `[bytes]` or `[long string]` over `i32::MAX` bytes.
    #[error("value of {length} bytes does not fit an [int] length")]
    ValueTooLong {
        /// Its length.
        length: usize,
    },
    /// A frame body over `i32::MAX` bytes.
    #[error("frame body of {length} bytes does not fit the length field")]
    FrameTooLarge {
        /// Its length.
        length: usize,
    },
}

/// A cursor over a body. Fields come out as owned strings or as zero-copy [`Bytes`]
/// slices of the frame. Cloning is cheap (a reference count), for backtracking.
#[derive(Clone)]
pub(crate) struct Reader {
    buf: Bytes,
}

impl Reader {
    pub(crate) fn new(buf: Bytes) -> Reader {
        Reader { buf }
    }

    #[cfg(test)]
    pub(crate) fn remaining(&self) -> usize {
        self.buf.len()
    }

    fn need(&self, what: &'static str, needed: usize) -> Result<(), BodyError> {
        if self.buf.len() < needed {
            return Err(BodyError::Truncated {
                what,
                needed: needed as u64,
                remaining: self.buf.len(),
            });
        }
        Ok(())
    }

    pub(crate) fn u8(&mut self, what: &'static str) -> Result<u8, BodyError> {
        self.need(what, 1)?;
        Ok(self.buf.get_u8())
    }

    /// `[short]`: unsigned.
    pub(crate) fn short(&mut self, what: &'static str) -> Result<u16, BodyError> {
        self.need(what, 2)?;
        Ok(self.buf.get_u16())
    }

    /// `[int]`.
    pub(crate) fn int(&mut self, what: &'static str) -> Result<i32, BodyError> {
        self.need(what, 4)?;
        Ok(self.buf.get_i32())
    }

    /// `[long]`.
    pub(crate) fn long(&mut self, what: &'static str) -> Result<i64, BodyError> {
        self.need(what, 8)?;
        Ok(self.buf.get_i64())
    }

    /// `n` raw bytes.
    pub(crate) fn take(&mut self, what: &'static str, n: usize) -> Result<Bytes, BodyError> {
        self.need(what, n)?;
        Ok(self.buf.split_to(n))
    }

    fn utf8(what: &'static str, bytes: Bytes) -> Result<String, BodyError> {
        String::from_utf8(bytes.into()).map_err(|_| BodyError::InvalidUtf8 { what })
    }

    /// `[string]`.
    pub(crate) fn string(&mut self, what: &'static str) -> Result<String, BodyError> {
        let n = self.short(what)?;
        let bytes = self.take(what, usize::from(n))?;
        Self::utf8(what, bytes)
    }

    /// `[long string]`.
    pub(crate) fn long_string(&mut self, what: &'static str) -> Result<String, BodyError> {
        let n = self.int(what)?;
        let n = usize::try_from(n).map_err(|_| BodyError::NegativeLength { what, length: n })?;
        let bytes = self.take(what, n)?;
        Self::utf8(what, bytes)
    }

    /// A capacity for `count` elements of at least `min_len` bytes each that the remaining
    /// bytes could actually hold: claimed counts never drive allocation.
    pub(crate) fn capacity(&self, count: usize, min_len: usize) -> usize {
        count.min(self.buf.len() / min_len.max(1))
    }

    /// `[string list]`.
    pub(crate) fn string_list(&mut self, what: &'static str) -> Result<Vec<String>, BodyError> {
        let n = usize::from(self.short(what)?);
        let mut out = Vec::with_capacity(self.capacity(n, 2));
        for _ in 0..n {
            out.push(self.string(what)?);
        }
        Ok(out)
    }

    /// `[string map]`, in wire order.
    pub(crate) fn string_map(
        &mut self,
        what: &'static str,
    ) -> Result<Vec<(String, String)>, BodyError> {
        let n = usize::from(self.short(what)?);
        let mut out = Vec::with_capacity(self.capacity(n, 4));
        for _ in 0..n {
            let k = self.string(what)?;
            let v = self.string(what)?;
            out.push((k, v));
        }
        Ok(out)
    }

    /// `[bytes]`: a negative length is `null`.
    pub(crate) fn bytes(&mut self, what: &'static str) -> Result<Option<Bytes>, BodyError> {
        let n = self.int(what)?;
        match usize::try_from(n) {
            Ok(n) => Ok(Some(self.take(what, n)?)),
            Err(_) => Ok(None),
        }
    }

    /// `[short bytes]`.
    pub(crate) fn short_bytes(&mut self, what: &'static str) -> Result<Bytes, BodyError> {
        let n = self.short(what)?;
        self.take(what, usize::from(n))
    }

    /// `[bytes map]`, skipped (custom payloads: Cassandra's default handler ignores them).
    pub(crate) fn skip_bytes_map(&mut self) -> Result<(), BodyError> {
        let n = self.short("custom payload")?;
        for _ in 0..n {
            self.short_bytes("custom payload key")?;
            self.bytes("custom payload value")?;
        }
        Ok(())
    }

    /// `[consistency]`.
    pub(crate) fn consistency(&mut self, what: &'static str) -> Result<Consistency, BodyError> {
        let code = self.short(what)?;
        Consistency::from_code(code).ok_or(BodyError::UnknownConsistency { code })
    }

    /// `[inet]` (used by the test decoder of events).
    #[cfg(test)]
    pub(crate) fn inet(&mut self, what: &'static str) -> Result<SocketAddr, BodyError> {
        let n = self.u8(what)?;
        let addr = self.take(what, usize::from(n))?;
        let ip = match addr.len() {
            4 => IpAddr::from(
                <[u8; 4]>::try_from(&addr[..]).map_err(|_| BodyError::InvalidUtf8 { what })?,
            ),
            16 => IpAddr::from(
                <[u8; 16]>::try_from(&addr[..]).map_err(|_| BodyError::InvalidUtf8 { what })?,
            ),
            _ => return Err(BodyError::InvalidUtf8 { what }),
        };
        let port = self.int(what)?;
        Ok(SocketAddr::new(ip, u16::try_from(port).unwrap_or(0)))
    }
}

/// `[short]` count of a list.
fn short_len(what: &'static str, length: usize) -> Result<u16, EncodeError> {
    u16::try_from(length).map_err(|_| EncodeError::TooManyElements { what, length })
}

/// `[int]` length of a value.
pub(crate) fn int_len(length: usize) -> Result<i32, EncodeError> {
    i32::try_from(length).map_err(|_| EncodeError::ValueTooLong { length })
}

/// `[string]`.
pub(crate) fn put_string(out: &mut BytesMut, s: &str) -> Result<(), EncodeError> {
    let n = u16::try_from(s.len()).map_err(|_| EncodeError::StringTooLong { length: s.len() })?;
    out.put_u16(n);
    out.extend_from_slice(s.as_bytes());
    Ok(())
}

/// `[string]`, cut at a character boundary to fit: for human-readable messages only.
pub(crate) fn put_string_lossy(out: &mut BytesMut, s: &str) {
    let mut end = s.len().min(usize::from(u16::MAX));
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    let s = s.get(..end).unwrap_or_default();
    out.put_u16(end as u16);
    out.extend_from_slice(s.as_bytes());
}

/// `[long string]`.
#[cfg(test)]
pub(crate) fn put_long_string(out: &mut BytesMut, s: &str) -> Result<(), EncodeError> {
    out.put_i32(int_len(s.len())?);
    out.extend_from_slice(s.as_bytes());
    Ok(())
}

/// `[string list]`.
pub(crate) fn put_string_list<S: AsRef<str>>(
    out: &mut BytesMut,
    list: &[S],
) -> Result<(), EncodeError> {
    out.put_u16(short_len("string list", list.len())?);
    for s in list {
        put_string(out, s.as_ref())?;
    }
    Ok(())
}

/// `[bytes]`: `None` is `null`.
pub(crate) fn put_bytes(out: &mut BytesMut, value: Option<&[u8]>) -> Result<(), EncodeError> {
    match value {
        Some(v) => {
            out.put_i32(int_len(v.len())?);
            out.extend_from_slice(v);
        }
        None => out.put_i32(-1),
    }
    Ok(())
}

/// `[short bytes]`.
pub(crate) fn put_short_bytes(out: &mut BytesMut, value: &[u8]) -> Result<(), EncodeError> {
    out.put_u16(short_len("short bytes", value.len())?);
    out.extend_from_slice(value);
    Ok(())
}

/// `[inet]`: address length, address, port as an `[int]`.
pub(crate) fn put_inet(out: &mut BytesMut, addr: SocketAddr) {
    match addr.ip() {
        IpAddr::V4(ip) => {
            out.put_u8(4);
            out.extend_from_slice(&ip.octets());
        }
        IpAddr::V6(ip) => {
            out.put_u8(16);
            out.extend_from_slice(&ip.octets());
        }
    }
    out.put_i32(i32::from(addr.port()));
}
