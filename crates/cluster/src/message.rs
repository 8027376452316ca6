//! The internode protocol: messages and their checksummed frames.
//!
//! Owns every byte nodes send each other. A frame is
//!
//! ```text
//! u32 BE  payload length (≤ FRAME_PAYLOAD_MAX)
//! u32 BE  crc32c of the payload
//! payload postcard encoding of an [`Envelope`]
//! ```
//!
//! A peer's bytes are untrusted: a bad length, checksum or payload is a typed
//! [`FrameError`] and closes only that connection (the caller's job); nothing here panics
//! on input. postcard is a compact, schema-less serde format: both ends run the same
//! build, and an incompatible peer fails the decode rather than being misread, because
//! the first field of every frame is the protocol version.

use std::net::IpAddr;

use serde::{Deserialize, Serialize};

use crate::Endpoint;

mod wire_bytes;

/// The protocol version every frame starts with; peers on another version are refused.
/// (2: Paxos and counter messages, cluster names in gossip; 3: ring status in gossip,
/// topology-change messages; 4: the node a joining node replaces, in gossip.)
pub const PROTOCOL_VERSION: u16 = 4;
/// Largest payload accepted (a page of reads or a batch of writes is far smaller; an ELECT
/// shard is the largest message, see [`EC_SHARD_BYTES_MAX`]).
pub const FRAME_PAYLOAD_MAX: usize = 64 << 20;

/// The largest table ELECT sends as one shard: an `EcFill` carries it whole, with room to
/// spare below [`FRAME_PAYLOAD_MAX`].
pub const EC_SHARD_BYTES_MAX: u64 = (FRAME_PAYLOAD_MAX as u64) / 4 * 3;
/// Bytes before the payload.
pub const FRAME_HEADER_LEN: usize = 8;

/// A table's id (the schema's 16-byte UUID).
pub type TableKey = mosaic_types::TableId;

/// One message between nodes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Envelope {
    /// [`PROTOCOL_VERSION`].
    pub version: u16,
    /// The sender's internode address (its identity in the ring).
    pub from: Endpoint,
    /// The request id: chosen by the sender of a request, echoed by its response.
    pub id: u64,
    /// What it says.
    pub body: Body,
}

/// An increment of one counter column of one row (see `mosaic_rows::counter`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WireCounter {
    /// The row's engine key (a clustering row or the static row).
    #[serde(with = "serde_bytes")]
    pub key: Vec<u8>,
    /// The counter column.
    pub column: u32,
    /// What to add.
    pub delta: i64,
}

/// A write of one engine key, as the coordinator received it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WireMutation {
    /// The engine key.
    #[serde(with = "serde_bytes")]
    pub key: Vec<u8>,
    /// The engine version timestamp.
    pub ts: u64,
    /// The encoded fragment (a merge operand).
    #[serde(with = "serde_bytes")]
    pub fragment: Vec<u8>,
}

/// A half-open range of engine keys (`end: None` is unbounded).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WireRange {
    /// First key.
    #[serde(with = "serde_bytes")]
    pub start: Vec<u8>,
    /// First key past the range.
    #[serde(with = "serde_bytes")]
    pub end: Option<Vec<u8>>,
}

/// A label a replica-selection policy attaches to a read; it travels with the request to
/// the replica, where local scheduling can act on it (e.g. a priority).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tag {
    /// What it says (`"priority"`, …).
    pub name: String,
    /// Its value, encoded as the policy chooses.
    #[serde(with = "serde_bytes")]
    pub value: Vec<u8>,
}

/// Why a replica could not do what it was asked.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Failure {
    /// Its queues are full.
    Overloaded,
    /// It does not know the table (schema not yet propagated, or dropped).
    UnknownTable,
    /// Its storage refused (disk full, failed fsync, corruption, shutting down).
    Storage(String),
    /// It could not apply the write in time (its storage stalled past the write timeout)
    /// and applied nothing. The coordinator counts it as a replica that did not answer:
    /// a timeout, and a hint, never a failure.
    TimedOut(String),
}

/// Whether a node is serving.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum NodeStatus {
    /// Serving normally.
    Normal,
    /// Announced a clean shutdown: down until it gossips a new generation.
    Shutdown,
    /// Replacing a dead node at that node's own address (`replace_address` naming itself,
    /// Cassandra's hibernate): it owns the dead node's tokens but streams their ranges
    /// first, so the others see it down — no reads, writes hinted — until it gossips
    /// `Normal`.
    Hibernate,
}

/// Where a node stands in the ring's token ownership (Cassandra's gossiped `STATUS`:
/// `BOOT`, `NORMAL`, `LEAVING`, `LEFT`). Independent of [`NodeStatus`]: a joining node
/// that shuts down is still joining when it comes back.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum RingStatus {
    /// Owns its tokens: a replica of their ranges.
    #[default]
    Normal,
    /// Bootstrapping: its tokens are announced and it receives the writes of the ranges it
    /// will own (a *pending* replica), but it serves no reads until it is normal.
    Joining,
    /// Decommissioning: still a replica of its ranges while it streams them to the nodes
    /// that will own them.
    Leaving,
    /// Left the ring (decommissioned, or removed by `removenode`): owns nothing.
    Left,
}

impl RingStatus {
    /// Whether a node in this state owns its tokens in the ring reads and writes use now.
    pub fn owns_now(self) -> bool {
        matches!(self, RingStatus::Normal | RingStatus::Leaving)
    }

    /// Whether a node in this state owns its tokens once every pending move completes.
    pub fn owns_after_moves(self) -> bool {
        matches!(self, RingStatus::Normal | RingStatus::Joining)
    }
}

/// What a node says of itself through gossip.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AppState {
    /// Its host id.
    pub host_id: mosaic_types::HostId,
    /// Its tokens.
    pub tokens: Vec<i64>,
    /// The address clients use.
    pub rpc_address: IpAddr,
    /// The CQL port.
    pub native_port: u16,
    /// The admin HTTP port (metrics, status), 0 if none.
    pub admin_port: u16,
    /// Datacenter.
    pub data_center: String,
    /// Rack.
    pub rack: String,
    /// The release it runs.
    pub release_version: String,
    /// The version of the schema it has.
    pub schema_version: [u8; 16],
    /// Serving or shut down.
    pub status: NodeStatus,
    /// Joining, normal, leaving or left (token ownership).
    #[serde(default)]
    pub ring_status: RingStatus,
    /// The dead node whose tokens this node took (`replace_address`): while this node
    /// joins, it is the pending replica of that node's ranges; once it is normal, it owns
    /// them in that node's place.
    #[serde(default)]
    pub replacing: Option<Endpoint>,
    /// Bytes of data it stores (for `mosaic status`).
    pub load_bytes: u64,
}

/// A node's gossiped state. Only the node itself changes it, bumping `heartbeat` each
/// time, so `(generation, heartbeat)` orders all versions of it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct EndpointState {
    /// The node.
    pub endpoint: Endpoint,
    /// Its start time (seconds); a restart gossips a larger one.
    pub generation: u64,
    /// Bumped every gossip round and on every change.
    pub heartbeat: u64,
    /// What it says of itself.
    pub app: AppState,
}

impl EndpointState {
    /// The version of this state: newer states compare greater.
    pub fn version(&self) -> (u64, u64) {
        (self.generation, self.heartbeat)
    }
}

/// The schema as the cluster moves it: opaque bytes with an ordering.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SchemaSnapshot {
    /// Bumped by every schema change; the larger `(epoch, version)` wins.
    pub epoch: u64,
    /// The content digest (what drivers compare for schema agreement).
    pub version: [u8; 16],
    /// The encoded schema.
    #[serde(with = "serde_bytes")]
    pub bytes: Vec<u8>,
}

impl SchemaSnapshot {
    /// Whether `self` should replace `other`.
    pub fn supersedes(&self, other: &SchemaSnapshot) -> bool {
        (self.epoch, self.version) > (other.epoch, other.version)
    }
}

/// A Merkle tree of a token range (see [`crate::repair`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WireTree {
    /// Leaf hashes, left to right.
    pub leaves: Vec<[u8; 16]>,
}

/// Every message.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Body {
    /// Apply these writes to a table (a hint replay or read repair is the same).
    Write {
        /// The table.
        table: TableKey,
        /// The writes.
        mutations: Vec<WireMutation>,
    },
    /// The write was applied.
    WriteAck,
    /// Read up to `limit` entries of a range; only a digest of them when `digest`.
    Read {
        /// The table.
        table: TableKey,
        /// The keys.
        range: WireRange,
        /// The most entries.
        limit: u32,
        /// Whether to answer with a digest instead of the data.
        digest: bool,
        /// The replica-selection policy's tags.
        tags: Vec<Tag>,
    },
    /// The entries read.
    ReadData {
        /// `(key, merged fragment)` in key order.
        #[serde(with = "wire_bytes::pairs")]
        entries: Vec<(Vec<u8>, Vec<u8>)>,
        /// Whether the range holds nothing more.
        exhausted: bool,
    },
    /// Read up to `limit` entries of a range in the order the replica stores them, after
    /// the stored key `after` (repair: [`crate::env::Store::read_stored`]).
    ReadStored {
        /// The table.
        table: TableKey,
        /// The keys.
        range: WireRange,
        /// The stored key the previous page ended with.
        #[serde(with = "serde_bytes")]
        after: Option<Vec<u8>>,
        /// The most entries.
        limit: u32,
    },
    /// The entries read in stored order.
    StoredData {
        /// `(key, merged fragment)`, keys canonical, in the replica's stored order.
        #[serde(with = "wire_bytes::pairs")]
        entries: Vec<(Vec<u8>, Vec<u8>)>,
        /// The stored key to resume after; `None` when the range holds nothing more.
        #[serde(with = "serde_bytes")]
        next: Option<Vec<u8>>,
    },
    /// The digest of the entries read.
    ReadDigest {
        /// xxh3-128 of the entries and the exhausted flag.
        digest: [u8; 16],
    },
    /// Paxos, phase 1: promise `ballot` for a partition (see [`crate::paxos`]).
    PaxosPrepare {
        /// The table.
        table: TableKey,
        /// The partition's key prefix.
        #[serde(with = "serde_bytes")]
        partition: Vec<u8>,
        /// The ballot.
        ballot: crate::paxos::Ballot,
    },
    /// The answer to a prepare.
    PaxosPromise(crate::paxos::Promise),
    /// Paxos, phase 2: accept a proposal for a partition.
    PaxosPropose {
        /// The table.
        table: TableKey,
        /// The partition's key prefix.
        #[serde(with = "serde_bytes")]
        partition: Vec<u8>,
        /// The proposal.
        proposal: crate::paxos::Proposal,
    },
    /// The answer to a proposal.
    PaxosAccepted {
        /// Whether it was accepted.
        accepted: bool,
    },
    /// Paxos, commit: apply a chosen proposal's update and record it as committed
    /// (answered by `WriteAck`).
    PaxosCommit {
        /// The table.
        table: TableKey,
        /// The partition's key prefix.
        #[serde(with = "serde_bytes")]
        partition: Vec<u8>,
        /// The proposal.
        proposal: crate::paxos::Proposal,
    },
    /// Lead counter increments of a table (this node is one of their replicas): compute
    /// this node's new shards, apply them and replicate them at `consistency`; answered
    /// by `WriteAck` once the level is met.
    CounterWrite {
        /// The table.
        table: TableKey,
        /// The increments.
        increments: Vec<WireCounter>,
        /// The statement's level (its protocol code).
        consistency: u16,
    },
    /// A request failed on the replica.
    Failed(Failure),
    /// Gossip, first leg: the sender's view of every node.
    GossipSyn {
        /// The sender's cluster name: gossip from another cluster is refused.
        cluster: String,
        /// The states.
        states: Vec<EndpointState>,
    },
    /// Gossip, second leg: the states the receiver knows newer than the sender.
    GossipAck {
        /// The sender's cluster name.
        cluster: String,
        /// The states.
        states: Vec<EndpointState>,
    },
    /// Asks for the receiver's schema.
    SchemaPull,
    /// A schema, pushed after a change or in answer to a pull.
    SchemaPush(SchemaSnapshot),
    /// The schema push was handled.
    SchemaAck,
    /// Remove every row of a table.
    Truncate {
        /// The table.
        table: TableKey,
    },
    /// The table was truncated.
    TruncateAck,
    /// Build a Merkle tree of `range` of a table with `2^depth` leaves.
    TreeRequest {
        /// The table.
        table: TableKey,
        /// Token range `(left, right]`.
        left: i64,
        /// Right end (inclusive).
        right: i64,
        /// log2 of the leaf count.
        depth: u8,
    },
    /// The tree.
    Tree(WireTree),
    /// ELECT: a data node asks the leader parity node of its group to code one of its
    /// primary tree's tables (`content`, the table's file) into data slot `slot`.
    EcFill {
        /// The table.
        table: TableKey,
        /// The slot, `0..k`: the sender's position in the leader's group.
        slot: u8,
        /// The shard.
        #[serde(with = "serde_bytes")]
        content: Vec<u8>,
    },
    /// ELECT: a data node asks the leader to empty slot `slot` of `group`, whose table
    /// (`content`) compaction replaced.
    EcClear {
        /// The table.
        table: TableKey,
        /// The group.
        group: [u8; 16],
        /// The slot.
        slot: u8,
        /// The replaced table's content (the data node's ghost).
        #[serde(with = "serde_bytes")]
        content: Vec<u8>,
    },
    /// The group's committed ECMeta (binary form) naming the shard.
    EcFilled {
        /// `mosaic_erasure::EcMeta::encode`.
        #[serde(with = "serde_bytes")]
        meta: Vec<u8>,
    },
    /// ELECT: a leader's parity delta for one parity shard, from epoch `from` to `to`.
    EcParity {
        /// The table.
        table: TableKey,
        /// The group.
        group: [u8; 16],
        /// The parity position, `k..n`.
        position: u8,
        /// The epoch the delta applies to.
        from: u64,
        /// The epoch it produces.
        to: u64,
        /// XORed into the shard.
        #[serde(with = "serde_bytes")]
        delta: Vec<u8>,
    },
    /// The parity shard is at the new epoch; its SHA-256.
    EcParityAck {
        /// The shard's hash.
        hash: [u8; 32],
    },
    /// ELECT's secondary removal: data node `source` (its host id) coded its primary
    /// tree's table `id`; `keys` are the table's keys the receiver holds redundant copies
    /// of, each with the newest timestamp the table holds for it.
    EcCover {
        /// The table.
        table: TableKey,
        /// The data node's host id.
        source: [u8; 16],
        /// The data node's table id.
        id: u64,
        /// The ECMeta (binary form) of the group the table is a data shard of.
        #[serde(with = "serde_bytes")]
        meta: Vec<u8>,
        /// The table's slot in it.
        slot: u8,
        /// `(key, timestamp)`, ascending.
        #[serde(with = "wire_bytes::keyed")]
        keys: Vec<(Vec<u8>, u64)>,
    },
    /// The key list is durable on the receiver.
    EcCoverAck,
    /// ELECT's degraded read: the receiver's newest ECMeta of a group.
    EcMetaRead {
        /// The table.
        table: TableKey,
        /// The group.
        group: [u8; 16],
    },
    /// The ECMeta asked for (binary form), if the receiver holds one.
    EcMetaData {
        /// `mosaic_erasure::EcMeta::encode`.
        #[serde(with = "serde_bytes")]
        meta: Option<Vec<u8>>,
    },
    /// ELECT's degraded read: the receiver's shard at `position` of a group (its table in
    /// that data slot, or its parity shard).
    EcShardRead {
        /// The table.
        table: TableKey,
        /// The group.
        group: [u8; 16],
        /// The position, `0..n`.
        position: u8,
        /// The group epoch the reader decodes: a parity node that still holds its shard
        /// at that epoch (the leader has not committed the next yet) answers with it.
        epoch: u64,
    },
    /// The shard asked for, if the receiver holds it: a parity shard's epoch (0 for a data
    /// shard) and its bytes.
    EcShard {
        /// `(epoch, bytes)`.
        #[serde(with = "wire_bytes::shard")]
        shard: Option<(u64, Vec<u8>)>,
    },
    /// ELECT's full-node recovery: the ECMetas the receiver holds of groups naming `host`.
    EcGroupsOf {
        /// The table.
        table: TableKey,
        /// The recovering node's host id.
        host: [u8; 16],
    },
    /// The ECMetas asked for (binary form).
    EcGroups {
        /// `mosaic_erasure::EcMeta::encode` each.
        #[serde(with = "wire_bytes::list")]
        metas: Vec<Vec<u8>>,
    },
    /// ELECT: a leader's newly committed ECMeta for every member of the group, so the
    /// group's newest epoch outlives the loss of its leader.
    EcMetaPush {
        /// The table.
        table: TableKey,
        /// `mosaic_erasure::EcMeta::encode`.
        #[serde(with = "serde_bytes")]
        meta: Vec<u8>,
    },
    /// The pushed ECMeta is recorded (or an as new one was).
    EcMetaAck,
    /// ELECT's degraded read: bytes `offset..offset + len` of the receiver's shard at
    /// `position` of a group (the span of stripes a read of the lost table needs).
    EcStripeRead {
        /// The table.
        table: TableKey,
        /// The group.
        group: [u8; 16],
        /// The position, `0..n`.
        position: u8,
        /// The group epoch the reader decodes (as in `EcShardRead`).
        epoch: u64,
        /// The first byte.
        offset: u64,
        /// How many bytes (the shard may end sooner).
        len: u32,
    },
    /// The bytes asked for, if the receiver holds the shard: its epoch (0 for a data
    /// shard), its whole length, and the bytes.
    EcStripe {
        /// `(epoch, length, bytes)`.
        #[serde(with = "wire_bytes::stripe")]
        shard: Option<(u64, u64, Vec<u8>)>,
    },
    /// An answer with the facts its request's `facts` tag asked for (Hector's state
    /// propagation, `selection::facts`).
    WithFacts {
        /// The replica's measurements.
        facts: crate::selection::facts::Facts,
        /// The answer.
        body: Box<Body>,
    },
    /// Repair: summaries of the Paxos state of a range's partitions, up to `limit`, after
    /// partition `after` ([`crate::env::Store::paxos_summaries`]).
    PaxosSummaryRequest {
        /// The table.
        table: TableKey,
        /// The keys.
        range: WireRange,
        /// The partition the previous page ended with.
        #[serde(with = "serde_bytes")]
        after: Option<Vec<u8>>,
        /// The most summaries.
        limit: u32,
    },
    /// The summaries, in key order, and the partition to resume after (`None`: no more).
    PaxosSummaries {
        /// The summaries.
        entries: Vec<crate::paxos::PaxosSummary>,
        /// Where the next page starts after.
        #[serde(with = "serde_bytes")]
        next: Option<Vec<u8>>,
    },
    /// A node joining or leaving asks whether the receiver's ring sees it in `status`
    /// with `tokens` (before streaming, so every coordinator sends writes to the ranges'
    /// new replicas).
    RingCheck {
        /// The moving node.
        node: Endpoint,
        /// Its announced ring status.
        status: RingStatus,
        /// Its tokens.
        tokens: Vec<i64>,
    },
    /// Whether the receiver's ring sees the node as asked.
    RingChecked {
        /// Whether it does.
        seen: bool,
    },
    /// Pull the token ranges `(left, right]` of a table from `source` and store them
    /// (a decommissioning node hands its ranges to their new replicas this way).
    StreamRequest {
        /// The table.
        table: TableKey,
        /// The token ranges.
        ranges: Vec<(i64, i64)>,
        /// The node to pull them from.
        source: Endpoint,
    },
    /// The ranges were pulled and stored.
    Streamed {
        /// Entries stored.
        entries: u64,
        /// Their bytes.
        bytes: u64,
    },
    /// Copy the data of the ranges whose role on the receiver changes with the move under
    /// way into the structures of its new role (a layout that stores each role apart:
    /// multi-lsm, decoupled, heterogeneous, erasure-tiered), for these tables.
    Rehome {
        /// The tables.
        tables: Vec<TableKey>,
    },
    /// The receiver copied its ranges to their new roles.
    Rehomed {
        /// Entries copied.
        entries: u64,
    },
    /// ELECT: which of `groups` (coding groups that lost a member) a key list the
    /// receiver holds names. (Appended: variants keep their numbers in stored frames.)
    EcNamed {
        /// The table.
        table: TableKey,
        /// The groups asked about.
        groups: Vec<[u8; 16]>,
    },
    /// The groups of an `EcNamed` a key list held names.
    EcNamedBy {
        /// Those groups.
        groups: Vec<[u8; 16]>,
    },
}

impl Body {
    /// Whether this answers a request (and so completes one by its id).
    pub fn is_response(&self) -> bool {
        matches!(
            self,
            Body::WriteAck
                | Body::PaxosPromise(_)
                | Body::PaxosAccepted { .. }
                | Body::TruncateAck
                | Body::ReadData { .. }
                | Body::StoredData { .. }
                | Body::ReadDigest { .. }
                | Body::Failed(_)
                | Body::SchemaAck
                | Body::Tree(_)
                | Body::EcFilled { .. }
                | Body::EcParityAck { .. }
                | Body::EcCoverAck
                | Body::EcNamedBy { .. }
                | Body::EcMetaData { .. }
                | Body::EcShard { .. }
                | Body::EcStripe { .. }
                | Body::WithFacts { .. }
                | Body::EcGroups { .. }
                | Body::EcMetaAck
                | Body::PaxosSummaries { .. }
                | Body::RingChecked { .. }
                | Body::Streamed { .. }
                | Body::Rehomed { .. }
        )
    }
}

/// Why a frame could not be decoded.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum FrameError {
    /// The length field exceeds [`FRAME_PAYLOAD_MAX`].
    #[error("internode frame of {len} bytes exceeds the {max}-byte limit")]
    TooLarge {
        /// Claimed length.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// The payload's checksum does not match.
    #[error("internode frame checksum mismatch: expected {expected:#010x}, got {actual:#010x}")]
    ChecksumMismatch {
        /// From the header.
        expected: u32,
        /// Computed.
        actual: u32,
    },
    /// The payload is not a message of this protocol.
    #[error("undecodable internode message: {0}")]
    Decode(String),
    /// The peer speaks another protocol version.
    #[error("peer speaks internode protocol {0}, this node {PROTOCOL_VERSION}")]
    Version(u16),
}

/// Encodes `env` as one frame.
pub fn encode_frame(env: &Envelope) -> Vec<u8> {
    // Serializing plain data into a Vec cannot fail; were it to, the empty payload would
    // be refused by the peer's decoder, never misread.
    let payload = postcard::to_stdvec(env).unwrap_or_default();
    let len = u32::try_from(payload.len()).unwrap_or(u32::MAX);
    let mut out = Vec::with_capacity(FRAME_HEADER_LEN + payload.len());
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(&crc32c::crc32c(&payload).to_be_bytes());
    out.extend_from_slice(&payload);
    out
}

/// Parses a frame header: the payload length, checked against the limit.
pub fn frame_len(header: &[u8; FRAME_HEADER_LEN]) -> Result<(usize, u32), FrameError> {
    let [a, b, c, d, e, f, g, h] = *header;
    let len = u32::from_be_bytes([a, b, c, d]) as usize;
    let crc = u32::from_be_bytes([e, f, g, h]);
    if len > FRAME_PAYLOAD_MAX {
        return Err(FrameError::TooLarge {
            len,
            max: FRAME_PAYLOAD_MAX,
        });
    }
    Ok((len, crc))
}

/// The oldest protocol version whose frames this build still reads from disk: a `Write`
/// (what hints store) is encoded alike since then, so hints stored before an upgrade are
/// still delivered.
pub const STORED_VERSION_MIN: u16 = 1;

/// Decodes a payload whose header gave checksum `crc`.
pub fn decode_payload(payload: &[u8], crc: u32) -> Result<Envelope, FrameError> {
    decode_payload_of(payload, crc, PROTOCOL_VERSION..=PROTOCOL_VERSION)
}

/// Decodes a frame this build or an earlier one stored (a hint): like [`decode_frame`],
/// accepting the versions since [`STORED_VERSION_MIN`].
pub fn decode_stored_frame(bytes: &[u8]) -> Result<Option<(Envelope, usize)>, FrameError> {
    decode_frame_of(bytes, STORED_VERSION_MIN..=PROTOCOL_VERSION)
}

fn decode_payload_of(
    payload: &[u8],
    crc: u32,
    versions: std::ops::RangeInclusive<u16>,
) -> Result<Envelope, FrameError> {
    let actual = crc32c::crc32c(payload);
    if actual != crc {
        return Err(FrameError::ChecksumMismatch {
            expected: crc,
            actual,
        });
    }
    let env: Envelope =
        postcard::from_bytes(payload).map_err(|e| FrameError::Decode(e.to_string()))?;
    if !versions.contains(&env.version) {
        return Err(FrameError::Version(env.version));
    }
    Ok(env)
}

/// Decodes the first frame of `bytes`: the envelope and the bytes it used, `Ok(None)` if
/// `bytes` holds only part of a frame.
pub fn decode_frame(bytes: &[u8]) -> Result<Option<(Envelope, usize)>, FrameError> {
    decode_frame_of(bytes, PROTOCOL_VERSION..=PROTOCOL_VERSION)
}

fn decode_frame_of(
    bytes: &[u8],
    versions: std::ops::RangeInclusive<u16>,
) -> Result<Option<(Envelope, usize)>, FrameError> {
    let Some(header) = bytes.get(..FRAME_HEADER_LEN) else {
        return Ok(None);
    };
    let mut h = [0u8; FRAME_HEADER_LEN];
    h.copy_from_slice(header);
    let (len, crc) = frame_len(&h)?;
    let Some(payload) = bytes.get(FRAME_HEADER_LEN..FRAME_HEADER_LEN + len) else {
        return Ok(None);
    };
    Ok(Some((
        decode_payload_of(payload, crc, versions)?,
        FRAME_HEADER_LEN + len,
    )))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::net::{Ipv4Addr, SocketAddr};

    fn ep() -> Endpoint {
        SocketAddr::new(IpAddr::V4(Ipv4Addr::new(127, 0, 0, 3)), 7000)
    }

    fn write(keys: Vec<Vec<u8>>) -> Envelope {
        Envelope {
            version: PROTOCOL_VERSION,
            from: ep(),
            id: 42,
            body: Body::Write {
                table: mosaic_types::TableId([7; 16]),
                mutations: keys
                    .into_iter()
                    .map(|k| WireMutation {
                        fragment: k.clone(),
                        key: k,
                        ts: 9,
                    })
                    .collect(),
            },
        }
    }

    #[test]
    fn frames_round_trip_and_split_anywhere() {
        let env = write(vec![b"a".to_vec(), b"bcd".to_vec()]);
        let frame = encode_frame(&env);
        let (back, used) = decode_frame(&frame).expect("valid").expect("whole");
        assert_eq!(back, env);
        assert_eq!(used, frame.len());
        for cut in 0..frame.len() {
            assert_eq!(decode_frame(&frame[..cut]), Ok(None), "cut at {cut}");
        }
    }

    #[test]
    fn hints_stored_by_version_1_still_decode_but_peers_must_match() {
        // Version 1's Write: the same bytes but the version field (Write is the first
        // body and its layout has not changed since).
        let mut env = write(vec![b"k".to_vec()]);
        env.version = 1;
        let frame = encode_frame(&env);
        assert_eq!(decode_frame(&frame), Err(FrameError::Version(1)));
        let (back, _) = decode_stored_frame(&frame).expect("valid").expect("whole");
        assert_eq!(back, env);
        env.version = PROTOCOL_VERSION + 1;
        assert!(decode_stored_frame(&encode_frame(&env)).is_err());
        // The byte layout of a version-1 Write, written out: version 1, the sender, id 42,
        // body 0 (Write), the table's 16 bytes, one mutation.
        let bytes = postcard::to_allocvec(&write(vec![b"k".to_vec()])).unwrap();
        assert_eq!(bytes[0], PROTOCOL_VERSION as u8);
    }

    #[test]
    fn a_table_id_is_its_sixteen_bytes_on_the_wire() {
        // Hints on disk and peers of the previous version carry a bare `[u8; 16]`.
        let id = mosaic_types::TableId([7; 16]);
        assert_eq!(
            postcard::to_allocvec(&id).unwrap(),
            postcard::to_allocvec(&[7u8; 16]).unwrap()
        );
        let back: mosaic_types::TableId = postcard::from_bytes(&[7u8; 16]).unwrap();
        assert_eq!(back, id);
    }

    #[test]
    fn reads_carry_their_tags() {
        let env = Envelope {
            version: PROTOCOL_VERSION,
            from: ep(),
            id: 7,
            body: Body::Read {
                table: mosaic_types::TableId([1; 16]),
                range: WireRange {
                    start: b"a".to_vec(),
                    end: None,
                },
                limit: 10,
                digest: false,
                tags: vec![Tag {
                    name: "priority".into(),
                    value: vec![3],
                }],
            },
        };
        let back = decode_frame(&encode_frame(&env))
            .ok()
            .flatten()
            .map(|(e, _)| e);
        assert_eq!(back, Some(env));
    }

    #[test]
    fn damaged_frames_are_typed_errors() {
        let frame = encode_frame(&write(vec![b"key".to_vec()]));
        let mut flipped = frame.clone();
        let last = flipped.len() - 1;
        flipped[last] ^= 1;
        assert!(matches!(
            decode_frame(&flipped),
            Err(FrameError::ChecksumMismatch { .. })
        ));
        let mut huge = frame.clone();
        huge[0] = 0xff;
        assert!(matches!(
            decode_frame(&huge),
            Err(FrameError::TooLarge { .. })
        ));
        // A valid checksum over garbage is a decode error, not a panic.
        let garbage = [0xffu8; 5];
        let mut f = (garbage.len() as u32).to_be_bytes().to_vec();
        f.extend_from_slice(&crc32c::crc32c(&garbage).to_be_bytes());
        f.extend_from_slice(&garbage);
        assert!(matches!(decode_frame(&f), Err(FrameError::Decode(_))));
    }

    proptest! {
        #[test]
        fn any_bytes_decode_without_panic(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
            let _ = decode_frame(&bytes);
        }

        #[test]
        fn writes_round_trip(keys in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..40), 0..20)) {
            let env = write(keys);
            let frame = encode_frame(&env);
            prop_assert_eq!(decode_frame(&frame).ok().flatten().map(|(e, _)| e), Some(env));
        }
    }
}
