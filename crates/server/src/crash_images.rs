//! Scenario: power losses at seeded moments while a node writes the small files of its
//! data directory — `node.toml` (its identity), `schema.json` (its catalog and epoch),
//! `peers.json` (the peers it knew) — and its hints, on a file system that keeps only what
//! was made durable (`mosaic_env::CrashFs`: file bytes up to their last `fdatasync`,
//! perhaps a torn part of the rest; directory entries as of their directory's last
//! `fsync`). After each crash the files are read back the way a restarting node reads them,
//! and must hold a whole version no older than the last one acknowledged: a node that
//! cannot parse its own `node.toml` or `schema.json` refuses to start, and one that loses
//! them comes back as another node or without its tables.
//!
//! `MOSAIC_CRASH_SEEDS` sets how many seeds run (100 by default, a few crash points each);
//! `MOSAIC_SEED=<seed>` replays one.

use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use mosaic_cluster::message::{AppState, EndpointState, NodeStatus};
use mosaic_cluster::{Endpoint, WireMutation};
use mosaic_cql::schema::Catalog;
use mosaic_env::{CrashFs, Fs, SplitMix64};
use mosaic_lsm::{Options, SyncMode};

use crate::durable::{NodeIdentity, NODE_FILE};
use crate::hints::HintStore;
use crate::local::{load_schema_on, schema_file_bytes};

const CRASHES_PER_SEED: usize = 4;

fn seeds(salt: u64) -> Vec<u64> {
    mosaic_env::crash::crash_seeds(100, salt)
}

fn data_dir() -> &'static Path {
    Path::new("/data")
}

/// A fresh file system with crash points spread over about `ops` calls; the mark counts
/// acknowledged versions.
fn crash_fs(seed: u64, ops: u64) -> (CrashFs, Arc<std::sync::atomic::AtomicU64>) {
    let mut rng = SplitMix64::new(seed);
    CrashFs::with_crash_points(&mut rng, data_dir(), CRASHES_PER_SEED, ops)
        .unwrap_or_else(|e| panic!("MOSAIC_SEED={seed}: making the file system: {e}"))
}

#[test]
fn the_node_identity_survives_a_power_loss_whole_or_not_at_all() {
    let mut images = 0;
    for seed in seeds(0x1d) {
        let (fs, acked) = crash_fs(seed, 12);
        let id = NodeIdentity::load_or_create_on(&fs, data_dir(), 16)
            .unwrap_or_else(|e| panic!("MOSAIC_SEED={seed}: {e:#}"));
        acked.store(1, Ordering::SeqCst);
        // A restart reads it back; calls here are crash points too.
        let again = NodeIdentity::load_or_create_on(&fs, data_dir(), 16).unwrap();
        assert_eq!(again, id);
        for (op, mark, image) in fs.take_images() {
            images += 1;
            let ctx = format!("MOSAIC_SEED={seed}: crash at file-system call {op}");
            let after =
                NodeIdentity::load_or_create_on(&image, data_dir(), 16).unwrap_or_else(|e| {
                    panic!("{ctx}: the node cannot start on what the crash left: {e:#}")
                });
            if mark == 1 {
                assert_eq!(after, id, "{ctx}: the node came back as another node");
            }
            // Whatever it is now, it stays: the identity was made durable before use.
            assert_eq!(
                NodeIdentity::load_or_create_on(&image, data_dir(), 16).unwrap(),
                after,
                "{ctx}"
            );
            assert!(image.exists(&data_dir().join(NODE_FILE)), "{ctx}");
        }
    }
    assert!(images > 0, "no crash point was reached");
}

/// Writes versions 1..=n of a file with `write`, acknowledging each; every image must read
/// back (with `read`) a version between the last acknowledged and the one being written.
fn versions_survive(
    salt: u64,
    ops: u64,
    n: u64,
    write: impl Fn(&CrashFs, u64),
    read: impl Fn(&CrashFs) -> Result<u64, String>,
) {
    let mut images = 0;
    for seed in seeds(salt) {
        let (fs, acked) = crash_fs(seed, ops);
        for v in 1..=n {
            write(&fs, v);
            acked.store(v, Ordering::SeqCst);
        }
        for (op, mark, image) in fs.take_images() {
            images += 1;
            let ctx = format!(
                "MOSAIC_SEED={seed}: crash at file-system call {op}, version {mark} acknowledged"
            );
            let got =
                read(&image).unwrap_or_else(|e| panic!("{ctx}: the file does not read back: {e}"));
            assert!(
                got >= mark && got <= mark + 1,
                "{ctx}: read back version {got}"
            );
        }
    }
    assert!(images > 0, "no crash point was reached");
}

#[test]
fn the_schema_file_survives_a_power_loss_at_its_last_acknowledged_epoch_or_later() {
    let catalog = Catalog::default();
    versions_survive(
        0x5c,
        40,
        8,
        |fs, v| {
            let bytes = schema_file_bytes(&catalog, v);
            mosaic_env::write_atomically(fs, &data_dir().join(crate::local::SCHEMA_FILE), &bytes)
                .unwrap();
        },
        |fs| {
            load_schema_on(fs, data_dir())
                .map(|(epoch, _)| epoch)
                .map_err(|e| format!("{e:#}"))
        },
    );
}

#[test]
fn the_saved_peers_survive_a_power_loss_whole() {
    let peers = |v: u64| -> Vec<EndpointState> {
        (0..v)
            .map(|i| EndpointState {
                endpoint: Endpoint::from(([127, 0, 0, 2 + i as u8], 7000)),
                generation: v,
                heartbeat: i,
                app: AppState {
                    host_id: mosaic_types::HostId([i as u8; 16]),
                    tokens: vec![i as i64 * 1000 - 7],
                    rpc_address: [127, 0, 0, 2 + i as u8].into(),
                    native_port: 9042,
                    admin_port: 7199,
                    data_center: "datacenter1".into(),
                    rack: "rack1".into(),
                    release_version: "4.1.10".into(),
                    schema_version: [v as u8; 16],
                    status: NodeStatus::Normal,
                    ring_status: Default::default(),
                    replacing: None,
                    load_bytes: v * 4096,
                },
            })
            .collect()
    };
    let path = data_dir().join("peers.json");
    versions_survive(
        0x9e,
        40,
        8,
        |fs, v| {
            let bytes = serde_json::to_vec(&peers(v)).unwrap();
            mosaic_env::write_atomically(fs, &path, &bytes).unwrap();
        },
        |fs| {
            // No file yet reads as no peers, as at a node's first start.
            let bytes = match fs.read_all(&path) {
                Ok(bytes) => bytes,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
                Err(e) => return Err(e.to_string()),
            };
            let states: Vec<EndpointState> =
                serde_json::from_slice(&bytes).map_err(|e| e.to_string())?;
            let v = states.len() as u64;
            if states.iter().any(|s| s.generation != v) {
                return Err(format!("a mix of versions: {states:?}"));
            }
            Ok(v)
        },
    );
}

#[test]
fn every_acknowledged_hint_survives_a_power_loss_and_none_is_invented() {
    const HINTS: u64 = 120;
    let target: Endpoint = "127.0.0.2:7000".parse().unwrap();
    let table = mosaic_types::TableId([7; 16]);
    let options = |fs: &CrashFs| Options {
        fs: Arc::new(fs.clone()),
        sync_mode: SyncMode::PerWrite,
        memtable_size_bytes: 4 << 10,
        table_size_bytes: 4 << 10,
        ..Options::default()
    };
    let mut images = 0;
    for seed in seeds(0x41) {
        let (fs, acked) = crash_fs(seed, 600);
        let store = HintStore::open(data_dir(), options(&fs), 0).unwrap();
        let mut delivered = 0;
        for i in 0..HINTS {
            let m = WireMutation {
                key: i.to_be_bytes().to_vec(),
                ts: i,
                fragment: vec![b'v'; 40],
            };
            store.store(target, table, vec![m]).unwrap();
            acked.store(i + 1, Ordering::SeqCst);
            // Deliver (delete) the oldest now and then, as the hint loop does.
            if i % 10 == 9 {
                for h in store.oldest(target, 3).unwrap() {
                    store.delete(target, h.id).unwrap();
                    delivered += 1;
                }
            }
        }
        store.close().unwrap();
        assert!(delivered > 0);
        for (op, mark, image) in fs.take_images() {
            images += 1;
            let ctx =
                format!("MOSAIC_SEED={seed}: crash at file-system call {op}, {mark} hints stored");
            let store = HintStore::open(data_dir(), options(&image), 0)
                .unwrap_or_else(|e| panic!("{ctx}: the hint store does not reopen: {e:#}"));
            let held = store.oldest(target, HINTS as usize + 1).unwrap();
            let keys: Vec<u64> = held
                .iter()
                .map(|h| {
                    let k = h
                        .mutations
                        .first()
                        .map(|m| m.key.clone())
                        .unwrap_or_default();
                    u64::from_be_bytes(
                        k.try_into()
                            .unwrap_or_else(|_| panic!("{ctx}: a hint holds a key never written")),
                    )
                })
                .collect();
            // Hints are delivered oldest first, three after every ten stored: with `mark`
            // stored, at most the oldest 3 × ⌊mark / 10⌋ were deleted, and every other
            // acknowledged hint is held.
            for i in 0..mark {
                let deletable = i < mark / 10 * 3;
                assert!(
                    keys.contains(&i) || deletable,
                    "{ctx}: acknowledged hint {i} was lost (held: {keys:?})"
                );
            }
            assert!(
                keys.iter().all(|&k| k <= mark),
                "{ctx}: holds a hint never acknowledged beyond the one in flight: {keys:?}"
            );
            assert!(
                held.windows(2).all(|w| w[0].id < w[1].id),
                "{ctx}: out of order"
            );
            assert_eq!(
                store.count(),
                held.len() as u64,
                "{ctx}: miscounted at open"
            );
            store.close().unwrap();
        }
    }
    assert!(images > 0, "no crash point was reached");
}
