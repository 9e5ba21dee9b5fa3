//! A host that moved under the sweep: each kind found from two trials
//! that differ in it, said in the verdict, the range widened; trials that
//! differ only as load explains find nothing.

use super::*;

fn at(rate: f64, started_s: f64, met: bool, f: impl Fn(usize, &mut ServerSample)) -> Trial {
    let mut t = trial(rate, 1, f);
    t.started_s = started_s;
    t.meets_slo = Some(met);
    t
}

fn sweep(trials: &[Trial], pass: f64) -> Verdict {
    let why = vec!["p99 20 ms > 10 ms".to_string()];
    let last = trials.iter().rfind(|t| t.meets_slo == Some(false)).unwrap();
    verdict(&Evidence {
        trials,
        deciding: Some((last, &why)),
        breaking_point: Some(pass),
        range: Some((pass, pass, 2)),
        machine: Machine::default(),
        unseen: &[],
        cut_short: None,
    })
}

#[test]
fn a_rising_load_on_a_still_host_moves_nothing() {
    let ts = [
        at(500.0, 0.0, true, |_, x| x.fsync_p99_ms = Some(1.0)),
        at(1000.0, 10.0, true, |_, x| x.fsync_p99_ms = Some(1.5)),
        at(2000.0, 20.0, false, |_, x| {
            x.fsync_p99_ms = Some(4.0);
            x.fsync_busy = Some(0.8);
        }),
    ];
    let v = sweep(&ts, 1000.0);
    assert!(v.host_moved.is_empty(), "{:?}", v.host_moved);
    assert_eq!(v.range, Some((1000.0, 1000.0, 2)));
    assert!(!v.text.contains("host changed"), "{}", v.text);
}

#[test]
fn a_quiet_disks_fsync_tail_that_moved_is_named_with_when() {
    let ts = [
        at(500.0, 0.0, true, |_, x| x.fsync_p99_ms = Some(0.5)),
        at(1000.0, 10.0, false, |_, x| x.fsync_p99_ms = Some(12.0)),
        at(750.0, 20.0, true, |_, x| x.fsync_p99_ms = Some(0.6)),
    ];
    let v = sweep(&ts, 750.0);
    let m = v
        .host_moved
        .iter()
        .find(|m| m.what == "fsync")
        .expect("fsync moved");
    assert_eq!((m.from, m.to, m.to_s), (0.5, 12.0, 10.0));
    assert!(v.text.contains("The host changed under the sweep: node-1's WAL, quiet, took 12 ms for its p99 fsync in the trial at 1000 req/s, 10 s in"), "{}", v.text);
}

#[test]
fn steal_that_came_and_went_is_named() {
    let ts = [
        at(500.0, 0.0, true, |_, x| x.allowed_cpus_stolen = Some(0.01)),
        at(1000.0, 10.0, false, |_, x| {
            x.allowed_cpus_stolen = Some(0.4)
        }),
    ];
    let v = sweep(&ts, 500.0);
    assert!(
        v.host_moved
            .iter()
            .any(|m| m.what == "steal" && m.node.as_deref() == Some("node-1")),
        "{:?}",
        v.host_moved
    );
    assert!(
        v.text.contains("the hypervisor took 40% of node-1's cores"),
        "{}",
        v.text
    );
}

fn p99(mut t: Trial, ms: f64) -> Trial {
    t.latency.p99_ms = ms;
    t
}

#[test]
fn repeats_that_disagree_widen_the_range() {
    // 1000 met, then failed; 800 failed far past a rate that met.
    let ts = [
        p99(at(1000.0, 0.0, true, |_, _| {}), 6.0),
        p99(at(2000.0, 10.0, false, |_, _| {}), 30.0),
        p99(at(1000.0, 20.0, false, |_, _| {}), 25.0),
        p99(at(800.0, 30.0, false, |_, _| {}), 40.0),
        p99(at(1500.0, 40.0, true, |_, _| {}), 8.0),
    ];
    let v = sweep(&ts, 1000.0);
    let m = v
        .host_moved
        .iter()
        .find(|m| m.what == "repeats")
        .expect("repeats");
    assert_eq!((m.from, m.to), (1500.0, 800.0));
    assert_eq!(
        v.range,
        Some((800.0, 1500.0, 2)),
        "every rate a run failed below, met above"
    );
    assert!(v.text.contains("widened to 800–1,500 req/s"), "{}", v.text);
}

/// At the breaking point's edge, two runs straddle the bound by a
/// little: the host did not move.
#[test]
fn repeats_on_the_edge_are_not_a_move() {
    let ts = [
        p99(at(1000.0, 0.0, true, |_, _| {}), 9.5),
        p99(at(1000.0, 10.0, false, |_, _| {}), 10.8),
        p99(at(1000.0, 20.0, false, |_, _| {}), 11.0),
    ];
    let v = sweep(&ts, 500.0);
    assert!(v.host_moved.is_empty(), "{:?}", v.host_moved);
}

#[test]
fn the_generators_own_lateness_at_a_lower_rate_is_named() {
    let mut low = at(500.0, 0.0, false, |_, _| {});
    low.generator_late_sends = (0.2 * low.requests as f64) as u64;
    let high = at(1000.0, 10.0, true, |_, _| {});
    let v = sweep(&[low, high], 1000.0);
    assert!(
        v.host_moved.iter().any(|m| m.what == "generator"),
        "{:?}",
        v.host_moved
    );
    assert!(
        v.text
            .contains("the generator's timer made 20.0% of sends late in the trial at 500 req/s"),
        "{}",
        v.text
    );
}

#[test]
fn a_search_cut_short_says_so() {
    let t = at(1000.0, 0.0, false, |_, _| {});
    let why = vec!["p99 20 ms > 10 ms".to_string()];
    let v = verdict(&Evidence {
        trials: std::slice::from_ref(&t),
        deciding: Some((&t, &why)),
        breaking_point: Some(500.0),
        range: None,
        machine: Machine::default(),
        unseen: &[],
        cut_short: Some(12),
    });
    assert!(
        v.text.contains("The search was cut short by --max-trials (12 trials) before it was done: the breaking point is the best so far, with no range."),
        "{}",
        v.text
    );
}
