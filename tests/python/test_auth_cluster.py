"""Password authentication across a cluster (issue 21): roles and permissions live in the
replicated `system_auth` keyspace, so a role created through one node logs in through the
others, and a GRANT or REVOKE made through one node is enforced by another within the
permissions validity (`[auth] permissions_validity_ms`)."""
import os
import tempfile
import time

import pytest
from cassandra import AuthenticationFailed, Unauthorized
from cassandra.auth import PlainTextAuthProvider
from cassandra.cluster import NoHostAvailable

from conftest import MosaicCluster, wait_until

PASSWORD = "cluster-superuser-secret"
VALIDITY_MS = 500


@pytest.fixture(scope="module")
def auth_cluster():
    secrets = tempfile.TemporaryDirectory(prefix="mosaic-auth-")
    password_file = os.path.join(secrets.name, "superuser.pw")
    with open(password_file, "w") as f:
        f.write(PASSWORD + "\n")
    c = MosaicCluster(3, settings=(
        "auth.authenticator=password",
        f"auth.superuser_password_file={password_file}",
        f"auth.permissions_validity_ms={VALIDITY_MS}",
        f"auth.credentials_validity_ms={VALIDITY_MS}",
    ))
    try:
        c.up()
        yield c
    finally:
        c.close()
        secrets.cleanup()


def session_on(c, node, user, password):
    """A session whose every request goes to `node`."""
    return c.session(only=node, auth_provider=PlainTextAuthProvider(username=user, password=password))


def login_error(c, node, user, password):
    with pytest.raises(NoHostAvailable) as excinfo:
        session_on(c, node, user, password)
    return [e for e in excinfo.value.errors.values() if isinstance(e, AuthenticationFailed)]


def test_a_role_created_through_one_node_logs_in_through_the_others(auth_cluster):
    c = auth_cluster
    admin = wait_until("the superuser to log in through node 1",
                       lambda: _try(lambda: session_on(c, 1, "cassandra", PASSWORD)))
    admin.execute("CREATE ROLE alice WITH PASSWORD = 'alice-pw' AND LOGIN = true")
    for node in (2, 3):
        alice = wait_until(f"alice to log in through node {node}",
                           lambda node=node: _try(lambda: session_on(c, node, "alice", "alice-pw")))
        assert alice.execute("SELECT release_version FROM system.local").one() is not None
        errors = login_error(c, node, "alice", "not-alice-pw")
        assert errors and "Provided username alice and/or password are incorrect" in str(errors[0])
    # A password changed through node 3 is the one node 2 accepts.
    session_on(c, 3, "cassandra", PASSWORD).execute("ALTER ROLE alice WITH PASSWORD = 'alice-new-pw'")
    wait_until("node 2 to accept alice's new password",
               lambda: _try(lambda: session_on(c, 2, "alice", "alice-new-pw")))
    assert login_error(c, 2, "alice", "alice-pw")


def test_a_grant_through_one_node_is_enforced_by_another_within_the_validity(auth_cluster):
    c = auth_cluster
    admin = wait_until("the superuser to log in through node 1",
                       lambda: _try(lambda: session_on(c, 1, "cassandra", PASSWORD)))
    admin.execute("CREATE KEYSPACE grants WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}")
    admin.execute("CREATE TABLE grants.t (k int PRIMARY KEY, v text)")
    admin.execute("INSERT INTO grants.t (k, v) VALUES (1, 'granted')")
    admin.execute("CREATE ROLE bob WITH PASSWORD = 'bob-pw' AND LOGIN = true")
    bob = wait_until("bob to log in through node 3", lambda: _try(lambda: session_on(c, 3, "bob", "bob-pw")))
    with pytest.raises(Unauthorized):
        bob.execute("SELECT v FROM grants.t WHERE k = 1")

    admin.execute("GRANT SELECT ON TABLE grants.t TO bob")
    started = time.monotonic()
    row = wait_until("node 3 to let bob read after the GRANT through node 1",
                     lambda: _try(lambda: bob.execute("SELECT v FROM grants.t WHERE k = 1").one()),
                     timeout=10, interval=0.05)
    took = time.monotonic() - started
    assert row.v == "granted"
    # Within the validity (plus the replication of the grant): a cached denial expires.
    assert took < VALIDITY_MS / 1000 + 3, f"the grant took {took:.2f} s to take effect"
    with pytest.raises(Unauthorized):
        bob.execute("INSERT INTO grants.t (k, v) VALUES (2, 'not granted')")

    session_on(c, 2, "cassandra", PASSWORD).execute("REVOKE SELECT ON TABLE grants.t FROM bob")
    started = time.monotonic()
    wait_until("node 3 to refuse bob after the REVOKE through node 2",
               lambda: _denied(lambda: bob.execute("SELECT v FROM grants.t WHERE k = 1")),
               timeout=10, interval=0.05)
    took = time.monotonic() - started
    assert took < VALIDITY_MS / 1000 + 3, f"the revoke took {took:.2f} s to take effect"


def _try(f):
    """f()'s value, or None if it raised (for wait_until)."""
    try:
        return f()
    except Exception:
        return None


def _denied(f):
    try:
        f()
    except Unauthorized:
        return True
    return False
