//! Parser unit tests: one per grammar rule family, plus the display round trip.

use super::*;
use crate::ast::*;
use mosaic_types::{CqlType, DataType};

fn parse(text: &str) -> Statement {
    match parse_statement(text) {
        Ok(s) => s,
        Err(e) => panic!("{text:?} should parse: {e}"),
    }
}

fn parse_err(text: &str) -> ParseError {
    match parse_statement(text) {
        Ok(s) => panic!("{text:?} should not parse, got {s:?}"),
        Err(e) => e,
    }
}

fn select(text: &str) -> SelectStatement {
    match parse(text) {
        Statement::Select(s) => s,
        other => panic!("not a select: {other:?}"),
    }
}

fn id(s: &str) -> Ident {
    Ident::new(s)
}

fn int(s: &str) -> Term {
    Term::Literal(Literal::Integer(s.to_owned()))
}

fn string(s: &str) -> Term {
    Term::Literal(Literal::String(s.to_owned()))
}

/// `parse(display(parse(text))) == parse(text)`.
fn assert_round_trips(text: &str) {
    let first = parse(text);
    let printed = first.to_string();
    let second = match parse_statement(&printed) {
        Ok(s) => s,
        Err(e) => panic!("{printed:?} (printed from {text:?}) should parse: {e}"),
    };
    assert_eq!(first, second, "round trip through {printed:?}");
}

#[test]
fn unquoted_identifiers_are_lowercased_and_quoted_ones_keep_case() {
    let s = select(r#"SELECT Foo, "Bar", "a""b" FROM KS."Tbl""#);
    assert_eq!(
        s.selection,
        Selection::Selectors(vec![
            Selector {
                expr: SelectorExpr::Column(id("foo")),
                alias: None
            },
            Selector {
                expr: SelectorExpr::Column(id("Bar")),
                alias: None
            },
            Selector {
                expr: SelectorExpr::Column(id("a\"b")),
                alias: None
            },
        ])
    );
    assert_eq!(
        s.table,
        QualifiedName {
            keyspace: Some(id("ks")),
            name: id("Tbl")
        }
    );
}

#[test]
fn unreserved_keywords_work_as_column_names() {
    let s = select(
        "SELECT key, value, ttl, timestamp, type, values, count, distinct FROM t WHERE key = 'local'",
    );
    let Selection::Selectors(sel) = &s.selection else {
        panic!("selectors")
    };
    assert_eq!(sel.len(), 8);
    assert!(!s.distinct);
    assert_eq!(
        s.where_clause,
        vec![Relation::Compare {
            column: id("key"),
            op: Operator::Eq,
            value: string("local")
        }]
    );
    assert!(select("SELECT distinct FROM t").selection != Selection::Wildcard);
    assert!(!select("SELECT distinct FROM t").distinct);
    assert!(select("SELECT DISTINCT k FROM t").distinct);
    assert!(select("SELECT DISTINCT distinct FROM t").distinct);
    assert!(!select("SELECT distinct(a), json(b) FROM t").distinct);
    assert_round_trips("SELECT \"distinct\"(a) FROM t");
    assert_round_trips("SELECT \"json\"(a) FROM t");
}

#[test]
fn reserved_keywords_need_quotes() {
    let e = parse_err("SELECT from FROM t");
    assert_eq!(e.error_code(), SYNTAX_ERROR_CODE);
    let s = select(r#"SELECT "from" FROM t"#);
    assert_eq!(
        s.selection,
        Selection::Selectors(vec![Selector {
            expr: SelectorExpr::Column(id("from")),
            alias: None
        }])
    );
}

#[test]
fn every_literal_kind() {
    let s = parse(
        "INSERT INTO t (a,b,c,d,e,f,g,h,i,j,k,l,m,n) VALUES ('it''s', $$x'y$$, -42, 1.5, -2e10, \
         NaN, Infinity, -Infinity, 123E4567-e89b-12d3-a456-426614174000, 0xCafe, true, FALSE, \
         null, 0x)",
    );
    let Statement::Insert(ins) = s else {
        panic!("insert")
    };
    assert_eq!(
        ins.values,
        vec![
            string("it's"),
            string("x'y"),
            int("-42"),
            Term::Literal(Literal::Float("1.5".into())),
            Term::Literal(Literal::Float("-2e10".into())),
            Term::Literal(Literal::NaN),
            Term::Literal(Literal::Infinity),
            Term::Literal(Literal::NegInfinity),
            Term::Literal(Literal::Uuid(0x123e4567_e89b_12d3_a456_426614174000)),
            Term::Literal(Literal::Blob(vec![0xca, 0xfe])),
            Term::Literal(Literal::Boolean(true)),
            Term::Literal(Literal::Boolean(false)),
            Term::Literal(Literal::Null),
            Term::Literal(Literal::Blob(vec![])),
        ]
    );
}

#[test]
fn inet_time_and_duration_types_and_duration_literals() {
    let Statement::CreateTable(t) =
        parse("CREATE TABLE t (k INET, c time, d Duration, PRIMARY KEY (k, c))")
    else {
        panic!("create table")
    };
    let types: Vec<Option<CqlType>> = t.columns.iter().map(|c| c.ty.native()).collect();
    assert_eq!(
        types,
        [
            Some(CqlType::Inet),
            Some(CqlType::Time),
            Some(CqlType::Duration)
        ]
    );
    for lit in [
        "1h30m",
        "-2d",
        "1y2mo3w4d5h6m7s8ms9us10ns",
        "1Y2MO3W4D5H6M7S8MS9US10NS",
        "12µs",
        "P1Y2M3DT4H5M6S",
        "PT5M",
        "P2W",
        "-P2W",
        "P0001-02-03T04:05:06",
        "-P0001-02-03T04:05:06",
    ] {
        let text = format!("INSERT INTO t (k, d) VALUES (1, {lit})");
        let Statement::Insert(ins) = parse(&text) else {
            panic!("insert")
        };
        assert_eq!(
            ins.values.get(1),
            Some(&Term::Literal(Literal::Duration(lit.into()))),
            "{text}"
        );
        assert_round_trips(&text);
    }
    // A duration in a WHERE clause, and a column that only looks like one.
    assert_round_trips("SELECT * FROM t WHERE d = -1h ALLOW FILTERING");
    assert_round_trips("SELECT P1Dx FROM t");
}

#[test]
fn bind_markers_are_numbered_in_textual_order_with_names() {
    let s =
        parse("INSERT INTO t (a, b, c) VALUES (?, :Bee, :\"Cee\") USING TTL ? AND TIMESTAMP :ts");
    let names: Vec<Option<&str>> = s
        .bind_markers()
        .iter()
        .map(|m| m.name.as_ref().map(Ident::as_str))
        .collect();
    assert_eq!(
        names,
        vec![None, Some("bee"), Some("Cee"), None, Some("ts")]
    );
    assert!(s
        .bind_markers()
        .iter()
        .enumerate()
        .all(|(i, m)| m.index == i));
    let Statement::Insert(ins) = s else {
        panic!("insert")
    };
    assert_eq!(
        ins.using.ttl,
        Some(IntValue::Bind(BindMarker {
            index: 3,
            name: None
        }))
    );
}

#[test]
fn insert_with_ten_markers() {
    let s = parse(
        "INSERT INTO ycsb.usertable (y_id, field0, field1, field2, field3, field4, field5, field6, \
         field7, field8) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
    );
    assert_eq!(s.bind_markers().len(), 10);
}

#[test]
fn select_clauses_in_order() {
    let s = select(
        "SELECT a AS x, count(*), COUNT(1), count(b), writetime(c), TTL(c), token(k), \
         CAST(a AS text), sum(v), toTimestamp(now()) FROM ks.t WHERE k = ? AND c >= 3 \
         GROUP BY k ORDER BY c DESC, d PER PARTITION LIMIT 2 LIMIT ? ALLOW FILTERING",
    );
    let Selection::Selectors(sel) = &s.selection else {
        panic!("selectors")
    };
    let exprs: Vec<&SelectorExpr> = sel.iter().map(|s| &s.expr).collect();
    assert_eq!(sel.first().and_then(|s| s.alias.clone()), Some(id("x")));
    assert_eq!(exprs.get(1), Some(&&SelectorExpr::CountRows));
    assert_eq!(exprs.get(2), Some(&&SelectorExpr::CountRows));
    assert_eq!(
        exprs.get(3),
        Some(&&SelectorExpr::Call {
            name: id("count"),
            args: vec![SelectorExpr::Column(id("b"))]
        })
    );
    assert_eq!(exprs.get(4), Some(&&SelectorExpr::WriteTime(id("c"))));
    assert_eq!(exprs.get(5), Some(&&SelectorExpr::Ttl(id("c"))));
    assert_eq!(
        exprs.get(7),
        Some(&&SelectorExpr::Cast {
            expr: Box::new(SelectorExpr::Column(id("a"))),
            ty: CqlType::Text
        })
    );
    assert_eq!(
        exprs.get(9),
        Some(&&SelectorExpr::Call {
            name: id("totimestamp"),
            args: vec![SelectorExpr::Call {
                name: id("now"),
                args: vec![]
            }]
        })
    );
    assert_eq!(s.group_by, vec![id("k")]);
    assert_eq!(
        s.order_by,
        vec![(id("c"), Order::Desc), (id("d"), Order::Asc)]
    );
    assert_eq!(s.per_partition_limit, Some(IntValue::Literal(2)));
    assert_eq!(
        s.limit,
        Some(IntValue::Bind(BindMarker {
            index: 1,
            name: None
        }))
    );
    assert!(s.allow_filtering);
}

#[test]
fn relations_of_every_shape() {
    let s = select(
        "SELECT * FROM t WHERE k IN (1, 2) AND k2 IN ? AND (c1, c2) > (1, 'a') AND (c1, c2) <= ? \
         AND (c1, c2) IN ((1, 'a'), ?) AND token(k, k2) > token(?, ?) AND token(k) <= -123 AND x != 1",
    );
    let m = |index| BindMarker { index, name: None };
    assert_eq!(
        s.where_clause,
        vec![
            Relation::In {
                column: id("k"),
                values: InValues::List(vec![int("1"), int("2")])
            },
            Relation::In {
                column: id("k2"),
                values: InValues::Bind(m(0))
            },
            Relation::MultiColumn {
                columns: vec![id("c1"), id("c2")],
                op: Operator::Gt,
                value: Term::Tuple(vec![int("1"), string("a")]),
            },
            Relation::MultiColumn {
                columns: vec![id("c1"), id("c2")],
                op: Operator::Le,
                value: Term::Bind(m(1)),
            },
            Relation::MultiColumnIn {
                columns: vec![id("c1"), id("c2")],
                values: InValues::List(vec![
                    Term::Tuple(vec![int("1"), string("a")]),
                    Term::Bind(m(2))
                ]),
            },
            Relation::Token {
                columns: vec![id("k"), id("k2")],
                op: Operator::Gt,
                value: Term::Call {
                    name: id("token"),
                    args: vec![Term::Bind(m(3)), Term::Bind(m(4))]
                },
            },
            Relation::Token {
                columns: vec![id("k")],
                op: Operator::Le,
                value: int("-123")
            },
            Relation::Compare {
                column: id("x"),
                op: Operator::Ne,
                value: int("1")
            },
        ]
    );
}

#[test]
fn update_and_delete() {
    let Statement::Update(u) =
        parse("UPDATE ks.t USING TIMESTAMP 5 SET a = 1, b = now() WHERE k = ? AND c = ?")
    else {
        panic!("update")
    };
    assert_eq!(
        u.using,
        Using {
            ttl: None,
            timestamp: Some(IntValue::Literal(5))
        }
    );
    assert_eq!(u.assignments.len(), 2);
    assert_eq!(u.bind_markers.len(), 2);
    let Statement::Delete(d) = parse("DELETE a, b FROM t USING TIMESTAMP ? WHERE k = 1") else {
        panic!("delete")
    };
    assert_eq!(
        d.columns,
        vec![
            DeletedColumn {
                column: id("a"),
                element: None,
                field: None
            },
            DeletedColumn {
                column: id("b"),
                element: None,
                field: None
            }
        ]
    );
    assert_eq!(
        d.timestamp,
        Some(IntValue::Bind(BindMarker {
            index: 0,
            name: None
        }))
    );
    let Statement::Delete(d) = parse("DELETE FROM t WHERE k = 1") else {
        panic!("delete")
    };
    assert!(d.columns.is_empty());
}

#[test]
fn batches_number_markers_across_statements() {
    let Statement::Batch(b) = parse(
        "BEGIN UNLOGGED BATCH USING TIMESTAMP ? \
           INSERT INTO t (k, v) VALUES (?, ?); \
           UPDATE t SET v = ? WHERE k = ? \
           DELETE FROM t WHERE k = ?; \
         APPLY BATCH;",
    ) else {
        panic!("batch")
    };
    assert_eq!(b.kind, BatchKind::Unlogged);
    assert_eq!(b.statements.len(), 3);
    assert_eq!(b.bind_markers.len(), 6);
    let inner: Vec<usize> = b
        .statements
        .iter()
        .flat_map(|s| s.bind_markers().iter().map(|m| m.index))
        .collect();
    assert_eq!(inner, vec![1, 2, 3, 4, 5]);
    let Statement::Batch(empty) = parse("BEGIN BATCH APPLY BATCH") else {
        panic!("batch")
    };
    assert_eq!(empty.kind, BatchKind::Logged);
    assert!(empty.statements.is_empty());
}

#[test]
fn keyspace_statements() {
    let Statement::CreateKeyspace(ks) = parse(
        "CREATE KEYSPACE IF NOT EXISTS ycsb WITH replication = {'class': 'SimpleStrategy', \
         'replication_factor': 3} AND durable_writes = true",
    ) else {
        panic!("create keyspace")
    };
    assert!(ks.if_not_exists);
    assert_eq!(
        find_property(&ks.properties, "replication"),
        Some(&PropertyValue::Map(vec![
            ("class".into(), "SimpleStrategy".into()),
            ("replication_factor".into(), "3".into())
        ]))
    );
    assert_eq!(
        find_property(&ks.properties, "durable_writes"),
        Some(&PropertyValue::Constant(Literal::Boolean(true)))
    );
    assert!(matches!(
        parse(
            "ALTER KEYSPACE ks WITH replication = {'class': 'NetworkTopologyStrategy', 'dc1': 3}"
        ),
        Statement::AlterKeyspace(_)
    ));
    assert_eq!(
        parse("DROP KEYSPACE IF EXISTS ks"),
        Statement::DropKeyspace(DropKeyspaceStatement {
            name: id("ks"),
            if_exists: true
        })
    );
    assert_eq!(
        parse("use \"MyKs\";"),
        Statement::Use(UseStatement {
            keyspace: id("MyKs")
        })
    );
}

#[test]
fn create_table_forms_normalise_the_primary_key() {
    let Statement::CreateTable(t) = parse(
        "CREATE TABLE IF NOT EXISTS ks.events (tenant text, day date, ts timeuuid, v blob, \
         note text STATIC, PRIMARY KEY ((tenant, day), ts)) WITH CLUSTERING ORDER BY (ts DESC) \
         AND layout = {'kind': 'erasure', 'k': 4, 'm': 2} AND gc_grace_seconds = 0 \
         AND comment = 'x' AND caching = ALL",
    ) else {
        panic!("create table")
    };
    assert_eq!(t.primary_key.partition_key, vec![id("tenant"), id("day")]);
    assert_eq!(t.primary_key.clustering_columns, vec![id("ts")]);
    assert_eq!(t.clustering_order, vec![(id("ts"), Order::Desc)]);
    assert_eq!(t.columns.len(), 5);
    assert!(t.columns.last().is_some_and(|c| c.is_static));
    assert_eq!(t.properties.len(), 4);
    assert_eq!(
        find_property(&t.properties, "caching"),
        Some(&PropertyValue::Constant(Literal::String("ALL".into())))
    );
    let Statement::CreateTable(t) = parse("CREATE TABLE t (k int PRIMARY KEY, v text,)") else {
        panic!("create table")
    };
    assert_eq!(
        t.primary_key,
        PrimaryKey {
            partition_key: vec![id("k")],
            clustering_columns: vec![]
        }
    );
    let Statement::CreateTable(t) =
        parse("CREATE TABLE t (k int, c int, v text, PRIMARY KEY (k, c))")
    else {
        panic!("create table")
    };
    assert_eq!(t.primary_key.clustering_columns, vec![id("c")]);
}

#[test]
fn create_table_primary_key_mistakes_are_invalid() {
    let e = parse_err("CREATE TABLE t (k int, v int)");
    assert!(matches!(e, ParseError::Invalid { .. }), "{e:?}");
    let e = parse_err("CREATE TABLE t (k int PRIMARY KEY, v int PRIMARY KEY)");
    assert!(matches!(e, ParseError::Invalid { .. }), "{e:?}");
    let e = parse_err("CREATE TABLE t (k int PRIMARY KEY) WITH a = 1 AND a = 2");
    assert!(
        e.message().contains("Multiple definition for property a"),
        "{e}"
    );
}

#[test]
fn alter_drop_truncate() {
    assert!(matches!(
        parse("ALTER TABLE t ADD v int"),
        Statement::AlterTable(_)
    ));
    assert!(matches!(
        parse("ALTER TABLE t ADD (v int, w text STATIC)"),
        Statement::AlterTable(_)
    ));
    assert!(matches!(
        parse("ALTER TABLE t DROP (v, w)"),
        Statement::AlterTable(_)
    ));
    assert!(matches!(
        parse("ALTER TABLE t RENAME a TO b AND c TO d"),
        Statement::AlterTable(_)
    ));
    assert!(matches!(
        parse("ALTER TABLE t WITH comment = 'hi'"),
        Statement::AlterTable(_)
    ));
    assert_eq!(
        parse("DROP TABLE IF EXISTS ks.t"),
        Statement::DropTable(DropTableStatement {
            name: QualifiedName {
                keyspace: Some(id("ks")),
                name: id("t")
            },
            if_exists: true
        })
    );
    assert!(matches!(parse("TRUNCATE t"), Statement::Truncate(_)));
    assert!(matches!(
        parse("TRUNCATE TABLE ks.t"),
        Statement::Truncate(_)
    ));
}

#[test]
fn collection_syntax_parses_as_cassandra_writes_it() {
    let Statement::CreateTable(t) = parse(
        "CREATE TABLE t (k int PRIMARY KEY, l list<int>, s set<frozen<list<text>>>, \
         m map<text, int>, f frozen<map<int, text>>, t tuple<int, text>)",
    ) else {
        panic!("create table")
    };
    let types: Vec<String> = t.columns.iter().map(|c| c.ty.to_string()).collect();
    assert_eq!(
        types,
        [
            "int",
            "list<int>",
            "set<frozen<list<text>>>",
            "map<text, int>",
            "frozen<map<int, text>>",
            "frozen<tuple<int, text>>"
        ]
    );
    for (text, shown) in [
        ("UPDATE t SET l = l + [1, 2] WHERE k = 1", "l = l + [1, 2]"),
        ("UPDATE t SET l = [1] + l WHERE k = 1", "l = [1] + l"),
        ("UPDATE t SET s = s - {'a'} WHERE k = 1", "s = s - {'a'}"),
        ("UPDATE t SET m['a'] = 1 WHERE k = 1", "m['a'] = 1"),
        (
            "UPDATE t SET m = {'a': 1, 'b': ?} WHERE k = 1",
            "m = {'a': 1, 'b': ?}",
        ),
        ("UPDATE t SET m = {} WHERE k = 1", "m = {}"),
    ] {
        let Statement::Update(u) = parse(text) else {
            panic!("{text}")
        };
        assert_eq!(u.assignments[0].to_string(), shown);
    }
    let Statement::Delete(d) = parse("DELETE m['a'], l FROM t WHERE k = 1") else {
        panic!("delete")
    };
    assert_eq!(d.columns[0].to_string(), "m['a']");
    assert!(d.columns[1].element.is_none());
    let Statement::Select(s) = parse("SELECT * FROM t WHERE m CONTAINS KEY 'a' ALLOW FILTERING")
    else {
        panic!("select")
    };
    assert_eq!(s.where_clause[0].to_string(), "m CONTAINS KEY 'a'");
    for (bad, message) in [
        (
            "CREATE TABLE t (k int PRIMARY KEY, l list<list<int>>)",
            "Non-frozen collections are not allowed inside collections: list<list<int>>",
        ),
        (
            "CREATE TABLE t (k int PRIMARY KEY, f frozen<int>)",
            "frozen<> is only allowed on collections, tuples, and user-defined types",
        ),
        (
            "CREATE TABLE t (k int PRIMARY KEY, s set<duration>)",
            "Durations are not allowed inside sets: set<duration>",
        ),
    ] {
        let e = parse_err(bad);
        assert!(e.to_string().contains(message), "{bad}: {e}");
    }
}

#[test]
fn counters_parse_and_print_back() {
    for (text, shown) in [
        (
            "CREATE TABLE t (k int PRIMARY KEY, c COUNTER, s counter static)",
            "CREATE TABLE t (k int, c counter, s counter STATIC, PRIMARY KEY ((k)))",
        ),
        (
            "ALTER TABLE t ADD d counter",
            "ALTER TABLE t ADD (d counter)",
        ),
        (
            "UPDATE t SET c += 1, d -= ? WHERE k = 1",
            "UPDATE t SET c = c + 1, d = d - ? WHERE k = 1",
        ),
        (
            "BEGIN COUNTER BATCH UPDATE t SET c = c + 1 WHERE k = 1 APPLY BATCH",
            "BEGIN COUNTER BATCH UPDATE t SET c = c + 1 WHERE k = 1; APPLY BATCH",
        ),
    ] {
        let parsed = parse_statement(text).unwrap_or_else(|e| panic!("{text}: {e}"));
        assert_eq!(parsed.to_string(), shown, "{text}");
        assert_eq!(parse_statement(shown).as_ref(), Ok(&parsed), "{shown}");
    }
    for (text, message) in [
        (
            "CREATE TABLE t (k int PRIMARY KEY, c tuple<int, counter>)",
            "Counters are not allowed inside tuples",
        ),
        (
            "CREATE TYPE u (a counter)",
            "A user type cannot contain counters",
        ),
        (
            "ALTER TYPE u ADD a counter",
            "A user type cannot contain counters",
        ),
    ] {
        let e = parse_err(text);
        assert_eq!(e.error_code(), INVALID_ERROR_CODE, "{text}");
        assert!(e.to_string().contains(message), "{text}: {e}");
    }
    let e = parse_err("CREATE TABLE t (k int PRIMARY KEY, c frozen<counter>)");
    assert!(e.to_string().contains("(got counter)"), "{e}");
}

#[test]
fn unsupported_features_are_invalid_with_a_feature() {
    let cases = [
        (
            "CREATE MATERIALIZED VIEW v AS SELECT * FROM t",
            Feature::MaterializedView,
        ),
        (
            "CREATE OR REPLACE FUNCTION f () RETURNS int",
            Feature::UserDefinedFunction,
        ),
        (
            "CREATE AGGREGATE a (int) SFUNC f STYPE int",
            Feature::UserDefinedAggregate,
        ),
        ("CREATE TRIGGER tr ON t USING 'x'", Feature::Trigger),
        ("SELECT CAST(k AS counter) FROM t", Feature::Counter),
        (
            "CREATE TABLE t (k int PRIMARY KEY, v 'org.example.MyType')",
            Feature::DataType,
        ),
        (
            "CREATE TABLE t (k int PRIMARY KEY) WITH COMPACT STORAGE",
            Feature::CompactStorage,
        ),
        ("SELECT * FROM t WHERE v LIKE 'a%'", Feature::SecondaryIndex),
        (
            "GRANT EXECUTE ON ALL FUNCTIONS TO bob",
            Feature::Authorization,
        ),
        ("CREATE ROLE bob WITH OPTIONS = {}", Feature::Authorization),
    ];
    for (text, feature) in cases {
        let e = parse_err(text);
        assert_eq!(e.feature(), Some(feature), "{text}: {e}");
        assert_eq!(e.error_code(), INVALID_ERROR_CODE, "{text}");
        assert!(
            e.message().starts_with("Mosaic does not support"),
            "{text}: {e}"
        );
    }
}

fn describe(text: &str) -> DescribeStatement {
    match parse(text) {
        Statement::Describe(s) => s,
        other => panic!("not a describe: {other:?}"),
    }
}

fn qualified(keyspace: Option<&str>, name: &str) -> QualifiedName {
    QualifiedName {
        keyspace: keyspace.map(id),
        name: id(name),
    }
}

#[test]
fn describe_targets_follow_cassandra_4_grammar() {
    let cases = [
        ("DESCRIBE CLUSTER", DescribeTarget::Cluster),
        ("desc schema", DescribeTarget::Schema { full: false }),
        (
            "DESCRIBE FULL SCHEMA",
            DescribeTarget::Schema { full: true },
        ),
        ("DESCRIBE KEYSPACES", DescribeTarget::Keyspaces),
        (
            "DESCRIBE KEYSPACE",
            DescribeTarget::Keyspace {
                name: None,
                only: false,
            },
        ),
        (
            "DESCRIBE ONLY KEYSPACE Ks",
            DescribeTarget::Keyspace {
                name: Some(id("ks")),
                only: true,
            },
        ),
        ("DESCRIBE TABLES", DescribeTarget::Tables),
        ("DESCRIBE COLUMNFAMILIES", DescribeTarget::Tables),
        (
            "DESCRIBE TABLE ks.t",
            DescribeTarget::Table(qualified(Some("ks"), "t")),
        ),
        (
            "DESC COLUMNFAMILY \"T\"",
            DescribeTarget::Table(qualified(None, "T")),
        ),
        (
            "DESCRIBE INDEX i",
            DescribeTarget::Index(qualified(None, "i")),
        ),
        (
            "DESCRIBE MATERIALIZED VIEW ks.v",
            DescribeTarget::MaterializedView(qualified(Some("ks"), "v")),
        ),
        ("DESCRIBE TYPES", DescribeTarget::Types),
        (
            "DESCRIBE TYPE ty",
            DescribeTarget::Type(qualified(None, "ty")),
        ),
        ("DESCRIBE FUNCTIONS", DescribeTarget::Functions),
        (
            "DESCRIBE FUNCTION ks.f",
            DescribeTarget::Function(qualified(Some("ks"), "f")),
        ),
        ("DESCRIBE AGGREGATES", DescribeTarget::Aggregates),
        (
            "DESCRIBE AGGREGATE a",
            DescribeTarget::Aggregate(qualified(None, "a")),
        ),
        (
            "DESCRIBE ks",
            DescribeTarget::Generic(qualified(None, "ks")),
        ),
        (
            "DESCRIBE ks.t;",
            DescribeTarget::Generic(qualified(Some("ks"), "t")),
        ),
        // A describe word before `.` is a keyspace name.
        (
            "DESCRIBE type.t",
            DescribeTarget::Generic(qualified(Some("type"), "t")),
        ),
        (
            "DESCRIBE \"cluster\"",
            DescribeTarget::Generic(qualified(None, "cluster")),
        ),
    ];
    for (text, target) in cases {
        let s = describe(text);
        assert_eq!(s.target, target, "{text}");
        assert!(!s.internals, "{text}");
        assert_round_trips(text);
    }
    let s = describe("DESCRIBE TABLE t WITH INTERNALS");
    assert_eq!(s.target, DescribeTarget::Table(qualified(None, "t")));
    assert!(s.internals);
    assert_round_trips("DESC KEYSPACE WITH INTERNALS");
    assert_round_trips("DESC ONLY KEYSPACE \"Mixed\" WITH INTERNALS");
    assert!(parse("DESCRIBE SCHEMA").bind_markers().is_empty());
    assert!(!parse("DESCRIBE SCHEMA").is_schema_change());
}

#[test]
fn describe_without_a_target_is_a_syntax_error() {
    for text in [
        "DESCRIBE",
        "DESC ;",
        "DESCRIBE TABLE",
        "DESCRIBE MATERIALIZED t",
        "DESCRIBE TABLES WITH",
        "DESCRIBE TABLES WITH FRIENDS",
        "DESCRIBE ks.",
        "DESCRIBE KEYSPACES extra",
    ] {
        assert_eq!(parse_err(text).error_code(), SYNTAX_ERROR_CODE, "{text}");
    }
}

#[test]
fn syntax_errors_read_like_cassandras() {
    let e = parse_err("SELECT * FRM t");
    assert_eq!(e.error_code(), SYNTAX_ERROR_CODE);
    assert_eq!(
        e.to_string(),
        "line 1:9 mismatched input 'FRM' expecting K_FROM (SELECT * [FRM]...)"
    );
    let e = parse_err("SELEC * FROM t");
    assert_eq!(
        e.to_string(),
        "line 1:0 no viable alternative at input 'SELEC' ([SELEC]...)"
    );
    let e = parse_err("SELECT * FROM");
    assert_eq!(
        e.to_string(),
        "line 1:13 mismatched input '<EOF>' expecting IDENT (* FROM[])"
    );
    let e = parse_err("SELECT *\nFROM t\nWHERE k = = 1");
    assert_eq!((e.line(), e.column()), (3, 10));
    let e = parse_err("SELECT * FROM t; SELECT");
    assert!(e.message().contains("expecting EOF"), "{e}");
}

#[test]
fn scripts_split_on_semicolons() {
    let all = parse_statements(
        "-- a script\nUSE ks;; CREATE TABLE t (k int PRIMARY KEY);\n\
         BEGIN BATCH INSERT INTO t (k) VALUES (?); APPLY BATCH;\
         SELECT * FROM t WHERE k = ?",
    )
    .expect("parses");
    assert_eq!(all.len(), 4);
    assert_eq!(all.last().map(|s| s.bind_markers().len()), Some(1));
    assert_eq!(all.get(2).map(|s| s.bind_markers().len()), Some(1));
    assert_eq!(parse_statements("  ;  ").expect("empty script"), vec![]);
    assert!(parse_statement("").is_err());
}

#[test]
fn deep_nesting_is_refused_not_overflowed() {
    let deep = format!(
        "SELECT * FROM t WHERE k = {}1{}",
        "f(".repeat(100_000),
        ")".repeat(100_000)
    );
    let e = parse_err(&deep);
    assert!(e.message().contains("nested"), "{e}");
    let deep = format!(
        "SELECT * FROM t WHERE (a) = {}1{}",
        "(".repeat(100_000),
        ")".repeat(100_000)
    );
    assert!(parse_statement(&deep).is_err());
    let deep = format!(
        "SELECT {}a{} FROM t",
        "f(".repeat(100_000),
        ")".repeat(100_000)
    );
    assert!(parse_statement(&deep).is_err());
    let ok = format!(
        "SELECT * FROM t WHERE k = {}1{}",
        "f(".repeat(30),
        ")".repeat(30)
    );
    assert!(parse_statement(&ok).is_ok());
}

#[test]
fn out_of_range_limits_are_invalid() {
    let e = parse_err("SELECT * FROM t LIMIT 99999999999999999999");
    assert!(matches!(e, ParseError::Invalid { .. }), "{e:?}");
}

#[test]
fn display_round_trips() {
    for text in [
        "SELECT * FROM system.local WHERE key = 'local'",
        "SELECT DISTINCT a AS \"A\", count(*), \"count\"(1), \"ttl\"(x), cast(b AS bigint), 1, ? FROM t",
        "SELECT a FROM \"Ks\".\"select\" WHERE token(a) > token(?) AND (b, c) IN ((1, 2), ?) AND d IN ? LIMIT :lim",
        "INSERT INTO t (a, \"B\") VALUES (0x00ff, 00000000-0000-0000-0000-00000000000a) USING TIMESTAMP ? AND TTL ?",
        "UPDATE t USING TTL 5 SET v = 'it''s' WHERE k = -1",
        "DELETE a FROM t USING TIMESTAMP 7 WHERE k = NaN AND c = -Infinity",
        "BEGIN BATCH USING TIMESTAMP 1 INSERT INTO t (k) VALUES (?); DELETE FROM t WHERE k = ?; APPLY BATCH",
        "CREATE TABLE t (k int, c text, s blob STATIC, PRIMARY KEY ((k), c)) WITH CLUSTERING ORDER BY (c DESC) AND \"Opt\" = {'a': 'b'}",
        "CREATE KEYSPACE k WITH replication = {'class': 'SimpleStrategy', 'replication_factor': '1'}",
        "ALTER TABLE t RENAME a TO b",
        "ALTER TABLE t DROP a",
        "ALTER TABLE t ADD a int",
        "TRUNCATE t",
        "USE \"Ks\"",
    ] {
        assert_round_trips(text);
    }
}

mod properties {
    use super::*;
    use proptest::prelude::*;

    fn ident() -> impl Strategy<Value = Ident> {
        prop_oneof![
            "[a-z][a-z0-9_]{0,8}".prop_map(Ident::new),
            "[A-Za-z \"'.]{1,8}".prop_map(Ident::new),
            Just(Ident::new("key")),
            Just(Ident::new("select")),
            Just(Ident::new("token")),
        ]
    }

    fn literal() -> impl Strategy<Value = Literal> {
        prop_oneof![
            ".{0,10}".prop_map(Literal::String),
            any::<i64>().prop_map(|n| Literal::Integer(n.to_string())),
            "-?[0-9]{1,5}\\.[0-9]{0,4}(e-?[0-9]{1,3})?".prop_map(Literal::Float),
            Just(Literal::NaN),
            Just(Literal::Infinity),
            Just(Literal::NegInfinity),
            any::<u128>().prop_map(Literal::Uuid),
            proptest::collection::vec(any::<u8>(), 0..6).prop_map(Literal::Blob),
            any::<bool>().prop_map(Literal::Boolean),
            Just(Literal::Null),
            "-?([0-9]{1,3}(y|mo|w|d|h|m|s|ms|us|µs|ns)){1,3}".prop_map(Literal::Duration),
            "-?P([0-9]{1,2}Y)?([0-9]{1,2}M)?[0-9]{1,2}D(T[0-9]H)?".prop_map(Literal::Duration),
            "-?P[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}".prop_map(Literal::Duration),
        ]
    }

    /// Terms without bind markers (their indexes depend on position; markers are covered
    /// by the fixed round-trip cases).
    fn term() -> impl Strategy<Value = Term> {
        let leaf = literal().prop_map(Term::Literal);
        leaf.prop_recursive(3, 12, 3, |inner| {
            prop_oneof![
                (ident(), proptest::collection::vec(inner.clone(), 0..3))
                    .prop_map(|(name, args)| Term::Call { name, args }),
                proptest::collection::vec(inner, 1..3).prop_map(Term::Tuple),
            ]
        })
    }

    fn relation() -> impl Strategy<Value = Relation> {
        let op = prop_oneof![
            Just(Operator::Eq),
            Just(Operator::Ne),
            Just(Operator::Lt),
            Just(Operator::Le),
            Just(Operator::Gt),
            Just(Operator::Ge),
        ];
        prop_oneof![
            (ident(), op.clone(), term()).prop_map(|(column, op, value)| Relation::Compare {
                column,
                op,
                value
            }),
            (ident(), proptest::collection::vec(term(), 0..3)).prop_map(|(column, v)| {
                Relation::In {
                    column,
                    values: InValues::List(v),
                }
            }),
            (
                proptest::collection::vec(ident(), 1..3),
                op,
                proptest::collection::vec(term(), 1..3)
            )
                .prop_map(|(columns, op, v)| Relation::Token {
                    columns,
                    op,
                    value: Term::Call {
                        name: Ident::new("token"),
                        args: v
                    }
                }),
        ]
    }

    fn table() -> impl Strategy<Value = QualifiedName> {
        (proptest::option::of(ident()), ident())
            .prop_map(|(keyspace, name)| QualifiedName { keyspace, name })
    }

    fn statement() -> impl Strategy<Value = Statement> {
        let select = (
            any::<bool>(),
            proptest::collection::vec((ident(), proptest::option::of(ident())), 0..3),
            table(),
            proptest::collection::vec(relation(), 0..3),
            proptest::option::of(any::<i64>()),
            any::<bool>(),
        )
            .prop_map(
                |(distinct, cols, table, where_clause, limit, allow_filtering)| {
                    let selection = if cols.is_empty() {
                        Selection::Wildcard
                    } else {
                        Selection::Selectors(
                            cols.into_iter()
                                .map(|(c, alias)| Selector {
                                    expr: SelectorExpr::Column(c),
                                    alias,
                                })
                                .collect(),
                        )
                    };
                    Statement::Select(SelectStatement {
                        json: false,
                        distinct,
                        selection,
                        table,
                        where_clause,
                        group_by: vec![],
                        order_by: vec![],
                        per_partition_limit: None,
                        limit: limit.map(IntValue::Literal),
                        allow_filtering,
                        bind_markers: vec![],
                    })
                },
            );
        let insert = (
            table(),
            proptest::collection::vec((ident(), term()), 1..4),
            proptest::option::of(any::<i64>()),
        )
            .prop_map(|(table, pairs, ttl)| {
                let (columns, values) = pairs.into_iter().unzip();
                Statement::Insert(InsertStatement {
                    table,
                    columns,
                    values,
                    json: None,
                    conditions: None,
                    using: Using {
                        ttl: ttl.map(IntValue::Literal),
                        timestamp: None,
                    },
                    bind_markers: vec![],
                })
            });
        let create = (
            table(),
            proptest::collection::vec(
                (
                    ident(),
                    proptest::sample::select(CqlType::ALL.to_vec()),
                    any::<bool>(),
                ),
                0..3,
            ),
            proptest::collection::vec(ident(), 1..3),
            proptest::collection::vec(ident(), 0..2),
            proptest::collection::vec(
                (
                    ident(),
                    prop_oneof![
                        literal()
                            .prop_filter("no null properties", |l| *l != Literal::Null)
                            .prop_map(PropertyValue::Constant),
                        proptest::collection::vec((".{0,4}", ".{0,4}"), 0..3)
                            .prop_map(PropertyValue::Map),
                    ],
                ),
                0..3,
            ),
        )
            .prop_map(|(name, cols, pk, ck, props)| {
                let mut properties: Vec<Property> = Vec::new();
                for (name, value) in props {
                    if !properties.iter().any(|p| p.name == name) {
                        properties.push(Property { name, value });
                    }
                }
                Statement::CreateTable(CreateTableStatement {
                    name,
                    if_not_exists: false,
                    columns: cols
                        .into_iter()
                        .map(|(name, ty, is_static)| ColumnDefinition {
                            name,
                            ty: DataType::Native(ty),
                            is_static,
                            counter: false,
                        })
                        .collect(),
                    primary_key: PrimaryKey {
                        partition_key: pk,
                        clustering_columns: ck,
                    },
                    clustering_order: vec![],
                    properties,
                })
            });
        let describe = (
            prop_oneof![
                Just(DescribeTarget::Cluster),
                any::<bool>().prop_map(|full| DescribeTarget::Schema { full }),
                Just(DescribeTarget::Keyspaces),
                (proptest::option::of(ident()), any::<bool>())
                    .prop_map(|(name, only)| DescribeTarget::Keyspace { name, only }),
                Just(DescribeTarget::Tables),
                table().prop_map(DescribeTarget::Table),
                table().prop_map(DescribeTarget::Index),
                table().prop_map(DescribeTarget::MaterializedView),
                table().prop_map(DescribeTarget::Type),
                table().prop_map(DescribeTarget::Function),
                table().prop_map(DescribeTarget::Aggregate),
                table().prop_map(DescribeTarget::Generic),
                prop_oneof![Just("cluster"), Just("tables"), Just("type"), Just("full")].prop_map(
                    |w| DescribeTarget::Generic(QualifiedName {
                        keyspace: None,
                        name: Ident::new(w),
                    })
                ),
            ],
            any::<bool>(),
        )
            .prop_map(|(target, internals)| {
                Statement::Describe(DescribeStatement { target, internals })
            });
        prop_oneof![select, insert, create, describe]
    }

    proptest! {
        #[test]
        fn display_then_parse_gives_the_same_tree(s in statement()) {
            let printed = s.to_string();
            let parsed = parse_statement(&printed);
            prop_assert_eq!(parsed.as_ref().ok(), Some(&s), "printed: {}\nerror: {:?}", printed, parsed.as_ref().err());
        }

        #[test]
        fn arbitrary_text_never_panics(text in ".{0,200}") {
            let _ = parse_statement(&text);
            let _ = parse_statements(&text);
        }

        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            let text = String::from_utf8_lossy(&bytes);
            let _ = parse_statements(&text);
        }

        #[test]
        fn cql_shaped_token_soup_never_panics(words in proptest::collection::vec(prop_oneof![
            Just("SELECT"), Just("*"), Just("FROM"), Just("t"), Just("WHERE"), Just("("), Just(")"),
            Just(","), Just("?"), Just(":n"), Just("="), Just("IN"), Just("AND"), Just("token"),
            Just("INSERT"), Just("INTO"), Just("VALUES"), Just("1"), Just("'s'"), Just("BEGIN"),
            Just("BATCH"), Just("APPLY"), Just(";"), Just("CREATE"), Just("TABLE"), Just("int"),
            Just("PRIMARY"), Just("KEY"), Just("WITH"), Just("{"), Just("}"), Just(":"), Just("USING"),
            Just("TTL"), Just("LIMIT"), Just("count"), Just("-"), Just("Infinity"), Just("IF"),
        ], 0..40)) {
            let text = words.join(" ");
            let _ = parse_statements(&text);
        }
    }
}

#[test]
fn index_statements_parse_and_round_trip() {
    let Statement::CreateIndex(s) = parse("CREATE INDEX ON ks.t (v)") else {
        panic!("not a CREATE INDEX");
    };
    assert_eq!(s.name, None);
    assert_eq!(s.column.as_str(), "v");
    assert_eq!(s.kind, None);
    let Statement::CreateIndex(s) = parse("create index if not exists \"Idx\" on t (KEYS(m))")
    else {
        panic!("not a CREATE INDEX");
    };
    assert!(s.if_not_exists);
    assert_eq!(s.name.as_ref().map(|n| n.as_str()), Some("Idx"));
    assert_eq!(s.kind, Some(crate::schema::TargetKind::Keys));
    let Statement::CreateIndex(s) = parse(
        "CREATE CUSTOM INDEX i ON t (v) USING 'StorageAttachedIndex' WITH OPTIONS = {'case_sensitive': 'false'}",
    ) else {
        panic!("not a CREATE INDEX");
    };
    assert_eq!(s.class.as_deref(), Some("StorageAttachedIndex"));
    assert_eq!(
        s.options,
        [("case_sensitive".to_owned(), "false".to_owned())]
    );
    // A column named like a target function is still a column.
    let Statement::CreateIndex(s) = parse("CREATE INDEX ON t (keys)") else {
        panic!("not a CREATE INDEX");
    };
    assert_eq!((s.column.as_str(), s.kind), ("keys", None));
    for text in [
        "CREATE INDEX ON ks.t (v)",
        "CREATE INDEX IF NOT EXISTS i ON t (entries(m))",
        "CREATE INDEX i ON t (full(f))",
        "CREATE INDEX \"Q\" ON t (values(\"L\"))",
        "CREATE CUSTOM INDEX i ON t (v) USING 'a''b' WITH OPTIONS = {'k': 'v'}",
        "DROP INDEX i",
        "DROP INDEX IF EXISTS ks.i",
    ] {
        assert_round_trips(text);
    }
    for bad in [
        "CREATE INDEX ks.i ON t (v)",
        "CREATE INDEX ON t v",
        "CREATE CUSTOM INDEX ON t (v)",
        "CREATE INDEX ON t (keys m)",
    ] {
        assert!(parse_statement(bad).is_err(), "{bad}");
    }
}

#[test]
fn json_statements_parse_and_round_trip() {
    let s = select("SELECT JSON k, v FROM t");
    assert!(s.json);
    // `json` is still a column name.
    assert!(!select("SELECT json FROM t").json);
    assert!(!select("SELECT json, v FROM t").json);
    let Statement::Insert(i) = parse("INSERT INTO t JSON '{\"k\": 1}' DEFAULT UNSET USING TTL 5")
    else {
        panic!("not an insert");
    };
    let json = i.json.expect("json");
    assert!(json.default_unset);
    assert_eq!(i.using.ttl, Some(IntValue::Literal(5)));
    for text in [
        "SELECT JSON * FROM t",
        "SELECT JSON DISTINCT k FROM t",
        "INSERT INTO t JSON '{}'",
        "INSERT INTO t JSON ? DEFAULT UNSET",
        "INSERT INTO t JSON ? USING TIMESTAMP 3",
    ] {
        assert_round_trips(text);
    }
    for bad in ["INSERT INTO t JSON 1", "INSERT INTO t JSON '{}' DEFAULT x"] {
        assert!(parse_statement(bad).is_err(), "{bad}");
    }
}

#[test]
fn lightweight_transaction_conditions_parse_and_print_back() {
    for text in [
        "INSERT INTO t (k, v) VALUES (1, 2) IF NOT EXISTS",
        "INSERT INTO t (k, v) VALUES (?, ?) IF NOT EXISTS USING TTL 10",
        "INSERT INTO t JSON '{\"k\": 1}' DEFAULT UNSET IF NOT EXISTS USING TTL ?",
        "UPDATE t SET v = 1 WHERE k = 1 IF EXISTS",
        "UPDATE t USING TTL 5 SET v = 1 WHERE k = 1 AND c = 2 IF v = 1 AND w != 'x' AND s < 3 AND s <= 4 AND s > 1 AND s >= 0",
        "UPDATE t SET v = ? WHERE k = ? IF v IN (1, ?, null) AND w IN ? AND v = null",
        "UPDATE t SET v = 1 WHERE k = 1 IF m['a'] = 1 AND l[?] IN (1, 2) AND m[:key] IN ? AND u.f = :f AND u.g IN (1)",
        "UPDATE t SET v = 1 WHERE k = 1 IF s CONTAINS 1 AND m CONTAINS KEY ? AND l CONTAINS ?",
        "UPDATE t SET v = 1 WHERE k = 1 IF \"exists\" = 1",
        "DELETE FROM t WHERE k = 1 IF EXISTS",
        "DELETE v, m['a'] FROM t WHERE k = 1 AND c = 1 IF v = 1 AND m = {'a': 1}",
        "BEGIN BATCH INSERT INTO t (k, c) VALUES (1, 1) IF NOT EXISTS; UPDATE t SET v = 1 WHERE k = 1 AND c = 2 IF v = 3; APPLY BATCH",
    ] {
        assert_round_trips(text);
    }
    let Ok(Statement::Update(u)) = parse_statement("UPDATE t SET v = ? WHERE k = ? IF m[?] IN ?")
    else {
        panic!("update");
    };
    assert_eq!(
        u.conditions,
        Some(Conditions::Columns(vec![Condition {
            column: Ident::new("m"),
            target: ConditionTarget::Element(Term::Bind(BindMarker {
                index: 2,
                name: None
            })),
            op: ConditionOp::In(InValues::Bind(BindMarker {
                index: 3,
                name: None
            })),
        }]))
    );
    assert_eq!(u.bind_markers.len(), 4);
    for (bad, message) in [
        (
            "INSERT INTO t (k) VALUES (1) IF EXISTS",
            "mismatched input 'EXISTS' expecting K_NOT",
        ),
        (
            "INSERT INTO t (k) VALUES (1) IF v = 1",
            "mismatched input 'v' expecting K_NOT",
        ),
        (
            "INSERT INTO t (k) VALUES (1) USING TTL 1 IF NOT EXISTS",
            "mismatched input 'IF' expecting EOF",
        ),
        (
            "UPDATE t SET v = 1 WHERE k = 1 IF NOT EXISTS",
            "no viable alternative at input 'NOT'",
        ),
        (
            "UPDATE t SET v = 1 WHERE k = 1 IF EXISTS AND v = 1",
            "no viable alternative at input 'AND'",
        ),
        (
            "UPDATE t SET v = 1 WHERE k = 1 IF v = 1 IF v = 2",
            "mismatched input 'IF' expecting EOF",
        ),
        ("UPDATE t SET v = 1 WHERE k = 1 IF", "<EOF>"),
        (
            "UPDATE t SET v = 1 WHERE k = 1 IF v[1] CONTAINS 1",
            "mismatched input 'CONTAINS'",
        ),
    ] {
        let e = parse_err(bad);
        assert_eq!(
            e.error_code(),
            crate::parse::SYNTAX_ERROR_CODE,
            "{bad}: {e}"
        );
        assert!(e.to_string().contains(message), "{bad}: {e}");
    }
}

#[test]
fn role_and_permission_statements_parse_as_cassandra_reads_them() {
    use crate::ast::{AuthStatement, Permission, Permissions, ResourceName, RoleOptions};
    let auth = |text: &str| match parse(text) {
        Statement::Auth(s) => s,
        other => panic!("{text}: not a role statement: {other:?}"),
    };
    assert_eq!(
        auth("CREATE ROLE IF NOT EXISTS Bob WITH PASSWORD = 'pw' AND LOGIN = true AND SUPERUSER = false"),
        AuthStatement::CreateRole {
            name: "bob".into(),
            if_not_exists: true,
            options: RoleOptions {
                password: Some("pw".into()),
                login: Some(true),
                superuser: Some(false),
            },
            user: false,
        }
    );
    assert_eq!(
        auth("CREATE USER 'Al' WITH PASSWORD 'x' SUPERUSER"),
        AuthStatement::CreateRole {
            name: "Al".into(),
            if_not_exists: false,
            options: RoleOptions {
                password: Some("x".into()),
                login: Some(true),
                superuser: Some(true),
            },
            user: true,
        }
    );
    assert_eq!(
        auth("GRANT SELECT ON ks.t TO bob"),
        AuthStatement::Grant {
            permissions: Permissions::Some(vec![Permission::Select]),
            resource: ResourceName::Table(Some("ks".into()), "t".into()),
            role: "bob".into(),
        }
    );
    assert_eq!(
        auth("REVOKE ALL PERMISSIONS ON ALL KEYSPACES FROM bob"),
        AuthStatement::Revoke {
            permissions: Permissions::All,
            resource: ResourceName::AllKeyspaces,
            role: "bob".into(),
        }
    );
    assert_eq!(
        auth("GRANT admin TO bob"),
        AuthStatement::GrantRole {
            role: "admin".into(),
            grantee: "bob".into(),
        }
    );
    assert_eq!(
        auth("LIST ALL OF bob NORECURSIVE"),
        AuthStatement::ListPermissions {
            permissions: Permissions::All,
            resource: None,
            of: Some("bob".into()),
            recursive: false,
        }
    );
    assert_eq!(
        auth("LIST ROLES"),
        AuthStatement::ListRoles {
            of: None,
            recursive: true,
        }
    );
    assert_eq!(auth("LIST USERS"), AuthStatement::ListUsers);
    for text in [
        "CREATE ROLE r WITH LOGIN = true AND LOGIN = false",
        "GRANT SELECT ON KEYSPACE TO bob",
    ] {
        parse_err(text);
    }
}
