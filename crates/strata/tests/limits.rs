//! The documented limits are the real ones (docs/operations.md,
//! docs/api.md), on real processes: a key of exactly `--max-key-bytes`
//! works, ASCII or binary percent-encoded, and one byte more gets 414
//! with a body naming the limit; a value of exactly `--max-value-bytes`
//! (32 MiB) is stored and replicated to all three replicas of a cluster,
//! and one byte more gets 413 naming the limit.

mod support;

use support::{ClusterProcs, NodeProc};

/// Percent-encode every byte: the longest a key's URI can be.
fn encode_all(key: &[u8]) -> String {
    key.iter().map(|b| format!("%{b:02X}")).collect()
}

const KEY_LIMIT: usize = 16 << 10;

#[test]
fn keys_of_exactly_the_limit_work_ascii_and_binary() {
    let tmp = tempfile::tempdir().unwrap();
    let n = NodeProc::start(tmp.path(), &[]);
    let ascii = "k".repeat(KEY_LIMIT);
    let binary: Vec<u8> = (0..KEY_LIMIT).map(|i| (i * 7 % 256) as u8).collect();
    for (what, id) in [("ascii", ascii.clone()), ("binary", encode_all(&binary))] {
        let r = n.request("PUT", &format!("/v0/entity?id={id}"), what.as_bytes());
        assert_eq!(
            r.status,
            201,
            "{what}: {}",
            String::from_utf8_lossy(&r.body)
        );
        let r = n.request("GET", &format!("/v0/entity?id={id}"), b"");
        assert_eq!(r.status, 200, "{what}");
        assert_eq!(r.body, what.as_bytes());
    }
    // One byte more: 414, the body saying the limit.
    let over_ascii = "k".repeat(KEY_LIMIT + 1);
    let mut over_binary = binary.clone();
    over_binary.push(0xff);
    for (what, id) in [("ascii", over_ascii), ("binary", encode_all(&over_binary))] {
        for method in ["PUT", "GET"] {
            let r = n.request(method, &format!("/v0/entity?id={id}"), b"x");
            assert_eq!(r.status, 414, "{what} {method}");
            let body = String::from_utf8_lossy(&r.body);
            assert!(
                body.contains(&KEY_LIMIT.to_string()),
                "{what} {method}: {body}"
            );
        }
    }
    // The keys written are whole: a range over them returns both.
    let r = n.request("GET", "/v0/entities?start=%00", b"");
    assert_eq!(r.status, 200);
    assert_eq!(r.chunks.len(), 2, "two entries");
}

#[test]
fn a_limit_a_uri_cannot_carry_is_refused_at_start() {
    let tmp = tempfile::tempdir().unwrap();
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_strata"))
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--max-key-bytes",
            "65536",
            "--data-dir",
        ])
        .arg(tmp.path())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success() && err.contains("21800"), "{err}");
}

#[test]
fn a_value_of_exactly_the_limit_is_replicated_on_a_cluster() {
    // A short replica timeout: a 32 MiB value takes longer than 100 ms to
    // write and fsync on each replica, and gets the time its size needs.
    let c = ClusterProcs::start(3, &["--replica-timeout-ms", "100"]);
    let limit = 32 << 20;
    let value: Vec<u8> = (0..limit).map(|i| (i % 251) as u8).collect();
    let r = c.node(0).request("PUT", "/v0/entity?id=big&ack=3", &value);
    assert_eq!(r.status, 201, "{}", String::from_utf8_lossy(&r.body));
    for i in 0..3 {
        let r = c.node(i).request("GET", "/v0/entity?id=big&ack=3", b"");
        assert_eq!(r.status, 200, "node {i}");
        assert!(r.body == value, "node {i}: {} bytes back", r.body.len());
    }
    let mut over = value;
    over.push(0);
    let r = c.node(1).request("PUT", "/v0/entity?id=big2", &over);
    assert_eq!(r.status, 413);
    let body = String::from_utf8_lossy(&r.body);
    assert!(body.contains(&limit.to_string()), "{body}");
}

#[test]
fn slow_clients_never_refuse_a_well_behaved_request() {
    use std::io::Write;
    let tmp = tempfile::tempdir().unwrap();
    // Few places in service: before bodies were read ahead of admission,
    // 50 slow bodies held all 16 and every other request got 503.
    let n = NodeProc::start(tmp.path(), &["--max-in-service", "16"]);
    let mut slow = Vec::new();
    for i in 0..50 {
        let mut s = n.connect();
        write!(
            s,
            "PUT /v0/entity?id=slow{i} HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\nx"
        )
        .unwrap();
        slow.push(s);
    }
    for _ in 0..50 {
        // Headers that never end.
        let mut s = n.connect();
        s.write_all(b"GET /v0/entity?id=x HTTP/1.1\r\nHost: x\r\nX-Slow: 1\r\n")
            .unwrap();
        slow.push(s);
    }
    std::thread::sleep(std::time::Duration::from_millis(300));
    let mut c = n.connect();
    for i in 0..200 {
        support::send(&mut c, "PUT", &format!("/v0/entity?id=ok{i}"), b"v");
        let r = support::read_response(&mut c);
        assert_eq!(
            r.status,
            201,
            "PUT {i}: {}",
            String::from_utf8_lossy(&r.body)
        );
        support::send(&mut c, "GET", &format!("/v0/entity?id=ok{i}"), b"");
        assert_eq!(support::read_response(&mut c).status, 200, "GET {i}");
    }
    drop(slow);
}
