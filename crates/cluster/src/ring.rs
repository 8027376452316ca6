//! The token ring: which node owns each token, and where each node stands (datacenter
//! and rack).
//!
//! Owns the answer to "which nodes hold this token, and in which role": the replicas of a
//! token are placed by the keyspace's [`ReplicationStrategy`] — SimpleStrategy's next RF distinct
//! nodes clockwise, or NetworkTopologyStrategy's per-datacenter, rack-aware walk
//! (`placement.rs`) — exactly as Cassandra places them, so drivers' token-aware routing
//! picks a real replica. Index 0 of that list is the *primary* (DEPART's replica
//! differentiation); the rest are redundant copies of that primary's data. Pure: no I/O,
//! no clocks.

use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::Arc;

use mosaic_rows::{decode_token, encode_token, KeyRange};
use mosaic_types::Token;

use crate::placement::ReplicationStrategy;
use crate::Endpoint;

/// The datacenter of a node the ring has no location for (Cassandra's and Mosaic's
/// default `data_center`).
pub const DEFAULT_DC: &str = "datacenter1";
/// The rack of a node the ring has no location for.
pub const DEFAULT_RACK: &str = "rack1";

/// Where a node stands, as its snitch says (Mosaic gossips each node's configured
/// `data_center` and `rack`, as Cassandra's `GossipingPropertyFileSnitch` does).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Location {
    /// Its datacenter.
    pub dc: String,
    /// Its rack within the datacenter.
    pub rack: String,
}

/// How many token-owning nodes and distinct racks a datacenter has.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct DcSize {
    pub(crate) nodes: usize,
    pub(crate) racks: usize,
}

/// A replica's place in a token's replica list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReplicaRole {
    /// 0 for the primary, 1..RF-1 for redundant copies.
    pub index: usize,
    /// The primary of the token (the *source* of a redundant copy).
    pub primary: Endpoint,
}

/// Which node owns each token (vnodes).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Ring {
    tokens: BTreeMap<Token, Endpoint>,
    nodes: Vec<Endpoint>,
    /// Each node's location; nodes missing here stand in [`DEFAULT_DC`], [`DEFAULT_RACK`].
    locations: BTreeMap<Endpoint, Location>,
    /// Per datacenter of the token-owning nodes: nodes and racks.
    dcs: BTreeMap<String, DcSize>,
    /// While nodes join or leave: the ring once every move completes. Its replicas that
    /// this ring lacks are a token's *pending* replicas: they get its writes (and count
    /// towards the write's consistency level on top of it, as Cassandra's pending
    /// endpoints do) but serve no reads.
    future: Option<Arc<Ring>>,
}

/// A token range whose replicas change with the moves under way ([`Ring::moves`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Move {
    /// The range is `(left, right]` (wrapping when `left >= right`).
    pub left: Token,
    /// Its last token.
    pub right: Token,
    /// Its replicas now, primary first.
    pub now: Vec<Endpoint>,
    /// Its replicas once the moves complete, primary first.
    pub after: Vec<Endpoint>,
}

impl Move {
    /// The nodes that become replicas of the range.
    pub fn gained(&self) -> impl Iterator<Item = Endpoint> + '_ {
        self.after.iter().copied().filter(|n| !self.now.contains(n))
    }

    /// The nodes that stop being replicas of the range.
    pub fn lost(&self) -> impl Iterator<Item = Endpoint> + '_ {
        self.now.iter().copied().filter(|n| !self.after.contains(n))
    }

    /// The engine keys of the range.
    pub fn keys(&self) -> Vec<KeyRange> {
        token_range_keys(self.left, self.right)
    }
}

/// A contiguous run of engine keys whose tokens share one replica list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Segment {
    /// The keys.
    pub range: KeyRange,
    /// The replicas, primary first.
    pub replicas: Vec<Endpoint>,
}

impl Ring {
    /// A ring of `owners` (node, its tokens). A token claimed twice goes to the node listed
    /// first (callers list nodes in a stable order, so every node builds the same ring).
    pub fn new<'a>(owners: impl IntoIterator<Item = (Endpoint, &'a [Token])>) -> Ring {
        let mut tokens = BTreeMap::new();
        let mut nodes = Vec::new();
        for (node, owned) in owners {
            for t in owned {
                tokens.entry(*t).or_insert(node);
            }
            if !nodes.contains(&node) {
                nodes.push(node);
            }
        }
        nodes.sort();
        let mut ring = Ring {
            tokens,
            nodes,
            locations: BTreeMap::new(),
            dcs: BTreeMap::new(),
            future: None,
        };
        ring.count_dcs();
        ring
    }

    /// This ring with `after`, the ring once the moves under way complete (see
    /// [`Ring::pending`]). An `after` owning the same tokens as this ring is no move.
    pub fn with_future(mut self, after: Ring) -> Ring {
        self.future = (after.tokens != self.tokens).then(|| Arc::new(after));
        self
    }

    /// The ring once the moves under way complete; `None` when no node joins or leaves.
    pub fn future(&self) -> Option<&Ring> {
        self.future.as_deref()
    }

    /// The pending replicas of `token` under `placement`: replicas once the moves under
    /// way complete that are not replicas now (in their order there). Empty when nothing
    /// moves.
    pub fn pending(&self, token: Token, placement: &ReplicationStrategy) -> Vec<Endpoint> {
        let Some(future) = &self.future else {
            return Vec::new();
        };
        let now = self.place(token, placement);
        future
            .place(token, placement)
            .into_iter()
            .filter(|n| !now.contains(n))
            .collect()
    }

    /// While nodes join or leave: the token ranges `(left, right]` (in ring order, the
    /// first wrapping around) whose replicas differ between now and once the moves
    /// complete, each with both replica lists. Empty when nothing moves.
    pub fn moves(&self, placement: &ReplicationStrategy) -> Vec<Move> {
        let Some(future) = &self.future else {
            return Vec::new();
        };
        // Both rings' tokens bound the ranges on which both replica lists are constant.
        let mut bounds: Vec<Token> = self
            .tokens
            .keys()
            .chain(future.tokens.keys())
            .copied()
            .collect();
        bounds.sort();
        bounds.dedup();
        let Some(last) = bounds.last().copied() else {
            return Vec::new();
        };
        let mut out: Vec<Move> = Vec::new();
        let mut left = last;
        for right in bounds {
            let now = self.place(right, placement);
            let after = future.place(right, placement);
            if now != after {
                match out.last_mut() {
                    Some(m) if m.right == left && m.now == now && m.after == after => {
                        m.right = right
                    }
                    _ => out.push(Move {
                        left,
                        right,
                        now,
                        after,
                    }),
                }
            }
            left = right;
        }
        out
    }

    /// This ring with the nodes' locations (datacenter and rack); nodes not listed stand
    /// in [`DEFAULT_DC`] and [`DEFAULT_RACK`].
    pub fn with_locations(
        mut self,
        locations: impl IntoIterator<Item = (Endpoint, Location)>,
    ) -> Ring {
        self.locations = locations.into_iter().collect();
        self.count_dcs();
        self
    }

    /// Counts each datacenter's token-owning nodes and racks (what NetworkTopologyStrategy
    /// needs to know when a datacenter is exhausted, as Cassandra's `Topology` does).
    fn count_dcs(&mut self) {
        let mut racks: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
        let mut dcs: BTreeMap<String, DcSize> = BTreeMap::new();
        for node in &self.nodes {
            let (dc, rack) = self.location_of(*node);
            dcs.entry(dc.to_owned()).or_default().nodes += 1;
            let seen = racks.entry(dc).or_default();
            if !seen.contains(&rack) {
                seen.push(rack);
            }
        }
        for (dc, seen) in racks {
            if let Some(size) = dcs.get_mut(dc) {
                size.racks = seen.len();
            }
        }
        self.dcs = dcs;
    }

    /// `node`'s datacenter and rack.
    pub fn location_of(&self, node: Endpoint) -> (&str, &str) {
        self.locations
            .get(&node)
            .map_or((DEFAULT_DC, DEFAULT_RACK), |l| {
                (l.dc.as_str(), l.rack.as_str())
            })
    }

    /// `node`'s datacenter.
    pub fn dc_of(&self, node: Endpoint) -> &str {
        self.location_of(node).0
    }

    /// The datacenters of the token-owning nodes, ascending.
    pub fn datacenters(&self) -> impl Iterator<Item = &str> + '_ {
        self.dcs.keys().map(String::as_str)
    }

    /// How many token-owning nodes and racks `dc` has.
    pub(crate) fn dc_size(&self, dc: &str) -> DcSize {
        self.dcs.get(dc).copied().unwrap_or_default()
    }

    /// The owners of the tokens clockwise from `token` (the first token at or after it,
    /// wrapping once around the ring), one per token.
    pub(crate) fn clockwise(&self, token: Token) -> impl Iterator<Item = Endpoint> + '_ {
        self.tokens
            .range(token..)
            .chain(self.tokens.range(..token))
            .map(|(_, n)| *n)
    }

    /// The nodes with at least one token, ascending.
    pub fn nodes(&self) -> &[Endpoint] {
        &self.nodes
    }

    /// Every token of the ring, ascending.
    pub fn tokens(&self) -> impl Iterator<Item = Token> + '_ {
        self.tokens.keys().copied()
    }

    /// Whether no node owns a token.
    pub fn is_empty(&self) -> bool {
        self.tokens.is_empty()
    }

    /// The replicas of `token` for replication factor `rf`, primary first: the owners of
    /// the first token at or after `token`, then of the following tokens clockwise,
    /// skipping nodes already listed. At most as many as there are nodes.
    pub fn replicas(&self, token: Token, rf: usize) -> Vec<Endpoint> {
        let want = rf.min(self.nodes.len());
        let mut out = Vec::with_capacity(want);
        if want == 0 {
            return out;
        }
        for node in self.clockwise(token) {
            if !out.contains(&node) {
                out.push(node);
                if out.len() == want {
                    break;
                }
            }
        }
        out
    }

    /// The replicas of `token` under `placement`, primary first (see [`ReplicationStrategy`]).
    pub fn place(&self, token: Token, placement: &ReplicationStrategy) -> Vec<Endpoint> {
        match placement {
            ReplicationStrategy::Simple(rf) => self.replicas(token, *rf),
            ReplicationStrategy::NetworkTopology(dcs) => {
                crate::placement::network_topology(self, token, dcs)
            }
        }
    }

    /// `node`'s role for `token` at `rf`, or `None` if it is not a replica.
    pub fn role(&self, token: Token, rf: usize, node: Endpoint) -> Option<ReplicaRole> {
        let replicas = self.replicas(token, rf);
        let index = replicas.iter().position(|n| *n == node)?;
        Some(ReplicaRole {
            index,
            primary: *replicas.first()?,
        })
    }

    /// The fraction of the token space whose primary is each node (`nodetool status`'s
    /// "owns" without replication), in `nodes()` order.
    pub fn primary_share(&self) -> Vec<(Endpoint, f64)> {
        let mut share: BTreeMap<Endpoint, f64> = self.nodes.iter().map(|n| (*n, 0.0)).collect();
        let total = 2f64.powi(64);
        let mut prev: Option<Token> = self.tokens.keys().next_back().copied();
        for (t, node) in &self.tokens {
            // The range (prev, t] belongs to t's owner; the first range wraps around.
            let width = match prev {
                Some(p) if p < *t => (i128::from(t.0) - i128::from(p.0)) as f64,
                Some(p) => (i128::from(t.0) - i128::from(p.0) + (1i128 << 64)) as f64,
                None => total,
            };
            let width = if self.tokens.len() == 1 { total } else { width };
            if let Some(s) = share.get_mut(node) {
                *s += width / total;
            }
            prev = Some(*t);
        }
        share.into_iter().collect()
    }

    /// Splits `range` (engine keys, which start with their token) at the ring's token
    /// boundaries, merging neighbours with the same replica list: the pieces a coordinator
    /// reads one replica set at a time, in key order.
    pub fn segments(&self, range: &KeyRange, rf: usize) -> Vec<Segment> {
        self.segments_placed(range, &ReplicationStrategy::Simple(rf))
    }

    /// [`Ring::segments`] under any placement.
    pub fn segments_placed(
        &self,
        range: &KeyRange,
        placement: &ReplicationStrategy,
    ) -> Vec<Segment> {
        if range.is_empty() {
            return Vec::new();
        }
        let mut out: Vec<Segment> = Vec::new();
        let mut push = |start: Vec<u8>, end: Option<Vec<u8>>, replicas: Vec<Endpoint>| {
            let piece = clamp(range, start, end);
            if piece.is_empty() {
                return;
            }
            if let Some(last) = out.last_mut() {
                if last.replicas == replicas && last.range.end.as_ref() == Some(&piece.start) {
                    last.range.end = piece.end;
                    return;
                }
            }
            out.push(Segment {
                range: piece,
                replicas,
            });
        };
        if self.tokens.is_empty() {
            push(Vec::new(), None, Vec::new());
            return out;
        }
        // Keys of tokens in (prev, t] are placed by t; those after the last token wrap to
        // the first. Only the tokens the range touches are visited: from the first token
        // at or after the range's first token, until a piece reaches the range's end.
        let first_token = decode_token(&range.start).unwrap_or(Token::MIN);
        let mut start: Vec<u8> = range.start.clone();
        for t in self.tokens.range(first_token..).map(|(t, _)| *t) {
            let end = key_after_token(t);
            push(start, end.clone(), self.place(t, placement));
            let past_end = match (&end, &range.end) {
                (None, _) => true,
                (Some(e), Some(range_end)) => e >= range_end,
                (Some(_), None) => false,
            };
            match end {
                Some(e) if !past_end => start = e,
                _ => return out,
            }
        }
        let first = self.tokens.keys().next().copied().unwrap_or(Token::MIN);
        push(start, None, self.place(first, placement));
        out
    }

    /// The token ranges `(left, right]` for which `node` is a replica at `rf`, each with
    /// its replica list (what repair compares).
    pub fn ranges_of(&self, node: Endpoint, rf: usize) -> Vec<(Token, Token, Vec<Endpoint>)> {
        self.ranges_placed(node, &ReplicationStrategy::Simple(rf))
    }

    /// [`Ring::ranges_of`] under any placement.
    pub fn ranges_placed(
        &self,
        node: Endpoint,
        placement: &ReplicationStrategy,
    ) -> Vec<(Token, Token, Vec<Endpoint>)> {
        let mut out = Vec::new();
        let Some(last) = self.tokens.keys().next_back().copied() else {
            return out;
        };
        let mut prev = last;
        for t in self.tokens.keys() {
            let replicas = self.place(*t, placement);
            if replicas.contains(&node) {
                out.push((prev, *t, replicas));
            }
            prev = *t;
        }
        out
    }
}

/// The first engine key after every key of `token` (`None` past the last token).
fn key_after_token(token: Token) -> Option<Vec<u8>> {
    token
        .0
        .checked_add(1)
        .map(|n| encode_token(Token(n)).to_vec())
}

/// `range` ∩ `[start, end)`.
fn clamp(range: &KeyRange, start: Vec<u8>, end: Option<Vec<u8>>) -> KeyRange {
    let start = start.max(range.start.clone());
    let end = match (end, &range.end) {
        (None, e) => e.clone(),
        (Some(a), None) => Some(a),
        (Some(a), Some(b)) => Some(a.min(b.clone())),
    };
    let r = KeyRange { start, end };
    if r.is_empty() {
        KeyRange::empty()
    } else {
        r
    }
}

/// The engine keys of the token range `(left, right]` (which wraps when `left >= right`).
pub fn token_range_keys(left: Token, right: Token) -> Vec<KeyRange> {
    mosaic_rows::ring_range(left, right)
}

/// The keys of exactly one token.
pub fn single_token_keys(token: Token) -> KeyRange {
    mosaic_rows::token_range(Bound::Included(token), Bound::Included(token))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{IpAddr, Ipv4Addr, SocketAddr};

    fn ep(i: u8) -> Endpoint {
        SocketAddr::new(IpAddr::V4(Ipv4Addr::new(127, 0, 0, i)), 7000)
    }

    fn ring3() -> Ring {
        let a = [Token(-100), Token(50)];
        let b = [Token(0)];
        let c = [Token(100)];
        Ring::new([(ep(1), &a[..]), (ep(2), &b[..]), (ep(3), &c[..])])
    }

    /// Node 4 joins ring3 with token 25: the ranges it gains are pending for it, and
    /// `moves` names each range whose replicas change with both lists.
    #[test]
    fn a_joining_node_is_a_pending_replica_of_the_ranges_it_gains() {
        let now = ring3();
        let a = [Token(-100), Token(50)];
        let b = [Token(0)];
        let c = [Token(100)];
        let d = [Token(25)];
        let after = Ring::new([
            (ep(1), &a[..]),
            (ep(2), &b[..]),
            (ep(3), &c[..]),
            (ep(4), &d[..]),
        ]);
        let ring = now.clone().with_future(after);
        let simple = ReplicationStrategy::Simple(2);
        // (0, 25] was node 1's then node 3's; it becomes node 4's then node 1's.
        assert_eq!(ring.place(Token(10), &simple), vec![ep(1), ep(3)]);
        assert_eq!(ring.pending(Token(10), &simple), vec![ep(4)]);
        // (-100, 0] is node 2's then node 1's; the next token clockwise becomes node 4's,
        // so node 4 becomes its second replica. (25, 50] stays node 1's then node 3's.
        assert_eq!(ring.pending(Token(-50), &simple), vec![ep(4)]);
        assert!(ring.pending(Token(40), &simple).is_empty());
        let moves = ring.moves(&simple);
        assert!(moves.iter().all(|m| m.now != m.after));
        let gained: Vec<(i64, i64)> = moves
            .iter()
            .filter(|m| m.gained().any(|n| n == ep(4)))
            .map(|m| (m.left.0, m.right.0))
            .collect();
        assert_eq!(gained, vec![(-100, 0), (0, 25)]);
        let first = moves.iter().find(|m| m.right == Token(25)).unwrap();
        assert_eq!(first.now, vec![ep(1), ep(3)]);
        assert_eq!(first.after, vec![ep(4), ep(1)]);
        assert_eq!(first.lost().collect::<Vec<_>>(), vec![ep(3)]);
        // Without a move nothing is pending; a future owning the same tokens is no move.
        assert!(now.pending(Token(10), &simple).is_empty());
        assert!(now.clone().with_future(ring3()).future().is_none());
    }

    #[test]
    fn replicas_walk_clockwise_skipping_repeats() {
        let r = ring3();
        // token 10 → first token ≥ 10 is 50 (node1), then 100 (node3), then -100 (node1,
        // skipped), 0 (node2).
        assert_eq!(r.replicas(Token(10), 3), vec![ep(1), ep(3), ep(2)]);
        assert_eq!(r.replicas(Token(0), 2), vec![ep(2), ep(1)]);
        // Past the last token wraps to the first.
        assert_eq!(r.replicas(Token(101), 1), vec![ep(1)]);
        assert_eq!(r.replicas(Token(i64::MAX), 5).len(), 3);
        let role = r.role(Token(10), 3, ep(3)).expect("replica");
        assert_eq!(role.index, 1);
        assert_eq!(role.primary, ep(1));
        assert!(r.role(Token(10), 1, ep(3)).is_none());
    }

    #[test]
    fn segments_cover_the_range_in_order_with_their_replicas() {
        let r = ring3();
        let all = KeyRange {
            start: Vec::new(),
            end: None,
        };
        let segs = r.segments(&all, 1);
        assert_eq!(
            segs.first().map(|s| s.range.start.clone()),
            Some(Vec::new())
        );
        assert_eq!(segs.last().and_then(|s| s.range.end.clone()), None);
        for pair in segs.windows(2) {
            assert_eq!(pair[0].range.end.as_ref(), Some(&pair[1].range.start));
        }
        // Every token's keys land in a segment whose replicas are the token's.
        for t in [
            -1000,
            -100,
            -99,
            0,
            1,
            50,
            51,
            100,
            101,
            i64::MAX,
            i64::MIN + 1,
        ] {
            let key = encode_token(Token(t)).to_vec();
            let seg = segs
                .iter()
                .find(|s| s.range.contains(&key))
                .expect("covered");
            assert_eq!(seg.replicas, r.replicas(Token(t), 1), "token {t}");
        }
        // A one-token range is one segment.
        let one = r.segments(&single_token_keys(Token(7)), 3);
        assert_eq!(one.len(), 1);
        assert_eq!(one[0].replicas, r.replicas(Token(7), 3));
    }

    proptest::proptest! {
        #[test]
        fn segments_of_any_range_tile_it_with_the_right_replicas(
            a in proptest::prelude::any::<i64>(),
            b in proptest::prelude::any::<i64>(),
            probes in proptest::collection::vec(proptest::prelude::any::<i64>(), 1..20),
            rf in 1usize..4,
        ) {
            let r = ring3();
            let (lo, hi) = (a.min(b), a.max(b));
            let range = KeyRange {
                start: encode_token(Token(lo)).to_vec(),
                end: Some(encode_token(Token(hi)).to_vec()),
            };
            let segs = r.segments(&range, rf);
            if lo == hi {
                proptest::prop_assert!(segs.is_empty());
            } else {
                proptest::prop_assert_eq!(segs.first().map(|s| &s.range.start), Some(&range.start));
                proptest::prop_assert_eq!(segs.last().and_then(|s| s.range.end.as_ref()), range.end.as_ref());
                for pair in segs.windows(2) {
                    proptest::prop_assert_eq!(pair[0].range.end.as_ref(), Some(&pair[1].range.start));
                }
            }
            for t in probes.into_iter().chain([-101, -100, -99, -1, 0, 1, 49, 50, 51, 99, 100, 101, lo, hi, hi.saturating_sub(1)]) {
                let key = encode_token(Token(t)).to_vec();
                let hit = segs.iter().find(|s| s.range.contains(&key));
                proptest::prop_assert_eq!(hit.is_some(), range.contains(&key));
                if let Some(seg) = hit {
                    proptest::prop_assert_eq!(&seg.replicas, &r.replicas(Token(t), rf));
                }
            }
        }
    }

    #[test]
    fn primary_shares_sum_to_one() {
        let r = ring3();
        let total: f64 = r.primary_share().iter().map(|(_, s)| s).sum();
        assert!((total - 1.0).abs() < 1e-9);
        let single = Ring::new([(ep(1), &[Token(5)][..])]);
        assert_eq!(single.primary_share(), vec![(ep(1), 1.0)]);
    }

    #[test]
    fn ranges_of_a_node_are_those_it_replicates() {
        let r = ring3();
        let ranges = r.ranges_of(ep(2), 2);
        for (_, right, replicas) in &ranges {
            assert!(replicas.contains(&ep(2)));
            assert_eq!(&r.replicas(*right, 2), replicas);
        }
        // With RF = node count, every range.
        assert_eq!(r.ranges_of(ep(2), 3).len(), 4);
    }
}
