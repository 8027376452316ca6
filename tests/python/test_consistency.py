"""A one-node cluster answers consistency levels as Cassandra does: Unavailable when the
level needs more replicas than are alive."""
import pytest
from cassandra import ConsistencyLevel, Unavailable
from cassandra.policies import FallthroughRetryPolicy
from cassandra.query import SimpleStatement


def stmt(cql, cl):
    # No retry on another host: the driver would otherwise wrap the error in NoHostAvailable.
    return SimpleStatement(cql, consistency_level=cl, retry_policy=FallthroughRetryPolicy())


def test_quorum_on_rf3_is_unavailable_and_one_works(session):
    session.execute("CREATE KEYSPACE cl3 WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}")
    try:
        session.execute("CREATE TABLE cl3.t (k int PRIMARY KEY, v int)")
        ok = SimpleStatement("INSERT INTO cl3.t (k, v) VALUES (1, 1)", consistency_level=ConsistencyLevel.ONE)
        session.execute(ok)
        for cl in (ConsistencyLevel.QUORUM, ConsistencyLevel.ALL, ConsistencyLevel.TWO):
            with pytest.raises(Unavailable) as e:
                session.execute(stmt("INSERT INTO cl3.t (k, v) VALUES (2, 2)", cl))
            assert e.value.alive_replicas == 1
            with pytest.raises(Unavailable):
                session.execute(stmt("SELECT * FROM cl3.t WHERE k = 1", cl))
        read = SimpleStatement("SELECT v FROM cl3.t WHERE k = 1", consistency_level=ConsistencyLevel.LOCAL_ONE)
        assert session.execute(read).one().v == 1
        any_write = SimpleStatement("INSERT INTO cl3.t (k, v) VALUES (3, 3)", consistency_level=ConsistencyLevel.ANY)
        session.execute(any_write)
    finally:
        session.execute("DROP KEYSPACE cl3")
