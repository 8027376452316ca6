//! Stream-id multiplexing against a real `mosaic server`: many requests in flight on one
//! connection, each answered exactly once on its own stream with its own result — also
//! when the connection's in-flight cap is far below the number of requests sent at once
//! (the server then stops reading until answers go out, and loses nothing).
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

mod common;

use std::collections::BTreeMap;

use common::{query_body, Node};
use mosaic_cql::frame::Opcode;

const REQUESTS: i16 = 200;

#[test]
fn streams_in_flight_are_each_answered_on_their_own_stream() {
    let node = Node::start("[limits]\nconnection_requests_in_flight_max = 4\n");
    let mut c = node.ready();
    c.exec("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}");
    c.exec("CREATE TABLE ks.t (k int PRIMARY KEY, v text)");

    // All inserts in one write: far more than the in-flight cap.
    let mut bytes = Vec::new();
    for s in 1..=REQUESTS {
        let cql = format!("INSERT INTO ks.t (k, v) VALUES ({s}, 'value {s}')");
        bytes.extend(c.frame(s, Opcode::Query, &query_body(&cql)));
    }
    c.send_raw(&bytes);
    let mut answered = BTreeMap::new();
    for _ in 1..=REQUESTS {
        let f = c.recv();
        assert_eq!(f.result_kind(), 1, "{}", f.describe());
        assert!(
            answered.insert(f.stream, ()).is_none(),
            "stream {} twice",
            f.stream
        );
    }
    assert_eq!(
        answered.keys().copied().collect::<Vec<_>>(),
        (1..=REQUESTS).collect::<Vec<_>>()
    );

    // Reads interleaved with OPTIONS (answered by the connection itself), and a second
    // connection working meanwhile.
    let mut other = node.ready();
    let mut bytes = Vec::new();
    for s in 1..=REQUESTS {
        if s % 10 == 0 {
            bytes.extend(c.frame(s, Opcode::Options, &[]));
        } else {
            let cql = format!("SELECT v FROM ks.t WHERE k = {s}");
            bytes.extend(c.frame(s, Opcode::Query, &query_body(&cql)));
        }
    }
    c.send_raw(&bytes);
    let f = other.query(5, "SELECT v FROM ks.t WHERE k = 77");
    assert_eq!(f.rows(), vec![vec![Some(b"value 77".to_vec())]]);
    let mut seen = BTreeMap::new();
    for _ in 1..=REQUESTS {
        let f = c.recv();
        if f.stream % 10 == 0 {
            assert_eq!(f.opcode, 0x06, "{}", f.describe());
        } else {
            let expected = format!("value {}", f.stream);
            assert_eq!(
                f.rows(),
                vec![vec![Some(expected.into_bytes())]],
                "stream {}",
                f.stream
            );
        }
        assert!(
            seen.insert(f.stream, ()).is_none(),
            "stream {} twice",
            f.stream
        );
    }
    assert_eq!(seen.len(), REQUESTS as usize);
}
