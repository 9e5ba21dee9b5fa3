//! An objective failed on errors: status codes, bodies and nodes first.

use super::*;

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
    let v = failed_on(&t, &why, 8000.0);
    named(&v, "admission", Some("node-2"));
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
    let v = failed_on(&t, &why, 500.0);
    named(&v, "unreachable", Some("node-3"));
    assert!(v.text.contains("connection refused"), "{}", v.text);
    // The same trial failing on latency too: the latency is read.
    let why = vec![
        "p99 20 ms > 10 ms".to_string(),
        "errors 0.8% > 0.1%".to_string(),
    ];
    let v = failed_on(&t, &why, 500.0);
    assert_ne!(v.cause, "unreachable", "{}", v.text);
}

#[test]
fn refusals_from_a_node_starved_of_cpu_time_are_its_cpus() {
    // The node pinned to one core that a neighbour takes in turns: the
    // core 78 % busy (under its threshold), the node's runtime waiting
    // for it 38 % of the time it was ready to run, the generator 8 %;
    // connections waited too long to be read and were refused.
    let mut t = trial(26_000.0, 1, |_, x| {
        x.cpus = Some(1.0);
        x.allowed_cpus_busy = Some(0.78);
        x.cpu_cores = Some(0.45);
    });
    t.per_node[0].threads = threads(&[("strata-runtime", 5, 0.5, 0.31)]);
    t.generator_threads = threads(&[("strata-load-0", 1, 0.6, 0.05)]);
    t.errors = 480;
    t.error_pct = 0.9;
    t.per_node[0].errors = 480;
    t.failed_statuses.insert(503, 480);
    t.first_failure =
        Some("node-1: 503: overloaded: the connection waited 56 ms to be accepted".into());
    let why = vec!["errors 0.9% > 0.1%".to_string()];
    let v = failed_on(&t, &why, 25_000.0);
    named(&v, "cpu", Some("node-1"));
    assert!(v.text.contains("waited for a CPU 38%"), "{}", v.text);
    // The generator waiting as much (hand-overs on shared cores): not
    // starved beside it; the refusals are admission's.
    t.generator_threads = threads(&[("strata-load-0", 1, 0.6, 0.4)]);
    let v = failed_on(&t, &why, 25_000.0);
    assert_eq!(v.cause, "admission", "{}", v.text);
}
