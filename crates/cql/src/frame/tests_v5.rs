//! Unit tests of protocol v5: segments (golden bytes whose CRCs the Python driver's
//! `cassandra.segment` computed), the frame reader's framing rules, the segment writer,
//! and the v5 message changes. A child of `tests`, whose test encoder and decoder it uses.

use super::*;

/// A v5 OPTIONS on stream 1 in one self-contained segment, as the Python driver 3.30's
/// `SegmentCodec().encode` writes it: header `09 00 02` (length 9, self-contained bit 17),
/// its CRC24 0xC1C8A4 little-endian, the frame, its CRC32 0x867455B5 little-endian.
const OPTIONS_SEGMENT: [u8; 19] = [
    0x09, 0x00, 0x02, 0xA4, 0xC8, 0xC1, 0x05, 0x00, 0x00, 0x01, 0x05, 0x00, 0x00, 0x00, 0x00, 0xB5,
    0x55, 0x74, 0x86,
];

fn options_frame(stream: i16) -> Vec<u8> {
    frame(ProtocolVersion::V5, 0, stream, Opcode::Options, &[]).to_vec()
}

#[test]
fn crcs_are_cassandras() {
    // Values from the Python driver's compute_crc24 / compute_crc32 (cassandra.segment).
    assert_eq!(segment_header_crc24(&[0x09, 0x00, 0x02]), 0xC1_C8A4);
    assert_eq!(segment_header_crc24(&[0, 0, 0]), 0x7D_E777);
    assert_eq!(segment_header_crc24(&[0xFF, 0xFF, 0x01]), 0xFE_9138);
    // The LZ4 header: compressed length 9, uncompressed 0, self-contained bit 34.
    assert_eq!(segment_header_crc24(&[0x09, 0, 0, 0, 0x04]), 0x95_B8C2);
    assert_eq!(segment_header_crc24(b"123456789"), 0x4B_3F02);
    assert_eq!(segment_payload_crc32(&options_frame(1)), 0x8674_55B5);
    assert_eq!(segment_payload_crc32(&[]), 0x4477_7ED3);
}

#[test]
fn a_segment_built_by_hand_decodes_and_encodes_byte_for_byte() {
    let mut buf = BytesMut::from(&OPTIONS_SEGMENT[..]);
    let segment = decode_segment(&mut buf, None).unwrap().unwrap();
    assert!(buf.is_empty());
    assert!(segment.self_contained);
    assert_eq!(&segment.payload[..], &options_frame(1)[..]);
    let mut out = BytesMut::new();
    encode_segment(&mut out, &options_frame(1), true, None);
    assert_eq!(&out[..], &OPTIONS_SEGMENT[..]);
    // Not self-contained: only bit 17 changes (and so the CRC24).
    out.clear();
    encode_segment(&mut out, &options_frame(1), false, None);
    assert_eq!(&out[..3], &[0x09, 0x00, 0x00]);
    let crc = segment_header_crc24(&out[..3]).to_le_bytes();
    assert_eq!(&out[3..6], &crc[..3]);
}

#[test]
fn a_partial_segment_waits_and_consumes_nothing() {
    for n in 0..OPTIONS_SEGMENT.len() {
        let mut buf = BytesMut::from(&OPTIONS_SEGMENT[..n]);
        assert_eq!(decode_segment(&mut buf, None), Ok(None), "prefix of {n}");
        assert_eq!(buf.len(), n);
    }
}

#[test]
fn any_damaged_byte_is_a_crc_mismatch() {
    for i in 0..OPTIONS_SEGMENT.len() {
        let mut damaged = OPTIONS_SEGMENT;
        damaged[i] ^= 0x10;
        let mut buf = BytesMut::from(&damaged[..]);
        let err = decode_segment(&mut buf, None).unwrap_err();
        if i < 6 {
            assert!(
                matches!(err, SegmentError::HeaderCrcMismatch { .. }),
                "{i}: {err}"
            );
        } else {
            assert!(
                matches!(err, SegmentError::PayloadCrcMismatch { .. }),
                "{i}: {err}"
            );
        }
        assert_eq!(buf.len(), damaged.len(), "errors consume nothing");
        assert!(err.to_string().contains("unrecoverable CRC mismatch"));
    }
}

#[test]
fn lz4_segments_compress_when_it_helps_and_say_so_when_not() {
    let compressible = b"abcdefgh".repeat(1000);
    let mut out = BytesMut::new();
    encode_segment(&mut out, &compressible, true, Some(Compression::Lz4));
    let header = u64::from_le_bytes([out[0], out[1], out[2], out[3], out[4], 0, 0, 0]);
    assert_eq!((header >> 17) & 0x1_FFFF, compressible.len() as u64);
    assert!(((header & 0x1_FFFF) as usize) < compressible.len() / 10);
    assert_ne!(header & (1 << 34), 0);
    let mut buf = out.clone();
    let s = decode_segment(&mut buf, Some(Compression::Lz4))
        .unwrap()
        .unwrap();
    assert_eq!(&s.payload[..], &compressible[..]);
    // Incompressible: sent as is, uncompressed length 0.
    let frame = options_frame(1);
    out.clear();
    encode_segment(&mut out, &frame, true, Some(Compression::Lz4));
    assert_eq!(&out[..5], &[0x09, 0x00, 0x00, 0x00, 0x04]);
    assert_eq!(&out[5..8], &0x95_B8C2u32.to_le_bytes()[..3]);
    assert_eq!(&out[8..17], &frame[..]);
    // An LZ4 header announcing more than the block holds is refused.
    let block = lz4_flex::block::compress(&compressible);
    let mut bad = BytesMut::new();
    let h = block.len() as u64 | (((compressible.len() - 1) as u64) << 17) | (1 << 34);
    let h = h.to_le_bytes();
    bad.extend_from_slice(&h[..5]);
    bad.extend_from_slice(&segment_header_crc24(&h[..5]).to_le_bytes()[..3]);
    bad.extend_from_slice(&block);
    bad.put_u32_le(segment_payload_crc32(&block));
    assert!(matches!(
        decode_segment(&mut bad, Some(Compression::Lz4)),
        Err(SegmentError::Decompression { .. })
    ));
}

fn segmented_reader() -> FrameReader {
    let mut reader = FrameReader::new(FRAME_LEN_MAX_DEFAULT);
    reader.start_segments(None);
    reader
}

fn segment_of(payload: &[u8], self_contained: bool) -> BytesMut {
    let mut out = BytesMut::new();
    encode_segment(&mut out, payload, self_contained, None);
    out
}

#[test]
fn the_reader_switches_from_frames_to_segments() {
    let mut reader = FrameReader::new(FRAME_LEN_MAX_DEFAULT);
    let mut buf = BytesMut::from(&options_frame(1)[..]);
    // Two frames in one segment, already buffered behind the unsegmented STARTUP stand-in.
    let two = [options_frame(2), options_frame(3)].concat();
    buf.extend_from_slice(&segment_of(&two, true));
    let first = reader.next_frame(&mut buf).unwrap().unwrap();
    assert_eq!((first.version, first.stream), (ProtocolVersion::V5, 1));
    assert!(!reader.is_segmented());
    reader.start_segments(None);
    let streams: Vec<i16> = std::iter::from_fn(|| reader.next_frame(&mut buf).unwrap())
        .map(|f| f.stream)
        .collect();
    assert_eq!(streams, [2, 3]);
    assert!(buf.is_empty());
}

#[test]
fn a_large_frame_spans_segments_that_are_not_self_contained() {
    let (op, body) = encode_body_v(
        &Request::Prepare(Prepare::new("x".repeat(300_000))),
        ProtocolVersion::V5,
    );
    let big = frame(ProtocolVersion::V5, 0, 9, op, &body);
    let mut wire = BytesMut::new();
    let mut writer = SegmentWriter::new(None);
    writer.push_frame(&mut wire, &big);
    writer.push_frame(&mut wire, &options_frame(10));
    writer.seal(&mut wire);
    // Three segments carry the big frame (not self-contained), a fourth the small one.
    let mut reader = segmented_reader();
    let mut flags = Vec::new();
    let mut copy = wire.clone();
    while let Some(s) = decode_segment(&mut copy, None).unwrap() {
        flags.push(s.self_contained);
    }
    assert_eq!(flags, [false, false, false, true]);
    // Fed a byte at a time, the reader gives the same two frames.
    let mut buf = BytesMut::new();
    let mut frames = Vec::new();
    for b in wire.iter() {
        buf.put_u8(*b);
        while let Some(f) = reader.next_frame(&mut buf).unwrap() {
            frames.push(f);
        }
    }
    assert_eq!(frames.len(), 2);
    assert_eq!(
        frames[0].decode(None),
        Ok(Request::Prepare(Prepare::new("x".repeat(300_000))))
    );
    assert_eq!(frames[1].stream, 10);
}

#[test]
fn segments_that_break_the_framing_rules_are_fatal() {
    let frame = options_frame(1);
    // A self-contained segment ending inside a frame.
    let mut buf = segment_of(&frame[..5], true);
    assert_eq!(
        segmented_reader().next_frame(&mut buf),
        Err(ReadError::Segment(
            SegmentError::PartialFrameInSelfContainedSegment { pending: 5 }
        ))
    );
    // A self-contained segment in the middle of a large frame's run.
    let mut buf = segment_of(&frame[..5], false);
    buf.extend_from_slice(&segment_of(&frame, true));
    assert_eq!(
        segmented_reader().next_frame(&mut buf),
        Err(ReadError::Segment(
            SegmentError::SelfContainedInsideLargeFrame { pending: 5 }
        ))
    );
    // A frame announcing more than the limit is refused from its first segment.
    let mut huge = frame.clone();
    huge[5..9].copy_from_slice(&u32::MAX.to_be_bytes());
    let mut buf = segment_of(&huge, false);
    assert!(matches!(
        segmented_reader().next_frame(&mut buf),
        Err(ReadError::Frame(FrameError::FrameTooLarge { .. }))
    ));
    // Empty segments carry nothing and break nothing.
    let mut buf = segment_of(&[], true);
    buf.extend_from_slice(&segment_of(&[], false));
    buf.extend_from_slice(&segment_of(&frame, true));
    let f = segmented_reader().next_frame(&mut buf).unwrap().unwrap();
    assert_eq!(f.stream, 1);
}

#[test]
fn segment_errors_answer_a_v5_protocol_error_on_stream_0() {
    let e = ReadError::from(SegmentError::PayloadCrcMismatch {
        read: 1,
        computed: 2,
    });
    let mut out = BytesMut::new();
    e.encode_response(&mut out);
    let d = decode_response(&mut out.freeze(), None).unwrap();
    assert_eq!((d.version_byte, d.stream), (0x85, 0));
    assert_eq!(
        d.response,
        Response::Error(ErrorResponse::new(
            ErrorKind::Protocol,
            "Invalid, unrecoverable CRC mismatch detected in frame body. Read 1, Computed 2"
        ))
    );
}

#[test]
fn the_writer_fills_segments_with_whole_frames() {
    let frame = vec![0xAB; 50_000];
    let mut writer = SegmentWriter::new(None);
    let mut wire = BytesMut::new();
    for _ in 0..3 {
        writer.push_frame(&mut wire, &frame);
    }
    assert_eq!(
        writer.pending_len(),
        50_000,
        "two frames fit one segment, not three"
    );
    writer.seal(&mut wire);
    assert_eq!(writer.pending_len(), 0);
    let mut sizes = Vec::new();
    while let Some(s) = decode_segment(&mut wire, None).unwrap() {
        assert!(s.self_contained);
        sizes.push(s.payload.len());
    }
    assert_eq!(sizes, [100_000, 50_000]);
    // Nothing pending, nothing sealed.
    writer.seal(&mut wire);
    assert!(wire.is_empty());
}

// ---------------------------------------------------------------------------------------
// v5 messages.

#[test]
fn v5_query_flags_are_an_int_with_keyspace_and_now_in_seconds() {
    let mut body = BytesMut::new();
    put_long_string(&mut body, "SELECT * FROM t").unwrap();
    body.put_u16(0x0001); // ONE
    body.put_u32(0x0000_0180 | 0x04); // page size, keyspace, now in seconds
    body.put_i32(100);
    put_string(&mut body, "ks").unwrap();
    body.put_i32(1_700_000_000);
    let Ok(Request::Query(q)) = body_of(ProtocolVersion::V5, Opcode::Query, &body) else {
        panic!()
    };
    assert_eq!(q.params.page_size, Some(100));
    assert_eq!(q.params.keyspace.as_deref(), Some("ks"));
    assert_eq!(q.params.now_in_seconds, Some(1_700_000_000));
    // In v4 the same bytes are a flags byte of 0x00 and three more garbage bytes: no keyspace.
    let Ok(Request::Query(q)) = body_of(ProtocolVersion::V4, Opcode::Query, &body) else {
        panic!()
    };
    assert_eq!((q.params.keyspace, q.params.page_size), (None, None));
}

#[test]
fn v5_prepare_execute_and_batch_carry_their_new_fields() {
    let mut body = BytesMut::new();
    put_long_string(&mut body, "SELECT 1").unwrap();
    body.put_u32(0x01);
    put_string(&mut body, "other").unwrap();
    assert_eq!(
        body_of(ProtocolVersion::V5, Opcode::Prepare, &body),
        Ok(Request::Prepare(Prepare {
            query: "SELECT 1".into(),
            keyspace: Some("other".into()),
        }))
    );
    // Flags without the keyspace bit: none follows.
    let mut body = BytesMut::new();
    put_long_string(&mut body, "SELECT 1").unwrap();
    body.put_u32(0);
    assert_eq!(
        body_of(ProtocolVersion::V5, Opcode::Prepare, &body),
        Ok(Request::Prepare(Prepare::new("SELECT 1")))
    );
    let mut body = BytesMut::from(&[0, 2, 0xAA, 0xBB, 0, 3, 1, 2, 3][..]);
    body.put_u16(0x0004);
    body.put_u32(0);
    let Ok(Request::Execute(e)) = body_of(ProtocolVersion::V5, Opcode::Execute, &body) else {
        panic!()
    };
    assert_eq!(&e.id[..], &[0xAA, 0xBB]);
    assert_eq!(e.result_metadata_id.as_deref(), Some(&[1u8, 2, 3][..]));
    assert_eq!(e.params.consistency, Consistency::Quorum);
    let batch = Request::Batch(Batch {
        batch_type: BatchType::Unlogged,
        statements: vec![BatchStatement {
            query: BatchQuery::Query("INSERT INTO t (k) VALUES (1)".into()),
            values: BoundValues::default(),
        }],
        consistency: Consistency::One,
        serial_consistency: None,
        timestamp: Some(7),
        keyspace: Some("ks".into()),
        now_in_seconds: Some(42),
    });
    let (op, body) = encode_body_v(&batch, ProtocolVersion::V5);
    // ... <consistency> <flags: int 0x1A0> <timestamp> <keyspace> <now>
    let tail = &body[body.len() - (2 + 4 + 8 + 4 + 4)..];
    assert_eq!(&tail[..6], &[0, 1, 0, 0, 0x01, 0xA0]);
    assert_eq!(body_of(ProtocolVersion::V5, op, &body), Ok(batch));
}

fn encode_v5(response: &Response) -> BytesMut {
    let mut out = BytesMut::new();
    ResponseEncoder::new(ProtocolVersion::V5, Some(Compression::Lz4))
        .encode(&mut out, 5, response)
        .unwrap();
    out
}

#[test]
fn v5_bodies_are_never_compressed_themselves() {
    let rows = Response::Result(ResultBody::SetKeyspace("k".repeat(1000)));
    let out = encode_v5(&rows);
    assert_eq!(out[1] & FrameFlags::COMPRESSION, 0);
    assert_eq!(out.len(), HEADER_LEN + 4 + 2 + 1000);
    // And a v5 request's compression flag is ignored: the body is read as it is.
    let f = decode_one(&frame(
        ProtocolVersion::V5,
        FrameFlags::COMPRESSION,
        1,
        Opcode::Options,
        &[],
    ));
    assert_eq!(f.decode(None), Ok(Request::Options));
}

#[test]
fn v5_prepared_and_rows_carry_result_metadata_ids() {
    let columns = vec![ColumnSpec::new("ks", "t", "d", CqlType::Duration)];
    let id = RowsMetadata::metadata_id(&columns);
    assert_eq!(id.len(), 16);
    assert_eq!(id, RowsMetadata::metadata_id(&columns.clone()), "stable");
    assert_ne!(id, RowsMetadata::metadata_id(&[]));
    let renamed = vec![ColumnSpec::new("ks", "t", "e", CqlType::Duration)];
    assert_ne!(id, RowsMetadata::metadata_id(&renamed));
    let prepared = Response::Result(ResultBody::Prepared(Prepared {
        id: Bytes::from_static(&[1; 16]),
        result_metadata_id: id.clone(),
        metadata: PreparedMetadata::default(),
        result_metadata: RowsMetadata::new(columns.clone()),
    }));
    let out = encode_v5(&prepared);
    // kind, id, then the result metadata id.
    assert_eq!(&out[HEADER_LEN + 4 + 2 + 16..][..2], &[0, 16]);
    assert_eq!(&out[HEADER_LEN + 4 + 2 + 16 + 2..][..16], &id[..]);
    let d = decode_response(&mut out.freeze(), None).unwrap();
    assert_eq!(d.response, prepared);
    // Rows: Metadata_changed (0x0008), the new id after the paging state, then the specs.
    let mut metadata = RowsMetadata::new(columns);
    metadata.paging_state = Some(Bytes::from_static(b"p"));
    metadata.new_metadata_id = Some(id.clone());
    let rows = Response::Result(ResultBody::Rows(Rows {
        metadata,
        rows: vec![vec![Some(Bytes::from_static(&[2, 4, 6]))]],
    }));
    let out = encode_v5(&rows);
    let body = &out[HEADER_LEN..];
    assert_eq!(&body[4..8], &(0x0001 | 0x0002 | 0x0008i32).to_be_bytes());
    assert_eq!(&body[12..17], &[0, 0, 0, 1, b'p']);
    assert_eq!(&body[17..19], &[0, 16]);
    // duration is 0x0015 in v5, after ks, t and the column name.
    let spec = &body[19 + 16..];
    assert_eq!(&spec[2 + 2 + 2 + 1 + 2 + 1..][..2], &[0x00, 0x15]);
    assert_eq!(
        decode_response(&mut out.freeze(), None).unwrap().response,
        rows
    );
    // Before v5 the flag and the id are not sent.
    let v4 = encode(ProtocolVersion::V4, &rows);
    assert_eq!(
        &v4[HEADER_LEN + 4..][..4],
        &(0x0001 | 0x0002i32).to_be_bytes()
    );
}

#[test]
fn v5_failures_carry_a_reason_map_padded_to_the_failure_count() {
    let error = |reasons: Vec<(std::net::IpAddr, u16)>| {
        Response::Error(ErrorResponse::new(
            ErrorKind::ReadFailure {
                consistency: Consistency::Quorum,
                received: 1,
                block_for: 2,
                num_failures: 2,
                reasons,
                data_present: false,
            },
            "m",
        ))
    };
    let out = encode_v5(&error(vec![(
        "10.0.0.1".parse().unwrap(),
        failure_reason::TIMEOUT,
    )]));
    let body = &out[HEADER_LEN + 4 + 3..];
    assert_eq!(
        body,
        &[
            0, 4, 0, 0, 0, 1, 0, 0, 0, 2, // QUORUM, received, block_for
            0, 0, 0, 2, // two entries
            4, 10, 0, 0, 1, 0, 2, // 10.0.0.1: TIMEOUT
            4, 0, 0, 0, 0, 0, 0, // an unknown replica: 0.0.0.0, UNKNOWN
            0, // data_present
        ]
    );
    // v4 sends the count.
    let v4 = encode(ProtocolVersion::V4, &error(Vec::new()));
    assert_eq!(&v4[HEADER_LEN + 4 + 3 + 10..], &[0, 0, 0, 2, 0]);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn v5_request_bodies_round_trip(
        request in arb_request(),
        keyspace in proptest::option::of("[a-z_]{1,12}"),
        now in proptest::option::of(any::<i32>()),
        metadata_id in proptest::collection::vec(any::<u8>(), 0..17),
    ) {
        let mut request = normalize(request);
        match &mut request {
            Request::Query(q) => {
                q.params.keyspace = keyspace;
                q.params.now_in_seconds = now;
            }
            Request::Prepare(p) => p.keyspace = keyspace,
            Request::Execute(e) => {
                e.result_metadata_id = Some(Bytes::from(metadata_id));
                e.params.now_in_seconds = now;
            }
            Request::Batch(b) => {
                b.keyspace = keyspace;
                b.now_in_seconds = now;
            }
            _ => {}
        }
        let (op, body) = encode_body_v(&request, ProtocolVersion::V5);
        let f = decode_one(&frame(ProtocolVersion::V5, 0, 3, op, &body));
        prop_assert_eq!(f.decode(None), Ok(request));
    }

    #[test]
    fn segments_round_trip(
        payload in proptest::collection::vec(any::<u8>(), 0..3000),
        repeat in 1usize..40,
        self_contained in any::<bool>(),
        lz4 in any::<bool>(),
    ) {
        let payload = payload.repeat(repeat);
        prop_assume!(payload.len() <= SEGMENT_PAYLOAD_MAX);
        let compression = lz4.then_some(Compression::Lz4);
        let mut buf = BytesMut::new();
        encode_segment(&mut buf, &payload, self_contained, compression);
        let s = decode_segment(&mut buf, compression).unwrap().unwrap();
        prop_assert!(buf.is_empty());
        prop_assert_eq!(s.self_contained, self_contained);
        prop_assert_eq!(&s.payload[..], &payload[..]);
    }

    #[test]
    fn frames_survive_any_packing_and_any_split(
        sizes in proptest::collection::vec(0usize..200_000, 1..6),
        chunk in 1usize..70_000,
        lz4 in any::<bool>(),
    ) {
        let compression = lz4.then_some(Compression::Lz4);
        let frames: Vec<BytesMut> = sizes
            .iter()
            .enumerate()
            .map(|(i, &n)| {
                let (op, body) = encode_body_v(
                    &Request::Prepare(Prepare::new("q".repeat(n))),
                    ProtocolVersion::V5,
                );
                frame(ProtocolVersion::V5, 0, i as i16, op, &body)
            })
            .collect();
        let mut writer = SegmentWriter::new(compression);
        let mut wire = BytesMut::new();
        for f in &frames {
            writer.push_frame(&mut wire, f);
        }
        writer.seal(&mut wire);
        let mut reader = FrameReader::new(FRAME_LEN_MAX_DEFAULT);
        reader.start_segments(compression);
        let mut buf = BytesMut::new();
        let mut got = Vec::new();
        for piece in wire.chunks(chunk) {
            buf.extend_from_slice(piece);
            while let Some(f) = reader.next_frame(&mut buf).unwrap() {
                got.push(f.stream);
            }
        }
        prop_assert!(buf.is_empty());
        prop_assert_eq!(got, (0..frames.len() as i16).collect::<Vec<_>>());
    }

    #[test]
    fn arbitrary_bytes_never_panic_the_segment_decoder(
        bytes in proptest::collection::vec(any::<u8>(), 0..300),
        lz4 in any::<bool>(),
        max in 0u32..300,
    ) {
        let compression = lz4.then_some(Compression::Lz4);
        let mut reader = FrameReader::new(max);
        reader.start_segments(compression);
        let mut buf = BytesMut::from(&bytes[..]);
        for _ in 0..bytes.len() + 1 {
            match reader.next_frame(&mut buf) {
                Ok(Some(f)) => {
                    let _ = f.decode(compression);
                }
                Ok(None) => break,
                Err(e) => {
                    let mut out = BytesMut::new();
                    e.encode_response(&mut out);
                    prop_assert!(decode_response(&mut out.freeze(), None).is_ok());
                    break;
                }
            }
        }
    }

    #[test]
    fn valid_segments_around_arbitrary_frames_never_panic(
        payload in proptest::collection::vec(any::<u8>(), 0..300),
        self_contained in any::<bool>(),
        lz4 in any::<bool>(),
    ) {
        let compression = lz4.then_some(Compression::Lz4);
        let mut buf = BytesMut::new();
        encode_segment(&mut buf, &payload, self_contained, compression);
        let mut reader = FrameReader::new(FRAME_LEN_MAX_DEFAULT);
        reader.start_segments(compression);
        for _ in 0..payload.len() + 2 {
            match reader.next_frame(&mut buf) {
                Ok(Some(f)) => {
                    let _ = f.decode(None);
                }
                Ok(None) | Err(_) => break,
            }
        }
    }
}
