//! Leveled compaction: which tables to merge next, as a pure decision over a read-only view
//! of the levels. The engine executes the decision elsewhere (`db.rs`), so the policy is
//! tested by tables of cases without touching a disk.

use std::ops::Range;

use crate::options::Options;

/// What the picker knows about one table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TableView {
    /// Table id.
    pub id: u64,
    /// Size in bytes.
    pub size_bytes: u64,
    /// Smallest user key.
    pub smallest: Vec<u8>,
    /// Largest user key.
    pub largest: Vec<u8>,
    /// Already part of a running compaction.
    pub busy: bool,
}

impl TableView {
    fn overlaps(&self, lo: &[u8], hi: &[u8]) -> bool {
        self.smallest.as_slice() <= hi && self.largest.as_slice() >= lo
    }
}

/// A compaction to run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Task {
    /// Level read from.
    pub level: usize,
    /// Level written to.
    pub output_level: usize,
    /// Tables of `level`.
    pub upper: Vec<u64>,
    /// Overlapping tables of `output_level`.
    pub lower: Vec<u64>,
    /// Move the single upper table down without rewriting it.
    pub trivial_move: bool,
    /// A two-layer log's split (see [`crate::split`]): `upper` are global-log segments,
    /// `lower` the runs of the range groups merge-sorted with it; outputs go to the groups
    /// their keys belong to.
    pub split: bool,
}

/// Target bytes per level (index 0 unused) from the options' level policy.
pub fn level_targets(levels: &[Vec<TableView>], opts: &Options) -> Vec<u64> {
    let bytes: Vec<u64> = levels
        .iter()
        .map(|l| l.iter().map(|t| t.size_bytes).sum())
        .collect();
    (0..levels.len())
        .map(|l| {
            if l == 0 {
                0
            } else {
                opts.level_policy.target_bytes(l, &bytes, opts)
            }
        })
        .collect()
}

/// Picks the most urgent compaction, if any level is over its target.
///
/// `cursors[l]` is the largest key of the last table compacted out of level `l`; tables are
/// taken round-robin from there so every key range gets its turn.
pub fn pick(levels: &[Vec<TableView>], opts: &Options, cursors: &[Vec<u8>]) -> Option<Task> {
    let n = levels.len();
    if n < 2 {
        return None;
    }
    let targets = level_targets(levels, opts);
    let bytes: Vec<u64> = levels
        .iter()
        .map(|l| l.iter().map(|t| t.size_bytes).sum())
        .collect();
    let mut scored: Vec<(f64, usize)> = Vec::new();
    if let Some(l0) = levels.first() {
        let count = l0.iter().filter(|t| !t.busy).count();
        scored.push((
            count as f64 / opts.level0_compaction_trigger.max(1) as f64,
            0,
        ));
    }
    for l in 1..n - 1 {
        let size = bytes.get(l).copied().unwrap_or(0);
        let target = targets.get(l).copied().unwrap_or(0);
        let score = if size == 0 {
            0.0
        } else if target == 0 {
            f64::MAX
        } else {
            size as f64 / target as f64
        };
        scored.push((score, l));
    }
    scored.sort_by(|a, b| b.0.total_cmp(&a.0));
    for (score, level) in scored {
        if score < 1.0 {
            break;
        }
        let task = if level == 0 {
            pick_level0(levels, &targets)
        } else {
            pick_level(
                levels,
                level,
                cursors.get(level).map(Vec::as_slice).unwrap_or(&[]),
            )
        };
        if task.is_some() {
            return task;
        }
    }
    None
}

/// The level that level-0 tables compact into: the first level with data or a target.
fn base_level(levels: &[Vec<TableView>], targets: &[u64]) -> usize {
    let last = levels.len() - 1;
    (1..last)
        .find(|&l| {
            levels.get(l).is_some_and(|t| !t.is_empty()) || targets.get(l).is_some_and(|t| *t > 0)
        })
        .unwrap_or(last)
}

fn key_range<'a>(tables: impl Iterator<Item = &'a TableView>) -> Option<(Vec<u8>, Vec<u8>)> {
    let mut range: Option<(Vec<u8>, Vec<u8>)> = None;
    for t in tables {
        range = Some(match range {
            None => (t.smallest.clone(), t.largest.clone()),
            Some((lo, hi)) => (lo.min(t.smallest.clone()), hi.max(t.largest.clone())),
        });
    }
    range
}

fn pick_level0(levels: &[Vec<TableView>], targets: &[u64]) -> Option<Task> {
    let l0 = levels.first()?;
    // Level-0 tables overlap: while one compaction of them runs, another would reorder them.
    if l0.is_empty() || l0.iter().any(|t| t.busy) {
        return None;
    }
    let output_level = base_level(levels, targets);
    let (lo, hi) = key_range(l0.iter())?;
    let lower: Vec<&TableView> = levels
        .get(output_level)?
        .iter()
        .filter(|t| t.overlaps(&lo, &hi))
        .collect();
    if lower.iter().any(|t| t.busy) {
        return None;
    }
    let trivial_move = l0.len() == 1 && lower.is_empty();
    Some(Task {
        level: 0,
        output_level,
        upper: l0.iter().map(|t| t.id).collect(),
        lower: lower.iter().map(|t| t.id).collect(),
        trivial_move,
        split: false,
    })
}

/// Picks the table of `level` whose compaction rewrites the fewest bytes of the level below
/// per byte moved down (RocksDB's `kMinOverlappingRatio`), which keeps write amplification
/// low; among equals, the first at or after the round-robin cursor.
fn pick_level(levels: &[Vec<TableView>], level: usize, cursor: &[u8]) -> Option<Task> {
    let tables = levels.get(level)?;
    let below = levels.get(level + 1)?;
    let start = tables.partition_point(|t| t.largest.as_slice() <= cursor);
    let order = tables
        .iter()
        .enumerate()
        .skip(start)
        .chain(tables.iter().enumerate().take(start));
    let mut best: Option<(u128, Task)> = None;
    for (at, t) in order {
        if t.busy {
            continue;
        }
        let lower: Vec<&TableView> = below
            .iter()
            .filter(|b| b.overlaps(&t.smallest, &t.largest))
            .collect();
        if lower.iter().any(|b| b.busy) {
            continue;
        }
        let upper = tables
            .get(expand_upper(tables, at, &lower))
            .unwrap_or_default();
        let upper_bytes: u64 = upper.iter().map(|u| u.size_bytes).sum();
        let overlap: u64 = lower.iter().map(|b| b.size_bytes).sum();
        let ratio = u128::from(overlap) * 1024 / u128::from(upper_bytes.max(1));
        if best.as_ref().is_some_and(|(r, _)| *r <= ratio) {
            continue;
        }
        best = Some((
            ratio,
            Task {
                level,
                output_level: level + 1,
                upper: upper.iter().map(|u| u.id).collect(),
                trivial_move: lower.is_empty(),
                split: false,
                lower: lower.iter().map(|b| b.id).collect(),
            },
        ));
    }
    best.map(|(_, task)| task)
}

/// Most tables a compaction takes out of a level ≥ 1 when [`expand_upper`] widens it.
const EXPANDED_UPPER_MAX: usize = 16;

/// The positions of the tables of a level ≥ 1 (`tables`, sorted and disjoint) that compact
/// with `t = tables[at]` into the `lower` tables it overlaps at no extra cost: `t` and its
/// idle neighbours that lie within the key range `t` and `lower` span together, so they
/// overlap no other table below (LevelDB's and RocksDB's expansion of a compaction's
/// inputs). Outputs are cut at the boundaries of the level below, so a level holds runs of
/// small tables inside one lower table's range; compacting them one at a time rewrote that
/// lower table once per table. A trivial move (nothing below) is not widened.
fn expand_upper(tables: &[TableView], at: usize, lower: &[&TableView]) -> Range<usize> {
    let (Some(t), Some(first), Some(last)) = (tables.get(at), lower.first(), lower.last()) else {
        return at..at + 1;
    };
    let lo = first.smallest.as_slice().min(t.smallest.as_slice());
    let hi = last.largest.as_slice().max(t.largest.as_slice());
    let within =
        |x: &&TableView| !x.busy && x.smallest.as_slice() >= lo && x.largest.as_slice() <= hi;
    let left = tables
        .get(..at)
        .unwrap_or_default()
        .iter()
        .rev()
        .take_while(within)
        .count();
    let right = tables
        .get(at + 1..)
        .unwrap_or_default()
        .iter()
        .take_while(within)
        .count();
    // At most EXPANDED_UPPER_MAX tables, `t` among them.
    let from = (at - left).max((at + 1).saturating_sub(EXPANDED_UPPER_MAX));
    let to = (at + 1 + right).min(from + EXPANDED_UPPER_MAX);
    from..to
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::StaticLevels;
    use std::sync::Arc;

    fn t(id: u64, size: u64, lo: &str, hi: &str) -> TableView {
        TableView {
            id,
            size_bytes: size,
            smallest: lo.as_bytes().to_vec(),
            largest: hi.as_bytes().to_vec(),
            busy: false,
        }
    }

    fn opts() -> Options {
        Options {
            level0_compaction_trigger: 2,
            level1_size_bytes: 1000,
            level_size_ratio: 10,
            level_policy: Arc::new(StaticLevels),
            ..Options::default()
        }
    }

    #[test]
    fn nothing_to_do_below_the_triggers() {
        let levels = vec![vec![t(1, 10, "a", "b")], vec![t(2, 500, "a", "z")], vec![]];
        assert_eq!(pick(&levels, &opts(), &[]), None);
    }

    #[test]
    fn level0_takes_all_its_tables_and_the_overlapping_level1_tables() {
        let levels = vec![
            vec![t(5, 10, "c", "f"), t(4, 10, "a", "d")],
            vec![
                t(1, 100, "a", "b"),
                t(2, 100, "e", "g"),
                t(3, 100, "x", "z"),
            ],
            vec![],
        ];
        let task = pick(&levels, &opts(), &[]).unwrap();
        assert_eq!(task.level, 0);
        assert_eq!(task.output_level, 1);
        assert_eq!(task.upper, vec![5, 4]);
        assert_eq!(task.lower, vec![1, 2]);
        assert!(!task.trivial_move);
    }

    #[test]
    fn busy_tables_block_overlapping_picks() {
        let mut l1 = vec![t(1, 100, "a", "z")];
        l1[0].busy = true;
        let levels = vec![vec![t(5, 10, "c", "f"), t(4, 10, "a", "d")], l1, vec![]];
        assert_eq!(pick(&levels, &opts(), &[]), None);
    }

    #[test]
    fn the_table_with_the_least_overlap_below_goes_first() {
        let levels = vec![
            vec![],
            vec![
                t(1, 600, "a", "c"),
                t(2, 600, "d", "f"),
                t(3, 600, "g", "i"),
            ],
            vec![
                t(4, 900, "a", "b"),
                t(5, 100, "e", "e"),
                t(6, 300, "h", "h"),
            ],
        ];
        let task = pick(&levels, &opts(), &[]).unwrap();
        assert_eq!(task.upper, vec![2]);
        assert_eq!(task.lower, vec![5]);
    }

    #[test]
    fn equal_overlap_goes_round_robin_from_the_cursor() {
        let levels = vec![
            vec![],
            vec![t(1, 600, "a", "c"), t(2, 600, "d", "f")],
            vec![t(3, 60, "b", "b"), t(4, 60, "e", "e")],
        ];
        let task = pick(&levels, &opts(), &[Vec::new(), b"c".to_vec()]).unwrap();
        assert_eq!(task.upper, vec![2]);
        assert_eq!(task.lower, vec![4]);
        let task = pick(&levels, &opts(), &[Vec::new(), b"f".to_vec()]).unwrap();
        assert_eq!(task.upper, vec![1]);
        assert_eq!(task.lower, vec![3]);
    }

    #[test]
    fn a_compaction_takes_the_neighbours_that_fit_the_same_tables_below() {
        // Level 1 holds small tables: b..c and d..e lie in level 2's a..f; f..ga reaches
        // into ga..k too. Table 1 takes table 2 along (both rewrite only a..f), not 3.
        let levels = vec![
            vec![],
            vec![
                t(1, 300, "b", "c"),
                t(2, 300, "d", "e"),
                t(3, 300, "f", "ga"),
                t(4, 300, "h", "i"),
            ],
            vec![t(10, 1000, "a", "f"), t(11, 1000, "ga", "k")],
        ];
        assert_eq!(
            levels[1][expand_upper(&levels[1], 0, &[&levels[2][0]])]
                .iter()
                .map(|x| x.id)
                .collect::<Vec<_>>(),
            vec![1, 2]
        );
        // Table 3 spans both lower tables: every level-1 table lies within them.
        let both: Vec<&TableView> = levels[2].iter().collect();
        assert_eq!(expand_upper(&levels[1], 2, &both).len(), 4);
        // Equal ratios (1000 below per 600 moved, 2000 per 1200): the cursor's first wins.
        let task = pick_level(&levels, 1, b"").unwrap();
        assert_eq!((task.upper, task.lower), (vec![1, 2], vec![10]));
        // A busy neighbour is left out, and the run stops at it.
        let mut busy = levels.clone();
        busy[1][0].busy = true;
        let task = pick_level(&busy, 1, b"").unwrap();
        assert_eq!((task.upper, task.lower), (vec![2, 3, 4], vec![10, 11]));
    }

    #[test]
    fn an_expanded_compaction_takes_at_most_its_limit_of_tables_and_always_the_pick() {
        let upper: Vec<TableView> = (0..40u64)
            .map(|i| t(i, 10, &format!("k{i:03}a"), &format!("k{i:03}b")))
            .collect();
        let below = [t(100, 5000, "k", "l")];
        let lower: Vec<&TableView> = below.iter().collect();
        for pick in [0usize, 5, 20, 39] {
            let got = &upper[expand_upper(&upper, pick, &lower)];
            assert_eq!(got.len(), EXPANDED_UPPER_MAX, "pick {pick}");
            assert!(got.iter().any(|x| x.id == pick as u64), "pick {pick}");
            assert!(got.windows(2).all(|w| w[0].id + 1 == w[1].id), "contiguous");
        }
    }

    #[test]
    fn dynamic_levels_send_level0_to_the_bottom_of_a_small_tree() {
        let o = Options {
            level_policy: Arc::new(crate::options::DynamicLevels),
            ..opts()
        };
        let levels = vec![
            vec![t(5, 10, "c", "f"), t(4, 10, "a", "d")],
            vec![],
            vec![],
            vec![],
        ];
        let task = pick(&levels, &o, &[]).unwrap();
        assert_eq!(task.output_level, 3);
    }
}
