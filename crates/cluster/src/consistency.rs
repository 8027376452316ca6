//! Consistency levels and the errors a coordinator answers with.
//!
//! Owns how many replicas each level waits for and the failures a client sees, with the
//! counts Cassandra reports (`Unavailable`: required and alive; timeouts: received and
//! block-for). One datacenter: LOCAL_* levels count the same replicas as the plain ones.

/// A consistency level.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ConsistencyLevel {
    /// A write stored anywhere, a hint included (writes only).
    Any,
    /// One replica.
    One,
    /// Two replicas.
    Two,
    /// Three replicas.
    Three,
    /// A majority of the replicas.
    Quorum,
    /// Every replica.
    All,
    /// One replica of the local datacenter.
    LocalOne,
    /// A majority of the local datacenter's replicas.
    LocalQuorum,
    /// A majority in each datacenter.
    EachQuorum,
    /// Paxos serial (not served; counted as QUORUM where a read asks for it).
    Serial,
    /// Paxos local serial (as `Serial`).
    LocalSerial,
}

impl ConsistencyLevel {
    /// Replicas that must answer for replication factor `rf`.
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

    /// The protocol name (`QUORUM`, `LOCAL_ONE`, …).
    pub fn name(self) -> &'static str {
        match self {
            ConsistencyLevel::Any => "ANY",
            ConsistencyLevel::One => "ONE",
            ConsistencyLevel::Two => "TWO",
            ConsistencyLevel::Three => "THREE",
            ConsistencyLevel::Quorum => "QUORUM",
            ConsistencyLevel::All => "ALL",
            ConsistencyLevel::LocalOne => "LOCAL_ONE",
            ConsistencyLevel::LocalQuorum => "LOCAL_QUORUM",
            ConsistencyLevel::EachQuorum => "EACH_QUORUM",
            ConsistencyLevel::Serial => "SERIAL",
            ConsistencyLevel::LocalSerial => "LOCAL_SERIAL",
        }
    }
}

/// Why a coordinated request failed, as the client will be told.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ClusterError {
    /// Too few replicas alive to even try (nothing was sent).
    #[error("Cannot achieve consistency level {}: {required} replicas required, {alive} alive", .consistency.name())]
    Unavailable {
        /// The level asked for.
        consistency: ConsistencyLevel,
        /// Replicas it needs.
        required: usize,
        /// Replicas alive.
        alive: usize,
    },
    /// Not enough replicas acknowledged in time (the write may still be applied).
    #[error("Operation timed out - received only {received} responses of {block_for} required at {}", .consistency.name())]
    WriteTimeout {
        /// The level asked for.
        consistency: ConsistencyLevel,
        /// Acknowledgements received.
        received: usize,
        /// Acknowledgements needed.
        block_for: usize,
    },
    /// Not enough replicas answered in time.
    #[error("Operation timed out - received only {received} responses of {block_for} required at {}", .consistency.name())]
    ReadTimeout {
        /// The level asked for.
        consistency: ConsistencyLevel,
        /// Answers received.
        received: usize,
        /// Answers needed.
        block_for: usize,
        /// Whether the data replica answered.
        data_present: bool,
    },
    /// Replicas refused the write (storage failure): too few can still acknowledge it.
    #[error("Write failed at {}: {received} acknowledged, {failed} replicas failed, {block_for} required: {reason}", .consistency.name())]
    WriteFailure {
        /// The level asked for.
        consistency: ConsistencyLevel,
        /// Acknowledgements received.
        received: usize,
        /// Acknowledgements needed.
        block_for: usize,
        /// Replicas that failed.
        failed: usize,
        /// The first failure.
        reason: String,
    },
    /// Replicas failed the read.
    #[error("Read failed at {}: {received} answered, {failed} replicas failed, {block_for} required: {reason}", .consistency.name())]
    ReadFailure {
        /// The level asked for.
        consistency: ConsistencyLevel,
        /// Answers received.
        received: usize,
        /// Answers needed.
        block_for: usize,
        /// Replicas that failed.
        failed: usize,
        /// The first failure.
        reason: String,
    },
    /// This node or the replicas are over their limits; retry later.
    #[error("{0}")]
    Overloaded(String),
    /// The table is not in this node's schema.
    #[error("unknown table")]
    UnknownTable(crate::message::TableKey),
    /// Local storage refused.
    #[error("{0}")]
    Storage(String),
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
}
