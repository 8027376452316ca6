//! A move's long requests: a peer pulling ranges (`StreamRequest`) or re-homing them
//! (`Rehome`) may take hours, so the node asking neither gives up after a timeout nor
//! waits forever on a message a broken connection lost. It waits while the peer is alive,
//! fails the move as soon as the failure detector convicts the peer (as Cassandra fails a
//! stream session), and asks again every [`MOVE_RESEND_MS`]: the peer runs each piece of
//! work once, in the background, and a repeated request joins the one under way rather
//! than starting it over.

use futures::future::Shared;

use super::*;

/// How long a move's request waits for its answer before it is sent again.
pub(super) const MOVE_RESEND_MS: u64 = 10_000;
/// How often a waiting move's request checks that its peer is still alive.
const LIVENESS_POLL_MS: u64 = 1_000;
/// The longest one request of a move may take, however alive its peer.
const MOVE_CALL_TIMEOUT_MS: u64 = 6 * 3600 * 1000;

/// One piece of a move's work a node serves: what a repeated request is matched by.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum MoveWork {
    /// Pull `ranges` of `table` from `source`.
    Pull {
        table: TableKey,
        ranges: Vec<(i64, i64)>,
        source: Endpoint,
    },
    /// Re-home the ranges of `tables` whose role changes here.
    Rehome { tables: Vec<TableKey> },
}

impl MoveWork {
    /// The work a request asks for, `None` for any other request.
    fn of(body: &Body) -> Option<MoveWork> {
        match body {
            Body::StreamRequest {
                table,
                ranges,
                source,
            } => Some(MoveWork::Pull {
                table: *table,
                ranges: ranges.clone(),
                source: *source,
            }),
            Body::Rehome { tables } => Some(MoveWork::Rehome {
                tables: tables.clone(),
            }),
            _ => None,
        }
    }
}

/// The work this node is serving, each with its answer to come.
pub(super) type Serving = BTreeMap<MoveWork, Shared<oneshot::Receiver<Body>>>;

impl Node {
    /// Sends a move's request to `peer` and waits for its answer while `peer` is alive,
    /// sending it again every [`MOVE_RESEND_MS`] (see the module doc); why there is none
    /// when the peer is convicted down or the call outlasts [`MOVE_CALL_TIMEOUT_MS`].
    pub(super) async fn call_move(&self, peer: Endpoint, body: Body) -> Result<Body, String> {
        let started = self.now_ms();
        loop {
            let sent = self.now_ms();
            let mut call = self.call(peer, body.clone());
            loop {
                let mut tick = self.inner.runtime.sleep(LIVENESS_POLL_MS);
                let lost = match select(&mut call, &mut tick).await {
                    Either::Left(((_, Ok(answer)), _)) => return Ok(answer),
                    // No connection to the peer right now: asked again after a pause.
                    Either::Left(((_, Err(_)), _)) => {
                        tick.await;
                        true
                    }
                    Either::Right(_) => false,
                };
                let now = self.now_ms();
                if !self.is_alive(peer) {
                    return Err(format!(
                        "{peer} is down (convicted by the failure detector)"
                    ));
                }
                if now.saturating_sub(started) >= MOVE_CALL_TIMEOUT_MS {
                    return Err(format!(
                        "no answer from {peer} in {MOVE_CALL_TIMEOUT_MS} ms"
                    ));
                }
                if lost || now.saturating_sub(sent) >= MOVE_RESEND_MS {
                    break;
                }
            }
        }
    }

    /// Serves a move's `StreamRequest` or `Rehome` once however often it is asked: the
    /// work runs in the background, and a request for work under way waits for its answer.
    pub(super) async fn serve_move_work(&self, body: Body) -> Body {
        let Some(work) = MoveWork::of(&body) else {
            return Body::Failed(Failure::Storage(format!(
                "not a move's work: {}",
                replica::body_name(&body)
            )));
        };
        let answer = {
            let mut serving = self.inner.move_serving.lock();
            match serving.get(&work) {
                Some(answer) => answer.clone(),
                None => {
                    let (tx, rx) = oneshot::channel();
                    let answer = rx.shared();
                    serving.insert(work.clone(), answer.clone());
                    let node = self.clone();
                    self.inner.runtime.spawn(
                        async move {
                            let answer = node.do_move_work(body).await;
                            // Work asked for after this point runs again: a request whose
                            // answer was lost re-pulls, which stores the same entries.
                            node.inner.move_serving.lock().remove(&work);
                            let _ = tx.send(answer);
                        }
                        .boxed(),
                    );
                    answer
                }
            }
        };
        answer.await.unwrap_or_else(|_| {
            Body::Failed(Failure::Storage(
                "the move's work stopped before it finished (the node is stopping)".to_owned(),
            ))
        })
    }

    /// Does a move's work (see [`Node::serve_move_work`]).
    async fn do_move_work(&self, body: Body) -> Body {
        match body {
            Body::StreamRequest {
                table,
                ranges,
                source,
            } => {
                let mut keys = Vec::new();
                for (left, right) in &ranges {
                    keys.extend(crate::ring::token_range_keys(Token(*left), Token(*right)));
                }
                match self.pull(table, &keys, source, &self.pacer()).await {
                    Ok((entries, bytes)) => Body::Streamed { entries, bytes },
                    Err(e) => Body::Failed(Failure::Storage(e.to_string())),
                }
            }
            Body::Rehome { tables } => match self.rehome(&tables).await {
                Ok(entries) => {
                    self.note_rehomed(entries);
                    Body::Rehomed { entries }
                }
                Err(e) => Body::Failed(Failure::Storage(e.to_string())),
            },
            other => Body::Failed(Failure::Storage(format!(
                "not a move's work: {}",
                replica::body_name(&other)
            ))),
        }
    }
}
