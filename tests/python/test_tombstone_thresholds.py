"""Tombstone thresholds (issue 21, Cassandra's `tombstone_warn_threshold` and
`tombstone_failure_threshold`, `[cluster]` here): a query that reads more tombstones than the
failure threshold fails with ReadFailure, reason READ_TOO_MANY_TOMBSTONES (0x0001), paged or
not; below it the query succeeds, and past the warning threshold it is logged and its client
warned (the response's warnings, as Cassandra's ClientWarn)."""
import pytest
from cassandra import ReadFailure
from cassandra.query import SimpleStatement

from conftest import Node

FAIL = 100
WARN = 10


@pytest.fixture()
def thresholds_node():
    n = Node()
    with open(n.config, "a") as f:
        f.write(f"[cluster]\ntombstone_warn_threshold = {WARN}\ntombstone_failure_threshold = {FAIL}\n")
    n.start()
    try:
        yield n
    finally:
        n.close()


def test_a_query_past_the_tombstone_failure_threshold_fails_and_one_below_it_succeeds(thresholds_node):
    c = thresholds_node.cluster()
    s = c.connect()
    s.execute("CREATE KEYSPACE ts WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
    s.execute("CREATE TABLE ts.t (k int, c int, v text, PRIMARY KEY (k, c))")
    ins = s.prepare("INSERT INTO ts.t (k, c, v) VALUES (?, ?, 'v')")
    dele = s.prepare("DELETE FROM ts.t WHERE k = ? AND c = ?")
    for k in (1, 2, 3):
        for i in range(300):
            s.execute(ins, (k, i))
    # Partition 1: 150 deleted rows first, more than the failure threshold.
    for i in range(150):
        s.execute(dele, (1, i))
    # Partition 2: 50 deleted rows, past the warning threshold only.
    for i in range(50):
        s.execute(dele, (2, i))
    # Partition 3: one range deletion of 200 rows is one tombstone.
    s.execute("DELETE FROM ts.t WHERE k = 3 AND c < 200")

    for fetch_size in (None, 50):
        with pytest.raises(ReadFailure) as e:
            list(s.execute(SimpleStatement("SELECT * FROM ts.t WHERE k = 1", fetch_size=fetch_size)))
        assert "tombstones" in str(e.value), e.value
        codes = getattr(e.value, "error_code_map", None)
        if codes:  # protocol v5's reason map
            assert set(codes.values()) == {0x0001}, codes
        # A whole-table scan reads them too.
        with pytest.raises(ReadFailure):
            list(s.execute(SimpleStatement("SELECT * FROM ts.t", fetch_size=fetch_size)))

    result = s.execute("SELECT c FROM ts.t WHERE k = 2")
    rows = list(result)
    assert [r.c for r in rows] == list(range(50, 300))
    warnings = result.response_future.warnings or []
    assert any(
        w.startswith("Read 250 live rows and 50 tombstone cells for query SELECT c FROM ts.t WHERE k = 2")
        and w.endswith("(see tombstone_warn_threshold)")
        for w in warnings
    ), warnings
    result = s.execute("SELECT c FROM ts.t WHERE k = 3")
    assert [r.c for r in result] == list(range(200, 300))
    # One range tombstone is below the warning threshold: no warning.
    assert not result.response_future.warnings, result.response_future.warnings
    assert "tombstone_warn_threshold" in thresholds_node.log_tail()
    c.shutdown()
