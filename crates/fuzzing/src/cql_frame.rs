//! Arbitrary bytes as a client's byte stream: the frame decoder and every request body
//! decoder (plain, LZ4, v3 and v4) must never panic, must consume whole frames only, and
//! every error must turn into an ERROR frame.

use bytes::BytesMut;
use mosaic_cql::frame::{decode_frame, Compression};

/// The target: must return (never panic) for any `data`.
pub fn run(data: &[u8]) {
    let Some((&selector, stream)) = data.split_first() else {
        return;
    };
    // A small limit now and then, to exercise the too-large path on short inputs.
    let max = if selector & 1 == 0 {
        256 * 1024 * 1024
    } else {
        u32::from(selector) * 4
    };
    let mut buf = BytesMut::from(stream);
    let mut out = BytesMut::new();
    loop {
        let before = buf.len();
        match decode_frame(&mut buf, max) {
            Ok(Some(frame)) => {
                assert!(buf.len() < before, "a frame consumes its header at least");
                for compression in [None, Some(Compression::Lz4)] {
                    if let Err(e) = frame.decode(compression) {
                        let _ = e.to_error_response();
                    }
                }
            }
            Ok(None) => {
                assert_eq!(buf.len(), before, "a partial frame is not consumed");
                break;
            }
            Err(e) => {
                assert_eq!(buf.len(), before, "errors consume nothing");
                e.encode_response(&mut out);
                assert!(
                    out.len() >= 8 + 6,
                    "an ERROR frame has a header, a code and a message"
                );
                break;
            }
        }
    }
}
