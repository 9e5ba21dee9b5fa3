//! Counting the distinct keys a run touched (lesson 5: a load that only
//! ever hits a few keys measures a memtable). Exact, with a bitmap of
//! atomic words shared by all workers, when the key space is known and at
//! most 2^31 keys; otherwise (and for indexes beyond the bitmap) a
//! HyperLogLog of 2^12 one-byte registers (≈1.6% standard error). Owns the
//! counting only; must not know keys' strings or operations.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};

/// Largest key space counted exactly (a 256 MiB bitmap).
pub const MAX_EXACT: u64 = 1 << 31;

const HLL_BITS: u32 = 12;
const HLL_REGISTERS: usize = 1 << HLL_BITS;

pub struct KeyCounter {
    bits: Vec<AtomicU64>,
    capacity: u64,
    hll: Vec<AtomicU8>,
    hll_used: AtomicBool,
}

/// A 64-bit mixer (splitmix64's finalizer) so sequential indexes spread
/// over the registers.
#[inline]
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl KeyCounter {
    pub fn new(key_space: Option<u64>) -> KeyCounter {
        let capacity = match key_space {
            Some(n) if n <= MAX_EXACT => n,
            _ => 0,
        };
        KeyCounter {
            bits: (0..capacity.div_ceil(64))
                .map(|_| AtomicU64::new(0))
                .collect(),
            capacity,
            hll: (0..HLL_REGISTERS).map(|_| AtomicU8::new(0)).collect(),
            hll_used: AtomicBool::new(false),
        }
    }

    #[inline]
    pub fn touch(&self, key_index: u64) {
        if key_index < self.capacity {
            let bit = 1u64 << (key_index % 64);
            let w = &self.bits[(key_index / 64) as usize];
            // Read first: hot keys are already set and a load is cheaper
            // than a contended read-modify-write.
            if w.load(Ordering::Relaxed) & bit == 0 {
                w.fetch_or(bit, Ordering::Relaxed);
            }
            return;
        }
        if !self.hll_used.load(Ordering::Relaxed) {
            self.hll_used.store(true, Ordering::Relaxed);
        }
        let h = mix(key_index);
        let reg = (h >> (64 - HLL_BITS)) as usize;
        let rest = h << HLL_BITS;
        let rank = (rest.leading_zeros().min(64 - HLL_BITS) + 1) as u8;
        let r = &self.hll[reg];
        if r.load(Ordering::Relaxed) < rank {
            r.fetch_max(rank, Ordering::Relaxed);
        }
    }

    /// Distinct keys touched: exact from the bitmap, plus the HyperLogLog
    /// estimate of the others.
    pub fn count(&self) -> u64 {
        let exact: u64 = self
            .bits
            .iter()
            .map(|w| w.load(Ordering::Relaxed).count_ones() as u64)
            .sum();
        exact + self.estimate()
    }

    /// Whether `count` is exact (nothing fell outside the bitmap).
    pub fn exact(&self) -> bool {
        !self.hll_used.load(Ordering::Relaxed)
    }

    fn estimate(&self) -> u64 {
        if self.exact() {
            return 0;
        }
        let m = HLL_REGISTERS as f64;
        let mut sum = 0.0;
        let mut zeros = 0;
        for r in &self.hll {
            let v = r.load(Ordering::Relaxed);
            if v == 0 {
                zeros += 1;
            }
            sum += 2f64.powi(-(v as i32));
        }
        let alpha = 0.7213 / (1.0 + 1.079 / m);
        let e = alpha * m * m / sum;
        let e = if e <= 2.5 * m && zeros > 0 {
            // Small range: linear counting.
            m * (m / zeros as f64).ln()
        } else {
            e
        };
        e.round() as u64
    }
}
