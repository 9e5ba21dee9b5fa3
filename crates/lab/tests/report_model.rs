//! The report model's histogram helpers against values counted by hand.

use hdrhistogram::Histogram;
use strata_lab::report::{model::MAX_SPECTRUM_POINTS, spectrum_from_hist, Percentiles};

fn hist(values: impl IntoIterator<Item = u64>) -> Histogram<u64> {
    let mut h = Histogram::new_with_bounds(1, 3_600_000_000, 3).unwrap();
    for v in values {
        h.record(v).unwrap();
    }
    h
}

#[test]
fn percentiles_of_1_to_1000_ms() {
    // 1000 values: 1 ms, 2 ms, ... 1000 ms, in microseconds.
    let h = hist((1..=1000).map(|i| i * 1000));
    let p = Percentiles::from_hist(&h);
    let near = |a: f64, b: f64| (a - b).abs() <= b * 0.001 + 1e-9;
    assert!(near(p.p50_ms, 500.0), "{p:?}");
    assert!(near(p.p90_ms, 900.0), "{p:?}");
    assert!(near(p.p95_ms, 950.0), "{p:?}");
    assert!(near(p.p99_ms, 990.0), "{p:?}");
    assert!(near(p.p999_ms, 999.0), "{p:?}");
    assert!(near(p.max_ms, 1000.0), "{p:?}");
    assert!(near(p.mean_ms, 500.5), "{p:?}");
}

#[test]
fn empty_histogram_gives_zeros_and_no_spectrum() {
    let h = hist([]);
    assert_eq!(Percentiles::from_hist(&h), Percentiles::default());
    assert!(spectrum_from_hist(&h).is_empty());
}

#[test]
fn spectrum_is_increasing_bounded_and_ends_at_the_max() {
    // A long-tailed distribution over many magnitudes, a million values.
    let mut x: u64 = 88172645463325252;
    let h = hist((0..1_000_000).map(|_| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let u = (x >> 11) as f64 / (1u64 << 53) as f64;
        (100.0 / (1.0 - u).max(1e-7)) as u64
    }));
    let s = spectrum_from_hist(&h);
    assert!(
        s.len() > 20 && s.len() <= MAX_SPECTRUM_POINTS,
        "{}",
        s.len()
    );
    for w in s.windows(2) {
        assert!(w[0].quantile < w[1].quantile, "{w:?}");
        assert!(w[0].latency_ms <= w[1].latency_ms, "{w:?}");
    }
    let last = s.last().unwrap();
    assert_eq!(last.quantile, 1.0);
    assert_eq!(last.latency_ms, h.max() as f64 / 1000.0);
    // The tail is there: some point beyond 99.99%.
    assert!(s.iter().any(|p| p.quantile > 0.9999 && p.quantile < 1.0));
    // Each point is the histogram's own value at that quantile.
    for p in &s[..s.len() - 1] {
        let v = h.highest_equivalent(h.value_at_quantile(p.quantile)) as f64 / 1000.0;
        assert!((v - p.latency_ms).abs() <= v * 0.002, "{p:?} vs {v}");
    }
}
