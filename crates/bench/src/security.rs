//! Logins and TLS for every session a benchmark opens: `--username`/`--password` (SASL
//! PLAIN, which Cassandra's `PasswordAuthenticator` and Mosaic's `[auth] authenticator =
//! "password"` both answer) and `--ca-file` (TLS to the CQL port, the node's certificate
//! checked against that CA and the node's IP address).
//!
//! The options are global to the command line (`mosaic-bench --ca-file … run …` or after
//! the subcommand) and set once at start ([`configure`]) for every session any subcommand
//! builds ([`apply`]): one place, instead of threading them through each benchmark's
//! connect call. TLS goes through the driver's OpenSSL backend (the system's libssl):
//! its rustls backend pulls rustls's default `aws-lc-rs` provider, a C build with cmake.

use std::path::PathBuf;
use std::sync::OnceLock;

use anyhow::{bail, Context, Result};
use scylla::client::session::TlsContext;
use scylla::client::session_builder::SessionBuilder;

/// The environment variable a password may come from instead of the command line.
pub const PASSWORD_ENV: &str = "MOSAIC_BENCH_PASSWORD";

/// How the benchmark's sessions log in and encrypt.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct ClientSecurity {
    /// Log in as this role (password authentication).
    #[arg(long, global = true)]
    pub username: Option<String>,
    /// The role's password (default: $MOSAIC_BENCH_PASSWORD).
    #[arg(long, global = true)]
    pub password: Option<String>,
    /// Connect with TLS, trusting the CA certificates (PEM) in this file; each node's
    /// certificate must name its IP address.
    #[arg(long, global = true)]
    pub ca_file: Option<PathBuf>,
}

/// What every session gets.
struct Settings {
    login: Option<(String, String)>,
    tls: Option<TlsContext>,
}

static SETTINGS: OnceLock<Settings> = OnceLock::new();

/// Sets what every later session uses; once, at start.
pub fn configure(security: &ClientSecurity) -> Result<()> {
    let password = security
        .password
        .clone()
        .or_else(|| std::env::var(PASSWORD_ENV).ok());
    let login = match (&security.username, password) {
        (Some(user), Some(password)) => Some((user.clone(), password)),
        (Some(user), None) => bail!("--username {user} needs --password or {PASSWORD_ENV}"),
        (None, Some(_)) if security.password.is_some() => {
            bail!("--password needs --username")
        }
        (None, _) => None,
    };
    let tls = match &security.ca_file {
        Some(path) => Some(tls_context(path)?),
        None => None,
    };
    if SETTINGS.set(Settings { login, tls }).is_err() {
        bail!("the client's login and TLS settings were already set");
    }
    Ok(())
}

/// A TLS context trusting the CA certificates in `path`.
fn tls_context(path: &std::path::Path) -> Result<TlsContext> {
    use openssl::ssl::{SslConnector, SslMethod, SslVerifyMode};
    let mut builder = SslConnector::builder(SslMethod::tls()).context("creating a TLS context")?;
    builder
        .set_ca_file(path)
        .with_context(|| format!("reading the CA certificates in {}", path.display()))?;
    builder.set_verify(SslVerifyMode::PEER);
    Ok(TlsContext::from(builder))
}

/// `builder` with the configured login and TLS (none if [`configure`] was not called).
pub fn apply(mut builder: SessionBuilder) -> SessionBuilder {
    let Some(settings) = SETTINGS.get() else {
        return builder;
    };
    if let Some((user, password)) = &settings.login {
        builder = builder.user(user, password);
    }
    if let Some(tls) = &settings.tls {
        builder = builder.tls_context(Some(tls.clone()));
    }
    builder
}
