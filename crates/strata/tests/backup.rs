//! Backup and restore as a user runs them: `strata backup URL DIR` while
//! the node takes writes, `strata restore` into a fresh directory, a node
//! started on it, every key compared; and the same for a whole cluster
//! with `--all`, restarted from its restored directories.

mod support;

use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use support::{ClusterProcs, NodeProc};

/// `strata ARGS` as a local user of a node on its own (no credentials).
fn run(args: &[&str]) -> String {
    run_with(strata(), args)
}

fn strata() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_strata"));
    c.env_remove("STRATA_TOKEN");
    c
}

/// `strata ARGS` as the operator of a test cluster.
fn operate(args: &[&str]) -> String {
    run_with(support::strata_operator(), args)
}

fn run_with(mut cmd: Command, args: &[&str]) -> String {
    let out = cmd.args(args).output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "strata {args:?}: {text}");
    text
}

fn value(i: usize) -> String {
    format!("value-{i:06}-{}", "x".repeat(i % 50))
}

#[test]
fn a_node_backed_up_under_writes_restores_every_key() {
    let tmp = tempfile::tempdir().unwrap();
    // Small memtables: the backup holds tables and a WAL tail both.
    let n = NodeProc::start(&tmp.path().join("data"), &["--memtable-bytes", "262144"]);
    let url = format!("http://{}", n.addr);
    for i in 0..3000 {
        let r = n.request(
            "PUT",
            &format!("/v0/entity?id=k{i:06}"),
            value(i).as_bytes(),
        );
        assert_eq!(r.status, 201);
    }
    // A writer goes on during the backup; `acked` counts its keys.
    let stop = Arc::new(AtomicBool::new(false));
    let acked = Arc::new(AtomicUsize::new(3000));
    let w = {
        let (stop, acked, addr) = (stop.clone(), acked.clone(), n.addr);
        std::thread::spawn(move || {
            let mut s = std::net::TcpStream::connect(addr).unwrap();
            let mut i = 3000;
            while !stop.load(Ordering::Relaxed) {
                support::send(
                    &mut s,
                    "PUT",
                    &format!("/v0/entity?id=k{i:06}"),
                    value(i).as_bytes(),
                );
                assert_eq!(support::read_response(&mut s).status, 201);
                acked.store(i + 1, Ordering::Release);
                i += 1;
            }
        })
    };
    std::thread::sleep(std::time::Duration::from_millis(200));
    let before = acked.load(Ordering::Acquire);
    let dir = tmp.path().join("backup");
    let out = run(&["backup", &url, dir.to_str().unwrap()]);
    stop.store(true, Ordering::Relaxed);
    w.join().unwrap();
    assert!(out.contains("files"), "{out}");
    let node_backup = std::fs::read_dir(&dir)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    assert!(node_backup.join("backup.json").exists());
    // The node removed its checkpoint after the download.
    assert_eq!(
        std::fs::read_dir(tmp.path().join("data/backups"))
            .unwrap()
            .count(),
        0
    );
    let restored = tmp.path().join("restored");
    run(&[
        "restore",
        node_backup.to_str().unwrap(),
        restored.to_str().unwrap(),
    ]);
    // Restoring over a directory that holds something is refused.
    let again = strata()
        .args([
            "restore",
            node_backup.to_str().unwrap(),
            restored.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(!again.status.success());
    n.stop();
    let m = NodeProc::start(&restored, &[]);
    for i in 0..before {
        let r = m.request("GET", &format!("/v0/entity?id=k{i:06}"), b"");
        assert_eq!(
            r.status, 200,
            "key {i} of {before} acknowledged before the backup"
        );
        assert_eq!(r.body, value(i).as_bytes());
    }
    m.stop();
}

#[test]
fn a_cluster_backed_up_with_all_restarts_from_its_backup() {
    let mut c = ClusterProcs::start(3, &[]);
    let a = c.node(0);
    for i in 0..2000 {
        let r = a.request(
            "PUT",
            &format!("/v0/entity?id=c{i:05}&ack=3&from=3"),
            value(i).as_bytes(),
        );
        assert_eq!(r.status, 201);
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("backup");
    let out = operate(&["backup", &c.urls[1], dir.to_str().unwrap(), "--all"]);
    assert_eq!(
        out.lines().filter(|l| l.contains("files")).count(),
        3,
        "{out}"
    );
    // Every node restored into a fresh directory; the cluster restarted
    // on them, same URLs.
    for i in 0..3 {
        c.kill(i);
    }
    for i in 0..3 {
        let host = c.urls[i].trim_start_matches("http://").replace(':', "_");
        let restored = tmp.path().join(format!("restored-{i}"));
        run(&[
            "restore",
            dir.join(&host).to_str().unwrap(),
            restored.to_str().unwrap(),
        ]);
        c.dirs[i] = restored;
    }
    for i in 0..3 {
        c.start_node(i);
    }
    for i in 0..3 {
        assert!(c.wait_states(i, &["up"; 3], 10));
    }
    for node in 0..3 {
        let n = c.node(node);
        // Each node's own store, then reads at ack=from through it.
        for i in (0..2000).step_by(7) {
            let r = n.request(
                "GET",
                &format!("/v0/entities?start=c{i:05}&end=c{i:05}%00"),
                b"",
            );
            assert_eq!(
                r.body,
                format!("c{i:05}\n{}", value(i)).as_bytes(),
                "node {node} key {i}"
            );
        }
        for i in 0..2000 {
            let r = n.request("GET", &format!("/v0/entity?id=c{i:05}&ack=3&from=3"), b"");
            assert_eq!(r.status, 200, "key {i}");
            assert_eq!(r.body, value(i).as_bytes());
        }
    }
}
