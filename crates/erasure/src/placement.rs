//! Parity node selection (§4.1.2).
//!
//! Coding groups are formed over `n` consecutive nodes of one deterministic order of the
//! cluster's physical nodes: their host ids, sorted. The order does not depend on vnode
//! tokens (a node owns many ranges) nor on liveness: placement is computed from every
//! member of the ring, down or not, so a node that is merely down keeps its groups (the
//! published prototype followed gossip's live list, and moved parity when a node blinked).
//!
//! A node `N_i` codes its SSTables with a monotonic sequence number `Q`; the SSTable with
//! sequence `Q` goes to the leader parity node `N_p`, `p = (i + (Q mod k) + 1) mod M`
//! (Eq. (1)). So each leader `N_p` gathers SSTables from its `k` predecessors
//! `N_{p−k} … N_{p−1}` (data positions `0 … k−1`, in ring order), and the group's parity
//! lives on `N_p` and its `n − k − 1` successors (parity positions `k … n−1`). All `n`
//! nodes of a group are distinct, which needs `M ≥ n`.

use mosaic_types::HostId;

/// Why a placement cannot be made.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum PlacementError {
    /// Fewer nodes than shards per group.
    #[error("erasure coding with n = {n} shards per group needs at least {n} nodes; the cluster has {nodes}")]
    TooFewNodes {
        /// Nodes in the ring.
        nodes: usize,
        /// Shards per group.
        n: usize,
    },
    /// `k` and `n` out of range.
    #[error("coding groups need 1 <= k < n (k = {k}, n = {n})")]
    BadCode {
        /// Data shards.
        k: usize,
        /// All shards.
        n: usize,
    },
    /// A node that is not a member of the ring.
    #[error("node {0} is not a member of the ring")]
    UnknownNode(HostId),
}

/// The coding groups of a ring's members under a `(n, k)` code.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Placement {
    order: Vec<HostId>,
    k: usize,
    n: usize,
}

/// One coding group: its data nodes and parity nodes, in position order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Group {
    /// Data positions `0..k`.
    pub data: Vec<HostId>,
    /// Parity positions `k..n`; the first is the leader.
    pub parity: Vec<HostId>,
}

impl Group {
    /// The leader parity node (computes and distributes the parity).
    pub fn leader(&self) -> HostId {
        self.parity[0]
    }

    /// The node holding each position `0..n`.
    pub fn nodes(&self) -> impl Iterator<Item = HostId> + '_ {
        self.data.iter().chain(&self.parity).copied()
    }
}

impl Placement {
    /// The placement over every member of the ring (live or not; duplicates ignored).
    pub fn new(
        members: impl IntoIterator<Item = HostId>,
        k: usize,
        n: usize,
    ) -> Result<Placement, PlacementError> {
        if k == 0 || k >= n {
            return Err(PlacementError::BadCode { k, n });
        }
        let mut order: Vec<HostId> = members.into_iter().collect();
        order.sort_unstable();
        order.dedup();
        if order.len() < n {
            return Err(PlacementError::TooFewNodes {
                nodes: order.len(),
                n,
            });
        }
        Ok(Placement { order, k, n })
    }

    /// The nodes in placement order.
    pub fn order(&self) -> &[HostId] {
        &self.order
    }

    fn index(&self, node: HostId) -> Result<usize, PlacementError> {
        self.order
            .binary_search(&node)
            .map_err(|_| PlacementError::UnknownNode(node))
    }

    /// The leader parity node for `node`'s SSTable with sequence number `seq` (Eq. (1)),
    /// and the position the SSTable takes in that leader's group.
    pub fn leader(&self, node: HostId, seq: u64) -> Result<(HostId, usize), PlacementError> {
        let m = self.order.len();
        let i = self.index(node)?;
        let step = (seq % self.k as u64) as usize + 1;
        let p = (i + step) % m;
        // N_i is N_{p−step}: position k − step among N_{p−k} … N_{p−1}.
        Ok((self.order[p], self.k - step))
    }

    /// The group led by `leader`.
    pub fn group(&self, leader: HostId) -> Result<Group, PlacementError> {
        let m = self.order.len();
        let p = self.index(leader)?;
        let at = |offset: isize| self.order[(p as isize + offset).rem_euclid(m as isize) as usize];
        Ok(Group {
            data: (0..self.k)
                .map(|j| at(j as isize - self.k as isize))
                .collect(),
            parity: (0..self.n - self.k).map(|j| at(j as isize)).collect(),
        })
    }
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};

    use super::*;

    fn nodes(m: u8) -> Vec<HostId> {
        // Out of order on purpose: placement sorts by host id.
        (0..m).rev().map(|i| HostId([i; 16])).collect()
    }

    #[test]
    fn too_few_nodes_is_a_clear_error() {
        assert_eq!(
            Placement::new(nodes(5), 4, 6),
            Err(PlacementError::TooFewNodes { nodes: 5, n: 6 })
        );
        let e = Placement::new(nodes(5), 4, 6).unwrap_err().to_string();
        assert!(e.contains("at least 6 nodes"), "{e}");
        assert!(Placement::new(nodes(6), 4, 6).is_ok());
        assert_eq!(
            Placement::new(nodes(6), 4, 4),
            Err(PlacementError::BadCode { k: 4, n: 4 })
        );
    }

    #[test]
    fn the_paper_example_six_nodes_rs_6_4() {
        let p = Placement::new(nodes(6), 4, 6).unwrap();
        let n = |i: u8| HostId([i; 16]);
        // N0 picks N1, N2, N3, N4 round-robin as Q grows, then again.
        let leaders: Vec<HostId> = (0..8).map(|q| p.leader(n(0), q).unwrap().0).collect();
        assert_eq!(
            leaders,
            vec![n(1), n(2), n(3), n(4), n(1), n(2), n(3), n(4)]
        );
        // N4 leads the group of N0..N3 with parity on N4 and N5 (Figure 3).
        let g = p.group(n(4)).unwrap();
        assert_eq!(g.data, vec![n(0), n(1), n(2), n(3)]);
        assert_eq!(g.parity, vec![n(4), n(5)]);
        assert_eq!(g.leader(), n(4));
        // The position each data node's SSTable takes is its place in the leader's group.
        assert_eq!(p.leader(n(0), 3).unwrap(), (n(4), 0));
        assert_eq!(p.leader(n(3), 0).unwrap(), (n(4), 3));
        // Wrapping around the order.
        let g = p.group(n(1)).unwrap();
        assert_eq!(g.data, vec![n(3), n(4), n(5), n(0)]);
        assert_eq!(g.parity, vec![n(1), n(2)]);
    }

    #[test]
    fn groups_are_distinct_nodes_and_parity_is_balanced() {
        for m in 6u8..=12 {
            for (k, n) in [(4, 6), (2, 3), (3, 5), (4, 5)] {
                if usize::from(m) < n {
                    continue;
                }
                let p = Placement::new(nodes(m), k, n).unwrap();
                let mut parity_load: BTreeMap<HostId, usize> = BTreeMap::new();
                for node in p.order().to_vec() {
                    for seq in 0..k as u64 {
                        let (leader, position) = p.leader(node, seq).unwrap();
                        let g = p.group(leader).unwrap();
                        assert_eq!(g.data[position], node, "m={m} k={k} n={n}");
                        let all: BTreeSet<HostId> = g.nodes().collect();
                        assert_eq!(all.len(), n, "a group's nodes are distinct");
                        for q in &g.parity {
                            *parity_load.entry(*q).or_default() += 1;
                        }
                    }
                }
                // Every node leads (and holds parity for) the same number of groups.
                let loads: BTreeSet<usize> = parity_load.values().copied().collect();
                assert_eq!(loads.len(), 1, "m={m} k={k} n={n}: {parity_load:?}");
                assert_eq!(parity_load.len(), usize::from(m));
            }
        }
    }

    #[test]
    fn placement_depends_on_membership_not_on_order_given() {
        let a = Placement::new(nodes(7), 4, 6).unwrap();
        let mut shuffled = nodes(7);
        shuffled.rotate_left(3);
        shuffled.push(HostId([2; 16]));
        assert_eq!(Placement::new(shuffled, 4, 6).unwrap(), a);
        assert_eq!(
            a.leader(HostId([42; 16]), 0),
            Err(PlacementError::UnknownNode(HostId([42; 16])))
        );
    }
}
