//! Durable hints: writes kept for replicas that could not take them.
//!
//! Owns `DATA/.hints/`, one mosaic-lsm engine (the same WAL durability as the tables:
//! a hint is as safe as the write it stands for). A hint's key is the target's internode
//! address, a zero byte, and the hint id (big-endian, so a target's hints scan oldest
//! first); its value is an internode `Write` frame (checksummed). Ids are microsecond
//! timestamps made strictly increasing, and double as the engine timestamp of the put;
//! a replayed hint is deleted at `id + 1`. The set of targets with hints is kept in memory
//! (rebuilt at open) so the gossip loop can ask for it every round for free, with the
//! bytes each target's hints hold: past `[cluster] max_hints_size_per_host_bytes` a new hint
//! for that target is dropped (Cassandra's `max_hints_size_per_host`), so a long-dead peer
//! cannot fill the data disk; the write it stood for still succeeds at its consistency level
//! and repair brings the replica up to date.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::ops::Bound;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use mosaic_cluster::env::Hint;
use mosaic_cluster::message::{decode_stored_frame, encode_frame, PROTOCOL_VERSION};
use mosaic_cluster::{Body, Endpoint, Envelope, Failure, TableKey, WireMutation};
use mosaic_lsm::{Db, Options};
use parking_lot::Mutex;

/// The hints directory under the data directory (a name no keyspace can have).
pub const HINTS_DIR: &str = ".hints";

/// How often at most the drop of hints past the per-host cap is logged.
const DROP_LOG_INTERVAL: Duration = Duration::from_secs(10);

/// What one target's hints hold.
#[derive(Clone, Copy, Debug, Default)]
struct Held {
    count: u64,
    bytes: u64,
}

/// The hint store (see the module doc).
pub struct HintStore {
    db: Db,
    last_id: AtomicU64,
    held: Mutex<HashMap<Endpoint, Held>>,
    /// Bytes of hints kept per target (0: no cap).
    bytes_max_per_host: u64,
    /// Hints dropped at the cap since the node started.
    dropped: AtomicU64,
    /// When a drop was last logged, and the drops since.
    drop_log: Mutex<(Option<Instant>, u64)>,
}

/// What one hint costs against the per-host cap: its key and its frame.
fn hint_bytes(key: &[u8], value: &[u8]) -> u64 {
    (key.len() + value.len()) as u64
}

fn prefix(target: Endpoint) -> Vec<u8> {
    let mut k = target.to_string().into_bytes();
    k.push(0);
    k
}

/// The keys of `target`'s hints: `[start, end)`.
fn key_range(target: Endpoint) -> (Vec<u8>, Vec<u8>) {
    let start = prefix(target);
    let mut end = start.clone();
    if let Some(last) = end.last_mut() {
        *last = 1;
    }
    (start, end)
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
    /// Opens (creating) the hint store under `data_dir`, keeping at most
    /// `bytes_max_per_host` bytes of hints per target (0: no cap).
    pub fn open(
        data_dir: &Path,
        mut options: Options,
        bytes_max_per_host: u64,
    ) -> Result<HintStore> {
        options.merge_operator = None;
        let dir = data_dir.join(HINTS_DIR);
        let db = Db::open(&dir, options).with_context(|| format!("opening {}", dir.display()))?;
        let mut held: HashMap<Endpoint, Held> = HashMap::new();
        let mut last_id = 0;
        for item in db.scan(Bound::Unbounded, Bound::Unbounded)? {
            let (k, entry) = item?;
            if let Some((target, id)) = parse_key(&k) {
                let h = held.entry(target).or_default();
                h.count += 1;
                h.bytes += hint_bytes(&k, &entry.value);
                last_id = last_id.max(id);
            }
        }
        Ok(HintStore {
            db,
            last_id: AtomicU64::new(last_id),
            held: Mutex::new(held),
            bytes_max_per_host,
            dropped: AtomicU64::new(0),
            drop_log: Mutex::new((None, 0)),
        })
    }

    /// Reserves `bytes` of `target`'s allowance for a new hint; false at the cap.
    fn reserve(&self, target: Endpoint, bytes: u64) -> bool {
        let mut held = self.held.lock();
        let h = held.entry(target).or_default();
        if self.bytes_max_per_host > 0 && h.bytes.saturating_add(bytes) > self.bytes_max_per_host {
            if h.count == 0 {
                held.remove(&target);
            }
            return false;
        }
        h.count += 1;
        h.bytes += bytes;
        true
    }

    /// Gives back what one hint of `target` held.
    fn release(&self, target: Endpoint, bytes: u64) {
        let mut held = self.held.lock();
        if let Some(h) = held.get_mut(&target) {
            h.count = h.count.saturating_sub(1);
            h.bytes = h.bytes.saturating_sub(bytes);
            if h.count == 0 {
                held.remove(&target);
            }
        }
    }

    /// Counts a hint dropped at the cap, logging at most every [`DROP_LOG_INTERVAL`].
    fn note_dropped(&self, target: Endpoint) {
        self.dropped.fetch_add(1, Ordering::Relaxed);
        let mut log = self.drop_log.lock();
        log.1 += 1;
        if log.0.is_none_or(|at| at.elapsed() >= DROP_LOG_INTERVAL) {
            tracing::warn!(
                target: "mosaic::hints",
                %target,
                dropped = log.1,
                bytes_max_per_host = self.bytes_max_per_host,
                "hints dropped: the node's hints reached max_hints_size_per_host_bytes; \
                 run `mosaic repair` on it once it is back"
            );
            *log = (Some(Instant::now()), 0);
        }
    }

    /// Stores one hint; `Failure::Overloaded` when `target`'s hints are at the cap (the
    /// hint is dropped, counted and logged).
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
        let k = key(target, id);
        let bytes = hint_bytes(&k, &frame);
        if !self.reserve(target, bytes) {
            self.note_dropped(target);
            return Err(Failure::Overloaded);
        }
        if let Err(e) = self.db.put(&k, id, &frame) {
            self.release(target, bytes);
            return Err(storage(e));
        }
        Ok(())
    }

    /// The oldest `limit` hints of `target`.
    pub fn oldest(&self, target: Endpoint, limit: usize) -> Result<Vec<Hint>, Failure> {
        let (start, end) = key_range(target);
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
        let k = key(target, id);
        // Its size, to give back (a hint already deleted gives back nothing).
        let Some(entry) = self.db.get(&k).map_err(storage)? else {
            return Ok(());
        };
        self.db.delete(&k, id.saturating_add(1)).map_err(storage)?;
        self.release(target, hint_bytes(&k, &entry.value));
        Ok(())
    }

    /// Deletes every hint of `target` (a node that left the ring: none will be
    /// delivered); how many there were.
    pub fn drop_all(&self, target: Endpoint) -> Result<u64, Failure> {
        let (start, end) = key_range(target);
        let ids: Vec<u64> = self
            .db
            .scan(Bound::Included(&start), Bound::Excluded(&end))
            .map_err(storage)?
            .map(|item| item.map(|(k, _)| parse_key(&k).map(|(_, id)| id)))
            .collect::<Result<Vec<_>, _>>()
            .map_err(storage)?
            .into_iter()
            .flatten()
            .collect();
        for id in &ids {
            self.delete(target, *id)?;
        }
        Ok(ids.len() as u64)
    }

    /// Targets with hints.
    pub fn targets(&self) -> Vec<Endpoint> {
        self.held.lock().keys().copied().collect()
    }

    /// Hints held, all targets.
    pub fn count(&self) -> u64 {
        self.held.lock().values().map(|h| h.count).sum()
    }

    /// Bytes of hints held, all targets.
    pub fn bytes(&self) -> u64 {
        self.held.lock().values().map(|h| h.bytes).sum()
    }

    /// Bytes of hints held for the target holding most.
    pub fn bytes_max_held(&self) -> u64 {
        self.held
            .lock()
            .values()
            .map(|h| h.bytes)
            .max()
            .unwrap_or(0)
    }

    /// The per-target cap (0: none).
    pub fn bytes_max_per_host(&self) -> u64 {
        self.bytes_max_per_host
    }

    /// Hints dropped at the per-target cap since the node started.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
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
            let h = HintStore::open(dir.path(), Options::default(), 0).unwrap();
            for i in 0..5u8 {
                h.store(a, mosaic_types::TableId([1; 16]), vec![m(&[i])])
                    .unwrap();
            }
            h.store(b, mosaic_types::TableId([2; 16]), vec![m(b"x")])
                .unwrap();
            assert_eq!(h.count(), 6);
            h.close().unwrap();
        }
        let h = HintStore::open(dir.path(), Options::default(), 0).unwrap();
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

    #[test]
    fn hints_past_the_per_host_cap_are_dropped_and_room_comes_back_on_delivery() {
        let dir = tempfile::tempdir().unwrap();
        let a: Endpoint = "127.0.0.2:7000".parse().unwrap();
        let b: Endpoint = "127.0.0.3:7000".parse().unwrap();
        let t = mosaic_types::TableId([1; 16]);
        let big = |i: u8| WireMutation {
            key: vec![i],
            ts: 5,
            fragment: vec![i; 1000],
        };
        // Room for three hints of about 1 kB each per target.
        let cap = 3_500;
        {
            let h = HintStore::open(dir.path(), Options::default(), cap).unwrap();
            for i in 0..3u8 {
                h.store(a, t, vec![big(i)]).unwrap();
            }
            assert_eq!(h.store(a, t, vec![big(3)]), Err(Failure::Overloaded));
            assert_eq!(h.store(a, t, vec![big(4)]), Err(Failure::Overloaded));
            assert_eq!((h.count(), h.dropped()), (3, 2));
            assert!(h.bytes() <= cap && h.bytes() > 3_000, "{}", h.bytes());
            // The cap is per target: another target still gets its hints.
            h.store(b, t, vec![big(9)]).unwrap();
            h.close().unwrap();
        }
        // The bytes held are counted again at open: the cap holds across restarts.
        let h = HintStore::open(dir.path(), Options::default(), cap).unwrap();
        assert_eq!(h.store(a, t, vec![big(5)]), Err(Failure::Overloaded));
        // A delivered hint makes room for one more.
        let oldest = h.oldest(a, 1).unwrap();
        h.delete(a, oldest[0].id).unwrap();
        h.delete(a, oldest[0].id).unwrap();
        h.store(a, t, vec![big(6)]).unwrap();
        let keys: Vec<_> = h
            .oldest(a, 10)
            .unwrap()
            .into_iter()
            .map(|x| x.mutations[0].key.clone())
            .collect();
        assert_eq!(keys, vec![vec![1], vec![2], vec![6]]);
        assert_eq!(h.count(), 4);
    }

    #[test]
    fn dropping_a_targets_hints_keeps_the_others_and_holds_across_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let gone: Endpoint = "127.0.0.2:7000".parse().unwrap();
        let kept: Endpoint = "127.0.0.3:7000".parse().unwrap();
        let t = mosaic_types::TableId([1; 16]);
        {
            let h = HintStore::open(dir.path(), Options::default(), 0).unwrap();
            for i in 0..40u8 {
                h.store(gone, t, vec![m(&[i])]).unwrap();
            }
            h.store(kept, t, vec![m(b"k")]).unwrap();
            assert_eq!(h.drop_all(gone).unwrap(), 40);
            assert_eq!(h.targets(), vec![kept]);
            assert_eq!(h.count(), 1);
            assert_eq!(h.drop_all(gone).unwrap(), 0);
            h.close().unwrap();
        }
        let h = HintStore::open(dir.path(), Options::default(), 0).unwrap();
        assert_eq!(h.targets(), vec![kept]);
        assert!(h.oldest(gone, 10).unwrap().is_empty());
        assert_eq!(h.oldest(kept, 10).unwrap().len(), 1);
    }
}
