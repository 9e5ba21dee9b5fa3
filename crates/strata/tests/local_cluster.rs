//! The lab's local cluster launcher (`strata_lab::nemesis::local`) against
//! the real binary: three `strata serve --cluster` processes on loopback
//! that all answer `/v0/status`, a node killed and started again on its
//! own data, a graceful stop; and a proxied cluster in which a partitioned
//! node is seen as no longer up, then up again after the heal. The
//! launcher's own mechanics (ports, secret, signals, the proxy) are tested
//! in `crates/lab` against a stand-in node; these tests are about the real
//! node taking those flags.

use std::process::Command;
use std::time::{Duration, Instant};

use strata_client::control;
use strata_ctl::status;
use strata_lab::nemesis::local::{ClusterOptions, LocalCluster};

fn strata() -> Command {
    Command::new(env!("CARGO_BIN_EXE_strata"))
}

fn status_code(url: &str) -> Result<u16, String> {
    control::get(url, "/v0/status", Duration::from_secs(2)).map(|r| r.status)
}

/// The states `url` holds for every member, `self` for itself.
fn states(url: &str) -> Vec<String> {
    match status::fetch(url) {
        Ok(v) => v.states(),
        Err(e) => vec![e],
    }
}

/// Wait (at most `secs`) until `ok` holds for `url`'s view.
fn until(url: &str, secs: u64, what: &str, ok: impl Fn(&[String]) -> bool) {
    let end = Instant::now() + Duration::from_secs(secs);
    loop {
        let got = states(url);
        if ok(&got) {
            return;
        }
        assert!(Instant::now() < end, "{url} sees {got:?}; wanted {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// One cluster at a time: each picks free ports and lets them go just
/// before its nodes bind them, and a cluster starting beside it could take
/// one (seen once: "Address already in use").
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[test]
fn three_nodes_serve_and_a_killed_one_comes_back_on_its_data() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let o = ClusterOptions::new(3, dir.path());
    let mut c = LocalCluster::start(&o, strata()).unwrap_or_else(|e| panic!("{e}"));
    let urls = c.urls();
    assert_eq!(urls.len(), 3);
    for u in &urls {
        assert_eq!(status_code(u), Ok(200), "{u}");
    }
    let view = status::fetch(&urls[0]).unwrap();
    assert_eq!(view.head.members.len(), 3);
    assert_eq!(view.head.members.iter().filter(|m| m.is_self).count(), 1);
    assert_eq!(view.head.replication, 3);

    c.kill(1).unwrap();
    assert!(status_code(&urls[1]).is_err());
    c.restart(1).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(status_code(&urls[1]), Ok(200));
    assert!(c.data_dir(1).is_dir());

    let st = c.terminate(2).unwrap();
    assert!(st.success(), "SIGTERM is a graceful stop: {st}");
    c.restart(2).unwrap_or_else(|e| panic!("{e}"));
    for u in &urls {
        assert_eq!(status_code(u), Ok(200), "{u}");
    }
    c.shutdown();
}

#[test]
fn a_partitioned_node_is_seen_down_and_up_again_after_the_heal() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let mut o = ClusterOptions::new(3, dir.path());
    o.proxied = true;
    let c = LocalCluster::start(&o, strata()).unwrap_or_else(|e| panic!("{e}"));
    let urls = c.urls();
    let all_up = |v: &[String]| v.len() == 3 && v.iter().all(|s| s == "self" || s == "up");
    until(&urls[0], 30, "every member up", all_up);

    c.partition(2).unwrap();
    until(&urls[0], 60, "node-3 not up", |v| {
        v.len() == 3 && v[2] != "up" && v[1] == "up"
    });
    // Clients still reach the partitioned node directly.
    assert_eq!(status_code(&urls[2]), Ok(200));
    let s = c.proxy_stats(2).unwrap();
    assert!(s.bytes_dropped > 0, "{s:?}");

    c.heal(2).unwrap();
    until(&urls[0], 60, "every member up again", all_up);
    until(&urls[2], 60, "every member up again", all_up);
}
