//! Scenario: collections and user-defined types through the statement processor — what a
//! Cassandra user writes, what reads return, and the refusals Cassandra gives.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

mod common;

use common::{int, text, Harness};
use mosaic_types::CqlValue;

fn list(items: &[i32]) -> Option<CqlValue> {
    Some(CqlValue::List(
        items.iter().map(|&i| CqlValue::Int(i)).collect(),
    ))
}

fn set(items: &[&str]) -> Option<CqlValue> {
    Some(CqlValue::Set(
        items.iter().map(|s| CqlValue::Text((*s).into())).collect(),
    ))
}

#[test]
fn collection_operations_read_back_as_cassandra_returns_them() {
    let mut h = Harness::with_keyspace();
    h.ok("CREATE TABLE t (k int PRIMARY KEY, l list<int>, s set<text>, m map<text, int>, f frozen<set<int>>)");
    h.ok("INSERT INTO t (k, l, s, m, f) VALUES (1, [3, 1], {'b', 'a'}, {'x': 1}, {3, 1, 3})");
    h.ok("UPDATE t SET l = l + [4], l = [0] + l, s = s + {'c'}, s = s - {'a'}, m['y'] = 2 WHERE k = 1");
    let rows = h.rows("SELECT l, s, m, f FROM t WHERE k = 1");
    assert_eq!(rows[0][0], list(&[0, 3, 1, 4]));
    assert_eq!(rows[0][1], set(&["b", "c"]));
    assert_eq!(
        rows[0][2],
        Some(CqlValue::Map(vec![
            (CqlValue::Text("x".into()), CqlValue::Int(1)),
            (CqlValue::Text("y".into()), CqlValue::Int(2)),
        ]))
    );
    assert_eq!(
        rows[0][3],
        Some(CqlValue::Set(vec![CqlValue::Int(1), CqlValue::Int(3)]))
    );
    // By index and by value: read before write.
    h.ok("UPDATE t SET l[1] = 30 WHERE k = 1");
    h.ok("DELETE l[0], m['x'] FROM t WHERE k = 1");
    h.ok("UPDATE t SET l = l - [4] WHERE k = 1");
    let rows = h.rows("SELECT l, m FROM t WHERE k = 1");
    assert_eq!(rows[0][0], list(&[30, 1]));
    assert_eq!(
        rows[0][1],
        Some(CqlValue::Map(vec![(
            CqlValue::Text("y".into()),
            CqlValue::Int(2)
        )]))
    );
    // An overwrite replaces; an empty collection is null.
    h.ok("UPDATE t SET s = {'z'}, m = {} WHERE k = 1");
    let rows = h.rows("SELECT s, m FROM t WHERE k = 1");
    assert_eq!(rows[0], vec![set(&["z"]), None]);
    // Writes at explicit timestamps merge per element.
    h.ok("UPDATE t USING TIMESTAMP 10 SET s = {'old'} WHERE k = 2");
    h.ok("UPDATE t USING TIMESTAMP 5 SET s = s + {'older'} WHERE k = 2");
    h.ok("UPDATE t USING TIMESTAMP 20 SET s = s + {'new'} WHERE k = 2");
    assert_eq!(
        h.rows("SELECT s FROM t WHERE k = 2")[0][0],
        set(&["new", "old"])
    );
    h.ok("DELETE s FROM t USING TIMESTAMP 15 WHERE k = 2");
    assert_eq!(h.rows("SELECT s FROM t WHERE k = 2")[0][0], set(&["new"]));
    // Filters.
    let rows = h.rows("SELECT k FROM t WHERE s CONTAINS 'new' ALLOW FILTERING");
    assert_eq!(rows, vec![vec![int(2)]]);
    h.ok("UPDATE t SET m['y'] = 3 WHERE k = 2");
    let rows = h.rows("SELECT k FROM t WHERE m CONTAINS KEY 'y' ALLOW FILTERING");
    assert_eq!(rows, vec![vec![int(2)]]);
    let rows = h.rows("SELECT k FROM t WHERE m CONTAINS 3 ALLOW FILTERING");
    assert_eq!(rows, vec![vec![int(2)]]);
    // Element selection.
    let rows = h.rows("SELECT m['y'], m['nope'], s['new'], s['nope'] FROM t WHERE k = 2");
    assert_eq!(rows, vec![vec![int(3), None, text("new"), None]]);
    let e = h.err("SELECT l[0] FROM t WHERE k = 2");
    assert!(e
        .message
        .contains("Element selection is only allowed on sets and maps"));
}

#[test]
fn collection_refusals_are_cassandras() {
    let mut h = Harness::with_keyspace();
    h.ok("CREATE TABLE t (k int PRIMARY KEY, l list<int>, f frozen<list<int>>, v int)");
    for (cql, message) in [
        (
            "UPDATE t SET f = f + [1] WHERE k = 1",
            "Invalid operation (f = f + [1]) for frozen collection column f",
        ),
        (
            "UPDATE t SET v = v + 1 WHERE k = 1",
            "Invalid operation (v = v + 1) for non counter column v",
        ),
        (
            "UPDATE t SET l[0] = 1 WHERE k = 1",
            "Attempted to set an element on a list which is null",
        ),
        (
            "SELECT writetime(l) FROM t",
            "Cannot use selection function writeTime on non-frozen collection l",
        ),
        (
            "INSERT INTO t (k, l) VALUES (1, [1, null])",
            "null is not supported inside collections",
        ),
        (
            "CREATE TABLE u (k list<int> PRIMARY KEY)",
            "Invalid non-frozen collection type list<int> for PRIMARY KEY column 'k'",
        ),
        ("SELECT k FROM t WHERE l CONTAINS 1", "ALLOW FILTERING"),
    ] {
        let e = h.err(cql);
        assert!(e.message.contains(message), "{cql}: {}", e.message);
    }
    h.ok("INSERT INTO t (k, l) VALUES (1, [1, 2])");
    let e = h.err("UPDATE t SET l[5] = 1 WHERE k = 1");
    assert_eq!(e.message, "List index 5 out of bound, list has size 2");
}

#[test]
fn user_defined_types_are_created_used_altered_and_described() {
    let mut h = Harness::with_keyspace();
    h.ok("CREATE TYPE address (street text, city text)");
    h.ok(
        "CREATE TABLE t (k int PRIMARY KEY, a frozen<address>, n address, l list<frozen<address>>)",
    );
    h.ok("INSERT INTO t (k, a, n, l) VALUES (1, {street: 'main', city: 'x'}, {city: 'y'}, [{city: 'z'}])");
    h.ok("UPDATE t SET n.street = 'side' WHERE k = 1");
    let field = |s: &str| Some(CqlValue::Text(s.into()));
    let rows = h.rows("SELECT a, n, a.city FROM t WHERE k = 1");
    assert_eq!(
        rows[0][0],
        Some(CqlValue::Tuple(vec![field("main"), field("x")]))
    );
    assert_eq!(
        rows[0][1],
        Some(CqlValue::Tuple(vec![field("side"), field("y")]))
    );
    assert_eq!(rows[0][2], text("x"));
    h.ok("ALTER TYPE address ADD zip int");
    h.ok("ALTER TYPE address RENAME city TO town");
    let rows = h.rows("SELECT a, a.town FROM t WHERE k = 1");
    assert_eq!(
        rows[0][0],
        Some(CqlValue::Tuple(vec![field("main"), field("x"), None]))
    );
    assert_eq!(rows[0][1], text("x"));
    let rows = h.rows(
        "SELECT field_names, field_types FROM system_schema.types WHERE keyspace_name = 'ks'",
    );
    assert_eq!(
        rows[0],
        vec![
            Some(CqlValue::List(vec![
                CqlValue::Text("street".into()),
                CqlValue::Text("town".into()),
                CqlValue::Text("zip".into())
            ])),
            Some(CqlValue::List(vec![
                CqlValue::Text("text".into()),
                CqlValue::Text("text".into()),
                CqlValue::Text("int".into())
            ])),
        ]
    );
    let described = h.rows("DESCRIBE TYPE address");
    assert_eq!(
        described[0][3],
        text("CREATE TYPE ks.address (\n    street text,\n    town text,\n    zip int\n);")
    );
    for (cql, message) in [
        (
            "DROP TYPE address",
            "Cannot drop user type ks.address as it is still used by table ks.t",
        ),
        (
            "CREATE TYPE address (x int)",
            "A user type with name 'address' already exists",
        ),
        (
            "CREATE TABLE u (k int PRIMARY KEY, v nope)",
            "Unknown type ks.nope",
        ),
        (
            "INSERT INTO t (k, a) VALUES (2, {nope: 1})",
            "Unknown field 'nope' in value of user defined type address",
        ),
        (
            "UPDATE t SET a.street = 'q' WHERE k = 1",
            "for frozen UDT column a",
        ),
    ] {
        let e = h.err(cql);
        assert!(e.message.contains(message), "{cql}: {}", e.message);
    }
    h.ok("DROP TABLE t");
    h.ok("DROP TYPE address");
    assert!(h
        .rows("SELECT type_name FROM system_schema.types WHERE keyspace_name = 'ks'")
        .is_empty());
}

#[test]
fn frozen_collections_and_tuples_are_primary_key_columns() {
    let mut h = Harness::with_keyspace();
    h.ok("CREATE TABLE c (k tuple<int, text>, fl frozen<list<int>>, fm frozen<map<text, int>>, v int, \
          PRIMARY KEY (k, fl, fm)) WITH CLUSTERING ORDER BY (fl DESC, fm ASC)");
    for (fl, fm, v) in [
        ("[1, 2]", "{'b': 1, 'a': 2}", 1),
        ("[1]", "{}", 2),
        ("[]", "{'a': 1}", 3),
        ("[2]", "{'a': 1}", 4),
        ("[1, 2]", "{'a': 2}", 5),
    ] {
        h.ok(&format!(
            "INSERT INTO c (k, fl, fm, v) VALUES ((1, 'x'), {fl}, {fm}, {v})"
        ));
    }
    // fl descending (element by element, a prefix first), then fm ascending; the map
    // literal {'b': 1, 'a': 2} is the same key as {'a': 2, 'b': 1}.
    let rows = h.rows("SELECT v FROM c WHERE k = (1, 'x')");
    assert_eq!(
        rows,
        vec![
            vec![int(4)],
            vec![int(5)],
            vec![int(1)],
            vec![int(2)],
            vec![int(3)]
        ]
    );
    let rows =
        h.rows("SELECT v FROM c WHERE k = (1, 'x') AND fl = [1, 2] AND fm = {'a': 2, 'b': 1}");
    assert_eq!(rows, vec![vec![int(1)]]);
    let rows = h.rows("SELECT v FROM c WHERE k = (1, 'x') AND fl >= [1] AND fl < [2]");
    assert_eq!(rows, vec![vec![int(5)], vec![int(1)], vec![int(2)]]);
    let rows = h.rows("SELECT v FROM c WHERE k = (1, 'x') AND fl IN ([], [2])");
    assert_eq!(rows, vec![vec![int(4)], vec![int(3)]]);
    assert!(h.rows("SELECT v FROM c WHERE k = (1, 'y')").is_empty());
    // The token is Murmur3 of the serialized key, as Cassandra's (and drivers') is.
    let key = CqlValue::Tuple(vec![
        Some(CqlValue::Int(1)),
        Some(CqlValue::Text("x".into())),
    ]);
    let token = mosaic_types::token_of(&key.to_cql_bytes());
    let rows = h.rows("SELECT token(k) FROM c WHERE k = (1, 'x') LIMIT 1");
    assert_eq!(rows, vec![vec![Some(CqlValue::BigInt(token.0))]]);
    // Deletions by clustering prefix and range.
    h.ok("DELETE FROM c WHERE k = (1, 'x') AND fl = [1, 2]");
    h.ok("DELETE FROM c WHERE k = (1, 'x') AND fl > [1]");
    let rows = h.rows("SELECT v FROM c WHERE k = (1, 'x')");
    assert_eq!(rows, vec![vec![int(2)], vec![int(3)]]);
    let e = h.err("CREATE TABLE d (k frozen<list<duration>> PRIMARY KEY)");
    assert_eq!(
        e.message,
        "duration type is not supported for PRIMARY KEY column 'k'"
    );
}

#[test]
fn map_entries_filter_and_sets_and_maps_select_slices() {
    let mut h = Harness::with_keyspace();
    h.ok("CREATE TABLE t (k int PRIMARY KEY, m map<text, int>, s set<int>, fm frozen<map<int, text>>, l list<int>)");
    h.ok("INSERT INTO t (k, m, s, fm) VALUES (1, {'x': 1, 'y': 2, 'z': 3}, {1, 5, 9}, {1: 'o', 2: 't'})");
    h.ok("INSERT INTO t (k, m) VALUES (2, {'x': 2})");
    // m['x'] = v filters (with ALLOW FILTERING, as any filter on a regular column).
    let e = h.err("SELECT k FROM t WHERE m['x'] = 1");
    assert!(e.message.contains("ALLOW FILTERING"), "{}", e.message);
    assert_eq!(
        h.rows("SELECT k FROM t WHERE m['x'] = 1 ALLOW FILTERING"),
        vec![vec![int(1)]]
    );
    assert!(h
        .rows("SELECT k FROM t WHERE m['nope'] = 1 ALLOW FILTERING")
        .is_empty());
    for (cql, message) in [
        (
            "SELECT k FROM t WHERE l[0] = 3 ALLOW FILTERING",
            "Indexes on list entries (l[index] = value) are not currently supported.",
        ),
        (
            "SELECT k FROM t WHERE s[1] = 1 ALLOW FILTERING",
            "Column s cannot be used as a map",
        ),
        (
            "SELECT k FROM t WHERE fm[1] = 'o' ALLOW FILTERING",
            "Map-entry equality predicates on frozen map column fm are not supported",
        ),
        (
            "SELECT k FROM t WHERE m['x'] > 1 ALLOW FILTERING",
            "Only EQ relations are supported on map entries",
        ),
        (
            "SELECT l[0..1] FROM t",
            "Slice selection is only allowed on sets and maps, but l is a list",
        ),
    ] {
        assert_eq!(h.err(cql).message, message, "{cql}");
    }
    // Slices: both bounds inclusive, either left out; a non-frozen collection with no
    // element in the range is null; integer bounds lex as `1..2`.
    let map = |entries: &[(&str, i32)]| {
        Some(CqlValue::Map(
            entries
                .iter()
                .map(|(k, v)| (CqlValue::Text((*k).into()), CqlValue::Int(*v)))
                .collect(),
        ))
    };
    let ints = |items: &[i32]| {
        Some(CqlValue::Set(
            items.iter().map(|&i| CqlValue::Int(i)).collect(),
        ))
    };
    let rows = h.rows("SELECT m['x'..'y'], m['y'..], m[..'x'], m['y'..'x'], s[2..9], s[..4], fm[1..1] FROM t WHERE k = 1");
    assert_eq!(
        rows[0],
        vec![
            map(&[("x", 1), ("y", 2)]),
            map(&[("y", 2), ("z", 3)]),
            map(&[("x", 1)]),
            None,
            ints(&[5, 9]),
            ints(&[1]),
            Some(CqlValue::Map(vec![(
                CqlValue::Int(1),
                CqlValue::Text("o".into())
            )])),
        ]
    );
}

#[test]
fn markers_inside_collection_literals_are_refused_at_prepare() {
    use mosaic_cql::frame::{Prepare, Request, Response};
    let mut h = Harness::with_keyspace();
    h.ok("CREATE TABLE t (k int PRIMARY KEY, l list<int>, s set<int>, m map<text, int>)");
    for (cql, kind) in [
        ("INSERT INTO t (k, l) VALUES (?, [?, ?])", "list"),
        ("INSERT INTO t (k, s) VALUES (?, {?})", "set"),
        ("INSERT INTO t (k, m) VALUES (?, {?: ?})", "map"),
        ("UPDATE t SET m = m + {'a': ?} WHERE k = ?", "map"),
    ] {
        match h.request(Request::Prepare(Prepare {
            query: cql.to_owned(),
            keyspace: None,
        })) {
            Response::Error(e) => assert!(
                e.message.contains(&format!("Invalid {kind} literal for "))
                    && e.message
                        .ends_with(": bind variables are not supported inside collection literals"),
                "{cql}: {}",
                e.message
            ),
            other => panic!("{cql}: {other:?}"),
        }
    }
}

#[test]
fn list_order_is_arrival_order_and_messages_are_cassandras() {
    let mut h = Harness::with_keyspace();
    h.ok("CREATE TABLE t (k int PRIMARY KEY, l list<int>, m map<text, int>, fl frozen<list<int>>, fs frozen<set<int>>)");
    // Elements follow arrival, not USING TIMESTAMP (Cassandra's paths are timeuuids).
    h.ok("UPDATE t USING TIMESTAMP 10 SET l = l + [1] WHERE k = 1");
    h.ok("UPDATE t USING TIMESTAMP 5 SET l = l + [2] WHERE k = 1");
    h.ok("UPDATE t USING TIMESTAMP 3 SET l = [0] + l WHERE k = 1");
    assert_eq!(
        h.rows("SELECT l FROM t WHERE k = 1")[0][0],
        list(&[0, 1, 2])
    );
    // Removing null changes nothing.
    h.ok("UPDATE t SET l = l - null WHERE k = 1");
    assert_eq!(
        h.rows("SELECT l FROM t WHERE k = 1")[0][0],
        list(&[0, 1, 2])
    );
    for (cql, message) in [
        (
            "UPDATE t SET m[1] = 1 WHERE k = 1",
            "Invalid INTEGER constant (1) for \"key(m)\" of type text",
        ),
        (
            "UPDATE t SET l['a'] = 1 WHERE k = 1",
            "Invalid STRING constant (a) for \"idx(l)\" of type int",
        ),
        (
            "UPDATE t SET m[null] = 1 WHERE k = 1",
            "Invalid null map key",
        ),
        (
            "UPDATE t SET fl = [1] + fl WHERE k = 1",
            "Invalid operation (fl = [1] - fl) for frozen list column fl",
        ),
        (
            "UPDATE t SET fs = {1} + fs WHERE k = 1",
            "Invalid operation (fs = {1} - fs) for non list column fs",
        ),
        (
            "CREATE TABLE c (k int PRIMARY KEY, v set<counter>)",
            "Counters are not allowed inside collections: set<counter>",
        ),
        (
            "CREATE TABLE c (k int PRIMARY KEY, v map<text,counter>)",
            "Counters are not allowed inside collections: map<text, counter>",
        ),
    ] {
        assert_eq!(h.err(cql).message, message, "{cql}");
    }
}

#[test]
fn a_list_longer_than_65536_elements_keeps_every_element_in_order() {
    use mosaic_cql::frame::{Consistency, QueryParameters};
    let mut h = Harness::with_keyspace();
    h.ok("CREATE TABLE big (k int PRIMARY KEY, l list<int>)");
    let n = 70_000;
    let items: Vec<i32> = (0..n).collect();
    // Bound.
    let mut params = QueryParameters::new(Consistency::One);
    params.values = common::values(&[CqlValue::Int(1), list(&items).unwrap()]);
    h.query_with("INSERT INTO big (k, l) VALUES (?, ?)", params)
        .unwrap();
    assert_eq!(h.rows("SELECT l FROM big WHERE k = 1")[0][0], list(&items));
    // A literal; then elements appended and prepended by later statements go at the ends.
    let literal: Vec<String> = items.iter().map(i32::to_string).collect();
    h.ok(&format!(
        "INSERT INTO big (k, l) VALUES (2, [{}])",
        literal.join(", ")
    ));
    h.ok("UPDATE big SET l = l + [-1] WHERE k = 2");
    h.ok("UPDATE big SET l = [-2] + l WHERE k = 2");
    let mut want = vec![-2];
    want.extend(&items);
    want.push(-1);
    assert_eq!(h.rows("SELECT l FROM big WHERE k = 2")[0][0], list(&want));
    h.ok("UPDATE big SET l[69999] = 7 WHERE k = 1");
    let mut want = items.clone();
    want[69_999] = 7;
    assert_eq!(h.rows("SELECT l FROM big WHERE k = 1")[0][0], list(&want));
}

#[test]
fn dropped_columns_come_back_only_compatible_and_describe_orders_as_cassandra() {
    let mut h = Harness::with_keyspace();
    h.ok("CREATE TABLE t (k int PRIMARY KEY, x list<text>, y frozen<list<text>>, b blob, a int)");
    h.ok("ALTER TABLE t DROP x");
    h.ok("ALTER TABLE t DROP y");
    let e = h.err("ALTER TABLE t ADD x set<text>");
    assert_eq!(
        e.message,
        "Cannot re-add previously dropped column 'x' of type set<text>, incompatible with previous type list<text>"
    );
    let e = h.err("ALTER TABLE t ADD y list<text>");
    assert_eq!(
        e.message,
        "Cannot re-add previously dropped column 'y' of type list<text>, incompatible with previous type frozen<list<text>>"
    );
    h.ok("ALTER TABLE t ADD x list<text>");
    h.ok("ALTER TABLE t ADD y frozen<list<blob>>");
    // DESCRIBE: the columns of one cell by name, then the non-frozen collections by name.
    let rows = h.rows("DESCRIBE TABLE t");
    let Some(CqlValue::Text(statement)) = &rows[0][3] else {
        panic!("{rows:?}");
    };
    let columns: Vec<&str> = statement.lines().skip(1).take(5).collect();
    assert_eq!(
        columns,
        [
            "    k int PRIMARY KEY,",
            "    a int,",
            "    b blob,",
            "    y frozen<list<blob>>,",
            "    x list<text>"
        ]
    );
}

#[test]
fn fields_of_nested_user_types_are_selected_by_their_path() {
    let mut h = Harness::with_keyspace();
    h.ok("CREATE TYPE address (street text, city text)");
    h.ok("CREATE TYPE person (name text, addr frozen<address>)");
    h.ok("CREATE TABLE users (k int PRIMARY KEY, who frozen<person>)");
    h.ok("INSERT INTO users (k, who) VALUES (1, {name: 'n', addr: {street: 'x', city: 'Y'}})");
    h.ok("INSERT INTO users (k, who) VALUES (2, {name: 'm'})");
    h.ok("INSERT INTO users (k) VALUES (3)");
    let rows = h.rows("SELECT k, who.addr.city, who.name FROM users WHERE k IN (1, 2, 3)");
    // A null at any level reads as null.
    assert_eq!(
        rows,
        vec![
            vec![int(1), text("Y"), text("n")],
            vec![int(2), None, text("m")],
            vec![int(3), None, None],
        ]
    );
    // Errors as Apache Cassandra 4.1.10 words them.
    for (cql, message) in [
        (
            "SELECT who.addr.nope FROM users",
            "who.addr of type frozen<address> has no field nope",
        ),
        (
            "SELECT who.name.x FROM users",
            "Invalid field selection: who.name of type text is not a user type",
        ),
    ] {
        let e = h.err(cql);
        assert_eq!(e.message, message, "{cql}");
    }
}
