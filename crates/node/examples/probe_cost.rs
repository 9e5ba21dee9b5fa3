//! What a disabled USDT probe costs: fire `request-start` (three arguments,
//! one of them a string) N times with no tracer attached, against the same
//! loop without the probe. Run:
//! `cargo run --release -p strata-node --example probe_cost`
//! (attach `scripts/probes/count.bt` to see the enabled cost).

use std::hint::black_box;
use std::time::Instant;

fn main() {
    let n: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(100_000_000);
    strata_node::probes::register();
    let t = Instant::now();
    for i in 0..n {
        black_box(i);
    }
    let base = t.elapsed();
    let t = Instant::now();
    for i in 0..n {
        strata_node::probes::fire_request_start(black_box(i), "GET", "/v0/entity");
    }
    let probed = t.elapsed();
    let per = (probed.as_secs_f64() - base.as_secs_f64()) / n as f64 * 1e9;
    println!(
        "{n} iterations: empty loop {:.3} s, with a disabled request-start probe {:.3} s: {per:.2} ns per probe",
        base.as_secs_f64(),
        probed.as_secs_f64()
    );
}
