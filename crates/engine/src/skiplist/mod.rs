//! An arena-backed skiplist of internal keys, in LevelDB's design: one
//! writer at a time, any number of lock-free readers. Nodes (header, tower of
//! next pointers, key and value bytes) are laid out back to back in large
//! arena chunks, so a search touches few cache lines and a memtable of a
//! million entries costs a few dozen allocations, not millions. Nodes are
//! never removed; the whole arena is freed when the list is dropped.
//!
//! Beside the ordered links, every node is also chained into a bucket of a
//! fixed hash table by its user key's hash, newest first, so that a point
//! lookup costs a bucket and a node or two instead of a search down twenty
//! levels of random nodes (each a cache miss in a 64 MiB memtable). Each
//! chain link carries 15 bits of the hash of the node it points to and
//! whether that node has older ones after it, so a lookup of an absent key
//! usually stops at the bucket without touching a node.
//!
//! Owns the memory layout and the publication protocol (a new node is fully
//! written before a Release store links it; readers follow links with
//! Acquire loads). Must not know about sequence visibility or the WAL.

use std::alloc::{alloc, dealloc, Layout};
use std::cmp::Ordering;
use std::ptr::{self, NonNull};
use std::sync::atomic::{AtomicPtr, AtomicU64, AtomicUsize, Ordering as AtomicOrdering};

use parking_lot::Mutex;

use crate::key;

pub const MAX_HEIGHT: usize = 20;
/// Arena chunks are 2 MiB and 2 MiB-aligned, and asked to be backed by a
/// transparent huge page: a search jumps between random nodes of a 64 MiB
/// memtable, and with 4 KiB pages nearly every jump also misses the TLB.
const CHUNK: usize = 2 << 20;
const ALIGN: usize = 64;

/// Fixed part of a node; `height` next pointers, the key and the value
/// follow it in memory.
#[repr(C)]
struct Head {
    prefix: u128,
    /// The next older node in the same hash bucket, as a `Link`.
    chain: AtomicU64,
    trailer: u64,
    value_len: u64,
    key_len: u32,
    height: u32,
}

const HEAD: usize = std::mem::size_of::<Head>();

impl Head {
    #[inline]
    fn tower(&self) -> *const AtomicPtr<Head> {
        // SAFETY: the tower follows the head in the same allocation.
        unsafe { (self as *const Head as *const u8).add(HEAD) as *const AtomicPtr<Head> }
    }

    #[inline]
    fn next(&self, level: usize) -> &AtomicPtr<Head> {
        debug_assert!(level < self.height as usize);
        // SAFETY: level < height, and the tower has `height` slots.
        unsafe { &*self.tower().add(level) }
    }

    #[inline]
    fn key(&self) -> &[u8] {
        // SAFETY: key_len bytes follow the tower, written before publication.
        unsafe {
            let p = (self.tower() as *const u8).add(self.height as usize * 8);
            std::slice::from_raw_parts(p, self.key_len as usize)
        }
    }

    #[inline]
    fn value(&self) -> &[u8] {
        // SAFETY: value_len bytes follow the key, written before publication.
        unsafe {
            let p =
                (self.tower() as *const u8).add(self.height as usize * 8 + self.key_len as usize);
            std::slice::from_raw_parts(p, self.value_len as usize)
        }
    }

    /// Order of this node against (prefix, user key, trailer).
    #[inline]
    fn cmp_to(&self, prefix: u128, user: &[u8], trailer: u64) -> Ordering {
        self.prefix
            .cmp(&prefix)
            .then_with(|| {
                if self.key_len <= 16 && user.len() <= 16 {
                    (self.key_len as usize).cmp(&user.len())
                } else {
                    key::cmp_bytes(self.key(), user)
                }
            })
            .then_with(|| trailer.cmp(&self.trailer))
    }
}

struct Arena {
    chunks: Vec<(NonNull<u8>, Layout)>,
    cur: *mut u8,
    left: usize,
    rng: u64,
}

// SAFETY: the arena's raw pointers refer to memory owned by the arena, used
// only under the writer lock.
unsafe impl Send for Arena {}

impl Arena {
    fn alloc(&mut self, size: usize) -> *mut u8 {
        let size = size.next_multiple_of(ALIGN);
        if size > CHUNK / 4 {
            // A big node gets a chunk of its own; the current chunk stays.
            return self.new_chunk(size.next_multiple_of(CHUNK));
        }
        if size > self.left {
            self.cur = self.new_chunk(CHUNK);
            self.left = CHUNK;
        }
        let p = self.cur;
        // SAFETY: size <= left, inside the current chunk.
        self.cur = unsafe { self.cur.add(size) };
        self.left -= size;
        p
    }

    fn new_chunk(&mut self, cap: usize) -> *mut u8 {
        let layout = Layout::from_size_align(cap, CHUNK).expect("chunk layout");
        // SAFETY: layout has non-zero size.
        let p = unsafe { alloc(layout) };
        let p = NonNull::new(p).unwrap_or_else(|| std::alloc::handle_alloc_error(layout));
        // SAFETY: advice on memory we own; failure is harmless.
        unsafe { libc::madvise(p.as_ptr().cast(), cap, libc::MADV_HUGEPAGE) };
        self.chunks.push((p, layout));
        p.as_ptr()
    }

    fn random_height(&mut self) -> usize {
        let mut h = 1;
        while h < MAX_HEIGHT {
            // xorshift64
            self.rng ^= self.rng << 13;
            self.rng ^= self.rng >> 7;
            self.rng ^= self.rng << 17;
            if self.rng & 1 != 0 {
                break;
            }
            h += 1;
        }
        h
    }
}

impl Drop for Arena {
    fn drop(&mut self) {
        for (p, l) in self.chunks.drain(..) {
            // SAFETY: allocated with this layout in `alloc`.
            unsafe { dealloc(p.as_ptr(), l) };
        }
    }
}

/// One entry to insert: `hash` is the user key's hash, for `find`.
pub struct Entry<'a> {
    pub user: &'a [u8],
    pub hash: u64,
    pub trailer: u64,
    pub value: &'a [u8],
}

/// Searches `insert_many` runs side by side.
const WAVE: usize = 8;

/// One search of `insert_many`: where it is, and the last node before its
/// entry at each level it has left.
struct Finger {
    prefix: u128,
    x: *const Head,
    level: usize,
    done: bool,
    prev: [*const Head; MAX_HEIGHT],
}

/// Ask for the cache line of `node` ahead of its use (a hint: no effect on
/// other targets, and a null node costs nothing).
#[inline]
fn prefetch(node: *const Head) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch never faults, whatever the address.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(node.cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = node;
}

pub struct SkipList {
    head: *const Head,
    /// Hash buckets (a power of two of them), each a `Link` to the newest
    /// node of its chain (0: empty).
    buckets: Box<[AtomicU64]>,
    height: AtomicUsize,
    arena: Mutex<Arena>,
    bytes: AtomicUsize,
    len: AtomicUsize,
}

// SAFETY: nodes are immutable once published and published with Release;
// the arena is only touched under its mutex.
unsafe impl Send for SkipList {}
unsafe impl Sync for SkipList {}

impl SkipList {
    /// An empty list whose hash index has `buckets` buckets (rounded up to
    /// a power of two). About one bucket per entry expected keeps chains
    /// short; more only costs memory (8 bytes a bucket).
    pub fn new(buckets: usize) -> Self {
        let mut arena = Arena {
            chunks: Vec::new(),
            cur: ptr::null_mut(),
            left: 0,
            rng: 0x2545_F491_4F6C_DD1D,
        };
        let p = arena.alloc(HEAD + MAX_HEIGHT * 8);
        let head = p as *mut Head;
        // SAFETY: p is a fresh, aligned allocation of the right size.
        unsafe {
            head.write(Head {
                prefix: 0,
                chain: AtomicU64::new(0),
                trailer: 0,
                value_len: 0,
                key_len: 0,
                height: MAX_HEIGHT as u32,
            });
            for i in 0..MAX_HEIGHT {
                (*head)
                    .tower()
                    .add(i)
                    .cast_mut()
                    .write(AtomicPtr::new(ptr::null_mut()));
            }
        }
        let buckets = buckets.max(1).next_power_of_two();
        SkipList {
            head,
            buckets: (0..buckets).map(|_| AtomicU64::new(0)).collect(),
            height: AtomicUsize::new(1),
            arena: Mutex::new(arena),
            bytes: AtomicUsize::new(0),
            len: AtomicUsize::new(0),
        }
    }

    /// Bytes of arena memory used by entries. Not counted: up to 2 MiB of
    /// a chunk not yet used, and the hash index (8 bytes a bucket, fixed
    /// when the list is made).
    pub fn memory(&self) -> usize {
        self.bytes.load(AtomicOrdering::Relaxed)
    }

    pub fn len(&self) -> usize {
        self.len.load(AtomicOrdering::Relaxed)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn head(&self) -> &Head {
        // SAFETY: the head node lives as long as the list.
        unsafe { &*self.head }
    }

    /// The first node >= (user, trailer); with `prev`, also the last node
    /// before it at every level.
    fn seek(
        &self,
        user: &[u8],
        trailer: u64,
        mut prev: Option<&mut [*const Head; MAX_HEIGHT]>,
    ) -> *const Head {
        let prefix = key::prefix(user);
        let mut x = self.head();
        let mut level = self.height.load(AtomicOrdering::Acquire) - 1;
        loop {
            let next = x.next(level).load(AtomicOrdering::Acquire);
            // SAFETY: published nodes stay valid as long as the list.
            if !next.is_null() && unsafe { &*next }.cmp_to(prefix, user, trailer) == Ordering::Less
            {
                x = unsafe { &*next };
                continue;
            }
            if let Some(p) = prev.as_deref_mut() {
                p[level] = x;
            }
            if level == 0 {
                return next;
            }
            level -= 1;
        }
    }

    #[inline]
    fn bucket(&self, hash: u64) -> &AtomicU64 {
        &self.buckets[hash as usize & (self.buckets.len() - 1)]
    }

    /// The newest entry for `user` whose trailer is at most `max_trailer`,
    /// found through the hash index; `hash` is the one given to `insert`.
    /// Relies on the entries of one user key being inserted oldest first
    /// (the sequence order every caller inserts in).
    pub fn find(&self, user: &[u8], hash: u64, max_trailer: u64) -> Cursor {
        let prefix = key::prefix(user);
        let tag = Link::tag(hash);
        let mut l = Link(self.bucket(hash).load(AtomicOrdering::Acquire));
        while let Some(n) = l.node() {
            if l.has_tag(tag) {
                if n.trailer <= max_trailer
                    && n.prefix == prefix
                    && n.key_len as usize == user.len()
                    && (user.len() <= 16 || n.key() == user)
                {
                    return Cursor {
                        list: self,
                        node: n,
                    };
                }
            } else if !l.more() {
                break;
            }
            l = Link(n.chain.load(AtomicOrdering::Acquire));
        }
        Cursor {
            list: self,
            node: ptr::null(),
        }
    }

    /// Insert an entry; `hash` is the user key's hash, for `find`. Entries
    /// are unique by (user, trailer); inserting the same pair twice is a
    /// caller bug, and so is inserting an older version of a key after a
    /// newer one.
    pub fn insert(&self, user: &[u8], hash: u64, trailer: u64, value: &[u8]) {
        let mut arena = self.arena.lock();
        let mut prev = [self.head; MAX_HEIGHT];
        self.seek(user, trailer, Some(&mut prev));
        self.place(
            &mut arena,
            &Entry {
                user,
                hash,
                trailer,
                value,
            },
            &mut prev,
        );
        drop(arena);
    }

    /// Insert several entries, as `insert` one after the other would (the
    /// same rules: entries of one user key oldest first, in `entries` and
    /// after what the list holds). The searches for their places run side
    /// by side, one step of each in turn, each step prefetching the node
    /// the next step of that search will compare: in a memtable far larger
    /// than the cache nearly every node a search visits is a miss, and
    /// this way a group's misses overlap instead of following each other.
    pub fn insert_many(&self, entries: &[Entry<'_>]) {
        if entries.len() < 2 {
            if let Some(e) = entries.first() {
                self.insert(e.user, e.hash, e.trailer, e.value);
            }
            return;
        }
        // Key order (stable: one key's entries stay oldest first), so that
        // each entry is placed after the ones before it in the batch.
        let mut order: Vec<usize> = (0..entries.len()).collect();
        order.sort_by(|&a, &b| key::cmp_bytes(entries[a].user, entries[b].user));
        let mut arena = self.arena.lock();
        let top = self.height.load(AtomicOrdering::Acquire) - 1;
        let mut fingers: Vec<Finger> = order
            .iter()
            .map(|&i| Finger {
                prefix: key::prefix(entries[i].user),
                x: self.head,
                level: top,
                done: false,
                prev: [self.head; MAX_HEIGHT],
            })
            .collect();
        // A few searches at a time: enough misses in flight to overlap, not
        // so many that the prefetched lines are evicted before their use.
        for (wave, ids) in fingers.chunks_mut(WAVE).zip(order.chunks(WAVE)) {
            self.search_wave(wave, ids, entries);
        }
        for (f, &i) in fingers.iter_mut().zip(&order) {
            self.place(&mut arena, &entries[i], &mut f.prev);
        }
        drop(arena);
    }

    /// Run the searches of `fingers` (for `entries[ids[k]]`) side by side,
    /// one step of each in turn.
    fn search_wave(&self, fingers: &mut [Finger], ids: &[usize], entries: &[Entry<'_>]) {
        for &i in ids {
            // The hash bucket `place` will update.
            prefetch(self.bucket(entries[i].hash).as_ptr().cast());
        }
        let mut searching = fingers.len();
        while searching > 0 {
            for (f, &i) in fingers.iter_mut().zip(ids) {
                if f.done {
                    continue;
                }
                let e = &entries[i];
                // SAFETY: published nodes stay valid as long as the list.
                let x = unsafe { &*f.x };
                let next = x.next(f.level).load(AtomicOrdering::Acquire);
                if !next.is_null()
                    && unsafe { &*next }.cmp_to(f.prefix, e.user, e.trailer) == Ordering::Less
                {
                    f.x = next;
                    prefetch(
                        unsafe { &*next }
                            .next(f.level)
                            .load(AtomicOrdering::Acquire),
                    );
                } else {
                    f.prev[f.level] = f.x;
                    if f.level == 0 {
                        f.done = true;
                        searching -= 1;
                    } else {
                        f.level -= 1;
                        prefetch(x.next(f.level).load(AtomicOrdering::Acquire));
                    }
                }
            }
        }
    }

    /// Write a node for `e` and link it after `prev` (the last node before
    /// it at each level, as found by a search, possibly before nodes
    /// placed since: each level walks on past those). Under the arena lock.
    fn place(&self, arena: &mut Arena, e: &Entry<'_>, prev: &mut [*const Head; MAX_HEIGHT]) {
        let (user, value) = (e.user, e.value);
        let height = arena.random_height();
        let size = HEAD + height * 8 + user.len() + value.len();
        let p = arena.alloc(size);
        self.bytes
            .fetch_add(size.next_multiple_of(ALIGN), AtomicOrdering::Relaxed);
        let node = p as *mut Head;
        let prefix = key::prefix(user);
        // SAFETY: p is a fresh, aligned region of `size` bytes that no
        // reader can see until it is linked below.
        unsafe {
            node.write(Head {
                prefix,
                chain: AtomicU64::new(0),
                trailer: e.trailer,
                value_len: value.len() as u64,
                key_len: u32::try_from(user.len()).expect("key longer than 4 GiB"),
                height: height as u32,
            });
            let tower = (*node).tower().cast_mut();
            for i in 0..height {
                tower.add(i).write(AtomicPtr::new(ptr::null_mut()));
            }
            let kp = (tower as *mut u8).add(height * 8);
            ptr::copy_nonoverlapping(user.as_ptr(), kp, user.len());
            ptr::copy_nonoverlapping(value.as_ptr(), kp.add(user.len()), value.len());
        }
        let cur = self.height.load(AtomicOrdering::Relaxed);
        if height > cur {
            // Levels above the old height start at the head (already in prev).
            self.height.store(height, AtomicOrdering::Release);
        }
        // SAFETY: node is valid; prev entries are published nodes or head.
        let n = unsafe { &*node };
        for (i, p) in prev.iter_mut().enumerate().take(height) {
            let mut at = unsafe { &**p };
            loop {
                let next = at.next(i).load(AtomicOrdering::Acquire);
                if next.is_null()
                    || unsafe { &*next }.cmp_to(prefix, user, e.trailer) != Ordering::Less
                {
                    break;
                }
                at = unsafe { &*next };
            }
            *p = at;
            n.next(i).store(
                at.next(i).load(AtomicOrdering::Acquire),
                AtomicOrdering::Relaxed,
            );
            at.next(i).store(node, AtomicOrdering::Release);
        }
        let bucket = self.bucket(e.hash);
        let older = bucket.load(AtomicOrdering::Relaxed);
        n.chain.store(older, AtomicOrdering::Relaxed);
        bucket.store(Link::new(n, e.hash, older != 0).0, AtomicOrdering::Release);
        self.len.fetch_add(1, AtomicOrdering::Relaxed);
    }

    /// A cursor; the caller keeps the list alive while using it.
    pub fn cursor(&self) -> Cursor {
        Cursor {
            list: self,
            node: ptr::null(),
        }
    }
}

/// A hash chain link: a node's address in the low 48 bits, 15 bits of its
/// key's hash above it (the bits the bucket index does not use), and in the
/// top bit whether older nodes follow it in the chain. 0 ends the chain.
/// Written once, before the link is published, and never changed.
#[derive(Clone, Copy)]
struct Link(u64);

impl Link {
    const ADDR: u64 = (1 << 48) - 1;
    const MORE: u64 = 1 << 63;

    fn new(node: &Head, hash: u64, more: bool) -> Link {
        let addr = node as *const Head as u64;
        assert_eq!(addr & !Self::ADDR, 0, "node address beyond 48 bits");
        Link(addr | Self::tag(hash) << 48 | if more { Self::MORE } else { 0 })
    }

    #[inline]
    fn tag(hash: u64) -> u64 {
        hash >> 49
    }

    #[inline]
    fn has_tag(self, tag: u64) -> bool {
        (self.0 >> 48) & 0x7fff == tag
    }

    #[inline]
    fn more(self) -> bool {
        self.0 & Self::MORE != 0
    }

    #[inline]
    fn node<'a>(self) -> Option<&'a Head> {
        // SAFETY: links point at published nodes, valid as long as the list.
        unsafe { ((self.0 & Self::ADDR) as *const Head).as_ref() }
    }
}

/// A position in the list. Holds a raw pointer: valid while the list lives.
pub struct Cursor {
    list: *const SkipList,
    node: *const Head,
}

// SAFETY: the cursor reads immutable published nodes only.
unsafe impl Send for Cursor {}

impl Cursor {
    fn list(&self) -> &SkipList {
        // SAFETY: the owner of the cursor keeps the list alive.
        unsafe { &*self.list }
    }

    fn node(&self) -> &Head {
        debug_assert!(!self.node.is_null());
        // SAFETY: valid published node while the list lives.
        unsafe { &*self.node }
    }

    pub fn valid(&self) -> bool {
        !self.node.is_null()
    }

    pub fn seek_to_first(&mut self) {
        self.node = self.list().head().next(0).load(AtomicOrdering::Acquire);
    }

    pub fn seek(&mut self, user: &[u8], trailer: u64) {
        self.node = self.list().seek(user, trailer, None);
    }

    pub fn next(&mut self) {
        self.node = self.node().next(0).load(AtomicOrdering::Acquire);
    }

    pub fn user_key(&self) -> &[u8] {
        self.node().key()
    }

    pub fn trailer(&self) -> u64 {
        self.node().trailer
    }

    pub fn value(&self) -> &[u8] {
        self.node().value()
    }
}

#[cfg(test)]
mod tests;
