//! TLS helpers of the process tests: a test certificate authority (made with `rcgen`), the
//! certificate files a node reads, and a rustls client trusting that authority.

use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair,
};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use rustls::{ClientConfig, ClientConnection, RootCertStore, StreamOwned};

use super::{Conn, WAIT};

/// A certificate authority of the test.
pub struct Ca(pub CertifiedIssuer<'static, KeyPair>);

impl Ca {
    pub fn new(name: &str) -> Ca {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, name);
        Ca(CertifiedIssuer::self_signed(params, KeyPair::generate().unwrap()).unwrap())
    }

    /// A certificate for localhost / 127.0.0.1 signed by this CA: (certificate, key) PEM.
    pub fn leaf(&self, name: &str) -> (String, String) {
        let key = KeyPair::generate().unwrap();
        let mut params =
            CertificateParams::new(vec!["localhost".to_owned(), "127.0.0.1".to_owned()]).unwrap();
        params.distinguished_name.push(DnType::CommonName, name);
        params.extended_key_usages = vec![
            ExtendedKeyUsagePurpose::ServerAuth,
            ExtendedKeyUsagePurpose::ClientAuth,
        ];
        let cert = params.signed_by(&key, &self.0).unwrap();
        (cert.pem(), key.serialize_pem())
    }

    pub fn pem(&self) -> String {
        self.0.pem()
    }
}

/// Writes `text` to `path` through a rename, so the node never reads half a file.
pub fn write_atomically(path: &Path, text: &str) {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, text).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

/// A directory with the node's certificate and key signed by `ca`, and `ca` itself.
pub fn node_files(dir: &Path, ca: &Ca) -> (PathBuf, PathBuf, PathBuf) {
    let (cert, key) = ca.leaf("mosaic node");
    let files = (
        dir.join("node.crt"),
        dir.join("node.key"),
        dir.join("ca.crt"),
    );
    write_atomically(&files.0, &cert);
    write_atomically(&files.1, &key);
    write_atomically(&files.2, &ca.pem());
    files
}

/// A client configuration trusting `ca`, presenting `identity` (certificate, key PEM).
pub fn client_config(ca: &Ca, identity: Option<(String, String)>) -> Arc<ClientConfig> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut roots = RootCertStore::empty();
    roots.add(ca.0.der().clone()).unwrap();
    let builder = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots);
    let config = match identity {
        Some((cert, key)) => {
            let chain = CertificateDer::pem_slice_iter(cert.as_bytes())
                .collect::<Result<Vec<_>, _>>()
                .unwrap();
            let key = PrivateKeyDer::from_pem_slice(key.as_bytes()).unwrap();
            builder.with_client_auth_cert(chain, key).unwrap()
        }
        None => builder.with_no_client_auth(),
    };
    Arc::new(config)
}

/// A TLS connection to `addr`, its handshake done (or its error).
pub fn connect_tls(addr: SocketAddr, config: &Arc<ClientConfig>) -> std::io::Result<Conn> {
    let tcp = TcpStream::connect(addr)?;
    tcp.set_read_timeout(Some(WAIT))?;
    let name = ServerName::try_from("localhost").unwrap();
    let session = ClientConnection::new(config.clone(), name).map_err(std::io::Error::other)?;
    let mut tls = StreamOwned::new(session, tcp);
    while tls.conn.is_handshaking() {
        tls.conn.complete_io(&mut tls.sock)?;
    }
    Ok(Conn::over(tls))
}
