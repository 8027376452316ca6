//! The two-layer log's splitter (DEPART §4.3): which global-log segments and which range
//! groups' runs the next split takes, as a pure decision over a read-only view of the
//! levels. The engine executes it (`db.rs`): it merges the inputs, routes each surviving
//! version to its range group and writes one sorted run per group, all in one manifest
//! edit, so a crash leaves either the inputs or the outputs, never both or neither.
//!
//! Level 0 is the global log (newest first); level `1 + g` holds range group `g`'s runs.

use crate::compaction::{TableView, Task};
use crate::options::LogOptions;

/// The next split, if one is due (the log's major compaction is [`pick_major`]'s).
///
/// A split takes the `split_segments` oldest segments once that many wait. Every group
/// that already holds `runs_max` runs is merge-sorted in the same pass (its runs become
/// inputs), as many groups as fit in [`INPUTS_MAX`] tables with the segments (at least
/// one); a group left out, or over the bound for another reason (flushes written
/// straight into the groups, `runs_max` lowered), is merge-sorted by the next pass even
/// when no split is due — so a group holds at most `runs_max` runs, `runs_max + 1` until
/// that pass. Only one split runs at a time: any busy table defers the next.
pub fn pick(levels: &[Vec<TableView>], log: &LogOptions) -> Option<Task> {
    pick_bounded(levels, log, INPUTS_MAX)
}

/// Tables one split or merge-sort reads at most, unless one group's runs alone are more
/// (its merge-sort takes them all): each input holds a readahead window and a block while
/// they are merged, so a pass over every group at once (after a flush written straight
/// into the groups brought them all to S) would need memory in proportion to the whole log.
pub const INPUTS_MAX: usize = 32;

/// The next pass of the log's major compaction (`Db::compact`), with where the pass after
/// it starts; `None` when nothing is left. The first pass (`from` `None`) splits every
/// segment there is (at most a few `split_segments`' worth: background splits keep up
/// with flushes); the passes after it merge-sort the groups from `from` on, each group's
/// runs whole and as many groups as fit in `inputs_max` tables (at least one). A group
/// with a single run is rewritten too: that is where expired tombstones go.
pub fn pick_major(
    levels: &[Vec<TableView>],
    from: Option<usize>,
    inputs_max: usize,
) -> Option<(Task, usize)> {
    let segments = levels.first().map(Vec::as_slice).unwrap_or_default();
    if from.is_none() && !segments.is_empty() {
        return Some((split_task(ids(segments), Vec::new()), 0));
    }
    let groups = levels.get(1..).unwrap_or_default();
    let mut lower: Vec<u64> = Vec::new();
    let mut next = from.unwrap_or(0);
    for g in groups.iter().skip(next) {
        if !lower.is_empty() && lower.len() + g.len() > inputs_max {
            break;
        }
        lower.extend(ids(g));
        next += 1;
    }
    (!lower.is_empty()).then(|| (split_task(Vec::new(), lower), next))
}

/// A split (or merge-sort) of `upper` segments and `lower` group runs.
fn split_task(upper: Vec<u64>, lower: Vec<u64>) -> Task {
    Task {
        level: 0,
        output_level: 0,
        upper,
        lower,
        trivial_move: false,
        split: true,
    }
}

/// The ids of `tables`.
fn ids(tables: &[TableView]) -> Vec<u64> {
    tables.iter().map(|t| t.id).collect()
}

/// [`pick`] with at most `inputs_max` input tables (see [`INPUTS_MAX`]).
fn pick_bounded(levels: &[Vec<TableView>], log: &LogOptions, inputs_max: usize) -> Option<Task> {
    if levels.iter().flatten().any(|t| t.busy) {
        return None;
    }
    let segments = levels.first().map(Vec::as_slice).unwrap_or_default();
    let groups = levels.get(1..).unwrap_or_default();
    // Without a global log (`split_segments` 0, flushes write into the groups), segments
    // left from before are split as soon as they are there.
    let due = !segments.is_empty() && segments.len() >= log.split_segments;
    let upper = if due {
        // Segments are newest first: the oldest are at the end.
        let oldest = segments.len() - log.split_segments.max(1).min(segments.len());
        ids(segments.get(oldest..).unwrap_or_default())
    } else {
        Vec::new()
    };
    let mut lower: Vec<u64> = Vec::new();
    for g in groups
        .iter()
        .filter(|g| g.len() > log.runs_max || (due && g.len() >= log.runs_max))
    {
        if !lower.is_empty() && upper.len() + lower.len() + g.len() > inputs_max {
            break;
        }
        lower.extend(ids(g));
    }
    (!upper.is_empty() || !lower.is_empty()).then(|| split_task(upper, lower))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    fn t(id: u64) -> TableView {
        TableView {
            id,
            size_bytes: 100,
            smallest: b"a".to_vec(),
            largest: b"z".to_vec(),
            busy: false,
        }
    }

    fn log(split_segments: usize, runs_max: usize) -> LogOptions {
        LogOptions {
            split_segments,
            runs_max,
            group_of: Arc::new(|_| 0),
        }
    }

    #[test]
    fn a_major_compaction_splits_every_segment_then_merges_groups_in_bounded_passes() {
        let levels = vec![
            vec![t(99), t(98)],
            vec![t(1), t(2), t(3)],
            Vec::new(),
            vec![t(4)],
            vec![t(5), t(6), t(7), t(8)],
            vec![t(9), t(10)],
        ];
        let mut passes = Vec::new();
        let mut from = None;
        while let Some((task, next)) = pick_major(&levels, from, 4) {
            assert!(task.split);
            passes.push((task.upper, task.lower));
            from = Some(next);
        }
        let none = Vec::<u64>::new;
        assert_eq!(
            passes,
            vec![
                (vec![99, 98], none()),
                // Groups 0 and 2 fit in 4 tables; the empty group 1 adds nothing.
                (none(), vec![1, 2, 3, 4]),
                // A group over the bound alone is taken whole.
                (none(), vec![5, 6, 7, 8]),
                (none(), vec![9, 10]),
            ]
        );
        // Without segments, the first pass is the groups'.
        let groups_only = vec![Vec::new(), vec![t(1)]];
        let (task, next) = pick_major(&groups_only, None, 4).unwrap();
        assert_eq!((task.upper, task.lower, next), (none(), vec![1], 1));
        assert!(pick_major(&groups_only, Some(1), 4).is_none());
    }

    #[test]
    fn nothing_is_due_below_the_split_size() {
        let levels = vec![vec![t(9), t(8)], vec![t(1)]];
        assert_eq!(pick(&levels, &log(3, 2)), None);
    }

    #[test]
    fn a_split_takes_the_oldest_segments() {
        let levels = vec![vec![t(9), t(8), t(7), t(6)]];
        let task = pick(&levels, &log(3, 20)).unwrap();
        assert_eq!(task.upper, vec![8, 7, 6]);
        assert!(task.lower.is_empty());
        assert!(task.split);
    }

    #[test]
    fn full_groups_are_merge_sorted_with_the_split() {
        // Group 0 is full (2 runs of at most 2), group 1 is not.
        let levels = vec![vec![t(9), t(8)], vec![t(3), t(2)], vec![t(4)]];
        let task = pick(&levels, &log(2, 2)).unwrap();
        assert_eq!(task.upper, vec![9, 8]);
        assert_eq!(task.lower, vec![3, 2]);
    }

    #[test]
    fn a_group_over_its_bound_is_merge_sorted_without_a_split() {
        let levels = vec![vec![t(9)], vec![t(3), t(2), t(1)], vec![t(4), t(5)]];
        let task = pick(&levels, &log(2, 2)).unwrap();
        assert!(task.upper.is_empty());
        assert_eq!(task.lower, vec![3, 2, 1]);
    }

    #[test]
    fn without_a_global_log_groups_are_merge_sorted_past_the_bound_and_old_segments_split() {
        // Flushes write into the groups: a group is merge-sorted once over S.
        let levels = vec![vec![], vec![t(3), t(2)], vec![t(4), t(5), t(6)]];
        let task = pick(&levels, &log(0, 2)).unwrap();
        assert!(task.upper.is_empty());
        assert_eq!(task.lower, vec![4, 5, 6]);
        assert_eq!(pick(&[vec![], vec![t(3), t(2)]], &log(0, 2)), None);
        // Segments left from before the global log was given up are split at once.
        let task = pick(&[vec![t(9)], vec![t(3)]], &log(0, 2)).unwrap();
        assert_eq!(task.upper, vec![9]);
    }

    #[test]
    fn a_pass_takes_as_many_full_groups_as_fit_and_leaves_the_rest_for_the_next() {
        // Three full groups of two runs and a split of two segments; room for six tables.
        let levels = vec![
            vec![t(9), t(8)],
            vec![t(1), t(2)],
            vec![t(3), t(4)],
            vec![t(5), t(6)],
        ];
        let task = pick_bounded(&levels, &log(2, 2), 6).unwrap();
        assert_eq!(task.upper, vec![9, 8]);
        assert_eq!(task.lower, vec![1, 2, 3, 4]);
        // The group left out is over the bound once the split added its run: merged next.
        let after = vec![vec![], vec![t(10)], vec![t(11)], vec![t(5), t(6), t(12)]];
        let task = pick_bounded(&after, &log(2, 2), 6).unwrap();
        assert!(task.upper.is_empty());
        assert_eq!(task.lower, vec![5, 6, 12]);
        // One group's runs are taken whole however many they are.
        let big = vec![vec![], (20..30).map(t).collect()];
        assert_eq!(pick_bounded(&big, &log(2, 2), 6).unwrap().lower.len(), 10);
    }

    #[test]
    fn busy_tables_defer_the_next_split() {
        let mut busy = t(7);
        busy.busy = true;
        let levels = vec![vec![t(9), t(8)], vec![busy]];
        assert_eq!(pick(&levels, &log(2, 20)), None);
    }
}
