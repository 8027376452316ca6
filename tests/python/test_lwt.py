"""Lightweight transactions through the Python driver on one node, as Apache Cassandra 4.1
answers them: `was_applied` and the `[applied]` rows (the existing row for IF NOT EXISTS, the
conditioned columns otherwise), prepared conditional statements with their markers, conditional
batches on one partition, Cassandra's refusals, and reads at SERIAL / LOCAL_SERIAL.
Expectations were checked against a real Cassandra 4.1.10 with `MOSAIC_TEST_AGAINST=host:port`."""
import re

import pytest
from cassandra import ConsistencyLevel, InvalidRequest
from cassandra.query import BatchStatement, SimpleStatement

SCHEMA = [
    "CREATE TABLE u (k int PRIMARY KEY, v int, w text)",
    "CREATE TYPE addr (street text, zip int)",
    "CREATE TABLE c (k int, c int, s int static, v int, m map<text, int>, l list<int>, "
    "st set<int>, a addr, PRIMARY KEY (k, c))",
]


@pytest.fixture
def tables(session, ks):
    for cql in SCHEMA:
        session.execute(cql)
    return session


def invalid(session, cql, message, params=None, **kwargs):
    with pytest.raises(InvalidRequest, match=re.escape(message)):
        session.execute(SimpleStatement(cql, **kwargs) if kwargs else cql, params)


def answer(session, statement, params=None):
    rs = session.execute(statement, params)
    return rs.column_names, [tuple(r) for r in rs.current_rows], rs.was_applied


def test_insert_if_not_exists_returns_the_existing_row(tables):
    s = tables
    assert answer(s, "INSERT INTO u (k, v, w) VALUES (1, 1, 'a') IF NOT EXISTS") == (
        ["[applied]"], [(True,)], True)
    assert answer(s, "INSERT INTO u (k, v, w) VALUES (1, 2, 'b') IF NOT EXISTS") == (
        ["[applied]", "k", "v", "w"], [(False, 1, 1, "a")], False)
    assert list(s.execute("SELECT v, w FROM u WHERE k = 1")) == [(1, "a")]
    assert s.execute("INSERT INTO u (k, v) VALUES (2, 2) IF NOT EXISTS USING TTL 100").was_applied
    (ttl,) = s.execute("SELECT ttl(v) FROM u WHERE k = 2").one()
    assert 90 < ttl <= 100


def test_conditional_updates_and_deletes(tables):
    s = tables
    s.execute("INSERT INTO u (k, v, w) VALUES (1, 1, 'a')")
    assert s.execute("UPDATE u SET v = 3 WHERE k = 1 IF v = 1").was_applied
    assert answer(s, "UPDATE u SET v = 4 WHERE k = 1 IF w = 'a' AND v = 1") == (
        ["[applied]", "w", "v"], [(False, "a", 3)], False)
    assert answer(s, "UPDATE u SET v = 4 WHERE k = 9 IF v = 1") == (["[applied]"], [(False,)], False)
    assert not s.execute("UPDATE u SET v = 4 WHERE k = 9 IF EXISTS").was_applied
    for cond, applied in [("v != 3", False), ("v < 3", False), ("v <= 3", True), ("v > 3", True),
                          ("v >= 9", False), ("v IN (1, 5)", True), ("v = null", False),
                          ("v != null", True)]:
        rs = s.execute(f"UPDATE u SET v = 5 WHERE k = 1 IF {cond}")
        assert rs.was_applied == applied, cond
    assert answer(s, "DELETE FROM u WHERE k = 1 IF v = 1") == (["[applied]", "v"], [(False, 5)], False)
    assert s.execute("DELETE FROM u WHERE k = 1 IF EXISTS").was_applied
    assert not s.execute("DELETE FROM u WHERE k = 1 IF EXISTS").was_applied
    assert s.execute("SELECT * FROM u WHERE k = 1").one() is None


def test_conditions_on_elements_fields_and_static_columns(tables):
    s = tables
    s.execute("INSERT INTO c (k, c, v, m, l, st, a) VALUES (1, 1, 10, {'a': 1, 'b': 2}, [5, 6, 7], "
              "{1, 2}, {street: 'x', zip: 3})")
    cols, rows, applied = answer(s, "UPDATE c SET v = 12 WHERE k = 1 AND c = 1 IF m['a'] = 2")
    assert (cols, applied) == (["[applied]", "m"], False)
    assert dict(rows[0][1]) == {"a": 1, "b": 2}
    assert s.execute("UPDATE c SET v = 12 WHERE k = 1 AND c = 1 IF m['a'] = 1 AND m['zz'] = null").was_applied
    assert answer(s, "UPDATE c SET v = 13 WHERE k = 1 AND c = 1 IF l[1] = 7")[1] == [(False, [5, 6, 7])]
    assert s.execute("UPDATE c SET v = 13 WHERE k = 1 AND c = 1 IF l[9] = null AND l > [5, 6]").was_applied
    assert s.execute("UPDATE c SET v = 14 WHERE k = 1 AND c = 1 IF st CONTAINS 1 AND m CONTAINS KEY 'b'").was_applied
    cols, rows, _ = answer(s, "UPDATE c SET v = 15 WHERE k = 1 AND c = 1 IF a.zip = 4")
    assert cols == ["[applied]", "a"] and (rows[0][1].street, rows[0][1].zip) == ("x", 3)
    # Static columns: conditions read the static row; regular conditions come first.
    assert s.execute("UPDATE c SET s = 1 WHERE k = 1 IF s = null").was_applied
    assert answer(s, "UPDATE c SET s = 2, v = 3 WHERE k = 1 AND c = 1 IF s = 5 AND v = 4") == (
        ["[applied]", "v", "s"], [(False, 14, 1)], False)
    # A static-only INSERT … IF NOT EXISTS checks the static row.
    assert answer(s, "INSERT INTO c (k, s) VALUES (1, 9) IF NOT EXISTS")[1] == [
        (False, 1, 1, 1, None, None, None, None, None)]
    s.execute("INSERT INTO c (k, c, v) VALUES (2, 1, 1)")
    assert s.execute("INSERT INTO c (k, s) VALUES (2, 9) IF NOT EXISTS").was_applied


def test_prepared_conditional_statements(tables):
    s = tables
    p = s.prepare("UPDATE c SET v = ? WHERE k = ? AND c = ? IF v = ? AND m[?] IN ?")
    assert [(c.name, c.type.typename) for c in p.column_metadata] == [
        ("v", "int"), ("k", "int"), ("c", "int"), ("v", "int"), ("key(m)", "varchar"),
        ("in(value(m))", "list")]
    s.execute("INSERT INTO c (k, c, v, m) VALUES (1, 1, 1, {'a': 1})")
    assert s.execute(p, (2, 1, 1, 1, "a", [1, 3])).was_applied
    rs = s.execute(p, (3, 1, 1, 1, "a", [1]))
    assert not rs.was_applied
    assert rs.column_names == ["[applied]", "v", "m"]
    assert tuple(rs.one())[:2] == (False, 2)
    p = s.prepare("INSERT INTO u (k, v) VALUES (:k, :v) IF NOT EXISTS")
    assert [c.name for c in p.column_metadata] == ["k", "v"]
    assert s.execute(p, {"k": 7, "v": 7}).was_applied
    assert not s.execute(p, {"k": 7, "v": 8}).was_applied
    with pytest.raises(InvalidRequest, match=re.escape("Invalid null list in IN condition")):
        s.execute(s.prepare("UPDATE u SET v = ? WHERE k = ? IF v IN ?"), (1, 7, None))


def test_conditional_batches(tables):
    s = tables
    b = BatchStatement()
    b.add("INSERT INTO c (k, c, v) VALUES (5, 1, 1) IF NOT EXISTS")
    b.add("INSERT INTO c (k, c, v) VALUES (5, 2, 2) IF NOT EXISTS")
    assert s.execute(b).was_applied
    b = BatchStatement(serial_consistency_level=ConsistencyLevel.LOCAL_SERIAL)
    b.add(s.prepare("UPDATE c SET v = ? WHERE k = ? AND c = ? IF v = ?"), (5, 5, 1, 1))
    b.add("UPDATE c SET v = 5 WHERE k = 5 AND c = 2 IF v = 9")
    b.add("INSERT INTO c (k, c, v) VALUES (5, 3, 3)")
    rs = s.execute(b)
    assert not rs.was_applied
    assert rs.column_names == ["[applied]", "k", "c", "v"]
    assert [tuple(r) for r in rs.current_rows] == [(False, 5, 1, 1), (False, 5, 2, 2)]
    assert s.execute("SELECT * FROM c WHERE k = 5 AND c = 3").one() is None
    assert s.execute("BEGIN BATCH UPDATE c SET v = 6 WHERE k = 5 AND c = 1 IF v = 1; "
                     "INSERT INTO c (k, c, v) VALUES (5, 3, 3); APPLY BATCH").was_applied
    assert list(s.execute("SELECT c, v FROM c WHERE k = 5")) == [(1, 6), (2, 2), (3, 3)]
    invalid(s, "BEGIN BATCH UPDATE c SET v = 6 WHERE k = 5 AND c = 1 IF v = 1; "
               "UPDATE c SET v = 6 WHERE k = 6 AND c = 1 IF v = 1; APPLY BATCH",
            "Batch with conditions cannot span multiple partitions")
    invalid(s, "BEGIN BATCH UPDATE c SET v = 6 WHERE k = 5 AND c = 1 IF v = 1; "
               "UPDATE u SET v = 6 WHERE k = 5 IF v = 1; APPLY BATCH",
            "Batch with conditions cannot span multiple tables")
    invalid(s, "BEGIN BATCH USING TIMESTAMP 5 UPDATE c SET v = 6 WHERE k = 5 AND c = 1 IF v = 5; APPLY BATCH",
            "Cannot provide custom timestamp for conditional BATCH")


def test_refusals(tables):
    s = tables
    invalid(s, "INSERT INTO u (k, v) VALUES (3, 2) IF NOT EXISTS USING TIMESTAMP 100",
            "Cannot provide custom timestamp for conditional updates")
    invalid(s, "UPDATE u SET v = 9 WHERE k = 1 IF k = 1", "PRIMARY KEY column 'k' cannot have IF conditions")
    invalid(s, "UPDATE u SET v = 9 WHERE k IN (1, 2) IF v = 1",
            "IN on the partition key is not supported with conditional updates")
    invalid(s, "UPDATE u SET v = 9 WHERE k = 1 IF v > null", 'Invalid comparison with null for operator ">"')
    invalid(s, "DELETE FROM c WHERE k = 8 IF EXISTS",
            "DELETE statements must restrict all PRIMARY KEY columns with equality relations in order "
            "to delete non static columns")
    invalid(s, "UPDATE c SET v = 1 WHERE k = 1 AND c = 1 IF st[1] = 7",
            "Invalid element access syntax for set column st")
    invalid(s, "UPDATE u SET v = 1 WHERE k = 3 IF EXISTS",
            "SERIAL is not supported as conditional update commit consistency",
            consistency_level=ConsistencyLevel.SERIAL)
    invalid(s, "UPDATE u SET v = 1 WHERE k = 3", "You must use conditional updates for serializable writes",
            consistency_level=ConsistencyLevel.SERIAL)


def test_reads_at_serial(tables):
    s = tables
    assert s.execute(SimpleStatement("INSERT INTO u (k, v) VALUES (1, 1) IF NOT EXISTS",
                                     serial_consistency_level=ConsistencyLevel.LOCAL_SERIAL)).was_applied
    s.execute("INSERT INTO u (k, v) VALUES (2, 2)")
    for level in (ConsistencyLevel.SERIAL, ConsistencyLevel.LOCAL_SERIAL):
        one = SimpleStatement("SELECT k, v FROM u WHERE k = 1", consistency_level=level)
        assert list(s.execute(one)) == [(1, 1)]
        # Cassandra 4.1 reads several partitions at SERIAL too.
        many = SimpleStatement("SELECT k, v FROM u WHERE k IN (1, 2)", consistency_level=level)
        assert sorted(s.execute(many)) == [(1, 1), (2, 2)]
