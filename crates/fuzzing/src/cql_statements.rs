//! Arbitrary CQL scripts executed by the statement processor over the in-memory
//! coordinator, after a prelude that creates tables of several shapes: executing any
//! statement a client can send must answer a result or an error, never panic. The first
//! bytes choose a page size and raw bound values, so paging and binding are fuzzed too.

use bytes::Bytes;
use mosaic_cql::frame::{
    BoundValues, Consistency, Execute, Prepare, ProtocolVersion, Query, QueryParameters, Request,
    Response, ResultBody, Value,
};
use mosaic_cql::memory::{block_on, MemoryCoordinator};
use mosaic_cql::parse::parse_statements;
use mosaic_cql::processor::{Processor, Session};

const PRELUDE: &[&str] = &[
    "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
    "USE ks",
    "CREATE TABLE t (k int PRIMARY KEY, v text)",
    "CREATE TABLE c (k int, c1 int, c2 text, s int STATIC, v blob, PRIMARY KEY (k, c1, c2)) WITH CLUSTERING ORDER BY (c1 DESC)",
    "CREATE TABLE p (a text, b bigint, c timestamp, d decimal, e varint, PRIMARY KEY ((a, b), c))",
    "CREATE TABLE n (a inet, b time, d duration, PRIMARY KEY (a, b)) WITH CLUSTERING ORDER BY (b DESC)",
    "INSERT INTO t (k, v) VALUES (1, 'a')",
    "INSERT INTO c (k, c1, c2, s, v) VALUES (1, 2, 'x', 3, 0x00)",
    "INSERT INTO p (a, b, c, d, e) VALUES ('a', 1, 0, 1.5, 7)",
    "INSERT INTO n (a, b, d) VALUES ('::1', '08:12:54.123', -P1Y2M3DT4H5M6S)",
];

/// The target: must return (never panic) for any `data`.
pub fn run(data: &[u8]) {
    let (head, rest) = data.split_at(data.len().min(4));
    let page_size = head.first().map(|b| i32::from(*b % 8) - 1);
    let values: Vec<Value> = head
        .iter()
        .skip(1)
        .map(|b| match b % 4 {
            0 => Value::Null,
            1 => Value::Unset,
            2 => Value::Bytes(Bytes::copy_from_slice(&i32::from(*b).to_be_bytes())),
            _ => Value::Bytes(Bytes::copy_from_slice(&[*b; 3])),
        })
        .collect();
    let text = String::from_utf8_lossy(rest);
    let Ok(statements) = parse_statements(&text) else {
        return;
    };
    let coordinator = MemoryCoordinator::new();
    let processor = Processor::new(coordinator);
    let mut session = Session::new(ProtocolVersion::V4);
    let run =
        |request: Request, session: &mut Session| block_on(processor.process(session, request));
    for cql in PRELUDE {
        let r = run(
            Request::Query(Query {
                query: (*cql).to_owned(),
                params: QueryParameters::new(Consistency::One),
            }),
            &mut session,
        );
        assert!(matches!(r, Response::Result(_)), "prelude {cql}: {r:?}");
    }
    for s in statements.into_iter().take(16) {
        let cql = s.to_string();
        let mut params = QueryParameters::new(Consistency::One);
        params.page_size = page_size;
        params.values = BoundValues::Positional(values.clone());
        let mut paging = 0;
        loop {
            let r = run(
                Request::Query(Query {
                    query: cql.clone(),
                    params: params.clone(),
                }),
                &mut session,
            );
            match r {
                Response::Result(ResultBody::Rows(rows))
                    if rows.metadata.paging_state.is_some() && paging < 8 =>
                {
                    params.paging_state = rows.metadata.paging_state;
                    paging += 1;
                }
                _ => break,
            }
        }
        if let Response::Result(ResultBody::Prepared(p)) = run(
            Request::Prepare(Prepare {
                query: cql,
                keyspace: None,
            }),
            &mut session,
        ) {
            let mut params = QueryParameters::new(Consistency::One);
            params.values = BoundValues::Positional(values.clone());
            let _ = run(
                Request::Execute(Execute {
                    id: p.id,
                    params,
                    result_metadata_id: None,
                }),
                &mut session,
            );
        }
    }
}
