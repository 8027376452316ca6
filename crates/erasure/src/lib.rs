//! ELECT's erasure-coding core (FAST '24, §4): the pieces of the `erasure-tiered` layout
//! that are pure computation, so they can be tested exhaustively on their own.
//!
//! - [`codec`]: Reed-Solomon over whole SSTables (cross-SSTable encoding, §4.1.3): `k` data
//!   shards of any lengths to `n − k` parity shards, stripe by stripe, so a degraded read
//!   decodes only the stripe that holds the block it needs; delta parity updates when a
//!   data shard changes (compaction-triggered updates).
//! - [`meta`]: ECMeta, the durable description of a coding group (content hash, size, node
//!   and position of each of its `n` shards, and the codec's parameters).
//! - [`placement`]: parity node selection (§4.1.2): coding groups over `n` consecutive nodes
//!   of a deterministic order of the physical nodes, the leader parity node by Eq. (1).
//! - [`target`]: the storage saving target α (§4.3): how much to code and offload, Eqs. (4)–(6).
//! - [`hotness`]: which last-level SSTables are coded and offloaded first (§4.2).
//!
//! The Reed-Solomon arithmetic is `reed-solomon-simd`'s (GF(2^16), O(n log n)); what is
//! ours is how SSTables become shards and stripes, and everything around it.

pub mod codec;
pub mod hotness;
pub mod meta;
pub mod placement;
pub mod protocol;
pub mod target;

pub use codec::{Codec, CodecError};
pub use meta::{EcMeta, MetaError, ShardMeta};
pub use placement::{Group, Placement, PlacementError};
pub use protocol::{
    Fill, GroupId, LostRead, Replaced, Unanswered, LOST_PIECE_BYTES, LOST_READ_BYTES,
};
pub use target::{Counts, Plan};
