//! The time a memtable insert takes, one by one and in groups, in a
//! memtable filled as the node fills it (random 16-byte keys, 100-byte
//! values, 64 MiB). `cargo bench -p strata-engine --bench memtable`
//! (docs/benchmarks.md, "memtable").

use rand::{Rng, SeedableRng};

fn main() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    let keys: Vec<[u8; 16]> = (0..320_000)
        .map(|_| {
            let mut k = [0u8; 16];
            let s = format!("{:016}", rng.random_range(0..1_000_000_000u64));
            k.copy_from_slice(s.as_bytes());
            k
        })
        .collect();
    let value = [7u8; 100];
    for group in [1usize, 8, 32, 64] {
        let (took, size) =
            strata_engine::benching::memtable_inserts(&keys, &value, group, 64 << 20);
        let ns = took.as_nanos() as f64 / keys.len() as f64;
        println!(
            "groups of {group:>2}: {ns:.0} ns an insert ({} MiB)",
            size >> 20
        );
    }
}
