//! Arbitrary bytes as a v5 client's byte stream past the handshake: the segment decoder
//! (plain and LZ4) and the frames and request bodies inside must never panic; a partial
//! segment consumes nothing, every error turns into an ERROR frame, and segments the
//! server's own writer packs decode back to the frames it was given.

use bytes::BytesMut;
use mosaic_cql::frame::{decode_segment, Compression, FrameReader, SegmentWriter};

/// The target: must return (never panic) for any `data`.
pub fn run(data: &[u8]) {
    let Some((&selector, stream)) = data.split_first() else {
        return;
    };
    let compression = (selector & 1 == 1).then_some(Compression::Lz4);
    // A small frame limit now and then, to exercise the too-large path on short inputs.
    let max = if selector & 2 == 0 {
        256 * 1024 * 1024
    } else {
        u32::from(selector) * 4
    };

    // One segment at a time: a partial one is not consumed, a whole one is.
    let mut buf = BytesMut::from(stream);
    while let Ok(Some(_)) = decode_segment(&mut buf, compression) {}
    let before = buf.len();
    if let Ok(None) = decode_segment(&mut buf, compression) {
        assert_eq!(buf.len(), before, "a partial segment is not consumed");
    }

    // The connection's view: frames out of segments, their bodies decoded.
    let mut reader = FrameReader::new(max);
    reader.start_segments(compression);
    let mut buf = BytesMut::from(stream);
    let mut out = BytesMut::new();
    // Bounded: each frame or segment consumed shrinks `buf`.
    for _ in 0..=stream.len() {
        match reader.next_frame(&mut buf) {
            Ok(Some(frame)) => {
                if let Err(e) = frame.decode(compression) {
                    let _ = e.to_error_response();
                }
            }
            Ok(None) => break,
            Err(e) => {
                e.encode_response(&mut out);
                assert!(
                    out.len() >= 9 + 6,
                    "an ERROR frame has a header, a code and a message"
                );
                break;
            }
        }
    }

    // The writer's side: the input cut into frames-sized pieces, packed, read back whole.
    let mut writer = SegmentWriter::new(compression);
    let mut wire = BytesMut::new();
    let pieces: Vec<&[u8]> = stream.chunks(usize::from(selector) * 97 + 1).collect();
    for piece in &pieces {
        writer.push_frame(&mut wire, piece);
    }
    writer.seal(&mut wire);
    let mut payload = Vec::new();
    while let Some(segment) = decode_segment(&mut wire, compression).unwrap() {
        payload.extend_from_slice(&segment.payload);
    }
    assert!(wire.is_empty(), "the writer's segments decode whole");
    assert_eq!(
        payload, stream,
        "segments carry the frames unchanged, in order"
    );
}
