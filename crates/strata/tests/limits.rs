//! The documented limits are the real ones (docs/operations.md,
//! docs/api.md), on real processes: a value of exactly `--max-value-bytes`
//! (32 MiB) is stored and replicated to all three replicas of a cluster,
//! and one byte more gets 413 naming the limit; slow clients never refuse
//! a well-behaved request. (Keys of exactly the limit:
//! `crates/node/tests/key_limits.rs`.)

mod support;

use support::{ClusterProcs, NodeProc};

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
