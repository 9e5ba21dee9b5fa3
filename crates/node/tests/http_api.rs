//! The node over real HTTP: a node started in this process
//! (`server::spawn`, as `strata serve` runs it) on an ephemeral loopback
//! port and a temporary data directory, spoken to over raw HTTP/1.1. The
//! golden exchanges of `tests/api/*.txt`, large values, keep-alive,
//! clients that stall, each answer's `Server-Timing`. (What needs the
//! process itself, signals, restarts, its exit code, is tested on the
//! binary in `crates/strata/tests`.)

mod support;

use std::io::{Read, Write};
use std::path::Path;

use support::{read_response, send, Node};

/// Run the golden exchanges of `tests/api/*.txt` (see the header of
/// basic.txt for the format).
#[test]
fn golden_api_exchanges() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/api");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    assert!(!files.is_empty());
    for f in files {
        let data = tempfile::tempdir().unwrap();
        let node = Node::start(data.path(), &[]);
        let text = std::fs::read_to_string(&f).unwrap();
        let mut blocks = text
            .split("\n\n")
            .filter(|b| b.lines().any(|l| l.starts_with("> ")));
        for block in &mut blocks {
            let lines: Vec<&str> = block.lines().filter(|l| !l.starts_with('#')).collect();
            let req = lines[0].strip_prefix("> ").unwrap();
            let mut parts = req.splitn(3, ' ');
            let (method, target) = (parts.next().unwrap(), parts.next().unwrap());
            let body = parts.next().unwrap_or("").replace("\\n", "\n");
            let resp = node.request(method, target, body.as_bytes());
            let want_status: u16 = lines[1].strip_prefix("< ").unwrap().parse().unwrap();
            let ctx = format!("{}: {req}", f.display());
            assert_eq!(
                resp.status,
                want_status,
                "{ctx}: body {:?}",
                String::from_utf8_lossy(&resp.body)
            );
            for h in lines.iter().skip(2).filter_map(|l| l.strip_prefix("< ")) {
                let (k, v) = h.split_once(": ").unwrap();
                assert_eq!(resp.header(k), Some(v), "{ctx}: header {k}");
            }
            let want_body: Vec<&str> = lines
                .iter()
                .filter_map(|l| {
                    l.strip_prefix("| ")
                        .or(if *l == "|" { Some("") } else { None })
                })
                .collect();
            let want = if want_body.is_empty() {
                String::new()
            } else {
                want_body.join("\n") + "\n"
            };
            let got = String::from_utf8_lossy(&resp.body);
            // Range bodies end without a newline; compare without trailing ones.
            assert_eq!(
                got.trim_end_matches('\n'),
                want.trim_end_matches('\n'),
                "{ctx}"
            );
        }
        node.stop().unwrap();
    }
}

#[test]
fn ten_mib_value_and_too_large_value() {
    let data = tempfile::tempdir().unwrap();
    let node = Node::start(data.path(), &["--max-value-bytes", "12000000"]);
    let big: Vec<u8> = (0..10 << 20).map(|i| (i % 251) as u8).collect();
    assert_eq!(node.request("PUT", "/v0/entity?id=big", &big).status, 201);
    let r = node.request("GET", "/v0/entity?id=big", b"");
    assert_eq!(r.status, 200);
    assert!(r.body == big);
    let too_big = vec![0u8; 12_000_001];
    assert_eq!(
        node.request("PUT", "/v0/entity?id=huge", &too_big).status,
        413
    );
    assert_eq!(node.request("GET", "/v0/entity?id=huge", b"").status, 404);
}

#[test]
fn keep_alive_serves_many_requests_on_one_connection() {
    let data = tempfile::tempdir().unwrap();
    let node = Node::start(data.path(), &[]);
    let mut s = node.connect();
    for i in 0..100 {
        send(&mut s, "PUT", &format!("/v0/entity?id=ka{i}"), b"x");
        assert_eq!(read_response(&mut s).status, 201);
        send(&mut s, "GET", &format!("/v0/entity?id=ka{i}"), b"");
        assert_eq!(read_response(&mut s).body, b"x");
    }
}

#[test]
fn huge_headers_and_stalled_clients_do_not_block_others() {
    let data = tempfile::tempdir().unwrap();
    let node = Node::start(
        data.path(),
        &["--header-timeout-ms", "1500", "--body-timeout-ms", "1500"],
    );
    // Huge header: refused (431) or the connection closed, never served.
    let mut s = node.connect();
    let big = "x".repeat(200 << 10);
    let _ = write!(
        s,
        "GET /v0/status HTTP/1.1\r\nHost: t\r\nX-Big: {big}\r\n\r\n"
    );
    let mut buf = Vec::new();
    let _ = s.read_to_end(&mut buf);
    let head = String::from_utf8_lossy(&buf);
    assert!(buf.is_empty() || head.starts_with("HTTP/1.1 431"), "{head}");
    // Half a request line, then silence.
    let mut stalled_head = node.connect();
    stalled_head
        .write_all(b"GET /v0/entity?id=a HTTP/1.1\r\nHost:")
        .unwrap();
    // A complete head promising a body that never comes.
    let mut stalled_body = node.connect();
    stalled_body
        .write_all(b"PUT /v0/entity?id=a HTTP/1.1\r\nHost: t\r\nContent-Length: 100\r\n\r\nabc")
        .unwrap();
    // Others are served meanwhile: while the stalled connections are
    // still open (their timeout has not fired yet).
    assert_eq!(node.request("PUT", "/v0/entity?id=b", b"1").status, 201);
    stalled_head.set_nonblocking(true).unwrap();
    let mut probe = [0u8; 1];
    let still_open = matches!(stalled_head.read(&mut probe), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock);
    assert!(
        still_open,
        "the other client was served only after the stalled one was cut off"
    );
    stalled_head.set_nonblocking(false).unwrap();
    // The stalled ones are cut off by the timeouts.
    for s in [&mut stalled_head, &mut stalled_body] {
        let mut buf = Vec::new();
        let _ = s.read_to_end(&mut buf);
        let head = String::from_utf8_lossy(&buf);
        assert!(
            buf.is_empty() || head.starts_with("HTTP/1.1 408"),
            "expected a timeout, got {head:?}"
        );
    }
    assert_eq!(node.request("GET", "/v0/entity?id=a", b"").status, 404);
}

/// Every answer says where its time went (`Server-Timing`): a synced PUT
/// names its fsync and the stages add up to the total.
#[test]
fn every_answer_carries_its_stages() {
    use strata_api::timing::{ServerTiming, Stage};
    let data = tempfile::tempdir().unwrap();
    let node = Node::start(data.path(), &[]);
    let r = node.request("PUT", "/v0/entity?id=timed", b"v");
    assert_eq!(r.status, 201);
    let v = r.header("server-timing").expect("a Server-Timing header");
    let t = ServerTiming::parse(v);
    assert!(t.total > std::time::Duration::ZERO, "{v}");
    let stages: Vec<Stage> = t.entries.iter().map(|e| e.stage).collect();
    assert!(stages.contains(&Stage::Fsync), "{v}");
    let sum: std::time::Duration = t.entries.iter().map(|e| e.dur).sum();
    // Each entry is rounded to the microsecond.
    let slack = std::time::Duration::from_micros(t.entries.len() as u64);
    assert!(sum <= t.total + slack && sum + slack >= t.total, "{v}");
    let r = node.request("GET", "/v0/entity?id=timed", b"");
    let t = ServerTiming::parse(r.header("server-timing").unwrap());
    assert!(t.entries.iter().any(|e| e.stage == Stage::Read), "{t:?}");
    // Not only the data API: every answer.
    let r = node.request("GET", "/v0/status", b"");
    assert!(r.header("server-timing").unwrap().contains("total;dur="));
    node.stop().unwrap();
}
