//! The coordinator's view of placement: a table's replication strategy, what a consistency
//! level counts of a replica list from this node's datacenter, and the local datacenter's
//! replicas ranked first (as Cassandra's snitch sorts by proximity).

use super::*;

impl Node {
    /// How `table`'s keyspace places its replicas; `UnknownTable` when it has none.
    pub(crate) fn placement(&self, table: TableKey) -> Result<ReplicationStrategy, ClusterError> {
        self.inner
            .store
            .placement(table)
            .ok_or(ClusterError::UnknownTable(table))
    }

    /// What `cl` counts of `replicas` (placed by `placement` on `ring`) with this node as
    /// the coordinator: the LOCAL_* levels count its own datacenter's replicas.
    pub(crate) fn quorum(
        &self,
        cl: ConsistencyLevel,
        placement: &ReplicationStrategy,
        ring: &Ring,
        replicas: &[Endpoint],
    ) -> Quorum {
        Quorum::new(cl, placement, ring, replicas, ring.dc_of(self.endpoint()))
    }

    /// Moves the replicas in this node's datacenter ahead of the others, keeping the
    /// order within each (a stable partition: the selector's choice among local replicas
    /// stands). One datacenter: nothing moves.
    pub(crate) fn local_first(&self, ring: &Ring, replicas: &mut [Endpoint]) {
        let here = ring.dc_of(self.endpoint());
        replicas.sort_by_key(|r| ring.dc_of(*r) != here);
    }
}
