//! Writes safe to repeat (`docs/consistency.md`): a PUT or DELETE sent
//! again with the same `strata-write-id`, through any node, after a later
//! write of the same key, takes effect once (the later write stays); a
//! malformed id is a 400; and the typed client rides through a killed
//! node with no failed request and no acknowledged write lost.

mod support;

use std::time::{Duration, Instant};

use support::ClusterProcs;

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
                        Ok(()) => acked.push(key),
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
    let (mut acked, mut failed) = (Vec::new(), Vec::new());
    for t in tasks {
        let (a, f) = rt.block_on(t).unwrap();
        acked.extend(a);
        failed.extend(f);
    }
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
    assert!(acked.len() > 1500, "{}", acked.len());
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
