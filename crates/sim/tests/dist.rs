//! Every sampler against its mean and variance, and the empirical forms
//! against the data they were built from (an HdrHistogram interval log as
//! `strata load --hdr` writes it, and Prometheus bucket counts).

use std::path::Path;

use hdrhistogram::serialization::interval_log::IntervalLogWriterBuilder;
use hdrhistogram::serialization::V2DeflateSerializer;
use hdrhistogram::Histogram;
use strata_sim::dist::{clipped_normal_mean, DistSpec, Sampler};
use strata_sim::rng::SimRng;

const N: usize = 200_000;

fn moments(spec: &str, base: &Path) -> (f64, f64, Sampler) {
    let d: DistSpec = toml::from_str(spec).unwrap_or_else(|e| panic!("{spec}: {e}"));
    let s = Sampler::compile(&d, base).unwrap();
    let mut rng = SimRng::new(99, 1);
    let xs: Vec<f64> = (0..N).map(|_| s.sample(&mut rng) as f64).collect();
    let mean = xs.iter().sum::<f64>() / N as f64;
    let var = xs.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / (N - 1) as f64;
    (mean, var.sqrt(), s)
}

fn close(got: f64, want: f64, tol: f64, what: &str) {
    let err = (got - want).abs() / want.abs().max(1e-9);
    assert!(
        err <= tol,
        "{what}: got {got}, want {want} ({:.3}% off)",
        err * 100.0
    );
}

#[test]
fn parametric_samplers() {
    let here = Path::new(".");
    // (spec, mean ns, sd ns)
    let u_sd = 2e6 / 12f64.sqrt();
    let cases: Vec<(&str, f64, f64)> = vec![
        ("dist = \"constant\"\nvalue = \"1ms\"", 1e6, 0.0),
        (
            "dist = \"uniform\"\nmin = \"1ms\"\nmax = \"3ms\"",
            2e6,
            u_sd,
        ),
        (
            "dist = \"normal\"\nmean = \"10ms\"\nsd = \"1ms\"\nshift = \"50ms\"",
            60e6,
            1e6,
        ),
        (
            "dist = \"lognormal\"\nmean = \"2ms\"\nsd = \"1ms\"",
            2e6,
            1e6,
        ),
        ("dist = \"exponential\"\nmean = \"5ms\"", 5e6, 5e6),
        ("dist = \"gamma\"\nmean = \"4ms\"\nsd = \"2ms\"", 4e6, 2e6),
        (
            "dist = \"gamma\"\nmean = \"16us\"\nsd = \"8us\"\nshift = \"1us\"",
            17e3,
            8e3,
        ),
    ];
    for (spec, mean, sd) in cases {
        let (m, s, sampler) = moments(spec, here);
        close(m, mean, 0.01, &format!("mean of {spec:?}"));
        close(
            sampler.mean(),
            mean,
            1e-9,
            &format!("analytic mean of {spec:?}"),
        );
        if sd == 0.0 {
            assert_eq!(s, 0.0);
        } else {
            close(s, sd, 0.02, &format!("sd of {spec:?}"));
        }
    }
}

#[test]
fn normal_is_clipped_at_zero() {
    // The seed's store: 50 ms + max(0, N(10 ms, 5 ms)); and a normal whose
    // draws are often negative.
    let (m, _, s) = moments(
        "dist = \"normal\"\nmean = \"10ms\"\nsd = \"5ms\"\nshift = \"50ms\"",
        Path::new("."),
    );
    let want = 50e6 + clipped_normal_mean(10e6, 5e6);
    close(m, want, 0.002, "seed store mean");
    close(s.mean(), want, 1e-9, "seed store analytic mean");
    let (m, _, s) = moments(
        "dist = \"normal\"\nmean = \"1ms\"\nsd = \"2ms\"",
        Path::new("."),
    );
    let mut rng = SimRng::new(1, 1);
    assert!(
        (0..10_000).all(|_| s.sample(&mut rng) < u64::MAX / 2),
        "never negative"
    );
    close(m, clipped_normal_mean(1e6, 2e6), 0.01, "clipped mean");
}

#[test]
fn prometheus_buckets() {
    // 25% in (0, 1ms], 50% in (1ms, 2ms], 25% in (2ms, 4ms]: mean 2 ms.
    let spec =
        "dist = \"histogram\"\nle_seconds = [0.001, 0.002, 0.004, inf]\ncounts = [25, 50, 25, 0]";
    let (m, _, s) = moments(spec, Path::new("."));
    let want = 0.25 * 0.5e6 + 0.5 * 1.5e6 + 0.25 * 3e6;
    close(m, want, 0.01, "bucket mean");
    close(s.mean(), want, 1e-9, "bucket analytic mean");
    let bad: DistSpec =
        toml::from_str("dist = \"histogram\"\nle_seconds = [0.001]\ncounts = [1, 2]").unwrap();
    assert!(Sampler::compile(&bad, Path::new(".")).is_err());
}

#[test]
fn hdr_interval_log() {
    // Two intervals tagged "put" (µs, as the lab writes) and one "get".
    let dir = std::env::temp_dir().join(format!("strata-sim-dist-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut put: Histogram<u64> = Histogram::new_with_bounds(1, 60_000_000, 3).unwrap();
    let mut get: Histogram<u64> = Histogram::new_with_bounds(1, 60_000_000, 3).unwrap();
    let mut rng = SimRng::new(5, 5);
    let mut sum = 0.0;
    for _ in 0..50_000 {
        let v = 200 + (rng.unit() * 600.0) as u64; // 200..800 µs
        sum += v as f64;
        put.record(v).unwrap();
        get.record(10).unwrap();
    }
    let mut buf = Vec::new();
    let mut ser = V2DeflateSerializer::new();
    {
        let mut w = IntervalLogWriterBuilder::new()
            .with_base_time(std::time::SystemTime::UNIX_EPOCH)
            .begin_log_with(&mut buf, &mut ser)
            .unwrap();
        let tag = hdrhistogram::serialization::interval_log::Tag::new("put");
        let gtag = hdrhistogram::serialization::interval_log::Tag::new("get");
        let sec = std::time::Duration::from_secs(1);
        w.write_histogram(&put, std::time::Duration::ZERO, sec, tag)
            .unwrap();
        w.write_histogram(&get, std::time::Duration::ZERO, sec, gtag)
            .unwrap();
    }
    std::fs::write(dir.join("lat.hlog"), &buf).unwrap();
    let (m, _, _) = moments(
        "dist = \"empirical\"\nfile = \"lat.hlog\"\ntag = \"put\"",
        &dir,
    );
    close(m, sum / 50_000.0 * 1e3, 0.01, "empirical mean (ns)");
    let (m, _, _) = moments(
        "dist = \"empirical\"\nfile = \"lat.hlog\"\ntag = \"get\"\nscale = 2.0",
        &dir,
    );
    close(m, 20e3, 0.01, "scaled empirical mean");
    let missing: DistSpec =
        toml::from_str("dist = \"empirical\"\nfile = \"lat.hlog\"\ntag = \"scan\"").unwrap();
    let e = Sampler::compile(&missing, &dir).unwrap_err();
    assert!(e.contains("no recorded values"), "{e}");
    std::fs::remove_dir_all(&dir).ok();
}
