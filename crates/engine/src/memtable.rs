//! The memtable: an arena skiplist (see `skiplist`) of internal keys to
//! values, with a hash index for point lookups and the byte size that
//! decides when it becomes immutable. Owns snapshot reads and iteration
//! over the in-memory data; must not touch the WAL or files. Inserts come
//! from one thread at a time (the commit leader, or recovery); reads come
//! from anywhere, without locks.

use std::sync::Arc;

use bytes::Bytes;

use crate::error::Result;
use crate::iterator::{InternalIterator, Lookup};
use crate::key::{self, Kind};
use crate::skiplist::{Cursor, Entry, SkipList};

pub struct Memtable {
    /// Its hash index answers point lookups: a key the memtable does not
    /// hold (the common case for reads) costs one bucket, a key it holds a
    /// node or two, where a skiplist search would cost a cache miss on
    /// most of twenty levels.
    list: SkipList,
    /// Number of the WAL file whose records this memtable holds.
    wal: u64,
    /// Bytes at which it is full and makes way for a new one.
    limit: usize,
}

/// Capacity bytes per hash bucket: entries of 100-byte values take about
/// 200 bytes of arena, so this is about one bucket per entry (4 MiB of
/// buckets for a 64 MiB memtable).
const BYTES_PER_BUCKET: usize = 128;

impl Memtable {
    /// A memtable for WAL segment `wal`, sized for about `capacity` bytes.
    pub fn new(wal: u64, capacity: usize) -> Self {
        let buckets = (capacity / BYTES_PER_BUCKET).clamp(1 << 10, 1 << 24);
        Memtable {
            list: SkipList::new(buckets),
            wal,
            limit: capacity,
        }
    }

    /// The same, full at `limit` bytes instead of its capacity (the first
    /// memtable after opening, at a random share of it: `Inner::open`).
    pub fn with_limit(mut self, limit: usize) -> Self {
        self.limit = limit;
        self
    }

    /// Whether it holds its limit: the next write switches to a new one.
    pub fn full(&self) -> bool {
        self.size() >= self.limit
    }

    pub fn wal(&self) -> u64 {
        self.wal
    }

    /// Insert one entry (tests; the engine inserts a group at a time).
    #[cfg(test)]
    pub fn insert(&self, user: &[u8], seq: u64, kind: Kind, value: &[u8]) {
        self.insert_many(&[(user, seq, kind, value)]);
    }

    /// Insert entries (user key, sequence, kind, value), as inserting them
    /// one by one would, with their searches overlapped (see
    /// `SkipList::insert_many`). Callers serialise inserts (one writer at
    /// a time); `entries` holds one key's entries in sequence order.
    pub fn insert_many(&self, entries: &[(&[u8], u64, Kind, &[u8])]) {
        let entries: Vec<Entry<'_>> = entries
            .iter()
            .map(|&(user, seq, kind, value)| Entry {
                user,
                hash: key_hash(user),
                trailer: key::trailer(seq, kind),
                value,
            })
            .collect();
        self.list.insert_many(&entries);
    }

    /// Bytes of memory held.
    pub fn size(&self) -> usize {
        self.list.memory()
    }

    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// Newest version of `user` with sequence <= `snapshot`; `hash` is
    /// `key_hash(user)`.
    pub fn get(&self, user: &[u8], hash: u64, snapshot: u64) -> Option<Lookup> {
        // A fresh memtable's hash index is megabytes of empty buckets: a
        // lookup would miss the CPU's caches for nothing. (An entry at or
        // below `snapshot` was counted before the snapshot was published.)
        if self.list.is_empty() {
            return None;
        }
        let c = self.list.find(user, hash, key::seek_trailer(snapshot));
        if !c.valid() {
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

/// The hash the memtable indexes `user` by (the tables' bloom hash, so a
/// lookup computes it once for both).
#[inline]
pub fn key_hash(user: &[u8]) -> u64 {
    crate::sstable::bloom::hash(user)
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
        assert_eq!(m.get(b"a", key_hash(b"a"), 0), None);
        assert_eq!(
            m.get(b"a", key_hash(b"a"), 1),
            Some(Lookup::Value(Bytes::from_static(b"v1")))
        );
        assert_eq!(
            m.get(b"a", key_hash(b"a"), 4),
            Some(Lookup::Value(Bytes::from_static(b"v3")))
        );
        assert_eq!(m.get(b"a", key_hash(b"a"), 9), Some(Lookup::Deleted));
        assert_eq!(m.get(b"b", key_hash(b"b"), 9), None);
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
