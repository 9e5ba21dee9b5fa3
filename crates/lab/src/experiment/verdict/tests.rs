//! The verdict on trials built by hand: each cause named from its
//! evidence, the generator only on its own, "cannot tell" when nothing
//! crossed.

use super::*;
use crate::report::model::{NodeSummary, Percentiles, ServerSample, SlowPart};

fn trial(rate: f64, nodes: usize, f: impl Fn(usize, &mut ServerSample)) -> Trial {
    let per_node = (0..nodes)
        .map(|i| NodeSummary {
            url: format!("http://127.0.0.1:{}", 7001 + i),
            connections: 16,
            requests: 10_000,
            errors: 0,
            server: (0..5)
                .map(|k| {
                    let mut x = ServerSample {
                        t_s: k as f64,
                        cpu_cores: Some(0.3),
                        cpus: Some(2.0),
                        in_service: Some(1.0),
                        limit: Some(64.0),
                        waiting: Some(0.0),
                        fsync_busy: Some(0.2),
                        run_queue_cores: Some(0.01),
                        pause_max_ms: Some(2.0),
                        scrape_ms: Some(3.0),
                        stall_share: Some(0.0),
                        stalls: Some(0.0),
                        ..Default::default()
                    };
                    f(i, &mut x);
                    x
                })
                .collect(),
            server_cpu_cores: Some(0.3),
            server_rss_bytes: None,
            threads: vec![],
        })
        .collect();
    Trial {
        offered_rate: Some(rate),
        clients: None,
        started_s: 0.0,
        duration_s: 5.0,
        requests: (rate * 5.0) as u64,
        achieved_rate: rate,
        errors: 0,
        error_pct: 0.0,
        latency: Percentiles {
            p50_ms: 1.0,
            p99_ms: 20.0,
            ..Default::default()
        },
        per_op: vec![],
        spectrum: vec![],
        timeline: vec![],
        server: vec![],
        meets_slo: Some(false),
        late_sends: 0,
        max_lag_ms: 0.0,
        dropped_sends: 0,
        unfinished: 0,
        connections_opened: Some(16),
        capped_sends: 0,
        generator_cpu_cores: Some(0.2),
        machine_cpu_cores: None,
        distinct_keys: None,
        server_cpu_cores: Some(0.3),
        server_rss_bytes: None,
        per_node,
        slowest: None,
        generator_late_sends: 0,
        generator_run_queue_share: Some(0.0),
        client: None,
        resources: vec![],
        repeat: None,
        generator_threads: vec![],
        failed_statuses: Default::default(),
        first_failure: None,
    }
}

fn slow(parts: &[(&str, Option<&str>, f64)]) -> Slowest {
    Slowest {
        requests: 100,
        unanswered: 0,
        with_timing: 100,
        from_ms: 12.0,
        mean_ms: 15.0,
        parts: parts
            .iter()
            .map(|(w, n, s)| SlowPart {
                what: w.to_string(),
                node: n.map(str::to_string),
                share: *s,
                mean_ms: 15.0 * s,
                words: crate::load::slowest::words(w, *n),
            })
            .collect(),
        by_node: vec![],
    }
}

fn judge(trials: &[Trial], cores: Option<f64>) -> Verdict {
    let why = vec!["p99 20 ms > 10 ms".to_string()];
    let last = trials.last().unwrap();
    verdict(&Evidence {
        trials,
        deciding: Some((last, &why)),
        breaking_point: Some(1000.0),
        range: None,
        machine: Machine {
            cores,
            generator_cpus: cores,
        },
        unseen: &[],
    })
}

#[test]
fn a_busy_fsync_confirmed_by_the_slowest_is_named_with_its_node() {
    let mut t = trial(2000.0, 1, |_, x| {
        x.fsync_busy = Some(0.91);
        x.fsync_p99_ms = Some(16.384);
    });
    t.slowest = Some(slow(&[
        ("fsync", Some("node-1"), 0.6),
        ("applier", Some("node-1"), 0.3),
        ("network", Some("node-1"), 0.1),
    ]));
    let v = judge(&[t], None);
    assert_eq!(
        (v.cause.as_str(), v.node.as_deref()),
        ("fsync", Some("node-1")),
        "{}",
        v.text
    );
    assert!(v.text.contains("busy 91% of the time"), "{}", v.text);
    assert!(
        v.text.contains("Because 90% of the slowest 1%"),
        "{}",
        v.text
    );
    assert!(
        v.text.contains("busy: one fsync after another"),
        "{}",
        v.text
    );
    assert!(v.text.contains("interval"), "{}", v.text);
}

#[test]
fn the_knee_is_the_first_crossing_and_admission_yields_to_the_work_behind_it() {
    // Node 2's fsync crossed at 1,000; at 2,000 its admission filled too,
    // and most of the slowest time was spent waiting for admission.
    let low = trial(1000.0, 3, |i, x| {
        if i == 1 {
            x.fsync_busy = Some(0.8);
        }
    });
    let mut high = trial(2000.0, 3, |i, x| {
        if i == 1 {
            x.fsync_busy = Some(0.97);
            x.waiting = Some(12.0);
            x.in_service = Some(64.0);
        }
    });
    high.slowest = Some(slow(&[
        ("admit", Some("node-2"), 0.55),
        ("peer-fsync", Some("node-2"), 0.35),
        ("network", Some("node-1"), 0.1),
    ]));
    let v = judge(&[low, high], None);
    assert_eq!(
        (v.cause.as_str(), v.node.as_deref()),
        ("fsync", Some("node-2")),
        "{}",
        v.text
    );
    assert!(
        v.text
            .contains("crossed its threshold first at 1,000 req/s"),
        "{}",
        v.text
    );
    assert!(v.text.contains("admission of node-2"), "{}", v.text);
}

#[test]
fn a_limit_that_keeps_the_wal_from_batching_is_admission_not_fsync() {
    // One place in service: one write per fsync, the WAL busy, requests
    // queued for the place.
    let mut t = trial(2000.0, 1, |_, x| {
        x.waiting = Some(30.0);
        x.in_service = Some(1.0);
        x.limit = Some(1.0);
        x.fsync_busy = Some(0.95);
        x.writes_per_fsync = Some(1.0);
    });
    t.slowest = Some(slow(&[
        ("admit", Some("node-1"), 0.7),
        ("fsync", Some("node-1"), 0.3),
    ]));
    let v = judge(&[t.clone()], None);
    assert_eq!(v.cause, "admission", "{}", v.text);
    // The same queue with 64 places and groups of 9: the WAL's.
    for x in &mut t.per_node[0].server {
        x.limit = Some(64.0);
        x.in_service = Some(64.0);
        x.writes_per_fsync = Some(9.0);
    }
    let v = judge(&[t], None);
    assert_eq!(v.cause, "fsync", "{}", v.text);
}

#[test]
fn throttling_io_and_memory_are_read() {
    // A CPU quota holding the node back: the CPU's, not a pause.
    let mut t = trial(2000.0, 1, |_, x| {
        x.throttled_share = Some(0.4);
        x.pause_max_ms = Some(80.0);
    });
    t.slowest = Some(slow(&[
        ("queue", Some("node-1"), 0.6),
        ("other", Some("node-1"), 0.4),
    ]));
    let v = judge(&[t], None);
    assert_eq!(v.cause, "cpu", "{}", v.text);
    assert!(v.text.contains("CPU quota held it back 40%"), "{}", v.text);
    // Reads waiting for the disk.
    let mut t = trial(2000.0, 1, |_, x| x.pressure_io = Some(0.7));
    t.slowest = Some(slow(&[
        ("read", Some("node-1"), 0.8),
        ("network", Some("node-1"), 0.2),
    ]));
    assert_eq!(judge(&[t], None).cause, "io");
    // The machine short of memory.
    let mut t = trial(2000.0, 1, |_, x| x.pressure_memory = Some(0.3));
    t.slowest = Some(slow(&[
        ("other", Some("node-1"), 0.5),
        ("queue", Some("node-1"), 0.5),
    ]));
    assert_eq!(judge(&[t], None).cause, "memory");
}

#[test]
fn admission_alone_is_admission() {
    let mut t = trial(2000.0, 1, |_, x| {
        x.waiting = Some(30.0);
        x.in_service = Some(1.0);
        x.limit = Some(1.0);
    });
    t.slowest = Some(slow(&[
        ("admit", Some("node-1"), 0.8),
        ("fsync", Some("node-1"), 0.2),
    ]));
    let v = judge(&[t], None);
    assert_eq!(v.cause, "admission", "{}", v.text);
    assert!(v.text.contains("--max-in-service"), "{}", v.text);
}

#[test]
fn the_generator_only_on_its_own_evidence() {
    // Sends late because every connection was held: the target's.
    let mut t = trial(2000.0, 1, |_, x| {
        x.fsync_busy = Some(0.95);
    });
    t.late_sends = 9000;
    t.capped_sends = 9000;
    t.slowest = Some(slow(&[
        ("connection-wait", Some("node-1"), 0.7),
        ("fsync", Some("node-1"), 0.3),
    ]));
    let v = judge(&[t.clone()], None);
    assert_eq!(v.cause, "fsync", "{}", v.text);
    assert!(
        v.text.contains("collapsed rather than slowed down"),
        "{}",
        v.text
    );
    // Its timer late with connections free, its threads waiting: its own.
    let mut t = trial(2000.0, 1, |_, _| {});
    t.generator_late_sends = 2000;
    t.generator_run_queue_share = Some(0.45);
    t.slowest = Some(slow(&[
        ("generator", None, 0.8),
        ("network", Some("node-1"), 0.2),
    ]));
    let v = judge(&[t], None);
    assert_eq!(v.cause, "generator", "{}", v.text);
    assert!(
        v.text.contains("the load generator, not the target"),
        "{}",
        v.text
    );
}

#[test]
fn a_generator_starved_by_the_nodes_is_the_machines_limit() {
    // Three nodes on the generator's two cores: the machine full, mostly
    // with the nodes; the generator's threads waiting for a CPU.
    let mut t = trial(8500.0, 3, |_, x| x.cpu_cores = Some(0.43));
    t.server_cpu_cores = Some(1.28);
    t.machine_cpu_cores = Some(1.8);
    t.generator_cpu_cores = Some(0.23);
    t.generator_late_sends = t.requests / 3;
    t.generator_run_queue_share = Some(0.8);
    t.slowest = Some(slow(&[
        ("generator", None, 0.4),
        ("queue", Some("node-1"), 0.3),
    ]));
    let v = judge(&[t.clone()], Some(2.0));
    assert_eq!(v.cause, "cpu", "{}", v.text);
    assert!(v.text.contains("the machine's CPU"), "{}", v.text);
    // The same lateness with the machine full of someone else's work:
    // the generator's.
    t.server_cpu_cores = Some(0.3);
    assert_eq!(judge(&[t], Some(2.0)).cause, "generator");
}

#[test]
fn a_slow_scrape_the_detector_did_not_see_is_the_queue_not_a_pause() {
    // A busy fsync, and the node so far behind that the lab's scrape
    // waited 61 ms in its queue, while the node's pause detector saw its
    // threads wake at most 4 ms late: the fsync, not a stop.
    let busy = |detector: Option<f64>| {
        let mut t = trial(1750.0, 1, |_, x| {
            x.fsync_busy = Some(0.74);
            x.fsync_p99_ms = Some(8.19);
            x.pause_max_ms = detector;
            x.scrape_ms = Some(60.7);
        });
        t.slowest = Some(slow(&[
            ("queue", Some("node-1"), 0.66),
            ("fsync", Some("node-1"), 0.18),
            ("other", Some("node-1"), 0.16),
        ]));
        judge(&[t], Some(2.0))
    };
    let v = busy(Some(4.12));
    assert_eq!(
        (v.cause.as_str(), v.node.as_deref()),
        ("fsync", Some("node-1")),
        "{}",
        v.text
    );
    // A node with no detector of its own: the slow scrape is all the lab
    // sees of a stop, and counts as one.
    let v = busy(None);
    assert_eq!(v.cause, "pause", "{}", v.text);
}

#[test]
fn a_paused_node_is_a_pause_and_a_busy_cpu_is_not() {
    let mut t = trial(2000.0, 3, |i, x| {
        if i == 2 {
            x.pause_max_ms = Some(151.0);
            x.cpu_cores = Some(0.05);
        }
    });
    t.slowest = Some(slow(&[
        ("replica", Some("node-3"), 0.5),
        ("queue", Some("node-3"), 0.3),
        ("unanswered", Some("node-3"), 0.2),
    ]));
    let v = judge(&[t], None);
    assert_eq!(
        (v.cause.as_str(), v.node.as_deref()),
        ("pause", Some("node-3")),
        "{}",
        v.text
    );
    // The same stop while the machine's CPUs were full: its peers share
    // those CPUs and woke on time, so the stop is its own.
    let mut t = trial(2000.0, 3, |i, x| {
        x.allowed_cpus_busy = Some(0.97);
        x.pause_max_ms = Some(if i == 2 { 151.0 } else { 30.0 });
    });
    t.slowest = Some(slow(&[
        ("replica", Some("node-3"), 0.5),
        ("unanswered", Some("node-3"), 0.5),
    ]));
    let v = judge(&[t.clone()], Some(2.0));
    assert_eq!(
        (v.cause.as_str(), v.node.as_deref()),
        ("pause", Some("node-3")),
        "{}",
        v.text
    );
    // Every node late alike on full CPUs: the CPU's, not a pause.
    for n in &mut t.per_node {
        for x in &mut n.server {
            x.pause_max_ms = Some(120.0);
        }
    }
    let v = judge(&[t], Some(2.0));
    assert_ne!(v.cause, "pause", "{}", v.text);
    // Late wake-ups while the cores it may run on were full: the CPU's.
    let mut t = trial(2000.0, 1, |_, x| {
        x.pause_max_ms = Some(80.0);
        x.run_queue_cores = Some(0.6);
        x.allowed_cpus_busy = Some(0.97);
    });
    t.slowest = Some(slow(&[
        ("queue", Some("node-1"), 0.5),
        ("other", Some("node-1"), 0.5),
    ]));
    let v = judge(&[t], Some(2.0));
    assert_eq!(v.cause, "cpu", "{}", v.text);
    assert!(v.text.contains("97% busy"), "{}", v.text);
    // Threads waiting for a CPU alone (hand-overs on a machine with room)
    // are not a cause.
    let mut t = trial(2000.0, 1, |_, x| {
        x.run_queue_cores = Some(0.8);
        x.allowed_cpus_busy = Some(0.5);
    });
    t.slowest = Some(slow(&[
        ("queue", Some("node-1"), 0.2),
        ("other", Some("node-1"), 0.2),
    ]));
    assert_eq!(judge(&[t], Some(2.0)).cause, "unknown");
}

#[test]
fn stalls_the_machine_and_the_network() {
    let mut t = trial(2000.0, 1, |_, x| {
        x.stall_share = Some(0.2);
        x.stalls = Some(3.0);
        x.fsync_busy = Some(0.75);
    });
    t.slowest = Some(slow(&[
        ("stall", Some("node-1"), 0.6),
        ("fsync", Some("node-1"), 0.3),
    ]));
    assert_eq!(judge(&[t], None).cause, "stalls");
    // The whole machine busy, the nodes' work in the slowest time.
    let mut t = trial(8000.0, 3, |_, x| x.cpu_cores = Some(0.55));
    t.machine_cpu_cores = Some(1.95);
    t.slowest = Some(slow(&[
        ("other", Some("node-1"), 0.4),
        ("queue", Some("node-2"), 0.4),
    ]));
    let v = judge(&[t], Some(2.0));
    assert_eq!(v.cause, "cpu", "{}", v.text);
    assert!(v.text.contains("the machine's CPU"), "{}", v.text);
    // Nothing crossed, most of the time in flight: the network.
    let mut t = trial(2000.0, 1, |_, _| {});
    t.slowest = Some(slow(&[
        ("network", Some("node-1"), 0.8),
        ("fsync", Some("node-1"), 0.2),
    ]));
    let v = judge(&[t], None);
    assert_eq!(
        (v.cause.as_str(), v.node.as_deref()),
        ("network", Some("node-1")),
        "{}",
        v.text
    );
}

#[test]
fn on_loopback_time_in_flight_is_the_machines_and_the_nearest_is_named() {
    // The machine 81 % busy (threshold 85 %), most of the slowest
    // requests' time in flight on loopback: the machine's CPU, nearest.
    let mut t = trial(11000.0, 1, |_, _| {});
    t.machine_cpu_cores = Some(1.62);
    t.slowest = Some(slow(&[
        ("network", Some("node-1"), 0.5),
        ("connection-wait", Some("node-1"), 0.2),
        ("fsync", Some("node-1"), 0.3),
    ]));
    let v = judge(&[t.clone()], Some(2.0));
    assert_eq!(v.cause, "cpu", "{}", v.text);
    assert!(
        v.text.contains("on loopback the time in flight"),
        "{}",
        v.text
    );
    // The same off loopback: the network.
    t.machine_cpu_cores = None;
    assert_eq!(judge(&[t], None).cause, "network");
}

#[test]
fn nothing_crossed_and_nothing_dominant_is_cannot_tell() {
    let mut t = trial(2000.0, 1, |_, _| {});
    t.slowest = Some(slow(&[
        ("fsync", Some("node-1"), 0.2),
        ("network", Some("node-1"), 0.3),
    ]));
    let v = judge(&[t], None);
    assert_eq!(v.cause, "unknown", "{}", v.text);
    assert!(v.text.contains("cannot tell"), "{}", v.text);
    assert!(
        v.text.contains("Their time: 30% network of node-1"),
        "{}",
        v.text
    );
    assert!(
        v.text.contains("Readings nearest their thresholds"),
        "{}",
        v.text
    );
}

#[test]
fn servers_whose_metrics_were_refused_are_said_unseen_and_why() {
    let t = trial(2000.0, 1, |_, _| {});
    let why = vec!["p99 20 ms > 10 ms".to_string()];
    let unseen = ["node-1: GET /metrics answered 403 (token \"app\" is \"readwrite\")".to_string()];
    let v = verdict(&Evidence {
        trials: std::slice::from_ref(&t),
        deciding: Some((&t, &why)),
        breaking_point: Some(1000.0),
        range: None,
        machine: Machine::default(),
        unseen: &unseen,
    });
    assert!(
        v.text
            .starts_with("The servers could not be seen: node-1: GET /metrics answered 403"),
        "{}",
        v.text
    );
    assert!(v.text.contains("Server-Timing alone"), "{}", v.text);
    // Seen, the same trial says nothing of it.
    assert!(!judge(&[t], None).text.contains("could not be seen"));
}

#[test]
fn a_node_pinned_to_full_cores_is_named_over_the_full_machine() {
    // The node may run on 1 of 2 cores, and a neighbour keeps that one
    // busy; the generator fills the other: the machine and the node's CPU
    // both crossed, and time in flight on loopback speaks for the machine.
    let mut t = trial(11_000.0, 1, |_, x| {
        x.cpus = Some(1.0);
        x.allowed_cpus_busy = Some(1.0);
        x.cpu_cores = Some(0.43);
    });
    t.machine_cpu_cores = Some(1.9);
    t.server_cpu_cores = Some(0.43);
    t.generator_cpu_cores = Some(0.6);
    t.slowest = Some(slow(&[
        ("network", Some("node-1"), 0.6),
        ("queue", Some("node-1"), 0.4),
    ]));
    let v = judge(&[t.clone()], Some(2.0));
    assert_eq!(
        (v.cause.as_str(), v.node.as_deref()),
        ("cpu", Some("node-1")),
        "{}",
        v.text
    );
    // The same node on every core of the machine: the machine's.
    for n in &mut t.per_node {
        for x in &mut n.server {
            x.cpus = Some(2.0);
        }
    }
    let v = judge(&[t], Some(2.0));
    assert_eq!(
        (v.cause.as_str(), v.node.as_deref()),
        ("cpu", None),
        "{}",
        v.text
    );
    assert!(v.text.contains("Verdict: the machine's CPU"), "{}", v.text);
}

fn threads(list: &[(&str, u32, f64, f64)]) -> Vec<strata_api::threads::ThreadRate> {
    list.iter()
        .map(
            |&(name, tid, cpu, waiting)| strata_api::threads::ThreadRate {
                name: name.into(),
                tid,
                cpu,
                waiting,
                slices: 0.0,
            },
        )
        .collect()
}

// Rule 1: a place that holds half the slowest time is named, busy or not.

#[test]
fn a_slow_but_idle_disk_is_named_from_the_requests_time() {
    // A disk the kernel throttles: the fsync busy 18 %, far below its
    // threshold, but 98 % of the slowest time waited for it.
    let mut t = trial(141.0, 1, |_, x| {
        x.fsync_busy = Some(0.18);
        x.fsync_p99_ms = Some(33.0);
    });
    t.slowest = Some(slow(&[
        ("fsync", Some("node-1"), 0.9),
        ("applier", Some("node-1"), 0.08),
        ("network", Some("node-1"), 0.02),
    ]));
    let v = judge(&[t], None);
    assert_eq!(
        (v.cause.as_str(), v.node.as_deref()),
        ("fsync", Some("node-1")),
        "{}",
        v.text
    );
    assert!(v.text.contains("seldom busy but slow"), "{}", v.text);
    assert!(v.text.contains("Because 98%"), "{}", v.text);
}

#[test]
fn a_replica_round_trip_beyond_loopback_is_the_path_to_it() {
    // Another mechanism: node-1 waits for node-2, which reports little
    // work and has room: the path between them.
    let mut t = trial(3000.0, 2, |_, _| {});
    t.slowest = Some(slow(&[
        ("replica", Some("node-2"), 0.7),
        ("fsync", Some("node-1"), 0.2),
        ("network", Some("node-1"), 0.1),
    ]));
    let v = judge(&[t], None);
    assert_eq!(
        (v.cause.as_str(), v.node.as_deref()),
        ("network", Some("node-2")),
        "{}",
        v.text
    );
}

// Rule 3: time in flight goes to the side that was starved, a stop, or a
// busy thread; never to the generator by default.

#[test]
fn unread_requests_on_a_starved_node_are_the_nodes_cpu_not_the_generators() {
    // Another process shares the node's only core; the generator alone
    // on the other, a little late itself.
    let mut t = trial(1200.0, 1, |_, x| {
        x.cpus = Some(1.0);
        x.cpu_cores = Some(0.55);
        x.run_queue_cores = Some(0.41);
    });
    t.generator_late_sends = t.requests * 7 / 100;
    t.generator_run_queue_share = Some(0.17);
    t.slowest = Some(slow(&[
        ("network", Some("node-1"), 0.98),
        ("apply", Some("node-1"), 0.02),
    ]));
    let v = judge(&[t], None);
    assert_eq!(
        (v.cause.as_str(), v.node.as_deref()),
        ("cpu", Some("node-1")),
        "{}",
        v.text
    );
    assert!(v.text.contains("waited for a CPU 43%"), "{}", v.text);
}

#[test]
fn unread_answers_at_a_starved_generator_are_the_generators() {
    let mut t = trial(5000.0, 1, |_, x| {
        x.run_queue_cores = Some(0.01);
    });
    t.generator_threads = threads(&[("strata-load-0", 1, 0.4, 0.6)]);
    t.slowest = Some(slow(&[
        ("network", Some("node-1"), 0.7),
        ("generator", None, 0.3),
    ]));
    let v = judge(&[t], None);
    assert_eq!(v.cause, "generator", "{}", v.text);
}

#[test]
fn a_node_that_stopped_holds_the_time_in_flight() {
    let mut t = trial(800.0, 3, |i, x| {
        if i == 2 {
            x.pause_max_ms = Some(150.0);
        }
    });
    t.slowest = Some(slow(&[
        ("network", Some("node-3"), 0.6),
        ("unanswered", Some("node-3"), 0.3),
        ("fsync", Some("node-1"), 0.1),
    ]));
    let v = judge(&[t], Some(2.0));
    assert_eq!(
        (v.cause.as_str(), v.node.as_deref()),
        ("pause", Some("node-3")),
        "{}",
        v.text
    );
}

// Rule 4: when several readings crossed, the one holding the most of the
// slowest time is named, and what each explains is said.

#[test]
fn of_two_crossed_readings_the_one_the_slowest_waited_for_is_named() {
    let busy = |x: &mut ServerSample| {
        x.fsync_busy = Some(0.8);
        x.allowed_cpus_busy = Some(0.95);
        x.cpus = Some(1.0);
    };
    let mut t = trial(4000.0, 1, |_, x| busy(x));
    t.slowest = Some(slow(&[
        ("queue", Some("node-1"), 0.7),
        ("fsync", Some("node-1"), 0.3),
    ]));
    let v = judge(&[t.clone()], None);
    assert_eq!(v.cause, "cpu", "{}", v.text);
    assert!(
        v.text.contains("fsync of node-1 explains 30%"),
        "{}",
        v.text
    );
    t.slowest = Some(slow(&[
        ("fsync", Some("node-1"), 0.7),
        ("queue", Some("node-1"), 0.3),
    ]));
    let v = judge(&[t], None);
    assert_eq!(v.cause, "fsync", "{}", v.text);
    assert!(v.text.contains("cpu of node-1 explains 30%"), "{}", v.text);
}

// With several nodes, one that holds the time and alone crossed.

#[test]
fn the_odd_node_out_is_named_by_its_own_reading() {
    // node-2's fsync slower: its slowest requests' time spread over its
    // own stages, none half; only node-2's fsync crossed.
    let mut t = trial(2000.0, 3, |i, x| {
        x.fsync_busy = Some(if i == 1 { 0.95 } else { 0.3 });
    });
    t.machine_cpu_cores = Some(1.72);
    t.slowest = Some(slow(&[
        ("other", Some("node-2"), 0.34),
        ("network", Some("node-2"), 0.23),
        ("queue", Some("node-2"), 0.23),
        ("fsync", Some("node-1"), 0.2),
    ]));
    let v = judge(&[t], Some(2.0));
    assert_eq!(
        (v.cause.as_str(), v.node.as_deref()),
        ("fsync", Some("node-2")),
        "{}",
        v.text
    );
    assert!(v.text.contains("only node-2's fsync crossed"), "{}", v.text);
}

#[test]
fn the_odd_node_out_may_be_a_stopped_one() {
    let mut t = trial(2000.0, 3, |i, x| {
        if i == 0 {
            x.pause_max_ms = Some(120.0);
        }
    });
    t.slowest = Some(slow(&[
        ("queue", Some("node-1"), 0.3),
        ("apply", Some("node-1"), 0.25),
        ("fsync", Some("node-2"), 0.25),
        ("fsync", Some("node-3"), 0.2),
    ]));
    let v = judge(&[t], Some(2.0));
    assert_eq!(
        (v.cause.as_str(), v.node.as_deref()),
        ("pause", Some("node-1")),
        "{}",
        v.text
    );
}

// One busy thread while the process has cores to spare.

#[test]
fn one_busy_runtime_thread_with_cores_to_spare_is_a_cause_of_its_own() {
    let mut t = trial(40_000.0, 1, |_, x| {
        x.cpus = Some(2.0);
        x.cpu_cores = Some(1.2);
        x.allowed_cpus_busy = Some(0.6);
    });
    t.per_node[0].threads = threads(&[
        ("strata-runtime", 11, 0.97, 0.02),
        ("strata-apply", 12, 0.15, 0.0),
    ]);
    t.slowest = Some(slow(&[
        ("queue", Some("node-1"), 0.8),
        ("apply", Some("node-1"), 0.2),
    ]));
    let v = judge(&[t.clone()], None);
    assert_eq!(
        (v.cause.as_str(), v.node.as_deref()),
        ("thread", Some("node-1")),
        "{}",
        v.text
    );
    assert!(v.text.contains("strata-runtime (tid 11"), "{}", v.text);
    assert!(v.text.contains("more cores will not help"), "{}", v.text);
    // The same thread when the process had no core to spare: its CPU.
    for x in &mut t.per_node[0].server {
        x.cpu_cores = Some(1.9);
        x.allowed_cpus_busy = Some(0.95);
    }
    assert_eq!(judge(&[t], None).cause, "cpu");
}

#[test]
fn a_busy_applier_thread_holds_the_wal_time() {
    // Another thread, another place: the WAL's queue waits for the
    // applier, on a CPU, not for the disk.
    let mut t = trial(30_000.0, 1, |_, x| {
        x.cpus = Some(4.0);
        x.cpu_cores = Some(1.5);
        x.fsync_busy = Some(0.1);
    });
    t.per_node[0].threads = threads(&[("strata-apply", 12, 0.96, 0.01)]);
    t.slowest = Some(slow(&[
        ("applier", Some("node-1"), 0.7),
        ("apply", Some("node-1"), 0.3),
    ]));
    let v = judge(&[t], None);
    assert_eq!(
        (v.cause.as_str(), v.node.as_deref()),
        ("thread", Some("node-1")),
        "{}",
        v.text
    );
    assert!(v.text.contains("the applier"), "{}", v.text);
}

// Rule 5: failed requests are evidence first.

#[test]
fn an_objective_failed_on_refusals_names_them_and_the_node() {
    let mut t = trial(9000.0, 2, |_, _| {});
    t.errors = 900;
    t.error_pct = 2.0;
    t.per_node[1].errors = 880;
    t.failed_statuses.insert(503, 900);
    t.first_failure = Some("node-2: 503: overloaded: every place in service taken".into());
    let why = vec!["errors 2% > 0.1%".to_string()];
    let v = verdict(&Evidence {
        trials: std::slice::from_ref(&t),
        deciding: Some((&t, &why)),
        breaking_point: Some(8000.0),
        range: None,
        machine: Machine::default(),
        unseen: &[],
    });
    assert_eq!(
        (v.cause.as_str(), v.node.as_deref()),
        ("admission", Some("node-2")),
        "{}",
        v.text
    );
    assert!(v.text.contains("503: 900"), "{}", v.text);
    assert!(
        v.text.contains("every place in service taken"),
        "{}",
        v.text
    );
}

#[test]
fn an_objective_failed_on_silence_says_no_answer_came() {
    let mut t = trial(1000.0, 3, |_, _| {});
    t.errors = 40;
    t.error_pct = 0.8;
    t.per_node[2].errors = 40;
    t.first_failure = Some("node-3: no answer: connection refused".into());
    let why = vec!["errors 0.8% > 0.1%".to_string()];
    let v = verdict(&Evidence {
        trials: std::slice::from_ref(&t),
        deciding: Some((&t, &why)),
        breaking_point: Some(500.0),
        range: None,
        machine: Machine::default(),
        unseen: &[],
    });
    assert_eq!(
        (v.cause.as_str(), v.node.as_deref()),
        ("unreachable", Some("node-3")),
        "{}",
        v.text
    );
    assert!(v.text.contains("connection refused"), "{}", v.text);
    // The same trial failing on latency too: the latency is read.
    let why = vec![
        "p99 20 ms > 10 ms".to_string(),
        "errors 0.8% > 0.1%".to_string(),
    ];
    let v = verdict(&Evidence {
        trials: std::slice::from_ref(&t),
        deciding: Some((&t, &why)),
        breaking_point: Some(500.0),
        range: None,
        machine: Machine::default(),
        unseen: &[],
    });
    assert_ne!(v.cause, "unreachable", "{}", v.text);
}

// The verdict and the chart read the same trial.

#[test]
fn the_verdict_says_which_trial_it_read() {
    let mut before = trial(1000.0, 1, |_, x| x.fsync_busy = Some(0.9));
    before.slowest = Some(slow(&[("fsync", Some("node-1"), 1.0)]));
    let mut t = trial(2000.0, 1, |_, _| {});
    t.error_pct = 40.0;
    let v = judge(&[before, t], None);
    assert_eq!(v.trial_rate, Some(1000.0), "{}", v.text);
}

#[test]
fn waits_for_a_core_alike_on_both_sides_are_not_starvation() {
    // A distant path: both sides' threads wait for a core about as large
    // a share of their (short) runnable time, as threads that hand work
    // over do at every hand-over; the slowest spent 7 ms each in flight.
    // Not starvation: the path.
    let mut t = trial(1800.0, 1, |_, _| {});
    let busy = |name: &str, waiting: f64| strata_api::threads::ThreadRate {
        name: name.into(),
        tid: 1,
        cpu: 0.3,
        waiting,
        slices: 4000.0,
    };
    t.per_node[0].threads = vec![busy("strata-runtime", 0.18)];
    t.generator_threads = vec![busy("strata-load-0", 0.25)];
    let mut s = slow(&[
        ("network", Some("node-1"), 0.8),
        ("fsync", Some("node-1"), 0.2),
    ]);
    s.parts[0].mean_ms = 7.0;
    t.slowest = Some(s.clone());
    let v = judge(&[t.clone()], None);
    assert_eq!(
        (v.cause.as_str(), v.node.as_deref()),
        ("network", Some("node-1")),
        "{}",
        v.text
    );
    assert!(v.text.contains("0.045 ms a wake-up"), "{}", v.text);
    // The node's threads waiting three times the generator's share: its CPU.
    t.per_node[0].threads[0].waiting = 0.9;
    let v = judge(&[t], None);
    assert_eq!(
        (v.cause.as_str(), v.node.as_deref()),
        ("cpu", Some("node-1")),
        "{}",
        v.text
    );
}

#[test]
fn a_queue_before_an_applier_with_no_fsync_is_behind_what_held_it() {
    // No fsync at all (durability none); writes queued for the applier
    // while compactions kept the disk busy 39 % of the time: the disk.
    let mut t = trial(780.0, 1, |_, x| {
        x.fsync_busy = Some(0.0);
        x.pressure_io = Some(0.39);
        x.cpu_cores = Some(0.6);
        x.allowed_cpus_busy = Some(0.33);
    });
    t.slowest = Some(slow(&[
        ("applier", Some("node-1"), 0.87),
        ("apply", Some("node-1"), 0.13),
    ]));
    let v = judge(&[t.clone()], None);
    assert_eq!(
        (v.cause.as_str(), v.node.as_deref()),
        ("io", Some("node-1")),
        "{}",
        v.text
    );
    // The same queue with the writes stalled: the stalls.
    for x in &mut t.per_node[0].server {
        x.stall_share = Some(0.05);
        x.stalls = Some(3.0);
    }
    let v = judge(&[t], None);
    assert_eq!(
        (v.cause.as_str(), v.node.as_deref()),
        ("stalls", Some("node-1")),
        "{}",
        v.text
    );
}

#[test]
fn time_in_flight_on_a_machine_with_room_is_not_the_machines() {
    // Loopback, both sides waiting for a core as much as hand-overs make
    // them, the machine 57 % busy: half the slowest time in flight is not
    // explained by anything seen, and the crossed fsync that holds 39 % of
    // it is named.
    let mut t = trial(6000.0, 1, |_, x| {
        x.fsync_busy = Some(0.79);
        x.run_queue_cores = Some(0.3);
        x.cpu_cores = Some(0.4);
    });
    t.machine_cpu_cores = Some(1.14);
    t.generator_run_queue_share = Some(0.44);
    t.slowest = Some(slow(&[
        ("network", Some("node-1"), 0.49),
        ("fsync", Some("node-1"), 0.25),
        ("applier", Some("node-1"), 0.14),
        ("connection-wait", Some("node-1"), 0.12),
    ]));
    let v = judge(&[t.clone()], Some(2.0));
    assert_eq!(
        (v.cause.as_str(), v.node.as_deref()),
        ("fsync", Some("node-1")),
        "{}",
        v.text
    );
    assert!(v.text.contains("nothing seen explains"), "{}", v.text);
    // The same with the machine's cores 90 % busy: the machine's.
    t.machine_cpu_cores = Some(1.8);
    let v = judge(&[t], Some(2.0));
    assert_eq!(
        (v.cause.as_str(), v.node.as_deref()),
        ("cpu", None),
        "{}",
        v.text
    );
}

#[test]
fn a_side_that_hardly_waited_cannot_hold_a_long_flight() {
    // 2 % of packets lost: 8 req/s, 207 ms in flight per slow request;
    // the node's few runnable moments waited 24 % of the time (4 ms in a
    // second), the generator's none. Not the node's CPU: the path.
    let mut t = trial(8.0, 1, |_, x| {
        x.cpu_cores = Some(0.012);
        x.run_queue_cores = Some(0.004);
    });
    t.generator_run_queue_share = Some(0.0);
    let mut s = slow(&[
        ("network", Some("node-1"), 0.99),
        ("fsync", Some("node-1"), 0.01),
    ]);
    s.parts[0].mean_ms = 207.0;
    t.slowest = Some(s);
    let v = judge(&[t.clone()], None);
    assert_eq!(
        (v.cause.as_str(), v.node.as_deref()),
        ("network", Some("node-1")),
        "{}",
        v.text
    );
    // The same shares with the node's threads waiting 0.4 s a second: its CPU.
    for x in &mut t.per_node[0].server {
        x.cpu_cores = Some(0.2);
        x.run_queue_cores = Some(0.4);
    }
    let v = judge(&[t], None);
    assert_eq!(
        (v.cause.as_str(), v.node.as_deref()),
        ("cpu", Some("node-1")),
        "{}",
        v.text
    );
}
