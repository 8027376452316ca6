//! Scenario: CQL's JSON support through the statement processor — `SELECT JSON`,
//! `INSERT … JSON`, `toJson()` and `fromJson()` — with the texts Apache Cassandra 4.1.10
//! answers the same statements with (each expected string below was read from it).
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

mod common;

use common::{int, paged, text, values, Harness};
use mosaic_cql::frame::{
    BoundValues, ColumnType, Consistency, ErrorKind, Execute, Prepare, QueryParameters, Request,
    Response, ResultBody, Value,
};
use mosaic_types::{CqlType, CqlValue};

/// The `[json]` texts of a SELECT JSON.
fn json(h: &mut Harness, cql: &str) -> Vec<String> {
    let ResultBody::Rows(rows) = h.ok(cql) else {
        panic!("{cql}: rows")
    };
    let names: Vec<&str> = rows
        .metadata
        .columns
        .iter()
        .map(|c| c.name.as_str())
        .collect();
    assert_eq!(names, ["[json]"], "{cql}");
    assert_eq!(
        rows.metadata.columns[0].ty,
        ColumnType::Native(CqlType::Text)
    );
    rows.rows
        .iter()
        .map(|r| String::from_utf8(r[0].clone().unwrap().to_vec()).unwrap())
        .collect()
}

/// The one JSON object of a SELECT JSON.
fn one(h: &mut Harness, cql: &str) -> String {
    let rows = json(h, cql);
    assert_eq!(rows.len(), 1, "{cql}: {rows:?}");
    rows.into_iter().next().unwrap()
}

/// The message of a statement's Invalid error.
fn invalid(h: &mut Harness, cql: &str) -> String {
    let e = h.err(cql);
    assert!(matches!(e.kind, ErrorKind::Invalid), "{cql}: {e:?}");
    e.message
}

#[test]
fn select_json_renders_native_types_as_cassandra() {
    let mut h = Harness::with_keyspace();
    h.ok("CREATE TABLE nat (k int PRIMARY KEY, a ascii, t text, vc varchar, i int, bi bigint, si smallint, ti tinyint, vi varint, de decimal, f float, d double, b boolean, bl blob, u uuid, tu timeuuid, ts timestamp, dt date, tm time, ip inet, du duration)");
    h.ok(r#"INSERT INTO nat (k, a, t, vc, i, bi, si, ti, vi, de, f, d, b, bl, u, tu, ts, dt, tm, ip, du) VALUES (1, 'asc', 'tëxt "q" \ /', 'v', -5, 9223372036854775807, 32767, -128, 123456789012345678901234567890, 1.50, 1.5, 2.25, true, 0xcafe, 123e4567-e89b-12d3-a456-426614174000, 50554d6e-29bb-11e5-b345-feff819cdc9f, '2024-01-02 03:04:05.678Z', '2024-01-02', '03:04:05.123456789', '127.0.0.1', 1h2m3s)"#);
    assert_eq!(
        one(&mut h, "SELECT JSON * FROM nat WHERE k = 1"),
        r#"{"k": 1, "a": "asc", "b": true, "bi": 9223372036854775807, "bl": "0xcafe", "d": 2.25, "de": 1.50, "dt": "2024-01-02", "du": "1h2m3s", "f": 1.5, "i": -5, "ip": "127.0.0.1", "si": 32767, "t": "tëxt \"q\" \\ /", "ti": -128, "tm": "03:04:05.123456789", "ts": "2024-01-02 03:04:05.678Z", "tu": "50554d6e-29bb-11e5-b345-feff819cdc9f", "u": "123e4567-e89b-12d3-a456-426614174000", "vc": "v", "vi": 123456789012345678901234567890}"#
    );
    h.ok("INSERT INTO nat (k) VALUES (2)");
    assert_eq!(
        one(&mut h, "SELECT JSON k, a, f, du FROM nat WHERE k = 2"),
        r#"{"k": 2, "a": null, "f": null, "du": null}"#
    );
    h.ok("INSERT INTO nat (k, f, d, de, vi, bl, ip, du, ts, dt, tm) VALUES (3, NaN, -Infinity, 1E+3, -1, 0x, '::1', -1y2mo3d, -1, '1969-12-31', '00:00:00')");
    assert_eq!(
        one(
            &mut h,
            "SELECT JSON f, d, de, vi, bl, ip, du, ts, dt, tm FROM nat WHERE k = 3"
        ),
        r#"{"f": null, "d": null, "de": 1E+3, "vi": -1, "bl": "0x", "ip": "0:0:0:0:0:0:0:1", "du": "-1y2mo3d", "ts": "1969-12-31 23:59:59.999Z", "dt": "1969-12-31", "tm": "00:00:00.000000000"}"#
    );
    h.ok("INSERT INTO nat (k, f, d, de, ip, du, ts) VALUES (4, Infinity, NaN, 0.000001, '2001:db8::ff00:42:8329', 1mo, 253402300800000)");
    assert_eq!(
        one(
            &mut h,
            "SELECT JSON f, d, de, ip, du, ts FROM nat WHERE k = 4"
        ),
        r#"{"f": null, "d": null, "de": 0.000001, "ip": "2001:db8:0:0:0:ff00:42:8329", "du": "1mo", "ts": "+10000-01-01 00:00:00.000Z"}"#
    );
    h.ok(
        "INSERT INTO nat (k, f, d, de, du, ts) VALUES (5, 1e10, 1e-5, 1e-10, 0s, -62135596800001)",
    );
    assert_eq!(
        one(&mut h, "SELECT JSON f, d, de, du, ts FROM nat WHERE k = 5"),
        r#"{"f": 1.0E10, "d": 1.0E-5, "de": 1E-10, "du": "", "ts": "0001-12-31 23:59:59.999Z"}"#
    );
    h.ok("INSERT INTO nat (k, f, d, de, du) VALUES (6, 0.1, 100.0, 12345678901234567890.123456789, 1y2mo3w4d5h6m7s8ms9us10ns)");
    assert_eq!(
        one(&mut h, "SELECT JSON f, d, de, du FROM nat WHERE k = 6"),
        r#"{"f": 0.1, "d": 100.0, "de": 12345678901234567890.123456789, "du": "1y2mo25d5h6m7s8ms9us10ns"}"#
    );
    h.ok("INSERT INTO nat (k, f, d) VALUES (7, 12345678.0, 1.0E7)");
    assert_eq!(
        one(&mut h, "SELECT JSON f, d FROM nat WHERE k = 7"),
        r#"{"f": 1.2345678E7, "d": 1.0E7}"#
    );
    // Control characters escaped as Jackson escapes them; the rest as it is.
    h.ok("INSERT INTO nat (k, t) VALUES (10, 'a\u{1}b\u{1f}c\td\ne\rf\u{8}g\u{c}h\u{2028}ié😀 </script>\u{7f}')");
    assert_eq!(
        one(&mut h, "SELECT JSON k, t FROM nat WHERE k = 10"),
        "{\"k\": 10, \"t\": \"a\\u0001b\\u001Fc\\td\\ne\\rf\\bg\\fh\u{2028}ié😀 </script>\u{7f}\"}"
    );
    assert!(json(&mut h, "SELECT JSON k FROM nat WHERE k = 100").is_empty());
}

#[test]
fn select_json_keys_are_the_result_columns_names() {
    let mut h = Harness::with_keyspace();
    h.ok(r#"CREATE TABLE cs ("Pk" int, ck text, "Ck2" int, st int static, "Val" text, "with space" int, "select" int, "a""b" int, PRIMARY KEY ("Pk", ck, "Ck2"))"#);
    h.ok(r#"INSERT INTO cs ("Pk", ck, "Ck2", st, "Val", "with space", "select", "a""b") VALUES (1, 'c', 2, 7, 'v', 3, 4, 5)"#);
    h.ok(r#"INSERT INTO cs ("Pk", st) VALUES (2, 8)"#);
    assert_eq!(
        json(&mut h, "SELECT JSON * FROM cs"),
        [
            r#"{"\"Pk\"": 1, "ck": "c", "\"Ck2\"": 2, "st": 7, "\"Val\"": "v", "a\"b": 5, "select": 4, "with space": 3}"#,
            r#"{"\"Pk\"": 2, "ck": null, "\"Ck2\"": null, "st": 8, "\"Val\"": null, "a\"b": null, "select": null, "with space": null}"#,
        ]
    );
    assert_eq!(
        json(
            &mut h,
            r#"SELECT JSON "Pk" AS pk, "Val" AS "V2", "a""b" FROM cs"#
        ),
        [
            r#"{"pk": 1, "\"V2\"": "v", "a\"b": 5}"#,
            r#"{"pk": 2, "\"V2\"": null, "a\"b": null}"#
        ]
    );
    assert_eq!(
        json(&mut h, r#"SELECT JSON DISTINCT "Pk", st FROM cs"#),
        [r#"{"\"Pk\"": 1, "st": 7}"#, r#"{"\"Pk\"": 2, "st": 8}"#]
    );
    assert_eq!(
        json(
            &mut h,
            r#"SELECT JSON "Pk", count(*) FROM cs GROUP BY "Pk""#
        ),
        [
            r#"{"\"Pk\"": 1, "count": 1}"#,
            r#"{"\"Pk\"": 2, "count": 1}"#
        ]
    );
    assert_eq!(
        json(
            &mut h,
            r#"SELECT JSON * FROM cs WHERE "Val" = 'v' ALLOW FILTERING"#
        )
        .len(),
        1
    );
    assert_eq!(json(&mut h, "SELECT JSON * FROM cs LIMIT 1").len(), 1);
    h.ok("CREATE TABLE n (k int PRIMARY KEY, t text, i int, bl blob, ts timestamp)");
    h.ok("INSERT INTO n (k, t, i, bl, ts) VALUES (1, 'x', -5, 0xcafe, '2024-01-02 03:04:05.678Z') USING TIMESTAMP 1000");
    assert_eq!(
        one(
            &mut h,
            r#"SELECT JSON k AS "Key", t AS tee, writetime(t), ttl(t), token(k) FROM n WHERE k = 1"#
        ),
        r#"{"\"Key\"": 1, "tee": "x", "writetime(t)": 1000, "ttl(t)": null, "system.token(k)": -4069959284402364209}"#
    );
    assert_eq!(
        one(&mut h, "SELECT JSON count(*) FROM n"),
        r#"{"count": 1}"#
    );
    assert_eq!(
        one(&mut h, "SELECT JSON count(*) AS c, max(i), min(k) FROM n"),
        r#"{"c": 1, "system.max(i)": -5, "system.min(k)": 1}"#
    );
    assert_eq!(
        one(
            &mut h,
            "SELECT JSON CAST(i AS text), CAST(k AS double) FROM n WHERE k = 1"
        ),
        r#"{"cast(i as text)": "-5", "cast(k as double)": 1.0}"#
    );
    // `json` is still a column name.
    assert!(invalid(&mut h, "SELECT JSON JSON FROM n").contains("json"));
}

#[test]
fn to_json_selects_any_selector_as_json_text() {
    let mut h = Harness::with_keyspace();
    h.ok("CREATE TABLE n (k int PRIMARY KEY, t text, bl blob, ts timestamp, l list<int>)");
    h.ok(r#"INSERT INTO n (k, t, bl, ts) VALUES (1, 'tëxt "q" \ /', 0xcafe, '2024-01-02 03:04:05.678Z') USING TIMESTAMP 7"#);
    let ResultBody::Rows(rows) = h.ok(
        "SELECT toJson(k), toJson(t) AS x, tojson(ts), toJson(bl), toJson(l), toJson(writetime(t)), toJson(toJson(t)) FROM n WHERE k = 1",
    ) else {
        panic!("rows")
    };
    let names: Vec<&str> = rows
        .metadata
        .columns
        .iter()
        .map(|c| c.name.as_str())
        .collect();
    assert_eq!(
        names,
        [
            "system.tojson(k)",
            "x",
            "system.tojson(ts)",
            "system.tojson(bl)",
            "system.tojson(l)",
            "system.tojson(writetime(t))",
            "system.tojson(system.tojson(t))"
        ]
    );
    assert!(rows
        .metadata
        .columns
        .iter()
        .all(|c| c.ty == ColumnType::Native(CqlType::Text)));
    assert_eq!(
        common::decode_rows(&rows),
        vec![vec![
            text("1"),
            text(r#""tëxt \"q\" \\ /""#),
            text(r#""2024-01-02 03:04:05.678Z""#),
            text(r#""0xcafe""#),
            text("null"),
            text("7"),
            text(r#""\"tëxt \\\"q\\\" \\\\ /\"""#),
        ]]
    );
    assert_eq!(
        one(&mut h, "SELECT JSON toJson(t) FROM n WHERE k = 1"),
        r#"{"system.tojson(t)": "\"tëxt \\\"q\\\" \\\\ /\""}"#
    );
    assert_eq!(
        h.rows("SELECT toJson(count(*)) FROM n"),
        vec![vec![text("1")]]
    );
    for (cql, message) in [
        (
            "SELECT toJson(k, t) FROM n",
            "toJson() only accepts one argument (got 2)",
        ),
        (
            "SELECT toJson() FROM n",
            "toJson() only accepts one argument (got 0)",
        ),
        (
            "SELECT fromJson('1') FROM n",
            "fromJson() cannot be used in the selection clause of a SELECT statement",
        ),
        (
            "SELECT toJson(fromJson(t)) FROM n",
            "fromJson() cannot be used in the selection clause of a SELECT statement",
        ),
    ] {
        assert_eq!(invalid(&mut h, cql), message, "{cql}");
    }
}

#[test]
fn select_json_renders_collections_tuples_and_user_types_as_cassandra() {
    let mut h = Harness::with_keyspace();
    h.ok(r#"CREATE TYPE addr (street text, "Zip" int, tags frozen<list<text>>)"#);
    h.ok("CREATE TYPE outer_t (a frozen<addr>, n int)");
    h.ok("CREATE TABLE col (k int PRIMARY KEY, l list<int>, s set<text>, m map<text, int>, mi map<int, text>, mts map<timestamp, int>, mu map<uuid, int>, mb map<boolean, int>, mbl map<blob, int>, md map<double, int>, mfl map<frozen<list<text>>, int>, mft map<frozen<tuple<int, text>>, int>, mfu map<frozen<addr>, int>, mdt map<date, text>, mip map<inet, int>, ml map<text, frozen<list<int>>>, fl frozen<list<int>>, fs frozen<set<int>>, fm frozen<map<int, int>>, tup tuple<int, text, boolean>, tn tuple<int, frozen<list<int>>>, u addr, fu frozen<addr>, ou frozen<outer_t>, lt list<frozen<tuple<int, int>>>, sd set<double>)");
    h.ok(r#"INSERT INTO col (k, l, s, m, mi, mts, mu, mb, mbl, md, mfl, mft, mfu, mdt, mip, ml, fl, fs, fm, tup, tn, u, fu, ou, lt, sd) VALUES (1, [3, 1, 2], {'b', 'a'}, {'x': 1, 'y': 2}, {1: 'a', 2: 'b'}, {'2024-01-02 03:04:05Z': 1}, {123e4567-e89b-12d3-a456-426614174000: 1}, {true: 1, false: 0}, {0xab: 1}, {1.5: 1, 2.0: 2}, {['a', 'b']: 1}, {(1, 'x'): 2}, {{street: 's', "Zip": 1}: 3}, {'2024-01-02': 'x'}, {'10.0.0.1': 1}, {'a': [1, 2]}, [1, 2], {3, 1}, {2: 20, 1: 10}, (1, 'a', true), (2, [3]), {street: 'main', "Zip": 12345, tags: ['t']}, {street: 'f'}, {a: {street: 'q', "Zip": 9}, n: 2}, [(1, 2)], {1.0, NaN})"#);
    let expected = r#"{"k": 1, "fl": [1, 2], "fm": {"1": 10, "2": 20}, "fs": [1, 3], "fu": {"street": "f", "\"Zip\"": null, "tags": null}, "l": [3, 1, 2], "lt": [[1, 2]], "m": {"x": 1, "y": 2}, "mb": {"false": 0, "true": 1}, "mbl": {"0xab": 1}, "md": {"1.5": 1, "2.0": 2}, "mdt": {"2024-01-02": "x"}, "mfl": {"[\"a\", \"b\"]": 1}, "mft": {"[1, \"x\"]": 2}, "mfu": {"{\"street\": \"s\", \"\\\"Zip\\\"\": 1, \"tags\": null}": 3}, "mi": {"1": "a", "2": "b"}, "mip": {"10.0.0.1": 1}, "ml": {"a": [1, 2]}, "mts": {"2024-01-02 03:04:05.000Z": 1}, "mu": {"123e4567-e89b-12d3-a456-426614174000": 1}, "ou": {"a": {"street": "q", "\"Zip\"": 9, "tags": null}, "n": 2}, "s": ["a", "b"], "sd": [1.0, null], "tn": [2, [3]], "tup": [1, "a", true], "u": {"street": "main", "\"Zip\"": 12345, "tags": ["t"]}}"#;
    assert_eq!(one(&mut h, "SELECT JSON * FROM col WHERE k = 1"), expected);
    // What SELECT JSON writes, INSERT JSON reads back (but for NaN, written as null).
    h.ok(&format!(
        "INSERT INTO col JSON '{}'",
        expected
            .replace("\"k\": 1", "\"k\": 2")
            .replace("[1.0, null]", "[1.0, \"NaN\"]")
            .replace('\'', "''")
    ));
    assert_eq!(
        one(&mut h, "SELECT JSON * FROM col WHERE k = 2"),
        expected.replace("\"k\": 1", "\"k\": 2")
    );
    h.ok("INSERT INTO col (k, tup, u, l, m) VALUES (3, (1, null, null), {street: null}, [], {})");
    assert_eq!(
        one(
            &mut h,
            "SELECT JSON k, tup, u, l, m, toJson(u) FROM col WHERE k = 3"
        ),
        r#"{"k": 3, "tup": [1, null, null], "u": null, "l": null, "m": null, "system.tojson(u)": "null"}"#
    );
    assert_eq!(
        one(
            &mut h,
            r#"SELECT JSON m['x'], s['a'], u.street, u."Zip", l FROM col WHERE k = 1"#
        ),
        r#"{"m['x']": 1, "s['a']": "a", "u.street": "main", "\"u.Zip\"": 12345, "l": [3, 1, 2]}"#
    );
    assert_eq!(
        one(&mut h, "SELECT JSON m['x'..'y'] FROM col WHERE k = 1"),
        r#"{"m['x'..'y']": {"x": 1, "y": 2}}"#
    );
}

#[test]
fn insert_json_writes_the_row_with_default_null_or_unset() {
    let mut h = Harness::with_keyspace();
    h.ok("CREATE TABLE ij (k int, c int, v text, w int, s int static, l list<int>, m map<text, int>, PRIMARY KEY (k, c))");
    h.ok(r#"INSERT INTO ij JSON '{"k": 1, "c": 1, "v": "a", "w": 2, "s": 9, "l": [1, 2], "m": {"a": 1}}'"#);
    assert_eq!(
        one(&mut h, "SELECT JSON * FROM ij"),
        r#"{"k": 1, "c": 1, "s": 9, "l": [1, 2], "m": {"a": 1}, "v": "a", "w": 2}"#
    );
    // DEFAULT NULL (the default): what the object leaves out is deleted.
    h.ok(r#"INSERT INTO ij JSON '{"k": 1, "c": 1, "v": "b"}'"#);
    assert_eq!(
        one(&mut h, "SELECT JSON * FROM ij"),
        r#"{"k": 1, "c": 1, "s": null, "l": null, "m": null, "v": "b", "w": null}"#
    );
    h.ok(r#"INSERT INTO ij JSON '{"k": 1, "c": 1, "w": 5, "l": [7]}' DEFAULT UNSET"#);
    assert_eq!(
        one(&mut h, "SELECT JSON * FROM ij"),
        r#"{"k": 1, "c": 1, "s": null, "l": [7], "m": null, "v": "b", "w": 5}"#
    );
    h.ok(r#"INSERT INTO ij JSON '{"k": 1, "c": 1, "w": 6}' DEFAULT NULL"#);
    assert_eq!(
        one(&mut h, "SELECT JSON * FROM ij"),
        r#"{"k": 1, "c": 1, "s": null, "l": null, "m": null, "v": null, "w": 6}"#
    );
    // USING TTL and TIMESTAMP; a row marker even without other values.
    h.ok(r#"INSERT INTO ij JSON '{"k": 2, "c": 1, "v": "x"}' USING TTL 100 AND TIMESTAMP 1000"#);
    let rows = h.rows("SELECT writetime(v), ttl(v) FROM ij WHERE k = 2 AND c = 1");
    assert_eq!(rows[0][0], Some(CqlValue::BigInt(1000)));
    assert!(matches!(rows[0][1], Some(CqlValue::Int(t)) if t > 90 && t <= 100));
    h.ok(r#"INSERT INTO ij JSON '{"k": 2, "c": 1, "v": "older"}' USING TIMESTAMP 999"#);
    assert_eq!(
        one(&mut h, "SELECT JSON v FROM ij WHERE k = 2 AND c = 1"),
        r#"{"v": "x"}"#
    );
    h.ok(r#"INSERT INTO ij JSON '{"k": 3, "c": 1}'"#);
    assert_eq!(h.rows("SELECT k FROM ij WHERE k = 3"), vec![vec![int(3)]]);
    // Keys: lower-cased unless in double quotes; a repeated key's last value wins; text
    // after the object is ignored (as Jackson ignores it).
    h.ok(r#"INSERT INTO ij JSON '{"K": 4, "c": 1, "V": "up", "v": "low"}'"#);
    assert_eq!(
        one(&mut h, "SELECT JSON v FROM ij WHERE k = 4"),
        r#"{"v": "up"}"#
    );
    h.ok(r#"INSERT INTO ij JSON '{"\"k\"": 5, "c": 1, "v": "a", "v": "b"} trailing'"#);
    assert_eq!(
        one(&mut h, "SELECT JSON v FROM ij WHERE k = 5"),
        r#"{"v": "b"}"#
    );
    // Numbers as strings, collections as strings of JSON.
    h.ok(r#"INSERT INTO ij JSON '{"k": "7", "c": "8", "l": "[1, \"2\"]", "m": "{\"a\": \"5\"}"}'"#);
    assert_eq!(
        one(&mut h, "SELECT JSON k, c, l, m FROM ij WHERE k = 7"),
        r#"{"k": 7, "c": 8, "l": [1, 2], "m": {"a": 5}}"#
    );
    // In a batch.
    h.ok(r#"BEGIN BATCH INSERT INTO ij JSON '{"k": 9, "c": 1, "v": "b1"}'; INSERT INTO ij JSON '{"k": 9, "c": 2}' DEFAULT UNSET; APPLY BATCH"#);
    assert_eq!(
        json(&mut h, "SELECT JSON k, c, v FROM ij WHERE k = 9"),
        [
            r#"{"k": 9, "c": 1, "v": "b1"}"#,
            r#"{"k": 9, "c": 2, "v": null}"#
        ]
    );
    // IF NOT EXISTS works as for any INSERT: the existing row comes back.
    let json = h.ok(r#"INSERT INTO ij JSON '{"k": 2, "c": 1}' IF NOT EXISTS"#);
    let plain = h.ok("INSERT INTO ij (k, c) VALUES (2, 1) IF NOT EXISTS");
    assert_eq!(json, plain);
    assert!(matches!(plain, ResultBody::Rows(r) if r.metadata.columns[0].name == "[applied]"));
}

#[test]
fn insert_json_refusals_say_what_cassandra_says() {
    let mut h = Harness::with_keyspace();
    h.ok("CREATE TABLE ij (k int, c int, v text, w int, s int static, l list<int>, m map<text, int>, PRIMARY KEY (k, c))");
    for (json, message) in [
        (
            r#"{"k": 3}"#,
            "Invalid null value in condition for column c",
        ),
        (
            r#"{"k": 3, "s": 1}"#,
            "Invalid null value in condition for column c",
        ),
        (
            r#"{"c": 3}"#,
            "Invalid null value in condition for column k",
        ),
        (
            r#"{"k": null, "c": 1}"#,
            "Invalid null value in condition for column k",
        ),
        (
            r#"{"k": 1, "c": 1, "x": 1, "y": 2}"#,
            "JSON values map contains unrecognized column: x",
        ),
        (
            r#"{"X": 1, "y": 2, "k": 1, "c": 1}"#,
            "JSON values map contains unrecognized column: y",
        ),
        (
            r#"{"\"K\"": 1, "c": 1}"#,
            "JSON values map contains unrecognized column: K",
        ),
        (
            r#"{"k": "x", "zz": 1}"#,
            "Error decoding JSON value for k: Unable to make int from 'x'",
        ),
        ("null", "Got null for INSERT JSON values"),
        (
            r#"{"k": 1, "c": 1, "v": 5}"#,
            "Error decoding JSON value for v: Expected a UTF-8 string, but got a Integer: 5",
        ),
        (
            r#"{"k": 1.5, "c": 1}"#,
            "Error decoding JSON value for k: Expected an int value, but got a Double: 1.5",
        ),
        (
            r#"{"k": 2147483648, "c": 1}"#,
            "Error decoding JSON value for k: Expected an int value, but got a Long: 2147483648",
        ),
        (
            r#"{"k": [1], "c": 1}"#,
            "Error decoding JSON value for k: Expected an int value, but got a ArrayList: [1]",
        ),
        (
            r#"{"k": 1, "c": 1, "l": 5}"#,
            "Error decoding JSON value for l: Expected a list, but got a Integer: 5",
        ),
        (
            r#"{"k": 1, "c": 1, "l": [1, "x"]}"#,
            "Error decoding JSON value for l: Unable to make int from 'x'",
        ),
        (
            r#"{"k": 1, "c": 1, "l": [1, null]}"#,
            "Error decoding JSON value for l: Invalid null element in list",
        ),
        (
            r#"{"k": 1, "c": 1, "m": [1]}"#,
            "Error decoding JSON value for m: Expected a map, but got a ArrayList: [1]",
        ),
        (
            r#"{"k": 1, "c": 1, "m": {"a": null}}"#,
            "Error decoding JSON value for m: Invalid null value in map",
        ),
    ] {
        let cql = format!("INSERT INTO ij JSON '{json}'");
        assert_eq!(invalid(&mut h, &cql), message, "{cql}");
    }
    assert_eq!(
        invalid(
            &mut h,
            r#"INSERT INTO ij JSON '{"k": 3, "s": 1}' DEFAULT UNSET"#
        ),
        "Invalid unset value for column c"
    );
    for bad in [
        "not json",
        "[1, 2]",
        "1",
        "",
        r#"{"k": 1, "c": 1"#,
        "{k: 1}",
    ] {
        let message = invalid(&mut h, &format!("INSERT INTO ij JSON '{bad}'"));
        assert!(
            message.starts_with("Could not decode JSON string as a map: ")
                && message.ends_with(&format!(". (String was: {bad})")),
            "{bad}: {message}"
        );
    }
    assert_eq!(
        invalid(&mut h, "INSERT INTO ij JSON '[1, 2]'"),
        "Could not decode JSON string as a map: com.fasterxml.jackson.databind.exc.MismatchedInputException: Cannot deserialize value of type `java.util.LinkedHashMap<java.lang.Object,java.lang.Object>` from Array value (token `JsonToken.START_ARRAY`)\n at [Source: REDACTED (`StreamReadFeature.INCLUDE_SOURCE_IN_LOCATION` disabled); line: 1, column: 1]. (String was: [1, 2])"
    );
    assert_eq!(
        invalid(&mut h, "INSERT INTO ij JSON '\"x\"'"),
        "Could not decode JSON string as a map: com.fasterxml.jackson.databind.exc.MismatchedInputException: Cannot construct instance of `java.util.LinkedHashMap` (although at least one Creator exists): no String-argument constructor/factory method to deserialize from String value ('x')\n at [Source: REDACTED (`StreamReadFeature.INCLUDE_SOURCE_IN_LOCATION` disabled); line: 1, column: 1]. (String was: \"x\")"
    );
    assert!(invalid(&mut h, "INSERT INTO ij JSON 'true'")
        .contains("from Boolean value (token `JsonToken.VALUE_TRUE`)"));
    assert!(invalid(&mut h, "INSERT INTO ij JSON ' \n  1.5'").contains("from Floating-point value (token `JsonToken.VALUE_NUMBER_FLOAT`)\n at [Source: REDACTED (`StreamReadFeature.INCLUDE_SOURCE_IN_LOCATION` disabled); line: 2, column: 3]."));
    // Syntax: a string or a marker, then DEFAULT NULL / UNSET; no column list.
    for bad in [
        "INSERT INTO ij JSON 5",
        r#"INSERT INTO ij JSON '{"k": 1}' DEFAULT FOO"#,
        r#"INSERT INTO ij (k, c) JSON '{"k": 1}'"#,
    ] {
        let e = h.err(bad);
        assert!(matches!(e.kind, ErrorKind::Syntax), "{bad}: {e:?}");
    }
}

#[test]
fn insert_json_reads_every_type_as_cassandra() {
    let mut h = Harness::with_keyspace();
    h.ok("CREATE TABLE nj (k int PRIMARY KEY, a ascii, t text, i int, bi bigint, si smallint, ti tinyint, vi varint, de decimal, f float, d double, b boolean, bl blob, u uuid, tu timeuuid, ts timestamp, dt date, tm time, ip inet, du duration)");
    h.ok(r#"INSERT INTO nj JSON '{"k": 1, "a": "x", "t": "y", "i": "12", "bi": "-9223372036854775808", "si": "7", "ti": "-3", "vi": "123456789012345678901234567890", "de": "1.25e3", "f": "1.5", "d": "2.5", "b": "true", "bl": "0xCAFE", "u": "123E4567-E89B-12D3-A456-426614174000", "tu": "50554d6e-29bb-11e5-b345-feff819cdc9f", "ts": "2024-01-02 03:04:05.678Z", "dt": "2024-01-02", "tm": "03:04:05.5", "ip": "10.1", "du": "1h"}'"#);
    assert_eq!(
        one(&mut h, "SELECT JSON * FROM nj WHERE k = 1"),
        r#"{"k": 1, "a": "x", "b": true, "bi": -9223372036854775808, "bl": "0xcafe", "d": 2.5, "de": 1.25E+3, "dt": "2024-01-02", "du": "1h", "f": 1.5, "i": 12, "ip": "10.0.0.1", "si": 7, "t": "y", "ti": -3, "tm": "03:04:05.500000000", "ts": "2024-01-02 03:04:05.678Z", "tu": "50554d6e-29bb-11e5-b345-feff819cdc9f", "u": "123e4567-e89b-12d3-a456-426614174000", "vi": 123456789012345678901234567890}"#
    );
    h.ok(r#"INSERT INTO nj JSON '{"k": 3, "f": "NaN", "d": "-Infinity", "de": "1E+3", "ts": "1704164645678", "dt": "2147483648", "tm": "11045000000000", "b": "FALSE"}'"#);
    assert_eq!(
        one(
            &mut h,
            "SELECT JSON b, d, de, dt, f, tm, ts FROM nj WHERE k = 3"
        ),
        r#"{"b": false, "d": null, "de": 1E+3, "dt": "1970-01-01", "f": null, "tm": "03:04:05.000000000", "ts": "2024-01-02 03:04:05.678Z"}"#
    );
    h.ok(r#"INSERT INTO nj JSON '{"k": 4, "de": 3, "vi": "-5", "ts": "2024-01-02", "du": "P1Y2M", "ip": "::ffff:1.2.3.4", "f": 1, "d": 1.10}'"#);
    assert_eq!(
        one(
            &mut h,
            "SELECT JSON de, vi, ts, du, ip, f, d FROM nj WHERE k = 4"
        ),
        r#"{"de": 3, "vi": -5, "ts": "2024-01-02 00:00:00.000Z", "du": "1y2mo", "ip": "1.2.3.4", "f": 1.0, "d": 1.1}"#
    );
    h.ok(r#"INSERT INTO nj JSON '{"k": 5, "de": 1.10, "vi": 12345678901234567890123, "ts": 3000000000, "f": 12345678901234567890123, "d": 9223372036854775807}'"#);
    assert_eq!(
        one(&mut h, "SELECT JSON de, vi, ts, f, d FROM nj WHERE k = 5"),
        r#"{"de": 1.1, "vi": 12345678901234567890123, "ts": "1970-02-04 17:20:00.000Z", "f": 1.2345679E22, "d": 9.223372036854776E18}"#
    );
    h.ok(r#"INSERT INTO nj JSON '{"k": 6, "de": "1.10", "f": " 1.5 ", "d": "1e5d", "i": "+5", "t": "\ud83d\ude00"}'"#);
    assert_eq!(
        one(&mut h, "SELECT JSON de, f, d, i, t FROM nj WHERE k = 6"),
        r#"{"de": 1.10, "f": 1.5, "d": 100000.0, "i": 5, "t": "😀"}"#
    );
    for (member, message) in [
        (r#""a": "é""#, "Error decoding JSON value for a: Invalid ASCII character in string literal: java.nio.charset.UnmappableCharacterException: Input length = 1"),
        (r#""a": 5"#, "Error decoding JSON value for a: Expected an ascii string, but got a Integer: 5"),
        (r#""t": {"a": 1}"#, "Error decoding JSON value for t: Expected a UTF-8 string, but got a LinkedHashMap: {a=1}"),
        (r#""i": " 5""#, "Error decoding JSON value for i: Unable to make int from ' 5'"),
        (r#""i": 9223372036854775808"#, "Error decoding JSON value for i: Expected an int value, but got a BigInteger: 9223372036854775808"),
        (r#""bi": 1.5"#, "Error decoding JSON value for bi: Expected a bigint value, but got a Double: 1.5"),
        (r#""bi": "x""#, "Error decoding JSON value for bi: Unable to make long from 'x'"),
        (r#""si": 40000"#, "Error decoding JSON value for si: Unable to make short from '40000'"),
        (r#""si": 1.5"#, "Error decoding JSON value for si: Unable to make short from '1.5'"),
        (r#""si": true"#, "Error decoding JSON value for si: Expected a short value, but got a Boolean: true"),
        (r#""ti": "200""#, "Error decoding JSON value for ti: Unable to make byte from '200'"),
        (r#""ti": [1]"#, "Error decoding JSON value for ti: Expected a byte value, but got a ArrayList: [1]"),
        (r#""vi": 1.5"#, "Error decoding JSON value for vi: Value '1.5' is not a valid representation of a varint value"),
        (r#""vi": 1e3"#, "Error decoding JSON value for vi: Value '1000.0' is not a valid representation of a varint value"),
        (r#""vi": {"a": [1, {"b": null}]}"#, "Error decoding JSON value for vi: Value '{a=[1, {b=null}]}' is not a valid representation of a varint value"),
        (r#""de": "abc""#, "Error decoding JSON value for de: Value 'abc' is not a valid representation of a decimal value"),
        (r#""de": 1e400"#, "Error decoding JSON value for de: Value 'Infinity' is not a valid representation of a decimal value"),
        (r#""f": "abc""#, "Error decoding JSON value for f: Unable to make float from 'abc'"),
        (r#""f": true"#, "Error decoding JSON value for f: Expected a float value, but got a Boolean: true"),
        (r#""d": [1]"#, "Error decoding JSON value for d: Expected a double value, but got a ArrayList: [1]"),
        (r#""b": "yes""#, "Error decoding JSON value for b: Unable to make boolean from 'yes'"),
        (r#""b": 1"#, "Error decoding JSON value for b: Expected a boolean value, but got a Integer: 1"),
        (r#""bl": "cafe""#, "Error decoding JSON value for bl: Value 'cafe' is not a valid blob representation: String representation of blob is missing 0x prefix: cafe"),
        (r#""bl": "0xcaf""#, "Error decoding JSON value for bl: Value '0xcaf' is not a valid blob representation: cannot parse 'caf' as hex bytes"),
        (r#""bl": 12345678901"#, "Error decoding JSON value for bl: Value '12345678901' is not a valid blob representation: class java.lang.Long cannot be cast to class java.lang.String (java.lang.Long and java.lang.String are in module java.base of loader 'bootstrap')"),
        (r#""bl": [1]"#, "Error decoding JSON value for bl: Value '[1]' is not a valid blob representation: class java.util.ArrayList cannot be cast to class java.lang.String (java.util.ArrayList and java.lang.String are in module java.base of loader 'bootstrap')"),
        (r#""u": "nope""#, "Error decoding JSON value for u: Unable to make UUID from 'nope'"),
        (r#""u": 5"#, "Error decoding JSON value for u: Expected a string representation of a uuid, but got a Integer: 5"),
        (r#""tu": "123e4567-e89b-42d3-a456-426614174000""#, "Error decoding JSON value for tu: TimeUUID supports only version 1 UUIDs"),
        (r#""tu": "x""#, "Error decoding JSON value for tu: Unknown timeuuid representation: x"),
        (r#""tu": 1"#, "Error decoding JSON value for tu: Expected a string representation of a timeuuid, but got a Integer: 1"),
        (r#""ts": "yesterday""#, "Error decoding JSON value for ts: Unable to parse a date/time from 'yesterday'"),
        (r#""ts": 1.5"#, "Error decoding JSON value for ts: Expected a long or a datestring representation of a timestamp value, but got a Double: 1.5"),
        (r#""ts": 9223372036854775808"#, "Error decoding JSON value for ts: Expected a long or a datestring representation of a timestamp value, but got a BigInteger: 9223372036854775808"),
        (r#""dt": "2024-13-01""#, "Error decoding JSON value for dt: Unable to coerce '2024-13-01' to a formatted date (long)"),
        (r#""dt": -1"#, "Error decoding JSON value for dt: Expected a string representation of a date value, but got a Integer: -1"),
        (r#""dt": "4294967296""#, "Error decoding JSON value for dt: Unable to make unsigned int (for date) from: '4294967296'"),
        (r#""tm": "25:00:00""#, "Error decoding JSON value for tm: (TimeType) Unable to coerce '25:00:00' to a formatted time (long)"),
        (r#""tm": "86400000000000""#, "Error decoding JSON value for tm: Unable to make long (for time) from: '86400000000000'"),
        (r#""tm": 11045000000000"#, "Error decoding JSON value for tm: Expected a string representation of a time value, but got a Long: 11045000000000"),
        (r#""ip": "nothost""#, "Error decoding JSON value for ip: Unable to make inet address from 'nothost'"),
        (r#""ip": 5"#, "Error decoding JSON value for ip: Expected a string representation of an inet value, but got a Integer: 5"),
        (r#""du": "xyz""#, "Unable to convert 'xyz' to a duration"),
        (r#""du": 5"#, "Error decoding JSON value for du: Expected a string representation of a duration, but got a Integer: 5"),
    ] {
        let cql = format!(r#"INSERT INTO nj JSON '{{"k": 7, {member}}}'"#);
        assert_eq!(invalid(&mut h, &cql), message, "{cql}");
    }
    assert!(h.rows("SELECT k FROM nj WHERE k = 7").is_empty());
}

#[test]
fn insert_json_reads_collections_tuples_and_user_types_as_cassandra() {
    let mut h = Harness::with_keyspace();
    h.ok(r#"CREATE TYPE addr (street text, "Zip" int, tags frozen<list<text>>)"#);
    h.ok("CREATE TABLE col (k int PRIMARY KEY, s set<text>, mi map<int, text>, mts map<timestamp, int>, md map<double, int>, mfl map<frozen<list<text>>, int>, fs frozen<set<int>>, fl frozen<list<int>>, fm frozen<map<int, int>>, l list<int>, m map<text, int>, tup tuple<int, text, boolean>, u addr, fu frozen<addr>, sd set<double>)");
    h.ok(r#"INSERT INTO col JSON '{"k": 1, "s": ["b", "a", "b"], "mi": {"1": "a", "02": "b"}, "mts": {"2024-01-02 03:04:05Z": 1, "1000": 2}, "md": {"1.5": 1, "NaN": 2}, "mfl": {"[\"a\", \"b\"]": 1}, "fs": [3, 1, 3], "tup": "[1, \"a\", true]", "u": {"street": "main", "\"Zip\"": 12345, "tags": ["t"]}, "fu": {"street": "f"}, "sd": [1.0, "NaN"]}'"#);
    assert_eq!(
        one(
            &mut h,
            "SELECT JSON s, mi, mts, md, mfl, fs, tup, u, fu, sd FROM col WHERE k = 1"
        ),
        r#"{"s": ["a", "b"], "mi": {"1": "a", "2": "b"}, "mts": {"1970-01-01 00:00:01.000Z": 2, "2024-01-02 03:04:05.000Z": 1}, "md": {"1.5": 1, "null": 2}, "mfl": {"[\"a\", \"b\"]": 1}, "fs": [1, 3], "tup": [1, "a", true], "u": {"street": "main", "\"Zip\"": 12345, "tags": ["t"]}, "fu": {"street": "f", "\"Zip\"": null, "tags": null}, "sd": [1.0, null]}"#
    );
    // Empty collections: null unless frozen; an empty user type: null unless frozen.
    h.ok(r#"INSERT INTO col JSON '{"k": 2, "l": [], "s": [], "m": {}, "fl": [], "fm": {}, "u": {}, "fu": {}}'"#);
    assert_eq!(
        one(
            &mut h,
            "SELECT JSON l, s, m, fl, fm, u, fu FROM col WHERE k = 2"
        ),
        r#"{"l": null, "s": null, "m": null, "fl": [], "fm": {}, "u": null, "fu": {"street": null, "\"Zip\"": null, "tags": null}}"#
    );
    h.ok(r#"INSERT INTO col JSON '{"k": 3, "md": {"1": 1, "1.0": 2}, "tup": [1, null, null], "u": "{\"street\": \"s\"}"}'"#);
    assert_eq!(
        one(&mut h, "SELECT JSON md, tup, u FROM col WHERE k = 3"),
        r#"{"md": {"1.0": 2}, "tup": [1, null, null], "u": {"street": "s", "\"Zip\"": null, "tags": null}}"#
    );
    for (member, message) in [
        (r#""mi": {"x": "a"}"#, "Error decoding JSON value for mi: Unable to make int from 'x'"),
        (r#""mi": {"1.5": "a"}"#, "Error decoding JSON value for mi: Unable to make int from '1.5'"),
        (r#""mfl": {"[1]": 1}"#, "Error decoding JSON value for mfl: Expected a UTF-8 string, but got a Integer: 1"),
        (r#""s": [null]"#, "Error decoding JSON value for s: Invalid null element in set"),
        (r#""s": {"a": 1}"#, "Error decoding JSON value for s: Expected a list (representing a set), but got a LinkedHashMap: {a=1}"),
        (r#""tup": [1, "a"]"#, "Error decoding JSON value for tup: Tuple is missing items (expected 3): [1, a]"),
        (r#""tup": [1, "a", true, 4]"#, "Error decoding JSON value for tup: Tuple contains extra items (expected 3): [1, a, true, 4]"),
        (r#""tup": []"#, "Error decoding JSON value for tup: Tuple is missing items (expected 3): []"),
        (r#""tup": 5"#, "Error decoding JSON value for tup: Expected a list representation of a tuple, but got a Integer: 5"),
        (r#""tup": ["x", "a", true]"#, "Error decoding JSON value for tup: Unable to make int from 'x'"),
        (r#""u": {"nope": 1}"#, "Error decoding JSON value for u: Unknown field 'nope' in value of user defined type addr"),
        (r#""u": {"Zip": 1}"#, "Error decoding JSON value for u: Unknown field 'zip' in value of user defined type addr"),
        (r#""u": [1]"#, "Error decoding JSON value for u: Expected a map, but got a ArrayList: [1]"),
        (r#""u": {"street": 5}"#, "Error decoding JSON value for u: Expected a UTF-8 string, but got a Integer: 5"),
    ] {
        let cql = format!(r#"INSERT INTO col JSON '{{"k": 9, {member}}}'"#);
        assert_eq!(invalid(&mut h, &cql), message, "{cql}");
    }
    let message = invalid(&mut h, r#"INSERT INTO col JSON '{"k": 9, "s": "x"}'"#);
    assert!(
        message.starts_with("Error decoding JSON value for s: Error decoding JSON string: "),
        "{message}"
    );
}

/// Prepares `query`; its bind markers' names and the result's column names.
fn prepare(h: &mut Harness, query: &str) -> (bytes::Bytes, Vec<String>, Vec<String>) {
    let Response::Result(ResultBody::Prepared(p)) = h.request(Request::Prepare(Prepare {
        query: query.into(),
        keyspace: None,
    })) else {
        panic!("{query}: prepared")
    };
    let names =
        |cols: &[mosaic_cql::frame::ColumnSpec]| cols.iter().map(|c| c.name.clone()).collect();
    (
        p.id.clone(),
        names(&p.metadata.columns),
        names(&p.result_metadata.columns),
    )
}

fn execute(h: &mut Harness, id: &bytes::Bytes, values: BoundValues) -> Response {
    let mut params = QueryParameters::new(Consistency::One);
    params.values = values;
    h.request(Request::Execute(Execute {
        id: id.clone(),
        params,
        result_metadata_id: None,
    }))
}

#[test]
fn bind_markers_for_json_and_from_json() {
    let mut h = Harness::with_keyspace();
    h.ok("CREATE TABLE ij (k int, c int, v text, PRIMARY KEY (k, c))");
    let (id, markers, _) = prepare(&mut h, "INSERT INTO ij JSON ?");
    assert_eq!(markers, ["[json]"]);
    let r = execute(
        &mut h,
        &id,
        values(&[CqlValue::Text(r#"{"k": 40, "c": 1, "v": "p"}"#.into())]),
    );
    assert!(matches!(r, Response::Result(ResultBody::Void)), "{r:?}");
    assert_eq!(
        one(&mut h, "SELECT JSON * FROM ij WHERE k = 40"),
        r#"{"k": 40, "c": 1, "v": "p"}"#
    );
    let Response::Error(e) = execute(&mut h, &id, BoundValues::Positional(vec![Value::Null]))
    else {
        panic!("null refused")
    };
    assert_eq!(e.message, "Got null for INSERT JSON values");
    let Response::Error(e) = execute(&mut h, &id, BoundValues::Positional(vec![Value::Unset]))
    else {
        panic!("unset refused")
    };
    assert!(
        e.message
            .starts_with("Could not decode JSON string as a map: "),
        "{e:?}"
    );
    let (_, markers, _) = prepare(&mut h, "INSERT INTO ij JSON :js DEFAULT UNSET USING TTL ?");
    assert_eq!(markers, ["js", "[ttl]"]);
    let (id, markers, _) = prepare(
        &mut h,
        "INSERT INTO ij (k, c, v) VALUES (?, fromJson(?), fromJson(?))",
    );
    assert_eq!(
        markers,
        ["k", "arg0(system.fromjson)", "arg0(system.fromjson)"]
    );
    let r = execute(
        &mut h,
        &id,
        BoundValues::Positional(vec![
            Value::Bytes(CqlValue::Int(41).to_cql_bytes().into()),
            Value::Bytes(CqlValue::Text("\"2\"".into()).to_cql_bytes().into()),
            Value::Null,
        ]),
    );
    assert!(matches!(r, Response::Result(ResultBody::Void)), "{r:?}");
    assert_eq!(
        one(&mut h, "SELECT JSON * FROM ij WHERE k = 41"),
        r#"{"k": 41, "c": 2, "v": null}"#
    );
    let Response::Error(e) = execute(
        &mut h,
        &id,
        BoundValues::Positional(vec![
            Value::Bytes(CqlValue::Int(42).to_cql_bytes().into()),
            Value::Unset,
            Value::Null,
        ]),
    ) else {
        panic!("unset refused")
    };
    assert_eq!(
        e.message,
        "Invalid unset value for argument in call to function fromjson"
    );
    let (_, markers, result) = prepare(&mut h, "SELECT JSON * FROM ij WHERE k = ?");
    assert_eq!(
        (markers, result),
        (vec!["k".to_owned()], vec!["[json]".to_owned()])
    );
    let (_, _, result) = prepare(&mut h, "SELECT k, toJson(v) FROM ij WHERE k = ?");
    assert_eq!(result, ["k", "system.tojson(v)"]);
}

#[test]
fn from_json_is_a_term_in_values_assignments_and_where() {
    let mut h = Harness::with_keyspace();
    h.ok("CREATE TABLE ij (k int, c int, v text, w int, l list<int>, m map<text, int>, PRIMARY KEY (k, c))");
    h.ok(r#"INSERT INTO ij (k, c, v, l, m) VALUES (fromJson('20'), fromJson('"21"'), fromJson('"txt"'), fromJson('[1, 2]'), fromJson('{"a": 1}'))"#);
    h.ok("UPDATE ij SET w = fromJson('5'), l = fromJson('[9]') WHERE k = fromJson('20') AND c = fromJson('21')");
    assert_eq!(
        one(
            &mut h,
            "SELECT JSON * FROM ij WHERE k = fromJson('20') AND c IN (fromJson('21'), 22)"
        ),
        r#"{"k": 20, "c": 21, "l": [9], "m": {"a": 1}, "v": "txt", "w": 5}"#
    );
    h.ok("UPDATE ij SET w = fromJson('null'), l = l + fromJson('[10]'), m['b'] = fromJson('2') WHERE k = 20 AND c = 21");
    h.ok("INSERT INTO ij (k, c, v) VALUES (30, 1, fromJson(null))");
    let mut rows = json(
        &mut h,
        "SELECT JSON k, w, l, m, v FROM ij WHERE k IN (20, 30)",
    );
    rows.sort();
    assert_eq!(
        rows,
        [
            r#"{"k": 20, "w": null, "l": [9, 10], "m": {"a": 1, "b": 2}, "v": "txt"}"#,
            r#"{"k": 30, "w": null, "l": null, "m": null, "v": null}"#
        ]
    );
    assert_eq!(
        h.rows(r#"SELECT k FROM ij WHERE v = fromJson('"txt"') ALLOW FILTERING"#),
        vec![vec![int(20)]]
    );
    assert_eq!(
        invalid(&mut h, "INSERT INTO ij (k, c) VALUES (fromJson('null'), 1)"),
        "Invalid null value in condition for column k"
    );
    for (cql, message) in [
        ("INSERT INTO ij (k, c, v) VALUES (30, 1, fromJson(5))", "Type error: 5 cannot be passed as argument 0 of function system.fromjson of type text"),
        (r#"INSERT INTO ij (k, c, v) VALUES (30, 1, fromJson('"a"', '"b"'))"#, "Invalid number of arguments in call to function system.fromjson: 1 required but 2 provided"),
    ] {
        assert_eq!(invalid(&mut h, cql), message, "{cql}");
    }
    // A value the JSON cannot be is the function's failure, as in Cassandra.
    let e = h.err("INSERT INTO ij (k, c, v) VALUES (30, 1, fromJson('5'))");
    assert!(matches!(e.kind, ErrorKind::FunctionFailure { .. }), "{e:?}");
    assert_eq!(
        e.message,
        "org.apache.cassandra.serializers.MarshalException: Expected a UTF-8 string, but got a Integer: 5"
    );
    let e = h.err("INSERT INTO ij (k, c, v) VALUES (30, 1, fromJson('bad'))");
    assert!(matches!(e.kind, ErrorKind::FunctionFailure { .. }), "{e:?}");
    assert!(
        e.message.starts_with(
            "execution of 'system.fromjson[text]' failed: Could not decode JSON string 'bad': "
        ),
        "{e:?}"
    );
}

#[test]
fn select_json_pages_like_any_select_and_reads_system_tables() {
    let mut h = Harness::with_keyspace();
    h.ok("CREATE TABLE p (k int, c int, v text, PRIMARY KEY (k, c))");
    for k in 0..5 {
        for c in 0..3 {
            h.ok(&format!(
                "INSERT INTO p (k, c, v) VALUES ({k}, {c}, 'v{k}{c}')"
            ));
        }
    }
    let all = json(&mut h, "SELECT JSON * FROM p");
    assert_eq!(all.len(), 15);
    let (pages, count) = paged(&mut h, "SELECT JSON * FROM p", 4);
    assert_eq!(count, 4);
    let paged: Vec<String> = pages
        .into_iter()
        .map(|r| match &r[0] {
            Some(CqlValue::Text(t)) => t.clone(),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(paged, all);
    assert_eq!(
        json(
            &mut h,
            "SELECT JSON k, c FROM p WHERE k = 1 ORDER BY c DESC LIMIT 2"
        ),
        [r#"{"k": 1, "c": 2}"#, r#"{"k": 1, "c": 1}"#]
    );
    assert_eq!(
        json(&mut h, "SELECT JSON DISTINCT k FROM p LIMIT 3").len(),
        3
    );
    assert_eq!(
        json(&mut h, "SELECT JSON * FROM p PER PARTITION LIMIT 1").len(),
        5
    );
    assert_eq!(
        one(&mut h, "SELECT JSON keyspace_name, durable_writes FROM system_schema.keyspaces WHERE keyspace_name = 'ks'"),
        r#"{"keyspace_name": "ks", "durable_writes": true}"#
    );
    assert_eq!(
        one(&mut h, "SELECT JSON key FROM system.local"),
        r#"{"key": "local"}"#
    );
}
