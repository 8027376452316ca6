//! Bytes of requests in flight, per node and per client address (Cassandra 4.1's
//! `native_transport_max_request_data_in_flight` and its `_per_ip` twin).
//!
//! A statement request takes its frame's size from its address's budget, then from the
//! node's, when it is read, and gives it back once its answer has been written to the
//! socket (or dropped with its connection). What happens when the bytes are not free is
//! Cassandra's choice, made by the client in STARTUP:
//! - by default the connection waits, reading nothing more (back-pressure, as at the
//!   per-connection request cap; counted by the `mosaic_cql_connections_paused` gauge,
//!   Cassandra's `PausedConnections`): an address that floods the node with large
//!   requests is throttled while clients on other addresses keep their share of the
//!   node's budget;
//! - with the STARTUP option `THROW_ON_OVERLOAD` = `1`, the request is answered
//!   Overloaded (0x1001) at once and the connection goes on reading (counted by
//!   `mosaic_cql_requests_overloaded_total`, Cassandra's `RequestDiscarded`).
//!
//! A request takes at most a whole budget, so one larger than the budget still runs —
//! alone. Waiting requests are served in arrival order (tokio's semaphore is fair: the
//! first waiter holds what is free until it has all it asked for), so a large request is
//! not starved by a stream of small ones.

use std::sync::Arc;

use mosaic_cql::frame::{ErrorKind, ErrorResponse, Response};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// The gauge of connections waiting for request bytes.
const PAUSED_GAUGE: &str = "mosaic_cql_connections_paused";
/// The counter of requests answered Overloaded for want of bytes.
const OVERLOADED_COUNTER: &str = "mosaic_cql_requests_overloaded_total";

/// A budget of bytes shared by the requests that take from it.
#[derive(Clone, Debug)]
pub(super) struct ByteBudget {
    permits: Arc<Semaphore>,
    total: usize,
}

impl ByteBudget {
    /// A budget of `total` bytes (validated by the config to fit a semaphore).
    pub(super) fn new(total: usize) -> ByteBudget {
        let total = total.clamp(1, Semaphore::MAX_PERMITS);
        ByteBudget {
            permits: Arc::new(Semaphore::new(total)),
            total,
        }
    }

    /// What a request of `bytes` takes: at least 1, at most the whole budget.
    fn share(&self, bytes: usize) -> u32 {
        u32::try_from(bytes.clamp(1, self.total)).unwrap_or(u32::MAX)
    }

    /// Waits until `bytes` (see [`Self::share`]) are free, and takes them.
    async fn take(&self, bytes: usize) -> Option<OwnedSemaphorePermit> {
        self.permits
            .clone()
            .acquire_many_owned(self.share(bytes))
            .await
            .ok()
    }

    /// Takes `bytes` if they are free now (never while earlier requests wait: they hold
    /// whatever is free).
    fn try_take(&self, bytes: usize) -> Option<OwnedSemaphorePermit> {
        self.permits
            .clone()
            .try_acquire_many_owned(self.share(bytes))
            .ok()
    }

    /// Bytes free now.
    #[cfg(test)]
    fn free(&self) -> usize {
        self.permits.available_permits()
    }
}

/// A request's bytes, held in its address's and the node's budgets until its answer is
/// written.
#[derive(Debug)]
pub(super) struct InFlightBytes {
    _address: OwnedSemaphorePermit,
    _node: OwnedSemaphorePermit,
}

/// Takes `bytes` from `address`'s budget, then from the `node`'s, if both are free now.
pub(super) fn try_take(
    address: &ByteBudget,
    node: &ByteBudget,
    bytes: usize,
) -> Option<InFlightBytes> {
    let address = address.try_take(bytes)?;
    let node = node.try_take(bytes)?;
    Some(InFlightBytes {
        _address: address,
        _node: node,
    })
}

/// Takes `bytes` from `address`'s budget, then from the `node`'s (always in this order,
/// so two requests never hold each other's bytes), waiting for them; the connection is
/// counted paused while it waits.
pub(super) async fn take(
    address: ByteBudget,
    node: ByteBudget,
    bytes: usize,
) -> Option<InFlightBytes> {
    if let Some(taken) = try_take(&address, &node, bytes) {
        return Some(taken);
    }
    let _paused = Paused::new();
    let address = address.take(bytes).await?;
    let node = node.take(bytes).await?;
    Some(InFlightBytes {
        _address: address,
        _node: node,
    })
}

/// The answer to a request refused for want of bytes (`THROW_ON_OVERLOAD`), counted.
pub(super) fn overloaded() -> Response {
    metrics::counter!(OVERLOADED_COUNTER).increment(1);
    Response::Error(ErrorResponse::new(
        ErrorKind::Overloaded,
        "Server is in overloaded state: the request bytes in flight of this client address \
         or of the node are at their limit. Cannot accept more requests at this point",
    ))
}

/// A connection counted in [`PAUSED_GAUGE`] while this lives (also when its wait is
/// abandoned: shutdown, the client gone).
struct Paused;

impl Paused {
    fn new() -> Paused {
        metrics::gauge!(PAUSED_GAUGE).increment(1.0);
        Paused
    }
}

impl Drop for Paused {
    fn drop(&mut self) {
        metrics::gauge!(PAUSED_GAUGE).decrement(1.0);
    }
}

#[cfg(test)]
mod tests {
    use tokio::task::JoinHandle;

    use super::*;

    /// A node's budget of 1000 bytes and an address's of 100.
    fn budgets() -> (ByteBudget, ByteBudget) {
        (ByteBudget::new(100), ByteBudget::new(1000))
    }

    /// A request of `bytes` served at once.
    async fn held(address: &ByteBudget, node: &ByteBudget, bytes: usize) -> InFlightBytes {
        let taken = take(address.clone(), node.clone(), bytes).await;
        taken.expect("the budgets are never closed")
    }

    /// Every byte of [`budgets`] given back.
    fn assert_all_free(address: &ByteBudget, node: &ByteBudget) {
        assert_eq!((address.free(), node.free()), (100, 1000));
    }

    /// A request of `bytes` that has to wait: spawned, and checked to be waiting.
    async fn waiting(
        address: &ByteBudget,
        node: &ByteBudget,
        bytes: usize,
    ) -> JoinHandle<Option<InFlightBytes>> {
        let task = tokio::spawn(take(address.clone(), node.clone(), bytes));
        tokio::task::yield_now().await;
        assert!(
            !task.is_finished(),
            "a request of {bytes} bytes was not held"
        );
        task
    }

    #[tokio::test]
    async fn a_request_larger_than_the_budget_runs_alone_and_others_wait_for_it() {
        let (address, node) = budgets();
        // 500 bytes: the whole of the address's budget, half the node's.
        let big = held(&address, &node, 500).await;
        assert_eq!((address.free(), node.free()), (0, 500));
        // Another request of the address waits for the big one's bytes.
        let small = waiting(&address, &node, 10).await;
        assert!(try_take(&address, &node, 10).is_none());
        // Another address is served meanwhile.
        let other = held(&ByteBudget::new(100), &node, 50).await;
        assert_eq!(node.free(), 450);
        drop(big);
        let small = small.await.unwrap().unwrap();
        assert_eq!((address.free(), node.free()), (90, 940));
        drop((small, other));
        assert_all_free(&address, &node);
    }

    #[tokio::test]
    async fn a_waiting_request_is_served_before_later_smaller_ones() {
        let (address, node) = budgets();
        let first = held(&address, &node, 60).await;
        let large = waiting(&address, &node, 60).await;
        // 40 bytes are free, but the waiting request holds them: a small one waits too.
        assert!(try_take(&address, &node, 10).is_none());
        let small = waiting(&address, &node, 10).await;
        drop(first);
        let large = large.await.unwrap().unwrap();
        let small = small.await.unwrap().unwrap();
        assert_eq!(address.free(), 30);
        drop((large, small));
        assert_all_free(&address, &node);
    }

    #[tokio::test]
    async fn bytes_of_an_abandoned_wait_are_given_back() {
        let (address, node) = budgets();
        let first = held(&address, &node, 80).await;
        let abandoned = waiting(&address, &node, 50).await;
        // The waiter holds the 20 free bytes; abandoning it (its connection closed)
        // returns them.
        assert_eq!(address.free(), 0);
        abandoned.abort();
        assert!(abandoned.await.unwrap_err().is_cancelled());
        assert_eq!(address.free(), 20);
        drop(first);
        assert_all_free(&address, &node);
    }
}
