//! `strata load` over several nodes: two separate `strata serve` processes
//! given as one comma-separated list both receive requests, the report
//! counts each node's share (and the counts agree with the nodes' own
//! `/metrics`), and a bad URL in the list is refused with a clear error.
//! Behaviour only: which node a connection picks is seeded, so the same
//! command spreads the same way every time, and no timing is asserted.

mod support;

use std::process::Command;

use support::NodeProc;

fn strata(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_strata"))
        .args(args)
        .output()
        .expect("run strata");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `strata load` at 200 req/s for 1.5 s over 16 connections against the
/// nodes in `list`, its report in `dir`.
fn load(list: &str, dir: &std::path::Path, more: &[&str]) -> (bool, String, String) {
    let mut args = vec![
        "load",
        list,
        "--rate",
        "200",
        "--duration",
        "1.5",
        "--connections",
        "16",
        "--keys",
        "1000",
        "--quiet",
        "--out",
        dir.to_str().unwrap(),
    ];
    args.extend_from_slice(more);
    strata(&args)
}

/// The node's count of PUTs answered 201, from its `/metrics`.
fn puts_created(node: &NodeProc) -> u64 {
    let m = String::from_utf8(node.request("GET", "/metrics", b"").body).unwrap();
    m.lines()
        .find(|l| l.starts_with("strata_http_requests_total{method=\"PUT\",status=\"201\"}"))
        .and_then(|l| l.rsplit(' ').next())
        .map(|v| v.parse::<f64>().unwrap() as u64)
        .unwrap_or(0)
}

#[test]
fn a_load_over_two_nodes_reaches_both_and_reports_each() {
    let (d1, d2) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let a = NodeProc::start(d1.path(), &["--durability", "none"]);
    let b = NodeProc::start(d2.path(), &["--durability", "none"]);
    let (ua, ub) = (format!("http://{}", a.addr), format!("http://{}", b.addr));
    let out = tempfile::tempdir().unwrap();
    let dir = out.path().join("rep");
    let list = format!("{ua},{ub}");
    let (ok, stdout, stderr) = load(&list, &dir, &[]);
    assert!(ok, "{stdout}{stderr}");
    assert!(stdout.contains("300 requests in"), "{stdout}");
    // The printed summary names both nodes.
    assert!(stdout.contains("Per node"), "{stdout}");
    assert!(stdout.contains(&ua) && stdout.contains(&ub), "{stdout}");

    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("report.json")).unwrap()).unwrap();
    assert_eq!(report["target"], list.as_str());
    let per_node = report["trials"][0]["per_node"].as_array().unwrap();
    assert_eq!(per_node.len(), 2, "{per_node:?}");
    let urls: Vec<&str> = per_node
        .iter()
        .map(|n| n["url"].as_str().unwrap())
        .collect();
    assert_eq!(urls, vec![ua.as_str(), ub.as_str()]);
    let requests: Vec<u64> = per_node
        .iter()
        .map(|n| n["requests"].as_u64().unwrap())
        .collect();
    let connections: u64 = per_node
        .iter()
        .map(|n| n["connections"].as_u64().unwrap())
        .sum();
    assert_eq!(connections, 16);
    assert_eq!(requests.iter().sum::<u64>(), 300, "{requests:?}");
    assert!(
        requests.iter().all(|&r| r > 0),
        "both got requests: {requests:?}"
    );
    // What the report counted is what each node served.
    assert_eq!(puts_created(&a), requests[0]);
    assert_eq!(puts_created(&b), requests[1]);

    // The report's Markdown and HTML name both nodes in a per-node table.
    let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(md.contains("## Per node"), "{md}");
    assert!(md.contains(&ua) && md.contains(&ub), "{md}");
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    assert!(html.contains("<h2>Per node</h2>"));
    assert!(html.contains(&ua) && html.contains(&ub));
    // Each node's /metrics before and after the run are kept.
    assert!(dir.join("metrics-start.txt").is_file());
    assert!(dir.join("metrics-start.node2.txt").is_file());

    // The same seed spreads the same way: a second run against the same
    // nodes adds the same counts to each.
    let (ok, stdout, stderr) = load(&list, &out.path().join("rep2"), &["--json"]);
    assert!(ok, "{stdout}{stderr}");
    let again: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let conns = |r: &serde_json::Value| -> Vec<u64> {
        r["trials"][0]["per_node"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| n["connections"].as_u64().unwrap())
            .collect()
    };
    assert_eq!(conns(&again), conns(&report));
}

#[test]
fn a_bad_url_in_the_list_is_refused_by_name() {
    let (ok, stdout, stderr) = strata(&[
        "load",
        "http://127.0.0.1:1,ftp://127.0.0.1:2",
        "--duration",
        "1",
    ]);
    assert!(!ok, "{stdout}");
    assert!(
        stderr.contains("node URL 2 of 2: ftp://127.0.0.1:2: only http://")
            && stderr.matches("ftp://127.0.0.1:2").count() == 1,
        "{stderr}"
    );
    let (ok, _, stderr) = strata(&["sweep", "http://127.0.0.1:1,,http://127.0.0.1:2"]);
    assert!(!ok);
    assert!(stderr.contains("node URL 2 of 3 is empty"), "{stderr}");
}
