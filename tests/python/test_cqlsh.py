"""cqlsh from PyPI, run non-interactively against the node."""
import pytest

from cqlsh_runner import INSTALLED, cqlsh


@pytest.mark.skipif(not INSTALLED, reason="cqlsh is not installed (scripts/test installs it)")
def test_cqlsh_runs_statements(node):
    r = cqlsh(
        node,
        "CREATE KEYSPACE IF NOT EXISTS shk WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1};"
        "CREATE TABLE IF NOT EXISTS shk.t (k int PRIMARY KEY, v text, d date, ts timestamp);"
        "INSERT INTO shk.t (k, v, d, ts) VALUES (1, 'hello', '2020-01-02', '2020-01-02 03:04:05+0000');"
        "SELECT * FROM shk.t;",
    )
    assert r.returncode == 0, r.stderr
    assert "hello" in r.stdout and "2020-01-02" in r.stdout and "(1 rows)" in r.stdout
    r = cqlsh(node, "SELECT * FROM shk.nope;")
    assert r.returncode != 0
    assert "unconfigured table nope" in r.stderr


@pytest.mark.skipif(not INSTALLED, reason="cqlsh is not installed (scripts/test installs it)")
def test_cqlsh_shows_lightweight_transaction_results(node):
    r = cqlsh(
        node,
        "CREATE KEYSPACE IF NOT EXISTS shl WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1};"
        "CREATE TABLE IF NOT EXISTS shl.t (k int PRIMARY KEY, v text);"
        "INSERT INTO shl.t (k, v) VALUES (1, 'first') IF NOT EXISTS;"
        "INSERT INTO shl.t (k, v) VALUES (1, 'second') IF NOT EXISTS;"
        "UPDATE shl.t SET v = 'third' WHERE k = 1 IF v = 'first';"
        "SERIAL CONSISTENCY SERIAL;"
        "SELECT v FROM shl.t WHERE k = 1;",
    )
    assert r.returncode == 0, r.stderr
    out = r.stdout
    # The first insert applies; the second shows [applied] False with the existing row.
    assert out.count("[applied]") == 3, out
    assert "True" in out and "False" in out, out
    assert "first" in out and "third" in out and "second" not in out.split("[applied]")[-1], out
