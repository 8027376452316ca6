"""Secondary indexes on a 3-node cluster, RF 3, in every replica layout: each node indexes the
rows it holds (primary and redundant copies alike), an index created over existing data is
built on every node, and a query through the index returns what filtering returns — at ONE,
QUORUM and ALL, from each node alone, after writes a node missed came back by hints, and
after a wiped node was repaired."""
import pytest
from cassandra import ConsistencyLevel
from cassandra.query import SimpleStatement

from conftest import wait_until

CL = ConsistencyLevel


def query(s, cql, cl, params=None):
    st = SimpleStatement(cql, consistency_level=cl, fetch_size=50)
    return sorted(tuple(r) for r in s.execute(st, params))


def built_everywhere(c, name):
    def built():
        for i in range(1, c.nodes + 1):
            s = c.session(only=i)
            rows = s.execute('SELECT index_name FROM system."IndexInfo" WHERE table_name = %s', ("ix",))
            if name not in {r.index_name for r in rows}:
                return False
        return True

    wait_until(f"index {name} built on every node", built, timeout=60)


def same_answers(s, cls=(CL.ONE, CL.QUORUM, CL.ALL)):
    for cl in cls:
        for value in range(5):
            indexed = query(s, "SELECT k, c, v FROM ix.t WHERE v = %s", cl, (value,))
            plain = query(s, "SELECT k, c, v FROM ix.plain WHERE v = %s ALLOW FILTERING", cl, (value,))
            assert indexed == plain, (cl, value)
            indexed = query(s, "SELECT k, c FROM ix.t WHERE tags CONTAINS %s", cl, (f"t{value}",))
            plain = query(s, "SELECT k, c FROM ix.plain WHERE tags CONTAINS %s ALLOW FILTERING", cl, (f"t{value}",))
            assert indexed == plain, (cl, value)


def write_both(s, rows, cl):
    for table in ("t", "plain"):
        ins = s.prepare(f"INSERT INTO ix.{table} (k, c, v, tags) VALUES (?, ?, ?, ?)")
        ins.consistency_level = cl
        for row in rows:
            s.execute(ins, row)


def test_indexes_across_nodes_hints_and_repair(make_cluster):
    c = make_cluster(3)
    s = c.session()
    s.execute("CREATE KEYSPACE ix WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}")
    for table in ("t", "plain"):
        s.execute(f"CREATE TABLE ix.{table} (k int, c int, v int, tags set<text>, PRIMARY KEY (k, c))")
    s.execute("CREATE INDEX vi ON ix.t (v)")
    c.wait_schema_agreement()
    write_both(s, [(k, c_, (k + c_) % 5, {f"t{k % 5}"}) for k in range(100) for c_ in range(3)], CL.QUORUM)
    # An index over data already written is built by every node from what it holds.
    s.execute("CREATE INDEX ti ON ix.t (tags)")
    built_everywhere(c, "vi")
    built_everywhere(c, "ti")
    same_answers(s)

    # Node 3 misses overwrites and deletions; hints bring them back.
    c.kill(3)
    c.wait_seen([1, 2], [3], up=False)
    write_both(s, [(k, 0, 4 - (k % 5), {f"t{(k + 1) % 5}"}) for k in range(0, 100, 3)], CL.QUORUM)
    for table in ("t", "plain"):
        s.execute(SimpleStatement(f"DELETE FROM ix.{table} WHERE k IN (1, 2, 4)", consistency_level=CL.QUORUM))
    c.restart()
    wait_until("every hint replayed", lambda: sum(c.metric(i, "mosaic_hints_pending") for i in range(1, 4)) == 0)
    s3 = c.session(only=3)
    with c.alone(3):
        same_answers(s3, cls=(CL.ONE,))
    same_answers(s)

    # A wiped node replacing itself gets its rows back by streaming, and its index with them.
    c.wipe(3)
    c.wait_seen([1, 2], [3], up=False)
    c.replace_in_place(3)
    c.wait_schema_agreement()
    built_everywhere(c, "vi")
    s3 = c.session(only=3)
    with c.alone(3):
        same_answers(s3, cls=(CL.ONE,))


def test_a_stale_replica_does_not_resurrect_overwritten_rows(make_cluster):
    """Replica filtering protection: node 3 missed an overwrite (no hints), so its index
    still points at the old value; a read through the index at ALL must not return the row
    node 3 alone matches."""
    c = make_cluster(3, ["cluster.max_hint_window_ms=0"])
    s = c.session()
    s.execute("CREATE KEYSPACE ix WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}")
    s.execute("CREATE TABLE ix.t (k int, c int, v int, PRIMARY KEY (k, c))")
    s.execute("CREATE INDEX ON ix.t (v)")
    c.wait_schema_agreement()
    for k in range(20):
        s.execute(SimpleStatement(f"INSERT INTO ix.t (k, c, v) VALUES ({k}, 0, 2)", consistency_level=CL.ALL))
    c.kill(3)
    c.wait_seen([1, 2], [3], up=False)
    for k in range(0, 20, 2):
        s.execute(SimpleStatement(f"UPDATE ix.t SET v = 1 WHERE k = {k} AND c = 0", consistency_level=CL.QUORUM))
    s.execute(SimpleStatement("DELETE FROM ix.t WHERE k = 1", consistency_level=CL.QUORUM))
    c.restart()
    expected = [(k, 0) for k in range(3, 20, 2)]
    assert query(s, "SELECT k, c FROM ix.t WHERE v = 2", CL.ALL) == expected
    assert query(s, "SELECT k, c FROM ix.t WHERE v = 1", CL.ALL) == [(k, 0) for k in range(0, 20, 2)]
