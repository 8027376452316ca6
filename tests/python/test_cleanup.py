"""`mosaic cleanup` (issue 14, like `nodetool cleanup`): after a fourth node joins a
three-node cluster at replication factor 2, each old node still holds the ranges it handed
over (and, for a layout that stores roles apart, the copies of its old roles); cleanup drops
them, so its table bytes shrink, while every key still reads back at ONE and QUORUM."""
import json
import re

from cassandra import ConsistencyLevel
from cassandra.concurrent import execute_concurrent_with_args

from conftest import MosaicCluster, wait_until

CL = ConsistencyLevel
TABLES = {"u": "'uniform'", "m": "'multi-lsm'"}
KEYS = 3000


def table_bytes(c, i):
    """Bytes in node i's tables of keyspace `clean`, by table (from `GET /stats`)."""
    out = {}
    for t in json.loads(c.http(i, "/stats"))["tables"]:
        if t["table"].startswith("clean.") and t.get("stats"):
            out[t["table"]] = sum(level["bytes"] for level in t["stats"]["levels"])
    return out


def test_cleanup_drops_what_old_owners_handed_over_and_keeps_every_key():
    c = MosaicCluster(3)
    try:
        c.up()
        s = c.session(topology_event_refresh_window=0)
        s.execute("CREATE KEYSPACE clean WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 2}")
        for t, layout in TABLES.items():
            s.execute(f"CREATE TABLE clean.{t} (k int PRIMARY KEY, v text) WITH layout = {layout}")
        c.wait_schema_agreement()
        for t in TABLES:
            p = s.prepare(f"INSERT INTO clean.{t} (k, v) VALUES (?, ?)")
            p.consistency_level = CL.ALL
            execute_concurrent_with_args(s, p, [(k, f"v{k}" + "x" * 200) for k in range(KEYS)],
                                         concurrency=64, raise_on_first_error=True)

        # Nothing is owned by anyone else yet: a cleanup drops nothing.
        out = c.mosaic("cleanup", "--host", c.admin(1)).stdout
        assert re.search(r"\(0 versions not owned dropped\)", out), out

        c.add_node()

        for i in (1, 2, 3):
            # Compacted first, so what shrinks afterwards is what the cleanup dropped.
            c.mosaic("compact", "--host", c.admin(i), "--only")
            before = table_bytes(c, i)
            out = c.mosaic("cleanup", "--host", c.admin(i)).stdout
            after = table_bytes(c, i)
            print(f"node {i}: {before} -> {after}\n{out}")
            dropped = int(re.search(r"\((\d+) versions not owned dropped\)", out).group(1))
            assert dropped > 0, out
            for t in before:
                # Node 4 took about a quarter of the ranges: the old owners lose about a
                # quarter of what they held.
                assert after[t] < 0.9 * before[t], (i, t, before, after, out)
            # The multi-lsm table's lines name its structures.
            assert "clean.m (multi-lsm)" in out and "primary:" in out, out
        # The new node owns everything it holds.
        out = c.mosaic("cleanup", "--host", c.admin(4), "clean").stdout
        assert re.search(r"\(0 versions not owned dropped\)", out), out
        # An unknown table is refused.
        bad = c.mosaic("cleanup", "--host", c.admin(1), "clean", "nope", check=False)
        assert bad.returncode != 0 and "does not exist" in bad.stderr, bad.stderr

        reader = c.session(topology_event_refresh_window=0)
        wait_until("the driver to see node 4",
                   lambda: sum(h.is_up for h in reader.cluster.metadata.all_hosts()) == 4)
        for t in TABLES:
            for cl in (CL.ONE, CL.QUORUM):
                q = reader.prepare(f"SELECT v FROM clean.{t} WHERE k = ?")
                q.consistency_level = cl
                answers = execute_concurrent_with_args(reader, q, [(k,) for k in range(KEYS)],
                                                       concurrency=64, raise_on_first_error=True)
                lost = [k for k, (ok, rows) in zip(range(KEYS), answers)
                        if not ok or [r.v for r in rows] != [f"v{k}" + "x" * 200]]
                assert lost == [], (t, cl, lost[:10], len(lost))
    finally:
        c.close()
