//! This node's role for each token (DEPART's replica differentiation) from the ring, and
//! during a topology change from the ring to come as well.

use std::collections::HashMap;
use std::sync::Arc;

use mosaic_cluster::{Endpoint, ReplicationStrategy, Ring};
use mosaic_replica::{Role, SourceId};
use mosaic_rows::KeyRange;
use mosaic_types::Token;

use crate::local::Roles;

/// A ring and what role computation needs besides it.
pub(super) struct RingView {
    pub(super) ring: Arc<Ring>,
    pub(super) me: Endpoint,
    pub(super) hosts: HashMap<Endpoint, SourceId>,
}

/// The source id of `node`: its gossiped host id. A ring node always has a gossiped
/// state (the ring is built from them); should one be missing, its address stands in,
/// stable for as long as the node keeps it.
pub(super) fn source_of(node: Endpoint, hosts: &HashMap<Endpoint, SourceId>) -> SourceId {
    if let Some(id) = hosts.get(&node) {
        return *id;
    }
    let ip = match node.ip() {
        std::net::IpAddr::V4(v4) => v4.to_ipv6_mapped(),
        std::net::IpAddr::V6(v6) => v6,
    };
    let mut id = ip.octets();
    let port = node.port().to_be_bytes();
    id[0] ^= port[0];
    id[1] ^= port[1];
    SourceId(id)
}

/// Every known node's host id, as a source id (this node's included).
pub(super) fn host_ids(node: &mosaic_cluster::Node) -> HashMap<Endpoint, SourceId> {
    node.states()
        .into_iter()
        .map(|(s, _)| (s.endpoint, SourceId(s.app.host_id.0)))
        .collect()
}

/// `me`'s role in a token's `replicas` ([`Role::in_replicas`]), sources by host id.
pub(super) fn role_in(
    replicas: &[Endpoint],
    me: Endpoint,
    hosts: &HashMap<Endpoint, SourceId>,
) -> Role {
    Role::in_replicas(replicas, &me, |primary| source_of(*primary, hosts))
}

/// The roles of one table's keys (placed by `strategy`) on `view`'s ring.
///
/// While a node joins or leaves (the ring has a future), a token this node is a replica
/// of now has its role of now, and [`Roles::future_role`] names the role it will have
/// once the move completes when that differs (writes go to both); a token it is only a
/// pending replica of (it joins, or gains the range from a leaving node) has its role to
/// come, so what it receives lands where it will be read.
pub(super) struct RingRoles {
    pub(super) view: Arc<RingView>,
    pub(super) strategy: ReplicationStrategy,
}

impl RingRoles {
    /// This node's role among `now` (a token's replicas now) or, when it is not one of
    /// them, among the token's replicas to come.
    fn role_of(&self, now: &[Endpoint], token: Token) -> Role {
        let v = &self.view;
        if !now.contains(&v.me) {
            if let Some(future) = v.ring.future() {
                let after = future.place(token, &self.strategy);
                if after.contains(&v.me) {
                    return role_in(&after, v.me, &v.hosts);
                }
            }
        }
        role_in(now, v.me, &v.hosts)
    }
}

impl Roles for RingRoles {
    fn role(&self, token: Token) -> Role {
        self.role_of(&self.view.ring.place(token, &self.strategy), token)
    }

    fn future_role(&self, token: Token) -> Option<Role> {
        let v = &self.view;
        let future = v.ring.future()?;
        let now = v.ring.place(token, &self.strategy);
        let after = future.place(token, &self.strategy);
        if !now.contains(&v.me) || !after.contains(&v.me) {
            return None;
        }
        let (was, will) = (
            role_in(&now, v.me, &v.hosts),
            role_in(&after, v.me, &v.hosts),
        );
        (was != will).then_some(will)
    }

    fn partition_role(&self, range: &KeyRange) -> Option<Role> {
        // A partition read: every key of the range has one token, so one role (without
        // walking the ring's segments, which allocates per read).
        let token = mosaic_rows::decode_token(&range.start).ok()?;
        let end = range.end.as_ref()?;
        (mosaic_rows::decode_token(end).is_ok_and(|t| t == token) && range.start < *end)
            .then(|| self.role(token))
    }

    fn pieces(&self, range: KeyRange) -> Vec<(KeyRange, Role)> {
        if let Some(role) = self.partition_role(&range) {
            return vec![(range, role)];
        }
        let v = &self.view;
        let mut out: Vec<(KeyRange, Role)> = Vec::new();
        let mut push = |piece: KeyRange, role: Role| {
            if let Some((last, last_role)) = out.last_mut() {
                if *last_role == role && last.end.as_ref() == Some(&piece.start) {
                    last.end = piece.end;
                    return;
                }
            }
            out.push((piece, role));
        };
        for segment in v.ring.segments_placed(&range, &self.strategy) {
            match v.ring.future() {
                // Not a replica now but perhaps one to come: the future ring's pieces.
                Some(future) if !segment.replicas.contains(&v.me) => {
                    for piece in future.segments_placed(&segment.range, &self.strategy) {
                        let role = if piece.replicas.contains(&v.me) {
                            role_in(&piece.replicas, v.me, &v.hosts)
                        } else {
                            role_in(&segment.replicas, v.me, &v.hosts)
                        };
                        push(piece.range, role);
                    }
                }
                _ => push(segment.range, role_in(&segment.replicas, v.me, &v.hosts)),
            }
        }
        out
    }
}

/// The roles to come of a ring's roles: what a move's re-homing stores its copies under
/// (tokens whose role does not change keep theirs; the caller passes only those that do).
pub(super) struct FutureRoles(pub(super) RingRoles);

impl Roles for FutureRoles {
    fn role(&self, token: Token) -> Role {
        self.0
            .future_role(token)
            .unwrap_or_else(|| self.0.role(token))
    }

    fn pieces(&self, range: KeyRange) -> Vec<(KeyRange, Role)> {
        self.0.pieces(range)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(i: u8) -> Endpoint {
        Endpoint::from(([127, 0, 0, i], 7000))
    }

    /// Three nodes, tokens -100 (node 1), 0 (node 2), 100 (node 3); host id of node i is
    /// [i; 16].
    fn view(me: u8) -> Arc<RingView> {
        let owned = [(1u8, [Token(-100)]), (2, [Token(0)]), (3, [Token(100)])];
        let ring = Ring::new(owned.iter().map(|(n, t)| (node(*n), t.as_slice())));
        Arc::new(RingView {
            ring: Arc::new(ring),
            me: node(me),
            hosts: (1..=3).map(|i| (node(i), SourceId([i; 16]))).collect(),
        })
    }

    fn key(t: i64) -> Vec<u8> {
        mosaic_rows::encode_token(Token(t)).to_vec()
    }

    #[test]
    fn a_nodes_role_is_its_place_in_the_replica_list() {
        let roles = RingRoles {
            view: view(2),
            strategy: ReplicationStrategy::Simple(2),
        };
        // (-100, 0] is node 2's: primary. (0, 100] is node 3's, then node 1's: node 2 is
        // not a replica, stored as primary. (-inf, -100] and (100, inf) are node 1's, then
        // node 2's: a redundant copy of node 1.
        assert_eq!(roles.role(Token(-50)), Role::Primary);
        assert_eq!(roles.role(Token(0)), Role::Primary);
        assert_eq!(roles.role(Token(50)), Role::Primary);
        let of_1 = Role::Redundant {
            source: SourceId([1; 16]),
            index: 1,
        };
        assert_eq!(roles.role(Token(-100)), of_1);
        assert_eq!(roles.role(Token(101)), of_1);
        assert_eq!(roles.role(Token(i64::MIN + 1)), of_1);
        // A node alone in its ring is primary for everything; an unknown host id falls
        // back to one derived from the address.
        let alone = RingRoles {
            view: view(9),
            strategy: ReplicationStrategy::Simple(3),
        };
        assert_eq!(alone.role(Token(5)), Role::Primary);
        let hosts = HashMap::new();
        assert_eq!(
            role_in(&[node(1), node(2)], node(2), &hosts),
            Role::Redundant {
                source: source_of(node(1), &hosts),
                index: 1,
            }
        );
        assert_ne!(source_of(node(1), &hosts), source_of(node(3), &hosts));
    }

    #[test]
    fn range_reads_are_split_where_the_role_changes() {
        let roles = RingRoles {
            view: view(2),
            strategy: ReplicationStrategy::Simple(2),
        };
        let of_1 = Role::Redundant {
            source: SourceId([1; 16]),
            index: 1,
        };
        let all = KeyRange {
            start: Vec::new(),
            end: None,
        };
        let pieces = roles.pieces(all);
        let summary: Vec<(Option<Token>, Role)> = pieces
            .iter()
            .map(|(r, role)| (mosaic_rows::decode_token(&r.start).ok(), *role))
            .collect();
        // Below and at -100: node 1's; then node 2's and node 3's ranges, both stored as
        // primary here, merged into one piece; above 100: node 1's again.
        assert_eq!(
            summary,
            [
                (None, of_1),
                (Some(Token(-99)), Role::Primary),
                (Some(Token(101)), of_1),
            ]
        );
        // Pieces tile the range in order.
        for w in pieces.windows(2) {
            assert_eq!(w[0].0.end.as_ref(), Some(&w[1].0.start));
        }
        assert_eq!(pieces.last().map(|(r, _)| r.end.clone()), Some(None));
        // A range inside one role's keys is one piece.
        let inner = KeyRange {
            start: key(-50),
            end: Some(key(-10)),
        };
        assert_eq!(roles.pieces(inner.clone()), [(inner, Role::Primary)]);
    }

    /// A range within one token (a partition read) is one piece with that token's role,
    /// as the general walk over the ring's segments would give.
    #[test]
    fn a_partition_range_is_one_piece_with_its_tokens_role() {
        let roles = RingRoles {
            view: view(2),
            strategy: ReplicationStrategy::Simple(2),
        };
        for t in [-100i64, -50, 0, 50, 100, 101] {
            let mut start = key(t);
            start.extend_from_slice(b"pk");
            let mut end = start.clone();
            end.push(0xff);
            let range = KeyRange {
                start: start.clone(),
                end: Some(end.clone()),
            };
            assert_eq!(roles.partition_role(&range), Some(roles.role(Token(t))));
            assert_eq!(
                roles.pieces(range.clone()),
                vec![(range, roles.role(Token(t)))]
            );
        }
        // A range over several tokens still splits where the role changes, and has no
        // one partition role (the coverage check asks `pieces` then).
        let wide = KeyRange {
            start: key(-150),
            end: Some(key(150)),
        };
        assert_eq!(roles.partition_role(&wide), None);
        assert!(roles.pieces(wide).len() > 1);
        let open = KeyRange {
            start: key(5),
            end: None,
        };
        assert_eq!(roles.partition_role(&open), None);
    }

    /// Node 4 joins with token 50: (0, 50] moves from node 3 (then 1) to node 4 (then 3).
    fn joining_view(me: u8) -> Arc<RingView> {
        let owned = [(1u8, [Token(-100)]), (2, [Token(0)]), (3, [Token(100)])];
        let now = Ring::new(owned.iter().map(|(n, t)| (node(*n), t.as_slice())));
        let with_4 = owned
            .iter()
            .map(|(n, t)| (node(*n), t.as_slice()))
            .chain(std::iter::once((node(4), &[Token(50)][..])));
        let ring = now.with_future(Ring::new(with_4));
        Arc::new(RingView {
            ring: Arc::new(ring),
            me: node(me),
            hosts: (1..=4).map(|i| (node(i), SourceId([i; 16]))).collect(),
        })
    }

    #[test]
    fn during_a_join_a_pending_node_stores_under_its_role_to_come_and_others_under_both() {
        let of = |i: u8, index: u8| Role::Redundant {
            source: SourceId([i; 16]),
            index,
        };
        let strategy = ReplicationStrategy::Simple(2);
        // The joining node: primary of (0, 50] to come; not a replica elsewhere.
        let joiner = RingRoles {
            view: joining_view(4),
            strategy: strategy.clone(),
        };
        assert_eq!(joiner.role(Token(25)), Role::Primary);
        assert_eq!(joiner.future_role(Token(25)), None);
        // (-100, 0]: node 2 primary, node 3 its copy — to come as well: nothing to add.
        // (0, 50]: node 3 primary now, a copy of node 4 to come: written under both.
        let three = RingRoles {
            view: joining_view(3),
            strategy: strategy.clone(),
        };
        assert_eq!(three.role(Token(25)), Role::Primary);
        assert_eq!(three.future_role(Token(25)), Some(of(4, 1)));
        assert_eq!(three.future_role(Token(75)), None);
        // Node 1 loses (0, 50] (it was node 3's copy): no role to come there.
        let one = RingRoles {
            view: joining_view(1),
            strategy: strategy.clone(),
        };
        assert_eq!(one.role(Token(25)), of(3, 1));
        assert_eq!(one.future_role(Token(25)), None);
        // The joiner's pieces over the whole ring: its own range as a primary.
        let all = KeyRange {
            start: Vec::new(),
            end: None,
        };
        let pieces = joiner.pieces(all);
        let primary_at_25 = pieces.iter().any(|(r, role)| {
            *role == Role::Primary
                && r.start <= key(25)
                && r.end.as_ref().is_none_or(|e| *e > key(25))
        });
        assert!(primary_at_25, "{pieces:?}");
        for w in pieces.windows(2) {
            assert_eq!(w[0].0.end.as_ref(), Some(&w[1].0.start));
        }
    }
}
