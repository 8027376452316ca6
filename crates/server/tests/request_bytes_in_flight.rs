//! `[limits] request_bytes_in_flight_per_address_max` against a real `mosaic server`: an
//! address whose requests hold its budget (their answers queued behind a large result its
//! client does not read) is no longer read — its connections are paused, another
//! connection from the same address waits — while a client on another address is served;
//! a connection that asked for `THROW_ON_OVERLOAD` is answered Overloaded instead of
//! waiting; once the flooding client reads, everything is answered. A request larger than
//! the budget still runs, alone.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]
#![allow(clippy::disallowed_methods)] // Tests of a real process, in real time.

mod common;

use std::collections::BTreeMap;
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use common::{free_port, http, query_body, startup_body, wait_for, Conn, Frame, Node, WAIT};
use mosaic_cql::frame::Opcode;

/// The client's receive buffer on the flooding connection: fixed (no autotuning), so the
/// large result cannot fit in the socket buffers and its write blocks.
const FLOOD_RECEIVE_BUFFER_BYTES: usize = 64 << 10;

/// A connection from `source` (any loopback address) to the node, its socket kept to
/// peek and to change the read timeout; `receive_buffer` fixes SO_RCVBUF.
fn connect_from(node: &Node, source: [u8; 4], receive_buffer: Option<usize>) -> (Conn, TcpStream) {
    let socket = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    if let Some(bytes) = receive_buffer {
        socket.set_recv_buffer_size(bytes).unwrap();
    }
    socket.bind(&SocketAddr::from((source, 0)).into()).unwrap();
    socket.connect(&node.addr.into()).unwrap();
    let stream: TcpStream = socket.into();
    stream.set_read_timeout(Some(WAIT)).unwrap();
    let handle = stream.try_clone().unwrap();
    (Conn::over(stream), handle)
}

/// A series' value in the node's `/metrics` (0 while it has not been recorded).
fn metric(admin: SocketAddr, name: &str) -> f64 {
    let (code, body) = http(admin, "GET", "/metrics", &[("Host", "localhost")]);
    assert_eq!(code, 200, "{body}");
    body.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' '))
        .map_or(0.0, |v| v.trim().parse().unwrap())
}

/// Waits (bounded) until `name` reads `value`.
fn wait_metric(admin: SocketAddr, name: &str, value: f64) {
    wait_for(&format!("{name} to be {value}"), || {
        (metric(admin, name) == value).then_some(())
    });
}

#[test]
fn a_flooding_address_is_throttled_while_other_addresses_are_served() {
    let admin_port = free_port();
    let admin = SocketAddr::from(([127, 0, 0, 1], admin_port));
    let node = Node::start(&format!(
        "admin_port = {admin_port}\n[limits]\nrequest_bytes_in_flight_per_address_max = 65536\n"
    ));
    let mut setup = node.ready();
    setup.exec(
        "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
    );
    setup.exec("CREATE TABLE ks.t (k int, c int, v text, PRIMARY KEY (k, c))");
    // Each insert (500 KB) is larger than the address's budget: it runs alone.
    let value = "v".repeat(500_000);
    for c in 0..32 {
        setup.exec(&format!(
            "INSERT INTO ks.t (k, c, v) VALUES (1, {c}, '{value}')"
        ));
    }
    drop(setup);

    // A 16 MB result, far more than the socket buffers hold (the client's is fixed at
    // 64 KiB, the node's grows to 4 MiB at most): once its first bytes arrive, the
    // connection's writer is blocked in it until the client reads.
    let (mut flood, flood_socket) =
        connect_from(&node, [127, 0, 0, 1], Some(FLOOD_RECEIVE_BUFFER_BYTES));
    flood.startup(None);
    flood.send(
        10,
        Opcode::Query,
        &query_body("SELECT v FROM ks.t WHERE k = 1"),
    );
    assert_eq!(flood_socket.peek(&mut [0u8; 1]).unwrap(), 1);
    // Requests of about 40 KB each: the first takes its bytes and its answer queues behind
    // the large one, holding them; the second cannot get its bytes from the 64 KiB budget
    // and the connection stops reading.
    let large = format!(
        "SELECT c FROM ks.t WHERE k = 2 AND v = '{}' ALLOW FILTERING",
        "w".repeat(40_000)
    );
    for stream in 11..14 {
        flood.send(stream, Opcode::Query, &query_body(&large));
    }
    wait_metric(admin, "mosaic_cql_connections_paused", 1.0);

    // Another connection of the same address: its small request waits behind the flooding
    // connection's (the budget is served in arrival order).
    let (mut same, same_socket) = connect_from(&node, [127, 0, 0, 1], None);
    same.startup(None);
    same.send(
        1,
        Opcode::Query,
        &query_body("SELECT c FROM ks.t WHERE k = 3"),
    );
    wait_metric(admin, "mosaic_cql_connections_paused", 2.0);
    same_socket
        .set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    assert!(
        same.try_recv().is_err(),
        "a request of a throttled address was answered"
    );

    // A connection of the same address that asked to be told: Overloaded at once.
    let (mut throwing, _) = connect_from(&node, [127, 0, 0, 1], None);
    throwing.send(
        0,
        Opcode::Startup,
        &startup_body(&[("CQL_VERSION", "3.0.0"), ("THROW_ON_OVERLOAD", "1")]),
    );
    assert_eq!(throwing.recv().opcode, Opcode::Ready.byte());
    let f = throwing.query(1, "SELECT c FROM ks.t WHERE k = 3");
    let (code, message) = f.error();
    assert_eq!(code, 0x1001, "{message}");
    assert_eq!(metric(admin, "mosaic_cql_requests_overloaded_total"), 1.0);

    // Another address is served at once.
    let (mut other, _) = connect_from(&node, [127, 0, 0, 2], None);
    other.startup(None);
    assert!(other
        .exec("SELECT c FROM ks.t WHERE k = 3")
        .rows()
        .is_empty());

    // The flooding client reads: every answer arrives, and the throttled address resumes.
    let mut answers: BTreeMap<i16, Frame> = BTreeMap::new();
    for _ in 10..14 {
        let f = flood.recv();
        answers.insert(f.stream, f);
    }
    assert_eq!(answers[&10].rows().len(), 32, "{}", answers[&10].describe());
    for stream in 11..14 {
        assert!(
            answers[&stream].rows().is_empty(),
            "{}",
            answers[&stream].describe()
        );
    }
    same_socket.set_read_timeout(Some(WAIT)).unwrap();
    let f = same.recv();
    assert_eq!(f.stream, 1, "{}", f.describe());
    assert!(f.rows().is_empty());
    wait_metric(admin, "mosaic_cql_connections_paused", 0.0);
    assert!(throwing
        .exec("SELECT c FROM ks.t WHERE k = 3")
        .rows()
        .is_empty());
}
