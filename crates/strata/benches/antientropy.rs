//! The anti-entropy benchmark (docs/benchmarks.md), not a test: it runs
//! for minutes and prints figures. `scripts/bench-antientropy.sh` runs it
//! in release mode:
//!
//!   cargo bench -p strata --bench antientropy
//!
//! On three real nodes holding `KEYS` (1,000,000 by default, env
//! `AE_KEYS`) keys of 100 B:
//!
//! 1. an exchange when nothing differs: bytes and time;
//! 2. a node whose data directory was wiped, rebuilt by `POST
//!    /v0/cluster/repair` while `strata load` offers a constant mixed load
//!    through every node: time to level, the load's p99 before and
//!    during, records sent that were already there (overstreaming);
//! 3. 1,000 keys changed on one replica behind the cluster's back
//!    (written into its store while it was stopped): found, repaired, and
//!    what else was sent.

#[path = "../tests/support/mod.rs"]
mod support;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use support::{ClusterProcs, NodeProc};

fn env_or(name: &str, d: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(d)
}

fn repair(n: &NodeProc) -> (serde_json::Value, Duration) {
    let t = Instant::now();
    let r = n.operate("POST", "/v0/cluster/repair", b"");
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    (serde_json::from_slice(&r.body).unwrap(), t.elapsed())
}

fn sum(v: &serde_json::Value, f: &str) -> u64 {
    v["exchanges"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x[f].as_u64().unwrap_or(0))
        .sum()
}

fn summary(what: &str, v: &serde_json::Value, took: Duration) {
    println!(
        "{what}: {:.3} s; exchanges {}; leaves differing {}; pulled {}; pushed {}; already there {}; bytes sent {} received {}",
        took.as_secs_f64(),
        v["exchanges"].as_array().unwrap().len(),
        sum(v, "leaves_differing"),
        sum(v, "pulled"),
        sum(v, "pushed"),
        sum(v, "already_there"),
        sum(v, "bytes_sent"),
        sum(v, "bytes_received"),
    );
    for x in v["exchanges"].as_array().unwrap() {
        assert!(x["error"].is_null(), "{x:#}");
    }
}

fn keys_in_tree(c: &ClusterProcs, i: usize) -> u64 {
    let r = c.node(i).request("GET", "/v0/cluster", b"");
    let v: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
    v["ranges"][0]["keys"].as_u64().unwrap()
}

fn strata() -> Command {
    support::strata_operator()
}

fn main() {
    let keys = env_or("AE_KEYS", 1_000_000);
    let rate = env_or("AE_RATE", 2000);
    let mut c = ClusterProcs::start(
        3,
        &[
            "--anti-entropy-interval-s",
            "0",
            "--anti-entropy-settle-ms",
            "2000",
        ],
    );
    let urls = c.urls.join(",");
    println!("cluster {urls}; writing {keys} keys of 100 B through node 1");
    // Every run's report goes under this, not into the working directory.
    let out = tempfile::tempdir().unwrap();
    let t = Instant::now();
    let st = strata()
        .args([
            "load",
            &c.urls[0],
            "--workload",
            "get",
            "--preload",
            "--quiet",
        ])
        .args([
            "--keys",
            &keys.to_string(),
            "--rate",
            "10",
            "--duration",
            "1",
        ])
        .arg("--out")
        .arg(out.path().join("preload"))
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(st.success());
    println!("written in {:.1} s", t.elapsed().as_secs_f64());
    // Every node holds every key (the third replica's copy is not waited
    // for by the writes' quorum).
    for i in 0..3 {
        support::trees_ready(&c, i, 600);
    }
    let deadline = Instant::now() + Duration::from_secs(120);
    while (0..3).any(|i| keys_in_tree(&c, i) < keys) {
        assert!(Instant::now() < deadline, "replicas never level");
        std::thread::sleep(Duration::from_millis(500));
    }
    std::thread::sleep(Duration::from_secs(3));

    // 1. Nothing differs.
    let (v, took) = repair(c.node(0));
    summary("1. nothing differs (node 1 with both peers)", &v, took);

    // 2. A wiped node rebuilt under a constant load.
    c.kill(2);
    std::fs::remove_dir_all(&c.dirs[2]).unwrap();
    c.start_node(2);
    for i in 0..3 {
        assert!(c.wait_states(i, &["up"; 3], 30));
    }
    support::trees_ready(&c, 2, 600);
    let report = out.path().join("load");
    let before_s = 15u64;
    let total_s = env_or("AE_LOAD_S", 120);
    let mut load = strata()
        .args(["load", &urls, "--workload", "mixed", "--quiet"])
        .args(["--keys", &keys.to_string(), "--rate", &rate.to_string()])
        .args(["--duration", &total_s.to_string(), "--warmup", "0"])
        .arg("--out")
        .arg(&report)
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let started = Instant::now();
    std::thread::sleep(Duration::from_secs(before_s));
    let repair_at = started.elapsed().as_secs_f64();
    let (v, took) = repair(c.node(2));
    let repair_end = started.elapsed().as_secs_f64();
    summary("2. wiped node rebuilt (node 3 with both peers)", &v, took);
    assert!(load.wait().unwrap().success());
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(report.join("report.json")).unwrap())
            .unwrap();
    let seconds = r["trials"][0]["timeline"].as_array().unwrap();
    let p99 = |from, to| support::p99_per_second(seconds, from, to);
    let (before, before_max, nb) = p99(2.0, repair_at - 1.0);
    let (during, during_max, nd) = p99(repair_at, repair_end);
    let trial = &r["trials"][0];
    println!(
        "   foreground {rate} req/s mixed: per-second p99 before the repair median {before:.2} ms, worst {before_max:.2} ms ({nb} s); during it median {during:.2} ms, worst {during_max:.2} ms ({nd} s); whole run p99 {:.2} ms, errors {}",
        trial["latency"]["p99_ms"].as_f64().unwrap(),
        trial["errors"]
    );
    println!(
        "   node 3 holds {} of {keys} keys after the repair",
        keys_in_tree(&c, 2)
    );

    // 3. 1,000 keys changed behind the cluster's back on node 2.
    c.kill(1);
    let now_ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    let entries: Vec<(Vec<u8>, Vec<u8>, u64)> = {
        // The first 1,000 keys of its store.
        let db = strata_engine::Db::open(&c.dirs[1], strata_engine::Options::default()).unwrap();
        let keys: Vec<Vec<u8>> = db
            .scan(..)
            .unwrap()
            .take(1000)
            .map(|r| r.unwrap().0.to_vec())
            .collect();
        db.close().unwrap();
        keys.into_iter()
            .enumerate()
            .map(|(n, k)| {
                let v = format!("changed-{n:0>92}").into_bytes();
                (k, v, (now_ms - 10_000) << 16)
            })
            .collect()
    };
    support::write_behind_the_back(&c.dirs[1], &entries);
    c.start_node(1);
    for i in 0..3 {
        assert!(c.wait_states(i, &["up"; 3], 30));
    }
    support::trees_ready(&c, 1, 600);
    let (v, took) = repair(c.node(1));
    summary(
        "3. 1,000 keys changed on node 2 (node 2 with both peers)",
        &v,
        took,
    );
}
