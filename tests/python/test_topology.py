"""Growing and shrinking a running cluster (issue 14): `mosaic cluster add-node` bootstraps a
fourth node while a writer keeps writing at QUORUM to a table of every replica layout, then
`mosaic decommission` takes another node out under the same load. Every acknowledged write
must be readable at QUORUM afterwards (both replicas at replication factor 2) (the new node streamed its ranges and got the
writes of the ranges it was joining for; the leaving node handed its ranges over; nodes whose
role for a range changed re-homed it into the structures of their new role). Along the way:
the new node takes balanced tokens, it shows as joining (UJ) only until it streamed, drivers
learn of it and of the removal through events, `mosaic netstats` reports the streams, and a
decommissioned node refuses to start again with its old data."""
import json
import os
import re
import subprocess
import threading
import time

from cassandra import ConsistencyLevel
from cassandra.concurrent import execute_concurrent_with_args

from conftest import MOSAIC_BIN, MosaicCluster, process_alive, wait_until

CL = ConsistencyLevel
LAYOUTS = {
    "uniform": "'uniform'",
    "decoupled": "'decoupled'",
    "multi_lsm": "'multi-lsm'",
    "hetero": "'heterogeneous'",
    "coded": "{'class': 'erasure-tiered', 'ec_k': '2', 'ec_n': '3', 'storage_saving_target': '0.4'}",
}


class Writer(threading.Thread):
    """Writes new keys at QUORUM to every table in turn until stopped; remembers the keys
    whose write was acknowledged (and the failures)."""

    def __init__(self, session):
        super().__init__(daemon=True)
        self.session = session
        self.stmts = {}
        for t in LAYOUTS:
            p = session.prepare(f"INSERT INTO topo.{t} (k, c, v) VALUES (?, ?, ?)")
            p.consistency_level = CL.QUORUM
            self.stmts[t] = p
        self.acked = {t: [] for t in LAYOUTS}
        self.failed = 0  # writes never acknowledged
        self.errors = []  # every failed attempt
        self.stop_flag = threading.Event()
        self.next = 10_000

    def run(self):
        while not self.stop_flag.is_set():
            k = self.next
            self.next += 1
            for t, p in self.stmts.items():
                # A failed write may have reached one replica: retried until acknowledged,
                # every replica ends with its newest version (repair below must agree).
                for _ in range(5):
                    try:
                        self.session.execute(p, (k, k % 3, f"v{k}"), timeout=10)
                        self.acked[t].append(k)
                        break
                    except Exception as e:  # not acknowledged: tried again
                        self.errors.append(repr(e)[:300])
                else:
                    self.failed += 1

    def stop(self):
        self.stop_flag.set()
        self.join(timeout=60)


def missing(session, keys_by_table, cl):
    out = {}
    for t, keys in keys_by_table.items():
        q = session.prepare(f"SELECT v FROM topo.{t} WHERE k = ?")
        q.consistency_level = cl
        answers = execute_concurrent_with_args(session, q, [(k,) for k in keys], concurrency=32,
                                               raise_on_first_error=True)
        lost = [k for k, (ok, rows) in zip(keys, answers) if not ok or [r.v for r in rows] != [f"v{k}"]]
        if lost:
            out[t] = lost[:10] + ([f"... {len(lost)} in all"] if len(lost) > 10 else [])
    return out


def tables_with_rows(c, s, rf):
    """Keyspace `topo` at replication factor `rf` with a table of every layout, each holding
    keys 0..299 written at ALL; the keys per table."""
    s.execute(f"CREATE KEYSPACE topo WITH replication = {{'class': 'SimpleStrategy', 'replication_factor': {rf}}}")
    for t, layout in LAYOUTS.items():
        s.execute(f"CREATE TABLE topo.{t} (k int, c int, v text, PRIMARY KEY (k, c)) WITH layout = {layout}")
    c.wait_schema_agreement()
    preload = {}
    for t in LAYOUTS:
        p = s.prepare(f"INSERT INTO topo.{t} (k, c, v) VALUES (?, ?, ?)")
        p.consistency_level = CL.ALL
        execute_concurrent_with_args(s, p, [(k, k % 3, f"v{k}") for k in range(300)], concurrency=32,
                                     raise_on_first_error=True)
        preload[t] = list(range(300))
    return preload


def preloaded_then_dead(c, victim, wipe=False):
    """Starts `c`, preloads a table of every layout at RF 3 (`tables_with_rows`), kills node
    `victim` (and empties its data directory with `wipe`) and waits until the others see it
    down; the session, the keys per table and the dead node as /status showed it."""
    c.up()
    s = c.session(topology_event_refresh_window=0)
    preload = tables_with_rows(c, s, rf=3)
    dead = c.status(1)[c.endpoint(victim)]
    (c.wipe if wipe else c.kill)(victim)
    c.wait_seen(c.others(victim), [victim], up=False)
    return s, preload, dead


def keyspace(c, s, name, rf, tables):
    """Keyspace `name` at replication factor `rf` with `tables` ({table: its CQL definition
    after the name}), once every node has the schema."""
    s.execute(f"CREATE KEYSPACE {name} WITH replication = {{'class': 'SimpleStrategy', 'replication_factor': {rf}}}")
    for t, definition in tables.items():
        s.execute(f"CREATE TABLE {name}.{t} {definition}")
    c.wait_schema_agreement()


def shares(c, observer):
    """Primary ownership of each node that owns tokens, as node `observer` sees it."""
    return {e: n["owns"] for e, n in c.status(observer).items() if n.get("state", "Normal") == "Normal"}


def repair_finds_nothing(c, writer, nodes):
    """Unless some write was never acknowledged (then a replica may hold it and the others not),
    `mosaic repair` on each of `nodes` streams 0 entries: every replica holds every write."""
    assert len(writer.errors) < 20, writer.errors[:5]
    if writer.failed == 0:
        for i in nodes:
            out = c.mosaic("repair", "--host", c.admin(i)).stdout
            streamed = re.search(r"(\d+) entries", out)
            assert streamed and streamed.group(1) == "0", (i, out)


def test_a_node_joins_and_another_leaves_under_load_and_no_acknowledged_write_is_lost():
    c = MosaicCluster(3, settings=("storage.memtable_size_bytes=65536",))
    try:
        c.up()
        # Drivers refresh their view at once on a topology event (the default waits 10 s).
        s = c.session(topology_event_refresh_window=0)
        preload = tables_with_rows(c, s, rf=2)
        # A new cluster's nodes take evenly interleaved tokens.
        before = shares(c, 1)
        assert max(before.values()) / min(before.values()) < 1.01, before

        writer = Writer(s)
        writer.start()
        try:
            wait_until("the writer to get going", lambda: len(writer.acked["coded"]) > 20)
            c.add_node()
            grown = shares(c, 1)
            assert len(grown) == 4, grown
            assert max(grown.values()) / min(grown.values()) <= 1.10, grown
            netstats = c.mosaic("netstats", "--host", c.admin(4)).stdout
            assert "Mode: NORMAL" in netstats and "bootstrap finished" in netstats, netstats
            assert "receiving" in netstats, netstats
            # What node 4 pulled went into its layouts' trees as tables, without its commit
            # log, memtables or compaction; a log, coded trees and re-keyed trees took writes.
            ingested = {t["table"].split(".")[1]: t["stats"]["ingested_tables"]
                        for t in json.loads(c.http(4, "/stats"))["tables"]
                        if t["table"].startswith("topo.") and t.get("stats")}
            assert all(ingested[t] > 0 for t in ("uniform", "decoupled", "multi_lsm")), ingested
            assert ingested["hetero"] == 0 and ingested["coded"] == 0, ingested
            assert "streamed in as tables" in c.mosaic("stats", "--host", c.admin(4)).stdout
            # The driver learnt of node 4 (NEW_NODE once it is normal) and routes to it.
            wait_until("the driver to see node 4",
                       lambda: any(h.address == c.ip(4) and h.is_up for h in s.cluster.metadata.all_hosts()))
            wait_until("more writes after the join", lambda: len(writer.acked["coded"]) > 60)

            p = c.mosaic("decommission", "--host", c.admin(2), timeout=180)
            assert "decommissioned" in p.stdout, p.stdout + p.stderr
            pid2 = next(pid for i, pid in c.started if i == 2)
            wait_until("node 2 to stop", lambda: not process_alive(pid2), timeout=60)
            wait_until("the others to see node 2 left",
                       lambda: all(c.status(i).get(c.endpoint(2), {}).get("state") == "Left"
                                   for i in (1, 3, 4)))
            wait_until("more writes after the leave", lambda: len(writer.acked["coded"]) > 100)
        finally:
            writer.stop()
        status_text = c.mosaic("status", "--host", c.admin(1)).stdout
        assert c.endpoint(2) not in status_text and c.endpoint(4) in status_text, status_text

        reader = c.session(topology_event_refresh_window=0)
        wait_until("the driver to drop node 2",
                   lambda: all(h.address != c.ip(2) or not h.is_up for h in reader.cluster.metadata.all_hosts()))
        acked = {t: preload[t] + writer.acked[t] for t in LAYOUTS}
        assert sum(len(k) for k in writer.acked.values()) > 500
        # Every replica holds every write on its own, not only a quorum of them: repair
        # (before any read, whose read repair would fill gaps) finds nothing to stream. A
        # write node 4 missed while joining (without pending ranges: 38 of them), or a range
        # a node did not copy into its new role's structures, would differ.
        repair_finds_nothing(c, writer, (1, 3, 4))

        assert missing(reader, acked, CL.QUORUM) == {}, c.logs()

        # A decommissioned node does not come back with its old data.
        p = subprocess.run([MOSAIC_BIN, "server", "--config", c.config(2)], capture_output=True,
                           text=True, timeout=60)
        assert p.returncode != 0 and "decommissioned" in p.stderr, p.stderr
    finally:
        c.close()


def test_leaving_is_refused_when_it_would_leave_fewer_nodes_than_replicas():
    c = MosaicCluster(2)
    try:
        c.up()
        s = c.session()
        s.execute("CREATE KEYSPACE two WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 2}")
        s.execute("CREATE TABLE two.t (k int PRIMARY KEY, v text)")
        c.wait_schema_agreement()
        p = c.mosaic("decommission", "--host", c.admin(2), check=False)
        assert p.returncode != 0, p.stdout
        assert "needs 2 nodes" in p.stderr, p.stderr
        # Nothing changed: node 2 still serves as a normal replica.
        assert c.status(1)[c.endpoint(2)]["state"] == "Normal"
        assert process_alive(c.pid(2))
        assert os.path.exists(c.config(2))
    finally:
        c.close()


def test_a_dead_node_is_removed_and_its_ranges_re_replicated_from_the_survivors():
    c = MosaicCluster(4)
    try:
        c.up()
        s = c.session(topology_event_refresh_window=0)
        keyspace(c, s, "gone", 2, {"u": "(k int PRIMARY KEY, v text) WITH layout = 'uniform'",
                                   "d": "(k int PRIMARY KEY, v text) WITH layout = 'decoupled'"})
        for t in ("u", "d"):
            p = s.prepare(f"INSERT INTO gone.{t} (k, v) VALUES (?, ?)")
            p.consistency_level = CL.ALL
            execute_concurrent_with_args(s, p, [(k, f"v{k}") for k in range(400)], concurrency=32,
                                         raise_on_first_error=True)
        host_id = c.status(1)[c.endpoint(4)]["host_id"]
        # A live node is not removed.
        refused = c.mosaic("removenode", host_id, "--host", c.admin(1), check=False)
        assert refused.returncode != 0 and "is up" in refused.stderr, refused.stderr
        c.kill(4)
        c.wait_seen([1, 2, 3], [4], up=False)
        # Writes node 4 misses while down are hinted for it...
        late = s.prepare("INSERT INTO gone.u (k, v) VALUES (?, ?)")
        late.consistency_level = CL.ONE
        execute_concurrent_with_args(s, late, [(k, f"v{k}") for k in range(400, 500)], concurrency=32,
                                     raise_on_first_error=True)
        assert sum(c.metric(i, "mosaic_hints_pending") for i in (1, 2, 3)) > 0
        p = c.mosaic("removenode", host_id, "--host", c.admin(1), timeout=180)
        assert "removed" in p.stdout, p.stdout + p.stderr
        wait_until("every node to see node 4 left",
                   lambda: all(c.status(i)[c.endpoint(4)]["state"] == "Left" for i in (1, 2, 3)))
        # ... and dropped once it has left the ring (its ranges are others' now).
        wait_until("the hints for node 4 to be dropped",
                   lambda: sum(c.metric(i, "mosaic_hints_pending") for i in (1, 2, 3)) == 0)
        status_text = c.mosaic("status", "--host", c.admin(2)).stdout
        assert c.endpoint(4) not in status_text, status_text
        # Every range has its two replicas among the survivors again, each complete.
        for i in (1, 2, 3):
            out = c.mosaic("repair", "--host", c.admin(i)).stdout
            assert re.search(r" 0 entries", out), (i, out)
        reader = c.session(topology_event_refresh_window=0)
        acked = {"u": list(range(500)), "d": list(range(400))}
        for t in acked:
            q = reader.prepare(f"SELECT v FROM gone.{t} WHERE k = ?")
            q.consistency_level = CL.QUORUM
            answers = execute_concurrent_with_args(reader, q, [(k,) for k in acked[t]], concurrency=32,
                                                   raise_on_first_error=True)
            assert all([r.v for r in rows] == [f"v{k}"] for k, (_, rows) in zip(acked[t], answers))
        # The removed node restarted with its old data stays out of the ring.
        back = subprocess.Popen([MOSAIC_BIN, "server", "--config", c.config(4)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            def hears_node_1():
                try:
                    return c.status(4)[c.endpoint(1)]["up"]
                except OSError:  # not serving its admin port yet
                    return False

            wait_until("node 4 to gossip again", hears_node_1)
            time.sleep(1)
            assert all(c.status(i)[c.endpoint(4)]["state"] == "Left" for i in (1, 2, 3))
        finally:
            back.terminate()
            back.wait(timeout=60)
    finally:
        c.close()


def test_a_dead_node_is_replaced_under_load_by_a_new_node_taking_its_tokens():
    """`replace_address` (here `mosaic cluster add-node --replace`): a new node at a new
    address takes a dead node's tokens, streams its ranges from the live replicas while a
    writer keeps writing at QUORUM (it is a pending replica meanwhile), and owns them in its
    place; the dead node leaves the ring. Every replica then holds every acknowledged write."""
    c = MosaicCluster(4, settings=("storage.memtable_size_bytes=65536",))
    try:
        s, preload, dead = preloaded_then_dead(c, 3)
        writer = Writer(s)
        writer.start()
        try:
            wait_until("the writer to get going", lambda: len(writer.acked["coded"]) > 20)
            c.add_node(replace=3, live=(1, 2, 4))
            wait_until("more writes after the replacement", lambda: len(writer.acked["coded"]) > 80)
        finally:
            writer.stop()
        node5 = c.status(1)[c.endpoint(5)]
        assert node5["host_id"] != dead["host_id"]
        # The same share of the ring as the dead node had: its tokens.
        assert abs(node5["owns"] - dead["owns"]) < 1e-6, (node5, dead)
        netstats = c.mosaic("netstats", "--host", c.admin(5)).stdout
        assert "replace finished" in netstats and "receiving" in netstats, netstats
        status_text = c.mosaic("status", "--host", c.admin(1)).stdout
        assert c.endpoint(3) not in status_text and c.endpoint(5) in status_text, status_text
        repair_finds_nothing(c, writer, (1, 2, 4, 5))
        reader = c.session(topology_event_refresh_window=0)
        acked = {t: preload[t] + writer.acked[t] for t in LAYOUTS}
        assert missing(reader, acked, CL.QUORUM) == {}, c.logs()

        # The dead node restarted with its old data stays out of the ring.
        back = subprocess.Popen([MOSAIC_BIN, "server", "--config", c.config(3)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            time.sleep(3)
            assert all(c.status(i)[c.endpoint(3)]["state"] == "Left" for i in (1, 2, 4, 5))
        finally:
            back.terminate()
            back.wait(timeout=60)
    finally:
        c.close()


def test_replacing_a_live_node_is_refused():
    c = MosaicCluster(3)
    try:
        c.up()
        p = c.mosaic("cluster", "add-node", "--dir", c.dir, "--replace", c.endpoint(2), check=False,
                     timeout=120)
        c._remember_pids()
        assert p.returncode != 0, p.stdout
        assert "only a dead node can be replaced" in p.stderr + c.log_tail(4), p.stderr + c.log_tail(4)
        assert c.status(1)[c.endpoint(2)]["state"] == "Normal"
    finally:
        c.close()


def lwt_rows(c, n):
    """Starts `c` and inserts keys 0..n-1 of table `lwt.t` (RF 3) by lightweight
    transaction; the session."""
    c.up()
    s = c.session(topology_event_refresh_window=0)
    keyspace(c, s, "lwt", 3, {"t": "(k int PRIMARY KEY, v int)"})
    insert = s.prepare("INSERT INTO lwt.t (k, v) VALUES (?, 0) IF NOT EXISTS")
    for k in range(n):
        assert s.execute(insert, (k,)).one()[0] is True
    return s


def paxos_repaired(netstats):
    """The partitions' Paxos state a move repaired, as `mosaic netstats` says (None if it does not)."""
    repaired = re.search(r"(\d+) partitions' lightweight transactions repaired", netstats)
    return int(repaired.group(1)) if repaired else None


def test_a_join_with_skip_paxos_repair_on_topology_change_repairs_no_lightweight_transaction():
    """`[cluster] skip_paxos_repair_on_topology_change` on the joining node: the join that
    repairs partitions' Paxos state in the test below repairs none."""
    c = MosaicCluster(3)
    try:
        lwt_rows(c, 60)
        c.add_node(settings=("cluster.skip_paxos_repair_on_topology_change=true",))
        netstats = c.mosaic("netstats", "--host", c.admin(4)).stdout
        assert paxos_repaired(netstats) == 0 and "bootstrap finished" in netstats, netstats
        assert "skip_paxos_repair_on_topology_change" in c.log_tail(4, 200_000)
    finally:
        c.close()


def test_a_join_brings_the_new_node_the_state_of_lightweight_transactions_and_survives_a_late_crash():
    """Paxos keeps its state on each replica, apart from the data that streams: before the
    join completes, the moved ranges get a Paxos repair among their replicas of now and
    after, so the new node ends up with each partition's newest commit (a later `mosaic
    repair` finds no partition whose replicas disagree) and transactions go on."""
    c = MosaicCluster(3)
    try:
        keys = range(120)
        lwt_rows(c, len(keys))
        c.add_node()
        netstats = c.mosaic("netstats", "--host", c.admin(4)).stdout
        assert (paxos_repaired(netstats) or 0) > 0, netstats
        for i in range(1, 5):
            out = c.mosaic("repair", "--host", c.admin(i)).stdout
            assert "lightweight transactions finished" not in out, (i, out)
        reader = c.session(topology_event_refresh_window=0)
        update = reader.prepare("UPDATE lwt.t SET v = 1 WHERE k = ? IF v = 0")
        for k in keys:
            assert reader.execute(update, (k,)).one()[0] is True, k

        # Killed while announcing itself normal (everything streamed and re-homed, the
        # join marker says so, not yet removed), the node restarts normal with its tokens
        # instead of joining again.
        owned = shares(c, 1)
        c.kill(4)
        marker = os.path.join(c.node_dir(4), "data", "bootstrap.json")
        with open(marker, "w") as f:
            f.write('{"streamed": [], "completing": true}')
        c.restart()
        wait_until("the join marker to go", lambda: not os.path.exists(marker))
        assert shares(c, 1) == owned
        netstats = c.mosaic("netstats", "--host", c.admin(4)).stdout
        assert "Not sending or receiving any streams" in netstats, netstats
        assert reader.execute("SELECT v FROM lwt.t WHERE k = 7").one().v == 1
    finally:
        c.close()
