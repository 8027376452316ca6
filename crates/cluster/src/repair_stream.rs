//! Repair's streaming of a mismatched range in bounded steps.
//!
//! Every replica pages its entries of the range in the order it stores them
//! ([`crate::env::Store::read_stored`]); a [`RangeStream`] keeps each replica's unread pages
//! and hands out *windows*: the entries of every replica below one key bound, which is the
//! smallest bound up to which every replica has already sent all it holds. A window's
//! entries are merged and written where stale, and the next window follows, so a repair
//! holds about a page per replica at a time whatever the size of the range (a node that
//! lost everything is refilled range by range, never a whole vnode range in memory).
//!
//! A replica whose page is in key order has sent everything up to its page's last key. A
//! replica storing another clustering order (a heterogeneous replica) keeps partitions
//! whole and in token order but not in key order within one, so its bound is the token of
//! its last entry: every token before it is complete. Such a replica holds a partition at
//! a time, and the whole of one larger than a page. (A page of it that happens to be in key
//! order is taken for one; a later entry below its bound then goes out in a later window,
//! where the merge writes it as well: nothing is lost, an entry may be streamed twice.)

use std::collections::VecDeque;

/// `(key, merged fragment)` entries, as replicas send them.
pub type EntryList = Vec<(Vec<u8>, Vec<u8>)>;

/// One replica's side of a [`RangeStream`].
#[derive(Debug, Default)]
struct Side {
    /// Entries received and not yet handed out, in the replica's stored order.
    held: VecDeque<(Vec<u8>, Vec<u8>)>,
    /// The stored key the next page starts after (`None`: from the start).
    after: Option<Vec<u8>>,
    /// Whether the replica sent its last page.
    done: bool,
    /// Every entry of this replica below this key has been received (`None`: every entry,
    /// once `done`).
    complete_below: Option<Vec<u8>>,
}

/// The windows of a range read from several replicas (see the module doc).
#[derive(Debug)]
pub struct RangeStream {
    sides: Vec<Side>,
}

impl RangeStream {
    /// A stream over `replicas` replicas, nothing read yet.
    pub fn new(replicas: usize) -> RangeStream {
        RangeStream {
            sides: (0..replicas).map(|_| Side::default()).collect(),
        }
    }

    /// The replica that must send a page before the next window, and the stored key that
    /// page starts after; `None` when a window can be taken.
    pub fn wants(&self) -> Option<(usize, Option<Vec<u8>>)> {
        self.sides.iter().enumerate().find_map(|(i, s)| {
            let stuck = !s.done
                && s.held
                    .front()
                    .is_none_or(|(k, _)| s.complete_below.as_ref().is_none_or(|b| k >= b));
            stuck.then(|| (i, s.after.clone()))
        })
    }

    /// Takes replica `i`'s next page: its entries and the stored key to resume after
    /// (`None`: its last page).
    pub fn receive(&mut self, i: usize, entries: EntryList, next: Option<Vec<u8>>) {
        let Some(side) = self.sides.get_mut(i) else {
            return;
        };
        let in_order = entries.is_sorted_by(|a, b| a.0 < b.0)
            && side
                .held
                .back()
                .zip(entries.first())
                .is_none_or(|(a, b)| a.0 < b.0);
        side.held.extend(entries);
        side.done = next.is_none();
        side.after = next;
        side.complete_below = match side.held.back() {
            _ if side.done => None,
            None => side.complete_below.take(),
            // Everything up to the last key has arrived.
            Some((last, _)) if in_order => Some(crate::repair::successor(last)),
            // Every token before the last one's has arrived (a token's encoding is a
            // prefix of all its keys, and sorts before them).
            Some((last, _)) => mosaic_rows::decode_token(last)
                .ok()
                .map(|t| mosaic_rows::encode_token(t).to_vec())
                .or(side.complete_below.take()),
        };
        if !in_order {
            side.held
                .make_contiguous()
                .sort_unstable_by(|a, b| a.0.cmp(&b.0));
        }
    }

    /// The next window: per replica, its entries below the bound every replica is complete
    /// to, in key order; `None` once every replica has sent and handed out everything.
    /// Call only when [`RangeStream::wants`] is `None`.
    pub fn window(&mut self) -> Option<Vec<EntryList>> {
        if self.sides.iter().all(|s| s.done && s.held.is_empty()) {
            return None;
        }
        let bound: Option<Vec<u8>> = self
            .sides
            .iter()
            .filter(|s| !s.done)
            .filter_map(|s| s.complete_below.clone())
            .min();
        Some(
            self.sides
                .iter_mut()
                .map(|s| {
                    let n = match &bound {
                        None => s.held.len(),
                        Some(b) => s.held.iter().take_while(|(k, _)| k < b).count(),
                    };
                    s.held.drain(..n).collect()
                })
                .collect(),
        )
    }

    /// Entries held now, every replica.
    pub fn held(&self) -> usize {
        self.sides.iter().map(|s| s.held.len()).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mosaic_types::Token;

    fn key(token: i64, row: u8) -> Vec<u8> {
        let mut k = mosaic_rows::encode_token(Token(token)).to_vec();
        k.push(row);
        k
    }

    /// Drives a stream over replicas answering pages of `page` entries of `data` (each in
    /// its stored order); every window, and the most entries held at once.
    fn stream(data: &[EntryList], page: usize) -> (Vec<EntryList>, usize) {
        let mut s = RangeStream::new(data.len());
        let mut taken: Vec<EntryList> = vec![Vec::new(); data.len()];
        let mut offsets = vec![0usize; data.len()];
        let mut most = 0;
        for _ in 0..100_000 {
            while let Some((i, after)) = s.wants() {
                assert_eq!(after.is_some(), offsets[i] > 0);
                let from = offsets[i];
                let to = (from + page).min(data[i].len());
                let next = (to < data[i].len()).then(|| data[i][to - 1].0.clone());
                s.receive(i, data[i][from..to].to_vec(), next);
                offsets[i] = to;
                most = most.max(s.held());
            }
            let Some(w) = s.window() else {
                return (taken, most);
            };
            assert!(w.iter().any(|e| !e.is_empty()), "a window makes progress");
            for (t, e) in taken.iter_mut().zip(w) {
                assert!(e.is_sorted_by(|a, b| a.0 < b.0));
                assert!(t.last().zip(e.first()).is_none_or(|(a, b)| a.0 < b.0));
                t.extend(e);
            }
        }
        panic!("the stream did not end");
    }

    #[test]
    fn windows_cover_every_replicas_entries_once_holding_about_a_page_each() {
        // Replica 0 has every row, 1 misses a third, 2 has none; 3,000 rows in 30
        // partitions, pages of 50.
        let all: Vec<(Vec<u8>, Vec<u8>)> = (0..30)
            .flat_map(|p| (0..100u8).map(move |r| (key(p * 1000, r), vec![r])))
            .collect();
        let some: Vec<_> = all.iter().filter(|(k, _)| k[8] % 3 != 0).cloned().collect();
        let data = vec![all.clone(), some.clone(), Vec::new()];
        let (taken, most) = stream(&data, 50);
        assert_eq!(taken, data);
        assert!(most <= 3 * 2 * 50, "held {most} entries at once");
    }

    #[test]
    fn a_replica_in_another_order_within_partitions_is_complete_to_its_last_token() {
        let ordered: Vec<(Vec<u8>, Vec<u8>)> = (0..20)
            .flat_map(|p| (0..30u8).map(move |r| (key(p * 10, r), vec![r])))
            .collect();
        // Each partition's rows reversed, partitions in token order.
        let reversed: Vec<(Vec<u8>, Vec<u8>)> = (0..20)
            .flat_map(|p| (0..30u8).rev().map(move |r| (key(p * 10, r), vec![r])))
            .collect();
        let (taken, most) = stream(&[ordered.clone(), reversed], 25);
        assert_eq!(taken, vec![ordered.clone(), ordered]);
        assert!(most <= 2 * (25 + 30 + 25), "held {most} entries at once");
    }
}
