//! USDT probes: the binary carries the `strata` provider's probes as
//! SystemTap SDT notes, and the bpftrace scripts of scripts/probes count
//! them on a live node (bpftrace: `scripts/test` installs it; attaching
//! needs root, without which that test says "not checked", a failure
//! under `STRATA_REQUIRE_TOOLS=1`).

mod support;

use std::io::{BufRead, BufReader, Read};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use support::NodeProc;

const PROBES: [&str; 10] = [
    "request-start",
    "request-block",
    "request-nonblock",
    "request-done",
    "persist-start",
    "persist-done",
    "flush-start",
    "flush-done",
    "compaction-start",
    "compaction-done",
];

#[test]
fn binary_carries_every_probe() {
    let out = Command::new("readelf")
        .args(["-n", env!("CARGO_BIN_EXE_strata")])
        .output()
        .expect("readelf (binutils) is needed");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("stapsdt"), "no SDT notes");
    for p in PROBES {
        assert!(
            text.lines().any(|l| l.trim() == format!("Name: {p}")),
            "probe {p} missing"
        );
    }
    assert!(text.contains("Provider: strata"));
}

#[test]
fn bpftrace_counts_probes_of_a_live_node() {
    if !support::require("root, to attach bpftrace", support::is_root()) {
        return;
    }
    assert!(
        Command::new("bpftrace").arg("--version").output().is_ok(),
        "bpftrace is missing; scripts/test installs it (apt-get install bpftrace)"
    );
    let data = tempfile::tempdir().unwrap();
    let node = NodeProc::start(data.path(), &[]);
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../../scripts/probes/run.sh");
    let mut bt = Command::new(script)
        .args(["count.bt", &node.child.id().to_string(), "8"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // bpftrace prints "Attaching N probes..." once attached, then the maps.
    let stdout = bt.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let reader = std::thread::spawn(move || {
        let mut all = String::new();
        for l in BufReader::new(stdout).lines().map_while(Result::ok) {
            if l.starts_with("Attaching") {
                let _ = tx.send(());
            }
            all.push_str(&l);
            all.push('\n');
        }
        all
    });
    let mut stderr = bt.stderr.take().unwrap();
    std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stderr.read_to_string(&mut s);
    });
    rx.recv_timeout(Duration::from_secs(30))
        .expect("bpftrace did not attach");
    std::thread::sleep(Duration::from_millis(300));
    let start = Instant::now();
    for i in 0..20 {
        assert_eq!(
            node.request("PUT", &format!("/v0/entity?id=p{i}"), b"v")
                .status,
            201
        );
    }
    for i in 0..10 {
        assert_eq!(
            node.request("GET", &format!("/v0/entity?id=p{i}"), b"")
                .status,
            200
        );
    }
    // A precondition, not a speed test: every request must fall inside
    // bpftrace's 8 s counting interval.
    assert!(
        start.elapsed() < Duration::from_secs(6),
        "requests outlasted the counting interval"
    );
    let out = reader.join().unwrap();
    bt.wait().unwrap();
    let count = |p: &str| -> u64 {
        out.lines()
            .find(|l| l.starts_with(&format!("@count[{p}]:")))
            .and_then(|l| l.rsplit(' ').next()?.parse().ok())
            .unwrap_or(0)
    };
    assert_eq!(count("request-start"), 30, "{out}");
    assert_eq!(count("request-done"), 30, "{out}");
    assert_eq!(count("request-nonblock"), 30, "{out}");
    assert_eq!(count("persist-start"), 20, "{out}");
    assert_eq!(count("persist-done"), 20, "{out}");
}
