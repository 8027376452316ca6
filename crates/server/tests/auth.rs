//! Password authentication and permissions against a real `mosaic server`
//! (`[auth] authenticator = "password"`): the SASL PLAIN exchange on the wire
//! (BadCredentials 0x0100 with Cassandra's text), the `scylla` driver logging in, a role
//! granted SELECT on one table reading it and refused (Unauthorized 0x2100) everything
//! else, REVOKE taking effect within the permissions validity, a node refusing to start
//! without the superuser's password, and a user name with line breaks logged escaped (it
//! once wrote lines of its own into the log; found by `listener_fuzz.rs`).
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

mod common;

use std::time::Duration;

use tokio::time::Instant;

use common::{plain, run_mosaic, startup_body, Node};
use mosaic_cql::frame::Opcode;
use scylla::client::session::Session;
use scylla::client::session_builder::SessionBuilder;

const PASSWORD: &str = "s3cret-superuser";

/// A node with password authentication, its superuser password in a file.
fn auth_node(pw_dir: &std::path::Path, extra: &str) -> Node {
    let file = pw_dir.join("superuser.pw");
    std::fs::write(&file, format!("{PASSWORD}\n")).unwrap();
    Node::start(&format!(
        "[auth]\nauthenticator = \"password\"\nsuperuser_password_file = \"{}\"\npermissions_validity_ms = 500\n{extra}",
        file.display()
    ))
}

async fn login(node: &Node, user: &str, password: &str) -> Result<Session, String> {
    SessionBuilder::new()
        .known_node(node.addr.to_string())
        .user(user, password)
        .build()
        .await
        .map_err(|e| e.to_string())
}

/// A connection past STARTUP, asked to authenticate.
fn authenticating(node: &Node) -> common::Conn {
    let mut c = node.connect();
    c.send(
        0,
        Opcode::Startup,
        &startup_body(&[("CQL_VERSION", "3.0.0")]),
    );
    assert_eq!(c.recv().opcode, Opcode::Authenticate.byte());
    c
}

#[test]
fn the_wire_exchange_answers_authenticate_then_success_or_bad_credentials() {
    let pw = tempfile::tempdir().unwrap();
    let node = auth_node(pw.path(), "");
    let mut c = node.connect();
    c.send(
        0,
        Opcode::Startup,
        &startup_body(&[("CQL_VERSION", "3.0.0")]),
    );
    let f = c.recv();
    assert_eq!(f.opcode, Opcode::Authenticate.byte(), "{}", f.describe());
    let mut r = common::Reader(&f.body);
    assert_eq!(
        r.string(),
        "org.apache.cassandra.auth.PasswordAuthenticator"
    );
    // A query before authenticating is refused.
    let f = c.query(1, "SELECT * FROM system.local");
    assert_eq!(f.error().0, 0x000A, "{}", f.describe());
    c.send(2, Opcode::AuthResponse, &plain("cassandra", "wrong"));
    let f = c.recv();
    assert_eq!(
        f.error(),
        (
            0x0100,
            "Provided username cassandra and/or password are incorrect".to_owned()
        )
    );
    c.send(3, Opcode::AuthResponse, &plain("nobody", "x"));
    assert_eq!(
        c.recv().error(),
        (
            0x0100,
            "Provided username nobody and/or password are incorrect".to_owned()
        )
    );
    c.send(4, Opcode::AuthResponse, b"\xff\xff\xff\xff");
    assert_eq!(c.recv().error().0, 0x0100);
    c.send(5, Opcode::AuthResponse, &plain("cassandra", PASSWORD));
    let f = c.recv();
    assert_eq!(f.opcode, Opcode::AuthSuccess.byte(), "{}", f.describe());
    let f = c.query(6, "SELECT release_version FROM system.local");
    assert_eq!(f.result_kind(), 2);
}

#[test]
fn a_user_name_cannot_forge_log_lines() {
    let pw = tempfile::tempdir().unwrap();
    let node = auth_node(pw.path(), "");
    let mut c = authenticating(&node);
    c.send(
        1,
        Opcode::AuthResponse,
        &plain("eve\nFORGED admin logged in\r", "x"),
    );
    assert_eq!(c.recv().error().0, 0x0100);
    common::wait_for("the failed login to be logged", || {
        node.log().contains("login failed").then_some(())
    });
    let log = node.log();
    assert!(
        !log.lines().any(|l| l.starts_with("FORGED")),
        "a client wrote a line of the log:\n{log}"
    );
}

#[test]
fn failed_logins_from_one_address_are_rate_limited() {
    let pw = tempfile::tempdir().unwrap();
    let node = auth_node(
        pw.path(),
        "login_failures_burst = 3\nlogin_failure_refill_ms = 60000",
    );
    let mut c = authenticating(&node);
    for i in 0..3 {
        c.send(i, Opcode::AuthResponse, &plain("cassandra", "guess"));
        assert!(c.recv().error().1.contains("are incorrect"));
    }
    // The right password is refused too while the address is limited.
    c.send(9, Opcode::AuthResponse, &plain("cassandra", PASSWORD));
    let (code, message) = c.recv().error();
    assert_eq!(code, 0x0100);
    assert!(
        message.contains("Too many failed login attempts"),
        "{message}"
    );
}

#[test]
fn password_auth_without_a_superuser_password_refuses_to_start() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("mosaic.toml");
    std::fs::write(
        &config,
        "native_port = 1\ndata_dir = \"data\"\n[auth]\nauthenticator = \"password\"\n",
    )
    .unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_mosaic"))
        .args(["server", "--config"])
        .arg(&config)
        .env_remove("MOSAIC_SUPERUSER_PASSWORD")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let text = common::output_text(&out);
    assert!(text.contains("MOSAIC_SUPERUSER_PASSWORD"), "{text}");
    let _ = run_mosaic;
}

async fn run(session: &Session, cql: &str) -> Result<(), String> {
    session
        .query_unpaged(cql, &[])
        .await
        .map(|_| ())
        .map_err(|e| e.to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_role_reads_what_it_was_granted_and_nothing_else_until_revoked() {
    let pw = tempfile::tempdir().unwrap();
    let dir = pw.path().to_path_buf();
    let node = tokio::task::spawn_blocking(move || auth_node(&dir, ""))
        .await
        .unwrap();
    let err = login(&node, "cassandra", "wrong").await.unwrap_err();
    assert!(err.contains("and/or password are incorrect"), "{err}");
    assert!(SessionBuilder::new()
        .known_node(node.addr.to_string())
        .build()
        .await
        .is_err());
    let admin = login(&node, "cassandra", PASSWORD)
        .await
        .unwrap_or_else(|e| panic!("{e}\n{}", node.log()));
    for cql in [
        "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
        "CREATE KEYSPACE other WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
        "CREATE TABLE ks.t (k int PRIMARY KEY, v text)",
        "CREATE TABLE ks.u (k int PRIMARY KEY, v text)",
        "CREATE TABLE other.t (k int PRIMARY KEY, v text)",
        "INSERT INTO ks.t (k, v) VALUES (1, 'one')",
        "CREATE ROLE bob WITH PASSWORD = 'bobpw' AND LOGIN = true",
        "GRANT SELECT ON TABLE ks.t TO bob",
    ] {
        run(&admin, cql).await.unwrap_or_else(|e| panic!("{cql}: {e}"));
    }
    let err = run(&admin, "CREATE ROLE bob WITH LOGIN = true")
        .await
        .unwrap_err();
    assert!(err.contains("bob already exists"), "{err}");
    let roles = admin
        .query_unpaged("LIST ROLES", &[])
        .await
        .unwrap()
        .into_rows_result()
        .unwrap();
    let names: Vec<String> = roles
        .rows::<(
            String,
            bool,
            bool,
            std::collections::HashMap<String, String>,
            String,
        )>()
        .unwrap()
        .map(|r| r.unwrap().0)
        .collect();
    assert_eq!(names, ["bob", "cassandra"]);

    let bob = login(&node, "bob", "bobpw").await.unwrap();
    let rows = bob
        .query_unpaged("SELECT v FROM ks.t WHERE k = 1", &[])
        .await
        .unwrap()
        .into_rows_result()
        .unwrap();
    let (v,): (String,) = rows.single_row().unwrap();
    assert_eq!(v, "one");
    for (cql, needs) in [
        (
            "INSERT INTO ks.t (k, v) VALUES (2, 'two')",
            "User bob has no MODIFY permission on <table ks.t> or any of its parents",
        ),
        (
            "SELECT * FROM ks.u",
            "User bob has no SELECT permission on <table ks.u> or any of its parents",
        ),
        (
            "SELECT * FROM other.t",
            "User bob has no SELECT permission on <table other.t> or any of its parents",
        ),
        (
            "DROP TABLE ks.t",
            "User bob has no DROP permission on <table ks.t> or any of its parents",
        ),
        (
            "CREATE TABLE ks.x (k int PRIMARY KEY)",
            "User bob has no CREATE permission on <keyspace ks> or any of its parents",
        ),
        (
            "CREATE ROLE eve",
            "User bob has no CREATE permission on <all roles> or any of its parents",
        ),
    ] {
        let err = run(&bob, cql).await.unwrap_err();
        assert!(err.contains(needs), "{cql}: {err}");
    }
    // Drivers' system tables stay readable.
    run(&bob, "SELECT * FROM system_schema.tables")
        .await
        .unwrap();

    run(&admin, "REVOKE SELECT ON ks.t FROM bob").await.unwrap();
    let started = Instant::now();
    loop {
        match run(&bob, "SELECT v FROM ks.t WHERE k = 1").await {
            Err(e) if e.contains("has no SELECT permission") => break,
            _ if started.elapsed() > Duration::from_secs(5) => {
                panic!("REVOKE did not take effect within the validity")
            }
            _ => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    }

    // Grants go with what they were granted on: a table, a keyspace re-created under the
    // same name starts with none (Cassandra revokes them at DROP).
    for cql in [
        "GRANT SELECT ON TABLE ks.u TO bob",
        "GRANT MODIFY ON KEYSPACE other TO bob",
        "DROP TABLE ks.u",
        "DROP KEYSPACE other",
        "CREATE TABLE ks.u (k int PRIMARY KEY, v text)",
        "CREATE KEYSPACE other WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
        "CREATE TABLE other.t (k int PRIMARY KEY, v text)",
    ] {
        run(&admin, cql).await.unwrap_or_else(|e| panic!("{cql}: {e}"));
    }
    // Nothing to list answers Void, as Cassandra's LIST PERMISSIONS does.
    let listed = admin
        .query_unpaged("LIST ALL PERMISSIONS OF bob", &[])
        .await
        .unwrap()
        .into_rows_result()
        .map_or(0, |rows| rows.rows_num());
    assert_eq!(listed, 0, "bob's grants survived the drops");
    tokio::time::sleep(Duration::from_millis(2100)).await;
    for cql in [
        "SELECT * FROM ks.u",
        "INSERT INTO other.t (k, v) VALUES (1, 'x')",
    ] {
        let err = run(&bob, cql).await.unwrap_err();
        assert!(err.contains("has no"), "{cql}: {err}");
    }
}
