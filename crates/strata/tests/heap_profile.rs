//! The heap profile endpoint and its flame graph command, against a real
//! node. In the default build (mimalloc) the endpoint answers 501 saying
//! how to get a binary that can; built with `--features heap-profile`
//! (`.ci/run` runs this file that way too) it answers jemalloc's profile,
//! and `strata report heap` draws it with our own function names and shows
//! what grew between two profiles.

mod support;

use support::NodeProc;

/// `strata report heap ARGS... --out OUT`.
fn report_heap(args: &[&str], out: &std::path::Path) -> (bool, String) {
    support::run_strata(&[&["report", "heap"], args, &["--out", out.to_str().unwrap()]].concat())
}

#[cfg(not(feature = "heap-profile"))]
#[test]
fn without_the_feature_the_endpoint_says_how_to_get_one() {
    let tmp = tempfile::tempdir().unwrap();
    let node = NodeProc::start(tmp.path(), &[]);
    let r = node.request("GET", "/debug/pprof/heap", b"");
    assert_eq!(r.status, 501);
    let body = String::from_utf8_lossy(&r.body);
    assert!(body.contains("--features heap-profile"), "{body}");
    let url = format!("http://{}", node.addr);
    let (ok, out) = report_heap(&[&url], &tmp.path().join("h.svg"));
    assert!(!ok);
    assert!(
        out.contains("501") && out.contains("--features heap-profile"),
        "{out}"
    );
}

#[cfg(feature = "heap-profile")]
#[test]
fn a_heap_profile_draws_our_allocations_and_what_grew() {
    let tmp = tempfile::tempdir().unwrap();
    // A large memtable: what is written stays in memory until the test
    // ends, so the second profile holds more of it than the first.
    let node = NodeProc::start(
        &tmp.path().join("data"),
        &["--durability", "none", "--memtable-bytes", "268435456"],
    );
    let url = format!("http://{}", node.addr);
    let write = |from: usize, n: usize| {
        let value = vec![b'v'; 4096];
        let mut s = node.connect();
        for i in from..from + n {
            support::send(&mut s, "PUT", &format!("/v0/entity?id=k{i:08}"), &value);
            let r = support::read_response(&mut s);
            assert_eq!(r.status, 201);
        }
    };
    write(0, 1000);
    let base = tmp.path().join("base.pb.gz");
    let svg = tmp.path().join("heap.svg");
    let (ok, out) = report_heap(&[&url, "--save", base.to_str().unwrap()], &svg);
    assert!(ok, "{out}");
    assert!(out.contains("In use: "), "{out}");
    // The memtable's arena is among the sites, by our own function names.
    assert!(out.contains("strata_engine::skiplist"), "{out}");
    let drawn = std::fs::read_to_string(&svg).unwrap();
    assert!(
        drawn.starts_with("<?xml") && drawn.contains("strata_engine"),
        "not a flame graph of our code"
    );
    // The saved profile is the endpoint's: a gzipped protobuf.
    assert!(std::fs::read(&base).unwrap().starts_with(&[0x1f, 0x8b]));

    // Profiling itself leaves nothing behind: a second profile, with
    // nothing written in between, has not grown by a MiB.
    let (ok, out) = report_heap(&[&url, "--base", base.to_str().unwrap()], &svg);
    let grew = |out: &str| -> f64 {
        let after = out.split("grew ").nth(1).unwrap_or_else(|| panic!("{out}"));
        let (n, unit) = after.split_once(' ').unwrap();
        let n: f64 = n.parse().unwrap();
        match &unit[..3] {
            "MiB" => n,
            "KiB" => n / 1024.0,
            _ => n / (1 << 20) as f64,
        }
    };
    assert!(ok, "{out}");
    assert!(grew(&out) < 1.0, "{out}");

    // 40 MiB more in the memtable: the growth graph shows it, and only
    // what grew.
    write(1000, 10_000);
    let grown = tmp.path().join("growth.svg");
    let (ok, out) = report_heap(&[&url, "--base", base.to_str().unwrap()], &grown);
    assert!(ok, "{out}");
    assert!(grew(&out) >= 20.0, "40 MiB written: {out}");
    let first = out.lines().nth(2).unwrap_or("");
    assert!(
        first.contains("strata_engine::skiplist"),
        "the top site of the growth: {out}"
    );
}
