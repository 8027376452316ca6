//! Internode authentication: which cluster member an internode connection comes from.
//!
//! Every internode connection (over TLS when `[internode_encryption]` is on) opens with a
//! handshake before any message:
//!
//! ```text
//! acceptor → dialer  CHALLENGE  "MOSAIC-C"  nonce_a[32]
//! dialer → acceptor  HELLO      "MOSAIC-H"  ip[16] port:u16  nonce_d[32]
//!                               cluster:u16-string  partitioner:u16-string  tag_d[32]
//! acceptor → dialer  WELCOME    "MOSAIC-W"  tag_a[32]
//! ```
//!
//! `ip`/`port` is the dialer's storage endpoint (IPv4 as IPv4-mapped IPv6). With a cluster
//! secret (`[internode_auth] secret_file`, or `MOSAIC_CLUSTER_SECRET`), `tag_d` and `tag_a`
//! are HMAC-SHA256 under the secret of a role label and every field above (both nonces
//! included, so a recorded handshake cannot be replayed): each side proves it knows the
//! secret without sending it. Without a secret the tags are zero and unchecked; membership
//! then rests on mutual TLS, or on nothing (a node with neither logs a warning at start).
//!
//! The acceptor refuses — closes the connection and logs the peer's address and why — a
//! connection whose greeting is not a Mosaic node's, whose cluster name or partitioner
//! differ from its own, whose tag is wrong, or (`check_source_address`, the default) whose
//! claimed endpoint is not at the address the connection comes from. What it admits is
//! bound to the claimed endpoint: the connection's identity, not a message's `from` field,
//! says who sent a message ([`crate::internode`] closes a connection whose messages claim
//! another sender). Outgoing connections leave from `listen_address`, so their source
//! address is the node's own.

use std::net::{IpAddr, Ipv6Addr, SocketAddr};
use std::path::Path;

use anyhow::{bail, Context, Result};
use ring::hmac;
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};

use crate::local::PARTITIONER;
use crate::tls::resolve_files;

/// The environment variable that may hold the cluster secret (it wins over the file).
pub const CLUSTER_SECRET_ENV: &str = "MOSAIC_CLUSTER_SECRET";
/// The shortest secret accepted, in bytes.
const SECRET_LEN_MIN: usize = 16;
/// The longest cluster name or partitioner name a greeting may carry.
const NAME_LEN_MAX: usize = 1024;

const CHALLENGE: &[u8; 8] = b"MOSAIC-C";
const HELLO: &[u8; 8] = b"MOSAIC-H";
const WELCOME: &[u8; 8] = b"MOSAIC-W";
const NONCE_LEN: usize = 32;
const TAG_LEN: usize = 32;

/// `[internode_auth]`: how nodes prove they belong to the cluster.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct InternodeAuthConfig {
    /// A file holding the cluster's shared secret (at least 16 bytes; surrounding
    /// whitespace is ignored). Every node of the cluster must hold the same secret.
    /// `MOSAIC_CLUSTER_SECRET` in the environment wins over it. Empty: no secret.
    pub secret_file: String,
    /// Whether a peer's claimed endpoint must be the address its connection comes from.
    /// Turn it off only when nodes reach each other through address translation.
    pub check_source_address: bool,
}

impl Default for InternodeAuthConfig {
    fn default() -> InternodeAuthConfig {
        InternodeAuthConfig {
            secret_file: String::new(),
            check_source_address: true,
        }
    }
}

impl InternodeAuthConfig {
    /// Makes a relative `secret_file` relative to `base` (the config file's directory).
    pub fn resolve_paths(&mut self, base: &Path) {
        resolve_files(base, [&mut self.secret_file]);
    }

    /// The secret: `env` (the environment variable's value) if set, else the file's
    /// content, else none. Fails when the file cannot be read or the secret is short.
    pub fn secret(&self, env: Option<String>) -> Result<Option<Vec<u8>>> {
        let (secret, source) = match env {
            Some(value) => (value.into_bytes(), CLUSTER_SECRET_ENV.to_owned()),
            None if self.secret_file.is_empty() => return Ok(None),
            None => (
                std::fs::read(&self.secret_file).with_context(|| {
                    format!("[internode_auth] secret_file: reading {}", self.secret_file)
                })?,
                self.secret_file.clone(),
            ),
        };
        let secret = secret.trim_ascii().to_vec();
        if secret.len() < SECRET_LEN_MIN {
            bail!(
                "[internode_auth] the cluster secret from {source} is {} bytes; it must be at \
                 least {SECRET_LEN_MIN}",
                secret.len()
            );
        }
        Ok(Some(secret))
    }
}

/// Why a handshake did not admit a connection.
#[derive(Debug, thiserror::Error)]
pub enum Refusal {
    /// The connection broke or the peer closed it (on the dialer's side: the acceptor
    /// refused us, and its log says why).
    #[error("the connection closed during the handshake ({0})")]
    Io(#[from] std::io::Error),
    /// The peer did not greet as a Mosaic node.
    #[error("it is not a Mosaic node (unexpected greeting)")]
    NotMosaic,
    /// The peer (claiming the endpoint) belongs to another cluster.
    #[error("{0} belongs to cluster {1:?}")]
    OtherCluster(SocketAddr, String),
    /// The peer (claiming the endpoint) uses another partitioner.
    #[error("{0} uses partitioner {1:?}")]
    OtherPartitioner(SocketAddr, String),
    /// The peer's tag is wrong.
    #[error("it does not know the cluster secret")]
    BadSecret,
    /// The peer claims an endpoint at another address than its connection's.
    #[error("it claims to be {claimed} but connects from {source_ip}")]
    Impostor {
        /// The endpoint claimed.
        claimed: SocketAddr,
        /// The connection's source address.
        source_ip: IpAddr,
    },
}

/// This node's side of the internode handshake (see the module doc).
pub struct Handshake {
    key: Option<hmac::Key>,
    me: SocketAddr,
    cluster: String,
    check_source: bool,
    bind: Option<IpAddr>,
}

impl Handshake {
    /// The handshake of the node at storage endpoint `me`, whose outgoing connections
    /// leave from `bind` (unless it is a wildcard).
    pub fn new(
        secret: Option<&[u8]>,
        me: SocketAddr,
        cluster: &str,
        check_source: bool,
        bind: IpAddr,
    ) -> Handshake {
        Handshake {
            key: secret.map(|s| hmac::Key::new(hmac::HMAC_SHA256, s)),
            me,
            cluster: cluster.to_owned(),
            check_source,
            bind: (!bind.is_unspecified()).then_some(bind),
        }
    }

    /// A TCP connection to `to`, leaving from this node's listen address.
    pub async fn connect_tcp(&self, to: SocketAddr) -> std::io::Result<TcpStream> {
        let socket = if to.is_ipv4() {
            TcpSocket::new_v4()?
        } else {
            TcpSocket::new_v6()?
        };
        if let Some(ip) = self.bind.filter(|ip| ip.is_ipv4() == to.is_ipv4()) {
            socket.bind(SocketAddr::new(ip, 0))?;
        }
        let stream = socket.connect(to).await?;
        let _ = stream.set_nodelay(true);
        Ok(stream)
    }

    /// The dialer's side: answers the acceptor's challenge and checks its welcome.
    pub async fn dial<S: AsyncRead + AsyncWrite + Unpin>(&self, io: &mut S) -> Result<(), Refusal> {
        let mut challenge = [0u8; 8 + NONCE_LEN];
        io.read_exact(&mut challenge).await?;
        let (magic, nonce_a) = challenge.split_at(8);
        if magic != CHALLENGE {
            return Err(Refusal::NotMosaic);
        }
        let nonce_d: [u8; NONCE_LEN] = rand::random();
        let fields = greeting_fields(self.me, &self.cluster, PARTITIONER);
        let mut hello = Vec::with_capacity(8 + NONCE_LEN + fields.len() + TAG_LEN);
        hello.extend_from_slice(HELLO);
        hello.extend_from_slice(&nonce_d);
        hello.extend_from_slice(&fields);
        hello.extend_from_slice(&self.tag(b"dialer", nonce_a, &nonce_d, &fields));
        io.write_all(&hello).await?;
        io.flush().await?;
        let mut welcome = [0u8; 8 + TAG_LEN];
        io.read_exact(&mut welcome).await?;
        let (magic, tag) = welcome.split_at(8);
        if magic != WELCOME {
            return Err(Refusal::NotMosaic);
        }
        self.verify(b"acceptor", nonce_a, &nonce_d, &fields, tag)
    }

    /// The acceptor's side: challenges the dialer, checks its greeting and returns the
    /// endpoint it is admitted as; `from` is the connection's source address.
    pub async fn admit<S: AsyncRead + AsyncWrite + Unpin>(
        &self,
        io: &mut S,
        from: SocketAddr,
    ) -> Result<SocketAddr, Refusal> {
        let nonce_a: [u8; NONCE_LEN] = rand::random();
        let mut challenge = Vec::with_capacity(8 + NONCE_LEN);
        challenge.extend_from_slice(CHALLENGE);
        challenge.extend_from_slice(&nonce_a);
        io.write_all(&challenge).await?;
        io.flush().await?;
        let mut head = [0u8; 8 + NONCE_LEN + 16 + 2];
        io.read_exact(&mut head).await?;
        let (magic, rest) = head.split_at(8);
        if magic != HELLO {
            return Err(Refusal::NotMosaic);
        }
        let (nonce_d, endpoint) = rest.split_at(NONCE_LEN);
        // `head`'s size leaves exactly 16 address bytes and 2 port bytes here.
        let (ip, port) = endpoint.split_at(16);
        let ip: [u8; 16] = ip.try_into().map_err(|_| Refusal::NotMosaic)?;
        let port: [u8; 2] = port.try_into().map_err(|_| Refusal::NotMosaic)?;
        let claimed = SocketAddr::new(Ipv6Addr::from(ip).to_canonical(), u16::from_be_bytes(port));
        let cluster = read_name(io).await?;
        let partitioner = read_name(io).await?;
        let mut tag = [0u8; TAG_LEN];
        io.read_exact(&mut tag).await?;
        let fields = greeting_fields(claimed, &cluster, &partitioner);
        // The secret first: an outsider learns nothing about the cluster from a refusal.
        self.verify(b"dialer", &nonce_a, nonce_d, &fields, &tag)?;
        if cluster != self.cluster {
            return Err(Refusal::OtherCluster(claimed, cluster));
        }
        if partitioner != PARTITIONER {
            return Err(Refusal::OtherPartitioner(claimed, partitioner));
        }
        if self.check_source && claimed.ip() != from.ip().to_canonical() {
            return Err(Refusal::Impostor {
                claimed,
                source_ip: from.ip(),
            });
        }
        let mut welcome = Vec::with_capacity(8 + TAG_LEN);
        welcome.extend_from_slice(WELCOME);
        welcome.extend_from_slice(&self.tag(b"acceptor", &nonce_a, nonce_d, &fields));
        io.write_all(&welcome).await?;
        io.flush().await?;
        Ok(claimed)
    }

    fn tag(&self, role: &[u8], nonce_a: &[u8], nonce_d: &[u8], fields: &[u8]) -> [u8; TAG_LEN] {
        let mut out = [0u8; TAG_LEN];
        if let Some(key) = &self.key {
            let tag = hmac::sign(key, &transcript(role, nonce_a, nonce_d, fields));
            out.copy_from_slice(tag.as_ref());
        }
        out
    }

    fn verify(
        &self,
        role: &[u8],
        nonce_a: &[u8],
        nonce_d: &[u8],
        fields: &[u8],
        tag: &[u8],
    ) -> Result<(), Refusal> {
        match &self.key {
            None => Ok(()),
            Some(key) => hmac::verify(key, &transcript(role, nonce_a, nonce_d, fields), tag)
                .map_err(|_| Refusal::BadSecret),
        }
    }
}

/// What a tag covers: the role, both nonces and the greeting's fields.
fn transcript(role: &[u8], nonce_a: &[u8], nonce_d: &[u8], fields: &[u8]) -> Vec<u8> {
    [
        b"mosaic-internode-1 " as &[u8],
        role,
        nonce_a,
        nonce_d,
        fields,
    ]
    .concat()
}

/// The greeting's fields after its nonce: endpoint, cluster name, partitioner.
fn greeting_fields(endpoint: SocketAddr, cluster: &str, partitioner: &str) -> Vec<u8> {
    let ip = match endpoint.ip() {
        IpAddr::V4(v4) => v4.to_ipv6_mapped(),
        IpAddr::V6(v6) => v6,
    };
    let mut out = Vec::with_capacity(18 + 4 + cluster.len() + partitioner.len());
    out.extend_from_slice(&ip.octets());
    out.extend_from_slice(&endpoint.port().to_be_bytes());
    for name in [cluster, partitioner] {
        let bytes = name.as_bytes();
        let bytes = bytes.get(..NAME_LEN_MAX).unwrap_or(bytes);
        // At most NAME_LEN_MAX (1024), so the length fits.
        out.extend_from_slice(&(bytes.len() as u16).to_be_bytes());
        out.extend_from_slice(bytes);
    }
    out
}

/// A length-prefixed name of a greeting (at most [`NAME_LEN_MAX`] bytes).
async fn read_name<S: AsyncRead + Unpin>(io: &mut S) -> Result<String, Refusal> {
    let len = usize::from(io.read_u16().await?);
    if len > NAME_LEN_MAX {
        return Err(Refusal::NotMosaic);
    }
    let mut bytes = vec![0u8; len];
    io.read_exact(&mut bytes).await?;
    String::from_utf8(bytes).map_err(|_| Refusal::NotMosaic)
}

#[cfg(test)]
mod tests {
    use super::*;

    const ME: &str = "127.0.0.1:7000";
    const PEER: &str = "127.0.0.2:7000";

    fn node(secret: Option<&[u8]>, at: &str, cluster: &str) -> Handshake {
        let at: SocketAddr = at.parse().unwrap();
        Handshake::new(secret, at, cluster, true, at.ip())
    }

    /// Runs `dialer` against `acceptor` over an in-memory pipe, the dialer's connection
    /// coming from `source`.
    async fn run(
        dialer: &Handshake,
        acceptor: &Handshake,
        source: &str,
    ) -> (Result<(), Refusal>, Result<SocketAddr, Refusal>) {
        let (mut d, mut a) = tokio::io::duplex(4096);
        let source: SocketAddr = source.parse().unwrap();
        let admit = async {
            let out = acceptor.admit(&mut a, source).await;
            drop(a); // A refusal closes the connection.
            out
        };
        tokio::join!(dialer.dial(&mut d), admit)
    }

    #[tokio::test]
    async fn members_sharing_the_secret_admit_each_other_as_their_endpoint() {
        let secret = b"0123456789abcdef-secret";
        let (d, a) = run(
            &node(Some(secret), PEER, "c"),
            &node(Some(secret), ME, "c"),
            "127.0.0.2:50123",
        )
        .await;
        d.unwrap();
        assert_eq!(a.unwrap(), PEER.parse::<SocketAddr>().unwrap());
    }

    #[tokio::test]
    async fn a_wrong_or_missing_secret_is_refused() {
        let acceptor = node(Some(b"0123456789abcdef-secret"), ME, "c");
        for dialer in [
            node(Some(b"0123456789abcdef-other!"), PEER, "c"),
            node(None, PEER, "c"),
        ] {
            let (d, a) = run(&dialer, &acceptor, "127.0.0.2:1").await;
            assert!(matches!(a, Err(Refusal::BadSecret)), "{a:?}");
            assert!(matches!(d, Err(Refusal::Io(_))), "{d:?}");
        }
        // Nor does a node holding the secret trust an acceptor that does not.
        let (d, _) = run(
            &node(Some(b"0123456789abcdef-secret"), PEER, "c"),
            &node(None, ME, "c"),
            "127.0.0.2:1",
        )
        .await;
        assert!(matches!(d, Err(Refusal::BadSecret)), "{d:?}");
    }

    #[tokio::test]
    async fn another_cluster_and_an_impostor_address_are_refused() {
        let secret = b"0123456789abcdef-secret";
        let acceptor = node(Some(secret), ME, "c");
        let (_, a) = run(&node(Some(secret), PEER, "other"), &acceptor, "127.0.0.2:1").await;
        assert!(matches!(a, Err(Refusal::OtherCluster(_, ref c)) if c == "other"));
        // A member claiming another member's endpoint from its own address.
        let (_, a) = run(&node(Some(secret), PEER, "c"), &acceptor, "127.0.0.9:1").await;
        assert!(matches!(a, Err(Refusal::Impostor { .. })), "{a:?}");
    }

    #[tokio::test]
    async fn without_a_secret_the_endpoint_is_still_bound_to_the_source_address() {
        let (d, a) = run(&node(None, PEER, "c"), &node(None, ME, "c"), "127.0.0.2:9").await;
        d.unwrap();
        assert_eq!(a.unwrap(), PEER.parse::<SocketAddr>().unwrap());
        let (_, a) = run(&node(None, PEER, "c"), &node(None, ME, "c"), "10.0.0.1:9").await;
        assert!(matches!(a, Err(Refusal::Impostor { .. })));
    }

    #[tokio::test]
    async fn garbage_and_silence_are_refused_without_panicking() {
        let acceptor = node(None, ME, "c");
        for bytes in [
            b"GET / HTTP/1.1\r\n\r\n".to_vec(),
            vec![0xff; 200],
            [HELLO.as_slice(), &[0u8; 50], &[0xff, 0xff]].concat(),
            Vec::new(),
        ] {
            let (mut d, mut a) = tokio::io::duplex(4096);
            d.write_all(&bytes).await.unwrap();
            drop(d);
            let r = acceptor.admit(&mut a, "127.0.0.2:1".parse().unwrap()).await;
            assert!(r.is_err());
        }
    }

    #[tokio::test]
    async fn random_greetings_are_refused_without_panicking() {
        use rand::{Rng, SeedableRng};
        let acceptor = node(Some(b"0123456789abcdef-secret"), ME, "c");
        let seed: u64 = rand::random();
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        for _ in 0..2000 {
            // Random bytes, often behind a valid magic so the parser goes further.
            let len = rng.gen_range(0..200);
            let mut bytes: Vec<u8> = (0..len).map(|_| rng.gen()).collect();
            if rng.gen_bool(0.5) {
                bytes.splice(0..0, HELLO.iter().copied());
            }
            let (mut d, mut a) = tokio::io::duplex(4096);
            d.write_all(&bytes).await.unwrap();
            drop(d);
            let admitted = acceptor.admit(&mut a, "127.0.0.2:1".parse().unwrap()).await;
            assert!(admitted.is_err(), "seed {seed}: {bytes:?} was admitted");
        }
    }

    #[test]
    fn the_secret_comes_from_the_environment_or_the_file_and_must_be_long() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("secret");
        std::fs::write(&file, "  a-long-enough-cluster-secret\n").unwrap();
        let config = InternodeAuthConfig {
            secret_file: file.to_string_lossy().into_owned(),
            ..InternodeAuthConfig::default()
        };
        assert_eq!(
            config.secret(None).unwrap().unwrap(),
            b"a-long-enough-cluster-secret"
        );
        let from_env = config.secret(Some("another-long-secret!".into())).unwrap();
        assert_eq!(from_env.unwrap(), b"another-long-secret!");
        assert!(config.secret(Some("short".into())).is_err());
        std::fs::remove_file(&file).unwrap();
        assert!(config.secret(None).is_err());
        assert_eq!(InternodeAuthConfig::default().secret(None).unwrap(), None);
    }
}
