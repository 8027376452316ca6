//! The `heterogeneous` layout's schema rules through the processor over an in-memory
//! coordinator: each `replica_orders` entry must be a permutation of the table's
//! clustering columns, the table needs clustering columns, the options may change with
//! ALTER while the class may not, renames carry over, and DESCRIBE's statement recreates
//! the table.

mod common;

use common::Harness;
use mosaic_cql::coordinator::Coordinator;
use mosaic_cql::frame::{error_code, ResultBody};
use mosaic_cql::schema::TableMeta;
use mosaic_types::CqlValue;

fn table(h: &Harness, name: &str) -> TableMeta {
    h.coordinator
        .catalog()
        .table("ks", name)
        .map(|t| TableMeta::clone(t))
        .unwrap_or_else(|| panic!("ks.{name} exists"))
}

/// The `create_statement` column of `DESCRIBE TABLE`.
fn describe(h: &mut Harness, name: &str) -> String {
    let rows = h.rows(&format!("DESCRIBE TABLE ks.{name}"));
    match rows.first().and_then(|r| r.get(3)) {
        Some(Some(CqlValue::Text(s))) => s.clone(),
        other => panic!("DESCRIBE TABLE ks.{name}: {other:?}"),
    }
}

const CREATE: &str = "CREATE TABLE t (k int, a int, b text, c bigint, v int, PRIMARY KEY (k, a, b, c)) \
     WITH layout = {'class': 'heterogeneous', 'replica_orders': '(B, c, a), (c,b,a)', 'auto': 'TRUE'}";

#[test]
fn replica_orders_are_checked_against_the_clustering_columns_and_kept_canonical() {
    let mut h = Harness::with_keyspace();
    h.ok(CREATE);
    let t = table(&h, "t");
    assert_eq!(t.params.layout, "heterogeneous");
    assert_eq!(
        t.params.layout_options["replica_orders"],
        "(b, c, a), (c, b, a)"
    );
    assert_eq!(t.params.layout_options["auto"], "true");
    assert_eq!(t.replica_orders(), vec![vec![1, 2, 0], vec![2, 1, 0]]);

    // Other layouts have no orders; a heterogeneous table without the option keeps the
    // declared order everywhere.
    h.ok("CREATE TABLE u (k int, a int, PRIMARY KEY (k, a))");
    assert!(table(&h, "u").replica_orders().is_empty());
    h.ok("CREATE TABLE plain (k int, a int, b int, PRIMARY KEY (k, a, b)) WITH layout = 'heterogeneous'");
    assert!(table(&h, "plain").replica_orders().is_empty());
    // Quoted names are columns of that exact case.
    h.ok("CREATE TABLE q (k int, \"Aa\" int, b int, PRIMARY KEY (k, \"Aa\", b)) WITH layout = {'class': 'heterogeneous', 'replica_orders': '(b, \"Aa\")'}");
    assert_eq!(table(&h, "q").replica_orders(), vec![vec![1, 0]]);

    let bad = |orders: &str| {
        format!(
            "CREATE TABLE x (k int, a int, b int, c int, PRIMARY KEY (k, a, b, c)) WITH layout = {{'class': 'heterogeneous', 'replica_orders': '{orders}'}}"
        )
    };
    for (cql, says) in [
        (bad("(a, b, c), (b, x, a)"), "order 2 (b, x, a) names x, which is not a clustering column"),
        (bad("(a, b, k)"), "order 1 (a, b, k) names k, which is not a clustering column"),
        (bad("(b, b, a)"), "order 1 (b, b, a) names b more than once"),
        (bad("(c, a)"), "order 1 (c, a) leaves out b"),
        (bad("(c, b, a), (a)"), "order 2 (a) leaves out b, c"),
        (bad("(\"A\", b, c)"), "names \"A\", which is not a clustering column"),
        (bad("(a, b, c"), "Invalid replica_orders '(a, b, c'"),
        (
            "CREATE TABLE x (k int PRIMARY KEY, v int) WITH layout = 'heterogeneous'".to_owned(),
            "Table ks.x cannot use layout 'heterogeneous': it has no clustering columns",
        ),
        (
            "CREATE TABLE x (k int PRIMARY KEY, v int) WITH layout = {'class': 'heterogeneous', 'replica_orders': '(v)'}".to_owned(),
            "it has no clustering columns",
        ),
    ] {
        let e = h.err(&cql);
        assert_eq!(e.kind.code(), error_code::CONFIG, "{cql}");
        assert!(e.message.contains(says), "{cql}: {}", e.message);
    }
    let e = h.err(&bad("(b, x, a)"));
    assert!(
        e.message
            .contains("every clustering column (a, b, c) exactly once"),
        "{}",
        e.message
    );
}

#[test]
fn a_heterogeneous_default_layout_needs_clustering_columns_too() {
    let mut h = Harness::with_keyspace();
    *h.coordinator.default_layout.lock() = Some("heterogeneous".to_owned());
    h.ok("CREATE TABLE wide (k int, c int, PRIMARY KEY (k, c))");
    assert_eq!(table(&h, "wide").params.layout, "heterogeneous");
    let e = h.err("CREATE TABLE kv (k int PRIMARY KEY, v int)");
    assert_eq!(e.kind.code(), error_code::CONFIG);
    assert!(
        e.message.contains("the cluster's default layout"),
        "{}",
        e.message
    );
    h.ok("CREATE TABLE kv (k int PRIMARY KEY, v int) WITH layout = 'uniform'");
}

#[test]
fn alter_changes_a_heterogeneous_tables_options_but_never_its_layout() {
    let mut h = Harness::with_keyspace();
    h.ok(CREATE);
    let changed = h.ok("ALTER TABLE t WITH layout = {'class': 'heterogeneous', 'replica_orders': '(a, c, b)', 'auto_min_gain': '0.50'}");
    assert!(
        matches!(changed, ResultBody::SchemaChange(_)),
        "{changed:?}"
    );
    let t = table(&h, "t");
    assert_eq!(t.replica_orders(), vec![vec![0, 2, 1]]);
    assert_eq!(t.params.layout_options["auto_min_gain"], "0.5");
    // The map replaces the options whole, as Cassandra's `compaction` does: `auto` left
    // out is back to its default.
    assert!(!t.params.layout_options.contains_key("auto"));
    // The same checks as CREATE.
    let e =
        h.err("ALTER TABLE t WITH layout = {'class': 'heterogeneous', 'replica_orders': '(a, c)'}");
    assert_eq!(e.kind.code(), error_code::CONFIG);
    assert!(
        e.message.contains("order 1 (a, c) leaves out b"),
        "{}",
        e.message
    );
    let e = h.err("ALTER TABLE t WITH layout = {'class': 'heterogeneous', 'auto': 'maybe'}");
    assert!(e.message.contains("must be true or false"), "{}", e.message);
    assert_eq!(table(&h, "t").replica_orders(), vec![vec![0, 2, 1]]);
    // Other options alone leave the layout as it is.
    h.ok("ALTER TABLE t WITH comment = 'orders kept'");
    assert_eq!(table(&h, "t").replica_orders(), vec![vec![0, 2, 1]]);
    // The class never changes, either way.
    for cql in [
        "ALTER TABLE t WITH layout = 'uniform'",
        "ALTER TABLE t WITH layout = {'class': 'decoupled'}",
    ] {
        let e = h.err(cql);
        assert_eq!(e.kind.code(), error_code::CONFIG, "{cql}");
        assert!(
            e.message.contains("Cannot change the layout of table ks.t")
                && e.message.contains("a table keeps its layout for life"),
            "{cql}: {}",
            e.message
        );
    }
    h.ok("CREATE TABLE u (k int, a int, PRIMARY KEY (k, a))");
    let e =
        h.err("ALTER TABLE u WITH layout = {'class': 'heterogeneous', 'replica_orders': '(a)'}");
    assert!(
        e.message.contains("a table keeps its layout for life") && e.message.contains("'uniform'"),
        "{}",
        e.message
    );
    assert_eq!(table(&h, "u").params.layout, "uniform");
}

#[test]
fn renaming_a_clustering_column_renames_it_in_the_orders() {
    let mut h = Harness::with_keyspace();
    h.ok(CREATE);
    h.ok("ALTER TABLE t RENAME b TO bee");
    let t = table(&h, "t");
    assert_eq!(
        t.params.layout_options["replica_orders"],
        "(bee, c, a), (c, bee, a)"
    );
    assert_eq!(t.replica_orders(), vec![vec![1, 2, 0], vec![2, 1, 0]]);
    // Columns outside the key come and go without touching the orders.
    h.ok("ALTER TABLE t ADD w int");
    h.ok("ALTER TABLE t DROP w");
    assert_eq!(table(&h, "t").replica_orders(), t.replica_orders());
}

#[test]
fn describe_shows_the_orders_and_recreates_the_table() {
    let mut h = Harness::with_keyspace();
    h.ok("CREATE TABLE t (k int, a int, \"B\" text, PRIMARY KEY (k, a, \"B\")) WITH layout = {'class': 'heterogeneous', 'replica_orders': '(\"B\", a)', 'auto': 'true', 'auto_min_gain': '0.3'}");
    let before = table(&h, "t");
    // DESCRIBE shows the layout as the `mosaic.layout` extension: the map's text in hex.
    let create = describe(&mut h, "t");
    let hex: String = before
        .params
        .layout_text()
        .bytes()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert!(create.contains(&hex), "{create}");
    assert_eq!(
        before.params.layout_text(),
        "{'auto': 'true', 'auto_min_gain': '0.3', 'class': 'heterogeneous', 'replica_orders': '(\"B\", a)'}"
    );
    h.ok("DROP TABLE t");
    h.ok(&create);
    let after = table(&h, "t");
    assert_eq!(after.params, before.params);
    assert_eq!(after.replica_orders(), vec![vec![1, 0]]);
    // Replaying it over the existing table restates the layout: accepted.
    let alter = format!("ALTER TABLE t WITH extensions = {{'mosaic.layout': 0x{hex}}}");
    h.ok(&alter);
    assert_eq!(table(&h, "t").params, before.params);
}
