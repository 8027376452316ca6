"""SELECT: clustering order and slices, IN, token ranges, filtering, ordering, limits, aggregates."""
import pytest
from cassandra import InvalidRequest
from cassandra.query import SimpleStatement


@pytest.fixture()
def clustered(session, ks):
    session.execute("CREATE TABLE t (p1 int, p2 text, c1 int, c2 text, v int, PRIMARY KEY ((p1, p2), c1, c2)) WITH CLUSTERING ORDER BY (c1 DESC, c2 ASC)")
    ins = session.prepare("INSERT INTO t (p1, p2, c1, c2, v) VALUES (?, ?, ?, ?, ?)")
    for p in range(3):
        for c1 in range(5):
            for c2 in ("a", "b"):
                session.execute(ins, (p, "x", c1, c2, p * 100 + c1 * 10 + (c2 == "b")))
    return session


def keys(rows):
    return [(r.c1, r.c2) for r in rows]


def test_clustering_order_and_slices(clustered):
    s = clustered
    all_rows = keys(s.execute("SELECT c1, c2 FROM t WHERE p1 = 1 AND p2 = 'x'"))
    assert all_rows == [(c1, c2) for c1 in range(4, -1, -1) for c2 in ("a", "b")]
    assert keys(s.execute("SELECT c1, c2 FROM t WHERE p1 = 1 AND p2 = 'x' AND c1 > 1 AND c1 <= 3")) == [(3, "a"), (3, "b"), (2, "a"), (2, "b")]
    assert keys(s.execute("SELECT c1, c2 FROM t WHERE p1 = 1 AND p2 = 'x' AND c1 = 2 AND c2 >= 'b'")) == [(2, "b")]
    assert keys(s.execute("SELECT c1, c2 FROM t WHERE p1 = 1 AND p2 = 'x' AND c1 IN (0, 4)")) == [(4, "a"), (4, "b"), (0, "a"), (0, "b")]
    assert keys(s.execute("SELECT c1, c2 FROM t WHERE p1 = 1 AND p2 = 'x' AND c1 < 2 ORDER BY c1 ASC, c2 DESC")) == [(0, "b"), (0, "a"), (1, "b"), (1, "a")]
    assert keys(s.execute("SELECT c1, c2 FROM t WHERE p1 = 1 AND p2 = 'x' AND (c1, c2) >= (3, 'b') ")) == [(3, "b"), (2, "a"), (2, "b"), (1, "a"), (1, "b"), (0, "a"), (0, "b")]
    assert len(list(s.execute("SELECT * FROM t WHERE p1 = 1 AND p2 = 'x' LIMIT 3"))) == 3


def test_partition_in_token_ranges_and_per_partition_limit(clustered):
    s = clustered
    assert len(list(s.execute("SELECT * FROM t WHERE p1 IN (0, 2) AND p2 = 'x'"))) == 20
    assert len(list(s.execute("SELECT * FROM t PER PARTITION LIMIT 2"))) == 6
    toks = [r[0] for r in s.execute("SELECT token(p1, p2) FROM t")]
    assert toks == sorted(toks)
    mid = sorted(set(toks))[1]
    above = list(s.execute(f"SELECT p1 FROM t WHERE token(p1, p2) > {mid}"))
    assert len(above) == sum(1 for t in toks if t > mid)
    assert len(list(s.execute("SELECT DISTINCT p1, p2 FROM t"))) == 3


def test_filtering_requires_allow_filtering(clustered):
    s = clustered
    with pytest.raises(InvalidRequest, match="ALLOW FILTERING"):
        s.execute("SELECT * FROM t WHERE v = 10")
    rows = list(s.execute("SELECT p1, v FROM t WHERE v > 400 ALLOW FILTERING"))
    assert rows == [] or all(r.v > 400 for r in rows)
    rows = list(s.execute("SELECT v FROM t WHERE v >= 240 ALLOW FILTERING"))
    assert sorted(r.v for r in rows) == [240, 241]
    with pytest.raises(InvalidRequest):
        s.execute("SELECT * FROM t WHERE p1 = 1 AND p2 = 'x' AND c2 = 'a'")
    assert len(list(s.execute("SELECT * FROM t WHERE p1 = 1 AND p2 = 'x' AND c2 = 'a' ALLOW FILTERING"))) == 5


def test_aggregates(clustered):
    s = clustered
    r = s.execute("SELECT count(*), sum(v), min(v), max(v), avg(c1) FROM t WHERE p1 = 2 AND p2 = 'x'").one()
    assert tuple(r) == (10, sum(200 + c1 * 10 + b for c1 in range(5) for b in (0, 1)), 200, 241, 2)
    assert s.execute("SELECT count(*) FROM t").one().count == 30
    st = SimpleStatement("SELECT count(*) FROM t", fetch_size=7)
    assert s.execute(st).one().count == 30
