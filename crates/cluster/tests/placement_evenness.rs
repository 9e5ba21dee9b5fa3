//! Evenness of rendezvous placement: for 1,000,000 random keys on 3 to 10
//! nodes, the most loaded node holds at most 2% more keys than the least,
//! as primary and as replica (replication factor min(3, N)).

use rand::{Rng, SeedableRng};
use strata_cluster::placement::Placement;

#[test]
fn one_million_keys_spread_within_two_percent() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(12);
    let keys: Vec<[u8; 16]> = (0..1_000_000).map(|_| rng.random()).collect();
    for n in 3..=10usize {
        let ids = (0..n)
            .map(|i| strata_cluster::member_id(&format!("http://10.0.0.{}:8080", i + 1)))
            .collect();
        let p = Placement::new(ids);
        let rf = n.min(3);
        let mut primary = vec![0u64; n];
        let mut replica = vec![0u64; n];
        for k in &keys {
            let pref = p.replicas(k, rf);
            primary[pref[0]] += 1;
            for &m in &pref {
                replica[m] += 1;
            }
        }
        for (what, counts) in [("primary", &primary), ("replica", &replica)] {
            let max = *counts.iter().max().unwrap() as f64;
            let min = *counts.iter().min().unwrap() as f64;
            let spread = max / min - 1.0;
            println!(
                "{n} nodes, {what}: min {min} max {max} (+{:.2}%)",
                spread * 100.0
            );
            assert!(spread <= 0.02, "{n} nodes, {what}: {counts:?}");
        }
    }
}
