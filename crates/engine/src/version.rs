//! A version: the immutable set of live tables per level at one moment.
//! Owns point lookups and iterator construction across levels, and deriving
//! the next version from an edit. Must not write files (flush, compaction
//! and the manifest do); a version is never changed in place.

use std::cmp::Ordering;
use std::sync::Arc;

use bytes::Bytes;

use crate::error::Result;
use crate::iterator::{InternalIterator, Lookup};
use crate::key;
use crate::manifest::{TableMeta, VersionEdit};
use crate::sstable::{Table, TableIter};

#[derive(Clone, Debug)]
pub struct Version {
    /// Level 0 is ordered newest first (by max sequence) and may overlap;
    /// deeper levels are sorted by first key and never overlap.
    pub levels: Vec<Vec<Arc<Table>>>,
}

impl Version {
    /// Build from tables already placed at their levels.
    pub fn from_levels(levels: Vec<Vec<Arc<Table>>>) -> Self {
        let mut v = Version { levels };
        v.sort();
        v
    }

    fn sort(&mut self) {
        self.levels[0].sort_by(|a, b| {
            b.props()
                .max_seq
                .cmp(&a.props().max_seq)
                .then(b.id().cmp(&a.id()))
        });
        for l in self.levels.iter_mut().skip(1) {
            l.sort_by(|a, b| key::compare(&a.props().first_key, &b.props().first_key));
        }
    }

    /// The version after `edit`; `added` holds the opened tables it adds.
    pub fn apply(&self, edit: &VersionEdit, added: &[Arc<Table>]) -> Version {
        let mut levels = self.levels.clone();
        for (level, id) in &edit.deleted {
            levels[*level].retain(|t| t.id() != *id);
        }
        for m in &edit.added {
            let t = added
                .iter()
                .find(|t| t.id() == m.id)
                .expect("edit adds a table that was not opened");
            levels[m.level].push(t.clone());
        }
        Version::from_levels(levels)
    }

    /// Find a table by id at a level.
    pub fn table(&self, level: usize, id: u64) -> Option<&Arc<Table>> {
        self.levels.get(level)?.iter().find(|t| t.id() == id)
    }

    pub fn level_bytes(&self, level: usize) -> u64 {
        self.levels[level].iter().map(|t| t.size()).sum()
    }

    /// Newest version of `user` visible at `snapshot` in the tables.
    /// `hash` is `bloom::hash(user)`.
    pub fn get(&self, user: &[u8], hash: u64, snapshot: u64) -> Result<Option<Lookup>> {
        for t in &self.levels[0] {
            if user < t.first_user_key() || user > t.last_user_key() {
                continue;
            }
            if let Some(r) = t.get(user, hash, snapshot)? {
                return Ok(Some(r));
            }
        }
        for level in &self.levels[1..] {
            if level.is_empty() {
                continue;
            }
            let i = level.partition_point(|t| t.last_user_key() < user);
            if let Some(t) = level.get(i) {
                if user >= t.first_user_key() {
                    if let Some(r) = t.get(user, hash, snapshot)? {
                        return Ok(Some(r));
                    }
                }
            }
        }
        Ok(None)
    }

    /// Tables at `level` whose user-key range meets `[lo, hi]`.
    pub fn overlapping(&self, level: usize, lo: &[u8], hi: &[u8]) -> Vec<Arc<Table>> {
        self.levels[level]
            .iter()
            .filter(|t| t.last_user_key() >= lo && t.first_user_key() <= hi)
            .cloned()
            .collect()
    }

    /// True if no level deeper than `level` holds `user`'s range.
    pub fn is_bottommost_for(&self, level: usize, user: &[u8]) -> bool {
        for l in &self.levels[level + 1..] {
            let i = l.partition_point(|t| t.last_user_key() < user);
            if let Some(t) = l.get(i) {
                if user >= t.first_user_key() {
                    return false;
                }
            }
        }
        true
    }

    /// Push one iterator per L0 table and one per deeper level, skipping
    /// tables entirely outside `[lo, hi]` (user keys; `None` = unbounded).
    pub fn add_iterators(
        &self,
        out: &mut Vec<Box<dyn InternalIterator>>,
        lo: Option<&[u8]>,
        hi: Option<&[u8]>,
        fill_cache: bool,
    ) {
        let keep = |t: &Arc<Table>| {
            lo.is_none_or(|lo| t.last_user_key() >= lo)
                && hi.is_none_or(|hi| t.first_user_key() <= hi)
        };
        for t in self.levels[0].iter().filter(|t| keep(t)) {
            out.push(Box::new(t.iter(fill_cache)));
        }
        for level in &self.levels[1..] {
            let tables: Vec<_> = level.iter().filter(|t| keep(t)).cloned().collect();
            if !tables.is_empty() {
                out.push(Box::new(LevelIter::new(tables, fill_cache)));
            }
        }
    }
}

/// The manifest entry describing `t` at `level`.
pub fn meta_of(level: usize, t: &Table) -> TableMeta {
    TableMeta {
        level,
        id: t.id(),
        size: t.size(),
        first: t.props().first_key.clone(),
        last: t.props().last_key.clone(),
        min_seq: t.props().min_seq,
        max_seq: t.props().max_seq,
    }
}

/// Concatenates the non-overlapping, sorted tables of one level, opening a
/// table's iterator only when the cursor reaches it.
pub struct LevelIter {
    tables: Vec<Arc<Table>>,
    idx: usize,
    cur: Option<TableIter>,
    fill_cache: bool,
}

impl LevelIter {
    pub fn new(tables: Vec<Arc<Table>>, fill_cache: bool) -> Self {
        LevelIter {
            tables,
            idx: 0,
            cur: None,
            fill_cache,
        }
    }

    fn open(&mut self, i: usize) {
        self.idx = i;
        self.cur = self.tables.get(i).map(|t| t.iter(self.fill_cache));
    }

    fn settle(&mut self) -> Result<()> {
        while let Some(c) = &self.cur {
            if c.valid() {
                break;
            }
            self.open(self.idx + 1);
            if let Some(c) = &mut self.cur {
                c.seek_to_first()?;
            }
        }
        Ok(())
    }
}

impl InternalIterator for LevelIter {
    fn valid(&self) -> bool {
        self.cur.as_ref().is_some_and(|c| c.valid())
    }
    fn seek_to_first(&mut self) -> Result<()> {
        self.open(0);
        if let Some(c) = &mut self.cur {
            c.seek_to_first()?;
        }
        self.settle()
    }
    fn seek(&mut self, target: &[u8]) -> Result<()> {
        let i = self
            .tables
            .partition_point(|t| key::compare(&t.props().last_key, target) == Ordering::Less);
        self.open(i);
        if let Some(c) = &mut self.cur {
            c.seek(target)?;
        }
        self.settle()
    }
    fn next(&mut self) -> Result<()> {
        if let Some(c) = &mut self.cur {
            c.next()?;
        }
        self.settle()
    }
    fn key(&self) -> &[u8] {
        self.cur.as_ref().expect("valid").key()
    }
    fn value_ref(&self) -> &[u8] {
        self.cur.as_ref().expect("valid").value_ref()
    }
    fn value(&self) -> Bytes {
        self.cur.as_ref().expect("valid").value()
    }
}
