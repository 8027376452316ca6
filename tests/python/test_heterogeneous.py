"""Heterogeneous replicas (`layout = {'class': 'heterogeneous', 'replica_orders': …}`) as a
client and an operator see them, on one shared 3-node cluster at RF 3.

Every table here has clustering columns (a, b, c) — declared positions 0, 1, 2 — and most
have the orders `(b, c, a), (c, a, b)`: replica index 0 (a range's primary) sorts rows by
b, index 1 by c, index 2 keeps the declared (a, b, c). A node's `/stats` lists, per table,
the tree of each replica index it holds (`replica_trees`: index, order as declared
positions, reads, rows scanned) and the re-layouts under way (`relayouts`).

What is checked: answers equal a uniform table's for every query shape at ONE, QUORUM and
ALL; a read goes to the replica whose order suits it, and to another when that one is
dead; a wiped node replacing itself gets its rows back by streaming, in its own order;
ALTER TABLE and `mosaic hr optimize --apply` re-lay out replicas online; `auto` re-chooses the orders from
the queries seen; bad layouts are refused naming the problem.

Random data comes from one seed ($MOSAIC_HR_SEED, else random), printed in every data
assertion's message so a failure replays.
"""
import json
import os
import random
import re
import threading
import time

import pytest
from cassandra import ConsistencyLevel as CL
from cassandra.concurrent import execute_concurrent, execute_concurrent_with_args
from cassandra.protocol import ConfigurationException
from cassandra.query import BatchStatement, BatchType, SimpleStatement

from conftest import MosaicCluster, wait_until

SEED = int(os.environ.get("MOSAIC_HR_SEED", random.randrange(2**32)))
ORDERS = "(b, c, a), (c, a, b)"
# Replica index -> its order as declared positions (a = 0, b = 1, c = 2).
POSITIONS = {0: [1, 2, 0], 1: [2, 0, 1], 2: [0, 1, 2]}
A_VALUES, B_VALUES, C_VALUES = range(10), [f"b{i}" for i in range(10)], range(20)


@pytest.fixture(scope="module")
def c():
    # The auto pass every second: it only touches tables with 'auto': 'true'.
    cluster = MosaicCluster(3, ("cluster.hr_auto_interval_ms=1000",))
    try:
        cluster.up()
        yield cluster
    finally:
        cluster.close()


@pytest.fixture(scope="module")
def s(c):
    return c.session()


@pytest.fixture(autouse=True)
def drivers_reach_every_node(c):
    """Each test starts with every driver answering through every node: the tests before
    restart and wipe nodes, and CI saw the module's session fail its next request with
    closed connections to all three nodes, every node up and serving."""
    c.wait_drivers_up()


def hetero(orders=ORDERS, extra=""):
    return f"layout = {{'class': 'heterogeneous', 'replica_orders': '{orders}'{extra}}}"


def create(c, s, ks, tables):
    """Keyspace `ks` at RF 3 with `tables` ({name: WITH clause}), all with the key
    (p, a, b, c), a static s and a value v."""
    s.execute(f"CREATE KEYSPACE {ks} WITH replication = {{'class': 'SimpleStrategy', 'replication_factor': 3}}")
    for name, with_clause in tables.items():
        s.execute(f"CREATE TABLE {ks}.{name} (p int, a int, b text, c int, s int static, v text, "
                  f"PRIMARY KEY (p, a, b, c)) WITH {with_clause}")
    c.wait_schema_agreement()


def table_stats(c, i, table):
    """Node i's `/stats` entry of `table` (ks.t): (replica_trees by index, relayouts)."""
    for t in json.loads(c.http(i, "/stats"))["tables"]:
        if t["table"] == table:
            stats = t["stats"]
            return {tr["index"]: tr for tr in stats.get("replica_trees", [])}, stats.get("relayouts", [])
    raise AssertionError(f"node{i} has no stats for {table}")


def hr_metric(c, i, name, table, replica):
    """Prometheus sample `name{table, replica}` of node i (0 if absent)."""
    for line in c.http(i, "/metrics").splitlines():
        if line.startswith(name + "{") and f'table="{table}"' in line and f'replica="{replica}"' in line:
            return float(line.rsplit(" ", 1)[1])
    return 0.0


def layout_text(s, ks, table):
    row = s.execute("SELECT extensions FROM system_schema.tables WHERE keyspace_name = %s AND table_name = %s",
                    (ks, table)).one()
    return row.extensions["mosaic.layout"].decode()


def replica_orders_of(s, ks, table):
    """The table's replica_orders, as lists of column names."""
    m = re.search(r"'replica_orders': '([^']*)'", layout_text(s, ks, table))
    return [o.replace(" ", "").split(",") for o in re.findall(r"\(([^)]*)\)", m.group(1))] if m else []


def rows(s, query, cl=CL.ONE, fetch_size=5000):
    return [tuple(r) for r in s.execute(SimpleStatement(query, consistency_level=cl, fetch_size=fetch_size))]


class Model:
    """What a table should hold: rows {(p, a, b, c): v} and statics {p: s}."""

    def __init__(self, c_desc=False):
        self.rows, self.statics, self.c_desc = {}, {}, c_desc

    def partition(self, p):
        """`SELECT a, b, c, v … WHERE p = ?` in the declared order (a, b, c; c DESC if so
        declared)."""
        sign = -1 if self.c_desc else 1
        keys = sorted((k for k in self.rows if k[0] == p), key=lambda k: (k[1], k[2], sign * k[3]))
        return [(a, b, cc, self.rows[(p, a, b, cc)]) for (_, a, b, cc) in keys]


def write_all(s, statement, args):
    prepared = s.prepare(statement)
    prepared.consistency_level = CL.ALL
    for ok, result in execute_concurrent_with_args(s, prepared, args, concurrency=32, raise_on_first_error=True):
        assert ok, result


def load(s, tables, rng, partitions, rows_per_partition, model, deletes=True):
    """Random inserts into every table of `tables` alike (at ALL), then row deletes, range
    deletes (`p = ? AND a = ?`), re-inserts into a deleted range and statics; `model`
    follows."""
    inserts = []
    for p in partitions:
        for _ in range(rows_per_partition):
            key = (p, rng.choice(A_VALUES), rng.choice(B_VALUES), rng.choice(C_VALUES))
            inserts.append((*key, f"v{rng.randrange(10**6)}"))
    for t in tables:
        write_all(s, f"INSERT INTO {t} (p, a, b, c, v) VALUES (?, ?, ?, ?, ?)", inserts)
    for p, a, b, cc, v in inserts:
        model.rows[(p, a, b, cc)] = v
    if not deletes:
        return
    gone = rng.sample(sorted(model.rows), len(model.rows) // 10)
    ranges = [(p, rng.choice(A_VALUES)) for p in partitions]
    again = [(p, a, rng.choice(B_VALUES), rng.choice(C_VALUES), f"again{i}") for i, (p, a) in enumerate(ranges)]
    statics = [(rng.randrange(100), p) for p in partitions if rng.random() < 0.7]
    for t in tables:
        write_all(s, f"DELETE FROM {t} WHERE p = ? AND a = ? AND b = ? AND c = ?", gone)
        write_all(s, f"DELETE FROM {t} WHERE p = ? AND a = ?", ranges)
        write_all(s, f"INSERT INTO {t} (p, a, b, c, v) VALUES (?, ?, ?, ?, ?)", again)
        write_all(s, f"UPDATE {t} SET s = ? WHERE p = ?", statics)
    for k in gone:
        del model.rows[k]
    for p, a in ranges:
        for k in [k for k in model.rows if k[:2] == (p, a)]:
            del model.rows[k]
    for p, a, b, cc, v in again:
        model.rows[(p, a, b, cc)] = v
    for value, p in statics:
        model.statics[p] = value


def routing_shapes(ks, t):
    """Query shapes whose restrictions match one replica index's order each: {index:
    make_query(value)}."""
    return {
        0: lambda b: f"SELECT a, b, c, v FROM {ks}.{t} WHERE p = 0 AND b = '{b}' ALLOW FILTERING",
        1: lambda cc: f"SELECT a, b, c, v FROM {ks}.{t} WHERE p = 0 AND c = {cc} ALLOW FILTERING",
        2: lambda a: f"SELECT a, b, c, v FROM {ks}.{t} WHERE p = 0 AND a = {a}",
    }


def expected_for(model, index, value):
    column = {0: 1, 1: 2, 2: 0}[index]  # b, c, a: the column shape `index` restricts
    return [r for r in model.partition(0) if r[column] == value]


SHAPE_VALUES = {0: B_VALUES, 1: C_VALUES, 2: A_VALUES}


# -- 1. the same answers as a uniform table ---------------------------------------------------

def test_answers_equal_a_uniform_tables_for_every_query_shape_and_consistency(c, s):
    # c is declared DESC, so that ranges on it, ORDER BY and paging run against a
    # descending column in every replica's order.
    desc = "CLUSTERING ORDER BY (a ASC, b ASC, c DESC) AND "
    create(c, s, "eq", {"h": desc + hetero(), "u": desc + "layout = 'uniform'"})
    rng = random.Random(SEED)
    model = Model(c_desc=True)
    partitions = range(8)
    load(s, ["eq.h", "eq.u"], rng, partitions, 250, model)
    p_in = "1, 3, 6"
    per_partition = [
        "SELECT * FROM {t} WHERE p = {p}",
        "SELECT a, b, c, v FROM {t} WHERE p = {p} AND a = 3",
        "SELECT * FROM {t} WHERE p = {p} AND a = 2 AND b = 'b4'",
        "SELECT * FROM {t} WHERE p = {p} AND a = 2 AND b = 'b4' AND c > 5 AND c <= 15",
        "SELECT * FROM {t} WHERE p = {p} AND a = 5 AND b = 'b1' AND c IN (17, 2, 9, 11)",
        "SELECT * FROM {t} WHERE p = {p} AND a >= 4 AND a < 7",
        "SELECT * FROM {t} WHERE p = {p} AND a IN (1, 8, 4)",
        "SELECT * FROM {t} WHERE p = {p} AND a = 6 AND b > 'b3'",
        "SELECT * FROM {t} WHERE p = {p} AND a = 7 AND b IN ('b2', 'b9', 'b0')",
        "SELECT * FROM {t} WHERE p = {p} AND (a, b) >= (4, 'b6') AND (a, b) < (8, 'b2')",
        "SELECT * FROM {t} WHERE p = {p} AND b = 'b3' ALLOW FILTERING",
        "SELECT * FROM {t} WHERE p = {p} AND c = 7 ALLOW FILTERING",
        "SELECT * FROM {t} WHERE p = {p} AND c >= 4 AND c < 12 ALLOW FILTERING",
        "SELECT * FROM {t} WHERE p = {p} AND b = 'b5' AND c < 10 ALLOW FILTERING",
        "SELECT * FROM {t} WHERE p = {p} AND a = 3 AND c > 14 ALLOW FILTERING",
        "SELECT * FROM {t} WHERE p = {p} AND a > 6 AND b <= 'b4' ALLOW FILTERING",
        "SELECT * FROM {t} WHERE p = {p} AND b IN ('b1', 'b8') ALLOW FILTERING",
        "SELECT * FROM {t} WHERE p = {p} AND v > 'v5' ALLOW FILTERING",
        "SELECT * FROM {t} WHERE p = {p} LIMIT 7",
        "SELECT * FROM {t} WHERE p = {p} AND c = 3 LIMIT 4 ALLOW FILTERING",
        "SELECT * FROM {t} WHERE p = {p} ORDER BY a DESC",
        "SELECT * FROM {t} WHERE p = {p} AND a = 4 ORDER BY a DESC, b DESC, c ASC",
        "SELECT * FROM {t} WHERE p = {p} AND b = 'b7' ORDER BY a DESC LIMIT 9 ALLOW FILTERING",
        "SELECT * FROM {t} WHERE p = {p} AND a = 1 AND b = 'b1' AND c < 8 ORDER BY a DESC",
        "SELECT count(*) FROM {t} WHERE p = {p} AND c = 0 ALLOW FILTERING",
        "SELECT * FROM {t} WHERE p IN (" + p_in + ") AND c = 6 ALLOW FILTERING",
        "SELECT * FROM {t} WHERE p IN (" + p_in + ") AND a = 2",
    ]
    whole_table = [
        "SELECT * FROM {t}",
        "SELECT * FROM {t} WHERE b = 'b2' ALLOW FILTERING",
        "SELECT * FROM {t} WHERE c = 19 ALLOW FILTERING",
        "SELECT * FROM {t} WHERE a = 9 AND c < 3 ALLOW FILTERING",
        "SELECT * FROM {t} WHERE c > 10 AND b = 'b6' LIMIT 30 ALLOW FILTERING",
        "SELECT DISTINCT p, s FROM {t}",
        "SELECT count(*) FROM {t} WHERE b >= 'b8' ALLOW FILTERING",
    ]
    # (query, consistency, fetch size): every shape unpaged and in small pages at each
    # level, on two partitions at ONE (routed to one replica by its cost) and one at
    # QUORUM and ALL (data from one replica, digests from the others).
    plan = []
    for cl in (CL.ONE, CL.QUORUM, CL.ALL):
        for template in per_partition:
            for p in (0, 5) if cl == CL.ONE else (3,):
                plan += [(template.format(t="{t}", p=p), cl, fetch_size) for fetch_size in (5000, 7)]
        for query in whole_table:
            plan += [(query, cl, fetch_size) for fetch_size in ((5000, 97) if cl == CL.ONE else (97,))]
    nonempty = 0
    for query, cl, fetch_size in plan:
        want = rows(s, query.format(t="eq.u"), cl, fetch_size)
        got = rows(s, query.format(t="eq.h"), cl, fetch_size)
        assert got == want, (f"seed {SEED}, {cl}, fetch_size {fetch_size}: {query}\n"
                             f"uniform ({len(want)}): {want[:8]}…\nheterogeneous ({len(got)}): {got[:8]}…")
        nonempty += bool(want) and want != [(0,)]
    # Most shapes find rows: the comparison is not of empty answers.
    assert nonempty >= len(plan) * 0.8, (nonempty, len(plan))
    # And the uniform table, the reference, holds the model.
    for p in partitions:
        for t in ("eq.u", "eq.h"):
            got = rows(s, f"SELECT a, b, c, v FROM {t} WHERE p = {p}", CL.ALL)
            assert got == model.partition(p), f"seed {SEED}: {t} partition {p}"
            static = rows(s, f"SELECT DISTINCT s FROM {t} WHERE p = {p}", CL.ALL)
            assert static == [(model.statics.get(p),)], f"seed {SEED}: {t} partition {p} static"


# -- 2 and 3. routing: the replica whose order suits the read, or the next one -----------------

@pytest.fixture(scope="module")
def one_partition(c, s):
    """Table route.t with 2,000 rows in one partition (p = 0), so that each node holds one
    replica index of it: (model, {index: node})."""
    create(c, s, "route", {"t": hetero()})
    model = Model()
    # Every (a, b, c) once: each value of a or b matches 200 rows, each value of c 100.
    args = [(0, a, b, cc, f"v{a}.{b}.{cc}") for a in A_VALUES for b in B_VALUES for cc in C_VALUES]
    write_all(s, "INSERT INTO route.t (p, a, b, c, v) VALUES (?, ?, ?, ?, ?)", args)
    for p, a, b, cc, v in args:
        model.rows[(p, a, b, cc)] = v
    holder = {}
    for i in (1, 2, 3):
        trees, _ = table_stats(c, i, "route.t")
        assert len(trees) == 1, f"node{i} holds {trees}: one partition, one replica index per node"
        (index, tree), = trees.items()
        assert tree["order"] == POSITIONS[index], (i, tree)
        holder[index] = i
    assert sorted(holder) == [0, 1, 2], holder
    # Index 0 is the primary and the others follow in ring order: the driver's replicas of
    # the partition, in its order.
    for index, node in holder.items():
        assert replica_index(c, s, "route", 0, node) == index, (holder, s.cluster.metadata.get_replicas(
            "route", (0).to_bytes(4, "big", signed=True)))
    return model, holder


def replica_index(c, s, ks, p, node):
    """Node `node`'s replica index for partition p (its position in the driver's replicas)."""
    replicas = [h.address for h in s.cluster.metadata.get_replicas(ks, p.to_bytes(4, "big", signed=True))]
    return replicas.index(c.ip(node))


def snapshot(c, nodes):
    """{node: (reads, rows_scanned)} of each node's route.t tree."""
    out = {}
    for i in nodes:
        trees, _ = table_stats(c, i, "route.t")
        (tree,) = trees.values()
        out[i] = (tree["reads"], tree["rows_scanned"])
    return out


def test_reads_go_to_the_replica_whose_order_matches_their_restrictions(c, s, one_partition):
    model, holder = one_partition
    shapes = routing_shapes("route", "t")
    queries = 12
    for index, make in shapes.items():
        before = snapshot(c, (1, 2, 3))
        metric_before = hr_metric(c, holder[index], "mosaic_hr_reads_total", "route.t", index)
        values = SHAPE_VALUES[index]
        for n in range(queries):
            value = values[n % len(values)]
            got = rows(s, make(value))
            assert got == expected_for(model, index, value), make(value)
        after = snapshot(c, (1, 2, 3))
        reads = {i: after[i][0] - before[i][0] for i in after}
        scanned = {i: after[i][1] - before[i][1] for i in after}
        served_by = holder[index]
        matching = sum(len(expected_for(model, index, values[n % len(values)])) for n in range(queries))
        # One scan per query, or two when the read names clustering ranges (the partition's
        # head first, then its ranges: `select` module doc).
        assert queries <= reads[served_by] <= 2 * queries + 2, (index, holder, reads)
        assert all(reads[i] <= 1 for i in reads if i != served_by), (index, holder, reads)
        # Rows examined: about the matching rows (plus the partition's header and the ends
        # of the ranges), far from a scan of the 2,000-row partition per query.
        assert matching <= scanned[served_by] <= matching * 1.2 + 10 * queries, (index, matching, scanned)
        assert scanned[served_by] < queries * 2000 / 4, (index, scanned)
        metric_after = hr_metric(c, holder[index], "mosaic_hr_reads_total", "route.t", index)
        assert metric_after - metric_before >= queries, (index, metric_before, metric_after)


def test_a_dead_cheapest_replica_leaves_the_read_to_another(c, s, one_partition):
    model, holder = one_partition
    shapes = routing_shapes("route", "t")
    victim = holder[0]  # index 0, sorted by b: the cheapest for restrictions on b
    survivors = c.others(victim)
    session = c.session(only=survivors[0])
    try:
        c.kill(victim)
        c.wait_seen(survivors, [victim], up=False)
        before = snapshot(c, survivors)
        for n, b in enumerate(B_VALUES):
            query = SimpleStatement(shapes[0](b), consistency_level=CL.ONE)
            got = [tuple(r) for r in session.execute(query)]
            assert got == expected_for(model, 0, b), query
        after = snapshot(c, survivors)
        assert sum(after[i][0] - before[i][0] for i in survivors) >= len(B_VALUES), (before, after)
        # Reads of the other shapes still answer.
        for index in (1, 2):
            got = [tuple(r) for r in session.execute(SimpleStatement(shapes[index](3), consistency_level=CL.ONE))]
            assert got == expected_for(model, index, 3)
    finally:
        c.restart()


# -- 4. a wiped node comes back by replacing itself, in its own orders -----------------------

def test_a_wiped_node_replacing_itself_is_restored_into_trees_in_its_orders(c, s):
    create(c, s, "wipe", {"t": hetero()})
    rng = random.Random(SEED + 4)
    model = Model()
    partitions = range(40)
    load(s, ["wipe.t"], rng, partitions, 60, model)
    victim = 2
    # The replica indexes node 2 holds, by the driver's token map (index = position in the
    # partition's replica list, checked against Mosaic's by the routing tests).
    for node in (1, 2, 3):
        indexes = sorted({replica_index(c, s, "wipe", p, node) for p in partitions})
        trees, _ = table_stats(c, node, "wipe.t")
        assert sorted(trees) == indexes, (node, trees, indexes)
    indexes = sorted({replica_index(c, s, "wipe", p, victim) for p in partitions})
    c.wipe(victim)
    c.wait_seen(c.others(victim), [victim], up=False)
    # Replacing itself, it streams every range it replicates into trees in their orders:
    # a repair then finds nothing missing.
    c.replace_in_place(victim)
    c.wait_schema_agreement()
    out = c.mosaic("repair", "--host", c.admin(victim), "wipe", timeout=120).stdout
    assert re.search(r" 0 of \d+ leaves differed, 0 entries ", out), out

    trees, relayouts = table_stats(c, victim, "wipe.t")
    assert sorted(trees) == indexes and not relayouts, (trees, indexes, relayouts)
    for index, tree in trees.items():
        assert tree["order"] == POSITIONS[index], (index, tree)

    # Node 2 alone answers every shape from whichever of its trees holds the partition, so
    # each order answers each shape here, not only the cheapest (as routing would have it).
    shapes = [
        ("", lambda r: True, 7),
        ("AND b = 'b3' ALLOW FILTERING", lambda r: r[1] == "b3", 5000),
        ("AND c = 4 ALLOW FILTERING", lambda r: r[2] == 4, 5000),
        ("AND a = 2 AND c > 10 ALLOW FILTERING", lambda r: r[0] == 2 and r[2] > 10, 5000),
        ("AND b = 'b1' AND c >= 5 AND c < 15 ALLOW FILTERING", lambda r: r[1] == "b1" and 5 <= r[2] < 15, 3),
        ("AND a >= 3 AND a < 6", lambda r: 3 <= r[0] < 6, 4),
    ]
    session = c.session(only=victim)
    with c.alone(victim):
        for p in partitions:
            for where, keep, fetch_size in shapes:
                query = f"SELECT a, b, c, v FROM wipe.t WHERE p = {p} {where}"
                got = rows(session, query, CL.ONE, fetch_size)
                want = [r for r in model.partition(p) if keep(r)]
                index = replica_index(c, s, "wipe", p, victim)
                assert got == want, f"seed {SEED}: node{victim} alone (index {index}): {query}"
            query = f"SELECT a, b, c, v FROM wipe.t WHERE p = {p} ORDER BY a DESC"
            got = rows(session, query, CL.ONE, fetch_size=6)
            assert got == model.partition(p)[::-1], f"seed {SEED}: node{victim} alone: {query}"
            got = rows(session, f"SELECT DISTINCT s FROM wipe.t WHERE p = {p}", CL.ONE)
            assert got == [(model.statics.get(p),)], p

    # Replicas in three orders now hash alike, each walking its trees in their own order
    # (a Merkle leaf is the sum of its entries' hashes): a second repair finds nothing to
    # stream and reads no tree through the sorted path client reads take.
    def tree_reads():
        return {i: {index: tree["reads"] for index, tree in table_stats(c, i, "wipe.t")[0].items()} for i in (1, 2, 3)}

    before = tree_reads()
    out = c.mosaic("repair", "--host", c.admin(1), "wipe", timeout=120).stdout
    assert re.search(r" 0 of \d+ leaves differed, 0 entries ", out), out
    assert tree_reads() == before, out


# -- 5. re-layout: ALTER TABLE, and mosaic hr optimize --apply --------------------------------

def wait_relaid_out(c, table, expected):
    """Waits until no node has a re-layout of `table` under way and every node's tree of
    each index in `expected` ({index: positions}) is in that order."""

    def done():
        for i in (1, 2, 3):
            trees, relayouts = table_stats(c, i, table)
            if relayouts or any(tree["order"] != expected.get(index, tree["order"]) for index, tree in trees.items()):
                return False
        return True

    wait_until(f"{table} re-laid out into {expected} on every node", done, timeout=60, interval=0.05)


def repaired_entries(c, ks):
    out = c.mosaic("repair", "--host", c.admin(1), ks, timeout=120).stdout
    m = re.search(r"(\d+) entries \(", out)
    assert m, out
    return int(m.group(1)), out


def load_every_key(s, table, partitions, rng, model):
    """Every (a, b, c) of each partition of `partitions` (2,000 rows each), at ALL, in
    unlogged batches of one (p, a) each."""
    insert = s.prepare(f"INSERT INTO {table} (p, a, b, c, v) VALUES (?, ?, ?, ?, ?)")
    batches = []
    for p in partitions:
        for a in A_VALUES:
            batch = BatchStatement(BatchType.UNLOGGED, consistency_level=CL.ALL)
            for b in B_VALUES:
                for cc in C_VALUES:
                    v = f"v{rng.randrange(10**6)}"
                    batch.add(insert, (p, a, b, cc, v))
                    model.rows[(p, a, b, cc)] = v
            batches.append((batch, ()))
    for ok, result in execute_concurrent(s, batches, concurrency=8, raise_on_first_error=True):
        assert ok, result


def test_alter_re_lays_out_online_with_reads_and_writes_going_on(c, s):
    create(c, s, "relay", {"t": hetero()})
    rng = random.Random(SEED + 5)
    model = Model()
    steady, busy = range(0, 5), range(5, 9)  # read throughout / written during the re-layout
    load_every_key(s, "relay.t", list(steady) + list(busy), rng, model)
    frozen = {p: model.partition(p) for p in steady}
    # Every index changes order: each node copies every row it holds.
    new_orders = "(c, b, a), (a, c, b), (b, a, c)"
    new_positions = {0: [2, 1, 0], 1: [0, 2, 1], 2: [1, 0, 2]}

    stop, failures, done = threading.Event(), [], {"reads": 0, "writes": 0}
    queries = [(f"SELECT a, b, c, v FROM relay.t WHERE p = {p}", frozen[p]) for p in steady]
    queries += [(f"SELECT a, b, c, v FROM relay.t WHERE p = {p} AND b = 'b3' ALLOW FILTERING",
                 [r for r in frozen[p] if r[1] == "b3"]) for p in steady]
    queries += [(f"SELECT a, b, c, v FROM relay.t WHERE p = {p} AND c = 5 ALLOW FILTERING",
                 [r for r in frozen[p] if r[2] == 5]) for p in steady]
    queries += [(f"SELECT a, b, c, v FROM relay.t WHERE p = {p} AND a = 7 AND c > 12 ALLOW FILTERING",
                 [r for r in frozen[p] if r[0] == 7 and r[2] > 12]) for p in steady]
    rng.shuffle(queries)

    def reader():
        n = 0
        while not stop.is_set():
            query, want = queries[n % len(queries)]
            n += 1
            try:
                got = rows(s, query, CL.ONE, fetch_size=300)
            except Exception as e:  # noqa: BLE001 - reported below with the query
                failures.append((query, repr(e)))
                continue
            if got != want:
                failures.append((query, f"{len(got)} rows, {len(want)} expected"))
            done["reads"] += 1

    def writer():
        # One write at a time at ALL, each in the model once acknowledged: new values,
        # row deletes and range deletes in the busy partitions.
        wrng = random.Random(SEED + 55)
        insert = s.prepare("INSERT INTO relay.t (p, a, b, c, v) VALUES (?, ?, ?, ?, ?)")
        delete_row = s.prepare("DELETE FROM relay.t WHERE p = ? AND a = ? AND b = ? AND c = ?")
        delete_range = s.prepare("DELETE FROM relay.t WHERE p = ? AND a = ?")
        for st in (insert, delete_row, delete_range):
            st.consistency_level = CL.ALL
        while not stop.is_set():
            p, a, b, cc = wrng.choice(busy), wrng.choice(A_VALUES), wrng.choice(B_VALUES), wrng.choice(C_VALUES)
            op = wrng.random()
            try:
                if op < 0.7:
                    v = f"new{wrng.randrange(10**6)}"
                    s.execute(insert, (p, a, b, cc, v))
                    model.rows[(p, a, b, cc)] = v
                elif op < 0.98:
                    s.execute(delete_row, (p, a, b, cc))
                    model.rows.pop((p, a, b, cc), None)
                else:
                    s.execute(delete_range, (p, a))
                    for k in [k for k in model.rows if k[:2] == (p, a)]:
                        del model.rows[k]
            except Exception as e:  # noqa: BLE001 - reported below
                failures.append(("write", repr(e)))
                return
            done["writes"] += 1

    threads = [threading.Thread(target=f, daemon=True) for f in (reader, writer)]
    for thread in threads:
        thread.start()
    progress = {}
    try:
        wait_until("reads and writes to start", lambda: (done["reads"] >= 2 and done["writes"] >= 2) or failures,
                   timeout=30)
        progress["before"] = dict(done)
        altered = time.monotonic()
        s.execute(f"ALTER TABLE relay.t WITH layout = {{'class': 'heterogeneous', 'replica_orders': '{new_orders}'}}")

        def finished():
            states = [table_stats(c, i, "relay.t") for i in (1, 2, 3)]
            if any(r for _, r in states):
                progress.setdefault("re-layout seen under way", dict(done, at=time.monotonic() - altered))
            return all(not r and all(t["order"] == new_positions[ix] for ix, t in trees.items()) for trees, r in states)

        wait_until("the re-layout of relay.t to finish on every node", finished, timeout=60, interval=0.01)
        progress["finished"] = dict(done, at=time.monotonic() - altered)
        # More reads and writes after the switch.
        target = {k: v + 5 for k, v in done.items()}
        wait_until("reads and writes after the re-layout",
                   lambda: all(done[k] >= target[k] for k in done) or failures, timeout=30)
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=30)
    # `progress`: the reads and writes done at each point, and seconds since the ALTER. A
    # node copies about 18,000 rows per re-layout, which takes over a second in a debug
    # build: the stats show it under way.
    assert "re-layout seen under way" in progress, progress
    assert not failures, f"seed {SEED}: reads around the re-layout {progress}: {failures[:5]} ({len(failures)} failed)"

    assert f"'replica_orders': '{new_orders}'" in layout_text(s, "relay", "t")
    for p in list(steady) + list(busy):
        for cl in (CL.ONE, CL.ALL):
            got = rows(s, f"SELECT a, b, c, v FROM relay.t WHERE p = {p}", cl, fetch_size=500)
            assert got == model.partition(p), f"seed {SEED}: partition {p} at {cl} after the re-layout {progress}"
        got = rows(s, f"SELECT a, b, c, v FROM relay.t WHERE p = {p} AND c = 9 AND b > 'b4' ALLOW FILTERING")
        assert got == [r for r in model.partition(p) if r[2] == 9 and r[1] > "b4"], p
    # Every replica holds the same entries: the copies lost nothing, resurrected nothing.
    entries, out = repaired_entries(c, "relay")
    assert entries == 0, f"seed {SEED} {progress}: {out}"


def test_hr_optimize_chooses_orders_for_a_workload_and_apply_re_lays_out(c, s, tmp_path):
    create(c, s, "opt", {"t": "layout = 'heterogeneous'"})  # every replica in (a, b, c)
    rng = random.Random(SEED + 6)
    model = Model()
    load(s, ["opt.t"], rng, range(4), 500, model, deletes=False)
    workload = tmp_path / "workload.cql"
    workload.write_text(
        "# reads by c and by b, never by a\n"
        "10 SELECT * FROM opt.t WHERE p = 1 AND c = 5 ALLOW FILTERING;\n"
        "\n"
        "10 SELECT a, v FROM opt.t WHERE p = 2 AND b = 'b3' ALLOW FILTERING;\n"
        "1 SELECT * FROM opt.t WHERE p = 3 AND c > 12 AND c < 15 ALLOW FILTERING\n"
    )
    dry = c.mosaic("hr", "optimize", "opt.t", "--workload", str(workload), "--host", c.admin(1), "--seed", "7").stdout
    assert "not applied" in dry, dry
    assert replica_orders_of(s, "opt", "t") == [], layout_text(s, "opt", "t")

    out = c.mosaic("hr", "optimize", "opt.t", "--workload", str(workload), "--host", c.admin(1), "--seed", "7",
                   "--apply").stdout
    assert "applied" in out and "not applied" not in out, out
    c.wait_schema_agreement()
    orders = replica_orders_of(s, "opt", "t")
    assert len(orders) == 3 and all(sorted(o) == ["a", "b", "c"] for o in orders), (orders, out)
    firsts = {o[0] for o in orders}
    assert {"b", "c"} <= firsts, (orders, out)
    # The printed choice is the one applied, the dry run's (same seed, same statistics);
    # each query is answered by a replica whose order starts with the column it restricts.
    chosen = re.findall(r"replica \d: .*-> (\(.*?\))", out)
    assert [o.replace(" ", "")[1:-1].split(",") for o in chosen] == orders, (chosen, orders)
    assert re.findall(r"replica \d: .*-> (\(.*?\))", dry) == chosen, (dry, out)
    answered = re.findall(r"line\s+(\d+) \(weight [^)]*\):.* at replica (\d+)", out)
    answered_at = {int(line): int(replica) for line, replica in answered}
    assert sorted(answered_at) == [2, 4, 5], out
    assert [orders[answered_at[line]][0] for line in (2, 4, 5)] == ["c", "b", "c"], (answered_at, orders)

    positions = {i: ["abc".index(col) for col in o] for i, o in enumerate(orders)}
    wait_relaid_out(c, "opt.t", positions)
    for p in range(4):
        assert rows(s, f"SELECT a, b, c, v FROM opt.t WHERE p = {p}", CL.ALL) == model.partition(p), f"seed {SEED}: {p}"
        got = rows(s, f"SELECT a, b, c, v FROM opt.t WHERE p = {p} AND c = 5 ALLOW FILTERING")
        assert got == [r for r in model.partition(p) if r[2] == 5], f"seed {SEED}: {p}"


# -- 6. auto: the orders follow the workload ---------------------------------------------------

def test_auto_rechooses_orders_that_suit_the_queries_seen(c, s):
    # Every replica sorts by a or b first: reads restricting only c scan whole partitions.
    create(c, s, "auto", {"t": hetero("(a, b, c), (b, a, c)", ", 'auto': 'true'")})
    model = Model()
    args = [(0, a, b, cc, f"v{a}.{b}.{cc}") for a in A_VALUES for b in B_VALUES for cc in C_VALUES]
    write_all(s, "INSERT INTO auto.t (p, a, b, c, v) VALUES (?, ?, ?, ?, ?)", args)
    for p, a, b, cc, v in args:
        model.rows[(p, a, b, cc)] = v
    assert replica_orders_of(s, "auto", "t") == [["a", "b", "c"], ["b", "a", "c"]]
    # Node 1 (the lowest address) runs the auto pass over the queries it coordinated.
    s1 = c.session(only=1)
    for n in range(150):
        cc = n % 20
        got = rows(s1, f"SELECT a, b, c, v FROM auto.t WHERE p = 0 AND c = {cc} ALLOW FILTERING")
        assert got == [r for r in model.partition(0) if r[2] == cc]

    orders = wait_until("auto to choose an order that starts with c",
                        lambda: (o := replica_orders_of(s, "auto", "t")) and any(x[0] == "c" for x in o) and o,
                        timeout=30)
    assert all(sorted(o) == ["a", "b", "c"] for o in orders), orders
    assert "'auto': 'true'" in layout_text(s, "auto", "t"), layout_text(s, "auto", "t")
    c.wait_schema_agreement()
    positions = {i: ["abc".index(col) for col in o] for i, o in enumerate(orders)}
    wait_relaid_out(c, "auto.t", positions)
    got = rows(s, "SELECT a, b, c, v FROM auto.t WHERE p = 0", CL.ALL)
    assert got == model.partition(0)


# -- 7. DDL errors -----------------------------------------------------------------------------

def refused(s, statement, *fragments):
    with pytest.raises(ConfigurationException) as e:
        s.execute(statement)
    message = str(e.value)
    for fragment in fragments:
        assert fragment in message, (statement, message)
    return message


def test_bad_layouts_are_refused_naming_the_problem(c, s):
    create(c, s, "ddl", {"t": hetero(), "u": "layout = 'uniform'"})
    columns = "(p int, a int, b text, c int, v text, PRIMARY KEY (p, a, b, c))"
    refused(s, f"CREATE TABLE ddl.x {columns} WITH {hetero('(b, c, a), (c, x, b)')}",
            "replica_orders", "order 2", "names x, which is not a clustering column")
    refused(s, f"CREATE TABLE ddl.x {columns} WITH {hetero('(b, b, a)')}",
            "replica_orders", "order 1", "names b more than once")
    refused(s, f"CREATE TABLE ddl.x {columns} WITH {hetero('(a, b, c), (c, a)')}",
            "replica_orders", "order 2", "leaves out b")
    refused(s, f"CREATE TABLE ddl.x {columns} WITH {hetero('(a, b, c, v)')}",
            "replica_orders", "names v, which is not a clustering column")
    refused(s, "CREATE TABLE ddl.x (p int PRIMARY KEY, v text) WITH layout = 'heterogeneous'",
            "ddl.x", "no clustering columns")
    refused(s, "CREATE TABLE ddl.x (p int, q int, v text, PRIMARY KEY ((p, q))) WITH " + hetero(""),
            "no clustering columns")
    # No table was made by the refused statements.
    tables = s.execute("SELECT table_name FROM system_schema.tables WHERE keyspace_name = 'ddl'")
    assert sorted(r.table_name for r in tables) == ["t", "u"]

    # ALTER: another class either way is refused; bad orders are checked as by CREATE and
    # leave the table's orders as they were.
    refused(s, "ALTER TABLE ddl.t WITH layout = 'uniform'", "a table keeps its layout for life")
    refused(s, "ALTER TABLE ddl.t WITH layout = {'class': 'multi-lsm'}", "a table keeps its layout for life")
    refused(s, f"ALTER TABLE ddl.u WITH {hetero()}", "a table keeps its layout for life")
    refused(s, f"ALTER TABLE ddl.t WITH {hetero('(c, a, d)')}", "names d, which is not a clustering column")
    c.wait_schema_agreement()
    assert replica_orders_of(s, "ddl", "t") == [["b", "c", "a"], ["c", "a", "b"]]
    # Restating the layout is accepted.
    s.execute(f"ALTER TABLE ddl.t WITH {hetero()}")
    assert replica_orders_of(s, "ddl", "t") == [["b", "c", "a"], ["c", "a", "b"]]
