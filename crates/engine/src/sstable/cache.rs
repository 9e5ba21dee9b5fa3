//! The shared block cache: a bounded, concurrent cache of decoded blocks
//! keyed by (table id, block offset), weighted by block size. Owns eviction
//! only; must not read files.

use std::sync::Arc;

use quick_cache::sync::Cache;
use quick_cache::Weighter;

use super::block::Block;

#[derive(Clone)]
struct BlockWeighter;

impl Weighter<(u64, u64), Block> for BlockWeighter {
    fn weight(&self, _k: &(u64, u64), v: &Block) -> u64 {
        // Never zero so that every entry counts against the capacity.
        v.len() as u64 + 64
    }
}

/// A cheaply cloneable handle to the cache.
#[derive(Clone)]
pub struct BlockCache {
    inner: Arc<Cache<(u64, u64), Block, BlockWeighter>>,
    capacity: usize,
}

impl BlockCache {
    pub fn new(capacity_bytes: usize) -> Self {
        let cap = capacity_bytes.max(4096);
        let items = (cap / 4096).max(16);
        BlockCache {
            inner: Arc::new(Cache::with_weighter(items, cap as u64, BlockWeighter)),
            capacity: cap,
        }
    }

    pub fn get(&self, k: &(u64, u64)) -> Option<Block> {
        self.inner.get(k)
    }

    pub fn insert(&self, k: (u64, u64), b: Block) {
        self.inner.insert(k, b);
    }

    /// Bytes currently held.
    pub fn usage(&self) -> u64 {
        self.inner.weight()
    }

    pub fn capacity(&self) -> usize {
        self.capacity
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    #[test]
    fn cache_is_bounded() {
        let c = BlockCache::new(64 << 10);
        let mut raw = vec![0u8; 4096];
        raw[4092..].copy_from_slice(&1u32.to_le_bytes());
        let b = Block::new(Bytes::from(raw)).unwrap();
        for i in 0..1000 {
            c.insert((1, i * 4096), b.clone());
        }
        assert!(c.usage() <= 64 << 10, "usage {}", c.usage());
        assert!(c.usage() > 0);
    }
}
