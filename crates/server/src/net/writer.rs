//! A connection's writer task: owns the socket's write half, coalesces ready frames into
//! one write, and pushes the events its connection registered for (see the parent
//! module's doc for the queue bounds). On a v5 connection past its handshake, frames go out
//! in segments: the coalesced ones share self-contained segments, a frame larger than a
//! segment goes out as a run of segments written one at a time.

use mosaic_cql::frame::{encode_segment, SegmentWriter, SEGMENT_PAYLOAD_MAX};

use super::*;

/// Frames the writer copies together into one write; larger frames are written directly.
const COALESCE_BYTES_MAX: usize = 64 * 1024;
/// Write buffer capacity kept between writes; a larger one is released.
const WRITE_BUFFER_KEEP_BYTES: usize = 1 << 20;

/// Which events a connection asked for, and how to encode them.
struct Subscription {
    rx: broadcast::Receiver<Event>,
    events: Vec<EventType>,
    encoder: ResponseEncoder,
}

fn event_type(event: &Event) -> Option<EventType> {
    match event {
        Event::SchemaChange(_) => Some(EventType::SchemaChange),
        Event::TopologyChange { .. } => Some(EventType::TopologyChange),
        Event::StatusChange { .. } => Some(EventType::StatusChange),
        _ => None,
    }
}

/// Receives the next event of `sub`, or never if there is no subscription.
async fn next_event(sub: &mut Option<Subscription>) -> Result<Event, broadcast::error::RecvError> {
    match sub {
        Some(s) => s.rx.recv().await,
        None => std::future::pending().await,
    }
}

/// What the writer does with one message.
enum Step {
    Continue,
    Close,
}

struct Writer<W> {
    wr: W,
    /// Bytes ready for the socket.
    buf: BytesMut,
    events: broadcast::Sender<Event>,
    sub: Option<Subscription>,
    /// v5, past the handshake: packs frames into segments (its pending frames are sealed
    /// into `buf` at each flush).
    segments: Option<SegmentWriter>,
    /// The bytes of the requests whose answers are in `buf`, released at the flush.
    answered: Vec<InFlightBytes>,
}

impl<W: AsyncWrite + Unpin> Writer<W> {
    /// Bytes taken but not yet written.
    fn buffered(&self) -> usize {
        self.buf.len() + self.segments.as_ref().map_or(0, SegmentWriter::pending_len)
    }

    /// Takes one message; large frames are written at once (after what is buffered).
    async fn take(&mut self, message: Outgoing) -> std::io::Result<Step> {
        match message {
            Outgoing::Frame(frame) => self.put_frame(&frame).await?,
            Outgoing::Answer(frame, bytes) => {
                self.put_frame(&frame).await?;
                self.answered.extend(bytes);
            }
            Outgoing::StartSegments(compression) => {
                self.segments = Some(SegmentWriter::new(compression));
            }
            Outgoing::Subscribe { events, encoder } => {
                let rx = match self.sub.take() {
                    Some(s) => s.rx,
                    None => self.events.subscribe(),
                };
                self.sub = Some(Subscription {
                    rx,
                    events,
                    encoder,
                });
            }
            Outgoing::Close => return Ok(Step::Close),
        }
        Ok(Step::Continue)
    }

    /// One whole frame: buffered, or (large) written after what is buffered.
    async fn put_frame(&mut self, frame: &[u8]) -> std::io::Result<()> {
        match &mut self.segments {
            None if frame.len() > COALESCE_BYTES_MAX => {
                self.flush().await?;
                self.wr.write_all(frame).await?;
            }
            None => self.buf.extend_from_slice(frame),
            Some(segments) if frame.len() > SEGMENT_PAYLOAD_MAX => {
                // A run of segments, each built and written in turn: a large result costs
                // one segment of memory beyond its frame, not a second copy of it.
                let compression = segments.compression();
                self.flush().await?;
                let mut segment = BytesMut::with_capacity(SEGMENT_PAYLOAD_MAX + 16);
                for chunk in frame.chunks(SEGMENT_PAYLOAD_MAX) {
                    segment.clear();
                    encode_segment(&mut segment, chunk, false, compression);
                    self.wr.write_all(&segment).await?;
                }
            }
            Some(segments) => segments.push_frame(&mut self.buf, frame),
        }
        Ok(())
    }

    fn take_event(&mut self, event: Event) {
        let Some(sub) = &self.sub else { return };
        if !event_type(&event).is_some_and(|t| sub.events.contains(&t)) {
            return;
        }
        let mut frame = BytesMut::new();
        if sub.encoder.encode_event(&mut frame, &event).is_err() {
            return;
        }
        match &mut self.segments {
            // Events are small: they always fit the segment being filled or the next one.
            Some(segments) => segments.push_frame(&mut self.buf, &frame),
            None => self.buf.extend_from_slice(&frame),
        }
    }

    async fn flush(&mut self) -> std::io::Result<()> {
        if let Some(segments) = &mut self.segments {
            segments.seal(&mut self.buf);
        }
        if !self.buf.is_empty() {
            self.wr.write_all(&self.buf).await?;
            self.buf.clear();
            if self.buf.capacity() > WRITE_BUFFER_KEEP_BYTES {
                self.buf = BytesMut::new();
            }
        }
        // A TLS stream holds encrypted records until flushed (a TCP socket's is a no-op).
        self.wr.flush().await?;
        self.answered.clear();
        Ok(())
    }
}

/// The writer task (see the module doc). Ends when every sender is gone, at a Close, or
/// when the socket fails.
pub(super) async fn write_loop<W: AsyncWrite + Unpin>(
    wr: W,
    mut rx: mpsc::Receiver<Outgoing>,
    events: broadcast::Sender<Event>,
) {
    let mut w = Writer {
        wr,
        buf: BytesMut::new(),
        events,
        sub: None,
        segments: None,
        answered: Vec::new(),
    };
    let result: std::io::Result<()> = async {
        loop {
            tokio::select! {
                biased;
                message = rx.recv() => {
                    let Some(message) = message else { break };
                    if let Step::Close = w.take(message).await? {
                        break;
                    }
                }
                event = next_event(&mut w.sub) => match event {
                    Ok(event) => w.take_event(event),
                    Err(broadcast::error::RecvError::Lagged(n)) => {
                        tracing::warn!(
                            target: "mosaic::net",
                            missed = n,
                            "a slow connection missed events"
                        );
                    }
                    Err(broadcast::error::RecvError::Closed) => w.sub = None,
                },
            }
            // Coalesce whatever else is ready into the same write.
            let mut close = false;
            while w.buffered() < COALESCE_BYTES_MAX {
                match rx.try_recv() {
                    Ok(message) => {
                        if let Step::Close = w.take(message).await? {
                            close = true;
                            break;
                        }
                    }
                    Err(_) => break,
                }
            }
            w.flush().await?;
            if close {
                break;
            }
        }
        w.flush().await?;
        w.wr.shutdown().await
    }
    .await;
    // A failed write means the client is gone; its reader sees the channel close.
    drop(result);
}
