//! The internode transport: the cluster's [`Runtime`] and [`Transport`] over tokio and TCP.
//!
//! Owns the sockets between nodes. Each peer gets one outgoing connection, fed by a
//! bounded queue of encoded frames (`[cluster] peer_queue_max`): a full queue drops the
//! message (its request fails at the coordinator) instead of growing memory, and a peer
//! that cannot be reached has its queue emptied while the writer backs off, so a dead node
//! never holds memory or blocks anyone. When a connection breaks or cannot be made, the
//! node is told (`Node::connection_lost`): the requests awaiting that peer's answers fail
//! at once, and until a connection is made again, sends to it report failure at once
//! (while still queued, for the next attempt) — a coordinator never waits out a timeout
//! on a peer whose process is gone. Incoming connections are read frame
//! by frame; a bad length, checksum or payload closes only that connection, never the
//! node. Frames are `mosaic_cluster::message`'s. With `[internode_encryption]` every
//! connection, both ways, is mutual TLS ([`crate::internode_tls`]).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use futures::FutureExt;
use mosaic_cluster::env::ConnectionLost;
use mosaic_cluster::message::{decode_payload, encode_frame, frame_len, FRAME_HEADER_LEN};
use mosaic_cluster::{Endpoint, Envelope, Node, Runtime, Transport};
use parking_lot::Mutex;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufWriter};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, watch, Notify};

use crate::internode_tls::InternodeTls;

/// How long a connection attempt may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);
/// The longest pause between connection attempts to an unreachable peer.
const BACKOFF_MAX: Duration = Duration::from_secs(2);

/// An internode connection: TCP, or TLS over it.
trait PeerIo: AsyncRead + AsyncWrite + Send + Unpin {}

impl<T: AsyncRead + AsyncWrite + Send + Unpin> PeerIo for T {}

type PeerStream = Box<dyn PeerIo>;

/// A connection to `to` (TLS when configured), or `None` if it could not be made within
/// [`CONNECT_TIMEOUT`].
async fn dial(tls: Option<&InternodeTls>, to: Endpoint) -> Option<PeerStream> {
    let dialled = async {
        let tcp = TcpStream::connect(to).await.ok()?;
        let _ = tcp.set_nodelay(true);
        match tls {
            None => Some(Box::new(tcp) as PeerStream),
            Some(tls) => Some(Box::new(tls.connect(to, tcp).await.ok()?) as PeerStream),
        }
    };
    tokio::time::timeout(CONNECT_TIMEOUT, dialled)
        .await
        .ok()
        .flatten()
}

/// A peer's connection, through the TLS handshake when configured (`None`: it failed, or
/// took longer than [`CONNECT_TIMEOUT`]).
async fn admit(tls: Option<&InternodeTls>, tcp: TcpStream, from: Endpoint) -> Option<PeerStream> {
    let _ = tcp.set_nodelay(true);
    let Some(tls) = tls else {
        return Some(Box::new(tcp));
    };
    match tokio::time::timeout(CONNECT_TIMEOUT, tls.accept(tcp, from)).await {
        Ok(Ok(stream)) => Some(Box::new(stream)),
        Ok(Err(_)) => None, // Logged by `accept`.
        Err(_) => {
            tracing::warn!(
                target: "mosaic::internode",
                %from,
                "refusing an internode connection: no TLS handshake in time"
            );
            None
        }
    }
}

/// Time, tasks and randomness from tokio and the OS.
pub struct TokioRuntime {
    start: Instant,
    handle: tokio::runtime::Handle,
}

impl TokioRuntime {
    /// A runtime over the current tokio runtime (call from inside it).
    pub fn new() -> TokioRuntime {
        TokioRuntime {
            start: Instant::now(),
            handle: tokio::runtime::Handle::current(),
        }
    }
}

impl Runtime for TokioRuntime {
    fn now_micros(&self) -> u64 {
        u64::try_from(self.start.elapsed().as_micros()).unwrap_or(u64::MAX)
    }

    fn wall_micros(&self) -> u64 {
        u64::try_from(crate::local::now_micros()).unwrap_or(0)
    }

    fn sleep(&self, ms: u64) -> BoxFuture<'static, ()> {
        tokio::time::sleep(Duration::from_millis(ms)).boxed()
    }

    fn spawn(&self, task: BoxFuture<'static, ()>) {
        self.handle.spawn(task);
    }

    fn random(&self) -> u64 {
        rand::random()
    }
}

/// Outgoing connections, one writer task per peer (see the module doc).
pub struct TcpTransport {
    peers: Mutex<HashMap<Endpoint, Peer>>,
    queue_max: usize,
    handle: tokio::runtime::Handle,
    lost: Arc<OnceLock<ConnectionLost>>,
    tls: Option<Arc<InternodeTls>>,
}

/// One peer's queue, whether its last connection attempt succeeded, and what wakes its
/// writer from a backoff.
struct Peer {
    tx: mpsc::Sender<Vec<u8>>,
    reachable: Arc<AtomicBool>,
    wake: Arc<Notify>,
}

impl TcpTransport {
    /// A transport queueing at most `queue_max` messages per peer (call inside tokio),
    /// connecting through `tls` when set.
    pub fn new(queue_max: usize, tls: Option<Arc<InternodeTls>>) -> TcpTransport {
        TcpTransport {
            peers: Mutex::new(HashMap::new()),
            queue_max: queue_max.max(1),
            handle: tokio::runtime::Handle::current(),
            lost: Arc::new(OnceLock::new()),
            tls,
        }
    }
}

impl Transport for TcpTransport {
    fn send(&self, to: Endpoint, env: Envelope) -> bool {
        let frame = encode_frame(&env);
        let (tx, reachable) = {
            let mut peers = self.peers.lock();
            let peer = peers.entry(to).or_insert_with(|| {
                let (tx, rx) = mpsc::channel(self.queue_max);
                let reachable = Arc::new(AtomicBool::new(true));
                let wake = Arc::new(Notify::new());
                let writer = PeerWriter {
                    to,
                    reachable: reachable.clone(),
                    lost: self.lost.clone(),
                    wake: wake.clone(),
                    tls: self.tls.clone(),
                };
                self.handle.spawn(writer.run(rx));
                Peer {
                    tx,
                    reachable,
                    wake,
                }
            });
            (peer.tx.clone(), peer.reachable.load(Ordering::Relaxed))
        };
        // Queued even when the peer is unreachable (the writer's next attempt may find it
        // back), but reported undeliverable: a request to it fails now, not at its timeout.
        tx.try_send(frame).is_ok() && reachable
    }

    fn on_connection_lost(&self, lost: ConnectionLost) {
        let _ = self.lost.set(lost);
    }

    fn peer_heard(&self, peer: Endpoint) {
        if let Some(p) = self.peers.lock().get(&peer) {
            // It runs: connect now rather than after a backoff (a permit left unused ends
            // at most one later backoff early).
            p.reachable.store(true, Ordering::Relaxed);
            p.wake.notify_one();
        }
    }
}

/// The task writing one peer's queue.
struct PeerWriter {
    to: Endpoint,
    reachable: Arc<AtomicBool>,
    lost: Arc<OnceLock<ConnectionLost>>,
    wake: Arc<Notify>,
    tls: Option<Arc<InternodeTls>>,
}

impl PeerWriter {
    /// The connection broke or could not be made: the requests awaiting the peer's
    /// answers will not get them.
    fn lost(&self) {
        if let Some(lost) = self.lost.get() {
            lost(self.to);
        }
    }

    /// Writes queued frames to the peer, reconnecting with backoff.
    async fn run(self, mut rx: mpsc::Receiver<Vec<u8>>) {
        let to = self.to;
        let mut backoff = Duration::from_millis(50);
        while let Some(first) = rx.recv().await {
            let Some(stream) = dial(self.tls.as_deref(), to).await else {
                // Unreachable: what is queued could only time out; drop it and wait.
                self.reachable.store(false, Ordering::Relaxed);
                drop(first);
                while rx.try_recv().is_ok() {}
                self.lost();
                tokio::select! {
                    _ = tokio::time::sleep(backoff) => backoff = (backoff * 2).min(BACKOFF_MAX),
                    // The peer connected to us: it runs again.
                    _ = self.wake.notified() => backoff = Duration::from_millis(50),
                }
                continue;
            };
            self.reachable.store(true, Ordering::Relaxed);
            backoff = Duration::from_millis(50);
            if !write_connected(stream, first, &mut rx).await {
                return;
            }
            self.lost();
        }
    }
}

/// Writes `first` and then the queue to a fresh connection until it breaks (`true`) or
/// the queue is closed (`false`).
async fn write_connected(
    stream: PeerStream,
    first: Vec<u8>,
    rx: &mut mpsc::Receiver<Vec<u8>>,
) -> bool {
    // The peer never writes on this connection: anything readable (its FIN when its
    // process died, a reset) means the connection is dead. Noticing it at once, rather
    // than at the next failed write, keeps messages for a restarted peer from
    // vanishing into its previous incarnation's socket.
    let (mut rd, wr) = tokio::io::split(stream);
    let mut w = BufWriter::with_capacity(64 << 10, wr);
    let mut probe = [0u8; 1];
    if w.write_all(&first).await.is_err() {
        return true;
    }
    loop {
        // Write everything already queued, then flush once.
        while let Ok(frame) = rx.try_recv() {
            if w.write_all(&frame).await.is_err() {
                return true;
            }
        }
        if w.flush().await.is_err() {
            return true;
        }
        tokio::select! {
            frame = rx.recv() => match frame {
                Some(frame) => {
                    if w.write_all(&frame).await.is_err() {
                        return true;
                    }
                }
                None => return false,
            },
            _ = rd.read(&mut probe) => return true,
        }
    }
}

/// Accepts peers' connections until `shutdown`, handing each envelope to `node`.
pub async fn serve(
    listener: TcpListener,
    node: Node,
    tls: Option<Arc<InternodeTls>>,
    mut shutdown: watch::Receiver<bool>,
) {
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, from)) => {
                    let node = node.clone();
                    let tls = tls.clone();
                    tokio::spawn(async move {
                        let Some(stream) = admit(tls.as_deref(), stream, from).await else {
                            return;
                        };
                        if let Err(e) = read_frames(stream, &node).await {
                            tracing::debug!(
                                target: "mosaic::internode",
                                %from,
                                error = %e,
                                "internode connection closed"
                            );
                        }
                    });
                }
                Err(e) => {
                    tracing::warn!(target: "mosaic::internode", error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            },
            _ = shutdown.changed() => return,
        }
    }
}

/// Reads frames until the peer closes (Ok) or sends something undecodable (Err).
async fn read_frames(stream: PeerStream, node: &Node) -> anyhow::Result<()> {
    let mut r = tokio::io::BufReader::with_capacity(64 << 10, stream);
    let mut header = [0u8; FRAME_HEADER_LEN];
    let mut first = true;
    loop {
        match r.read_exact(&mut header).await {
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(()),
            Err(e) => return Err(e.into()),
        }
        let (len, crc) = frame_len(&header)?;
        // Grown as bytes arrive, so a garbage length costs memory only if the bytes come.
        let mut payload = Vec::with_capacity(len.min(64 << 10));
        (&mut r).take(len as u64).read_to_end(&mut payload).await?;
        if payload.len() < len {
            anyhow::bail!("connection closed inside a frame");
        }
        let env = decode_payload(&payload, crc)?;
        if std::mem::take(&mut first) {
            node.peer_heard(env.from);
        }
        node.receive(env);
    }
}

/// How long a shadow round keeps asking the seeds.
const SHADOW_TIMEOUT: Duration = Duration::from_secs(10);
/// Pause between two rounds of asking.
const SHADOW_RETRY: Duration = Duration::from_millis(500);

/// A shadow round: asks the seeds for their view of the cluster without joining it (an
/// empty `GossipSyn`, repeated until one answers: a seed still holding a connection to a
/// previous incarnation of this node loses its first answer on it), and returns every
/// state the first answer holds. A node whose data directory was wiped finds its old host
/// id and tokens there. `None` if no seed answered.
pub async fn shadow_round(
    listener: &TcpListener,
    me: Endpoint,
    seeds: &[Endpoint],
    cluster: &str,
    tls: Option<Arc<InternodeTls>>,
) -> Option<Vec<mosaic_cluster::message::EndpointState>> {
    use mosaic_cluster::message::PROTOCOL_VERSION;
    use mosaic_cluster::Body;
    let seeds: Vec<Endpoint> = seeds.iter().copied().filter(|s| *s != me).collect();
    if seeds.is_empty() {
        return None;
    }
    let syn = encode_frame(&Envelope {
        version: PROTOCOL_VERSION,
        from: me,
        id: 0,
        body: Body::GossipSyn {
            cluster: cluster.to_owned(),
            states: Vec::new(),
        },
    });
    let (tx, mut rx) = mpsc::channel(4);
    // Connections accepted during the round are closed as soon as it ends, so their
    // peers reconnect to the node's real listener.
    let (done_tx, done_rx) = watch::channel(false);
    let accept = async {
        loop {
            let Ok((stream, from)) = listener.accept().await else {
                continue;
            };
            let tx = tx.clone();
            let mut done = done_rx.clone();
            let cluster = cluster.to_owned();
            let tls = tls.clone();
            tokio::spawn(async move {
                let Some(stream) = admit(tls.as_deref(), stream, from).await else {
                    return;
                };
                let mut r = tokio::io::BufReader::new(stream);
                let read_ack = async {
                    let mut header = [0u8; FRAME_HEADER_LEN];
                    while r.read_exact(&mut header).await.is_ok() {
                        let (len, crc) = frame_len(&header).ok()?;
                        let mut payload = vec![0u8; len];
                        r.read_exact(&mut payload).await.ok()?;
                        if let Ok(Envelope {
                            body:
                                Body::GossipAck {
                                    cluster: theirs,
                                    states,
                                },
                            from,
                            ..
                        }) = decode_payload(&payload, crc)
                        {
                            if theirs == cluster {
                                return Some(states);
                            }
                            tracing::warn!(
                                target: "mosaic::internode",
                                peer = %from,
                                peer_cluster = %theirs,
                                "a seed of another cluster answered the shadow round; ignored"
                            );
                        }
                    }
                    None
                };
                tokio::select! {
                    states = read_ack => {
                        if let Some(states) = states {
                            let _ = tx.send(states).await;
                        }
                    }
                    _ = done.changed() => {}
                }
            });
        }
    };
    let ask = async {
        loop {
            for seed in &seeds {
                if let Some(mut out) = dial(tls.as_deref(), *seed).await {
                    let _ = out.write_all(&syn).await;
                    let _ = out.flush().await;
                }
            }
            if let Ok(Some(states)) = tokio::time::timeout(SHADOW_RETRY, rx.recv()).await {
                return states;
            }
        }
    };
    let found = tokio::select! {
        states = ask => Some(states),
        _ = accept => None,
        _ = tokio::time::sleep(SHADOW_TIMEOUT) => None,
    };
    let _ = done_tx.send(true);
    found
}
