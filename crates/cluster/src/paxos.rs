//! Lightweight transactions: Cassandra's Paxos (v1), one instance per partition.
//!
//! A compare-and-set runs as Cassandra's `StorageProxy.cas` does:
//!
//! 1. **Prepare**: the coordinator picks a ballot above every ballot it has seen for the
//!    partition and asks every live replica to promise it. A replica promises a ballot
//!    greater than any it promised before and answers with the proposal it accepted
//!    last (if any) and the proposal it saw committed last. A quorum of promises (of the
//!    keyspace's replicas at `SERIAL`) wins the round; one refusal means contention: the
//!    coordinator waits a random moment below 100 ms and starts again with a higher ballot.
//! 2. **Repair**: a proposal accepted newer than the newest commit among the promises is
//!    in progress (its coordinator may have died mid-round): the coordinator proposes and
//!    commits it under its own ballot, then starts again. Replicas that missed the newest
//!    commit get it.
//! 3. **Read and decide**: the conditions are read at the serial level's quorum and
//!    checked; if they fail, the round ends without a proposal.
//! 4. **Propose**: a replica accepts a ballot at least its promised one; a quorum of
//!    accepts chooses the update (a refusal: contention, back to 1).
//! 5. **Commit**: the update is applied on the replicas at the statement's consistency
//!    level and recorded as their newest commit.
//!
//! This module holds what is pure: ballots, the state a replica keeps per partition
//! ([`PaxosState`]) and its answers ([`PaxosState::prepare`], [`PaxosState::propose`],
//! [`PaxosState::commit`]), and the coordinator's reading of a quorum of promises
//! ([`Promises`]). The node runs the rounds (`node/paxos.rs`); the [`crate::env::Store`]
//! keeps the state durably with the data.
//!
//! **Repair.** Anti-entropy repair (`node/anti_entropy.rs`) repairs Paxos state too, the
//! safe way: it compares each replica's [`PaxosSummary`] of a range and, for every
//! partition with a round left unfinished or replicas that disagree on the newest commit,
//! runs a round at every replica ([`partitions_to_repair`]). The round finishes what was
//! in progress and commits the newest commit where it is missing, so replicas converge
//! without a promise or an acceptance ever being copied from one replica to another
//! (which Paxos does not allow).
//!
//! Why v1 and not CEP-14's Paxos v2: v2 saves a round trip by reading with the prepare
//! and needs Paxos repair coordinated with topology changes; v1's rounds are simpler to
//! check (the simulator drives them through message loss and reordering) and Mosaic's
//! cluster does not yet change topology.

use serde::{Deserialize, Serialize};

use crate::message::WireMutation;

/// A Paxos ballot: a coordinator's microsecond clock and its id (ties between coordinators
/// broken by id). Ordered by time, then id; the update a ballot commits is written at its
/// `micros`.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub struct Ballot {
    /// Microseconds since the epoch (the update's write timestamp).
    pub micros: u64,
    /// The coordinator that chose it.
    pub node: u64,
}

impl Ballot {
    /// The smallest ballot: below every chosen one.
    pub const ZERO: Ballot = Ballot { micros: 0, node: 0 };
}

/// A ballot with the update it proposes (writes to one partition of one table).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Proposal {
    /// The ballot.
    pub ballot: Ballot,
    /// The update.
    pub mutations: Vec<WireMutation>,
}

/// What a replica keeps for one partition (Cassandra's `system.paxos` row).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PaxosState {
    /// The highest ballot promised.
    pub promised: Ballot,
    /// The proposal accepted last, if it is newer than the last commit.
    pub accepted: Option<Proposal>,
    /// The newest proposal seen committed.
    pub committed: Option<Proposal>,
}

/// A replica's answer to a prepare.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Promise {
    /// Whether the ballot was promised.
    pub promised: bool,
    /// The highest ballot the replica has promised (the prepared one when `promised`).
    pub highest: Ballot,
    /// The proposal the replica accepted last, newer than its last commit.
    pub accepted: Option<Proposal>,
    /// The newest proposal the replica saw committed.
    pub committed: Option<Proposal>,
}

impl PaxosState {
    /// The state's stored form (a store keeps it as bytes).
    pub fn encode(&self) -> Vec<u8> {
        // Encoding plain data into a Vec cannot fail.
        postcard::to_allocvec(self).unwrap_or_default()
    }

    /// Reads a stored state (a corrupt one is an error, never a panic).
    pub fn decode(bytes: &[u8]) -> Result<PaxosState, String> {
        postcard::from_bytes(bytes).map_err(|e| format!("undecodable Paxos state: {e}"))
    }

    /// The newest commit's ballot ([`Ballot::ZERO`] without one).
    pub fn committed_ballot(&self) -> Ballot {
        self.committed.as_ref().map_or(Ballot::ZERO, |c| c.ballot)
    }

    /// Handles a prepare of `ballot`: promised when it is above every ballot promised
    /// before. Returns the answer and whether the state changed (to be saved before the
    /// answer is sent).
    pub fn prepare(&mut self, ballot: Ballot) -> (Promise, bool) {
        let promised = ballot > self.promised;
        if promised {
            self.promised = ballot;
        }
        let promise = Promise {
            promised,
            highest: self.promised,
            accepted: self.accepted.clone(),
            committed: self.committed.clone(),
        };
        (promise, promised)
    }

    /// Handles a proposal: accepted when its ballot is at least the promised one (the
    /// promise is then raised to it). Returns whether it was accepted (the state changed
    /// then, to be saved before answering).
    pub fn propose(&mut self, proposal: Proposal) -> bool {
        if proposal.ballot < self.promised {
            return false;
        }
        self.promised = proposal.ballot;
        self.accepted = Some(proposal);
        true
    }

    /// Records a commit (whose update the replica applies): it becomes the newest commit
    /// unless a newer one is known, and an accepted proposal it supersedes is forgotten.
    /// Returns whether the state changed.
    pub fn commit(&mut self, proposal: Proposal) -> bool {
        let ballot = proposal.ballot;
        let mut changed = false;
        if ballot > self.committed_ballot() {
            self.committed = Some(proposal);
            changed = true;
        }
        if self.accepted.as_ref().is_some_and(|a| a.ballot <= ballot) {
            self.accepted = None;
            changed = true;
        }
        changed
    }
}

/// What repair compares of one replica's Paxos state for a partition.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PaxosSummary {
    /// The partition's key prefix.
    #[serde(with = "serde_bytes")]
    pub partition: Vec<u8>,
    /// The newest commit's ballot ([`Ballot::ZERO`] without one).
    pub committed: Ballot,
    /// Whether a proposal newer than that commit was accepted: a round left unfinished.
    pub unfinished: bool,
}

impl PaxosState {
    /// What repair compares of this state, as `partition`'s.
    pub fn summary(&self, partition: Vec<u8>) -> PaxosSummary {
        let committed = self.committed_ballot();
        PaxosSummary {
            partition,
            committed,
            unfinished: self.accepted.as_ref().is_some_and(|a| a.ballot > committed),
        }
    }
}

/// The partitions a Paxos repair must run a round for, given each replica's summaries
/// of one range: a round left unfinished on any replica, or replicas that disagree on the
/// newest commit (a replica without state for the partition has none). A round at every
/// replica finishes the first and brings every replica up to the newest commit.
pub fn partitions_to_repair(replicas: &[Vec<PaxosSummary>]) -> Vec<Vec<u8>> {
    let mut seen: std::collections::BTreeMap<&[u8], (Vec<Ballot>, bool)> = Default::default();
    for summaries in replicas {
        for s in summaries {
            let (ballots, unfinished) = seen.entry(&s.partition).or_default();
            ballots.push(s.committed);
            *unfinished |= s.unfinished;
        }
    }
    seen.into_iter()
        .filter(|(_, (ballots, unfinished))| {
            *unfinished
                || ballots.len() < replicas.len()
                || ballots.iter().any(|b| Some(b) != ballots.first())
        })
        .map(|(p, _)| p.to_vec())
        .collect()
}

/// The promises a prepare gathered, as the coordinator reads them.
#[derive(Debug)]
pub struct Promises<R> {
    /// `(replica, promise)` in arrival order.
    pub answers: Vec<(R, Promise)>,
}

impl<R> Default for Promises<R> {
    fn default() -> Self {
        Promises {
            answers: Vec::new(),
        }
    }
}

impl<R: Copy + PartialEq> Promises<R> {
    /// How many replicas promised.
    pub fn granted(&self) -> usize {
        self.answers.iter().filter(|(_, p)| p.promised).count()
    }

    /// The highest ballot any replica has promised (to choose the next ballot above).
    pub fn highest(&self) -> Ballot {
        self.answers
            .iter()
            .map(|(_, p)| p.highest)
            .max()
            .unwrap_or(Ballot::ZERO)
    }

    /// The newest commit any replica reported.
    pub fn most_recent_commit(&self) -> Option<&Proposal> {
        self.answers
            .iter()
            .filter_map(|(_, p)| p.committed.as_ref())
            .max_by_key(|c| c.ballot)
    }

    /// The accepted proposal to finish: the newest accepted one, when it is newer than
    /// the newest commit (an older accepted one was chosen or lost already).
    pub fn in_progress(&self) -> Option<&Proposal> {
        let committed = self.most_recent_commit().map_or(Ballot::ZERO, |c| c.ballot);
        self.answers
            .iter()
            .filter_map(|(_, p)| p.accepted.as_ref())
            .filter(|a| a.ballot > committed)
            .max_by_key(|a| a.ballot)
    }

    /// The replicas whose newest commit is older than the newest commit reported.
    pub fn missing_most_recent_commit(&self) -> Vec<R> {
        let Some(newest) = self.most_recent_commit().map(|c| c.ballot) else {
            return Vec::new();
        };
        self.answers
            .iter()
            .filter(|(_, p)| p.committed.as_ref().map_or(Ballot::ZERO, |c| c.ballot) < newest)
            .map(|(r, _)| *r)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(micros: u64, node: u64) -> Ballot {
        Ballot { micros, node }
    }

    fn p(ballot: Ballot, key: u8) -> Proposal {
        Proposal {
            ballot,
            mutations: vec![WireMutation {
                key: vec![key],
                ts: ballot.micros,
                fragment: vec![key],
            }],
        }
    }

    #[test]
    fn repair_runs_a_round_where_replicas_disagree_or_a_round_is_unfinished() {
        let sum = |partition: u8, committed: u64, unfinished: bool| PaxosSummary {
            partition: vec![partition],
            committed: b(committed, 1),
            unfinished,
        };
        // A state's summary: unfinished only when what it accepted is newer than its
        // commit.
        let mut s = PaxosState::default();
        s.prepare(b(5, 1));
        s.propose(p(b(5, 1), 1));
        assert_eq!(s.summary(vec![9]).committed, Ballot::ZERO);
        assert!(s.summary(vec![9]).unfinished);
        s.commit(p(b(5, 1), 1));
        assert_eq!(s.summary(vec![9]), {
            let mut done = sum(9, 5, false);
            done.committed = b(5, 1);
            done
        });
        let replicas = vec![
            // 1: agreed; 2: an older commit on one replica; 3: missing on one;
            // 4: unfinished on one; 5: agreed.
            vec![
                sum(1, 7, false),
                sum(2, 7, false),
                sum(3, 4, false),
                sum(4, 2, false),
                sum(5, 1, false),
            ],
            vec![
                sum(1, 7, false),
                sum(2, 6, false),
                sum(3, 4, false),
                sum(4, 2, true),
                sum(5, 1, false),
            ],
            vec![
                sum(1, 7, false),
                sum(2, 7, false),
                sum(4, 2, false),
                sum(5, 1, false),
            ],
        ];
        assert_eq!(
            partitions_to_repair(&replicas),
            vec![vec![2], vec![3], vec![4]]
        );
        assert!(partitions_to_repair(&[vec![sum(1, 3, false)], vec![sum(1, 3, false)]]).is_empty());
        assert!(partitions_to_repair(&[]).is_empty());
    }

    #[test]
    fn a_state_reads_back_as_stored_and_garbage_is_an_error() {
        let mut s = PaxosState::default();
        s.prepare(b(5, 1));
        s.propose(p(b(5, 1), 1));
        s.commit(p(b(4, 2), 2));
        assert_eq!(PaxosState::decode(&s.encode()), Ok(s.clone()));
        let bytes = s.encode();
        for len in 0..bytes.len() {
            // Truncated: an error or a shorter state, never a panic.
            let _ = PaxosState::decode(&bytes[..len]);
        }
        assert!(PaxosState::decode(&[0xff; 3]).is_err());
    }

    #[test]
    fn ballots_order_by_time_then_coordinator() {
        assert!(b(2, 0) > b(1, 9));
        assert!(b(1, 2) > b(1, 1));
        assert!(b(0, 1) > Ballot::ZERO);
    }

    #[test]
    fn a_replica_promises_only_ballots_above_its_promise() {
        let mut s = PaxosState::default();
        let (promise, changed) = s.prepare(b(5, 1));
        assert!(promise.promised && changed);
        assert_eq!(promise.highest, b(5, 1));
        // The same ballot again, or a lower one: refused, naming the promise.
        for ballot in [b(5, 1), b(4, 9), b(5, 0)] {
            let (promise, changed) = s.prepare(ballot);
            assert!(!promise.promised && !changed, "{ballot:?}");
            assert_eq!(promise.highest, b(5, 1));
        }
        assert!(s.prepare(b(5, 2)).0.promised);
    }

    #[test]
    fn a_replica_accepts_its_promised_ballot_or_higher_and_reports_it() {
        let mut s = PaxosState::default();
        s.prepare(b(5, 1));
        assert!(!s.propose(p(b(4, 1), 1)), "below the promise");
        assert_eq!(s.accepted, None);
        assert!(s.propose(p(b(5, 1), 1)));
        assert!(
            s.propose(p(b(7, 1), 2)),
            "above the promise: the promise rises"
        );
        assert_eq!(s.promised, b(7, 1));
        let (promise, _) = s.prepare(b(8, 1));
        assert_eq!(promise.accepted, Some(p(b(7, 1), 2)));
        assert_eq!(promise.committed, None);
    }

    #[test]
    fn a_commit_supersedes_what_it_chose_and_never_rolls_back() {
        let mut s = PaxosState::default();
        s.prepare(b(5, 1));
        s.propose(p(b(5, 1), 1));
        assert!(s.commit(p(b(5, 1), 1)));
        assert_eq!(s.accepted, None);
        assert_eq!(s.committed_ballot(), b(5, 1));
        // An older commit arriving late changes nothing.
        assert!(!s.commit(p(b(3, 1), 9)));
        assert_eq!(s.committed, Some(p(b(5, 1), 1)));
        // A newer accepted proposal survives an older commit.
        s.prepare(b(9, 1));
        s.propose(p(b(9, 1), 2));
        s.commit(p(b(6, 1), 3));
        assert_eq!(s.accepted, Some(p(b(9, 1), 2)));
        assert_eq!(s.committed_ballot(), b(6, 1));
    }

    fn promise(
        promised: bool,
        highest: Ballot,
        accepted: Option<Proposal>,
        committed: Option<Proposal>,
    ) -> Promise {
        Promise {
            promised,
            highest,
            accepted,
            committed,
        }
    }

    #[test]
    fn the_coordinator_finishes_the_newest_accepted_proposal_newer_than_every_commit() {
        let promises = Promises {
            answers: vec![
                (
                    1,
                    promise(true, b(9, 0), Some(p(b(4, 1), 1)), Some(p(b(5, 2), 2))),
                ),
                (2, promise(true, b(9, 0), Some(p(b(7, 3), 3)), None)),
                (
                    3,
                    promise(false, b(10, 4), Some(p(b(6, 3), 4)), Some(p(b(3, 1), 5))),
                ),
            ],
        };
        assert_eq!(promises.granted(), 2);
        assert_eq!(promises.highest(), b(10, 4));
        assert_eq!(promises.most_recent_commit(), Some(&p(b(5, 2), 2)));
        assert_eq!(promises.in_progress(), Some(&p(b(7, 3), 3)));
        assert_eq!(promises.missing_most_recent_commit(), vec![2, 3]);

        // Accepted proposals no newer than the newest commit were decided already.
        let settled = Promises {
            answers: vec![
                (
                    1,
                    promise(true, b(9, 0), Some(p(b(4, 1), 1)), Some(p(b(5, 2), 2))),
                ),
                (2, promise(true, b(9, 0), None, Some(p(b(5, 2), 2)))),
            ],
        };
        assert_eq!(settled.in_progress(), None);
        assert!(settled.missing_most_recent_commit().is_empty());
        assert_eq!(Promises::<u8>::default().most_recent_commit(), None);
    }
}
