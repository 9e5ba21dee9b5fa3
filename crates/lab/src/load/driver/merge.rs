//! One outcome from several generators' (the shares of a run, each from a
//! worker): their seconds merged as the driver merges its threads' (the
//! same `Collector`, one generator a "thread"), so the run's histograms,
//! percentiles and timeline are those of every request, exactly; their
//! totals added. Owns the merge; must not send, time or judge.

pub use super::wire::Part;
use super::*;

/// A second as one thread's interval, for the collector.
fn interval(s: Second) -> Interval {
    let mut i = Interval::new();
    for (name, h) in s.per_op {
        if let Some(k) = OPS.iter().position(|n| *n == name) {
            i.per_op[k] = Some(h);
        }
    }
    i.requests = s.requests;
    i.errors = s.errors;
    i.per_node = s.per_node;
    i
}

/// The outcome of every part together. `on_second` sees each merged
/// second, in order (as `run`'s does); `key_space` caps the distinct keys
/// (the parts' counts overlap: their sum is an upper bound).
pub fn merge(
    parts: Vec<Part>,
    key_space: Option<u64>,
    on_second: &mut dyn FnMut(&Second),
) -> Result<Outcome, String> {
    if parts.is_empty() {
        return Err("no generator's outcome to merge".into());
    }
    let last_index = parts
        .iter()
        .flat_map(|p| p.seconds.iter().map(|s| s.index))
        .max()
        .unwrap_or(0);
    let n = parts.len();
    let mut col = Collector {
        threads: n,
        reported: vec![None; n],
        done: vec![true; n],
        pending: BTreeMap::new(),
        next_final: 0,
        last_index,
        cumulative: new_histogram(),
        per_op: Default::default(),
        finished: Vec::new(),
        done_requests: 0,
        errors: 0,
    };
    // Second by second, decoded only then: an hour's histograms at once
    // would not fit.
    let mut outcomes = Vec::with_capacity(n);
    let mut seconds = Vec::with_capacity(n);
    for p in parts {
        outcomes.push(p.outcome);
        seconds.push(p.seconds.into_iter().peekable());
    }
    for index in 0..=last_index {
        for (k, part) in seconds.iter_mut().enumerate() {
            while let Some(s) = part.next_if(|s| s.index <= index) {
                col.add(k, s.index, interval(s.decode()?));
            }
        }
        for s in col.ready() {
            on_second(&s);
        }
    }
    let first = &outcomes[0];
    let mut o = Outcome {
        start: first.start,
        started_wall: outcomes
            .iter()
            .map(|o| o.started_wall)
            .min()
            .unwrap_or(first.started_wall),
        counted: 0,
        errors: 0,
        statuses: BTreeMap::new(),
        conn_errors: 0,
        first_conn_error: None,
        first_failure: None,
        late: 0,
        max_lag: Duration::ZERO,
        dropped: 0,
        unfinished: 0,
        connections: 0,
        capped: 0,
        retired: 0,
        elapsed: Duration::ZERO,
        all: col.cumulative,
        per_op: Vec::new(),
        timeline: col.finished,
        distinct_keys: 0,
        distinct_exact: outcomes.len() == 1 && first.distinct_exact,
        per_node: Vec::new(),
        slowest: Vec::new(),
        generator_late: 0,
        generator_on_cpu: Duration::ZERO,
        generator_run_queue: Duration::ZERO,
        generator_threads: Vec::new(),
    };
    let mut op_counts: BTreeMap<&'static str, (u64, u64)> = BTreeMap::new();
    let mut slow = Vec::new();
    for p in outcomes {
        o.counted += p.counted;
        o.errors += p.errors;
        for (c, v) in p.statuses {
            *o.statuses.entry(c).or_default() += v;
        }
        o.conn_errors += p.conn_errors;
        o.first_conn_error = o.first_conn_error.or(p.first_conn_error);
        o.first_failure = o.first_failure.or(p.first_failure);
        o.late += p.late;
        o.max_lag = o.max_lag.max(p.max_lag);
        o.dropped += p.dropped;
        o.unfinished += p.unfinished;
        o.connections += p.connections;
        o.capped += p.capped;
        o.retired += p.retired;
        o.elapsed = o.elapsed.max(p.elapsed);
        for t in &p.per_op {
            let c = op_counts.entry(t.op).or_default();
            c.0 += t.requests;
            c.1 += t.errors;
        }
        o.distinct_keys += p.distinct_keys;
        if o.per_node.len() < p.per_node.len() {
            o.per_node.resize(p.per_node.len(), NodeTotals::default());
        }
        for (a, b) in o.per_node.iter_mut().zip(&p.per_node) {
            a.connections += b.connections;
            a.requests += b.requests;
            a.errors += b.errors;
        }
        slow.extend(p.slowest);
        o.generator_late += p.generator_late;
        o.generator_on_cpu += p.generator_on_cpu;
        o.generator_run_queue += p.generator_run_queue;
        o.generator_threads.extend(p.generator_threads);
    }
    if let Some(k) = key_space {
        o.distinct_keys = o.distinct_keys.min(k);
    }
    for (i, name) in OPS.iter().enumerate() {
        let hist = col.per_op[i].take();
        if i >= FAILED {
            if let Some(h) = hist {
                o.per_op.push(OpTotals {
                    op: name,
                    requests: h.len(),
                    errors: h.len(),
                    hist: h,
                });
            }
        } else if let Some(&(requests, errors)) = op_counts.get(name).filter(|c| c.0 > 0) {
            o.per_op.push(OpTotals {
                op: name,
                requests,
                errors,
                hist: hist.unwrap_or_else(new_histogram),
            });
        }
    }
    o.slowest = crate::load::slowest::slowest(slow, o.counted);
    Ok(o)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::driver::wire::{PartWire, SecondWire};

    /// A generator's part: `secs` seconds of `per_sec` GETs at `lat` µs
    /// each on node 0 (and one 503 a second timed apart), as a run hands
    /// it back.
    fn part(secs: u64, per_sec: u64, lat: u64) -> Part {
        let mut seconds = Vec::new();
        let mut all = new_histogram();
        for index in 0..secs {
            let mut h = new_histogram();
            h.record_n(lat, per_sec).unwrap();
            let mut f = new_histogram();
            f.record(50).unwrap();
            all.add(&h).unwrap();
            all.add(&f).unwrap();
            seconds.push(Second {
                index,
                per_op: vec![("get", h.clone()), ("5xx", f)],
                requests: per_sec + 1,
                errors: 1,
                per_node: vec![NodeInterval {
                    requests: per_sec + 1,
                    errors: 1,
                    hist: Some(h),
                }],
            });
        }
        let counted = secs * (per_sec + 1);
        let outcome = Outcome {
            start: Instant::now(),
            started_wall: SystemTime::now(),
            counted,
            errors: secs,
            statuses: BTreeMap::from([(200, secs * per_sec), (503, secs)]),
            conn_errors: 0,
            first_conn_error: None,
            first_failure: Some((0, "503: busy".into())),
            late: 3,
            max_lag: Duration::from_millis(lat / 1000),
            dropped: 1,
            unfinished: 0,
            connections: 4,
            capped: 0,
            retired: 0,
            elapsed: Duration::from_secs(secs),
            all: all.clone(),
            per_op: vec![OpTotals {
                op: "get",
                requests: counted,
                errors: secs,
                hist: all,
            }],
            timeline: Vec::new(),
            distinct_keys: 10,
            distinct_exact: true,
            per_node: vec![NodeTotals {
                connections: 4,
                requests: counted,
                errors: secs,
            }],
            slowest: vec![SlowRequest {
                latency: Duration::from_micros(lat),
                node: 0,
                before: None,
                conn_wait: Duration::ZERO,
                timer_late: Duration::from_micros(7),
                timing: Some(strata_api::timing::ServerTiming::parse(
                    "wal;dur=1.5, total;dur=2",
                )),
                unanswered: false,
            }],
            generator_late: 2,
            generator_on_cpu: Duration::from_millis(300),
            generator_run_queue: Duration::from_millis(30),
            generator_threads: Vec::new(),
        };
        Part {
            outcome,
            seconds: seconds.iter().map(SecondWire::of).collect(),
        }
    }

    #[test]
    fn merged_parts_are_every_request_of_the_run() {
        // Two generators: one fast, one slow, the second a second longer.
        let (a, b) = (part(2, 99, 1_000), part(3, 99, 20_000));
        let mut seen = Vec::new();
        let o = merge(vec![a, b], Some(15), &mut |s| seen.push(s.index)).unwrap();
        assert_eq!(seen, vec![0, 1, 2]);
        assert_eq!(o.counted, 500);
        assert_eq!(o.all.len(), 500);
        assert_eq!(
            (o.errors, o.late, o.dropped, o.generator_late),
            (5, 6, 2, 4)
        );
        assert_eq!(o.statuses[&503], 5);
        assert_eq!(o.per_node[0].requests, 500);
        assert_eq!(o.elapsed, Duration::from_secs(3));
        assert_eq!(o.distinct_keys, 15, "capped at the key space");
        assert!(!o.distinct_exact);
        // Seconds 0 and 1 hold both: half fast, half slow; second 2 the slow.
        assert_eq!(o.timeline[0].requests, 200);
        assert!(
            (999..=1_001).contains(&o.timeline[0].p50_us),
            "{:?}",
            o.timeline[0]
        );
        assert!(o.timeline[0].p99_us >= 19_000, "{:?}", o.timeline[0]);
        assert_eq!(o.timeline[2].requests, 100);
        assert!(o.timeline[2].p50_us >= 19_000);
        let get = o.per_op.iter().find(|p| p.op == "get").unwrap();
        assert_eq!((get.requests, get.hist.len()), (500, 495));
        let failed = o.per_op.iter().find(|p| p.op == "5xx").unwrap();
        assert_eq!(failed.hist.len(), 5);
        // Each kept its slowest; the merge keeps them, slowest first.
        assert_eq!(o.slowest.len(), 2);
        assert_eq!(o.slowest[0].latency, Duration::from_millis(20));
    }

    #[test]
    fn a_part_survives_the_wire() {
        let p = part(2, 50, 3_000);
        let json = serde_json::to_string(&PartWire::of(&p.outcome, p.seconds.clone())).unwrap();
        let back: PartWire = serde_json::from_str(&json).unwrap();
        let q = back.into_part(Instant::now()).unwrap();
        assert_eq!(q.outcome.counted, p.outcome.counted);
        assert_eq!(q.outcome.slowest, p.outcome.slowest);
        assert_eq!(q.outcome.statuses, p.outcome.statuses);
        assert_eq!(q.seconds.len(), 2);
        let s1 = q.seconds[1].decode().unwrap();
        assert_eq!(s1.per_node[0].hist.as_ref().unwrap().len(), 50);
        // One generator's part merged alone is itself.
        let o = merge(vec![q], None, &mut |_| {}).unwrap();
        assert_eq!(o.counted, p.outcome.counted);
        assert_eq!(o.all.len(), p.outcome.all.len());
        assert_eq!(
            o.all.value_at_quantile(0.99),
            p.outcome.all.value_at_quantile(0.99)
        );
        assert!(o.distinct_exact);
        // Damage is an error, not a panic.
        let bad = json.replacen("\"get\"", "\"teleport\"", 1);
        let back: PartWire = serde_json::from_str(&bad).unwrap();
        assert!(back.into_part(Instant::now()).is_err());
        let bad = json.replacen("[\"get\",\"", "[\"get\",\"AAAA", 1);
        let back: PartWire = serde_json::from_str(&bad).unwrap();
        let part = back.into_part(Instant::now()).unwrap();
        assert!(
            merge(vec![part], None, &mut |_| {}).is_err(),
            "a damaged histogram"
        );
    }
}
