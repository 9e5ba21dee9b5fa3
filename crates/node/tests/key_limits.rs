//! The documented key limits are the real ones (docs/operations.md,
//! docs/api.md), on a real node: a key of exactly `--max-key-bytes` works,
//! ASCII or binary percent-encoded, and one byte more gets 414 with a
//! body naming the limit; a limit no URI could carry is refused at start.
//! (Values of exactly the limit on a cluster: `crates/strata/tests/limits.rs`.)

mod support;

use support::Node;

/// Percent-encode every byte: the longest a key's URI can be.
fn encode_all(key: &[u8]) -> String {
    key.iter().map(|b| format!("%{b:02X}")).collect()
}

const KEY_LIMIT: usize = 16 << 10;

#[test]
fn keys_of_exactly_the_limit_work_ascii_and_binary() {
    let tmp = tempfile::tempdir().unwrap();
    let n = Node::start(tmp.path(), &[]);
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
    let err = match Node::try_start(tmp.path(), &["--max-key-bytes", "65536"]) {
        Ok(_) => panic!("a node started with a key limit no URI can carry"),
        Err(e) => e,
    };
    assert!(err.contains("21800"), "{err}");
}
