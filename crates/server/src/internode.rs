//! The internode transport: the cluster's [`Runtime`] and [`Transport`] over tokio and TCP.
//!
//! Owns the sockets between nodes. Each peer gets one outgoing connection, fed by a
//! bounded queue of encoded frames (`[cluster] peer_queue_max`): a full queue drops the
//! message (its request times out at the coordinator) instead of growing memory, and a
//! peer that cannot be reached has its queue emptied while the writer backs off, so a
//! dead node never holds memory or blocks anyone. Incoming connections are read frame
//! by frame; a bad length, checksum or payload closes only that connection, never the
//! node. Frames are `mosaic_cluster::message`'s.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use futures::FutureExt;
use mosaic_cluster::message::{decode_payload, encode_frame, frame_len, FRAME_HEADER_LEN};
use mosaic_cluster::{Endpoint, Envelope, Node, Runtime, Transport};
use parking_lot::Mutex;
use tokio::io::{AsyncReadExt, AsyncWriteExt, BufWriter};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, watch};

/// How long a connection attempt may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);
/// The longest pause between connection attempts to an unreachable peer.
const BACKOFF_MAX: Duration = Duration::from_secs(2);

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
    peers: Mutex<HashMap<Endpoint, mpsc::Sender<Vec<u8>>>>,
    queue_max: usize,
    handle: tokio::runtime::Handle,
}

impl TcpTransport {
    /// A transport queueing at most `queue_max` messages per peer (call inside tokio).
    pub fn new(queue_max: usize) -> TcpTransport {
        TcpTransport {
            peers: Mutex::new(HashMap::new()),
            queue_max: queue_max.max(1),
            handle: tokio::runtime::Handle::current(),
        }
    }
}

impl Transport for TcpTransport {
    fn send(&self, to: Endpoint, env: Envelope) -> bool {
        let frame = encode_frame(&env);
        let tx = {
            let mut peers = self.peers.lock();
            peers
                .entry(to)
                .or_insert_with(|| {
                    let (tx, rx) = mpsc::channel(self.queue_max);
                    self.handle.spawn(peer_writer(to, rx));
                    tx
                })
                .clone()
        };
        tx.try_send(frame).is_ok()
    }
}

/// Writes queued frames to `to`, reconnecting with backoff.
async fn peer_writer(to: Endpoint, mut rx: mpsc::Receiver<Vec<u8>>) {
    let mut backoff = Duration::from_millis(50);
    while let Some(first) = rx.recv().await {
        let stream = match tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(to)).await {
            Ok(Ok(s)) => s,
            _ => {
                // Unreachable: what is queued would only time out; drop it and wait.
                drop(first);
                while rx.try_recv().is_ok() {}
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(BACKOFF_MAX);
                continue;
            }
        };
        backoff = Duration::from_millis(50);
        let _ = stream.set_nodelay(true);
        // The peer never writes on this connection: anything readable (its FIN when its
        // process died, a reset) means the connection is dead. Noticing it at once, rather
        // than at the next failed write, keeps messages for a restarted peer from
        // vanishing into its previous incarnation's socket.
        let (mut rd, wr) = stream.into_split();
        let mut w = BufWriter::with_capacity(64 << 10, wr);
        let mut probe = [0u8; 1];
        if w.write_all(&first).await.is_err() {
            continue;
        }
        'connected: loop {
            // Write everything already queued, then flush once.
            while let Ok(frame) = rx.try_recv() {
                if w.write_all(&frame).await.is_err() {
                    break 'connected;
                }
            }
            if w.flush().await.is_err() {
                break;
            }
            tokio::select! {
                frame = rx.recv() => match frame {
                    Some(frame) => {
                        if w.write_all(&frame).await.is_err() {
                            break;
                        }
                    }
                    None => return,
                },
                _ = rd.read(&mut probe) => break,
            }
        }
    }
}

/// Accepts peers' connections until `shutdown`, handing each envelope to `node`.
pub async fn serve(listener: TcpListener, node: Node, mut shutdown: watch::Receiver<bool>) {
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, from)) => {
                    let node = node.clone();
                    tokio::spawn(async move {
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
async fn read_frames(stream: TcpStream, node: &Node) -> anyhow::Result<()> {
    let _ = stream.set_nodelay(true);
    let mut r = tokio::io::BufReader::with_capacity(64 << 10, stream);
    let mut header = [0u8; FRAME_HEADER_LEN];
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
        body: Body::GossipSyn { states: Vec::new() },
    });
    let (tx, mut rx) = mpsc::channel(4);
    // Connections accepted during the round are closed as soon as it ends, so their
    // peers reconnect to the node's real listener.
    let (done_tx, done_rx) = watch::channel(false);
    let accept = async {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                continue;
            };
            let tx = tx.clone();
            let mut done = done_rx.clone();
            tokio::spawn(async move {
                let mut r = tokio::io::BufReader::new(stream);
                let read_ack = async {
                    let mut header = [0u8; FRAME_HEADER_LEN];
                    while r.read_exact(&mut header).await.is_ok() {
                        let (len, crc) = frame_len(&header).ok()?;
                        let mut payload = vec![0u8; len];
                        r.read_exact(&mut payload).await.ok()?;
                        if let Ok(Envelope {
                            body: Body::GossipAck { states },
                            ..
                        }) = decode_payload(&payload, crc)
                        {
                            return Some(states);
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
                if let Ok(Ok(mut out)) =
                    tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(seed)).await
                {
                    let _ = out.write_all(&syn).await;
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
