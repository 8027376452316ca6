//! The end-of-run check of `mosaic-bench lwt run`: what every key's operations were
//! acknowledged to do, against how the key changed.

use std::collections::{BTreeMap, BTreeSet};

use anyhow::{bail, Context};
use futures::TryStreamExt;
use scylla::client::session::Session;
use scylla::statement::prepared::PreparedStatement;
use scylla::value::{CqlValue, Row};
use serde_json::{json, Value};

use super::{Job, LwtWorker};
use crate::phase::PhaseResult;

/// Check failures kept in the report, at most.
const VIOLATIONS_KEPT: usize = 10;

/// What happened to one key.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct KeyCounts {
    /// Transactions applied, rows created, increments acknowledged.
    pub(super) applied: u64,
    /// Transactions answered `[applied] = False`.
    pub(super) not_applied: u64,
    /// Writes that failed: they may or may not have taken effect.
    pub(super) failed: u64,
}

impl KeyCounts {
    /// Each count of `self` and `o` combined by `f`.
    pub(super) fn zip(&self, o: &KeyCounts, f: fn(u64, u64) -> u64) -> KeyCounts {
        KeyCounts {
            applied: f(self.applied, o.applied),
            not_applied: f(self.not_applied, o.not_applied),
            failed: f(self.failed, o.failed),
        }
    }
}

pub(super) fn as_i64(v: Option<&CqlValue>) -> Option<i64> {
    match v? {
        CqlValue::BigInt(v) => Some(*v),
        CqlValue::Counter(c) => Some(c.0),
        _ => None,
    }
}

/// Every key's counts, summed over the workers.
pub(super) fn counts_of(workers: &[LwtWorker]) -> BTreeMap<i32, KeyCounts> {
    let mut all = BTreeMap::<i32, KeyCounts>::new();
    for w in workers {
        for (k, c) in &w.counts {
            let sum = all.entry(*k).or_default();
            *sum = sum.zip(c, u64::wrapping_add);
        }
    }
    all
}

pub(super) fn total(counts: &BTreeMap<i32, KeyCounts>) -> KeyCounts {
    let sum = |a: KeyCounts, c: &KeyCounts| a.zip(c, u64::wrapping_add);
    counts.values().fold(KeyCounts::default(), sum)
}

/// Every row of a table read at QUORUM: `k` and its bigint or counter value.
pub(super) async fn scan(
    session: &Session,
    statement: &PreparedStatement,
) -> anyhow::Result<BTreeMap<i32, i64>> {
    let mut rows = session
        .execute_iter(statement.clone(), ())
        .await
        .context("scanning the table")?
        .rows_stream::<Row>()
        .context("scanning the table")?;
    let mut values = BTreeMap::new();
    while let Some(row) = rows.try_next().await.context("scanning the table")? {
        if let Some(Some(CqlValue::Int(k))) = row.columns.first() {
            values.insert(
                *k,
                as_i64(row.columns.get(1).and_then(Option::as_ref)).unwrap_or(0),
            );
        }
    }
    Ok(values)
}

/// Keys whose change from `before` to `after` lies outside what was acknowledged (at
/// least) and acknowledged or failed (at most), described; and how many there were.
fn violations(
    before: &BTreeMap<i32, i64>,
    after: &BTreeMap<i32, i64>,
    counts: &BTreeMap<i32, KeyCounts>,
) -> (usize, Vec<String>) {
    let mut n = 0;
    let mut kept = Vec::new();
    let keys = after.keys().chain(counts.keys()).collect::<BTreeSet<_>>();
    for k in keys {
        let c = counts.get(k).copied().unwrap_or_default();
        let delta = after.get(k).copied().unwrap_or(0) - before.get(k).copied().unwrap_or(0);
        let (lo, hi) = (c.applied as i64, (c.applied + c.failed) as i64);
        if !(lo..=hi).contains(&delta) {
            n += 1;
            if kept.len() < VIOLATIONS_KEPT {
                kept.push(format!(
                    "k = {k}: changed by {delta}, acknowledged {lo}, failed {}",
                    c.failed
                ));
            }
        }
    }
    (n, kept)
}

/// Reads at SERIAL every key with a failed write (finishing what a timeout left), then the
/// whole table at QUORUM, and compares every key's change with what was acknowledged.
pub(super) async fn check(
    result: &PhaseResult<LwtWorker>,
    before: &BTreeMap<i32, i64>,
    scan_statement: &PreparedStatement,
) -> anyhow::Result<(String, Value)> {
    let workers = &result.workers;
    let counts = counts_of(workers);
    let Some(w) = workers.first() else {
        bail!("no workers");
    };
    let counter = w.job == Job::Counter;
    let mut finished = 0u64;
    if !counter {
        for (k, _) in counts.iter().filter(|(_, c)| c.failed > 0) {
            // Retried: a round under contention may need more than one try.
            for _ in 0..10 {
                if w.serial_read(*k).await.is_ok() {
                    finished += 1;
                    break;
                }
            }
        }
    }
    let after = scan(&w.shared.session, scan_statement).await?;
    let (n, kept) = violations(before, &after, &counts);
    let t = total(&counts);
    let change: i64 = after.values().sum::<i64>() - before.values().sum::<i64>();
    let mut text = format!(
        "check: {} keys changed by {change} in all, acknowledged {} (warm-up included), failed {}; \
         {finished} keys with a failed write read at SERIAL first; {}\n",
        counts.len(),
        t.applied,
        t.failed,
        if n == 0 { "every key within bounds".to_owned() } else { format!("{n} keys OUT OF BOUNDS") }
    );
    for v in &kept {
        text += &format!("check failed: {v}\n");
    }
    let json = json!({
        "ok": n == 0, "keys_touched": counts.len(), "change": change,
        "acknowledged": t.applied, "not_applied": t.not_applied, "failed": t.failed,
        "violations": n, "violations_kept": kept,
        "result_errors": result.result_errors,
    });
    Ok((text, json))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kc(applied: u64, not_applied: u64, failed: u64) -> KeyCounts {
        KeyCounts {
            applied,
            not_applied,
            failed,
        }
    }

    #[test]
    fn a_change_must_lie_between_acknowledged_and_attempted() {
        let before = BTreeMap::from([(1, 5), (2, 0), (3, 7)]);
        let counts = BTreeMap::from([(1, kc(3, 9, 0)), (2, kc(1, 0, 2))]);
        // Key 2 took one of its two failed writes; key 3 was not touched.
        let ok = BTreeMap::from([(1, 8), (2, 2), (3, 7)]);
        assert_eq!(violations(&before, &ok, &counts), (0, vec![]));
        // Key 1 lost an update, key 3 changed untouched, key 2 took more than it was sent.
        let bad = BTreeMap::from([(1, 7), (2, 4), (3, 8)]);
        let (n, kept) = violations(&before, &bad, &counts);
        assert_eq!(n, 3);
        assert_eq!(kept[0], "k = 1: changed by 2, acknowledged 3, failed 0");
        // A counter absent before and after counts as zero.
        let counts = BTreeMap::from([(4, kc(1, 0, 0))]);
        assert_eq!(violations(&BTreeMap::new(), &BTreeMap::new(), &counts).0, 1);
    }
}
