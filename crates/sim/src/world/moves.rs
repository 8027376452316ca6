//! Topology changes among a seed's faults ([`Config::move_ppm`]): a spare node slot joins
//! (`Node::bootstrap`), a node decommissions, a dead node is removed by a live one
//! (`Node::remove_node`). One move at a time from the simulator (the cluster refuses
//! concurrent ones anyway: `OtherMove`, counted); moves race crashes, partitions, drops
//! and the clients. A move that fails is counted and leaves the node as it was (a failed
//! join is retried until it completes, also after the faults stop). Nodes that left are
//! never restarted; the settling phase and the replicas' comparison follow the final
//! ring.

use mosaic_cluster::message::RingStatus;
use mosaic_cluster::node::MoveError;

use super::*;

/// What a node slot is, as far as the simulator's moves go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Slot {
    /// Never started: a join may fill it.
    Spare,
    /// Started to join the ring (its bootstrap has not completed yet).
    Joining,
    /// In the ring (started with the cluster, or joined).
    Member,
    /// Decommissioned or removed: never started again.
    Left,
}

/// The slots' states and the move under way.
#[derive(Debug)]
pub(super) struct Topology {
    pub(super) slots: Vec<Slot>,
    /// Slots that must stay down (a removal of them is under way).
    pub(super) held_down: Vec<bool>,
    /// Whether a move task runs.
    pub(super) moving: bool,
    /// Whether any move was tried (copies on nodes that no longer replicate a key are
    /// then expected: nothing cleans them up).
    pub(super) tried: bool,
}

impl Topology {
    pub(super) fn new(nodes: usize, slots: usize) -> Topology {
        Topology {
            slots: (0..slots)
                .map(|i| if i < nodes { Slot::Member } else { Slot::Spare })
                .collect(),
            held_down: vec![false; slots],
            moving: false,
            tried: false,
        }
    }
}

/// Topology changes tried and their outcomes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MoveStats {
    /// Joins (bootstraps) completed.
    pub joins: u64,
    /// Bootstrap attempts that failed (the join is retried).
    pub joins_failed: u64,
    /// Decommissions completed.
    pub leaves: u64,
    /// Decommissions that failed (the node stays).
    pub leaves_failed: u64,
    /// Dead nodes removed.
    pub removes: u64,
    /// Removals that failed (the dead node stays in the ring).
    pub removes_failed: u64,
    /// Of the failures, those the cluster refused because another move was under way.
    pub refused_other_move: u64,
    /// Of the failures, moves still unfinished after [`MOVE_PATIENCE_MICROS`], whose node
    /// the simulator then restarted (as an operator would): a move whose call to a peer
    /// was lost, or whose peer crashed, otherwise waits out the cluster's hours-long
    /// stream timeout.
    pub abandoned: u64,
}

impl MoveStats {
    /// Adds another run's.
    pub fn add(&mut self, o: &MoveStats) {
        self.joins += o.joins;
        self.joins_failed += o.joins_failed;
        self.leaves += o.leaves;
        self.leaves_failed += o.leaves_failed;
        self.removes += o.removes;
        self.removes_failed += o.removes_failed;
        self.refused_other_move += o.refused_other_move;
        self.abandoned += o.abandoned;
    }

    /// Whether any move was tried.
    pub fn any(&self) -> bool {
        self != &MoveStats::default()
    }
}

/// Attempts at a join before the run fails it (each after a pause).
const JOIN_ATTEMPTS: u64 = 20;

/// Gossip rounds a removal waits for the dead node's conviction.
const REMOVE_WAIT_ROUNDS: usize = 200;

/// Virtual time a move may take before the simulator restarts the node running it.
pub const MOVE_PATIENCE_MICROS: u64 = 60_000_000;

/// How a move run on a node ended.
enum Ran<T> {
    /// It answered.
    Answered(T),
    /// The node crashed under it.
    Crashed,
    /// It took too long: the node was restarted.
    Abandoned,
}

/// The kinds of move the schedule draws from.
#[derive(Clone, Copy)]
enum Kind {
    Join,
    Leave,
    Remove,
}

impl World {
    pub(super) fn slot(&self, i: usize) -> Slot {
        self.topology
            .lock()
            .slots
            .get(i)
            .copied()
            .unwrap_or(Slot::Left)
    }

    fn set_slot(&self, i: usize, slot: Slot) {
        if let Some(s) = self.topology.lock().slots.get_mut(i) {
            *s = slot;
        }
    }

    /// The slots in the ring.
    pub(super) fn members(&self) -> Vec<usize> {
        let t = self.topology.lock();
        (0..t.slots.len())
            .filter(|i| t.slots.get(*i) == Some(&Slot::Member))
            .collect()
    }

    /// The running members: what clients connect to (a joining node serves no clients).
    pub(super) fn coordinators(&self) -> Vec<usize> {
        let running = self.net.running();
        if self.config.spare_nodes == 0 {
            return running;
        }
        running
            .into_iter()
            .filter(|i| self.slot(*i) == Slot::Member)
            .collect()
    }

    /// Whether a crashed node `i` may be started again (not left, not being removed).
    pub(super) fn may_restart(&self, i: usize) -> bool {
        let t = self.topology.lock();
        matches!(t.slots.get(i), Some(Slot::Member | Slot::Joining))
            && !t.held_down.get(i).copied().unwrap_or(false)
    }

    /// Whether copies on nodes that are not a key's replicas are expected.
    pub(super) fn moves_tried(&self) -> bool {
        self.topology.lock().tried
    }

    /// Every table the nodes store (the registers' too).
    fn all_tables(&self) -> Vec<mosaic_cluster::TableKey> {
        let n = self.config.tables() + usize::from(self.config.lwt.is_some());
        (0..n).map(table_key).collect()
    }

    /// Draws the next move (called by the fault schedule with its generator) and starts
    /// it; false when none applies now.
    pub(super) fn start_move(self: &Arc<Self>, rng: &mut Prng) -> bool {
        let kind = [Kind::Join, Kind::Leave, Kind::Remove][rng.index(3)];
        let (slots, running) = {
            let t = self.topology.lock();
            if t.moving {
                return false;
            }
            (t.slots.clone(), self.net.running())
        };
        let of = |want: Slot| -> Vec<usize> {
            (0..slots.len())
                .filter(|i| slots.get(*i) == Some(&want))
                .collect()
        };
        let members = of(Slot::Member);
        let live: Vec<usize> = members
            .iter()
            .copied()
            .filter(|i| running.contains(i))
            .collect();
        let dead: Vec<usize> = members
            .iter()
            .copied()
            .filter(|i| !running.contains(i))
            .collect();
        let task = match kind {
            Kind::Join => {
                let Some(i) = rng.pick(&of(Slot::Spare)) else {
                    return false;
                };
                self.clone().join(i).boxed()
            }
            Kind::Leave => {
                let Some(i) = rng.pick(&live) else {
                    return false;
                };
                self.clone().leave(i).boxed()
            }
            Kind::Remove => {
                let Some(by) = rng.pick(&live) else {
                    return false;
                };
                // A dead member, or else a live one that dies now.
                let others: Vec<usize> = live.iter().copied().filter(|i| *i != by).collect();
                let (d, kill) = match rng.pick(&dead) {
                    Some(d) => (d, false),
                    None => match rng.pick(&others) {
                        Some(d) => (d, true),
                        None => return false,
                    },
                };
                self.clone().remove(d, by, kill).boxed()
            }
        };
        {
            let mut t = self.topology.lock();
            t.moving = true;
            t.tried = true;
        }
        self.faults_in_progress.fetch_add(1, Ordering::SeqCst);
        self.exec.spawn(Owner::WORLD, task);
        true
    }

    fn move_done(&self) {
        self.topology.lock().moving = false;
        self.faults_in_progress.fetch_sub(1, Ordering::SeqCst);
    }

    fn count_failure<T>(&self, ran: &Ran<Result<T, MoveError>>) {
        match ran {
            Ran::Answered(Err(MoveError::OtherMove(_))) => {
                self.moves.lock().refused_other_move += 1
            }
            Ran::Abandoned => self.moves.lock().abandoned += 1,
            _ => {}
        }
    }

    /// Runs move `f` on node `i`, restarting the node when it takes longer than
    /// [`MOVE_PATIENCE_MICROS`] (it stays down when `stay_down` says so then).
    async fn run_move<T: Send + 'static>(
        &self,
        i: usize,
        f: impl FnOnce(Node) -> BoxFuture<'static, T>,
        stay_down: impl FnOnce() -> bool,
    ) -> Ran<T> {
        let call = std::pin::pin!(self.on_node(i, f));
        let patience = std::pin::pin!(self.exec.sleep(MOVE_PATIENCE_MICROS));
        match futures::future::select(call, patience).await {
            futures::future::Either::Left((Some(answer), _)) => Ran::Answered(answer),
            futures::future::Either::Left((None, _)) => Ran::Crashed,
            futures::future::Either::Right(_) => {
                self.crash(i);
                if !stay_down() && self.may_restart(i) {
                    self.start_node(i);
                }
                Ran::Abandoned
            }
        }
    }

    /// A spare slot starts `Joining` without tokens and bootstraps with tokens allocated
    /// from the ring it hears; a failed attempt is retried after a pause.
    async fn join(self: Arc<Self>, i: usize) {
        self.set_slot(i, Slot::Joining);
        self.start_node(i);
        let pause_us = self.config.gossip_interval_ms * 10_000;
        for _ in 0..JOIN_ATTEMPTS {
            self.exec.sleep(pause_us).await;
            let Some((node, _)) = self.net.node(i) else {
                continue; // Crashed: its restart comes.
            };
            if !node.hears_ring() {
                continue;
            }
            let existing: Vec<(mosaic_cluster::Endpoint, Vec<i64>)> = node
                .states()
                .into_iter()
                .filter(|(s, _)| s.app.ring_status.owns_now() && s.endpoint != endpoint(i))
                .map(|(s, _)| (s.endpoint, s.app.tokens))
                .collect();
            let tokens =
                mosaic_cluster::tokens::allocate(&existing, endpoint(i), self.config.num_tokens);
            let tables = self.all_tables();
            let chosen = tokens.clone();
            let result = self
                .run_move(
                    i,
                    move |node| {
                        async move { node.bootstrap(chosen, None, &tables, &[], &|_| {}).await }
                            .boxed()
                    },
                    || false,
                )
                .await;
            match result {
                Ran::Answered(Ok(())) => {
                    if let Some(t) = self.tokens.lock().get_mut(i) {
                        *t = tokens;
                    }
                    self.set_slot(i, Slot::Member);
                    self.moves.lock().joins += 1;
                    self.move_done();
                    return;
                }
                other => {
                    self.moves.lock().joins_failed += 1;
                    self.count_failure(&other);
                }
            }
        }
        self.checker
            .lock()
            .fail(format!("node {i} did not join in {JOIN_ATTEMPTS} attempts"));
        self.move_done();
    }

    /// Node `i` decommissions, then stops for good.
    async fn leave(self: Arc<Self>, i: usize) {
        let Some((handle, _)) = self.net.node(i) else {
            self.move_done();
            return;
        };
        let tables = self.all_tables();
        let left = || handle.ring_status() == RingStatus::Left;
        let result = self
            .run_move(
                i,
                move |node| async move { node.decommission(&tables).await }.boxed(),
                left,
            )
            .await;
        // A node that crashed after announcing it left is gone all the same.
        if matches!(result, Ran::Answered(Ok(()))) || handle.ring_status() == RingStatus::Left {
            self.set_slot(i, Slot::Left);
            self.stop_for_good(i);
            self.moves.lock().leaves += 1;
        } else {
            self.moves.lock().leaves_failed += 1;
            self.count_failure(&result);
        }
        self.move_done();
    }

    /// Live node `by` removes dead node `d` (crashed first when `kill`) from the ring. The copies `d` held are lost
    /// to the checker: its ranges are pulled from surviving replicas, which may lack
    /// writes `d` acknowledged (as in Cassandra, where repair follows a removenode).
    async fn remove(self: Arc<Self>, d: usize, by: usize, kill: bool) {
        if let Some(h) = self.topology.lock().held_down.get_mut(d) {
            *h = true;
        }
        if kill {
            self.crash(d);
        }
        // An operator removes a node the cluster knows is down.
        for _ in 0..REMOVE_WAIT_ROUNDS {
            match self.net.node(by) {
                Some((node, _)) if node.is_alive(endpoint(d)) => {
                    self.exec.sleep(self.config.gossip_interval_ms * 1000).await;
                }
                _ => break,
            }
        }
        self.record_copies_gone(d);
        let host = mosaic_types::HostId(super::nodes::host_id(d));
        let tables = self.all_tables();
        let result = self
            .run_move(
                by,
                move |node| async move { node.remove_node(host, &tables).await }.boxed(),
                || false,
            )
            .await;
        if let Some(h) = self.topology.lock().held_down.get_mut(d) {
            *h = false;
        }
        if matches!(result, Ran::Answered(Ok(()))) || self.seen_left(d) {
            self.set_slot(d, Slot::Left);
            self.moves.lock().removes += 1;
        } else {
            self.moves.lock().removes_failed += 1;
            self.count_failure(&result);
            if self.is_down(d) && !self.stopping.load(Ordering::SeqCst) {
                self.start_node(d);
            }
        }
        self.move_done();
    }

    /// Whether a running node believes `d` left the ring (a removal whose coordinator
    /// crashed may have spread that already; `d` could not come back then).
    fn seen_left(&self, d: usize) -> bool {
        self.net.running().into_iter().any(|i| {
            self.net.node(i).is_some_and(|(node, _)| {
                node.states().iter().any(|(s, _)| {
                    s.endpoint == endpoint(d) && s.app.ring_status == RingStatus::Left
                })
            })
        })
    }

    /// Stops node `i` for good (it left the ring): its tasks end, nothing is lost.
    fn stop_for_good(&self, i: usize) {
        if let Some((_, owner)) = self.net.remove(i) {
            self.exec.kill(owner);
        }
        if let Some(d) = self.down.lock().get_mut(i) {
            *d = true;
        }
    }

    /// Tells the checker that every write node `d` holds (of each key, up to the newest
    /// it stores) is lost with it.
    fn record_copies_gone(&self, d: usize) {
        let Some(store) = self.stores.get(d) else {
            return;
        };
        let held = store.tables();
        let mut checker = self.checker.lock();
        for t in 0..self.config.tables() {
            let Some(table) = held.get(&table_key(t)) else {
                continue;
            };
            for k in 0..self.config.keys {
                let stored = table
                    .get(checker.engine_key(k))
                    .and_then(|b| crate::checker::stored_value(b).ok().flatten());
                if let Some((_, ts)) = stored {
                    checker.record_gone(d, t, k, ts);
                }
            }
        }
    }
}
