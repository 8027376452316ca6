"""Writes: prepared statements, bind markers, batches, timestamps, TTL, deletes of every kind."""
import time

import pytest
from cassandra import InvalidRequest
from cassandra.query import BatchStatement, BatchType, SimpleStatement


def test_named_and_positional_markers_and_routing_keys(session, ks):
    session.execute("CREATE TABLE t (a int, b text, c int, v blob, PRIMARY KEY ((a, b), c))")
    ins = session.prepare("INSERT INTO t (c, b, a, v) VALUES (?, ?, ?, ?)")
    assert ins.routing_key_indexes == [2, 1]
    session.execute(ins, (1, "x", 7, b"v"))
    sel = session.prepare("SELECT v FROM t WHERE a = :a AND b = :b AND c IN :cs")
    assert session.execute(sel, {"a": 7, "b": "x", "cs": [1, 2]}).one().v == b"v"
    assert session.execute("SELECT v FROM t WHERE a = %s AND b = %s AND c = %s", (7, "x", 1)).one().v == b"v"


@pytest.mark.parametrize("kind", [BatchType.LOGGED, BatchType.UNLOGGED])
def test_batches(session, ks, kind):
    session.execute("CREATE TABLE t (k int, c int, v int, PRIMARY KEY (k, c))")
    ins = session.prepare("INSERT INTO t (k, c, v) VALUES (?, ?, ?)")
    b = BatchStatement(batch_type=kind)
    for c in range(10):
        b.add(ins, (1, c, c))
    b.add(SimpleStatement("INSERT INTO t (k, c, v) VALUES (2, 0, 0)"))
    b.add("DELETE FROM t WHERE k = 1 AND c = 9")
    session.execute(b)
    assert len(list(session.execute("SELECT * FROM t WHERE k = 1"))) == 9
    session.execute("BEGIN BATCH USING TIMESTAMP 5 INSERT INTO t (k, c, v) VALUES (3, 0, 1); INSERT INTO t (k, c, v) VALUES (3, 1, 1); APPLY BATCH")
    assert {r.w for r in session.execute("SELECT writetime(v) AS w FROM t WHERE k = 3")} == {5}


def test_timestamps_decide_and_server_timestamps_increase(node, session, ks):
    session.execute("CREATE TABLE t (k int PRIMARY KEY, v int)")
    session.execute("INSERT INTO t (k, v) VALUES (1, 10) USING TIMESTAMP 1000")
    session.execute("INSERT INTO t (k, v) VALUES (1, 9) USING TIMESTAMP 999")
    assert session.execute("SELECT v FROM t WHERE k = 1").one().v == 10
    session.execute("DELETE FROM t USING TIMESTAMP 500 WHERE k = 1")
    assert session.execute("SELECT v FROM t WHERE k = 1").one().v == 10
    before = int(time.time() * 1e6)
    session.execute("INSERT INTO t (k, v) VALUES (2, 1)")
    session.execute("UPDATE t SET v = 2 WHERE k = 2")
    w = session.execute("SELECT writetime(v) FROM t WHERE k = 2").one()[0]
    assert before - 5_000_000 < w < before + 60_000_000
    # The driver sends its own timestamp (the protocol's default-timestamp flag)…
    c = node.cluster(timestamp_generator=lambda: 42)
    try:
        c.connect(ks).execute("INSERT INTO t (k, v) VALUES (3, 3)")
    finally:
        c.shutdown()
    assert session.execute("SELECT writetime(v) FROM t WHERE k = 3").one()[0] == 42
    # …or none, and the node stamps the write.
    c = node.cluster()
    try:
        s = c.connect(ks)
        s.use_client_timestamp = False
        s.execute("INSERT INTO t (k, v) VALUES (4, 4)")
        s.execute("INSERT INTO t (k, v) VALUES (5, 5)")
        w4 = s.execute("SELECT writetime(v) FROM t WHERE k = 4").one()[0]
        w5 = s.execute("SELECT writetime(v) FROM t WHERE k = 5").one()[0]
        assert before - 5_000_000 < w4 < w5 < before + 60_000_000
    finally:
        c.shutdown()


def test_ttl_expires(session, ks):
    session.execute("CREATE TABLE t (k int PRIMARY KEY, v int, w int)")
    session.execute("INSERT INTO t (k, v) VALUES (1, 1) USING TTL 2")
    session.execute("UPDATE t USING TTL 100 SET w = 5 WHERE k = 2")
    r = session.execute("SELECT ttl(v) FROM t WHERE k = 1").one()
    assert 0 < r[0] <= 2
    assert 90 < session.execute("SELECT ttl(w) FROM t WHERE k = 2").one()[0] <= 100
    deadline = time.monotonic() + 10
    while session.execute("SELECT * FROM t WHERE k = 1").one() is not None:
        assert time.monotonic() < deadline, "row with TTL 2 still there after 10 s"
        time.sleep(0.2)
    with pytest.raises(InvalidRequest):
        session.execute("INSERT INTO t (k, v) VALUES (1, 1) USING TTL -5")


def test_deletes_of_every_granularity(session, ks):
    session.execute("CREATE TABLE t (k int, c int, s int STATIC, v int, w int, PRIMARY KEY (k, c))")
    for c in range(8):
        session.execute("INSERT INTO t (k, c, s, v, w) VALUES (1, %s, 7, %s, %s)", (c, c, c))
    session.execute("DELETE w FROM t WHERE k = 1 AND c = 0")
    r = session.execute("SELECT v, w FROM t WHERE k = 1 AND c = 0").one()
    assert (r.v, r.w) == (0, None)
    session.execute("DELETE FROM t WHERE k = 1 AND c = 1")
    session.execute("DELETE FROM t WHERE k = 1 AND c > 2 AND c <= 5")
    assert [r.c for r in session.execute("SELECT c FROM t WHERE k = 1")] == [0, 2, 6, 7]
    session.execute("DELETE s FROM t WHERE k = 1")
    assert session.execute("SELECT s FROM t WHERE k = 1 LIMIT 1").one().s is None
    session.execute("DELETE FROM t WHERE k = 1")
    assert list(session.execute("SELECT * FROM t WHERE k = 1")) == []


def test_update_does_not_create_a_row_marker(session, ks):
    session.execute("CREATE TABLE t (k int PRIMARY KEY, v int)")
    session.execute("INSERT INTO t (k, v) VALUES (1, 1)")
    session.execute("UPDATE t SET v = 2 WHERE k = 2")
    session.execute("UPDATE t SET v = null WHERE k = 1")
    session.execute("UPDATE t SET v = null WHERE k = 2")
    assert [(r.k, r.v) for r in session.execute("SELECT * FROM t")] == [(1, None)]
