//! The admin endpoint of a node with password authentication (issue 21): requests that
//! change state need a superuser's HTTP Basic credentials (none or wrong: 401 with a Basic
//! challenge; a role that is not a superuser: 403), reads stay open, failed admin logins
//! draw on the CQL port's per-address limit, and the `mosaic` CLI logs in with
//! `-u` and `MOSAIC_PASSWORD`.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

mod common;

use std::net::SocketAddr;
use std::process::Command;

use common::{free_port, http, http_answer, output_text, plain, startup_body, Node};
use mosaic_cql::frame::Opcode;

const PASSWORD: &str = "s3cret-superuser";

/// `Authorization: Basic …` for `user` and `password`.
fn basic(user: &str, password: &str) -> String {
    use base64::Engine as _;
    let encoded = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
    format!("Basic {encoded}")
}

/// A CQL connection logged in as `user`, or the BadCredentials message.
fn cql_login(node: &Node, user: &str, password: &str) -> Result<common::Conn, String> {
    let mut c = node.connect();
    c.send(
        0,
        Opcode::Startup,
        &startup_body(&[("CQL_VERSION", "3.0.0")]),
    );
    assert_eq!(c.recv().opcode, Opcode::Authenticate.byte());
    c.send(1, Opcode::AuthResponse, &plain(user, password));
    let f = c.recv();
    if f.opcode == Opcode::AuthSuccess.byte() {
        Ok(c)
    } else {
        Err(f.error().1)
    }
}

/// `mosaic flush --only` against the admin endpoint with `args` and `env`.
fn cli_flush(admin: SocketAddr, args: &[&str], env: &[(&str, &str)]) -> std::process::Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_mosaic"));
    command
        .args(["flush", "--only", "--host", &admin.to_string()])
        .args(args)
        .env_remove("MOSAIC_USERNAME")
        .env_remove("MOSAIC_PASSWORD");
    for (k, v) in env {
        command.env(k, v);
    }
    command.output().unwrap()
}

#[test]
fn state_changing_admin_requests_need_a_superusers_credentials() {
    let port = free_port();
    let pw = tempfile::tempdir().unwrap();
    let file = pw.path().join("superuser.pw");
    std::fs::write(&file, format!("{PASSWORD}\n")).unwrap();
    let node = Node::start(&format!(
        "admin_port = {port}\n[auth]\nauthenticator = \"password\"\nsuperuser_password_file = \"{}\"\nlogin_failures_burst = 6\nlogin_failure_refill_ms = 600000\n",
        file.display()
    ));
    let admin = SocketAddr::from(([127, 0, 0, 1], port));
    let host = ("Host", "127.0.0.1");

    // Reads stay open.
    for path in ["/status", "/stats", "/metrics"] {
        let (code, body) = http(admin, "GET", path, &[host]);
        assert_eq!(code, 200, "{path}: {body}");
    }

    // No credentials, unreadable ones, a wrong password, an unknown role: 401 and a challenge.
    let answer = http_answer(admin, "POST", "/flush", &[host]);
    assert!(answer.starts_with("HTTP/1.1 401"), "{answer}");
    assert!(
        answer
            .to_ascii_lowercase()
            .contains("www-authenticate: basic realm="),
        "{answer}"
    );
    let wrong = basic("cassandra", "guess");
    let unknown = basic("nobody", "x");
    for authorization in ["Basic !!!", wrong.as_str(), unknown.as_str()] {
        let (code, body) = http(
            admin,
            "POST",
            "/flush",
            &[host, ("Authorization", authorization)],
        );
        assert_eq!(code, 401, "{authorization}: {body}");
    }

    // A role that logs in but is not a superuser: 403; one granted the superuser role: 200.
    let mut c = cql_login(&node, "cassandra", PASSWORD).unwrap();
    for (i, cql) in [
        "CREATE ROLE ops WITH PASSWORD = 'opspw' AND LOGIN = true",
        "CREATE ROLE deputy WITH PASSWORD = 'deputypw' AND LOGIN = true",
        "GRANT cassandra TO deputy",
    ]
    .into_iter()
    .enumerate()
    {
        let f = c.query(2 + i as i16, cql);
        assert_eq!(f.opcode, Opcode::Result.byte(), "{cql}: {}", f.describe());
    }
    let ops = basic("ops", "opspw");
    let (code, body) = http(admin, "POST", "/compact", &[host, ("Authorization", &ops)]);
    assert_eq!(code, 403, "{body}");
    assert!(body.contains("not a superuser"), "{body}");
    for (user, password) in [("cassandra", PASSWORD), ("deputy", "deputypw")] {
        let auth = basic(user, password);
        let (code, body) = http(admin, "POST", "/flush", &[host, ("Authorization", &auth)]);
        assert_eq!(code, 200, "{user}: {body}");
    }

    // The CLI: without credentials it says how to give them; -u with MOSAIC_PASSWORD works.
    let out = cli_flush(admin, &[], &[]);
    assert!(!out.status.success(), "{}", output_text(&out));
    assert!(
        output_text(&out).contains("MOSAIC_PASSWORD"),
        "{}",
        output_text(&out)
    );
    let out = cli_flush(
        admin,
        &["-u", "cassandra"],
        &[("MOSAIC_PASSWORD", PASSWORD)],
    );
    assert!(out.status.success(), "{}", output_text(&out));
    let out = cli_flush(
        admin,
        &[],
        &[
            ("MOSAIC_USERNAME", "cassandra"),
            ("MOSAIC_PASSWORD", PASSWORD),
        ],
    );
    assert!(out.status.success(), "{}", output_text(&out));
    assert!(node.log().contains("admin login refused"), "{}", node.log());

    // Failed admin logins count against the same per-address limit as CQL logins: three
    // so far (the unreadable header, the wrong password, the unknown role); three more
    // empty the bucket, and then even the right password is refused on the CQL port.
    for _ in 0..3 {
        let (code, _) = http(admin, "POST", "/flush", &[host, ("Authorization", &wrong)]);
        assert_eq!(code, 401);
    }
    let refused = cql_login(&node, "cassandra", PASSWORD)
        .err()
        .unwrap_or_default();
    assert!(
        refused.contains("Too many failed login attempts"),
        "{refused}"
    );
}
