//! Reading sources: the point-lookup result and the internal-iterator trait
//! every sorted source implements,
//! the merging iterator over several sources, and the user-facing scan that
//! hides old versions and tombstones at one snapshot. Must not know where a
//! source's bytes live.

use std::cmp::Ordering;
use std::ops::Bound;

use bytes::Bytes;

use crate::error::Result;
use crate::key::{self, Kind};

/// What a point lookup found in one source.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Lookup {
    Value(Bytes),
    Deleted,
}

/// A positioned cursor over internal keys in sorted order.
pub trait InternalIterator: Send {
    fn valid(&self) -> bool;
    fn seek_to_first(&mut self) -> Result<()>;
    /// Position at the first entry >= `target` (an encoded internal key).
    fn seek(&mut self, target: &[u8]) -> Result<()>;
    fn next(&mut self) -> Result<()>;
    /// Encoded internal key of the current entry.
    fn key(&self) -> &[u8];
    /// The current value, borrowed.
    fn value_ref(&self) -> &[u8];
    /// The current value as an owned handle (zero-copy where the source
    /// allows).
    fn value(&self) -> Bytes;
}

/// Merges several sources into one sorted stream. Sources earlier in the list
/// are newer; with unique sequence numbers ties never happen, but if they did
/// the earlier source would win.
pub struct MergeIterator {
    children: Vec<Box<dyn InternalIterator>>,
    current: Option<usize>,
}

impl MergeIterator {
    pub fn new(children: Vec<Box<dyn InternalIterator>>) -> Self {
        MergeIterator {
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
                None => Some(i),
                Some(b) => {
                    if key::compare(c.key(), self.children[b].key()) == Ordering::Less {
                        Some(i)
                    } else {
                        Some(b)
                    }
                }
            };
        }
        self.current = best;
    }
}

impl InternalIterator for MergeIterator {
    fn valid(&self) -> bool {
        self.current.is_some()
    }
    fn seek_to_first(&mut self) -> Result<()> {
        for c in &mut self.children {
            c.seek_to_first()?;
        }
        self.pick();
        Ok(())
    }
    fn seek(&mut self, target: &[u8]) -> Result<()> {
        for c in &mut self.children {
            c.seek(target)?;
        }
        self.pick();
        Ok(())
    }
    fn next(&mut self) -> Result<()> {
        if let Some(i) = self.current {
            self.children[i].next()?;
            self.pick();
        }
        Ok(())
    }
    fn key(&self) -> &[u8] {
        self.children[self.current.expect("valid")].key()
    }
    fn value_ref(&self) -> &[u8] {
        self.children[self.current.expect("valid")].value_ref()
    }
    fn value(&self) -> Bytes {
        self.children[self.current.expect("valid")].value()
    }
}

/// The user-facing scan: yields `(key, value)` for the newest visible version
/// of each user key in `[start, end)`, hiding tombstones. It holds the set of
/// sources it was created with, so it sees one point in time however long it
/// runs, while writes, flushes and compactions go on.
pub struct DbIterator {
    inner: MergeIterator,
    snapshot: u64,
    end: Bound<Vec<u8>>,
    started: bool,
    start: Bound<Vec<u8>>,
    last_user: Vec<u8>,
    has_last: bool,
    done: bool,
    // Keeps the memtables and tables alive while the scan runs.
    _pin: Box<dyn Send + Sync>,
}

impl DbIterator {
    pub(crate) fn new(
        inner: MergeIterator,
        snapshot: u64,
        start: Bound<Vec<u8>>,
        end: Bound<Vec<u8>>,
        pin: Box<dyn Send + Sync>,
    ) -> Self {
        DbIterator {
            inner,
            snapshot,
            end,
            started: false,
            start,
            last_user: Vec::new(),
            has_last: false,
            done: false,
            _pin: pin,
        }
    }

    fn init(&mut self) -> Result<()> {
        self.started = true;
        match &self.start {
            Bound::Unbounded => self.inner.seek_to_first(),
            Bound::Included(s) => self
                .inner
                .seek(&key::encode(s, key::seek_trailer(key::MAX_SEQ))),
            Bound::Excluded(s) => {
                // Seek past every version of `s`.
                self.last_user = s.clone();
                self.has_last = true;
                self.inner
                    .seek(&key::encode(s, key::seek_trailer(key::MAX_SEQ)))
            }
        }
    }

    fn past_end(&self, user: &[u8]) -> bool {
        match &self.end {
            Bound::Unbounded => false,
            Bound::Excluded(e) => user >= e.as_slice(),
            Bound::Included(e) => user > e.as_slice(),
        }
    }

    fn advance(&mut self) -> Result<Option<(Bytes, Bytes)>> {
        if !self.started {
            self.init()?;
        }
        while self.inner.valid() {
            let (user, trailer) = key::split(self.inner.key());
            if self.past_end(user) {
                self.done = true;
                return Ok(None);
            }
            let seq = key::trailer_seq(trailer);
            if seq > self.snapshot || (self.has_last && user == self.last_user.as_slice()) {
                self.inner.next()?;
                continue;
            }
            self.last_user.clear();
            self.last_user.extend_from_slice(user);
            self.has_last = true;
            let kind = key::trailer_kind(trailer);
            if kind == Some(Kind::Put) {
                let k = Bytes::copy_from_slice(user);
                let v = self.inner.value();
                self.inner.next()?;
                return Ok(Some((k, v)));
            }
            self.inner.next()?;
        }
        self.done = true;
        Ok(None)
    }
}

impl Iterator for DbIterator {
    type Item = Result<(Bytes, Bytes)>;
    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        match self.advance() {
            Ok(Some(kv)) => Some(Ok(kv)),
            Ok(None) => None,
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
        }
    }
}

/// An iterator over a fixed in-memory list; used in tests.
#[cfg(test)]
pub struct VecIter {
    items: Vec<(Vec<u8>, Bytes)>,
    pos: usize,
}

#[cfg(test)]
impl VecIter {
    pub fn new(mut items: Vec<(Vec<u8>, Bytes)>) -> Self {
        items.sort_by(|a, b| key::compare(&a.0, &b.0));
        VecIter {
            pos: items.len(),
            items,
        }
    }
}

#[cfg(test)]
impl InternalIterator for VecIter {
    fn valid(&self) -> bool {
        self.pos < self.items.len()
    }
    fn seek_to_first(&mut self) -> Result<()> {
        self.pos = 0;
        Ok(())
    }
    fn seek(&mut self, t: &[u8]) -> Result<()> {
        self.pos = self
            .items
            .partition_point(|(k, _)| key::compare(k, t) == Ordering::Less);
        Ok(())
    }
    fn next(&mut self) -> Result<()> {
        self.pos += 1;
        Ok(())
    }
    fn key(&self) -> &[u8] {
        &self.items[self.pos].0
    }
    fn value_ref(&self) -> &[u8] {
        &self.items[self.pos].1
    }
    fn value(&self) -> Bytes {
        self.items[self.pos].1.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::trailer;

    fn e(k: &str, seq: u64, kind: Kind, v: &str) -> (Vec<u8>, Bytes) {
        (
            key::encode(k.as_bytes(), trailer(seq, kind)),
            Bytes::copy_from_slice(v.as_bytes()),
        )
    }

    #[test]
    fn merge_hides_old_versions_and_tombstones() {
        let newer = VecIter::new(vec![
            e("b", 5, Kind::Delete, ""),
            e("c", 6, Kind::Put, "c6"),
        ]);
        let older = VecIter::new(vec![
            e("a", 1, Kind::Put, "a1"),
            e("b", 2, Kind::Put, "b2"),
            e("c", 3, Kind::Put, "c3"),
            e("d", 4, Kind::Put, "d4"),
        ]);
        let m = MergeIterator::new(vec![Box::new(newer), Box::new(older)]);
        let it = DbIterator::new(
            m,
            10,
            Bound::Unbounded,
            Bound::Excluded(b"d".to_vec()),
            Box::new(()),
        );
        let got: Vec<_> = it.map(|r| r.unwrap()).collect();
        let got: Vec<_> = got
            .iter()
            .map(|(k, v)| {
                (
                    std::str::from_utf8(k).unwrap(),
                    std::str::from_utf8(v).unwrap(),
                )
            })
            .collect();
        assert_eq!(got, [("a", "a1"), ("c", "c6")]);
    }

    #[test]
    fn snapshot_filters_newer_entries() {
        let src = VecIter::new(vec![
            e("a", 1, Kind::Put, "old"),
            e("a", 7, Kind::Put, "new"),
            e("b", 8, Kind::Put, "x"),
        ]);
        let m = MergeIterator::new(vec![Box::new(src)]);
        let it = DbIterator::new(m, 5, Bound::Unbounded, Bound::Unbounded, Box::new(()));
        let got: Vec<_> = it.map(|r| r.unwrap()).collect();
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].1.as_ref(), b"old");
    }

    #[test]
    fn excluded_start() {
        let src = VecIter::new(vec![e("a", 1, Kind::Put, "1"), e("b", 2, Kind::Put, "2")]);
        let m = MergeIterator::new(vec![Box::new(src)]);
        let it = DbIterator::new(
            m,
            5,
            Bound::Excluded(b"a".to_vec()),
            Bound::Unbounded,
            Box::new(()),
        );
        let got: Vec<_> = it.map(|r| r.unwrap().0).collect();
        assert_eq!(got, [Bytes::from_static(b"b")]);
    }
}
