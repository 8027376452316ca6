//! The clients: each draws operations (writes, reads, range reads, batches) at random
//! consistency levels through random coordinators and hands the outcomes to the checker.

use super::*;

impl World {
    /// A write (a batch when several keys) of `keys` of `table` at `cl`.
    pub(super) async fn write(
        &self,
        coordinator: usize,
        table: usize,
        keys: Vec<usize>,
        cl: ConsistencyLevel,
    ) {
        let (ids, mutations): (Vec<usize>, Vec<_>) = {
            let mut checker = self.checker.lock();
            keys.iter()
                .map(|&key| {
                    let (id, ts, fragment) = checker.begin_write(table, key, cl, self.now());
                    let token = Token(self.key_tokens.get(key).copied().unwrap_or(0));
                    let mutation = WireMutation {
                        key: checker.engine_key(key).to_vec(),
                        ts: ts as u64,
                        fragment,
                    };
                    (id, (table_key(table), token, mutation))
                })
                .unzip()
        };
        let answer: Answer<()> = self
            .on_node(coordinator, move |node| {
                async move { node.write(mutations, cl).await }.boxed()
            })
            .await;
        let mut checker = self.checker.lock();
        for id in ids {
            checker.end_write(id, answer.clone(), self.now());
        }
    }

    pub(super) async fn read(
        &self,
        coordinator: usize,
        table: usize,
        keys: Vec<usize>,
        limit: usize,
        cl: ConsistencyLevel,
    ) -> bool {
        let (token, range) = {
            let mut checker = self.checker.lock();
            let range = match keys.as_slice() {
                [one] => key_range(checker.engine_key(*one)),
                _ => KeyRange {
                    start: Vec::new(),
                    end: None,
                },
            };
            (
                checker.begin_read(table, keys, limit, cl, self.now()),
                range,
            )
        };
        let mut token = token;
        token.note = self.view_of(coordinator);
        let answer = self
            .on_node(coordinator, move |node| {
                async move { node.read(table_key(table), range, limit, cl).await }.boxed()
            })
            .await;
        let ok = matches!(answer, Some(Ok(_)));
        self.checker.lock().end_read(&token, answer, self.now());
        ok
    }

    /// The next operation of a client: `None` when no node runs.
    pub(super) fn next_op(&self) -> Option<Op> {
        let c = &self.config;
        let running = self.coordinators();
        let mut rng = self.workload_rng.lock();
        let coordinator = rng.pick(&running)?;
        let table = rng.index(c.tables());
        let rf = c.rf.get(table).copied().unwrap_or(1).min(c.nodes);
        let key = rng.index(c.keys);
        Some(if rng.chance(c.schema_change_ppm) {
            Op::SchemaChange { coordinator }
        } else if rng.chance(500_000) {
            let cl = pick_level(&mut rng, &LEVELS, rf);
            // Mostly one key; sometimes a batch spanning replica sets.
            let mut keys = vec![key];
            if rng.chance(c.batch_ppm) {
                keys.extend((0..rng.between(1, 3)).map(|_| rng.index(c.keys)));
                keys.sort_unstable();
                keys.dedup();
            }
            Op::Write {
                coordinator,
                table,
                keys,
                cl,
            }
        } else {
            let cl = pick_level(
                &mut rng,
                LEVELS.get(1..LEVELS.len() - 1).unwrap_or(&LEVELS),
                rf,
            );
            let (keys, limit) = if rng.chance(c.range_read_ppm) {
                (
                    (0..c.keys).collect(),
                    rng.between(1, c.keys as u64 + 1) as usize,
                )
            } else {
                (vec![key], 1)
            };
            Op::Read {
                coordinator,
                table,
                keys,
                limit,
                cl,
            }
        })
    }

    pub(super) async fn client(self: Arc<Self>) {
        for _ in 0..self.config.ops_per_client {
            let think = self
                .workload_rng
                .lock()
                .between(0, self.config.think_max_ms);
            self.exec.sleep(think * 1000).await;
            match self.next_op() {
                None => {}
                Some(Op::Write {
                    coordinator,
                    table,
                    keys,
                    cl,
                }) => self.write(coordinator, table, keys, cl).await,
                Some(Op::Read {
                    coordinator,
                    table,
                    keys,
                    limit,
                    cl,
                }) => {
                    self.read(coordinator, table, keys, limit, cl).await;
                }
                Some(Op::SchemaChange { coordinator }) => self.change_schema(coordinator).await,
            }
        }
        self.clients_done.fetch_add(1, Ordering::SeqCst);
    }
}
