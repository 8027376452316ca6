//! Iterators over internal keys and the merging iterator that combines memtables and tables.

use std::ops::Bound;
use std::sync::Arc;

use crate::error::Result;
use crate::key::compare_internal;
use crate::stats::ReadPurpose;
use crate::table::TableIter;
use crate::version::TableHandle;

/// A positioned cursor over internal keys in ascending internal order.
pub trait InternalIter: Send {
    /// Positions at the first key ≥ `target`.
    fn seek(&mut self, target: &[u8]) -> Result<()>;
    /// Positions at the first key.
    fn seek_to_first(&mut self) -> Result<()>;
    /// Moves to the next key; only when valid.
    fn next(&mut self) -> Result<()>;
    /// Whether positioned at a key.
    fn valid(&self) -> bool;
    /// The current internal key; only when valid.
    fn key(&self) -> &[u8];
    /// The current value; only when valid.
    fn value(&self) -> &[u8];
}

impl InternalIter for TableIter {
    fn seek(&mut self, target: &[u8]) -> Result<()> {
        TableIter::seek(self, target)
    }
    fn seek_to_first(&mut self) -> Result<()> {
        TableIter::seek_to_first(self)
    }
    fn next(&mut self) -> Result<()> {
        TableIter::next(self)
    }
    fn valid(&self) -> bool {
        TableIter::valid(self)
    }
    fn key(&self) -> &[u8] {
        TableIter::key(self)
    }
    fn value(&self) -> &[u8] {
        TableIter::value(self)
    }
}

/// Concatenates the non-overlapping tables of one level (sorted by key), opening each table's
/// iterator only when reached.
pub struct LevelIter {
    tables: Vec<Arc<TableHandle>>,
    index: usize,
    cur: Option<TableIter>,
    purpose: ReadPurpose,
    fill_cache: bool,
    until: Bound<Vec<u8>>,
}

impl LevelIter {
    /// An iterator over `tables`, which must be sorted and disjoint.
    pub fn new(tables: Vec<Arc<TableHandle>>, purpose: ReadPurpose, fill_cache: bool) -> Self {
        Self {
            tables,
            index: 0,
            cur: None,
            purpose,
            fill_cache,
            until: Bound::Unbounded,
        }
    }

    /// Stops each table's iterator at user key `end` ([`TableIter::until`]).
    pub fn until(mut self, end: Bound<&[u8]>) -> Self {
        self.until = end.map(<[u8]>::to_vec);
        self
    }

    fn open(&mut self, index: usize) {
        self.index = index;
        let until = self.until.as_ref().map(Vec::as_slice);
        self.cur = self.tables.get(index).map(|t| {
            t.note_read();
            t.reader().iter(self.purpose, self.fill_cache).until(until)
        });
    }

    fn skip_exhausted(&mut self) -> Result<()> {
        while let Some(it) = &self.cur {
            if it.valid() {
                break;
            }
            self.open(self.index + 1);
            if let Some(it) = &mut self.cur {
                it.seek_to_first()?;
            }
        }
        Ok(())
    }
}

impl InternalIter for LevelIter {
    fn seek(&mut self, target: &[u8]) -> Result<()> {
        let index = self
            .tables
            .partition_point(|t| compare_internal(&t.meta().largest, target).is_lt());
        self.open(index);
        if let Some(it) = &mut self.cur {
            it.seek(target)?;
        }
        self.skip_exhausted()
    }
    fn seek_to_first(&mut self) -> Result<()> {
        self.open(0);
        if let Some(it) = &mut self.cur {
            it.seek_to_first()?;
        }
        self.skip_exhausted()
    }
    fn next(&mut self) -> Result<()> {
        if let Some(it) = &mut self.cur {
            it.next()?;
        }
        self.skip_exhausted()
    }
    fn valid(&self) -> bool {
        self.cur.as_ref().is_some_and(|it| it.valid())
    }
    fn key(&self) -> &[u8] {
        self.cur.as_ref().map(|it| it.key()).unwrap_or_default()
    }
    fn value(&self) -> &[u8] {
        self.cur.as_ref().map(|it| it.value()).unwrap_or_default()
    }
}

/// Merges several iterators into one ascending stream of internal keys.
///
/// A linear scan picks the smallest child: the engine merges few sources (memtables, L0
/// tables, one iterator per deeper level), where this beats a heap's bookkeeping.
pub struct MergingIter {
    children: Vec<Box<dyn InternalIter>>,
    current: Option<usize>,
}

impl MergingIter {
    /// Merges `children`.
    pub fn new(children: Vec<Box<dyn InternalIter>>) -> Self {
        Self {
            children,
            current: None,
        }
    }

    fn pick(&mut self) {
        let mut best: Option<usize> = None;
        for (i, c) in self.children.iter().enumerate() {
            if !c.valid() {
                continue;
            }
            best = match best {
                Some(b) if compare_internal(self.children[b].key(), c.key()).is_le() => Some(b),
                _ => Some(i),
            };
        }
        self.current = best;
    }
}

impl InternalIter for MergingIter {
    fn seek(&mut self, target: &[u8]) -> Result<()> {
        for c in &mut self.children {
            c.seek(target)?;
        }
        self.pick();
        Ok(())
    }
    fn seek_to_first(&mut self) -> Result<()> {
        for c in &mut self.children {
            c.seek_to_first()?;
        }
        self.pick();
        Ok(())
    }
    fn next(&mut self) -> Result<()> {
        if let Some(i) = self.current {
            if let Some(c) = self.children.get_mut(i) {
                c.next()?;
            }
        }
        self.pick();
        Ok(())
    }
    fn valid(&self) -> bool {
        self.current.is_some()
    }
    fn key(&self) -> &[u8] {
        self.current
            .and_then(|i| self.children.get(i))
            .map(|c| c.key())
            .unwrap_or_default()
    }
    fn value(&self) -> &[u8] {
        self.current
            .and_then(|i| self.children.get(i))
            .map(|c| c.value())
            .unwrap_or_default()
    }
}
