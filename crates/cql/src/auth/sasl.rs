//! The SASL PLAIN token (RFC 4616) drivers send in AUTH_RESPONSE:
//! `[authzid] NUL authcid NUL passwd`, decoded as Cassandra's
//! `PlainTextSaslAuthenticator.decodeCredentials` does (from the end; the authorization
//! id is ignored), with its error texts. Never panics, whatever the bytes.

/// Cassandra's message for credentials that do not match.
pub fn bad_credentials_message(user: &str) -> String {
    format!("Provided username {user} and/or password are incorrect")
}

/// Why a PLAIN token was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PlainError {
    /// More than two NULs.
    #[error(
        "Credential format error: username or password is empty or contains NUL(\\0) character"
    )]
    Format,
    /// No or an empty password.
    #[error("Password must not be null")]
    NoPassword,
    /// No or an empty user name.
    #[error("Authentication ID must not be null")]
    NoUser,
}

/// The user name and password of a PLAIN token (user names and passwords that are not
/// UTF-8 are decoded lossily, so they match no role).
pub fn decode_plain(token: &[u8]) -> Result<(String, String), PlainError> {
    let mut parts = token.rsplit(|b| *b == 0);
    let last = parts.next().unwrap_or(&[]);
    let (pass, user) = match (parts.next(), parts.next(), parts.next()) {
        // No NUL at all: the whole token would be the authzid.
        (None, _, _) => return Err(PlainError::NoPassword),
        (Some(user_or_authzid), None, _) => (last, Some(user_or_authzid)),
        (Some(user), Some(_authzid), None) => (last, Some(user)),
        (Some(_), Some(_), Some(_)) => return Err(PlainError::Format),
    };
    // With one NUL, Cassandra reads the bytes before it as nothing: the user is what lies
    // between the two NULs, and a token `user NUL pass` has no user.
    let user = if token.iter().filter(|b| **b == 0).count() == 1 {
        None
    } else {
        user
    };
    if pass.is_empty() {
        return Err(PlainError::NoPassword);
    }
    let user = user.filter(|u| !u.is_empty()).ok_or(PlainError::NoUser)?;
    Ok((
        String::from_utf8_lossy(user).into_owned(),
        String::from_utf8_lossy(pass).into_owned(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_tokens_decode_as_cassandra_reads_them() {
        assert_eq!(
            decode_plain(b"\0bob\0pw"),
            Ok(("bob".to_owned(), "pw".to_owned()))
        );
        assert_eq!(
            decode_plain(b"admin\0bob\0pw"),
            Ok(("bob".to_owned(), "pw".to_owned()))
        );
        assert_eq!(decode_plain(b"bob\0pw"), Err(PlainError::NoUser));
        assert_eq!(decode_plain(b"\0bob\0"), Err(PlainError::NoPassword));
        assert_eq!(decode_plain(b"\0\0pw"), Err(PlainError::NoUser));
        assert_eq!(decode_plain(b""), Err(PlainError::NoPassword));
        assert_eq!(decode_plain(b"nonul"), Err(PlainError::NoPassword));
        assert_eq!(decode_plain(b"a\0b\0c\0d"), Err(PlainError::Format));
    }
}
