//! Anti-entropy on real processes: three nodes, their Merkle trees
//! compared over the internal protocol, only what differs moved.
//!
//! - A node whose data directory was wiped is rebuilt by `strata cluster
//!   repair` from its peers: every key back in its own store, nothing
//!   sent that was already there, and an exchange of equal trees costs a
//!   few hundred bytes.
//! - Keys changed on one replica behind the cluster's back (written into
//!   its store directly while it was stopped, some newer, some older than
//!   the cluster's) are found and repaired both ways, and nothing else is
//!   sent.
//! - On a schedule, with no command: a wiped node comes back level, and
//!   `GET /v0/cluster` says when each range was last in sync.

mod support;

use std::process::Command;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use support::{ClusterProcs, NodeProc};

const KEY_LEN: usize = 8;
const VALUE_LEN: usize = 12;

fn key(i: usize) -> String {
    format!("ae{i:06}")
}

fn value(tag: &str, i: usize) -> String {
    format!("{tag}{i:08}")
}

fn put_all(n: &NodeProc, keys: usize) {
    for i in 0..keys {
        let r = n.request(
            "PUT",
            &format!("/v0/entity?id={}&ack=3&from=3", key(i)),
            value("orig", i).as_bytes(),
        );
        assert_eq!(r.status, 201, "{}", String::from_utf8_lossy(&r.body));
    }
}

/// Node `n`'s own store of `ae…` keys: (key, value), in key order.
fn own(n: &NodeProc) -> Vec<(String, String)> {
    let r = n.request("GET", "/v0/entities?start=ae&end=af", b"");
    assert_eq!(r.status, 200);
    let entry = KEY_LEN + 1 + VALUE_LEN;
    assert_eq!(r.body.len() % entry, 0, "entries of fixed size");
    r.body
        .chunks(entry)
        .map(|e| {
            let s = String::from_utf8_lossy(e);
            (s[..KEY_LEN].to_string(), s[KEY_LEN + 1..].to_string())
        })
        .collect()
}

fn repair(n: &NodeProc) -> serde_json::Value {
    let r = n.operate("POST", "/v0/cluster/repair", b"");
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    serde_json::from_slice(&r.body).unwrap()
}

fn sum(v: &serde_json::Value, field: &str) -> u64 {
    v["exchanges"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x[field].as_u64().unwrap())
        .sum()
}

fn no_errors(v: &serde_json::Value) {
    for x in v["exchanges"].as_array().unwrap() {
        assert!(x["error"].is_null(), "{x:#}");
    }
}

/// Wipe node `i`'s data directory and start it again; `on_demand`: the
/// cluster exchanges only when asked, so the node is still empty when
/// every member sees it up (on a schedule of a second, a peer may have
/// levelled it by then).
fn wipe_and_restart(c: &mut ClusterProcs, i: usize, on_demand: bool) {
    c.kill(i);
    std::fs::remove_dir_all(&c.dirs[i]).unwrap();
    c.start_node(i);
    let up = vec!["up"; c.urls.len()];
    for j in 0..c.urls.len() {
        assert!(c.wait_states(j, &up, 10));
    }
    if on_demand {
        assert!(own(c.node(i)).is_empty(), "the wiped node starts empty");
    }
}

const ON_DEMAND: [&str; 4] = [
    "--anti-entropy-interval-s",
    "0",
    "--anti-entropy-settle-ms",
    "0",
];

#[test]
fn a_wiped_node_is_rebuilt_by_repair_and_nothing_else_moves() {
    let n = 2000;
    let mut c = ClusterProcs::start(3, &ON_DEMAND);
    put_all(c.node(0), n);
    for i in 0..3 {
        support::trees_ready(&c, i, 30);
    }
    // Nothing differs: roots only, a few hundred bytes, nothing moved.
    let same = repair(c.node(0));
    no_errors(&same);
    let xs = same["exchanges"].as_array().unwrap();
    assert_eq!(xs.len(), 2, "{same:#}");
    assert!(xs.iter().all(|x| x["roots_equal"] == true), "{same:#}");
    let bytes = sum(&same, "bytes_sent") + sum(&same, "bytes_received");
    assert!(bytes < 1024, "{bytes} bytes to find nothing differs");
    assert_eq!(sum(&same, "pulled") + sum(&same, "pushed"), 0);

    wipe_and_restart(&mut c, 2, true);
    support::trees_ready(&c, 2, 30);
    let rebuilt = repair(c.node(2));
    no_errors(&rebuilt);
    // Everything came from the first peer asked; the second had nothing
    // new to give; nothing was sent that was already there.
    assert_eq!(sum(&rebuilt, "pulled"), n as u64, "{rebuilt:#}");
    assert_eq!(sum(&rebuilt, "pushed"), 0, "{rebuilt:#}");
    assert_eq!(sum(&rebuilt, "already_there"), 0, "{rebuilt:#}");
    let held = own(c.node(2));
    assert_eq!(held.len(), n);
    for (i, (k, v)) in held.iter().enumerate() {
        assert_eq!(
            (k.as_str(), v.as_str()),
            (key(i).as_str(), value("orig", i).as_str())
        );
    }
    // And the trees agree again.
    let after = repair(c.node(2));
    assert!(
        after["exchanges"]
            .as_array()
            .unwrap()
            .iter()
            .all(|x| x["roots_equal"] == true),
        "{after:#}"
    );
    // The table the command prints.
    let out = support::strata_operator()
        .args(["cluster", "repair", &c.urls[2], "--all"])
        .output()
        .unwrap();
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{table}");
    assert_eq!(table.lines().count(), 1 + 3 * 2, "{table}");
    assert!(
        table.lines().skip(1).all(|l| l.contains(" same ")),
        "{table}"
    );
}

#[test]
fn keys_changed_behind_the_clusters_back_are_found_and_only_they_move() {
    let n = 3000;
    let mut c = ClusterProcs::start(3, &ON_DEMAND);
    put_all(c.node(0), n);
    // On node 1, 40 keys get a newer version than the cluster's and 40 an
    // older one (the cluster's must win back).
    c.kill(1);
    let now_ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    let newer: Vec<usize> = (0..40).map(|j| 7 + j * 70).collect();
    let older: Vec<usize> = (0..40).map(|j| 11 + j * 70).collect();
    let mut entries = Vec::new();
    for &i in &newer {
        // Newer than the cluster's (written before the kill), and not in
        // the future: anti-entropy leaves records from a clock ahead alone
        // until their time has come (they may be in flight).
        entries.push((
            key(i).into_bytes(),
            value("new_", i).into_bytes(),
            now_ms << 16,
        ));
    }
    for &i in &older {
        entries.push((key(i).into_bytes(), value("old_", i).into_bytes(), 1 << 16));
    }
    support::write_behind_the_back(&c.dirs[1], &entries);
    c.start_node(1);
    for i in 0..3 {
        assert!(c.wait_states(i, &["up"; 3], 10));
        support::trees_ready(&c, i, 30);
    }
    let r = repair(c.node(1));
    no_errors(&r);
    // Node 1 pulls the 40 older keys' current values (from the first
    // peer), and pushes its 40 newer ones to both peers: 120 records, no
    // more, none already there.
    assert_eq!(sum(&r, "pulled"), 40, "{r:#}");
    assert_eq!(sum(&r, "pushed"), 80, "{r:#}");
    assert_eq!(sum(&r, "already_there"), 0, "{r:#}");
    for x in r["exchanges"].as_array().unwrap() {
        let leaves = x["leaves_differing"].as_u64().unwrap();
        assert!(leaves <= 80, "{x:#}");
    }
    for i in 0..3 {
        let held = own(c.node(i));
        assert_eq!(held.len(), n, "node {i}");
        for (j, (k, v)) in held.iter().enumerate() {
            let want = if newer.contains(&j) {
                value("new_", j)
            } else {
                value("orig", j)
            };
            assert_eq!((k, v), (&key(j), &want), "node {i}");
        }
    }
    // Level everywhere: every pair's roots agree.
    for i in 0..3 {
        let again = repair(c.node(i));
        assert!(
            again["exchanges"]
                .as_array()
                .unwrap()
                .iter()
                .all(|x| x["roots_equal"] == true),
            "node {i}: {again:#}"
        );
    }
}

#[test]
fn on_a_schedule_a_wiped_node_comes_back_level_and_the_view_says_when() {
    let n = 500;
    let mut c = ClusterProcs::start(
        3,
        &[
            "--anti-entropy-interval-s",
            "1",
            "--anti-entropy-settle-ms",
            "0",
        ],
    );
    put_all(c.node(0), n);
    wipe_and_restart(&mut c, 1, false);
    let deadline = Instant::now() + Duration::from_secs(60);
    while own(c.node(1)).len() < n {
        assert!(
            Instant::now() < deadline,
            "not level after 60 s: {} of {n}",
            own(c.node(1)).len()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    // Every range of every node names when it was last in sync with each
    // other replica (the schedule pairs each two nodes once a round, from
    // the lower id; the view of either shows it).
    std::thread::sleep(Duration::from_secs(3));
    let mut synced_pairs = 0;
    for i in 0..3 {
        let r = c.node(i).request("GET", "/v0/cluster", b"");
        let v: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
        let ranges = v["ranges"].as_array().unwrap();
        assert_eq!(ranges.len(), 1, "{v:#}");
        assert_eq!(ranges[0]["members"].as_array().unwrap().len(), 3);
        for s in ranges[0]["synced"].as_array().unwrap() {
            if s["last_sync_ms_ago"].is_u64() {
                synced_pairs += 1;
            }
        }
    }
    assert!(synced_pairs >= 3, "each pair synced from one side at least");
    let status = Command::new(env!("CARGO_BIN_EXE_strata"))
        .args(["cluster", "status", &c.urls[0]])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&status.stdout);
    assert!(text.contains("ranges (anti-entropy):"), "{text}");
    assert!(text.contains("ago"), "{text}");
}
