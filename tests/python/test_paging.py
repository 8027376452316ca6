"""Paging through more than 10,000 rows returns every row exactly once, in order."""
from cassandra.concurrent import execute_concurrent_with_args
from cassandra.query import SimpleStatement


def test_paging_in_a_partition_and_over_the_table(session, ks):
    session.execute("CREATE TABLE t (k int, c int, v text, PRIMARY KEY (k, c))")
    ins = session.prepare("INSERT INTO t (k, c, v) VALUES (?, ?, ?)")
    execute_concurrent_with_args(session, ins, [(0, c, "v") for c in range(12000)], concurrency=64)
    execute_concurrent_with_args(session, ins, [(k, c, "w") for k in range(1, 500) for c in range(3)], concurrency=64)
    for fetch in (100, 1000):
        rows = [r.c for r in session.execute(SimpleStatement("SELECT c FROM t WHERE k = 0", fetch_size=fetch))]
        assert rows == list(range(12000))
    rev = [r.c for r in session.execute(SimpleStatement("SELECT c FROM t WHERE k = 0 ORDER BY c DESC", fetch_size=999))]
    assert rev == list(range(11999, -1, -1))
    everything = [(r.k, r.c) for r in session.execute(SimpleStatement("SELECT k, c FROM t", fetch_size=1000))]
    assert len(everything) == 12000 + 499 * 3
    assert len(set(everything)) == len(everything)
    prepared = session.prepare("SELECT k, c FROM t")
    prepared.fetch_size = 333
    assert len(list(session.execute(prepared))) == len(everything)
    limited = list(session.execute(SimpleStatement("SELECT k FROM t LIMIT 2500", fetch_size=1000)))
    assert len(limited) == 2500
