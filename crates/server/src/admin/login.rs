//! Who may change state through the admin endpoint when the node checks passwords.
//!
//! With `[auth] authenticator = "password"`, a request that changes state (anything but GET
//! and HEAD: flush, compact, repair, `hr/optimize`, and the topology commands to come)
//! carries HTTP Basic credentials of a superuser role, as `nodetool` needs JMX credentials
//! on a node with JMX authentication. They are checked by the CQL port's
//! [`PasswordAuthenticator`] — the same `system_auth.roles`, bcrypt hashes, credentials
//! cache and per-address limit on failed logins, so guessing through the admin port costs
//! the same as through the CQL port and draws on the same bucket — and the role must be a
//! superuser, itself or through a role granted to it. Answers: no or unreadable or wrong
//! credentials → 401 with `WWW-Authenticate: Basic`; a role that is not a superuser → 403.
//! Reads (`/status`, `/stats`, `/metrics`) stay open, as they do without authentication.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::Response;
use base64::Engine as _;

use crate::auth::{AuthStep, PasswordAuthenticator, SuperuserCheck};

/// The challenge of a 401.
const CHALLENGE: &str = "Basic realm=\"mosaic admin\", charset=\"UTF-8\"";

/// The longest `Authorization` header read (a user name and password, in base64).
const AUTHORIZATION_BYTES_MAX: usize = 4096;

/// Checks the credentials of state-changing admin requests.
pub struct AdminLogin {
    authenticator: Arc<PasswordAuthenticator>,
    superuser: SuperuserCheck,
}

impl AdminLogin {
    /// Logins checked by `authenticator`, superusers found by `superuser`.
    pub fn new(authenticator: Arc<PasswordAuthenticator>, superuser: SuperuserCheck) -> AdminLogin {
        AdminLogin {
            authenticator,
            superuser,
        }
    }

    /// `Ok(role)` when the request from `peer` carries a superuser's credentials, else the
    /// answer to send.
    pub async fn admit(&self, peer: SocketAddr, headers: &HeaderMap) -> Result<String, Response> {
        let Some(value) = headers.get(header::AUTHORIZATION) else {
            return Err(unauthorized(
                "this node checks passwords: a request that changes state needs a superuser's \
                 credentials (HTTP Basic; `mosaic … -u ROLE` with MOSAIC_PASSWORD)"
                    .to_owned(),
            ));
        };
        let credentials = basic_credentials(value);
        let user = credentials.as_ref().map(|(u, _)| u.clone()).ok();
        let role = match self.authenticator.login(peer, credentials).await {
            AuthStep::Success {
                user: Some(role), ..
            } => role,
            AuthStep::Failed(message) => {
                tracing::warn!(target: "mosaic::admin", %peer, ?user, %message, "admin login refused");
                return Err(unauthorized(message));
            }
            // A password check always names its role; anything else is not a login.
            AuthStep::Success { user: None, .. } | AuthStep::Challenge(_) => {
                return Err(unauthorized("the credentials were not accepted".to_owned()))
            }
        };
        match (self.superuser)(role.clone()).await {
            Ok(true) => Ok(role),
            Ok(false) => {
                tracing::warn!(target: "mosaic::admin", %peer, %role, "admin request refused: not a superuser");
                Err(super::error(
                    StatusCode::FORBIDDEN,
                    format!("{role} is not a superuser: only a superuser may change state through the admin endpoint"),
                ))
            }
            Err(e) => Err(super::error(
                StatusCode::SERVICE_UNAVAILABLE,
                format!("could not read {role}'s roles: {}", e.message),
            )),
        }
    }
}

/// A 401 with the Basic challenge.
fn unauthorized(message: String) -> Response {
    let mut answer = super::error(StatusCode::UNAUTHORIZED, message);
    answer.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        HeaderValue::from_static(CHALLENGE),
    );
    answer
}

/// The user name and password of an `Authorization: Basic …` header (RFC 7617), or why it
/// cannot be read.
pub fn basic_credentials(value: &HeaderValue) -> Result<(String, String), String> {
    let bad = |why: &str| Err(format!("unreadable Authorization header: {why}"));
    if value.len() > AUTHORIZATION_BYTES_MAX {
        return bad("too long");
    }
    let Ok(text) = value.to_str() else {
        return bad("not ASCII");
    };
    let Some((scheme, encoded)) = text.trim().split_once(' ') else {
        return bad("expected `Basic` and credentials");
    };
    if !scheme.eq_ignore_ascii_case("basic") {
        return bad("only the Basic scheme is accepted");
    }
    let Ok(decoded) = base64::engine::general_purpose::STANDARD.decode(encoded.trim()) else {
        return bad("the credentials are not base64");
    };
    let Ok(pair) = String::from_utf8(decoded) else {
        return bad("the credentials are not UTF-8");
    };
    match pair.split_once(':') {
        Some((user, password)) => Ok((user.to_owned(), password.to_owned())),
        None => bad("expected user:password"),
    }
}

/// The `Authorization` header value for `user` and `password`.
pub fn basic_header(user: &str, password: &str) -> String {
    let encoded = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
    format!("Basic {encoded}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn basic_credentials_round_trip_and_malformed_ones_are_refused() {
        let v = HeaderValue::from_str(&basic_header("cassandra", "p:w é")).unwrap();
        assert_eq!(
            basic_credentials(&v),
            Ok(("cassandra".to_owned(), "p:w é".to_owned()))
        );
        let lower = HeaderValue::from_static("basic YTpi");
        assert_eq!(basic_credentials(&lower), Ok(("a".into(), "b".into())));
        for bad in [
            "Bearer abc",
            "Basic",
            "Basic !!!",
            "Basic YWI=", // "ab": no colon
            "Basic /w==", // not UTF-8
        ] {
            let v = HeaderValue::from_static(bad);
            assert!(basic_credentials(&v).is_err(), "{bad}");
        }
        let long = HeaderValue::from_str(&format!("Basic {}", "A".repeat(5000))).unwrap();
        assert!(basic_credentials(&long).is_err());
    }
}
