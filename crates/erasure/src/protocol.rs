//! The steps of changing a coding group's slot, as the node layer and the storage layer
//! hand them to each other (see `docs/layouts.md`, "Erasure-tiered").

use mosaic_types::HostId;

use crate::EcMeta;

/// A coding group's id, chosen by its leader parity node.
pub type GroupId = [u8; 16];

/// What a leader does with a request to fill a slot.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fill {
    /// The slot already holds this content at the committed epoch: answer with it.
    Committed(EcMeta),
    /// Apply `deltas` (one per parity position, with the node holding it), then commit.
    Pending {
        /// The group.
        group: GroupId,
        /// The epoch the deltas apply to.
        from: u64,
        /// The epoch they produce.
        to: u64,
        /// `(position, node, delta)` for every parity shard.
        deltas: Vec<(u8, HostId, Vec<u8>)>,
    },
}

/// A data node's coded table that compaction replaced: its slot must be emptied (or
/// refilled) before its content, kept as a ghost, can go.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Replaced {
    /// The table's id in the data node's primary tree.
    pub id: u64,
    /// Its group.
    pub group: GroupId,
    /// Its slot.
    pub slot: u8,
    /// The group's leader parity node.
    pub leader: HostId,
    /// The table's content (its ghost).
    pub content: Vec<u8>,
}

/// Tables a data node sent for coding without an answer yet: `(table id, slot, leader,
/// content)`.
pub type Unanswered = Vec<(u64, u8, HostId, Vec<u8>)>;

/// Bytes of a lost table a degraded read's miss fetches and decodes at once (aligned), of
/// each of `k` shards; the first read of a table fetches only its last 128 KiB. A miss
/// costs `k` round trips whatever its size, and reads spread over a lost table soon need
/// all of it, so larger pieces serve more later reads: the first pass of 60,000 degraded
/// reads (`bench/elect.sh degraded`, 4 MiB tables) took 4.5× the mean latency of normal
/// reads with 16 KiB pieces, 2.8× with 64 KiB, 2.2× with 256 KiB, 1.8× with 512 KiB and
/// 1.9× with 1 MiB (whose slowest reads waited longest). Any chunk-aligned span decodes
/// on its own, whatever stripes the group was coded in (see
/// [`crate::Codec::decode_range`]).
pub const LOST_READ_BYTES: u64 = 512 << 10;

/// The pieces a lost table is decoded into and kept in (whole pieces, one or more; a fetch
/// of [`LOST_READ_BYTES`] is eight of them): small enough that the first read of a lost
/// table fetches only its last 128 KiB (footer, index, filter) before its key's span.
pub const LOST_PIECE_BYTES: u64 = 64 << 10;

/// What a degraded read of a lost data shard (a table whose node is down) got.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LostRead {
    /// The rows asked for, `(key, value)` in key order, and whether the bounds hold
    /// nothing more.
    Rows(Vec<(Vec<u8>, Vec<u8>)>, bool),
    /// The read first needs these bytes of the lost table decoded: a span of whole
    /// [`LOST_READ_BYTES`] pieces (the last one ending at the table's coded end).
    Need(std::ops::Range<u64>),
}
