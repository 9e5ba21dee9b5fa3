//! The membership benchmark (docs/benchmarks.md, "Joining and leaving"),
//! not a test: it runs for minutes and prints figures.
//! `scripts/bench-membership.sh` runs it in release mode:
//!
//!   cargo bench -p strata --bench membership
//!
//! Three real nodes holding `MV_KEYS` (200,000 by default) keys of 100 B;
//! `strata load --check` offers `MV_RATE` req/s (2,000) of a mixed load
//! through the three first nodes all along; a fourth node joins (`strata
//! cluster join`), then the first leaves (`strata cluster leave`). For
//! each change: keys moved against the ideal, records sent, duration, and
//! the foreground's per-second p99 before and during; at the end the
//! checker's verdict over the whole run.

#[path = "../tests/support/mod.rs"]
mod support;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn env_or(name: &str, d: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(d)
}

fn strata() -> Command {
    support::strata_operator()
}

/// Run a change with the CLI; (its output, start and end in seconds
/// since `t0`).
fn change(what: &str, url: &str, t0: Instant) -> (String, f64, f64) {
    let from = t0.elapsed().as_secs_f64();
    let o = strata().args(["cluster", what, url]).output().unwrap();
    let to = t0.elapsed().as_secs_f64();
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        o.status.success(),
        "{what}: {out}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    (out, from, to)
}

fn main() {
    let keys = env_or("MV_KEYS", 200_000);
    let rate = env_or("MV_RATE", 2000);
    let mut c = support::ClusterProcs::start(3, &[]);
    let urls = c.urls.join(",");
    let out = tempfile::tempdir().unwrap();
    println!("cluster {urls}; writing {keys} keys of 100 B");
    let st = strata()
        .args(["load", &c.urls[0], "--workload", "get", "--preload"])
        .args(["--quiet", "--keys", &keys.to_string()])
        .args(["--rate", "10", "--duration", "1"])
        .arg("--out")
        .arg(out.path().join("preload"))
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(st.success());
    let first = c.urls[0].clone();
    let (new, new_url) = support::start_joining(&out.path().join("node-new"), &first);
    let total_s = env_or("MV_LOAD_S", 120);
    let report = out.path().join("load");
    let load = strata()
        .args(["load", &urls, "--workload", "mixed", "--check", "--quiet"])
        .args(["--keys", &keys.to_string(), "--rate", &rate.to_string()])
        .args(["--duration", &total_s.to_string(), "--warmup", "0"])
        .arg("--out")
        .arg(&report)
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    std::thread::sleep(Duration::from_secs(20));
    let (joined, j0, j1) = change("join", &new_url, t0);
    println!("join ({j0:.1}..{j1:.1} s into the load):\n{joined}");
    for i in 0..3 {
        let r = c.node(i).request("GET", "/v0/cluster", b"");
        let v: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
        println!(
            "   {} dropped {} records it gave away",
            c.urls[i], v["stream"]["removed"]
        );
    }
    // What each member holds that it does not replicate under the new
    // layout (the load goes on): 0 if the keys given away were dropped
    // and nothing reached a member that no longer holds it.
    let four: Vec<String> = c.urls.iter().cloned().chain([new_url.clone()]).collect();
    let p = strata_cluster::placement::Placement::new(
        four.iter().map(|u| strata_cluster::member_id(u)).collect(),
    );
    for (i, n) in [c.node(0), c.node(1), c.node(2), &new]
        .into_iter()
        .enumerate()
    {
        let r = n.request("GET", "/v0/entities?start=%01", b"");
        let strays = r
            .chunks
            .iter()
            .filter(|e| {
                let k = e.split(|&b| b == b'\n').next().unwrap();
                !p.replicas(k, 3).contains(&i)
            })
            .count();
        println!(
            "   {} holds {} live keys, {strays} it does not replicate",
            four[i],
            r.chunks.len()
        );
    }
    std::thread::sleep(Duration::from_secs(10));
    let (left, l0, l1) = change("leave", &first, t0);
    println!("leave ({l0:.1}..{l1:.1} s into the load):\n{left}");
    let o = load.wait_with_output().unwrap();
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(report.join("report.json")).unwrap())
            .unwrap();
    let seconds = r["trials"][0]["timeline"].as_array().unwrap();
    let p99 = |from, to| support::p99_per_second(seconds, from, to);
    let show = |what: &str, (m, w, n): (f64, f64, usize)| {
        println!("   per-second p99 {what}: median {m:.2} ms, worst {w:.2} ms ({n} s)");
    };
    println!("foreground {rate} req/s mixed through nodes 1-3:");
    show("before the join", p99(3.0, j0 - 1.0));
    show("during the join", p99(j0, j1));
    show("between", p99(j1 + 1.0, l0 - 1.0));
    show("during the leave", p99(l0, l1));
    show("after", p99(l1 + 1.0, total_s as f64));
    let trial = &r["trials"][0];
    println!(
        "   whole run p99 {:.2} ms, errors {}",
        trial["latency"]["p99_ms"].as_f64().unwrap(),
        trial["errors"]
    );
    println!(
        "checker: {}",
        r["check"]["text"].as_str().unwrap_or("(no checker text)")
    );
    assert!(o.status.success(), "the checked load failed");
    c.kill(0);
    new.stop();
}
