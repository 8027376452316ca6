//! Consistency levels and the errors a coordinator answers with.
//!
//! Owns how many replicas each level waits for and which of them count ([`Quorum`]:
//! datacenter-aware under NetworkTopologyStrategy, as Cassandra's `ReplicaPlans` are), and
//! the failures a client sees, with the counts Cassandra reports (`Unavailable`: required
//! and alive; timeouts: received and block-for). The levels themselves are
//! `mosaic_types::ConsistencyLevel`.

pub use mosaic_types::ConsistencyLevel;

use crate::placement::ReplicationStrategy;
use crate::ring::Ring;
use crate::Endpoint;

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

/// Which replicas of one replica list a consistency level counts, and how many answers of
/// each group of them it needs: Cassandra's block-for, made datacenter-aware. The plain
/// levels count every replica against the keyspace's whole factor; `LOCAL_ONE`,
/// `LOCAL_QUORUM` and `LOCAL_SERIAL` count only the replicas in the coordinator's
/// datacenter (a quorum of that datacenter's factor under NetworkTopologyStrategy, of the
/// whole factor under SimpleStrategy, as Cassandra does); `EACH_QUORUM` under
/// NetworkTopologyStrategy needs a quorum of every datacenter with replicas (under
/// SimpleStrategy it is `QUORUM`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Quorum {
    /// Answers needed per group.
    need: Vec<usize>,
    /// The counted replicas, each with its group.
    members: Vec<(Endpoint, usize)>,
}

/// The group of [`Quorum`] whose answers `replica` counts for at `cl`, `None` when they do
/// not count: the coordinator's datacenter only for the LOCAL levels, one group per
/// datacenter with replicas for `EACH_QUORUM` under NetworkTopologyStrategy, else all one.
fn counted_group(
    cl: ConsistencyLevel,
    placement: &ReplicationStrategy,
    ring: &Ring,
    local_dc: &str,
    replica: Endpoint,
) -> Option<usize> {
    match (cl, placement) {
        (
            ConsistencyLevel::LocalOne
            | ConsistencyLevel::LocalQuorum
            | ConsistencyLevel::LocalSerial,
            _,
        ) => (ring.dc_of(replica) == local_dc).then_some(0),
        (ConsistencyLevel::EachQuorum, ReplicationStrategy::NetworkTopology(dcs)) => {
            let dc = ring.dc_of(replica);
            dcs.iter()
                .filter(|(_, rf)| *rf > 0)
                .position(|(name, _)| name == dc)
        }
        _ => Some(0),
    }
}

impl Quorum {
    /// What `cl` counts of `replicas` (placed by `placement` on `ring`), for a coordinator
    /// in `local_dc`.
    pub fn new(
        cl: ConsistencyLevel,
        placement: &ReplicationStrategy,
        ring: &Ring,
        replicas: &[Endpoint],
        local_dc: &str,
    ) -> Quorum {
        let total = placement.total();
        let need = match (cl, placement) {
            (ConsistencyLevel::LocalOne, _) => vec![1],
            (ConsistencyLevel::LocalQuorum | ConsistencyLevel::LocalSerial, _) => {
                vec![placement.dc_factor(local_dc).unwrap_or(total) / 2 + 1]
            }
            (ConsistencyLevel::EachQuorum, ReplicationStrategy::NetworkTopology(dcs)) => dcs
                .iter()
                .filter(|(_, rf)| *rf > 0)
                .map(|(_, rf)| rf / 2 + 1)
                .collect(),
            _ => vec![cl.block_for(total)],
        };
        let members = replicas
            .iter()
            .filter_map(|r| Some((*r, counted_group(cl, placement, ring, local_dc, *r)?)))
            .collect();
        Quorum { need, members }
    }

    /// This quorum with the token's `pending` replicas (nodes joining its replica set,
    /// [`Ring::pending`]): each that the level would count is counted and needed on top,
    /// as Cassandra adds pending endpoints to a write's block-for, so the write still
    /// reaches the level's count of the replicas that will remain once the move
    /// completes. `ANY` needs no more.
    pub fn with_pending(
        mut self,
        cl: ConsistencyLevel,
        placement: &ReplicationStrategy,
        ring: &Ring,
        pending: &[Endpoint],
        local_dc: &str,
    ) -> Quorum {
        if cl == ConsistencyLevel::Any {
            return self;
        }
        for p in pending {
            if let Some(g) = counted_group(cl, placement, ring, local_dc, *p) {
                if let Some(need) = self.need.get_mut(g) {
                    *need += 1;
                    self.members.push((*p, g));
                }
            }
        }
        self
    }

    /// Every replica counts, `block_for` of them needed.
    pub fn plain(block_for: usize, replicas: &[Endpoint]) -> Quorum {
        Quorum {
            need: vec![block_for],
            members: replicas.iter().map(|r| (*r, 0)).collect(),
        }
    }

    /// Answers needed in all.
    pub fn block_for(&self) -> usize {
        self.need.iter().sum()
    }

    /// How many groups it counts separately (more than one only for `EACH_QUORUM`).
    pub fn groups(&self) -> usize {
        self.need.len()
    }

    /// Answers needed from group `g`.
    pub fn need(&self, g: usize) -> usize {
        self.need.get(g).copied().unwrap_or(0)
    }

    /// The group `replica`'s answers count for, `None` when they do not count.
    pub fn group_of(&self, replica: Endpoint) -> Option<usize> {
        self.members
            .iter()
            .find(|(r, _)| *r == replica)
            .map(|(_, g)| *g)
    }

    /// Whether `replica`'s answers count.
    pub fn counts(&self, replica: Endpoint) -> bool {
        self.group_of(replica).is_some()
    }

    /// Per group, how many of `replicas` count for it.
    pub fn per_group<'a>(&self, replicas: impl IntoIterator<Item = &'a Endpoint>) -> Vec<usize> {
        let mut n = vec![0; self.need.len()];
        for r in replicas {
            if let Some(slot) = self.group_of(*r).and_then(|g| n.get_mut(g)) {
                *slot += 1;
            }
        }
        n
    }

    /// Whether `got` answers per group meet every group's need.
    pub fn met(&self, got: &[usize]) -> bool {
        self.need
            .iter()
            .enumerate()
            .all(|(g, need)| got.get(g).copied().unwrap_or(0) >= *need)
    }

    /// `Unavailable` (with the first short group's counts, as Cassandra reports a
    /// datacenter's) unless the `live` replicas can meet every group's need.
    pub fn check_live<'a>(
        &self,
        cl: ConsistencyLevel,
        live: impl IntoIterator<Item = &'a Endpoint>,
    ) -> Result<(), ClusterError> {
        let alive = self.per_group(live);
        match self
            .need
            .iter()
            .zip(&alive)
            .find(|(need, alive)| *alive < *need)
        {
            Some((need, alive)) => Err(ClusterError::Unavailable {
                consistency: cl,
                required: *need,
                alive: *alive,
            }),
            None => Ok(()),
        }
    }

    /// Counts `replica`'s answer as already given (a counter's leader applied its own
    /// copy): its group needs one fewer, and it no longer counts.
    pub fn credit(&mut self, replica: Endpoint) {
        if let Some(at) = self.members.iter().position(|(r, _)| *r == replica) {
            let (_, g) = self.members.remove(at);
            if let Some(need) = self.need.get_mut(g) {
                *need = need.saturating_sub(1);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ring::Location;
    use mosaic_types::Token;
    use std::net::{IpAddr, Ipv4Addr, SocketAddr};

    fn ep(i: u8) -> Endpoint {
        SocketAddr::new(IpAddr::V4(Ipv4Addr::new(127, 0, 0, i)), 7000)
    }

    /// Nodes 1, 2 in dc1; 3, 4 in dc2.
    fn two_dcs() -> Ring {
        let tokens: Vec<(Endpoint, [Token; 1])> = (1..=4u8)
            .map(|i| (ep(i), [Token(i64::from(i) * 10)]))
            .collect();
        Ring::new(tokens.iter().map(|(e, t)| (*e, &t[..]))).with_locations((1..=4u8).map(|i| {
            let dc = if i <= 2 { "dc1" } else { "dc2" };
            (
                ep(i),
                Location {
                    dc: dc.to_owned(),
                    rack: "r1".to_owned(),
                },
            )
        }))
    }

    /// A pending replica (a node joining the token's replica set) counts on top of the
    /// level, as Cassandra's pending endpoints do: QUORUM of 2 becomes 3 of 3; LOCAL
    /// levels add only a pending replica of the coordinator's datacenter; ANY adds none.
    #[test]
    fn pending_replicas_are_needed_on_top_of_the_level() {
        let ring = two_dcs();
        let simple = ReplicationStrategy::Simple(2);
        let q = Quorum::new(
            ConsistencyLevel::Quorum,
            &simple,
            &ring,
            &[ep(1), ep(2)],
            "dc1",
        )
        .with_pending(ConsistencyLevel::Quorum, &simple, &ring, &[ep(3)], "dc1");
        assert_eq!(q.block_for(), 3);
        assert!(q.counts(ep(3)));
        assert!(!q.met(&[2]));
        assert!(q.met(&[3]));
        assert!(q
            .check_live(ConsistencyLevel::Quorum, &[ep(1), ep(2)])
            .is_err());
        let one = Quorum::new(
            ConsistencyLevel::One,
            &simple,
            &ring,
            &[ep(1), ep(2)],
            "dc1",
        )
        .with_pending(ConsistencyLevel::One, &simple, &ring, &[ep(3)], "dc1");
        assert_eq!(one.block_for(), 2);
        let nts =
            ReplicationStrategy::network_topology([("dc1".to_owned(), 2), ("dc2".to_owned(), 2)]);
        let local = Quorum::new(
            ConsistencyLevel::LocalQuorum,
            &nts,
            &ring,
            &[ep(1), ep(3)],
            "dc1",
        )
        .with_pending(
            ConsistencyLevel::LocalQuorum,
            &nts,
            &ring,
            &[ep(2), ep(4)],
            "dc1",
        );
        // dc1's quorum of 2 is 2, plus its one pending replica; dc2's pending one is not
        // counted by a dc1 coordinator.
        assert_eq!(local.block_for(), 3);
        assert!(local.counts(ep(2)) && !local.counts(ep(4)));
        let any = Quorum::new(
            ConsistencyLevel::Any,
            &simple,
            &ring,
            &[ep(1), ep(2)],
            "dc1",
        )
        .with_pending(ConsistencyLevel::Any, &simple, &ring, &[ep(3)], "dc1");
        assert_eq!(any.block_for(), 1);
    }

    #[test]
    fn levels_count_the_replicas_cassandra_counts() {
        let ring = two_dcs();
        let nts =
            ReplicationStrategy::network_topology([("dc1".to_owned(), 2), ("dc2".to_owned(), 2)]);
        let replicas = [ep(1), ep(2), ep(3), ep(4)];
        let q = |cl, p: &ReplicationStrategy, dc| Quorum::new(cl, p, &ring, &replicas, dc);
        use ConsistencyLevel as Cl;
        // (level, placement, coordinator's dc, block for, groups, replicas counted)
        let simple = ReplicationStrategy::Simple(4);
        let cases: [(Cl, &ReplicationStrategy, &str, usize, usize, usize); 10] = [
            (Cl::One, &nts, "dc1", 1, 1, 4),
            (Cl::Quorum, &nts, "dc1", 3, 1, 4),
            (Cl::All, &nts, "dc1", 4, 1, 4),
            (Cl::LocalOne, &nts, "dc1", 1, 1, 2),
            (Cl::LocalQuorum, &nts, "dc2", 2, 1, 2),
            (Cl::EachQuorum, &nts, "dc1", 4, 2, 4),
            // SimpleStrategy: LOCAL_QUORUM is a quorum of the whole factor, counted in
            // the local datacenter only; EACH_QUORUM is QUORUM.
            (Cl::LocalQuorum, &simple, "dc1", 3, 1, 2),
            (Cl::EachQuorum, &simple, "dc1", 3, 1, 4),
            // A coordinator in a datacenter without replicas: LOCAL_QUORUM of factor 0.
            (Cl::LocalQuorum, &nts, "dc9", 1, 1, 0),
            (Cl::LocalSerial, &nts, "dc1", 2, 1, 2),
        ];
        for (cl, p, dc, block_for, groups, counted) in cases {
            let quorum = q(cl, p, dc);
            assert_eq!(quorum.block_for(), block_for, "{cl} {p:?} from {dc}");
            assert_eq!(quorum.groups(), groups, "{cl} {p:?} from {dc}");
            let n = replicas.iter().filter(|r| quorum.counts(**r)).count();
            assert_eq!(n, counted, "{cl} {p:?} from {dc}");
        }
    }

    #[test]
    fn availability_is_judged_per_datacenter() {
        let ring = two_dcs();
        let nts =
            ReplicationStrategy::network_topology([("dc1".to_owned(), 2), ("dc2".to_owned(), 2)]);
        let replicas = [ep(1), ep(2), ep(3), ep(4)];
        let dc1_only = [ep(1), ep(2)];
        let q = |cl| Quorum::new(cl, &nts, &ring, &replicas, "dc1");
        assert!(q(ConsistencyLevel::LocalQuorum)
            .check_live(ConsistencyLevel::LocalQuorum, &dc1_only)
            .is_ok());
        assert_eq!(
            q(ConsistencyLevel::Quorum).check_live(ConsistencyLevel::Quorum, &dc1_only),
            Err(ClusterError::Unavailable {
                consistency: ConsistencyLevel::Quorum,
                required: 3,
                alive: 2
            })
        );
        assert_eq!(
            q(ConsistencyLevel::EachQuorum).check_live(ConsistencyLevel::EachQuorum, &dc1_only),
            Err(ClusterError::Unavailable {
                consistency: ConsistencyLevel::EachQuorum,
                required: 2,
                alive: 0
            })
        );
        // LOCAL_QUORUM answers count only from the local datacenter.
        let local = q(ConsistencyLevel::LocalQuorum);
        assert!(!local.met(&local.per_group(&[ep(1), ep(3), ep(4)])));
        assert!(local.met(&local.per_group(&[ep(1), ep(2)])));
        let each = q(ConsistencyLevel::EachQuorum);
        assert!(!each.met(&each.per_group(&[ep(1), ep(2), ep(3)])));
        assert!(each.met(&each.per_group(&replicas)));
        // A leader's own copy counts in its group.
        let mut credited = q(ConsistencyLevel::LocalQuorum);
        credited.credit(ep(1));
        assert_eq!(credited.block_for(), 1);
        assert!(!credited.counts(ep(1)));
    }
}
