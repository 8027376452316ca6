//! TLS between nodes (`[internode_encryption]`, Cassandra's `server_encryption_options`
//! with `internode_encryption: all` and `require_client_auth: true`).
//!
//! Mutual TLS: every node presents its certificate, and both ends check the other's chain
//! against the cluster's truststore, so a process without a certificate from the cluster's
//! CA cannot open an internode connection (its attempts are refused during the handshake
//! and logged with its address). Peers are dialled by IP address and the name in a node's
//! certificate is not checked (Cassandra's `require_endpoint_verification: false`): what
//! matters is the CA. Which member a connection comes from is settled after the TLS
//! handshake by the membership handshake ([`crate::internode_auth`]): the endpoint it
//! claims must be the address the connection comes from.
//!
//! The files are read at start (a missing, unreadable or mismatched one stops the node,
//! naming it) and reloaded as the client port's are ([`crate::tls`]): checked every
//! `reload_interval_ms`, new connections use the new certificate and truststore, open ones
//! keep theirs. To move a cluster to a new CA, put both CAs in every truststore first.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{bail, Context, Result};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::server::WebPkiClientVerifier;
use rustls::{
    CertificateError, ClientConfig, DigitallySignedStruct, ServerConfig, SignatureScheme,
};
use serde::{Deserialize, Serialize};
use tokio::net::TcpStream;
use tokio::sync::watch;
use tokio_rustls::{TlsAcceptor, TlsConnector};

use crate::tls::{read_identity, read_roots, resolve_files, unusable_pair, Reloading};

/// `[internode_encryption]`: TLS between nodes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct InternodeEncryptionConfig {
    /// Whether the internode port (and this node's connections to peers) speak TLS. Every
    /// node of a cluster must agree.
    pub enabled: bool,
    /// This node's certificate chain (PEM), its own certificate first.
    pub certificate: String,
    /// The certificate's private key (PEM: PKCS#8, PKCS#1 or SEC1).
    pub private_key: String,
    /// The cluster's CA certificates (PEM bundle): peers' certificates must chain to one.
    pub truststore: String,
    /// How often the files are checked for changes, in milliseconds (0: never reloaded).
    pub reload_interval_ms: u64,
}

impl Default for InternodeEncryptionConfig {
    fn default() -> InternodeEncryptionConfig {
        InternodeEncryptionConfig {
            enabled: false,
            certificate: String::new(),
            private_key: String::new(),
            truststore: String::new(),
            reload_interval_ms: 5_000,
        }
    }
}

impl InternodeEncryptionConfig {
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
        if self.enabled
            && (self.certificate.is_empty()
                || self.private_key.is_empty()
                || self.truststore.is_empty())
        {
            bail!("[internode_encryption] enabled needs certificate, private_key and truststore");
        }
        Ok(())
    }
}

/// Both ends of internode TLS, replaced when the files change.
pub struct InternodeTls {
    configs: Arc<Reloading<Ends>>,
}

/// Both ends of internode TLS as the files were at one time.
struct Ends {
    acceptor: TlsAcceptor,
    connector: TlsConnector,
}

impl InternodeTls {
    /// Internode TLS, or `None` when `[internode_encryption]` is off. Fails, naming the
    /// file, when a file does not load or the key does not match the certificate.
    pub fn from_config(settings: &InternodeEncryptionConfig) -> Result<Option<Arc<InternodeTls>>> {
        if !settings.enabled {
            return Ok(None);
        }
        let owned = settings.clone();
        let configs = Reloading::new(
            "internode TLS",
            [
                &settings.certificate,
                &settings.private_key,
                &settings.truststore,
            ]
            .map(PathBuf::from)
            .to_vec(),
            settings.reload_interval_ms,
            move || ends(&owned),
        )?;
        Ok(Some(Arc::new(InternodeTls { configs })))
    }

    /// Reloads the certificate when its files change, until `shutdown` flips.
    pub async fn watch_files(self: Arc<Self>, shutdown: watch::Receiver<bool>) {
        self.configs.clone().watch_files(shutdown).await;
    }

    /// The TLS handshake of a connection this node opened to `to`.
    pub async fn connect(
        &self,
        to: SocketAddr,
        tcp: TcpStream,
    ) -> std::io::Result<tokio_rustls::client::TlsStream<TcpStream>> {
        let connector = self.configs.current().connector.clone();
        connector
            .connect(ServerName::IpAddress(to.ip().into()), tcp)
            .await
    }

    /// The TLS handshake of a connection a peer opened; a failure is logged (a process
    /// without the cluster's certificate, say).
    pub async fn accept(
        &self,
        tcp: TcpStream,
        from: SocketAddr,
    ) -> std::io::Result<tokio_rustls::server::TlsStream<TcpStream>> {
        let acceptor = self.configs.current().acceptor.clone();
        acceptor.accept(tcp).await.inspect_err(|e| {
            tracing::warn!(
                target: "mosaic::internode",
                %from,
                error = %e,
                "refusing an internode connection: its TLS handshake failed"
            );
        })
    }
}

/// Both ends' configurations, read from the files `settings` name now.
fn ends(settings: &InternodeEncryptionConfig) -> Result<Ends> {
    const SECTION: &str = "[internode_encryption]";
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let (chain, key) = read_identity(SECTION, &settings.certificate, &settings.private_key)?;
    let roots = read_roots(SECTION, &settings.truststore)?;
    let pair = || unusable_pair(SECTION, &settings.certificate, &settings.private_key);
    let clients = WebPkiClientVerifier::builder_with_provider(roots.clone(), provider.clone())
        .build()
        .context("[internode_encryption] truststore")?;
    let server = ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .context("[internode_encryption] TLS protocol versions")?
        .with_client_cert_verifier(clients)
        .with_single_cert(chain.clone(), key.clone_key())
        .with_context(pair)?;
    let servers = WebPkiServerVerifier::builder_with_provider(roots, provider.clone())
        .build()
        .context("[internode_encryption] truststore")?;
    let client = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .context("[internode_encryption] TLS protocol versions")?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(ChainOnly(servers)))
        .with_client_auth_cert(chain, key)
        .with_context(pair)?;
    Ok(Ends {
        acceptor: TlsAcceptor::from(Arc::new(server)),
        connector: TlsConnector::from(Arc::new(client)),
    })
}

/// Checks a peer's chain against the truststore, not the name in its certificate (peers
/// are dialled by address; see the module doc).
#[derive(Debug)]
struct ChainOnly(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for ChainOnly {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        // The name is checked after the chain: a name error means the chain is good.
        match self
            .0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
        {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}
