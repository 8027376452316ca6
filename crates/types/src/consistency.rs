//! Consistency levels: one enum from the CQL frame to the coordinator.
//!
//! The variants are the native protocol's `[consistency]` values (§3 of the v4 spec); the
//! wire codes are converted only at the protocol edge ([`ConsistencyLevel::from_code`],
//! [`ConsistencyLevel::code`]). The coordinator asks [`ConsistencyLevel::block_for`] how many
//! replicas must answer.

use std::fmt;
use std::str::FromStr;

/// A consistency level.
// Not `#[non_exhaustive]`: the set is the protocol's, and exhaustive matches let the
// compiler find every place a level's meaning is decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ConsistencyLevel {
    /// A write stored anywhere, a hint included (writes only). Code 0x0000.
    Any,
    /// One replica. 0x0001.
    One,
    /// Two replicas. 0x0002.
    Two,
    /// Three replicas. 0x0003.
    Three,
    /// A majority of the replicas. 0x0004.
    Quorum,
    /// Every replica. 0x0005.
    All,
    /// A majority of the local datacenter's replicas. 0x0006.
    LocalQuorum,
    /// A majority in each datacenter. 0x0007.
    EachQuorum,
    /// Paxos serial (counted as QUORUM where a read asks for it). 0x0008.
    Serial,
    /// Paxos local serial (as `Serial`). 0x0009.
    LocalSerial,
    /// One replica of the local datacenter. 0x000A.
    LocalOne,
}

impl ConsistencyLevel {
    /// Every level, in wire-code order.
    pub const ALL: [ConsistencyLevel; 11] = [
        ConsistencyLevel::Any,
        ConsistencyLevel::One,
        ConsistencyLevel::Two,
        ConsistencyLevel::Three,
        ConsistencyLevel::Quorum,
        ConsistencyLevel::All,
        ConsistencyLevel::LocalQuorum,
        ConsistencyLevel::EachQuorum,
        ConsistencyLevel::Serial,
        ConsistencyLevel::LocalSerial,
        ConsistencyLevel::LocalOne,
    ];

    /// The native protocol's code.
    pub fn code(self) -> u16 {
        match self {
            ConsistencyLevel::Any => 0x0000,
            ConsistencyLevel::One => 0x0001,
            ConsistencyLevel::Two => 0x0002,
            ConsistencyLevel::Three => 0x0003,
            ConsistencyLevel::Quorum => 0x0004,
            ConsistencyLevel::All => 0x0005,
            ConsistencyLevel::LocalQuorum => 0x0006,
            ConsistencyLevel::EachQuorum => 0x0007,
            ConsistencyLevel::Serial => 0x0008,
            ConsistencyLevel::LocalSerial => 0x0009,
            ConsistencyLevel::LocalOne => 0x000A,
        }
    }

    /// The level for a native protocol code.
    pub fn from_code(code: u16) -> Option<ConsistencyLevel> {
        ConsistencyLevel::ALL.into_iter().find(|c| c.code() == code)
    }

    /// Cassandra's name (`QUORUM`, `LOCAL_ONE`, …), as in its error messages.
    pub fn name(self) -> &'static str {
        match self {
            ConsistencyLevel::Any => "ANY",
            ConsistencyLevel::One => "ONE",
            ConsistencyLevel::Two => "TWO",
            ConsistencyLevel::Three => "THREE",
            ConsistencyLevel::Quorum => "QUORUM",
            ConsistencyLevel::All => "ALL",
            ConsistencyLevel::LocalQuorum => "LOCAL_QUORUM",
            ConsistencyLevel::EachQuorum => "EACH_QUORUM",
            ConsistencyLevel::Serial => "SERIAL",
            ConsistencyLevel::LocalSerial => "LOCAL_SERIAL",
            ConsistencyLevel::LocalOne => "LOCAL_ONE",
        }
    }

    /// Replicas that must answer for replication factor `rf`. One datacenter: the LOCAL_*
    /// levels count the same replicas as the plain ones.
    pub fn block_for(self, rf: usize) -> usize {
        let quorum = rf / 2 + 1;
        match self {
            ConsistencyLevel::Any | ConsistencyLevel::One | ConsistencyLevel::LocalOne => 1,
            ConsistencyLevel::Two => 2,
            ConsistencyLevel::Three => 3,
            ConsistencyLevel::Quorum
            | ConsistencyLevel::LocalQuorum
            | ConsistencyLevel::EachQuorum
            | ConsistencyLevel::Serial
            | ConsistencyLevel::LocalSerial => quorum,
            ConsistencyLevel::All => rf,
        }
    }
}

impl fmt::Display for ConsistencyLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A consistency level name that is not one.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown consistency level `{0}`; valid levels: ANY, ONE, TWO, THREE, QUORUM, ALL, LOCAL_QUORUM, EACH_QUORUM, SERIAL, LOCAL_SERIAL, LOCAL_ONE")]
pub struct ParseConsistencyError(pub String);

impl FromStr for ConsistencyLevel {
    type Err = ParseConsistencyError;

    /// Parses a name case-insensitively (`quorum`, `LOCAL_ONE`).
    fn from_str(s: &str) -> Result<ConsistencyLevel, ParseConsistencyError> {
        ConsistencyLevel::ALL
            .into_iter()
            .find(|c| c.name().eq_ignore_ascii_case(s))
            .ok_or_else(|| ParseConsistencyError(s.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_for_follows_cassandra() {
        use ConsistencyLevel as C;
        assert_eq!(C::One.block_for(3), 1);
        assert_eq!(C::Quorum.block_for(3), 2);
        assert_eq!(C::Quorum.block_for(4), 3);
        assert_eq!(C::LocalQuorum.block_for(5), 3);
        assert_eq!(C::All.block_for(3), 3);
        assert_eq!(C::Three.block_for(1), 3);
        assert_eq!(C::Quorum.block_for(1), 1);
    }

    #[test]
    fn codes_and_names_round_trip() {
        for c in ConsistencyLevel::ALL {
            assert_eq!(ConsistencyLevel::from_code(c.code()), Some(c));
            assert_eq!(c.name().to_lowercase().parse::<ConsistencyLevel>(), Ok(c));
        }
        assert_eq!(ConsistencyLevel::from_code(0x000B), None);
        let e = "most".parse::<ConsistencyLevel>().unwrap_err().to_string();
        assert!(e.contains("LOCAL_QUORUM"), "{e}");
    }
}
