"""Multi-process clusters through the real Python driver (issue 4, "How it is checked"): each
test starts its own cluster with `mosaic cluster up` (fast gossip: a dead node is noticed in
about two seconds) and kills, stops, wipes and restarts nodes by pid.

"Read from node X alone": every other node is stopped and seen DOWN by node X, and a
white-list session on node X reads at ONE, which node X can then only serve from its own
data."""
import os
import re
import socket
import struct
import time

import pytest
from cassandra import ConsistencyLevel, Unavailable
from cassandra.policies import FallthroughRetryPolicy
from cassandra.query import SimpleStatement

from conftest import wait_until

CL = ConsistencyLevel


def create_table(c, s, ks, rf):
    s.execute(f"CREATE KEYSPACE {ks} WITH replication = {{'class': 'SimpleStrategy', 'replication_factor': {rf}}}")
    s.execute(f"CREATE TABLE {ks}.t (k int PRIMARY KEY, v text)")
    c.wait_schema_agreement()


def write(s, ks, rows, cl):
    ins = s.prepare(f"INSERT INTO {ks}.t (k, v) VALUES (?, ?)")
    ins.consistency_level = cl
    for k, v in rows.items():
        s.execute(ins, (k, v))


def read(s, ks, keys, cl):
    """{key: v} of every key found, one SELECT per key at `cl`."""
    sel = s.prepare(f"SELECT v FROM {ks}.t WHERE k = ?")
    sel.consistency_level = cl
    out = {}
    for k in keys:
        row = s.execute(sel, (k,)).one()
        if row is not None:
            out[k] = row.v
    return out


def routing_key(k):
    return struct.pack(">i", k)


def replica_ips(driver, ks, k):
    return {h.address for h in driver.metadata.get_replicas(ks, routing_key(k))}


def keys_on(c, driver, ks, node, keys):
    """The keys of `keys` that node `node` replicates, by the driver's token map."""
    return [k for k in keys if c.ip(node) in replica_ips(driver, ks, k)]


def read_alone(c, node, ks, keys):
    """Reads `keys` at ONE from node `node` alone (see the module doc): {key: v}, and the
    keys it answered Unavailable for (those it does not replicate)."""
    s = c.session(only=node)
    found, unavailable = {}, []
    sel = s.prepare(f"SELECT v FROM {ks}.t WHERE k = ?")
    sel.consistency_level = CL.ONE
    sel.retry_policy = FallthroughRetryPolicy()
    with c.alone(node):
        for k in keys:
            try:
                row = s.execute(sel, (k,)).one()
            except Unavailable as e:
                assert (e.required_replicas, e.alive_replicas) == (1, 0), e
                unavailable.append(k)
                continue
            if row is not None:
                found[k] = row.v
    return found, unavailable


def diff(expected, got):
    """A short description of how `got` differs from `expected`, key by key."""
    missing = [k for k in expected if k not in got]
    wrong = [(k, expected[k], got[k]) for k in expected if k in got and got[k] != expected[k]]
    extra = [k for k in got if k not in expected]
    return f"{len(missing)} missing {missing[:10]}, {len(wrong)} wrong {wrong[:10]}, {len(extra)} extra {extra[:10]}"


def repaired_entries(c, node, ks, timeout=60):
    out = c.mosaic("repair", "--host", c.admin(node), ks, timeout=timeout).stdout
    m = re.search(r"(\d+) entries \(", out)
    assert m, out
    return int(m.group(1)), out


def storage_bytes(metrics, kind):
    """The `mosaic_storage_bytes_total{kind=…}` sample of a /metrics page (0 if absent)."""
    for line in metrics.splitlines():
        if line.startswith("mosaic_storage_bytes_total{") and f'kind="{kind}"' in line:
            return float(line.rsplit(" ", 1)[1])
    return 0.0


def loaded_cluster(make_cluster, nodes, ks, rows, cl, settings=()):
    """A cluster with table `ks`.t at RF=3 holding `rows` written at `cl`, and a token-aware
    session on it."""
    c = make_cluster(nodes, settings)
    s = c.session()
    create_table(c, s, ks, 3)
    write(s, ks, rows, cl)
    return c, s


def test_quorum_reads_return_every_row_while_any_one_node_is_killed(make_cluster):
    rows = {k: f"v{k}" for k in range(500)}
    c, s = loaded_cluster(make_cluster, 5, "q", rows, CL.QUORUM)
    # Node 1 is the seed and the driver's contact point.
    for victim in range(1, 6):
        c.kill(victim)
        c.wait_seen(c.others(victim), [victim], up=False)
        got = read(s, "q", rows, CL.QUORUM)
        assert got == rows, f"node{victim} killed: {diff(rows, got)}"
        if victim < 5:
            c.restart()


def test_all_is_unavailable_with_a_node_down_one_works_and_hints_reach_it(make_cluster):
    c = make_cluster(5)
    s = c.session()
    create_table(c, s, "h", 3)
    victim = 2
    keys = range(500)
    on_victim = keys_on(c, s.cluster, "h", victim, keys)
    assert 100 < len(on_victim) < 500
    c.kill(victim)
    c.wait_seen(c.others(victim), [victim], up=False)

    for k in on_victim[:20]:
        stmt = SimpleStatement(f"INSERT INTO h.t (k, v) VALUES ({k}, 'all')", consistency_level=CL.ALL,
                               retry_policy=FallthroughRetryPolicy())
        with pytest.raises(Unavailable) as e:
            s.execute(stmt)
        assert (e.value.consistency, e.value.required_replicas, e.value.alive_replicas) == (CL.ALL, 3, 2), e.value
    # A key whose three replicas are all up is written at ALL.
    elsewhere = next(k for k in keys if k not in on_victim)
    s.execute(SimpleStatement(f"INSERT INTO h.t (k, v) VALUES ({elsewhere}, 'all')", consistency_level=CL.ALL))

    stored_before = sum(c.metric(i, "mosaic_hints_stored_total") for i in c.others(victim))
    rows = {k: f"one{k}" for k in keys}
    write(s, "h", rows, CL.ONE)
    stored = sum(c.metric(i, "mosaic_hints_stored_total") for i in c.others(victim)) - stored_before
    assert stored >= len(on_victim), stored

    c.restart()
    wait_until(
        "every hint replayed",
        lambda: sum(c.metric(i, "mosaic_hints_pending") for i in range(1, 6)) == 0
        and sum(c.metric(i, "mosaic_hints_replayed_total") for i in c.others(victim)) >= len(on_victim),
    )
    found, unavailable = read_alone(c, victim, "h", keys)
    expected = {k: rows[k] for k in on_victim}
    assert found == expected, diff(expected, found)
    # Node 2 alone answers exactly the keys the driver's token map places on it.
    assert sorted(unavailable) == sorted(set(keys) - set(on_victim))


def test_a_wiped_node_is_refused_then_replaces_itself_and_repair_finds_it_in_sync(make_cluster):
    rows = {k: f"w{k}" for k in range(500)}
    c, s = loaded_cluster(make_cluster, 5, "w", rows, CL.ALL)
    entries, out = repaired_entries(c, 1, "w")
    assert entries == 0, out

    victim = 3
    before = c.status(1)[c.endpoint(victim)]
    on_victim = keys_on(c, s.cluster, "w", victim, rows)
    c.wipe(victim)
    c.wait_seen(c.others(victim), [victim], up=False)
    # Started again as it is, it would serve its ranges empty: refused, as Cassandra does.
    err = c.start_refused(victim)
    assert f"A node with address {c.endpoint(victim)} already exists" in err, err
    assert f"--replace {c.endpoint(victim)}" in err, err
    # Replacing itself, it takes its identity back and streams its ranges before serving.
    c.replace_in_place(victim)
    after = c.status(1)[c.endpoint(victim)]
    assert (after["host_id"], after["tokens"]) == (before["host_id"], before["tokens"])
    found, _ = read_alone(c, victim, "w", on_victim)
    expected = {k: rows[k] for k in on_victim}
    assert found == expected, diff(expected, found)
    for node in (victim, 1):
        entries, out = repaired_entries(c, node, "w")
        assert entries == 0, out


def test_a_wiped_node_restarted_at_once_is_refused(make_cluster):
    # The seed's first answer to the shadow round goes out on its connection to the node's
    # previous process and is lost; the node must ask again rather than start as a new node.
    c = make_cluster(3)
    victim = 3
    before = c.status(1)[c.endpoint(victim)]
    c.wipe(victim)
    err = c.start_refused(victim)
    assert f"A node with address {c.endpoint(victim)} already exists (host id {before['host_id']}" in err, err
    assert not os.path.exists(os.path.join(c.node_dir(victim), "data", "node.toml"))


def test_diverged_replicas_converge_by_read_repair(make_cluster):
    keys = range(300)
    c, s = loaded_cluster(make_cluster, 3, "d", {k: "old" for k in keys}, CL.ALL, ["cluster.max_hint_window_ms=0"])
    c.kill(3)
    c.wait_seen([1, 2], [3], up=False)
    new = {k: f"new{k}" for k in keys}
    write(s, "d", new, CL.QUORUM)
    assert sum(c.metric(i, "mosaic_hints_stored_total") for i in (1, 2)) == 0
    c.restart()

    found, _ = read_alone(c, 3, "d", keys)
    assert found == {k: "old" for k in keys}, "node 3 should have missed the updates (no hints)"

    # QUORUM with node 2 down: node 1 coordinates and must involve node 3.
    half = list(keys)[:150]
    s1 = c.session(only=1)
    c.stop(2)
    c.wait_seen([1], [2], up=False)
    got = read(s1, "d", half, CL.QUORUM)
    assert got == {k: new[k] for k in half}, diff({k: new[k] for k in half}, got)
    c.restart()
    rest = list(keys)[150:]
    got = read(s, "d", rest, CL.ALL)
    assert got == {k: new[k] for k in rest}, diff({k: new[k] for k in rest}, got)

    found, _ = read_alone(c, 3, "d", keys)
    assert found == new, diff(new, found)


def test_token_aware_routing_picks_a_replica_and_token_maps_agree(make_cluster):
    c = make_cluster(5)
    s = c.session()
    driver = s.cluster
    keys = range(300)
    for ks, rf in (("tok1", 1), ("tok3", 3)):
        create_table(c, s, ks, rf)
    # The driver's ring (from system.local and system.peers) is Mosaic's: same tokens per
    # node, same share of the ring.
    tm = driver.metadata.token_map
    ring = sorted(tm.ring)
    status = c.status(1)
    share = {}
    for i, t in enumerate(ring):
        width = (t.value - ring[i - 1].value) % 2**64 or 2**64
        owner = tm.token_to_host_owner[t].address
        share[owner] = share.get(owner, 0.0) + width / 2**64
    for node in range(1, 6):
        st = status[c.endpoint(node)]
        host_tokens = [t for t in ring if tm.token_to_host_owner[t].address == c.ip(node)]
        assert len(host_tokens) == st["tokens"] == 16
        assert abs(share[c.ip(node)] - st["owns"]) < 1e-9, (node, share, st)

    coordinators = set()
    for ks, rf in (("tok1", 1), ("tok3", 3)):
        ins = s.prepare(f"INSERT INTO {ks}.t (k, v) VALUES (?, ?)")
        # ALL: the read right after may be coordinated by another replica (the driver
        # shuffles replicas), and this test is about routing, not ONE/ONE's staleness.
        ins.consistency_level = ConsistencyLevel.ALL
        sel = s.prepare(f"SELECT v, token(k) AS t FROM {ks}.t WHERE k = ?")
        for k in keys:
            replicas = set(driver.metadata.get_replicas(ks, routing_key(k)))
            assert len(replicas) == rf
            for rs in (s.execute(ins, (k, f"t{k}")), s.execute(sel, (k,))):
                coordinator = rs.response_future.coordinator_host
                assert coordinator in replicas, (ks, k, coordinator, replicas)
                coordinators.add(coordinator.address)
            row = rs.one()
            assert row.v == f"t{k}"
            assert row.t == tm.token_class.from_key(routing_key(k)).value, k
    assert coordinators == {c.ip(i) for i in range(1, 6)}

    # Mosaic places each RF=1 key where the driver says: with node 4 down, exactly the keys
    # the driver puts on node 4 are Unavailable.
    s1 = c.session(only=1)
    sel = s1.prepare("SELECT v FROM tok1.t WHERE k = ?")
    sel.retry_policy = FallthroughRetryPolicy()
    sel.consistency_level = CL.ONE
    c.stop(4)
    c.wait_seen([1], [4], up=False)
    unavailable = []
    for k in keys:
        try:
            assert s1.execute(sel, (k,)).one().v == f"t{k}"
        except Unavailable:
            unavailable.append(k)
    assert unavailable == keys_on(c, driver, "tok1", 4, keys)
    assert unavailable


def send_garbage(addr, payload):
    """Sends `payload` to `addr`; whether the peer closed the connection within 10 s."""
    with socket.create_connection(addr, timeout=10) as sock:
        try:
            sock.sendall(payload)
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                if not sock.recv(65536):
                    return True
        except (ConnectionResetError, BrokenPipeError):
            return True
        except socket.timeout:
            return False
    return False


def test_garbage_on_internode_and_cql_ports_leaves_the_cluster_serving(make_cluster):
    import random

    rows = {k: f"g{k}" for k in range(200)}
    c, s = loaded_cluster(make_cluster, 3, "g", rows, CL.ALL)
    pids = {i: c.pid(i) for i in (1, 2, 3)}
    rng = random.Random(4)
    payloads = [
        bytes(rng.randrange(256) for _ in range(65536)),
        b"\xff" * 64,
        b"\x00" * 64,
        b"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
        b"\x04\x00\x00\x01\x07\x7f\xff\xff\xff" + b"x" * 100,
    ]
    for payload in payloads:
        assert send_garbage((c.ip(2), c.storage_port), payload), f"internode kept {payload[:16]!r}"
        assert send_garbage((c.ip(3), c.port), payload), f"CQL port kept {payload[:16]!r}"

    # Over several gossip rounds every node stays UP as seen by every node.
    for _ in range(10):
        for i in (1, 2, 3):
            assert all(n["up"] for n in c.status(i).values()), (i, c.status(i))
        time.sleep(0.3)
    for i in (1, 2, 3):
        assert c.pid(i) == pids[i] and c.kill(i, 0) is None
        out = c.mosaic("status", "--host", c.admin(i)).stdout
        assert out.count("UN  ") == 3 and "DN  " not in out, out
    more = {k: f"m{k}" for k in range(200, 400)}
    write(s, "g", more, CL.ALL)
    got = read(s, "g", list(rows) + list(more), CL.ALL)
    assert got == {**rows, **more}, diff({**rows, **more}, got)


def test_repair_right_after_peers_restart_does_not_stall(make_cluster):
    rows = {k: f"s{k}" for k in range(200)}
    c, _ = loaded_cluster(make_cluster, 5, "s", rows, CL.ALL)
    c.stop(1, 2, 4, 5)
    c.up()  # no settling pause: node 3 still holds connections to the stopped processes
    started = time.monotonic()
    entries, out = repaired_entries(c, 3, "s", timeout=20)
    assert entries == 0, out
    assert time.monotonic() - started < 20


def test_tables_take_the_configured_layout_and_keep_it_across_restarts(make_cluster, layout):
    c = make_cluster(3)
    s = c.session()
    create_table(c, s, "lay", 3)
    s.execute("CREATE TABLE lay.u (k int PRIMARY KEY, v text) WITH layout = 'uniform'")
    # The map form, with the decoupled layout's own S for this table.
    s.execute("CREATE TABLE lay.tuned (k int PRIMARY KEY, v text) "
              "WITH layout = {'class': 'decoupled', 'sorted_runs_max': '3'}")
    c.wait_schema_agreement()
    write(s, "lay", {k: f"v{k}" for k in range(50)}, CL.ALL)
    for k in range(50):
        s.execute(SimpleStatement("INSERT INTO lay.tuned (k, v) VALUES (%s, %s)", consistency_level=CL.ALL),
                  (k, f"t{k}"))

    def layouts():
        rows = s.execute("SELECT table_name, extensions FROM system_schema.tables WHERE keyspace_name = 'lay'")
        return {r.table_name: r.extensions["mosaic.layout"].decode() for r in rows}

    expected = {"t": layout, "u": "uniform", "tuned": "{'class': 'decoupled', 'sorted_runs_max': '3'}"}
    assert layouts() == expected
    c.stop(1, 2, 3)
    c.restart()
    s = c.session()
    assert layouts() == expected
    tuned = s.execute(SimpleStatement("SELECT k, v FROM lay.tuned", consistency_level=CL.ALL))
    assert {r.k: r.v for r in tuned} == {k: f"t{k}" for k in range(50)}
    assert read(s, "lay", range(50), CL.ALL) == {k: f"v{k}" for k in range(50)}
    with pytest.raises(Exception, match="layout"):
        s.execute("ALTER TABLE lay.t WITH layout = 'uniform'" if layout != "uniform"
                  else "ALTER TABLE lay.t WITH layout = 'decoupled'")


def test_read_your_writes_at_two_while_splits_and_merge_sorts_run(make_cluster, layout):
    # ~1.5 MB per replica against 64 KiB memtables: dozens of flushes and compactions, and
    # under decoupled splits and merge-sorts, while every write at TWO is read back at TWO.
    c = make_cluster(3, ["storage.memtable_size_bytes=65536"])
    s = c.session()
    create_table(c, s, "ryw", 3)
    ins = s.prepare("INSERT INTO ryw.t (k, v) VALUES (?, ?)")
    ins.consistency_level = CL.TWO
    sel = s.prepare("SELECT v FROM ryw.t WHERE k = ?")
    sel.consistency_level = CL.TWO
    latest = {}
    for round_ in range(3):
        for k in range(round_ * 500, round_ * 500 + 2000):
            v = f"{k}-{round_}-" + "x" * 200
            s.execute(ins, (k, v))
            latest[k] = v
            row = s.execute(sel, (k,)).one()
            assert row is not None and row.v == v, f"key {k} round {round_}: read {row}"
    got = read(s, "ryw", latest, CL.TWO)
    assert got == latest, diff(latest, got)
    # Every statement above was counted, with its latency, by the node that coordinated it.
    statements = 3 * 2000 * 2
    for name in ("mosaic_requests_total", "mosaic_request_seconds_count"):
        counted = sum(c.metric(node, name) for node in range(1, 4))
        assert counted >= statements, f"{name}: {counted} < {statements}"
    for node in range(1, 4):
        metrics = c.http(node, "/metrics")
        assert storage_bytes(metrics, "flush_written") > 0, metrics
        if layout == "decoupled":
            # Redundant copies went through the two-layer log and its splits.
            assert storage_bytes(metrics, "split_written") > 0, metrics
