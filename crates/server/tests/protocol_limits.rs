//! `[limits]` against a real `mosaic server`: the connection cap (a new connection
//! displaces the oldest one still in its handshake, and is refused only when every slot
//! is past its handshake), the cap per address, the handshake and idle timeouts, and a
//! flood of connections that never send STARTUP not locking a real client out.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]
#![allow(clippy::disallowed_methods)] // Timeouts of a real process are waited out in real time.

mod common;

use std::time::{Duration, Instant};

use common::{wait_for, Conn, Node};
use mosaic_cql::frame::Opcode;

#[test]
fn a_full_node_displaces_handshakes_and_refuses_only_when_every_slot_is_ready() {
    let node = Node::start("[limits]\nconnection_count_max = 2\n");
    let mut a = node.ready();
    // The start-up probe's connection may still hold a slot for a moment: poll.
    let mut b = wait_for("a second connection slot", || answering(&node));
    // Full, with b still before STARTUP: a new connection takes b's place.
    let mut c = node.connect();
    c.startup(None);
    assert!(
        b.is_closed(),
        "the oldest connection in its handshake is closed"
    );
    assert!(node
        .log()
        .contains("closing the oldest connection still in its handshake"));

    // Every slot past its handshake: a new connection is refused at once.
    let mut refused = node.connect();
    assert!(
        refused.is_closed(),
        "a third ready-less connection is closed"
    );
    assert!(node.log().contains("connection_count_max (2) reached"));

    // The ready ones are unaffected.
    a.send(1, Opcode::Options, &[]);
    assert_eq!(a.recv().opcode, 0x06);
    assert_eq!(c.query(2, "USE nowhere").error().0, 0x2200);

    // Once one closes, its slot serves a new client (released asynchronously: poll).
    drop(c);
    let mut d = wait_for("a connection slot to free up", || answering(&node));
    d.startup(None);
    assert_eq!(d.query(2, "USE nowhere").error().0, 0x2200);
}

#[test]
fn many_silent_connections_do_not_lock_a_client_out() {
    // Five times the cap of connections that never send STARTUP (kept well below the
    // test process's descriptor limit).
    let node = Node::start("[limits]\nconnection_count_max = 100\n");
    let silent: Vec<Conn> = (0..500).map(|_| node.connect()).collect();
    let started = Instant::now();
    let mut client = wait_for("a client to connect past the silent ones", || {
        let mut c = node.connect();
        c.try_send(0, Opcode::Options, &[]).ok()?;
        match c.try_recv() {
            Ok(Some(f)) if f.opcode == 0x06 => Some(c),
            _ => None,
        }
    });
    client.startup(None);
    assert_eq!(client.query(2, "USE nowhere").error().0, 0x2200);
    // Not a timing assertion on the server's speed: a generous bound that only a lock-out
    // (a client waiting for the silent connections' handshake timeout) would exceed.
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "{:?}",
        started.elapsed()
    );
    drop(silent);
}

#[test]
fn one_address_holds_at_most_its_share_of_connections() {
    let node = Node::start("[limits]\nconnections_per_address_max = 2\n");
    // Poll: the start-up probe's connection may still count for a moment.
    let mut a = wait_for("a first connection", || answering(&node));
    let mut b = wait_for("a second connection", || answering(&node));
    let mut refused = node.connect();
    assert!(refused.is_closed());
    assert!(node
        .log()
        .contains("connections_per_address_max (2) reached for 127.0.0.1"));
    a.startup(None);
    b.startup(None);
    assert_eq!(a.query(1, "USE nowhere").error().0, 0x2200);
}

#[test]
fn a_handshake_that_takes_too_long_and_an_idle_connection_are_closed() {
    let node = Node::start("[limits]\nhandshake_timeout_ms = 300\nidle_timeout_ms = 600\n");
    // Connected, never a STARTUP: closed after the handshake timeout (OPTIONS does not
    // count as a handshake).
    let mut slow = node.connect();
    slow.send(0, Opcode::Options, &[]);
    assert_eq!(slow.recv().opcode, 0x06);
    std::thread::sleep(Duration::from_millis(500));
    assert!(slow.is_closed(), "a handshake past its timeout is closed");
    assert!(node
        .log()
        .contains("did not complete its handshake in time"));

    // Ready, then busy within the idle timeout: kept; then silent past it: closed.
    let mut c = node.ready();
    for i in 0..4 {
        std::thread::sleep(Duration::from_millis(300));
        assert_eq!(
            c.query(i, "USE nowhere").error().0,
            0x2200,
            "kept while active"
        );
    }
    std::thread::sleep(Duration::from_millis(1000));
    assert!(c.is_closed(), "an idle connection is closed");
}

#[test]
fn a_write_over_the_mutation_limit_is_refused_and_one_under_it_is_stored() {
    // Frames large enough to carry the write, so the mutation limit is what refuses it.
    let node = Node::start(
        "[limits]\nframe_size_bytes_max = 67108864\nmutation_size_bytes_max = 1048576\n",
    );
    let mut c = node.ready();
    c.exec("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}");
    c.exec("CREATE TABLE ks.t (k int PRIMARY KEY, v blob)");
    let blob = |bytes: usize| format!("0x{}", "ab".repeat(bytes));
    let f = c.query(
        2,
        &format!("INSERT INTO ks.t (k, v) VALUES (1, {})", blob(2 << 20)),
    );
    let (code, message) = f.error();
    assert_eq!(code, 0x2200, "{message}");
    assert!(
        message.starts_with("Rejected an oversized mutation ("),
        "{message}"
    );
    assert!(message.ends_with("/1048576)"), "{message}");
    // A batch is one write: its statements count together.
    let half = blob(600 << 10);
    let f = c.query(
        3,
        &format!(
            "BEGIN UNLOGGED BATCH INSERT INTO ks.t (k, v) VALUES (2, {half}); \
             INSERT INTO ks.t (k, v) VALUES (3, {half}); APPLY BATCH"
        ),
    );
    assert_eq!(f.error().0, 0x2200, "{}", f.describe());
    c.exec(&format!("INSERT INTO ks.t (k, v) VALUES (4, {half})"));
    let rows = c.exec("SELECT k FROM ks.t").rows();
    assert_eq!(rows.len(), 1, "only the write under the limit is stored");
}

/// A new connection, if the node answers OPTIONS on it.
fn answering(node: &Node) -> Option<Conn> {
    let mut c = node.connect();
    c.try_send(0, Opcode::Options, &[]).ok()?;
    match c.try_recv() {
        Ok(Some(f)) if f.opcode == 0x06 => Some(c),
        _ => None,
    }
}
