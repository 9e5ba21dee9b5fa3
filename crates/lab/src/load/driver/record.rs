//! What the driver's threads count: each thread's recorder (its interval
//! histograms per operation and node, its totals, between two ticks) and
//! the collector that merges the threads' seconds, in order, into the
//! run's timeline. Owns counting and merging; must not pace or send.

use super::*;

/// What a thread records between two ticks.
pub(super) struct Interval {
    pub(super) per_op: [Option<Histogram<u64>>; N],
    pub(super) requests: u64,
    pub(super) errors: u64,
    /// Per node, with several: requests, errors, answered latencies.
    pub(super) per_node: Vec<NodeInterval>,
}

#[derive(Default)]
pub(super) struct NodeInterval {
    pub(super) requests: u64,
    pub(super) errors: u64,
    pub(super) hist: Option<Histogram<u64>>,
}

impl Interval {
    pub(super) fn new() -> Interval {
        Interval {
            per_op: Default::default(),
            requests: 0,
            errors: 0,
            per_node: Vec::new(),
        }
    }

    pub(super) fn node(&mut self, node: usize) -> &mut NodeInterval {
        if self.per_node.len() <= node {
            self.per_node.resize_with(node + 1, Default::default);
        }
        &mut self.per_node[node]
    }
}

/// A thread's totals, sent when it finishes.
#[derive(Default)]
pub(super) struct ThreadTotals {
    pub(super) statuses: BTreeMap<u16, u64>,
    pub(super) conn_errors: u64,
    /// What the first connection error said.
    pub(super) first_conn_error: Option<String>,
    /// What the first failure said, with its node's index: a failed
    /// answer's status and body, or a connection error's words.
    pub(super) first_failure: Option<(usize, String)>,
    pub(super) op_requests: [u64; N],
    pub(super) op_errors: [u64; N],
    pub(super) late: u64,
    pub(super) max_lag: Duration,
    /// Counted sends dropped for missing their time by more than the
    /// bound, and requests abandoned unanswered at the end.
    pub(super) dropped: u64,
    pub(super) unfinished: u64,
    /// Counted sends that found no idle connection with the pool at its
    /// cap (the target held every connection the generator may open).
    pub(super) capped: u64,
    /// Open-loop connections closed after a burst (`pool`).
    pub(super) retired: u64,
    pub(super) last_answer: Option<Instant>,
    /// Counted requests and errors per node (grown to the highest node
    /// index seen), and the connections or clients opened to each.
    pub(super) node_requests: Vec<u64>,
    pub(super) node_errors: Vec<u64>,
    pub(super) node_connections: Vec<u64>,
    /// Sends the timer made late with a connection free.
    pub(super) generator_late: u64,
    /// The thread's schedstat over the run: on a CPU, waiting for one.
    pub(super) on_cpu: Duration,
    pub(super) run_queue: Duration,
    /// Each sending thread's own figures, as a share of its wall time.
    pub(super) threads: Vec<strata_api::threads::ThreadRate>,
    /// Its slowest requests.
    pub(super) slow: Vec<SlowRequest>,
}

pub(super) enum Msg {
    Interval {
        thread: usize,
        index: u64,
        data: Box<Interval>,
    },
    Done {
        thread: usize,
        totals: Box<ThreadTotals>,
    },
}

/// A thread's recorder, shared by its tasks (single-threaded: RefCell).
pub(super) struct Recorder {
    pub(super) index: u64,
    pub(super) interval: Interval,
    pub(super) totals: ThreadTotals,
    /// Whether to keep per-node figures per second.
    pub(super) several_nodes: bool,
}

impl Recorder {
    /// Count one answer (or its absence); returns its latency from `since`.
    pub(super) fn record(
        &mut self,
        node: usize,
        op: usize,
        status: Option<u16>,
        since: Instant,
    ) -> Duration {
        let now = Instant::now();
        self.totals.last_answer = Some(now);
        self.totals.op_requests[op] += 1;
        if self.totals.node_requests.len() <= node {
            self.totals.node_requests.resize(node + 1, 0);
            self.totals.node_errors.resize(node + 1, 0);
        }
        self.totals.node_requests[node] += 1;
        self.interval.requests += 1;
        // The line a failed answer is timed on, if it failed.
        let (failed, line) = match status {
            Some(code) => {
                *self.totals.statuses.entry(code).or_default() += 1;
                match failure_line(code) {
                    Some(l) => (true, l),
                    None => (false, op),
                }
            }
            None => {
                self.totals.conn_errors += 1;
                (true, op)
            }
        };
        if failed {
            self.totals.op_errors[op] += 1;
            self.totals.node_errors[node] += 1;
            self.interval.errors += 1;
        }
        let mut per_node = self.several_nodes.then(|| self.interval.node(node));
        if let Some(n) = per_node.as_mut() {
            n.requests += 1;
            n.errors += failed as u64;
        }
        // Failed answers have latencies too (a 503 at once is fast), timed
        // on their own line; requests with no answer at all have none.
        if status.is_some() {
            let us =
                (now.saturating_duration_since(since).as_micros() as u64).clamp(1, MAX_LATENCY_US);
            if let Some(n) = per_node.as_mut() {
                n.hist
                    .get_or_insert_with(new_histogram)
                    .saturating_record(us);
            }
            let h = self.interval.per_op[line].get_or_insert_with(new_histogram);
            h.saturating_record(us);
        }
        now.saturating_duration_since(since)
    }

    /// A counted send dropped: an error of its second, never sent.
    pub(super) fn dropped(&mut self) {
        self.totals.dropped += 1;
        self.interval.requests += 1;
        self.interval.errors += 1;
    }

    /// A connection (or client) opened to `node`.
    pub(super) fn opened(&mut self, node: usize) {
        let c = &mut self.totals.node_connections;
        if c.len() <= node {
            c.resize(node + 1, 0);
        }
        c[node] += 1;
    }

    pub(super) fn late(&mut self, lag: Duration) {
        if lag > LATE {
            self.totals.late += 1;
            self.totals.max_lag = self.totals.max_lag.max(lag);
        }
    }

    pub(super) fn rotate(&mut self) -> (u64, Interval) {
        let i = self.index;
        self.index += 1;
        (i, std::mem::replace(&mut self.interval, Interval::new()))
    }
}

/// Seconds reported by some threads, waiting for the others.
pub(super) struct Collector {
    pub(super) threads: usize,
    /// Highest index each thread has reported, and whether it is done.
    pub(super) reported: Vec<Option<u64>>,
    pub(super) done: Vec<bool>,
    pub(super) pending: BTreeMap<u64, Second>,
    pub(super) next_final: u64,
    pub(super) last_index: u64,
    pub(super) cumulative: Histogram<u64>,
    pub(super) per_op: [Option<Histogram<u64>>; N],
    pub(super) finished: Vec<SecondStats>,
    pub(super) done_requests: u64,
    pub(super) errors: u64,
}

impl Collector {
    pub(super) fn add(&mut self, thread: usize, index: u64, data: Interval) {
        self.reported[thread] = Some(self.reported[thread].map_or(index, |r| r.max(index)));
        let s = self.pending.entry(index).or_insert_with(|| Second {
            index,
            per_op: Vec::new(),
            requests: 0,
            errors: 0,
            per_node: Vec::new(),
        });
        s.requests += data.requests;
        s.errors += data.errors;
        if s.per_node.len() < data.per_node.len() {
            s.per_node
                .resize_with(data.per_node.len(), Default::default);
        }
        for (acc, n) in s.per_node.iter_mut().zip(data.per_node) {
            acc.requests += n.requests;
            acc.errors += n.errors;
            if let Some(h) = n.hist {
                match &mut acc.hist {
                    Some(a) => a.add(&h).expect("same bounds"),
                    None => acc.hist = Some(h),
                }
            }
        }
        self.done_requests += data.requests;
        self.errors += data.errors;
        for (i, h) in data.per_op.into_iter().enumerate() {
            let Some(h) = h else { continue };
            match s.per_op.iter_mut().find(|(n, _)| *n == OPS[i]) {
                Some((_, acc)) => acc.add(&h).expect("same bounds"),
                None => s.per_op.push((OPS[i], h)),
            }
        }
    }

    /// Seconds every thread has moved past (all of them once all are done).
    pub(super) fn ready(&mut self) -> Vec<Second> {
        let all_done = self.done.iter().all(|d| *d);
        let mut out = Vec::new();
        loop {
            let k = self.next_final;
            let complete = all_done
                || (k < self.last_index
                    && (0..self.threads)
                        .all(|t| self.done[t] || self.reported[t].is_some_and(|r| r > k)));
            if !complete || (all_done && self.pending.is_empty()) {
                break;
            }
            let s = self.pending.remove(&k).unwrap_or(Second {
                index: k,
                per_op: Vec::new(),
                requests: 0,
                errors: 0,
                per_node: Vec::new(),
            });
            let mut all = new_histogram();
            for (name, h) in &s.per_op {
                all.add(h).expect("same bounds");
                let i = OPS.iter().position(|n| n == name).expect("known op");
                self.per_op[i]
                    .get_or_insert_with(new_histogram)
                    .add(h)
                    .expect("same bounds");
            }
            self.cumulative.add(&all).expect("same bounds");
            self.finished.push(SecondStats {
                index: k,
                requests: s.requests,
                errors: s.errors,
                p50_us: all.value_at_quantile(0.5),
                p99_us: all.value_at_quantile(0.99),
                max_us: all.max(),
                per_node: s
                    .per_node
                    .iter()
                    .map(|n| {
                        let p99 = n.hist.as_ref().map_or(0, |h| h.value_at_quantile(0.99));
                        (n.requests, n.errors, p99)
                    })
                    .collect(),
            });
            self.next_final += 1;
            out.push(s);
            if all_done && k >= self.last_index && self.pending.is_empty() {
                break;
            }
        }
        out
    }
}

/// An answer that counts as an error (`failure_line`).
pub fn failed_status(code: u16) -> bool {
    failure_line(code).is_some()
}

/// The line (an index into `OPS`) a failed answer is timed on, or `None`
/// for an answer the node served: `5xx` for 500 and above (the node
/// failed or refused under load), `401/403` (the node refused the run's
/// credentials: nothing was measured but the refusal), `other 4xx` for any
/// other 4xx but 404 (a request the node would not take: 400, 408, 413,
/// ...; a 404 is an answer, the key is absent).
pub fn failure_line(code: u16) -> Option<usize> {
    match code {
        500.. => Some(FAILED),
        401 | 403 => Some(REFUSED),
        404 => None,
        400..=499 => Some(OTHER_4XX),
        _ => None,
    }
}
