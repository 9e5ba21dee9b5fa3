//! Faults during a run, as a user drives them: `strata cluster up
//! --proxied` (or `--netns`) in one process, `strata load URL,URL,URL --fault ... --check`
//! in another, reaching the cluster through its control socket. Every
//! fault kind (clock, kill, restart, pause, partition) is injected into
//! the real nodes; the report must mark each one (when, until when), say
//! when the faulted node was level again and when the successful rate
//! was back, show availability per second, and carry the checker's
//! verdict on a history recorded through the faults. The network cuts
//! need root (network namespaces): without it that test says "not
//! checked" (a failure under `STRATA_REQUIRE_TOOLS=1`).

mod support;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn strata() -> Command {
    Command::new(env!("CARGO_BIN_EXE_strata"))
}

/// `strata cluster up` in the background, and the URLs it printed.
struct Up {
    child: Child,
    urls: Vec<String>,
}

impl Up {
    /// `how`: `--proxied` or `--netns`.
    fn start(dir: &std::path::Path, how: &str) -> Up {
        let mut child = strata()
            .args(["cluster", "up", "--nodes", "3", how, "--base-port", "0"])
            .arg("--data-dir")
            .arg(dir)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let out = BufReader::new(child.stdout.take().unwrap());
        let mut urls = Vec::new();
        let mut lines = out.lines();
        for line in lines.by_ref() {
            let line = line.unwrap();
            eprintln!("up: {line}");
            let w: Vec<&str> = line.split_whitespace().collect();
            if w.len() >= 2 && w[0].starts_with("node-") && w[1].starts_with("http://") {
                urls.push(w[1].to_string());
            }
            if line.starts_with("Faults during a run") {
                break;
            }
        }
        // Keep draining its output so that it never blocks on a full pipe.
        std::thread::spawn(move || for _ in lines {});
        assert_eq!(urls.len(), 3, "cluster up printed {urls:?}");
        Up { child, urls }
    }
}

impl Drop for Up {
    fn drop(&mut self) {
        // SIGTERM: up stops its nodes gracefully and exits.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let end = Instant::now() + Duration::from_secs(30);
        while Instant::now() < end {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `strata load` at 200 req/s for `duration` through `up`'s nodes with
/// `faults` injected through its control socket in `cluster`, the report
/// in `out`: its JSON summary (the run must succeed).
fn load_with_faults(
    up: &Up,
    cluster: &std::path::Path,
    out: &std::path::Path,
    duration: &str,
    checks: &[&str],
    faults: &[&str],
) -> serde_json::Value {
    let mut cmd = strata();
    cmd.args(["load", &up.urls.join(",")])
        .args(["--rate", "200", "--duration", duration, "--keys", "1000"])
        .args(checks)
        .args(["--json", "--quiet", "--cluster-dir"])
        .arg(cluster)
        .arg("--out")
        .arg(out);
    for f in faults {
        cmd.args(["--fault", f]);
    }
    let o = cmd.output().unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    eprintln!("{stderr}");
    assert!(o.status.success(), "load failed: {stderr}");
    serde_json::from_slice(&o.stdout).unwrap()
}

#[test]
fn every_fault_kind_is_injected_marked_and_recovered_from_under_check() {
    let dir = tempfile::tempdir().unwrap();
    let cluster = dir.path().join("cluster");
    let up = Up::start(&cluster, "--proxied");
    let out = dir.path().join("report");
    let faults = [
        "clock:3+2s",
        "kill:2@2s",
        "restart:2@4s",
        "pause:1@6s+1s",
        "partition:3@8s+1500ms",
    ];
    let r = load_with_faults(&up, &cluster, &out, "16s", &["--check"], &faults);

    // Every fault marked, in order, each undone during the run.
    let marks = r["faults"].as_array().expect("faults in the report");
    assert_eq!(marks.len(), faults.len(), "{marks:#?}");
    for (m, spec) in marks.iter().zip(faults) {
        assert_eq!(m["spec"], spec);
        assert!(m.get("error").is_none(), "{m}");
        let (at, until) = (m["at_s"].as_f64().unwrap(), m["until_s"].as_f64());
        let until = until.unwrap_or_else(|| panic!("{spec} was not undone during the run: {m}"));
        assert!(until >= at, "{m}");
    }
    let at = |k: usize| marks[k]["at_s"].as_f64().unwrap();
    // On time (never early; a loaded machine may be a little late).
    for (k, want) in [(1, 2.0), (2, 4.0), (3, 6.0), (4, 8.0)] {
        assert!(at(k) >= want && at(k) < want + 3.0, "{}", marks[k]);
    }
    // The kill lasted until the restart; the pause and the partition their
    // hold.
    assert!(marks[1]["until_s"].as_f64().unwrap() >= 4.0);
    assert!(marks[3]["until_s"].as_f64().unwrap() - at(3) >= 1.0);
    assert!(marks[4]["until_s"].as_f64().unwrap() - at(4) >= 1.5);
    // Node 2 missed writes while it was down: it became level again (the
    // hints were delivered), and so did the paused and partitioned nodes.
    for k in [1, 3, 4] {
        assert!(
            marks[k]["level_after_s"].as_f64().is_some(),
            "no level time: {}",
            marks[k]
        );
    }
    // The successful rate came back after each fault before the run ended.
    let seconds: Vec<String> = r["trials"][0]["timeline"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|s| {
            format!(
                "{:.1}s:{}-{}",
                s["t_s"].as_f64().unwrap_or(0.0),
                s["requests"],
                s["errors"]
            )
        })
        .collect();
    for (k, m) in marks.iter().enumerate().skip(1) {
        assert!(
            m["recovered_after_s"].as_f64().is_some(),
            "fault {k} never recovered: {m}; the seconds (requests-errors): {}",
            seconds.join(" ")
        );
    }
    // Availability per second: the timeline has every second, with the
    // errors the faults caused (if any) counted.
    let t = &r["trials"][0];
    let timeline = t["timeline"].as_array().unwrap();
    assert!(timeline.len() >= 15, "{}", timeline.len());
    let per_node = timeline[0]["per_node"]
        .as_array()
        .expect("per-node seconds");
    assert_eq!(per_node.len(), 3);
    // The checker's clients ran through every fault and found nothing.
    let c = &r["check"];
    assert_eq!(c["passed"], true, "{}", c["text"]);
    assert!(c["writes_acknowledged"].as_u64().unwrap() > 100, "{c}");
    assert_eq!(c["lost"], 0);
    assert_eq!(c["stale"], 0);
    assert_eq!(c["impossible"], 0);
    // And the report on disk says the same.
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.contains("kill:2@2s"));
    drop(up);
}

/// Cuts in the network during a load (root, iproute2, nftables): `cluster
/// up --netns`, then node 3 isolated, node 2's outbound packets dropped,
/// node 1 cut from its peers, one after the other. Each is marked and
/// mended during the run, the cut node's requests fail while it is
/// isolated, it is level again after, and the checker's clients (shared
/// keys too) find nothing lost, stale or non-linearizable.
#[test]
fn network_cuts_during_a_load_are_marked_mended_and_checked() {
    if !support::require("root, for network namespaces", support::is_root()) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let cluster = dir.path().join("cluster");
    let up = Up::start(&cluster, "--netns");
    let faults = [
        "isolate:3@2s+2s",
        "oneway:2@6s+1500ms",
        "internal:1@9s+1500ms",
    ];
    let out = dir.path().join("report");
    let checks = ["--check", "--linearizable"];
    let r = load_with_faults(&up, &cluster, &out, "13s", &checks, &faults);
    let marks = r["faults"].as_array().expect("faults in the report");
    assert_eq!(marks.len(), faults.len(), "{marks:#?}");
    for (m, spec) in marks.iter().zip(faults) {
        assert_eq!(m["spec"], spec);
        assert_eq!(m["kind"], spec.split(':').next().unwrap());
        assert!(m.get("error").is_none(), "{m}");
        let until = m["until_s"]
            .as_f64()
            .unwrap_or_else(|| panic!("{spec} not mended: {m}"));
        assert!(until - m["at_s"].as_f64().unwrap() >= 1.5, "{m}");
        assert!(m["level_after_s"].as_f64().is_some(), "never level: {m}");
    }
    // While node 3 was cut off, the requests sent to it failed: the cut
    // was in the network, not in the lab's bookkeeping.
    let timeline = r["trials"][0]["timeline"].as_array().unwrap();
    for s in timeline {
        let errs: Vec<String> = s["per_node"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| format!("{}/{}", n["errors"], n["requests"]))
            .collect();
        eprintln!(
            "{:>5.1} s: failed/sent per node {}",
            s["t_s"].as_f64().unwrap(),
            errs.join(" ")
        );
    }
    // Node 3's answered requests a second (its entry is absent in a
    // second it was sent none: the client routed around it).
    let served_by_3 = |from: f64, to: f64| -> f64 {
        let secs: Vec<f64> = timeline
            .iter()
            .filter(|s| (from..to).contains(&s["t_s"].as_f64().unwrap_or(-1.0)))
            .map(|s| {
                let n = &s["per_node"][2];
                n["requests"].as_f64().unwrap_or(0.0) - n["errors"].as_f64().unwrap_or(0.0)
            })
            .collect();
        secs.iter().sum::<f64>() / secs.len().max(1) as f64
    };
    let (before, during) = (served_by_3(0.0, 2.0), served_by_3(2.5, 4.0));
    assert!(
        before > 20.0 && during < before / 4.0,
        "node 3 served {before:.0}/s before its cut and {during:.0}/s while isolated"
    );
    let c = &r["check"];
    assert_eq!(c["passed"], true, "{}", c["text"]);
    assert_eq!(c["lost"], 0);
    assert_eq!(c["stale"], 0);
    drop(up);
}

#[test]
fn faults_need_the_cluster_the_lab_started() {
    let dir = tempfile::tempdir().unwrap();
    let o = strata()
        .args(["load", "http://127.0.0.1:9", "--duration", "1s", "--quiet"])
        .args(["--fault", "kill:1@1s", "--cluster-dir"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(!o.status.success());
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(
        e.contains("control.sock") && e.contains("strata cluster up"),
        "{e}"
    );
    let o = strata()
        .args(["load", "http://127.0.0.1:9", "--fault", "kill:1"])
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("expected KIND:NODE"));
}
