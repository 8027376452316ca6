"""DESCRIBE through the real cqlsh (which, against a 4.0 server, only describes server-side),
and the Python driver's 4.0 schema parser reading the same schema without warnings."""
import pytest

from cqlsh_runner import INSTALLED, cqlsh

needs_cqlsh = pytest.mark.skipif(not INSTALLED, reason="cqlsh is not installed (scripts/test installs it)")

TABLE = (
    "CREATE TABLE {ks}.events (day date, kind text, at timestamp, region text static, payload blob, "
    "PRIMARY KEY ((day, kind), at)) WITH CLUSTERING ORDER BY (at DESC) AND comment = 'it''s a log' "
    "AND default_time_to_live = 60"
)


def described(node, cql, keyspace=None):
    """cqlsh's output, without the notice cqlsh 6.2 prints for any server but 5.0 (a real
    Cassandra 4.0 gets it too)."""
    r = cqlsh(node, cql, keyspace)
    assert r.returncode == 0, r.stderr
    assert "DESCRIBE|DESC was moved to server side" not in r.stdout
    lines = r.stdout.splitlines(keepends=True)
    return "".join(line for line in lines if not line.startswith("WARNING: cqlsh was built against"))


@needs_cqlsh
def test_cqlsh_describes_keyspaces_tables_and_the_cluster(node, session, ks):
    session.execute(TABLE.format(ks=ks))
    session.execute(f"CREATE TABLE {ks}.kv (k int PRIMARY KEY, v text)")

    out = described(node, "DESCRIBE KEYSPACES")
    for name in (ks, "system", "system_schema", "system_virtual_schema"):
        assert name in out.split(), out

    out = described(node, f"DESCRIBE TABLE {ks}.events")
    assert (
        f"CREATE TABLE {ks}.events (\n"
        "    day date,\n"
        "    kind text,\n"
        "    at timestamp,\n"
        "    region text static,\n"
        "    payload blob,\n"
        "    PRIMARY KEY ((day, kind), at)\n"
        ") WITH CLUSTERING ORDER BY (at DESC)\n"
        "    AND additional_write_policy = '99p'\n"
    ) in out, out
    assert "    AND comment = 'it''s a log'\n" in out
    assert "    AND default_time_to_live = 60\n" in out
    assert "    AND extensions = {'mosaic.layout': 0x756e69666f726d}\n" in out
    assert out.rstrip().endswith("AND speculative_retry = '99p';")

    out = described(node, f"DESCRIBE KEYSPACE {ks}")
    assert f"CREATE KEYSPACE {ks} WITH replication = {{'class': 'SimpleStrategy', 'replication_factor': '1'}}  AND durable_writes = true;" in out
    assert out.index(f"CREATE TABLE {ks}.events") < out.index(f"CREATE TABLE {ks}.kv")

    out = described(node, "DESCRIBE TABLES", keyspace=ks)
    assert out.split() == ["events", "kv"], out

    out = described(node, "DESC SCHEMA")
    assert f"CREATE KEYSPACE {ks} " in out and "CREATE TABLE system.local" not in out
    assert "CREATE TABLE system.local" in described(node, "DESCRIBE FULL SCHEMA")

    # cqlsh fetches the description page by page; small pages give the same text.
    paged = described(node, "PAGING 3; DESCRIBE FULL SCHEMA")
    assert paged.replace("Page size: 3\n", "", 1) == described(node, "DESCRIBE FULL SCHEMA")
    assert paged.count("CREATE TABLE ") > 30

    out = described(node, "DESCRIBE CLUSTER")
    assert "Cluster: Mosaic Cluster" in out and "Partitioner: Murmur3Partitioner" in out
    assert "Range ownership" not in out
    out = described(node, "DESCRIBE CLUSTER", keyspace=ks)
    assert "Range ownership:" in out and "[/127.0.0.1:7000]" in out

    assert described(node, "DESCRIBE TYPES; DESCRIBE FUNCTIONS; DESCRIBE AGGREGATES", keyspace=ks).strip() == ""


@needs_cqlsh
def test_describe_output_recreates_the_same_table(node, session, ks):
    session.execute(TABLE.format(ks=ks))
    before = described(node, f"DESCRIBE TABLE {ks}.events")
    session.execute(f"DROP TABLE {ks}.events")
    # Stripped: `cqlsh -e` appends ';' to text that does not end with one, and a lone ';' is
    # a syntax error (in Cassandra too).
    r = cqlsh(node, before.strip())
    assert r.returncode == 0, r.stderr
    assert described(node, f"DESCRIBE TABLE {ks}.events") == before
    session.execute(f"INSERT INTO {ks}.events (day, kind, at, payload) VALUES ('2024-01-01', 'a', 1, 0x01)")
    assert session.execute(f"SELECT payload FROM {ks}.events").one().payload == b"\x01"


@needs_cqlsh
@pytest.mark.parametrize(
    "cql, message",
    [
        ("DESCRIBE KEYSPACE nope", "'nope' not found in keyspaces"),
        ("DESCRIBE TABLE nope.t", "'nope' not found in keyspaces"),
        ("DESCRIBE TABLE system.nope", "Table 'nope' not found in keyspace 'system'"),
        ("DESCRIBE system.nope", "'nope' not found in keyspace 'system'"),
        ("DESCRIBE TYPE system.ty", "User defined type 'ty' not found in 'system'"),
        ("DESCRIBE TABLE t", "No keyspace specified and no current keyspace"),
    ],
)
def test_cqlsh_shows_cassandras_describe_errors(node, cql, message):
    r = cqlsh(node, cql)
    assert r.returncode != 0
    assert message in r.stderr, r.stderr


def test_driver_4_0_schema_parser_reads_mosaic_without_warnings(node, driver_warnings):
    c = node.cluster()
    try:
        s = c.connect()
        assert s.execute("SELECT release_version FROM system.local").one().release_version.startswith("4.0.")
        s.execute("CREATE KEYSPACE parser4 WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
        s.execute("CREATE TABLE parser4.t (k int PRIMARY KEY, v text) WITH read_repair = 'NONE' AND speculative_retry = '95PERCENTILE'")
        assert c.control_connection.wait_for_schema_agreement()
        md = c.metadata
        # The 4.0 parser also reads system_virtual_schema: Mosaic serves it, valid and small.
        virtual = md.keyspaces["system_virtual_schema"]
        assert virtual.virtual
        assert sorted(virtual.tables) == ["columns", "keyspaces", "tables"]
        assert [col.name for col in virtual.tables["tables"].primary_key] == ["keyspace_name", "table_name"]
        # ... and the 4.0 options of system_schema.tables.
        options = md.keyspaces["parser4"].tables["t"].options
        assert options["read_repair"] == "NONE"
        assert options["additional_write_policy"] == "99p"
        assert options["speculative_retry"] == "95p"
        assert options["cdc"] is False
        assert "read_repair_chance" not in options
        assert "AND read_repair = 'NONE'" in md.keyspaces["parser4"].export_as_string()
        s.execute("DROP KEYSPACE parser4")
        assert c.control_connection.wait_for_schema_agreement()
    finally:
        c.shutdown()
    assert not driver_warnings, [r.getMessage() for r in driver_warnings]
