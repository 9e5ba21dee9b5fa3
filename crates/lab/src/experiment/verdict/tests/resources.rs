//! Each resource's reading and the cases the verdict first learnt: a busy
//! fsync, admission and the work behind it, the generator only on its own
//! evidence, pauses, the machine, the network, "cannot tell", servers
//! unseen.

use super::*;

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
    named(&v, "fsync", Some("node-1"));
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
    named(&v, "fsync", Some("node-2"));
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
    named(&v, "fsync", Some("node-1"));
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
    named(&v, "pause", Some("node-3"));
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
    named(&v, "pause", Some("node-3"));
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
    let v = judge(&[t.clone()], Some(2.0));
    assert_eq!(v.cause, "cpu", "{}", v.text);
    assert!(v.text.contains("97% busy"), "{}", v.text);
    assert!(!v.text.contains("hypervisor"), "{}", v.text);
    // The same cores full with a third of their time the hypervisor's:
    // still the CPU, and the steal is said.
    for n in &mut t.per_node {
        for x in &mut n.server {
            x.allowed_cpus_stolen = Some(0.33);
        }
    }
    let v = judge(&[t], Some(2.0));
    assert_eq!(v.cause, "cpu", "{}", v.text);
    assert!(
        v.text
            .contains("97% busy (33% of their time taken by the hypervisor"),
        "{}",
        v.text
    );
    // Threads waiting for a CPU alone (hand-overs on a machine with room,
    // the generator's waiting alike) are not a cause.
    let mut t = trial(2000.0, 1, |_, x| {
        x.run_queue_cores = Some(0.8);
        x.allowed_cpus_busy = Some(0.5);
    });
    t.generator_run_queue_share = Some(0.7);
    t.slowest = Some(slow(&[
        ("queue", Some("node-1"), 0.2),
        ("other", Some("node-1"), 0.2),
    ]));
    assert_eq!(judge(&[t.clone()], Some(2.0)).cause, "unknown");
    // The node's alone waiting so (something else taking its cores in
    // turns): its CPU.
    t.generator_run_queue_share = Some(0.1);
    let v = judge(&[t], Some(2.0));
    named(&v, "cpu", Some("node-1"));
    assert!(v.text.contains("short of CPU time"), "{}", v.text);
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
    named(&v, "network", Some("node-1"));
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
        cut_short: None,
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
    named(&v, "cpu", Some("node-1"));
    // The same node on every core of the machine: the machine's.
    for n in &mut t.per_node {
        for x in &mut n.server {
            x.cpus = Some(2.0);
        }
    }
    let v = judge(&[t], Some(2.0));
    named(&v, "cpu", None);
    assert!(v.text.contains("Verdict: the machine's CPU"), "{}", v.text);
}

/// The machine's CPU, most of it other processes': the advice is to move
/// them off, not more cores; with the nodes and the generator holding it,
/// more cores.
#[test]
fn the_machines_cpu_held_by_others_is_not_more_cores() {
    let mut t = trial(4000.0, 1, |_, x| {
        x.cpus = Some(2.0);
        x.allowed_cpus_busy = Some(0.95);
    });
    t.slowest = Some(slow(&[
        ("network", Some("node-1"), 0.9),
        ("fsync", Some("node-1"), 0.1),
    ]));
    t.machine_cpu_cores = Some(1.9);
    t.server_cpu_cores = Some(0.4);
    t.generator_cpu_cores = Some(0.2);
    let v = judge(&[t.clone()], Some(2.0));
    assert_eq!(v.cause, "cpu", "{}", v.text);
    assert!(v.text.contains("other processes 1.30"), "{}", v.text);
    assert!(
        v.text
            .contains("Next: other processes used 1.30 of the machine's 2 cores"),
        "{}",
        v.text
    );
    t.server_cpu_cores = Some(1.2);
    t.generator_cpu_cores = Some(0.6);
    let v = judge(&[t], Some(2.0));
    assert_eq!(v.cause, "cpu", "{}", v.text);
    assert!(v.text.contains("Next: more cores"), "{}", v.text);
}

/// An fsync seldom busy but slow crossed by its slowness: its reading's
/// share of its threshold, in the ranking and the chart, is that of its
/// slowness, past 100 %, not the busy share's 1 %.
#[test]
fn a_slow_idle_fsyncs_reading_is_past_its_threshold_in_words_too() {
    let mut t = trial(8.0, 1, |_, x| {
        x.fsync_busy = Some(0.01);
        x.fsync_p99_ms = Some(16.4);
    });
    t.slowest = Some(slow(&[
        ("fsync", Some("node-1"), 0.6),
        ("queue", Some("node-1"), 0.4),
    ]));
    let v = judge(&[t], None);
    named(&v, "fsync", Some("node-1"));
    let r = v.ranking[0].reading.unwrap();
    assert!((r - 16.4 / 5.0).abs() < 1e-9, "{:?}", v.ranking[0]);
    assert!(
        v.text.contains("its reading at 328% of its threshold"),
        "{}",
        v.text
    );
}

/// Writes queued for an applier that waited for the WAL's lock, held by
/// another thread: the lock, not the fsync beside it; the same queue with
/// no wait for the lock is the fsync's, and a node that does not export
/// the wait has no lock reading at all.
#[test]
fn an_applier_waiting_for_a_held_lock_is_the_lock() {
    let queue = || {
        slow(&[
            ("applier", Some("node-1"), 0.8),
            ("fsync", Some("node-1"), 0.1),
            ("network", Some("node-1"), 0.1),
        ])
    };
    let mut t = trial(800.0, 1, |_, x| {
        x.fsync_busy = Some(0.3);
        x.fsync_p99_ms = Some(2.0);
        x.wal_lock_wait = Some(0.45);
    });
    t.slowest = Some(queue());
    let v = judge(&[t], None);
    named(&v, "lock", Some("node-1"));
    assert!(v.text.contains("waited for the WAL's lock"), "{}", v.text);
    assert!(v.text.contains("will not help"), "{}", v.text);
    assert_eq!(v.ranking[0].cause, "lock");

    let mut t = trial(800.0, 1, |_, x| {
        x.fsync_busy = Some(0.9);
        x.fsync_p99_ms = Some(2.0);
        x.wal_lock_wait = Some(0.01);
    });
    t.slowest = Some(queue());
    named(&judge(&[t], None), "fsync", Some("node-1"));

    let mut t = trial(800.0, 1, |_, x| x.fsync_busy = Some(0.9));
    t.slowest = Some(queue());
    let v = judge(&[t], None);
    named(&v, "fsync", Some("node-1"));
    assert!(
        v.ranking.iter().all(|r| r.cause != "lock"),
        "{:?}",
        v.ranking
    );
}
