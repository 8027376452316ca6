//! Cleanup's view of the ring (`mosaic cleanup`, see `mosaic_replica::cleanup`): whether
//! it is safe now, and which tokens each structure of a table's store keeps.

use std::collections::HashMap;

use mosaic_cluster::message::RingStatus;
use mosaic_cluster::{Endpoint, Node, ReplicationStrategy, Ring};
use mosaic_cql::schema::{Catalog, TableId};
use mosaic_replica::{Ownership, SourceId};
use mosaic_rows::KeyRange;

use super::roles::{host_ids, role_in};
use super::strategy_of;

/// Why a cleanup must not run now, or `None`. A ring with a move under way (a node
/// joining, leaving or being removed, this one included) still has writes landing in the
/// roles to come, which a cleanup by today's ring would drop.
pub fn refusal(node: &Node) -> Option<String> {
    let ring = node.ring();
    let status = node.ring_status();
    if status != RingStatus::Normal {
        return Some(format!(
            "this node is {status:?}: it is involved in cluster membership changes. Not \
             safe to run cleanup."
        ));
    }
    if let Some(peer) = node.moving_peer() {
        return Some(format!(
            "Node is involved in cluster membership changes ({peer} is joining or leaving). \
             Not safe to run cleanup."
        ));
    }
    if ring.future().is_some() {
        return Some(
            "Node is involved in cluster membership changes (the ring is changing). Not safe \
             to run cleanup."
                .to_owned(),
        );
    }
    if !ring.nodes().contains(&node.endpoint()) {
        return Some("this node owns no tokens in the ring yet; nothing to clean up by".into());
    }
    None
}

/// The ring's tokens and nodes, to tell whether it changed during a cleanup.
pub fn ring_shape(ring: &Ring) -> (Vec<mosaic_types::Token>, Vec<Endpoint>) {
    (ring.tokens().collect(), ring.nodes().to_vec())
}

/// What this node's store of `table` keeps on its ring now: each ring segment this node
/// replicates, in its role there (as the store's writes get it); `None` when the table or
/// its keyspace is unknown, or the keyspace is not placed on the ring (local tables).
pub fn ownership(node: &Node, catalog: &Catalog, table: TableId) -> Option<Ownership> {
    let meta = catalog.table_by_id(table)?;
    let replication = &catalog.keyspace(&meta.keyspace)?.replication;
    let placed = ["SimpleStrategy", "NetworkTopologyStrategy"]
        .iter()
        .any(|c| replication.class.ends_with(c));
    if !placed {
        return None;
    }
    let strategy = strategy_of(replication);
    Some(owned_on(
        &node.ring(),
        node.endpoint(),
        &host_ids(node),
        &strategy,
    ))
}

/// What `me` keeps on `ring` of a table placed by `strategy`: each segment it replicates,
/// in its role there.
fn owned_on(
    ring: &Ring,
    me: Endpoint,
    hosts: &HashMap<Endpoint, SourceId>,
    strategy: &ReplicationStrategy,
) -> Ownership {
    let all = KeyRange {
        start: Vec::new(),
        end: None,
    };
    let owned = ring
        .segments_placed(&all, strategy)
        .into_iter()
        .filter(|s| s.replicas.contains(&me))
        .map(|s| {
            let role = role_in(&s.replicas, me, hosts);
            (s.range, role)
        });
    Ownership::new(owned)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use mosaic_replica::{Role, Structure};
    use mosaic_types::Token;

    use super::*;
    use crate::cluster::roles::{RingRoles, RingView};
    use crate::local::Roles;

    fn node(i: u8) -> Endpoint {
        Endpoint::from(([127, 0, 0, i], 7000))
    }

    /// Every token's structures agree with the role the store writes it under: the
    /// structure of its role keeps it, every other drops it, and a token this node does
    /// not replicate is kept nowhere.
    #[test]
    fn ownership_agrees_with_the_roles_writes_get() {
        let owned = [
            (1u8, vec![Token(-100), Token(500)]),
            (2, vec![Token(0)]),
            (3, vec![Token(100), Token(-7000)]),
            (4, vec![Token(300)]),
        ];
        let ring = Arc::new(Ring::new(
            owned.iter().map(|(n, t)| (node(*n), t.as_slice())),
        ));
        let hosts: HashMap<Endpoint, SourceId> =
            (1..=4).map(|i| (node(i), SourceId([i; 16]))).collect();
        let sources: Vec<Structure> = (1..=4)
            .map(|i| Structure::Source(SourceId([i; 16])))
            .collect();
        for rf in 1..=3 {
            let strategy = ReplicationStrategy::Simple(rf);
            for me in 1..=4 {
                let o = owned_on(&ring, node(me), &hosts, &strategy);
                let roles = RingRoles {
                    view: Arc::new(RingView {
                        ring: ring.clone(),
                        me: node(me),
                        hosts: hosts.clone(),
                    }),
                    strategy: strategy.clone(),
                };
                let mut tokens = vec![i64::MIN, i64::MAX];
                for (_, ts) in &owned {
                    for t in ts {
                        tokens.extend([t.0 - 1, t.0, t.0 + 1]);
                    }
                }
                for t in tokens.into_iter().map(Token) {
                    let replica = ring.place(t, &strategy).contains(&node(me));
                    let role = roles.role(t);
                    assert_eq!(o.keeps(Structure::Shared, t), replica, "{me} {t:?}");
                    let primary = replica && role == Role::Primary;
                    assert_eq!(o.keeps(Structure::Primary, t), primary, "{me} {t:?}");
                    assert_eq!(
                        o.keeps(Structure::Log, t),
                        replica && !primary,
                        "{me} {t:?}"
                    );
                    for i in 0..3 {
                        let at_i = replica && role.index() == i;
                        assert_eq!(o.keeps(Structure::Replica(i), t), at_i, "{me} {t:?}");
                    }
                    for s in &sources {
                        let mine = match role {
                            Role::Redundant { source, .. } => {
                                replica && *s == Structure::Source(source)
                            }
                            Role::Primary => false,
                        };
                        assert_eq!(o.keeps(*s, t), mine, "{me} {t:?} {s:?}");
                    }
                }
            }
        }
    }
}
