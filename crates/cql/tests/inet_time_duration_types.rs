//! Scenario: the `inet`, `time` and `duration` columns behave as in Cassandra 4 through the
//! whole statement layer — literals and bound values, clustering order both ways, the
//! refusals Cassandra makes (a duration in a primary key, slices on durations, bad literals),
//! their names in `system_schema` and `DESCRIBE`, and `CAST` to text.

mod common;

use bytes::Bytes;
use common::{int, values, Harness};
use mosaic_cql::frame::{
    error_code, ColumnType, Consistency, Prepare, QueryParameters, Request, Response, ResultBody,
    Value,
};
use mosaic_types::{CqlDuration, CqlType, CqlValue};

fn ip(s: &str) -> CqlValue {
    CqlValue::Inet(s.parse().expect("address"))
}

fn time(nanos: i64) -> CqlValue {
    CqlValue::Time(nanos)
}

fn duration(months: i32, days: i32, nanoseconds: i64) -> CqlValue {
    CqlValue::Duration(CqlDuration::new(months, days, nanoseconds).expect("one sign"))
}

const SECOND: i64 = 1_000_000_000;

#[test]
fn literals_of_the_three_types_store_cassandras_values() {
    let mut h = Harness::with_keyspace();
    h.ok("CREATE TABLE t (k int PRIMARY KEY, a inet, b time, d duration)");
    h.ok("INSERT INTO t (k, a, b, d) VALUES (1, '192.168.0.1', '08:12:54.123456789', 1y2mo3w4d5h6m7s8ms9us10ns)");
    h.ok("INSERT INTO t (k, a, b, d) VALUES (2, '::ffff:10.0.0.1', '08:12:54', -P1Y2M3DT4H5M6S)");
    h.ok("INSERT INTO t (k, a, b, d) VALUES (3, '2001:db8::1', 45296000000001, P2W)");
    h.ok("INSERT INTO t (k, a, b, d) VALUES (4, '[::1]', '00:00:00.5', P0001-02-03T04:05:06)");
    let t0 = (8 * 3600 + 12 * 60 + 54) * SECOND;
    let hms = |h: i64, m: i64, s: i64| ((h * 60 + m) * 60 + s) * SECOND;
    let expected = [
        (
            1,
            ip("192.168.0.1"),
            time(t0 + 123_456_789),
            duration(14, 25, 18_367_008_009_010),
        ),
        // A mapped IPv6 literal becomes the IPv4 address, as Java's getByName makes it.
        (
            2,
            ip("10.0.0.1"),
            time(t0),
            duration(-14, -3, -hms(4, 5, 6)),
        ),
        (
            3,
            ip("2001:db8::1"),
            time(45_296_000_000_001),
            duration(0, 14, 0),
        ),
        (
            4,
            ip("::1"),
            time(SECOND / 2),
            duration(14, 3, hms(4, 5, 6)),
        ),
    ];
    for (k, a, b, d) in expected {
        assert_eq!(
            h.rows(&format!("SELECT a, b, d FROM t WHERE k = {k}")),
            vec![vec![Some(a), Some(b), Some(d)]],
            "row {k}"
        );
    }
    // Bound values: exactly what the driver sent comes back (a 16-byte mapped address too).
    let mut mapped = [0u8; 16];
    mapped[10..].copy_from_slice(&[0xff, 0xff, 1, 2, 3, 4]);
    let bound = [
        CqlValue::Int(9),
        CqlValue::Inet(std::net::IpAddr::from(mapped)),
        time(86_399_999_999_999),
        duration(0, 0, i64::MAX),
    ];
    let mut params = QueryParameters::new(Consistency::One);
    params.values = values(&bound);
    h.query_with("INSERT INTO t (k, a, b, d) VALUES (?, ?, ?, ?)", params)
        .expect("bound insert");
    let got = h.rows("SELECT k, a, b, d FROM t WHERE k = 9");
    assert_eq!(
        got,
        vec![bound.iter().cloned().map(Some).collect::<Vec<_>>()]
    );
}

#[test]
fn bad_literals_and_bound_values_are_invalid_with_cassandras_messages() {
    let mut h = Harness::with_keyspace();
    h.ok("CREATE TABLE t (k int PRIMARY KEY, a inet, b time, d duration)");
    let cases = [
        (
            "INSERT INTO t (k, a) VALUES (1, 'not an address')",
            "Unable to make inet address from 'not an address'",
        ),
        (
            "INSERT INTO t (k, b) VALUES (1, '24:00:00')",
            "(TimeType) Unable to coerce '24:00:00' to a formatted time (long)",
        ),
        (
            "INSERT INTO t (k, b) VALUES (1, 86400000000000)",
            "Unable to make long (for time) from: '86400000000000'",
        ),
        (
            "INSERT INTO t (k, d) VALUES (1, 1d1y)",
            "Invalid duration. The days should be after years",
        ),
        (
            "INSERT INTO t (k, d) VALUES (1, 9223372036854775807d)",
            "Invalid duration. The total number of days must be less or equal to 2147483647",
        ),
        (
            "INSERT INTO t (k, d) VALUES (1, 12)",
            "Unable to convert '12' to a duration",
        ),
    ];
    for (cql, message) in cases {
        let e = h.err(cql);
        assert_eq!(e.kind.code(), error_code::INVALID, "{cql}");
        assert_eq!(e.message, message, "{cql}");
    }
    // A string is not a duration constant in Cassandra, nor a duration anything else.
    for cql in [
        "INSERT INTO t (k, d) VALUES (1, '1h')",
        "INSERT INTO t (k, b) VALUES (1, 1h)",
    ] {
        assert_eq!(h.err(cql).kind.code(), error_code::INVALID, "{cql}");
    }
    // Bound bytes: mixed signs, a short duration, a 5-byte address, a time past midnight.
    for (marker, bytes) in [
        ("d", vec![2u8, 5, 0]),
        ("d", vec![2u8]),
        ("a", vec![1u8; 5]),
        ("b", (86_400 * SECOND).to_be_bytes().to_vec()),
    ] {
        let mut params = QueryParameters::new(Consistency::One);
        params.values = mosaic_cql::frame::BoundValues::Positional(vec![Value::Bytes(
            Bytes::from(bytes.clone()),
        )]);
        let e = h
            .query_with(
                &format!("INSERT INTO t (k, {marker}) VALUES (1, ?)"),
                params,
            )
            .expect_err("refused");
        assert_eq!(e.kind.code(), error_code::INVALID, "{marker} {bytes:?}");
    }
    let mut params = QueryParameters::new(Consistency::One);
    params.values =
        mosaic_cql::frame::BoundValues::Positional(vec![Value::Bytes(Bytes::from_static(&[
            2, 5, 0,
        ]))]);
    let e = h
        .query_with("INSERT INTO t (k, d) VALUES (1, ?)", params)
        .expect_err("refused");
    assert!(
        e.message.ends_with(
            "The duration months, days and nanoseconds must be all of the same sign (1, -3, 0)"
        ),
        "{}",
        e.message
    );
}

#[test]
fn inet_and_time_clustering_columns_sort_as_cassandra_both_ways() {
    let mut h = Harness::with_keyspace();
    h.ok("CREATE TABLE asc_t (k int, a inet, b time, PRIMARY KEY (k, a, b))");
    h.ok("CREATE TABLE desc_t (k int, a inet, b time, PRIMARY KEY (k, a, b)) WITH CLUSTERING ORDER BY (a DESC, b DESC)");
    // Unsigned byte order: ::1 (00…) < 10.0.0.1 < a00:1:: (10.0.0.1's bytes, then more)
    // < 192.168.0.1 < fe80::1.
    let addresses = ["fe80::1", "192.168.0.1", "::1", "a00:1::", "10.0.0.1"];
    let times = ["'23:59:59.999999999'", "'00:00:00'", "'12:00:00'"];
    for table in ["asc_t", "desc_t"] {
        for a in addresses {
            for b in times {
                h.ok(&format!(
                    "INSERT INTO {table} (k, a, b) VALUES (1, '{a}', {b})"
                ));
            }
        }
    }
    let sorted_addresses = ["::1", "10.0.0.1", "a00:1::", "192.168.0.1", "fe80::1"];
    let sorted_times = [0, 12 * 3600 * SECOND, 86_400 * SECOND - 1];
    let mut ascending = Vec::new();
    for a in sorted_addresses {
        for b in sorted_times {
            ascending.push(vec![Some(ip(a)), Some(time(b))]);
        }
    }
    assert_eq!(h.rows("SELECT a, b FROM asc_t WHERE k = 1"), ascending);
    let descending: Vec<_> = ascending.iter().rev().cloned().collect();
    assert_eq!(h.rows("SELECT a, b FROM desc_t WHERE k = 1"), descending);
    assert_eq!(
        h.rows("SELECT a, b FROM asc_t WHERE k = 1 ORDER BY a DESC, b DESC"),
        descending
    );
    // Slices on the clustering columns, both ways.
    let middle: Vec<_> = descending
        .iter()
        .filter(|r| r[0] == Some(ip("192.168.0.1")) || r[0] == Some(ip("a00:1::")))
        .cloned()
        .collect();
    assert_eq!(middle.len(), 6);
    assert_eq!(
        h.rows("SELECT a, b FROM desc_t WHERE k = 1 AND a > '10.0.0.1' AND a < 'fe80::1'"),
        middle
    );
    assert_eq!(
        h.rows("SELECT b FROM asc_t WHERE k = 1 AND a = '::1' AND b >= '12:00:00'"),
        vec![
            vec![Some(time(12 * 3600 * SECOND))],
            vec![Some(time(86_400 * SECOND - 1))]
        ]
    );
    // Partition keys of both types work too.
    h.ok("CREATE TABLE pk (a inet, b time, v int, PRIMARY KEY ((a, b)))");
    h.ok("INSERT INTO pk (a, b, v) VALUES ('::1', '01:02:03', 7)");
    assert_eq!(
        h.rows("SELECT v FROM pk WHERE a = '::1' AND b = '01:02:03'"),
        vec![vec![int(7)]]
    );
}

#[test]
fn durations_are_refused_in_primary_keys_and_slices() {
    let mut h = Harness::with_keyspace();
    for (cql, column) in [
        ("CREATE TABLE t (a duration PRIMARY KEY, b int)", "a"),
        (
            "CREATE TABLE t (a text, b duration, c duration, PRIMARY KEY (a, b))",
            "b",
        ),
        (
            "CREATE TABLE t (a text, b duration, c duration, PRIMARY KEY (a, b)) WITH CLUSTERING ORDER BY (b DESC)",
            "b",
        ),
        ("CREATE TABLE t (a int, b duration, PRIMARY KEY ((a, b)))", "b"),
    ] {
        let e = h.err(cql);
        assert_eq!(e.kind.code(), error_code::INVALID, "{cql}");
        assert_eq!(
            e.message,
            format!("duration type is not supported for PRIMARY KEY column '{column}'"),
            "{cql}"
        );
    }
    h.ok("CREATE TABLE t (k int, c int, d duration, PRIMARY KEY (k, c))");
    h.ok("INSERT INTO t (k, c, d) VALUES (1, 1, 1y2mo)");
    h.ok("INSERT INTO t (k, c, d) VALUES (1, 2, -1y2mo)");
    for op in ["<", "<=", ">", ">="] {
        let e = h.err(&format!(
            "SELECT * FROM t WHERE k = 1 AND d {op} 1y ALLOW FILTERING"
        ));
        assert_eq!(e.kind.code(), error_code::INVALID);
        assert_eq!(
            e.message,
            "Slice restrictions are not supported on duration columns"
        );
    }
    assert_eq!(
        h.rows("SELECT c FROM t WHERE k = 1 AND d = -14mo ALLOW FILTERING"),
        vec![vec![int(2)]]
    );
    // A duration column can be added, but not CAST.
    h.ok("ALTER TABLE t ADD e duration");
    assert_eq!(
        h.err("SELECT CAST(d AS text) FROM t").kind.code(),
        error_code::INVALID
    );
}

#[test]
fn schema_tables_describe_metadata_and_casts_name_the_types() {
    let mut h = Harness::with_keyspace();
    h.ok("CREATE TABLE t (k inet, c time, d duration, PRIMARY KEY (k, c)) WITH CLUSTERING ORDER BY (c DESC)");
    let ResultBody::Rows(columns) = h.ok(
        "SELECT column_name, type FROM system_schema.columns WHERE keyspace_name = 'ks' AND table_name = 't'",
    ) else {
        panic!("rows")
    };
    let got: Vec<(String, String)> = columns
        .rows
        .iter()
        .map(|r| {
            let s = |i: usize| String::from_utf8(r[i].clone().unwrap().to_vec()).unwrap();
            (s(0), s(1))
        })
        .collect();
    assert_eq!(
        got,
        [
            ("c".to_owned(), "time".to_owned()),
            ("d".to_owned(), "duration".to_owned()),
            ("k".to_owned(), "inet".to_owned()),
        ]
    );
    let ResultBody::Rows(described) = h.ok("DESCRIBE TABLE t") else {
        panic!("rows")
    };
    let create = String::from_utf8(described.rows[0][3].clone().unwrap().to_vec()).unwrap();
    for line in ["k inet,", "c time,", "d duration,"] {
        assert!(create.contains(line), "{create}");
    }
    // The text recreates the table.
    h.ok("DROP TABLE t");
    h.ok(&create);

    // Result and bind-marker metadata carry the native types.
    let prepared = match h.request(Request::Prepare(Prepare {
        query: "SELECT k, c, d FROM t WHERE k = ? AND c = ?".to_owned(),
        keyspace: None,
    })) {
        Response::Result(ResultBody::Prepared(p)) => p,
        other => panic!("{other:?}"),
    };
    let types = |specs: &[mosaic_cql::frame::ColumnSpec]| -> Vec<ColumnType> {
        specs.iter().map(|c| c.ty.clone()).collect()
    };
    assert_eq!(
        types(&prepared.metadata.columns),
        [CqlType::Inet.into(), CqlType::Time.into()]
    );
    assert_eq!(
        types(&prepared.result_metadata.columns),
        [
            CqlType::Inet.into(),
            CqlType::Time.into(),
            CqlType::Duration.into()
        ]
    );

    // CAST to text prints as Cassandra's serializers do.
    h.ok("INSERT INTO t (k, c, d) VALUES ('::1', '08:12:54.5', 1h)");
    assert_eq!(
        h.rows("SELECT CAST(k AS text), CAST(c AS ascii) FROM t"),
        vec![vec![
            Some(CqlValue::Text("0:0:0:0:0:0:0:1".into())),
            Some(CqlValue::Ascii("08:12:54.500000000".into())),
        ]]
    );
}
