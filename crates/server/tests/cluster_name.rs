//! A node of another cluster is refused: a node started with another `cluster_name` and the
//! first node as its seed never joins its ring, and the refusal (at the internode
//! handshake, before any gossip) is logged with the peer's address and cluster.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

mod common;

use common::{free_port, wait_for, Node};

fn config(cluster: &str, storage: u16, admin: u16, seed: u16) -> String {
    format!(
        "cluster_name = \"{cluster}\"\nstorage_port = {storage}\nadmin_port = {admin}\n\
         seeds = [\"127.0.0.1:{seed}\"]\n[cluster]\ngossip_interval_ms = 100\n"
    )
}

#[test]
fn a_node_of_another_cluster_cannot_join() {
    let (storage_a, admin_a, storage_b, admin_b) =
        (free_port(), free_port(), free_port(), free_port());
    let a = Node::start(&config("alpha", storage_a, admin_a, storage_a));
    let b = Node::start(&config("beta", storage_b, admin_b, storage_a));
    let refused = format!("127.0.0.1:{storage_b} belongs to cluster \"beta\"");
    wait_for("node a to refuse node b's connections", || {
        let log = a.log();
        log.lines()
            .any(|l| l.contains("refusing an internode connection") && l.contains(&refused))
            .then_some(())
    });
    // Node a's peers (system.peers) never list b.
    let mut c = a.ready();
    let peers = c.query(1, "SELECT peer FROM system.peers");
    assert!(peers.rows().is_empty(), "{}", peers.describe());
    drop(b);
}
