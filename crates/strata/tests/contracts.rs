//! The contracts between the node and its readers, held against real nodes
//! (issue 30): every JSON body the operator's tools read
//! (`strata_api::operate`, `strata_api::view`) parses from a real node's
//! answer, and written back out has exactly the keys the node sent, at every
//! depth, so a field the node drops or adds outside the type (or a default
//! that hides a missing one) fails here. The metric names readers use are
//! held against a real `/metrics` in `tests/node.rs` and `tests/cluster.rs`.

mod support;

use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;
use strata_api::operate::{BackupFiles, Clock, ClusterView, Repaired, Started};
use support::{ClusterProcs, NodeProc};

/// Keys one side has and the other lacks, by path.
fn key_differences(path: &str, sent: &Value, typed: &Value, out: &mut Vec<String>) {
    match (sent, typed) {
        (Value::Object(a), Value::Object(b)) => {
            for k in a.keys().filter(|k| !b.contains_key(*k)) {
                out.push(format!("{path}.{k}: sent by the node, not in the type"));
            }
            for k in b.keys().filter(|k| !a.contains_key(*k)) {
                out.push(format!("{path}.{k}: in the type, not sent by the node"));
            }
            for (k, v) in a {
                if let Some(w) = b.get(k) {
                    key_differences(&format!("{path}.{k}"), v, w, out);
                }
            }
        }
        (Value::Array(a), Value::Array(b)) => {
            for (i, (v, w)) in a.iter().zip(b).enumerate() {
                key_differences(&format!("{path}[{i}]"), v, w, out);
            }
        }
        _ => {}
    }
}

/// `body` parsed as `T`, and checked to hold exactly `T`'s keys.
fn holds<T: DeserializeOwned + Serialize>(what: &str, body: &[u8]) -> T {
    let sent: Value = serde_json::from_slice(body)
        .unwrap_or_else(|e| panic!("{what}: not JSON ({e}): {}", String::from_utf8_lossy(body)));
    let typed: T = serde_json::from_value(sent.clone())
        .unwrap_or_else(|e| panic!("{what}: does not parse as its type: {e}\n{sent:#}"));
    let mut diff = Vec::new();
    key_differences(
        what,
        &sent,
        &serde_json::to_value(&typed).unwrap(),
        &mut diff,
    );
    assert!(diff.is_empty(), "{}\n{sent:#}", diff.join("\n"));
    typed
}

fn answer(n: &NodeProc, method: &str, path: &str, want: u16) -> Vec<u8> {
    let r = n.operate(method, path, b"");
    assert_eq!(
        r.status,
        want,
        "{method} {path}: {}",
        String::from_utf8_lossy(&r.body)
    );
    r.body
}

#[test]
fn every_operator_body_is_the_type_the_readers_parse() {
    let c = ClusterProcs::start(3, &["--test-clock-hook", "--anti-entropy-settle-ms", "100"]);
    for i in 0..30 {
        let r = c
            .node(i % 3)
            .request("PUT", &format!("/v0/entity?id=c{i}"), b"v");
        assert_eq!(r.status, 201);
    }
    support::trees_ready(&c, 0, 30);

    let v: ClusterView = holds("/v0/cluster", &answer(c.node(0), "GET", "/v0/cluster", 200));
    assert_eq!(v.head.members.len(), 3);
    assert!(!v.ranges.is_empty(), "{v:#?}");

    let r: Repaired = holds(
        "/v0/cluster/repair",
        &answer(c.node(0), "POST", "/v0/cluster/repair", 200),
    );
    assert!(!r.exchanges.is_empty(), "{r:#?}");
    // After the repair each range has a last exchange to show.
    let v: ClusterView = holds("/v0/cluster", &answer(c.node(0), "GET", "/v0/cluster", 200));
    assert!(
        v.ranges
            .iter()
            .flat_map(|r| &r.synced)
            .any(|s| s.last.is_some()),
        "{v:#?}"
    );

    let b: BackupFiles = holds("/v0/backup", &answer(c.node(1), "POST", "/v0/backup", 201));
    assert!(b.node.is_some() && b.tables.is_some(), "{b:#?}");
    let listed: BackupFiles = holds(
        "/v0/backup/ID",
        &answer(c.node(1), "GET", &format!("/v0/backup/{}", b.id), 200),
    );
    assert_eq!(listed.files, b.files);
    answer(c.node(1), "DELETE", &format!("/v0/backup/{}", b.id), 200);

    let k: Clock = holds(
        "/debug/clock",
        &answer(c.node(2), "GET", "/debug/clock", 200),
    );
    assert!(k.hook && k.hlc > 0);

    // A fourth node joins: the answer that starts the change, and the
    // change as its driver follows it.
    let dir = tempfile::tempdir().unwrap();
    let (d, _) = support::start_joining(dir.path(), &c.urls[0]);
    let s: Started = holds(
        "/v0/cluster/join",
        &answer(&d, "POST", "/v0/cluster/join", 202),
    );
    assert_eq!(s.target.members.len(), 4);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let v: ClusterView = holds("/v0/cluster", &answer(&d, "GET", "/v0/cluster", 200));
        let change = v.change.expect("the joining node drives its change");
        if change.done {
            assert!(!change.streams.is_empty(), "{change:#?}");
            assert!(change.error.is_none(), "{change:#?}");
            break;
        }
        assert!(std::time::Instant::now() < deadline, "{change:#?}");
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
}
