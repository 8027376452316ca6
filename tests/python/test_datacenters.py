"""Two datacenters through the Python driver's DC-aware load balancing (issue 14, racks and
datacenters): `mosaic cluster up --datacenters 2` puts nodes 1-2 in dc1 and 3-4 in dc2; the
driver learns each node's datacenter from system.local/system.peers, and
`TokenAwarePolicy(DCAwareRoundRobinPolicy(local_dc='dc1'))` sends every request on a
NetworkTopologyStrategy {'dc1': 1, 'dc2': 1} keyspace to the key's one dc1 replica, as the
driver's own NetworkTopologyStrategy places it. Mosaic places it there too: with node 2
stopped, node 1 answers LOCAL_ONE Unavailable exactly for the keys the driver puts on node 2,
and QUORUM and EACH_QUORUM (both replicas, one per datacenter) succeed for the other keys
only. `'replication_factor': N` stands for N in every datacenter, as in Cassandra 4.1."""
import struct

import pytest
from cassandra import ConsistencyLevel, Unavailable
from cassandra.policies import DCAwareRoundRobinPolicy, FallthroughRetryPolicy, TokenAwarePolicy

from conftest import MosaicCluster

CL = ConsistencyLevel
KEYS = range(120)


@pytest.fixture()
def two_dcs():
    c = MosaicCluster(4, up_args=("--datacenters", "2"))
    try:
        c.up()
        yield c
    finally:
        c.close()


def test_dc_aware_token_aware_routing_uses_the_local_replica(two_dcs):
    c = two_dcs
    policy = TokenAwarePolicy(DCAwareRoundRobinPolicy(local_dc="dc1"))
    s = c.session(load_balancing_policy=policy)
    driver = s.cluster
    dcs = {h.address: h.datacenter for h in driver.metadata.all_hosts()}
    assert dcs == {"127.0.0.1": "dc1", "127.0.0.2": "dc1", "127.0.0.3": "dc2", "127.0.0.4": "dc2"}

    s.execute("CREATE KEYSPACE dcs WITH replication = {'class': 'NetworkTopologyStrategy', 'dc1': 1, 'dc2': 1}")
    s.execute("CREATE TABLE dcs.t (k int PRIMARY KEY, v text)")
    # Cassandra 4.1's shorthand: replication_factor stands for every datacenter.
    s.execute("CREATE KEYSPACE short WITH replication = {'class': 'NetworkTopologyStrategy', 'replication_factor': 1}")
    row = s.execute("SELECT replication FROM system_schema.keyspaces WHERE keyspace_name = 'short'").one()
    assert dict(row.replication) == {
        "class": "org.apache.cassandra.locator.NetworkTopologyStrategy", "dc1": "1", "dc2": "1"}
    driver.control_connection.wait_for_schema_agreement()
    driver.refresh_schema_metadata()
    ins = s.prepare("INSERT INTO dcs.t (k, v) VALUES (?, ?)")
    ins.consistency_level = CL.LOCAL_ONE
    sel = s.prepare("SELECT v FROM dcs.t WHERE k = ?")
    sel.consistency_level = CL.LOCAL_ONE
    local_replica = {}
    coordinators = set()
    for k in KEYS:
        replicas = driver.metadata.get_replicas("dcs", struct.pack(">i", k))
        assert sorted(h.datacenter for h in replicas) == ["dc1", "dc2"], (k, replicas)
        local = next(h for h in replicas if h.datacenter == "dc1")
        local_replica[k] = local.address
        for rs in (s.execute(ins, (k, f"v{k}")), s.execute(sel, (k,))):
            coordinator = rs.response_future.coordinator_host
            assert coordinator == local, (k, coordinator, replicas)
            coordinators.add(coordinator.address)
        assert rs.one().v == f"v{k}"
    assert coordinators == {"127.0.0.1", "127.0.0.2"}

    # Mosaic's dc1 replica of each key is the driver's: with node 2 stopped, node 1 alone
    # refuses LOCAL_ONE for exactly node 2's keys; QUORUM and EACH_QUORUM (both replicas)
    # fail for them too and succeed for node 1's keys.
    s1 = c.session(only=1)
    sel1 = s1.prepare("SELECT v FROM dcs.t WHERE k = ?")
    sel1.retry_policy = FallthroughRetryPolicy()
    sel1.consistency_level = CL.LOCAL_ONE
    c.stop(2)
    c.wait_seen([1], [2], up=False)
    unavailable = []
    for k in KEYS:
        try:
            assert s1.execute(sel1, (k,)).one().v == f"v{k}"
        except Unavailable as e:
            assert (e.required_replicas, e.alive_replicas) == (1, 0), e
            unavailable.append(k)
    assert unavailable == [k for k in KEYS if local_replica[k] == "127.0.0.2"]
    assert unavailable and len(unavailable) < len(KEYS)
    for cl in (CL.QUORUM, CL.EACH_QUORUM):
        sel_cl = s1.prepare("SELECT v FROM dcs.t WHERE k = ?")
        sel_cl.retry_policy = FallthroughRetryPolicy()
        sel_cl.consistency_level = cl
        for k in KEYS:
            if k in unavailable:
                with pytest.raises(Unavailable):
                    s1.execute(sel_cl, (k,))
            else:
                assert s1.execute(sel_cl, (k,)).one().v == f"v{k}", (cl, k)
