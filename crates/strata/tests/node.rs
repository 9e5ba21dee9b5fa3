//! Integration tests of `strata serve`: the real binary on an ephemeral
//! port, a temporary data directory, raw HTTP/1.1.

mod support;

use std::time::{Duration, Instant};

use support::{read_response, send, NodeProc};

#[test]
fn data_survives_restart_and_is_gone_after_wipe() {
    let data = tempfile::tempdir().unwrap();
    let dir = data.path().join("db");
    let node = NodeProc::start(&dir, &[]);
    for i in 0..200 {
        assert_eq!(
            node.request(
                "PUT",
                &format!("/v0/entity?id=k{i}"),
                format!("v{i}").as_bytes()
            )
            .status,
            201
        );
    }
    assert_eq!(node.stop(), Some(0), "graceful exit");
    let node = NodeProc::start(&dir, &[]);
    let r = node.request("GET", "/v0/entity?id=k199", b"");
    assert_eq!((r.status, r.body.as_slice()), (200, &b"v199"[..]));
    assert_eq!(node.stop(), Some(0));
    std::fs::remove_dir_all(&dir).unwrap();
    let node = NodeProc::start(&dir, &[]);
    assert_eq!(node.request("GET", "/v0/entity?id=k199", b"").status, 404);
}

#[test]
fn overload_gets_503_with_retry_after_not_a_queue() {
    let data = tempfile::tempdir().unwrap();
    // One request in service, none waiting: a slow range scan holds the
    // only place, so concurrent requests are refused at once.
    let node = NodeProc::start(
        data.path(),
        &[
            "--max-in-service",
            "1",
            "--max-waiting",
            "0",
            "--durability",
            "none",
        ],
    );
    // 40 MB: more than the socket buffers between node and client hold.
    let mut fill = node.connect();
    for i in 0..4000 {
        send(
            &mut fill,
            "PUT",
            &format!("/v0/entity?id=r{i:05}"),
            &[b'v'; 10_000],
        );
        assert_eq!(read_response(&mut fill).status, 201);
    }
    // Start a range read and do not read its body: the scan thread blocks on
    // the full channel and keeps its place in service.
    let mut hog = node.connect();
    send(&mut hog, "GET", "/v0/entities?start=r", b"");
    std::thread::sleep(Duration::from_millis(300));
    // No place in service and no room to wait: refused, not queued.
    let r = node.request("GET", "/v0/entity?id=r00001", b"");
    assert_eq!(r.status, 503);
    assert_eq!(r.header("retry-after"), Some("1"));
    let m = String::from_utf8(node.request("GET", "/metrics", b"").body).unwrap();
    assert!(
        m.contains("strata_admission_refused_queue_full_total 1"),
        "{m}"
    );
    // Status is not subject to admission.
    assert_eq!(node.request("GET", "/v0/status", b"").status, 200);
    drop(hog);
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(node.request("GET", "/v0/entity?id=r00001", b"").status, 200);
}

#[test]
fn metrics_count_requests_admission_engine_and_process() {
    let data = tempfile::tempdir().unwrap();
    let node = NodeProc::start(data.path(), &[]);
    for i in 0..5 {
        assert_eq!(
            node.request("PUT", &format!("/v0/entity?id=m{i}"), b"v")
                .status,
            201
        );
    }
    assert_eq!(node.request("GET", "/v0/entity?id=nope", b"").status, 404);
    let r = node.request("GET", "/metrics", b"");
    assert_eq!(r.status, 200);
    let text = String::from_utf8(r.body).unwrap();
    let value = |line_start: &str| -> f64 {
        text.lines()
            .find(|l| l.starts_with(line_start))
            .unwrap_or_else(|| panic!("no {line_start} in\n{text}"))
            .rsplit(' ')
            .next()
            .unwrap()
            .parse()
            .unwrap()
    };
    assert_eq!(
        value("strata_http_requests_total{method=\"PUT\",status=\"201\"}"),
        5.0
    );
    assert_eq!(
        value("strata_http_requests_total{method=\"GET\",status=\"404\"}"),
        1.0
    );
    assert_eq!(
        value("strata_http_request_duration_seconds_count{method=\"PUT\"}"),
        5.0
    );
    assert_eq!(value("strata_admission_admitted_at_once_total"), 6.0);
    assert_eq!(value("strata_engine_wal_fsync_duration_seconds_count"), 5.0);
    assert_eq!(value("strata_engine_commit_group_writes_sum"), 5.0);
    assert_eq!(value("strata_engine_tables{level=\"0\"}"), 0.0);
    assert!(value("process_resident_memory_bytes") > 1e6);
    assert!(value("process_open_fds") > 3.0);
    assert!(text.trim_end().ends_with("# EOF"));
    // Every name the lab reads is served (those of peers: by a cluster,
    // tests/cluster.rs).
    for name in strata_api::metrics::ALL {
        if !strata_api::metrics::CLUSTER_ONLY.contains(name) {
            assert!(
                support::serves(&text, name),
                "{name} is not served:\n{text}"
            );
        }
    }
    // And every name the simulator's calibration reads.
    use strata_sim::calibrate::names as sim;
    for name in sim::READS {
        if !sim::CLUSTER_ONLY.contains(name) {
            assert!(
                support::serves(&text, name),
                "{name} (read by the simulator) is not served:\n{text}"
            );
        }
    }
    for family in sim::HISTOGRAMS {
        for part in ["_bucket", "_sum", "_count"] {
            let name = format!("{family}{part}");
            assert!(
                support::serves(&text, &name),
                "{name} (read by the simulator) is not served:\n{text}"
            );
        }
    }
    // Every metric name follows the conventions.
    for l in text.lines().filter(|l| l.starts_with("# TYPE")) {
        let mut f = l.split(' ').skip(2);
        let (name, kind) = (f.next().unwrap(), f.next().unwrap());
        assert!(
            name.starts_with("strata_") || name.starts_with("process_"),
            "{l}"
        );
        assert!(!name.ends_with("_total"), "{l}: the encoder adds _total");
        if kind == "histogram" {
            assert!(
                name.ends_with("_seconds") || name.ends_with("_writes"),
                "{l}"
            );
        }
    }
}

#[test]
fn cpu_profile_as_pprof_protobuf_and_flamegraph_svg() {
    let data = tempfile::tempdir().unwrap();
    let node = NodeProc::start(data.path(), &["--durability", "none"]);
    let addr = node.addr;
    // Keep the node busy while it profiles.
    let load = std::thread::spawn(move || {
        let t = Instant::now();
        let mut n = 0;
        while t.elapsed() < Duration::from_millis(4500) {
            let mut s = std::net::TcpStream::connect(addr).unwrap();
            s.set_nodelay(true).unwrap();
            send(&mut s, "PUT", &format!("/v0/entity?id=x{n}"), b"v");
            read_response(&mut s);
            n += 1;
        }
    });
    let r = node.request("GET", "/debug/pprof/profile?seconds=1", b"");
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some("application/octet-stream"));
    // A pprof Profile message starts with field 1 (sample_type), wire type 2.
    assert!(
        r.body.len() > 100 && r.body[0] == 0x0a,
        "{} bytes",
        r.body.len()
    );
    let r = node.request("GET", "/debug/pprof/profile?seconds=2&format=svg", b"");
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some("image/svg+xml"));
    let svg = String::from_utf8_lossy(&r.body);
    assert!(svg.contains("<svg"), "{}", &svg[..svg.len().min(300)]);
    load.join().unwrap();
    assert_eq!(
        node.request("GET", "/debug/pprof/profile?seconds=0", b"")
            .status,
        400
    );
    assert_eq!(
        node.request("GET", "/debug/pprof/profile?format=png", b"")
            .status,
        400
    );
}

#[test]
fn open_loop_load_against_the_node() {
    let data = tempfile::tempdir().unwrap();
    let node = NodeProc::start(data.path(), &["--durability", "none"]);
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_strata"))
        .args(["load", &format!("http://{}", node.addr)])
        .args([
            "--rate",
            "500",
            "--duration",
            "2",
            "--connections",
            "4",
            "--keys",
            "1000",
            "--out",
        ])
        .arg(data.path().join("report"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("1000 requests in"), "{text}");
    assert!(
        text.contains("Status codes: 201: 1000; connection errors: 0"),
        "{text}"
    );
    // The writes are really there.
    let r = node.request("GET", "/metrics", b"");
    let m = String::from_utf8(r.body).unwrap();
    assert!(
        m.contains("strata_http_requests_total{method=\"PUT\",status=\"201\"} 1000"),
        "{m}"
    );
}

/// A node turns transparent huge pages off for itself (its allocator's
/// arenas would be filled out to 2 MiB pages by khugepaged): the kernel
/// says so in /proc/PID/status, and 8 MiB of writes through 4 MiB
/// memtables (whose chunks ask for huge pages), flushes and reads add no
/// memory in huge pages to what the process had when it started serving
/// (the runtime's first pages, faulted before the node turned them off).
#[test]
fn a_node_keeps_its_memory_off_transparent_huge_pages() {
    let data = tempfile::tempdir().unwrap();
    let node = NodeProc::start(data.path(), &["--memtable-bytes", "4194304"]);
    let pid = node.child.id();
    let huge_kib = || {
        let rollup = std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup")).unwrap();
        let line = rollup
            .lines()
            .find(|l| l.starts_with("AnonHugePages:"))
            .unwrap()
            .to_string();
        line.split_whitespace()
            .nth(1)
            .unwrap()
            .parse::<u64>()
            .unwrap()
    };
    let at_start = huge_kib();
    let value = vec![b'v'; 4096];
    for i in 0..2048 {
        assert_eq!(
            node.request("PUT", &format!("/v0/entity?id=k{i}"), &value)
                .status,
            201
        );
    }
    for i in (0..2048).step_by(7) {
        assert_eq!(
            node.request("GET", &format!("/v0/entity?id=k{i}"), b"")
                .status,
            200
        );
    }
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let thp = status.lines().find(|l| l.starts_with("THP_enabled:"));
    assert_eq!(
        thp.map(|l| l.split_whitespace().nth(1)),
        Some(Some("0")),
        "{thp:?}"
    );
    let after = huge_kib();
    assert!(
        after <= at_start,
        "{at_start} KiB in huge pages at start, {after} KiB after the writes"
    );
    assert_eq!(node.stop(), Some(0));
}
