"""The erasure-tiered layout (ELECT) on a real cluster: tables coded across nodes.

Three nodes with a (3, 2) code: every node is a data node of two groups and the leader of
one. After enough data reaches the primary trees' last levels, each node's rounds send its
coldest last-level tables to their leaders, which distribute parity; every committed group
is checked on disk against the parity files it names (by SHA-256) and its data shards
against the tables of their nodes, and the rows stay readable, across a restart of the
whole cluster. Once a table is coded its keys' secondary copies are dropped (ELECT's
secondary removal): the source trees shrink, rows updated afterwards read back new, and
with a node killed, its rows are decoded from the other shards of their groups
(degraded reads); with a node's disk lost, the node rebuilds its shards when it comes back
(full-node recovery).
"""

import glob
import hashlib
import json
import os
import re
import struct

from cassandra import ConsistencyLevel as CL
from cassandra.query import SimpleStatement

from conftest import MosaicCluster, wait_until
from test_cluster import diff, read_alone

SETTINGS = (
    "storage.memtable_size_bytes=65536",
    "cluster.erasure_coding_interval_ms=300",
)
LAYOUT = "{'class': 'erasure-tiered', 'ec_k': '2', 'ec_n': '3', 'storage_saving_target': '0.4'}"


def parse_ecmeta(data):
    """The binary ECMeta (crates/erasure/src/meta.rs): header, n shards, crc32c."""
    version, = struct.unpack_from("<B", data, 0)
    assert version == 1
    group = data[1:17]
    epoch, k, n, stripe, coded_len = struct.unpack_from("<QBBIQ", data, 17)
    off = 17 + 8 + 1 + 1 + 4 + 8
    shards = []
    for _ in range(n):
        digest = data[off:off + 32]
        size, = struct.unpack_from("<Q", data, off + 32)
        node = data[off + 40:off + 56]
        pos = data[off + 56]
        shards.append({"hash": digest, "size": size, "node": node.hex(), "pos": pos})
        off += 57
    assert off + 4 == len(data)
    return {"group": group.hex(), "epoch": epoch, "k": k, "n": n, "coded_len": coded_len, "shards": shards}


def parity_content(data):
    """The content of a parity file (crates/replica/src/parity.rs): header, bytes, crc."""
    assert data[:4] == b"MPAR"
    length, = struct.unpack_from("<Q", data, 14)
    return data[22:22 + length]


def table_dirs(c, i, ks):
    return glob.glob(os.path.join(c.node_dir(i), "data", ks, "t-*"))


def host_id(c, i):
    return c.status(i)[c.endpoint(i)]["host_id"].replace("-", "")


def stats(c, i, table):
    for t in json.loads(c.http(i, "/stats"))["tables"]:
        if t["table"] == table:
            return t["stats"]
    return None


def structure_bytes(c, table, prefix):
    """Bytes in the tables of every node's structures named `prefix…` (stats' view)."""
    total = 0
    for i in range(1, 4):
        for st in stats(c, i, table)["structures"]:
            if st["structure"].startswith(prefix):
                total += sum(level["bytes"] for level in st["levels"])
    return total


def load_coded(c, ks, layout, rf, fill, nodes):
    """Creates `ks.t` in `layout` at RF `rf`, writes 6,000 rows of ~300 bytes at ALL, then
    flushes and compacts `nodes`; returns the session and the rows."""
    s = c.session()
    s.execute(f"CREATE KEYSPACE {ks} WITH replication = {{'class': 'SimpleStrategy', 'replication_factor': {rf}}}")
    s.execute(f"CREATE TABLE {ks}.t (k int PRIMARY KEY, v text) WITH layout = {layout}")
    c.wait_schema_agreement()
    ins = s.prepare(f"INSERT INTO {ks}.t (k, v) VALUES (?, ?)")
    ins.consistency_level = CL.ALL
    rows = {k: f"{k}-" + fill * 300 for k in range(6000)}
    for k, v in rows.items():
        s.execute(ins, (k, v))
    for i in nodes:
        c.mosaic("flush", "--host", c.admin(i))
        c.mosaic("compact", "--host", c.admin(i))
    return s, rows


def check_groups(c, hosts):
    """(groups, data shards found in their node's primary tree, data shards not found),
    from each group's newest ECMeta; asserts every parity shard matches its ECMeta."""
    newest = {}
    for i in range(1, 4):
        for d in table_dirs(c, i, "ec"):
            for ecm in glob.glob(os.path.join(d, "parity", "*.ecm")):
                with open(ecm, "rb") as f:
                    meta = parse_ecmeta(f.read())
                # A data node keeps the ECMeta of its own fill; the leader the newest.
                if meta["epoch"] > newest.get(meta["group"], {"epoch": -1})["epoch"]:
                    newest[meta["group"]] = meta
    live = stale = 0
    for meta in newest.values():
        for sh in meta["shards"]:
            if sh["size"] == 0 and sh["pos"] < meta["k"]:
                continue  # an empty slot
            holder = hosts[sh["node"]]
            [hdir] = table_dirs(c, holder, "ec")
            if sh["pos"] < meta["k"]:
                digests = set()
                for p in glob.glob(os.path.join(hdir, "primary", "*.sst")):
                    with open(p, "rb") as f:
                        digests.add(hashlib.sha256(f.read()).digest())
                if sh["hash"] in digests:
                    live += 1
                else:
                    stale += 1
                continue
            par = os.path.join(hdir, "parity", f"{meta['group']}-{sh['pos']}.par")
            if not os.path.exists(par):
                # Offloaded: a stub names the object in the node's cold tier (the default:
                # a cold/ directory beside its data directory, under its host id).
                stub = par[:-len(".par")] + ".cold"
                with open(stub) as f:
                    location = f.readline().strip()
                [par] = glob.glob(os.path.join(c.node_dir(holder), "cold", "*", location))
            with open(par, "rb") as f:
                data = f.read()
            epoch, = struct.unpack_from("<Q", data, 5)
            if epoch > meta["epoch"]:
                continue  # a change of this group is under way
            assert epoch == meta["epoch"], (par, epoch, meta["epoch"])
            content = parity_content(data)
            assert hashlib.sha256(content).digest() == sh["hash"], par
            assert len(content) == meta["coded_len"]
    return len(newest), live, stale


def test_erasure_tiered_tables_are_coded_across_nodes_and_stay_readable():
    # Decoding lost tables ahead of degraded reads is off by default; this test checks it.
    c = MosaicCluster(3, SETTINGS + ("cluster.degraded_read_ahead_tables=2",))
    try:
        c.up()
        s = c.session()
        s.execute("CREATE KEYSPACE ec WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 2}")
        s.execute(f"CREATE TABLE ec.t (k int PRIMARY KEY, v text) WITH layout = {LAYOUT}")
        c.wait_schema_agreement()
        row = s.execute("SELECT extensions FROM system_schema.tables WHERE keyspace_name = 'ec' AND table_name = 't'").one()
        assert row.extensions["mosaic.layout"].decode() == \
            "{'class': 'erasure-tiered', 'ec_k': '2', 'ec_n': '3', 'storage_saving_target': '0.4'}"
        ins = s.prepare("INSERT INTO ec.t (k, v) VALUES (?, ?)")
        ins.consistency_level = CL.ALL
        # Rows of ~1.2 KB: each node's coded table (~2.4 MB) is larger than what one
        # degraded read decodes itself (its last 128 KiB and its key's 512 KiB), so the
        # test below sees the rest decoded ahead.
        rows = {k: f"{k}-" + "x" * 1200 for k in range(6000)}
        for k, v in rows.items():
            s.execute(ins, (k, v))
        c.mosaic("flush", "--host", c.admin(1))
        c.mosaic("compact", "--host", c.admin(1))

        def coded_everywhere():
            st = [stats(c, i, "ec.t") for i in range(1, 4)]
            return all(x and x["coded_bytes"] > 0 and x["parity_bytes"] + x["cold_parity_bytes"] > 0 for x in st)

        wait_until("every node to have coded tables and to hold parity", coded_everywhere, timeout=90)

        # Every committed group names parity whose bytes are on disk as it says, and, once
        # the rounds have emptied the slots of tables compaction replaced, data shards that
        # are tables of their node's primary tree.
        hosts = {host_id(c, i): i for i in range(1, 4)}

        def groups_consistent():
            groups, live, stale = check_groups(c, hosts)
            return groups > 0 and live > 0 and stale == 0

        try:
            wait_until("every group's data slots to name live tables", groups_consistent, timeout=90)
        except AssertionError as e:
            lines = [l for i in range(1, 4) for l in c.log_tail(i, 400000).splitlines() if "elect" in l]
            raise AssertionError(f"{e}: {check_groups(c, hosts)}\n" + "\n".join(lines[-40:])) from None
        # α = 0.4 at RF 2 with a (3, 2) code asks for more than coding the last level saves
        # (at most 25%): parity moves to the cold tier (ELECT's Case 2).
        wait_until("parity offloaded to the cold tier",
                   lambda: sum(stats(c, i, "ec.t")["cold_parity_bytes"] for i in range(1, 4)) > 0, timeout=60)
        assert groups_consistent()
        sel = SimpleStatement("SELECT k, v FROM ec.t", consistency_level=CL.ALL, fetch_size=1000)
        assert {r.k: r.v for r in s.execute(sel)} == rows

        # Secondary removal: every node received key lists of the others' coded tables and
        # dropped the versions they cover, so the source trees (RF 2: one redundant copy of
        # every row) hold clearly less than the primary trees.
        wait_until("key lists on every node",
                   lambda: all(stats(c, i, "ec.t")["covered_keys"] > 0 for i in range(1, 4)), timeout=60)
        for i in range(1, 4):
            c.mosaic("compact", "--host", c.admin(i))

        def secondaries_shrunk():
            primary, sources = structure_bytes(c, "ec.t", "primary"), structure_bytes(c, "ec.t", "src-")
            return sources < 0.8 * primary, (primary, sources)

        wait_until("secondary copies dropped", lambda: secondaries_shrunk()[0], timeout=60)
        covered = sum(stats(c, i, "ec.t")["covered_keys"] for i in range(1, 4))
        assert covered <= len(rows)
        # Merkle repair treats slices with covered rows as present: nothing is copied back.
        out = c.mosaic("repair", "--host", c.admin(1), "ec", timeout=120).stdout
        streamed = re.search(r"(\d+) entries \(", out)
        assert streamed and int(streamed.group(1)) == 0, out
        # Reads at ALL compare the secondary's answer (its newer versions merged with the
        # primary's) with the primary's: they agree, so read repair writes nothing back.
        assert {r.k: r.v for r in s.execute(sel)} == rows
        for k in range(0, 6000, 7):
            rows[k] = f"{k}-updated"
            s.execute(ins, (k, rows[k]))
        one = SimpleStatement("SELECT v FROM ec.t WHERE k = %s", consistency_level=CL.ONE)
        for k in range(0, 6000, 97):
            assert s.execute(one, (k,)).one().v == rows[k]
        for i in range(1, 4):
            c.mosaic("flush", "--host", c.admin(i))
        assert secondaries_shrunk()[0], secondaries_shrunk()[1]

        # Node 3 killed: the rows it was primary for have no full copy left; a read of
        # them reaches their secondary, which decodes them from the other two shards of
        # their group (a degraded read). Every row reads back at ONE.
        c.kill(3)
        s3 = c.session()
        wait_until("node 3 seen down", lambda: not any(c.status(i)[c.endpoint(3)]["up"] for i in (1, 2)), timeout=30)
        # One read of a row node 3 was primary for decodes a few stripes of its lost table
        # (its footer's, index's and block's); the node that served it then decodes the
        # rest of that table in the background (degraded_read_ahead_tables above), so
        # later reads find their stripes decoded.
        primary_3 = next(k for k in range(6000)
                         if s3.cluster.metadata.get_replicas("ec", struct.pack(">i", k))[0].address == c.ip(3))
        assert s3.execute(one, (primary_3,)).one().v == rows[primary_3]

        def decoded_whole():
            held = [t for i in (1, 2) for t in stats(c, i, "ec.t")["decoded_tables"]]
            return any(t["decoded"] == t["bytes"] and t["bytes"] > 3 * (512 << 10) for t in held)

        wait_until("a lost table decoded whole after one degraded read", decoded_whole, timeout=30)
        try:
            wrong = [k for k in range(0, 6000, 11) if (r := s3.execute(one, (k,)).one()) is None or r.v != rows[k]]
        except Exception as e:
            lines = [l for i in range(1, 4) for l in c.log_tail(i, 2000000).splitlines() if "elect" in l]
            raise AssertionError(f"{e}\n" + "\n".join(lines[-60:])) from None
        assert not wrong, wrong[:20]
        assert {r.k: r.v for r in s3.execute(SimpleStatement("SELECT k, v FROM ec.t", consistency_level=CL.ONE, fetch_size=500))} == rows
        s3.cluster.shutdown()

        c.stop(1, 2)
        c.restart()
        s = c.session()
        wait_until("coded tables and parity after a restart", coded_everywhere, timeout=90)
        assert {r.k: r.v for r in s.execute(sel)} == rows
        assert all(stats(c, i, "ec.t")["covered_keys"] > 0 for i in range(1, 4)), "key lists survive a restart"

        # Node 3's disk is lost: wiped, it replaces itself at its address (taking its
        # identity from the cluster) and streams what is replicated. The rows of its coded
        # tables exist nowhere else in full (their secondary copies were dropped), so it
        # rebuilds its shards from the other shards of their groups at once — data tables
        # back into its primary tree, parity files again — and `mosaic repair` (which would
        # rebuild them too) finds nothing left to rebuild. Node 3 alone then serves every
        # row it replicates.
        s.cluster.shutdown()
        c.wipe(3)
        c.wait_seen((1, 2), [3], up=False)
        c.replace_in_place(3)
        c.wait_schema_agreement()

        def rebuilt():
            m = re.search(r"coding shards lost with the data directory are rebuilt shards_rebuilt=(\d+)",
                          c.log_tail(3, 400000))
            return m and int(m.group(1))

        wait_until("node 3 to rebuild its lost coding shards", rebuilt, timeout=90)
        assert not os.path.exists(os.path.join(c.node_dir(3), "data", "RECOVER_CODED"))
        out = c.mosaic("repair", "--host", c.admin(3), "ec", timeout=240).stdout
        assert "coding shards rebuilt" not in out, out
        check_groups(c, hosts)  # asserts every parity shard, rebuilt ones too, matches
        found, unavailable = read_alone(c, 3, "ec", list(rows))
        expected = {k: v for k, v in rows.items() if k not in unavailable}
        assert len(expected) > len(rows) // 4, len(expected)
        assert found == expected, diff(expected, found)
    finally:
        c.close()


def test_too_few_nodes_for_the_code_leaves_the_table_replicated_and_says_why():
    c = MosaicCluster(2, SETTINGS)
    try:
        c.up()
        s = c.session()
        s.execute("CREATE KEYSPACE few WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 2}")
        s.execute("CREATE TABLE few.t (k int PRIMARY KEY, v text) WITH layout = 'erasure-tiered'")
        c.wait_schema_agreement()
        ins = s.prepare("INSERT INTO few.t (k, v) VALUES (?, ?)")
        ins.consistency_level = CL.ALL
        for k in range(2000):
            s.execute(ins, (k, "y" * 200))
        c.mosaic("flush", "--host", c.admin(1))
        wait_until("the node to say why it does not code",
                   lambda: "needs at least 6 nodes; the cluster has 2" in c.log_tail(1, 20000), timeout=30)
        assert stats(c, 1, "few.t")["coded_bytes"] == 0
        sel = SimpleStatement("SELECT count(*) FROM few.t", consistency_level=CL.ALL)
        assert s.execute(sel).one()[0] == 2000
    finally:
        c.close()


def test_six_nodes_at_the_default_code_survive_two_killed_nodes_by_degraded_reads():
    """ELECT's own setting (k = 4 of n = 6, α = 0.6, RF 3) on six nodes: once the rounds
    have coded every node's last level and the secondaries dropped what it covers, two
    nodes are killed with SIGKILL and every row still reads back at ONE — the rows whose
    primary died are decoded from the four surviving shards of their groups."""
    c = MosaicCluster(6, SETTINGS)
    try:
        c.up()
        nodes = range(1, 7)
        s, rows = load_coded(c, "six", "{'class': 'erasure-tiered'}", 3, "s", nodes)

        def coded_and_covered():
            st = [stats(c, i, "six.t") for i in nodes]
            return all(x["coded_bytes"] > 0 and x["covered_keys"] > 0 for x in st)

        wait_until("every node coded its tables and dropped covered copies", coded_and_covered, timeout=120)
        for i in nodes:
            c.mosaic("compact", "--host", c.admin(i))

        def sizes():
            primary = sources = 0
            for i in nodes:
                for st in stats(c, i, "six.t")["structures"]:
                    b = sum(level["bytes"] for level in st["levels"])
                    if st["structure"] == "primary":
                        primary += b
                    elif st["structure"].startswith("src-"):
                        sources += b
            return primary, sources

        # RF 3 keeps two redundant copies of every row; secondary removal drops most.
        wait_until("secondary copies dropped", lambda: sizes()[1] < 0.5 * sizes()[0], timeout=60)

        c.kill(2)
        c.kill(5)
        live = (1, 3, 4, 6)
        wait_until("the killed nodes seen down",
                   lambda: not any(c.status(i)[c.endpoint(j)]["up"] for i in live for j in (2, 5)), timeout=30)
        s.cluster.shutdown()
        s = c.session()
        one = SimpleStatement("SELECT v FROM six.t WHERE k = %s", consistency_level=CL.ONE)
        wrong = [k for k in range(0, 6000, 5) if (r := s.execute(one, (k,)).one()) is None or r.v != rows[k]]
        assert not wrong, wrong[:20]
        scan = SimpleStatement("SELECT k, v FROM six.t", consistency_level=CL.ONE, fetch_size=1000)
        assert {r.k: r.v for r in s.execute(scan)} == rows
    finally:
        c.close()


def test_a_target_beyond_coding_and_parity_offloads_coded_tables_to_the_cold_tier():
    """ELECT's Case 3: at RF 2 with a (3, 2) code, coding the whole last level and
    offloading all of its parity saves at most half of it; α = 0.8 asks for more, so coded
    tables move to the cold tier too (coldest first). Rows read back at ALL, across a
    restart, and with a node killed: a degraded read then fetches pieces of the offloaded
    tables from the cold tier of the nodes holding them."""
    layout = "{'class': 'erasure-tiered', 'ec_k': '2', 'ec_n': '3', 'storage_saving_target': '0.8'}"
    c = MosaicCluster(3, SETTINGS)
    try:
        c.up()
        s, rows = load_coded(c, "off", layout, 2, "o", range(1, 4))

        def offloaded():
            st = [stats(c, i, "off.t") for i in range(1, 4)]
            return all(x["cold_bytes"] > 0 and x["cold_parity_bytes"] > 0 for x in st)

        wait_until("coded tables offloaded on every node", offloaded, timeout=120)
        for i in range(1, 4):
            # The tables' objects sit in the node's cold tier beside its parity, each named
            # by a stub where the table's ghost was.
            [d] = table_dirs(c, i, "off")
            stubs = glob.glob(os.path.join(d, "ghosts", "*.cold"))
            assert stubs, i
            with open(stubs[0]) as f:
                location = f.readline().strip()
            assert glob.glob(os.path.join(c.node_dir(i), "cold", "*", location)), location
            st = stats(c, i, "off.t")
            primary = [x for x in st["structures"] if x["structure"] == "primary"][0]
            last = [lv for lv in primary["levels"] if lv["bytes"] > 0][-1]
            assert st["cold_bytes"] > 0.3 * last["bytes"], (st["cold_bytes"], last)
        sel = SimpleStatement("SELECT k, v FROM off.t", consistency_level=CL.ALL, fetch_size=1000)
        assert {r.k: r.v for r in s.execute(sel)} == rows

        c.stop(1, 2, 3)
        c.restart()
        s = c.session()
        assert {r.k: r.v for r in s.execute(sel)} == rows

        # Node 3 killed: rows it was primary for are decoded from the group's other shards,
        # some of them offloaded tables read by range from their node's cold tier.
        c.kill(3)
        wait_until("node 3 seen down", lambda: not any(c.status(i)[c.endpoint(3)]["up"] for i in (1, 2)), timeout=30)
        s.cluster.shutdown()
        s = c.session()
        one = SimpleStatement("SELECT v FROM off.t WHERE k = %s", consistency_level=CL.ONE)
        wrong = [k for k in range(0, 6000, 7) if (r := s.execute(one, (k,)).one()) is None or r.v != rows[k]]
        assert not wrong, wrong[:20]
    finally:
        c.close()
