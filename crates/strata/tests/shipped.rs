//! Secure as shipped (docs/security.md, "What the defaults expose"), on
//! real processes: every cluster secret written anywhere in this
//! repository is refused at start, with how to make one; a node listening
//! beyond loopback with no credentials serves data to loopback callers
//! only (a caller from another address of this machine gets 401 saying how
//! to configure credentials) unless `--client-auth open`, which it warns
//! about; and a slow-header flood never refuses a well-behaved request.
//! The lab's word when it cannot see a node's metrics: `security.rs`.

mod support;

use std::io::Write;
use std::net::{IpAddr, SocketAddr, TcpStream};
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use support::{request_to, NodeProc};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Every cluster secret written in the repository's files: values given
/// to `--cluster-secret`, `STRATA_CLUSTER_SECRET`, `cluster_secret`, a
/// manifest's `secret:` key or `--from-literal=secret=`, a `Secret::new`
/// literal, a constant named like a secret; and the list of secrets
/// published in any version (`strength::PUBLISHED`).
fn secrets_in_the_repository() -> Vec<(String, String)> {
    let files = Command::new("git")
        .arg("-C")
        .arg(repo())
        .args(["ls-files", "-z"])
        .output()
        .expect("git ls-files");
    assert!(files.status.success(), "git ls-files failed");
    let mut found = Vec::new();
    for f in files.stdout.split(|b| *b == 0).filter(|f| !f.is_empty()) {
        let path = String::from_utf8_lossy(f).into_owned();
        let Ok(text) = std::fs::read_to_string(repo().join(&path)) else {
            continue;
        };
        for (n, line) in text.lines().enumerate() {
            for v in candidates(line) {
                found.push((v, format!("{path}:{}", n + 1)));
            }
        }
    }
    for (s, why) in strata_cluster::strength::PUBLISHED {
        found.push((s.to_string(), why.to_string()));
    }
    found.sort();
    found.dedup_by(|a, b| a.0 == b.0);
    found
}

/// The literal values a line gives a cluster secret, if any.
fn candidates(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let lower = line.to_ascii_lowercase();
    let keys = [
        "--cluster-secret ",
        "--cluster-secret=",
        "strata_cluster_secret=",
        "cluster_secret = ",
        "secret: ",
        "--from-literal=secret=",
        "secret::new(",
    ];
    for k in keys {
        let mut from = 0;
        while let Some(i) = lower[from..].find(k) {
            let start = from + i + k.len();
            from = start;
            out.extend(literal(&line[start..]));
        }
    }
    // `const SOMETHING_SECRET: &str = "..."`.
    if lower.contains("secret") && lower.contains("&str = \"") {
        out.extend(line.split_once("&str = ").and_then(|(_, r)| literal(r)));
    }
    out
}

/// A quoted or bare literal at the start of `s`, 8 bytes or more, that
/// is not a reference to something else (`$VAR`, a path, a call).
fn literal(s: &str) -> Option<String> {
    let s = s.trim_start();
    let v: String = match s.chars().next()? {
        q @ ('"' | '\'') => s[1..].split(q).next()?.to_string(),
        _ => s
            .split(|c: char| c.is_whitespace() || c == ',' || c == ')' || c == '`')
            .next()?
            .to_string(),
    };
    let reference = v.contains('$')
        || v.contains('/')
        || v.contains('(')
        || v.contains('{')
        || v.contains('<')
        || v.chars().all(|c| c.is_ascii_uppercase() || c == '_');
    (v.len() >= 8 && !reference).then_some(v)
}

/// Run `strata serve`: its stderr if it exits with an error, `None` if it
/// started (it is then stopped).
fn refused(cmd: &mut Command) -> Option<String> {
    use std::io::BufRead;
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("err");
    let mut child = cmd
        .stdout(std::process::Stdio::piped())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    // The first line on stdout says it listens; none: it exited.
    let mut line = String::new();
    let _ = std::io::BufReader::new(child.stdout.take().unwrap()).read_line(&mut line);
    if line.contains("listening") {
        let _ = child.kill();
        let _ = child.wait();
        return None;
    }
    let st = child.wait().unwrap();
    let err = std::fs::read_to_string(&log).unwrap();
    (!st.success()).then_some(err)
}

#[test]
fn every_secret_written_in_the_repository_is_refused_at_start() {
    let found = secrets_in_the_repository();
    // The scan finds what it must: the old placeholder (in the published
    // list) and the ones named in the docs.
    assert!(
        found
            .iter()
            .any(|(s, _)| s == "replace-me-with-32-random-bytes-0123456789abcdef"),
        "{found:#?}"
    );
    let tmp = tempfile::tempdir().unwrap();
    let mut accepted = Vec::new();
    for (i, (secret, at)) in found.iter().enumerate() {
        let Some(err) = refused(
            Command::new(env!("CARGO_BIN_EXE_strata"))
                .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
                .arg(tmp.path().join(i.to_string()))
                .args(["--cluster-secret", secret]),
        ) else {
            accepted.push(format!("{secret:?} ({at}): it started"));
            continue;
        };
        if !err.contains("cluster secret") {
            accepted.push(format!("{secret:?} ({at}): {err}"));
            continue;
        }
        assert!(
            err.contains("strata secret new") && err.contains("openssl rand -hex 32"),
            "{secret:?}: {err}"
        );
    }
    assert!(accepted.is_empty(), "accepted: {accepted:#?}");
    // And from a file, as the deployments give it: refused, the file named.
    let f = tmp.path().join("secret");
    std::fs::write(&f, "replace-me-with-32-random-bytes-0123456789abcdef\n").unwrap();
    let err = refused(
        Command::new(env!("CARGO_BIN_EXE_strata"))
            .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
            .arg(tmp.path().join("f"))
            .arg("--cluster-secret-file")
            .arg(&f),
    )
    .expect("the placeholder from a file started a node");
    assert!(
        err.contains("public") && err.contains(&f.display().to_string()),
        "{err}"
    );
    // A secret `strata secret new` made starts a node.
    let made = tmp.path().join("made");
    let o = Command::new(env!("CARGO_BIN_EXE_strata"))
        .args(["secret", "new", "--out"])
        .arg(&made)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let n = NodeProc::start(
        &tmp.path().join("ok"),
        &["--cluster-secret-file", made.to_str().unwrap()],
    );
    assert_eq!(n.request("GET", "/v0/status", b"").status, 200);
}

/// An address of this machine that is not loopback: its first global
/// IPv4 address, or one put on a dummy interface for the test (as root);
/// why there is none otherwise.
fn non_loopback_address() -> Result<IpAddr, String> {
    let ip_cmd = |args: &[&str]| {
        Command::new("ip")
            .args(args)
            .output()
            .expect("ip (iproute2) is needed: scripts/test installs it")
    };
    let o = ip_cmd(&["-4", "-o", "addr", "show", "scope", "global"]);
    let text = String::from_utf8_lossy(&o.stdout);
    if let Some(ip) = text
        .split_whitespace()
        .skip_while(|w| *w != "inet")
        .nth(1)
        .and_then(|a| a.split('/').next()?.parse().ok())
    {
        return Ok(ip);
    }
    // None: a dummy interface of our own (needs root).
    if !support::is_root() {
        return Err("this machine has none".into());
    }
    let ip = "198.51.100.77";
    let mut said = String::new();
    for args in [
        &["link", "add", "strata-t0", "type", "dummy"][..],
        &["addr", "add", &format!("{ip}/32"), "dev", "strata-t0"],
        &["link", "set", "strata-t0", "up"],
    ] {
        // A run before this one may have left the interface: not an error.
        said += &String::from_utf8_lossy(&ip_cmd(args).stderr);
    }
    let there = ip_cmd(&["-4", "-o", "addr", "show", "dev", "strata-t0"]);
    if String::from_utf8_lossy(&there.stdout).contains(ip) {
        Ok(ip.parse().unwrap())
    } else {
        Err(format!(
            "this machine has none, and a dummy interface could not be added: {}",
            said.trim()
        ))
    }
}

#[test]
fn a_node_beyond_loopback_without_credentials_serves_loopback_callers_only() {
    let Some(far_ip) = support::require_ok(
        "an address beyond loopback, or root to add one",
        non_loopback_address(),
    ) else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let log = tmp.path().join("node.log");
    let n = NodeProc::start_logged(&tmp.path().join("d"), &["--listen", "0.0.0.0:0"], &log);
    let port = n.addr.port();
    let local = SocketAddr::from(([127, 0, 0, 1], port));
    let far = SocketAddr::new(far_ip, port);
    assert_eq!(
        request_to(local, "PUT", "/v0/entity?id=k", &[], b"near").status,
        201
    );
    // From another address of this machine: refused, nothing written,
    // and the answer says how to configure credentials.
    let r = request_to(far, "PUT", "/v0/entity?id=k", &[], b"far");
    let body = String::from_utf8_lossy(&r.body);
    assert_eq!(r.status, 401, "{body}");
    assert!(
        body.contains("loopback only")
            && body.contains("strata token new")
            && body.contains("--auth-tokens")
            && body.contains("--client-auth open"),
        "{body}"
    );
    assert_eq!(
        request_to(far, "GET", "/v0/entity?id=k", &[], b"").status,
        401
    );
    assert_eq!(request_to(far, "GET", "/metrics", &[], b"").status, 401);
    assert_eq!(request_to(far, "GET", "/v0/status", &[], b"").status, 200);
    let r = request_to(local, "GET", "/v0/entity?id=k", &[], b"");
    assert_eq!((r.status, r.body.as_slice()), (200, &b"near"[..]));
    drop(n);
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.contains("served on loopback only"), "{text}");

    // `--client-auth open`: served from anywhere, and the node warns.
    let log = tmp.path().join("open.log");
    let n = NodeProc::start_logged(
        &tmp.path().join("o"),
        &["--listen", "0.0.0.0:0", "--client-auth", "open"],
        &log,
    );
    let far = SocketAddr::new(far_ip, n.addr.port());
    assert_eq!(
        request_to(far, "PUT", "/v0/entity?id=k", &[], b"far").status,
        201
    );
    drop(n);
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(
        text.contains("WARN") && text.contains("--client-auth open"),
        "{text}"
    );

    // A tokens file: a token works from anywhere, nothing without one.
    let tokens = tmp.path().join("tokens");
    let o = Command::new(env!("CARGO_BIN_EXE_strata"))
        .args(["token", "new", "readwrite", "app", "--append"])
        .arg(&tokens)
        .output()
        .unwrap();
    let token = String::from_utf8_lossy(&o.stdout).trim().to_string();
    let n = NodeProc::start(
        &tmp.path().join("t"),
        &[
            "--listen",
            "0.0.0.0:0",
            "--auth-tokens",
            tokens.to_str().unwrap(),
        ],
    );
    let far = SocketAddr::new(far_ip, n.addr.port());
    let auth = format!("Bearer {token}");
    let with = [("Authorization", auth.as_str())];
    assert_eq!(
        request_to(far, "PUT", "/v0/entity?id=k", &with, b"t").status,
        201
    );
    assert_eq!(
        request_to(far, "GET", "/v0/entity?id=k", &[], b"").status,
        401
    );
    let local = SocketAddr::from(([127, 0, 0, 1], n.addr.port()));
    assert_eq!(
        request_to(local, "GET", "/v0/entity?id=k", &[], b"").status,
        401
    );
}

/// A flood of connections that send the start of a request's head and
/// then trickle a byte each `every`, never finishing it, until `stop`.
struct Flood {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: std::thread::JoinHandle<usize>,
}

impl Flood {
    fn start(addr: SocketAddr, n: usize, every: Duration) -> Flood {
        let mut conns: Vec<TcpStream> = (0..n)
            .filter_map(|_| {
                let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(5)).ok()?;
                s.write_all(b"GET /v0/entity?id=k HTTP/1.1\r\nHost: x\r\n")
                    .ok()?;
                Some(s)
            })
            .collect();
        assert_eq!(conns.len(), n, "the flood's connections opened");
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let halt = stop.clone();
        let thread = std::thread::spawn(move || {
            while !halt.load(std::sync::atomic::Ordering::Relaxed) {
                conns.retain_mut(|s| s.write_all(b"X").is_ok());
                std::thread::sleep(every);
            }
            // Twice more: a connection the node closed fails by the second.
            for _ in 0..2 {
                conns.retain_mut(|s| s.write_all(b"X").is_ok());
                std::thread::sleep(Duration::from_millis(50));
            }
            conns.len()
        });
        Flood { stop, thread }
    }

    /// Stop trickling: how many of the flood's connections are still open.
    fn stop(self) -> usize {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        self.thread.join().unwrap()
    }
}

fn metric(n: &NodeProc, name: &str) -> f64 {
    try_metric(n, name).unwrap_or_else(|| panic!("no {name}"))
}

/// A metric's value, if the node served its metrics.
fn try_metric(n: &NodeProc, name: &str) -> Option<f64> {
    let r = n.request("GET", "/metrics", b"");
    let text = String::from_utf8_lossy(&r.body);
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("{name} ")))?
        .trim()
        .parse()
        .ok()
}

#[test]
fn a_slow_header_flood_never_refuses_a_well_behaved_request() {
    let tmp = tempfile::tempdir().unwrap();
    // No bound that closes the flood's connections: what keeps them from
    // parking others is that, idle, they give up their places.
    let n = NodeProc::start(
        &tmp.path().join("d"),
        &["--max-awaiting-heads-per-peer", "1000"],
    );
    assert_eq!(n.request("PUT", "/v0/entity?id=k", b"v").status, 201);
    // More slow connections than the node's first connection limit (256),
    // standing: they have all given up their places (a burst of
    // connections still arriving is overload, and parks newcomers by
    // design).
    let flood = Flood::start(n.addr, 300, Duration::from_millis(500));
    let deadline = Instant::now() + Duration::from_secs(10);
    while try_metric(&n, "strata_connections_open").is_none_or(|open| open > 100.0) {
        assert!(
            Instant::now() < deadline,
            "the flood's connections kept their places"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // Well-behaved requests, on fresh connections, during the flood.
    let mut seen = Vec::new();
    for i in 0..8 {
        let r = n.request("PUT", &format!("/v0/entity?id=good{i}"), b"v");
        let g = n.request("GET", "/v0/entity?id=k", b"");
        seen.push((r.status, g.status));
        std::thread::sleep(Duration::from_millis(200));
    }
    assert!(
        seen.iter().all(|s| *s == (201, 200)),
        "well-behaved requests during the flood: {seen:?}"
    );
    assert_eq!(metric(&n, "strata_connections_slow_head_closed_total"), 0.0);
    assert_eq!(flood.stop(), 300, "the flood's connections stayed open");
}

#[test]
fn connections_awaiting_their_head_are_bounded_per_address() {
    let tmp = tempfile::tempdir().unwrap();
    let n = NodeProc::start(
        &tmp.path().join("d"),
        &["--max-awaiting-heads-per-peer", "100"],
    );
    let flood = Flood::start(n.addr, 300, Duration::from_millis(500));
    // Past a second, each newcomer from the flood's address trims it to
    // its bound: the oldest idle connections are closed, counted, and
    // the newcomers served.
    std::thread::sleep(Duration::from_millis(1200));
    for i in 0..4 {
        let r = n.request("PUT", &format!("/v0/entity?id=n{i}"), b"v");
        assert_eq!(r.status, 201);
    }
    let closed = metric(&n, "strata_connections_slow_head_closed_total");
    assert!(closed >= 200.0, "closed {closed}");
    assert!(metric(&n, "strata_connections_awaiting_head") <= 101.0);
    let alive = flood.stop();
    assert!(
        alive <= 100,
        "{alive} of the flood's connections still open"
    );
}
