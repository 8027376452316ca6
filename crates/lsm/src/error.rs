//! The engine's errors. Corruption is typed and names the file and offset; a failed fsync
//! poisons the engine until it is reopened; a full disk is reported as such and clears once
//! space returns.

use std::io;
use std::path::PathBuf;

/// Everything that can go wrong in the engine.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An I/O operation failed.
    #[error("I/O error while {op} {path}: {source}")]
    Io {
        /// What the engine was doing ("writing", "syncing", "opening", …).
        op: &'static str,
        /// The file or directory involved.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: io::Error,
    },
    /// A checksum did not match: the bytes on disk are not the bytes written.
    #[error(
        "checksum mismatch in {} at offset {offset}: expected {expected:#010x}, found {actual:#010x}",
        file.display()
    )]
    ChecksumMismatch {
        /// The file holding the bad bytes.
        file: PathBuf,
        /// Where the checksummed region starts.
        offset: u64,
        /// The checksum stored on disk.
        expected: u32,
        /// The checksum of the bytes read.
        actual: u32,
    },
    /// Bytes are structurally invalid (bad length, magic, varint, ordering…).
    #[error("corrupt data in {} at offset {offset}: {reason}", file.display())]
    Corruption {
        /// The file holding the bad bytes.
        file: PathBuf,
        /// Where the bad structure was found.
        offset: u64,
        /// What is wrong.
        reason: String,
    },
    /// The disk is full. Nothing acknowledged was lost; writes are refused until space
    /// returns, after which the engine resumes by itself.
    #[error("disk full while {op} {}: writes are refused until space is freed", path.display())]
    NoSpace {
        /// What the engine was doing.
        op: &'static str,
        /// The file involved.
        path: PathBuf,
    },
    /// An earlier write or fsync failed, so the state on disk is unknown; the engine refuses
    /// writes until it is reopened (which recovers from what is durable).
    #[error("writes refused after an earlier failure ({cause}); reopen the database to recover")]
    Poisoned {
        /// The failure that poisoned the engine.
        cause: String,
    },
    /// The caller passed something the engine cannot accept.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// The database was closed.
    #[error("the database is closed")]
    Closed,
    /// A write waited in a stall longer than the engine's `write_stall_timeout` and was
    /// not applied: the node is out of memtable space, or a partition's flushes or
    /// level-0 compactions are behind. Nothing was written; retrying later is safe.
    #[error("write not applied: stalled for {} ms ({reason})", waited.as_millis())]
    WriteStalled {
        /// How long the write waited.
        waited: std::time::Duration,
        /// What it waited for.
        reason: &'static str,
    },
}

/// The engine's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// Wraps an I/O error, recognising a full disk.
    pub fn io(op: &'static str, path: impl Into<PathBuf>, source: io::Error) -> Self {
        let path = path.into();
        if source.raw_os_error() == Some(libc_enospc())
            || source.kind() == io::ErrorKind::StorageFull
        {
            Error::NoSpace { op, path }
        } else {
            Error::Io { op, path, source }
        }
    }

    /// A structural corruption error.
    pub fn corruption(file: impl Into<PathBuf>, offset: u64, reason: impl Into<String>) -> Self {
        Error::Corruption {
            file: file.into(),
            offset,
            reason: reason.into(),
        }
    }

    /// Whether this error means the bytes on disk are damaged.
    pub fn is_corruption(&self) -> bool {
        matches!(
            self,
            Error::ChecksumMismatch { .. } | Error::Corruption { .. }
        )
    }

    /// Whether this error is a write refused after waiting out its stall timeout
    /// (temporary: nothing was written, retry later).
    pub fn is_write_stalled(&self) -> bool {
        matches!(self, Error::WriteStalled { .. })
    }

    /// Whether this error is a full disk (temporary: retry once space is freed).
    pub fn is_no_space(&self) -> bool {
        matches!(self, Error::NoSpace { .. })
    }

    /// A copy suitable for reporting the same failure to several callers.
    pub fn duplicate(&self) -> Self {
        match self {
            Error::Io { op, path, source } => Error::Io {
                op,
                path: path.clone(),
                source: io::Error::new(source.kind(), source.to_string()),
            },
            Error::ChecksumMismatch {
                file,
                offset,
                expected,
                actual,
            } => Error::ChecksumMismatch {
                file: file.clone(),
                offset: *offset,
                expected: *expected,
                actual: *actual,
            },
            Error::Corruption {
                file,
                offset,
                reason,
            } => Error::Corruption {
                file: file.clone(),
                offset: *offset,
                reason: reason.clone(),
            },
            Error::NoSpace { op, path } => Error::NoSpace {
                op,
                path: path.clone(),
            },
            Error::Poisoned { cause } => Error::Poisoned {
                cause: cause.clone(),
            },
            Error::InvalidArgument(s) => Error::InvalidArgument(s.clone()),
            Error::Closed => Error::Closed,
            Error::WriteStalled { waited, reason } => Error::WriteStalled {
                waited: *waited,
                reason,
            },
        }
    }
}

/// `ENOSPC` on Linux; kept as a function so the crate needs no libc dependency.
const fn libc_enospc() -> i32 {
    28
}
