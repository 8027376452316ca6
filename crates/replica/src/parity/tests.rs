use std::io;
use std::sync::atomic::{AtomicI64, Ordering};

use mosaic_env::{RandomAccessFile, RealFs, WritableFile};
use mosaic_erasure::Codec;

use super::*;

const G: GroupId = [0xab; 16];

#[test]
fn deltas_apply_once_in_epoch_order_and_reproduce_a_fresh_encode() {
    let dir = tempfile::tempdir().unwrap();
    let store = ParityStore::open(Arc::new(RealFs), dir.path()).unwrap();
    let codec = Codec::new(2, 4).unwrap();
    let a: Vec<u8> = (0..300u32).map(|i| (i * 7) as u8).collect();
    let b: Vec<u8> = (0..200u32).map(|i| (i * 13 + 1) as u8).collect();
    // Fill slot 0 with a (epoch 0 → 1), then slot 1 with b (1 → 2): the leader's deltas
    // are the parity update of each change against zero parity.
    let delta = |slot: usize, old: &[u8], new: &[u8]| codec.parity_delta(slot, old, new).unwrap();
    for (slot, new, from) in [(0, &a, 0u64), (1, &b, 1)] {
        for (p, d) in delta(slot, &[], new).iter().enumerate() {
            let pos = 2 + p as u8;
            assert_eq!(
                store.apply_delta(&G, pos, from, from + 1, d).unwrap(),
                Applied::Now
            );
            // A repeat is recognised, not applied twice.
            assert_eq!(
                store.apply_delta(&G, pos, from, from + 1, d).unwrap(),
                Applied::Already
            );
        }
    }
    let fresh = codec.encode(&[&a, &b]).unwrap();
    for (p, expected) in fresh.iter().enumerate() {
        let shard = store.shard(&G, 2 + p as u8).unwrap().unwrap();
        assert_eq!(shard.epoch, 2);
        assert_eq!(&shard.bytes, expected);
    }
    // An update naming another epoch is refused and changes nothing.
    let e = store.apply_delta(&G, 2, 5, 6, &[1]).unwrap_err();
    assert!(e.to_string().contains("is at epoch 2, not 5"), "{e}");
    assert!(store.apply_delta(&G, 2, 2, 2, &[1]).is_err());
    assert_eq!(store.shard(&G, 2).unwrap().unwrap().bytes, fresh[0]);
    // Replacing a by zeros (the slot emptied) leaves b's parity alone.
    for (p, d) in delta(0, &a, &[]).iter().enumerate() {
        store.apply_delta(&G, 2 + p as u8, 2, 3, d).unwrap();
    }
    let only_b = codec.encode(&[&[], &b]).unwrap();
    for (p, expected) in only_b.iter().enumerate() {
        let got = store.shard(&G, 2 + p as u8).unwrap().unwrap().bytes;
        assert_eq!(&got[..expected.len()], &expected[..]);
        assert!(got[expected.len()..].iter().all(|&x| x == 0));
    }
    assert!(store.parity_bytes().unwrap() >= 2 * only_b[0].len() as u64);
}

/// An ECMeta of group `G` at `epoch` (its shards do not matter here).
fn meta_at(epoch: u64) -> EcMeta {
    EcMeta {
        group: G,
        epoch,
        k: 2,
        n: 4,
        stripe_bytes: 64,
        coded_len: 0,
        shards: (0..4)
            .map(|i| mosaic_erasure::meta::ShardMeta {
                hash: [0; 32],
                size: 0,
                node: mosaic_types::HostId([i; 16]),
                position: i,
            })
            .collect(),
    }
}

/// A parity store in `dir` holding shard 2 of `G` at epoch 1 (its ECMeta recorded), then
/// moved to epoch 2 by a leader that did not commit it; with the bytes it held at epoch 1.
fn epoch_2_uncommitted(dir: &Path) -> (ParityStore, u64) {
    let store = ParityStore::open(Arc::new(RealFs), dir).unwrap();
    store.apply_delta(&G, 2, 0, 1, &[1; 100]).unwrap();
    store.record_meta(&meta_at(1)).unwrap();
    let one = store.parity_bytes().unwrap();
    store.apply_delta(&G, 2, 1, 2, &[3; 100]).unwrap();
    (store, one)
}

#[test]
fn the_committed_epoch_stays_readable_until_a_newer_ecmeta_is_recorded() {
    // A leader moves parity to epoch 2 and dies before committing: readers still decode
    // epoch 1 (the group's newest ECMeta), so its parity must still be served.
    let dir = tempfile::tempdir().unwrap();
    let (store, one) = epoch_2_uncommitted(dir.path());
    let at = |epoch| store.shard_at(&G, 2, Some(epoch)).unwrap().unwrap();
    assert_eq!((at(1).epoch, at(1).bytes), (1, vec![1; 100]));
    assert_eq!((at(2).epoch, at(2).bytes), (2, vec![2; 100]));
    // Asked for an epoch it does not hold, a node answers with its newest.
    assert_eq!(at(7).epoch, 2);
    assert_eq!(store.shard(&G, 2).unwrap().unwrap().epoch, 2);
    let range = |epoch| {
        store
            .shard_range(&G, 2, Some(epoch), (10, 5))
            .unwrap()
            .unwrap()
    };
    assert_eq!(range(1), (1, 100, vec![1; 5]));
    assert_eq!(range(2), (2, 100, vec![2; 5]));
    // The kept shard counts as parity held.
    assert_eq!(store.parity_bytes().unwrap(), 2 * one);
    // The commit of epoch 2 lets it go.
    store.record_meta(&meta_at(2)).unwrap();
    assert_eq!(at(1).epoch, 2);
    assert_eq!(store.parity_bytes().unwrap(), one);
    // The next update keeps epoch 2; dropping the group drops it too.
    store.apply_delta(&G, 2, 2, 3, &[1; 100]).unwrap();
    assert_eq!(at(2).bytes, vec![2; 100]);
    assert!(store.drop_group(&G).unwrap());
    assert!(std::fs::read_dir(dir.path()).unwrap().next().is_none());
}

#[test]
fn a_damaged_kept_shard_is_passed_over_and_dropped_with_the_next_ecmeta() {
    let dir = tempfile::tempdir().unwrap();
    let (store, _) = epoch_2_uncommitted(dir.path());
    let old = store.old_path(&G, 2);
    std::fs::write(&old, b"MPAR garbage").unwrap();
    // Asked for epoch 1, the node answers with what it has: its newest.
    let at1 = store.shard_at(&G, 2, Some(1)).unwrap().unwrap();
    assert_eq!((at1.epoch, at1.bytes), (2, vec![2; 100]));
    let range = store.shard_range(&G, 2, Some(1), (0, 3)).unwrap().unwrap();
    assert_eq!(range, (2, 100, vec![2; 3]));
    // Recording the next ECMeta succeeds and removes it.
    assert!(store.record_meta(&meta_at(2)).unwrap());
    assert!(!old.exists());
}

/// A cold tier in memory.
#[derive(Default)]
struct MemStore(Mutex<std::collections::BTreeMap<String, Vec<u8>>>);

struct MemFile(Vec<u8>);

impl RandomAccessFile for MemFile {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        let start = offset as usize;
        let src = self
            .0
            .get(start..start + buf.len())
            .ok_or(io::ErrorKind::UnexpectedEof)?;
        buf.copy_from_slice(src);
        Ok(())
    }
    fn len(&self) -> u64 {
        self.0.len() as u64
    }
}

impl TableStore for MemStore {
    fn open(&self, location: &str) -> io::Result<Arc<dyn RandomAccessFile>> {
        let bytes = self.0.lock().get(location).cloned();
        Ok(Arc::new(MemFile(bytes.ok_or(io::ErrorKind::NotFound)?)))
    }
    fn put(&self, location: &str, bytes: &[u8]) -> io::Result<()> {
        self.0.lock().insert(location.to_owned(), bytes.to_vec());
        Ok(())
    }
    fn remove(&self, location: &str) -> io::Result<()> {
        self.0.lock().remove(location);
        Ok(())
    }
}

#[test]
fn offloaded_shards_read_from_the_cold_tier_and_come_back_when_updated() {
    let dir = tempfile::tempdir().unwrap();
    let cold = Arc::new(MemStore::default());
    let open = || {
        ParityStore::open(Arc::new(RealFs), dir.path())
            .unwrap()
            .with_cold_tier(cold.clone(), "ks/t/parity".into())
            .unwrap()
    };
    let store = open();
    let other: GroupId = [0xcd; 16];
    store.apply_delta(&G, 2, 0, 1, &[7; 128]).unwrap();
    store.apply_delta(&other, 2, 0, 1, &[9; 64]).unwrap();
    // Enough for one shard: the first in group order moves.
    let moved = store.offload(1).unwrap();
    assert!(moved > 128, "{moved}");
    assert_eq!(store.cold_bytes().unwrap(), moved);
    assert_eq!(cold.0.lock().len(), 1);
    assert!(!dir.path().join(format!("{}-2.par", hex(&G))).exists());
    assert_eq!(store.shard(&G, 2).unwrap().unwrap().bytes, vec![7; 128]);
    assert_eq!(store.offload(1).unwrap(), 0, "the target is already met");
    drop(store);
    // Across a restart, then an update brings the shard back and drops the object.
    let store = open();
    assert_eq!(store.shard(&G, 2).unwrap().unwrap().epoch, 1);
    store.apply_delta(&G, 2, 1, 2, &[1; 128]).unwrap();
    assert_eq!(store.shard(&G, 2).unwrap().unwrap().bytes, vec![6; 128]);
    assert_eq!(store.cold_bytes().unwrap(), 0);
    assert!(cold.0.lock().is_empty());
    // Offloading everything, then losing the object, is an error naming it.
    store.offload(u64::MAX).unwrap();
    cold.0.lock().clear();
    assert!(store.shard(&G, 2).is_err());
}

#[test]
fn metas_only_move_forward_and_damaged_files_are_errors() {
    let dir = tempfile::tempdir().unwrap();
    let store = ParityStore::open(Arc::new(RealFs), dir.path()).unwrap();
    let mut meta = meta_at(4);
    assert!(store.record_meta(&meta).unwrap());
    meta.epoch = 3;
    assert!(
        !store.record_meta(&meta).unwrap(),
        "an older epoch is ignored"
    );
    assert_eq!(store.meta(&G).unwrap().unwrap().epoch, 4);
    assert_eq!(store.groups().unwrap(), vec![G]);
    store.apply_delta(&G, 2, 0, 1, &[1, 2, 3]).unwrap();
    // Flip a byte of each file: reading it is an error naming the file.
    for name in [
        "abababababababababababababababab-2.par",
        "abababababababababababababababab.ecm",
    ] {
        let path = dir.path().join(name);
        let mut bytes = std::fs::read(&path).unwrap();
        let mid = bytes.len() / 2;
        bytes[mid] ^= 1;
        std::fs::write(&path, bytes).unwrap();
    }
    let e = store.shard(&G, 2).unwrap_err().to_string();
    assert!(e.contains("-2.par"), "{e}");
    assert!(store.meta(&G).is_err());
}

/// A file system that fails every change after a budget of them: a crash at that step.
struct CrashAfter {
    inner: RealFs,
    budget: Arc<AtomicI64>,
}

impl CrashAfter {
    fn spend(&self) -> io::Result<()> {
        if self.budget.fetch_sub(1, Ordering::SeqCst) <= 0 {
            return Err(io::Error::other("crashed"));
        }
        Ok(())
    }
}

struct CrashFile {
    inner: Box<dyn WritableFile>,
    budget: Arc<AtomicI64>,
}

impl WritableFile for CrashFile {
    fn append(&mut self, data: &[u8]) -> io::Result<()> {
        if self.budget.fetch_sub(1, Ordering::SeqCst) <= 0 {
            // A torn write: half the bytes reach the file.
            let _ = self.inner.append(&data[..data.len() / 2]);
            return Err(io::Error::other("crashed"));
        }
        self.inner.append(data)
    }
    fn sync_data(&mut self) -> io::Result<()> {
        if self.budget.fetch_sub(1, Ordering::SeqCst) <= 0 {
            return Err(io::Error::other("crashed"));
        }
        self.inner.sync_data()
    }
    fn len(&self) -> u64 {
        self.inner.len()
    }
}

impl Fs for CrashAfter {
    fn create(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        self.spend()?;
        Ok(Box::new(CrashFile {
            inner: self.inner.create(path)?,
            budget: self.budget.clone(),
        }))
    }
    fn open_read(&self, path: &Path, direct: bool) -> io::Result<Arc<dyn RandomAccessFile>> {
        self.inner.open_read(path, direct)
    }
    fn read_all(&self, path: &Path) -> io::Result<Vec<u8>> {
        self.inner.read_all(path)
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.spend()?;
        self.inner.rename(from, to)
    }
    fn remove(&self, path: &Path) -> io::Result<()> {
        self.spend()?;
        self.inner.remove(path)
    }
    fn list(&self, dir: &Path) -> io::Result<Vec<String>> {
        self.inner.list(dir)
    }
    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        self.inner.create_dir_all(dir)
    }
    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        self.spend()?;
        self.inner.sync_dir(dir)
    }
    fn exists(&self, path: &Path) -> bool {
        self.inner.exists(path)
    }
    fn lock(&self, path: &Path) -> io::Result<Box<dyn std::any::Any + Send + Sync>> {
        self.inner.lock(path)
    }
}

#[test]
fn a_crash_at_any_step_of_an_update_leaves_the_old_epoch_or_the_new() {
    let old: Vec<u8> = (0..256u32).map(|i| i as u8).collect();
    let delta: Vec<u8> = (0..320u32).map(|i| (i * 3 + 1) as u8).collect();
    let mut new = old.clone();
    new.resize(delta.len(), 0);
    for (b, d) in new.iter_mut().zip(&delta) {
        *b ^= d;
    }
    let mut saw = (false, false);
    for budget in 0..10 {
        let dir = tempfile::tempdir().unwrap();
        let setup = ParityStore::open(Arc::new(RealFs), dir.path()).unwrap();
        setup.apply_delta(&G, 3, 0, 1, &old).unwrap();
        let crashing = ParityStore::open(
            Arc::new(CrashAfter {
                inner: RealFs,
                budget: Arc::new(AtomicI64::new(budget)),
            }),
            dir.path(),
        )
        .unwrap();
        let _ = crashing.apply_delta(&G, 3, 1, 2, &delta);
        // Restart: the shard is whole at epoch 1 or 2, and the update can be retried.
        let store = ParityStore::open(Arc::new(RealFs), dir.path()).unwrap();
        let shard = store.shard(&G, 3).unwrap().unwrap();
        match shard.epoch {
            1 => {
                assert_eq!(shard.bytes, old, "budget {budget}");
                saw.0 = true;
            }
            2 => {
                assert_eq!(shard.bytes, new, "budget {budget}");
                saw.1 = true;
            }
            e => panic!("epoch {e} after a crash at step {budget}"),
        }
        store.apply_delta(&G, 3, 1, 2, &delta).unwrap();
        assert_eq!(store.shard(&G, 3).unwrap().unwrap().bytes, new);
        assert!(std::fs::read_dir(dir.path()).unwrap().all(|e| !e
            .unwrap()
            .file_name()
            .to_string_lossy()
            .ends_with(".tmp")));
    }
    assert_eq!(saw, (true, true), "both outcomes were reached");
}
