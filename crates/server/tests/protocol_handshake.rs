//! A connection's first messages against a real `mosaic server`: OPTIONS → SUPPORTED,
//! STARTUP → READY, requests before STARTUP refused as Cassandra refuses them, STARTUP
//! errors, and protocol versions we don't speak (v6, DSE's, v1) refused with the text
//! drivers look for before they retry with a lower version (v5 itself: protocol_v5.rs).
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

mod common;

use common::{query_body, startup_body, Node, Reader};
use mosaic_cql::frame::{error_code, Opcode};

#[test]
fn options_startup_and_the_state_machine() {
    let node = Node::start("");

    // OPTIONS before STARTUP: SUPPORTED, as a v4 response on the request's stream.
    let mut c = node.connect();
    c.send(3, Opcode::Options, &[]);
    let f = c.recv();
    assert_eq!(
        (f.version, f.opcode, f.stream),
        (0x84, 0x06, 3),
        "{}",
        f.describe()
    );
    let supported = Reader(&f.body).string_multimap();
    let get = |k: &str| {
        supported
            .iter()
            .find(|(n, _)| n == k)
            .map(|(_, v)| v.clone())
    };
    assert_eq!(get("CQL_VERSION"), Some(vec!["3.4.5".to_owned()]));
    assert_eq!(get("COMPRESSION"), Some(vec!["lz4".to_owned()]));
    assert_eq!(
        get("PROTOCOL_VERSIONS"),
        Some(vec![
            "3/v3".to_owned(),
            "4/v4".to_owned(),
            "5/v5".to_owned()
        ])
    );
    assert!(supported.iter().all(|(k, _)| !k.starts_with("SCYLLA")));

    // A QUERY before STARTUP: protocol error on its stream; the connection stays usable.
    c.send(5, Opcode::Query, &query_body("SELECT * FROM system.local"));
    let f = c.recv();
    assert_eq!(f.stream, 5);
    assert_eq!(
        f.error(),
        (
            error_code::PROTOCOL,
            "Unexpected message QUERY, expecting STARTUP or OPTIONS".to_owned()
        )
    );

    // STARTUP without CQL_VERSION, then with an unknown compression: errors, not READY.
    c.send(0, Opcode::Startup, &startup_body(&[]));
    let (code, message) = c.recv().error();
    assert_eq!(code, error_code::PROTOCOL);
    assert!(message.contains("CQL_VERSION"), "{message}");
    c.send(
        0,
        Opcode::Startup,
        &startup_body(&[("CQL_VERSION", "3.0.0"), ("COMPRESSION", "snappy")]),
    );
    let (code, message) = c.recv().error();
    assert_eq!(code, error_code::PROTOCOL);
    assert!(message.contains("Snappy"), "{message}");

    // STARTUP → READY; then requests are executed, and a second STARTUP is refused.
    c.startup(None);
    let f = c.query(7, "USE no_such_keyspace");
    assert_eq!(f.error().0, error_code::INVALID, "{}", f.describe());
    c.send(
        9,
        Opcode::Startup,
        &startup_body(&[("CQL_VERSION", "3.0.0")]),
    );
    let f = c.recv();
    assert_eq!(f.stream, 9);
    assert_eq!(
        f.error(),
        (
            error_code::PROTOCOL,
            "Unexpected message STARTUP, the connection is already initialized".to_owned()
        )
    );
    c.send(10, Opcode::Options, &[]);
    assert_eq!(c.recv().opcode, 0x06);
}

#[test]
fn protocol_v6_and_dse_versions_are_refused_so_drivers_step_down() {
    let node = Node::start("");
    // A v6 STARTUP (and DSE's 0x42, which the Python and Node.js drivers try first; header
    // layout as v4: version, flags, stream, opcode, length) on stream 7 is answered on stream
    // 0, framed as v5, as Cassandra 4.1 answers: gocql v2 sends its first request on a
    // non-zero stream and steps down only when the refusal arrives on stream 0.
    for version in [0x06u8, 0x42] {
        let mut c = node.connect();
        let body = startup_body(&[("CQL_VERSION", "3.0.0")]);
        let mut frame = vec![version, 0x00, 0x00, 0x07, 0x01];
        frame.extend_from_slice(&(body.len() as u32).to_be_bytes());
        frame.extend_from_slice(&body);
        c.send_raw(&frame);
        let f = c.recv();
        assert_eq!((f.version, f.stream), (0x85, 0), "{}", f.describe());
        let (code, message) = f.error();
        assert_eq!(code, error_code::PROTOCOL);
        assert_eq!(
            message,
            format!(
                "Invalid or unsupported protocol version ({version}); supported versions are (3/v3, 4/v4, 5/v5)"
            ),
            "drivers step down only on this text"
        );
        assert!(c.is_closed());
    }

    // v1 is answered in its own 8-byte header layout, on stream 0, then closed.
    let mut c = node.connect();
    c.send_raw(&[0x01, 0x00, 0x07, 0x01, 0, 0, 0, 0]);
    let mut header = [0u8; 8];
    std::io::Read::read_exact(&mut c_stream(&mut c), &mut header).unwrap();
    assert_eq!(&header[..4], &[0x81, 0x00, 0x00, 0x00]);

    // The node still serves a well-behaved v4 client.
    let mut ok = node.ready();
    ok.send(1, Opcode::Options, &[]);
    assert_eq!(ok.recv().opcode, 0x06);
}

/// The raw stream of a connection, for reading a non-v4 header.
fn c_stream(c: &mut common::Conn) -> impl std::io::Read + '_ {
    struct R<'a>(&'a mut common::Conn);
    impl std::io::Read for R<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            self.0.read_raw(buf)
        }
    }
    R(c)
}
