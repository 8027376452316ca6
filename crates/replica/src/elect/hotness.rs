//! ELECT's hotness (§4.2): which last-level tables of the primary tree are coldest, so
//! they are coded, and offloaded, first.

use mosaic_erasure::hotness::Candidate;
use mosaic_lsm::{LevelInfo, TableInfo};

use super::{Elect, HOTNESS_HALF_LIFE_MICROS};

impl Elect {
    /// The decayed read counts of `tables` (`(id, reads since the engine opened)`) at
    /// `now_micros`: reads fade with a half-life of [`HOTNESS_HALF_LIFE_MICROS`], so a
    /// table read hard an hour ago is colder than one read a little now. Tables not listed
    /// are forgotten.
    pub fn hotness(&self, tables: &[(u64, u64)], now_micros: u64) -> Vec<f64> {
        let mut hot = self.hotness.lock();
        let half_life = HOTNESS_HALF_LIFE_MICROS;
        let out = tables
            .iter()
            .map(|&(id, reads)| {
                let (seen, count) = hot.entry(id).or_default();
                // Fewer reads than counted: the engine reopened and counts from zero.
                let new = if reads >= *seen { reads - *seen } else { reads };
                *seen = reads;
                count.add(new as f64, now_micros, half_life);
                count.value(now_micros, half_life)
            })
            .collect();
        let ids: std::collections::HashSet<u64> = tables.iter().map(|(id, _)| *id).collect();
        hot.retain(|id, _| ids.contains(id));
        out
    }

    /// The tables of `last` (the primary tree's last level) that `keep` accepts, as
    /// candidates ordered by [`mosaic_erasure::hotness`], with their decayed read counts at
    /// `now_micros` (every table of the level is counted, so the decay follows the level).
    pub fn candidates(
        &self,
        last: &LevelInfo,
        now_micros: u64,
        keep: impl Fn(&TableInfo) -> bool,
    ) -> Vec<Candidate<u64>> {
        let counts: Vec<(u64, u64)> = last.tables.iter().map(|t| (t.id, t.reads)).collect();
        let hotness = self.hotness(&counts, now_micros);
        last.tables
            .iter()
            .zip(hotness)
            .filter(|(t, _)| keep(t))
            .map(|(t, reads)| Candidate {
                id: t.id,
                reads,
                created_micros: t.created_micros,
                bytes: t.size_bytes,
            })
            .collect()
    }
}
