"""Keyspace and table DDL and the error codes a Cassandra user sees."""
import pytest
from cassandra import AlreadyExists, InvalidRequest
from cassandra.protocol import ConfigurationException
from cassandra.protocol import SyntaxException


def test_keyspace_lifecycle_and_replication_maps(session, cluster):
    session.execute("CREATE KEYSPACE ddl1 WITH replication = {'class': 'NetworkTopologyStrategy', 'datacenter1': 2, 'dc2': 1} AND durable_writes = false")
    cluster.refresh_schema_metadata()
    ks = cluster.metadata.keyspaces["ddl1"]
    assert ks.durable_writes is False
    assert ks.replication_strategy.dc_replication_factors == {"datacenter1": 2, "dc2": 1}
    session.execute("ALTER KEYSPACE ddl1 WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 2}")
    cluster.refresh_schema_metadata()
    assert cluster.metadata.keyspaces["ddl1"].replication_strategy.replication_factor == 2
    with pytest.raises(AlreadyExists):
        session.execute("CREATE KEYSPACE ddl1 WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
    session.execute("CREATE KEYSPACE IF NOT EXISTS ddl1 WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
    session.execute("DROP KEYSPACE ddl1")
    with pytest.raises(ConfigurationException):
        session.execute("DROP KEYSPACE ddl1")
    session.execute("DROP KEYSPACE IF EXISTS ddl1")
    with pytest.raises(InvalidRequest):
        session.execute("USE ddl1")


def test_tables_use_truncate_and_errors(session, ks):
    session.execute("CREATE TABLE t (k int PRIMARY KEY, v text)")
    with pytest.raises(AlreadyExists):
        session.execute("CREATE TABLE t (k int PRIMARY KEY, v text)")
    session.execute("CREATE TABLE IF NOT EXISTS t (k int PRIMARY KEY)")
    session.execute("INSERT INTO t (k, v) VALUES (1, 'a')")
    session.execute("TRUNCATE t")
    assert list(session.execute("SELECT * FROM t")) == []
    session.execute("ALTER TABLE t ADD w bigint")
    session.execute("INSERT INTO t (k, v, w) VALUES (2, 'b', 3)")
    assert session.execute("SELECT w FROM t WHERE k = 2").one().w == 3
    with pytest.raises(InvalidRequest, match="unconfigured table nope"):
        session.execute("SELECT * FROM nope")
    with pytest.raises(SyntaxException):
        session.execute("SELEC * FROM t")
    with pytest.raises(InvalidRequest, match="Invalid non-frozen collection type list<int> for PRIMARY KEY column 'k'"):
        session.execute("CREATE TABLE c (k list<int> PRIMARY KEY, v int)")
    session.execute("DROP TABLE t")
    session.execute("DROP TABLE IF EXISTS t")
    with pytest.raises(ConfigurationException):
        session.execute("DROP TABLE t")


@pytest.mark.parametrize(
    "cql",
    [
        "CREATE MATERIALIZED VIEW mv AS SELECT * FROM t WHERE v IS NOT NULL AND k IS NOT NULL PRIMARY KEY (v, k)",
        "CREATE FUNCTION f (a int) RETURNS NULL ON NULL INPUT RETURNS int LANGUAGE java AS 'return a;'",
    ],
)
def test_unsupported_features_are_invalid_requests(session, ks, cql):
    session.execute("CREATE TABLE IF NOT EXISTS t (k int PRIMARY KEY, v int)")
    with pytest.raises(InvalidRequest):
        session.execute(cql)
