//! Item-size oracles (Hector's workload oracles) and the tags a coordinator derives from
//! them for the replicas' local queues.
//!
//! An oracle estimates how large the answer to a read of a partition will be. Two exist,
//! named by id in `[scheduling] size_oracle`:
//!
//! - `item-size` ([`LearnedSizes`]): learned from answers — every data answer the
//!   coordinator receives records its size under its partition's token, in a fixed array
//!   of `slots` counters (bounded memory; two partitions sharing a slot share an estimate,
//!   the latest answer's);
//! - `static` ([`StaticSizes`]): loaded from a file of `TOKEN BYTES` lines (a token as
//!   CQL's `token()` returns it; `#` starts a comment), for workloads known beforehand.
//!
//! [`Tagger`] turns an estimate into the read's tags ([`crate::local_queue::ReadClass`]):
//! its expected size, and a priority — how many of `priority_thresholds` it reaches, so
//! with `[65536]` reads of items under 64 KiB are priority 0 and the others 1 (Hector's
//! experiment). A read whose size no oracle knows is priority 0 and carries no size.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};

use serde::{Deserialize, Serialize};
use xxhash_rust::xxh3::xxh3_64_with_seed;

use crate::local_queue::ReadClass;
use crate::message::{TableKey, Tag};

/// `[scheduling] size_oracle`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SizeOracleId {
    /// Reads carry no size or priority tags.
    #[default]
    None,
    /// Sizes learned from answers ([`LearnedSizes`]).
    ItemSize,
    /// Sizes from a file ([`StaticSizes`]).
    Static,
}

/// `[scheduling.item-size]`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ItemSizeParams {
    /// Counters (4 bytes each).
    pub slots: usize,
}

impl Default for ItemSizeParams {
    fn default() -> Self {
        ItemSizeParams { slots: 1 << 16 }
    }
}

/// `[scheduling.static]`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct StaticParams {
    /// The file of `TOKEN BYTES` lines (a relative path is relative to the config file).
    pub file: String,
}

/// Estimates the size of a read's answer.
pub trait SizeOracle: Send + Sync {
    /// The oracle's id in the config.
    fn id(&self) -> &'static str;
    /// The expected answer size of a read of `table` at `token`, if known.
    fn size(&self, table: TableKey, token: i64) -> Option<u64>;
    /// An answer of `bytes` came back for that read.
    fn learn(&self, table: TableKey, token: i64, bytes: u64) {
        let _ = (table, token, bytes);
    }
}

/// Sizes learned from answers, in a fixed array of counters (see the module doc).
pub struct LearnedSizes {
    /// Bytes of the latest answer hashed to each slot, saturated to `u32::MAX - 1`, plus
    /// one (0: nothing learned).
    slots: Vec<AtomicU32>,
}

impl LearnedSizes {
    /// An oracle of `params.slots` counters.
    pub fn new(params: &ItemSizeParams) -> LearnedSizes {
        LearnedSizes {
            slots: (0..params.slots.max(1))
                .map(|_| AtomicU32::new(0))
                .collect(),
        }
    }

    fn slot(&self, table: TableKey, token: i64) -> &AtomicU32 {
        let h = xxh3_64_with_seed(&token.to_le_bytes(), u64::from_le_bytes(prefix(&table)));
        &self.slots[(h % self.slots.len() as u64) as usize]
    }
}

fn prefix(table: &TableKey) -> [u8; 8] {
    let mut p = [0u8; 8];
    p.copy_from_slice(&table.0[..8]);
    p
}

impl SizeOracle for LearnedSizes {
    fn id(&self) -> &'static str {
        "item-size"
    }

    fn size(&self, table: TableKey, token: i64) -> Option<u64> {
        match self.slot(table, token).load(Ordering::Relaxed) {
            0 => None,
            v => Some(u64::from(v - 1)),
        }
    }

    fn learn(&self, table: TableKey, token: i64, bytes: u64) {
        let v = bytes.min(u64::from(u32::MAX - 1)) as u32 + 1;
        self.slot(table, token).store(v, Ordering::Relaxed);
    }
}

/// Sizes known beforehand, by token (see the module doc).
#[derive(Debug, Default)]
pub struct StaticSizes {
    by_token: HashMap<i64, u64>,
}

impl StaticSizes {
    /// Parses `TOKEN BYTES` lines; an error names the first bad line.
    pub fn parse(text: &str) -> Result<StaticSizes, String> {
        let mut by_token = HashMap::new();
        for (i, line) in text.lines().enumerate() {
            let line = line.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            let mut fields = line.split_whitespace();
            let parsed = match (fields.next(), fields.next(), fields.next()) {
                (Some(t), Some(b), None) => t.parse::<i64>().ok().zip(b.parse::<u64>().ok()),
                _ => None,
            };
            let Some((token, bytes)) = parsed else {
                return Err(format!(
                    "line {}: expected `TOKEN BYTES` (two integers), found `{line}`",
                    i + 1
                ));
            };
            by_token.insert(token, bytes);
        }
        Ok(StaticSizes { by_token })
    }

    /// Tokens known.
    pub fn len(&self) -> usize {
        self.by_token.len()
    }

    /// Whether it knows no token.
    pub fn is_empty(&self) -> bool {
        self.by_token.is_empty()
    }
}

impl SizeOracle for StaticSizes {
    fn id(&self) -> &'static str {
        "static"
    }

    fn size(&self, _table: TableKey, token: i64) -> Option<u64> {
        self.by_token.get(&token).copied()
    }
}

/// Derives a read's tags from an oracle (see the module doc).
pub struct Tagger {
    oracle: Box<dyn SizeOracle>,
    thresholds: Vec<u64>,
}

impl Tagger {
    /// Tags from `oracle`'s estimates, a priority level per threshold reached.
    pub fn new(oracle: Box<dyn SizeOracle>, mut thresholds: Vec<u64>) -> Tagger {
        thresholds.sort_unstable();
        Tagger { oracle, thresholds }
    }

    /// The oracle's id.
    pub fn oracle_id(&self) -> &'static str {
        self.oracle.id()
    }

    /// The class of a read of `table` at `token`.
    pub fn class(&self, table: TableKey, token: i64) -> ReadClass {
        match self.oracle.size(table, token) {
            None => ReadClass::default(),
            Some(size) => ReadClass {
                priority: self
                    .thresholds
                    .iter()
                    .take_while(|t| size >= **t)
                    .count()
                    .min(usize::from(u8::MAX)) as u8,
                size: Some(size),
            },
        }
    }

    /// The tags of that read.
    pub fn tags(&self, table: TableKey, token: i64) -> Vec<Tag> {
        self.class(table, token).tags()
    }

    /// An answer of `bytes` came back for a read of `table` at `token`.
    pub fn learn(&self, table: TableKey, token: i64, bytes: u64) {
        self.oracle.learn(table, token, bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: TableKey = mosaic_types::TableId([7; 16]);

    #[test]
    fn learned_sizes_follow_the_latest_answer_per_partition() {
        let o = LearnedSizes::new(&ItemSizeParams { slots: 1024 });
        assert_eq!(o.size(T, 5), None);
        o.learn(T, 5, 1000);
        assert_eq!(o.size(T, 5), Some(1000));
        o.learn(T, 5, 0);
        assert_eq!(o.size(T, 5), Some(0));
        o.learn(T, 5, u64::MAX);
        assert_eq!(o.size(T, 5), Some(u64::from(u32::MAX - 1)));
        // Another table's partition at the same token is another item.
        assert_eq!(o.size(mosaic_types::TableId([8; 16]), 5), None);
        // Memory is the slots, whatever the number of partitions.
        for t in 0..100_000 {
            o.learn(T, t, 10);
        }
        assert_eq!(o.slots.len(), 1024);
    }

    #[test]
    fn static_sizes_parse_tokens_and_refuse_bad_lines() {
        let o = StaticSizes::parse("# token bytes\n-9 1048576\n12 1024 # small\n\n").unwrap();
        assert_eq!(o.len(), 2);
        assert_eq!(o.size(T, -9), Some(1 << 20));
        assert_eq!(o.size(T, 12), Some(1024));
        assert_eq!(o.size(T, 13), None);
        for bad in ["1", "1 2 3", "x 5", "5 -1"] {
            let err = StaticSizes::parse(&format!("0 1\n{bad}\n")).unwrap_err();
            assert!(err.starts_with("line 2:"), "{bad}: {err}");
        }
    }

    #[test]
    fn priorities_count_the_thresholds_a_size_reaches() {
        let o = StaticSizes::parse("1 100\n2 65536\n3 2000000\n").unwrap();
        let t = Tagger::new(Box::new(o), vec![1 << 20, 65536]);
        let cases = [
            (1, 0, Some(100)),
            (2, 1, Some(65536)),
            (3, 2, Some(2_000_000)),
            (4, 0, None),
        ];
        for (token, priority, size) in cases {
            assert_eq!(t.class(T, token), ReadClass { priority, size }, "{token}");
        }
        assert_eq!(ReadClass::from_tags(&t.tags(T, 3)), t.class(T, 3));
    }
}
