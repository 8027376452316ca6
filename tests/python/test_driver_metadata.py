"""Schema metadata every driver trusts (issue 20): a client pinned to one node keeps its
schema metadata fresh, without reconnecting, while another client changes the schema through
another node. Drivers refresh their caches from the SCHEMA_CHANGE events their control
connection receives, so every node pushes the changes it learns from peers, not only the node
that ran the statement, and only once its own system_schema shows them.

Checked with the Python cassandra-driver here, and with the Go driver (gocql v2) and the
Node.js cassandra-driver 4.x through the probes in tests/drivers (built by
scripts/driver-probes); the Rust scylla driver is checked in
crates/server/tests/cluster_driver_scylla.rs. Each probe pins an observer to node 3 and sends
DDL through node 1 (and one CREATE TABLE through the observer itself, the Go driver's case of
the issue), waiting at most 15 s per step for the observer's metadata to show it."""
import subprocess

import pytest

from conftest import MosaicCluster, wait_until


@pytest.fixture(scope="module")
def three_nodes():
    c = MosaicCluster(3)
    try:
        c.up()
        yield c
    finally:
        c.close()


@pytest.mark.parametrize("driver", ["go", "node"])
def test_a_driver_pinned_to_one_node_sees_ddl_sent_through_another(three_nodes, driver_probes, driver):
    c = three_nodes
    args = driver_probes[driver] + ["--observer", c.ip(3), "--ddl", c.ip(1), "--port", str(c.port),
                             "--keyspace", f"{driver}_probe"]
    p = subprocess.run(args, capture_output=True, text=True, timeout=180)
    steps = p.stdout.strip().splitlines()
    assert p.returncode == 0, f"{driver} probe:\n{p.stdout}\n{p.stderr}\n{c.logs()}"
    assert [s.split(" after ")[0] for s in steps] == [
        "ok create keyspace", "ok create table", "ok alter table", "ok create table through the observer",
        "ok drop table", "ok drop keyspace"], p.stdout


def test_the_python_driver_pinned_to_one_node_sees_ddl_sent_through_another(three_nodes):
    c = three_nodes
    observer = c.driver(only=3)
    observer.connect()
    writer = c.session(only=1)

    def view():
        ks = observer.metadata.keyspaces.get("py_probe")
        if ks is None:
            return None
        return {name: sorted(t.columns) for name, t in ks.tables.items()}

    steps = [
        ("CREATE KEYSPACE py_probe WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}", {}),
        ("CREATE TABLE py_probe.t (k int PRIMARY KEY, v text)", {"t": ["k", "v"]}),
        ("ALTER TABLE py_probe.t ADD w int", {"t": ["k", "v", "w"]}),
        ("DROP TABLE py_probe.t", {}),
        ("DROP KEYSPACE py_probe", None),
    ]
    for statement, want in steps:
        writer.execute(statement)
        wait_until(f"the observer on node 3 to see {statement!r} (it sees {view()})", lambda: view() == want,
                   timeout=20, interval=0.05)
