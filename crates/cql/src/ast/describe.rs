//! `DESCRIBE` (Cassandra 4.0's server-side schema description): what it asks for.

use super::{Ident, QualifiedName};

/// What a `DESCRIBE` statement asks for (Cassandra 4.0's server-side `DESCRIBE`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum DescribeTarget {
    /// `DESCRIBE CLUSTER`: cluster name, partitioner, snitch, and the token ranges of the
    /// current keyspace.
    Cluster,
    /// `DESCRIBE [FULL] SCHEMA`: every keyspace (`FULL`: system keyspaces too) with
    /// everything in it.
    Schema {
        /// `FULL`.
        full: bool,
    },
    /// `DESCRIBE KEYSPACES`: the keyspace names.
    Keyspaces,
    /// `DESCRIBE [ONLY] KEYSPACE [ks]`: the keyspace (the current one without a name) and,
    /// unless `ONLY`, everything in it.
    Keyspace {
        /// The keyspace; `None` means the current one.
        name: Option<Ident>,
        /// `ONLY`: the keyspace's own statement, not its tables.
        only: bool,
    },
    /// `DESCRIBE TABLES`: the table names of the current keyspace, or of every keyspace.
    Tables,
    /// `DESCRIBE TABLE [ks.]t` (or `COLUMNFAMILY`).
    Table(QualifiedName),
    /// `DESCRIBE INDEX [ks.]i`.
    Index(QualifiedName),
    /// `DESCRIBE MATERIALIZED VIEW [ks.]v`.
    MaterializedView(QualifiedName),
    /// `DESCRIBE TYPES`.
    Types,
    /// `DESCRIBE TYPE [ks.]t`.
    Type(QualifiedName),
    /// `DESCRIBE FUNCTIONS`.
    Functions,
    /// `DESCRIBE FUNCTION [ks.]f`.
    Function(QualifiedName),
    /// `DESCRIBE AGGREGATES`.
    Aggregates,
    /// `DESCRIBE AGGREGATE [ks.]a`.
    Aggregate(QualifiedName),
    /// `DESCRIBE [ks.]name`: a keyspace, else a table, index or view of that name.
    Generic(QualifiedName),
}

/// `DESCRIBE … [WITH INTERNALS]` (also `DESC`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct DescribeStatement {
    /// What is described.
    pub target: DescribeTarget,
    /// `WITH INTERNALS`: also the details needed to restore data (table ids).
    pub internals: bool,
}
