//! The event loop's core: a monotone priority queue of (time in integer
//! nanoseconds, 64-bit event) pairs, and the packing of events into 64
//! bits. The queue is a radix heap: since a discrete-event simulation never
//! schedules into the past, an event goes into the bucket named by the
//! highest bit in which its time differs from the last time popped; a push
//! is one `Vec::push`, and a pop only sorts out the smallest non-empty
//! bucket. Events due at the same time come out in a fixed order (last
//! pushed first), so a run is a function of its seed. Owns the queue and
//! the encoding, and the slab the models keep their in-flight records in;
//! must not know what an event means.

/// A slab: a vector with a free list, indexed by `u32` (requests, writes,
/// replica operations of a model).
pub struct Slab<T> {
    items: Vec<T>,
    free: Vec<u32>,
}

impl<T> Default for Slab<T> {
    fn default() -> Self {
        Slab::new()
    }
}

impl<T> Slab<T> {
    pub fn new() -> Self {
        Slab {
            items: Vec::new(),
            free: Vec::new(),
        }
    }
    #[inline]
    pub fn alloc(&mut self, v: T) -> u32 {
        match self.free.pop() {
            Some(i) => {
                self.items[i as usize] = v;
                i
            }
            None => {
                self.items.push(v);
                (self.items.len() - 1) as u32
            }
        }
    }
    /// A released slot, still holding its old value (to carry something
    /// of it over, such as a generation), if there is one.
    #[inline]
    pub fn reuse(&mut self) -> Option<u32> {
        self.free.pop()
    }
    #[inline]
    pub fn release(&mut self, i: u32) {
        self.free.push(i);
    }
    pub fn live(&self) -> usize {
        self.items.len() - self.free.len()
    }
}

impl<T> std::ops::Index<u32> for Slab<T> {
    type Output = T;
    #[inline]
    fn index(&self, i: u32) -> &T {
        &self.items[i as usize]
    }
}
impl<T> std::ops::IndexMut<u32> for Slab<T> {
    #[inline]
    fn index_mut(&mut self, i: u32) -> &mut T {
        &mut self.items[i as usize]
    }
}

/// An event: a kind (4 bits), a generation (28 bits, to recognise stale
/// timeouts) and an index (32 bits: a client, a request, a write or a
/// stage).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ev(pub u64);

impl Ev {
    #[inline]
    pub fn new(kind: u8, gen: u32, index: u32) -> Ev {
        Ev(((kind as u64) << 60) | (((gen & 0x0FFF_FFFF) as u64) << 32) | index as u64)
    }
    #[inline]
    pub fn kind(self) -> u8 {
        (self.0 >> 60) as u8
    }
    #[inline]
    pub fn gen(self) -> u32 {
        ((self.0 >> 32) & 0x0FFF_FFFF) as u32
    }
    #[inline]
    pub fn index(self) -> u32 {
        self.0 as u32
    }
}

/// Generations compare on their low 28 bits, as events carry them.
#[inline]
pub fn same_gen(a: u32, b: u32) -> bool {
    (a ^ b) & 0x0FFF_FFFF == 0
}

/// A radix heap keyed by u64 time, with 8-bit digits: an event goes to
/// level d = the highest byte in which its time differs from the last time
/// popped, bucket = that byte of its time. Every event of level d is
/// earlier than every event of level d + 1, and within a level the buckets
/// are in order, so the earliest event is in the first non-empty bucket of
/// the lowest non-empty level; that bucket is redistributed against its
/// minimum. An event moves at most 8 times (about 3 for times up to a
/// second apart), against up to 64 for a radix heap with 1-bit digits.
pub struct EventQueue {
    last: u64,
    len: usize,
    /// Events due exactly at `last`.
    exact: Vec<(u64, Ev)>,
    /// levels × 256 buckets.
    buckets: Vec<Vec<(u64, Ev)>>,
    /// Per level, a bit per non-empty bucket.
    bits: [[u64; 4]; 8],
    /// A bit per non-empty level.
    levels: u8,
}

impl Default for EventQueue {
    fn default() -> Self {
        Self::new()
    }
}

impl EventQueue {
    pub fn new() -> EventQueue {
        EventQueue {
            last: 0,
            len: 0,
            exact: Vec::new(),
            buckets: (0..8 * 256).map(|_| Vec::new()).collect(),
            bits: [[0; 4]; 8],
            levels: 0,
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The time of the last event popped (the simulation's now).
    pub fn now(&self) -> u64 {
        self.last
    }

    #[inline]
    fn place(&mut self, t: u64, ev: Ev) {
        let x = t ^ self.last;
        if x == 0 {
            self.exact.push((t, ev));
            return;
        }
        let d = ((63 - x.leading_zeros()) / 8) as usize;
        let b = ((t >> (8 * d)) & 255) as usize;
        self.buckets[d * 256 + b].push((t, ev));
        self.bits[d][b >> 6] |= 1 << (b & 63);
        self.levels |= 1 << d;
    }

    /// Schedule `ev` at `t`, which must not be before the last time popped.
    #[inline]
    pub fn push(&mut self, t: u64, ev: Ev) {
        debug_assert!(
            t >= self.last,
            "event scheduled in the past: {t} < {}",
            self.last
        );
        self.place(t.max(self.last), ev);
        self.len += 1;
    }

    /// The earliest event.
    #[inline]
    pub fn pop(&mut self) -> Option<(u64, Ev)> {
        if let Some(e) = self.exact.pop() {
            self.len -= 1;
            return Some(e);
        }
        if self.levels == 0 {
            return None;
        }
        self.len -= 1;
        Some(self.refill())
    }

    /// Nothing is due at `last`: take the earliest bucket; a bucket of one
    /// event (the common case) is simply popped, a larger one is
    /// redistributed against its minimum.
    fn refill(&mut self) -> (u64, Ev) {
        let d = self.levels.trailing_zeros() as usize;
        let words = &mut self.bits[d];
        let w = words
            .iter()
            .position(|&x| x != 0)
            .expect("level marked non-empty");
        let b = w * 64 + words[w].trailing_zeros() as usize;
        words[w] &= !(1 << (b & 63));
        if words.iter().all(|&x| x == 0) {
            self.levels &= !(1 << d);
        }
        let idx = d * 256 + b;
        if self.buckets[idx].len() == 1 {
            let e = self.buckets[idx].pop().expect("one event");
            self.last = e.0;
            return e;
        }
        let mut items = std::mem::take(&mut self.buckets[idx]);
        let min = items.iter().map(|e| e.0).min().expect("non-empty bucket");
        self.last = min;
        for &(t, ev) in &items {
            self.place(t, ev);
        }
        items.clear();
        // Nothing went back into this bucket: keep its allocation.
        self.buckets[idx] = items;
        self.exact.pop().expect("the minimum is due now")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::SimRng;
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;

    #[test]
    fn encoding() {
        let e = Ev::new(6, 0x1234_5678, 0xDEAD_BEEF);
        assert_eq!(e.kind(), 6);
        assert_eq!(e.gen(), 0x0234_5678);
        assert_eq!(e.index(), 0xDEAD_BEEF);
        assert!(same_gen(0x1234_5678, e.gen()));
    }

    /// The radix heap pops times in the same order as a binary heap under
    /// a random mix of pushes (never into the past) and pops.
    #[test]
    fn agrees_with_binary_heap() {
        let mut rng = SimRng::new(42, 0);
        let mut q = EventQueue::new();
        let mut h = BinaryHeap::new();
        let mut now = 0u64;
        for step in 0..200_000u32 {
            if !rng.bits().is_multiple_of(3) || h.is_empty() {
                let dt = match rng.bits() % 4 {
                    0 => 0,
                    1 => rng.bits() % 1000,
                    2 => rng.bits() % 1_000_000_000,
                    _ => rng.bits() % (1 << 40),
                };
                q.push(now + dt, Ev::new(1, 0, step));
                h.push(Reverse(now + dt));
            } else {
                let (t, _) = q.pop().unwrap();
                let Reverse(want) = h.pop().unwrap();
                assert_eq!(t, want);
                now = t;
            }
            assert_eq!(q.len(), h.len());
        }
        while let Some(Reverse(want)) = h.pop() {
            assert_eq!(q.pop().unwrap().0, want);
        }
        assert!(q.pop().is_none());
    }
}
