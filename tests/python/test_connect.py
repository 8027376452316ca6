"""Drivers connect, build schema and token metadata without warnings, and agree on schema."""
from cassandra.cluster import Cluster
from cassandra.metadata import Murmur3Token
from cassandra.policies import RoundRobinPolicy


def test_python_driver_builds_full_metadata_without_warnings(node, driver_warnings):
    c = node.cluster()
    try:
        s = c.connect()
        s.execute("CREATE KEYSPACE meta WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}")
        s.execute("CREATE TABLE meta.t (k int, c text, s int static, v blob, PRIMARY KEY ((k), c)) WITH CLUSTERING ORDER BY (c DESC) AND comment = 'x'")
        assert c.control_connection.wait_for_schema_agreement()
        md = c.metadata
        assert md.cluster_name == "Mosaic Cluster"
        assert "system" in md.keyspaces and "meta" in md.keyspaces
        ks = md.keyspaces["meta"]
        assert ks.replication_strategy.replication_factor == 3
        t = ks.tables["t"]
        assert [col.name for col in t.partition_key] == ["k"]
        assert [col.name for col in t.clustering_key] == ["c"]
        assert t.columns["s"].is_static
        assert t.clustering_key[0].is_reversed
        assert t.options["comment"] == "x"
        assert "CLUSTERING ORDER BY (c DESC)" in t.export_as_string()
        # Token metadata: the node owns tokens and the driver maps keys to it.
        assert md.token_map is not None
        host = next(iter(md.all_hosts()))
        assert host.is_up
        assert md.token_map.get_replicas("meta", Murmur3Token(0)) == [host]
        s.execute("DROP KEYSPACE meta")
        assert c.control_connection.wait_for_schema_agreement()
    finally:
        c.shutdown()
    assert not driver_warnings, [r.getMessage() for r in driver_warnings]


def test_protocol_negotiation_steps_down_to_v5_as_with_cassandra_4_1(node, driver_warnings):
    # Without a pinned version the driver starts at DSE_V2 and must step down on our error,
    # past DSE_V1, to v5, where Cassandra 4.1 takes it too (test_protocol_v5.py has more).
    c = Cluster(["127.0.0.1"], port=node.port, load_balancing_policy=RoundRobinPolicy())
    try:
        s = c.connect()
        assert c.protocol_version == 5
        assert s.execute("SELECT release_version FROM system.local").one() is not None
    finally:
        c.shutdown()
    # A driver pinned at v4 (as the other tests here pin it) gets v4.
    c = node.cluster()
    try:
        s = c.connect()
        assert c.protocol_version == 4
        assert s.execute("SELECT release_version FROM system.local").one() is not None
    finally:
        c.shutdown()
