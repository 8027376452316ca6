//! Lightweight transactions in the workload (runs whose configuration has a
//! [`crate::config::Lwt`]): clients of their own run compare-and-sets and SERIAL reads on
//! a few registers — keys of a table of their own — through random coordinators, under
//! the seed's faults, and every register's history must be linearizable
//! ([`crate::linearizable`]).
//!
//! A compare-and-set runs the round loop the server's coordinator runs (`cas_rounds` in
//! `mosaic-server`'s `cluster/coordinator.rs`), written again here because the simulator
//! drives `Node`s without the server: begin a Paxos round, read the register at the
//! serial level's quorum, decide, propose and commit; a proposal that lost to contention
//! begins again from the round that lost. A SERIAL read begins a round (finishing any in
//! progress) and reads at the quorum. The value a compare-and-set writes is its
//! operation's id, stored as the checker stores every simulated write
//! ([`value_fragment`]) at the ballot's timestamp.
//!
//! An operation that failed or whose coordinator crashed may or may not have taken
//! effect: its history entry has no return, and the linearizability checker may place it
//! anywhere after its invocation or nowhere. After faults stop, every register is read
//! once more at SERIAL, so lost commits show.

use std::collections::BTreeMap;

use mosaic_cluster::node::PaxosRound;
use mosaic_cluster::ClusterError;
use mosaic_types::TableId;

use super::*;
use crate::checker::{error_kind, stored_value, value_fragment};
use crate::linearizable::{self, Condition, Input, Op as LwtOp, Output, Verdict};

/// Operations one register's history holds at most: the checker's search is exponential
/// in how many overlap, and histories this long check in milliseconds.
const REGISTER_OPS_MAX: usize = 40;

/// (Prefix, state) pairs the checker may explore per history before it gives up.
const SEARCH_BUDGET: usize = 2_000_000;

/// What the lightweight-transaction clients did and the checker found (for the report).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LwtStats {
    /// Compare-and-sets issued.
    pub cas: u64,
    /// Of those, applied.
    pub applied: u64,
    /// Not applied (the condition failed).
    pub not_applied: u64,
    /// SERIAL reads issued.
    pub serial_reads: u64,
    /// Of those, answered.
    pub serial_reads_ok: u64,
    /// Operations that failed or never returned, by kind (`cas:CasTimeout`,
    /// `read:CoordinatorCrashed`…).
    pub failures: BTreeMap<String, u64>,
    /// Register histories found linearizable.
    pub histories_linearizable: u64,
    /// Operations in them.
    pub ops_checked: u64,
    /// Histories the checker could not decide within its budget.
    pub inconclusive: u64,
}

/// The registers and their histories.
pub(super) struct LwtLog {
    /// The registers' table index (after the seed's other tables).
    table: usize,
    /// Each register's engine key (its partition) and token.
    keys: Vec<(Vec<u8>, Token)>,
    histories: Vec<Vec<LwtOp>>,
    /// Logical time: every invocation and return takes the next tick.
    clock: u64,
    next_value: u64,
    /// Per register, the newest value an answer showed (what clients mostly expect).
    last_seen: Vec<Option<u64>>,
    rng: Prng,
    stats: LwtStats,
    trace: xxhash_rust::xxh3::Xxh3,
}

impl LwtLog {
    /// The log of `registers` registers of table `table`, placed and driven by `rng`.
    pub(super) fn new(table: usize, registers: usize, mut rng: Prng) -> LwtLog {
        let keys = (0..registers)
            .map(|i| {
                let token = rng.next_u64() as i64;
                (engine_key(token, i), Token(token))
            })
            .collect();
        LwtLog {
            table,
            keys,
            histories: vec![Vec::new(); registers],
            clock: 0,
            next_value: 1,
            last_seen: vec![None; registers],
            rng,
            stats: LwtStats::default(),
            trace: xxhash_rust::xxh3::Xxh3::new(),
        }
    }

    /// A digest of every invocation and return.
    pub(super) fn trace_hash(&self) -> u64 {
        self.trace.digest()
    }

    /// What happened.
    pub(super) fn stats(&self) -> &LwtStats {
        &self.stats
    }

    fn tick(&mut self, event: &str) -> u64 {
        self.clock += 1;
        self.trace.update(event.as_bytes());
        self.trace.update(&self.clock.to_le_bytes());
        self.clock
    }
}

/// One operation, drawn.
struct Drawn {
    coordinator: usize,
    register: usize,
    input: Input,
    serial: ConsistencyLevel,
    commit: ConsistencyLevel,
}

/// Where a register lives.
#[derive(Clone)]
struct Register {
    table: TableId,
    token: Token,
    key: Vec<u8>,
}

/// Why a transaction ended without an answer.
enum LwtError {
    Cluster(ClusterError),
    /// The register held something no client writes.
    Undecodable(String),
}

impl From<ClusterError> for LwtError {
    fn from(e: ClusterError) -> LwtError {
        LwtError::Cluster(e)
    }
}

/// The levels a commit may ask for (Cassandra refuses only the serial ones).
const COMMIT_LEVELS: [ConsistencyLevel; 7] = [
    ConsistencyLevel::Any,
    ConsistencyLevel::One,
    ConsistencyLevel::Two,
    ConsistencyLevel::Quorum,
    ConsistencyLevel::All,
    ConsistencyLevel::LocalOne,
    ConsistencyLevel::LocalQuorum,
];

/// The level a serial level reads at (the server's `quorum_of`).
fn quorum_of(serial: ConsistencyLevel) -> ConsistencyLevel {
    match serial {
        ConsistencyLevel::LocalSerial => ConsistencyLevel::LocalQuorum,
        _ => ConsistencyLevel::Quorum,
    }
}

/// The register's value, read at `cl`.
async fn read_register(
    node: &Node,
    r: &Register,
    cl: ConsistencyLevel,
) -> Result<Option<u64>, LwtError> {
    let (entries, _) = node.read(r.table, key_range(&r.key), 1, cl).await?;
    match entries.iter().find(|(k, _)| *k == r.key) {
        None => Ok(None),
        Some((_, bytes)) => stored_value(bytes)
            .map(|v| v.map(|(id, _)| id))
            .map_err(LwtError::Undecodable),
    }
}

/// A compare-and-set, as the server's coordinator runs it (see the module doc).
async fn cas_rounds(
    node: &Node,
    r: &Register,
    condition: Condition,
    new: u64,
    serial: ConsistencyLevel,
    commit: ConsistencyLevel,
) -> Result<Output, LwtError> {
    let mut lost: Option<PaxosRound> = None;
    loop {
        let round = node
            .paxos_begin(
                r.table,
                r.token,
                r.key.clone(),
                serial,
                commit,
                lost.as_ref(),
            )
            .await?;
        let current = read_register(node, r, quorum_of(serial)).await?;
        if !condition.holds(current) {
            return Ok(Output::NotApplied { seen: current });
        }
        let ts = i64::try_from(round.ballot.micros).unwrap_or(i64::MAX);
        let write = WireMutation {
            key: r.key.clone(),
            ts: round.ballot.micros,
            fragment: value_fragment(new, ts),
        };
        if node
            .paxos_propose_and_commit(&round, vec![write], commit)
            .await?
        {
            return Ok(Output::Applied);
        }
        lost = Some(round);
    }
}

/// A read at `serial`: any round in progress is finished first.
async fn serial_read(
    node: &Node,
    r: &Register,
    serial: ConsistencyLevel,
) -> Result<Output, LwtError> {
    let quorum = quorum_of(serial);
    node.paxos_begin(r.table, r.token, r.key.clone(), serial, quorum, None)
        .await?;
    Ok(Output::Read(read_register(node, r, quorum).await?))
}

impl World {
    /// The next operation of a lightweight-transaction client: `None` when no node runs
    /// or every register's history is full.
    fn next_lwt(&self, log: &mut LwtLog) -> Option<Drawn> {
        let c = self.config.lwt.as_ref()?;
        let running = self.net.running();
        let rng = &mut log.rng;
        let coordinator = rng.pick(&running)?;
        let open: Vec<usize> = (0..log.histories.len())
            .filter(|i| {
                log.histories
                    .get(*i)
                    .is_some_and(|h| h.len() < REGISTER_OPS_MAX)
            })
            .collect();
        let register = rng.pick(&open)?;
        let serial = [ConsistencyLevel::Serial, ConsistencyLevel::LocalSerial][rng.index(2)];
        let commit = pick_level(rng, &COMMIT_LEVELS, c.rf.min(self.config.nodes));
        let input = if rng.chance(c.serial_read_ppm) {
            Input::Read
        } else {
            let last = log.last_seen.get(register).copied().flatten();
            let condition = match rng.below(8) {
                0..=3 => Condition::Is(last),
                4 => Condition::Is(None),
                // Most likely stale: a value written before.
                5 if log.next_value > 1 => Condition::Is(Some(rng.between(1, log.next_value - 1))),
                5 | 6 => Condition::Exists,
                _ => Condition::Always,
            };
            let new = log.next_value;
            log.next_value += 1;
            Input::Cas { condition, new }
        };
        Some(Drawn {
            coordinator,
            register,
            input,
            serial,
            commit,
        })
    }

    /// Runs one operation on `register` and records it.
    async fn lwt_op(&self, op: Drawn) {
        let (register, index) = {
            let Some(log) = self.lwt.as_ref() else {
                return;
            };
            let mut log = log.lock();
            let Some((key, token)) = log.keys.get(op.register).cloned() else {
                return;
            };
            let call = log.tick(&format!(
                "c{} r{} {:?} {} {}",
                op.coordinator,
                op.register,
                op.input,
                op.serial.name(),
                op.commit.name()
            ));
            let register = Register {
                table: table_key(log.table),
                token,
                key,
            };
            match &op.input {
                Input::Read => log.stats.serial_reads += 1,
                Input::Cas { .. } => log.stats.cas += 1,
            }
            let Some(history) = log.histories.get_mut(op.register) else {
                return;
            };
            history.push(LwtOp {
                input: op.input,
                call,
                ret: None,
            });
            (register, history.len() - 1)
        };
        let (input, serial, commit) = (op.input, op.serial, op.commit);
        let answer = self
            .on_node(op.coordinator, move |node| {
                async move {
                    match input {
                        Input::Read => serial_read(&node, &register, serial).await,
                        Input::Cas { condition, new } => {
                            cas_rounds(&node, &register, condition, new, serial, commit).await
                        }
                    }
                }
                .boxed()
            })
            .await;
        self.record_lwt(op.register, index, answer);
    }

    fn record_lwt(&self, register: usize, index: usize, answer: Option<Result<Output, LwtError>>) {
        let Some(log) = self.lwt.as_ref() else {
            return;
        };
        let mut log = log.lock();
        let kind = match log.histories.get(register).and_then(|h| h.get(index)) {
            Some(LwtOp {
                input: Input::Read, ..
            }) => "read",
            _ => "cas",
        };
        let failure = match &answer {
            Some(Ok(output)) => {
                let at = log.tick(&format!("r{register}.{index} {output:?}"));
                match output {
                    Output::Applied => log.stats.applied += 1,
                    Output::NotApplied { .. } => log.stats.not_applied += 1,
                    Output::Read(_) => log.stats.serial_reads_ok += 1,
                }
                let seen = match (
                    output,
                    log.histories.get(register).and_then(|h| h.get(index)),
                ) {
                    (Output::Applied, Some(op)) => match op.input {
                        Input::Cas { new, .. } => Some(new),
                        Input::Read => None,
                    },
                    (Output::NotApplied { seen } | Output::Read(seen), _) => *seen,
                    _ => None,
                };
                if let Some(slot) = log.last_seen.get_mut(register) {
                    *slot = seen;
                }
                if let Some(op) = log
                    .histories
                    .get_mut(register)
                    .and_then(|h| h.get_mut(index))
                {
                    op.ret = Some((at, *output));
                }
                return;
            }
            Some(Err(LwtError::Cluster(e))) => error_kind(e).to_owned(),
            Some(Err(LwtError::Undecodable(e))) => {
                self.checker.lock().fail(format!(
                    "register {register} of the lightweight-transaction table {e}"
                ));
                "Undecodable".to_owned()
            }
            None => "CoordinatorCrashed".to_owned(),
        };
        log.tick(&format!("r{register}.{index} {failure}"));
        *log.stats
            .failures
            .entry(format!("{kind}:{failure}"))
            .or_default() += 1;
    }

    /// A lightweight-transaction client (see the module doc).
    pub(super) async fn lwt_client(self: Arc<Self>) {
        let (ops, think_max_ms) = self
            .config
            .lwt
            .as_ref()
            .map_or((0, 0), |c| (c.ops_per_client, c.think_max_ms));
        for _ in 0..ops {
            let Some(log) = self.lwt.as_ref() else {
                break;
            };
            let think = log.lock().rng.between(0, think_max_ms);
            self.exec.sleep(think * 1000).await;
            let drawn = self.next_lwt(&mut log.lock());
            if let Some(op) = drawn {
                self.lwt_op(op).await;
            }
        }
        self.clients_done.fetch_add(1, Ordering::SeqCst);
    }

    /// After faults stopped: every register read at SERIAL (a few attempts each).
    pub(super) async fn settle_lwt(&self) {
        let Some(log) = self.lwt.as_ref() else {
            return;
        };
        let registers = log.lock().histories.len();
        for register in 0..registers {
            for attempt in 0..5 {
                let coordinator = log.lock().rng.index(self.config.nodes);
                let op = Drawn {
                    coordinator,
                    register,
                    input: Input::Read,
                    serial: ConsistencyLevel::Serial,
                    commit: ConsistencyLevel::Quorum,
                };
                self.lwt_op(op).await;
                let answered = log
                    .lock()
                    .histories
                    .get(register)
                    .and_then(|h| h.last())
                    .is_some_and(|op| op.ret.is_some());
                if answered {
                    break;
                }
                self.exec.sleep(1_000_000 * (attempt + 1)).await;
            }
        }
    }

    /// Checks every register's history; a history that is not linearizable is a
    /// violation that shows it.
    pub(super) fn check_lwt(&self) {
        let Some(log) = self.lwt.as_ref() else {
            return;
        };
        let mut log = log.lock();
        for register in 0..log.histories.len() {
            // Reads that never returned had no effect.
            let ops: Vec<LwtOp> = log
                .histories
                .get(register)
                .map(|h| {
                    h.iter()
                        .filter(|op| op.input != Input::Read || op.ret.is_some())
                        .copied()
                        .collect()
                })
                .unwrap_or_default();
            let verdict = linearizable::check(None, &ops, SEARCH_BUDGET);
            match verdict {
                Verdict::Linearizable => {
                    log.stats.histories_linearizable += 1;
                    log.stats.ops_checked += ops.len() as u64;
                }
                Verdict::Inconclusive => log.stats.inconclusive += 1,
                Verdict::NotLinearizable { .. } => {
                    let rf = self.config.lwt.as_ref().map_or(0, |c| c.rf);
                    self.checker.lock().fail(format!(
                        "register {register} (RF {rf}): the history of its lightweight \
                         transactions is not linearizable (times are logical; values are \
                         operation ids):{}",
                        linearizable::describe(&ops, &verdict)
                    ));
                }
            }
        }
    }
}
