//! Token allocation: the tokens a node takes when it joins, chosen so that every node of
//! its datacenter ends up owning about the same share of the data.
//!
//! Random tokens (what a node of a new cluster takes) leave vnode rings uneven: with 16
//! tokens per node, the largest owner holds tens of percent more than the smallest. A
//! joining node instead places each token greedily: among split points of the widest
//! ranges of its datacenter's ring, it takes the one that brings every node's
//! primary ownership and *replicated* ownership (the share of tokens a node is a replica
//! of, at the replication factor allocation assumes — 3, Cassandra's
//! `allocate_tokens_for_local_replication_factor` default) closest to the even share. Like Cassandra's allocator, it optimises ownership
//! within the datacenter the node joins; nodes of other datacenters are ignored. A new
//! cluster gets evenly interleaved tokens instead ([`even`]).

use std::collections::BTreeMap;

use mosaic_types::Token;

use crate::Endpoint;

/// The replication factor token allocation balances for.
pub const ALLOCATION_RF: usize = 3;

/// Widest ranges whose split points are candidates for each token.
const CANDIDATE_RANGES: usize = 64;

/// Evenly interleaved tokens for a new cluster of `nodes` nodes of `per_node` tokens:
/// node `i` (from 0) gets the points `j * nodes + i` of `nodes * per_node` equal steps of
/// the ring, so every node's replicated ownership is the same at any factor.
pub fn even(nodes: usize, per_node: usize) -> Vec<Vec<i64>> {
    let total = (nodes * per_node).max(1) as i128;
    let step = (1i128 << 64) / total;
    (0..nodes)
        .map(|i| {
            (0..per_node)
                .map(|j| {
                    let point = (j * nodes + i) as i128;
                    // Offset by one step's half so no token is the ring's minimum.
                    (i128::from(i64::MIN) + step / 2 + point * step) as i64
                })
                .collect()
        })
        .collect()
}

/// `count` tokens for `me` joining a datacenter whose nodes own `existing` (node, its
/// tokens), balanced as the module doc says. Empty `existing`: evenly spread tokens.
pub fn allocate(existing: &[(Endpoint, Vec<i64>)], me: Endpoint, count: usize) -> Vec<i64> {
    let mut ring: BTreeMap<i64, Endpoint> = BTreeMap::new();
    for (node, tokens) in existing {
        if *node == me {
            continue;
        }
        for t in tokens {
            ring.entry(*t).or_insert(*node);
        }
    }
    if ring.is_empty() {
        return even(1, count).into_iter().next().unwrap_or_default();
    }
    let nodes = {
        let mut n: Vec<Endpoint> = ring.values().copied().collect();
        n.sort();
        n.dedup();
        n.len() + 1
    };
    let rf = ALLOCATION_RF.min(nodes);
    let mut mine = Vec::with_capacity(count);
    for _ in 0..count {
        let mut best: Option<(f64, i64)> = None;
        for candidate in candidates(&ring) {
            if ring.contains_key(&candidate) {
                continue;
            }
            ring.insert(candidate, me);
            let score = imbalance(&ring, rf, nodes);
            ring.remove(&candidate);
            if best.is_none_or(|(s, _)| score < s) {
                best = Some((score, candidate));
            }
        }
        let Some((_, token)) = best else {
            break;
        };
        ring.insert(token, me);
        mine.push(token);
    }
    mine.sort_unstable();
    mine
}

/// Split points (every eighth) of the widest ranges of `ring`.
fn candidates(ring: &BTreeMap<i64, Endpoint>) -> Vec<i64> {
    let mut ranges: Vec<(i128, i64)> = Vec::with_capacity(ring.len());
    let mut prev = ring.keys().next_back().copied().unwrap_or(i64::MIN);
    for t in ring.keys() {
        ranges.push((width(prev, *t), prev));
        prev = *t;
    }
    ranges.sort_unstable_by(|a, b| b.cmp(a));
    let mut out = Vec::new();
    for (w, left) in ranges.into_iter().take(CANDIDATE_RANGES) {
        for eighth in 1..=7 {
            let point = i128::from(left) + w * eighth / 8;
            // Wrap into the token space, avoiding the ring's minimum token.
            let wrapped =
                (point - i128::from(i64::MIN)).rem_euclid(1i128 << 64) + i128::from(i64::MIN);
            let token = wrapped as i64;
            if token != i64::MIN {
                out.push(token);
            }
        }
    }
    out
}

/// The width of the token range `(left, right]` (the whole ring when they are equal).
fn width(left: i64, right: i64) -> i128 {
    let w = i128::from(right) - i128::from(left);
    if w <= 0 {
        w + (1i128 << 64)
    } else {
        w
    }
}

/// Each node's replicated ownership at `rf` (fractions of the ring, summing to `rf`).
pub fn replicated_ownership(ring: &BTreeMap<i64, Endpoint>, rf: usize) -> BTreeMap<Endpoint, f64> {
    let mut own: BTreeMap<Endpoint, f64> = BTreeMap::new();
    let tokens: Vec<(i64, Endpoint)> = ring.iter().map(|(t, n)| (*t, *n)).collect();
    let total = 2f64.powi(64);
    let Some(last) = tokens.last().map(|(t, _)| *t) else {
        return own;
    };
    let mut prev = last;
    for (i, (t, _)) in tokens.iter().enumerate() {
        let w = width(prev, *t) as f64 / total;
        let mut replicas: Vec<Endpoint> = Vec::with_capacity(rf);
        for (_, node) in tokens.iter().cycle().skip(i).take(tokens.len()) {
            if !replicas.contains(node) {
                replicas.push(*node);
                if replicas.len() == rf {
                    break;
                }
            }
        }
        for r in replicas {
            *own.entry(r).or_default() += w;
        }
        prev = *t;
    }
    own
}

/// How far the nodes' ownership is from even: the sum of squared relative differences
/// from the even share, of primary ownership and of replicated ownership at `rf` (both
/// are what operators read in `nodetool status`). `nodes` counts the joining node, which
/// may own nothing yet.
fn imbalance(ring: &BTreeMap<i64, Endpoint>, rf: usize, nodes: usize) -> f64 {
    let mut total = 0.0;
    for factor in [1, rf] {
        let own = replicated_ownership(ring, factor);
        let even = factor as f64 / nodes as f64;
        let missing = nodes.saturating_sub(own.len()) as f64;
        total += own.values().map(|o| (o / even - 1.0).powi(2)).sum::<f64>() + missing;
    }
    total
}

/// The ratio of the largest to the smallest replicated ownership among `nodes` (1.0 is
/// perfectly even).
pub fn spread(ring: &BTreeMap<i64, Endpoint>, rf: usize) -> f64 {
    let own = replicated_ownership(ring, rf);
    let max = own.values().copied().fold(0.0, f64::max);
    let min = own.values().copied().fold(f64::INFINITY, f64::min);
    if min > 0.0 {
        max / min
    } else {
        f64::INFINITY
    }
}

/// The ring of `owners` as a token map (the first owner listed wins a shared token).
pub fn token_map<'a>(
    owners: impl IntoIterator<Item = (Endpoint, &'a [i64])>,
) -> BTreeMap<i64, Endpoint> {
    let mut ring = BTreeMap::new();
    for (node, tokens) in owners {
        for t in tokens {
            ring.entry(*t).or_insert(node);
        }
    }
    ring
}

/// A ring token, for callers holding gossip's `i64`s.
pub fn as_tokens(tokens: &[i64]) -> Vec<Token> {
    tokens.iter().map(|t| Token(*t)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{IpAddr, Ipv4Addr, SocketAddr};

    fn ep(i: u8) -> Endpoint {
        SocketAddr::new(IpAddr::V4(Ipv4Addr::new(127, 0, 0, i)), 7000)
    }

    #[test]
    fn even_tokens_give_every_node_the_same_share() {
        let tokens = even(5, 16);
        assert!(tokens.iter().flatten().all(|t| *t != i64::MIN));
        let owners: Vec<(Endpoint, Vec<i64>)> = (0..5)
            .map(|i| (ep(i as u8 + 1), tokens[i].clone()))
            .collect();
        let ring = token_map(owners.iter().map(|(n, t)| (*n, t.as_slice())));
        assert_eq!(ring.len(), 80, "distinct tokens");
        assert!(spread(&ring, 3) < 1.0001, "{}", spread(&ring, 3));
    }

    /// Growing an even cluster one node at a time keeps every node's primary and
    /// replicated ownership within 10% of every other's (issue 14's balance bar).
    #[test]
    fn joining_nodes_keep_ownership_within_ten_percent() {
        let tokens = even(3, 16);
        let mut owners: Vec<(Endpoint, Vec<i64>)> = (0..3)
            .map(|i| (ep(i as u8 + 1), tokens[i].clone()))
            .collect();
        for joining in 4..=8u8 {
            let mine = allocate(&owners, ep(joining), 16);
            assert_eq!(mine.len(), 16);
            assert!(mine.windows(2).all(|w| w[0] < w[1]), "ascending, distinct");
            owners.push((ep(joining), mine));
            let ring = token_map(owners.iter().map(|(n, t)| (*n, t.as_slice())));
            for rf in [1, 3] {
                let s = spread(&ring, rf);
                assert!(s <= 1.10, "{} nodes, rf {rf}: spread {s:.3}", owners.len());
            }
        }
    }

    #[test]
    fn a_node_joining_an_empty_ring_spreads_its_tokens() {
        let mine = allocate(&[], ep(1), 8);
        assert_eq!(mine.len(), 8);
        let ring = token_map([(ep(1), mine.as_slice())]);
        assert_eq!(ring.len(), 8);
    }
}
