//! The memtable: an arena skiplist (see `skiplist`) of internal keys to
//! values, with the byte size that decides when it becomes immutable. Owns
//! snapshot reads and iteration over the in-memory data; must not touch the
//! WAL or files. Inserts come from one thread at a time (the commit leader,
//! or recovery); reads come from anywhere, without locks.

use std::sync::atomic::{AtomicU64, Ordering as AtomicOrdering};
use std::sync::Arc;

use bytes::Bytes;

use crate::error::Result;
use crate::iterator::{InternalIterator, Lookup};
use crate::key::{self, Kind};
use crate::skiplist::{Cursor, SkipList};
use crate::sstable::bloom;

pub struct Memtable {
    list: SkipList,
    /// A bloom filter over the user keys inserted, so that a lookup of a key
    /// the memtable does not hold (the common case for reads) skips the
    /// skiplist search and its cache misses. Bits are set before the entry
    /// is published, so a reader that can see an entry sees its bits.
    filter: Box<[AtomicU64]>,
    /// Number of the WAL file whose records this memtable holds.
    wal: u64,
}

const FILTER_PROBES: u32 = 4;

impl Memtable {
    /// A memtable for WAL segment `wal`, sized for about `capacity` bytes
    /// (the filter gets one bit per 8 bytes of capacity).
    pub fn new(wal: u64, capacity: usize) -> Self {
        let words = (capacity / 8 / 64).clamp(16, 1 << 24);
        Memtable {
            list: SkipList::new(),
            filter: (0..words).map(|_| AtomicU64::new(0)).collect(),
            wal,
        }
    }

    #[inline]
    fn filter_bits(&self, hash: u64) -> impl Iterator<Item = (usize, u64)> + '_ {
        let nbits = self.filter.len() as u64 * 64;
        let delta = hash.rotate_left(21) | 1;
        (0..FILTER_PROBES as u64).map(move |i| {
            let bit = hash.wrapping_add(i.wrapping_mul(delta)) % nbits;
            ((bit / 64) as usize, 1u64 << (bit % 64))
        })
    }

    /// False if `user` (with filter hash `hash`) was certainly never inserted.
    #[inline]
    pub fn may_contain(&self, hash: u64) -> bool {
        self.filter_bits(hash)
            .all(|(w, m)| self.filter[w].load(AtomicOrdering::Relaxed) & m != 0)
    }

    pub fn wal(&self) -> u64 {
        self.wal
    }

    /// Insert one entry. Callers serialise inserts (one writer at a time).
    pub fn insert(&self, user: &[u8], seq: u64, kind: Kind, value: &[u8]) {
        for (w, m) in self.filter_bits(bloom::hash(user)) {
            self.filter[w].fetch_or(m, AtomicOrdering::Relaxed);
        }
        self.list.insert(user, key::trailer(seq, kind), value);
    }

    /// Bytes of memory held.
    pub fn size(&self) -> usize {
        self.list.memory()
    }

    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// Newest version of `user` with sequence <= `snapshot`; `hash` is
    /// `bloom::hash(user)`.
    pub fn get(&self, user: &[u8], hash: u64, snapshot: u64) -> Option<Lookup> {
        if !self.may_contain(hash) {
            return None;
        }
        let mut c = self.list.cursor();
        c.seek(user, key::seek_trailer(snapshot));
        if !c.valid() || c.user_key() != user {
            return None;
        }
        Some(match key::trailer_kind(c.trailer()) {
            Some(Kind::Put) => Lookup::Value(Bytes::copy_from_slice(c.value())),
            _ => Lookup::Deleted,
        })
    }

    /// An iterator over every entry, in internal-key order.
    pub fn iter(self: &Arc<Self>) -> MemIter {
        MemIter {
            cursor: self.list.cursor(),
            key_buf: Vec::new(),
            _mem: self.clone(),
        }
    }
}

/// An owning iterator over a memtable in internal-key order.
pub struct MemIter {
    /// Points into `_mem`'s skiplist, which the Arc keeps alive.
    cursor: Cursor,
    key_buf: Vec<u8>,
    _mem: Arc<Memtable>,
}

impl MemIter {
    fn settle(&mut self) {
        self.key_buf.clear();
        if self.cursor.valid() {
            key::encode_into(
                &mut self.key_buf,
                self.cursor.user_key(),
                self.cursor.trailer(),
            );
        }
    }
}

impl InternalIterator for MemIter {
    fn valid(&self) -> bool {
        self.cursor.valid()
    }

    fn seek_to_first(&mut self) -> Result<()> {
        self.cursor.seek_to_first();
        self.settle();
        Ok(())
    }

    fn seek(&mut self, target: &[u8]) -> Result<()> {
        let (user, trailer) = key::split(target);
        self.cursor.seek(user, trailer);
        self.settle();
        Ok(())
    }

    fn next(&mut self) -> Result<()> {
        self.cursor.next();
        self.settle();
        Ok(())
    }

    fn key(&self) -> &[u8] {
        &self.key_buf
    }

    fn value_ref(&self) -> &[u8] {
        self.cursor.value()
    }

    fn value(&self) -> Bytes {
        Bytes::copy_from_slice(self.cursor.value())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snapshot_reads_and_tombstones() {
        let m = Memtable::new(1, 1 << 16);
        m.insert(b"a", 1, Kind::Put, b"v1");
        m.insert(b"a", 3, Kind::Put, b"v3");
        m.insert(b"a", 5, Kind::Delete, b"");
        m.insert(b"ab", 2, Kind::Put, b"x");
        assert_eq!(m.get(b"a", bloom::hash(b"a"), 0), None);
        assert_eq!(
            m.get(b"a", bloom::hash(b"a"), 1),
            Some(Lookup::Value(Bytes::from_static(b"v1")))
        );
        assert_eq!(
            m.get(b"a", bloom::hash(b"a"), 4),
            Some(Lookup::Value(Bytes::from_static(b"v3")))
        );
        assert_eq!(m.get(b"a", bloom::hash(b"a"), 9), Some(Lookup::Deleted));
        assert_eq!(m.get(b"b", bloom::hash(b"b"), 9), None);
        assert!(m.size() > 0);
    }

    #[test]
    fn iterator_orders_internal_keys() {
        let m = Arc::new(Memtable::new(1, 1 << 16));
        m.insert(b"b", 1, Kind::Put, b"1");
        m.insert(b"a", 2, Kind::Put, b"2");
        m.insert(b"a", 3, Kind::Put, b"3");
        let mut it = m.iter();
        it.seek_to_first().unwrap();
        let mut seen = vec![];
        while it.valid() {
            let (u, t) = key::split(it.key());
            seen.push((u.to_vec(), key::trailer_seq(t), it.value()));
            it.next().unwrap();
        }
        assert_eq!(seen[0].1, 3);
        assert_eq!(seen[1].1, 2);
        assert_eq!(seen[2].0, b"b");
        it.seek(&key::encode(b"a", key::seek_trailer(2))).unwrap();
        assert_eq!(key::trailer_seq(key::split(it.key()).1), 2);
    }
}
