//! Tests of `local`: the launcher against a stand-in node (ports, the secret, restarts, signals, the logs' tails).

use super::*;
use std::os::unix::fs::PermissionsExt;

#[test]
fn the_secret_is_fresh_hex_and_private() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("cluster-secret");
    std::fs::write(&p, "old").unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).unwrap();
    write_secret(&p).unwrap();
    let s = std::fs::read_to_string(&p).unwrap();
    assert_eq!(s.trim().len(), 64);
    assert!(s.trim().bytes().all(|b| b.is_ascii_hexdigit()));
    let mode = std::fs::metadata(&p).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    write_secret(&p).unwrap();
    assert_ne!(std::fs::read_to_string(&p).unwrap(), s);
}

#[test]
fn ports_are_consecutive_or_free_and_distinct() {
    assert_eq!(node_ports(7001, 3).unwrap().0, vec![7001, 7002, 7003]);
    assert!(node_ports(65534, 3).is_err());
    let (free, held) = node_ports(0, 5).unwrap();
    assert_eq!(held.len(), 5);
    let mut d = free.clone();
    d.sort();
    d.dedup();
    assert_eq!(d.len(), 5);
    assert!(free.iter().all(|&p| p != 0));
}

/// A `strata` that prints its arguments and exits at once: the error
/// names the node and ends with its log, where the flags show.
#[test]
fn a_node_that_exits_is_reported_with_its_log() {
    let d = tempfile::tempdir().unwrap();
    let mut sh = Command::new("sh");
    sh.args(["-c", "echo \"args: $*\" >&2; exit 3", "strata"]);
    let mut o = ClusterOptions::new(3, d.path());
    o.replication = Some(2);
    o.serve_args = vec!["--durability".into(), "none".into()];
    o.node_args = vec![vec![], vec!["--test-clock-offset-ms".into(), "-250".into()]];
    o.ready_timeout = Duration::from_secs(10);
    let e = LocalCluster::start(&o, sh)
        .err()
        .expect("the stand-in exits");
    assert!(e.contains("node-1 exited"), "{e}");
    assert!(e.contains("args: serve --listen 127.0.0.1:"), "{e}");
    assert!(e.contains("--cluster http://127.0.0.1:"), "{e}");
    assert!(e.contains("--replication 2 --durability none"), "{e}");
    assert!(d.path().join("cluster-secret").exists());
    let log2 = std::fs::read_to_string(d.path().join("node-2.log")).unwrap();
    assert!(
        log2.contains("--durability none --test-clock-offset-ms -250"),
        "{log2}"
    );
    assert!(log2.contains("--advertise http://127.0.0.1:"), "{log2}");
    assert!(log2.contains(&format!(
        "--cluster-secret-file {}",
        d.path().join("cluster-secret").display()
    )));
}

fn states(url: &str) -> Vec<String> {
    match strata_client::control::cluster_view(url, Duration::from_secs(2)) {
        Ok(v) => v.states(),
        Err(e) => vec![e],
    }
}

/// Wait (at most 15 s) until `url`'s view is `want`.
fn until_view(url: &str, want: &[&str]) {
    let end = Instant::now() + Duration::from_secs(15);
    loop {
        let got = states(url);
        if got == want {
            return;
        }
        assert!(Instant::now() < end, "{url} sees {got:?}, not {want:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn status_code(url: &str) -> Result<u16, String> {
    strata_client::control::get(url, "/v0/status", Duration::from_millis(500)).map(|r| r.status)
}

#[test]
fn nodes_start_die_come_back_freeze_and_stop() {
    let d = tempfile::tempdir().unwrap();
    let mut o = ClusterOptions::new(3, d.path().join("c"));
    o.node_args = vec![vec![], vec!["--test-clock-offset-ms".into(), "-250".into()]];
    let mut c = LocalCluster::start(&o, crate::nemesis::fake_node::command()).unwrap();
    let urls = c.urls();
    assert_eq!(urls.len(), 3);
    assert_eq!(c.advertised(), urls);
    for u in &urls {
        assert_eq!(status_code(u), Ok(200));
    }
    until_view(&urls[0], &["self", "up", "up"]);
    let mode = std::fs::metadata(c.secret_file())
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
    assert!(c.args(1).join(" ").ends_with("--test-clock-offset-ms -250"));
    assert!(c.data_dir(2).ends_with("c/node-3"));

    c.kill(1).unwrap();
    assert!(!c.is_running(1));
    assert!(status_code(&urls[1]).is_err());
    assert!(c.kill(1).is_err());
    until_view(&urls[0], &["self", "down", "up"]);
    c.restart(1).unwrap();
    assert!(c.restart(1).is_err(), "restarting a running node");
    assert_eq!(status_code(&urls[1]), Ok(200));
    until_view(&urls[0], &["self", "up", "up"]);
    let log = std::fs::read_to_string(c.log_path(1)).unwrap();
    assert_eq!(
        log.matches("--- strata-lab: starting node-2").count(),
        2,
        "{log}"
    );
    assert_eq!(log.matches("strata node listening on").count(), 2, "{log}");

    c.stop(2).unwrap();
    assert!(c.is_running(2));
    assert!(
        status_code(&urls[2]).is_err(),
        "a stopped node answers nothing"
    );
    c.cont(2).unwrap();
    assert_eq!(status_code(&urls[2]), Ok(200));

    // A stopped node still terminates.
    c.stop(0).unwrap();
    let st = c.terminate(0).unwrap();
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&st),
        Some(libc::SIGTERM)
    );
    assert!(!c.is_running(0));
    c.restart(0).unwrap();

    assert!(c.partition(0).is_err(), "not proxied");
    let all = c.terminate_all();
    assert!(all.iter().all(|r| matches!(r, Some(Ok(_)))), "{all:?}");
    assert!(c.terminate_all().iter().all(Option::is_none));
    c.restart(2).unwrap();
    let pid = c.pid(2).unwrap() as libc::pid_t;
    c.shutdown();
    // SAFETY: signal 0 only asks whether the pid exists.
    assert_eq!(unsafe { libc::kill(pid, 0) }, -1, "shutdown reaps");
}

#[test]
fn a_partition_through_the_proxy_is_a_real_silence() {
    let d = tempfile::tempdir().unwrap();
    let mut o = ClusterOptions::new(3, d.path());
    o.proxied = true;
    let c = LocalCluster::start(&o, crate::nemesis::fake_node::command()).unwrap();
    let (urls, adv) = (c.urls(), c.advertised());
    assert!(urls.iter().zip(&adv).all(|(u, a)| u != a));
    assert!(c
        .args(0)
        .join(" ")
        .contains(&format!("--cluster {}", adv.join(","))));
    until_view(&urls[0], &["self", "up", "up"]);
    until_view(&urls[2], &["up", "up", "self"]);

    c.partition(2).unwrap();
    until_view(&urls[0], &["self", "up", "down"]);
    until_view(&urls[1], &["up", "self", "down"]);
    until_view(&urls[2], &["down", "down", "self"]);
    // Clients still reach node 3 directly.
    assert_eq!(status_code(&urls[2]), Ok(200));
    let s = c.proxy_stats(2).unwrap();
    assert!(s.black_holed >= 2 && s.bytes_dropped > 0, "{s:?}");
    assert!(c.proxy_stats(0).unwrap().bytes_dropped > 0);
    // Seen from here, as from node 1, node 3's advertised URL goes
    // nowhere, while its client URL answers.
    let e = status_code(&adv[2]).unwrap_err();
    assert!(e.contains("timed out") || e.contains("refused"), "{e}");
    assert_eq!(status_code(&urls[2]), Ok(200));

    c.heal(2).unwrap();
    until_view(&urls[0], &["self", "up", "up"]);
    until_view(&urls[2], &["up", "up", "self"]);
    assert_eq!(c.proxy_stats(2).unwrap().black_holed, 0);
    drop(c);
}
