//! Consistency levels and the errors a coordinator answers with.
//!
//! Owns how many replicas each level waits for and the failures a client sees, with the
//! counts Cassandra reports (`Unavailable`: required and alive; timeouts: received and
//! block-for). The levels themselves are `mosaic_types::ConsistencyLevel`.

pub use mosaic_types::ConsistencyLevel;

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
    /// A lightweight transaction's Paxos phase did not finish in time: too few answers,
    /// or contention that outlasted `cas_contention_timeout_ms` (the update may or may
    /// not be applied; Cassandra's `WriteTimeout` of write type `CAS`).
    #[error("CAS operation timed out: received only {received} responses of {block_for} required at {}", .consistency.name())]
    CasTimeout {
        /// The serial level asked for.
        consistency: ConsistencyLevel,
        /// Promises or acceptances received.
        received: usize,
        /// How many the phase needs.
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
    /// A write larger than the node's `mutation_size_bytes_max` (Cassandra's
    /// `max_mutation_size`): refused before anything is sent, since replicas, hints and
    /// internode frames could not carry it.
    #[error("Rejected an oversized mutation ({bytes}/{max})")]
    MutationTooLarge {
        /// Bytes of the write (keys and values).
        bytes: usize,
        /// The limit.
        max: usize,
    },
}

impl ClusterError {
    /// The consistency level the error names, if it names one.
    pub fn consistency(&self) -> Option<ConsistencyLevel> {
        match self {
            ClusterError::Unavailable { consistency, .. }
            | ClusterError::WriteTimeout { consistency, .. }
            | ClusterError::CasTimeout { consistency, .. }
            | ClusterError::ReadTimeout { consistency, .. }
            | ClusterError::WriteFailure { consistency, .. }
            | ClusterError::ReadFailure { consistency, .. } => Some(*consistency),
            _ => None,
        }
    }
}
