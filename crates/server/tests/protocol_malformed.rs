//! Malformed input against a real `mosaic server`: a bad frame header gets a protocol
//! error and closes that connection only; a bad body gets a protocol error on its stream
//! and the connection carries on; an over-long frame is refused from its header.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

mod common;

use common::{query_body, Node};
use mosaic_cql::frame::{error_code, Opcode};

#[test]
fn a_malformed_header_closes_only_its_connection() {
    let node = Node::start("[limits]\nframe_size_bytes_max = 65536\n");
    let mut healthy = node.ready();

    // An unknown opcode.
    let mut bad = node.ready();
    bad.send_raw(&[0x04, 0x00, 0x00, 0x02, 0x55, 0, 0, 0, 0]);
    let f = bad.recv();
    assert_eq!(f.stream, 2);
    assert_eq!(
        f.error(),
        (error_code::PROTOCOL, "Unknown opcode 85".to_owned())
    );
    assert!(bad.is_closed());

    // A frame with the response direction bit.
    let mut bad = node.connect();
    bad.send_raw(&[0x84, 0x00, 0x00, 0x01, 0x05, 0, 0, 0, 0]);
    let (code, message) = bad.recv().error();
    assert_eq!(code, error_code::PROTOCOL);
    assert!(message.contains("Wrong protocol direction"), "{message}");
    assert!(bad.is_closed());

    // A header announcing more than frame_size_bytes_max: refused before the body arrives.
    let mut bad = node.ready();
    bad.send_raw(&[0x04, 0x00, 0x00, 0x04, 0x07, 0x00, 0x10, 0x00, 0x00]);
    let (code, message) = bad.recv().error();
    assert_eq!(code, error_code::PROTOCOL);
    assert!(message.starts_with("Request is too big"), "{message}");
    assert!(bad.is_closed());

    // Garbage that isn't a frame at all.
    let mut bad = node.connect();
    bad.send_raw(b"GET / HTTP/1.1\r\n\r\n");
    let (code, _) = bad.recv().error();
    assert_eq!(code, error_code::PROTOCOL);
    assert!(bad.is_closed());

    // The connection opened before all this, and a new one, still work.
    healthy.send(11, Opcode::Options, &[]);
    let f = healthy.recv();
    assert_eq!((f.opcode, f.stream), (0x06, 11));
    let mut fresh = node.ready();
    let f = fresh.query(1, "USE nowhere");
    assert_eq!(f.error().0, error_code::INVALID);
}

#[test]
fn a_malformed_body_is_answered_on_its_stream_and_the_connection_goes_on() {
    let node = Node::start("");
    let mut c = node.ready();
    // A QUERY whose long string claims more bytes than the body holds.
    let mut body = query_body("SELECT now() FROM system.local");
    body[3] = 0xFF;
    c.send(21, Opcode::Query, &body);
    let f = c.recv();
    assert_eq!(f.stream, 21);
    assert_eq!(f.error().0, error_code::PROTOCOL, "{}", f.describe());
    // A compressed frame although no compression was negotiated.
    let mut frame = c.frame(22, Opcode::Query, &query_body("USE x"));
    frame[1] = 0x01;
    c.send_raw(&frame);
    let f = c.recv();
    assert_eq!(f.stream, 22);
    let (code, message) = f.error();
    assert_eq!(code, error_code::PROTOCOL);
    assert!(
        message.contains("no compression was negotiated"),
        "{message}"
    );
    // A REGISTER for an event type that doesn't exist.
    c.send(
        23,
        Opcode::Register,
        &common::register_body(&["NO_SUCH_EVENT"]),
    );
    assert_eq!(c.recv().error().0, error_code::PROTOCOL);
    // Still serving.
    let f = c.query(24, "USE nowhere");
    assert_eq!(f.error().0, error_code::INVALID, "{}", f.describe());
}
