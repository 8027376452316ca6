//! Arbitrary bytes as a peer's internode byte stream: the frame decoder must never panic,
//! must consume only whole frames, and a decoded envelope must re-encode to a frame that
//! decodes to the same envelope (the codec round-trips whatever it accepts). A payload with
//! a valid checksum is also tried, so the fuzzer reaches the message decoder itself.

use mosaic_cluster::message::{decode_frame, decode_payload, encode_frame};

/// The target: must return (never panic) for any `data`.
pub fn run(data: &[u8]) {
    let mut rest = data;
    while let Ok(Some((env, used))) = decode_frame(rest) {
        assert!(used > 0 && used <= rest.len());
        let again = encode_frame(&env);
        let back = decode_frame(&again).ok().flatten().map(|(e, _)| e);
        assert_eq!(back.as_ref(), Some(&env));
        rest = &rest[used..];
    }
    if let Ok(env) = decode_payload(data, crc32c::crc32c(data)) {
        let again = encode_frame(&env);
        assert!(decode_frame(&again).ok().flatten().is_some());
    }
}
