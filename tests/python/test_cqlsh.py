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


@pytest.mark.skipif(not INSTALLED, reason="cqlsh is not installed (scripts/test installs it)")
def test_cqlsh_round_trips_collections_user_types_tuples_and_the_newer_types(node):
    """Every type issue 15 added, written by cqlsh as literals and shown back as cqlsh
    shows them (the same text Cassandra 4.1's cqlsh prints)."""
    r = cqlsh(
        node,
        "CREATE KEYSPACE IF NOT EXISTS sht WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1};"
        "CREATE TYPE IF NOT EXISTS sht.address (street text, zip int);"
        "CREATE TABLE IF NOT EXISTS sht.t (k int PRIMARY KEY, l list<int>, s set<text>, m map<text, int>,"
        " fl frozen<list<frozen<set<int>>>>, a frozen<address>, n address, tu tuple<int, text>,"
        " ip inet, tm time, d duration);"
        "INSERT INTO sht.t (k, l, s, m, fl, a, n, tu, ip, tm, d) VALUES (1, [3, 1, 2], {'b', 'a'},"
        " {'x': 1}, [{1, 2}], {street: 'main', zip: 7}, {street: 'side'}, (5, 'five'),"
        " '10.0.0.1', '12:34:56.789', 1h2m3s);"
        "SELECT l, s, m, fl, a, n, tu, ip, tm, d FROM sht.t WHERE k = 1;",
    )
    assert r.returncode == 0, r.stderr
    out = r.stdout
    for shown in ["[3, 1, 2]", "{'a', 'b'}", "{'x': 1}", "[{1, 2}]", "{street: 'main', zip: 7}",
                  "{street: 'side', zip: null}", "(5, 'five')", "10.0.0.1", "12:34:56.789000000",
                  "1h2m3s", "(1 rows)"]:
        assert shown in out, (shown, out)
    # What cqlsh shows, it reads back: the row copied through its own literals.
    r = cqlsh(
        node,
        "INSERT INTO sht.t (k, l, s, m, fl, a, n, tu, ip, tm, d) VALUES (2, [3, 1, 2], {'a', 'b'},"
        " {'x': 1}, [{1, 2}], {street: 'main', zip: 7}, {street: 'side', zip: null}, (5, 'five'),"
        " '10.0.0.1', '12:34:56.789000000', 1h2m3s);"
        "SELECT k, l, s, m, fl, a, n, tu, ip, tm, d FROM sht.t WHERE k IN (1, 2);",
    )
    assert r.returncode == 0, r.stderr
    rows = [line.split("|", 1)[1] for line in r.stdout.splitlines() if line.strip().startswith(("1 |", "2 |"))]
    assert len(rows) == 2 and rows[0] == rows[1], r.stdout
