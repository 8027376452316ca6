//! The admin endpoint's JSON bodies, shared by the server half (which serializes them)
//! and the CLI (which reads them back).
//!
//! Field names are a stable interface: `mosaic status|stats|repair`, the `bench/` scripts
//! and the Python tests read them.

use mosaic_lsm::CounterSnapshot;
use serde::{Deserialize, Serialize};

/// An error answer: `{"error": "..."}`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ErrorBody {
    /// What went wrong.
    pub error: String,
}

/// `GET /status`: the cluster as one node sees it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Status {
    /// The answering node's internode address.
    pub endpoint: String,
    /// Every node it knows, itself included.
    pub nodes: Vec<NodeStatus>,
    /// The answering node's request scheduling.
    #[serde(default)]
    pub scheduling: SchedulingStatus,
}

/// How the answering node schedules requests (`[scheduling]`).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct SchedulingStatus {
    /// The replica-selection policy its reads use.
    pub replica_selection: String,
    /// The policy's decisions so far, by kind.
    pub decisions: Vec<(String, u64)>,
    /// The oracle tagging its reads (`size_oracle`), empty for none.
    #[serde(default)]
    pub size_oracle: String,
    /// Its read stage, absent when reads go through none (`read_concurrency = 0`).
    #[serde(default)]
    pub read_stage: Option<ReadStageStatus>,
}

/// A node's read stage (`[scheduling] local_queue`, `read_concurrency`).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct ReadStageStatus {
    /// The queue policy.
    pub local_queue: String,
    /// Reads served at once.
    pub read_concurrency: usize,
    /// Of those, slots only first-priority reads may take (`reserved_slots`).
    #[serde(default)]
    pub reserved_slots: usize,
    /// Reads running now.
    pub running: u64,
    /// Reads waiting now.
    pub waiting: u64,
    /// Reads that came tagged with an expected size, since start.
    pub sized_total: u64,
    /// Reads that ran at once where they arrived, since start.
    pub inline_total: u64,
    /// Reads that waited in the queue, since start.
    pub queued_total: u64,
    /// Queued reads dropped because they waited longer than the read timeout, since start.
    #[serde(default)]
    pub dropped_total: u64,
    /// Time queued reads waited, in total (microseconds).
    pub wait_micros_total: u64,
}

/// One node of `GET /status`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct NodeStatus {
    /// Its internode address.
    pub endpoint: String,
    /// The address clients use.
    pub rpc_address: String,
    /// Its CQL port.
    pub native_port: u16,
    /// Its admin port (0: none).
    pub admin_port: u16,
    /// Its host id (UUID).
    pub host_id: String,
    /// Its datacenter.
    pub data_center: String,
    /// Its rack.
    pub rack: String,
    /// Whether the answering node sees it UP.
    pub up: bool,
    /// Bytes it stores (gossiped estimate).
    pub load_bytes: u64,
    /// How many tokens it owns.
    pub tokens: usize,
    /// Its share of the ring as primary, 0..=1.
    pub owns: f64,
    /// Its schema version (UUID).
    pub schema_version: String,
    /// Its place in the ring: `Normal`, `Joining`, `Leaving` or `Left`.
    #[serde(default)]
    pub state: String,
}

/// `GET /netstats`: the streams of the answering node's join or leave.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Netstats {
    /// The answering node's ring state (`Normal`, `Joining`, `Leaving`, `Left`).
    pub mode: String,
    /// `bootstrap` or `decommission`; empty when it never moved since it started.
    pub operation: String,
    /// Whether that operation finished.
    pub finished: bool,
    /// Its failure, if it failed.
    pub error: Option<String>,
    /// Milliseconds it ran (until now, or until it finished).
    pub elapsed_ms: u64,
    /// Entries copied into the structures of this node's new roles.
    pub rehomed_entries: u64,
    /// Partitions of the moved ranges whose lightweight transactions' Paxos state this
    /// node's move repaired (finished or brought to the newest commit on every replica).
    #[serde(default)]
    pub paxos_repaired: u64,
    /// One session per peer and direction.
    pub sessions: Vec<StreamSessionStatus>,
}

/// One peer's stream (`mosaic netstats`).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct StreamSessionStatus {
    /// The peer's internode address.
    pub peer: String,
    /// `receiving` or `sending`.
    pub direction: String,
    /// Ranges (per table) to stream.
    pub ranges_total: u64,
    /// Ranges streamed.
    pub ranges_done: u64,
    /// Entries streamed.
    pub entries: u64,
    /// Bytes streamed.
    pub bytes: u64,
}

/// `POST /decommission`: what the node streamed away before it left.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct DecommissionReport {
    /// The streams of the decommission.
    pub streams: Netstats,
}

/// `POST /cleanup`: what the node dropped of the data it no longer owns.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct CleanupReport {
    /// Per table cleaned (or failed).
    pub tables: Vec<TableCleanup>,
    /// Whether every table was cleaned.
    pub complete: bool,
}

/// One table's cleanup.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct TableCleanup {
    /// `keyspace.table`.
    pub table: String,
    /// Its layout.
    pub layout: String,
    /// Versions dropped as not owned.
    pub dropped_versions: u64,
    /// Bytes in its tables before and after.
    pub bytes_before: u64,
    pub bytes_after: u64,
    /// Per storage structure.
    pub structures: Vec<StructureCleanup>,
    /// What the cleanup leaves in place (erasure-tiered: parity and coding state).
    #[serde(default)]
    pub note: Option<String>,
    /// Why the table was not (fully) cleaned.
    #[serde(default)]
    pub error: Option<String>,
}

/// One structure's cleanup (`shared`, `primary`, `src-<host id>`, `log`, `replica-<i>`).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct StructureCleanup {
    pub structure: String,
    pub bytes_before: u64,
    pub bytes_after: u64,
    pub entries_before: u64,
    pub entries_after: u64,
}

/// `GET /activity`: the totals the status page turns into live rates (the change between
/// two polls), since the node started.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Activity {
    /// Requests this node coordinated, by operation (`read`, `write`); absent when the
    /// node records no metrics.
    #[serde(default)]
    pub requests: Option<Vec<RequestActivity>>,
    /// Token ranges this node repaired (or attempted).
    pub repair_ranges_total: u64,
    /// Entries repair streamed to replicas that lacked them.
    pub repair_entries_streamed_total: u64,
}

/// One operation's requests (`mosaic_requests_total`, `mosaic_request_seconds`) over every
/// consistency level.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RequestActivity {
    /// `read` or `write`.
    pub op: String,
    /// Requests coordinated.
    pub total: u64,
    /// Those that did not succeed (every outcome but `ok`).
    pub failed_total: u64,
    /// Requests timed: the latency histogram's count.
    pub latency_count: u64,
    /// The latency histogram's finite buckets, bounds ascending; counts are cumulative
    /// (requests at most that long), so `latency_count` minus the last is the slower rest.
    pub latency_buckets: Vec<LatencyBucket>,
}

/// A latency histogram bucket: requests that took at most `le_seconds`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LatencyBucket {
    pub le_seconds: f64,
    pub count: u64,
}

/// One structure's (or a sum's) engine counters as `/stats` reports them.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Counters {
    pub user_bytes_written: u64,
    pub wal_bytes_written: u64,
    pub flush_bytes_written: u64,
    pub compaction_bytes_written: u64,
    pub compaction_bytes_read: u64,
    pub get_bytes_read: u64,
    pub scan_bytes_read: u64,
    pub gets: u64,
    pub get_tables_probed: u64,
    /// Blocks gets read from disk (block cache misses, one I/O each), by kind: data, and
    /// index and filter when `[storage] cache_index_and_filter_blocks` puts them in the
    /// cache (pinned ones are read once, when the table opens).
    #[serde(default)]
    pub get_data_block_reads: u64,
    #[serde(default)]
    pub get_index_block_reads: u64,
    #[serde(default)]
    pub get_filter_block_reads: u64,
    /// Of `get_bytes_read`, the bytes of index and of filter blocks.
    #[serde(default)]
    pub get_index_bytes_read: u64,
    #[serde(default)]
    pub get_filter_bytes_read: u64,
    /// Block cache hits and misses (data blocks, and index and filter blocks when the
    /// cache holds them).
    #[serde(default)]
    pub block_cache_hits: u64,
    #[serde(default)]
    pub block_cache_misses: u64,
    pub flushes: u64,
    pub compactions: u64,
    /// Bytes of tables written by ingests (ranges streamed in as this node joined),
    /// and how many tables: data that skipped the WAL, memtable and compaction.
    #[serde(default)]
    pub ingest_bytes_written: u64,
    #[serde(default)]
    pub ingested_tables: u64,
    pub split_bytes_written: u64,
    pub merge_sort_bytes_written: u64,
    pub splits: u64,
    pub merge_sorts: u64,
    /// Times a write waited in a stall (memtable budget, flushes or level 0 behind).
    #[serde(default)]
    pub write_stalls: u64,
    /// Microseconds writes spent stalled.
    #[serde(default)]
    pub write_stall_micros: u64,
    /// Writes refused after stalling past the write timeout (WriteTimeout in CQL).
    #[serde(default)]
    pub write_stall_timeouts: u64,
    /// Writes delayed by the level-0 slowdown.
    #[serde(default)]
    pub write_slowdowns: u64,
    /// Microseconds of those delays.
    #[serde(default)]
    pub write_slowdown_micros: u64,
    /// Bytes written to disk per user byte (0 before any).
    pub write_amplification: f64,
    /// Tables probed per get (0 before any get).
    pub tables_probed_per_get: f64,
    /// Disk bytes read per get (0 before any get).
    pub bytes_read_per_get: f64,
    /// Disk reads (I/Os: data, index and filter blocks) per get (0 before any get).
    #[serde(default)]
    pub block_reads_per_get: f64,
}

impl From<&CounterSnapshot> for Counters {
    fn from(c: &CounterSnapshot) -> Counters {
        Counters {
            user_bytes_written: c.user_bytes_written,
            wal_bytes_written: c.wal_bytes_written,
            flush_bytes_written: c.flush_bytes_written,
            compaction_bytes_written: c.compaction_bytes_written,
            compaction_bytes_read: c.compaction_bytes_read,
            get_bytes_read: c.get_bytes_read,
            scan_bytes_read: c.scan_bytes_read,
            gets: c.gets,
            get_tables_probed: c.get_tables_probed,
            get_data_block_reads: c.get_data_block_reads,
            get_index_block_reads: c.get_index_block_reads,
            get_filter_block_reads: c.get_filter_block_reads,
            get_index_bytes_read: c.get_index_bytes_read,
            get_filter_bytes_read: c.get_filter_bytes_read,
            block_cache_hits: c.block_cache_hits,
            block_cache_misses: c.block_cache_misses,
            ingest_bytes_written: c.ingest_bytes_written,
            ingested_tables: c.ingested_tables,
            flushes: c.flushes,
            compactions: c.compactions,
            split_bytes_written: c.split_bytes_written,
            merge_sort_bytes_written: c.merge_sort_bytes_written,
            splits: c.splits,
            merge_sorts: c.merge_sorts,
            write_stalls: c.write_stalls,
            write_stall_micros: c.write_stall_micros,
            write_stall_timeouts: c.write_stall_timeouts,
            write_slowdowns: c.write_slowdowns,
            write_slowdown_micros: c.write_slowdown_micros,
            write_amplification: c.write_amplification(),
            tables_probed_per_get: c.tables_probed_per_get(),
            bytes_read_per_get: c.bytes_read_per_get(),
            block_reads_per_get: c.block_reads_per_get(),
        }
    }
}

/// Files and bytes of one level.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Level {
    pub level: usize,
    pub files: usize,
    pub bytes: u64,
}

/// One structure of a table (its tree, a source tree, the log).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct StructureStats {
    /// `shared`, `primary`, `src-<host id>`, `log`.
    pub structure: String,
    #[serde(flatten)]
    pub counters: Counters,
    pub memtable_bytes: usize,
    pub levels: Vec<Level>,
}

/// A lost table decoded for degraded reads (`TableStats::decoded_tables`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DecodedTable {
    /// The table's size.
    pub bytes: u64,
    /// Bytes of it decoded so far.
    pub decoded: u64,
}

/// One table: its counters summed over its structures, and per structure.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct TableStats {
    pub layout: String,
    #[serde(flatten)]
    pub counters: Counters,
    pub memtable_bytes: usize,
    /// Levels of all structures merged by number.
    pub levels: Vec<Level>,
    /// Bytes of the table's files on local disk (a cold table's metadata sidecar counts).
    #[serde(default)]
    pub hot_bytes: u64,
    /// Bytes of the table's data blocks offloaded to the cold tier.
    #[serde(default)]
    pub cold_bytes: u64,
    /// `erasure-tiered`: bytes of parity shards this node holds locally for coding groups.
    #[serde(default)]
    pub parity_bytes: u64,
    /// `erasure-tiered`: bytes of this node's parity shards offloaded to the cold tier.
    #[serde(default)]
    pub cold_parity_bytes: u64,
    /// `erasure-tiered`: bytes of this node's primary-tree tables that are data shards.
    #[serde(default)]
    pub coded_bytes: u64,
    /// `erasure-tiered`: the lost tables (data shards of primaries found down) this node
    /// holds decoded, in part or whole, for degraded reads; least recently read first.
    #[serde(default)]
    pub decoded_tables: Vec<DecodedTable>,
    /// `erasure-tiered`: keys of other nodes' coded tables whose versions this node, as a
    /// secondary, dropped or drops at its next purge (secondary removal).
    #[serde(default)]
    pub covered_keys: u64,
    pub structures: Vec<StructureStats>,
    /// `heterogeneous`: each replica index's tree on this node — its clustering order
    /// (declared positions) and the reads it served and rows they examined.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub replica_trees: Vec<ReplicaTree>,
    /// `heterogeneous`: re-layouts under way on this node.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub relayouts: Vec<Relayout>,
}

/// One replica index's tree of a heterogeneous table.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ReplicaTree {
    pub index: usize,
    pub order: Vec<usize>,
    pub reads: u64,
    pub rows_scanned: u64,
}

/// A heterogeneous table's re-layout under way.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Relayout {
    pub index: usize,
    pub order: Vec<usize>,
    /// Whether every entry was copied (only the switch is left).
    pub copied: bool,
}

/// One table of `GET /stats`: its stats, or why they could not be read.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct TableEntry {
    /// `keyspace.table`.
    pub table: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stats: Option<TableStats>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// The node's storage engine as a whole: its budgets and what they hold now, and the
/// write stalls and slowdowns summed over every table.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct EngineStats {
    /// Partitions (table structures) open in the engine.
    pub partitions: usize,
    /// Bytes all memtables hold now.
    pub memtable_bytes: usize,
    /// `[storage] memtable_space_bytes` (0: no node-wide limit).
    pub memtable_space_bytes: usize,
    /// Bytes the block cache holds now.
    pub block_cache_bytes: u64,
    /// `[storage] block_cache_size_bytes`.
    pub block_cache_capacity_bytes: u64,
    /// `[storage] cache_index_and_filter_blocks`: index and filter blocks in the cache.
    #[serde(default)]
    pub cache_index_and_filter_blocks: bool,
    /// Gets served, and the blocks and bytes they read from disk, over every table.
    #[serde(default)]
    pub gets: u64,
    #[serde(default)]
    pub get_block_reads: u64,
    #[serde(default)]
    pub get_bytes_read: u64,
    /// Block cache hits and misses over every table (data blocks, and index and filter
    /// blocks when the cache holds them).
    #[serde(default)]
    pub block_cache_hits: u64,
    #[serde(default)]
    pub block_cache_misses: u64,
    /// Bytes in the shared commit log's files.
    pub wal_bytes: u64,
    /// The node's async runtime threads (`worker_threads`): CQL and internode
    /// connections, and inline engine calls.
    #[serde(default)]
    pub worker_threads: usize,
    /// The shared flush and compaction workers.
    pub flush_threads: usize,
    pub compaction_threads: usize,
    /// `[storage] compaction_throughput_mib_per_sec` in bytes (0: unlimited).
    pub compaction_bytes_per_sec: u64,
    pub write_stalls: u64,
    pub write_stall_micros: u64,
    pub write_stall_timeouts: u64,
    pub write_slowdowns: u64,
    pub write_slowdown_micros: u64,
    /// The counter cache: what it holds, its capacity (`[storage]
    /// counter_cache_size_bytes`), and its hits and misses since the node started.
    #[serde(default)]
    pub counter_cache_bytes: u64,
    #[serde(default)]
    pub counter_cache_capacity_bytes: u64,
    #[serde(default)]
    pub counter_cache_entries: u64,
    #[serde(default)]
    pub counter_cache_hits: u64,
    #[serde(default)]
    pub counter_cache_misses: u64,
}

/// The node's hints: what they hold against the per-host cap, and the drops at it.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct HintStats {
    /// Hints held, all targets.
    pub pending: u64,
    /// Their bytes.
    pub bytes: u64,
    /// Bytes held for the target holding most.
    pub bytes_max_held: u64,
    /// `[cluster] max_hints_size_per_host_bytes` (0: no cap).
    pub bytes_max_per_host: u64,
    /// Hints dropped at the cap since the node started.
    pub dropped: u64,
}

/// `GET /stats`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Stats {
    /// The node engine (absent in answers of older nodes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine: Option<EngineStats>,
    /// The node's hints (absent in answers of older nodes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hints: Option<HintStats>,
    pub tables: Vec<TableEntry>,
}

/// `GET /compactions`: the node engine's flushes and compactions running or due now, over
/// every table, structure and index (`mosaic compactionstats`, as `nodetool
/// compactionstats` shows a Cassandra node's). The fields are those of
/// [`mosaic_lsm::BackgroundWork`], and `idle` its [`mosaic_lsm::BackgroundWork::is_idle`].
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Compactions {
    pub flushes_pending: usize,
    pub flushes_running: usize,
    pub compactions_running: usize,
    pub compactions_due: usize,
    pub compaction_due_bytes: u64,
    pub level0_tables: usize,
    pub idle: bool,
}

impl From<&mosaic_lsm::BackgroundWork> for Compactions {
    fn from(w: &mosaic_lsm::BackgroundWork) -> Self {
        Compactions {
            flushes_pending: w.flushes_pending,
            flushes_running: w.flushes_running,
            compactions_running: w.compactions_running,
            compactions_due: w.compactions_due,
            compaction_due_bytes: w.compaction_due_bytes,
            level0_tables: w.level0_tables,
            idle: w.is_idle(),
        }
    }
}

/// A table an operation failed on.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct TableFailure {
    pub table: String,
    pub error: String,
}

/// `POST /flush`, `POST /compact`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct TableOpReport {
    /// `flush` or `compact`.
    pub operation: String,
    /// Tables the operation ran on.
    pub tables: usize,
    pub failed: Vec<TableFailure>,
}

/// `POST /repair`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RepairReport {
    pub tables: usize,
    pub ranges: u64,
    pub ranges_failed: u64,
    pub leaves: u64,
    pub leaves_mismatched: u64,
    pub entries_streamed: u64,
    pub bytes_streamed: u64,
    /// Erasure-tiered tables: coding shards this node lacked, rebuilt from their groups.
    #[serde(default)]
    pub shards_rebuilt: u64,
    /// Erasure-tiered tables: lost shards that could not be rebuilt.
    #[serde(default)]
    pub shards_failed: u64,
    /// Partitions whose Paxos state needed a round: a transaction left unfinished, or
    /// replicas that disagreed on its newest commit.
    #[serde(default)]
    pub paxos_repaired: u64,
    pub errors: Vec<String>,
    pub complete: bool,
}
