//! Mosaic's shared vocabulary: tokens, ids, consistency levels, policy names, write
//! timestamps, CQL types and CQL values.
//!
//! Owns the definitions every other crate must agree on bit for bit:
//! - [`token_of`]: Cassandra's Murmur3 partitioner token of a partition key (drivers route
//!   by it, so it must match Cassandra exactly) and [`compose_partition_key`] for compound
//!   keys;
//! - [`CqlType`] and [`CqlValue`]: the native CQL types, their names, their v4
//!   native-protocol serialization with Cassandra's validation, and Cassandra's ordering of
//!   values ([`CqlValue::cql_cmp`]);
//! - [`Varint`] and [`Decimal`]: arbitrary-precision numbers without a bignum dependency;
//! - [`CqlDuration`], [`parse_time`]/[`format_time`] and [`parse_inet`]: the `duration`,
//!   `time` and `inet` types' literals and text, as Cassandra reads and prints them;
//! - [`Timestamp`]: write timestamps in microseconds;
//! - [`ConsistencyLevel`]: one enum from the CQL frame to the coordinator;
//! - [`HostId`], [`TableId`]: the ids that cross crates, as newtypes;
//! - [`Layout`], [`ReplicaSelection`]: policies named in config and CQL options, parsed
//!   once into enums whose parse errors name the valid values;
//! - [`SpeculativeRetry`]: the `speculative_retry` table option, parsed and printed as
//!   Cassandra does.
//!
//! Pure data and functions: no I/O, no clock, no dependency on any other Mosaic crate, so
//! every layer (storage, scheduling, cluster, CQL) can use it.
#![deny(clippy::indexing_slicing)]

pub mod consistency;
pub mod cql_type;
pub mod data_type;
pub mod duration;
pub mod ids;
pub mod inet;
pub mod layout;
pub mod number;
pub mod speculative;
pub mod time;
pub mod time_of_day;
pub mod token;
pub mod value;

pub use consistency::{ConsistencyLevel, ParseConsistencyError};
pub use cql_type::{CqlType, ParseTypeError};
pub use data_type::{
    normalize_map, normalize_set, quote_name, DataType, InvalidTypeError, ParseDataTypeError,
    UserType,
};
pub use duration::{CqlDuration, DurationError, ParseDurationError};
pub use ids::{HostId, ParseIdError, TableId};
pub use inet::{java_host_address, parse_inet, ParseInetError};
pub use layout::{
    format_replica_orders, parse_replica_orders, ErasureCode, Layout, LayoutOption, OptionKind,
    ParsePolicyError, ReplicaSelection,
};
pub use number::{Decimal, DecimalParts, NumberError, Varint};
pub use speculative::SpeculativeRetry;
pub use time::{secs_from_micros, Timestamp, MICROS_PER_SEC};
pub use time_of_day::{format_time, parse_time, ParseTimeError, NANOS_PER_DAY};
pub use token::{compose_partition_key, token_of, Token, PARTITION_KEY_LEN_MAX};
pub use value::{uuid_version, CqlValue, ValueError, DATE_EPOCH};
