"""Growing and shrinking a live cluster, every move in a row (issue 14's check): five nodes at
replication factor 3 with a table of every replica layout; while a writer writes new keys at
QUORUM and a reader reads acknowledged keys back at QUORUM, a sixth node joins, another is
decommissioned, a third is killed (-9) and removed with `mosaic removenode`, and a fourth is
killed and replaced by a new node (`mosaic cluster add-node --replace`). test_topology.py
checks each move on its own; here each starts from the ring the previous ones left, with the
hints, re-homed roles and streams of the moves before still around.

Ownership as node 1 (never moved) sees it: every normal node's share within 10% of the mean
after every move (the tokens `cluster up` and the join choose spread a leaving node's ranges
over the others: `mosaic_cluster::tokens`), and the replacement leaves every share as it
was.

At the end every acknowledged write of every table reads back at QUORUM, the three nodes gone
are gone from `mosaic status`, and (if no write was left unacknowledged) repair finds every
replica complete. The reader may meet only the documented transient errors of a move (a
timeout, or Unavailable while a killed node is not yet seen down), and few of them."""
import collections
import random
import threading
import time

from cassandra import ReadTimeout, Unavailable

from conftest import MosaicCluster, process_alive, wait_until
from test_topology import CL, LAYOUTS, Writer, missing, repair_finds_nothing, shares, tables_with_rows

# A read the coordinator could not complete while a move was under way: not enough answers
# within `read_request_timeout_ms` (ReadTimeout), or not enough replicas known alive
# (Unavailable), as docs/cluster.md lists them. Anything else is a bug, the driver's own
# timeout included: a coordinator answers within its read timeout (5 s), the driver waits 10.
DOCUMENTED_READ_ERRORS = (ReadTimeout, Unavailable)
READ_ERRORS_MAX = 20
OWNERSHIP_SPREAD_MAX = 0.10


class Reader(threading.Thread):
    """Reads at QUORUM, until stopped, random keys whose write was acknowledged (the preload's
    and the writer's) from a random table; records each failed read as (move, error) and each
    read answering anything but the acknowledged value. It reads even keys only: its digest
    mismatches repair what they read, so the odd keys keep what the moves alone left on every
    replica for the final repair to check."""

    def __init__(self, session, preload, writer):
        super().__init__(daemon=True)
        self.session = session
        self.preload, self.writer = preload, writer
        self.stmts = {}
        for t in LAYOUTS:
            p = session.prepare(f"SELECT v FROM topo.{t} WHERE k = ?")
            p.consistency_level = CL.QUORUM
            self.stmts[t] = p
        self.move = "before the moves"
        self.reads = 0
        self.errors = []  # (move, exception)
        self.wrong = []  # (move, table, key, rows)
        self.stop_flag = threading.Event()
        self.rng = random.Random(14)

    def run(self):
        while not self.stop_flag.is_set():
            t = self.rng.choice(list(LAYOUTS))
            keys = self.writer.acked[t] if self.writer.acked[t] and self.rng.random() < 0.7 else self.preload[t]
            k = keys[self.rng.randrange(len(keys))]
            if k % 2:
                continue
            move = self.move
            try:
                rows = list(self.session.execute(self.stmts[t], (k,), timeout=10))
            except Exception as e:  # noqa: BLE001 -- every failure is recorded and judged below
                self.errors.append((move, e))
                continue
            self.reads += 1
            if [r.v for r in rows] != [f"v{k}"]:
                self.wrong.append((move, t, k, [r.v for r in rows]))

    def stop(self):
        self.stop_flag.set()
        self.join(timeout=60)


def spread(owns):
    """The largest distance of a node's share from the mean share, relative to the mean."""
    mean = sum(owns.values()) / len(owns)
    return max(abs(o - mean) / mean for o in owns.values())


def test_a_cluster_grows_and_shrinks_move_after_move_under_load_and_no_acknowledged_write_is_lost():
    started = time.monotonic()
    c = MosaicCluster(5, settings=("storage.memtable_size_bytes=65536",))
    try:
        c.up()
        # Drivers refresh their view at once on a topology event (the default waits 10 s).
        s = c.session(topology_event_refresh_window=0)
        preload = tables_with_rows(c, s, rf=3)
        ownership = [("5 nodes", shares(c, 1))]
        moves = []  # (move, seconds it took)
        writer = Writer(s)
        reader = Reader(c.session(topology_event_refresh_window=0), preload, writer)
        writer.start()
        reader.start()

        def writes_go_on(after):
            target = len(writer.acked["coded"]) + 20
            wait_until(f"more writes after {after}", lambda: len(writer.acked["coded"]) >= target)

        def moving(what):
            reader.move = what
            moves.append((what, time.monotonic()))

        def moved(what):
            reader.move = f"after {what}"
            ownership.append((what, shares(c, 1)))
            moves[-1] = (moves[-1][0], time.monotonic() - moves[-1][1])
            writes_go_on(what)

        try:
            wait_until("the writer to get going", lambda: len(writer.acked["coded"]) > 20)

            # 1. A sixth node bootstraps.
            moving("joining node 6")
            c.add_node()
            moved("node 6 joined")

            # 2. Node 2 hands its ranges over and leaves.
            moving("decommissioning node 2")
            p = c.mosaic("decommission", "--host", c.admin(2), timeout=180)
            assert "decommissioned" in p.stdout, p.stdout + p.stderr
            pid2 = next(pid for i, pid in c.started if i == 2)
            wait_until("node 2 to stop", lambda: not process_alive(pid2), timeout=60)
            wait_until("the others to see node 2 left",
                       lambda: all(c.status(i)[c.endpoint(2)]["state"] == "Left" for i in (1, 3, 4, 5, 6)))
            moved("node 2 decommissioned")

            # 3. Node 3 dies (kill -9) and node 1 removes it; the survivors re-replicate.
            moving("removing node 3")
            host_id = c.status(1)[c.endpoint(3)]["host_id"]
            c.kill(3)
            c.wait_seen([1, 4, 5, 6], [3], up=False)
            p = c.mosaic("removenode", host_id, "--host", c.admin(1), timeout=180)
            assert "removed" in p.stdout, p.stdout + p.stderr
            wait_until("every node to see node 3 left",
                       lambda: all(c.status(i)[c.endpoint(3)]["state"] == "Left" for i in (1, 4, 5, 6)))
            moved("node 3 removed")

            # 4. Node 4 dies (kill -9) and a new node, node 7, takes its tokens.
            moving("replacing node 4")
            dead = c.status(1)[c.endpoint(4)]
            c.kill(4)
            c.wait_seen([1, 5, 6], [4], up=False)
            c.add_node(replace=4, live=(1, 5, 6))
            moved("node 4 replaced by node 7")
        finally:
            reader.stop()
            writer.stop()

        report = "\n".join(f"{what}: spread {spread(owns):.3f} {sorted(owns.items())}" for what, owns in ownership)
        print(f"\nownership as node 1 sees it after each move:\n{report}")
        node7 = c.status(1)[c.endpoint(7)]
        assert node7["host_id"] != dead["host_id"]
        assert abs(node7["owns"] - dead["owns"]) < 1e-6, (node7, dead)
        assert [len(owns) for _, owns in ownership] == [5, 6, 5, 4, 4], report
        assert all(abs(sum(owns.values()) - 1) < 1e-6 for _, owns in ownership), report
        # Within 10% of the mean after every move: `cluster up` and the join chose tokens
        # whose successors vary, so a node leaving hands its ranges to many nodes (with
        # `1 2 3 4 5 1 2 3 4 5 …` node 2 leaving had handed node 3 0.130 of its 0.167,
        # 48% over the mean).
        for what, owns in ownership:
            assert spread(owns) <= OWNERSHIP_SPREAD_MAX, f"{what}: ownership not within 10% of the mean\n{report}"
        # The replacement takes the dead node's tokens, so it leaves every share as it was.
        removed, replaced = ownership[3][1], ownership[4][1]
        assert replaced == {(c.endpoint(7) if e == c.endpoint(4) else e): o for e, o in removed.items()}, report

        status_text = c.mosaic("status", "--host", c.admin(1)).stdout
        for gone in (2, 3, 4):
            assert c.endpoint(gone) not in status_text, status_text
        for there in (1, 5, 6, 7):
            assert c.endpoint(there) in status_text, status_text

        by_move = collections.Counter(f"{move}: {type(e).__name__}" for move, e in reader.errors)
        print(", ".join(f"{what} {took:.1f} s" for what, took in moves))
        print(f"{reader.reads} reads, {len(reader.errors)} failed {dict(by_move)}; "
              f"{sum(len(k) for k in writer.acked.values())} writes acknowledged, {len(writer.errors)} attempts "
              f"failed, {writer.failed} never acknowledged; {time.monotonic() - started:.0f} s")
        assert not reader.wrong, f"reads at QUORUM of acknowledged writes answered otherwise: {reader.wrong[:10]}"
        odd = [(move, repr(e)[:300]) for move, e in reader.errors if not isinstance(e, DOCUMENTED_READ_ERRORS)]
        assert not odd, f"read errors other than the documented ones: {odd[:10]}"
        assert len(reader.errors) < READ_ERRORS_MAX, [(move, repr(e)[:300]) for move, e in reader.errors[:10]]
        assert reader.reads > 500, reader.reads
        assert sum(len(k) for k in writer.acked.values()) > 500

        # Every replica holds every write on its own (the reader's read repairs touched even
        # keys only): repair, before the reads below, finds nothing to stream.
        repair_finds_nothing(c, writer, (1, 5, 6, 7))

        check = c.session(topology_event_refresh_window=0)
        acked = {t: preload[t] + writer.acked[t] for t in LAYOUTS}
        assert missing(check, acked, CL.QUORUM) == {}, c.logs()
    finally:
        c.close()
