//! What `--versions-from-quorum` is for (issue 31), shown on real nodes:
//! three nodes at `ack=2&from=3`, sixteen clients sending PUT, GET and
//! DELETE on the same eight keys straight to every node in turn
//! (`strata cluster check --linearizable --client direct`), the history
//! checked key by key for linearizability. Stamping a write from the clock
//! alone and again after a replica held something newer lets a write take
//! effect twice: the check must find a violation with a witness. The
//! default (a write first learns the newest version from `ack` replicas)
//! must be linearizable on every key of the same run.

mod support;

use support::{run_strata, ClusterProcs};

/// `strata cluster check` of the shared keys on `c` for `secs` seconds:
/// (passed, its JSON summary).
fn check(c: &ClusterProcs, secs: u64, history: &std::path::Path) -> (bool, String) {
    let urls = c.urls.join(",");
    let duration = format!("{secs}s");
    run_strata(&[
        "cluster",
        "check",
        &urls,
        "--linearizable",
        "--client",
        "direct",
        "--from",
        "3",
        "--ack-write",
        "2",
        "--ack-read",
        "2",
        "--clients",
        "16",
        "--duration",
        &duration,
        "--history",
        history.to_str().unwrap(),
    ])
}

#[test]
fn a_write_stamped_twice_is_caught_and_versions_from_a_quorum_prevent_it() {
    let dir = tempfile::tempdir().unwrap();
    // The old way first: violations within a short run of this many
    // writers (every key of a 20 s debug run when first found).
    let c = ClusterProcs::start(3, &["--replication", "3", "--versions-from-quorum=false"]);
    let (ok, out) = check(&c, 20, &dir.path().join("old.jsonl"));
    drop(c);
    eprintln!("clock alone:\n{out}");
    assert!(!ok, "the check passed:\n{out}");
    assert!(out.contains("): not linearizable — 8 keys"), "{out}");
    assert!(out.contains("NOT linearizable: these "), "{out}");

    let c = ClusterProcs::start(3, &["--replication", "3"]);
    let (ok, out) = check(&c, 20, &dir.path().join("new.jsonl"));
    drop(c);
    eprintln!("versions from a quorum:\n{out}");
    assert!(ok, "{out}");
    assert!(out.contains("): linearizable — 8 keys"), "{out}");
}
