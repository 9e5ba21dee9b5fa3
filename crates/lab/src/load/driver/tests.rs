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
fn keys_are_percent_encoded() {
    let mut s = String::new();
    encode_into(&mut s, "a b/é~");
    assert_eq!(s, "a%20b%2F%C3%A9~");
}
