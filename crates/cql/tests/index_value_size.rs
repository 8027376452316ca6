//! Scenario: a write that would index a value of 65,535 bytes or more is refused with
//! Cassandra's text (read from Cassandra 4.1.10); the same value in a column without an
//! index is written.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

mod common;

use common::Harness;

#[test]
fn an_indexed_value_of_64_kib_or_more_is_refused() {
    let mut h = Harness::with_keyspace();
    h.ok("CREATE TABLE ix (k int PRIMARY KEY, v text, w text)");
    h.ok("CREATE INDEX ON ix (v)");
    let ks = h.rows(
        "SELECT keyspace_name FROM system_schema.tables WHERE table_name = 'ix' ALLOW FILTERING",
    )[0][0]
        .clone()
        .unwrap();
    let mosaic_types::CqlValue::Text(ks) = ks else {
        panic!("keyspace name")
    };
    for (cql, size) in [
        (
            format!(
                "INSERT INTO ix (k, v) VALUES (1, '{}')",
                "x".repeat(100_000)
            ),
            100_000,
        ),
        (
            format!("UPDATE ix SET v = '{}' WHERE k = 1", "x".repeat(65_536)),
            65_536,
        ),
        (
            format!("UPDATE ix SET v = '{}' WHERE k = 1", "x".repeat(65_535)),
            65_535,
        ),
    ] {
        assert_eq!(
            h.err(&cql).message,
            format!("Cannot index value of size {size} for index ix_v_idx on {ks}.ix(v) (maximum allowed size=65535)")
        );
    }
    h.ok(&format!(
        "UPDATE ix SET v = '{}' WHERE k = 1",
        "x".repeat(65_534)
    ));
    h.ok(&format!(
        "UPDATE ix SET w = '{}' WHERE k = 1",
        "x".repeat(100_000)
    ));
    assert_eq!(h.rows("SELECT k FROM ix").len(), 1);
}
