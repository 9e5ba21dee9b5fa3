//! The memtable: a concurrent lock-free skiplist (crossbeam-skiplist) of
//! internal keys to values, with a byte-size estimate that decides when it
//! becomes immutable. Owns in-memory ordering and snapshot reads; must not
//! touch the WAL or files.

use std::cmp::Ordering;
use std::ops::Bound;
use std::sync::atomic::{AtomicUsize, Ordering as AtomicOrdering};
use std::sync::Arc;

use bytes::Bytes;
use crossbeam_skiplist::map::Entry;
use crossbeam_skiplist::SkipMap;

use crate::iterator::InternalIterator;
use crate::key::{self, Kind};

/// Per-entry overhead added to the size estimate (skiplist node, Bytes headers).
const ENTRY_OVERHEAD: usize = 80;

/// A key in the skiplist: user key ascending, then trailer descending. The
/// first 16 bytes are kept inline so that most comparisons never follow the
/// pointer to the key bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemKey {
    prefix: u128,
    pub user: Bytes,
    pub trailer: u64,
}

impl MemKey {
    pub fn new(user: Bytes, trailer: u64) -> Self {
        MemKey {
            prefix: key::prefix(&user),
            user,
            trailer,
        }
    }
}

impl Ord for MemKey {
    #[inline]
    fn cmp(&self, o: &Self) -> Ordering {
        self.prefix
            .cmp(&o.prefix)
            .then_with(|| {
                if self.user.len() <= 16 && o.user.len() <= 16 {
                    self.user.len().cmp(&o.user.len())
                } else {
                    key::cmp_bytes(&self.user, &o.user)
                }
            })
            .then_with(|| o.trailer.cmp(&self.trailer))
    }
}

impl PartialOrd for MemKey {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}

/// What a point lookup found in one source.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Lookup {
    Value(Bytes),
    Deleted,
}

pub struct Memtable {
    map: SkipMap<MemKey, Bytes>,
    size: AtomicUsize,
    /// Number of the WAL file whose records this memtable holds.
    wal: u64,
}

impl Memtable {
    pub fn new(wal: u64) -> Self {
        Memtable {
            map: SkipMap::new(),
            size: AtomicUsize::new(0),
            wal,
        }
    }

    pub fn wal(&self) -> u64 {
        self.wal
    }

    pub fn insert(&self, user: Bytes, seq: u64, kind: Kind, value: Bytes) {
        let add = user.len() + value.len() + ENTRY_OVERHEAD;
        self.map
            .insert(MemKey::new(user, key::trailer(seq, kind)), value);
        self.size.fetch_add(add, AtomicOrdering::Relaxed);
    }

    /// Estimated bytes held.
    pub fn size(&self) -> usize {
        self.size.load(AtomicOrdering::Relaxed)
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// Newest version of `user` with sequence <= `snapshot`.
    pub fn get(&self, user: &[u8], snapshot: u64) -> Option<Lookup> {
        let probe = MemKey::new(Bytes::copy_from_slice(user), key::seek_trailer(snapshot));
        let e = self.map.lower_bound(Bound::Included(&probe))?;
        if e.key().user.as_ref() != user {
            return None;
        }
        Some(match key::trailer_kind(e.key().trailer) {
            Some(Kind::Put) => Lookup::Value(e.value().clone()),
            _ => Lookup::Deleted,
        })
    }

    /// An iterator over every entry, in internal-key order.
    pub fn iter(self: &Arc<Self>) -> MemIter {
        MemIter {
            entry: None,
            key_buf: Vec::new(),
            mem: self.clone(),
        }
    }
}

/// An owning iterator over a memtable in internal-key order.
pub struct MemIter {
    // Field order matters: `entry` borrows from `mem` and is dropped first.
    entry: Option<Entry<'static, MemKey, Bytes>>,
    key_buf: Vec<u8>,
    mem: Arc<Memtable>,
}

impl MemIter {
    /// The skiplist with the lifetime of this iterator's own Arc.
    fn map(&self) -> &'static SkipMap<MemKey, Bytes> {
        // SAFETY: the map lives inside `self.mem`, an Arc this iterator owns
        // and never replaces. Entries borrowed from it are stored only in
        // `self.entry`, which is dropped before `self.mem` (field order), and
        // never handed out with a longer lifetime.
        unsafe { &*(&self.mem.map as *const SkipMap<MemKey, Bytes>) }
    }

    fn set(&mut self, e: Option<Entry<'static, MemKey, Bytes>>) {
        self.key_buf.clear();
        if let Some(e) = &e {
            key::encode_into(&mut self.key_buf, &e.key().user, e.key().trailer);
        }
        self.entry = e;
    }
}

impl InternalIterator for MemIter {
    fn valid(&self) -> bool {
        self.entry.is_some()
    }

    fn seek_to_first(&mut self) -> crate::Result<()> {
        let e = self.map().front();
        self.set(e);
        Ok(())
    }

    fn seek(&mut self, target: &[u8]) -> crate::Result<()> {
        let (user, trailer) = key::split(target);
        let probe = MemKey::new(Bytes::copy_from_slice(user), trailer);
        let e = self.map().lower_bound(Bound::Included(&probe));
        self.set(e);
        Ok(())
    }

    fn next(&mut self) -> crate::Result<()> {
        let e = self.entry.as_ref().and_then(|e| e.next());
        self.set(e);
        Ok(())
    }

    fn key(&self) -> &[u8] {
        &self.key_buf
    }

    fn value(&self) -> Bytes {
        self.entry.as_ref().expect("valid").value().clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snapshot_reads_and_tombstones() {
        let m = Memtable::new(1);
        m.insert(
            Bytes::from_static(b"a"),
            1,
            Kind::Put,
            Bytes::from_static(b"v1"),
        );
        m.insert(
            Bytes::from_static(b"a"),
            3,
            Kind::Put,
            Bytes::from_static(b"v3"),
        );
        m.insert(Bytes::from_static(b"a"), 5, Kind::Delete, Bytes::new());
        m.insert(
            Bytes::from_static(b"ab"),
            2,
            Kind::Put,
            Bytes::from_static(b"x"),
        );
        assert_eq!(m.get(b"a", 0), None);
        assert_eq!(
            m.get(b"a", 1),
            Some(Lookup::Value(Bytes::from_static(b"v1")))
        );
        assert_eq!(
            m.get(b"a", 4),
            Some(Lookup::Value(Bytes::from_static(b"v3")))
        );
        assert_eq!(m.get(b"a", 9), Some(Lookup::Deleted));
        assert_eq!(m.get(b"b", 9), None);
        assert!(m.size() > 0);
    }

    #[test]
    fn iterator_orders_internal_keys() {
        let m = Arc::new(Memtable::new(1));
        m.insert(
            Bytes::from_static(b"b"),
            1,
            Kind::Put,
            Bytes::from_static(b"1"),
        );
        m.insert(
            Bytes::from_static(b"a"),
            2,
            Kind::Put,
            Bytes::from_static(b"2"),
        );
        m.insert(
            Bytes::from_static(b"a"),
            3,
            Kind::Put,
            Bytes::from_static(b"3"),
        );
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
