"""Replacing a dead node at its own address (issue 14): `replace_address` naming the node's
own address (`mosaic cluster add-node --replace` with the address of a node of the
directory restarts that node's emptied slot). The node takes the dead node's identity and
tokens, hibernates — the others see it down, read from the other replicas and hint its
writes — streams every range it replicates, then serves; the hints bring it the writes
made meanwhile."""

import os
import re
import threading

from cassandra import ConsistencyLevel

from conftest import MosaicCluster, wait_until
from test_topology import LAYOUTS, Writer, missing, preloaded_then_dead, repair_finds_nothing

CL = ConsistencyLevel


class Watcher(threading.Thread):
    """Until stopped: records how node 1 shows node `watched` in /status, and reads the
    preloaded keys at ONE through `session` (nodes other than the one replaced coordinate),
    recording any key read without its row."""

    def __init__(self, c, session, watched, preload):
        super().__init__(daemon=True)
        self.c, self.session, self.watched, self.preload = c, session, watched, preload
        self.seen = set()  # (state, up) of the watched node
        self.empty = []  # (table, key) read without the row
        self.stop_flag = threading.Event()

    def run(self):
        queries = {}
        for t in LAYOUTS:
            q = self.session.prepare(f"SELECT v FROM topo.{t} WHERE k = ?")
            q.consistency_level = CL.ONE
            queries[t] = q
        k = 0
        while not self.stop_flag.is_set():
            try:
                node = self.c.status(1).get(self.c.endpoint(self.watched), {})
                self.seen.add((node.get("state"), node.get("up")))
            except OSError:
                pass
            for t, q in queries.items():
                try:
                    rows = list(self.session.execute(q, (k,), timeout=10))
                except Exception:  # a failure is not a wrong answer
                    continue
                if [r.v for r in rows] != [f"v{k}"]:
                    self.empty.append((t, k))
            k = (k + 7) % 300

    def stop(self):
        self.stop_flag.set()
        self.join(timeout=60)


def test_a_dead_node_is_replaced_at_its_own_address_and_serves_only_once_streamed():
    c = MosaicCluster(4, settings=("storage.memtable_size_bytes=65536",))
    try:
        s, preload, dead = preloaded_then_dead(c, 3, wipe=True)
        writer = Writer(s)
        writer.start()
        watcher = Watcher(c, c.session(topology_event_refresh_window=0), 3, preload)
        watcher.start()
        try:
            wait_until("the writer to get going", lambda: len(writer.acked["coded"]) > 20)
            c.replace_in_place(3)
            wait_until("more writes after the replacement", lambda: len(writer.acked["coded"]) > 80)
        finally:
            writer.stop()
            watcher.stop()
        # While it streamed, node 1 showed it up and joining (UJ), and no read at ONE came
        # back without its row (the node served none).
        assert ("Joining", True) in watcher.seen, watcher.seen
        assert watcher.empty == [], watcher.empty[:10]
        node3 = c.status(1)[c.endpoint(3)]
        assert node3["host_id"] == dead["host_id"] and abs(node3["owns"] - dead["owns"]) < 1e-6, (node3, dead)
        assert len(c.status(1)) == 4
        netstats = c.mosaic("netstats", "--host", c.admin(3)).stdout
        assert "replace finished" in netstats and "receiving" in netstats, netstats
        # The writes made while it was dead and while it streamed come as hints.
        wait_until("every hint replayed",
                   lambda: sum(c.metric(i, "mosaic_hints_pending") for i in (1, 2, 4)) == 0, timeout=60)
        assert sum(c.metric(i, "mosaic_hints_replayed_total") for i in (1, 2, 4)) > 0
        acked = {t: preload[t] + writer.acked[t] for t in LAYOUTS}
        pinned = c.session(only=3)
        assert missing(pinned, acked, CL.ONE) == {}, c.logs()
        repair_finds_nothing(c, writer, (3, 1))
    finally:
        c.close()


def test_a_replacement_at_its_own_address_killed_while_it_streams_resumes_at_its_next_start():
    """Killed while hibernating (`bootstrap.json` names the node itself), the node restarts
    hibernating with the dead node's identity and streams again what it had not stored."""
    c = MosaicCluster(3, settings=("cluster.write_request_timeout_ms=4000",))
    try:
        _, preload, dead = preloaded_then_dead(c, 2, wipe=True)
        replacing = threading.Thread(target=c.mosaic, args=("cluster", "add-node", "--dir", c.dir, "--replace",
                                                           c.endpoint(2)), kwargs={"check": False}, daemon=True)
        replacing.start()
        # Hibernating: the others see it up and joining while it waits out the write timeout.
        wait_until("node 2 to hibernate", lambda: c.status(1)[c.endpoint(2)]["state"] == "Joining"
                   and c.status(1)[c.endpoint(2)]["up"])
        c._remember_pids()
        c.kill(2)
        replacing.join(timeout=120)
        marker = os.path.join(c.node_dir(2), "data", "bootstrap.json")
        assert os.path.exists(marker)
        c.restart()
        wait_until("the replacement to finish", lambda: not os.path.exists(marker))
        wait_until("every node to see node 2 up and normal",
                   lambda: all(c.status(i)[c.endpoint(2)]["state"] == "Normal"
                               and c.status(i)[c.endpoint(2)]["up"] for i in (1, 3)))
        assert c.status(1)[c.endpoint(2)]["host_id"] == dead["host_id"]
        pinned = c.session(only=2)
        assert missing(pinned, preload, CL.ALL) == {}, c.logs()
        for i in (1, 2):
            out = c.mosaic("repair", "--host", c.admin(i)).stdout
            assert re.search(r"\b0 entries", out), (i, out)
    finally:
        c.close()
