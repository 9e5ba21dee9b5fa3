//! The two-minute soak, as a user runs it: `strata soak` starts a local
//! cluster of three real nodes with a small memtable (so flushes and
//! compactions run within the two minutes), offers a fixed mixed load with
//! the consistency checker's clients alongside, and judges what it saw.
//! The hour-long soak is the same command with its defaults (a sweep for
//! the breaking point, 70 % of it, one hour); its figures are in
//! docs/benchmarks.md.
//!
//! Asserted: the checker found nothing lost or stale; every node flushed
//! and compacted; RSS and open descriptors flat by the soak's own rules;
//! the summary, its JSON and the three charts written; what the RSS held
//! at the end said. The p99's drift and the stall criterion are timing on
//! a shared machine and are only required to be reported.

use std::process::Command;

#[test]
fn a_two_minute_soak_keeps_everything_and_stays_flat() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_strata"))
        .args([
            "soak",
            "--duration",
            "2m",
            // Well under what three debug-build nodes and the generator
            // serve on two cores: at 800 req/s one run of the suite on
            // 2026-11-27 shed 16 % of requests (503), the machine full;
            // at 400 the machine was 97 % busy (2026-11-29: p50 28 ms, and
            // 0.15 % shed by one node through a stall of the host).
            "--rate",
            "250",
            "--keys",
            "20000",
            "--window",
            "10s",
            "--memtable-bytes",
            "524288",
        ])
        .arg("--dir")
        .arg(dir.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let json = std::fs::read_to_string(dir.path().join("soak.json"))
        .unwrap_or_else(|e| panic!("no soak.json ({e})\nstdout:\n{stdout}\nstderr:\n{stderr}"));
    let s: serde_json::Value = serde_json::from_str(&json).unwrap();
    let criteria = s["criteria"].as_array().unwrap();
    let failed: Vec<&serde_json::Value> = criteria
        .iter()
        // Latency is reported, not asserted: timing on a shared machine.
        .filter(|c| {
            c["passed"] != true
                && c["name"] != "p99 without drift"
                && c["name"] != "no stall over 100 ms"
        })
        .collect();
    assert!(
        failed.is_empty(),
        "criteria failed: {failed:#?}\nstdout:\n{stdout}\nstderr:\n{stderr}"
    );
    // Every criterion the soak promises was judged: the checker, errors,
    // three nodes' RSS, descriptors and engine work, the p99's drift and
    // stalls.
    assert_eq!(criteria.len(), 4 + 3 * 3, "{criteria:#?}");
    for n in s["nodes"].as_array().unwrap() {
        // What the RSS held at the end is said: the heap, the cache, the
        // memtables.
        for k in ["anon_last_mib", "cache_last_mib", "memtables_last_mib"] {
            assert!(n[k].as_f64().is_some_and(|v| v >= 0.0), "{k}: {n:#}");
        }
    }
    let check = &s["check"];
    assert_eq!(check["lost"], 0, "{check:#}");
    assert_eq!(check["stale"], 0, "{check:#}");
    assert!(
        check["writes_acknowledged"].as_u64().unwrap() > 100,
        "{check:#}"
    );
    for n in s["nodes"].as_array().unwrap() {
        assert!(n["flushes"].as_f64().unwrap() >= 1.0, "{n:#}");
        assert!(n["compactions"].as_f64().unwrap() >= 1.0, "{n:#}");
        // Descriptors were sampled (a node holds its files and sockets).
        assert!(n["fds_min"].as_f64().unwrap() > 5.0, "{n:#}");
    }
    // Ten-second windows over two minutes, each with requests.
    let windows = s["windows"].as_array().unwrap();
    assert!(windows.len() >= 10, "{windows:#?}");
    assert!(windows.iter().all(|w| w["requests"].as_u64().unwrap() > 0));
    // The exit status follows the verdict.
    assert_eq!(out.status.success(), s["passed"] == true, "{stdout}");
    for f in ["soak.md", "soak-rss.svg", "soak-fds.svg", "soak-p99.svg"] {
        let body = std::fs::read_to_string(dir.path().join(f)).unwrap();
        assert!(body.len() > 200, "{f}");
    }
    let md = std::fs::read_to_string(dir.path().join("soak.md")).unwrap();
    assert!(
        md.contains("RSS flat on") && md.contains("p99 without drift"),
        "{md}"
    );
    assert!(dir.path().join("report/report.html").exists());
}
