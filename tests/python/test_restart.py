"""Data and schema survive a clean restart (and the node comes back on the same data); a
damaged commit log stops a start unless the operator chooses to skip the damage."""
import os
import signal

import pytest


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


def test_a_commit_log_damaged_before_its_end_stops_the_start_unless_told_to_skip_it(fresh_node):
    """A torn last write is what a crash leaves, and is dropped; a byte flipped in the middle
    of the commit log may hide acknowledged writes, so the node refuses to start, naming the
    file and offset. `[storage] wal_ignore_replay_errors = true` starts it anyway, with the
    writes before the damage, and keeps the damaged file in DATA/wal/damaged/."""
    c = fresh_node.cluster()
    s = c.connect()
    s.execute("CREATE KEYSPACE w WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
    s.execute("CREATE TABLE w.t (k int PRIMARY KEY, v text)")
    ins = s.prepare("INSERT INTO w.t (k, v) VALUES (?, ?)")
    for i in range(300):  # one at a time: one commit-log record each
        s.execute(ins, (i, "v" * 100))
    c.shutdown()
    fresh_node.stop(signal.SIGKILL)  # nothing flushed: the rows are in the commit log only

    wal_dir = os.path.join(fresh_node.dir, "data", "wal")
    name = max((n for n in os.listdir(wal_dir) if n.endswith(".wal")),
               key=lambda n: os.path.getsize(os.path.join(wal_dir, n)))
    path = os.path.join(wal_dir, name)
    size = os.path.getsize(path)
    assert size > 300 * 100, (name, size)
    with open(path, "r+b") as f:
        f.seek(size // 2)
        byte = f.read(1)
        f.seek(size // 2)
        f.write(bytes([byte[0] ^ 0x5A]))

    with pytest.raises(RuntimeError) as refused:
        fresh_node.start()
    message = str(refused.value)
    assert name in message and "offset" in message and "wal_ignore_replay_errors" in message, message

    with open(fresh_node.config, "a") as f:
        f.write("wal_ignore_replay_errors = true\n")  # the config's last section is [storage]
    fresh_node.start()
    assert os.path.exists(os.path.join(wal_dir, "damaged", name))
    assert not os.path.exists(path)
    c = fresh_node.cluster()
    try:
        s = c.connect()
        keys = sorted(r.k for r in s.execute("SELECT k FROM w.t"))
        # The writes before the damaged record, and none after it.
        assert 0 < len(keys) < 300 and keys == list(range(len(keys))), keys
        s.execute(s.prepare("INSERT INTO w.t (k, v) VALUES (?, ?)"), (1000, "new"))
        assert s.execute("SELECT v FROM w.t WHERE k = 1000").one().v == "new"
    finally:
        c.shutdown()
    with open(os.path.join(fresh_node.dir, "log"), "rb") as f:
        assert b"damaged file skipped" in f.read()
