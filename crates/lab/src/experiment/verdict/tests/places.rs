//! The slowest requests' time by place: a place holding half is named
//! busy or not, causes compared by their share, the odd node out, one busy
//! thread, the write path read from the applier, the trial it read.

use super::*;

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
    named(&v, "fsync", Some("node-1"));
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
    named(&v, "network", Some("node-2"));
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
        v.text
            .contains("2. fsync of node-1 (30% of the slowest time"),
        "{}",
        v.text
    );
    t.slowest = Some(slow(&[
        ("fsync", Some("node-1"), 0.7),
        ("queue", Some("node-1"), 0.3),
    ]));
    let v = judge(&[t], None);
    assert_eq!(v.cause, "fsync", "{}", v.text);
    assert!(
        v.text.contains("2. cpu of node-1 (30% of the slowest time"),
        "{}",
        v.text
    );
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
    named(&v, "fsync", Some("node-2"));
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
    named(&v, "pause", Some("node-1"));
}

#[test]
fn a_stopped_nodes_applier_queue_is_the_stop() {
    // node-3 stopped 150 ms at a time: the writes that reached it (its
    // own, and those replicated to it) queued for its applier through
    // the stop. Its fsync busy, not crossed; the machine with room.
    let mut t = trial(2000.0, 3, |i, x| {
        if i == 2 {
            x.pause_max_ms = Some(150.0);
        }
    });
    t.slowest = Some(slow(&[
        ("peer-applier", Some("node-3"), 0.45),
        ("applier", Some("node-3"), 0.2),
        ("fsync", Some("node-1"), 0.2),
        ("network", Some("node-1"), 0.15),
    ]));
    let v = judge(&[t.clone()], Some(2.0));
    named(&v, "pause", Some("node-3"));
    assert!(v.text.contains("through the stop"), "{}", v.text);
    // The same queue on a node that did not stop: its WAL.
    for x in &mut t.per_node[2].server {
        x.pause_max_ms = Some(2.0);
        x.fsync_busy = Some(0.9);
    }
    let v = judge(&[t], Some(2.0));
    named(&v, "fsync", Some("node-3"));
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
    named(&v, "thread", Some("node-1"));
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
    named(&v, "thread", Some("node-1"));
    assert!(v.text.contains("the applier"), "{}", v.text);
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
    named(&v, "io", Some("node-1"));
    // The same queue with the writes stalled: the stalls.
    for x in &mut t.per_node[0].server {
        x.stall_share = Some(0.05);
        x.stalls = Some(3.0);
    }
    let v = judge(&[t], None);
    named(&v, "stalls", Some("node-1"));
}

#[test]
fn at_a_low_rate_a_tail_that_waited_for_its_fsync_is_the_fsync() {
    // Seven writes a second: the WAL fsyncs for 0.5 % of the time, under
    // the 1 % that means "no fsync at all", yet the slowest requests
    // spent most of their time waiting for an fsync of a slow disk.
    let mut t = trial(7.0, 1, |_, x| {
        x.fsync_busy = Some(0.005);
        x.fsync_p99_ms = Some(25.0);
        x.cpu_cores = Some(0.02);
        x.allowed_cpus_busy = Some(0.02);
    });
    t.slowest = Some(slow(&[
        ("fsync", Some("node-1"), 0.64),
        ("apply", Some("node-1"), 0.04),
        ("applier", Some("node-1"), 0.01),
        ("network", Some("node-1"), 0.31),
    ]));
    let v = judge(&[t], None);
    named(&v, "fsync", Some("node-1"));
    assert!(v.text.contains("seldom busy but slow"), "{}", v.text);
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
fn a_queue_on_a_node_starved_of_cpu_time_is_its_cpu_not_what_it_queued_behind() {
    // Requests unread in the node's socket while a neighbour took its one
    // core in turns (78 % busy, under the threshold), admission at its
    // limit: the node's runtime waited for the core 38 % of the time it
    // was ready to run, the generator 8 %.
    let mut t = trial(33_000.0, 1, |_, x| {
        x.cpus = Some(1.0);
        x.allowed_cpus_busy = Some(0.78);
        x.cpu_cores = Some(0.45);
        x.in_service = Some(256.0);
        x.limit = Some(256.0);
        x.waiting = Some(40.0);
    });
    t.per_node[0].threads = threads(&[("strata-runtime", 5, 0.5, 0.31)]);
    t.generator_threads = threads(&[("strata-load-0", 1, 0.6, 0.05)]);
    t.slowest = Some(slow(&[
        ("queue", Some("node-1"), 0.7),
        ("admit", Some("node-1"), 0.2),
        ("network", Some("node-1"), 0.1),
    ]));
    let v = judge(&[t.clone()], None);
    named(&v, "cpu", Some("node-1"));
    assert!(v.text.contains("short of CPU time"), "{}", v.text);
    // The applier starved the same way behind a neighbour: its queue is
    // the node's CPU too, not its WAL.
    let mut w = t.clone();
    w.per_node[0].threads = threads(&[
        ("strata-apply", 6, 0.3, 0.2),
        ("strata-runtime", 5, 0.3, 0.1),
    ]);
    for x in &mut w.per_node[0].server {
        x.fsync_busy = Some(0.1);
        x.in_service = Some(4.0);
    }
    w.slowest = Some(slow(&[
        ("applier", Some("node-1"), 0.6),
        ("fsync", Some("node-1"), 0.1),
        ("other", Some("node-1"), 0.3),
    ]));
    let v = judge(&[w], None);
    named(&v, "cpu", Some("node-1"));
    // The generator waiting as much as the node: hand-overs, not
    // starvation; the queue is behind admission.
    t.generator_threads = threads(&[("strata-load-0", 1, 0.6, 0.4)]);
    let v = judge(&[t], None);
    assert_eq!(v.cause, "admission", "{}", v.text);
}

#[test]
fn an_unpinned_nodes_cpu_is_the_machines_and_their_places_add_up() {
    // One node beside the generator on two cores, both sharing all of
    // them: the slowest requests waited in the node's socket (its work,
    // its CPU not crossed) and in flight on loopback (the machine's at
    // 79 % busy), and for its WAL. The node's CPU and the machine's are
    // one resource: 39 % + 26 % of the time, named.
    let mut t = trial(28_000.0, 1, |_, x| {
        x.cpu_cores = Some(0.6);
        x.cpus = Some(2.0);
        x.allowed_cpus_busy = Some(0.79);
        x.fsync_busy = Some(0.61);
        x.run_queue_cores = Some(0.5);
    });
    t.machine_cpu_cores = Some(1.58);
    t.server_cpu_cores = Some(0.6);
    t.generator_cpu_cores = Some(0.44);
    t.generator_run_queue_share = Some(0.45);
    t.slowest = Some(slow(&[
        ("queue", Some("node-1"), 0.39),
        ("applier", Some("node-1"), 0.33),
        ("network", Some("node-1"), 0.26),
        ("generator", None, 0.02),
    ]));
    let v = judge(&[t.clone()], Some(2.0));
    named(&v, "cpu", None);
    assert!(v.text.contains("65%"), "{}", v.text);
    // The node pinned to a core of its own (it may run on 1 of the 2):
    // its socket queue is its own CPU's, apart from the machine's.
    for x in &mut t.per_node[0].server {
        x.cpus = Some(1.0);
    }
    let v = judge(&[t], Some(2.0));
    assert_ne!(
        (v.cause.as_str(), v.node.as_deref()),
        ("cpu", None),
        "{}",
        v.text
    );
}

#[test]
fn a_slow_fsync_is_judged_against_the_objective_not_only_by_how_busy_it_was() {
    // A hundred writes a second on a throttled disk: the WAL busy a
    // fifth of the time, its p99 fsync 25 ms against a 10 ms objective.
    // The host's noise took a quarter of the slowest requests' time (the
    // generator's lateness) and a sixth went unexplained, so the fsync
    // holds the most but not half.
    let t = |p99: f64| {
        let mut t = trial(100.0, 1, |_, x| {
            x.fsync_busy = Some(0.2);
            x.fsync_p99_ms = Some(p99);
            x.cpu_cores = Some(0.2);
            x.allowed_cpus_busy = Some(0.4);
        });
        t.slowest = Some(slow(&[
            ("fsync", Some("node-1"), 0.40),
            ("generator", None, 0.24),
            ("network", Some("node-1"), 0.18),
        ]));
        t
    };
    let v = judge(&[t(25.0)], None);
    named(&v, "fsync", Some("node-1"));
    assert!(
        v.text.contains("at least half the objective's 10 ms"),
        "{}",
        v.text
    );
    // The same share with fsyncs well inside the objective: nothing
    // corroborates the disk, and the verdict does not guess.
    let v = judge(&[t(2.0)], None);
    assert_eq!(v.cause, "unknown", "{}", v.text);
}

/// A cause's parts in words add up to its share: merged when their words
/// are the same, three and the rest together, rounded so the sum holds.
#[test]
fn a_causes_parts_in_words_add_up_to_its_share() {
    let p = percents(&[0.134, 0.064, 0.044]);
    assert_eq!(p.iter().sum::<u64>(), 24, "{p:?}");
    assert!(p[0] >= 13 && p[1] >= 6 && p[2] >= 4, "{p:?}");
    assert_eq!(percents(&[0.333, 0.333, 0.334]), vec![33, 33, 34]);
    let mut t = trial(4000.0, 1, |_, x| x.fsync_busy = Some(0.9));
    t.slowest = Some(slow(&[
        ("fsync", Some("node-1"), 0.30),
        ("peer-fsync", Some("node-1"), 0.25),
        ("applier", Some("node-1"), 0.12),
        ("apply", Some("node-1"), 0.04),
        ("peer-apply", Some("node-1"), 0.03),
        ("body", Some("node-1"), 0.01),
        ("queue", Some("node-1"), 0.25),
    ]));
    let v = judge(&[t], None);
    named(&v, "fsync", Some("node-1"));
    let share: u64 = v
        .text
        .split("Because ")
        .nth(1)
        .unwrap()
        .split('%')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    let because = v.text.split("went to it: ").nth(1).unwrap();
    let shares: u64 = because
        .split(". ")
        .next()
        .unwrap()
        .split("; ")
        .map(|p| p.split('%').next().unwrap().parse::<u64>().unwrap())
        .sum();
    assert_eq!(shares, share, "{}", v.text);
    assert!(because.contains("in 2 other parts"), "{}", v.text);
}

/// The ranking holds at least three causes, the named one first, each
/// with its share and its reading; a cause it could not weigh is filled
/// in from the readings nearest their thresholds.
#[test]
fn the_ranking_holds_three_its_cause_first() {
    let mut t = trial(4000.0, 1, |_, x| x.fsync_busy = Some(0.9));
    t.slowest = Some(slow(&[("fsync", Some("node-1"), 1.0)]));
    let v = judge(&[t], None);
    named(&v, "fsync", Some("node-1"));
    assert!(v.ranking.len() >= 3, "{:?}", v.ranking);
    assert_eq!(v.ranking[0].cause, "fsync");
    assert_eq!(v.ranking[0].share, Some(1.0));
    assert!(v.ranking[0].reading.unwrap() > 1.0, "{:?}", v.ranking[0]);
    assert!(
        v.ranking.iter().all(|r| r.share.is_some()),
        "{:?}",
        v.ranking
    );
    let mut seen: Vec<(&str, Option<&str>)> = v
        .ranking
        .iter()
        .map(|r| (r.cause.as_str(), r.node.as_deref()))
        .collect();
    let n = seen.len();
    seen.sort();
    seen.dedup();
    assert_eq!(seen.len(), n, "no cause twice: {:?}", v.ranking);
}
