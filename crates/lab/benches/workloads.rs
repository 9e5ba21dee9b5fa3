//! Nanoseconds per `next()` of the main workloads (a benchmark: `cargo
//! bench -p strata-lab --bench workloads`).

use std::hint::black_box;
use std::time::{Duration, Instant};

use strata_lab::load::workload::{KeyCounter, Workload};

fn main() {
    let n = 2_000_000u32;
    for name in [
        "put",
        "mixed",
        "ycsb-a",
        "ycsb-d",
        "ycsb-e",
        "ycsb-f",
        "libri",
        "highload-upsert",
        "highload-get",
    ] {
        let w = Workload::builtin(name, 1_000_000, 100).unwrap();
        let counter = KeyCounter::new(w.key_space());
        let mut g = w.generator(0, 1);
        let t = Instant::now();
        for i in 0..n {
            // libri: 1 ms of simulated time per op.
            let next = g.next(Duration::from_millis(i as u64));
            if let Some(k) = next.key_index {
                counter.touch(k);
            }
            black_box(next);
        }
        let ns = t.elapsed().as_nanos() as f64 / n as f64;
        println!(
            "{name:>16}: {ns:6.1} ns per next() + touch ({:.1} M ops/s on one core); distinct keys {}{}",
            1e3 / ns,
            counter.count(),
            if counter.exact() { "" } else { " (estimate)" }
        );
    }
}
