"""One node given a schema of real size — 300 tables, under the decoupled layout (a tree and a
log per table) — runs a fixed number of threads, whatever the table count, and all its
memtables together stay within `[storage] memtable_space_bytes` while every table takes
writes (the node engine: one WAL, one pool of flush and compaction workers, one budget).

Apache Cassandra 4.1 runs about 70 threads with this schema; before the node engine a Mosaic
node ran about three per table structure (900 here)."""
import json
import os
import threading
import urllib.request

from cassandra.concurrent import execute_concurrent_with_args

from conftest import MosaicCluster

TABLES = 300
SPACE = 8 << 20
THREADS_MAX = 80


def threads(pid):
    return len(os.listdir(f"/proc/{pid}/task"))


def engine_stats(c):
    with urllib.request.urlopen(f"http://{c.admin(1)}/stats", timeout=10) as r:
        return json.loads(r.read())["engine"]


def test_three_hundred_tables_share_a_few_threads_and_one_memtable_budget():
    c = MosaicCluster(1, ("storage.layout=decoupled", f"storage.memtable_space_bytes={SPACE}",
                          "storage.memtable_size_bytes=1048576", "storage.flush_threads=2",
                          "storage.compaction_threads=2"))
    try:
        c.up()
        run(c)
    finally:
        c.close()


def run(c):
    pid = c.pid(1)
    s = c.session()
    s.execute("CREATE KEYSPACE many WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
    s.set_keyspace("many")
    for i in range(TABLES):
        s.execute(f"CREATE TABLE t{i} (k int PRIMARY KEY, v text)")
    assert threads(pid) <= THREADS_MAX, f"{threads(pid)} threads with {TABLES} tables"

    peak = {"memtables": 0, "threads": 0}
    done = threading.Event()

    def sample():
        while not done.is_set():
            e = engine_stats(c)
            peak["memtables"] = max(peak["memtables"], e["memtable_bytes"])
            peak["threads"] = max(peak["threads"], threads(pid))
            done.wait(0.05)

    sampler = threading.Thread(target=sample)
    sampler.start()
    try:
        value = "x" * 2000
        for i in range(TABLES):
            ins = s.prepare(f"INSERT INTO t{i} (k, v) VALUES (?, ?)")
            results = execute_concurrent_with_args(s, ins, [(k, value) for k in range(40)], concurrency=32)
            assert all(ok for ok, _ in results)
    finally:
        done.set()
        sampler.join()

    e = engine_stats(c)
    assert e["memtable_space_bytes"] == SPACE
    assert e["partitions"] >= TABLES, e
    # 300 tables x 80 KB written: past the budget, so it had to flush to stay within it.
    assert 0 < peak["memtables"] <= SPACE, peak
    assert peak["threads"] <= THREADS_MAX, peak
    # Every write is there.
    for i in (0, TABLES // 2, TABLES - 1):
        assert s.execute(f"SELECT count(*) FROM t{i}").one()[0] == 40


def engine_stats_of(c, node):
    with urllib.request.urlopen(f"http://{c.admin(node)}/stats", timeout=10) as r:
        return json.loads(r.read())["engine"]


def thp_enabled(pid):
    """/proc/PID/status's THP_enabled (None on kernels without it)."""
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("THP_enabled:"):
            return int(line.split()[1])
    return None


def test_local_nodes_share_the_cores_and_worker_threads_is_honoured():
    """`mosaic cluster up` gives each of its nodes its share of the cores (a worker thread
    beyond a node's share costs every request a cross-thread wake-up), and a node runs the
    `worker_threads` its config names."""
    cores = len(os.sched_getaffinity(0))
    c = MosaicCluster(3)
    try:
        c.up()
        for n in (1, 2, 3):
            assert f"worker_threads = {max(1, cores // 3)}" in open(c.config(n)).read()
            assert engine_stats_of(c, n)["worker_threads"] == max(1, cores // 3)
            # And its memory stays off transparent huge pages (`transparent_huge_pages`).
            assert thp_enabled(c.pid(n)) in (None, 0)
    finally:
        c.close()
    c = MosaicCluster(1, ("worker_threads=3", "transparent_huge_pages=true"))
    try:
        c.up()
        assert engine_stats_of(c, 1)["worker_threads"] == 3
        # Left as the process it was started from has it.
        assert thp_enabled(c.pid(1)) == thp_enabled(os.getpid())
        # And it serves.
        assert c.session().execute("SELECT release_version FROM system.local").one() is not None
    finally:
        c.close()
