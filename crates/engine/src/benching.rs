//! A door for the engine's micro-benchmarks (`crates/engine/benches/`)
//! into parts the public API does not show: the time a memtable insert
//! takes. Owns nothing else; must not be used by the engine itself.

use std::time::{Duration, Instant};

use crate::key::Kind;
use crate::memtable::Memtable;

/// Insert every key of `keys` with `value` into a fresh memtable of
/// `capacity` bytes, `group` at a time (a group of one takes the
/// one-by-one path); the time it took and the memtable's size after.
pub fn memtable_inserts(
    keys: &[[u8; 16]],
    value: &[u8],
    group: usize,
    capacity: usize,
) -> (Duration, usize) {
    let m = Memtable::new(1, capacity);
    let t = Instant::now();
    for (c, chunk) in keys.chunks(group.max(1)).enumerate() {
        let base = (c * group.max(1)) as u64;
        let e: Vec<(&[u8], u64, Kind, &[u8])> = chunk
            .iter()
            .enumerate()
            .map(|(i, k)| (&k[..], base + i as u64 + 1, Kind::Put, value))
            .collect();
        m.insert_many(&e);
    }
    (t.elapsed(), m.size())
}
