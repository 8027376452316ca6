"""Every supported type round-trips, with edge values, through literals and bound values."""
import datetime
import decimal
import math
import re
import uuid

import pytest
from cassandra import InvalidRequest
from cassandra.util import Duration, Time

NANOS_PER_DAY = 86_400 * 10**9

EDGE_VALUES = {
    "text": ["", "ascii", "ünïcødé ✓ 𝄞", "x" * 10000],
    "ascii": ["", "plain ascii ~!@#"],
    "blob": [b"", b"\x00\xff" * 100],
    "boolean": [True, False],
    "int": [0, -(2**31), 2**31 - 1],
    "bigint": [0, -(2**63), 2**63 - 1],
    "smallint": [0, -(2**15), 2**15 - 1],
    "tinyint": [0, -128, 127],
    "float": [0.0, -1.5, float("inf"), float("-inf"), 3.4028234663852886e38],
    "double": [0.0, -1e308, float("inf"), float("-inf"), 5e-324],
    "timestamp": [datetime.datetime(1970, 1, 1), datetime.datetime(1900, 5, 6, 7, 8, 9, 123000), datetime.datetime(2262, 4, 11)],
    "date": [datetime.date(1970, 1, 1), datetime.date(1583, 1, 2), datetime.date(9999, 12, 31)],
    "uuid": [uuid.UUID(int=0), uuid.uuid4()],
    "timeuuid": [uuid.uuid1()],
    "varint": [0, -1, 2**200, -(2**200)],
    "decimal": [decimal.Decimal("0"), decimal.Decimal("-1.50"), decimal.Decimal("1E+30"), decimal.Decimal("123456789012345678901234567890.000000001")],
    "inet": ["0.0.0.0", "255.255.255.255", "192.168.0.1", "::1", "::", "2001:db8::ff00:42:8329", "::ffff:1.2.3.4"],
    "time": [Time(0), Time(NANOS_PER_DAY - 1), Time(datetime.time(8, 12, 54, 123456))],
    "duration": [Duration(0, 0, 0), Duration(14, 25, 18367008009010), Duration(-1, -2, -3),
                 Duration(2**31 - 1, 2**31 - 1, 2**63 - 1), Duration(-(2**31), -(2**31), -(2**63))],
}


@pytest.mark.parametrize("cql_type", sorted(EDGE_VALUES))
def test_prepared_round_trip(session, ks, cql_type):
    session.execute(f"CREATE TABLE t (k int PRIMARY KEY, v {cql_type})")
    ins = session.prepare("INSERT INTO t (k, v) VALUES (?, ?)")
    sel = session.prepare("SELECT v FROM t WHERE k = ?")
    for i, value in enumerate(EDGE_VALUES[cql_type]):
        session.execute(ins, (i, value))
        got = session.execute(sel, (i,)).one().v
        assert got == value, (cql_type, value, got)
    session.execute(ins, (999, None))
    assert session.execute(sel, (999,)).one().v is None


def test_nan_round_trips(session, ks):
    session.execute("CREATE TABLE t (k int PRIMARY KEY, f float, d double)")
    session.execute("INSERT INTO t (k, f, d) VALUES (1, NaN, NaN)")
    row = session.execute("SELECT f, d FROM t WHERE k = 1").one()
    assert math.isnan(row.f) and math.isnan(row.d)


def test_literals_of_every_type(session, ks):
    session.execute(
        "CREATE TABLE t (k text PRIMARY KEY, a ascii, b blob, bo boolean, i int, bi bigint, si smallint, ti tinyint, "
        "f float, d double, ts timestamp, dt date, u uuid, tu timeuuid, vi varint, de decimal)"
    )
    session.execute(
        "INSERT INTO t (k, a, b, bo, i, bi, si, ti, f, d, ts, dt, u, tu, vi, de) VALUES ("
        "'k', 'abc', 0xcafe, true, -2147483648, 9223372036854775807, -32768, 127, -Infinity, 1.5e300, "
        "'2011-02-03 04:05:06.789+0000', '1969-07-20', 6ba7b810-9dad-41d1-80b4-00c04fd430c8, now(), "
        "-123456789012345678901234567890, -0.000001)"
    )
    r = session.execute("SELECT * FROM t WHERE k = 'k'").one()
    assert r.a == "abc" and r.b == b"\xca\xfe" and r.bo is True
    assert r.i == -(2**31) and r.bi == 2**63 - 1 and r.si == -(2**15) and r.ti == 127
    assert r.f == float("-inf") and r.d == 1.5e300
    assert r.ts == datetime.datetime(2011, 2, 3, 4, 5, 6, 789000)
    assert r.dt.date() == datetime.date(1969, 7, 20)
    assert r.u == uuid.UUID("6ba7b810-9dad-41d1-80b4-00c04fd430c8")
    assert r.tu.version == 1
    assert r.vi == -123456789012345678901234567890
    assert r.de == decimal.Decimal("-0.000001")


def test_inet_time_and_duration_literals(session, ks):
    session.execute("CREATE TABLE t (k int PRIMARY KEY, a inet, b time, d duration)")
    session.execute("INSERT INTO t (k, a, b, d) VALUES (1, '192.168.0.1', '08:12:54.123456789', 1y2mo3w4d5h6m7s8ms9us10ns)")
    session.execute("INSERT INTO t (k, a, b, d) VALUES (2, '::1', '08:12:54', -P1Y2M3DT4H5M6S)")
    session.execute("INSERT INTO t (k, a, b, d) VALUES (3, '::ffff:10.0.0.1', 29574123000000, P2W)")
    session.execute("INSERT INTO t (k, a, b, d) VALUES (4, '2001:DB8::1', '00:00:00.5', P0001-02-03T04:05:06)")
    rows = {r.k: r for r in session.execute("SELECT k, a, b, d FROM t")}
    assert rows[1].a == "192.168.0.1"
    assert rows[1].b == Time("08:12:54.123456789")
    assert rows[1].d == Duration(14, 25, 18367008009010)
    assert rows[2].a == "::1"
    assert rows[2].b == Time(datetime.time(8, 12, 54))
    assert rows[2].d == Duration(-14, -3, -((4 * 60 + 5) * 60 + 6) * 10**9)
    # A mapped IPv6 literal is the IPv4 address, as Java's InetAddress makes it.
    assert rows[3].a == "10.0.0.1"
    assert rows[3].b == Time(29574123000000)
    assert rows[3].d == Duration(0, 14, 0)
    assert rows[4].a == "2001:db8::1"
    assert rows[4].b == Time("00:00:00.5")
    assert rows[4].d == Duration(14, 3, ((4 * 60 + 5) * 60 + 6) * 10**9)
    # A driver's own encoding of a time in a simple statement is a quoted literal.
    session.execute("INSERT INTO t (k, b) VALUES (5, %s)", (Time("23:59:59.999999999"),))
    assert session.execute("SELECT b FROM t WHERE k = 5").one().b == Time(NANOS_PER_DAY - 1)
    assert session.execute("SELECT CAST(a AS text), CAST(b AS text) FROM t WHERE k = 2").one() == (
        "0:0:0:0:0:0:0:1", "08:12:54.000000000")


@pytest.mark.parametrize("cql,message", [
    ("INSERT INTO t (k, a) VALUES (1, 'nope')", "Unable to make inet address from 'nope'"),
    ("INSERT INTO t (k, b) VALUES (1, '24:00:00')", "(TimeType) Unable to coerce '24:00:00' to a formatted time (long)"),
    ("INSERT INTO t (k, b) VALUES (1, -1)", "Unable to make long (for time) from: '-1'"),
    ("INSERT INTO t (k, d) VALUES (1, 1d1y)", "Invalid duration. The days should be after years"),
    ("SELECT * FROM t WHERE d > 1h ALLOW FILTERING", "Slice restrictions are not supported on duration columns"),
])
def test_bad_inet_time_and_duration_values_are_invalid(session, ks, cql, message):
    session.execute("CREATE TABLE IF NOT EXISTS t (k int PRIMARY KEY, a inet, b time, d duration)")
    with pytest.raises(InvalidRequest, match=re.escape(message)):
        session.execute(cql)


def test_mixed_sign_durations_are_refused_when_bound(session, ks):
    session.execute("CREATE TABLE t (k int PRIMARY KEY, d duration)")
    ins = session.prepare("INSERT INTO t (k, d) VALUES (?, ?)")
    with pytest.raises(InvalidRequest, match=re.escape("must be all of the same sign (2, -3, 0)")):
        session.execute(ins, (1, Duration(2, -3, 0)))


@pytest.mark.parametrize("order", ["ASC", "DESC"])
def test_inet_and_time_clustering_order(session, ks, order):
    session.execute(f"CREATE TABLE t (k int, a inet, b time, PRIMARY KEY (k, a, b)) WITH CLUSTERING ORDER BY (a {order}, b {order})")
    ins = session.prepare("INSERT INTO t (k, a, b) VALUES (1, ?, ?)")
    # Cassandra's InetAddressType compares the raw bytes unsigned: ::1 (00…) sorts first, and
    # 10.0.0.1 before a00:1:: (the same first four bytes, then more).
    addresses = ["::1", "10.0.0.1", "a00:1::", "192.168.0.1", "fe80::1"]
    times = [Time(0), Time(12 * 3600 * 10**9), Time(NANOS_PER_DAY - 1)]
    for a in reversed(addresses):
        for b in times:
            session.execute(ins, (a, b))
    expected = [(a, b) for a in addresses for b in times]
    if order == "DESC":
        expected.reverse()
    got = [(r.a, r.b) for r in session.execute("SELECT a, b FROM t WHERE k = 1")]
    assert got == expected
    got = [r.a for r in session.execute("SELECT a FROM t WHERE k = 1 AND a > '10.0.0.1' AND a <= 'fe80::1'")]
    middle = [a for a in (reversed(addresses) if order == "DESC" else addresses) if a not in ("::1", "10.0.0.1")]
    assert got == [a for a in middle for _ in times]


@pytest.mark.parametrize("key", ["d duration PRIMARY KEY, v int", "k int, d duration, PRIMARY KEY (k, d)"])
def test_duration_is_refused_in_a_primary_key(session, ks, key):
    with pytest.raises(InvalidRequest, match="duration type is not supported for PRIMARY KEY column 'd'"):
        session.execute(f"CREATE TABLE t ({key})")


def test_schema_names_the_new_types(session, ks):
    session.execute("CREATE TABLE t (k inet, c time, d duration, PRIMARY KEY (k, c))")
    rows = session.execute("SELECT column_name, type FROM system_schema.columns WHERE keyspace_name = %s AND table_name = 't'", (ks,))
    assert {r.column_name: r.type for r in rows} == {"k": "inet", "c": "time", "d": "duration"}
    session.cluster.refresh_table_metadata(ks, "t")
    table = session.cluster.metadata.keyspaces[ks].tables["t"]
    assert [(c.name, c.cql_type) for c in table.columns.values()] == [("k", "inet"), ("c", "time"), ("d", "duration")]
