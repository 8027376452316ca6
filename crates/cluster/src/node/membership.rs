//! Membership and schema: gossip rounds (heartbeats, failure detection, seeds), ring
//! rebuilds when nodes join, change listeners, and schema propagation (push after a local
//! change, pull from peers gossiping another version, agreement waits).

use super::*;

/// Pause between two checks of schema agreement.
const SCHEMA_POLL_MS: u64 = 200;

impl Node {
    /// Pushes this node's schema to every live peer and waits (bounded) for them to take
    /// it; returns how many did. Called after a local schema change.
    pub async fn push_schema(&self) -> usize {
        let snapshot = self.inner.store.schema();
        self.set_own_schema_version(snapshot.version);
        let peers: Vec<Endpoint> = self
            .inner
            .membership
            .lock()
            .peers()
            .into_iter()
            .filter(|(_, alive)| *alive)
            .map(|(e, _)| e)
            .collect();
        let mut calls: FuturesUnordered<CallFuture> = peers
            .into_iter()
            .map(|p| self.call(p, Body::SchemaPush(snapshot.clone())))
            .collect();
        let mut deadline = self
            .inner
            .runtime
            .sleep(self.inner.config.schema_timeout_ms);
        let mut acked = 0;
        while let Some(Some((_, answer))) = next_before(&mut calls, &mut deadline).await {
            if matches!(answer, Ok(Body::SchemaAck)) {
                acked += 1;
            }
        }
        tracing::info!(
            version = %hex(&snapshot.version),
            peers_acked = acked,
            "schema pushed"
        );
        acked
    }

    /// Waits (at most `timeout_ms`) until every live node has this node's schema version,
    /// pulling the schema from those that differ (the newer one wins everywhere); whether
    /// they agree. A node just restarted without data gets its tables this way.
    pub async fn await_schema_agreement(&self, timeout_ms: u64) -> bool {
        let start = self.now_ms();
        loop {
            let mine = self.inner.store.schema_version();
            let differing: Vec<Endpoint> = self
                .states()
                .into_iter()
                .filter(|(s, up)| *up && s.endpoint != self.endpoint())
                .filter(|(s, _)| s.app.schema_version != mine)
                .map(|(s, _)| s.endpoint)
                .collect();
            if differing.is_empty() {
                return true;
            }
            if self.now_ms().saturating_sub(start) >= timeout_ms {
                return false;
            }
            for peer in differing {
                self.send(peer, 0, Body::SchemaPull);
            }
            self.inner.runtime.sleep(SCHEMA_POLL_MS).await;
        }
    }

    pub(super) fn set_own_schema_version(&self, version: [u8; 16]) {
        let mut m = self.inner.membership.lock();
        if m.own().app.schema_version != version {
            m.update_own(|s| s.app.schema_version = version);
        }
    }

    /// Rebuilds the ring from the gossiped states: the nodes that own their tokens now
    /// (normal or leaving) and, while a node joins or leaves, the ring once that move
    /// completes (normal or joining), whose extra replicas are the *pending* ones.
    ///
    /// The ring is stored under the membership lock it was computed under, so two
    /// rebuilds racing on a multithreaded runtime (a gossip message's and an announce's)
    /// store their rings in the order they read the states and the last ring stored is
    /// the newest states'. Released before the store, an older ring could land last and
    /// stay until the next change. Nothing takes the membership lock while holding the
    /// ring's, so the order membership → ring cannot deadlock.
    pub(super) fn rebuild_ring(&self) {
        let m = self.inner.membership.lock();
        let ring = {
            let ring_of = |owns: fn(RingStatus) -> bool| {
                let owners: Vec<(Endpoint, Vec<Token>)> = m
                    .states()
                    .filter(|s| {
                        owns(s.app.ring_status) && !super::replace::replaced(m.states(), s, owns)
                    })
                    .map(|s| (s.endpoint, s.app.tokens.iter().map(|t| Token(*t)).collect()))
                    .collect();
                let locations = m.states().map(|s| {
                    let location = crate::ring::Location {
                        dc: s.app.data_center.clone(),
                        rack: s.app.rack.clone(),
                    };
                    (s.endpoint, location)
                });
                Ring::new(owners.iter().map(|(e, t)| (*e, t.as_slice()))).with_locations(locations)
            };
            let now = ring_of(RingStatus::owns_now);
            let moving = m
                .states()
                .any(|s| !matches!(s.app.ring_status, RingStatus::Normal | RingStatus::Left));
            if moving {
                let after = ring_of(RingStatus::owns_after_moves);
                now.with_future(after)
            } else {
                now
            }
        };
        *self.inner.ring.write() = Arc::new(ring);
        drop(m);
    }

    pub(super) fn apply_changes(&self, changes: &[Change]) {
        if changes.is_empty() {
            return;
        }
        for c in changes {
            match c {
                Change::Joined(peer) => tracing::info!(peer = %peer, "node joined"),
                Change::Up(peer) => {
                    tracing::info!(peer = %peer, "node up");
                    // Seen alive (perhaps through a third node's gossip): a connection to
                    // it that failed while it was down may be tried at once.
                    self.inner.transport.peer_heard(*peer);
                }
                Change::Down(peer) => tracing::warn!(peer = %peer, "node down"),
                Change::Moved(peer) => {
                    tracing::info!(peer = %peer, "node's tokens or ring status changed")
                }
            }
        }
        if changes
            .iter()
            .any(|c| matches!(c, Change::Joined(_) | Change::Moved(_)))
        {
            self.rebuild_ring();
        }
        let listeners = self.inner.listeners.lock().clone();
        if listeners.is_empty() {
            return;
        }
        for c in changes {
            let node = match c {
                Change::Joined(n) | Change::Up(n) | Change::Down(n) | Change::Moved(n) => *n,
            };
            let Some(state) = self.inner.membership.lock().state(node).cloned() else {
                continue;
            };
            for l in &listeners {
                l(c, &state);
            }
        }
    }

    pub(super) async fn gossip_loop(&self) {
        let interval = self.inner.config.gossip_interval_ms;
        while !self.inner.stopped.load(Ordering::SeqCst) {
            self.gossip_round();
            self.inner.runtime.sleep(interval).await;
        }
    }

    /// One gossip round (see [`crate::gossip`]): refresh this node's state, tick the
    /// failure detector, gossip to a live peer (sometimes a dead one, and a seed), and pull
    /// the schema from peers gossiping another version.
    pub(super) fn gossip_round(&self) {
        let now = self.now_ms();
        let view = self.tick(now);
        self.apply_changes(&view.changes);
        self.replay_due_hints();
        // The facts this node's policy wants ride on gossip too, so a coordinator hears of
        // a replica it has stopped sending reads to (Hector's periodic state propagation;
        // every node runs the same policy).
        let facts = self.own_facts();
        for t in self.gossip_targets(&view.live, &view.dead) {
            let syn = Body::GossipSyn {
                cluster: self.inner.config.cluster_name.clone(),
                states: view.states.clone(),
            };
            let body = match &facts {
                Some(facts) => Body::WithFacts {
                    facts: facts.clone(),
                    body: Box::new(syn),
                },
                None => syn,
            };
            self.send(t, 0, body);
        }
        self.pull_schemas(view.mismatched, now);
    }

    /// Refreshes this node's gossiped load and schema version and ticks the failure
    /// detector, under one lock.
    fn tick(&self, now: u64) -> RoundView {
        let load = self.inner.store.load_bytes();
        let schema = self.inner.store.schema_version();
        let mut m = self.inner.membership.lock();
        if m.own().app.load_bytes != load || m.own().app.schema_version != schema {
            m.update_own(|s| {
                s.app.load_bytes = load;
                s.app.schema_version = schema;
            });
        }
        let changes = m.tick(now);
        let states: Vec<EndpointState> = m.states().cloned().collect();
        let (live, dead): (Vec<_>, Vec<_>) = m.peers().into_iter().partition(|(_, a)| *a);
        let mismatched: Vec<Endpoint> = live
            .iter()
            .filter(|(e, _)| m.state(*e).is_some_and(|s| s.app.schema_version != schema))
            .map(|(e, _)| *e)
            .collect();
        RoundView {
            changes,
            states,
            live: live.into_iter().map(|(e, _)| e).collect(),
            dead: dead.into_iter().map(|(e, _)| e).collect(),
            mismatched,
        }
    }

    /// Whom this round gossips to: a random live peer; an unreachable one with
    /// probability dead / (live + 1), so partitions heal; a seed when the live peer was not
    /// one, so views converge. (The order of random draws is part of a simulated run.)
    fn gossip_targets(&self, live: &[Endpoint], dead: &[Endpoint]) -> Vec<Endpoint> {
        let me = self.endpoint();
        let pick = |list: &[Endpoint]| -> Option<Endpoint> {
            if list.is_empty() {
                None
            } else {
                list.get((self.inner.runtime.random() % list.len() as u64) as usize)
                    .copied()
            }
        };
        let mut targets: Vec<Endpoint> = Vec::new();
        if let Some(p) = pick(live) {
            targets.push(p);
        }
        if !dead.is_empty()
            && self.inner.runtime.random() % (live.len() as u64 + 1) < dead.len() as u64
        {
            if let Some(p) = pick(dead) {
                targets.push(p);
            }
        }
        let seeds: Vec<Endpoint> = self
            .inner
            .config
            .seeds
            .iter()
            .copied()
            .filter(|s| *s != me)
            .collect();
        if targets.first().is_none_or(|t| !seeds.contains(t)) {
            if let Some(s) = pick(&seeds) {
                targets.push(s);
            }
        }
        targets.dedup();
        targets
    }

    /// Asks each peer gossiping another schema version for its schema, at most once per
    /// two gossip intervals.
    fn pull_schemas(&self, mismatched: Vec<Endpoint>, now: u64) {
        for peer in mismatched {
            let due = {
                let mut pulls = self.inner.schema_pulls.lock();
                let last = pulls.get(&peer).copied().unwrap_or(0);
                let due = last == 0
                    || now.saturating_sub(last) >= 2 * self.inner.config.gossip_interval_ms;
                if due {
                    pulls.insert(peer, now.max(1));
                }
                due
            };
            if due {
                self.send(peer, 0, Body::SchemaPull);
            }
        }
    }
}

/// What one gossip round saw under the membership lock.
struct RoundView {
    changes: Vec<Change>,
    states: Vec<EndpointState>,
    live: Vec<Endpoint>,
    dead: Vec<Endpoint>,
    mismatched: Vec<Endpoint>,
}
