//! The node's configuration: one TOML file, read once at start.
//!
//! Owns the meaning and the defaults of every key (all defaults live in the `Default`
//! impls below and nowhere else) and their validation. Unknown keys are errors naming the
//! key, so a misspelt setting never silently falls back to its default. Every key is
//! documented in `docs/mosaic.example.toml`; a test checks that file parses to exactly
//! these defaults, so the two cannot drift apart.
//!
//! Relative paths (`data_dir`) are resolved against the directory holding the file, so a
//! config means the same thing whatever the working directory of the process.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use mosaic_types::{Layout, ReplicaSelection};
use serde::{Deserialize, Serialize};

mod limits;
mod storage;

/// The whole configuration file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// `cluster_name` of `system.local`; drivers show it.
    pub cluster_name: String,
    /// The address the CQL port listens on.
    pub listen_address: IpAddr,
    /// The address clients are told to use (`rpc_address` of `system.local`); defaults to
    /// `listen_address`, and must be set when that is a wildcard.
    pub broadcast_address: Option<IpAddr>,
    /// The CQL native-protocol port.
    pub native_port: u16,
    /// Where schema, node identity and table data live.
    pub data_dir: PathBuf,
    /// This node's datacenter.
    pub data_center: String,
    /// This node's rack.
    pub rack: String,
    /// Start even though `data_center` differs from the datacenter this node last ran in
    /// (remembered in `data_dir/node.toml`), and remember the new one; off, such a node
    /// refuses to start, naming both (Cassandra's `-Dcassandra.ignore_dc=true`).
    pub ignore_data_center_change: bool,
    /// The same for `rack` (Cassandra's `-Dcassandra.ignore_rack=true`).
    pub ignore_rack_change: bool,
    /// Tokens chosen at first start (only then: changing it later has no effect).
    pub num_tokens: u32,
    /// The tokens a new node takes at its first start, instead of choosing `num_tokens`
    /// (Cassandra's `initial_token`; `mosaic cluster up` gives a new cluster's nodes evenly
    /// interleaved ones). Ignored once the node has an identity.
    pub initial_token: Vec<i64>,
    /// A dead node this new node replaces at its first start (Cassandra's
    /// `replace_address_first_boot`): `"ip"` (this node's storage port) or `"ip:port"`, the
    /// dead node's internode address. The new node takes its tokens, streams its ranges
    /// from the live replicas and owns them in its place; the dead node leaves the ring.
    /// Ignored once the node has an identity.
    pub replace_address: Option<String>,
    /// Milliseconds a SIGTERM/SIGINT waits for in-flight requests before closing storage.
    pub shutdown_timeout_ms: u64,
    /// Threads of the node's async runtime, which run CQL and internode connections and
    /// the engine calls made inline (`[storage] engine_calls`); 0: one per core available
    /// to the process. Several nodes sharing one machine each run best with their share
    /// of its cores: `mosaic cluster up` gives each of its nodes `cores / nodes` (at least 1).
    pub worker_threads: usize,
    /// Whether the node's memory may be backed by transparent huge pages (Linux). Off by
    /// default, as Cassandra's and most databases' guides advise: with them, memory the
    /// allocator returned to the OS and takes again (block reads of a churning block
    /// cache) comes back as a fresh 2 MiB page the kernel zeroes whole (a tenth of a
    /// node's CPU in a profile under YCSB C; BENCHMARKS.md has what turning it off
    /// measured). Off only for this process (no system setting changes).
    pub transparent_huge_pages: bool,
    /// The internode port (gossip, replication); peers reach this node at
    /// `broadcast_address:storage_port`.
    pub storage_port: u16,
    /// The admin HTTP port (`/status`, `/metrics`, flush, compaction, repair), 0 for none.
    pub admin_port: u16,
    /// The address the admin port binds: by default `listen_address` when that is a
    /// loopback address (a local cluster's 127.0.0.N), else 127.0.0.1 (or ::1), so other
    /// hosts cannot reach it ([`Config::admin_address`]).
    pub admin_listen_address: Option<IpAddr>,
    /// Nodes contacted to join the cluster, as `"ip"` (this node's storage port),
    /// `"ip:port"`, or a DNS name (`"name"`, `"name:port"`) resolved at start
    /// (`crate::deploy`). Empty: this node is its own seed (a one-node cluster to start with).
    pub seeds: Vec<String>,
    /// Membership, replication and request timeouts.
    pub cluster: ClusterConfig,
    /// The storage engine of every table.
    pub storage: StorageConfig,
    /// Where the `erasure-tiered` layout offloads cold data.
    pub cold_tier: ColdTierConfig,
    /// Bounds on what clients can make the node hold.
    pub limits: LimitsConfig,
    /// What the node logs.
    pub log: LogConfig,
    /// How requests are scheduled: which replicas a read asks (`replica_selection` and a
    /// sub-table of parameters per policy, e.g. `[scheduling.dynamic-snitch]`).
    pub scheduling: mosaic_cluster::selection::SchedulingConfig,
    /// How clients log in and what roles may do.
    pub auth: crate::auth::AuthConfig,
    /// TLS on the CQL port.
    pub client_encryption: crate::tls::ClientEncryptionConfig,
    /// TLS between nodes.
    pub internode_encryption: crate::internode_tls::InternodeEncryptionConfig,
    /// `[internode_auth]`: the cluster secret peers prove they know.
    pub internode_auth: crate::internode_auth::InternodeAuthConfig,
}

/// When the write-ahead log reaches stable storage.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WalSync {
    /// fsync every write before acknowledging it.
    PerWrite,
    /// Group commit: one fsync for the writes arriving together.
    Batch,
    /// Acknowledge once in the OS; fsync every `wal_sync_interval_ms` (Cassandra's default).
    Periodic,
}

/// Where the node runs the engine calls of reads and writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum EngineCalls {
    /// On the network threads, except writes that wait for an fsync (`wal_sync` other
    /// than `periodic`), which are handed off like `offload`. Fastest when data is mostly
    /// in memory or the page cache.
    Inline,
    /// Handed to another thread, so a slow disk never holds up other connections'
    /// requests; costs a thread handoff per request. Reads go to the read stage's threads
    /// (`[scheduling] read_concurrency`; without a stage, and writes, to `block_in_place`).
    Offload,
}

/// `[storage]`: the node's storage engine (one per node: one write-ahead log, one pool of
/// flush and compaction workers, one memtable budget and one block cache for every table)
/// and the options of each table's partitions of it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct StorageConfig {
    /// Size at which one memtable (of one table, or one structure of its layout) is frozen
    /// and flushed.
    pub memtable_size_bytes: u64,
    /// Target size of the SSTables compaction writes (Cassandra's LCS
    /// `sstable_size_in_mb`); also the unit ELECT codes and offloads.
    pub sstable_size_bytes: u64,
    /// Bytes all memtables of the node together may hold; past
    /// `memtable_cleanup_threshold` of it the largest is flushed, and at the limit writes
    /// wait for flushes (and time out as WriteTimeout rather than queue without bound).
    pub memtable_space_bytes: u64,
    /// Fraction of `memtable_space_bytes` the memtables not being flushed may hold before
    /// the largest is flushed (Cassandra's `memtable_cleanup_threshold`).
    pub memtable_cleanup_threshold: f64,
    /// When writes are synced.
    pub wal_sync: WalSync,
    /// The period of `wal_sync = "periodic"`.
    pub wal_sync_interval_ms: u64,
    /// Start even when the commit log is damaged before its end, losing the writes from
    /// the damage on (the damaged file is kept in `wal/damaged/`); off, such a node refuses
    /// to start, naming the file and offset (Cassandra's
    /// `-Dcassandra.commitlog.ignorereplayerrors=true`).
    pub wal_ignore_replay_errors: bool,
    /// The node's block cache, shared by every table (0 disables it).
    pub block_cache_size_bytes: u64,
    /// Keep SSTables' index blocks and Bloom filters in the block cache — charged to
    /// `block_cache_size_bytes` and evicted by use like data blocks — instead of pinned in
    /// memory for as long as a table is open (RocksDB's `cache_index_and_filter_blocks`).
    /// Off by default, as RocksDB's default and Cassandra's off-heap Bloom filters and index
    /// summaries: pinned metadata is about 1% of the data (4 KiB blocks, 10 Bloom bits per
    /// key) and saves two cache lookups per table a read probes. Turn it on when data
    /// outgrows memory, so the metadata competes with data blocks inside the cache's budget
    /// rather than growing outside every budget. Without a block cache, metadata is pinned.
    pub cache_index_and_filter_blocks: bool,
    /// Split each new SSTable's index block and Bloom filter into partitions of about this
    /// many bytes of index, behind a small top-level index that the table always holds
    /// (RocksDB's two-level index with partitioned filters and `metadata_block_size`); 0,
    /// the default, writes one index block and one filter per table. Pair it with
    /// `cache_index_and_filter_blocks`: a get that misses then reads back one partition of
    /// index and one of filter (a few KiB) instead of the table's whole index and filter
    /// (about 0.5 MiB and 80 KiB for a 64 MiB table of 1 KiB rows), so a cache smaller than
    /// the metadata of all tables no longer thrashes. Tables written before keep their
    /// format; both kinds are read.
    pub index_partition_bytes: u64,
    /// Data blocks larger than this are read past the block cache instead of inserted (0:
    /// a 64th of `block_cache_size_bytes`). Such a block holds a single large value (a
    /// value of a block's size or more starts a block of its own); caching it evicts
    /// hundreds of small blocks for one item, so with mixed item sizes the small ones,
    /// which give far more hits per cached byte, stay cached. Set it to the cache's size
    /// to cache every block.
    pub block_cache_max_block_bytes: u64,
    /// The counter cache: the shards of counters this node led lately, so the next
    /// increment of a hot counter reads nothing (Cassandra's `counter_cache_size`; 0
    /// disables it).
    pub counter_cache_size_bytes: u64,
    /// Read tables with O_DIRECT, bypassing the OS page cache, so reads that miss the block
    /// cache reach the disk (where the file system supports it; otherwise buffered reads).
    pub direct_io: bool,
    /// Write the tables of flushes, compactions and the decoupled log's splits and
    /// merge-sorts with O_DIRECT, bypassing the OS page cache (RocksDB's
    /// `use_direct_io_for_flush_and_compaction`; buffered where unsupported). The commit
    /// log stays buffered.
    pub direct_io_for_flush_and_compaction: bool,
    /// Threads flushing memtables, for the whole node.
    pub flush_threads: usize,
    /// Threads running compactions, for the whole node.
    pub compaction_threads: usize,
    /// Node-wide limit on what compactions write, in MiB per second (Cassandra's
    /// `compaction_throughput`); 0 is unlimited.
    pub compaction_throughput_mib_per_sec: u64,
    /// Where reads and writes run their engine calls.
    pub engine_calls: EngineCalls,
    /// The layout of tables created without a `layout` option: `uniform`, `multi-lsm` or
    /// `decoupled` (see `mosaic_types::Layout`).
    pub layout: Layout,
    /// Sorted runs a range group of the decoupled layout's log may hold before they are
    /// merge-sorted into one (DEPART's S: 1 behaves as a two-level tree, large as a log).
    pub sorted_runs_max: usize,
    /// Global-log segments one split of the decoupled layout's log takes; 0: no global
    /// log, each flush of the log writes straight into its range groups.
    pub split_segments: usize,
}

/// `[cluster]`: membership, replication and request timeouts.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ClusterConfig {
    /// Milliseconds between gossip rounds.
    pub gossip_interval_ms: u64,
    /// Whether a new node (no identity yet, not its own seed) joining a cluster that
    /// already owns the ring bootstraps: takes balanced tokens and streams the ranges it
    /// will own before it serves (Cassandra's `auto_bootstrap`). Off: it takes random
    /// tokens and owns them at once, empty (for nodes of a new cluster).
    pub auto_bootstrap: bool,
    /// MiB per second a node receives while streaming for a topology change (bootstrap,
    /// decommission), from all its sources together; 0 is unthrottled (Cassandra's
    /// `stream_throughput_outbound`, 24 MiB/s).
    pub stream_throughput_mib_per_sec: u64,
    /// Whether a join, decommission, removal or replacement skips repairing the Paxos state
    /// of the ranges it moves (Cassandra's `skip_paxos_repair_on_topology_change`): for a
    /// move that cannot complete because a round fails (too few live replicas), at the
    /// cost of lightweight transactions' guarantees for rounds in flight.
    pub skip_paxos_repair_on_topology_change: bool,
    /// Phi above which a silent peer is considered down (Cassandra's
    /// `phi_convict_threshold`).
    pub phi_convict_threshold: f64,
    /// How long a coordinator waits for write acknowledgements (Cassandra's
    /// `write_request_timeout`).
    pub write_request_timeout_ms: u64,
    /// How long a lightweight transaction retries a contended Paxos round before it
    /// answers a CAS write timeout (Cassandra's `cas_contention_timeout`).
    pub cas_contention_timeout_ms: u64,
    /// How long a coordinator waits for read answers, read repair included.
    pub read_request_timeout_ms: u64,
    /// How long a schema change waits for live peers to take it.
    pub schema_timeout_ms: u64,
    /// Requests from peers served at once; more are refused as overloaded.
    pub replica_requests_max: usize,
    /// Messages queued for one peer before more are dropped (their requests time out).
    pub peer_queue_max: usize,
    /// Bytes queued for one peer before more messages are dropped (an empty queue takes
    /// a message of any size).
    pub peer_queue_bytes_max: usize,
    /// Hints are stored for a replica down less than this; 0 disables hinted handoff
    /// (Cassandra's `max_hint_window`, 3 h).
    pub max_hint_window_ms: u64,
    /// Whether coordinators store hints at all (Cassandra's `hinted_handoff_enabled`); off
    /// is the same as `max_hint_window_ms = 0`.
    pub hinted_handoff_enabled: bool,
    /// Datacenters whose replicas get no hints from this coordinator (Cassandra's
    /// `hinted_handoff_disabled_datacenters`): a write a replica there misses waits for
    /// repair.
    pub hinted_handoff_disabled_datacenters: Vec<String>,
    /// Bytes of hints a node keeps for one replica; past it new hints for that replica
    /// are dropped (counted, logged) and repair brings it up to date (Cassandra's
    /// `max_hints_size_per_host`); 0: no cap.
    pub max_hints_size_per_host_bytes: u64,
    /// The most entries a replica answers one read (or repair page) with, whatever a peer
    /// asks for; a shorter answer says more follows and the coordinator reads on.
    pub read_answer_rows_max: usize,
    /// The most bytes (keys and values) of one replica answer, past the first entry; at
    /// most half the internode frame limit.
    pub read_answer_bytes_max: usize,
    /// Tombstones one query (page) may read before it is logged (Cassandra's
    /// `tombstone_warn_threshold`); 0: never.
    pub tombstone_warn_threshold: u64,
    /// Tombstones one query (page) may read before it fails with ReadFailure (Cassandra's
    /// `tombstone_failure_threshold`); 0: never.
    pub tombstone_failure_threshold: u64,
    /// Deprecated: `[scheduling] replica_selection` (still read, with a warning; when
    /// both are set, `[scheduling]`'s wins unless it is the default).
    pub replica_selection: Option<ReplicaSelection>,
    /// Milliseconds between a node's rounds of erasure-coding the cold last level of its
    /// `erasure-tiered` tables (ELECT's redundancy transitioning); 0 turns coding off.
    pub erasure_coding_interval_ms: u64,
    /// Milliseconds between a node's looks at heterogeneous tables with `auto = true`:
    /// the recorded queries' best orders are applied when they save at least the table's
    /// `auto_min_gain`; 0 turns it off.
    pub hr_auto_interval_ms: u64,
    /// Milliseconds a repair waits for one request to a replica (a Merkle tree of a range,
    /// a page of entries): a range holding a partition of millions of rows, hashed by a
    /// heterogeneous replica in another order than the declared one, may need more.
    pub repair_timeout_ms: u64,
    /// Lost tables of `erasure-tiered` tables a node decodes in the background at once,
    /// after a degraded read found them lost (the reads after it find their stripes
    /// decoded); 0 (the default): degraded reads decode only the stripes they touch —
    /// measured faster (`bench/elect.sh degraded`: decoding ahead slowed the first pass and
    /// did not speed up the next).
    pub degraded_read_ahead_tables: usize,
}

/// `[log]`: what the node logs, and where a request counts as slow.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LogConfig {
    /// A `tracing` filter (`EnvFilter` directives), e.g. `"info,mosaic_cluster=debug"`.
    /// `RUST_LOG`, when set, replaces it.
    pub level: String,
    /// CQL requests taking longer than this are logged (target `mosaic::slow_query`, at
    /// `warn`) with their statement, consistency and time; 0 logs none.
    pub slow_query_ms: u64,
}

/// `[cold_tier]`: the object store the `erasure-tiered` layout offloads cold tables and
/// parity to (ELECT's cold tier).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ColdTierConfig {
    /// `file:///absolute/dir` or `s3://bucket/prefix` (S3 needs a build with the `s3`
    /// feature; credentials and endpoint come from the usual `AWS_*` variables). Empty: a
    /// `cold/` directory beside the data directory. Objects are named under the node's
    /// host id, so nodes may share one.
    pub url: String,
    /// Milliseconds added to every cold-tier request, to emulate an edge-to-cloud link
    /// (ELECT measured at least 45 ms).
    pub request_latency_ms: u64,
}

/// `[limits]`: back-pressure bounds.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LimitsConfig {
    /// Client connections open at once: at the cap a new connection displaces the oldest
    /// one still in its handshake, and is closed at accept only when there is none.
    pub connection_count_max: usize,
    /// Requests of one connection being executed at once; at the cap the connection's
    /// socket is not read until one finishes.
    pub connection_requests_in_flight_max: usize,
    /// Largest frame accepted, header included (Cassandra's
    /// `native_transport_max_frame_size`).
    pub frame_size_bytes_max: u32,
    /// Requests being executed at once on the whole node.
    pub node_requests_concurrent_max: usize,
    /// Client connections from one address at once (Cassandra's
    /// `native_transport_max_concurrent_connections_per_ip`); 0: no cap.
    pub connections_per_address_max: usize,
    /// How long a connection may take to complete its handshake (STARTUP, and
    /// authentication when asked) before it is closed.
    pub handshake_timeout_ms: u64,
    /// How long a connection may stay silent with nothing running before it is closed
    /// (Cassandra's `native_transport_idle_timeout`); 0: never.
    pub idle_timeout_ms: u64,
    /// Admin endpoint requests served at once; more are answered 503 at once.
    pub admin_requests_max: usize,
    /// The largest write a coordinator accepts, keys and values of one statement or batch
    /// (Cassandra's `max_mutation_size`); at most half the internode frame limit.
    pub mutation_size_bytes_max: usize,
    // Statement limits (issue 21): see `mosaic_cql::processor::StatementLimits`.
    /// Partition keys the `=`/`IN` lists of one statement may name, their cartesian
    /// product (Scylla's `max_partition_key_restrictions_per_query`).
    pub partition_key_restrictions_max: usize,
    /// Clustering prefixes the `=`/`IN` lists of one statement may name (Scylla's
    /// `max_clustering_key_restrictions_per_query`).
    pub clustering_key_restrictions_max: usize,
    /// A batch over several partitions larger than this is logged and its client warned
    /// (Cassandra's `batch_size_warn_threshold`).
    pub batch_size_warn_threshold_bytes: usize,
    /// A batch over several partitions larger than this is refused (Cassandra's
    /// `batch_size_fail_threshold`).
    pub batch_size_fail_threshold_bytes: usize,
    /// The largest result a SELECT without paging may build before it is refused.
    pub unpaged_result_size_bytes_max: usize,
    /// The bytes the prepared-statement cache may hold (Cassandra's
    /// `prepared_statements_cache_size`); the least recently used are evicted past it.
    pub prepared_statements_cache_size_bytes: u64,
    /// Bytes of request frames being executed or answered on the whole node (Cassandra's
    /// `native_transport_max_request_data_in_flight`); past it connections wait, or are
    /// answered Overloaded if their STARTUP set `THROW_ON_OVERLOAD`.
    pub request_bytes_in_flight_max: usize,
    /// The same for the connections of one client address (Cassandra's
    /// `native_transport_max_request_data_in_flight_per_ip`).
    pub request_bytes_in_flight_per_address_max: usize,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            cluster_name: "Mosaic Cluster".to_owned(),
            listen_address: IpAddr::V4(Ipv4Addr::LOCALHOST),
            broadcast_address: None,
            native_port: 9042,
            data_dir: PathBuf::from("mosaic-data"),
            data_center: "datacenter1".to_owned(),
            rack: "rack1".to_owned(),
            ignore_data_center_change: false,
            ignore_rack_change: false,
            num_tokens: 16,
            initial_token: Vec::new(),
            replace_address: None,
            shutdown_timeout_ms: 10_000,
            worker_threads: 0,
            transparent_huge_pages: false,
            storage_port: 7000,
            admin_port: 7199,
            admin_listen_address: None,
            seeds: Vec::new(),
            cluster: ClusterConfig::default(),
            storage: StorageConfig::default(),
            cold_tier: ColdTierConfig::default(),
            limits: LimitsConfig::default(),
            log: LogConfig::default(),
            scheduling: mosaic_cluster::selection::SchedulingConfig::default(),
            auth: crate::auth::AuthConfig::default(),
            client_encryption: crate::tls::ClientEncryptionConfig::default(),
            internode_encryption: crate::internode_tls::InternodeEncryptionConfig::default(),
            internode_auth: crate::internode_auth::InternodeAuthConfig::default(),
        }
    }
}

impl Default for StorageConfig {
    fn default() -> StorageConfig {
        StorageConfig {
            memtable_size_bytes: 64 << 20,
            sstable_size_bytes: 64 << 20,
            memtable_space_bytes: 512 << 20,
            memtable_cleanup_threshold: 0.33,
            wal_sync: WalSync::Periodic,
            wal_sync_interval_ms: 10_000,
            wal_ignore_replay_errors: false,
            block_cache_size_bytes: 256 << 20,
            cache_index_and_filter_blocks: false,
            index_partition_bytes: 0,
            block_cache_max_block_bytes: 0,
            counter_cache_size_bytes: 50 << 20,
            direct_io: false,
            direct_io_for_flush_and_compaction: false,
            flush_threads: 2,
            compaction_threads: 2,
            compaction_throughput_mib_per_sec: 0,
            engine_calls: EngineCalls::Inline,
            layout: Layout::default(),
            sorted_runs_max: 20,
            split_segments: 4,
        }
    }
}

impl Default for ClusterConfig {
    fn default() -> ClusterConfig {
        ClusterConfig {
            gossip_interval_ms: 1000,
            phi_convict_threshold: 8.0,
            write_request_timeout_ms: 2000,
            cas_contention_timeout_ms: 1000,
            read_request_timeout_ms: 5000,
            schema_timeout_ms: 10_000,
            replica_requests_max: 4096,
            peer_queue_max: 16_384,
            peer_queue_bytes_max: 128 << 20,
            max_hint_window_ms: 3 * 3600 * 1000,
            hinted_handoff_enabled: true,
            hinted_handoff_disabled_datacenters: Vec::new(),
            auto_bootstrap: true,
            stream_throughput_mib_per_sec: 24,
            skip_paxos_repair_on_topology_change: false,
            max_hints_size_per_host_bytes: 1 << 30,
            read_answer_rows_max: mosaic_cluster::node::READ_ANSWER_ROWS_MAX,
            read_answer_bytes_max: 4 << 20,
            tombstone_warn_threshold: 1000,
            tombstone_failure_threshold: 100_000,
            replica_selection: None,
            erasure_coding_interval_ms: 60_000,
            hr_auto_interval_ms: 300_000,
            repair_timeout_ms: 60_000,
            degraded_read_ahead_tables: 0,
        }
    }
}

impl ClusterConfig {
    /// The hint window coordinators use: 0 (no hints) when hinted handoff is off.
    pub fn hint_window_ms(&self) -> u64 {
        if self.hinted_handoff_enabled {
            self.max_hint_window_ms
        } else {
            0
        }
    }
}

impl Default for LogConfig {
    fn default() -> LogConfig {
        LogConfig {
            level: "info".to_owned(),
            slow_query_ms: 500,
        }
    }
}

impl LogConfig {
    /// The filter the node logs with: `RUST_LOG` when set (`env`), else `level`.
    pub fn filter(&self, env: Option<&str>) -> Result<tracing_subscriber::EnvFilter> {
        let (what, directives) = match env {
            Some(d) => ("RUST_LOG", d),
            None => ("[log] level", self.level.as_str()),
        };
        tracing_subscriber::EnvFilter::builder()
            .parse(directives)
            .map_err(|e| anyhow::anyhow!("{what} {directives:?} is not a valid log filter: {e}"))
    }

    /// The slow-query threshold; `None` when the log is off.
    pub fn slow_query(&self) -> Option<std::time::Duration> {
        (self.slow_query_ms > 0).then(|| std::time::Duration::from_millis(self.slow_query_ms))
    }
}

impl Default for LimitsConfig {
    fn default() -> LimitsConfig {
        LimitsConfig {
            connection_count_max: 1024,
            connection_requests_in_flight_max: 1024,
            frame_size_bytes_max: mosaic_cql::frame::FRAME_LEN_MAX_DEFAULT,
            node_requests_concurrent_max: 4096,
            connections_per_address_max: 0,
            handshake_timeout_ms: 10_000,
            idle_timeout_ms: 0,
            admin_requests_max: 16,
            mutation_size_bytes_max: 16 << 20,
            partition_key_restrictions_max: Self::STATEMENT.partition_key_restrictions_max,
            clustering_key_restrictions_max: Self::STATEMENT.clustering_key_restrictions_max,
            batch_size_warn_threshold_bytes: Self::STATEMENT.batch_size_warn_threshold_bytes,
            batch_size_fail_threshold_bytes: Self::STATEMENT.batch_size_fail_threshold_bytes,
            unpaged_result_size_bytes_max: Self::STATEMENT.unpaged_result_size_bytes_max,
            prepared_statements_cache_size_bytes: Self::STATEMENT
                .prepared_statements_cache_size_bytes,
            request_bytes_in_flight_max: 256 << 20,
            request_bytes_in_flight_per_address_max: 64 << 20,
        }
    }
}

impl Config {
    /// Reads and validates `path`; relative paths in it become relative to its directory.
    pub fn load(path: &Path) -> Result<Config> {
        Config::load_with_env(path, |_| None)
    }

    /// [`Config::load`], with the keys `env` overrides (`crate::deploy::ENV_OVERRIDES`:
    /// what `mosaic server` takes from its environment) applied before validation.
    pub fn load_with_env(path: &Path, env: impl Fn(&str) -> Option<String>) -> Result<Config> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("reading config file {}", path.display()))?;
        let in_file = || format!("in config file {}", path.display());
        let mut config = Config::from_toml(&text).with_context(in_file)?;
        let applied = crate::deploy::apply_env(&mut config, env)?;
        config.validate().with_context(|| {
            if applied.is_empty() {
                in_file()
            } else {
                format!("{} with {}", in_file(), applied.join(", "))
            }
        })?;
        let base = path.parent().unwrap_or(Path::new("."));
        if config.data_dir.is_relative() {
            config.data_dir = base.join(&config.data_dir);
        }
        let sizes = &mut config.scheduling.static_sizes.file;
        if !sizes.is_empty() && Path::new(sizes.as_str()).is_relative() {
            *sizes = base.join(sizes.as_str()).to_string_lossy().into_owned();
        }
        config.auth.resolve_paths(base);
        config.client_encryption.resolve_paths(base);
        config.internode_encryption.resolve_paths(base);
        config.internode_auth.resolve_paths(base);
        Ok(config)
    }

    /// Parses and validates TOML text.
    pub fn parse(text: &str) -> Result<Config> {
        let config = Config::from_toml(text)?;
        config.validate()?;
        Ok(config)
    }

    /// Parses TOML text, not yet validated.
    pub(crate) fn from_toml(text: &str) -> Result<Config> {
        toml::from_str(text).map_err(|e| {
            // Name the section: toml shows the offending line but not the table it is in.
            let section = e
                .span()
                .and_then(|span| section_at(text, span.start))
                .map(|name| format!("[{name}] "))
                .unwrap_or_default();
            anyhow::anyhow!("{section}{e}")
        })
    }

    /// `[scheduling]`'s replica selection, with the deprecated `[cluster]
    /// replica_selection` applied when `[scheduling]` names none but the default.
    pub fn selection(&self) -> mosaic_cluster::selection::SchedulingConfig {
        let mut s = self.scheduling.clone();
        if let Some(old) = self.cluster.replica_selection {
            if s.replica_selection == ReplicaSelection::default() {
                s.replica_selection = old;
            }
        }
        s
    }

    /// What the configuration sets in a deprecated way, as warnings to log at start.
    pub fn deprecations(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.cluster.replica_selection.is_some() {
            out.push(format!(
                "[cluster] replica_selection is deprecated: set [scheduling] replica_selection \
                 (now using {})",
                self.selection().replica_selection
            ));
        }
        out
    }

    /// The TOML text of this configuration (every key written out).
    pub fn to_toml(&self) -> Result<String> {
        toml::to_string(self).context("serializing the configuration")
    }

    /// Checks values no node can run with.
    pub fn validate(&self) -> Result<()> {
        if self.cluster_name.is_empty() {
            bail!("cluster_name must not be empty");
        }
        if self.native_port == 0 {
            bail!("native_port must not be 0");
        }
        self.client_encryption.validate()?;
        self.internode_encryption.validate()?;
        if self.data_dir.as_os_str().is_empty() {
            bail!("data_dir must not be empty");
        }
        if !self.cold_tier.url.is_empty() {
            crate::cold::ColdTierUrl::parse(&self.cold_tier.url, &self.data_dir)?;
        }
        if self.num_tokens == 0 || self.num_tokens > 1536 {
            bail!("num_tokens must be between 1 and 1536");
        }
        let mut tokens = self.initial_token.clone();
        tokens.sort_unstable();
        tokens.dedup();
        if tokens.len() != self.initial_token.len() || tokens.contains(&i64::MIN) {
            bail!("initial_token must list distinct tokens above {}", i64::MIN);
        }
        if self.replace_address.is_some() && !self.initial_token.is_empty() {
            bail!("replace_address takes the dead node's tokens: initial_token must be empty");
        }
        self.replace_endpoint()?;
        self.scheduling.validate().map_err(anyhow::Error::msg)?;
        if self.listen_address.is_unspecified() && self.broadcast_address.is_none() {
            bail!(
                "listen_address {} is a wildcard: set broadcast_address to the address clients \
                 should use",
                self.listen_address
            );
        }
        if self.broadcast_address.is_some_and(|a| a.is_unspecified()) {
            bail!("broadcast_address must not be a wildcard");
        }
        if self.storage_port == 0 {
            bail!("storage_port must not be 0");
        }
        for seed in &self.seeds {
            crate::deploy::parse_seed(seed, self.storage_port)?;
        }
        let c = &self.cluster;
        if c.gossip_interval_ms == 0
            || c.write_request_timeout_ms == 0
            || c.cas_contention_timeout_ms == 0
            || c.read_request_timeout_ms == 0
            || c.repair_timeout_ms == 0
            || c.replica_requests_max == 0
            || c.peer_queue_max == 0
            || c.read_answer_rows_max == 0
            || c.peer_queue_bytes_max == 0
        {
            bail!("[cluster] intervals, timeouts and queue bounds must be at least 1");
        }
        if c.hinted_handoff_disabled_datacenters
            .iter()
            .any(String::is_empty)
        {
            bail!("[cluster] hinted_handoff_disabled_datacenters must not list an empty name");
        }
        if !(c.phi_convict_threshold > 0.0 && c.phi_convict_threshold.is_finite()) {
            bail!("[cluster] phi_convict_threshold must be a positive number");
        }
        let answer_max = mosaic_cluster::message::FRAME_PAYLOAD_MAX / 2;
        if !(1..=answer_max).contains(&c.read_answer_bytes_max) {
            bail!("[cluster] read_answer_bytes_max must be between 1 and {answer_max} (half the internode frame limit)");
        }
        self.limits.validate()?;
        self.storage.validate()?;
        self.auth.validate()?;
        self.log.filter(None)?;
        Ok(())
    }

    /// The address the CQL port binds.
    pub fn native_socket_addr(&self) -> SocketAddr {
        SocketAddr::new(self.listen_address, self.native_port)
    }

    /// The address the admin endpoint binds (`None`: `admin_port` is 0): see
    /// `admin_listen_address`.
    pub fn admin_address(&self) -> Option<SocketAddr> {
        if self.admin_port == 0 {
            return None;
        }
        let ip = self
            .admin_listen_address
            .unwrap_or(match self.listen_address {
                ip if ip.is_loopback() => ip,
                IpAddr::V4(_) => IpAddr::V4(Ipv4Addr::LOCALHOST),
                IpAddr::V6(_) => IpAddr::V6(std::net::Ipv6Addr::LOCALHOST),
            });
        Some(SocketAddr::new(ip, self.admin_port))
    }

    /// The address clients are told to use.
    pub fn rpc_address(&self) -> IpAddr {
        self.broadcast_address.unwrap_or(self.listen_address)
    }

    /// This node's internode address, as peers know it.
    pub fn storage_endpoint(&self) -> SocketAddr {
        SocketAddr::new(self.rpc_address(), self.storage_port)
    }

    /// The internode address of the node `replace_address` names, if any.
    pub fn replace_endpoint(&self) -> Result<Option<SocketAddr>> {
        let Some(address) = &self.replace_address else {
            return Ok(None);
        };
        if let Ok(a) = address.parse::<SocketAddr>() {
            return Ok(Some(a));
        }
        match address.parse::<IpAddr>() {
            Ok(ip) => Ok(Some(SocketAddr::new(ip, self.storage_port))),
            Err(_) => bail!(
                "replace_address {address:?} is neither an IP address nor IP:port (the dead \
                 node's internode address)"
            ),
        }
    }

    /// The seeds as addresses (this node when none are configured); names must have been
    /// resolved (`crate::deploy::resolve_seeds`).
    pub fn seed_endpoints(&self) -> Result<Vec<SocketAddr>> {
        if self.seeds.is_empty() {
            return Ok(vec![self.storage_endpoint()]);
        }
        self.seeds
            .iter()
            .map(|s| match crate::deploy::parse_seed(s, self.storage_port)? {
                crate::deploy::Seed::Address(a) => Ok(a),
                crate::deploy::Seed::Name(..) => bail!("seed {s:?} was not resolved"),
            })
            .collect()
    }
}

/// The `[section]` header in force at byte `offset` of `text`, if any.
fn section_at(text: &str, offset: usize) -> Option<&str> {
    let before = text.get(..offset)?;
    before.lines().rev().find_map(|line| {
        let line = line.trim();
        line.strip_prefix('[')?
            .strip_suffix(']')
            .map(|name| name.trim_matches(['[', ']']).trim())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_file_gives_the_defaults() {
        assert_eq!(Config::parse("").unwrap(), Config::default());
    }

    #[test]
    fn the_documented_example_matches_the_defaults() {
        let text = include_str!("../../../docs/mosaic.example.toml");
        let mut parsed = Config::parse(text).unwrap();
        // The example sets data_dir to show the key; everything else is the default.
        parsed.data_dir = Config::default().data_dir;
        assert_eq!(parsed, Config::default());
    }

    #[test]
    fn replace_address_names_the_dead_node_by_ip_or_ip_and_port() {
        let c = Config::parse("replace_address = \"10.0.0.3\"\nstorage_port = 7100\n").unwrap();
        assert_eq!(
            c.replace_endpoint().unwrap(),
            Some("10.0.0.3:7100".parse().unwrap())
        );
        let c = Config::parse("replace_address = \"10.0.0.3:7001\"\n").unwrap();
        assert_eq!(
            c.replace_endpoint().unwrap(),
            Some("10.0.0.3:7001".parse().unwrap())
        );
        assert_eq!(Config::default().replace_endpoint().unwrap(), None);
        let err = Config::parse("replace_address = \"node-3\"\n").unwrap_err();
        assert!(format!("{err:#}").contains("replace_address"), "{err:#}");
        // Its tokens are the dead node's: initial_token has no say.
        let err =
            Config::parse("replace_address = \"10.0.0.3\"\ninitial_token = [1]\n").unwrap_err();
        assert!(format!("{err:#}").contains("initial_token"), "{err:#}");
    }

    #[test]
    fn unknown_keys_are_named() {
        let err = Config::parse("native_prot = 9043\n").unwrap_err();
        assert!(format!("{err:#}").contains("native_prot"), "{err:#}");
        let err = Config::parse("[storage]\nmemtable_mib = 3\n").unwrap_err();
        assert!(format!("{err:#}").contains("memtable_mib"), "{err:#}");
        let err = Config::parse("[limit]\n").unwrap_err();
        assert!(format!("{err:#}").contains("limit"), "{err:#}");
    }

    #[test]
    fn values_are_read_and_checked() {
        let c = Config::parse(
            "native_port = 9100\nlisten_address = \"127.0.0.2\"\n[storage]\nwal_sync = \"per-write\"\n\
             [limits]\nconnection_requests_in_flight_max = 7\n",
        )
        .unwrap();
        assert_eq!(c.native_port, 9100);
        assert_eq!(c.listen_address, IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2)));
        assert_eq!(c.storage.wal_sync, WalSync::PerWrite);
        assert_eq!(c.limits.connection_requests_in_flight_max, 7);
        assert!(Config::parse("[storage]\nwal_sync = \"sometimes\"\n").is_err());
        assert!(Config::parse("num_tokens = 0\n").is_err());
        assert!(Config::parse("listen_address = \"0.0.0.0\"\n").is_err());
        assert!(Config::parse("[storage]\nmemtable_size_bytes = 10\n").is_err());
        assert!(Config::parse("[limits]\nframe_size_bytes_max = 100\n").is_err());
    }

    #[test]
    fn the_admin_endpoint_binds_loopback_unless_told_otherwise() {
        let admin = |toml: &str| Config::parse(toml).unwrap().admin_address();
        // A local cluster's node keeps its own loopback alias.
        assert_eq!(
            admin("listen_address = \"127.0.0.3\"\nadmin_port = 7001\n"),
            Some("127.0.0.3:7001".parse().unwrap())
        );
        // A node serving other hosts keeps its admin endpoint to its own host.
        assert_eq!(
            admin("listen_address = \"10.0.0.5\"\n"),
            Some("127.0.0.1:7199".parse().unwrap())
        );
        assert_eq!(
            admin("listen_address = \"fd00::5\"\n"),
            Some("[::1]:7199".parse().unwrap())
        );
        assert_eq!(
            admin("listen_address = \"10.0.0.5\"\nadmin_listen_address = \"10.0.0.5\"\n"),
            Some("10.0.0.5:7199".parse().unwrap())
        );
        assert_eq!(admin("admin_port = 0\n"), None);
    }

    #[test]
    fn storage_layout_keys_are_read_and_checked() {
        let c = Config::parse(
            "[storage]\nlayout = \"decoupled\"\nsorted_runs_max = 3\nsplit_segments = 2\n",
        )
        .unwrap();
        assert_eq!(c.storage.layout, Layout::Decoupled);
        assert_eq!(c.storage.sorted_runs_max, 3);
        assert_eq!(c.storage.split_segments, 2);
        assert!(Config::parse("[storage]\nlayout = \"multi-lsm\"\n").is_ok());
        // No global log: flushes write straight into the range groups.
        let c = Config::parse("[storage]\nsplit_segments = 0\n").unwrap();
        assert_eq!(c.storage.split_segments, 0);
        for bad in [
            "layout = \"Uniform\"",
            "layout = \"erasure_tiered\"",
            "sorted_runs_max = 0",
            // A split must fit below the engine's write stall (20 level-0 tables).
            "split_segments = 20",
        ] {
            let err = Config::parse(&format!("[storage]\n{bad}\n")).unwrap_err();
            assert!(format!("{err:#}").contains("[storage]"), "{bad}: {err:#}");
        }
    }

    #[test]
    fn bad_policy_names_fail_naming_the_valid_values() {
        let err = Config::parse("[storage]\nlayout = \"log\"\n").unwrap_err();
        let text = format!("{err:#}");
        assert!(text.contains("uniform, multi-lsm, decoupled"), "{text}");
        let err = Config::parse("[cluster]\nreplica_selection = \"fastest\"\n").unwrap_err();
        let text = format!("{err:#}");
        assert!(text.contains("[cluster]"), "{text}");
        assert!(text.contains("dynamic-snitch, primary-first"), "{text}");
        let c = Config::parse("[cluster]\nreplica_selection = \"primary-first\"\n").unwrap();
        assert_eq!(
            c.selection().replica_selection,
            ReplicaSelection::PrimaryFirst
        );
        assert!(c.deprecations()[0].contains("[scheduling] replica_selection"));
    }

    #[test]
    fn scheduling_names_the_policy_and_each_policys_parameters() {
        let c = Config::parse(
            "[scheduling]\nreplica_selection = \"popularity-aware\"\n\
             [scheduling.dynamic-snitch]\nbadness_threshold = 0.2\nreset_interval_ms = 0\n\
             [scheduling.popularity-aware]\nthreshold = 0.001\n",
        )
        .unwrap();
        let s = c.selection();
        assert_eq!(s.replica_selection, ReplicaSelection::PopularityAware);
        assert_eq!(s.dynamic_snitch.badness_threshold, 0.2);
        assert_eq!(s.dynamic_snitch.reset_interval_ms, 0);
        assert_eq!(s.dynamic_snitch.update_interval_ms, 100);
        assert_eq!(s.popularity_aware.threshold, 0.001);
        assert!(c.deprecations().is_empty());
        // [scheduling] wins over the deprecated key, which only fills in for the default.
        let both = Config::parse(
            "[cluster]\nreplica_selection = \"primary-first\"\n\
             [scheduling]\nreplica_selection = \"round-robin\"\n",
        )
        .unwrap();
        assert_eq!(
            both.selection().replica_selection,
            ReplicaSelection::RoundRobin
        );
        let err = Config::parse("[scheduling.popularity-aware]\nthreshold = 2.0\n").unwrap_err();
        assert!(format!("{err:#}").contains("threshold"), "{err:#}");
        let err = Config::parse("[scheduling]\nreplica_selection = \"c4\"\n").unwrap_err();
        assert!(format!("{err:#}").contains("round-robin"), "{err:#}");
        // Every key round-trips through the written-out file.
        assert_eq!(Config::parse(&c.to_toml().unwrap()).unwrap(), c);
    }

    #[test]
    fn scheduling_chooses_the_read_stage_and_the_oracle_tagging_reads() {
        use mosaic_cluster::local_queue::QueuePolicy;
        use mosaic_cluster::selection::SizeOracleId;
        let d = Config::default().scheduling;
        assert_eq!(
            (d.local_queue, d.read_concurrency, d.size_oracle),
            (QueuePolicy::Fcfs, 32, SizeOracleId::None)
        );
        let c = Config::parse(
            "[scheduling]
local_queue = \"random-multi-level\"
read_concurrency = 4
             size_oracle = \"item-size\"
priority_thresholds = [1024, 1048576]
             [scheduling.random-multi-level]
levels = 3
alpha = 2.0
             [scheduling.item-size]
slots = 128
",
        )
        .unwrap();
        let s = &c.scheduling;
        assert_eq!(s.local_queue, QueuePolicy::RandomMultiLevel);
        assert_eq!(s.read_concurrency, 4);
        assert_eq!(s.size_oracle, SizeOracleId::ItemSize);
        assert_eq!(s.priority_thresholds, [1024, 1 << 20]);
        assert_eq!(s.queue().rml.levels, 3);
        assert_eq!(s.item_size.slots, 128);
        assert!(!s.queue_without_tags());
        assert_eq!(Config::parse(&c.to_toml().unwrap()).unwrap(), c);
        // A queue ordering by tags nobody sets is allowed (and warned about at start).
        let untagged = Config::parse("[scheduling]\nlocal_queue = \"size-aware\"\n").unwrap();
        let reserving = Config::parse(
            "[scheduling]\nlocal_queue = \"random-multi-level\"\nread_concurrency = 4\nreserved_slots = 1\n",
        )
        .unwrap();
        assert_eq!(reserving.scheduling.queue().reserved_slots, 1);
        assert!(untagged.scheduling.queue_without_tags());
        for (bad, names) in [
            ("[scheduling]\nlocal_queue = \"lifo\"\n", "fcfs"),
            ("[scheduling.random-multi-level]\nlevels = 0\n", "levels"),
            ("[scheduling.random-multi-level]\nalpha = 0.5\n", "alpha"),
            (
                "[scheduling]\nsize_oracle = \"static\"\n",
                "[scheduling.static] file",
            ),
            (
                "[scheduling]\nread_concurrency = 100000\n",
                "read_concurrency",
            ),
            ("[scheduling]\nreserved_slots = 1\n", "reserved_slots needs"),
            (
                "[scheduling]\nlocal_queue = \"priority\"\nread_concurrency = 4\nreserved_slots = 4\n",
                "less than read_concurrency",
            ),
        ] {
            let err = Config::parse(bad).unwrap_err();
            assert!(format!("{err:#}").contains(names), "{bad}: {err:#}");
        }
    }

    #[test]
    fn large_blocks_skip_the_block_cache_by_default() {
        let d = Config::parse("[storage]\nblock_cache_size_bytes = 33554432\n").unwrap();
        let o = d.storage.node_engine_options().unwrap();
        assert_eq!(o.block_cache_max_block_bytes, 512 << 10);
        let every = Config::parse(
            "[storage]\nblock_cache_size_bytes = 33554432\nblock_cache_max_block_bytes = 33554432\n",
        )
        .unwrap();
        let o = every.storage.node_engine_options().unwrap();
        assert_eq!(o.block_cache_max_block_bytes, 32 << 20);
    }

    #[test]
    fn hinted_handoff_turns_off_whole_or_per_datacenter() {
        let d = Config::default().cluster;
        assert!(d.hinted_handoff_enabled && d.hinted_handoff_disabled_datacenters.is_empty());
        assert_eq!(d.hint_window_ms(), 3 * 3600 * 1000);
        let c =
            Config::parse("[cluster]\nhinted_handoff_disabled_datacenters = [\"dc2\", \"dc3\"]\n")
                .unwrap();
        assert_eq!(
            c.cluster.hinted_handoff_disabled_datacenters,
            ["dc2", "dc3"]
        );
        assert_eq!(c.cluster.hint_window_ms(), d.max_hint_window_ms);
        let off = Config::parse("[cluster]\nhinted_handoff_enabled = false\n").unwrap();
        assert_eq!(off.cluster.hint_window_ms(), 0);
        assert!(!off.cluster.skip_paxos_repair_on_topology_change);
        let skip =
            Config::parse("[cluster]\nskip_paxos_repair_on_topology_change = true\n").unwrap();
        assert!(skip.cluster.skip_paxos_repair_on_topology_change);
        let err =
            Config::parse("[cluster]\nhinted_handoff_disabled_datacenters = [\"\"]\n").unwrap_err();
        assert!(
            format!("{err:#}").contains("hinted_handoff_disabled_datacenters"),
            "{err:#}"
        );
        // A list, not one name.
        assert!(
            Config::parse("[cluster]\nhinted_handoff_disabled_datacenters = \"dc2\"\n").is_err()
        );
    }

    #[test]
    fn location_changes_are_allowed_only_when_asked() {
        let d = Config::default();
        assert!(!d.ignore_data_center_change && !d.ignore_rack_change);
        let c =
            Config::parse("ignore_data_center_change = true\nignore_rack_change = true\n").unwrap();
        assert!(c.ignore_data_center_change && c.ignore_rack_change);
        // Top-level keys, beside data_center and rack: not in [cluster].
        assert!(Config::parse("[cluster]\nignore_rack_change = true\n").is_err());
    }

    #[test]
    fn log_keys_are_read_and_a_bad_filter_is_named() {
        let c = Config::parse("[log]\nlevel = \"warn,mosaic_cluster=debug\"\nslow_query_ms = 0\n")
            .unwrap();
        assert_eq!(c.log.level, "warn,mosaic_cluster=debug");
        assert_eq!(c.log.slow_query(), None);
        assert_eq!(
            Config::default().log.slow_query(),
            Some(std::time::Duration::from_millis(500))
        );
        let err = Config::parse("[log]\nlevel = \"mosaic=loud\"\n").unwrap_err();
        let text = format!("{err:#}");
        assert!(
            text.contains("[log] level \"mosaic=loud\" is not a valid log filter"),
            "{text}"
        );
        assert!(Config::parse("[log]\nlevl = \"info\"\n").is_err());
        // RUST_LOG replaces the configured level, and is checked the same way.
        assert!(c.log.filter(Some("debug")).is_ok());
        let err = c.log.filter(Some("x=nope")).unwrap_err();
        assert!(format!("{err:#}").contains("RUST_LOG"), "{err:#}");
    }

    #[test]
    fn a_written_config_reads_back() {
        let c = Config {
            native_port: 9999,
            broadcast_address: Some(IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1))),
            ..Config::default()
        };
        assert_eq!(Config::parse(&c.to_toml().unwrap()).unwrap(), c);
    }

    #[test]
    fn relative_data_dirs_follow_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.toml");
        std::fs::write(&path, "data_dir = \"d\"\n").unwrap();
        assert_eq!(Config::load(&path).unwrap().data_dir, dir.path().join("d"));
    }
}
