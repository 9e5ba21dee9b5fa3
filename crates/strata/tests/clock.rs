//! A clock that jumps on a running node (issue 29): three real nodes started
//! with `--test-clock-hook`, and `POST /debug/clock?jump_ms=N` moving one
//! node's wall clock (the one behind versions) forward and back by minutes
//! while a client writes the same keys through every node in turn, each
//! write started after the last one was answered. Every write must be
//! acknowledged, and every read must return the last acknowledged write:
//! a clock five minutes ahead (past the 60 s its peers follow) or behind
//! must neither lose a later write to an earlier one nor make keys
//! unwritable.

mod support;

use support::{ClusterProcs, NodeProc};

fn put(n: &NodeProc, k: &str, v: &str) -> (u16, String) {
    let r = n.request("PUT", &format!("/v0/entity?id={k}"), v.as_bytes());
    (r.status, String::from_utf8_lossy(&r.body).into_owned())
}

fn get(n: &NodeProc, k: &str) -> (u16, String) {
    let r = n.request("GET", &format!("/v0/entity?id={k}"), b"");
    (r.status, String::from_utf8_lossy(&r.body).into_owned())
}

fn jump(n: &NodeProc, ms: i64) -> serde_json::Value {
    let r = n.operate("POST", &format!("/debug/clock?jump_ms={ms}"), b"");
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    serde_json::from_slice(&r.body).unwrap()
}

fn metric(n: &NodeProc, name: &str) -> f64 {
    let r = n.request("GET", "/metrics", b"");
    let text = String::from_utf8_lossy(&r.body).into_owned();
    text.lines()
        .filter(|l| l.starts_with(name))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

/// Rounds of writes over `keys`, round `r` through node `r % 3` and read
/// back through node `(r + 1) % 3`; every fourth round of a key deletes it.
fn rounds(c: &ClusterProcs, phase: &str, keys: usize, n: usize) {
    for r in 0..n {
        let (w, rd) = (c.node(r % 3), c.node((r + 1) % 3));
        for k in 0..keys {
            let key = format!("clock-{k}");
            if r % 4 == 3 {
                let resp = w.request("DELETE", &format!("/v0/entity?id={key}"), b"");
                assert!(
                    resp.status == 202,
                    "{phase}: delete of {key} through node {}: {} {}",
                    r % 3,
                    resp.status,
                    String::from_utf8_lossy(&resp.body)
                );
                let (st, body) = get(rd, &key);
                assert_eq!(st, 404, "{phase}: {key} read back after its delete: {body}");
            } else {
                let v = format!("{phase}-r{r}");
                let (st, body) = put(w, &key, &v);
                assert_eq!(st, 201, "{phase}: {key}={v} through node {}: {body}", r % 3);
                let (st, got) = get(rd, &key);
                assert_eq!(
                    (st, got.as_str()),
                    (200, v.as_str()),
                    "{phase}: {key} read through node {} after {v} was acknowledged",
                    (r + 1) % 3
                );
            }
        }
    }
}

#[test]
fn a_clock_jumping_on_a_running_node_loses_no_write() {
    let c = ClusterProcs::start(3, &["--test-clock-hook"]);
    rounds(&c, "steady", 8, 4);

    // Five minutes ahead: its peers follow its stamps only 60 s, so a later
    // write through them must be stamped past the key's version anyway.
    let said = jump(c.node(0), 300_000);
    assert_eq!(said["offset_ms"], 300_000, "{said}");
    rounds(&c, "ahead", 8, 6);
    let clamped: f64 = (1..3)
        .map(|i| metric(c.node(i), "strata_cluster_clock_clamped_total"))
        .sum();
    assert!(
        clamped > 0.0,
        "the peers never saw a stamp past their bound"
    );
    // A write through them found the future version (its first phase, or
    // a replica holding it) and was stamped past it.
    let past: f64 = (1..3)
        .map(|i| {
            metric(c.node(i), "strata_cluster_stamped_past_newer_total")
                + metric(c.node(i), "strata_cluster_superseded_retries_total")
        })
        .sum();
    assert!(
        past > 0.0,
        "no write through the peers met the future version"
    );

    // Back past the true time, to five minutes behind, and a second node a
    // minute ahead.
    let said = jump(c.node(0), -600_000);
    assert_eq!(said["offset_ms"], -300_000, "{said}");
    jump(c.node(1), 60_000);
    rounds(&c, "behind", 8, 6);

    // Every clock right again.
    jump(c.node(0), 300_000);
    jump(c.node(1), -60_000);
    rounds(&c, "restored", 8, 4);
}

#[test]
fn the_clock_hook_is_off_unless_asked_for_and_operators_only() {
    let dir = tempfile::tempdir().unwrap();
    let plain = NodeProc::start(dir.path(), &[]);
    let r = plain.request("POST", "/debug/clock?jump_ms=1000", b"");
    assert_eq!(r.status, 404, "{}", String::from_utf8_lossy(&r.body));
    assert!(String::from_utf8_lossy(&r.body).contains("--test-clock-hook"));
    let r = plain.request("GET", "/debug/clock", b"");
    assert_eq!(r.status, 200);
    let v: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
    assert_eq!(v["offset_ms"], 0, "{v}");

    let c = ClusterProcs::start(3, &["--test-clock-hook"]);
    // Anonymous: refused, and the clock did not move.
    let r = c.node(0).request("POST", "/debug/clock?jump_ms=1000", b"");
    assert_eq!(r.status, 401, "{}", String::from_utf8_lossy(&r.body));
    let r = c.node(0).operate("GET", "/debug/clock", b"");
    let v: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
    assert_eq!(v["offset_ms"], 0, "{v}");
    for bad in [
        "jump_ms=x",
        "jump_ms=1&offset_ms=2",
        "",
        "offset_ms=90000000000",
    ] {
        let r = c
            .node(0)
            .operate("POST", &format!("/debug/clock?{bad}"), b"");
        assert_eq!(r.status, 400, "{bad}: {}", String::from_utf8_lossy(&r.body));
    }
    let r = c
        .node(0)
        .operate("POST", "/debug/clock?offset_ms=-2500", b"");
    assert_eq!(r.status, 200);
    let v: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
    assert_eq!(v["offset_ms"], -2500, "{v}");
}
