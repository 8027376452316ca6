"""TLS on the CQL port (`[client_encryption]`) through the Python driver and cqlsh: the driver
with an `ssl_context` trusting the test CA (hostname checked) connects and queries, a
plaintext driver is refused by the TLS-only port while the node keeps serving, and
`cqlsh --ssl` (SSL_CERTFILE, SSL_VALIDATE) runs a query, and the Go driver (gocql v2, the
probe in tests/drivers/go/auth) connects with its SslOpts trusting the CA (host verified). Certificates are made with the
`openssl` command (.ci/run installs it when missing)."""
import os
import shutil
import ssl
import subprocess

import pytest
from cassandra.cluster import NoHostAvailable

from conftest import TEST_AGAINST, Node
from cqlsh_runner import INSTALLED, cqlsh

pytestmark = pytest.mark.skipif(TEST_AGAINST is not None, reason="starts its own Mosaic node with TLS")

OPENSSL = shutil.which("openssl")


def _openssl(*args, cwd):
    assert OPENSSL, "the openssl command is needed to make the test certificates"
    subprocess.run([OPENSSL, *args], cwd=cwd, check=True, capture_output=True, timeout=60)


def make_certificates(directory):
    """A CA and a node certificate for 127.0.0.1 / localhost signed by it (P-256 keys)."""
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    _openssl("req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.crt", "-days", "2",
             "-subj", "/CN=mosaic test CA",
             "-addext", "basicConstraints=critical,CA:TRUE",
             "-addext", "keyUsage=critical,keyCertSign,cRLSign", cwd=directory)
    _openssl("req", *ec, "-keyout", "node.key", "-out", "node.csr", "-subj", "/CN=mosaic node",
             cwd=directory)
    with open(os.path.join(directory, "node.ext"), "w") as f:
        f.write("basicConstraints=CA:FALSE\n"
                "subjectAltName=IP:127.0.0.1,DNS:localhost\n"
                "extendedKeyUsage=serverAuth,clientAuth\n")
    _openssl("x509", "-req", "-in", "node.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
             "-CAcreateserial", "-out", "node.crt", "-days", "2", "-extfile", "node.ext",
             cwd=directory)
    return {name: os.path.join(directory, name) for name in ("ca.crt", "node.crt", "node.key")}


@pytest.fixture(scope="module")
def tls_node():
    n = Node()
    files = make_certificates(n.dir)
    with open(n.config, "a") as f:
        f.write(
            "[client_encryption]\n"
            "enabled = true\n"
            f'certificate = "{files["node.crt"]}"\n'
            f'private_key = "{files["node.key"]}"\n'
        )
    n.start()
    n.ca = files["ca.crt"]
    try:
        yield n
    finally:
        n.close()


def tls_context(ca):
    context = ssl.create_default_context(cafile=ca)
    context.check_hostname = True
    context.verify_mode = ssl.CERT_REQUIRED
    return context


def test_driver_with_ssl_context_connects_and_queries(tls_node):
    cluster = tls_node.cluster(ssl_context=tls_context(tls_node.ca))
    try:
        session = cluster.connect()
        session.execute("CREATE KEYSPACE IF NOT EXISTS tls_ks WITH replication = "
                        "{'class': 'SimpleStrategy', 'replication_factor': 1}")
        session.execute("CREATE TABLE IF NOT EXISTS tls_ks.t (k int PRIMARY KEY, v text)")
        session.execute("INSERT INTO tls_ks.t (k, v) VALUES (1, 'encrypted')")
        assert session.execute("SELECT v FROM tls_ks.t WHERE k = 1").one().v == "encrypted"
    finally:
        cluster.shutdown()


def test_plaintext_driver_is_refused_and_the_node_keeps_serving(tls_node):
    plain = tls_node.cluster(connect_timeout=5)
    try:
        with pytest.raises(NoHostAvailable):
            plain.connect()
    finally:
        plain.shutdown()
    with open(os.path.join(tls_node.dir, "log"), errors="replace") as f:
        assert "refusing a plaintext connection on the TLS-only CQL port" in f.read()
    cluster = tls_node.cluster(ssl_context=tls_context(tls_node.ca))
    try:
        assert cluster.connect().execute("SELECT release_version FROM system.local").one() is not None
    finally:
        cluster.shutdown()


@pytest.mark.skipif(not INSTALLED, reason="cqlsh is not installed")
def test_cqlsh_with_ssl_queries(tls_node):
    env = dict(os.environ, SSL_CERTFILE=tls_node.ca, SSL_VALIDATE="true")
    rcfile = os.path.join(tls_node.dir, "cqlshrc")
    with open(rcfile, "w") as f:
        f.write("[ssl]\nvalidate = true\n")
    result = cqlsh(tls_node, "SELECT cluster_name FROM system.local", extra_args=["--ssl", "--cqlshrc", rcfile],
                   env=env)
    assert result.returncode == 0, result.stderr + result.stdout
    assert "cluster_name" in result.stdout


def test_the_go_driver_connects_over_tls(tls_node, driver_probes):
    def probe(*extra):
        args = driver_probes["go-auth"] + ["--port", str(tls_node.port), *extra]
        return subprocess.run(args, capture_output=True, text=True, timeout=120)

    ok = probe("--ca", tls_node.ca)
    assert ok.returncode == 0 and ok.stdout.startswith("ok "), f"{ok.stdout}{ok.stderr}{tls_node.log_tail()}"
    plain = probe()
    assert plain.returncode == 1 and plain.stdout.startswith("FAIL "), plain.stdout
