//! Golden bytes shared with the DataStax Python driver 3.30.
//!
//! - `data/python_driver/*.bin`: request frames the driver encoded
//!   (`data/gen_python_driver_requests.py`); each must decode to what the driver meant.
//! - `data/mosaic_responses/*.bin`: responses we encode, pinned byte for byte here and
//!   decoded by the driver's own `decode_message` in `data/check_responses_with_python_driver.py`
//!   (a dev tool; CI stays pure Rust). After an intended change, regenerate them with
//!   `MOSAIC_BLESS_GOLDEN=1 cargo test -p mosaic-cql --test frame_python_driver_golden`
//!   and rerun the Python check.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use std::path::PathBuf;

use bytes::{Bytes, BytesMut};
use mosaic_cql::frame::*;
use mosaic_types::{CqlType, CqlValue};

fn data(dir: &str, name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(dir)
        .join(name)
}

fn request(name: &str) -> Result<RequestFrame, FrameError> {
    let bytes = std::fs::read(data("python_driver", &format!("{name}.bin"))).unwrap();
    let mut buf = BytesMut::from(&bytes[..]);
    let frame = decode_frame(&mut buf, FRAME_LEN_MAX_DEFAULT)?.expect("a whole frame");
    assert!(buf.is_empty(), "{name}: one frame per file");
    Ok(frame)
}

fn decoded(name: &str, compression: Option<Compression>) -> (RequestFrame, Request) {
    let frame = request(name).unwrap();
    let req = frame.decode(compression).unwrap();
    (frame, req)
}

fn b(bytes: &[u8]) -> Value {
    Value::Bytes(Bytes::copy_from_slice(bytes))
}

#[test]
fn driver_connect_sequence_decodes() {
    let (f, r) = decoded("options_v4", None);
    assert_eq!(
        (f.version, f.stream, r),
        (ProtocolVersion::V4, 0, Request::Options)
    );
    let (f, r) = decoded("startup_v4_lz4", None);
    assert_eq!(f.stream, 1);
    let Request::Startup(s) = r else {
        panic!("{r:?}")
    };
    assert_eq!(s.option("DRIVER_NAME"), Some("DataStax Python Driver"));
    let n = s.negotiate().unwrap();
    assert_eq!(
        (n.cql_version.as_str(), n.compression),
        ("3.4.5", Some(Compression::Lz4))
    );
    let (_, r) = decoded("register_v4", None);
    assert_eq!(
        r,
        Request::Register(Register {
            events: vec![
                EventType::TopologyChange,
                EventType::StatusChange,
                EventType::SchemaChange
            ]
        })
    );
    let (_, r) = decoded("auth_response_v4", None);
    assert_eq!(
        r,
        Request::AuthResponse(AuthResponse {
            token: Some(Bytes::from_static(b"\0cassandra\0cassandra"))
        })
    );
}

#[test]
fn driver_negotiation_attempts_get_the_fallback_error_or_v5() {
    let err = request("options_dse_v2").unwrap_err();
    assert_eq!(err, FrameError::UnsupportedVersion { version: 0x42 });
    assert!(err.to_string().contains("unsupported protocol version"));
    // v5, with or without the beta flag, is accepted as Cassandra 4.1 accepts it.
    for name in ["startup_v5", "startup_v5_beta"] {
        let (f, r) = decoded(name, None);
        assert_eq!(f.version, ProtocolVersion::V5, "{name}");
        let Request::Startup(s) = r else {
            panic!("{r:?}")
        };
        assert_eq!(s.negotiate().unwrap().compression, None);
    }
}

#[test]
fn driver_v5_messages_decode_with_keyspaces_and_metadata_ids() {
    let (f, r) = decoded("query_v5_keyspace", None);
    assert_eq!(f.version, ProtocolVersion::V5);
    let Request::Query(q) = r else { panic!() };
    assert_eq!(q.query, "SELECT v FROM t");
    assert_eq!(q.params.keyspace.as_deref(), Some("ks"));
    assert_eq!(q.params.page_size, Some(50));
    assert_eq!(q.params.now_in_seconds, None);
    let (_, r) = decoded("prepare_v5_keyspace", None);
    assert_eq!(
        r,
        Request::Prepare(Prepare {
            query: "SELECT v FROM t WHERE k = ?".into(),
            keyspace: Some("ks".into()),
        })
    );
    let (_, r) = decoded("execute_v5", None);
    let Request::Execute(e) = r else { panic!() };
    assert_eq!(e.id, Bytes::from_static(&[0x11; 16]));
    assert_eq!(e.result_metadata_id, Some(Bytes::from_static(&[0x55; 16])));
    // The driver keeps skip_meta but never sets the Skip_metadata flag (3.30 writes no 0x02).
    assert!(!e.params.skip_metadata);
    assert_eq!(e.params.values, BoundValues::Positional(vec![b(b"key")]));
    let (_, r) = decoded("batch_v5_keyspace", None);
    let Request::Batch(batch) = r else { panic!() };
    assert_eq!(batch.keyspace.as_deref(), Some("ks"));
    assert_eq!(batch.statements.len(), 1);
}

/// Every frame `FrameReader` takes out of a file of segments.
fn frames_in_segments(name: &str, compression: Option<Compression>) -> Vec<RequestFrame> {
    let bytes = std::fs::read(data("python_driver", &format!("{name}.bin"))).unwrap();
    let mut reader = FrameReader::new(FRAME_LEN_MAX_DEFAULT);
    reader.start_segments(compression);
    let mut buf = BytesMut::from(&bytes[..]);
    let mut frames = Vec::new();
    while let Some(frame) = reader.next_frame(&mut buf).unwrap() {
        frames.push(frame);
    }
    assert!(buf.is_empty(), "{name}: whole segments");
    frames
}

#[test]
fn driver_segments_carry_the_same_frames_plain_and_lz4() {
    let singles: Vec<RequestFrame> = ["query_v5_keyspace", "prepare_v5_keyspace", "execute_v5"]
        .iter()
        .map(|name| request(name).unwrap())
        .collect();
    for (name, compression) in [
        ("segments_v5", None),
        ("segments_v5_lz4", Some(Compression::Lz4)),
    ] {
        assert_eq!(frames_in_segments(name, compression), singles, "{name}");
    }
    // A frame larger than a segment spans a run of segments that are not self-contained.
    for (name, compression) in [
        ("segments_v5_large", None),
        ("segments_v5_large_lz4", Some(Compression::Lz4)),
    ] {
        let frames = frames_in_segments(name, compression);
        assert_eq!(frames.len(), 1, "{name}");
        let Request::Query(q) = frames[0].decode(None).unwrap() else {
            panic!()
        };
        assert_eq!(
            q.query.len(),
            "SELECT v FROM t WHERE k = ''".len() + 135_000
        );
    }
}

#[test]
fn driver_queries_decode() {
    let (_, r) = decoded("query_v4_plain", None);
    let Request::Query(q) = r else { panic!() };
    assert_eq!(q.query, "SELECT * FROM system.local WHERE key='local'");
    assert_eq!(q.params, QueryParameters::new(Consistency::One));

    for (name, version) in [
        ("query_v4_paged_traced", ProtocolVersion::V4),
        ("query_v3_paged", ProtocolVersion::V3),
    ] {
        let (f, r) = decoded(name, None);
        assert_eq!(f.version, version);
        assert!(f.flags.tracing());
        let Request::Query(q) = r else { panic!() };
        assert_eq!(q.query, "SELECT v FROM ks.t");
        assert_eq!(q.params.consistency, Consistency::LocalQuorum);
        assert_eq!(q.params.page_size, Some(5000));
        assert_eq!(
            q.params.paging_state,
            Some(Bytes::from_static(b"\x00\x04page"))
        );
        assert_eq!(q.params.serial_consistency, Some(Consistency::LocalSerial));
        assert_eq!(q.params.timestamp, Some(1_700_000_000_000_001));
        assert!(q.params.values.is_empty() && !q.params.skip_metadata);
    }

    let (f, r) = decoded("query_v4_custom_payload", None);
    assert!(f.flags.custom_payload());
    let Request::Query(q) = r else { panic!() };
    assert_eq!(
        (q.params.consistency, q.params.page_size),
        (Consistency::Quorum, Some(100))
    );

    let (f, r) = decoded("query_v4_lz4", Some(Compression::Lz4));
    assert!(f.flags.compressed());
    let Request::Query(q) = r else { panic!() };
    assert!(q
        .query
        .starts_with("SELECT v FROM ks.t WHERE k = 'a long enough key"));
    assert_eq!(f.decode(None), Err(BodyError::CompressedWithoutNegotiation));
}

#[test]
fn driver_prepare_execute_and_batch_decode() {
    let (_, r) = decoded("prepare_v4", None);
    assert_eq!(
        r,
        Request::Prepare(Prepare {
            query: "INSERT INTO ks.t (k, c, v) VALUES (?, ?, ?)".into(),
            keyspace: None,
        })
    );
    let (_, r) = decoded("execute_v4", None);
    let Request::Execute(e) = r else { panic!() };
    // The driver keeps `skip_meta=True` as an attribute but never writes flag 0x02: Python
    // clients always get full Rows metadata.
    assert_eq!(e.id, Bytes::from_static(&[0x11; 16]));
    assert_eq!(
        e.params,
        QueryParameters {
            consistency: Consistency::Two,
            values: BoundValues::Positional(vec![b(b"key"), Value::Null, Value::Unset]),
            skip_metadata: false,
            page_size: Some(10),
            paging_state: None,
            serial_consistency: None,
            timestamp: Some(42),
            keyspace: None,
            now_in_seconds: None,
        }
    );
    let (_, r) = decoded("batch_v4", None);
    assert_eq!(
        r,
        Request::Batch(Batch {
            batch_type: BatchType::Unlogged,
            statements: vec![
                BatchStatement {
                    query: BatchQuery::Query("INSERT INTO ks.t (k, v) VALUES ('a', 1)".into()),
                    values: BoundValues::Positional(vec![]),
                },
                BatchStatement {
                    query: BatchQuery::Prepared(Bytes::from_static(&[0x22; 16])),
                    values: BoundValues::Positional(vec![b(b"b"), b(&[0, 0, 0, 2])]),
                },
                BatchStatement {
                    query: BatchQuery::Query("UPDATE ks.t SET v = ? WHERE k = ?".into()),
                    values: BoundValues::Positional(vec![Value::Null, b(b"c")]),
                },
            ],
            consistency: Consistency::LocalOne,
            serial_consistency: Some(Consistency::Serial),
            timestamp: Some(7),
            keyspace: None,
            now_in_seconds: None,
        })
    );
}

// ---------------------------------------------------------------------------------------
// Responses the Python driver decodes (see data/check_responses_with_python_driver.py).

fn v4() -> ResponseEncoder {
    ResponseEncoder::new(ProtocolVersion::V4, None)
}

fn encoded(response: &Response) -> BytesMut {
    let mut out = BytesMut::new();
    v4().encode(&mut out, 1, response).unwrap();
    out
}

fn error(kind: ErrorKind, message: &str) -> Response {
    Response::Error(ErrorResponse::new(kind, message))
}

fn schema(change: SchemaChangeType, target: SchemaChangeTarget) -> SchemaChange {
    SchemaChange { change, target }
}

fn table(name: &str) -> SchemaChangeTarget {
    SchemaChangeTarget::Table {
        keyspace: "ks".into(),
        table: name.into(),
    }
}

fn responses() -> Vec<(&'static str, BytesMut)> {
    let mut out = vec![
        ("ready", encoded(&Response::Ready)),
        (
            "supported",
            encoded(&Response::Supported(Supported::default())),
        ),
        (
            "authenticate",
            encoded(&Response::Authenticate {
                authenticator: "org.apache.cassandra.auth.PasswordAuthenticator".into(),
            }),
        ),
        (
            "auth_success",
            encoded(&Response::AuthSuccess { token: None }),
        ),
        (
            "error_unavailable",
            encoded(&error(
                ErrorKind::Unavailable {
                    consistency: Consistency::Quorum,
                    required: 2,
                    alive: 1,
                },
                "Cannot achieve consistency level QUORUM",
            )),
        ),
        (
            "error_write_timeout",
            encoded(&error(
                ErrorKind::WriteTimeout {
                    consistency: Consistency::LocalQuorum,
                    received: 1,
                    block_for: 2,
                    write_type: WriteType::Simple,
                },
                "Operation timed out - received only 1 responses.",
            )),
        ),
        (
            "error_read_timeout",
            encoded(&error(
                ErrorKind::ReadTimeout {
                    consistency: Consistency::One,
                    received: 0,
                    block_for: 1,
                    data_present: false,
                },
                "Operation timed out - received only 0 responses.",
            )),
        ),
        (
            "error_read_failure",
            encoded(&error(
                ErrorKind::ReadFailure {
                    consistency: Consistency::All,
                    received: 1,
                    block_for: 3,
                    num_failures: 2,
                    data_present: true,
                    reasons: Vec::new(),
                },
                "Operation failed - received 1 responses and 2 failures",
            )),
        ),
        (
            "error_function_failure",
            encoded(&error(
                ErrorKind::FunctionFailure {
                    keyspace: "ks".into(),
                    function: "f".into(),
                    arg_types: vec!["int".into(), "text".into()],
                },
                "execution of 'ks.f[int, text]' failed",
            )),
        ),
        (
            "error_write_failure",
            encoded(&error(
                ErrorKind::WriteFailure {
                    consistency: Consistency::Two,
                    received: 1,
                    block_for: 2,
                    num_failures: 1,
                    write_type: WriteType::Batch,
                    reasons: Vec::new(),
                },
                "Operation failed - received 1 responses and 1 failures",
            )),
        ),
        (
            "error_invalid",
            encoded(&error(ErrorKind::Invalid, "unconfigured table nope")),
        ),
        (
            "error_syntax",
            encoded(&error(ErrorKind::Syntax, "line 1:0 no viable alternative")),
        ),
        (
            "error_overloaded",
            encoded(&error(ErrorKind::Overloaded, "overloaded")),
        ),
        (
            "error_already_exists",
            encoded(&error(
                ErrorKind::AlreadyExists {
                    keyspace: "ks".into(),
                    table: "t".into(),
                },
                "Cannot add already existing table \"t\" to keyspace \"ks\"",
            )),
        ),
        (
            "error_unprepared",
            encoded(&error(
                ErrorKind::Unprepared {
                    id: Bytes::from_static(&[0xAB; 16]),
                },
                "Prepared query with ID abab... not found",
            )),
        ),
        ("result_void", encoded(&Response::Result(ResultBody::Void))),
        (
            "result_set_keyspace",
            encoded(&Response::Result(ResultBody::SetKeyspace("ks".into()))),
        ),
        (
            "result_schema_change_table",
            encoded(&Response::Result(ResultBody::SchemaChange(schema(
                SchemaChangeType::Created,
                table("t"),
            )))),
        ),
        (
            "result_schema_change_function",
            encoded(&Response::Result(ResultBody::SchemaChange(schema(
                SchemaChangeType::Dropped,
                SchemaChangeTarget::Function {
                    keyspace: "ks".into(),
                    name: "f".into(),
                    arg_types: vec!["int".into()],
                },
            )))),
        ),
        (
            "result_prepared",
            encoded(&Response::Result(ResultBody::Prepared(Prepared {
                id: Bytes::from_static(&[0x33; 16]),
                metadata: PreparedMetadata {
                    pk_indexes: vec![0],
                    columns: vec![
                        ColumnSpec::new("ks", "t", "k", CqlType::Text),
                        ColumnSpec::new("ks", "t", "v", CqlType::BigInt),
                    ],
                },
                result_metadata: RowsMetadata::empty(),
                result_metadata_id: Bytes::new(),
            }))),
        ),
    ];

    let mut unsupported = BytesMut::new();
    FrameError::UnsupportedVersion { version: 6 }.encode_response(&mut unsupported);
    out.push(("error_unsupported_version", unsupported));

    // Rows of every native type, a null, collections and a paging state; streamed.
    let columns = vec![
        ColumnSpec::new("ks", "t", "k", CqlType::Text),
        ColumnSpec::new("ks", "t", "i", CqlType::Int),
        ColumnSpec::new("ks", "t", "big", CqlType::BigInt),
        ColumnSpec::new("ks", "t", "flag", CqlType::Boolean),
        ColumnSpec::new("ks", "t", "d", CqlType::Double),
        ColumnSpec::new("ks", "t", "blob", CqlType::Blob),
        ColumnSpec::new("ks", "t", "id", CqlType::Uuid),
        ColumnSpec::new(
            "ks",
            "t",
            "ints",
            ColumnType::List(Box::new(CqlType::Int.into())),
        ),
        ColumnSpec::new(
            "ks",
            "t",
            "m",
            ColumnType::Map(
                Box::new(CqlType::Text.into()),
                Box::new(CqlType::Int.into()),
            ),
        ),
        ColumnSpec::new("ks", "t", "missing", CqlType::Text),
    ];
    let metadata = RowsMetadata {
        columns,
        paging_state: Some(Bytes::from_static(b"\x00\x01next")),
        no_metadata: false,
        new_metadata_id: None,
    };
    for (name, compression) in [
        ("result_rows", None),
        ("result_rows_lz4", Some(Compression::Lz4)),
    ] {
        let mut buf = BytesMut::new();
        let enc = ResponseEncoder::new(ProtocolVersion::V4, compression);
        let mut w = enc
            .rows(&mut buf, 1, &ResponseExtras::default(), &metadata)
            .unwrap();
        for row in 0..3i32 {
            w.value(Some(&CqlValue::Text(format!("key{row}"))));
            w.value(Some(&CqlValue::Int(row - 1)));
            w.value(Some(&CqlValue::BigInt(i64::from(row) << 40)));
            w.value(Some(&CqlValue::Boolean(row % 2 == 0)));
            w.value(Some(&CqlValue::Double(f64::from(row) + 0.5)));
            w.value(Some(&CqlValue::Blob(vec![row as u8; 3])));
            w.value(Some(&CqlValue::Uuid([row as u8; 16])));
            // list<int> [row, row + 1]: [int] count, then [bytes] elements.
            w.cell(Some(&[
                0,
                0,
                0,
                2,
                0,
                0,
                0,
                4,
                0,
                0,
                0,
                row as u8,
                0,
                0,
                0,
                4,
                0,
                0,
                0,
                row as u8 + 1,
            ]));
            // map<text, int> {'a': row}
            w.cell(Some(&[
                0, 0, 0, 1, 0, 0, 0, 1, b'a', 0, 0, 0, 4, 0, 0, 0, row as u8,
            ]));
            w.cell(None);
        }
        w.finish().unwrap();
        out.push((name, buf));
    }

    let mut warned = BytesMut::new();
    v4().encode_with(
        &mut warned,
        1,
        &ResponseExtras {
            tracing_id: Some([0x44; 16]),
            warnings: vec!["Aggregation query used without partition key".into()],
        },
        &Response::Result(ResultBody::Void),
    )
    .unwrap();
    out.push(("result_void_traced_warned", warned));

    let events = [
        (
            "event_status_up",
            Event::StatusChange {
                change: StatusChangeType::Up,
                node: "127.0.0.2:9042".parse().unwrap(),
            },
        ),
        (
            "event_topology_new_node_v6",
            Event::TopologyChange {
                change: TopologyChangeType::NewNode,
                node: "[2001:db8::1]:9042".parse().unwrap(),
            },
        ),
        (
            "event_schema_table",
            Event::SchemaChange(schema(SchemaChangeType::Updated, table("t"))),
        ),
    ];
    for (name, event) in events {
        let mut buf = BytesMut::new();
        v4().encode_event(&mut buf, &event).unwrap();
        out.push((name, buf));
    }
    out.extend(v5_responses());
    out
}

fn v5_encoded(response: &Response) -> BytesMut {
    let mut out = BytesMut::new();
    ResponseEncoder::new(ProtocolVersion::V5, Some(Compression::Lz4))
        .encode(&mut out, 1, response)
        .unwrap();
    out
}

/// v5 responses: the message changes, then whole frames in segments (the files named
/// `v5_segments*` hold segments; the others one frame).
fn v5_responses() -> Vec<(&'static str, BytesMut)> {
    let result_columns = vec![
        ColumnSpec::new("ks", "t", "k", CqlType::Text),
        ColumnSpec::new("ks", "t", "d", CqlType::Duration),
    ];
    let mut rows = Rows {
        metadata: RowsMetadata::new(result_columns.clone()),
        rows: vec![vec![
            Some(Bytes::from_static(b"key")),
            // 1 month, 2 days, 3 ns as zig-zag vints.
            Some(Bytes::from_static(&[2, 4, 6])),
        ]],
    };
    rows.metadata.new_metadata_id = Some(RowsMetadata::metadata_id(&result_columns));
    let mut out = vec![
        (
            "v5_result_prepared",
            v5_encoded(&Response::Result(ResultBody::Prepared(Prepared {
                id: Bytes::from_static(&[0x33; 16]),
                result_metadata_id: RowsMetadata::metadata_id(&result_columns),
                metadata: PreparedMetadata {
                    pk_indexes: vec![0],
                    columns: vec![ColumnSpec::new("ks", "t", "k", CqlType::Text)],
                },
                result_metadata: RowsMetadata::new(result_columns.clone()),
            }))),
        ),
        (
            "v5_result_rows_metadata_changed",
            v5_encoded(&Response::Result(ResultBody::Rows(rows))),
        ),
        (
            "v5_error_read_failure",
            v5_encoded(&error(
                ErrorKind::ReadFailure {
                    consistency: Consistency::All,
                    received: 1,
                    block_for: 3,
                    num_failures: 2,
                    reasons: vec![
                        ("127.0.0.2".parse().unwrap(), failure_reason::UNKNOWN),
                        (
                            "::1".parse().unwrap(),
                            failure_reason::READ_TOO_MANY_TOMBSTONES,
                        ),
                    ],
                    data_present: true,
                },
                "Operation failed - received 1 responses and 2 failures",
            )),
        ),
        (
            "v5_error_write_failure",
            v5_encoded(&error(
                ErrorKind::WriteFailure {
                    consistency: Consistency::Two,
                    received: 1,
                    block_for: 2,
                    num_failures: 1,
                    reasons: Vec::new(),
                    write_type: WriteType::Batch,
                },
                "Operation failed - received 1 responses and 1 failures",
            )),
        ),
        (
            "v5_error_write_timeout_cas",
            v5_encoded(&error(
                ErrorKind::WriteTimeout {
                    consistency: Consistency::Serial,
                    received: 0,
                    block_for: 1,
                    write_type: WriteType::Cas,
                },
                "CAS operation timed out",
            )),
        ),
    ];
    // Segments as a v5 connection sends them: three frames in one self-contained segment,
    // which LZ4 shrinks (the Rows repeat themselves).
    let repeated = Rows {
        metadata: RowsMetadata::new(vec![ColumnSpec::new("ks", "t", "k", CqlType::Text)]),
        rows: (0..20)
            .map(|_| vec![Some(Bytes::from_static(b"a value that repeats itself"))])
            .collect(),
    };
    for (name, compression) in [
        ("v5_segments", None),
        ("v5_segments_lz4", Some(Compression::Lz4)),
    ] {
        let mut writer = SegmentWriter::new(compression);
        let mut wire = BytesMut::new();
        let schema_event = Event::SchemaChange(schema(SchemaChangeType::Created, table("t")));
        let mut frame = BytesMut::new();
        ResponseEncoder::new(ProtocolVersion::V5, compression)
            .encode(&mut frame, 7, &Response::Result(ResultBody::Void))
            .unwrap();
        ResponseEncoder::new(ProtocolVersion::V5, compression)
            .encode_event(&mut frame, &schema_event)
            .unwrap();
        ResponseEncoder::new(ProtocolVersion::V5, compression)
            .encode(
                &mut frame,
                8,
                &Response::Result(ResultBody::Rows(repeated.clone())),
            )
            .unwrap();
        writer.push_frame(&mut wire, &frame);
        writer.seal(&mut wire);
        out.push((name, wire));
    }
    out
}

#[test]
fn responses_match_the_bytes_the_python_driver_decoded() {
    let bless = std::env::var_os("MOSAIC_BLESS_GOLDEN").is_some();
    let mut stale = Vec::new();
    for (name, bytes) in responses() {
        let path = data("mosaic_responses", &format!("{name}.bin"));
        if bless {
            std::fs::write(&path, &bytes).unwrap();
        } else if std::fs::read(&path).ok().as_deref() != Some(&bytes[..]) {
            stale.push(name);
        }
    }
    assert!(
        stale.is_empty(),
        "responses differ from the golden files: {stale:?}"
    );
}
