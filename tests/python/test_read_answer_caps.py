"""A replica caps its answer to one read in entries and bytes (issue 21, `[cluster]
read_answer_rows_max` and `read_answer_bytes_max`), whatever limit the coordinator asked for;
an answer cut short says more follows, so with both caps tiny every query still returns every
row: a large partition (paged and unpaged), a whole-table scan, at ONE and at QUORUM (digest
reads compare capped answers)."""
from cassandra import ConsistencyLevel as CL
from cassandra.query import SimpleStatement

from test_cluster import create_table

ROWS = 1500


def test_reads_return_every_row_with_tiny_replica_answer_caps(make_cluster):
    c = make_cluster(3, ["cluster.read_answer_rows_max=7", "cluster.read_answer_bytes_max=600"])
    s = c.session()
    create_table(c, s, "caps", 3)
    s.execute("CREATE TABLE caps.wide (k int, c int, v text, PRIMARY KEY (k, c))")
    c.wait_schema_agreement()
    ins = s.prepare("INSERT INTO caps.wide (k, c, v) VALUES (1, ?, ?)")
    ins.consistency_level = CL.ALL
    for i in range(ROWS):
        s.execute(ins, (i, f"value-{i}-" + "y" * 50))
    flat = s.prepare("INSERT INTO caps.t (k, v) VALUES (?, ?)")
    flat.consistency_level = CL.ALL
    for k in range(300):
        s.execute(flat, (k, f"v{k}"))

    for cl in (CL.ONE, CL.QUORUM):
        for fetch_size in (None, 100, 5000):
            q = SimpleStatement("SELECT c, v FROM caps.wide WHERE k = 1", consistency_level=cl, fetch_size=fetch_size)
            got = [(r.c, r.v) for r in s.execute(q)]
            assert got == [(i, f"value-{i}-" + "y" * 50) for i in range(ROWS)], (cl, fetch_size, len(got))
        n = s.execute(SimpleStatement("SELECT count(*) FROM caps.wide WHERE k = 1", consistency_level=cl)).one()[0]
        assert n == ROWS, (cl, n)
        got = {r.k: r.v for r in s.execute(SimpleStatement("SELECT k, v FROM caps.t", consistency_level=cl, fetch_size=50))}
        assert got == {k: f"v{k}" for k in range(300)}, (cl, len(got))
