//! Interval logs: what two load machines write, merged, must equal the
//! histogram of all their values recorded directly; damage names the file.

use std::path::Path;
use std::time::{Duration, SystemTime};

use hdrhistogram::Histogram;
use strata_lab::report::hdrlog::{merge, run_merge, HdrLogWriter, MergeArgs};

fn new_hist() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 3_600_000_000, 3).unwrap()
}

/// A deterministic long-tailed stream of latencies in microseconds.
fn values(seed: u64, n: usize) -> Vec<u64> {
    let mut x = seed | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let u = (x >> 11) as f64 / (1u64 << 53) as f64;
            (200.0 / (1.0 - u).max(1e-6)) as u64 + 1
        })
        .collect()
}

/// Write one machine's log: `seconds` intervals, two operations, values
/// dealt out in turn; returns the values per operation.
fn write_log(path: &Path, start: SystemTime, seed: u64, seconds: usize) -> [Vec<u64>; 2] {
    let vs = values(seed, seconds * 2000);
    let mut w = HdrLogWriter::create(path, start).unwrap();
    let mut out = [Vec::new(), Vec::new()];
    for s in 0..seconds {
        for (o, tag) in ["get", "put"].iter().enumerate() {
            let mut h = new_hist();
            for v in vs[s * 2000..(s + 1) * 2000].iter().skip(o).step_by(2) {
                h.record(*v).unwrap();
                out[o].push(*v);
            }
            w.interval(s as f64, 1.0, tag, &h).unwrap();
        }
    }
    w.finish().unwrap();
    out
}

#[test]
fn merged_logs_equal_the_histogram_of_all_values() {
    let dir = tempfile::tempdir().unwrap();
    let start = SystemTime::UNIX_EPOCH + Duration::from_secs(1_750_000_000);
    let a = dir.path().join("pod-a.hlog");
    let b = dir.path().join("pod-b.hlog");
    // The second machine starts half a second later and runs 4 s, not 3.
    let va = write_log(&a, start, 1, 3);
    let vb = write_log(&b, start + Duration::from_millis(500), 2, 4);

    let m = merge(&[a.clone(), b.clone()]).unwrap();
    assert_eq!(m.files, 2);
    assert_eq!(m.intervals, 2 * 3 + 2 * 4);
    assert!((m.span_s - 4.5).abs() < 0.01, "span {}", m.span_s);

    let mut all = new_hist();
    for (o, tag) in ["get", "put"].iter().enumerate() {
        let mut direct = new_hist();
        for v in va[o].iter().chain(&vb[o]) {
            direct.record(*v).unwrap();
            all.record(*v).unwrap();
        }
        let merged = &m.per_tag[*tag];
        assert_eq!(merged.len(), direct.len(), "{tag}");
        for q in [0.0, 0.5, 0.9, 0.99, 0.999, 0.9999, 1.0] {
            assert_eq!(
                merged.value_at_quantile(q),
                direct.value_at_quantile(q),
                "{tag} q={q}"
            );
        }
    }
    assert_eq!(m.count(), all.len());
    assert_eq!(m.count(), 14_000);
    for q in [0.5, 0.99, 0.999, 1.0] {
        assert_eq!(
            m.total.value_at_quantile(q),
            all.value_at_quantile(q),
            "q={q}"
        );
    }
    assert_eq!(m.total.max(), all.max());

    // The text summary carries the count and the p99 of all values.
    let text = run_merge(&MergeArgs {
        files: vec![a.clone(), b.clone()],
        json: false,
    })
    .unwrap();
    assert!(
        text.contains("14000 requests from 2 interval logs"),
        "{text}"
    );
    let p99 = format!("{:.3}", all.value_at_quantile(0.99) as f64 / 1000.0);
    assert!(
        text.lines()
            .any(|l| l.contains("99.000%") && l.contains(&p99)),
        "no p99 {p99} in\n{text}"
    );
    assert!(text.contains("Detailed Percentile spectrum"));
    // JSON: the same numbers.
    let json = run_merge(&MergeArgs {
        files: vec![a, b],
        json: true,
    })
    .unwrap();
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["total"]["count"], 14_000);
    assert_eq!(v["per_tag"][0]["tag"], "get");
    assert_eq!(
        v["total"]["latency"]["p99_ms"].as_f64().unwrap(),
        all.value_at_quantile(0.99) as f64 / 1000.0
    );
}

#[test]
fn the_log_is_an_hdrhistogram_interval_log() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("one.hlog");
    let start = SystemTime::UNIX_EPOCH + Duration::from_secs(1_750_000_000);
    write_log(&p, start, 3, 1);
    let text = std::fs::read_to_string(&p).unwrap();
    assert!(text.contains("#[StartTime: 1750000000.000"), "{text}");
    assert!(text.contains("#[BaseTime: 1750000000.000"), "{text}");
    let lines: Vec<&str> = text.lines().filter(|l| l.starts_with("Tag=")).collect();
    assert_eq!(lines.len(), 2);
    // V2 compressed histograms encode as base64 starting "HISTF" (0x1c849304).
    assert!(lines[0].starts_with("Tag=get,0.000,1.000,"), "{}", lines[0]);
    assert!(
        lines[0].split(',').nth(4).unwrap().starts_with("HISTF"),
        "{}",
        lines[0]
    );
}

#[test]
fn bad_tags_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = HdrLogWriter::create(&dir.path().join("x.hlog"), SystemTime::now()).unwrap();
    let h = new_hist();
    assert!(w.interval(0.0, 1.0, "get put", &h).is_err());
    assert!(w.interval(0.0, 1.0, "a,b", &h).is_err());
    assert!(w.interval(-1.0, 1.0, "get", &h).is_err());
}

#[test]
fn damaged_or_missing_files_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("good.hlog");
    write_log(&good, SystemTime::now(), 4, 1);

    // Not a log at all.
    let junk = dir.path().join("junk.hlog");
    std::fs::write(&junk, "this is not\na log\n").unwrap();
    let e = merge(&[good.clone(), junk.clone()]).err().unwrap();
    assert!(e.contains("junk.hlog") && e.contains("parse"), "{e}");

    // A log whose histogram payload was damaged.
    let damaged = dir.path().join("damaged.hlog");
    let text = std::fs::read_to_string(&good).unwrap();
    let broken: String = text
        .lines()
        .map(|l| {
            if l.starts_with("Tag=put") {
                let (head, payload) = l.rsplit_once(',').unwrap();
                format!("{head},{}AAAA\n", &payload[..payload.len() / 2])
            } else {
                format!("{l}\n")
            }
        })
        .collect();
    std::fs::write(&damaged, broken).unwrap();
    let e = merge(&[good.clone(), damaged]).err().unwrap();
    assert!(
        e.contains("damaged.hlog") && e.contains("interval 2"),
        "{e}"
    );

    // Empty and missing files.
    let empty = dir.path().join("empty.hlog");
    std::fs::write(&empty, "#nothing\n").unwrap();
    let e = merge(&[empty]).err().unwrap();
    assert!(e.contains("empty.hlog") && e.contains("no interval"), "{e}");
    let e = merge(&[dir.path().join("missing.hlog")]).err().unwrap();
    assert!(e.contains("missing.hlog"), "{e}");
    assert!(merge(&[]).is_err());
}
