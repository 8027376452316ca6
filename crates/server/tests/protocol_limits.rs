//! `[limits]` against a real `mosaic server`: connections beyond `connection_count_max`
//! are closed as they arrive, and a slot freed by a closing client is reused.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

mod common;

use common::{wait_for, Node};
use mosaic_cql::frame::Opcode;

#[test]
fn connections_beyond_the_cap_are_closed_and_slots_are_reused() {
    let node = Node::start("[limits]\nconnection_count_max = 2\n");
    let mut a = node.ready();
    // The start-up probe's connection may still hold a slot for a moment: poll.
    let b = wait_for("a second connection slot", || answering(&node));
    let mut refused = node.connect();
    assert!(refused.is_closed(), "a third connection is closed at once");
    assert!(node.log().contains("connection_count_max (2) reached"));

    // The first two are unaffected.
    a.send(1, Opcode::Options, &[]);
    assert_eq!(a.recv().opcode, 0x06);

    // Once one closes, its slot serves a new client (released asynchronously: poll).
    drop(b);
    let mut c = wait_for("a connection slot to free up", || answering(&node));
    c.startup(None);
    assert_eq!(c.query(2, "USE nowhere").error().0, 0x2200);
}

/// A new connection, if the node answers OPTIONS on it.
fn answering(node: &Node) -> Option<common::Conn> {
    let mut c = node.connect();
    c.try_send(0, Opcode::Options, &[]).ok()?;
    match c.try_recv() {
        Ok(Some(f)) if f.opcode == 0x06 => Some(c),
        _ => None,
    }
}
