//! libri: 8 requests per upload, reads 2–10 s after the share, each read of
//! a key that was written; the rate helper.

use std::collections::HashMap;
use std::time::Duration;

use strata_lab::load::workload::{libri_rate_from_uploads_per_day, Op, Workload};

#[test]
fn libri_sends_8_requests_per_upload_with_reads_2_to_10_s_later() {
    let w = Workload::builtin("libri", 0, 0).unwrap();
    let mut g = w.generator(0, 4);
    // One request every 5 ms for 120 s of simulated time.
    let step = Duration::from_millis(5);
    let mut written: HashMap<String, (Duration, usize)> = HashMap::new();
    let (mut puts, mut gets, mut entries, mut entry_bytes) = (0u64, 0u64, 0u64, 0f64);
    let mut reads_of: HashMap<String, u64> = HashMap::new();
    let mut late = 0u64;
    let mut now = Duration::ZERO;
    let end = Duration::from_secs(120);
    while now < end {
        let n = g.next(now);
        match n.op {
            Op::Put { key, value_len } => {
                puts += 1;
                if value_len != 200 {
                    entries += 1;
                    entry_bytes += value_len as f64;
                }
                assert_eq!(key.len(), 16);
                assert!(
                    written.insert(key, (now, value_len)).is_none(),
                    "fresh keys"
                );
            }
            Op::Get { key } => {
                gets += 1;
                let (at, _) = written[&key];
                let after = now - at;
                // Never early. The share's envelope is written at most 3
                // puts (15 ms) after the entry, and a due read can queue
                // behind other due reads for this worker's slots.
                assert!(
                    after >= Duration::from_secs(2),
                    "read {after:?} after its write"
                );
                assert!(
                    after <= Duration::from_secs(11),
                    "read {after:?} after its write"
                );
                if after > Duration::from_millis(10_040) {
                    late += 1;
                }
                *reads_of.entry(key).or_default() += 1;
            }
            other => panic!("libri sent {other:?}"),
        }
        now += step;
    }
    assert!(late * 1000 <= gets, "{late} of {gets} reads queued > 40 ms");
    // Drain: 11 s later every scheduled read is due and comes before any
    // new upload.
    let later = end + Duration::from_secs(11);
    loop {
        match g.next(later).op {
            Op::Get { key } => {
                gets += 1;
                *reads_of.entry(key).or_default() += 1;
            }
            Op::Put { .. } => break,
            other => panic!("{other:?}"),
        }
    }
    // Every upload: 4 puts (entry + 3 envelopes) and 4 gets.
    assert_eq!(puts % 4, 0, "whole uploads: {puts} puts");
    let uploads = puts / 4;
    assert!(uploads > 1000);
    assert_eq!(entries, uploads);
    assert_eq!(puts + gets, 8 * uploads);
    // Each shared envelope read once, each entry read twice (2 readers).
    for (key, reads) in &reads_of {
        let (_, len) = written[key];
        assert_eq!(*reads, if len == 200 { 1 } else { 2 }, "{key}");
    }
    assert_eq!(reads_of.len() as u64, 3 * uploads);
    // Entry sizes: gamma(1.5, 170 KiB), mean ≈ 255 KiB.
    let mean = entry_bytes / entries as f64;
    assert!(
        (mean / (1.5 * 170.0 * 1024.0) - 1.0).abs() < 0.1,
        "entry mean {mean}"
    );
}

#[test]
fn libri_rate_is_requests_per_second() {
    // Seed 003's 256K uploads per day: 256000 × 8 / 86400 ≈ 23.7 req/s.
    let r = libri_rate_from_uploads_per_day(256_000.0);
    assert!((r - 256_000.0 * 8.0 / 86_400.0).abs() < 1e-9);
    assert!((r - 23.7).abs() < 0.01);
}

#[test]
fn libri_workers_have_their_own_keys() {
    let w = Workload::builtin("libri", 0, 0).unwrap();
    let mut g0 = w.generator(0, 1);
    let mut g1 = w.generator(1, 1);
    let k0 = g0.next(Duration::ZERO).op;
    let k1 = g1.next(Duration::ZERO).op;
    assert_ne!(k0.key(), k1.key());
    assert_eq!(w.key_space(), None);
    assert_eq!(w.preload().count(), 0);
}
