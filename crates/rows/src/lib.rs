//! Mosaic's row layer: CQL rows, cells and deletions on the engine's sorted byte keys.
//!
//! Owns three things the storage layouts share:
//! - **keys** ([`key`], [`component`]): an order-preserving encoding of (token, partition
//!   key, clustering values — native, or frozen collections, tuples and user-defined types) so that the engine's bytewise order is Cassandra's order —
//!   partitions by token, rows in clustering order (ascending or descending per column) —
//!   with keys for partition deletions, range tombstones and static rows placed so that a
//!   partition, a token range or a clustering slice is one engine key range;
//! - **fragments** ([`fragment`]): the row/cell model (row marker, row deletion, cells with
//!   timestamps, TTLs and tombstones) and its compact, versioned, panic-free encoding;
//! - **reconciliation** ([`merge`], [`resolve`]): Cassandra's last-write-wins rules as a
//!   `mosaic_lsm::MergeOperator` (used by reads and compaction), and the read-time pass
//!   that applies partition and range deletions and TTLs to yield live rows.
//!
//! Depends on `mosaic-types` (values, tokens) and on `mosaic-lsm` only for its merge
//! interface; knows nothing of clusters, replicas or the CQL protocol, so every layout
//! (uniform, multi-LSM, decoupled, erasure-tiered, heterogeneous) stores rows the same way.
//! The byte formats are specified in `docs/format-rows.md`.
#![deny(clippy::indexing_slicing)]

pub mod component;
pub mod counter;
pub mod error;
pub mod filter;
pub mod fragment;
mod frozen;
pub mod key;
pub mod merge;
pub mod permute;
pub mod resolve;

pub use component::{decode_component, decode_component_of, encode_component, Order};
pub use error::{FragmentError, KeyError, ResolveError};
pub use filter::{ClusteringFilter, ColumnFilter};
pub use fragment::{
    Cell, ColumnId, ComplexColumn, DeletionTime, Expiry, Fragment, FragmentKind, Liveness,
};
pub use key::{
    decode_token, encode_token, ring_range, token_range, BoundSide, ClusteringBound,
    ClusteringColumn, DecodedKey, KeyEntry, KeyRange, KeySchema, PartitionPrefix, SliceOp,
};
pub use merge::{merge_fragments, merge_into, purge_fragment, RowMerge};
pub use permute::{Permutation, RowSpans};
pub use resolve::{resolve_partition, LiveCell, LiveRow, PartitionResolver, ResolvedPartition};
