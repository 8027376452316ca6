//! Membership: gossiped node states and the phi-accrual failure detector.
//!
//! Owns what a node believes about every other node: its latest [`EndpointState`]
//! (tokens, addresses, schema version, status) and whether it is alive. Pure decisions
//! over explicit time (`now_ms`), so the simulator drives it with a virtual clock; the
//! node ([`crate::node`]) sends the messages these functions return.
//!
//! Protocol: each round a node bumps its heartbeat and sends its whole view (`GossipSyn`)
//! to one random live peer, sometimes also to an unreachable one and to a seed (as
//! Cassandra does, so partitions heal and new nodes are found). The receiver keeps, per
//! node, the state with the larger `(generation, heartbeat)` and answers (`GossipAck`)
//! with the states it knows newer than the sender. Full views are small at the cluster
//! sizes Mosaic runs (a few hundred bytes per node).
//!
//! Failure detection is phi accrual (Hayashibara et al.), as in Cassandra: every time a
//! node's heartbeat is seen to advance, the interval since the previous advance is
//! recorded; phi = elapsed / mean interval · log10(e) (exponential arrivals), and a node
//! whose phi exceeds the threshold (default 8) is convicted. A node that gossips
//! `Shutdown` is down at once.

use std::collections::{BTreeMap, VecDeque};

use crate::message::{EndpointState, NodeStatus, RingStatus};
use crate::Endpoint;

/// Intervals kept per node.
const SAMPLE_WINDOW: usize = 1000;
use std::f64::consts::LOG10_E;

/// Arrival history of one node's heartbeats.
#[derive(Clone, Debug)]
struct Arrivals {
    last_ms: u64,
    intervals: VecDeque<u64>,
    sum: u64,
}

impl Arrivals {
    fn new(now_ms: u64, initial_interval_ms: u64) -> Arrivals {
        Arrivals {
            last_ms: now_ms,
            intervals: VecDeque::from([initial_interval_ms]),
            sum: initial_interval_ms,
        }
    }

    fn record(&mut self, now_ms: u64) {
        let interval = now_ms.saturating_sub(self.last_ms);
        self.last_ms = now_ms;
        if self.intervals.len() == SAMPLE_WINDOW {
            if let Some(old) = self.intervals.pop_front() {
                self.sum -= old;
            }
        }
        self.intervals.push_back(interval);
        self.sum += interval;
    }

    fn phi(&self, now_ms: u64) -> f64 {
        let n = self.intervals.len().max(1) as f64;
        let mean = (self.sum as f64 / n).max(1.0);
        now_ms.saturating_sub(self.last_ms) as f64 / mean * LOG10_E
    }
}

/// What changed in this node's view, for events and logs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Change {
    /// A node was seen for the first time.
    Joined(Endpoint),
    /// A node became reachable.
    Up(Endpoint),
    /// A node was convicted or shut down.
    Down(Endpoint),
    /// A known node's tokens or ring status changed (it joined, left, or finished a move):
    /// the ring must be rebuilt.
    Moved(Endpoint),
}

/// This node's view of the cluster (see the module doc).
#[derive(Clone, Debug)]
pub struct Membership {
    me: Endpoint,
    states: BTreeMap<Endpoint, EndpointState>,
    arrivals: BTreeMap<Endpoint, Arrivals>,
    alive: BTreeMap<Endpoint, bool>,
    down_since_ms: BTreeMap<Endpoint, u64>,
    phi_convict_threshold: f64,
    interval_ms: u64,
}

impl Membership {
    /// A view holding only `own`, gossiping every `interval_ms`.
    pub fn new(own: EndpointState, interval_ms: u64, phi_convict_threshold: f64) -> Membership {
        let me = own.endpoint;
        Membership {
            me,
            states: BTreeMap::from([(me, own)]),
            arrivals: BTreeMap::new(),
            alive: BTreeMap::from([(me, true)]),
            down_since_ms: BTreeMap::new(),
            phi_convict_threshold,
            interval_ms: interval_ms.max(1),
        }
    }

    /// This node.
    pub fn me(&self) -> Endpoint {
        self.me
    }

    /// This node's own state.
    pub fn own(&self) -> &EndpointState {
        // The own state is inserted at construction and never removed.
        self.states
            .get(&self.me)
            .unwrap_or_else(|| unreachable!("own state is always present"))
    }

    /// Changes this node's own state (and bumps its heartbeat so it spreads).
    pub fn update_own(&mut self, f: impl FnOnce(&mut EndpointState)) {
        if let Some(own) = self.states.get_mut(&self.me) {
            f(own);
            own.heartbeat += 1;
        }
    }

    /// Changes another node's state on its behalf (removing a dead node from the ring),
    /// with a heartbeat above its known one so the new version spreads.
    pub fn update_other(&mut self, node: Endpoint, f: impl FnOnce(&mut EndpointState)) {
        if node == self.me {
            return;
        }
        if let Some(state) = self.states.get_mut(&node) {
            f(state);
            state.heartbeat += 1;
        }
    }

    /// Every known state, this node's included.
    pub fn states(&self) -> impl Iterator<Item = &EndpointState> {
        self.states.values()
    }

    /// A known node's state.
    pub fn state(&self, node: Endpoint) -> Option<&EndpointState> {
        self.states.get(&node)
    }

    /// Whether `node` is believed alive (always true for this node).
    pub fn is_alive(&self, node: Endpoint) -> bool {
        node == self.me || self.alive.get(&node).copied().unwrap_or(false)
    }

    /// One gossip round at `now_ms`: bumps the heartbeat, re-evaluates every node's phi,
    /// and returns the changes.
    pub fn tick(&mut self, now_ms: u64) -> Vec<Change> {
        if let Some(own) = self.states.get_mut(&self.me) {
            own.heartbeat += 1;
        }
        let mut changes = Vec::new();
        for (node, arrivals) in &self.arrivals {
            // Shut down, or hibernating (replacing itself): down whatever its heartbeat.
            let serving = self
                .states
                .get(node)
                .is_none_or(|s| s.app.status == NodeStatus::Normal);
            let alive = serving && arrivals.phi(now_ms) <= self.phi_convict_threshold;
            let was = self.alive.insert(*node, alive).unwrap_or(false);
            if was && !alive {
                self.down_since_ms.insert(*node, now_ms);
                changes.push(Change::Down(*node));
            } else if !was && alive {
                self.down_since_ms.remove(node);
                changes.push(Change::Up(*node));
            }
        }
        changes
    }

    /// How long `node` has been down (`None` if alive or never seen).
    pub fn down_for_ms(&self, node: Endpoint, now_ms: u64) -> Option<u64> {
        self.down_since_ms
            .get(&node)
            .map(|since| now_ms.saturating_sub(*since))
    }

    /// Takes `states` a previous run of this node knew (persisted, as Cassandra's
    /// `system.peers`), so the ring is whole before gossip catches up; those nodes stay
    /// down until they are heard from. Known or newer states win.
    pub fn restore(&mut self, states: Vec<EndpointState>) {
        for state in states {
            if state.endpoint != self.me && !self.states.contains_key(&state.endpoint) {
                self.alive.insert(state.endpoint, false);
                self.states.insert(state.endpoint, state);
            }
        }
    }

    /// Merges states received from a peer at `now_ms`; returns the changes.
    pub fn merge(&mut self, received: Vec<EndpointState>, now_ms: u64) -> Vec<Change> {
        let mut changes = Vec::new();
        for state in received {
            let node = state.endpoint;
            if node == self.me {
                continue;
            }
            let newer = self
                .states
                .get(&node)
                .is_none_or(|known| state.version() > known.version());
            if !newer {
                continue;
            }
            // A node removed from the ring that comes back as itself (its old host id, not
            // joining afresh) stays out: its tokens are others' now.
            let resurrected = self.states.get(&node).is_some_and(|known| {
                known.app.ring_status == RingStatus::Left
                    && known.app.host_id == state.app.host_id
                    && !matches!(
                        state.app.ring_status,
                        RingStatus::Left | RingStatus::Joining
                    )
            });
            if resurrected {
                continue;
            }
            let new_generation = self
                .states
                .get(&node)
                .is_some_and(|known| state.generation > known.generation);
            let first = !self.states.contains_key(&node);
            let moved = self.states.get(&node).is_some_and(|known| {
                known.app.tokens != state.app.tokens
                    || known.app.ring_status != state.app.ring_status
            });
            let status = state.app.status;
            self.states.insert(node, state);
            if first {
                changes.push(Change::Joined(node));
            } else if moved {
                changes.push(Change::Moved(node));
            }
            match self.arrivals.get_mut(&node) {
                Some(a) if !new_generation => a.record(now_ms),
                _ => {
                    self.arrivals
                        .insert(node, Arrivals::new(now_ms, self.interval_ms * 2));
                }
            }
            let alive = status == NodeStatus::Normal;
            // A node replacing itself at its address (a new generation, hibernating) starts
            // its hint window afresh: the writes it misses while it streams are all hinted,
            // however long the dead node it replaces was down (see `NodeStatus::Hibernate`).
            if status == NodeStatus::Hibernate && (new_generation || first) {
                self.down_since_ms.insert(node, now_ms);
            }
            let was = self.alive.insert(node, alive).unwrap_or(false);
            if !was && alive {
                self.down_since_ms.remove(&node);
                changes.push(Change::Up(node));
            } else if was && !alive {
                self.down_since_ms.insert(node, now_ms);
                changes.push(Change::Down(node));
            }
        }
        changes
    }

    /// The states of `received` this node knows newer versions of, plus those it knows and
    /// `received` lacks: what a `GossipAck` carries back.
    pub fn newer_than(&self, received: &[EndpointState]) -> Vec<EndpointState> {
        self.states
            .values()
            .filter(|mine| {
                received
                    .iter()
                    .find(|r| r.endpoint == mine.endpoint)
                    .is_none_or(|r| mine.version() > r.version())
            })
            .cloned()
            .collect()
    }

    /// The other nodes, with whether each is alive.
    pub fn peers(&self) -> Vec<(Endpoint, bool)> {
        self.states
            .keys()
            .filter(|n| **n != self.me)
            .map(|n| (*n, self.is_alive(*n)))
            .collect()
    }

    /// The current phi of `node` (0 when never heard from).
    pub fn phi(&self, node: Endpoint, now_ms: u64) -> f64 {
        self.arrivals.get(&node).map_or(0.0, |a| a.phi(now_ms))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::AppState;
    use std::net::{IpAddr, Ipv4Addr, SocketAddr};

    fn ep(i: u8) -> Endpoint {
        SocketAddr::new(IpAddr::V4(Ipv4Addr::new(127, 0, 0, i)), 7000)
    }

    fn state(i: u8, generation: u64, heartbeat: u64) -> EndpointState {
        EndpointState {
            endpoint: ep(i),
            generation,
            heartbeat,
            app: AppState {
                host_id: mosaic_types::HostId([i; 16]),
                tokens: vec![i64::from(i)],
                rpc_address: ep(i).ip(),
                native_port: 9042,
                admin_port: 0,
                data_center: "datacenter1".into(),
                rack: "rack1".into(),
                release_version: "x".into(),
                schema_version: [0; 16],
                status: NodeStatus::Normal,
                ring_status: Default::default(),
                replacing: None,
                load_bytes: 0,
            },
        }
    }

    #[test]
    fn newer_states_win_and_spread_back() {
        let mut m = Membership::new(state(1, 1, 0), 1000, 8.0);
        let changes = m.merge(vec![state(2, 5, 3)], 0);
        assert_eq!(changes, vec![Change::Joined(ep(2)), Change::Up(ep(2))]);
        assert!(m.is_alive(ep(2)));
        // Older heartbeat ignored, newer taken.
        m.merge(vec![state(2, 5, 2)], 10);
        assert_eq!(m.state(ep(2)).map(|s| s.heartbeat), Some(3));
        m.merge(vec![state(2, 5, 4)], 20);
        assert_eq!(m.state(ep(2)).map(|s| s.heartbeat), Some(4));
        // A peer that knows only node 2 at an older version gets node 1 and node 2 back.
        let back = m.newer_than(&[state(2, 5, 1)]);
        let eps: Vec<_> = back.iter().map(|s| s.endpoint).collect();
        assert_eq!(eps, vec![ep(1), ep(2)]);
        assert!(m.newer_than(&[m.own().clone(), state(2, 5, 4)]).is_empty());
    }

    #[test]
    fn silence_convicts_and_a_heartbeat_revives() {
        let mut m = Membership::new(state(1, 1, 0), 1000, 8.0);
        let mut now = 0;
        let mut hb = 0;
        for _ in 0..20 {
            now += 1000;
            hb += 1;
            m.merge(vec![state(2, 1, hb)], now);
            assert!(m.tick(now).is_empty());
        }
        // phi crosses 8 after about 8 / log10(e) ≈ 18.4 mean intervals of silence.
        now += 15_000;
        assert!(m.tick(now).is_empty());
        assert!(m.is_alive(ep(2)));
        now += 5_000;
        assert_eq!(m.tick(now), vec![Change::Down(ep(2))]);
        assert!(!m.is_alive(ep(2)));
        hb += 1;
        assert_eq!(m.merge(vec![state(2, 1, hb)], now), vec![Change::Up(ep(2))]);
    }

    #[test]
    fn restored_peers_are_known_but_down_until_heard() {
        let mut m = Membership::new(state(1, 2, 0), 1000, 8.0);
        m.restore(vec![state(1, 1, 9), state(2, 1, 5)]);
        assert_eq!(m.own().generation, 2);
        assert!(!m.is_alive(ep(2)));
        assert_eq!(m.state(ep(2)).map(|s| s.heartbeat), Some(5));
        assert!(m.tick(100_000).is_empty());
        assert_eq!(m.merge(vec![state(2, 1, 6)], 0), vec![Change::Up(ep(2))]);
    }

    #[test]
    fn shutdown_is_down_at_once_and_a_restart_is_up() {
        let mut m = Membership::new(state(1, 1, 0), 1000, 8.0);
        m.merge(vec![state(2, 1, 1)], 0);
        let mut gone = state(2, 1, 2);
        gone.app.status = NodeStatus::Shutdown;
        assert_eq!(m.merge(vec![gone], 100), vec![Change::Down(ep(2))]);
        assert!(!m.is_alive(ep(2)));
        assert!(m.tick(200).is_empty());
        assert_eq!(m.merge(vec![state(2, 2, 0)], 300), vec![Change::Up(ep(2))]);
    }

    #[test]
    fn a_node_hibernating_while_it_replaces_itself_is_down_with_a_fresh_hint_window() {
        let mut m = Membership::new(state(1, 1, 0), 1000, 8.0);
        m.merge(vec![state(2, 1, 1)], 0);
        // The dead node goes silent and is convicted.
        assert_eq!(m.tick(60_000), vec![Change::Down(ep(2))]);
        assert_eq!(m.down_for_ms(ep(2), 100_000), Some(40_000));
        // Restarted empty at its address, replacing itself: a new generation, hibernating.
        let mut hibernating = state(2, 2, 0);
        hibernating.app.status = NodeStatus::Hibernate;
        assert!(m.merge(vec![hibernating.clone()], 100_000).is_empty());
        assert_eq!(m.down_for_ms(ep(2), 100_500), Some(500));
        // Its heartbeats do not bring it up, nor restart the window again.
        for beat in 1..5 {
            hibernating.heartbeat = beat;
            m.merge(vec![hibernating.clone()], 100_000 + beat * 1000);
            assert!(m.tick(100_000 + beat * 1000).is_empty());
        }
        assert!(!m.is_alive(ep(2)));
        assert_eq!(m.down_for_ms(ep(2), 105_000), Some(5_000));
        // Streamed: it gossips `Normal` and is up at once.
        let mut normal = state(2, 2, 9);
        normal.app.status = NodeStatus::Normal;
        assert_eq!(m.merge(vec![normal], 106_000), vec![Change::Up(ep(2))]);
        assert!(m.is_alive(ep(2)));
    }
}
