"""Secondary indexes through the Python driver, as Apache Cassandra 4.1 behaves: CREATE/DROP
INDEX (and CREATE CUSTOM INDEX … USING 'StorageAttachedIndex'), system_schema.indexes,
system."IndexInfo", DESCRIBE, which queries an index serves without ALLOW FILTERING, and —
the property the index must keep — that a query through an index returns exactly what the
same query with ALLOW FILTERING and no index returns, under overwrites, deletions, TTLs,
paging, builds over existing data, restarts and repair, in every replica layout.

Messages and schema rows were observed on a real Cassandra 4.1.10."""
import re
import time

import pytest
from cassandra import ConsistencyLevel, InvalidRequest
from cassandra.protocol import ConfigurationException
from cassandra.cqlengine import columns, connection, management
from cassandra.cqlengine.models import Model
from cassandra.query import SimpleStatement

FILTERING = ("Cannot execute this query as it might involve data filtering and thus may have unpredictable "
             "performance. If you want to execute this query despite the performance unpredictability, "
             "use ALLOW FILTERING")
SAI = "org.apache.cassandra.index.sai.StorageAttachedIndex"


def invalid(session, cql, message, error=InvalidRequest):
    with pytest.raises(error, match=re.escape(message)):
        session.execute(cql)


def rows(session, cql, params=None, fetch_size=None, consistency=None):
    st = SimpleStatement(cql, fetch_size=fetch_size)
    if consistency is not None:
        st.consistency_level = consistency
    return sorted(tuple(r) for r in session.execute(st, params))


def schema_indexes(session, ks):
    return {r.index_name: (r.table_name, r.kind, dict(r.options)) for r in session.execute(
        "SELECT table_name, index_name, kind, options FROM system_schema.indexes WHERE keyspace_name = %s",
        (ks,))}


def wait_built(session, ks, name, timeout=30):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        built = {r.index_name for r in session.execute(
            'SELECT index_name FROM system."IndexInfo" WHERE table_name = %s', (ks,))}
        if name in built:
            return
        time.sleep(0.1)
    raise AssertionError(f"index {name} not built within {timeout}s")


TABLE = ("CREATE TABLE t (k int, c int, v int, s int static, w text, l list<int>, st set<text>, "
         "m map<text, int>, fl frozen<list<int>>, PRIMARY KEY (k, c))")


# -- DDL and schema -------------------------------------------------------------------------------

def test_create_index_names_targets_and_schema_rows(session, ks):
    session.execute(TABLE)
    session.execute("CREATE TABLE p (a int, b int, v int, PRIMARY KEY ((a, b)))")
    for target in ["v", "c", "s", "l", "st", "m", "keys(m)", "entries(m)", "full(fl)"]:
        session.execute(f"CREATE INDEX ON t ({target})")
    session.execute("CREATE INDEX ON p (a)")
    session.execute("CREATE INDEX IF NOT EXISTS ON t (v)")
    assert schema_indexes(session, ks) == {
        "t_v_idx": ("t", "COMPOSITES", {"target": "v"}),
        "t_c_idx": ("t", "COMPOSITES", {"target": "c"}),
        "t_s_idx": ("t", "COMPOSITES", {"target": "s"}),
        "t_l_idx": ("t", "COMPOSITES", {"target": "values(l)"}),
        "t_st_idx": ("t", "COMPOSITES", {"target": "values(st)"}),
        "t_m_idx": ("t", "COMPOSITES", {"target": "values(m)"}),
        "t_m_idx_1": ("t", "COMPOSITES", {"target": "keys(m)"}),
        "t_m_idx_2": ("t", "COMPOSITES", {"target": "entries(m)"}),
        "t_fl_idx": ("t", "COMPOSITES", {"target": "full(fl)"}),
        "p_a_idx": ("p", "COMPOSITES", {"target": "a"}),
    }
    invalid(session, "CREATE INDEX ON t (v)", "Index t_v_idx_1 is a duplicate of existing index t_v_idx")
    invalid(session, "CREATE INDEX i2 ON t (v)", "Index i2 is a duplicate of existing index t_v_idx")
    invalid(session, "CREATE INDEX t_v_idx ON t (w)", "Index 't_v_idx' already exists")
    session.execute("CREATE INDEX IF NOT EXISTS t_v_idx ON t (w)")
    invalid(session, "CREATE INDEX ON t (nope)", f"Undefined column name nope in table {ks}.t")
    invalid(session, "CREATE INDEX ON t (k)", "Cannot create secondary index on the only partition key column k")
    invalid(session, "CREATE INDEX ON t (keys(st))", "Cannot create index on keys of column st with non-map type")
    invalid(session, "CREATE INDEX ON t (entries(l))", "Cannot create index on entries of column l with non-map type")
    invalid(session, "CREATE INDEX ON t (full(l))", "full() indexes can only be created on frozen collections")
    invalid(session, "CREATE INDEX ON t (values(fl))",
            "Cannot create values() index on frozen column fl. Frozen collections are immutable and must be "
            "fully indexed by using the 'full(fl)' modifier")
    invalid(session, "CREATE INDEX ON t (values(v))",
            "Cannot create values() index on v. Non-collection columns only support simple indexes")
    invalid(session, "CREATE INDEX ON nope (v)", "Table 'nope' doesn't exist")
    invalid(session, 'CREATE INDEX "bad name" ON t (w)', "Illegal index name bad name", ConfigurationException)
    invalid(session, "ALTER TABLE t DROP v", "Cannot drop column v because it has dependent secondary indexes (t_v_idx)")
    invalid(session, f"DROP INDEX {ks}.nope", f"Index '{ks}.nope' doesn't exist")
    session.execute("DROP INDEX IF EXISTS nope")
    session.execute("DROP INDEX t_v_idx")
    assert "t_v_idx" not in schema_indexes(session, ks)
    session.execute("ALTER TABLE t DROP v")
    session.execute("DROP TABLE p")
    assert "p_a_idx" not in schema_indexes(session, ks)


def test_custom_indexes(session, ks):
    session.execute("CREATE TABLE t (k int PRIMARY KEY, v text, w int)")
    session.execute("CREATE CUSTOM INDEX vi ON t (v) USING 'StorageAttachedIndex'")
    session.execute(f"CREATE CUSTOM INDEX wi ON t (w) USING '{SAI}' WITH OPTIONS = {{'case_sensitive': 'true'}}")
    assert schema_indexes(session, ks) == {
        "vi": ("t", "CUSTOM", {"class_name": SAI, "target": "v"}),
        "wi": ("t", "CUSTOM", {"class_name": SAI, "case_sensitive": "true", "target": "w"}),
    }
    invalid(session, "CREATE CUSTOM INDEX ON t (w) USING 'com.example.Nope'",
            "Unable to find custom indexer class 'com.example.Nope'", ConfigurationException)
    invalid(session, "CREATE CUSTOM INDEX ON t (w) USING 'org.apache.cassandra.index.sasi.SASIIndex'",
            "SASI indexes are not supported")
    session.execute("INSERT INTO t (k, v, w) VALUES (1, 'a', 5)")
    session.execute("INSERT INTO t (k, v, w) VALUES (2, 'b', 5)")
    assert rows(session, "SELECT k FROM t WHERE v = 'a'") == [(1,)]
    assert rows(session, "SELECT k FROM t WHERE w = 5") == [(1,), (2,)]


def test_describe_shows_indexes_after_their_table(session, ks):
    session.execute("CREATE TABLE t (k int, c int, v int, m map<text, int>, PRIMARY KEY (k, c))")
    session.execute("CREATE INDEX vi ON t (v)")
    session.execute("CREATE INDEX ON t (keys(m))")
    session.execute("CREATE CUSTOM INDEX \"Ci\" ON t (c) USING 'sai'")
    described = list(session.execute("DESCRIBE TABLE t"))
    assert [(r.type, r.name) for r in described] == [
        ("table", "t"), ("index", '"Ci"'), ("index", "t_m_idx"), ("index", "vi")]
    assert [r.create_statement for r in described[1:]] == [
        f"CREATE CUSTOM INDEX \"Ci\" ON {ks}.t (c) USING '{SAI}';",
        f"CREATE INDEX t_m_idx ON {ks}.t (keys(m));",
        f"CREATE INDEX vi ON {ks}.t (v);",
    ]
    (r,) = session.execute("DESCRIBE INDEX vi")
    assert (r.type, r.create_statement) == ("index", f"CREATE INDEX vi ON {ks}.t (v);")
    keyspace = [(r.type, r.name) for r in session.execute(f"DESCRIBE KEYSPACE {ks}")]
    assert keyspace[-4:] == [("table", "t"), ("index", '"Ci"'), ("index", "t_m_idx"), ("index", "vi")]


# -- queries ---------------------------------------------------------------------------------------

def load(session):
    session.execute(TABLE)
    session.execute("INSERT INTO t (k, c, v, s, w, l, st, m, fl) VALUES (1, 1, 10, 5, 'a', [1, 2], {'x', 'y'}, "
                    "{'a': 1, 'b': 2}, [1, 2])")
    session.execute("INSERT INTO t (k, c, v, w) VALUES (1, 2, 20, 'b')")
    session.execute("INSERT INTO t (k, c, v, w, l) VALUES (2, 1, 10, 'b', [3])")


def test_queries_an_index_serves(session, ks):
    load(session)
    for target in ["v", "c", "s", "l", "st", "m", "keys(m)", "entries(m)", "full(fl)"]:
        session.execute(f"CREATE INDEX ON t ({target})")
    assert rows(session, "SELECT k, c, v FROM t WHERE v = 10") == [(1, 1, 10), (2, 1, 10)]
    assert rows(session, "SELECT k, c FROM t WHERE c = 2") == [(1, 2)]
    assert rows(session, "SELECT k, c, s FROM t WHERE s = 5") == [(1, 1, 5), (1, 2, 5)]
    assert rows(session, "SELECT k, c FROM t WHERE l CONTAINS 3") == [(2, 1)]
    assert rows(session, "SELECT k, c FROM t WHERE st CONTAINS 'y'") == [(1, 1)]
    assert rows(session, "SELECT k, c FROM t WHERE m CONTAINS 2") == [(1, 1)]
    assert rows(session, "SELECT k, c FROM t WHERE m CONTAINS KEY 'a'") == [(1, 1)]
    assert rows(session, "SELECT k, c FROM t WHERE fl = [1, 2]") == [(1, 1)]
    assert rows(session, "SELECT k, c FROM t WHERE m['b'] = 2") == [(1, 1)]
    assert rows(session, "SELECT k, c FROM t WHERE m['b'] = 1") == []
    assert rows(session, "SELECT k, c, v FROM t WHERE v = 10 AND k = 1") == [(1, 1, 10)]
    assert rows(session, "SELECT k, c, v FROM t WHERE k = 1 AND v = 10 AND c > 0") == [(1, 1, 10)]
    assert rows(session, "SELECT count(*) FROM t WHERE v = 10") == [(2,)]
    assert rows(session, "SELECT k, c FROM t WHERE v = 10 LIMIT 1") in ([(1, 1)], [(2, 1)])
    assert rows(session, "SELECT k, c, v FROM t WHERE v = 10 AND w = 'a' ALLOW FILTERING") == [(1, 1, 10)]
    assert rows(session, "SELECT k, c, v FROM t WHERE v = 99") == []
    invalid(session, "SELECT k FROM t WHERE v = 10 AND w = 'a'", FILTERING)
    invalid(session, "SELECT k FROM t WHERE v = 10 AND c = 1", FILTERING)
    invalid(session, "SELECT k FROM t WHERE v > 10", FILTERING)
    invalid(session, "SELECT k FROM t WHERE v IN (10, 20)", FILTERING)
    assert rows(session, "SELECT k, c FROM t WHERE v IN (10, 20) ALLOW FILTERING") == [(1, 1), (1, 2), (2, 1)]
    invalid(session, "SELECT k FROM t WHERE fl CONTAINS 1", FILTERING)
    invalid(session, "SELECT k FROM t WHERE m['a'] = 1 AND m['b'] = 2", FILTERING)
    invalid(session, "SELECT k FROM t WHERE v = 10 AND k IN (1, 2)",
            "Select on indexed columns and with IN clause for the PRIMARY KEY are not supported")
    invalid(session, "SELECT k FROM t WHERE v = 10 ORDER BY c DESC", "ORDER BY with 2ndary indexes is not supported.")


def test_index_on_a_partition_key_component(session, ks):
    session.execute("CREATE TABLE p (a int, b int, v int, PRIMARY KEY ((a, b)))")
    session.execute("CREATE INDEX ON p (a)")
    for a, b in [(1, 1), (1, 2), (2, 1)]:
        session.execute("INSERT INTO p (a, b, v) VALUES (%s, %s, %s)", (a, b, a * 10 + b))
    assert rows(session, "SELECT a, b, v FROM p WHERE a = 1") == [(1, 1, 11), (1, 2, 12)]
    session.execute("DELETE FROM p WHERE a = 1 AND b = 2")
    assert rows(session, "SELECT a, b FROM p WHERE a = 1") == [(1, 1)]


def test_overwrites_deletes_and_ttls_never_show_stale_rows(session, ks):
    session.execute("CREATE TABLE t (k int, c int, v int, s set<int>, PRIMARY KEY (k, c))")
    session.execute("CREATE INDEX ON t (v)")
    session.execute("CREATE INDEX ON t (s)")
    for k in range(20):
        session.execute("INSERT INTO t (k, c, v, s) VALUES (%s, 0, %s, {1, 2})", (k, k % 2))
    session.execute("UPDATE t SET v = 7 WHERE k = 0 AND c = 0")
    session.execute("DELETE FROM t WHERE k = 2 AND c = 0")
    session.execute("DELETE FROM t WHERE k = 4")
    session.execute("UPDATE t SET v = null, s = s - {1} WHERE k = 6 AND c = 0")
    session.execute("UPDATE t USING TTL 1 SET v = 0 WHERE k = 8 AND c = 0")
    session.execute("INSERT INTO t (k, c, v) VALUES (10, 0, 1) USING TIMESTAMP 1")  # older: loses
    time.sleep(1.5)
    expected = [(k,) for k in range(0, 20, 2) if k not in (0, 2, 4, 6, 8)]
    for _ in range(2):  # the second read runs after the first deleted the stale entries
        assert rows(session, "SELECT k FROM t WHERE v = 0") == expected
        assert rows(session, "SELECT k FROM t WHERE v = 7") == [(0,)]
    assert rows(session, "SELECT k FROM t WHERE s CONTAINS 1") == [
        (k,) for k in range(20) if k not in (2, 4, 6)]
    assert rows(session, "SELECT k FROM t WHERE v = 0") == rows(session, "SELECT k FROM t WHERE v = 0 ALLOW FILTERING")


def test_paging_through_an_index(session, ks):
    session.execute("CREATE TABLE t (k int, c int, v int, PRIMARY KEY (k, c))")
    session.execute("CREATE INDEX ON t (v)")
    insert = session.prepare("INSERT INTO t (k, c, v) VALUES (?, ?, ?)")
    for k in range(60):
        for c in range(5):
            session.execute(insert, (k, c, (k + c) % 3))
    expected = rows(session, "SELECT k, c, v FROM t WHERE v = 1 ALLOW FILTERING")
    assert len(expected) == 100
    for fetch_size in (1, 7, 100, 1000):
        assert rows(session, "SELECT k, c, v FROM t WHERE v = 1", fetch_size=fetch_size) == expected
    assert rows(session, "SELECT k, c, v FROM t WHERE v = 1 LIMIT 10", fetch_size=3) == \
        rows(session, "SELECT k, c, v FROM t WHERE v = 1 LIMIT 10")


def test_paging_through_indexes_that_return_whole_partitions(session, ks):
    """An index on a static column or a partition key component (or on map keys and entries)
    answers with whole partitions: a page that ends inside one resumes with the rest of it."""
    session.execute("CREATE TABLE st (k int, c int, s int static, m map<int, int>, PRIMARY KEY (k, c))")
    session.execute("CREATE TABLE pk (a int, b int, c int, v int, PRIMARY KEY ((a, b), c))")
    for target in ["s", "keys(m)", "entries(m)"]:
        session.execute(f"CREATE INDEX ON st ({target})")
    session.execute("CREATE INDEX ON pk (a)")
    for k in range(3):
        for c in range(5):
            session.execute("INSERT INTO st (k, c, s, m) VALUES (%s, %s, 1, {7: %s})", (k, c, c % 2))
            session.execute("INSERT INTO pk (a, b, c, v) VALUES (1, %s, %s, %s)", (k, c, c))
    cases = [
        ("SELECT k, c FROM st WHERE s = 1", 15),
        ("SELECT k, c FROM st WHERE k = 1 AND s = 1", 5),
        ("SELECT k, c FROM st WHERE m CONTAINS KEY 7", 15),
        ("SELECT k, c FROM st WHERE m[7] = 1", 6),
        ("SELECT a, b, c FROM pk WHERE a = 1", 15),
        ("SELECT a, b, c FROM pk WHERE a = 1 AND b = 2 AND c > 1", 3),
    ]
    for cql, count in cases:
        expected = rows(session, cql)
        assert len(expected) == count, cql
        for fetch_size in range(1, 6):
            assert rows(session, cql, fetch_size=fetch_size) == expected, (cql, fetch_size)


def test_an_index_created_over_existing_data_is_built(session, ks):
    session.execute("CREATE TABLE t (k int, c int, v text, PRIMARY KEY (k, c))")
    insert = session.prepare("INSERT INTO t (k, c, v) VALUES (?, ?, ?)")
    for k in range(300):
        session.execute(insert, (k, k % 7, f"v{k % 11}"))
    session.execute("CREATE INDEX vi ON t (v)")
    wait_built(session, ks, "vi")
    for value in ("v0", "v5", "nope"):
        assert rows(session, "SELECT k, c FROM t WHERE v = %s", (value,)) == \
            rows(session, "SELECT k, c FROM t WHERE v = %s ALLOW FILTERING", (value,))
    session.execute("TRUNCATE t")
    assert rows(session, "SELECT k FROM t WHERE v = 'v0'") == []
    session.execute("INSERT INTO t (k, c, v) VALUES (1, 1, 'v0')")
    assert rows(session, "SELECT k FROM t WHERE v = 'v0'") == [(1,)]


class Tagged(Model):
    __table_name__ = "tagged"
    id = columns.Integer(primary_key=True)
    owner = columns.Text(index=True)
    score = columns.Integer(index=True)
    note = columns.Text()


def test_cqlengine_indexed_columns(node, ks, monkeypatch):
    """cqlengine's `index=True` creates indexes through sync_table (twice: the second sync
    finds them in the driver's metadata), and its filters on them need no ALLOW FILTERING."""
    monkeypatch.setenv("CQLENG_ALLOW_SCHEMA_MANAGEMENT", "1")
    connection.register_connection("mosaic-idx", session=node.cluster().connect(), default=True)
    try:
        Tagged.__keyspace__ = ks
        management.sync_table(Tagged, keyspaces=[ks], connections=["mosaic-idx"])
        management.sync_table(Tagged, keyspaces=[ks], connections=["mosaic-idx"])
        for i in range(10):
            Tagged.create(id=i, owner=f"o{i % 3}", score=i % 2, note="n")
        assert sorted(t.id for t in Tagged.objects(owner="o1")) == [1, 4, 7]
        assert sorted(t.id for t in Tagged.objects(score=1)) == [1, 3, 5, 7, 9]
        targets = {r.options["target"] for r in node.cluster().connect().execute(
            "SELECT options FROM system_schema.indexes WHERE keyspace_name = %s", (ks,))}
        assert targets == {"owner", "score"}
    finally:
        connection.unregister_connection("mosaic-idx")
