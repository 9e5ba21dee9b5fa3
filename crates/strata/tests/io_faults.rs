//! I/O errors injected for real (issue 15): the node runs under libfiu's
//! `fiu-run -x` (Debian's fiu-utils: a preloaded library that makes chosen
//! POSIX calls fail), and `fiu-ctrl` turns a failure on in the running
//! process. A write whose fsync failed, or whose WAL write failed, is never
//! acknowledged: it is answered 507 with the cause, the store goes read-only
//! and stays so once the failure is gone (an fsync is never retried as if
//! the data were safe), reads keep working, and a restart without the fault
//! finds every acknowledged write.
//!
//! Without fiu-run (.ci/run installs fiu-utils) the tests fail, saying why.

mod support;

use std::path::Path;
use std::process::Command;

use support::NodeProc;

fn fiu_available() -> bool {
    ["fiu-run", "fiu-ctrl"].iter().all(|t| {
        Command::new("sh")
            .args(["-c", &format!("command -v {t}")])
            .output()
            .is_ok_and(|o| o.status.success())
    })
}

fn under_fiu(data: &Path) -> NodeProc {
    let mut cmd = Command::new("fiu-run");
    cmd.args(["-x", env!("CARGO_BIN_EXE_strata")]);
    NodeProc::start_with(cmd, data, &[])
}

/// `fiu-ctrl -c "enable|disable name=FAILPOINT,failinfo=5"` on the node: the
/// call fails with EIO (5).
fn fiu(node: &NodeProc, what: &str, failpoint: &str) {
    let spec = match what {
        "enable" => format!("enable name={failpoint},failinfo=5"),
        _ => format!("disable name={failpoint}"),
    };
    let st = Command::new("fiu-ctrl")
        .args(["-c", &spec, &node.child.id().to_string()])
        .status()
        .expect("run fiu-ctrl");
    assert!(st.success(), "fiu-ctrl {spec}");
}

fn put(node: &NodeProc, key: &str) -> (u16, String) {
    let r = node.request("PUT", &format!("/v0/entity?id={key}"), key.as_bytes());
    (r.status, String::from_utf8_lossy(&r.body).into_owned())
}

/// Acknowledge some writes, make `failpoint` fail with EIO, and check what
/// the node does; then a restart without the fault.
fn a_failing_call_makes_the_node_read_only(failpoint: &str, cause: &str) {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let node = under_fiu(&data);
    let acked: Vec<String> = (0..50).map(|i| format!("k{i}")).collect();
    for k in &acked {
        assert_eq!(put(&node, k).0, 201, "{k}");
    }
    fiu(&node, "enable", failpoint);
    let (status, body) = put(&node, "during");
    assert_eq!(status, 507, "{failpoint}: {body}");
    assert!(
        body.contains(cause),
        "{failpoint}: the 507 does not name the cause: {body}"
    );
    // The fault is gone, but what the kernel held of the log may not be on
    // disk: the store stays read-only rather than trust a later fsync.
    fiu(&node, "disable", failpoint);
    let (status, body) = put(&node, "after");
    assert_eq!(
        status, 507,
        "{failpoint}: a write was taken after the failure: {body}"
    );
    assert!(body.contains("read-only"), "{body}");
    // Reads keep working.
    for k in &acked {
        let r = node.request("GET", &format!("/v0/entity?id={k}"), b"");
        assert_eq!((r.status, r.body.as_slice()), (200, k.as_bytes()), "{k}");
    }
    drop(node);
    // A restart without the fault: every acknowledged write is there, and
    // the store takes writes again.
    let node = NodeProc::start(&data, &[]);
    for k in &acked {
        let r = node.request("GET", &format!("/v0/entity?id={k}"), b"");
        assert_eq!(
            (r.status, r.body.as_slice()),
            (200, k.as_bytes()),
            "{k} after restart"
        );
    }
    assert_eq!(put(&node, "restarted").0, 201);
}

#[test]
fn a_failed_fsync_is_never_acknowledged_nor_retried() {
    if !fiu_available() {
        panic!("io_faults: fiu-run/fiu-ctrl are missing; .ci/run installs them (apt-get install fiu-utils)");
    }
    a_failing_call_makes_the_node_read_only("posix/io/sync/fdatasync", "fsync failed");
}

#[test]
fn a_failed_wal_write_is_never_acknowledged() {
    if !fiu_available() {
        panic!("io_faults: fiu-run/fiu-ctrl are missing; .ci/run installs them (apt-get install fiu-utils)");
    }
    a_failing_call_makes_the_node_read_only("posix/io/rw/pwrite", "Input/output error");
}

/// Node `n`'s own `rk…` keys (its store only).
fn own_keys(n: &NodeProc) -> usize {
    let r = n.request("GET", "/v0/entities?start=rk&end=rl", b"");
    assert_eq!(r.status, 200);
    r.chunks.len()
}

/// One node of three goes read-only (its WAL fsync fails): it says so in
/// `/v0/status` and still serves reads; writes with `ack=2` keep being
/// acknowledged through every node, itself included, because coordinators
/// send them to the other replicas (and keep hints for it); restarted
/// without the fault, hints and a repair bring it every write it missed.
#[test]
fn a_read_only_node_reports_itself_and_writes_go_around_it() {
    if !fiu_available() {
        panic!("io_faults: fiu-run/fiu-ctrl are missing; .ci/run installs them (apt-get install fiu-utils)");
    }
    let mut c = support::ClusterProcs::start_wrapped(
        3,
        &["--anti-entropy-settle-ms", "200"],
        Some(Box::new(|i| {
            if i == 2 {
                let mut cmd = Command::new("fiu-run");
                cmd.args(["-x", env!("CARGO_BIN_EXE_strata")]);
                cmd
            } else {
                Command::new(env!("CARGO_BIN_EXE_strata"))
            }
        })),
    );
    let put = |n: &NodeProc, k: &str| n.request("PUT", &format!("/v0/entity?id={k}"), k.as_bytes());
    for i in 0..20 {
        assert_eq!(put(c.node(i % 3), &format!("rk{i:03}")).status, 201);
    }
    fiu(c.node(2), "enable", "posix/io/sync/fdatasync");
    // Writes through every node, the read-only one too: all acknowledged.
    for i in 20..80 {
        let r = put(c.node(i % 3), &format!("rk{i:03}"));
        assert_eq!(
            r.status,
            201,
            "rk{i:03} through node {}: {}",
            i % 3,
            String::from_utf8_lossy(&r.body)
        );
    }
    fiu(c.node(2), "disable", "posix/io/sync/fdatasync");
    // It says why it takes no writes, and still serves reads.
    let r = c.node(2).request("GET", "/v0/status", b"");
    let said = String::from_utf8_lossy(&r.body);
    assert_eq!(r.status, 200, "{said}");
    assert!(
        said.contains("writes refused") && said.contains("read-only"),
        "{said}"
    );
    for i in 0..80 {
        let r = c
            .node(2)
            .request("GET", &format!("/v0/entity?id=rk{i:03}"), b"");
        assert_eq!(r.status, 200, "rk{i:03} read through the read-only node");
    }
    assert!(
        own_keys(c.node(2)) < 80,
        "the read-only node wrote nothing new"
    );
    // Restarted without the fault: the peers' hints bring it the writes
    // they coordinated, anti-entropy those it coordinated itself (it
    // could keep no hint for itself on a disk that failed).
    c.kill(2);
    c.wrap = None;
    c.start_node(2);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while own_keys(c.node(2)) < 80 {
        assert!(
            std::time::Instant::now() < deadline,
            "node 3 holds {} of 80",
            own_keys(c.node(2))
        );
        // Once its trees are built, a repair exchanges what differs.
        c.node(2).operate("POST", "/v0/cluster/repair", b"");
        std::thread::sleep(std::time::Duration::from_millis(300));
    }
}

/// The disk of one node of three fails every read (`pread` answers EIO) while
/// it runs. No read answers wrong data: through that node, a quorum read is
/// answered from the other replicas; a read that only that node's store can
/// answer (`ack=1&from=1` on a key it holds first) fails with 500 naming the
/// table file and offset. The tables stay (an unreadable block is not known
/// to be damaged), the failures are counted, and once the disk reads again
/// the node answers everything itself.
#[test]
fn a_disk_that_fails_reads_is_answered_around() {
    if !fiu_available() {
        panic!("io_faults: fiu-run/fiu-ctrl are missing; .ci/run installs them (apt-get install fiu-utils)");
    }
    let c = support::ClusterProcs::start_wrapped(
        3,
        // Small memtables, so that the keys are in tables; no cache worth
        // the name, so that reads go to the disk.
        &["--memtable-bytes", "65536", "--block-cache-bytes", "4096"],
        Some(Box::new(|i| {
            if i == 2 {
                let mut cmd = Command::new("fiu-run");
                cmd.args(["-x", env!("CARGO_BIN_EXE_strata")]);
                cmd
            } else {
                Command::new(env!("CARGO_BIN_EXE_strata"))
            }
        })),
    );
    let value = |i: usize| format!("v{i:04}-{}", "x".repeat(200));
    let n = 600;
    for i in 0..n {
        let r = c.node(i % 3).request(
            "PUT",
            &format!("/v0/entity?id=ek{i:04}"),
            value(i).as_bytes(),
        );
        assert_eq!(r.status, 201);
    }
    let metric = |name: &str| -> f64 {
        let r = c.node(2).request("GET", "/metrics", b"");
        String::from_utf8_lossy(&r.body)
            .lines()
            .filter(|l| l.starts_with(name))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .sum()
    };
    assert!(
        metric("strata_engine_flushes_total") >= 1.0,
        "node 3 never flushed: the reads would not reach the disk"
    );
    let get = |q: &str, i: usize| {
        let r = c
            .node(2)
            .request("GET", &format!("/v0/entity?id=ek{i:04}{q}"), b"");
        (r.status, String::from_utf8_lossy(&r.body).into_owned())
    };

    fiu(c.node(2), "enable", "posix/io/rw/pread");
    let mut failed = 0;
    for i in 0..n {
        let (st, body) = get("", i);
        assert_eq!(
            (st, body.as_str()),
            (200, value(i).as_str()),
            "ek{i:04}, quorum read through node 3"
        );
        let (st, body) = get("&ack=1&from=1", i);
        match st {
            200 => assert_eq!(body, value(i), "ek{i:04}: wrong data"),
            500 => {
                assert!(
                    body.contains(".sst")
                        && body.contains("offset")
                        && body.contains("Input/output error"),
                    "ek{i:04}: the 500 does not name file, offset and cause: {body}"
                );
                failed += 1;
            }
            s => panic!("ek{i:04}: {s} {body}"),
        }
    }
    assert!(failed > 0, "no read reached node 3's failing disk");
    let errors = metric("strata_engine_read_errors_total");
    assert!(
        errors >= failed as f64,
        "{errors} read errors counted, {failed} reads failed"
    );
    assert_eq!(metric("strata_engine_tables_quarantined_total"), 0.0);

    fiu(c.node(2), "disable", "posix/io/rw/pread");
    for i in 0..n {
        let (st, body) = get("&ack=1&from=1", i);
        assert_eq!(
            (st, body.as_str()),
            (200, value(i).as_str()),
            "ek{i:04} once the disk reads again"
        );
    }
}
