//! The driver's recorder and paths, unit-tested.

use super::record::Recorder;
use super::*;

#[test]
fn refusals_are_timed_apart_from_served_requests() {
    let mut r = Recorder {
        index: 0,
        interval: Interval::new(),
        totals: ThreadTotals::default(),
        several_nodes: true,
    };
    let t = Instant::now();
    r.record(0, 1, Some(201), t);
    r.record(1, 1, Some(503), t);
    r.record(1, 1, None, t);
    let (_, i) = r.rotate();
    assert_eq!(i.per_op[1].as_ref().unwrap().len(), 1, "one put served");
    assert_eq!(i.per_op[FAILED].as_ref().unwrap().len(), 1, "one 503 timed");
    assert_eq!((i.requests, i.errors), (3, 2));
    assert_eq!(r.totals.op_requests[1], 3);
    assert_eq!(r.totals.op_errors[1], 2);
    assert_eq!(r.totals.conn_errors, 1);
    assert_eq!(r.totals.node_requests, vec![1, 2]);
    assert_eq!(r.totals.node_errors, vec![0, 2]);
}

#[test]
fn credentials_refused_and_other_4xx_are_timed_apart_from_5xx() {
    let mut r = Recorder {
        index: 0,
        interval: Interval::new(),
        totals: ThreadTotals::default(),
        several_nodes: false,
    };
    let t = Instant::now();
    for code in [401, 403, 401, 413, 400, 404, 503] {
        r.record(0, 0, Some(code), t);
    }
    let (_, i) = r.rotate();
    let line = |name: &str| {
        let k = OPS.iter().position(|n| *n == name).unwrap();
        i.per_op[k].as_ref().map_or(0, |h| h.len())
    };
    assert_eq!(line("5xx"), 1, "the 503 alone");
    assert_eq!(line("401/403"), 3, "two 401s and a 403");
    assert_eq!(line("other 4xx"), 2, "a 413 and a 400");
    assert_eq!(line("get"), 1, "a 404 is an answer: the key is absent");
    assert_eq!((i.requests, i.errors), (7, 6));
    assert_eq!(r.totals.statuses[&401], 2);
    for code in [200, 201, 204, 304, 404] {
        assert!(!failed_status(code), "{code}");
    }
}

#[test]
fn keys_are_percent_encoded() {
    let mut s = String::new();
    encode_into(&mut s, "a b/é~");
    assert_eq!(s, "a%20b%2F%C3%A9~");
}
