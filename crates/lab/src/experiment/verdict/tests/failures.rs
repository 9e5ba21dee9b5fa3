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
    let v = failed_on(&t, &why, 500.0);
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
    let v = failed_on(&t, &why, 500.0);
    assert_ne!(v.cause, "unreachable", "{}", v.text);
}
