//! REGISTER and pushed events against a real `mosaic server`: a connection registered for
//! SCHEMA_CHANGE receives an EVENT on stream -1 for every DDL statement, whichever
//! connection ran it; a connection that did not register receives none.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

mod common;

use common::{register_body, Frame, Node, Reader};
use mosaic_cql::frame::Opcode;

fn schema_event(f: &Frame) -> Vec<String> {
    assert_eq!((f.opcode, f.stream), (0x0C, -1), "{}", f.describe());
    let mut r = Reader(&f.body);
    let mut parts = vec![r.string(), r.string(), r.string(), r.string()];
    if parts[2] == "TABLE" {
        parts.push(r.string());
    }
    parts
}

#[test]
fn schema_changes_are_pushed_to_registered_connections() {
    let node = Node::start("");
    let mut listener = node.connect();
    listener.startup(Some("lz4"));
    listener.send(
        1,
        Opcode::Register,
        &register_body(&["SCHEMA_CHANGE", "STATUS_CHANGE"]),
    );
    let f = listener.recv();
    assert_eq!(
        (f.opcode, f.stream),
        (0x02, 1),
        "REGISTER is answered READY"
    );

    let mut quiet = node.ready();
    let mut ddl = node.ready();
    ddl.exec("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}");
    assert_eq!(
        schema_event(&listener.recv()),
        ["SCHEMA_CHANGE", "CREATED", "KEYSPACE", "ks"]
    );
    ddl.exec("CREATE TABLE ks.t (k int PRIMARY KEY)");
    assert_eq!(
        schema_event(&listener.recv()),
        ["SCHEMA_CHANGE", "CREATED", "TABLE", "ks", "t"]
    );
    ddl.exec("DROP TABLE ks.t");
    assert_eq!(
        schema_event(&listener.recv()),
        ["SCHEMA_CHANGE", "DROPPED", "TABLE", "ks", "t"]
    );

    // The unregistered connection got nothing: its next frame answers its own request.
    quiet.send(9, Opcode::Options, &[]);
    let f = quiet.recv();
    assert_eq!((f.opcode, f.stream), (0x06, 9));
}
