"""The erasure-tiered layout (ELECT) across topology changes: coding groups that lose a
member.

Four nodes with a (3, 2) code at RF 2: once every node coded its last level and the
secondaries dropped the copies their groups cover, node 4 is killed and removed
(`mosaic removenode`). Node 4 took its shard of every group it was in, so rows other
nodes coded in those groups, whose secondary copies were dropped, would not survive one
more failure: RF 2's promise. The secondaries hold those rows in full again (each coding
round restores the key lists of groups naming a node that left the ring), so with any one
of the three survivors killed every row still reads at ONE. Once no secondary reads
through them, the groups node 4 was in are let go (their parity deleted, their tables
coded again in groups of the nodes left). Then node 3 is decommissioned: two nodes are too
few for the code, every group is let go, and every row reads from either node alone.
"""

from cassandra import ConsistencyLevel as CL
from cassandra.query import SimpleStatement

from conftest import MosaicCluster, wait_until
import glob
import os

from test_erasure import LAYOUT, SETTINGS, host_id, load_coded, parse_ecmeta, stats, table_dirs

def restored_after_rounds(c, nodes):
    """Waits for two coding rounds on each of `nodes` that left no key list of a group
    that lost a member; returns how many lists they restored in all."""
    rounds = {i: c.metric(i, "mosaic_ec_rounds_total") for i in nodes}
    wait_until("two coding rounds on every node since the move",
               lambda: all(c.metric(i, "mosaic_ec_rounds_total") >= rounds[i] + 2 for i in nodes), timeout=60)
    try:
        wait_until("no key list of a group that lost a member left",
                   lambda: all(c.metric(i, "mosaic_ec_lists_dissolved") == 0 for i in nodes), timeout=60)
    except AssertionError as e:
        lines = [l for i in nodes for l in c.log_tail(i, 400000).splitlines() if "lost a member" in l]
        raise AssertionError(f"{e}\n" + "\n".join(lines[-10:])) from None
    return sum(c.metric(i, "mosaic_ec_lists_restored_total") for i in nodes)


def groups_naming(c, nodes, gone):
    """The coding groups (hex ids) an ECMeta on `nodes` has that name a node of `gone`."""
    out = set()
    for i in nodes:
        for d in table_dirs(c, i, "ec"):
            for ecm in glob.glob(os.path.join(d, "parity", "*.ecm")):
                with open(ecm, "rb") as f:
                    meta = parse_ecmeta(f.read())
                if {sh["node"] for sh in meta["shards"]} & gone:
                    out.add(meta["group"])
    return out


def groups_let_go(c, nodes, gone, groups):
    """Waits until `nodes` let go of every coding group naming a node of `gone` (host ids,
    hex): no ECMeta left names one, and no file of `groups` (such groups seen before) is
    left, parity shards (local or offloaded) included."""
    wait_until("every coding group that lost a member let go",
               lambda: all(c.metric(i, "mosaic_ec_groups_dissolved") == 0 for i in nodes)
               and not groups_naming(c, nodes, gone), timeout=90)
    for i in nodes:
        for d in table_dirs(c, i, "ec"):
            left = [f for f in os.listdir(os.path.join(d, "parity")) if f[:32] in groups]
            assert not left, (i, left)


def read_every_row_at_one(c, contact, rows, step):
    s = c.session(contact=contact, topology_event_refresh_window=0)
    one = SimpleStatement("SELECT v FROM ec.t WHERE k = %s", consistency_level=CL.ONE)
    failed, wrong = [], []
    for k in range(0, len(rows), step):
        try:
            r = s.execute(one, (k,)).one()
        except Exception as e:
            failed.append((k, str(e)[:200]))
            continue
        if r is None or r.v != rows[k]:
            wrong.append(k)
    s.cluster.shutdown()
    return failed, wrong


def test_rows_of_a_removed_or_decommissioned_coding_node_stay_replicated():
    c = MosaicCluster(4, SETTINGS)
    try:
        c.up()
        nodes = [1, 2, 3, 4]
        s, rows = load_coded(c, "ec", LAYOUT, 2, "x", nodes)

        def coded_and_covered():
            st = [stats(c, i, "ec.t") for i in nodes]
            return all(x["coded_bytes"] > 0 and x["covered_keys"] > 0 for x in st)

        wait_until("every node coded its tables and received key lists", coded_and_covered, timeout=120)
        for i in nodes:
            c.mosaic("compact", "--host", c.admin(i))
        covered_before = {i: stats(c, i, "ec.t")["covered_keys"] for i in nodes}

        host4 = c.status(1)[c.endpoint(4)]["host_id"]
        named4 = groups_naming(c, nodes, {host4.replace("-", "")})
        assert named4, "node 4 is in coding groups"
        c.kill(4)
        c.wait_seen([1, 2, 3], [4], up=False)
        p = c.mosaic("removenode", host4, "--host", c.admin(1), timeout=240)
        assert "removed" in p.stdout, p.stdout + p.stderr
        wait_until("every node to see node 4 left",
                   lambda: all(c.status(i)[c.endpoint(4)]["state"] == "Left" for i in (1, 2, 3)))
        # Node 4 is gone for good: the launcher starts nodes 1-3 only.
        c.nodes = 3
        restored = restored_after_rounds(c, [1, 2, 3])
        sel = SimpleStatement("SELECT k, v FROM ec.t", consistency_level=CL.ALL, fetch_size=1000)
        s.cluster.shutdown()
        s = c.session(topology_event_refresh_window=0)
        assert {r.k: r.v for r in s.execute(sel)} == rows, covered_before
        assert restored > 0
        # The groups node 4 was in are let go once no secondary reads through them: no
        # ECMeta or parity shard of theirs is left, and their tables are coded again in
        # groups of nodes 1-3 whose key lists the secondaries hold (the saving is back).
        groups_let_go(c, [1, 2, 3], {host4.replace("-", "")}, named4)
        assert sum(c.metric(i, "mosaic_ec_groups_released_total") for i in (1, 2, 3)) > 0

        def coded_again():
            st = [stats(c, i, "ec.t") for i in (1, 2, 3)]
            return all(x["coded_bytes"] > 0 and x["covered_keys"] > 0 for x in st)

        wait_until("tables coded again and their key lists held", coded_again, timeout=120)
        # RF 2 survives one more failure: each remaining node in turn killed, every row
        # reads at ONE (decoded where its primary is the dead node).
        s.cluster.shutdown()
        for victim in (1, 2, 3):
            c.kill(victim)
            live = [i for i in (1, 2, 3) if i != victim]
            c.wait_seen(live, [victim], up=False)
            failed, wrong = read_every_row_at_one(c, live[0], rows, 2)
            assert not failed and not wrong, (victim, len(failed), failed[:3], len(wrong), wrong[:10])
            c.restart()

        # Decommissioned: node 3 streams its ranges away and leaves; two nodes hold
        # everything (RF 2) and cannot code with n = 3, yet the lists of groups naming
        # node 3 or 4 are restored all the same.
        host3 = host_id(c, 3)
        named3 = groups_naming(c, [1, 2, 3], {host3})
        assert named3, "node 3 is in coding groups"
        p = c.mosaic("decommission", "--host", c.admin(3), timeout=240)
        assert "decommissioned" in p.stdout, p.stdout + p.stderr
        c.nodes = 2
        restored_after_rounds(c, [1, 2])
        # Every group named node 3 or 4: all are let go, nothing stays coded or covered.
        groups_let_go(c, [1, 2], {host4.replace("-", ""), host3}, named3)
        for i in (1, 2):
            st = stats(c, i, "ec.t")
            assert (st["parity_bytes"], st["cold_parity_bytes"], st["coded_bytes"], st["covered_keys"]) == (0, 0, 0, 0), (i, st)
        for victim, other in ((1, 2), (2, 1)):
            c.kill(victim)
            c.wait_seen([other], [victim], up=False)
            failed, wrong = read_every_row_at_one(c, other, rows, 1)
            assert not failed and not wrong, (victim, len(failed), failed[:3], len(wrong), wrong[:10])
            c.restart()
    finally:
        c.close()
