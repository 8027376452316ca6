//! Helpers to run CQL through the [`Processor`] over the in-memory coordinator: statements,
//! values and results as Rust values.
#![allow(dead_code)]

use std::sync::Arc;

use bytes::Bytes;
use mosaic_cql::frame::{
    BoundValues, Consistency, ErrorResponse, ProtocolVersion, Query, QueryParameters, Request,
    Response, ResultBody, Rows, Value,
};
use mosaic_cql::memory::{block_on, MemoryCoordinator};
use mosaic_cql::processor::{Processor, Session};
use mosaic_types::{CqlType, CqlValue};

/// A processor over a fresh in-memory coordinator, with a session.
pub struct Harness {
    pub coordinator: Arc<MemoryCoordinator>,
    pub processor: Processor<MemoryCoordinator>,
    pub session: Session,
}

impl Harness {
    pub fn new() -> Harness {
        let coordinator = MemoryCoordinator::new();
        Harness {
            processor: Processor::new(coordinator.clone()),
            coordinator,
            session: Session::new(ProtocolVersion::V4),
        }
    }

    /// A harness with keyspace `ks` created and in use.
    pub fn with_keyspace() -> Harness {
        let mut h = Harness::new();
        h.ok("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}");
        h.ok("USE ks");
        h
    }

    pub fn request(&mut self, request: Request) -> Response {
        block_on(self.processor.process(&mut self.session, request))
    }

    pub fn query_with(
        &mut self,
        cql: &str,
        params: QueryParameters,
    ) -> Result<ResultBody, ErrorResponse> {
        match self.request(Request::Query(Query {
            query: cql.to_owned(),
            params,
        })) {
            Response::Result(r) => Ok(r),
            Response::Error(e) => Err(e),
            other => panic!("unexpected response {other:?}"),
        }
    }

    pub fn query(&mut self, cql: &str) -> Result<ResultBody, ErrorResponse> {
        self.query_with(cql, QueryParameters::new(Consistency::One))
    }

    /// Runs a statement that must succeed.
    pub fn ok(&mut self, cql: &str) -> ResultBody {
        self.query(cql).unwrap_or_else(|e| panic!("{cql}: {e:?}"))
    }

    /// Runs a statement that must fail; returns the error.
    pub fn err(&mut self, cql: &str) -> ErrorResponse {
        match self.query(cql) {
            Ok(r) => panic!("{cql}: expected an error, got {r:?}"),
            Err(e) => e,
        }
    }

    /// The replication factor of a keyspace.
    pub fn coordinator_rf(&self, keyspace: &str) -> u32 {
        use mosaic_cql::coordinator::Coordinator;
        self.coordinator
            .catalog()
            .keyspace(keyspace)
            .expect("keyspace")
            .replication
            .factor()
    }

    /// Prepares a statement that must prepare.
    pub fn prepare(&mut self, cql: &str) -> mosaic_cql::frame::Prepared {
        match self.request(Request::Prepare(mosaic_cql::frame::Prepare {
            query: cql.to_owned(),
            keyspace: None,
        })) {
            Response::Result(ResultBody::Prepared(p)) => p,
            other => panic!("{cql}: {other:?}"),
        }
    }

    /// Runs a SELECT and decodes its rows with the result metadata's types.
    pub fn rows(&mut self, cql: &str) -> Vec<Vec<Option<CqlValue>>> {
        match self.ok(cql) {
            ResultBody::Rows(rows) => decode_rows(&rows),
            other => panic!("{cql}: expected rows, got {other:?}"),
        }
    }
}

/// Decodes every cell of a Rows result.
pub fn decode_rows(rows: &Rows) -> Vec<Vec<Option<CqlValue>>> {
    rows.rows
        .iter()
        .map(|row| {
            row.iter()
                .zip(&rows.metadata.columns)
                .map(|(cell, spec)| {
                    let ty = match &spec.ty {
                        mosaic_cql::frame::ColumnType::Native(t) => *t,
                        other => {
                            let ty = data_type(other);
                            return cell
                                .as_ref()
                                .map(|b| ty.decode(b).expect("decodable collection"));
                        }
                    };
                    cell.as_ref().map(|b| {
                        if b.is_empty()
                            && matches!(ty, CqlType::Text | CqlType::Blob | CqlType::Ascii)
                        {
                            return match ty {
                                CqlType::Text => CqlValue::Text(String::new()),
                                CqlType::Ascii => CqlValue::Ascii(String::new()),
                                _ => CqlValue::Blob(Vec::new()),
                            };
                        }
                        CqlValue::from_cql_bytes(ty, b).expect("decodable cell")
                    })
                })
                .collect()
        })
        .collect()
}

/// The column type a wire type stands for (collections as non-frozen, which decode alike).
pub fn data_type(ty: &mosaic_cql::frame::ColumnType) -> mosaic_types::DataType {
    ty.data_type()
        .unwrap_or_else(|| panic!("no data type for {ty:?}"))
}

/// Positional bound values.
pub fn values(vs: &[CqlValue]) -> BoundValues {
    BoundValues::Positional(
        vs.iter()
            .map(|v| Value::Bytes(Bytes::from(v.to_cql_bytes())))
            .collect(),
    )
}

pub fn int(n: i32) -> Option<CqlValue> {
    Some(CqlValue::Int(n))
}

pub fn text(s: &str) -> Option<CqlValue> {
    Some(CqlValue::Text(s.to_owned()))
}

/// A SELECT page by page with fetch size `page`: its rows and the pages it took.
pub fn paged(h: &mut Harness, cql: &str, page: i32) -> (Vec<Vec<Option<CqlValue>>>, usize) {
    let mut out = Vec::new();
    let mut state: Option<Bytes> = None;
    let mut pages = 0;
    loop {
        let mut params = QueryParameters::new(Consistency::One);
        params.page_size = Some(page);
        params.paging_state = state.clone();
        let ResultBody::Rows(rows) = h.query_with(cql, params).expect("page") else {
            panic!("{cql}: rows")
        };
        pages += 1;
        assert!(rows.rows.len() <= page as usize);
        out.extend(decode_rows(&rows));
        match rows.metadata.paging_state {
            Some(s) => state = Some(s),
            None => return (out, pages),
        }
        assert!(pages < 100_000);
    }
}
