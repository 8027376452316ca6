//! Errors of the row layer, one enum per operation family: building and decoding keys,
//! decoding fragments, resolving a partition's entries.

use mosaic_types::{CqlType, ValueError};

/// Why a key could not be built or decoded.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum KeyError {
    /// The key ends before the part being read.
    #[error("key truncated at offset {offset}")]
    Truncated {
        /// Where more bytes were needed.
        offset: usize,
    },
    /// A structural tag byte that is not valid at this position.
    #[error("unexpected tag {tag:#04x} at offset {offset}")]
    BadTag {
        /// The byte found.
        tag: u8,
        /// Its offset in the key.
        offset: usize,
    },
    /// An encoded component that is not the canonical encoding of a value of its type.
    #[error("invalid {ty} component at offset {offset}: {reason}")]
    BadComponent {
        /// The component's type.
        ty: CqlType,
        /// Where the problem was found.
        offset: usize,
        /// What is wrong.
        reason: &'static str,
    },
    /// An encoded frozen collection, tuple or user-defined type that is not the canonical
    /// encoding of a value of its type.
    #[error("invalid {ty} component at offset {offset}: {reason}")]
    BadFrozenComponent {
        /// The component's type (its CQL name).
        ty: String,
        /// Where the problem was found.
        offset: usize,
        /// What is wrong.
        reason: &'static str,
    },
    /// Bytes left over after a complete key.
    #[error("{extra} trailing bytes after the key")]
    TrailingBytes {
        /// How many.
        extra: usize,
    },
    /// A wrong number of key values for the schema.
    #[error("{actual} {what} values given, the schema has {expected} {what} columns")]
    WrongArity {
        /// `"partition key"` or `"clustering"`.
        what: &'static str,
        /// Columns in the schema.
        expected: usize,
        /// Values given.
        actual: usize,
    },
    /// A key value of the wrong type.
    #[error(transparent)]
    Value(#[from] ValueError),
    /// A partition key longer than Cassandra allows.
    #[error("partition key is {len} bytes, more than the maximum of 65535")]
    PartitionKeyTooLong {
        /// The serialized key's length.
        len: usize,
    },
    /// A range whose start does not sort before its end.
    #[error("range start does not sort before its end")]
    InvertedBounds,
    /// A slice with an operator but no value to compare with.
    #[error("a clustering slice needs at least one value")]
    EmptySlicePrefix,
}

/// Why stored fragment bytes could not be decoded.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FragmentError {
    /// Zero bytes.
    #[error("empty fragment")]
    Empty,
    /// A format version this build does not know.
    #[error("unknown fragment format version {version}")]
    UnknownVersion {
        /// The first byte.
        version: u8,
    },
    /// The bytes end inside a field.
    #[error("fragment truncated at offset {offset}")]
    Truncated {
        /// Where more bytes were needed.
        offset: usize,
    },
    /// A field with an impossible or non-canonical value.
    #[error("invalid fragment at offset {offset}: {reason}")]
    Invalid {
        /// Where the field starts.
        offset: usize,
        /// What is wrong.
        reason: &'static str,
    },
}

/// Why the entries of a partition could not be resolved into rows.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ResolveError {
    /// An entry's key does not decode under the schema.
    #[error("bad key: {0}")]
    Key(#[from] KeyError),
    /// An entry's value does not decode.
    #[error("bad fragment: {0}")]
    Fragment(#[from] FragmentError),
    /// Entries not in strictly ascending key order.
    #[error("entries are not in ascending key order")]
    OutOfOrder,
    /// An entry of another partition than the first entry's.
    #[error("entry belongs to another partition")]
    OtherPartition,
    /// A fragment whose kind does not fit its key (e.g. a row fragment at a partition key).
    #[error("fragment kind {kind} does not fit its key")]
    KindMismatch {
        /// The fragment's kind name.
        kind: &'static str,
    },
    /// A key that never holds data (a range limit).
    #[error("entry at a bound key, which never holds data")]
    UnexpectedBound,
}
