//! The admin endpoint against a real `mosaic server` (issue 21): it binds to loopback, answers
//! the CLI, and refuses what a web page in an operator's browser could send it.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

mod common;

use std::io::Write;
use std::net::{SocketAddr, TcpStream};

use common::{free_port, http, Node};

#[test]
fn the_admin_endpoint_answers_tools_and_refuses_what_a_web_page_could_send() {
    let port = free_port();
    let node = Node::start(&format!("admin_port = {port}\n"));
    let admin = SocketAddr::from(([127, 0, 0, 1], port));
    let host = format!("127.0.0.1:{port}");

    let (code, body) = http(admin, "GET", "/status", &[("Host", &host)]);
    assert_eq!(code, 200, "{body}");
    let (code, body) = http(admin, "GET", "/metrics", &[("Host", "localhost")]);
    assert_eq!(code, 200, "{body}");
    let (code, body) = http(admin, "POST", "/flush", &[("Host", &host)]);
    assert_eq!(code, 200, "{body}");
    // Without password authentication no credentials are needed, and any are ignored.
    let (code, body) = http(
        admin,
        "POST",
        "/flush",
        &[("Host", &host), ("Authorization", "Basic bm9ib2R5Ong=")],
    );
    assert_eq!(code, 200, "{body}");

    // A page whose name was rebound to this address: refused, reads included.
    for (method, path) in [("GET", "/status"), ("POST", "/flush")] {
        let (code, body) = http(admin, method, path, &[("Host", "evil.example")]);
        assert_eq!(code, 421, "{method} {path}: {body}");
        assert!(body.contains("IP address or localhost"), "{body}");
    }
    // A cross-site form post: refused; a read with an Origin is harmless (no CORS answer).
    let page = [("Host", host.as_str()), ("Origin", "https://evil.example")];
    let (code, body) = http(admin, "POST", "/compact", &page);
    assert_eq!(code, 403, "{body}");
    assert!(body.contains("Origin"), "{body}");
    let (code, _) = http(admin, "GET", "/status", &page);
    assert_eq!(code, 200);
    assert!(
        node.log().contains("admin request refused"),
        "{}",
        node.log()
    );

    // The CLI still works.
    let out = common::run_mosaic(&["status", "--host", &admin.to_string()]);
    assert!(out.status.success(), "{}", common::output_text(&out));
}

#[test]
fn a_client_that_never_finishes_its_request_holds_no_slot() {
    let port = free_port();
    let node = Node::start(&format!(
        "admin_port = {port}\n[limits]\nadmin_requests_max = 1\n"
    ));
    let admin = SocketAddr::from(([127, 0, 0, 1], port));
    // Headers that never end: the request never reaches the guard, so the only slot stays
    // free for the operator's next request (the 503 for a full endpoint: guard.rs's test).
    let mut slow = TcpStream::connect(admin).unwrap();
    slow.write_all(b"GET /status HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        .unwrap();
    let (code, _) = http(admin, "GET", "/status", &[("Host", "127.0.0.1")]);
    assert_eq!(code, 200);
    drop(slow);
    drop(node);
}
