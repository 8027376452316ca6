"""Protocol v5 with the Python driver (3.30), plain and LZ4: the version it settles on by
default, as against Cassandra 4.1; after the handshake every frame travels in checksummed
segments (the driver checks their CRCs). Queries, per-query keyspaces (QUERY, PREPARE and
BATCH), prepared statements and their result metadata ids, paging, values larger than a
segment, the duration type's v5 id, and schema-change events on the control connection."""
import time
import uuid

import pytest
from cassandra import ProtocolVersion
from cassandra.cluster import Cluster
from cassandra.connection import segment_codec_lz4, segment_codec_no_compression
from cassandra.policies import RoundRobinPolicy
from cassandra.query import BatchStatement, SimpleStatement
from cassandra.util import Duration


def v5_cluster(node, compression):
    return Cluster(["127.0.0.1"], port=node.port, protocol_version=ProtocolVersion.V5,
                   compression=compression, load_balancing_policy=RoundRobinPolicy(),
                   schema_event_refresh_window=0.1)


@pytest.fixture(params=[False, "lz4"], ids=["plain", "lz4"])
def compression(request):
    return request.param


@pytest.fixture()
def v5(node, compression):
    c = v5_cluster(node, compression)
    try:
        yield c
    finally:
        c.shutdown()


@pytest.fixture()
def keyspace(v5):
    """A fresh keyspace (not in use by any session: queries name it per query)."""
    s = v5.connect()
    name = f"v5_{uuid.uuid4().hex[:12]}"
    s.execute(f"CREATE KEYSPACE {name} WITH replication = {{'class': 'SimpleStrategy', 'replication_factor': 1}}")
    yield name
    s.execute(f"DROP KEYSPACE {name}")


def connections(cluster, session):
    yield cluster.control_connection._connection
    for pool in session.get_pools():
        yield from pool.get_connections()


def test_driver_picks_v5_by_default_and_checksums_every_frame(node, driver_warnings):
    # No pinned version: the driver tries DSE_V2, DSE_V1 (refused, as Cassandra 4.1 refuses
    # them), then v5, which is accepted.
    c = Cluster(["127.0.0.1"], port=node.port, load_balancing_policy=RoundRobinPolicy())
    try:
        s = c.connect()
        assert c.protocol_version == ProtocolVersion.V5
        conns = list(connections(c, s))
        assert conns and all(conn._is_checksumming_enabled for conn in conns)
        assert s.execute("SELECT release_version FROM system.local").one() is not None
    finally:
        c.shutdown()
    # The driver warns of each step down, as against Cassandra 4.1: DSE_V2 → DSE_V1 → v5,
    # and nothing else.
    steps = [r.getMessage().split(" for ")[0] for r in driver_warnings]
    assert steps == ["Downgrading core protocol version from 66 to 65",
                     "Downgrading core protocol version from 65 to 5"], steps


def test_segments_are_compressed_when_lz4_is_negotiated(v5, compression):
    s = v5.connect()
    codec = segment_codec_lz4 if compression else segment_codec_no_compression
    for conn in connections(v5, s):
        assert conn._is_checksumming_enabled
        assert conn._segment_codec is codec
    assert s.execute("SELECT cluster_name FROM system.local").one().cluster_name == "Mosaic Cluster"


def test_per_query_keyspaces_prepared_statements_and_batches(v5, keyspace):
    s = v5.connect()  # no session keyspace: only the per-query one resolves `t`
    s.execute(SimpleStatement("CREATE TABLE t (k int, c int, v text, PRIMARY KEY (k, c))", keyspace=keyspace))
    s.execute(SimpleStatement("INSERT INTO t (k, c, v) VALUES (1, 1, 'one')", keyspace=keyspace))
    with pytest.raises(Exception, match="No keyspace has been specified"):
        s.execute("SELECT v FROM t WHERE k = 1")
    rows = s.execute(SimpleStatement("SELECT v FROM t WHERE k = 1", keyspace=keyspace))
    assert [r.v for r in rows] == ["one"]

    insert = s.prepare("INSERT INTO t (k, c, v) VALUES (?, ?, ?)", keyspace=keyspace)
    select = s.prepare("SELECT c, v FROM t WHERE k = ?", keyspace=keyspace)
    assert len(insert.result_metadata_id) == 16 and len(select.result_metadata_id) == 16
    for c in range(2, 6):
        s.execute(insert, (1, c, f"v{c}"))
    assert [(r.c, r.v) for r in s.execute(select, (1,))] == [(1, "one")] + [(c, f"v{c}") for c in range(2, 6)]

    # A batch takes its keyspace from its routed statements and sends it (WITH_KEYSPACE):
    # the unqualified text statement resolves there.
    batch = BatchStatement()
    batch.add(insert, (2, 2, "prepared in a batch"))
    batch.add(SimpleStatement("INSERT INTO t (k, c, v) VALUES (2, 1, 'batched')"))
    assert batch.keyspace == keyspace
    s.execute(batch)
    assert [r.v for r in s.execute(select, (2,))] == ["batched", "prepared in a batch"]


def test_a_prepared_select_sees_added_columns_through_metadata_changed(v5, keyspace):
    s = v5.connect(keyspace)
    s.execute("CREATE TABLE t (k int PRIMARY KEY, a int)")
    s.execute("INSERT INTO t (k, a) VALUES (1, 10)")
    select = s.prepare("SELECT * FROM t WHERE k = 1")
    assert list(s.execute(select).one()._fields) == ["k", "a"]
    s.execute("ALTER TABLE t ADD b text")
    s.execute("UPDATE t SET b = 'new' WHERE k = 1")
    # The driver sends the result metadata id it was given; the columns changed, so the
    # rows come with Metadata_changed, the new id and the new columns.
    row = s.execute(select).one()
    assert (row.k, row.a, row.b) == (1, 10, "new")


def test_paging_and_values_larger_than_a_segment(v5, keyspace):
    s = v5.connect(keyspace)
    s.execute("CREATE TABLE p (k int, c int, v blob, PRIMARY KEY (k, c))")
    insert = s.prepare("INSERT INTO p (k, c, v) VALUES (?, ?, ?)")
    for c in range(1500):
        s.execute_async(insert, (0, c, b"x")).result()
    got = [r.c for r in s.execute(SimpleStatement("SELECT c FROM p WHERE k = 0", fetch_size=100))]
    assert got == list(range(1500))
    paged = s.prepare("SELECT c FROM p WHERE k = 0")
    paged.fetch_size = 333
    assert [r.c for r in s.execute(paged)] == list(range(1500))

    # 400 KB each way: the request and the answer each span several segments.
    big = bytes(range(256)) * 1600
    s.execute(insert, (1, 0, big))
    assert s.execute("SELECT v FROM p WHERE k = 1").one().v == big
    rows = list(s.execute(SimpleStatement("SELECT v FROM p WHERE k IN (0, 1)", fetch_size=2000)))
    assert len(rows) == 1501 and sum(r.v == big for r in rows) == 1  # partitions in token order


def test_duration_has_its_own_type_id(v5, keyspace):
    s = v5.connect(keyspace)
    s.execute("CREATE TABLE d (k int PRIMARY KEY, d duration)")
    s.execute("INSERT INTO d (k, d) VALUES (1, 1mo2d3ns)")
    s.execute(s.prepare("INSERT INTO d (k, d) VALUES (?, ?)"), (2, Duration(-1, -2, -3)))
    rows = {r.k: r.d for r in s.execute("SELECT k, d FROM d")}
    assert rows == {1: Duration(1, 2, 3), 2: Duration(-1, -2, -3)}


def test_schema_change_events_reach_a_v5_control_connection(node, v5, compression, keyspace):
    watcher = v5_cluster(node, compression)
    try:
        watcher.connect()
        assert watcher.control_connection._connection._is_checksumming_enabled
        assert "late" not in watcher.metadata.keyspaces[keyspace].tables
        v5.connect().execute(f"CREATE TABLE {keyspace}.late (k int PRIMARY KEY)")
        # The watcher learns of the table only from the SCHEMA_CHANGE event pushed on its
        # control connection (in a segment), then refreshes that table.
        deadline = time.monotonic() + 20
        while "late" not in watcher.metadata.keyspaces[keyspace].tables:
            assert time.monotonic() < deadline, "no schema event reached the v5 connection"
            time.sleep(0.05)
    finally:
        watcher.shutdown()
