"""CQL's JSON support through the Python driver, as Apache Cassandra 4.1 behaves: SELECT JSON,
INSERT … JSON (DEFAULT NULL / DEFAULT UNSET, bind markers), toJson() and fromJson(), over
every kind of type. Expectations were checked against a real Cassandra 4.1.10 with
`MOSAIC_TEST_AGAINST=host:port`."""
import json
import re

import pytest
from cassandra import InvalidRequest

TABLE = ("CREATE TABLE t (k int, c text, i bigint, d double, b boolean, bl blob, u uuid, ts timestamp, "
         "dt date, tm time, ip inet, l list<int>, s set<text>, m map<int, text>, tu tuple<int, text>, "
         "fl frozen<list<int>>, \"Cased\" int, PRIMARY KEY (k, c))")


def invalid(session, cql, message, params=None):
    with pytest.raises(InvalidRequest, match=re.escape(message)):
        session.execute(cql, params)


def json_rows(session, cql, params=None):
    return [r[0] for r in session.execute(cql, params)]


def test_select_json_renders_every_type(session, ks):
    session.execute(TABLE)
    session.execute("INSERT INTO t (k, c, i, d, b, bl, u, ts, dt, tm, ip, l, s, m, tu, fl, \"Cased\") VALUES "
                    "(1, 'x\"y', 9000000000, 1.5, true, 0x0a0b, 123e4567-e89b-12d3-a456-426614174000, "
                    "'2024-01-02 03:04:05.678+0000', '2024-01-02', '03:04:05.000000001', '10.0.0.1', "
                    "[1, 2], {'a', 'b'}, {1: 'one', 2: 'two'}, (3, 'three'), [4], 7)")
    (row,) = json_rows(session, "SELECT JSON * FROM t")
    assert row == (
        '{"k": 1, "c": "x\\"y", "\\"Cased\\"": 7, "b": true, "bl": "0x0a0b", "d": 1.5, "dt": "2024-01-02", '
        '"fl": [4], "i": 9000000000, "ip": "10.0.0.1", "l": [1, 2], "m": {"1": "one", "2": "two"}, '
        '"s": ["a", "b"], "tm": "03:04:05.000000001", "ts": "2024-01-02 03:04:05.678Z", '
        '"tu": [3, "three"], "u": "123e4567-e89b-12d3-a456-426614174000"}')
    assert json.loads(row)["m"] == {"1": "one", "2": "two"}
    (row,) = json_rows(session, "SELECT JSON k, c AS name, i FROM t")
    assert row == '{"k": 1, "name": "x\\"y", "i": 9000000000}'
    session.execute("INSERT INTO t (k, c) VALUES (2, 'nulls')")
    (row,) = json_rows(session, "SELECT JSON k, i, l FROM t WHERE k = 2")
    assert row == '{"k": 2, "i": null, "l": null}'
    (row,) = session.execute("SELECT toJson(m), toJson(ts) FROM t WHERE k = 1")
    assert tuple(row) == ('{"1": "one", "2": "two"}', '"2024-01-02 03:04:05.678Z"')
    cols = session.execute("SELECT JSON k FROM t WHERE k = 1").column_names
    assert cols == ["[json]"]


def test_insert_json_default_null_and_unset(session, ks):
    session.execute(TABLE)
    session.execute("""INSERT INTO t JSON '{"k": 1, "c": "a", "i": "42", "d": 2, "b": "true", "bl": "0xff",
        "ts": 1700000000123, "dt": "2024-02-03", "ip": "::1", "l": [3, 1], "s": ["z", "y"],
        "m": {"5": "five"}, "tu": [1, "x"], "fl": [2], "\\"Cased\\"": 9}'""")
    row = session.execute("SELECT * FROM t WHERE k = 1").one()
    assert (row.i, row.d, row.b, row.bl, row.l, row.s, dict(row.m), row.tu, row.fl, row.Cased) == \
        (42, 2.0, True, b"\xff", [3, 1], {"y", "z"}, {5: "five"}, (1, "x"), [2], 9)
    assert str(row.dt) == "2024-02-03" and row.ip == "::1"
    session.execute("""INSERT INTO t JSON '{"k": 1, "c": "a", "i": 7}' DEFAULT UNSET""")
    row = session.execute("SELECT i, d, l FROM t WHERE k = 1").one()
    assert (row.i, row.d, row.l) == (7, 2.0, [3, 1])
    session.execute("""INSERT INTO t JSON '{"k": 1, "c": "a", "i": 8}'""")
    row = session.execute("SELECT i, d, l FROM t WHERE k = 1").one()
    assert (row.i, row.d, row.l) == (8, None, None)
    prepared = session.prepare("INSERT INTO t JSON ?")
    assert [c.name for c in prepared.column_metadata] == ["[json]"]
    session.execute(prepared, ['{"k": 2, "c": "b", "tm": "01:02:03"}'])
    assert str(session.execute("SELECT tm FROM t WHERE k = 2").one().tm).startswith("01:02:03")
    # A JSON insert round trips SELECT JSON's output.
    (out,) = json_rows(session, "SELECT JSON * FROM t WHERE k = 1")
    session.execute("DELETE FROM t WHERE k = 1")
    session.execute(prepared, [out])
    assert json_rows(session, "SELECT JSON * FROM t WHERE k = 1") == [out]


def test_json_errors(session, ks):
    session.execute(TABLE)
    invalid(session, """INSERT INTO t JSON '{"k": 1, "c": "a", "nope": 1}'""",
            "JSON values map contains unrecognized column: nope")
    invalid(session, "INSERT INTO t JSON 'not json'", "Could not decode JSON string as a map")
    invalid(session, """INSERT INTO t JSON '{"k": "x", "c": "a"}'""", "Error decoding JSON value for k")
    invalid(session, """INSERT INTO t JSON '{"c": "a"}'""", "Invalid null value in condition for column k")


def test_from_json(session, ks):
    session.execute(TABLE)
    session.execute("INSERT INTO t (k, c, l, m) VALUES (1, 'a', fromJson('[1, 2]'), fromJson('{\"3\": \"c\"}'))")
    session.execute("UPDATE t SET i = fromJson('5') WHERE k = 1 AND c = 'a'")
    row = session.execute("SELECT i, l, m FROM t WHERE k = fromJson('1') AND c = 'a'").one()
    assert (row.i, row.l, dict(row.m)) == (5, [1, 2], {3: "c"})
