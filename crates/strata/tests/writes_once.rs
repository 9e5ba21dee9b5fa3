//! Writes safe to repeat (`docs/consistency.md`): a PUT or DELETE sent
//! again with the same `strata-write-id`, through any node, after a later
//! write of the same key, takes effect once (the later write stays); a
//! malformed id is a 400; and the typed client rides through a killed
//! node with no failed request and no acknowledged write lost.
//!
//! And where a repeat is found and where it cannot be, on real processes:
//! a single node without a cluster (across a restart); the repeat at
//! `ack=1` through the replica that holds the first attempt; the repeat
//! after a timeout (the node the first attempt went to SIGSTOPped, the
//! client gone elsewhere, the node resumed); a holder that answers the
//! repeat's first phase last (stalled while the repeat is stamped anew).
//! After each, once hints are delivered and anti-entropy has run, every
//! replica's stored record (version and value, read from its files) is
//! the same.

mod support;

use std::io::{Read, Write};
use std::time::{Duration, Instant};

use support::{ClusterProcs, NodeProc};

const ID: &str = "0123456789abcdef0123456789abcdef";

fn metric(c: &ClusterProcs, i: usize, name: &str) -> f64 {
    let r = c.node(i).request("GET", "/metrics", b"");
    String::from_utf8_lossy(&r.body)
        .lines()
        .filter(|l| l.starts_with(name))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

#[test]
fn a_write_sent_again_takes_effect_once_through_any_node() {
    let c = ClusterProcs::start(3, &[]);
    let put = |node: usize, value: &str, id: Option<&str>| {
        let headers: Vec<(&str, &str)> = id.map(|i| ("strata-write-id", i)).into_iter().collect();
        c.node(node)
            .request_with("PUT", "/v0/entity?id=once", &headers, value.as_bytes())
            .status
    };
    let read = |node: usize| {
        let r = c
            .node(node)
            .request("GET", "/v0/entity?id=once&ack=3&from=3", b"");
        (r.status, String::from_utf8_lossy(&r.body).to_string())
    };
    // The write, a later write by someone else, then the first one again
    // (a client that did not hear its answer), through each other node.
    assert_eq!(put(0, "first", Some(ID)), 201);
    assert_eq!(put(1, "later", None), 201);
    let before: f64 = (0..3)
        .map(|i| metric(&c, i, "strata_cluster_repeated_writes_total"))
        .sum();
    assert_eq!(put(2, "first", Some(ID)), 201, "the repeat is acknowledged");
    assert_eq!(put(1, "first", Some(ID)), 201);
    for node in 0..3 {
        assert_eq!(
            read(node),
            (200, "later".to_string()),
            "through node {node}"
        );
    }
    let after: f64 = (0..3)
        .map(|i| metric(&c, i, "strata_cluster_repeated_writes_total"))
        .sum();
    assert!(
        after >= before + 2.0,
        "repeats counted: {before} then {after}"
    );

    // A named delete repeated after a later write leaves the later write.
    let del_id = "fedcba9876543210fedcba9876543210";
    let del = |node: usize| {
        c.node(node)
            .request_with(
                "DELETE",
                "/v0/entity?id=once",
                &[("strata-write-id", del_id)],
                b"",
            )
            .status
    };
    assert_eq!(del(0), 202);
    assert_eq!(read(2).0, 404);
    assert_eq!(put(2, "after the delete", None), 201);
    assert_eq!(del(1), 202);
    assert_eq!(read(0), (200, "after the delete".to_string()));

    // The same id on another key is another write.
    let r = c.node(0).request_with(
        "PUT",
        "/v0/entity?id=other",
        &[("strata-write-id", ID)],
        b"x",
    );
    assert_eq!(r.status, 201);
    assert_eq!(
        c.node(1).request("GET", "/v0/entity?id=other", b"").status,
        200
    );

    // Anything but 32 hex digits is refused, and names the rule.
    for bad in [
        "",
        "xyz",
        "0123456789abcdef0123456789abcdeg",
        "0123456789abcdef0123456789abcdef0",
    ] {
        let r = c.node(0).request_with(
            "PUT",
            "/v0/entity?id=bad",
            &[("strata-write-id", bad)],
            b"v",
        );
        assert_eq!(r.status, 400, "{bad:?}");
        assert!(String::from_utf8_lossy(&r.body).contains("32 hex digits"));
    }
    assert_eq!(
        c.node(0).request("GET", "/v0/entity?id=bad", b"").status,
        404
    );
    // A read names no write.
    let r = c
        .node(0)
        .request_with("GET", "/v0/entity?id=once", &[("strata-write-id", ID)], b"");
    assert_eq!(r.status, 400);
}

#[test]
fn the_typed_client_fails_nothing_and_loses_nothing_through_a_kill() {
    let mut c = ClusterProcs::start(3, &[]);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let client = rt
        .block_on(
            strata_client::Client::builder()
                .seeds(c.urls.clone())
                .connect(),
        )
        .unwrap();
    // 4 writers at ~250 PUT/s each for 5 s, node 3 killed at 2 s.
    let start = Instant::now();
    let tasks: Vec<_> = (0..4)
        .map(|t| {
            let client = client.clone();
            rt.spawn(async move {
                let (mut acked, mut failed) = (Vec::new(), Vec::new());
                let mut k = 0;
                let mut next = tokio::time::Instant::now();
                while start.elapsed() < Duration::from_secs(5) {
                    let key = format!("typed-{t}-{k}");
                    k += 1;
                    match client.put(&key, &key).await {
                        Ok(()) => acked.push((key, start.elapsed())),
                        Err(e) => failed.push(format!("{key}: {e}")),
                    }
                    next += Duration::from_millis(4);
                    tokio::time::sleep_until(next).await;
                }
                (acked, failed)
            })
        })
        .collect();
    std::thread::sleep(Duration::from_secs(2));
    c.kill(2);
    let killed_at = start.elapsed();
    let (mut acked, mut failed) = (Vec::new(), Vec::new());
    for t in tasks {
        let (a, f) = rt.block_on(t).unwrap();
        acked.extend(a);
        failed.extend(f);
    }
    // Writes went on through the kill (behaviour, not this machine's
    // speed: how many is the machine's business).
    let after_kill = acked.iter().filter(|(_, at)| *at > killed_at).count();
    let acked: Vec<String> = acked.into_iter().map(|(k, _)| k).collect();
    let retries = client
        .stats()
        .retries
        .load(std::sync::atomic::Ordering::Relaxed);
    eprintln!(
        "{} acknowledged, {} failed, {retries} retries",
        acked.len(),
        failed.len()
    );
    assert!(failed.is_empty(), "{failed:?}");
    assert!(
        after_kill > 0 && after_kill < acked.len(),
        "{after_kill} of {} acknowledged after the kill",
        acked.len()
    );
    // Every acknowledged write reads back from the two nodes left.
    let reader = rt
        .block_on(
            strata_client::Client::builder()
                .seeds(c.urls[..2].to_vec())
                .connect(),
        )
        .unwrap();
    let lost: Vec<_> = acked
        .iter()
        .filter(|k| {
            rt.block_on(reader.get(k.as_bytes()))
                .ok()
                .flatten()
                .as_deref()
                != Some(k.as_bytes())
        })
        .collect();
    assert!(
        lost.is_empty(),
        "{} lost: {:?}",
        lost.len(),
        &lost[..lost.len().min(5)]
    );
}

/// A PUT (`None`: DELETE) of `key` through `n`, named `id` if given, with
/// `query` after the key; its status.
fn write(n: &NodeProc, key: &str, value: Option<&str>, id: Option<&str>, query: &str) -> u16 {
    let headers: Vec<(&str, &str)> = id.map(|i| ("strata-write-id", i)).into_iter().collect();
    let target = format!("/v0/entity?id={key}{query}");
    match value {
        Some(v) => {
            n.request_with("PUT", &target, &headers, v.as_bytes())
                .status
        }
        None => n.request_with("DELETE", &target, &headers, b"").status,
    }
}

fn get(n: &NodeProc, key: &str, query: &str) -> (u16, String) {
    let r = n.request("GET", &format!("/v0/entity?id={key}{query}"), b"");
    (r.status, String::from_utf8_lossy(&r.body).to_string())
}

#[test]
fn a_single_node_applies_a_named_write_once_across_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let n = NodeProc::start(dir.path(), &[]);
    const Y: &str = "11111111111111111111111111111111";
    // The sequence: the write, another named write, the first
    // one's resend.
    assert_eq!(write(&n, "k", Some("first"), Some(ID), ""), 201);
    assert_eq!(write(&n, "k", Some("second"), Some(Y), ""), 201);
    assert_eq!(write(&n, "k", Some("first"), Some(ID), ""), 201);
    assert_eq!(get(&n, "k", ""), (200, "second".into()));
    // A later write without a name carries the marks on.
    assert_eq!(write(&n, "k", Some("third"), None, ""), 201);
    assert_eq!(write(&n, "k", Some("second"), Some(Y), ""), 201);
    assert_eq!(get(&n, "k", ""), (200, "third".into()));
    // A named delete repeated after a later write leaves the later write.
    let del = "22222222222222222222222222222222";
    assert_eq!(write(&n, "k", None, Some(del), ""), 202);
    assert_eq!(write(&n, "k", Some("fourth"), None, ""), 201);
    assert_eq!(write(&n, "k", None, Some(del), ""), 202);
    assert_eq!(get(&n, "k", ""), (200, "fourth".into()));
    // The marks are in the stored record: a restart remembers them.
    n.stop();
    let n = NodeProc::start(dir.path(), &[]);
    assert_eq!(write(&n, "k", Some("first"), Some(ID), ""), 201);
    assert_eq!(write(&n, "k", None, Some(del), ""), 202);
    assert_eq!(get(&n, "k", ""), (200, "fourth".into()));
    // A write never seen before is applied, named or not.
    assert_eq!(
        write(
            &n,
            "k",
            Some("fifth"),
            Some("33333333333333333333333333333333"),
            ""
        ),
        201
    );
    assert_eq!(get(&n, "k", ""), (200, "fifth".into()));
}

const ON_DEMAND: [&str; 4] = [
    "--anti-entropy-interval-s",
    "0",
    "--anti-entropy-settle-ms",
    "0",
];

/// Admission's longest wait raised past the pause, so that the stopped
/// node serves the attempt it was sent when it resumes (by default it
/// refuses it as overloaded, unapplied, having waited past 100 ms).
const LONG_WAIT: [&str; 2] = ["--max-wait-ms", "60000"];

/// The one node whose own store holds `key` (`/v0/entities` scans the
/// node's own store).
fn holders(c: &ClusterProcs, key: &str) -> Vec<usize> {
    (0..c.urls.len())
        .filter(|&i| {
            let r = c
                .node(i)
                .request("GET", &format!("/v0/entities?start={key}&end={key}~"), b"");
            assert_eq!(r.status, 200);
            !r.body.is_empty()
        })
        .collect()
}

/// The first attempt of write `ID` of `key` applied on one replica only
/// (`from=1`, as a coordinator that stalled or died after its own part
/// leaves it), then a later unnamed write on all three: the holder's
/// record carries the first attempt's mark, the others' do not. Returns
/// the holder.
fn first_attempt_on_one(c: &ClusterProcs, key: &str) -> usize {
    assert_eq!(
        write(c.node(0), key, Some("first"), Some(ID), "&ack=1&from=1"),
        201
    );
    let held = holders(c, key);
    assert_eq!(held.len(), 1, "from=1 writes one replica: {held:?}");
    assert_eq!(
        write(c.node(0), key, Some("later"), None, "&ack=3&from=3"),
        201
    );
    held[0]
}

/// One replica's stored record of a key: its version (printed) and value
/// (`None`: a tombstone); `None` when it holds nothing.
type Held = Option<(String, Option<Vec<u8>>)>;

/// Wait until no node holds a hint, run anti-entropy from every node,
/// then stop the cluster and read `key`'s record from each node's files:
/// (version, value) per node.
fn levelled_records(mut c: ClusterProcs, key: &str) -> Vec<Held> {
    let deadline = Instant::now() + Duration::from_secs(30);
    while (0..3).any(|i| metric(&c, i, "strata_hints_pending{") > 0.0) {
        assert!(Instant::now() < deadline, "hints never delivered");
        std::thread::sleep(Duration::from_millis(100));
    }
    for i in 0..3 {
        assert!(c.wait_states(i, &["up"; 3], 20));
        support::trees_ready(&c, i, 30);
    }
    for i in 0..3 {
        let r = c.node(i).operate("POST", "/v0/cluster/repair", b"");
        assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    }
    let dirs = c.dirs.clone();
    for i in 0..3 {
        c.kill(i);
    }
    dirs.iter()
        .map(|d| {
            let db = strata_engine::Db::open(d, strata_engine::Options::default()).unwrap();
            let got = db.get(key.as_bytes()).unwrap().map(|b| {
                let r = strata_cluster::record::Record::decode(&b).unwrap();
                (r.version.to_string(), r.value.map(|v| v.to_vec()))
            });
            db.close().unwrap();
            got
        })
        .collect()
}

fn all_equal(records: &[Held], value: Option<&str>) {
    assert!(
        records.iter().all(|r| r == &records[0]),
        "replicas differ after repair: {records:?}"
    );
    if let Some(v) = value {
        let held = records[0].as_ref().and_then(|r| r.1.clone());
        assert_eq!(held.as_deref(), Some(v.as_bytes()), "{records:?}");
    }
}

#[test]
fn a_repeat_at_ack_1_through_the_holder_is_found_and_replicas_end_equal() {
    let c = ClusterProcs::start(3, &ON_DEMAND);
    let h = first_attempt_on_one(&c, "once1");
    // At ack=1 the repeat's lookup asks one replica, the holder here: it
    // finds the first attempt, and the later write stays everywhere.
    assert_eq!(
        write(c.node(h), "once1", Some("first"), Some(ID), "&ack=1&from=3"),
        201
    );
    for i in 0..3 {
        assert_eq!(
            get(c.node(i), "once1", "&ack=3&from=3"),
            (200, "later".into())
        );
    }
    all_equal(&levelled_records(c, "once1"), Some("later"));
}

#[test]
fn a_holder_that_answers_the_first_phase_last_ends_equal_to_the_others() {
    let c = ClusterProcs::start(3, &ON_DEMAND);
    let h = first_attempt_on_one(&c, "once2");
    let other = (h + 1) % 3;
    // The holder stalled: the repeat's first phase hears the two others,
    // neither remembers the first attempt, so it is stamped anew (a
    // documented bound of "once"); the holder gets it as a hint when it
    // resumes, and must end with what the others hold.
    c.node(h).signal("STOP");
    let status = write(c.node(other), "once2", Some("first"), Some(ID), "");
    c.node(h).signal("CONT");
    assert_eq!(status, 201);
    all_equal(&levelled_records(c, "once2"), None);
}

#[test]
fn a_repeat_after_a_timeout_elsewhere_takes_effect_once() {
    let c = ClusterProcs::start(3, &[&ON_DEMAND[..], &LONG_WAIT[..]].concat());
    assert_eq!(
        write(c.node(0), "once3", Some("before"), None, "&ack=3&from=3"),
        201
    );
    // The first attempt goes to node 0, stopped: the client hears nothing
    // within its timeout and gives up on that connection.
    // Its connection is one the node accepted and served before it
    // stopped (a connection still waiting to be accepted after the pause
    // is refused as overloaded, unapplied).
    let mut s = c.node(0).connect();
    support::send(&mut s, "GET", "/v0/entity?id=once3", b"");
    assert_eq!(support::read_response(&mut s).status, 200);
    c.node(0).signal("STOP");
    s.write_all(
        format!(
            "PUT /v0/entity?id=once3 HTTP/1.1\r\nhost: x\r\nstrata-write-id: {ID}\r\ncontent-length: 5\r\n\r\nfirst"
        )
        .as_bytes(),
    )
    .unwrap();
    s.set_read_timeout(Some(Duration::from_millis(500)))
        .unwrap();
    assert!(s.read(&mut [0u8; 64]).is_err(), "a stopped node answered");
    // It goes elsewhere (leaving that connection open, as a client whose
    // attempt timed out may): the repeat is applied, then someone else
    // writes.
    assert_eq!(write(c.node(1), "once3", Some("first"), Some(ID), ""), 201);
    assert_eq!(write(c.node(1), "once3", Some("later"), None, ""), 201);
    // Node 0 resumes and serves the first attempt it was sent, after the
    // later write: its first phase finds the write done, at the version
    // the repeat gave it, and the later write stays.
    c.node(0).signal("CONT");
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let late = support::read_response(&mut s);
    assert_eq!(late.status, 201, "{}", String::from_utf8_lossy(&late.body));
    for i in 0..3 {
        assert_eq!(
            get(c.node(i), "once3", "&ack=3&from=3"),
            (200, "later".into())
        );
    }
    all_equal(&levelled_records(c, "once3"), Some("later"));
}
