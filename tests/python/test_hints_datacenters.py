"""Hints per datacenter (Cassandra's `hinted_handoff_disabled_datacenters` and
`hinted_handoff_enabled`): nodes 1-2 in dc1 and node 3 in dc2 (`mosaic cluster up
--datacenters 2`), a keyspace with a replica of every key on each; with nodes 2 and 3 down,
node 1 coordinates writes at ONE and keeps a hint per write for each down replica — none for
node 3 when dc2 is in `[cluster] hinted_handoff_disabled_datacenters` (node 2's still kept),
and none at all with `hinted_handoff_enabled = false`."""
import pytest
from cassandra import ConsistencyLevel

from test_location_change import running

ROWS = 50


@pytest.mark.parametrize("setting, hinted_nodes", [
    (None, 2),
    ('cluster.hinted_handoff_disabled_datacenters=["dc2"]', 1),
    ("cluster.hinted_handoff_enabled=false", 0),
])
def test_hints_are_kept_for_down_replicas_except_in_disabled_datacenters(setting, hinted_nodes):
    with running(3, settings=[setting] if setting else [], up_args=("--datacenters", "2")) as c:
        dcs = {n["endpoint"]: n["data_center"] for n in c.status(1).values()}
        assert dcs == {c.endpoint(1): "dc1", c.endpoint(2): "dc1", c.endpoint(3): "dc2"}, dcs
        s = c.session(only=1)
        s.execute("CREATE KEYSPACE h WITH replication = {'class': 'NetworkTopologyStrategy', 'dc1': 2, 'dc2': 1}")
        s.execute("CREATE TABLE h.t (k int PRIMARY KEY, v text)")
        c.wait_schema_agreement()
        c.stop(2, 3)
        c.wait_seen([1], [2, 3], up=False)

        ins = s.prepare("INSERT INTO h.t (k, v) VALUES (?, ?)")
        ins.consistency_level = ConsistencyLevel.ONE
        for k in range(ROWS):
            s.execute(ins, (k, f"v{k}"))
        assert c.metric(1, "mosaic_hints_pending") == ROWS * hinted_nodes
        assert c.metric(1, "mosaic_hints_stored_total") == ROWS * hinted_nodes
