//! Replication strategies: how many replicas a keyspace keeps and where.
//!
//! Owns [`ReplicationStrategy`] — Cassandra's `SimpleStrategy` (the next RF distinct nodes clockwise
//! from a token) and `NetworkTopologyStrategy` (per datacenter, a rack-aware walk of the
//! same ring) — and the walk of the latter, which matches Cassandra 4.1's
//! `NetworkTopologyStrategy.calculateNaturalReplicas` replica for replica and in the same
//! order, so drivers' token-aware routing and an operator's expectations hold. The
//! consistency levels' view of a placement (which replicas count, how many) is
//! [`crate::consistency::Quorum`]. Pure: no I/O, no clocks.

use std::sync::Arc;

use mosaic_types::Token;

use crate::ring::Ring;
use crate::Endpoint;

/// A keyspace's replication strategy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReplicationStrategy {
    /// `SimpleStrategy`: this many replicas, the owners of the next distinct nodes
    /// clockwise from the token, whatever their datacenter or rack.
    Simple(usize),
    /// `NetworkTopologyStrategy`: replicas per datacenter (by name, ascending; a
    /// datacenter not listed holds none).
    NetworkTopology(Arc<[(String, usize)]>),
}

impl ReplicationStrategy {
    /// `NetworkTopologyStrategy` with these replicas per datacenter (a datacenter named
    /// twice keeps its last factor).
    pub fn network_topology(dcs: impl IntoIterator<Item = (String, usize)>) -> ReplicationStrategy {
        let map: std::collections::BTreeMap<String, usize> = dcs.into_iter().collect();
        ReplicationStrategy::NetworkTopology(map.into_iter().collect())
    }

    /// The keyspace's replication factor: SimpleStrategy's, or the sum over datacenters
    /// (Cassandra's `getReplicationFactor()`; what QUORUM and ALL count against).
    pub fn total(&self) -> usize {
        match self {
            ReplicationStrategy::Simple(rf) => *rf,
            ReplicationStrategy::NetworkTopology(dcs) => dcs.iter().map(|(_, rf)| *rf).sum(),
        }
    }

    /// The replicas `dc` keeps under NetworkTopologyStrategy (0 when not listed), `None`
    /// under SimpleStrategy, which knows no datacenters.
    pub fn dc_factor(&self, dc: &str) -> Option<usize> {
        match self {
            ReplicationStrategy::Simple(_) => None,
            ReplicationStrategy::NetworkTopology(dcs) => Some(
                dcs.iter()
                    .find(|(name, _)| name == dc)
                    .map_or(0, |(_, rf)| *rf),
            ),
        }
    }
}

/// One datacenter's progress in the walk.
struct DcFill<'a> {
    dc: &'a str,
    /// Replicas still to place here: its factor, or its node count if smaller.
    left: usize,
    /// Replicas that may still go to racks already holding one (factor − racks; none
    /// while there are at least as many racks as replicas).
    rack_repeats: isize,
}

/// NetworkTopologyStrategy's replicas of `token`: one walk clockwise from it over the
/// ring's tokens. A node is taken for its datacenter while that datacenter needs replicas
/// and the node is not taken yet, if its (datacenter, rack) is not seen yet, or if the
/// datacenter may still repeat a rack: it may repeat `factor − racks` times, the first
/// repeats met in ring order (so every rack gets one replica before a datacenter with
/// fewer racks than replicas doubles up). A datacenter with fewer nodes than its factor
/// gets all of them. The list is in the order nodes were taken: its first is the primary.
pub(crate) fn network_topology(
    ring: &Ring,
    token: Token,
    dcs: &[(String, usize)],
) -> Vec<Endpoint> {
    let mut fills: Vec<DcFill<'_>> = dcs
        .iter()
        .filter_map(|(dc, rf)| {
            let size = ring.dc_size(dc);
            (*rf > 0 && size.nodes > 0).then(|| DcFill {
                dc: dc.as_str(),
                left: (*rf).min(size.nodes),
                rack_repeats: isize::try_from(*rf)
                    .unwrap_or(isize::MAX)
                    .saturating_sub(isize::try_from(size.racks).unwrap_or(isize::MAX)),
            })
        })
        .collect();
    let mut to_fill = fills.len();
    let mut out: Vec<Endpoint> = Vec::with_capacity(fills.iter().map(|f| f.left).sum());
    let mut seen_racks: Vec<(&str, &str)> = Vec::new();
    for node in ring.clockwise(token) {
        if to_fill == 0 {
            break;
        }
        let (dc, rack) = ring.location_of(node);
        let Some(fill) = fills.iter_mut().find(|f| f.dc == dc) else {
            continue;
        };
        if fill.left == 0 || out.contains(&node) {
            continue;
        }
        if !seen_racks.contains(&(dc, rack)) {
            seen_racks.push((dc, rack));
        } else if fill.rack_repeats > 0 {
            fill.rack_repeats -= 1;
        } else {
            continue;
        }
        out.push(node);
        fill.left -= 1;
        if fill.left == 0 {
            to_fill -= 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ring::Location;
    use std::net::{IpAddr, Ipv4Addr, SocketAddr};

    fn ep(i: u8) -> Endpoint {
        SocketAddr::new(IpAddr::V4(Ipv4Addr::new(127, 0, 0, i)), 7000)
    }

    /// A ring of `(node, tokens, dc, rack)`.
    fn ring(nodes: &[(u8, &[i64], &str, &str)]) -> Ring {
        let tokens: Vec<(Endpoint, Vec<Token>)> = nodes
            .iter()
            .map(|(n, t, _, _)| (ep(*n), t.iter().map(|t| Token(*t)).collect()))
            .collect();
        Ring::new(tokens.iter().map(|(e, t)| (*e, t.as_slice()))).with_locations(nodes.iter().map(
            |(n, _, dc, rack)| {
                (
                    ep(*n),
                    Location {
                        dc: (*dc).to_owned(),
                        rack: (*rack).to_owned(),
                    },
                )
            },
        ))
    }

    fn nts(dcs: &[(&str, usize)]) -> ReplicationStrategy {
        ReplicationStrategy::network_topology(dcs.iter().map(|(d, rf)| ((*d).to_owned(), *rf)))
    }

    struct Case {
        name: &'static str,
        ring: Ring,
        placement: ReplicationStrategy,
        token: i64,
        /// Hand-derived from Cassandra 4.1's rules (see `network_topology`), in order.
        expected: &'static [u8],
    }

    #[test]
    fn network_topology_places_as_cassandra_does() {
        // One DC, three racks, two nodes each (one token per node).
        let three_racks = ring(&[
            (1, &[0], "dc1", "r1"),
            (2, &[10], "dc1", "r1"),
            (3, &[20], "dc1", "r2"),
            (4, &[30], "dc1", "r2"),
            (5, &[40], "dc1", "r3"),
            (6, &[50], "dc1", "r3"),
        ]);
        // One DC, racks A (three nodes) and B (one node).
        let uneven = ring(&[
            (1, &[0], "dc1", "A"),
            (2, &[10], "dc1", "A"),
            (3, &[20], "dc1", "A"),
            (4, &[30], "dc1", "B"),
        ]);
        // Two DCs interleaved on the ring; both name a rack `r1`, which are distinct.
        let two_dcs = ring(&[
            (1, &[0], "dc1", "r1"),
            (2, &[10], "dc2", "r1"),
            (3, &[20], "dc1", "r2"),
            (4, &[30], "dc2", "r1"),
            (5, &[40], "dc1", "r1"),
            (6, &[50], "dc2", "r2"),
        ]);
        // Vnodes: node 1 owns two neighbouring tokens.
        let vnodes = ring(&[
            (1, &[0, 10], "dc1", "A"),
            (2, &[20], "dc1", "A"),
            (3, &[30], "dc1", "B"),
        ]);
        let cases = [
            // Walk from 10: 2 (r1), 3 (r2), 4 skipped (r2 seen, no repeats), 5 (r3).
            Case {
                name: "racks before ring order",
                ring: three_racks.clone(),
                placement: nts(&[("dc1", 3)]),
                token: 5,
                expected: &[2, 3, 5],
            },
            // Fewer replicas than racks: one per rack, the first racks met.
            Case {
                name: "rf below racks",
                ring: three_racks.clone(),
                placement: nts(&[("dc1", 2)]),
                token: 45,
                expected: &[6, 1],
            },
            // rf 3 over two racks: one repeat allowed, taken by the first repeat met
            // (2), then 3 skipped, then rack B (4).
            Case {
                name: "rf above racks",
                ring: uneven.clone(),
                placement: nts(&[("dc1", 3)]),
                token: 0,
                expected: &[1, 2, 4],
            },
            Case {
                name: "rf above racks, wrapping",
                ring: uneven.clone(),
                placement: nts(&[("dc1", 3)]),
                token: 15,
                expected: &[3, 4, 1],
            },
            // More replicas than nodes: every node of the DC once.
            Case {
                name: "rf above nodes",
                ring: uneven.clone(),
                placement: nts(&[("dc1", 7)]),
                token: 25,
                expected: &[4, 1, 2, 3],
            },
            // Walk from 0: 1 (dc1 r1), 2 (dc2 r1), 3 (dc1 r2: dc1 done), 4 skipped (dc2
            // r1 seen), 5 skipped (dc1 done), 6 (dc2 r2).
            Case {
                name: "two datacenters",
                ring: two_dcs.clone(),
                placement: nts(&[("dc1", 2), ("dc2", 2)]),
                token: 0,
                expected: &[1, 2, 3, 6],
            },
            Case {
                name: "two datacenters from the middle",
                ring: two_dcs.clone(),
                placement: nts(&[("dc1", 2), ("dc2", 2)]),
                token: 25,
                expected: &[4, 5, 6, 3],
            },
            // Uneven factors: dc2's one replica is the first dc2 node met.
            Case {
                name: "uneven factors",
                ring: two_dcs.clone(),
                placement: nts(&[("dc1", 3), ("dc2", 1)]),
                token: 35,
                expected: &[5, 6, 1, 3],
            },
            Case {
                name: "a datacenter with factor 0",
                ring: two_dcs.clone(),
                placement: nts(&[("dc1", 2), ("dc2", 0)]),
                token: 0,
                expected: &[1, 3],
            },
            Case {
                name: "a datacenter not listed",
                ring: two_dcs.clone(),
                placement: nts(&[("dc2", 2)]),
                token: 0,
                expected: &[2, 6],
            },
            Case {
                name: "a datacenter without nodes",
                ring: two_dcs.clone(),
                placement: nts(&[("dc3", 3)]),
                token: 0,
                expected: &[],
            },
            // A node met again on another token is not taken twice, and its second
            // token does not use up the rack repeat.
            Case {
                name: "vnodes, rf equal to racks",
                ring: vnodes.clone(),
                placement: nts(&[("dc1", 2)]),
                token: 0,
                expected: &[1, 3],
            },
            Case {
                name: "vnodes, one rack repeat",
                ring: vnodes.clone(),
                placement: nts(&[("dc1", 3)]),
                token: 0,
                expected: &[1, 2, 3],
            },
        ];
        for case in cases {
            let got = case.ring.place(Token(case.token), &case.placement);
            let expected: Vec<Endpoint> = case.expected.iter().map(|i| ep(*i)).collect();
            assert_eq!(got, expected, "{}", case.name);
        }
    }

    #[test]
    fn totals_and_datacenter_factors() {
        let p = nts(&[("dc2", 2), ("dc1", 3), ("dc3", 0)]);
        assert_eq!(p.total(), 5);
        assert_eq!(p.dc_factor("dc1"), Some(3));
        assert_eq!(p.dc_factor("dc9"), Some(0));
        assert_eq!(ReplicationStrategy::Simple(3).dc_factor("dc1"), None);
        assert_eq!(ReplicationStrategy::Simple(3).total(), 3);
    }

    proptest::proptest! {
        /// With one datacenter and one rack, NetworkTopologyStrategy is SimpleStrategy.
        #[test]
        fn one_rack_is_simple_strategy(
            tokens in proptest::collection::vec(proptest::prelude::any::<i64>(), 1..24),
            probe in proptest::prelude::any::<i64>(),
            rf in 1usize..6,
        ) {
            let owned: Vec<(Endpoint, Vec<Token>)> = tokens
                .chunks(3)
                .enumerate()
                .map(|(i, t)| (ep(u8::try_from(i + 1).unwrap_or(u8::MAX)), t.iter().map(|t| Token(*t)).collect()))
                .collect();
            let r = Ring::new(owned.iter().map(|(e, t)| (*e, t.as_slice())));
            proptest::prop_assert_eq!(
                r.place(Token(probe), &nts(&[(crate::ring::DEFAULT_DC, rf)])),
                r.replicas(Token(probe), rf)
            );
        }
    }
}
