//! The simulated network, and each node's [`Runtime`] and [`Transport`].
//!
//! Owns which node incarnation runs at each address, and every message between them.
//! A message is encoded with the real internode codec ([`encode_frame`]) when sent and
//! decoded when delivered, so every run exercises the wire format. Between the two it is
//! a task that sleeps a seeded latency; on the way it may be dropped, have a bit flipped
//! (the receiver's checksum must refuse it), or be cut by a partition. Messages to a node
//! that crashed since they were sent are lost, as a dead process's sockets are; messages
//! from it are lost too, or — as the seed says — still arrive (they were on the wire). Per link, delivery is FIFO (one TCP connection) or independently delayed
//! (reordering), as the configuration says. Messages are never duplicated.

use std::collections::BTreeMap;
use std::sync::{Arc, Weak};

use futures::future::{BoxFuture, FutureExt};
use mosaic_cluster::message::{decode_frame, encode_frame};
use mosaic_cluster::{Endpoint, Envelope, Node, Runtime, Transport};
use parking_lot::Mutex;

use crate::config::Config;
use crate::executor::{Executor, Owner};
use crate::prng::Prng;

/// What the network did (for the report).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NetStats {
    /// Messages handed to the network.
    pub sent: u64,
    /// Messages handed to a node.
    pub delivered: u64,
    /// Messages lost at random.
    pub dropped: u64,
    /// Messages damaged in flight (and refused by the receiver's checksum).
    pub corrupted: u64,
    /// Messages cut by a partition.
    pub cut: u64,
    /// Messages lost because their sender or receiver crashed.
    pub lost_to_crash: u64,
    /// Sends refused at once (the receiver was down).
    pub refused: u64,
    /// Answers sent to a node that restarted since it asked: they reach an incarnation
    /// that never made the request, and must not complete one of its own by id.
    pub answers_to_later_incarnation: u64,
}

struct Slot {
    endpoint: Endpoint,
    /// The running incarnation, if any.
    node: Option<(Node, Owner)>,
}

struct State {
    rng: Prng,
    slots: Vec<Slot>,
    by_endpoint: BTreeMap<Endpoint, usize>,
    /// Each node's side while partitioned: messages only flow within a side.
    sides: Option<Vec<bool>>,
    /// Per link, the latest delivery time scheduled (FIFO links).
    link_last: BTreeMap<(usize, usize), u64>,
    /// The incarnation that sent each request still unanswered, by (node, request id,
    /// node asked).
    asked_by: BTreeMap<(usize, u64, usize), Owner>,
    drop_ppm: u32,
    corrupt_ppm: u32,
    stats: NetStats,
    trace: xxhash_rust::xxh3::Xxh3,
    problems: Vec<String>,
}

/// The network (see the module doc).
pub struct Network {
    exec: Arc<Executor>,
    state: Mutex<State>,
    latency_min_us: u64,
    latency_max_us: u64,
    fifo: bool,
    sent_outlives_sender: bool,
    me: Weak<Network>,
}

/// The address of node `index`.
pub fn endpoint(index: usize) -> Endpoint {
    Endpoint::from(([10, 0, 0, index as u8 + 1], 7000))
}

impl Network {
    /// A network of `config.slots()` addresses, none running yet.
    pub fn new(exec: Arc<Executor>, config: &Config, rng: Prng) -> Arc<Network> {
        let slots: Vec<Slot> = (0..config.slots())
            .map(|i| Slot {
                endpoint: endpoint(i),
                node: None,
            })
            .collect();
        let by_endpoint = slots
            .iter()
            .enumerate()
            .map(|(i, s)| (s.endpoint, i))
            .collect();
        Arc::new_cyclic(|me| Network {
            exec,
            state: Mutex::new(State {
                rng,
                slots,
                by_endpoint,
                sides: None,
                link_last: BTreeMap::new(),
                asked_by: BTreeMap::new(),
                drop_ppm: config.drop_ppm,
                corrupt_ppm: config.corrupt_ppm,
                stats: NetStats::default(),
                trace: xxhash_rust::xxh3::Xxh3::new(),
                problems: Vec::new(),
            }),
            latency_min_us: config.latency_min_us,
            latency_max_us: config.latency_max_us,
            fifo: config.fifo_links,
            sent_outlives_sender: config.sent_outlives_sender,
            me: me.clone(),
        })
    }

    /// Makes `node` (incarnation `owner`) the one running at address `index`.
    pub fn install(&self, index: usize, node: Node, owner: Owner) {
        if let Some(slot) = self.state.lock().slots.get_mut(index) {
            slot.node = Some((node, owner));
        }
    }

    /// Takes the node at `index` off the network; returns its incarnation.
    pub fn remove(&self, index: usize) -> Option<(Node, Owner)> {
        self.state
            .lock()
            .slots
            .get_mut(index)
            .and_then(|s| s.node.take())
    }

    /// The node running at `index`.
    pub fn node(&self, index: usize) -> Option<(Node, Owner)> {
        self.state
            .lock()
            .slots
            .get(index)
            .and_then(|s| s.node.clone())
    }

    /// Indexes of the running nodes.
    pub fn running(&self) -> Vec<usize> {
        let s = self.state.lock();
        (0..s.slots.len())
            .filter(|i| s.slots.get(*i).is_some_and(|s| s.node.is_some()))
            .collect()
    }

    /// Cuts the network in two: `side[i]` says which side node `i` is on.
    pub fn partition(&self, side: Vec<bool>) {
        self.state.lock().sides = Some(side);
    }

    /// Ends any partition.
    pub fn heal(&self) {
        self.state.lock().sides = None;
    }

    /// Stops dropping and damaging messages (faults are over).
    pub fn calm(&self) {
        let mut s = self.state.lock();
        s.drop_ppm = 0;
        s.corrupt_ppm = 0;
    }

    /// Whether a partition is in force.
    pub fn partitioned(&self) -> bool {
        self.state.lock().sides.is_some()
    }

    /// What the network did.
    pub fn stats(&self) -> NetStats {
        self.state.lock().stats.clone()
    }

    /// A digest of every delivery (time, link, bytes), in order.
    pub fn trace_hash(&self) -> u64 {
        self.state.lock().trace.digest()
    }

    /// Codec failures seen (a frame that should have decoded and did not, or the reverse).
    pub fn problems(&self) -> Vec<String> {
        self.state.lock().problems.clone()
    }

    fn cut(s: &State, a: usize, b: usize) -> bool {
        s.sides
            .as_ref()
            .is_some_and(|sides| sides.get(a) != sides.get(b))
    }

    fn incarnation(s: &State, index: usize) -> Option<Owner> {
        s.slots
            .get(index)
            .and_then(|slot| slot.node.as_ref().map(|(_, o)| *o))
    }

    fn send(&self, from: usize, from_owner: Owner, to: Endpoint, env: &Envelope) -> bool {
        let mut frame = encode_frame(env);
        let now = self.exec.now_micros();
        let mut s = self.state.lock();
        s.stats.sent += 1;
        if Self::incarnation(&s, from) != Some(from_owner) {
            // A crashed incarnation's leftovers never reach the wire.
            s.stats.lost_to_crash += 1;
            return false;
        }
        let Some(&to_index) = s.by_endpoint.get(&to) else {
            s.stats.refused += 1;
            return false;
        };
        let Some(to_owner) = Self::incarnation(&s, to_index) else {
            s.stats.refused += 1;
            return false;
        };
        if env.body.is_response() {
            let asked = s.asked_by.remove(&(to_index, env.id, from));
            if asked.is_some_and(|o| o != to_owner) {
                s.stats.answers_to_later_incarnation += 1;
            }
        } else if env.id != 0 {
            s.asked_by.insert((from, env.id, to_index), from_owner);
        }
        if Self::cut(&s, from, to_index) {
            s.stats.cut += 1;
            return true;
        }
        let (drop_ppm, corrupt_ppm) = (s.drop_ppm, s.corrupt_ppm);
        if s.rng.chance(drop_ppm) {
            s.stats.dropped += 1;
            return true;
        }
        let corrupted = s.rng.chance(corrupt_ppm);
        if corrupted && !frame.is_empty() {
            let at = s.rng.index(frame.len());
            let bit = 1u8 << s.rng.below(8);
            if let Some(b) = frame.get_mut(at) {
                *b ^= bit;
            }
        }
        let mut at = now + s.rng.between(self.latency_min_us, self.latency_max_us);
        if self.fifo {
            let last = s.link_last.entry((from, to_index)).or_insert(0);
            at = at.max(*last);
            *last = at;
        }
        drop(s);
        let Some(net) = self.me.upgrade() else {
            return false;
        };
        let sleep = self.exec.sleep(at - now);
        self.exec.spawn(
            Owner::WORLD,
            async move {
                sleep.await;
                net.deliver(from, from_owner, to_index, to_owner, &frame, corrupted);
            }
            .boxed(),
        );
        true
    }

    fn deliver(
        &self,
        from: usize,
        from_owner: Owner,
        to: usize,
        to_owner: Owner,
        frame: &[u8],
        corrupted: bool,
    ) {
        let now = self.exec.now_micros();
        let node = {
            let mut s = self.state.lock();
            let sender_gone = Self::incarnation(&s, from) != Some(from_owner);
            if (sender_gone && !self.sent_outlives_sender)
                || Self::incarnation(&s, to) != Some(to_owner)
            {
                s.stats.lost_to_crash += 1;
                return;
            }
            if Self::cut(&s, from, to) {
                s.stats.cut += 1;
                return;
            }
            let decoded = decode_frame(frame);
            let env = match (decoded, corrupted) {
                (Ok(Some((env, used))), false) if used == frame.len() => env,
                (Err(_) | Ok(None), true) => {
                    // The receiver refused the damaged frame (and would close the link).
                    s.stats.corrupted += 1;
                    return;
                }
                (Ok(Some((env, _))), true) => {
                    s.problems
                        .push(format!("a damaged frame was accepted as {env:?}"));
                    return;
                }
                (other, _) => {
                    s.problems
                        .push(format!("a sound frame failed to decode: {other:?}"));
                    return;
                }
            };
            s.stats.delivered += 1;
            s.trace.update(&now.to_le_bytes());
            s.trace.update(&[from as u8, to as u8]);
            s.trace.update(frame);
            s.slots
                .get(to)
                .and_then(|slot| slot.node.as_ref().map(|(n, _)| n.clone()))
                .map(|n| (n, env))
        };
        if let Some((node, env)) = node {
            node.receive(env);
        }
    }
}

/// A node incarnation's transport.
pub struct SimTransport {
    net: Arc<Network>,
    index: usize,
    owner: Owner,
}

impl SimTransport {
    /// The transport of node `index`'s incarnation `owner`.
    pub fn new(net: Arc<Network>, index: usize, owner: Owner) -> SimTransport {
        SimTransport { net, index, owner }
    }
}

impl Transport for SimTransport {
    fn send(&self, to: Endpoint, env: Envelope) -> bool {
        self.net.send(self.index, self.owner, to, &env)
    }
}

/// A node incarnation's clock, tasks and randomness.
pub struct SimRuntime {
    exec: Arc<Executor>,
    owner: Owner,
    rng: Mutex<Prng>,
}

impl SimRuntime {
    /// The runtime of incarnation `owner`, drawing from `rng`.
    pub fn new(exec: Arc<Executor>, owner: Owner, rng: Prng) -> SimRuntime {
        SimRuntime {
            exec,
            owner,
            rng: Mutex::new(rng),
        }
    }
}

impl Runtime for SimRuntime {
    fn now_micros(&self) -> u64 {
        self.exec.now_micros()
    }

    fn sleep(&self, ms: u64) -> BoxFuture<'static, ()> {
        self.exec.sleep(ms.saturating_mul(1000)).boxed()
    }

    fn spawn(&self, task: BoxFuture<'static, ()>) {
        self.exec.spawn(self.owner, task);
    }

    fn random(&self) -> u64 {
        self.rng.lock().next_u64()
    }
}
