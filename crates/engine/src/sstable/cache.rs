//! The shared block cache: a bounded, concurrent cache of decoded blocks
//! keyed by (table id, block offset), weighted by block size. Owns eviction
//! only; must not read files.

use std::sync::Arc;

use quick_cache::sync::Cache;
use quick_cache::Weighter;

use super::block::Block;
use super::BLOCK_TRAILER_LEN;

#[derive(Clone)]
struct BlockWeighter;

impl Weighter<(u64, u64), Block> for BlockWeighter {
    fn weight(&self, _k: &(u64, u64), v: &Block) -> u64 {
        // What the block really holds: its buffer as the allocator sizes
        // it (read with its trailer, whose room stays after the trailer
        // is cut off), and the entry's own bookkeeping (never zero, so
        // that every entry counts against the capacity).
        allocated(v.len() + BLOCK_TRAILER_LEN) + 64
    }
}

/// The bytes an allocation of `n` takes: jemalloc and mimalloc both round
/// a request up to a size class, four classes to each doubling (a block
/// of 4,101 bytes takes 5,120). Counting the request alone let a full
/// cache hold a quarter more than its capacity.
fn allocated(n: usize) -> u64 {
    let n = n.max(16) as u64;
    let step = (1u64 << (63 - n.leading_zeros())) / 4;
    n.div_ceil(step) * step
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

    /// Forget one block (its table was deleted).
    pub fn remove(&self, k: &(u64, u64)) {
        self.inner.remove(k);
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

    /// A valid block of 4,096 bytes (one restart point).
    fn block_of_4k() -> Block {
        let mut raw = vec![0u8; 4096];
        raw[4092..].copy_from_slice(&1u32.to_le_bytes());
        Block::new(Bytes::from(raw)).unwrap()
    }

    #[test]
    fn cache_is_bounded() {
        let c = BlockCache::new(64 << 10);
        let b = block_of_4k();
        for i in 0..1000 {
            c.insert((1, i * 4096), b.clone());
        }
        assert!(c.usage() <= 64 << 10, "usage {}", c.usage());
        assert!(c.usage() > 0);
    }

    #[test]
    fn blocks_weigh_what_the_allocator_gives_them() {
        assert_eq!(allocated(4096), 4096);
        assert_eq!(allocated(4097), 5120);
        assert_eq!(allocated(4101), 5120);
        assert_eq!(allocated(5121), 6144);
        assert_eq!(allocated(8192), 8192);
        assert_eq!(allocated(100), 112);
        assert_eq!(allocated(1), 16);
        // A cache of 64 KiB holds twelve blocks of 4,096 bytes (read
        // with their trailer: 5,120 and 64 each), not fifteen.
        let c = BlockCache::new(64 << 10);
        let b = block_of_4k();
        for i in 0..100 {
            c.insert((1, i * 8192), b.clone());
        }
        assert_eq!(c.usage() % (5120 + 64), 0, "usage {}", c.usage());
        assert!(c.usage() <= 64 << 10, "usage {}", c.usage());
    }
}
