//! Data and index blocks: prefix-compressed sorted entries with restart
//! points, followed by the restart array. Owns encoding, decoding and seeking
//! inside one block; must not do I/O or caching.
//!
//! Entry: `shared: varint`, `unshared: varint`, `value_len: varint`,
//! `key[shared..]`, `value`. Tail: `restart: u32 LE` per restart point, then
//! `num_restarts: u32 LE`. Restart entries have `shared == 0`.

use std::cmp::Ordering;

use bytes::Bytes;

use crate::coding::{get_u32, get_varint, put_varint};
use crate::key;

pub struct BlockBuilder {
    buf: Vec<u8>,
    restarts: Vec<u32>,
    counter: usize,
    interval: usize,
    last_key: Vec<u8>,
    entries: usize,
}

impl BlockBuilder {
    pub fn new(interval: usize) -> Self {
        BlockBuilder {
            buf: Vec::with_capacity(4096 + 512),
            restarts: vec![0],
            counter: 0,
            interval,
            last_key: Vec::new(),
            entries: 0,
        }
    }

    /// Add an entry; keys must arrive in increasing internal-key order.
    pub fn add(&mut self, k: &[u8], v: &[u8]) {
        let mut shared = 0;
        if self.counter < self.interval {
            shared = self
                .last_key
                .iter()
                .zip(k)
                .take_while(|(a, b)| a == b)
                .count();
        } else {
            // Restart offsets are u32: a block is cut before an entry
            // that would take it past the target size, so a restart never
            // begins past 4 GiB even when a single huge value precedes it.
            self.restarts.push(self.buf.len() as u32);
            self.counter = 0;
        }
        put_varint(&mut self.buf, shared as u64);
        put_varint(&mut self.buf, (k.len() - shared) as u64);
        put_varint(&mut self.buf, v.len() as u64);
        self.buf.extend_from_slice(&k[shared..]);
        self.buf.extend_from_slice(v);
        self.last_key.clear();
        self.last_key.extend_from_slice(k);
        self.counter += 1;
        self.entries += 1;
    }

    pub fn estimated_size(&self) -> usize {
        self.buf.len() + 4 * self.restarts.len() + 4
    }

    pub fn is_empty(&self) -> bool {
        self.entries == 0
    }

    pub fn last_key(&self) -> &[u8] {
        &self.last_key
    }

    /// Finish the block and reset the builder for reuse.
    pub fn finish(&mut self) -> Vec<u8> {
        let mut out = std::mem::take(&mut self.buf);
        for r in &self.restarts {
            out.extend_from_slice(&r.to_le_bytes());
        }
        out.extend_from_slice(&(self.restarts.len() as u32).to_le_bytes());
        self.restarts.clear();
        self.restarts.push(0);
        self.counter = 0;
        self.entries = 0;
        self.last_key.clear();
        self.buf = Vec::with_capacity(out.capacity());
        out
    }
}

/// A decoded block: its bytes and where the restart array starts.
#[derive(Clone)]
pub struct Block {
    data: Bytes,
    restarts_at: usize,
    num_restarts: usize,
}

impl Block {
    /// Validate the restart array; `None` if the block is malformed.
    pub fn new(data: Bytes) -> Option<Block> {
        if data.len() < 4 {
            return None;
        }
        let n = get_u32(&data[data.len() - 4..]) as usize;
        let tail = n.checked_mul(4)?.checked_add(4)?;
        if n == 0 || tail > data.len() {
            return None;
        }
        let restarts_at = data.len() - tail;
        Some(Block {
            data,
            restarts_at,
            num_restarts: n,
        })
    }

    pub fn len(&self) -> usize {
        self.data.len()
    }

    fn restart(&self, i: usize) -> usize {
        get_u32(&self.data[self.restarts_at + 4 * i..]) as usize
    }

    pub fn iter(&self) -> BlockIter {
        BlockIter {
            block: self.clone(),
            pos: self.restarts_at,
            next: 0,
            key: Vec::new(),
            value: (0, 0),
            corrupt: false,
        }
    }
}

/// A cursor over one block.
pub struct BlockIter {
    block: Block,
    /// Offset of the current entry; `restarts_at` when exhausted.
    pos: usize,
    /// Offset of the entry after the current one.
    next: usize,
    key: Vec<u8>,
    value: (usize, usize),
    corrupt: bool,
}

impl BlockIter {
    pub fn valid(&self) -> bool {
        self.pos < self.block.restarts_at && !self.corrupt
    }

    /// True if decoding hit malformed bytes; the iterator is then invalid.
    pub fn corrupt(&self) -> bool {
        self.corrupt
    }

    pub fn key(&self) -> &[u8] {
        &self.key
    }

    pub fn value(&self) -> Bytes {
        self.block.data.slice(self.value.0..self.value.1)
    }

    pub fn value_ref(&self) -> &[u8] {
        &self.block.data[self.value.0..self.value.1]
    }

    /// Decode the entry at `at` on top of the current key.
    fn parse(&mut self, at: usize) -> bool {
        let end = self.block.restarts_at;
        if at >= end {
            self.pos = end;
            return false;
        }
        let d = &self.block.data[..end];
        let mut p = at;
        let mut field = || -> Option<u64> {
            let (v, n) = get_varint(&d[p..])?;
            p += n;
            Some(v)
        };
        let parsed = (|| Some((field()?, field()?, field()?)))();
        let Some((shared, unshared, vlen)) = parsed else {
            self.corrupt = true;
            return false;
        };
        let (shared, unshared, vlen) = (shared as usize, unshared as usize, vlen as usize);
        let kend = p.checked_add(unshared);
        let vend = kend.and_then(|k| k.checked_add(vlen));
        match (kend, vend) {
            (Some(kend), Some(vend)) if shared <= self.key.len() && vend <= end => {
                self.key.truncate(shared);
                self.key.extend_from_slice(&d[p..kend]);
                if self.key.len() < 8 {
                    self.corrupt = true;
                    return false;
                }
                self.value = (kend, vend);
                self.pos = at;
                self.next = vend;
                true
            }
            _ => {
                self.corrupt = true;
                false
            }
        }
    }

    pub fn seek_to_first(&mut self) {
        self.key.clear();
        self.parse(0);
    }

    pub fn next(&mut self) {
        if self.valid() {
            let n = self.next;
            self.parse(n);
        }
    }

    /// Position at the first entry whose internal key is >= `target`.
    pub fn seek(&mut self, target: &[u8]) {
        // Binary search the restart points for the last one whose key < target.
        let (mut lo, mut hi) = (0usize, self.block.num_restarts);
        while hi - lo > 1 {
            let mid = (lo + hi) / 2;
            self.key.clear();
            if !self.parse(self.block.restart(mid)) {
                return;
            }
            if key::compare(&self.key, target) == Ordering::Less {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        self.key.clear();
        if !self.parse(self.block.restart(lo)) {
            return;
        }
        while self.valid() && key::compare(&self.key, target) == Ordering::Less {
            self.next();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::{encode, seek_trailer, trailer, Kind};

    fn build(n: usize, interval: usize) -> Block {
        let mut b = BlockBuilder::new(interval);
        for i in 0..n {
            let k = encode(
                format!("key{i:05}").as_bytes(),
                trailer(i as u64, Kind::Put),
            );
            b.add(&k, format!("v{i}").as_bytes());
        }
        Block::new(Bytes::from(b.finish())).unwrap()
    }

    #[test]
    fn iterate_and_seek() {
        for interval in [1, 3, 16] {
            let blk = build(100, interval);
            let mut it = blk.iter();
            it.seek_to_first();
            let mut n = 0;
            while it.valid() {
                assert_eq!(key::user_key(it.key()), format!("key{n:05}").as_bytes());
                assert_eq!(it.value_ref(), format!("v{n}").as_bytes());
                n += 1;
                it.next();
            }
            assert_eq!(n, 100);
            for probe in [0usize, 1, 15, 16, 17, 50, 99] {
                it.seek(&encode(
                    format!("key{probe:05}").as_bytes(),
                    seek_trailer(1 << 40),
                ));
                assert!(it.valid());
                assert_eq!(key::user_key(it.key()), format!("key{probe:05}").as_bytes());
            }
            it.seek(&encode(b"key00050a", seek_trailer(1 << 40)));
            assert_eq!(key::user_key(it.key()), b"key00051");
            it.seek(&encode(b"zzz", 0));
            assert!(!it.valid());
        }
    }

    #[test]
    fn malformed_blocks_are_rejected() {
        assert!(Block::new(Bytes::from_static(&[1, 0, 0])).is_none());
        assert!(Block::new(Bytes::from_static(&[0, 0, 0, 0])).is_none());
        let mut raw = {
            let mut b = BlockBuilder::new(4);
            b.add(&encode(b"a", 1), b"x");
            b.finish()
        };
        raw[1] = 200; // unshared length runs past the block
        let blk = Block::new(Bytes::from(raw)).unwrap();
        let mut it = blk.iter();
        it.seek_to_first();
        assert!(!it.valid());
        assert!(it.corrupt());
    }
}
