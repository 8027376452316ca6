//! The faults a seed schedules (crashes, restarts, partitions) and the settling phase
//! after them: hint drain, repair by reads at ALL, and the replicas' comparison.

use super::*;

impl World {
    /// Crashes a node, keeps it down a while, restarts it.
    pub(super) async fn crash_and_restart(self: Arc<Self>, i: usize, clean: bool, down_ms: u64) {
        if clean {
            if let Some((node, _)) = self.net.node(i) {
                node.shutdown();
                self.faults.lock().clean_shutdowns += 1;
                // Let the goodbye reach the wire before the process exits.
                self.exec.sleep(self.config.latency_max_us * 2).await;
            }
        }
        self.crash(i);
        self.exec.sleep(down_ms * 1000).await;
        if self.is_down(i) && self.may_restart(i) {
            self.start_node(i);
            self.faults.lock().restarts += 1;
        }
        self.faults_in_progress.fetch_sub(1, Ordering::SeqCst);
    }

    pub(super) async fn partition_for(self: Arc<Self>, sides: Vec<bool>, ms: u64) {
        let id = self.partition_id.fetch_add(1, Ordering::SeqCst) + 1;
        self.net.partition(sides);
        self.faults.lock().partitions += 1;
        self.exec.sleep(ms * 1000).await;
        if self.partition_id.load(Ordering::SeqCst) == id {
            self.net.heal();
        }
        self.faults_in_progress.fetch_sub(1, Ordering::SeqCst);
    }

    pub(super) async fn fault_schedule(self: Arc<Self>) {
        let c = self.config.clone();
        if c.fault_interval_ms == 0 {
            return;
        }
        while !self.stopping.load(Ordering::SeqCst) {
            let wait = self
                .fault_rng
                .lock()
                .between(c.fault_interval_ms / 2, c.fault_interval_ms * 3 / 2);
            self.exec.sleep(wait * 1000).await;
            if self.stopping.load(Ordering::SeqCst) {
                break;
            }
            let mut rng = self.fault_rng.lock();
            // Drawn only in runs with moves, so other seeds' faults stay as they were.
            if c.move_ppm > 0 && rng.chance(c.move_ppm) {
                self.start_move(&mut rng);
                continue;
            }
            let ms = rng.between(1, c.fault_duration_max_ms);
            if rng.chance(c.crash_ppm) {
                let running = self.net.running();
                let Some(i) = rng.pick(&running) else {
                    continue;
                };
                let clean = rng.chance(c.clean_shutdown_ppm);
                drop(rng);
                self.faults_in_progress.fetch_add(1, Ordering::SeqCst);
                let task = self.clone().crash_and_restart(i, clean, ms);
                self.exec.spawn(Owner::WORLD, task.boxed());
            } else if !self.net.partitioned() && c.nodes > 1 {
                let sides: Vec<bool> = (0..c.slots()).map(|_| rng.chance(500_000)).collect();
                drop(rng);
                if sides.iter().all(|s| *s) || sides.iter().all(|s| !*s) {
                    continue;
                }
                self.faults_in_progress.fetch_add(1, Ordering::SeqCst);
                let task = self.clone().partition_for(sides, ms);
                self.exec.spawn(Owner::WORLD, task.boxed());
            }
        }
    }

    /// Waits for every hint to be delivered (hinted handoff replays them every gossip
    /// round once their targets are up), then reads every key at ALL (or at as many
    /// replicas as exist), retrying a few times. A write whose only copies were hints
    /// reaches its replicas one hint at a time, so the replicas agree only once all are in.
    /// Hints for nodes that left the ring are never delivered and not waited for, nor are
    /// those a node that left holds (a replaced or removed node's are lost with it).
    pub(super) async fn settle(self: Arc<Self>, done: Arc<AtomicBool>) {
        let members = self.members();
        let n = members.len();
        let member_endpoints: Vec<_> = members.iter().map(|i| endpoint(*i)).collect();
        let mut waited = 0;
        while members.iter().filter_map(|i| self.stores.get(*i)).any(|s| {
            s.hint_targets()
                .iter()
                .any(|t| member_endpoints.contains(t))
        }) {
            if waited >= HINT_DRAIN_MAX_MICROS {
                self.checker.lock().fail(format!(
                    "hints were still undelivered {} s after faults stopped",
                    HINT_DRAIN_MAX_MICROS / 1_000_000
                ));
                break;
            }
            self.exec.sleep(HINT_DRAIN_POLL_MICROS).await;
            waited += HINT_DRAIN_POLL_MICROS;
        }
        for table in 0..self.config.tables() {
            let rf = self.config.rf.get(table).copied().unwrap_or(1);
            let cl = match rf.min(n) {
                r if r == rf => ConsistencyLevel::All,
                1 => ConsistencyLevel::One,
                2 => ConsistencyLevel::Two,
                _ => ConsistencyLevel::Three,
            };
            for key in 0..self.config.keys {
                let mut ok = false;
                for attempt in 0..5 {
                    let Some(coordinator) = self.workload_rng.lock().pick(&members) else {
                        break;
                    };
                    if self.read(coordinator, table, vec![key], 1, cl).await {
                        ok = true;
                        break;
                    }
                    self.exec.sleep(1_000_000 * (attempt + 1)).await;
                }
                if !ok {
                    self.checker.lock().fail(format!(
                        "after faults stopped, table {table} key {key} could not be read at {} \
                         in 5 attempts",
                        cl.name()
                    ));
                }
            }
        }
        self.settle_lwt().await;
        done.store(true, Ordering::SeqCst);
    }

    /// Compares every key's replicas in the final ring, store against store.
    pub(super) fn compare(&self) {
        let members = self.members();
        let Some((first, (node, _))) = members.first().and_then(|i| Some((*i, self.net.node(*i)?)))
        else {
            return;
        };
        let ring = node.ring();
        for gone in (0..self.config.slots()).filter(|i| self.slot(*i) == moves::Slot::Left) {
            if ring.nodes().contains(&endpoint(gone)) {
                self.checker.lock().fail(format!(
                    "node {gone} left the ring but is in node {first}'s ring after settling"
                ));
            }
        }
        for &i in members.iter().skip(1) {
            if self.net.node(i).is_none_or(|(n, _)| *n.ring() != *ring) {
                self.checker.lock().fail(format!(
                    "node {i}'s ring differs from node {first}'s after settling"
                ));
            }
        }
        let moved = self.moves_tried();
        let tables: Vec<_> = self.stores.iter().map(|s| s.tables()).collect();
        let mut stray = 0;
        for (t, rf) in self.config.rf.iter().enumerate() {
            for (k, token) in self.key_tokens.iter().enumerate() {
                let key = self.checker.lock().engine_key(k).to_vec();
                let replicas = ring.replicas(Token(*token), *rf);
                let mut copies = Vec::new();
                for (i, held) in tables.iter().enumerate() {
                    let copy = held.get(&table_key(t)).and_then(|tb| tb.get(&key)).cloned();
                    if replicas.contains(&endpoint(i)) {
                        copies.push((i, copy));
                    } else if copy.is_some() {
                        stray += 1;
                        // Without moves the ring never changes: only a coordinator with a
                        // wrong view of it writes elsewhere. After moves, nodes keep the
                        // ranges they no longer replicate (nothing cleans them up).
                        if !moved {
                            self.checker.lock().fail(format!(
                                "table {t} key {k} is stored on node {i}, not one of its \
                                 replicas"
                            ));
                        }
                    }
                }
                self.checker
                    .lock()
                    .check_converged(Settle::ReadAtAll, t, k, &copies);
            }
        }
        self.faults.lock().stray_copies = stray;
    }
}
