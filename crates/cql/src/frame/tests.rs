//! Unit tests of frames, request bodies and responses, named for the scenario they check.

use bytes::{BufMut, Bytes, BytesMut};
use mosaic_types::{CqlType, CqlValue};
use proptest::prelude::*;

use super::test_decode::{decode_response, Decoded};
use super::wire::{put_long_string, put_string};
use super::*;

// ---------------------------------------------------------------------------------------
// A test-only request encoder: the inverse of request.rs, written from the spec.

fn put_value(out: &mut BytesMut, v: &Value) {
    match v {
        Value::Null => out.put_i32(-1),
        Value::Unset => out.put_i32(-2),
        Value::Bytes(b) => {
            out.put_i32(b.len() as i32);
            out.extend_from_slice(b);
        }
    }
}

fn put_values(out: &mut BytesMut, values: &BoundValues) {
    out.put_u16(values.len() as u16);
    match values {
        BoundValues::Positional(vs) => vs.iter().for_each(|v| put_value(out, v)),
        BoundValues::Named(vs) => {
            for (n, v) in vs {
                put_string(out, n).unwrap();
                put_value(out, v);
            }
        }
    }
}

fn put_params(out: &mut BytesMut, p: &QueryParameters, version: ProtocolVersion) {
    out.put_u16(p.consistency.code());
    let mut flags = 0u32;
    if !p.values.is_empty() {
        flags |= 0x01;
    }
    if matches!(p.values, BoundValues::Named(_)) && !p.values.is_empty() {
        flags |= 0x40;
    }
    if p.skip_metadata {
        flags |= 0x02;
    }
    if p.page_size.is_some() {
        flags |= 0x04;
    }
    if p.paging_state.is_some() {
        flags |= 0x08;
    }
    if p.serial_consistency.is_some() {
        flags |= 0x10;
    }
    if p.timestamp.is_some() {
        flags |= 0x20;
    }
    let v5 = version >= ProtocolVersion::V5;
    if v5 && p.keyspace.is_some() {
        flags |= 0x80;
    }
    if v5 && p.now_in_seconds.is_some() {
        flags |= 0x100;
    }
    if v5 {
        out.put_u32(flags);
    } else {
        out.put_u8(flags as u8);
    }
    if flags & 0x01 != 0 {
        put_values(out, &p.values);
    }
    if let Some(n) = p.page_size {
        out.put_i32(n);
    }
    if let Some(s) = &p.paging_state {
        out.put_i32(s.len() as i32);
        out.extend_from_slice(s);
    }
    if let Some(c) = p.serial_consistency {
        out.put_u16(c.code());
    }
    if let Some(t) = p.timestamp {
        out.put_i64(t);
    }
    if let Some(k) = p.keyspace.as_ref().filter(|_| v5) {
        put_string(out, k).unwrap();
    }
    if let Some(n) = p.now_in_seconds.filter(|_| v5) {
        out.put_i32(n);
    }
}

fn encode_body(request: &Request) -> (Opcode, Bytes) {
    encode_body_v(request, ProtocolVersion::V4)
}

fn encode_body_v(request: &Request, version: ProtocolVersion) -> (Opcode, Bytes) {
    let v5 = version >= ProtocolVersion::V5;
    let mut out = BytesMut::new();
    let op = match request {
        Request::Startup(s) => {
            out.put_u16(s.options.len() as u16);
            for (k, v) in &s.options {
                put_string(&mut out, k).unwrap();
                put_string(&mut out, v).unwrap();
            }
            Opcode::Startup
        }
        Request::AuthResponse(a) => {
            match &a.token {
                Some(t) => {
                    out.put_i32(t.len() as i32);
                    out.extend_from_slice(t);
                }
                None => out.put_i32(-1),
            }
            Opcode::AuthResponse
        }
        Request::Options => Opcode::Options,
        Request::Query(q) => {
            put_long_string(&mut out, &q.query).unwrap();
            put_params(&mut out, &q.params, version);
            Opcode::Query
        }
        Request::Prepare(p) => {
            put_long_string(&mut out, &p.query).unwrap();
            if v5 {
                out.put_u32(u32::from(p.keyspace.is_some()));
                if let Some(k) = &p.keyspace {
                    put_string(&mut out, k).unwrap();
                }
            }
            Opcode::Prepare
        }
        Request::Execute(e) => {
            out.put_u16(e.id.len() as u16);
            out.extend_from_slice(&e.id);
            if v5 {
                let id = e.result_metadata_id.clone().unwrap_or_default();
                out.put_u16(id.len() as u16);
                out.extend_from_slice(&id);
            }
            put_params(&mut out, &e.params, version);
            Opcode::Execute
        }
        Request::Batch(b) => {
            out.put_u8(match b.batch_type {
                BatchType::Logged => 0,
                BatchType::Unlogged => 1,
                BatchType::Counter => 2,
            });
            out.put_u16(b.statements.len() as u16);
            let named = b
                .statements
                .iter()
                .any(|s| matches!(s.values, BoundValues::Named(_)));
            for s in &b.statements {
                match &s.query {
                    BatchQuery::Query(q) => {
                        out.put_u8(0);
                        put_long_string(&mut out, q).unwrap();
                    }
                    BatchQuery::Prepared(id) => {
                        out.put_u8(1);
                        out.put_u16(id.len() as u16);
                        out.extend_from_slice(id);
                    }
                }
                put_values(&mut out, &s.values);
            }
            out.put_u16(b.consistency.code());
            let mut flags = 0;
            if b.serial_consistency.is_some() {
                flags |= 0x10;
            }
            if b.timestamp.is_some() {
                flags |= 0x20;
            }
            if named {
                flags |= 0x40;
            }
            if v5 && b.keyspace.is_some() {
                flags |= 0x80;
            }
            if v5 && b.now_in_seconds.is_some() {
                flags |= 0x100;
            }
            if v5 {
                out.put_u32(flags);
            } else {
                out.put_u8(flags as u8);
            }
            if let Some(c) = b.serial_consistency {
                out.put_u16(c.code());
            }
            if let Some(t) = b.timestamp {
                out.put_i64(t);
            }
            if let Some(k) = b.keyspace.as_ref().filter(|_| v5) {
                put_string(&mut out, k).unwrap();
            }
            if let Some(n) = b.now_in_seconds.filter(|_| v5) {
                out.put_i32(n);
            }
            Opcode::Batch
        }
        Request::Register(r) => {
            out.put_u16(r.events.len() as u16);
            for e in &r.events {
                put_string(&mut out, e.name()).unwrap();
            }
            Opcode::Register
        }
    };
    (op, out.freeze())
}

fn frame(version: ProtocolVersion, flags: u8, stream: i16, op: Opcode, body: &[u8]) -> BytesMut {
    let mut out = BytesMut::new();
    encode_request_frame(&mut out, version, FrameFlags(flags), stream, op, body).unwrap();
    out
}

fn decode_one(buf: &[u8]) -> RequestFrame {
    let mut b = BytesMut::from(buf);
    let f = decode_frame(&mut b, FRAME_LEN_MAX_DEFAULT)
        .unwrap()
        .expect("a whole frame");
    assert!(b.is_empty());
    f
}

fn body_of(version: ProtocolVersion, op: Opcode, body: &[u8]) -> Result<Request, BodyError> {
    decode_one(&frame(version, 0, 1, op, body)).decode(None)
}

fn v(bytes: &[u8]) -> Value {
    Value::Bytes(Bytes::copy_from_slice(bytes))
}

// ---------------------------------------------------------------------------------------
// Frames.

#[test]
fn frame_fed_one_byte_at_a_time_decodes_once_complete() {
    let (op, body) = encode_body(&Request::Prepare(Prepare {
        query: "SELECT * FROM t".into(),
        keyspace: None,
    }));
    let wire = frame(ProtocolVersion::V4, 0x02, 7, op, &body);
    let mut buf = BytesMut::new();
    for (i, byte) in wire.iter().enumerate() {
        buf.put_u8(*byte);
        let got = decode_frame(&mut buf, FRAME_LEN_MAX_DEFAULT).unwrap();
        if i + 1 < wire.len() {
            assert!(
                got.is_none(),
                "frame returned after {} of {} bytes",
                i + 1,
                wire.len()
            );
            assert_eq!(buf.len(), i + 1, "a partial frame must not be consumed");
        } else {
            let f = got.expect("whole frame");
            assert_eq!(
                (f.version, f.stream, f.opcode),
                (ProtocolVersion::V4, 7, Opcode::Prepare)
            );
            assert!(f.flags.tracing());
            assert_eq!(f.body, body);
        }
    }
    assert!(buf.is_empty());
}

#[test]
fn two_frames_in_one_buffer_decode_in_order_and_leave_the_third_partial() {
    let mut buf = frame(ProtocolVersion::V4, 0, 1, Opcode::Options, &[]);
    buf.extend_from_slice(&frame(ProtocolVersion::V4, 0, 2, Opcode::Options, &[]));
    buf.extend_from_slice(&frame(ProtocolVersion::V4, 0, 3, Opcode::Options, &[])[..5]);
    assert_eq!(
        decode_frame(&mut buf, FRAME_LEN_MAX_DEFAULT)
            .unwrap()
            .unwrap()
            .stream,
        1
    );
    assert_eq!(
        decode_frame(&mut buf, FRAME_LEN_MAX_DEFAULT)
            .unwrap()
            .unwrap()
            .stream,
        2
    );
    assert_eq!(decode_frame(&mut buf, FRAME_LEN_MAX_DEFAULT).unwrap(), None);
    assert_eq!(buf.len(), 5);
}

#[test]
fn frame_longer_than_the_limit_is_refused_from_its_header() {
    let mut buf = BytesMut::from(&[0x04, 0, 0, 9, 0x07, 0x10, 0, 0, 0][..]);
    let err = decode_frame(&mut buf, FRAME_LEN_MAX_DEFAULT).unwrap_err();
    assert_eq!(
        err,
        FrameError::FrameTooLarge {
            version: ProtocolVersion::V4,
            stream: 9,
            length: 0x1000_0000 + 9,
            max: FRAME_LEN_MAX_DEFAULT
        }
    );
    assert_eq!(
        err.to_string(),
        "Request is too big: length 268435465 exceeds maximum allowed length 16777216."
    );
    // A configurable limit: exactly at the limit passes, one byte over fails.
    let wire = frame(
        ProtocolVersion::V4,
        0,
        1,
        Opcode::Prepare,
        &[0, 0, 0, 1, b'x'],
    );
    let mut ok = wire.clone();
    assert!(decode_frame(&mut ok, wire.len() as u32).unwrap().is_some());
    let mut over = wire.clone();
    assert!(matches!(
        decode_frame(&mut over, wire.len() as u32 - 1),
        Err(FrameError::FrameTooLarge { .. })
    ));
    let mut out = BytesMut::new();
    err.encode_response(&mut out);
    let d = decode_response(&mut out.freeze(), None).unwrap();
    assert_eq!((d.version_byte, d.stream), (0x84, 9));
    assert_eq!(
        d.response,
        Response::Error(ErrorResponse::new(ErrorKind::Protocol, err.to_string()))
    );
}

#[test]
fn announced_body_length_does_not_reserve_unbounded_memory() {
    // A body just under the limit is announced by a 9-byte header.
    let mut buf = BytesMut::from(&[0x04, 0, 0, 1, 0x07, 0x00, 0xFF, 0xFF, 0xF0][..]);
    assert_eq!(decode_frame(&mut buf, FRAME_LEN_MAX_DEFAULT), Ok(None));
    assert!(
        buf.capacity() <= 2 << 20,
        "reserved {} bytes",
        buf.capacity()
    );
}

#[test]
fn unknown_and_response_opcodes_are_protocol_errors() {
    for op in [
        0x04u8, 0x11, 0xFF, 0x02, /* READY */
        0x08, /* RESULT */
    ] {
        let mut buf = BytesMut::from(&[0x04, 0, 0, 3, op, 0, 0, 0, 0][..]);
        assert_eq!(
            decode_frame(&mut buf, FRAME_LEN_MAX_DEFAULT),
            Err(FrameError::UnknownOpcode {
                version: ProtocolVersion::V4,
                stream: 3,
                opcode: op
            })
        );
    }
    let mut buf = BytesMut::from(&[0x84, 0, 0, 3, 0x07, 0, 0, 0, 0][..]);
    assert!(matches!(
        decode_frame(&mut buf, FRAME_LEN_MAX_DEFAULT),
        Err(FrameError::NotARequest { .. })
    ));
}

#[test]
fn v6_and_dse_startups_are_refused_with_the_message_drivers_fall_back_on() {
    // The Python driver 3.30 starts at DSE_V2 (0x42), then 0x41, then 5; the Node.js
    // driver at 0x42, then 4. Each refusal gets the same answer: an ERROR framed in v5 (as
    // Cassandra 4.1 frames it, in its current version) on stream 0.
    for version in [6u8, 7, 0x41, 0x42, 0x7f] {
        for flags in [0u8, FrameFlags::USE_BETA] {
            let (_, body) = encode_body(&Request::Startup(Startup {
                options: vec![("CQL_VERSION".into(), "3.0.0".into())],
            }));
            let mut wire = BytesMut::new();
            wire.put_u8(version);
            wire.put_u8(flags);
            wire.put_i16(0x0102);
            wire.put_u8(0x01);
            wire.put_u32(body.len() as u32);
            wire.extend_from_slice(&body);
            // Not before the header is in.
            assert_eq!(
                decode_frame(&mut BytesMut::from(&wire[..8]), FRAME_LEN_MAX_DEFAULT),
                Ok(None)
            );
            let err = decode_frame(&mut wire, FRAME_LEN_MAX_DEFAULT).unwrap_err();
            assert_eq!(err, FrameError::UnsupportedVersion { version });
            let mut out = BytesMut::new();
            err.encode_response(&mut out);
            let message = format!(
                "Invalid or unsupported protocol version ({version}); supported versions are (3/v3, 4/v4, 5/v5)"
            );
            assert!(
                message.contains("unsupported protocol version"),
                "the Python driver's test"
            );
            let mut golden = BytesMut::new();
            // On stream 0 whatever the request's stream, as Cassandra answers.
            golden.extend_from_slice(&[0x85, 0x00, 0x00, 0x00, 0x00]);
            golden.put_u32(4 + 2 + message.len() as u32);
            golden.put_i32(0x000A);
            golden.put_u16(message.len() as u16);
            golden.extend_from_slice(message.as_bytes());
            assert_eq!(out, golden, "version {version}");
        }
    }
}

#[test]
fn v2_request_is_refused_in_v2_framing() {
    // v1/v2 headers are 8 bytes with a one-byte stream; Cassandra answers in that version.
    let wire = [0x02, 0x00, 0x05, 0x05, 0, 0, 0, 0];
    assert_eq!(
        decode_frame(&mut BytesMut::from(&wire[..7]), FRAME_LEN_MAX_DEFAULT),
        Ok(None)
    );
    let err = decode_frame(&mut BytesMut::from(&wire[..]), FRAME_LEN_MAX_DEFAULT).unwrap_err();
    assert_eq!(err, FrameError::UnsupportedVersion { version: 2 });
    let mut out = BytesMut::new();
    err.encode_response(&mut out);
    assert_eq!(&out[..4], &[0x82, 0x00, 0x00, 0x00]);
    assert_eq!(
        u32::from_be_bytes(out[4..8].try_into().unwrap()) as usize,
        out.len() - 8
    );
    assert_eq!(&out[8..12], &[0, 0, 0, 0x0A]);
}

#[test]
fn v3_frames_are_accepted() {
    let f = decode_one(&frame(ProtocolVersion::V3, 0, 4, Opcode::Options, &[]));
    assert_eq!(f.version, ProtocolVersion::V3);
    assert_eq!(f.decode(None), Ok(Request::Options));
}

// ---------------------------------------------------------------------------------------
// Request bodies, from hand-built bytes.

#[test]
fn startup_options_decode_and_negotiate_lz4() {
    let mut body = BytesMut::new();
    body.put_u16(3);
    for (k, val) in [
        ("CQL_VERSION", "3.0.0"),
        ("DRIVER_NAME", "x"),
        ("COMPRESSION", "LZ4"),
    ] {
        put_string(&mut body, k).unwrap();
        put_string(&mut body, val).unwrap();
    }
    let Request::Startup(s) = body_of(ProtocolVersion::V4, Opcode::Startup, &body).unwrap() else {
        panic!()
    };
    assert_eq!(s.option("DRIVER_NAME"), Some("x"));
    let n = s.negotiate().unwrap();
    assert_eq!(
        (n.cql_version.as_str(), n.compression, n.throw_on_overload),
        ("3.0.0", Some(Compression::Lz4), false)
    );
}

#[test]
fn throw_on_overload_is_on_only_when_it_is_1_as_cassandra_reads_it() {
    let with = |value: &str| Startup {
        options: vec![
            ("CQL_VERSION".to_owned(), "3.0.0".to_owned()),
            ("THROW_ON_OVERLOAD".to_owned(), value.to_owned()),
        ],
    };
    assert!(with("1").negotiate().unwrap().throw_on_overload);
    for value in ["0", "", "true"] {
        assert!(
            !with(value).negotiate().unwrap().throw_on_overload,
            "{value:?}"
        );
    }
}

#[test]
fn startup_negotiation_refuses_what_cassandra_refuses() {
    let s = |opts: &[(&str, &str)]| Startup {
        options: opts
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect(),
    };
    assert_eq!(s(&[]).negotiate(), Err(BodyError::MissingCqlVersion));
    assert_eq!(
        s(&[("CQL_VERSION", "3.0.0"), ("COMPRESSION", "snappy")]).negotiate(),
        Err(BodyError::SnappyUnsupported)
    );
    assert_eq!(
        s(&[("CQL_VERSION", "3.0.0"), ("COMPRESSION", "zstd")]).negotiate(),
        Err(BodyError::UnknownCompression {
            name: "zstd".into()
        })
    );
    assert_eq!(
        s(&[("CQL_VERSION", "3.4.5")])
            .negotiate()
            .unwrap()
            .compression,
        None
    );
}

#[test]
fn auth_response_token_and_null_token() {
    let body = [0, 0, 0, 3, 0, b'u', 0];
    assert_eq!(
        body_of(ProtocolVersion::V4, Opcode::AuthResponse, &body),
        Ok(Request::AuthResponse(AuthResponse {
            token: Some(Bytes::from_static(&[0, b'u', 0]))
        }))
    );
    assert_eq!(
        body_of(ProtocolVersion::V4, Opcode::AuthResponse, &[0xFF; 4]),
        Ok(Request::AuthResponse(AuthResponse { token: None }))
    );
}

#[test]
fn query_with_every_flag_decodes_each_field() {
    let mut body = BytesMut::new();
    body.put_i32(8);
    body.extend_from_slice(b"SELECT 1");
    body.put_u16(0x0006); // LOCAL_QUORUM
    body.put_u8(0x01 | 0x02 | 0x04 | 0x08 | 0x10 | 0x20);
    body.put_u16(3);
    body.put_i32(2);
    body.extend_from_slice(&[0xAB, 0xCD]);
    body.put_i32(-1);
    body.put_i32(-2);
    body.put_i32(5000);
    body.put_i32(3);
    body.extend_from_slice(b"pgs");
    body.put_u16(0x0009); // LOCAL_SERIAL
    body.put_i64(1_700_000_000_000_000);
    let Request::Query(q) = body_of(ProtocolVersion::V4, Opcode::Query, &body).unwrap() else {
        panic!()
    };
    assert_eq!(q.query, "SELECT 1");
    assert_eq!(
        q.params,
        QueryParameters {
            consistency: Consistency::LocalQuorum,
            values: BoundValues::Positional(vec![v(&[0xAB, 0xCD]), Value::Null, Value::Unset]),
            skip_metadata: true,
            page_size: Some(5000),
            paging_state: Some(Bytes::from_static(b"pgs")),
            serial_consistency: Some(Consistency::LocalSerial),
            timestamp: Some(1_700_000_000_000_000),
            keyspace: None,
            now_in_seconds: None,
        }
    );
}

#[test]
fn query_with_names_for_values_keeps_the_names() {
    let mut body = BytesMut::new();
    put_long_string(&mut body, "INSERT INTO t (k, v) VALUES (:k, :v)").unwrap();
    body.put_u16(0x0001);
    body.put_u8(0x01 | 0x40);
    body.put_u16(2);
    put_string(&mut body, "v").unwrap();
    body.put_i32(1);
    body.put_u8(9);
    put_string(&mut body, "k").unwrap();
    body.put_i32(-2);
    let Request::Query(q) = body_of(ProtocolVersion::V4, Opcode::Query, &body).unwrap() else {
        panic!()
    };
    assert_eq!(
        q.params.values,
        BoundValues::Named(vec![("v".into(), v(&[9])), ("k".into(), Value::Unset)])
    );
}

#[test]
fn names_flag_without_values_flag_is_ignored() {
    let mut body = BytesMut::new();
    put_long_string(&mut body, "SELECT 1").unwrap();
    body.put_u16(0x0001);
    body.put_u8(0x40);
    let Request::Query(q) = body_of(ProtocolVersion::V4, Opcode::Query, &body).unwrap() else {
        panic!()
    };
    assert!(q.params.values.is_empty());
}

#[test]
fn value_lengths_below_minus_two_are_refused_in_v4_and_null_in_v3() {
    let mut body = BytesMut::new();
    put_long_string(&mut body, "q").unwrap();
    body.put_u16(0x0001);
    body.put_u8(0x01);
    body.put_u16(2);
    body.put_i32(-2);
    body.put_i32(-7);
    assert_eq!(
        body_of(ProtocolVersion::V4, Opcode::Query, &body),
        Err(BodyError::InvalidValueLength { length: -7 })
    );
    let Request::Query(q) = body_of(ProtocolVersion::V3, Opcode::Query, &body).unwrap() else {
        panic!()
    };
    assert_eq!(
        q.params.values,
        BoundValues::Positional(vec![Value::Null, Value::Null])
    );
}

#[test]
fn unknown_consistency_and_reserved_timestamp_are_refused() {
    let mut body = BytesMut::new();
    put_long_string(&mut body, "q").unwrap();
    body.put_u16(0x000B);
    body.put_u8(0);
    assert_eq!(
        body_of(ProtocolVersion::V4, Opcode::Query, &body),
        Err(BodyError::UnknownConsistency { code: 0x000B })
    );
    let mut body = BytesMut::new();
    put_long_string(&mut body, "q").unwrap();
    body.put_u16(0x0001);
    body.put_u8(0x20);
    body.put_i64(i64::MIN);
    assert_eq!(
        body_of(ProtocolVersion::V4, Opcode::Query, &body),
        Err(BodyError::InvalidTimestamp {
            timestamp: i64::MIN
        })
    );
}

#[test]
fn prepare_and_execute_with_paging_state() {
    let mut body = BytesMut::new();
    put_long_string(&mut body, "SELECT * FROM ks.t WHERE k = ?").unwrap();
    assert_eq!(
        body_of(ProtocolVersion::V4, Opcode::Prepare, &body),
        Ok(Request::Prepare(Prepare {
            query: "SELECT * FROM ks.t WHERE k = ?".into(),
            keyspace: None,
        }))
    );
    let mut body = BytesMut::new();
    body.put_u16(16);
    body.extend_from_slice(&[7; 16]);
    body.put_u16(0x0004);
    body.put_u8(0x01 | 0x02 | 0x04 | 0x08);
    body.put_u16(1);
    body.put_i32(4);
    body.put_i32(42);
    body.put_i32(100);
    body.put_i32(-1); // a null paging state is no paging state
    let Request::Execute(e) = body_of(ProtocolVersion::V4, Opcode::Execute, &body).unwrap() else {
        panic!()
    };
    assert_eq!(e.id, Bytes::from_static(&[7; 16]));
    assert!(e.params.skip_metadata);
    assert_eq!(
        (e.params.page_size, e.params.paging_state),
        (Some(100), None)
    );
    assert_eq!(
        e.params.values,
        BoundValues::Positional(vec![v(&42i32.to_be_bytes())])
    );
}

#[test]
fn batch_mixing_query_strings_and_prepared_ids() {
    let batch = Batch {
        batch_type: BatchType::Unlogged,
        statements: vec![
            BatchStatement {
                query: BatchQuery::Query("INSERT INTO t (k) VALUES (?)".into()),
                values: BoundValues::Positional(vec![v(b"a")]),
            },
            BatchStatement {
                query: BatchQuery::Prepared(Bytes::from_static(&[1, 2, 3])),
                values: BoundValues::Positional(vec![Value::Null, Value::Unset, v(b"")]),
            },
            BatchStatement {
                query: BatchQuery::Query("DELETE FROM t WHERE k = 1".into()),
                values: BoundValues::default(),
            },
        ],
        consistency: Consistency::Quorum,
        serial_consistency: Some(Consistency::Serial),
        timestamp: Some(12345),
        keyspace: None,
        now_in_seconds: None,
    };
    let (op, body) = encode_body(&Request::Batch(batch.clone()));
    // Spot-check the spec layout: type, count, first kind, first long-string length.
    assert_eq!(&body[..8], &[1, 0, 3, 0, 0, 0, 0, 28]);
    assert_eq!(
        body_of(ProtocolVersion::V4, op, &body),
        Ok(Request::Batch(batch))
    );
}

#[test]
fn batch_with_names_for_values_is_decoded_when_unambiguous() {
    let batch = Batch {
        batch_type: BatchType::Logged,
        statements: vec![
            BatchStatement {
                query: BatchQuery::Query("INSERT INTO t (k, v) VALUES (:k, :v)".into()),
                values: BoundValues::Named(vec![("k".into(), v(b"1")), ("v".into(), Value::Null)]),
            },
            BatchStatement {
                query: BatchQuery::Prepared(Bytes::from_static(&[9; 16])),
                values: BoundValues::Named(vec![("x".into(), v(&[0; 8]))]),
            },
        ],
        consistency: Consistency::One,
        serial_consistency: None,
        timestamp: None,
        keyspace: None,
        now_in_seconds: None,
    };
    let (op, body) = encode_body(&Request::Batch(batch.clone()));
    assert_eq!(
        body_of(ProtocolVersion::V4, op, &body),
        Ok(Request::Batch(batch))
    );
}

#[test]
fn batch_with_unknown_type_or_statement_kind_is_refused() {
    assert_eq!(
        body_of(ProtocolVersion::V4, Opcode::Batch, &[3, 0, 0, 0, 1, 0]),
        Err(BodyError::UnknownBatchType { code: 3 })
    );
    assert_eq!(
        body_of(ProtocolVersion::V4, Opcode::Batch, &[0, 0, 1, 2]),
        Err(BodyError::UnknownBatchStatementKind { kind: 2 })
    );
}

#[test]
fn register_event_types_and_unknown_type() {
    let (op, body) = encode_body(&Request::Register(Register {
        events: vec![
            EventType::TopologyChange,
            EventType::StatusChange,
            EventType::SchemaChange,
        ],
    }));
    let Request::Register(r) = body_of(ProtocolVersion::V4, op, &body).unwrap() else {
        panic!()
    };
    assert_eq!(r.events.len(), 3);
    let mut body = BytesMut::new();
    body.put_u16(1);
    put_string(&mut body, "NODE_EXPLODED").unwrap();
    assert_eq!(
        body_of(ProtocolVersion::V4, Opcode::Register, &body),
        Err(BodyError::UnknownEventType {
            name: "NODE_EXPLODED".into()
        })
    );
}

#[test]
fn custom_payload_is_skipped_in_v4() {
    let mut body = BytesMut::new();
    body.put_u16(1);
    put_string(&mut body, "key").unwrap();
    body.put_i32(2);
    body.extend_from_slice(b"vv");
    put_long_string(&mut body, "SELECT 1").unwrap();
    let f = decode_one(&frame(
        ProtocolVersion::V4,
        FrameFlags::CUSTOM_PAYLOAD,
        1,
        Opcode::Prepare,
        &body,
    ));
    assert_eq!(
        f.decode(None),
        Ok(Request::Prepare(Prepare {
            query: "SELECT 1".into(),
            keyspace: None,
        }))
    );
}

#[test]
fn every_truncation_of_every_body_is_a_typed_error() {
    let requests = [
        Request::Startup(Startup {
            options: vec![("CQL_VERSION".into(), "3.0.0".into())],
        }),
        Request::AuthResponse(AuthResponse {
            token: Some(Bytes::from_static(b"\0u\0p")),
        }),
        Request::Query(Query {
            query: "SELECT".into(),
            params: QueryParameters {
                consistency: Consistency::One,
                values: BoundValues::Named(vec![("a".into(), v(b"xy"))]),
                skip_metadata: false,
                page_size: Some(10),
                paging_state: Some(Bytes::from_static(b"p")),
                serial_consistency: Some(Consistency::Serial),
                timestamp: Some(1),
                keyspace: None,
                now_in_seconds: None,
            },
        }),
        Request::Prepare(Prepare {
            query: "SELECT".into(),
            keyspace: None,
        }),
        Request::Execute(Execute {
            id: Bytes::from_static(&[1; 16]),
            params: QueryParameters::new(Consistency::All),
            result_metadata_id: None,
        }),
        Request::Batch(Batch {
            batch_type: BatchType::Counter,
            statements: vec![BatchStatement {
                query: BatchQuery::Prepared(Bytes::from_static(&[2; 4])),
                values: BoundValues::Positional(vec![v(b"z")]),
            }],
            consistency: Consistency::One,
            serial_consistency: None,
            timestamp: Some(5),
            keyspace: None,
            now_in_seconds: None,
        }),
        Request::Register(Register {
            events: vec![EventType::SchemaChange],
        }),
    ];
    for request in requests {
        let (op, body) = encode_body(&request);
        assert_eq!(
            body_of(ProtocolVersion::V4, op, &body).as_ref(),
            Ok(&request)
        );
        for cut in 0..body.len() {
            let err = body_of(ProtocolVersion::V4, op, &body[..cut]).unwrap_err();
            assert!(
                matches!(err, BodyError::Truncated { .. }),
                "{op:?} cut at {cut}: {err:?}"
            );
            assert_eq!(err.to_error_response().code(), error_code::PROTOCOL);
        }
    }
}

#[test]
fn invalid_utf8_query_is_a_typed_error() {
    assert_eq!(
        body_of(
            ProtocolVersion::V4,
            Opcode::Prepare,
            &[0, 0, 0, 2, 0xC3, 0x28]
        ),
        Err(BodyError::InvalidUtf8 {
            what: "query string"
        })
    );
}

#[test]
fn claimed_counts_do_not_drive_allocation() {
    // 65,535 values announced, none present: a typed error, not a 65,535-slot allocation
    // (capacity is bounded by the remaining bytes; this mostly documents the guarantee).
    let mut body = BytesMut::new();
    put_long_string(&mut body, "q").unwrap();
    body.put_u16(1);
    body.put_u8(1);
    body.put_u16(u16::MAX);
    assert!(matches!(
        body_of(ProtocolVersion::V4, Opcode::Query, &body),
        Err(BodyError::Truncated { .. })
    ));
}

// ---------------------------------------------------------------------------------------
// Compression.

fn lz4_body(plain: &[u8]) -> Vec<u8> {
    // Cassandra's framing: big-endian uncompressed length + raw block.
    let mut out = (plain.len() as u32).to_be_bytes().to_vec();
    out.extend_from_slice(&lz4_flex::block::compress(plain));
    out
}

#[test]
fn lz4_compressed_request_decodes_when_negotiated() {
    let (op, body) = encode_body(&Request::Prepare(Prepare {
        query: "SELECT x FROM y ".repeat(50),
        keyspace: None,
    }));
    let f = decode_one(&frame(
        ProtocolVersion::V4,
        FrameFlags::COMPRESSION,
        3,
        op,
        &lz4_body(&body),
    ));
    assert!(f.body.len() < body.len());
    assert_eq!(
        f.decode(Some(Compression::Lz4)),
        Ok(Request::Prepare(Prepare {
            query: "SELECT x FROM y ".repeat(50),
            keyspace: None,
        }))
    );
    assert_eq!(f.decode(None), Err(BodyError::CompressedWithoutNegotiation));
}

#[test]
fn lz4_bodies_that_lie_about_their_length_are_refused() {
    // 256 MiB announced from a 5-byte block: refused before allocating.
    let mut lie = vec![0x10, 0, 0, 0];
    lie.extend_from_slice(&lz4_flex::block::compress(b"hello"));
    let f = decode_one(&frame(
        ProtocolVersion::V4,
        FrameFlags::COMPRESSION,
        1,
        Opcode::Options,
        &lie,
    ));
    assert!(matches!(
        f.decode(Some(Compression::Lz4)),
        Err(BodyError::DecompressedTooLarge { .. })
    ));
    // Announcing more than the block holds.
    let mut short = 6u32.to_be_bytes().to_vec();
    short.extend_from_slice(&lz4_flex::block::compress(b"hello"));
    let f = decode_one(&frame(
        ProtocolVersion::V4,
        FrameFlags::COMPRESSION,
        1,
        Opcode::Options,
        &short,
    ));
    assert!(matches!(
        f.decode(Some(Compression::Lz4)),
        Err(BodyError::Decompression { .. })
    ));
    // Garbage block.
    let f = decode_one(&frame(
        ProtocolVersion::V4,
        FrameFlags::COMPRESSION,
        1,
        Opcode::Options,
        &[0, 0, 0, 9, 0xFF, 0xFF],
    ));
    assert!(matches!(
        f.decode(Some(Compression::Lz4)),
        Err(BodyError::Decompression { .. })
    ));
    // STARTUP can't be compressed.
    let f = decode_one(&frame(
        ProtocolVersion::V4,
        FrameFlags::COMPRESSION,
        1,
        Opcode::Startup,
        &lz4_body(&[0, 0]),
    ));
    assert_eq!(
        f.decode(Some(Compression::Lz4)),
        Err(BodyError::CompressedWithoutNegotiation)
    );
}

#[test]
fn compressed_responses_round_trip_and_empty_bodies_stay_uncompressed() {
    let enc = ResponseEncoder::new(ProtocolVersion::V4, Some(Compression::Lz4));
    let mut out = BytesMut::new();
    enc.encode(&mut out, 1, &Response::Ready).unwrap();
    assert_eq!(
        &out[..],
        &[0x84, 0, 0, 1, 0x02, 0, 0, 0, 0],
        "READY is sent plain"
    );
    let rows = Response::Result(ResultBody::Rows(Rows {
        metadata: RowsMetadata::new(vec![ColumnSpec::new("ks", "t", "v", CqlType::Text)]),
        rows: vec![vec![Some(Bytes::from("abc".repeat(100)))]; 20],
    }));
    let mut out = BytesMut::new();
    enc.encode(&mut out, 2, &rows).unwrap();
    assert_eq!(out[1] & FrameFlags::COMPRESSION, FrameFlags::COMPRESSION);
    assert!(out.len() < 3000);
    let d = decode_response(&mut out.freeze(), Some(Compression::Lz4)).unwrap();
    assert_eq!(d.response, rows);
}

// ---------------------------------------------------------------------------------------
// Responses.

fn encode(version: ProtocolVersion, response: &Response) -> BytesMut {
    let mut out = BytesMut::new();
    ResponseEncoder::new(version, None)
        .encode(&mut out, 5, response)
        .unwrap();
    out
}

fn round_trip(response: &Response) -> Decoded {
    let d = decode_response(&mut encode(ProtocolVersion::V4, response).freeze(), None).unwrap();
    assert_eq!(&d.response, response);
    assert_eq!((d.version_byte, d.stream), (0x84, 5));
    d
}

#[test]
fn ready_and_authenticate_golden_bytes() {
    assert_eq!(
        &encode(ProtocolVersion::V4, &Response::Ready)[..],
        &[0x84, 0, 0, 5, 0x02, 0, 0, 0, 0]
    );
    assert_eq!(
        &encode(ProtocolVersion::V3, &Response::Ready)[..],
        &[0x83, 0, 0, 5, 0x02, 0, 0, 0, 0]
    );
    let a = encode(
        ProtocolVersion::V4,
        &Response::Authenticate {
            authenticator: "org.apache.cassandra.auth.PasswordAuthenticator".into(),
        },
    );
    assert_eq!(&a[..9], &[0x84, 0, 0, 5, 0x03, 0, 0, 0, 49]);
    assert_eq!(&a[9..11], &[0, 47]);
    round_trip(&Response::AuthSuccess { token: None });
    round_trip(&Response::AuthChallenge {
        token: Some(Bytes::from_static(b"nonce")),
    });
}

#[test]
fn supported_offers_lz4_and_v3_v4_v5_and_never_a_scylla_key() {
    let d = round_trip(&Response::Supported(Supported::default()));
    let Response::Supported(s) = d.response else {
        panic!()
    };
    let get = |k: &str| {
        s.options
            .iter()
            .find(|(key, _)| key == k)
            .map(|(_, v)| v.clone())
    };
    assert_eq!(get("CQL_VERSION"), Some(vec!["3.4.5".to_owned()]));
    assert_eq!(get("COMPRESSION"), Some(vec!["lz4".to_owned()]));
    assert_eq!(
        get("PROTOCOL_VERSIONS"),
        Some(vec![
            "3/v3".to_owned(),
            "4/v4".to_owned(),
            "5/v5".to_owned()
        ])
    );
    assert!(s.options.iter().all(|(k, _)| !k.starts_with("SCYLLA")));
}

fn every_error() -> Vec<ErrorResponse> {
    let e = ErrorResponse::new;
    vec![
        e(ErrorKind::Server, "boom"),
        e(ErrorKind::Protocol, "bad"),
        e(ErrorKind::BadCredentials, "no"),
        e(
            ErrorKind::Unavailable {
                consistency: Consistency::Quorum,
                required: 2,
                alive: 1,
            },
            "u",
        ),
        e(ErrorKind::Overloaded, "o"),
        e(ErrorKind::IsBootstrapping, "b"),
        e(ErrorKind::Truncate, "t"),
        e(
            ErrorKind::WriteTimeout {
                consistency: Consistency::LocalQuorum,
                received: 1,
                block_for: 2,
                write_type: WriteType::UnloggedBatch,
            },
            "wt",
        ),
        e(
            ErrorKind::ReadTimeout {
                consistency: Consistency::One,
                received: 0,
                block_for: 1,
                data_present: true,
            },
            "rt",
        ),
        e(
            ErrorKind::ReadFailure {
                consistency: Consistency::All,
                received: 1,
                block_for: 3,
                num_failures: 2,
                data_present: false,
                reasons: Vec::new(),
            },
            "rf",
        ),
        e(
            ErrorKind::FunctionFailure {
                keyspace: "ks".into(),
                function: "f".into(),
                arg_types: vec!["int".into(), "text".into()],
            },
            "ff",
        ),
        e(
            ErrorKind::WriteFailure {
                consistency: Consistency::Two,
                received: 1,
                block_for: 2,
                num_failures: 1,
                write_type: WriteType::Cas,
                reasons: Vec::new(),
            },
            "wf",
        ),
        e(ErrorKind::Syntax, "line 1:0 no viable alternative"),
        e(ErrorKind::Unauthorized, "x"),
        e(ErrorKind::Invalid, "unconfigured table nope"),
        e(ErrorKind::Config, "c"),
        e(
            ErrorKind::AlreadyExists {
                keyspace: "ks".into(),
                table: String::new(),
            },
            "exists",
        ),
        e(
            ErrorKind::Unprepared {
                id: Bytes::from_static(&[0xDE, 0xAD]),
            },
            "unprepared",
        ),
    ]
}

#[test]
fn every_error_code_round_trips_with_its_fields() {
    let codes: Vec<i32> = every_error().iter().map(ErrorResponse::code).collect();
    assert_eq!(
        codes,
        [
            0x0000, 0x000A, 0x0100, 0x1000, 0x1001, 0x1002, 0x1003, 0x1100, 0x1200, 0x1300, 0x1400,
            0x1500, 0x2000, 0x2100, 0x2200, 0x2300, 0x2400, 0x2500
        ]
    );
    for error in every_error() {
        round_trip(&Response::Error(error));
    }
}

#[test]
fn unavailable_error_golden_bytes() {
    let out = encode(
        ProtocolVersion::V4,
        &Response::Error(ErrorResponse::new(
            ErrorKind::Unavailable {
                consistency: Consistency::Quorum,
                required: 2,
                alive: 1,
            },
            "u",
        )),
    );
    assert_eq!(
        &out[..],
        &[
            0x84, 0, 0, 5, 0x00, 0, 0, 0, 17, 0, 0, 0x10, 0, 0, 1, b'u', 0, 4, 0, 0, 0, 2, 0, 0, 0,
            1
        ]
    );
}

#[test]
fn v3_clients_get_failures_as_timeouts_and_function_failures_as_invalid() {
    let decode_v3 = |e: &ErrorResponse| {
        let out = encode(ProtocolVersion::V3, &Response::Error(e.clone()));
        let Response::Error(got) = decode_response(&mut out.freeze(), None).unwrap().response
        else {
            panic!()
        };
        got.kind
    };
    let errors = every_error();
    assert!(matches!(
        decode_v3(&errors[9]),
        ErrorKind::ReadTimeout {
            block_for: 3,
            data_present: false,
            ..
        }
    ));
    assert_eq!(decode_v3(&errors[10]), ErrorKind::Invalid);
    assert!(matches!(
        decode_v3(&errors[11]),
        ErrorKind::WriteTimeout {
            write_type: WriteType::Cas,
            ..
        }
    ));
}

#[test]
fn overlong_error_message_is_cut_at_a_char_boundary() {
    let msg = "é".repeat(40_000); // 80,000 bytes
    let out = encode(
        ProtocolVersion::V4,
        &Response::Error(ErrorResponse::new(ErrorKind::Invalid, msg)),
    );
    let Response::Error(e) = decode_response(&mut out.freeze(), None).unwrap().response else {
        panic!()
    };
    assert_eq!(e.message.len(), 65_534);
}

fn all_column_types() -> Vec<ColumnType> {
    let mut types: Vec<ColumnType> = CqlType::ALL.into_iter().map(ColumnType::Native).collect();
    types.extend([
        ColumnType::Custom("org.example.MyType".into()),
        ColumnType::Counter,
        ColumnType::List(Box::new(ColumnType::Native(CqlType::Int))),
        ColumnType::Map(
            Box::new(ColumnType::Native(CqlType::Text)),
            Box::new(ColumnType::Set(Box::new(ColumnType::Native(CqlType::Inet)))),
        ),
        ColumnType::Set(Box::new(ColumnType::Native(CqlType::Uuid))),
        ColumnType::Udt {
            keyspace: "ks".into(),
            name: "address".into(),
            fields: vec![
                ("street".into(), CqlType::Text.into()),
                ("zip".into(), CqlType::Int.into()),
            ],
        },
        ColumnType::Tuple(vec![
            CqlType::BigInt.into(),
            ColumnType::List(Box::new(CqlType::Blob.into())),
        ]),
    ]);
    types
}

#[test]
fn rows_metadata_carries_every_type_id() {
    let columns: Vec<ColumnSpec> = all_column_types()
        .into_iter()
        .enumerate()
        .map(|(i, ty)| ColumnSpec::new("ks", "t", format!("c{i}"), ty))
        .collect();
    let n = columns.len();
    let d = round_trip(&Response::Result(ResultBody::Rows(Rows {
        metadata: RowsMetadata::new(columns),
        rows: vec![vec![None; n]],
    })));
    let _ = d;
    // Spot-check option ids on the wire: a list<int> is 0x0020 0x0009.
    let mut out = BytesMut::new();
    ColumnType::List(Box::new(CqlType::Int.into()))
        .put_option(&mut out, ProtocolVersion::V4)
        .unwrap();
    assert_eq!(&out[..], &[0x00, 0x20, 0x00, 0x09]);
}

#[test]
fn v3_metadata_names_v4_only_types_as_custom_classes() {
    let mut out = BytesMut::new();
    ColumnType::Native(CqlType::SmallInt)
        .put_option(&mut out, ProtocolVersion::V3)
        .unwrap();
    let mut expected = BytesMut::from(&[0u8, 0][..]);
    put_string(&mut expected, "org.apache.cassandra.db.marshal.ShortType").unwrap();
    assert_eq!(out, expected);
    let mut out = BytesMut::new();
    ColumnType::Native(CqlType::SmallInt)
        .put_option(&mut out, ProtocolVersion::V4)
        .unwrap();
    assert_eq!(&out[..], &[0x00, 0x13]);
}

#[test]
fn rows_golden_bytes_with_global_table_spec() {
    let out = encode(
        ProtocolVersion::V4,
        &Response::Result(ResultBody::Rows(Rows {
            metadata: RowsMetadata::new(vec![
                ColumnSpec::new("k", "t", "a", CqlType::Int),
                ColumnSpec::new("k", "t", "b", CqlType::Text),
            ]),
            rows: vec![vec![Some(Bytes::from_static(&[0, 0, 0, 1])), None]],
        })),
    );
    #[rustfmt::skip]
    let body: &[u8] = &[
        0, 0, 0, 2,             // kind Rows
        0, 0, 0, 1,             // flags Global_tables_spec
        0, 0, 0, 2,             // columns
        0, 1, b'k', 0, 1, b't', // global table spec
        0, 1, b'a', 0, 9,       // a int
        0, 1, b'b', 0, 0x0D,    // b varchar
        0, 0, 0, 1,             // rows
        0, 0, 0, 4, 0, 0, 0, 1, // a = 1
        0xFF, 0xFF, 0xFF, 0xFF, // b = null
    ];
    assert_eq!(&out[9..], body);
    assert_eq!(
        u32::from_be_bytes(out[5..9].try_into().unwrap()) as usize,
        body.len()
    );
}

#[test]
fn rows_from_several_tables_carry_per_column_specs_and_paging_state() {
    round_trip(&Response::Result(ResultBody::Rows(Rows {
        metadata: RowsMetadata {
            columns: vec![
                ColumnSpec::new("a", "t1", "x", CqlType::Int),
                ColumnSpec::new("b", "t2", "y", CqlType::Int),
            ],
            paging_state: Some(Bytes::from_static(b"next")),
            no_metadata: false,
            new_metadata_id: None,
        },
        rows: vec![],
    })));
}

#[test]
fn no_metadata_rows_send_only_the_column_count() {
    let out = encode(
        ProtocolVersion::V4,
        &Response::Result(ResultBody::Rows(Rows {
            metadata: RowsMetadata {
                columns: vec![ColumnSpec::new("k", "t", "a", CqlType::Int)],
                paging_state: Some(Bytes::from_static(b"P")),
                no_metadata: true,
                new_metadata_id: None,
            },
            rows: vec![vec![None]],
        })),
    );
    assert_eq!(
        &out[9..],
        &[
            0, 0, 0, 2, 0, 0, 0, 6, 0, 0, 0, 1, 0, 0, 0, 1, b'P', 0, 0, 0, 1, 0xFF, 0xFF, 0xFF,
            0xFF
        ]
    );
}

#[test]
fn streamed_rows_equal_in_memory_rows() {
    let metadata = RowsMetadata::new(vec![
        ColumnSpec::new("ks", "t", "k", CqlType::Int),
        ColumnSpec::new("ks", "t", "v", CqlType::Text),
    ]);
    let rows = Rows {
        metadata: metadata.clone(),
        rows: (0..50)
            .map(|i: i32| {
                vec![
                    Some(Bytes::copy_from_slice(&i.to_be_bytes())),
                    (i % 3 != 0).then(|| Bytes::from(format!("v{i}"))),
                ]
            })
            .collect(),
    };
    for compression in [None, Some(Compression::Lz4)] {
        let enc = ResponseEncoder::new(ProtocolVersion::V4, compression);
        let mut expected = BytesMut::new();
        enc.encode(
            &mut expected,
            9,
            &Response::Result(ResultBody::Rows(rows.clone())),
        )
        .unwrap();
        let mut out = BytesMut::from(&b"previous frames"[..]);
        let mut w = enc
            .rows(&mut out, 9, &ResponseExtras::default(), &metadata)
            .unwrap();
        for i in 0..50i32 {
            match i % 3 {
                0 => w.value(Some(&CqlValue::Int(i))),
                1 => w.cell_with(|b| b.put_i32(i)),
                _ => w.cell(Some(&i.to_be_bytes())),
            }
            if i % 3 == 0 {
                w.cell(None);
            } else {
                w.value(Some(&CqlValue::Text(format!("v{i}"))));
            }
        }
        assert_eq!(w.row_count(), 50);
        w.finish().unwrap();
        assert_eq!(&out[..15], b"previous frames");
        assert_eq!(&out[15..], &expected[..]);
    }
}

#[test]
fn dropped_rows_writer_leaves_no_partial_frame() {
    let enc = ResponseEncoder::new(ProtocolVersion::V4, None);
    let mut out = BytesMut::from(&b"keep"[..]);
    let metadata = RowsMetadata::new(vec![ColumnSpec::new("k", "t", "a", CqlType::Int)]);
    let mut w = enc
        .rows(&mut out, 1, &ResponseExtras::default(), &metadata)
        .unwrap();
    w.cell(None);
    drop(w);
    assert_eq!(&out[..], b"keep");
}

#[test]
#[should_panic(expected = "whole rows")]
fn finishing_a_half_row_is_a_bug() {
    let enc = ResponseEncoder::new(ProtocolVersion::V4, None);
    let mut out = BytesMut::new();
    let metadata = RowsMetadata::new(vec![
        ColumnSpec::new("k", "t", "a", CqlType::Int),
        ColumnSpec::new("k", "t", "b", CqlType::Int),
    ]);
    let mut w = enc
        .rows(&mut out, 1, &ResponseExtras::default(), &metadata)
        .unwrap();
    w.cell(None);
    let _ = w.finish();
}

fn prepared() -> Prepared {
    Prepared {
        id: Bytes::from_static(&[0xAA; 16]),
        metadata: PreparedMetadata {
            pk_indexes: vec![1, 0],
            columns: vec![
                ColumnSpec::new("ks", "t", "b", CqlType::Int),
                ColumnSpec::new("ks", "t", "a", CqlType::Text),
                ColumnSpec::new("ks", "t", "v", CqlType::Blob),
            ],
        },
        result_metadata: RowsMetadata::empty(),
        result_metadata_id: Bytes::new(),
    }
}

#[test]
fn prepared_result_carries_pk_indexes_in_v4_only() {
    round_trip(&Response::Result(ResultBody::Prepared(prepared())));
    let v4 = encode(
        ProtocolVersion::V4,
        &Response::Result(ResultBody::Prepared(prepared())),
    );
    // kind, id, flags (global), 3 columns, 2 pk indexes [1, 0]
    assert_eq!(&v4[13..15], &[0, 16]);
    assert_eq!(
        &v4[31..49],
        &[0, 0, 0, 1, 0, 0, 0, 3, 0, 0, 0, 2, 0, 1, 0, 0, 0, 2]
    );
    let v3 = encode(
        ProtocolVersion::V3,
        &Response::Result(ResultBody::Prepared(prepared())),
    );
    assert_eq!(v4.len() - v3.len(), 8);
    let d = decode_response(&mut v3.freeze(), None).unwrap();
    let Response::Result(ResultBody::Prepared(p)) = d.response else {
        panic!()
    };
    assert!(p.metadata.pk_indexes.is_empty());
    assert_eq!(p.metadata.columns, prepared().metadata.columns);
}

#[test]
fn prepared_select_result_metadata_round_trips() {
    let mut p = prepared();
    p.result_metadata = RowsMetadata::new(vec![ColumnSpec::new("ks", "t", "v", CqlType::Blob)]);
    p.metadata = PreparedMetadata::default();
    round_trip(&Response::Result(ResultBody::Prepared(p)));
}

fn schema_changes() -> Vec<SchemaChange> {
    vec![
        SchemaChange {
            change: SchemaChangeType::Created,
            target: SchemaChangeTarget::Keyspace {
                keyspace: "ks".into(),
            },
        },
        SchemaChange {
            change: SchemaChangeType::Updated,
            target: SchemaChangeTarget::Table {
                keyspace: "ks".into(),
                table: "t".into(),
            },
        },
        SchemaChange {
            change: SchemaChangeType::Dropped,
            target: SchemaChangeTarget::Type {
                keyspace: "ks".into(),
                name: "addr".into(),
            },
        },
        SchemaChange {
            change: SchemaChangeType::Created,
            target: SchemaChangeTarget::Function {
                keyspace: "ks".into(),
                name: "f".into(),
                arg_types: vec!["int".into()],
            },
        },
        SchemaChange {
            change: SchemaChangeType::Dropped,
            target: SchemaChangeTarget::Aggregate {
                keyspace: "ks".into(),
                name: "g".into(),
                arg_types: vec![],
            },
        },
    ]
}

#[test]
fn void_set_keyspace_and_schema_change_results_round_trip() {
    round_trip(&Response::Result(ResultBody::Void));
    assert_eq!(
        &encode(ProtocolVersion::V4, &Response::Result(ResultBody::Void))[9..],
        &[0, 0, 0, 1]
    );
    round_trip(&Response::Result(ResultBody::SetKeyspace("ks".into())));
    for change in schema_changes() {
        round_trip(&Response::Result(ResultBody::SchemaChange(change)));
    }
    let table = encode(
        ProtocolVersion::V4,
        &Response::Result(ResultBody::SchemaChange(schema_changes()[1].clone())),
    );
    assert_eq!(
        &table[9..],
        b"\0\0\0\x05\0\x07UPDATED\0\x05TABLE\0\x02ks\0\x01t"
    );
}

#[test]
fn v3_clients_hear_function_changes_as_keyspace_updates() {
    for change in &schema_changes()[3..] {
        let out = encode(
            ProtocolVersion::V3,
            &Response::Result(ResultBody::SchemaChange(change.clone())),
        );
        let Response::Result(ResultBody::SchemaChange(got)) =
            decode_response(&mut out.freeze(), None).unwrap().response
        else {
            panic!()
        };
        assert_eq!(
            got,
            SchemaChange {
                change: SchemaChangeType::Updated,
                target: SchemaChangeTarget::Keyspace {
                    keyspace: "ks".into()
                }
            }
        );
    }
}

#[test]
fn events_go_out_on_stream_minus_one() {
    let events = [
        Event::TopologyChange {
            change: TopologyChangeType::NewNode,
            node: "10.0.0.7:9042".parse().unwrap(),
        },
        Event::StatusChange {
            change: StatusChangeType::Down,
            node: "[::1]:9043".parse().unwrap(),
        },
        Event::SchemaChange(schema_changes()[0].clone()),
    ];
    for event in events {
        let mut out = BytesMut::new();
        ResponseEncoder::new(ProtocolVersion::V4, None)
            .encode_event(&mut out, &event)
            .unwrap();
        let d = decode_response(&mut out.freeze(), None).unwrap();
        assert_eq!((d.stream, d.opcode), (-1, Opcode::Event));
        assert_eq!(d.response, Response::Event(event));
    }
    let mut out = BytesMut::new();
    ResponseEncoder::new(ProtocolVersion::V4, None)
        .encode_event(
            &mut out,
            &Event::StatusChange {
                change: StatusChangeType::Up,
                node: "127.0.0.1:9042".parse().unwrap(),
            },
        )
        .unwrap();
    assert_eq!(
        &out[9..],
        b"\0\x0dSTATUS_CHANGE\0\x02UP\x04\x7f\0\0\x01\0\0\x23\x52"
    );
}

#[test]
fn tracing_id_and_warnings_lead_the_body_and_warnings_are_v4_only() {
    let extras = ResponseExtras {
        tracing_id: Some([3; 16]),
        warnings: vec!["Aggregation query used without partition key".into()],
    };
    let mut out = BytesMut::new();
    ResponseEncoder::new(ProtocolVersion::V4, None)
        .encode_with(&mut out, 1, &extras, &Response::Result(ResultBody::Void))
        .unwrap();
    let d = decode_response(&mut out.freeze(), None).unwrap();
    assert_eq!(d.flags, FrameFlags::TRACING | FrameFlags::WARNING);
    assert_eq!(d.extras, extras);
    let mut out = BytesMut::new();
    ResponseEncoder::new(ProtocolVersion::V3, None)
        .encode_with(&mut out, 1, &extras, &Response::Result(ResultBody::Void))
        .unwrap();
    let d = decode_response(&mut out.freeze(), None).unwrap();
    assert_eq!(d.flags, FrameFlags::TRACING);
    assert!(d.extras.warnings.is_empty());
}

#[test]
fn oversized_string_fails_and_leaves_the_buffer_untouched() {
    let mut out = BytesMut::from(&b"x"[..]);
    let err = ResponseEncoder::new(ProtocolVersion::V4, None)
        .encode(
            &mut out,
            1,
            &Response::Result(ResultBody::SetKeyspace("k".repeat(70_000))),
        )
        .unwrap_err();
    assert_eq!(err, EncodeError::StringTooLong { length: 70_000 });
    assert_eq!(&out[..], b"x");
}

// ---------------------------------------------------------------------------------------
// Properties.

fn arb_value() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        Just(Value::Unset),
        proptest::collection::vec(any::<u8>(), 0..20).prop_map(|b| Value::Bytes(Bytes::from(b))),
    ]
}

fn arb_values() -> impl Strategy<Value = BoundValues> {
    prop_oneof![
        proptest::collection::vec(arb_value(), 0..5).prop_map(BoundValues::Positional),
        proptest::collection::vec(("[a-z]{0,6}", arb_value()), 1..5).prop_map(BoundValues::Named),
    ]
}

fn arb_consistency() -> impl Strategy<Value = Consistency> {
    (0u16..=10).prop_map(|c| Consistency::from_code(c).unwrap())
}

fn arb_params() -> impl Strategy<Value = QueryParameters> {
    (
        arb_consistency(),
        arb_values(),
        any::<bool>(),
        proptest::option::of(any::<i32>()),
        proptest::option::of(proptest::collection::vec(any::<u8>(), 0..10)),
        proptest::option::of(arb_consistency()),
        proptest::option::of(i64::MIN + 1..=i64::MAX),
    )
        .prop_map(
            |(
                consistency,
                values,
                skip_metadata,
                page_size,
                paging_state,
                serial_consistency,
                timestamp,
            )| {
                QueryParameters {
                    consistency,
                    values,
                    skip_metadata,
                    page_size,
                    paging_state: paging_state.map(Bytes::from),
                    serial_consistency,
                    timestamp,
                    keyspace: None,
                    now_in_seconds: None,
                }
            },
        )
}

fn arb_request() -> impl Strategy<Value = Request> {
    prop_oneof![
        proptest::collection::vec(("[A-Z_]{1,12}", "\\PC{0,8}"), 0..4)
            .prop_map(|options| Request::Startup(Startup { options })),
        proptest::option::of(proptest::collection::vec(any::<u8>(), 0..10)).prop_map(|t| {
            Request::AuthResponse(AuthResponse {
                token: t.map(Bytes::from),
            })
        }),
        Just(Request::Options),
        ("\\PC{0,40}", arb_params())
            .prop_map(|(query, params)| Request::Query(Query { query, params })),
        "\\PC{0,40}".prop_map(|query| Request::Prepare(Prepare {
            query,
            keyspace: None
        })),
        (proptest::collection::vec(any::<u8>(), 0..20), arb_params()).prop_map(|(id, params)| {
            Request::Execute(Execute {
                id: Bytes::from(id),
                params,
                result_metadata_id: None,
            })
        }),
        (
            0u8..3,
            proptest::collection::vec(
                (
                    prop_oneof![
                        "\\PC{0,20}".prop_map(BatchQuery::Query),
                        proptest::collection::vec(any::<u8>(), 0..16)
                            .prop_map(|id| BatchQuery::Prepared(Bytes::from(id))),
                    ],
                    proptest::collection::vec(arb_value(), 0..4),
                ),
                0..4
            ),
            arb_consistency(),
            proptest::option::of(arb_consistency()),
            proptest::option::of(i64::MIN + 1..=i64::MAX),
        )
            .prop_map(
                |(t, statements, consistency, serial_consistency, timestamp)| {
                    Request::Batch(Batch {
                        batch_type: [BatchType::Logged, BatchType::Unlogged, BatchType::Counter]
                            [t as usize],
                        statements: statements
                            .into_iter()
                            .map(|(query, values)| BatchStatement {
                                query,
                                values: BoundValues::Positional(values),
                            })
                            .collect(),
                        consistency,
                        serial_consistency,
                        timestamp,
                        keyspace: None,
                        now_in_seconds: None,
                    })
                }
            ),
        proptest::collection::vec(0usize..3, 0..4).prop_map(|e| Request::Register(Register {
            events: e
                .into_iter()
                .map(|i| [
                    EventType::TopologyChange,
                    EventType::StatusChange,
                    EventType::SchemaChange
                ][i])
                .collect()
        })),
    ]
}

/// The decoder's normal form of what a test encoder may write: a named-values flag with no
/// values is no values at all.
fn normalize(mut r: Request) -> Request {
    let fix = |p: &mut QueryParameters| {
        if p.values.is_empty() {
            p.values = BoundValues::default();
        }
    };
    match &mut r {
        Request::Query(q) => fix(&mut q.params),
        Request::Execute(e) => fix(&mut e.params),
        _ => {}
    }
    r
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn request_bodies_round_trip(request in arb_request(), compressed in any::<bool>()) {
        let request = normalize(request);
        let (op, body) = encode_body(&request);
        let (flags, wire_body) = if compressed && op != Opcode::Startup {
            (FrameFlags::COMPRESSION, lz4_body(&body))
        } else {
            (0, body.to_vec())
        };
        let f = decode_one(&frame(ProtocolVersion::V4, flags, 3, op, &wire_body));
        prop_assert_eq!(f.decode(Some(Compression::Lz4)), Ok(request));
    }

    #[test]
    fn arbitrary_bytes_never_panic_the_frame_decoder(bytes in proptest::collection::vec(any::<u8>(), 0..200), max in 0u32..300) {
        let mut buf = BytesMut::from(&bytes[..]);
        for _ in 0..bytes.len() + 1 {
            match decode_frame(&mut buf, max) {
                Ok(Some(f)) => {
                    let _ = f.decode(Some(Compression::Lz4));
                    let _ = f.decode(None);
                }
                Ok(None) => break,
                Err(e) => {
                    let mut out = BytesMut::new();
                    e.encode_response(&mut out);
                    let v2 = matches!(e, FrameError::UnsupportedVersion { version: 1 | 2, .. });
                    let decodes = decode_response(&mut out.freeze(), None).is_ok();
                    prop_assert!(v2 || decodes);
                    break;
                }
            }
        }
    }

    #[test]
    fn arbitrary_bodies_never_panic_any_body_decoder(
        body in proptest::collection::vec(any::<u8>(), 0..120),
        op in prop::sample::select(vec![Opcode::Startup, Opcode::AuthResponse, Opcode::Options, Opcode::Query, Opcode::Prepare, Opcode::Execute, Opcode::Batch, Opcode::Register]),
        flags in 0u8..32,
        v3 in any::<bool>(),
    ) {
        let version = if v3 { ProtocolVersion::V3 } else { ProtocolVersion::V4 };
        let f = decode_one(&frame(version, flags, 0, op, &body));
        if let Err(e) = f.decode(Some(Compression::Lz4)) {
            prop_assert_eq!(e.to_error_response().code(), error_code::PROTOCOL);
        }
    }

    #[test]
    fn error_responses_round_trip(i in 0usize..18, message in "\\PC{0,30}") {
        let mut e = every_error()[i].clone();
        e.message = message;
        round_trip(&Response::Error(e));
    }
}

#[path = "tests_v5.rs"]
mod v5;
