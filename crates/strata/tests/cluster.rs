//! The cluster on real processes and loopback ports, on 2 and on 3 nodes:
//! replication parameters, quorums that cannot be met (a node killed or
//! frozen), reads and writes at different `ack`, a node away while keys
//! change and level again by itself, exact copy counts (reads and writes
//! at every `ack` on per-core runtimes too); and tombstones dropped only
//! once every replica holds them.

mod support;

use std::process::Command;
use std::time::{Duration, Instant};

use support::{ClusterProcs, NodeProc};

fn put(n: &NodeProc, key: &str, q: &str, v: &str) -> u16 {
    n.request("PUT", &format!("/v0/entity?id={key}{q}"), v.as_bytes())
        .status
}

fn get(n: &NodeProc, key: &str, q: &str) -> (u16, String) {
    let r = n.request("GET", &format!("/v0/entity?id={key}{q}"), b"");
    (r.status, String::from_utf8_lossy(&r.body).into_owned())
}

fn delete(n: &NodeProc, key: &str, q: &str) -> u16 {
    n.request("DELETE", &format!("/v0/entity?id={key}{q}"), b"")
        .status
}

/// Does node `n` hold a live value for `key` in its own store?
fn holds(n: &NodeProc, key: &str) -> Option<String> {
    let r = n.request(
        "GET",
        &format!("/v0/entities?start={key}&end={key}%00"),
        b"",
    );
    assert_eq!(r.status, 200);
    let body = String::from_utf8_lossy(&r.body).into_owned();
    body.strip_prefix(&format!("{key}\n")).map(str::to_string)
}

#[test]
fn replication_parameters_out_of_range_are_400_on_two_and_three_nodes() {
    for n in [2usize, 3] {
        let c = ClusterProcs::start(n, &[]);
        let a = c.node(0);
        assert_eq!(put(a, "k", "", "v"), 201);
        assert_eq!(get(a, "k", &format!("&ack={n}&from={n}")).0, 200);
        for q in [
            format!("&from={}", n + 1),
            "&ack=0".to_string(),
            "&from=0".to_string(),
            "&ack=2&from=1".to_string(),
            format!("&ack={}", n + 1),
            "&ack=x".to_string(),
            "&from=-1".to_string(),
        ] {
            assert_eq!(put(a, "k", &q, "v"), 400, "PUT {q} on {n} nodes");
            assert_eq!(get(a, "k", &q).0, 400, "GET {q} on {n} nodes");
            assert_eq!(delete(a, "k", &q), 400, "DELETE {q} on {n} nodes");
        }
        // The view names every member and the replication factor.
        let v: serde_json::Value =
            serde_json::from_slice(&a.request("GET", "/v0/cluster", b"").body).unwrap();
        assert_eq!(v["replication"], n.min(3));
        assert_eq!(v["members"].as_array().unwrap().len(), n);
    }
}

#[test]
fn internal_traffic_without_the_secret_is_403() {
    let c = ClusterProcs::start(2, &[]);
    let a = c.node(0);
    let r = a.request("GET", "/v0/internal", b"");
    assert_eq!(r.status, 403);
    let mut s = a.connect();
    let head = format!(
        "GET /v0/internal HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: strata-internal/0\r\nx-strata-from: {}\r\nx-strata-auth: 00112233.4455\r\n\r\n",
        c.urls[1]
    );
    std::io::Write::write_all(&mut s, head.as_bytes()).unwrap();
    assert_eq!(support::read_response(&mut s).status, 403);
}

#[test]
fn a_stopped_node_makes_full_ack_a_prompt_504() {
    // On 3 nodes the last one is killed, on 2 it is frozen (SIGSTOP: its
    // sockets stay open and silent). A long replica timeout: the 504s must
    // come from the failure detector's knowledge, not from waiting the
    // timeout out.
    for n in [3usize, 2] {
        let mut c = ClusterProcs::start(n, &["--replica-timeout-ms", "30000"]);
        let full = format!("&ack={n}");
        assert_eq!(put(c.node(0), "k", &full, "v"), 201);
        let frozen = if n == 3 {
            c.kill(n - 1);
            None
        } else {
            let pid = c.node(n - 1).child.id().to_string();
            assert!(Command::new("kill")
                .args(["-STOP", &pid])
                .status()
                .unwrap()
                .success());
            Some(pid)
        };
        let mut want = vec!["up"; n];
        want[n - 1] = "down";
        assert!(c.wait_states(0, &want, 10), "{n} nodes");
        let t = Instant::now();
        let r = c
            .node(0)
            .request("PUT", &format!("/v0/entity?id=k{full}"), b"v2");
        assert_eq!(r.status, 504, "{n} nodes");
        assert_eq!(
            String::from_utf8_lossy(&r.body).trim(),
            format!("not enough replicas: got {} of {n}", n - 1)
        );
        assert_eq!(get(c.node(0), "k", &full).0, 504);
        assert_eq!(delete(c.node(0), "k", &full), 504);
        assert!(
            t.elapsed() < Duration::from_secs(25),
            "waited out the timeout"
        );
        // Reads and deletes still work with one node down: at the default
        // quorum on 3 nodes (2 of 3), at ack=1 on 2.
        let low = if n == 3 { "" } else { "&ack=1" };
        let live = n - 2;
        assert_eq!(
            get(c.node(live), "k", low),
            (200, "v".to_string()),
            "{n} nodes"
        );
        assert_eq!(delete(c.node(live), "k", low), 202);
        assert_eq!(get(c.node(0), "k", low).0, 404);
        if let Some(pid) = frozen {
            assert!(Command::new("kill")
                .args(["-CONT", &pid])
                .status()
                .unwrap()
                .success());
        }
    }
}

#[test]
fn writes_at_low_ack_read_back_at_high_ack_and_the_reverse() {
    for n in [2usize, 3] {
        writes_at_low_ack_and_high(n, &[]);
    }
}

/// The same on per-core runtimes (`--runtime per-core`), two threads a
/// node: connections and each thread's replica traffic on that thread.
#[test]
fn per_core_runtimes_read_back_what_they_wrote_at_every_ack() {
    writes_at_low_ack_and_high(3, &["--runtime", "per-core", "--worker-threads", "2"]);
}

fn writes_at_low_ack_and_high(n: usize, extra: &[&str]) {
    {
        let c = ClusterProcs::start(n, extra);
        let (low, high) = (format!("&ack=1&from={n}"), format!("&ack={n}&from={n}"));
        for i in 0..30 {
            let k = format!("low{i}");
            assert_eq!(put(c.node(i % n), &k, &low, &format!("v{i}")), 201);
            assert_eq!(
                get(c.node((i + 1) % n), &k, &high),
                (200, format!("v{i}")),
                "{n} nodes"
            );
            let k = format!("high{i}");
            assert_eq!(put(c.node(i % n), &k, &high, &format!("w{i}")), 201);
            assert_eq!(
                get(c.node((i + n - 1) % n), &k, &low),
                (200, format!("w{i}")),
                "{n} nodes"
            );
            assert_eq!(delete(c.node(i % n), &k, "&ack=1"), 202);
            assert_eq!(get(c.node((i + 1) % n), &k, &high).0, 404);
        }
    }
}

#[test]
fn a_node_away_during_changes_is_level_on_its_own_store_when_back() {
    for n in [2usize, 3] {
        node_away_during_changes(n);
    }
}

/// The last of `n` nodes is killed while keys change through the others
/// (at ack=1 on 2 nodes, the default quorum on 3), then restarted.
fn node_away_during_changes(n: usize) {
    let away = n - 1;
    let q = if n == 2 { "&ack=1" } else { "" };
    let mut c = ClusterProcs::start(n, &[]);
    // Keys that exist before, then change while node 2 is away.
    for i in 0..50 {
        assert_eq!(put(c.node(0), &format!("k{i}"), "", "before"), 201);
    }
    c.kill(away);
    for i in 0..50 {
        let k = format!("k{i}");
        match i % 4 {
            0 => assert_eq!(put(c.node(i % away), &k, q, "overwritten"), 201),
            1 => assert_eq!(delete(c.node(i % away), &k, q), 202),
            2 => {
                assert_eq!(delete(c.node(i % away), &k, q), 202);
                assert_eq!(put(c.node((i + 1) % away), &k, q, "recreated"), 201);
            }
            _ => {}
        }
        assert_eq!(put(c.node(i % away), &format!("new{i}"), q, "new"), 201);
    }
    c.start_node(away);
    // Hints bring node 2 level without any read of these keys.
    let want = |i: usize| match i % 4 {
        0 => Some("overwritten"),
        1 => None,
        2 => Some("recreated"),
        _ => Some("before"),
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    let level = loop {
        let ok = (0..50).all(|i| {
            holds(c.node(away), &format!("k{i}")).as_deref() == want(i)
                && holds(c.node(away), &format!("new{i}")).as_deref() == Some("new")
        });
        if ok || Instant::now() > deadline {
            break ok;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    assert!(level, "node {away} of {n} did not become level from hints");
    let full = format!("&ack={n}");
    for i in 0..50 {
        let (s, v) = get(c.node(away), &format!("k{i}"), &full);
        match want(i) {
            Some(w) => assert_eq!((s, v.as_str()), (200, w), "k{i}"),
            None => assert_eq!(s, 404, "k{i}"),
        }
    }
}

#[test]
fn a_put_with_from_f_leaves_exactly_f_copies() {
    for n in [2usize, 3] {
        exactly_f_copies(n);
    }
}

fn exactly_f_copies(n: usize) {
    let c = ClusterProcs::start(n, &[]);
    for f in 1..=n {
        for i in 0..10 {
            let k = format!("f{f}-{i}");
            assert_eq!(
                put(c.node(i % n), &k, &format!("&ack=1&from={f}"), "x"),
                201
            );
        }
    }
    // Copies beyond ack arrive in the background: wait for them (a PUT
    // never goes to more than `from` replicas, so the count cannot pass f),
    // then count each node's own store.
    let count = |k: &str| (0..n).filter(|&m| holds(c.node(m), k).is_some()).count();
    for f in 1..=n {
        for i in 0..10 {
            let k = format!("f{f}-{i}");
            let deadline = Instant::now() + Duration::from_secs(10);
            while count(&k) < f && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(50));
            }
            assert_eq!(count(&k), f, "{k}");
        }
    }
    std::thread::sleep(Duration::from_millis(300));
    for f in 1..=n {
        assert_eq!(count(&format!("f{f}-0")), f);
    }
}

/// A replicated write says where its time went: this node's own part and
/// the peer whose answer completed the quorum, by its URL; the replica
/// metrics the lab reads are served.
#[test]
fn a_replicated_answer_names_the_peer_it_waited_for() {
    use strata_api::timing::ServerTiming;
    let c = ClusterProcs::start(3, &[]);
    let a = c.node(0);
    let peers: Vec<String> = (1..3)
        .map(|i| format!("http://{}", c.node(i).addr))
        .collect();
    // The critical path is whichever part answered last: this node's own
    // apply (no peer stages) or a peer's. Of a few writes, some end on a
    // peer, and every peer stage names a real peer.
    let mut named = 0;
    let mut seen = Vec::new();
    for i in 0..20 {
        let r = a.request("PUT", &format!("/v0/entity?id=t{i}&ack=3&from=3"), b"v");
        assert_eq!(r.status, 201);
        let v = r
            .header("server-timing")
            .expect("Server-Timing")
            .to_string();
        let t = ServerTiming::parse(&v);
        let on_peer: Vec<_> = t.entries.iter().filter(|e| e.stage.on_peer()).collect();
        named += !on_peer.is_empty() as usize;
        for e in on_peer {
            assert!(peers.contains(e.node.as_ref().unwrap()), "{v}");
        }
        seen.push(v);
    }
    assert!(named > 0, "no write waited for a peer: {seen:#?}");
    let r = a.request("PUT", "/v0/entity?id=t&ack=3&from=3", b"v");
    assert_eq!(r.status, 201);
    let r = a.request("GET", "/v0/entity?id=t&ack=3&from=3", b"");
    let t = ServerTiming::parse(r.header("server-timing").unwrap());
    assert!(
        t.entries.iter().any(|e| e.stage.name() == "replica"),
        "{t:?}"
    );
    let text = String::from_utf8(a.request("GET", "/metrics", b"").body).unwrap();
    for name in strata_api::metrics::CLUSTER_ONLY
        .iter()
        .chain(strata_sim::calibrate::names::CLUSTER_ONLY)
    {
        assert!(support::serves(&text, name), "{name}:\n{text}");
    }
}

/// A counter from node `n`'s `/metrics`.
fn metric(n: &NodeProc, name: &str) -> f64 {
    let r = n.request("GET", "/metrics", b"");
    let text = String::from_utf8_lossy(&r.body);
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.trim().parse().ok())
        .unwrap_or(0.0)
}

/// Wait (at most `secs`) until `ok` holds.
fn eventually(secs: u64, what: &str, mut ok: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while !ok() {
        assert!(Instant::now() < deadline, "never: {what}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn tombstones_go_only_once_every_replica_holds_them() {
    const PURGED: &str = "strata_cluster_tombstones_purged_total";
    const KEPT: &str = "strata_cluster_tombstones_kept_total";
    // Grace 2 s, hints dropped after 1 s: the away node gets no hint for
    // the deletes it misses, and only the reaper's own check stands
    // between it and a resurrection.
    let mut c = ClusterProcs::start(
        3,
        &[
            "--hint-max-age-s",
            "1",
            "--tombstone-grace-s",
            "2",
            "--reaper-interval-ms",
            "1000",
        ],
    );
    // Deleted while everyone is up: dropped everywhere after the grace.
    for i in 0..20 {
        assert_eq!(put(c.node(0), &format!("d{i}"), "&ack=3", "v"), 201);
        assert_eq!(delete(c.node(1), &format!("d{i}"), "&ack=3"), 202);
    }
    eventually(20, "d* purged on every node", || {
        (0..3).all(|n| metric(c.node(n), PURGED) >= 20.0)
    });
    for i in 0..20 {
        assert_eq!(holds(c.node(2), &format!("d{i}")), None);
    }
    for i in 0..20 {
        assert_eq!(put(c.node(0), &format!("k{i}"), "&ack=3", "old"), 201);
    }
    c.kill(2);
    for i in 0..20 {
        assert_eq!(delete(c.node(0), &format!("k{i}"), "&ack=2"), 202);
    }
    // Past the grace, node 2 still away: the k* tombstones stay.
    eventually(20, "k* kept on node 0", || metric(c.node(0), KEPT) >= 20.0);
    assert!(metric(c.node(0), PURGED) < 40.0);
    std::thread::sleep(Duration::from_secs(3));
    assert!(
        metric(c.node(0), PURGED) < 40.0,
        "purged with a replica away"
    );

    // Node 2 comes back holding "old" for every k*, its hints expired.
    c.start_node(2);
    // Node 2's counters started again with it: its own 20 k* tombstones
    // (sent by the others' reapers) purged.
    eventually(30, "every tombstone purged on every node", || {
        metric(c.node(0), PURGED) >= 40.0
            && metric(c.node(1), PURGED) >= 40.0
            && metric(c.node(2), PURGED) >= 20.0
    });
    for i in 0..20 {
        let k = format!("k{i}");
        assert_eq!(holds(c.node(2), &k), None, "{k} came back on node 2");
        assert_eq!(get(c.node(1), &k, "&ack=3").0, 404, "{k}");
        assert_eq!(get(c.node(2), &k, "&ack=1&from=3").0, 404, "{k}");
    }
}
