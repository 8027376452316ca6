//! Wiring authentication into a node: the statement layer's settings, role lookups for
//! the authenticator, and the superuser role created at start.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Result;
use mosaic_cql::auth::{AuthSettings, HashFuture, PasswordHasher};
use mosaic_cql::coordinator::Coordinator;
use mosaic_cql::frame::{ErrorKind, ErrorResponse};
use mosaic_cql::processor::Processor;

use super::config::AuthConfig;
use super::password::{hash_password, RoleLookup};

/// bcrypt on the blocking pool.
struct Bcrypt {
    cost: u32,
}

impl PasswordHasher for Bcrypt {
    fn hash(&self, password: String) -> HashFuture {
        let cost = self.cost;
        Box::pin(async move {
            hash_password(password, cost).await.map_err(|e| {
                ErrorResponse::new(ErrorKind::Server, format!("hashing the password: {e}"))
            })
        })
    }
}

/// The statement layer's settings for `config`.
pub fn auth_settings(config: &AuthConfig) -> AuthSettings {
    AuthSettings {
        enabled: config.enabled(),
        superuser: config.superuser.clone(),
        permissions_validity_ms: config.permissions_validity_ms,
        hasher: Arc::new(Bcrypt {
            cost: config.bcrypt_cost,
        }),
    }
}

/// Role lookups through `processor`.
pub fn role_lookup<C: Coordinator>(processor: Arc<Processor<C>>) -> RoleLookup {
    Arc::new(move |name: String| {
        let processor = processor.clone();
        Box::pin(async move { processor.role(&name).await })
    })
}

/// Whether a role is a superuser, itself or through a role granted to it (Cassandra's
/// `Roles.hasSuperuserStatus`), from the permissions cache while it is valid.
pub type SuperuserCheck = Arc<
    dyn Fn(String) -> Pin<Box<dyn Future<Output = Result<bool, ErrorResponse>> + Send>>
        + Send
        + Sync,
>;

/// Superuser checks through `processor`.
pub fn superuser_check<C: Coordinator>(processor: Arc<Processor<C>>) -> SuperuserCheck {
    Arc::new(move |name: String| {
        let processor = processor.clone();
        Box::pin(async move { Ok(processor.authorization(&name).await?.superuser) })
    })
}

/// Tries for this long at start before going on in the background.
const SUPERUSER_WAIT: Duration = Duration::from_secs(10);
/// Pause between tries.
const SUPERUSER_RETRY: Duration = Duration::from_millis(500);

/// Creates the superuser role if it is missing (never overwriting one that exists: see
/// `Processor::insert_default_superuser`). Tries for [`SUPERUSER_WAIT`] (replicas may
/// not be up yet), then keeps trying in the background.
pub async fn ensure_superuser<C: Coordinator>(
    processor: Arc<Processor<C>>,
    config: &AuthConfig,
    password: String,
) -> Result<()> {
    let hash = hash_password(password, config.bcrypt_cost)
        .await
        .map_err(anyhow::Error::msg)?;
    let name = config.superuser.clone();
    let attempt = {
        let processor = processor.clone();
        let name = name.clone();
        let hash = hash.clone();
        move || {
            let processor = processor.clone();
            let name = name.clone();
            let hash = hash.clone();
            async move {
                if processor.role(&name).await?.is_some() {
                    return Ok::<bool, ErrorResponse>(false);
                }
                processor.insert_default_superuser(&name, &hash).await?;
                Ok(true)
            }
        }
    };
    let started = tokio::time::Instant::now();
    loop {
        match attempt().await {
            Ok(created) => {
                if created {
                    tracing::info!(target: "mosaic::auth", role = %name, "created the superuser role");
                }
                return Ok(());
            }
            Err(e) if started.elapsed() < SUPERUSER_WAIT => {
                tracing::debug!(target: "mosaic::auth", error = %e.message, "superuser setup will retry");
                tokio::time::sleep(SUPERUSER_RETRY).await;
            }
            Err(e) => {
                tracing::warn!(target: "mosaic::auth", error = %e.message, "superuser setup goes on in the background");
                tokio::spawn(async move {
                    // Bounded: a node that cannot write its superuser for an hour logs
                    // and stops trying (a restart tries again).
                    for _ in 0..7200 {
                        tokio::time::sleep(SUPERUSER_RETRY).await;
                        if attempt().await.is_ok() {
                            return;
                        }
                    }
                    tracing::error!(target: "mosaic::auth", "could not create the superuser role");
                });
                return Ok(());
            }
        }
    }
}
