//! Internode authentication (`[internode_auth]`) against real `mosaic server` processes:
//! nodes sharing the cluster secret see each other, a node with another secret (or none)
//! is refused, logged and never learns the schema, and a process that sends internode
//! messages without the membership handshake — a forged schema that would drop every
//! table — is disconnected while the node's tables stay.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]
#![allow(clippy::disallowed_methods)] // Real processes and real time, as in the other process tests.

mod common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::time::Duration;

use common::{wait_for, Node};
use mosaic_cluster::message::{encode_frame, SchemaSnapshot, PROTOCOL_VERSION};
use mosaic_cluster::{Body, Envelope};

const SECRET: &str = "the-cluster-secret-of-this-test\n";

/// A node of a cluster gossiping through `seed`, holding `secret` (if any) in its secret file.
fn node(dir: &Path, storage: u16, seed: u16, secret: Option<&str>) -> Node {
    let auth = match secret {
        Some(secret) => {
            std::fs::write(dir.join("cluster.secret"), secret).unwrap();
            "[internode_auth]\nsecret_file = \"cluster.secret\"\n"
        }
        None => "",
    };
    Node::start_in(
        dir,
        &format!(
            "storage_port = {storage}\nadmin_port = 0\nseeds = [\"127.0.0.1:{seed}\"]\n\
             [cluster]\ngossip_interval_ms = 100\n{auth}"
        ),
    )
}

fn peer_count(node: &Node) -> usize {
    node.ready()
        .query(1, "SELECT peer FROM system.peers")
        .rows()
        .len()
}

fn has_keyspace(node: &Node, keyspace: &str) -> bool {
    node.ready()
        .query(
            1,
            &format!("SELECT keyspace_name FROM system_schema.keyspaces WHERE keyspace_name = '{keyspace}'"),
        )
        .rows()
        .len()
        == 1
}

#[test]
fn members_share_the_secret_and_a_node_without_it_never_joins() {
    let dirs = [(); 4].map(|_| tempfile::tempdir().unwrap());
    let storage = [(); 4].map(|_| common::free_port());
    let a = node(dirs[0].path(), storage[0], storage[0], Some(SECRET));
    let b = node(dirs[1].path(), storage[1], storage[0], Some(SECRET));
    wait_for("the members to see each other", || {
        (peer_count(&a) == 1 && peer_count(&b) == 1).then_some(())
    });
    let mut conn = a.ready();
    conn.query(
        1,
        "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 2}",
    );
    for layout in ["lsm", "decoupled", "multi-lsm"] {
        let table = layout.replace('-', "_");
        conn.query(
            1,
            &format!("CREATE TABLE ks.{table} (k int PRIMARY KEY, v int) WITH layout = '{layout}'"),
        );
        conn.query(1, &format!("INSERT INTO ks.{table} (k, v) VALUES (1, 1)"));
    }
    wait_for("b to learn the schema", || {
        has_keyspace(&b, "ks").then_some(())
    });

    // Another secret, and no secret at all.
    let other = node(
        dirs[2].path(),
        storage[2],
        storage[0],
        Some("a-different-secret-0123"),
    );
    let none = node(dirs[3].path(), storage[3], storage[0], None);
    wait_for("a to refuse both strangers", || {
        (a.log()
            .matches("it does not know the cluster secret")
            .count()
            >= 2)
            .then_some(())
    });
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(peer_count(&a), 1, "a stranger joined");
    for stranger in [&other, &none] {
        assert_eq!(peer_count(stranger), 0);
        assert!(
            !has_keyspace(stranger, "ks"),
            "a stranger learned the schema"
        );
    }
    assert!(
        other.log().contains("refused our internode handshake"),
        "the stranger's own log does not say it was refused:\n{}",
        other.log()
    );
}

/// A forged schema: a newer epoch and a catalog without the node's tables.
fn forged_schema_frame(from: SocketAddr) -> Vec<u8> {
    encode_frame(&Envelope {
        version: PROTOCOL_VERSION,
        from,
        id: 1,
        body: Body::SchemaPush(SchemaSnapshot {
            epoch: u64::MAX,
            version: [0xee; 16],
            bytes: b"{\"keyspaces\": {}}".to_vec(),
        }),
    })
}

/// Whether the node closes `stream` (reads end) within a few seconds.
fn closed(mut stream: TcpStream) -> bool {
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let mut buf = [0u8; 256];
    loop {
        match stream.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => continue,
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return true,
            Err(_) => return false,
        }
    }
}

#[test]
fn messages_without_the_membership_handshake_are_refused() {
    // With and without a cluster secret: the handshake comes first either way.
    for secret in [Some(SECRET), None] {
        let dir = tempfile::tempdir().unwrap();
        let storage = common::free_port();
        let a = node(dir.path(), storage, storage, secret);
        let mut conn = a.ready();
        conn.query(
            1,
            "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
        );
        conn.query(1, "CREATE TABLE ks.t (k int PRIMARY KEY)");
        conn.query(1, "INSERT INTO ks.t (k) VALUES (1)");

        let to = SocketAddr::from(([127, 0, 0, 1], storage));
        let mut forger = TcpStream::connect(to).unwrap();
        // The node speaks first (its challenge); the forger ignores it and sends a message,
        // claiming to be the node itself.
        forger.write_all(&forged_schema_frame(to)).unwrap();
        assert!(
            closed(forger),
            "the node kept a connection that skipped the handshake"
        );
        wait_for("the refusal to be logged", || {
            a.log()
                .contains("refusing an internode connection")
                .then_some(())
        });
        std::thread::sleep(Duration::from_millis(500));
        assert_eq!(conn.query(1, "SELECT k FROM ks.t").rows().len(), 1);
        assert!(has_keyspace(&a, "ks"));
    }
}
