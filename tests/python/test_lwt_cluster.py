"""Lightweight transactions on a 3-node cluster, RF 3 (issue 16, "How it is checked"):
linearizability is checked, not assumed.

1. The checker (`linearizability.py`, Wing–Gong/Porcupine search with memoization on the
   set of linearized ops and the state) is itself tested on hand-made histories, including
   non-linearizable ones it must reject, and against a brute-force search on thousands of
   small random histories.
2. Sequential LWTs through each node as coordinator (a white-list driver per node): one of
   two INSERT … IF NOT EXISTS applies, a wrong UPDATE … IF answers [applied] = False with
   the current value, SERIAL reads see the last applied value, LWTs work with one node of
   three down and answer Unavailable at SERIAL with two down.
3. Concurrent clients doing compare-and-set, insert-if-not-exists, delete-if and SERIAL
   reads on a few registers (tables of each replica layout) while a nemesis kills -9 and
   restarts nodes and pauses others with SIGSTOP; the history of every register is checked
   for linearizability, every request that failed or timed out counting as an op whose
   outcome is unknown (it may take effect at any point after its invocation, or never).

Partitions: this machine has neither iptables/nft nor tc's drop action (no act_gact) or
netem, and a node's outgoing internode connections are not bound to its own address, so an
address-based rule could not cut one node off; node pauses (SIGSTOP, which cuts a node off
from peers and clients alike, then resumes it with whatever it had in flight) stand in for
them, as issue 16 allows.

MOSAIC_LWT_SEED=N replays a run's choices of nodes and ops (not its timing);
MOSAIC_LWT_SECONDS sets how long the clients run (24 by default).
"""
import contextlib
import itertools
import os
import random
import re
import signal
import tempfile
import threading
import time

import pytest
from cassandra import (ConsistencyLevel, CoordinationFailure, OperationTimedOut, ReadTimeout, Unavailable, WriteTimeout,
                       WriteType)
from cassandra.cluster import NoHostAvailable
from cassandra.connection import ConnectionException
from cassandra.policies import FallthroughRetryPolicy
from cassandra.protocol import OverloadedErrorMessage
from cassandra.query import SimpleStatement, dict_factory

from conftest import MosaicCluster, process_runs_config, wait_until
from linearizability import Op, check, check_brute_force, dump

CL = ConsistencyLevel

# =============================================================================================
# 1. The checker
# =============================================================================================


def R(call, ret, value, client=0):
    return Op("read", None, call, ret, value, client)


def CAS(call, ret, expected, new, applied, current=None, client=0):
    return Op("cas", (expected, new), call, ret, (applied, current), client)


def INS(call, ret, new, applied, current=None, client=0):
    return Op("insert", new, call, ret, (applied, current), client)


def DEL(call, ret, expected, applied, current=None, client=0):
    return Op("delete", expected, call, ret, (applied, current), client)


def UNKNOWN(op):
    op.ret, op.out, op.error = None, None, "timeout"
    return op


def linearizable(ops):
    result = check(ops)
    assert not result.inconclusive, result.explain()
    # Every verdict on a small history agrees with trying every order.
    if len(ops) <= 7:
        assert check_brute_force(ops) == result.ok, [op.describe() for op in ops]
    return result.ok


def test_checker_accepts_sequential_and_overlapping_histories():
    assert linearizable([])
    assert linearizable([R(0, 1, None), INS(2, 3, 1, True), R(4, 5, 1), CAS(6, 7, 1, 2, True), R(8, 9, 2),
                         CAS(10, 11, 1, 3, False, 2), INS(12, 13, 4, False, 2), DEL(14, 15, 2, True),
                         R(16, 17, None), CAS(18, 19, 2, 5, False, None), INS(20, 21, 6, True)])
    # A read overlapping a write may see either side of it, and two overlapping reads may
    # even see it in "reverse" real-time order of their returns as long as some order works.
    assert linearizable([INS(0, 1, 1, True), CAS(2, 10, 1, 2, True), R(3, 4, 1), R(5, 6, 2), R(7, 12, 2)])
    assert linearizable([INS(0, 1, 1, True), CAS(2, 10, 1, 2, True), R(3, 9, 2), R(4, 8, 1)])
    # Two overlapping inserts: the one that lost reports the winner's value.
    assert linearizable([INS(0, 5, 1, False, 2, client=1), INS(1, 4, 2, True, client=2), R(6, 7, 2)])


def test_checker_rejects_stale_reads_lost_updates_and_invented_values():
    # A read invoked after a CAS returned sees the old value.
    assert not linearizable([INS(0, 1, 1, True), CAS(2, 3, 1, 2, True), R(4, 5, 1)])
    # Two CAS from the same expected value both applied (a lost update).
    assert not linearizable([INS(0, 1, 1, True), CAS(2, 5, 1, 2, True), CAS(3, 6, 1, 3, True, client=1)])
    # Two inserts of the same key both applied.
    assert not linearizable([INS(0, 2, 1, True), INS(1, 3, 2, True, client=1)])
    # A not-applied answer showing a value no one wrote.
    assert not linearizable([INS(0, 1, 1, True), CAS(2, 3, 7, 8, False, 9)])
    # A not-applied CAS whose expected value was the current one.
    assert not linearizable([INS(0, 1, 1, True), CAS(2, 3, 1, 8, False, 1)])
    # A value comes back after it was overwritten (values are unique, so it cannot).
    assert not linearizable([INS(0, 1, 1, True), CAS(2, 6, 1, 2, True), R(3, 4, 2), R(5, 7, 1, client=1)])
    # Reads ordered in real time see a write, then not: 2 then 1 with no write of 1 between.
    assert not linearizable([INS(0, 1, 1, True), CAS(2, 9, 1, 2, True), R(3, 4, 2), R(5, 6, 1)])
    # A delete that applied, then a read still seeing the row.
    assert not linearizable([INS(0, 1, 1, True), DEL(2, 3, 1, True), R(4, 5, 1)])
    # Reading a value before anyone invoked its write.
    assert not linearizable([R(0, 1, 5), INS(2, 3, 5, True)])


def test_checker_lets_unknown_ops_take_effect_late_or_never():
    # A timed-out insert that never took effect.
    assert linearizable([UNKNOWN(INS(0, 1, 1, True)), R(2, 3, None), INS(4, 5, 2, True), R(6, 7, 2)])
    # A timed-out insert that took effect, seen by a later read.
    assert linearizable([UNKNOWN(INS(0, 1, 1, True)), R(2, 3, 1)])
    # ... and long after its client gave up: first not seen, then seen.
    assert linearizable([UNKNOWN(INS(0, 1, 1, True)), R(2, 3, None), R(4, 5, None), R(10, 11, 1)])
    # A timed-out CAS in a chain of them: 1 -> ?2 -> 3 only works if ?2 applied.
    assert linearizable([INS(0, 1, 1, True), UNKNOWN(CAS(2, 3, 1, 2, True)), CAS(4, 5, 2, 3, True), R(6, 7, 3)])
    # Failed reads are dropped, whatever they "returned".
    assert linearizable([INS(0, 1, 1, True), UNKNOWN(R(2, 3, 99)), R(4, 5, 1)])
    # But an unknown op cannot take effect before it was invoked ...
    assert not linearizable([INS(0, 1, 1, True), R(2, 3, 2), UNKNOWN(CAS(4, 5, 1, 2, True))])
    # ... nor twice, nor once its expected value is gone.
    assert not linearizable([INS(0, 1, 1, True), UNKNOWN(CAS(2, 3, 1, 2, True)), R(4, 5, 2), CAS(6, 7, 2, 3, True),
                             R(8, 9, 2)])
    assert not linearizable([INS(0, 1, 1, True), CAS(2, 3, 1, 3, True), UNKNOWN(CAS(4, 5, 1, 2, True)), R(6, 7, 2)])


def test_checker_explains_a_rejection_by_the_op_it_could_not_place():
    ops = [INS(0, 1, 1, True), CAS(2, 3, 1, 2, True, client=1), R(4, 5, 1, client=2)]
    result = check(ops)
    assert not result.ok and not result.inconclusive
    text = result.explain()
    assert ops[result.stuck] is ops[2], text
    assert "c2 read" in text and "-> 1" in text, text


def _random_linearizable_history(rng, n_ops, clients, unknown_rate):
    """A history produced by a real register executing ops atomically at random moments
    within their intervals: linearizable by construction. An op whose client gave up
    (`unknown_rate`) either took effect at its moment or never did."""
    values = itertools.count(1)
    written = []
    t = 0.0
    free_at = [0.0] * clients
    planned = []  # (linearization point, op, takes effect)
    for _ in range(n_ops):
        c = rng.randrange(clients)
        call = max(t, free_at[c]) + rng.random()
        lin = call + rng.random() * 3
        ret = lin + rng.random() * 3
        free_at[c] = ret
        t = call
        kind = rng.choice(["read", "cas", "cas", "insert", "delete"])
        if kind == "read":
            arg = None
        elif kind == "cas":
            arg = (rng.choice(written or [0]), next(values))
            written.append(arg[1])
        elif kind == "insert":
            arg = next(values)
            written.append(arg)
        else:
            arg = rng.choice(written or [0])
        op = Op(kind, arg, call, ret, None, c)
        unknown = rng.random() < unknown_rate
        if unknown:
            op.ret, op.error = None, "timeout"
        planned.append((lin, op, not unknown or rng.random() < 0.5))
    state = None
    for _, op, effect in sorted(planned, key=lambda p: p[0]):
        if not effect:
            continue
        if op.kind == "read":
            out, new = state, state
        elif op.kind == "cas":
            applied = state is not None and state == op.arg[0]
            out, new = (applied, None if applied else state), op.arg[1] if applied else state
        elif op.kind == "insert":
            applied = state is None
            out, new = (applied, None if applied else state), op.arg if applied else state
        else:
            applied = state is not None and state == op.arg
            out, new = (applied, None if applied else state), None if applied else state
        if op.known:
            op.out = out
        state = new
    return sorted((op for _, op, _ in planned), key=lambda op: op.call)


def _mutate(rng, ops):
    """One small change to a history's answers or times (the result may or may not be
    linearizable)."""
    ops = [Op(o.kind, o.arg, o.call, o.ret, o.out, o.client, o.error) for o in ops]
    known = [o for o in ops if o.known]
    if not known:
        return ops
    o = rng.choice(known)
    choice = rng.randrange(3)
    if choice == 0 and o.kind == "read":
        o.out = rng.choice([None, 1, 2, 3, 4])
    elif choice == 0:
        o.out = (not o.out[0], o.out[1] if o.out[0] else rng.choice([None, 1, 2, 3]))
    elif choice == 1:
        o.ret = o.call + (o.ret - o.call) * rng.random() * 0.3  # shorter: fewer orders allowed
    else:
        o.ret, o.error = None, "timeout"
    return ops


def test_checker_agrees_with_brute_force_on_random_small_histories():
    rng = random.Random(16)
    verdicts = {True: 0, False: 0}
    for _ in range(3000):
        ops = _random_linearizable_history(rng, rng.randrange(1, 7), rng.randrange(1, 4), 0.2)
        assert check(ops).ok, "\n".join(op.describe() for op in ops)
        assert check_brute_force(ops)
        bad = _mutate(rng, ops)
        result = check(bad)
        assert result.ok == check_brute_force(bad), "\n".join(op.describe() for op in bad)
        verdicts[result.ok] += 1
    # Both verdicts were exercised many times.
    assert min(verdicts.values()) > 300, verdicts


def test_checker_is_fast_on_long_concurrent_histories():
    rng = random.Random(7)
    ops = _random_linearizable_history(rng, 3000, 8, 0.05)
    t0 = time.monotonic()
    result = check(ops)
    assert result.ok and not result.inconclusive, result.explain()
    assert time.monotonic() - t0 < 20
    # The same history with one read made stale is rejected, just as fast.
    reads = [i for i, op in enumerate(ops) if op.kind == "read" and op.known and op.out is not None]
    bad = list(ops)
    i = reads[len(reads) // 2]
    bad[i] = Op("read", None, ops[i].call, ops[i].ret, -1, ops[i].client)
    t0 = time.monotonic()
    result = check(bad)
    assert not result.ok and not result.inconclusive and result.stuck is not None
    assert time.monotonic() - t0 < 20


def test_checker_gives_up_rather_than_passing():
    rng = random.Random(3)
    ops = _random_linearizable_history(rng, 200, 6, 0.1)
    result = check(ops, max_steps=10)
    assert not result.ok and result.inconclusive
    assert "INCONCLUSIVE" in result.explain()


# =============================================================================================
# Cluster helpers
# =============================================================================================

SETTINGS = (
    # Small memtables and log bounds: flushes, compactions, splits and merge-sorts run in
    # the multi-lsm and decoupled tables while the clients work.
    "storage.memtable_size_bytes=65536",
    "storage.split_segments=2",
    "storage.sorted_runs_max=3",
)
LAYOUTS = ("uniform", "multi-lsm", "decoupled")


def table_name(layout):
    return "t_" + layout.replace("-", "_")


def create_tables(c, s, ks):
    s.execute(f"CREATE KEYSPACE {ks} WITH replication = {{'class': 'SimpleStrategy', 'replication_factor': 3}}")
    for layout in LAYOUTS:
        s.execute(f"CREATE TABLE {ks}.{table_name(layout)} (k int PRIMARY KEY, v int) WITH layout = '{layout}'")
    c.wait_schema_agreement()


def stmt(cql, cl=CL.QUORUM):
    """A statement whose failures reach the test as they are: no driver retry of any kind
    (a retried CAS could apply twice or report the first attempt's effect as not applied)."""
    return SimpleStatement(cql, consistency_level=cl, serial_consistency_level=CL.SERIAL,
                           retry_policy=FallthroughRetryPolicy())


def lwt_session(c, **kwargs):
    s = c.session(**kwargs)
    s.row_factory = dict_factory
    return s


def lwt_answer(rows):
    """(applied, current v or None) of an LWT's result: Cassandra's [applied] column, and
    when not applied the row's columns (none when there is no row)."""
    rows = list(rows)
    assert len(rows) == 1, rows
    row = rows[0]
    assert "[applied]" in row, row
    return bool(row["[applied]"]), row.get("v")


def serial_read(s, ks, table, k):
    rows = list(s.execute(stmt(f"SELECT v FROM {ks}.{table} WHERE k = {k}", CL.SERIAL)))
    assert len(rows) <= 1, rows
    return rows[0]["v"] if rows else None


# =============================================================================================
# 2. Sequential LWTs through each coordinator
# =============================================================================================


@pytest.fixture()
def lwt_cluster():
    c = MosaicCluster(3, SETTINGS)
    try:
        c.up()
        yield c
    finally:
        c.close()


def test_sequential_lwts_through_each_coordinator_and_with_nodes_down(lwt_cluster):
    c = lwt_cluster
    s = {i: lwt_session(c, only=i) for i in (1, 2, 3)}
    create_tables(c, s[1], "seq")
    t = "seq.t_uniform"

    # Two clients through different coordinators insert the same key: exactly one applies,
    # the other is told the row that is there.
    first = s[1].execute(stmt(f"INSERT INTO {t} (k, v) VALUES (1, 10) IF NOT EXISTS"))
    assert first.was_applied and lwt_answer(first) == (True, None)
    second = s[2].execute(stmt(f"INSERT INTO {t} (k, v) VALUES (1, 20) IF NOT EXISTS"))
    assert not second.was_applied
    rows = list(second)
    assert rows == [{"[applied]": False, "k": 1, "v": 10}], rows
    for i in (1, 2, 3):
        assert serial_read(s[i], "seq", "t_uniform", 1) == 10

    # The same race, concurrently, on fresh keys: one of the two applies, and the other
    # saw the winner's value (or timed out, contended: then the row holds one of the two).
    for k in range(100, 130):
        futures = [s[1].execute_async(stmt(f"INSERT INTO {t} (k, v) VALUES ({k}, {k * 10 + 1}) IF NOT EXISTS")),
                   s[2].execute_async(stmt(f"INSERT INTO {t} (k, v) VALUES ({k}, {k * 10 + 2}) IF NOT EXISTS"))]
        answers = []
        for f in futures:
            try:
                answers.append(lwt_answer(f.result()))
            except WriteTimeout as e:
                assert e.write_type == WriteType.CAS, e
                answers.append(None)
        value = serial_read(s[3], "seq", "t_uniform", k)
        assert value in (k * 10 + 1, k * 10 + 2), (k, answers, value)
        winner = 1 if value == k * 10 + 1 else 2
        for who, answer in zip((1, 2), answers):
            if answer is None:
                continue
            if who == winner:
                assert answer == (True, None), (k, answers, value)
            else:
                assert answer == (False, value), (k, answers, value)

    # A CAS with the wrong expected value is not applied and shows the current value.
    wrong = s[3].execute(stmt(f"UPDATE {t} SET v = 30 WHERE k = 1 IF v = 11"))
    assert not wrong.was_applied and list(wrong) == [{"[applied]": False, "v": 10}]
    # On a row that does not exist: not applied, no columns besides [applied].
    missing = s[3].execute(stmt(f"UPDATE {t} SET v = 30 WHERE k = 2 IF v = 11"))
    assert list(missing) == [{"[applied]": False}]
    assert serial_read(s[1], "seq", "t_uniform", 2) is None

    # The right one applies, and SERIAL reads (and QUORUM ones) see it from every node.
    right = s[2].execute(stmt(f"UPDATE {t} SET v = 11 WHERE k = 1 IF v = 10"))
    assert right.was_applied and lwt_answer(right) == (True, None)
    for i in (1, 2, 3):
        assert serial_read(s[i], "seq", "t_uniform", 1) == 11
        assert list(s[i].execute(stmt(f"SELECT v FROM {t} WHERE k = 1"))) == [{"v": 11}]

    # Prepared, with the values bound (conditions included), on every layout's table.
    for layout in LAYOUTS:
        table = table_name(layout)
        ins = s[1].prepare(f"INSERT INTO seq.{table} (k, v) VALUES (?, ?) IF NOT EXISTS")
        cas = s[2].prepare(f"UPDATE seq.{table} SET v = ? WHERE k = ? IF v = ?")
        for p in (ins, cas):
            p.consistency_level, p.serial_consistency_level = CL.QUORUM, CL.SERIAL
            p.retry_policy = FallthroughRetryPolicy()
        assert s[1].execute(ins, (5, 50)).was_applied
        assert not s[1].execute(ins, (5, 51)).was_applied
        assert s[2].execute(cas, (52, 5, 50)).was_applied
        answer = s[2].execute(cas, (53, 5, 50))
        assert lwt_answer(answer) == (False, 52)
        assert serial_read(s[3], "seq", table, 5) == 52

    # DELETE … IF: the row goes, and a new INSERT … IF NOT EXISTS applies.
    assert lwt_answer(s[1].execute(stmt(f"DELETE FROM {t} WHERE k = 1 IF v = 10"))) == (False, 11)
    assert lwt_answer(s[1].execute(stmt(f"DELETE FROM {t} WHERE k = 1 IF v = 11"))) == (True, None)
    assert serial_read(s[2], "seq", "t_uniform", 1) is None
    assert lwt_answer(s[3].execute(stmt(f"INSERT INTO {t} (k, v) VALUES (1, 12) IF NOT EXISTS"))) == (True, None)
    assert serial_read(s[2], "seq", "t_uniform", 1) == 12

    # One node of three down: a quorum is left. Right after the kill (node 3 not yet seen
    # DOWN: its connections are gone, so no one waits for it) ...
    c.kill(3)
    assert s[1].execute(stmt(f"UPDATE {t} SET v = 13 WHERE k = 1 IF v = 12")).was_applied
    assert serial_read(s[2], "seq", "t_uniform", 1) == 13
    # ... and once it is seen DOWN.
    c.wait_seen([1, 2], [3], up=False)
    assert s[2].execute(stmt(f"UPDATE {t} SET v = 14 WHERE k = 1 IF v = 13")).was_applied
    assert serial_read(s[1], "seq", "t_uniform", 1) == 14
    assert lwt_answer(s[1].execute(stmt(f"INSERT INTO {t} (k, v) VALUES (3, 30) IF NOT EXISTS"))) == (True, None)

    # Two down: no quorum for the Paxos phase, Unavailable at SERIAL, for writes and reads.
    c.kill(2)
    c.wait_seen([1], [2], up=False)
    with pytest.raises(Unavailable) as e:
        s[1].execute(stmt(f"UPDATE {t} SET v = 15 WHERE k = 1 IF v = 14"))
    assert e.value.consistency == CL.SERIAL, e.value
    assert (e.value.required_replicas, e.value.alive_replicas) == (2, 1), e.value
    with pytest.raises(Unavailable) as e:
        s[1].execute(stmt(f"INSERT INTO {t} (k, v) VALUES (4, 40) IF NOT EXISTS"))
    assert e.value.consistency == CL.SERIAL, e.value
    with pytest.raises(Unavailable) as e:
        serial_read(s[1], "seq", "t_uniform", 1)
    assert e.value.consistency == CL.SERIAL, e.value
    # A plain read at ONE still answers: nothing above took effect.
    assert list(s[1].execute(stmt(f"SELECT v FROM {t} WHERE k = 1", CL.ONE))) == [{"v": 14}]

    # Back up: the restarted nodes coordinate LWTs and see every applied one (through new
    # drivers: a white-list driver whose only node was down may still hold its dead
    # connections for a moment after it sees the node UP).
    c.restart()
    s = {i: lwt_session(c, only=i) for i in (1, 2, 3)}
    for i in (2, 3):
        assert serial_read(s[i], "seq", "t_uniform", 1) == 14
        assert serial_read(s[i], "seq", "t_uniform", 3) == 30
        assert serial_read(s[i], "seq", "t_uniform", 4) is None
    assert s[3].execute(stmt(f"UPDATE {t} SET v = 16 WHERE k = 1 IF v = 14")).was_applied
    assert lwt_answer(s[2].execute(stmt(f"UPDATE {t} SET v = 17 WHERE k = 1 IF v = 14"))) == (False, 16)
    # Every replica has the last commit once the hints are in: ALL agrees with SERIAL.
    wait_until("every hint replayed", lambda: sum(c.metric(i, "mosaic_hints_pending") for i in (1, 2, 3)) == 0)
    assert list(s[1].execute(stmt(f"SELECT v FROM {t} WHERE k = 1", CL.ALL))) == [{"v": 16}]


def test_repair_brings_the_paxos_state_of_every_replica_up_to_date(lwt_cluster):
    """`mosaic repair` repairs lightweight transactions' Paxos state as it repairs data: a
    replica that was down while transactions committed gets their commits (a round at every
    replica finishes what was left and brings the others up to date), and a second repair
    finds nothing left to do."""
    c = lwt_cluster
    s = lwt_session(c, only=1)
    create_tables(c, s, "rep")
    c.stop(3)
    c.wait_seen([1, 2], [3], up=False)
    for layout in LAYOUTS:
        for k in range(10):
            ins = stmt(f"INSERT INTO rep.{table_name(layout)} (k, v) VALUES ({k}, {k}) IF NOT EXISTS")
            assert s.execute(ins).was_applied
    c.restart()

    def paxos_repaired(out):
        m = re.search(r"(\d+) partitions' lightweight transactions", out)
        return int(m.group(1)) if m else 0

    out = c.mosaic("repair", "--host", c.admin(1), "rep", timeout=180).stdout
    assert paxos_repaired(out) == 30, out
    out = c.mosaic("repair", "--host", c.admin(2), "rep", timeout=180).stdout
    assert paxos_repaired(out) == 0, out
    # The repaired replica alone (the others stopped) knows the last commits: a SERIAL
    # read through it cannot finish without a quorum, but its data holds every row.
    c.stop(1, 2)
    alone = lwt_session(c, only=3)
    for layout in LAYOUTS:
        rows = list(alone.execute(stmt(f"SELECT k, v FROM rep.{table_name(layout)}", CL.ONE)))
        assert sorted((r["k"], r["v"]) for r in rows) == [(k, k) for k in range(10)], layout


# =============================================================================================
# 3. Concurrent CAS under a nemesis, checked for linearizability
# =============================================================================================

SECONDS = float(os.environ.get("MOSAIC_LWT_SECONDS", "24"))
CLIENTS = 6
REGISTERS = [("t_uniform", 1), ("t_multi_lsm", 2), ("t_decoupled", 3), ("t_uniform", 4)]
CLIENT_TIMEOUT_S = 6.0

# Errors after which an op's outcome is unknown (the request may or may not have been
# applied). Anything else (a refused statement, a protocol error) fails the test.
# (A ServerError is not among them: Cassandra answers a node's death or a timeout with
# the errors above, so one here is a bug worth failing on.)
UNKNOWN_OUTCOME = (WriteTimeout, ReadTimeout, Unavailable, CoordinationFailure, NoHostAvailable, OperationTimedOut,
                   ConnectionException, OverloadedErrorMessage)


def _describe_error(e):
    name = type(e).__name__
    if isinstance(e, WriteTimeout):
        return f"{name}(write_type={WriteType.value_to_name.get(e.write_type, e.write_type)}, " \
               f"cl={CL.value_to_name.get(e.consistency, e.consistency)})"
    if isinstance(e, Unavailable):
        return f"{name}(cl={CL.value_to_name.get(e.consistency, e.consistency)})"
    return name


class Workload:
    """CLIENTS threads, each with its own driver, doing random LWTs on REGISTERS until
    stopped; every op is recorded with its invocation and completion times."""

    def __init__(self, c, ks, seed):
        self.c, self.ks = c, ks
        self.rng = random.Random(seed)
        self.values = itertools.count(1)
        self.lock = threading.Lock()
        self.history = {r: [] for r in REGISTERS}
        self.last_seen = {r: None for r in REGISTERS}
        self.errors = {}
        self.unexpected = []
        self.stop = threading.Event()
        self.t0 = time.monotonic()
        self.threads = []
        # Clients 0-2 always go through node 1, 2 or 3; the others are token-aware round-robin.
        self.sessions = []
        for client in range(CLIENTS):
            node = client + 1 if client < 3 else None
            s = lwt_session(c, only=node) if node else lwt_session(c, contact=client % 3 + 1)
            s.default_timeout = CLIENT_TIMEOUT_S
            self.sessions.append(s)

    def now(self):
        return time.monotonic() - self.t0

    def start(self):
        for client in range(CLIENTS):
            rng = random.Random(self.rng.random())
            t = threading.Thread(target=self._run, args=(client, rng), daemon=True, name=f"lwt-client-{client}")
            t.start()
            self.threads.append(t)

    def finish(self):
        self.stop.set()
        for t in self.threads:
            t.join(timeout=CLIENT_TIMEOUT_S * 3)
            assert not t.is_alive(), f"{t.name} did not stop"

    def _op(self, rng, register):
        table, k = register
        with self.lock:
            seen = self.last_seen[register]
            new = next(self.values)
        roll = rng.random()
        if roll < 0.3:
            return Op("read", None, 0), f"SELECT v FROM {self.ks}.{table} WHERE k = {k}", CL.SERIAL
        if roll < 0.75:
            # Mostly the value last seen (so CAS often applies), sometimes a stale one.
            expected = seen if seen is not None and rng.random() < 0.85 else max(1, new - rng.randrange(1, 20))
            return (Op("cas", (expected, new), 0),
                    f"UPDATE {self.ks}.{table} SET v = {new} WHERE k = {k} IF v = {expected}", CL.QUORUM)
        if roll < 0.9:
            return (Op("insert", new, 0),
                    f"INSERT INTO {self.ks}.{table} (k, v) VALUES ({k}, {new}) IF NOT EXISTS", CL.QUORUM)
        expected = seen if seen is not None else max(1, new - rng.randrange(1, 20))
        return Op("delete", expected, 0), f"DELETE FROM {self.ks}.{table} WHERE k = {k} IF v = {expected}", CL.QUORUM

    def _run(self, client, rng):
        s = self.sessions[client]
        while not self.stop.is_set():
            register = rng.choice(REGISTERS)
            op, cql, cl = self._op(rng, register)
            op.client = client
            op.call = self.now()
            try:
                rows = list(s.execute(stmt(cql, cl)))
            except Exception as e:  # noqa: BLE001 - every failure is recorded
                op.ret, op.error = None, _describe_error(e)
                op.extra["end"] = self.now()
                with self.lock:
                    self.history[register].append(op)
                    self.errors[op.error] = self.errors.get(op.error, 0) + 1
                    if not isinstance(e, UNKNOWN_OUTCOME):
                        self.unexpected.append((op.describe(), repr(e)))
                time.sleep(0.05)  # a node down: do not spin
                continue
            op.ret = self.now()
            try:
                if op.kind == "read":
                    assert len(rows) <= 1, rows
                    op.out = rows[0]["v"] if rows else None
                    seen = op.out
                else:
                    op.out = lwt_answer(rows)
                    applied, current = op.out
                    seen = (op.arg if op.kind == "insert" else op.arg[1] if op.kind == "cas" else None) \
                        if applied else current
            except AssertionError as e:
                with self.lock:
                    self.unexpected.append((op.describe(), f"malformed answer {rows!r}: {e}"))
                continue
            with self.lock:
                self.history[register].append(op)
                self.last_seen[register] = seen


class Nemesis:
    """Kills, restarts, pauses and resumes nodes; every paused node is resumed in `close`."""

    def __init__(self, c, rng, log):
        self.c, self.rng, self.log = c, rng, log
        self.paused = set()

    def _pid(self, i):
        pid = self.c.pid(i)
        assert process_runs_config(pid, self.c.config(i)), f"node{i} (pid {pid}) is not running"
        return pid

    def kill(self, i):
        self.log(f"kill -9 node{i}")
        self.c.kill(i)

    def pause(self, i):
        self.log(f"SIGSTOP node{i}")
        os.kill(self._pid(i), signal.SIGSTOP)
        self.paused.add(i)

    def resume(self, i):
        self.log(f"SIGCONT node{i}")
        self.paused.discard(i)
        os.kill(self._pid(i), signal.SIGCONT)

    def restart(self):
        self.log("restart the nodes that are down")
        self.c.up()
        self.log("every node sees every node UP")

    def close(self):
        for i in list(self.paused):
            with contextlib.suppress(Exception):
                self.resume(i)


def _run_nemesis(n, rng, seconds):
    """The schedule, about `seconds` long: kill -9 and restart, pause and resume, both at
    once (no quorum for a while), short pauses in quick succession, and a calm end."""
    start = time.monotonic()

    def until(t):
        time.sleep(max(0.0, start + t - time.monotonic()))

    f = seconds / 24.0
    nodes = [1, 2, 3]
    until(2 * f)
    a = rng.choice(nodes)
    n.kill(a)
    until(5 * f)
    n.restart()
    b = rng.choice(nodes)
    until(max(time.monotonic() - start + 1 * f, 8 * f))
    n.pause(b)
    time.sleep(3 * f)
    n.resume(b)
    # No quorum: one node killed and another paused, then the pause ends before the kill.
    time.sleep(1.5 * f)
    a, b = rng.sample(nodes, 2)
    n.kill(a)
    n.pause(b)
    time.sleep(2 * f)
    n.resume(b)
    time.sleep(1.5 * f)
    n.restart()
    # Short pauses, like long GC pauses, on random nodes.
    for _ in range(4):
        i = rng.choice(nodes)
        n.pause(i)
        time.sleep(rng.uniform(0.3, 1.0) * f)
        n.resume(i)
        time.sleep(rng.uniform(0.2, 0.6) * f)
    # A kill -9 with no wait for anyone to notice, straight into a restart.
    a = rng.choice(nodes)
    n.kill(a)
    n.restart()
    # The calm end: everything must work again.
    calm = time.monotonic()
    until(max(seconds, calm - start + 4.0))
    return calm - start


def test_cas_histories_are_linearizable_while_nodes_are_killed_and_paused(lwt_cluster):
    c = lwt_cluster
    seed = int(os.environ.get("MOSAIC_LWT_SEED", random.randrange(1 << 30)))
    rng = random.Random(seed)
    events = []

    s = lwt_session(c)
    create_tables(c, s, "lin")
    w = Workload(c, "lin", rng.random())

    def log(what):
        events.append((round(w.now(), 3), what))

    n = Nemesis(c, rng, log)
    w.start()
    try:
        _run_nemesis(n, rng, SECONDS)
        calm_from = next(t for t, what in reversed(events) if what == "every node sees every node UP")
    finally:
        n.close()
        w.finish()
    log("clients stopped")

    # Final SERIAL reads, from every node, after everything: part of each history.
    c.wait_drivers_up()
    final = {}
    by_node = {i: lwt_session(c, only=i) for i in (1, 2, 3)}
    for register in REGISTERS:
        table, k = register
        for i, si in by_node.items():
            op = Op("read", None, w.now(), client=100 + i)
            op.out = serial_read(si, "lin", table, k)
            op.ret = w.now()
            w.history[register].append(op)
            final[register] = op.out

    ops = [op for h in w.history.values() for op in h]
    done = [op for op in ops if op.known]
    applied = [op for op in done if op.kind != "read" and op.out[0]]
    summary = (f"seed {seed}; {len(ops)} ops, {len(done)} answered, {len(applied)} applied; "
               f"errors {w.errors}; nemesis {events}")
    print(summary)
    assert not w.unexpected, f"answers that are neither results nor unknown-outcome errors: " \
                             f"{w.unexpected[:20]}\n{summary}"

    # Linearizability of every register's history.
    failures = []
    for register, history in w.history.items():
        t0 = time.monotonic()
        result = check(history)
        took = time.monotonic() - t0
        print(f"{register}: {len(history)} ops, {sum(op.known for op in history)} answered, "
              f"linearizable={result.ok} ({result.steps} steps, {took:.2f}s)")
        if not result.ok:
            path = os.path.join(tempfile.gettempdir(), f"mosaic-lwt-history-{seed}-{register[0]}-{register[1]}.json")
            dump(history, path)
            failures.append(f"register {register} (full history in {path}):\n{result.explain()}")
    assert not failures, "\n\n".join(failures) + f"\n\n{summary}"

    # Progress: the cluster was not just down. Most ops were answered, every register saw
    # CAS applied, and after the last restart every client got answers.
    assert len(done) >= 0.5 * len(ops), summary
    for register, history in w.history.items():
        assert sum(1 for op in history if op.known and op.kind == "cas" and op.out[0]) >= 5, (register, summary)
    late = [op for op in ops if op.call >= calm_from + 1.0 and op.client < CLIENTS]
    assert sum(op.known for op in late) >= 0.8 * len(late), ([op.describe() for op in late if not op.known], summary)
    for client in range(CLIENTS):
        assert any(op.known for op in late if op.client == client), (client, summary)

    # A read at ALL (digests, read repair: the newest write wins) agrees with SERIAL: every
    # commit was written at its ballot's timestamp, later ballots later. (A new driver: one
    # that saw every node restart may hold closed connections for a moment.)
    s = lwt_session(c)
    for register in REGISTERS:
        table, k = register
        rows = list(s.execute(stmt(f"SELECT v FROM lin.{table} WHERE k = {k}", CL.ALL)))
        assert [r["v"] for r in rows] == ([] if final[register] is None else [final[register]]), (register, rows)
