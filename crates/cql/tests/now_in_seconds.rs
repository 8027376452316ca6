//! Scenario: protocol v5's `now_in_seconds` query parameter sets "now" for TTLs and
//! deletion times, as Cassandra honours it.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

mod common;

use common::{decode_rows, int, Harness};
use mosaic_cql::frame::{Consistency, QueryParameters, ResultBody};

fn at(now: i32) -> QueryParameters {
    let mut params = QueryParameters::new(Consistency::One);
    params.now_in_seconds = Some(now);
    params
}

#[test]
fn now_in_seconds_sets_the_clock_of_ttls() {
    let mut h = Harness::with_keyspace();
    h.ok("CREATE TABLE t (k int PRIMARY KEY, v int)");
    // Written "at" 1000 s after the epoch with a 100 s TTL: long expired by the real clock.
    h.query_with("INSERT INTO t (k, v) VALUES (1, 7) USING TTL 100", at(1000))
        .unwrap();
    assert!(h.rows("SELECT v FROM t").is_empty());
    let ResultBody::Rows(rows) = h.query_with("SELECT v, ttl(v) FROM t", at(1050)).unwrap() else {
        panic!("rows")
    };
    assert_eq!(decode_rows(&rows), vec![vec![int(7), int(50)]]);
    let ResultBody::Rows(rows) = h.query_with("SELECT v FROM t", at(1100)).unwrap() else {
        panic!("rows")
    };
    assert!(decode_rows(&rows).is_empty());
}
