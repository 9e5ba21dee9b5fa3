//! A sweep split among workers (`strata sweep --workers`, `strata
//! worker`): every trial's schedule sent once, shared evenly, the
//! latencies merged (against a server whose every answer takes 20 ms, the
//! same p50 as one generator's); a worker stopped (SIGSTOP) mid-trial is the cause the
//! verdict names, by its URL; a worker will not start without its own
//! token, refuses every order without it (401, before reading it), a bad
//! request, a second run while busy, and any workload file but one sent in
//! the order or under its --workloads; docs/lab.md's "Many generators"
//! recipes run as written against real nodes, without tokens and with.
//!
//! Here: the split runs; `workers/worker.rs` the worker process and the
//! exchanges with it; `workers/access.rs` who may order a worker and what
//! it reads; `workers/recipes.rs` the docs' recipes.

#[path = "workers/access.rs"]
mod access;
#[path = "workers/recipes.rs"]
mod recipes;
mod support;
#[path = "workers/worker.rs"]
mod worker;

use std::io::{BufRead, BufReader, Read, Write};
use std::process::Command;

use support::NodeProc;
use worker::{one_at_a_time, sweep, WorkerProc, TOKEN};

#[test]
fn a_sweep_split_among_two_workers_sends_every_trial_once() {
    let _one = one_at_a_time();
    let data = tempfile::tempdir().unwrap();
    let node = NodeProc::start(data.path(), &["--durability", "none"]);
    let (a, b) = (WorkerProc::start(&[]), WorkerProc::start(&[]));
    let (ok, text, r) = sweep(
        &node.url(),
        &[&a, &b],
        &[
            "--start-rate",
            "300",
            "--duration",
            "1.5",
            "--max-trials",
            "2",
            "--tail-samples",
            "3",
            "--slo",
            "p99<=5s",
        ],
    );
    assert!(ok, "{text}");
    assert!(text.contains("split among 2 workers"), "{text}");
    let trials = r["trials"].as_array().unwrap();
    assert_eq!(trials.len(), 2, "{text}");
    for t in trials {
        let rate = t["offered_rate"].as_f64().unwrap();
        let want = (rate * 1.5) as u64;
        // The whole schedule, once: as one generator would have sent it.
        assert_eq!(t["requests"].as_u64(), Some(want), "{t}");
        let w = t["workers"].as_array().unwrap();
        assert_eq!(w.len(), 2);
        let urls: Vec<&str> = w.iter().map(|w| w["url"].as_str().unwrap()).collect();
        assert_eq!(urls, [a.url.as_str(), b.url.as_str()]);
        for w in w {
            assert_eq!(w["requests"].as_u64(), Some(want / 2), "an even share: {w}");
        }
        // The merged latencies are every request's.
        let ops: u64 = t["per_op"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| o["requests"].as_u64().unwrap())
            .sum();
        assert_eq!(ops, want);
        assert!(t["latency"]["p99_ms"].as_f64().unwrap() > 0.0);
    }
}

/// A server that answers every request after `delay` (one thread per
/// connection): a target whose latency is known, so that percentiles can
/// be compared without the machine's noise deciding.
fn slow_server(delay: std::time::Duration) -> String {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    std::thread::spawn(move || {
        for s in l.incoming().flatten() {
            std::thread::spawn(move || {
                let mut r = BufReader::new(s.try_clone().unwrap());
                let mut w = s;
                loop {
                    let (mut len, mut line, mut path) = (0usize, String::new(), String::new());
                    loop {
                        line.clear();
                        if r.read_line(&mut line).unwrap_or(0) == 0 {
                            return;
                        }
                        if path.is_empty() {
                            path = line.split(' ').nth(1).unwrap_or("").to_string();
                        }
                        if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                            len = v.trim().parse().unwrap_or(0);
                        }
                        if line == "\r\n" {
                            break;
                        }
                    }
                    let mut body = vec![0u8; len];
                    if r.read_exact(&mut body).is_err() {
                        return;
                    }
                    let status = if path.starts_with("/v0/entity") {
                        std::thread::sleep(delay);
                        "200 OK"
                    } else {
                        "404 Not Found"
                    };
                    let head = format!("HTTP/1.1 {status}\r\nContent-Length: 0\r\n\r\n");
                    if w.write_all(head.as_bytes()).is_err() {
                        return;
                    }
                }
            });
        }
    });
    format!("http://{addr}")
}

fn p(r: &serde_json::Value, q: &str) -> f64 {
    r["trials"][0]["latency"][q].as_f64().unwrap()
}

#[test]
fn two_workers_merged_see_the_latencies_one_generator_sees() {
    let _one = one_at_a_time();
    // Every answer takes 20 ms: one generator and two workers, merged,
    // must both say so, at p50 and p99 (within the generator's own
    // jitter), and count every request.
    let target = slow_server(std::time::Duration::from_millis(20));
    let (a, b) = (WorkerProc::start(&[]), WorkerProc::start(&[]));
    let run = |workers: Option<String>| {
        let out = tempfile::tempdir().unwrap();
        let mut c = Command::new(env!("CARGO_BIN_EXE_strata"));
        c.args(["load", &target, "--workload", "get", "--keys", "100"])
            .args(["--rate", "200", "--duration", "2", "--json", "--quiet"])
            .args(["--out", out.path().join("r").to_str().unwrap()]);
        if let Some(w) = workers {
            c.args(["--workers", &w])
                .arg("--worker-token-file")
                .arg(a.token_file());
        }
        let o = c.output().unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        serde_json::from_slice::<serde_json::Value>(&o.stdout).unwrap()
    };
    let one = run(None);
    let two = run(Some(format!("{},{}", a.url, b.url)));
    for r in [&one, &two] {
        assert_eq!(r["trials"][0]["requests"].as_u64(), Some(400), "{r}");
        let p50 = p(r, "p50_ms");
        assert!((20.0..24.0).contains(&p50), "p50 {p50} ms");
        assert!(p(r, "p99_ms") >= 20.0);
    }
    let ratio = p(&two, "p50_ms") / p(&one, "p50_ms");
    assert!((0.9..1.1).contains(&ratio), "p50 two / one = {ratio}");
    assert_eq!(two["trials"][0]["workers"].as_array().unwrap().len(), 2);
}

#[test]
fn a_load_run_split_among_workers_merges_into_one_log() {
    let _one = one_at_a_time();
    let data = tempfile::tempdir().unwrap();
    let node = NodeProc::start(data.path(), &["--durability", "none"]);
    let (a, b, c) = (
        WorkerProc::start(&[]),
        WorkerProc::start(&[]),
        WorkerProc::start(&[]),
    );
    let out = tempfile::tempdir().unwrap();
    let hlog = out.path().join("run.hlog");
    let workers = [&a, &b, &c].map(|w| w.url.clone()).join(",");
    let o = Command::new(env!("CARGO_BIN_EXE_strata"))
        .args(["load", &node.url(), "--workers", &workers])
        .arg("--worker-token-file")
        .arg(a.token_file())
        .args(["--rate", "600", "--duration", "2", "--keys", "1000"])
        .args(["--hdr", hlog.to_str().unwrap()])
        .args(["--out", out.path().join("rep").to_str().unwrap()])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(text.contains("1200 requests in"), "{text}");
    assert!(text.contains("Workers (3;"), "{text}");
    for w in [&a, &b, &c] {
        assert!(
            text.lines()
                .any(|l| l.contains(&w.url) && l.contains(" 400 requests")),
            "{}: {text}",
            w.url
        );
    }
    // The interval log holds every request of every worker.
    let m = Command::new(env!("CARGO_BIN_EXE_strata"))
        .args(["report", "merge", "--json", hlog.to_str().unwrap()])
        .output()
        .unwrap();
    let m: serde_json::Value = serde_json::from_slice(&m.stdout).unwrap();
    assert_eq!(m["total"]["count"].as_u64(), Some(1200), "{m}");
    // A run is split among workers or is one share of a run, not both.
    let o = Command::new(env!("CARGO_BIN_EXE_strata"))
        .args([
            "load",
            &node.url(),
            "--workers",
            &workers,
            "--worker-token",
            TOKEN,
            "--segment",
            "1/2",
        ])
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("--segment"));
}

#[test]
fn a_worker_stopped_mid_trial_is_the_cause_the_verdict_names() {
    let _one = one_at_a_time();
    let data = tempfile::tempdir().unwrap();
    let node = NodeProc::start(data.path(), &["--durability", "none"]);
    let (a, b) = (WorkerProc::start(&[]), WorkerProc::start(&[]));
    // The trial's first send is due 1.5 s after the sweep asks; stop the
    // first worker from 0.6 s into it, for a second.
    let pid = a.child.id().to_string();
    let stopper = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(2400));
        let _ = Command::new("kill").args(["-STOP", &pid]).status();
        std::thread::sleep(std::time::Duration::from_secs(1));
        let _ = Command::new("kill").args(["-CONT", &pid]).status();
    });
    let (_, text, r) = sweep(
        &node.url(),
        &[&a, &b],
        &[
            "--start-rate",
            "400",
            "--duration",
            "3",
            "--max-trials",
            "1",
            "--tail-samples",
            "1",
            "--slo",
            "p99<=100ms",
        ],
    );
    stopper.join().unwrap();
    assert_eq!(r["cause"], "generator", "{text}");
    let verdict = r["verdict"].as_str().unwrap();
    assert!(
        verdict.contains(&format!("The worker that fell behind: {}", a.url)),
        "{verdict}"
    );
    let w = &r["trials"][0]["workers"];
    assert!(
        w[0]["generator_late_sends"].as_u64() > w[1]["generator_late_sends"].as_u64(),
        "{w}"
    );
}
