//! Password authentication (Cassandra's `PasswordAuthenticator`): SASL PLAIN checked
//! against `system_auth.roles`, bcrypt off the network threads, a short cache of
//! successful checks, and a per-address limit on failed logins.
//!
//! # Failed logins
//! Each client address has a token bucket of `login_failures_burst` failures, refilled by
//! one every `login_failure_refill_ms`. A failed login takes a token; while the bucket is
//! empty, that address's logins are refused with BadCredentials *without checking the
//! password* (so guessing costs no bcrypt time and learns nothing), until a token is
//! back. Successful logins take none. At most [`ADDRESSES_MAX`] addresses are tracked;
//! past that the full (idle) buckets are forgotten first.

use std::collections::HashMap;
use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use mosaic_cql::auth::sasl::{bad_credentials_message, decode_plain};
use mosaic_cql::auth::RoleRecord;
use mosaic_cql::frame::ErrorResponse;
use parking_lot::Mutex;

use super::{AuthConfig, AuthStart, AuthStep, Authenticator, SaslNegotiator};

/// The class drivers pick their PLAIN provider by.
pub const PASSWORD_AUTHENTICATOR: &str = "org.apache.cassandra.auth.PasswordAuthenticator";
/// Client addresses whose failures are tracked at most.
pub const ADDRESSES_MAX: usize = 65_536;
/// Successful checks remembered at most.
const CREDENTIALS_MAX: usize = 10_000;

/// Looks a role up (through the node's processor).
pub type RoleLookup = Arc<
    dyn Fn(
            String,
        )
            -> Pin<Box<dyn Future<Output = Result<Option<RoleRecord>, ErrorResponse>> + Send>>
        + Send
        + Sync,
>;

/// Failed-login buckets by client address.
struct Limiter {
    burst: f64,
    refill: Duration,
    buckets: Mutex<HashMap<IpAddr, (f64, Instant)>>,
}

impl Limiter {
    fn tokens(&self, bucket: (f64, Instant), now: Instant) -> f64 {
        let refilled =
            now.saturating_duration_since(bucket.1).as_secs_f64() / self.refill.as_secs_f64();
        (bucket.0 + refilled).min(self.burst)
    }

    /// Whether `ip` may try a login now.
    fn allows(&self, ip: IpAddr, now: Instant) -> bool {
        let buckets = self.buckets.lock();
        buckets.get(&ip).is_none_or(|b| self.tokens(*b, now) >= 1.0)
    }

    /// Takes a token from `ip`'s bucket.
    fn failed(&self, ip: IpAddr, now: Instant) {
        let mut buckets = self.buckets.lock();
        if buckets.len() >= ADDRESSES_MAX && !buckets.contains_key(&ip) {
            buckets.retain(|_, b| self.tokens(*b, now) < self.burst);
            if buckets.len() >= ADDRESSES_MAX {
                buckets.clear();
            }
        }
        let left = buckets
            .get(&ip)
            .map_or(self.burst, |b| self.tokens(*b, now));
        buckets.insert(ip, ((left - 1.0).max(0.0), now));
    }
}

/// The password authenticator.
pub struct PasswordAuthenticator {
    lookup: RoleLookup,
    limiter: Limiter,
    credentials_validity: Duration,
    /// Successful checks: (role, stored hash, keyed digest of the password) → when.
    credentials: Mutex<HashMap<(String, String, u64), Instant>>,
    /// The digest's random key (so the cache holds nothing a password can be found from
    /// offline).
    digest_key: std::collections::hash_map::RandomState,
}

impl PasswordAuthenticator {
    /// An authenticator reading roles with `lookup`.
    pub fn new(config: &AuthConfig, lookup: RoleLookup) -> Arc<PasswordAuthenticator> {
        Arc::new(PasswordAuthenticator {
            lookup,
            limiter: Limiter {
                burst: f64::from(config.login_failures_burst),
                refill: Duration::from_millis(config.login_failure_refill_ms),
                buckets: Mutex::new(HashMap::new()),
            },
            credentials_validity: Duration::from_millis(config.credentials_validity_ms),
            credentials: Mutex::new(HashMap::new()),
            digest_key: std::collections::hash_map::RandomState::new(),
        })
    }

    fn remembered(&self, key: &(String, String, u64)) -> bool {
        self.credentials
            .lock()
            .get(key)
            .is_some_and(|at| at.elapsed() < self.credentials_validity)
    }

    fn remember(&self, key: (String, String, u64)) {
        let mut map = self.credentials.lock();
        if map.len() >= CREDENTIALS_MAX {
            map.clear();
        }
        map.insert(key, Instant::now());
    }

    /// Checks one PLAIN token from `peer`: the role it logs in as, or the message.
    async fn check(self: Arc<Self>, peer: SocketAddr, token: Option<Bytes>) -> AuthStep {
        let credentials = decode_plain(token.as_deref().unwrap_or(&[])).map_err(|e| e.to_string());
        self.login(peer, credentials).await
    }

    /// Checks a user name and password from `peer` (`Err`: credentials that could not be
    /// read, a failed login with that message), under the same per-address limit on
    /// failed logins whichever port they came to (CQL or admin).
    pub async fn login(
        &self,
        peer: SocketAddr,
        credentials: Result<(String, String), String>,
    ) -> AuthStep {
        let ip = peer.ip();
        if !self.limiter.allows(ip, Instant::now()) {
            tracing::warn!(target: "mosaic::auth", %peer, "login refused: too many failed logins from this address");
            return AuthStep::Failed(format!(
                "Too many failed login attempts from {ip}; try again later"
            ));
        }
        let step = match credentials {
            Ok((user, password)) => self.verify(user, password).await,
            Err(message) => AuthStep::Failed(message),
        };
        if let AuthStep::Failed(message) = &step {
            self.limiter.failed(ip, Instant::now());
            // `?`: the message holds the client's user name, which may hold line breaks and
            // control characters; escaped, it cannot forge or break log lines.
            tracing::info!(target: "mosaic::auth", %peer, ?message, "login failed");
        }
        step
    }

    async fn verify(&self, user: String, password: String) -> AuthStep {
        let role = match (self.lookup)(user.clone()).await {
            Ok(role) => role,
            Err(e) => {
                return AuthStep::Failed(format!("Unable to perform authentication: {}", e.message))
            }
        };
        let Some(role) = role.filter(|r| r.salted_hash.is_some()) else {
            return AuthStep::Failed(bad_credentials_message(&user));
        };
        let hash = role.salted_hash.clone().unwrap_or_default();
        let key = (
            user.clone(),
            hash.clone(),
            std::hash::BuildHasher::hash_one(&self.digest_key, &password),
        );
        let matches = if self.remembered(&key) {
            true
        } else {
            let checked =
                tokio::task::spawn_blocking(move || bcrypt::verify(password.as_bytes(), &hash))
                    .await;
            matches!(checked, Ok(Ok(true)))
        };
        if !matches {
            return AuthStep::Failed(bad_credentials_message(&user));
        }
        self.remember(key);
        if !role.can_login {
            return AuthStep::Failed(format!("{user} is not permitted to log in"));
        }
        AuthStep::Success {
            token: None,
            user: Some(user),
        }
    }
}

impl Authenticator for PasswordAuthenticator {
    fn start(self: Arc<Self>, peer: SocketAddr) -> AuthStart {
        AuthStart::Challenge {
            authenticator: PASSWORD_AUTHENTICATOR.to_owned(),
            negotiator: Box::new(PlainNegotiator {
                authenticator: self,
                peer,
            }),
        }
    }
}

/// One connection's PLAIN exchange: a single AUTH_RESPONSE.
struct PlainNegotiator {
    authenticator: Arc<PasswordAuthenticator>,
    peer: SocketAddr,
}

impl SaslNegotiator for PlainNegotiator {
    fn evaluate(&mut self, token: Option<Bytes>) -> Pin<Box<dyn Future<Output = AuthStep> + Send>> {
        Box::pin(self.authenticator.clone().check(self.peer, token))
    }
}

/// A bcrypt hash of `password` (Cassandra's `$2a$` form) at `cost`, computed on the
/// blocking pool.
pub async fn hash_password(password: String, cost: u32) -> Result<String, String> {
    let salt: [u8; 16] = mosaic_env::rng::random_bytes();
    tokio::task::spawn_blocking(move || {
        bcrypt::hash_with_salt(password.as_bytes(), cost, salt)
            .map(|h| h.format_for_version(bcrypt::Version::TwoA))
    })
    .await
    .map_err(|e| e.to_string())?
    .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_address_is_refused_after_its_burst_and_recovers_with_time() {
        let limiter = Limiter {
            burst: 3.0,
            refill: Duration::from_millis(100),
            buckets: Mutex::new(HashMap::new()),
        };
        let ip: IpAddr = "10.0.0.1".parse().unwrap();
        let other: IpAddr = "10.0.0.2".parse().unwrap();
        let t0 = Instant::now();
        for _ in 0..3 {
            assert!(limiter.allows(ip, t0));
            limiter.failed(ip, t0);
        }
        assert!(!limiter.allows(ip, t0));
        assert!(limiter.allows(other, t0));
        assert!(limiter.allows(ip, t0 + Duration::from_millis(100)));
    }

    #[tokio::test]
    async fn hashes_are_cassandras_bcrypt_form_and_verify() {
        let h = hash_password("secret".into(), 4).await.unwrap();
        assert!(h.starts_with("$2a$04$"), "{h}");
        assert!(bcrypt::verify("secret", &h).unwrap());
        assert!(!bcrypt::verify("wrong", &h).unwrap());
    }
}
