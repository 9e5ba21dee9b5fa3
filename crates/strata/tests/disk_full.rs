//! A node whose disk fills up (issue 15), on a real process and a real
//! filesystem that really fills: a 24 MiB tmpfs mounted for the test. The
//! node refuses writes with 507 and a body naming the cause, keeps serving
//! reads, reports it in /metrics, loses no acknowledged write, and takes
//! writes again by itself once space is freed, with no restart.
//!
//! Mounting needs root (CAP_SYS_ADMIN); without it the test says "not
//! checked" and why on stderr and passes without checking anything, unless
//! `STRATA_REQUIRE_TOOLS=1` (as `.ci/run` sets it) makes that a failure.

mod support;
#[path = "../../engine/tests/tmpfs/mod.rs"]
mod tmpfs;

use std::path::Path;
use std::time::{Duration, Instant};

use support::NodeProc;
use tmpfs::Tmpfs;

fn metric(node: &NodeProc, name: &str) -> f64 {
    let m = String::from_utf8(node.request("GET", "/metrics", b"").body).unwrap();
    m.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
        .unwrap_or_else(|| panic!("no {name} in /metrics"))
}

fn value(i: usize) -> Vec<u8> {
    format!("{i:08}").repeat(512).into_bytes()
}

/// Tables stored as built: the disk fills at the rate the values are
/// written, and a full compaction's outputs, which a codec would make a
/// fraction of the WAL, do not free room behind the test's back.
fn start(data: &Path) -> NodeProc {
    NodeProc::start(
        data,
        &["--memtable-bytes", "1048576", "--compression", "none"],
    )
}

#[test]
fn a_full_disk_refuses_writes_with_507_and_recovers_when_space_is_freed() {
    let Some(disk) = support::require_ok("root, to mount a tmpfs", Tmpfs::mount("24m")) else {
        return;
    };
    // Space this test frees later: a third of the disk.
    let filler = disk.dir.join("filler");
    std::fs::write(&filler, vec![1u8; 8 << 20]).unwrap();
    let data = disk.dir.join("data");
    let node = start(&data);

    // Write 4 KiB values until the node refuses one.
    let mut acked = Vec::new();
    let refusal = loop {
        let i = acked.len();
        assert!(i < 20_000, "24 MiB took 80 MB without a refusal");
        let r = node.request("PUT", &format!("/v0/entity?id=k{i}"), &value(i));
        if r.status != 201 {
            break r;
        }
        acked.push(i);
    };
    let body = String::from_utf8_lossy(&refusal.body).into_owned();
    assert_eq!(
        refusal.status, 507,
        "refused with {}: {body}",
        refusal.status
    );
    assert!(
        body.contains("No space left on device") || body.contains("no space"),
        "the 507 does not name the cause: {body}"
    );
    assert!(
        acked.len() > 100,
        "refused after only {} writes",
        acked.len()
    );
    // Still full: the next write is refused too, and so is a delete.
    let again = node.request("PUT", "/v0/entity?id=again", &value(0));
    assert_eq!(
        again.status,
        507,
        "{:?}",
        String::from_utf8_lossy(&again.body)
    );
    // Reads keep working: every acknowledged write is there.
    for &i in acked.iter().step_by(7).chain(acked.last()) {
        let r = node.request("GET", &format!("/v0/entity?id=k{i}"), b"");
        assert_eq!((r.status, r.body == value(i)), (200, true), "k{i}");
    }
    let refused_507 = {
        let m = String::from_utf8(node.request("GET", "/metrics", b"").body).unwrap();
        m.lines()
            .filter(|l| l.starts_with("strata_http_requests_total{") && l.contains("\"507\""))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .sum::<f64>()
    };
    assert!(refused_507 >= 2.0, "507s not counted in /metrics");
    assert!(metric(&node, "strata_engine_no_space_errors_total") >= 1.0);

    // Free space: writes are taken again, with no restart.
    std::fs::remove_file(&filler).unwrap();
    let t = Instant::now();
    let mut status = 0;
    while t.elapsed() < Duration::from_secs(30) {
        status = node.request("PUT", "/v0/entity?id=after", &value(1)).status;
        if status == 201 {
            break;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    assert_eq!(status, 201, "writes still refused after space was freed");
    assert_eq!(metric(&node, "strata_engine_no_space"), 0.0);
    for i in 0..50 {
        let r = node.request("PUT", &format!("/v0/entity?id=later{i}"), &value(i));
        assert_eq!(r.status, 201);
    }

    // Nothing acknowledged was lost, across a restart too.
    assert_eq!(node.stop(), Some(0));
    let node = start(&data);
    for &i in &acked {
        let r = node.request("GET", &format!("/v0/entity?id=k{i}"), b"");
        assert_eq!(
            (r.status, r.body == value(i)),
            (200, true),
            "k{i} after restart"
        );
    }
    let r = node.request("GET", "/v0/entity?id=later49", b"");
    assert_eq!((r.status, r.body == value(49)), (200, true));
}
