//! Mosaic's replica layouts: how one table's replicas are stored on a node.
//!
//! Owns [`ReplicaStore`], a table's storage under one [`Layout`], and the vocabulary the
//! layouts decide by: a write's [`Role`] (primary, or a redundant copy of a [`SourceId`]'s
//! data, DEPART's replica differentiation) and the ring's ranges ([`RingRanges`]) that the
//! decoupled layout's two-layer log groups redundant copies by. One module per layout:
//!
//! - `uniform`: every replica in one LSM-tree (Cassandra's uniform indexing, the baseline),
//!   at the table's directory itself, so data directories written before layouts existed
//!   open unchanged;
//! - [`multi_lsm`]: one LSM-tree per replica source (DEPART's "mLSM"): `primary/` and
//!   `src-<host id>/` under the table's directory;
//! - [`decoupled`]: DEPART: primary copies in an LSM-tree (`primary/`), redundant copies of
//!   every source in one two-layer log (`log/`, a `mosaic_lsm::Db` in log mode);
//! - [`heterogeneous`]: each replica index of a range in its own clustering order, one tree
//!   per index (`replica-<i>-<order>/`), rows re-keyed on write and answered canonically;
//! - erasure-tiered (ELECT): multi-lsm's trees plus the coding state of [`elect`] (data
//!   node; [`lineage`] follows its coded tables' rows through compaction), [`parity`] (parity node), [`covered`] (secondary removal) and [`degraded`]
//!   (reads of covered rows while their primary is down).
//!
//! [`cleanup`] drops what a node no longer owns in each structure's role (after a topology
//! change), through every engine's compaction filter.
//!
//! Must not depend on the cluster, tokio or CQL: the caller (the server) computes each
//! operation's role from the ring and hands it in, so a simulator can drive the layouts as
//! well. Storage goes through `mosaic-lsm` only, whose `Fs` seam it uses for its own few
//! files (the `LAYOUT` marker), so fault-injecting file systems reach every byte.
#![deny(clippy::unwrap_used)]

pub mod cleanup;
pub mod covered;
pub mod decoupled;
pub mod degraded;
pub mod elect;
pub mod heterogeneous;
pub mod lineage;
pub mod multi_lsm;
pub mod parity;
pub mod ranges;
pub mod role;
pub mod sealed;
pub mod store;
pub mod stored;

pub use cleanup::Ownership;
pub use heterogeneous::KeyOrders;
pub use ranges::{LogSettings, RingRanges};
pub use role::{Layout, Role, SourceId};
pub use store::{
    CleanupReport, ReplicaScan, ReplicaStore, Structure, StructureCleanup, StructureStats,
};
pub use stored::{StoredEntry, StoredScan};
