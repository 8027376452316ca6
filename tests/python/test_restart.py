"""Data and schema survive a clean restart (and the node comes back on the same data)."""


def test_data_and_schema_survive_restart(fresh_node):
    c = fresh_node.cluster()
    s = c.connect()
    s.execute("CREATE KEYSPACE r WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
    s.execute("CREATE TABLE r.t (k int, c int, v text, PRIMARY KEY (k, c)) WITH CLUSTERING ORDER BY (c DESC)")
    ins = s.prepare("INSERT INTO r.t (k, c, v) VALUES (?, ?, ?)")
    for i in range(500):
        s.execute(ins, (i % 5, i, str(i)))
    s.execute("DELETE FROM r.t WHERE k = 4")
    c.shutdown()
    fresh_node.restart()
    c = fresh_node.cluster()
    try:
        s = c.connect()
        t = c.metadata.keyspaces["r"].tables["t"]
        assert t.clustering_key[0].is_reversed
        rows = list(s.execute("SELECT k, c, v FROM r.t"))
        assert len(rows) == 400
        assert all(r.v == str(r.c) for r in rows)
        assert [r.c for r in s.execute("SELECT c FROM r.t WHERE k = 1 LIMIT 2")] == [496, 491]
        # The prepared statement id is stable across restarts.
        s.execute(s.prepare("INSERT INTO r.t (k, c, v) VALUES (?, ?, ?)"), (9, 9, "9"))
    finally:
        c.shutdown()
