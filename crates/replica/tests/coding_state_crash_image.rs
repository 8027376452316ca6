#![allow(clippy::unwrap_used, clippy::indexing_slicing)]
#![allow(clippy::disallowed_methods)] // Tests run real threads; the seam binds the code under test.
//! Scenario: power losses at seeded file-system calls while two `erasure-tiered` stores on
//! one `mosaic_env::CrashFs` (which keeps only fsynced bytes and directory entries) play
//! ELECT's rounds: the data node D takes writes, codes its last level's tables — Q taken
//! (`next_seq`), the table pinned as a ghost and recorded as sent, the leader L records a
//! fill intent, applies both parity deltas (it holds both parity positions of a (2, 4)
//! group whose two data slots are D's), commits the ECMeta, and D records the table as
//! coded — sends key lists (D's listing, L's covered list, D's listed) and empties the
//! slots of coded tables compaction replaced; every other round L's parity shards move to
//! the cold tier (stubs; the next delta brings a shard back) and D moves listed coded
//! tables there (object, ghost stub, relocation, link removal). Both nodes lose power at
//! the same moment; the cold tier (an object store) keeps what it held then.
//!
//! After each crash both reopen on the image, and what they report must have been made
//! durable whole or not at all: every acknowledged step is there (Q never goes back, a
//! table D recorded as coded still is, in its group, slot and epoch, with its ghost's
//! content; listings, covered key lists and ECMeta epochs stay), nothing unacknowledged
//! but the step in flight shows; `LINEAGE` follows every listed table. Then L finishes
//! every fill intent left, D sends again every table still unanswered, and each group's
//! parity shards are at its ECMeta's epoch, match its hashes, decode each data slot from
//! the others, and every filled slot is a table D holds as coded with that content.
//! `MOSAIC_CRASH_SEEDS` (40 by default) and `MOSAIC_SEED` as in `mosaic-lsm`'s
//! `crash_image.rs`.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::ops::Bound;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use mosaic_env::{CrashFs, RandomAccessFile, SplitMix64};
use mosaic_erasure::{EcMeta, Fill, Group};
use mosaic_lsm::{Options, SyncMode, TableStore, WriteBatch};
use mosaic_replica::elect::Elect;
use mosaic_replica::{Layout, LogSettings, ReplicaStore, RingRanges, Role, SourceId};
use mosaic_types::{ErasureCode, HostId, Token};

const ROUNDS: usize = 14;
const WRITES_PER_ROUND: usize = 6;
const ROWS_PER_WRITE: usize = 12;
const KEYS: u64 = 400;
const CRASHES_PER_SEED: usize = 6;
/// File-system calls a run makes, about (some 8,700): crash points spread over them.
const OPS: u64 = 8800;

const DATA: HostId = HostId([1; 16]);
const LEADER: HostId = HostId([3; 16]);
const PARITY: HostId = HostId([4; 16]);
/// Both nodes' table directories (their last two components name their cold objects).
const D_DIR: &str = "/d/ks/td";
const L_DIR: &str = "/l/ks/tl";
/// A (2, 4) code; α = 1 asks for everything coded and as much as possible cold.
const CODE: ErasureCode = ErasureCode {
    k: 2,
    n: 4,
    alpha: 1.0,
};
/// D as the source of its rows' redundant copies at L.
const SOURCE: SourceId = SourceId([1; 16]);

fn nodes() -> Group {
    Group {
        data: vec![DATA, DATA],
        parity: vec![LEADER, PARITY],
    }
}

/// The cold tier: an object store, whose puts and removals are durable once they return;
/// the nodes' power loss leaves it as it was (each image gets a copy).
#[derive(Default)]
struct Cold(Mutex<BTreeMap<String, Vec<u8>>>);

struct ColdObject(Vec<u8>);

impl RandomAccessFile for ColdObject {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
        let start = offset as usize;
        let bytes = self
            .0
            .get(start..start + buf.len())
            .ok_or(std::io::ErrorKind::UnexpectedEof)?;
        buf.copy_from_slice(bytes);
        Ok(())
    }

    fn len(&self) -> u64 {
        self.0.len() as u64
    }
}

impl TableStore for Cold {
    fn open(&self, location: &str) -> std::io::Result<Arc<dyn RandomAccessFile>> {
        let bytes = self.0.lock().unwrap().get(location).cloned();
        Ok(Arc::new(ColdObject(
            bytes.ok_or(std::io::ErrorKind::NotFound)?,
        )))
    }

    fn put(&self, location: &str, bytes: &[u8]) -> std::io::Result<()> {
        self.0
            .lock()
            .unwrap()
            .insert(location.to_owned(), bytes.to_vec());
        Ok(())
    }

    fn remove(&self, location: &str) -> std::io::Result<()> {
        self.0.lock().unwrap().remove(location);
        Ok(())
    }
}

fn options(fs: &CrashFs, cold: &Arc<Cold>) -> Options {
    Options {
        fs: Arc::new(fs.clone()),
        table_store: Some(cold.clone() as Arc<dyn TableStore>),
        sync_mode: SyncMode::PerWrite,
        memtable_size_bytes: 4 << 10,
        block_cache_bytes: 0,
        level0_compaction_trigger: 2,
        level1_size_bytes: 8 << 10,
        level_size_ratio: 4,
        table_size_bytes: 2 << 10,
        ..Options::default()
    }
}

fn open(fs: &CrashFs, cold: &Arc<Cold>, dir: &str) -> mosaic_lsm::Result<ReplicaStore> {
    let log = LogSettings {
        split_segments: 2,
        runs_max: 3,
        ring: RingRanges::new([Token(0)]),
    };
    ReplicaStore::open(
        Path::new(dir),
        Layout::ErasureTiered,
        options(fs, cold),
        log,
    )
}

fn seeds() -> Vec<u64> {
    mosaic_env::crash::crash_seeds(40, 0xe1ec7)
}

/// One acknowledged step of the run.
#[derive(Clone, Debug)]
enum Step {
    /// D took Q = `.0`.
    Seq(u64),
    /// D recorded table `id` as sent.
    Sent(u64),
    /// L committed this ECMeta.
    Committed(EcMeta),
    /// D recorded table `id` as coded under `meta` at `slot`; its content's hash.
    Coded {
        id: u64,
        slot: u8,
        meta: EcMeta,
        hash: [u8; 32],
    },
    /// D recorded that table `id`'s key list is being sent.
    Listing(u64),
    /// L holds table `id`'s key list (these keys).
    Covered(u64, Vec<Vec<u8>>),
    /// D recorded that every secondary holds table `id`'s key list.
    Listed(u64),
    /// D forgot table `id`, whose slot was emptied.
    Cleared(u64),
}

fn elect(store: &ReplicaStore) -> &Elect {
    store.elect().unwrap()
}

/// Applies `fill`'s deltas at L (it holds every parity position) and commits.
fn finish(l: &Elect, fill: Fill) -> mosaic_lsm::Result<EcMeta> {
    match fill {
        Fill::Committed(meta) => Ok(meta),
        Fill::Pending {
            group,
            from,
            to,
            deltas,
        } => {
            let mut hashes = Vec::new();
            for (position, _, delta) in deltas {
                hashes.push((
                    position,
                    l.apply_parity(&group, position, from, to, &delta)?,
                ));
            }
            l.commit_fill(&group, &hashes)
        }
    }
}

/// One ELECT round of D with L; every acknowledged step is pushed on `steps` and counted
/// in `acked`.
fn round(d: &ReplicaStore, l: &ReplicaStore, steps: &mut Vec<Step>, ack: &dyn Fn(usize)) {
    let (de, le) = (elect(d), elect(l));
    let push = |steps: &mut Vec<Step>, s: Step| {
        steps.push(s);
        ack(steps.len());
    };
    for (id, content) in d.ec_pick(CODE, 3, u64::MAX, 2).unwrap() {
        let q = de.next_seq().unwrap();
        push(steps, Step::Seq(q));
        let slot = (q % 2) as u8;
        de.note_sent(id, slot, LEADER).unwrap();
        push(steps, Step::Sent(id));
        let fill = le.prepare_fill(&nodes(), slot, content.clone()).unwrap();
        let meta = finish(le, fill).unwrap();
        push(steps, Step::Committed(meta.clone()));
        de.mark_coded(id, slot, &meta).unwrap();
        let hash = EcMeta::content_hash(&content);
        push(
            steps,
            Step::Coded {
                id,
                slot,
                meta,
                hash,
            },
        );
    }
    for (id, shard, keys) in d.ec_unlisted().unwrap() {
        let (Some(first), Some(last)) = (keys.first(), keys.last()) else {
            continue;
        };
        d.ec_listing(id, first.0.clone(), last.0.clone()).unwrap();
        push(steps, Step::Listing(id));
        l.ec_cover(SOURCE, id, shard, &keys).unwrap();
        push(
            steps,
            Step::Covered(id, keys.iter().map(|(k, _)| k.clone()).collect()),
        );
        d.ec_listed(id).unwrap();
        push(steps, Step::Listed(id));
    }
    for r in d.ec_replaced().unwrap() {
        let fill = le.prepare_clear(&r.group, r.slot, r.content).unwrap();
        let meta = finish(le, fill).unwrap();
        push(steps, Step::Committed(meta));
        de.cleared(r.id).unwrap();
        push(steps, Step::Cleared(r.id));
    }
}

fn key(k: u64) -> Vec<u8> {
    format!("key{k:06}").into_bytes()
}

/// What the first `acked` steps promise.
#[derive(Default)]
struct Model {
    seq: u64,
    sent: BTreeSet<u64>,
    /// id → (group, slot, epoch, content hash).
    coded: BTreeMap<u64, ([u8; 16], u8, u64, [u8; 32])>,
    listing: BTreeSet<u64>,
    listed: BTreeSet<u64>,
    covered: Vec<(u64, Vec<Vec<u8>>)>,
    epochs: HashMap<[u8; 16], u64>,
}

impl Model {
    fn of(steps: &[Step]) -> Model {
        let mut m = Model::default();
        for s in steps {
            match s {
                Step::Seq(q) => m.seq = q + 1,
                Step::Sent(id) => {
                    m.sent.insert(*id);
                }
                Step::Committed(meta) => {
                    let e = m.epochs.entry(meta.group).or_default();
                    *e = (*e).max(meta.epoch);
                }
                Step::Coded {
                    id,
                    slot,
                    meta,
                    hash,
                } => {
                    m.coded.insert(*id, (meta.group, *slot, meta.epoch, *hash));
                }
                Step::Listing(id) => {
                    m.listing.insert(*id);
                }
                Step::Covered(id, keys) => m.covered.push((*id, keys.clone())),
                Step::Listed(id) => {
                    m.listed.insert(*id);
                }
                Step::Cleared(id) => {
                    m.coded.remove(id);
                    m.listing.remove(id);
                    m.listed.remove(id);
                }
            }
        }
        m
    }
}

/// Checks the stores reopened on an image against the steps acknowledged by then
/// (`acked`; the next step may have been under way), then finishes what was left and
/// checks the groups decode.
fn check(d: &ReplicaStore, l: &ReplicaStore, steps: &[Step], acked: usize, ctx: &str) {
    let (de, le) = (elect(d), elect(l));
    let before = Model::of(&steps[..acked]);
    let after = Model::of(&steps[..(acked + 1).min(steps.len())]);
    let in_flight = steps.get(acked);

    // Q: never reused, never skipped by more than the step in flight.
    let q = de.next_seq().unwrap();
    assert!(
        q == before.seq || q == after.seq,
        "{ctx}: Q is {q} after the crash; {} taken and acknowledged",
        before.seq
    );

    // Coded tables: each acknowledged one stays, as it was, with its ghost.
    let coded = de.coded();
    for (id, (group, slot, epoch, hash)) in &before.coded {
        let Some(c) = coded.get(id) else {
            assert!(
                matches!(in_flight, Some(Step::Cleared(x)) if x == id),
                "{ctx}: table {id} was recorded as coded and is no longer"
            );
            continue;
        };
        assert_eq!(
            (c.group, c.slot, c.epoch),
            (*group, *slot, *epoch),
            "{ctx}: table {id} changed group, slot or epoch"
        );
        let ghost = de.ghost(*id).unwrap();
        assert_eq!(
            ghost.map(|g: Vec<u8>| EcMeta::content_hash(&g)),
            Some(*hash),
            "{ctx}: coded table {id} lost its ghost's content"
        );
    }
    for (id, c) in &coded {
        let known = after.coded.get(id).or(before.coded.get(id));
        let Some((group, slot, epoch, hash)) = known else {
            panic!("{ctx}: table {id} is recorded as coded, which was never acknowledged");
        };
        assert_eq!(
            (c.group, c.slot, c.epoch),
            (*group, *slot, *epoch),
            "{ctx}: table {id}"
        );
        assert_eq!(
            de.ghost(*id)
                .unwrap()
                .map(|g: Vec<u8>| EcMeta::content_hash(&g)),
            Some(*hash),
            "{ctx}: coded table {id} has no ghost with its content"
        );
    }

    // Listings, and the lineage of every listed table.
    let listed = de.listed();
    for id in &before.listing {
        if coded.contains_key(id) {
            assert!(
                listed.contains_key(id),
                "{ctx}: table {id} lost its listing"
            );
        }
    }
    for id in &before.listed {
        if coded.contains_key(id) {
            assert!(
                listed.get(id).is_some_and(|l| l.acked),
                "{ctx}: table {id} was listed everywhere and is no longer"
            );
        }
    }
    for id in listed.keys() {
        assert!(
            after.listing.contains(id) || before.listing.contains(id),
            "{ctx}: table {id} is listed without having been"
        );
        assert!(
            de.lineage().heirs(*id).is_some(),
            "{ctx}: listed table {id} is not followed in LINEAGE"
        );
    }

    // L's key lists.
    let cover = le.covered().source(SOURCE);
    for (id, keys) in &before.covered {
        for k in keys {
            assert!(
                cover.covers(Bound::Included(k), Bound::Included(k)),
                "{ctx}: the acknowledged key list of table {id} lost a key"
            );
        }
    }

    // ECMetas never go back.
    for (group, epoch) in &before.epochs {
        let meta = le.parity().meta(group).unwrap();
        assert!(
            meta.as_ref().is_some_and(|m| m.epoch >= *epoch),
            "{ctx}: a group went back from committed epoch {epoch} to {:?}",
            meta.map(|m| m.epoch)
        );
    }
    for group in le.parity().groups().unwrap() {
        let meta = le.parity().meta(&group).unwrap().unwrap();
        let most = after.epochs.get(&group).max(before.epochs.get(&group));
        assert!(
            most.is_some_and(|e| meta.epoch <= *e),
            "{ctx}: a group is at epoch {}, never acknowledged",
            meta.epoch
        );
    }

    // Finish what the crash interrupted: L's intents, then D's unanswered tables.
    for intent in le.parity().intents().unwrap() {
        let fill = le
            .resume(&intent.group)
            .unwrap()
            .unwrap_or_else(|| panic!("{ctx}: an intent does not resume"));
        finish(le, fill).unwrap_or_else(|e| panic!("{ctx}: an intent does not complete: {e}"));
    }
    assert!(
        le.parity().intents().unwrap().is_empty(),
        "{ctx}: intents left"
    );
    for (id, slot, leader, content) in de.unanswered().unwrap() {
        assert!(
            after.sent.contains(&id) && leader == LEADER,
            "{ctx}: table {id} is waiting for an answer and was never sent"
        );
        let fill = le.prepare_fill(&nodes(), slot, content).unwrap();
        let meta = finish(le, fill).unwrap_or_else(|e| panic!("{ctx}: resending {id}: {e}"));
        de.mark_coded(id, slot, &meta).unwrap();
    }
    assert!(
        de.unanswered().unwrap().is_empty(),
        "{ctx}: tables left unanswered"
    );

    // Every group: parity at the ECMeta's epoch, matching its hashes; every filled slot
    // is a table D holds as coded; each data slot decodes from the other shards.
    for group in le.parity().groups().unwrap() {
        let meta = le.parity().meta(&group).unwrap().unwrap();
        let k = usize::from(meta.k);
        let mut shards: Vec<Vec<u8>> = Vec::new();
        for slot in 0..k {
            let s = &meta.shards[slot];
            if s.size == 0 {
                shards.push(Vec::new());
                continue;
            }
            let content = de
                .slot_content(&group, slot as u8)
                .unwrap()
                .unwrap_or_else(|| {
                    panic!(
                        "{ctx}: slot {slot} at epoch {} names a table D does not hold",
                        meta.epoch
                    )
                });
            assert!(
                meta.verify(slot, &content),
                "{ctx}: slot {slot} at epoch {}: D's table is not the content coded",
                meta.epoch
            );
            shards.push(content);
        }
        for position in k..usize::from(meta.n) {
            let p = le
                .parity()
                .shard(&group, position as u8)
                .unwrap()
                .unwrap_or_else(|| panic!("{ctx}: parity {position} is missing"));
            assert_eq!(
                p.epoch, meta.epoch,
                "{ctx}: parity {position} at another epoch"
            );
            assert!(
                meta.verify(position, &p.bytes),
                "{ctx}: parity {position} does not match its ECMeta"
            );
            shards.push(p.bytes);
        }
        let codec = meta.codec().unwrap();
        let coded_len = meta.coded_len as usize;
        for want in 0..k {
            for range in codec.stripes(coded_len) {
                let piece = |s: &[u8]| -> Vec<u8> {
                    let end = range.end.min(s.len());
                    s.get(range.start.min(end)..end)
                        .unwrap_or_default()
                        .to_vec()
                };
                let others: Vec<(usize, Vec<u8>)> = (0..shards.len())
                    .filter(|p| *p != want)
                    .map(|p| (p, piece(&shards[p])))
                    .collect();
                let refs: Vec<(usize, &[u8])> =
                    others.iter().map(|(p, b)| (*p, b.as_slice())).collect();
                let mut rebuilt = codec.decode_range(range.clone(), &refs, want).unwrap();
                let mut expected = piece(&shards[want]);
                expected.resize(range.len(), 0);
                rebuilt.resize(range.len(), 0);
                assert!(
                    rebuilt == expected,
                    "{ctx}: slot {want} does not decode from the group's other shards"
                );
            }
        }
    }
}

/// What a crash point keeps: the steps acknowledged, and the cold tier's objects.
type Mark = (usize, BTreeMap<String, Vec<u8>>);

/// One run; returns the images checked.
fn run(seed: u64) -> usize {
    let mut rng = SplitMix64::new(seed);
    let fs = CrashFs::new();
    let cold = Arc::new(Cold::default());
    // Each crash point keeps the steps acknowledged by then and a copy of the cold tier.
    let acked = Arc::new(AtomicU64::new(0));
    let marks: Arc<Mutex<Vec<Mark>>> = Arc::default();
    let points: Vec<u64> = (0..CRASHES_PER_SEED).map(|_| rng.between(1, OPS)).collect();
    let (a, c, m) = (acked.clone(), cold.clone(), marks.clone());
    fs.crash_at(
        points,
        rng.next_u64(),
        Arc::new(move || {
            let objects = c.0.lock().unwrap().clone();
            let mut m = m.lock().unwrap();
            m.push((a.load(Ordering::SeqCst) as usize, objects));
            m.len() as u64 - 1
        }),
    );
    let d = open(&fs, &cold, D_DIR).unwrap();
    let l = open(&fs, &cold, L_DIR).unwrap();
    let mut steps = Vec::new();
    let ack = |n: usize| acked.store(n as u64, Ordering::SeqCst);
    let mut ts = 0u64;
    for r in 0..ROUNDS {
        for _ in 0..WRITES_PER_ROUND {
            let mut batch = WriteBatch::new();
            for _ in 0..ROWS_PER_WRITE {
                ts += 1;
                let k = rng.below(KEYS);
                batch.put(
                    &key(k),
                    ts,
                    format!("v{ts:08}-{}", "x".repeat(30)).as_bytes(),
                );
            }
            d.write(Role::Primary, batch).unwrap();
        }
        d.flush().unwrap();
        d.wait_for_compactions().unwrap();
        round(&d, &l, &mut steps, &ack);
        // Every other round L's parity goes to the cold tier (the next fills bring it
        // back), and D moves listed coded tables there (ELECT's Case 3).
        if r % 2 == 1 {
            elect(&l).parity().offload(u64::MAX).unwrap();
        }
        d.ec_offload(CODE, 3).unwrap();
    }
    let count = |f: fn(&Step) -> bool| steps.iter().filter(|s| f(s)).count();
    let coded = count(|s| matches!(s, Step::Coded { .. }));
    let cleared = count(|s| matches!(s, Step::Cleared(_)));
    let offloaded = elect(&d).ghost_locations().unwrap().len();
    assert!(
        coded > 2 && cleared > 0 && offloaded > 0,
        "MOSAIC_SEED={seed}: the run coded {coded} tables, emptied {cleared} slots and \
         offloaded {offloaded}"
    );
    d.close().unwrap();
    l.close().unwrap();
    let images = fs.take_images();
    let marks = std::mem::take(&mut *marks.lock().unwrap());
    for (op, mark, image) in &images {
        let (acked, objects) = &marks[*mark as usize];
        let acked = *acked;
        let ctx = format!(
            "MOSAIC_SEED={seed}: crash at file-system call {op}, {acked} steps acknowledged \
             (next: {:?})",
            steps.get(acked).map(|s| match s {
                Step::Coded { id, slot, .. } => format!("Coded {id} slot {slot}"),
                Step::Committed(m) => format!("Committed epoch {}", m.epoch),
                other => format!("{other:?}"),
            })
        );
        let cold = Arc::new(Cold(Mutex::new(objects.clone())));
        let d = open(image, &cold, D_DIR)
            .unwrap_or_else(|e| panic!("{ctx}: the data node does not reopen: {e}"));
        let l = open(image, &cold, L_DIR)
            .unwrap_or_else(|e| panic!("{ctx}: the leader does not reopen: {e}"));
        check(&d, &l, &steps, acked, &ctx);
        d.close().unwrap();
        l.close().unwrap();
    }
    images.len()
}

#[test]
fn the_coding_state_survives_power_losses_whole_or_not_at_all() {
    let mut images = 0;
    for seed in seeds() {
        images += run(seed);
    }
    assert!(images > 0, "no crash point was reached");
}
