//! The client library against real nodes: it learns a three-node cluster
//! from one URL, sends every key to one of its replicas (the node's own
//! Server-Timing shows the write was applied where it landed), keeps
//! writing without errors while a node is killed (and without it, does
//! not), loses no acknowledged write, and hedges GETs past a stopped
//! replica (without hedging and failover, they wait for it).

mod support;

use std::time::{Duration, Instant};

use strata_client::{Client, Config, Method, Request, Session};
use support::ClusterProcs;

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// A client that never marks a member down (to isolate one behaviour).
fn never_down() -> strata_client::health::HealthConfig {
    strata_client::health::HealthConfig {
        down_after: u32::MAX,
        ..Default::default()
    }
}

fn path(key: &str) -> String {
    format!("/v0/entity?id={key}")
}

/// Replica writes the nodes sent to their peers, from their own counters.
fn replica_writes_sent(c: &ClusterProcs) -> u64 {
    (0..c.urls.len())
        .map(|i| {
            let r = c.node(i).request("GET", "/metrics", b"");
            String::from_utf8_lossy(&r.body)
                .lines()
                .filter(|l| {
                    l.starts_with("strata_replica_duration_seconds_count")
                        && l.contains("op=\"write\"")
                })
                .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
                .sum::<f64>() as u64
        })
        .sum()
}

#[test]
fn learns_the_members_from_one_url_and_routes_each_key_to_a_replica() {
    // Two replicas per key of three nodes: a node that is not a replica of
    // the key it coordinates sends two replica writes, a replica one.
    let c = ClusterProcs::start(3, &["--replication", "2"]);
    rt().block_on(async {
        let client = Client::connect(&[c.urls[1].clone()], Config::default())
            .await
            .unwrap();
        let m = client.members();
        let mut urls = m.urls.clone();
        urls.sort();
        let mut want = c.urls.clone();
        want.sort();
        assert_eq!(urls, want, "every member, from one URL");
        assert_eq!(m.replication, 2);
        let ids: Vec<u64> = m
            .urls
            .iter()
            .map(|u| strata_api::placement::member_id(u))
            .collect();
        let placement = strata_api::placement::Placement::new(ids);
        let n = 90u64;
        for route in [true, false] {
            let cfg = Config {
                route,
                ..Config::default()
            };
            let client = Client::connect(&[c.urls[0].clone()], cfg).await.unwrap();
            let mut s = Session::new(client, 0, 7);
            let before = replica_writes_sent(&c);
            for k in 0..n {
                let key = format!("route-{route}-{k}");
                let p = path(&key);
                let r = Request::new(Method::Put, key.as_bytes(), &p, b"v");
                let reply = s.send(&r, None).await.unwrap();
                assert_eq!(reply.status, 201);
                if route {
                    let replicas = placement.replicas(key.as_bytes(), 2);
                    assert!(
                        replicas.contains(&reply.member),
                        "{key} answered by member {} not among its replicas {replicas:?}",
                        reply.member
                    );
                }
            }
            let sent = replica_writes_sent(&c) - before;
            eprintln!("route {route}: {n} PUTs, {sent} replica writes sent");
            if route {
                // Every coordinator held a copy: one write to the other.
                assert_eq!(sent, n, "routed");
            } else {
                // Node 0 coordinates all: a third of the keys are not its.
                assert!(sent > n + n / 6, "not routed: {sent}");
            }
        }
    });
}

/// PUTs from 4 sessions for `secs`, node 2 killed at `kill_at`; returns
/// (acknowledged keys, errors).
async fn write_through_a_kill(
    c: &mut ClusterProcs,
    cfg: Config,
    tag: &str,
) -> (Vec<String>, usize, u64) {
    let client = Client::connect(&c.urls, cfg).await.unwrap();
    let start = Instant::now();
    let local = tokio::task::LocalSet::new();
    let killed = std::rc::Rc::new(std::cell::Cell::new(false));
    let results = local
        .run_until(async {
            let mut tasks = Vec::new();
            for t in 0..4usize {
                let client = client.clone();
                let tag = tag.to_string();
                tasks.push(tokio::task::spawn_local(async move {
                    let mut s = Session::new(client, t % 3, t);
                    let mut acked = Vec::new();
                    let mut errors = 0;
                    let mut k = 0;
                    while start.elapsed() < Duration::from_secs(5) {
                        let key = format!("kill-{tag}-{t}-{k}");
                        k += 1;
                        let p = path(&key);
                        let r = Request::new(Method::Put, key.as_bytes(), &p, key.as_bytes());
                        match s.send(&r, None).await {
                            Ok(reply) if reply.status == 201 => acked.push(key),
                            _ => errors += 1,
                        }
                        tokio::time::sleep(Duration::from_millis(5)).await;
                    }
                    (acked, errors)
                }));
            }
            // The kill, from this thread, while the sessions write.
            tokio::time::sleep(Duration::from_secs(2)).await;
            c.kill(2);
            killed.set(true);
            let mut all = Vec::new();
            let mut errors = 0;
            for t in tasks {
                let (a, e) = t.await.unwrap();
                all.extend(a);
                errors += e;
            }
            (all, errors)
        })
        .await;
    assert!(killed.get());
    let retries = client
        .stats()
        .retries
        .load(std::sync::atomic::Ordering::Relaxed);
    (results.0, results.1, retries)
}

#[test]
fn a_killed_node_fails_no_write_and_loses_none() {
    let mut c = ClusterProcs::start(3, &[]);
    let rt = rt();
    let (acked, errors, retries) =
        rt.block_on(write_through_a_kill(&mut c, Config::default(), "on"));
    eprintln!(
        "with failover: {} acknowledged, {errors} errors, {retries} retries",
        acked.len()
    );
    // Writes are named (`Request::new`): one in flight at the kill is sent
    // again to another replica, which finishes it once. None fails.
    // (Retries may be none: once the dead node is marked down or seen
    // stalled, sessions send elsewhere first.)
    assert_eq!(
        errors, 0,
        "{errors} errors with failover ({retries} retries)"
    );
    assert!(acked.len() > 500, "{}", acked.len());
    // Nothing acknowledged is lost: every key reads back from the two
    // nodes left.
    rt.block_on(async {
        let client = Client::connect(&c.urls[..2], Config::default())
            .await
            .unwrap();
        let mut s = Session::new(client, 0, 0);
        let mut body = Vec::new();
        for key in &acked {
            let p = path(key);
            let r = Request::new(Method::Get, key.as_bytes(), &p, b"");
            let reply = s.send(&r, Some(&mut body)).await.unwrap();
            assert_eq!((reply.status, &body[..]), (200, key.as_bytes()), "{key}");
        }
    });
    // The same as a plain client (each session to its own node, no
    // failover, no member marked down): the dead node's share fails.
    c.start_node(2);
    assert!(c.wait_states(0, &["up", "up", "up"], 15));
    let cfg = Config {
        failover: false,
        route: false,
        health: never_down(),
        ..Config::default()
    };
    let (_, errors_off, _) = rt.block_on(write_through_a_kill(&mut c, cfg, "off"));
    eprintln!("without failover: {errors_off} errors");
    assert!(
        errors_off > 10 * errors.max(1),
        "{errors_off} against {errors}"
    );
}

#[test]
fn hedged_gets_ride_past_a_stopped_replica() {
    let c = ClusterProcs::start(3, &[]);
    let rt = rt();
    let keys: Vec<String> = (0..200).map(|k| format!("hedge-{k}")).collect();
    rt.block_on(async {
        let client = Client::connect(&c.urls, Config::default()).await.unwrap();
        let mut s = Session::new(client, 0, 0);
        for key in &keys {
            let p = path(key);
            let r = Request::new(Method::Put, key.as_bytes(), &p, b"v");
            assert_eq!(s.send(&r, None).await.unwrap().status, 201);
        }
    });
    let pid = c.node(2).child.id() as i32;
    // SAFETY: signalling a child this test started.
    unsafe { libc::kill(pid, libc::SIGSTOP) };
    let p99 = |cfg: Config| {
        rt.block_on(async {
            let client = Client::connect(&c.urls[..2], cfg).await.unwrap();
            let mut s = Session::new(client.clone(), 0, 0);
            let mut lat = Vec::new();
            for key in keys.iter().cycle().take(300) {
                let p = path(key);
                let r = Request::new(Method::Get, key.as_bytes(), &p, b"");
                let t0 = Instant::now();
                let reply = s.send(&r, None).await;
                lat.push(t0.elapsed());
                if let Ok(r) = reply {
                    assert_eq!(r.status, 200);
                }
            }
            lat.sort();
            (
                lat[lat.len() * 99 / 100],
                lat[lat.len() - 1],
                client
                    .stats()
                    .hedges
                    .load(std::sync::atomic::Ordering::Relaxed),
            )
        })
    };
    let timeout = Duration::from_millis(500);
    // The client as it comes: hedged, failing over, marking down.
    let (p99_all, max_all, hedges) = p99(Config {
        timeout,
        ..Config::default()
    });
    // Without the hedge: the first GETs sent to the stopped node wait for
    // the timeout before it is marked down.
    let (_, max_unhedged, _) = p99(Config {
        hedge: None,
        timeout,
        ..Config::default()
    });
    // A plain client: every GET whose first choice is the stopped node
    // waits for it.
    let (p99_plain, _, _) = p99(Config {
        failover: false,
        hedge: None,
        health: never_down(),
        timeout,
        ..Config::default()
    });
    unsafe { libc::kill(pid, libc::SIGCONT) };
    eprintln!(
        "GETs with a stopped replica: the client p99 {p99_all:?} max {max_all:?} ({hedges} hedges); \
         not hedged max {max_unhedged:?}; plain p99 {p99_plain:?}"
    );
    assert!(hedges > 0);
    assert!(max_all < timeout / 2, "hedged: slowest {max_all:?}");
    assert!(p99_all < timeout / 10, "hedged: p99 {p99_all:?}");
    assert!(
        max_unhedged >= timeout,
        "not hedged, the first waited: {max_unhedged:?}"
    );
    assert!(p99_plain >= timeout, "plain: p99 {p99_plain:?}");
}

/// PUTs the nodes answered, from their own counters.
fn puts_seen(c: &ClusterProcs) -> u64 {
    (0..c.urls.len())
        .map(|i| {
            let r = c.node(i).request("GET", "/metrics", b"");
            String::from_utf8_lossy(&r.body)
                .lines()
                .filter(|l| l.starts_with("strata_http_requests_total{method=\"PUT\""))
                .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
                .sum::<f64>() as u64
        })
        .sum()
}

#[test]
fn failover_never_multiplies_an_overload() {
    // Three nodes that serve one write at a time, each 20 ms, and refuse
    // the rest at once (503, not applied): every failure may be retried.
    let c = ClusterProcs::start(
        3,
        &[
            "--max-in-service",
            "1",
            "--max-waiting",
            "0",
            "--test-fsync-delay-ms",
            "20",
        ],
    );
    let run = |cfg: Config, tag: &'static str| {
        let before = puts_seen(&c);
        let client = rt().block_on(async {
            let client = Client::connect(&c.urls, cfg).await.unwrap();
            let local = tokio::task::LocalSet::new();
            local
                .run_until(async {
                    let start = Instant::now();
                    let mut tasks = Vec::new();
                    for t in 0..32usize {
                        let client = client.clone();
                        tasks.push(tokio::task::spawn_local(async move {
                            let mut s = Session::new(client, t % 3, t);
                            let mut k = 0;
                            while start.elapsed() < Duration::from_secs(3) {
                                let key = format!("storm-{tag}-{t}-{k}");
                                k += 1;
                                let p = path(&key);
                                let r = Request::new(Method::Put, key.as_bytes(), &p, b"v");
                                let _ = s.send(&r, None).await;
                            }
                        }));
                    }
                    for t in tasks {
                        t.await.unwrap();
                    }
                })
                .await;
            client
        });
        let g = |a: &std::sync::atomic::AtomicU64| a.load(std::sync::atomic::Ordering::Relaxed);
        let st = client.stats();
        let seen = puts_seen(&c) - before;
        (g(&st.requests), g(&st.retries), g(&st.budget_refused), seen)
    };
    let (requests, retries, refused, seen) = run(Config::default(), "budget");
    eprintln!("budget 10 %: {requests} requests, {retries} retries ({refused} refused by the budget), the nodes saw {seen} PUTs");
    assert!(refused > 0, "the overload spent the budget");
    // 10 % of requests, 10 a second for 3 s, and the 10 it starts with
    // (a second's worth of slack for the run's edges).
    let allowed = requests as f64 * 0.1 + 10.0 * 4.0 + 10.0;
    assert!((retries as f64) <= allowed, "{retries} retries > {allowed}");
    assert!(
        (seen as f64) <= requests as f64 + allowed,
        "{seen} PUTs seen"
    );
    // A budget of a retry per request lets the storm through: the bound
    // above is the budget's doing.
    let generous = Config {
        budget: strata_client::budget::BudgetConfig {
            ratio: 1.0,
            per_second: 1000.0,
            cap: 10_000.0,
        },
        ..Config::default()
    };
    let (requests2, retries2, _, _) = run(generous, "storm");
    eprintln!("budget 100 %: {requests2} requests, {retries2} retries");
    assert!(
        retries2 as f64 > 0.5 * requests2 as f64,
        "{retries2} of {requests2}"
    );
}

/// `strata cluster check` given one URL of a three-node cluster: through
/// the client library (the default) its operations reach every member,
/// each key's writes land on one of its replicas, and the check passes;
/// `--client direct` sends everything to the one node given.
#[test]
fn the_checker_goes_through_the_client() {
    let c = ClusterProcs::start(3, &["--replication", "2"]);
    let members = rt().block_on(async {
        Client::connect(&[c.urls[0].clone()], Config::default())
            .await
            .unwrap()
            .members()
            .urls
            .clone()
    });
    let ids: Vec<u64> = members
        .iter()
        .map(|u| strata_api::placement::member_id(u))
        .collect();
    let placement = strata_api::placement::Placement::new(ids);
    let dir = tempfile::tempdir().unwrap();
    for mode in ["smart", "direct"] {
        let history = dir.path().join(format!("{mode}.jsonl"));
        let (ok, out) = support::outcome(
            std::process::Command::new(env!("CARGO_BIN_EXE_strata")).args([
                "cluster",
                "check",
                &c.urls[0],
                "--duration",
                "2s",
                "--clients",
                "4",
                "--final-deadline",
                "20s",
                "--client",
                mode,
                "--history",
                history.to_str().unwrap(),
            ]),
        );
        assert!(ok, "{mode}: the check passes: {out}");
        let mut served = std::collections::BTreeSet::new();
        let mut writes = 0;
        let mut around = Vec::new();
        for line in std::fs::read_to_string(&history).unwrap().lines() {
            let op: serde_json::Value = serde_json::from_str(line).unwrap();
            let node = op["node"].as_str().unwrap().to_string();
            if op["kind"] == "write" && op["status"] == 201 {
                writes += 1;
                let key = op["key"].as_str().unwrap();
                let at = members.iter().position(|u| *u == node).unwrap();
                if mode == "smart" && !placement.replicas(key.as_bytes(), 2).contains(&at) {
                    around.push(format!("{key} through {node}"));
                }
            }
            served.insert(node);
        }
        assert!(writes > 20, "{mode}: {writes} writes acknowledged");
        // The smart client sends a write to one of its key's replicas; it may
        // steer a few around a replica it judges stalled (that is its job on a
        // busy machine), but a client that picked members blindly would send a
        // third of them elsewhere.
        assert!(
            around.len() * 20 <= writes,
            "{mode}: {} of {writes} writes not through a replica: {around:?}",
            around.len()
        );
        if mode == "smart" {
            assert_eq!(served.len(), 3, "every member served: {served:?}");
        } else {
            assert_eq!(served.len(), 1, "only the node given: {served:?}");
        }
    }
}
