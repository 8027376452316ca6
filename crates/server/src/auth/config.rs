//! `[auth]`: how clients log in (see `docs/mosaic.example.toml`).

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

/// The environment variable holding the superuser's password.
pub const SUPERUSER_PASSWORD_ENV: &str = "MOSAIC_SUPERUSER_PASSWORD";

/// Which authenticator the CQL port uses.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AuthenticatorKind {
    /// No logins, no permission checks (Cassandra's `AllowAllAuthenticator`).
    #[default]
    AllowAll,
    /// SASL PLAIN against `system_auth.roles`, and permission checks (Cassandra's
    /// `PasswordAuthenticator` with `CassandraAuthorizer`).
    Password,
}

/// `[auth]`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AuthConfig {
    /// `"allow-all"` (the default) or `"password"`.
    pub authenticator: AuthenticatorKind,
    /// The superuser role created at start when missing.
    pub superuser: String,
    /// A file holding the superuser's password (its first line); the environment variable
    /// `MOSAIC_SUPERUSER_PASSWORD` wins over it. Empty: none.
    pub superuser_password_file: String,
    /// How long a role's permissions are used before they are read again (Cassandra's
    /// `permissions_validity`): a REVOKE takes effect on other nodes within it.
    pub permissions_validity_ms: u64,
    /// How long a successful password check is remembered (Cassandra's
    /// `credentials_validity`), so reconnecting clients skip bcrypt.
    pub credentials_validity_ms: u64,
    /// Failed logins one client address may make in a burst before its attempts are
    /// refused unchecked.
    pub login_failures_burst: u32,
    /// One more failed login is allowed to an address every this many milliseconds.
    pub login_failure_refill_ms: u64,
    /// bcrypt's cost for new password hashes (Cassandra's default is 10).
    pub bcrypt_cost: u32,
}

impl Default for AuthConfig {
    fn default() -> AuthConfig {
        AuthConfig {
            authenticator: AuthenticatorKind::AllowAll,
            superuser: "cassandra".to_owned(),
            superuser_password_file: String::new(),
            permissions_validity_ms: 2000,
            credentials_validity_ms: 2000,
            login_failures_burst: 10,
            login_failure_refill_ms: 1000,
            bcrypt_cost: 10,
        }
    }
}

impl AuthConfig {
    /// Whether logins are checked.
    pub fn enabled(&self) -> bool {
        self.authenticator == AuthenticatorKind::Password
    }

    /// Checks values no node can run with.
    pub fn validate(&self) -> Result<()> {
        if self.superuser.is_empty() {
            bail!("[auth] superuser must not be empty");
        }
        if self.login_failures_burst == 0 || self.login_failure_refill_ms == 0 {
            bail!("[auth] login_failures_burst and login_failure_refill_ms must be at least 1");
        }
        if !(4..=31).contains(&self.bcrypt_cost) {
            bail!("[auth] bcrypt_cost must be between 4 and 31");
        }
        Ok(())
    }

    /// Makes a relative password file relative to the config file's directory.
    pub fn resolve_paths(&mut self, base: &Path) {
        if !self.superuser_password_file.is_empty()
            && Path::new(&self.superuser_password_file).is_relative()
        {
            self.superuser_password_file = base
                .join(&self.superuser_password_file)
                .to_string_lossy()
                .into_owned();
        }
    }

    /// The superuser's password: `env` (the environment variable's value) when set, else
    /// the file's first line. Password authentication without either is refused: there
    /// is no built-in default.
    pub fn superuser_password(&self, env: Option<String>) -> Result<String> {
        if let Some(p) = env.filter(|p| !p.is_empty()) {
            return Ok(p);
        }
        if !self.superuser_password_file.is_empty() {
            let path = PathBuf::from(&self.superuser_password_file);
            let text = std::fs::read_to_string(&path).with_context(|| {
                format!("reading [auth] superuser_password_file {}", path.display())
            })?;
            let line = text.lines().next().unwrap_or("").to_owned();
            if line.is_empty() {
                bail!("[auth] superuser_password_file {} is empty", path.display());
            }
            return Ok(line);
        }
        bail!(
            "[auth] authenticator = \"password\" needs the superuser's password: set the \
             environment variable {SUPERUSER_PASSWORD_ENV} or [auth] superuser_password_file \
             (there is no built-in default password)"
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn password_auth_without_a_password_is_refused_and_says_why() {
        let c = AuthConfig {
            authenticator: AuthenticatorKind::Password,
            ..AuthConfig::default()
        };
        let e = c.superuser_password(None).unwrap_err().to_string();
        assert!(e.contains(SUPERUSER_PASSWORD_ENV), "{e}");
        assert_eq!(c.superuser_password(Some("pw".into())).unwrap(), "pw");
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("pw"), "secret\nignored\n").unwrap();
        let mut c = AuthConfig {
            superuser_password_file: "pw".into(),
            ..c
        };
        c.resolve_paths(dir.path());
        assert_eq!(c.superuser_password(None).unwrap(), "secret");
        assert_eq!(c.superuser_password(Some("env".into())).unwrap(), "env");
    }
}
