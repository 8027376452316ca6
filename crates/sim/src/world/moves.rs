//! Topology changes among a seed's faults ([`Config::move_ppm`]): a spare node slot joins
//! (`Node::bootstrap`), a node decommissions, a dead node is removed by a live one
//! (`Node::remove_node`), a dead node is replaced by a spare slot (`replace_address`:
//! `Node::bootstrap` with the dead node's tokens, learnt from the ring as the server's
//! `plan_replace` does, and `replacing` naming it). One move at a time from the simulator
//! (the cluster refuses concurrent ones anyway: `OtherMove`, counted); moves race crashes,
//! partitions, drops and the clients. A move that fails is counted and leaves the node as
//! it was (a failed join or replacement is retried until it completes, also after the
//! faults stop). Nodes that left are never restarted, but for a replaced node, which
//! comes back once with its old identity and must stay out of every ring (see
//! [`World::replaced`]); the settling phase and the replicas' comparison follow the final
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
    /// Decommissioned, removed or replaced: never started again (a replaced node but once,
    /// right after its replacement).
    Left,
}

/// The slots' states and the move under way.
#[derive(Debug)]
pub(super) struct Topology {
    pub(super) slots: Vec<Slot>,
    /// Slots that must stay down (a removal or replacement of them is under way).
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
    /// Dead nodes replaced by a spare slot taking their tokens.
    pub replaces: u64,
    /// Replacement attempts that failed (the replacement is retried).
    pub replaces_failed: u64,
    /// Of the failures, those the cluster refused because another move was under way.
    pub refused_other_move: u64,
    /// Of the failures, moves still unfinished after [`MOVE_PATIENCE_MICROS`], whose node
    /// the simulator then restarted (as an operator would): a move whose peer stays
    /// unreachable without being convicted waits for it as long as the cluster's
    /// hours-long call bound (lost requests are resent, a convicted peer fails the move).
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
        self.replaces += o.replaces;
        self.replaces_failed += o.replaces_failed;
        self.refused_other_move += o.refused_other_move;
        self.abandoned += o.abandoned;
    }

    /// Whether any move was tried.
    pub fn any(&self) -> bool {
        self != &MoveStats::default()
    }
}

/// Attempts at a join (or a replacement) before the run fails it (each after a pause).
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
    Replace,
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
        let kind = [Kind::Join, Kind::Leave, Kind::Remove, Kind::Replace][rng.index(4)];
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
                self.clone().join(i, None).boxed()
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
            Kind::Replace => {
                // With a table of one replica the dead node held the only copy of some
                // ranges: nothing to stream them from (the cluster refuses: `NoSource`),
                // so an operator would not try.
                if self.config.rf.iter().any(|rf| *rf < 2) {
                    return false;
                }
                let Some(i) = rng.pick(&of(Slot::Spare)) else {
                    return false;
                };
                // A dead member, or else a live one that dies now (one stays to stream from);
                // normal in every view: a node still leaving somewhere (a removal whose
                // coordinator crashed) counts as a move under way, and the cluster refuses
                // to replace it (`OtherMove`) for as long as it stays down.
                let normal = |d: &usize| self.normal_everywhere(*d);
                let dead: Vec<usize> = dead.iter().copied().filter(normal).collect();
                let live_normal: Vec<usize> = live.iter().copied().filter(normal).collect();
                let (d, kill) = match rng.pick(&dead) {
                    Some(d) => (d, false),
                    None if live.len() > 1 => match rng.pick(&live_normal) {
                        Some(d) => (d, true),
                        None => return false,
                    },
                    None => return false,
                };
                self.clone().replace(i, d, kill).boxed()
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

    /// A spare slot starts `Joining` without tokens and bootstraps — with tokens allocated
    /// from the ring it hears, or, replacing the dead member `replacing`, with that
    /// node's tokens as its ring shows them; a failed attempt is retried after a pause.
    /// A replaced node leaves the ring (and stays down for good).
    async fn join(self: Arc<Self>, i: usize, replacing: Option<usize>) {
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
            if let Some(d) = replacing.filter(|d| self.seen_left(*d)) {
                // An attempt whose answer was lost (the node crashed, or was abandoned)
                // finished the replacement: the operator starts the node normal.
                self.replaced_by(i, d);
                self.move_done();
                return;
            }
            let Some(tokens) = self.tokens_to_take(&node, i, replacing) else {
                continue; // The dead node's tokens are not known to it yet.
            };
            let tables = self.all_tables();
            let chosen = tokens.clone();
            let dead = replacing.map(endpoint);
            let result = self
                .run_move(
                    i,
                    move |node| {
                        async move {
                            node.bootstrap(chosen, dead, &tables, &[], &|_| {}, &|| {})
                                .await
                        }
                        .boxed()
                    },
                    || false,
                )
                .await;
            if matches!(result, Ran::Answered(Ok(()))) {
                if let Some(t) = self.tokens.lock().get_mut(i) {
                    *t = tokens;
                }
                self.set_slot(i, Slot::Member);
                match replacing {
                    Some(d) => self.replaced(d),
                    None => self.moves.lock().joins += 1,
                }
                self.move_done();
                return;
            }
            match replacing {
                Some(_) => self.moves.lock().replaces_failed += 1,
                None => self.moves.lock().joins_failed += 1,
            }
            self.count_failure(&result);
        }
        let replacing_text = replacing.map_or(String::new(), |d| format!(" replacing node {d}"));
        self.checker.lock().fail(format!(
            "node {i} did not join{replacing_text} in {JOIN_ATTEMPTS} attempts"
        ));
        if let Some(d) = replacing {
            self.release(d);
        }
        self.move_done();
    }

    /// Spare slot `i` replaces dead member `d` (crashed first when `kill`); the copies
    /// `d` held are lost to the checker ([`World::hold_down`]).
    async fn replace(self: Arc<Self>, i: usize, d: usize, kill: bool) {
        self.hold_down(d, kill);
        self.join(i, Some(d)).await;
    }

    /// The tokens joining node `i` (`node`) bootstraps with: allocated from the ring it
    /// hears, or the dead node `replacing`'s as it knows them (`None` while it knows
    /// none).
    fn tokens_to_take(&self, node: &Node, i: usize, replacing: Option<usize>) -> Option<Vec<i64>> {
        let states = node.states();
        if let Some(d) = replacing {
            return states
                .into_iter()
                .find(|(s, _)| s.endpoint == endpoint(d))
                .map(|(s, _)| s.app)
                .filter(|app| app.ring_status.owns_now() && !app.tokens.is_empty())
                .map(|app| app.tokens);
        }
        let existing: Vec<(mosaic_cluster::Endpoint, Vec<i64>)> = states
            .into_iter()
            .filter(|(s, _)| s.app.ring_status.owns_now() && s.endpoint != endpoint(i))
            .map(|(s, _)| (s.endpoint, s.app.tokens))
            .collect();
        Some(mosaic_cluster::tokens::allocate(
            &existing,
            endpoint(i),
            self.config.num_tokens,
        ))
    }

    /// Node `i` finished replacing `d` though its bootstrap's answer was lost: it owns
    /// `d`'s tokens, so it restarts as a member with them (a server whose join marker
    /// outlived the join needs its operator to remove the marker the same way).
    fn replaced_by(&self, i: usize, d: usize) {
        let tokens = self.tokens.lock().get(d).cloned().unwrap_or_default();
        if let Some(t) = self.tokens.lock().get_mut(i) {
            *t = tokens;
        }
        self.set_slot(i, Slot::Member);
        if !self.is_down(i) {
            self.crash(i);
        }
        self.start_node(i);
        self.replaced(d);
    }

    /// Dead node `d` was replaced: it left the ring. It comes back once with its old
    /// identity, tokens and peers (an operator restarting the old machine), and must stay
    /// out: gossip ignores a node known `Left` that returns as itself, and every ring
    /// excludes a node whose replacement owns its tokens (the replicas' comparison
    /// checks that no ring has it). It is never restarted after a crash.
    fn replaced(&self, d: usize) {
        self.set_slot(d, Slot::Left);
        self.moves.lock().replaces += 1;
        if self.is_down(d) {
            self.start_node(d);
        }
    }

    /// Keeps member `d` down for its removal or replacement (crashing it first when
    /// `kill`) and counts its copies lost: its ranges come from the surviving replicas,
    /// which may lack writes `d` acknowledged (as in Cassandra, where repair follows).
    fn hold_down(&self, d: usize, kill: bool) {
        if let Some(h) = self.topology.lock().held_down.get_mut(d) {
            *h = true;
        }
        if kill {
            self.crash(d);
        }
        self.record_copies_gone(d);
    }

    /// Ends `d`'s hold: a member still (its removal or replacement failed), it restarts.
    fn release(&self, d: usize) {
        if let Some(h) = self.topology.lock().held_down.get_mut(d) {
            *h = false;
        }
        if self.slot(d) == Slot::Member && self.is_down(d) && !self.stopping.load(Ordering::SeqCst)
        {
            self.start_node(d);
        }
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

    /// Live node `by` removes dead node `d` (crashed first when `kill`) from the ring;
    /// the copies `d` held are lost to the checker ([`World::hold_down`]).
    async fn remove(self: Arc<Self>, d: usize, by: usize, kill: bool) {
        self.hold_down(d, kill);
        // An operator removes a node the cluster knows is down.
        for _ in 0..REMOVE_WAIT_ROUNDS {
            match self.net.node(by) {
                Some((node, _)) if node.is_alive(endpoint(d)) => {
                    self.exec.sleep(self.config.gossip_interval_ms * 1000).await;
                }
                _ => break,
            }
        }
        let host = mosaic_types::HostId(super::nodes::host_id(d));
        let tables = self.all_tables();
        let result = self
            .run_move(
                by,
                move |node| async move { node.remove_node(host, &tables).await }.boxed(),
                || false,
            )
            .await;
        if matches!(result, Ran::Answered(Ok(()))) || self.seen_left(d) {
            self.set_slot(d, Slot::Left);
            self.moves.lock().removes += 1;
        } else {
            self.moves.lock().removes_failed += 1;
            self.count_failure(&result);
        }
        self.release(d);
        self.move_done();
    }

    /// Whether every running node believes `d` normal.
    fn normal_everywhere(&self, d: usize) -> bool {
        self.net.running().into_iter().all(|i| {
            self.net.node(i).is_none_or(|(node, _)| {
                node.states().iter().all(|(s, _)| {
                    s.endpoint != endpoint(d) || s.app.ring_status == RingStatus::Normal
                })
            })
        })
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
