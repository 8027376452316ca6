//! Paxos rounds for lightweight transactions (see [`crate::paxos`] for the protocol): the
//! coordinator's phases ([`Node::paxos_begin`], [`Node::paxos_propose_and_commit`]) and
//! the replica's answers, each under the partition's lock so that loading, changing and
//! saving its state is one step.

use std::hash::{Hash, Hasher};

use super::write::write_failure;
use super::*;
use crate::paxos::{Ballot, PaxosState, Promises, Proposal};

/// Stripes of the replicas' per-partition Paxos locks.
pub(super) const PAXOS_LOCKS: usize = 64;

/// Longest pause between two attempts of a contended round (Cassandra waits a random
/// time below 100 ms).
const CONTENTION_PAUSE_MS: u64 = 100;

/// A round whose ballot a quorum promised, with nothing left in progress: the
/// coordinator may read, decide and propose under it.
#[derive(Clone, Debug)]
pub struct PaxosRound {
    /// The ballot (the update is written at its `micros`).
    pub ballot: Ballot,
    table: TableKey,
    token: Token,
    partition: Vec<u8>,
    serial: ConsistencyLevel,
    deadline_ms: u64,
}

/// How a proposal fared.
enum Proposed {
    /// A quorum accepted it.
    Accepted,
    /// Every replica refused it.
    Refused,
    /// Fewer than a quorum accepted it, at least one did.
    Partial { accepted: usize },
}

/// The replicas a round talks to: the live ones, and how many must answer.
struct Participants {
    live: Vec<Endpoint>,
    required: usize,
}

impl Node {
    /// Phase 1 and repair (Cassandra's `beginAndRepairPaxos`): prepares ballots for the
    /// partition until a quorum of its replicas (at `serial`) promises one, finishing any
    /// proposal left in progress (committed at `commit`) and bringing replicas that missed
    /// the newest commit up to date. Contention past the node's
    /// `cas_contention_timeout_ms` (counted from `since`, a round of the same transaction
    /// that lost, or from now) is [`ClusterError::CasTimeout`].
    pub async fn paxos_begin(
        &self,
        table: TableKey,
        token: Token,
        partition: Vec<u8>,
        serial: ConsistencyLevel,
        commit: ConsistencyLevel,
        since: Option<&PaxosRound>,
    ) -> Result<PaxosRound, ClusterError> {
        let deadline_ms = since.map_or_else(
            || self.now_ms() + self.inner.config.cas_contention_timeout_ms,
            |r| r.deadline_ms,
        );
        let mut floor = since.map_or(Ballot::ZERO, |r| r.ballot);
        if since.is_some() {
            // The transaction's last round lost: let the winner finish first.
            self.contention_pause().await;
        }
        loop {
            let who = self.paxos_participants(table, token, serial)?;
            if self.now_ms() >= deadline_ms {
                return Err(ClusterError::CasTimeout {
                    consistency: serial,
                    received: 0,
                    block_for: who.required,
                });
            }
            let ballot = self.next_ballot(floor);
            let promises = self
                .prepare_round(table, &partition, ballot, &who, serial)
                .await?;
            if promises.granted() < who.required {
                floor = floor.max(promises.highest());
                self.contention_pause().await;
                continue;
            }
            if let Some(newest) = promises.most_recent_commit() {
                if newest.ballot.micros >= ballot.micros {
                    // A commit in the same microsecond (another coordinator's ballot, a
                    // lower id): this round's update would share its write timestamp and
                    // could lose to it in the merge. Start again above it.
                    floor = floor.max(newest.ballot);
                    continue;
                }
            }
            if let Some(in_progress) = promises.in_progress() {
                // A proposal a quorum may have accepted: finish it under this ballot
                // before anything else is decided.
                let proposal = Proposal {
                    ballot,
                    mutations: in_progress.mutations.clone(),
                };
                let round = PaxosRound {
                    ballot,
                    table,
                    token,
                    partition: partition.clone(),
                    serial,
                    deadline_ms,
                };
                if !self
                    .propose_and_commit(&round, proposal.mutations, commit, false)
                    .await?
                {
                    floor = floor.max(ballot);
                    self.contention_pause().await;
                }
                continue;
            }
            let missing = promises.missing_most_recent_commit();
            if let (Some(newest), false) = (promises.most_recent_commit(), missing.is_empty()) {
                if !self
                    .commit_to(table, &partition, newest.clone(), &missing)
                    .await
                {
                    // A replica that did not take the commit could answer a read without
                    // it: try again (Cassandra does the same).
                    self.contention_pause().await;
                    continue;
                }
            }
            return Ok(PaxosRound {
                ballot,
                table,
                token,
                partition,
                serial,
                deadline_ms,
            });
        }
    }

    /// Phases 2 and 3: proposes `mutations` under the round's ballot and, when a quorum
    /// accepts, commits them at `commit`. `false`: every replica refused (one had promised
    /// a higher ballot: begin a new round). A proposal some replica accepted without a
    /// quorum may still be finished by a later round, so its outcome is unknown:
    /// [`ClusterError::CasTimeout`], as Cassandra answers.
    pub async fn paxos_propose_and_commit(
        &self,
        round: &PaxosRound,
        mutations: Vec<WireMutation>,
        commit: ConsistencyLevel,
    ) -> Result<bool, ClusterError> {
        self.check_mutation_size(mutations.iter())?;
        self.propose_and_commit(round, mutations, commit, true)
            .await
    }

    /// [`Self::paxos_propose_and_commit`]; `strict`: a partly accepted proposal is a
    /// timeout (a transaction's own), else a refusal (finishing another's: start again).
    async fn propose_and_commit(
        &self,
        round: &PaxosRound,
        mutations: Vec<WireMutation>,
        commit: ConsistencyLevel,
        strict: bool,
    ) -> Result<bool, ClusterError> {
        let who = self.paxos_participants(round.table, round.token, round.serial)?;
        let proposal = Proposal {
            ballot: round.ballot,
            mutations,
        };
        match self.propose_round(round, &proposal, &who).await? {
            Proposed::Accepted => {}
            Proposed::Refused => return Ok(false),
            Proposed::Partial { accepted } if strict => {
                return Err(ClusterError::CasTimeout {
                    consistency: round.serial,
                    received: accepted,
                    block_for: who.required,
                })
            }
            Proposed::Partial { .. } => return Ok(false),
        }
        let placement = self.placement(round.table)?;
        let ring = self.ring();
        let (replicas, natural) = self.write_replicas(&ring, round.token, &placement);
        let quorum = self.write_quorum(commit, &placement, &ring, &replicas, natural);
        let group = WriteGroup {
            table: round.table,
            quorum,
            replicas,
            mutations: proposal.mutations,
            paxos: Some((round.partition.clone(), round.ballot)),
        };
        self.write_groups(vec![group], commit).await?;
        Ok(true)
    }

    /// The partition's live replicas and the quorum `serial` needs; `Unavailable` when
    /// too few are alive.
    fn paxos_participants(
        &self,
        table: TableKey,
        token: Token,
        serial: ConsistencyLevel,
    ) -> Result<Participants, ClusterError> {
        let placement = self.placement(table)?;
        let ring = self.ring();
        // SERIAL: every replica takes part; LOCAL_SERIAL: the coordinator's datacenter's
        // alone (Cassandra's Paxos in one datacenter). A pending replica takes part too
        // and is needed on top, as in Cassandra.
        let (replicas, natural) = self.write_replicas(&ring, token, &placement);
        let quorum = self.write_quorum(serial, &placement, &ring, &replicas, natural);
        let live: Vec<Endpoint> = {
            let m = self.inner.membership.lock();
            replicas
                .into_iter()
                .filter(|r| quorum.counts(*r) && m.is_alive(*r))
                .collect()
        };
        quorum.check_live(serial, &live)?;
        Ok(Participants {
            live,
            required: quorum.block_for(),
        })
    }

    /// A ballot above `floor` and above every ballot this node chose before.
    fn next_ballot(&self, floor: Ballot) -> Ballot {
        let now = self.inner.runtime.wall_micros();
        let mut last = self.inner.last_ballot_micros.load(Ordering::SeqCst);
        loop {
            let micros = now.max(last + 1).max(floor.micros + 1);
            match self.inner.last_ballot_micros.compare_exchange(
                last,
                micros,
                Ordering::SeqCst,
                Ordering::SeqCst,
            ) {
                Ok(_) => {
                    return Ballot {
                        micros,
                        node: self.ballot_id(),
                    }
                }
                Err(seen) => last = seen,
            }
        }
    }

    /// This node's id in its ballots (a hash of its endpoint).
    fn ballot_id(&self) -> u64 {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        self.endpoint().hash(&mut h);
        h.finish()
    }

    async fn contention_pause(&self) {
        let ms = self.inner.runtime.random() % CONTENTION_PAUSE_MS;
        self.inner.runtime.sleep(ms).await;
    }

    /// Sends the prepare to every live replica; returns once `required` promised, one
    /// refused (contention), or all answered. Silence past the write timeout is
    /// [`ClusterError::CasTimeout`].
    async fn prepare_round(
        &self,
        table: TableKey,
        partition: &[u8],
        ballot: Ballot,
        who: &Participants,
        serial: ConsistencyLevel,
    ) -> Result<Promises<Endpoint>, ClusterError> {
        let mut calls: FuturesUnordered<CallFuture> = who
            .live
            .iter()
            .map(|r| {
                self.call(
                    *r,
                    Body::PaxosPrepare {
                        table,
                        partition: partition.to_vec(),
                        ballot,
                    },
                )
            })
            .collect();
        let mut deadline = self.inner.runtime.sleep(self.inner.config.write_timeout_ms);
        let mut promises = Promises::default();
        let mut outstanding = who.live.len();
        let mut first_failure = None;
        while promises.granted() < who.required {
            match next_before(&mut calls, &mut deadline).await {
                Some(Some((r, Ok(Body::PaxosPromise(p))))) => {
                    outstanding -= 1;
                    let refused = !p.promised;
                    promises.answers.push((r, p));
                    if refused {
                        return Ok(promises);
                    }
                }
                Some(Some((_, answer))) => {
                    outstanding -= 1;
                    if let Ok(Body::Failed(f)) = answer {
                        first_failure.get_or_insert(f);
                    }
                    if promises.granted() + outstanding < who.required {
                        let failed = who.live.len() - outstanding - promises.answers.len();
                        return Err(write_failure(
                            serial,
                            promises.granted(),
                            who.required,
                            failed,
                            first_failure,
                        ));
                    }
                }
                Some(None) | None => {
                    return Err(ClusterError::CasTimeout {
                        consistency: serial,
                        received: promises.granted(),
                        block_for: who.required,
                    })
                }
            }
        }
        Ok(promises)
    }

    /// Sends the proposal to every live replica: `Accepted` once `required` accepted;
    /// otherwise, once every replica answered, `Refused` when every one refused (nothing
    /// was accepted anywhere: the transaction may start again) or `Partial` (a replica
    /// accepted it, so a later round may still finish it: its outcome is unknown).
    async fn propose_round(
        &self,
        round: &PaxosRound,
        proposal: &Proposal,
        who: &Participants,
    ) -> Result<Proposed, ClusterError> {
        let mut calls: FuturesUnordered<CallFuture> = who
            .live
            .iter()
            .map(|r| {
                self.call(
                    *r,
                    Body::PaxosPropose {
                        table: round.table,
                        partition: round.partition.clone(),
                        proposal: proposal.clone(),
                    },
                )
            })
            .collect();
        let mut deadline = self.inner.runtime.sleep(self.inner.config.write_timeout_ms);
        let (mut accepted, mut refused, mut failed) = (0, 0, 0);
        let mut first_failure = None;
        while accepted < who.required {
            if accepted + refused + failed == who.live.len() {
                if refused == who.live.len() {
                    return Ok(Proposed::Refused);
                }
                if accepted == 0 && refused == 0 {
                    return Err(write_failure(
                        round.serial,
                        accepted,
                        who.required,
                        failed,
                        first_failure,
                    ));
                }
                return Ok(Proposed::Partial { accepted });
            }
            match next_before(&mut calls, &mut deadline).await {
                Some(Some((_, Ok(Body::PaxosAccepted { accepted: true })))) => accepted += 1,
                Some(Some((_, Ok(Body::PaxosAccepted { accepted: false })))) => refused += 1,
                Some(Some((_, answer))) => {
                    failed += 1;
                    if let Ok(Body::Failed(f)) = answer {
                        first_failure.get_or_insert(f);
                    }
                }
                Some(None) | None => {
                    return Err(ClusterError::CasTimeout {
                        consistency: round.serial,
                        received: accepted,
                        block_for: who.required,
                    })
                }
            }
        }
        Ok(Proposed::Accepted)
    }

    /// Commits `proposal` to `replicas` (those that missed it) and waits for all of them;
    /// whether every one took it in time.
    async fn commit_to(
        &self,
        table: TableKey,
        partition: &[u8],
        proposal: Proposal,
        replicas: &[Endpoint],
    ) -> bool {
        let mut calls: FuturesUnordered<CallFuture> = replicas
            .iter()
            .map(|r| {
                self.call(
                    *r,
                    Body::PaxosCommit {
                        table,
                        partition: partition.to_vec(),
                        proposal: proposal.clone(),
                    },
                )
            })
            .collect();
        let mut deadline = self.inner.runtime.sleep(self.inner.config.write_timeout_ms);
        let mut acked = 0;
        while acked < replicas.len() {
            match next_before(&mut calls, &mut deadline).await {
                Some(Some((_, Ok(Body::WriteAck)))) => acked += 1,
                _ => return false,
            }
        }
        true
    }

    /// The lock of a partition's Paxos state on this replica.
    fn paxos_lock(&self, table: TableKey, partition: &[u8]) -> &futures::lock::Mutex<()> {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        table.hash(&mut h);
        partition.hash(&mut h);
        let stripe = (h.finish() % PAXOS_LOCKS as u64) as usize;
        &self.inner.paxos_locks[stripe]
    }

    /// The replica's side of a prepare, a proposal or a commit.
    pub(super) async fn serve_paxos(&self, body: Body) -> Body {
        self.paxos_answer(body).await.unwrap_or_else(Body::Failed)
    }

    async fn paxos_answer(&self, body: Body) -> Result<Body, Failure> {
        let store = &self.inner.store;
        match body {
            Body::PaxosPrepare {
                table,
                partition,
                ballot,
            } => {
                let _held = self.paxos_lock(table, &partition).lock().await;
                let mut state = load(store, table, &partition).await?;
                let (promise, changed) = state.prepare(ballot);
                if changed {
                    store.save_paxos_state(table, partition, state).await?;
                }
                Ok(Body::PaxosPromise(promise))
            }
            Body::PaxosPropose {
                table,
                partition,
                proposal,
            } => {
                let _held = self.paxos_lock(table, &partition).lock().await;
                let mut state = load(store, table, &partition).await?;
                let accepted = state.propose(proposal);
                if accepted {
                    store.save_paxos_state(table, partition, state).await?;
                }
                Ok(Body::PaxosAccepted { accepted })
            }
            Body::PaxosCommit {
                table,
                partition,
                proposal,
            } => {
                let _held = self.paxos_lock(table, &partition).lock().await;
                // The update first: a crash between the two leaves a commit applied but
                // not recorded, which the next round's repair sends again (harmless).
                store.apply(table, proposal.mutations.clone()).await?;
                let mut state = load(store, table, &partition).await?;
                if state.commit(proposal) {
                    store.save_paxos_state(table, partition, state).await?;
                }
                Ok(Body::WriteAck)
            }
            other => Err(Failure::Storage(format!(
                "not a Paxos request: {}",
                super::replica::body_name(&other)
            ))),
        }
    }
}

async fn load(
    store: &Arc<dyn Store>,
    table: TableKey,
    partition: &[u8],
) -> Result<PaxosState, Failure> {
    Ok(store
        .paxos_state(table, partition.to_vec())
        .await?
        .unwrap_or_default())
}
