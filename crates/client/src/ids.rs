//! Write ids (`strata-write-id`): 128 bits, unique to one write. The high
//! 64 bits are drawn once per process from the operating system's
//! randomness (through the standard library's hasher keys), the low 64
//! count up, so two writes of one process never share an id and two
//! processes share one with a chance of 2⁻⁶⁴ per pair of writes (and then
//! only matter if they write the same key within the nodes' memory of
//! ids, `docs/consistency.md`). Owns the ids; must not send anything.

use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

static PREFIX: OnceLock<u64> = OnceLock::new();
static COUNT: AtomicU64 = AtomicU64::new(0);

/// A fresh write id.
pub fn next() -> u128 {
    let prefix = *PREFIX.get_or_init(|| {
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u128(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos()),
        );
        h.write_u32(std::process::id());
        h.finish()
    });
    ((prefix as u128) << 64) | COUNT.fetch_add(1, Ordering::Relaxed) as u128
}

#[cfg(test)]
mod tests {
    #[test]
    fn ids_differ_and_share_the_process_prefix() {
        let (a, b) = (super::next(), super::next());
        assert_ne!(a, b);
        assert_eq!(a >> 64, b >> 64);
    }
}
