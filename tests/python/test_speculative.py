"""Speculative retry (the `speculative_retry` table option, as Cassandra has it) and fast
failure handling, on a 5-node cluster at RF 3 with the failure detector at its defaults
(gossip every second, phi 8), so a killed node stays UP for several seconds.

QUORUM reads run one after another, through a token-aware driver that retries nothing a
coordinator answers (only requests whose coordinator was the killed node), while a replica
is killed with SIGKILL (round-robin replica selection, so it is asked often). With the
default `99p` no read fails: a coordinator whose replica's connection is gone asks a spare
replica at once (and one that is only slow, after the table's 99th-percentile latency).
With `NONE` nothing is asked of a spare, and reads the killed node was asked for fail until
it is convicted — each at once (the connection to the dead node is gone), never after the
5-second read timeout. With the default replica selection (Cassandra's dynamic snitch) and `NONE`, a read that
found the dead node's connection gone counts for that coordinator's snitch as a read that
timed out (as Cassandra's counts an expired request), so its reads stop asking the dead node
within moments — long before the failure detector convicts it — and only a short burst fails
per coordinator. The option round-trips
through `system_schema.tables` as Cassandra prints it.
"""
import time

import pytest
from cassandra import ConsistencyLevel as CL
from cassandra import InvalidRequest, OperationTimedOut
from cassandra.connection import ConnectionException
from cassandra.policies import RetryPolicy
from cassandra.protocol import ConfigurationException
from cassandra.query import SimpleStatement

from conftest import MosaicCluster

KEYS = range(300)
VICTIM = 5


class CoordinatorLossRetry(RetryPolicy):
    """Rethrows every error a coordinator answers with; a request whose coordinator's own
    connection broke (the killed node coordinating it) goes to the next host, as any
    application's retry policy would — that is the driver's business, not the cluster's."""

    def on_read_timeout(self, *args, **kwargs):
        return self.RETHROW, None

    def on_unavailable(self, *args, **kwargs):
        return self.RETHROW, None

    def on_request_error(self, query, consistency, error, retry_num):
        if isinstance(error, (ConnectionException, OperationTimedOut)) and retry_num < 3:
            return self.RETRY_NEXT_HOST, None
        return self.RETHROW, None


@pytest.fixture(scope="module")
def c():
    # Round-robin replica selection: the killed node is among a read's first replicas for
    # two reads in three of its keys, whatever the latencies.
    cluster = MosaicCluster(5, ("cluster.gossip_interval_ms=1000", "cluster.phi_convict_threshold=8",
                                "scheduling.replica_selection=round-robin"))
    try:
        cluster.up()
        yield cluster
    finally:
        cluster.close()


def metric(c, name, label):
    """The sum over every node of Prometheus counter `name` with `label` (0 if absent)."""
    total = 0.0
    for i in range(1, 6):
        for line in c.http(i, "/metrics").splitlines():
            if line.startswith(name + "{") and label in line:
                total += float(line.rsplit(" ", 1)[1])
    return total


def reads_across_a_kill(c, table, seconds):
    """Reads every key of `table` at QUORUM in turn for `seconds`, killing node VICTIM (a
    replica of about 3/5 of the keys) one second in, then restarts it: [(key, error or
    None, seconds taken)]."""
    s = c.session()
    select = s.prepare(f"SELECT v FROM {table} WHERE k = ?")
    select.consistency_level = CL.QUORUM
    select.retry_policy = CoordinatorLossRetry()
    outcomes = []
    start = time.monotonic()
    killed = False
    try:
        while time.monotonic() - start < seconds:
            for k in KEYS:
                if not killed and time.monotonic() - start > 1:
                    c.kill(VICTIM)
                    killed = True
                t0 = time.monotonic()
                try:
                    row = s.execute(select, (k,)).one()
                    assert row is not None and row.v == f"v{k}", (k, row)
                    outcomes.append((k, None, time.monotonic() - t0))
                except Exception as e:  # noqa: BLE001 - every failure is counted
                    outcomes.append((k, e, time.monotonic() - t0))
                if time.monotonic() - start >= seconds:
                    break
    finally:
        c.restart()
    return outcomes


def load(c, ks, option):
    s = c.session()
    s.execute(f"CREATE KEYSPACE {ks} WITH replication = {{'class': 'SimpleStrategy', 'replication_factor': 3}}")
    s.execute(f"CREATE TABLE {ks}.t (k int PRIMARY KEY, v text){option}")
    c.wait_schema_agreement()
    insert = s.prepare(f"INSERT INTO {ks}.t (k, v) VALUES (?, ?)")
    insert.consistency_level = CL.ALL
    for k in KEYS:
        s.execute(insert, (k, f"v{k}"))


def test_no_quorum_read_fails_while_a_replica_is_killed(c):
    load(c, "spec", "")
    failovers_before = metric(c, "mosaic_speculative_reads_total", 'cause="failed"')
    outcomes = reads_across_a_kill(c, "spec.t", 8)
    failed = [(k, repr(e)) for k, e, _ in outcomes if e is not None]
    assert len(outcomes) > 300, len(outcomes)
    assert not failed, f"{len(failed)} of {len(outcomes)} reads failed: {failed[:5]}"
    # Reads that found the dead replica's connection gone went to a spare instead.
    assert metric(c, "mosaic_speculative_reads_total", 'cause="failed"') > failovers_before


def test_without_speculative_retry_reads_of_a_dead_replica_fail_at_once(c):
    load(c, "nospec", " WITH speculative_retry = 'NONE'")
    outcomes = reads_across_a_kill(c, "nospec.t", 6)
    failed = [(k, e, took) for k, e, took in outcomes if e is not None]
    # Before the failure detector convicts it, reads the dead node is asked for fail —
    # at once, never after the read timeout.
    assert failed, f"no read of {len(outcomes)} failed without speculative retry"
    slow = [(k, repr(e), took) for k, e, took in failed if took > 2.0]
    assert not slow, f"failures must not wait out the read timeout: {slow[:5]}"


def test_without_speculative_retry_the_dynamic_snitch_stops_asking_a_dead_replica():
    cluster = MosaicCluster(5, ("cluster.gossip_interval_ms=1000", "cluster.phi_convict_threshold=8"))
    try:
        cluster.up()
        load(cluster, "snitch", " WITH speculative_retry = 'NONE'")
        started = time.monotonic()
        outcomes = reads_across_a_kill(cluster, "snitch.t", 7)
        # reads_across_a_kill kills node 5 one second in; each outcome took `took` seconds.
        at, failed_at = started, []
        for k, e, took in outcomes:
            at += took
            if e is not None:
                failed_at.append(at - started)
        # Each coordinator's snitch learns on its own first read that finds the dead node's
        # connection gone: reads fail in at most one short burst per surviving coordinator
        # (how many depends on the read rate until its next update, 100 ms), whenever that
        # coordinator first asks the dead node — not all the way to conviction.
        bursts = []
        for t in failed_at:
            if bursts and t - bursts[-1][1] < 0.5:
                bursts[-1][1] = t
            else:
                bursts.append([t, t])
        assert len(bursts) <= 4, f"{len(bursts)} bursts of failures: {bursts}"
        long = [(a, b) for a, b in bursts if b - a > 0.5]
        assert not long, f"reads kept failing from {long} s (the kill at 1 s): {len(failed_at)} failures"
        assert len(outcomes) > 300, len(outcomes)
    finally:
        cluster.close()


def test_the_option_is_checked_and_shown_as_cassandra_shows_it(c):
    s = c.session()
    s.execute("CREATE KEYSPACE opt WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}")
    shown = {}
    for i, value in enumerate(["99PERCENTILE", "50MS", "always", "none", "min(95p, 20ms)"]):
        s.execute(f"CREATE TABLE opt.t{i} (k int PRIMARY KEY) WITH speculative_retry = '{value}'")
        row = s.execute("SELECT speculative_retry FROM system_schema.tables "
                        f"WHERE keyspace_name = 'opt' AND table_name = 't{i}'").one()
        shown[value] = row.speculative_retry
    assert shown == {"99PERCENTILE": "99p", "50MS": "50ms", "always": "ALWAYS", "none": "NEVER",
                     "min(95p, 20ms)": "MIN(95p,20ms)"}, shown
    for bad in ["fast", "101p", "-3ms", "MIN(99p,95p)"]:
        with pytest.raises((ConfigurationException, InvalidRequest)) as e:
            s.execute(f"CREATE TABLE opt.bad (k int PRIMARY KEY) WITH speculative_retry = '{bad}'")
        assert "speculative_retry" in str(e.value), (bad, e.value)
    s.execute("ALTER TABLE opt.t0 WITH speculative_retry = '10ms'")
    row = s.execute("SELECT speculative_retry FROM system_schema.tables "
                    "WHERE keyspace_name = 'opt' AND table_name = 't0'").one()
    assert row.speculative_retry == "10ms"
