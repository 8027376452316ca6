//! Client authentication: what a connection does between STARTUP and READY.
//!
//! Owns the [`Authenticator`] seam. Cassandra's flow is: STARTUP → either READY (no
//! authentication) or AUTHENTICATE naming the authenticator class, then AUTH_RESPONSE /
//! AUTH_CHALLENGE rounds of SASL tokens until AUTH_SUCCESS (or a BadCredentials error).
//! [`AllowAll`] answers READY at once, like Cassandra's `AllowAllAuthenticator`; a password
//! authenticator will implement [`Authenticator::start`] returning
//! [`AuthStart::Challenge`] with a PLAIN-mechanism [`SaslNegotiator`], and the connection
//! state machine in `net` already drives those rounds.

use std::net::SocketAddr;

use bytes::Bytes;

/// How a connection starts after STARTUP.
// `Challenge` (and AuthStep's variants) are built by the password authenticator, which is
// not written yet; the connection state machine that consumes them is in `net`.
#[allow(dead_code)]
pub enum AuthStart {
    /// No authentication needed: answer READY.
    Ready,
    /// Answer AUTHENTICATE naming `authenticator`, then feed AUTH_RESPONSE tokens to
    /// `negotiator`.
    Challenge {
        /// The class name drivers select their SASL mechanism by, e.g.
        /// `org.apache.cassandra.auth.PasswordAuthenticator`.
        authenticator: String,
        /// The per-connection SASL exchange.
        negotiator: Box<dyn SaslNegotiator>,
    },
}

/// One step of a SASL exchange.
#[derive(Clone, Debug, PartialEq, Eq)]
#[allow(dead_code)]
pub enum AuthStep {
    /// Send AUTH_CHALLENGE with this token and wait for another AUTH_RESPONSE.
    Challenge(Option<Bytes>),
    /// Send AUTH_SUCCESS with this token: the connection is ready.
    Success(Option<Bytes>),
    /// Send a BadCredentials error with this message.
    Failed(String),
}

/// A connection's SASL exchange (Cassandra's `SaslNegotiator`).
pub trait SaslNegotiator: Send + Sync {
    /// Evaluates the client's token. Runs on the connection's task: an implementation
    /// whose check is expensive (password hashing) should keep it short or hand it to a
    /// blocking thread.
    fn evaluate(&mut self, token: Option<&[u8]>) -> AuthStep;
}

/// Decides how each new connection authenticates.
pub trait Authenticator: Send + Sync + 'static {
    /// Called once per connection, at STARTUP.
    fn start(&self, peer: SocketAddr) -> AuthStart;
}

/// No authentication (Cassandra's `AllowAllAuthenticator`): every STARTUP gets READY.
#[derive(Clone, Copy, Debug, Default)]
pub struct AllowAll;

impl Authenticator for AllowAll {
    fn start(&self, _peer: SocketAddr) -> AuthStart {
        AuthStart::Ready
    }
}
