//! The CQL native-protocol listener: TCP connections, frames, back-pressure, events.
//!
//! Owns everything between the socket and the statement [`Processor`]: the accept loop,
//! each connection's state machine (OPTIONS / STARTUP / authentication / REGISTER, as
//! Cassandra's `ServerConnection` checks them), stream-id multiplexing and the push of
//! schema-change events. It knows nothing of storage: it drives any [`Coordinator`].
//!
//! # One connection
//! A reader (the connection's task) decodes frames from a `BytesMut` with a
//! [`FrameReader`]: plain frames, or — on a v5 connection once STARTUP has been answered —
//! frames out of checksummed segments, which the writer likewise packs its frames into. Connection-level
//! requests are answered in order by the reader itself; QUERY, PREPARE, EXECUTE and BATCH
//! run in the reader until they first wait (most finish there: a read served from memory,
//! a write applied in place), then as their own task, so requests on different streams
//! proceed concurrently and their responses go out in completion order, each on its
//! request's stream. A writer task
//! ([`writer`]) owns the socket's write half: it takes encoded frames from a bounded channel and writes
//! as many as are ready with one `write` call.
//!
//! # Back-pressure (every queue is bounded)
//! - A connection holds at most `connection_requests_in_flight_max` running requests; at
//!   the cap its reader stops reading the socket (TCP then pushes back on the client).
//! - The node runs at most `node_requests_concurrent_max` requests at once; the others
//!   wait for a permit, holding their connection's in-flight slot.
//! - Request frames being executed or answered hold their bytes in their client
//!   address's budget (`request_bytes_in_flight_per_address_max`) and the node's
//!   (`request_bytes_in_flight_max`) until their answer is written; a request that cannot
//!   get them stops its connection's reading ([`in_flight`]; with `THROW_ON_OVERLOAD` it
//!   is answered Overloaded instead), so a flooding address is throttled while other
//!   addresses are served.
//! - The writer's channel holds at most the in-flight cap plus a few connection-level
//!   answers; a client that doesn't read its responses stalls its own requests only.
//! - Events go through a bounded broadcast channel; a connection too slow to take them
//!   loses the oldest (and the loss is logged), never the node's memory.
//! - At most `connection_count_max` connections; when full, a new connection displaces the
//!   oldest one still in its handshake, and is refused only when every connection has
//!   completed its handshake; at most `connections_per_address_max` per client address
//!   ([`admission`]). A handshake that takes longer than `handshake_timeout_ms`, and a
//!   connection idle (nothing received, nothing running) for `idle_timeout_ms` when set,
//!   are closed: clients that never finish connecting cannot hold slots for long.
//!
//! # Errors
//! A malformed header ([`mosaic_cql::frame::FrameError`]) gets its protocol error and the connection is
//! closed (after reading what the client still sends, briefly, so the close is a FIN and
//! not a reset that could destroy the error on its way); a malformed body ([`mosaic_cql::frame::BodyError`]) gets a protocol error on its
//! stream and the connection carries on. Neither affects other connections.
//!
//! # Shutdown
//! When the shutdown signal flips, the accept loop stops, every reader stops reading, the
//! requests already running finish and are answered, and each connection closes once its
//! writer has flushed. [`serve`] returns when all connections are closed or the drain
//! timeout has passed (remaining connections are then dropped).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use mosaic_cql::coordinator::Coordinator;
use mosaic_cql::frame::{
    AuthResponse, Compression, Consistency, ErrorKind, ErrorResponse, Event, EventType,
    FrameReader, Opcode, ProtocolVersion, Request, RequestFrame, Response, ResponseEncoder,
    ResponseExtras, ResultBody, Startup, Supported,
};
use mosaic_cql::processor::{Processor, Session};
use parking_lot::Mutex;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{broadcast, mpsc, watch, OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinSet;

use crate::auth::{AuthStart, AuthStep, Authenticator, SaslNegotiator};
use crate::config::LimitsConfig;
use crate::logging::{self, Statement};
use crate::tls::{Accepted, ClientTls};

mod admission;
mod execute;
mod in_flight;
mod writer;

use admission::{Admission, Refusal, Ticket};
use execute::{execute, Reply};
use in_flight::{ByteBudget, InFlightBytes};
use writer::write_loop;

/// Events a slow connection may have pending before it loses the oldest.
const EVENT_QUEUE_MAX: usize = 1024;
/// Connection-level answers the writer channel holds beyond the in-flight cap.
const WRITER_QUEUE_EXTRA: usize = 16;
/// Bytes the reader asks the socket for at a time (at least).
const READ_CHUNK_BYTES: usize = 16 * 1024;
/// After a fatal error, how long the connection waits for the client to close.
const LINGER: Duration = Duration::from_secs(2);
/// After a fatal error, how many bytes the connection discards while it waits.
const LINGER_BYTES_MAX: usize = 1 << 20;
/// Prepared statements' texts remembered for the slow-query log; past it the memory is
/// cleared (a slow EXECUTE then shows its id instead of its text).
const PREPARED_TEXTS_MAX: usize = 4096;

/// What every connection of the node shares.
pub struct Shared<C> {
    /// Executes statements.
    pub processor: Processor<C>,
    /// Decides how connections authenticate.
    pub authenticator: Arc<dyn Authenticator>,
    /// Bounds.
    pub limits: LimitsConfig,
    events: broadcast::Sender<Event>,
    node_permits: Arc<Semaphore>,
    /// The node's budget of request bytes in flight.
    node_bytes: ByteBudget,
    /// Requests slower than this are logged (`[log] slow_query_ms`); `None`: none are.
    slow_query: Option<Duration>,
    /// The text of each statement prepared through this node, by id, for the slow-query
    /// log (the statement layer keeps only the parsed statement).
    prepared_texts: Mutex<HashMap<Bytes, String>>,
    /// `[client_encryption]`: connections go through TLS first (`None`: plaintext only).
    tls: Option<Arc<ClientTls>>,
}

impl<C: Coordinator> Shared<C> {
    /// State shared by the connections of a node executing on `processor`.
    pub fn new(
        processor: Processor<C>,
        authenticator: Arc<dyn Authenticator>,
        limits: LimitsConfig,
    ) -> Shared<C> {
        let (events, _) = broadcast::channel(EVENT_QUEUE_MAX);
        Shared {
            processor,
            authenticator,
            node_permits: Arc::new(Semaphore::new(limits.node_requests_concurrent_max)),
            node_bytes: ByteBudget::new(limits.request_bytes_in_flight_max),
            limits,
            events,
            slow_query: None,
            prepared_texts: Mutex::new(HashMap::new()),
            tls: None,
        }
    }

    /// Serves connections through `tls` (`None`: plaintext only).
    pub fn with_tls(mut self, tls: Option<Arc<ClientTls>>) -> Shared<C> {
        self.tls = tls;
        self
    }

    /// Logs requests slower than `threshold` (`None`: none).
    pub fn with_slow_query(mut self, threshold: Option<Duration>) -> Shared<C> {
        self.slow_query = threshold;
        self
    }

    /// Remembers the text of a statement just prepared.
    fn remember_prepared(&self, id: &Bytes, text: String) {
        let mut texts = self.prepared_texts.lock();
        if texts.len() >= PREPARED_TEXTS_MAX && !texts.contains_key(id) {
            texts.clear();
        }
        texts.insert(id.clone(), text);
    }

    /// Logs `request` if it took longer than the slow-query threshold.
    fn check_slow(&self, request: (Statement, Option<Consistency>), elapsed: Duration) {
        if !logging::is_slow(elapsed, self.slow_query) {
            return;
        }
        let (statement, consistency) = request;
        let text =
            logging::statement_text(&statement, |id| self.prepared_texts.lock().get(id).cloned());
        logging::log_slow_query(&text, consistency, elapsed);
    }

    /// Pushes `event` to every connection registered for its type.
    pub fn publish(&self, event: Event) {
        // An error only means no connection is listening.
        let _ = self.events.send(event);
    }
}

/// Accepts connections until `shutdown` flips, then drains them for at most
/// `drain_timeout` (see the module doc).
pub async fn serve<C: Coordinator>(
    listener: TcpListener,
    shared: Arc<Shared<C>>,
    mut shutdown: watch::Receiver<bool>,
    drain_timeout: Duration,
) {
    let admission = Admission::new(
        shared.limits.connection_count_max,
        shared.limits.connections_per_address_max,
        shared.limits.request_bytes_in_flight_per_address_max,
    );
    let mut connections = JoinSet::new();
    loop {
        if *shutdown.borrow() {
            break;
        }
        tokio::select! {
            changed = shutdown.changed() => {
                if changed.is_err() {
                    break;
                }
            }
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
            accepted = listener.accept() => match accepted {
                Ok((socket, peer)) => {
                    let ticket = match admission.admit(peer) {
                        Ok(ticket) => ticket,
                        Err(refusal) => {
                            let why = match refusal {
                                Refusal::Full => format!(
                                    "connection_count_max ({}) reached, every connection past its handshake",
                                    shared.limits.connection_count_max
                                ),
                                Refusal::AddressFull => format!(
                                    "connections_per_address_max ({}) reached for {}",
                                    shared.limits.connections_per_address_max,
                                    peer.ip()
                                ),
                            };
                            tracing::warn!(target: "mosaic::net", %peer, "refusing connection: {why}");
                            drop(socket);
                            continue;
                        }
                    };
                    let shared = shared.clone();
                    let shutdown = shutdown.clone();
                    connections.spawn(async move {
                        run_connection(socket, peer, shared, shutdown, ticket).await;
                    });
                }
                Err(e) => {
                    // Out of descriptors and the like: keep serving the others, but don't
                    // spin on a persistent error.
                    tracing::warn!(target: "mosaic::net", error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            },
        }
    }
    drop(listener);
    let drained = tokio::time::timeout(drain_timeout, async {
        while connections.join_next().await.is_some() {}
    })
    .await;
    if drained.is_err() {
        tracing::warn!(
            target: "mosaic::net",
            connections = connections.len(),
            drain_timeout_ms = drain_timeout.as_millis() as u64,
            "connections still busy after the drain timeout; closing them"
        );
        connections.shutdown().await;
    }
}

/// A message to a connection's writer.
enum Outgoing {
    /// An encoded frame.
    Frame(Bytes),
    /// A statement's answer, and its request's bytes, released once it is written.
    Answer(Bytes, Option<InFlightBytes>),
    /// From now on, send frames in v5 segments compressed with this (a v5 connection's
    /// answer to STARTUP has just been queued, unsegmented).
    StartSegments(Option<Compression>),
    /// From now on, push events of these types, encoded with this encoder.
    Subscribe {
        events: Vec<EventType>,
        encoder: ResponseEncoder,
    },
    /// Flush what came before, then close the connection.
    Close,
}

/// Where a connection is in Cassandra's state machine.
enum Phase {
    /// Before STARTUP: only OPTIONS and STARTUP are allowed.
    Uninitialized,
    /// After STARTUP, before AUTH_SUCCESS: only AUTH_RESPONSE is allowed.
    Authenticating(Box<dyn SaslNegotiator>),
    /// Requests allowed.
    Ready,
}

/// Whether the reader goes on.
#[derive(PartialEq, Eq)]
enum Flow {
    Continue,
    Stop(Ending),
}

/// The reader's state.
struct Connection<C> {
    shared: Arc<Shared<C>>,
    peer: SocketAddr,
    tx: mpsc::Sender<Outgoing>,
    phase: Phase,
    /// Fixed by the first frame; later frames must use it.
    version: Option<ProtocolVersion>,
    compression: Option<Compression>,
    /// Takes request frames off the socket's bytes (in segments once a v5 handshake is done).
    reader: FrameReader,
    session: Arc<Mutex<Session>>,
    in_flight: Arc<Semaphore>,
    shutdown: watch::Receiver<bool>,
    /// The connection's registration (see [`admission`]).
    ticket: Ticket,
    /// When the handshake must be done by (`None` once it is).
    handshake_deadline: Option<tokio::time::Instant>,
    /// STARTUP's `THROW_ON_OVERLOAD`: answer Overloaded rather than wait for request bytes.
    throw_on_overload: bool,
}

async fn run_connection<C: Coordinator>(
    socket: TcpStream,
    peer: SocketAddr,
    shared: Arc<Shared<C>>,
    mut shutdown: watch::Receiver<bool>,
    mut ticket: Ticket,
) {
    // Responses are written whole by the writer; Nagle would only delay them.
    let _ = socket.set_nodelay(true);
    // The handshake deadline, shutdown and displacement cover the TLS handshake too.
    let deadline =
        tokio::time::Instant::now() + Duration::from_millis(shared.limits.handshake_timeout_ms);
    let Some(tls) = shared.tls.clone() else {
        let (rd, wr) = socket.into_split();
        return run_stream(rd, wr, peer, shared, shutdown, ticket, deadline).await;
    };
    let cancelled = async {
        tokio::select! {
            _ = shutdown.changed() => {}
            _ = ticket.displaced.changed() => {}
        }
    };
    match tls.accept_by(socket, peer, deadline, cancelled).await {
        Accepted::Tls(stream) => {
            let (rd, wr) = tokio::io::split(*stream);
            run_stream(rd, wr, peer, shared, shutdown, ticket, deadline).await;
        }
        Accepted::Plain(socket) => {
            let (rd, wr) = socket.into_split();
            run_stream(rd, wr, peer, shared, shutdown, ticket, deadline).await;
        }
        Accepted::Closed => {}
    }
}

/// Runs the CQL state machine over a connection's (plaintext or TLS) halves.
async fn run_stream<C, R, W>(
    rd: R,
    wr: W,
    peer: SocketAddr,
    shared: Arc<Shared<C>>,
    shutdown: watch::Receiver<bool>,
    ticket: Ticket,
    handshake_deadline: tokio::time::Instant,
) where
    C: Coordinator,
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let in_flight_max = shared.limits.connection_requests_in_flight_max;
    let (tx, rx) = mpsc::channel(in_flight_max.saturating_add(WRITER_QUEUE_EXTRA));
    let writer = tokio::spawn(write_loop(wr, rx, shared.events.clone()));
    let frame_len_max = shared.limits.frame_size_bytes_max;
    let mut conn = Connection {
        shared,
        peer,
        tx,
        phase: Phase::Uninitialized,
        version: None,
        compression: None,
        reader: FrameReader::new(frame_len_max),
        session: Arc::new(Mutex::new(Session::new(ProtocolVersion::MAX))),
        in_flight: Arc::new(Semaphore::new(in_flight_max)),
        shutdown,
        ticket,
        handshake_deadline: Some(handshake_deadline),
        throw_on_overload: false,
    };
    let mut rd = rd;
    let ending = conn.read_loop(&mut rd).await;
    // The writer ends once every running request has sent its response and dropped its
    // sender (or at a Close, or when the socket fails).
    drop(conn);
    let _ = writer.await;
    if ending == Ending::Fatal {
        // The writer has sent the error and a FIN. Closing with unread bytes in the socket
        // would send a reset instead, which can destroy the error before the client reads
        // it; so read and discard until the client closes, within bounds.
        let _ = tokio::time::timeout(LINGER, linger(&mut rd)).await;
    }
}

/// Resolves at `deadline`, never without one.
async fn sleep_until_some(deadline: Option<tokio::time::Instant>) {
    match deadline {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// Resolves after `duration`, never without one.
async fn sleep_some(duration: Option<Duration>) {
    match duration {
        Some(d) => tokio::time::sleep(d).await,
        None => std::future::pending().await,
    }
}

/// Reads and discards at most [`LINGER_BYTES_MAX`] bytes, until end of stream.
async fn linger(rd: &mut (impl AsyncRead + Unpin)) {
    let mut scratch = vec![0u8; READ_CHUNK_BYTES];
    let mut total = 0;
    while total < LINGER_BYTES_MAX {
        match rd.read(&mut scratch).await {
            Ok(0) | Err(_) => return,
            Ok(n) => total += n,
        }
    }
}

/// Why a reader stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ending {
    /// The client closed its side, the socket failed, or the writer is gone.
    Closed,
    /// The node is shutting down.
    Shutdown,
    /// A frame error: the connection is being closed after an error response.
    Fatal,
}

impl<C: Coordinator> Connection<C> {
    async fn read_loop(&mut self, rd: &mut (impl AsyncRead + Unpin)) -> Ending {
        let mut buf = BytesMut::with_capacity(READ_CHUNK_BYTES);
        loop {
            loop {
                match self.reader.next_frame(&mut buf) {
                    Ok(Some(frame)) => match self.handle_frame(frame).await {
                        Flow::Continue => {}
                        Flow::Stop(ending) => return ending,
                    },
                    Ok(None) => break,
                    Err(e) => {
                        tracing::info!(
                            target: "mosaic::net",
                            peer = %self.peer,
                            error = %e,
                            "closing connection after a malformed frame or segment"
                        );
                        let mut out = BytesMut::new();
                        e.encode_response(&mut out);
                        self.send(Outgoing::Frame(out.freeze())).await;
                        self.send(Outgoing::Close).await;
                        return Ending::Fatal;
                    }
                }
            }
            if *self.shutdown.borrow() {
                return Ending::Shutdown;
            }
            if buf.capacity() - buf.len() < READ_CHUNK_BYTES {
                buf.reserve(READ_CHUNK_BYTES);
            }
            let handshake = self.handshake_deadline;
            let idle = self.idle_timeout();
            tokio::select! {
                biased;
                _ = self.shutdown.changed() => return Ending::Shutdown,
                _ = self.tx.closed() => return Ending::Closed,
                _ = self.ticket.displaced.changed() => return Ending::Closed,
                _ = sleep_until_some(handshake) => {
                    tracing::info!(
                        target: "mosaic::net",
                        peer = %self.peer,
                        handshake_timeout_ms = self.shared.limits.handshake_timeout_ms,
                        "closing a connection that did not complete its handshake in time"
                    );
                    return Ending::Closed;
                }
                _ = sleep_some(idle) => {
                    tracing::debug!(target: "mosaic::net", peer = %self.peer, "closing an idle connection");
                    return Ending::Closed;
                }
                read = rd.read_buf(&mut buf) => match read {
                    Ok(0) | Err(_) => return Ending::Closed,
                    Ok(_) => {}
                },
            }
        }
    }

    /// How long the connection may stay silent before it is closed: the idle timeout,
    /// when set and nothing of the connection is running.
    fn idle_timeout(&self) -> Option<Duration> {
        let ms = self.shared.limits.idle_timeout_ms;
        let idle = self.in_flight.available_permits()
            == self.shared.limits.connection_requests_in_flight_max;
        (ms > 0 && idle).then(|| Duration::from_millis(ms))
    }

    /// The handshake is done: the connection keeps its slot and has no deadline.
    fn handshake_done(&mut self) {
        self.handshake_deadline = None;
        self.ticket.ready();
    }

    /// Queues `message` for the writer (waiting for room: back-pressure). A closed writer
    /// means the socket is gone; the reader notices through `tx.closed()`.
    async fn send(&self, message: Outgoing) {
        let _ = self.tx.send(message).await;
    }

    /// Encodes and queues `response` answering `stream`.
    async fn respond(&self, encoder: ResponseEncoder, stream: i16, response: &Response) {
        self.send(Outgoing::Frame(encode(encoder, stream, response)))
            .await;
    }

    /// Answers one frame: connection-level requests here, in order; statements here until
    /// they first wait, then on their own tasks ([`Self::dispatch`]).
    async fn handle_frame(&mut self, frame: RequestFrame) -> Flow {
        let frame_bytes = frame
            .body
            .len()
            .saturating_add(mosaic_cql::frame::HEADER_LEN);
        let version = match self.check_version(&frame).await {
            Ok(v) => v,
            Err(flow) => return flow,
        };
        let encoder = ResponseEncoder::new(version, self.compression);
        let stream = frame.stream;
        if let Some(message) = self.unexpected(frame.opcode) {
            self.respond(encoder, stream, &protocol_error(message))
                .await;
            return Flow::Continue;
        }
        let request = match frame.decode(self.compression) {
            Ok(r) => r,
            Err(e) => {
                self.respond(encoder, stream, &Response::Error(e.to_error_response()))
                    .await;
                return Flow::Continue;
            }
        };
        match request {
            Request::Options => {
                self.respond(encoder, stream, &Response::Supported(Supported::default()))
                    .await;
            }
            Request::Startup(startup) => self.startup(version, encoder, stream, startup).await,
            Request::AuthResponse(auth) => self.auth_response(encoder, stream, auth).await,
            Request::Register(register) => {
                self.respond(encoder, stream, &Response::Ready).await;
                self.send(Outgoing::Subscribe {
                    events: register.events,
                    encoder,
                })
                .await;
            }
            request => return self.dispatch(encoder, stream, request, frame_bytes).await,
        }
        Flow::Continue
    }

    /// The connection's protocol version: set by its first frame, which every later frame
    /// must repeat (a mismatch is fatal, as in Cassandra: the client has lost track of the
    /// stream).
    async fn check_version(&mut self, frame: &RequestFrame) -> Result<ProtocolVersion, Flow> {
        match self.version {
            None => {
                self.version = Some(frame.version);
                self.session.lock().version = frame.version;
                Ok(frame.version)
            }
            Some(v) if v != frame.version => {
                let error = protocol_error(format!(
                    "Invalid message version. Got {} but previous messages on this connection \
                     had version {}",
                    frame.version, v
                ));
                self.respond(
                    ResponseEncoder::new(frame.version, None),
                    frame.stream,
                    &error,
                )
                .await;
                self.send(Outgoing::Close).await;
                Err(Flow::Stop(Ending::Fatal))
            }
            Some(v) => Ok(v),
        }
    }

    /// STARTUP: negotiates compression, then READY or the authenticator's challenge.
    async fn startup(
        &mut self,
        version: ProtocolVersion,
        encoder: ResponseEncoder,
        stream: i16,
        startup: Startup,
    ) {
        let options = match startup.negotiate() {
            Ok(options) => options,
            Err(e) => {
                self.respond(encoder, stream, &Response::Error(e.to_error_response()))
                    .await;
                return;
            }
        };
        self.compression = options.compression;
        self.throw_on_overload = options.throw_on_overload;
        tracing::debug!(
            target: "mosaic::net",
            peer = %self.peer,
            %version,
            compression = options.compression.map_or("none", Compression::name),
            driver = startup.option("DRIVER_NAME").unwrap_or("?"),
            driver_version = startup.option("DRIVER_VERSION").unwrap_or("?"),
            "connection started"
        );
        let encoder = ResponseEncoder::new(version, self.compression);
        match self.shared.authenticator.clone().start(self.peer) {
            AuthStart::Ready => {
                self.phase = Phase::Ready;
                self.handshake_done();
                self.respond(encoder, stream, &Response::Ready).await;
            }
            AuthStart::Challenge {
                authenticator,
                negotiator,
            } => {
                self.phase = Phase::Authenticating(negotiator);
                self.respond(encoder, stream, &Response::Authenticate { authenticator })
                    .await;
            }
        }
        // v5: the READY or AUTHENTICATE just queued is the last unsegmented frame each way
        // (the spec's §2.3.1; the Python driver and gocql switch on receiving it). Bytes the
        // client sent after STARTUP are still in the reader's buffer, undecoded: they are
        // read as segments too.
        if version >= ProtocolVersion::V5 {
            self.reader.start_segments(self.compression);
            self.send(Outgoing::StartSegments(self.compression)).await;
        }
    }

    /// AUTH_RESPONSE: one step of the SASL exchange.
    async fn auth_response(&mut self, encoder: ResponseEncoder, stream: i16, auth: AuthResponse) {
        let step = match &mut self.phase {
            Phase::Authenticating(negotiator) => negotiator.evaluate(auth.token),
            // `unexpected` lets AUTH_RESPONSE through only while authenticating.
            Phase::Uninitialized | Phase::Ready => return,
        };
        // The connection reads nothing more until this is decided (a client must not
        // send anything else before the answer anyway).
        let response = match step.await {
            AuthStep::Challenge(token) => Response::AuthChallenge { token },
            AuthStep::Success { token, user } => {
                self.phase = Phase::Ready;
                self.session.lock().user = user;
                self.handshake_done();
                Response::AuthSuccess { token }
            }
            AuthStep::Failed(message) => {
                Response::Error(ErrorResponse::new(ErrorKind::BadCredentials, message))
            }
        };
        self.respond(encoder, stream, &response).await;
    }

    /// Cassandra's check of a message against the connection's state
    /// (`ServerConnection.validateNewMessage`): the protocol error's text, if refused.
    fn unexpected(&self, opcode: Opcode) -> Option<String> {
        let name = opcode.name();
        match (&self.phase, opcode) {
            (Phase::Uninitialized, Opcode::Startup | Opcode::Options) => None,
            (Phase::Uninitialized, _) => Some(format!(
                "Unexpected message {name}, expecting STARTUP or OPTIONS"
            )),
            (Phase::Authenticating(_), Opcode::AuthResponse) => None,
            (Phase::Authenticating(_), _) => Some(format!(
                "Unexpected message {name}, needs authentication through AUTH_RESPONSE message"
            )),
            (Phase::Ready, Opcode::Startup) => Some(format!(
                "Unexpected message {name}, the connection is already initialized"
            )),
            (Phase::Ready, Opcode::AuthResponse) => Some(format!(
                "Unexpected message {name}, the connection is already authenticated"
            )),
            (Phase::Ready, _) => None,
        }
    }

    /// Runs a statement request once the connection has an in-flight slot and its
    /// `frame_bytes` are free in the address's and node's budgets (waiting for them, or
    /// answering Overloaded with `THROW_ON_OVERLOAD`: [`in_flight`]): here until it first
    /// waits, then on its own task.
    async fn dispatch(
        &mut self,
        encoder: ResponseEncoder,
        stream: i16,
        request: Request,
        frame_bytes: usize,
    ) -> Flow {
        // Requests still buffered when shutdown begins are not started (the client sees
        // the connection close without their answers, and may retry them elsewhere).
        if *self.shutdown.borrow() {
            return Flow::Stop(Ending::Shutdown);
        }
        let in_flight = self.in_flight.clone();
        let (address, node) = (
            self.ticket.address_bytes.clone(),
            self.shared.node_bytes.clone(),
        );
        let throw = self.throw_on_overload;
        let admitted = async move {
            let permit = in_flight.acquire_owned().await.ok()?;
            let bytes = if throw {
                in_flight::try_take(&address, &node, frame_bytes)
            } else {
                Some(in_flight::take(address, node, frame_bytes).await?)
            };
            Some((permit, bytes))
        };
        let (permit, bytes) = tokio::select! {
            biased;
            _ = self.shutdown.changed() => return Flow::Stop(Ending::Shutdown),
            _ = self.tx.closed() => return Flow::Stop(Ending::Closed),
            admitted = admitted => match admitted {
                Some(a) => a,
                None => return Flow::Stop(Ending::Closed),
            },
        };
        let Some(bytes) = bytes else {
            drop(permit);
            self.respond(encoder, stream, &in_flight::overloaded())
                .await;
            return Flow::Continue;
        };
        let shared = self.shared.clone();
        let session = self.session.clone();
        let reply = Reply {
            tx: Some(self.tx.clone()),
            encoder,
            stream,
            peer: self.peer,
            bytes: Some(bytes),
            _permit: permit,
        };
        // Most statements finish without waiting: run them here, spawn only those that wait.
        mosaic_cluster::env::run_or_spawn(
            Box::pin(execute(shared, session, request, reply)),
            |rest| {
                tokio::spawn(rest);
            },
        );
        Flow::Continue
    }
}

fn protocol_error(message: String) -> Response {
    Response::Error(ErrorResponse::new(ErrorKind::Protocol, message))
}

/// The frame answering `stream`; a response that can't be encoded (a result too large
/// for a frame) becomes a Server error saying so.
fn encode(encoder: ResponseEncoder, stream: i16, response: &Response) -> Bytes {
    encode_with(encoder, stream, &ResponseExtras::default(), response)
}

/// [`encode`] with the response's warnings (and tracing id).
fn encode_with(
    encoder: ResponseEncoder,
    stream: i16,
    extras: &ResponseExtras,
    response: &Response,
) -> Bytes {
    let mut out = BytesMut::new();
    if let Err(e) = encoder.encode_with(&mut out, stream, extras, response) {
        let error = Response::Error(ErrorResponse::new(
            ErrorKind::Server,
            format!("Could not encode the response: {e}"),
        ));
        // A short error always encodes; if it somehow doesn't, the frame is empty and the
        // client times out on that stream rather than reading garbage.
        let _ = encoder.encode(&mut out, stream, &error);
    }
    out.freeze()
}
