//! Client authentication: what a connection does between STARTUP and READY.
//!
//! Owns the [`Authenticator`] seam. Cassandra's flow is: STARTUP → either READY (no
//! authentication) or AUTHENTICATE naming the authenticator class, then AUTH_RESPONSE /
//! AUTH_CHALLENGE rounds of SASL tokens until AUTH_SUCCESS (or a BadCredentials error).
//! [`AllowAll`] answers READY at once, like Cassandra's `AllowAllAuthenticator`;
//! [`PasswordAuthenticator`] (`[auth] authenticator = "password"`) answers AUTHENTICATE
//! and checks a SASL PLAIN token against `system_auth.roles` ([`password`]). The
//! connection state machine in `net` drives the rounds; the role a connection logs in as
//! goes into its session, which the statement layer authorizes against
//! (`mosaic_cql::auth`). [`bootstrap`] creates the superuser role at start.

mod bootstrap;
mod config;
mod password;

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;

use bytes::Bytes;

pub use bootstrap::{
    auth_settings, ensure_superuser, role_lookup, superuser_check, SuperuserCheck,
};
pub use config::{AuthConfig, SUPERUSER_PASSWORD_ENV};
pub use password::PasswordAuthenticator;

/// How a connection starts after STARTUP.
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
#[allow(dead_code)] // Challenge: no mechanism here needs a second round.
pub enum AuthStep {
    /// Send AUTH_CHALLENGE with this token and wait for another AUTH_RESPONSE.
    Challenge(Option<Bytes>),
    /// Send AUTH_SUCCESS with `token`: the connection is ready, logged in as `user`.
    Success {
        /// The token of AUTH_SUCCESS.
        token: Option<Bytes>,
        /// The role logged in (`None`: anonymous).
        user: Option<String>,
    },
    /// Send a BadCredentials error with this message.
    Failed(String),
}

/// A connection's SASL exchange (Cassandra's `SaslNegotiator`).
pub trait SaslNegotiator: Send + Sync {
    /// Evaluates the client's token. The connection reads nothing else until the step is
    /// decided; expensive checks (password hashing) run on the blocking pool.
    fn evaluate(&mut self, token: Option<Bytes>) -> Pin<Box<dyn Future<Output = AuthStep> + Send>>;
}

/// Decides how each new connection authenticates.
pub trait Authenticator: Send + Sync + 'static {
    /// Called once per connection, at STARTUP.
    fn start(self: Arc<Self>, peer: SocketAddr) -> AuthStart;
}

/// No authentication (Cassandra's `AllowAllAuthenticator`): every STARTUP gets READY.
#[derive(Clone, Copy, Debug, Default)]
pub struct AllowAll;

impl Authenticator for AllowAll {
    fn start(self: Arc<Self>, _peer: SocketAddr) -> AuthStart {
        AuthStart::Ready
    }
}
