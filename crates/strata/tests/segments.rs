//! One run cut over several generators (`strata load --segment I/N
//! --start-at T`, k6's execution segments): three `strata load` processes
//! against a real node send, together, the one run's schedule, write every
//! new key exactly once, start at the instant given, and `strata report
//! merge` reads their interval logs back as the whole run, naming a share
//! that is missing.

mod support;

use std::collections::BTreeSet;
use std::process::{Command, Output};
use std::time::{Duration, SystemTime};

use support::NodeProc;

fn json(o: &Output) -> serde_json::Value {
    let text = String::from_utf8_lossy(&o.stdout);
    serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("{e}: {text}{}", String::from_utf8_lossy(&o.stderr)))
}

#[test]
fn three_shares_send_the_whole_run_and_insert_every_key_once() {
    let data = tempfile::tempdir().unwrap();
    let node = NodeProc::start(data.path(), &["--durability", "none"]);
    let url = format!("http://{}", node.addr);
    let dir = tempfile::tempdir().unwrap();
    // Inserts only: new keys from index 10 on, one per send.
    let workload = dir.path().join("insert.toml");
    std::fs::write(
        &workload,
        "name = \"insert\"\nkeys = 10\npreload = false\n[mix]\ninsert = 1.0\n\
         [value]\nsize = \"fixed\"\nbytes = 10\n",
    )
    .unwrap();
    // The whole run: 600 req/s for 2 s, cut in three, all starting at one
    // instant a few seconds from now (each process waits for it).
    let at = SystemTime::now() + Duration::from_secs(4);
    let at = format!(
        "@{:.3}",
        at.duration_since(SystemTime::UNIX_EPOCH)
            .unwrap()
            .as_secs_f64()
    );
    let shares: Vec<_> = (1..=3)
        .map(|i| {
            let hlog = dir.path().join(format!("share-{i}.hlog"));
            let child = Command::new(env!("CARGO_BIN_EXE_strata"))
                .args([
                    "load",
                    &url,
                    "--workload",
                    workload.to_str().unwrap(),
                    "--rate",
                    "600",
                    "--duration",
                    "2",
                    "--connections",
                    "6",
                    "--segment",
                    &format!("{i}/3"),
                    "--start-at",
                    &at,
                    "--hdr",
                    hlog.to_str().unwrap(),
                    "--out",
                    dir.path().join(format!("rep-{i}")).to_str().unwrap(),
                    "--json",
                ])
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap();
            (hlog, child)
        })
        .collect();
    let mut logs = Vec::new();
    let mut total = 0;
    for (i, (hlog, child)) in shares.into_iter().enumerate() {
        let o = child.wait_with_output().unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let r = json(&o);
        let t = &r["trials"][0];
        // Each share sends its third of the schedule's 1,200 slots.
        assert_eq!(t["requests"].as_u64(), Some(400), "share {}: {t}", i + 1);
        assert_eq!(t["errors"].as_u64(), Some(0), "{t}");
        assert_eq!(
            t["offered_rate"].as_f64(),
            Some(600.0),
            "the whole run's rate"
        );
        assert_eq!(r["share"]["segment"], format!("{}/3", i + 1));
        // Each waited for the instant: none started late.
        assert_eq!(r["share"]["late_ms"].as_f64(), Some(0.0), "{}", r["share"]);
        assert!(
            r["workload"]
                .as_str()
                .unwrap()
                .contains(&format!("segment {}/3", i + 1)),
            "{}",
            r["workload"]
        );
        total += t["requests"].as_u64().unwrap();
        logs.push(hlog);
    }
    assert_eq!(total, 1200);

    // Every new key exactly once: the node holds keys 10..1210 and no other.
    let r = node.request("GET", "/v0/entities?start=0", b"");
    assert_eq!(r.status, 200);
    let body = String::from_utf8_lossy(&r.body);
    let keys: BTreeSet<u64> = body
        .split(|c: char| !c.is_ascii_digit())
        .filter(|w| w.len() == 16)
        .map(|w| w.parse().unwrap())
        .collect();
    let want: BTreeSet<u64> = (10..1210).collect();
    assert_eq!(
        keys.len(),
        1200,
        "keys written more than once or not at all"
    );
    assert_eq!(keys, want);

    // The merge says it holds every share, started together.
    let merge = |files: &[std::path::PathBuf]| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_strata"));
        c.args(["report", "merge", "--json"]).args(files);
        c.output().unwrap()
    };
    let m = json(&merge(&logs));
    assert_eq!(m["total"]["count"].as_u64(), Some(1200), "{m}");
    assert_eq!(m["shares"]["count"].as_u64(), Some(3), "{m}");
    assert_eq!(m["shares"]["missing"], serde_json::json!([]), "{m}");
    assert_eq!(m["start_spread_ms"].as_f64(), Some(0.0), "{m}");
    // Two of three: the missing one is named, in the text too.
    let m = json(&merge(&logs[..2]));
    assert_eq!(m["shares"]["missing"], serde_json::json!([3]), "{m}");
    let text = Command::new(env!("CARGO_BIN_EXE_strata"))
        .args(["report", "merge"])
        .args(&logs[1..])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("MISSING 1/3"), "{text}");
}

#[test]
fn a_share_that_reaches_its_start_late_says_by_how_much() {
    let data = tempfile::tempdir().unwrap();
    let node = NodeProc::start(data.path(), &["--durability", "none"]);
    let url = format!("http://{}", node.addr);
    let out = tempfile::tempdir().unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_strata"))
        .args([
            "load",
            &url,
            "--rate",
            "100",
            "--duration",
            "1",
            "--keys",
            "100",
            "--segment-index",
            "1",
            "--segments",
            "2",
            "--start-at",
            "2020-01-01T00:00:00Z",
            "--out",
            out.path().join("rep").to_str().unwrap(),
            "--json",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let r = json(&o);
    assert_eq!(r["share"]["segment"], "2/2");
    assert_eq!(r["share"]["start_at"], "2020-01-01T00:00:00.000Z");
    let late = r["share"]["late_ms"].as_f64().unwrap();
    assert!(late > 1e11, "years late: {late} ms");
    assert_eq!(r["trials"][0]["requests"].as_u64(), Some(50));

    // Shares out of range are refused before anything is sent.
    for bad in [
        &["--segment", "3/2"][..],
        &["--segment", "0/2"],
        &["--segment-index", "2", "--segments", "2"],
        &["--segment-index", "0"],
        &["--start-at", "tomorrow"],
    ] {
        let o = Command::new(env!("CARGO_BIN_EXE_strata"))
            .args(["load", &url, "--rate", "10", "--duration", "1"])
            .args(bad)
            .output()
            .unwrap();
        assert!(!o.status.success(), "{bad:?} accepted");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.contains("segment") || err.contains("start") || err.contains("I/N"),
            "{bad:?}: {err}"
        );
    }
}
