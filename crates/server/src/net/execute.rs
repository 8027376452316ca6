//! One statement request: run on the node's processor, its answer sent on its stream —
//! with the client warnings it raised (each also logged) — and its resources released
//! when the answer is queued.

use super::*;

/// Where a request's answer goes. If its task ends without answering (a panic in the
/// statement layer), dropping it answers a Server error, so the client is never left
/// waiting on the stream.
pub(super) struct Reply {
    pub(super) tx: Option<mpsc::Sender<Outgoing>>,
    pub(super) encoder: ResponseEncoder,
    pub(super) stream: i16,
    /// The client's address (for the log).
    pub(super) peer: SocketAddr,
    /// The request's bytes, handed to the writer with the answer.
    pub(super) bytes: Option<InFlightBytes>,
    pub(super) _permit: OwnedSemaphorePermit,
}

impl Reply {
    async fn send(mut self, response: &Response, warnings: Vec<String>) {
        if let Some(tx) = self.tx.take() {
            let extras = ResponseExtras {
                warnings,
                ..ResponseExtras::default()
            };
            let frame = encode_with(self.encoder, self.stream, &extras, response);
            let _ = tx.send(Outgoing::Answer(frame, self.bytes.take())).await;
        }
    }
}

impl Drop for Reply {
    fn drop(&mut self) {
        if let Some(tx) = self.tx.take() {
            let error = Response::Error(ErrorResponse::new(
                ErrorKind::Server,
                "internal error while executing the request",
            ));
            let _ = tx.try_send(Outgoing::Frame(encode(self.encoder, self.stream, &error)));
        }
    }
}

pub(super) async fn execute<C: Coordinator>(
    shared: Arc<Shared<C>>,
    session: Arc<Mutex<Session>>,
    request: Request,
    reply: Reply,
) {
    let started = Instant::now();
    let described = shared
        .slow_query
        .is_some()
        .then(|| logging::describe(&request))
        .flatten();
    let (response, warnings) = {
        let _node_permit = shared.node_permits.clone().acquire_owned().await;
        let mut snapshot = session.lock().clone();
        let response = shared.processor.process(&mut snapshot, request).await;
        (response, std::mem::take(&mut snapshot.warnings))
    };
    for warning in &warnings {
        tracing::warn!(target: "mosaic::cql", peer = %reply.peer, "{warning}");
    }
    match &response {
        Response::Result(ResultBody::SetKeyspace(keyspace)) => {
            session.lock().keyspace = Some(keyspace.clone());
        }
        Response::Result(ResultBody::Prepared(prepared)) => {
            crate::admin::prometheus::record_prepared_cache(
                shared.processor.prepared_cache_stats(),
            );
            if let Some((Statement::Text(text), _)) = &described {
                shared.remember_prepared(&prepared.id, text.clone());
            }
        }
        _ => {}
    }
    if let Some(described) = described {
        shared.check_slow(described, started.elapsed());
    }
    reply.send(&response, warnings).await;
    if let Response::Result(ResultBody::SchemaChange(change)) = response {
        shared.publish(Event::SchemaChange(change));
    }
}
