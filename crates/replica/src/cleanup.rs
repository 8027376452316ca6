//! Cleanup (as `nodetool cleanup`): dropping the entries a node no longer owns.
//!
//! After a node joins, the old owners of its ranges keep them; after any topology change a
//! layout that stores roles apart also keeps old-role copies in the structures of the old
//! role (a move re-homes a range whose role changed by copying it). An [`Ownership`] says,
//! per token, which structures of a store should hold it now:
//!
//! | structure | keeps the tokens where this node is |
//! |---|---|
//! | uniform's tree ([`Structure::Shared`]) | any replica |
//! | the primary tree ([`Structure::Primary`]) | the first replica |
//! | multi-lsm's / erasure-tiered's `src-<S>` ([`Structure::Source`]) | a later replica whose primary is S |
//! | decoupled's log ([`Structure::Log`]) | a later replica |
//! | heterogeneous `replica-<i>` ([`Structure::Replica`]) | replica index i |
//!
//! Every engine of a store is opened with a `CleanupGate`'s compaction filter for its
//! structure (composed with the filter it had: a version goes if either drops it). The
//! gate is idle except during [`crate::ReplicaStore::cleanup`], which sets the ownership,
//! compacts every structure fully (every table, the last level included; a two-layer log
//! splits every segment and merge-sorts every group) and clears it: the versions of every
//! key whose token the structure does not own — rows, tombstones, counters — are not
//! written out. A key without a token (none is stored) is kept.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use mosaic_lsm::{CompactionFilter, Options};
use mosaic_rows::key::TOKEN_LEN;
use mosaic_rows::KeyRange;
use mosaic_types::Token;
use parking_lot::{Mutex, RwLock};

use crate::role::{Role, SourceId};
use crate::store::Structure;

/// Sorted, disjoint, inclusive token intervals; membership by binary search.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TokenRanges(Vec<(i64, i64)>);

impl TokenRanges {
    /// Whether `token` lies in one of the intervals.
    pub fn contains(&self, token: Token) -> bool {
        let t = token.0;
        let after = self.0.partition_point(|(lo, _)| *lo <= t);
        after
            .checked_sub(1)
            .and_then(|i| self.0.get(i))
            .is_some_and(|(_, hi)| *hi >= t)
    }

    /// The intervals, ascending.
    pub fn intervals(&self) -> &[(i64, i64)] {
        &self.0
    }

    /// Sorts the intervals and merges those that overlap or touch.
    fn normalize(&mut self) {
        self.0.sort_unstable();
        let mut out: Vec<(i64, i64)> = Vec::with_capacity(self.0.len());
        for (lo, hi) in self.0.drain(..) {
            match out.last_mut() {
                Some(last) if lo <= last.1.saturating_add(1) => last.1 = last.1.max(hi),
                _ => out.push((lo, hi)),
            }
        }
        self.0 = out;
    }
}

/// The token at the front of `key`, the key padded with zeros to a whole token.
fn floor_token(key: &[u8]) -> Token {
    let mut bytes = [0u8; TOKEN_LEN];
    for (b, k) in bytes.iter_mut().zip(key) {
        *b = *k;
    }
    mosaic_rows::decode_token(&bytes).unwrap_or(Token::MIN)
}

/// The tokens some key of `range` has, as an inclusive interval (`None`: none). A bound
/// inside a token (longer than a token) counts that token whole: ownership errs on
/// keeping.
fn token_interval(range: &KeyRange) -> Option<(i64, i64)> {
    let lo = floor_token(&range.start).0;
    let hi = match &range.end {
        None => i64::MAX,
        // Every key of the end's token is at or past an end of a token's length or less.
        Some(end) if end.len() <= TOKEN_LEN => floor_token(end).0.checked_sub(1)?,
        Some(end) => floor_token(end).0,
    };
    (lo <= hi).then_some((lo, hi))
}

/// Which tokens each structure of a node's stores keeps (see the module doc).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Ownership {
    any: TokenRanges,
    primary: TokenRanges,
    redundant: TokenRanges,
    sources: BTreeMap<SourceId, TokenRanges>,
    indexes: BTreeMap<usize, TokenRanges>,
}

impl Ownership {
    /// The ownership of a node that holds each range of `owned` in its role (ranges it is
    /// not a replica of are left out), e.g. a ring's segments with this node's place in
    /// their replica lists.
    pub fn new(owned: impl IntoIterator<Item = (KeyRange, Role)>) -> Ownership {
        let mut o = Ownership::default();
        for (range, role) in owned {
            let Some(interval) = token_interval(&range) else {
                continue;
            };
            o.any.0.push(interval);
            o.indexes.entry(role.index()).or_default().0.push(interval);
            match role {
                Role::Primary => o.primary.0.push(interval),
                Role::Redundant { source, .. } => {
                    o.redundant.0.push(interval);
                    o.sources.entry(source).or_default().0.push(interval);
                }
            }
        }
        let all = [&mut o.any, &mut o.primary, &mut o.redundant];
        all.into_iter()
            .chain(o.sources.values_mut())
            .chain(o.indexes.values_mut())
            .for_each(TokenRanges::normalize);
        o
    }

    /// The tokens `structure` keeps (`None`: none).
    pub fn ranges(&self, structure: Structure) -> Option<&TokenRanges> {
        match structure {
            Structure::Shared => Some(&self.any),
            Structure::Primary => Some(&self.primary),
            Structure::Log => Some(&self.redundant),
            Structure::Source(s) => self.sources.get(&s),
            Structure::Replica(i) => self.indexes.get(&i),
        }
    }

    /// Whether `structure` keeps the keys of `token`.
    pub fn keeps(&self, structure: Structure, token: Token) -> bool {
        self.ranges(structure).is_some_and(|r| r.contains(token))
    }

    /// Whether `structure` keeps stored `key` (a key without a token is kept).
    pub fn keeps_key(&self, structure: Structure, key: &[u8]) -> bool {
        match mosaic_rows::decode_token(key) {
            Ok(token) => self.keeps(structure, token),
            Err(_) => true,
        }
    }
}

/// A store's switch for cleanup: idle, or the ownership a cleanup drops by.
#[derive(Default)]
pub(crate) struct CleanupGate {
    /// Whether `ownership` is set: the filters' fast path while no cleanup runs.
    active: AtomicBool,
    ownership: RwLock<Option<Arc<Ownership>>>,
    /// Versions dropped as not owned since the store opened.
    dropped: AtomicU64,
    /// Held by the cleanup running (one at a time).
    running: Mutex<()>,
}

impl CleanupGate {
    /// `engine` for an engine of `structure`: its compaction filter also drops what a
    /// cleanup finds this structure does not own.
    pub(crate) fn options(self: &Arc<Self>, engine: &Options, structure: Structure) -> Options {
        let filter = StructureFilter {
            gate: self.clone(),
            structure,
            inner: engine.compaction_filter.clone(),
        };
        Options {
            compaction_filter: Some(Arc::new(filter)),
            ..engine.clone()
        }
    }

    /// Runs `f` with `ownership` in force (one cleanup at a time: a second waits).
    pub(crate) fn with_ownership<T>(&self, ownership: Ownership, f: impl FnOnce() -> T) -> T {
        let _running = self.running.lock();
        *self.ownership.write() = Some(Arc::new(ownership));
        self.active.store(true, Ordering::Release);
        let out = f();
        self.active.store(false, Ordering::Release);
        *self.ownership.write() = None;
        out
    }

    /// Versions dropped as not owned since the store opened.
    pub(crate) fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    fn drops(&self, structure: Structure, key: &[u8]) -> bool {
        if !self.active.load(Ordering::Acquire) {
            return false;
        }
        let drop = self
            .ownership
            .read()
            .as_ref()
            .is_some_and(|o| !o.keeps_key(structure, key));
        if drop {
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
        drop
    }
}

/// An engine's compaction filter: the gate's verdict for its structure, or the filter the
/// engine had.
struct StructureFilter {
    gate: Arc<CleanupGate>,
    structure: Structure,
    inner: Option<Arc<dyn CompactionFilter>>,
}

impl CompactionFilter for StructureFilter {
    fn drops(&self, key: &[u8], ts: u64) -> bool {
        self.gate.drops(self.structure, key)
            || self.inner.as_ref().is_some_and(|f| f.drops(key, ts))
    }

    fn at_flush(&self) -> bool {
        self.inner.as_ref().is_none_or(|f| f.at_flush())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(t: i64) -> Vec<u8> {
        mosaic_rows::encode_token(Token(t)).to_vec()
    }

    /// `(a, b]` in engine keys, as the ring's segments give it.
    fn range(a: Option<i64>, b: Option<i64>) -> KeyRange {
        KeyRange {
            start: a.map(|a| key(a + 1)).unwrap_or_default(),
            end: b.and_then(|b| b.checked_add(1)).map(key),
        }
    }

    fn src(i: u8, index: u8) -> Role {
        Role::Redundant {
            source: SourceId([i; 16]),
            index,
        }
    }

    #[test]
    fn token_ranges_merge_and_answer_by_binary_search() {
        let mut r = TokenRanges(vec![(10, 20), (-5, 0), (21, 30), (100, 100), (15, 25)]);
        r.normalize();
        assert_eq!(r.intervals(), &[(-5, 0), (10, 30), (100, 100)]);
        for (t, inside) in [
            (-6, false),
            (-5, true),
            (0, true),
            (1, false),
            (10, true),
            (30, true),
            (31, false),
            (100, true),
            (i64::MIN, false),
            (i64::MAX, false),
        ] {
            assert_eq!(r.contains(Token(t)), inside, "{t}");
        }
        assert!(!TokenRanges::default().contains(Token(0)));
    }

    #[test]
    fn key_ranges_become_whole_token_intervals() {
        assert_eq!(
            token_interval(&range(None, None)),
            Some((i64::MIN, i64::MAX))
        );
        assert_eq!(token_interval(&range(Some(-100), Some(0))), Some((-99, 0)));
        assert_eq!(
            token_interval(&range(Some(100), None)),
            Some((101, i64::MAX))
        );
        // An end inside a token keeps that token; an empty range is nothing.
        let mut inside = range(Some(0), Some(5));
        inside.end = Some([key(6), b"pk".to_vec()].concat());
        assert_eq!(token_interval(&inside), Some((1, 6)));
        let empty = KeyRange {
            start: key(7),
            end: Some(key(7)),
        };
        assert_eq!(token_interval(&empty), None);
        assert_eq!(
            token_interval(&KeyRange {
                start: Vec::new(),
                end: Some(key(i64::MIN)),
            }),
            None
        );
    }

    /// Node 2 of a three-node ring at RF 2 (tokens -100: node 1, 0: node 2, 100: node 3):
    /// primary of (-100, 0], node 1's copy on (-inf, -100] and (100, inf).
    #[test]
    fn each_structure_keeps_the_tokens_of_its_role() {
        let o = Ownership::new([
            (range(None, Some(-100)), src(1, 1)),
            (range(Some(-100), Some(0)), Role::Primary),
            (range(Some(100), None), src(1, 1)),
        ]);
        let of_1 = Structure::Source(SourceId([1; 16]));
        let of_3 = Structure::Source(SourceId([3; 16]));
        for (t, shared, primary, copy) in [
            (i64::MIN, true, false, true),
            (-100, true, false, true),
            (-99, true, true, false),
            (0, true, true, false),
            (1, false, false, false),
            (100, false, false, false),
            (101, true, false, true),
            (i64::MAX, true, false, true),
        ] {
            let t = Token(t);
            assert_eq!(o.keeps(Structure::Shared, t), shared, "{t:?}");
            assert_eq!(o.keeps(Structure::Primary, t), primary, "{t:?}");
            assert_eq!(o.keeps(Structure::Replica(0), t), primary, "{t:?}");
            assert_eq!(o.keeps(of_1, t), copy, "{t:?}");
            assert_eq!(o.keeps(Structure::Log, t), copy, "{t:?}");
            assert_eq!(o.keeps(Structure::Replica(1), t), copy, "{t:?}");
            // No source 3, no third replica: those structures keep nothing.
            assert!(!o.keeps(of_3, t));
            assert!(!o.keeps(Structure::Replica(2), t));
        }
        // A stored key goes by its token; a key too short for one is kept.
        let mut k = key(50);
        k.extend_from_slice(b"row");
        assert!(!o.keeps_key(Structure::Shared, &k));
        assert!(o.keeps_key(Structure::Shared, b"x"));
    }

    #[test]
    fn the_gate_drops_only_while_a_cleanup_runs() {
        let gate = Arc::new(CleanupGate::default());
        let opts = gate.options(&Options::default(), Structure::Primary);
        let filter = opts.compaction_filter.clone();
        let drops = |t: i64| filter.as_ref().is_some_and(|f| f.drops(&key(t), 1));
        assert!(!drops(5));
        let ownership = Ownership::new([(range(Some(0), Some(10)), Role::Primary)]);
        gate.with_ownership(ownership, || {
            assert!(!drops(5));
            assert!(drops(11));
        });
        assert!(!drops(11));
        assert_eq!(gate.dropped(), 1);
    }

    /// A filter the engine had still drops what it dropped: either one drops a version.
    #[test]
    fn the_gate_composes_with_an_engines_filter() {
        struct Even;
        impl CompactionFilter for Even {
            fn drops(&self, _key: &[u8], ts: u64) -> bool {
                ts.is_multiple_of(2)
            }
            fn at_flush(&self) -> bool {
                false
            }
        }
        let gate = Arc::new(CleanupGate::default());
        let engine = Options {
            compaction_filter: Some(Arc::new(Even)),
            ..Options::default()
        };
        let opts = gate.options(&engine, Structure::Shared);
        let Some(f) = opts.compaction_filter else {
            panic!("no filter");
        };
        assert!(!f.at_flush());
        assert!(f.drops(&key(5), 2));
        assert!(!f.drops(&key(5), 3));
        gate.with_ownership(Ownership::default(), || {
            assert!(f.drops(&key(5), 3));
        });
    }
}
