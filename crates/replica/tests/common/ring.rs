//! The fixed ring of the role tests: two sources and four tokens, splitting the token space
//! into five groups (group 4 wraps around to group 0's owner).

use mosaic_replica::SourceId;

/// One source node.
pub const A: SourceId = SourceId([0xaa; 16]);
/// Another.
pub const B: SourceId = SourceId([0xbb; 16]);
/// The ring's tokens: group g is `(RING[g-1], RING[g]]`.
pub const RING: [i64; 4] = [
    -6_000_000_000_000_000_000,
    -2_000_000_000_000_000_000,
    2_000_000_000_000_000_000,
    6_000_000_000_000_000_000,
];
