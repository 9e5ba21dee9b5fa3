//! Bloom filter over user keys, one per table. Owns the filter bits and
//! probing; must not know about files. Layout: the bit array, then one byte
//! holding the number of probes `k`.

/// Hash of a user key used by filters (xxh3-64).
#[inline]
pub fn hash(user_key: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(user_key)
}

/// Build a filter for the given key hashes.
pub fn build(hashes: &[u64], bits_per_key: u32) -> Vec<u8> {
    let k = ((bits_per_key as f64) * 0.69).round().clamp(1.0, 30.0) as u8;
    let nbits = (hashes.len() as u64 * bits_per_key as u64).max(64);
    let nbytes = nbits.div_ceil(8) as usize;
    let nbits = nbytes as u64 * 8;
    let mut out = vec![0u8; nbytes + 1];
    for &h in hashes {
        let delta = h.rotate_left(21) | 1;
        let mut x = h;
        for _ in 0..k {
            let bit = x % nbits;
            out[(bit / 8) as usize] |= 1 << (bit % 8);
            x = x.wrapping_add(delta);
        }
    }
    out[nbytes] = k;
    out
}

/// False means the key is certainly absent.
#[inline]
pub fn may_contain(filter: &[u8], h: u64) -> bool {
    if filter.len() < 2 {
        return true;
    }
    let nbytes = filter.len() - 1;
    let k = filter[nbytes];
    if k == 0 || k > 30 {
        return true;
    }
    let nbits = nbytes as u64 * 8;
    let delta = h.rotate_left(21) | 1;
    let mut x = h;
    for _ in 0..k {
        let bit = x % nbits;
        if filter[(bit / 8) as usize] & (1 << (bit % 8)) == 0 {
            return false;
        }
        x = x.wrapping_add(delta);
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_false_negatives_and_low_false_positives() {
        let keys: Vec<u64> = (0..10_000u32).map(|i| hash(&i.to_le_bytes())).collect();
        let f = build(&keys, 10);
        assert!(keys.iter().all(|&h| may_contain(&f, h)));
        let fp = (10_000..110_000u32)
            .filter(|i| may_contain(&f, hash(&i.to_le_bytes())))
            .count();
        let rate = fp as f64 / 100_000.0;
        assert!(rate < 0.02, "false positive rate {rate}");
    }

    #[test]
    fn empty_filter_answers_maybe() {
        assert!(may_contain(&[], 42));
        let f = build(&[], 10);
        assert!(!may_contain(&f, 42), "a filter of no keys holds no bits");
    }
}
