"""Each replica-selection policy and each read-stage queue under a replica's kill -9 (issue
22, "How it is checked": cluster tests with each policy combination under the fault tests).

One 3-node cluster at RF 3 per case. The cases pair every `replica_selection` with a
`local_queue`, rotating: four with the engine calls offloaded and 2 read-stage slots (every
replica read waits in the queue), one with a single slot inline, one with the default 32;
the size-aware and priority queues with the `item-size` oracle so reads carry tags. Each
case writes ROWS rows at ALL, then reader threads read them at ONE and at QUORUM through
node 1 (a white-list session: node 1 coordinates every read and stays up) while node 3 is
killed with SIGKILL. Every read must return its row, and none may fail once node 1 sees
node 3 DOWN (two of three replicas answer ONE and QUORUM).

Before that, none may fail either: under the tables' default `speculative_retry = '99p'` a
read whose replica's connection is gone asks a spare at once (test_speculative's first
test allows no failure for the same reason; its one burst per coordinator is allowed only
with `NONE` and the dynamic snitch). This found a coordinator bug, pinned by the last test:
a read whose first replica was slow asked a spare for data after the speculation delay;
when that spare was the dead node 3, the next spare was asked for a digest (data was still
due from the slow one), and that digest ended the read at once with ReadTimeout "received
1 responses of 1" and no data — in about one case in six, a burst of one reader's reads
1–2.5 s after the kill, at ONE only.

`mosaic status` on node 1 names the policy, the queue and node 3 DOWN. Rows updated at
QUORUM while node 3 is down (hints off) reach it by `mosaic repair` after its restart, and
reads at ALL return every row.
"""
import json
import os
import signal
import threading
import time

import pytest
from cassandra import ReadTimeout
from cassandra.policies import FallthroughRetryPolicy

from conftest import MosaicCluster, process_runs_config, wait_until
from test_cluster import CL, create_table, diff, read, repaired_entries, write

ROWS = 300
HOT = 30  # keys 0..HOT-1 are read HOT_READS times as often as the others
HOT_READS = 5
UPDATED = 60  # rows updated while node 3 is down
COORDINATOR, VICTIM = 1, 3
READERS = {CL.ONE: 2, CL.QUORUM: 2}  # threads per consistency level
IN_FLIGHT = 8  # reads each thread has outstanding
READS_BEFORE = 100  # reads per consistency level before the kill
READS_AFTER = 150  # reads per consistency level once node 1 sees node 3 DOWN
READS_DURING = 100  # reads per consistency level at least between the kill and then

# (replica_selection, local_queue, read_concurrency, more settings). Offloaded engine calls
# make every read go through the read stage's queue; inline, a read runs at once on its
# network thread when a slot is free and nobody waits, so on a small machine (about as many
# network threads as cores) reads rarely wait even for a single slot.
OFFLOAD = "storage.engine_calls=offload"
SIZES = "scheduling.size_oracle=item-size"
RESERVED = "scheduling.reserved_slots=1"
CASES = [
    ("dynamic-snitch", "fcfs", 2, (OFFLOAD,)),
    ("c3", "random-multi-level", 2, (OFFLOAD,)),
    # A hot key has about 0.008 of the reads, a cold one 0.003: both kinds of decision.
    # One of the two slots reserved to first-priority reads.
    ("popularity-aware", "priority", 2, (OFFLOAD, SIZES, RESERVED,
                                         "scheduling.popularity-aware.threshold=0.005")),
    ("primary-first", "size-aware", 2, (OFFLOAD, SIZES)),
    ("round-robin", "size-aware", 1, (SIZES,)),
    ("random", "fcfs", 32, ()),
]


def read_until(stop, s, cl, keys, outcomes):
    """Reads `keys` at `cl` in turn, IN_FLIGHT at a time, until `stop` is set: appends (time
    answered, cl, key, value or None, error or None) per read. Errors are rethrown by the
    driver, never retried."""
    sel = s.prepare("SELECT v FROM f.t WHERE k = ?")
    sel.consistency_level = cl
    sel.retry_policy = FallthroughRetryPolicy()
    while not stop.is_set():
        for first in range(0, len(keys), IN_FLIGHT):
            if stop.is_set():
                return
            sent = time.monotonic()
            futures = [(k, s.execute_async(sel, (k,))) for k in keys[first:first + IN_FLIGHT]]
            for k, f in futures:
                try:
                    row = f.result().one()
                    outcomes.append((time.monotonic(), cl, k, row and row.v, None))
                except Exception as e:  # noqa: BLE001 - every failure is counted
                    e.took_s = time.monotonic() - sent
                    outcomes.append((time.monotonic(), cl, k, None, e))


def reads_across_a_kill(c, s, rows):
    """Reader threads on session `s` (READERS of them, each starting at another key) while
    node VICTIM is killed once they have done READS_BEFORE reads; they stop once each
    consistency level has done READS_AFTER reads since node COORDINATOR saw it DOWN: the
    outcomes, the time of the kill and the time it was seen DOWN."""
    stop = threading.Event()
    outcomes = []
    keys = list(rows) + [k for k in range(HOT) for _ in range(HOT_READS - 1)]
    levels = [cl for cl, n in READERS.items() for _ in range(n)]
    threads = []
    for i, cl in enumerate(levels):
        first = i * len(keys) // len(levels)
        threads.append(threading.Thread(target=read_until, args=(stop, s, cl, keys[first:] + keys[:first], outcomes)))
    for t in threads:
        t.start()

    def done_since(at, cl):
        return sum(1 for t, c_, _, _, _ in list(outcomes) if c_ == cl and t > at)

    try:
        started = time.monotonic()
        wait_until("reads before the kill", lambda: all(done_since(started, cl) >= READS_BEFORE for cl in READERS),
                   timeout=30, interval=0.05)
        killed_at = time.monotonic()
        c.kill(VICTIM)
        c.wait_seen([COORDINATOR], [VICTIM], up=False)
        seen_down_at = time.monotonic()
        wait_until("reads once node 3 is seen DOWN",
                   lambda: all(done_since(seen_down_at, cl) >= READS_AFTER for cl in READERS), timeout=30, interval=0.05)
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=30)
    assert not any(t.is_alive() for t in threads), "a reader did not stop"
    return outcomes, killed_at, seen_down_at


@pytest.mark.parametrize("policy,queue,concurrency,settings", CASES, ids=[f"{p}-{q}" for p, q, _, _ in CASES])
def test_reads_survive_a_killed_replica(policy, queue, concurrency, settings):
    c = MosaicCluster(3, ("cluster.max_hint_window_ms=0",
                          f"scheduling.replica_selection={policy}",
                          f"scheduling.local_queue={queue}",
                          f"scheduling.read_concurrency={concurrency}", *settings))
    try:
        c.up()
        s = c.session()
        create_table(c, s, "f", 3)
        rows = {k: f"v{k}" for k in range(ROWS)}
        write(s, "f", rows, CL.ALL)
        s1 = c.session(only=COORDINATOR)

        outcomes, killed_at, seen_down_at = reads_across_a_kill(c, s1, rows)
        wrong = [(CL.value_to_name[cl], k, v) for _, cl, k, v, e in outcomes if e is None and v != rows[k]]
        # (seconds after the kill, level, key, error, seconds it took at most)
        failed = [(round(at - killed_at, 2), CL.value_to_name[cl], k, e, round(e.took_s, 3))
                  for at, cl, k, _, e in outcomes if e is not None]
        for cl in READERS:
            during = sum(1 for at, c_, _, _, _ in outcomes if c_ == cl and killed_at < at < seen_down_at)
            assert during >= READS_DURING, (CL.value_to_name[cl], during, seen_down_at - killed_at)
        assert not wrong, f"{len(wrong)} reads answered the wrong row: {wrong[:5]}"
        down_s = seen_down_at - killed_at
        before = [f for f in failed if f[0] < down_s]
        assert not before, (f"{len(before)} of {len(outcomes)} reads failed before node 1 saw node 3 DOWN, "
                            f"{down_s:.2f} s after the kill: {before[:5]}")
        after = [f for f in failed if f[0] >= down_s]
        assert not after, f"{len(after)} reads failed once node 1 saw node 3 DOWN: {after[:5]}"
        if OFFLOAD in settings:
            stages = [json.loads(c.http(i, "/status"))["scheduling"]["read_stage"] for i in c.others(VICTIM)]
            assert sum(st["inline_total"] for st in stages) == 0, stages
            assert sum(st["queued_total"] for st in stages) >= 2 * READS_BEFORE, stages

        status = c.mosaic("status", "--host", c.admin(COORDINATOR)).stdout
        assert f"Replica selection: {policy} (" in status, status
        reserved = ", 1 reserved for first-priority reads" if RESERVED in settings else ""
        assert f"Read stage: {queue} × {concurrency}{reserved} (" in status, status
        if SIZES in settings:
            assert "reads tagged by the item-size oracle" in status, status
        assert any(line.startswith("DN ") and c.endpoint(VICTIM) in line for line in status.splitlines()), status

        updated = {k: f"u{k}" for k in range(UPDATED)}
        write(s1, "f", updated, CL.QUORUM)
        rows.update(updated)
        c.restart()
        entries, out = repaired_entries(c, VICTIM, "f")
        assert entries >= UPDATED, out
        got = read(s1, "f", rows, CL.ALL)
        assert got == rows, diff(rows, got)
    finally:
        c.close()


def test_a_read_at_one_waits_for_its_data_when_a_digest_comes_first():
    """Nodes 2 and 3 stall (SIGSTOP) while node 1 coordinates reads at ONE with a 50 ms
    speculative retry (round-robin: each read's first replica and spares take turns): a
    read first sent to 2 or 3 asks its first spare for data after 50 ms. Node 3 is then
    killed: a read whose first replica or spare was node 3 asks its last spare for the
    missing answer. When its other request for data is with the stalled node 2, the last
    spare (node 1, which holds every row) must be asked for data, or the read must wait for
    node 2's — node 2 resumes once node 1 has failed over. Before the fix, node 1 was asked for
    a digest, and its digest ended the read at once: ReadTimeout "received 1 responses of 1
    required at ONE" with no data, about one read in three."""
    c = MosaicCluster(3, ("scheduling.replica_selection=round-robin",))
    stalled = {}  # node: pid
    try:
        c.up()
        s = c.session()
        create_table(c, s, "f", 3)
        s.execute("ALTER TABLE f.t WITH speculative_retry = '50ms'")
        c.wait_schema_agreement()
        rows = {k: f"v{k}" for k in range(60)}
        write(s, "f", rows, CL.ALL)
        s1 = c.session(only=COORDINATOR)
        sel = s1.prepare("SELECT v FROM f.t WHERE k = ?")
        sel.consistency_level = CL.ONE
        sel.retry_policy = FallthroughRetryPolicy()
        speculated = c.metric(COORDINATOR, "mosaic_speculative_reads_total")
        for i in (2, VICTIM):
            stalled[i] = c.pid(i)
            os.kill(stalled[i], signal.SIGSTOP)
        futures = [(k, s1.execute_async(sel, (k,))) for k in rows]
        # Reads first sent to node 2 or 3 (two in three) asked a spare after 50 ms …
        wait_until("reads speculated", lambda: c.metric(COORDINATOR, "mosaic_speculative_reads_total") >= speculated + 30)
        speculated = c.metric(COORDINATOR, "mosaic_speculative_reads_total")
        c.kill(VICTIM)
        # … and those that had asked node 3 fail over once its connection is gone.
        wait_until("reads failed over", lambda: c.metric(COORDINATOR, "mosaic_speculative_reads_total") >= speculated + 10)
        os.kill(stalled[2], signal.SIGCONT)
        got, failed = {}, []
        for k, f in futures:
            try:
                got[k] = f.result().one().v
            except ReadTimeout as e:
                failed.append((k, repr(e)))
        assert not failed, f"{len(failed)} of {len(rows)} reads at ONE failed: {failed[:3]}"
        assert got == rows, diff(rows, got)
    finally:
        for i, pid in stalled.items():
            if process_runs_config(pid, c.config(i)):
                os.kill(pid, signal.SIGCONT)
        c.close()
