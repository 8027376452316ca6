//! The internode transport: the cluster's [`Runtime`] and [`Transport`] over tokio and TCP.
//!
//! Owns the sockets between nodes. Each peer gets one outgoing connection, fed by a
//! queue of encoded frames bounded in messages and in bytes (`[cluster] peer_queue_max`,
//! `peer_queue_bytes_max`): a full queue drops the message (its request fails at the
//! coordinator) instead of growing memory, and a peer
//! that cannot be reached has its queue emptied while the writer backs off, so a dead node
//! never holds memory or blocks anyone. When a connection breaks or cannot be made, the
//! node is told (`Node::connection_lost`): the requests awaiting that peer's answers fail
//! at once, and until a connection is made again, sends to it report failure at once
//! (while still queued, for the next attempt) — a coordinator never waits out a timeout
//! on a peer whose process is gone; a connection whose data the peer has not acknowledged
//! for `UNACKNOWLEDGED_MAX` (a network partition: no reset comes) is aborted as broken.
//! Incoming connections are read frame
//! by frame; a bad length, checksum or payload closes only that connection, never the
//! node. Frames are `mosaic_cluster::message`'s. With `[internode_encryption]` every
//! connection, both ways, is mutual TLS ([`crate::internode_tls`]). Every connection then
//! opens with the membership handshake ([`crate::internode_auth`]), which binds it to the
//! endpoint of the node that opened it: a message on it that names another sender closes it.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
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

use crate::internode_auth::{Handshake, Refusal};
use crate::internode_tls::InternodeTls;

/// How long a connection attempt may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);
/// The longest pause between connection attempts to an unreachable peer.
const BACKOFF_MAX: Duration = Duration::from_secs(2);
/// How long data written to a peer may stay unacknowledged before the kernel aborts the
/// connection (TCP_USER_TIMEOUT; Cassandra's internode_tcp_user_timeout). Without it a peer
/// cut off by the network (no reset comes, unlike from a dead process on a live host) keeps
/// the connection open with TCP retransmitting at doubling intervals: once the network
/// heals, messages to the peer, gossip included, wait for the next retransmission (about
/// 11 s after a 14 s partition, up to 2 minutes after a long one). Aborted, the writer dials
/// again, failing fast while the peer is unreachable, and is connected once it is back.
const UNACKNOWLEDGED_MAX: Duration = Duration::from_secs(5);

/// An internode connection: TCP, or TLS over it.
trait PeerIo: AsyncRead + AsyncWrite + Send + Unpin {}

impl<T: AsyncRead + AsyncWrite + Send + Unpin> PeerIo for T {}

type PeerStream = Box<dyn PeerIo>;

/// How this node opens and admits internode connections: TLS when configured, then the
/// membership handshake ([`crate::internode_auth`]).
pub struct Links {
    /// `[internode_encryption]`, when on.
    pub tls: Option<Arc<InternodeTls>>,
    /// This node's side of the handshake.
    pub handshake: Arc<Handshake>,
}

/// Why a connection to a peer was not made.
enum DialFailure {
    /// No TCP or TLS connection within [`CONNECT_TIMEOUT`].
    Unreachable,
    /// The membership handshake failed.
    Refused(Refusal),
}

/// A connection to `to` (TLS when configured) that passed the membership handshake, all
/// within [`CONNECT_TIMEOUT`].
async fn dial(links: &Links, to: Endpoint) -> Result<PeerStream, DialFailure> {
    let dialled = async {
        let tcp = links
            .handshake
            .connect_tcp(to)
            .await
            .map_err(|_| DialFailure::Unreachable)?;
        #[cfg(any(target_os = "linux", target_os = "android"))]
        let _ = socket2::SockRef::from(&tcp).set_tcp_user_timeout(Some(UNACKNOWLEDGED_MAX));
        let mut stream: PeerStream = match &links.tls {
            None => Box::new(tcp),
            Some(tls) => Box::new(
                tls.connect(to, tcp)
                    .await
                    .map_err(|_| DialFailure::Unreachable)?,
            ),
        };
        links
            .handshake
            .dial(&mut stream)
            .await
            .map_err(DialFailure::Refused)?;
        Ok(stream)
    };
    tokio::time::timeout(CONNECT_TIMEOUT, dialled)
        .await
        .unwrap_or(Err(DialFailure::Unreachable))
}

/// A peer's connection, through the TLS handshake when configured and the membership
/// handshake, with the endpoint it is admitted as (`None`: refused, and logged, or it took
/// longer than [`CONNECT_TIMEOUT`]).
async fn admit(links: &Links, tcp: TcpStream, from: Endpoint) -> Option<(PeerStream, Endpoint)> {
    let _ = tcp.set_nodelay(true);
    let admitted = async {
        let mut stream: PeerStream = match &links.tls {
            None => Box::new(tcp),
            // A failed TLS handshake is logged by `accept`.
            Some(tls) => Box::new(tls.accept(tcp, from).await.ok()?),
        };
        match links.handshake.admit(&mut stream, from).await {
            Ok(peer) => Some((stream, peer)),
            Err(Refusal::Io(_)) => None, // Gone before it said anything to judge.
            Err(why) => {
                tracing::warn!(
                    target: "mosaic::internode",
                    %from,
                    reason = %why,
                    "refusing an internode connection"
                );
                None
            }
        }
    };
    match tokio::time::timeout(CONNECT_TIMEOUT, admitted).await {
        Ok(admitted) => admitted,
        Err(_) => {
            tracing::warn!(
                target: "mosaic::internode",
                %from,
                "refusing an internode connection: no handshake in time"
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
    queue_bytes_max: usize,
    handle: tokio::runtime::Handle,
    lost: Arc<OnceLock<ConnectionLost>>,
    links: Arc<Links>,
}

/// One peer's queue, whether its last connection attempt succeeded,
/// and what wakes its writer from a backoff.
struct Peer {
    tx: QueueSender,
    reachable: Arc<AtomicBool>,
    wake: Arc<Notify>,
}

impl TcpTransport {
    /// A transport queueing at most `queue_max` messages and `queue_bytes_max` bytes per
    /// peer (call inside tokio), connecting through `links`.
    pub fn new(queue_max: usize, queue_bytes_max: usize, links: Arc<Links>) -> TcpTransport {
        TcpTransport {
            peers: Mutex::new(HashMap::new()),
            queue_max: queue_max.max(1),
            queue_bytes_max,
            handle: tokio::runtime::Handle::current(),
            lost: Arc::new(OnceLock::new()),
            links,
        }
    }
}

impl Transport for TcpTransport {
    fn send(&self, to: Endpoint, env: Envelope) -> bool {
        let frame = encode_frame(&env);
        let mut peers = self.peers.lock();
        let peer = peers.entry(to).or_insert_with(|| {
            let (tx, queue) = queue(self.queue_max, self.queue_bytes_max);
            let reachable = Arc::new(AtomicBool::new(true));
            let wake = Arc::new(Notify::new());
            let writer = PeerWriter {
                to,
                reachable: reachable.clone(),
                lost: self.lost.clone(),
                wake: wake.clone(),
                links: self.links.clone(),
                refused: false,
            };
            self.handle.spawn(writer.run(queue));
            Peer {
                tx,
                reachable,
                wake,
            }
        });
        // Queued even when the peer is unreachable (the writer's next attempt may find it
        // back), but reported undeliverable: a request to it fails now, not at its timeout.
        peer.tx.try_send(frame) && peer.reachable.load(Ordering::Relaxed)
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

/// A peer's queue of frames bounded in frames (`max`) and in bytes (`bytes_max`): its two
/// ends share the count of the bytes in it.
fn queue(max: usize, bytes_max: usize) -> (QueueSender, Queue) {
    let (tx, rx) = mpsc::channel(max);
    let queued = Arc::new(AtomicUsize::new(0));
    let sender = QueueSender {
        tx,
        queued: queued.clone(),
        bytes_max,
    };
    (sender, Queue { rx, queued })
}

/// The sending end of a peer's queue.
struct QueueSender {
    tx: mpsc::Sender<Vec<u8>>,
    queued: Arc<AtomicUsize>,
    bytes_max: usize,
}

impl QueueSender {
    /// Queues `frame`, or drops it when the queue is full in frames or would overfill in
    /// bytes (an empty queue takes any frame, so the largest one can pass).
    fn try_send(&self, frame: Vec<u8>) -> bool {
        let len = frame.len();
        let before = self.queued.fetch_add(len, Ordering::SeqCst);
        if (before > 0 && before + len > self.bytes_max) || self.tx.try_send(frame).is_err() {
            self.queued.fetch_sub(len, Ordering::SeqCst);
            return false;
        }
        true
    }
}

/// The receiving end of a peer's queue, counting the bytes taken off it.
struct Queue {
    rx: mpsc::Receiver<Vec<u8>>,
    queued: Arc<AtomicUsize>,
}

impl Queue {
    async fn recv(&mut self) -> Option<Vec<u8>> {
        let frame = self.rx.recv().await?;
        self.queued.fetch_sub(frame.len(), Ordering::SeqCst);
        Some(frame)
    }

    fn try_recv(&mut self) -> Option<Vec<u8>> {
        let frame = self.rx.try_recv().ok()?;
        self.queued.fetch_sub(frame.len(), Ordering::SeqCst);
        Some(frame)
    }
}

/// The task writing one peer's queue.
struct PeerWriter {
    to: Endpoint,
    reachable: Arc<AtomicBool>,
    lost: Arc<OnceLock<ConnectionLost>>,
    wake: Arc<Notify>,
    links: Arc<Links>,
    /// Whether the peer's last handshake refused us (logged once, not at every retry).
    refused: bool,
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
    async fn run(mut self, mut queue: Queue) {
        let to = self.to;
        let mut backoff = Duration::from_millis(50);
        while let Some(first) = queue.recv().await {
            let stream = match dial(&self.links, to).await {
                Ok(stream) => stream,
                Err(failure) => {
                    if let DialFailure::Refused(why) = failure {
                        if !std::mem::replace(&mut self.refused, true) {
                            tracing::warn!(
                                target: "mosaic::internode",
                                peer = %to,
                                reason = %why,
                                "a peer refused our internode handshake, or we refused it \
                                 (cluster secret, cluster name or partitioner differ? see its log)"
                            );
                        }
                    }
                    // Unreachable: what is queued could only time out; drop it and wait.
                    self.reachable.store(false, Ordering::Relaxed);
                    drop(first);
                    while queue.try_recv().is_some() {}
                    self.lost();
                    tokio::select! {
                        _ = tokio::time::sleep(backoff) => backoff = (backoff * 2).min(BACKOFF_MAX),
                        // The peer connected to us: it runs again.
                        _ = self.wake.notified() => backoff = Duration::from_millis(50),
                    }
                    continue;
                }
            };
            self.refused = false;
            self.reachable.store(true, Ordering::Relaxed);
            backoff = Duration::from_millis(50);
            if !write_connected(stream, first, &mut queue).await {
                return;
            }
            self.lost();
        }
    }
}

/// Writes `first` and then the queue to a fresh connection until it breaks (`true`) or
/// the queue is closed (`false`).
async fn write_connected(stream: PeerStream, first: Vec<u8>, queue: &mut Queue) -> bool {
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
        while let Some(frame) = queue.try_recv() {
            if w.write_all(&frame).await.is_err() {
                return true;
            }
        }
        if w.flush().await.is_err() {
            return true;
        }
        tokio::select! {
            frame = queue.recv() => match frame {
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
    links: Arc<Links>,
    mut shutdown: watch::Receiver<bool>,
) {
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, from)) => {
                    let node = node.clone();
                    let links = links.clone();
                    tokio::spawn(async move {
                        let Some((stream, peer)) = admit(&links, stream, from).await else {
                            return;
                        };
                        node.peer_heard(peer);
                        if let Err(e) = read_frames(stream, peer, |env| node.receive(env)).await {
                            tracing::debug!(
                                target: "mosaic::internode",
                                %from,
                                %peer,
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

/// Bytes of an incoming frame's payload allocated before they arrive.
const FRAME_PREALLOC_MAX: usize = 4 << 20;

/// Reads the frames of the connection admitted as `peer`, handing each envelope to
/// `deliver`, until the peer closes (Ok) or sends something undecodable or a message that
/// claims another sender (Err: the connection is closed).
async fn read_frames(
    stream: PeerStream,
    peer: Endpoint,
    mut deliver: impl FnMut(Envelope),
) -> anyhow::Result<()> {
    let mut r = tokio::io::BufReader::with_capacity(64 << 10, stream);
    let mut header = [0u8; FRAME_HEADER_LEN];
    loop {
        match r.read_exact(&mut header).await {
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(()),
            Err(e) => return Err(e.into()),
        }
        let (len, crc) = frame_len(&header)?;
        // Allocated whole up to FRAME_PREALLOC_MAX (one allocation, no copies as it
        // grows: degraded reads and streaming move frames of hundreds of KiB), and past
        // that grown as bytes arrive, so a garbage length costs memory only if they come.
        let mut payload = Vec::with_capacity(len.min(FRAME_PREALLOC_MAX));
        let mut rest = (&mut r).take(len as u64);
        while payload.len() < len {
            if rest.read_buf(&mut payload).await? == 0 {
                anyhow::bail!("connection closed inside a frame");
            }
        }
        let env = decode_payload(&payload, crc)?;
        if env.from != peer {
            tracing::warn!(
                target: "mosaic::internode",
                %peer,
                claimed = %env.from,
                "closing an internode connection: a message claims another sender"
            );
            anyhow::bail!("a message from {peer} claims to come from {}", env.from);
        }
        deliver(env);
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
    links: Arc<Links>,
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
            let links = links.clone();
            tokio::spawn(async move {
                let Some((stream, peer)) = admit(&links, stream, from).await else {
                    return;
                };
                let (found_tx, mut found) = mpsc::channel(1);
                let read_ack = read_frames(stream, peer, move |env| {
                    if let Body::GossipAck {
                        cluster: theirs,
                        states,
                    } = env.body
                    {
                        if theirs == cluster {
                            let _ = found_tx.try_send(states);
                        } else {
                            tracing::warn!(
                                target: "mosaic::internode",
                                %peer,
                                peer_cluster = %theirs,
                                "a seed of another cluster answered the shadow round; ignored"
                            );
                        }
                    }
                });
                tokio::select! {
                    _ = read_ack => {}
                    states = found.recv() => {
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
                if let Ok(mut out) = dial(&links, *seed).await {
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

#[cfg(test)]
mod tests {
    use super::*;
    use mosaic_cluster::message::PROTOCOL_VERSION;
    use mosaic_cluster::Body;

    fn frame(from: &str) -> Vec<u8> {
        encode_frame(&Envelope {
            version: PROTOCOL_VERSION,
            from: from.parse().unwrap(),
            id: 7,
            body: Body::SchemaPull,
        })
    }

    fn envelope(bytes: usize) -> Envelope {
        Envelope {
            version: PROTOCOL_VERSION,
            from: "127.0.0.1:7000".parse().unwrap(),
            id: 1,
            body: Body::SchemaPush(mosaic_cluster::message::SchemaSnapshot {
                epoch: 1,
                version: [0; 16],
                bytes: vec![0; bytes],
            }),
        }
    }

    #[tokio::test]
    async fn a_peer_queue_is_bounded_in_bytes() {
        // A peer that takes connections but never answers the handshake: the writer holds
        // the first message while it waits, and the queue fills behind it.
        let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let to = silent.local_addr().unwrap();
        let handshake = Handshake::new(None, to, "c", true, to.ip());
        let links = Arc::new(Links {
            tls: None,
            handshake: Arc::new(handshake),
        });
        let frame_len = encode_frame(&envelope(10_000)).len();
        let transport = TcpTransport::new(1000, 2 * frame_len + frame_len / 2, links);
        assert!(transport.send(to, envelope(10_000)));
        tokio::time::sleep(Duration::from_millis(200)).await;
        // Two more fit in the bytes bound (not in the message count: 1000), a third does not.
        assert!(transport.send(to, envelope(10_000)));
        assert!(transport.send(to, envelope(10_000)));
        assert!(!transport.send(to, envelope(10_000)));
        // A small one still fits.
        assert!(transport.send(to, envelope(10)));
        drop(silent);
    }

    #[tokio::test]
    async fn a_message_claiming_another_sender_closes_the_connection() {
        let peer: Endpoint = "127.0.0.2:7000".parse().unwrap();
        let (mut w, r) = tokio::io::duplex(1 << 16);
        let bytes = [
            frame("127.0.0.2:7000"),
            frame("127.0.0.3:7000"),
            frame("127.0.0.2:7000"),
        ]
        .concat();
        w.write_all(&bytes).await.unwrap();
        drop(w);
        let mut delivered = Vec::new();
        let read = read_frames(Box::new(r), peer, |env| delivered.push(env.from)).await;
        assert!(read.is_err(), "the forged message was accepted");
        // Only what came before it was delivered.
        assert_eq!(delivered, vec![peer]);
    }

    /// Frames larger than the read buffer and than the preallocation arrive whole; a
    /// connection closed inside a frame is an error, not a short message.
    #[tokio::test]
    async fn large_frames_arrive_whole_and_a_cut_one_is_an_error() {
        let peer: Endpoint = "127.0.0.1:7000".parse().unwrap();
        let sizes = [512 << 10, FRAME_PREALLOC_MAX + 300_000, 10];
        let bytes: Vec<u8> = sizes
            .iter()
            .flat_map(|n| encode_frame(&envelope(*n)))
            .collect();
        for cut in [None, Some(bytes.len() - 7)] {
            let (mut w, r) = tokio::io::duplex(1 << 16);
            let sent = bytes[..cut.unwrap_or(bytes.len())].to_vec();
            let writer = tokio::spawn(async move {
                w.write_all(&sent).await.unwrap();
            });
            let mut got = Vec::new();
            let read = read_frames(Box::new(r), peer, |env| match env.body {
                Body::SchemaPush(s) => got.push(s.bytes.len()),
                other => panic!("unexpected {other:?}"),
            })
            .await;
            writer.await.unwrap();
            match cut {
                None => {
                    read.unwrap();
                    assert_eq!(got, sizes);
                }
                Some(_) => {
                    let e = read.unwrap_err().to_string();
                    assert!(e.contains("closed inside a frame"), "{e}");
                    assert_eq!(got, &sizes[..2]);
                }
            }
        }
    }
}
