"""Every supported type round-trips, with edge values, through literals and bound values."""
import datetime
import decimal
import math
import uuid

import pytest

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
