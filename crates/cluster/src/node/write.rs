//! The coordinator's write path: a write is grouped by table and replica list, checked for
//! availability before anything is sent, hinted to replicas known down, sent to the live
//! ones, and answered once every group has its consistency level's acknowledgements
//! (Cassandra's `AbstractWriteResponseHandler`); replicas still silent at the deadline of a
//! successful write get hints.

use super::*;

/// The writes of one table to one replica list.
pub(super) struct WriteGroup {
    pub(super) table: TableKey,
    pub(super) replicas: Vec<Endpoint>,
    /// Which replicas' acknowledgements count, and how many (per datacenter for
    /// `EACH_QUORUM`; the coordinator's datacenter only for the LOCAL_* levels). Every
    /// replica gets the write whatever counts, as in Cassandra.
    pub(super) quorum: Quorum,
    pub(super) mutations: Vec<WireMutation>,
    /// A Paxos commit's partition and ballot: the replicas apply the writes and record
    /// the commit (`PaxosCommit`); a hint carries the writes alone.
    pub(super) paxos: Option<(Vec<u8>, crate::paxos::Ballot)>,
}

/// A write sent to one replica of one group.
type WriteCall = BoxFuture<'static, (usize, Endpoint, Result<Body, NoAnswer>)>;

impl Node {
    /// Applies `mutations` (table, token, write) at `cl` (see the module doc).
    pub async fn write(
        &self,
        mutations: Vec<(TableKey, Token, WireMutation)>,
        cl: ConsistencyLevel,
    ) -> Result<(), ClusterError> {
        self.check_mutation_size(mutations.iter().map(|(_, _, m)| m))?;
        let groups = self.group_writes(mutations, cl)?;
        self.write_groups(groups, cl).await
    }

    /// Refuses a write larger than `mutation_size_bytes_max` (see
    /// [`ClusterError::MutationTooLarge`]).
    pub(super) fn check_mutation_size<'a>(
        &self,
        mutations: impl Iterator<Item = &'a WireMutation>,
    ) -> Result<(), ClusterError> {
        let max = self.inner.config.mutation_size_bytes_max;
        let bytes = mutations.map(|m| m.key.len() + m.fragment.len()).sum();
        if bytes > max {
            return Err(ClusterError::MutationTooLarge { bytes, max });
        }
        Ok(())
    }

    /// Sends each group's writes to its replicas and waits for `cl` (see [`Node::write`]).
    pub(super) async fn write_groups(
        &self,
        groups: Vec<WriteGroup>,
        cl: ConsistencyLevel,
    ) -> Result<(), ClusterError> {
        // Availability first: nothing is sent unless every group can succeed (ANY is
        // satisfied by a hint).
        let now = self.now_ms();
        let (alive, down) = self.live_replicas(&groups, cl)?;
        let groups = Arc::new(groups);
        // Hints for replicas known down (within the window), stored before anything is
        // sent, so an acknowledged write always reaches them eventually.
        let hinted = self.hint_down_replicas(&groups, &down, now).await;
        let calls = self.send_writes(&groups, &alive);
        // Per group, per counted group of replicas (one unless EACH_QUORUM).
        let sent: Vec<Vec<usize>> = groups
            .iter()
            .zip(&alive)
            .map(|(g, live)| g.quorum.per_group(live))
            .collect();
        let mut acks: Vec<Vec<usize>> = groups.iter().map(|g| vec![0; g.quorum.groups()]).collect();
        if cl == ConsistencyLevel::Any {
            // A stored hint counts as the write for ANY (one group: every replica).
            for (a, h) in acks.iter_mut().zip(&hinted) {
                if let Some(first) = a.first_mut() {
                    *first = *h;
                }
            }
        }
        let unacked: Vec<(usize, Endpoint)> = groups
            .iter()
            .zip(&alive)
            .enumerate()
            .flat_map(|(gi, (_, live))| live.iter().map(move |r| (gi, *r)))
            .collect();
        WriteHandler {
            failed: acks.iter().map(|a| vec![0; a.len()]).collect(),
            deadline: self.inner.runtime.sleep(self.inner.config.write_timeout_ms),
            groups,
            cl,
            calls,
            sent,
            acks,
            first_failure: None,
            unacked,
        }
        .run(self)
        .await
    }

    /// Groups writes by table and replica list (one message per replica and group).
    pub(super) fn group_writes(
        &self,
        mutations: Vec<(TableKey, Token, WireMutation)>,
        cl: ConsistencyLevel,
    ) -> Result<Vec<WriteGroup>, ClusterError> {
        let ring = self.ring();
        let mut groups: Vec<WriteGroup> = Vec::new();
        let mut index: HashMap<(TableKey, Vec<Endpoint>), usize> = HashMap::new();
        for (table, token, m) in mutations {
            let placement = self.placement(table)?;
            let (replicas, natural) = self.write_replicas(&ring, token, &placement);
            let gi = *index.entry((table, replicas.clone())).or_insert_with(|| {
                let quorum = self.write_quorum(cl, &placement, &ring, &replicas, natural);
                groups.push(WriteGroup {
                    table,
                    quorum,
                    replicas,
                    mutations: Vec::new(),
                    paxos: None,
                });
                groups.len() - 1
            });
            if let Some(g) = groups.get_mut(gi) {
                g.mutations.push(m);
            }
        }
        Ok(groups)
    }

    /// The replicas a write of `token` goes to: the token's replicas and, while a node
    /// joins or leaves, after them its pending replicas (the nodes the range moves to);
    /// and how many of them are the token's replicas of now.
    pub(super) fn write_replicas(
        &self,
        ring: &Ring,
        token: Token,
        placement: &ReplicationStrategy,
    ) -> (Vec<Endpoint>, usize) {
        let mut replicas = ring.place(token, placement);
        let natural = replicas.len();
        replicas.extend(ring.pending(token, placement));
        (replicas, natural)
    }

    /// What `cl` counts of a write's `replicas` ([`Node::write_replicas`], the first
    /// `natural` of them the token's replicas of now): pending ones count on top of the
    /// level ([`Quorum::with_pending`]).
    pub(super) fn write_quorum(
        &self,
        cl: ConsistencyLevel,
        placement: &ReplicationStrategy,
        ring: &Ring,
        replicas: &[Endpoint],
        natural: usize,
    ) -> Quorum {
        let (now, pending) = replicas.split_at(natural.min(replicas.len()));
        let quorum = self.quorum(cl, placement, ring, now);
        if pending.is_empty() {
            return quorum;
        }
        quorum.with_pending(cl, placement, ring, pending, ring.dc_of(self.endpoint()))
    }

    /// Each group's live and down replicas; `Unavailable` when a group has too few live
    /// ones for `cl`.
    #[allow(clippy::type_complexity)] // Two parallel lists, one entry per group.
    fn live_replicas(
        &self,
        groups: &[WriteGroup],
        cl: ConsistencyLevel,
    ) -> Result<(Vec<Vec<Endpoint>>, Vec<Vec<Endpoint>>), ClusterError> {
        let (alive, down): (Vec<Vec<Endpoint>>, Vec<Vec<Endpoint>>) = {
            let m = self.inner.membership.lock();
            groups
                .iter()
                .map(|g| g.replicas.iter().partition(|r| m.is_alive(**r)))
                .unzip()
        };
        if cl != ConsistencyLevel::Any {
            for (g, live) in groups.iter().zip(&alive) {
                g.quorum.check_live(cl, live)?;
            }
        }
        Ok((alive, down))
    }

    /// Stores hints for the replicas known down (within the hint window); how many were
    /// stored per group.
    async fn hint_down_replicas(
        &self,
        groups: &[WriteGroup],
        down: &[Vec<Endpoint>],
        now: u64,
    ) -> Vec<usize> {
        let mut hinted = vec![0usize; groups.len()];
        for (gi, (g, dead)) in groups.iter().zip(down).enumerate() {
            for r in dead {
                if self.hint_window_open(*r, now) && self.store_hint(*r, g).await {
                    hinted[gi] += 1;
                }
            }
        }
        hinted
    }

    /// Sends every group's writes to its live replicas.
    fn send_writes(
        &self,
        groups: &[WriteGroup],
        alive: &[Vec<Endpoint>],
    ) -> FuturesUnordered<WriteCall> {
        let calls: FuturesUnordered<WriteCall> = FuturesUnordered::new();
        for (gi, (g, live)) in groups.iter().zip(alive).enumerate() {
            for r in live {
                let body = match &g.paxos {
                    Some((partition, ballot)) => Body::PaxosCommit {
                        table: g.table,
                        partition: partition.clone(),
                        proposal: crate::paxos::Proposal {
                            ballot: *ballot,
                            mutations: g.mutations.clone(),
                        },
                    },
                    None => Body::Write {
                        table: g.table,
                        mutations: g.mutations.clone(),
                    },
                };
                calls.push(self.call(*r, body).map(move |(r, a)| (gi, r, a)).boxed());
            }
        }
        calls
    }

    /// Waits for the replicas of a successful write that had not answered; those still
    /// silent at the write's deadline get hints (as Cassandra's coordinator does).
    pub(super) async fn hint_stragglers(
        &self,
        mut calls: FuturesUnordered<WriteCall>,
        mut deadline: BoxFuture<'static, ()>,
        mut unacked: Vec<(usize, Endpoint)>,
        groups: &[WriteGroup],
    ) {
        while !unacked.is_empty() {
            match next_before(&mut calls, &mut deadline).await {
                Some(Some((gi, r, Ok(Body::WriteAck)))) => unacked.retain(|u| *u != (gi, r)),
                Some(Some(_)) => {}
                Some(None) | None => break,
            }
        }
        for (gi, r) in unacked {
            if let Some(g) = groups.get(gi) {
                self.store_hint(r, g).await;
            }
        }
    }
}

/// One write's acknowledgements as they arrive (Cassandra's write response handler):
/// success once every group has its block-for, failure as soon as a group cannot get it,
/// timeout at the deadline (hinting the replicas that did not answer).
struct WriteHandler {
    groups: Arc<Vec<WriteGroup>>,
    cl: ConsistencyLevel,
    calls: FuturesUnordered<WriteCall>,
    deadline: BoxFuture<'static, ()>,
    /// Per group, per counted group of its replicas: writes sent, acknowledgements,
    /// failures.
    sent: Vec<Vec<usize>>,
    acks: Vec<Vec<usize>>,
    failed: Vec<Vec<usize>>,
    first_failure: Option<Failure>,
    /// Replicas (by group) that have not acknowledged yet.
    unacked: Vec<(usize, Endpoint)>,
}

impl WriteHandler {
    fn satisfied(&self) -> bool {
        self.groups
            .iter()
            .zip(&self.acks)
            .all(|(g, a)| g.quorum.met(a))
    }

    async fn run(mut self, node: &Node) -> Result<(), ClusterError> {
        loop {
            if self.satisfied() {
                if !self.unacked.is_empty() {
                    // The rest may still answer; those that don't in time get hints.
                    let node = node.clone();
                    let WriteHandler {
                        calls,
                        deadline,
                        unacked,
                        groups,
                        ..
                    } = self;
                    node.inner.runtime.clone().spawn(
                        async move {
                            node.hint_stragglers(calls, deadline, unacked, &groups)
                                .await;
                        }
                        .boxed(),
                    );
                }
                return Ok(());
            }
            match next_before(&mut self.calls, &mut self.deadline).await {
                Some(Some((gi, r, Ok(Body::WriteAck)))) => {
                    self.unacked.retain(|u| *u != (gi, r));
                    if let Some(a) = self
                        .slot(gi, r)
                        .and_then(|q| self.acks.get_mut(gi).and_then(|a| a.get_mut(q)))
                    {
                        *a += 1;
                    }
                }
                // Silence, as far as the consistency level goes: still unacknowledged
                // (hinted if the deadline passes).
                Some(Some((_, r, Ok(Body::Failed(Failure::TimedOut(why)))))) => {
                    tracing::debug!(replica = %r, reason = %why, "replica timed out a write");
                }
                Some(Some((gi, r, Ok(Body::Failed(f))))) => self.replica_failed(gi, r, f)?,
                // A reply of the wrong kind or a dropped message: no acknowledgement.
                Some(Some(_)) => {}
                Some(None) | None => return Err(self.timed_out(node).await),
            }
        }
    }

    /// The counted group of group `gi`'s replicas `r` belongs to, if its answers count.
    fn slot(&self, gi: usize, r: Endpoint) -> Option<usize> {
        self.groups.get(gi)?.quorum.group_of(r)
    }

    /// Counts a replica's failure; an error once its group can no longer succeed.
    fn replica_failed(&mut self, gi: usize, r: Endpoint, f: Failure) -> Result<(), ClusterError> {
        let Some(q) = self.slot(gi, r) else {
            // A replica whose answers do not count (another datacenter's, for a LOCAL_*
            // level) cannot fail the write.
            return Ok(());
        };
        self.first_failure.get_or_insert(f);
        let (Some(g), Some(s), Some(x), Some(a)) = (
            self.groups.get(gi),
            self.sent.get(gi).and_then(|s| s.get(q)),
            self.failed.get_mut(gi).and_then(|x| x.get_mut(q)),
            self.acks.get(gi),
        ) else {
            return Ok(());
        };
        *x += 1;
        if s.saturating_sub(*x) < g.quorum.need(q) {
            let failed = *x;
            return Err(write_failure(
                self.cl,
                a.iter().sum(),
                g.quorum.block_for(),
                failed,
                self.first_failure.take(),
            ));
        }
        Ok(())
    }

    /// The deadline passed: hints for the silent replicas, and the timeout's counts.
    async fn timed_out(self, node: &Node) -> ClusterError {
        for (gi, r) in &self.unacked {
            if let Some(g) = self.groups.get(*gi) {
                node.store_hint(*r, g).await;
            }
        }
        let (received, block_for) = self
            .groups
            .iter()
            .zip(&self.acks)
            .find(|(g, a)| !g.quorum.met(a))
            .map_or((0, 0), |(g, a)| (a.iter().sum(), g.quorum.block_for()));
        ClusterError::WriteTimeout {
            consistency: self.cl,
            received,
            block_for,
        }
    }
}

pub(super) fn write_failure(
    cl: ConsistencyLevel,
    received: usize,
    block_for: usize,
    failed: usize,
    first: Option<Failure>,
) -> ClusterError {
    match first {
        Some(Failure::Overloaded) => ClusterError::Overloaded(format!(
            "Too many replicas overloaded to achieve {}",
            cl.name()
        )),
        f => ClusterError::WriteFailure {
            consistency: cl,
            received,
            block_for,
            failed,
            reason: f.as_ref().map(failure_text).unwrap_or_default(),
        },
    }
}
