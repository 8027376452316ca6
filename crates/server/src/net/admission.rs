//! Which connections the node keeps: the connection cap, a cap per client address, and
//! room for clients that complete their handshake over clients that never do.
//!
//! Every connection is registered from accept to close with its client address and
//! whether it has completed its handshake (STARTUP, and authentication when the node
//! asks for it). At `connection_count_max`, a new connection takes the place of the
//! oldest one still in its handshake — which is closed — so connections that never send
//! STARTUP cannot lock real clients out: a real client finishes its handshake in
//! milliseconds and is never displaced after that. Only when every connection is ready
//! is a new one refused. A connection from an address already holding
//! `connections_per_address_max` is refused (0: no cap). Handshakes that take longer
//! than `handshake_timeout_ms` are closed by the connection itself. Each address also has
//! a budget of request bytes in flight, shared by its connections ([`super::in_flight`]),
//! kept while the address has connections.

use std::collections::{BTreeMap, HashMap};
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use parking_lot::Mutex;
use tokio::sync::watch;

use super::in_flight::ByteBudget;

/// The node's connections.
pub(super) struct Admission {
    total_max: usize,
    per_address_max: usize,
    address_bytes_max: usize,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    next_id: u64,
    /// By id (ascending: oldest first).
    open: BTreeMap<u64, Entry>,
    per_address: HashMap<IpAddr, (usize, ByteBudget)>,
}

struct Entry {
    address: IpAddr,
    ready: bool,
    /// Flipped to ask the connection to close (displaced by a newer one).
    close: watch::Sender<bool>,
}

/// Why a connection was not admitted.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Refusal {
    /// Every connection slot is held by a connection past its handshake.
    Full,
    /// The client's address holds its share already.
    AddressFull,
}

/// A registered connection: unregistered when dropped.
pub(super) struct Ticket {
    admission: Arc<Admission>,
    id: u64,
    /// Flips when the node wants this connection closed.
    pub(super) displaced: watch::Receiver<bool>,
    /// The request bytes its address may have in flight.
    pub(super) address_bytes: ByteBudget,
}

impl Admission {
    pub(super) fn new(
        total_max: usize,
        per_address_max: usize,
        address_bytes_max: usize,
    ) -> Arc<Admission> {
        Arc::new(Admission {
            total_max,
            per_address_max,
            address_bytes_max,
            state: Mutex::new(State::default()),
        })
    }

    /// Registers a connection from `peer`, displacing the oldest connection still in its
    /// handshake when the node is full.
    pub(super) fn admit(self: &Arc<Self>, peer: SocketAddr) -> Result<Ticket, Refusal> {
        let address = peer.ip();
        let mut state = self.state.lock();
        let from_address = state.per_address.get(&address).map_or(0, |(n, _)| *n);
        if self.per_address_max > 0 && from_address >= self.per_address_max {
            return Err(Refusal::AddressFull);
        }
        if state.open.len() >= self.total_max {
            let oldest_pending = state
                .open
                .iter()
                .find(|(_, e)| !e.ready)
                .map(|(id, _)| *id)
                .ok_or(Refusal::Full)?;
            // Its slot is freed now; the connection closes as it sees the flag.
            if let Some(entry) = state.remove(oldest_pending) {
                let _ = entry.close.send(true);
                tracing::info!(
                    target: "mosaic::net",
                    displaced = %entry.address,
                    by = %peer,
                    "closing the oldest connection still in its handshake to admit a new one"
                );
            }
        }
        let id = state.next_id;
        state.next_id += 1;
        let (close, displaced) = watch::channel(false);
        state.open.insert(
            id,
            Entry {
                address,
                ready: false,
                close,
            },
        );
        let (count, bytes) = state
            .per_address
            .entry(address)
            .or_insert_with(|| (0, ByteBudget::new(self.address_bytes_max)));
        *count += 1;
        let address_bytes = bytes.clone();
        Ok(Ticket {
            admission: self.clone(),
            id,
            displaced,
            address_bytes,
        })
    }

    /// Connections registered now.
    #[cfg(test)]
    fn open(&self) -> usize {
        self.state.lock().open.len()
    }
}

impl State {
    fn remove(&mut self, id: u64) -> Option<Entry> {
        let entry = self.open.remove(&id)?;
        if let Some((n, _)) = self.per_address.get_mut(&entry.address) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                self.per_address.remove(&entry.address);
            }
        }
        Some(entry)
    }
}

impl Ticket {
    /// The connection completed its handshake: it keeps its slot from now on.
    pub(super) fn ready(&self) {
        if let Some(entry) = self.admission.state.lock().open.get_mut(&self.id) {
            entry.ready = true;
        }
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        self.admission.state.lock().remove(self.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn peer(last: u8, port: u16) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, last], port))
    }

    #[test]
    fn a_full_node_displaces_the_oldest_handshake_never_a_ready_connection() {
        let a = Admission::new(3, 0, 1 << 20);
        let first = a.admit(peer(1, 1)).unwrap();
        first.ready();
        let second = a.admit(peer(2, 1)).unwrap();
        let third = a.admit(peer(2, 2)).unwrap();
        // Full: the oldest connection still in its handshake (second) makes room.
        let fourth = a.admit(peer(3, 1)).unwrap();
        assert!(*second.displaced.borrow());
        assert!(!*first.displaced.borrow() && !*third.displaced.borrow());
        assert_eq!(a.open(), 3);
        third.ready();
        fourth.ready();
        // Every slot ready: refused.
        assert_eq!(a.admit(peer(4, 1)).err(), Some(Refusal::Full));
        // A closed connection frees its slot (the displaced one's was freed already).
        drop(second);
        assert_eq!(a.open(), 3);
        drop(first);
        assert!(a.admit(peer(4, 1)).is_ok());
    }

    #[test]
    fn one_address_holds_at_most_its_share() {
        let a = Admission::new(100, 2, 1 << 20);
        let x = a.admit(peer(1, 1)).unwrap();
        let _y = a.admit(peer(1, 2)).unwrap();
        assert_eq!(a.admit(peer(1, 3)).err(), Some(Refusal::AddressFull));
        assert!(a.admit(peer(2, 1)).is_ok());
        drop(x);
        assert!(a.admit(peer(1, 3)).is_ok());
    }
}
