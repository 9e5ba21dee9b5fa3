//! What the benchmark reads and writes: db_bench's keys (the number
//! big-endian, padded), the share of a key range each thread takes, and
//! values sliced from a stream made as db_bench's RandomGenerator makes
//! it. Owns the bytes only; must not touch a backend or time anything.

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

/// The key of number `n`: db_bench's layout, the number big-endian in the
/// first 8 bytes, padded with `'0'` to `key_size`, so byte order is numeric
/// order. Keys shorter than 8 bytes keep the number's low bytes.
pub fn make_key(n: u64, key_size: usize, out: &mut Vec<u8>) {
    out.clear();
    let be = n.to_be_bytes();
    if key_size >= 8 {
        out.extend_from_slice(&be);
        out.resize(key_size, b'0');
    } else {
        out.extend_from_slice(&be[8 - key_size..]);
    }
}

/// A key that no fill benchmark writes: `make_key(n)` plus one byte (every
/// stored key is exactly `key_size` bytes), as db_bench's readmissing does.
pub fn make_missing_key(n: u64, key_size: usize, out: &mut Vec<u8>) {
    make_key(n, key_size, out);
    out.push(b'.');
}

/// The `[lo, hi)` share of `0..total` that thread `i` of `parts` gets.
pub fn split_range(total: u64, parts: usize, i: usize) -> (u64, u64) {
    let parts = parts.max(1) as u64;
    let i = i as u64;
    let base = total / parts;
    let rem = total % parts;
    let lo = i * base + i.min(rem);
    let hi = lo + base + u64::from(i < rem);
    (lo, hi)
}

/// Value bytes, sliced like db_bench's RandomGenerator: a 1 MiB stream of
/// 100-byte pieces, each `100 × ratio` random printable bytes repeated to
/// fill it, so that a codec shrinks values as it would db_bench's.
pub(super) struct Values {
    data: Vec<u8>,
    size: usize,
}

impl Values {
    pub(super) fn new(seed: u64, size: usize, ratio: f64) -> Self {
        let mut rng = SmallRng::seed_from_u64(seed ^ 0x9e37_79b9_7f4a_7c15);
        let want = (1 << 20) + size;
        let raw_len = ((100.0 * ratio) as usize).clamp(1, 100);
        let mut data = Vec::with_capacity(want + 100);
        let mut raw = vec![0u8; raw_len];
        while data.len() < want {
            for b in raw.iter_mut() {
                *b = b' ' + rng.random_range(0..95u8);
            }
            for i in 0..100 {
                data.push(raw[i % raw_len]);
            }
        }
        data.truncate(want);
        Values { data, size }
    }

    /// The value at cursor `pos`, advancing it.
    pub(super) fn next(&self, pos: &mut usize) -> &[u8] {
        if *pos + self.size > self.data.len() {
            *pos = 0;
        }
        let v = &self.data[*pos..*pos + self.size];
        *pos += self.size;
        v
    }
}
