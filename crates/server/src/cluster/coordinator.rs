//! [`ClusterCoordinator`]: the CQL layer's [`Coordinator`] over the cluster [`Node`] —
//! statements' mutations and reads replicated at their consistency level, the cluster's
//! failures mapped to Cassandra's error codes, schema changes propagated, peers described
//! to the system tables.

use super::*;

use mosaic_cluster::message::WireCounter;
use mosaic_cluster::node::PaxosRound;
use mosaic_cql::coordinator::{CasDecision, CasOutcome, CasRequest, CounterIncrement};

/// The coordinator of a cluster node (see the module doc).
pub struct ClusterCoordinator {
    local: Arc<LocalCoordinator>,
    node: Node,
    /// Reads of heterogeneous tables coordinated here (the `auto` option's workload).
    recorder: crate::hr::Recorder,
}

impl ClusterCoordinator {
    /// A coordinator over `local` storage and the cluster `node`.
    pub fn new(local: Arc<LocalCoordinator>, node: Node) -> ClusterCoordinator {
        ClusterCoordinator {
            local,
            node,
            recorder: crate::hr::Recorder::default(),
        }
    }

    /// The reads of heterogeneous tables coordinated here.
    pub fn recorder(&self) -> &crate::hr::Recorder {
        &self.recorder
    }

    /// The cluster node.
    pub fn node(&self) -> &Node {
        &self.node
    }

    /// The client-facing error for a cluster failure.
    fn error(&self, e: ClusterError, cl: Consistency) -> ErrorResponse {
        let n = |x: usize| i32::try_from(x).unwrap_or(i32::MAX);
        let message = e.to_string();
        let kind = match e {
            ClusterError::Unavailable {
                required, alive, ..
            } => ErrorKind::Unavailable {
                consistency: cl,
                required: n(required),
                alive: n(alive),
            },
            ClusterError::WriteTimeout {
                received,
                block_for,
                ..
            } => ErrorKind::WriteTimeout {
                consistency: cl,
                received: n(received),
                block_for: n(block_for),
                write_type: WriteType::Simple,
            },
            ClusterError::ReadTimeout {
                received,
                block_for,
                data_present,
                ..
            } => ErrorKind::ReadTimeout {
                consistency: cl,
                received: n(received),
                block_for: n(block_for),
                data_present,
            },
            ClusterError::WriteFailure {
                received,
                block_for,
                failed,
                ..
            } => ErrorKind::WriteFailure {
                consistency: cl,
                received: n(received),
                block_for: n(block_for),
                num_failures: n(failed),
                write_type: WriteType::Simple,
                reasons: Vec::new(),
            },
            ClusterError::ReadFailure {
                received,
                block_for,
                failed,
                ..
            } => ErrorKind::ReadFailure {
                consistency: cl,
                received: n(received),
                block_for: n(block_for),
                num_failures: n(failed),
                data_present: false,
                reasons: Vec::new(),
            },
            ClusterError::CasTimeout {
                received,
                block_for,
                ..
            } => ErrorKind::WriteTimeout {
                consistency: cl,
                received: n(received),
                block_for: n(block_for),
                write_type: WriteType::Cas,
            },
            ClusterError::Overloaded(_) => ErrorKind::Overloaded,
            ClusterError::MutationTooLarge { .. } => ErrorKind::Invalid,
            ClusterError::UnknownTable(t) => return self.local.unknown_table(t),
            _ => ErrorKind::Server,
        };
        ErrorResponse::new(kind, message)
    }
}

/// Why a lightweight transaction failed: the cluster's error, or the statement's own
/// (its reads, its decision).
enum CasError {
    Cluster(ClusterError),
    Statement(ErrorResponse),
}

impl From<ClusterError> for CasError {
    fn from(e: ClusterError) -> CasError {
        CasError::Cluster(e)
    }
}

impl From<ErrorResponse> for CasError {
    fn from(e: ErrorResponse) -> CasError {
        CasError::Statement(e)
    }
}

/// A statement's write as the cluster sends it.
fn wire(m: Mutation) -> WireMutation {
    WireMutation {
        key: m.key,
        ts: m.ts,
        fragment: m.fragment,
    }
}

/// The level a serial level reads and repairs at.
fn quorum_of(serial: Consistency) -> Consistency {
    if serial == Consistency::LocalSerial {
        Consistency::LocalQuorum
    } else {
        Consistency::Quorum
    }
}

impl ClusterCoordinator {
    /// A read at a level that is not serial.
    async fn read_at(
        &self,
        command: ReadCommand,
        consistency: Consistency,
    ) -> Result<ReadResult, ErrorResponse> {
        let started = std::time::Instant::now();
        if self.local.is_heterogeneous(command.table) {
            let filter = command.filter.clone().unwrap_or_default();
            let catalog = self.local.current_catalog();
            let rf = catalog
                .table_by_id(command.table)
                .and_then(|t| catalog.keyspace(&t.keyspace))
                .map_or(1, |k| k.replication.factor() as usize);
            let replicas = consistency.block_for(rf);
            self.recorder
                .record(command.table, &filter, command.limit, replicas);
        }
        let tags = command
            .filter
            .iter()
            .filter(|f| !f.is_trivial())
            .map(|f| mosaic_cluster::message::Tag {
                name: super::FILTER_TAG.to_owned(),
                value: f.encode(),
            })
            .chain(command.index.iter().map(|i| mosaic_cluster::message::Tag {
                name: super::INDEX_TAG.to_owned(),
                value: i.encode(),
            }))
            .collect();
        let result = self
            .node
            .read_tagged(
                command.table,
                command.range,
                command.limit,
                consistency,
                tags,
            )
            .await;
        record(Op::Read, consistency, started, result.as_ref().err());
        let answer = result.map_err(|e| self.error(e, consistency))?;
        Ok(ReadResult {
            entries: answer.entries,
            exhausted: answer.exhausted,
            disputed: Some(answer.disputed),
        })
    }

    /// A lightweight transaction's rounds (see `mosaic_cluster::paxos`): win a round,
    /// read at the serial level's quorum, decide, propose and commit; a round lost to a
    /// concurrent one starts again until the contention timeout.
    async fn cas_rounds(
        &self,
        request: CasRequest,
        decision: Arc<dyn CasDecision>,
        serial: Consistency,
        commit: Consistency,
    ) -> Result<CasOutcome, CasError> {
        let mut lost: Option<PaxosRound> = None;
        loop {
            let round = self
                .node
                .paxos_begin(
                    request.table,
                    request.token,
                    request.partition.clone(),
                    serial,
                    commit,
                    lost.as_ref(),
                )
                .await?;
            let mut current = Vec::with_capacity(request.reads.len());
            for read in &request.reads {
                let result = self.read_at(read.clone(), quorum_of(serial)).await?;
                current.push(result);
            }
            let timestamp = i64::try_from(round.ballot.micros).unwrap_or(i64::MAX);
            let Some(mutations) = decision.decide(&current, timestamp)? else {
                return Ok(CasOutcome {
                    applied: false,
                    current,
                });
            };
            let mut writes = Vec::with_capacity(mutations.len());
            for m in mutations {
                if m.table != request.table || !m.key.starts_with(&request.partition) {
                    return Err(CasError::Statement(ErrorResponse::new(
                        ErrorKind::Server,
                        "a conditional update wrote outside its partition".to_owned(),
                    )));
                }
                writes.push(wire(m));
            }
            if self
                .node
                .paxos_propose_and_commit(&round, writes, commit)
                .await?
            {
                return Ok(CasOutcome {
                    applied: true,
                    current,
                });
            }
            lost = Some(round);
        }
    }

    /// A read at SERIAL or LOCAL_SERIAL: for one partition, any Paxos round in progress
    /// for it is finished first, then the partition is read at the level's quorum, so the
    /// read sees every transaction that may have been applied. A read of several
    /// partitions (a range) is read at the quorum alone, as Cassandra 4.1 answers it.
    async fn serial_read(
        &self,
        command: ReadCommand,
        serial: Consistency,
    ) -> Result<ReadResult, ErrorResponse> {
        let quorum = quorum_of(serial);
        let catalog = self.local.current_catalog();
        let table = catalog
            .table_by_id(command.table)
            .ok_or_else(|| self.local.unknown_table(command.table))?;
        let start = &command.range.start;
        let partition = table
            .key_schema()
            .partition_prefix_len(start)
            .ok()
            .and_then(|len| start.get(..len))
            .filter(|p| {
                command
                    .range
                    .end
                    .as_ref()
                    .is_some_and(|end| end.starts_with(p))
            })
            .map(<[u8]>::to_vec);
        let Some(partition) = partition else {
            return self.read_at(command, quorum).await;
        };
        let Ok(token) = mosaic_rows::decode_token(&partition) else {
            return self.read_at(command, quorum).await;
        };
        let started = std::time::Instant::now();
        let begun = self
            .node
            .paxos_begin(command.table, token, partition, serial, quorum, None)
            .await;
        if let Err(e) = begun {
            record(Op::Read, serial, started, Some(&e));
            let cl = e.consistency().unwrap_or(serial);
            return Err(self.error(e, cl));
        }
        self.read_at(command, quorum).await
    }
}

/// A coordinated request, for its metrics.
#[derive(Clone, Copy)]
enum Op {
    Write = 0,
    Read = 1,
}

/// The outcomes a request is counted under.
const OUTCOMES: [&str; 5] = ["ok", "unavailable", "timeout", "overloaded", "error"];
const LEVELS: usize = Consistency::ALL.len();
/// Metric handles by (operation, level[, outcome]), looked up in the recorder once each: a
/// lookup hashes the labels and takes the registry's lock, which per request was 4% of a
/// read's CPU. (The recorder is installed before the node serves.)
static REQUESTS: [OnceLock<metrics::Counter>; 2 * LEVELS * OUTCOMES.len()] =
    [const { OnceLock::new() }; 2 * LEVELS * OUTCOMES.len()];
static LATENCIES: [OnceLock<metrics::Histogram>; 2 * LEVELS] =
    [const { OnceLock::new() }; 2 * LEVELS];

/// Counts a coordinated request and its latency by operation, level and outcome.
fn record(op: Op, cl: Consistency, started: std::time::Instant, error: Option<&ClusterError>) {
    let outcome = match error {
        None => 0,
        Some(ClusterError::Unavailable { .. }) => 1,
        Some(
            ClusterError::WriteTimeout { .. }
            | ClusterError::ReadTimeout { .. }
            | ClusterError::CasTimeout { .. },
        ) => 2,
        Some(ClusterError::Overloaded(_)) => 3,
        Some(_) => 4,
    };
    let name = match op {
        Op::Write => "write",
        Op::Read => "read",
    };
    let level = usize::from(cl.code()).min(LEVELS - 1);
    let series = op as usize * LEVELS + level;
    let requests = REQUESTS[series * OUTCOMES.len() + outcome].get_or_init(|| {
        metrics::counter!("mosaic_requests_total", "op" => name, "cl" => cl.name(), "outcome" => OUTCOMES[outcome])
    });
    requests.increment(1);
    let latency = LATENCIES[series].get_or_init(
        || metrics::histogram!("mosaic_request_seconds", "op" => name, "cl" => cl.name()),
    );
    latency.record(started.elapsed().as_secs_f64());
}

/// A peer as the system tables describe it.
pub fn node_info(state: &EndpointState, up: bool) -> NodeInfo {
    let app = &state.app;
    NodeInfo {
        host_id: app.host_id,
        rpc_address: app.rpc_address,
        native_port: app.native_port,
        broadcast_address: state.endpoint.ip(),
        data_center: app.data_center.clone(),
        rack: app.rack.clone(),
        tokens: app.tokens.iter().map(|t| Token(*t)).collect(),
        schema_version: Uuid(app.schema_version),
        release_version: app.release_version.clone(),
        up,
    }
}

impl Coordinator for ClusterCoordinator {
    fn catalog(&self) -> Arc<Catalog> {
        self.local.current_catalog()
    }

    async fn update_schema<R, F>(&self, change: F) -> Result<R, ErrorResponse>
    where
        R: Send + 'static,
        F: FnOnce(&Catalog) -> Result<(Catalog, R), ErrorResponse> + Send + 'static,
    {
        let before = self.local.schema_version();
        let r = Coordinator::update_schema(&*self.local, change).await?;
        if self.local.schema_version() != before {
            self.node.push_schema().await;
        }
        Ok(r)
    }

    async fn write(
        &self,
        mutations: Vec<Mutation>,
        consistency: Consistency,
    ) -> Result<(), ErrorResponse> {
        let writes = mutations
            .into_iter()
            .map(|m| (m.table, m.token, wire(m)))
            .collect();
        let started = std::time::Instant::now();
        let result = self.node.write(writes, consistency).await;
        record(Op::Write, consistency, started, result.as_ref().err());
        result.map_err(|e| self.error(e, consistency))
    }

    async fn read(
        &self,
        command: ReadCommand,
        consistency: Consistency,
    ) -> Result<ReadResult, ErrorResponse> {
        if matches!(consistency, Consistency::Serial | Consistency::LocalSerial) {
            return self.serial_read(command, consistency).await;
        }
        self.read_at(command, consistency).await
    }

    async fn cas(
        &self,
        request: CasRequest,
        decision: Arc<dyn CasDecision>,
        serial: Consistency,
        commit: Consistency,
    ) -> Result<CasOutcome, ErrorResponse> {
        let started = std::time::Instant::now();
        let result = self.cas_rounds(request, decision, serial, commit).await;
        let cluster_error = match &result {
            Err(CasError::Cluster(e)) => Some(e),
            _ => None,
        };
        record(Op::Write, serial, started, cluster_error);
        result.map_err(|e| match e {
            CasError::Cluster(e) => {
                let cl = e.consistency().unwrap_or(serial);
                self.error(e, cl)
            }
            CasError::Statement(e) => e,
        })
    }

    async fn counter_write(
        &self,
        increments: Vec<CounterIncrement>,
        consistency: Consistency,
    ) -> Result<(), ErrorResponse> {
        let increments = increments
            .into_iter()
            .map(|i| {
                (
                    i.table,
                    i.token,
                    WireCounter {
                        key: i.key,
                        column: i.column.0,
                        delta: i.delta,
                    },
                )
            })
            .collect();
        let started = std::time::Instant::now();
        let result = self.node.counter_write(increments, consistency).await;
        record(Op::Write, consistency, started, result.as_ref().err());
        result.map_err(|e| {
            let mut error = self.error(e, consistency);
            if let ErrorKind::WriteTimeout { write_type, .. }
            | ErrorKind::WriteFailure { write_type, .. } = &mut error.kind
            {
                *write_type = WriteType::Counter;
            }
            error
        })
    }

    async fn truncate(&self, table: TableId) -> Result<(), ErrorResponse> {
        self.node
            .truncate(table)
            .await
            .map_err(|e| self.error(e, Consistency::All))
    }

    fn new_timestamp(&self) -> i64 {
        self.local.new_timestamp()
    }

    fn now_secs(&self) -> i64 {
        self.local.now_secs()
    }

    fn local_node(&self) -> NodeInfo {
        self.local.local_node()
    }

    fn peers(&self) -> Vec<NodeInfo> {
        let me = self.node.endpoint();
        self.node
            .states()
            .iter()
            // As Cassandra's `system.peers`: the nodes owning their tokens, so drivers
            // never route to a node still joining or one that left.
            .filter(|(s, _)| s.endpoint != me && s.app.ring_status.owns_now())
            .map(|(s, up)| node_info(s, *up))
            .collect()
    }

    fn cluster_info(&self) -> ClusterInfo {
        self.local.cluster_info()
    }

    fn default_layout(&self) -> Result<mosaic_types::Layout, ErrorResponse> {
        Coordinator::default_layout(&*self.local)
    }

    fn built_indexes(&self) -> Vec<(String, String)> {
        self.local.built_index_names()
    }

    /// This node's own statistics, as Cassandra's coordinator consults its own index
    /// tables (every node indexes the rows it holds, alike in shape).
    fn index_mean_rows(&self, table: TableId, index: &str) -> Option<f64> {
        self.local.index_mean_rows(table, index)
    }

    fn tombstone_thresholds(&self) -> mosaic_cql::coordinator::TombstoneThresholds {
        Coordinator::tombstone_thresholds(&*self.local)
    }
}
