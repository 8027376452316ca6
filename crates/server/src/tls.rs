//! TLS on the CQL port (`[client_encryption]`, Cassandra's `client_encryption_options`).
//!
//! Owns the settings, the rustls server configuration built from the PEM files they name,
//! its reload when those files change, and the first step of an accepted connection: the
//! TLS handshake, or — in optional mode — the choice between TLS and plaintext by the
//! connection's first byte (0x16, a TLS handshake record, as Cassandra's optional mode
//! decides). The CQL state machine ([`crate::net`]) then runs over whichever stream came out.
//!
//! Crypto is rustls with the `ring` provider (aws-lc-rs, rustls' default, needs cmake).
//!
//! # Reload
//! Every `reload_interval_ms` (5 s) a task compares the modification time and length of
//! the certificate, key and truststore files with the last ones loaded; when any differ,
//! it builds a new configuration from them. New connections use it; connections already
//! open keep the one they were made with. A new set that does not load (a key that does
//! not match its certificate, a file half written) is logged and the old one stays in use;
//! it is tried again when the files change again.

use std::future::Future;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use anyhow::{bail, Context, Result};
use parking_lot::{Mutex, RwLock};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::WebPkiClientVerifier;
use rustls::{RootCertStore, ServerConfig};
use serde::{Deserialize, Serialize};
use tokio::net::TcpStream;
use tokio::sync::watch;
use tokio_rustls::server::TlsStream;
use tokio_rustls::TlsAcceptor;

/// The first byte of a TLS record carrying a handshake message (a ClientHello).
const TLS_HANDSHAKE_RECORD: u8 = 0x16;

/// `[client_encryption]`: TLS for CQL clients.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ClientEncryptionConfig {
    /// Whether the CQL port speaks TLS.
    pub enabled: bool,
    /// With `enabled`: whether plaintext clients are served on the same port too (a
    /// connection is TLS when its first byte opens a TLS handshake). False: they are refused.
    pub optional: bool,
    /// The node's certificate chain (PEM), its own certificate first.
    pub certificate: String,
    /// The certificate's private key (PEM: PKCS#8, PKCS#1 or SEC1).
    pub private_key: String,
    /// Whether clients must present a certificate signed by a CA of `truststore`.
    pub require_client_auth: bool,
    /// CA certificates (PEM bundle) that client certificates are checked against.
    pub truststore: String,
    /// How often the files are checked for changes, in milliseconds (0: never reloaded).
    pub reload_interval_ms: u64,
}

impl Default for ClientEncryptionConfig {
    fn default() -> ClientEncryptionConfig {
        ClientEncryptionConfig {
            enabled: false,
            optional: false,
            certificate: String::new(),
            private_key: String::new(),
            require_client_auth: false,
            truststore: String::new(),
            reload_interval_ms: 5_000,
        }
    }
}

impl ClientEncryptionConfig {
    /// Makes relative file paths relative to `base` (the config file's directory).
    pub fn resolve_paths(&mut self, base: &Path) {
        resolve_files(
            base,
            [
                &mut self.certificate,
                &mut self.private_key,
                &mut self.truststore,
            ],
        );
    }

    /// Checks settings no node can run with (the files are read at start, not here).
    pub fn validate(&self) -> Result<()> {
        if !self.enabled {
            return Ok(());
        }
        if self.certificate.is_empty() || self.private_key.is_empty() {
            bail!("[client_encryption] enabled needs both certificate and private_key");
        }
        if self.require_client_auth && self.truststore.is_empty() {
            bail!("[client_encryption] require_client_auth needs a truststore (PEM CA bundle)");
        }
        Ok(())
    }

    /// The files the configuration is built from.
    fn files(&self) -> Vec<PathBuf> {
        let mut files = vec![
            PathBuf::from(&self.certificate),
            PathBuf::from(&self.private_key),
        ];
        if self.require_client_auth {
            files.push(PathBuf::from(&self.truststore));
        }
        files
    }
}

/// What identifies a version of a file: its modification time and length (`None`: it
/// could not be read).
type Stamp = Option<(SystemTime, u64)>;

fn stamp(path: &Path) -> Stamp {
    let meta = std::fs::metadata(path).ok()?;
    Some((meta.modified().ok()?, meta.len()))
}

/// A TLS configuration built from files, rebuilt when they change (see the module doc):
/// the client port's and the internode one.
pub(crate) struct Reloading<T> {
    /// What it is, for the log ("client TLS").
    what: &'static str,
    files: Vec<PathBuf>,
    /// How often the files are checked (0: never).
    interval_ms: u64,
    build: Box<dyn Fn() -> Result<T> + Send + Sync>,
    current: RwLock<Arc<T>>,
    /// The stamps of the files last tried (loaded or refused), so a bad set is logged once.
    tried: Mutex<Vec<Stamp>>,
}

impl<T: Send + Sync + 'static> Reloading<T> {
    /// `build`'s configuration from `files` now (its error if it fails), checked for
    /// changes every `interval_ms` once [`Self::watch_files`] runs.
    pub(crate) fn new(
        what: &'static str,
        files: Vec<PathBuf>,
        interval_ms: u64,
        build: impl Fn() -> Result<T> + Send + Sync + 'static,
    ) -> Result<Arc<Reloading<T>>> {
        let tried = files.iter().map(|f| stamp(f)).collect();
        let current = build()?;
        Ok(Arc::new(Reloading {
            what,
            files,
            interval_ms,
            build: Box::new(build),
            current: RwLock::new(Arc::new(current)),
            tried: Mutex::new(tried),
        }))
    }

    /// The configuration new connections use.
    pub(crate) fn current(&self) -> Arc<T> {
        self.current.read().clone()
    }

    /// Rebuilds the configuration if its files changed since they were last tried:
    /// whether a new configuration is now in use.
    pub(crate) fn reload_if_changed(&self) -> bool {
        let stamps: Vec<Stamp> = self.files.iter().map(|f| stamp(f)).collect();
        {
            let mut tried = self.tried.lock();
            if *tried == stamps {
                return false;
            }
            *tried = stamps;
        }
        match (self.build)() {
            Ok(config) => {
                *self.current.write() = Arc::new(config);
                tracing::info!(
                    target: "mosaic::tls",
                    "reloaded the {} certificate; new connections use it",
                    self.what
                );
                true
            }
            Err(e) => {
                tracing::warn!(
                    target: "mosaic::tls",
                    error = %format!("{e:#}"),
                    "the changed {} files do not load; still using the previous ones",
                    self.what
                );
                false
            }
        }
    }

    /// Checks the files every `interval_ms` until `shutdown` flips. Reading two or three
    /// small files now and then: done inline.
    pub(crate) async fn watch_files(self: Arc<Self>, mut shutdown: watch::Receiver<bool>) {
        if self.interval_ms == 0 {
            return;
        }
        let mut ticks = tokio::time::interval(Duration::from_millis(self.interval_ms));
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                changed = shutdown.changed() => {
                    if changed.is_err() || *shutdown.borrow() {
                        return;
                    }
                }
                _ = ticks.tick() => {
                    self.reload_if_changed();
                }
            }
        }
    }
}

/// The CQL port's TLS: the current server configuration, replaced when its files change.
pub struct ClientTls {
    optional: bool,
    configs: Arc<Reloading<ServerConfig>>,
}

/// What became of an accepted connection.
pub enum Accepted {
    /// TLS is established.
    Tls(Box<TlsStream<TcpStream>>),
    /// Optional mode, and the client speaks plaintext.
    Plain(TcpStream),
    /// Refused or failed (already logged).
    Closed,
}

impl ClientTls {
    /// The port's TLS, or `None` when `[client_encryption]` is off. Fails, naming the
    /// file, when a file is missing, unreadable, holds no usable certificate or key, or the
    /// key does not match the certificate.
    pub fn from_config(settings: &ClientEncryptionConfig) -> Result<Option<Arc<ClientTls>>> {
        if !settings.enabled {
            return Ok(None);
        }
        let owned = settings.clone();
        let configs = Reloading::new(
            "client TLS",
            settings.files(),
            settings.reload_interval_ms,
            move || server_config(&owned),
        )?;
        Ok(Some(Arc::new(ClientTls {
            optional: settings.optional,
            configs,
        })))
    }

    /// Reloads the certificate when its files change, until `shutdown` flips.
    pub async fn watch_files(self: Arc<Self>, shutdown: watch::Receiver<bool>) {
        self.configs.clone().watch_files(shutdown).await;
    }

    /// [`Self::accept`], given up at `deadline` (the connection's handshake deadline) or
    /// when `cancelled` resolves (shutdown, or the connection displaced).
    pub async fn accept_by(
        &self,
        socket: TcpStream,
        peer: SocketAddr,
        deadline: tokio::time::Instant,
        cancelled: impl Future<Output = ()>,
    ) -> Accepted {
        tokio::select! {
            biased;
            _ = cancelled => Accepted::Closed,
            accepted = tokio::time::timeout_at(deadline, self.accept(socket, peer)) => {
                accepted.unwrap_or_else(|_| {
                    tracing::info!(
                        target: "mosaic::tls",
                        %peer,
                        "closing a connection that did not complete its TLS handshake in time \
                         ([limits] handshake_timeout_ms)"
                    );
                    Accepted::Closed
                })
            }
        }
    }

    /// Takes an accepted connection through the TLS handshake (or, in optional mode, lets
    /// a plaintext one through). The caller bounds the time this takes.
    pub async fn accept(&self, socket: TcpStream, peer: SocketAddr) -> Accepted {
        let mut first = [0u8; 1];
        match socket.peek(&mut first).await {
            Ok(0) | Err(_) => return Accepted::Closed,
            Ok(_) => {}
        }
        if first[0] != TLS_HANDSHAKE_RECORD {
            if self.optional {
                return Accepted::Plain(socket);
            }
            tracing::info!(
                target: "mosaic::tls",
                %peer,
                "refusing a plaintext connection on the TLS-only CQL port"
            );
            return Accepted::Closed;
        }
        let acceptor = TlsAcceptor::from(self.configs.current());
        match acceptor.accept(socket).await {
            Ok(stream) => Accepted::Tls(Box::new(stream)),
            Err(e) => {
                tracing::info!(target: "mosaic::tls", %peer, error = %e, "TLS handshake failed");
                Accepted::Closed
            }
        }
    }
}

/// The rustls configuration `settings` describe, read from its files now.
fn server_config(settings: &ClientEncryptionConfig) -> Result<ServerConfig> {
    const SECTION: &str = "[client_encryption]";
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let (chain, key) = read_identity(SECTION, &settings.certificate, &settings.private_key)?;
    let builder = ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .context("[client_encryption] TLS protocol versions")?;
    let builder = if settings.require_client_auth {
        let roots = read_roots(SECTION, &settings.truststore)?;
        let verifier = WebPkiClientVerifier::builder_with_provider(roots, provider)
            .build()
            .with_context(|| format!("{SECTION} truststore {}", settings.truststore))?;
        builder.with_client_cert_verifier(verifier)
    } else {
        builder.with_no_client_auth()
    };
    builder
        .with_single_cert(chain, key)
        .with_context(|| unusable_pair(SECTION, &settings.certificate, &settings.private_key))
}

/// Makes each of `paths` that is set and relative, relative to `base`.
pub(crate) fn resolve_files<const N: usize>(base: &Path, paths: [&mut String; N]) {
    for path in paths {
        if !path.is_empty() && Path::new(path.as_str()).is_relative() {
            *path = base.join(path.as_str()).to_string_lossy().into_owned();
        }
    }
}

/// A certificate chain and its private key, from the PEM files `certificate` and
/// `private_key`; an error names `section`'s key and the file.
pub(crate) fn read_identity(
    section: &str,
    certificate: &str,
    private_key: &str,
) -> Result<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>)> {
    let chain = read_certificates(Path::new(certificate))
        .with_context(|| format!("{section} certificate {certificate}"))?;
    let key = PrivateKeyDer::from_pem_file(Path::new(private_key)).with_context(|| {
        format!("{section} private_key {private_key}: reading a PEM private key")
    })?;
    Ok((chain, key))
}

/// The CA certificates of the PEM bundle `truststore`.
pub(crate) fn read_roots(section: &str, truststore: &str) -> Result<Arc<RootCertStore>> {
    let mut roots = RootCertStore::empty();
    for ca in read_certificates(Path::new(truststore))
        .with_context(|| format!("{section} truststore {truststore}"))?
    {
        roots
            .add(ca)
            .with_context(|| format!("{section} truststore {truststore}: a CA certificate"))?;
    }
    Ok(Arc::new(roots))
}

/// The error of a key that does not match its certificate (or is of no usable kind).
pub(crate) fn unusable_pair(section: &str, certificate: &str, private_key: &str) -> String {
    format!("{section} certificate {certificate} and private_key {private_key} do not make a usable pair")
}

/// Every certificate of the PEM file `path` (at least one).
fn read_certificates(path: &Path) -> Result<Vec<CertificateDer<'static>>> {
    let certificates = CertificateDer::pem_file_iter(path)
        .context("reading the file")?
        .collect::<Result<Vec<_>, _>>()
        .context("reading a PEM certificate")?;
    if certificates.is_empty() {
        bail!("no PEM certificate in the file");
    }
    Ok(certificates)
}
