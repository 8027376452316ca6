//! With authentication off (Cassandra's AllowAllAuthenticator and AllowAllAuthorizer),
//! every statement runs, `system_auth`'s stored tables read and write like tables, and the
//! role statements answer what Cassandra answers an anonymous user.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

mod common;

use common::Harness;
use mosaic_cql::frame::ErrorKind;

#[test]
fn role_statements_are_refused_to_the_anonymous_user_and_data_statements_run() {
    let mut h = Harness::with_keyspace();
    for cql in [
        "CREATE ROLE bob WITH PASSWORD = 'x' AND LOGIN = true",
        "CREATE USER bob WITH PASSWORD 'x'",
        "ALTER ROLE bob WITH LOGIN = false",
        "DROP ROLE IF EXISTS bob",
        "GRANT SELECT ON ALL KEYSPACES TO bob",
        "REVOKE SELECT ON KEYSPACE ks FROM bob",
        "GRANT a TO b",
        "LIST ROLES",
        "LIST USERS",
        "LIST ALL PERMISSIONS",
    ] {
        let e = h.err(cql);
        assert_eq!(e.kind, ErrorKind::Unauthorized, "{cql}");
        assert_eq!(
            e.message, "You have to be logged in and not anonymous to perform this request",
            "{cql}"
        );
    }
    h.ok("CREATE TABLE t (k int PRIMARY KEY, v text)");
    h.ok("INSERT INTO t (k, v) VALUES (1, 'a')");
    assert_eq!(h.rows("SELECT v FROM t").len(), 1);
    // The roles table is a stored table: empty here, and tools can read it.
    assert!(h.rows("SELECT * FROM system_auth.roles").is_empty());
}
