//! Write timestamps and local times.
//!
//! Two clocks meet in the row layer, with Cassandra's units:
//! - the **write timestamp** of a cell, row marker or tombstone: microseconds since the Unix
//!   epoch, chosen by the client or the coordinator, compared across replicas for
//!   last-write-wins ([`Timestamp`]);
//! - the **local time** of a replica, in whole seconds since the epoch, used for TTL
//!   expiry and tombstone garbage collection (`*_secs` fields, plain `i64`).

use std::fmt;

/// Microseconds in a second.
pub const MICROS_PER_SEC: i64 = 1_000_000;

/// A write timestamp: microseconds since the Unix epoch (the unit of CQL's
/// `USING TIMESTAMP` and `WRITETIME()`). May be negative: Cassandra accepts any `long`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp(pub i64);

impl Timestamp {
    /// The smallest timestamp.
    pub const MIN: Timestamp = Timestamp(i64::MIN);
    /// The largest timestamp.
    pub const MAX: Timestamp = Timestamp(i64::MAX);

    /// A timestamp from microseconds since the epoch.
    pub fn from_micros(micros: i64) -> Timestamp {
        Timestamp(micros)
    }

    /// Microseconds since the epoch.
    pub fn as_micros(self) -> i64 {
        self.0
    }

    /// A timestamp from milliseconds since the epoch (saturating).
    pub fn from_millis(millis: i64) -> Timestamp {
        Timestamp(millis.saturating_mul(1_000))
    }

    /// Whole seconds since the epoch, rounded down (so negative timestamps stay ordered).
    pub fn as_secs_floor(self) -> i64 {
        self.0.div_euclid(MICROS_PER_SEC)
    }

    /// The timestamp as the storage engine's unsigned version timestamp. The engine only
    /// uses it to order whole-key versions, so negative timestamps (rare, allowed by
    /// Cassandra) all map to 0.
    pub fn to_engine(self) -> u64 {
        u64::try_from(self.0).unwrap_or(0)
    }

    /// A timestamp from the engine's unsigned version timestamp (saturating).
    pub fn from_engine(ts: u64) -> Timestamp {
        Timestamp(i64::try_from(ts).unwrap_or(i64::MAX))
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}µs", self.0)
    }
}

/// Local time in whole seconds from an engine clock reading in microseconds (saturating).
pub fn secs_from_micros(micros: u64) -> i64 {
    i64::try_from(micros / MICROS_PER_SEC as u64).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conversions_keep_units_straight() {
        assert_eq!(Timestamp::from_millis(1_500).as_micros(), 1_500_000);
        assert_eq!(Timestamp(-1).as_secs_floor(), -1);
        assert_eq!(Timestamp(1_999_999).as_secs_floor(), 1);
        assert_eq!(Timestamp(-5).to_engine(), 0);
        assert_eq!(Timestamp::from_engine(u64::MAX), Timestamp::MAX);
        assert_eq!(secs_from_micros(2_500_000), 2);
    }
}
