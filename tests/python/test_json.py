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


def test_select_json_keys_quote_only_upper_case_names(session, ks):
    session.execute('CREATE TABLE cs ("Pk" int, ck text, "Ck2" int, st int static, "Val" text, "with space" int, '
                    '"select" int, "a""b" int, PRIMARY KEY ("Pk", ck, "Ck2"))')
    session.execute('INSERT INTO cs ("Pk", ck, "Ck2", st, "Val", "with space", "select", "a""b") VALUES (1, \'c\', 2, 7, \'v\', 3, 4, 5)')
    assert json_rows(session, "SELECT JSON * FROM cs") == [
        '{"\\"Pk\\"": 1, "ck": "c", "\\"Ck2\\"": 2, "st": 7, "\\"Val\\"": "v", "a\\"b": 5, "select": 4, "with space": 3}']
    assert json_rows(session, 'SELECT JSON "Pk" AS pk, "Val" AS "V2", "a""b", writetime("Val") FROM cs')[0].startswith(
        '{"pk": 1, "\\"V2\\"": "v", "a\\"b": 5, "\\"writetime(Val)\\"": ')
    assert json_rows(session, 'SELECT JSON count(*), max(st) FROM cs') == ['{"count": 1, "system.max(st)": 7}']


def test_rendering_of_numbers_times_and_nested_types(session, ks):
    session.execute('CREATE TYPE addr (street text, "Zip" int)')
    session.execute("CREATE TABLE n (k int PRIMARY KEY, f float, d double, de decimal, ts timestamp, dt date, du duration, "
                    "mi map<int, text>, mfl map<frozen<list<text>>, int>, tup tuple<int, text, boolean>, u frozen<addr>, "
                    "sd set<double>)")
    session.execute("INSERT INTO n (k, f, d, de, ts, dt, du, mi, mfl, tup, u, sd) VALUES (1, 0.1, 1e-5, 1E+3, "
                    "253402300800000, '1969-12-31', 0s, {1: 'a'}, {['a', 'b']: 1}, (1, null, true), "
                    "{street: 's'}, {1.0, NaN})")
    assert json_rows(session, "SELECT JSON f, d, de, ts, dt, du, mi, mfl, tup, u, sd FROM n") == [
        '{"f": 0.1, "d": 1.0E-5, "de": 1E+3, "ts": "+10000-01-01 00:00:00.000Z", "dt": "1969-12-31", "du": "", '
        '"mi": {"1": "a"}, "mfl": {"[\\"a\\", \\"b\\"]": 1}, "tup": [1, null, true], '
        '"u": {"street": "s", "\\"Zip\\"": null}, "sd": [1.0, null]}']
    rs = session.execute("SELECT toJson(f), toJson(toJson(u)), toJson(writetime(f)) FROM n")
    assert rs.column_names == ["system.tojson(f)", "system.tojson(system.tojson(u))", "system.tojson(writetime(f))"]
    row = rs.one()
    assert row[0] == "0.1" and row[1] == '"{\\"street\\": \\"s\\", \\"\\\\\\"Zip\\\\\\"\\": null}"' and row[2].isdigit()


def test_insert_json_messages_are_cassandras(session, ks):
    session.execute("CREATE TABLE ij (k int, c int, v text, l list<int>, tu tuple<int, text>, s int static, "
                    "PRIMARY KEY (k, c))")
    for doc, message in [
        ('{"k": 1, "c": 1, "x": 1}', "JSON values map contains unrecognized column: x"),
        ('{"k": 3, "s": 1}', "Invalid null value in condition for column c"),
        ('null', "Got null for INSERT JSON values"),
        ('{"k": 1, "c": 1, "v": 5}', "Error decoding JSON value for v: Expected a UTF-8 string, but got a Integer: 5"),
        ('{"k": 2147483648, "c": 1}', "Error decoding JSON value for k: Expected an int value, but got a Long: 2147483648"),
        ('{"k": "x", "c": 1}', "Error decoding JSON value for k: Unable to make int from 'x'"),
        ('{"k": 1, "c": 1, "l": [1, null]}', "Error decoding JSON value for l: Invalid null element in list"),
        ('{"k": 1, "c": 1, "tu": [1]}', "Error decoding JSON value for tu: Tuple is missing items (expected 2): [1]"),
    ]:
        invalid(session, f"INSERT INTO ij JSON '{doc}'", message)
    invalid(session, """INSERT INTO ij JSON '{"k": 3, "s": 1}' DEFAULT UNSET""", "Invalid unset value for column c")
    with pytest.raises(InvalidRequest, match=r"(?s)Could not decode JSON string as a map: .*Cannot deserialize value of type "
                       r"`java\.util\.LinkedHashMap<java\.lang\.Object,java\.lang\.Object>` from Array value.*\. \(String was: \[1, 2\]\)"):
        session.execute("INSERT INTO ij JSON '[1, 2]'")
    # Keys are lower-cased unless quoted; numbers and collections may come as strings.
    session.execute("""INSERT INTO ij JSON '{"K": "7", "c": "8", "l": "[1, \\"2\\"]", "TU": [1, "x"]}'""")
    assert json_rows(session, "SELECT JSON k, c, l, tu FROM ij WHERE k = 7") == [
        '{"k": 7, "c": 8, "l": [1, 2], "tu": [1, "x"]}']


def test_json_bind_markers_and_from_json_failures(session, ks):
    from cassandra import FunctionFailure
    session.execute("CREATE TABLE ij (k int, c int, v text, PRIMARY KEY (k, c))")
    prepared = session.prepare("INSERT INTO ij JSON :doc DEFAULT UNSET USING TTL ?")
    assert [c.name for c in prepared.column_metadata] == ["doc", "[ttl]"]
    prepared = session.prepare("INSERT INTO ij (k, c, v) VALUES (?, fromJson(?), fromJson(?))")
    assert [c.name for c in prepared.column_metadata] == ["k", "arg0(system.fromjson)", "arg0(system.fromjson)"]
    session.execute(prepared, [1, '"2"', None])
    assert json_rows(session, "SELECT JSON * FROM ij") == ['{"k": 1, "c": 2, "v": null}']
    with pytest.raises(FunctionFailure, match=re.escape("Expected a UTF-8 string, but got a Integer: 5")):
        session.execute("INSERT INTO ij (k, c, v) VALUES (1, 1, fromJson('5'))")
    with pytest.raises(FunctionFailure, match=re.escape("Could not decode JSON string 'bad'")):
        session.execute("INSERT INTO ij (k, c, v) VALUES (1, 1, fromJson('bad'))")
    invalid(session, "SELECT fromJson('1') FROM ij", "fromJson() cannot be used in the selection clause of a SELECT statement")
    invalid(session, "SELECT toJson(k, c) FROM ij", "toJson() only accepts one argument (got 2)")


def test_select_json_pages(session, ks):
    from cassandra.query import SimpleStatement
    session.execute("CREATE TABLE p (k int, c int, PRIMARY KEY (k, c))")
    for k in range(4):
        for c in range(3):
            session.execute("INSERT INTO p (k, c) VALUES (%s, %s)", [k, c])
    all_rows = json_rows(session, SimpleStatement("SELECT JSON * FROM p", fetch_size=1000))
    rs = session.execute(SimpleStatement("SELECT JSON * FROM p", fetch_size=5))
    assert len(rs.current_rows) == 5 and rs.has_more_pages
    assert [r[0] for r in rs] == all_rows and len(all_rows) == 12
