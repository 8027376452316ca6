#![allow(clippy::unwrap_used, clippy::indexing_slicing)]
//! Scenario: ELECT's Case 3 on the data node of an `erasure-tiered` table. With a storage
//! saving target that coding the last level and offloading its parity cannot reach, coded
//! tables of the last level move to the cold tier.
//!
//! What a user relies on: the hot tier (bytes under the table's directory) shrinks, every
//! row still reads back (before and after a restart), the content a coding group's slot
//! names stays readable from the cold tier after compaction replaced the table, and the
//! cold objects go once nothing needs them. A target coding alone reaches offloads no data.

use std::collections::HashSet;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use mosaic_lsm::{Options, RealFs, TableStore, WriteBatch};
use mosaic_replica::{Layout, LogSettings, ReplicaStore, RingRanges, Role, Structure};
use mosaic_types::{ErasureCode, Token};

mod common;
use common::group_of;

/// A cold tier in a local directory.
struct DirStore(PathBuf);

impl TableStore for DirStore {
    fn open(&self, location: &str) -> std::io::Result<Arc<dyn mosaic_env::RandomAccessFile>> {
        mosaic_lsm::Fs::open_read(&RealFs, &self.0.join(location), false)
    }

    fn put(&self, location: &str, bytes: &[u8]) -> std::io::Result<()> {
        let path = self.0.join(location);
        std::fs::create_dir_all(path.parent().unwrap())?;
        std::fs::write(path, bytes)
    }

    fn remove(&self, location: &str) -> std::io::Result<()> {
        match std::fs::remove_file(self.0.join(location)) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        }
    }
}

fn open(dir: &Path, cold: &Path) -> ReplicaStore {
    let engine = Options {
        fs: Arc::new(RealFs),
        memtable_size_bytes: 16 << 10,
        table_size_bytes: 8 << 10,
        level1_size_bytes: 32 << 10,
        table_store: Some(Arc::new(DirStore(cold.to_path_buf()))),
        ..Options::default()
    };
    let log = LogSettings {
        split_segments: 2,
        runs_max: 3,
        ring: RingRanges::new([Token(0)]),
    };
    ReplicaStore::open(dir, Layout::ErasureTiered, engine, log).unwrap()
}

fn key(i: u32) -> Vec<u8> {
    format!("key{i:06}").into_bytes()
}

fn value(i: u32, version: u32) -> Vec<u8> {
    format!("v{version}-{i}-{}", "x".repeat(120)).into_bytes()
}

fn code(alpha: f64) -> ErasureCode {
    ErasureCode { k: 2, n: 3, alpha }
}

/// Codes the whole last level, lists every coded table as acknowledged, and empties the
/// slots of coded tables compaction replaced; returns the slots emptied.
fn round(store: &ReplicaStore) -> usize {
    let elect = store.elect().unwrap();
    for (id, content) in store.ec_pick(code(1.0), 3, u64::MAX, 1000).unwrap() {
        elect.mark_coded(id, 0, &group_of(id, &content)).unwrap();
    }
    for (id, _shard, keys) in store.ec_unlisted().unwrap() {
        let (Some(first), Some(last)) = (keys.first(), keys.last()) else {
            continue;
        };
        store
            .ec_listing(id, first.0.clone(), last.0.clone())
            .unwrap();
        store.ec_listed(id).unwrap();
    }
    let replaced = store.ec_replaced().unwrap();
    for r in &replaced {
        elect.cleared(r.id).unwrap();
    }
    replaced.len()
}

fn write_all(store: &ReplicaStore, keys: u32, version: u32) {
    let mut batch = WriteBatch::new();
    for i in 0..keys {
        batch.put(
            &key(i),
            u64::from(version) * 100_000 + u64::from(i),
            &value(i, version),
        );
    }
    store.write(Role::Primary, batch).unwrap();
    store.flush().unwrap();
    store.compact().unwrap();
    store.wait_for_compactions().unwrap();
}

fn assert_reads(store: &ReplicaStore, keys: u32, version: u32) {
    for i in 0..keys {
        let got = store.get(Role::Primary, &key(i)).unwrap().unwrap();
        assert_eq!(got.value, value(i, version), "key{i:06}");
    }
}

/// Bytes under `dir`, each file once however many links it has (as `du -b` counts).
fn bytes_under(dir: &Path) -> u64 {
    fn walk(dir: &Path, seen: &mut HashSet<(u64, u64)>) -> u64 {
        let mut total = 0;
        for entry in std::fs::read_dir(dir).unwrap() {
            let entry = entry.unwrap();
            let meta = entry.metadata().unwrap();
            if meta.is_dir() {
                total += walk(&entry.path(), seen);
            } else if seen.insert((meta.dev(), meta.ino())) {
                total += meta.len();
            }
        }
        total
    }
    walk(dir, &mut HashSet::new())
}

/// The cold tier's objects, by location.
fn objects(cold: &Path) -> HashSet<String> {
    fn walk(root: &Path, dir: &Path, out: &mut HashSet<String>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(root, &path, out);
            } else {
                out.insert(
                    path.strip_prefix(root)
                        .unwrap()
                        .to_string_lossy()
                        .into_owned(),
                );
            }
        }
    }
    let mut out = HashSet::new();
    walk(cold, cold, &mut out);
    out
}

/// `(id, location)` of the primary tree's relocated tables.
fn relocated(store: &ReplicaStore) -> Vec<(u64, String)> {
    store
        .structures()
        .into_iter()
        .find(|s| s.structure == Structure::Primary)
        .unwrap()
        .levels
        .into_iter()
        .flat_map(|l| l.tables)
        .filter(|t| !t.location.is_empty())
        .map(|t| (t.id, t.location))
        .collect()
}

#[test]
fn a_target_beyond_coding_and_parity_offloads_coded_tables_and_they_stay_readable() {
    let root = tempfile::tempdir().unwrap();
    let (dir, cold) = (root.path().join("ks/t"), root.path().join("cold"));
    let keys = 3000;
    let mut store = open(&dir, &cold);
    write_all(&store, keys, 1);
    round(&store);
    let elect = store.elect().unwrap();
    assert!(!elect.coded().is_empty());

    // α = 0.6 is met by coding and parity (Case 2): no data leaves.
    store.ec_offload(code(0.6), 3).unwrap();
    assert!(relocated(&store).is_empty(), "α = 0.6 offloaded data");

    // α = 0.9: about 70% of the last level goes to the cold tier, coldest first.
    let hot_before = bytes_under(&dir);
    let moved = store.ec_offload(code(0.9), 3).unwrap();
    let moved_tables = relocated(&store);
    assert!(moved > 0 && !moved_tables.is_empty(), "nothing offloaded");
    let hot_after = bytes_under(&dir);
    assert!(
        hot_after + moved * 9 / 10 <= hot_before,
        "hot tier {hot_before} → {hot_after} after moving {moved} bytes"
    );
    // Running again moves nothing more: the plan's share is already cold.
    assert_eq!(store.ec_offload(code(0.9), 3).unwrap(), 0);
    assert_reads(&store, keys, 1);

    // The slot's content reads from the cold object: whole, and ranged.
    let elect = store.elect().unwrap();
    let (id, location) = moved_tables[0].clone();
    let content = std::fs::read(cold.join(&location)).unwrap();
    assert_eq!(elect.ghost(id).unwrap().unwrap(), content);
    let group = elect.coded()[&id].group;
    let (epoch, size, bytes) = store
        .ec_shard_range(&group, (0, None), (100, 50))
        .unwrap()
        .unwrap();
    assert_eq!(
        (epoch, size, bytes.as_slice()),
        (0, content.len() as u64, &content[100..150])
    );
    let references: HashSet<String> = store.cold_references().unwrap().into_iter().collect();
    assert!(moved_tables.iter().all(|(_, l)| references.contains(l)));

    // A restart reads the relocated tables through their local metadata.
    drop(store);
    store = open(&dir, &cold);
    assert_reads(&store, keys, 1);

    // Compaction replaces every coded table: their objects stay while their slots name
    // them (the tree no longer does), and go when the slots are emptied.
    write_all(&store, keys, 2);
    assert!(relocated(&store).is_empty());
    let cold_now = objects(&cold);
    assert!(
        moved_tables.iter().all(|(_, l)| cold_now.contains(l)),
        "a replaced table's object went while its slot still names it"
    );
    assert_eq!(store.elect().unwrap().ghost(id).unwrap().unwrap(), content);
    assert_reads(&store, keys, 2);
    let mut emptied = 0;
    for _ in 0..5 {
        emptied += round(&store);
    }
    assert!(emptied > 0, "no slot was emptied");
    let cold_now = objects(&cold);
    assert!(
        moved_tables.iter().all(|(_, l)| !cold_now.contains(l)),
        "emptied slots left their objects behind"
    );
    let references: HashSet<String> = store.cold_references().unwrap().into_iter().collect();
    assert!(
        cold_now.is_subset(&references),
        "unreferenced cold objects: {cold_now:?}"
    );
}

/// A coded table moved to the cold tier whose coding group is let go (a member left the
/// ring) is no longer a data shard but is still read from its object, is picked and coded
/// again from it, and its object stays until compaction replaces the table.
#[test]
fn an_offloaded_table_whose_group_is_let_go_is_coded_again_from_the_cold_tier() {
    let root = tempfile::tempdir().unwrap();
    let (dir, cold) = (root.path().join("ks/t"), root.path().join("cold"));
    let keys = 3000;
    let store = open(&dir, &cold);
    write_all(&store, keys, 1);
    round(&store);
    store.ec_offload(code(0.9), 3).unwrap();
    let moved = relocated(&store);
    assert!(!moved.is_empty(), "nothing offloaded");
    let elect = store.elect().unwrap();
    // Host 1 (slot 1 of every group here) left: every group is let go by this data node
    // (host 0).
    let gone = mosaic_types::HostId([1; 16]);
    let dissolved = store.ec_dissolved_groups(|h| *h != gone).unwrap();
    assert_eq!(dissolved.len(), elect.coded().len());
    for g in &dissolved {
        store
            .ec_release_group(g, mosaic_types::HostId([0; 16]))
            .unwrap();
    }
    assert!(elect.coded().is_empty());
    assert_reads(&store, keys, 1);
    let picked = store.ec_pick(code(1.0), 3, u64::MAX, 1000).unwrap();
    for (id, location) in &moved {
        let (_, content) = picked
            .iter()
            .find(|(p, _)| p == id)
            .unwrap_or_else(|| panic!("relocated table {id} not picked again"));
        assert_eq!(content, &std::fs::read(cold.join(location)).unwrap());
    }
    round(&store);
    assert!(moved.iter().all(|(id, _)| elect.coded().contains_key(id)));
    assert!(moved.iter().all(|(_, l)| objects(&cold).contains(l)));
    assert_reads(&store, keys, 1);
}
