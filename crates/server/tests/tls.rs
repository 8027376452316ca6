//! TLS on the CQL port (`[client_encryption]`) against a real `mosaic server`: a TLS client
//! trusting the test CA completes STARTUP and queries; a plaintext client on a TLS-only
//! port is refused cleanly and the node keeps serving; optional mode serves both on one
//! port; client-certificate auth refuses a client without a certificate (or with one from
//! another CA); a replaced certificate is served to new connections while open ones carry
//! on; a missing or mismatched key stops the node at start with the file named; the
//! handshake timeout covers the TLS handshake and a malformed frame inside TLS closes only
//! its connection; the `scylla` driver logs in over TLS with a password (and fails with a
//! wrong one, an untrusted CA, or plaintext). Internode (`[internode_encryption]`, mutual
//! TLS): two nodes of one CA see each other, a node of another CA is refused (and logged)
//! and never joins, and a node moved to a new CA while it runs lets that CA's nodes join.
//! Certificates are made here with `rcgen` (`common::tls`).
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]
#![allow(clippy::disallowed_methods)] // Real processes and real time, as in the other process tests.

mod common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use common::tls::{client_config, connect_tls, node_files, write_atomically, Ca};
use common::{options_answered, output_text, run_mosaic, wait_for, Conn, Node, WAIT};
use mosaic_cql::frame::Opcode;
use rustls::ClientConfig;
use scylla::client::session_builder::SessionBuilder;

/// A node in a new directory with `[client_encryption]` on, its certificate signed by `ca`
/// (which is in the directory as `ca.crt`), plus `extra` keys of that section.
fn tls_node(ca: &Ca, extra: &str) -> (tempfile::TempDir, Node) {
    let dir = tempfile::tempdir().unwrap();
    let (cert, key, _) = node_files(dir.path(), ca);
    let config = format!(
        "[client_encryption]\nenabled = true\ncertificate = \"{}\"\nprivate_key = \"{}\"\n{extra}",
        cert.display(),
        key.display()
    );
    // A TLS-only port answers no plaintext OPTIONS: the node is up once it accepts.
    let node = Node::start_probed(dir.path(), &config, |addr| {
        TcpStream::connect_timeout(&addr, Duration::from_secs(1)).is_ok()
    });
    (dir, node)
}

/// Whether a connection can start up and read `system.local` (errors are `false`; a
/// failed TLS handshake, or a refused client certificate, shows as one).
fn serves(conn: std::io::Result<Conn>) -> bool {
    let Ok(mut conn) = conn else { return false };
    if conn
        .try_send(
            0,
            Opcode::Startup,
            &common::startup_body(&[("CQL_VERSION", "3.0.0")]),
        )
        .is_err()
    {
        return false;
    }
    if !matches!(conn.try_recv(), Ok(Some(f)) if f.opcode == Opcode::Ready.byte()) {
        return false;
    }
    queries(&mut conn)
}

/// Whether a started connection reads `system.local`.
fn queries(conn: &mut Conn) -> bool {
    let body = common::query_body("SELECT release_version FROM system.local");
    if conn.try_send(1, Opcode::Query, &body).is_err() {
        return false;
    }
    matches!(conn.try_recv(), Ok(Some(f)) if f.opcode == 0x08 && f.rows().len() == 1)
}

/// A TLS connection to `addr` past STARTUP.
fn started(addr: SocketAddr, config: &Arc<ClientConfig>) -> Conn {
    let mut conn = connect_tls(addr, config).unwrap();
    conn.startup(None);
    conn
}

#[test]
fn tls_client_queries_and_plaintext_client_is_refused() {
    let ca = Ca::new("test CA");
    let (_dir, node) = tls_node(&ca, "");
    let config = client_config(&ca, None);
    let mut conn = started(node.addr, &config);
    conn.exec("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}");
    conn.exec("CREATE TABLE ks.t (k int PRIMARY KEY, v text)");
    conn.exec("INSERT INTO ks.t (k, v) VALUES (1, 'over tls')");
    let rows = conn.exec("SELECT v FROM ks.t WHERE k = 1").rows();
    assert_eq!(rows, vec![vec![Some(b"over tls".to_vec())]]);

    assert!(
        !options_answered(node.addr),
        "a TLS-only port answered plaintext"
    );
    wait_for("the refusal to be logged", || {
        node.log()
            .contains("refusing a plaintext connection on the TLS-only CQL port")
            .then_some(())
    });
    // A client that does not trust the node's CA fails its handshake.
    let stranger = client_config(&Ca::new("another CA"), None);
    assert!(connect_tls(node.addr, &stranger).is_err());
    // The node keeps serving, the open connection and new ones.
    assert!(queries(&mut conn));
    assert!(serves(connect_tls(node.addr, &config)));
}

#[test]
fn optional_mode_serves_tls_and_plaintext_on_one_port() {
    let ca = Ca::new("test CA");
    let (_dir, node) = tls_node(&ca, "optional = true");
    assert!(serves(connect_tls(node.addr, &client_config(&ca, None))));
    assert!(options_answered(node.addr));
    let mut plain = node.connect();
    plain.startup(None);
    assert!(queries(&mut plain));
}

#[test]
fn client_certificate_auth_refuses_clients_without_a_trusted_certificate() {
    let ca = Ca::new("test CA");
    // A relative path: relative to the config file's directory.
    let (_dir, node) = tls_node(&ca, "require_client_auth = true\ntruststore = \"ca.crt\"");
    let trusted = client_config(&ca, Some(ca.leaf("client")));
    assert!(serves(connect_tls(node.addr, &trusted)));
    assert!(!serves(connect_tls(node.addr, &client_config(&ca, None))));
    let other = Ca::new("another CA");
    let untrusted = client_config(&ca, Some(other.leaf("client")));
    assert!(!serves(connect_tls(node.addr, &untrusted)));
    assert!(serves(connect_tls(node.addr, &trusted)));
}

#[test]
fn replaced_certificate_is_served_to_new_connections() {
    let old_ca = Ca::new("old CA");
    let (dir, node) = tls_node(&old_ca, "reload_interval_ms = 100");
    let old = client_config(&old_ca, None);
    let mut open = started(node.addr, &old);

    // A key that does not match the certificate is refused and the old pair kept.
    let new_ca = Ca::new("new CA");
    let (new_cert, new_key) = new_ca.leaf("mosaic node, renewed");
    write_atomically(&dir.path().join("node.crt"), &new_cert);
    wait_for("the mismatched pair to be refused", || {
        node.log()
            .contains("the changed client TLS files do not load")
            .then_some(())
    });
    assert!(serves(connect_tls(node.addr, &old)));

    write_atomically(&dir.path().join("node.key"), &new_key);
    let new = client_config(&new_ca, None);
    wait_for("new connections to get the new certificate", || {
        serves(connect_tls(node.addr, &new)).then_some(())
    });
    assert!(!serves(connect_tls(node.addr, &old)));
    // The connection made before the reload carries on.
    assert!(queries(&mut open));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_scylla_driver_logs_in_over_tls() {
    let ca = Ca::new("test CA");
    let secrets = tempfile::tempdir().unwrap();
    let password_file = secrets.path().join("superuser.pw");
    std::fs::write(&password_file, "scylla-over-tls").unwrap();
    let (_dir, node) = tls_node(
        &ca,
        &format!(
            "[auth]\nauthenticator = \"password\"\nsuperuser_password_file = \"{}\"\nbcrypt_cost = 4",
            password_file.display()
        ),
    );
    let login = |tls: Option<Arc<ClientConfig>>, password: &str| {
        let builder = SessionBuilder::new()
            .known_node(node.addr.to_string())
            .user("cassandra", password)
            .tls_context(tls);
        async move { builder.build().await }
    };
    let session = login(Some(client_config(&ca, None)), "scylla-over-tls")
        .await
        .unwrap_or_else(|e| panic!("{e}\n{}", node.log()));
    for cql in [
        "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
        "CREATE TABLE ks.t (k int PRIMARY KEY, v text)",
        "INSERT INTO ks.t (k, v) VALUES (1, 'through scylla over tls')",
    ] {
        let done = session.query_unpaged(cql, &[]).await;
        done.unwrap_or_else(|e| panic!("{cql}: {e}"));
    }
    let (v,): (String,) = session
        .query_unpaged("SELECT v FROM ks.t WHERE k = 1", &[])
        .await
        .unwrap()
        .into_rows_result()
        .unwrap()
        .single_row()
        .unwrap();
    assert_eq!(v, "through scylla over tls");

    // A wrong password over TLS is an authentication error; a driver that does not trust
    // the node's CA, or speaks plaintext to this TLS-only port, does not connect.
    let err = login(Some(client_config(&ca, None)), "wrong")
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("and/or password are incorrect"),
        "{err}"
    );
    let stranger = client_config(&Ca::new("another CA"), None);
    assert!(login(Some(stranger), "scylla-over-tls").await.is_err());
    assert!(login(None, "scylla-over-tls").await.is_err());
}

/// Whether the node closes a raw TCP connection that sent `bytes` (and then nothing)
/// before the test's bound, i.e. without waiting for the client.
fn closed_after(addr: SocketAddr, bytes: &[u8]) -> bool {
    let mut tcp = TcpStream::connect(addr).unwrap();
    tcp.set_read_timeout(Some(WAIT)).unwrap();
    tcp.write_all(bytes).unwrap();
    let mut buf = [0u8; 64];
    loop {
        match tcp.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => {} // A TLS alert, say.
            Err(e) => return e.kind() == std::io::ErrorKind::ConnectionReset,
        }
    }
}

#[test]
fn handshake_timeout_covers_tls_and_a_malformed_frame_over_tls_closes_only_its_connection() {
    let ca = Ca::new("test CA");
    let (_dir, node) = tls_node(&ca, "[limits]\nhandshake_timeout_ms = 300");
    let config = client_config(&ca, None);
    let mut healthy = started(node.addr, &config);
    // Silent, half a TLS record header, and TLS done but no STARTUP: all closed by the
    // handshake deadline.
    assert!(closed_after(node.addr, &[]));
    assert!(closed_after(node.addr, &[0x16, 0x03, 0x01]));
    let mut silent = connect_tls(node.addr, &config).unwrap();
    assert!(silent.is_closed());
    wait_for("the TLS handshake timeout to be logged", || {
        node.log()
            .contains("did not complete its TLS handshake in time")
            .then_some(())
    });

    // An unknown opcode inside TLS: a protocol error on its stream, then the close.
    let mut bad = started(node.addr, &config);
    bad.send_raw(&[0x04, 0x00, 0x00, 0x02, 0x55, 0, 0, 0, 0]);
    let f = bad.recv();
    assert_eq!(f.stream, 2);
    assert_eq!(f.error().1, "Unknown opcode 85");
    assert!(bad.is_closed());

    assert!(queries(&mut healthy));
    assert!(serves(connect_tls(node.addr, &config)));
}

#[test]
fn node_refuses_to_start_without_a_usable_certificate_and_key() {
    let dir = tempfile::tempdir().unwrap();
    let ca = Ca::new("test CA");
    let (cert, _, _) = node_files(dir.path(), &ca);
    let config = dir.path().join("mosaic.toml");
    // The node must exit at start, its error naming what is wrong and the key file.
    let refused = |key: &Path, why: &str| {
        std::fs::write(
            &config,
            format!(
                "native_port = {}\ndata_dir = \"data\"\n[client_encryption]\nenabled = true\n\
                 certificate = \"{}\"\nprivate_key = \"{}\"\n",
                common::free_port(),
                cert.display(),
                key.display()
            ),
        )
        .unwrap();
        let out = run_mosaic(&["server", "--config", config.to_str().unwrap()]);
        assert!(!out.status.success(), "{}", output_text(&out));
        let stderr = String::from_utf8_lossy(&out.stderr);
        let file = key.file_name().unwrap().to_str().unwrap();
        assert!(
            stderr.contains(why) && stderr.contains(file),
            "{}",
            output_text(&out)
        );
    };
    refused(&dir.path().join("missing.key"), "private_key");
    let other_key = dir.path().join("other.key");
    write_atomically(&other_key, &ca.leaf("someone else").1);
    refused(&other_key, "do not make a usable pair");
}

/// A node of a cluster whose internode traffic is TLS, its files (signed by `ca`) in `dir`.
fn internode_node(dir: &Path, ca: &Ca, storage: u16, seed: u16) -> Node {
    let (cert, key, truststore) = node_files(dir, ca);
    Node::start_in(
        dir,
        &format!(
            "storage_port = {storage}\nadmin_port = 0\nseeds = [\"127.0.0.1:{seed}\"]\n\
             [cluster]\ngossip_interval_ms = 100\n[internode_encryption]\nenabled = true\n\
             certificate = \"{}\"\nprivate_key = \"{}\"\ntruststore = \"{}\"\nreload_interval_ms = 100\n",
            cert.display(),
            key.display(),
            truststore.display()
        ),
    )
}

/// How many peers `node` lists in `system.peers`.
fn peer_count(node: &Node) -> usize {
    node.ready()
        .query(1, "SELECT peer FROM system.peers")
        .rows()
        .len()
}

#[test]
fn internode_tls_joins_members_and_refuses_a_node_of_another_ca() {
    let ca = Ca::new("cluster CA");
    let dirs = [(); 3].map(|_| tempfile::tempdir().unwrap());
    let storage = [(); 3].map(|_| common::free_port());
    let a = internode_node(dirs[0].path(), &ca, storage[0], storage[0]);
    let b = internode_node(dirs[1].path(), &ca, storage[1], storage[0]);
    wait_for("the nodes to see each other over TLS", || {
        (peer_count(&a) == 1 && peer_count(&b) == 1).then_some(())
    });

    let stranger = internode_node(
        dirs[2].path(),
        &Ca::new("another CA"),
        storage[2],
        storage[0],
    );
    wait_for("node a to refuse the stranger's connections", || {
        node_log_refuses(&a).then_some(())
    });
    assert_eq!(peer_count(&a), 1, "the stranger joined");
    assert_eq!(peer_count(&stranger), 0);
}

fn node_log_refuses(node: &Node) -> bool {
    node.log()
        .contains("refusing an internode connection: its TLS handshake failed")
}

#[test]
fn internode_certificates_reload_without_a_restart() {
    let (old, new) = (Ca::new("old cluster CA"), Ca::new("new cluster CA"));
    let dirs = [(); 2].map(|_| tempfile::tempdir().unwrap());
    let storage = [(); 2].map(|_| common::free_port());
    let a = internode_node(dirs[0].path(), &old, storage[0], storage[0]);
    // Node a moves to the new CA (certificate, key and truststore) while it runs.
    node_files(dirs[0].path(), &new);
    wait_for("node a to reload its internode certificate", || {
        a.log()
            .contains("reloaded the internode TLS certificate")
            .then_some(())
    });
    let b = internode_node(dirs[1].path(), &new, storage[1], storage[0]);
    wait_for("a node of the new CA to join node a", || {
        (peer_count(&a) == 1 && peer_count(&b) == 1).then_some(())
    });
}
