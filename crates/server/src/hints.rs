//! Durable hints: writes kept for replicas that could not take them.
//!
//! Owns `DATA/.hints/`, one mosaic-lsm engine (the same WAL durability as the tables:
//! a hint is as safe as the write it stands for). A hint's key is the target's internode
//! address, a zero byte, and the hint id (big-endian, so a target's hints scan oldest
//! first); its value is an internode `Write` frame (checksummed). Ids are microsecond
//! timestamps made strictly increasing, and double as the engine timestamp of the put;
//! a replayed hint is deleted at `id + 1`. The set of targets with hints is kept in memory
//! (rebuilt at open) so the gossip loop can ask for it every round for free.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::ops::Bound;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use anyhow::{Context, Result};
use mosaic_cluster::env::Hint;
use mosaic_cluster::message::{decode_stored_frame, encode_frame, PROTOCOL_VERSION};
use mosaic_cluster::{Body, Endpoint, Envelope, Failure, TableKey, WireMutation};
use mosaic_lsm::{Db, Options};
use parking_lot::Mutex;

/// The hints directory under the data directory (a name no keyspace can have).
pub const HINTS_DIR: &str = ".hints";

/// The hint store (see the module doc).
pub struct HintStore {
    db: Db,
    last_id: AtomicU64,
    counts: Mutex<HashMap<Endpoint, u64>>,
}

fn prefix(target: Endpoint) -> Vec<u8> {
    let mut k = target.to_string().into_bytes();
    k.push(0);
    k
}

fn key(target: Endpoint, id: u64) -> Vec<u8> {
    let mut k = prefix(target);
    k.extend_from_slice(&id.to_be_bytes());
    k
}

/// The target and id of a hint key.
fn parse_key(k: &[u8]) -> Option<(Endpoint, u64)> {
    let zero = k.iter().position(|b| *b == 0)?;
    let target: SocketAddr = std::str::from_utf8(k.get(..zero)?).ok()?.parse().ok()?;
    let id: [u8; 8] = k.get(zero + 1..)?.try_into().ok()?;
    Some((target, u64::from_be_bytes(id)))
}

fn storage(e: impl std::fmt::Display) -> Failure {
    Failure::Storage(format!("hint store: {e}"))
}

impl HintStore {
    /// Opens (creating) the hint store under `data_dir`.
    pub fn open(data_dir: &Path, mut options: Options) -> Result<HintStore> {
        options.merge_operator = None;
        let dir = data_dir.join(HINTS_DIR);
        let db = Db::open(&dir, options).with_context(|| format!("opening {}", dir.display()))?;
        let mut counts: HashMap<Endpoint, u64> = HashMap::new();
        let mut last_id = 0;
        for item in db.scan(Bound::Unbounded, Bound::Unbounded)? {
            let (k, _) = item?;
            if let Some((target, id)) = parse_key(&k) {
                *counts.entry(target).or_default() += 1;
                last_id = last_id.max(id);
            }
        }
        Ok(HintStore {
            db,
            last_id: AtomicU64::new(last_id),
            counts: Mutex::new(counts),
        })
    }

    /// Stores one hint.
    pub fn store(
        &self,
        target: Endpoint,
        table: TableKey,
        mutations: Vec<WireMutation>,
    ) -> Result<(), Failure> {
        let now = u64::try_from(crate::local::now_micros()).unwrap_or(0);
        let id = match self
            .last_id
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |l| {
                Some(now.max(l.saturating_add(2)))
            }) {
            Ok(prev) | Err(prev) => now.max(prev.saturating_add(2)),
        };
        let frame = encode_frame(&Envelope {
            version: PROTOCOL_VERSION,
            from: target,
            id,
            body: Body::Write { table, mutations },
        });
        self.db.put(&key(target, id), id, &frame).map_err(storage)?;
        *self.counts.lock().entry(target).or_default() += 1;
        Ok(())
    }

    /// The oldest `limit` hints of `target`.
    pub fn oldest(&self, target: Endpoint, limit: usize) -> Result<Vec<Hint>, Failure> {
        let start = prefix(target);
        let mut end = start.clone();
        if let Some(last) = end.last_mut() {
            *last = 1;
        }
        let scan = self
            .db
            .scan(Bound::Included(&start), Bound::Excluded(&end))
            .map_err(storage)?;
        let mut out = Vec::new();
        for item in scan.take(limit) {
            let (k, entry) = item.map_err(storage)?;
            let Some((_, id)) = parse_key(&k) else {
                continue;
            };
            match decode_stored_frame(&entry.value) {
                Ok(Some((
                    Envelope {
                        body: Body::Write { table, mutations },
                        ..
                    },
                    _,
                ))) => out.push(Hint {
                    id,
                    table,
                    mutations,
                }),
                // A damaged hint cannot be delivered; drop it rather than block the rest.
                _ => {
                    tracing::warn!(
                        target: "mosaic::hints",
                        %target,
                        id,
                        "dropping an undecodable hint"
                    );
                    self.delete(target, id)?;
                }
            }
        }
        Ok(out)
    }

    /// Deletes a delivered hint.
    pub fn delete(&self, target: Endpoint, id: u64) -> Result<(), Failure> {
        self.db
            .delete(&key(target, id), id.saturating_add(1))
            .map_err(storage)?;
        let mut counts = self.counts.lock();
        if let Some(c) = counts.get_mut(&target) {
            *c = c.saturating_sub(1);
            if *c == 0 {
                counts.remove(&target);
            }
        }
        Ok(())
    }

    /// Targets with hints.
    pub fn targets(&self) -> Vec<Endpoint> {
        self.counts.lock().keys().copied().collect()
    }

    /// Hints held, all targets.
    pub fn count(&self) -> u64 {
        self.counts.lock().values().sum()
    }

    /// Closes the engine (syncing its log). A running node never closes it: its log is
    /// synced like the tables', and a process exit loses nothing the OS has.
    #[cfg(test)]
    pub fn close(self) -> Result<()> {
        self.db.close().context("closing the hint store")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(k: &[u8]) -> WireMutation {
        WireMutation {
            key: k.to_vec(),
            ts: 5,
            fragment: b"f".to_vec(),
        }
    }

    #[test]
    fn hints_survive_reopen_in_order_and_are_deleted() {
        let dir = tempfile::tempdir().unwrap();
        let a: Endpoint = "127.0.0.2:7000".parse().unwrap();
        let b: Endpoint = "127.0.0.3:7000".parse().unwrap();
        {
            let h = HintStore::open(dir.path(), Options::default()).unwrap();
            for i in 0..5u8 {
                h.store(a, mosaic_types::TableId([1; 16]), vec![m(&[i])])
                    .unwrap();
            }
            h.store(b, mosaic_types::TableId([2; 16]), vec![m(b"x")])
                .unwrap();
            assert_eq!(h.count(), 6);
            h.close().unwrap();
        }
        let h = HintStore::open(dir.path(), Options::default()).unwrap();
        let mut targets = h.targets();
        targets.sort();
        assert_eq!(targets, vec![a, b]);
        let first = h.oldest(a, 3).unwrap();
        assert_eq!(
            first
                .iter()
                .map(|x| x.mutations[0].key.clone())
                .collect::<Vec<_>>(),
            vec![vec![0], vec![1], vec![2]]
        );
        for x in h.oldest(a, 10).unwrap() {
            h.delete(a, x.id).unwrap();
        }
        assert!(h.oldest(a, 10).unwrap().is_empty());
        assert_eq!(h.targets(), vec![b]);
        // New hints after a reopen still sort after the old ones.
        h.store(b, mosaic_types::TableId([2; 16]), vec![m(b"y")])
            .unwrap();
        let keys: Vec<_> = h
            .oldest(b, 10)
            .unwrap()
            .into_iter()
            .map(|x| x.mutations[0].key.clone())
            .collect();
        assert_eq!(keys, vec![b"x".to_vec(), b"y".to_vec()]);
    }
}
