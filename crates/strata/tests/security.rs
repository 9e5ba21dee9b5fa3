//! Who may do what (docs/security.md), on real processes over real HTTP:
//! operator endpoints refuse anonymous callers on a cluster (and change
//! nothing), tokens from a tokens file give exactly their roles and are
//! read again on SIGHUP, the lab presents its token, and an internal
//! connection that never answers the challenge is counted and closed.
//! Client certificates and node certificates under TLS: `tls.rs`.

mod support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Command;
use std::time::{Duration, Instant};

use support::{operator_token, test_secret, ClusterProcs, NodeProc, Response};

fn members(n: &NodeProc) -> usize {
    let r = n.request("GET", "/v0/cluster", b"");
    assert_eq!(r.status, 200);
    let v: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
    v["members"].as_array().unwrap().len()
}

fn with_token(n: &NodeProc, method: &str, target: &str, token: &str, body: &[u8]) -> Response {
    let auth = format!("Bearer {token}");
    n.request_with(method, target, &[("Authorization", &auth)], body)
}

#[test]
fn operator_endpoints_refuse_anonymous_callers_and_change_nothing() {
    let c = ClusterProcs::start(3, &[]);
    let n = c.node(0);
    let leave = format!("/v0/cluster/leave?node={}", c.urls[2]);
    let operator_calls: [(&str, &str); 8] = [
        ("POST", "/v0/backup"),
        ("GET", "/v0/backup/1/MANIFEST"),
        ("DELETE", "/v0/backup/1"),
        ("POST", "/v0/cluster/repair"),
        ("POST", &leave),
        ("POST", "/v0/cluster/join"),
        ("GET", "/debug/pprof/profile?seconds=1"),
        ("GET", "/debug/pprof/heap"),
    ];
    for (m, path) in operator_calls {
        let r = n.request(m, path, b"");
        assert_eq!(
            r.status,
            401,
            "{m} {path}: {}",
            String::from_utf8_lossy(&r.body)
        );
        assert!(
            r.header("www-authenticate")
                .is_some_and(|h| h.starts_with("Bearer")),
            "{m} {path}"
        );
        let r = with_token(n, m, path, "not-a-token", b"");
        assert_eq!(r.status, 401, "{m} {path} with a wrong token");
    }
    assert_eq!(members(n), 3, "an anonymous leave removed nobody");
    assert_eq!(members(c.node(2)), 3);
    // The data API and health stay open on a cluster without client auth.
    assert_eq!(n.request("PUT", "/v0/entity?id=k", b"v").status, 201);
    assert_eq!(n.request("GET", "/v0/entity?id=k", b"").status, 200);
    assert_eq!(n.request("GET", "/v0/status", b"").status, 200);
    assert_eq!(n.request("GET", "/metrics", b"").status, 200);
    // The operator token reaches the handlers: a backup is taken, and a
    // leave that cannot be made is refused for its own reason.
    let r = n.operate("POST", "/v0/backup", b"");
    assert_eq!(r.status, 201, "{}", String::from_utf8_lossy(&r.body));
    let r = n.operate("POST", &leave, b"");
    assert_eq!(r.status, 409, "{}", String::from_utf8_lossy(&r.body));
    // The lab's operator commands without a token say why they failed;
    // with it they work.
    let o = Command::new(env!("CARGO_BIN_EXE_strata"))
        .args(["cluster", "repair", &c.urls[0]])
        .env_remove("STRATA_TOKEN")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        !o.status.success() && err.contains("401") && err.contains("Bearer"),
        "{err}"
    );
    let o = support::strata_operator()
        .args(["cluster", "repair", &c.urls[0]])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

/// A tokens file with one token of each role, written by `strata token new`.
fn tokens(file: &std::path::Path) -> [String; 4] {
    ["read", "readwrite", "monitor", "operator"].map(|role| support::new_token(file, role))
}

#[test]
fn tokens_give_exactly_their_roles_and_are_read_again_on_sighup() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("tokens");
    let [read, readwrite, monitor, operator] = tokens(&file);
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(!text.contains(&read), "the file holds digests, not tokens");
    let n = support::start_with_tokens(&tmp.path().join("d"), &file);
    let calls: [(&str, &str, &[u8]); 5] = [
        ("GET", "/v0/status", b""),
        ("GET", "/v0/entity?id=a", b""),
        ("PUT", "/v0/entity?id=a", b"value"),
        ("GET", "/metrics", b""),
        ("POST", "/v0/backup", b""),
    ];
    let ok = |s: u16| (200..300).contains(&s) || s == 404;
    let table: [(Option<&str>, [bool; 5]); 5] = [
        (None, [true, false, false, false, false]),
        (Some(&read), [true, true, false, false, false]),
        (Some(&readwrite), [true, true, true, false, false]),
        (Some(&monitor), [true, false, false, true, false]),
        (Some(&operator), [true, true, true, true, true]),
    ];
    for (token, want) in table {
        let got = calls.map(|(m, p, b)| {
            let r = match token {
                Some(t) => with_token(&n, m, p, t, b),
                None => n.request(m, p, b),
            };
            if !ok(r.status) {
                // Refused, and saying so the right way: 401 without
                // credentials, 403 with a role that may not.
                let want = if token.is_some() { 403 } else { 401 };
                assert_eq!(r.status, want, "{m} {p} as {token:?}");
            }
            ok(r.status)
        });
        assert_eq!(got, want, "token {token:?}");
    }
    let r = with_token(&n, "PUT", "/v0/entity?id=a", &read, b"x");
    let body = String::from_utf8_lossy(&r.body);
    assert!(
        body.contains("read-holder") && body.contains("readwrite, operator"),
        "{body}"
    );
    // The cluster's operator token works without a line in the file.
    assert_eq!(
        with_token(&n, "GET", "/metrics", &operator_token(), b"").status,
        200
    );

    // A new token, and SIGHUP: it works without a restart; a broken file
    // is logged and the tokens in use stay.
    let o = Command::new(env!("CARGO_BIN_EXE_strata"))
        .args(["token", "new", "readwrite", "late"])
        .output()
        .unwrap();
    let late = String::from_utf8_lossy(&o.stdout).trim().to_string();
    let line = String::from_utf8_lossy(&o.stderr)
        .lines()
        .last()
        .unwrap()
        .to_string();
    assert_eq!(
        with_token(&n, "GET", "/v0/entity?id=a", &late, b"").status,
        401
    );
    std::fs::OpenOptions::new()
        .append(true)
        .open(&file)
        .unwrap()
        .write_all(format!("{line}\n").as_bytes())
        .unwrap();
    n.signal("HUP");
    wait_for(|| with_token(&n, "GET", "/v0/entity?id=a", &late, b"").status == 200);
    std::fs::write(&file, "operator broken line\n").unwrap();
    n.signal("HUP");
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(
        with_token(&n, "GET", "/v0/entity?id=a", &late, b"").status,
        200
    );

    // The lab presents its token: a load with it is served, one without
    // is refused (every request a 401, counted as errors). A token that
    // may not read /metrics leaves the lab blind, and it says so at once
    // and in the report; a monitor token beside it (--metrics-token) lets
    // it see.
    let run = |token: Option<&str>, metrics: Option<&str>| -> (serde_json::Value, String) {
        let out = tmp
            .path()
            .join(format!("run-{}-{}", token.is_some(), metrics.is_some()));
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_strata"));
        cmd.args([
            "load",
            &n.url(),
            "--rate",
            "100",
            "--duration",
            "3",
            "--keys",
            "100",
            "--quiet",
            "--json",
            "--out",
        ])
        .arg(&out)
        .env_remove("STRATA_TOKEN")
        .env_remove("STRATA_METRICS_TOKEN");
        if let Some(t) = token {
            cmd.env("STRATA_TOKEN", t);
        }
        if let Some(t) = metrics {
            cmd.env("STRATA_METRICS_TOKEN", t);
        }
        let o = cmd.output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr).into_owned();
        let v = serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {err}"));
        (v, err)
    };
    let (served, err) = run(Some(&readwrite), None);
    let t = &served["trials"][0];
    assert_eq!(t["errors"], 0, "{t}");
    assert!(
        err.contains("cannot see") && err.contains("403") && err.contains("--metrics-token"),
        "{err}"
    );
    let unseen = served["unseen"].to_string();
    assert!(
        unseen.contains("node-1") && unseen.contains("403") && unseen.contains("monitor"),
        "{unseen}"
    );
    let md = std::fs::read_to_string(tmp.path().join("run-true-false/report.md")).unwrap();
    assert!(md.contains("could not be seen"), "{md}");
    let (seen, err) = run(Some(&readwrite), Some(&monitor));
    assert!(!err.contains("cannot see"), "{err}");
    assert!(seen.get("unseen").is_none(), "{seen}");
    assert!(
        seen["trials"][0]["server"]
            .as_array()
            .is_some_and(|s| !s.is_empty()),
        "{}",
        seen["trials"][0]
    );
    let (refused, _) = run(None, None);
    let t = &refused["trials"][0];
    assert_eq!(t["errors"], t["requests"], "{t}");
}

fn wait_for(mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(15);
    while !f() {
        assert!(Instant::now() < deadline, "timed out");
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn connections_open(n: &NodeProc) -> f64 {
    let r = n.request("GET", "/metrics", b"");
    let text = String::from_utf8_lossy(&r.body);
    text.lines()
        .find_map(|l| l.strip_prefix("strata_connections_open "))
        .unwrap_or_else(|| panic!("no strata_connections_open in {text}"))
        .trim()
        .parse()
        .unwrap()
}

#[test]
fn an_internal_connection_that_never_answers_the_challenge_is_counted_and_closed() {
    let c = ClusterProcs::start(3, &[]);
    let n = c.node(0);
    // Every peer's internal connections open first (writes that need all
    // three replicas), so that the count moves only with ours.
    for i in 0..30 {
        for node in 0..3 {
            let r = c
                .node(node)
                .request("PUT", &format!("/v0/entity?id=k{i}&ack=3"), b"v");
            assert_eq!(r.status, 201);
        }
    }
    std::thread::sleep(Duration::from_millis(500));
    let before = connections_open(n);
    // A valid upgrade token (a replayed one would look the same), then
    // silence.
    let secret = strata_cluster::Secret::new(test_secret()).unwrap();
    let from = c.urls[1].clone();
    let mut s = TcpStream::connect(n.addr).unwrap();
    write!(
        s,
        "GET /v0/internal HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: strata-internal/0\r\nX-Strata-From: {from}\r\nX-Strata-Auth: {}\r\n\r\n",
        secret.upgrade_token(&from)
    )
    .unwrap();
    let mut head = [0u8; 12];
    s.read_exact(&mut head).unwrap();
    assert_eq!(&head, b"HTTP/1.1 101");
    let opened = Instant::now();
    // Counted while it is open (this scrape's own connection is one more).
    assert!(connections_open(n) >= before + 1.0, "not counted");
    // Closed by the node once the handshake's time is up.
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut rest = Vec::new();
    let _ = s.read_to_end(&mut rest);
    let lasted = opened.elapsed();
    assert!(
        lasted < Duration::from_secs(20),
        "the silent connection stayed open {lasted:?}"
    );
    wait_for(|| connections_open(n) <= before);
}
