//! Hotness (§4.2): which last-level SSTables are coded and offloaded first.
//!
//! An SSTable's hotness is its read count, decayed with a half-life so that old bursts
//! fade, and its lifetime. The coldest come first: fewer reads first, and among equals the
//! older (longer lifetime) first; the id breaks remaining ties so the order is total and
//! the same on every run. (The published prototype's comparator compared a table with
//! itself, so its order ignored hotness entirely; the tests here check that this one
//! orders.)

/// A read count that halves every `half_life_micros` without reads.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct DecayingCount {
    value: f64,
    at_micros: u64,
}

impl DecayingCount {
    /// The count at `now_micros`.
    pub fn value(&self, now_micros: u64, half_life_micros: u64) -> f64 {
        if half_life_micros == 0 {
            return self.value;
        }
        let elapsed = now_micros.saturating_sub(self.at_micros) as f64;
        self.value * (-elapsed / half_life_micros as f64).exp2()
    }

    /// Counts `reads` more at `now_micros`.
    pub fn add(&mut self, reads: f64, now_micros: u64, half_life_micros: u64) {
        self.value = self.value(now_micros, half_life_micros) + reads;
        self.at_micros = self.at_micros.max(now_micros);
    }
}

/// An SSTable that may be coded or offloaded.
#[derive(Clone, Debug, PartialEq)]
pub struct Candidate<Id> {
    /// Which SSTable.
    pub id: Id,
    /// Its decayed read count now.
    pub reads: f64,
    /// When it was created.
    pub created_micros: u64,
    /// Its size.
    pub bytes: u64,
}

/// Sorts `candidates` coldest first.
pub fn coldest_first<Id: Ord>(candidates: &mut [Candidate<Id>]) {
    candidates.sort_by(|a, b| {
        a.reads
            .total_cmp(&b.reads)
            .then(a.created_micros.cmp(&b.created_micros))
            .then_with(|| a.id.cmp(&b.id))
    });
}

/// The coldest candidates whose sizes add up to at least `bytes` (all of them if they do
/// not), in order.
pub fn take_coldest<Id: Ord>(mut candidates: Vec<Candidate<Id>>, bytes: u64) -> Vec<Candidate<Id>> {
    coldest_first(&mut candidates);
    let mut total = 0u64;
    let keep = candidates
        .iter()
        .take_while(|c| {
            let more = total < bytes;
            total = total.saturating_add(c.bytes);
            more
        })
        .count();
    candidates.truncate(keep);
    candidates
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(id: u32, reads: f64, created: u64) -> Candidate<u32> {
        Candidate {
            id,
            reads,
            created_micros: created,
            bytes: 10,
        }
    }

    #[test]
    fn the_coldest_come_first_and_age_breaks_ties() {
        let mut v = vec![
            c(1, 5.0, 100),
            c(2, 0.0, 300),
            c(3, 0.0, 200),
            c(4, 2.5, 50),
            c(5, 0.0, 200),
        ];
        coldest_first(&mut v);
        let ids: Vec<u32> = v.iter().map(|c| c.id).collect();
        assert_eq!(ids, vec![3, 5, 2, 4, 1]);
    }

    #[test]
    fn the_order_really_orders() {
        // Every permutation of the input sorts to the same order: the comparator looks at
        // both sides.
        let base = vec![c(1, 3.0, 10), c(2, 1.0, 30), c(3, 1.0, 20), c(4, 0.5, 40)];
        let mut expected = base.clone();
        coldest_first(&mut expected);
        for rotation in 0..base.len() {
            let mut v = base.clone();
            v.rotate_left(rotation);
            v.reverse();
            coldest_first(&mut v);
            assert_eq!(v, expected);
        }
        assert_eq!(
            expected.iter().map(|c| c.id).collect::<Vec<_>>(),
            vec![4, 3, 2, 1]
        );
    }

    #[test]
    fn take_coldest_stops_once_enough_bytes_are_chosen() {
        let v = vec![c(1, 3.0, 10), c(2, 1.0, 30), c(3, 0.0, 20)];
        let ids = |v: Vec<Candidate<u32>>| v.into_iter().map(|c| c.id).collect::<Vec<_>>();
        assert_eq!(ids(take_coldest(v.clone(), 0)), Vec::<u32>::new());
        assert_eq!(ids(take_coldest(v.clone(), 15)), vec![3, 2]);
        assert_eq!(ids(take_coldest(v.clone(), 20)), vec![3, 2]);
        assert_eq!(ids(take_coldest(v, 1000)), vec![3, 2, 1]);
    }

    #[test]
    fn counts_decay_by_half_lives() {
        let hour = 3_600_000_000;
        let mut n = DecayingCount::default();
        n.add(8.0, 0, hour);
        assert_eq!(n.value(0, hour), 8.0);
        assert!((n.value(hour, hour) - 4.0).abs() < 1e-9);
        assert!((n.value(3 * hour, hour) - 1.0).abs() < 1e-9);
        n.add(1.0, 3 * hour, hour);
        assert!((n.value(3 * hour, hour) - 2.0).abs() < 1e-9);
        // A clock that goes back does not grow the count.
        assert!((n.value(hour, hour) - 2.0).abs() < 1e-9);
    }
}
