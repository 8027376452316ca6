"""Password authentication and permissions through the Python driver and cqlsh
(`[auth] authenticator = "password"`): the right password logs in, none or a wrong one is
an authentication error (through the Go driver too, gocql v2's PasswordAuthenticator, by the
probe in tests/drivers/go/auth), a role granted SELECT on one table reads it and gets Unauthorized
for writes, other keyspaces and DDL, and a REVOKE takes effect within the permissions
validity."""
import os
import subprocess
import time

import pytest
from cassandra import AuthenticationFailed, Unauthorized
from cassandra.auth import PlainTextAuthProvider
from cassandra.cluster import NoHostAvailable

from conftest import TEST_AGAINST, Node
from cqlsh_runner import INSTALLED, cqlsh

PASSWORD = "py-superuser-secret"

pytestmark = pytest.mark.skipif(TEST_AGAINST is not None, reason="starts its own Mosaic node with [auth]")


@pytest.fixture(scope="module")
def auth_node():
    n = Node()
    password_file = os.path.join(n.dir, "superuser.pw")
    with open(password_file, "w") as f:
        f.write(PASSWORD + "\n")
    with open(n.config, "a") as f:
        f.write(
            "[auth]\n"
            'authenticator = "password"\n'
            f'superuser_password_file = "{password_file}"\n'
            "permissions_validity_ms = 500\n"
        )
    n.start()
    try:
        yield n
    finally:
        n.close()


def connect(node, user, password):
    cluster = node.cluster(auth_provider=PlainTextAuthProvider(username=user, password=password))
    return cluster, cluster.connect()


def auth_errors(excinfo):
    return [e for e in excinfo.value.errors.values() if isinstance(e, AuthenticationFailed)]


def test_the_right_password_logs_in(auth_node):
    cluster, session = connect(auth_node, "cassandra", PASSWORD)
    try:
        assert session.execute("SELECT release_version FROM system.local").one() is not None
    finally:
        cluster.shutdown()


def test_a_wrong_password_is_an_authentication_error(auth_node):
    cluster = auth_node.cluster(auth_provider=PlainTextAuthProvider(username="cassandra", password="wrong"))
    try:
        with pytest.raises(NoHostAvailable) as excinfo:
            cluster.connect()
        errors = auth_errors(excinfo)
        assert errors, excinfo.value.errors
        assert "Provided username cassandra and/or password are incorrect" in str(errors[0])
    finally:
        cluster.shutdown()


def test_no_credentials_is_an_authentication_error(auth_node):
    cluster = auth_node.cluster()
    try:
        with pytest.raises(NoHostAvailable) as excinfo:
            cluster.connect()
        assert auth_errors(excinfo), excinfo.value.errors
    finally:
        cluster.shutdown()


def test_a_role_with_select_on_one_table_reads_it_and_nothing_else_until_revoked(auth_node):
    admin_cluster, admin = connect(auth_node, "cassandra", PASSWORD)
    try:
        for cql in [
            "CREATE KEYSPACE IF NOT EXISTS pk WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
            "CREATE KEYSPACE IF NOT EXISTS pother WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
            "CREATE TABLE IF NOT EXISTS pk.t (k int PRIMARY KEY, v text)",
            "CREATE TABLE IF NOT EXISTS pother.t (k int PRIMARY KEY, v text)",
            "INSERT INTO pk.t (k, v) VALUES (1, 'one')",
            "CREATE ROLE IF NOT EXISTS reader WITH PASSWORD = 'readerpw' AND LOGIN = true",
            "GRANT SELECT ON TABLE pk.t TO reader",
        ]:
            admin.execute(cql)
        rows = list(admin.execute("LIST ALL PERMISSIONS OF reader"))
        assert [(r.role, r.resource, r.permission) for r in rows] == [("reader", "<table pk.t>", "SELECT")]

        reader_cluster, reader = connect(auth_node, "reader", "readerpw")
        try:
            assert reader.execute("SELECT v FROM pk.t WHERE k = 1").one().v == "one"
            for cql, text in [
                ("INSERT INTO pk.t (k, v) VALUES (2, 'two')", "User reader has no MODIFY permission on <table pk.t>"),
                ("SELECT * FROM pother.t", "User reader has no SELECT permission on <table pother.t>"),
                ("DROP TABLE pk.t", "User reader has no DROP permission on <table pk.t>"),
                ("CREATE KEYSPACE x WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
                 "User reader has no CREATE permission on <all keyspaces>"),
            ]:
                with pytest.raises(Unauthorized) as excinfo:
                    reader.execute(cql)
                assert text in str(excinfo.value), cql

            admin.execute("REVOKE SELECT ON TABLE pk.t FROM reader")
            deadline = time.monotonic() + 5
            while True:
                try:
                    reader.execute("SELECT v FROM pk.t WHERE k = 1")
                except Unauthorized:
                    break
                assert time.monotonic() < deadline, "REVOKE did not take effect"
                time.sleep(0.1)
        finally:
            reader_cluster.shutdown()
    finally:
        admin_cluster.shutdown()


@pytest.mark.skipif(not INSTALLED, reason="cqlsh is not installed (scripts/test installs it)")
def test_cqlsh_logs_in_with_u_and_p(auth_node):
    out = cqlsh(auth_node, "LIST ROLES;", user="cassandra", password=PASSWORD)
    assert out.returncode == 0, out.stderr
    assert "cassandra" in out.stdout
    bad = cqlsh(auth_node, "LIST ROLES;", user="cassandra", password="wrong")
    assert bad.returncode != 0
    assert "incorrect" in bad.stderr or "Bad credentials" in bad.stderr, bad.stderr


def test_the_go_driver_logs_in_with_the_right_password_only(auth_node, driver_probes):
    def probe(user, password):
        args = driver_probes["go-auth"] + ["--port", str(auth_node.port), "--user", user, "--password", password]
        return subprocess.run(args, capture_output=True, text=True, timeout=120)

    ok = probe("cassandra", PASSWORD)
    assert ok.returncode == 0 and ok.stdout.startswith("ok "), f"{ok.stdout}{ok.stderr}{auth_node.log_tail()}"
    for user, password, message in [
        ("cassandra", "wrong", "Provided username cassandra and/or password are incorrect"),
        ("nobody", PASSWORD, "Provided username nobody and/or password are incorrect"),
        ("cassandra", "", "Password must not be null"),  # Cassandra's words for an empty one
    ]:
        bad = probe(user, password)
        assert bad.returncode == 1, bad.stdout
        assert message in bad.stdout, bad.stdout
