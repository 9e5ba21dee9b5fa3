//! Distinct-key counting: exact bitmap, HyperLogLog within ~3%.

use std::sync::Arc;
use std::time::Duration;

use strata_lab::load::workload::{KeyCounter, Workload};

#[test]
fn bitmap_counts_exactly_across_threads() {
    let c = Arc::new(KeyCounter::new(Some(1_000_000)));
    let threads: Vec<_> = (0..4u64)
        .map(|t| {
            let c = c.clone();
            // Overlapping ranges: 0..400k, 200k..600k, ...
            std::thread::spawn(move || {
                for i in t * 200_000..t * 200_000 + 400_000 {
                    c.touch(i);
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(c.count(), 1_000_000);
    assert!(c.exact());
    let d = KeyCounter::new(Some(100));
    for i in [5, 5, 99, 0, 5] {
        d.touch(i);
    }
    assert_eq!(d.count(), 3);
}

#[test]
fn hyperloglog_is_within_3_percent() {
    for n in [1_000u64, 50_000, 1_000_000] {
        let c = KeyCounter::new(None);
        for i in 0..n {
            c.touch(i.wrapping_mul(0x2545_F491_4F6C_DD1D));
            c.touch(i.wrapping_mul(0x2545_F491_4F6C_DD1D)); // repeats do not count
        }
        let got = c.count() as f64;
        assert!(!c.exact());
        assert!(
            (got / n as f64 - 1.0).abs() < 0.03,
            "{n} keys estimated {got}"
        );
    }
}

#[test]
fn indexes_beyond_the_key_space_fall_back_to_the_estimate() {
    let c = KeyCounter::new(Some(10));
    for i in 0..10 {
        c.touch(i);
    }
    assert!(c.exact());
    for i in 10..1010 {
        c.touch(i);
    }
    assert!(!c.exact());
    let got = c.count() as f64;
    assert!((got / 1010.0 - 1.0).abs() < 0.03, "{got}");
}

#[test]
fn counts_a_workloads_distinct_keys() {
    // Uniform over 1000 keys, 10k draws: all but ~1000·e^-10 keys touched.
    let w = Workload::builtin("get", 1000, 0).unwrap();
    let c = KeyCounter::new(w.key_space());
    let mut g = w.generator(0, 1);
    for _ in 0..10_000 {
        c.touch(g.next(Duration::ZERO).key_index.unwrap());
    }
    assert!(c.exact());
    assert!(c.count() >= 995, "{}", c.count());
    // highload-upsert: random-string keys are all distinct.
    let w = Workload::builtin("highload-upsert", 0, 0).unwrap();
    let c = KeyCounter::new(w.key_space());
    let mut g = w.generator(0, 1);
    for _ in 0..20_000 {
        c.touch(g.next(Duration::ZERO).key_index.unwrap());
    }
    assert!(
        (c.count() as f64 / 20_000.0 - 1.0).abs() < 0.03,
        "{}",
        c.count()
    );
}
