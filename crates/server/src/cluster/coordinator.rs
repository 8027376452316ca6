//! [`ClusterCoordinator`]: the CQL layer's [`Coordinator`] over the cluster [`Node`] —
//! statements' mutations and reads replicated at their consistency level, the cluster's
//! failures mapped to Cassandra's error codes, schema changes propagated, peers described
//! to the system tables.

use super::*;

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
            ClusterError::Overloaded(_) => ErrorKind::Overloaded,
            ClusterError::UnknownTable(t) => return self.local.unknown_table(t),
            _ => ErrorKind::Server,
        };
        ErrorResponse::new(kind, message)
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
        Some(ClusterError::WriteTimeout { .. } | ClusterError::ReadTimeout { .. }) => 2,
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
            .map(|m| {
                (
                    m.table,
                    m.token,
                    WireMutation {
                        key: m.key,
                        ts: m.ts,
                        fragment: m.fragment,
                    },
                )
            })
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
        let (entries, exhausted) = result.map_err(|e| self.error(e, consistency))?;
        Ok(ReadResult { entries, exhausted })
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
            .filter(|(s, _)| s.endpoint != me)
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
}
