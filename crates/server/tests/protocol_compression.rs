//! LZ4 negotiated at STARTUP against a real `mosaic server`: after READY, responses with a
//! body are compressed (Cassandra's framing: big-endian length, raw LZ4 block), compressed
//! requests are understood, and uncompressed ones still are (the flag is per frame).
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

mod common;

use common::{Node, Reader};
use mosaic_cql::frame::Opcode;

#[test]
fn lz4_is_negotiated_and_used_both_ways() {
    let node = Node::start("");
    let mut c = node.connect();
    c.startup(Some("lz4"));

    // A compressed request; the result comes back compressed.
    let f = c.query(
        2,
        "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
    );
    assert_eq!(f.flags & 0x01, 0x01, "{}", f.describe());
    assert_eq!(
        f.result_kind(),
        5,
        "a SchemaChange result: {}",
        f.describe()
    );
    let mut r = Reader(&f.body[4..]);
    assert_eq!(
        (r.string(), r.string(), r.string()),
        ("CREATED".to_owned(), "KEYSPACE".to_owned(), "ks".to_owned())
    );
    c.exec("CREATE TABLE ks.t (k int PRIMARY KEY, v text)");
    let long = "x".repeat(5000);
    c.exec(&format!("INSERT INTO ks.t (k, v) VALUES (1, '{long}')"));
    let f = c.query(3, "SELECT v FROM ks.t WHERE k = 1");
    assert_eq!(f.flags & 0x01, 0x01);
    assert_eq!(f.rows(), vec![vec![Some(long.into_bytes())]]);

    // SUPPORTED is compressed too; an uncompressed request is still accepted.
    c.send(4, Opcode::Options, &[]);
    let f = c.recv();
    assert_eq!((f.opcode, f.flags & 0x01), (0x06, 0x01));
    c.lz4 = false;
    let frame = c.frame(
        5,
        Opcode::Query,
        &common::query_body("SELECT v FROM ks.t WHERE k = 2"),
    );
    c.lz4 = true;
    c.send_raw(&frame);
    let f = c.recv();
    assert_eq!(f.stream, 5);
    assert_eq!(f.rows(), Vec::<Vec<Option<Vec<u8>>>>::new());
}
