//! The simulated nodes: starting and crashing them, their views, schema changes and
//! agreement, and running a task on one of them.

use super::*;

impl World {
    /// Starts (or restarts) node `i` over its store, with a new incarnation and a larger
    /// generation.
    pub(super) fn start_node(&self, i: usize) {
        let generation = {
            let mut g = self.generations.lock();
            let Some(slot) = g.get_mut(i) else {
                return;
            };
            *slot += 1;
            *slot
        };
        let Some(store) = self.stores.get(i).cloned() else {
            return;
        };
        let owner = Owner(self.next_owner.fetch_add(1, Ordering::SeqCst));
        let runtime = SimRuntime::new(
            self.exec.clone(),
            owner,
            self.rng_root.fork(0x100 + owner.0),
        );
        let transport = SimTransport::new(self.net.clone(), i, owner);
        let ep = endpoint(i);
        let joining = self.slot(i) == moves::Slot::Joining;
        // A joining node's seeds are the members (the first two may have left).
        let seeds = if joining {
            self.members().into_iter().map(endpoint).collect()
        } else {
            (0..self.config.nodes.min(2)).map(endpoint).collect()
        };
        let config = NodeConfig {
            endpoint: ep,
            seeds,
            gossip_interval_ms: self.config.gossip_interval_ms,
            phi_convict_threshold: self.config.phi_convict_threshold,
            write_timeout_ms: self.config.write_timeout_ms,
            read_timeout_ms: self.config.read_timeout_ms,
            schema_timeout_ms: 10_000,
            replica_requests_max: self.config.replica_requests_max,
            ..NodeConfig::new(ep)
        };
        // Moves wait for ring agreement and stream pages within bounds a run can reach
        // (the defaults are a minute each); only runs with moves, so others stay as they were.
        let config = if self.config.move_ppm > 0 {
            NodeConfig {
                ring_agreement_timeout_ms: 10_000,
                repair_timeout_ms: 10_000,
                ..config
            }
        } else {
            config
        };
        let app = AppState {
            host_id: mosaic_types::HostId(host_id(i)),
            // A joining node starts without tokens; its bootstrap announces them.
            tokens: if joining {
                Vec::new()
            } else {
                self.tokens.lock().get(i).cloned().unwrap_or_default()
            },
            rpc_address: ep.ip(),
            native_port: 9042,
            admin_port: 0,
            data_center: "datacenter1".into(),
            rack: "rack1".into(),
            release_version: "mosaic-sim".into(),
            schema_version: store.schema().version,
            status: NodeStatus::Normal,
            ring_status: if joining {
                mosaic_cluster::message::RingStatus::Joining
            } else {
                Default::default()
            },
            replacing: None,
            load_bytes: 0,
        };
        let node = Node::new(
            config,
            app,
            generation,
            Arc::new(runtime),
            Arc::new(transport),
            store.clone(),
            mosaic_cluster::selection::selector(&mosaic_cluster::selection::SchedulingConfig {
                replica_selection: self.config.replica_selection,
                c3: self
                    .config
                    .c3_rate_limit
                    .map_or_else(Default::default, |limit| {
                        mosaic_cluster::selection::C3Params {
                            rate_control: true,
                            initial_limit: f64::from(limit),
                            ..Default::default()
                        }
                    }),
                ..Default::default()
            }),
        );
        if !self.forget_peers {
            let known = self.peers.lock().get(i).cloned().unwrap_or_default();
            node.restore_peers(known);
        }
        self.net.install(i, node.clone(), owner);
        if let Some(d) = self.down.lock().get_mut(i) {
            *d = false;
        }
        node.start();
        if let Durability::Periodic { interval_ms, .. } = self.config.durability {
            let exec = self.exec.clone();
            self.exec.spawn(
                owner,
                async move {
                    loop {
                        exec.sleep(interval_ms * 1000).await;
                        store.sync();
                    }
                }
                .boxed(),
            );
        }
    }

    /// Crashes node `i`: its tasks and in-flight messages die, and a lossy store loses a
    /// seeded suffix of its unsynced writes.
    pub(super) fn crash(&self, i: usize) {
        let Some((node, owner)) = self.net.remove(i) else {
            return;
        };
        let known: Vec<EndpointState> = node.states().into_iter().map(|(s, _)| s).collect();
        if let Some(p) = self.peers.lock().get_mut(i) {
            *p = known;
        }
        self.exec.kill(owner);
        if let Some(d) = self.down.lock().get_mut(i) {
            *d = true;
        }
        let Some(store) = self.stores.get(i) else {
            return;
        };
        // A power loss where the durability says what survives one; on disk, per-write
        // sync promises that everything acknowledged does, so its crashes are power losses.
        let lossy = match self.config.durability {
            Durability::Periodic { lossy, .. } => lossy,
            Durability::SyncPerWrite => store.layout().is_some(),
        };
        let lost = store.crash_node(lossy, &mut self.fault_rng.lock());
        let broken = store.take_violations();
        let mut faults = self.faults.lock();
        faults.crashes += 1;
        faults.writes_lost += lost.len() as u64;
        drop(faults);
        let mut checker = self.checker.lock();
        for (_, m) in &lost {
            checker.record_loss(i, &m.fragment);
        }
        for v in broken {
            checker.fail(format!("node {i}: {v}"));
        }
    }

    /// Node `i`'s view of the cluster, for reports: its ring and whom it believes alive.
    pub(super) fn view_of(&self, i: usize) -> String {
        let Some((node, _)) = self.net.node(i) else {
            return format!("coordinator {i} down");
        };
        let alive: Vec<usize> = (0..self.config.slots())
            .filter(|j| node.is_alive(endpoint(*j)))
            .collect();
        format!(
            "coordinator {i} at {} µs, ring of {} nodes, alive {alive:?}",
            self.now(),
            node.ring().nodes().len()
        )
    }

    pub(super) fn is_down(&self, i: usize) -> bool {
        self.down.lock().get(i).copied().unwrap_or(false)
    }

    /// Whether every member runs, sees every other alive, and has the full ring — the
    /// same ring as every other member, pending moves included: a move's last status
    /// (a failed decommission's `Normal`, say) may still be spreading when all are alive,
    /// and the replicas' comparison follows the final ring.
    pub(super) fn converged(&self) -> bool {
        let members = self.members();
        let mut first: Option<Arc<mosaic_cluster::Ring>> = None;
        members.iter().all(|i| {
            self.net.node(*i).is_some_and(|(node, _)| {
                let ring = node.ring();
                let same = first.get_or_insert_with(|| ring.clone()) == &ring;
                same && ring.nodes().len() == members.len()
                    && members.iter().all(|j| node.is_alive(endpoint(*j)))
            })
        })
    }

    /// Runs `f` on node `i` as a task of its incarnation; `None` if it is down or crashes
    /// before `f` finishes (the client's connection died).
    pub(super) async fn on_node<T: Send + 'static>(
        &self,
        i: usize,
        f: impl FnOnce(Node) -> BoxFuture<'static, T>,
    ) -> Option<T> {
        let (node, owner) = self.net.node(i)?;
        let (tx, rx) = oneshot::channel();
        let task = f(node);
        self.exec.spawn(
            owner,
            async move {
                let _ = tx.send(task.await);
            }
            .boxed(),
        );
        rx.await.ok()
    }

    /// A schema change on node `i`, pushed to the peers it believes alive.
    pub(super) async fn change_schema(&self, i: usize) {
        let Some(store) = self.stores.get(i) else {
            return;
        };
        if self.net.node(i).is_none() {
            return;
        }
        store.change_schema(i);
        self.schema_changes.fetch_add(1, Ordering::SeqCst);
        self.on_node(i, |node| async move { node.push_schema().await }.boxed())
            .await;
    }

    /// Whether every store has the same schema and every node sees every node gossip
    /// its version (the schema agreement drivers wait for).
    pub(super) fn schema_agreed(&self) -> bool {
        let members = self.members();
        let Some(first) = members
            .first()
            .and_then(|i| self.stores.get(*i))
            .map(|s| s.schema())
        else {
            return true;
        };
        let left = mosaic_cluster::message::RingStatus::Left;
        members
            .iter()
            .all(|i| self.stores.get(*i).is_some_and(|s| s.schema() == first))
            && members.iter().all(|i| {
                self.net.node(*i).is_some_and(|(node, _)| {
                    node.states().iter().all(|(state, _)| {
                        state.app.schema_version == first.version || state.app.ring_status == left
                    })
                })
            })
    }
}

/// Every node's disk: in `layout`, or each node's drawn from the seed; the engine's shape
/// drawn per node (streams of their own, so the seed's other draws stay as they were).
pub(super) fn open_disks(
    config: &Config,
    rf: &[usize],
    tokens: &[Vec<i64>],
    layout: Option<mosaic_types::Layout>,
    exec: &Arc<Executor>,
    root: &Prng,
) -> Result<Vec<crate::disk::Disk>, String> {
    let nodes: Vec<(mosaic_cluster::Endpoint, Vec<Token>, [u8; 16])> = (0..config.nodes)
        .map(|i| {
            let owned = tokens
                .get(i)
                .map_or(Vec::new(), |t| t.iter().map(|t| Token(*t)).collect());
            (endpoint(i), owned, host_id(i))
        })
        .collect();
    let rf: std::collections::BTreeMap<_, _> = rf
        .iter()
        .enumerate()
        .map(|(t, rf)| (table_key(t), *rf))
        .collect();
    (0..config.nodes)
        .map(|i| {
            let mut rng = root.fork(0xD15C_0000 + i as u64);
            let drawn = crate::disk::LAYOUTS[rng.index(crate::disk::LAYOUTS.len())];
            let shape = crate::disk::Shape::draw(&mut rng);
            crate::disk::Disk::open(
                layout.unwrap_or(drawn),
                shape,
                config.durability,
                exec.clone(),
                rf.clone(),
                endpoint(i),
                &nodes,
            )
            .map_err(|e| format!("node {i}: {e}"))
        })
        .collect()
}

/// Node `i`'s host id.
pub(super) fn host_id(i: usize) -> [u8; 16] {
    let mut host_id = [0u8; 16];
    host_id[0] = i as u8 + 1;
    host_id
}
