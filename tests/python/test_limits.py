"""`[limits]` on what one statement may cost, as the Python driver sees them: a batch over
several partitions past `batch_size_warn_threshold_bytes` carries a warning the driver
exposes (`ResultSet.response_future.warnings`), one past the fail threshold is an
InvalidRequest "Batch too large"; IN lists past the cartesian cap are refused; a
prepared statement evicted from the bounded cache is prepared again by the driver."""
import logging

import pytest
from cassandra import InvalidRequest
from cassandra.query import BatchStatement, BatchType, SimpleStatement

from conftest import TEST_AGAINST, Node

pytestmark = pytest.mark.skipif(TEST_AGAINST is not None, reason="starts its own Mosaic node with [limits]")


@pytest.fixture(scope="module")
def limits_session():
    n = Node()
    with open(n.config, "a") as f:
        f.write("[limits]\nbatch_size_fail_threshold_bytes = 51200\nprepared_statements_cache_size_bytes = 65536\n")
    n.start()
    cluster = n.cluster()
    try:
        session = cluster.connect()
        session.execute(
            "CREATE KEYSPACE lim WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}"
        )
        session.execute("CREATE TABLE lim.t (k int, c int, v text, PRIMARY KEY (k, c))")
        yield n, session
    finally:
        cluster.shutdown()
        n.close()


def batch_of(session, rows):
    insert = session.prepare("INSERT INTO lim.t (k, c, v) VALUES (?, ?, ?)")
    batch = BatchStatement(batch_type=BatchType.UNLOGGED)
    for k, c, size in rows:
        batch.add(insert, (k, c, "x" * size))
    return batch


def test_a_large_batch_over_partitions_warns_through_the_driver(limits_session):
    node, session = limits_session
    small = session.execute(batch_of(session, [(1, 1, 100), (2, 1, 100)]))
    assert not small.response_future.warnings
    large = session.execute(batch_of(session, [(1, 1, 4000), (2, 1, 4000)]))
    warnings = large.response_future.warnings
    assert warnings and "Batch for [lim.t] is of size" in warnings[0], warnings
    assert "exceeding specified threshold of 5120" in warnings[0]
    # One partition: exempt, however large.
    one = session.execute(batch_of(session, [(3, 1, 30000), (3, 2, 30000)]))
    assert not one.response_future.warnings


def test_a_batch_past_the_fail_threshold_is_refused(limits_session):
    node, session = limits_session
    with pytest.raises(InvalidRequest, match="Batch too large"):
        session.execute(batch_of(session, [(4, 1, 30000), (5, 1, 30000)]))
    assert session.execute("SELECT * FROM lim.t WHERE k = 4").one() is None


def test_in_lists_past_the_cartesian_cap_are_refused(limits_session):
    node, session = limits_session
    values = ", ".join(str(i) for i in range(101))
    with pytest.raises(InvalidRequest, match="partition-key cartesian product size 101 is greater than maximum 100"):
        session.execute(SimpleStatement(f"SELECT * FROM lim.t WHERE k IN ({values})"))


def test_the_driver_prepares_an_evicted_statement_again(limits_session, caplog):
    node, session = limits_session
    session.execute("INSERT INTO lim.t (k, c, v) VALUES (9, 1, 'kept')")
    first = session.prepare("SELECT v FROM lim.t WHERE k = ? AND c = ?")
    assert session.execute(first, (9, 1)).one().v == "kept"
    # About 500 KB of statements through a 64 KiB cache, each executed twice (the cache
    # keeps statements in use over one-off ones): the first is evicted.
    padding = " " * 1000
    for i in range(100):
        other = session.prepare(f"SELECT v FROM lim.t WHERE k = {i} AND c = ?{padding}")
        for _ in range(2):
            session.execute(other, (1,))
    # The node answers Unprepared; the driver prepares it again and gets the row.
    with caplog.at_level(logging.DEBUG, logger="cassandra.cluster"):
        assert session.execute(first, (9, 1)).one().v == "kept"
    reprepared = [r.getMessage() for r in caplog.records if "Re-preparing" in r.getMessage()]
    assert any(first.query_string in m for m in reprepared), caplog.text
