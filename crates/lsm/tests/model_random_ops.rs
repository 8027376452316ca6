#![allow(clippy::unwrap_used, clippy::indexing_slicing)]
#![allow(clippy::disallowed_methods)] // Tests run real threads and measure real time; the seam binds the code under test.
//! Scenario: random operation sequences checked against a `BTreeMap` model.
//!
//! Each case opens a fresh database with a tiny memtable and small tables and levels, so
//! flushes and compactions really run, then applies a random sequence of writes (single and
//! batched, with out-of-order and tied timestamps over a small key space), reads, scans,
//! snapshot reads, flushes, compactions and reopens. Every read is compared with a model that
//! implements the engine's rules (last-write-wins; a merge operator; tombstone purging).
//!
//! A third of the cases run the database as one partition of a node engine shared with 1–3
//! neighbour partitions that take the same writes, interleaved in the one shared WAL: each
//! neighbour must match the model too, after every reopen (a replay of the shared WAL).
//!
//! Variants:
//! - `lww_*`: last-write-wins, ties go to the tombstone, then to the larger value.
//! - `merge_*`: a set-union merge operator with Put/Delete "floors", associative and
//!   commutative as the engine requires, so any grouping compaction picks gives one answer.
//! - `gc_*`: a `ManualClock` and a tiny `gc_grace`, so tombstones are purged at the bottom;
//!   a purged tombstone must never let an older value reappear.
//!
//! Replay: the seed is printed on failure; `MOSAIC_SEED=<seed>` replays it, and
//! `MOSAIC_MODEL_CASES_SCALE=<float>` scales the case counts (e.g. 10 for a long soak),
//! `MOSAIC_MODEL_NO_SNAPSHOTS=1` turns snapshot-taking off (to isolate a failure).

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::ops::Bound;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use mosaic_lsm::{
    Clock, Compression, Db, DynamicLevels, Engine, EngineOptions, LevelPolicy, ManualClock,
    MergeOperator, Options, Resolved, StaticLevels, SyncMode, TableOptions, ValueKind, Version,
    WriteBatch,
};
use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed, TestCaseError, TestError, TestRunner};

// ---------------------------------------------------------------------------------------
// Operations
// ---------------------------------------------------------------------------------------

/// One write inside an [`Op::Write`], before the variant turns it into bytes.
#[derive(Clone, Debug)]
struct WriteSpec {
    key: usize,
    /// 0 = put, 1 = delete, 2 = merge (merge variant only).
    kind: u8,
    ts: u64,
    /// Length and seed of the value (LWW/GC) or element bits (merge).
    len: u8,
    seed: u8,
}

#[derive(Clone, Debug)]
enum Op {
    /// Writes issued one by one (`as_batch == false`) or as one atomic `WriteBatch`.
    Write {
        writes: Vec<WriteSpec>,
        as_batch: bool,
    },
    Get(usize),
    Scan(BoundSpec, BoundSpec),
    Flush,
    Compact,
    WaitForCompactions,
    /// `close`, then open again.
    Reopen,
    /// Drop every handle without `close`, then open again.
    DropReopen,
    TakeSnapshot,
    SnapshotGet(usize, usize),
    SnapshotScan(usize, BoundSpec, BoundSpec),
    /// Opens a scan and keeps it: it must show the data as of now whenever it is read.
    OpenScan(BoundSpec, BoundSpec),
    /// Reads up to `n` more items of an open scan (dropping it once exhausted).
    StepScan(usize, usize),
    ReleaseSnapshot(usize),
    /// Moves the manual clock (GC variant only).
    AdvanceClock(u64),
}

/// A scan bound: a key of the key space, optionally followed by a 0x00 byte (so bounds also
/// fall between keys).
#[derive(Clone, Debug)]
enum BoundSpec {
    Unbounded,
    Included(usize, bool),
    Excluded(usize, bool),
}

/// Engine configuration drawn per case.
#[derive(Clone, Debug)]
struct Setup {
    memtable_size_bytes: usize,
    block_size_bytes: usize,
    lz4: bool,
    levels_max: usize,
    level0_compaction_trigger: usize,
    sync_mode: SyncMode,
    /// Classic leveled sizing instead of the default dynamic (bottom-up) sizing.
    static_levels: bool,
    /// A two-layer log instead of a leveled tree: (segments per split, runs per group).
    log: Option<(usize, usize)>,
    /// Bloom filters over key prefixes of this length (0: whole keys).
    filter_prefix_bytes: usize,
    /// Neighbour partitions sharing the database's node engine (0: a standalone database).
    neighbours: usize,
    /// Index and filter blocks in the (64 KiB) block cache, evicted and read back, instead
    /// of pinned.
    metadata_in_cache: bool,
    /// Index and filter partitioned every this many bytes of index (0: one of each).
    index_partition_bytes: usize,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Lww,
    Merge,
    Gc,
}

const GC_GRACE_MICROS: u64 = 1_000;
const CLOCK_START_MICROS: u64 = 1_000_000;

// ---------------------------------------------------------------------------------------
// Keys and values
// ---------------------------------------------------------------------------------------

/// The key space: `narrow` keys are short strings over {0x00, 'a', 0xFF} after a 'k', so
/// prefixes and extreme bytes are exercised; wide keys are zero-padded numbers.
#[derive(Clone, Copy, Debug)]
enum KeySpace {
    Narrow,
    Wide(usize),
}

impl KeySpace {
    fn len(self) -> usize {
        match self {
            KeySpace::Narrow => 13,
            KeySpace::Wide(n) => n,
        }
    }

    fn key(self, i: usize) -> Vec<u8> {
        match self {
            KeySpace::Narrow => {
                const ALPHABET: [u8; 3] = [0x00, b'a', 0xFF];
                // 0 → "k", 1..=3 → one symbol, 4..=12 → two symbols.
                let mut k = vec![b'k'];
                if (1..=3).contains(&i) {
                    k.push(ALPHABET[i - 1]);
                } else if i >= 4 {
                    let j = i - 4;
                    k.push(ALPHABET[j / 3]);
                    k.push(ALPHABET[j % 3]);
                }
                k
            }
            KeySpace::Wide(_) => format!("w{i:05}").into_bytes(),
        }
    }

    fn all_keys(self) -> Vec<Vec<u8>> {
        (0..self.len()).map(|i| self.key(i)).collect()
    }

    fn bound(self, b: &BoundSpec) -> Bound<Vec<u8>> {
        let k = |i: usize, tail: bool| {
            let mut k = self.key(i % self.len());
            if tail {
                k.push(0);
            }
            k
        };
        match b {
            BoundSpec::Unbounded => Bound::Unbounded,
            BoundSpec::Included(i, t) => Bound::Included(k(*i, *t)),
            BoundSpec::Excluded(i, t) => Bound::Excluded(k(*i, *t)),
        }
    }
}

/// A value of `len * 3` bytes whose content depends on `seed`, so ties between values of the
/// same timestamp are decided by content.
fn lww_value(len: u8, seed: u8) -> Vec<u8> {
    (0..usize::from(len) * 3)
        .map(|i| seed.wrapping_mul(31).wrapping_add(i as u8))
        .collect()
}

fn in_range(key: &[u8], start: &Bound<Vec<u8>>, end: &Bound<Vec<u8>>) -> bool {
    let after_start = match start {
        Bound::Unbounded => true,
        Bound::Included(s) => key >= s.as_slice(),
        Bound::Excluded(s) => key > s.as_slice(),
    };
    let before_end = match end {
        Bound::Unbounded => true,
        Bound::Included(e) => key <= e.as_slice(),
        Bound::Excluded(e) => key < e.as_slice(),
    };
    after_start && before_end
}

fn as_slice_bound(b: &Bound<Vec<u8>>) -> Bound<&[u8]> {
    b.as_ref().map(|v| v.as_slice())
}

// ---------------------------------------------------------------------------------------
// The set-union merge operator and its state
// ---------------------------------------------------------------------------------------

/// The state the merge variant stores under a key: a floor set by the newest Put or Delete
/// (elements older than it are gone), and elements tagged by the timestamp that added them.
/// Merging two states takes the higher floor and the union of elements above it, which is
/// associative, commutative and idempotent: compaction may group versions any way it likes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct SetState {
    /// (timestamp, is_delete); at equal timestamps a delete floor beats a put floor.
    floor: Option<(u64, bool)>,
    elems: BTreeSet<(u64, u8)>,
    /// Newest timestamp absorbed.
    ts_max: u64,
}

impl SetState {
    fn put(ts: u64, elems: impl IntoIterator<Item = u8>) -> Self {
        Self {
            floor: Some((ts, false)),
            elems: elems.into_iter().map(|e| (ts, e)).collect(),
            ts_max: ts,
        }
    }

    fn merge_operand(ts: u64, elem: u8) -> Self {
        Self {
            floor: None,
            elems: [(ts, elem)].into_iter().collect(),
            ts_max: ts,
        }
    }

    fn delete(ts: u64) -> Self {
        Self {
            floor: Some((ts, true)),
            elems: BTreeSet::new(),
            ts_max: ts,
        }
    }

    fn absorb(&mut self, other: &SetState) {
        self.floor = self.floor.max(other.floor);
        self.elems.extend(other.elems.iter().copied());
        self.ts_max = self.ts_max.max(other.ts_max);
        if let Some((f, is_delete)) = self.floor {
            self.elems
                .retain(|(ts, _)| if is_delete { *ts > f } else { *ts >= f });
        }
    }

    fn kind(&self) -> ValueKind {
        match self.floor {
            Some((_, true)) if self.elems.is_empty() => ValueKind::Delete,
            None => ValueKind::Merge,
            Some(_) => ValueKind::Put,
        }
    }

    /// `tag ‖ floor ts ‖ count ‖ (ts, elem)*`; canonical (elements sorted and unique).
    /// `ts_max` is carried by the version's timestamp, not the bytes.
    fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        let (tag, f) = match self.floor {
            None => (0u8, 0u64),
            Some((f, false)) => (1, f),
            Some((f, true)) => (2, f),
        };
        out.push(tag);
        out.extend_from_slice(&f.to_le_bytes());
        out.extend_from_slice(&(self.elems.len() as u32).to_le_bytes());
        for (ts, e) in &self.elems {
            out.extend_from_slice(&ts.to_le_bytes());
            out.push(*e);
        }
        out
    }

    fn decode(bytes: &[u8], ts_max: u64) -> Option<Self> {
        let tag = *bytes.first()?;
        let f = u64::from_le_bytes(bytes.get(1..9)?.try_into().ok()?);
        let n = u32::from_le_bytes(bytes.get(9..13)?.try_into().ok()?) as usize;
        let mut elems = BTreeSet::new();
        let mut pos = 13;
        for _ in 0..n {
            let ts = u64::from_le_bytes(bytes.get(pos..pos + 8)?.try_into().ok()?);
            let e = *bytes.get(pos + 8)?;
            elems.insert((ts, e));
            pos += 9;
        }
        if pos != bytes.len() {
            return None;
        }
        let floor = match tag {
            0 => None,
            1 => Some((f, false)),
            2 => Some((f, true)),
            _ => return None,
        };
        Some(Self {
            floor,
            elems,
            ts_max,
        })
    }
}

struct SetUnion;

impl MergeOperator for SetUnion {
    fn name(&self) -> &str {
        "test-set-union"
    }

    fn merge(&self, _user_key: &[u8], versions: &[Version<'_>]) -> Resolved {
        let mut state = SetState::default();
        for v in versions {
            let part = match v.kind {
                ValueKind::Delete => SetState::delete(v.ts),
                ValueKind::Put | ValueKind::Merge => match SetState::decode(v.value, v.ts) {
                    Some(s) => s,
                    // Cannot happen unless the engine hands us bytes we did not write; make it
                    // visible to the checker instead of panicking inside the engine.
                    None => {
                        return Resolved {
                            ts: v.ts,
                            kind: ValueKind::Put,
                            value: b"UNDECODABLE-OPERAND".to_vec(),
                        }
                    }
                },
            };
            state.absorb(&part);
        }
        let kind = state.kind();
        Resolved {
            ts: state.ts_max,
            kind,
            value: if kind == ValueKind::Delete {
                Vec::new()
            } else {
                state.encode()
            },
        }
    }
}

// ---------------------------------------------------------------------------------------
// Models
// ---------------------------------------------------------------------------------------

/// A write as the engine sees it.
#[derive(Clone, Debug)]
enum Write {
    Put(u64, Vec<u8>),
    Delete(u64),
    Merge(u64, Vec<u8>),
}

#[derive(Clone, Debug, Default)]
struct Model {
    mode: Option<Mode>,
    /// LWW winner per key: (ts, None = tombstone / Some(value)).
    lww: BTreeMap<Vec<u8>, (u64, Option<Vec<u8>>)>,
    sets: BTreeMap<Vec<u8>, SetState>,
}

/// Whether version `a` beats `b` under last-write-wins (ts, then tombstone, then value).
fn lww_beats(a: &(u64, Option<Vec<u8>>), b: &(u64, Option<Vec<u8>>)) -> bool {
    match a.0.cmp(&b.0) {
        std::cmp::Ordering::Greater => true,
        std::cmp::Ordering::Less => false,
        std::cmp::Ordering::Equal => match (&a.1, &b.1) {
            (None, Some(_)) => true,
            (Some(_), None) | (None, None) => false,
            (Some(x), Some(y)) => x > y,
        },
    }
}

impl Model {
    fn new(mode: Mode) -> Self {
        Self {
            mode: Some(mode),
            ..Self::default()
        }
    }

    fn apply(&mut self, key: &[u8], w: &Write) {
        match self.mode {
            Some(Mode::Merge) => {
                let part = match w {
                    Write::Delete(ts) => SetState::delete(*ts),
                    Write::Put(ts, v) | Write::Merge(ts, v) => {
                        SetState::decode(v, *ts).expect("test encodes valid states")
                    }
                };
                self.sets.entry(key.to_vec()).or_default().absorb(&part);
            }
            _ => {
                let new = match w {
                    Write::Put(ts, v) => (*ts, Some(v.clone())),
                    Write::Delete(ts) => (*ts, None),
                    Write::Merge(..) => unreachable!("no merges without a merge operator"),
                };
                match self.lww.get_mut(key) {
                    Some(cur) => {
                        if lww_beats(&new, cur) {
                            *cur = new;
                        }
                    }
                    None => {
                        self.lww.insert(key.to_vec(), new);
                    }
                }
            }
        }
    }

    fn get(&self, key: &[u8]) -> Option<(u64, Vec<u8>)> {
        match self.mode {
            Some(Mode::Merge) => {
                let s = self.sets.get(key)?;
                (s.kind() != ValueKind::Delete).then(|| (s.ts_max, s.encode()))
            }
            _ => match self.lww.get(key)? {
                (ts, Some(v)) => Some((*ts, v.clone())),
                (_, None) => None,
            },
        }
    }

    fn scan(
        &self,
        keys: &[Vec<u8>],
        start: &Bound<Vec<u8>>,
        end: &Bound<Vec<u8>>,
    ) -> Vec<(Vec<u8>, u64, Vec<u8>)> {
        let mut sorted: Vec<&Vec<u8>> = keys.iter().collect();
        sorted.sort();
        sorted
            .into_iter()
            .filter(|k| in_range(k, start, end))
            .filter_map(|k| self.get(k).map(|(ts, v)| (k.clone(), ts, v)))
            .collect()
    }
}

// ---------------------------------------------------------------------------------------
// Strategies
// ---------------------------------------------------------------------------------------

fn setup_strategy() -> impl Strategy<Value = Setup> {
    (
        prop_oneof![Just(4usize << 10), Just(8 << 10), Just(16 << 10)],
        prop_oneof![Just(256usize), Just(1024), Just(4096)],
        any::<bool>(),
        3usize..=5,
        2usize..=4,
        prop_oneof![
            3 => Just(SyncMode::Periodic { interval_ms: 60_000 }),
            1 => Just(SyncMode::Batch),
        ],
        any::<bool>(),
        prop_oneof![
            2 => Just(None),
            1 => (1usize..=3, 1usize..=4).prop_map(Some),
        ],
        prop_oneof![Just(0usize), Just(2), Just(4)],
        prop_oneof![2 => Just(0usize), 1 => 1usize..=3],
        any::<bool>(),
        prop_oneof![2 => Just(0usize), 1 => 32usize..=512],
    )
        .prop_map(
            |(
                memtable_size_bytes,
                block_size_bytes,
                lz4,
                levels_max,
                l0,
                sync_mode,
                st,
                log,
                fp,
                neighbours,
                metadata_in_cache,
                index_partition_bytes,
            )| {
                Setup {
                    neighbours,
                    metadata_in_cache,
                    index_partition_bytes,
                    filter_prefix_bytes: fp,
                    memtable_size_bytes,
                    block_size_bytes,
                    lz4,
                    levels_max,
                    level0_compaction_trigger: l0,
                    sync_mode,
                    static_levels: st,
                    log,
                }
            },
        )
}

/// Range groups for a two-layer log over `space`: contiguous key intervals, as the engine
/// requires (narrow keys by their second byte, wide keys in fifths of the space).
fn group_of(space: KeySpace) -> mosaic_lsm::GroupOf {
    match space {
        KeySpace::Narrow => Arc::new(|k: &[u8]| u32::from(k.get(1).copied().unwrap_or(0)) >> 4),
        KeySpace::Wide(n) => Arc::new(move |k: &[u8]| {
            let i: usize = k
                .get(1..)
                .and_then(|d| std::str::from_utf8(d).ok())
                .and_then(|d| d.parse().ok())
                .unwrap_or(0);
            (i * 5 / n.max(1)) as u32
        }),
    }
}

fn ts_strategy(mode: Mode) -> BoxedStrategy<u64> {
    match mode {
        // Small ranges make ties common; the extremes check the key encoding.
        Mode::Lww => prop_oneof![
            6 => 0u64..16,
            3 => 0u64..1_000_000,
            1 => prop_oneof![Just(0u64), Just(u64::MAX), Just(u64::MAX - 1)],
        ]
        .boxed(),
        // High bits only: the executor adds a unique low part.
        Mode::Merge => (0u64..64).boxed(),
        // Ignored: the executor uses a clock-derived increasing timestamp.
        Mode::Gc => Just(0u64).boxed(),
    }
}

fn write_strategy(mode: Mode, keys: usize) -> impl Strategy<Value = WriteSpec> {
    let kind = match mode {
        Mode::Merge => prop_oneof![3 => Just(0u8), 2 => Just(1u8), 5 => Just(2u8)].boxed(),
        _ => prop_oneof![3 => Just(0u8), 1 => Just(1u8)].boxed(),
    };
    (0..keys, kind, ts_strategy(mode), 0u8..=80, any::<u8>()).prop_map(
        |(key, kind, ts, len, seed)| WriteSpec {
            key,
            kind,
            ts,
            len,
            seed,
        },
    )
}

fn bound_strategy(keys: usize) -> impl Strategy<Value = BoundSpec> {
    prop_oneof![
        1 => Just(BoundSpec::Unbounded),
        2 => (0..keys, any::<bool>()).prop_map(|(k, t)| BoundSpec::Included(k, t)),
        2 => (0..keys, any::<bool>()).prop_map(|(k, t)| BoundSpec::Excluded(k, t)),
    ]
}

fn op_strategy(mode: Mode, keys: usize) -> impl Strategy<Value = Op> {
    let writes = prop_oneof![
        4 => write_strategy(mode, keys).prop_map(|w| vec![w]),
        1 => proptest::collection::vec(write_strategy(mode, keys), 2..8),
    ];
    // Harmless outside the GC variant, where tombstones never expire.
    let clock = if mode == Mode::Gc { 4 } else { 1 };
    prop_oneof![
        30 => (writes, any::<bool>()).prop_map(|(writes, as_batch)| Op::Write { writes, as_batch }),
        8 => (0..keys).prop_map(Op::Get),
        3 => (bound_strategy(keys), bound_strategy(keys)).prop_map(|(a, b)| Op::Scan(a, b)),
        2 => Just(Op::Flush),
        1 => Just(Op::Compact),
        1 => Just(Op::WaitForCompactions),
        1 => Just(Op::Reopen),
        1 => Just(Op::DropReopen),
        2 => Just(Op::TakeSnapshot),
        3 => (any::<usize>(), 0..keys).prop_map(|(s, k)| Op::SnapshotGet(s, k)),
        1 => (any::<usize>(), bound_strategy(keys), bound_strategy(keys))
            .prop_map(|(s, a, b)| Op::SnapshotScan(s, a, b)),
        1 => any::<usize>().prop_map(Op::ReleaseSnapshot),
        1 => (bound_strategy(keys), bound_strategy(keys)).prop_map(|(a, b)| Op::OpenScan(a, b)),
        2 => (any::<usize>(), 1usize..8).prop_map(|(s, n)| Op::StepScan(s, n)),
        clock => (0u64..3 * GC_GRACE_MICROS).prop_map(Op::AdvanceClock),
    ]
}

// ---------------------------------------------------------------------------------------
// The executor
// ---------------------------------------------------------------------------------------

fn options(mode: Mode, space: KeySpace, setup: &Setup, clock: &Arc<ManualClock>) -> Options {
    Options {
        log: setup
            .log
            .map(|(split_segments, runs_max)| mosaic_lsm::LogOptions {
                split_segments,
                runs_max,
                group_of: group_of(space),
            }),
        clock: clock.clone(),
        sync_mode: setup.sync_mode,
        memtable_size_bytes: setup.memtable_size_bytes,
        immutable_memtables_max: 2,
        table: TableOptions {
            block_size_bytes: setup.block_size_bytes,
            filter_prefix_bytes: setup.filter_prefix_bytes,
            index_partition_bytes: setup.index_partition_bytes,
            compression: if setup.lz4 {
                Compression::Lz4
            } else {
                Compression::None
            },
            ..TableOptions::default()
        },
        block_cache_bytes: 64 << 10,
        cache_index_and_filter_blocks: setup.metadata_in_cache,
        level0_compaction_trigger: setup.level0_compaction_trigger,
        level0_stall_tables: 12,
        level_size_ratio: 4,
        level1_size_bytes: 8 << 10,
        table_size_bytes: 4 << 10,
        levels_max: setup.levels_max,
        compaction_threads: 1,
        // Out-of-order writes would legitimately resurrect data under a purged tombstone,
        // which the LWW model does not describe: only the GC variant purges.
        gc_grace_micros: if mode == Mode::Gc {
            GC_GRACE_MICROS
        } else {
            u64::MAX
        },
        merge_operator: if mode == Mode::Merge {
            Some(Arc::new(SetUnion))
        } else {
            None
        },
        level_policy: if setup.static_levels {
            Arc::new(StaticLevels) as Arc<dyn LevelPolicy>
        } else {
            Arc::new(DynamicLevels)
        },
        ..Options::default()
    }
}

/// Opens the database in `dir` — standalone, or as partition `main` of a node engine with
/// `setup.neighbours` neighbour partitions `n0`, `n1`, … (same options) — and the rest.
fn open_all(
    dir: &Path,
    mode: Mode,
    space: KeySpace,
    setup: &Setup,
    clock: &Arc<ManualClock>,
    what: &str,
) -> Result<(Db, Option<Engine>, Vec<Db>), TestCaseError> {
    let opts = options(mode, space, setup, clock);
    if setup.neighbours == 0 {
        return Ok((engine(Db::open(dir, opts), what)?, None, Vec::new()));
    }
    let node = engine(
        Engine::open(
            dir,
            EngineOptions {
                sync_mode: setup.sync_mode,
                memtable_space_bytes: 0,
                block_cache_bytes: 64 << 10,
                cache_index_and_filter_blocks: setup.metadata_in_cache,
                flush_threads: 1,
                compaction_threads: 1,
                ..EngineOptions::default()
            },
        ),
        what,
    )?;
    let open = |name: &str| {
        let opts = Options {
            engine: Some(node.clone()),
            ..opts.clone()
        };
        engine(Db::open(dir.join(name), opts), what)
    };
    let db = open("main")?;
    let neighbours = (0..setup.neighbours)
        .map(|i| open(&format!("n{i}")))
        .collect::<Result<Vec<_>, _>>()?;
    Ok((db, Some(node), neighbours))
}

fn engine<T>(r: mosaic_lsm::Result<T>, what: &str) -> Result<T, TestCaseError> {
    r.map_err(|e| TestCaseError::fail(format!("{what}: engine error: {e}")))
}

/// An open scan, the (key, ts, value) items it must still yield, and its range.
type HeldScan = (mosaic_lsm::Scan, VecDeque<(Vec<u8>, u64, Vec<u8>)>, String);

struct Run {
    mode: Mode,
    space: KeySpace,
    keys: Vec<Vec<u8>>,
    setup: Setup,
    clock: Arc<ManualClock>,
    dir: tempfile::TempDir,
    db: Option<Db>,
    /// The node engine `db` and `neighbours` share, when the setup has neighbours.
    node: Option<Engine>,
    /// Partitions of `node` taking the same writes as `db`.
    neighbours: Vec<Db>,
    model: Model,
    /// Open snapshots and the model as of each.
    snapshots: Vec<(mosaic_lsm::Snapshot, Model)>,
    /// Open scans, the items each must still yield, and how it was opened.
    scans: Vec<HeldScan>,
    /// Low bits making merge-variant timestamps unique; the GC variant's last timestamp.
    ts_counter: u64,
    /// Most non-empty levels seen, to check that compactions really shaped a tree.
    levels_nonempty_max: usize,
}

/// Where scratch databases go: tmpfs when available (the model test checks logic, not
/// durability, and fsync on a real disk would dominate the run time).
fn scratch_dir() -> tempfile::TempDir {
    if let Ok(dir) = std::env::var("MOSAIC_TEST_TMPDIR") {
        return tempfile::tempdir_in(dir).unwrap();
    }
    let shm = Path::new("/dev/shm");
    if shm.is_dir() {
        if let Ok(d) = tempfile::tempdir_in(shm) {
            return d;
        }
    }
    tempfile::tempdir().unwrap()
}

impl Run {
    fn new(mode: Mode, space: KeySpace, setup: Setup) -> Result<Self, TestCaseError> {
        let clock = Arc::new(ManualClock::new(CLOCK_START_MICROS));
        let dir = scratch_dir();
        let (db, node, neighbours) = open_all(dir.path(), mode, space, &setup, &clock, "open")?;
        Ok(Self {
            mode,
            space,
            keys: space.all_keys(),
            setup,
            clock,
            dir,
            db: Some(db),
            node,
            neighbours,
            model: Model::new(mode),
            snapshots: Vec::new(),
            scans: Vec::new(),
            ts_counter: 0,
            levels_nonempty_max: 0,
        })
    }

    fn db(&self) -> &Db {
        self.db.as_ref().expect("open")
    }

    fn concrete(&mut self, w: &WriteSpec) -> (Vec<u8>, Write) {
        let key = self.space.key(w.key);
        let write = match self.mode {
            Mode::Lww => match w.kind {
                0 => Write::Put(w.ts, lww_value(w.len, w.seed)),
                _ => Write::Delete(w.ts),
            },
            Mode::Gc => {
                // Increasing timestamps that follow the clock (and push it): an older write
                // arriving after its tombstone was purged would legitimately reappear, which
                // is not what this variant checks.
                self.ts_counter = (self.ts_counter + 1).max(self.clock.now_micros());
                let ts = self.ts_counter;
                self.clock.set_micros(ts);
                match w.kind {
                    0 => Write::Put(ts, lww_value(w.len, w.seed)),
                    _ => Write::Delete(ts),
                }
            }
            Mode::Merge => {
                // Half the writes get unique timestamps (high bits random, low bits a
                // counter), half small raw ones, so ties are common too: the operator is a
                // function of the set of versions, so ties need no ordering rule.
                self.ts_counter += 1;
                let ts = if w.len.is_multiple_of(2) {
                    (w.ts << 20) | self.ts_counter
                } else {
                    w.ts
                };
                match w.kind {
                    0 => {
                        let elems = (0..8u8).filter(|b| w.seed & (1 << b) != 0);
                        Write::Put(ts, SetState::put(ts, elems).encode())
                    }
                    1 => Write::Delete(ts),
                    _ => Write::Merge(ts, SetState::merge_operand(ts, w.seed % 16).encode()),
                }
            }
        };
        (key, write)
    }

    fn check_get(
        &self,
        db: &Db,
        key: &[u8],
        snap: Option<usize>,
        what: &str,
    ) -> Result<(), TestCaseError> {
        let (got, model) = match snap {
            None => (engine(db.get(key), what)?, &self.model),
            Some(i) => {
                let (s, m) = &self.snapshots[i];
                (engine(db.get_at(key, s), what)?, m)
            }
        };
        let got = got.map(|e| (e.ts, e.value));
        let want = model.get(key);
        prop_assert_eq!(got, want, "{} of key {:?} (snapshot {:?})", what, key, snap);
        Ok(())
    }

    fn check_scan(
        &self,
        db: &Db,
        a: &BoundSpec,
        b: &BoundSpec,
        snap: Option<usize>,
    ) -> Result<(), TestCaseError> {
        let start = self.space.bound(a);
        let end = self.space.bound(b);
        let scan = match snap {
            None => db.scan(as_slice_bound(&start), as_slice_bound(&end)),
            Some(i) => db.scan_at(
                &self.snapshots[i].0,
                as_slice_bound(&start),
                as_slice_bound(&end),
            ),
        };
        let model = snap.map_or(&self.model, |i| &self.snapshots[i].1);
        let want = model.scan(&self.keys, &start, &end);
        let inverted = match (&start, &end) {
            (Bound::Included(s) | Bound::Excluded(s), Bound::Included(e) | Bound::Excluded(e)) => {
                s > e
            }
            _ => false,
        };
        let scan = match scan {
            Ok(s) => s,
            // An inverted range may be refused as an invalid argument; nothing else may fail.
            Err(mosaic_lsm::Error::InvalidArgument(_)) if inverted => return Ok(()),
            Err(e) => return Err(TestCaseError::fail(format!("scan: engine error: {e}"))),
        };
        let mut got = Vec::new();
        for item in scan {
            let (k, e) = engine(item, "scan item")?;
            got.push((k, e.ts, e.value));
            prop_assert!(
                got.len() <= self.keys.len() + 1,
                "scan returned too many keys"
            );
        }
        prop_assert_eq!(
            got,
            want,
            "scan {:?}..{:?} (snapshot {:?})",
            start,
            end,
            snap
        );
        Ok(())
    }

    fn check_levels(&mut self) -> Result<(), TestCaseError> {
        let levels = self.db().levels();
        let nonempty = levels.iter().filter(|l| !l.tables.is_empty()).count();
        self.levels_nonempty_max = self.levels_nonempty_max.max(nonempty);
        for level in &levels {
            for t in &level.tables {
                prop_assert!(
                    t.smallest_key <= t.largest_key,
                    "L{} table {} has smallest {:?} > largest {:?}",
                    level.level,
                    t.id,
                    t.smallest_key,
                    t.largest_key
                );
                prop_assert!(t.size_bytes > 0, "L{} table {} is empty", level.level, t.id);
                prop_assert!(t.min_ts <= t.max_ts, "table {} min_ts > max_ts", t.id);
            }
            if let (Some((_, runs_max)), true) = (self.setup.log, level.level >= 1) {
                // A log's range group holds at most `runs_max` overlapping runs.
                prop_assert!(
                    level.tables.len() <= runs_max,
                    "group {} holds {} runs, more than {runs_max}",
                    level.level - 1,
                    level.tables.len()
                );
            } else if level.level >= 1 {
                // Below L0 tables of one level do not overlap (a user key's versions may end
                // one table and start the next, hence `<=`).
                let mut tables: Vec<_> = level.tables.iter().collect();
                tables.sort_by(|a, b| a.smallest_key.cmp(&b.smallest_key));
                for pair in tables.windows(2) {
                    prop_assert!(
                        pair[0].largest_key <= pair[1].smallest_key,
                        "L{} tables {} and {} overlap: {:?}..{:?} vs {:?}..{:?}",
                        level.level,
                        pair[0].id,
                        pair[1].id,
                        pair[0].smallest_key,
                        pair[0].largest_key,
                        pair[1].smallest_key,
                        pair[1].largest_key
                    );
                }
            }
        }
        Ok(())
    }

    fn check_everything(&mut self) -> Result<(), TestCaseError> {
        for n in &self.neighbours {
            for k in &self.keys {
                self.check_get(n, k, None, "neighbour get")?;
            }
            self.check_scan(n, &BoundSpec::Unbounded, &BoundSpec::Unbounded, None)?;
        }
        let db = self.db();
        for k in &self.keys {
            self.check_get(db, k, None, "final get")?;
        }
        self.check_scan(db, &BoundSpec::Unbounded, &BoundSpec::Unbounded, None)?;
        for i in 0..self.snapshots.len() {
            for k in &self.keys {
                self.check_get(db, k, Some(i), "final snapshot get")?;
            }
            self.check_scan(db, &BoundSpec::Unbounded, &BoundSpec::Unbounded, Some(i))?;
        }
        self.check_levels()
    }

    /// Reads up to `n` items of open scan `i`, comparing with what it had to show when it
    /// was opened; drops it once exhausted.
    fn step_scan(&mut self, i: usize, n: usize) -> Result<(), TestCaseError> {
        let (scan, want, what) = &mut self.scans[i];
        for _ in 0..n {
            match scan.next() {
                None => {
                    prop_assert!(
                        want.is_empty(),
                        "held scan {} ended early; still expected {:?}",
                        what,
                        want
                    );
                    self.scans.remove(i);
                    return Ok(());
                }
                Some(item) => {
                    let (k, e) = engine(item, "held scan item")?;
                    let expected = want.pop_front();
                    prop_assert_eq!(
                        Some((k, e.ts, e.value)),
                        expected,
                        "held scan {} (consistent as of its creation)",
                        what
                    );
                }
            }
        }
        Ok(())
    }

    fn drain_scans(&mut self) -> Result<(), TestCaseError> {
        while !self.scans.is_empty() {
            self.step_scan(0, usize::MAX)?;
        }
        Ok(())
    }

    fn reopen(&mut self, close: bool) -> Result<(), TestCaseError> {
        // Scans and snapshots do not survive a reopen (and would keep the engine alive).
        self.drain_scans()?;
        self.snapshots.clear();
        self.close_all(close)?;
        let (db, node, neighbours) = open_all(
            self.dir.path(),
            self.mode,
            self.space,
            &self.setup,
            &self.clock,
            if close {
                "open after close"
            } else {
                "open after drop without close"
            },
        )?;
        self.db = Some(db);
        self.node = node;
        self.neighbours = neighbours;
        Ok(())
    }

    /// Closes (or just drops) the database, its neighbours and their node engine.
    fn close_all(&mut self, close: bool) -> Result<(), TestCaseError> {
        let dbs = self.db.take().into_iter().chain(self.neighbours.drain(..));
        for db in dbs {
            if close {
                engine(db.close(), "close")?;
            }
        }
        if let Some(node) = self.node.take() {
            if close {
                engine(node.close(), "close the node engine")?;
            }
        }
        Ok(())
    }

    /// Applies `concrete` to `db`, as one batch or write by write.
    fn write_to(
        db: &Db,
        concrete: &[(Vec<u8>, Write)],
        as_batch: bool,
    ) -> Result<(), TestCaseError> {
        if as_batch {
            let mut batch = WriteBatch::new();
            for (k, w) in concrete {
                match w {
                    Write::Put(ts, v) => batch.put(k, *ts, v),
                    Write::Delete(ts) => batch.delete(k, *ts),
                    Write::Merge(ts, v) => batch.merge(k, *ts, v),
                }
            }
            prop_assert_eq!(batch.len(), concrete.len());
            engine(db.write(batch), "write batch")?;
        } else {
            for (k, w) in concrete {
                match w {
                    Write::Put(ts, v) => engine(db.put(k, *ts, v), "put")?,
                    Write::Delete(ts) => engine(db.delete(k, *ts), "delete")?,
                    Write::Merge(ts, v) => engine(db.merge(k, *ts, v), "merge")?,
                }
            }
        }
        Ok(())
    }

    fn step(&mut self, op: &Op) -> Result<(), TestCaseError> {
        match op {
            Op::Write { writes, as_batch } => {
                let concrete: Vec<_> = writes.iter().map(|w| self.concrete(w)).collect();
                Self::write_to(self.db(), &concrete, *as_batch)?;
                for n in &self.neighbours {
                    Self::write_to(n, &concrete, *as_batch)?;
                }
                for (k, w) in &concrete {
                    self.model.apply(k, w);
                }
            }
            Op::Get(k) => {
                let key = self.space.key(*k);
                self.check_get(self.db(), &key, None, "get")?;
            }
            Op::Scan(a, b) => self.check_scan(self.db(), a, b, None)?,
            Op::Flush => {
                engine(self.db().flush(), "flush")?;
                self.check_levels()?;
            }
            Op::Compact => {
                engine(self.db().compact(), "compact")?;
                self.check_levels()?;
                // A full compaction leaves nothing above the bottom non-empty level.
                let levels = self.db().levels();
                let nonempty: Vec<usize> = levels
                    .iter()
                    .filter(|l| !l.tables.is_empty())
                    .map(|l| l.level)
                    .collect();
                if self.setup.log.is_some() {
                    // A log's full compaction splits every segment and leaves one run per
                    // range group.
                    for l in &levels {
                        let bound = if l.level == 0 { 0 } else { 1 };
                        prop_assert!(
                            l.tables.len() <= bound,
                            "after compact() level {} holds {} tables",
                            l.level,
                            l.tables.len()
                        );
                    }
                } else {
                    prop_assert!(
                        nonempty.len() <= 1,
                        "after compact() tables remain in levels {:?}",
                        nonempty
                    );
                }
            }
            Op::WaitForCompactions => {
                engine(self.db().wait_for_compactions(), "wait_for_compactions")?;
                self.check_levels()?;
            }
            Op::Reopen => self.reopen(true)?,
            Op::DropReopen => self.reopen(false)?,
            // `MOSAIC_MODEL_NO_SNAPSHOTS=1` isolates snapshot-free failures when debugging.
            Op::TakeSnapshot if std::env::var_os("MOSAIC_MODEL_NO_SNAPSHOTS").is_some() => {}
            Op::TakeSnapshot => {
                // A bound on open snapshots keeps the engine's retained versions small.
                if self.snapshots.len() >= 4 {
                    self.snapshots.remove(0);
                }
                let snap = self.db().snapshot();
                self.snapshots.push((snap, self.model.clone()));
            }
            Op::SnapshotGet(s, k) => {
                if !self.snapshots.is_empty() {
                    let i = s % self.snapshots.len();
                    let key = self.space.key(*k);
                    self.check_get(self.db(), &key, Some(i), "snapshot get")?;
                }
            }
            Op::SnapshotScan(s, a, b) => {
                if !self.snapshots.is_empty() {
                    let i = s % self.snapshots.len();
                    self.check_scan(self.db(), a, b, Some(i))?;
                }
            }
            Op::ReleaseSnapshot(s) => {
                if !self.snapshots.is_empty() {
                    let i = s % self.snapshots.len();
                    self.snapshots.remove(i);
                }
            }
            Op::AdvanceClock(d) => self.clock.advance_micros(*d),
            Op::OpenScan(a, b) => {
                let start = self.space.bound(a);
                let end = self.space.bound(b);
                let inverted = matches!(
                    (&start, &end),
                    (Bound::Included(s) | Bound::Excluded(s), Bound::Included(e) | Bound::Excluded(e)) if s > e
                );
                if !inverted {
                    if self.scans.len() >= 3 {
                        self.step_scan(0, usize::MAX)?;
                    }
                    let scan = engine(
                        self.db().scan(as_slice_bound(&start), as_slice_bound(&end)),
                        "open scan",
                    )?;
                    let want = self.model.scan(&self.keys, &start, &end).into();
                    self.scans.push((scan, want, format!("{start:?}..{end:?}")));
                }
            }
            Op::StepScan(i, n) => {
                if !self.scans.is_empty() {
                    let i = i % self.scans.len();
                    self.step_scan(i, *n)?;
                }
            }
        }
        Ok(())
    }

    /// Final checks, close; returns the most non-empty levels seen.
    fn finish(mut self) -> Result<usize, TestCaseError> {
        self.drain_scans()?;
        self.check_everything()?;
        // Settle background work, then check once more: compaction must not change answers.
        engine(self.db().wait_for_compactions(), "wait_for_compactions")?;
        self.check_everything()?;
        self.reopen(true)?;
        self.check_everything()?;
        self.snapshots.clear();
        self.close_all(true)?;
        Ok(self.levels_nonempty_max)
    }
}

fn run_case(
    mode: Mode,
    space: KeySpace,
    setup: Setup,
    ops: &[Op],
    levels_nonempty_max: &AtomicUsize,
) -> Result<(), TestCaseError> {
    let mut run = Run::new(mode, space, setup)?;
    for (i, op) in ops.iter().enumerate() {
        run.step(op)
            .map_err(|e| TestCaseError::fail(format!("at op #{i} {op:?}: {e}")))?;
    }
    let levels = run.finish()?;
    levels_nonempty_max.fetch_max(levels, Ordering::Relaxed);
    Ok(())
}

fn seed() -> u64 {
    match std::env::var("MOSAIC_SEED") {
        Ok(s) => s.parse().expect("MOSAIC_SEED must be a u64"),
        Err(_) => rand::random(),
    }
}

fn scaled(cases: u32) -> u32 {
    let scale: f64 = std::env::var("MOSAIC_MODEL_CASES_SCALE")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1.0);
    ((f64::from(cases) * scale).round() as u32).max(1)
}

fn run_model(name: &str, mode: Mode, space: KeySpace, cases: u32, ops_max: usize) {
    let seed = seed();
    let config = Config {
        cases: scaled(cases),
        failure_persistence: None,
        rng_seed: RngSeed::Fixed(seed),
        // Shrinking replays whole databases: bound it so a failure reports in reasonable time.
        max_shrink_time: 120_000,
        ..Config::default()
    };
    let cases = config.cases;
    let mut runner = TestRunner::new(config);
    let levels_nonempty_max = AtomicUsize::new(0);
    let strategy = (
        setup_strategy(),
        proptest::collection::vec(op_strategy(mode, space.len()), 1..ops_max),
    );
    let result = runner.run(&strategy, |(setup, ops)| {
        run_case(mode, space, setup, &ops, &levels_nonempty_max)
    });
    match result {
        Ok(()) => {}
        Err(TestError::Fail(reason, (setup, ops))) => panic!(
            "{name}: model mismatch (replay with MOSAIC_SEED={seed}): {reason}\n\
             setup: {setup:?}\nminimal ops ({}): {ops:#?}",
            ops.len()
        ),
        Err(e) => panic!("{name}: {e} (MOSAIC_SEED={seed})"),
    }
    // Flushes after a full compaction leave L0 and the bottom level populated at least.
    let deepest = levels_nonempty_max.load(Ordering::Relaxed);
    if cases >= 50 {
        assert!(
            deepest >= 2,
            "{name}: no case ever had tables in two levels (MOSAIC_SEED={seed})"
        );
    }
}

#[test]
fn lww_narrow_key_space_matches_the_model() {
    run_model("lww_narrow", Mode::Lww, KeySpace::Narrow, 2_500, 150);
}

#[test]
fn lww_wide_key_space_matches_the_model() {
    // More live data than L1 holds, so tables reach L2 and beyond.
    run_model("lww_wide", Mode::Lww, KeySpace::Wide(300), 600, 500);
}

#[test]
fn merge_operator_matches_the_model() {
    run_model("merge", Mode::Merge, KeySpace::Wide(24), 1_500, 200);
}

#[test]
fn gc_purged_tombstones_never_resurrect_older_values() {
    run_model("gc", Mode::Gc, KeySpace::Wide(40), 1_500, 200);
}

/// Background compaction alone (no manual `compact`) must build a tree deeper than L0 and
/// L1 once there is more live data than L1 holds, with answers unchanged.
#[test]
fn background_compaction_builds_several_levels() {
    let setup = Setup {
        memtable_size_bytes: 4 << 10,
        block_size_bytes: 1024,
        lz4: true,
        levels_max: 4,
        level0_compaction_trigger: 2,
        sync_mode: SyncMode::Periodic {
            interval_ms: 60_000,
        },
        static_levels: false,
        log: None,
        neighbours: 0,
        metadata_in_cache: false,
        index_partition_bytes: 0,
        filter_prefix_bytes: 0,
    };
    let space = KeySpace::Wide(400);
    let mut run = Run::new(Mode::Lww, space, setup).unwrap();
    let mut deepest = 0;
    for round in 0..6u64 {
        for i in 0..space.len() {
            let op = Op::Write {
                writes: vec![WriteSpec {
                    key: i,
                    kind: 0,
                    ts: round * 10 + 1,
                    len: 60,
                    seed: (i as u8).wrapping_add(round as u8),
                }],
                as_batch: false,
            };
            run.step(&op).unwrap();
        }
        run.step(&Op::WaitForCompactions).unwrap();
        let levels = run.db().levels();
        let below_l1 = levels
            .iter()
            .filter(|l| l.level >= 2 && !l.tables.is_empty())
            .count();
        deepest = deepest.max(below_l1);
    }
    run.check_everything().unwrap();
    run.finish().unwrap();
    assert!(
        deepest >= 1,
        "~70 KiB of live data with an 8 KiB L1 never reached L2 or below"
    );
}

fn gc_setup() -> Setup {
    Setup {
        memtable_size_bytes: 4 << 10,
        block_size_bytes: 1024,
        lz4: false,
        levels_max: 4,
        level0_compaction_trigger: 2,
        sync_mode: SyncMode::Periodic {
            interval_ms: 60_000,
        },
        static_levels: false,
        log: None,
        neighbours: 0,
        metadata_in_cache: false,
        index_partition_bytes: 0,
        filter_prefix_bytes: 3,
    }
}

fn gc_write(key: usize, delete: bool) -> Op {
    Op::Write {
        writes: vec![WriteSpec {
            key,
            kind: u8::from(delete),
            ts: 0,
            len: 40,
            seed: key as u8,
        }],
        as_batch: false,
    }
}

fn table_entries(run: &Run) -> u64 {
    run.db()
        .levels()
        .iter()
        .flat_map(|l| l.tables.iter())
        .map(|t| t.entries)
        .sum()
}

/// Puts 100 keys, compacts them to the bottom, deletes them all and compacts again within
/// `gc_grace`: the tombstones must survive that compaction. Returns the run.
fn gc_deleted_within_grace() -> (Run, KeySpace) {
    let space = KeySpace::Wide(100);
    let mut run = Run::new(Mode::Gc, space, gc_setup()).unwrap();
    for i in 0..space.len() {
        run.step(&gc_write(i, false)).unwrap();
    }
    run.step(&Op::Compact).unwrap();
    for i in 0..space.len() {
        run.step(&gc_write(i, true)).unwrap();
    }
    run.step(&Op::Flush).unwrap();
    run.step(&Op::Compact).unwrap();
    run.check_everything().unwrap();
    let entries = table_entries(&run);
    assert!(
        entries >= space.len() as u64,
        "tombstones within gc_grace were purged: {entries} entries left"
    );
    (run, space)
}

/// Deterministic companion of the GC variant: once past their grace period, tombstones are
/// purged by a full compaction that has other input to merge, and nothing reappears.
#[test]
fn gc_expired_tombstones_are_purged_by_full_compaction() {
    let (mut run, _) = gc_deleted_within_grace();
    run.step(&Op::AdvanceClock(10 * GC_GRACE_MICROS)).unwrap();
    // A fresh write, so the full compaction has two tables to merge.
    run.step(&gc_write(0, false)).unwrap();
    run.step(&Op::Compact).unwrap();
    run.check_everything().unwrap();
    assert_eq!(
        table_entries(&run),
        1,
        "expired tombstones survived a full compaction"
    );
    run.finish().unwrap();
}

/// A full compaction must purge expired tombstones even when everything already sits in
/// one bottom-level table (e.g. a table that only holds tombstones after a mass delete):
/// `compact()` is the operator's tool for reclaiming that space.
#[test]
fn gc_full_compaction_purges_expired_tombstones_in_a_lone_bottom_table() {
    let (mut run, _) = gc_deleted_within_grace();
    let bottom_tables: usize = run.db().levels().iter().map(|l| l.tables.len()).sum();
    run.step(&Op::AdvanceClock(10 * GC_GRACE_MICROS)).unwrap();
    run.step(&Op::Compact).unwrap();
    run.check_everything().unwrap();
    assert_eq!(
        table_entries(&run),
        0,
        "compact() left expired tombstones in place ({bottom_tables} table(s) at the bottom)"
    );
    run.finish().unwrap();
}
