//! Arbitrary bytes as the SASL PLAIN token of an AUTH_RESPONSE
//! (`mosaic_cql::auth::sasl::decode_plain`): never panics, and what it accepts is a user
//! and a password that encode back (with an empty authorization id) to a token decoding
//! to the same pair.

use mosaic_cql::auth::sasl::decode_plain;

/// The target: must return (never panic) for any `data`.
pub fn run(data: &[u8]) {
    if let Ok((user, password)) = decode_plain(data) {
        assert!(!user.is_empty() && !password.is_empty());
        let token = format!("\0{user}\0{password}");
        if !user.contains('\0') && !password.contains('\0') {
            assert_eq!(decode_plain(token.as_bytes()), Ok((user, password)));
        }
    }
}
